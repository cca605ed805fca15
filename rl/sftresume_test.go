package rl

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/spiral-rl/spiral/data/synth"
	"github.com/spiral-rl/spiral/model"
	"github.com/spiral-rl/spiral/model/checkpoint"
	"github.com/spiral-rl/spiral/model/lmgraph"
	"github.com/spiral-rl/spiral/model/modeltest"
	"github.com/spiral-rl/spiral/model/optim"
	"github.com/spiral-rl/spiral/model/params"
	"github.com/spiral-rl/spiral/model/qwen3"
)

// sftModelDir writes a tiny Qwen3 whose vocabulary holds
// sftFakePrompter's bytes into a directory of t's, for the sft runs of
// one test (their policies share its artifacts, beside it).
func sftModelDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	c := qwen3.Tiny()
	c.Vocab = 256
	require.NoError(t, qwen3.WriteDir(dir, c, 7))
	return dir
}

// sftHarness is an sft run as spiral sft assembles it, on the tiny model
// in src (sftModelDir) from its initial weights (a fresh process), into dir:
// 6 steps of 2 examples, evaluated at 3 and 6 on 2 problems, a
// checkpoint every 2 steps, all kept.
type sftHarness struct {
	cfg       SFTConfig
	parts     SFTParts
	out, warn bytes.Buffer
	// onProgress, when set, is called with the steps finished so far
	// each time the run reports some.
	onProgress func(done int)
}

func newSFTHarness(t *testing.T, src, dir string) *sftHarness {
	t.Helper()
	return newSFTHarnessWith(t, src, dir, model.PolicyOptions{Train: true})
}

// newSFTHarnessWith is newSFTHarness with the policy opened with po.
func newSFTHarnessWith(t *testing.T, src, dir string, po model.PolicyOptions) *sftHarness {
	t.Helper()
	pol, err := model.OpenPolicy(context.Background(), modeltest.Runtime(t), filepath.Join(src, "model.onnx"), filepath.Join(src, ArtifactsDir), po)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, pol.Close()) })
	opt, err := optim.NewAdamW(optim.DefaultConfig(), pol.Weights)
	require.NoError(t, err)
	task, err := synth.Embedded()
	require.NoError(t, err)
	h := &sftHarness{cfg: DefaultSFTConfig()}
	h.cfg.Steps, h.cfg.Batch, h.cfg.EvalEvery, h.cfg.EvalProblems, h.cfg.CheckpointEvery, h.cfg.Keep = 6, 2, 3, 2, 2, 0
	sched := optim.Schedule{PeakLR: 3e-3, WarmupSteps: 2, Decay: optim.Cosine, TotalSteps: 6, MinLR: 3e-4}
	h.parts = SFTParts{Policy: pol, Optimizer: opt, Schedule: sched, Task: task, Prompter: sftFakePrompter{},
		StopIDs: []int32{0}, VocabLimit: 256, Judge: NewJudge(RewardRule{}), Dir: dir,
		Settings: SFTSettings{Model: "m", ModelID: "id-m", Selection: `train="" freeze=""`}, Out: &h.out, Warn: &h.warn}
	return h
}

// run runs h, the run directory locked as spiral sft locks it, cancelling
// the run's context once stopAfter steps have finished (0: never).
func (h *sftHarness) run(stopAfter int) error {
	unlock, err := LockRun(h.parts.Dir)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := 0
	h.parts.Progress = func(n int) {
		if done += n; stopAfter > 0 && done >= stopAfter {
			cancel()
		}
		if h.onProgress != nil {
			h.onProgress(done)
		}
	}
	return errors.Join(RunSFT(ctx, h.cfg, h.parts), unlock())
}

// sftFinal reads what an sft run in dir ended with: the weights and
// moments of its last checkpoint (step 6), and its log without the
// wall-time fields.
func sftFinal(t *testing.T, dir string) (weights, moments []byte, log []map[string]any) {
	t.Helper()
	ckpt := filepath.Join(dir, CheckpointsDir, checkpoint.DirName(6))
	weights, err := os.ReadFile(filepath.Join(ckpt, checkpoint.ModelFile))
	require.NoError(t, err)
	moments, err = os.ReadFile(filepath.Join(ckpt, checkpoint.OptimizerFile))
	require.NoError(t, err)
	b, err := os.ReadFile(filepath.Join(dir, SFTLogFile+PartialSuffix))
	require.NoError(t, err)
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &m), line)
		delete(m, "seconds")
		delete(m, "tokens_per_second")
		log = append(log, m)
	}
	return weights, moments, log
}

// straightSFT runs the sft of the model in src uninterrupted and
// returns how it ended (sftFinal).
func straightSFT(t *testing.T, src string) (weights, moments []byte, log []map[string]any) {
	t.Helper()
	dir := t.TempDir()
	h := newSFTHarness(t, src, dir)
	require.NoError(t, h.run(0))
	require.NotContains(t, h.out.String(), "resumed")
	return sftFinal(t, dir)
}

// TestSFTResume: an sft run interrupted (its context cancelled) after k
// steps and run again resumes from its newest checkpoint and ends with
// the weights, AdamW moments and log (wall times aside) of the run that
// was not interrupted, whatever k: an interruption between checkpoints
// saves the last step; one at a checkpoint finds it saved; one during an
// evaluation (steps 3 and 6) saves the step, whose evaluation the rerun
// does, once; one at the last step leaves only the evaluation to do. The
// log repeats and loses no line.
func TestSFTResume(t *testing.T) {
	src := sftModelDir(t)
	weights, moments, log := straightSFT(t, src)
	for _, c := range []struct {
		name      string
		stopAfter int
		warn      string
		resumedAt string
	}{
		{"between checkpoints", 1, "saving step 1", "ckpt-000001 (step 1)"},
		{"at a checkpoint", 4, "step 4 is already saved", "ckpt-000004 (step 4)"},
		{"during an evaluation", 3, "saving step 3", "ckpt-000003 (step 3)"},
		{"during the last evaluation", 6, "saving step 6", "ckpt-000006 (step 6)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			h := newSFTHarness(t, src, dir)
			require.ErrorIs(t, h.run(c.stopAfter), context.Canceled)
			require.Contains(t, h.warn.String(), c.warn)

			h = newSFTHarness(t, src, dir)
			require.NoError(t, h.run(0))
			require.Contains(t, h.out.String(), "resumed from "+filepath.Join(dir, CheckpointsDir, c.resumedAt))
			w, m, l := sftFinal(t, dir)
			require.Equal(t, weights, w, "the resumed run's weights differ")
			require.Equal(t, moments, m, "the resumed run's AdamW moments differ")
			require.Equal(t, log, l)
		})
	}
}

// TestSFTSavesOnFailure: a step or an evaluation that fails for another
// cause than an interruption saves the last completed step, as train's
// run does (saveFailed), so that a rerun once the cause is mended resumes
// from it rather than from the newest regular checkpoint, and ends as the
// run that never failed does. Checkpoints are due only at the last step
// here, so anything resumed from was saved by the failure. The failing
// step is one whose example passes the model's positions (ContextLength
// set just below it, its steps before fitting); the failing evaluation is
// one whose sampler is refused (a negative vocabulary limit).
func TestSFTSavesOnFailure(t *testing.T) {
	src := sftModelDir(t)
	weights, moments, log := straightSFT(t, src)
	// The longest example of each step, as RunSFT draws and renders them.
	h := newSFTHarness(t, src, t.TempDir())
	rng := rand.New(rand.NewPCG(h.cfg.Seed, 0x5f7))
	longest := make([]int, h.cfg.Steps)
	for i := range longest {
		exs, err := h.parts.Task.SFTExamples(rng, nil, h.cfg.Batch, h.cfg.Mix)
		require.NoError(t, err)
		batch, err := sftBatch(h.parts.Prompter, exs)
		require.NoError(t, err)
		for _, e := range batch {
			longest[i] = max(longest[i], e.Len())
		}
	}
	// The first step after the first whose longest example is longer
	// than every earlier step's.
	failing, fits := 0, longest[0]
	for i := 1; i < len(longest) && failing == 0; i++ {
		if longest[i] > fits {
			failing = i + 1
		}
		fits = max(fits, longest[i])
	}
	require.NotZero(t, failing, "no step's examples are longer than the steps' before it: %v", longest)
	fits = slices.Max(longest[:failing-1])
	for _, c := range []struct {
		name  string
		saved int
		fail  func(h *sftHarness)
		err   string
	}{
		{"step", failing - 1, func(h *sftHarness) { h.cfg.ContextLength = fits }, "passes the model's"},
		{"evaluation", 3, func(h *sftHarness) { h.parts.VocabLimit = -1 }, "vocab limit -1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			h := newSFTHarness(t, src, dir)
			h.cfg.CheckpointEvery = 100
			c.fail(h)
			require.ErrorContains(t, h.run(0), c.err)
			require.Contains(t, h.warn.String(), fmt.Sprintf("spiral: failed after step %d; saving it", c.saved))

			h = newSFTHarness(t, src, dir)
			h.cfg.CheckpointEvery = 100
			require.NoError(t, h.run(0))
			require.Contains(t, h.out.String(), fmt.Sprintf("resumed from %s (step %d)", filepath.Join(dir, CheckpointsDir, checkpoint.DirName(int64(c.saved))), c.saved))
			w, m, l := sftFinal(t, dir)
			require.Equal(t, weights, w, "the resumed run's weights differ")
			require.Equal(t, moments, m, "the resumed run's AdamW moments differ")
			require.Equal(t, log, l)
		})
	}
}

// TestSynthAccuracyContext: the evaluation's sampler knows the model's
// positions (SFTConfig.ContextLength), as every other command's does: a
// prompt that leaves no room is refused, naming them, and a completion
// stops where they end; the sampler had no context length, so
// completions ran past the model's positions.
func TestSynthAccuracyContext(t *testing.T) {
	h := newSFTHarness(t, sftModelDir(t), t.TempDir())
	// The search prompts fit 30 positions ("USolve x+1+2=5." and the
	// like), the aggregation prompts, which hold 4 candidates, do not.
	h.cfg.ContextLength = 30
	_, err := SynthAccuracy(context.Background(), h.parts, h.cfg)
	require.ErrorContains(t, err, "leaves no room in the model's 30-position context")
	h.cfg.ContextLength = 0
	_, err = SynthAccuracy(context.Background(), h.parts, h.cfg)
	require.NoError(t, err)
}

// TestSFTWithoutEvaluation: EvalProblems 0 runs no evaluation, neither
// every EvalEvery steps nor at the end (it was refused, "--eval-problems
// 0: want >= 1", so sft could not turn its evaluations off): the log
// holds the step lines alone and Out no accuracy. A run interrupted at a
// step whose evaluation would be due (3), or between checkpoints (5),
// resumes without evaluating either, and ends with the uninterrupted
// run's weights and log.
func TestSFTWithoutEvaluation(t *testing.T) {
	src := sftModelDir(t)
	dir := t.TempDir()
	h := newSFTHarness(t, src, dir)
	h.cfg.EvalProblems = 0
	require.NoError(t, h.run(0))
	require.NotContains(t, h.out.String(), "acc")
	require.Empty(t, h.warn.String())
	weights, moments, log := sftFinal(t, dir)
	require.Len(t, log, h.cfg.Steps)
	for i, l := range log {
		require.Equal(t, float64(i+1), l["step"])
		require.Contains(t, l, "loss", "line %d is a step's", i+1)
		require.NotContains(t, l, "eval_search_accuracy", "line %d", i+1)
	}
	for _, stopAfter := range []int{3, 5} {
		t.Run(fmt.Sprint("interrupted after step ", stopAfter), func(t *testing.T) {
			dir := t.TempDir()
			h := newSFTHarness(t, src, dir)
			h.cfg.EvalProblems = 0
			require.ErrorIs(t, h.run(stopAfter), context.Canceled)
			h = newSFTHarness(t, src, dir)
			h.cfg.EvalProblems = 0
			require.NoError(t, h.run(0))
			require.Contains(t, h.out.String(), "resumed from ")
			require.NotContains(t, h.out.String(), "acc")
			w, m, l := sftFinal(t, dir)
			require.Equal(t, weights, w)
			require.Equal(t, moments, m)
			require.Equal(t, log, l)
		})
	}
}

// TestSFTResumePastDamage: a newest checkpoint that is damaged is skipped
// with train's warning, naming the file and why; the run resumes from the
// one before it, cuts the log back to that step (the lines of the steps
// after it were logged by the interrupted run) and still ends as the
// uninterrupted run does.
func TestSFTResumePastDamage(t *testing.T) {
	src := sftModelDir(t)
	weights, moments, log := straightSFT(t, src)
	for _, c := range []struct {
		name, file string
		damage     func(path string) error
		why        string
	}{
		{"weights truncated", checkpoint.ModelFile, func(p string) error { return os.Truncate(p, 100) }, "truncated"},
		{"moments missing", checkpoint.OptimizerFile, os.Remove, "no such file"},
		{"state.json corrupted", checkpoint.StateFile, func(p string) error { return os.WriteFile(p, []byte(`{"format_version":1,"step":`), 0o644) }, "corrupted"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			h := newSFTHarness(t, src, dir)
			require.ErrorIs(t, h.run(5), context.Canceled)
			newest := filepath.Join(dir, CheckpointsDir, checkpoint.DirName(5))
			require.NoError(t, c.damage(filepath.Join(newest, c.file)))

			h = newSFTHarness(t, src, dir)
			require.NoError(t, h.run(0))
			require.Regexp(t, `spiral: skipped a damaged checkpoint: checkpoint: .*`+filepath.Join(newest, c.file)+`.*`+c.why, h.warn.String())
			require.Contains(t, h.out.String(), "resumed from "+filepath.Join(dir, CheckpointsDir, "ckpt-000004 (step 4)"))
			w, m, l := sftFinal(t, dir)
			require.Equal(t, weights, w)
			require.Equal(t, moments, m)
			require.Equal(t, log, l)
		})
	}
}

// TestSFTResumeSettings: a rerun of an interrupted sft run with other
// settings that shape its weights or its evaluations' problems is
// refused, naming each difference and --override, as train's is, and
// goes on with the new ones under Override, with a warning naming them;
// another model (by content id), a run of spiral train in the directory
// and another LoRA configuration are refused even then. When to evaluate
// is no setting of the run.
func TestSFTResumeSettings(t *testing.T) {
	src := sftModelDir(t)
	for _, c := range []struct {
		name     string
		edit     func(h *sftHarness)
		want     []string // in the refusal and, under Override, the warning
		final    bool     // refused with Override too
		accepted bool     // resumed without a word
	}{
		{"peak learning rate", func(h *sftHarness) { h.parts.Schedule.PeakLR = 1e-3 }, []string{"schedule.peak_lr (--lr): 0.003 -> 0.001"}, false, false},
		{"steps", func(h *sftHarness) { h.cfg.Steps, h.parts.Schedule.TotalSteps = 8, 8 }, []string{"schedule.total_steps (--steps): 6 -> 8"}, false, false},
		{"batch and seed", func(h *sftHarness) { h.cfg.Batch, h.cfg.Seed = 3, 2 },
			[]string{"sft.batch (--batch): 2 -> 3", "sft.seed (--seed): 1 -> 2"}, false, false},
		{"mix", func(h *sftHarness) { h.cfg.Mix.ReadShare = 0.25 }, []string{"sft.mix.aggregate_read_share (--aggregate-read-share): 1 -> 0.25"}, false, false},
		{"evaluation's problems", func(h *sftHarness) { h.cfg.EvalProblems = 3 }, []string{"sft.eval_problems (--eval-problems): 2 -> 3"}, false, false},
		{"another model", func(h *sftHarness) { h.parts.Settings.ModelID = "id-other" }, []string{"holds an sft run of m (model id id-m); this one is of m (model id id-other): use another --out, or --fresh"}, true, false},
		{"another LoRA", func(h *sftHarness) {
			h.parts.Settings.LoRA = &lmgraph.LoRA{Rank: 4, Alpha: 8, Targets: []string{"q_proj"}}
		}, []string{"holds a run with full fine-tuning; this one is lora rank=4"}, true, false},
		{"selection of the same tensors", func(h *sftHarness) { h.parts.Settings.Selection = `train="." freeze=""` },
			[]string{`selection (--train, --freeze): "train=\"\" freeze=\"\"" -> "train=\".\" freeze=\"\""`}, false, false},
		{"evaluation's cadence", func(h *sftHarness) { h.cfg.EvalEvery = 2 }, nil, false, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			h := newSFTHarness(t, src, dir)
			require.ErrorIs(t, h.run(2), context.Canceled)

			h = newSFTHarness(t, src, dir)
			c.edit(h)
			err := h.run(0)
			if c.accepted {
				require.NoError(t, err)
				require.Contains(t, h.out.String(), "resumed from")
				require.NotContains(t, h.warn.String(), "--override")
				return
			}
			require.Error(t, err)
			for _, w := range c.want {
				require.ErrorContains(t, err, w)
			}
			require.NotContains(t, h.out.String(), "resumed from")
			if !c.final {
				require.ErrorContains(t, err, "rerun with --override")
			}

			h = newSFTHarness(t, src, dir)
			c.edit(h)
			h.cfg.Override = true
			err = h.run(0)
			if c.final {
				require.Error(t, err)
				require.ErrorContains(t, err, c.want[0])
				return
			}
			require.NoError(t, err)
			require.Contains(t, h.warn.String(), "spiral: --override: continuing "+dir+" with new settings: ")
			for _, w := range c.want {
				require.Contains(t, h.warn.String(), w)
			}
			require.Contains(t, h.out.String(), "resumed from")
		})
	}
}

// TestSFTResumeOtherSeed: a rerun under Override with another seed
// draws its examples from here on from that seed's stream, as the
// seed's other use, the evaluations' problems, follows it too; the
// generator went on from the recorded seed's state, so the rerun trained
// on the examples the old seed would have drawn (its step lines the
// uninterrupted run's), the new seed changing only the evaluations. With
// the seed unchanged the resume draws what the run would have.
func TestSFTResumeOtherSeed(t *testing.T) {
	src := sftModelDir(t)
	_, _, log := straightSFT(t, src)
	steps := func(log []map[string]any) []map[string]any {
		var out []map[string]any
		for _, l := range log {
			if _, ok := l["loss"]; ok {
				out = append(out, l)
			}
		}
		return out
	}
	for _, c := range []struct {
		name string
		seed uint64
	}{{"same seed", 1}, {"other seed", 2}} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			h := newSFTHarness(t, src, dir)
			require.ErrorIs(t, h.run(2), context.Canceled)
			h = newSFTHarness(t, src, dir)
			h.cfg.Seed, h.cfg.Override = c.seed, true
			require.NoError(t, h.run(0))
			_, _, l := sftFinal(t, dir)
			if c.seed == 1 {
				require.Equal(t, log, l, "a resume with the same seed draws what the run would have")
				return
			}
			require.Contains(t, h.warn.String(), "sft.seed (--seed): 1 -> 2")
			got, want := steps(l), steps(log)
			require.Equal(t, want[:2], got[:2], "the steps before the resume")
			for i := 2; i < len(want); i++ {
				require.NotEqual(t, want[i], got[i], "step %d after a resume with seed 2 drew seed 1's examples", i+1)
			}
		})
	}
}

// TestSFTResumeOtherEvaluations: a resume under Override whose
// evaluations are of other problems than the run's (another seed draws
// others, another --eval-problems another number of them, other
// --candidates other aggregation prompts) warns that the log's
// accuracies before and after are not one curve; one that changes
// another setting, or that evaluates nothing from here on (EvalProblems
// 0), does not.
func TestSFTResumeOtherEvaluations(t *testing.T) {
	src := sftModelDir(t)
	const curve = "the evaluations from here on are of other problems than the run's: sft.jsonl's accuracies up to step 2 and those after it are not one curve\n"
	for _, c := range []struct {
		name string
		edit func(h *sftHarness)
		want string // "": no such warning
	}{
		{"seed", func(h *sftHarness) { h.cfg.Seed = 2 }, "spiral: --override: --seed 2, not 1: " + curve},
		{"evaluation's problems", func(h *sftHarness) { h.cfg.EvalProblems = 3 }, "spiral: --override: --eval-problems 3, not 2: " + curve},
		{"both", func(h *sftHarness) { h.cfg.Seed, h.cfg.EvalProblems = 2, 3 }, "spiral: --override: --seed 2, not 1, --eval-problems 3, not 2: " + curve},
		// No evaluation from here on: no curve after the step to differ.
		{"no evaluations", func(h *sftHarness) { h.cfg.EvalProblems = 0 }, ""},
		{"no evaluations, another seed", func(h *sftHarness) { h.cfg.Seed, h.cfg.EvalProblems = 2, 0 }, ""},
		{"batch", func(h *sftHarness) { h.cfg.Batch = 3 }, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			h := newSFTHarness(t, src, dir)
			require.ErrorIs(t, h.run(2), context.Canceled)
			h = newSFTHarness(t, src, dir)
			c.edit(h)
			h.cfg.Override = true
			require.NoError(t, h.run(0))
			if c.want == "" {
				require.NotContains(t, h.warn.String(), "other problems")
				return
			}
			require.Contains(t, h.warn.String(), c.want)
		})
	}
}

// TestSFTResumeOtherTensors: a rerun whose weights are other tensors
// than the checkpoint's is refused, with Override too, naming what made
// them differ (another model, another --train and --freeze selection),
// not listing the tensors.
func TestSFTResumeOtherTensors(t *testing.T) {
	src, dir := sftModelDir(t), t.TempDir()
	require.ErrorIs(t, newSFTHarness(t, src, dir).run(2), context.Canceled)
	for _, c := range []struct {
		name string
		edit func(s *SFTSettings)
		want string
	}{
		{"another model", func(s *SFTSettings) { s.Model, s.ModelID = "m2", "id-m2" },
			dir + " holds an sft run of m (model id id-m); this one is of m2 (model id id-m2): use another --out, or --fresh"},
		{"another selection", func(s *SFTSettings) { s.Selection = `train="" freeze="norm"` },
			dir + ` holds a run that trains other parameters (selection (--train, --freeze): train="" freeze="" -> train="" freeze="norm"): use the same --train and --freeze, another --out, or --fresh`},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newSFTHarness(t, src, dir)
			c.edit(&h.parts.Settings)
			h.cfg.Override = true
			w, err := params.NewStore([]params.Spec{{Name: "v", Shape: []int64{2, 2}}})
			require.NoError(t, err)
			opt, err := optim.NewAdamW(optim.DefaultConfig(), w)
			require.NoError(t, err)
			pol := *h.parts.Policy
			pol.Weights = w
			h.parts.Policy, h.parts.Optimizer = &pol, opt
			require.EqualError(t, h.run(0), c.want)
		})
	}
}

// TestSFTResumeOlderSelection: an sft run saved before it recorded its
// --train and --freeze selection (2026-12-06), whose checkpoints hold the
// parameters it trained, resumes with a selection that trains them; one
// that trains others was let through by CheckSFTRunIdentity and stopped
// by the resume with a line for each tensor that differed. Both refuse it
// naming what the checkpoint holds and that it records no selection.
func TestSFTResumeOlderSelection(t *testing.T) {
	src, dir := sftModelDir(t), t.TempDir()
	older := newSFTHarness(t, src, dir)
	older.parts.Settings.Selection = "" // as sft recorded none before c7b9317
	require.ErrorIs(t, older.run(2), context.Canceled)
	path := filepath.Join(dir, CheckpointsDir, checkpoint.DirName(2))
	held, err := checkpoint.TensorNames(path)
	require.NoError(t, err)
	require.Greater(t, len(held), 1)

	// Another selection: the weights are the checkpoint's less one.
	h := newSFTHarness(t, src, dir)
	h.parts.Settings.Selection = `train="" freeze="norm"`
	w, err := params.NewStore(h.parts.Policy.Weights.Specs()[1:])
	require.NoError(t, err)
	opt, err := optim.NewAdamW(optim.DefaultConfig(), w)
	require.NoError(t, err)
	pol := *h.parts.Policy
	pol.Weights = w
	h.parts.Policy, h.parts.Optimizer = &pol, opt
	want := fmt.Sprintf(`%s holds a run that trains other parameters: its checkpoint %s holds %d tensors and records no --train and --freeze selection (an sft run of a spiral before 2026-12-06); this one trains %d others (selection (--train, --freeze): train="" freeze="norm"): use the run's --train and --freeze, another --out, or --fresh`,
		dir, path, len(held), len(held)-1)
	checked := CheckSFTRunIdentity(dir, h.parts.Settings, func() ([]string, error) { return w.Names(), nil })
	for _, err := range []error{checked, h.run(0)} {
		var other *OtherRunError
		require.ErrorAs(t, err, &other)
		require.EqualError(t, err, want)
	}
	require.NotContains(t, h.out.String(), "resumed from")

	// The selection that trains the checkpoint's tensors resumes it.
	h = newSFTHarness(t, src, dir)
	require.NoError(t, CheckSFTRunIdentity(dir, h.parts.Settings, func() ([]string, error) { return held, nil }))
	require.NoError(t, h.run(0))
	require.Contains(t, h.out.String(), "resumed from "+path)
}

// TestSFTRefusesTrainCheckpoints: an sft into the run directory of
// spiral train (its checkpoints record no sft settings) is refused rather
// than resumed from them.
func TestSFTRefusesTrainCheckpoints(t *testing.T) {
	src, dir := sftModelDir(t), t.TempDir()
	h := newSFTHarness(t, src, dir)
	settings, err := json.Marshal(RunSettings{Model: "m", ModelID: "id-m", Data: "d", RL: DefaultConfig()})
	require.NoError(t, err)
	_, err = checkpoint.Save(filepath.Join(dir, CheckpointsDir), h.parts.Policy.Weights, h.parts.Optimizer, checkpoint.State{Step: 2, Config: settings}, checkpoint.Options{})
	require.NoError(t, err)
	require.ErrorContains(t, h.run(0), "holds checkpoints of spiral train, not of sft: use another --out, or --fresh")
}

// TestRunRefusesSFTCheckpoints: spiral train into the --out of an sft
// run (its checkpoints record sft settings, no data or algorithm) is
// refused, saying so, rather than resumed from them.
func TestRunRefusesSFTCheckpoints(t *testing.T) {
	dir := t.TempDir()
	h := newRunHarness(t, dir, 2)
	settings, err := json.Marshal(SFTSettings{Model: "m", ModelID: "id-m", SFT: &SFTConfig{Batch: 2}})
	require.NoError(t, err)
	_, err = checkpoint.Save(filepath.Join(dir, CheckpointsDir), h.parts.Weights, h.parts.Optimizer, checkpoint.State{Step: 1, Config: settings}, checkpoint.Options{})
	require.NoError(t, err)
	require.ErrorContains(t, h.run(context.Background()), "holds checkpoints of spiral sft, not of train: use another --out, or --fresh")
}

// TestSFTFresh: Fresh moves an interrupted run's checkpoints and log
// aside, never deleting them, and starts over.
func TestSFTFresh(t *testing.T) {
	src, dir := sftModelDir(t), t.TempDir()
	h := newSFTHarness(t, src, dir)
	require.ErrorIs(t, h.run(2), context.Canceled)
	h = newSFTHarness(t, src, dir)
	h.parts.Schedule.PeakLR = 1e-3
	h.cfg.Fresh = true
	require.NoError(t, h.run(0))
	require.NotContains(t, h.out.String(), "resumed")
	require.Contains(t, h.out.String(), "--fresh: the previous run is in ")
	prev, err := filepath.Glob(filepath.Join(dir, previousPattern+"*"))
	require.NoError(t, err)
	require.Len(t, prev, 1)
	require.DirExists(t, filepath.Join(prev[0], CheckpointsDir, checkpoint.DirName(2)))
	require.FileExists(t, filepath.Join(prev[0], SFTLogFile+PartialSuffix))
}

// TestSFTFreshSetsTrainRunAside: Fresh in the run directory of spiral
// train (the --fresh that sft's refusal of train's checkpoints offers)
// moves the whole train run aside, its logs, plot and final report with
// its checkpoints and events, into one previous-*: it moved the
// checkpoints alone, leaving a previous-* of part of the run and, beside
// sft's model and log, train's metrics.jsonl and eval.jsonl, which
// spiral tensorboard then read as the directory's run instead of
// sft.jsonl.
func TestSFTFreshSetsTrainRunAside(t *testing.T) {
	src, dir := sftModelDir(t), t.TempDir()
	h := newSFTHarness(t, src, dir)
	settings, err := json.Marshal(RunSettings{Model: "m", ModelID: "id-m", Data: "d", RL: DefaultConfig()})
	require.NoError(t, err)
	_, err = checkpoint.Save(filepath.Join(dir, CheckpointsDir), h.parts.Policy.Weights, h.parts.Optimizer, checkpoint.State{Step: 2, Config: settings}, checkpoint.Options{})
	require.NoError(t, err)
	trainFiles := []string{MetricsFile, EvalFile, TrainingPlot, FinalRSAFile, filepath.Join(TensorBoardDir, "events.out.tfevents.1.host.spiral")}
	for _, name := range trainFiles {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o777))
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte("train's "+name), 0o666))
	}
	h.cfg.Fresh = true
	require.NoError(t, h.run(0))
	prev, err := filepath.Glob(filepath.Join(dir, previousPattern+"*"))
	require.NoError(t, err)
	require.Len(t, prev, 1)
	require.DirExists(t, filepath.Join(prev[0], CheckpointsDir, checkpoint.DirName(2)))
	for _, name := range trainFiles {
		b, err := os.ReadFile(filepath.Join(prev[0], name))
		require.NoError(t, err, "the train run's %s set aside with its checkpoints", name)
		require.Equal(t, "train's "+name, string(b))
	}
	for _, name := range []string{MetricsFile, EvalFile, TrainingPlot, FinalRSAFile} {
		require.NoFileExists(t, filepath.Join(dir, name), "left beside the sft run")
	}
	require.FileExists(t, filepath.Join(dir, SFTLogFile+PartialSuffix))
}

// TestSFTSettingsDiffLearningRate: another --lr is one difference named
// by its flag, not two (the cosine floor is --lr / 10, whose quotient
// printed as 0.00030000000000000003).
func TestSFTSettingsDiffLearningRate(t *testing.T) {
	settings := func(lr float64) SFTSettings {
		return SFTSettings{Model: "m", Schedule: optim.Schedule{PeakLR: lr, MinLR: lr / 10, TotalSteps: 10}}
	}
	require.Equal(t, []string{"schedule.peak_lr (--lr): 0.003 -> 0.001"}, sftSettingsDiff(settings(0.003), settings(0.001)))
	floor := settings(0.003)
	floor.Schedule.MinLR = 0
	require.Equal(t, []string{"schedule.min_lr (--lr / 10): (unset) -> 0.00030000000000000003"}, sftSettingsDiff(floor, settings(0.003)))
	require.Empty(t, sftSettingsDiff(settings(0.003), settings(0.003)))
}

// TestSFTSettingsDiffTokenizer: another tokenizer is a difference named
// by --tokenizer; a checkpoint of an older version, which records none,
// is compared without it; one recording the fingerprint older versions
// took of the tokenizer's bytes (TokenizerBytes) is of the same one.
func TestSFTSettingsDiffTokenizer(t *testing.T) {
	for _, c := range []struct {
		name, recorded, now, nowBytes string
		want                          []string
	}{
		{"another", "tok-a", "tok-b", "", []string{`tokenizer (--tokenizer): "tok-a" -> "tok-b"`}},
		{"the same", "tok-a", "tok-a", "", nil},
		{"none recorded", "", "tok-b", "", nil},
		{"its bytes' fingerprint recorded", "bytes-b", "tok-b", "bytes-b", nil},
		{"another's bytes' fingerprint recorded", "bytes-a", "tok-b", "bytes-b", []string{`tokenizer (--tokenizer): "bytes-a" -> "tok-b"`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			require.Equal(t, c.want, sftSettingsDiff(SFTSettings{Model: "m", Tokenizer: c.recorded}, SFTSettings{Model: "m", Tokenizer: c.now, TokenizerBytes: c.nowBytes}))
		})
	}
	// Checkpoints since record the bytes' fingerprint beside the
	// content's (for spiral compare): the same tokenizer saved again,
	// other bytes, is no difference.
	t.Run("saved again", func(t *testing.T) {
		require.Empty(t, sftSettingsDiff(SFTSettings{Model: "m", Tokenizer: "tok-b", TokenizerBytes: "bytes-b"}, SFTSettings{Model: "m", Tokenizer: "tok-b", TokenizerBytes: "bytes-b2"}))
	})
}

// TestSFTSettingsDiffSteps: the cosine's total steps are --steps, or
// --warmup + 1 where --steps is not above --warmup (spiral sft's
// schedule), so a difference that shows --warmup + 1 says so: a rerun
// with --steps 6 under the default --warmup 20 was refused with
// "schedule.total_steps (--steps): 200 -> 21", a number no flag had.
func TestSFTSettingsDiffSteps(t *testing.T) {
	settings := func(warmup, total int64) SFTSettings {
		return SFTSettings{Model: "m", Schedule: optim.Schedule{PeakLR: 3e-3, MinLR: 3e-4, WarmupSteps: warmup, TotalSteps: total}}
	}
	for _, c := range []struct {
		name string
		a, b SFTSettings
		want string
	}{
		{"both past the warmup", settings(20, 200), settings(20, 300), "schedule.total_steps (--steps): 200 -> 300"},
		{"to the warmup's floor", settings(20, 200), settings(20, 21), "schedule.total_steps (--steps, or --warmup + 1 where --steps is not above --warmup): 200 -> 21"},
		{"from the warmup's floor", settings(20, 21), settings(20, 200), "schedule.total_steps (--steps, or --warmup + 1 where --steps is not above --warmup): 21 -> 200"},
	} {
		t.Run(c.name, func(t *testing.T) {
			require.Equal(t, []string{c.want}, sftSettingsDiff(c.a, c.b))
		})
	}
}

// TestCheckSFTRunIdentity: an sft rerun into an --out whose newest
// checkpoint is of another model, another LoRA setting or spiral train
// is refused before spiral sft builds the model's artifacts into it, as
// CheckRunIdentity refuses train's (sft built them, replacing the run's,
// and RunSFT refused after); a directory without checkpoints, or one of
// the same model with other settings (RunSFT's to compare), passes.
func TestCheckSFTRunIdentity(t *testing.T) {
	dir := t.TempDir()
	same := SFTSettings{Model: "m", ModelID: "id-m", Selection: `train="" freeze=""`}
	require.NoError(t, CheckSFTRunIdentity(dir, same, nil), "no checkpoint")
	w, err := params.NewStore([]params.Spec{{Name: "v", Shape: []int64{2, 2}}})
	require.NoError(t, err)
	opt, err := optim.NewAdamW(optim.DefaultConfig(), w)
	require.NoError(t, err)
	prev := same
	prev.SFT = &SFTConfig{Batch: 2}
	settings, err := json.Marshal(prev)
	require.NoError(t, err)
	_, err = checkpoint.Save(filepath.Join(dir, CheckpointsDir), w, opt, checkpoint.State{Step: 2, Config: settings}, checkpoint.Options{})
	require.NoError(t, err)
	lora := lmgraph.LoRA{Rank: 4, Alpha: 8, Targets: []string{"q_proj"}}
	for _, tc := range []struct {
		name   string
		change func(*SFTSettings)
		want   string
	}{
		{"same run", func(*SFTSettings) {}, ""},
		{"other settings", func(s *SFTSettings) { s.Selection = `train="" freeze="norm"` }, ""},
		// Other parameters than the checkpoint's "v": refused before the
		// build, as RunSFT refuses them.
		{"other parameters", func(s *SFTSettings) { s.Selection = `train="w" freeze=""` },
			dir + ` holds a run that trains other parameters (selection (--train, --freeze): train="" freeze="" -> train="w" freeze=""): use the same --train and --freeze, another --out, or --fresh`},
		{"model renamed, same id", func(s *SFTSettings) { s.Model = "elsewhere" }, ""},
		{"other model", func(s *SFTSettings) { s.Model, s.ModelID = "m2", "id-m2" },
			dir + " holds an sft run of m (model id id-m); this one is of m2 (model id id-m2): use another --out, or --fresh"},
		{"LoRA", func(s *SFTSettings) { s.LoRA = &lora }, dir + " holds a run with full fine-tuning; this one is "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			now := same
			tc.change(&now)
			err := CheckSFTRunIdentity(dir, now, func() ([]string, error) {
				if now.Selection == `train="w" freeze=""` {
					return []string{"w"}, nil
				}
				return []string{"v"}, nil
			})
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tc.want)
		})
	}
	// A run of spiral train.
	train := t.TempDir()
	settings, err = json.Marshal(RunSettings{Model: "m", ModelID: "id-m", Data: "d", RL: DefaultConfig()})
	require.NoError(t, err)
	_, err = checkpoint.Save(filepath.Join(train, CheckpointsDir), w, opt, checkpoint.State{Step: 1, Config: settings}, checkpoint.Options{})
	require.NoError(t, err)
	require.EqualError(t, CheckSFTRunIdentity(train, same, nil), train+" holds checkpoints of spiral train, not of sft: use another --out, or --fresh")
}

// TestFinishCommittedSFT: an sft run killed after its commit (the model
// and sft.jsonl moved in, the checkpoints and sft.jsonl.partial not yet
// removed) is told by sft.jsonl being the very file of the partial log,
// linked into the stage, or, on a file system without hard links, where
// the log is copied in, a file of the same bytes (its lines' seconds make
// another run's log differ): the checkpoints and the partial log go. A
// copy was not recognised, and the next sft --overwrite resumed the
// finished run from its checkpoints rather than start one. A log that
// differs (an --overwrite's, not committed) or is empty keeps them.
func TestFinishCommittedSFT(t *testing.T) {
	line := `{"step":1,"loss":0.5,"seconds":1.234}` + "\n"
	for _, tc := range []struct {
		name     string
		log      func(t *testing.T, partial, log string)
		finished bool
	}{
		{"linked", func(t *testing.T, partial, log string) { require.NoError(t, os.Link(partial, log)) }, true},
		{"copied", func(t *testing.T, partial, log string) { require.NoError(t, os.WriteFile(log, []byte(line), 0o644)) }, true},
		{"another run's", func(t *testing.T, partial, log string) {
			require.NoError(t, os.WriteFile(log, []byte(`{"step":1,"loss":0.5,"seconds":1.5}`+"\n"), 0o644))
		}, false},
		{"longer", func(t *testing.T, partial, log string) {
			require.NoError(t, os.WriteFile(log, []byte(line+line), 0o644))
		}, false},
		{"none", func(t *testing.T, partial, log string) {}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			partial, log := filepath.Join(dir, SFTLogFile+PartialSuffix), filepath.Join(dir, SFTLogFile)
			require.NoError(t, os.WriteFile(partial, []byte(line), 0o644))
			require.NoError(t, os.MkdirAll(filepath.Join(dir, CheckpointsDir, "step-1"), 0o777))
			tc.log(t, partial, log)
			require.NoError(t, FinishCommittedSFT(dir))
			if tc.finished {
				require.NoFileExists(t, partial)
				require.NoDirExists(t, filepath.Join(dir, CheckpointsDir))
				b, err := os.ReadFile(log)
				require.NoError(t, err)
				require.Equal(t, line, string(b))
			} else {
				require.FileExists(t, partial)
				require.DirExists(t, filepath.Join(dir, CheckpointsDir))
			}
		})
	}
	t.Run("empty", func(t *testing.T) {
		dir := t.TempDir()
		for _, n := range []string{SFTLogFile, SFTLogFile + PartialSuffix} {
			require.NoError(t, os.WriteFile(filepath.Join(dir, n), nil, 0o644))
		}
		require.NoError(t, FinishCommittedSFT(dir))
		require.FileExists(t, filepath.Join(dir, SFTLogFile+PartialSuffix))
	})
}

// TestSFTWithoutCheckpointKeepsLoggedSteps: an sft run directory whose
// sft.jsonl.partial logs completed steps but holds no checkpoint to
// resume them from (its checkpoints/ removed, or the run killed before
// its first checkpoint) starts over, as train's run does
// (setAsideUnresumed): its log and TensorBoard events are set aside
// under previous-*/ and the rerun says where; they were emptied without
// a word. A log of no completed step is just emptied, as before.
func TestSFTWithoutCheckpointKeepsLoggedSteps(t *testing.T) {
	src := sftModelDir(t)
	for _, tc := range []struct {
		name string
		// stopAfter: the steps the first run finishes before it is
		// stopped (0: an empty log and no run).
		stopAfter int
	}{
		{"logged steps", 4},
		{"no logged step", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			partial := filepath.Join(dir, SFTLogFile+PartialSuffix)
			if tc.stopAfter > 0 {
				h := newSFTHarness(t, src, dir)
				h.cfg.TensorBoard = true
				require.ErrorIs(t, h.run(tc.stopAfter), context.Canceled)
				require.NoError(t, os.RemoveAll(filepath.Join(dir, CheckpointsDir)))
			} else {
				require.NoError(t, os.WriteFile(partial, nil, 0o644))
			}
			left, err := os.ReadFile(partial)
			require.NoError(t, err)
			events, err := filepath.Glob(filepath.Join(dir, TensorBoardDir, "*"))
			require.NoError(t, err)

			h := newSFTHarness(t, src, dir)
			// A warmup of 1: one ending past the steps is warned of.
			h.cfg.Steps, h.parts.Schedule.WarmupSteps = 1, 1
			require.NoError(t, h.run(0))
			require.NotContains(t, h.out.String(), "resumed")
			logged, err := loggedSteps(partial)
			require.NoError(t, err)
			require.Equal(t, map[int]bool{1: true}, logged, "started over: step 1's lines and no other")
			prev, err := filepath.Glob(filepath.Join(dir, previousPattern+"*"))
			require.NoError(t, err)
			if tc.stopAfter == 0 {
				require.Empty(t, prev, "a log of no step is emptied, not set aside")
				require.Empty(t, h.warn.String())
				return
			}
			require.Len(t, prev, 1)
			got, err := os.ReadFile(filepath.Join(prev[0], SFTLogFile+PartialSuffix))
			require.NoError(t, err, "the log set aside")
			require.Equal(t, string(left), string(got))
			require.NotEmpty(t, events)
			for _, e := range events {
				require.FileExists(t, filepath.Join(prev[0], TensorBoardDir, filepath.Base(e)), "the run's events set aside")
			}
			require.Equal(t, fmt.Sprintf("spiral: note: %s logs training up to step %d but holds no checkpoint to resume it from (%s/ removed, or the run stopped before its first): this run starts over; those logs are in %s\n",
				dir, tc.stopAfter, CheckpointsDir, prev[0]), h.warn.String())
		})
	}
}

// TestSFTResumeReplyHead: the reply head that the chat template writes
// (Qwen3's hybrid template's "<think>\n", plain ChatML's none) is a
// setting of the run, as the tokenizer is: a rerun whose template writes
// another, the same tokenizer.json beside it, is refused (exit 2,
// naming it) before the policy is loaded and on resuming, rather than
// training on examples rendered otherwise; a checkpoint of an older
// version, which records none, resumes, warned of where the template
// now writes one (that version's replies had none).
func TestSFTResumeReplyHead(t *testing.T) {
	src := sftModelDir(t)
	head := func(s string) *string { return &s }
	for _, c := range []struct {
		name     string
		recorded *string
		now      *string
		refusal  string // "": resumed
		warning  string // "": none
	}{
		{name: "another head", recorded: head(""), now: head("<think>\n"),
			refusal: `reply_head (--tokenizer's chat template): "" -> "<think>\n"`},
		{name: "the head dropped", recorded: head("<think>\n"), now: head(""),
			refusal: `reply_head (--tokenizer's chat template): "<think>\n" -> ""`},
		{name: "the same head", recorded: head("<think>\n"), now: head("<think>\n")},
		{name: "none recorded, none now", recorded: nil, now: head("")},
		{name: "none recorded, one now", recorded: nil, now: head("<think>\n"),
			warning: `spiral: warning: %s: its checkpoints record no reply head (an older spiral's, whose replies may have opened otherwise); the examples from here on open theirs with "<think>\n", as --tokenizer's chat template writes it` + "\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			h := newSFTHarness(t, src, dir)
			h.parts.Settings.ReplyHead = c.recorded
			require.ErrorIs(t, h.run(2), context.Canceled)

			h = newSFTHarness(t, src, dir)
			h.parts.Settings.ReplyHead = c.now
			checked := CheckSFTRunSettings(h.cfg, SFTParts{Dir: dir, Settings: h.parts.Settings, Schedule: h.parts.Schedule})
			err := h.run(0)
			if c.refusal != "" {
				for _, err := range []error{checked, err} {
					var other *OtherRunError
					require.ErrorAs(t, err, &other)
					require.ErrorContains(t, err, c.refusal)
				}
				require.NotContains(t, h.out.String(), "resumed from")
				return
			}
			require.NoError(t, checked)
			require.NoError(t, err)
			require.Contains(t, h.out.String(), "resumed from")
			warned := ""
			if c.warning != "" {
				warned = fmt.Sprintf(c.warning, dir)
			}
			require.Equal(t, warned, h.warn.String())
		})
	}
}

// TestWarnWithinWarmup: a run whose --steps end before its --warmup does
// (sft --steps 1 with the default --warmup 20) trained at a fraction of
// --lr without a word; it is warned of, once a run: the same again where
// an interrupted run resumes, not where a finished run is rerun, and not
// where the warmup ends by the last step.
func TestWarnWithinWarmup(t *testing.T) {
	const within = "spiral: warning: --steps 6 is below --warmup 8: the run ends inside the warmup, its learning rate at most 0.00225 (6/8 of the peak, --lr 0.003); give --warmup 6 or less to reach the peak\n"
	src := sftModelDir(t)
	for _, c := range []struct {
		name   string
		warmup int64
		want   string // each time steps are left to train
	}{
		{"warmup past the steps", 8, within},
		{"warmup ending at the last step", 6, ""},
		{"no warmup", 0, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			newRun := func() *sftHarness {
				h := newSFTHarness(t, src, dir)
				h.parts.Schedule.WarmupSteps, h.parts.Schedule.TotalSteps = c.warmup, max(6, c.warmup+1)
				return h
			}
			h := newRun()
			require.ErrorIs(t, h.run(2), context.Canceled)
			require.Equal(t, c.want, warmupLines(h.warn.String()), "the interrupted run")
			h = newRun()
			require.NoError(t, h.run(0))
			require.Contains(t, h.out.String(), "resumed from")
			require.Equal(t, c.want, warmupLines(h.warn.String()), "the resumed run")
			h = newRun()
			require.NoError(t, h.run(0))
			require.Empty(t, warmupLines(h.warn.String()), "the finished run, rerun: nothing to train")
		})
	}
}

// warmupLines returns the lines of warn that speak of --warmup.
func warmupLines(warn string) string {
	var out strings.Builder
	for line := range strings.Lines(warn) {
		if strings.Contains(line, "--warmup") {
			out.WriteString(line)
		}
	}
	return out.String()
}
