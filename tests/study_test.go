package tests

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/spiral-rl/spiral/model/flock"
)

// studyKnobs are scripts/study.sh's settings, taken from the environment.
var studyKnobs = []string{"OUT", "STEPS", "SEEDS", "ALGOS", "PROBLEMS", "EVALN", "PASSK_SAMPLES", "JOBS", "LOCK_WAIT"}

// studyScript returns bash's path and scripts/study.sh's, skipping the
// test where there is no bash.
func studyScript(t *testing.T) (bash, script string) {
	t.Helper()
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	script, err = filepath.Abs(filepath.Join("..", "scripts", "study.sh"))
	require.NoError(t, err)
	return bash, script
}

// studyEnv is knobs, study.sh settings such as "OUT=dir" (of one set
// twice, the last counts), then this process's environment less its
// study.sh settings, so that knobs alone set them.
func studyEnv(knobs ...string) []string {
	env := slices.Clone(knobs)
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); !slices.Contains(studyKnobs, k) {
			env = append(env, kv)
		}
	}
	return env
}

// studyCmd runs script with bash in dir under env, in a process group of
// its own, which is killed whole when ctx is done.
func studyCmd(ctx context.Context, bash, script, dir string, env []string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, bash, script)
	cmd.Dir = dir
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	return cmd
}

// TestStudyRefusals runs scripts/study.sh (make study) with bad knobs: each
// is refused, named with its value and what it wants, with exit 2, before
// anything is built or run (OUT is not created). A refusal that does not
// happen would start a study, so each run has a short deadline and is
// killed with its process group.
func TestStudyRefusals(t *testing.T) {
	bash, script := studyScript(t)
	tmp := t.TempDir()
	file := filepath.Join(tmp, "file")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	others := filepath.Join(tmp, "checkout")
	kept := filepath.Join(others, "runs", "spiral", "metrics.jsonl")
	require.NoError(t, os.MkdirAll(filepath.Dir(kept), 0o755))
	require.NoError(t, os.WriteFile(kept, []byte("{}\n"), 0o644))
	// JOBS reached bash's arithmetic unchecked, which runs the command
	// substitution in the index of a set variable's name.
	pwned := filepath.Join(tmp, "pwned")
	inject := "JOBS=STEPS[$(touch " + pwned + ")]"
	cases := []struct {
		env  []string
		want string
	}{
		{[]string{"JOBS=abc"}, "study: JOBS=abc: want a whole number >= 1"},
		{[]string{"JOBS=0"}, "study: JOBS=0: want a whole number >= 1"},
		{[]string{"JOBS=08"}, "study: JOBS=08: want a whole number >= 1"},
		{[]string{inject}, "study: " + inject + ": want a whole number >= 1"},
		{[]string{"JOBS=99999999999999999999"}, "study: JOBS=99999999999999999999: want a whole number of at most 9 digits"},
		{[]string{"EVALN=0"}, "study: EVALN=0: want a whole number >= 1"},
		{[]string{"EVALN=-1"}, "study: EVALN=-1: want a whole number >= 1"},
		{[]string{"EVALN="}, "study: EVALN=: want a whole number >= 1"},
		{[]string{"STEPS=0"}, "study: STEPS=0: want a whole number >= 1"},
		{[]string{"STEPS=1.5"}, "study: STEPS=1.5: want a whole number >= 1"},
		{[]string{"PROBLEMS= 8"}, "study: PROBLEMS= 8: want a whole number >= 1"},
		{[]string{"PASSK_SAMPLES=many"}, "study: PASSK_SAMPLES=many: want a whole number >= 1"},
		{[]string{"LOCK_WAIT=0"}, "study: LOCK_WAIT=0: want a whole number >= 1"},
		{[]string{"LOCK_WAIT=1s"}, "study: LOCK_WAIT=1s: want a whole number >= 1"},
		{[]string{"SEEDS="}, "study: SEEDS=: want one or more seeds"},
		{[]string{"SEEDS= "}, "study: SEEDS= : want one or more seeds"},
		{[]string{"SEEDS=1 x"}, "study: SEEDS=1 x: want whole numbers >= 1 (x is not)"},
		{[]string{"SEEDS=0 1"}, "study: SEEDS=0 1: want whole numbers >= 1 (0 is not)"},
		{[]string{"SEEDS=*"}, "study: SEEDS=*: want whole numbers >= 1 (* is not)"},
		{[]string{"SEEDS=1 2 1"}, "study: SEEDS=1 2 1: want distinct seeds"},
		{[]string{"ALGOS=bogus"}, "study: ALGOS=bogus: want spiral, grpo, agg-only, search-only, spiral-2r or spiral-own (bogus is not)"},
		{[]string{"ALGOS=grpo base"}, "study: ALGOS=grpo base: want spiral, grpo, agg-only, search-only, spiral-2r or spiral-own (base is not)"},
		{[]string{"ALGOS="}, "study: ALGOS=: want one or more algorithms"},
		{[]string{"ALGOS=grpo spiral grpo"}, "study: ALGOS=grpo spiral grpo: want each algorithm once"},
		{[]string{"OUT="}, "study: OUT=: want a directory"},
		{[]string{"OUT=" + file}, "study: OUT=" + file + ": want a directory (it exists and is not one)"},
		// Not a study's directory: starting over would remove its runs/.
		{[]string{"OUT=" + others}, "study: OUT=" + others + ": want a study's directory or a new one (it holds runs/ but no study.stamp)"},
		// The first bad knob is named even where a later one is fine.
		{[]string{"STEPS=1", "ALGOS=grpo", "SEEDS=1", "EVALN=0"}, "study: EVALN=0: want a whole number >= 1"},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.env, ","), func(t *testing.T) {
			dir := t.TempDir()
			out := filepath.Join(dir, "study")
			env := studyEnv(append([]string{"OUT=" + out}, c.env...)...) // after OUT: the last one counts
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cmd := studyCmd(ctx, bash, script, dir, env)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			require.NoFileExists(t, pwned, "JOBS ran as arithmetic")
			require.NoError(t, ctx.Err(), "not refused: the study started (stderr %q)", stderr.String())
			var ee *exec.ExitError
			require.True(t, errors.As(err, &ee), "want exit 2, got %v (stderr %q)", err, stderr.String())
			require.Equal(t, 2, ee.ExitCode(), stderr.String())
			require.Equal(t, c.want+"\n", stderr.String())
			require.Empty(t, stdout.String())
			require.NoDirExists(t, out, "nothing is made before the knobs are checked")
			require.FileExists(t, kept, "another directory's runs/ is left alone")
		})
	}
}

// TestStudyStopTakesItsJobs: a study stopped by SIGTERM (kill, timeout, a
// job scheduler) stops the trainings and evaluations it runs. Killing
// each job's subshell alone left its spiral train running on, so a rerun
// found it holding the run directory and failed. The study runs in a
// process group of its own; only the script is signalled, and its
// training must let go of its run directory soon after it exits.
func TestStudyStopTakesItsJobs(t *testing.T) {
	requireRuntime(t)
	bash, script := studyScript(t)
	dir := t.TempDir()
	out := filepath.Join(dir, "study")
	env := studyEnv("OUT="+out, "STEPS=200", "SEEDS=1", "ALGOS=grpo", "PROBLEMS=4", "EVALN=2", "PASSK_SAMPLES=2", "JOBS=2")
	cmd := studyCmd(context.Background(), bash, script, dir, env)
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = io.Discard, &stderr
	require.NoError(t, cmd.Start())
	pgid := cmd.Process.Pid
	t.Cleanup(func() { _ = syscall.Kill(-pgid, syscall.SIGKILL) })
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	// The trainer is running once it holds its run directory's lock.
	lock := filepath.Join(out, "runs", "grpo-s1", ".lock")
	deadline := time.Now().Add(3 * time.Minute)
	for {
		if _, err := os.Stat(lock); err == nil {
			break
		}
		select {
		case err := <-exited:
			t.Fatalf("the study ended before its training started: %v (stderr %q)", err, stderr.String())
		case <-time.After(100 * time.Millisecond):
		}
		require.True(t, time.Now().Before(deadline), "no training started (stderr %q)", stderr.String())
	}
	// Opened now: the trainer removes it when it ends.
	f, err := os.Open(lock)
	require.NoError(t, err)
	defer f.Close()
	time.Sleep(time.Second)
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	select {
	case <-exited:
	case <-time.After(30 * time.Second):
		t.Fatalf("the study did not stop on SIGTERM (stderr %q)", stderr.String())
	}
	// Its training stops too (spiral train saves a checkpoint on
	// SIGTERM), releasing its run directory's lock for a rerun.
	deadline = time.Now().Add(30 * time.Second)
	for {
		ok, err := flock.TryLock(f)
		require.NoError(t, err)
		if ok {
			break
		}
		require.True(t, time.Now().Before(deadline), "the study's spiral train runs on after it stopped (stderr %q)", stderr.String())
		time.Sleep(100 * time.Millisecond)
	}
}

// TestStudyRefusesASecondStudy: a study started in an OUT where another
// study is running (it holds OUT/.study.lock) is refused with exit 1
// before it changes anything there. Unlocked, the second study removed
// the first's results when its settings differed, and otherwise
// truncated the first's job logs, removed its failure markers and made
// both fail on each other's training and evaluation locks. It waits
// LOCK_WAIT seconds (1 here; 15 by default) for the first to stop.
func TestStudyRefusesASecondStudy(t *testing.T) {
	bash, script := studyScript(t)
	if _, err := exec.LookPath("flock"); err != nil {
		t.Skip("no flock")
	}
	dir := t.TempDir()
	out := filepath.Join(dir, "study")
	// The running study's: other settings than the second's, which would
	// start over, and a training run's file.
	stamp := filepath.Join(out, "study.stamp")
	kept := filepath.Join(out, "runs", "grpo-s1", "metrics.jsonl")
	require.NoError(t, os.MkdirAll(filepath.Dir(kept), 0o755))
	require.NoError(t, os.WriteFile(stamp, []byte("steps=50 seeds=1 algos=grpo\n"), 0o644))
	require.NoError(t, os.WriteFile(kept, []byte("{}\n"), 0o644))
	lock, err := os.OpenFile(filepath.Join(out, ".study.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	require.NoError(t, err)
	defer lock.Close()
	ok, err := flock.TryLock(lock)
	require.NoError(t, err)
	require.True(t, ok)

	env := studyEnv("OUT="+out, "STEPS=1", "SEEDS=1", "ALGOS=grpo", "PROBLEMS=1", "EVALN=1", "PASSK_SAMPLES=1", "JOBS=1", "LOCK_WAIT=1")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := studyCmd(ctx, bash, script, dir, env)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err = cmd.Run()
	waited := time.Since(start)
	require.NoError(t, ctx.Err(), "not refused: the second study ran (stderr %q)", stderr.String())
	var ee *exec.ExitError
	require.True(t, errors.As(err, &ee), "want exit 1, got %v (stderr %q)", err, stderr.String())
	require.Equal(t, 1, ee.ExitCode(), stderr.String())
	require.Equal(t, "study: "+out+": another study is running there (it holds "+filepath.Join(out, ".study.lock")+
		", as a stopped study's jobs do until they have saved their work): wait for it, or give another OUT\n", stderr.String())
	require.Empty(t, stdout.String())
	require.FileExists(t, kept, "the running study's runs/ is left alone")
	b, err := os.ReadFile(stamp)
	require.NoError(t, err)
	require.Equal(t, "steps=50 seeds=1 algos=grpo\n", string(b), "the running study's stamp is left alone")
	require.NoDirExists(t, filepath.Join(out, "logs"))
	require.GreaterOrEqual(t, waited, time.Second, "refused after waiting LOCK_WAIT=1 s for the running study")
	require.Less(t, waited, 15*time.Second, "the wait is LOCK_WAIT's, not the default 15 s")
}

// TestStudyFlagsAnEarlierCheckpoint: a study evaluates each run through
// eval --checkpoint RUN/checkpoints, which skips a damaged last
// checkpoint for the newest that loads with a warning in the job's log
// alone (and a rerun, whose evaluations are kept, truncates that log):
// the study's figures were of an earlier step without a word in its
// report. The report (compare.txt, summary.md) and stderr now name the
// checkpoint evaluated and the run's last step.
func TestStudyFlagsAnEarlierCheckpoint(t *testing.T) {
	requireRuntime(t)
	bash, script := studyScript(t)
	out := filepath.Join(t.TempDir(), "study")
	knobs := []string{"SEEDS=1", "ALGOS=grpo", "PROBLEMS=1", "EVALN=1", "PASSK_SAMPLES=1", "JOBS=1"}
	const warning = "study: warning: grpo seed 1 was evaluated at grpo-s1/ckpt-000001, not grpo-s1/ckpt-000002, its last step"
	// study runs the study of steps in out, returning its stderr.
	study := func(out string, steps int) string {
		t.Helper()
		env := studyEnv(append([]string{"OUT=" + out, fmt.Sprintf("STEPS=%d", steps)}, knobs...)...)
		ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
		defer cancel()
		cmd := studyCmd(ctx, bash, script, "..", env) // the checkout, which the study builds
		var stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = io.Discard, &stderr
		require.NoError(t, cmd.Run(), stderr.String())
		return stderr.String()
	}
	require.NotContains(t, study(out, 2), "study: warning:", "the run's last checkpoint evaluated")

	// The last checkpoint damaged, an earlier one beside it (a study of
	// one step's: a copy of the last under another name is refused as
	// renamed), the run's evaluations to do again.
	short := filepath.Join(t.TempDir(), "study")
	study(short, 1)
	ckpts := filepath.Join(out, "runs", "grpo-s1", "checkpoints")
	last := filepath.Join(ckpts, "ckpt-000002")
	require.NoError(t, os.CopyFS(filepath.Join(ckpts, "ckpt-000001"), os.DirFS(filepath.Join(short, "runs", "grpo-s1", "checkpoints", "ckpt-000001"))))
	require.NoError(t, os.Truncate(filepath.Join(last, "model.safetensors"), 100))
	evals, err := filepath.Glob(filepath.Join(out, "eval", "grpo-*-1"))
	require.NoError(t, err)
	require.Len(t, evals, 3)
	for _, dir := range evals {
		require.NoError(t, os.RemoveAll(dir))
	}
	require.Contains(t, study(out, 2), warning)
	// Kept evaluations: the rerun's job log no longer holds eval's own
	// warning, the report still says it.
	stderr := study(out, 2)
	require.Equal(t, 1, strings.Count(stderr, warning), stderr)
	for _, file := range []string{"compare.txt", "summary.md"} {
		b, err := os.ReadFile(filepath.Join(out, "report", file))
		require.NoError(t, err)
		require.Equal(t, 1, strings.Count(string(b), warning), "%s: %s", file, b)
	}
}
