//go:build unix

package atomicfile

import (
	"os"

	"github.com/spiral-rl/spiral/model/flock"
)

// lockExclusive takes an exclusive lock on f without waiting and
// reports whether it has it. A temporary file or stage is locked for as
// long as its writer lives, so one that can be locked by another
// process was abandoned. A file system without such locks reports
// false.
func lockExclusive(f *os.File) bool {
	ok, err := flock.TryLock(f)
	return ok && err == nil
}
