// Package atomicfile replaces files so that a crash leaves either the old
// or the new content, never a mix: the new content goes to a temporary
// file in the same directory, which is fsynced, renamed over the target,
// and the directory fsynced so that the rename itself is durable; a Stage
// does the same for a set of files of one directory. Temporary files and
// stages are flock(2)ed while their process lives, so that those a killed
// process left (SIGKILL, the OOM killer), which may be as large as a
// model's weights, are told apart and removed by the next write there.
package atomicfile

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
)

// Write replaces path with what write produces, atomically (see the
// package doc). The file gets mode perm less the umask. On error the
// target is untouched and the temporary file removed. The temporary file
// is locked while it is written, and the temporary files of path that a
// killed process left are removed first (see removeAbandoned).
func Write(path string, perm os.FileMode, write func(io.Writer) error) error {
	return WriteAs(path, "."+filepath.Base(path)+".tmp-", perm, write)
}

// WriteAs is Write with the temporary file named tempPrefix followed by
// digits, in path's directory, rather than for path (Write's
// "."+base+".tmp-"): for a file whose readers take every file of the
// directory whose name holds a word of its own (TensorBoard reads each
// file with "tfevents" in its name), which would read the temporary
// file as one while it is written, or for good once a killed process
// left it. The temporary files of tempPrefix that a killed process left
// are removed first, whichever file they were to be.
func WriteAs(path, tempPrefix string, perm os.FileMode, write func(io.Writer) error) (err error) {
	dir := filepath.Dir(path)
	removeAbandoned(dir, tempPrefix)
	f, err := os.CreateTemp(dir, tempPrefix+"*")
	if err != nil {
		return fmt.Errorf("atomicfile: write %s: create its temporary file: %w", path, err)
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
			err = fmt.Errorf("atomicfile: write %s: %w", path, err)
		}
	}()
	// The lock is taken through a descriptor of its own, held until the
	// rename is done: the file's own is closed before, and the finished
	// file must not be unlocked for another process's clean-up between
	// the close and the rename, which takes one holding bytes that no
	// process holds the lock of for a dead writer's, however recent
	// (removeAbandoned).
	lock, err := os.Open(f.Name())
	if err != nil {
		return fmt.Errorf("lock its temporary file: %w", err)
	}
	defer lock.Close()
	lockExclusive(lock)
	// Marked as locked, a byte long (a hole), until its content is in:
	// the content comes only as write goes on, through a buffer of a
	// MiB, so that a file written whole at the end (a plot encoded,
	// problems marshalled: tens of milliseconds) was empty while it was
	// made, and one left empty is taken for one not locked yet. Only one
	// killed between its making and its mark waits abandonedAfter.
	if err := f.Truncate(1); err != nil {
		return err
	}
	bw := bufio.NewWriterSize(f, 1<<20)
	if err := write(bw); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	// The mark goes where the content is shorter (empty).
	size, err := f.Seek(0, io.SeekCurrent)
	if err != nil {
		return err
	}
	if err := f.Truncate(size); err != nil {
		return err
	}
	if err := f.Chmod(perm &^ umask()); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return err
	}
	return SyncDir(dir)
}

// WriteFile replaces path with data atomically (Write).
func WriteFile(path string, data []byte, perm os.FileMode) error {
	return Write(path, perm, func(w io.Writer) error { _, err := w.Write(data); return err })
}

// WriteNamed writes what write produces to path, a file a user named
// (a command's --out), as a shell's > writes it where path is there and
// is not a regular file: a pipe, a device or a symbolic link (/dev/null,
// /dev/stdout, a FIFO, a link to the file to write) is opened and written
// in place (writeInto), where Write would rename a regular file over it
// (as root, over the system's /dev/null; a FIFO's reader would never see
// a byte) or fail to make its temporary file beside it (in /dev/fd).
// Anything else is replaced atomically (Write). A file made gets mode
// perm less the umask. The files a program keeps for itself (a run's
// checkpoints and logs) are written with Write, whatever is in their
// place.
func WriteNamed(path string, perm os.FileMode, write func(io.Writer) error) error {
	if st, err := os.Lstat(path); err == nil && !st.Mode().IsRegular() && !st.IsDir() {
		return writeInto(path, perm, write)
	}
	return Write(path, perm, write)
}

// writeInto writes what write produces into the file at path (a pipe,
// a device, or what a symbolic link leads to), in place, truncated and
// made as a shell's > does.
func writeInto(path string, perm os.FileMode, write func(io.Writer) error) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm)
	if err != nil {
		return err
	}
	bw := bufio.NewWriter(f)
	err = write(bw)
	if err == nil {
		err = bw.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("atomicfile: write into %s: %w", path, err)
	}
	return nil
}

// SyncDir fsyncs the directory dir, making renames and creations in it
// durable. File systems that cannot sync a directory (fsync answers
// EINVAL) are not an error.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("atomicfile: sync %s: %w", dir, err)
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil && !errors.Is(err, syscall.EINVAL) {
		return fmt.Errorf("atomicfile: sync %s: %w", dir, err)
	}
	return nil
}
