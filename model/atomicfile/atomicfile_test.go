package atomicfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestWrite: the new content replaces the old; a failing writer leaves the
// old content and no temporary file behind; the mode is perm less the
// umask, as os.WriteFile would give a new file.
func TestWrite(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f.txt")
	require.NoError(t, WriteFile(p, []byte("old"), 0o666))
	require.NoError(t, WriteFile(p, []byte("new"), 0o666))
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	require.Equal(t, "new", string(b))

	boom := errors.New("boom")
	err = Write(p, 0o666, func(w io.Writer) error { w.Write([]byte("partial")); return boom })
	require.ErrorIs(t, err, boom)
	b, err = os.ReadFile(p)
	require.NoError(t, err)
	require.Equal(t, "new", string(b))
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 1, "no temporary file left")

	ref := filepath.Join(dir, "ref")
	require.NoError(t, os.WriteFile(ref, nil, 0o666))
	a, err := os.Stat(p)
	require.NoError(t, err)
	r, err := os.Stat(ref)
	require.NoError(t, err)
	require.Equal(t, r.Mode().Perm(), a.Mode().Perm())
}

// TestWriteNamesTheTarget: when the temporary file cannot be created
// beside the target, the error names the target (the path the caller
// gave), not only the temporary name, and nothing is written.
func TestWriteNamesTheTarget(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	require.NoError(t, os.WriteFile(file, nil, 0o666))
	tests := []struct {
		name, path string
		is         error
	}{
		{"missing directory", filepath.Join(dir, "op7", "train.jsonl"), os.ErrNotExist},
		{"parent is a file", filepath.Join(file, "train.jsonl"), nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := WriteFile(tc.path, []byte("x"), 0o666)
			require.ErrorContains(t, err, "atomicfile: write "+tc.path+": create its temporary file: ")
			if tc.is != nil {
				require.ErrorIs(t, err, tc.is)
			}
			_, statErr := os.Stat(tc.path)
			require.Error(t, statErr, "nothing written")
		})
	}
}

// TestSyncDirWithoutDirectorySync: a directory whose file system cannot
// fsync it (the kernel answers EINVAL, as it does for /proc's) is synced
// as far as it can be, not an error; a directory that cannot be opened
// still is, naming it.
func TestSyncDirWithoutDirectorySync(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("/proc's directories stand for a file system without directory fsync")
	}
	d, err := os.Open("/proc")
	require.NoError(t, err)
	require.ErrorIs(t, d.Sync(), syscall.EINVAL, "the premise: fsync of /proc is EINVAL")
	require.NoError(t, d.Close())
	require.NoError(t, SyncDir("/proc"))
	missing := filepath.Join(t.TempDir(), "missing")
	require.ErrorContains(t, SyncDir(missing), "atomicfile: sync "+missing+": ")
}

// TestWriteAs: WriteAs writes through a temporary file named tempPrefix
// and digits rather than for the target (a name that readers of the
// directory, such as TensorBoard's of every file whose name holds
// "tfevents", must not take for the target's), removing first the
// temporary files of that prefix that a killed process left, whichever
// target they were for, and only those.
func TestWriteAs(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "events.out.tfevents.1700000000.host.spiral")
	old := time.Now().Add(-2 * abandonedAfter)
	left := leftFile(".events.tmp-123", old)(t, dir)
	other := leftFile(".events.out.tfevents.1.host.spiral.tmp-45", old)(t, dir)
	err := WriteAs(target, ".events.tmp-", 0o666, func(w io.Writer) error {
		entries, err := os.ReadDir(dir)
		require.NoError(t, err)
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		require.Len(t, names, 2, "the other leftover and the temporary file: %q", names)
		require.Equal(t, filepath.Base(other), names[0])
		require.Regexp(t, `^\.events\.tmp-[0-9]+$`, names[1])
		require.NotEqual(t, filepath.Base(left), names[1], "a new temporary file")
		_, err = w.Write([]byte("e"))
		return err
	})
	require.NoError(t, err)
	b, err := os.ReadFile(target)
	require.NoError(t, err)
	require.Equal(t, "e", string(b))
	require.NoFileExists(t, left, "the temporary file a killed write left")
	require.FileExists(t, other, "not of the prefix")
}

// TestWriteNamed: a file a user names is written into where it is a
// FIFO or a symbolic link (to a file there, or to none: made, as a
// shell's > makes it), the path keeping its type; a regular file is
// replaced whole (a hard link to it keeps the old content), as Write
// replaces it.
func TestWriteNamed(t *testing.T) {
	const data = "new\n"
	write := func(w io.Writer) error { _, err := io.WriteString(w, data); return err }
	for _, tc := range []struct {
		name string
		// make makes path and returns what reads the file written and
		// what reads the old content's file after.
		make func(t *testing.T, path string) (written, old func() string)
		mode os.FileMode // the type path keeps
	}{
		{name: "a FIFO", mode: os.ModeNamedPipe, make: func(t *testing.T, path string) (func() string, func() string) {
			require.NoError(t, syscall.Mkfifo(path, 0o600))
			r, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
			require.NoError(t, err)
			t.Cleanup(func() { r.Close() })
			return func() string { b, err := io.ReadAll(r); require.NoError(t, err); return string(b) }, nil
		}},
		{name: "a symbolic link", mode: os.ModeSymlink, make: func(t *testing.T, path string) (func() string, func() string) {
			target := filepath.Join(filepath.Dir(path), "target")
			require.NoError(t, os.WriteFile(target, []byte("stale stale stale\n"), 0o644))
			require.NoError(t, os.Symlink("target", path))
			return readFile(t, target), nil
		}},
		{name: "a symbolic link to no file", mode: os.ModeSymlink, make: func(t *testing.T, path string) (func() string, func() string) {
			target := filepath.Join(filepath.Dir(path), "target")
			require.NoError(t, os.Symlink("target", path))
			return readFile(t, target), nil
		}},
		{name: "a regular file", mode: 0, make: func(t *testing.T, path string) (func() string, func() string) {
			require.NoError(t, os.WriteFile(path, []byte("old\n"), 0o644))
			old := filepath.Join(filepath.Dir(path), "old")
			require.NoError(t, os.Link(path, old))
			return readFile(t, path), func() string { return readFile(t, old)() }
		}},
		{name: "no file", mode: 0, make: func(t *testing.T, path string) (func() string, func() string) {
			return readFile(t, path), nil
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "out")
			written, old := tc.make(t, path)
			require.NoError(t, WriteNamed(path, 0o666, write))
			require.Equal(t, data, written())
			if old != nil {
				require.Equal(t, "old\n", old(), "replaced, not written into")
			}
			st, err := os.Lstat(path)
			require.NoError(t, err)
			require.Equal(t, tc.mode, st.Mode().Type(), "its type kept")
		})
	}
}

// readFile returns what reads the file at path.
func readFile(t *testing.T, path string) func() string {
	return func() string {
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		return string(b)
	}
}
