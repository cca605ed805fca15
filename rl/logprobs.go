package rl

import (
	"context"
	"fmt"
	"math"

	"github.com/spiral-rl/spiral/model"
)

// DetachedLogProbs fills b.OldLogProbs with log pi(token t+1 | ..t) at
// every loss position, computed by a forward pass of lm (the rollout graph
// over the same weights): the "detached copy" that makes the clipped loss
// equal cross-entropy (advantage 1) or REINFORCE (ratio 1) for one update.
// b's rows are right-padded, positions counted from 0.
func DetachedLogProbs(ctx context.Context, lm *model.LM, b *model.TrainBatch) error {
	V := lm.Signature().Vocab
	if lm.Signature().LastLogitsOnly {
		return fmt.Errorf("rl: detached log-probabilities need full-sequence logits; use Policy.Scorer, not the sampling LM")
	}
	cache := lm.NewKVCache(b.Batch, b.Seq)
	logits, err := lm.Forward(ctx, model.Step{Batch: b.Batch, Seq: b.Seq, InputIDs: b.InputIDs, AttentionMask: b.AttentionMask, PositionIDs: b.PositionIDs}, cache, nil)
	if err != nil {
		return fmt.Errorf("rl: detached log-probabilities: %w", err)
	}
	for i, m := range b.LossMask {
		if m == 0 {
			continue
		}
		if (i+1)%b.Seq == 0 {
			return fmt.Errorf("rl: loss mask set at the last position of row %d", i/b.Seq)
		}
		row := logits[i*V : (i+1)*V]
		next := b.InputIDs[i+1]
		b.OldLogProbs[i] = float32(logSoftmaxAt(row, int(next)))
	}
	return nil
}

// logSoftmaxAt returns log softmax(row)[k] computed stably in float64.
func logSoftmaxAt(row []float32, k int) float64 {
	maxv := math.Inf(-1)
	for _, v := range row {
		maxv = math.Max(maxv, float64(v))
	}
	sum := 0.0
	for _, v := range row {
		sum += math.Exp(float64(v) - maxv)
	}
	return float64(row[k]) - maxv - math.Log(sum)
}
