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
// the process that has it and its host (lockFileContent), for the
// message of one refused. It returns
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
			return nil, &RunInUseError{Dir: dir, Holder: parseLockFile(b).holder(path)}
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
			_, err = f.WriteAt(lockFileContent(), 0)
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
// (O_EXCL, holding the pid and host); a lock of this host whose pid
// names no live process, or this one (a killed run's pid that this
// process has again, as in a restarted container), is taken over. A pid
// that a killed run left and another process has since refuses the run,
// and so does a lock of another host, whose process cannot be looked
// for here (a run directory on NFS that another machine trains in):
// remove the file then.
func lockRunByPID(path string) (func() error, error) {
	dir := filepath.Dir(path)
	for range 2 {
		f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o666)
		if err == nil {
			_, err = f.Write(lockFileContent())
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
		l := parseLockFile(b)
		// Another host's pid names no process here: its run may live
		// (a directory shared over NFS), and is not taken over. This
		// process's own pid is not another process's: a killed run's,
		// which this process has again (a restarted container).
		if l.otherHost() || l.pid > 0 && l.pid != os.Getpid() && processAlive(l.pid) {
			return nil, &RunInUseError{Dir: dir, Holder: l.holder(path), PIDFile: true}
		}
		// A stale lock (its process is gone): take it over.
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("rl: remove stale lock %s: %w", path, err)
		}
	}
	return nil, fmt.Errorf("rl: lock %s: taken by another process while starting", path)
}

// lockFile is what a run directory's lock file says of its holder: its
// pid (0: none) and the host it runs on ("": not recorded, as versions
// before the host was recorded wrote it, taken for this host).
type lockFile struct {
	pid  int
	host string
}

// lockFileContent is what the lock's holder writes in the lock file:
// its pid, then its host's name on a line of its own (left out where
// the name is unknown).
func lockFileContent() []byte {
	s := strconv.Itoa(os.Getpid()) + "\n"
	if host, err := os.Hostname(); err == nil && host != "" {
		s += host + "\n"
	}
	return []byte(s)
}

// parseLockFile reads a lock file's content (lockFileContent).
func parseLockFile(b []byte) lockFile {
	first, rest, _ := strings.Cut(string(b), "\n")
	var l lockFile
	if pid, err := strconv.Atoi(strings.TrimSpace(first)); err == nil && pid > 0 {
		l.pid = pid
	}
	l.host, _, _ = strings.Cut(rest, "\n")
	l.host = strings.TrimSpace(l.host)
	return l
}

// otherHost reports whether the lock's holder runs on another host than
// this process (one whose own name is unknown takes every recorded host
// for another).
func (l lockFile) otherHost() bool {
	if l.host == "" {
		return false
	}
	host, err := os.Hostname()
	return err != nil || host != l.host
}

// holder names the holder of the lock file at path for RunInUseError:
// "pid 12, lock file DIR/.lock", "pid 12 on host gpu-2, lock file
// DIR/.lock" for another host's, "lock file DIR/.lock" without a pid.
func (l lockFile) holder(path string) string {
	switch {
	case l.pid > 0 && l.otherHost():
		return fmt.Sprintf("pid %d on host %s, lock file %s", l.pid, l.host, path)
	case l.pid > 0:
		return fmt.Sprintf("pid %d, lock file %s", l.pid, path)
	case l.otherHost():
		return fmt.Sprintf("host %s, lock file %s", l.host, path)
	}
	return "lock file " + path
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
