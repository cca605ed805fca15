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
// left when it died before it could remove them (RemoveAbandoned): the
// temporary files of Write, which are locked before their first byte,
// so that one holding a byte is abandoned once no process holds its
// lock, however recent (see removeUnlocked).
func removeAbandoned(dir, prefix string) {
	removeUnlocked(dir, digitsAfter(prefix), lockedFiles)
}

// lockedFirst is what removeUnlocked knows of the entries it is given:
// which of them their writers locked before writing anything in them.
type lockedFirst int

const (
	// notKnown: none (RemoveAbandoned's names, which other writers make).
	notKnown lockedFirst = iota
	// lockedFiles: temporary files holding a byte (Write's).
	lockedFiles
	// lockedStages: directories holding an entry (NewStage's stages).
	lockedStages
)

// digitsAfter says whether a name is prefix followed by digits.
func digitsAfter(prefix string) func(string) bool {
	return func(name string) bool {
		rest, ok := strings.CutPrefix(name, prefix)
		return ok && rest != "" && strings.Trim(rest, "0123456789") == ""
	}
}

// RemoveAbandoned removes the entries of dir whose names temporary
// holds (a writer's temporary files or stages) that a process left when
// it died before it could remove them (SIGKILL, the OOM killer, a power
// cut): those unchanged for abandonedAfter that no live process holds
// the lock of (lockExclusive succeeds on them). On a file system that
// keeps no locks nothing is removed. It is a clean-up beside the
// caller's own write, so failures only leave the entry.
func RemoveAbandoned(dir string, temporary func(name string) bool) {
	removeUnlocked(dir, temporary, notKnown)
}

// removeUnlocked is RemoveAbandoned; an entry that its writer locked
// before writing anything in it (locked: a stage holding an entry, a
// temporary file holding a byte) is abandoned once no process holds its
// lock, however recent: a stage is locked (NewStage) before anything is
// written in it, its mark (lockedMark) first, and a temporary file
// (Write) before its first byte, its mark (a byte-long hole) first, and
// both stay locked until they are committed, renamed or discarded, so
// that abandonedAfter only covers an empty one, made and not locked yet.
// A stage or a temporary file a process killed in the middle of its
// writing, rerun at once, was otherwise left until some later write in
// its directory a minute on.
func removeUnlocked(dir string, temporary func(name string) bool, locked lockedFirst) {
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
		if err != nil || fi.Mode()&os.ModeSymlink != 0 {
			continue
		}
		if time.Since(fi.ModTime()) < abandonedAfter && !holdsWritten(locked, path, fi) {
			continue
		}
		if locked == lockedStages {
			if _, err := os.Lstat(filepath.Join(path, commitRecord)); err == nil {
				continue // a killed commit, for FinishKilled to finish
			}
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

// holdsWritten says whether the entry at path (fi) holds what its writer
// wrote once it held its lock, as locked says its writers lock.
func holdsWritten(locked lockedFirst, path string, fi os.FileInfo) bool {
	switch locked {
	case lockedStages:
		return fi.IsDir() && holdsEntry(path)
	case lockedFiles:
		return fi.Mode().IsRegular() && fi.Size() > 0
	}
	return false
}

// holdsEntry says whether the directory at path holds anything.
func holdsEntry(path string) bool {
	d, err := os.Open(path)
	if err != nil {
		return false
	}
	defer d.Close()
	names, _ := d.Readdirnames(1)
	return len(names) > 0
}
