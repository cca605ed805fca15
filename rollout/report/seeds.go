package report

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"gonum.org/v1/plot/plotter"

	"github.com/spiral-rl/spiral/rollout"
)

// Spread is a value's mean over seeds and its range.
type Spread struct {
	Mean, Min, Max float64
}

// SpreadOf is the mean, least and greatest of xs, which must be
// non-empty.
func SpreadOf(xs []float64) Spread {
	s := Spread{Min: xs[0], Max: xs[0]}
	for _, x := range xs {
		s.Mean += x
		s.Min, s.Max = min(s.Min, x), max(s.Max, x)
	}
	s.Mean /= float64(len(xs))
	return s
}

// Seeds is one label's curve over the seeds (reports or runs) that share
// the label: at each point X (the mean over seeds where X varies, such as
// tokens), the spread of Y and, where the mode has one, of Y2 (majority).
type Seeds struct {
	Label string
	N     int
	X     []float64
	Y, Y2 []Spread
	// Style, when set, fixes the curve's colour (a palette index) and dash
	// instead of one colour per curve (PlotSeeds).
	Style *Style
}

// Style is a curve's colour (a palette index), whether it is dashed and
// whether its points are triangles (else circles, boxes when dashed): two
// curves of one colour and dash need Triangles on one of them to be told
// apart in the legend.
type Style struct {
	Colour    int
	Dashed    bool
	Triangles bool
}

// Group splits reports by label, in the order labels first appear.
func Group[R any](reps []R, label func(R) string) [][]R {
	var order []string
	by := map[string][]R{}
	for _, r := range reps {
		l := label(r)
		if _, ok := by[l]; !ok {
			order = append(order, l)
		}
		by[l] = append(by[l], r)
	}
	out := make([][]R, len(order))
	for i, l := range order {
		out[i] = by[l]
	}
	return out
}

// meanCurves averages curves given as point counts and per-point values:
// every seed must have the same keys (k, step or budget) in the same order.
func meanCurves(label string, n int, points func(seed int) (keys []int, x, y, y2 []float64)) (Seeds, error) {
	if n == 0 {
		return Seeds{}, errors.New("report: no reports to average")
	}
	keys0, _, _, _ := points(0)
	xs, ys, y2s := make([][]float64, len(keys0)), make([][]float64, len(keys0)), make([][]float64, len(keys0))
	for s := range n {
		keys, x, y, y2 := points(s)
		if !slices.Equal(keys, keys0) {
			return Seeds{}, fmt.Errorf("report: %s: seed reports measure different points (%v and %v)", label, keys0, keys)
		}
		for i := range keys {
			xs[i] = append(xs[i], x[i])
			ys[i] = append(ys[i], y[i])
			if y2 != nil {
				y2s[i] = append(y2s[i], y2[i])
			}
		}
	}
	out := Seeds{Label: label, N: n}
	for i := range keys0 {
		out.X = append(out.X, SpreadOf(xs[i]).Mean)
		out.Y = append(out.Y, SpreadOf(ys[i]))
		if len(y2s[i]) > 0 {
			out.Y2 = append(out.Y2, SpreadOf(y2s[i]))
		}
	}
	return out, nil
}

// MeanPassAtK averages pass@k and majority@k over reports (seeds) at each
// k. Reports of k = 1 alone (one sample a problem) have no majority@k
// (Y2 nil): the vote of one sample is that sample, its majority@1 its
// pass@1, which a plot would draw twice.
func MeanPassAtK(reps []PassAtK) (Seeds, error) {
	if len(reps) == 0 {
		return Seeds{}, errors.New("report: no pass@k reports")
	}
	s, err := meanCurves(reps[0].Meta.Name(), len(reps), func(s int) ([]int, []float64, []float64, []float64) {
		var keys []int
		var x, y, y2 []float64
		for _, p := range reps[s].Points {
			keys, x, y, y2 = append(keys, p.K), append(x, float64(p.K)), append(y, p.PassAtK), append(y2, p.MajorityAtK)
		}
		return keys, x, y, y2
	})
	if len(s.X) == 1 && s.X[0] == 1 {
		s.Y2 = nil
	}
	return s, err
}

// MeanRSA averages RSA's accuracy and majority over reports at each step.
func MeanRSA(reps []RSA) (Seeds, error) {
	if len(reps) == 0 {
		return Seeds{}, errors.New("report: no RSA reports")
	}
	return meanCurves(reps[0].Meta.Name(), len(reps), func(s int) ([]int, []float64, []float64, []float64) {
		var keys []int
		var x, y, y2 []float64
		for _, st := range reps[s].Steps {
			keys, x, y, y2 = append(keys, st.Step), append(x, float64(st.Step)), append(y, st.Accuracy), append(y2, st.Majority)
		}
		return keys, x, y, y2
	})
}

// MeanBudget averages the sequential accuracy over reports at each budget.
func MeanBudget(reps []Budget) (Seeds, error) {
	if len(reps) == 0 {
		return Seeds{}, errors.New("report: no sequential reports")
	}
	return meanCurves(reps[0].Meta.Name(), len(reps), func(s int) ([]int, []float64, []float64, []float64) {
		var keys []int
		var x, y []float64
		for _, p := range reps[s].Points {
			keys, x, y = append(keys, p.Budget), append(x, float64(p.Budget)), append(y, p.Accuracy)
		}
		return keys, x, y, nil
	})
}

// RecordsTokens says whether r recorded its generated tokens, which
// TokenCurves' majority@k curve needs.
func (r PassAtK) RecordsTokens() bool { return r.Tokens.Generated > 0 }

// RecordsTokens says whether r recorded its generated tokens, which
// TokenCurves' RSA curve needs.
func (r RSA) RecordsTokens() bool { return len(r.Steps) > 0 && r.Steps[0].Cumulative.Generated > 0 }

// TokenCurves returns one label's accuracy against generated tokens per
// problem for the three ways of spending them (the SPIRAL paper's
// Figure 8): sequential (one trace cut at each budget: its mean tokens),
// majority@k (k traces: k times the mean trace), and RSA (every step's
// cumulative tokens). Any of the report lists may be empty; the result
// has one Seeds per non-empty one, labelled "LABEL sequential" and so on.
// Reports that recorded no generated tokens are left out.
func TokenCurves(label string, passk []PassAtK, rsa []RSA, budget []Budget) ([]Seeds, error) {
	passk = slices.DeleteFunc(slices.Clone(passk), func(r PassAtK) bool { return !r.RecordsTokens() })
	rsa = slices.DeleteFunc(slices.Clone(rsa), func(r RSA) bool { return !r.RecordsTokens() })
	budget = slices.DeleteFunc(slices.Clone(budget), func(r Budget) bool {
		return slices.ContainsFunc(r.Points, func(p rollout.BudgetPoint) bool { return p.MeanTokens <= 0 })
	})
	var out []Seeds
	if len(budget) > 0 {
		s, err := meanCurves(label+" sequential", len(budget), func(i int) ([]int, []float64, []float64, []float64) {
			var keys []int
			var x, y []float64
			for _, p := range budget[i].Points {
				keys, x, y = append(keys, p.Budget), append(x, p.MeanTokens), append(y, p.Accuracy)
			}
			return keys, x, y, nil
		})
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	if len(passk) > 0 {
		s, err := meanCurves(label+" majority@k", len(passk), func(i int) ([]int, []float64, []float64, []float64) {
			r := passk[i]
			perTrace := float64(r.Tokens.Generated) / float64(max(1, r.Meta.Problems*r.Config.Samples))
			var keys []int
			var x, y []float64
			for _, p := range r.Points {
				keys, x, y = append(keys, p.K), append(x, float64(p.K)*perTrace), append(y, p.MajorityAtK)
			}
			return keys, x, y, nil
		})
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	if len(rsa) > 0 {
		s, err := meanCurves(label+" RSA", len(rsa), func(i int) ([]int, []float64, []float64, []float64) {
			r := rsa[i]
			var keys []int
			var x, y []float64
			for _, st := range r.Steps {
				keys = append(keys, st.Step)
				x = append(x, float64(st.Cumulative.Generated)/float64(max(1, r.Meta.Problems)))
				y = append(y, st.Accuracy)
			}
			return keys, x, y, nil
		})
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// PlotSeeds writes a plot of curves averaged over seeds, one colour per
// curve: Y solid, Y2 (when present and f.Name2 is set) dashed, each with
// its range over seeds as error bars when a curve has several seeds. The
// legend names such a curve's seeds ("A pass@k (mean of 3 seeds)") and
// the title, when some curve has bars, what they are; the title is
// f.TitleY, where set, when no curve draws a Y2.
func PlotSeeds(path string, size PlotSize, f Figure, curves ...Seeds) error {
	if len(curves) == 0 {
		return fmt.Errorf("report: plot %s: no curves", path)
	}
	var ss []series
	bars, y2 := false, false
	for i, c := range curves {
		colour, dashed, triangles := i, false, false
		if c.Style != nil {
			colour, dashed, triangles = c.Style.Colour, c.Style.Dashed, c.Style.Triangles
		}
		mean := ""
		if c.N > 1 {
			mean, bars = fmt.Sprintf(" (mean of %d seeds)", c.N), true
		}
		main := seedSeries(c, c.Y, colour, dashed)
		main.triangles = triangles
		main.label = strings.TrimSpace(c.Label+" "+f.Name) + mean
		ss = append(ss, main)
		if c.Y2 != nil && f.Name2 != "" {
			s2 := seedSeries(c, c.Y2, colour, true)
			s2.label = c.Label + " " + f.Name2 + mean
			ss, y2 = append(ss, s2), true
		}
	}
	if !y2 && f.TitleY != "" {
		f.Title = f.TitleY
	}
	if bars {
		f.Title += " (bars: range over seeds)"
	}
	return renderFigure(path, size, f, ss)
}

func seedSeries(c Seeds, ys []Spread, colour int, dashed bool) series {
	s := series{xy: make(plotter.XYs, len(ys)), colour: colour, dashed: dashed}
	for i, y := range ys {
		s.xy[i] = plotter.XY{X: c.X[i], Y: y.Mean}
	}
	if c.N > 1 {
		s.lo, s.hi = make([]float64, len(ys)), make([]float64, len(ys))
		for i, y := range ys {
			s.lo[i], s.hi[i] = y.Min, y.Max
		}
	}
	return s
}

// PassAtK returns the mean curve as a pass@k report (Y as pass@k, Y2 as
// majority@k).
func (s Seeds) PassAtK() PassAtK {
	r := PassAtK{Meta: Meta{Label: s.Label}}
	for i, x := range s.X {
		p := rollout.KPoint{K: int(x), PassAtK: s.Y[i].Mean}
		if s.Y2 != nil {
			p.MajorityAtK = s.Y2[i].Mean
		}
		r.Points = append(r.Points, p)
	}
	return r
}

// RSA returns the mean curve as an RSA report (X as the step).
func (s Seeds) RSA() RSA {
	r := RSA{Meta: Meta{Label: s.Label}}
	for i, x := range s.X {
		st := rollout.RSAStep{Step: int(x), Accuracy: s.Y[i].Mean}
		if s.Y2 != nil {
			st.Majority = s.Y2[i].Mean
		}
		r.Steps = append(r.Steps, st)
	}
	return r
}

// Budget returns the mean curve as a sequential report whose X is the
// mean tokens per trace (TokenCurves' sequential curve).
func (s Seeds) Budget() Budget {
	r := Budget{Meta: Meta{Label: s.Label}}
	for i, x := range s.X {
		r.Points = append(r.Points, rollout.BudgetPoint{MeanTokens: x, Accuracy: s.Y[i].Mean})
	}
	return r
}

// Curve is one seed's values at integer keys (training steps).
type Curve struct {
	Keys []int
	Y    []float64
}

// MeanCurves averages curves of one label (one per seed) at each key; the
// curves must share their keys.
func MeanCurves(label string, curves []Curve) (Seeds, error) {
	return meanCurves(label, len(curves), func(s int) ([]int, []float64, []float64, []float64) {
		x := make([]float64, len(curves[s].Keys))
		for i, k := range curves[s].Keys {
			x[i] = float64(k)
		}
		return curves[s].Keys, x, curves[s].Y, nil
	})
}

// String is a spread's text, to three decimals: the mean and, where the
// seeds differ at that precision, the range, "LO-HI", or "LO to HI"
// where an end is negative ("-0.200--0.050" would read as a
// subtraction). Seeds alike but for the rounding of their means show no
// range ("0.219 (0.219-0.219)" said nothing).
func (s Spread) String() string {
	lo, hi := fmt.Sprintf("%.3f", s.Min), fmt.Sprintf("%.3f", s.Max)
	if lo == hi {
		return fmt.Sprintf("%.3f", s.Mean)
	}
	sep := "-"
	if s.Min < 0 || s.Max < 0 {
		sep = " to "
	}
	return fmt.Sprintf("%.3f (%s%s%s)", s.Mean, lo, sep, hi)
}
