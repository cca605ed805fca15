package embedded

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestExtract(t *testing.T) {
	cache := t.TempDir()
	dir, err := Extract(cache)
	if !Available() {
		require.True(t, errors.Is(err, ErrNotBuilt))
		t.Skip("this build carries no embedded model")
	}
	require.NoError(t, err)
	for _, f := range Files {
		got, err := os.ReadFile(filepath.Join(dir, f))
		require.NoError(t, err)
		want, err := assets.ReadFile("assets/" + f)
		require.NoError(t, err)
		require.Equal(t, want, got, f)
	}
	// A second call reuses the directory; a damaged (incomplete) one is not
	// trusted because .complete is written last.
	again, err := Extract(cache)
	require.NoError(t, err)
	require.Equal(t, dir, again)
	entries, err := os.ReadDir(cache)
	require.NoError(t, err)
	require.Len(t, entries, 1, "no temporary directories left behind")
}

// TestExtractCreatesCacheDir: a cache directory that does not exist yet
// (a first run) is created, with its parents.
func TestExtractCreatesCacheDir(t *testing.T) {
	if !Available() {
		t.Skip("this build carries no embedded model")
	}
	cache := filepath.Join(t.TempDir(), "a", "b")
	dir, err := Extract(cache)
	require.NoError(t, err)
	require.Equal(t, cache, filepath.Dir(dir))
	require.FileExists(t, filepath.Join(dir, ".complete"))
}

// TestExtractRemovesStaleTemporaries: a temporary directory a killed
// extraction left an hour ago is removed; one younger, which another
// process may be writing now, is kept.
func TestExtractRemovesStaleTemporaries(t *testing.T) {
	if !Available() {
		t.Skip("this build carries no embedded model")
	}
	cache := t.TempDir()
	stale := filepath.Join(cache, tmpPrefix+"killed")
	fresh := filepath.Join(cache, tmpPrefix+"writing")
	other := filepath.Join(cache, "artifacts-old")
	for _, d := range []string{stale, fresh, other} {
		require.NoError(t, os.MkdirAll(d, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(d, "model.onnx"), []byte("x"), 0o644))
	}
	old := time.Now().Add(-2 * staleAfter)
	require.NoError(t, os.Chtimes(stale, old, old))
	require.NoError(t, os.Chtimes(other, old, old))
	_, err := Extract(cache)
	require.NoError(t, err)
	require.NoDirExists(t, stale)
	require.DirExists(t, fresh)
	require.DirExists(t, other, "only extraction temporaries are removed")
	// The sweep runs when the model is already extracted too.
	require.NoError(t, os.Chtimes(fresh, old, old))
	_, err = Extract(cache)
	require.NoError(t, err)
	require.NoDirExists(t, fresh)
}
