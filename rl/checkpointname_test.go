package rl

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCheckpointName: an evaluated checkpoint is named with its run, so
// that two runs' unlabelled reports are not averaged as one model's seeds.
func TestCheckpointName(t *testing.T) {
	for _, c := range []struct{ ckpt, want string }{
		{"runs/spiral-s1/checkpoints/ckpt-000050", "spiral-s1/ckpt-000050"},
		{"/abs/grpo/checkpoints/ckpt-000001", "grpo/ckpt-000001"},
		{"saved/ckpt-000010", "ckpt-000010"},
	} {
		require.Equal(t, c.want, CheckpointName(c.ckpt), c.ckpt)
	}
}

// TestCheckpointNameRelative: a checkpoint given relative to a run
// directory (eval --checkpoint . or checkpoints/ckpt-N from inside the
// run, train --out .) is named with its run too, as spelled from
// anywhere else: "./ckpt-000050" named every such run's checkpoint alike,
// so compare averaged two runs' reports as one model's seeds.
func TestCheckpointNameRelative(t *testing.T) {
	run := filepath.Join(t.TempDir(), "spiral-s2")
	ckpt := filepath.Join(run, CheckpointsDir, "ckpt-000050")
	require.NoError(t, os.MkdirAll(ckpt, 0o777))
	for _, c := range []struct{ cwd, ckpt string }{ // cwd within the run
		{".", "checkpoints/ckpt-000050"},
		{".", "./checkpoints/ckpt-000050"},
		{CheckpointsDir, "ckpt-000050"},
		{CheckpointsDir, "../checkpoints/ckpt-000050"},
		{filepath.Join(CheckpointsDir, "ckpt-000050"), "."},
	} {
		t.Run(c.cwd+" "+c.ckpt, func(t *testing.T) {
			t.Chdir(filepath.Join(run, c.cwd))
			require.Equal(t, "spiral-s2/ckpt-000050", CheckpointName(c.ckpt))
		})
	}
}
