package rollout_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/spiral-rl/spiral/rollout"
)

// fakeEngine is an OpenAI-compatible completions server on loopback: it
// answers each prompt with tokens derived from the prompt and the seed,
// in vLLM's shape (choices[0].token_ids), and records the requests.
type fakeEngine struct {
	mu       sync.Mutex
	requests []map[string]any
	inFlight atomic.Int32
	peak     atomic.Int32
	// fail answers the n-th call (0-based) with a status when set.
	fail   func(n int) int
	calls  atomic.Int32
	noIDs  bool
	delay  time.Duration
	models []string
	// maxModelLen, when > 0, is the models' max_model_len (vLLM's and
	// SGLang's /v1/models); ownedBy, when set, their owned_by.
	maxModelLen int
	ownedBy     string
	finish      string
	tokensOf    func(prompt []int32, seed int64) []int32
	// answer, when set, is the body of every 200 answer to a completion.
	answer string
}

func (f *fakeEngine) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := int(f.calls.Add(1)) - 1
	cur := f.inFlight.Add(1)
	defer f.inFlight.Add(-1)
	for {
		p := f.peak.Load()
		if cur <= p || f.peak.CompareAndSwap(p, cur) {
			break
		}
	}
	if f.delay > 0 {
		select {
		case <-time.After(f.delay):
		case <-r.Context().Done():
			return
		}
	}
	if f.fail != nil {
		if code := f.fail(n); code != 0 {
			w.WriteHeader(code)
			_, _ = w.Write([]byte(`{"object":"error","message":"engine says no"}`))
			return
		}
	}
	if r.URL.Path == "/v1/models" {
		var data []map[string]any
		for _, m := range f.models {
			card := map[string]any{"id": m}
			if f.maxModelLen > 0 {
				card["max_model_len"] = f.maxModelLen
			}
			if f.ownedBy != "" {
				card["owned_by"] = f.ownedBy
			}
			data = append(data, card)
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"data": data})
		return
	}
	if r.URL.Path != "/v1/completions" || r.Method != http.MethodPost {
		w.WriteHeader(http.StatusNotFound)
		return
	}
	var body map[string]any
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	f.requests = append(f.requests, body)
	f.mu.Unlock()
	if body["model"] != "served" {
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"error":{"message":"The model does not exist."}}`))
		return
	}
	if f.answer != "" {
		_, _ = w.Write([]byte(f.answer))
		return
	}
	var prompt []int32
	for _, v := range body["prompt"].([]any) {
		prompt = append(prompt, int32(v.(float64)))
	}
	toks := f.tokensOf(prompt, int64(body["seed"].(float64)))
	text := toks
	if f.finish == "stop" {
		text = toks[:len(toks)-1] // engines leave the stop token out of the text
	}
	choice := map[string]any{"text": textOf(text), "finish_reason": f.finish}
	if !f.noIDs {
		choice["token_ids"] = toks
	}
	if lp, ok := body["logprobs"].(float64); ok && lp == 0 {
		// vLLM's shape: the sampled tokens' log-probabilities.
		lps := make([]float64, len(toks))
		for i := range lps {
			lps[i] = -0.25 * float64(i+1)
		}
		choice["logprobs"] = map[string]any{"tokens": []string{}, "token_logprobs": lps, "top_logprobs": nil}
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"choices": []any{choice}})
}

// textOf renders ids as letters (the fake tokenizer: 'a' + id).
func textOf(ids []int32) string {
	var sb strings.Builder
	for _, id := range ids {
		sb.WriteByte(byte('a' + id))
	}
	return sb.String()
}

func newFake() *fakeEngine {
	return &fakeEngine{finish: "stop", models: []string{"served"}, tokensOf: func(p []int32, seed int64) []int32 {
		return []int32{p[0], int32(len(p)), int32(seed % 7), 2}
	}}
}

func engineConfig(url string) rollout.OpenAIConfig {
	s := rollout.DefaultSamplerConfig()
	s.MaxNewTokens, s.StopIDs, s.Temperature, s.TopK = 8, []int32{2}, 0.7, 5
	return rollout.OpenAIConfig{BaseURL: url + "/v1", Model: "served", Sampling: s, Backoff: time.Millisecond, Timeout: 5 * time.Second}
}

func TestOpenAIGenerate(t *testing.T) {
	fake := newFake()
	srv := httptest.NewServer(fake)
	defer srv.Close()
	cfg := engineConfig(srv.URL)
	cfg.Concurrency = 3
	cfg.APIKey = "k"
	eng, err := rollout.NewOpenAI(cfg)
	require.NoError(t, err)
	reqs := make([]rollout.Request, 20)
	for i := range reqs {
		reqs[i] = rollout.Request{Prompt: []int32{int32(i), 9, 9}[:1+i%3], Seed: uint64(100 + i)}
	}
	var progressed atomic.Int64
	out, st, err := eng.Generate(context.Background(), reqs, func(n int) { progressed.Add(int64(n)) })
	require.NoError(t, err)
	require.Len(t, out, len(reqs))
	for i, c := range out {
		require.Equal(t, []int32{int32(i), int32(1 + i%3), int32((100 + i) % 7), 2}, c.Tokens, "completion %d in request order", i)
		require.Equal(t, rollout.FinishStop, c.Finish)
		require.Equal(t, 1+i%3, c.PromptTokens)
		require.Nil(t, c.PolicyLogProbs, "the engine's log-probabilities are not the policy's")
		require.Equal(t, []float32{-0.25, -0.5, -0.75, -1}, c.EngineLogProbs, "but they are recorded")
	}
	require.Equal(t, 4*len(reqs), st.GeneratedTokens)
	require.Equal(t, int64(4*len(reqs)), progressed.Load())
	require.LessOrEqual(t, fake.peak.Load(), int32(3), "at most Concurrency requests in flight")
	body := fake.requests[0]
	require.Equal(t, 8.0, body["max_tokens"])
	require.Equal(t, 0.7, body["temperature"])
	require.Equal(t, 5.0, body["top_k"])
	require.Equal(t, true, body["return_token_ids"])
	require.Equal(t, 0.0, body["logprobs"], "the sampled tokens' log-probabilities only")
	require.Equal(t, []any{2.0}, body["stop_token_ids"])
}

// TestOpenAIPinsEverySamplingParameter: every parameter that vLLM (from
// 0.8, --generation-config auto by default) fills from the model's
// generation_config.json when a request leaves it out (top_k, min_p,
// repetition_penalty, besides temperature, top_p and max_tokens, always
// sent) is sent, so that the engine samples from the distribution asked
// for, as the local sampler does: top-k off is top_k -1 (vLLM's and
// SGLang's "disabled"; left out, it was Qwen3's generation_config's
// top-k 20, and older vLLM and SGLang refuse 0), no min-p (0) and no
// repetition penalty (1, which Qwen2.5-Instruct's generation_config sets
// to 1.05).
func TestOpenAIPinsEverySamplingParameter(t *testing.T) {
	for _, c := range []struct {
		topK int
		want float64
	}{{0, -1}, {5, 5}, {1, 1}} {
		fake := newFake()
		srv := httptest.NewServer(fake)
		cfg := engineConfig(srv.URL)
		cfg.Sampling.TopK, cfg.Concurrency = c.topK, 1
		eng, err := rollout.NewOpenAI(cfg)
		require.NoError(t, err)
		_, _, err = eng.Generate(context.Background(), []rollout.Request{{Prompt: []int32{3}}}, nil)
		srv.Close()
		require.NoError(t, err)
		body := fake.requests[0]
		require.Equal(t, c.want, body["top_k"], "--top-k %d", c.topK)
		require.Equal(t, 0.0, body["min_p"], "--top-k %d", c.topK)
		require.Equal(t, 1.0, body["repetition_penalty"], "--top-k %d", c.topK)
		require.Equal(t, 1.0, body["top_p"], "--top-k %d", c.topK)
		require.Equal(t, 0.7, body["temperature"], "--top-k %d", c.topK)
	}
}

// TestOpenAIContextLength: with the model's context known, a prompt
// that leaves fewer positions than MaxNewTokens is sent with max_tokens
// what is left (as the local sampler stops there; vLLM refuses a request
// whose prompt and max_tokens pass its context), and a completion
// filling it without a finish_reason is cut there.
func TestOpenAIContextLength(t *testing.T) {
	fake := newFake()
	fake.finish = ""
	fake.tokensOf = func(p []int32, _ int64) []int32 {
		if len(p) == 7 {
			return []int32{5, 5, 5}
		}
		return []int32{5, 2}
	}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	cfg := engineConfig(srv.URL)
	cfg.Sampling.ContextLength, cfg.Concurrency = 10, 1
	eng, err := rollout.NewOpenAI(cfg)
	require.NoError(t, err)
	out, _, err := eng.Generate(context.Background(), []rollout.Request{{Prompt: make([]int32, 7)}, {Prompt: make([]int32, 2)}}, nil)
	require.NoError(t, err)
	require.Equal(t, 3.0, fake.requests[0]["max_tokens"], "10 positions - a prompt of 7")
	require.Equal(t, rollout.FinishLength, out[0].Finish)
	require.Equal(t, 8.0, fake.requests[1]["max_tokens"], "MaxNewTokens, within the context")
	require.Equal(t, rollout.FinishStop, out[1].Finish)

	_, _, err = eng.Generate(context.Background(), []rollout.Request{{Prompt: make([]int32, 10)}}, nil)
	require.EqualError(t, err, "request 0: rollout: engine: prompt of 10 tokens leaves no room in the model's 10-position context")
}

// TestOpenAIKeepsConnections: Generate calls reuse a connection per
// request in flight, rather than opening new ones for all but two
// (the default transport's idle connections a host) at every answer:
// 4 calls of 64 requests, 8 in flight, opened 26 connections.
func TestOpenAIKeepsConnections(t *testing.T) {
	fake := newFake()
	fake.delay = 5 * time.Millisecond
	srv := httptest.NewUnstartedServer(fake)
	var conns atomic.Int32
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	cfg := engineConfig(srv.URL)
	cfg.Concurrency = 8
	eng, err := rollout.NewOpenAI(cfg)
	require.NoError(t, err)
	reqs := make([]rollout.Request, 64)
	for i := range reqs {
		reqs[i].Prompt = []int32{1}
	}
	for range 4 {
		_, _, err := eng.Generate(context.Background(), reqs, nil)
		require.NoError(t, err)
	}
	require.LessOrEqual(t, conns.Load(), int32(cfg.Concurrency), "connections opened")
}

// TestOpenAIBadEngineLogProbs: log-probabilities that cannot be the
// sampled tokens' (another count, a null, a positive value, one that
// overflows a float32, which made engine_logprob_diff infinite and
// metrics.jsonl unwritable) are left out, with one warning; the tokens
// are kept, and the next completion's good ones too.
func TestOpenAIBadEngineLogProbs(t *testing.T) {
	for _, tc := range []struct{ lps, want string }{
		{`[-0.5]`, "1 log-probabilities for 2 tokens"},
		{`[-0.5, -0.25, -1]`, "3 log-probabilities for 2 tokens"},
		{`[-0.5, null]`, "a null log-probability (token 1 of 2)"},
		{`[-0.5, 0.7]`, "log-probability 0.7 (token 1 of 2), which no probability has"},
		{`[-1e39, -0.5]`, "log-probability -1e+39 (token 0 of 2), which no probability has"},
	} {
		var n atomic.Int32
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			lps := tc.lps
			if n.Add(1) > 2 {
				lps = `[-0.5, -9999.0]` // vLLM's stand-in for -inf
			}
			_, _ = w.Write([]byte(`{"choices":[{"text":"","token_ids":[5,2],"finish_reason":"stop","logprobs":{"token_logprobs":` + lps + `}}]}`))
		}))
		cfg := engineConfig(srv.URL)
		var warn bytes.Buffer
		cfg.Warn, cfg.Concurrency = &warn, 1
		eng, err := rollout.NewOpenAI(cfg)
		require.NoError(t, err)
		out, _, err := eng.Generate(context.Background(), make([]rollout.Request, 3), nil)
		srv.Close()
		require.NoError(t, err, tc.lps)
		for i, c := range out[:2] {
			require.Equal(t, []int32{5, 2}, c.Tokens)
			require.Nil(t, c.EngineLogProbs, "%s: completion %d", tc.lps, i)
		}
		require.Equal(t, []float32{-0.5, -9999}, out[2].EngineLogProbs)
		require.Equal(t, "spiral: warning: "+srv.URL+"/v1/completions answered "+tc.want+"; such completions keep no engine log-probabilities (engine_logprob_diff leaves them out)\n", warn.String())
	}
}

func TestOpenAIFallsBackToLocalTokens(t *testing.T) {
	fake := newFake()
	fake.noIDs, fake.finish = true, "length"
	srv := httptest.NewServer(fake)
	defer srv.Close()
	cfg := engineConfig(srv.URL)
	var warn bytes.Buffer
	cfg.Warn = &warn
	cfg.Tokenize = func(s string) ([]int32, error) {
		ids := make([]int32, len(s))
		for i := range s {
			ids[i] = int32(s[i] - 'a')
		}
		return ids, nil
	}
	eng, err := rollout.NewOpenAI(cfg)
	require.NoError(t, err)
	out, _, err := eng.Generate(context.Background(), []rollout.Request{{Prompt: []int32{3}, Seed: 1}, {Prompt: []int32{4}, Seed: 2}}, nil)
	require.NoError(t, err)
	require.Equal(t, []int32{3, 1, 1, 2}, out[0].Tokens)
	require.Equal(t, rollout.FinishLength, out[0].Finish)
	require.Equal(t, 1, strings.Count(warn.String(), "tokenizing it locally"), "one warning")
	require.Nil(t, out[0].EngineLogProbs, "the engine's log-probabilities are of its tokens, not of local ones")

	// A completion that stopped on the stop token has it put back (its
	// text leaves it out), so it is trained and counted as the engine's
	// token ids and the local sampler keep it.
	fake.finish = "stop"
	out, _, err = eng.Generate(context.Background(), []rollout.Request{{Prompt: []int32{3}, Seed: 1}}, nil)
	require.NoError(t, err)
	require.Equal(t, []int32{3, 1, 1, 2}, out[0].Tokens)
	require.Equal(t, rollout.FinishStop, out[0].Finish)

	// Without a finish_reason, a text that fills max_tokens (8) was cut
	// there; a shorter one stopped.
	fake.finish = ""
	fake.tokensOf = func([]int32, int64) []int32 { return []int32{5, 5, 5, 5, 5, 5, 5, 5} }
	out, _, err = eng.Generate(context.Background(), []rollout.Request{{Prompt: []int32{3}, Seed: 1}}, nil)
	require.NoError(t, err)
	require.Equal(t, []int32{5, 5, 5, 5, 5, 5, 5, 5}, out[0].Tokens)
	require.Equal(t, rollout.FinishLength, out[0].Finish)
	fake.tokensOf = func([]int32, int64) []int32 { return []int32{5, 5} }
	out, _, err = eng.Generate(context.Background(), []rollout.Request{{Prompt: []int32{3}, Seed: 1}}, nil)
	require.NoError(t, err)
	require.Equal(t, []int32{5, 5, 2}, out[0].Tokens)
	require.Equal(t, rollout.FinishStop, out[0].Finish)

	// A local tokenizer that splits the engine's text otherwise (here two
	// ids a letter) can make more tokens of it than the engine sampled
	// (6 of max_tokens 8, the stop token included): the error says so
	// rather than blaming the engine.
	fake.finish = "stop"
	fake.tokensOf = func([]int32, int64) []int32 { return []int32{5, 5, 5, 5, 5, 2} }
	other := cfg
	other.Tokenize = func(s string) ([]int32, error) {
		var ids []int32
		for i := range s {
			ids = append(ids, int32(s[i]-'a'), 0)
		}
		return ids, nil
	}
	split, err := rollout.NewOpenAI(other)
	require.NoError(t, err)
	_, _, err = split.Generate(context.Background(), []rollout.Request{{Prompt: []int32{3}, Seed: 1}}, nil)
	require.ErrorContains(t, err, "tokenizing the text "+srv.URL+"/v1/completions answered gave 11 tokens (with the stop token that ended it), over max_tokens 8")
	require.ErrorContains(t, err, "the local tokenizer splits the engine's text otherwise")

	cfg.Tokenize = nil
	eng, err = rollout.NewOpenAI(cfg)
	require.NoError(t, err)
	_, _, err = eng.Generate(context.Background(), []rollout.Request{{Prompt: []int32{3}}}, nil)
	require.ErrorContains(t, err, "no token_ids")
}

// A choice with neither text nor token ids (null, {}, a null text)
// holds no completion: it fails, saying so, rather than being
// tokenized as an empty text that stopped (the trace [stop], rewarded 0
// and trained on).
func TestOpenAIChoiceWithoutCompletion(t *testing.T) {
	for _, answer := range []string{`{"choices":[null]}`, `{"choices":[{}]}`, `{"choices":[{"text":null,"finish_reason":"stop"}]}`} {
		t.Run(answer, func(t *testing.T) {
			fake := newFake()
			fake.answer = answer
			srv := httptest.NewServer(fake)
			defer srv.Close()
			cfg := engineConfig(srv.URL)
			cfg.Tokenize = func(s string) ([]int32, error) { return make([]int32, len(s)), nil }
			eng, err := rollout.NewOpenAI(cfg)
			require.NoError(t, err)
			_, _, err = eng.Generate(context.Background(), []rollout.Request{{Prompt: []int32{1}}}, nil)
			require.EqualError(t, err, "request 0: rollout: engine: "+srv.URL+"/v1/completions answered a choice with neither text nor token_ids (both null or missing)")
		})
	}
}

// TestOpenAIAbortRetried: a completion the engine aborted (finish_reason
// "abort", with what it had sampled so far) is no completion: vLLM
// answers it for a request aborted by its client or by a pause for a
// weight update (pause_generation's default mode, "abort"), SGLang for
// one aborted by /abort_request or such a pause, and both hold the
// requests that come during the pause until it ends, while SGLang
// answers the aborts it makes for a request it refuses with a 4xx. It
// was a failed batch at once; it is retried, as a 5xx is, and the
// retry's completion is the one kept.
func TestOpenAIAbortRetried(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			_, _ = w.Write([]byte(`{"choices":[{"index":0,"text":"ab","token_ids":[0,1],"finish_reason":"abort"}]}`))
			return
		}
		_, _ = w.Write([]byte(`{"choices":[{"index":0,"text":"dd","token_ids":[3,3,2],"finish_reason":"stop"}]}`))
	}))
	defer srv.Close()
	cfg := engineConfig(srv.URL)
	var warn bytes.Buffer
	cfg.Warn = &warn
	eng, err := rollout.NewOpenAI(cfg)
	require.NoError(t, err)
	out, _, err := eng.Generate(context.Background(), []rollout.Request{{Prompt: []int32{1}}}, nil)
	require.NoError(t, err)
	require.Equal(t, []int32{3, 3, 2}, out[0].Tokens)
	require.Equal(t, rollout.FinishStop, out[0].Finish)
	require.Equal(t, int32(2), calls.Load())
	require.Equal(t, "spiral: warning: rollout: engine: "+srv.URL+`/v1/completions: the engine aborted the completion (finish_reason "abort"), as it does a request aborted from outside it (a pause for a weight update, SGLang's /abort_request); retry 1 of 4 in 1ms`+"\n", warn.String())
}

func TestOpenAIErrors(t *testing.T) {
	for _, tc := range []struct {
		name     string
		fail     func(n int) int
		answer   string
		tokensOf func(prompt []int32, seed int64) []int32
		model    string
		calls    int32
		want     string
		warnings []string // the retry lines on Warn, in order
		finish   rollout.FinishReason
	}{
		{name: "retried 503 then served", fail: func(n int) int { return map[int]int{0: 503, 1: 429}[n] }, model: "served", calls: 3,
			warnings: []string{"HTTP 503: engine says no; retry 1 of 2 in 1ms", "HTTP 429: engine says no; retry 2 of 2 in 2ms"}},
		{name: "5xx every time", fail: func(int) int { return 500 }, model: "served", calls: 3, want: "HTTP 500: engine says no (after 3 attempts)",
			warnings: []string{"HTTP 500: engine says no; retry 1 of 2 in 1ms", "HTTP 500: engine says no; retry 2 of 2 in 2ms"}},
		{name: "bad request is not retried", fail: func(int) int { return 400 }, model: "served", calls: 1, want: "HTTP 400"},
		{name: "wrong model", model: "other", calls: 1, want: "The model does not exist"},
		// A 200 whose body is not the expected JSON would be the same
		// again: not retried.
		{name: "malformed answer is not retried", answer: `{"choices": [`, model: "served", calls: 1, want: "/v1/completions: the answer is not the expected JSON"},
		// An error answered with a 200 (older vLLM, a proxy) is shown as
		// the server put it, not taken for an answer without choices.
		{name: "error in a 200", answer: `{"error":{"message":"This model's maximum context length is 8 tokens","type":"BadRequestError","code":400}}`, model: "served", calls: 1,
			want: "/v1/completions: HTTP 200, but the answer is an error: This model's maximum context length is 8 tokens"},
		{name: "vLLM's error object in a 200", answer: `{"object":"error","message":"top_k must be -1","type":"BadRequestError","code":400}`, model: "served", calls: 1,
			want: "/v1/completions: HTTP 200, but the answer is an error: top_k must be -1"},
		{name: "error string in a 200", answer: `{"error":"overloaded"}`, model: "served", calls: 1, want: "HTTP 200, but the answer is an error: overloaded"},
		{name: "answer of the wrong shape is not retried", answer: `{"choices": "none"}`, model: "served", calls: 1, want: "the answer is not the expected JSON"},
		// The answer is quoted (summed up), so that a proxy's page, or a
		// server of another API, can be told.
		{name: "wrong shape quoted", answer: `{"choices": "none"}`, model: "served", calls: 1,
			want: `request 0: rollout: engine: http://127.0.0.1:PORT/v1/completions: the answer is not the expected JSON: choices is string, want an array (the answer: {"choices": "none"})`},
		{name: "token id not an int32", answer: `{"choices":[{"text":"","token_ids":[5,3000000000],"finish_reason":"stop"}]}`, model: "served", calls: 1,
			want: `the answer is not the expected JSON: choices.token_ids is number 3000000000, want an integer within int32 (the answer: {"choices":[{"text":"","token_ids":[5,3000000000],"finish_reason":"stop"}]})`},
		{name: "not JSON at all", answer: `{"choices": [`, model: "served", calls: 1,
			want: `request 0: rollout: engine: http://127.0.0.1:PORT/v1/completions: the answer is not the expected JSON: unexpected end of JSON input (the answer: {"choices": [)`},
		{name: "HTML page in a 200", answer: "<!DOCTYPE html>\n<html><head><title>Sign in</title></head><body>...</body></html>", model: "served", calls: 1,
			want: `request 0: rollout: engine: http://127.0.0.1:PORT/v1/completions: the answer is not the expected JSON: invalid character '<' looking for beginning of value (the answer: an HTML page titled "Sign in" (80 bytes; not the engine's answer: a proxy's?))`},
		// Token ids outside the model's vocabulary (49 here) are refused
		// when they arrive, naming the engine and the id.
		{name: "token id beyond the vocabulary", tokensOf: func([]int32, int64) []int32 { return []int32{99999999} }, model: "served", calls: 1,
			want: "request 0: rollout: engine: http://127.0.0.1:PORT/v1/completions answered token id 99999999 (completion token 0 of 1), outside the model's vocabulary of 49 ids [0, 49)"},
		{name: "negative token id", tokensOf: func([]int32, int64) []int32 { return []int32{-5, 3} }, model: "served", calls: 1,
			want: "answered token id -5 (completion token 0 of 2), outside the model's vocabulary of 49 ids"},
		// No finish_reason (null): the tokens tell it, since it decides
		// whether a cut trace earns a reward; when they cannot, it fails.
		{name: "no finish reason, ends in a stop id", answer: `{"choices":[{"text":"","token_ids":[5,2],"finish_reason":null}]}`, model: "served", calls: 1, finish: rollout.FinishStop},
		{name: "no finish reason, at max_tokens", answer: `{"choices":[{"text":"","token_ids":[5,5,5,5,5,5,5,5],"finish_reason":null}]}`, model: "served", calls: 1, finish: rollout.FinishLength},
		{name: "no finish reason, neither", answer: `{"choices":[{"text":"","token_ids":[5,5,5]}]}`, model: "served", calls: 1,
			want: "request 0: rollout: engine: http://127.0.0.1:PORT/v1/completions answered no finish_reason, and its 3 tokens neither end in a stop token nor reach max_tokens 8"},
		// vLLM and SGLang answer "abort" for a request aborted from
		// outside it (a pause for a weight update, SGLang's
		// /abort_request): retried as a 5xx is (TestOpenAIAbortRetried);
		// one aborted every time fails after the retries.
		{name: "finish reason abort", answer: `{"choices":[{"text":"","token_ids":[5],"finish_reason":"abort"}]}`, model: "served", calls: 3,
			want: `request 0: rollout: engine: http://127.0.0.1:PORT/v1/completions: the engine aborted the completion (finish_reason "abort"), as it does a request aborted from outside it (a pause for a weight update, SGLang's /abort_request) (after 3 attempts)`,
			warnings: []string{`the engine aborted the completion (finish_reason "abort"), as it does a request aborted from outside it (a pause for a weight update, SGLang's /abort_request); retry 1 of 2 in 1ms`,
				`(finish_reason "abort"), as it does a request aborted from outside it (a pause for a weight update, SGLang's /abort_request); retry 2 of 2 in 2ms`}},
		{name: "finish reason unknown", answer: `{"choices":[{"text":"","token_ids":[5],"finish_reason":"content_filter"}]}`, model: "served", calls: 1,
			want: `request 0: rollout: engine: http://127.0.0.1:PORT/v1/completions answered finish_reason "content_filter": want stop or length`},
		// vLLM echoes the prompt it completed (return_token_ids): one other
		// than the prompt sent (a BOS put before it, a truncation) fails.
		{name: "prompt echoed", answer: `{"choices":[{"text":"","prompt_token_ids":[1],"token_ids":[5,2],"finish_reason":"stop"}]}`, model: "served", calls: 1},
		{name: "prompt echoed with a BOS", answer: `{"choices":[{"text":"","prompt_token_ids":[0,1],"token_ids":[5,2],"finish_reason":"stop"}]}`, model: "served", calls: 1,
			want: "request 0: rollout: engine: http://127.0.0.1:PORT/v1/completions completed a prompt of 2 tokens (prompt_token_ids) other than the 1 sent: at token 0 it has 0 where the prompt sent has 1"},
		{name: "prompt echoed truncated", answer: `{"choices":[{"text":"","prompt_token_ids":[],"token_ids":[5,2],"finish_reason":"stop"}]}`, model: "served", calls: 1,
			want: "completed a prompt of 0 tokens (prompt_token_ids) other than the 1 sent: at token 0 it has its end where the prompt sent has 1"},
		// Token ids that cannot be the text's: none for a text, more than
		// max_tokens (8).
		{name: "text without token ids", answer: `{"choices":[{"text":"The answer is 42.","token_ids":[],"finish_reason":"stop"}]}`, model: "served", calls: 1,
			want: `request 0: rollout: engine: http://127.0.0.1:PORT/v1/completions answered the text "The answer is 42." with no token ids (token_ids: [])`},
		{name: "empty completion", answer: `{"choices":[{"text":"","token_ids":[],"finish_reason":"stop"}]}`, model: "served", calls: 1},
		{name: "more tokens than max_tokens", answer: `{"choices":[{"text":"","token_ids":[5,5,5,5,5,5,5,5,2],"finish_reason":"stop"}]}`, model: "served", calls: 1,
			want: "request 0: rollout: engine: http://127.0.0.1:PORT/v1/completions answered a completion of 9 tokens, over max_tokens 8"},
		{name: "last id of the vocabulary", tokensOf: func([]int32, int64) []int32 { return []int32{0, 48} }, model: "served", calls: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := newFake()
			fake.fail, fake.answer = tc.fail, tc.answer
			if tc.tokensOf != nil {
				fake.tokensOf = tc.tokensOf
			}
			srv := httptest.NewServer(fake)
			defer srv.Close()
			cfg := engineConfig(srv.URL)
			var warn bytes.Buffer
			cfg.Model, cfg.Retries, cfg.Concurrency, cfg.Vocab, cfg.Warn = tc.model, 2, 1, 49, &warn
			cfg.RetryNotice = -1 // a line for every retry
			eng, err := rollout.NewOpenAI(cfg)
			require.NoError(t, err)
			out, _, err := eng.Generate(context.Background(), []rollout.Request{{Prompt: []int32{1}}}, nil)
			if tc.want == "" {
				require.NoError(t, err)
				if tc.finish != "" {
					require.Equal(t, tc.finish, out[0].Finish)
				}
			} else {
				require.Error(t, err)
				require.Contains(t, strings.ReplaceAll(err.Error(), strings.TrimPrefix(srv.URL, "http://"), "127.0.0.1:PORT"), tc.want)
			}
			require.Equal(t, tc.calls, fake.calls.Load())
			lines := strings.Split(strings.TrimRight(warn.String(), "\n"), "\n")
			if len(tc.warnings) == 0 {
				require.Empty(t, warn.String(), "no retry, no warning")
			} else {
				require.Len(t, lines, len(tc.warnings), warn.String())
			}
			for i, w := range tc.warnings {
				require.True(t, strings.HasPrefix(lines[i], "spiral: warning: rollout: engine: "+srv.URL+"/v1/completions: "), lines[i])
				require.True(t, strings.HasSuffix(lines[i], w), "line %d: %q, want it to end in %q", i, lines[i], w)
			}
		})
	}

	// A proxy's HTML error page, or any long body, is not quoted whole
	// in the error and in every retry line.
	t.Run("error pages summed up", func(t *testing.T) {
		page := "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx/1.18.0</center>\r\n" +
			strings.Repeat("<!-- a padding to disable MSIE and Chrome friendly error page -->\r\n", 6) + "</body>\r\n</html>\r\n"
		long := strings.Repeat("Traceback line\n", 1000)
		for _, tc := range []struct {
			status      int
			contentType string
			body, want  string
		}{
			{502, "text/html", page, `HTTP 502: an HTML page titled "502 Bad Gateway" (` + fmt.Sprint(len(page)) + ` bytes; not the engine's answer: a proxy's?) (after 2 attempts)`},
			{500, "text/plain", long, "HTTP 500: " + strings.Repeat("Traceback line ", 20)[:300] + "... (15000 bytes) (after 2 attempts)"},
			{503, "text/plain", "", "HTTP 503: (an empty body) (after 2 attempts)"},
		} {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", tc.contentType)
				w.WriteHeader(tc.status)
				_, _ = w.Write([]byte(tc.body))
			}))
			cfg := engineConfig(srv.URL)
			var warn bytes.Buffer
			cfg.Retries, cfg.Warn, cfg.RetryNotice = 1, &warn, -1
			eng, err := rollout.NewOpenAI(cfg)
			require.NoError(t, err)
			_, _, err = eng.Generate(context.Background(), []rollout.Request{{Prompt: []int32{1}}}, nil)
			srv.Close()
			require.EqualError(t, err, "request 0: rollout: engine: "+srv.URL+"/v1/completions: "+tc.want)
			require.Equal(t, 1, strings.Count(warn.String(), "\n"), "one retry line: %q", warn.String())
			require.Less(t, warn.Len(), 500, warn.String())
		}
	})

	// A redirect that keeps the method (307, 308) is followed; one a
	// client follows with a GET without the body (301, 302, 303: an
	// http-to-https proxy, a moved path) fails at once naming where it
	// leads, instead of sending a GET that the server answers 404 or
	// 405 for the URL asked.
	t.Run("redirects", func(t *testing.T) {
		for _, tc := range []struct {
			status int
			calls  int32
			want   string
		}{
			{307, 2, ""},
			{308, 2, ""},
			{301, 1, "/v1/completions answered HTTP 301, a redirect to URL/moved/v1/completions, which would send the POST again as a GET without its body; set --base-url to the address the server redirects to"},
			{302, 1, "answered HTTP 302, a redirect to URL/moved/v1/completions"},
			{303, 1, "answered HTTP 303, a redirect to URL/moved/v1/completions"},
		} {
			fake := newFake()
			var calls atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				calls.Add(1)
				if rest, ok := strings.CutPrefix(r.URL.Path, "/moved"); ok {
					r.URL.Path = rest
					fake.ServeHTTP(w, r)
					return
				}
				http.Redirect(w, r, "/moved"+r.URL.Path, tc.status)
			}))
			cfg := engineConfig(srv.URL)
			var warn bytes.Buffer
			cfg.Warn = &warn
			eng, err := rollout.NewOpenAI(cfg)
			require.NoError(t, err)
			out, _, err := eng.Generate(context.Background(), []rollout.Request{{Prompt: []int32{1}}}, nil)
			srv.Close()
			if tc.want == "" {
				require.NoError(t, err, "HTTP %d", tc.status)
				require.Equal(t, []int32{1, 1, 0, 2}, out[0].Tokens)
			} else {
				require.ErrorContains(t, err, strings.ReplaceAll(tc.want, "URL", srv.URL), "HTTP %d", tc.status)
			}
			require.Equal(t, tc.calls, calls.Load(), "HTTP %d: not retried", tc.status)
			require.Empty(t, warn.String())
		}
	})

	t.Run("server down", func(t *testing.T) {
		srv := httptest.NewServer(newFake())
		url := srv.URL
		srv.Close()
		cfg := engineConfig(url)
		var warn bytes.Buffer
		cfg.Retries, cfg.Warn, cfg.RetryNotice = 2, &warn, -1
		eng, err := rollout.NewOpenAI(cfg)
		require.NoError(t, err)
		_, _, err = eng.Generate(context.Background(), []rollout.Request{{Prompt: []int32{1}}}, nil)
		require.ErrorContains(t, err, url+"/v1/completions is not reachable")
		require.ErrorContains(t, err, "(after 3 attempts)", "connection errors are retried")
		require.Equal(t, 2, strings.Count(warn.String(), "is not reachable"), warn.String())
	})

	// Retry lines come at most one per RetryNotice, whichever requests
	// retry: an engine failing under 4 concurrent requests prints one
	// line where it used to print one per retry, and the next line
	// counts the retries not shown.
	t.Run("retry lines throttled", func(t *testing.T) {
		for _, tc := range []struct {
			notice time.Duration
			lines  int
		}{{notice: -1, lines: 12}, {notice: time.Hour, lines: 1}} {
			fake := newFake()
			fake.fail = func(n int) int {
				if n < 12 {
					return 503
				}
				return 0
			}
			srv := httptest.NewServer(fake)
			cfg := engineConfig(srv.URL)
			var warn bytes.Buffer
			cfg.Retries, cfg.Concurrency, cfg.Warn, cfg.RetryNotice = 4, 4, &warn, tc.notice
			eng, err := rollout.NewOpenAI(cfg)
			require.NoError(t, err)
			reqs := make([]rollout.Request, 8)
			for i := range reqs {
				reqs[i].Prompt = []int32{1}
			}
			_, _, err = eng.Generate(context.Background(), reqs, nil)
			srv.Close()
			require.NoError(t, err)
			require.Equal(t, int32(12+8), fake.calls.Load(), "12 failures, 8 completions")
			require.Equal(t, tc.lines, strings.Count(warn.String(), "HTTP 503: engine says no; retry "), "RetryNotice %v:\n%s", tc.notice, warn.String())
			require.NotContains(t, warn.String(), "other retr")
		}

		fake := newFake()
		// Calls 0-4 are the first request's (four failures, then an
		// answer), 5-7 the second's.
		fake.fail = func(n int) int { return map[int]int{0: 503, 1: 503, 2: 503, 3: 429, 5: 503, 6: 500}[n] }
		srv := httptest.NewServer(fake)
		defer srv.Close()
		cfg := engineConfig(srv.URL)
		var warn bytes.Buffer
		cfg.Retries, cfg.Concurrency, cfg.Warn, cfg.RetryNotice = 4, 1, &warn, time.Second
		eng, err := rollout.NewOpenAI(cfg)
		require.NoError(t, err)
		_, _, err = eng.Generate(context.Background(), []rollout.Request{{Prompt: []int32{1}}}, nil)
		require.NoError(t, err)
		time.Sleep(1100 * time.Millisecond) // past RetryNotice: the next retry is announced
		_, _, err = eng.Generate(context.Background(), []rollout.Request{{Prompt: []int32{1}}}, nil)
		require.NoError(t, err)
		lines := strings.Split(strings.TrimRight(warn.String(), "\n"), "\n")
		require.Len(t, lines, 2, warn.String())
		require.True(t, strings.HasSuffix(lines[0], "HTTP 503: engine says no; retry 1 of 4 in 1ms"), lines[0])
		require.True(t, strings.HasSuffix(lines[1], "HTTP 503: engine says no; retry 1 of 4 in 1ms (3 other retries since the last line)"), lines[1])
	})

	t.Run("model check", func(t *testing.T) {
		fake := newFake()
		fake.models = []string{"a", "b"}
		srv := httptest.NewServer(fake)
		defer srv.Close()
		eng, err := rollout.NewOpenAI(engineConfig(srv.URL))
		require.NoError(t, err)
		require.ErrorContains(t, checkModel(eng), `does not serve "served" (it serves a, b)`)
		fake.models = []string{"served"}
		require.NoError(t, checkModel(eng))
		fake.models = nil
		require.ErrorContains(t, checkModel(eng), `does not serve "served" (`+srv.URL+`/v1/models lists no model)`)
	})

	// A 404 for the models list: most often a base URL without /v1.
	t.Run("model check 404", func(t *testing.T) {
		srv := httptest.NewServer(newFake())
		defer srv.Close()
		cfg := engineConfig(srv.URL)
		cfg.BaseURL = srv.URL
		eng, err := rollout.NewOpenAI(cfg)
		require.NoError(t, err)
		require.EqualError(t, checkModel(eng), "rollout: engine: "+srv.URL+"/models: HTTP 404: (an empty body) (--base-url must be the API root, under which /models and /completions lie: with vLLM and SGLang, ending in /v1)")
	})

	// A models list answered as an error in a 200 (a proxy refusing the
	// key) shows the error, not an empty list.
	t.Run("model check answered with an error", func(t *testing.T) {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			_, _ = w.Write([]byte(`{"error":{"message":"invalid API key"}}`))
		}))
		defer srv.Close()
		eng, err := rollout.NewOpenAI(engineConfig(srv.URL))
		require.NoError(t, err)
		require.EqualError(t, checkModel(eng), "rollout: engine: "+srv.URL+"/v1/models: HTTP 200, but the answer is an error: invalid API key")
	})

	// The model check is the first request: a server slow to answer it
	// is announced instead of waited on silently.
	t.Run("model check waits aloud", func(t *testing.T) {
		for _, tc := range []struct {
			name          string
			delay, notice time.Duration
			want          string
		}{
			// A second's notice, so that a loaded machine's slow answer is
			// not taken for a silent server.
			{"prompt answer", 0, time.Second, ""},
			{"slow answer", 300 * time.Millisecond, 50 * time.Millisecond, "spiral: waiting for URL/v1/models to answer (nothing after 50ms; giving up after 5s, --engine-timeout)\n"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				fake := newFake()
				fake.delay = tc.delay
				srv := httptest.NewServer(fake)
				defer srv.Close()
				cfg := engineConfig(srv.URL)
				var warn bytes.Buffer
				cfg.Warn, cfg.WaitNotice = &warn, tc.notice
				eng, err := rollout.NewOpenAI(cfg)
				require.NoError(t, err)
				require.NoError(t, checkModel(eng))
				require.Equal(t, strings.ReplaceAll(tc.want, "URL", srv.URL), warn.String())
			})
		}
	})
}

// TestOpenAITimeout checks that Timeout bounds a request from its first
// attempt to its answer, retries and the waits between them included.
func TestOpenAITimeout(t *testing.T) {
	const timeout = 400 * time.Millisecond
	// hang answers nothing until the client gives up (the server notices
	// once the body is read) or the test is long over.
	hang := func(r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		select {
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
	}
	for _, tc := range []struct {
		name    string
		handler func(n int, w http.ResponseWriter, r *http.Request)
		backoff time.Duration
		calls   int32
		want    string
	}{
		{"no answer", func(_ int, _ http.ResponseWriter, r *http.Request) { hang(r) }, time.Millisecond, 1,
			"/v1/completions: no answer within 400ms (--engine-timeout)"},
		{"a 503, then no answer", func(n int, w http.ResponseWriter, r *http.Request) {
			if n == 0 {
				http.Error(w, `{"message":"busy"}`, http.StatusServiceUnavailable)
				return
			}
			hang(r)
		}, time.Millisecond, 2, "/v1/completions: no answer within 400ms (--engine-timeout), 2 attempts; the last failure before it: rollout: engine: URL/v1/completions: HTTP 503: busy"},
		// Backoff 150 ms: attempts at 0 and 150 ms; the next would start
		// at 450 ms, past the timeout, so the request fails at once.
		{"503s until the backoff passes the timeout", func(_ int, w http.ResponseWriter, _ *http.Request) {
			http.Error(w, `{"message":"busy"}`, http.StatusServiceUnavailable)
		}, 150 * time.Millisecond, 2, "HTTP 503: busy (2 attempts; another would start after the 400ms timeout, --engine-timeout)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var calls atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				tc.handler(int(calls.Add(1))-1, w, r)
			}))
			defer srv.Close()
			cfg := engineConfig(srv.URL)
			cfg.Timeout, cfg.Retries, cfg.Backoff = timeout, 10, tc.backoff
			eng, err := rollout.NewOpenAI(cfg)
			require.NoError(t, err)
			start := time.Now()
			_, _, err = eng.Generate(context.Background(), []rollout.Request{{Prompt: []int32{1}}}, nil)
			took := time.Since(start)
			require.Error(t, err)
			require.Contains(t, err.Error(), strings.ReplaceAll(tc.want, "URL", srv.URL))
			require.Less(t, took, timeout+300*time.Millisecond, "the timeout bounds the retries")
			require.Equal(t, tc.calls, calls.Load())
		})
	}
}

// TestOpenAIRetryAfter: a 429 or 503 with a Retry-After (seconds or an
// HTTP date) is retried no sooner than it asks, the retry line saying
// so; one that asks for more than the timeout leaves is not waited for.
func TestOpenAIRetryAfter(t *testing.T) {
	for _, tc := range []struct {
		name       string
		status     int
		retryAfter string
		// dateIn, when set, makes retryAfter the HTTP date this long
		// from the subtest's start (the table is built before the
		// earlier cases wait).
		dateIn  time.Duration
		timeout time.Duration
		least   time.Duration // the shortest the call may take
		want    string        // the error; "" for none
		warning string        // the retry line's end
	}{
		{name: "429, seconds", status: 429, retryAfter: "1", timeout: 5 * time.Second, least: time.Second,
			warning: "HTTP 429: busy; retry 1 of 3 in 1s (the server's Retry-After)"},
		{name: "503, an HTTP date", status: 503, dateIn: 3 * time.Second, timeout: 8 * time.Second, least: time.Second,
			warning: "(the server's Retry-After)"},
		{name: "shorter than the backoff", status: 429, retryAfter: "0", timeout: 5 * time.Second,
			warning: "HTTP 429: busy; retry 1 of 3 in 1ms"},
		{name: "unreadable", status: 429, retryAfter: "soon", timeout: 5 * time.Second,
			warning: "HTTP 429: busy; retry 1 of 3 in 1ms"},
		{name: "past the timeout", status: 429, retryAfter: "60", timeout: 2 * time.Second,
			want: "HTTP 429: busy (1 attempt; the server's Retry-After asks to wait 1m0s, past the 2s timeout, --engine-timeout)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.dateIn > 0 {
				// Whole seconds: at least dateIn - 1s from now.
				tc.retryAfter = time.Now().Add(tc.dateIn).UTC().Format(http.TimeFormat)
			}
			var calls atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if calls.Add(1) == 1 {
					w.Header().Set("Retry-After", tc.retryAfter)
					w.WriteHeader(tc.status)
					_, _ = w.Write([]byte(`{"message":"busy"}`))
					return
				}
				_, _ = w.Write([]byte(`{"choices":[{"text":"","token_ids":[5,2],"finish_reason":"stop"}]}`))
			}))
			defer srv.Close()
			cfg := engineConfig(srv.URL)
			var warn bytes.Buffer
			cfg.Timeout, cfg.Retries, cfg.Warn, cfg.RetryNotice = tc.timeout, 3, &warn, -1
			eng, err := rollout.NewOpenAI(cfg)
			require.NoError(t, err)
			start := time.Now()
			out, _, err := eng.Generate(context.Background(), []rollout.Request{{Prompt: []int32{1}}}, nil)
			took := time.Since(start)
			if tc.want != "" {
				require.EqualError(t, err, "request 0: rollout: engine: "+srv.URL+"/v1/completions: "+tc.want)
				require.Less(t, took, time.Second, "not waited for")
				require.Empty(t, warn.String())
				return
			}
			require.NoError(t, err)
			require.Equal(t, []int32{5, 2}, out[0].Tokens)
			require.GreaterOrEqual(t, took, tc.least)
			require.True(t, strings.HasSuffix(strings.TrimSuffix(warn.String(), "\n"), tc.warning), "%q, want it to end in %q", warn.String(), tc.warning)
		})
	}
}

// TestOpenAIStallNotice: a Generate call whose requests stop answering
// says so on Warn after StallNotice, and again each time the wait
// doubles, instead of waiting silently for the timeout; one whose
// requests answer promptly says nothing.
func TestOpenAIStallNotice(t *testing.T) {
	// Wide margins for a loaded machine: the prompt case has a second to
	// answer two requests; the hanging one's notices are due 100, 200, 400
	// and 800 ms after the first answer, within its 1 s timeout, and two
	// of them are required.
	const lines = 4
	for _, tc := range []struct {
		name            string
		hang            bool // the second request never answers
		notice, timeout time.Duration
	}{
		{"prompt answers", false, time.Second, 5 * time.Second},
		{"a request hangs", true, 100 * time.Millisecond, time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := newFake()
			var calls atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/v1/completions" && calls.Add(1) == 2 && tc.hang {
					_, _ = io.Copy(io.Discard, r.Body)
					<-r.Context().Done()
					return
				}
				fake.ServeHTTP(w, r)
			}))
			defer srv.Close()
			cfg := engineConfig(srv.URL)
			var warn bytes.Buffer
			cfg.Warn, cfg.StallNotice, cfg.Timeout, cfg.Concurrency = &warn, tc.notice, tc.timeout, 2
			eng, err := rollout.NewOpenAI(cfg)
			require.NoError(t, err)
			_, _, err = eng.Generate(context.Background(), []rollout.Request{{Prompt: []int32{1}}, {Prompt: []int32{2}}}, nil)
			if !tc.hang {
				require.NoError(t, err)
				require.Empty(t, warn.String())
				return
			}
			require.ErrorContains(t, err, "no answer within 1s")
			got := strings.Split(strings.TrimSuffix(warn.String(), "\n"), "\n")
			require.GreaterOrEqual(t, len(got), 2, warn.String())
			require.LessOrEqual(t, len(got), lines, warn.String())
			for i, line := range got {
				want := fmt.Sprintf("spiral: waiting for %s/v1/completions: no answer for %v (1 of 2 requests to go; each gives up after 1s, --engine-timeout)",
					srv.URL, tc.notice<<i)
				require.Equal(t, want, line)
			}
		})
	}
}

func TestOpenAIConfig(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(c *rollout.OpenAIConfig)
		want string // "" = accepted
	}{
		{"valid", func(*rollout.OpenAIConfig) {}, ""},
		{"https and a port", func(c *rollout.OpenAIConfig) { c.BaseURL = "https://gpu:8000/v1/" }, ""},
		{"no base URL", func(c *rollout.OpenAIConfig) { c.BaseURL = "" }, "the base URL and the served model name are required"},
		{"ftp", func(c *rollout.OpenAIConfig) { c.BaseURL = "ftp://x/v1" }, `base URL "ftp://x/v1": want an http:// or https:// URL`},
		{"no scheme", func(c *rollout.OpenAIConfig) { c.BaseURL = "127.0.0.1:8000/v1" }, `base URL "127.0.0.1:8000/v1": want an http:// or https:// URL, e.g. http://127.0.0.1:8000/v1`},
		{"host without scheme", func(c *rollout.OpenAIConfig) { c.BaseURL = "gpu/v1" }, `base URL "gpu/v1": want an http:// or https:// URL`},
		{"no host", func(c *rollout.OpenAIConfig) { c.BaseURL = "http://" }, `base URL "http://" names no host`},
		{"no host, a path", func(c *rollout.OpenAIConfig) { c.BaseURL = "http:///v1" }, `base URL "http:///v1" names no host`},
		// As from --base-url http://$HOST:8000/v1 with HOST unset: Go
		// would dial the local machine's port 8000.
		{"no host, a port", func(c *rollout.OpenAIConfig) { c.BaseURL = "http://:8000/v1" }, `base URL "http://:8000/v1" names no host`},
		{"bad scheme", func(c *rollout.OpenAIConfig) { c.BaseURL = "1http://x/v1" }, `base URL "1http://x/v1" does not parse as a URL: first path segment in URL cannot contain colon`},
		{"space in the host", func(c *rollout.OpenAIConfig) { c.BaseURL = "http://exa mple/v1" }, `base URL "http://exa mple/v1" does not parse as a URL: invalid character " " in host name`},
		{"query", func(c *rollout.OpenAIConfig) { c.BaseURL = "http://x/v1?key=k" }, "without a query or fragment"},
		// "#" alone: POST BASE/completions would go to /v1, with a
		// fragment /completions.
		{"empty fragment", func(c *rollout.OpenAIConfig) { c.BaseURL = "http://x/v1#" }, `base URL "http://x/v1#": want the API root, without a query or fragment`},
		// A password would be printed in every error, retry warning and
		// eval report (meta.model), this refusal redacting it.
		{"credentials", func(c *rollout.OpenAIConfig) { c.BaseURL = "http://me:s3cret@x/v1" }, "base URL http://me:xxxxx@x/v1 names a user (and password): give the API key with --api-key-env instead"},
		{"user alone", func(c *rollout.OpenAIConfig) { c.BaseURL = "http://me@x/v1" }, "base URL http://me@x/v1 names a user"},
		{"negative timeout", func(c *rollout.OpenAIConfig) { c.Timeout = -time.Second }, "timeout -1s: want > 0"},
		// Go refuses such a header before sending the request, which
		// would be retried as a server not reachable.
		{"API key with a line ending", func(c *rollout.OpenAIConfig) { c.APIKey = "s3cret\r\n" }, "rollout: engine: the API key holds a carriage return (byte 7 of 8), which an HTTP header cannot carry (a line ending read with it?)"},
		{"API key with a control character", func(c *rollout.OpenAIConfig) { c.APIKey = "a\x00b" }, "rollout: engine: the API key holds the control character 0x00 (byte 2 of 3), which an HTTP header cannot carry"},
		{"API key with a tab and a space", func(c *rollout.OpenAIConfig) { c.APIKey = "a\tb c" }, ""},
		{"negative vocabulary", func(c *rollout.OpenAIConfig) { c.Vocab = -1 }, "vocabulary size -1"},
		{"no max tokens", func(c *rollout.OpenAIConfig) { c.Sampling.MaxNewTokens = 0 }, "max new tokens 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := engineConfig("http://127.0.0.1:1")
			tc.edit(&cfg)
			_, err := rollout.NewOpenAI(cfg)
			if tc.want == "" {
				require.NoError(t, err)
			} else {
				require.ErrorContains(t, err, tc.want)
			}
		})
	}
}

// TestOpenAIPolicyVocab: an engine samples from every logit, so a
// completion may hold one of the model's padding ids, past the
// tokenizer's (PolicyVocab, 40 here, of 49 logits), which the policy
// gives probability 0: the completion is cut before it (finish padding,
// not length: no token limit was reached, though the engine answered
// "length" for the second; its engine log-probabilities with it), with
// one warning for all; an id past the logits is still refused.
func TestOpenAIPolicyVocab(t *testing.T) {
	answers := map[int32]string{
		1: `{"choices":[{"text":"","token_ids":[5,44,7,2],"finish_reason":"stop","logprobs":{"token_logprobs":[-0.5,-20,-1,-0.1]}}]}`,
		2: `{"choices":[{"text":"","token_ids":[40],"finish_reason":"length"}]}`,
		3: `{"choices":[{"text":"","token_ids":[5,39,2],"finish_reason":"stop"}]}`,
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/models" {
			_, _ = w.Write([]byte(`{"data":[{"id":"served"}]}`))
			return
		}
		var req struct {
			Prompt []int32 `json:"prompt"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Prompt) == 0 {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		_, _ = w.Write([]byte(answers[req.Prompt[0]]))
	}))
	defer srv.Close()
	cfg := engineConfig(srv.URL)
	var warn bytes.Buffer
	cfg.Concurrency, cfg.Vocab, cfg.PolicyVocab, cfg.Warn = 1, 49, 40, &warn
	eng, err := rollout.NewOpenAI(cfg)
	require.NoError(t, err)
	out, _, err := eng.Generate(context.Background(), []rollout.Request{{Prompt: []int32{1}}, {Prompt: []int32{2}}, {Prompt: []int32{3}}}, nil)
	require.NoError(t, err)
	require.Equal(t, []int32{5}, out[0].Tokens)
	require.Equal(t, rollout.FinishPadding, out[0].Finish)
	require.Equal(t, []float32{-0.5}, out[0].EngineLogProbs)
	require.Empty(t, out[1].Tokens)
	require.Equal(t, rollout.FinishPadding, out[1].Finish)
	require.Equal(t, []int32{5, 39, 2}, out[2].Tokens, "the tokenizer's last id is the policy's")
	require.Equal(t, rollout.FinishStop, out[2].Finish)
	host := strings.TrimPrefix(srv.URL, "http://")
	require.Equal(t, "spiral: warning: http://"+host+"/v1/completions sampled token id 44, past the tokenizer's 40 ids (a padding logit of the model, which spiral's policy, the softmax over the tokenizer's ids, gives probability 0): its completion is cut before it, as at the token limit (later ones are cut without a word)\n", warn.String())

	// Past the logits it is the engine serving another model: refused.
	answers[1] = `{"choices":[{"text":"","token_ids":[5,49],"finish_reason":"stop"}]}`
	_, _, err = eng.Generate(context.Background(), []rollout.Request{{Prompt: []int32{1}}}, nil)
	require.ErrorContains(t, err, "answered token id 49 (completion token 1 of 2), outside the model's vocabulary of 49 ids [0, 49)")

	// A policy vocabulary past the model's is a configuration error.
	cfg.PolicyVocab = 50
	_, err = rollout.NewOpenAI(cfg)
	require.ErrorContains(t, err, "policy vocabulary 50: want 0 (none) to the vocabulary size 49")
}

// TestOpenAIPolicyVocabLogProbs: the engine's log-probability of a
// padding id it sampled, one no probability has in float32 (-1e39,
// -Inf there), took away the log-probabilities of the tokens kept before
// it and warned of them, although the cut leaves that token out.
func TestOpenAIPolicyVocabLogProbs(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/models" {
			_, _ = w.Write([]byte(`{"data":[{"id":"served"}]}`))
			return
		}
		_, _ = w.Write([]byte(`{"choices":[{"text":"","token_ids":[5,44,7],"finish_reason":"length","logprobs":{"token_logprobs":[-0.5,-1e39,-1]}}]}`))
	}))
	defer srv.Close()
	cfg := engineConfig(srv.URL)
	var warn bytes.Buffer
	cfg.Concurrency, cfg.Vocab, cfg.PolicyVocab, cfg.Warn = 1, 49, 40, &warn
	eng, err := rollout.NewOpenAI(cfg)
	require.NoError(t, err)
	out, _, err := eng.Generate(context.Background(), []rollout.Request{{Prompt: []int32{1}}}, nil)
	require.NoError(t, err)
	require.Equal(t, []int32{5}, out[0].Tokens)
	require.Equal(t, []float32{-0.5}, out[0].EngineLogProbs)
	require.NotContains(t, warn.String(), "keep no engine log-probabilities")
	require.Contains(t, warn.String(), "sampled token id 44, past the tokenizer's 40 ids")
}

// TestOpenAILengthEndingInStop: vLLM answers finish_reason "length" for
// a completion whose last token, the last max_tokens allows, is a stop
// id (its check_stop tests the length first), where the local sampler,
// which tests the stop id first, stopped: such a completion ended at
// the model's end of turn and counts as stopped, as it would locally
// (not as a trace cut at --max-new-tokens, graded and counted as cut).
// The limit is max_tokens, within what the model's context leaves.
func TestOpenAILengthEndingInStop(t *testing.T) {
	for _, tc := range []struct {
		name    string
		tokens  []int32
		context int // the model's context: 0 unknown
		noIDs   bool
		want    rollout.FinishReason
	}{
		{name: "stop id at the limit", tokens: []int32{5, 5, 5, 5, 5, 5, 5, 2}, want: rollout.FinishStop},
		{name: "no stop id at the limit", tokens: []int32{5, 5, 5, 5, 5, 5, 5, 5}, want: rollout.FinishLength},
		{name: "stop id at the context's end", tokens: []int32{5, 2}, context: 3, want: rollout.FinishStop},
		// Short of the limit, the engine's context is not the model's:
		// its reason is taken as it is.
		{name: "stop id short of the limit", tokens: []int32{5, 2}, want: rollout.FinishLength},
		{name: "text ending in the stop token", tokens: []int32{5, 5, 5, 5, 5, 5, 5, 2}, noIDs: true, want: rollout.FinishStop},
		{name: "text cut", tokens: []int32{5, 5, 5, 5, 5, 5, 5, 5}, noIDs: true, want: rollout.FinishLength},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := newFake()
			fake.finish, fake.noIDs = "length", tc.noIDs
			fake.tokensOf = func([]int32, int64) []int32 { return tc.tokens }
			srv := httptest.NewServer(fake)
			defer srv.Close()
			cfg := engineConfig(srv.URL)
			cfg.Sampling.ContextLength = tc.context
			cfg.Tokenize = func(s string) ([]int32, error) {
				ids := make([]int32, len(s))
				for i := range s {
					ids[i] = int32(s[i] - 'a')
				}
				return ids, nil
			}
			eng, err := rollout.NewOpenAI(cfg)
			require.NoError(t, err)
			out, _, err := eng.Generate(context.Background(), []rollout.Request{{Prompt: []int32{3}, Seed: 1}}, nil)
			require.NoError(t, err)
			require.Equal(t, tc.tokens, out[0].Tokens)
			require.Equal(t, tc.want, out[0].Finish)
		})
	}
}

// TestOpenAIUnauthorized: a server started with an API key (vLLM's
// --api-key) refuses a request without it, or with another, with a 401
// whose body is {"error": "Unauthorized"}: the message is the server's,
// not its JSON, and says what to do with --api-key-env.
func TestOpenAIUnauthorized(t *testing.T) {
	for _, tc := range []struct {
		name, key, body string
		status          int
		want            string
	}{
		{name: "no key", body: `{"error":"Unauthorized"}`, status: 401,
			want: "/v1/models: HTTP 401: Unauthorized (no API key was sent: give the environment variable that holds it with --api-key-env)"},
		{name: "another key", key: "k", body: `{"error":"Unauthorized"}`, status: 401,
			want: "/v1/models: HTTP 401: Unauthorized (the server refused the API key of --api-key-env)"},
		{name: "forbidden", key: "k", body: `{"error":{"message":"key not allowed here"}}`, status: 403,
			want: "/v1/models: HTTP 403: key not allowed here (the server refused the API key of --api-key-env)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(tc.status)
				_, _ = w.Write([]byte(tc.body))
			}))
			defer srv.Close()
			cfg := engineConfig(srv.URL)
			cfg.APIKey = tc.key
			eng, err := rollout.NewOpenAI(cfg)
			require.NoError(t, err)
			err = checkModel(eng)
			require.EqualError(t, err, "rollout: engine: "+srv.URL+tc.want)
		})
	}
}

// TestOpenAILongErrorMessage: a server's error message in JSON (vLLM's
// {"object": "error", "message": ...} holding an exception's traceback)
// is summed up as a long body is, on one line and cut at 300 bytes, in
// the error and in every retry line, whether answered with a 5xx or a
// 200.
func TestOpenAILongErrorMessage(t *testing.T) {
	long := strings.Repeat("Traceback line\n", 1000)
	body, err := json.Marshal(map[string]string{"object": "error", "message": long})
	require.NoError(t, err)
	for _, tc := range []struct {
		status int
		want   string
	}{
		{500, "/v1/completions: HTTP 500: " + strings.Repeat("Traceback line ", 20)[:300] + "... (15000 bytes) (after 2 attempts)"},
		{200, "/v1/completions: HTTP 200, but the answer is an error: " + strings.Repeat("Traceback line ", 20)[:300] + "... (15000 bytes)"},
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(tc.status)
			_, _ = w.Write(body)
		}))
		cfg := engineConfig(srv.URL)
		var warn bytes.Buffer
		cfg.Retries, cfg.Warn, cfg.RetryNotice = 1, &warn, -1
		eng, err := rollout.NewOpenAI(cfg)
		require.NoError(t, err)
		_, _, err = eng.Generate(context.Background(), []rollout.Request{{Prompt: []int32{1}}}, nil)
		srv.Close()
		require.EqualError(t, err, "request 0: rollout: engine: "+srv.URL+tc.want)
		require.Less(t, warn.Len(), 500, warn.String())
	}
}

// TestOpenAICheckModelWaitsForServer: a server still loading refuses
// connections; the model check, the first request, waits for it up to
// Timeout (users start the engine and spiral at once), announcing the
// wait, instead of giving up after Retries quick retries. One that never
// comes up fails at Timeout, naming the last failure.
func TestOpenAICheckModelWaitsForServer(t *testing.T) {
	// An address nothing listens on yet.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	url := "http://" + addr

	t.Run("comes up", func(t *testing.T) {
		cfg := engineConfig(url)
		var warn bytes.Buffer
		cfg.Warn, cfg.Backoff, cfg.RetryNotice, cfg.Timeout = &warn, 10*time.Millisecond, -1, 10*time.Second
		eng, err := rollout.NewOpenAI(cfg)
		require.NoError(t, err)
		up := make(chan *httptest.Server, 1)
		go func() { // up after 600 ms: past 4 retries of 10..80 ms
			time.Sleep(600 * time.Millisecond)
			l, err := net.Listen("tcp", addr)
			if err != nil {
				up <- nil
				return
			}
			srv := httptest.NewUnstartedServer(newFake())
			_ = srv.Listener.Close()
			srv.Listener = l
			srv.Start()
			up <- srv
		}()
		err = checkModel(eng)
		srv := <-up
		require.NotNil(t, srv, "listen again on %s", addr)
		defer srv.Close()
		require.NoError(t, err)
		lines := warn.String()
		require.Contains(t, lines, "spiral: warning: rollout: engine: "+url+"/v1/models is not reachable: ")
		require.Contains(t, lines, "retry 5 in ")
		require.Contains(t, lines, " (waiting for the server to start, up to the 10s --engine-timeout)\n")
	})

	t.Run("never comes up", func(t *testing.T) {
		cfg := engineConfig(url)
		cfg.Backoff, cfg.Timeout = 10*time.Millisecond, 500*time.Millisecond
		eng, err := rollout.NewOpenAI(cfg)
		require.NoError(t, err)
		start := time.Now()
		err = checkModel(eng)
		require.Less(t, time.Since(start), time.Second)
		require.ErrorContains(t, err, "rollout: engine: "+url+"/v1/models: no answer within 500ms (--engine-timeout), ")
		require.ErrorContains(t, err, "attempts; the last failure before it: rollout: engine: "+url+"/v1/models is not reachable: ")
	})
}

// TestOpenAICheckModelTLSFailure: an https --base-url whose server's
// certificate does not verify (self-signed), or that is an http server,
// would fail every attempt alike: the model check fails at once, naming
// the cause, where it was retried as a server still starting up to
// Timeout (10 minutes by default), each retry saying it was "not
// reachable".
func TestOpenAICheckModelTLSFailure(t *testing.T) {
	tlsSrv := httptest.NewTLSServer(newFake())
	defer tlsSrv.Close()
	plain := httptest.NewServer(newFake())
	defer plain.Close()
	for _, tc := range []struct {
		name, url string
		want      []string
	}{
		{"self-signed certificate", tlsSrv.URL, []string{"tls: failed to verify certificate: x509: certificate signed by unknown authority",
			"(the server's TLS certificate does not verify; on Linux, SSL_CERT_FILE or SSL_CERT_DIR name the certificates to trust)"}},
		{"an http server", "https://" + strings.TrimPrefix(plain.URL, "http://"), []string{"http: server gave HTTP response to HTTPS client (the server does not speak TLS: an http:// --base-url?)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := engineConfig(tc.url)
			var warn bytes.Buffer
			cfg.Warn, cfg.Backoff, cfg.Timeout = &warn, 10*time.Millisecond, 3*time.Second
			eng, err := rollout.NewOpenAI(cfg)
			require.NoError(t, err)
			start := time.Now()
			err = checkModel(eng)
			require.Less(t, time.Since(start), time.Second, "not retried")
			for _, w := range tc.want {
				require.ErrorContains(t, err, w)
			}
			require.NotContains(t, err.Error(), "no answer within")
			require.Empty(t, warn.String(), "no retry announced")
		})
	}
}

// checkModel is eng's model check, its context length left out.
func checkModel(eng *rollout.OpenAI) error {
	_, _, err := eng.CheckModel(context.Background())
	return err
}

// TestOpenAIServedContext: the model check returns the context the
// server serves the model with (vLLM's and SGLang's max_model_len in
// /v1/models, which --max-model-len sets below config.json's), 0 when
// the list does not say (llama.cpp's), and the positions a request's
// prompt and max_tokens may fill: the same, but on SGLang (owned_by
// "sglang"), which refuses a request whose prompt and max_tokens reach
// its context (vLLM one that passes it), one less.
func TestOpenAIServedContext(t *testing.T) {
	for _, tc := range []struct {
		name, ownedBy  string
		listed, usable int
	}{
		{"vLLM --max-model-len 4096", "vllm", 4096, 4096},
		{"SGLang --context-length 4096", "sglang", 4096, 4095},
		{"another server", "", 4096, 4096},
		{"not said", "", 0, 0},
		{"SGLang, not said", "sglang", 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := newFake()
			fake.models, fake.maxModelLen, fake.ownedBy = []string{"other", "served"}, tc.listed, tc.ownedBy
			srv := httptest.NewServer(fake)
			defer srv.Close()
			eng, err := rollout.NewOpenAI(engineConfig(srv.URL))
			require.NoError(t, err)
			usable, listed, err := eng.CheckModel(context.Background())
			require.NoError(t, err)
			require.Equal(t, tc.listed, listed)
			require.Equal(t, tc.usable, usable)
		})
	}
}

// TestOpenAIGenerateFailureCounts: a request that fails (after its
// retries) fails the whole call, whose other completions are not
// returned: the error says how many had been answered, which a long
// evaluation loses with it, rather than only which request failed.
func TestOpenAIGenerateFailureCounts(t *testing.T) {
	for _, tc := range []struct {
		name string
		fail int // the call (0-based) answered with a 400
		want string
	}{
		{"after four answers", 4, "request 4: rollout: engine: URL/v1/completions: HTTP 400: engine says no (4 of the call's 8 requests had been answered; a failed request fails the whole call, and their completions are not kept)"},
		{"the first", 0, "request 0: rollout: engine: URL/v1/completions: HTTP 400: engine says no"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := newFake()
			fake.fail = func(n int) int {
				if n == tc.fail {
					return http.StatusBadRequest
				}
				return 0
			}
			srv := httptest.NewServer(fake)
			defer srv.Close()
			cfg := engineConfig(srv.URL)
			cfg.Concurrency = 1
			eng, err := rollout.NewOpenAI(cfg)
			require.NoError(t, err)
			reqs := make([]rollout.Request, 8)
			for i := range reqs {
				reqs[i] = rollout.Request{Prompt: []int32{1, int32(i)}, Seed: uint64(i)}
			}
			out, _, err := eng.Generate(context.Background(), reqs, nil)
			require.Nil(t, out)
			require.EqualError(t, err, strings.ReplaceAll(tc.want, "URL", srv.URL))
		})
	}
}

// TestOpenAICheckModelSyncedVersion: with SyncDir, a server listing a
// version synced into it (SGLang names its model after the directory it
// loaded last) serves Model, noted; another path does not.
func TestOpenAICheckModelSyncedVersion(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		id, want, note string
	}{
		{id: dir + "/spiral-step-000003", note: "spiral: note: URL/v1 serves " + dir + "/spiral-step-000003, a version synced into --sync-dir (SGLang names its model after the weights it loaded last), not \"served\": this run loads its own first\n"},
		{id: dir + "/spiral-step-", want: `does not serve "served" (it serves ` + dir + `/spiral-step-)`},
		{id: dir + "/model", want: `does not serve "served" (it serves ` + dir + `/model)`},
		{id: "/elsewhere/spiral-step-000003", want: `does not serve "served" (it serves /elsewhere/spiral-step-000003)`},
	} {
		fake := newFake()
		fake.models = []string{tc.id}
		srv := httptest.NewServer(fake)
		cfg := engineConfig(srv.URL)
		var warn bytes.Buffer
		cfg.SyncDir, cfg.Warn = dir, &warn
		eng, err := rollout.NewOpenAI(cfg)
		require.NoError(t, err)
		err = checkModel(eng)
		srv.Close()
		if tc.want != "" {
			require.ErrorContains(t, err, tc.want, tc.id)
		} else {
			require.NoError(t, err, tc.id)
		}
		require.Equal(t, strings.ReplaceAll(tc.note, "URL", srv.URL), warn.String(), tc.id)
	}
}

// TestOpenAIOlderSGLangContext: an SGLang that lists no max_model_len
// (its /v1/models of late 2024 named the model alone) was taken to serve
// config.json's context, to the last position, so that a prompt and
// max_tokens filling it exactly failed the batch with a 400 (SGLang
// refuses prompt + max_new_tokens >= its context_len). Its context is
// its --context-length, which /get_server_info, or /get_server_args
// before it, reports as context_length (null when not given: the
// model's own, ModelContext); on SGLang one less is usable.
func TestOpenAIOlderSGLangContext(t *testing.T) {
	for _, tc := range []struct {
		name             string
		card             string // the model's card in /v1/models
		info, args       string // /get_server_info's and /get_server_args's answers ("": 404)
		modelContext     int
		usable, listed   int
		asked            []string // the server-info paths asked, in order
		wantErr, warning string
	}{
		{name: "--context-length in /get_server_info", card: `{"id":"served","owned_by":"sglang","max_model_len":null}`,
			info: `{"context_length":2048,"max_total_num_tokens":90000,"version":"0.4.0"}`, modelContext: 4096, usable: 2047, listed: 2048, asked: []string{"/get_server_info"},
			warning: "spiral: note: http://HOST/v1/models lists no max_model_len for \"served\" (an older SGLang): its context is 2048, the context_length of http://HOST/get_server_info (--context-length)\n"},
		{name: "no --context-length: the model's", card: `{"id":"served","owned_by":"sglang"}`,
			info: `{"context_length":null}`, modelContext: 4096, usable: 4095, listed: 4096, asked: []string{"/get_server_info"},
			warning: "spiral: note: http://HOST/v1/models lists no max_model_len for \"served\" (an older SGLang): its context is 4096, the model's (http://HOST/get_server_info says no --context-length)\n"},
		{name: "before /get_server_info", card: `{"id":"served","owned_by":"sglang"}`,
			args: `{"model_path":"m","context_length":1024}`, modelContext: 4096, usable: 1023, listed: 1024, asked: []string{"/get_server_info", "/get_server_args"},
			warning: "spiral: note: http://HOST/v1/models lists no max_model_len for \"served\" (an older SGLang): its context is 1024, the context_length of http://HOST/get_server_args (--context-length)\n"},
		{name: "neither endpoint", card: `{"id":"served","owned_by":"sglang"}`, modelContext: 4096, usable: 4095, listed: 4096, asked: []string{"/get_server_info", "/get_server_args"},
			warning: "spiral: note: http://HOST/v1/models lists no max_model_len for \"served\" (an older SGLang): its context is 4096, taken to be the model's (neither http://HOST/get_server_info nor /get_server_args answers)\n"},
		{name: "server info fails", card: `{"id":"served","owned_by":"sglang"}`, info: `{"context_length":"long"}`, modelContext: 4096, asked: []string{"/get_server_info"},
			wantErr: "rollout: engine: http://HOST/v1/models lists no max_model_len for \"served\" (an older SGLang), and its context could not be read: rollout: engine: http://HOST/get_server_info: the answer is not the expected JSON: context_length is string, want an integer"},
		{name: "the model's context not known", card: `{"id":"served","owned_by":"sglang"}`, info: `{"context_length":null}`, asked: []string{"/get_server_info"}},
		{name: "listed: not asked", card: `{"id":"served","owned_by":"sglang","max_model_len":4096}`, info: `{"context_length":2048}`, modelContext: 4096, usable: 4095, listed: 4096},
		{name: "vLLM: not asked", card: `{"id":"served","owned_by":"vllm"}`, info: `{"context_length":2048}`, modelContext: 4096},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			var asked []string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				body := ""
				switch r.URL.Path {
				case "/v1/models":
					body = `{"object":"list","data":[` + tc.card + `]}`
				case "/get_server_info":
					body = tc.info
				case "/get_server_args":
					body = tc.args
				}
				if r.URL.Path != "/v1/models" {
					mu.Lock()
					asked = append(asked, r.URL.Path)
					mu.Unlock()
				}
				if body == "" {
					http.Error(w, `{"detail":"Not Found"}`, http.StatusNotFound)
					return
				}
				_, _ = w.Write([]byte(body))
			}))
			defer srv.Close()
			cfg := engineConfig(srv.URL)
			var warn bytes.Buffer
			cfg.ModelContext, cfg.Warn = tc.modelContext, &warn
			eng, err := rollout.NewOpenAI(cfg)
			require.NoError(t, err)
			usable, listed, err := eng.CheckModel(context.Background())
			host := strings.TrimPrefix(srv.URL, "http://")
			if tc.wantErr != "" {
				require.Error(t, err)
				require.Contains(t, strings.ReplaceAll(err.Error(), host, "HOST"), tc.wantErr)
			} else {
				require.NoError(t, err)
				require.Equal(t, tc.listed, listed)
				require.Equal(t, tc.usable, usable)
			}
			require.Equal(t, tc.asked, asked)
			require.Equal(t, tc.warning, strings.ReplaceAll(warn.String(), host, "HOST"))
		})
	}
}
