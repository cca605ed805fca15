package rollout

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/spiral-rl/spiral/model"
	"github.com/spiral-rl/spiral/model/modeltest"
	"github.com/spiral-rl/spiral/model/ortc"
	"github.com/spiral-rl/spiral/model/qwen3"
)

// TestSamplerReleaseToSharedArena follows the device memory of a
// training iteration on the CPU twin with the device arena shared
// (model.Runtime.ShareDeviceArena): the resident weights, the KV cache of
// a generation and the training step's tensors all come from the one
// arena; Sampler.Release hands the cache's bytes back to it (still
// reserved, for the step to use), and the step leaves nothing held. The
// generations, the step's log-probabilities and its gradients are the
// same as with each session's own memory.
func TestSamplerReleaseToSharedArena(t *testing.T) {
	rt := modeltest.Runtime(t)
	dir := t.TempDir()
	require.NoError(t, qwen3.WriteDir(dir, qwen3.Tiny(), 12))
	reqs := append(samplerRequests(5), samplerRequests(9)...)
	type outcome struct {
		out   []Completion
		lp    []float32
		grads []float32
	}
	// The test runtime shares the arena (ArenaAuto on the CPU): this
	// test takes it away for its first half and leaves it as it was.
	wasShared := rt.DeviceArena() != nil
	require.NoError(t, rt.UnshareDeviceArena())
	t.Cleanup(func() {
		require.NoError(t, rt.UnshareDeviceArena())
		if wasShared {
			_, err := rt.ShareDeviceArena()
			require.NoError(t, err)
		}
	})
	var got [2]outcome
	for i, shared := range []bool{false, true} {
		var arena *model.DeviceArena
		stats := func() ortc.AllocatorStats {
			t.Helper()
			s, err := arena.Stats()
			require.NoError(t, err)
			return s
		}
		if shared {
			var err error
			arena, err = rt.ShareDeviceArena()
			require.NoError(t, err)
			_, err = rt.ShareDeviceArena()
			require.ErrorContains(t, err, "shared already")
		}
		pol, err := model.OpenPolicy(context.Background(), rt, filepath.Join(dir, "model.onnx"), t.TempDir(), model.PolicyOptions{Resident: true, Train: true})
		require.NoError(t, err)
		var opened ortc.AllocatorStats
		if shared {
			opened = stats()
			require.Positive(t, opened.InUse, "the resident weights are in the arena")
		}
		s, err := NewSampler(pol.LM, SamplerConfig{TopP: 0.9, Temperature: 1, MaxNewTokens: 48, BatchSize: 8})
		require.NoError(t, err)
		got[i].out, _, err = s.Generate(context.Background(), reqs, nil)
		require.NoError(t, err)
		cache := s.CacheBytes()
		require.Positive(t, cache)
		var generated ortc.AllocatorStats
		if shared {
			generated = stats()
			require.GreaterOrEqual(t, generated.InUse-opened.InUse, cache, "the KV cache is in the arena")
		}
		s.Release()
		var released ortc.AllocatorStats
		if shared {
			released = stats()
			require.GreaterOrEqual(t, generated.InUse-released.InUse, cache, "Release hands the cache back")
			require.Equal(t, generated.Reserved, released.Reserved, "and it stays reserved, for the step")
		}
		var res model.TrainResult
		require.NoError(t, pol.Train.Accumulate(context.Background(), model.RandomTrainBatch(4, 64, pol.LM.Signature().Vocab, 3), 1, pol.Grads, &res))
		got[i].lp, got[i].grads = res.LogProbs, slices.Clone(pol.Grads.Flat())
		if shared {
			trained := stats()
			require.Greater(t, trained.Allocs, released.Allocs, "the step's tensors come from the arena")
			require.Greater(t, trained.MaxInUse, released.InUse)
			require.Equal(t, released.InUse, trained.InUse, "and go back to it")
		}
		require.NoError(t, pol.Close())
		if shared {
			require.NoError(t, rt.UnshareDeviceArena())
			require.Nil(t, rt.DeviceArena())
		} else {
			require.Nil(t, rt.DeviceArena(), "each session its own memory")
		}
	}
	require.Equal(t, got[0], got[1])
}
