package rl

import (
	"fmt"
	"math"
	"slices"
)

// Numerical conventions shared by every advantage in this file. verl, TRL
// and nanochat each choose these differently, so they are named here.

// StdEpsilon is added to a standard deviation before dividing by it:
// A = (r - mean) / (std + StdEpsilon). It is the epsilon=1e-6 default of
// verl's compute_grpo_outcome_advantage.
const StdEpsilon = 1e-6

// StdDDOF is the delta degrees of freedom of every standard deviation in
// this file: 1, the sample (Bessel-corrected) standard deviation
// sqrt(sum_i (x_i - mean)^2 / (n - 1)). That is what torch.std computes by
// default, hence what verl's GRPO divides by. (TRL's GRPOTrainer also uses
// torch.std; a population std, ddof 0, would give slightly smaller
// advantages for small groups.)
const StdDDOF = 1

// The constant-group rule: a group whose values are all exactly equal,
// which includes a group of one, gets advantages of exactly 0, with or
// without std scaling. This departs from verl, which gives a group of one
// mean 0 and std 1, so that a lone sample's advantage is its raw reward;
// here a lone sample carries no signal, like a group that all succeeded or
// all failed. Exact zeros matter: Informative tests advantages against 0.

// AdvantageOptions selects the variants of SPIRAL's advantages. The zero
// value is the default: SPIRAL as in the authors' set-RL code (no std
// scaling), gradients on both search and aggregation traces.
type AdvantageOptions struct {
	// ScaleSearch divides the set advantages A#(x,G) by the sample std of
	// the K set values f(x,G) (plus StdEpsilon) before they are averaged
	// into the search-trace advantages. Default off.
	ScaleSearch bool
	// ScaleAggregation divides each aggregation advantage
	// r(x,y*) - f(x,G) by the sample std of the N2 rewards of its subset G
	// (plus StdEpsilon): GRPO within each subset. Default off.
	ScaleAggregation bool
	// AggregationOnly is the `--algo agg-only` ablation: the SPIRAL
	// pipeline with gradients on the aggregation traces only. Search
	// advantages are computed (for metrics) but SearchMask is all false.
	AggregationOnly bool
	// SearchOnly is the `--algo search-only` ablation, agg-only's mirror:
	// the SPIRAL pipeline with gradients on the search traces only (the
	// set-RL term). Aggregation advantages are computed (for metrics) but
	// TrainAggregation is false. It excludes AggregationOnly: together
	// they would train nothing.
	SearchOnly bool
	// SearchOwnReward, when nonzero, adds to each search trace's set
	// advantage that weight times the trace's own reward centred on the
	// mean over the search traces the subsets hold (Dr. GRPO's unscaled
	// advantage within the problem): a search trace is then credited for
	// its own answer as well as for what the aggregator makes of the sets
	// it sits in. Not in the paper, whose search traces learn through the
	// set term alone: 0 (the default) is SPIRAL as published. It needs
	// SpiralProblem.SearchRewards.
	SearchOwnReward float64 `json:",omitempty"`
}

// SpiralProblem holds one problem's SPIRAL rollout rewards.
//
// Shapes: N1 = NumSearch search traces; K = len(Subsets) subsets, subset g
// holding len(Subsets[g]) distinct indices in [0, N1) (in any order; one
// trace may sit in several subsets); Rewards[g] holds the rewards of the
// N2 aggregation traces of subset g (N2 may differ between subsets but
// must be at least 1). Rewards are usually in {0, 1} but any finite value
// is allowed.
type SpiralProblem struct {
	NumSearch int         // N1
	Subsets   [][]int     // [K][n_g], indices into the search traces
	Rewards   [][]float64 // [K][N2_g], rewards of the aggregation traces
	// SearchRewards are the search traces' own rewards [N1], read only
	// under AdvantageOptions.SearchOwnReward (nil otherwise).
	SearchRewards []float64
}

// Validate reports the first structural problem of p: no subsets, an empty
// subset, an index out of range or repeated within a subset, a subset with
// no aggregation rewards, or a non-finite reward.
func (p SpiralProblem) Validate() error {
	if p.NumSearch < 0 {
		return fmt.Errorf("rl: spiral problem: NumSearch %d < 0", p.NumSearch)
	}
	if len(p.Subsets) == 0 {
		return fmt.Errorf("rl: spiral problem: no subsets")
	}
	if len(p.Rewards) != len(p.Subsets) {
		return fmt.Errorf("rl: spiral problem: %d reward rows for %d subsets", len(p.Rewards), len(p.Subsets))
	}
	// seen[i] == g+1 marks trace i as seen in subset g.
	seen := make([]int, p.NumSearch)
	for g, members := range p.Subsets {
		if len(members) == 0 {
			return fmt.Errorf("rl: spiral problem: subset %d is empty", g)
		}
		for _, i := range members {
			if i < 0 || i >= p.NumSearch {
				return fmt.Errorf("rl: spiral problem: subset %d: index %d outside [0, %d)", g, i, p.NumSearch)
			}
			if seen[i] == g+1 {
				return fmt.Errorf("rl: spiral problem: subset %d: index %d repeated", g, i)
			}
			seen[i] = g + 1
		}
		if len(p.Rewards[g]) == 0 {
			return fmt.Errorf("rl: spiral problem: subset %d has no aggregation rewards", g)
		}
		for j, r := range p.Rewards[g] {
			if math.IsNaN(r) || math.IsInf(r, 0) {
				return fmt.Errorf("rl: spiral problem: subset %d: reward %d is %v", g, j, r)
			}
		}
	}
	if p.SearchRewards != nil && len(p.SearchRewards) != p.NumSearch {
		return fmt.Errorf("rl: spiral problem: %d search rewards for %d search traces", len(p.SearchRewards), p.NumSearch)
	}
	for i, r := range p.SearchRewards {
		if math.IsNaN(r) || math.IsInf(r, 0) {
			return fmt.Errorf("rl: spiral problem: search reward %d is %v", i, r)
		}
	}
	return nil
}

// SpiralResult holds one problem's SPIRAL advantages. Shapes follow the
// SpiralProblem it came from.
type SpiralResult struct {
	// SetValue is f(x,G) per subset: the mean reward of its aggregation
	// traces, a Monte Carlo estimate of the aggregator's expected reward
	// on G. [K]
	SetValue []float64
	// SetAdvantage is A#(x,G) = f(x,G) - mean_{G'} f(x,G'), divided by
	// (std_{G'} f(x,G') + StdEpsilon) when ScaleSearch is set. It sums to
	// zero over the subsets. [K]
	SetAdvantage []float64
	// Search is A_marg(x,y) for each search trace: the mean of
	// SetAdvantage over the subsets that contain y, and 0 for a trace in
	// no subset. [N1]
	Search []float64
	// SearchMask is true where a search trace receives a gradient: it is
	// in at least one subset and the algorithm trains search traces (false
	// everywhere under AggregationOnly). The trainer must skip masked-out
	// traces entirely rather than train them with advantage 0, which would
	// still count their tokens in the token-mean. [N1]
	SearchMask []bool
	// Membership counts the subsets that contain each search trace. [N1]
	Membership []int
	// Aggregation is A(x,y*) = r(x,y*) - f(x,G) for each aggregation trace
	// of each subset G, divided by (std of G's rewards + StdEpsilon) when
	// ScaleAggregation is set. Each row sums to zero. [K][N2_g]
	Aggregation [][]float64
	// TrainAggregation is true when the aggregation traces receive a
	// gradient (false under SearchOnly). Like SearchMask, a false value
	// means skip the traces, not train them with advantage 0.
	TrainAggregation bool
}

// Informative reports whether the problem carries any gradient signal:
// some trained search trace (SearchMask) or, where they are trained
// (TrainAggregation), some aggregation trace has a nonzero advantage.
// Dynamic sampling drops problems that are not informative. A problem
// whose rewards are all equal is never informative (the constant-group
// rule makes its advantages exactly zero). It is informativeRounds for a
// problem of one aggregation round (with more, an aggregation trace's
// advantage is summed with its A_marg in the next round).
func (r SpiralResult) Informative() bool { return informativeRounds([]SpiralResult{r}) }

// SpiralAdvantages computes SPIRAL's advantages for one problem x
// ("Learning to Search and Aggregate", arXiv:2606.23595; ARCHITECTURE.md,
// "The algorithm"): the set term (set RL, as in Poly-EPO,
// arXiv:2604.17654) credits each search trace with the mean advantage of
// the subsets it sits in, and the standard term gives each aggregation
// trace its reward minus its subset's mean reward (a per-set baseline):
//
//	f(x,G)     = mean_j r[G][j]
//	A#(x,G)    = f(x,G) - mean_{G'} f(x,G')
//	A_marg(x,y) = mean_{G : y in G} A#(x,G)      (no gradient if no G holds y)
//	A(x,y*)    = r(x,y*) - f(x,G)                 (y* aggregates G)
//
// Optional std scaling, the own-reward term and the ablations are
// described in AdvantageOptions. It returns an error if p does not
// validate, opt sets both ablations, or opt asks for the own-reward term
// (a finite weight) without p.SearchRewards.
func SpiralAdvantages(p SpiralProblem, opt AdvantageOptions) (SpiralResult, error) {
	if opt.AggregationOnly && opt.SearchOnly {
		return SpiralResult{}, fmt.Errorf("rl: spiral advantages: AggregationOnly and SearchOnly together train nothing")
	}
	if math.IsNaN(opt.SearchOwnReward) || math.IsInf(opt.SearchOwnReward, 0) {
		return SpiralResult{}, fmt.Errorf("rl: spiral advantages: own-reward weight %v: want a finite number", opt.SearchOwnReward)
	}
	if err := p.Validate(); err != nil {
		return SpiralResult{}, err
	}
	if opt.SearchOwnReward != 0 && p.SearchRewards == nil {
		return SpiralResult{}, fmt.Errorf("rl: spiral advantages: own-reward weight %v without the search traces' rewards", opt.SearchOwnReward)
	}
	k := len(p.Subsets)
	res := SpiralResult{
		SetValue:     make([]float64, k),
		SetAdvantage: make([]float64, k),
		Search:       make([]float64, p.NumSearch),
		SearchMask:   make([]bool, p.NumSearch),
		Membership:   make([]int, p.NumSearch),
		Aggregation:  make([][]float64, k),
	}
	res.TrainAggregation = !opt.SearchOnly
	// v[g] is c x f(x,G): with the same N2 = c in every subset, the sum
	// of G's rewards; else (c = 1) f(x,G) itself.
	v, c := make([]float64, k), float64(len(p.Rewards[0]))
	for g, rewards := range p.Rewards {
		v[g] = sum(rewards)
		res.SetValue[g] = v[g] / float64(len(rewards))
		res.Aggregation[g] = make([]float64, len(rewards))
		centre(res.Aggregation[g], rewards, opt.ScaleAggregation)
		if len(rewards) != len(p.Rewards[0]) {
			c = 1
		}
	}
	if c == 1 {
		v = res.SetValue
	}
	centre(res.SetAdvantage, res.SetValue, opt.ScaleSearch)
	// A_marg(y), the mean of A#(G) over the m subsets G that hold y, is
	// (mean of v over those subsets - mean of v over all k) / c x the
	// scale of A#, computed as one fraction num / den with
	// num = k x (sum of v over y's subsets) - m x (sum of v over all)
	// and den = m k c. Its zeros are exact where they should be: integer
	// rewards (the grader's 0 and 1) sum exactly, so num is an exact
	// integer, 0 when y's subsets average the mean of all (and for a
	// trace in every subset whatever the rewards: its two sums are summed
	// in the same order). Means of the f (2/5 and 4/5 against 3/5 with
	// N2 = 5), or summing the centred A#, would leave a rounding residue
	// that Informative would take for a signal (under search-only, or in
	// a problem with one aggregation trace per subset, which have no
	// other). The float64 conversions round each product on its own: Go
	// may fuse a multiply and a subtraction, which would not round alike.
	valueSum := make([]float64, p.NumSearch)
	for g, members := range p.Subsets {
		for _, i := range members {
			valueSum[i] += v[g]
			res.Membership[i]++
		}
	}
	total := sum(v)
	scale, constant := spread(res.SetValue, opt.ScaleSearch)
	w := opt.SearchOwnReward
	var dev []float64 // the own-reward term is w x dev[i] / n
	var n float64
	if w != 0 {
		dev, n = ownDeviations(res.Membership, p.SearchRewards)
	}
	for i, m := range res.Membership {
		if m == 0 {
			continue
		}
		res.SearchMask[i] = !opt.AggregationOnly
		num, den := 0.0, float64(m*k)*c
		if !constant {
			num = (float64(valueSum[i]*float64(k)) - float64(total*float64(m))) * scale
		}
		res.Search[i] = num / den
		if dev == nil || dev[i] == 0 {
			continue
		}
		// The own-reward term w dev[i] / n cancels A_marg where w is
		// -num n / (den dev[i]). For integer rewards, unscaled, that is a
		// quotient of exact integers, which one division rounds to the
		// nearest float64; the weight's decimal (0.1) parses to its
		// nearest float64 too, so where the terms cancel in exact
		// arithmetic (A_marg = 1/16, own term 0.1 x -5/8) the two are
		// equal and the advantage is exactly 0. Adding the two rounded
		// terms would leave a residue that Informative would take for a
		// signal.
		if -num*n/(den*dev[i]) == w {
			res.Search[i] = 0
		} else {
			res.Search[i] += w * dev[i] / n
		}
	}
	return res, nil
}

// ownDeviations returns, for each search trace i that some subset holds
// (membership[i] > 0), dev[i] = n r_i - sum r, and n, the number of
// those traces and the sums over them, so that the own-reward term
// w x (r_i - mean r) is w x dev[i] / n, with an exact dev[i] for integer
// rewards. By the constant-group rule it returns nil, no term, when the
// held traces' rewards are all equal (or no trace is held).
func ownDeviations(membership []int, rewards []float64) (dev []float64, n float64) {
	var r []float64
	for i, m := range membership {
		if m > 0 {
			r = append(r, rewards[i])
		}
	}
	if len(r) == 0 {
		return nil, 0
	}
	if _, constant := spread(r, false); constant {
		return nil, 0
	}
	n, total := float64(len(r)), sum(r)
	dev = make([]float64, len(rewards))
	for i, m := range membership {
		if m > 0 {
			dev[i] = float64(n*rewards[i]) - total
		}
	}
	return dev, n
}

// GRPOOptions selects the GRPO variant. The zero value is GRPO as in
// DeepSeekMath (Shao et al. 2024, arXiv:2402.03300), scaled by the group
// std.
type GRPOOptions struct {
	// NoStdScaling drops the division by the group std, as in Dr. GRPO
	// (Liu et al. 2025, "Understanding R1-Zero-Like Training",
	// arXiv:2503.20783): A_i = r_i - mean r.
	NoStdScaling bool
}

// GRPOAdvantages computes group-relative advantages for the G traces of
// one problem (rewards [G] -> advantages [G]):
//
//	A_i = (r_i - mean_j r_j) / (std_j r_j + StdEpsilon)
//
// with the sample std (StdDDOF) and StdEpsilon of verl's GRPO. A group whose
// rewards are all equal, including a group of one, gets exactly zero. It
// returns an error for an empty group or a non-finite reward.
func GRPOAdvantages(rewards []float64, opt GRPOOptions) ([]float64, error) {
	if len(rewards) == 0 {
		return nil, fmt.Errorf("rl: grpo: empty group")
	}
	for i, r := range rewards {
		if math.IsNaN(r) || math.IsInf(r, 0) {
			return nil, fmt.Errorf("rl: grpo: reward %d is %v", i, r)
		}
	}
	adv := make([]float64, len(rewards))
	centre(adv, rewards, !opt.NoStdScaling)
	return adv, nil
}

// mean returns the arithmetic mean of x, which must be non-empty.
func mean(x []float64) float64 { return sum(x) / float64(len(x)) }

// sum returns the sum of x, added in order.
func sum(x []float64) float64 {
	s := 0.0
	for _, v := range x {
		s += v
	}
	return s
}

// centre writes x_i - mean(x) into dst (len(dst) == len(x)), divided by
// (sample std of x + StdEpsilon) when scale is set. By the constant-group
// rule, dst is exactly zero when all x are equal (so also for len(x) == 1),
// which rounding in the mean would otherwise break (mean of three 0.1s is
// not 0.1 in float64). Unscaled, x_i - mean(x) is computed as
// (n x_i - sum x) / n, which for integer x (the grader's 0 and 1) rounds
// once from exact integers: 1 - 1/3 is then the float64 nearest 2/3, as
// an A_marg of 2/3 is (SpiralAdvantages), so that the two cancel exactly
// where an aggregation trace's advantage in one round and its A_marg in
// the next sum to 0 (x_i - the rounded mean would leave a residue).
func centre(dst, x []float64, scale bool) {
	factor, constant := spread(x, scale)
	if constant {
		clear(dst)
		return
	}
	n, s := float64(len(x)), sum(x)
	for i, v := range x {
		dst[i] = (float64(n*v) - s) / n * factor
	}
}

// spread returns what centre needs of x (non-empty): the factor
// deviations from its mean are multiplied by (1, or 1 / (sample std +
// StdEpsilon) when scale is set), and whether all x are equal, when the
// constant-group rule applies instead (and the factor is 0).
func spread(x []float64, scale bool) (factor float64, constant bool) {
	if !slices.ContainsFunc(x, func(v float64) bool { return v != x[0] }) {
		return 0, true
	}
	if !scale {
		return 1, false
	}
	m := mean(x)
	ss := 0.0
	for _, v := range x {
		ss += (v - m) * (v - m)
	}
	return 1 / (math.Sqrt(ss/float64(len(x)-StdDDOF)) + StdEpsilon), false
}
