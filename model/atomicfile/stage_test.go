package atomicfile

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// dirFiles maps the names in dir to their contents.
func dirFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	out := map[string]string{}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		require.NoError(t, err)
		out[e.Name()] = string(b)
	}
	return out
}

// TestStage: what is written in the stage leaves the directory as it
// was until Commit, which moves the stage's files in, removes the named
// files the stage does not hold (a replaced model's stale data file),
// leaves files it does not name, and removes the stage; Discard leaves
// the directory as it was; a stage holding a file the commit does not
// name moves nothing.
func TestStage(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "out")
	require.NoError(t, os.MkdirAll(dir, 0o777))
	old := map[string]string{"model.onnx": "old model", "model.onnx_data": "old data", "notes.txt": "the user's"}
	for n, c := range old {
		require.NoError(t, os.WriteFile(filepath.Join(dir, n), []byte(c), 0o666))
	}
	write := func(s *Stage, files map[string]string) {
		for n, c := range files {
			require.NoError(t, WriteFile(filepath.Join(s.Dir(), n), []byte(c), 0o666))
		}
	}
	names := []string{"model.onnx_data", "model.onnx", "config.json"}

	t.Run("discard", func(t *testing.T) {
		s, err := NewStage(dir)
		require.NoError(t, err)
		write(s, map[string]string{"model.onnx": "new model", "config.json": "{}"})
		require.Equal(t, old, dirFiles(t, dir))
		require.NoError(t, s.Discard())
		require.Equal(t, old, dirFiles(t, dir))
		entries, err := os.ReadDir(parent)
		require.NoError(t, err)
		require.Len(t, entries, 1, "the stage is gone")
	})
	t.Run("a file not named", func(t *testing.T) {
		s, err := NewStage(dir)
		require.NoError(t, err)
		defer s.Discard()
		write(s, map[string]string{"model.onnx": "new model", "stray": "x"})
		require.ErrorContains(t, s.Commit(names...), "holds stray")
		require.Equal(t, old, dirFiles(t, dir))
	})
	t.Run("commit", func(t *testing.T) {
		s, err := NewStage(dir)
		require.NoError(t, err)
		write(s, map[string]string{"model.onnx": "new model", "config.json": "{}"})
		require.NoError(t, s.Commit(names...))
		require.Equal(t, map[string]string{"model.onnx": "new model", "config.json": "{}", "notes.txt": "the user's"}, dirFiles(t, dir))
		entries, err := os.ReadDir(parent)
		require.NoError(t, err)
		require.Len(t, entries, 1, "the stage is gone")
		require.NoError(t, s.Discard(), "after a commit")
	})
	t.Run("a new directory", func(t *testing.T) {
		fresh := filepath.Join(parent, "a", "b")
		s, err := NewStage(fresh)
		require.NoError(t, err)
		write(s, map[string]string{"model.onnx": "m"})
		require.NoError(t, s.Commit(names...))
		require.Equal(t, map[string]string{"model.onnx": "m"}, dirFiles(t, fresh))
	})
}
