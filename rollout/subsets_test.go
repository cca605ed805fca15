package rollout

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSubsetsErrors(t *testing.T) {
	tests := []struct {
		name          string
		nTraces, k, n int
		want          string
	}{
		{"n > traces", 3, 2, 4, "rollout: subsets: subset size 4 > 3 traces"},
		{"n zero", 3, 2, 0, "subset size 0 < 1"},
		{"negative k", 3, -1, 2, "negative count"},
		{"negative traces", -1, 1, 1, "negative count"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Subsets(rand.New(rand.NewPCG(1, 1)), tc.nTraces, tc.k, tc.n)
			require.ErrorContains(t, err, tc.want)
		})
	}
}

func TestSubsetsShape(t *testing.T) {
	for seed := range uint64(300) {
		rng := rand.New(rand.NewPCG(seed, 5))
		nTraces := 1 + rng.IntN(12)
		n := 1 + rng.IntN(nTraces)
		k := rng.IntN(7)
		got, err := Subsets(rng, nTraces, k, n)
		require.NoError(t, err)
		require.NotNil(t, got)
		require.Len(t, got, k)
		for g, s := range got {
			require.Len(t, s, n, "seed %d subset %d", seed, g)
			for _, i := range s {
				require.True(t, i >= 0 && i < nTraces, "seed %d subset %d: %v", seed, g, s)
			}
			sorted := slices.Sorted(slices.Values(s))
			require.Len(t, slices.Compact(sorted), n, "seed %d subset %d repeats: %v", seed, g, s)
			// Appending to one subset must not overwrite its neighbour.
			require.Equal(t, n, cap(s), "seed %d subset %d", seed, g)
		}
	}
	// n == nTraces: every subset is a permutation of all traces.
	got, err := Subsets(rand.New(rand.NewPCG(2, 2)), 5, 3, 5)
	require.NoError(t, err)
	for _, s := range got {
		require.ElementsMatch(t, []int{0, 1, 2, 3, 4}, s)
	}
}

func TestSubsetsDeterministic(t *testing.T) {
	a, err := Subsets(rand.New(rand.NewPCG(7, 7)), 8, 4, 4)
	require.NoError(t, err)
	b, err := Subsets(rand.New(rand.NewPCG(7, 7)), 8, 4, 4)
	require.NoError(t, err)
	require.Equal(t, a, b)
}

// subsetsChi2Critical approximates the upper-tail critical value of a chi-square
// with df degrees of freedom at tail probability Phi(-z), by the
// Wilson–Hilferty cube-root normal approximation (accurate to ~1% here):
// df (1 - 2/(9df) + z sqrt(2/(9df)))^3. z = 4.753 is the standard normal
// quantile for tail probability 1e-6, so a correct sampler fails one of
// these checks with probability about 1e-6 (the seeds are fixed anyway).
func subsetsChi2Critical(df int) float64 {
	const z = 4.753
	d := float64(df)
	return d * math.Pow(1-2/(9*d)+z*math.Sqrt(2/(9*d)), 3)
}

// subsetsChi2 returns Pearson's statistic sum (O-E)^2/E for counts against a
// uniform expectation over cells cells (cells absent from counts count 0).
func subsetsChi2(counts map[string]int, cells, total int) float64 {
	e := float64(total) / float64(cells)
	s := 0.0
	for _, o := range counts {
		s += (float64(o) - e) * (float64(o) - e) / e
	}
	s += float64(cells-len(counts)) * e // unseen cells: (0-e)^2/e
	return s
}

func setKey(s []int) string { return fmt.Sprint(slices.Sorted(slices.Values(s))) }

// drawFunc is a subset sampler under test, so that the same statistics can
// be shown to reject a biased sampler.
type drawFunc func(rng *rand.Rand, nTraces, k, n int) [][]int

func subsetsOrFail(t *testing.T) drawFunc {
	return func(rng *rand.Rand, nTraces, k, n int) [][]int {
		s, err := Subsets(rng, nTraces, k, n)
		require.NoError(t, err)
		return s
	}
}

// biasedDraw rejects subsets holding trace 0 with probability 1/5: a
// plausible bug (a off-by-one in a shuffle) of similar size.
func biasedDraw(rng *rand.Rand, nTraces, k, n int) [][]int {
	out := make([][]int, k)
	for g := range out {
		for {
			s := rng.Perm(nTraces)[:n]
			if !slices.Contains(s, 0) || rng.IntN(5) != 0 {
				out[g] = s
				break
			}
		}
	}
	return out
}

// disjointDraw draws each subset uniformly but keeps the subsets of one
// call disjoint while traces remain: uniform marginals, dependent subsets.
func disjointDraw(rng *rand.Rand, nTraces, k, n int) [][]int {
	out := make([][]int, k)
	perm := rng.Perm(nTraces)
	for g := range out {
		if (g+1)*n <= nTraces {
			out[g] = perm[g*n : (g+1)*n]
		} else {
			out[g] = rng.Perm(nTraces)[:n]
		}
	}
	return out
}

// uniformSetStat: with N = 5 traces and n = 2 there are C(5,2) = 10
// subsets; 20000 draws of one subset each, chi-square with 9 df.
func uniformSetStat(draw drawFunc, rng *rand.Rand) (stat, crit float64) {
	const draws = 20000
	counts := map[string]int{}
	for range draws {
		counts[setKey(draw(rng, 5, 1, 2)[0])]++
	}
	return subsetsChi2(counts, 10, draws), subsetsChi2Critical(9)
}

// jointStat: N = 4, n = 2, k = 2 subsets per call; the ordered pair
// (subset 0, subset 1) takes C(4,2)^2 = 36 values, uniform iff each subset
// is uniform and independent of the other. 36000 calls, 35 df.
func jointStat(draw drawFunc, rng *rand.Rand) (stat, crit float64) {
	const draws = 36000
	counts := map[string]int{}
	for range draws {
		s := draw(rng, 4, 2, 2)
		counts[setKey(s[0])+setKey(s[1])]++
	}
	return subsetsChi2(counts, 36, draws), subsetsChi2Critical(35)
}

// positionStat: N = 6, n = 3: the index at each position of a subset is
// uniform over the 6 traces (no position bias in the aggregation prompt).
// 12000 subsets, 3 positions x 6 traces, chi-square per position (5 df),
// returns the largest.
func positionStat(draw drawFunc, rng *rand.Rand) (stat, crit float64) {
	const draws = 12000
	counts := make([]map[string]int, 3)
	for p := range counts {
		counts[p] = map[string]int{}
	}
	for range draws {
		s := draw(rng, 6, 1, 3)[0]
		for p, i := range s {
			counts[p][fmt.Sprint(i)]++
		}
	}
	for p := range counts {
		stat = max(stat, subsetsChi2(counts[p], 6, draws))
	}
	return stat, subsetsChi2Critical(5)
}

func TestSubsetsUniform(t *testing.T) {
	tests := []struct {
		name string
		stat func(drawFunc, *rand.Rand) (float64, float64)
	}{
		{"each subset uniform", uniformSetStat},
		{"subsets independent", jointStat},
		{"positions uniform", positionStat},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			stat, crit := tc.stat(subsetsOrFail(t), rand.New(rand.NewPCG(11, 12)))
			require.Less(t, stat, crit, "Subsets fails the chi-square test")
		})
	}
	// The tests have power: a biased sampler and a sampler with dependent
	// subsets are rejected.
	rejects := []struct {
		name string
		stat func(drawFunc, *rand.Rand) (float64, float64)
		draw drawFunc
	}{
		{"uniform rejects biased", uniformSetStat, biasedDraw},
		{"independent rejects biased", jointStat, biasedDraw},
		{"independent rejects disjoint", jointStat, disjointDraw},
	}
	for _, tc := range rejects {
		t.Run(tc.name, func(t *testing.T) {
			stat, crit := tc.stat(tc.draw, rand.New(rand.NewPCG(11, 12)))
			require.Greater(t, stat, crit, "flawed sampler passed the chi-square test")
		})
	}
}

// TestSubsetsMembershipFrequency checks the default shape N1 = 8, K = 4,
// n = 4: each trace sits in a given subset with probability n/N1 = 1/2,
// so over D calls its membership count is Binomial(4D, 1/2) (the K subsets
// are independent). Bound: 5 standard deviations, two-sided tail ~5.7e-7
// per trace.
func TestSubsetsMembershipFrequency(t *testing.T) {
	const draws, nTraces, k, n = 5000, 8, 4, 4
	rng := rand.New(rand.NewPCG(3, 4))
	counts := make([]int, nTraces)
	for range draws {
		s, err := Subsets(rng, nTraces, k, n)
		require.NoError(t, err)
		for _, sub := range s {
			for _, i := range sub {
				counts[i]++
			}
		}
	}
	trials, p := float64(draws*k), float64(n)/nTraces
	mean, sd := trials*p, math.Sqrt(trials*p*(1-p))
	for i, c := range counts {
		require.InDelta(t, mean, float64(c), 5*sd, "trace %d: %d memberships, expected %.0f ± %.0f", i, c, mean, sd)
	}
}

func BenchmarkSubsets(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	for b.Loop() {
		if _, err := Subsets(rng, 8, 4, 4); err != nil {
			b.Fatal(err)
		}
	}
}
