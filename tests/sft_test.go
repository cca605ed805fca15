package tests

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/spiral-rl/spiral/data/synth"
	"github.com/spiral-rl/spiral/model/tokenizer"
	"github.com/spiral-rl/spiral/rollout/report/tfevents"
)

// TestSFTInputs feeds spiral sft flags that used to be taken or to fail
// late: each is refused with exit 2 naming the flag before --out is made.
// --max-grad-norm NaN or Inf (which train refuses) turned clipping off;
// --eval-problems above the 1,134 held-out problems failed at the first
// evaluation, after --eval-every steps of training, leaving sft.jsonl and
// artifacts/ behind; --candidates past the model's positions failed at
// the first step, once a batch of their prompts was drawn.
func TestSFTInputs(t *testing.T) {
	requireRuntime(t)
	f := fixtures{dir: t.TempDir()}
	good := f.modelDir(t, "good", nil)
	for i, c := range []struct {
		name string
		args []string
		want string
	}{
		{"NaN gradient-norm clip", []string{"--max-grad-norm", "NaN"}, "--max-grad-norm NaN: want a finite norm"},
		{"infinite gradient-norm clip", []string{"--max-grad-norm", "Inf"}, "--max-grad-norm +Inf: want a finite norm"},
		{"more held-out problems than the split has", []string{"--eval-problems", "100000"},
			"--eval-problems 100000: the embedded task's test split has 1134 problems: want at most that\n"},
		// sft has no model default to fall back on: 0 is refused like a
		// negative rate, and neither message offers 0 (they said "0 = the
		// model's default").
		{"negative learning rate", []string{"--lr", "-1"}, "--lr -1: want a learning rate in (0, 3.4028235e+38]\n"},
		{"zero learning rate", []string{"--lr", "0"}, "--lr 0: want a learning rate in (0, 3.4028235e+38]\n"},
		{"no checkpoints", []string{"--checkpoint-every", "0"}, "--checkpoint-every 0: want >= 1"},
		{"negative retention", []string{"--keep", "-1"}, "--keep -1: want >= 0 (0 = keep every checkpoint)"},
		// Each candidate is a token of the aggregation prompts at least:
		// these never fit, and a batch of them took gigabytes to draw
		// before the first step refused them (exit 1).
		{"more candidates than the model's positions", []string{"--candidates", "4096"},
			"--candidates 4096: an aggregation prompt of 4096 candidates passes the model's 4096 positions (config.json max_position_embeddings), each candidate taking a token at least: give fewer\n"},
		// Fewer, but more than the task's longest aggregation example
		// fits with: a run failed at the first step to draw a long one
		// (this many ran for steps before).
		{"more candidates than the longest example fits", []string{"--candidates", "60"},
			"--candidates 60: the task's longest aggregation example of 60 candidates takes 5841 tokens, past the model's 4096 positions (config.json max_position_embeddings), so any step or evaluation could draw one and fail: give at most 41\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			out := f.path(fmt.Sprint("out", i))
			args := append([]string{"sft", "--model", good, "--out", out, "--steps", "1", "--batch", "2", "--quiet"}, c.args...)
			r := spiral(t, nil, args...)
			require.Equal(t, 2, r.code, "%q\n%s%s", args, r.stdout, r.stderr)
			require.Contains(t, r.stderr, c.want)
			require.NotContains(t, r.stderr, "panic:")
			require.NoDirExists(t, out)
		})
	}
}

// TestSFTOverwriteWithoutConfig: sft --overwrite from a model without
// config.json removes the config.json of the model it replaces, which
// described that other model (its layers, heads and context), and the
// replaced model's external data file; the log is in place, and nothing
// is left of the stage the files were written in.
func TestSFTOverwriteWithoutConfig(t *testing.T) {
	requireRuntime(t)
	f := fixtures{dir: t.TempDir()}
	bare := f.modelDir(t, "bare", nil)
	require.NoError(t, os.Remove(filepath.Join(bare, "config.json")))
	out := f.modelDir(t, "out", nil)
	require.NoError(t, os.WriteFile(filepath.Join(out, "model.onnx_data"), []byte("the replaced model's weights"), 0o666))
	r := spiral(t, nil, "sft", "--model", bare, "--out", out, "--overwrite", "--steps", "1", "--batch", "2", "--eval-problems", "2", "--quiet")
	require.Equal(t, 0, r.code, r.stderr)
	require.FileExists(t, filepath.Join(out, "model.onnx"))
	require.FileExists(t, filepath.Join(out, "tokenizer.json"))
	require.FileExists(t, filepath.Join(out, "sft.jsonl"))
	require.NoFileExists(t, filepath.Join(out, "sft.jsonl.partial"))
	require.NoFileExists(t, filepath.Join(out, "config.json"))
	require.NoFileExists(t, filepath.Join(out, "model.onnx_data"))
	requireNoStage(t, out)
}

// requireNoStage checks that dir holds no stage (atomicfile.Stage) left
// by a command that wrote its files there.
func requireNoStage(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range entries {
		require.False(t, strings.HasPrefix(e.Name(), ".stage-"), "%s left in %s", e.Name(), dir)
	}
}

// TestSFTExamplesPastContext: aggregation examples longer than the
// model's positions (4,096: 2,000 candidates of the task's traces) are a
// usage error naming --candidates and the most that fit, before anything
// is written (it was an error at the first step, and before that ONNX
// Runtime's failure to allocate terabytes).
func TestSFTExamplesPastContext(t *testing.T) {
	requireRuntime(t)
	f := fixtures{dir: t.TempDir()}
	good := f.modelDir(t, "good", nil)
	r := spiral(t, nil, "sft", "--model", good, "--out", f.path("out"), "--steps", "1", "--batch", "2", "--aggregate-share", "1", "--candidates", "2000", "--quiet")
	require.Equal(t, 2, r.code, r.stderr)
	require.Regexp(t, `--candidates 2000: the task's longest aggregation example of 2000 candidates takes \d+ tokens, past the model's 4096 positions \(config.json max_position_embeddings\), so any step or evaluation could draw one and fail: give at most 41`, r.stderr)
	require.NoDirExists(t, f.path("out"))
}

// TestSFTSkippedUpdateSteps: a step whose update is skipped (a peak
// rate of 1e30 makes the weights overflow, so the next gradients are
// NaN) is logged in sft.jsonl under its own step number, as its step
// line and the evaluation say; the lines used to repeat the last applied
// update's number, the optimizer's count, which stands still at a skip.
func TestSFTSkippedUpdateSteps(t *testing.T) {
	requireRuntime(t)
	f := fixtures{dir: t.TempDir()}
	good := f.modelDir(t, "good", nil)
	out := f.path("out")
	r := spiral(t, nil, "sft", "--model", good, "--out", out, "--steps", "4", "--batch", "2", "--eval-every", "0", "--eval-problems", "2",
		"--lr", "1e30", "--warmup", "0", "--max-grad-norm", "0", "--quiet")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "update skipped")
	b, err := os.ReadFile(filepath.Join(out, "sft.jsonl"))
	require.NoError(t, err)
	var steps []int
	skipped := 0
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var m struct {
			Step          int      `json:"step"`
			Loss          *float64 `json:"loss"`
			UpdateSkipped string   `json:"update_skipped"`
		}
		require.NoError(t, json.Unmarshal([]byte(line), &m), line)
		if m.Loss == nil {
			continue // the evaluation's line
		}
		steps = append(steps, m.Step)
		if m.UpdateSkipped != "" {
			skipped++
		}
	}
	require.Positive(t, skipped, "no update was skipped:\n%s", b)
	require.Equal(t, []int{1, 2, 3, 4}, steps, "%s", b)
}

// TestSFTOutIsAFile: an --out that is a file is a usage error (exit 2)
// naming the flag, as init-model's is (it said only "mkdir PATH: not a
// directory").
func TestSFTOutIsAFile(t *testing.T) {
	requireRuntime(t)
	f := fixtures{dir: t.TempDir()}
	good := f.modelDir(t, "good", nil)
	out := f.path("file")
	require.NoError(t, os.WriteFile(out, []byte("not a directory"), 0o644))
	r := spiral(t, nil, "sft", "--model", good, "--out", out, "--steps", "1", "--batch", "2", "--eval-problems", "2", "--quiet")
	require.Equal(t, 2, r.code, r.stderr)
	require.Contains(t, r.stderr, "spiral sft: --out "+out+": mkdir "+out+": not a directory")
}

// TestSFTTokenizerFiles: the model sft writes keeps the tokenizer's other
// files (tokenizer_config.json with the chat template) and the generation
// defaults of the model it starts from, as export does, where it used to
// write tokenizer.json alone, so that an hf export of it gave spiral's
// template and defaults instead; and with --overwrite such files of the
// model it replaces, which the new one lacks, go.
func TestSFTTokenizerFiles(t *testing.T) {
	requireRuntime(t)
	f := fixtures{dir: t.TempDir()}
	src := f.modelDir(t, "src", nil)
	kept := map[string]string{
		"tokenizer_config.json":  `{"chat_template": "{% for m in messages %}<|im_start|>{{ m.content }}<|im_end|>{% endfor %}"}`,
		"generation_config.json": `{"temperature": 0.6}`,
	}
	for name, text := range kept {
		require.NoError(t, os.WriteFile(filepath.Join(src, name), []byte(text), 0o644))
	}
	out := f.modelDir(t, "out", nil)
	for _, name := range []string{"vocab.json", "merges.txt"} {
		require.NoError(t, os.WriteFile(filepath.Join(out, name), []byte("the replaced model's"), 0o644))
	}
	r := spiral(t, nil, "sft", "--model", src, "--out", out, "--overwrite", "--steps", "1", "--batch", "2", "--eval-problems", "2", "--quiet")
	require.Equal(t, 0, r.code, r.stderr)
	for name, text := range kept {
		b, err := os.ReadFile(filepath.Join(out, name))
		require.NoError(t, err)
		require.Equal(t, text, string(b), name)
	}
	require.NoFileExists(t, filepath.Join(out, "vocab.json"))
	require.NoFileExists(t, filepath.Join(out, "merges.txt"))
	require.FileExists(t, filepath.Join(out, "tokenizer.json"))
	require.FileExists(t, filepath.Join(out, "sft.jsonl"))
	requireNoStage(t, out)
}

// TestSFTResumesAfterInterruption: an sft run killed (SIGKILL, as an OOM
// kill or a power loss ends it, after its first checkpoint) or
// interrupted (SIGINT, which saves the last step) and then run again with
// the same command resumes from its newest checkpoint and writes, with
// --deterministic, the model and sft.jsonl (wall times aside) of the run
// that was not interrupted; its checkpoints and sft.jsonl.partial are
// gone once the model is written, so a later --overwrite starts over.
func TestSFTResumesAfterInterruption(t *testing.T) {
	requireRuntime(t)
	f := fixtures{dir: t.TempDir()}
	src := f.modelDir(t, "src", nil)
	args := func(out string) []string {
		return []string{"sft", "--model", src, "--out", out, "--steps", "60", "--batch", "2", "--eval-every", "7", "--eval-problems", "2",
			"--checkpoint-every", "5", "--seed", "3", "--deterministic", "--quiet"}
	}
	// The uninterrupted run beside the first interrupted one
	// (--deterministic runs one thread: two at once on two cores).
	straight := f.path("straight")
	var wg sync.WaitGroup
	t.Cleanup(wg.Wait) // before the directories' removal, should the test stop early
	var r result
	wg.Go(func() { r = spiral(t, nil, args(straight)...) })
	var want []byte
	straightDone := func(t *testing.T) {
		t.Helper()
		if want != nil {
			return
		}
		wg.Wait()
		require.Equal(t, 0, r.code, r.stderr)
		require.NotContains(t, r.stdout, "resumed")
		var err error
		want, err = os.ReadFile(filepath.Join(straight, "model.onnx"))
		require.NoError(t, err)
	}

	for _, c := range []struct {
		name string
		sig  syscall.Signal
	}{{"killed", syscall.SIGKILL}, {"interrupted", syscall.SIGINT}} {
		t.Run(c.name, func(t *testing.T) {
			out := f.path(c.name)
			cmd, stderr := signalAtLine(t, c.sig, "checkpoint ", 10*time.Minute, args(out)...)
			if c.sig == syscall.SIGINT {
				require.Equal(t, 130, cmd.ProcessState.ExitCode(), stderr)
				require.Contains(t, stderr, "rerun the command to resume")
			}
			require.NoFileExists(t, filepath.Join(out, "model.onnx"), "the run ended before the signal")
			require.NoFileExists(t, filepath.Join(out, "sft.jsonl"))
			require.FileExists(t, filepath.Join(out, "sft.jsonl.partial"))

			r := spiral(t, nil, args(out)...)
			require.Equal(t, 0, r.code, r.stderr)
			require.Regexp(t, `(?m)^resumed from `+regexp.QuoteMeta(filepath.Join(out, "checkpoints", "ckpt-"))+`\d+ \(step \d+\)$`, r.stdout)
			straightDone(t)
			got, err := os.ReadFile(filepath.Join(out, "model.onnx"))
			require.NoError(t, err)
			require.True(t, bytes.Equal(want, got), "the resumed run's model.onnx differs from the uninterrupted run's")
			require.Equal(t, withoutTimes(t, filepath.Join(straight, "sft.jsonl")), withoutTimes(t, filepath.Join(out, "sft.jsonl")))
			require.NoDirExists(t, filepath.Join(out, "checkpoints"))
			require.NoFileExists(t, filepath.Join(out, "sft.jsonl.partial"))
			requireNoStage(t, out)
		})
	}

	// The finished run left nothing to resume: the same command is
	// refused for the model it wrote, and --overwrite trains afresh.
	straightDone(t)
	r = spiral(t, nil, args(straight)...)
	require.Equal(t, 2, r.code, r.stderr)
	require.Contains(t, r.stderr, "give --overwrite to replace it")
	r = spiral(t, nil, append(args(straight), "--overwrite")...)
	require.Equal(t, 0, r.code, r.stderr)
	require.NotContains(t, r.stdout, "resumed")
	got, err := os.ReadFile(filepath.Join(straight, "model.onnx"))
	require.NoError(t, err)
	require.True(t, bytes.Equal(want, got), "a deterministic rerun differs")
}

// TestSFTOtherModelRefusedBeforeArtifacts: sft with another --model into
// an --out holding an sft run's checkpoints is refused before the run's
// artifacts are built again for it, as train refuses it
// (TestOtherModelRefusedBeforeArtifacts): they were rebuilt, replacing
// the run's, and only then was the rerun refused.
func TestSFTOtherModelRefusedBeforeArtifacts(t *testing.T) {
	requireRuntime(t)
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	small := []string{"--out", out, "--steps", "60", "--batch", "2", "--eval-every", "0", "--eval-problems", "2", "--checkpoint-every", "1", "--threads", "1", "--quiet"}
	// Interrupted after its first checkpoint: a finished run leaves none.
	cmd, stderr := signalAtLine(t, syscall.SIGINT, "checkpoint ", 10*time.Minute, append([]string{"sft"}, small...)...)
	require.Equal(t, 130, cmd.ProcessState.ExitCode(), stderr)
	artifacts := func() map[string]time.Time { return modTimes(t, filepath.Join(out, "artifacts")) }
	before := artifacts()
	require.NotEmpty(t, before)
	m := filepath.Join(dir, "m")
	requireExit(t, spiral(t, nil, "init-model", "--out", m, "--seed", "5"), 0, nil)
	r := spiral(t, nil, append([]string{"sft", "--model", filepath.Join(m, "model.onnx")}, small...)...)
	requireExit(t, r, 2, nil, out+" holds an sft run of embedded", "use another --out, or --fresh")
	require.Equal(t, before, artifacts(), "the run's artifacts are untouched")
}

// TestSFTResumeOtherTokenizer: an sft run interrupted and run again with
// another --tokenizer is refused, naming it and --override, as other
// settings are: it resumed without a word, training the weights of ids
// that meant other text on the new tokenizer's ids, and wrote the model
// with that tokenizer. Here the other tokenizer has the task's
// characters at other ids (the alphabet reversed).
func TestSFTResumeOtherTokenizer(t *testing.T) {
	requireRuntime(t)
	f := fixtures{dir: t.TempDir()}
	src := f.modelDir(t, "src", nil)
	other := f.path("other")
	require.NoError(t, os.MkdirAll(other, 0o755))
	alphabet := []rune(synth.Alphabet())
	slices.Reverse(alphabet)
	tj, err := tokenizer.BuildCharTokenizerJSON(alphabet)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(other, "tokenizer.json"), tj, 0o644))
	out := f.path("out")
	args := []string{"sft", "--model", src, "--out", out, "--steps", "60", "--batch", "2", "--eval-every", "0", "--eval-problems", "2",
		"--checkpoint-every", "1", "--threads", "1", "--quiet"}
	cmd, stderr := signalAtLine(t, syscall.SIGINT, "checkpoint ", 10*time.Minute, args...)
	require.Equal(t, 130, cmd.ProcessState.ExitCode(), stderr)
	log, err := os.ReadFile(filepath.Join(out, "sft.jsonl.partial"))
	require.NoError(t, err)

	r := spiral(t, nil, append(args, "--tokenizer", other)...)
	requireExit(t, r, 2, nil, "holds a run with other settings: tokenizer (--tokenizer): ", "rerun with --override")
	require.NotContains(t, r.stdout, "resumed from")
	after, err := os.ReadFile(filepath.Join(out, "sft.jsonl.partial"))
	require.NoError(t, err)
	require.Equal(t, log, after, "the refused rerun left the run's log as it was")

	// The same tokenizer, given by --tokenizer, is the run's.
	r = spiral(t, nil, append(args, "--steps", "3", "--override", "--tokenizer", src)...)
	requireExit(t, r, 0, nil, "resumed from")
	require.NotContains(t, r.stderr, "tokenizer (--tokenizer)")
}

// TestSFTKilledWhileMovingItsModelIn: sft killed (SIGKILL, a second
// Ctrl-C) within the renames that move its model, config, tokenizer and
// log in from the stage left --out with the new model.onnx and the rest
// in the stage; the same command run again was refused at once ("already
// holds a model"), before anything would finish that commit, so --out
// kept a model.onnx without its config.json and tokenizer.json. The rerun
// finishes the commit first: the model is whole, and the refusal is
// then true.
func TestSFTKilledWhileMovingItsModelIn(t *testing.T) {
	requireRuntime(t)
	out := filepath.Join(t.TempDir(), "sft")
	args := []string{"sft", "--out", out, "--steps", "1", "--batch", "2", "--eval-problems", "2", "--quiet"}
	r := spiral(t, nil, args...)
	require.Equal(t, 0, r.code, r.stderr)
	moved := []string{"config.json", "tokenizer.json", "sft.jsonl"}
	want := map[string][]byte{}
	for _, n := range append([]string{"model.onnx"}, moved...) {
		b, err := os.ReadFile(filepath.Join(out, n))
		require.NoError(t, err)
		want[n] = b
	}
	// What the kill left: model.onnx moved in, the rest still in the
	// stage beside the commit's record.
	stage := filepath.Join(out, ".stage-123")
	require.NoError(t, os.Mkdir(stage, 0o755))
	for _, n := range moved {
		require.NoError(t, os.Rename(filepath.Join(out, n), filepath.Join(stage, n)))
	}
	require.NoError(t, os.WriteFile(filepath.Join(stage, ".commit"),
		[]byte(`{"move":["model.onnx","config.json","tokenizer.json","sft.jsonl"],"remove":["model.onnx_data"]}`), 0o644))
	r = spiral(t, nil, args...)
	require.Equal(t, 2, r.code, r.stderr)
	require.Contains(t, r.stderr, "already holds a model")
	for n, b := range want {
		got, err := os.ReadFile(filepath.Join(out, n))
		require.NoError(t, err, n)
		require.Equal(t, b, got, n)
	}
	require.NoDirExists(t, stage)
}

// TestPolicyOverTokenizerIDs: a model whose logits are wider than its
// tokenizer's ids (init-model --vocab 4000 with the byte tokenizer's
// 259) trains the policy the sampler draws from, the softmax over the
// 259 ids: sft's logged entropy is at most ln 259 (it was about
// ln 4000 = 8.29, the whole row's). A tokenizer with more ids than the
// model's logits is refused by sft and train alike, in the tokenizer's
// words, before anything trains.
func TestPolicyOverTokenizerIDs(t *testing.T) {
	requireRuntime(t)
	dir := t.TempDir()
	env := []string{"SPIRAL_CACHE_DIR=" + t.TempDir()}
	wide := filepath.Join(dir, "wide")
	r := spiral(t, nil, "init-model", "--out", wide, "--tokenizer", "byte", "--vocab", "4000", "--layers", "1")
	require.Equal(t, 0, r.code, r.stderr)
	out := filepath.Join(dir, "sft")
	r = spiral(t, env, "sft", "--model", wide, "--out", out, "--steps", "1", "--batch", "2", "--eval-every", "0", "--eval-problems", "1", "--quiet")
	require.Equal(t, 0, r.code, r.stderr)
	b, err := os.ReadFile(filepath.Join(out, "sft.jsonl"))
	require.NoError(t, err)
	var step struct {
		Entropy *float64 `json:"entropy"`
	}
	require.NoError(t, json.Unmarshal(bytes.SplitN(b, []byte("\n"), 2)[0], &step))
	require.NotNil(t, step.Entropy, "%s", b)
	require.Greater(t, *step.Entropy, 5.0, "%s", b) // a random model: near uniform
	require.LessOrEqual(t, *step.Entropy, math.Log(259), "the entropy of a softmax over more than the tokenizer's 259 ids: %s", b)

	narrow := filepath.Join(dir, "narrow")
	r = spiral(t, nil, "init-model", "--out", narrow, "--layers", "1")
	require.Equal(t, 0, r.code, r.stderr)
	tok, err := os.ReadFile(filepath.Join(wide, "tokenizer.json"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(narrow, "tokenizer.json"), tok, 0o644))
	want := "tokenizer " + filepath.Join(narrow, "tokenizer.json") + " has 259 ids but model " + filepath.Join(narrow, "model.onnx") + " has 49 embedding rows (logits); they do not belong together\n"
	for _, args := range [][]string{
		{"sft", "--model", narrow, "--out", filepath.Join(dir, "sft-narrow"), "--steps", "1", "--batch", "2", "--quiet"},
		{"train", "--model", narrow, "--out", filepath.Join(dir, "train-narrow"), "--steps", "1", "--quiet"},
	} {
		r = spiral(t, env, args...)
		require.Equal(t, 1, r.code, "%q\n%s%s", args, r.stdout, r.stderr)
		require.Contains(t, r.stderr, want, "%q", args)
	}
}

// TestSFTOverwriteKilledAfterItsCommit: sft --overwrite of a finished
// run killed (SIGKILL) once its model is moved in, while it removes the
// checkpoints, the partial log and the events set aside: the rerun of
// the same command writes a whole run. RemoveSFTCheckpoints removed the
// partial log first, the very file of the new sft.jsonl, by which a
// rerun tells that the model is written and finishes the removal; a kill
// within the checkpoints' removal left them without it, and the rerun
// resumed them as an unfinished run at its last step, trained nothing
// and replaced sft.jsonl with a log of no step ("logs 0 of the 3 steps
// resumed"). Killed at points from the "wrote" line on (the removal
// takes a few milliseconds); the TensorBoard events then hold each step
// once. spiral tensorboard there finishes the removal as the rerun does
// (tensorboard-finished/, the replaced run's events, stayed until the
// next sft into that --out).
func TestSFTOverwriteKilledAfterItsCommit(t *testing.T) {
	requireRuntime(t)
	sft := func(out string) []string {
		// --warmup 3: a run ending inside the warmup is warned of.
		return []string{"sft", "--out", out, "--steps", "3", "--warmup", "3", "--batch", "2", "--eval-problems", "2", "--threads", "1",
			"--checkpoint-every", "1", "--keep", "10", "--tensorboard", "--quiet"}
	}
	// The finished run that each kill point overwrites: trained once,
	// copied into each subtest's --out.
	finished := filepath.Join(t.TempDir(), "sft")
	r := spiral(t, nil, sft(finished)...)
	require.Equal(t, 0, r.code, r.stderr)
	for _, delay := range []time.Duration{0, 500 * time.Microsecond, 2 * time.Millisecond} {
		t.Run(delay.String(), func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "sft")
			cp, err := exec.Command("cp", "-a", finished, out).CombinedOutput()
			require.NoError(t, err, "%s", cp)
			args := append(sft(out), "--overwrite")
			cmd, stderr := signalAfterLine(t, syscall.SIGKILL, "wrote ", delay, 5*time.Minute, args...)
			require.True(t, cmd.ProcessState.Success() || cmd.ProcessState.ExitCode() == -1, stderr)
			requireWholeSFTRun(t, out, false)
			// spiral tensorboard in a copy of what the kill left (cp -a
			// keeps sft.jsonl the very file of sft.jsonl.partial)
			// finishes the removal too, the replaced run's events in
			// tensorboard-finished/ with it; it converts nothing, the
			// killed run having logged its events (--tensorboard).
			copied := filepath.Join(t.TempDir(), "copy")
			cp, err = exec.Command("cp", "-a", out, copied).CombinedOutput()
			require.NoError(t, err, "%s", cp)
			r := spiral(t, nil, "tensorboard", copied)
			require.Equal(t, 0, r.code, r.stderr)
			require.Contains(t, r.stderr, "holds the events of "+filepath.Join(copied, "sft.jsonl")+" already")
			requireWholeSFTRun(t, copied, true)
			r = spiral(t, nil, args...)
			require.Equal(t, 0, r.code, r.stderr)
			require.NotContains(t, r.stderr, "warning", "a run of its own")
			requireWholeSFTRun(t, out, true)
		})
	}
}

// requireWholeSFTRun asserts that the sft run in out (of sft
// --steps 3 --tensorboard) has its model, config, tokenizer and a log
// of its 3 steps; finished, that the checkpoints, the partial log and
// the events set aside are gone, and that tensorboard/ holds each step
// once.
func requireWholeSFTRun(t *testing.T, out string, finished bool) {
	t.Helper()
	for _, n := range []string{"model.onnx", "config.json", "tokenizer.json"} {
		require.FileExists(t, filepath.Join(out, n))
	}
	log, err := os.ReadFile(filepath.Join(out, "sft.jsonl"))
	require.NoError(t, err)
	steps := 0
	for _, l := range jsonLines[map[string]any](t, string(log)) {
		if _, ok := l["loss"]; ok {
			steps++
		}
	}
	require.Equal(t, 3, steps, "step lines of sft.jsonl")
	if !finished {
		return
	}
	require.NoDirExists(t, filepath.Join(out, "checkpoints"))
	require.NoFileExists(t, filepath.Join(out, "sft.jsonl.partial"))
	require.NoDirExists(t, filepath.Join(out, "tensorboard-finished"))
	require.Equal(t, map[int64]int{1: 1, 2: 1, 3: 1}, eventSteps(t, filepath.Join(out, "tensorboard"), "loss"), "loss events of each step")
}

// eventSteps counts the events of each step that hold a scalar tagged
// tag in the event files in dir (TensorBoard reads every file whose name
// holds "tfevents"), asserting that each is whole.
func eventSteps(t *testing.T, dir, tag string) map[int64]int {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*tfevents*"))
	require.NoError(t, err)
	logged := map[int64]int{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		_, events, torn, err := tfevents.Decode(b)
		require.NoError(t, err, f)
		require.False(t, torn, f)
		for _, e := range events {
			for _, s := range e.Scalars {
				if s.Tag == tag {
					logged[e.Step]++
				}
			}
		}
	}
	return logged
}

// TestSFTOverwriteKilledAsItStarts: sft --overwrite of a finished
// --tensorboard run killed (SIGKILL) at points from the setting aside of
// that run's events on (the log started, the events cut back, the first
// steps) leaves the finished run's model, config, tokenizer and
// sft.jsonl byte for byte, and its events in tensorboard-finished/; the
// same command run again writes a whole run and removes them.
func TestSFTOverwriteKilledAsItStarts(t *testing.T) {
	requireRuntime(t)
	out := filepath.Join(t.TempDir(), "sft")
	args := []string{"sft", "--out", out, "--steps", "3", "--batch", "2", "--eval-problems", "2", "--threads", "1",
		"--checkpoint-every", "1", "--tensorboard", "--quiet"}
	r := spiral(t, nil, args...)
	require.Equal(t, 0, r.code, r.stderr)
	args = append(args, "--overwrite")
	aside := filepath.Join(out, "tensorboard-finished")
	for _, delay := range []time.Duration{0, 2 * time.Millisecond, 50 * time.Millisecond} {
		finished := map[string][]byte{}
		for _, n := range []string{"model.onnx", "config.json", "tokenizer.json", "sft.jsonl"} {
			b, err := os.ReadFile(filepath.Join(out, n))
			require.NoError(t, err)
			finished[n] = b
		}
		stderr, killed := killAfter(t, func() bool { _, err := os.Stat(aside); return err == nil }, delay, 5*time.Minute, args...)
		require.True(t, killed, "ended before it was killed %v after the events were set aside: %s", delay, stderr)
		for n, b := range finished {
			got, err := os.ReadFile(filepath.Join(out, n))
			require.NoError(t, err)
			require.Equal(t, b, got, "%s after a kill %v after the events were set aside", n, delay)
		}
		require.Equal(t, map[int64]int{1: 1, 2: 1, 3: 1}, eventSteps(t, aside, "loss"), "the finished run's events")
		r := spiral(t, nil, args...)
		require.Equal(t, 0, r.code, r.stderr)
		requireWholeSFTRun(t, out, true)
	}
}

// TestSFTRemovesAbandonedStageAtStart: the stage an sft killed while it
// wrote its model left (unlocked, a minute old) goes as the rerun starts,
// before its training (killed here at its first checkpoint), not at the
// rerun's own stage after it: it can hold a whole model.
func TestSFTRemovesAbandonedStageAtStart(t *testing.T) {
	requireRuntime(t)
	out := filepath.Join(t.TempDir(), "sft")
	stage := filepath.Join(out, ".stage-123456")
	require.NoError(t, os.MkdirAll(stage, 0o777))
	require.NoError(t, os.WriteFile(filepath.Join(stage, "model.onnx_data"), make([]byte, 1<<20), 0o666))
	old := time.Now().Add(-2 * time.Minute)
	require.NoError(t, os.Chtimes(stage, old, old))
	ckpts := filepath.Join(out, "checkpoints")
	stderr, killed := killAfter(t, func() bool { _, err := os.Stat(ckpts); return err == nil }, 0, 5*time.Minute,
		"sft", "--out", out, "--steps", "100", "--batch", "2", "--eval-problems", "2", "--threads", "1", "--checkpoint-every", "1", "--quiet")
	require.True(t, killed, "ended before its first checkpoint was seen: %s", stderr)
	require.NoDirExists(t, stage, "the abandoned stage, once the rerun trains")
}

// TestSFTFreshKilledWhileSettingAside: sft --fresh killed (SIGKILL) at
// points from the start of its setting aside of an interrupted run, and
// run again, leaves that run whole in one previous-*/: its checkpoints,
// its sft.jsonl.partial byte for byte and its events, never split across
// two previous-* directories or between one and --out.
func TestSFTFreshKilledWhileSettingAside(t *testing.T) {
	requireRuntime(t)
	base := filepath.Join(t.TempDir(), "interrupted")
	args := func(out, steps string) []string {
		return []string{"sft", "--out", out, "--steps", steps, "--batch", "2", "--eval-problems", "2", "--threads", "1",
			"--checkpoint-every", "1", "--tensorboard", "--quiet"}
	}
	ckpt := filepath.Join(base, "checkpoints", "ckpt-000002")
	stderr, killed := killAfter(t, func() bool { _, err := os.Stat(ckpt); return err == nil }, 0, 5*time.Minute, args(base, "100")...)
	require.True(t, killed, "ended before its second checkpoint: %s", stderr)
	log, err := os.ReadFile(filepath.Join(base, "sft.jsonl.partial"))
	require.NoError(t, err)
	for i, delay := range []time.Duration{0, 0, 0, 20 * time.Microsecond, 50 * time.Microsecond, 100 * time.Microsecond, time.Millisecond} {
		out := filepath.Join(t.TempDir(), "sft")
		require.NoError(t, exec.Command("cp", "-a", base, out).Run())
		fresh := append(args(out, "2"), "--fresh")
		settingAside := func() bool {
			prev, _ := filepath.Glob(filepath.Join(out, "*previous-*"))
			return len(prev) > 0
		}
		stderr, _ := killAfter(t, settingAside, delay, 5*time.Minute, fresh...)
		r := spiral(t, nil, fresh...)
		require.Equal(t, 0, r.code, "%d: %s\n%s", i, stderr, r.stderr)
		prev, err := filepath.Glob(filepath.Join(out, "previous-*"))
		require.NoError(t, err)
		holding := 0
		for _, p := range prev {
			b, err := os.ReadFile(filepath.Join(p, "sft.jsonl.partial"))
			if err != nil || string(b) != string(log) {
				continue
			}
			holding++
			require.FileExists(t, filepath.Join(p, "checkpoints", "ckpt-000002", "state.json"), "%d: the run set aside with its log", i)
			require.DirExists(t, filepath.Join(p, "tensorboard"), "%d: the run set aside with its log", i)
		}
		require.Equal(t, 1, holding, "%d: previous-* holding the interrupted run's log: %v", i, prev)
		require.NoDirExists(t, filepath.Join(out, ".previous-pending"))
	}
}
