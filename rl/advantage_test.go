package rl

import (
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// Worked example used by several tests. N1 = 4 search traces, K = 3
// subsets; trace 3 sits in no subset.
//
//	G0 = {0,1}  rewards [1 1 0 0]  f = 2/4 = 0.5
//	G1 = {1,2}  rewards [1 1 1 1]  f = 1
//	G2 = {2,0}  rewards [0 0 0 0]  f = 0
//	mean f = (0.5 + 1 + 0)/3 = 0.5
//	A#     = [0.5-0.5, 1-0.5, 0-0.5] = [0, 0.5, -0.5]
//	A_marg: y0 in G0,G2: (0 - 0.5)/2 = -0.25
//	        y1 in G0,G1: (0 + 0.5)/2 = +0.25
//	        y2 in G1,G2: (0.5 - 0.5)/2 = 0
//	        y3 in none: no gradient
//	A(y*):  G0: [1-0.5, 1-0.5, 0-0.5, 0-0.5] = [0.5 0.5 -0.5 -0.5]; G1, G2: 0
func workedProblem() SpiralProblem {
	return SpiralProblem{
		NumSearch: 4,
		Subsets:   [][]int{{0, 1}, {1, 2}, {2, 0}},
		Rewards:   [][]float64{{1, 1, 0, 0}, {1, 1, 1, 1}, {0, 0, 0, 0}},
	}
}

func TestSpiralAdvantagesHandComputed(t *testing.T) {
	// Scaled variants of the worked example:
	//  ScaleSearch: deviations of f = [0, 0.5, -0.5], sample std =
	//   sqrt((0 + 0.25 + 0.25)/(3-1)) = 0.5, so A# = [0, 0.5, -0.5]/(0.5+1e-6).
	//  ScaleAggregation: G0 deviations ±0.5, sample std =
	//   sqrt(4*0.25/(4-1)) = sqrt(1/3), so ±0.5/(sqrt(1/3)+1e-6).
	s := 0.5 / (0.5 + StdEpsilon)
	a := 0.5 / (math.Sqrt(1.0/3) + StdEpsilon)
	tests := []struct {
		name        string
		opt         AdvantageOptions
		setAdv      []float64
		search      []float64
		mask        []bool
		agg0        []float64
		trainAgg    bool
		informative bool
	}{
		{"spiral", AdvantageOptions{}, []float64{0, 0.5, -0.5}, []float64{-0.25, 0.25, 0, 0},
			[]bool{true, true, true, false}, []float64{0.5, 0.5, -0.5, -0.5}, true, true},
		{"scale search", AdvantageOptions{ScaleSearch: true}, []float64{0, s, -s}, []float64{-s / 2, s / 2, 0, 0},
			[]bool{true, true, true, false}, []float64{0.5, 0.5, -0.5, -0.5}, true, true},
		{"scale aggregation", AdvantageOptions{ScaleAggregation: true}, []float64{0, 0.5, -0.5}, []float64{-0.25, 0.25, 0, 0},
			[]bool{true, true, true, false}, []float64{a, a, -a, -a}, true, true},
		{"agg-only", AdvantageOptions{AggregationOnly: true}, []float64{0, 0.5, -0.5}, []float64{-0.25, 0.25, 0, 0},
			[]bool{false, false, false, false}, []float64{0.5, 0.5, -0.5, -0.5}, true, true},
		{"search-only", AdvantageOptions{SearchOnly: true}, []float64{0, 0.5, -0.5}, []float64{-0.25, 0.25, 0, 0},
			[]bool{true, true, true, false}, []float64{0.5, 0.5, -0.5, -0.5}, false, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := SpiralAdvantages(workedProblem(), tc.opt)
			require.NoError(t, err)
			require.Equal(t, []float64{0.5, 1, 0}, got.SetValue)
			require.InDeltaSlice(t, tc.setAdv, got.SetAdvantage, 1e-12)
			require.InDeltaSlice(t, tc.search, got.Search, 1e-12)
			require.Equal(t, tc.mask, got.SearchMask)
			require.Equal(t, []int{2, 2, 2, 0}, got.Membership)
			require.InDeltaSlice(t, tc.agg0, got.Aggregation[0], 1e-12)
			require.Equal(t, []float64{0, 0, 0, 0}, got.Aggregation[1])
			require.Equal(t, []float64{0, 0, 0, 0}, got.Aggregation[2])
			require.Equal(t, tc.trainAgg, got.TrainAggregation)
			require.Equal(t, tc.informative, got.Informative())
		})
	}
}

func TestSpiralInformative(t *testing.T) {
	tests := []struct {
		name    string
		p       SpiralProblem
		opt     AdvantageOptions
		want    bool
		because string
	}{
		{"all correct", SpiralProblem{NumSearch: 3, Subsets: [][]int{{0, 1}, {1, 2}}, Rewards: [][]float64{{1, 1}, {1, 1}}}, AdvantageOptions{}, false,
			"f = [1 1], A# = 0, every r - f = 0"},
		{"all wrong scaled", SpiralProblem{NumSearch: 3, Subsets: [][]int{{0, 1}, {1, 2}}, Rewards: [][]float64{{0, 0}, {0, 0}}}, AdvantageOptions{ScaleSearch: true, ScaleAggregation: true}, false,
			"constant groups give exact zeros even when scaling"},
		{"equal non-dyadic rewards", SpiralProblem{NumSearch: 2, Subsets: [][]int{{0}, {1}}, Rewards: [][]float64{{0.1, 0.1, 0.1}, {0.1, 0.1, 0.1}}}, AdvantageOptions{}, false,
			"0.1+0.1+0.1 = 0.30000000000000004, /3 != 0.1, yet the constant-group rule gives exact zeros"},
		{"set signal only", SpiralProblem{NumSearch: 2, Subsets: [][]int{{0}, {1}}, Rewards: [][]float64{{1, 1}, {0, 0}}}, AdvantageOptions{}, true,
			"f = [1 0], A# = [0.5 -0.5], A_marg = [0.5 -0.5]; aggregation rows constant"},
		{"set signal only, agg-only", SpiralProblem{NumSearch: 2, Subsets: [][]int{{0}, {1}}, Rewards: [][]float64{{1, 1}, {0, 0}}}, AdvantageOptions{AggregationOnly: true}, false,
			"same as above but search traces carry no gradient"},
		{"set signal cancels in marginal", SpiralProblem{NumSearch: 2, Subsets: [][]int{{0, 1}, {1, 0}}, Rewards: [][]float64{{1, 1}, {0, 0}}}, AdvantageOptions{}, false,
			"A# = [0.5 -0.5] but both traces sit in both subsets: A_marg = (0.5-0.5)/2 = 0"},
		{"aggregation signal only", SpiralProblem{NumSearch: 2, Subsets: [][]int{{0}, {1}}, Rewards: [][]float64{{1, 0}, {0, 1}}}, AdvantageOptions{AggregationOnly: true}, true,
			"f = [0.5 0.5], A# = 0, A(y*) = ±0.5"},
		{"aggregation signal only, search-only", SpiralProblem{NumSearch: 2, Subsets: [][]int{{0}, {1}}, Rewards: [][]float64{{1, 0}, {0, 1}}}, AdvantageOptions{SearchOnly: true}, false,
			"same as above but aggregation traces carry no gradient"},
		{"set signal only, search-only", SpiralProblem{NumSearch: 2, Subsets: [][]int{{0}, {1}}, Rewards: [][]float64{{1, 1}, {0, 0}}}, AdvantageOptions{SearchOnly: true}, true,
			"A_marg = [0.5 -0.5] on trained search traces"},
		{"every trace in every subset", SpiralProblem{NumSearch: 3, Subsets: [][]int{{0, 1, 2}, {2, 0, 1}, {1, 2, 0}}, Rewards: [][]float64{{0.4}, {0.3}, {0.5}}}, AdvantageOptions{}, false,
			"f = [0.4 0.3 0.5] differ, but each A_marg is the mean of all A#, exactly 0 (summing the centred A# leaves a rounding residue); one aggregation trace per subset has none"},
		{"every trace in every subset, search-only", SpiralProblem{NumSearch: 3, Subsets: [][]int{{0, 1, 2}, {2, 0, 1}, {1, 2, 0}}, Rewards: [][]float64{{0.1, 0.7}, {0.3}, {0.9, 0.2, 0.4}}}, AdvantageOptions{SearchOnly: true}, false,
			"the same A_marg, and the aggregation traces' advantages are not trained"},
		{"subset means balance, search-only", SpiralProblem{NumSearch: 2, Subsets: [][]int{{0}, {1}, {0}}, Rewards: [][]float64{{0, 1, 0, 1, 0}, {1, 1, 0, 1, 0}, {1, 1, 1, 1, 0}}}, AdvantageOptions{SearchOnly: true}, false,
			"f = [0.4 0.6 0.8]: trace 0's subsets average (0.4+0.8)/2 = 0.6 and trace 1's 0.6, the mean of all, so A_marg = 0 (means of fifths in float64 leave a rounding residue)"},
		{"uncovered trace ignored", SpiralProblem{NumSearch: 3, Subsets: [][]int{{0}, {1}}, Rewards: [][]float64{{1}, {1}}}, AdvantageOptions{}, false,
			"trace 2 has no subset; the rest is constant"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := SpiralAdvantages(tc.p, tc.opt)
			require.NoError(t, err)
			require.Equal(t, tc.want, got.Informative(), tc.because)
			if !tc.want && got.TrainAggregation {
				for _, row := range got.Aggregation {
					for _, a := range row {
						require.Zero(t, a, tc.because)
					}
				}
			}
		})
	}
}

// TestSpiralInformativeExact: with binary rewards and N2 aggregation
// traces in every subset, Informative says whether some trained
// advantage is nonzero in exact (rational) arithmetic, whatever N2: a
// subset value f = 2/5 or 1/3 is not a float64, and a rounding residue
// in A_marg must not pass for signal (dynamic sampling would keep a
// problem that trains nothing).
func TestSpiralInformativeExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 3))
	for it := range 4000 {
		n1, k, n2 := 1+rng.IntN(6), 1+rng.IntN(6), 1+rng.IntN(7)
		n := 1 + rng.IntN(n1)
		p := SpiralProblem{NumSearch: n1, Subsets: make([][]int, k), Rewards: make([][]float64, k)}
		for g := range k {
			p.Subsets[g] = rng.Perm(n1)[:n]
			p.Rewards[g] = make([]float64, n2)
			for j := range p.Rewards[g] {
				p.Rewards[g][j] = float64(rng.IntN(2))
			}
		}
		// f and its mean as rationals.
		f := make([]*big.Rat, k)
		fbar := new(big.Rat)
		for g, rs := range p.Rewards {
			f[g] = new(big.Rat)
			for _, r := range rs {
				f[g].Add(f[g], new(big.Rat).SetFloat64(r))
			}
			f[g].Quo(f[g], big.NewRat(int64(n2), 1))
			fbar.Add(fbar, f[g])
		}
		fbar.Quo(fbar, big.NewRat(int64(k), 1))
		setSignal := false // some trace's subsets average to other than fbar
		for i := range n1 {
			sum, m := new(big.Rat), int64(0)
			for g, members := range p.Subsets {
				if slices.Contains(members, i) {
					sum.Add(sum, f[g])
					m++
				}
			}
			setSignal = setSignal || m > 0 && sum.Quo(sum, big.NewRat(m, 1)).Cmp(fbar) != 0
		}
		aggSignal := false // some subset's rewards differ
		for _, rs := range p.Rewards {
			aggSignal = aggSignal || slices.ContainsFunc(rs, func(r float64) bool { return r != rs[0] })
		}
		for _, tc := range []struct {
			opt  AdvantageOptions
			want bool
		}{
			{AdvantageOptions{}, setSignal || aggSignal},
			{AdvantageOptions{ScaleSearch: true}, setSignal || aggSignal},
			{AdvantageOptions{SearchOnly: true}, setSignal},
			{AdvantageOptions{AggregationOnly: true}, aggSignal},
		} {
			got, err := SpiralAdvantages(p, tc.opt)
			require.NoError(t, err)
			require.Equal(t, tc.want, got.Informative(), "problem %d %+v, opt %+v: A_marg %v", it, p, tc.opt, got.Search)
		}
	}
}

func TestSpiralProblemValidate(t *testing.T) {
	tests := []struct {
		name string
		p    SpiralProblem
		want string
	}{
		{"no subsets", SpiralProblem{NumSearch: 2}, "no subsets"},
		{"row mismatch", SpiralProblem{NumSearch: 2, Subsets: [][]int{{0}}, Rewards: nil}, "0 reward rows for 1 subsets"},
		{"empty subset", SpiralProblem{NumSearch: 2, Subsets: [][]int{{}}, Rewards: [][]float64{{1}}}, "subset 0 is empty"},
		{"index too big", SpiralProblem{NumSearch: 2, Subsets: [][]int{{0}, {2}}, Rewards: [][]float64{{1}, {1}}}, "subset 1: index 2 outside [0, 2)"},
		{"negative index", SpiralProblem{NumSearch: 2, Subsets: [][]int{{-1}}, Rewards: [][]float64{{1}}}, "index -1 outside"},
		{"repeated index", SpiralProblem{NumSearch: 3, Subsets: [][]int{{0, 1}, {2, 1, 2}}, Rewards: [][]float64{{1}, {1}}}, "subset 1: index 2 repeated"},
		{"no rewards", SpiralProblem{NumSearch: 2, Subsets: [][]int{{0}}, Rewards: [][]float64{{}}}, "subset 0 has no aggregation rewards"},
		{"nan reward", SpiralProblem{NumSearch: 2, Subsets: [][]int{{0}}, Rewards: [][]float64{{1, math.NaN()}}}, "reward 1 is NaN"},
		{"inf reward", SpiralProblem{NumSearch: 2, Subsets: [][]int{{0}}, Rewards: [][]float64{{math.Inf(1)}}}, "reward 0 is +Inf"},
		{"negative N1", SpiralProblem{NumSearch: -1, Subsets: [][]int{{0}}, Rewards: [][]float64{{1}}}, "NumSearch -1 < 0"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := SpiralAdvantages(tc.p, AdvantageOptions{})
			require.ErrorContains(t, err, tc.want)
			require.ErrorContains(t, err, "rl: ")
		})
	}
}

// randomProblem draws a SPIRAL problem of random shape. Binary rewards
// mimic the grader; continuous ones exercise non-dyadic arithmetic.
func randomProblem(rng *rand.Rand) SpiralProblem {
	n1 := 1 + rng.IntN(10)
	k := 1 + rng.IntN(6)
	binary := rng.IntN(2) == 0
	p := SpiralProblem{NumSearch: n1, Subsets: make([][]int, k), Rewards: make([][]float64, k)}
	for g := range k {
		p.Subsets[g] = rng.Perm(n1)[:1+rng.IntN(n1)]
		p.Rewards[g] = make([]float64, 1+rng.IntN(5))
		for j := range p.Rewards[g] {
			if binary {
				p.Rewards[g][j] = float64(rng.IntN(2))
			} else {
				p.Rewards[g][j] = rng.Float64()
			}
		}
	}
	return p
}

var allOptions = []AdvantageOptions{
	{}, {ScaleSearch: true}, {ScaleAggregation: true}, {ScaleSearch: true, ScaleAggregation: true},
	{AggregationOnly: true}, {AggregationOnly: true, ScaleSearch: true, ScaleAggregation: true},
	{SearchOnly: true}, {SearchOnly: true, ScaleSearch: true, ScaleAggregation: true},
}

// naiveSpiral restates the formulas of ARCHITECTURE.md literally: per
// search trace, scan every subset for membership.
func naiveSpiral(p SpiralProblem, opt AdvantageOptions) (search []float64, mask []bool, agg [][]float64) {
	k := len(p.Subsets)
	f := make([]float64, k)
	for g, rs := range p.Rewards {
		for _, r := range rs {
			f[g] += r / float64(len(rs))
		}
	}
	fbar := 0.0
	for _, v := range f {
		fbar += v / float64(k)
	}
	setAdv := make([]float64, k)
	for g := range f {
		setAdv[g] = f[g] - fbar
		if opt.ScaleSearch {
			setAdv[g] /= sampleStd(f) + StdEpsilon
		}
	}
	search = make([]float64, p.NumSearch)
	mask = make([]bool, p.NumSearch)
	for y := range p.NumSearch {
		var sum float64
		var cnt int
		for g, members := range p.Subsets {
			if slices.Contains(members, y) {
				sum += setAdv[g]
				cnt++
			}
		}
		if cnt > 0 {
			search[y] = sum / float64(cnt)
			mask[y] = !opt.AggregationOnly
		}
	}
	agg = make([][]float64, k)
	for g, rs := range p.Rewards {
		agg[g] = make([]float64, len(rs))
		for j, r := range rs {
			agg[g][j] = r - f[g]
			if opt.ScaleAggregation {
				agg[g][j] /= sampleStd(rs) + StdEpsilon
			}
		}
	}
	return search, mask, agg
}

// sampleStd is the Bessel-corrected std, 0 for fewer than two values.
func sampleStd(x []float64) float64 {
	if len(x) < 2 {
		return 0
	}
	m := 0.0
	for _, v := range x {
		m += v / float64(len(x))
	}
	ss := 0.0
	for _, v := range x {
		ss += (v - m) * (v - m)
	}
	return math.Sqrt(ss / float64(len(x)-1))
}

func TestSpiralAdvantagesMatchesNaiveFormulas(t *testing.T) {
	for seed := range uint64(500) {
		rng := rand.New(rand.NewPCG(seed, 1))
		p := randomProblem(rng)
		for _, opt := range allOptions {
			got, err := SpiralAdvantages(p, opt)
			require.NoError(t, err)
			search, mask, agg := naiveSpiral(p, opt)
			msg := fmt.Sprintf("seed %d opt %+v problem %+v", seed, opt, p)
			// Tolerance: the naive version sums r/n instead of sum(r)/n and
			// skips the constant-group rule; with std scaling a near-constant
			// group divides a 1e-17 rounding residue by eps = 1e-6.
			require.InDeltaSlice(t, search, got.Search, 1e-9, msg)
			require.Equal(t, mask, got.SearchMask, msg)
			require.Equal(t, !opt.SearchOnly, got.TrainAggregation, msg)
			for g := range agg {
				require.InDeltaSlice(t, agg[g], got.Aggregation[g], 1e-9, msg)
			}
		}
	}
}

func TestSpiralAdvantagesProperties(t *testing.T) {
	for seed := range uint64(500) {
		rng := rand.New(rand.NewPCG(seed, 2))
		p := randomProblem(rng)
		for _, opt := range allOptions {
			msg := fmt.Sprintf("seed %d opt %+v", seed, opt)
			got, err := SpiralAdvantages(p, opt)
			require.NoError(t, err)

			// Set advantages sum to zero over the subsets (centred by their mean).
			require.InDelta(t, 0, advSum(got.SetAdvantage), 1e-12, msg)
			// Aggregation advantages sum to zero within each subset.
			for g := range got.Aggregation {
				require.InDelta(t, 0, advSum(got.Aggregation[g]), 1e-12, msg)
			}
			// sum_y |{G : y in G}| A_marg(y) = sum_G |G| A#(G): each
			// (subset, member) pair is counted once on either side.
			lhs, rhs := 0.0, 0.0
			for i, m := range got.Membership {
				lhs += float64(m) * got.Search[i]
			}
			for g, members := range p.Subsets {
				rhs += float64(len(members)) * got.SetAdvantage[g]
			}
			require.InDelta(t, rhs, lhs, 1e-12, msg)

			// Invariance to adding a constant to every reward.
			c := rng.Float64()*10 - 5
			shifted := mapRewards(p, func(r float64) float64 { return r + c })
			gotShift, err := SpiralAdvantages(shifted, opt)
			require.NoError(t, err)
			// Tolerance: r + c rounds at ~|c| * 2^-52 ~ 1e-15; with scaling a
			// group that is constant only after rounding is the worst case,
			// which binary rewards never produce and uniform floats almost
			// never do.
			require.InDeltaSlice(t, got.Search, gotShift.Search, 1e-8, msg)
			for g := range got.Aggregation {
				require.InDeltaSlice(t, got.Aggregation[g], gotShift.Aggregation[g], 1e-8, msg)
			}
			require.Equal(t, got.Informative(), gotShift.Informative(), msg)

			// With both scalings, invariance to multiplying rewards by s > 0,
			// up to eps: d*s/(s*std+eps) vs d/(std+eps) differ by about
			// |A| * eps * |1/s - 1| / std <= ~1e-4 for std >= 0.01, s in [0.5, 2].
			if opt.ScaleSearch && opt.ScaleAggregation {
				s := 0.5 + 1.5*rng.Float64()
				scaled, err := SpiralAdvantages(mapRewards(p, func(r float64) float64 { return r * s }), opt)
				require.NoError(t, err)
				require.InDeltaSlice(t, got.SetAdvantage, scaled.SetAdvantage, 1e-3, msg)
			}
		}
	}
}

func mapRewards(p SpiralProblem, f func(float64) float64) SpiralProblem {
	q := p
	q.Rewards = make([][]float64, len(p.Rewards))
	for g, rs := range p.Rewards {
		q.Rewards[g] = make([]float64, len(rs))
		for j, r := range rs {
			q.Rewards[g][j] = f(r)
		}
	}
	return q
}

func advSum(x []float64) float64 {
	s := 0.0
	for _, v := range x {
		s += v
	}
	return s
}

func TestGRPOAdvantagesHandComputed(t *testing.T) {
	// [1 0 0 0]: mean 0.25, deviations [0.75 -0.25 -0.25 -0.25],
	// sample var = (0.5625 + 3*0.0625)/(4-1) = 0.25, std 0.5.
	// [1 1 0 0]: deviations ±0.5, sample std sqrt(1/3).
	// [3 5]: mean 4, deviations ∓1, sample std sqrt(2/1).
	tests := []struct {
		name    string
		rewards []float64
		opt     GRPOOptions
		want    []float64
	}{
		{"one of four", []float64{1, 0, 0, 0}, GRPOOptions{}, []float64{0.75 / 0.500001, -0.25 / 0.500001, -0.25 / 0.500001, -0.25 / 0.500001}},
		{"one of four Dr. GRPO", []float64{1, 0, 0, 0}, GRPOOptions{NoStdScaling: true}, []float64{0.75, -0.25, -0.25, -0.25}},
		{"half", []float64{1, 1, 0, 0}, GRPOOptions{}, []float64{0.5 / (math.Sqrt(1.0/3) + 1e-6), 0.5 / (math.Sqrt(1.0/3) + 1e-6), -0.5 / (math.Sqrt(1.0/3) + 1e-6), -0.5 / (math.Sqrt(1.0/3) + 1e-6)}},
		{"non-binary", []float64{3, 5}, GRPOOptions{}, []float64{-1 / (math.Sqrt2 + 1e-6), 1 / (math.Sqrt2 + 1e-6)}},
		{"all correct", []float64{1, 1, 1}, GRPOOptions{}, []float64{0, 0, 0}},
		{"group of one", []float64{1}, GRPOOptions{}, []float64{0}},
		{"group of one Dr. GRPO", []float64{1}, GRPOOptions{NoStdScaling: true}, []float64{0}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := GRPOAdvantages(tc.rewards, tc.opt)
			require.NoError(t, err)
			require.InDeltaSlice(t, tc.want, got, 1e-12)
		})
	}
}

func TestGRPOErrors(t *testing.T) {
	_, err := GRPOAdvantages(nil, GRPOOptions{})
	require.ErrorContains(t, err, "rl: grpo: empty group")
	_, err = GRPOAdvantages([]float64{0, math.NaN()}, GRPOOptions{})
	require.ErrorContains(t, err, "rl: grpo: reward 1 is NaN")
	_, err = GRPOAdvantages([]float64{0, math.Inf(-1)}, GRPOOptions{})
	require.ErrorContains(t, err, "reward 1 is -Inf")
}

// defaultBatch is the paper's batch shape with our default split:
// 256 problems, N1 = 8, K = 4 subsets of n = 4, N2 = 4.
func defaultBatch(rng *rand.Rand) []SpiralProblem {
	problems := make([]SpiralProblem, 256)
	for i := range problems {
		p := SpiralProblem{NumSearch: 8, Subsets: make([][]int, 4), Rewards: make([][]float64, 4)}
		for g := range 4 {
			p.Subsets[g] = rng.Perm(8)[:4]
			p.Rewards[g] = []float64{float64(rng.IntN(2)), float64(rng.IntN(2)), float64(rng.IntN(2)), float64(rng.IntN(2))}
		}
		problems[i] = p
	}
	return problems
}

func BenchmarkSpiralAdvantagesPerProblem(b *testing.B) {
	problems := defaultBatch(rand.New(rand.NewPCG(1, 2)))
	for b.Loop() {
		for _, p := range problems {
			if _, err := SpiralAdvantages(p, AdvantageOptions{}); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// FuzzSpiralAdvantages decodes arbitrary bytes into a problem (possibly
// malformed: out-of-range or repeated indices, empty rows) and checks that
// SpiralAdvantages either errors, exactly when Validate does or both
// ablations are set, or returns
// advantages that satisfy the zero-sum properties and equal the naive
// formulas.
func FuzzSpiralAdvantages(f *testing.F) {
	f.Add([]byte{4, 3, 2, 0, 1, 4, 1, 1, 0, 0, 2, 1, 2, 4, 1, 1, 1, 1, 2, 2, 0, 4, 0, 0, 0, 0}, uint8(0))
	f.Add([]byte{2, 1, 2, 0, 0, 1, 1}, uint8(3))
	f.Add([]byte{4, 3, 2, 0, 1, 4, 1, 1, 0, 0, 2, 1, 2, 4, 1, 1, 1, 1, 2, 2, 0, 4, 0, 0, 0, 0}, uint8(8))
	f.Add([]byte{2, 1, 2, 0, 0, 1, 1}, uint8(12))
	f.Fuzz(func(t *testing.T, data []byte, flags uint8) {
		next := func() int {
			if len(data) == 0 {
				return 0
			}
			b := int(data[0])
			data = data[1:]
			return b
		}
		p := SpiralProblem{NumSearch: next()%12 - 1}
		k := next() % 6
		for range k {
			members := make([]int, next()%6)
			for i := range members {
				members[i] = next()%14 - 1
			}
			rewards := make([]float64, next()%5)
			for j := range rewards {
				rewards[j] = float64(next()) / 17
			}
			p.Subsets = append(p.Subsets, members)
			p.Rewards = append(p.Rewards, rewards)
		}
		opt := AdvantageOptions{ScaleSearch: flags&1 != 0, ScaleAggregation: flags&2 != 0, AggregationOnly: flags&4 != 0, SearchOnly: flags&8 != 0}
		got, err := SpiralAdvantages(p, opt)
		if opt.AggregationOnly && opt.SearchOnly {
			require.ErrorContains(t, err, "AggregationOnly and SearchOnly together train nothing")
			return
		}
		if vErr := p.Validate(); vErr != nil {
			require.Error(t, err)
			return
		}
		require.NoError(t, err)
		// Std scaling divides rounding noise by std + StdEpsilon (down to
		// 1e-6), so a scaled advantage carries up to 1e-16 x 1e6 x |reward|
		// <= 1e-8 of it, and a sum of n of them n times that; unscaled
		// sums hold to 1e-9.
		sumTol := func(scaled bool, n int) float64 {
			if scaled {
				return 1e-8 * float64(max(n, 1))
			}
			return 1e-9
		}
		require.InDelta(t, 0, advSum(got.SetAdvantage), sumTol(opt.ScaleSearch, len(got.SetAdvantage)))
		for _, row := range got.Aggregation {
			require.InDelta(t, 0, advSum(row), sumTol(opt.ScaleAggregation, len(row)))
		}
		tol := func(want float64) float64 { return 1e-8 + 1e-9*math.Abs(want) }
		search, mask, agg := naiveSpiral(p, opt)
		require.Equal(t, mask, got.SearchMask)
		require.Equal(t, !opt.SearchOnly, got.TrainAggregation)
		for i := range search {
			require.InDelta(t, search[i], got.Search[i], tol(search[i]))
		}
		for g := range agg {
			for j := range agg[g] {
				require.InDelta(t, agg[g][j], got.Aggregation[g][j], tol(agg[g][j]))
			}
		}
	})
}

func TestSpiralAdvantagesOwnReward(t *testing.T) {
	// The worked example with the search traces' own rewards. Trace 3 sits
	// in no subset, so the mean is over traces 0-2 and trace 3 gets nothing:
	//  rewards [1 0 0 1]: held [1 0 0], mean 1/3, centred [2/3 -1/3 -1/3];
	//  weight 0.5: A_marg [-0.25 0.25 0 0] + [1/3 -1/6 -1/6 0].
	//  rewards [1 1 1 0]: held all equal, nothing added.
	//  rewards [0 0 1 0] under agg-only: added, but SearchMask stays false.
	tests := []struct {
		name    string
		rewards []float64
		opt     AdvantageOptions
		search  []float64
		mask    []bool
	}{
		{"mixed", []float64{1, 0, 0, 1}, AdvantageOptions{SearchOwnReward: 0.5},
			[]float64{-0.25 + 1.0/3, 0.25 - 1.0/6, -1.0 / 6, 0}, []bool{true, true, true, false}},
		{"constant held rewards", []float64{1, 1, 1, 0}, AdvantageOptions{SearchOwnReward: 0.5},
			[]float64{-0.25, 0.25, 0, 0}, []bool{true, true, true, false}},
		{"weight 2 with search-only", []float64{0, 0, 1, 0}, AdvantageOptions{SearchOwnReward: 2, SearchOnly: true},
			[]float64{-0.25 - 2.0/3, 0.25 - 2.0/3, 4.0 / 3, 0}, []bool{true, true, true, false}},
		{"agg-only", []float64{0, 0, 1, 0}, AdvantageOptions{SearchOwnReward: 1, AggregationOnly: true},
			[]float64{-0.25 - 1.0/3, 0.25 - 1.0/3, 2.0 / 3, 0}, []bool{false, false, false, false}},
		{"weight 0 ignores the rewards", []float64{1, 0, 0, 1}, AdvantageOptions{},
			[]float64{-0.25, 0.25, 0, 0}, []bool{true, true, true, false}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := workedProblem()
			p.SearchRewards = tc.rewards
			got, err := SpiralAdvantages(p, tc.opt)
			require.NoError(t, err)
			require.InDeltaSlice(t, tc.search, got.Search, 1e-12)
			require.Equal(t, tc.mask, got.SearchMask)
			require.InDeltaSlice(t, []float64{0.5, 0.5, -0.5, -0.5}, got.Aggregation[0], 1e-12)
		})
	}

	// A problem whose set values are all equal (no set signal) is
	// informative through its own-reward term alone.
	flat := SpiralProblem{NumSearch: 2, Subsets: [][]int{{0}, {1}}, Rewards: [][]float64{{1, 0}, {0, 1}}, SearchRewards: []float64{1, 0}}
	got, err := SpiralAdvantages(flat, AdvantageOptions{SearchOwnReward: 1, SearchOnly: true})
	require.NoError(t, err)
	require.Equal(t, []float64{0.5, -0.5}, got.Search)
	require.True(t, got.Informative())
	got, err = SpiralAdvantages(flat, AdvantageOptions{SearchOnly: true})
	require.NoError(t, err)
	require.False(t, got.Informative())
}

func TestSpiralAdvantagesOwnRewardErrors(t *testing.T) {
	tests := []struct {
		name    string
		rewards []float64
		weight  float64
		want    string
	}{
		{"no rewards", nil, 0.5, "own-reward weight 0.5 without the search traces' rewards"},
		{"too few", []float64{1, 0}, 0.5, "2 search rewards for 4 search traces"},
		{"too few, weight 0", []float64{1, 0}, 0, "2 search rewards for 4 search traces"},
		{"NaN reward", []float64{1, 0, math.NaN(), 0}, 0.5, "search reward 2 is NaN"},
		{"infinite weight", []float64{1, 0, 0, 0}, math.Inf(1), "own-reward weight +Inf: want a finite number"},
		{"NaN weight", []float64{1, 0, 0, 0}, math.NaN(), "own-reward weight NaN: want a finite number"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := workedProblem()
			p.SearchRewards = tc.rewards
			_, err := SpiralAdvantages(p, AdvantageOptions{SearchOwnReward: tc.weight})
			require.ErrorContains(t, err, tc.want)
		})
	}
}

// exactSearch is each search trace's advantage (A_marg plus the
// own-reward term of weight w, unscaled) in rational arithmetic, 0 for a
// trace in no subset (p.SearchRewards is read only for w != 0). The
// weight is the decimal a user types
// (--search-own-reward 0.1), the shortest that parses to w, not w's
// binary value 0.1000000000000000055...
func exactSearch(t *testing.T, p SpiralProblem, w float64) []*big.Rat {
	weight, ok := new(big.Rat).SetString(strconv.FormatFloat(w, 'g', -1, 64))
	require.True(t, ok, "weight %v", w)
	k := len(p.Subsets)
	f := make([]*big.Rat, k)
	fbar := new(big.Rat)
	for g, rs := range p.Rewards {
		f[g] = new(big.Rat)
		for _, r := range rs {
			f[g].Add(f[g], new(big.Rat).SetFloat64(r))
		}
		f[g].Quo(f[g], big.NewRat(int64(len(rs)), 1))
		fbar.Add(fbar, f[g])
	}
	fbar.Quo(fbar, big.NewRat(int64(k), 1))
	adv := make([]*big.Rat, p.NumSearch)
	var held []int
	rbar := new(big.Rat)
	for i := range p.NumSearch {
		adv[i] = new(big.Rat)
		m := int64(0)
		for g, members := range p.Subsets {
			if slices.Contains(members, i) {
				adv[i].Add(adv[i], f[g])
				m++
			}
		}
		if m > 0 {
			adv[i].Sub(adv[i].Quo(adv[i], big.NewRat(m, 1)), fbar)
			held = append(held, i)
			if w != 0 {
				rbar.Add(rbar, new(big.Rat).SetFloat64(p.SearchRewards[i]))
			}
		}
	}
	if len(held) == 0 || w == 0 {
		return adv
	}
	rbar.Quo(rbar, big.NewRat(int64(len(held)), 1))
	for _, i := range held {
		own := new(big.Rat).Sub(new(big.Rat).SetFloat64(p.SearchRewards[i]), rbar)
		adv[i].Add(adv[i], own.Mul(own, weight))
	}
	return adv
}

// TestSpiralOwnRewardExact: with --search-own-reward, a search trace's
// advantage is its A_marg plus w x its centred own reward, and where the
// two cancel in exact arithmetic (A_marg = 1/6, own term -1/6) it must be
// exactly 0, not a rounding residue that Informative, hence dynamic
// sampling, would take for a signal. Binary rewards as the grader gives
// them, the default 8 + 4x4 shape and random ones, dyadic and other
// weights; each advantage is checked against rational arithmetic.
func TestSpiralOwnRewardExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 5))
	weights := []float64{0.25, 0.5, 1, 2, 3, 0.1, 0.3, 0.7, 1.1, 1.5}
	for it := range 10000 {
		n1, k, n, n2 := 8, 4, 4, 4
		if it%2 == 1 {
			n1, k, n2 = 1+rng.IntN(8), 1+rng.IntN(6), 1+rng.IntN(7)
			n = 1 + rng.IntN(n1)
		}
		w := weights[rng.IntN(len(weights))]
		p := SpiralProblem{NumSearch: n1, Subsets: make([][]int, k), Rewards: make([][]float64, k), SearchRewards: make([]float64, n1)}
		for g := range k {
			p.Subsets[g] = rng.Perm(n1)[:n]
			p.Rewards[g] = make([]float64, n2)
			for j := range p.Rewards[g] {
				p.Rewards[g][j] = float64(rng.IntN(2))
			}
		}
		for i := range p.SearchRewards {
			p.SearchRewards[i] = float64(rng.IntN(2))
		}
		want := exactSearch(t, p, w)
		searchSignal := slices.ContainsFunc(want, func(a *big.Rat) bool { return a.Sign() != 0 }) // 0 where no subset holds the trace
		aggSignal := false
		for _, rs := range p.Rewards {
			aggSignal = aggSignal || slices.ContainsFunc(rs, func(r float64) bool { return r != rs[0] })
		}
		for _, tc := range []struct {
			opt  AdvantageOptions
			want bool
		}{
			{AdvantageOptions{SearchOwnReward: w}, searchSignal || aggSignal},
			{AdvantageOptions{SearchOwnReward: w, SearchOnly: true}, searchSignal},
		} {
			got, err := SpiralAdvantages(p, tc.opt)
			require.NoError(t, err)
			for i, a := range want {
				if exact, _ := a.Float64(); (a.Sign() == 0) != (got.Search[i] == 0) || math.Abs(got.Search[i]-exact) > 1e-12 {
					t.Fatalf("problem %d %+v, opt %+v: trace %d's advantage is %v, want %v exactly", it, p, tc.opt, i, got.Search[i], a)
				}
			}
			if got.Informative() != tc.want {
				t.Fatalf("problem %d %+v, opt %+v: search advantages %v: Informative() = %v, want %v", it, p, tc.opt, got.Search, !tc.want, tc.want)
			}
		}
	}
}

// TestInformativeRounds: with --agg-rounds 2, an aggregation trace of
// the first round is trained with its own advantage plus its A_marg in
// the second, and a problem is informative when some trained advantage
// is nonzero, not when some round's advantages are: the second round's
// A_marg can cancel the first round's aggregation advantages exactly,
// and dynamic sampling must then drop the problem. Hand-built cases, then
// random binary two-round problems against rational arithmetic.
func TestInformativeRounds(t *testing.T) {
	tests := []struct {
		name    string
		rounds  []SpiralProblem
		opt     AdvantageOptions
		want    bool
		because string
	}{
		{"halves cancel", []SpiralProblem{
			{NumSearch: 2, Subsets: [][]int{{1, 0}, {0, 1}}, Rewards: [][]float64{{0, 0}, {1, 0}}},
			{NumSearch: 4, Subsets: [][]int{{2, 1}, {3, 1}}, Rewards: [][]float64{{0, 0}, {1, 1}}},
		}, AdvantageOptions{}, false,
			"round 1: A_marg 0, aggregation [0 0] [0.5 -0.5]; round 2: A_marg of traces 2 and 3 -0.5 and 0.5, of trace 1 0, aggregation 0: every sum is 0"},
		{"halves cancel, agg-only", []SpiralProblem{
			{NumSearch: 2, Subsets: [][]int{{1, 0}, {0, 1}}, Rewards: [][]float64{{0, 0}, {1, 0}}},
			{NumSearch: 4, Subsets: [][]int{{2, 1}, {3, 1}}, Rewards: [][]float64{{0, 0}, {1, 1}}},
		}, AdvantageOptions{AggregationOnly: true}, true,
			"agg-only masks the second round's A_marg out: the first round's 0.5 and -0.5 are trained as they are"},
		{"thirds cancel", []SpiralProblem{
			{NumSearch: 2, Subsets: [][]int{{0, 1}, {1, 0}, {0, 1}}, Rewards: [][]float64{{1, 0, 0}, {0, 0, 0}, {0, 0, 0}}},
			{NumSearch: 9, Subsets: [][]int{{0}, {1}, {2}}, Rewards: [][]float64{{0, 0, 0}, {1, 1, 1}, {1, 1, 1}}},
		}, AdvantageOptions{}, false,
			"round 1: aggregation [2/3 -1/3 -1/3]; round 2: A_marg [-2/3 1/3 1/3], which must cancel in float64 too"},
		{"thirds do not cancel", []SpiralProblem{
			{NumSearch: 2, Subsets: [][]int{{0, 1}, {1, 0}, {0, 1}}, Rewards: [][]float64{{1, 0, 0}, {0, 0, 0}, {0, 0, 0}}},
			{NumSearch: 9, Subsets: [][]int{{1}, {0}, {2}}, Rewards: [][]float64{{0, 0, 0}, {1, 1, 1}, {1, 1, 1}}},
		}, AdvantageOptions{}, true,
			"round 2 holds traces 0 and 1 the other way round: 2/3 + 1/3 and -1/3 - 2/3"},
		{"one round", []SpiralProblem{
			{NumSearch: 2, Subsets: [][]int{{0, 1}, {1, 0}}, Rewards: [][]float64{{1, 0}, {0, 1}}},
		}, AdvantageOptions{}, true,
			"one round is SpiralResult.Informative: aggregation 0.5 -0.5"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			results := make([]SpiralResult, len(tc.rounds))
			for a, p := range tc.rounds {
				var err error
				results[a], err = SpiralAdvantages(p, tc.opt)
				require.NoError(t, err)
			}
			require.Equal(t, tc.want, informativeRounds(results), tc.because)
		})
	}

	rng := rand.New(rand.NewPCG(13, 1))
	for it := range 5000 {
		n1, k, n, n2 := 8, 4, 4, 4
		if it%2 == 1 {
			n1, k, n2 = 2+rng.IntN(6), 1+rng.IntN(4), 1+rng.IntN(4)
			n = 1 + rng.IntN(n1)
		}
		rounds := make([]SpiralProblem, 2)
		for a, pop := range []int{n1, k * n2} {
			p := SpiralProblem{NumSearch: pop, Subsets: make([][]int, k), Rewards: make([][]float64, k)}
			for g := range k {
				p.Subsets[g] = rng.Perm(pop)[:min(n, pop)]
				p.Rewards[g] = make([]float64, n2)
				for j := range p.Rewards[g] {
					p.Rewards[g][j] = float64(rng.IntN(2))
				}
			}
			rounds[a] = p
		}
		// The exact trained advantages: A_marg of the first round's held
		// search traces, r - f of every aggregation trace plus, in the
		// first round, its A_marg in the second where a subset holds it.
		search := [2][]*big.Rat{exactSearch(t, rounds[0], 0), exactSearch(t, rounds[1], 0)}
		for _, opt := range []AdvantageOptions{{}, {AggregationOnly: true}} {
			results := make([]SpiralResult, 2)
			for a, p := range rounds {
				var err error
				results[a], err = SpiralAdvantages(p, opt)
				require.NoError(t, err)
			}
			signal := false
			if !opt.AggregationOnly {
				for i, a := range search[0] {
					signal = signal || results[0].SearchMask[i] && a.Sign() != 0
				}
			}
			for a, p := range rounds {
				for s, rs := range p.Rewards {
					f := new(big.Rat)
					for _, r := range rs {
						f.Add(f, new(big.Rat).SetFloat64(r))
					}
					f.Quo(f, big.NewRat(int64(len(rs)), 1))
					for j, r := range rs {
						want := new(big.Rat).Sub(new(big.Rat).SetFloat64(r), f)
						if a == 0 && !opt.AggregationOnly && results[1].SearchMask[s*n2+j] {
							want.Add(want, search[1][s*n2+j])
						}
						got := roundAdvantage(results, a, s, j, n2)
						if exact, _ := want.Float64(); (want.Sign() == 0) != (got == 0) || math.Abs(got-exact) > 1e-12 {
							t.Fatalf("problem %d %+v, opt %+v: round %d subset %d trace %d's advantage is %v, want %v exactly", it, rounds, opt, a+1, s, j, got, want)
						}
						signal = signal || want.Sign() != 0
					}
				}
			}
			if informativeRounds(results) != signal {
				t.Fatalf("problem %d %+v, opt %+v: informativeRounds = %v, want %v", it, rounds, opt, !signal, signal)
			}
		}
	}
}
