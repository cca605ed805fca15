package rl_test

import (
	"context"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/spiral-rl/spiral/rl"
	"github.com/spiral-rl/spiral/rollout"
)

// TestOnPolicyRatioIsOne: on the first update from fresh samples the
// ratio pi/pi_old is 1 to float32 rounding: the sampler's
// PolicyLogProbs (pi_old, from the cached decode) equal the learner's
// full-sequence log-probabilities within 1e-4 (compared through
// EngineLogProbs, which Gradients measures and never trains on), for
// traces that stopped and traces cut at --max-new-tokens alike; so the
// clipped loss is -mean(A) and its gradient the detached (REINFORCE)
// one, to 1e-4 relative. (Sampled at temperature 0.8 with top-k: pi_old
// is the model's own distribution whatever the sampler draws from.)
func TestOnPolicyRatioIsOne(t *testing.T) {
	p := openTinyPolicy(t, 71)
	sc := rollout.DefaultSamplerConfig()
	sc.MaxNewTokens, sc.VocabLimit = 10, p.LM.Signature().Vocab
	// Sampling settings other than the policy's own (pi_old is the raw
	// distribution whatever the sampler draws from), and stop ids, so that
	// some traces stop and others are cut.
	sc.Temperature, sc.TopK, sc.StopIDs = 0.8, 40, []int32{1, 2, 3, 4, 5, 6, 7, 8}
	sampler, err := rollout.NewSampler(p.LM, sc)
	require.NoError(t, err)
	prompts := [][]int32{{5, 6, 7}, {8, 9}, {10, 11, 12, 13, 14}, {15, 16, 17, 18}, {3, 4}, {19, 20, 21}}
	reqs := make([]rollout.Request, len(prompts))
	for i, pr := range prompts {
		reqs[i] = rollout.Request{Prompt: pr, Seed: uint64(100 + i)}
	}
	ctx := context.Background()
	comps, _, err := sampler.Generate(ctx, reqs, nil)
	require.NoError(t, err)
	var examples []rl.Example
	tokens, advSum := 0, 0.0
	finishes := map[rollout.FinishReason]int{}
	for i, c := range comps {
		require.Len(t, c.PolicyLogProbs, len(c.Tokens))
		finishes[c.Finish]++
		a := []float32{1, -0.5, 0, 0.75, -1.5, 0}[i] // A = 0 rows too
		examples = append(examples, rl.Example{Prompt: prompts[i], Completion: c.Tokens, OldLogProbs: c.PolicyLogProbs,
			EngineLogProbs: c.PolicyLogProbs, Advantage: a})
		tokens += len(c.Tokens)
		advSum += float64(a) * float64(len(c.Tokens))
	}
	t.Logf("%d traces, %d tokens, finishes %v", len(comps), tokens, finishes)
	require.Positive(t, finishes[rollout.FinishLength], "some traces are cut at max new tokens")
	require.Positive(t, finishes[rollout.FinishStop], "some traces stop")

	opt := rl.GradientOptions{MicroBatchTokens: 24, ClipLow: 0.2, ClipHigh: 0.28}
	g := p.Weights.NewGrads()
	gs, err := rl.Gradients(ctx, p.Train, g, examples, opt)
	require.NoError(t, err)
	require.Equal(t, tokens, gs.LossTokens)
	require.Equal(t, tokens, gs.EngineTokens)
	t.Logf("max |log pi_learner - log pi_old| = %.3g (mean %.3g); loss %.7g", gs.EngineMaxDiff, gs.EngineAbsDiff, gs.Loss)
	require.Less(t, gs.EngineMaxDiff, 1e-4, "ratio 1 on fresh samples")
	require.InDelta(t, -advSum/float64(tokens), gs.Loss, 1e-4, "loss at ratio 1: -token-mean(A)")

	opt.Detached = true
	d := p.Weights.NewGrads()
	_, err = rl.Gradients(ctx, p.Train, d, examples, opt)
	require.NoError(t, err)
	require.Greater(t, d.Norm(), 0.0)
	worst, scale := 0.0, 0.0
	for i, v := range d.Flat() {
		worst = math.Max(worst, math.Abs(float64(g.Flat()[i])-float64(v)))
		scale = math.Max(scale, math.Abs(float64(v)))
	}
	t.Logf("clipped vs detached gradient: relative difference %.3g", worst/scale)
	require.Less(t, worst/scale, 1e-4)
}
