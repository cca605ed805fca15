package atomicfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

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
