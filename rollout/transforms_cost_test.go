package rollout

import (
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"

	"github.com/stretchr/testify/require"
)

// topKSorted and topPSorted are topK and topP as they were written first,
// on a sort of the whole row by probability (ties from the highest id
// down, the reverse of HF's stable ascending sort): the oracle that the
// selections in transforms.go must match bit for bit. topPSorted keeps as
// many ids as HF's rule does in exact arithmetic (exactTopPKept).
func topKSorted(probs []float64, k int) {
	if k <= 0 || k >= len(probs) {
		return
	}
	order := sortedByProbAll(probs)
	kth := probs[order[k-1]]
	for k < len(order) && probs[order[k]] == kth {
		k++
	}
	sum := 0.0
	for _, i := range order[:k] {
		sum += probs[i]
	}
	for _, i := range order[k:] {
		probs[i] = 0
	}
	for _, i := range order[:k] {
		probs[i] /= sum
	}
}

func topPSorted(probs []float64, p float64) {
	if p >= 1 {
		return
	}
	order := sortedByProbAll(probs)
	keep := len(exactTopPKept(probs, p)) // the most probable ids, the highest first among ties
	mass := 0.0
	for _, i := range order[:keep] {
		mass += probs[i]
	}
	for _, i := range order[keep:] {
		probs[i] = 0
	}
	for _, i := range order[:keep] {
		probs[i] /= mass
	}
}

func sortedByProbAll(probs []float64) []int {
	order := make([]int, len(probs))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return probs[order[a]] < probs[order[b]] })
	slices.Reverse(order)
	return order
}

// TestTopKTopPMatchFullSort: on random rows (peaked, flat, with ties and
// zeros), topK, topP and the two chained give bit for bit what a stable
// sort of the whole row gives, whatever scratch they are handed.
func TestTopKTopPMatchFullSort(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 4))
	var order []int
	for trial := range 3000 {
		n := 1 + r.IntN(300)
		logits := make([]float32, n)
		for i := range logits {
			switch trial % 4 {
			case 0: // peaked
				logits[i] = float32(r.NormFloat64())
				if r.IntN(20) == 0 {
					logits[i] += 12
				}
			case 1: // many ties
				logits[i] = float32(r.IntN(4))
			case 2: // some ids impossible
				logits[i] = float32(r.NormFloat64() * 3)
				if r.IntN(3) == 0 {
					logits[i] = float32(math.Inf(-1))
				}
			default:
				logits[i] = float32(r.NormFloat64() * 3)
			}
		}
		temp := []float64{1, 0.6, 2, 1e-3}[r.IntN(4)]
		k := r.IntN(n + 2)
		p := []float64{r.Float64(), 0.95, 0.5, 1e-9, math.Nextafter(1, 0), 1}[r.IntN(6)]
		base, _, _ := softmax(logits, temp, nil)
		for _, chain := range []struct {
			k int
			p float64
		}{{k, 1}, {0, p}, {k, p}} {
			want := append([]float64(nil), base...)
			topKSorted(want, chain.k)
			topPSorted(want, chain.p)
			got := append([]float64(nil), base...)
			order = topK(got, chain.k, order)
			order = topP(got, chain.p, order)
			for i := range want {
				require.Equal(t, math.Float64bits(want[i]), math.Float64bits(got[i]), "trial %d, n %d, k %d, p %v, id %d: %v vs %v", trial, n, chain.k, chain.p, i, got[i], want[i])
			}
		}
	}
}

// BenchmarkSampleTopKTopP: one token sampled from a row as wide as
// Qwen3's (151,936 logits), peaked as a language model's are, at
// temperature 0.6 alone, then with top-k 20, top-p 0.95 and both (Qwen3's
// own settings). Top-k and top-p select their ids rather than sort the
// whole vocabulary per token, which made them 15-40 times as slow as
// sampling without them; compare the sub-benchmarks' times.
func BenchmarkSampleTopKTopP(b *testing.B) {
	r := rand.New(rand.NewPCG(8, 8))
	logits := make([]float32, 151936)
	for i := range logits {
		logits[i] = float32(r.NormFloat64())
		if r.IntN(3000) == 0 {
			logits[i] += 10 + 5*float32(r.Float64())
		}
	}
	for _, c := range []struct {
		name string
		cfg  SamplerConfig
	}{
		{"plain", SamplerConfig{Temperature: 0.6, TopP: 1}},
		{"top-k", SamplerConfig{Temperature: 0.6, TopK: 20, TopP: 1}},
		{"top-p", SamplerConfig{Temperature: 0.6, TopP: 0.95}},
		{"both", SamplerConfig{Temperature: 0.6, TopK: 20, TopP: 0.95}},
	} {
		b.Run(c.name, func(b *testing.B) {
			s := &Sampler{cfg: c.cfg}
			row := &row{rng: rand.New(rand.NewPCG(1, 0)), out: &Completion{}, limit: 1 << 30}
			var probs []float64
			var order []int
			for b.Loop() {
				probs, order = s.sampleInto(row, logits, 151669, probs, order)
			}
		})
	}
}

// BenchmarkTopPExactDecision: one token sampled at top-p 0.5 from a row
// of 151,668 ids (about Qwen3's tokenizer's), peaked as a language
// model's are ("ordinary"), and flat, every logit equal ("uniform"): there
// the mass of the 75,834 most probable ids meets p within float64's
// error, so the cut is decided in exact arithmetic, which sums the row's
// probabilities exactly. Compare the two sub-benchmarks' times.
func BenchmarkTopPExactDecision(b *testing.B) {
	r := rand.New(rand.NewPCG(8, 8))
	ordinary := make([]float32, 151936)
	for i := range ordinary {
		ordinary[i] = float32(r.NormFloat64())
		if r.IntN(3000) == 0 {
			ordinary[i] += 10 + 5*float32(r.Float64())
		}
	}
	for _, c := range []struct {
		name   string
		logits []float32
	}{{"ordinary", ordinary}, {"uniform", make([]float32, 151936)}} {
		b.Run(c.name, func(b *testing.B) {
			s := &Sampler{cfg: SamplerConfig{Temperature: 1, TopP: 0.5}}
			row := &row{rng: rand.New(rand.NewPCG(1, 0)), out: &Completion{}, limit: 1 << 30}
			var probs []float64
			var order []int
			for b.Loop() {
				probs, order = s.sampleInto(row, c.logits, 151668, probs, order)
			}
		})
	}
}
