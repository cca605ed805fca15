package checkpoint

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestResumeStopsAtReadFailure: Resume of a run whose newest checkpoint
// fails to read with an I/O error (its state.json a link to
// /proc/self/mem, whose first page no process maps: reading it is EIO
// on Linux, whoever reads) stops with that error, naming the file,
// rather than resuming from the older checkpoint, past which a Save
// with --keep would then remove the newest as damaged.
func TestResumeStopsAtReadFailure(t *testing.T) {
	if _, err := os.ReadFile("/proc/self/mem"); !errors.Is(err, syscall.EIO) {
		t.Skipf("reading /proc/self/mem gives %v here, not EIO", err)
	}
	dir := t.TempDir()
	saveSteps(t, dir, []int64{10, 20}, Options{})
	state := filepath.Join(dir, DirName(20), StateFile)
	require.NoError(t, os.Remove(state))
	require.NoError(t, os.Symlink("/proc/self/mem", state))
	w, opt := fresh(t)
	path, _, skipped, err := Resume(context.Background(), dir, w, opt)
	require.ErrorIs(t, err, syscall.EIO)
	require.ErrorContains(t, err, state)
	require.Empty(t, path)
	require.Empty(t, skipped)
	list, err := List(dir)
	require.NoError(t, err)
	require.Len(t, list, 2)
}
