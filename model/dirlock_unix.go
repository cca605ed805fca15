//go:build unix

package model

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// lockDir takes an exclusive lock on the directory dir (flock(2) on the
// directory itself, so no file is added and none needs write permission),
// waiting while another process holds it, and returns its release. The
// kernel drops the lock when the process exits, however it exits. On a
// file system without such locks (FlockUnsupported) it locks nothing.
func lockDir(dir string) (release func(), err error) {
	d, err := os.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("model: lock %s: %w", dir, err)
	}
	for {
		err = syscall.Flock(int(d.Fd()), syscall.LOCK_EX)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if FlockUnsupported(err) {
		d.Close()
		return func() {}, nil
	}
	if err != nil {
		d.Close()
		return nil, fmt.Errorf("model: lock %s: %w", dir, err)
	}
	// Closing the descriptor releases the lock (a directory opened for
	// reading has nothing to flush, so the close cannot lose anything).
	return func() { d.Close() }, nil
}

// FlockUnsupported reports whether err, from flock(2), says that the file
// system keeps no such locks (some network and FUSE mounts): its callers
// then go on unlocked, as spiral ran before it took these locks, rather
// than refuse to run there at all.
func FlockUnsupported(err error) bool {
	return errors.Is(err, syscall.ENOTSUP) || errors.Is(err, syscall.EOPNOTSUPP) || errors.Is(err, syscall.ENOLCK)
}
