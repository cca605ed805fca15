package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/spiral-rl/spiral/rl"
	"github.com/spiral-rl/spiral/rollout/report/tfevents"
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

// TestTrainKeepsAFinishedSFTRunsEvents: train into the --out of a
// finished sft run (its model, sft.jsonl) whose tensorboard/ holds that
// run's TensorBoard events (sft --tensorboard, or spiral tensorboard) is
// refused, naming them, --fresh and another --out: the train run,
// starting over without a checkpoint, cut every event there away, with
// or without --tensorboard, so that the sft run's curves were lost. With
// --fresh the events go aside into previous-* and train runs; without
// events there train runs beside the finished sft, as it did.
func TestTrainKeepsAFinishedSFTRunsEvents(t *testing.T) {
	t.Setenv("SPIRAL_CACHE_DIR", t.TempDir())
	args := []string{"train", "--steps", "1", "--problems", "1", "--n1", "3", "--k", "2", "--n", "2", "--n2", "2",
		"--eval-every", "0", "--final-rsa-steps", "0", "--max-new-tokens", "4", "--threads", "1", "--quiet"}
	for _, tc := range []struct {
		name   string
		events bool
		fresh  bool
		code   int
	}{
		{"events", true, false, exitUsage},
		{"events, --fresh", true, true, 0},
		{"no events", false, false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "run")
			tb := filepath.Join(dir, rl.TensorBoardDir)
			require.NoError(t, os.MkdirAll(tb, 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(dir, rl.SFTLogFile), []byte(`{"step":1,"loss":0.5,"seconds":1}`+"\n"), 0o644))
			var events []byte
			if tc.events {
				path, err := tfevents.WriteFile(tb, time.Now(), []tfevents.Event{{Step: 1, Scalars: []tfevents.Scalar{{Tag: "loss", Value: 0.5}}}})
				require.NoError(t, err)
				events, err = os.ReadFile(path)
				require.NoError(t, err)
			}
			rerun := append(append([]string{}, args...), "--out", dir)
			if tc.fresh {
				rerun = append(rerun, "--fresh")
			}
			var stderr bytes.Buffer
			require.Equal(t, tc.code, run(context.Background(), rerun, &cliEnv{stdout: io.Discard, stderr: &stderr}), stderr.String())
			require.FileExists(t, filepath.Join(dir, rl.SFTLogFile), "the finished sft run's log stays")
			if !tc.events {
				return
			}
			if tc.code != 0 {
				require.Equal(t, "spiral train: --out "+dir+" holds the TensorBoard events of the spiral sft run whose log is sft.jsonl ("+tb+"), which train would remove as it starts: use another --out, or --fresh (which moves them aside into previous-*)\n", stderr.String())
			} else {
				moved, err := filepath.Glob(filepath.Join(dir, "previous-*", rl.TensorBoardDir))
				require.NoError(t, err)
				require.Len(t, moved, 1)
				tb = moved[0]
			}
			files, err := tfevents.Files(tb)
			require.NoError(t, err)
			require.Len(t, files, 1)
			kept, err := os.ReadFile(files[0])
			require.NoError(t, err)
			require.Equal(t, events, kept, "the sft run's events are kept")
		})
	}
}

// cancelAt is a writer that cancels a run's context once what it is
// written holds line: Ctrl-C at that line, in process.
type cancelAt struct {
	line   string
	cancel context.CancelFunc
	buf    bytes.Buffer
}

func (c *cancelAt) Write(p []byte) (int, error) {
	c.buf.Write(p)
	if bytes.Contains(c.buf.Bytes(), []byte(c.line)) {
		c.cancel()
	}
	return len(p), nil
}

// TestSFTRefusesOtherSettingsBeforeThePolicy: an interrupted sft run
// rerun with other settings (without --override: another --lr, another
// --tokenizer) is refused before the policy is loaded, which reads the
// model's weights and builds its artifacts (minutes, for a real model),
// as train refuses it (TestTrainRefusesOtherSettingsBeforeThePolicy): it
// was refused only by the resume, after. The run's artifacts path is a
// file here, so that loading the policy fails: the refusal must come
// first; with --override the rerun goes on to the policy. The refusal
// exits 2, the flags' mistake (it exited 1).
func TestSFTRefusesOtherSettingsBeforeThePolicy(t *testing.T) {
	t.Setenv("SPIRAL_CACHE_DIR", t.TempDir())
	dir := t.TempDir()
	out := filepath.Join(dir, "sft")
	other := reversedTokenizer(t, filepath.Join(dir, "other"))
	args := []string{"sft", "--out", out, "--steps", "50", "--batch", "2", "--eval-every", "0", "--eval-problems", "2", "--checkpoint-every", "1", "--threads", "1", "--quiet"}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stdout := &cancelAt{line: "checkpoint ", cancel: cancel}
	var stderr bytes.Buffer
	require.Equal(t, exitInterrupted, run(ctx, args, &cliEnv{stdout: stdout, stderr: &stderr}), stderr.String())
	artifacts := filepath.Join(out, rl.ArtifactsDir)
	require.NoError(t, os.RemoveAll(artifacts))
	require.NoError(t, os.WriteFile(artifacts, []byte("not a directory"), 0o644))
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"other --lr", []string{"--lr", "1e-3"}, exitUsage, "spiral sft: " + out + " holds a run with other settings: schedule.peak_lr (--lr): 0.003 -> 0.001; rerun with --override to continue with the new ones, or use another --out or --fresh\n"},
		{"another --tokenizer", []string{"--tokenizer", other}, exitUsage, "spiral sft: " + out + " holds a run with other settings: tokenizer (--tokenizer): "},
		{"--override", []string{"--lr", "1e-3", "--override"}, exitFailure, "spiral sft: model: artifacts: mkdir " + artifacts + ": not a directory\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stderr.Reset()
			rerun := append(append([]string{}, args...), tc.args...)
			require.Equal(t, tc.code, run(context.Background(), rerun, &cliEnv{stdout: io.Discard, stderr: &stderr}), stderr.String())
			require.Contains(t, stderr.String(), tc.want)
		})
	}
}

// TestSFTNoContextWarning: sft on a model whose config.json states no
// max_position_embeddings warns, naming the file, that its examples and
// --candidates go unchecked against the context (0 there read as no
// limit, without a word), before anything else refuses the run.
func TestSFTNoContextWarning(t *testing.T) {
	skipWithoutRuntime(t)
	t.Setenv("SPIRAL_CACHE_DIR", t.TempDir())
	src := t.TempDir()
	for _, name := range []string{"model.onnx", "tokenizer.json", "config.json"} {
		b, err := os.ReadFile(filepath.Join("model", "embedded", "assets", name))
		require.NoError(t, err)
		if name == "config.json" {
			var cfg map[string]any
			require.NoError(t, json.Unmarshal(b, &cfg))
			require.Contains(t, cfg, "max_position_embeddings")
			delete(cfg, "max_position_embeddings")
			b, err = json.Marshal(cfg)
			require.NoError(t, err)
		}
		require.NoError(t, os.WriteFile(filepath.Join(src, name), b, 0o644))
	}
	var stderr bytes.Buffer
	// --out is the model's directory: refused after the model is read.
	code := run(context.Background(), []string{"sft", "--model", filepath.Join(src, "model.onnx"), "--threads", "1", "--quiet", "--out", src}, &cliEnv{stdout: io.Discard, stderr: &stderr})
	require.Equal(t, exitUsage, code, stderr.String())
	require.Contains(t, stderr.String(), "spiral: warning: "+filepath.Join(src, "config.json")+" states no max_position_embeddings (neither at its top level nor in text_config): the model's context is not known, so its examples and --candidates are not checked against it\n")
	require.Contains(t, stderr.String(), "is the directory of --model")
}

// TestSFTWithoutEvaluation: sft --eval-problems 0 trains without
// evaluating, neither every --eval-every steps nor at the end (it was
// refused, "--eval-problems 0: want >= 1", so that sft could not turn
// its evaluations off): its sft.jsonl holds the step lines alone, which
// spiral tensorboard converts, and its output says no accuracy. The
// flags that then go unread are warned of as ignored: --eval-every, and
// --candidates with --aggregate-share 0 too, which is not checked
// against the model's positions then (4096 was refused as too many).
func TestSFTWithoutEvaluation(t *testing.T) {
	t.Setenv("SPIRAL_CACHE_DIR", t.TempDir())
	const (
		everyIgnored      = "spiral: warning: --eval-every sets how often the held-out problems are evaluated; --eval-problems 0 evaluates none, so it is ignored\n"
		candidatesIgnored = "spiral: warning: --candidates sets the candidates of the aggregation examples and of the evaluations' aggregation prompts; --aggregate-share 0 draws no such example and --eval-problems 0 runs no evaluation, so it is ignored\n"
	)
	for _, tc := range []struct {
		name string
		args []string
		warn string
	}{
		{"--eval-problems 0", nil, ""},
		{"with --eval-every", []string{"--eval-every", "1"}, everyIgnored},
		{"with --candidates past the positions, no aggregation examples", []string{"--aggregate-share", "0", "--candidates", "4096"}, candidatesIgnored},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "sft")
			// --warmup 1: a run ending inside the warmup is warned of.
			args := append([]string{"sft", "--out", out, "--steps", "2", "--warmup", "1", "--batch", "2", "--eval-problems", "0", "--threads", "1", "--quiet"}, tc.args...)
			var stdout, stderr bytes.Buffer
			require.Zero(t, run(context.Background(), args, &cliEnv{stdout: &stdout, stderr: &stderr}), stderr.String())
			require.Equal(t, tc.warn, stderr.String())
			require.NotContains(t, stdout.String(), "acc")
			b, err := os.ReadFile(filepath.Join(out, rl.SFTLogFile))
			require.NoError(t, err)
			lines := bytes.Split(bytes.TrimSpace(b), []byte("\n"))
			require.Len(t, lines, 2, "%s", b)
			for i, line := range lines {
				var m map[string]any
				require.NoError(t, json.Unmarshal(line, &m))
				require.Equal(t, float64(i+1), m["step"])
				require.NotContains(t, m, "eval_search_accuracy")
			}
			stderr.Reset()
			require.Zero(t, run(context.Background(), []string{"tensorboard", out}, &cliEnv{stdout: io.Discard, stderr: &stderr}), stderr.String())
			files, err := tfevents.Files(filepath.Join(out, rl.TensorBoardDir))
			require.NoError(t, err)
			require.Len(t, files, 1)
		})
	}
}
