package rl

import (
	"testing"

	"github.com/stretchr/testify/require"
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
