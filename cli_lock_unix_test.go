//go:build unix

package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/spiral-rl/spiral/model/flock"
	"github.com/spiral-rl/spiral/rl"
)

// TestEvalLockWithoutFlock: on a file system that keeps no flock(2) locks
// (NFS without its lock manager: ENOLCK) an evaluation goes on unlocked,
// and one refused before it starts leaves nothing it made, as where locks
// are kept: neither the lock file, nor the directories, nor the
// artifacts built for it; a lock file or directory that was there stays,
// and a started evaluation's directories and artifacts stay (its lock
// file goes, as where locks are kept).
func TestEvalLockWithoutFlock(t *testing.T) {
	noFlock := evalLockOps{tryLock: func(*os.File) (bool, error) { return false, syscall.ENOLCK }}
	refused := errors.New("refused")
	for _, tc := range []struct {
		name string
		// prepare makes what is in root before the lock and returns the
		// --out, with the entries root must hold after the release.
		prepare   func(t *testing.T, root string) (out string, after []string)
		artifacts bool // built after the lock
		started   bool
	}{
		{"new directories", func(t *testing.T, root string) (string, []string) {
			return filepath.Join(root, "a", "b"), nil
		}, false, false},
		{"new directories, artifacts built", func(t *testing.T, root string) (string, []string) {
			return filepath.Join(root, "a", "b"), nil
		}, true, false},
		{"an empty directory", func(t *testing.T, root string) (string, []string) {
			require.NoError(t, os.Mkdir(filepath.Join(root, "out"), 0o755))
			return filepath.Join(root, "out"), []string{"out"}
		}, false, false},
		{"an earlier evaluation's lock", func(t *testing.T, root string) (string, []string) {
			out := filepath.Join(root, "out")
			require.NoError(t, os.Mkdir(out, 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(out, ".passk.lock"), nil, 0o644))
			return out, []string{"out", "out/.passk.lock"}
		}, false, false},
		{"started", func(t *testing.T, root string) (string, []string) {
			return filepath.Join(root, "a"), []string{"a", "a/artifacts", "a/artifacts/x"}
		}, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			out, after := tc.prepare(t, root)
			l, err := lockEvalOutputWith(out, "passk", noFlock)
			require.NoError(t, err)
			if tc.artifacts {
				require.NoError(t, os.MkdirAll(filepath.Join(out, rl.ArtifactsDir), 0o755))
				require.NoError(t, os.WriteFile(filepath.Join(out, rl.ArtifactsDir, "x"), nil, 0o644))
			}
			l.started = tc.started
			require.Equal(t, refused, l.release(refused))
			require.Equal(t, after, entries(t, root))
		})
	}
}

// TestEvalLockOutRemovedMeanwhile: two evaluations of other modes into
// one new --out: the first (rsa) makes it, the second (passk) finds it
// made, and the first, refused, removes it (it holds nothing but its
// lock) just after the second's MkdirAll, before the second opens its
// lock file there. The second makes the directory again and takes its
// lock, rather than failing with "no such file or directory"; refused in
// turn, it removes the directory it made again.
func TestEvalLockOutRemovedMeanwhile(t *testing.T) {
	root := t.TempDir()
	out := filepath.Join(root, "out")
	first, err := lockEvalOutput(out, "rsa")
	require.NoError(t, err)
	refused := errors.New("refused")
	released := false
	second, err := lockEvalOutputWith(out, "passk", evalLockOps{tryLock: flock.TryLock, made: func() {
		if !released {
			released = true
			require.Equal(t, refused, first.release(refused))
			require.NoDirExists(t, out, "the first evaluation removed the --out it made")
		}
	}})
	require.NoError(t, err)
	require.Equal(t, []string{"out", "out/.passk.lock"}, entries(t, root))
	require.Equal(t, refused, second.release(refused))
	require.Empty(t, entries(t, root))
}

// TestRunLockOutRemovedMeanwhile: an evaluation and a training run
// started together into one new --out, each refused before it starts:
// the one that made the directory removes it when it holds nothing but
// its lock, which may fall between the other's making of it and the
// opening of its lock file there ("no such file or directory"), or
// within os.MkdirAll, which finds it missing, then there, then gone
// ("mkdir: file exists"). Neither may fail for it. A stress test, as the
// run's lock is taken inside rl.LockRun: before the fix about 1 try in
// 100 failed.
func TestRunLockOutRemovedMeanwhile(t *testing.T) {
	refused := errors.New("refused")
	for i := range 500 {
		out := filepath.Join(t.TempDir(), "out")
		var wg sync.WaitGroup
		var evalErr, runErr error
		wg.Add(2)
		go func() {
			defer wg.Done()
			l, err := lockEvalOutput(out, "passk")
			if evalErr = err; err == nil {
				evalErr = l.release(refused)
			}
		}()
		go func() {
			defer wg.Done()
			l, err := lockRunDir(out)
			if runErr = err; err == nil {
				runErr = l.release(refused)
			}
		}()
		wg.Wait()
		require.EqualError(t, evalErr, "refused", "try %d", i)
		require.EqualError(t, runErr, "refused", "try %d", i)
	}
}

// TestEvalLockRemovedAfterTheEvaluation: an evaluation left its lock
// file (.passk.lock, .rsa.lock, .sequential.lock) in --out after it
// finished, while train removes its .lock. The lock file goes at the
// release, whoever made it, the evaluation's outputs staying; one that
// another process opened meanwhile is found gone there, which opens and
// locks a new one.
func TestEvalLockRemovedAfterTheEvaluation(t *testing.T) {
	for _, tc := range []struct {
		name  string
		stale bool // a lock file left by an evaluation killed by SIGKILL
		err   error
	}{
		{"finished", false, nil},
		{"failed", false, errors.New("failed")},
		{"a stale lock file", true, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			out := filepath.Join(root, "out")
			if tc.stale {
				require.NoError(t, os.Mkdir(out, 0o755))
				require.NoError(t, os.WriteFile(filepath.Join(out, ".rsa.lock"), nil, 0o644))
			}
			l, err := lockEvalOutput(out, "rsa")
			require.NoError(t, err)
			l.started = true
			require.NoError(t, os.WriteFile(filepath.Join(out, "rsa.json"), nil, 0o644))
			require.Equal(t, tc.err, l.release(tc.err))
			require.Equal(t, []string{"out", "out/rsa.json"}, entries(t, root))
		})
	}
	// Another evaluation opened the lock file before the release: it
	// locks the file it opened once released, finds it removed and takes
	// a new one, which is then the lock.
	out := t.TempDir()
	first, err := lockEvalOutput(out, "passk")
	require.NoError(t, err)
	second, err := lockEvalOutputWith(out, "passk", evalLockOps{tryLock: func(f *os.File) (bool, error) {
		if first != nil {
			require.NoError(t, first.release(nil))
			first = nil
		}
		return flock.TryLock(f)
	}})
	require.NoError(t, err)
	_, err = lockEvalOutput(out, "passk")
	require.ErrorContains(t, err, "another spiral eval --mode passk is writing there")
	require.NoError(t, second.release(nil))
	require.NoFileExists(t, filepath.Join(out, ".passk.lock"))
}

// TestEvalRSAAndTrainExcludeEachOther: eval --mode rsa writes rsa.json,
// the name of a training run's final RSA report, so it and a training
// run never share an --out at once: an evaluation into a run's directory
// whose run has locked it but written no metrics.jsonl yet (building its
// graphs) is refused, naming the lock, and so is a run into the --out of
// an evaluation that holds its lock; the one would have replaced the
// other's report silently (the run removes an rsa.json before its last
// step, and writes its own at its end). An evaluation of another mode
// writes no rsa.json, and goes on.
func TestEvalRSAAndTrainExcludeEachOther(t *testing.T) {
	skipWithoutRuntime(t)
	t.Setenv("SPIRAL_CACHE_DIR", t.TempDir())
	evalArgs := func(mode, out string) []string {
		args := []string{"eval", "--mode", mode, "--out", out, "--limit", "1", "--max-new-tokens", "8", "--quiet", "--threads", "1"}
		if mode == "rsa" {
			return append(args, "--population", "2", "--subset", "2", "--rsa-steps", "1")
		}
		return append(args, "--samples", "1")
	}
	trainArgs := func(out string) []string {
		return []string{"train", "--out", out, "--steps", "1", "--problems", "1", "--n1", "3", "--k", "2", "--n", "2", "--n2", "2",
			"--eval-problems", "1", "--eval-every", "0", "--max-new-tokens", "8", "--quiet", "--threads", "1"}
	}
	for _, tc := range []struct {
		name string
		hold func(t *testing.T, dir string) func() error // what the other process holds
		args func(dir string) []string
		want string // "" where it goes on
	}{
		{"eval --mode rsa while a run starts", holdRunLock, func(dir string) []string { return evalArgs("rsa", dir) },
			"--out %[1]s: --mode rsa writes rsa.json, a training run's final RSA report's name: %[1]s is in use by another spiral process"},
		{"a run while an eval --mode rsa runs", holdEvalLock("rsa"), trainArgs, "%[1]s is in use by another spiral process"},
		{"eval --mode sequential while a run starts", holdRunLock, func(dir string) []string { return evalArgs("sequential", dir) }, ""},
		{"a run while an eval --mode sequential runs", holdEvalLock("sequential"), trainArgs, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "out")
			release := tc.hold(t, dir)
			var stderr bytes.Buffer
			code := run(context.Background(), tc.args(dir), &cliEnv{stdout: io.Discard, stderr: &stderr})
			require.NoError(t, release())
			if tc.want == "" {
				require.Equal(t, 0, code, stderr.String())
				return
			}
			require.Equal(t, exitFailure, code, stderr.String())
			require.Contains(t, stderr.String(), fmt.Sprintf(tc.want, dir))
			for _, name := range []string{rl.FinalRSAFile, rl.MetricsFile} {
				require.NoFileExists(t, filepath.Join(dir, name), "the refused command wrote nothing")
			}
		})
	}
}

// holdRunLock takes dir's run lock, as a training run starting there
// holds it before it writes metrics.jsonl.
func holdRunLock(t *testing.T, dir string) func() error {
	t.Helper()
	unlock, err := rl.LockRun(dir)
	require.NoError(t, err)
	return unlock
}

// holdEvalLock takes dir's locks as an evaluation of mode running there
// holds them.
func holdEvalLock(mode string) func(t *testing.T, dir string) func() error {
	return func(t *testing.T, dir string) func() error {
		t.Helper()
		l, err := lockEvalOutput(dir, mode)
		require.NoError(t, err)
		l.started = true
		return func() error { return l.release(nil) }
	}
}

// TestEvalRSALockRefusesRunDir: eval --mode rsa's locks, once taken,
// refuse a training run's directory (its metrics.jsonl there: a run that
// began, or ended, after the evaluation's flags were checked), a usage
// error, leaving nothing new there; other modes write no rsa.json.
func TestEvalRSALockRefusesRunDir(t *testing.T) {
	for _, mode := range []string{"rsa", "passk"} {
		t.Run(mode, func(t *testing.T) {
			dir := t.TempDir()
			require.NoError(t, os.WriteFile(filepath.Join(dir, rl.MetricsFile), nil, 0o644))
			l, err := lockEvalOutput(dir, mode)
			if mode != "rsa" {
				require.NoError(t, err)
				require.NoError(t, l.release(nil))
			} else {
				require.ErrorAs(t, err, new(usageError))
				require.EqualError(t, err, "--out "+dir+" is a training run's directory (it holds metrics.jsonl): --mode rsa would write rsa.json over the run's final RSA report, which a resumed run reads as done; give another --out")
			}
			entries, err := os.ReadDir(dir)
			require.NoError(t, err)
			require.Len(t, entries, 1, "nothing new in the run's directory")
		})
	}
}
