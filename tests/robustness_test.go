package tests

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/spiral-rl/spiral/rollout/report"
)

// runAtOnce runs the binary once per argument list, all at once, in dir,
// and returns their results in the same order.
func runAtOnce(t *testing.T, dir string, args ...[]string) []result {
	t.Helper()
	res := make([]result, len(args))
	var wg sync.WaitGroup
	for i, a := range args {
		wg.Go(func() { res[i] = spiralIn(t, dir, nil, a...) })
	}
	wg.Wait()
	return res
}

// TestConcurrentEvalsOfTwoModels: two evaluations of different models
// (the embedded default and a smaller init-model) into one --out at
// once share its artifacts directory; each waits while the other
// prepares and reads it, rather than opening graphs the other wrote for
// its own model ("weight input ... not supplied").
func TestConcurrentEvalsOfTwoModels(t *testing.T) {
	requireRuntime(t)
	dir := t.TempDir()
	m := filepath.Join(dir, "init")
	r := spiral(t, nil, "init-model", "--out", m, "--layers", "1")
	require.Equal(t, 0, r.code, r.stderr)
	out := filepath.Join(dir, "eval")
	for _, r := range runAtOnce(t, dir,
		[]string{"eval", "--mode", "passk", "--limit", "4", "--samples", "2", "--out", out, "--quiet"},
		[]string{"eval", "--model", m, "--mode", "sequential", "--limit", "4", "--samples", "2", "--out", out, "--quiet"},
	) {
		require.Equal(t, 0, r.code, r.stderr)
	}
	require.FileExists(t, filepath.Join(out, "passk.json"))
	require.FileExists(t, filepath.Join(out, "sequential.json"))
}

// TestConcurrentEvalsOfOneMode: a second evaluation of the same mode into
// the --out where one is running is refused at once, naming the lock,
// rather than writing the same report, plot and traces files: the two
// shared one .partial traces file, and the one that committed it last
// failed after its report was written, beside the other's traces. The
// first finishes as if alone, and the lock does not outlive it.
func TestConcurrentEvalsOfOneMode(t *testing.T) {
	requireRuntime(t)
	dir := t.TempDir()
	out := filepath.Join(dir, "eval")
	args := []string{"eval", "--mode", "passk", "--limit", "64", "--samples", "16", "--out", out, "--traces", "--quiet"}
	first := exec.Command(binary, args...)
	first.Dir = dir
	var stderr strings.Builder
	first.Stderr = &stderr
	require.NoError(t, first.Start())
	partial := filepath.Join(out, "passk.traces.jsonl.partial")
	require.Eventually(t, func() bool { _, err := os.Stat(partial); return err == nil }, time.Minute, 5*time.Millisecond)
	r := spiralIn(t, dir, nil, append(args, "--seed", "2")...)
	require.NoError(t, first.Wait(), stderr.String())
	require.Equal(t, 1, r.code, r.stderr)
	require.Contains(t, r.stderr, "another spiral eval --mode passk is writing there (lock "+filepath.Join(out, ".passk.lock")+")")
	require.Equal(t, 64*16, countLines(t, filepath.Join(out, "passk.traces.jsonl")))
	r = spiralIn(t, dir, nil, "eval", "--mode", "passk", "--limit", "2", "--samples", "2", "--out", out, "--quiet")
	require.Equal(t, 0, r.code, r.stderr)
}

// TestEvalFailureLeavesNoReport: an evaluation whose plot or traces file
// cannot be written (here a directory stands at its name; a full disk
// does the same) fails naming it and leaves no report: the report is
// written last, so a report in --out always has its plot and traces
// beside it (scripts/study.sh takes a report as a finished evaluation).
func TestEvalFailureLeavesNoReport(t *testing.T) {
	requireRuntime(t)
	for _, blocked := range []string{"passk.png", "passk.traces.jsonl"} {
		t.Run(blocked, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "eval")
			require.NoError(t, os.MkdirAll(filepath.Join(out, blocked, "x"), 0o777))
			r := spiral(t, nil, "eval", "--mode", "passk", "--limit", "2", "--samples", "2", "--out", out, "--traces", "--quiet")
			require.Equal(t, 1, r.code, r.stderr)
			require.Contains(t, r.stderr, filepath.Join(out, blocked))
			require.NoFileExists(t, filepath.Join(out, "passk.json"))
		})
	}
}

// TestEvalFailureKeepsEarlierReport: an evaluation that fails while
// writing its outputs leaves the earlier evaluation's report, with its
// own traces beside it, not this run's: the outputs are written in a
// stage and moved in together, the report last. It removed the earlier
// report first, so a failure lost both reports: the earlier report (2
// problems x 2 samples, its traces 4 lines) was gone when this run's
// plot (3 x 2) could not be written, and this run's traces (6 lines)
// stood in its place.
func TestEvalFailureKeepsEarlierReport(t *testing.T) {
	requireRuntime(t)
	out := filepath.Join(t.TempDir(), "eval")
	r := spiral(t, nil, "eval", "--mode", "passk", "--limit", "2", "--samples", "2", "--out", out, "--traces", "--quiet")
	require.Equal(t, 0, r.code, r.stderr)
	plot := filepath.Join(out, "passk.png")
	require.NoError(t, os.Remove(plot))
	require.NoError(t, os.MkdirAll(filepath.Join(plot, "x"), 0o777))
	r = spiral(t, nil, "eval", "--mode", "passk", "--limit", "3", "--samples", "2", "--out", out, "--traces", "--quiet")
	require.Equal(t, 1, r.code, r.stderr)
	require.Contains(t, r.stderr, plot)
	var rep report.PassAtK
	require.NoError(t, report.ReadJSON(filepath.Join(out, "passk.json"), &rep), "the earlier report")
	require.Equal(t, 2, rep.Meta.Problems)
	require.Equal(t, 4, countLines(t, filepath.Join(out, "passk.traces.jsonl")), "the earlier report's traces")
}

// startSpiral starts the binary in dir with args, killed at the end of
// the test if it still runs, and returns it with its stderr.
func startSpiral(t *testing.T, dir string, args ...string) (*exec.Cmd, *strings.Builder) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Dir = dir
	var stderr strings.Builder
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return cmd, &stderr
}

// signalAtLine runs the binary with args, sends it sig once its stdout
// prints a line beginning with prefix, reads its output to the end and
// waits for it. It fails the test when the process ends without such a
// line or none comes within the given time (killing it), and returns the
// exited command and its stderr.
func signalAtLine(t *testing.T, sig os.Signal, prefix string, within time.Duration, args ...string) (*exec.Cmd, string) {
	t.Helper()
	return signalAfterLine(t, sig, prefix, 0, within, args...)
}

// signalAfterLine is signalAtLine sending sig delay after the line: a
// kill at points past the line, in what the process does next.
func signalAfterLine(t *testing.T, sig os.Signal, prefix string, delay, within time.Duration, args ...string) (*exec.Cmd, string) {
	t.Helper()
	return signalCmdAfterLine(t, exec.Command(binary, args...), sig, prefix, delay, within)
}

// signalCmdAfterLine is signalAfterLine running cmd, not yet started: the
// binary started by a wrapper (sh, to start it with a signal ignored).
func signalCmdAfterLine(t *testing.T, cmd *exec.Cmd, sig os.Signal, prefix string, delay, within time.Duration) (*exec.Cmd, string) {
	t.Helper()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	seen, read := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(read)
		sc := bufio.NewScanner(stdout)
		found := false
		for sc.Scan() {
			if !found && strings.HasPrefix(sc.Text(), prefix) {
				found = true
				close(seen)
			}
		}
	}()
	select {
	case <-seen:
	case <-read:
		select {
		case <-seen: // the line, then the end of stdout
		default:
			_ = cmd.Wait()
			t.Fatalf("ended without a line %q: %s", prefix, stderr.String())
		}
	case <-time.After(within):
		_ = cmd.Process.Kill()
		<-read
		_ = cmd.Wait()
		t.Fatalf("no line %q within %v: %s", prefix, within, stderr.String())
	}
	time.Sleep(delay)
	// A process that ended meanwhile is signalled no more.
	if err := cmd.Process.Signal(sig); err != nil {
		require.ErrorIs(t, err, os.ErrProcessDone)
	}
	<-read // Wait closes stdout: read it to the end first
	_ = cmd.Wait()
	return cmd, stderr.String()
}

// TestSecondTrainRefusedBeforeArtifacts: a second train into the --out
// of a running one is refused before it builds its graphs there: it
// rebuilt the running run's artifacts/ for its own settings (here LoRA)
// and loaded the model, and only then was refused by the run's lock.
func TestSecondTrainRefusedBeforeArtifacts(t *testing.T) {
	requireRuntime(t)
	dir := t.TempDir()
	run := filepath.Join(dir, "run")
	args := []string{"train", "--steps", "1000", "--problems", "1", "--eval-every", "0", "--final-rsa-steps", "0", "--out", run, "--quiet"}
	startSpiral(t, dir, args...)
	manifest := filepath.Join(run, "artifacts", "manifest.json")
	require.Eventually(t, func() bool {
		b, err := os.ReadFile(filepath.Join(run, "metrics.jsonl"))
		return err == nil && len(b) > 0
	}, 2*time.Minute, 10*time.Millisecond, "the first run trains")
	before, err := os.ReadFile(manifest)
	require.NoError(t, err)
	r := spiralIn(t, dir, nil, append(args, "--lora-rank", "4")...)
	require.Equal(t, 1, r.code, r.stderr)
	require.Contains(t, r.stderr, run+" is in use by another spiral process")
	after, err := os.ReadFile(manifest)
	require.NoError(t, err)
	require.True(t, bytes.Equal(before, after), "the running run's artifacts are left as they were; its manifest is now:\n%.300s", after)
}

// TestOtherSelectionRefusedBeforeArtifacts: a rerun into a run
// directory whose --freeze selects other parameters than its checkpoints
// hold is refused before the graphs are built there again: resuming
// refused it only after the artifacts had been rebuilt for the new
// selection (minutes, for a real model), leaving the run's own replaced.
func TestOtherSelectionRefusedBeforeArtifacts(t *testing.T) {
	requireRuntime(t)
	dir := t.TempDir()
	run := filepath.Join(dir, "run")
	args := []string{"train", "--steps", "1", "--problems", "1", "--eval-every", "0", "--final-rsa-steps", "0", "--out", run, "--quiet"}
	r := spiralIn(t, dir, nil, args...)
	require.Equal(t, 0, r.code, r.stderr)
	manifest := filepath.Join(run, "artifacts", "manifest.json")
	before, err := os.ReadFile(manifest)
	require.NoError(t, err)
	r = spiralIn(t, dir, nil, append(args, "--steps", "2", "--freeze", "norm")...)
	require.Equal(t, 2, r.code, r.stderr)
	require.Contains(t, r.stderr, run+` holds a run that trains other parameters (sampling.selection (--train, --freeze): train="" freeze="" -> train="" freeze="norm")`)
	after, err := os.ReadFile(manifest)
	require.NoError(t, err)
	require.True(t, bytes.Equal(before, after), "the run's artifacts are left as they were; its manifest is now:\n%.300s", after)
}

// TestConcurrentSFTRefused: a second sft into the --out of a running one
// is refused at once, as a second train is: the two shared the log's
// sft.jsonl.partial (the one finishing first committed a log holding the
// other's lines) and committed their models over each other's.
func TestConcurrentSFTRefused(t *testing.T) {
	requireRuntime(t)
	dir := t.TempDir()
	out := filepath.Join(dir, "sft")
	args := []string{"sft", "--out", out, "--steps", "1000", "--batch", "2", "--eval-every", "0", "--quiet"}
	startSpiral(t, dir, args...)
	require.Eventually(t, func() bool {
		b, err := os.ReadFile(filepath.Join(out, "sft.jsonl.partial"))
		return err == nil && len(b) > 0
	}, 2*time.Minute, 10*time.Millisecond, "the first sft trains")
	r := spiralIn(t, dir, nil, append(args, "--steps", "1")...)
	require.Equal(t, 1, r.code, r.stderr)
	require.Contains(t, r.stderr, out+" is in use by another spiral process")
	require.NoFileExists(t, filepath.Join(out, "model.onnx"))
}

// TestInterruptWhileWaitingForArtifacts: Ctrl-C or SIGTERM ends an eval
// that waits for its artifacts directory, which another process holds
// locked (here the test, by flock(2) on the directory, as spiral locks
// it), at once, as interrupted (130): the wait was a blocking flock that
// no signal ended, so that the first Ctrl-C only printed "stopping" and
// the eval went on waiting until the other process let go.
func TestInterruptWhileWaitingForArtifacts(t *testing.T) {
	requireRuntime(t)
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			out := t.TempDir()
			arts := filepath.Join(out, "artifacts")
			require.NoError(t, os.Mkdir(arts, 0o755))
			held, err := os.Open(arts)
			require.NoError(t, err)
			defer held.Close()
			require.NoError(t, syscall.Flock(int(held.Fd()), syscall.LOCK_EX|syscall.LOCK_NB))
			cmd := exec.Command(binary, "eval", "--out", out, "--limit", "2", "--samples", "1")
			stderr, err := cmd.StderrPipe()
			require.NoError(t, err)
			require.NoError(t, cmd.Start())
			var lines strings.Builder
			waiting, read := make(chan struct{}), make(chan struct{})
			go func() {
				defer close(read)
				sc := bufio.NewScanner(stderr)
				for sc.Scan() {
					lines.WriteString(sc.Text() + "\n")
					if strings.HasPrefix(sc.Text(), "spiral: waiting for "+arts) {
						close(waiting)
					}
				}
			}()
			select {
			case <-waiting:
			case <-read:
				_ = cmd.Wait()
				t.Fatalf("ended without waiting for %s: %s", arts, lines.String())
			case <-time.After(2 * time.Minute):
				_ = cmd.Process.Kill()
				<-read
				_ = cmd.Wait()
				t.Fatalf("no wait for %s within 2 minutes", arts)
			}
			require.NoError(t, cmd.Process.Signal(sig))
			select {
			case <-read:
			case <-time.After(10 * time.Second):
				_ = cmd.Process.Kill()
				<-read
				_ = cmd.Wait()
				t.Fatalf("still waiting 10 s after %v: %s", sig, lines.String())
			}
			_ = cmd.Wait()
			require.Equal(t, 130, cmd.ProcessState.ExitCode(), lines.String())
			require.True(t, strings.HasSuffix(lines.String(), "spiral eval: interrupted\n"), lines.String())
			_, err = os.Stat(filepath.Join(arts, "manifest.json"))
			require.ErrorIs(t, err, os.ErrNotExist, "nothing built in the held directory")
		})
	}
}

// TestInitModelKilledWhileMovingItsModelIn: init-model killed (SIGKILL,
// a second Ctrl-C) within the renames that move its model, config and
// tokenizer in from the stage left model.onnx in --out and the rest in
// the stage; the same command run again was refused ("already holds a
// model") before it made the stage that would finish that commit, so
// --out kept a model.onnx without config.json and tokenizer.json. The
// rerun finishes the commit first.
func TestInitModelKilledWhileMovingItsModelIn(t *testing.T) {
	out := filepath.Join(t.TempDir(), "m")
	args := []string{"init-model", "--out", out, "--layers", "1"}
	r := spiral(t, nil, args...)
	require.Equal(t, 0, r.code, r.stderr)
	moved := []string{"config.json", "tokenizer.json"}
	stage := filepath.Join(out, ".stage-123")
	require.NoError(t, os.Mkdir(stage, 0o755))
	for _, n := range moved {
		require.NoError(t, os.Rename(filepath.Join(out, n), filepath.Join(stage, n)))
	}
	require.NoError(t, os.WriteFile(filepath.Join(stage, ".commit"),
		[]byte(`{"move":["model.onnx","config.json","tokenizer.json"],"remove":["model.onnx_data"]}`), 0o644))
	r = spiral(t, nil, args...)
	require.Equal(t, 2, r.code, r.stderr)
	require.Contains(t, r.stderr, "already holds a model")
	for _, n := range moved {
		require.FileExists(t, filepath.Join(out, n))
	}
	require.NoDirExists(t, stage)
}

// TestInitModelCtrlCWhileWriting: Ctrl-C while init-model writes its
// model file (a single write of the whole graph, past the last weight
// drawn) said "stopping" and then moved the model in anyway, exiting 0;
// README says Ctrl-C leaves --out as it was. It is now checked before
// the commit: exit 130, and --out holds no model.
func TestInitModelCtrlCWhileWriting(t *testing.T) {
	out := filepath.Join(t.TempDir(), "m")
	cmd := exec.Command(binary, "init-model", "--out", out, "--layers", "8", "--hidden", "512", "--intermediate", "1536")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	// The model's temporary file in the stage appears as its write begins.
	require.Eventually(t, func() bool {
		tmp, _ := filepath.Glob(filepath.Join(out, ".stage-*", ".model.onnx.tmp-*"))
		return len(tmp) > 0
	}, time.Minute, time.Millisecond)
	require.NoError(t, cmd.Process.Signal(os.Interrupt))
	err := cmd.Wait()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit, stderr.String())
	require.Equal(t, 130, exit.ExitCode(), stderr.String())
	require.NoFileExists(t, filepath.Join(out, "model.onnx"))
}

// TestInitModelKilledWhileWritingRerunAtOnce: init-model killed
// (SIGKILL) while it writes its model in its stage, and run again at
// once, leaves --out with the model and no stage: the killed one's,
// holding part of a model, is unlocked, and goes at the rerun's stage.
// It was kept while under a minute old (for a stage made and not yet
// locked), and the rerun, done within the minute, left it for good.
func TestInitModelKilledWhileWritingRerunAtOnce(t *testing.T) {
	out := filepath.Join(t.TempDir(), "m")
	args := []string{"init-model", "--out", out, "--layers", "8", "--hidden", "512", "--intermediate", "1536"}
	stderr, killed := killAfter(t, func() bool {
		tmp, _ := filepath.Glob(filepath.Join(out, ".stage-*", ".model.onnx.tmp-*"))
		return len(tmp) > 0
	}, 0, time.Minute, args...)
	require.True(t, killed, "ended before it was killed: %s", stderr)
	left, err := filepath.Glob(filepath.Join(out, ".stage-*"))
	require.NoError(t, err)
	require.Len(t, left, 1, "the killed run's stage")
	r := spiral(t, nil, args...)
	require.Equal(t, 0, r.code, r.stderr)
	require.FileExists(t, filepath.Join(out, "model.onnx"))
	stages, err := filepath.Glob(filepath.Join(out, ".stage-*"))
	require.NoError(t, err)
	require.Empty(t, stages)
}

// TestEvalKilledWithinItsCommit: an evaluation killed (SIGKILL, a second
// Ctrl-C) between the renames that move its plot, traces and report in
// left its traces beside the earlier report (passk.json of 2 problems
// beside 6 trace lines of 3). The next evaluation in --out, of any mode,
// finishes that commit first: the report, plot and traces are then the
// killed evaluation's, all three.
func TestEvalKilledWithinItsCommit(t *testing.T) {
	requireRuntime(t)
	dir := t.TempDir()
	eval := func(out string, limit string, mode string) {
		r := spiral(t, nil, "eval", "--mode", mode, "--limit", limit, "--samples", "2", "--max-new-tokens", "8", "--traces", "--quiet", "--out", out)
		require.Equal(t, 0, r.code, r.stderr)
	}
	newer, out := filepath.Join(dir, "new"), filepath.Join(dir, "out")
	eval(newer, "3", "passk")
	eval(out, "2", "passk")
	// What the kill left: plot and traces moved in, the report still in
	// the stage beside the commit's record.
	stage := filepath.Join(out, ".stage-123")
	require.NoError(t, os.Mkdir(stage, 0o755))
	for _, f := range []struct{ name, to string }{{"passk.png", out}, {"passk.traces.jsonl", out}, {"passk.json", stage}} {
		b, err := os.ReadFile(filepath.Join(newer, f.name))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(f.to, f.name), b, 0o644))
	}
	require.NoError(t, os.WriteFile(filepath.Join(stage, ".commit"),
		[]byte(`{"move":["passk.png","passk.traces.jsonl","passk.json"],"remove":[]}`), 0o644))
	eval(out, "2", "sequential")
	var rep report.PassAtK
	require.NoError(t, report.ReadJSON(filepath.Join(out, "passk.json"), &rep))
	require.Equal(t, 3, rep.Meta.Problems)
	require.Equal(t, 6, countLines(t, filepath.Join(out, "passk.traces.jsonl")))
	require.NoDirExists(t, stage)
}
