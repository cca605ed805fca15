//go:build unix

package model

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spiral-rl/spiral/model/flock"
)

// lockWaitNotice is how long lockDir waits on another process's lock
// before it says so: a reader holds the lock for the second or so its
// sessions take to read the files, which is not worth a line.
const lockWaitNotice = 2 * time.Second

// lockPoll is how often lockDir tries a lock that another process holds:
// a blocking flock(2) would not see Ctrl-C (the context), and a try every
// 50 ms costs nothing while it answers a signal at once.
const lockPoll = 50 * time.Millisecond

// lockDir takes an exclusive lock on the directory dir (flock(2) on the
// directory itself, so no file is added and none needs write permission),
// waiting while another process holds it, until ctx is done, and returns
// its release. The kernel drops the lock when the process exits, however
// it exits. On a file system without such locks (flock.Unsupported) it
// locks nothing. A wait longer than lockWaitNotice is told to waiting
// (when not nil), so that a second spiral on the same model's artifacts
// does not look hung while the first builds them.
func lockDir(ctx context.Context, dir string, waiting io.Writer) (release func(), err error) {
	d, err := os.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("model: lock %s: %w", dir, err)
	}
	err = lockTelling(ctx, d, dir, waiting, lockWaitNotice)
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

// lockTelling locks d (the directory dir), trying every lockPoll until
// ctx is done (ctx.Err()), telling waiting (when not nil) once when the
// wait passes after, and again when it ends.
func lockTelling(ctx context.Context, d *os.File, dir string, waiting io.Writer, after time.Duration) error {
	start := time.Now()
	told := false
	tick := time.NewTicker(lockPoll)
	defer tick.Stop()
	for {
		ok, err := flock.TryLock(d)
		if err != nil {
			return err
		}
		if ok {
			if told {
				fmt.Fprintf(waiting, "spiral: %s is free; going on\n", dir)
			}
			return nil
		}
		if waiting != nil && !told && time.Since(start) >= after {
			fmt.Fprintf(waiting, "spiral: waiting for %s: another spiral process is building or reading these artifacts\n", dir)
			told = true
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}
