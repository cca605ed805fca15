package rl

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/spiral-rl/spiral/data"
	"github.com/spiral-rl/spiral/model"
	"github.com/spiral-rl/spiral/model/checkpoint"
	"github.com/spiral-rl/spiral/model/lmgraph"
	"github.com/spiral-rl/spiral/model/optim"
	"github.com/spiral-rl/spiral/model/params"
	"github.com/spiral-rl/spiral/rollout"
	"github.com/spiral-rl/spiral/rollout/report"
)

// runHarness assembles a run on the fakes of trainer_test.go: a trainer
// over a 2x2 weight, a held-out set of two problems, captured output.
type runHarness struct {
	cfg      RunConfig
	parts    RunParts
	out, log bytes.Buffer
	// gen is the generator of the held-out evaluation; cancelEval, when
	// set, is called from inside it (an interruption mid-evaluation).
	gen *runEvalGen
}

// runEvalGen is trainerFakeGen that counts its calls and can cancel a
// context from inside Generate.
type runEvalGen struct {
	calls  int
	cancel func()
}

func (g *runEvalGen) Generate(ctx context.Context, reqs []rollout.Request, p rollout.Progress) ([]rollout.Completion, rollout.Stats, error) {
	g.calls++
	if g.cancel != nil {
		g.cancel()
		return nil, rollout.Stats{}, ctx.Err()
	}
	return trainerFakeGen{}.Generate(ctx, reqs, p)
}

func newRunHarness(t *testing.T, dir string, steps int) *runHarness {
	t.Helper()
	return newRunHarnessOn(t, dir, steps, []data.Problem{{ID: "hard", Problem: "hard", Answer: "1"}, {ID: "easy", Problem: "easy", Answer: "1"}})
}

// newRunHarnessOn is newRunHarness on the given problems (training and
// held out).
func newRunHarnessOn(t *testing.T, dir string, steps int, problems []data.Problem) *runHarness {
	t.Helper()
	w, err := params.NewStore([]params.Spec{{Name: "w", Shape: []int64{2, 2}}})
	require.NoError(t, err)
	opt, err := optim.NewAdamW(optim.DefaultConfig(), w)
	require.NoError(t, err)
	ds := data.NewDataset("t", problems)
	stream := data.NewStream(ds, 3)
	cfg := DefaultConfig()
	cfg.Problems, cfg.MaxDrawRounds, cfg.Pipeline = 1, 2, rollout.PipelineConfig{N1: 4, K: 2, N: 2, N2: 2}
	sched := optim.Schedule{PeakLR: 0.01}
	tr, err := NewTrainer(cfg, TrainerParts{Generator: trainerFakeGen{}, Prompter: trainerFakePrompter{}, Judge: trainerJudge,
		Learner: &trainerFakeLearner{}, Problems: stream, Weights: w, Grads: w.NewGrads(), Optimizer: opt, Schedule: sched})
	require.NoError(t, err)
	h := &runHarness{gen: &runEvalGen{}}
	h.cfg = RunConfig{Dir: dir, Steps: steps, CheckpointEvery: 1, Keep: 0, EvalEvery: 1, EvalSamples: 2}
	h.parts = RunParts{Trainer: tr, Weights: w, Optimizer: opt, Problems: stream,
		Evaluator: rollout.Evaluator{Gen: h.gen, Prompter: trainerFakePrompter{}, Judge: trainerJudge},
		Held:      ds.Problems, Model: "m", Settings: RunSettings{Model: "m", ModelID: "id-m", Data: "d", RL: cfg, Schedule: sched},
		Out: &h.out, Warn: &h.log}
	return h
}

// run runs h as spiral train does, the run directory locked through it.
func (h *runHarness) run(ctx context.Context) error {
	unlock, err := LockRun(h.cfg.Dir)
	if err != nil {
		return err
	}
	return errors.Join(Run(ctx, h.cfg, h.parts), unlock())
}

// loggedEvalSteps lists the steps of eval.jsonl in file order.
func loggedEvalSteps(t *testing.T, dir string) []int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, EvalFile))
	require.NoError(t, err)
	var steps []int
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var e EvalLine
		require.NoError(t, json.Unmarshal([]byte(line), &e))
		steps = append(steps, e.Step)
	}
	return steps
}

// TestRunWithoutEvaluationsWritesNoEvalLog: a run that evaluates
// nothing every --eval-every steps (no held-out problems, as train
// --data without --eval-data, or --eval-every 0) writes no eval.jsonl:
// it wrote an empty one, which tensorboard named among the logs it
// converted. A resumed run that logged evaluations keeps its eval.jsonl
// when its rerun evaluates nothing.
func TestRunWithoutEvaluationsWritesNoEvalLog(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(*runHarness)
	}{
		{"no held-out problems", func(h *runHarness) { h.parts.Held = nil }},
		{"--eval-every 0", func(h *runHarness) { h.cfg.EvalEvery = 0 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			h := newRunHarness(t, dir, 2)
			tc.change(h)
			require.NoError(t, h.run(context.Background()))
			require.FileExists(t, filepath.Join(dir, MetricsFile))
			require.NoFileExists(t, filepath.Join(dir, EvalFile))
			curves, err := ReadRunCurves(dir)
			require.NoError(t, err)
			require.Empty(t, curves.HeldOut.Keys)

			dir = t.TempDir()
			require.NoError(t, newRunHarness(t, dir, 1).run(context.Background()))
			require.Equal(t, []int{0, 1}, loggedEvalSteps(t, dir))
			h = newRunHarness(t, dir, 2)
			tc.change(h)
			require.NoError(t, h.run(context.Background()))
			require.Contains(t, h.out.String(), "(step 1)")
			require.Equal(t, []int{0, 1}, loggedEvalSteps(t, dir), "the resumed run's evaluations kept")

			// A run that evaluated step 0 and was killed before its
			// first checkpoint, rerun evaluating nothing: it starts
			// over, and that line, of no step it resumes, goes with
			// its file.
			require.NoError(t, os.RemoveAll(filepath.Join(dir, CheckpointsDir)))
			require.NoError(t, os.Remove(filepath.Join(dir, MetricsFile)))
			b, err := os.ReadFile(filepath.Join(dir, EvalFile))
			require.NoError(t, err)
			first, _, _ := strings.Cut(string(b), "\n")
			require.NoError(t, os.WriteFile(filepath.Join(dir, EvalFile), []byte(first+"\n"), 0o644))
			h = newRunHarness(t, dir, 1)
			tc.change(h)
			require.NoError(t, h.run(context.Background()))
			require.NoFileExists(t, filepath.Join(dir, EvalFile))
		})
	}
}

// TestRunResumeAndEvalLog: a run of 2 steps logs evaluations at steps 0,
// 1, 2; continuing to 3 resumes at step 2 without evaluating it again; a
// checkpoint whose evaluation line was lost (a kill between the two) is
// evaluated on resume, exactly once, and training.png is drawn again
// with it; a finished run rerun draws a deleted plot again.
func TestRunResumeAndEvalLog(t *testing.T) {
	dir := t.TempDir()
	h := newRunHarness(t, dir, 2)
	require.NoError(t, h.run(context.Background()))
	require.Equal(t, []int{0, 1, 2}, loggedEvalSteps(t, dir))
	require.FileExists(t, filepath.Join(dir, TrainingPlot))

	h = newRunHarness(t, dir, 3)
	require.NoError(t, h.run(context.Background()))
	require.Contains(t, h.out.String(), "(step 2)")
	require.Equal(t, []int{0, 1, 2, 3}, loggedEvalSteps(t, dir))

	// Lose step 3's evaluation line, as a kill right after its checkpoint
	// would; the resumed run (already at its last step) evaluates it.
	b, err := os.ReadFile(filepath.Join(dir, EvalFile))
	require.NoError(t, err)
	lines := strings.SplitAfter(string(b), "\n")
	require.NoError(t, os.WriteFile(filepath.Join(dir, EvalFile), []byte(strings.Join(lines[:3], "")), 0o644))
	plot := filepath.Join(dir, TrainingPlot)
	require.NoError(t, os.Remove(plot))
	h = newRunHarness(t, dir, 3)
	require.NoError(t, h.run(context.Background()))
	require.Equal(t, []int{0, 1, 2, 3}, loggedEvalSteps(t, dir))
	require.Equal(t, 1, h.gen.calls, "one evaluation, of step 3")
	require.FileExists(t, plot, "drawn again with step 3's evaluation")

	require.NoError(t, os.Remove(plot))
	h = newRunHarness(t, dir, 3)
	require.NoError(t, h.run(context.Background()))
	require.Zero(t, h.gen.calls)
	require.FileExists(t, plot, "a finished run rerun draws its plot")
}

// TestRunWithoutCheckpointStartsOver: a run that saved no checkpoint
// (killed, or interrupted in its first step) and is run again starts
// over, its step-0 evaluation included: the one logged may be of other
// settings (another model, other held-out problems, other sampling) that
// nothing recorded.
func TestRunWithoutCheckpointStartsOver(t *testing.T) {
	dir := t.TempDir()
	stale := EvalLine{Step: 0, Problems: 2, Samples: 2, Points: []rollout.KPoint{{K: 1, PassAtK: 0.125}}, Digest: "other"}
	b, err := json.Marshal(stale)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, EvalFile), append(b, '\n'), 0o644))

	h := newRunHarness(t, dir, 1)
	require.NoError(t, h.run(context.Background()))
	require.Equal(t, 2, h.gen.calls, "steps 0 and 1 evaluated")
	require.Equal(t, []int{0, 1}, loggedEvalSteps(t, dir))
	b, err = os.ReadFile(filepath.Join(dir, EvalFile))
	require.NoError(t, err)
	require.NotContains(t, string(b), `"problems_digest":"other"`)
}

// TestRunWithoutCheckpointKeepsLoggedSteps: a run directory whose logs
// hold completed steps but no checkpoint to resume them from (its
// checkpoints/ removed after the run finished, or the run killed before
// its first checkpoint) starts over as before, but its logs, plot and
// final evaluation are set aside under previous-*/, as --fresh sets them,
// and the rerun says where: they were emptied, so a finished run's
// metrics.jsonl and eval.jsonl were lost without a word.
func TestRunWithoutCheckpointKeepsLoggedSteps(t *testing.T) {
	for _, tc := range []struct {
		name string
		lose func(t *testing.T, dir string)
		last int // the last step logged
	}{
		{"checkpoints removed", func(t *testing.T, dir string) {
			require.NoError(t, os.RemoveAll(filepath.Join(dir, CheckpointsDir)))
		}, 2},
		// eval.jsonl's evaluations past step 0 are of completed steps.
		{"checkpoints and metrics removed", func(t *testing.T, dir string) {
			for _, name := range []string{CheckpointsDir, MetricsFile} {
				require.NoError(t, os.RemoveAll(filepath.Join(dir, name)))
			}
		}, 2},
		// Killed after step 1, its first checkpoint due at step 2: no
		// checkpoint, plot or final evaluation, its logs cut at step 1.
		{"killed before the first checkpoint", func(t *testing.T, dir string) {
			for _, name := range []string{CheckpointsDir, TrainingPlot, FinalRSAFile} {
				require.NoError(t, os.RemoveAll(filepath.Join(dir, name)))
			}
			for _, name := range []string{MetricsFile, EvalFile} {
				_, err := truncateLog(filepath.Join(dir, name), 1)
				require.NoError(t, err)
			}
		}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			h := newRunHarness(t, dir, 2)
			h.cfg.FinalRSA = rollout.RSAConfig{Population: 2, SubsetSize: 2, Steps: 1}
			require.NoError(t, h.run(context.Background()))
			tc.lose(t, dir)
			left := map[string][]byte{}
			for _, name := range []string{MetricsFile, EvalFile, FinalRSAFile} {
				if b, err := os.ReadFile(filepath.Join(dir, name)); err == nil {
					left[name] = b
				}
			}
			require.Contains(t, left, EvalFile)

			h = newRunHarness(t, dir, 1)
			require.NoError(t, h.run(context.Background()))
			require.NotContains(t, h.out.String(), "resumed")
			require.Equal(t, []int{0, 1}, loggedEvalSteps(t, dir), "started over")
			prev, err := filepath.Glob(filepath.Join(dir, previousPattern+"*"))
			require.NoError(t, err)
			require.Len(t, prev, 1)
			for name, want := range left {
				got, err := os.ReadFile(filepath.Join(prev[0], name))
				require.NoError(t, err, "%s set aside", name)
				require.Equal(t, string(want), string(got), name)
			}
			require.Equal(t, fmt.Sprintf("spiral: note: %s logs training up to step %d but holds no checkpoint to resume it from (%s removed, or the run stopped before its first): this run starts over; those logs are in %s\n",
				dir, tc.last, CheckpointsDir+"/", prev[0]), h.log.String())
		})
	}
}

// TestRunResumedPastSteps: a run resumed with --steps above the step it
// has reached trains on; with fewer it trains nothing, keeps its logs,
// and says so rather than end as if it had done what was asked; with as
// many, it says that too (it printed only "resumed from ... (step 2)").
func TestRunResumedPastSteps(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, newRunHarness(t, dir, 2).run(context.Background()))
	for _, tc := range []struct {
		steps int
		note  string // "" = none
	}{
		{1, "spiral: note: the run in " + dir + " is at step 2, past --steps 1: nothing to train (give --steps above 2 to go on, or --fresh to start over)"},
		{2, "spiral: note: the run in " + dir + " is at --steps 2 already: nothing to train (give --steps above 2 to go on, or --fresh to start over)\n"},
	} {
		t.Run(strconv.Itoa(tc.steps), func(t *testing.T) {
			h := newRunHarness(t, dir, tc.steps)
			require.NoError(t, h.run(context.Background()))
			require.Contains(t, h.out.String(), "(step 2)")
			require.Equal(t, []int{0, 1, 2}, loggedEvalSteps(t, dir), "nothing lost, nothing added")
			if tc.note == "" {
				require.NotContains(t, h.log.String(), "nothing to train")
			} else {
				require.Contains(t, h.log.String(), tc.note)
			}
		})
	}
}

// TestRunRerunFinished: a finished run rerun with its --steps says it
// trained nothing, and whether its final RSA evaluation was kept or
// redone (missing, or of another step).
func TestRunRerunFinished(t *testing.T) {
	rsa := rollout.RSAConfig{Population: 2, SubsetSize: 2, Steps: 1}
	dir := t.TempDir()
	rerun := func() *runHarness {
		h := newRunHarness(t, dir, 2)
		h.cfg.EvalEvery, h.cfg.FinalRSA = 0, rsa
		require.NoError(t, h.run(context.Background()))
		return h
	}
	h := rerun()
	require.NotContains(t, h.log.String(), "nothing to train", "a run that trained")
	const head = "spiral: note: the run in %s is at --steps 2 already: nothing to train; its final RSA evaluation (rsa.json) "
	h = rerun()
	require.Equal(t, fmt.Sprintf(head+"is kept (give --steps above 2 to go on, or --fresh to start over)\n", dir), h.log.String())
	require.Zero(t, h.gen.calls)
	require.NoError(t, os.Remove(filepath.Join(dir, FinalRSAFile)))
	h = rerun()
	require.Equal(t, fmt.Sprintf(head+"is missing, or of another step, other held-out problems or other settings: it is done again (give --steps above 2 to go on, or --fresh to start over)\n", dir), h.log.String())
	require.NotZero(t, h.gen.calls)
	require.FileExists(t, filepath.Join(dir, FinalRSAFile))
}

// TestRunRerunFinishedOtherFinalRSA: a finished run rerun (under
// --override where a training setting changed too) with other settings
// of its final RSA, which rsa.json records (its config, its meta.extra's
// sampling settings, reward rule and templates), has it done again with
// them; it was kept, of the settings it no longer had. Where they are
// the same it is kept, a template file named otherwise (from another
// directory) with the same contents too.
func TestRunRerunFinishedOtherFinalRSA(t *testing.T) {
	rsa := rollout.RSAConfig{Population: 2, SubsetSize: 2, Steps: 1}
	extra := map[string]string{"temperature": "1", "templates": "aaaa", "search_template": "s.txt (sha256 00)", "skipped_problems": "0"}
	with := func(k, v string) map[string]string {
		e := maps.Clone(extra)
		e[k] = v
		return e
	}
	more, capped := rsa, rsa
	more.Steps, capped.CandidateTokens = 2, 16
	for _, tc := range []struct {
		name  string
		rsa   rollout.RSAConfig
		extra map[string]string
		redo  bool
	}{
		{"the same settings", rsa, extra, false},
		{"a template file named otherwise", rsa, with("search_template", "../s.txt (sha256 00)"), false},
		{"more --final-rsa-steps", more, extra, true},
		{"a candidate cap", capped, extra, true},
		{"another --temperature", rsa, with("temperature", "0.6"), true},
		{"other templates", rsa, with("templates", "bbbb"), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			h := newRunHarness(t, dir, 2)
			h.cfg.EvalEvery, h.cfg.FinalRSA, h.parts.ReportExtra = 0, rsa, extra
			require.NoError(t, h.run(context.Background()))
			h = newRunHarness(t, dir, 2)
			h.cfg.EvalEvery, h.cfg.FinalRSA, h.parts.ReportExtra = 0, tc.rsa, tc.extra
			require.NoError(t, h.run(context.Background()))
			var rep report.RSA
			require.NoError(t, report.ReadJSON(filepath.Join(dir, FinalRSAFile), &rep))
			if !tc.redo {
				require.Contains(t, h.log.String(), "its final RSA evaluation (rsa.json) is kept")
				require.Zero(t, h.gen.calls)
				require.Equal(t, rsa, rep.Config)
				require.Equal(t, extra, rep.Meta.Extra)
				return
			}
			require.Contains(t, h.log.String(), "its final RSA evaluation (rsa.json) is missing, or of another step, other held-out problems or other settings: it is done again")
			require.NotZero(t, h.gen.calls)
			require.Equal(t, tc.rsa, rep.Config)
			delete(rep.Meta.Extra, report.CandidateCapKey) // added where the cap cut candidates
			require.Equal(t, tc.extra, rep.Meta.Extra)
		})
	}
}

// TestRunEvalSamples: each eval.jsonl line holds pass@1 and, with more
// than one sample, pass@k and majority@k at k = --eval-samples, each k
// once (one sample gave two identical k = 1 points).
func TestRunEvalSamples(t *testing.T) {
	for _, tc := range []struct {
		samples int
		ks      []int
	}{{1, []int{1}}, {2, []int{1, 2}}, {3, []int{1, 3}}} {
		t.Run(strconv.Itoa(tc.samples), func(t *testing.T) {
			dir := t.TempDir()
			h := newRunHarness(t, dir, 1)
			h.cfg.EvalSamples = tc.samples
			require.NoError(t, h.run(context.Background()))
			b, err := os.ReadFile(filepath.Join(dir, EvalFile))
			require.NoError(t, err)
			for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
				var e EvalLine
				require.NoError(t, json.Unmarshal([]byte(line), &e))
				require.Equal(t, tc.samples, e.Samples)
				var ks []int
				for _, p := range e.Points {
					ks = append(ks, p.K)
				}
				require.Equal(t, tc.ks, ks, "step %d", e.Step)
			}
		})
	}
}

// TestRunInterruptedEvaluation: Ctrl-C during a held-out evaluation saves
// the step's checkpoint without its evaluation line, and the next run
// redoes that evaluation.
func TestRunInterruptedEvaluation(t *testing.T) {
	dir := t.TempDir()
	h := newRunHarness(t, dir, 2)
	h.cfg.CheckpointEvery = 10
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// The evaluation of step 0 goes through; the one of step 1 is cut.
	h.parts.Evaluator.Gen = &runCancelAt{inner: h.gen, at: 2, cancel: cancel}
	err := h.run(ctx)
	require.ErrorIs(t, err, context.Canceled)
	require.Contains(t, h.log.String(), "interrupted; saving step 1")
	require.Equal(t, []int{0}, loggedEvalSteps(t, dir))
	h = newRunHarness(t, dir, 1)
	require.NoError(t, h.run(context.Background()))
	require.Equal(t, []int{0, 1}, loggedEvalSteps(t, dir))
}

// TestRunInterruptedFinalRSA: Ctrl-C during the final RSA evaluation
// keeps the last step's checkpoint, and rerunning the command does the
// evaluation (at its last step, rsa.json missing) rather than end at
// once without it; a finished run's rsa.json is not redone, and an
// earlier, shorter run's is not taken for the longer one's.
func TestRunInterruptedFinalRSA(t *testing.T) {
	rsa := rollout.RSAConfig{Population: 2, SubsetSize: 2, Steps: 1}
	tests := []struct {
		name string
		// first runs this many steps to the end (0: none) before second,
		// a run to 2 steps interrupted in its final RSA evaluation.
		first int
	}{
		{name: "interrupted run"},
		{name: "run extended past an earlier final evaluation", first: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			rsaPath := filepath.Join(dir, FinalRSAFile)
			newHarness := func(steps int) *runHarness {
				h := newRunHarness(t, dir, steps)
				h.cfg.EvalEvery, h.cfg.FinalRSA = 0, rsa
				return h
			}
			if tt.first > 0 {
				h := newHarness(tt.first)
				require.NoError(t, h.run(context.Background()))
				require.FileExists(t, rsaPath)
			}
			h := newHarness(2)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			h.gen.cancel = cancel
			require.ErrorIs(t, h.run(ctx), context.Canceled)
			require.Contains(t, h.log.String(), "interrupted during the final RSA evaluation")
			require.DirExists(t, filepath.Join(dir, CheckpointsDir, checkpoint.DirName(2)), "the last step is saved")
			require.NoFileExists(t, rsaPath)

			h = newHarness(2)
			require.NoError(t, h.run(context.Background()))
			require.Contains(t, h.out.String(), "resumed from")
			require.Positive(t, h.gen.calls, "the final evaluation is redone")
			require.Contains(t, h.out.String(), "held-out summary:")
			require.FileExists(t, rsaPath)
			// The report names the weights evaluated, the run's last
			// checkpoint, as eval names a checkpoint it reads.
			var rep report.RSA
			require.NoError(t, report.ReadJSON(rsaPath, &rep))
			require.Equal(t, h.parts.Model+"@"+filepath.Base(dir)+"/"+checkpoint.DirName(2), rep.Meta.Model)

			h = newHarness(2)
			require.NoError(t, h.run(context.Background()))
			require.Zero(t, h.gen.calls, "a finished run's final evaluation is not redone")
		})
	}
}

// runCancelAt cancels the context on its at-th call.
type runCancelAt struct {
	inner  rollout.Generator
	n, at  int
	cancel func()
}

func (g *runCancelAt) Generate(ctx context.Context, reqs []rollout.Request, p rollout.Progress) ([]rollout.Completion, rollout.Stats, error) {
	g.n++
	if g.n == g.at {
		g.cancel()
		return nil, rollout.Stats{}, ctx.Err()
	}
	return g.inner.Generate(ctx, reqs, p)
}

// runCancelSync is a serving engine's weight sync that cancels the run's
// context inside its at-th Sync, as Ctrl-C during an export or a load.
type runCancelSync struct {
	n, at   int
	cancel  func()
	version string
}

func (s *runCancelSync) Sync(ctx context.Context, step int) error {
	s.n++
	if s.n == s.at {
		s.cancel()
		return ctx.Err()
	}
	s.version = fmt.Sprintf("v%d", step)
	return nil
}

func (s *runCancelSync) Version() string { return s.version }

func (*runCancelSync) Check(context.Context) error { return nil }

// TestRunInterruptedEngineSync: Ctrl-C during a serving engine's weight
// sync saves the last completed step, whether the sync comes before a
// step's rollouts or before a held-out evaluation, as an interruption in
// the rollouts or the evaluation themselves does.
func TestRunInterruptedEngineSync(t *testing.T) {
	for _, tc := range []struct {
		name      string
		evalEvery int
	}{
		// Syncs: step 0's evaluation, then step 1's weights before step
		// 2's rollouts (cut).
		{"before a step's rollouts", 2},
		// Syncs: step 0's evaluation, then step 1's weights before step
		// 1's evaluation (cut).
		{"before an evaluation", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			h := newRunHarness(t, dir, 2)
			h.cfg.CheckpointEvery, h.cfg.EvalEvery = 10, tc.evalEvery
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			h.parts.Trainer.sync = &runCancelSync{at: 2, cancel: cancel}
			err := h.run(ctx)
			require.ErrorIs(t, err, context.Canceled)
			require.Contains(t, h.log.String(), "interrupted; saving step 1")
			require.DirExists(t, filepath.Join(dir, CheckpointsDir, "ckpt-000001"), "step 1's training is kept")
		})
	}
}

// TestRunInterruptBeforeFirstStep: an interruption before any step
// completes saves nothing and says so (no claim of a step-0 checkpoint).
func TestRunInterruptBeforeFirstStep(t *testing.T) {
	dir := t.TempDir()
	h := newRunHarness(t, dir, 3)
	h.cfg.EvalEvery = 0
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := h.run(ctx)
	require.ErrorIs(t, err, context.Canceled)
	require.Contains(t, h.log.String(), "nothing to save")
	require.NotContains(t, h.log.String(), "saving step 0")
	_, _, err = checkpoint.Newest(filepath.Join(dir, CheckpointsDir), func(string) error { return nil })
	require.ErrorIs(t, err, checkpoint.ErrNoCheckpoint)
}

// failAt fails the at-th of its calls with errFailed (1-based).
type failAt struct{ n, at int }

var errFailed = errors.New("engine gone")

func (f *failAt) fail() error {
	f.n++
	if f.n == f.at {
		return errFailed
	}
	return nil
}

// failSync is a serving engine's weight sync whose at-th Sync fails.
type failSync struct{ failAt }

func (s *failSync) Sync(context.Context, int) error { return s.fail() }
func (*failSync) Version() string                   { return "" }
func (*failSync) Check(context.Context) error       { return nil }

// failGen is the held-out evaluation's generator failing at its at-th call.
type failGen struct {
	failAt
	inner rollout.Generator
}

func (g *failGen) Generate(ctx context.Context, reqs []rollout.Request, p rollout.Progress) ([]rollout.Completion, rollout.Stats, error) {
	if err := g.fail(); err != nil {
		return nil, rollout.Stats{}, err
	}
	return g.inner.Generate(ctx, reqs, p)
}

// failUpdateLearner is deviceFakeLearner whose at-th Update fails.
type failUpdateLearner struct {
	deviceFakeLearner
	failAt
}

func (l *failUpdateLearner) Update(lr, maxGradNorm float64) (model.UpdateResult, error) {
	if err := l.fail(); err != nil {
		return model.UpdateResult{}, err
	}
	return l.deviceFakeLearner.Update(lr, maxGradNorm)
}

// cancelUpdateLearner is failUpdateLearner whose failing update comes
// with Ctrl-C (cancel).
type cancelUpdateLearner struct {
	failUpdateLearner
	cancel context.CancelFunc
}

func (l *cancelUpdateLearner) Update(lr, maxGradNorm float64) (model.UpdateResult, error) {
	r, err := l.failUpdateLearner.Update(lr, maxGradNorm)
	if err != nil {
		l.cancel()
	}
	return r, err
}

// TestRunFailedUpdateInterrupted: an update that fails while Ctrl-C
// arrives saves nothing either, its weights being neither its step's nor
// the one before (step 1 was saved with step 2's part-updated weights).
func TestRunFailedUpdateInterrupted(t *testing.T) {
	dir := t.TempDir()
	h := newRunHarness(t, dir, 3)
	h.cfg.CheckpointEvery, h.cfg.EvalEvery = 10, 0
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	tr := h.parts.Trainer
	tr.learner, tr.grads = &cancelUpdateLearner{failUpdateLearner{failAt: failAt{at: 2}}, cancel}, nil
	err := h.run(ctx)
	require.ErrorIs(t, err, errFailed)
	require.Error(t, ctx.Err(), "the update came with Ctrl-C")
	require.Equal(t, "spiral: step 2 failed in its update, which may have changed part of the weights: they are not saved; a rerun starts over, no step being saved yet\n", h.log.String())
	require.NoDirExists(t, filepath.Join(dir, CheckpointsDir, "ckpt-000001"))
}

// TestSaveFailedUpdate: a failed update saves nothing, and the warning
// says where a rerun goes on: from the newest checkpoint, or from the
// start where none was saved (it said "resumes from step 0, the newest
// checkpoint" with none).
func TestSaveFailedUpdate(t *testing.T) {
	for _, tc := range []struct {
		lastSaved int
		want      string
	}{
		{0, "spiral: step 3 failed in its update, which may have changed part of the weights: they are not saved; a rerun starts over, no step being saved yet\n"},
		{1, "spiral: step 3 failed in its update, which may have changed part of the weights: they are not saved; a rerun resumes from step 1, the newest checkpoint\n"},
	} {
		var warn bytes.Buffer
		cause := &UpdateError{Step: 3, Err: errFailed}
		err := saveFailed(&warn, 2, tc.lastSaved, cause, func() error { t.Fatal("saved"); return nil })
		require.Equal(t, cause, err)
		require.Equal(t, tc.want, warn.String())
	}
}

// TestRunFailureSavesCompletedSteps: a run that fails after completing a
// step that is not checkpointed yet (a serving engine's sync before the
// next step's rollouts or before an evaluation, the evaluation itself)
// saves that step before returning the error, so a rerun resumes there
// instead of from the start; a failure in a step's update saves nothing,
// its weights being neither that step's nor the one before.
func TestRunFailureSavesCompletedSteps(t *testing.T) {
	for _, tc := range []struct {
		name      string
		evalEvery int
		fail      func(h *runHarness)
		saved     bool
		log       string
	}{
		// Syncs: step 0's evaluation, step 1's weights before step 2's
		// rollouts (fails).
		{"engine sync before a step", 2, func(h *runHarness) { h.parts.Trainer.sync = &failSync{failAt{at: 2}} }, true, "failed after step 1; saving it"},
		// Syncs: step 0's evaluation, step 1's weights before step 1's
		// evaluation (fails).
		{"engine sync before an evaluation", 1, func(h *runHarness) { h.parts.Trainer.sync = &failSync{failAt{at: 2}} }, true, "failed after step 1; saving it"},
		{"evaluation", 1, func(h *runHarness) { h.parts.Evaluator.Gen = &failGen{failAt{at: 2}, h.gen} }, true, "failed after step 1; saving it"},
		{"update", 0, func(h *runHarness) {
			tr := h.parts.Trainer
			tr.learner, tr.grads = &failUpdateLearner{failAt: failAt{at: 2}}, nil
		}, false, "spiral: step 2 failed in its update, which may have changed part of the weights: they are not saved; a rerun starts over, no step being saved yet\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			h := newRunHarness(t, dir, 3)
			h.cfg.CheckpointEvery, h.cfg.EvalEvery = 10, tc.evalEvery
			tc.fail(h)
			err := h.run(context.Background())
			require.ErrorIs(t, err, errFailed)
			require.Contains(t, h.log.String(), tc.log)
			ckpt := filepath.Join(dir, CheckpointsDir, "ckpt-000001")
			if !tc.saved {
				require.NoDirExists(t, ckpt)
				return
			}
			require.DirExists(t, ckpt, "step 1's training is kept")
			h = newRunHarness(t, dir, 3)
			h.cfg.CheckpointEvery, h.cfg.EvalEvery = 10, tc.evalEvery
			require.NoError(t, h.run(context.Background()))
			require.Contains(t, h.out.String(), "ckpt-000003")
			ms, err := readMetrics(filepath.Join(dir, MetricsFile))
			require.NoError(t, err)
			var steps []int
			for _, m := range ms {
				steps = append(steps, m.Step)
			}
			require.Equal(t, []int{1, 2, 3}, steps, "the rerun resumed at step 1")
		})
	}
}

// TestRunSettingsMustMatch: resuming with other settings is refused,
// naming each difference, unless Override; another model (by id) or
// another data set is refused even then.
func TestRunSettingsMustMatch(t *testing.T) {
	dir := t.TempDir()
	h := newRunHarness(t, dir, 1)
	h.cfg.EvalEvery = 0
	require.NoError(t, h.run(context.Background()))

	h = newRunHarness(t, dir, 2)
	h.cfg.EvalEvery = 0
	h.parts.Settings.Schedule.PeakLR = 0.02
	h.parts.Settings.RL.Pipeline.N1 = 6
	err := h.run(context.Background())
	require.ErrorContains(t, err, "schedule.peak_lr (--lr): 0.01 -> 0.02")
	require.ErrorContains(t, err, "rl.pipeline.n1 (--n1): 4 -> 6")
	require.ErrorContains(t, err, "--override")
	h.cfg.Override = true
	require.NoError(t, h.run(context.Background()))
	require.Contains(t, h.log.String(), "--override: continuing")

	h = newRunHarness(t, dir, 3)
	h.cfg.EvalEvery, h.cfg.Override = 0, true
	h.parts.Settings.ModelID = "id-other"
	require.ErrorContains(t, h.run(context.Background()), "use another --out, or --fresh")
	// The same model moved elsewhere (same id, other path) resumes, with
	// the settings the override recorded.
	h = newRunHarness(t, dir, 3)
	h.cfg.EvalEvery = 0
	h.parts.Settings.Model = "moved/m"
	h.parts.Settings.Schedule.PeakLR = 0.02
	h.parts.Settings.RL.Pipeline.N1 = 6
	require.NoError(t, h.run(context.Background()))
}

// TestRunOtherHeldOut: a rerun whose held-out problems differ from the
// run's (another --eval-data, another --eval-problems) is refused, naming
// them, unless Override: its evaluations would continue eval.jsonl's
// curve on other problems. A rerun that evaluates nothing is not.
func TestRunOtherHeldOut(t *testing.T) {
	dir := t.TempDir()
	h := newRunHarness(t, dir, 1)
	h.parts.HeldName = "gsm8k.jsonl"
	require.NoError(t, h.run(context.Background()))

	other := []data.Problem{{ID: "x", Problem: "x", Answer: "2"}, {ID: "y", Problem: "y", Answer: "3"}}
	h = newRunHarness(t, dir, 2)
	h.parts.Held, h.parts.HeldName = other, "math500.jsonl"
	err := h.run(context.Background())
	require.ErrorContains(t, err, `held_out.data (--eval-data): "gsm8k.jsonl" -> "math500.jsonl"`)
	require.ErrorContains(t, err, "held_out.digest (the problems of --eval-data and --eval-problems): ")
	require.ErrorContains(t, err, "--override")

	h = newRunHarness(t, dir, 2)
	h.parts.Held, h.parts.HeldName = h.parts.Held[:1], "gsm8k.jsonl"
	require.ErrorContains(t, h.run(context.Background()), "held_out.problems (--eval-problems): 2 -> 1")

	h = newRunHarness(t, dir, 2)
	h.cfg.EvalEvery = 0
	require.NoError(t, h.run(context.Background()))

	h = newRunHarness(t, dir, 3)
	h.parts.Held, h.parts.HeldName = other, "math500.jsonl"
	h.cfg.Override = true
	require.NoError(t, h.run(context.Background()))
	require.Contains(t, h.log.String(), `held_out.data (--eval-data): "gsm8k.jsonl" -> "math500.jsonl"`)
	require.Contains(t, h.log.String(), "spiral: --override: the held-out problems are others than the run's (math500.jsonl, 2 problems, not gsm8k.jsonl, 2 problems): "+
		"eval.jsonl's held-out figures up to step 2 and those after it are on different problems, not one curve\n")
}

// TestRunHeldOutSameNameOtherFile: an --eval-data of the run's name that
// is another file (given from another directory) of other problems is
// refused naming both files, and with Override goes on warning that the
// held-out figures before and after are on different problems.
func TestRunHeldOutSameNameOtherFile(t *testing.T) {
	dir := t.TempDir()
	h := newRunHarness(t, dir, 1)
	h.parts.HeldName, h.parts.HeldPath = "held.jsonl", "/w/held.jsonl"
	require.NoError(t, h.run(context.Background()))

	other := []data.Problem{{ID: "x", Problem: "x", Answer: "2"}, {ID: "y", Problem: "y", Answer: "3"}}
	h = newRunHarness(t, dir, 2)
	h.parts.Held, h.parts.HeldName, h.parts.HeldPath = other, "held.jsonl", "/v/held.jsonl"
	err := h.run(context.Background())
	require.ErrorContains(t, err, `held_out.data (--eval-data): "held.jsonl" (/w/held.jsonl) -> "held.jsonl" (/v/held.jsonl): another file of that name`)

	h = newRunHarness(t, dir, 2)
	h.parts.Held, h.parts.HeldName, h.parts.HeldPath = other, "held.jsonl", "/v/held.jsonl"
	h.cfg.Override = true
	require.NoError(t, h.run(context.Background()))
	require.Contains(t, h.log.String(), "spiral: --override: the held-out problems are others than the run's (held.jsonl (/v/held.jsonl), 2 problems, not held.jsonl (/w/held.jsonl), 2 problems): "+
		"eval.jsonl's held-out figures up to step 1 and those after it are on different problems, not one curve\n")
}

// TestRunResumeCRLFTemplates: a checkpoint recording the fingerprint
// that versions keeping a template file's CRLF line ends took of it
// (RunParts.CRLFTemplates) resumes under the fingerprint of the same
// file read with LF line ends, saying that the prompts now have LF ones,
// and records the new fingerprint; other templates are still refused.
func TestRunResumeCRLFTemplates(t *testing.T) {
	dir := t.TempDir()
	withTemplates := func(steps int, templates, crlf string) *runHarness {
		h := newRunHarness(t, dir, steps)
		h.cfg.EvalEvery = 0
		h.parts.Settings.Sampling = SamplingSettings(1, 1, 0, 8, "", TemplatePrints{Both: templates, Search: "s", Aggregate: "a"})
		h.parts.CRLFTemplates = crlf
		return h
	}
	// The versions that kept CRLF line ends recorded both templates'
	// fingerprint alone.
	first := withTemplates(1, "crlf", "")
	delete(first.parts.Settings.Sampling, searchTemplateField)
	delete(first.parts.Settings.Sampling, aggregateTemplateField)
	require.NoError(t, first.run(context.Background()))

	h := withTemplates(2, "other", "")
	require.ErrorContains(t, h.run(context.Background()), `sampling.templates (--search-template, --aggregate-template): "crlf" -> "other"`)
	h = withTemplates(2, "other", "another")
	require.ErrorContains(t, h.run(context.Background()), `sampling.templates (--search-template, --aggregate-template): "crlf" -> "other"`)
	// Refused for another setting: no note of a resume that did not
	// happen.
	h = withTemplates(2, "lf", "crlf")
	h.parts.Settings.Schedule.PeakLR = 0.02
	require.ErrorContains(t, h.run(context.Background()), "schedule.peak_lr (--lr): 0.01 -> 0.02")
	require.Empty(t, h.log.String())

	h = withTemplates(2, "lf", "crlf")
	require.NoError(t, h.run(context.Background()))
	require.Contains(t, h.out.String(), "(step 1)")
	require.Equal(t, "spiral: note: the prompt templates' files have CRLF line ends, which the run's steps up to 1 kept in their prompts; they read as LF now\n", h.log.String())
	s, err := CheckpointSettings(filepath.Join(dir, CheckpointsDir, checkpoint.DirName(2)))
	require.NoError(t, err)
	require.Equal(t, "lf", s.Sampling["templates"])

	h = withTemplates(3, "lf", "crlf")
	require.NoError(t, h.run(context.Background()))
	require.Empty(t, h.log.String(), "the run records the new fingerprint")
}

// TestRunOtherLoRAPastDamage: a rerun with other LoRA settings is told
// so even when the newest checkpoint's state is damaged (the older
// checkpoint's settings say it).
func TestRunOtherLoRAPastDamage(t *testing.T) {
	dir := t.TempDir()
	h := newRunHarness(t, dir, 2)
	h.cfg.EvalEvery = 0
	require.NoError(t, h.run(context.Background()))
	require.NoError(t, os.WriteFile(filepath.Join(dir, CheckpointsDir, "ckpt-000002", checkpoint.StateFile), []byte("{"), 0o644))

	h = newRunHarness(t, dir, 3)
	h.cfg.EvalEvery = 0
	h.parts.Settings.LoRA = &lmgraph.LoRA{Rank: 4, Alpha: 8, Targets: []string{"q_proj"}}
	require.ErrorContains(t, h.run(context.Background()), "holds a run with full fine-tuning; this one is lora rank=4")
}

// TestRunOtherTensors: a rerun whose weights are other tensors than the
// checkpoint's is refused naming what made them differ, as the same
// layout would be after loading (another model, data set or algorithm),
// or the --train and --freeze selection; only where the settings tell
// nothing does the error list the tensors.
func TestRunOtherTensors(t *testing.T) {
	dir := t.TempDir()
	h := newRunHarness(t, dir, 1)
	h.cfg.EvalEvery = 0
	h.parts.Settings.Sampling = map[string]any{"selection": `train="" freeze=""`}
	require.NoError(t, h.run(context.Background()))

	for _, tc := range []struct {
		name   string
		change func(s *RunSettings)
		want   string
	}{
		{"other model", func(s *RunSettings) { s.Model, s.ModelID = "m2", "id-m2" },
			dir + " holds a run of m on d (spiral); this one is m2 on d (spiral): use another --out, or --fresh"},
		{"other selection", func(s *RunSettings) { s.Sampling = map[string]any{"selection": `train="" freeze="norm"`} },
			dir + ` holds a run that trains other parameters (sampling.selection (--train, --freeze): train="" freeze="" -> train="" freeze="norm"): use the same --train and --freeze, another --out, or --fresh`},
		{"settings alike", func(*RunSettings) {}, `unexpected tensor "w"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newRunHarness(t, dir, 2)
			h.cfg.EvalEvery, h.cfg.Override = 0, true
			h.parts.Settings.Sampling = map[string]any{"selection": `train="" freeze=""`}
			tc.change(&h.parts.Settings)
			w, err := params.NewStore([]params.Spec{{Name: "v", Shape: []int64{2, 2}}})
			require.NoError(t, err)
			opt, err := optim.NewAdamW(optim.DefaultConfig(), w)
			require.NoError(t, err)
			h.parts.Weights, h.parts.Optimizer = w, opt
			err = h.run(context.Background())
			require.ErrorContains(t, err, tc.want)
			if tc.name != "settings alike" {
				require.NotContains(t, err.Error(), "tensor")
			}
		})
	}
}

// TestRunLoRATargetsAsASet: a run whose checkpoint lists its LoRA
// targets in another order (as older versions saved them as given)
// resumes with the same targets.
func TestRunLoRATargetsAsASet(t *testing.T) {
	dir := t.TempDir()
	h := newRunHarness(t, dir, 1)
	h.cfg.EvalEvery = 0
	h.parts.Settings.LoRA = &lmgraph.LoRA{Rank: 4, Alpha: 8, Targets: []string{"v_proj", "q_proj"}}
	require.NoError(t, h.run(context.Background()))

	h = newRunHarness(t, dir, 2)
	h.cfg.EvalEvery = 0
	h.parts.Settings.LoRA = &lmgraph.LoRA{Rank: 4, Alpha: 8, Targets: []string{"q_proj", "v_proj"}}
	require.NoError(t, h.run(context.Background()))
	require.Contains(t, h.out.String(), "(step 1)")
}

// TestRunEvalLine: the held-out line gives pass@k and majority@k beside
// pass@1 when there is more than one sample a problem.
func TestRunEvalLine(t *testing.T) {
	for _, c := range []struct {
		samples int
		want    string
	}{
		{1, `(?m)^eval   0  held-out pass@1 \d\.\d{3}  \(2 problems\)$`},
		{2, `(?m)^eval   0  held-out pass@1 \d\.\d{3}  pass@2 \d\.\d{3}  majority@2 \d\.\d{3}  \(2 problems\)$`},
	} {
		h := newRunHarness(t, t.TempDir(), 1)
		h.cfg.EvalSamples = c.samples
		require.NoError(t, h.run(context.Background()))
		require.Regexp(t, c.want, h.out.String())
	}
}

// TestRunDataChanged: a run resumed on a data file that now holds
// another number of usable problems, or as many but others (the file
// edited in place), stops with what to do; --override goes on from a new
// epoch of the new data, which later reruns resume as usual.
func TestRunDataChanged(t *testing.T) {
	for _, tc := range []struct {
		name              string
		problems          []data.Problem
		wantErr, wantNote string
	}{
		{"another number", []data.Problem{{ID: "a", Problem: "a", Answer: "1"}, {ID: "b", Problem: "b", Answer: "1"}, {ID: "c", Problem: "c", Answer: "1"}},
			"the run drew from 2 usable problems and d now has 3", "--override: d now has 3 usable problems, not 2: going on from the start of a new epoch"},
		{"as many, others", []data.Problem{{ID: "hard", Problem: "hard", Answer: "1"}, {ID: "easy", Problem: "easy", Answer: "2"}},
			"the run drew from other problems than the 2 usable ones d now holds (the file changed)", "--override: d now holds other problems: going on from the start of a new epoch"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			h := newRunHarness(t, dir, 1)
			h.cfg.EvalEvery = 0
			require.NoError(t, h.run(context.Background()))

			h = newRunHarnessOn(t, dir, 2, tc.problems)
			h.cfg.EvalEvery = 0
			err := h.run(context.Background())
			require.ErrorContains(t, err, tc.wantErr)
			require.ErrorContains(t, err, "--override")

			h = newRunHarnessOn(t, dir, 2, tc.problems)
			h.cfg.EvalEvery, h.cfg.Override = 0, true
			require.NoError(t, h.run(context.Background()))
			require.Contains(t, h.log.String(), tc.wantNote)
			require.Contains(t, h.out.String(), "(step 1)")
			cur := h.parts.Problems.Cursor()
			require.Equal(t, len(tc.problems), cur.Size)
			require.Equal(t, 1, cur.Epoch)

			h = newRunHarnessOn(t, dir, 3, tc.problems)
			h.cfg.EvalEvery = 0
			require.NoError(t, h.run(context.Background()))
			require.Contains(t, h.out.String(), "(step 2)")
		})
	}
}

// TestRunDataMoved: a rerun on the run's data file moved, or given by
// another path, whose usable problems are the run's (RunSettings.DataID)
// resumes, under the new name; another file of other problems, or a
// checkpoint that records no DataID, is another data set, refused as
// before.
func TestRunDataMoved(t *testing.T) {
	problems := []data.Problem{{ID: "hard", Problem: "hard", Answer: "1"}, {ID: "easy", Problem: "easy", Answer: "1"}}
	others := []data.Problem{{ID: "hard", Problem: "hard", Answer: "1"}, {ID: "easy", Problem: "easy", Answer: "2"}}
	harness := func(dir string, steps int, name string, problems []data.Problem, recordID bool) *runHarness {
		h := newRunHarnessOn(t, dir, steps, problems)
		h.cfg.EvalEvery = 0
		h.parts.Settings.Data = name
		if recordID {
			h.parts.Settings.DataID = data.ProblemsDigest(problems)
		}
		return h
	}
	dir := t.TempDir()
	require.NoError(t, harness(dir, 1, "d", problems, true).run(context.Background()))
	h := harness(dir, 2, "../moved/d", problems, true)
	require.NoError(t, h.run(context.Background()))
	require.Contains(t, h.out.String(), "(step 1)")
	require.Empty(t, h.log.String())

	for _, tc := range []struct {
		name     string
		problems []data.Problem
		recordID bool
	}{
		{"other problems", others, true},
		{"no id recorded", problems, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			require.NoError(t, harness(dir, 1, "d", problems, tc.recordID).run(context.Background()))
			err := harness(dir, 2, "e", tc.problems, true).run(context.Background())
			require.EqualError(t, err, dir+" holds a run of m on d (spiral); this one is m on e (spiral): use another --out, or --fresh")
		})
	}
	// The id is no setting: a checkpoint that records none passes on the
	// data's name, with nothing to override.
	require.Empty(t, settingsDiff(RunSettings{Data: "d"}, RunSettings{Data: "d", DataID: "x"}))
}

// TestRunDataSameNameOtherFile: a rerun whose --data has the run's name
// but is another file (a relative path given from another directory) of
// other problems is refused as the other data set it is, naming both
// files, not as the run's file changed (which --override would go on
// with); the same problems, or the run's file through a link, resume.
func TestRunDataSameNameOtherFile(t *testing.T) {
	problems := []data.Problem{{ID: "hard", Problem: "hard", Answer: "1"}, {ID: "easy", Problem: "easy", Answer: "1"}}
	others := []data.Problem{{ID: "hard", Problem: "hard", Answer: "1"}, {ID: "easy", Problem: "easy", Answer: "2"}}
	files := t.TempDir()
	a, b, link := filepath.Join(files, "a", "p.jsonl"), filepath.Join(files, "b", "p.jsonl"), filepath.Join(files, "link")
	for _, f := range []string{a, b} {
		require.NoError(t, os.MkdirAll(filepath.Dir(f), 0o755))
		require.NoError(t, os.WriteFile(f, nil, 0o644))
	}
	require.NoError(t, os.Symlink(filepath.Join(files, "a"), link))
	harness := func(dir string, steps int, path string, problems []data.Problem) *runHarness {
		h := newRunHarnessOn(t, dir, steps, problems)
		h.cfg.EvalEvery = 0
		h.parts.Settings.Data, h.parts.Settings.DataPath, h.parts.Settings.DataID = "p.jsonl", path, data.ProblemsDigest(problems)
		return h
	}
	for _, tc := range []struct {
		name     string
		path     string
		problems []data.Problem
		override bool
		wantErr  string
	}{
		{"other file, other problems", b, others, false, " holds a run of m on p.jsonl (" + a + ") (spiral); this one is m on p.jsonl (" + b + ") (spiral): another file of that name: use another --out, or --fresh"},
		{"other file, other problems, --override", b, others, true, " holds a run of m on p.jsonl (" + a + ") (spiral); this one is m on p.jsonl (" + b + ") (spiral): another file of that name: use another --out, or --fresh"},
		{"other file, same problems", b, problems, false, ""},
		{"the file through a link, edited", filepath.Join(link, "p.jsonl"), others, false, "the run drew from other problems than the 2 usable ones p.jsonl now holds (the file changed)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			require.NoError(t, harness(dir, 1, a, problems).run(context.Background()))
			h := harness(dir, 2, tc.path, tc.problems)
			h.cfg.Override = tc.override
			err := h.run(context.Background())
			if tc.wantErr == "" {
				require.NoError(t, err)
				require.Contains(t, h.out.String(), "(step 1)")
				return
			}
			require.ErrorContains(t, err, tc.wantErr)
		})
	}
}

// TestSettingsDiffRounds: a run saved before --agg-rounds (no rounds)
// is a one-round run; another number of rounds is a difference.
func TestSettingsDiffRounds(t *testing.T) {
	var old, one, two RunSettings
	one.RL.Pipeline.Rounds, two.RL.Pipeline.Rounds = 1, 2
	require.Empty(t, settingsDiff(old, one))
	require.Equal(t, []string{"rl.pipeline.rounds (--agg-rounds): 1 -> 2"}, settingsDiff(old, two))
}

// TestSettingsDiffTemplates: other prompt templates are a settings
// difference, named with their flags; a checkpoint of an older version,
// which records no templates, is not.
func TestSettingsDiffTemplates(t *testing.T) {
	settings := func(templates string) RunSettings {
		s := RunSettings{Model: "m", Data: "d", RL: Config{Algo: "spiral"}, Sampling: map[string]any{"max_new_tokens": 96}}
		if templates != "" {
			s.Sampling["templates"] = templates
		}
		return s
	}
	older, a, b := settings(""), settings("aaaa"), settings("bbbb")
	for _, tc := range []struct {
		name     string
		old, now RunSettings
		want     []string
	}{
		{"saved before templates were recorded", older, a, nil},
		{"the same templates", a, a, nil},
		{"other templates", a, b, []string{`sampling.templates (--search-template, --aggregate-template): "aaaa" -> "bbbb"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, settingsDiff(tc.old, tc.now))
		})
	}
}

// TestSettingsDiffTemplatesRead: a run records each template's
// fingerprint beside both's, and a rerun compares those its algorithm
// reads: GRPO without a final RSA reads no aggregation template, which
// train warns it ignores (its rerun with another was refused for the
// fingerprint of both); with a final RSA, or under SPIRAL, it is read.
// A checkpoint of an older version, recording both templates'
// fingerprint alone, is compared by it, as before.
func TestSettingsDiffTemplatesRead(t *testing.T) {
	prints := func(search, aggregate string) TemplatePrints {
		return TemplatePrints{Both: search + "+" + aggregate, Search: search, Aggregate: aggregate}
	}
	recorded := func(algo string, finalRSA bool, t TemplatePrints, older bool) RunSettings {
		cfg := RunConfig{}
		if finalRSA {
			cfg.FinalRSA.Steps = 1
		}
		s := recordedSettings(cfg, RunParts{Held: []data.Problem{{ID: "h"}},
			Settings: RunSettings{RL: Config{Algo: algo}, Sampling: SamplingSettings(1, 1, 0, 8, "", t)}})
		if older {
			delete(s.Sampling, searchTemplateField)
			delete(s.Sampling, aggregateTemplateField)
		}
		return s
	}
	const (
		both      = `sampling.templates (--search-template, --aggregate-template): "s+a" -> `
		search    = `sampling.search_template (--search-template): "s" -> "t"`
		aggregate = `sampling.aggregate_template (--aggregate-template): "a" -> "b"`
	)
	for _, tc := range []struct {
		name     string
		algo     string
		finalRSA bool
		older    bool
		now      TemplatePrints
		want     []string
	}{
		{"grpo without a final RSA, another aggregation template", AlgoGRPO, false, false, prints("s", "b"), nil},
		{"grpo without a final RSA, another search template", AlgoGRPO, false, false, prints("t", "a"), []string{search}},
		{"grpo with a final RSA, another aggregation template", AlgoGRPO, true, false, prints("s", "b"), []string{aggregate}},
		{"spiral, another aggregation template", AlgoSpiral, false, false, prints("s", "b"), []string{aggregate}},
		{"spiral, both other", AlgoSpiral, true, false, prints("t", "b"), []string{aggregate, search}},
		{"spiral, the same", AlgoSpiral, true, false, prints("s", "a"), nil},
		{"older checkpoint, grpo, another aggregation template", AlgoGRPO, false, true, prints("s", "b"), []string{both + `"s+b"`}},
		{"older checkpoint, the same", AlgoGRPO, false, true, prints("s", "a"), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prev := recorded(tc.algo, tc.finalRSA, prints("s", "a"), tc.older)
			now := recorded(tc.algo, tc.finalRSA, tc.now, false)
			require.Equal(t, tc.want, settingsDiff(prev, now))
			_, recordsAggregate := now.Sampling[aggregateTemplateField]
			require.Equal(t, tc.algo != AlgoGRPO || tc.finalRSA, recordsAggregate)
		})
	}
}

// TestSettingsDiffHeldOut: the held-out problems differ only where both
// settings record them: a checkpoint saved before held_out was recorded
// (state.json of an older version) or by a run that evaluated nothing
// resumes under any held-out problems, and a run that evaluates nothing
// resumes any checkpoint; other problems, or as many others, differ.
func TestSettingsDiffHeldOut(t *testing.T) {
	// settings reads the run settings of a checkpoint of an older version,
	// with held set (nil: none recorded).
	settings := func(held *HeldOut) RunSettings {
		var s RunSettings
		require.NoError(t, json.Unmarshal([]byte(`{"model":"m","model_id":"id","data":"d","rl":{"algo":"spiral"},"schedule":{},"sampling":{"max_new_tokens":96}}`), &s))
		s.HeldOut = held
		return s
	}
	older, gsm := settings(nil), settings(&HeldOut{Data: "gsm8k.jsonl", Problems: 64, Digest: "aaaa"})
	other := settings(&HeldOut{Data: "gsm8k.jsonl", Problems: 64, Digest: "bbbb"})
	fewer := settings(&HeldOut{Data: "gsm8k.jsonl", Problems: 32, Digest: "cccc"})
	for _, tc := range []struct {
		name     string
		old, now RunSettings
		want     []string
	}{
		{"saved before held_out", older, gsm, nil},
		{"a rerun that evaluates nothing", gsm, older, nil},
		{"the same problems", gsm, gsm, nil},
		{"as many other problems", gsm, other, []string{`held_out.digest (the problems of --eval-data and --eval-problems): "aaaa" -> "bbbb"`}},
		{"fewer problems", gsm, fewer, []string{`held_out.digest (the problems of --eval-data and --eval-problems): "aaaa" -> "cccc"`, "held_out.problems (--eval-problems): 64 -> 32"}},
		// The same file given from another directory is no difference
		// (it was "held_out.data (--eval-data): ..."); nor is another
		// file of the same problems (moved or copied: the same digest),
		// as for the training data (sameTrainingData); a file of other
		// problems is.
		{"the same file from another directory", settings(&HeldOut{Data: "gsm8k.jsonl", Path: "/w/gsm8k.jsonl", Problems: 64, Digest: "aaaa"}),
			settings(&HeldOut{Data: "../gsm8k.jsonl", Path: "/w/gsm8k.jsonl", Problems: 64, Digest: "aaaa"}), nil},
		{"another file of the same problems", settings(&HeldOut{Data: "gsm8k.jsonl", Path: "/w/gsm8k.jsonl", Problems: 64, Digest: "aaaa"}),
			settings(&HeldOut{Data: "moved.jsonl", Path: "/elsewhere/moved.jsonl", Problems: 64, Digest: "aaaa"}), nil},
		{"another file of other problems", settings(&HeldOut{Data: "gsm8k.jsonl", Path: "/w/gsm8k.jsonl", Problems: 64, Digest: "aaaa"}),
			settings(&HeldOut{Data: "../gsm8k.jsonl", Path: "/gsm8k.jsonl", Problems: 64, Digest: "bbbb"}),
			[]string{`held_out.data (--eval-data): "gsm8k.jsonl" -> "../gsm8k.jsonl"`, `held_out.digest (the problems of --eval-data and --eval-problems): "aaaa" -> "bbbb"`}},
		{"a checkpoint of an older version, the path spelled otherwise", gsm, settings(&HeldOut{Data: "../gsm8k.jsonl", Path: "/w/gsm8k.jsonl", Problems: 64, Digest: "aaaa"}),
			nil},
		// The run's --eval-data name given from another directory, naming
		// another file of other problems, is another held-out set, named
		// by both files as the training data's is (recordedRun), not by
		// its digest alone.
		{"the same name, another file of other problems", settings(&HeldOut{Data: "gsm8k.jsonl", Path: "/w/gsm8k.jsonl", Problems: 64, Digest: "aaaa"}),
			settings(&HeldOut{Data: "gsm8k.jsonl", Path: "/v/gsm8k.jsonl", Problems: 64, Digest: "bbbb"}),
			[]string{`held_out.data (--eval-data): "gsm8k.jsonl" (/w/gsm8k.jsonl) -> "gsm8k.jsonl" (/v/gsm8k.jsonl): another file of that name`, `held_out.digest (the problems of --eval-data and --eval-problems): "aaaa" -> "bbbb"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, settingsDiff(tc.old, tc.now))
		})
	}
}

// TestSettingsDiffIgnoredFields: a setting the run's algorithm does not
// read (GRPO's pipeline and advantage switches, the others' --group) is
// no difference; one it reads is.
func TestSettingsDiffIgnoredFields(t *testing.T) {
	settings := func(algo string, edit func(c *Config)) RunSettings {
		s := RunSettings{RL: DefaultConfig()}
		s.RL.Algo = algo
		edit(&s.RL)
		return s
	}
	same := func(*Config) {}
	for _, tc := range []struct {
		name string
		a, b RunSettings
		want []string
	}{
		{"GRPO, another --n1", settings(AlgoGRPO, same), settings(AlgoGRPO, func(c *Config) { c.Pipeline.N1 = 16 }), nil},
		{"GRPO, --scale-agg-adv", settings(AlgoGRPO, same), settings(AlgoGRPO, func(c *Config) { c.Advantage.ScaleAggregation = true }), nil},
		{"GRPO, another --group", settings(AlgoGRPO, same), settings(AlgoGRPO, func(c *Config) { c.GroupSize = 16 }), []string{"rl.group (--group): 24 -> 16"}},
		{"SPIRAL, another --group", settings(AlgoSpiral, same), settings(AlgoSpiral, func(c *Config) { c.GroupSize = 16 }), nil},
		{"SPIRAL, another --n1", settings(AlgoSpiral, same), settings(AlgoSpiral, func(c *Config) { c.Pipeline.N1 = 16 }), []string{"rl.pipeline.n1 (--n1): 8 -> 16"}},
		{"search-only, --scale-agg-adv", settings(AlgoSearchOnly, same), settings(AlgoSearchOnly, func(c *Config) { c.Advantage.ScaleAggregation = true }), nil},
		{"agg-only, --scale-search-adv", settings(AlgoAggOnly, same), settings(AlgoAggOnly, func(c *Config) { c.Advantage.ScaleSearch = true }), nil},
		{"search-only, --scale-search-adv", settings(AlgoSearchOnly, same), settings(AlgoSearchOnly, func(c *Config) { c.Advantage.ScaleSearch = true }), []string{"rl.advantage.ScaleSearch (--scale-search-adv): false -> true"}},
		{"agg-only, --scale-agg-adv", settings(AlgoAggOnly, same), settings(AlgoAggOnly, func(c *Config) { c.Advantage.ScaleAggregation = true }), []string{"rl.advantage.ScaleAggregation (--scale-agg-adv): false -> true"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, settingsDiff(tc.a, tc.b))
		})
	}
}

// TestSettingsDiffPromptLimit: the longest prompt, the model's context
// less --max-new-tokens, is left out where --max-new-tokens changed (its
// own line says it) and explained where it changed alone (another
// context).
func TestSettingsDiffPromptLimit(t *testing.T) {
	settings := func(promptLimit, maxNew int) RunSettings {
		var s RunSettings
		s.RL.Pipeline.PromptLimit, s.Sampling = promptLimit, map[string]any{"max_new_tokens": maxNew}
		return s
	}
	a, longer, context := settings(4072, 24), settings(4064, 32), settings(8168, 24)
	require.Equal(t, []string{"sampling.max_new_tokens (--max-new-tokens): 24 -> 32"}, settingsDiff(a, longer))
	require.Equal(t, []string{"rl.pipeline.prompt_limit (the model's context less --max-new-tokens): 4072 -> 8168"}, settingsDiff(a, context))
}

// TestRunLock: a lock a live process holds refuses a second run, naming
// its pid, and its host where it is another; a lock file no process holds (its run was killed, whatever
// process has its pid since, this one included) is taken over, and the
// lock file is removed at the end.
func TestRunLock(t *testing.T) {
	self := strconv.Itoa(os.Getpid())
	tests := []struct {
		name string
		// file is whether there is a lock file, with content; held locks
		// it as a live run does.
		file    bool
		content string
		held    bool
		wantErr string
	}{
		{name: "no lock file"},
		{name: "held by a live run", file: true, content: self + "\n", held: true,
			wantErr: "in use by another spiral process (pid " + self + ", lock file "},
		{name: "held by a live run of another host (NFS)", file: true, content: self + "\nother-host.invalid\n", held: true,
			wantErr: "in use by another spiral process (pid " + self + " on host other-host.invalid, lock file "},
		{name: "left by a killed run of another host", file: true, content: "2147483646\nother-host.invalid\n"},
		{name: "left by a killed run, its pid gone", file: true, content: "2147483646\n"},
		{name: "left by a killed run, its pid a live process's since", file: true, content: self + "\n"},
		{name: "left empty by a run killed as it started", file: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			lock := filepath.Join(dir, LockFile)
			if tt.file {
				require.NoError(t, os.WriteFile(lock, []byte(tt.content), 0o644))
			}
			if tt.held {
				f, err := os.OpenFile(lock, os.O_RDWR, 0)
				require.NoError(t, err)
				defer f.Close()
				require.NoError(t, syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB))
			}
			h := newRunHarness(t, dir, 1)
			err := h.run(context.Background())
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				require.FileExists(t, lock, "the holder's lock is left alone")
				return
			}
			require.NoError(t, err)
			require.NoFileExists(t, lock, "released at the end")
		})
	}
}

// TestRunLockExcludes: while a run holds the lock, a second is refused;
// once the first has released it, the second takes it.
func TestRunLockExcludes(t *testing.T) {
	dir := t.TempDir()
	unlock, err := lockRun(dir)
	require.NoError(t, err)
	_, err = lockRun(dir)
	require.ErrorContains(t, err, "in use by another spiral process (pid "+strconv.Itoa(os.Getpid()))
	require.NoError(t, unlock())
	unlock, err = lockRun(dir)
	require.NoError(t, err)
	require.NoError(t, unlock())
}

// TestRunLockExcludesUnderContention: goroutines taking and releasing
// the lock as fast as they can are never two inside at once. A release
// removes the lock file, so a taker may lock a file no longer at the
// path while another creates and locks the new one; lockRun must start
// over then (flock.Names), which this test catches when it does not.
func TestRunLockExcludesUnderContention(t *testing.T) {
	dir := t.TempDir()
	var inside, taken atomic.Int32
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 300 {
				unlock, err := lockRun(dir)
				if err != nil {
					if !strings.Contains(err.Error(), "in use by another spiral process") && !strings.Contains(err.Error(), "taken by another process while starting") {
						t.Error(err)
						return
					}
					continue
				}
				if n := inside.Add(1); n != 1 {
					t.Errorf("%d holders at once", n)
				}
				taken.Add(1)
				runtime.Gosched()
				inside.Add(-1)
				if err := unlock(); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	require.Positive(t, taken.Load())
	require.NoFileExists(t, filepath.Join(dir, LockFile))
}

// TestRunFreshMovesAside: --fresh keeps the previous run's files under
// previous-*/ and starts at step 0.
func TestRunFreshMovesAside(t *testing.T) {
	dir := t.TempDir()
	h := newRunHarness(t, dir, 1)
	require.NoError(t, h.run(context.Background()))
	h = newRunHarness(t, dir, 1)
	h.cfg.Fresh = true
	require.NoError(t, h.run(context.Background()))
	require.NotContains(t, h.out.String(), "resumed")
	prev, err := filepath.Glob(filepath.Join(dir, "previous-*", CheckpointsDir, "ckpt-000001"))
	require.NoError(t, err)
	require.Len(t, prev, 1)
	require.Contains(t, h.out.String(), "--fresh: the previous run is in "+filepath.Dir(filepath.Dir(prev[0])))
}

// TestRunFreshSetsSFTRunAside: Fresh in the directory of an interrupted
// sft run (the --fresh that train's refusal of sft's checkpoints offers)
// moves its log, sft.jsonl.partial, aside with its checkpoints: left
// here, previous-* held the checkpoints without their log, and the next
// sft in the directory, finding no checkpoint, started over and emptied
// it.
func TestRunFreshSetsSFTRunAside(t *testing.T) {
	dir := t.TempDir()
	h := newRunHarness(t, dir, 1)
	settings, err := json.Marshal(SFTSettings{Model: "m", ModelID: "id-m", SFT: &SFTConfig{Batch: 2}})
	require.NoError(t, err)
	_, err = checkpoint.Save(filepath.Join(dir, CheckpointsDir), h.parts.Weights, h.parts.Optimizer, checkpoint.State{Step: 1, Config: settings}, checkpoint.Options{})
	require.NoError(t, err)
	log := []byte(`{"step":1,"loss":3}` + "\n")
	require.NoError(t, os.WriteFile(filepath.Join(dir, SFTLogFile+PartialSuffix), log, 0o666))
	h.cfg.Fresh = true
	require.NoError(t, h.run(context.Background()))
	prev, err := filepath.Glob(filepath.Join(dir, previousPattern+"*"))
	require.NoError(t, err)
	require.Len(t, prev, 1)
	require.DirExists(t, filepath.Join(prev[0], CheckpointsDir, checkpoint.DirName(1)))
	b, err := os.ReadFile(filepath.Join(prev[0], SFTLogFile+PartialSuffix))
	require.NoError(t, err, "the sft run's log set aside with its checkpoints")
	require.Equal(t, log, b)
	require.NoFileExists(t, filepath.Join(dir, SFTLogFile+PartialSuffix))
}

// TestRunFreshSetsSFTFinishedEventsAside: Fresh in the directory of an
// sft --overwrite interrupted before its first checkpoint (its log,
// sft.jsonl.partial, which train refuses offering --fresh, and the
// replaced run's events it set aside in tensorboard-finished/) moves
// those events aside with the log, as sft's own --fresh does: left here,
// they stayed beside the train run, which neither reads nor removes
// them, and TensorBoard showed them with its own. The finished run's
// sft.jsonl stays, as train beside a finished sft leaves it.
func TestRunFreshSetsSFTFinishedEventsAside(t *testing.T) {
	dir := t.TempDir()
	h := newRunHarness(t, dir, 1)
	finished := []byte(`{"step":1,"loss":3}` + "\n")
	require.NoError(t, os.WriteFile(filepath.Join(dir, SFTLogFile), finished, 0o666))
	require.NoError(t, os.WriteFile(filepath.Join(dir, SFTLogFile+PartialSuffix), nil, 0o666))
	aside := filepath.Join(dir, SFTFinishedTensorBoardDir)
	require.NoError(t, os.Mkdir(aside, 0o777))
	const events = "events.out.tfevents.1700000000.host.1.0"
	require.NoError(t, os.WriteFile(filepath.Join(aside, events), []byte("the finished run's events"), 0o666))
	h.cfg.Fresh = true
	require.NoError(t, h.run(context.Background()))
	prev, err := filepath.Glob(filepath.Join(dir, previousPattern+"*"))
	require.NoError(t, err)
	require.Len(t, prev, 1)
	b, err := os.ReadFile(filepath.Join(prev[0], SFTFinishedTensorBoardDir, events))
	require.NoError(t, err, "the replaced sft run's events set aside with the overwrite's log")
	require.Equal(t, "the finished run's events", string(b))
	require.FileExists(t, filepath.Join(prev[0], SFTLogFile+PartialSuffix))
	require.NoDirExists(t, aside)
	b, err = os.ReadFile(filepath.Join(dir, SFTLogFile))
	require.NoError(t, err)
	require.Equal(t, finished, b)
}

// TestRunConfigValidate names the flags of invalid run settings.
func TestRunConfigValidate(t *testing.T) {
	err := RunConfig{Dir: "x", Steps: 0, CheckpointEvery: 0, Keep: -1, EvalEvery: -2, EvalSamples: 0}.Validate()
	for _, want := range []string{"--steps 0", "--checkpoint-every 0", "--keep -1", "--eval-every -2", "--eval-samples 0"} {
		require.ErrorContains(t, err, want)
	}
	require.ErrorContains(t, Run(context.Background(), RunConfig{Steps: 1, CheckpointEvery: 1, EvalSamples: 1}, RunParts{}), "--out is empty")
}

// TestReadRunCurvesSearchCredit: the run's search credit is the mean over
// the steps that have one; a run without any (agg-only) has none.
func TestReadRunCurvesSearchCredit(t *testing.T) {
	for _, tc := range []struct {
		name    string
		credits []string // per step; "" for none
		mean    float64
		steps   int
	}{
		{"every step", []string{"0.2", "0.4", "0.3"}, 0.3, 3},
		{"some steps", []string{"0.5", "", "-0.1"}, 0.2, 2},
		{"none", []string{"", ""}, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			var lines []string
			for i, c := range tc.credits {
				line := `{"step":` + strconv.Itoa(i+1) + `,"entropy":0.1`
				if c != "" {
					line += `,"search_credit":` + c
				}
				lines = append(lines, line+"}")
			}
			require.NoError(t, os.WriteFile(filepath.Join(dir, MetricsFile), []byte(strings.Join(lines, "\n")+"\n"), 0o644))
			c, err := ReadRunCurves(dir)
			require.NoError(t, err)
			require.Equal(t, tc.steps, c.CreditSteps)
			require.InDelta(t, tc.mean, c.SearchCredit, 1e-12)
			require.Len(t, c.Entropy.Y, len(tc.credits))
		})
	}
}

// TestReadRunCurvesNoUpdate: a step that trained nothing (no_update, or
// "examples": 0 in a file written before the marker) measured no entropy
// and is left out of the entropy curve, not read as 0; a metrics.jsonl
// without steps is an error naming it.
func TestReadRunCurvesNoUpdate(t *testing.T) {
	for _, tc := range []struct {
		name    string
		lines   []string
		keys    []int
		ys      []float64
		wantErr string
	}{
		{"marker", []string{`{"step":1,"entropy":0.1,"examples":2}`, `{"step":2,"entropy":0,"examples":0,"no_update":true}`, `{"step":3,"entropy":0.3,"examples":2}`},
			[]int{1, 3}, []float64{0.1, 0.3}, ""},
		{"old file: examples 0", []string{`{"step":1,"entropy":0,"examples":0}`, `{"step":2,"entropy":0.2,"examples":4}`},
			[]int{2}, []float64{0.2}, ""},
		{"no examples field: measured", []string{`{"step":1,"entropy":0.1}`, `{"step":2,"entropy":0}`},
			[]int{1, 2}, []float64{0.1, 0}, ""},
		{"never updated", []string{`{"step":1,"no_update":true}`, `{"step":2,"no_update":true}`}, nil, nil, ""},
		{"empty", nil, nil, nil, "metrics.jsonl logs no training step"},
		{"blank lines only", []string{"", " "}, nil, nil, "metrics.jsonl logs no training step"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, MetricsFile)
			require.NoError(t, os.WriteFile(path, []byte(strings.Join(tc.lines, "\n")), 0o644))
			c, err := ReadRunCurves(dir)
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				require.ErrorContains(t, err, path)
				return
			}
			require.NoError(t, err)
			require.Len(t, c.Steps, len(tc.lines))
			require.Equal(t, tc.keys, c.Entropy.Keys)
			require.Equal(t, tc.ys, c.Entropy.Y)
			// training.png draws the same: no step trained still plots.
			require.NoError(t, PlotTraining(dir, "x"))
			require.FileExists(t, filepath.Join(dir, TrainingPlot))
		})
	}
}

// TestWarnNoUpdate: a run none of whose steps updated the weights ends
// with a warning naming its metrics.jsonl; one step that did silences it.
func TestWarnNoUpdate(t *testing.T) {
	const cutLine = `{"step":%d,"no_update":true,"search":{"traces":8,"truncated":0.75},"aggregate":{"traces":4,"truncated":1}}`
	for _, tc := range []struct {
		name  string
		lines []string
		rule  RewardRule
		want  []string // "" for no warning
		not   []string
	}{
		{"none informative", []string{`{"step":1,"no_update":true}`, `{"step":2,"examples":0}`}, RewardRule{},
			[]string{"no step of this run updated the weights", "2 of its 2 steps drew no informative problem"}, []string{"cut at"}},
		// Traces cut at --max-new-tokens earn nothing by default: the
		// warning counts them (2 x (6 + 4) of 2 x 12) and names the flags.
		{"traces cut", []string{fmt.Sprintf(cutLine, 1), fmt.Sprintf(cutLine, 2)}, RewardRule{},
			[]string{"2 of its 2 steps drew no informative problem", "20 of the 24 traces of the steps without an informative problem were cut at --max-new-tokens",
				"raise --max-new-tokens, or grade every trace by its last number, cut ones too, with --reward-fallback --reward-truncated"}, nil},
		// --reward-truncated alone grades cut traces as the others, which
		// need an explicit answer too: the hint names --reward-fallback.
		{"traces cut, graded, explicit answers only", []string{fmt.Sprintf(cutLine, 1)}, RewardRule{Truncated: true},
			[]string{"10 of the 12 traces of the steps without an informative problem were cut at --max-new-tokens", "with --reward-fallback"}, nil},
		{"traces cut, graded", []string{fmt.Sprintf(cutLine, 1)}, RewardRule{Fallback: true, Truncated: true},
			[]string{"10 of the 12 traces of the steps without an informative problem were cut at --max-new-tokens"}, []string{"--reward-truncated", "earns nothing"}},
		// Traces a serving engine's padding id cut are graded as cut
		// traces but did not reach --max-new-tokens: the warning counts
		// them apart (6 + 2 of 2 x 12), and does not blame the limit for
		// them; the step lines said so, the run's summary did not.
		{"traces cut before a padding id", []string{`{"step":1,"no_update":true,"search":{"traces":8,"padding_cut":0.75},"aggregate":{"traces":4}}`,
			`{"step":2,"no_update":true,"search":{"traces":8},"aggregate":{"traces":4,"padding_cut":0.5}}`}, RewardRule{},
			[]string{"2 of its 2 steps drew no informative problem", "; 8 of the 24 traces of the steps without an informative problem were cut before a padding id that the serving engine sampled"},
			[]string{"cut at --max-new-tokens", "raise --max-new-tokens"}},
		{"skipped and none", []string{`{"step":1,"no_update":true}`, `{"step":2,"examples":3,"update_skipped":"non-finite gradient"}`}, RewardRule{},
			[]string{"1 of its 2 steps drew no informative problem", "1 skipped a non-finite update"}, nil},
		// Every step skipped: the data is not to blame.
		{"all skipped", []string{`{"step":1,"examples":3,"update_skipped":"gradient norm is NaN"}`, `{"step":2,"examples":3,"update_skipped":"gradient norm is NaN"}`}, RewardRule{},
			[]string{"2 of its 2 steps skipped a non-finite update"}, []string{"informative", "check the data"}},
		// One step: "1 of its 1 step", not "1 steps".
		{"one step, none informative", []string{`{"step":1,"no_update":true}`}, RewardRule{},
			[]string{": 1 of its 1 step drew no informative problem ("}, nil},
		{"one step, skipped", []string{`{"step":1,"examples":3,"update_skipped":"gradient norm is NaN"}`}, RewardRule{},
			[]string{": 1 of its 1 step skipped a non-finite update\n"}, nil},
		// Informative problems whose trained traces held no token: the
		// data is not to blame, the engine's empty completions are.
		{"no trained token", []string{`{"step":1,"no_update":true,"problems_informative":1}`, `{"step":2,"no_update":true,"problems_informative":2}`}, RewardRule{},
			[]string{": 2 of its 2 steps trained no token (their informative problems' trained traces were empty: completions cut before their first token)\n"}, []string{"drew no informative problem"}},
		{"none informative and no trained token", []string{`{"step":1,"no_update":true}`, `{"step":2,"no_update":true,"problems_informative":1}`}, RewardRule{},
			[]string{": 1 of its 2 steps drew no informative problem (", "on them), 1 trained no token ("}, nil},
		{"one update", []string{`{"step":1,"no_update":true}`, `{"step":2,"examples":3}`}, RewardRule{}, nil, nil},
		{"no steps", nil, RewardRule{}, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), MetricsFile)
			require.NoError(t, os.WriteFile(path, []byte(strings.Join(tc.lines, "\n")), 0o644))
			var w strings.Builder
			require.NoError(t, warnNoUpdate(&w, path, Config{Algo: AlgoGRPO, Reward: tc.rule}, ""))
			if tc.want == nil {
				require.Empty(t, w.String())
				return
			}
			require.Contains(t, w.String(), path)
			for _, s := range tc.want {
				require.Contains(t, w.String(), s)
			}
			for _, s := range tc.not {
				require.NotContains(t, w.String(), s)
			}
		})
	}
}

// TestWarnNoUpdateNamesNearGreedySampling: a run whose sampling keeps
// (nearly) only the most probable token (--top-k 1, a tiny --top-p or
// --temperature) draws traces that agree, so no problem is informative:
// the closing warning names those settings as the likely cause, where it
// blamed the data's answers and the model's accuracy; sampling that
// still draws widely keeps that hint.
func TestWarnNoUpdateNamesNearGreedySampling(t *testing.T) {
	path := filepath.Join(t.TempDir(), MetricsFile)
	require.NoError(t, os.WriteFile(path, []byte(`{"step":1,"no_update":true,"search":{"traces":8,"reward":0.5}}`+"\n"), 0o644))
	const data = ": check the data's answers and the model's accuracy on them)"
	const defaults = "; train at the defaults (--temperature 1, --top-p 1, --top-k 0))"
	for _, tc := range []struct {
		name              string
		temperature, topP float64
		topK              int
		want              string
	}{
		{"defaults", 1, 1, 0, data},
		{"top-k 1", 1, 1, 1, ": likely --top-k 1, which samples near-greedily, so a problem's traces agree" + defaults},
		{"top-k 2", 1, 1, 2, data},
		{"tiny top-p", 1, 0.0001, 0, ": likely --top-p 0.0001, which samples near-greedily, so a problem's traces agree" + defaults},
		{"top-p 0.1", 1, 0.1, 0, ": likely --top-p 0.1, which samples near-greedily, so a problem's traces agree" + defaults},
		{"top-p 0.9", 1, 0.9, 0, data},
		{"tiny temperature", 0.001, 1, 0, ": likely --temperature 0.001, which samples near-greedily, so a problem's traces agree" + defaults},
		{"temperature 0.7", 0.7, 1, 0, data},
		{"several", 0.05, 0.01, 1, ": likely --temperature 0.05, --top-p 0.01, --top-k 1, which sample near-greedily, so a problem's traces agree" + defaults},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := RunSettings{Sampling: SamplingSettings(tc.temperature, tc.topP, tc.topK, 96, "", TemplatePrints{})}
			var w strings.Builder
			require.NoError(t, warnNoUpdate(&w, path, Config{Algo: AlgoGRPO}, s.nearGreedy()))
			require.Contains(t, w.String(), "1 of its 1 step drew no informative problem (every trace of each problem got the same reward"+tc.want)
		})
	}
}

// TestWarnNoUpdateNamesTheSignal: why a problem drew no signal depends
// on the algorithm: GRPO's traces all got one reward; SPIRAL's
// aggregation traces decide, whatever the search traces got (an
// aggregator right on every subset while some search traces are wrong
// gives nothing), which "every trace got the same reward" denied.
func TestWarnNoUpdateNamesTheSignal(t *testing.T) {
	path := filepath.Join(t.TempDir(), MetricsFile)
	require.NoError(t, os.WriteFile(path, []byte(`{"step":1,"no_update":true,"search":{"traces":8,"reward":0.5},"aggregate":{"traces":16,"reward":1}}`+"\n"), 0o644))
	const check = ": check the data's answers and the model's accuracy on them)"
	for _, tc := range []struct {
		algo string
		own  float64
		want string
	}{
		{AlgoGRPO, 0, "(every trace of each problem got the same reward" + check},
		{AlgoSpiral, 0, "(the aggregation traces of each subset got one reward and the subsets' mean rewards credited none of their candidates, whatever the search traces' own rewards" + check},
		{AlgoSpiral, 0.5, "(the aggregation traces of each subset got one reward and the subsets' mean rewards credited none of their candidates, and the search traces the subsets hold got one reward" + check},
		{AlgoAggOnly, 0, "(the aggregation traces of each subset got one reward, whatever the search traces got" + check},
		{AlgoSearchOnly, 0, "(the subsets' mean rewards credited none of their search traces, whatever the search traces' own rewards" + check},
	} {
		t.Run(fmt.Sprint(tc.algo, tc.own), func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.Algo, cfg.Advantage.SearchOwnReward = tc.algo, tc.own
			var w strings.Builder
			require.NoError(t, warnNoUpdate(&w, path, cfg, ""))
			require.Contains(t, w.String(), "1 of its 1 step drew no informative problem "+tc.want)
		})
	}
}

// TestRunFinalRSAStaleAfterInterruptedLastEval: a run extended past an
// earlier final RSA evaluation and interrupted in its last step's
// held-out evaluation (its checkpoint saved by the interruption) does the
// final evaluation on rerun, rather than take the shorter run's rsa.json
// for its own.
func TestRunFinalRSAStaleAfterInterruptedLastEval(t *testing.T) {
	rsa := rollout.RSAConfig{Population: 2, SubsetSize: 2, Steps: 1}
	dir := t.TempDir()
	rsaPath := filepath.Join(dir, FinalRSAFile)
	newHarness := func(steps int) *runHarness {
		h := newRunHarness(t, dir, steps)
		h.cfg.FinalRSA = rsa
		return h
	}
	require.NoError(t, newHarness(1).run(context.Background()))
	require.FileExists(t, rsaPath)

	h := newHarness(2)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// The first call is step 2's held-out evaluation.
	h.parts.Evaluator.Gen = &runCancelAt{inner: h.gen, at: 1, cancel: cancel}
	require.ErrorIs(t, h.run(ctx), context.Canceled)
	require.Contains(t, h.log.String(), "interrupted; saving step 2")
	require.NoFileExists(t, rsaPath, "the 1-step run's final evaluation is not this run's")

	h = newHarness(2)
	require.NoError(t, h.run(context.Background()))
	require.Contains(t, h.out.String(), "held-out summary:", "the final evaluation is done")
	require.FileExists(t, rsaPath)
}

// TestRunFinalRSANotesFittedPrompts: the final RSA's aggregation prompts
// longer than the model's context less --max-new-tokens have their
// candidates cut to fit, as the pipeline's are (warned of) and eval's
// RSA's (a note); the final RSA's were cut without a word, counted only
// in rsa.json. Each problem's prompt ("Ahard|1|0", 9 tokens) passes a
// limit of 8, so all 2 problems x 2 members x 1 step are cut.
func TestRunFinalRSANotesFittedPrompts(t *testing.T) {
	dir := t.TempDir()
	h := newRunHarness(t, dir, 1)
	h.cfg.FinalRSA = rollout.RSAConfig{Population: 2, SubsetSize: 2, Steps: 1, PromptLimit: 8}
	require.NoError(t, h.run(context.Background()))
	require.Contains(t, h.log.String(), "spiral: note: final RSA: 4 of the 4 aggregation prompts passed 8 tokens (the model's context less --max-new-tokens), so their candidates were cut to fit, keeping as much of each one's end as fits ("+
		filepath.Join(dir, FinalRSAFile)+"'s fitted_prompts counts them at each step where any were, left out at 0; --candidate-tokens caps candidates up front)\n")
}

// TestRunFinalSummaryOtherHeldOut: the held-out summary's pass@1 "first
// -> last" spans only eval.jsonl's evaluations on the problems the final
// RSA evaluates, not those an --override onto other held-out problems
// left before it, and says how many it left out.
func TestRunFinalSummaryOtherHeldOut(t *testing.T) {
	dir := t.TempDir()
	h := newRunHarness(t, dir, 1)
	require.NoError(t, h.run(context.Background()))
	require.Equal(t, []int{0, 1}, loggedEvalSteps(t, dir))

	h = newRunHarness(t, dir, 3)
	h.parts.Held = []data.Problem{{ID: "x", Problem: "x", Answer: "2"}, {ID: "y", Problem: "y", Answer: "3"}}
	h.cfg.Override, h.cfg.FinalRSA = true, rollout.RSAConfig{Population: 2, SubsetSize: 2, Steps: 1}
	require.NoError(t, h.run(context.Background()))
	require.Equal(t, []int{0, 1, 2, 3}, loggedEvalSteps(t, dir))
	b, err := os.ReadFile(filepath.Join(dir, EvalFile))
	require.NoError(t, err)
	var lines []EvalLine
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var e EvalLine
		require.NoError(t, json.Unmarshal([]byte(l), &e))
		lines = append(lines, e)
	}
	require.Contains(t, h.out.String(), fmt.Sprintf("held-out summary: pass@1 %.3f -> %.3f (step 2 -> 3; 2 of eval.jsonl's evaluations, on other held-out problems, left out), RSA",
		lines[2].Points[0].PassAtK, lines[3].Points[0].PassAtK))

	// One evaluation on these problems is no "first -> last": its pass@1
	// alone, not "0.500 -> 0.500 (step 4 -> 4)".
	h = newRunHarness(t, dir, 4)
	h.parts.Held = []data.Problem{{ID: "z", Problem: "z", Answer: "4"}}
	h.cfg.Override, h.cfg.FinalRSA = true, rollout.RSAConfig{Population: 2, SubsetSize: 2, Steps: 1}
	require.NoError(t, h.run(context.Background()))
	b, err = os.ReadFile(filepath.Join(dir, EvalFile))
	require.NoError(t, err)
	var last EvalLine
	require.NoError(t, json.Unmarshal([]byte(strings.TrimSpace(string(b))[strings.LastIndex(strings.TrimSpace(string(b)), "\n")+1:]), &last))
	require.Equal(t, 4, last.Step)
	require.Contains(t, h.out.String(), fmt.Sprintf("held-out summary: pass@1 %.3f (step 4; 4 of eval.jsonl's evaluations, on other held-out problems, left out), RSA", last.Points[0].PassAtK))

	// None on these problems (no evaluation every --eval-every steps):
	// said, not left out without a word.
	h = newRunHarness(t, dir, 5)
	h.parts.Held = []data.Problem{{ID: "w", Problem: "w", Answer: "5"}}
	h.cfg.EvalEvery, h.cfg.Override, h.cfg.FinalRSA = 0, true, rollout.RSAConfig{Population: 2, SubsetSize: 2, Steps: 1}
	require.NoError(t, h.run(context.Background()))
	require.Contains(t, h.out.String(), "held-out summary: no pass@1 (eval.jsonl's 5 evaluations, of other held-out problems, left out), RSA")
}

// TestRunFinalRSAOfAnEarlierStep: an rsa.json of an earlier step (a run
// continued with --final-rsa-steps 0, which removes none) or of other
// held-out problems (a finished run resumed under Override onto others)
// is not the run's final evaluation: a rerun at the last step does it,
// where it left such an rsa.json as it was.
func TestRunFinalRSAOfAnEarlierStep(t *testing.T) {
	rsa := rollout.RSAConfig{Population: 2, SubsetSize: 2, Steps: 1}
	dir := t.TempDir()
	rsaPath := filepath.Join(dir, FinalRSAFile)
	rsaModel := func() string {
		var rep report.RSA
		require.NoError(t, report.ReadJSON(rsaPath, &rep))
		return rep.Meta.Model
	}
	h := newRunHarness(t, dir, 1)
	h.cfg.EvalEvery, h.cfg.FinalRSA = 0, rsa
	require.NoError(t, h.run(context.Background()))
	require.Equal(t, "m@"+filepath.Base(dir)+"/ckpt-000001", rsaModel())

	h = newRunHarness(t, dir, 2)
	h.cfg.EvalEvery = 0
	require.NoError(t, h.run(context.Background()))
	require.Equal(t, "m@"+filepath.Base(dir)+"/ckpt-000001", rsaModel(), "no final RSA asked for: the earlier one stays")

	h = newRunHarness(t, dir, 2)
	h.cfg.EvalEvery, h.cfg.FinalRSA = 0, rsa
	require.NoError(t, h.run(context.Background()))
	require.Contains(t, h.out.String(), "held-out summary:")
	require.Equal(t, "m@"+filepath.Base(dir)+"/ckpt-000002", rsaModel())

	h = newRunHarness(t, dir, 2)
	h.cfg.EvalEvery, h.cfg.FinalRSA = 0, rsa
	require.NoError(t, h.run(context.Background()))
	require.Zero(t, h.gen.calls, "the run's own final evaluation is not redone")

	h = newRunHarness(t, dir, 2)
	h.parts.Held = []data.Problem{{ID: "x", Problem: "x", Answer: "2"}}
	h.cfg.EvalEvery, h.cfg.FinalRSA, h.cfg.Override = 0, rsa, true
	require.NoError(t, h.run(context.Background()))
	require.Contains(t, h.out.String(), "held-out summary:")
	var rep report.RSA
	require.NoError(t, report.ReadJSON(rsaPath, &rep))
	require.Equal(t, data.ProblemsDigest(h.parts.Held), rep.Meta.ProblemsDigest)
}

// TestRunFreshMovesFinalRSAAside: --fresh keeps the previous run's
// rsa.json with its other files, rather than delete it (or, with the
// fresh run interrupted before its own final evaluation, leave it as
// that run's).
func TestRunFreshMovesFinalRSAAside(t *testing.T) {
	dir := t.TempDir()
	h := newRunHarness(t, dir, 1)
	h.cfg.FinalRSA = rollout.RSAConfig{Population: 2, SubsetSize: 2, Steps: 1}
	require.NoError(t, h.run(context.Background()))
	prevRSA, err := os.ReadFile(filepath.Join(dir, FinalRSAFile))
	require.NoError(t, err)
	h = newRunHarness(t, dir, 1)
	h.cfg.Fresh = true
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	require.ErrorIs(t, h.run(ctx), context.Canceled)
	require.NoFileExists(t, filepath.Join(dir, FinalRSAFile), "not the fresh run's")
	moved, err := filepath.Glob(filepath.Join(dir, "previous-*", FinalRSAFile))
	require.NoError(t, err)
	require.Len(t, moved, 1)
	b, err := os.ReadFile(moved[0])
	require.NoError(t, err)
	require.Equal(t, prevRSA, b)
}

// TestReadRunCurvesTornLastLine: a run killed while writing a line of
// metrics.jsonl or eval.jsonl (or read while writing it) leaves a last
// line cut short with no newline; spiral compare --run reads the lines
// before it and names the file in Torn, where it refused the run before.
// A bad line elsewhere, or a whole last line, is still an error naming
// the file and line.
func TestReadRunCurvesTornLastLine(t *testing.T) {
	const m1, m2 = `{"step":1,"entropy":0.1}`, `{"step":2,"entropy":0.2}`
	const e0 = `{"step":0,"problems":2,"samples":1,"points":[{"k":1,"pass_at_k":0.5}]}`
	for _, tc := range []struct {
		name            string
		metrics, evals  string
		steps, heldOut  int
		torn            []string
		wantErr, atLine string
	}{
		{"whole", m1 + "\n" + m2 + "\n", e0 + "\n", 2, 1, nil, "", ""},
		{"whole, no final newline", m1 + "\n" + m2, e0, 2, 1, nil, "", ""},
		{"metrics torn", m1 + "\n" + m2[:10], e0 + "\n", 1, 1, []string{MetricsFile}, "", ""},
		{"eval torn", m1 + "\n" + m2 + "\n", e0 + "\n" + e0[:20], 2, 1, []string{EvalFile}, "", ""},
		{"both torn", m1 + "\n" + m2[:10], e0 + "\n" + e0[:20], 1, 1, []string{MetricsFile, EvalFile}, "", ""},
		{"only a torn line", m1[:5], "", 0, 0, nil, "logs no training step", ""},
		{"bad line in the middle", m1 + "\n" + m2[:10] + "\n" + m2 + "\n", "", 0, 0, nil, "unexpected end of JSON input", MetricsFile + ":2"},
		{"bad last line with its newline", m1 + "\n" + m2[:10] + "\n", "", 0, 0, nil, "unexpected end of JSON input", MetricsFile + ":2"},
		// A line that is JSON but no step's metrics read as a step 0 with
		// a token entropy of 0, which the entropy's mean took in.
		{"null line", m1 + "\nnull\n" + m2 + "\n", "", 0, 0, nil, `no training step ("step" = 0): want a step's metrics, as train writes them`, MetricsFile + ":2"},
		{"empty object", m1 + "\n{}\n" + m2 + "\n", "", 0, 0, nil, `no training step ("step" = 0)`, MetricsFile + ":2"},
		{"empty object last", m1 + "\n" + m2 + "\n{}", "", 0, 0, nil, `no training step ("step" = 0)`, MetricsFile + ":3"},
		// Lines of steps logged before (two runs' logs joined) were
		// counted again: their traces, tokens and entropies twice.
		// A byte order mark, as an editor saving the file on Windows
		// writes: the first line was malformed JSON ("invalid character
		// 'ï'"), and a resume dropped it as damaged.
		{"byte order marks", "\ufeff" + m1 + "\n" + m2 + "\n", "\ufeff" + e0 + "\n", 2, 1, nil, "", ""},
		{"a step repeated", m1 + "\n" + m2 + "\n" + m1 + "\n" + m2 + "\n", "", 0, 0, nil, "step 1 after step 2: want each step once, increasing, as train logs them", MetricsFile + ":3"},
		{"an evaluation repeated", m1 + "\n" + m2 + "\n", e0 + "\n" + e0 + "\n", 0, 0, nil, "step 0 after step 0: want each step once, increasing, as train logs them", EvalFile + ":2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			require.NoError(t, os.WriteFile(filepath.Join(dir, MetricsFile), []byte(tc.metrics), 0o644))
			if tc.evals != "" {
				require.NoError(t, os.WriteFile(filepath.Join(dir, EvalFile), []byte(tc.evals), 0o644))
			}
			c, err := ReadRunCurves(dir)
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				require.ErrorContains(t, err, tc.atLine)
				return
			}
			require.NoError(t, err)
			require.Len(t, c.Steps, tc.steps)
			require.Len(t, c.HeldOut.Keys, tc.heldOut)
			var torn []string
			for _, f := range tc.torn {
				torn = append(torn, filepath.Join(dir, f))
			}
			require.Equal(t, torn, c.Torn)
		})
	}
}

// TestTruncateLog: a resumed run's log keeps the lines of the steps up to
// the one resumed, drops later and torn ones, and ends in a newline, so
// that the next line appended starts a line of its own.
func TestTruncateLog(t *testing.T) {
	for _, tc := range []struct {
		name, log, want string
	}{
		{"nothing after the step", "{\"step\":1}\n{\"step\":2}\n", "{\"step\":1}\n{\"step\":2}\n"},
		{"a later step", "{\"step\":1}\n{\"step\":2}\n{\"step\":3}\n", "{\"step\":1}\n{\"step\":2}\n"},
		{"a torn line", "{\"step\":1}\n{\"step\":2}\n{\"st", "{\"step\":1}\n{\"step\":2}\n"},
		{"the last line without its newline", "{\"step\":1}\n{\"step\":2}", "{\"step\":1}\n{\"step\":2}\n"},
		{"empty", "", ""},
		// A line past a Scanner's 64 MiB (a hand-edited or foreign log)
		// ended the scan, and the rewrite dropped it and every line
		// after it.
		{"a line past 64 MiB", "{\"step\":1}\n{\"step\":3}\n{\"step\":2,\"note\":\"" + strings.Repeat("x", 65<<20) + "\"}\n{\"step\":2}\n",
			"{\"step\":1}\n{\"step\":2,\"note\":\"" + strings.Repeat("x", 65<<20) + "\"}\n{\"step\":2}\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "metrics.jsonl")
			require.NoError(t, os.WriteFile(path, []byte(tc.log), 0o644))
			_, err := truncateLog(path, 2)
			require.NoError(t, err)
			got, err := os.ReadFile(path)
			require.NoError(t, err)
			require.True(t, tc.want == string(got), "got %.200q, want %.200q", got, tc.want)
		})
	}
}

// seedRecorder is trainerFakeGen that records the seed of every request.
type seedRecorder struct{ seeds map[uint64]int }

func (g *seedRecorder) Generate(ctx context.Context, reqs []rollout.Request, p rollout.Progress) ([]rollout.Completion, rollout.Stats, error) {
	for _, r := range reqs {
		g.seeds[r.Seed]++
	}
	return trainerFakeGen{}.Generate(ctx, reqs, p)
}

// TestRunDrawRoundsOverrideNewStreams: a run resumed with --override and
// fewer (or more) --draw-rounds rolls out on random streams none of its
// earlier steps used (the stream of step s, round i was s x draw-rounds +
// i, so step 4 of 2 rounds redrew step 2's third round of 4), and a run
// that never changed them keeps its streams.
func TestRunDrawRoundsOverrideNewStreams(t *testing.T) {
	// One problem that every sample solves: never informative, so every
	// step draws all its rounds.
	easy := []data.Problem{{ID: "easy", Problem: "easy", Answer: "1"}}
	run := func(dir string, steps, rounds int, override bool) map[uint64]int {
		h := newRunHarnessOn(t, dir, steps, easy)
		rec := &seedRecorder{seeds: map[uint64]int{}}
		cfg := h.parts.Settings.RL
		cfg.MaxDrawRounds = rounds
		tr, err := NewTrainer(cfg, TrainerParts{Generator: rec, Prompter: trainerFakePrompter{}, Judge: trainerJudge,
			Learner: &trainerFakeLearner{}, Problems: h.parts.Problems, Weights: h.parts.Weights, Grads: h.parts.Weights.NewGrads(),
			Optimizer: h.parts.Optimizer, Schedule: h.parts.Settings.Schedule})
		require.NoError(t, err)
		h.parts.Trainer, h.parts.Settings.RL = tr, cfg
		h.cfg.EvalEvery, h.cfg.Override = 0, override
		require.NoError(t, h.run(context.Background()))
		return rec.seeds
	}
	overlap := func(a, b map[uint64]int) int {
		n := 0
		for s := range b {
			if a[s] > 0 {
				n++
			}
		}
		return n
	}

	const perRound = 4 + 2*2 // the harness's N1 search + K x N2 aggregation traces
	dir := t.TempDir()
	first := run(dir, 4, 4, false)
	require.Len(t, first, 4*4*perRound, "4 steps x 4 rounds, every trace's seed distinct")
	fewer := run(dir, 8, 2, true)
	require.Len(t, fewer, 4*2*perRound)
	require.Zero(t, overlap(first, fewer), "streams of steps 1-4 used again")
	more := run(dir, 10, 4, true)
	require.Len(t, more, 2*4*perRound)
	require.Zero(t, overlap(first, more)+overlap(fewer, more), "streams of steps 1-8 used again")

	// Unchanged rounds: resuming draws exactly the streams of an
	// uninterrupted run.
	whole := run(t.TempDir(), 4, 4, false)
	split := t.TempDir()
	part := run(split, 2, 4, false)
	for s, n := range run(split, 4, 4, false) {
		part[s] += n
	}
	require.Equal(t, whole, part)
	require.Equal(t, first, whole)
}

// TestRunFinalRSARecordsItsSeed: the final RSA report's meta.seed is the
// seed its evaluation sampled with, so an evaluation given that seed
// (spiral eval --seed) draws the same random streams, not the run's
// training seed.
func TestRunFinalRSARecordsItsSeed(t *testing.T) {
	dir := t.TempDir()
	h := newRunHarness(t, dir, 1)
	rsa := rollout.RSAConfig{Population: 2, SubsetSize: 2, Steps: 1}
	run := &seedRecorder{seeds: map[uint64]int{}}
	h.cfg.EvalEvery, h.cfg.FinalRSA = 0, rsa
	h.parts.Evaluator.Gen = run
	require.NoError(t, h.run(context.Background()))
	var rep report.RSA
	require.NoError(t, report.ReadJSON(filepath.Join(dir, FinalRSAFile), &rep))

	again := &seedRecorder{seeds: map[uint64]int{}}
	ev := h.parts.Evaluator
	ev.Gen = again
	_, err := ev.RSA(context.Background(), h.parts.Held, rsa, rep.Meta.Seed)
	require.NoError(t, err)
	require.NotEmpty(t, run.seeds)
	require.Equal(t, run.seeds, again.seeds, "meta.seed %d repeats the final evaluation's streams", rep.Meta.Seed)
}

// TestSettingsDiffTokenizer: another tokenizer is a difference named by
// --tokenizer, which resuming refuses without --override (it resumed
// without a word, training the run's weights on ids that meant other
// text); a checkpoint of an older version, which records none, is
// compared without it. One recording the fingerprint that older
// versions took of the tokenizer's bytes (TokenizerBytes, before
// tokenizer.Fingerprint read its content) is of the same tokenizer;
// another such is not.
func TestSettingsDiffTokenizer(t *testing.T) {
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
			require.Equal(t, c.want, settingsDiff(RunSettings{Model: "m", Tokenizer: c.recorded}, RunSettings{Model: "m", Tokenizer: c.now, TokenizerBytes: c.nowBytes}))
		})
	}
}

// TestSeedSettingsDiffTokenizerBytes: spiral compare --run reads each
// seed's settings as its newest checkpoint recorded them, with no
// tokenizer file to fingerprint: a seed trained before
// tokenizer.Fingerprint read tokenizer.json's content records the
// fingerprint of its bytes, and one trained since, on the same file,
// the content's. Both are of one tokenizer, in either order (it was
// refused as "tokenizer (--tokenizer): ... -> ..."), as a resume takes
// them; the same tokenizer saved again (other bytes, one content) is
// one too, and another tokenizer's bytes stay another.
func TestSeedSettingsDiffTokenizerBytes(t *testing.T) {
	recorded := func(t *testing.T, s RunSettings) RunSettings {
		t.Helper()
		b, err := json.Marshal(s) // as a checkpoint records it, and compare reads it back
		require.NoError(t, err)
		var r RunSettings
		require.NoError(t, json.Unmarshal(b, &r))
		return r
	}
	older := RunSettings{Model: "m", Tokenizer: "bytes-1"} // an older version's: the file's bytes
	newer := RunSettings{Model: "m", Tokenizer: "content-1", TokenizerBytes: "bytes-1"}
	resaved := RunSettings{Model: "m", Tokenizer: "content-1", TokenizerBytes: "bytes-2"}
	other := RunSettings{Model: "m", Tokenizer: "content-3", TokenizerBytes: "bytes-3"}
	for _, c := range []struct {
		name string
		a, b RunSettings
		want []string
	}{
		{"older, then newer", older, newer, nil},
		{"newer, then older", newer, older, nil},
		{"saved again", newer, resaved, nil},
		{"older, then another", older, other, []string{`tokenizer (--tokenizer): "bytes-1" -> "content-3"`}},
		{"another, then older", other, older, []string{`tokenizer (--tokenizer): "content-3" -> "bytes-1"`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			require.Equal(t, c.want, SeedSettingsDiff(recorded(t, c.a), recorded(t, c.b)))
		})
	}
}

// TestCheckRunIdentitySelection: a rerun whose --train and --freeze
// select other parameters than the newest checkpoint holds is refused
// before any graph is built, with the message resuming gives (it was
// refused only by Run, after the artifacts were built again); other
// patterns that select the same parameters pass (Run's settings check
// says that change), and the parameters are not asked for when the
// selection is the run's.
func TestCheckRunIdentitySelection(t *testing.T) {
	dir := t.TempDir()
	h := newRunHarness(t, dir, 1)
	h.cfg.EvalEvery = 0
	h.parts.Settings.Sampling = map[string]any{"selection": `train="" freeze=""`}
	require.NoError(t, h.run(context.Background()))
	trains := func(names ...string) func() ([]string, error) {
		return func() ([]string, error) { return names, nil }
	}
	for _, tc := range []struct {
		name      string
		selection string
		trains    func() ([]string, error)
		want      string
	}{
		{"same selection", `train="" freeze=""`, func() ([]string, error) { return nil, errors.New("asked for the parameters") }, ""},
		{"other parameters", `train="" freeze="norm"`, trains("v"),
			dir + ` holds a run that trains other parameters (sampling.selection (--train, --freeze): train="" freeze="" -> train="" freeze="norm"): use the same --train and --freeze, another --out, or --fresh`},
		{"a parameter more", `train="w|v" freeze=""`, trains("w", "v"), "holds a run that trains other parameters"},
		{"the same parameters", `train="^w$" freeze=""`, trains("w"), ""},
		{"the parameters not known", `train="x" freeze=""`, func() ([]string, error) { return nil, errors.New("no model") }, "no model"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			now := h.parts.Settings
			now.Sampling = map[string]any{"selection": tc.selection}
			err := CheckRunIdentity(dir, now, nil, tc.trains)
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tc.want)
		})
	}
}

// TestOtherLoRARunSaysWhatEachTrains: a rerun with other LoRA flags
// than its run's called a run without LoRA "full fine-tuning", also one
// of --train or --freeze, which trains some of the model's parameters
// only; it names their selection now. Runs of one LoRA setting pass,
// whatever their selections (otherSelection compares those).
func TestOtherLoRARunSaysWhatEachTrains(t *testing.T) {
	lora := &lmgraph.LoRA{Rank: 4, Alpha: 8, Targets: []string{"q_proj"}}
	layer0 := lmgraph.Selection{Train: regexp.MustCompile(`layers\.0\.`)}.String()
	embed := lmgraph.Selection{Freeze: regexp.MustCompile("embed")}.String()
	all := lmgraph.Selection{}.String()
	const tail = ": use the same LoRA flags, another --out, or --fresh"
	for _, tc := range []struct {
		name          string
		prev          *lmgraph.LoRA
		prevSelection string
		now           *lmgraph.LoRA
		nowSelection  string
		want          string
	}{
		{"--train run, LoRA rerun", nil, layer0, lora, all,
			`D holds a run with fine-tuning of the model's own parameters (--train "layers\\.0\\."); this one is lora rank=4 alpha=8 targets=q_proj` + tail},
		{"LoRA run, --freeze rerun", lora, all, nil, embed,
			`D holds a run with lora rank=4 alpha=8 targets=q_proj; this one is fine-tuning of the model's own parameters (--freeze "embed")` + tail},
		{"full run, LoRA rerun", nil, all, lora, all, "D holds a run with full fine-tuning; this one is lora rank=4 alpha=8 targets=q_proj" + tail},
		{"older run (no selection recorded)", nil, "", lora, all, "D holds a run with full fine-tuning; this one is lora rank=4 alpha=8 targets=q_proj" + tail},
		{"other selections, no LoRA", nil, layer0, nil, embed, ""},
		{"one LoRA", lora, all, lora, all, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := otherLoRARun("D", tc.prev, tc.prevSelection, tc.now, tc.nowSelection)
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			require.EqualError(t, err, tc.want)
		})
	}
}

// TestCheckRunIdentity: before any graph is built, a rerun into a run
// directory is refused when the newest checkpoint is of another model
// (by content id), data set, algorithm or LoRA setting, as resuming
// refuses it, or of another tokenizer where the caller gives one (it
// gives none with --override); the same run, other settings (Run's to
// compare) and a directory with no checkpoint pass; a damaged newest
// checkpoint is passed over for the one before, as resuming does.
func TestCheckRunIdentity(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, CheckRunIdentity(dir, RunSettings{Model: "m", ModelID: "id-m"}, nil, nil), "no checkpoint")
	h := newRunHarness(t, dir, 2)
	h.cfg.EvalEvery = 0
	h.parts.Settings.Tokenizer = "tok-a"
	require.NoError(t, h.run(context.Background()))
	same := h.parts.Settings
	lora := lmgraph.LoRA{Rank: 4, Alpha: 8, Targets: []string{"q_proj"}}
	for _, tc := range []struct {
		name   string
		change func(*RunSettings)
		want   string
	}{
		{"same run", func(*RunSettings) {}, ""},
		{"other settings", func(s *RunSettings) { s.Schedule.PeakLR = 1 }, ""},
		{"model renamed, same id", func(s *RunSettings) { s.Model = "elsewhere" }, ""},
		{"other model", func(s *RunSettings) { s.Model, s.ModelID = "m2", "id-m2" }, dir + " holds a run of m on d (spiral); this one is m2 on d (spiral)"},
		// A model replaced at its path (an sft --overwrite, an export
		// again): the names alike, the ids say what differs.
		{"other model at the same path", func(s *RunSettings) { s.ModelID = "id-m2" },
			dir + " holds a run of m (model id id-m) on d (spiral); this one is m (model id id-m2) on d (spiral): the model's contents changed: use another --out, or --fresh"},
		{"other data", func(s *RunSettings) { s.Data = "d2" }, "this one is m on d2 (spiral)"},
		{"other algorithm", func(s *RunSettings) { s.RL.Algo = AlgoGRPO }, "this one is m on d (grpo)"},
		{"LoRA", func(s *RunSettings) { s.LoRA = &lora }, dir + " holds a run with full fine-tuning; this one is "},
		{"other tokenizer", func(s *RunSettings) { s.Tokenizer = "tok-b" },
			dir + ` holds a run with other settings: tokenizer (--tokenizer): "tok-a" -> "tok-b"; rerun with --override`},
		{"tokenizer not compared (--override)", func(s *RunSettings) { s.Tokenizer = "" }, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			now := same
			tc.change(&now)
			err := CheckRunIdentity(dir, now, nil, nil)
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tc.want)
		})
	}
	// The newest checkpoint damaged: the one before decides.
	require.NoError(t, os.WriteFile(filepath.Join(dir, CheckpointsDir, checkpoint.DirName(2), checkpoint.ModelFile), []byte("x"), 0o644))
	other := same
	other.ModelID = "id-m2"
	require.ErrorContains(t, CheckRunIdentity(dir, other, nil, nil), "holds a run of m (model id id-m) on d")
	require.NoError(t, CheckRunIdentity(dir, same, nil, nil))
}

// TestCheckNewerFormat: a newest checkpoint that a newer spiral wrote
// (its state.json's format version above this build's) stops the
// resume (checkpoint.ReadState marks it Final); the checks that the
// commands make before they build the model's artifacts into the run
// directory, minutes for a real model, passed it as if there were no
// checkpoint, so the refusal came only once those were built. They
// refuse it now, naming the file and the versions.
func TestCheckNewerFormat(t *testing.T) {
	dir := t.TempDir()
	h := newRunHarness(t, dir, 2)
	h.cfg.EvalEvery = 0
	require.NoError(t, h.run(context.Background()))
	state := filepath.Join(dir, CheckpointsDir, checkpoint.DirName(2), checkpoint.StateFile)
	b, err := os.ReadFile(state)
	require.NoError(t, err)
	newer := strings.Replace(string(b), `"format_version":1`, fmt.Sprintf(`"format_version":%d`, checkpoint.FormatVersion+1), 1)
	require.NotEqual(t, string(b), newer)
	require.NoError(t, os.WriteFile(state, []byte(newer), 0o644))
	want := fmt.Sprintf("%s: format version %d, this build reads 1..%d", state, checkpoint.FormatVersion+1, checkpoint.FormatVersion)
	for _, tc := range []struct {
		name  string
		check func() error
	}{
		{"CheckRunIdentity", func() error { return CheckRunIdentity(dir, h.parts.Settings, nil, nil) }},
		{"CheckRunSettings", func() error { return CheckRunSettings(h.cfg, h.parts) }},
		{"CheckSFTRunIdentity", func() error { return CheckSFTRunIdentity(dir, SFTSettings{Model: "m", ModelID: "id-m"}, nil) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.check()
			require.ErrorContains(t, err, want)
			require.ErrorContains(t, err, "use --fresh to start over")
		})
	}
	// Run's own resume refuses it with the same words.
	err = h.run(context.Background())
	require.ErrorContains(t, err, want)
}

// TestCheckRunIdentityUsableProblems: before the serving engine's
// context says which problems are usable, a rerun's data is told from
// the run's by name and file, and where those do not tell (a file moved,
// another data set) by the content id usable gives for the run's count
// of usable problems: a data set that leaves no such problems usable is
// refused then, as resuming would refuse it, and the file moved passes.
func TestCheckRunIdentityUsableProblems(t *testing.T) {
	problems := []data.Problem{{ID: "hard", Problem: "hard", Answer: "1"}, {ID: "easy", Problem: "easy", Answer: "1"}}
	files := t.TempDir()
	a, b := filepath.Join(files, "a.jsonl"), filepath.Join(files, "b.jsonl")
	dir := t.TempDir()
	h := newRunHarnessOn(t, dir, 1, problems)
	h.cfg.EvalEvery = 0
	h.parts.Settings.Data, h.parts.Settings.DataPath, h.parts.Settings.DataID = "a.jsonl", a, data.ProblemsDigest(problems)
	require.NoError(t, h.run(context.Background()))
	digest := data.ProblemsDigest(problems)
	for _, tc := range []struct {
		name       string
		data, path string
		id         string // now's DataID
		usable     string // what usable gives for 2 problems
		usableErr  error
		asked      bool
		want       string
	}{
		{name: "the run's file", data: "a.jsonl", path: a, usableErr: errors.New("asked"), want: ""},
		{name: "the file moved", data: "b.jsonl", path: b, usable: digest, asked: true},
		{name: "another data set", data: "b.jsonl", path: b, usable: "other", asked: true,
			want: dir + " holds a run of m on a.jsonl (spiral); this one is m on b.jsonl (spiral): use another --out, or --fresh"},
		{name: "no 2 usable problems", data: "b.jsonl", path: b, asked: true, want: "this one is m on b.jsonl (spiral)"},
		{name: "not read", data: "b.jsonl", path: b, usableErr: errors.New("search prompt of problem"), asked: true, want: "search prompt of problem"},
		{name: "the id known", data: "b.jsonl", path: b, id: "other", usableErr: errors.New("asked"), want: "this one is m on b.jsonl (spiral)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			now := h.parts.Settings
			now.Data, now.DataPath, now.DataID = tc.data, tc.path, tc.id
			var asked []int
			usable := func(n int) (string, error) {
				asked = append(asked, n)
				return tc.usable, tc.usableErr
			}
			err := CheckRunIdentity(dir, now, usable, nil)
			if tc.asked {
				require.Equal(t, []int{2}, asked, "asked for the run's 2 usable problems")
			} else {
				require.Empty(t, asked)
			}
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tc.want)
		})
	}
}

// TestRunLockByPID: where flock(2) is not kept, the lock file alone is
// the lock (lockRunByPID): a pid that names a live process other than
// this one refuses the run, naming it; a lock whose pid is gone, or is
// this process's own (a killed run's, in a restarted container where
// this process has its pid again), or holds no pid is taken over; but
// not one of another host (a run directory on NFS that another machine
// trains in), whose pid names no process here, whatever it is; the
// release removes the file. The file holds the pid and the host.
func TestRunLockByPID(t *testing.T) {
	host, err := os.Hostname()
	require.NoError(t, err)
	const dead, other = "2147483646", "other-host.invalid"
	for _, tc := range []struct {
		name, content string
		holder        string // the refusal's, "" where the lock is taken
	}{
		{name: "no lock", content: ""},
		{name: "a live process's", content: strconv.Itoa(os.Getppid()) + "\n", holder: "pid " + strconv.Itoa(os.Getppid())},
		{name: "a live process's of this host", content: strconv.Itoa(os.Getppid()) + "\n" + host + "\n", holder: "pid " + strconv.Itoa(os.Getppid())},
		{name: "this process's pid, left by a killed run", content: strconv.Itoa(os.Getpid()) + "\n"},
		{name: "a dead process's", content: dead + "\n"},
		{name: "a dead process's of this host", content: dead + "\n" + host + "\n"},
		{name: "no pid", content: "\n"},
		{name: "another host's", content: dead + "\n" + other + "\n", holder: "pid " + dead + " on host " + other},
		{name: "another host's, with this process's pid", content: strconv.Itoa(os.Getpid()) + "\n" + other + "\n", holder: "pid " + strconv.Itoa(os.Getpid()) + " on host " + other},
		{name: "another host's, no pid", content: "\n" + other + "\n", holder: "host " + other},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, LockFile)
			if tc.content != "" {
				require.NoError(t, os.WriteFile(path, []byte(tc.content), 0o666))
			}
			unlock, err := lockRunByPID(path)
			if tc.holder != "" {
				require.EqualError(t, err, dir+" is in use by another spiral process ("+tc.holder+", lock file "+path+"); wait for it or use another --out (or, if no spiral runs there, remove the lock file)")
				b, rerr := os.ReadFile(path)
				require.NoError(t, rerr)
				require.Equal(t, tc.content, string(b), "the holder's lock is left alone")
				return
			}
			require.NoError(t, err)
			b, err := os.ReadFile(path)
			require.NoError(t, err)
			require.Equal(t, strconv.Itoa(os.Getpid())+"\n"+host+"\n", string(b))
			require.NoError(t, unlock())
			require.NoFileExists(t, path)
		})
	}
}

// TestRunSummaryCounts: a run's lines count steps and problems in the
// singular when there is one: a final RSA of 1 step on 1 held-out
// problem said "over 1 steps" and "(1 problems)".
func TestRunSummaryCounts(t *testing.T) {
	for _, tc := range []struct {
		problems []data.Problem
		rsaSteps int
		want     []string
	}{
		{[]data.Problem{{ID: "easy", Problem: "easy", Answer: "1"}}, 1,
			[]string{"  (1 problem)\n", " over 1 step, majority ", "(1 problem; "}},
		{[]data.Problem{{ID: "hard", Problem: "hard", Answer: "1"}, {ID: "easy", Problem: "easy", Answer: "1"}}, 2,
			[]string{"  (2 problems)\n", " over 2 steps, majority ", "(2 problems; "}},
	} {
		t.Run(fmt.Sprint(len(tc.problems), tc.rsaSteps), func(t *testing.T) {
			h := newRunHarnessOn(t, t.TempDir(), 1, tc.problems)
			h.cfg.FinalRSA = rollout.RSAConfig{Population: 2, SubsetSize: 2, Steps: tc.rsaSteps}
			require.NoError(t, h.run(context.Background()))
			for _, s := range tc.want {
				require.Contains(t, h.out.String(), s)
			}
		})
	}
}

// TestTruncateLogDamagedLines: a line up to the resumed step that is not
// a log line (damaged: not JSON, or without a step) is dropped as the
// log is cut back, and named, file and line, with why, for the run to
// warn of: it was dropped without a word, and the step's figures were
// gone from metrics.jsonl, which compare and tensorboard read, unsaid. A
// torn last line (a run killed while writing it) and blank lines say
// nothing.
func TestTruncateLogDamagedLines(t *testing.T) {
	for _, tc := range []struct {
		name, log, want string
		damaged         []string // after the path
	}{
		{"a damaged line", "{\"step\":1}\n{\"step\": oops\n{\"step\":2}\n", "{\"step\":1}\n{\"step\":2}\n",
			[]string{":2: invalid character 'o' looking for beginning of value"}},
		{"a line without a step", "{\"step\":1}\n{\"loss\":1}\n{\"step\":2}\n{\"step\":3}\n", "{\"step\":1}\n{\"step\":2}\n",
			[]string{":2: no step"}},
		{"a torn last line", "{\"step\":1}\n{\"step\":2}\n{\"st", "{\"step\":1}\n{\"step\":2}\n", nil},
		{"a torn last line ended", "{\"step\":1}\n{\"st\n", "{\"step\":1}\n", nil},
		{"blank lines", "{\"step\":1}\n\n{\"step\":2}\r\n\r\n", "{\"step\":1}\n{\"step\":2}\r\n", nil},
		// An editor's byte order mark is no damage: its line is kept,
		// the mark dropped.
		{"a byte order mark", "\ufeff{\"step\":1}\n{\"step\":2}\n{\"step\":3}\n", "{\"step\":1}\n{\"step\":2}\n", nil},
		{"a byte order mark, nothing past the step", "\ufeff{\"step\":1}\n{\"step\":2}\n", "{\"step\":1}\n{\"step\":2}\n", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "metrics.jsonl")
			require.NoError(t, os.WriteFile(path, []byte(tc.log), 0o644))
			damaged, err := truncateLog(path, 2)
			require.NoError(t, err)
			var got []string
			for _, d := range damaged {
				got = append(got, d.Error())
			}
			var want []string
			for _, d := range tc.damaged {
				want = append(want, path+d)
			}
			require.Equal(t, want, got)
			b, err := os.ReadFile(path)
			require.NoError(t, err)
			require.Equal(t, tc.want, string(b))
		})
	}
}

// TestTruncateLogStartOver: a run that starts over (no checkpoint:
// step -1) empties its logs, damaged lines and all, without naming them:
// nothing it keeps lacks them.
func TestTruncateLogStartOver(t *testing.T) {
	path := filepath.Join(t.TempDir(), "metrics.jsonl")
	require.NoError(t, os.WriteFile(path, []byte("{\"step\":1}\n{\"step\": oops\n{\"step\":2}\n"), 0o644))
	damaged, err := truncateLog(path, -1)
	require.NoError(t, err)
	require.Empty(t, damaged)
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Empty(t, b)
}

// TestRunOtherEvalSamples: a rerun whose held-out evaluations sample
// another count (--eval-samples) is refused, naming it, unless Override,
// as one on other held-out problems is: eval.jsonl's majority@k is at k
// = the samples, so its curve (training.png's "majority@k", labelled with
// the last line's k) went on as majority@3 after majority@2, unsaid. A
// rerun that evaluates only at the end (its RSA, which samples no
// --eval-samples) is not, and keeps the count for the rerun after it.
func TestRunOtherEvalSamples(t *testing.T) {
	dir := t.TempDir()
	h := newRunHarness(t, dir, 1)
	require.NoError(t, h.run(context.Background()))

	h = newRunHarness(t, dir, 2)
	h.cfg.EvalSamples = 3
	err := h.run(context.Background())
	require.ErrorContains(t, err, "held_out.samples (--eval-samples): 2 -> 3")
	require.ErrorContains(t, err, "--override")

	h = newRunHarness(t, dir, 2)
	h.cfg.EvalSamples, h.cfg.Override = 3, true
	require.NoError(t, h.run(context.Background()))
	require.Contains(t, h.log.String(), "held_out.samples (--eval-samples): 2 -> 3")

	h = newRunHarness(t, dir, 3)
	h.cfg.EvalSamples, h.cfg.EvalEvery = 5, 0
	require.NoError(t, h.run(context.Background()))

	h = newRunHarness(t, dir, 4)
	h.cfg.EvalSamples = 5
	require.ErrorContains(t, h.run(context.Background()), "held_out.samples (--eval-samples): 3 -> 5")
}

// TestLockRunPutsBackAPendingAside: the entries a --fresh killed within
// its moves left in .previous-pending go back where they were as the run
// directory is locked, so that no previous-* holds part of a run; one
// whose name the directory holds again is not put over it, and the
// pending directory becomes a previous-* that keeps it.
func TestLockRunPutsBackAPendingAside(t *testing.T) {
	for _, tc := range []struct {
		name     string
		pending  map[string]string // path under .previous-pending: contents
		there    map[string]string // path under the run directory: contents
		want     map[string]string // path under the run directory: contents, after
		previous map[string]string // path under the one previous-*: contents (nil: none)
	}{
		{name: "killed within the moves",
			pending: map[string]string{"checkpoints/ckpt-000002/meta.json": "c", "sft.jsonl.partial": "log"},
			there:   map[string]string{"tensorboard/events": "e"},
			want:    map[string]string{"checkpoints/ckpt-000002/meta.json": "c", "sft.jsonl.partial": "log", "tensorboard/events": "e"}},
		{name: "a name written again since",
			pending:  map[string]string{"metrics.jsonl": "old", "eval.jsonl": "e"},
			there:    map[string]string{"metrics.jsonl": "new"},
			want:     map[string]string{"metrics.jsonl": "new", "eval.jsonl": "e"},
			previous: map[string]string{"metrics.jsonl": "old"}},
		{name: "nothing pending",
			there: map[string]string{"metrics.jsonl": "m"},
			want:  map[string]string{"metrics.jsonl": "m"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			write := func(root string, files map[string]string) {
				for p, c := range files {
					require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(root, p)), 0o777))
					require.NoError(t, os.WriteFile(filepath.Join(root, p), []byte(c), 0o666))
				}
			}
			write(filepath.Join(dir, ".previous-pending"), tc.pending)
			write(dir, tc.there)
			unlock, err := LockRun(dir)
			require.NoError(t, err)
			defer unlock()
			require.NoDirExists(t, filepath.Join(dir, ".previous-pending"))
			for p, c := range tc.want {
				b, err := os.ReadFile(filepath.Join(dir, p))
				require.NoError(t, err, p)
				require.Equal(t, c, string(b), p)
			}
			prev, err := filepath.Glob(filepath.Join(dir, previousPattern+"*"))
			require.NoError(t, err)
			if tc.previous == nil {
				require.Empty(t, prev)
				return
			}
			require.Len(t, prev, 1)
			for p, c := range tc.previous {
				b, err := os.ReadFile(filepath.Join(prev[0], p))
				require.NoError(t, err, p)
				require.Equal(t, c, string(b), p)
			}
		})
	}
}

// TestLockRunRemovesAKilledSavesTemporaries: the temporary checkpoint a
// Save killed within it left (as large as a checkpoint) goes as the run
// directory is locked: a rerun with --fresh moved it into previous-*/
// with the checkpoints, where it stayed for good, and one that resumes
// kept it through --checkpoint-every steps.
func TestLockRunRemovesAKilledSavesTemporaries(t *testing.T) {
	dir := t.TempDir()
	ckpts := filepath.Join(dir, CheckpointsDir)
	tmp := filepath.Join(ckpts, ".tmp-ckpt-000002-0123456789abcdef")
	require.NoError(t, os.MkdirAll(tmp, 0o777))
	require.NoError(t, os.WriteFile(filepath.Join(tmp, "model.safetensors"), []byte("partial"), 0o666))
	require.NoError(t, os.MkdirAll(filepath.Join(ckpts, "ckpt-000001"), 0o777))
	unlock, err := LockRun(dir)
	require.NoError(t, err)
	defer unlock()
	require.NoDirExists(t, tmp)
	require.DirExists(t, filepath.Join(ckpts, "ckpt-000001"))
}

// TestRunSeedOverrideDataOrder: a run resumed with --override and
// another --seed draws its problems in the new seed's order from the
// start of a new epoch, as its rollouts use the new seed, and says so;
// later reruns with that seed resume it as usual.
func TestRunSeedOverrideDataOrder(t *testing.T) {
	var problems []data.Problem
	for _, id := range []string{"a", "b", "c", "d", "e", "f", "g", "h"} {
		problems = append(problems, data.Problem{ID: id, Problem: id, Answer: "1"})
	}
	harness := func(dir string, steps int, seed uint64, override bool) *runHarness {
		h := newRunHarnessOn(t, dir, steps, problems)
		h.cfg.EvalEvery, h.cfg.Override = 0, override
		// A fresh stream of seed, as spiral train --seed makes.
		require.NoError(t, h.parts.Problems.Restore(data.Cursor{Seed: seed}))
		h.parts.Trainer.cfg.Seed, h.parts.Settings.RL.Seed = seed, seed
		return h
	}
	dir := t.TempDir()
	h := harness(dir, 1, 3, false)
	require.NoError(t, h.run(context.Background()))
	first := h.parts.Problems.Cursor()
	require.Equal(t, []int{0, 3}, []int{first.Epoch, int(first.Seed)})
	require.Less(t, first.Position, len(problems), "the first step ends mid-epoch")

	h = harness(dir, 2, 5, true)
	require.NoError(t, h.run(context.Background()))
	require.Contains(t, h.log.String(), "spiral: --override: --seed 5, not 3: the problems go on from the start of a new epoch in its order\n")
	cur := h.parts.Problems.Cursor()
	require.Equal(t, []int{1, 5}, []int{cur.Epoch, int(cur.Seed)}, "epoch 1 of seed 5")
	require.Positive(t, cur.Position)

	h = harness(dir, 3, 5, false)
	require.NoError(t, h.run(context.Background()))
	require.Contains(t, h.out.String(), "(step 2)")
	require.NotContains(t, h.log.String(), "--override")
	require.Equal(t, uint64(5), h.parts.Problems.Cursor().Seed)
}

// TestReadRunCurvesOtherHeldOut: a run resumed under --override onto
// other held-out problems logs eval.jsonl lines of two problem sets
// (their problems_digest), and its held-out curve ran across both, so
// compare --run printed pass@1 first -> last from one set to the other.
// The curve now keeps the lines of the last set (and those that record
// no digest, of older versions), counting those left out.
func TestReadRunCurvesOtherHeldOut(t *testing.T) {
	line := func(step int, pass float64, digest string) string {
		d := ""
		if digest != "" {
			d = fmt.Sprintf(`,"problems_digest":%q`, digest)
		}
		return fmt.Sprintf(`{"step":%d,"problems":2,"samples":1,"points":[{"k":1,"pass_at_k":%g}]%s}`, step, pass, d)
	}
	for _, tc := range []struct {
		name    string
		evals   []string
		keys    []int
		y       []float64
		digests []string
		left    int
	}{
		{"one set", []string{line(0, 0.5, "aa"), line(2, 0.75, "aa")}, []int{0, 2}, []float64{0.5, 0.75}, []string{"aa"}, 0},
		{"switched", []string{line(0, 0.75, "aa"), line(1, 1, "aa"), line(2, 0, "bb"), line(3, 0.25, "bb")}, []int{2, 3}, []float64{0, 0.25}, []string{"bb"}, 2},
		{"older lines count", []string{line(0, 0.5, ""), line(1, 0.75, "aa"), line(2, 0, "bb")}, []int{0, 2}, []float64{0.5, 0}, []string{"bb"}, 1},
		{"no digests", []string{line(0, 0.5, ""), line(1, 0.75, "")}, []int{0, 1}, []float64{0.5, 0.75}, nil, 0},
	} {
		dir := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(dir, MetricsFile), []byte(`{"step":1,"entropy":0.1}`+"\n"), 0o644))
		require.NoError(t, os.WriteFile(filepath.Join(dir, EvalFile), []byte(strings.Join(tc.evals, "\n")+"\n"), 0o644))
		c, err := ReadRunCurves(dir)
		require.NoError(t, err, tc.name)
		require.Equal(t, report.Curve{Keys: tc.keys, Y: tc.y}, c.HeldOut, tc.name)
		require.Equal(t, tc.digests, c.HeldOutDigests, tc.name)
		require.Equal(t, tc.left, c.HeldOutLeftOut, tc.name)
	}
}

// TestRunResumeCandidateCap: a run's settings recorded nothing telling
// a --candidate-tokens cap that counted a stopped candidate's closing
// <|im_end|> (before e4d994d) from one of text tokens, so a run resumed
// across that change went on with candidates one token longer without a
// word. A capped run now records candidate_cap, and resuming a
// checkpoint without it notes the change.
func TestRunResumeCandidateCap(t *testing.T) {
	capped := func(dir string, steps int) *runHarness {
		h := newRunHarness(t, dir, steps)
		h.cfg.EvalEvery = 0
		h.parts.Settings.RL.Pipeline.CandidateTokens = 4
		return h
	}
	dir := t.TempDir()
	h := capped(dir, 1)
	require.NoError(t, h.run(context.Background()))
	path := filepath.Join(dir, CheckpointsDir, checkpoint.DirName(1))
	s, err := CheckpointSettings(path)
	require.NoError(t, err)
	require.Equal(t, report.CandidateCapText, s.CandidateCap)

	// The same checkpoint as an older version saved it.
	st, err := checkpoint.ReadState(path)
	require.NoError(t, err)
	var config map[string]any
	require.NoError(t, json.Unmarshal(st.Config, &config))
	delete(config, "candidate_cap")
	old, err := json.Marshal(config)
	require.NoError(t, err)
	older := t.TempDir()
	_, err = checkpoint.Save(filepath.Join(older, CheckpointsDir), h.parts.Weights, h.parts.Optimizer, checkpoint.State{Step: 1, DataCursor: st.DataCursor, Config: old}, checkpoint.Options{})
	require.NoError(t, err)

	h = capped(older, 2)
	require.NoError(t, h.run(context.Background()))
	require.Equal(t, "spiral: note: the run's steps up to 1 capped aggregation candidates at --candidate-tokens 4 counting a stopped candidate's closing <|im_end|> too (a version from before the cap counted tokens of text alone); from here on such a candidate keeps one more token of its text\n", h.log.String())
	s, err = CheckpointSettings(filepath.Join(older, CheckpointsDir, checkpoint.DirName(2)))
	require.NoError(t, err)
	require.Equal(t, report.CandidateCapText, s.CandidateCap)

	h = capped(older, 3)
	require.NoError(t, h.run(context.Background()))
	require.Empty(t, h.log.String(), "the run records the cap now")

	// Uncapped, nothing is recorded.
	h = newRunHarness(t, t.TempDir(), 1)
	h.cfg.EvalEvery = 0
	require.NoError(t, h.run(context.Background()))
	s, err = CheckpointSettings(filepath.Join(h.cfg.Dir, CheckpointsDir, checkpoint.DirName(1)))
	require.NoError(t, err)
	require.Empty(t, s.CandidateCap)
}

// sleepSync is a serving engine's weight sync that takes d.
type sleepSync struct {
	d       time.Duration
	version string
}

func (s *sleepSync) Sync(_ context.Context, step int) error {
	time.Sleep(s.d)
	s.version = fmt.Sprintf("v%d", step)
	return nil
}
func (s *sleepSync) Version() string { return s.version }

// Check finds the weights served: the engine never restarts.
func (s *sleepSync) Check(context.Context) error { return nil }

// TestRunEngineSyncTimeLogged: the weight sync a held-out evaluation
// does before sampling is logged on its eval.jsonl line, and the step
// after it, whose engine has the weights already, logs no sync of its
// own (not a sync of about 0 s), so that every sync is counted once.
// Steps 1-3, evaluations at 0, 2 and 3: syncs at the evaluations of 0,
// 2 and 3 and before step 2's rollouts (step 1's weights).
func TestRunEngineSyncTimeLogged(t *testing.T) {
	const d = 30 * time.Millisecond
	dir := t.TempDir()
	h := newRunHarness(t, dir, 3)
	h.cfg.EvalEvery = 2
	h.parts.Trainer.sync = &sleepSync{d: d}
	require.NoError(t, h.run(context.Background()))

	b, err := os.ReadFile(filepath.Join(dir, MetricsFile))
	require.NoError(t, err)
	var stepSync []bool
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var m struct {
			Sync    *float64 `json:"sync_seconds"`
			Rollout float64  `json:"rollout_seconds"`
			Train   float64  `json:"train_seconds"`
			Step    float64  `json:"step_seconds"`
		}
		require.NoError(t, json.Unmarshal([]byte(line), &m))
		synced := m.Sync != nil
		if synced {
			require.GreaterOrEqual(t, *m.Sync, d.Seconds(), line)
		}
		sync := 0.0
		if synced {
			sync = *m.Sync
		}
		require.GreaterOrEqual(t, m.Step, sync+m.Rollout+m.Train, "step_seconds holds its parts: %s", line)
		stepSync = append(stepSync, synced)
	}
	require.Equal(t, []bool{false, true, false}, stepSync, "steps 1 and 3 follow an evaluation's sync")

	b, err = os.ReadFile(filepath.Join(dir, EvalFile))
	require.NoError(t, err)
	var evalSteps []int
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var e struct {
			Step int     `json:"step"`
			Sync float64 `json:"sync_seconds"`
		}
		require.NoError(t, json.Unmarshal([]byte(line), &e))
		require.GreaterOrEqual(t, e.Sync, d.Seconds(), "the evaluation's sync: %s", line)
		evalSteps = append(evalSteps, e.Step)
	}
	require.Equal(t, []int{0, 2, 3}, evalSteps)
}

// TestRunPlotFailureWarns: a training.png that cannot be written (here a
// directory in its place) is warned of at each checkpoint and at the end,
// and the run goes on and finishes, its checkpoints and logs saved, as a
// failed pruning or `latest` pointer does: the plot is bookkeeping, drawn
// again by a rerun of the finished run.
func TestRunPlotFailureWarns(t *testing.T) {
	for _, tc := range []struct {
		name  string
		runs  []int // --steps of each run in turn
		warns int   // plot warnings of the last run
	}{
		{"each checkpoint", []int{2}, 2},
		{"a finished run rerun", []int{1, 1}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			plot := filepath.Join(dir, TrainingPlot)
			require.NoError(t, os.MkdirAll(filepath.Join(plot, "x"), 0o777))
			var h *runHarness
			for _, steps := range tc.runs {
				h = newRunHarness(t, dir, steps)
				require.NoError(t, h.run(context.Background()))
			}
			last := tc.runs[len(tc.runs)-1]
			require.Equal(t, tc.warns, strings.Count(h.log.String(), "spiral: warning: could not draw "+plot), h.log.String())
			require.Contains(t, h.log.String(), "a rerun of the finished run draws it again")
			require.DirExists(t, filepath.Join(dir, CheckpointsDir, checkpoint.DirName(int64(last))))
			require.Equal(t, []int{0, 1, 2}[:last+1], loggedEvalSteps(t, dir))
		})
	}
}

// TestCheckRunSettings: CheckRunSettings, which train asks before it
// loads the policy, refuses what Run's resume refuses, with its error,
// and passes what it passes: other settings and other usable problems
// without --override, other held-out problems; the same run, --override
// and --fresh pass.
func TestCheckRunSettings(t *testing.T) {
	dir := t.TempDir()
	h := newRunHarness(t, dir, 1)
	h.parts.Settings.DataID = data.ProblemsDigest(h.parts.Held)
	require.NoError(t, h.run(context.Background()))
	more := []data.Problem{{ID: "hard", Problem: "hard", Answer: "1"}, {ID: "easy", Problem: "easy", Answer: "1"}, {ID: "new", Problem: "new", Answer: "2"}}
	for _, tc := range []struct {
		name   string
		change func(*runHarness)
		want   string
	}{
		{"the same run", func(*runHarness) {}, ""},
		{"other --lr", func(h *runHarness) { h.parts.Settings.Schedule.PeakLR = 0.5 }, dir + " holds a run with other settings: schedule.peak_lr (--lr): 0.01 -> 0.5"},
		{"other --lr, --override", func(h *runHarness) { h.parts.Settings.Schedule.PeakLR, h.cfg.Override = 0.5, true }, ""},
		{"other --lr, --fresh", func(h *runHarness) { h.parts.Settings.Schedule.PeakLR, h.cfg.Fresh = 0.5, true }, ""},
		{"other held-out problems", func(h *runHarness) { h.parts.Held = h.parts.Held[:1] }, "held_out.problems (--eval-problems): 2 -> 1"},
		{"other usable problems", func(h *runHarness) { h.parts.Problems = data.NewStream(data.NewDataset("t", more), 3) },
			"the run drew from 2 usable problems and d now has 3: restore the file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newRunHarness(t, dir, 1)
			h.parts.Settings.DataID = data.ProblemsDigest(h.parts.Held)
			tc.change(h)
			checked := CheckRunSettings(h.cfg, h.parts)
			if tc.want == "" {
				require.NoError(t, checked)
			} else {
				require.ErrorContains(t, checked, tc.want)
			}
			if h.cfg.Fresh {
				return // Run starts over, moving the run aside
			}
			resumed := h.run(context.Background())
			if checked == nil {
				require.NoError(t, resumed)
				return
			}
			require.EqualError(t, resumed, checked.Error(), "Run's resume refuses it alike")
		})
	}
}

// TestCheckSettingsBeforeEngine: CheckSettingsBeforeEngine, which train
// asks before it waits for a serving engine, refuses other settings
// without --override as CheckRunSettings does, and passes the settings
// that depend on the context the engine serves, which CheckRunSettings
// compares after the wait: the longest prompt, the held-out problems
// fitted to it, and the trace length where its default is the
// context's (traceByContext); other --eval-samples are refused.
func TestCheckSettingsBeforeEngine(t *testing.T) {
	dir := t.TempDir()
	h := newRunHarness(t, dir, 1)
	h.parts.Settings.RL.Pipeline.PromptLimit = 100
	h.parts.Settings.Sampling = map[string]any{"max_new_tokens": 50, "temperature": 1}
	require.NoError(t, h.run(context.Background()))
	for _, tc := range []struct {
		name           string
		change         func(*runHarness)
		traceByContext bool
		want           string // "": passes before the engine
		after          string // CheckRunSettings' refusal after it, "" for none
	}{
		{"the same run", func(*runHarness) {}, false, "", ""},
		{"other --seed", func(h *runHarness) { h.parts.Settings.RL.Seed = 7 }, false, dir + " holds a run with other settings: rl.seed (--seed): 1 -> 7; rerun with --override", ""},
		{"other --lr", func(h *runHarness) { h.parts.Settings.Schedule.PeakLR = 0.5 }, false, "schedule.peak_lr (--lr): 0.01 -> 0.5", ""},
		{"other --temperature", func(h *runHarness) { h.parts.Settings.Sampling["temperature"] = 0.5 }, false, "sampling.temperature (--temperature): 1 -> 0.5", ""},
		{"other --eval-samples", func(h *runHarness) { h.cfg.EvalSamples = 4 }, false, "held_out.samples (--eval-samples): 2 -> 4", ""},
		{"other --seed, --override", func(h *runHarness) { h.parts.Settings.RL.Seed, h.cfg.Override = 7, true }, false, "", ""},
		{"other --seed, --fresh", func(h *runHarness) { h.parts.Settings.RL.Seed, h.cfg.Fresh = 7, true }, false, "", ""},
		{"a shorter context", func(h *runHarness) { h.parts.Settings.RL.Pipeline.PromptLimit = 80 }, false, "",
			"rl.pipeline.prompt_limit (the model's context less --max-new-tokens): 100 -> 80"},
		{"a context one position shorter", func(h *runHarness) { h.parts.Settings.RL.Pipeline.PromptLimit = 99 }, false, "",
			"rl.pipeline.prompt_limit (the model's context less --max-new-tokens): 100 -> 99"},
		// A run a version before 2026-12-07 started on an SGLang fitted
		// to its max_model_len, now to one less: said why.
		{"an SGLang's context, one position less since", func(h *runHarness) { h.parts.Settings.RL.Pipeline.PromptLimit, h.parts.SGLangListed = 99, 150 }, false, "",
			dir + " holds a run with other settings: rl.pipeline.prompt_limit (the model's context less --max-new-tokens; SGLang's context is taken one position shorter than it serves since spiral of 2026-12-07, as SGLang refuses a request that fills it: --override continues): 100 -> 99; rerun with --override"},
		{"an SGLang's shorter context", func(h *runHarness) { h.parts.Settings.RL.Pipeline.PromptLimit, h.parts.SGLangListed = 80, 130 }, false, "",
			"rl.pipeline.prompt_limit (the model's context less --max-new-tokens): 100 -> 80"},
		{"the default trace length of an SGLang's context, one position less since", func(h *runHarness) {
			h.parts.Settings.Sampling["max_new_tokens"], h.parts.SGLangListed = 49, 100
		}, true, "",
			"sampling.max_new_tokens (--max-new-tokens, by default half the context; SGLang's context is taken one position shorter than it serves since spiral of 2026-12-07, as SGLang refuses a request that fills it: --override continues): 50 -> 49"},
		{"another --max-new-tokens on an SGLang", func(h *runHarness) { h.parts.Settings.Sampling["max_new_tokens"], h.parts.SGLangListed = 49, 150 }, false,
			"sampling.max_new_tokens (--max-new-tokens): 50 -> 49", ""},
		{"a held-out problem too long for it", func(h *runHarness) { h.parts.Held = h.parts.Held[:1] }, false, "", "held_out.problems (--eval-problems): 2 -> 1"},
		{"the default trace length of a shorter context", func(h *runHarness) { h.parts.Settings.Sampling["max_new_tokens"] = 40 }, true, "",
			"sampling.max_new_tokens (--max-new-tokens): 50 -> 40"},
		{"another --max-new-tokens", func(h *runHarness) { h.parts.Settings.Sampling["max_new_tokens"] = 40 }, false,
			"sampling.max_new_tokens (--max-new-tokens): 50 -> 40", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newRunHarness(t, dir, 1)
			h.parts.Settings.RL.Pipeline.PromptLimit = 100
			h.parts.Settings.Sampling = map[string]any{"max_new_tokens": 50, "temperature": 1}
			tc.change(h)
			err := CheckSettingsBeforeEngine(h.cfg, h.parts, tc.traceByContext)
			if tc.want != "" {
				require.ErrorContains(t, err, tc.want)
				require.EqualError(t, CheckRunSettings(h.cfg, h.parts), err.Error(), "as the check after the engine refuses it")
				return
			}
			require.NoError(t, err)
			if tc.after == "" {
				require.NoError(t, CheckRunSettings(h.cfg, h.parts))
			} else {
				require.ErrorContains(t, CheckRunSettings(h.cfg, h.parts), tc.after)
			}
		})
	}
}

// TestFinalRSARecordsTheCheckpoint: rsa.json records the digest of the
// checkpoint it evaluated (checkpoint.State.Digest), as eval's
// report of a checkpoint does, so that compare tells the final
// evaluations of two runs in directories of one name apart: their
// models, named by that name and the step's checkpoint, are alike.
func TestFinalRSARecordsTheCheckpoint(t *testing.T) {
	dir := t.TempDir()
	h := newRunHarness(t, dir, 2)
	h.cfg.EvalEvery, h.cfg.FinalRSA = 0, rollout.RSAConfig{Population: 2, SubsetSize: 2, Steps: 1}
	require.NoError(t, h.run(context.Background()))
	var rep report.RSA
	require.NoError(t, report.ReadJSON(filepath.Join(dir, FinalRSAFile), &rep))
	st, err := checkpoint.ReadState(filepath.Join(dir, CheckpointsDir, checkpoint.DirName(2)))
	require.NoError(t, err)
	require.NotEmpty(t, st.Digest())
	require.Equal(t, st.Digest(), rep.Meta.CheckpointDigest)
}

// TestRunWarnsWithinWarmup: train's run warns, as sft's does
// (TestWarnWithinWarmup), where its --steps end before its --warmup: once
// a run, a resumed one too (of the steps it is given), not where a
// finished run is rerun or the warmup ends by the last step.
func TestRunWarnsWithinWarmup(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		steps int
		want  string
	}{
		{2, "spiral: warning: --steps 2 is below --warmup 4: the run ends inside the warmup, its learning rate at most 0.005 (2/4 of the peak, --lr 0.01); give --warmup 2 or less to reach the peak\n"},
		{3, "spiral: warning: --steps 3 is below --warmup 4: the run ends inside the warmup, its learning rate at most 0.0075 (3/4 of the peak, --lr 0.01); give --warmup 3 or less to reach the peak\n"},
		{3, ""}, // finished: nothing to train
		{4, ""}, // the last update at the peak
	} {
		h := newRunHarness(t, dir, c.steps)
		h.parts.Trainer.sched.WarmupSteps = 4
		h.parts.Settings.Schedule = h.parts.Trainer.sched
		require.NoError(t, h.run(context.Background()))
		require.Equal(t, c.want, warmupLines(h.log.String()), "--steps %d", c.steps)
	}
}
