package rl

import (
	"context"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/spiral-rl/spiral/model"
	"github.com/spiral-rl/spiral/model/optim"
	"github.com/spiral-rl/spiral/model/params"
)

// TestApplyUpdateClipsGlobalNorm: --max-grad-norm scales the whole
// gradient (every tensor by one factor, maxNorm / (norm + 1e-6), as
// torch.nn.utils.clip_grad_norm_) when its global norm exceeds the
// bound, leaves it alone otherwise or when the bound is <= 0, and
// reports the norm before clipping; AdamW then steps on the clipped
// gradient (its first moment, (1-beta1) g after one step, shows which)
// and counts one step.
func TestApplyUpdateClipsGlobalNorm(t *testing.T) {
	for _, tc := range []struct {
		maxNorm, factor float64
	}{
		{1, 1 / (13 + params.ClipEpsilon)},
		{6.5, 6.5 / (13 + params.ClipEpsilon)},
		{20, 1},
		{13, 1},
		{0, 1},
		{-1, 1},
	} {
		w, err := params.NewStore([]params.Spec{{Name: "a", Shape: []int64{2}}, {Name: "b", Shape: []int64{2}}})
		require.NoError(t, err)
		g := w.NewGrads()
		raw := []float32{3, 4, 0, -12} // global norm 13, no tensor's alone
		copy(g.Flat(), raw)
		opt, err := optim.NewAdamW(optim.DefaultConfig(), w)
		require.NoError(t, err)
		u, err := applyUpdate(w, g, opt, optim.Schedule{PeakLR: 0.01}, tc.maxNorm)
		require.NoError(t, err)
		require.Empty(t, u.skipped)
		require.InDelta(t, 13, u.norm, 1e-12, "max norm %v: the norm before clipping", tc.maxNorm)
		require.Equal(t, 0.01, u.lr)
		require.EqualValues(t, 1, opt.Steps())
		for i, r := range raw {
			want := float64(r) * tc.factor
			require.InDelta(t, want, g.Flat()[i], 1e-6, "max norm %v: clipped gradient %d", tc.maxNorm, i)
			require.InDelta(t, (1-optim.DefaultBeta1)*want, opt.ExpAvg().Flat()[i], 1e-6, "max norm %v: first moment %d", tc.maxNorm, i)
		}
	}
}

// switchLearner is trainerFakeLearner (a gradient of ones) whose
// gradients come out NaN while nan is set.
type switchLearner struct {
	trainerFakeLearner
	nan bool
}

func (l *switchLearner) Accumulate(ctx context.Context, b model.TrainBatch, scale float32, grads *params.Store, res *model.TrainResult) error {
	err := l.trainerFakeLearner.Accumulate(ctx, b, scale, grads, res)
	if l.nan {
		for i := range grads.Flat() {
			grads.Flat()[i] = float32(math.NaN())
		}
	}
	return err
}

// TestSkippedStepKeepsOptimizerState: a step skipped for a NaN gradient
// leaves the weights, both AdamW moments and AdamW's step count as they
// were (no rate is reported for it), so that the steps around it give
// exactly what the same good steps give without it: the bias correction
// of the next update uses t = 2, and the schedule's index is 1.
func TestSkippedStepKeepsOptimizerState(t *testing.T) {
	cfg, parts := hardTrainer(t, 0.5)
	parts.Schedule = optim.Schedule{PeakLR: 0.1, WarmupSteps: 4}
	learner := &switchLearner{}
	parts.Learner = learner
	tr, err := NewTrainer(cfg, parts)
	require.NoError(t, err)
	ctx := context.Background()
	snapshot := func() [3][]float32 {
		return [3][]float32{append([]float32(nil), parts.Weights.Flat()...), append([]float32(nil), parts.Optimizer.ExpAvg().Flat()...),
			append([]float32(nil), parts.Optimizer.ExpAvgSq().Flat()...)}
	}
	m1, err := tr.TrainStep(ctx, nil)
	require.NoError(t, err)
	require.False(t, m1.NoUpdate)
	require.Empty(t, m1.UpdateSkipped)
	before := snapshot()
	require.NotZero(t, before[1][0], "the first step moved the moments")
	learner.nan = true
	m2, err := tr.TrainStep(ctx, nil)
	require.NoError(t, err)
	require.Equal(t, "gradient norm is NaN", m2.UpdateSkipped)
	require.Zero(t, m2.LR)
	require.Equal(t, before, snapshot(), "weights and moments after a skipped step")
	require.EqualValues(t, 1, parts.Optimizer.Steps())
	require.Equal(t, 2, tr.Step(), "the skipped step counts as a step")
	learner.nan = false
	m3, err := tr.TrainStep(ctx, nil)
	require.NoError(t, err)
	require.False(t, m3.NoUpdate)
	require.Empty(t, m3.UpdateSkipped)
	require.EqualValues(t, 2, parts.Optimizer.Steps())

	refCfg, ref := hardTrainer(t, 0.5)
	ref.Schedule = parts.Schedule
	rt, err := NewTrainer(refCfg, ref)
	require.NoError(t, err)
	var r2 Metrics
	for range 2 {
		r2, err = rt.TrainStep(ctx, nil)
		require.NoError(t, err)
	}
	require.Equal(t, r2.LR, m3.LR, "the schedule's rate of the second update")
	require.Equal(t, [3][]float32{ref.Weights.Flat(), ref.Optimizer.ExpAvg().Flat(), ref.Optimizer.ExpAvgSq().Flat()}, snapshot(),
		"two good steps around a skipped one = two good steps")
}

// statsLearner reports, at each loss position, the entropy id/10 and
// the log-probability -id/100 of the token the position scores (junk
// elsewhere), and as its loss minus the mean advantage of its loss
// tokens (the ratio-1 loss of a token-mean learner).
type statsLearner struct{}

func (statsLearner) Accumulate(_ context.Context, b model.TrainBatch, _ float32, _ *params.Store, res *model.TrainResult) error {
	n := b.Batch * b.Seq
	res.LogProbs, res.Entropy = make([]float32, n), make([]float32, n)
	sum, count := 0.0, 0.0
	for i := range n {
		res.LogProbs[i], res.Entropy[i] = 99, 99
		if b.LossMask[i] != 0 {
			id := float32(b.InputIDs[i+1])
			res.Entropy[i], res.LogProbs[i] = id/10, -id/100
			sum += float64(b.Advantages[i])
			count++
		}
	}
	res.Loss = float32(-sum / count)
	return nil
}

// TestGradientStatsAreTokenMeans: the loss, entropy and NLL that
// Gradients reports (the metrics' loss and entropy) are means over the
// batch's loss tokens, the completion tokens, whatever the
// micro-batching: not over rows, micro-batches, prompts or padding.
func TestGradientStatsAreTokenMeans(t *testing.T) {
	examples := []Example{
		{Prompt: []int32{1, 2, 3}, Completion: []int32{10, 20}, Advantage: 1},
		{Prompt: []int32{4}, Completion: []int32{30, 40, 50, 60, 70}, Advantage: -0.5},
		{Prompt: []int32{5, 6}, Completion: []int32{80}, Advantage: 2},
		{Prompt: []int32{7, 8, 9, 11, 12, 13}, Completion: []int32{90, 15, 25}, Advantage: 0},
	}
	N, advSum, idSum := 0, 0.0, 0.0
	for _, e := range examples {
		for _, id := range e.Completion {
			N++
			advSum += float64(e.Advantage)
			idSum += float64(id)
		}
	}
	for _, micro := range []int{0, 1, 6, 9} {
		gs, err := Gradients(context.Background(), statsLearner{}, nil, examples, GradientOptions{MicroBatchTokens: micro, Detached: true})
		require.NoError(t, err)
		require.Equal(t, N, gs.LossTokens, "micro %d", micro)
		require.InDelta(t, -advSum/float64(N), gs.Loss, 1e-6, "micro %d: loss", micro)
		require.InDelta(t, idSum/10/float64(N), gs.Entropy, 1e-5, "micro %d: entropy", micro)
		require.InDelta(t, idSum/100/float64(N), gs.NLL, 1e-6, "micro %d: NLL", micro)
	}
}
