package rl

import (
	"context"
	"fmt"

	"github.com/spiral-rl/spiral/model"
	"github.com/spiral-rl/spiral/rollout"
)

// Scorer fills b.OldLogProbs with log pi(token t+1 | ..t) at every loss
// position, computed by a forward pass of LM (a full-sequence scoring LM
// over the same weights, Policy.Scorer): the "detached copy" that makes
// the clipped loss equal cross-entropy (advantage 1) or REINFORCE (ratio 1)
// for one update. Rows are right-padded, positions counted from 0. It
// keeps its KV cache and logits buffers between calls (for a 4B model they
// are gigabytes per micro-batch).
type Scorer struct {
	LM     *model.LM
	cache  *model.KVCache
	logits []float32
}

// LogProbs fills b.OldLogProbs at b's loss positions.
func (s *Scorer) LogProbs(ctx context.Context, b *model.TrainBatch) error {
	lm := s.LM
	V := lm.Signature().Vocab
	if lm.Signature().LastLogitsOnly {
		return fmt.Errorf("rl: detached log-probabilities need full-sequence logits; use Policy.Scorer, not the sampling LM")
	}
	if s.cache == nil || !s.cache.Reshape(b.Batch, b.Seq) {
		s.cache = lm.NewKVCache(b.Batch, b.Seq)
	}
	var err error
	s.logits, err = lm.Forward(ctx, model.Step{Batch: b.Batch, Seq: b.Seq, InputIDs: b.InputIDs, AttentionMask: b.AttentionMask, PositionIDs: b.PositionIDs}, s.cache, s.logits)
	if err != nil {
		return fmt.Errorf("rl: detached log-probabilities: %w", err)
	}
	logits := s.logits
	for i, m := range b.LossMask {
		if m == 0 {
			continue
		}
		if (i+1)%b.Seq == 0 {
			return fmt.Errorf("rl: loss mask set at the last position of row %d", i/b.Seq)
		}
		row := logits[i*V : (i+1)*V]
		next := b.InputIDs[i+1]
		b.OldLogProbs[i] = float32(rollout.LogProbOf(row, int(next)))
	}
	return nil
}
