package rl

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/spiral-rl/spiral/model/checkpoint"
	"github.com/stretchr/testify/require"
)

// TestResumeStopsAtReadFailure: a run whose newest checkpoint fails to
// read with an I/O error (its state.json a link to /proc/self/mem, whose
// first page no process maps: EIO on Linux, even for root) is refused
// before the model is loaded (CheckRunIdentity, CheckRunSettings) and
// on resuming, with the error and the file: the run does not resume
// from the older checkpoint, past which --keep would remove the newest
// as damaged. Each refusal says the way out where it never reads again
// (a bad sector): move it out of checkpoints/ to resume from the one
// before, or --fresh to start over.
func TestResumeStopsAtReadFailure(t *testing.T) {
	if _, err := os.ReadFile("/proc/self/mem"); !errors.Is(err, syscall.EIO) {
		t.Skipf("reading /proc/self/mem gives %v here, not EIO", err)
	}
	dir := t.TempDir()
	h := newRunHarness(t, dir, 2)
	h.cfg.EvalEvery = 0
	require.NoError(t, h.run(context.Background()))
	ckpts := filepath.Join(dir, CheckpointsDir)
	state := filepath.Join(ckpts, checkpoint.DirName(2), checkpoint.StateFile)
	require.NoError(t, os.Remove(state))
	require.NoError(t, os.Symlink("/proc/self/mem", state))

	for name, err := range map[string]error{
		"CheckRunIdentity": CheckRunIdentity(dir, h.parts.Settings, nil, nil),
		"CheckRunSettings": CheckRunSettings(h.cfg, h.parts),
	} {
		require.ErrorIs(t, err, syscall.EIO, name)
		require.ErrorContains(t, err, state, name)
		require.ErrorContains(t, err, "move that checkpoint out of "+ckpts+" to resume from the one before it, or use --fresh to start over", name)
	}
	again := newRunHarness(t, dir, 3)
	again.cfg.EvalEvery, again.cfg.Keep = 0, 1
	err := again.run(context.Background())
	require.ErrorIs(t, err, syscall.EIO)
	require.ErrorContains(t, err, state)
	require.ErrorContains(t, err, "move that checkpoint out of "+ckpts+" to resume from the one before it, or use --fresh to start over")
	require.NotContains(t, again.log.String(), "skipped a damaged checkpoint")
	list, err := checkpoint.List(ckpts)
	require.NoError(t, err)
	require.Len(t, list, 2, "no checkpoint is removed")
}

// TestReadRunCurvesStopsAtReadFailure: compare --run reads a run's
// settings from its newest checkpoint; one whose state.json fails to
// read with an I/O error (a link to /proc/self/mem) stops ReadRunCurves
// with the error and the file, rather than giving the older
// checkpoint's settings as the run's.
func TestReadRunCurvesStopsAtReadFailure(t *testing.T) {
	if _, err := os.ReadFile("/proc/self/mem"); !errors.Is(err, syscall.EIO) {
		t.Skipf("reading /proc/self/mem gives %v here, not EIO", err)
	}
	dir := t.TempDir()
	h := newRunHarness(t, dir, 2)
	h.cfg.EvalEvery = 0
	require.NoError(t, h.run(context.Background()))
	state := filepath.Join(dir, CheckpointsDir, checkpoint.DirName(2), checkpoint.StateFile)
	require.NoError(t, os.Remove(state))
	require.NoError(t, os.Symlink("/proc/self/mem", state))

	c, err := ReadRunCurves(dir)
	require.ErrorIs(t, err, syscall.EIO)
	require.ErrorContains(t, err, state)
	require.ErrorContains(t, err, dir)
	require.Nil(t, c.Settings)
}
