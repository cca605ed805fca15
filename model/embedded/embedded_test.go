package embedded

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

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
