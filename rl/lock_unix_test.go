//go:build unix

package rl

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// lockTakerEnv names, in a subprocess of TestRunLockByPIDConcurrentTakers,
// the directory whose lock it takes.
const lockTakerEnv = "SPIRAL_LOCK_TAKER_DIR"

// TestRunLockByPIDConcurrentTakers: where flock(2) is not kept, of many
// processes taking one run directory's lock file at once (lockRunByPID),
// exactly one gets it and the others are refused, naming the holder,
// whether there is no lock, a stale one, or a stale one with the guard
// of its takeover that a killed taker left: a process that read the file
// between its creation and its pid being written took it for stale and
// took it over, and two that judged one stale lock removed each other's
// fresh one, both training into the directory.
func TestRunLockByPIDConcurrentTakers(t *testing.T) {
	if dir := os.Getenv(lockTakerEnv); dir != "" {
		takeLockInSubprocess(dir)
		return
	}
	const takers, rounds = 10, 3
	for _, tc := range []struct{ name, content, guard string }{
		{"no lock", "", ""},
		{"a stale lock", "2147483646\n", ""},
		{"a stale lock and a killed takeover's guard", "2147483646\n", "2147483646\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for round := range rounds {
				dir := t.TempDir()
				if tc.content != "" {
					require.NoError(t, os.WriteFile(filepath.Join(dir, LockFile), []byte(tc.content), 0o666))
				}
				if tc.guard != "" {
					require.NoError(t, os.WriteFile(filepath.Join(dir, LockFile+".takeover"), []byte(tc.guard), 0o666))
				}
				won, refused := runLockTakers(t, dir, takers)
				require.Len(t, won, 1, "round %d: exactly one taker gets the lock; refused: %q", round, refused)
				for _, r := range refused {
					require.True(t, strings.HasPrefix(r, "in use: "), "round %d: refused as in use, not %q", round, r)
				}
			}
		})
	}
}

// runLockTakers starts n subprocesses that take dir's lock at once and
// returns what each said: won, or why it was refused. Winners hold the
// lock until all have said.
func runLockTakers(t *testing.T, dir string, n int) (won, refused []string) {
	t.Helper()
	lines := make(chan string, 2*n)
	var cmds []*exec.Cmd
	t.Cleanup(func() {
		for _, c := range cmds {
			_ = c.Process.Kill()
			_ = c.Wait()
		}
	})
	for range n {
		cmd := exec.Command(os.Args[0], "-test.run=^TestRunLockByPIDConcurrentTakers$")
		cmd.Env = append(os.Environ(), lockTakerEnv+"="+dir)
		out, err := cmd.StdoutPipe()
		require.NoError(t, err)
		require.NoError(t, cmd.Start())
		cmds = append(cmds, cmd)
		go func() {
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				if l := sc.Text(); l == "ready" || strings.HasPrefix(l, "won") || strings.HasPrefix(l, "in use: ") || strings.HasPrefix(l, "error: ") {
					lines <- l
				}
			}
		}()
	}
	next := func() string {
		select {
		case l := <-lines:
			return l
		case <-time.After(time.Minute):
			t.Fatal("a lock taker said nothing for a minute")
			return ""
		}
	}
	for range n {
		require.Equal(t, "ready", next())
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "go"), nil, 0o666))
	for range n {
		if l := next(); l == "won" {
			won = append(won, l)
		} else {
			refused = append(refused, l)
		}
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "done"), nil, 0o666))
	for _, c := range cmds {
		require.NoError(t, c.Wait())
	}
	cmds = nil
	return won, refused
}

// takeLockInSubprocess is a lock taker of runLockTakers: it says ready,
// waits for dir/go, takes dir's lock and says how that went, and, where
// it got it, holds it until dir/done is there.
func takeLockInSubprocess(dir string) {
	waitFor := func(name string) {
		for {
			if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
				return
			}
			time.Sleep(100 * time.Microsecond)
		}
	}
	fmt.Println("ready")
	waitFor("go")
	_, err := lockRunByPID(filepath.Join(dir, LockFile))
	var inUse *RunInUseError
	switch {
	case err == nil:
		fmt.Println("won")
		waitFor("done")
	case errors.As(err, &inUse):
		fmt.Println("in use: " + err.Error())
	default:
		fmt.Println("error: " + err.Error())
	}
}

// TestRunLockByPIDStaleTakeOverGuard: where flock(2) is not kept, the
// guard of a stale lock's takeover (lock file + ".takeover") that a
// process killed while taking over left names its pid; a guard whose
// pid is dead on this host is taken over as a stale lock is, where it
// refused every later takeover until both files were removed by hand,
// and one whose holder lives is waited for, then refused.
func TestRunLockByPIDStaleTakeOverGuard(t *testing.T) {
	host, err := os.Hostname()
	require.NoError(t, err)
	const dead = 2147483646
	for _, tc := range []struct {
		name, guard string
		wantErr     string // "": the lock is taken
	}{
		{"dead pid", fmt.Sprintf("%d\n", dead), ""},
		{"dead pid of this host", fmt.Sprintf("%d\n%s\n", dead, host), ""},
		{"damaged", "", ""},
		{"live pid", fmt.Sprintf("%d\n", os.Getppid()), "another process has been taking over the stale lock"},
		{"another host's", fmt.Sprintf("%d\nnot-%s\n", dead, host), "another process has been taking over the stale lock"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, LockFile)
			guard := path + ".takeover"
			require.NoError(t, os.WriteFile(path, []byte(fmt.Sprintf("%d\n", dead)), 0o666))
			require.NoError(t, os.WriteFile(guard, []byte(tc.guard), 0o666))
			start := time.Now()
			release, err := lockRunByPID(path)
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				require.ErrorContains(t, err, guard)
				require.GreaterOrEqual(t, time.Since(start), takeOverWait, "refused after the wait")
				b, err := os.ReadFile(guard)
				require.NoError(t, err)
				require.Equal(t, tc.guard, string(b), "a live guard is left alone")
				return
			}
			require.NoError(t, err)
			require.Less(t, time.Since(start), takeOverWait, "a dead guard is taken over at once")
			b, err := os.ReadFile(path)
			require.NoError(t, err)
			require.Equal(t, os.Getpid(), parseLockFile(b).pid, "the lock names this process")
			for _, p := range []string{guard, guard + ".takeover"} {
				_, err := os.Stat(p)
				require.ErrorIs(t, err, os.ErrNotExist, "%s is removed", p)
			}
			require.NoError(t, release())
		})
	}
}
