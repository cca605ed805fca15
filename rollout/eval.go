package rollout

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"

	"github.com/spiral-rl/spiral/data"
)

// Evaluator runs the evaluation scaffolds (RSA, pass@k / majority@k, the
// sequential token budget) with one generator, prompter and judge.
// Progress, when non-nil, is passed to every Generate call.
type Evaluator struct {
	Gen      Generator
	Prompter Prompter
	Judge    Judge
	Progress Progress
	// Traces, when non-nil, receives every judged trace (see TraceSink).
	Traces TraceSink
	// Chunk, when > 0, is the most problems one Generate call of Sample
	// holds: the problems are generated in calls of Chunk of them, in
	// order, each call's judged and handed to Traces and Done as it
	// ends. 0 generates every problem in one call.
	Chunk int
	// Done, when non-nil, receives the problems of each of Sample's
	// Generate calls once judged and handed to Traces, in order; an
	// error stops the evaluation. What it saves, Resumed gives back.
	Done func([]SampledProblem) error
	// Resumed holds problems that an earlier evaluation of the same
	// settings (problems, seed, samples, sampler, judge) finished, by
	// index: Sample generates none of theirs and takes these in their
	// place, as it would have sampled them (each trace seeded by its
	// problem and sample alone), but for what they do not keep: PassAtK
	// takes them; Sequential, which cuts every trace's tokens at its
	// budgets, takes those whose traces keep them (as many as their
	// Tokens.Generated counts) and refuses others.
	Resumed map[int]SampledProblem
	// StepDone, when non-nil, receives RSA's state after each step, once
	// judged and handed to Traces; an error stops the evaluation. What
	// it saves, ResumedRSA gives back.
	StepDone func(RSAState) error
	// ResumedRSA, when non-nil, is the state after the first steps of an
	// earlier RSA evaluation of the same settings (problems, seed,
	// configuration, sampler, judge): RSA goes on from the step after
	// it, as it would have (each member and subset seeded by its step,
	// problem and index alone). Its population's members need only
	// their generated ids and finish reasons (what the next step's
	// candidates are made of) and verdicts.
	ResumedRSA *RSAState
}

// SampledProblem is one problem's judged samples, as Sample hands them
// to Evaluator.Done and takes them from Evaluator.Resumed: Index is the
// problem's index, Tokens what its samples spent. Resumed traces need
// only their verdicts and finish reasons (pass@k's and the cut counts'
// inputs), not their prompts, tokens or text; the sequential budget
// sweep's need their generated tokens too.
type SampledProblem struct {
	Index  int
	Traces []Trace
	Tokens Tokens
}

// TracedTrace is one judged trace of an evaluation, as a TraceSink gets
// it: Step is the RSA step (0 for search traces, and for every trace of
// pass@k and the sequential budget), Problem the problem's index and
// Sample the trace's index among that problem's samples (its member
// index in an RSA population). Candidates, at RSA steps >= 1, are the
// members of the step-1 population it aggregated, in prompt order.
type TracedTrace struct {
	Step, Problem, Sample int
	Candidates            []int
	Trace                 Trace
}

// TraceSink receives the traces of one Generate call of an evaluation,
// in problem-major order, after judging; an error stops the evaluation.
type TraceSink func([]TracedTrace) error

// sink hands traces[i][j] (with their candidates, when given) to
// e.Traces, if set, as those of problem index[i] (i where index is nil).
func (e Evaluator) sink(step int, traces [][]Trace, candidates [][][]int, index []int) error {
	if e.Traces == nil {
		return nil
	}
	var batch []TracedTrace
	for i, row := range traces {
		p := i
		if index != nil {
			p = index[i]
		}
		for j, tr := range row {
			tt := TracedTrace{Step: step, Problem: p, Sample: j, Trace: tr}
			if candidates != nil {
				tt.Candidates = candidates[i][j]
			}
			batch = append(batch, tt)
		}
	}
	return e.Traces(batch)
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

// tokensOf counts the tokens a Generate call spent.
func tokensOf(st Stats) Tokens { return Tokens{Prompt: st.PromptTokens, Generated: st.GeneratedTokens} }

// SampleSet holds n independent search traces per problem, judged: the
// raw material of pass@k, majority@k and the token-budget sweep.
type SampleSet struct {
	Problems []data.Problem
	// Traces[i] are the n traces of Problems[i] (shape [problems][n]).
	Traces [][]Trace
	// Tokens spent generating them.
	Tokens Tokens
}

// N is the number of samples per problem (0 for an empty set).
func (s *SampleSet) N() int {
	if len(s.Traces) == 0 {
		return 0
	}
	return len(s.Traces[0])
}

// Sample generates n search traces per problem and judges them: in one
// Generate call, or in calls of e.Chunk problems each handed to e.Done
// as it ends; problems in e.Resumed are taken from there, not
// generated. Trace (i, j) is seeded by Stream{seed, 0, i, j, PhaseEval},
// so the set is reproducible and a trace does not depend on n, on the
// other problems or on the calls it was generated in (but for what an
// engine's batching rounds differently: Sampler.retire).
func (e Evaluator) Sample(ctx context.Context, problems []data.Problem, n int, seed uint64) (*SampleSet, error) {
	if err := e.validate(); err != nil {
		return nil, err
	}
	set := &SampleSet{Problems: problems, Traces: make([][]Trace, len(problems))}
	prompts := make([][]int32, len(problems))
	var pending []int // the problems to generate, in order
	for i, pb := range problems {
		if r, ok := e.Resumed[i]; ok {
			if len(r.Traces) != n {
				return nil, fmt.Errorf("rollout: sample: problem %q resumed with %d samples, want %d", pb.ID, len(r.Traces), n)
			}
			set.Traces[i] = r.Traces
			set.Tokens.Prompt += r.Tokens.Prompt
			set.Tokens.Generated += r.Tokens.Generated
			continue
		}
		prompt, err := e.Prompter.SearchPrompt(pb.Problem)
		if err != nil {
			return nil, fmt.Errorf("rollout: sample: prompt of problem %q: %w", pb.ID, err)
		}
		prompts[i] = prompt
		pending = append(pending, i)
	}
	chunk := e.Chunk
	if chunk <= 0 {
		chunk = len(pending)
	}
	for len(pending) > 0 {
		index := pending[:min(chunk, len(pending))]
		pending = pending[len(index):]
		ps := make([][]int32, len(index))
		golds := make([]string, len(index))
		for k, i := range index {
			ps[k], golds[k] = prompts[i], problems[i].Answer
		}
		traces, _, err := Complete(ctx, e.Gen, e.Prompter, ps, n, func(k, j int) Stream {
			return Stream{Seed: seed, Problem: uint64(index[k]), Sample: uint64(j), Phase: PhaseEval}
		}, e.Progress)
		if err != nil {
			return nil, fmt.Errorf("rollout: sample: %w", err)
		}
		e.Judge.JudgeAll(traces, golds)
		if err := e.sink(0, traces, nil, index); err != nil {
			return nil, fmt.Errorf("rollout: sample: traces: %w", err)
		}
		done := make([]SampledProblem, len(index))
		for k, i := range index {
			done[k] = SampledProblem{Index: i, Traces: traces[k]}
			for _, tr := range traces[k] {
				// Complete's exact counts: the prompt per request, the
				// tokens of each completion.
				done[k].Tokens.Prompt += len(tr.Prompt)
				done[k].Tokens.Generated += len(tr.Tokens)
			}
			set.Traces[i] = traces[k]
			set.Tokens.Prompt += done[k].Tokens.Prompt
			set.Tokens.Generated += done[k].Tokens.Generated
		}
		if e.Done != nil {
			if err := e.Done(done); err != nil {
				return nil, fmt.Errorf("rollout: sample: %w", err)
			}
		}
	}
	return set, nil
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

// PassAtKCurve computes pass@k (PassAtK) and majority@k
// (Ballots.MajorityAtK with equal and mcfg, one table a problem for every
// k) at each k, averaged over the problems of set; ks nil
// means PowersOfTwo(n). rng drives majority@k's Monte Carlo subsets when
// C(n, k) is too large to enumerate (nil is fine when it never is). It
// returns an error for an empty set, ragged sample counts, or k outside
// [1, n].
func PassAtKCurve(rng *rand.Rand, set *SampleSet, ks []int, equal Equivalence, mcfg MajorityConfig) ([]KPoint, error) {
	n := set.N()
	if n == 0 || len(set.Traces) == 0 {
		return nil, errors.New("rollout: pass@k curve: no samples")
	}
	if len(set.Problems) != len(set.Traces) {
		return nil, fmt.Errorf("rollout: pass@k curve: %d problems with traces for %d", len(set.Problems), len(set.Traces))
	}
	if ks == nil {
		ks = PowersOfTwo(n)
	}
	ballots := make([]*Ballots, len(set.Traces))
	for i, ss := range set.Traces {
		if len(ss) != n {
			return nil, fmt.Errorf("rollout: pass@k curve: problem %d has %d samples, problem 0 has %d", i, len(ss), n)
		}
		answers := make([]string, n)
		correct := make([]bool, n)
		for j, s := range ss {
			answers[j], correct[j] = s.Verdict.Answer, s.Verdict.Correct
		}
		var err error
		if ballots[i], err = NewBallots(answers, correct, equal); err != nil {
			return nil, fmt.Errorf("rollout: pass@k curve: %w", err)
		}
	}
	counts := set.PerProblem()
	points := make([]KPoint, 0, len(ks))
	for _, k := range ks {
		pt := KPoint{K: k, MajorityExact: true}
		for i := range set.Traces {
			p, err := PassAtK(n, counts[i].Correct, k)
			if err != nil {
				return nil, fmt.Errorf("rollout: pass@k curve: %w", err)
			}
			m, err := ballots[i].MajorityAtK(rng, k, mcfg)
			if err != nil {
				return nil, fmt.Errorf("rollout: pass@k curve: %w", err)
			}
			pt.PassAtK += p
			pt.MajorityAtK += m.Accuracy
			pt.MajorityExact = pt.MajorityExact && m.Exact
		}
		pt.PassAtK /= float64(len(set.Traces))
		pt.MajorityAtK /= float64(len(set.Traces))
		points = append(points, pt)
	}
	return points, nil
}

// PassAtKConfig configures Evaluator.PassAtK.
type PassAtKConfig struct {
	// Samples is n, the number of samples per problem (>= 1; the CLI's
	// default is DefaultEvalSamples).
	Samples int `json:"samples"`
	// Ks are the k values; nil means PowersOfTwo(Samples).
	Ks []int `json:"ks,omitempty"`
	// Majority sets how majority@k averages over subsets; the zero value
	// (the defaults, absent in JSON) is what spiral eval uses.
	Majority MajorityConfig `json:"majority,omitzero"`
}

// DefaultEvalSamples is the default number of samples per problem of
// pass@k and of the sequential budget sweep.
const DefaultEvalSamples = 16

// PassAtKResult is the outcome of Evaluator.PassAtK.
type PassAtKResult struct {
	Config PassAtKConfig `json:"config"`
	Points []KPoint      `json:"points"`
	Tokens Tokens        `json:"tokens"`
	// PerProblem is each problem's number of correct samples (of
	// Config.Samples), in the order of the problems: enough to recompute
	// pass@k on any subset of them (report.EfficiencyIntervals resamples
	// them).
	PerProblem []ProblemCorrect `json:"per_problem"`
}

// ProblemCorrect is how many of a problem's samples were correct.
type ProblemCorrect struct {
	ID      string `json:"id"`
	Correct int    `json:"correct"`
}

// PerProblem returns each problem's number of correct traces.
func (s *SampleSet) PerProblem() []ProblemCorrect {
	out := make([]ProblemCorrect, len(s.Traces))
	for i, ts := range s.Traces {
		out[i].ID = s.Problems[i].ID
		for _, t := range ts {
			if t.Verdict.Correct {
				out[i].Correct++
			}
		}
	}
	return out
}

// PassAtK samples cfg.Samples traces per problem and returns the pass@k
// and majority@k curve. Majority@k's Monte Carlo draws (if any) use a
// generator seeded from Stream{seed, 1, 0, 0, PhaseEval}, apart from the
// traces' seeds.
func (e Evaluator) PassAtK(ctx context.Context, problems []data.Problem, cfg PassAtKConfig, seed uint64) (PassAtKResult, error) {
	if cfg.Samples < 1 {
		return PassAtKResult{}, fmt.Errorf("rollout: pass@k: --samples %d: want >= 1", cfg.Samples)
	}
	if cfg.Ks == nil {
		cfg.Ks = PowersOfTwo(cfg.Samples)
	}
	// Checked before sampling: a k the curve cannot compute would fail
	// only after the whole generation, and ks out of order would give a
	// report that report.ReadJSON refuses.
	for i, k := range cfg.Ks {
		if _, err := PassAtK(cfg.Samples, 0, k); err != nil {
			return PassAtKResult{}, err
		}
		if i > 0 && k <= cfg.Ks[i-1] {
			return PassAtKResult{}, fmt.Errorf("rollout: pass@k: ks %v not increasing", cfg.Ks)
		}
	}
	set, err := e.Sample(ctx, problems, cfg.Samples, seed)
	if err != nil {
		return PassAtKResult{}, err
	}
	rng := rand.New(rand.NewPCG(Stream{Seed: seed, Round: 1, Phase: PhaseEval}.Derive(), 0))
	pts, err := PassAtKCurve(rng, set, cfg.Ks, e.Judge.Equal, cfg.Majority)
	if err != nil {
		return PassAtKResult{}, err
	}
	return PassAtKResult{Config: cfg, Points: pts, Tokens: set.Tokens, PerProblem: set.PerProblem()}, nil
}

// BudgetPoint is the accuracy of traces truncated at one token budget.
type BudgetPoint struct {
	// Budget is the number of generated tokens a trace may use, its
	// stop token included, as --max-new-tokens counts them: a trace of
	// Budget tokens of text and a stop token is cut at Budget, as
	// generation at --max-new-tokens Budget would have cut it.
	Budget int `json:"budget"`
	// Accuracy is the mean over problems of the fraction of samples whose
	// first Budget tokens grade correct.
	Accuracy float64 `json:"accuracy"`
	// MeanTokens is the mean of min(len(trace), Budget) over all traces:
	// the tokens actually spent per trace at this budget.
	MeanTokens float64 `json:"mean_tokens"`
	// Truncated is the fraction of traces that did not end within Budget
	// tokens: those longer than Budget, and those the generator itself cut
	// at its token limit (FinishLength), at the budget that reaches it too
	// (not those an engine cut before a padding id, FinishPadding, which
	// reached no limit).
	Truncated float64 `json:"truncated"`
}

// BudgetCurve judges every trace of set at each budget: a trace longer
// than b is decoded (text) from its first b tokens and judged again as a
// trace cut at the token limit (FinishLength), its answer stated when
// the token after the cut leaves it as it is (Judge.JudgePrefix); a
// shorter one keeps its verdict, and counts as truncated when the
// generator cut it. Budgets must be positive.
func BudgetCurve(set *SampleSet, budgets []int, text func([]int32) string, judge Judge) ([]BudgetPoint, error) {
	if len(set.Traces) == 0 {
		return nil, errors.New("rollout: budget curve: no samples")
	}
	points := make([]BudgetPoint, 0, len(budgets))
	for _, b := range budgets {
		if b < 1 {
			return nil, fmt.Errorf("rollout: budget curve: budget %d < 1", b)
		}
		pt := BudgetPoint{Budget: b}
		traces := 0
		for i, ss := range set.Traces {
			if len(ss) == 0 {
				return nil, fmt.Errorf("rollout: budget curve: problem %d has no samples", i)
			}
			hits := 0
			for _, s := range ss {
				ok := s.Verdict.Correct
				used := len(s.Tokens)
				if used > b {
					cut := Trace{Prompt: s.Prompt, Completion: Completion{Tokens: s.Tokens[:b], Finish: FinishLength}, Text: text(s.Tokens[:b])}
					ok = judge.JudgePrefix(cut, set.Problems[i].Answer, func() string { return text(s.Tokens[:b+1]) }).Correct
					used = b
					pt.Truncated++
				} else if s.Finish == FinishLength {
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
		pt.Accuracy /= float64(len(set.Traces))
		pt.MeanTokens /= float64(traces)
		pt.Truncated /= float64(traces)
		points = append(points, pt)
	}
	return points, nil
}

// BudgetConfig configures Evaluator.Sequential.
type BudgetConfig struct {
	// Samples is the number of traces per problem (>= 1).
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
	if cfg.Samples < 1 {
		return BudgetResult{}, fmt.Errorf("rollout: sequential: --samples %d: want >= 1", cfg.Samples)
	}
	if cfg.MaxTokens < 0 {
		return BudgetResult{}, fmt.Errorf("rollout: sequential: max tokens %d < 0", cfg.MaxTokens)
	}
	for i, pb := range problems {
		// The budget curve cuts every trace's tokens, which resumed
		// traces must keep.
		r, ok := e.Resumed[i]
		kept := 0
		for _, tr := range r.Traces {
			kept += len(tr.Tokens)
		}
		if ok && kept != r.Tokens.Generated {
			return BudgetResult{}, fmt.Errorf("rollout: sequential: resumed problem %q keeps %d of its traces' %d generated tokens, which the budgets cut", pb.ID, kept, r.Tokens.Generated)
		}
	}
	for i, b := range cfg.Budgets { // before sampling, as BudgetCurve and report.Budget.Validate check them
		if b < 1 {
			return BudgetResult{}, fmt.Errorf("rollout: sequential: budget %d < 1", b)
		}
		if i > 0 && b <= cfg.Budgets[i-1] {
			return BudgetResult{}, fmt.Errorf("rollout: sequential: budgets %v not increasing", cfg.Budgets)
		}
	}
	set, err := e.Sample(ctx, problems, cfg.Samples, seed)
	if err != nil {
		return BudgetResult{}, err
	}
	if cfg.Budgets == nil {
		longest := cfg.MaxTokens
		if longest == 0 {
			for _, ss := range set.Traces {
				for _, s := range ss {
					longest = max(longest, len(s.Tokens))
				}
			}
		}
		cfg.Budgets = PowersOfTwo(max(longest, 1))
	}
	pts, err := BudgetCurve(set, cfg.Budgets, e.Prompter.Text, e.Judge)
	if err != nil {
		return BudgetResult{}, err
	}
	return BudgetResult{Config: cfg, Points: pts, Tokens: set.Tokens}, nil
}
