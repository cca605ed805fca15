package rollout

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/spiral-rl/spiral/data"
)

// GradeFunc grades one response against a gold answer: the answer it
// extracted ("" when none could be found, which counts as unscorable in
// majority votes) and whether that answer is correct. grader.Grade wrapped
// as
//
//	func(r, g string) (string, bool) { v := grader.Grade(r, g); return v.Extracted, v.Correct }
//
// is the production one.
type GradeFunc func(response, gold string) (answer string, correct bool)

// Judge is how the evaluation scaffolds grade: Grade decides correctness
// against the gold answer, Equal clusters extracted answers for majority
// voting (grader.Equivalent in production). It is injected so that this
// package does not import the grader and tests can use simple fakes.
type Judge struct {
	Grade GradeFunc
	Equal Equivalence
}

func (j Judge) validate() error {
	if j.Grade == nil || j.Equal == nil {
		return errors.New("rollout: judge needs both Grade and Equal")
	}
	return nil
}

// Evaluator runs the evaluation scaffolds (RSA, pass@k / majority@k, the
// sequential token budget) with one generator, prompter and judge.
// Progress, when non-nil, is passed to every Generate call.
type Evaluator struct {
	Gen      Generator
	Prompter Prompter
	Judge    Judge
	Progress Progress
}

func (e Evaluator) validate() error {
	if e.Gen == nil || e.Prompter == nil {
		return errors.New("rollout: evaluator needs a generator and a prompter")
	}
	return e.Judge.validate()
}

// Tokens counts tokens spent: prompt tokens read and tokens generated.
type Tokens struct {
	Prompt    int `json:"prompt"`
	Generated int `json:"generated"`
}

// Total is Prompt + Generated.
func (t Tokens) Total() int { return t.Prompt + t.Generated }

// add counts the completions' prompt and generated tokens (exact sums of
// Completion.PromptTokens and len(Completion.Tokens)).
func (t Tokens) add(outs []Completion) Tokens {
	for _, c := range outs {
		t.Prompt += c.PromptTokens
		t.Generated += len(c.Tokens)
	}
	return t
}

// Sample is one graded trace of a SampleSet.
type Sample struct {
	// Tokens are the generated ids.
	Tokens []int32
	// Text is Tokens decoded.
	Text string
	// Answer is the judge's extracted answer ("" when none).
	Answer string
	// Correct is the judge's verdict against the gold answer.
	Correct bool
	// Finish is why generation stopped.
	Finish FinishReason
}

// SampleSet holds n independent search traces per problem, graded: the
// raw material of pass@k, majority@k and the token-budget sweep.
type SampleSet struct {
	Problems []data.Problem
	// Samples[i] are the n traces of Problems[i] (shape [problems][n]).
	Samples [][]Sample
	// Tokens spent generating them.
	Tokens Tokens
}

// N is the number of samples per problem (0 for an empty set).
func (s *SampleSet) N() int {
	if len(s.Samples) == 0 {
		return 0
	}
	return len(s.Samples[0])
}

// Sample generates n search traces per problem in one Generate call and
// grades them. Requests are problem-major (problem i, sample j is request
// i*n+j) and trace (i, j) is seeded with DeriveSeed(seed, 0, i, j,
// phaseEval), so the set is reproducible and a trace does not depend on n
// or on the other problems.
func (e Evaluator) Sample(ctx context.Context, problems []data.Problem, n int, seed uint64) (*SampleSet, error) {
	if err := e.validate(); err != nil {
		return nil, err
	}
	if n < 1 {
		return nil, fmt.Errorf("rollout: sample: %d samples per problem, want >= 1", n)
	}
	reqs := make([]Request, 0, len(problems)*n)
	for i, pb := range problems {
		prompt, err := e.Prompter.SearchPrompt(pb.Problem)
		if err != nil {
			return nil, fmt.Errorf("rollout: sample: prompt of problem %q: %w", pb.ID, err)
		}
		for j := range n {
			reqs = append(reqs, Request{Prompt: prompt, Seed: DeriveSeed(seed, 0, uint64(i), uint64(j), phaseEval)})
		}
	}
	outs, err := e.generate(ctx, reqs)
	if err != nil {
		return nil, fmt.Errorf("rollout: sample: %w", err)
	}
	set := &SampleSet{Problems: problems, Samples: make([][]Sample, len(problems)), Tokens: Tokens{}.add(outs)}
	for i, pb := range problems {
		set.Samples[i] = make([]Sample, n)
		for j := range n {
			c := outs[i*n+j]
			text := e.Prompter.Text(c.Tokens)
			ans, ok := e.Judge.Grade(text, pb.Answer)
			set.Samples[i][j] = Sample{Tokens: c.Tokens, Text: text, Answer: ans, Correct: ok, Finish: c.Finish}
		}
	}
	return set, nil
}

// generate calls the generator and checks that it answered every request.
func (e Evaluator) generate(ctx context.Context, reqs []Request) ([]Completion, error) {
	outs, _, err := e.Gen.Generate(ctx, reqs, e.Progress)
	if err != nil {
		return nil, err
	}
	if len(outs) != len(reqs) {
		return nil, fmt.Errorf("generator returned %d completions for %d requests", len(outs), len(reqs))
	}
	return outs, nil
}

// PowersOfTwo lists 1, 2, 4, ... up to max, with max itself appended when
// it is not a power of two (the default k values and token budgets). It is
// empty for max < 1.
func PowersOfTwo(max int) []int {
	var out []int
	for p := 1; p <= max; p *= 2 {
		out = append(out, p)
		if p > max/2 { // the next power would pass max (or overflow)
			break
		}
	}
	if len(out) > 0 && out[len(out)-1] != max {
		out = append(out, max)
	}
	return out
}

// KPoint is pass@k and majority@k at one k, each averaged over problems.
type KPoint struct {
	K int `json:"k"`
	// PassAtK is the mean over problems of the unbiased pass@k estimator.
	PassAtK float64 `json:"pass_at_k"`
	// MajorityAtK is the mean over problems of majority@k.
	MajorityAtK float64 `json:"majority_at_k"`
	// MajorityExact is false when some problem's majority@k was a Monte
	// Carlo estimate (see MajorityConfig).
	MajorityExact bool `json:"majority_exact"`
}

// PassAtKCurve computes pass@k (PassAtK) and majority@k (MajorityAtK with
// equal and mcfg) at each k, averaged over the problems of set; ks nil
// means PowersOfTwo(n). rng drives majority@k's Monte Carlo subsets when
// C(n, k) is too large to enumerate (nil is fine when it never is). It
// returns an error for an empty set, ragged sample counts, or k outside
// [1, n].
func PassAtKCurve(rng *rand.Rand, set *SampleSet, ks []int, equal Equivalence, mcfg MajorityConfig) ([]KPoint, error) {
	n := set.N()
	if n == 0 || len(set.Samples) == 0 {
		return nil, errors.New("rollout: pass@k curve: no samples")
	}
	if ks == nil {
		ks = PowersOfTwo(n)
	}
	answers := make([][]string, len(set.Samples))
	correct := make([][]bool, len(set.Samples))
	counts := make([]int, len(set.Samples))
	for i, ss := range set.Samples {
		if len(ss) != n {
			return nil, fmt.Errorf("rollout: pass@k curve: problem %d has %d samples, problem 0 has %d", i, len(ss), n)
		}
		answers[i] = make([]string, n)
		correct[i] = make([]bool, n)
		for j, s := range ss {
			answers[i][j], correct[i][j] = s.Answer, s.Correct
			if s.Correct {
				counts[i]++
			}
		}
	}
	points := make([]KPoint, 0, len(ks))
	for _, k := range ks {
		pt := KPoint{K: k, MajorityExact: true}
		for i := range set.Samples {
			p, err := PassAtK(n, counts[i], k)
			if err != nil {
				return nil, fmt.Errorf("rollout: pass@k curve: %w", err)
			}
			m, err := MajorityAtK(rng, answers[i], correct[i], equal, k, mcfg)
			if err != nil {
				return nil, fmt.Errorf("rollout: pass@k curve: %w", err)
			}
			pt.PassAtK += p
			pt.MajorityAtK += m.Accuracy
			pt.MajorityExact = pt.MajorityExact && m.Exact
		}
		pt.PassAtK /= float64(len(set.Samples))
		pt.MajorityAtK /= float64(len(set.Samples))
		points = append(points, pt)
	}
	return points, nil
}

// PassAtKConfig configures Evaluator.PassAtK.
type PassAtKConfig struct {
	// Samples is n, the number of samples per problem (default 16).
	Samples int `json:"samples"`
	// Ks are the k values; nil means PowersOfTwo(Samples).
	Ks []int `json:"ks,omitempty"`
	// Majority sets how majority@k averages over subsets.
	Majority MajorityConfig `json:"majority"`
}

// DefaultEvalSamples is the default number of samples per problem of
// pass@k and of the sequential budget sweep.
const DefaultEvalSamples = 16

// PassAtKResult is the outcome of Evaluator.PassAtK.
type PassAtKResult struct {
	Config PassAtKConfig `json:"config"`
	Points []KPoint      `json:"points"`
	Tokens Tokens        `json:"tokens"`
}

// PassAtK samples cfg.Samples traces per problem and returns the pass@k
// and majority@k curve. Majority@k's Monte Carlo draws (if any) use a
// generator seeded from (seed, phaseEval), apart from the traces' seeds.
func (e Evaluator) PassAtK(ctx context.Context, problems []data.Problem, cfg PassAtKConfig, seed uint64) (PassAtKResult, error) {
	if cfg.Samples == 0 {
		cfg.Samples = DefaultEvalSamples
	}
	if cfg.Ks == nil {
		cfg.Ks = PowersOfTwo(cfg.Samples)
	}
	set, err := e.Sample(ctx, problems, cfg.Samples, seed)
	if err != nil {
		return PassAtKResult{}, err
	}
	rng := rand.New(rand.NewPCG(DeriveSeed(seed, 1, 0, 0, phaseEval), 0))
	pts, err := PassAtKCurve(rng, set, cfg.Ks, e.Judge.Equal, cfg.Majority)
	if err != nil {
		return PassAtKResult{}, err
	}
	return PassAtKResult{Config: cfg, Points: pts, Tokens: set.Tokens}, nil
}

// BudgetPoint is the accuracy of traces truncated at one token budget.
type BudgetPoint struct {
	// Budget is the number of generated tokens a trace may use.
	Budget int `json:"budget"`
	// Accuracy is the mean over problems of the fraction of samples whose
	// first Budget tokens grade correct.
	Accuracy float64 `json:"accuracy"`
	// MeanTokens is the mean of min(len(trace), Budget) over all traces:
	// the tokens actually spent per trace at this budget.
	MeanTokens float64 `json:"mean_tokens"`
	// Truncated is the fraction of traces longer than Budget.
	Truncated float64 `json:"truncated"`
}

// BudgetCurve grades every trace of set at each budget: a trace longer
// than b is decoded (text) from its first b tokens and graded again
// against the gold answer; a shorter one keeps its full-length verdict.
// Budgets must be positive.
func BudgetCurve(set *SampleSet, budgets []int, text func([]int32) string, grade GradeFunc) ([]BudgetPoint, error) {
	if len(set.Samples) == 0 {
		return nil, errors.New("rollout: budget curve: no samples")
	}
	points := make([]BudgetPoint, 0, len(budgets))
	for _, b := range budgets {
		if b < 1 {
			return nil, fmt.Errorf("rollout: budget curve: budget %d < 1", b)
		}
		pt := BudgetPoint{Budget: b}
		traces := 0
		for i, ss := range set.Samples {
			if len(ss) == 0 {
				return nil, fmt.Errorf("rollout: budget curve: problem %d has no samples", i)
			}
			hits := 0
			for _, s := range ss {
				ok := s.Correct
				used := len(s.Tokens)
				if used > b {
					_, ok = grade(text(s.Tokens[:b]), set.Problems[i].Answer)
					used = b
					pt.Truncated++
				}
				if ok {
					hits++
				}
				pt.MeanTokens += float64(used)
				traces++
			}
			pt.Accuracy += float64(hits) / float64(len(ss))
		}
		pt.Accuracy /= float64(len(set.Samples))
		pt.MeanTokens /= float64(traces)
		pt.Truncated /= float64(traces)
		points = append(points, pt)
	}
	return points, nil
}

// BudgetConfig configures Evaluator.Sequential.
type BudgetConfig struct {
	// Samples is the number of traces per problem (default 16).
	Samples int `json:"samples"`
	// Budgets are the token budgets, increasing; nil means
	// PowersOfTwo(MaxTokens).
	Budgets []int `json:"budgets,omitempty"`
	// MaxTokens is the generator's cap on new tokens, used for the default
	// budgets; 0 means the longest trace generated.
	MaxTokens int `json:"max_tokens,omitempty"`
}

// BudgetResult is the outcome of Evaluator.Sequential.
type BudgetResult struct {
	Config BudgetConfig  `json:"config"`
	Points []BudgetPoint `json:"points"`
	Tokens Tokens        `json:"tokens"`
}

// Sequential is sequential scaling with a token-budget sweep: it samples
// cfg.Samples traces per problem once (the generator's own cap bounds
// them) and reports the accuracy of those traces truncated at each budget
// (BudgetCurve), so one generation serves every budget.
func (e Evaluator) Sequential(ctx context.Context, problems []data.Problem, cfg BudgetConfig, seed uint64) (BudgetResult, error) {
	if cfg.Samples == 0 {
		cfg.Samples = DefaultEvalSamples
	}
	if cfg.MaxTokens < 0 {
		return BudgetResult{}, fmt.Errorf("rollout: sequential: max tokens %d < 0", cfg.MaxTokens)
	}
	if !slices.IsSorted(cfg.Budgets) {
		return BudgetResult{}, fmt.Errorf("rollout: sequential: budgets %v not increasing", cfg.Budgets)
	}
	set, err := e.Sample(ctx, problems, cfg.Samples, seed)
	if err != nil {
		return BudgetResult{}, err
	}
	if cfg.Budgets == nil {
		longest := cfg.MaxTokens
		if longest == 0 {
			for _, ss := range set.Samples {
				for _, s := range ss {
					longest = max(longest, len(s.Tokens))
				}
			}
		}
		cfg.Budgets = PowersOfTwo(max(longest, 1))
	}
	pts, err := BudgetCurve(set, cfg.Budgets, e.Prompter.Text, e.Judge.Grade)
	if err != nil {
		return BudgetResult{}, err
	}
	return BudgetResult{Config: cfg, Points: pts, Tokens: set.Tokens}, nil
}
