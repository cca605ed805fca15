package rl

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestFinishedEventsPlainFile: a plain file named tensorboard in an sft
// --out (the user's, not a directory of event files) was renamed to
// tensorboard-finished by sft --overwrite as the finished run's events,
// and removing those once the model was written then failed ("readdir
// DIR/tensorboard-finished: not a directory"), as did every later sft
// there. A file that is no directory is no run's events: it is left
// alone, where it is; and one named tensorboard-finished, into which
// the events would go, is refused naming it.
func TestFinishedEventsPlainFile(t *testing.T) {
	finished := func(t *testing.T) string {
		dir := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(dir, SFTLogFile), []byte("{}\n"), 0o644))
		return dir
	}
	t.Run("tensorboard", func(t *testing.T) {
		dir := finished(t)
		tb := filepath.Join(dir, TensorBoardDir)
		require.NoError(t, os.WriteFile(tb, []byte("notes"), 0o644))
		require.NoError(t, setAsideFinishedEvents(dir))
		require.NoError(t, RemoveSFTCheckpoints(dir))
		b, err := os.ReadFile(tb)
		require.NoError(t, err)
		require.Equal(t, "notes", string(b))
		require.NoFileExists(t, filepath.Join(dir, SFTFinishedTensorBoardDir))
	})
	t.Run("tensorboard-finished", func(t *testing.T) {
		dir := finished(t)
		require.NoError(t, os.Mkdir(filepath.Join(dir, TensorBoardDir), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, TensorBoardDir, "events.out.tfevents.1.host.spiral"), nil, 0o644))
		aside := filepath.Join(dir, SFTFinishedTensorBoardDir)
		require.NoError(t, os.WriteFile(aside, []byte("notes"), 0o644))
		require.EqualError(t, setAsideFinishedEvents(dir), "rl: sft: set the finished run's TensorBoard events aside: "+aside+" is a file, not a directory of event files: move it away to start the run over")
		require.NoError(t, removeFinishedEvents(dir))
		b, err := os.ReadFile(aside)
		require.NoError(t, err)
		require.Equal(t, "notes", string(b))
	})
}
