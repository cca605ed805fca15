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

// TestExtractRebuildsDamagedCache: an extracted directory whose .complete
// marker stands beside a file of the wrong size or content (what a power
// loss can leave of writes that were never synced) is rebuilt, not used.
func TestExtractRebuildsDamagedCache(t *testing.T) {
	if !Available() {
		t.Skip("this build carries no embedded model")
	}
	for _, tc := range []struct {
		name   string
		damage func(t *testing.T, path string)
	}{
		{"truncated", func(t *testing.T, path string) { require.NoError(t, os.Truncate(path, 10)) }},
		{"empty", func(t *testing.T, path string) { require.NoError(t, os.Truncate(path, 0)) }},
		{"same size, other bytes", func(t *testing.T, path string) {
			b, err := os.ReadFile(path)
			require.NoError(t, err)
			b[len(b)/2] ^= 0xff
			require.NoError(t, os.WriteFile(path, b, 0o644))
		}},
		{"missing", func(t *testing.T, path string) { require.NoError(t, os.Remove(path)) }},
	} {
		for _, f := range Files {
			t.Run(tc.name+"/"+f, func(t *testing.T) {
				cache := t.TempDir()
				dir, err := Extract(cache)
				require.NoError(t, err)
				tc.damage(t, filepath.Join(dir, f))
				again, err := Extract(cache)
				require.NoError(t, err)
				require.Equal(t, dir, again)
				for _, g := range Files {
					got, err := os.ReadFile(filepath.Join(again, g))
					require.NoError(t, err)
					want, err := assets.ReadFile("assets/" + g)
					require.NoError(t, err)
					require.Equal(t, want, got, g)
				}
				entries, err := os.ReadDir(cache)
				require.NoError(t, err)
				require.Len(t, entries, 1, "the damaged directory is not left behind")
			})
		}
	}
}
