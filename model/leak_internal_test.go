package model

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/spiral-rl/spiral/model/qwen3"
)

// TestExecutorReleasesWhatItMakes checks that a training step releases
// every tensor it makes (ortc.API.LiveValues): after a first call, which
// may open what the executor keeps, another call leaves as many live as
// before, on the host path and on the device layer's twin, unchunked and
// in the smallest chunks; and closing the policy releases all it made. A
// step that dropped its MLP chunks' outputs once grew a run by 300 MB a
// step.
func TestExecutorReleasesWhatItMakes(t *testing.T) {
	rt, err := OpenRuntime(RuntimeOptions{Threads: 1})
	if err != nil {
		if os.Getenv("CI") == "" {
			t.Skipf("ONNX Runtime not available: %v", err)
		}
		t.Fatal(err)
	}
	defer rt.Close()
	dir := t.TempDir()
	require.NoError(t, qwen3.WriteDir(dir, qwen3.Tiny(), 3))
	b := leakBatch(2, 12)
	for _, resident := range []bool{false, true} {
		for _, opt := range []ExecutorOptions{{}, {AttentionBytes: 1, LossChunkBytes: 1, MLPBytes: 1}} {
			opened := rt.api.LiveValues()
			p, err := OpenPolicy(rt, filepath.Join(dir, "model.onnx"), t.TempDir(), PolicyOptions{Train: true, Resident: resident, Seed: 3, Executor: opt})
			require.NoError(t, err)
			var res TrainResult
			step := func() {
				p.Grads.Zero()
				require.NoError(t, p.Train.Accumulate(context.Background(), b, 1, p.Grads, &res))
			}
			step()
			live := rt.api.LiveValues()
			step()
			require.Equal(t, live, rt.api.LiveValues(), "resident %v, chunks %+v: tensors left live by a step", resident, opt)
			if resident {
				require.NoError(t, p.Train.AccumulateBatches(context.Background(), []TrainBatch{b, b}, []float32{1, 1}, p.Grads, &res, func(int) error { return nil }))
				require.Equal(t, live, rt.api.LiveValues(), "resident, chunks %+v: tensors left live by AccumulateBatches", opt)
			}
			require.NoError(t, p.Close())
			require.Equal(t, opened, rt.api.LiveValues(), "resident %v, chunks %+v: tensors left live after Close", resident, opt)
		}
	}
}

// leakBatch is rows rows of seq tokens whose second half the loss
// covers.
func leakBatch(rows, seq int) TrainBatch {
	b := TrainBatch{Batch: rows, Seq: seq, ClipLow: 0.2, ClipHigh: 0.28}
	for r := range rows {
		for t := range seq {
			b.InputIDs = append(b.InputIDs, int64(1+(7*r+3*t)%90))
			b.AttentionMask = append(b.AttentionMask, 1)
			b.PositionIDs = append(b.PositionIDs, int64(t))
			loss := float32(0)
			if t >= seq/2 && t < seq-1 {
				loss = 1
			}
			b.LossMask = append(b.LossMask, loss)
			b.Advantages = append(b.Advantages, 1)
		}
	}
	return b
}
