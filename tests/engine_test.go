package tests

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/spiral-rl/spiral/model"
	"github.com/spiral-rl/spiral/model/embedded"
	"github.com/spiral-rl/spiral/model/modeltest"
	"github.com/spiral-rl/spiral/rollout"
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
}

func (s *samplerServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/v1/models" {
		_ = json.NewEncoder(w).Encode(map[string]any{"data": []map[string]string{{"id": "embedded"}}})
		return
	}
	var body struct {
		Model       string  `json:"model"`
		Prompt      []int32 `json:"prompt"`
		MaxTokens   int     `json:"max_tokens"`
		Temperature float64 `json:"temperature"`
		Seed        uint64  `json:"seed"`
		StopIDs     []int32 `json:"stop_token_ids"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil || body.Model != "embedded" {
		http.Error(w, `{"message":"bad request"}`, http.StatusBadRequest)
		return
	}
	cfg := rollout.DefaultSamplerConfig()
	cfg.Temperature, cfg.MaxNewTokens, cfg.StopIDs, cfg.BatchSize = body.Temperature, body.MaxTokens, body.StopIDs, 1
	s.mu.Lock()
	defer s.mu.Unlock()
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
			_ = json.NewEncoder(w).Encode(map[string]any{"choices": []any{map[string]any{"text": "", "token_ids": out[0].Tokens, "finish_reason": finish}}})
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
	pol, err := model.OpenPolicy(rt, filepath.Join(dir, "model.onnx"), t.TempDir(), model.PolicyOptions{})
	require.NoError(t, err)
	defer pol.Close()
	srv := &samplerServer{lm: pol.LM}
	hs := httptest.NewServer(srv)
	defer hs.Close()

	common := []string{"--limit", "4", "--temperature", "0", "--samples", "2", "--population", "2", "--subset", "2", "--rsa-steps", "1", "--quiet"}
	for _, mode := range []string{"passk", "sequential", "rsa"} {
		t.Run(mode, func(t *testing.T) {
			local, remote := filepath.Join(t.TempDir(), "local"), filepath.Join(t.TempDir(), "remote")
			r := spiral(t, nil, append([]string{"eval", "--mode", mode, "--out", local}, common...)...)
			require.Equal(t, 0, r.code, r.stderr)
			before := srv.served()
			r = spiral(t, nil, append([]string{"eval", "--mode", mode, "--out", remote, "--engine", "openai", "--base-url", hs.URL + "/v1",
				"--served-model", "embedded", "--engine-concurrency", "3"}, common...)...)
			require.Equal(t, 0, r.code, r.stderr)
			require.Greater(t, srv.served(), before, "the engine served the requests")
			want := figures(t, filepath.Join(local, mode+".json"))
			t.Logf("%s: %v", mode, want)
			require.Equal(t, want, figures(t, filepath.Join(remote, mode+".json")))
		})
	}

	r := spiral(t, nil, "eval", "--engine", "openai", "--base-url", hs.URL+"/v1", "--served-model", "other", "--limit", "1", "--quiet")
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, `does not serve "other" (it serves embedded)`)
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
