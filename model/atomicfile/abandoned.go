package atomicfile

import (
	"os"
	"path/filepath"
	"strings"
	"time"
)

// abandonedAfter is how long a temporary file or stage must have gone
// unchanged, besides being locked by no process, to count as abandoned:
// it covers the moment between its creation and its lock.
const abandonedAfter = time.Minute

// removeAbandoned removes the entries of dir named prefix followed by
// digits (os.CreateTemp's and os.MkdirTemp's random part) that a process
// left when it died before it could remove them (RemoveAbandoned).
func removeAbandoned(dir, prefix string) {
	RemoveAbandoned(dir, func(name string) bool {
		rest, ok := strings.CutPrefix(name, prefix)
		return ok && rest != "" && strings.Trim(rest, "0123456789") == ""
	})
}

// RemoveAbandoned removes the entries of dir whose names temporary
// holds (a writer's temporary files or stages) that a process left when
// it died before it could remove them (SIGKILL, the OOM killer, a power
// cut): those unchanged for abandonedAfter that no live process holds
// the lock of (lockExclusive succeeds on them). On a file system that
// keeps no locks nothing is removed. It is a clean-up beside the
// caller's own write, so failures only leave the entry.
func RemoveAbandoned(dir string, temporary func(name string) bool) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if !temporary(e.Name()) {
			continue
		}
		path := filepath.Join(dir, e.Name())
		fi, err := os.Lstat(path)
		if err != nil || time.Since(fi.ModTime()) < abandonedAfter || fi.Mode()&os.ModeSymlink != 0 {
			continue
		}
		f, err := os.Open(path)
		if err != nil {
			continue
		}
		if lockExclusive(f) {
			os.RemoveAll(path)
		}
		f.Close()
	}
}
