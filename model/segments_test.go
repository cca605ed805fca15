package model_test

import (
	"context"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/spiral-rl/spiral/model"
	"github.com/spiral-rl/spiral/model/modeltest"
	"github.com/spiral-rl/spiral/rl"
)

// sharedPromptRows returns completions of one prompt as separate rows
// (right-padded) and as one packed row (TrainBatch.Segments): the
// prompt but its last token, then for each completion that token again
// followed by the completion, its positions going on from the prompt's.
// Both batches put the loss on every completion token, with completion
// j's advantage and old log-probabilities.
func sharedPromptRows(prompt []int64, comps [][]int64, adv []float32, old [][]float32) (rows, packed model.TrainBatch) {
	P := len(prompt)
	T := 0
	for _, c := range comps {
		T = max(T, P+len(c))
	}
	B := len(comps)
	rows = model.TrainBatch{Batch: B, Seq: T, ClipLow: 0.2, ClipHigh: 0.28,
		InputIDs: make([]int64, B*T), AttentionMask: make([]int64, B*T), PositionIDs: make([]int64, B*T),
		LossMask: make([]float32, B*T), Advantages: make([]float32, B*T), OldLogProbs: make([]float32, B*T)}
	for r, c := range comps {
		seq := append(append([]int64(nil), prompt...), c...)
		for t, id := range seq {
			i := r*T + t
			rows.InputIDs[i], rows.AttentionMask[i], rows.PositionIDs[i] = id, 1, int64(t)
		}
		for j := range c {
			i := r*T + P - 1 + j
			rows.LossMask[i], rows.Advantages[i], rows.OldLogProbs[i] = 1, adv[r], old[r][j]
		}
	}
	var ids, pos, seg []int64
	var mask, advs, olds []float32
	push := func(id, p, s int64, m, a, o float32) {
		ids, pos, seg = append(ids, id), append(pos, p), append(seg, s)
		mask, advs, olds = append(mask, m), append(advs, a), append(olds, o)
	}
	for t, id := range prompt[:P-1] {
		push(id, int64(t), 0, 0, 0, 0)
	}
	for r, c := range comps {
		seq := append([]int64{prompt[P-1]}, c...)
		for t, id := range seq {
			if t < len(c) {
				push(id, int64(P-1+t), int64(r+1), 1, adv[r], old[r][t])
			} else {
				push(id, int64(P-1+t), int64(r+1), 0, 0, 0)
			}
		}
	}
	n := len(ids)
	am := make([]int64, n)
	for i := range am {
		am[i] = 1
	}
	packed = model.TrainBatch{Batch: 1, Seq: n, ClipLow: 0.2, ClipHigh: 0.28, InputIDs: ids, AttentionMask: am,
		PositionIDs: pos, Segments: seg, LossMask: mask, Advantages: advs, OldLogProbs: olds}
	return rows, packed
}

// TestPackedRowsMatchSeparateRows: completions of one prompt packed in
// one row (the prompt computed once, each completion seeing it and
// itself) give the gradient, loss, log-probabilities and entropies of
// the same completions as separate rows, on every export the executor
// is tested on, on the host and on the device layer's CPU twin; an
// export without position_ids, whose positions cannot restart, says so.
func TestPackedRowsMatchSeparateRows(t *testing.T) {
	onTrainTwins(t, func(t *testing.T, name string, p *model.Policy) {
		if err := p.Train.PackedRows(); err != nil {
			require.Equal(t, "tiny-nopos", name, "only the export without position_ids cannot pack: %v", err)
			require.ErrorContains(t, err, "position_ids")
			return
		}
		vocab := p.LM.Signature().Vocab
		r := rand.New(rand.NewPCG(5, 9))
		draw := func(n int) []int64 { return randomIDs64(r, n, vocab) }
		prompt := draw(9)
		comps := [][]int64{draw(4), draw(7), draw(3)}
		adv := []float32{1.3, -0.7, 0.4}
		var old [][]float32
		for _, c := range comps {
			o := make([]float32, len(c))
			for j := range o {
				o[j] = float32(-math.Log(float64(vocab)) + 0.5*r.NormFloat64())
			}
			old = append(old, o)
		}
		rows, packed := sharedPromptRows(prompt, comps, adv, old)
		run := func(b model.TrainBatch) ([]float32, model.TrainResult) {
			g := p.Weights.NewGrads()
			var res model.TrainResult
			require.NoError(t, p.Train.Accumulate(context.Background(), b, 1, g, &res))
			return g.Flat(), res
		}
		gRows, rRows := run(rows)
		gPacked, rPacked := run(packed)
		rel := maxRelDiff(gPacked, gRows)
		t.Logf("packed %d positions against %d x %d: gradient relative difference %.3g, loss %.7g vs %.7g",
			packed.Seq, rows.Batch, rows.Seq, rel, rPacked.Loss, rRows.Loss)
		require.Less(t, rel, 1e-5)
		require.InDelta(t, rRows.Loss, rPacked.Loss, 1e-6*math.Max(1, math.Abs(float64(rRows.Loss))))
		// The per-token outputs at the loss positions, in order.
		at := func(b model.TrainBatch, x []float32) []float32 {
			var out []float32
			for i, m := range b.LossMask {
				if m != 0 {
					out = append(out, x[i])
				}
			}
			return out
		}
		require.InDeltaSlice(t, at(rows, rRows.LogProbs), at(packed, rPacked.LogProbs), 1e-5)
		require.InDeltaSlice(t, at(rows, rRows.Entropy), at(packed, rPacked.Entropy), 1e-5)

		// Without the segments the branches see each other: the
		// same packed row then gives another gradient, so the
		// test above can fail.
		unsegmented := packed
		unsegmented.Segments = nil
		gSeen, _ := run(unsegmented)
		require.Greater(t, maxRelDiff(gSeen, gRows), 1e-3)
	})
}

// onTrainTwins runs check on the training policy of every export the
// executor is tested on (trainCases), on the host and on the device
// layer's twin, each a subtest.
func onTrainTwins(t *testing.T, check func(t *testing.T, name string, p *model.Policy)) {
	rt := modeltest.Runtime(t)
	for name, tc := range trainCases(t) {
		for _, resident := range []bool{false, true} {
			t.Run(name+map[bool]string{false: "/host", true: "/resident"}[resident], func(t *testing.T) {
				p, _ := openTrainTwin(t, rt, tc, model.ExecutorOptions{}, resident)
				defer p.Close()
				check(t, name, p)
			})
		}
	}
}

// randomIDs64 is randomIDs as a TrainBatch holds them.
func randomIDs64(r *rand.Rand, n, vocab int) []int64 {
	var s []int64
	for _, id := range randomIDs(r, n, vocab) {
		s = append(s, int64(id))
	}
	return s
}

// TestLossMaskRefused: a loss mask that is not a finite weight >= 0, or
// set where the next token is padding or past the row, is refused naming
// the position: such a position would train on no token, or scale the
// loss by NaN.
func TestLossMaskRefused(t *testing.T) {
	p, _ := openTrainPolicy(t, 5)
	for _, c := range []struct {
		name string
		edit func(b *model.TrainBatch)
		want string
	}{
		{"negative", func(b *model.TrainBatch) { b.LossMask[2] = -1 }, "loss_mask[0][2] = -1: want a finite weight >= 0"},
		{"NaN", func(b *model.TrainBatch) { b.LossMask[2] = float32(math.NaN()) }, "loss_mask[0][2] = NaN"},
		{"infinite", func(b *model.TrainBatch) { b.LossMask[2] = float32(math.Inf(1)) }, "loss_mask[0][2] = +Inf"},
		{"last position", func(b *model.TrainBatch) { b.LossMask[7] = 1 }, "loss mask set at the last position of row 0"},
		{"next token padding", func(b *model.TrainBatch) { b.AttentionMask[6], b.AttentionMask[7], b.LossMask[5] = 0, 0, 1 },
			"loss mask set at position 5 of row 0, whose next token is padding"},
	} {
		b := model.RandomTrainBatch(1, 8, p.LM.Signature().Vocab, 1)
		clear(b.LossMask)
		c.edit(&b)
		err := p.Train.Accumulate(context.Background(), b, 1, p.Weights.NewGrads(), &model.TrainResult{})
		require.ErrorContains(t, err, c.want, c.name)
	}
}

// randomIDs draws n token ids from [1, vocab).
func randomIDs(r *rand.Rand, n, vocab int) []int32 {
	s := make([]int32, n)
	for i := range s {
		s[i] = int32(1 + r.IntN(vocab-1))
	}
	return s
}

// TestPackedRowsRefused: segments of the wrong length, or negative, are
// refused naming the field.
func TestPackedRowsRefused(t *testing.T) {
	p, _ := openTrainPolicy(t, 5)
	b := model.RandomTrainBatch(1, 8, p.LM.Signature().Vocab, 1)
	b.Segments = make([]int64, 7)
	err := p.Train.Accumulate(context.Background(), b, 1, p.Weights.NewGrads(), &model.TrainResult{})
	require.ErrorContains(t, err, "segments has 7 values, want 1 x 8")
	b.Segments = make([]int64, 8)
	b.Segments[3] = -1
	err = p.Train.Accumulate(context.Background(), b, 1, p.Weights.NewGrads(), &model.TrainResult{})
	require.Error(t, err)
	require.True(t, strings.Contains(err.Error(), "segments[0][3] = -1"), err.Error())
}

// TestGradientsPackPrompts: rl.Gradients with PackPrompts, on examples
// whose long prompts each have several short completions (an
// aggregation step's shape) beside examples of prompts of their own,
// gives the gradient and statistics of the examples unpacked, over
// fewer positions, whatever the micro-batch cuts (micro-batches of
// packed and unpacked rows together), on every export the executor is
// tested on, on the host and on the device layer's twin.
func TestGradientsPackPrompts(t *testing.T) {
	onTrainTwins(t, func(t *testing.T, _ string, p *model.Policy) { checkGradientsPackPrompts(t, p) })
}

// TestGradientsPackSplitGroup: a group of completions too many to be
// worth packing in one row (sixteen 16-token completions of a 48-token
// prompt: 64 positions each apart, 1,024 in all) is packed in the rows
// that cost fewest positions, 6 + 5 + 5 members (149, 132 and 132
// positions, one call padded to 3 x 149 = 447), or under 140 tokens a
// call 4 + 4 + 4 + 4 (115 each, a call each: 460), with the gradient
// and statistics of the rows apart, on every export the executor is
// tested on (one that cannot pack trains them apart), on the host and
// on the device layer's twin. It trained the sixteen apart.
func TestGradientsPackSplitGroup(t *testing.T) {
	onTrainTwins(t, func(t *testing.T, _ string, p *model.Policy) {
		vocab := p.LM.Signature().Vocab
		r := rand.New(rand.NewPCG(43, 1))
		prompt := randomIDs(r, 48, vocab)
		var examples []rl.Example
		for range 16 {
			e := rl.Example{Prompt: prompt, Completion: randomIDs(r, 16, vocab), Advantage: float32(r.NormFloat64())}
			for range e.Completion {
				e.OldLogProbs = append(e.OldLogProbs, float32(-math.Log(float64(vocab))+0.5*r.NormFloat64()))
			}
			examples = append(examples, e)
		}
		grads := func(pack bool, microTokens int) ([]float32, rl.GradientStats) {
			g := p.Weights.NewGrads()
			gs, err := rl.Gradients(context.Background(), p.Train, g, examples,
				rl.GradientOptions{MicroBatchTokens: microTokens, ClipLow: 0.2, ClipHigh: 0.28, PackPrompts: pack})
			require.NoError(t, err)
			return g.Flat(), gs
		}
		want, wantStats := grads(false, 0)
		require.Equal(t, 1024, wantStats.Positions)
		for _, c := range []struct{ micro, positions int }{{0, 447}, {16384, 447}, {140, 460}} {
			got, gs := grads(true, c.micro)
			rel := maxRelDiff(got, want)
			t.Logf("micro-batch tokens %d: %d positions packed against %d; gradient relative difference %.3g", c.micro, gs.Positions, wantStats.Positions, rel)
			require.Less(t, rel, 1e-5)
			require.Equal(t, wantStats.LossTokens, gs.LossTokens)
			require.InDelta(t, wantStats.Loss, gs.Loss, 1e-6*math.Max(1, math.Abs(wantStats.Loss)))
			require.InDelta(t, wantStats.Entropy, gs.Entropy, 1e-5*wantStats.Entropy)
			require.InDelta(t, wantStats.NLL, gs.NLL, 1e-5*wantStats.NLL)
			if p.Train.PackedRows() == nil {
				require.Equal(t, c.positions, gs.Positions, "micro-batch tokens %d", c.micro)
			} else {
				require.Equal(t, 1024, gs.Positions, "micro-batch tokens %d", c.micro)
			}
		}
	})
}

func checkGradientsPackPrompts(t *testing.T, p *model.Policy) {
	vocab := p.LM.Signature().Vocab
	r := rand.New(rand.NewPCG(41, 1))
	draw := func(n int) []int32 { return randomIDs(r, n, vocab) }
	var examples []rl.Example
	add := func(prompt []int32, n int) {
		c := draw(n)
		e := rl.Example{Prompt: prompt, Completion: c, Advantage: float32(r.NormFloat64())}
		for range c {
			e.OldLogProbs = append(e.OldLogProbs, float32(-math.Log(float64(vocab))+0.5*r.NormFloat64()))
		}
		examples = append(examples, e)
	}
	for range 3 {
		prompt := draw(30 + r.IntN(10))
		for range 4 {
			add(prompt, 3+r.IntN(6))
		}
		add(draw(4), 5)
	}
	grads := func(pack bool, microTokens int) ([]float32, rl.GradientStats) {
		g := p.Weights.NewGrads()
		gs, err := rl.Gradients(context.Background(), p.Train, g, examples,
			rl.GradientOptions{MicroBatchTokens: microTokens, ClipLow: 0.2, ClipHigh: 0.28, PackPrompts: pack})
		require.NoError(t, err)
		return g.Flat(), gs
	}
	want, wantStats := grads(false, 0)
	for _, micro := range []int{0, 60, 50, 1} {
		got, gs := grads(true, micro)
		rel := maxRelDiff(got, want)
		t.Logf("micro-batch tokens %d: %d positions packed against %d; gradient relative difference %.3g", micro, gs.Positions, wantStats.Positions, rel)
		require.Less(t, rel, 1e-5)
		require.Equal(t, wantStats.LossTokens, gs.LossTokens)
		require.InDelta(t, wantStats.Loss, gs.Loss, 1e-6*math.Max(1, math.Abs(wantStats.Loss)))
		require.InDelta(t, wantStats.Entropy, gs.Entropy, 1e-5*wantStats.Entropy)
		require.InDelta(t, wantStats.NLL, gs.NLL, 1e-5*wantStats.NLL)
		if micro == 0 && p.Train.PackedRows() == nil {
			require.Less(t, gs.Positions, wantStats.Positions*2/3, "the prompts are computed once")
		}
	}
}

// TestGradientsLeastPadding: rows of 16, 12, 12, 4, 4 and 4 positions
// under 36 tokens a call train in the three calls that pad the fewest
// positions, 16 | 12 + 12 | 4 + 4 + 4 (52 positions; taken greedily,
// 16 + 12 | 12 + 4 + 4 | 4, they were 72), with the gradient and
// statistics of one call of them all, on every export the executor is
// tested on, on the host and on the device layer's twin.
func TestGradientsLeastPadding(t *testing.T) {
	onTrainTwins(t, func(t *testing.T, _ string, p *model.Policy) {
		vocab := p.LM.Signature().Vocab
		r := rand.New(rand.NewPCG(47, 1))
		var examples []rl.Example
		for _, n := range []int{4, 16, 12, 4, 12, 4} {
			e := rl.Example{Prompt: randomIDs(r, 2, vocab), Completion: randomIDs(r, n-2, vocab), Advantage: float32(r.NormFloat64())}
			for range e.Completion {
				e.OldLogProbs = append(e.OldLogProbs, float32(-math.Log(float64(vocab))+0.5*r.NormFloat64()))
			}
			examples = append(examples, e)
		}
		grads := func(microTokens int) ([]float32, rl.GradientStats) {
			g := p.Weights.NewGrads()
			gs, err := rl.Gradients(context.Background(), p.Train, g, examples,
				rl.GradientOptions{MicroBatchTokens: microTokens, ClipLow: 0.2, ClipHigh: 0.28, PackPrompts: true})
			require.NoError(t, err)
			return g.Flat(), gs
		}
		want, wantStats := grads(0)
		require.Equal(t, 6*16, wantStats.Positions)
		got, gs := grads(36)
		rel := maxRelDiff(got, want)
		t.Logf("%d positions in 3 calls against %d in one; gradient relative difference %.3g", gs.Positions, wantStats.Positions, rel)
		require.Equal(t, 52, gs.Positions)
		require.Less(t, rel, 1e-5)
		require.Equal(t, wantStats.LossTokens, gs.LossTokens)
		require.InDelta(t, wantStats.Loss, gs.Loss, 1e-6*math.Max(1, math.Abs(wantStats.Loss)))
		require.InDelta(t, wantStats.Entropy, gs.Entropy, 1e-5*wantStats.Entropy)
		require.InDelta(t, wantStats.NLL, gs.NLL, 1e-5*wantStats.NLL)
	})
}
