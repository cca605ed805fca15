//go:build unix

package atomicfile

import (
	"errors"
	"os"
	"syscall"
)

// lockExclusive takes an exclusive flock(2) on f without waiting and
// reports whether it has it. A temporary file or stage is locked for as
// long as its writer lives (the kernel releases the lock when the
// process exits, however it exits), so one that can be locked by
// another process was abandoned. A file system without such locks
// reports false.
func lockExclusive(f *os.File) bool {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EINTR) {
			return err == nil
		}
	}
}
