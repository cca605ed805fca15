//go:build unix

package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/spiral-rl/spiral/model/flock"
)

// lockEvalOutput takes the lock of an evaluation's outputs in dir for
// mode (flock(2) on dir/.MODE.lock, which the kernel releases when the
// process exits, however it exits), refusing at once when another
// process holds it: two evaluations of one mode into one --out would
// write the same report, plot and traces files, the traces through one
// .partial file, and leave a report of one beside the traces of the
// other. It returns the release; on a file system without such locks
// (flock.Unsupported) it locks nothing.
func lockEvalOutput(dir, mode string) (func(), error) {
	path := filepath.Join(dir, "."+mode+".lock")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		return nil, fmt.Errorf("--out %s: lock: %w", dir, err)
	}
	ok, err := flock.TryLock(f)
	switch {
	case flock.Unsupported(err):
		f.Close()
		return func() {}, nil // a file system without locks: unlocked, as before
	case err != nil:
		f.Close()
		return nil, fmt.Errorf("--out %s: lock %s: %w", dir, path, err)
	case !ok:
		f.Close()
		return nil, fmt.Errorf("--out %s: another spiral eval --mode %s is writing there (lock %s); wait for it or give another --out", dir, mode, path)
	}
	return func() { f.Close() }, nil
}
