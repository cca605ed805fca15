package main

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPlanGenerationInTraining: spiral train's rollouts run beside its
// gradients and AdamW moments, which stay allocated for the whole run, so
// plan says how many rows generation fits there too. Qwen3-4B on 80 GB
// (memplan's TestGeneratePeakInTraining has the arithmetic, there with
// the call budget, 512 MiB, as the call's temporaries; here one row of a
// 256-position prefill chunk over 5,120 positions, 2,334,737,920 bytes
// (memplan's TestCallTemporaries), takes its place): a full fine-tune's
// 16 bytes a parameter leave 8 rows of 5,120 positions of the 40
// generation alone fits; LoRA r = 16's adapters leave all 40.
func TestPlanGenerationInTraining(t *testing.T) {
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"full fine-tune", nil, "generation in train (its gradients and moments held), 5120 positions per row: up to 8 rows"},
		{"LoRA r = 16", []string{"--lora-rank", "16"}, "generation in train (its gradients and moments held), 5120 positions per row: up to 40 rows"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			args := append([]string{"plan", "--model", "qwen3-4b", "--device-memory", "80GB"}, c.args...)
			code := run(context.Background(), args, &cliEnv{stdout: &stdout, stderr: &stderr})
			require.Zero(t, code, stderr.String())
			require.Contains(t, stdout.String(), "  generation, 5120 positions per row: up to 40 rows\n")
			require.Contains(t, stdout.String(), "  "+c.want+"\n")
		})
	}
}
