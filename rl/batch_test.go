package rl

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/spiral-rl/spiral/model"
	"github.com/spiral-rl/spiral/model/params"
)

func TestMicroBatchesLayout(t *testing.T) {
	examples := []Example{
		{Prompt: []int32{1, 2}, Completion: []int32{3}, OldLogProbs: []float32{-0.5}, Advantage: 2},
		{Prompt: []int32{4, 5, 6}, Completion: []int32{7, 8}, OldLogProbs: []float32{-1, -2}, Advantage: -1},
	}
	// 10 positions: the longest (5) fits twice, so both rows share one batch.
	bs, toks, err := MicroBatches(examples, 10, 0.2, 0.28)
	require.NoError(t, err)
	require.Len(t, bs, 1)
	require.Equal(t, []int{3}, toks)
	b := bs[0]
	require.Equal(t, 2, b.Batch)
	require.Equal(t, 5, b.Seq)
	// Longest first, right-padded.
	require.Equal(t, []int64{4, 5, 6, 7, 8, 1, 2, 3, 0, 0}, b.InputIDs)
	require.Equal(t, []int64{1, 1, 1, 1, 1, 1, 1, 1, 0, 0}, b.AttentionMask)
	require.Equal(t, []int64{0, 1, 2, 3, 4, 0, 1, 2, 0, 0}, b.PositionIDs)
	// Row 0: completion tokens 7, 8 are scored at positions 2, 3.
	// Row 1: completion token 3 is scored at position 1.
	require.Equal(t, []float32{0, 0, 1, 1, 0, 0, 1, 0, 0, 0}, b.LossMask)
	require.Equal(t, []float32{0, 0, -1, -1, 0, 0, 2, 0, 0, 0}, b.Advantages)
	require.Equal(t, []float32{0, 0, -1, -2, 0, 0, -0.5, 0, 0, 0}, b.OldLogProbs)
	require.Equal(t, float32(0.2), b.ClipLow)

	// 6 positions: one row per batch.
	bs, toks, err = MicroBatches(examples, 6, 0.2, 0.28)
	require.NoError(t, err)
	require.Len(t, bs, 2)
	require.Equal(t, []int{2, 1}, toks)
	require.Equal(t, 3, bs[1].Seq)
}

func TestMicroBatchesErrors(t *testing.T) {
	_, _, err := MicroBatches([]Example{{Completion: []int32{1}, OldLogProbs: []float32{0}}}, 10, 0, 0)
	require.ErrorContains(t, err, "empty prompt")
	_, _, err = MicroBatches([]Example{{Prompt: []int32{1}, Completion: []int32{1}}}, 10, 0, 0)
	require.ErrorContains(t, err, "1 completion tokens")
}

// constLogProbLearner gives every position the log-probability -1.
type constLogProbLearner struct{}

func (constLogProbLearner) Accumulate(_ context.Context, b model.TrainBatch, _ float32, _ *params.Store, res *model.TrainResult) error {
	res.LogProbs = make([]float32, b.Batch*b.Seq)
	res.Entropy = make([]float32, b.Batch*b.Seq)
	for i := range res.LogProbs {
		res.LogProbs[i] = -1
	}
	return nil
}

// TestGradientsEngineLogProbs: the engine's log-probabilities are
// compared with the learner's at the tokens that have them (hand-computed
// differences), wherever the micro-batching puts their rows.
func TestGradientsEngineLogProbs(t *testing.T) {
	w, err := params.NewStore([]params.Spec{{Name: "w", Shape: []int64{1}}})
	require.NoError(t, err)
	examples := []Example{
		{Prompt: []int32{1, 2}, Completion: []int32{3, 4}, EngineLogProbs: []float32{-1.5, -0.75}, Advantage: 1},
		{Prompt: []int32{1}, Completion: []int32{3, 4, 5}, Advantage: 1}, // none: not counted
		{Prompt: []int32{1, 2, 3}, Completion: []int32{6}, EngineLogProbs: []float32{-3}, Advantage: -1},
	}
	for _, micro := range []int{0, 4} {
		g, err := Gradients(context.Background(), constLogProbLearner{}, w.NewGrads(), examples, GradientOptions{MicroBatchTokens: micro, ClipLow: 0.2, ClipHigh: 0.2, Detached: true})
		require.NoError(t, err)
		require.Equal(t, 6, g.LossTokens)
		require.Equal(t, 3, g.EngineTokens, "micro-batch tokens %d", micro)
		require.InDelta(t, (0.5+0.25+2)/3, g.EngineAbsDiff, 1e-6, "micro-batch tokens %d", micro)
		require.InDelta(t, 2, g.EngineMaxDiff, 1e-6, "micro-batch tokens %d", micro)
	}
	g, err := Gradients(context.Background(), constLogProbLearner{}, w.NewGrads(), examples[1:2], GradientOptions{Detached: true})
	require.NoError(t, err)
	require.Zero(t, g.EngineTokens)
	require.Zero(t, g.EngineAbsDiff)
}
