package rollout

import (
	"context"
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

// rsaSubsetSample is the sample index of the seed of one problem's subset
// draws at one step; member seeds use indices 0..N-1, so the streams never
// meet.
const rsaSubsetSample = math.MaxUint64

// RSAConfig configures recursive self-aggregation. The zero value is the
// paper's setting.
type RSAConfig struct {
	// Population is N, the members per problem at every step (default 8).
	Population int `json:"population"`
	// SubsetSize is K, the distinct members of the previous population
	// that each new member aggregates (default 4); K <= N.
	SubsetSize int `json:"subset_size"`
	// Steps is T, the number of aggregation steps after the initial
	// search population (default 10): results cover steps 0..T.
	Steps int `json:"steps"`
	// CandidateTokens caps each candidate in an aggregation prompt,
	// keeping its end (where the answer is); 0 = no cap.
	CandidateTokens int `json:"candidate_tokens,omitempty"`
	// Details, when true, adds per-problem numbers to every step.
	Details bool `json:"details,omitempty"`
}

// WithDefaults fills zero fields with the defaults.
func (c RSAConfig) WithDefaults() RSAConfig {
	if c.Population == 0 {
		c.Population = DefaultRSAPopulation
	}
	if c.SubsetSize == 0 {
		c.SubsetSize = DefaultRSASubsetSize
	}
	if c.Steps == 0 {
		c.Steps = DefaultRSASteps
	}
	return c
}

// Validate reports an inconsistent configuration: Population, SubsetSize
// and Steps must be positive, SubsetSize <= Population, CandidateTokens
// >= 0.
func (c RSAConfig) Validate() error {
	if c.Population < 1 || c.SubsetSize < 1 || c.Steps < 1 || c.CandidateTokens < 0 {
		return fmt.Errorf("rollout: rsa config %+v: population, subset size and steps must be positive, candidate tokens >= 0", c)
	}
	if c.SubsetSize > c.Population {
		return fmt.Errorf("rollout: rsa config: subset size %d exceeds the population %d", c.SubsetSize, c.Population)
	}
	return nil
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
	// Problems holds per-problem numbers when RSAConfig.Details is set.
	Problems []RSAProblemStep `json:"problems,omitempty"`
}

// RSAResult is the outcome of Evaluator.RSA.
type RSAResult struct {
	Config RSAConfig `json:"config"`
	// Steps[t] reports step t, for t = 0..Config.Steps.
	Steps []RSAStep `json:"steps"`
	// Final is the last population ([problems][N]); not serialised.
	Final [][]Sample `json:"-"`
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
// Every step is one Generate call over all problems (problem-major). Member
// j of problem i at step t is seeded with DeriveSeed(seed, t, i, j,
// phaseRSA) and the subsets of (t, i) with sample index MaxUint64 of the
// same phase, so a run is reproducible. Every member is graded with the
// judge; each step reports accuracy, majority and tokens spent.
func (e Evaluator) RSA(ctx context.Context, problems []data.Problem, cfg RSAConfig, seed uint64) (RSAResult, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return RSAResult{}, err
	}
	if err := e.validate(); err != nil {
		return RSAResult{}, err
	}
	n, k := cfg.Population, cfg.SubsetSize
	res := RSAResult{Config: cfg, Steps: make([]RSAStep, 0, cfg.Steps+1)}
	var (
		pop [][]Sample // [problems][N], the previous population
		cum Tokens
	)
	for t := 0; t <= cfg.Steps; t++ {
		// A fresh slice per step: a generator may keep the requests.
		reqs := make([]Request, 0, len(problems)*n)
		for i, pb := range problems {
			if t == 0 {
				prompt, err := e.Prompter.SearchPrompt(pb.Problem)
				if err != nil {
					return RSAResult{}, fmt.Errorf("rollout: rsa: search prompt of problem %q: %w", pb.ID, err)
				}
				for j := range n {
					reqs = append(reqs, Request{Prompt: prompt, Seed: DeriveSeed(seed, 0, uint64(i), uint64(j), phaseRSA)})
				}
				continue
			}
			rng := rand.New(rand.NewPCG(DeriveSeed(seed, uint64(t), uint64(i), rsaSubsetSample, phaseRSA), 0))
			subsets, err := Subsets(rng, n, n, k)
			if err != nil {
				return RSAResult{}, fmt.Errorf("rollout: rsa: %w", err)
			}
			cands := make([]string, k)
			for j, members := range subsets {
				for m, idx := range members {
					cands[m] = e.Prompter.Text(capTokens(pop[i][idx].Tokens, cfg.CandidateTokens))
				}
				prompt, err := e.Prompter.AggregatePrompt(pb.Problem, cands)
				if err != nil {
					return RSAResult{}, fmt.Errorf("rollout: rsa: aggregation prompt of problem %q: %w", pb.ID, err)
				}
				reqs = append(reqs, Request{Prompt: prompt, Seed: DeriveSeed(seed, uint64(t), uint64(i), uint64(j), phaseRSA)})
			}
		}
		outs, err := e.generate(ctx, reqs)
		if err != nil {
			return RSAResult{}, fmt.Errorf("rollout: rsa step %d: %w", t, err)
		}
		step := RSAStep{Step: t, Population: n, Tokens: Tokens{}.add(outs)}
		cum.Prompt += step.Tokens.Prompt
		cum.Generated += step.Tokens.Generated
		step.Cumulative = cum
		pop = make([][]Sample, len(problems))
		answers := make([]string, n)
		all := make([]int, n)
		for j := range all {
			all[j] = j
		}
		for i, pb := range problems {
			pop[i] = make([]Sample, n)
			correct := 0
			for j := range n {
				c := outs[i*n+j]
				text := e.Prompter.Text(c.Tokens)
				ans, ok := e.Judge.Grade(text, pb.Answer)
				pop[i][j] = Sample{Tokens: c.Tokens, Text: text, Answer: ans, Correct: ok, Finish: c.Finish}
				answers[j] = ans
				if ok {
					correct++
				}
			}
			v := MajorityVote(answers, all, e.Judge.Equal)
			maj, majAns := false, ""
			if v.Winner != NoAnswer {
				maj, majAns = pop[i][v.Winner].Correct, answers[v.Winner]
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
	}
	res.Final = pop
	return res, nil
}
