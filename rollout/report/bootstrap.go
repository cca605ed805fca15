package report

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/spiral-rl/spiral/rollout"
)

// Bootstrap configures EfficiencyIntervals.
type Bootstrap struct {
	// Draws is the number of resamples.
	Draws int
	// Level is the interval's coverage, e.g. 0.95.
	Level float64
	// Seed makes the resamples reproducible.
	Seed uint64
}

// DefaultBootstrap is what spiral compare uses: 2,000 draws, 95%
// intervals, a fixed seed (the same reports give the same intervals).
func DefaultBootstrap() Bootstrap { return Bootstrap{Draws: 2000, Level: 0.95, Seed: 1} }

// RatioInterval is the bootstrap interval of the scaling-efficiency ratio
// at one k of the reference (EfficiencyPoint.Ratio).
type RatioInterval struct {
	K  int     `json:"k"`
	Lo float64 `json:"lo"`
	Hi float64 `json:"hi"`
	// LoAtMost and HiAtLeast say that the draw at that end was itself a
	// bound (EfficiencyPoint.Bound): the other curve was above the target
	// at its smallest k, or never reached it within its largest, so the
	// interval's true end lies further out. LoAtLeast and HiAtMost say
	// that it was a bound the other way (the lower end's draw only at
	// least that ratio, as when every draw is), so that end is no firmer
	// than its draw.
	LoAtMost  bool `json:"lo_at_most,omitempty"`
	HiAtLeast bool `json:"hi_at_least,omitempty"`
	LoAtLeast bool `json:"lo_at_least,omitempty"`
	HiAtMost  bool `json:"hi_at_most,omitempty"`
}

// EfficiencyIntervals returns, at each k of the reference, a bootstrap
// interval of how many times more samples the other label needs to reach
// the reference's pass@k (PassAtKEfficiency of the seeds' mean curves).
// Each draw resamples the problems (the same ones for both labels: the
// comparison is paired) and, within each label, the seeds, both with
// replacement, so the interval covers the noise of a finite evaluation
// set and of the training seeds (with few seeds, the latter only
// roughly). Every report must carry its per-problem counts
// (PassAtK.PerProblem) over the same problems in the same order, and
// those counts must give its pass@k points.
func EfficiencyIntervals(ref, other []PassAtK, b Bootstrap) ([]RatioInterval, error) {
	switch {
	case len(ref) == 0 || len(other) == 0:
		return nil, errors.New("report: efficiency intervals: no reports")
	case b.Draws < 1 || !(b.Level > 0 && b.Level < 1):
		return nil, fmt.Errorf("report: efficiency intervals: %d draws at level %v: want >= 1 and a level in (0, 1)", b.Draws, b.Level)
	}
	ids := ref[0].PerProblem
	refTables, err := perProblemTables(ref, ids, false)
	if err != nil {
		return nil, err
	}
	otherTables, err := perProblemTables(other, ids, true)
	if err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(b.Seed, 0))
	problems := make([]int, len(ids))
	ratios := make([][]drawnRatio, len(ref[0].Points))
	for range b.Draws {
		for i := range problems {
			problems[i] = rng.IntN(len(ids))
		}
		refCurve := resampledCurve(rng, ref, refTables, problems)
		otherCurve := resampledCurve(rng, other, otherTables, problems)
		eff, err := PassAtKEfficiency(refCurve, otherCurve)
		if err != nil {
			return nil, err // not expected: a mean of pass@k curves never decreases
		}
		for j, p := range eff.Points {
			ratios[j] = append(ratios[j], drawnRatio{p.Ratio, p.Bound})
		}
	}
	out := make([]RatioInterval, len(ratios))
	tail := (1 - b.Level) / 2
	for j, rs := range ratios {
		slices.SortFunc(rs, compareDrawn)
		lo, hi := rs[rank(tail, len(rs))], rs[rank(1-tail, len(rs))]
		out[j] = RatioInterval{K: ref[0].Points[j].K, Lo: lo.ratio, Hi: hi.ratio,
			LoAtMost: lo.bound == AtMost, HiAtLeast: hi.bound == AtLeast, LoAtLeast: lo.bound == AtLeast, HiAtMost: hi.bound == AtMost}
	}
	return out, nil
}

type drawnRatio struct {
	ratio float64
	bound Bound
}

// compareDrawn orders draws by ratio and, at one ratio, by what their
// bound says of the true ratio: an AtMost draw (at most the ratio) before
// an exact one, an AtLeast draw (at least it) after; so that an
// interval's end is a bound only where the draws at its rank are.
func compareDrawn(x, y drawnRatio) int {
	order := func(b Bound) int {
		switch b {
		case AtMost:
			return -1
		case AtLeast:
			return 1
		}
		return 0
	}
	return cmp.Or(cmp.Compare(x.ratio, y.ratio), cmp.Compare(order(x.bound), order(y.bound)))
}

// rank is the nearest-rank index of quantile q among n sorted values:
// ceil(q n) - 1, where q n within 1e-9 above an integer counts as that
// integer, so that the rounding of q (0.025000000000000022 for
// (1 - 0.95) / 2) does not move the end a rank.
func rank(q float64, n int) int {
	return min(n-1, max(0, int(math.Ceil(q*float64(n)-1e-9))-1))
}

// ErrNoPerProblem is the cause of EfficiencyIntervals' error for a
// report without per-problem counts (PassAtK.PerProblem).
var ErrNoPerProblem = errors.New("no per-problem counts (a report written before spiral eval recorded them; run the evaluation again)")

// IntervalReportError is EfficiencyIntervals' error for one report of
// its arguments, which a caller that read them from files can name: a
// label's seeds share its name, which the error gives.
type IntervalReportError struct {
	// Other is true for a report of other, false for one of ref, and
	// Index is its index there.
	Other bool
	Index int
	// AgainstReference is true where its problems differ from those of
	// ref's first report (their count or an id).
	AgainstReference bool
	Err              error
}

func (e *IntervalReportError) Error() string { return e.Err.Error() }

func (e *IntervalReportError) Unwrap() error { return e.Err }

// perProblemTables returns, for each report, pass@k of each problem at each
// of the report's k ([problem][k]), checking that the report has the
// problems of ids and that their mean is the report's own pass@k. Its
// errors are IntervalReportErrors, with other as their Other.
func perProblemTables(reps []PassAtK, ids []rollout.ProblemCorrect, other bool) ([][][]float64, error) {
	tables := make([][][]float64, len(reps))
	for r, rep := range reps {
		name := rep.Meta.Name()
		fail := func(againstRef bool, format string, args ...any) error {
			return &IntervalReportError{Other: other, Index: r, AgainstReference: againstRef,
				Err: fmt.Errorf("report: efficiency intervals: %s: "+format, append([]any{name}, args...)...)}
		}
		switch {
		case len(rep.PerProblem) == 0:
			return nil, fail(false, "%w", ErrNoPerProblem)
		case len(rep.PerProblem) != len(ids):
			return nil, fail(true, "%s, the reference's first report %d", rollout.Plural(len(rep.PerProblem), "problem"), len(ids))
		case len(rep.Points) == 0:
			return nil, fail(false, "no pass@k points")
		case !slices.EqualFunc(rep.Points, reps[0].Points, func(a, b rollout.KPoint) bool { return a.K == b.K }):
			return nil, fail(false, "its seeds' reports measure different k")
		}
		n := rep.Config.Samples
		table := make([][]float64, len(ids))
		for i, pc := range rep.PerProblem {
			if pc.ID != ids[i].ID {
				return nil, fail(true, "problem %d is %q, the reference's first report has %q there", i, pc.ID, ids[i].ID)
			}
			table[i] = make([]float64, len(rep.Points))
			for j, p := range rep.Points {
				v, err := rollout.PassAtK(n, pc.Correct, p.K)
				if err != nil {
					return nil, fail(false, "problem %q: %w", pc.ID, err)
				}
				table[i][j] = v
			}
		}
		for j, p := range rep.Points {
			var sum float64
			for i := range table {
				sum += table[i][j]
			}
			if mean := sum / float64(len(table)); math.Abs(mean-p.PassAtK) > 1e-9 {
				return nil, fail(false, "its per-problem counts give pass@%d = %.6f, its points %.6f", p.K, mean, p.PassAtK)
			}
		}
		tables[r] = table
	}
	return tables, nil
}

// resampledCurve is the mean pass@k curve of reports drawn with
// replacement from reps, each averaged over the given problems.
func resampledCurve(rng *rand.Rand, reps []PassAtK, tables [][][]float64, problems []int) PassAtK {
	out := PassAtK{Meta: reps[0].Meta}
	for _, p := range reps[0].Points {
		out.Points = append(out.Points, rollout.KPoint{K: p.K})
	}
	for range reps {
		table := tables[rng.IntN(len(reps))]
		for _, i := range problems {
			for j := range out.Points {
				out.Points[j].PassAtK += table[i][j]
			}
		}
	}
	for j := range out.Points {
		out.Points[j].PassAtK /= float64(len(reps) * len(problems))
	}
	return out
}
