package rl

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSFTResumeCancelled: an sft rerun whose context is done while it
// resumes (Ctrl-C during the read of the checkpoint) returns
// context.Canceled without reading the checkpoint on, trying older ones
// as damaged, warning of them, or writing anything: the run directory is
// as the interrupted run left it, and a rerun resumes from the same
// checkpoint.
func TestSFTResumeCancelled(t *testing.T) {
	src := sftModelDir(t)
	dir := t.TempDir()
	require.ErrorIs(t, newSFTHarness(t, src, dir).run(3), context.Canceled)
	files := func() map[string]string {
		out := map[string]string{}
		require.NoError(t, filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			b, err := os.ReadFile(path)
			out[path] = string(b)
			return err
		}))
		return out
	}
	before := files()
	require.Contains(t, before, filepath.Join(dir, CheckpointsDir, "ckpt-000003", "model.safetensors"))

	h := newSFTHarness(t, src, dir)
	unlock, err := LockRun(dir)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err = errors.Join(RunSFT(ctx, h.cfg, h.parts), unlock())
	require.ErrorIs(t, err, context.Canceled)
	require.Contains(t, err.Error(), filepath.Join(dir, CheckpointsDir, "ckpt-000003"))
	require.Empty(t, h.warn.String(), "no checkpoint skipped as damaged")
	require.NotContains(t, h.out.String(), "resumed")
	require.Equal(t, before, files(), "the run directory as it was")

	again := newSFTHarness(t, src, dir)
	require.NoError(t, again.run(0))
	require.Contains(t, again.out.String(), "resumed from "+filepath.Join(dir, CheckpointsDir, "ckpt-000003"))
}
