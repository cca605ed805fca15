package rl

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/spiral-rl/spiral/model/checkpoint"
	"github.com/spiral-rl/spiral/rollout"
	"github.com/spiral-rl/spiral/rollout/report/tfevents"
)

// TestJSONScalars: every number of a line, nested objects' under their
// key path and arrays' under their index from 1, in the line's order;
// strings, booleans, nulls, the top-level step and the skipped keys left
// out; a key given twice counts once, with its last value; a line that
// is not a JSON object, or a number past float64, is an error.
func TestJSONScalars(t *testing.T) {
	sc := func(kv ...any) []tfevents.Scalar {
		var out []tfevents.Scalar
		for i := 0; i < len(kv); i += 2 {
			out = append(out, tfevents.Scalar{Tag: kv[i].(string), Value: float32(kv[i+1].(float64))})
		}
		return out
	}
	for _, tc := range []struct {
		line string
		skip []string
		want []tfevents.Scalar
		err  string
	}{
		{line: `{"step":3,"loss":-0.5,"search":{"traces":8,"reward":0.25},"aggregate":{}}`,
			want: sc("loss", -0.5, "search/traces", 8.0, "search/reward", 0.25)},
		{line: `{"step":1,"aggregate_rounds":[{"reward":0.5},{"reward":0.75}],"a":{"step":2}}`,
			want: sc("aggregate_rounds/1/reward", 0.5, "aggregate_rounds/2/reward", 0.75, "a/step", 2.0)},
		{line: `{"step":1,"loss":null,"no_update":true,"policy_version":"v3","lr":1e-5,"grad_norm":2}`, skip: []string{"lr", "grad_norm"},
			want: nil},
		{line: `{"step":1,"x":[1,[2,3]],"y":"1"}`,
			want: sc("x/1", 1.0, "x/2/1", 2.0, "x/2/2", 3.0)},
		// A key twice counts once, with its last value (encoding/json's
		// reading; the fuzzer's find).
		{line: `{"step":1,"a":1,"b":2,"a":{"c":3},"":[{"":0}],"":[]}`,
			want: sc("a/c", 3.0, "b", 2.0)},
		{line: `[1,2]`, err: "want a JSON object"},
		{line: `null`, err: "want a JSON object"},
		{line: `{"step":1,"x":1}{"y":2}`, err: "want a JSON object"},
		{line: `{"step":1,"x":1e400}`, err: "x: strconv.ParseFloat"},
	} {
		got, err := jsonScalars([]byte(tc.line), tc.skip)
		if tc.err != "" {
			require.ErrorContains(t, err, tc.err, tc.line)
			continue
		}
		require.NoError(t, err, tc.line)
		require.Equal(t, tc.want, got, tc.line)
	}
}

// TestMetricsEvent: a step's line as train writes it gives every numeric
// figure under its JSON name; a step that trained nothing (no_update,
// or "examples": 0 before the marker existed) leaves out its unmeasured
// loss, entropy, gradient norm and learning rate; a skipped update's
// null loss is left out; a line without a step is an error.
func TestMetricsEvent(t *testing.T) {
	credit := 0.5
	m := Metrics{Step: 4, Search: PhaseMetrics{Traces: 8, Reward: 0.25, MeanLength: 30}, Aggregate: PhaseMetrics{Traces: 16, Reward: 0.5, FittedPrompts: 2},
		ProblemsDrawn: 2, ProblemsInformative: 1, InformativeFraction: 0.5, Examples: 24, SearchCredit: &credit,
		Loss: -0.125, Entropy: 1.5, GradNorm: 3, LR: 1e-5, StepSeconds: 9}
	b, err := json.Marshal(m)
	require.NoError(t, err)
	e, err := metricsEvent(b, 7)
	require.NoError(t, err)
	require.Equal(t, int64(4), e.Step)
	require.Equal(t, 7.0, e.Wall)
	got := map[string]float32{}
	var tags []string
	for _, s := range e.Scalars {
		got[s.Tag] = s.Value
		tags = append(tags, s.Tag)
	}
	require.Equal(t, []string{
		"search/traces", "search/reward", "search/mean_length", "search/truncated", "search/unboxed", "search/tokens_per_second", "search/seconds",
		"aggregate/traces", "aggregate/reward", "aggregate/mean_length", "aggregate/truncated", "aggregate/unboxed", "aggregate/tokens_per_second", "aggregate/seconds", "aggregate/fitted_prompts",
		"problems_drawn", "problems_informative", "informative_fraction", "examples", "loss_tokens", "adv_mean", "adv_std", "adv_min", "adv_max", "search_credit",
		"lr", "policy_lag", "rollout_seconds", "train_seconds", "step_seconds", "train_tokens", "train_tokens_per_second", "loss", "entropy", "grad_norm",
	}, tags)
	require.Equal(t, map[string]float32{"search/reward": 0.25, "aggregate/reward": 0.5, "aggregate/fitted_prompts": 2, "search_credit": 0.5,
		"loss": -0.125, "entropy": 1.5, "grad_norm": 3, "lr": 1e-5, "step_seconds": 9, "search/traces": 8, "search/mean_length": 30},
		filter(got, "search/reward", "aggregate/reward", "aggregate/fitted_prompts", "search_credit", "loss", "entropy", "grad_norm", "lr", "step_seconds", "search/traces", "search/mean_length"))

	for _, line := range []string{
		`{"step":2,"search":{"reward":0},"no_update":true,"loss":0,"entropy":0,"grad_norm":0,"lr":0,"step_seconds":1}`,
		`{"step":2,"search":{"reward":0},"examples":0,"loss":0,"entropy":0,"grad_norm":0,"lr":0,"step_seconds":1}`,
	} {
		e, err := metricsEvent([]byte(line), 0)
		require.NoError(t, err)
		for _, s := range e.Scalars {
			require.NotContains(t, unmeasured, s.Tag, line)
		}
		require.Contains(t, e.Scalars, tfevents.Scalar{Tag: "step_seconds", Value: 1}, line)
	}

	m.Loss, m.GradNorm, m.UpdateSkipped = math.NaN(), math.Inf(1), "non-finite gradient"
	b, err = json.Marshal(m)
	require.NoError(t, err)
	e, err = metricsEvent(b, 0)
	require.NoError(t, err)
	for _, s := range e.Scalars {
		require.NotContains(t, []string{"loss", "grad_norm"}, s.Tag)
	}
	require.Contains(t, e.Scalars, tfevents.Scalar{Tag: "lr", Value: 1e-5})

	_, err = metricsEvent([]byte(`{"loss":1}`), 0)
	require.ErrorContains(t, err, `no training step ("step" = 0)`)
}

// TestMetricsEventNoAggregatePhase: a step without aggregation traces
// (GRPO's, whose line writes its aggregate phase as zeros) logs no
// aggregate/ scalars, which TensorBoard would draw as an aggregation
// reward, length and rate of 0 beside SPIRAL's; its search phase stays.
func TestMetricsEventNoAggregatePhase(t *testing.T) {
	m := Metrics{Step: 1, Search: PhaseMetrics{Traces: 48, Reward: 0.5, MeanLength: 70, Seconds: 0.2, TokensPerSecond: 16800},
		ProblemsDrawn: 2, ProblemsInformative: 2, InformativeFraction: 1, Examples: 48, Loss: 0.1, Entropy: 0.2, GradNorm: 0.6, LR: 2e-5, StepSeconds: 1}
	b, err := json.Marshal(m)
	require.NoError(t, err)
	require.Contains(t, string(b), `"aggregate":{"traces":0,"reward":0,`)
	e, err := metricsEvent(b, 0)
	require.NoError(t, err)
	var tags []string
	for _, s := range e.Scalars {
		tags = append(tags, s.Tag)
	}
	require.Equal(t, []string{
		"search/traces", "search/reward", "search/mean_length", "search/truncated", "search/unboxed", "search/tokens_per_second", "search/seconds",
		"problems_drawn", "problems_informative", "informative_fraction", "examples", "loss_tokens", "adv_mean", "adv_std", "adv_min", "adv_max",
		"lr", "policy_lag", "rollout_seconds", "train_seconds", "step_seconds", "train_tokens", "train_tokens_per_second", "loss", "entropy", "grad_norm",
	}, tags)
}

// filter is m restricted to the keys.
func filter(m map[string]float32, keys ...string) map[string]float32 {
	out := map[string]float32{}
	for _, k := range keys {
		if v, ok := m[k]; ok {
			out[k] = v
		}
	}
	return out
}

// TestEvalEvent: a held-out evaluation gives heldout/pass@K at each k
// and heldout/majority@K at each k but 1, at its step (0 too): the
// majority of one sample is that sample, so majority@1 is pass@1 (0.25
// both here), a second curve identical to it.
func TestEvalEvent(t *testing.T) {
	b, err := json.Marshal(EvalLine{Step: 0, Problems: 2, Samples: 4, Points: []rollout.KPoint{{K: 1, PassAtK: 0.25, MajorityAtK: 0.25, MajorityExact: true}, {K: 4, PassAtK: 0.75, MajorityAtK: 0.5}}})
	require.NoError(t, err)
	e, err := evalEvent(b, 3)
	require.NoError(t, err)
	require.Equal(t, tfevents.Event{Wall: 3, Step: 0, Scalars: []tfevents.Scalar{
		{Tag: "heldout/pass@1", Value: 0.25}, {Tag: "heldout/pass@4", Value: 0.75}, {Tag: "heldout/majority@4", Value: 0.5}}}, e)
	_, err = evalEvent([]byte(`{"points":[]}`), 0)
	require.ErrorContains(t, err, `no "step" >= 0`)
}

// tbScalars reads every spiral event file in dir/tensorboard and returns
// their values by tag and step, failing on a tag logged twice at one step
// (files that overlap) or a file whose first event is not its
// file_version.
func tbScalars(t *testing.T, dir string) map[string]map[int64]float32 {
	t.Helper()
	files, err := tfevents.Files(filepath.Join(dir, TensorBoardDir))
	require.NoError(t, err)
	out := map[string]map[int64]float32{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		version, events, torn, err := tfevents.Decode(b)
		require.NoError(t, err)
		require.False(t, torn, f)
		require.Equal(t, tfevents.FileVersion, version, f)
		for _, e := range events {
			for _, s := range e.Scalars {
				if out[s.Tag] == nil {
					out[s.Tag] = map[int64]float32{}
				}
				_, twice := out[s.Tag][e.Step]
				require.False(t, twice, "%s at step %d twice (%s)", s.Tag, e.Step, f)
				out[s.Tag][e.Step] = s.Value
			}
		}
	}
	return out
}

// scalarsOf is events' values by tag and step.
func scalarsOf(events []tfevents.Event) map[string]map[int64]float32 {
	out := map[string]map[int64]float32{}
	for _, e := range events {
		for _, s := range e.Scalars {
			if out[s.Tag] == nil {
				out[s.Tag] = map[int64]float32{}
			}
			out[s.Tag][e.Step] = s.Value
		}
	}
	return out
}

// TestRunTensorBoard: train --tensorboard logs each metrics.jsonl and
// eval.jsonl line as an event as it writes it, exactly the events that
// spiral tensorboard converts the logs to; a run resumed from an earlier
// checkpoint than its last logged step cuts the event files back to it
// as it cuts its logs, so that every tag has each step once; a run
// resumed with --tensorboard after steps without it starts its file with
// those steps; a run without it still cuts the files; and --fresh moves
// them aside.
func TestRunTensorBoard(t *testing.T) {
	dir := t.TempDir()
	h := newRunHarness(t, dir, 3)
	h.cfg.TensorBoard = true
	require.NoError(t, h.run(context.Background()))
	events, torn, err := trainEvents(dir)
	require.NoError(t, err)
	require.Empty(t, torn)
	want := scalarsOf(events)
	require.Equal(t, want, tbScalars(t, dir))
	require.Equal(t, map[int64]float32{0: want["heldout/pass@1"][0], 1: want["heldout/pass@1"][1], 2: want["heldout/pass@1"][2], 3: want["heldout/pass@1"][3]}, want["heldout/pass@1"])
	require.Len(t, want["search/reward"], 3)

	// Lose checkpoints 2 and 3: the rerun resumes at step 1, logs and
	// events cut back to it, and redoes steps 2 and 3 into a new file.
	for _, s := range []int64{2, 3} {
		require.NoError(t, os.RemoveAll(filepath.Join(dir, CheckpointsDir, checkpoint.DirName(s))))
	}
	h = newRunHarness(t, dir, 3)
	h.cfg.TensorBoard = true
	require.NoError(t, h.run(context.Background()))
	require.Contains(t, h.out.String(), "(step 1)")
	eventFiles(t, dir, 2)
	events, _, err = trainEvents(dir)
	require.NoError(t, err)
	require.Equal(t, scalarsOf(events), tbScalars(t, dir))

	// Without --tensorboard a resumed run cuts the files all the same.
	require.NoError(t, os.RemoveAll(filepath.Join(dir, CheckpointsDir, checkpoint.DirName(3))))
	require.NoError(t, os.RemoveAll(filepath.Join(dir, CheckpointsDir, checkpoint.DirName(2))))
	h = newRunHarness(t, dir, 1)
	require.NoError(t, h.run(context.Background()))
	got := tbScalars(t, dir)
	require.Len(t, got["search/reward"], 1)
	require.Len(t, got["heldout/pass@1"], 2) // steps 0 and 1

	// Resumed with --tensorboard: steps 2 and 3 go after steps 0 and 1.
	h = newRunHarness(t, dir, 3)
	h.cfg.TensorBoard = true
	require.NoError(t, h.run(context.Background()))
	events, _, err = trainEvents(dir)
	require.NoError(t, err)
	require.Equal(t, scalarsOf(events), tbScalars(t, dir))

	h = newRunHarness(t, dir, 1)
	h.cfg.Fresh = true
	require.NoError(t, h.run(context.Background()))
	require.NoDirExists(t, filepath.Join(dir, TensorBoardDir))
	prev, err := filepath.Glob(filepath.Join(dir, "previous-*", TensorBoardDir))
	require.NoError(t, err)
	require.Len(t, prev, 1)
}

// TestRunTensorBoardDamagedFile: an event file that cannot be read (its
// checksums fail) is left as it is with a warning naming it, and the run
// resumes and logs on: it only shows the training.
func TestRunTensorBoardDamagedFile(t *testing.T) {
	dir := t.TempDir()
	files, b := damagedTensorBoardRun(t, dir)
	h := newRunHarness(t, dir, 2)
	h.cfg.TensorBoard = true
	require.NoError(t, h.run(context.Background()))
	require.Contains(t, h.log.String(), "spiral: warning: tfevents: "+files[0]+": record at byte ")
	require.Contains(t, h.log.String(), "data checksum")
	require.Contains(t, h.log.String(), ": left as it is, so TensorBoard may show steps past 1 twice (remove the file to drop them)\n")
	got, err := os.ReadFile(files[0])
	require.NoError(t, err)
	require.Equal(t, b, got)
	eventFiles(t, dir, 2) // the damaged file and a new one
}

// TestRunTensorBoardDamagedFileStartOver: a damaged file left by a run
// that starts over (no checkpoint to resume) is warned of as holding the
// earlier run's steps, not "steps past -1". Its logs are cut to step 0,
// no completed step: a run that logs steps is set aside whole, events
// and all (setAsideUnresumed), leaving no file to warn of.
func TestRunTensorBoardDamagedFileStartOver(t *testing.T) {
	dir := t.TempDir()
	files, _ := damagedTensorBoardRun(t, dir)
	require.NoError(t, os.RemoveAll(filepath.Join(dir, CheckpointsDir)))
	for _, log := range []string{MetricsFile, EvalFile} {
		_, err := truncateLog(filepath.Join(dir, log), 0)
		require.NoError(t, err)
	}
	h := newRunHarness(t, dir, 1)
	require.NoError(t, h.run(context.Background()))
	require.Contains(t, h.log.String(), "spiral: warning: tfevents: "+files[0]+": record at byte ")
	require.Contains(t, h.log.String(), ": left as it is, so TensorBoard may show the steps of the run before, which this one starts over from its beginning, beside this one's (remove the file to drop them)\n")
	require.NotContains(t, h.log.String(), "past -1")
}

// TestRunTensorBoardDamagedFileBackfill: the events a damaged file holds
// before its damage, which both of TensorBoard's loaders read, are not
// written again by the resumed run's backfill; the one its damage hides
// from the Python loader (which stops there) is.
func TestRunTensorBoardDamagedFileBackfill(t *testing.T) {
	dir := t.TempDir()
	_, b := damagedTensorBoardRun(t, dir)
	_, readable, _, err := tfevents.Decode(b)
	require.ErrorContains(t, err, "data checksum")
	require.Equal(t, []int64{0, 1}, []int64{readable[0].Step, readable[1].Step})

	h := newRunHarness(t, dir, 2)
	h.cfg.TensorBoard = true
	require.NoError(t, h.run(context.Background()))
	files := eventFiles(t, dir, 2)
	b, err = os.ReadFile(files[1])
	require.NoError(t, err)
	_, events, _, err := tfevents.Decode(b)
	require.NoError(t, err)
	all := slices.Concat(readable, events)
	logged, _, err := trainEvents(dir)
	require.NoError(t, err)
	require.Equal(t, scalarsOf(logged), scalarsOf(all))
	n := 0
	for _, e := range all {
		n += len(e.Scalars)
	}
	m := 0
	for _, e := range logged {
		m += len(e.Scalars)
	}
	require.Equal(t, m, n, "a scalar written twice")
}

// TestRunTensorBoardBackfill: a run trained without --tensorboard and
// resumed with it writes the steps logged before into its new file.
func TestRunTensorBoardBackfill(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, newRunHarness(t, dir, 2).run(context.Background()))
	require.NoDirExists(t, filepath.Join(dir, TensorBoardDir))
	h := newRunHarness(t, dir, 3)
	h.cfg.TensorBoard = true
	require.NoError(t, h.run(context.Background()))
	events, _, err := trainEvents(dir)
	require.NoError(t, err)
	got := tbScalars(t, dir)
	require.Equal(t, scalarsOf(events), got)
	require.Len(t, got["search/reward"], 3)
	require.Len(t, got["heldout/pass@1"], 4)
}

// TestRunTensorBoardBackfillEvaluation: an evaluation that a run without
// --tensorboard logged at a step whose metrics the event files hold (a
// --tensorboard run interrupted in the evaluation of its last step,
// which saved the step; resumed without --tensorboard, which evaluated
// it) is written by the next run with --tensorboard: the backfill is of
// every logged scalar the files lack, not only of the steps past theirs.
func TestRunTensorBoardBackfillEvaluation(t *testing.T) {
	dir := t.TempDir()
	h := newRunHarness(t, dir, 1)
	h.cfg.TensorBoard = true
	require.NoError(t, h.run(context.Background()))

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	h = newRunHarness(t, dir, 2)
	h.cfg.TensorBoard = true
	h.gen.cancel = cancel
	require.ErrorIs(t, h.run(ctx), context.Canceled)
	require.NotContains(t, tbScalars(t, dir)["heldout/pass@1"], int64(2))
	require.Contains(t, tbScalars(t, dir)["search/reward"], int64(2))

	h = newRunHarness(t, dir, 2)
	require.NoError(t, h.run(context.Background()))
	require.Equal(t, []int{0, 1, 2}, loggedEvalSteps(t, dir))

	h = newRunHarness(t, dir, 3)
	h.cfg.TensorBoard = true
	require.NoError(t, h.run(context.Background()))
	events, _, err := trainEvents(dir)
	require.NoError(t, err)
	got := tbScalars(t, dir)
	require.Equal(t, scalarsOf(events), got)
	require.Len(t, got["heldout/pass@1"], 4)
}

// exportTensorBoard converts dir's logs as spiral tensorboard does:
// PrepareTensorBoard, then Write.
func exportTensorBoard(dir string) (TensorBoardExport, error) {
	x, err := PrepareTensorBoard(dir)
	if err != nil {
		return x, err
	}
	return x, x.Write()
}

// TestExportTensorBoard: spiral tensorboard's conversion of a run's logs
// holds the events the live log holds, each step's metrics at the wall
// time the steps' seconds count back from metrics.jsonl's modification
// time, an evaluation at its step's; a run directory whose events are
// those of its logs already (the live log's) is left as it is, named in
// Converted, and one that has other events (one figure taken out of the
// live file), or no log, is refused naming it.
func TestExportTensorBoard(t *testing.T) {
	live := t.TempDir()
	h := newRunHarness(t, live, 2)
	h.cfg.TensorBoard = true
	require.NoError(t, h.run(context.Background()))

	liveFiles := eventFiles(t, live, 1)
	x, err := exportTensorBoard(live)
	require.NoError(t, err)
	require.Equal(t, liveFiles, x.Converted)
	require.Empty(t, x.Path)
	again, err := tfevents.Files(filepath.Join(live, TensorBoardDir))
	require.NoError(t, err)
	require.Equal(t, liveFiles, again, "nothing written")
	// The events of step 2 go, as a run resumed without --tensorboard
	// past step 1 leaves them: the conversion writes those alone, in a
	// new file named after the live one, and the two hold every figure
	// of the logs once; converted again, they are left as they are.
	_, err = tfevents.Truncate(liveFiles[0], 1)
	require.NoError(t, err)
	x, err = exportTensorBoard(live)
	require.NoError(t, err)
	require.Equal(t, liveFiles, x.Beside)
	require.Equal(t, []int64{2}, x.Lacked)
	both, err := tfevents.Files(filepath.Join(live, TensorBoardDir))
	require.NoError(t, err)
	require.Equal(t, []string{liveFiles[0], x.Path}, both)
	logged, _, err := trainEvents(live)
	require.NoError(t, err)
	require.Equal(t, scalarsOf(logged), tbScalars(t, live))
	x, err = exportTensorBoard(live)
	require.NoError(t, err)
	require.Equal(t, both, x.Converted)
	require.Empty(t, x.Path)
	// Events of a step the logs lack are refused, as are the steps of
	// a curve that the events lack before steps of it they hold
	// (TensorBoard drops a curve's later steps when an earlier follows).
	_, err = tfevents.WriteFile(filepath.Join(live, TensorBoardDir), time.Now(), []tfevents.Event{{Step: 9, Scalars: []tfevents.Scalar{{Tag: "loss", Value: 1}}}})
	require.NoError(t, err)
	_, err = exportTensorBoard(live)
	require.ErrorContains(t, err, filepath.Join(live, TensorBoardDir)+" holds TensorBoard events already")
	require.NoError(t, tfevents.RemoveFiles(filepath.Join(live, TensorBoardDir)))
	_, err = tfevents.WriteFile(filepath.Join(live, TensorBoardDir), time.Now(), logged[len(logged)-1:])
	require.NoError(t, err)
	_, err = exportTensorBoard(live)
	require.ErrorContains(t, err, "which lack step")

	dir := t.TempDir()
	metrics := `{"step":1,"search":{"reward":0.5},"loss":0.25,"step_seconds":10}` + "\n" +
		`{"step":2,"search":{"reward":0.75},"no_update":true,"loss":0,"step_seconds":20}` + "\n" +
		`{"step":3,"search":{"reward":1}` // torn: a run killed while writing it
	evals := `{"step":0,"points":[{"k":1,"pass_at_k":0.125,"majority_at_k":0.125}]}` + "\n" +
		`{"step":2,"points":[{"k":1,"pass_at_k":0.5,"majority_at_k":0.5}]}` + "\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, MetricsFile), []byte(metrics), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, EvalFile), []byte(evals), 0o644))
	x, err = exportTensorBoard(dir)
	require.NoError(t, err)
	require.Equal(t, 4, x.Events)
	require.Equal(t, []string{filepath.Join(dir, MetricsFile), filepath.Join(dir, EvalFile)}, x.Logs)
	require.Equal(t, []string{filepath.Join(dir, MetricsFile)}, x.Torn)
	st, err := os.Stat(filepath.Join(dir, MetricsFile))
	require.NoError(t, err)
	end := tfevents.WallTime(st.ModTime())
	b, err := os.ReadFile(x.Path)
	require.NoError(t, err)
	_, events, _, err := tfevents.Decode(b)
	require.NoError(t, err)
	require.Equal(t, []tfevents.Event{
		{Wall: end - 30, Step: 0, Scalars: []tfevents.Scalar{{Tag: "heldout/pass@1", Value: 0.125}}},
		{Wall: end - 20, Step: 1, Scalars: []tfevents.Scalar{{Tag: "search/reward", Value: 0.5}, {Tag: "loss", Value: 0.25}, {Tag: "step_seconds", Value: 10}}},
		{Wall: end, Step: 2, Scalars: []tfevents.Scalar{{Tag: "search/reward", Value: 0.75}, {Tag: "step_seconds", Value: 20}}},
		{Wall: end, Step: 2, Scalars: []tfevents.Scalar{{Tag: "heldout/pass@1", Value: 0.5}}},
	}, events)

	_, err = exportTensorBoard(t.TempDir())
	require.ErrorContains(t, err, "holds no metrics.jsonl (spiral train) or sft.jsonl (spiral sft)")

	// A log that is there but cannot be read (a symbolic link loop) was
	// said to be missing: the system's error is said instead.
	for _, name := range []string{MetricsFile, SFTLogFile} {
		loop := t.TempDir()
		require.NoError(t, os.Symlink(name, filepath.Join(loop, name)))
		_, err = exportTensorBoard(loop)
		require.ErrorContains(t, err, filepath.Join(loop, name)+": too many levels of symbolic links", name)
	}

	bad := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(bad, MetricsFile), []byte(`{"step":1,"search":{}}`+"\n"+`{"loss":1}`+"\n"), 0o644))
	_, err = exportTensorBoard(bad)
	require.ErrorContains(t, err, fmt.Sprintf(`%s:2: no training step ("step" = 0)`, filepath.Join(bad, MetricsFile)))
	require.NoDirExists(t, filepath.Join(bad, TensorBoardDir))

	// A log whose steps repeat (two runs' logs joined) was converted,
	// each repeated step's figures written twice.
	for _, tc := range []struct {
		name, metrics, evals, want string
	}{
		{"metrics", `{"step":1,"search":{}}` + "\n" + `{"step":2,"search":{}}` + "\n" + `{"step":2,"search":{}}` + "\n", "", MetricsFile + ":3: step 2 after step 2: want each step once, increasing, as train logs them"},
		{"evaluations", `{"step":1,"search":{}}` + "\n", `{"step":1,"points":[{"k":1,"pass_at_k":0.5}]}` + "\n" + `{"step":0,"points":[{"k":1,"pass_at_k":0.5}]}` + "\n",
			EvalFile + ":2: step 0 after step 1: want each step once, increasing, as train logs them"},
	} {
		t.Run("repeated steps in "+tc.name, func(t *testing.T) {
			dir := t.TempDir()
			require.NoError(t, os.WriteFile(filepath.Join(dir, MetricsFile), []byte(tc.metrics), 0o644))
			if tc.evals != "" {
				require.NoError(t, os.WriteFile(filepath.Join(dir, EvalFile), []byte(tc.evals), 0o644))
			}
			_, err := exportTensorBoard(dir)
			require.ErrorContains(t, err, filepath.Join(dir, tc.want))
			require.NoDirExists(t, filepath.Join(dir, TensorBoardDir))
		})
	}
}

// TestSFTTensorBoard: sft --tensorboard logs each line of sft.jsonl as an
// event, steps' and evaluations' (at 3 and 6), the events spiral
// tensorboard converts the log to; a rerun resumed from step 2 cuts the
// first file back to it and logs steps 3 to 6 once, in a new file.
func TestSFTTensorBoard(t *testing.T) {
	src := sftModelDir(t)
	dir := t.TempDir()
	h := newSFTHarness(t, src, dir)
	h.cfg.TensorBoard = true
	require.NoError(t, h.run(0))
	log := filepath.Join(dir, SFTLogFile+PartialSuffix)
	events, torn, err := sftEvents(log)
	require.NoError(t, err)
	require.Empty(t, torn)
	want := scalarsOf(events)
	require.Equal(t, want, tbScalars(t, dir))
	require.Len(t, want["loss"], 6)
	require.Len(t, want["eval_search_accuracy"], 2)
	require.Contains(t, want["eval_aggregate_accuracy"], int64(6))

	for _, s := range []int64{4, 6} {
		require.NoError(t, os.RemoveAll(filepath.Join(dir, CheckpointsDir, checkpoint.DirName(s))))
	}
	h = newSFTHarness(t, src, dir)
	h.cfg.TensorBoard = true
	require.NoError(t, h.run(0))
	require.Contains(t, h.out.String(), "(step 2)")
	eventFiles(t, dir, 2)
	events, _, err = sftEvents(log)
	require.NoError(t, err)
	require.Equal(t, scalarsOf(events), tbScalars(t, dir))
	require.Len(t, scalarsOf(events)["loss"], 6)
}

// FuzzMetricsEvent: any line gives an event or an error, never a panic,
// and an event's scalars are those of the line's numbers: as many as
// the line, decoded, has numbers outside its top-level step and, on a
// no_update step, its unmeasured figures (at an update skipped for a
// non-finite gradient norm, its rate of 0).
func FuzzMetricsEvent(f *testing.F) {
	metrics, _ := readRunSeeds(f)
	f.Add(firstLine(metrics))
	f.Add([]byte(`{"step":2,"search":{"traces":2},"no_update":true,"loss":0,"aggregate_rounds":[{"reward":1},{"reward":0.5}],"x":[1,[2]]}`))
	f.Add([]byte(`{"step":3,"grad_norm":null,"lr":0,"update_skipped":"gradient norm is +Inf","adv_mean":0.5}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		e, err := metricsEvent(line, 0)
		if err != nil {
			return
		}
		var m map[string]any
		require.NoError(t, json.Unmarshal(line, &m))
		delete(m, "step")
		decoded, _ := decodeMetrics(line)
		skip := unappliedRate(decoded.UpdateSkipped, decoded.LR)
		if decoded.NoUpdate {
			skip = unmeasured
		}
		for _, k := range skip {
			delete(m, k)
		}
		var count func(v any) int
		count = func(v any) int {
			switch v := v.(type) {
			case float64:
				return 1
			case map[string]any:
				n := 0
				for _, x := range v {
					n += count(x)
				}
				return n
			case []any:
				n := 0
				for _, x := range v {
					n += count(x)
				}
				return n
			}
			return 0
		}
		require.Equal(t, count(m), len(e.Scalars), "%s", line)
	})
}

// damagedTensorBoardRun trains a step of a run in dir with --tensorboard,
// then flips the last byte of its one event file (the last event, step
// 1's evaluation, whose checksum then fails), returning the files and the
// damaged file's bytes.
func damagedTensorBoardRun(t *testing.T, dir string) (files []string, damaged []byte) {
	t.Helper()
	h := newRunHarness(t, dir, 1)
	h.cfg.TensorBoard = true
	require.NoError(t, h.run(context.Background()))
	file, b := onlyEventFile(t, dir)
	b[len(b)-1] ^= 1
	require.NoError(t, os.WriteFile(file, b, 0o644))
	return []string{file}, b
}

// TestTensorBoardUnwritable: a TensorBoard log that cannot be written
// (here its directory's name taken by a file, which no permission lets
// root past) stops no training: train and sft warn once, naming the
// directory and the error, and run every step without events, their
// JSON logs complete.
func TestTensorBoardUnwritable(t *testing.T) {
	cases := []struct {
		name string
		run  func(t *testing.T, dir string) (warn string, log string, lines int)
	}{
		{"train", func(t *testing.T, dir string) (string, string, int) {
			h := newRunHarness(t, dir, 2)
			h.cfg.TensorBoard = true
			require.NoError(t, h.run(context.Background()))
			return h.log.String(), MetricsFile, 2
		}},
		{"sft", func(t *testing.T, dir string) (string, string, int) {
			h := newSFTHarness(t, sftModelDir(t), dir)
			h.cfg.TensorBoard = true
			require.NoError(t, h.run(0))
			return h.warn.String(), SFTLogFile + PartialSuffix, 8 // 6 steps, 2 evaluations
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			tb := filepath.Join(dir, TensorBoardDir)
			require.NoError(t, os.WriteFile(tb, []byte("not a directory"), 0o644))
			warn, log, lines := c.run(t, dir)
			require.Equal(t, "spiral: warning: --tensorboard: tfevents: open "+tb+": not a directory: the run goes on without TensorBoard events ("+
				log+" logs every step: once the run is done, run spiral tensorboard "+dir+" to add the steps the event files in "+tb+" lack)\n", warn)
			b, err := os.ReadFile(filepath.Join(dir, log))
			require.NoError(t, err)
			require.Len(t, slices.DeleteFunc(strings.Split(string(b), "\n"), func(s string) bool { return s == "" }), lines)
		})
	}
}

// TestTensorBoardLogWriteFails: an event the log cannot write (its file
// gone bad under it: here closed) ends the log with one warning naming
// the file and the error; later events and close write nothing and warn
// no more, and none of them is an error to the run.
func TestTensorBoardLogWriteFails(t *testing.T) {
	dir := t.TempDir()
	var warn strings.Builder
	l := openTensorBoardLog(dir, true, -1, filepath.Join(dir, MetricsFile), nil, &warn)
	require.Empty(t, warn.String())
	path := l.w.Path()
	require.NoError(t, l.w.Close())
	l.write(EvalLine{Step: 1, Points: []rollout.KPoint{{K: 1, PassAtK: 0.5}}}, evalEvent)
	require.Equal(t, "spiral: warning: --tensorboard: tfevents: write "+path+": file already closed: the run goes on without TensorBoard events (metrics.jsonl logs every step: once the run is done, run spiral tensorboard "+
		dir+" to add the steps the event files in "+filepath.Join(dir, TensorBoardDir)+" lack)\n", warn.String())
	l.write(EvalLine{Step: 2, Points: []rollout.KPoint{{K: 1, PassAtK: 0.5}}}, evalEvent)
	l.close()
	require.Equal(t, 1, strings.Count(warn.String(), "warning"))
}

// TestExportTensorBoardAfterTheLiveLogFailed: a run whose live log
// failed (tensorBoardLog.fail) went on without events, leaving an event
// file of the steps before the failure and, where a write failed within
// it, the failing step's event cut short (here a 3-step run's file cut
// within step 2's first record, as such a write leaves it). spiral
// tensorboard adds the steps the file lacks, beside it, so that the two
// hold every figure of the logs once; its warning had advised removing
// tensorboard/ first, which the conversion does not need. The warning
// says what the conversion does instead.
func TestExportTensorBoardAfterTheLiveLogFailed(t *testing.T) {
	dir := t.TempDir()
	h := newRunHarness(t, dir, 3)
	h.cfg.TensorBoard = true
	require.NoError(t, h.run(context.Background()))
	file, b := onlyEventFile(t, dir)
	// The first record of step 2, each record being its data's length
	// (8 bytes), their checksum (4), the data and its checksum (4).
	cut := -1
	for off := 0; off+12 <= len(b) && cut < 0; {
		end := off + 16 + int(binary.LittleEndian.Uint64(b[off:]))
		_, events, torn, err := tfevents.Decode(b[:end])
		require.NoError(t, err)
		require.False(t, torn)
		if len(events) > 0 && events[len(events)-1].Step == 2 {
			cut = off + 10 // within its length's checksum
		}
		off = end
	}
	require.Positive(t, cut, "a record of step 2")
	require.NoError(t, os.WriteFile(file, b[:cut], 0o644))
	_, held, torn, err := tfevents.Decode(b[:cut])
	require.NoError(t, err)
	require.True(t, torn)

	x, err := exportTensorBoard(dir)
	require.NoError(t, err)
	require.Equal(t, []string{file}, x.Beside)
	require.Equal(t, []int64{2, 3}, x.Lacked)
	added, err := os.ReadFile(x.Path)
	require.NoError(t, err)
	_, events, torn, err := tfevents.Decode(added)
	require.NoError(t, err)
	require.False(t, torn)
	logged, _, err := trainEvents(dir)
	require.NoError(t, err)
	all := slices.Concat(held, events)
	require.Equal(t, scalarsOf(logged), scalarsOf(all))
	n, m := 0, 0
	for _, e := range all {
		n += len(e.Scalars)
	}
	for _, e := range logged {
		m += len(e.Scalars)
	}
	require.Equal(t, m, n, "a scalar written twice")

	var warn strings.Builder
	(&tensorBoardLog{log: filepath.Join(dir, MetricsFile), dir: dir, warn: &warn}).fail(errors.New("write failed"))
	require.Equal(t, "spiral: warning: --tensorboard: write failed: the run goes on without TensorBoard events (metrics.jsonl logs every step: once the run is done, run spiral tensorboard "+
		dir+" to add the steps the event files in "+filepath.Join(dir, TensorBoardDir)+" lack)\n", warn.String())
}

// TestExportTensorBoardEmptyFiles: event files that hold no scalar event
// (only their file_version, or that cut short: a run with --tensorboard
// killed before its first step) hold nothing the conversion would
// double: they are removed, named in Removed, and the logs converted,
// rather than the run refused as holding events already; a file with one
// scalar event beside them that is not the logs' is still refused, and
// removes none.
func TestExportTensorBoardEmptyFiles(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, MetricsFile), []byte(`{"step":1,"loss":0.5,"step_seconds":2}`+"\n"), 0o644))
	tb := filepath.Join(dir, TensorBoardDir)
	header, err := tfevents.WriteFile(tb, time.Unix(1700000000, 0), nil)
	require.NoError(t, err)
	torn, err := tfevents.WriteFile(tb, time.Unix(1700000000, 0), nil)
	require.NoError(t, err)
	b, err := os.ReadFile(torn)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(torn, append(b, 0x2d, 0, 0, 0), 0o644)) // a record's length cut short

	full := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(full, MetricsFile), []byte(`{"step":1,"loss":0.5,"step_seconds":2}`+"\n"), 0o644))
	fullTB := filepath.Join(full, TensorBoardDir)
	fullHeader, err := tfevents.WriteFile(fullTB, time.Unix(1700000000, 0), nil)
	require.NoError(t, err)
	one, err := tfevents.WriteFile(fullTB, time.Unix(1700000000, 0), []tfevents.Event{{Step: 1, Scalars: []tfevents.Scalar{{Tag: "loss", Value: 0.25}}}})
	require.NoError(t, err)
	_, err = exportTensorBoard(full)
	require.ErrorContains(t, err, fullTB+" holds TensorBoard events already ("+filepath.Base(one)+",")
	require.FileExists(t, fullHeader)

	x, err := exportTensorBoard(dir)
	require.NoError(t, err)
	require.Equal(t, []string{header, torn}, x.Removed)
	files, err := tfevents.Files(tb)
	require.NoError(t, err)
	require.Equal(t, []string{x.Path}, files)
	require.Equal(t, map[string]map[int64]float32{"loss": {1: 0.5}, "step_seconds": {1: 2}}, tbScalars(t, dir))
}

// TestEventsLeaveOutUndefined: figures a log line writes as 0 where they
// are undefined are left out, as plot leaves out a step's unmeasured
// entropy, not drawn as zeros: a step that trained nothing (no_update)
// has no advantage statistics (no trained sample), and an update skipped
// for a non-finite gradient norm applied no rate (lr 0); an update
// skipped for an overflowing AdamW step keeps the rate it tried.
func TestEventsLeaveOutUndefined(t *testing.T) {
	noUpdate, err := json.Marshal(Metrics{Step: 2, Search: PhaseMetrics{Traces: 8}, ProblemsDrawn: 2, NoUpdate: true, StepSeconds: 1})
	require.NoError(t, err)
	normSkip, err := json.Marshal(Metrics{Step: 3, Examples: 4, AdvMean: 0.25, AdvStd: 0.5, AdvMin: -1, AdvMax: 1, Loss: math.NaN(), GradNorm: math.Inf(1), UpdateSkipped: "gradient norm is +Inf", StepSeconds: 1})
	require.NoError(t, err)
	adamSkip, err := json.Marshal(Metrics{Step: 4, Examples: 4, Loss: 0.5, GradNorm: 2, LR: 1e-5, UpdateSkipped: "optim: non-finite update", StepSeconds: 1})
	require.NoError(t, err)
	sftNormSkip, err := json.Marshal(SFTMetrics{Step: 3, Loss: 1, GradNorm: math.NaN(), UpdateSkipped: "gradient norm is NaN", Seconds: 1})
	require.NoError(t, err)
	sftAdamSkip, err := json.Marshal(SFTMetrics{Step: 4, Loss: 1, GradNorm: 2, LR: 1e-5, UpdateSkipped: "optim: non-finite update", Seconds: 1})
	require.NoError(t, err)
	for _, tc := range []struct {
		line    []byte
		event   func([]byte, float64) (tfevents.Event, error)
		absent  []string
		present []tfevents.Scalar
	}{
		{noUpdate, metricsEvent, []string{"adv_mean", "adv_std", "adv_min", "adv_max", "lr", "loss", "grad_norm"},
			[]tfevents.Scalar{{Tag: "examples", Value: 0}, {Tag: "informative_fraction", Value: 0}, {Tag: "step_seconds", Value: 1}}},
		{normSkip, metricsEvent, []string{"lr", "loss", "grad_norm"},
			[]tfevents.Scalar{{Tag: "adv_mean", Value: 0.25}, {Tag: "adv_std", Value: 0.5}, {Tag: "adv_min", Value: -1}, {Tag: "adv_max", Value: 1}}},
		{adamSkip, metricsEvent, nil, []tfevents.Scalar{{Tag: "lr", Value: 1e-5}, {Tag: "grad_norm", Value: 2}}},
		{sftNormSkip, sftEvent, []string{"lr", "grad_norm"}, []tfevents.Scalar{{Tag: "loss", Value: 1}}},
		{sftAdamSkip, sftEvent, nil, []tfevents.Scalar{{Tag: "lr", Value: 1e-5}, {Tag: "grad_norm", Value: 2}}},
	} {
		e, err := tc.event(tc.line, 0)
		require.NoError(t, err, "%s", tc.line)
		for _, s := range e.Scalars {
			require.NotContains(t, tc.absent, s.Tag, "%s", tc.line)
		}
		for _, s := range tc.present {
			require.Contains(t, e.Scalars, s, "%s", tc.line)
		}
	}
}

// finishedSFTRun is the directory of a finished sft run that logged to
// TensorBoard, committed as spiral sft commits it, for the --overwrite
// tests to start over in.
type finishedSFTRun struct {
	src, dir  string
	eventFile string // its one event file, in tensorboard/
	events    []byte // that file's bytes
}

// newFinishedSFTRun runs the sft harness's 6 steps with --tensorboard
// to their end in a new directory, and commits them (finish).
func newFinishedSFTRun(t *testing.T) finishedSFTRun {
	t.Helper()
	r := finishedSFTRun{src: sftModelDir(t), dir: t.TempDir()}
	require.NoError(t, r.harness(t).run(0))
	r.finish(t)
	r.eventFile, r.events = onlyEventFile(t, r.dir)
	return r
}

// harness is newSFTHarness in r's directory, with --tensorboard.
func (r finishedSFTRun) harness(t *testing.T) *sftHarness {
	t.Helper()
	h := newSFTHarness(t, r.src, r.dir)
	h.cfg.TensorBoard = true
	return h
}

// finish is what spiral sft does once the model is written: the log
// moved in, the checkpoints and the partial log removed.
func (r finishedSFTRun) finish(t *testing.T) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(r.dir, SFTLogFile+PartialSuffix))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(r.dir, SFTLogFile), b, 0o644))
	require.NoError(t, RemoveSFTCheckpoints(r.dir))
}

// eventFiles requires run directory dir's tensorboard/ to hold n event
// files and returns them (tfevents.Files).
func eventFiles(t *testing.T, dir string, n int) []string {
	t.Helper()
	files, err := tfevents.Files(filepath.Join(dir, TensorBoardDir))
	require.NoError(t, err)
	require.Len(t, files, n)
	return files
}

// onlyEventFile requires run directory dir's tensorboard/ to hold one
// event file and returns its path and bytes.
func onlyEventFile(t *testing.T, dir string) (string, []byte) {
	t.Helper()
	file := eventFiles(t, dir, 1)[0]
	b, err := os.ReadFile(file)
	require.NoError(t, err)
	return file, b
}

// TestSFTOverwriteKeepsFinishedEvents: an sft run that starts over in the
// directory of a finished one (spiral sft --overwrite), which replaces
// that run's model and sft.jsonl only at its end, keeps that run's event
// files until then: they are set aside in SFTFinishedTensorBoardDir,
// beside this run's tensorboard/, so that a run that fails (here
// interrupted after a step), or one started over again after it, leaves
// them as they were; the commit (RemoveSFTCheckpoints) removes them with
// the checkpoints.
func TestSFTOverwriteKeepsFinishedEvents(t *testing.T) {
	r := newFinishedSFTRun(t)
	dir := r.dir
	require.Len(t, tbScalars(t, dir)["loss"], 6)
	finishedFile := r.events
	setAside := filepath.Join(dir, SFTFinishedTensorBoardDir, filepath.Base(r.eventFile))

	// The overwrite fails after a step: the finished run's events are
	// kept, set aside, and this run's are in tensorboard/.
	h := r.harness(t)
	require.ErrorIs(t, h.run(1), context.Canceled)
	got, err := os.ReadFile(setAside)
	require.NoError(t, err, "the finished run's events")
	require.Equal(t, finishedFile, got)
	require.Equal(t, []int64{1}, slices.Sorted(maps.Keys(tbScalars(t, dir)["loss"])))

	// Started over again (its checkpoint lost): the set-aside events stay,
	// the failed run's go.
	require.NoError(t, os.RemoveAll(filepath.Join(dir, CheckpointsDir)))
	h = r.harness(t)
	require.ErrorIs(t, h.run(2), context.Canceled)
	got, err = os.ReadFile(setAside)
	require.NoError(t, err)
	require.Equal(t, finishedFile, got)
	require.Equal(t, []int64{1, 2}, slices.Sorted(maps.Keys(tbScalars(t, dir)["loss"])))

	// Resumed to its end and committed: the finished run's events go with
	// its model and log; tensorboard/ holds the new run's.
	h = r.harness(t)
	require.NoError(t, h.run(0))
	_, err = os.Stat(setAside)
	require.NoError(t, err, "kept until the commit")
	r.finish(t)
	require.NoDirExists(t, filepath.Join(dir, SFTFinishedTensorBoardDir))
	events, _, err := sftEvents(filepath.Join(dir, SFTLogFile))
	require.NoError(t, err)
	require.Equal(t, scalarsOf(events), tbScalars(t, dir))
	require.Len(t, scalarsOf(events)["loss"], 6)
}

// TestExportTensorBoardSFTLog: spiral tensorboard converts the log of the
// sft run that the same sft resumes, sft.jsonl.partial where one was
// stopped (beside the finished run an --overwrite replaces too), unless
// it logs no step: a stopped run without one starts over, cutting every
// event away, and the finished run's sft.jsonl is converted.
func TestExportTensorBoardSFTLog(t *testing.T) {
	step := `{"step":1,"loss":0.5,"seconds":2}` + "\n"
	for _, tc := range []struct {
		name              string
		finished, partial *string
		want              string // the log converted; "" an error
	}{
		{"finished", &step, nil, SFTLogFile},
		{"stopped", nil, &step, SFTLogFile + PartialSuffix},
		{"stopped overwrite", &step, &step, SFTLogFile + PartialSuffix},
		{"overwrite stopped before its first step", &step, new(string), SFTLogFile},
		{"stopped before its first step", nil, new(string), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, b := range map[string]*string{SFTLogFile: tc.finished, SFTLogFile + PartialSuffix: tc.partial} {
				if b != nil {
					require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(*b), 0o644))
				}
			}
			x, err := PrepareTensorBoard(dir)
			if tc.want == "" {
				require.EqualError(t, err, filepath.Join(dir, SFTLogFile+PartialSuffix)+" logs no step: nothing to convert")
				return
			}
			require.NoError(t, err)
			require.Equal(t, []string{filepath.Join(dir, tc.want)}, x.Logs)
			require.Len(t, x.events, 1)
		})
	}
}

// TestSFTLogWithoutPGLoss: an sft.jsonl step line has no pg_loss: the
// policy-gradient loss that SFTStep's graph minimises is -1 at every step
// by construction (advantage 1, ratio 1), which every line logged and
// TensorBoard drew as a flat curve. A log an older spiral wrote, its
// lines with "pg_loss":-1, still reads, beside this one's lines: a resume
// reads its resumed step's line, and spiral tensorboard converts its
// pg_loss as it did, so that the event files an older spiral converted
// from it are still found converted, not refused as other events.
func TestSFTLogWithoutPGLoss(t *testing.T) {
	line, err := json.Marshal(SFTMetrics{Step: 2, Loss: 0.25, PGLoss: -1, Entropy: 0.5, GradNorm: 1, LR: 1e-3, LossTokens: 8, TokensPerSecond: 8, Seconds: 1})
	require.NoError(t, err)
	require.NotContains(t, string(line), "pg_loss")
	require.Contains(t, string(line), `"loss":0.25`)

	dir := t.TempDir()
	path := filepath.Join(dir, SFTLogFile)
	older := `{"step":1,"lr":0.001,"loss_tokens":8,"tokens_per_second":8,"seconds":1,"loss":0.5,"pg_loss":-1,"entropy":0.5,"grad_norm":1}`
	require.NoError(t, os.WriteFile(path, []byte(older+"\n"), 0o644))
	x, err := PrepareTensorBoard(dir)
	require.NoError(t, err)
	require.Len(t, x.events, 1)
	require.Contains(t, x.events[0].Scalars, tfevents.Scalar{Tag: "pg_loss", Value: -1})
	require.NoError(t, x.Write())

	require.NoError(t, os.WriteFile(path, []byte(older+"\n"+string(line)+"\n"), 0o644))
	logged, err := readSFTLog(path, 2)
	require.NoError(t, err)
	require.Equal(t, 2, logged.steps)
	require.Equal(t, 0.25, logged.metrics.Loss)
	x, err = PrepareTensorBoard(dir)
	require.NoError(t, err, "the older line's events, pg_loss included, are those converted")
	require.Len(t, x.Beside, 1)
	require.Equal(t, []int64{2}, x.Lacked)
	for _, sc := range x.events[0].Scalars {
		require.NotEqual(t, "pg_loss", sc.Tag)
	}
}

// TestSFTOverwriteFreshKeepsFinishedEvents: --fresh in the directory of a
// finished sft run (spiral sft --overwrite --fresh) moves that run's
// tensorboard/ aside with the rest, to previous-*/, where TensorBoard
// shows it as the run before (README: "a --fresh run's predecessor as
// RUN/previous-*/tensorboard"), and where the commit leaves it: it was
// set aside as tensorboard-finished/ first, which left --fresh nothing
// to move, and removed at the commit, so the finished run's events were
// lost. Events an interrupted overwrite set aside go to previous-*/ too,
// beside that run's.
func TestSFTOverwriteFreshKeepsFinishedEvents(t *testing.T) {
	r := newFinishedSFTRun(t)
	dir, finishedFile := r.dir, r.events

	h := r.harness(t)
	h.cfg.Fresh = true
	var out strings.Builder
	h.parts.Out = &out
	require.NoError(t, h.run(0))
	r.finish(t)
	moved, err := filepath.Glob(filepath.Join(dir, "previous-*", TensorBoardDir, filepath.Base(r.eventFile)))
	require.NoError(t, err)
	require.Len(t, moved, 1, "the finished run's events in previous-*/")
	got, err := os.ReadFile(moved[0])
	require.NoError(t, err)
	require.Equal(t, finishedFile, got)
	require.Contains(t, out.String(), "--fresh: the previous run is in "+filepath.Dir(filepath.Dir(moved[0]))+"\n")
	require.NoDirExists(t, filepath.Join(dir, SFTFinishedTensorBoardDir))
	require.Len(t, tbScalars(t, dir)["loss"], 6, "this run's events in tensorboard/")

	// An overwrite interrupted after a step sets the (now finished) run's
	// events aside; --fresh then moves them to previous-*/ with the
	// interrupted run's, where the commit leaves them.
	before, finishedFile := onlyEventFile(t, dir)
	h = r.harness(t)
	require.ErrorIs(t, h.run(1), context.Canceled)
	require.FileExists(t, filepath.Join(dir, SFTFinishedTensorBoardDir, filepath.Base(before)))
	h = r.harness(t)
	h.cfg.Fresh = true
	out.Reset()
	h.parts.Out = &out
	require.NoError(t, h.run(0))
	r.finish(t)
	moved, err = filepath.Glob(filepath.Join(dir, "previous-*", SFTFinishedTensorBoardDir, filepath.Base(before)))
	require.NoError(t, err)
	require.Len(t, moved, 1, "the finished run's events set aside, in previous-*/")
	got, err = os.ReadFile(moved[0])
	require.NoError(t, err)
	require.Equal(t, finishedFile, got)
	prev := filepath.Dir(filepath.Dir(moved[0]))
	require.Contains(t, out.String(), "--fresh: the previous run is in "+prev+"\n")
	interrupted, err := tfevents.Files(filepath.Join(prev, TensorBoardDir))
	require.NoError(t, err)
	require.Len(t, interrupted, 1, "the interrupted run's events beside them")
	require.FileExists(t, filepath.Join(prev, SFTLogFile+PartialSuffix))
	require.NoDirExists(t, filepath.Join(dir, SFTFinishedTensorBoardDir))
}

// TestFinishedEventsRemovedWithLeftovers: the events of a finished sft
// run set aside by an --overwrite (SFTFinishedTensorBoardDir) go at its
// commit with the temporary files that a killed write of an event file
// left among them, however new (no writer writes there: the run's lock
// keeps them out), and the directory with them: it stayed, holding the
// leftover, and the next --overwrite, finding it there, did not set the
// run's events aside, and cut them away as it started.
func TestFinishedEventsRemovedWithLeftovers(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, SFTLogFile), []byte(`{"step":1,"loss":0.5,"seconds":1}`+"\n"), 0o644))
	tb, aside := filepath.Join(dir, TensorBoardDir), filepath.Join(dir, SFTFinishedTensorBoardDir)
	events := []tfevents.Event{{Step: 1, Scalars: []tfevents.Scalar{{Tag: "loss", Value: 0.5}}}}
	for _, leftover := range []string{".events.spiral.tmp-123", "..1700000000.host.spiral.partial.tmp-4", ".1700000000.host.spiral.partial"} {
		p, err := tfevents.WriteFile(tb, time.Now(), events)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(tb, leftover), []byte("partial"), 0o644))
		require.NoError(t, setAsideFinishedEvents(dir))
		require.FileExists(t, filepath.Join(aside, filepath.Base(p)), "set aside before %s", leftover)
		require.NoDirExists(t, tb)
		require.NoError(t, RemoveSFTCheckpoints(dir))
		require.NoDirExists(t, aside, "with %s", leftover)
	}
	// Another writer's file keeps the directory, and that file.
	_, err := tfevents.WriteFile(tb, time.Now(), events)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(tb, "notes.txt"), nil, 0o644))
	require.NoError(t, setAsideFinishedEvents(dir))
	require.NoError(t, RemoveSFTCheckpoints(dir))
	entries, err := os.ReadDir(aside)
	require.NoError(t, err)
	require.Len(t, entries, 1)
	require.Equal(t, "notes.txt", entries[0].Name())
}

// TestSetAsideBesideAnotherWritersFile: the events of a finished sft run
// are set aside by the next --overwrite when tensorboard-finished/ is
// there already, holding only a file of another writer that the commit
// of the overwrite before left (it removes spiral's files alone): they
// join it, and the overwrite's start, which cuts tensorboard/'s event
// files away, leaves them. The directory kept them from being set aside,
// and the overwrite deleted the finished run's events as it started.
func TestSetAsideBesideAnotherWritersFile(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, SFTLogFile), []byte(`{"step":1,"loss":0.5,"seconds":1}`+"\n"), 0o644))
	tb, aside := filepath.Join(dir, TensorBoardDir), filepath.Join(dir, SFTFinishedTensorBoardDir)
	events := []tfevents.Event{{Step: 1, Scalars: []tfevents.Scalar{{Tag: "loss", Value: 0.5}}}}
	_, err := tfevents.WriteFile(tb, time.Now(), events)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(tb, "notes.txt"), []byte("mine"), 0o644))
	require.NoError(t, setAsideFinishedEvents(dir))
	require.NoError(t, RemoveSFTCheckpoints(dir)) // the overwrite's commit
	require.FileExists(t, filepath.Join(aside, "notes.txt"))

	// The run the overwrite committed, finished, with its events.
	finished, err := tfevents.WriteFile(tb, time.Now().Add(time.Hour), events)
	require.NoError(t, err)
	want, err := os.ReadFile(finished)
	require.NoError(t, err)
	// The next --overwrite sets them aside, then starts over.
	require.NoError(t, setAsideFinishedEvents(dir))
	openTensorBoardLog(dir, false, -1, filepath.Join(dir, SFTLogFile+PartialSuffix), nil, io.Discard)
	got, err := os.ReadFile(filepath.Join(aside, filepath.Base(finished)))
	require.NoError(t, err, "the finished run's events, set aside")
	require.Equal(t, want, got)
	mine, err := os.ReadFile(filepath.Join(aside, "notes.txt"))
	require.NoError(t, err)
	require.Equal(t, "mine", string(mine))

	// An event file of that name there already is not replaced.
	again, err := tfevents.WriteFile(tb, time.Now().Add(2*time.Hour), events)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(aside, filepath.Base(again)), []byte("other"), 0o644))
	require.EqualError(t, setAsideFinishedEvents(dir), "rl: sft: set the finished run's TensorBoard events aside: "+
		filepath.Join(aside, filepath.Base(again))+" exists already: move it away to start the run over")
	require.FileExists(t, again)
}

// TestExportTensorBoardFinishedBesideStoppedOverwrite: spiral tensorboard
// in the --out of an sft --overwrite stopped before its first step
// converts the finished run's sft.jsonl into tensorboard-finished/, where
// that run's events are while the overwrite is pending: events the
// overwrite set aside there are its conversion already (left as they
// are, not written again into tensorboard/, where TensorBoard showed
// them twice), and a conversion written there outlives the resumed
// overwrite's start, which cuts tensorboard/'s event files away.
func TestExportTensorBoardFinishedBesideStoppedOverwrite(t *testing.T) {
	for _, setAside := range []bool{true, false} {
		t.Run(fmt.Sprint("set aside ", setAside), func(t *testing.T) {
			dir := t.TempDir()
			done := filepath.Join(dir, SFTLogFile)
			require.NoError(t, os.WriteFile(done, []byte(`{"step":1,"loss":0.5,"seconds":2}`+"\n"), 0o644))
			require.NoError(t, os.WriteFile(done+PartialSuffix, nil, 0o644))
			aside := filepath.Join(dir, SFTFinishedTensorBoardDir)
			var held string
			if setAside {
				events, _, err := sftEvents(done)
				require.NoError(t, err)
				held, err = tfevents.WriteFile(aside, time.Now(), events)
				require.NoError(t, err)
			}
			x, err := PrepareTensorBoard(dir)
			require.NoError(t, err)
			require.Equal(t, []string{done}, x.Logs)
			require.NoError(t, x.Write())
			if setAside {
				require.Equal(t, []string{held}, x.Converted)
			} else {
				require.Equal(t, aside, filepath.Dir(x.Path))
			}
			require.NoDirExists(t, filepath.Join(dir, TensorBoardDir))
			openTensorBoardLog(dir, false, -1, done+PartialSuffix, nil, io.Discard)
			files, err := tfevents.Files(aside)
			require.NoError(t, err)
			require.Len(t, files, 1)
		})
	}
}

// TestExportTensorBoardFinishedSetAside: spiral tensorboard in the --out
// of an sft --overwrite killed as it started, after it set the finished
// run's events aside (tensorboard-finished/) and before it made its
// sft.jsonl.partial, takes those events for the finished sft.jsonl's
// conversion and leaves them: it wrote them again into tensorboard/,
// where TensorBoard showed them beside the set-aside ones. Where nothing
// is set aside, or only another writer's file is, it converts into
// tensorboard/.
func TestExportTensorBoardFinishedSetAside(t *testing.T) {
	for _, tc := range []struct {
		name   string
		aside  func(t *testing.T, aside, done string) string // what tensorboard-finished/ holds; its event file
		wantTB string
	}{
		{"set aside", func(t *testing.T, aside, done string) string {
			events, _, err := sftEvents(done)
			require.NoError(t, err)
			p, err := tfevents.WriteFile(aside, time.Now(), events)
			require.NoError(t, err)
			return p
		}, SFTFinishedTensorBoardDir},
		{"another writer's file", func(t *testing.T, aside, done string) string {
			require.NoError(t, os.MkdirAll(aside, 0o777))
			require.NoError(t, os.WriteFile(filepath.Join(aside, "notes.txt"), nil, 0o644))
			return ""
		}, TensorBoardDir},
		{"nothing", func(t *testing.T, aside, done string) string { return "" }, TensorBoardDir},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			done := filepath.Join(dir, SFTLogFile)
			require.NoError(t, os.WriteFile(done, []byte(`{"step":1,"loss":0.5,"seconds":2}`+"\n"), 0o644))
			held := tc.aside(t, filepath.Join(dir, SFTFinishedTensorBoardDir), done)
			x, err := PrepareTensorBoard(dir)
			require.NoError(t, err)
			require.NoError(t, x.Write())
			if held != "" {
				require.Equal(t, []string{held}, x.Converted)
				require.NoDirExists(t, filepath.Join(dir, TensorBoardDir))
				return
			}
			require.Empty(t, x.Converted)
			require.Equal(t, filepath.Join(dir, tc.wantTB), filepath.Dir(x.Path))
		})
	}
}

// TestStepList: the steps a message names, runs of them as ranges.
func TestStepList(t *testing.T) {
	for _, tc := range []struct {
		steps []int64
		want  string
	}{
		{[]int64{2}, "step 2"},
		{[]int64{2, 3}, "steps 2-3"},
		{[]int64{0, 2, 3, 4, 7}, "steps 0, 2-4, 7"},
		{[]int64{1, 3}, "steps 1, 3"},
	} {
		require.Equal(t, tc.want, StepList(tc.steps), "%v", tc.steps)
	}
}
