package tests

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/spiral-rl/spiral/model"
	"github.com/spiral-rl/spiral/model/embedded"
	"github.com/spiral-rl/spiral/model/lmgraph"
	"github.com/spiral-rl/spiral/model/modeltest"
	"github.com/spiral-rl/spiral/model/params"
	"github.com/spiral-rl/spiral/rl"
	"github.com/spiral-rl/spiral/rollout"
	"github.com/spiral-rl/spiral/rollout/report"
)

// samplerServer is an OpenAI-compatible completions server on loopback
// that decodes with spiral's own sampler on the embedded model (one
// request at a time), answering in vLLM's shape (choices[0].token_ids,
// finish_reason). It stands in for a serving engine: at temperature 0
// both engines must produce the same tokens, so every eval mode must
// report the same figures through --engine openai as locally.
type samplerServer struct {
	mu    sync.Mutex
	lm    *model.LM
	calls int
	// With LoRA, lora holds the adapters the LM samples with, loaded
	// through vLLM's /v1/load_lora_adapter from peft files; adapter is
	// the name requests must then use. loaded are the names loaded and
	// not unloaded, which vLLM lists in /v1/models and refuses to load
	// again.
	lora    *params.Store
	adapter string
	loads   int
	loaded  map[string]bool
}

func (s *samplerServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/v1/models":
		s.mu.Lock()
		defer s.mu.Unlock()
		data := []map[string]string{{"id": "embedded"}}
		for name := range s.loaded {
			data = append(data, map[string]string{"id": name, "parent": "embedded"})
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"data": data})
		return
	case "/v1/load_lora_adapter":
		var body struct {
			Name string `json:"lora_name"`
			Path string `json:"lora_path"`
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil || s.lora == nil {
			http.Error(w, `{"message":"no LoRA"}`, http.StatusBadRequest)
			return
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.loaded[body.Name] {
			http.Error(w, `{"object":"error","message":"The lora adapter '`+body.Name+`' has already been loaded.","type":"InvalidUserInput","code":400}`, http.StatusBadRequest)
			return
		}
		if err := loadPEFT(s.lora, filepath.Join(body.Path, "adapter_model.safetensors")); err != nil {
			http.Error(w, `{"message":"`+err.Error()+`"}`, http.StatusBadRequest)
			return
		}
		if s.loaded == nil {
			s.loaded = map[string]bool{}
		}
		s.loaded[body.Name] = true
		s.adapter = body.Name
		s.loads++
		_, _ = w.Write([]byte("Success: LoRA adapter '" + body.Name + "' added successfully."))
		return
	case "/v1/unload_lora_adapter":
		var body struct {
			Name string `json:"lora_name"`
		}
		_ = json.NewDecoder(r.Body).Decode(&body)
		s.mu.Lock()
		defer s.mu.Unlock()
		if !s.loaded[body.Name] {
			http.Error(w, `{"object":"error","message":"The lora adapter '`+body.Name+`' cannot be found.","type":"NotFoundError","code":404}`, http.StatusNotFound)
			return
		}
		delete(s.loaded, body.Name)
		_, _ = w.Write([]byte("Success: LoRA adapter '" + body.Name + "' removed successfully."))
		return
	}
	var body struct {
		Model       string  `json:"model"`
		Prompt      []int32 `json:"prompt"`
		MaxTokens   int     `json:"max_tokens"`
		Temperature float64 `json:"temperature"`
		Seed        uint64  `json:"seed"`
		StopIDs     []int32 `json:"stop_token_ids"`
		Logprobs    *int    `json:"logprobs"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		http.Error(w, `{"message":"bad request"}`, http.StatusBadRequest)
		return
	}
	cfg := rollout.DefaultSamplerConfig()
	cfg.Temperature, cfg.MaxNewTokens, cfg.StopIDs, cfg.BatchSize = body.Temperature, body.MaxTokens, body.StopIDs, 1
	s.mu.Lock()
	defer s.mu.Unlock()
	if want := cmp.Or(s.adapter, "embedded"); body.Model != want {
		http.Error(w, `{"message":"model `+body.Model+` is not served (`+want+` is)"}`, http.StatusNotFound)
		return
	}
	s.calls++
	sampler, err := rollout.NewSampler(s.lm, cfg)
	if err == nil {
		var out []rollout.Completion
		out, _, err = sampler.Generate(r.Context(), []rollout.Request{{Prompt: body.Prompt, Seed: body.Seed}}, nil)
		if err == nil {
			finish := "stop"
			if out[0].Finish == rollout.FinishLength {
				finish = "length"
			}
			choice := map[string]any{"text": "", "token_ids": out[0].Tokens, "finish_reason": finish}
			if body.Logprobs != nil {
				// The raw model's log-probabilities of the sampled tokens,
				// as vLLM returns them by default.
				choice["logprobs"] = map[string]any{"token_logprobs": out[0].PolicyLogProbs}
			}
			_ = json.NewEncoder(w).Encode(map[string]any{"choices": []any{choice}})
			return
		}
	}
	http.Error(w, `{"message":"`+err.Error()+`"}`, http.StatusInternalServerError)
}

// served returns how many completions the server has answered.
func (s *samplerServer) served() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls
}

// TestEvalThroughEngine runs every eval mode greedily on the local
// engine and through an OpenAI-compatible server and requires the same
// report figures.
func TestEvalThroughEngine(t *testing.T) {
	requireRuntime(t)
	rt := modeltest.Runtime(t)
	dir, err := embedded.Extract(t.TempDir())
	require.NoError(t, err)
	pol, err := model.OpenPolicy(context.Background(), rt, filepath.Join(dir, "model.onnx"), t.TempDir(), model.PolicyOptions{})
	require.NoError(t, err)
	defer pol.Close()
	srv := &samplerServer{lm: pol.LM}
	hs := httptest.NewServer(srv)
	defer hs.Close()

	common := []string{"--limit", "4", "--temperature", "0", "--samples", "2", "--population", "2", "--subset", "2", "--rsa-steps", "1", "--quiet"}
	engine := []string{"--engine", "openai", "--base-url", hs.URL + "/v1", "--served-model", "embedded"}
	wants := map[string]map[string]any{}
	for _, mode := range []string{"passk", "sequential", "rsa"} {
		t.Run(mode, func(t *testing.T) {
			local, remote := filepath.Join(t.TempDir(), "local"), filepath.Join(t.TempDir(), "remote")
			r := spiral(t, nil, append([]string{"eval", "--mode", mode, "--out", local}, common...)...)
			require.Equal(t, 0, r.code, r.stderr)
			require.Contains(t, r.stderr, "spiral: note: --temperature 0 samples greedily: the 2 samples of a problem are all the same")
			before := srv.served()
			r = spiral(t, nil, append(append([]string{"eval", "--mode", mode, "--out", remote, "--engine-concurrency", "3"}, engine...), common...)...)
			require.Equal(t, 0, r.code, r.stderr)
			require.Greater(t, srv.served(), before, "the engine served the requests")
			want := figures(t, filepath.Join(local, mode+".json"))
			t.Logf("%s: %v", mode, want)
			require.Equal(t, want, figures(t, filepath.Join(remote, mode+".json")))
			wants[mode] = want
		})
	}

	// On an engine, --model needs only what is read here: a directory
	// with the tokenizer and config.json, no model.onnx.
	files := t.TempDir()
	for _, name := range []string{"tokenizer.json", "config.json"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(files, name), b, 0o644))
	}
	out := filepath.Join(t.TempDir(), "files")
	r := spiral(t, nil, append(append([]string{"eval", "--mode", "passk", "--out", out, "--model", files}, engine...), common...)...)
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, wants["passk"], figures(t, filepath.Join(out, "passk.json")))
	// Locally the directory is no model; on the engine, one without a
	// tokenizer says what it needs.
	r = spiral(t, nil, append([]string{"eval", "--out", out, "--model", files}, common...)...)
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "holds no model.onnx")
	r = spiral(t, nil, append(append([]string{"eval", "--out", out, "--model", t.TempDir()}, engine...), common...)...)
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "holds no tokenizer.json, which a serving engine's prompts are tokenized with")

	r = spiral(t, nil, "eval", "--engine", "openai", "--base-url", hs.URL+"/v1", "--served-model", "other", "--limit", "1", "--quiet")
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, `does not serve "other" (it serves embedded)`)

	// generate too: the same greedy completions as locally, with only
	// the tokenizer and config.json as --model; a checkpoint is the
	// local engine's.
	gen := []string{"generate", "--temperature", "0", "--max-new-tokens", "24", "--n", "2", "Compute 2+3.", "Compute 7-4."}
	local := spiral(t, nil, gen...)
	require.Equal(t, 0, local.code, local.stderr)
	before := srv.served()
	remote := spiral(t, nil, append(append(gen, "--model", files), engine...)...)
	require.Equal(t, 0, remote.code, remote.stderr)
	require.Equal(t, before+4, srv.served(), "two prompts x two samples")
	require.Equal(t, local.stdout, remote.stdout)
	r = spiral(t, nil, append(append([]string{"generate", "--checkpoint", t.TempDir()}, engine...), "hi")...)
	require.Equal(t, 2, r.code)
	require.Contains(t, r.stderr, "--checkpoint is for the local engine")
}

// loadPEFT reads a peft adapter file into the LoRA factors of dst
// (model.layers.N.X.lora_A [in, r] <- base_model.model.model.layers.N.X.lora_A.weight [r, in]).
func loadPEFT(dst *params.Store, path string) error {
	specs := make([]params.Spec, dst.Len())
	for i := range dst.Len() {
		t := dst.At(i)
		specs[i] = params.Spec{Name: "base_model.model." + t.Name + ".weight", Shape: []int64{t.Shape[1], t.Shape[0]}}
	}
	peft, err := params.NewStore(specs)
	if err != nil {
		return err
	}
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if _, err := peft.ReadSafetensors(f, fi.Size(), nil); err != nil {
		return err
	}
	for i := range dst.Len() {
		d, src := dst.At(i), peft.At(i)
		rows, cols := int(src.Shape[0]), int(src.Shape[1])
		for a := range rows {
			for b := range cols {
				d.Data[b*rows+a] = src.Data[a*cols+b]
			}
		}
	}
	return nil
}

// TestTrainThroughEngine trains LoRA adapters with rollouts on an
// OpenAI-compatible server that syncs them as vLLM does (peft files,
// /v1/load_lora_adapter, requests to the adapter's name): the server
// loads one adapter per step and one for the evaluations after the last,
// the metrics report the version the
// rollouts came from with no lag, and at the end the server samples with
// exactly the adapters of the last checkpoint.
func TestTrainThroughEngine(t *testing.T) {
	requireRuntime(t)
	rt := modeltest.Runtime(t)
	dir, err := embedded.Extract(t.TempDir())
	require.NoError(t, err)
	lora := lmgraph.LoRA{Rank: 4, Alpha: 8, Targets: lmgraph.LoRATargets}
	pol, err := model.OpenPolicy(context.Background(), rt, filepath.Join(dir, "model.onnx"), t.TempDir(), model.PolicyOptions{Artifacts: model.ArtifactOptions{LoRA: lora}})
	require.NoError(t, err)
	defer pol.Close()
	srv := &samplerServer{lm: pol.LM, lora: pol.Weights}
	hs := httptest.NewServer(srv)
	defer hs.Close()

	run, syncDir := filepath.Join(t.TempDir(), "run"), filepath.Join(t.TempDir(), "sync")
	args := []string{"train", "--out", run, "--steps", "2", "--lr", "1e-2", "--warmup", "1", "--draw-rounds", "8", "--lora-rank", "4", "--lora-alpha", "8", "--problems", "2", "--n1", "4", "--k", "2",
		"--n", "2", "--n2", "2", "--eval-every", "2", "--eval-problems", "2", "--eval-samples", "2", "--quiet", "--checkpoint-every", "1",
		"--engine", "openai", "--base-url", hs.URL + "/v1", "--served-model", "embedded", "--engine-sync", "vllm-lora", "--sync-dir", syncDir}
	r := spiral(t, nil, args...)
	require.Equal(t, 0, r.code, r.stderr)
	srv.mu.Lock()
	loads, adapter := srv.loads, srv.adapter
	srv.mu.Unlock()
	require.Equal(t, 3, loads, "the adapters before steps 1 and 2, and after step 2 for the evaluations")
	lines, err := os.ReadFile(filepath.Join(run, "metrics.jsonl"))
	require.NoError(t, err)
	for i, line := range strings.Split(strings.TrimSpace(string(lines)), "\n") {
		var m struct {
			Version    string  `json:"policy_version"`
			Lag        int     `json:"policy_lag"`
			Diff       float64 `json:"engine_logprob_diff"`
			DiffTokens int     `json:"engine_logprob_tokens"`
			LossTokens int     `json:"loss_tokens"`
			Examples   int     `json:"examples"`
		}
		require.NoError(t, json.Unmarshal([]byte(line), &m))
		require.Equal(t, fmt.Sprintf("spiral-step-%06d", i), m.Version, "step %d samples with the weights after %d updates", i+1, i)
		require.Zero(t, m.Lag)
		require.Positive(t, m.Examples, "step %d trains (else nothing here is tested)", i+1)
		// The engine's log-probabilities of what it sampled are the
		// learner's own: it samples from the weights being trained (the
		// learning rate is large enough that a sync that did not happen
		// shows: 0.03 against 4e-7 when the server skips the load).
		require.Equal(t, m.LossTokens, m.DiffTokens, "step %d: every trained token has the engine's log-probability", i+1)
		require.Less(t, m.Diff, 1e-4, "step %d: engine and learner log-probabilities differ", i+1)
	}
	// The server's handlers write the adapters under srv.mu (loadPEFT),
	// and the race detector sees no order between this read and the
	// resumed run's loads below (a child process's requests).
	trained := readWeights(t, filepath.Join(run, "checkpoints", "ckpt-000002"))
	func() {
		srv.mu.Lock()
		defer srv.mu.Unlock()
		for i := range trained.Len() {
			got, ok := pol.Weights.Get(trained.At(i).Name)
			require.True(t, ok)
			require.Equal(t, trained.At(i).Data, got.Data, "the server samples with the trained %s (%s)", trained.At(i).Name, adapter)
		}
	}()

	// Resumed against the same engine, which still holds the adapter of
	// step 2 (vLLM refuses to load a name it holds), the run unloads
	// what the first run left and goes on: one adapter loaded at the
	// end, one version directory left.
	args = slices.Replace(args, slices.Index(args, "--steps")+1, slices.Index(args, "--steps")+2, "3")
	r = spiral(t, nil, args...)
	require.Equal(t, 0, r.code, r.stderr)
	srv.mu.Lock()
	loaded := slices.Collect(maps.Keys(srv.loaded))
	srv.mu.Unlock()
	require.Equal(t, []string{"spiral-step-000003"}, loaded)
	versions, err := os.ReadDir(syncDir)
	require.NoError(t, err)
	require.Len(t, versions, 1, "the served version's directory only")
	require.Equal(t, "spiral-step-000003", versions[0].Name())
}

// figures returns a report's JSON without its meta (names, times).
func figures(t *testing.T, path string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m))
	delete(m, "meta")
	return m
}

// TestEngineFailures runs eval and train against servers that fail in
// the ways a serving engine can, and checks what the user is told and
// when: the timeout bounds a request with its retries, retries are
// announced, and answers that cannot be right are refused at once.
func TestEngineFailures(t *testing.T) {
	requireRuntime(t)
	hang := func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		select {
		case <-r.Context().Done():
		case <-time.After(time.Minute):
		}
	}
	ids := func(ids string) func(int, http.ResponseWriter, *http.Request) {
		return func(_ int, w http.ResponseWriter, _ *http.Request) {
			_, _ = w.Write([]byte(`{"choices":[{"text":"","token_ids":` + ids + `,"finish_reason":"stop"}]}`))
		}
	}
	// A model whose logits (60) are wider than its tokenizer's ids (49):
	// the learner's policy is over the 49, which an engine's id must lie in.
	wide := filepath.Join(t.TempDir(), "wide")
	if r := spiral(t, nil, "init-model", "--out", wide, "--vocab", "60", "--layers", "1"); r.code != 0 {
		t.Fatal(r.stderr)
	}
	for _, tc := range []struct {
		name    string
		train   bool
		answer  func(n int, w http.ResponseWriter, r *http.Request) // the n-th completion
		args    []string
		code    int
		want    []string
		not     []string // on stderr neither
		calls   int32    // completions asked
		longest time.Duration
	}{
		{name: "hung engine", answer: func(_ int, w http.ResponseWriter, r *http.Request) { hang(w, r) }, args: []string{"--engine-timeout", "1s"},
			code: 1, want: []string{"/v1/completions: no answer within 1s (--engine-timeout)"}, calls: 1, longest: 10 * time.Second},
		{name: "a 503, then served", answer: func(n int, w http.ResponseWriter, r *http.Request) {
			if n == 0 {
				http.Error(w, `{"message":"busy"}`, http.StatusServiceUnavailable)
				return
			}
			ids("[3, 4]")(n, w, r)
		}, code: 0, want: []string{"spiral: warning: rollout: engine: URL/v1/completions: HTTP 503: busy; retry 1 of 4 in 500ms\n"}, calls: 2, longest: 10 * time.Second},
		{name: "malformed answer", answer: func(_ int, w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte(`{"choices": [`)) },
			code: 1, want: []string{"request 0: rollout: engine: URL/v1/completions: the answer is not the expected JSON"}, calls: 1, longest: 10 * time.Second},
		{name: "token id beyond the vocabulary", answer: ids("[99999999]"), code: 1,
			want: []string{"request 0: rollout: engine: URL/v1/completions answered token id 99999999 (completion token 0 of 1), outside the model's vocabulary of 49 ids [0, 49)"}, calls: 1, longest: 10 * time.Second},
		{name: "negative token id", answer: ids("[-5, 3]"), code: 1,
			want: []string{"answered token id -5 (completion token 0 of 2), outside the model's vocabulary of 49 ids"}, calls: 1, longest: 10 * time.Second},
		// Training refuses them before the learner sees them.
		// A --sync-dir that cannot be made is named as the flag.
		{name: "sync dir not a directory", train: true, answer: ids("[3, 4]"), args: []string{"--sync-dir", "/dev/null/sync"}, code: 2,
			want: []string{"spiral train: --sync-dir /dev/null/sync: mkdir /dev/null: not a directory\n"}, longest: time.Minute},
		{name: "token id beyond the vocabulary in training", train: true, answer: ids("[99999]"), code: 1,
			want: []string{"answered token id 99999 (completion token 0 of 1), outside the model's vocabulary of 49 ids [0, 49)"}, longest: time.Minute},
		// Within the model's logits but past the tokenizer's ids, which
		// the policy gives probability 0 (it was trained on, then it
		// failed the run): the completion is cut before it.
		{name: "token id past the tokenizer's in training", train: true, answer: ids("[55]"), args: []string{"--model", wide},
			want: []string{"spiral: warning: URL/v1/completions sampled token id 55, past the tokenizer's 49 ids (a padding logit of the model, which spiral's policy, the softmax over the tokenizer's ids, gives probability 0): its completion is cut before it"}, longest: time.Minute},
		// Eval reads no policy (config.json's vocab_size is the logits')
		// and cuts such a completion alike; it kept the id, decoded to
		// nothing. Its note counts the cut apart from --max-new-tokens,
		// which it did not reach.
		{name: "token id past the tokenizer's in eval", answer: ids("[55]"), args: []string{"--model", wide},
			want: []string{"spiral: warning: URL/v1/completions sampled token id 55, past the tokenizer's 49 ids",
				"spiral: note: 1 of the 1 traces was cut before a token id past the tokenizer's that the engine sampled (one of the model's padding logits, not --max-new-tokens"},
			not: []string{"cut at --max-new-tokens"}, calls: 1, longest: time.Minute},
		{name: "token id past the logits in training", train: true, answer: ids("[60]"), args: []string{"--model", wide}, code: 1,
			want: []string{"answered token id 60 (completion token 0 of 1), outside the model's vocabulary of 60 ids [0, 60)"}, longest: time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var calls atomic.Int32
			var loaded atomic.Value // the weights' directory SGLang serves
			loaded.Store("/models/m")
			hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				switch r.URL.Path {
				case "/v1/models":
					_, _ = w.Write([]byte(`{"data":[{"id":"m"}]}`))
					return
				case "/update_weights_from_disk": // SGLang's sync, before training's rollouts
					var body struct {
						Path string `json:"model_path"`
					}
					_ = json.NewDecoder(r.Body).Decode(&body)
					loaded.Store(body.Path)
					_, _ = w.Write([]byte(`{"success":true,"message":"loaded"}`))
					return
				case "/get_model_info": // the weights served, checked after the rollouts
					_ = json.NewEncoder(w).Encode(map[string]any{"model_path": loaded.Load()})
					return
				}
				if r.URL.Path != "/v1/completions" {
					http.Error(w, `{"message":"not here"}`, http.StatusNotFound)
					return
				}
				tc.answer(int(calls.Add(1))-1, w, r)
			}))
			defer hs.Close()
			args := []string{"eval", "--limit", "1", "--samples", "1", "--out", filepath.Join(t.TempDir(), "eval")}
			if tc.train {
				// Training runs the model here (--threads); eval on an
				// engine runs none, and refuses ONNX Runtime's flags.
				args = []string{"train", "--steps", "1", "--problems", "1", "--n1", "2", "--k", "2", "--n", "1", "--n2", "2", "--threads", "1",
					"--out", filepath.Join(t.TempDir(), "run"), "--engine-sync", "sglang", "--sync-dir", filepath.Join(t.TempDir(), "sync")}
			}
			args = append(append(args, "--quiet", "--engine", "openai", "--base-url", hs.URL+"/v1", "--served-model", "m"), tc.args...)
			start := time.Now()
			r := spiral(t, nil, args...)
			took := time.Since(start)
			require.Equal(t, tc.code, r.code, r.stderr)
			for _, w := range tc.want {
				require.Contains(t, r.stderr, strings.ReplaceAll(w, "URL", hs.URL))
			}
			for _, w := range tc.not {
				require.NotContains(t, r.stderr, w)
			}
			require.NotContains(t, r.stderr, "outside the vocabulary [0,", "the learner never sees the ids")
			require.Less(t, took, tc.longest)
			if tc.calls > 0 {
				require.Equal(t, tc.calls, calls.Load(), "completions asked")
			}
		})
	}
}

// TestTrainChecksEngineFirst: train checks the engine (reachable,
// serving --served-model) before it builds the policy's artifacts, which
// take minutes on a real model: a wrong --served-model is said at once.
// The run directory's artifacts path is a file here, so that building
// them fails: the engine's error must come first.
func TestTrainChecksEngineFirst(t *testing.T) {
	requireRuntime(t)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/models" {
			_, _ = w.Write([]byte(`{"data":[{"id":"served"}]}`))
			return
		}
		http.Error(w, `{"message":"not here"}`, http.StatusNotFound)
	}))
	defer hs.Close()
	run := filepath.Join(t.TempDir(), "run")
	require.NoError(t, os.MkdirAll(run, 0o777))
	require.NoError(t, os.WriteFile(filepath.Join(run, "artifacts"), []byte("not a directory"), 0o666))
	r := spiral(t, nil, "train", "--steps", "1", "--problems", "1", "--n1", "2", "--k", "2", "--n", "1", "--n2", "2", "--threads", "1", "--quiet",
		"--out", run, "--engine-sync", "sglang", "--sync-dir", filepath.Join(t.TempDir(), "sync"), "--engine", "openai", "--base-url", hs.URL+"/v1", "--served-model", "other")
	require.Equal(t, 1, r.code, r.stderr)
	require.Equal(t, `spiral train: rollout: engine: `+hs.URL+`/v1 does not serve "other" (it serves served); set --served-model`+"\n", r.stderr)
}

// TestServedContext: a vLLM started with a --max-model-len below
// config.json's context lists it as max_model_len, and refuses with a
// 400 a request whose prompt and max_tokens pass it (not retried: the
// evaluation failed on its first request, sized from config.json's
// 4096: the default trace length of 2048). eval fits the trace length
// (the default: half the served context), the prompts and the requests
// to the served context, and says so.
func TestServedContext(t *testing.T) {
	requireRuntime(t)
	const served = 600
	dir := t.TempDir()
	m := filepath.Join(dir, "m")
	if r := spiral(t, nil, "init-model", "--out", m, "--layers", "1", "--max-positions", "4096"); r.code != 0 {
		t.Fatal(r.stderr)
	}
	data := filepath.Join(dir, "p.jsonl")
	require.NoError(t, os.WriteFile(data, []byte(`{"problem":"1+1","answer":"2"}`+"\n"+`{"problem":"2+2","answer":"4"}`+"\n"), 0o666))
	var longest, maxTokens atomic.Int32
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/models" {
			_, _ = fmt.Fprintf(w, `{"object":"list","data":[{"id":"m","object":"model","max_model_len":%d}]}`, served)
			return
		}
		var body struct {
			Prompt    []int32 `json:"prompt"`
			MaxTokens int     `json:"max_tokens"`
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			http.Error(w, `{"message":"bad request"}`, http.StatusBadRequest)
			return
		}
		need := len(body.Prompt) + body.MaxTokens
		for cur := longest.Load(); int32(need) > cur && !longest.CompareAndSwap(cur, int32(need)); cur = longest.Load() {
		}
		maxTokens.Store(int32(body.MaxTokens))
		if need > served {
			http.Error(w, fmt.Sprintf(`{"object":"error","message":"This model's maximum context length is %d tokens. However, you requested %d tokens (%d in the messages, %d in the completion).","type":"BadRequestError","code":400}`,
				served, need, len(body.Prompt), body.MaxTokens), http.StatusBadRequest)
			return
		}
		_, _ = w.Write([]byte(`{"choices":[{"text":"","token_ids":[3,4],"finish_reason":"stop"}]}`))
	}))
	defer hs.Close()
	r := spiral(t, nil, "eval", "--model", m, "--data", data, "--samples", "1", "--quiet", "--out", filepath.Join(dir, "eval"),
		"--engine", "openai", "--base-url", hs.URL+"/v1", "--served-model", "m")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stderr, fmt.Sprintf("spiral: note: %s/v1 serves m with a context of %d positions (max_model_len), below the %d of %s (config.json max_position_embeddings): prompts and traces are fitted to it\n", hs.URL, served, 4096, m))
	require.Positive(t, longest.Load())
	require.LessOrEqual(t, longest.Load(), int32(served))
	require.Equal(t, int32(served/2), maxTokens.Load(), "the default trace length: half the served context")
}

// TestServedContextSGLang: SGLang refuses a request whose prompt and
// max_tokens reach its context (>=, with a 400), where vLLM refuses one
// that passes it: a prompt that, with --max-new-tokens, filled SGLang's
// max_model_len exactly (as aggregation prompts cut to fit the context
// often do) failed the whole evaluation, or a training step, on its
// first request. On an SGLang (owned_by "sglang") requests are fitted to
// one position less, so such a prompt is skipped as too long up front,
// as any other is, and no request reaches the context.
func TestServedContextSGLang(t *testing.T) {
	requireRuntime(t)
	const served = 600
	dir := t.TempDir()
	m := filepath.Join(dir, "m")
	if r := spiral(t, nil, "init-model", "--out", m, "--layers", "1", "--max-positions", "4096"); r.code != 0 {
		t.Fatal(r.stderr)
	}
	// The search prompt of "1+1" is 93 tokens: with 507 new tokens it
	// fills the 600 positions; that of "1" is shorter.
	data := filepath.Join(dir, "p.jsonl")
	require.NoError(t, os.WriteFile(data, []byte(`{"problem":"1+1","answer":"2"}`+"\n"+`{"problem":"1","answer":"1"}`+"\n"), 0o666))
	var longest atomic.Int32
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/models" {
			_, _ = fmt.Fprintf(w, `{"object":"list","data":[{"id":"m","object":"model","owned_by":"sglang","root":"m","max_model_len":%d}]}`, served)
			return
		}
		var body struct {
			Prompt    []int32 `json:"prompt"`
			MaxTokens int     `json:"max_tokens"`
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			http.Error(w, `{"message":"bad request"}`, http.StatusBadRequest)
			return
		}
		need := len(body.Prompt) + body.MaxTokens
		for cur := longest.Load(); int32(need) > cur && !longest.CompareAndSwap(cur, int32(need)); cur = longest.Load() {
		}
		if need >= served { // SGLang's TokenizerManager check
			http.Error(w, fmt.Sprintf(`{"object":"error","message":"Requested token count exceeds the model's maximum context length of %d tokens. You requested a total of %d tokens: %d tokens from the input messages and %d tokens for the completion.","type":"BadRequest","code":400}`,
				served, need, len(body.Prompt), body.MaxTokens), http.StatusBadRequest)
			return
		}
		_, _ = w.Write([]byte(`{"choices":[{"index":0,"text":"","token_ids":[3,4],"finish_reason":"stop"}]}`))
	}))
	defer hs.Close()
	r := spiral(t, nil, "eval", "--model", m, "--data", data, "--samples", "1", "--quiet", "--out", filepath.Join(dir, "eval"), "--max-new-tokens", "507",
		"--engine", "openai", "--base-url", hs.URL+"/v1", "--served-model", "m")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stderr, fmt.Sprintf("spiral: note: %s/v1 serves m with a context of %d positions (its context %d less one: SGLang refuses a request whose prompt and max_tokens reach it), below the %d of %s (config.json max_position_embeddings): prompts and traces are fitted to it\n",
		hs.URL, served-1, served, 4096, m))
	require.Contains(t, r.stderr, "skipped "+data+":1: search prompt of 93 tokens + 507 new tokens need 600 positions; the model has 599")
	require.Positive(t, longest.Load())
	require.Less(t, longest.Load(), int32(served))
}

// TestEvalRSAResumeOnSGLang: an RSA evaluation that a version before
// 2026-12-07 saved on an SGLang was fitted to its max_model_len, now to
// one less (TestServedContextSGLang): its prompt limit is one more than
// the rerun's, which refuses it. The refusal says why, and that no flags
// resume it, where it said "rerun with those" (which none could give).
// An engine that lists itself as vLLM stands for the older spiral: it
// fitted to the same context.
//
// With no --max-new-tokens, the trace length a version before then took,
// half the max_model_len, is now half of one less: its refusal said
// "max_new_tokens 600, not 599: rerun with those", whose rerun was
// refused for the prompt limit one less; it says why, and that no flags
// resume it.
func TestEvalRSAResumeOnSGLang(t *testing.T) {
	requireRuntime(t)
	const served, maxNew = 1200, 100
	for _, tc := range []struct {
		name  string
		flags []string
		want  string // the refusal's line, after "of"
	}{
		{"--max-new-tokens", []string{"--max-new-tokens", fmt.Sprint(maxNew)}, fmt.Sprintf(" of aggregation prompts of up to %d tokens (the model's context less --max-new-tokens), not %d: SGLang's context is taken one position shorter than it serves since spiral of 2026-12-07, as SGLang refuses a request that fills it, and no flags resume what a spiral before then saved on it: give --fresh to discard them and start over, or another --out\n",
			served-maxNew, served-1-maxNew)},
		{"the default trace length", nil, fmt.Sprintf(" of max_new_tokens %d, not %d (--max-new-tokens, by default half the context; SGLang's context is taken one position shorter than it serves since spiral of 2026-12-07, as SGLang refuses a request that fills it, and no flags resume what a spiral before then saved on it): give --fresh to discard them and start over, or another --out\n",
			served/2, (served-1)/2)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			m := filepath.Join(dir, "m")
			if r := spiral(t, nil, "init-model", "--out", m, "--layers", "1", "--max-positions", "4096"); r.code != 0 {
				t.Fatal(r.stderr)
			}
			data := filepath.Join(dir, "p.jsonl")
			require.NoError(t, os.WriteFile(data, []byte(`{"problem":"1+1","answer":"2"}`+"\n"), 0o666))
			hs, owner, _ := olderSGLang(t, served, 2) // the first step's two done: the run fails at the second
			out := filepath.Join(dir, "eval")
			args := append([]string{"eval", "--model", m, "--data", data, "--mode", "rsa", "--population", "2", "--subset", "2", "--rsa-steps", "2", "--quiet", "--out", out,
				"--engine", "openai", "--base-url", hs.URL + "/v1", "--served-model", "m"}, tc.flags...)
			r := spiral(t, nil, args...)
			require.NotEqual(t, 0, r.code, r.stderr)
			steps := filepath.Join(out, "rsa"+report.StepsSuffix)
			require.FileExists(t, steps, r.stderr)
			owner.Store("sglang")
			r = spiral(t, nil, args...)
			require.Equal(t, 1, r.code, r.stderr)
			require.Contains(t, r.stderr, fmt.Sprintf("%s holds ", steps))
			require.Contains(t, r.stderr, tc.want)
		})
	}
}

// TestEvalPassKResumeOnSGLang: a pass@k evaluation that a version before
// 2026-12-07 saved on an SGLang without --max-new-tokens took half its
// max_model_len as the trace length, now half of one less: its refusal
// said "max_new_tokens 600, not 599: rerun with those to resume it"
// without why; it says SGLang's context is one less, and that
// --max-new-tokens 600 resumes, which it does. An engine that lists
// itself as vLLM stands for the older spiral (TestEvalRSAResumeOnSGLang).
func TestEvalPassKResumeOnSGLang(t *testing.T) {
	requireRuntime(t)
	const served = 1200
	dir := t.TempDir()
	m := filepath.Join(dir, "m")
	if r := spiral(t, nil, "init-model", "--out", m, "--layers", "1", "--max-positions", "4096"); r.code != 0 {
		t.Fatal(r.stderr)
	}
	data := filepath.Join(dir, "p.jsonl")
	// One problem more than a call of --engine-concurrency 1 holds
	// (evalChunk), which the first run fails at.
	const chunk = 32 // evalChunk: evalChunkWaves of one request
	var rows strings.Builder
	for i := range chunk + 1 {
		fmt.Fprintf(&rows, `{"problem":"%d+1","answer":"%d"}`+"\n", i, i+1)
	}
	require.NoError(t, os.WriteFile(data, []byte(rows.String()), 0o666))
	hs, owner, finish := olderSGLang(t, served, chunk) // the first call done: the run fails at the second
	out := filepath.Join(dir, "eval")
	args := []string{"eval", "--model", m, "--data", data, "--mode", "passk", "--samples", "1", "--quiet", "--out", out,
		"--engine", "openai", "--engine-concurrency", "1", "--base-url", hs.URL + "/v1", "--served-model", "m"}
	r := spiral(t, nil, args...)
	require.NotEqual(t, 0, r.code, r.stderr)
	saved := filepath.Join(out, "passk"+report.ProblemsSuffix)
	require.FileExists(t, saved, r.stderr)
	owner.Store("sglang")
	r = spiral(t, nil, args...)
	require.Equal(t, 2, r.code, r.stderr)
	require.Contains(t, r.stderr, fmt.Sprintf("%s holds ", saved))
	require.Contains(t, r.stderr, fmt.Sprintf("max_new_tokens %d, not %d (--max-new-tokens, by default half the context; SGLang's context is taken one position shorter than it serves since spiral of 2026-12-07, as SGLang refuses a request that fills it: --max-new-tokens %d resumes)): rerun with those to resume it, or give --fresh",
		served/2, (served-1)/2, served/2))
	finish.Store(true)
	r = spiral(t, nil, append(args, "--max-new-tokens", fmt.Sprint(served/2))...)
	require.Equal(t, 0, r.code, r.stderr)
	require.FileExists(t, filepath.Join(out, "passk.json"))
}

// TestTrainEngineRestarted: an SGLang restarted in the middle of a run
// comes back serving the weights it was started with, under the same
// name: the rollouts its requests (retried, or the next step's) get are
// not the policy's, and were trained on without a word (policy_lag 0).
// /get_model_info names the weights it serves (model_path, the
// directory update_weights_from_disk loaded last): the run checks it
// after each step's rollouts and refuses them.
func TestTrainEngineRestarted(t *testing.T) {
	requireRuntime(t)
	var mu sync.Mutex
	const base = "/models/base"
	loaded := base
	var completions atomic.Int32
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		switch r.URL.Path {
		case "/v1/models":
			_, _ = w.Write([]byte(`{"data":[{"id":"m"}]}`))
		case "/get_model_info":
			_ = json.NewEncoder(w).Encode(map[string]any{"model_path": loaded, "tokenizer_path": base, "is_generation": true})
		case "/update_weights_from_disk":
			var body struct {
				Path string `json:"model_path"`
			}
			_ = json.NewDecoder(r.Body).Decode(&body)
			loaded = body.Path
			_, _ = w.Write([]byte(`{"success":true,"message":"Succeeded to update model weights."}`))
		case "/v1/completions":
			if completions.Add(1) == 1 {
				loaded = base // restarted: the weights it was started with
			}
			_, _ = w.Write([]byte(`{"choices":[{"text":"","token_ids":[3,4],"finish_reason":"stop"}]}`))
		default:
			http.Error(w, `{"message":"not here"}`, http.StatusNotFound)
		}
	}))
	defer hs.Close()
	sync := filepath.Join(t.TempDir(), "sync")
	r := spiral(t, nil, "train", "--steps", "1", "--problems", "1", "--n1", "2", "--k", "2", "--n", "1", "--n2", "2", "--threads", "1", "--quiet",
		"--out", filepath.Join(t.TempDir(), "run"), "--engine-sync", "sglang", "--sync-dir", sync, "--engine", "openai", "--base-url", hs.URL+"/v1", "--served-model", "m")
	require.Equal(t, 1, r.code, r.stderr)
	require.Contains(t, r.stderr, "rollout: weight sync: "+hs.URL+"/get_model_info: the engine serves "+base+", not "+filepath.Join(sync, "spiral-step-000000")+", the weights spiral loaded: was it restarted?")
}

// TestTrainResumesOnSyncedSGLang: SGLang names its model after the
// directory update_weights_from_disk loaded last (served_model_name =
// model_path), so that an engine a run synced lists that version, not
// --served-model: a run resumed (or another started) against it was
// refused "does not serve". A train run with --engine-sync sglang loads
// its own weights before its first rollout, and takes a version of its
// --sync-dir as its model, with a note.
func TestTrainResumesOnSyncedSGLang(t *testing.T) {
	requireRuntime(t)
	syncDir := filepath.Join(t.TempDir(), "sync")
	// An earlier run's last version.
	hs := syncingSGLang(t, filepath.Join(syncDir, "spiral-step-000003"), func(loaded string) map[string]any {
		return map[string]any{"id": loaded, "root": loaded}
	})
	r := spiral(t, nil, "train", "--steps", "1", "--problems", "1", "--n1", "2", "--k", "2", "--n", "1", "--n2", "2", "--threads", "1", "--quiet",
		"--out", filepath.Join(t.TempDir(), "run"), "--engine-sync", "sglang", "--sync-dir", syncDir, "--engine", "openai", "--base-url", hs.URL+"/v1", "--served-model", "m")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stderr, "spiral: note: "+hs.URL+"/v1 serves "+filepath.Join(syncDir, "spiral-step-000003")+", a version synced into --sync-dir (SGLang names its model after the weights it loaded last), not \"m\": this run loads its own first\n")
}

// TestTrainResumeOnSGLang: a run that a version before 2026-12-07
// started on an SGLang fitted to its max_model_len, now to one less
// (TestServedContextSGLang): its recorded prompt limit is one more than
// the rerun's, which refuses it as another setting. The refusal says
// why, and that --override continues it. An engine that lists itself as
// vLLM stands for the older spiral: it fitted to the same context.
func TestTrainResumeOnSGLang(t *testing.T) {
	requireRuntime(t)
	const served, maxNew = 1200, 96
	syncDir := filepath.Join(t.TempDir(), "sync")
	var owner atomic.Value
	owner.Store("vllm")
	hs := syncingSGLang(t, "m", func(loaded string) map[string]any {
		return map[string]any{"id": loaded, "root": loaded, "owned_by": owner.Load(), "max_model_len": served}
	})
	run := filepath.Join(t.TempDir(), "run")
	args := func(steps string) []string {
		return []string{"train", "--steps", steps, "--problems", "1", "--n1", "2", "--k", "2", "--n", "1", "--n2", "2", "--threads", "1", "--quiet", "--max-new-tokens", fmt.Sprint(maxNew),
			"--out", run, "--engine-sync", "sglang", "--sync-dir", syncDir, "--engine", "openai", "--base-url", hs.URL + "/v1", "--served-model", "m"}
	}
	r := spiral(t, nil, args("1")...)
	require.Equal(t, 0, r.code, r.stderr)
	owner.Store("sglang")
	r = spiral(t, nil, args("2")...)
	require.Equal(t, 2, r.code, r.stderr)
	require.Contains(t, r.stderr, fmt.Sprintf("%s holds a run with other settings: rl.pipeline.prompt_limit (the model's context less --max-new-tokens; SGLang's context is taken one position shorter than it serves since spiral of 2026-12-07, as SGLang refuses a request that fills it: --override continues): %d -> %d; rerun with --override",
		run, served-maxNew, served-1-maxNew))
}

// TestTrainRefusesLockedRunBeforeEngine: a run directory another train
// holds is refused at once, before the engine check, which waits up to
// --engine-timeout for a server still loading its model: here one that
// never answers.
func TestTrainRefusesLockedRunBeforeEngine(t *testing.T) {
	requireRuntime(t)
	answer := make(chan struct{})
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-answer:
		case <-r.Context().Done():
		}
	}))
	defer hs.Close()
	defer close(answer)
	run := filepath.Join(t.TempDir(), "run")
	unlock, err := rl.LockRun(run)
	require.NoError(t, err)
	defer func() { require.NoError(t, unlock()) }()
	start := time.Now()
	r := spiral(t, nil, "train", "--steps", "1", "--problems", "1", "--n1", "2", "--k", "2", "--n", "1", "--n2", "2", "--threads", "1", "--quiet",
		"--out", run, "--engine-sync", "sglang", "--sync-dir", filepath.Join(t.TempDir(), "sync"), "--engine", "openai", "--base-url", hs.URL+"/v1", "--served-model", "served", "--engine-timeout", "30s")
	require.Equal(t, 1, r.code, r.stderr)
	want := fmt.Sprintf("spiral train: --out %s: %s is in use by another spiral process (pid %d, lock file %s); wait for it or use another --out\n",
		run, run, os.Getpid(), filepath.Join(run, rl.LockFile))
	require.Equal(t, want, r.stderr)
	require.Less(t, time.Since(start), 15*time.Second, "the lock refusal waited for the engine")
}

// TestTrainRefusesCheckpointsFileBeforeEngine: an --out whose
// checkpoints is a file, which the resume cannot list, is refused at
// once, before the engine check (which waits up to --engine-timeout for
// a server still loading its model: here one that never answers) and
// before the policy's artifacts are built.
func TestTrainRefusesCheckpointsFileBeforeEngine(t *testing.T) {
	requireRuntime(t)
	answer := make(chan struct{})
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-answer:
		case <-r.Context().Done():
		}
	}))
	defer hs.Close()
	defer close(answer)
	run := filepath.Join(t.TempDir(), "run")
	require.NoError(t, os.MkdirAll(run, 0o777))
	ckpts := filepath.Join(run, rl.CheckpointsDir)
	require.NoError(t, os.WriteFile(ckpts, []byte("not a directory"), 0o666))
	start := time.Now()
	r := spiral(t, nil, "train", "--steps", "1", "--problems", "1", "--n1", "2", "--k", "2", "--n", "1", "--n2", "2", "--threads", "1", "--quiet",
		"--out", run, "--engine-sync", "sglang", "--sync-dir", filepath.Join(t.TempDir(), "sync"), "--engine", "openai", "--base-url", hs.URL+"/v1", "--served-model", "served", "--engine-timeout", "30s")
	require.Equal(t, 2, r.code, r.stderr)
	require.Equal(t, "spiral train: --out "+run+": "+ckpts+" is a file, not a directory of checkpoints: move it away, or use --fresh (which moves it aside into previous-*)\n", r.stderr)
	require.Less(t, time.Since(start), 15*time.Second, "the refusal waited for the engine")
	require.NoDirExists(t, filepath.Join(run, rl.ArtifactsDir))
}

// syncingSGLang starts a fake SGLang, closed when t ends, that serves
// the weights update_weights_from_disk loaded last as its model, as
// SGLang names its model after them (loaded at first): entry gives its
// /v1/models entry for that path. Its completions are two tokens.
func syncingSGLang(t *testing.T, loaded string, entry func(loaded string) map[string]any) *httptest.Server {
	var mu sync.Mutex
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		switch r.URL.Path {
		case "/v1/models":
			_ = json.NewEncoder(w).Encode(map[string]any{"data": []any{entry(loaded)}})
		case "/get_model_info":
			_ = json.NewEncoder(w).Encode(map[string]any{"model_path": loaded})
		case "/update_weights_from_disk":
			var body struct {
				Path string `json:"model_path"`
			}
			_ = json.NewDecoder(r.Body).Decode(&body)
			loaded = body.Path
			_, _ = w.Write([]byte(`{"success":true,"message":"Succeeded to update model weights."}`))
		case "/v1/completions":
			_, _ = w.Write([]byte(`{"choices":[{"text":"","token_ids":[3,4],"finish_reason":"stop"}]}`))
		default:
			http.Error(w, `{"message":"not here"}`, http.StatusNotFound)
		}
	}))
	t.Cleanup(hs.Close)
	return hs
}

// olderSGLang starts a fake engine, closed when t ends, that serves "m"
// with the context served, listing itself as vLLM (owner, which a test
// sets to "sglang": a vLLM stands for an SGLang as spiral before
// 2026-12-07 fitted to it) and failing every request after its first
// stopAfter until finish is set, so that an evaluation saves what it
// finished and fails.
func olderSGLang(t *testing.T, served int, stopAfter int32) (hs *httptest.Server, owner *atomic.Value, finish *atomic.Bool) {
	owner, finish = new(atomic.Value), new(atomic.Bool)
	owner.Store("vllm")
	var requests atomic.Int32
	hs = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/models" {
			_, _ = fmt.Fprintf(w, `{"object":"list","data":[{"id":"m","object":"model","owned_by":%q,"root":"m","max_model_len":%d}]}`, owner.Load(), served)
			return
		}
		if requests.Add(1) > stopAfter && !finish.Load() {
			http.Error(w, `{"object":"error","message":"stopped here","type":"BadRequest","code":400}`, http.StatusBadRequest)
			return
		}
		_, _ = w.Write([]byte(`{"choices":[{"index":0,"text":"","token_ids":[3,4],"finish_reason":"stop"}]}`))
	}))
	t.Cleanup(hs.Close)
	return hs, owner, finish
}
