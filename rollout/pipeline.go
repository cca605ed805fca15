package rollout

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"

	"github.com/spiral-rl/spiral/data"
)

// Generator produces completions for token prompts; *Sampler is one, and
// a remote serving engine can be another.
type Generator interface {
	Generate(ctx context.Context, reqs []Request, progress Progress) ([]Completion, Stats, error)
}

// Prompter turns problems and candidate texts into token prompts and
// tokens back into text: the model's chat template and tokenizer together.
type Prompter interface {
	// SearchPrompt is the prompt of a search trace for problem.
	SearchPrompt(problem string) ([]int32, error)
	// AggregatePrompt is the prompt of an aggregation trace that reads
	// the candidates.
	AggregatePrompt(problem string, candidates []string) ([]int32, error)
	// Text decodes a completion without special tokens.
	Text(ids []int32) string
}

// PipelineConfig is SPIRAL's rollout shape per problem: N1 search traces,
// K subsets of N distinct traces, N2 aggregation traces per subset. The
// paper's 24 rollouts per problem split by default as 8 + 4x4
// (DefaultPipelineConfig).
type PipelineConfig struct {
	// N1 is the number of search traces per problem.
	N1 int `json:"n1"`
	// K is the number of subsets per problem.
	K int `json:"k"`
	// N is the number of traces in a subset (N <= N1).
	N int `json:"n"`
	// N2 is the number of aggregation traces per subset.
	N2 int `json:"n2"`
	// CandidateTokens caps each candidate in an aggregation prompt, keeping
	// its end (where the answer is); 0 = no cap.
	CandidateTokens int `json:"candidate_tokens"`
	// PromptLimit, when > 0, is the longest aggregation prompt in tokens
	// (the model's context less the trace length): longer ones get their
	// candidates cut further (see aggregationPrompt).
	PromptLimit int `json:"prompt_limit,omitempty"`
}

// DefaultPipelineConfig returns the default shape: 8 search traces, 4
// subsets of 4, 4 aggregation traces each.
func DefaultPipelineConfig() PipelineConfig { return PipelineConfig{N1: 8, K: 4, N: 4, N2: 4} }

// Validate reports an inconsistent shape, naming the fields as the
// training flags do (--n1, --k, --n, --n2, --candidate-tokens).
func (c PipelineConfig) Validate() error {
	var errs []error
	for _, f := range []struct {
		name string
		v    int
	}{{"--n1 (search traces per problem)", c.N1}, {"--k (subsets per problem)", c.K}, {"--n (traces per subset)", c.N}, {"--n2 (aggregation traces per subset)", c.N2}} {
		if f.v < 1 {
			errs = append(errs, fmt.Errorf("%s is %d; want >= 1", f.name, f.v))
		}
	}
	if c.CandidateTokens < 0 {
		errs = append(errs, fmt.Errorf("--candidate-tokens is %d; want >= 0 (0 = no cap)", c.CandidateTokens))
	}
	if c.PromptLimit < 0 {
		errs = append(errs, fmt.Errorf("prompt limit %d: want >= 0 (0 = none)", c.PromptLimit))
	}
	if c.N > c.N1 && c.N1 > 0 {
		errs = append(errs, fmt.Errorf("--n %d exceeds --n1 %d: a subset holds distinct search traces", c.N, c.N1))
	}
	return errors.Join(errs...)
}

// Group is the SPIRAL rollout of one problem, the structure rl/ consumes.
type Group struct {
	Problem data.Problem
	// Search holds the N1 search traces.
	Search []Trace
	// Subsets[g] lists the indices into Search of subset g's members.
	Subsets [][]int
	// Aggregates[g] holds the N2 aggregation traces of subset g.
	Aggregates [][]Trace
}

// Pipeline runs Search -> Subsets -> Aggregate.
type Pipeline struct {
	gen Generator
	pr  Prompter
	cfg PipelineConfig
}

// NewPipeline checks cfg and returns a Pipeline.
func NewPipeline(gen Generator, pr Prompter, cfg PipelineConfig) (*Pipeline, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Pipeline{gen: gen, pr: pr, cfg: cfg}, nil
}

// PhaseStats are the generation statistics of the two phases.
type PhaseStats struct {
	Search, Aggregate Stats
}

// Run rolls out every problem of one round. Search trace j of problem i is
// seeded by Stream{seed, round, i, j, PhaseSearch}, its subsets are drawn
// from Stream{seed, round, i, 0, PhaseSubsets}, and aggregation trace j of
// subset s by Stream{seed, round, i, s*N2+j, PhaseAggregate}, so a run is
// reproducible and a resumed run draws what the uninterrupted one would
// have.
func (p *Pipeline) Run(ctx context.Context, problems []data.Problem, seed, round uint64, progress Progress) ([]Group, PhaseStats, error) {
	var ps PhaseStats
	c := p.cfg
	groups := make([]Group, len(problems))
	prompts := make([][]int32, len(problems))
	for i, pb := range problems {
		prompt, err := p.pr.SearchPrompt(pb.Problem)
		if err != nil {
			return nil, ps, fmt.Errorf("rollout: search prompt of problem %q: %w", pb.ID, err)
		}
		groups[i].Problem, prompts[i] = pb, prompt
	}
	search, st, err := Complete(ctx, p.gen, p.pr, prompts, c.N1, func(i, j int) Stream {
		return Stream{Seed: seed, Round: round, Problem: uint64(i), Sample: uint64(j), Phase: PhaseSearch}
	}, progress)
	if err != nil {
		return nil, ps, fmt.Errorf("rollout: search: %w", err)
	}
	ps.Search = st
	var aggPrompts [][]int32
	var owner []int // problem of each aggregation prompt
	for i := range groups {
		g := &groups[i]
		g.Search = search[i]
		rng := rand.New(rand.NewPCG(Stream{Seed: seed, Round: round, Problem: uint64(i), Phase: PhaseSubsets}.Derive(), 0))
		if g.Subsets, err = Subsets(rng, c.N1, c.K, c.N); err != nil {
			return nil, ps, err
		}
		for _, members := range g.Subsets {
			cands := make([][]int32, len(members))
			for m, idx := range members {
				cands[m] = g.Search[idx].Tokens
			}
			prompt, err := aggregationPrompt(p.pr, g.Problem.Problem, cands, c.CandidateTokens, c.PromptLimit)
			if err != nil {
				return nil, ps, fmt.Errorf("rollout: aggregation prompt of problem %q: %w", g.Problem.ID, err)
			}
			aggPrompts = append(aggPrompts, prompt)
			owner = append(owner, i)
		}
	}
	agg, st, err := Complete(ctx, p.gen, p.pr, aggPrompts, c.N2, func(k, j int) Stream {
		return Stream{Seed: seed, Round: round, Problem: uint64(owner[k]), Sample: uint64((k%c.K)*c.N2 + j), Phase: PhaseAggregate}
	}, progress)
	if err != nil {
		return nil, ps, fmt.Errorf("rollout: aggregate: %w", err)
	}
	ps.Aggregate = st
	for i := range groups {
		groups[i].Aggregates = agg[i*c.K : (i+1)*c.K]
	}
	return groups, ps, nil
}

// aggregationPrompt renders the aggregation prompt of problem over the
// candidate traces cands (token ids), each cut to its last capTok tokens
// (all when capTok <= 0) and decoded. When limit > 0 and the prompt is
// longer than limit tokens, every candidate is cut to one shorter cap,
// the largest that fits (found by bisection, keeping the ends where the
// answers are); a prompt that does not fit even with one token per
// candidate is an error.
func aggregationPrompt(pr Prompter, problem string, cands [][]int32, capTok, limit int) ([]int32, error) {
	render := func(c int) ([]int32, error) {
		texts := make([]string, len(cands))
		for i, t := range cands {
			texts[i] = pr.Text(capTokens(t, c))
		}
		return pr.AggregatePrompt(problem, texts)
	}
	prompt, err := render(capTok)
	if err != nil || limit <= 0 || len(prompt) <= limit {
		return prompt, err
	}
	longest := 0
	for _, t := range cands {
		longest = max(longest, len(t))
	}
	hi := longest
	if capTok > 0 {
		hi = min(hi, capTok)
	}
	lo, best := 1, []int32(nil)
	for lo <= hi { // the largest cap in [1, hi] whose prompt fits
		mid := (lo + hi) / 2
		p, err := render(mid)
		if err != nil {
			return nil, err
		}
		if len(p) <= limit {
			best, lo = p, mid+1
		} else {
			hi = mid - 1
		}
	}
	if best == nil {
		return nil, fmt.Errorf("aggregation prompt of %d tokens does not fit the %d-token limit even with one token per candidate", len(prompt), limit)
	}
	return best, nil
}

// capTokens keeps the last n tokens of ids (all when n <= 0).
func capTokens(ids []int32, n int) []int32 {
	if n <= 0 || len(ids) <= n {
		return ids
	}
	return ids[len(ids)-n:]
}
