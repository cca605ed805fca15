package model_test

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/spiral-rl/spiral/model"
	"github.com/spiral-rl/spiral/model/modeltest"
	"github.com/spiral-rl/spiral/model/params"
	"github.com/spiral-rl/spiral/rl"
)

// Clip bounds of the property tests: DAPO's clip-higher defaults.
const propClipLow, propClipHigh = 0.2, 0.28

// propRatios are the ratios pi/pi_old the property tests give the loss
// tokens, in turn: below 1-eps_low (0.5, 0.7), inside the range, at 1,
// above 1+eps_high (1.4, 2). Each is at least 0.05 from a clip bound, so
// that the finite differences below never cross one.
var propRatios = []float64{0.5, 0.7, 0.9, 1, 1.1, 1.2, 1.4, 2}

// exampleLogProbs returns log pi of each completion token of e under
// lm (scoreLogProbs on e alone).
func exampleLogProbs(t *testing.T, lm *model.LM, e rl.Example) []float64 {
	t.Helper()
	bs, _, err := rl.MicroBatches([]rl.Example{e}, 0, propClipLow, propClipHigh)
	require.NoError(t, err)
	lp := scoreLogProbs(t, lm, bs[0])
	out := make([]float64, len(e.Completion))
	for j := range out {
		out[j] = float64(lp[len(e.Prompt)-1+j])
	}
	return out
}

// refLoss is the loss of record (ARCHITECTURE.md, "Loss"), written out in
// float64 from independently scored log-probabilities: per token
// -min(r A, clip(r, 1-eps_low, 1+eps_high) A), r = exp(logp - logp_old),
// averaged over every completion token of the batch (token-mean: one
// denominator, the batch's token count, whatever the rows or the
// micro-batches).
func refLoss(t *testing.T, lm *model.LM, examples []rl.Example) float64 {
	t.Helper()
	sum, n := 0.0, 0
	for _, e := range examples {
		lp := exampleLogProbs(t, lm, e)
		a := float64(e.Advantage)
		for j, l := range lp {
			r := math.Exp(l - float64(e.OldLogProbs[j]))
			c := min(max(r, 1-propClipLow), 1+propClipHigh)
			sum -= min(r*a, c*a)
			n++
		}
	}
	return sum / float64(n)
}

// propExamples draws n examples (randomSamples) and sets their old
// log-probabilities so that the tokens' ratios under p's current weights
// cycle through propRatios; example 0 gets advantage 0, and the lengths
// differ, so that a row mean, a per-micro-batch mean and the token mean
// all disagree.
func propExamples(t *testing.T, p *model.Policy, seed uint64, n int) []rl.Example {
	t.Helper()
	ex := randomSamples(rand.New(rand.NewPCG(seed, 3)), n, p.LM.Signature().Vocab)
	ex[0].Advantage = 0
	lm := scorerOf(t, p)
	k := 0
	for i := range ex {
		for j, l := range exampleLogProbs(t, lm, ex[i]) {
			ex[i].OldLogProbs[j] = float32(l - math.Log(propRatios[k%len(propRatios)]))
			k++
		}
	}
	return ex
}

func propGradients(t *testing.T, p *model.Policy, examples []rl.Example, microTokens int) (*params.Store, rl.GradientStats) {
	t.Helper()
	g := p.Weights.NewGrads()
	gs, err := rl.Gradients(context.Background(), p.Train, g, examples,
		rl.GradientOptions{MicroBatchTokens: microTokens, ClipLow: propClipLow, ClipHigh: propClipHigh})
	require.NoError(t, err)
	return g, gs
}

// TestClippedLossGradientIsReference checks the whole training gradient
// (rl.Gradients over several micro-batches through the executor)
// against the loss of record computed here in float64 (refLoss): the
// reported loss equals it, and its directional derivatives, by central
// differences with step h = 1e-3 along u = g/|g| and along v, g on a
// random half of the coordinates (normalised), equal g.u = |g| and g.v.
// That one check covers the
// token-mean normalisation over the whole batch (not per row, not per
// micro-batch), the zero gradient of clipped tokens and of rows with
// advantage 0, the clip bounds' sides (clip-higher: 1+0.28 above, 1-0.2
// below) and the sign (descending the loss raises the probability of a
// trace with a positive advantage). Error budget as in
// TestSupervisedLossIsNLL (truncation O(h^2), float32 rounding of the
// loss ~3e-7 / 2h); no ratio comes within 0.05 of a clip bound, so the
// steps never cross a kink. Tolerance 2e-3 relative to |g|. Both loss
// paths: the table head (the tiny Qwen3) and the generic head-loss graph
// (scaledHeadModel).
func TestClippedLossGradientIsReference(t *testing.T) {
	t.Run("table head", func(t *testing.T) {
		p, _ := openTrainPolicy(t, 61)
		checkClippedLossGradient(t, p)
	})
	t.Run("generic head", func(t *testing.T) {
		p, err := model.OpenPolicy(context.Background(), modeltest.Runtime(t), scaledHeadModel(t), t.TempDir(), model.PolicyOptions{Train: true})
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, p.Close()) })
		checkClippedLossGradient(t, p)
	})
}

func checkClippedLossGradient(t *testing.T, p *model.Policy) {
	examples := propExamples(t, p, 61, 7)
	longest := 0
	for _, e := range examples {
		longest = max(longest, e.Len())
	}
	bs, _, err := rl.MicroBatches(examples, 2*longest, propClipLow, propClipHigh)
	require.NoError(t, err)
	require.Greater(t, len(bs), 2, "several micro-batches")
	g, gs := propGradients(t, p, examples, 2*longest)
	lm := scorerOf(t, p)
	require.InDelta(t, refLoss(t, lm, examples), gs.Loss, 1e-5, "loss")

	norm := g.Norm()
	require.Greater(t, norm, 0.0)
	w := p.Weights.Flat()
	orig := append([]float32(nil), w...)
	defer copy(w, orig)
	gf := g.Flat()
	// v: g on a random half of the coordinates, 0 elsewhere, normalised;
	// g.v = |g restricted to that half|.
	r := rand.New(rand.NewPCG(61, 9))
	v := make([]float64, len(gf))
	vn := 0.0
	for i := range v {
		if r.IntN(2) == 0 {
			v[i] = float64(gf[i])
			vn += v[i] * v[i]
		}
	}
	gv := math.Sqrt(vn)
	for i := range v {
		v[i] /= gv
	}
	const h = 1e-3
	deriv := func(dir func(i int) float64) float64 {
		at := func(s float64) float64 {
			for i := range w {
				w[i] = orig[i] + float32(s*h*dir(i))
			}
			return refLoss(t, lm, examples)
		}
		return (at(1) - at(-1)) / (2 * h)
	}
	du := deriv(func(i int) float64 { return float64(gf[i]) / norm })
	dv := deriv(func(i int) float64 { return v[i] })
	t.Logf("|g| = %.6g, D_u loss = %.6g; g.v = %.6g, D_v loss = %.6g", norm, du, gv, dv)
	require.InEpsilon(t, norm, du, 2e-3, "derivative along g/|g|")
	require.InEpsilon(t, gv, dv, 2e-3, "derivative along g on half the coordinates")
}

// TestGradientInvariantToCutOrderAndPadding: the batch gradient, loss
// and entropy do not depend on how the examples are cut into
// micro-batches (one row a call, a few, ragged, all in one), on their
// order (rows of equal length trade places between micro-batches), or
// on padding (a micro-batch padded with extra positions holding junk
// tokens, advantages and old log-probabilities outside the loss mask).
// Tolerance: 1e-5 of the largest entry (float32 summation order).
func TestGradientInvariantToCutOrderAndPadding(t *testing.T) {
	p, _ := openTrainPolicy(t, 62)
	examples := propExamples(t, p, 62, 9)
	longest := 0
	for _, e := range examples {
		longest = max(longest, e.Len())
	}
	whole, ws := propGradients(t, p, examples, 0)
	require.Greater(t, whole.Norm(), 0.0)
	same := func(what string, g *params.Store, gs rl.GradientStats) {
		t.Helper()
		rel := relErr(g.Flat(), whole.Flat())
		require.Less(t, rel, 1e-5, "%s: gradient (relative error %.3g)", what, rel)
		require.Equal(t, ws.LossTokens, gs.LossTokens, what)
		require.InDelta(t, ws.Loss, gs.Loss, 1e-6, "%s: loss", what)
		require.InDelta(t, ws.Entropy, gs.Entropy, 1e-6*ws.Entropy, "%s: entropy", what)
	}
	r := rand.New(rand.NewPCG(62, 4))
	for _, micro := range []int{1, longest, 2 * longest, 3*longest + 1} {
		g, gs := propGradients(t, p, examples, micro)
		same("cut", g, gs)
		shuffled := append([]rl.Example(nil), examples...)
		r.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		g, gs = propGradients(t, p, shuffled, micro)
		same("shuffled", g, gs)
	}

	// Padding, on the executor directly: the one-batch layout, then the
	// same rows 5 positions longer.
	bs, tokens, err := rl.MicroBatches(examples, 0, propClipLow, propClipHigh)
	require.NoError(t, err)
	require.Len(t, bs, 1)
	b, T := bs[0], bs[0].Seq
	const extra = 5
	pb := model.TrainBatch{Batch: b.Batch, Seq: T + extra, ClipLow: b.ClipLow, ClipHigh: b.ClipHigh}
	n := b.Batch * (T + extra)
	pb.InputIDs, pb.AttentionMask, pb.PositionIDs = make([]int64, n), make([]int64, n), make([]int64, n)
	pb.LossMask, pb.Advantages, pb.OldLogProbs = make([]float32, n), make([]float32, n), make([]float32, n)
	V := p.LM.Signature().Vocab
	for row := range b.Batch {
		for c := range T + extra {
			i := row*(T+extra) + c
			if c < T && b.AttentionMask[row*T+c] == 1 {
				j := row*T + c
				pb.InputIDs[i], pb.AttentionMask[i], pb.PositionIDs[i] = b.InputIDs[j], 1, b.PositionIDs[j]
				pb.LossMask[i], pb.Advantages[i], pb.OldLogProbs[i] = b.LossMask[j], b.Advantages[j], b.OldLogProbs[j]
				continue
			}
			// Junk outside the rows' ends: only the masks say it is padding.
			pb.InputIDs[i] = int64(1 + r.IntN(V-1))
			pb.Advantages[i] = float32(r.NormFloat64())
			pb.OldLogProbs[i] = float32(r.NormFloat64())
		}
	}
	ctx := context.Background()
	g0, g1 := p.Weights.NewGrads(), p.Weights.NewGrads()
	var r0, r1 model.TrainResult
	require.NoError(t, p.Train.Accumulate(ctx, b, 1, g0, &r0))
	require.NoError(t, p.Train.Accumulate(ctx, pb, 1, g1, &r1))
	rel := relErr(g1.Flat(), g0.Flat())
	t.Logf("%d loss tokens; padded vs unpadded: gradient relative error %.3g, loss %.7g vs %.7g", tokens[0], rel, r1.Loss, r0.Loss)
	require.Less(t, rel, 1e-5, "padding: gradient")
	require.InDelta(t, r0.Loss, r1.Loss, 1e-6, "padding: loss")
	require.Less(t, relErr(g0.Flat(), whole.Flat()), 1e-5, "the executor's one-batch gradient is rl.Gradients'")
}

// TestClippedAndZeroAdvantageTokensCount: tokens whose ratio is clipped
// on the side the advantage pushes (A > 0 above 1+eps_high, A < 0 below
// 1-eps_low) and rows with advantage 0 add nothing to the gradient, yet
// count in the token-mean's denominator (DAPO's token-level mean over
// every response token of the batch): with such a row X of n_X tokens
// added to a batch S of N_S tokens, grad(S + X) (N_S + n_X) = grad(S) N_S.
// Tokens clipped on the other side (A > 0 below 1-eps_low) do pull:
// min() keeps the unclipped term there, so adding them changes the
// gradient's direction.
func TestClippedAndZeroAdvantageTokensCount(t *testing.T) {
	p, _ := openTrainPolicy(t, 63)
	base := propExamples(t, p, 63, 5)
	lm := scorerOf(t, p)
	extra0 := randomSamples(rand.New(rand.NewPCG(63, 5)), 1, p.LM.Signature().Vocab)[0]
	lp := exampleLogProbs(t, lm, extra0)
	// withRatio is extra0 with every token at ratio r and advantage a.
	withRatio := func(r, a float64) rl.Example {
		e := extra0
		e.Advantage = float32(a)
		e.OldLogProbs = make([]float32, len(lp))
		for j, l := range lp {
			e.OldLogProbs[j] = float32(l - math.Log(r))
		}
		return e
	}
	ns := 0
	for _, e := range base {
		ns += len(e.Completion)
	}
	nx := len(extra0.Completion)
	gS, _ := propGradients(t, p, base, 0)
	want := gS.Flat()
	for i := range want {
		want[i] *= float32(float64(ns) / float64(ns+nx))
	}
	for _, tc := range []struct {
		name  string
		r, a  float64
		still bool // whether the row adds nothing to the gradient
	}{
		{"A>0, ratio above 1+eps_high", 1.5, 1.3, true},
		{"A<0, ratio below 1-eps_low", 0.6, -0.7, true},
		{"A=0, ratio 1", 1, 0, true},
		{"A=0, ratio clipped", 2, 0, true},
		{"A>0, ratio below 1-eps_low", 0.6, 1.3, false},
		{"A<0, ratio above 1+eps_high", 1.5, -0.7, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ex := append(append([]rl.Example(nil), base...), withRatio(tc.r, tc.a))
			g, gs := propGradients(t, p, ex, 0)
			require.Equal(t, ns+nx, gs.LossTokens)
			rel := relErr(g.Flat(), want)
			t.Logf("relative difference from grad(S) N_S / (N_S + n_X): %.3g", rel)
			if tc.still {
				require.Less(t, rel, 1e-5)
			} else {
				require.Greater(t, rel, 1e-2)
			}
		})
	}
}
