package model_test

import (
	"context"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/spiral-rl/spiral/model"
	"github.com/spiral-rl/spiral/model/modeltest"
	"github.com/spiral-rl/spiral/model/qwen3"
	"github.com/spiral-rl/spiral/rl"
)

// TestExportWithoutPositionIDs trains and samples an export that has no
// position_ids input (positions counted from the attention mask, as
// onnxruntime-genai layouts expect): artifacts build, the training step
// runs, and its log-probabilities and gradients equal those of the same
// weights with position_ids fed (right-padded rows count from 0 either
// way).
func TestExportWithoutPositionIDs(t *testing.T) {
	rt := modeltest.Runtime(t)
	open := func(fromMask bool) *model.Policy {
		dir := t.TempDir()
		c := qwen3.Tiny()
		c.PositionsFromMask = fromMask
		require.NoError(t, qwen3.WriteDir(dir, c, 17))
		p, err := model.OpenPolicy(context.Background(), rt, filepath.Join(dir, "model.onnx"), filepath.Join(dir, "artifacts"), model.PolicyOptions{Train: true})
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, p.Close()) })
		return p
	}
	with, without := open(false), open(true)
	require.False(t, without.Artifacts.Manifest.HasPositionIDs)
	require.True(t, with.Artifacts.Manifest.HasPositionIDs)
	examples := randomSamples(rand.New(rand.NewPCG(17, 3)), 4, with.LM.Signature().Vocab)
	bs, _, err := rl.MicroBatches(examples, 0, 0.2, 0.28)
	require.NoError(t, err)
	var a, b model.TrainResult
	require.NoError(t, with.Train.Accumulate(context.Background(), bs[0], 1, with.Grads, &a))
	require.NoError(t, without.Train.Accumulate(context.Background(), bs[0], 1, without.Grads, &b))
	for i, m := range bs[0].LossMask {
		if m != 0 { // padding positions are unspecified (their positions differ)
			require.InDelta(t, a.LogProbs[i], b.LogProbs[i], 1e-5, "position %d", i)
		}
	}
	require.Less(t, maxRelDiff(without.Grads.Flat(), with.Grads.Flat()), 1e-5)

	// Sampling: the cached forward of a left-padded batch agrees too.
	B, T, ids, mask, _ := paddedBatch() // Extend numbers positions from each row's first real token
	la := extendPadded(t, with.LM, B, T, ids, mask)
	lb := extendPadded(t, without.LM, B, T, ids, mask)
	require.InDeltaSlice(t, la, lb, 1e-5)
}
