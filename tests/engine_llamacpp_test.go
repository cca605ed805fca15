package tests

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// startLlamaCpp exports the embedded model and serves it with llama.cpp's
// own OpenAI-compatible server (through xllamacpp), converted to GGUF by
// scripts/engine/llamacpp_server.py, and returns the API root. The server
// stops when the test ends. The Python environment is $SPIRAL_ENGINE_PYTHON (make test makes it
// from scripts/engine/requirements.txt); without it the test skips
// locally and fails in CI.
func startLlamaCpp(t *testing.T) string {
	t.Helper()
	py := requireEnv(t, "SPIRAL_ENGINE_PYTHON", "make test sets it")
	dir := t.TempDir()
	hf := filepath.Join(dir, "hf")
	r := spiral(t, nil, "export", "--format", "hf", "--out", hf)
	require.Equal(t, 0, r.code, r.stderr)

	script, err := filepath.Abs(filepath.Join("..", "scripts", "engine", "llamacpp_server.py"))
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	cmd := exec.CommandContext(ctx, py, script, "--hf", hf, "--gguf", filepath.Join(dir, "model.gguf"), "--name", "embedded", "--threads", "1")
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	logPath := filepath.Join(dir, "server.log")
	logFile, err := os.Create(logPath)
	require.NoError(t, err)
	cmd.Stderr = logFile
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = stdin.Close() // the script exits when its stdin closes
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		cancel()
		logFile.Close()
	})

	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		if sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		_, _ = io.Copy(io.Discard, stdout)
	}()
	select {
	case line, ok := <-lines:
		if !ok || !strings.HasPrefix(line, "listening http://127.0.0.1:") {
			log, _ := os.ReadFile(logPath)
			t.Fatalf("llama.cpp server did not start (first line %q); the end of its log:\n%s", line, log[max(0, len(log)-3000):])
		}
		return strings.TrimPrefix(line, "listening ") + "/v1"
	case <-time.After(2 * time.Minute):
		t.Fatal("llama.cpp server: no address within 2 minutes")
		return ""
	}
}

// TestEvalThroughLlamaCpp runs every eval mode through a third-party
// server, llama.cpp's, on the embedded model converted to GGUF: greedy,
// the figures must equal the local engine's (the same tokens, so the
// conversion and the engine client are exact); sampled, pass@1 must
// agree within sampling noise (llama.cpp's sampler is its own, seeded
// per request). Each local evaluation runs beside its remote twin, which
// mostly waits on the server's one thread.
func TestEvalThroughLlamaCpp(t *testing.T) {
	requireRuntime(t)
	url := startLlamaCpp(t)
	engine := []string{"--engine", "openai", "--base-url", url, "--served-model", "embedded", "--engine-concurrency", "4"}

	greedy := []string{"--limit", "32", "--temperature", "0", "--samples", "2", "--population", "2", "--subset", "2", "--rsa-steps", "1", "--quiet", "--traces"}
	for _, mode := range []string{"passk", "sequential", "rsa"} {
		t.Run("greedy-"+mode, func(t *testing.T) {
			local, remote := filepath.Join(t.TempDir(), "local"), filepath.Join(t.TempDir(), "remote")
			rs := runAtOnce(t, t.TempDir(), append([]string{"eval", "--mode", mode, "--out", local}, greedy...),
				append(append([]string{"eval", "--mode", mode, "--out", remote}, engine...), greedy...))
			for _, r := range rs {
				require.Equal(t, 0, r.code, r.stderr)
			}
			require.Contains(t, rs[1].stderr, "without token ids", "llama.cpp returns text; spiral must say it tokenizes locally")
			want, got := figures(t, filepath.Join(local, mode+".json")), figures(t, filepath.Join(remote, mode+".json"))
			t.Logf("%s: %v", mode, want)
			if mode == "rsa" {
				// Aggregation prompts can meet near-ties that the two
				// engines' float32 kernels break differently. Every
				// search trace must be equal, every aggregation trace
				// equal up to a near-tie within 1e-4 (greedyTies), and the
				// reports' generated-token counts must differ by exactly
				// what the diverging traces do (today none diverges).
				diff, diverged := greedyTies(t, local, remote)
				t.Logf("%d aggregation traces diverged at a near-tie", diverged)
				wantTok, gotTok := aggregationGenerated(t, want), aggregationGenerated(t, got)
				cum := 0
				for i := range wantTok {
					step := i/2 + 1
					d := diff[step]
					if i%2 == 1 { // cumulative
						cum += d
						d = cum
					}
					require.Equal(t, wantTok[i]-gotTok[i], float64(d), "generated tokens of RSA step %d (%s)", step, []string{"tokens", "cumulative"}[i%2])
				}
			}
			require.Equal(t, want, got)
			require.Regexp(t, `(accuracy|pass_at_k):0\.[0-9]*[1-9]`, fmt.Sprint(want), "some greedy answers are right, so equal figures say something")
		})
	}

	t.Run("sampled-passk", func(t *testing.T) {
		const problems, samples = 128, 8
		sampled := []string{"--mode", "passk", "--limit", fmt.Sprint(problems), "--samples", fmt.Sprint(samples), "--temperature", "1", "--seed", "3", "--quiet"}
		local, remote := filepath.Join(t.TempDir(), "local"), filepath.Join(t.TempDir(), "remote")
		for _, r := range runAtOnce(t, t.TempDir(), append([]string{"eval", "--out", local}, sampled...),
			append(append([]string{"eval", "--out", remote}, engine...), sampled...)) {
			require.Equal(t, 0, r.code, r.stderr)
		}
		a, b := passAt1(t, filepath.Join(local, "passk.json")), passAt1(t, filepath.Join(remote, "passk.json"))
		// Two estimates of one model's pass@1 from problems x samples
		// draws each. The embedded task's samples of one problem are
		// nearly independent (its pass@2 is within 0.02 of 1-(1-p)^2), so
		// the standard error of the difference is about that of 2 x 1,024
		// Bernoulli draws; allow 5 of them (a 20% design effect included).
		p := (a + b) / 2
		limit := 5 * math.Sqrt(2*p*(1-p)/(problems*samples))
		t.Logf("pass@1 local %.3f, llama.cpp %.3f (limit %.3f)", a, b, limit)
		require.InDelta(t, a, b, limit)
		require.Greater(t, b, 0.0, "llama.cpp's samples solve something")
	})
}

// passAt1 reads pass@1 from a passk report.
func passAt1(t *testing.T, path string) float64 {
	t.Helper()
	var rep struct {
		Points []struct {
			K    int     `json:"k"`
			Pass float64 `json:"pass_at_k"`
		} `json:"points"`
	}
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &rep))
	for _, p := range rep.Points {
		if p.K == 1 {
			return p.Pass
		}
	}
	t.Fatalf("%s: no pass@1", path)
	return 0
}

// aggregationGenerated removes the generated-token counts of the RSA
// steps after the first from report m (an rsa.json's figures) and returns
// them, "tokens" and "cumulative" for each step in turn.
func aggregationGenerated(t *testing.T, m map[string]any) []float64 {
	t.Helper()
	steps, ok := m["steps"].([]any)
	require.True(t, ok, "rsa.json without steps: %v", m)
	var out []float64
	for _, st := range steps[1:] {
		step := st.(map[string]any)
		for _, key := range []string{"tokens", "cumulative"} {
			counts := step[key].(map[string]any)
			out = append(out, counts["generated"].(float64))
			delete(counts, "generated")
		}
	}
	return out
}
