package tests

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/spiral-rl/spiral/rollout/report"
)

// seededEngine is an OpenAI-compatible server whose completion of a
// request depends on its seed alone, as a seeded engine's does: some 85%
// of its max_tokens of sums, then a boxed answer (seed % 4), cut at the
// token limit where seed % 5 is 0. The completions are long so that what an
// evaluation saves of them (sequential's and rsa's generated ids) takes
// a while to write. served counts the completions.
type seededEngine struct{ served atomic.Int32 }

func (e *seededEngine) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/v1/models" {
		_, _ = w.Write([]byte(`{"data":[{"id":"served"}]}`))
		return
	}
	var body struct {
		Seed      int64 `json:"seed"`
		MaxTokens int   `json:"max_tokens"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		http.Error(w, `{"message":"bad request"}`, http.StatusBadRequest)
		return
	}
	e.served.Add(1)
	finish := "stop"
	if body.Seed%5 == 0 {
		finish = "length"
	}
	text := strings.Repeat(strconv.Itoa(int(body.Seed%7))+"+1=2 ", body.MaxTokens*7/50) + fmt.Sprintf("so the answer is \\boxed{%d}", body.Seed%4)
	_ = json.NewEncoder(w).Encode(map[string]any{"choices": []any{map[string]any{"text": text, "finish_reason": finish}}})
}

// TestEvalResumeKilledAtAnyPoint: an evaluation of each mode that saves
// what it finishes (passk and sequential their problems, appended to
// MODE.problems.jsonl.partial; rsa its state, rsa.steps.json.partial,
// written whole after each step), killed (SIGKILL) at points within its
// first save, then resumed and killed again within the resumed one's
// first, leaves a file that reads (a problem line cut short is left
// out), or none; the same command run again resumes it and writes the
// report an uninterrupted evaluation writes (its start time aside), and
// removes the file. Generation runs on a serving engine
// whose completions depend on their seeds alone, so that the report is
// the same bit for bit however the work was split.
func TestEvalResumeKilledAtAnyPoint(t *testing.T) {
	requireRuntime(t)
	eng := &seededEngine{}
	hs := httptest.NewServer(eng)
	defer hs.Close()
	dir := t.TempDir()
	for _, tc := range []struct {
		mode    string
		args    []string
		partial string
		// grown is how much the file must have grown past its size at
		// the start before the kill's delay runs: sequential's records
		// are appended in several writes of 64 KiB, some 500 KiB a
		// call, which a kill in their midst cuts in a line.
		grown int64
	}{
		{"passk", []string{"--samples", "2", "--max-new-tokens", "1024"}, "passk" + report.ProblemsSuffix, 0},
		{"sequential", []string{"--samples", "2", "--max-new-tokens", "3000"}, "sequential" + report.ProblemsSuffix, 32 << 10},
		// Candidates of some 870 tokens, two to a prompt.
		{"rsa", []string{"--population", "2", "--subset", "2", "--rsa-steps", "3", "--max-new-tokens", "1024"}, "rsa" + report.StepsSuffix, 0},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			eval := func(out string) []string {
				return append([]string{"eval", "--mode", tc.mode, "--limit", "48", "--quiet", "--out", out,
					"--engine", "openai", "--base-url", hs.URL + "/v1", "--served-model", "served", "--engine-concurrency", "1"}, tc.args...)
			}
			// The report less its start, which a resumed evaluation
			// takes from the interrupted one.
			reportOf := func(out string) map[string]any {
				b, err := os.ReadFile(filepath.Join(out, tc.mode+".json"))
				require.NoError(t, err)
				var rep map[string]any
				require.NoError(t, json.Unmarshal(b, &rep))
				delete(rep["meta"].(map[string]any), "timestamp")
				return rep
			}
			whole := filepath.Join(dir, tc.mode+"-whole")
			r := spiral(t, nil, eval(whole)...)
			require.Equal(t, 0, r.code, r.stderr)
			want := reportOf(whole)

			out := filepath.Join(dir, tc.mode)
			partial := filepath.Join(out, tc.partial)
			kills := 0
			// The files of the partial's name in --out (its atomic
			// write's temporary file too), by size and modification.
			files := func() map[string]string {
				m := map[string]string{}
				names, _ := filepath.Glob(filepath.Join(out, "*"+tc.partial+"*"))
				for _, n := range names {
					if st, err := os.Stat(n); err == nil {
						m[n] = fmt.Sprint(st.Size(), st.ModTime().UnixNano())
					}
				}
				return m
			}
			// killed kills the evaluation in --out as its first save
			// (after its first call) is being written, delay after the
			// files first change (or the file has grown), and checks
			// that what it left reads.
			killed := func(delay time.Duration) bool {
				eng.served.Store(0)
				var before map[string]string
				var size int64 // the file's at the start
				if st, err := os.Stat(partial); err == nil {
					size = st.Size()
				}
				ready := func() bool {
					if eng.served.Load() == 0 {
						return false
					}
					now := files()
					if before == nil {
						before = now
						return false
					}
					if tc.grown > 0 {
						st, err := os.Stat(partial)
						return err == nil && st.Size() > size+tc.grown
					}
					return !maps.Equal(now, before)
				}
				stderr, killed := killAfter(t, ready, delay, time.Minute, eval(out)...)
				if _, err := os.Stat(partial); err == nil {
					if tc.mode == "rsa" {
						var s *report.SavedRSA
						s, err = report.ReadRSA(partial)
						if err == nil {
							t.Logf("killed %v in: %d steps", delay, len(s.Steps))
						}
					} else {
						var s *report.SavedProblems
						s, err = report.ReadProblems(partial)
						if err == nil {
							t.Logf("killed %v in: %d problems, cut %v", delay, len(s.Problems), s.Cut)
						}
					}
					require.NoError(t, err, "killed %v in: %s", delay, stderr)
				}
				return killed
			}
			// From the start of the save's temporary file or the file's
			// first change to past its fsyncs and the records' writes:
			// closer at first, where a write of the file is.
			for i := range 16 {
				delay := time.Duration(i*i) * 15 * time.Microsecond
				require.NoError(t, os.RemoveAll(out))
				// Killed twice: at its first save, then resumed and
				// killed at the resumed evaluation's first save (an
				// append to what the first kill left, an RSA state
				// rewritten).
				for range 2 {
					if killed(delay) {
						kills++
					}
				}
				r := spiral(t, nil, eval(out)...)
				require.Equal(t, 0, r.code, "killed %v in: %s", delay, r.stderr)
				require.Equal(t, want, reportOf(out), "killed %v in", delay)
				require.NoFileExists(t, partial)
			}
			require.NotZero(t, kills, "no evaluation was killed")
		})
	}
}
