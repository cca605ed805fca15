//go:build unix

package rl

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/spiral-rl/spiral/model/flock"
)

// RunInUseError is the error of a run directory whose lock another
// process holds (LockRun).
type RunInUseError struct {
	Dir string
	// Holder names the lock file, and the holder's pid where it is known:
	// "pid 12, lock file DIR/.lock".
	Holder string
	// PIDFile: the lock is the file alone (no flock(2) there), which a
	// killed run leaves, its pid then another process's.
	PIDFile bool
}

func (e *RunInUseError) Error() string {
	return fmt.Sprintf("%s is in use by another spiral process (%s); wait for it or use another --out%s", e.Dir, e.Holder, e.Stale())
}

// Stale is the advice on a lock that may be stale: for a PIDFile lock,
// " (or, if no spiral runs there, remove the lock file)"; "" otherwise.
func (e *RunInUseError) Stale() string {
	if e.PIDFile {
		return " (or, if no spiral runs there, remove the lock file)"
	}
	return ""
}

// lockRun takes the run directory's lock, so that two processes never
// train into one directory: flock(2) on dir/.lock, which the kernel
// releases when the process exits, however it exits (a run killed with
// SIGKILL, or by the OOM killer, leaves nothing that refuses the next
// one, whatever process has its pid since). The file holds the pid of
// the process that has it, for the message of one refused. It returns
// the release, which removes the file. On a file system without such
// locks (flock.Unsupported) the file alone is the lock
// (lockRunByPID).
func lockRun(dir string) (func() error, error) {
	path := filepath.Join(dir, LockFile)
	for range 3 {
		f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o666)
		if err != nil {
			return nil, fmt.Errorf("rl: lock %s: %w", path, err)
		}
		ok, err := flock.TryLock(f)
		if flock.Unsupported(err) {
			f.Close()
			return lockRunByPID(path)
		}
		if err == nil && !ok {
			b, _ := os.ReadFile(path)
			f.Close()
			holder := "lock file " + path
			if pid, perr := strconv.Atoi(strings.TrimSpace(string(b))); perr == nil {
				holder = fmt.Sprintf("pid %d, %s", pid, holder)
			}
			return nil, &RunInUseError{Dir: dir, Holder: holder}
		}
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("rl: lock %s: %w", path, err)
		}
		// A process releasing the lock removes the file: the one locked
		// here may be that removed file, no longer the lock. Try again.
		if same, err := flock.Names(path, f); err != nil || !same {
			f.Close()
			if err != nil {
				return nil, fmt.Errorf("rl: lock %s: %w", path, err)
			}
			continue
		}
		err = f.Truncate(0)
		if err == nil {
			_, err = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
		}
		if err != nil {
			os.Remove(path)
			f.Close()
			return nil, fmt.Errorf("rl: lock %s: %w", path, err)
		}
		return func() error {
			// Removed before the lock is released: a process that opened
			// the file meanwhile finds it gone (flock.Names) and starts over.
			err := os.Remove(path)
			f.Close()
			if err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("rl: unlock %s: %w", path, err)
			}
			return nil
		}, nil
	}
	return nil, fmt.Errorf("rl: lock %s: taken by another process while starting", path)
}

// lockRunByPID takes the lock file at path where flock(2) is not kept
// (O_EXCL, holding the pid); a lock whose pid names no live process, or
// this one (a killed run's pid that this process has again, as in a
// restarted container), is taken over. A pid that a killed run left and
// another process has since refuses the run: remove the file then.
func lockRunByPID(path string) (func() error, error) {
	dir := filepath.Dir(path)
	for range 2 {
		f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o666)
		if err == nil {
			_, err = fmt.Fprintf(f, "%d\n", os.Getpid())
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				os.Remove(path)
				return nil, fmt.Errorf("rl: lock %s: %w", path, err)
			}
			return func() error {
				if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
					return fmt.Errorf("rl: unlock %s: %w", path, err)
				}
				return nil
			}, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("rl: lock %s: %w", path, err)
		}
		b, _ := os.ReadFile(path)
		pid, perr := strconv.Atoi(strings.TrimSpace(string(b)))
		// This process's own pid is not another process's: a killed
		// run's, which this process has again (a restarted container).
		if perr == nil && pid != os.Getpid() && processAlive(pid) {
			return nil, &RunInUseError{Dir: dir, Holder: fmt.Sprintf("pid %d, lock file %s", pid, path), PIDFile: true}
		}
		// A stale lock (its process is gone): take it over.
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("rl: remove stale lock %s: %w", path, err)
		}
	}
	return nil, fmt.Errorf("rl: lock %s: taken by another process while starting", path)
}

// processAlive reports whether a process with this pid exists (signal 0
// probes without signalling; EPERM means it exists under another user).
func processAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
