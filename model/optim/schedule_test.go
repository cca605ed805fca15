package optim

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/spiral-rl/spiral/model/params"
	"github.com/stretchr/testify/require"
)

func TestScheduleLR(t *testing.T) {
	warmCos := Schedule{PeakLR: 1e-3, WarmupSteps: 10, Decay: Cosine, TotalSteps: 110, MinLR: 1e-4}
	constant := Schedule{PeakLR: 2e-6, WarmupSteps: 4}
	cases := []struct {
		name  string
		s     Schedule
		step  int64
		want  float64
		where string
	}{
		{"warmup first", warmCos, 0, 1e-4, "1e-3 * 1/10"},
		{"warmup middle", warmCos, 4, 5e-4, "1e-3 * 5/10"},
		{"warmup last", warmCos, 9, 1e-3, "1e-3 * 10/10"},
		{"cosine start", warmCos, 10, 1e-3, "progress 0: cos 0 = 1"},
		{"cosine quarter", warmCos, 35, 1e-4 + 9e-4*0.5*(1+math.Sqrt2/2), "progress 25/100: cos(pi/4) = sqrt2/2"},
		{"cosine half", warmCos, 60, 5.5e-4, "progress 1/2: cos(pi/2) = 0, floor + 9e-4/2"},
		{"cosine end", warmCos, 110, 1e-4, "progress 1: cos(pi) = -1, the floor"},
		{"after end", warmCos, 500, 1e-4, "clamped to the floor"},
		{"negative step", warmCos, -3, 1e-4, "treated as step 0"},
		{"constant warmup", constant, 1, 1e-6, "2e-6 * 2/4"},
		{"constant after", constant, 1000, 2e-6, "peak"},
		{"no warmup", Schedule{PeakLR: 3e-5}, 0, 3e-5, "peak from the first update"},
		{"cosine no warmup mid", Schedule{PeakLR: 1, Decay: Cosine, TotalSteps: 3}, 1, 0.75, "progress 1/3: 0.5*(1+cos(pi/3)) = 0.75"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			require.NoError(t, tc.s.Validate())
			require.InDelta(t, tc.want, tc.s.LR(tc.step), 1e-15, tc.where)
		})
	}
}

func TestScheduleValidate(t *testing.T) {
	cases := []struct {
		name string
		s    Schedule
		want string
	}{
		{"lr required", Schedule{}, "peak learning rate"},
		{"negative warmup", Schedule{PeakLR: 1, WarmupSteps: -1}, "warmup"},
		{"cosine needs total", Schedule{PeakLR: 1, WarmupSteps: 5, Decay: Cosine, TotalSteps: 5}, "total steps"},
		{"floor above peak", Schedule{PeakLR: 1, Decay: Cosine, TotalSteps: 5, MinLR: 2}, "min learning rate"},
		{"unknown decay", Schedule{PeakLR: 1, Decay: "linear"}, `"linear"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			require.ErrorContains(t, tc.s.Validate(), tc.want)
		})
	}
}

// linearTokenLoss is a toy model: per-token loss l_t = 0.5*(w.x_t - y_t)^2,
// with the analytic gradient d l_t / d w = (w.x_t - y_t) x_t. It returns
// the gradient of the token-mean loss over tokens.
func linearTokenGrad(w []float32, xs [][]float32, ys []float32) []float32 {
	g := make([]float64, len(w))
	for t, x := range xs {
		var pred float64
		for i := range w {
			pred += float64(w[i]) * float64(x[i])
		}
		r := pred - float64(ys[t])
		for i := range w {
			g[i] += r * float64(x[i])
		}
	}
	out := make([]float32, len(w))
	for i := range g {
		out[i] = float32(g[i] / float64(len(xs)))
	}
	return out
}

// TestAccumulationEquivalence: the batch gradient of a token-mean loss
// equals the sum of micro-batch token-mean gradients scaled by
// tokens_in_micro/tokens_in_batch, for uneven micro-batches; and AdamW
// steps from both agree.
func TestAccumulationEquivalence(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 2))
	const dim, tokens = 6, 23
	xs := make([][]float32, tokens)
	ys := make([]float32, tokens)
	for i := range xs {
		xs[i] = make([]float32, dim)
		for j := range xs[i] {
			xs[i][j] = float32(rng.NormFloat64())
		}
		ys[i] = float32(rng.NormFloat64())
	}
	w0 := make([]float32, dim)
	for j := range w0 {
		w0[j] = float32(rng.NormFloat64())
	}
	cases := []struct {
		name  string
		split []int // micro-batch token counts, summing to 23
	}{
		{"one micro-batch", []int{23}},
		{"uneven three", []int{5, 11, 7}},
		{"singletons and rest", []int{1, 1, 21}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := store(t, params.Tensor{Name: "w", Shape: []int64{1, dim}, Data: w0})
			full := w.NewGrads()
			copy(full.Flat(), linearTokenGrad(w.Flat(), xs, ys))

			acc := w.NewGrads()
			a, err := NewAccumulator(acc, tokens)
			require.NoError(t, err)
			micro := w.NewGrads()
			lo := 0
			for _, n := range tc.split {
				copy(micro.Flat(), linearTokenGrad(w.Flat(), xs[lo:lo+n], ys[lo:lo+n]))
				require.NoError(t, a.Add(micro, n))
				lo += n
			}
			require.NoError(t, a.Done())
			for i := range full.Flat() {
				require.InDelta(t, full.Flat()[i], acc.Flat()[i], 1e-6, "grad %d", i)
			}

			// One AdamW step from each gives the same weights.
			w2 := store(t, params.Tensor{Name: "w", Shape: []int64{1, dim}, Data: w0})
			o1, _ := NewAdamW(DefaultConfig(), w)
			o2, _ := NewAdamW(DefaultConfig(), w2)
			require.NoError(t, o1.Step(w, full, 1e-2))
			require.NoError(t, o2.Step(w2, acc, 1e-2))
			for i := range w.Flat() {
				require.InDelta(t, w.Flat()[i], w2.Flat()[i], 1e-5, "weight %d", i)
			}
		})
	}
}

func TestAccumulatorErrors(t *testing.T) {
	w := store(t, params.Tensor{Name: "w", Shape: []int64{2}, Data: []float32{1, 2}})
	_, err := NewAccumulator(w.NewGrads(), 0)
	require.Error(t, err)
	a, err := NewAccumulator(w.NewGrads(), 10)
	require.NoError(t, err)
	require.NoError(t, a.Add(w, 6))
	require.ErrorContains(t, a.Done(), "6 tokens, batch has 10")
	require.ErrorContains(t, a.Add(w, 5), "more than the batch")
	_, err = MicroBatchScale(3, 0)
	require.Error(t, err)
	s, err := MicroBatchScale(3, 12)
	require.NoError(t, err)
	require.Equal(t, float32(0.25), s)
}
