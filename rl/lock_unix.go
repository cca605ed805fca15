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
	"time"

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
// (the file holding the pid and host, put in place whole: createLockFile);
// a lock of this host whose pid names no live process, or this one (a
// killed run's pid that this process has again, as in a restarted
// container), is taken over (takeOverLock). A pid that a killed run left
// and another process has since refuses the run, and so does a lock of
// another host, whose process cannot be looked for here (a run directory
// on NFS that another machine trains in): remove the file then.
func lockRunByPID(path string) (func() error, error) {
	release := func() error {
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("rl: unlock %s: %w", path, err)
		}
		return nil
	}
	for range 3 {
		err := createLockFile(path)
		if err == nil {
			return release, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("rl: lock %s: %w", path, err)
		}
		b, err := os.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue // released meanwhile
		}
		if err != nil {
			return nil, fmt.Errorf("rl: lock %s: %w", path, err)
		}
		if l := parseLockFile(b); l.held() {
			return nil, &RunInUseError{Dir: filepath.Dir(path), Holder: l.holder(path), PIDFile: true}
		}
		took, err := takeOverLock(path)
		if err != nil {
			return nil, err
		}
		if took {
			return release, nil
		}
		// Released or taken over by another meanwhile: look again.
	}
	return nil, fmt.Errorf("rl: lock %s: taken by another process while starting", path)
}

// takeOverWait is how long lockRunByPID waits for another process taking
// over a stale lock (takeOverLock) before it gives up, naming the guard.
const takeOverWait = 5 * time.Second

// takeOverLock takes over the lock file at path, found stale: its
// holder is gone (held says it is not). Two processes that judged one
// stale lock must not remove each other's fresh one, so the lock is
// judged again, removed and made anew only by the holder of a guard,
// path+".takeover" (made whole, holding its holder's pid and host, as
// the lock is): one that finds the guard there waits for it to go, then
// looks again. A guard whose holder is gone (a process killed while
// taking over) is stale as a lock is (held) and is taken over the same
// way, under its own guard. It returns true where this process now
// holds the lock, false where the lock went or another made it
// meanwhile (the caller looks again), and a RunInUseError where its
// holder lives.
func takeOverLock(path string) (bool, error) {
	guard := path + ".takeover"
	for deadline := time.Now().Add(takeOverWait); ; {
		err := createLockFile(guard)
		if err == nil {
			break
		}
		if !errors.Is(err, fs.ErrExist) {
			return false, fmt.Errorf("rl: lock %s: take over a stale lock: %w", path, err)
		}
		if b, err := os.ReadFile(guard); err == nil && !parseLockFile(b).held() {
			took, err := takeOverLock(guard)
			if took {
				break
			}
			var inUse *RunInUseError
			if err != nil && !errors.As(err, &inUse) {
				return false, err
			}
			if err == nil {
				continue // the guard went or another made it: look again
			}
			// The guard's holder lives after all: wait for it.
		}
		if time.Now().After(deadline) {
			return false, fmt.Errorf("rl: lock %s: another process has been taking over the stale lock for %v (guard %s); if no spiral runs in %s, remove both files", path, takeOverWait, guard, filepath.Dir(path))
		}
		time.Sleep(time.Millisecond)
	}
	defer os.Remove(guard)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("rl: lock %s: %w", path, err)
	}
	if l := parseLockFile(b); l.held() {
		return false, &RunInUseError{Dir: filepath.Dir(path), Holder: l.holder(path), PIDFile: true}
	}
	// Stale, and no other process removes it while the guard is held;
	// one may make the lock between the removal and the making here,
	// which then fails: that one holds it.
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false, fmt.Errorf("rl: remove stale lock %s: %w", path, err)
	}
	if err := createLockFile(path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return false, nil
		}
		return false, fmt.Errorf("rl: lock %s: %w", path, err)
	}
	return true, nil
}

// createLockFile makes the file at path holding lockFileContent, whole
// from the moment it is there: written in a temporary file beside it,
// then linked into place with link(2), which fails (fs.ErrExist) where
// path exists. A file created, then written, was read empty in between
// by another process, which took it for a stale lock and took it over.
func createLockFile(path string) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(lockFileContent())
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return os.Link(tmp.Name(), path)
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

// held reports whether the lock's holder may live: a process of another
// host (which cannot be looked for here), or one of this host whose pid
// is alive and not this process's own (a killed run's pid that this
// process has again, as in a restarted container). A lock without a pid
// (damaged) is held by none.
func (l lockFile) held() bool {
	return l.otherHost() || l.pid > 0 && l.pid != os.Getpid() && processAlive(l.pid)
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
