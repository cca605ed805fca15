package tests

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
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

	"github.com/spiral-rl/spiral/model/checkpoint"
	"github.com/spiral-rl/spiral/model/params"
	"github.com/spiral-rl/spiral/rollout/report"
)

// TestWorkflow runs the whole product on a freshly initialised tiny model:
// init-model -> sft -> train (SPIRAL, then resumed) -> eval (3 modes) ->
// export -> generate on the exported model, checking each step's files.
func TestWorkflow(t *testing.T) {
	requireRuntime(t)
	dir := t.TempDir()
	m := filepath.Join(dir, "init")
	r := spiral(t, nil, "init-model", "--out", m, "--seed", "3")
	require.Equal(t, 0, r.code, r.stderr)
	for _, f := range []string{"model.onnx", "tokenizer.json", "config.json"} {
		require.FileExists(t, filepath.Join(m, f))
	}

	sft := filepath.Join(dir, "sft")
	r = spiral(t, nil, "sft", "--model", m, "--out", sft, "--steps", "3", "--batch", "8", "--eval-every", "0", "--eval-problems", "4", "--quiet")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "search acc")
	require.Equal(t, 4, countLines(t, filepath.Join(sft, "sft.jsonl")), "3 steps + 1 evaluation line")
	// A model already in --out is kept unless --overwrite.
	r = spiral(t, nil, "init-model", "--out", m, "--seed", "4")
	require.Equal(t, 2, r.code, r.stderr)
	require.Contains(t, r.stderr, "already holds a model")
	r = spiral(t, nil, "sft", "--model", m, "--out", sft, "--steps", "1", "--batch", "8", "--eval-every", "0", "--quiet")
	require.Equal(t, 2, r.code, r.stderr)
	require.Contains(t, r.stderr, "give --overwrite to replace it")
	// So is a directory of a model's files without model.onnx (the
	// tokenizer and config.json a serving engine's evaluation reads).
	files := filepath.Join(dir, "files")
	require.NoError(t, os.MkdirAll(files, 0o755))
	cfg := []byte(`{"model_type": "qwen3"}`)
	require.NoError(t, os.WriteFile(filepath.Join(files, "config.json"), cfg, 0o644))
	r = spiral(t, nil, "init-model", "--out", files)
	require.Equal(t, 2, r.code, r.stderr)
	require.Contains(t, r.stderr, "already holds a model's config.json")
	kept, err := os.ReadFile(filepath.Join(files, "config.json"))
	require.NoError(t, err)
	require.Equal(t, cfg, kept)
	require.NoFileExists(t, filepath.Join(files, "model.onnx"))
	require.Equal(t, 4, countLines(t, filepath.Join(sft, "sft.jsonl")), "the first sft's log, kept")
	// An --overwrite run that stops before its end (interrupted after its
	// first step; --candidates 2000, which failed at the first step, is
	// refused at startup now) leaves the model and log it was to replace
	// as they were, its own log beside them as sft.jsonl.partial.
	sftModel, err := os.ReadFile(filepath.Join(sft, "model.onnx"))
	require.NoError(t, err)
	stopped, stderr := signalAtLine(t, os.Interrupt, "step    1", 2*time.Minute, "sft", "--model", m, "--out", sft, "--overwrite", "--steps", "1000", "--batch", "2", "--eval-every", "1", "--eval-problems", "2", "--quiet")
	require.NotEqual(t, 0, stopped.ProcessState.ExitCode(), stderr)
	require.Equal(t, 4, countLines(t, filepath.Join(sft, "sft.jsonl")), "the first sft's log, kept")
	require.FileExists(t, filepath.Join(sft, "sft.jsonl.partial"))
	keptModel, err := os.ReadFile(filepath.Join(sft, "model.onnx"))
	require.NoError(t, err)
	require.Equal(t, sftModel, keptModel)
	// sft into the directory it starts from is refused, the model kept.
	before, err := os.ReadFile(filepath.Join(m, "model.onnx"))
	require.NoError(t, err)
	r = spiral(t, nil, "sft", "--model", m, "--out", m+string(filepath.Separator), "--steps", "1", "--quiet")
	require.Equal(t, 2, r.code, r.stderr)
	require.Contains(t, r.stderr, "is the directory of --model")
	after, err := os.ReadFile(filepath.Join(m, "model.onnx"))
	require.NoError(t, err)
	require.Equal(t, before, after)

	run := filepath.Join(dir, "run")
	args := []string{"train", "--model", sft, "--out", run, "--problems", "2", "--n1", "4", "--k", "2", "--n", "2", "--n2", "2", "--max-new-tokens", "24", "--checkpoint-every", "1", "--quiet",
		"--eval-data", filepath.Join(dir, "held.jsonl"), "--eval-every", "5", "--eval-problems", "3", "--eval-samples", "2"}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "held.jsonl"), []byte(`{"problem":"Compute 1+2.","answer":"3"}`+"\n"+`{"problem":"Compute 2*3.","answer":"6"}`+"\n"), 0o644))
	r = spiral(t, nil, append(args, "--steps", "2")...)
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "lr 1e-06, 24 new tokens a trace", "the header states the defaults taken: a given model's learning rate")
	require.Contains(t, r.stdout, "checkpoint "+filepath.Join(run, "checkpoints", "ckpt-000002"))
	require.Equal(t, 2, countLines(t, filepath.Join(run, "metrics.jsonl")))
	require.FileExists(t, filepath.Join(run, "training.png"))
	require.Contains(t, r.stdout, "eval   0  held-out pass@1")
	require.Contains(t, r.stdout, "eval   2  held-out pass@1")
	require.Equal(t, 2, countLines(t, filepath.Join(run, "eval.jsonl")), "steps 0 and 2")
	var final report.RSA
	require.NoError(t, report.ReadJSON(filepath.Join(run, "rsa.json"), &final))
	require.Equal(t, []string{"held.jsonl:0", "held.jsonl:1"}, final.Meta.ProblemIDs, "the final RSA report lists the held-out problems")
	var first map[string]any
	line := firstLine(t, filepath.Join(run, "metrics.jsonl"))
	require.NoError(t, json.Unmarshal([]byte(line), &first))
	for _, k := range []string{"search", "aggregate", "informative_fraction", "entropy", "grad_norm", "lr", "loss"} {
		require.Contains(t, first, k)
	}

	// Resume: a longer run continues from step 2.
	r = spiral(t, nil, append(args, "--steps", "3")...)
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "resumed from")
	require.Contains(t, r.stdout, "(step 2)")
	require.Equal(t, 3, countLines(t, filepath.Join(run, "metrics.jsonl")))

	// Another algorithm in the same directory is refused.
	r = spiral(t, nil, append(args, "--steps", "4", "--algo", "grpo")...)
	require.Equal(t, 2, r.code, r.stderr)
	require.Contains(t, r.stderr, "--fresh")

	// --fresh starts over and keeps the previous run aside.
	fresh := filepath.Join(dir, "fresh")
	fargs := append([]string{}, args...)
	for i, a := range fargs {
		if a == run {
			fargs[i] = fresh
		}
	}
	r = spiral(t, nil, append(fargs, "--steps", "1", "--eval-every", "0")...)
	require.Equal(t, 0, r.code, r.stderr)
	r = spiral(t, nil, append(fargs, "--steps", "1", "--eval-every", "0", "--fresh", "--algo", "grpo")...)
	require.Equal(t, 0, r.code, r.stderr)
	require.NotContains(t, r.stdout, "resumed")
	prev, err := filepath.Glob(filepath.Join(fresh, "previous-*", "checkpoints", "ckpt-000001"))
	require.NoError(t, err)
	require.Len(t, prev, 1, "the previous run's checkpoint is kept aside")
	require.Equal(t, 1, countLines(t, filepath.Join(fresh, "metrics.jsonl")))

	// Two aggregation rounds: the second reads the first's traces, and
	// metrics.jsonl splits the aggregation reward by round.
	rounds := filepath.Join(dir, "rounds")
	r = spiral(t, nil, "train", "--model", sft, "--out", rounds, "--problems", "2", "--n1", "4", "--k", "2", "--n", "2", "--n2", "2", "--agg-rounds", "2",
		"--max-new-tokens", "24", "--steps", "1", "--eval-every", "0", "--final-rsa-steps", "0", "--quiet")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, " -> ", "the step line gives each round's reward")
	var split struct {
		Aggregate       struct{ Traces int }   `json:"aggregate"`
		AggregateRounds []struct{ Traces int } `json:"aggregate_rounds"`
	}
	require.NoError(t, json.Unmarshal([]byte(firstLine(t, filepath.Join(rounds, "metrics.jsonl"))), &split))
	require.Len(t, split.AggregateRounds, 2)
	require.Equal(t, split.AggregateRounds[0].Traces, split.AggregateRounds[1].Traces, "K x N2 traces a problem in each round")
	require.Equal(t, split.Aggregate.Traces, 2*split.AggregateRounds[0].Traces)

	ev := filepath.Join(dir, "eval")
	for _, mode := range []string{"passk", "sequential", "rsa"} {
		r = spiral(t, nil, "eval", "--model", sft, "--checkpoint", filepath.Join(run, "checkpoints"), "--mode", mode, "--limit", "3",
			"--samples", "2", "--rsa-steps", "1", "--population", "2", "--subset", "2", "--max-new-tokens", "16", "--out", ev, "--quiet", "--traces")
		require.Equal(t, 0, r.code, "%s: %s", mode, r.stderr)
		require.FileExists(t, filepath.Join(ev, mode+".json"))
		require.FileExists(t, filepath.Join(ev, mode+".png"))
		// --traces: every judged trace, 3 problems x 2 samples (RSA: x 2 steps).
		want := 3 * 2
		if mode == "rsa" {
			want *= 2
		}
		require.Equal(t, want, countLines(t, filepath.Join(ev, mode+".traces.jsonl")), mode)
		require.NoFileExists(t, filepath.Join(ev, mode+".traces.jsonl.partial"))
	}
	// An evaluation without --traces into that --out removes the earlier
	// one's traces, which would pass for its own.
	r = spiral(t, nil, "eval", "--model", sft, "--mode", "passk", "--limit", "3", "--samples", "2", "--max-new-tokens", "16", "--out", ev, "--quiet")
	require.Equal(t, 0, r.code, r.stderr)
	require.NoFileExists(t, filepath.Join(ev, "passk.traces.jsonl"))
	require.Contains(t, r.stdout, "removed "+filepath.Join(ev, "passk.traces.jsonl")+", an earlier evaluation's")
	require.FileExists(t, filepath.Join(ev, "rsa.traces.jsonl"), "another mode's traces stay")

	// A model warm-started on the embedded task is evaluated on it with
	// that task's trace length, not a given model's thousands of tokens.
	short := filepath.Join(dir, "short")
	r = spiral(t, nil, "eval", "--model", sft, "--mode", "passk", "--limit", "1", "--samples", "1", "--out", short, "--quiet")
	require.Equal(t, 0, r.code, r.stderr)
	var rep report.PassAtK
	require.NoError(t, report.ReadJSON(filepath.Join(short, "passk.json"), &rep))
	require.Equal(t, "96", rep.Meta.Extra["max_new_tokens"], "%+v", rep.Meta)

	r = spiral(t, nil, "plot", "--out", filepath.Join(ev, "cmp.png"), filepath.Join(ev, "passk.json"), filepath.Join(short, "passk.json"))
	require.Equal(t, 0, r.code, r.stderr)
	require.FileExists(t, filepath.Join(ev, "cmp.png"))
	r = spiral(t, nil, "plot", filepath.Join(ev, "passk.json"), filepath.Join(ev, "rsa.json"))
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "one mode")

	exp := filepath.Join(dir, "exported", "deeper") // export creates the directory
	r = spiral(t, nil, "export", "--model", sft, "--checkpoint", filepath.Join(run, "checkpoints"), "--out", filepath.Join(exp, "model.onnx"))
	require.Equal(t, 0, r.code, r.stderr)
	// The run directory itself names its newest checkpoint too.
	byRun := filepath.Join(dir, "exported-by-run", "model.onnx")
	r = spiral(t, nil, "export", "--model", sft, "--checkpoint", run, "--out", byRun)
	require.Equal(t, 0, r.code, r.stderr)
	want, err := os.ReadFile(filepath.Join(exp, "model.onnx"))
	require.NoError(t, err)
	got, err := os.ReadFile(byRun)
	require.NoError(t, err)
	require.True(t, bytes.Equal(want, got), "the same checkpoint exported")
	r = spiral(t, nil, "generate", "--model", filepath.Join(exp, "model.onnx"), "--tokenizer", filepath.Join(sft, "tokenizer.json"),
		"--max-new-tokens", "8", "--temperature", "0", "Compute 2+3.")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "=== prompt 0, sample 0")
	// A raw prompt near the context is warned of; an empty one refused.
	r = spiral(t, nil, "generate", "--model", filepath.Join(exp, "model.onnx"), "--raw", "--max-new-tokens", "8", strings.Repeat("1", 4090))
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stderr, "prompt 0 is 4090 tokens: with --max-new-tokens 8 it passes the model's 4096 positions, so its completions stop at 6 new tokens")
	r = spiral(t, nil, "generate", "--model", filepath.Join(exp, "model.onnx"), "--raw", "")
	require.Equal(t, 2, r.code, r.stderr)
	require.Contains(t, r.stderr, "prompt 0 is empty")

	// The Hugging Face export: transformers' names and [out, in] layouts,
	// the checkpoint's values, config and tokenizer beside them. Of the
	// run above, whose model, 3 sft steps from its initialisation,
	// answers nothing right: each of its steps said "no update" and its
	// checkpoint holds the sft weights, which an export ignoring
	// --checkpoint would write too. So of a step of the embedded model
	// as well, whose traces finish within 128 tokens (at --seed 9 its
	// first step updates): its export must hold the trained values, not
	// the embedded ones.
	trainedRun := filepath.Join(dir, "trained")
	r = spiral(t, nil, "train", "--out", trainedRun, "--steps", "1", "--checkpoint-every", "1", "--problems", "2", "--n1", "4", "--k", "2", "--n", "2", "--n2", "2",
		"--max-new-tokens", "128", "--eval-every", "0", "--final-rsa-steps", "0", "--seed", "9", "--quiet")
	require.Equal(t, 0, r.code, r.stderr)
	var step map[string]any
	require.NoError(t, json.Unmarshal([]byte(firstLine(t, filepath.Join(trainedRun, "metrics.jsonl"))), &step))
	require.True(t, step["no_update"] != true && step["update_skipped"] == nil, "the embedded model's step updated nothing: %v", step)
	for _, c := range []struct {
		name   string
		model  []string // --model, or none: the embedded model
		run    string
		layers int
	}{
		{"fresh", []string{"--model", sft}, run, 2},
		{"embedded", nil, trainedRun, 3},
	} {
		hf := filepath.Join(dir, "hf-"+c.name)
		r = spiral(t, nil, append([]string{"export", "--format", "hf", "--checkpoint", filepath.Join(c.run, "checkpoints"), "--out", hf}, c.model...)...)
		require.Equal(t, 0, r.code, "%s: %s", c.name, r.stderr)
		for _, name := range []string{"config.json", "tokenizer.json"} {
			require.FileExists(t, filepath.Join(hf, name))
		}
		exported := readWeights(t, hf)
		ckpts, err := filepath.Glob(filepath.Join(c.run, "checkpoints", "ckpt-*"))
		require.NoError(t, err)
		require.NotEmpty(t, ckpts)
		trained := readWeights(t, ckpts[len(ckpts)-1])
		require.Equal(t, 2+c.layers*11, exported.Len(), "%s: embedding, final norm and 11 tensors a layer; the tied head left out", c.name)
		_, head := exported.Get("lm_head.weight")
		require.False(t, head, c.name)
		norm, _ := exported.Get("model.norm.weight")
		normT, _ := trained.Get("model.norm.weight")
		require.Equal(t, normT.Data, norm.Data, c.name)
		q, _ := exported.Get("model.layers.1.self_attn.q_proj.weight")
		qt, _ := trained.Get("model.layers.1.self_attn.q_proj.weight")
		require.Equal(t, []int64{qt.Shape[1], qt.Shape[0]}, q.Shape, "%s: nn.Linear layout [out, in]", c.name)
		rows, cols := int(q.Shape[0]), int(q.Shape[1])
		for i := range rows {
			for j := range cols {
				require.Equal(t, qt.Data[j*rows+i], q.Data[i*cols+j], c.name)
			}
		}
	}
	// The embedded model's own weights, exported without --checkpoint:
	// the trained step moved the values compared above.
	own := filepath.Join(dir, "hf-own")
	r = spiral(t, nil, "export", "--format", "hf", "--out", own)
	require.Equal(t, 0, r.code, r.stderr)
	initial, trained := readWeights(t, own), readWeights(t, filepath.Join(dir, "hf-embedded"))
	for _, name := range []string{"model.norm.weight", "model.layers.1.self_attn.q_proj.weight"} {
		a, _ := initial.Get(name)
		b, _ := trained.Get(name)
		require.NotEqual(t, a.Data, b.Data, "%s: the trained step left it as the embedded model's", name)
	}
}

// TestInterruptSavesCheckpoint sends SIGINT to a training run and checks
// that it exits with a checkpoint of its last completed step, from which
// the next run resumes.
func TestInterruptSavesCheckpoint(t *testing.T) {
	requireRuntime(t)
	dir := t.TempDir()
	m := filepath.Join(dir, "init")
	r := spiral(t, nil, "init-model", "--out", m)
	require.Equal(t, 0, r.code, r.stderr)
	run := filepath.Join(dir, "run")
	// The resumed runs' final RSA on 2 held-out problems, not 64: it took
	// 49 s of the test's 60.
	shape := []string{"--problems", "2", "--n1", "4", "--k", "2", "--n", "2", "--n2", "2", "--max-new-tokens", "24", "--eval-problems", "2"}
	cmd, stderr := signalAtLine(t, syscall.SIGINT, "step ", 2*time.Minute, append([]string{"train", "--model", m, "--out", run, "--steps", "1000", "--checkpoint-every", "1000", "--quiet"}, shape...)...)
	require.Equal(t, 130, cmd.ProcessState.ExitCode(), stderr)
	require.Contains(t, stderr, "rerun the command to resume")
	require.Contains(t, stderr, "spiral train: interrupted\n")
	require.NotContains(t, stderr, "context canceled")
	entries, err := os.ReadDir(filepath.Join(run, "checkpoints"))
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	require.Contains(t, strings.Join(names, " "), "ckpt-", "a checkpoint was written on interrupt")
	// Other settings are refused, naming them, unless --override.
	r = spiral(t, nil, "train", "--model", m, "--out", run, "--steps", "1", "--quiet")
	require.Equal(t, 2, r.code, r.stderr)
	require.Contains(t, r.stderr, "rl.pipeline.n1 (--n1): 4 -> 8")
	require.Contains(t, r.stderr, "--override")
	r = spiral(t, nil, append([]string{"train", "--model", m, "--out", run, "--steps", "1", "--quiet"}, shape...)...)
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "resumed from")
	r = spiral(t, nil, "train", "--model", m, "--out", run, "--steps", "1", "--quiet", "--override", "--max-new-tokens", "24", "--eval-problems", "2")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stderr, "--override: continuing")
}

// TestInterruptInAPipeline: Ctrl-C in a terminal reaches every process
// of a pipeline, `spiral train | tee train.log` as well: the reader of
// spiral's stdout is gone (here its read end closed) while the run
// stops. The run still saves its last completed step and exits 130; a
// line written to the broken pipe while it stopped ended it by SIGPIPE
// (exit 141) before its checkpoint was written, the steps since the
// last one lost.
func TestInterruptInAPipeline(t *testing.T) {
	requireRuntime(t)
	run := filepath.Join(t.TempDir(), "run")
	cmd := exec.Command(binary, "train", "--out", run, "--steps", "1000", "--checkpoint-every", "1000", "--quiet", "--threads", "1",
		"--problems", "2", "--n1", "4", "--k", "2", "--n", "2", "--n2", "2", "--max-new-tokens", "24", "--eval-every", "0", "--final-rsa-steps", "0")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	sc := bufio.NewScanner(stdout)
	for sc.Scan() && !strings.HasPrefix(sc.Text(), "step ") { // up to the first step's line
	}
	// The signal first: a line written to the closed pipe before it is
	// spiral train | head, which ends spiral as any program.
	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	require.NoError(t, stdout.Close(), "the pipe's reader ends (tee, killed by the same Ctrl-C)")
	_ = cmd.Wait()
	ws := cmd.ProcessState.Sys().(syscall.WaitStatus)
	require.False(t, ws.Signaled(), "ended by %v: %s", ws.Signal(), stderr.String())
	require.Equal(t, 130, cmd.ProcessState.ExitCode(), stderr.String())
	require.Contains(t, stderr.String(), "spiral train: interrupted\n")
	ckpts, err := filepath.Glob(filepath.Join(run, "checkpoints", "ckpt-*", checkpoint.StateFile))
	require.NoError(t, err)
	require.NotEmpty(t, ckpts, "the last completed step is saved: %s", stderr.String())
}

// TestHangupSavesCheckpoint: a SIGHUP (the ssh session or terminal of
// a training run gone) stops the run as SIGTERM does, saving its last
// completed step, exit 130: it ended the run at once, the steps since
// its last checkpoint lost. Under nohup, which starts spiral with SIGHUP
// ignored, the run carries on to its end untouched.
func TestHangupSavesCheckpoint(t *testing.T) {
	requireRuntime(t)
	for _, c := range []struct {
		name     string
		nohup    bool
		steps    string
		wantCode int
	}{
		{"hangup", false, "1000", 130},
		{"under nohup", true, "3", 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			run := filepath.Join(t.TempDir(), "run")
			args := []string{"train", "--out", run, "--steps", c.steps, "--checkpoint-every", "1000", "--quiet", "--threads", "1",
				"--problems", "2", "--n1", "4", "--k", "2", "--n", "2", "--n2", "2", "--max-new-tokens", "24", "--eval-every", "0", "--final-rsa-steps", "0"}
			cmd := exec.Command(binary, args...)
			if c.nohup {
				// As nohup starts it: SIGHUP ignored, which exec keeps.
				cmd = exec.Command("sh", append([]string{"-c", `trap "" HUP; exec "$0" "$@"`, binary}, args...)...)
			}
			cmd, stderr := signalCmdAfterLine(t, cmd, syscall.SIGHUP, "step ", 0, 2*time.Minute)
			ws := cmd.ProcessState.Sys().(syscall.WaitStatus)
			require.False(t, ws.Signaled(), "ended by %v: %s", ws.Signal(), stderr)
			require.Equal(t, c.wantCode, cmd.ProcessState.ExitCode(), stderr)
			if c.nohup {
				require.NotContains(t, stderr, "stopping")
				return
			}
			require.Contains(t, stderr, "spiral: SIGHUP: stopping")
			require.Contains(t, stderr, "spiral train: interrupted\n")
			ckpts, err := filepath.Glob(filepath.Join(run, "checkpoints", "ckpt-*", checkpoint.StateFile))
			require.NoError(t, err)
			require.NotEmpty(t, ckpts, "the last completed step is saved: %s", stderr)
		})
	}
}

func countLines(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return strings.Count(string(b), "\n")
}

func firstLine(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return strings.SplitN(string(b), "\n", 2)[0]
}

// TestDeterministicResume: with --deterministic, a run interrupted by
// Ctrl-C and resumed ends byte-identical to an uninterrupted one: the
// same weights and AdamW moments in the final checkpoint, and the same
// metrics apart from wall times.
func TestDeterministicResume(t *testing.T) {
	requireRuntime(t)
	dir := t.TempDir()
	// The embedded model, whose traces finish within 128 tokens: a
	// freshly initialised one answered nothing right, no step was
	// informative, and the weights compared were the initial ones.
	shape := []string{"--problems", "2", "--n1", "4", "--k", "2", "--n", "2", "--n2", "2", "--max-new-tokens", "128",
		"--checkpoint-every", "1", "--eval-every", "0", "--final-rsa-steps", "0", "--deterministic", "--quiet", "--seed", "9"}
	// The straight run beside the interrupted one (--deterministic runs
	// one thread: two at once on two cores).
	straight := filepath.Join(dir, "straight")
	var wg sync.WaitGroup
	t.Cleanup(wg.Wait) // before dir's removal, should the test stop early
	var rs result
	wg.Go(func() { rs = spiral(t, nil, append([]string{"train", "--out", straight, "--steps", "4"}, shape...)...) })

	// The same run, interrupted after its first step, then resumed.
	resumed := filepath.Join(dir, "resumed")
	signalAtLine(t, syscall.SIGINT, "step ", 2*time.Minute, append([]string{"train", "--out", resumed, "--steps", "4"}, shape...)...)
	r := spiral(t, nil, append([]string{"train", "--out", resumed, "--steps", "4"}, shape...)...)
	wg.Wait()
	require.Equal(t, 0, rs.code, rs.stderr)
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "resumed from")

	for _, f := range []string{"model.safetensors", "optimizer.safetensors"} {
		a, err := os.ReadFile(filepath.Join(straight, "checkpoints", "ckpt-000004", f))
		require.NoError(t, err)
		b, err := os.ReadFile(filepath.Join(resumed, "checkpoints", "ckpt-000004", f))
		require.NoError(t, err)
		require.Equal(t, a, b, "%s differs between the straight and the resumed run", f)
	}
	metrics := withoutTimes(t, filepath.Join(straight, "metrics.jsonl"))
	require.Equal(t, metrics, withoutTimes(t, filepath.Join(resumed, "metrics.jsonl")))
	// Steps on either side of the interruption trained: weights and
	// moments no step changed are the same in any two runs.
	require.Len(t, metrics, 4)
	for _, m := range metrics {
		require.True(t, m["no_update"] != true && m["update_skipped"] == nil, "step %v updated nothing", m["step"])
	}
}

// withoutTimes reads a metrics log with the wall-time fields removed.
func withoutTimes(t *testing.T, path string) []map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var out []map[string]any
	var strip func(v any)
	strip = func(v any) {
		if m, ok := v.(map[string]any); ok {
			for k, x := range m {
				if strings.Contains(k, "second") {
					delete(m, k)
					continue
				}
				strip(x)
			}
		}
	}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &m))
		strip(m)
		out = append(out, m)
	}
	return out
}

// readWeights reads the model.safetensors of dir (a checkpoint or an HF
// export) into a store shaped by its header; every tensor must be F32.
func readWeights(t *testing.T, dir string) *params.Store {
	t.Helper()
	w, err := checkpoint.NewStoreFor(dir)
	require.NoError(t, err)
	f, err := os.Open(filepath.Join(dir, checkpoint.ModelFile))
	require.NoError(t, err)
	defer f.Close()
	fi, err := f.Stat()
	require.NoError(t, err)
	_, err = w.ReadSafetensors(f, fi.Size(), nil)
	require.NoError(t, err, dir)
	return w
}

// TestLoRAWorkflow trains LoRA adapters on the embedded model: the
// checkpoints hold the adapters and their moments only, a run resumes
// from them (and refuses another rank), eval and generate read them, and
// the three exports are written: hf (merged), onnx (merged; it generates)
// and peft (transformers' module names, [rank, in] and [out, rank]
// layouts).
func TestLoRAWorkflow(t *testing.T) {
	requireRuntime(t)
	dir := t.TempDir()
	run := filepath.Join(dir, "run")
	ckpts := filepath.Join(run, "checkpoints")
	// The final RSA through the adapters on 2 held-out problems, not 64
	// (55 s of each run's 60). The embedded model's traces run to about
	// 70 tokens: at 24 every one was cut and no step trained.
	args := []string{"train", "--out", run, "--lora-rank", "4", "--lora-alpha", "8", "--problems", "2", "--n1", "4", "--k", "2", "--n", "2", "--n2", "2",
		"--max-new-tokens", "128", "--checkpoint-every", "1", "--eval-every", "0", "--eval-problems", "2", "--quiet"}
	r := spiral(t, nil, append(args, "--steps", "2")...)
	require.Equal(t, 0, r.code, r.stderr)
	ckpt := filepath.Join(ckpts, "ckpt-000002")
	adapters := readWeights(t, ckpt)
	const layers, projections = 3, 7 // the embedded model
	require.Equal(t, 2*projections*layers, adapters.Len(), "A and B of every projection, nothing else")
	for _, name := range adapters.Names() {
		require.Regexp(t, `^model\.layers\.\d+\.(self_attn|mlp)\.[a-z]+_proj\.lora_[AB]$`, name)
	}
	q, _ := adapters.Get("model.layers.0.self_attn.q_proj.lora_A")
	require.Equal(t, int64(4), q.Shape[1], "A is [in, rank]")
	// The steps trained the adapters: B starts at zero, and exports of
	// untrained adapters would hide a defect in exporting trained ones.
	metrics, err := os.ReadFile(filepath.Join(run, "metrics.jsonl"))
	require.NoError(t, err)
	require.True(t, slices.ContainsFunc(jsonLines[map[string]any](t, string(metrics)), func(m map[string]any) bool {
		return m["no_update"] != true && m["update_skipped"] == nil
	}), "no step updated the adapters")
	for _, name := range adapters.Names() {
		if b, _ := adapters.Get(name); strings.HasSuffix(name, ".lora_B") {
			require.True(t, slices.ContainsFunc(b.Data, func(v float32) bool { return v != 0 }), "%s is all zero: untrained", name)
		}
	}
	require.Len(t, safetensorsHeader(t, filepath.Join(ckpt, checkpoint.OptimizerFile)).Tensors, 2*adapters.Len(), "two AdamW moments per adapter tensor")

	r = spiral(t, nil, append(args, "--steps", "3")...)
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "(step 2)")
	r = spiral(t, nil, append(args, "--steps", "4", "--lora-rank", "8")...)
	require.Equal(t, 2, r.code, "another rank cannot resume these adapters")
	require.Contains(t, r.stderr, "use the same LoRA flags")

	r = spiral(t, nil, "eval", "--checkpoint", ckpts, "--limit", "3", "--samples", "2", "--out", filepath.Join(dir, "eval"), "--quiet")
	require.Equal(t, 0, r.code, r.stderr)
	r = spiral(t, nil, "generate", "--checkpoint", ckpts, "--max-new-tokens", "8", "Compute 2+3.")
	require.Equal(t, 0, r.code, r.stderr)

	hf := filepath.Join(dir, "hf")
	r = spiral(t, nil, "export", "--format", "hf", "--checkpoint", ckpts, "--out", hf)
	require.Equal(t, 0, r.code, r.stderr)
	mergedW := readWeights(t, hf)
	require.Equal(t, 2+11*layers, mergedW.Len())
	// The merge: W + (alpha / rank) A B, in the newest checkpoint's
	// adapters, over the embedded model's own export.
	base := filepath.Join(dir, "base")
	r = spiral(t, nil, "export", "--format", "hf", "--out", base)
	require.Equal(t, 0, r.code, r.stderr)
	baseW, newest := readWeights(t, base), readWeights(t, filepath.Join(ckpts, "ckpt-000003"))
	const scale = 8.0 / 4 // --lora-alpha / --lora-rank
	for _, module := range []string{"model.layers.0.self_attn.q_proj", "model.layers.2.mlp.down_proj"} {
		w, _ := baseW.Get(module + ".weight")
		m, _ := mergedW.Get(module + ".weight")
		la, _ := newest.Get(module + ".lora_A")
		lb, _ := newest.Get(module + ".lora_B")
		rows, cols, rank := int(m.Shape[0]), int(m.Shape[1]), int(la.Shape[1]) // [out, in], A [in, rank], B [rank, out]
		moved := false
		for o := range rows {
			for i := range cols {
				var ab float64
				for k := range rank {
					ab += float64(la.Data[i*rank+k]) * float64(lb.Data[k*rows+o])
				}
				require.InDelta(t, float64(w.Data[o*cols+i])+scale*ab, float64(m.Data[o*cols+i]), 1e-6, "%s [%d, %d]", module, o, i)
				moved = moved || m.Data[o*cols+i] != w.Data[o*cols+i]
			}
		}
		require.True(t, moved, "%s merged as the base", module)
	}
	merged := filepath.Join(dir, "merged", "model.onnx")
	r = spiral(t, nil, "export", "--checkpoint", ckpts, "--out", merged)
	require.Equal(t, 0, r.code, r.stderr)
	r = spiral(t, nil, "generate", "--model", merged, "--tokenizer", filepath.Join(hf, "tokenizer.json"), "--max-new-tokens", "8", "Compute 2+3.")
	require.Equal(t, 0, r.code, r.stderr)

	peft := filepath.Join(dir, "peft")
	r = spiral(t, nil, "export", "--format", "peft", "--checkpoint", ckpts, "--out", peft)
	require.Equal(t, 0, r.code, r.stderr)
	require.FileExists(t, filepath.Join(peft, "adapter_config.json"))
	// The base it names: none known (spiral's own model records no
	// Hugging Face id), or --base-model's.
	baseOf := func(dir string) any {
		var c map[string]any
		b, err := os.ReadFile(filepath.Join(dir, "adapter_config.json"))
		require.NoError(t, err)
		require.NoError(t, json.Unmarshal(b, &c))
		v, ok := c["base_model_name_or_path"]
		require.True(t, ok)
		return v
	}
	require.Nil(t, baseOf(peft))
	require.NotContains(t, r.stderr, "names no base model", "the embedded model has no Hugging Face base to name")
	named := filepath.Join(dir, "peft-named")
	r = spiral(t, nil, "export", "--format", "peft", "--checkpoint", ckpts, "--out", named, "--base-model", hf)
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, hf, baseOf(named))
	// A relative --base-model is recorded absolute: peft resolves it
	// against the loader's working directory, not the adapter's.
	relative := filepath.Join(dir, "peft-relative")
	r = spiralIn(t, dir, nil, "export", "--format", "peft", "--checkpoint", ckpts, "--out", relative, "--base-model", "hf")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, hf, baseOf(relative))
	// Without --base-model, the Hugging Face id that config.json beside
	// --model records (optimum writes it as _name_or_path): here a copy of
	// the embedded model whose config.json says where it came from.
	withID := filepath.Join(dir, "with-id")
	require.NoError(t, os.MkdirAll(withID, 0o755))
	for _, name := range []string{"model.onnx", "tokenizer.json"} {
		b, err := os.ReadFile(filepath.Join("..", "model", "embedded", "assets", name))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(withID, name), b, 0o644))
	}
	var cfg map[string]any
	b, err := os.ReadFile(filepath.Join("..", "model", "embedded", "assets", "config.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &cfg))
	cfg["_name_or_path"] = "Qwen/Qwen3-0.6B"
	b, err = json.Marshal(cfg)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(withID, "config.json"), b, 0o644))
	fromConfig := filepath.Join(dir, "peft-from-config")
	r = spiral(t, nil, "export", "--format", "peft", "--checkpoint", ckpts, "--model", withID, "--out", fromConfig)
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, "Qwen/Qwen3-0.6B", baseOf(fromConfig))
	require.NotContains(t, r.stderr, "names no base model")
	// A model directory whose config.json records none: null, said.
	delete(cfg, "_name_or_path")
	b, err = json.Marshal(cfg)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(withID, "config.json"), b, 0o644))
	unnamed := filepath.Join(dir, "peft-unnamed")
	r = spiral(t, nil, "export", "--format", "peft", "--checkpoint", ckpts, "--model", withID, "--out", unnamed)
	require.Equal(t, 0, r.code, r.stderr)
	require.Nil(t, baseOf(unnamed))
	require.Contains(t, r.stderr, "spiral: warning: the peft adapter names no base model (base_model_name_or_path null): "+filepath.Join(withID, "config.json")+" records no _name_or_path; give --base-model")
	h := safetensorsHeader(t, filepath.Join(peft, "adapter_model.safetensors"))
	require.Len(t, h.Tensors, adapters.Len())
	a := h.Find("base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight")
	require.NotNil(t, a)
	require.Equal(t, []int64{q.Shape[1], q.Shape[0]}, a.Shape, "peft's lora_A is [rank, in]")
	// The trained B, not zeros.
	b, err = os.ReadFile(filepath.Join(peft, "adapter_model.safetensors"))
	require.NoError(t, err)
	for _, ti := range h.Tensors {
		if strings.HasSuffix(ti.Name, ".lora_B.weight") {
			data := b[h.DataStart+ti.Begin : h.DataStart+ti.End]
			require.True(t, slices.ContainsFunc(data, func(c byte) bool { return c != 0 }), "%s is all zero in the peft export", ti.Name)
		}
	}
}

// safetensorsHeader reads and validates the header of the safetensors
// file at path.
func safetensorsHeader(t *testing.T, path string) *params.Header {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	fi, err := f.Stat()
	require.NoError(t, err)
	h, err := params.ReadHeader(f, fi.Size())
	require.NoError(t, err, path)
	return h
}

// shortTrain trains 2 steps of the smallest SPIRAL shape with a
// checkpoint after each (args add --model and the like) into run.
func shortTrain(t *testing.T, run string, args ...string) result {
	t.Helper()
	return spiral(t, nil, append([]string{"train", "--out", run, "--steps", "2", "--checkpoint-every", "1", "--problems", "2", "--n1", "4", "--k", "2",
		"--n", "2", "--n2", "2", "--max-new-tokens", "16", "--eval-every", "0", "--final-rsa-steps", "0", "--threads", "1", "--quiet"}, args...)...)
}

// TestResumeFromAnotherDirectory: a run given relative --data and
// --eval-data resumes from another working directory, where the same
// files are spelled otherwise: it was refused, "../run holds a run of
// embedded on p.jsonl (spiral); this one is embedded on ../p.jsonl
// (spiral): use another --out, or --fresh", the checkpoints recording the
// paths as given only.
func TestResumeFromAnotherDirectory(t *testing.T) {
	requireRuntime(t)
	dir := t.TempDir()
	sub := filepath.Join(dir, "sub")
	require.NoError(t, os.Mkdir(sub, 0o755))
	rows := `{"id": "a", "problem": "Compute 2+2.", "answer": "4"}` + "\n" + `{"id": "b", "problem": "Compute 1+2.", "answer": "3"}` + "\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, "p.jsonl"), []byte(rows), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "e.jsonl"), []byte(`{"id": "c", "problem": "Compute 3+3.", "answer": "6"}`+"\n"), 0o644))
	args := func(prefix string, steps string) []string {
		return []string{"train", "--data", prefix + "p.jsonl", "--eval-data", prefix + "e.jsonl", "--out", prefix + "run", "--steps", steps,
			"--checkpoint-every", "1", "--problems", "2", "--n1", "4", "--k", "2", "--n", "2", "--n2", "2", "--max-new-tokens", "16",
			"--eval-every", "1", "--eval-samples", "2", "--final-rsa-steps", "0", "--threads", "1", "--quiet"}
	}
	r := spiralIn(t, dir, nil, args("", "1")...)
	require.Equal(t, 0, r.code, r.stderr)
	r = spiralIn(t, sub, nil, args("../", "2")...)
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "resumed from ../run/checkpoints/ckpt-000001 (step 1)")
	// Another file of the same rows (the file moved, or copied) is the
	// run's data set by its problems' digest; one of other rows is not.
	same := filepath.Join(dir, "q.jsonl")
	require.NoError(t, os.WriteFile(same, []byte(rows), 0o644))
	r = spiralIn(t, dir, nil, append(args("", "3"), "--data", same)...)
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "resumed from run/checkpoints/ckpt-000002 (step 2)")
	other := filepath.Join(dir, "o.jsonl")
	require.NoError(t, os.WriteFile(other, []byte(strings.ReplaceAll(rows, "2+2", "2+3")), 0o644))
	r = spiralIn(t, dir, nil, append(args("", "4"), "--data", other)...)
	require.Equal(t, 2, r.code, r.stderr)
	require.Contains(t, r.stderr, "run holds a run of embedded on "+same+" (spiral); this one is embedded on "+other+" (spiral)")
}

// TestResumeOtherTemplates: a rerun with other prompt templates is a
// settings difference, named with its flags, like any other: refused
// unless --override, which goes on with them.
func TestResumeOtherTemplates(t *testing.T) {
	requireRuntime(t)
	dir := t.TempDir()
	run := filepath.Join(dir, "run")
	r := shortTrain(t, run)
	require.Equal(t, 0, r.code, r.stderr)
	tmpl := filepath.Join(dir, "search.txt")
	require.NoError(t, os.WriteFile(tmpl, []byte("{{.Problem}} =\n"), 0o644))
	r = shortTrain(t, run, "--steps", "3", "--search-template", tmpl)
	require.Equal(t, 2, r.code, r.stderr)
	require.Regexp(t, `holds a run with other settings: sampling\.search_template \(--search-template\): "[0-9a-f]{32}" -> "[0-9a-f]{32}"; rerun with --override`, r.stderr)
	r = shortTrain(t, run, "--steps", "3", "--search-template", tmpl, "--override")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "(step 2)")
	require.Contains(t, r.stderr, "--override: continuing "+run+" with new settings: sampling.search_template")
}

// TestDamagedNewestCheckpoint: given a run's checkpoints/ directory whose
// newest checkpoint is damaged, eval, generate and export take the older
// one, as train resumes from it, each with train's warning naming the
// file skipped and why; the damaged checkpoint named itself is refused
// with an error naming it, and nothing is written.
func TestDamagedNewestCheckpoint(t *testing.T) {
	requireRuntime(t)
	trained := filepath.Join(t.TempDir(), "run")
	r := shortTrain(t, trained)
	require.Equal(t, 0, r.code, r.stderr)
	damages := []struct {
		name, file string
		damage     func(t *testing.T, path string)
		why        string
	}{
		{"weights truncated", checkpoint.ModelFile, func(t *testing.T, p string) { require.NoError(t, os.Truncate(p, 1000)) }, "truncated"},
		{"weights missing", checkpoint.ModelFile, func(t *testing.T, p string) { require.NoError(t, os.Remove(p)) }, "no such file"},
		{"state.json corrupted", checkpoint.StateFile, func(t *testing.T, p string) {
			require.NoError(t, os.WriteFile(p, []byte(`{"format_version":1,"step":`), 0o644))
		}, "corrupted"},
		// Valid JSON naming another model: damage (the checksum of the
		// settings says so), not a checkpoint of another model, which
		// would stop the search.
		{"model id in state.json garbled", checkpoint.StateFile, func(t *testing.T, p string) {
			b, err := os.ReadFile(p)
			require.NoError(t, err)
			i := bytes.Index(b, []byte(`"model_id":"`)) + len(`"model_id":"`)
			b[i] ^= 0x01
			require.NoError(t, os.WriteFile(p, b, 0o644))
		}, "corrupted"},
	}
	for _, d := range damages {
		t.Run(d.name, func(t *testing.T) {
			dir := t.TempDir()
			run := filepath.Join(dir, "run")
			require.NoError(t, os.CopyFS(run, os.DirFS(trained)))
			ckpts := filepath.Join(run, "checkpoints")
			newest, older := filepath.Join(ckpts, "ckpt-000002"), filepath.Join(ckpts, "ckpt-000001")
			d.damage(t, filepath.Join(newest, d.file))
			warning := regexp.MustCompile(`(?m)^spiral: skipped a damaged checkpoint: checkpoint: .*` + regexp.QuoteMeta(filepath.Join(newest, d.file)) + `.*` + d.why)

			commands := []struct {
				name  string
				args  []string
				check func(t *testing.T, r result)
			}{
				{"eval", []string{"eval", "--checkpoint", ckpts, "--limit", "1", "--samples", "1", "--out", filepath.Join(dir, "eval"), "--threads", "1", "--quiet"},
					func(t *testing.T, r result) {
						var rep report.PassAtK
						require.NoError(t, report.ReadJSON(filepath.Join(dir, "eval", "passk.json"), &rep))
						require.Equal(t, "embedded@run/ckpt-000001", rep.Meta.Model, "the report names the run and checkpoint evaluated")
					}},
				{"generate", []string{"generate", "--checkpoint", ckpts, "--max-new-tokens", "4", "--threads", "1", "Compute 2+3."},
					func(t *testing.T, r result) { require.Contains(t, r.stdout, "=== prompt 0, sample 0") }},
				{"export", []string{"export", "--checkpoint", ckpts, "--out", filepath.Join(dir, "exported", "model.onnx")},
					func(t *testing.T, r result) {
						require.Contains(t, r.stdout, "with the weights of "+older)
						require.FileExists(t, filepath.Join(dir, "exported", "model.onnx"))
					}},
				{"train resumes", []string{"train", "--out", run, "--steps", "3", "--checkpoint-every", "1", "--problems", "2", "--n1", "4", "--k", "2",
					"--n", "2", "--n2", "2", "--max-new-tokens", "16", "--eval-every", "0", "--final-rsa-steps", "0", "--threads", "1", "--quiet"},
					func(t *testing.T, r result) { require.Contains(t, r.stdout, "resumed from "+older+" (step 1)") }},
			}
			for _, c := range commands {
				r := spiral(t, nil, c.args...)
				require.Equal(t, 0, r.code, "%s: %s", c.name, r.stderr)
				require.Regexp(t, warning, r.stderr, "%s warns as train does, naming the file and why", c.name)
				c.check(t, r)
			}

			// The damaged checkpoint named itself: an error naming it.
			d.damage(t, filepath.Join(newest, d.file)) // train replaced it
			out := filepath.Join(dir, "refused", "model.onnx")
			for _, args := range [][]string{
				{"export", "--checkpoint", newest, "--out", out},
				{"eval", "--checkpoint", newest, "--limit", "1", "--samples", "1", "--out", filepath.Join(dir, "refused"), "--threads", "1", "--quiet"},
				{"generate", "--checkpoint", newest, "--max-new-tokens", "4", "--threads", "1", "Compute 2+3."},
			} {
				r := spiral(t, nil, args...)
				require.Equal(t, 1, r.code, "%q: %s", args, r.stderr)
				require.Contains(t, r.stderr, "--checkpoint "+newest+": ", args[0])
				require.Contains(t, r.stderr, d.why, args[0])
				require.NotContains(t, r.stderr, "skipped", "%s does not fall back from a checkpoint named itself", args[0])
			}
			require.NoFileExists(t, out)
			require.NoFileExists(t, filepath.Join(dir, "refused", "passk.json"))
		})
	}
}

// TestDamagedNewestDataNote: a newest checkpoint whose weights fail
// their CRC-32C only once read is skipped with a warning that says
// whether the weights now hold partly loaded values: generate loads each
// checkpoint into the same weights (the next one overwrites them all),
// so its warning says so; export gives each checkpoint a fresh store and
// discards the damaged one's, so its warning said "the store now holds
// partly loaded values" untruly and now says "(corrupted)" only.
func TestDamagedNewestDataNote(t *testing.T) {
	requireRuntime(t)
	dir := t.TempDir()
	run := filepath.Join(dir, "run")
	r := shortTrain(t, run)
	require.Equal(t, 0, r.code, r.stderr)
	ckpts := filepath.Join(run, "checkpoints")
	weights := filepath.Join(ckpts, "ckpt-000002", checkpoint.ModelFile)
	b, err := os.ReadFile(weights)
	require.NoError(t, err)
	b[len(b)-1] ^= 0x01 // the data, past the header: found once read
	require.NoError(t, os.WriteFile(weights, b, 0o644))
	skipped := `(?m)^spiral: skipped a damaged checkpoint: checkpoint: ` + regexp.QuoteMeta(weights) + `: CRC-32C [0-9a-f]{8}, state\.json records [0-9a-f]{8} \(corrupted`
	for _, c := range []struct {
		args []string
		note string
	}{
		{[]string{"generate", "--checkpoint", ckpts, "--max-new-tokens", "4", "--threads", "1", "Compute 2+3."}, `; the store now holds partly loaded values\)$`},
		{[]string{"export", "--checkpoint", run, "--format", "onnx", "--out", filepath.Join(dir, "exported", "model.onnx")}, `\)$`},
	} {
		r := spiral(t, nil, c.args...)
		require.Equal(t, 0, r.code, "%s: %s", c.args[0], r.stderr)
		require.Regexp(t, skipped+c.note, r.stderr, c.args[0])
	}
	require.FileExists(t, filepath.Join(dir, "exported", "model.onnx"))
}

// TestExportBesideModel: the onnx export copies the files spiral reads
// beside a model (tokenizer.json, config.json), so the exported file is a
// --model for eval, generate and plan without --tokenizer; a file of that
// name already beside the output is left when it is the same and refused
// (exit 2), before anything is written, when it differs, unless
// --overwrite.
func TestExportBesideModel(t *testing.T) {
	requireRuntime(t)
	dir := t.TempDir()
	src := filepath.Join(dir, "init")
	r := spiral(t, nil, "init-model", "--out", src, "--seed", "3")
	require.Equal(t, 0, r.code, r.stderr)
	run := filepath.Join(dir, "run")
	r = shortTrain(t, run, "--model", src)
	require.Equal(t, 0, r.code, r.stderr)
	ckpts := filepath.Join(run, "checkpoints")
	read := func(path string) string {
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		return string(b)
	}
	otherTok := filepath.Join(dir, "other-tokenizer.json")
	require.NoError(t, os.WriteFile(otherTok, []byte(read(filepath.Join(src, "tokenizer.json"))+"\n"), 0o644))

	cases := []struct {
		name    string
		before  map[string]string // files beside the output beforehand
		args    []string
		code    int
		errHas  []string
		beside  map[string]string // the files beside the output afterwards
		runsOut bool              // eval, generate and plan run on the export
	}{
		{name: "fresh directory", code: 0, runsOut: true,
			beside: map[string]string{"tokenizer.json": filepath.Join(src, "tokenizer.json"), "config.json": filepath.Join(src, "config.json")}},
		{name: "same files already there", code: 0,
			before: map[string]string{"tokenizer.json": filepath.Join(src, "tokenizer.json"), "config.json": filepath.Join(src, "config.json")},
			beside: map[string]string{"tokenizer.json": filepath.Join(src, "tokenizer.json"), "config.json": filepath.Join(src, "config.json")}},
		{name: "another config.json there", code: 2, errHas: []string{"config.json already exists and differs from " + filepath.Join(src, "config.json"), "give --overwrite to replace it, or another --out"},
			before: map[string]string{"config.json": otherTok},
			beside: map[string]string{"config.json": otherTok}},
		{name: "another config.json there, --overwrite", args: []string{"--overwrite"}, code: 0,
			before: map[string]string{"config.json": otherTok},
			beside: map[string]string{"tokenizer.json": filepath.Join(src, "tokenizer.json"), "config.json": filepath.Join(src, "config.json")}},
		{name: "--tokenizer copied", args: []string{"--tokenizer", otherTok}, code: 0, runsOut: true,
			beside: map[string]string{"tokenizer.json": otherTok, "config.json": filepath.Join(src, "config.json")}},
		{name: "--tokenizer missing", args: []string{"--tokenizer", filepath.Join(dir, "absent.json")}, code: 2, errHas: []string{"--tokenizer " + filepath.Join(dir, "absent.json") + ": no such file or directory"}},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			outDir := filepath.Join(dir, fmt.Sprintf("out%d", i))
			out := filepath.Join(outDir, "model.onnx")
			for name, from := range c.before {
				require.NoError(t, os.MkdirAll(outDir, 0o755))
				require.NoError(t, os.WriteFile(filepath.Join(outDir, name), []byte(read(from)), 0o644))
			}
			r := spiral(t, nil, append([]string{"export", "--model", src, "--checkpoint", ckpts, "--out", out}, c.args...)...)
			require.Equal(t, c.code, r.code, r.stdout+r.stderr)
			for _, s := range c.errHas {
				require.Contains(t, r.stderr, s)
			}
			if c.code != 0 {
				require.NoFileExists(t, out, "nothing is written when a file beside it is refused")
			}
			for name, from := range c.beside {
				require.Equal(t, read(from), read(filepath.Join(outDir, name)), name)
			}
			if !c.runsOut {
				return
			}
			r = spiral(t, nil, "eval", "--model", out, "--limit", "1", "--samples", "1", "--out", filepath.Join(outDir, "eval"), "--threads", "1", "--quiet")
			require.Equal(t, 0, r.code, r.stderr)
			r = spiral(t, nil, "generate", "--model", out, "--max-new-tokens", "4", "--threads", "1", "Compute 2+3.")
			require.Equal(t, 0, r.code, r.stderr)
			require.Contains(t, r.stdout, "=== prompt 0, sample 0")
			r = spiral(t, nil, "plan", "--model", out, "--device-memory", "1GB")
			require.Equal(t, 0, r.code, r.stderr)
		})
	}
}

// TestFinalRSAWithoutEvaluations: --final-rsa-steps runs with the
// evaluations during training off, and its report names the held-out
// set as eval does, so that compare reads the two side by side.
func TestFinalRSAWithoutEvaluations(t *testing.T) {
	requireRuntime(t)
	dir := t.TempDir()
	run := filepath.Join(dir, "run")
	r := shortTrain(t, run, "--steps", "1", "--final-rsa-steps", "1", "--eval-problems", "2")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "held-out summary: RSA")
	var trained report.RSA
	require.NoError(t, report.ReadJSON(filepath.Join(run, "rsa.json"), &trained))
	require.Equal(t, "embedded:synth-test", trained.Meta.Dataset)
	require.Equal(t, 2, trained.Meta.Problems)

	base := filepath.Join(dir, "base")
	r = spiral(t, nil, "eval", "--mode", "rsa", "--limit", "2", "--rsa-steps", "1", "--max-new-tokens", "16", "--threads", "1", "--quiet", "--out", base)
	require.Equal(t, 0, r.code, r.stderr)
	r = spiral(t, nil, "compare", filepath.Join(base, "rsa.json"), filepath.Join(run, "rsa.json"))
	require.Equal(t, 0, r.code, r.stderr)
	require.NotContains(t, r.stderr, "different problems")
}

// TestProblemsBeyondData: --problems above the data set's size is warned
// of (a step then draws some problems more than once).
func TestProblemsBeyondData(t *testing.T) {
	requireRuntime(t)
	dir := t.TempDir()
	data := filepath.Join(dir, "one.jsonl")
	require.NoError(t, os.WriteFile(data, []byte(`{"problem":"Solve x+1=2.","answer":"1"}`+"\n"), 0o644))
	r := spiral(t, nil, "train", "--data", data, "--algo", "grpo", "--group", "2", "--problems", "2", "--steps", "1", "--max-new-tokens", "16",
		"--eval-every", "0", "--final-rsa-steps", "0", "--threads", "1", "--quiet", "--out", filepath.Join(dir, "run"))
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stderr, "--problems 2 is more than the 1 problem of "+data)
	require.Contains(t, r.stdout, " on "+data+" (1 problem), algo grpo, 1 step, lr ")
}

// TestHeldOutPastContext: held-out problems too long for the model's
// context are skipped with a warning naming their rows, as spiral eval
// skips them, rather than fail the evaluation at step 0 (or the final
// RSA after the last step); a held-out set with none left is refused
// before any step.
func TestHeldOutPastContext(t *testing.T) {
	requireRuntime(t)
	dir := t.TempDir()
	data := filepath.Join(dir, "one.jsonl")
	require.NoError(t, os.WriteFile(data, []byte(`{"problem":"Solve x+1=2.","answer":"1"}`+"\n"), 0o644))
	long := fmt.Sprintf(`{"problem":%q,"answer":"3"}`+"\n", "Compute "+strings.Repeat("1+", 2_100)+"1.")
	for _, tc := range []struct {
		name, held string
		code       int
		want       []string
	}{
		{"one of two too long", long + `{"problem":"Solve x+2=4.","answer":"2"}` + "\n", 0,
			[]string{"/held.jsonl:1: search prompt of", "eval   1  held-out pass@1", "(1 problem)\n", "held-out summary:"}},
		{"all too long", long, 1,
			[]string{"/held.jsonl:1: search prompt of", "no held-out problems to evaluate: the first 1 problem of "}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, _ := trainOnHeldOut(t, filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-")), data, tc.held, "1")
			requireExit(t, r, tc.code, nil, tc.want...)
			require.NotContains(t, r.stdout+r.stderr, "leaves no room")
		})
	}
}

// trainOnHeldOut runs one GRPO step on data with the held-out problems
// held (JSONL text, written to sub/held.jsonl) evaluated at steps 0 and
// 1, and finalRSA steps of RSA at the end, into sub/run; it returns the
// run's result and the held-out file's path.
func trainOnHeldOut(t *testing.T, sub, data, held, finalRSA string) (result, string) {
	t.Helper()
	path := filepath.Join(sub, "held.jsonl")
	require.NoError(t, os.MkdirAll(sub, 0o755))
	require.NoError(t, os.WriteFile(path, []byte(held), 0o644))
	return spiral(t, nil, "train", "--data", data, "--eval-data", path, "--algo", "grpo", "--group", "2", "--problems", "1", "--steps", "1",
		"--max-new-tokens", "8", "--eval-every", "1", "--eval-samples", "2", "--final-rsa-steps", finalRSA, "--threads", "1", "--quiet",
		"--out", filepath.Join(sub, "run")), path
}

// TestHeldOutSharedWithData: held-out problems that are training
// problems too (up to white space) are announced, with how many and the
// first; held-out problems new to training are not.
func TestHeldOutSharedWithData(t *testing.T) {
	requireRuntime(t)
	dir := t.TempDir()
	data := filepath.Join(dir, "train.jsonl")
	require.NoError(t, os.WriteFile(data, []byte(`{"problem":"Solve x+1=2.","answer":"1"}`+"\n"+`{"problem":"Solve x+3=5.","answer":"2"}`+"\n"), 0o644))
	for _, tc := range []struct {
		name, held string
		want       string
	}{
		{"one shared", `{"problem":"Solve x+2=4.","answer":"2"}` + "\n" + `{"problem":"Solve  x+3=5. ","answer":"2"}` + "\n",
			"1 of the 2 held-out problems of "},
		{"none shared", `{"problem":"Solve x+2=4.","answer":"2"}` + "\n", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, held := trainOnHeldOut(t, filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-")), data, tc.held, "0")
			if tc.want == "" {
				requireExit(t, r, 0, nil)
				require.NotContains(t, r.stderr, "training problem")
				return
			}
			requireExit(t, r, 0, nil, tc.want, held+" is a training problem of "+data+" too (held.jsonl:1 at "+held+":2): the held-out accuracy counts it as new")
		})
	}
}

// TestInitModelInterrupted sends SIGINT to init-model --overwrite while
// it draws the new model's weights in its stage: it exits as interrupted,
// the model in --out is the one it was, file for file, and no stage is
// left there.
func TestInitModelInterrupted(t *testing.T) {
	m := filepath.Join(t.TempDir(), "m")
	r := spiral(t, nil, "init-model", "--out", m, "--seed", "3")
	require.Equal(t, 0, r.code, r.stderr)
	files := func() map[string]string {
		entries, err := os.ReadDir(m)
		require.NoError(t, err)
		out := map[string]string{}
		for _, e := range entries {
			if e.IsDir() {
				out[e.Name()] = "a directory"
				continue
			}
			b, err := os.ReadFile(filepath.Join(m, e.Name()))
			require.NoError(t, err)
			out[e.Name()] = string(b)
		}
		return out
	}
	before := files()

	// About 400 MB of weights: a second or more of drawing, where the
	// stage appears at once.
	cmd := exec.Command(binary, "init-model", "--out", m, "--overwrite", "--layers", "8", "--hidden", "1024", "--intermediate", "4096", "--seed", "4")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	staged := false
	for deadline := time.Now().Add(time.Minute); !staged && time.Now().Before(deadline); time.Sleep(2 * time.Millisecond) {
		entries, err := os.ReadDir(m)
		require.NoError(t, err)
		staged = slices.ContainsFunc(entries, func(e os.DirEntry) bool { return strings.HasPrefix(e.Name(), ".stage-") })
	}
	if !staged {
		_ = cmd.Process.Kill()
		t.Fatal("no stage in --out within a minute")
	}
	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	require.Error(t, cmd.Wait(), "an interrupted init-model exits non-zero")
	require.Equal(t, 130, cmd.ProcessState.ExitCode(), stderr.String())
	require.Contains(t, stderr.String(), "spiral init-model: interrupted\n")
	require.Equal(t, before, files(), "--out's files as they were, and no stage")
}

// TestSignalEndsCommandsThatDoNotStop: Ctrl-C, SIGTERM or SIGHUP ends a command
// whose work does not watch for them (data synth drawing long
// expressions; artifacts building a real model's graphs) at once: they
// were caught and lost, so that it ran on to the end and exited 0, and
// nothing but SIGKILL stopped it.
func TestSignalEndsCommandsThatDoNotStop(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP} {
		t.Run(sig.String(), func(t *testing.T) {
			// Minutes of drawing (2,000 such problems take seconds).
			cmd := exec.Command(binary, "data", "synth", "--problems", "100000", "--min-operands", "1000", "--max-operands", "1024",
				"--out", filepath.Join(t.TempDir(), "p.jsonl"))
			require.NoError(t, cmd.Start())
			exited := make(chan struct{})
			go func() {
				_ = cmd.Wait()
				close(exited)
			}()
			time.Sleep(time.Second) // past spiral's start
			require.NoError(t, cmd.Process.Signal(sig))
			select {
			case <-exited:
			case <-time.After(15 * time.Second):
				_ = cmd.Process.Kill()
				<-exited
				t.Fatalf("still running 15 s after %v", sig)
			}
			ws := cmd.ProcessState.Sys().(syscall.WaitStatus)
			require.True(t, ws.Signaled() && ws.Signal() == sig, "ended by %v, not %v", cmd.ProcessState, sig)
		})
	}
}

// TestInitModelOverwriteTokenizerFiles: init-model --overwrite over a
// model directory whose tokenizer came with its other files (a real
// model's tokenizer_config.json, vocab.json and merges.txt, its
// generation defaults) removes them, as they describe the replaced
// tokenizer: an hf export of the new model copied them beside its
// character tokenizer.json, and transformers would read the old
// tokenizer's class and chat template. A file of the user's stays.
func TestInitModelOverwriteTokenizerFiles(t *testing.T) {
	m := filepath.Join(t.TempDir(), "m")
	r := spiral(t, nil, "init-model", "--out", m, "--tokenizer", "byte")
	require.Equal(t, 0, r.code, r.stderr)
	stale := []string{"tokenizer_config.json", "special_tokens_map.json", "added_tokens.json", "vocab.json", "merges.txt", "chat_template.jinja", "generation_config.json"}
	for _, name := range append(stale, "notes.txt") {
		require.NoError(t, os.WriteFile(filepath.Join(m, name), []byte(`{"tokenizer_class": "Qwen2Tokenizer"}`), 0o644))
	}
	r = spiral(t, nil, "init-model", "--out", m, "--overwrite")
	require.Equal(t, 0, r.code, r.stderr)
	for _, name := range stale {
		require.NoFileExists(t, filepath.Join(m, name))
	}
	require.FileExists(t, filepath.Join(m, "notes.txt"))
	require.FileExists(t, filepath.Join(m, "tokenizer.json"))
	requireNoStage(t, m)
}

// modTimes maps each file under dir to its modification time.
func modTimes(t *testing.T, dir string) map[string]time.Time {
	t.Helper()
	out := map[string]time.Time{}
	require.NoError(t, filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		out[path] = info.ModTime()
		return err
	}))
	return out
}

// TestOtherModelRefusedBeforeArtifacts: train with another --model into
// a run directory is refused before the run's artifacts are built again
// for it (for a real model, minutes of work that replaced the run's own),
// naming both models; the run's artifacts are left as they were.
func TestOtherModelRefusedBeforeArtifacts(t *testing.T) {
	requireRuntime(t)
	dir := t.TempDir()
	run := filepath.Join(dir, "run")
	small := []string{"--problems", "1", "--steps", "1", "--max-new-tokens", "8", "--eval-every", "0", "--final-rsa-steps", "0", "--threads", "1", "--quiet", "--out", run}
	r := spiral(t, nil, append([]string{"train"}, small...)...)
	requireExit(t, r, 0, nil)
	artifacts := func() map[string]time.Time { return modTimes(t, filepath.Join(run, "artifacts")) }
	before := artifacts()
	require.NotEmpty(t, before)
	m := filepath.Join(dir, "m")
	requireExit(t, spiral(t, nil, "init-model", "--out", m, "--seed", "5"), 0, nil)
	r = spiral(t, nil, append([]string{"train", "--model", filepath.Join(m, "model.onnx")}, small...)...)
	requireExit(t, r, 2, nil, run+" holds a run of embedded", "use another --out, or --fresh")
	require.Equal(t, before, artifacts(), "the run's artifacts are untouched")
}
