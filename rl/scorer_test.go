package rl_test

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/spiral-rl/spiral/rl"
)

// TestScorerReusesBuffers scores micro-batches of different shapes with
// one Scorer (its cache and logits buffers are reused or regrown) and
// compares each with a fresh Scorer.
func TestScorerReusesBuffers(t *testing.T) {
	p := openTinyPolicy(t, 5)
	lm := sftScorer(t, p)
	vocab := lm.Signature().Vocab
	r := rand.New(rand.NewPCG(9, 9))
	sc := rl.Scorer{LM: lm}
	for _, rowsLen := range [][2]int{{2, 10}, {3, 4}, {1, 12}, {4, 6}} {
		var samples []rl.Example
		for i := 0; i < rowsLen[0]; i++ {
			prompt := make([]int32, 2+r.IntN(max(1, rowsLen[1]-4)))
			comp := make([]int32, max(1, rowsLen[1]-len(prompt)-r.IntN(2)))
			for j := range prompt {
				prompt[j] = int32(r.IntN(vocab))
			}
			for j := range comp {
				comp[j] = int32(r.IntN(vocab))
			}
			samples = append(samples, rl.Example{Prompt: prompt, Completion: comp, OldLogProbs: make([]float32, len(comp)), Advantage: 1})
		}
		bs, _, err := rl.MicroBatches(samples, 0, 0.2, 0.28)
		require.NoError(t, err)
		for _, b := range bs {
			want := b
			want.OldLogProbs = make([]float32, len(b.OldLogProbs))
			require.NoError(t, (&rl.Scorer{LM: lm}).LogProbs(context.Background(), &want))
			got := b
			got.OldLogProbs = make([]float32, len(b.OldLogProbs))
			require.NoError(t, sc.LogProbs(context.Background(), &got))
			require.Equal(t, want.OldLogProbs, got.OldLogProbs, "shape %v", rowsLen)
			nonzero := 0
			for _, v := range got.OldLogProbs {
				if v != 0 {
					nonzero++
				}
			}
			require.Positive(t, nonzero)
		}
	}
	bs, _, err := rl.MicroBatches([]rl.Example{{Prompt: []int32{1, 2}, Completion: []int32{3}, OldLogProbs: []float32{0}}}, 0, 0.2, 0.28)
	require.NoError(t, err)
	require.ErrorContains(t, (&rl.Scorer{LM: p.LM}).LogProbs(context.Background(), &bs[0]), "full-sequence logits")
}
