package rollout

import (
	"context"
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
// paper's 24 rollouts per problem split by default as 8 + 4x4.
type PipelineConfig struct {
	// N1 is the number of search traces per problem (default 8).
	N1 int
	// K is the number of subsets per problem (default 4).
	K int
	// N is the number of traces in a subset (default 4).
	N int
	// N2 is the number of aggregation traces per subset (default 4).
	N2 int
	// CandidateTokens caps each candidate in an aggregation prompt, keeping
	// its end (where the answer is); 0 = no cap.
	CandidateTokens int
}

// WithDefaults fills zero fields with the defaults above.
func (c PipelineConfig) WithDefaults() PipelineConfig {
	if c.N1 == 0 {
		c.N1 = 8
	}
	if c.K == 0 {
		c.K = 4
	}
	if c.N == 0 {
		c.N = 4
	}
	if c.N2 == 0 {
		c.N2 = 4
	}
	return c
}

// Validate reports an inconsistent shape.
func (c PipelineConfig) Validate() error {
	if c.N1 <= 0 || c.K <= 0 || c.N <= 0 || c.N2 <= 0 || c.CandidateTokens < 0 {
		return fmt.Errorf("rollout: pipeline %+v: N1, K, N, N2 must be positive", c)
	}
	if c.N > c.N1 {
		return fmt.Errorf("rollout: pipeline: subset size N=%d exceeds the %d search traces", c.N, c.N1)
	}
	return nil
}

// Trace is one generated trace with its prompt and decoded text.
type Trace struct {
	Prompt []int32
	Completion
	Text string
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
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Pipeline{gen: gen, pr: pr, cfg: cfg}, nil
}

// Config returns the pipeline's shape with defaults filled in.
func (p *Pipeline) Config() PipelineConfig { return p.cfg }

// PhaseStats are the generation statistics of the two phases.
type PhaseStats struct {
	Search, Aggregate Stats
}

// Run rolls out every problem. Seeds of every trace and subset draw derive
// from (seed, step, problem index, sample index), so a run is reproducible
// and a resumed run draws what the uninterrupted one would have.
func (p *Pipeline) Run(ctx context.Context, problems []data.Problem, seed uint64, step int, progress Progress) ([]Group, PhaseStats, error) {
	var ps PhaseStats
	c := p.cfg
	groups := make([]Group, len(problems))
	reqs := make([]Request, 0, len(problems)*c.N1)
	for i, pb := range problems {
		prompt, err := p.pr.SearchPrompt(pb.Problem)
		if err != nil {
			return nil, ps, fmt.Errorf("rollout: search prompt of problem %q: %w", pb.ID, err)
		}
		groups[i].Problem = pb
		for j := 0; j < c.N1; j++ {
			reqs = append(reqs, Request{Prompt: prompt, Seed: DeriveSeed(seed, uint64(step), uint64(i), uint64(j), phaseSearch)})
		}
	}
	outs, st, err := p.gen.Generate(ctx, reqs, progress)
	if err != nil {
		return nil, ps, fmt.Errorf("rollout: search: %w", err)
	}
	ps.Search = st
	for i := range groups {
		groups[i].Search = make([]Trace, c.N1)
		for j := 0; j < c.N1; j++ {
			k := i*c.N1 + j
			groups[i].Search[j] = Trace{Prompt: reqs[k].Prompt, Completion: outs[k], Text: p.pr.Text(outs[k].Tokens)}
		}
	}
	reqs = reqs[:0]
	for i := range groups {
		g := &groups[i]
		rng := rand.New(rand.NewPCG(DeriveSeed(seed, uint64(step), uint64(i), 0, phaseSubsets), 0))
		g.Subsets, err = Subsets(rng, c.N1, c.K, c.N)
		if err != nil {
			return nil, ps, err
		}
		for s, members := range g.Subsets {
			cands := make([]string, len(members))
			for m, idx := range members {
				cands[m] = p.pr.Text(capTokens(g.Search[idx].Tokens, c.CandidateTokens))
			}
			prompt, err := p.pr.AggregatePrompt(g.Problem.Problem, cands)
			if err != nil {
				return nil, ps, fmt.Errorf("rollout: aggregation prompt of problem %q: %w", g.Problem.ID, err)
			}
			for j := 0; j < c.N2; j++ {
				reqs = append(reqs, Request{Prompt: prompt, Seed: DeriveSeed(seed, uint64(step), uint64(i), uint64(s*c.N2+j), phaseAggregate)})
			}
		}
	}
	outs, st, err = p.gen.Generate(ctx, reqs, progress)
	if err != nil {
		return nil, ps, fmt.Errorf("rollout: aggregate: %w", err)
	}
	ps.Aggregate = st
	k := 0
	for i := range groups {
		g := &groups[i]
		g.Aggregates = make([][]Trace, c.K)
		for s := 0; s < c.K; s++ {
			g.Aggregates[s] = make([]Trace, c.N2)
			for j := 0; j < c.N2; j++ {
				g.Aggregates[s][j] = Trace{Prompt: reqs[k].Prompt, Completion: outs[k], Text: p.pr.Text(outs[k].Tokens)}
				k++
			}
		}
	}
	return groups, ps, nil
}

// capTokens keeps the last n tokens of ids (all when n <= 0).
func capTokens(ids []int32, n int) []int32 {
	if n <= 0 || len(ids) <= n {
		return ids
	}
	return ids[len(ids)-n:]
}

// Seed phases keep the streams of different uses apart.
const (
	phaseSearch uint64 = iota + 1
	phaseSubsets
	phaseAggregate
	phaseRSA
	phaseEval
)

// DeriveSeed mixes (seed, step, problem, sample, phase) into one 64-bit
// seed with SplitMix64 finalisers, so every trace has its own stream.
func DeriveSeed(seed, step, problem, sample, phase uint64) uint64 {
	h := seed
	for _, v := range []uint64{step, problem, sample, phase} {
		h = splitmix(h ^ splitmix(v+0x9e3779b97f4a7c15))
	}
	return h
}

func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}
