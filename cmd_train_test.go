package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestTrainRefusesEvalReport: a run into an --out holding an
// evaluation's rsa.json (eval --mode rsa --out there; a run's own comes
// with metrics.jsonl) is refused before anything is written, with or
// without --fresh: the run removed that report before its last step and
// wrote its final RSA report in its place, beside the evaluation's
// rsa.png. It goes on where the run does no final RSA, and in a run's
// own directory.
func TestTrainRefusesEvalReport(t *testing.T) {
	t.Setenv("SPIRAL_CACHE_DIR", t.TempDir())
	small := []string{"train", "--steps", "1", "--problems", "1", "--n1", "3", "--k", "2", "--n", "2", "--n2", "2",
		"--eval-problems", "1", "--eval-every", "0", "--quiet", "--threads", "1"}
	for _, tc := range []struct {
		name    string
		args    []string
		run     bool // a run's metrics.jsonl is there too
		refused bool
	}{
		{name: "an evaluation's report", refused: true},
		{name: "--fresh", args: []string{"--fresh"}, refused: true},
		{name: "no final RSA", args: []string{"--final-rsa-steps", "0"}},
		{name: "a run's own", run: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out")
			require.NoError(t, os.Mkdir(out, 0o755))
			report := []byte(`{"meta":{"mode":"rsa"}}` + "\n")
			require.NoError(t, os.WriteFile(filepath.Join(out, "rsa.json"), report, 0o644))
			if tc.run {
				require.NoError(t, os.WriteFile(filepath.Join(out, "metrics.jsonl"), nil, 0o644))
			}
			args := append(append(append([]string{}, small...), "--out", out, "--final-rsa-steps", "1"), tc.args...)
			var stderr bytes.Buffer
			code := run(context.Background(), args, &cliEnv{stdout: io.Discard, stderr: &stderr})
			if !tc.refused {
				require.Equal(t, 0, code, stderr.String())
				return
			}
			require.Equal(t, exitUsage, code, stderr.String())
			require.Contains(t, stderr.String(), "--out "+out+" holds rsa.json but no metrics.jsonl: an evaluation's report (spiral eval --mode rsa), not a training run's, which the run's final RSA evaluation would replace; give another --out (or --final-rsa-steps 0)\n")
			b, err := os.ReadFile(filepath.Join(out, "rsa.json"))
			require.NoError(t, err)
			require.Equal(t, report, b)
			entries, err := os.ReadDir(out)
			require.NoError(t, err)
			require.Len(t, entries, 1, "nothing new in --out")
		})
	}
}
