//go:build unix

package model

import (
	"fmt"
	"os"

	"github.com/spiral-rl/spiral/model/flock"
)

// lockDir takes an exclusive lock on the directory dir (flock(2) on the
// directory itself, so no file is added and none needs write permission),
// waiting while another process holds it, and returns its release. The
// kernel drops the lock when the process exits, however it exits. On a
// file system without such locks (flock.Unsupported) it locks nothing.
func lockDir(dir string) (release func(), err error) {
	d, err := os.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("model: lock %s: %w", dir, err)
	}
	err = flock.Lock(d)
	if flock.Unsupported(err) {
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
