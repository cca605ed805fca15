//go:build unix

package atomicfile

import (
	"os"
	"sync"
	"syscall"
)

var umaskOnce = sync.OnceValue(func() os.FileMode {
	// The umask can only be read by setting it; set it back at once. This
	// runs once per process, before any file is written through here.
	m := syscall.Umask(0)
	syscall.Umask(m)
	return os.FileMode(m)
})

// umask returns the process's file mode creation mask.
func umask() os.FileMode { return umaskOnce() }
