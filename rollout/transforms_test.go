package rollout

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSoftmaxTemperature(t *testing.T) {
	logits := []float32{1, 2, 3}
	// Expected values: exp(x/T) / sum exp(x/T), computed by hand:
	// T=1: e^1,e^2,e^3 / (e+e^2+e^3) = 0.09003, 0.24473, 0.66524.
	p, _, _ := softmax(logits, 1, nil)
	require.InDeltaSlice(t, []float64{0.0900306, 0.2447285, 0.6652410}, p, 1e-6)
	// T=0.5 doubles the logits: e^2,e^4,e^6 normalised.
	z := math.Exp(2) + math.Exp(4) + math.Exp(6)
	p, _, _ = softmax(logits, 0.5, p)
	require.InDeltaSlice(t, []float64{math.Exp(2) / z, math.Exp(4) / z, math.Exp(6) / z}, p, 1e-12)
	// Large logits must not overflow.
	p, _, _ = softmax([]float32{1e30, 1e30}, 1, p)
	require.InDeltaSlice(t, []float64{0.5, 0.5}, p, 1e-12)
}

func TestTopK(t *testing.T) {
	p := []float64{0.1, 0.4, 0.2, 0.3}
	topK(p, 2, nil)
	// keeps 0.4 and 0.3, renormalised by 0.7.
	require.InDeltaSlice(t, []float64{0, 0.4 / 0.7, 0, 0.3 / 0.7}, p, 1e-12)
	q := []float64{0.25, 0.25, 0.25, 0.25}
	topK(q, 2, nil) // ties with the k-th are all kept (HF, vLLM)
	require.InDeltaSlice(t, []float64{0.25, 0.25, 0.25, 0.25}, q, 1e-12)
	q = []float64{0.1, 0.2, 0.2, 0.4, 0.1}
	topK(q, 2, nil)
	require.InDeltaSlice(t, []float64{0, 0.25, 0.25, 0.5, 0}, q, 1e-12)
	r := []float64{0.5, 0.5}
	topK(r, 0, nil)
	require.Equal(t, []float64{0.5, 0.5}, r)
}

func TestTopP(t *testing.T) {
	cases := []struct {
		name string
		p    float64
		want []float64
	}{
		// sorted mass: 0.5, 0.8, 0.95, 1.0
		{"0.5 keeps the first", 0.5, []float64{0, 1, 0, 0}},
		{"0.6 keeps two", 0.6, []float64{0, 0.5 / 0.8, 0.3 / 0.8, 0}},
		{"0.9 keeps three", 0.9, []float64{0, 0.5 / 0.95, 0.3 / 0.95, 0.15 / 0.95}},
		{"tiny keeps the top one", 1e-9, []float64{0, 1, 0, 0}},
		{"1 is a no-op", 1, []float64{0.05, 0.5, 0.3, 0.15}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			probs := []float64{0.05, 0.5, 0.3, 0.15}
			topP(probs, c.p, nil)
			require.InDeltaSlice(t, c.want, probs, 1e-12)
		})
	}
}

func TestDrawFrequencies(t *testing.T) {
	probs := []float64{0.1, 0, 0.6, 0.3}
	r := rand.New(rand.NewPCG(1, 2))
	const n = 200000
	counts := make([]int, len(probs))
	for i := 0; i < n; i++ {
		counts[draw(probs, r.Float64())]++
	}
	require.Zero(t, counts[1], "a zero-probability id was drawn")
	for i, p := range probs {
		// 5 binomial standard deviations.
		sd := math.Sqrt(n * p * (1 - p))
		require.InDelta(t, n*p, float64(counts[i]), 5*sd+1, "id %d", i)
	}
}

// TestDrawBoundaries: draw is the inverse CDF, id i for u in
// [F(i-1), F(i)), checked at the edges (a sampling test cannot see a
// shift of a thousandth of the mass): with probs 0.25, 0, 0.5, 0.25 the
// cumulative masses are 0.25, 0.75, 1 (all exact in binary).
func TestDrawBoundaries(t *testing.T) {
	probs := []float64{0.25, 0, 0.5, 0.25}
	for _, c := range []struct {
		u    float64
		want int
	}{
		{0, 0}, {math.Nextafter(0.25, 0), 0}, {0.25, 2}, {math.Nextafter(0.75, 0), 2}, {0.75, 3}, {math.Nextafter(1, 0), 3},
	} {
		require.Equal(t, c.want, draw(probs, c.u), "u = %v", c.u)
	}
	// Rounding leftovers (masses summing to just under 1) go to the last
	// id with mass, never to a later zero.
	require.Equal(t, 1, draw([]float64{0.5, 0.4999999, 0}, math.Nextafter(1, 0)))
}

func TestGreedy(t *testing.T) {
	require.Equal(t, 2, greedy([]float32{1, 3, 7, 7}), "ties go to the lowest index")
}

// TestStreamsDistinct: distinct streams give distinct seeds over a grid of
// rounds, problems, samples and phases, and the run seed changes them.
func TestStreamsDistinct(t *testing.T) {
	seen := map[uint64]bool{}
	for round := uint64(0); round < 4; round++ {
		for p := uint64(0); p < 16; p++ {
			for s := uint64(0); s < 16; s++ {
				for ph := PhaseSearch; ph <= PhaseGenerate; ph++ {
					k := Stream{Seed: 7, Round: round, Problem: p, Sample: s, Phase: ph}.Derive()
					require.False(t, seen[k], "collision at %d/%d/%d/%d", round, p, s, ph)
					seen[k] = true
				}
			}
		}
	}
	require.NotEqual(t, Stream{Seed: 1, Phase: PhaseSearch}.Derive(), Stream{Seed: 2, Phase: PhaseSearch}.Derive())
}

// TestStreamDeriveGolden pins Derive's output: the seeds of every saved
// run depend on it, so a change would silently change every resumed run.
// The value is DeriveSeed(42, 3, 5, 7, 3) of the previous API, from the
// same SplitMix64 mixing in the order Round, Problem, Sample, Phase.
func TestStreamDeriveGolden(t *testing.T) {
	require.Equal(t, uint64(0x6b8556335241c22a), Stream{Seed: 42, Round: 3, Problem: 5, Sample: 7, Phase: PhaseAggregate}.Derive())
}

// TestSoftmaxGivesLogSumExp: at temperature 1 the softmax's largest
// logit and sum of weights give logSumExp bit for bit (maxv +
// math.Log(sum)), so that the sampler under top-k or top-p records the
// policy's log-probability, LogProbOf's, without a second pass over the
// row; rows peaked, flat, with -Inf logits, and wide.
func TestSoftmaxGivesLogSumExp(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	for trial := range 400 {
		logits := make([]float32, 1+r.IntN([]int{8, 300, 151936}[trial%3]))
		for i := range logits {
			switch trial % 4 {
			case 0:
				logits[i] = float32(r.NormFloat64() * 4)
			case 1:
				logits[i] = float32(r.IntN(3))
			case 2:
				if r.IntN(3) == 0 {
					logits[i] = float32(math.Inf(-1))
				} else {
					logits[i] = float32(r.NormFloat64() * 30)
				}
			}
		}
		logits[r.IntN(len(logits))] = 1 // one finite logit at least
		_, maxv, sum := softmax(logits, 1, nil)
		require.Equal(t, math.Float64bits(logSumExp(logits)), math.Float64bits(maxv+math.Log(sum)), "trial %d", trial)
		_, maxv, sum = softmaxWeights(logits, 1, nil)
		require.Equal(t, math.Float64bits(logSumExp(logits)), math.Float64bits(maxv+math.Log(sum)), "trial %d", trial)
		// The sampler records LogProbOf's value under top-k and top-p.
		for _, cfg := range []SamplerConfig{{Temperature: 1, TopP: 0.9}, {Temperature: 1, TopK: 3, TopP: 1}, {Temperature: 1, TopK: 3, TopP: 0.5}} {
			s := &Sampler{cfg: cfg}
			row := &row{rng: rand.New(rand.NewPCG(uint64(trial), 0)), out: &Completion{}, limit: 1 << 30}
			s.sampleInto(row, logits, len(logits), nil, nil)
			id := row.out.Tokens[0]
			require.Equal(t, float32(LogProbOf(logits, int(id))), row.out.PolicyLogProbs[0], "trial %d, %+v", trial, cfg)
		}
	}
}
