package rl

import (
	"context"
	"fmt"
	"time"

	"github.com/spiral-rl/spiral/model"
	"github.com/spiral-rl/spiral/model/optim"
)

// SFTExample is a tokenized supervised pair; the loss covers Completion.
type SFTExample struct {
	Prompt, Completion []int32
}

// SFTMetrics are one supervised step's figures.
type SFTMetrics struct {
	Step int `json:"step"`
	// Loss is the token-mean cross-entropy (nats) before the update.
	Loss float64 `json:"loss"`
	// PGLoss is the policy-gradient loss the graph minimised (-1 for
	// advantage 1 and ratio 1; its gradient is the cross-entropy's).
	PGLoss   float64 `json:"pg_loss"`
	Entropy  float64 `json:"entropy"`
	GradNorm float64 `json:"grad_norm"`
	LR       float64 `json:"lr"`
	// LossTokens counts supervised tokens; TokensPerSecond counts training
	// positions (rows x length) per second.
	LossTokens      int     `json:"loss_tokens"`
	TokensPerSecond float64 `json:"tokens_per_second"`
	Seconds         float64 `json:"seconds"`
}

// SFTStep takes one supervised step on examples: cross-entropy on the
// completion tokens, written as the policy-gradient loss with advantage 1
// and old log-probabilities equal to the current ones (computed by a
// forward pass), so its gradient is exactly that of the token-mean
// negative log-likelihood. Then global-norm clipping (maxGradNorm > 0) and
// an AdamW update at the schedule's rate.
func SFTStep(ctx context.Context, p *model.Policy, opt *optim.AdamW, sched optim.Schedule, examples []SFTExample, microBatchTokens int, maxGradNorm float64) (SFTMetrics, error) {
	start := time.Now()
	m := SFTMetrics{Step: int(opt.Steps()) + 1}
	samples := make([]Sample, len(examples))
	for i, e := range examples {
		samples[i] = Sample{Prompt: e.Prompt, Completion: e.Completion, OldLogProbs: make([]float32, len(e.Completion)), Advantage: 1}
	}
	grads := p.BatchGrads()
	var scorer Scorer
	gs, err := Gradients(ctx, p.Train, p.Grads, grads, samples, GradientOptions{
		MicroBatchTokens: microBatchTokens, ClipLow: 0.2, ClipHigh: 0.28,
		Prepare: func(ctx context.Context, b *model.TrainBatch) error {
			if scorer.LM == nil {
				lm, err := p.Scorer()
				if err != nil {
					return err
				}
				scorer.LM = lm
			}
			return scorer.LogProbs(ctx, b)
		},
	})
	if err != nil {
		return m, err
	}
	if m.GradNorm, m.LR, err = applyUpdate(p.Weights, grads, opt, sched, maxGradNorm); err != nil {
		return m, fmt.Errorf("rl: sft step %d: %w", m.Step, err)
	}
	m.Loss, m.PGLoss, m.Entropy, m.LossTokens = gs.NLL, gs.Loss, gs.Entropy, gs.LossTokens
	m.Seconds = time.Since(start).Seconds()
	m.TokensPerSecond = float64(gs.Positions) / m.Seconds
	return m, nil
}
