package report_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/spiral-rl/spiral/rollout"
	"github.com/spiral-rl/spiral/rollout/report"
)

// curve is pass@k = f(k) at k = 1, 2, 4, ..., kmax.
func curve(label string, kmax int, f func(k float64) float64) report.PassAtK {
	r := report.PassAtK{Meta: report.Meta{Label: label}}
	for k := 1; k <= kmax; k *= 2 {
		r.Points = append(r.Points, rollout.KPoint{K: k, PassAtK: f(float64(k))})
	}
	return r
}

// TestPassAtKEfficiencyKnownRatio: the other curve is the reference's
// shifted by a factor c in k (other(k) = ref(k / c), both linear in log
// k), so it needs exactly c times the samples everywhere it is measured.
func TestPassAtKEfficiencyKnownRatio(t *testing.T) {
	ref := func(k float64) float64 { return 0.1 + 0.1*math.Log2(k) }
	for _, c := range []float64{1, 2, 4, 3} {
		a := curve("a", 64, ref)
		b := curve("b", 1024, func(k float64) float64 { return max(0, ref(k/c)) })
		eff, err := report.PassAtKEfficiency(a, b)
		require.NoError(t, err)
		require.Len(t, eff.Points, 7)
		for _, p := range eff.Points {
			require.Equal(t, report.Exact, p.Bound, "k %d", p.K)
			require.InDelta(t, c, p.Ratio, 1e-9, "c %g k %d", c, p.K)
		}
		require.InDelta(t, c, eff.Max, 1e-9)
	}
}

func TestPassAtKEfficiencyBoundsAndMax(t *testing.T) {
	a := report.PassAtK{Points: []rollout.KPoint{{K: 1, PassAtK: 0.2}, {K: 4, PassAtK: 0.5}, {K: 16, PassAtK: 0.9}}}
	b := report.PassAtK{Points: []rollout.KPoint{{K: 2, PassAtK: 0.3}, {K: 8, PassAtK: 0.5}, {K: 32, PassAtK: 0.6}}}
	eff, err := report.PassAtKEfficiency(a, b)
	require.NoError(t, err)
	// 0.2 is below b's first point (k = 2): b needs at most 2 samples.
	require.Equal(t, report.AtMost, eff.Points[0].Bound)
	require.Equal(t, 2.0, eff.Points[0].OtherK)
	// 0.5 is b's pass@8 exactly: 8 / 4 = 2.
	require.Equal(t, report.Exact, eff.Points[1].Bound)
	require.InDelta(t, 2, eff.Points[1].Ratio, 1e-12)
	// 0.9 is beyond b's best: at least 32 / 16.
	require.Equal(t, report.AtLeast, eff.Points[2].Bound)
	require.InDelta(t, 2, eff.Points[2].Ratio, 1e-12)
	require.InDelta(t, 2, eff.Max, 1e-12)
	require.Equal(t, 4, eff.MaxK)

	// A reference that solved nothing at k = 2 (pass@2 = 0) is matched
	// with no sample at all: b's first k is a bound, not an exact 0.5x,
	// and no maximum (it printed "up to 0.50x" before).
	none := report.PassAtK{Points: []rollout.KPoint{{K: 2, PassAtK: 0}}}
	one := report.PassAtK{Points: []rollout.KPoint{{K: 1, PassAtK: 0}, {K: 2, PassAtK: 0.1}}}
	eff, err = report.PassAtKEfficiency(none, one)
	require.NoError(t, err)
	require.Equal(t, report.AtMost, eff.Points[0].Bound)
	require.Equal(t, 1.0, eff.Points[0].OtherK)
	require.Zero(t, eff.Max)

	// Halfway between b's 0.3 (k 2) and 0.5 (k 8) in pass@k is halfway in
	// log k: k = 4.
	mid := report.PassAtK{Points: []rollout.KPoint{{K: 2, PassAtK: 0.4}}}
	eff, err = report.PassAtKEfficiency(mid, b)
	require.NoError(t, err)
	require.InDelta(t, 4, eff.Points[0].OtherK, 1e-12)
	require.InDelta(t, 2, eff.Points[0].Ratio, 1e-12)

	// A target below a curve measured from k = 1 (0.1 against a's pass@1
	// = 0.2) is passed with one sample already: a smooth curve would need
	// fewer, so the ratio is at most 1, not a measured 1x, and it is no
	// exact maximum but a ceiling above the exact ratios (it counted as an
	// exact 1x, the maximum, with a degenerate 1.00 to 1.00x interval).
	low := report.PassAtK{Points: []rollout.KPoint{{K: 1, PassAtK: 0.1}}}
	eff, err = report.PassAtKEfficiency(low, a)
	require.NoError(t, err)
	require.Equal(t, report.AtMost, eff.Points[0].Bound)
	require.Equal(t, 1.0, eff.Points[0].OtherK)
	require.Zero(t, eff.Max, "a bound is no exact maximum")
	require.InDelta(t, 1, eff.Ceiling, 1e-12)
	require.Equal(t, 1, eff.CeilingK)

	// Reached at k = 1 within reachSlack: one sample, exactly.
	level := report.PassAtK{Points: []rollout.KPoint{{K: 1, PassAtK: 0.2}}}
	eff, err = report.PassAtKEfficiency(level, a)
	require.NoError(t, err)
	require.Equal(t, report.Exact, eff.Points[0].Bound)
	require.InDelta(t, 1, eff.Max, 1e-12)
	require.Zero(t, eff.Ceiling)
}

// TestPassAtKEfficiencyCeiling: an upper bound (the other curve above
// the reference's pass@k at its smallest k) above every exact ratio is
// the efficiency's ceiling; one at a target of 0 (nothing to measure) or
// below the exact maximum or a floor is not.
func TestPassAtKEfficiencyCeiling(t *testing.T) {
	pts := func(kp ...float64) report.PassAtK {
		var r report.PassAtK
		for i := 0; i < len(kp); i += 2 {
			r.Points = append(r.Points, rollout.KPoint{K: int(kp[i]), PassAtK: kp[i+1]})
		}
		return r
	}
	for _, tc := range []struct {
		name         string
		ref, other   report.PassAtK
		max, ceiling float64
		maxK, ceilK  int
	}{
		// b is above a at k = 1 (1x at most), then needs 1.41 and 3.62
		// samples for a's pass@2 and pass@4.
		{"ahead at k = 1", pts(1, 0.2, 2, 0.4, 4, 0.8), pts(1, 0.3, 2, 0.5, 4, 0.85), 0.9057, 1, 4, 1},
		{"ahead everywhere", pts(1, 0.2, 2, 0.4, 4, 0.8), pts(1, 0.9, 2, 0.95, 4, 0.99), 0, 1, 0, 1},
		{"bound below the maximum", pts(1, 0.2, 4, 0.8), pts(1, 0.3, 2, 0.5, 32, 0.85), 5.3837, 0, 4, 0},
		{"target 0", pts(1, 0, 2, 0.4), pts(1, 0.3, 2, 0.5), 1.4142 / 2, 0, 2, 0},
	} {
		eff, err := report.PassAtKEfficiency(tc.ref, tc.other)
		require.NoError(t, err, tc.name)
		require.InDelta(t, tc.max, eff.Max, 1e-4, tc.name)
		require.Equal(t, tc.maxK, eff.MaxK, tc.name)
		require.InDelta(t, tc.ceiling, eff.Ceiling, 1e-12, tc.name)
		require.Equal(t, tc.ceilK, eff.CeilingK, tc.name)
	}
}

// TestUpToKLimitsTheReference: a reference evaluated with as many samples
// as the other curve, cut at k <= 4, keeps its three points, while the
// other curve still says how many samples it needs beyond 4: at k = 4 the
// reference's 0.6 takes the other 16 samples, a ratio of 4 that a curve
// measured to k = 4 only could give as "at least 1" at best.
func TestUpToKLimitsTheReference(t *testing.T) {
	ref := report.PassAtK{Meta: report.Meta{Label: "ref"}, Points: []rollout.KPoint{{K: 1, PassAtK: 0.2}, {K: 2, PassAtK: 0.3}, {K: 4, PassAtK: 0.6}, {K: 8, PassAtK: 0.95}, {K: 16, PassAtK: 0.99}}}
	other := report.PassAtK{Points: []rollout.KPoint{{K: 1, PassAtK: 0.1}, {K: 2, PassAtK: 0.2}, {K: 4, PassAtK: 0.3}, {K: 8, PassAtK: 0.4}, {K: 16, PassAtK: 0.6}}}
	for _, tc := range []struct {
		maxK, points, argmax int
		max                  float64
	}{
		{maxK: 4, points: 3, argmax: 4, max: 4},
		{maxK: 5, points: 3, argmax: 4, max: 4},
		{maxK: 2, points: 2, argmax: 1, max: 2}, // 1 -> 2 and 2 -> 4 samples
		{maxK: 1, points: 1, argmax: 1, max: 2},
	} {
		cut, err := ref.UpToK(tc.maxK)
		require.NoError(t, err)
		require.Len(t, cut.Points, tc.points, "max k %d", tc.maxK)
		require.Len(t, ref.Points, 5, "the original keeps its points")
		eff, err := report.PassAtKEfficiency(cut, other)
		require.NoError(t, err)
		require.InDelta(t, tc.max, eff.Max, 1e-12, "max k %d", tc.maxK)
		require.Equal(t, tc.argmax, eff.MaxK, "max k %d", tc.maxK)
	}
	_, err := ref.UpToK(0)
	require.ErrorContains(t, err, "ref: no pass@k point at k <= 0")
}

func TestPassAtKEfficiencyRejects(t *testing.T) {
	good := report.PassAtK{Points: []rollout.KPoint{{K: 1, PassAtK: 0.2}}}
	for name, other := range map[string]report.PassAtK{
		"empty":      {},
		"decreasing": {Points: []rollout.KPoint{{K: 1, PassAtK: 0.5}, {K: 2, PassAtK: 0.4}}},
		"repeated k": {Points: []rollout.KPoint{{K: 2, PassAtK: 0.5}, {K: 2, PassAtK: 0.6}}},
	} {
		_, err := report.PassAtKEfficiency(good, other)
		require.Error(t, err, name)
	}
}

// TestPassAtKEfficiencyRoundingFall: a curve that falls by a mean's
// rounding, which Validate (ReadJSON) lets through, is compared, not
// refused.
func TestPassAtKEfficiencyRoundingFall(t *testing.T) {
	ref := report.PassAtK{Points: []rollout.KPoint{{K: 1, PassAtK: 0.5}, {K: 4, PassAtK: 0.9}}}
	other := report.PassAtK{Points: []rollout.KPoint{{K: 1, PassAtK: 0.5}, {K: 2, PassAtK: 0.5 - 5e-10}, {K: 4, PassAtK: 0.9}}}
	eff, err := report.PassAtKEfficiency(ref, other)
	require.NoError(t, err)
	require.Equal(t, 1.0, eff.Max)
}

// TestPassAtKEfficiencySelfWithinRounding: a curve whose first point is
// at k > 1 and that falls by rounding (within what Validate allows)
// compares to itself as exactly 1x at every k, not "at most 1x" where it
// fell more than a tighter slack than Validate's.
func TestPassAtKEfficiencySelfWithinRounding(t *testing.T) {
	c := report.PassAtK{Points: []rollout.KPoint{{K: 2, PassAtK: 0.5}, {K: 4, PassAtK: 0.5 - 1e-10}, {K: 8, PassAtK: 0.5 - 6e-10}}}
	eff, err := report.PassAtKEfficiency(c, c)
	require.NoError(t, err)
	for _, p := range eff.Points {
		require.Equal(t, report.Exact, p.Bound, "k = %d", p.K)
		require.InDelta(t, 1, p.Ratio, 1e-6, "k = %d", p.K)
	}
}

func TestRSAGains(t *testing.T) {
	ref := report.RSA{Steps: []rollout.RSAStep{{Step: 0, Accuracy: 0.5}, {Step: 1, Accuracy: 0.55}}}
	r := report.RSA{Steps: []rollout.RSAStep{{Step: 0, Accuracy: 0.4}, {Step: 1, Accuracy: 0.5}, {Step: 2, Accuracy: 0.6}}}
	g, err := report.RSAGains(ref, r)
	require.NoError(t, err)
	require.Len(t, g, 3)
	require.InDelta(t, 0.1, g[1].OverStep0, 1e-12)
	require.InDelta(t, 0.2, g[2].OverStep0, 1e-12)
	require.InDelta(t, -0.1, g[0].OverRef, 1e-12)
	require.InDelta(t, -0.05, g[1].OverRef, 1e-12)
	require.True(t, math.IsNaN(g[2].OverRef), "the reference has no step 2")
}

func TestBudgetGains(t *testing.T) {
	ref := report.Budget{Points: []rollout.BudgetPoint{{MeanTokens: 200, Accuracy: 0.5}, {MeanTokens: 800, Accuracy: 0.6}}}
	other := report.Budget{Points: []rollout.BudgetPoint{{MeanTokens: 400, Accuracy: 0.4, Truncated: 0.25}, {MeanTokens: 100, Accuracy: 0.2, Truncated: 0.5}}}
	g, err := report.BudgetGains(ref, other)
	require.NoError(t, err)
	// 200 tokens is halfway from 100 to 400 in log tokens: 0.3.
	require.InDelta(t, 0.3, g[0].Other, 1e-12)
	require.InDelta(t, 0.2, g[0].Gain, 1e-12)
	require.True(t, math.IsNaN(g[1].Other), "800 tokens lies beyond the other curve, a quarter of whose traces were cut at its largest budget")
}

// TestBudgetGainsPastAStoppedCurve: past the other curve's largest mean
// tokens, its accuracy is known where none of its traces was cut at its
// largest budget (every trace ended within it: at a larger budget they
// are the same traces), and is that budget's accuracy, held; where some
// were cut (or its smallest mean tokens lie above the reference's) it is
// unknown (NaN). Every point past the range was NaN.
func TestBudgetGainsPastAStoppedCurve(t *testing.T) {
	ref := report.Budget{Points: []rollout.BudgetPoint{{Budget: 8, MeanTokens: 8, Accuracy: 0.1, Truncated: 1}, {Budget: 32, MeanTokens: 30, Accuracy: 0.5, Truncated: 0.5},
		{Budget: 64, MeanTokens: 60, Accuracy: 0.7, Truncated: 0.2}}}
	other := func(cut float64) report.Budget {
		// Budgets 16 and 32 spend the same tokens: every trace ended
		// within 16 but those the generator cut at 32 tokens.
		return report.Budget{Points: []rollout.BudgetPoint{{Budget: 8, MeanTokens: 8, Accuracy: 0.2, Truncated: 0.9}, {Budget: 16, MeanTokens: 20, Accuracy: 0.4, Truncated: 0.3},
			{Budget: 32, MeanTokens: 20, Accuracy: 0.4, Truncated: cut}}}
	}
	nan := math.NaN()
	for _, tc := range []struct {
		name  string
		other report.Budget
		want  []float64
		held  []bool
	}{
		{"no trace cut at its largest budget", other(0), []float64{0.2, 0.4, 0.4}, []bool{false, true, true}},
		{"some cut at its largest budget", other(0.05), []float64{0.2, nan, nan}, []bool{false, false, false}},
		{"smallest tokens above the reference's", report.Budget{Points: []rollout.BudgetPoint{{Budget: 16, MeanTokens: 12, Accuracy: 0.3}}}, []float64{nan, 0.3, 0.3}, []bool{false, true, true}},
	} {
		g, err := report.BudgetGains(ref, tc.other)
		require.NoError(t, err, tc.name)
		require.Len(t, g, len(tc.want), tc.name)
		for i, w := range tc.want {
			if math.IsNaN(w) {
				require.True(t, math.IsNaN(g[i].Other), "%s: point %d: other %v", tc.name, i, g[i].Other)
				require.True(t, math.IsNaN(g[i].Gain), "%s: point %d: gain %v", tc.name, i, g[i].Gain)
			} else {
				require.InDelta(t, w, g[i].Other, 1e-12, "%s: point %d", tc.name, i)
				require.InDelta(t, ref.Points[i].Accuracy-w, g[i].Gain, 1e-12, "%s: point %d", tc.name, i)
			}
			require.Equal(t, tc.held[i], g[i].Held, "%s: point %d", tc.name, i)
		}
	}
}

// TestPassAtKEfficiencyReferencePlateau: where the reference's pass@k is
// flat (saturated at 1, or every problem solved always or never), it
// reached its pass@k at the plateau's first k, and the ratio is the other
// curve's samples over that many, not over k: a curve compared with
// itself needs 1x at every k (it printed 0.50x at k = 16 for a curve at 1
// from k = 8).
func TestPassAtKEfficiencyReferencePlateau(t *testing.T) {
	pts := func(ps ...float64) report.PassAtK {
		r := report.PassAtK{}
		for i, p := range ps {
			r.Points = append(r.Points, rollout.KPoint{K: 1 << i, PassAtK: p})
		}
		return r
	}
	for _, tc := range []struct {
		name       string
		ref, other report.PassAtK
		otherK     []float64
		ratio      []float64
		max        float64
	}{
		{"itself, saturated from k = 8", pts(0.75, 0.95, 0.99, 1, 1), pts(0.75, 0.95, 0.99, 1, 1),
			[]float64{1, 2, 4, 8, 8}, []float64{1, 1, 1, 1, 1}, 1},
		// Saturated but for less than reachSlack at k = 8 (80 of 256
		// correct on every problem: pass@64 = 1 - 4.1e-13, pass@128 = 1):
		// the other (the same curve) reaches 1 at k = 8 within the slack,
		// so the reference did too; it printed 0.50x at k = 16.
		{"itself, saturated but for rounding from k = 8", pts(0.75, 0.95, 0.99, 1-4e-13, 1), pts(0.75, 0.95, 0.99, 1-4e-13, 1),
			[]float64{1, 2, 4, 8, 8}, []float64{1, 1, 1, 1, 1}, 1},
		// Falling by rounding after k = 2, 6e-13 a k (each fall within
		// reachSlack, 1.2e-12 in all): 0.5 is reached at k = 2, not
		// "at least 8" because the last point lies below it.
		{"itself, falling by rounding after k = 2", pts(0.2, 0.5, 0.5-6e-13, 0.5-1.2e-12), pts(0.2, 0.5, 0.5-6e-13, 0.5-1.2e-12),
			[]float64{1, 2, 2, 2}, []float64{1, 1, 1, 1}, 1},
		// The other reaches 0.5 at k = 2 (halfway from 0.25 at 1 to 0.75
		// at 4 in log k); the flat reference had 0.5 with one sample.
		{"flat reference", pts(0.5, 0.5, 0.5), pts(0.25, 0.5, 0.75),
			[]float64{2, 2, 2}, []float64{2, 2, 2}, 2},
		// Rising, then flat at 0.9 from k = 4: the other has 0.9 at k = 8.
		{"plateau after a rise", pts(0.3, 0.6, 0.9, 0.9), pts(0.1, 0.3, 0.6, 0.9),
			[]float64{2, 4, 8, 8}, []float64{2, 2, 2, 2}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			eff, err := report.PassAtKEfficiency(tc.ref, tc.other)
			require.NoError(t, err)
			require.Len(t, eff.Points, len(tc.ratio))
			for i, p := range eff.Points {
				require.Equal(t, report.Exact, p.Bound, "k %d", p.K)
				require.InDelta(t, tc.otherK[i], p.OtherK, 1e-9, "other k at k %d", p.K)
				require.InDelta(t, tc.ratio[i], p.Ratio, 1e-9, "ratio at k %d", p.K)
			}
			require.InDelta(t, tc.max, eff.Max, 1e-9)
		})
	}
}

// TestPassAtKEfficiencyRoundingTies: a target equal to one of the other
// curve's points but for the rounding of a mean (the same pass@k summed
// in another order: seeds or problems given in another order) is reached
// there, exactly, not beyond the curve's last k ("at least") nor by
// interpolating past the point.
func TestPassAtKEfficiencyRoundingTies(t *testing.T) {
	// (0.1 + 0.2) + 0.3 and (0.3 + 0.2) + 0.1 differ in the last bit (in
	// float64 arithmetic, not in Go's exact constant arithmetic).
	a, b, c := 0.1, 0.2, 0.3
	up, down := ((a+b)+c)/3, ((c+b)+a)/3
	require.Greater(t, up, down, "the sums differ in rounding")
	for _, tc := range []struct {
		name   string
		ref    []rollout.KPoint
		other  []rollout.KPoint
		ratios []float64
		bounds []report.Bound
	}{
		{"last k", []rollout.KPoint{{K: 1, PassAtK: 0.1}, {K: 8, PassAtK: up}}, []rollout.KPoint{{K: 1, PassAtK: 0.1}, {K: 8, PassAtK: down}},
			[]float64{1, 1}, []report.Bound{report.Exact, report.Exact}},
		{"middle k", []rollout.KPoint{{K: 1, PassAtK: 0.1}, {K: 4, PassAtK: up}, {K: 8, PassAtK: 0.9}}, []rollout.KPoint{{K: 1, PassAtK: 0.1}, {K: 4, PassAtK: down}, {K: 8, PassAtK: 0.9}},
			[]float64{1, 1, 1}, []report.Bound{report.Exact, report.Exact, report.Exact}},
		{"first k above 1", []rollout.KPoint{{K: 2, PassAtK: up}}, []rollout.KPoint{{K: 2, PassAtK: down}, {K: 4, PassAtK: 0.9}},
			[]float64{1}, []report.Bound{report.Exact}},
		{"truly beyond", []rollout.KPoint{{K: 1, PassAtK: 0.1}, {K: 8, PassAtK: 0.5}}, []rollout.KPoint{{K: 1, PassAtK: 0.1}, {K: 8, PassAtK: 0.4999}},
			[]float64{1, 1}, []report.Bound{report.Exact, report.AtLeast}},
	} {
		eff, err := report.PassAtKEfficiency(report.PassAtK{Points: tc.ref}, report.PassAtK{Points: tc.other})
		require.NoError(t, err, tc.name)
		for i, p := range eff.Points {
			require.Equal(t, tc.bounds[i], p.Bound, "%s: k %d", tc.name, p.K)
			require.Equal(t, tc.ratios[i], p.Ratio, "%s: k %d", tc.name, p.K)
		}
	}
}

// TestPassAtKEfficiencyFloor: a ratio that is only a lower bound (the
// other curve never reaches the target within its largest k) above
// every exact ratio is the maximum's floor. b reaches a's 0.2 at k = 2
// (2x) and 0.4 at k = 8 (4x, the largest exact ratio), but never a's 0.8
// within its 64 samples: at k = 4 it needs at least 64 / 4 = 16x, so the
// greatest ratio is at least 16x, not 4x.
func TestPassAtKEfficiencyFloor(t *testing.T) {
	a := report.PassAtK{Points: []rollout.KPoint{{K: 1, PassAtK: 0.2}, {K: 2, PassAtK: 0.4}, {K: 4, PassAtK: 0.8}}}
	b := report.PassAtK{Points: []rollout.KPoint{{K: 1, PassAtK: 0.1}, {K: 2, PassAtK: 0.2}, {K: 8, PassAtK: 0.4}, {K: 64, PassAtK: 0.5}}}
	for _, tc := range []struct {
		name       string
		ref, other report.PassAtK
		max, floor float64
		maxK, flK  int
	}{
		{"bound above the exact maximum", a, b, 4, 16, 2, 4},
		// a against itself: every ratio exact, 1x.
		{"no bound", a, a, 1, 0, 1, 0},
		// a ahead of b at every k: at most 1x at k = 1 (a is above b's
		// 0.1 with one sample), exact ratios of 0.5x and below after it,
		// no lower bound.
		{"other ahead", b, a, 0.5, 0, 2, 0},
		// Every point of a out of reach of a curve measured to k = 8 at
		// 0.1: at least 8, 4 and 2x; no exact ratio.
		{"bounds only", a, report.PassAtK{Points: []rollout.KPoint{{K: 8, PassAtK: 0.1}}}, 0, 8, 0, 1},
	} {
		eff, err := report.PassAtKEfficiency(tc.ref, tc.other)
		require.NoError(t, err, tc.name)
		require.InDelta(t, tc.max, eff.Max, 1e-12, tc.name)
		require.Equal(t, tc.maxK, eff.MaxK, tc.name)
		require.InDelta(t, tc.floor, eff.Floor, 1e-12, tc.name)
		require.Equal(t, tc.flK, eff.FloorK, tc.name)
	}
}
