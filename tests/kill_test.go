package tests

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/spiral-rl/spiral/rollout/report"
	"github.com/spiral-rl/spiral/rollout/report/tfevents"
)

// killAfter runs the binary with args and kills it (SIGKILL) delay after
// ready first holds (polled every 100 µs), or lets it end if it ends
// first; it fails the test when ready never holds within the given time.
// A process that ends well (exit 0) before ready is seen to hold is not
// killed: on a loaded machine a poll can come after a short-lived state
// (a stage's file, renamed away within a millisecond) has passed; one
// that fails then fails the test. It returns the process's stderr and
// whether it was killed.
func killAfter(t *testing.T, ready func() bool, delay, within time.Duration, args ...string) (string, bool) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	deadline := time.After(within)
	for !ready() {
		select {
		case <-done:
			require.Equal(t, 0, cmd.ProcessState.ExitCode(), "ended before it was to be killed: %s", stderr.String())
			return stderr.String(), false
		case <-deadline:
			_ = cmd.Process.Kill()
			<-done
			t.Fatalf("not ready to be killed within %v: %s", within, stderr.String())
		case <-time.After(100 * time.Microsecond):
		}
	}
	select {
	case <-done:
		return stderr.String(), false
	case <-time.After(delay):
	}
	// A process that ended meanwhile is signalled no more (it is waited).
	killed := cmd.Process.Signal(syscall.SIGKILL) == nil
	<-done
	killed = killed && cmd.ProcessState.ExitCode() == -1
	return stderr.String(), killed
}

// TestEvalKilledAtAnyPoint: eval --traces killed (SIGKILL) at points
// from the making of its outputs' stage on (plot, report, the traces
// linked from .partial, the commit's renames and the removal of the
// .partial) leaves --out with the earlier evaluation's report, plot and
// traces or the killed one's, all three, once the next evaluation in
// --out has finished a commit the kill cut short. The same command run
// again writes its own, and leaves no .partial traces (which may be, after
// a kill within the commit, the very file of the traces moved in).
func TestEvalKilledAtAnyPoint(t *testing.T) {
	requireRuntime(t)
	out := filepath.Join(t.TempDir(), "out")
	eval := func(limit int, mode string) []string {
		return []string{"eval", "--mode", mode, "--limit", strconv.Itoa(limit), "--samples", "2",
			"--max-new-tokens", "4", "--quiet", "--out", out, "--traces"}
	}
	problems := func() int {
		var rep report.PassAtK
		require.NoError(t, report.ReadJSON(filepath.Join(out, "passk.json"), &rep))
		require.Equal(t, 2*rep.Meta.Problems, countLines(t, filepath.Join(out, "passk.traces.jsonl")), "2 traces a problem")
		require.FileExists(t, filepath.Join(out, "passk.png"))
		return rep.Meta.Problems
	}
	// A stage the kill left before its commit began goes at the next
	// evaluation's stage (an empty one, killed as it was made, once it
	// is a minute old: atomicfile's abandonedAfter); none holds a commit.
	noCommit := func() {
		commits, err := filepath.Glob(filepath.Join(out, ".stage-*", ".commit"))
		require.NoError(t, err)
		require.Empty(t, commits)
	}
	r := spiral(t, nil, eval(2, "passk")...)
	require.Equal(t, 0, r.code, r.stderr)
	before, kills := 2, 0
	// Killed at points from the stage's making (the plot is written,
	// some 25 ms) and, closer, from the report's writing in the stage
	// (the traces linked, the commit: some 2 ms).
	type point struct {
		in    string
		delay time.Duration
	}
	var points []point
	for i := range 4 {
		points = append(points, point{"", time.Duration(i) * 8 * time.Millisecond})
	}
	for i := range 12 {
		points = append(points, point{"passk.json", time.Duration(i) * 250 * time.Microsecond})
	}
	for _, p := range points {
		want := 5 - before // 3 problems, then 2, then 3...
		// Stages an earlier kill left may be there still: this one's is new.
		pattern := filepath.Join(out, ".stage-*", p.in)
		left, err := filepath.Glob(pattern)
		require.NoError(t, err)
		ready := func() bool {
			m, _ := filepath.Glob(pattern)
			return slices.ContainsFunc(m, func(s string) bool { return !slices.Contains(left, s) })
		}
		stderr, killed := killAfter(t, ready, p.delay, time.Minute, eval(want, "passk")...)
		if killed {
			kills++
		}
		// Another mode's evaluation finishes the killed commit first.
		seq := eval(1, "sequential")
		r := spiral(t, nil, seq[:len(seq)-1]...) // without --traces
		require.Equal(t, 0, r.code, r.stderr)
		noCommit()
		got := problems()
		t.Logf("killed %v (%v) after the stage held %q: %d problems, of %d and %d", killed, p.delay, p.in, got, before, want)
		require.Contains(t, []int{before, want}, got, "killed %v after the stage held %q: %s", p.delay, p.in, stderr)
		r = spiral(t, nil, eval(want, "passk")...)
		require.Equal(t, 0, r.code, r.stderr)
		require.Equal(t, want, problems())
		require.NoFileExists(t, filepath.Join(out, "passk.traces.jsonl.partial"))
		noCommit()
		before = want
	}
	require.NotZero(t, kills, "no evaluation was killed")
}

// TestTensorBoardKilledAtAnyPoint: spiral tensorboard killed (SIGKILL)
// at points through its run (the run's lock, the logs read, the new event
// file written through its temporary file and renamed in, the event file
// without events that a --tensorboard run killed before its first step
// left removed) leaves the run's events once at most, in files that
// TensorBoard reads whole; the same command run again converts the logs,
// or leaves the events of the killed run's conversion with a note (it
// was refused as converted already, exit 1), and the run's steps are
// then in its events once each, in the only file there, named after the
// empty one if that was there when it was named (the empty file's name
// is an hour ahead of the clock, a clock behind the files'), and no
// temporary file of the killed write is left there (a kill within the
// write left one for good, ..<sec>.<host>.spiral.partial.tmp-N). The
// empty file
// was removed after the new file was written: a kill between the two
// left it for good, the rerun refused as converted already.
func TestTensorBoardKilledAtAnyPoint(t *testing.T) {
	requireRuntime(t)
	out := filepath.Join(t.TempDir(), "sft")
	r := spiral(t, nil, "sft", "--out", out, "--steps", "3", "--batch", "2", "--eval-problems", "2", "--threads", "1", "--quiet")
	require.Equal(t, 0, r.code, r.stderr)
	tb := filepath.Join(out, "tensorboard")
	kills := 0
	for i := range 60 {
		require.NoError(t, os.RemoveAll(tb))
		w, err := tfevents.Create(tb, time.Now().Add(time.Hour))
		require.NoError(t, err)
		require.NoError(t, w.Close())
		empty := filepath.Base(w.Path())
		delay := time.Duration(i) * 250 * time.Microsecond
		stderr, killed := killAfter(t, func() bool { return true }, delay, time.Minute, "tensorboard", out)
		if killed {
			kills++
		}
		require.LessOrEqual(t, eventSteps(t, tb, "loss")[3], 1, "killed %v in: %s", delay, stderr)
		_, err = os.Stat(filepath.Join(tb, empty))
		emptyLeft := err == nil
		// What the kill left is a minute old by the next run, as a
		// killed write's temporary file must be to count as abandoned
		// while it is empty (one holding bytes goes at once).
		hidden, err := filepath.Glob(filepath.Join(tb, ".*"))
		require.NoError(t, err)
		for _, h := range hidden {
			old := time.Now().Add(-2 * time.Minute)
			require.NoError(t, os.Chtimes(h, old, old))
		}
		r := spiral(t, nil, "tensorboard", out)
		require.Equal(t, 0, r.code, r.stderr)
		converted := strings.Contains(r.stderr, "spiral: note: "+tb+" holds the events of "+filepath.Join(out, "sft.jsonl")+" already")
		require.Equal(t, map[int64]int{1: 1, 2: 1, 3: 1}, eventSteps(t, tb, "loss"), "killed %v in: %s", delay, stderr)
		names, err := filepath.Glob(filepath.Join(tb, "*tfevents*"))
		require.NoError(t, err)
		require.Len(t, names, 1, "the new event file alone")
		hidden, err = filepath.Glob(filepath.Join(tb, ".*"))
		require.NoError(t, err)
		require.Empty(t, hidden, "the temporary files of a write killed %v in", delay)
		if emptyLeft || converted {
			// Named while the empty file was there.
			require.Greater(t, filepath.Base(names[0]), empty, "the new event file sorts after the empty one")
		}
	}
	require.NotZero(t, kills, "no conversion was killed")
}

// TestTensorBoardOfAnOverwriteStopped: spiral tensorboard in the --out of
// an sft --overwrite that was stopped (killed after its first checkpoint)
// converts the log of the run going on there, sft.jsonl.partial, which
// the same sft resumes: it converted the finished run's sft.jsonl, whose
// events the resumed run then cut back to its step and kept, beside its
// own after it, so that TensorBoard showed the replaced run's loss at the
// first steps of the run whose model and sft.jsonl are there.
func TestTensorBoardOfAnOverwriteStopped(t *testing.T) {
	requireRuntime(t)
	out := filepath.Join(t.TempDir(), "sft")
	args := []string{"sft", "--out", out, "--steps", "3", "--batch", "2", "--eval-problems", "2", "--threads", "1",
		"--checkpoint-every", "1", "--quiet"}
	r := spiral(t, nil, append(args, "--seed", "1")...)
	require.Equal(t, 0, r.code, r.stderr)
	args = append(args, "--seed", "2", "--overwrite")
	signalAtLine(t, syscall.SIGKILL, "checkpoint ", 5*time.Minute, args...)
	r = spiral(t, nil, "tensorboard", out)
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "from "+filepath.Join(out, "sft.jsonl.partial"))
	r = spiral(t, nil, append(args, "--tensorboard")...)
	require.Equal(t, 0, r.code, r.stderr)
	want := logScalars(t, out, "sft.jsonl")["loss"]
	require.Len(t, want, 3)
	got := map[int64]float32{}
	files, err := tfevents.Files(filepath.Join(out, "tensorboard"))
	require.NoError(t, err)
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		_, events, _, err := tfevents.Decode(b)
		require.NoError(t, err)
		for _, e := range events {
			for _, s := range e.Scalars {
				if s.Tag == "loss" {
					require.NotContains(t, got, e.Step, "step %d twice", e.Step)
					got[e.Step] = s.Value
				}
			}
		}
	}
	require.Equal(t, want, got, "the loss of sft.jsonl's steps in the events")
}

// TestExportKilledAtAnyPoint: export --format onnx --overwrite killed
// (SIGKILL) at points from the making of its stage beside --out on (the
// weights merged and checked, the graph and the files beside it written,
// the commit) leaves --out with the earlier export's model or the killed
// one's, whole; the same command run again at once writes its own and
// leaves no stage. A stage killed before its first file was written was
// empty, and taken for one made and not locked yet: it stayed, hidden in
// --out's directory, until some write there a minute on.
func TestExportKilledAtAnyPoint(t *testing.T) {
	requireRuntime(t)
	dir := t.TempDir()
	run := filepath.Join(dir, "run")
	ckpt := func(n int) string { return filepath.Join(run, "checkpoints", fmt.Sprintf("ckpt-%06d", n)) }
	stderr, killed := killAfter(t, func() bool { _, err := os.Stat(ckpt(2)); return err == nil }, 0, 5*time.Minute,
		"sft", "--out", run, "--steps", "100", "--batch", "2", "--eval-problems", "2", "--threads", "1", "--checkpoint-every", "1", "--quiet")
	require.True(t, killed, "ended before its second checkpoint: %s", stderr)
	export := func(n int, out string) []string {
		return []string{"export", "--checkpoint", ckpt(n), "--out", filepath.Join(out, "model.onnx"), "--overwrite"}
	}
	model := func(out string) string {
		b, err := os.ReadFile(filepath.Join(out, "model.onnx"))
		require.NoError(t, err)
		return string(b)
	}
	ref := filepath.Join(dir, "ref")
	r := spiral(t, nil, export(2, ref)...)
	require.Equal(t, 0, r.code, r.stderr)
	out := filepath.Join(dir, "out")
	r = spiral(t, nil, export(1, out)...)
	require.Equal(t, 0, r.code, r.stderr)
	earlier, want := model(out), model(ref)
	require.NotEqual(t, earlier, want)
	kills := 0
	// From 3 ms on: a stage killed within the moment between its making
	// and its mark (microseconds, more on a loaded machine) is left for
	// the minute as before.
	for _, delay := range []time.Duration{3 * time.Millisecond, 10 * time.Millisecond, 30 * time.Millisecond, 60 * time.Millisecond} {
		staged := func() bool {
			m, _ := filepath.Glob(filepath.Join(out, ".stage-*"))
			return len(m) > 0
		}
		stderr, killed := killAfter(t, staged, delay, time.Minute, export(2, out)...)
		if killed {
			kills++
		}
		require.Contains(t, []string{earlier, want}, model(out), "killed %v after its stage was made: %s", delay, stderr)
		r := spiral(t, nil, export(2, out)...)
		require.Equal(t, 0, r.code, r.stderr)
		require.Equal(t, want, model(out))
		requireNoStage(t, out)
		r = spiral(t, nil, export(1, out)...)
		require.Equal(t, 0, r.code, r.stderr)
	}
	require.NotZero(t, kills, "no export was killed")
}

// TestKilledWriteLeftoverGoesAtOnce: what a write killed (SIGKILL) after
// its first bytes left, its temporary file holding them, goes at the
// next write of the file however soon, where it stayed unless a minute
// old: a plot, spiral data synth's problems and a run's artifacts (an
// sft killed while it wrote them left artifacts/.program.json.tmp-N
// through its rerun, there being no later write of the name) kept it,
// hidden beside the file the rerun wrote. The temporary file is locked
// before its first byte, so one holding bytes that no process holds the
// lock of is a dead process's; an empty one, which may be made and not
// locked yet, waits the minute.
func TestKilledWriteLeftoverGoesAtOnce(t *testing.T) {
	out := filepath.Join(t.TempDir(), "problems.jsonl")
	written := filepath.Join(filepath.Dir(out), ".problems.jsonl.tmp-123")
	empty := filepath.Join(filepath.Dir(out), ".problems.jsonl.tmp-456")
	require.NoError(t, os.WriteFile(written, []byte(`{"id":"test-0","problem":"Solve x`), 0o600))
	require.NoError(t, os.WriteFile(empty, nil, 0o600))
	r := spiral(t, nil, "data", "synth", "--problems", "4", "--out", out)
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, 4, countLines(t, out))
	require.NoFileExists(t, written, "the killed write's temporary file, holding its first bytes")
	require.FileExists(t, empty, "an empty temporary file, which may be made and not locked yet")
}

// TestPlotKilledAtAnyPoint: spiral plot killed (SIGKILL) at points from
// the making of its temporary file on (the PNG encoded into it, synced,
// renamed over --out) leaves --out the earlier plot or the new one,
// whole; the same command run again at once writes its own and leaves
// no temporary file. The PNG is encoded into a buffer and written at
// the end, so a kill in the encoding left the temporary file empty,
// which was taken for one not locked yet and stayed, hidden beside the
// plot, until a write of that name a minute on.
func TestPlotKilledAtAnyPoint(t *testing.T) {
	requireRuntime(t)
	dir := t.TempDir()
	reports := map[int]string{}
	for _, seed := range []int{1, 2} {
		out := filepath.Join(dir, fmt.Sprint("eval", seed))
		r := spiral(t, nil, "eval", "--mode", "passk", "--limit", "2", "--samples", "2", "--max-new-tokens", "4",
			"--seed", strconv.Itoa(seed), "--quiet", "--out", out)
		require.Equal(t, 0, r.code, r.stderr)
		reports[seed] = filepath.Join(out, "passk.json")
	}
	plotOut := filepath.Join(dir, "plots", "p.png")
	plot := func(seeds ...int) []string {
		args := []string{"plot", "--out", plotOut}
		for _, s := range seeds {
			args = append(args, reports[s])
		}
		return args
	}
	read := func() string {
		b, err := os.ReadFile(plotOut)
		require.NoError(t, err)
		return string(b)
	}
	r := spiral(t, nil, plot(2)...)
	require.Equal(t, 0, r.code, r.stderr)
	earlier := read()
	r = spiral(t, nil, plot(1, 2)...)
	require.Equal(t, 0, r.code, r.stderr)
	want := read()
	require.NotEqual(t, earlier, want)
	kills := 0
	// From 3 ms on: a temporary file killed within the moment between
	// its making and its mark is left for the minute as before.
	for _, delay := range []time.Duration{3 * time.Millisecond, 5 * time.Millisecond, 15 * time.Millisecond, 30 * time.Millisecond} {
		r := spiral(t, nil, plot(2)...)
		require.Equal(t, 0, r.code, r.stderr)
		temporary := func() bool {
			m, _ := filepath.Glob(filepath.Join(filepath.Dir(plotOut), ".p.png.tmp-*"))
			return len(m) > 0
		}
		stderr, killed := killAfter(t, temporary, delay, time.Minute, plot(1, 2)...)
		if killed {
			kills++
		}
		require.Contains(t, []string{earlier, want}, read(), "killed %v after its temporary file was made: %s", delay, stderr)
		r = spiral(t, nil, plot(1, 2)...)
		require.Equal(t, 0, r.code, r.stderr)
		require.Equal(t, want, read())
		hidden, err := filepath.Glob(filepath.Join(filepath.Dir(plotOut), ".*"))
		require.NoError(t, err)
		require.Empty(t, hidden, "killed %v after its temporary file was made", delay)
	}
	require.NotZero(t, kills, "no plot was killed")
}
