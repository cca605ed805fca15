package report_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/spiral-rl/spiral/rollout"
	"github.com/spiral-rl/spiral/rollout/report"
)

// countsReport is a pass@k report of n samples per problem whose problem i
// had counts[i] correct, its points computed from the counts.
func countsReport(t *testing.T, label string, n int, counts []int) report.PassAtK {
	t.Helper()
	r := report.PassAtK{Meta: report.Meta{Label: label}, Config: rollout.PassAtKConfig{Samples: n}}
	for i, c := range counts {
		r.PerProblem = append(r.PerProblem, rollout.ProblemCorrect{ID: fmt.Sprint("p", i), Correct: c})
	}
	for _, k := range rollout.PowersOfTwo(n) {
		pt := rollout.KPoint{K: k}
		for _, c := range counts {
			p, err := rollout.PassAtK(n, c, k)
			require.NoError(t, err)
			pt.PassAtK += p
		}
		pt.PassAtK /= float64(len(counts))
		r.Points = append(r.Points, pt)
	}
	return r
}

func same(c, m int) []int {
	out := make([]int, m)
	for i := range out {
		out[i] = c
	}
	return out
}

// TestEfficiencyIntervalsConstant: when every problem and seed is alike,
// every draw is the point estimate, so each interval is that single
// value, bounds included.
func TestEfficiencyIntervalsConstant(t *testing.T) {
	ref := []report.PassAtK{countsReport(t, "a", 64, same(8, 20)), countsReport(t, "a", 64, same(8, 20))}
	other := []report.PassAtK{countsReport(t, "b", 64, same(3, 20))}
	other[0].Points = other[0].Points[:5] // k <= 16
	eff, err := report.PassAtKEfficiency(ref[0], other[0])
	require.NoError(t, err)
	iv, err := report.EfficiencyIntervals(ref, other, report.Bootstrap{Draws: 50, Level: 0.95, Seed: 3})
	require.NoError(t, err)
	require.Len(t, iv, len(eff.Points))
	sawBound := false
	for j, p := range eff.Points {
		require.Equal(t, p.K, iv[j].K)
		require.InDelta(t, p.Ratio, iv[j].Lo, 1e-12, "k = %d", p.K)
		require.InDelta(t, p.Ratio, iv[j].Hi, 1e-12, "k = %d", p.K)
		require.Equal(t, p.Bound == report.AtLeast, iv[j].HiAtLeast, "k = %d", p.K)
		require.Equal(t, p.Bound == report.AtLeast, iv[j].LoAtLeast, "k = %d: the lower end's draw is as bounded as every draw", p.K)
		sawBound = sawBound || iv[j].HiAtLeast
	}
	require.True(t, sawBound, "3 of 64 within k = 16 never reaches 8 of 64's pass@64")
}

// TestEfficiencyIntervalsSeeds: with the problems alike but two reference
// seeds that differ, a draw's reference curve is seed A's (probability
// 1/4), seed B's (1/4) or their mean; so the 95% interval runs from the
// efficiency of the weaker seed alone to that of the stronger alone.
func TestEfficiencyIntervalsSeeds(t *testing.T) {
	weak, strong := countsReport(t, "a", 64, same(6, 10)), countsReport(t, "a", 64, same(12, 10))
	other := []report.PassAtK{countsReport(t, "b", 64, same(4, 10))}
	iv, err := report.EfficiencyIntervals([]report.PassAtK{weak, strong}, other, report.DefaultBootstrap())
	require.NoError(t, err)
	lo, err := report.PassAtKEfficiency(weak, other[0])
	require.NoError(t, err)
	hi, err := report.PassAtKEfficiency(strong, other[0])
	require.NoError(t, err)
	for j := range iv {
		require.InDelta(t, lo.Points[j].Ratio, iv[j].Lo, 1e-12, "k = %d", iv[j].K)
		require.InDelta(t, hi.Points[j].Ratio, iv[j].Hi, 1e-12, "k = %d", iv[j].K)
		require.LessOrEqual(t, iv[j].Lo, iv[j].Hi)
	}
	require.Less(t, iv[0].Lo, iv[0].Hi, "the seeds differ at k = 1")
}

// TestEfficiencyIntervalsNarrowWithProblems: the interval holds the point
// estimate, and sixteen times the problems (the same mix repeated)
// narrow it by about four (at least two here).
func TestEfficiencyIntervalsNarrowWithProblems(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	refCounts, otherCounts := make([]int, 64), make([]int, 64)
	for i := range refCounts {
		refCounts[i], otherCounts[i] = r.IntN(33), r.IntN(17)
	}
	width := func(times int) float64 {
		var rc, oc []int
		for range times {
			rc, oc = append(rc, refCounts...), append(oc, otherCounts...)
		}
		ref, other := countsReport(t, "a", 32, rc), countsReport(t, "b", 32, oc)
		eff, err := report.PassAtKEfficiency(ref, other)
		require.NoError(t, err)
		iv, err := report.EfficiencyIntervals([]report.PassAtK{ref}, []report.PassAtK{other}, report.DefaultBootstrap())
		require.NoError(t, err)
		const j = 2 // k = 4: exact for every draw
		require.Equal(t, 4, iv[j].K)
		require.False(t, iv[j].HiAtLeast || iv[j].LoAtMost)
		require.LessOrEqual(t, iv[j].Lo, eff.Points[j].Ratio)
		require.GreaterOrEqual(t, iv[j].Hi, eff.Points[j].Ratio)
		return iv[j].Hi - iv[j].Lo
	}
	few, many := width(1), width(16)
	require.Greater(t, few, 0.0)
	require.Less(t, many, few/2, "64 problems: width %.3f; 1024: %.3f", few, many)
}

// TestEfficiencyIntervalsPaired: a label against itself, its problems
// differing, has the interval [1, 1] at every k: each draw resamples the
// same problems for both labels, so their curves are equal draw by draw
// (resampled apart, they would differ and the ratios spread).
//
// The easy set (every problem at least 80 of 256 correct) has pass@64
// within 1e-12 below pass@128 = 1: its draws gave 0.5 at k = 128 and 256
// before the reference's own k read its curve with the same slack as the
// other's.
func TestEfficiencyIntervalsPaired(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	counts := make([]int, 40)
	for i := range counts {
		counts[i] = r.IntN(33)
	}
	for _, rep := range []report.PassAtK{
		countsReport(t, "a", 32, counts),
		countsReport(t, "easy", 256, []int{80, 90, 100, 120, 200}),
	} {
		iv, err := report.EfficiencyIntervals([]report.PassAtK{rep}, []report.PassAtK{rep}, report.DefaultBootstrap())
		require.NoError(t, err)
		require.Len(t, iv, len(rep.Points))
		for _, p := range iv {
			require.InDelta(t, 1, p.Lo, 1e-9, "%s: k = %d", rep.Meta.Label, p.K)
			require.InDelta(t, 1, p.Hi, 1e-9, "%s: k = %d", rep.Meta.Label, p.K)
		}
	}
}

// TestEfficiencyIntervalsQuantiles: the interval's ends are the
// (1-Level)/2 and (1+Level)/2 quantiles of the drawn ratios. With two
// problems, 6 and 12 of 64 correct for the reference and 4 of 64 on both
// for the other, a draw's problems are the weak one twice (probability
// 1/4), the strong one twice (1/4) or one of each (1/2), and the other's
// curve is the same in every draw; so at levels 0.9 and 0.6 (quantiles
// 5% and 95%, 20% and 80%) the ends are the weak and the strong
// problem's ratios, and at level 0.4 (30% and 70%) both are the mixed
// draw's (the weak share of 2,000 draws, 0.25 +- 0.01, is five standard
// errors from 0.2 and from 0.3, as the strong one from 0.7 and 0.8).
func TestEfficiencyIntervalsQuantiles(t *testing.T) {
	ref := []report.PassAtK{countsReport(t, "a", 64, []int{6, 12})}
	other := []report.PassAtK{countsReport(t, "b", 64, []int{4, 4})}
	ratios := func(counts []int) []float64 {
		eff, err := report.PassAtKEfficiency(countsReport(t, "a", 64, counts), other[0])
		require.NoError(t, err)
		var out []float64
		for _, p := range eff.Points {
			out = append(out, p.Ratio)
		}
		return out
	}
	weak, mixed, strong := ratios([]int{6, 6}), ratios([]int{6, 12}), ratios([]int{12, 12})
	for _, tc := range []struct {
		level  float64
		lo, hi []float64
	}{{0.9, weak, strong}, {0.6, weak, strong}, {0.4, mixed, mixed}} {
		b := report.DefaultBootstrap()
		b.Level = tc.level
		iv, err := report.EfficiencyIntervals(ref, other, b)
		require.NoError(t, err)
		require.Len(t, iv, len(weak))
		for j, p := range iv {
			require.InDelta(t, tc.lo[j], p.Lo, 1e-12, "level %v, k = %d", tc.level, p.K)
			require.InDelta(t, tc.hi[j], p.Hi, 1e-12, "level %v, k = %d", tc.level, p.K)
		}
		require.Less(t, weak[0], mixed[0])
		require.Less(t, mixed[0], strong[0])
	}
}

// TestEfficiencyIntervalsNearestRank: an end is the nearest-rank quantile
// of the draws, ceil(q * draws) of them sorted, whatever the rounding of
// q = (1 - Level) / 2 in float64: at 0.95 that q is 0.025000000000000022,
// and the lower end was the 51st of 2,000 draws instead of the 50th (the
// 2nd of 40 instead of the least). A twin level whose quantile is the
// same rank without the rounding (0.9505: q*2000 = 49.5) gives the same
// end; the draws, with 64 problems of random counts, are all distinct at
// k = 4.
func TestEfficiencyIntervalsNearestRank(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	refCounts, otherCounts := make([]int, 64), make([]int, 64)
	for i := range refCounts {
		refCounts[i], otherCounts[i] = r.IntN(33), r.IntN(17)
	}
	ref, other := countsReport(t, "a", 32, refCounts), countsReport(t, "b", 32, otherCounts)
	const j = 2 // k = 4
	end := func(draws int, level float64) report.RatioInterval {
		iv, err := report.EfficiencyIntervals([]report.PassAtK{ref}, []report.PassAtK{other}, report.Bootstrap{Draws: draws, Level: level, Seed: 1})
		require.NoError(t, err)
		require.Equal(t, 4, iv[j].K)
		return iv[j]
	}
	for _, tc := range []struct {
		draws            int
		level, lowerTwin float64 // lowerTwin: the same lower end's rank
		upperTwin        float64 // the same upper end's rank
	}{
		{2000, 0.95, 0.9505, 0.9495}, // 50th and 1950th
		{40, 0.95, 0.99, 0.92},       // the least and the 39th
		{2000, 0.9, 0.9005, 0.8995},  // 100th and 1900th
		{1000, 0.8, 0.801, 0.799},    // 100th and 900th
	} {
		got := end(tc.draws, tc.level)
		require.Equal(t, end(tc.draws, tc.lowerTwin).Lo, got.Lo, "%d draws at %v: lower end", tc.draws, tc.level)
		require.Equal(t, end(tc.draws, tc.upperTwin).Hi, got.Hi, "%d draws at %v: upper end", tc.draws, tc.level)
		require.NotEqual(t, end(tc.draws, tc.upperTwin).Lo, got.Lo, "%d draws: the draws differ next to the lower end", tc.draws)
	}
}

func TestEfficiencyIntervalsRejects(t *testing.T) {
	good := countsReport(t, "a", 8, []int{1, 2, 3})
	noCounts := good
	noCounts.PerProblem = nil
	renamed := countsReport(t, "b", 8, []int{1, 2, 3})
	renamed.PerProblem = append([]rollout.ProblemCorrect(nil), renamed.PerProblem...)
	renamed.PerProblem[1].ID = "other"
	stale := countsReport(t, "b", 8, []int{1, 2, 3})
	stale.PerProblem = append([]rollout.ProblemCorrect(nil), stale.PerProblem...)
	stale.PerProblem[0].Correct = 5
	fewer := countsReport(t, "b", 8, []int{1, 2})
	for name, tc := range map[string]struct {
		other []report.PassAtK
		b     report.Bootstrap
		want  string
	}{
		"no counts":      {[]report.PassAtK{noCounts}, report.DefaultBootstrap(), "no per-problem counts"},
		"other problems": {[]report.PassAtK{renamed}, report.DefaultBootstrap(), `problem 1 is "other"`},
		"stale counts":   {[]report.PassAtK{stale}, report.DefaultBootstrap(), "per-problem counts give pass@1"},
		"fewer problems": {[]report.PassAtK{fewer}, report.DefaultBootstrap(), "2 problems"},
		"no draws":       {[]report.PassAtK{good}, report.Bootstrap{Level: 0.9}, "0 draws"},
		"level":          {[]report.PassAtK{good}, report.Bootstrap{Draws: 10, Level: 1}, "level in (0, 1)"},
		"no reports":     {nil, report.DefaultBootstrap(), "no reports"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := report.EfficiencyIntervals([]report.PassAtK{good}, tc.other, tc.b)
			require.ErrorContains(t, err, tc.want)
		})
	}
}

// TestEfficiencyIntervalsTiedBounds: draws of one ratio, some exact and
// some bounds, are ordered by what they say of the true ratio (an "at
// most" draw below an exact one, an "at least" draw above), so that an
// interval's end carries a bound's mark only where the draws at and
// beyond its rank are bounds. Here the reference's pass@2 is 1 on each of
// 4 problems and the other's (at its largest k, 2) is 1 on problems 0-2
// and 0 on problem 3: every draw's ratio at k = 2 is 1, exact where the
// draw leaves problem 3 out ((3/4)^4, about 32% of the draws), else at
// least 1. The ends were picked among the tied draws in the unstable
// sort's order: the interval read ">=1.00 to >=1.00x", a lower end no
// firmer than "at least" though a third of the draws are exact; it reads
// "1.00 to >=1.00x".
func TestEfficiencyIntervalsTiedBounds(t *testing.T) {
	ref := []report.PassAtK{countsReport(t, "a", 2, same(1, 4))}
	other := []report.PassAtK{countsReport(t, "b", 2, []int{1, 1, 1, 0})}
	iv, err := report.EfficiencyIntervals(ref, other, report.DefaultBootstrap())
	require.NoError(t, err)
	require.Len(t, iv, 2)
	require.Equal(t, report.RatioInterval{K: 2, Lo: 1, Hi: 1, HiAtLeast: true}, iv[1])
}
