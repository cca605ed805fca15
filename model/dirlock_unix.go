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
// kernel drops the lock when the process exits, however it exits.
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
	if err != nil {
		d.Close()
		return nil, fmt.Errorf("model: lock %s: %w", dir, err)
	}
	// Closing the descriptor releases the lock (a directory opened for
	// reading has nothing to flush, so the close cannot lose anything).
	return func() { d.Close() }, nil
}
