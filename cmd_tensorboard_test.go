package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/spiral-rl/spiral/rl"
	"github.com/spiral-rl/spiral/rollout/report/tfevents"
)

// oneStepMetrics is a metrics.jsonl that logs one training step.
const oneStepMetrics = `{"step":1,"loss":0.5,"step_seconds":2}` + "\n"

// metricsRuns makes a run directory in dir for each of names, holding a
// metrics.jsonl of one step (oneStepMetrics), and returns their paths.
func metricsRuns(t *testing.T, dir string, names ...string) []string {
	t.Helper()
	var runs []string
	for _, name := range names {
		d := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(d, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(d, "metrics.jsonl"), []byte(oneStepMetrics), 0o644))
		runs = append(runs, d)
	}
	return runs
}

// TestTensorBoardRefusesAFileForItsDirectory: a run whose tensorboard
// (or sft's tensorboard-finished) is a plain file failed with Go's bare
// "tfevents: open RUN/tensorboard: not a directory" (exit 1), naming
// neither the file nor what was wanted. It is a usage error naming the
// file, before anything is written.
func TestTensorBoardRefusesAFileForItsDirectory(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ log, line, file string }{
		{"sft.jsonl", `{"step":1,"loss":0.5,"seconds":2}`, "tensorboard"},
		{"metrics.jsonl", `{"step":1,"loss":0.5,"step_seconds":2}`, "tensorboard"},
		{"sft.jsonl", `{"step":1,"loss":0.5,"seconds":2}`, "tensorboard-finished"},
	} {
		runDir := filepath.Join(dir, tc.log+"-"+tc.file)
		require.NoError(t, os.MkdirAll(runDir, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(runDir, tc.log), []byte(tc.line+"\n"), 0o644))
		file := filepath.Join(runDir, tc.file)
		require.NoError(t, os.WriteFile(file, []byte("notes"), 0o644))
		var stderr bytes.Buffer
		code := run(context.Background(), []string{"tensorboard", runDir}, &cliEnv{stdout: &bytes.Buffer{}, stderr: &stderr})
		require.Equal(t, exitUsage, code, stderr.String())
		require.Equal(t, "spiral tensorboard: "+file+" is a file: want the directory of the run's TensorBoard event files, which spiral tensorboard writes in; move the file away\n", stderr.String())
		b, err := os.ReadFile(file)
		require.NoError(t, err)
		require.Equal(t, "notes", string(b), "left as it was")
	}
}

// TestTensorBoardCommand: spiral tensorboard converts a run directory's
// logs, and refuses what is not one: no argument, a file or a directory
// given twice (usage errors, exit 2), a directory without a log, a bad
// line (naming the file and line) and a run whose events hold other
// figures than its logs' (exit 1), writing nothing then; a run converted
// already is left as it is, with a note.
func TestTensorBoardCommand(t *testing.T) {
	dir := t.TempDir()
	runDir := metricsRuns(t, dir, "run")[0]
	metrics := filepath.Join(runDir, "metrics.jsonl")
	bad := filepath.Join(dir, "bad")
	require.NoError(t, os.MkdirAll(bad, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(bad, "sft.jsonl"), []byte(`{"step":1,"loss":0.5}`+"\n"+`{"loss":0.4}`+"\n"), 0o644))
	empty := filepath.Join(dir, "empty")
	require.NoError(t, os.MkdirAll(empty, 0o755))

	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no run", nil, exitUsage, "spiral tensorboard: usage: spiral tensorboard RUN_DIR [RUN_DIR ...]"},
		{"a file", []string{metrics}, exitUsage, "spiral tensorboard: " + metrics + " is a file: want a training run's directory (the --out of spiral train or sft), such as " + runDir + "\n"},
		{"twice", []string{runDir, runDir + "/."}, exitUsage, "spiral tensorboard: " + runDir + " and " + runDir + "/. are one run directory, given twice: its events would be written twice\n"},
		{"empty", []string{runDir, ""}, exitUsage, "spiral tensorboard: an empty RUN_DIR argument (\"\"): want a training run's directory (the --out of spiral train or sft)\n"},
		{"absent", []string{filepath.Join(dir, "absent")}, exitUsage, "spiral tensorboard: RUN_DIR " + filepath.Join(dir, "absent") + " does not exist: want a training run's directory (the --out of spiral train or sft)\n"},
		{"no log", []string{empty}, exitFailure, "spiral tensorboard: " + empty + " holds no metrics.jsonl (spiral train) or sft.jsonl (spiral sft): want the directory of a training run (its --out)\n"},
		{"bad line", []string{bad}, exitFailure, "spiral tensorboard: rl: " + filepath.Join(bad, "sft.jsonl") + `:2: no "step" >= 1: want an sft step's or evaluation's line, as sft writes them` + "\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stderr bytes.Buffer
			code := run(context.Background(), append([]string{"tensorboard"}, tc.args...), &cliEnv{stdout: &bytes.Buffer{}, stderr: &stderr})
			require.Equal(t, tc.code, code, stderr.String())
			if tc.code == exitUsage && tc.args == nil {
				require.Contains(t, stderr.String(), tc.want)
			} else {
				require.Equal(t, tc.want, stderr.String())
			}
		})
	}
	for _, d := range []string{runDir, bad, empty} {
		require.NoDirExists(t, filepath.Join(d, "tensorboard"))
	}

	var stdout, stderr bytes.Buffer
	require.Zero(t, run(context.Background(), []string{"tensorboard", runDir}, &cliEnv{stdout: &stdout, stderr: &stderr}), stderr.String())
	files, err := filepath.Glob(filepath.Join(runDir, "tensorboard", "events.out.tfevents.*.spiral"))
	require.NoError(t, err)
	require.Len(t, files, 1)
	require.Equal(t, "wrote "+files[0]+" (1 event from "+metrics+")\n", stdout.String())

	// Run again: its events are there, each once; the run is left as it
	// is, with a note.
	stdout.Reset()
	stderr.Reset()
	require.Zero(t, run(context.Background(), []string{"tensorboard", runDir}, &cliEnv{stdout: &stdout, stderr: &stderr}), stderr.String())
	require.Empty(t, stdout.String())
	require.Equal(t, "spiral: note: "+filepath.Join(runDir, "tensorboard")+" holds the events of "+metrics+" already ("+filepath.Base(files[0])+"): left as it is\n", stderr.String())
	again, err := filepath.Glob(filepath.Join(runDir, "tensorboard", "events.out.tfevents.*.spiral"))
	require.NoError(t, err)
	require.Equal(t, files, again)

	// A log with steps past the events (the run went on without
	// --tensorboard) was refused, "remove tensorboard to convert the
	// logs again", not saying the steps were missing: the steps the
	// events lack are written, alone, in a new file after theirs.
	f, err := os.OpenFile(metrics, os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteString(`{"step":2,"loss":0.25,"step_seconds":2}` + "\n" + `{"step":3,"loss":0.125,"step_seconds":2}` + "\n")
	require.NoError(t, errors.Join(err, f.Close()))
	stdout.Reset()
	stderr.Reset()
	require.Zero(t, run(context.Background(), []string{"tensorboard", runDir}, &cliEnv{stdout: &stdout, stderr: &stderr}), stderr.String())
	both, err := tfevents.Files(filepath.Join(runDir, "tensorboard"))
	require.NoError(t, err)
	require.Len(t, both, 2)
	require.Equal(t, files[0], both[0])
	require.Equal(t, "wrote "+both[1]+" (2 events from "+metrics+": steps 2-3, which "+filepath.Base(files[0])+" lacks)\n", stdout.String())
	require.Empty(t, stderr.String())
	b, err := os.ReadFile(both[1])
	require.NoError(t, err)
	_, events, _, err := tfevents.Decode(b)
	require.NoError(t, err)
	require.Len(t, events, 2)
	require.Equal(t, []int64{2, 3}, []int64{events[0].Step, events[1].Step})
	stdout.Reset()
	require.Zero(t, run(context.Background(), []string{"tensorboard", runDir}, &cliEnv{stdout: &stdout, stderr: &stderr}), stderr.String())
	require.Empty(t, stdout.String())
	require.Equal(t, "spiral: note: "+filepath.Join(runDir, "tensorboard")+" holds the events of "+metrics+" already ("+filepath.Base(both[0])+", "+filepath.Base(both[1])+"): left as it is\n", stderr.String())

	// Steps the events lack before steps they hold are refused, named:
	// TensorBoard drops a curve's later steps when an earlier follows.
	require.NoError(t, os.Remove(both[1]))
	_, err = tfevents.WriteFile(filepath.Join(runDir, "tensorboard"), time.Now(), []tfevents.Event{{Step: 3, Scalars: []tfevents.Scalar{{Tag: "loss", Value: 0.125}, {Tag: "step_seconds", Value: 2}}}})
	require.NoError(t, err)
	held, err := tfevents.Files(filepath.Join(runDir, "tensorboard"))
	require.NoError(t, err)
	stdout.Reset()
	stderr.Reset()
	require.Equal(t, exitFailure, run(context.Background(), []string{"tensorboard", runDir}, &cliEnv{stdout: &stdout, stderr: &stderr}))
	require.Equal(t, "spiral tensorboard: "+filepath.Join(runDir, "tensorboard")+" holds TensorBoard events already ("+filepath.Base(held[0])+", written by --tensorboard or an earlier conversion), which lack step 2 of the logs, before steps of the same figures they hold (TensorBoard, reading them after those, would drop those): remove "+filepath.Join(runDir, "tensorboard")+" to convert the logs again\n", stderr.String())
}

// TestTensorBoardCommandRerunAfterAKill: spiral tensorboard A B stopped
// (killed) after it wrote A's events and before B's is run again: A,
// whose events are there, each once, is left with a note, and B
// converted; the rerun was refused as converted already for A, and B
// could not be converted with A given. Event files that hold other
// figures than the logs' (a step the events lack, a value that differs,
// a step twice) are refused still.
func TestTensorBoardCommandRerunAfterAKill(t *testing.T) {
	runs := metricsRuns(t, t.TempDir(), "a", "b")
	var stdout, stderr bytes.Buffer
	require.Zero(t, run(context.Background(), []string{"tensorboard", runs[0]}, &cliEnv{stdout: &stdout, stderr: &stderr}), stderr.String())
	a, err := tfevents.Files(filepath.Join(runs[0], "tensorboard"))
	require.NoError(t, err)
	require.Len(t, a, 1)

	stdout.Reset()
	require.Zero(t, run(context.Background(), append([]string{"tensorboard"}, runs...), &cliEnv{stdout: &stdout, stderr: &stderr}), stderr.String())
	b, err := tfevents.Files(filepath.Join(runs[1], "tensorboard"))
	require.NoError(t, err)
	require.Len(t, b, 1)
	require.Equal(t, "wrote "+b[0]+" (1 event from "+filepath.Join(runs[1], "metrics.jsonl")+")\n", stdout.String())
	require.Equal(t, "spiral: note: "+filepath.Join(runs[0], "tensorboard")+" holds the events of "+filepath.Join(runs[0], "metrics.jsonl")+" already ("+filepath.Base(a[0])+"): left as it is\n", stderr.String())
	again, err := tfevents.Files(filepath.Join(runs[0], "tensorboard"))
	require.NoError(t, err)
	require.Equal(t, a, again)

	for _, tc := range []struct {
		name   string
		events []tfevents.Event
	}{
		{"a step the log lacks", []tfevents.Event{{Step: 1, Scalars: []tfevents.Scalar{{Tag: "loss", Value: 0.5}, {Tag: "step_seconds", Value: 2}}}, {Step: 2, Scalars: []tfevents.Scalar{{Tag: "loss", Value: 0.5}}}}},
		{"another value", []tfevents.Event{{Step: 1, Scalars: []tfevents.Scalar{{Tag: "loss", Value: 0.25}, {Tag: "step_seconds", Value: 2}}}}},
		{"twice", []tfevents.Event{{Step: 1, Scalars: []tfevents.Scalar{{Tag: "loss", Value: 0.5}, {Tag: "step_seconds", Value: 2}}}, {Step: 1, Scalars: []tfevents.Scalar{{Tag: "loss", Value: 0.5}}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := metricsRuns(t, t.TempDir(), "run")[0]
			p, err := tfevents.WriteFile(filepath.Join(d, "tensorboard"), time.Now(), tc.events)
			require.NoError(t, err)
			var stdout, stderr bytes.Buffer
			require.Equal(t, exitFailure, run(context.Background(), []string{"tensorboard", d}, &cliEnv{stdout: &stdout, stderr: &stderr}))
			require.Contains(t, stderr.String(), "holds TensorBoard events already ("+filepath.Base(p)+",")
		})
	}
}

// TestTensorBoardCommandRefusesBeforeWriting: a run directory refused
// (no log, a bad line, converted already) stops the command before it
// writes any: the runs given before it are not converted, so that the
// same command, once the refused one is mended, converts them all rather
// than refusing the ones it converted the first time.
func TestTensorBoardCommandRefusesBeforeWriting(t *testing.T) {
	dir := t.TempDir()
	good := metricsRuns(t, dir, "good")[0]
	empty := filepath.Join(dir, "empty")
	require.NoError(t, os.MkdirAll(empty, 0o755))

	var stdout, stderr bytes.Buffer
	require.Equal(t, exitFailure, run(context.Background(), []string{"tensorboard", good, empty}, &cliEnv{stdout: &stdout, stderr: &stderr}))
	require.Equal(t, "spiral tensorboard: "+empty+" holds no metrics.jsonl (spiral train) or sft.jsonl (spiral sft): want the directory of a training run (its --out)\n", stderr.String())
	require.Empty(t, stdout.String())
	require.NoDirExists(t, filepath.Join(good, "tensorboard"))

	require.NoError(t, os.WriteFile(filepath.Join(empty, "sft.jsonl"), []byte(`{"step":1,"loss":0.5,"seconds":1}`+"\n"), 0o644))
	stdout.Reset()
	stderr.Reset()
	require.Zero(t, run(context.Background(), []string{"tensorboard", good, empty}, &cliEnv{stdout: &stdout, stderr: &stderr}), stderr.String())
	require.Equal(t, 2, strings.Count(stdout.String(), "wrote "), stdout.String())
}

// TestTensorBoardCommandLocksTheRun: spiral tensorboard takes the run
// directory's lock (the one train and sft hold while they run) for as
// long as it reads the logs and writes the events, so a training running
// in a directory given, which appends to the logs and may cut them and
// the event files back, refuses the command, naming the directory and
// the holder, before any run given is written; once it is done the same
// command converts them all and leaves no lock behind.
func TestTensorBoardCommandLocksTheRun(t *testing.T) {
	runs := metricsRuns(t, t.TempDir(), "idle", "training")
	unlock, err := rl.LockRun(runs[1])
	require.NoError(t, err)
	lock := filepath.Join(runs[1], rl.LockFile)

	var stdout, stderr bytes.Buffer
	require.Equal(t, exitFailure, run(context.Background(), append([]string{"tensorboard"}, runs...), &cliEnv{stdout: &stdout, stderr: &stderr}))
	require.Equal(t, fmt.Sprintf("spiral tensorboard: %s is in use by another spiral process (pid %d, lock file %s): a training writing its logs there; convert them once it is done (train and sft --tensorboard log as they run)\n", runs[1], os.Getpid(), lock), stderr.String())
	require.Empty(t, stdout.String())
	for _, d := range runs {
		require.NoDirExists(t, filepath.Join(d, "tensorboard"))
	}
	require.NoFileExists(t, filepath.Join(runs[0], rl.LockFile), "the lock of a run not converted is released")

	require.NoError(t, unlock())
	stderr.Reset()
	require.Zero(t, run(context.Background(), append([]string{"tensorboard"}, runs...), &cliEnv{stdout: &stdout, stderr: &stderr}), stderr.String())
	require.Equal(t, 2, strings.Count(stdout.String(), "wrote "), stdout.String())
	for _, d := range runs {
		require.NoFileExists(t, filepath.Join(d, rl.LockFile))
	}
}

// TestTensorBoardCommandEmptyEventFile: a run whose tensorboard/ holds
// only an event file without events (a run with --tensorboard killed
// before its first step) is converted, not refused as converted already:
// the empty file is removed, with a note naming it.
func TestTensorBoardCommandEmptyEventFile(t *testing.T) {
	runDir := metricsRuns(t, t.TempDir(), "run")[0]
	metrics := filepath.Join(runDir, "metrics.jsonl")
	empty, err := tfevents.WriteFile(filepath.Join(runDir, "tensorboard"), time.Now(), nil)
	require.NoError(t, err)

	var stdout, stderr bytes.Buffer
	require.Zero(t, run(context.Background(), []string{"tensorboard", runDir}, &cliEnv{stdout: &stdout, stderr: &stderr}), stderr.String())
	files, err := filepath.Glob(filepath.Join(runDir, "tensorboard", "events.out.tfevents.*.spiral"))
	require.NoError(t, err)
	require.Len(t, files, 1)
	require.NotEqual(t, empty, files[0])
	require.Equal(t, "wrote "+files[0]+" (1 event from "+metrics+")\n", stdout.String())
	require.Equal(t, "spiral: note: removed "+empty+": it held no event (a run with --tensorboard stopped before its first step)\n", stderr.String())
}

// TestTensorBoardCommandFinishesAKilledSFTCommit: spiral tensorboard in
// the --out of an sft --overwrite killed after its commit (sft.jsonl the
// very file of sft.jsonl.partial, the checkpoints, and the replaced run's
// events set aside in tensorboard-finished/, not removed yet) finishes
// the removal the killed run began, as the next sft there does, and
// converts the committed sft.jsonl: tensorboard-finished/, which
// TensorBoard shows as a run of its own, the replaced run's, stayed until
// the next sft into that --out.
func TestTensorBoardCommandFinishesAKilledSFTCommit(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, rl.SFTLogFile)
	require.NoError(t, os.WriteFile(log+rl.PartialSuffix, []byte(`{"step":1,"loss":0.5,"seconds":1}`+"\n"), 0o644))
	require.NoError(t, os.Link(log+rl.PartialSuffix, log))
	require.NoError(t, os.MkdirAll(filepath.Join(dir, rl.CheckpointsDir, "ckpt-000001"), 0o755))
	finished, err := tfevents.WriteFile(filepath.Join(dir, rl.SFTFinishedTensorBoardDir), time.Now(),
		[]tfevents.Event{{Step: 1, Scalars: []tfevents.Scalar{{Tag: "loss", Value: 0.75}}}})
	require.NoError(t, err)
	require.FileExists(t, finished)

	var stdout, stderr bytes.Buffer
	require.Zero(t, run(context.Background(), []string{"tensorboard", dir}, &cliEnv{stdout: &stdout, stderr: &stderr}), stderr.String())
	files, err := tfevents.Files(filepath.Join(dir, rl.TensorBoardDir))
	require.NoError(t, err)
	require.Len(t, files, 1)
	require.Equal(t, "wrote "+files[0]+" (1 event from "+log+")\n", stdout.String())
	require.Empty(t, stderr.String())
	require.NoDirExists(t, filepath.Join(dir, rl.SFTFinishedTensorBoardDir))
	require.NoDirExists(t, filepath.Join(dir, rl.CheckpointsDir))
	require.NoFileExists(t, log+rl.PartialSuffix)
	require.FileExists(t, log)
}
