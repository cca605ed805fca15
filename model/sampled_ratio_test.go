package model_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/spiral-rl/spiral/model"
	"github.com/spiral-rl/spiral/rl"
	"github.com/spiral-rl/spiral/rollout"
)

// TestSampledLogProbsAreTheLearnersPiOld: the log-probabilities the
// sampler records for the tokens it draws (rollout.Completion.
// PolicyLogProbs, pi_old of the PPO ratio) are those the learner's loss
// graph computes for the same tokens before any update (the raw policy:
// temperature 1, every id of the vocabulary the sampler draws from, the
// learner's ExecutorOptions.VocabLimit), whatever the sampling
// transforms, so the first update's ratio is 1. A pi_old of the sampling
// distribution (temperature-scaled, top-k/top-p renormalised), or a
// learner over a vocabulary other than the sampler's (the logits' whole
// width against the ids below VocabLimit), would be off by far more than
// float32 noise here. The learner's log-probabilities are read through
// GradientStats' engine comparison, with the recorded ones as the
// "engine's".
func TestSampledLogProbsAreTheLearnersPiOld(t *testing.T) {
	for _, cfg := range []rollout.SamplerConfig{
		{Temperature: 1, TopP: 1, MaxNewTokens: 8, BatchSize: 4},
		{Temperature: 0.6, TopK: 12, TopP: 0.9, MaxNewTokens: 8, BatchSize: 4, VocabLimit: 60},
		{Temperature: 1, TopP: 1, MaxNewTokens: 8, BatchSize: 4, VocabLimit: 60},
		{Temperature: 1.5, TopP: 1, MaxNewTokens: 8, BatchSize: 4},
	} {
		p, _ := openTrainPolicyWith(t, 41, model.ExecutorOptions{VocabLimit: cfg.VocabLimit})
		s, err := rollout.NewSampler(p.LM, cfg)
		require.NoError(t, err)
		prompts := [][]int32{{5, 9, 13, 2}, {7, 7, 81}, {3}, {60, 61, 62, 63, 64}}
		reqs := make([]rollout.Request, len(prompts))
		for i, pr := range prompts {
			reqs[i] = rollout.Request{Prompt: pr, Seed: uint64(10 + i)}
		}
		out, _, err := s.Generate(context.Background(), reqs, nil)
		require.NoError(t, err)
		s.Release()
		var examples []rl.Example
		tokens := 0
		for i, c := range out {
			examples = append(examples, rl.Example{Prompt: prompts[i], Completion: c.Tokens, OldLogProbs: c.PolicyLogProbs,
				EngineLogProbs: c.PolicyLogProbs, Advantage: 1})
			tokens += len(c.Tokens)
		}
		gs, err := rl.Gradients(context.Background(), p.Train, p.Weights.NewGrads(), examples,
			rl.GradientOptions{ClipLow: 0.2, ClipHigh: 0.28})
		require.NoError(t, err)
		require.Equal(t, tokens, gs.EngineTokens)
		t.Logf("%+v: |log pi_learner - recorded pi_old| mean %.3g, max %.3g over %d tokens", cfg, gs.EngineAbsDiff, gs.EngineMaxDiff, gs.EngineTokens)
		require.Less(t, gs.EngineMaxDiff, 1e-4, "cfg %+v: the first update's ratio differs from 1", cfg)
		// At ratio 1 with advantage 1 the clipped loss is -1 per token.
		require.InDelta(t, -1, gs.Loss, 1e-4)
	}
}
