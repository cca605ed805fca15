package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/spiral-rl/spiral/rl"
)

// TestRunDirOfTheOtherCommand: sft into the --out of a train run that
// saved no checkpoint (killed before its first: metrics.jsonl, eval.jsonl
// and training.png, no checkpoints/) is refused, as one with the train
// run's checkpoints is, naming --fresh and another --out: it trained
// beside the train run's logs, which spiral tensorboard then converted
// rather than sft.jsonl. train into the --out of an sft run interrupted
// before its first checkpoint (sft.jsonl.partial alone) is refused
// likewise: it trained beside that log. Neither refused rerun writes
// anything there; with --fresh each sets the other's files aside in
// previous-* and runs.
func TestRunDirOfTheOtherCommand(t *testing.T) {
	t.Setenv("SPIRAL_CACHE_DIR", t.TempDir())
	sft := []string{"sft", "--steps", "1", "--batch", "2", "--eval-every", "0", "--eval-problems", "2", "--threads", "1", "--quiet"}
	train := []string{"train", "--steps", "1", "--problems", "1", "--n1", "3", "--k", "2", "--n", "2", "--n2", "2",
		"--eval-every", "0", "--final-rsa-steps", "0", "--max-new-tokens", "4", "--threads", "1", "--quiet"}
	for _, tc := range []struct {
		name  string
		args  []string
		files []string // the other run's, in --out
		want  string
	}{
		{"sft into a train run without checkpoints", sft, []string{rl.MetricsFile, rl.EvalFile, rl.TrainingPlot},
			" holds the logs of a spiral train run (metrics.jsonl), not of sft: use another --out, or --fresh (which moves them aside into previous-*)"},
		{"sft into a train run's eval.jsonl", sft, []string{rl.EvalFile},
			" holds the logs of a spiral train run (eval.jsonl), not of sft: use another --out, or --fresh (which moves them aside into previous-*)"},
		{"train into an interrupted sft run without checkpoints", train, []string{rl.SFTLogFile + rl.PartialSuffix},
			" holds the log of an interrupted spiral sft run (sft.jsonl.partial), not of train: use another --out, or --fresh (which moves it aside into previous-*)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "run")
			require.NoError(t, os.MkdirAll(dir, 0o755))
			for _, f := range tc.files {
				require.NoError(t, os.WriteFile(filepath.Join(dir, f), []byte(`{"step":1}`+"\n"), 0o644))
			}
			before, err := os.ReadDir(dir)
			require.NoError(t, err)
			args := append(append([]string{}, tc.args...), "--out", dir)
			var stderr bytes.Buffer
			require.Equal(t, exitUsage, run(context.Background(), args, &cliEnv{stdout: io.Discard, stderr: &stderr}), stderr.String())
			require.Equal(t, "spiral "+tc.args[0]+": --out "+dir+tc.want+"\n", stderr.String())
			after, err := os.ReadDir(dir)
			require.NoError(t, err)
			require.Equal(t, before, after, "the refused run wrote nothing in --out")

			stderr.Reset()
			require.Zero(t, run(context.Background(), append(args, "--fresh"), &cliEnv{stdout: io.Discard, stderr: &stderr}), stderr.String())
			moved, err := filepath.Glob(filepath.Join(dir, "previous-*"))
			require.NoError(t, err)
			require.Len(t, moved, 1)
			for _, f := range tc.files {
				require.FileExists(t, filepath.Join(moved[0], f))
			}
		})
	}
}
