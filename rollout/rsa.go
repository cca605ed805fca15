package rollout

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/spiral-rl/spiral/data"
)

// Defaults of RSAConfig: the RSA paper's setting (Venkatraman et al. 2025,
// "Recursive Self-Aggregation Unlocks Deep Thinking in Large Language
// Models", arXiv:2509.26626).
const (
	DefaultRSAPopulation = 8
	DefaultRSASubsetSize = 4
	DefaultRSASteps      = 10
)

// rsaSubsetSample is the sample index of the stream of one problem's
// subset draws at one step; member streams use indices 0..N-1, so the
// streams never meet.
const rsaSubsetSample = math.MaxUint64

// RSAConfig configures recursive self-aggregation. DefaultRSAConfig is the
// paper's setting.
type RSAConfig struct {
	// Population is N, the members per problem at every step.
	Population int `json:"population"`
	// SubsetSize is K, the distinct members of the previous population
	// that each new member aggregates; K <= N.
	SubsetSize int `json:"subset_size"`
	// Steps is T, the number of aggregation steps after the initial
	// search population: results cover steps 0..T.
	Steps int `json:"steps"`
	// CandidateTokens caps each candidate in an aggregation prompt, in
	// tokens of text (as PipelineConfig.CandidateTokens), keeping its end
	// (where the answer is); 0 = no cap.
	CandidateTokens int `json:"candidate_tokens,omitempty"`
	// PromptLimit, when > 0, is the longest aggregation prompt in tokens;
	// longer ones get their candidates cut further (see
	// PipelineConfig.PromptLimit).
	PromptLimit int `json:"prompt_limit,omitempty"`
	// Details, when true, adds per-problem numbers to every step.
	Details bool `json:"details,omitempty"`
}

// DefaultRSAConfig returns N = 8, K = 4, T = 10.
func DefaultRSAConfig() RSAConfig {
	return RSAConfig{Population: DefaultRSAPopulation, SubsetSize: DefaultRSASubsetSize, Steps: DefaultRSASteps}
}

// Validate reports an inconsistent configuration, naming the eval flags.
func (c RSAConfig) Validate() error {
	var errs []error
	for _, f := range []struct {
		name string
		v    int
	}{{"--population", c.Population}, {"--subset", c.SubsetSize}, {"--rsa-steps", c.Steps}} {
		if f.v < 1 {
			errs = append(errs, fmt.Errorf("%s %d: want >= 1", f.name, f.v))
		}
	}
	if c.CandidateTokens < 0 {
		errs = append(errs, fmt.Errorf("--candidate-tokens %d: want >= 0 (0 = no cap)", c.CandidateTokens))
	}
	if c.SubsetSize > c.Population && c.Population > 0 {
		errs = append(errs, fmt.Errorf("--subset %d exceeds --population %d: a subset holds distinct members", c.SubsetSize, c.Population))
	}
	return errors.Join(errs...)
}

// RSAProblemStep is one problem's population at one step.
type RSAProblemStep struct {
	ID string `json:"id"`
	// Correct is the number of correct members.
	Correct int `json:"correct"`
	// Majority reports whether the population's majority answer is
	// correct; MajorityAnswer is that answer ("" when no member has one).
	Majority       bool   `json:"majority"`
	MajorityAnswer string `json:"majority_answer"`
}

// RSAStep reports the populations of one step.
type RSAStep struct {
	// Step is 0 for the search population, t for the t-th aggregation.
	Step int `json:"step"`
	// Population is the number of members per problem.
	Population int `json:"population"`
	// Accuracy is the mean over problems of the fraction of correct
	// members.
	Accuracy float64 `json:"accuracy"`
	// Majority is the fraction of problems whose population's majority
	// vote (MajorityVote over all members, answers clustered by the
	// judge's Equal, ties to the first member) is correct.
	Majority float64 `json:"majority"`
	// Tokens were spent at this step; Cumulative over steps 0..Step.
	Tokens     Tokens `json:"tokens"`
	Cumulative Tokens `json:"cumulative"`
	// FittedPrompts counts the step's aggregation prompts longer than
	// RSAConfig.PromptLimit, whose candidates were cut further to fit.
	FittedPrompts int `json:"fitted_prompts,omitempty"`
	// Problems holds per-problem numbers when RSAConfig.Details is set.
	Problems []RSAProblemStep `json:"problems,omitempty"`
}

// RSAState is RSA's progress after a step, as Evaluator.StepDone gets it
// and Evaluator.ResumedRSA gives it back: the steps reported so far
// (Steps[t] is step t) and the last one's population ([problems][N]),
// which the next step aggregates.
type RSAState struct {
	Steps      []RSAStep
	Population [][]Trace
}

// RSAResult is the outcome of Evaluator.RSA.
type RSAResult struct {
	Config RSAConfig `json:"config"`
	// Steps[t] reports step t, for t = 0..Config.Steps.
	Steps []RSAStep `json:"steps"`
	// Final is the last population ([problems][N]); not serialised.
	Final [][]Trace `json:"-"`
}

// FittedNote says how many of r's aggregation prompts (problems x N a
// step) were longer than Config.PromptLimit and had their candidates cut
// to fit, naming report, the file whose steps' fitted_prompts count them;
// "" when none was.
func (r RSAResult) FittedNote(problems int, report string) string {
	fitted := 0
	for _, st := range r.Steps {
		fitted += st.FittedPrompts
	}
	if fitted == 0 {
		return ""
	}
	return fmt.Sprintf("%d of the %d aggregation prompts passed %d tokens (the model's context less --max-new-tokens), so their candidates were cut to fit, keeping as much of each one's end as fits (%s's fitted_prompts counts them at each step where any were, left out at 0; --candidate-tokens caps candidates up front)",
		fitted, problems*r.Config.Population*r.Config.Steps, r.Config.PromptLimit, report)
}

// RSA runs recursive self-aggregation on problems:
//
//   - step 0: N search traces per problem (Prompter.SearchPrompt);
//   - step t = 1..T: each of the N new members of a problem aggregates K
//     distinct members of that problem's step t-1 population, drawn with
//     Subsets (uniform, independent across new members), in the drawn
//     order, each cut to CandidateTokens keeping its end
//     (Prompter.AggregatePrompt).
//
// Every step is one Generate call over all problems (problem-major).
// Member j of problem i at step t is seeded by Stream{seed, t, i, j,
// PhaseRSA} and the subsets of (t, i) by sample index MaxUint64 of the
// same phase, so a run is reproducible, and one resumed from
// e.ResumedRSA goes on as it would have. Every member is judged; each
// step reports accuracy, majority and tokens spent, and is handed to
// e.StepDone with its population.
func (e Evaluator) RSA(ctx context.Context, problems []data.Problem, cfg RSAConfig, seed uint64) (RSAResult, error) {
	if err := cfg.Validate(); err != nil {
		return RSAResult{}, fmt.Errorf("rollout: rsa: %w", err)
	}
	if err := e.validate(); err != nil {
		return RSAResult{}, err
	}
	n, k := cfg.Population, cfg.SubsetSize
	res := RSAResult{Config: cfg, Steps: make([]RSAStep, 0, cfg.Steps+1)}
	golds := make([]string, len(problems))
	for i, pb := range problems {
		golds[i] = pb.Answer
	}
	var (
		pop [][]Trace // [problems][N], the previous population
		cum Tokens
	)
	if r := e.ResumedRSA; r != nil {
		if len(r.Steps) == 0 || len(r.Steps) > cfg.Steps+1 || len(r.Population) != len(problems) {
			return RSAResult{}, fmt.Errorf("rollout: rsa: resumed after %d steps with %d problems' populations, want 1 to %d steps of %d problems", len(r.Steps), len(r.Population), cfg.Steps+1, len(problems))
		}
		for i, members := range r.Population {
			if len(members) != n {
				return RSAResult{}, fmt.Errorf("rollout: rsa: problem %q resumed with %d members, want %d", problems[i].ID, len(members), n)
			}
		}
		res.Steps = append(res.Steps, r.Steps...)
		pop, cum = r.Population, r.Steps[len(r.Steps)-1].Cumulative
	}
	for t := len(res.Steps); t <= cfg.Steps; t++ {
		var traces [][]Trace
		var drawn [][][]int // [problems][N] the candidates of each new member (t >= 1)
		var st Stats
		var err error
		fitted := 0 // aggregation prompts cut to fit cfg.PromptLimit
		if t == 0 {
			prompts := make([][]int32, len(problems))
			for i, pb := range problems {
				if prompts[i], err = e.Prompter.SearchPrompt(pb.Problem); err != nil {
					return RSAResult{}, fmt.Errorf("rollout: rsa: search prompt of problem %q: %w", pb.ID, err)
				}
			}
			traces, st, err = Complete(ctx, e.Gen, e.Prompter, prompts, n, func(i, j int) Stream {
				return Stream{Seed: seed, Problem: uint64(i), Sample: uint64(j), Phase: PhaseRSA}
			}, e.Progress)
		} else {
			// One prompt per new member: member j of problem i is prompt i*n+j.
			prompts := make([][]int32, 0, len(problems)*n)
			drawn = make([][][]int, len(problems))
			for i, pb := range problems {
				rng := rand.New(rand.NewPCG(Stream{Seed: seed, Round: uint64(t), Problem: uint64(i), Sample: rsaSubsetSample, Phase: PhaseRSA}.Derive(), 0))
				subsets, err := Subsets(rng, n, n, k)
				if err != nil {
					return RSAResult{}, fmt.Errorf("rollout: rsa: %w", err)
				}
				drawn[i] = subsets
				cands := make([][]int32, k)
				for _, members := range subsets {
					for m, idx := range members {
						cands[m] = candidateIDs(e.Prompter, pop[i][idx])
					}
					prompt, fit, err := aggregationPrompt(e.Prompter, pb.Problem, cands, cfg.CandidateTokens, cfg.PromptLimit)
					if err != nil {
						return RSAResult{}, fmt.Errorf("rollout: rsa: aggregation prompt of problem %q: %w", pb.ID, err)
					}
					if fit {
						fitted++
					}
					prompts = append(prompts, prompt)
				}
			}
			var flat [][]Trace
			flat, st, err = Complete(ctx, e.Gen, e.Prompter, prompts, 1, func(p, _ int) Stream {
				return Stream{Seed: seed, Round: uint64(t), Problem: uint64(p / n), Sample: uint64(p % n), Phase: PhaseRSA}
			}, e.Progress)
			if err == nil {
				traces = make([][]Trace, len(problems))
				for i := range problems {
					traces[i] = make([]Trace, n)
					for j := range n {
						traces[i][j] = flat[i*n+j][0]
					}
				}
			}
		}
		if err != nil {
			return RSAResult{}, fmt.Errorf("rollout: rsa step %d: %w", t, err)
		}
		e.Judge.JudgeAll(traces, golds)
		if err := e.sink(t, traces, drawn, nil); err != nil {
			return RSAResult{}, fmt.Errorf("rollout: rsa step %d: traces: %w", t, err)
		}
		step := RSAStep{Step: t, Population: n, Tokens: tokensOf(st), FittedPrompts: fitted}
		cum.Prompt += step.Tokens.Prompt
		cum.Generated += step.Tokens.Generated
		step.Cumulative = cum
		pop = traces
		answers := make([]string, n)
		all := make([]int, n)
		for j := range all {
			all[j] = j
		}
		for i, pb := range problems {
			correct := 0
			for j, tr := range pop[i] {
				answers[j] = tr.Verdict.Answer
				if tr.Verdict.Correct {
					correct++
				}
			}
			v := MajorityVote(answers, all, e.Judge.Equal)
			maj, majAns := false, ""
			if v.Winner != NoAnswer {
				maj, majAns = pop[i][v.Winner].Verdict.Correct, answers[v.Winner]
			}
			step.Accuracy += float64(correct) / float64(n)
			if maj {
				step.Majority++
			}
			if cfg.Details {
				step.Problems = append(step.Problems, RSAProblemStep{ID: pb.ID, Correct: correct, Majority: maj, MajorityAnswer: majAns})
			}
		}
		if len(problems) > 0 {
			step.Accuracy /= float64(len(problems))
			step.Majority /= float64(len(problems))
		}
		res.Steps = append(res.Steps, step)
		if e.StepDone != nil {
			if err := e.StepDone(RSAState{Steps: res.Steps, Population: pop}); err != nil {
				return RSAResult{}, fmt.Errorf("rollout: rsa step %d: %w", t, err)
			}
		}
	}
	res.Final = pop
	return res, nil
}
