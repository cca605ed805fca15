//go:build unix

// Package flock takes exclusive flock(2) locks, which the kernel releases
// when the process exits, however it exits (SIGKILL and the OOM killer
// included), so that no lock outlives its process: spiral's run
// directories, evaluation outputs, artifacts, temporary files and stages
// are held by them. Some network, FUSE and cluster file systems keep no
// such locks (Unsupported); their callers then go on unlocked, as spiral ran
// before it took these locks, rather than refuse to run there.
package flock

import (
	"errors"
	"io/fs"
	"os"
	"syscall"
)

// TryLock takes an exclusive lock on f without waiting and reports
// whether it has it: false with a nil error when another open file
// (another process, or another open of the file in this one) holds it.
func TryLock(f *os.File) (bool, error) {
	err := flock(f, syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return false, nil
	}
	return err == nil, err
}

// flock calls flock(2), again when a signal interrupts it.
func flock(f *os.File, how int) error {
	for {
		err := syscall.Flock(int(f.Fd()), how)
		if !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}

// Unsupported reports whether err, from TryLock, says that the
// file system keeps no such locks: ENOTSUP or EOPNOTSUPP, ENOLCK (NFS
// without its lock manager), or ENOSYS (Lustre mounted without flock).
func Unsupported(err error) bool {
	return errors.Is(err, syscall.ENOTSUP) || errors.Is(err, syscall.EOPNOTSUPP) || errors.Is(err, syscall.ENOLCK) ||
		errors.Is(err, syscall.ENOSYS)
}

// Names reports whether path is still the file f is open on: a lock
// file that its holder removes before it releases the lock (so that it
// leaves nothing behind) may be locked next by a process that opened it
// before the removal, which then holds the lock of a file no longer
// there, and must open path again.
func Names(path string, f *os.File) (bool, error) {
	fi, err := f.Stat()
	if err != nil {
		return false, err
	}
	pi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return os.SameFile(fi, pi), nil
}
