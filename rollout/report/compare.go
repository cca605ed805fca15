package report

import (
	"errors"
	"fmt"
	"math"
	"sort"

	"github.com/spiral-rl/spiral/rollout"
)

// Bound says whether an efficiency ratio is exact or a bound: the other
// curve never reaches the target within its largest k (its ratio is at
// least the one given) or is already above it at its smallest k (at
// most), k = 1 included: a curve above the target with one sample would
// reach it with fewer, were there fewer, so its 1x there is a cap, not a
// measured ratio. Level with the target at its smallest k (within
// reachSlack) is exact.
type Bound string

// The bounds of an EfficiencyPoint.
const (
	Exact   Bound = ""
	AtLeast Bound = "at least"
	AtMost  Bound = "at most"
)

// EfficiencyPoint is the sample efficiency of a reference pass@k curve
// over another at one k.
type EfficiencyPoint struct {
	K int `json:"k"`
	// Target is the reference's pass@k.
	Target float64 `json:"target"`
	// OtherK is how many samples the other curve needs to reach Target,
	// interpolated linearly in log k between its measured points.
	OtherK float64 `json:"other_k"`
	// Ratio is OtherK over the samples the reference needed for Target:
	// K, or on a plateau of the reference (pass@k equal to an earlier
	// k's but for reachSlack, as at 1) the plateau's first k, read off the
	// reference's curve as OtherK is off the other's. It is how
	// many times more samples the other curve needs (the paper's scaling
	// efficiency; below 1, the other is ahead), 1 for a curve against
	// itself.
	Ratio float64 `json:"ratio"`
	Bound Bound   `json:"bound,omitempty"`
}

// Efficiency is PassAtKEfficiency's result.
type Efficiency struct {
	Points []EfficiencyPoint `json:"points"`
	// Max is the largest exact ratio and MaxK its k ("up to Max x"); 0
	// when no point is exact.
	Max  float64 `json:"max"`
	MaxK int     `json:"max_k"`
	// Floor is the largest ratio that is a lower bound (AtLeast: the
	// other curve never reaches the reference's pass@k within its largest
	// k) where it exceeds Max, and FloorK its k: the greatest ratio over
	// k is then at least Floor, not Max; 0 when no bound exceeds Max.
	Floor  float64 `json:"floor,omitempty"`
	FloorK int     `json:"floor_k,omitempty"`
	// Ceiling is the largest ratio that is an upper bound (AtMost: the
	// other curve above the reference's pass@k already at its smallest
	// k; not at a target of 0, where there is nothing to measure) where
	// it exceeds Max and Floor, and CeilingK its k: the ratio there may
	// be anything up to Ceiling, so the greatest ratio over k is between
	// Max and Ceiling; 0 when no bound exceeds them.
	Ceiling  float64 `json:"ceiling,omitempty"`
	CeilingK int     `json:"ceiling_k,omitempty"`
}

// PassAtKEfficiency returns, at each k of ref, how many times more samples
// other needs to reach ref's pass@k (as the SPIRAL paper reports pass@k
// scaling efficiency: "up to 11x"). other's pass@k is taken as piecewise
// linear in log k between its points and must not decrease with k (the
// unbiased estimator's mean never does).
func PassAtKEfficiency(ref, other PassAtK) (Efficiency, error) {
	if len(ref.Points) == 0 || len(other.Points) == 0 {
		return Efficiency{}, errors.New("report: efficiency: a report without pass@k points")
	}
	pts := toPass(other.Points)
	sort.Slice(pts, func(i, j int) bool { return pts[i].k < pts[j].k })
	for i := 1; i < len(pts); i++ {
		if pts[i].k == pts[i-1].k {
			return Efficiency{}, fmt.Errorf("report: efficiency: %s: k = %d twice", other.Meta.Name(), pts[i].k)
		}
		if pts[i].p < pts[i-1].p-passkSlack { // as Validate allows
			return Efficiency{}, fmt.Errorf("report: efficiency: %s: pass@%d = %g below pass@%d = %g", other.Meta.Name(), pts[i].k, pts[i].p, pts[i-1].k, pts[i-1].p)
		}
	}
	refPts := toPass(ref.Points)
	sort.Slice(refPts, func(i, j int) bool { return refPts[i].k < refPts[j].k })
	var eff Efficiency
	for _, rp := range ref.Points {
		if rp.K < 1 {
			return Efficiency{}, fmt.Errorf("report: efficiency: %s: k = %d", ref.Meta.Name(), rp.K)
		}
		// The reference's own samples for its pass@k, read off its curve
		// as the other's are, so that a curve against itself needs 1x at
		// every k: K, or the first k with it (within reachSlack) on a
		// plateau; where the curve fell by rounding after passing it, the
		// crossing before that k. Reading the first k at or above it
		// instead gave 0.999999x where the other curve's crossing was
		// interpolated.
		own, _ := samplesToReach(refPts, rp.PassAtK)
		ok, bound := samplesToReach(pts, rp.PassAtK)
		e := EfficiencyPoint{K: rp.K, Target: rp.PassAtK, OtherK: ok, Ratio: ok / own, Bound: bound}
		if bound == Exact && e.Ratio > eff.Max {
			eff.Max, eff.MaxK = e.Ratio, rp.K
		}
		eff.Points = append(eff.Points, e)
	}
	for _, p := range eff.Points {
		if p.Bound == AtLeast && p.Ratio > max(eff.Max, eff.Floor) {
			eff.Floor, eff.FloorK = p.Ratio, p.K
		}
	}
	for _, p := range eff.Points {
		if p.Bound == AtMost && p.Target > 0 && p.Ratio > max(eff.Max, eff.Floor, eff.Ceiling) {
			eff.Ceiling, eff.CeilingK = p.Ratio, p.K
		}
	}
	return eff, nil
}

type passPoint struct {
	k int
	p float64
}

func toPass(ps []rollout.KPoint) []passPoint {
	out := make([]passPoint, len(ps))
	for i, p := range ps {
		out[i] = passPoint{p.K, p.PassAtK}
	}
	return out
}

// reachSlack is how far a target may lie above a point of the other
// curve and still count as reached there: the rounding of a mean (the
// same pass@k summed over seeds or problems in another order differs in
// its last bits): the fall that PassAtKEfficiency's check of a curve
// that must not fall allows, as Validate does.
const reachSlack = passkSlack

// samplesToReach returns the smallest k at which the curve reaches target,
// interpolating in log k; beyond the curve's ends, its largest k (AtLeast)
// or its smallest (AtMost), k = 1 too: a target below the curve's first
// point by more than reachSlack was passed before it. A target of 0 (a
// reference that solved nothing at its k) is reached with no sample at
// all, so the curve's first k is only a bound (AtMost), never an exact
// count. A target within reachSlack above a point is reached at that
// point. The curve may fall
// by rounding (passkSlack) after the point that reaches target, below it.
func samplesToReach(pts []passPoint, target float64) (float64, Bound) {
	first, last := pts[0], pts[len(pts)-1]
	if target <= first.p+reachSlack {
		if target > 0 && target >= first.p-reachSlack {
			return float64(first.k), Exact // level with its first point
		}
		return float64(first.k), AtMost
	}
	for i := 1; i < len(pts); i++ {
		a, b := pts[i-1], pts[i]
		if target > b.p+reachSlack {
			continue
		}
		if target >= b.p {
			return float64(b.k), Exact // b's pass@k, but for rounding
		}
		// a.p + reachSlack < target < b.p: the previous point was passed.
		la, lb := math.Log(float64(a.k)), math.Log(float64(b.k))
		return math.Exp(la + (target-a.p)/(b.p-a.p)*(lb-la)), Exact
	}
	return float64(last.k), AtLeast
}

// StepGain is one RSA step of a comparison.
type StepGain struct {
	Step     int     `json:"step"`
	Accuracy float64 `json:"accuracy"`
	// OverStep0 is Accuracy minus the report's own step 0.
	OverStep0 float64 `json:"over_step0"`
	// OverRef is Accuracy minus the reference's at the same step (0 for
	// the reference itself; NaN where the reference has no such step).
	OverRef float64 `json:"over_ref"`
}

// RSAGains returns each step's accuracy of r, its gain over r's step 0 and
// over ref's same step.
func RSAGains(ref, r RSA) ([]StepGain, error) {
	if len(r.Steps) == 0 || len(ref.Steps) == 0 {
		return nil, errors.New("report: rsa gains: a report without steps")
	}
	refAt := map[int]float64{}
	for _, s := range ref.Steps {
		refAt[s.Step] = s.Accuracy
	}
	base := r.Steps[0].Accuracy
	out := make([]StepGain, len(r.Steps))
	for i, s := range r.Steps {
		g := StepGain{Step: s.Step, Accuracy: s.Accuracy, OverStep0: s.Accuracy - base, OverRef: math.NaN()}
		if a, ok := refAt[s.Step]; ok {
			g.OverRef = s.Accuracy - a
		}
		out[i] = g
	}
	return out, nil
}

// TokenGain is the gain of a reference over another budget curve at one
// token count.
type TokenGain struct {
	// Tokens is the reference's mean tokens per trace at this budget.
	Tokens   float64 `json:"tokens"`
	Accuracy float64 `json:"accuracy"`
	// Other is the other curve's accuracy at Tokens, interpolated in log
	// tokens; past its largest mean tokens, its accuracy there where none
	// of its traces was cut at its largest budget (Held); else NaN outside
	// its range.
	Other float64 `json:"other"`
	// Gain is Accuracy - Other.
	Gain float64 `json:"gain"`
	// Held is true where Other is the other curve's accuracy at its
	// largest budget, held past its largest mean tokens: none of its
	// traces was cut there (Truncated 0), so every one ended within it
	// and a larger budget leaves them, and their verdicts, as they are.
	Held bool `json:"held,omitempty"`
}

// BudgetGains compares two sequential-budget curves at equal tokens: at
// each point of ref, ref's accuracy minus other's at the same mean tokens
// per trace (TokenGain.Held past other's largest mean tokens where none
// of its traces was cut at its largest budget, its last point).
func BudgetGains(ref, other Budget) ([]TokenGain, error) {
	if len(ref.Points) == 0 || len(other.Points) == 0 {
		return nil, errors.New("report: budget gains: a report without points")
	}
	pts := make([]rollout.BudgetPoint, 0, len(other.Points))
	for _, p := range other.Points {
		if p.MeanTokens > 0 {
			pts = append(pts, p)
		}
	}
	if len(pts) == 0 {
		return nil, fmt.Errorf("report: budget gains: %s: no point with tokens > 0", other.Meta.Name())
	}
	// Stable: of points with equal mean tokens, the largest budget's
	// stays last.
	sort.SliceStable(pts, func(a, b int) bool { return pts[a].MeanTokens < pts[b].MeanTokens })
	xs, ys := make([]float64, len(pts)), make([]float64, len(pts))
	for i, p := range pts {
		xs[i], ys[i] = p.MeanTokens, p.Accuracy
	}
	last := pts[len(pts)-1]
	out := make([]TokenGain, len(ref.Points))
	for i, p := range ref.Points {
		g := TokenGain{Tokens: p.MeanTokens, Accuracy: p.Accuracy, Other: interpLog(xs, ys, p.MeanTokens)}
		if p.MeanTokens > last.MeanTokens && last.Truncated == 0 {
			g.Other, g.Held = last.Accuracy, true
		}
		g.Gain = p.Accuracy - g.Other
		out[i] = g
	}
	return out, nil
}

// interpLog interpolates y(x) linearly in log x over sorted xs; NaN
// outside [xs[0], xs[n-1]] or where x <= 0.
func interpLog(xs, ys []float64, x float64) float64 {
	n := len(xs)
	if x <= 0 || x < xs[0] || x > xs[n-1] {
		return math.NaN()
	}
	for i := 1; i < n; i++ {
		if x > xs[i] {
			continue
		}
		if xs[i] == xs[i-1] {
			return ys[i]
		}
		la, lb := math.Log(xs[i-1]), math.Log(xs[i])
		return ys[i-1] + (math.Log(x)-la)/(lb-la)*(ys[i]-ys[i-1])
	}
	return ys[n-1]
}
