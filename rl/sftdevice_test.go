package rl

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/spiral-rl/spiral/model"
	"github.com/spiral-rl/spiral/model/checkpoint"
)

// TestSFTDeviceOptimizer: an sft run on the device layer (here its CPU
// twin) with the device optimizer (Policy.UseDeviceOptimizer, as spiral
// sft sets it there, as train does) keeps the gradients and AdamW on the
// device: the host gradient store is released, no gradient returns to
// the host, and the host weights and moments lag the device between
// checkpoints. It ends as the host path does, bit for bit: the weights,
// moments and step counts of its last checkpoint, and those of the host
// stores it leaves (SyncHost before each checkpoint and at the end: what
// spiral sft exports), its log but for the gradient norm (the device
// sums its squares in another order: equal to float64 rounding). So it
// does run straight, resumed in a fresh process after an interruption,
// and resumed in the same process from a checkpoint older than the
// device's state (the load moves the host stores' versions, and the next
// update copies them up over the device's).
func TestSFTDeviceOptimizer(t *testing.T) {
	src := sftModelDir(t)
	// The host path, generating on the sampling graph as the device
	// layer does.
	hostDir := t.TempDir()
	host := newSFTHarnessWith(t, src, hostDir, model.PolicyOptions{Train: true, SamplingGraphOnly: true})
	require.NoError(t, host.run(0))
	weights, moments, log := sftFinal(t, hostDir)
	norms := gradNorms(t, log)

	twin := func(t *testing.T, dir string) *sftHarness {
		h := newSFTHarnessWith(t, src, dir, model.PolicyOptions{Train: true, Resident: true})
		pol := h.parts.Policy
		require.True(t, pol.Train.DeviceLayer())
		require.NoError(t, pol.UseDeviceOptimizer(h.parts.Optimizer))
		require.Nil(t, pol.Grads, "the host gradient store is released")
		return h
	}
	endsAsHost := func(t *testing.T, h *sftHarness, dir string) {
		t.Helper()
		w, m, l := sftFinal(t, dir)
		require.Equal(t, weights, w, "the last checkpoint's weights differ from the host path's")
		require.Equal(t, moments, m, "the last checkpoint's moments or step count differ from the host path's")
		require.InEpsilonSlice(t, norms, gradNorms(t, l), 1e-12)
		require.Equal(t, log, l)
		pol, opt, hostOpt := h.parts.Policy, h.parts.Optimizer, host.parts.Optimizer
		require.Equal(t, host.parts.Policy.Weights.Flat(), pol.Weights.Flat(), "the host weights the run leaves")
		require.Equal(t, hostOpt.ExpAvg().Flat(), opt.ExpAvg().Flat(), "the first moments the run leaves")
		require.Equal(t, hostOpt.ExpAvgSq().Flat(), opt.ExpAvgSq().Flat(), "the second moments the run leaves")
		require.Equal(t, hostOpt.Steps(), opt.Steps())
		require.True(t, pol.Train.UsesDeviceOptimizer())
		require.Nil(t, pol.Grads)
		require.Zero(t, pol.Train.GradientBytes(), "no gradient returns to the host")
	}

	t.Run("straight", func(t *testing.T) {
		dir := t.TempDir()
		h := twin(t, dir)
		pol, opt := h.parts.Policy, h.parts.Optimizer
		initial := slices.Clone(pol.Weights.Flat())
		h.onProgress = func(done int) {
			if done == 1 { // no checkpoint yet
				require.Equal(t, int64(1), opt.Steps())
				require.Equal(t, initial, pol.Weights.Flat(), "the host weights are stale until SyncHost: the update ran on the device")
				require.Zero(t, opt.ExpAvg().Norm(), "the host moments are stale until SyncHost")
			}
		}
		require.NoError(t, h.run(0))
		endsAsHost(t, h, dir)
	})
	t.Run("resumed in a fresh process", func(t *testing.T) {
		dir := t.TempDir()
		h := twin(t, dir)
		require.ErrorIs(t, h.run(3), context.Canceled)
		require.Contains(t, h.warn.String(), "saving step 3")
		h = twin(t, dir)
		require.NoError(t, h.run(0))
		require.Contains(t, h.out.String(), "resumed from "+filepath.Join(dir, CheckpointsDir, checkpoint.DirName(3))+" (step 3)")
		endsAsHost(t, h, dir)
	})
	t.Run("resumed in the same process from an older checkpoint", func(t *testing.T) {
		dir := t.TempDir()
		h := twin(t, dir)
		require.ErrorIs(t, h.run(5), context.Canceled)
		require.Contains(t, h.warn.String(), "saving step 5")
		require.NoError(t, os.RemoveAll(filepath.Join(dir, CheckpointsDir, checkpoint.DirName(5))))
		require.NoError(t, h.run(0))
		require.Contains(t, h.out.String(), "resumed from "+filepath.Join(dir, CheckpointsDir, checkpoint.DirName(4))+" (step 4)")
		endsAsHost(t, h, dir)
	})
}

// gradNorms takes the gradient norms out of the step lines of an sft
// log (sftFinal's) and returns them.
func gradNorms(t *testing.T, log []map[string]any) []float64 {
	t.Helper()
	var out []float64
	for _, line := range log {
		if n, ok := line["grad_norm"]; ok {
			out = append(out, n.(float64))
			delete(line, "grad_norm")
		}
	}
	require.NotEmpty(t, out)
	return out
}
