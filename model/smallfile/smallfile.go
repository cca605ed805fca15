// Package smallfile reads the small files a user names (a tokenizer.json,
// a config.json, a template, a report) whole, with a bound: a path that
// is a named pipe or a device (/dev/zero), or a file far larger than any
// such file, is refused by an error naming it and the bound once that
// many bytes are read, rather than read until the process runs out of
// memory.
package smallfile

import (
	"fmt"
	"io"
	"io/fs"
	"os"
)

// Limit bounds the files Read is given by most callers: 256 MiB, some
// ten times the largest Hugging Face tokenizer.json.
const Limit = 256 << 20

// Read returns the content of the file at path, as os.ReadFile does, or
// an error where it holds more than limit bytes: a regular file by its
// size, before it is read; another file (a named pipe, a device), which
// has none, once limit+1 bytes are read from it. That error is an
// *fs.PathError (Op "read") naming path, the kind of file and limit;
// opening and reading errors are os.ReadFile's (fs.ErrNotExist for a
// missing file).
func Read(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st.Mode().IsRegular() && st.Size() > limit {
		return nil, &fs.PathError{Op: "read", Path: path, Err: fmt.Errorf("%d bytes, over the %s this file may hold", st.Size(), size(limit))}
	}
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		if st.Mode().IsRegular() { // grown since its Stat
			return nil, &fs.PathError{Op: "read", Path: path, Err: fmt.Errorf("over the %s this file may hold", size(limit))}
		}
		return nil, &fs.PathError{Op: "read", Path: path, Err: fmt.Errorf("a %s that gave over the %s this file may hold; want a regular file", Kind(st.Mode()), size(limit))}
	}
	return b, nil
}

// ReadRegular is Read of a file that must be a regular one (following
// symbolic links): a model's side file, which no pipe or device stands
// for, is refused by its kind before it is opened (an *fs.PathError, Op
// "read", naming path and the kind), rather than read up to limit.
func ReadRegular(path string, limit int64) ([]byte, error) {
	if st, err := os.Stat(path); err == nil && !st.Mode().IsRegular() {
		return nil, &fs.PathError{Op: "read", Path: path, Err: fmt.Errorf("a %s, not a regular file", Kind(st.Mode()))}
	}
	return Read(path, limit)
}

// Kind names the type of a file that is not regular, by its mode: "named
// pipe (FIFO)", "character device", "device", "socket", "directory",
// else "non-regular file".
func Kind(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "named pipe (FIFO)"
	case m&fs.ModeCharDevice != 0:
		return "character device"
	case m&fs.ModeDevice != 0:
		return "device"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m.IsDir():
		return "directory"
	}
	return "non-regular file"
}

// size writes n bytes in MiB where it is a whole number of them.
func size(n int64) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}
