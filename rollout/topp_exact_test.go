package rollout

import (
	"math"
	"math/big"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// exactTopPKept is Hugging Face's TopPLogitsWarper rule computed in exact
// arithmetic on a row's softmax weights w (each float64 taken as an exact
// rational, the probabilities being w/sum(w) exactly): sort ascending
// (stably: among equal weights the lowest id first), take the cumulative
// probability, remove every id whose cumulative probability is <= 1-p,
// never the last (the most probable); p is read as the shortest decimal
// that reads back as it, as --top-p spells it. It returns the kept ids
// ascending.
func exactTopPKept(w []float64, p float64) []int {
	pr, ok := new(big.Rat).SetString(strconv.FormatFloat(p, 'g', -1, 64))
	if !ok {
		panic(p)
	}
	idx := make([]int, len(w))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		switch {
		case w[a] < w[b]:
			return -1
		case w[a] > w[b]:
			return 1
		}
		return 0
	})
	total := new(big.Rat)
	for _, v := range w {
		r := new(big.Rat).SetFloat64(v)
		if r == nil {
			slices.Sort(idx)
			return idx // a NaN or infinite weight: no distribution to cut (the sampler refuses the row)
		}
		total.Add(total, r)
	}
	// cum/total <= 1-p  <=>  cum <= (1-p)*total
	limit := new(big.Rat).Sub(big.NewRat(1, 1), pr)
	limit.Mul(limit, total)
	cum := new(big.Rat)
	var kept []int
	for j, i := range idx {
		cum.Add(cum, new(big.Rat).SetFloat64(w[i]))
		if j == len(idx)-1 || cum.Cmp(limit) > 0 {
			kept = append(kept, i)
		}
	}
	slices.Sort(kept)
	return kept
}

// tiedTopPCases are rows of n equal logits (each id's probability 1/n
// exactly) at every top-p m/n, 0 < m < n, rounded to float64, and one ulp
// either side: the exact rule keeps ceil(n*p) ids where n*p is not an
// integer and exactly n*p where it is, from the highest id down.
func tiedTopPCases() []struct {
	n int
	p float64
} {
	var cases []struct {
		n int
		p float64
	}
	for n := 2; n <= 48; n++ {
		for m := 1; m < n; m++ {
			p := float64(m) / float64(n)
			for _, q := range []float64{math.Nextafter(p, 0), p, math.Nextafter(p, 1)} {
				cases = append(cases, struct {
					n int
					p float64
				}{n, q})
			}
		}
	}
	return cases
}

// TestTopPTiedFractionsExact: on rows of tied logits, the sampler keeps
// the set that HF's rule keeps in exact arithmetic (exactTopPKept), with
// top-p alone (the softmax's probabilities, 1/n rounded) and after a
// top-k that keeps the ties (its renormalised weights). 24 tied logits at
// top-p 0.625 (= 15/24, exact in binary) keep 15 ids: summing 1/24
// (rounded down) fifteen times fell short of 0.625 and kept a 16th.
func TestTopPTiedFractionsExact(t *testing.T) {
	for _, c := range tiedTopPCases() {
		ones := make([]float64, c.n)
		for i := range ones {
			ones[i] = 1
		}
		want := exactTopPKept(ones, c.p)
		// Top-p alone on n equal logits.
		logits := make([]float32, c.n)
		got, _, _ := samplingDistribution(t, SamplerConfig{Temperature: 1, TopP: c.p}, logits, c.n, 1)
		require.Equal(t, want, keptSet(got), "%d tied logits, top-p %v", c.n, c.p)
		// The same ties at the top of a wider row, top-k keeping them.
		wide := append(slices.Repeat([]float32{1.5}, c.n), -1, -2, -3)
		got, _, _ = samplingDistribution(t, SamplerConfig{Temperature: 0.7, TopK: c.n, TopP: c.p}, wide, len(wide), 1)
		require.Equal(t, want, keptSet(got), "%d tied maxima kept by top-k, top-p %v", c.n, c.p)
	}
	logits := make([]float32, 24)
	got, _, _ := samplingDistribution(t, SamplerConfig{Temperature: 1, TopP: 0.625}, logits, 24, 1)
	require.Equal(t, []int{9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23}, keptSet(got))
	for _, i := range keptSet(got) {
		require.InDelta(t, 1.0/15, got[i], 1e-15)
	}
}

// TestTopPMatchesExactRuleOnRandomRows: on random rows of probabilities
// rich in ties and in masses that meet p exactly (multiples of 1/d, some
// scaled off 1, zeros, subnormals), topP keeps the set exactTopPKept
// keeps on the same row, and the kept probabilities sum to 1.
func TestTopPMatchesExactRuleOnRandomRows(t *testing.T) {
	r := rand.New(rand.NewPCG(43, 2))
	var order []int
	for trial := range 8000 {
		n := 1 + r.IntN(64)
		d := float64(1 + r.IntN(48))
		scale := []float64{1, 1, 3, 1e-300, 1e300}[r.IntN(5)]
		probs := make([]float64, n)
		for i := range probs {
			switch r.IntN(6) {
			case 0:
				probs[i] = 0
			case 1:
				probs[i] = math.SmallestNonzeroFloat64 * float64(1+r.IntN(4))
			case 2:
				probs[i] = r.Float64() * scale
			default:
				probs[i] = float64(1+r.IntN(3)) / d * scale
			}
		}
		if slices.Max(probs) == 0 {
			probs[r.IntN(n)] = 1
		}
		var p float64
		switch r.IntN(3) {
		case 0:
			p = float64(1+r.IntN(int(d))) / d
		case 1:
			p = []float64{0.1, 0.2, 0.25, 0.3, 0.5, 0.6, 0.625, 0.75, 0.9, 0.95}[r.IntN(10)]
		default:
			p = r.Float64()
		}
		if p == 0 {
			p = 0.5
		}
		want := exactTopPKept(probs, p)
		got := append([]float64(nil), probs...)
		order = topP(got, p, order)
		if p >= 1 {
			continue
		}
		require.Equal(t, want, keptSet(got), "trial %d: probs %v, p %v", trial, probs, p)
		sum := 0.0
		for _, q := range got {
			sum += q
		}
		require.InDelta(t, 1, sum, 1e-12, "trial %d", trial)
	}
}

// TestTopPWideFlatRowExact: on a flat row as wide as a tokenizer's
// (151,668 equal logits), at a top-p whose mass the ids meet exactly
// (0.5: 75,834 of them; 0.25: 37,917) and one ulp either side, the
// sampler keeps the set that HF's rule keeps in exact arithmetic; the
// decision sums the whole row exactly (BenchmarkTopPExactDecision).
func TestTopPWideFlatRowExact(t *testing.T) {
	const n = 151668
	ones := slices.Repeat([]float64{1}, n)
	logits := make([]float32, n)
	var probs []float64
	var order []int
	for _, p := range []float64{0.5, 0.25, math.Nextafter(0.5, 0), math.Nextafter(0.5, 1)} {
		want := exactTopPKept(ones, p)
		probs, _, _ = softmax(logits, 1, probs)
		order = topP(probs, p, order)
		require.Equal(t, want, keptSet(probs), "top-p %v", p)
	}
	require.Len(t, exactTopPKept(ones, 0.5), n/2)
}

// TestFixedSumExact: fixedSum sums float64 values >= 0 exactly, however
// wide their exponents' span (subnormals to 1e300) and however many
// carries the words take (16,384 mantissas of all ones), as big.Rat
// sums them.
func TestFixedSumExact(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	for _, tc := range []struct {
		name string
		vals []float64
	}{
		{"flat", slices.Repeat([]float64{1.0 / 151668}, 151668)},
		{"carries", slices.Repeat([]float64{math.Nextafter(1, 0)}, 1<<14)},
		{"wide", []float64{math.SmallestNonzeroFloat64, 3 * math.SmallestNonzeroFloat64, 0x1p-1022, 1e-300, 0.1, 1, 1e300, math.MaxFloat64, 0}},
		{"random", func() []float64 {
			v := make([]float64, 5000)
			for i := range v {
				v[i] = r.Float64() * math.Pow(2, float64(r.IntN(200)-150))
			}
			return v
		}()},
	} {
		lo, hi := exponentSpan(tc.vals)
		s := newFixedSum(lo, hi)
		want := new(big.Rat)
		for _, v := range tc.vals {
			s.add(v)
			want.Add(want, new(big.Rat).SetFloat64(v))
		}
		got := new(big.Rat).SetInt(s.int())
		unit := new(big.Rat).SetFloat64(math.Ldexp(1, lo-1075)) // 2^(lo-1075) >= 2^-1074
		got.Mul(got, unit)
		require.Equal(t, want.RatString(), got.RatString(), tc.name)
	}
}
