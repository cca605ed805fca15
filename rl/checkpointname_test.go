package rl

import (
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
