package rollout

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"

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
	// CandidateTokens caps each candidate in an aggregation prompt, in
	// tokens of text (candidateIDs: a stopped trace's stop id is not
	// counted), keeping its end (where the answer is); 0 = no cap.
	CandidateTokens int `json:"candidate_tokens"`
	// Rounds is the number of aggregation rounds (0 is taken as 1, the
	// paper's shape). Round r > 1 draws K subsets of N from round r-1's
	// K x N2 aggregation traces and samples N2 aggregation traces of each,
	// as RSA's later steps read earlier steps' traces.
	Rounds int `json:"rounds"`
	// PromptLimit, when > 0, is the longest aggregation prompt in tokens
	// (the model's context less the trace length): longer ones get their
	// candidates cut further (see aggregationPrompt).
	PromptLimit int `json:"prompt_limit,omitempty"`
}

// DefaultPipelineConfig returns the default shape: 8 search traces, 4
// subsets of 4, 4 aggregation traces each, one round.
func DefaultPipelineConfig() PipelineConfig {
	return PipelineConfig{N1: 8, K: 4, N: 4, N2: 4, Rounds: 1}
}

// AggregationRounds is Rounds, with 0 taken as 1.
func (c PipelineConfig) AggregationRounds() int { return max(c.Rounds, 1) }

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
	if c.Rounds < 0 {
		errs = append(errs, fmt.Errorf("--agg-rounds is %d; want >= 1", c.Rounds))
	}
	if c.Rounds > 1 && c.K > 0 && c.N2 > 0 && c.N > c.K*c.N2 {
		errs = append(errs, fmt.Errorf("--n %d exceeds the %d aggregation traces (--k %d x --n2 %d) a later round draws its subsets from", c.N, c.K*c.N2, c.K, c.N2))
	}
	return errors.Join(errs...)
}

// Group is the SPIRAL rollout of one problem, the structure rl/ consumes.
type Group struct {
	Problem data.Problem
	// Search holds the N1 search traces.
	Search []Trace
	// Rounds holds the aggregation rounds, the first reading the search
	// traces, each later one the previous round's traces.
	Rounds []Round
}

// Round is one aggregation round of a problem's rollout.
type Round struct {
	// Subsets[g] lists subset g's members: indices into the search traces
	// in the first round, into the previous round's Traces in later ones.
	Subsets [][]int
	// Aggregates[g] holds the N2 aggregation traces of subset g.
	Aggregates [][]Trace
}

// Traces lists the round's aggregation traces subset after subset (subset
// g's trace j at g x N2 + j): the population the next round draws from.
func (r Round) Traces() []Trace {
	var out []Trace
	for _, aggs := range r.Aggregates {
		out = append(out, aggs...)
	}
	return out
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
	Search Stats
	// Aggregate holds one round's statistics each.
	Aggregate []Stats
}

// Run rolls out every problem of one round. Search trace j of problem i is
// seeded by Stream{seed, round, i, j, PhaseSearch}; in aggregation round
// a (from 0), its subsets are drawn from Stream{seed, round, i, 0,
// PhaseSubsets, a} and aggregation trace j of subset s is seeded by
// Stream{seed, round, i, s*N2+j, PhaseAggregate, a}, so a run is
// reproducible and a resumed run draws what the uninterrupted one would
// have.
func (p *Pipeline) Run(ctx context.Context, problems []data.Problem, seed, round uint64, progress Progress) ([]Group, PhaseStats, error) {
	var ps PhaseStats
	groups := make([]Group, len(problems))
	prompts := make([][]int32, len(problems))
	for i, pb := range problems {
		prompt, err := p.pr.SearchPrompt(pb.Problem)
		if err != nil {
			return nil, ps, fmt.Errorf("rollout: search prompt of problem %q: %w", pb.ID, err)
		}
		groups[i].Problem, prompts[i] = pb, prompt
	}
	search, st, err := Complete(ctx, p.gen, p.pr, prompts, p.cfg.N1, func(i, j int) Stream {
		return Stream{Seed: seed, Round: round, Problem: uint64(i), Sample: uint64(j), Phase: PhaseSearch}
	}, progress)
	if err != nil {
		return nil, ps, fmt.Errorf("rollout: search: %w", err)
	}
	ps.Search = st
	population := slices.Clone(search) // each problem's traces the next round reads
	for i := range groups {
		groups[i].Search = search[i]
	}
	for a := range p.cfg.AggregationRounds() {
		rounds, st, err := p.aggregate(ctx, groups, population, seed, round, uint64(a), progress)
		if err != nil {
			return nil, ps, fmt.Errorf("rollout: aggregate (round %d): %w", a+1, err)
		}
		ps.Aggregate = append(ps.Aggregate, st)
		for i := range groups {
			groups[i].Rounds = append(groups[i].Rounds, rounds[i])
			population[i] = rounds[i].Traces()
		}
	}
	return groups, ps, nil
}

// aggregate runs aggregation round a of every problem: K subsets of N
// traces drawn from the problem's population, N2 aggregation traces each.
func (p *Pipeline) aggregate(ctx context.Context, groups []Group, population [][]Trace, seed, round, a uint64, progress Progress) ([]Round, Stats, error) {
	c := p.cfg
	rounds := make([]Round, len(groups))
	var prompts [][]int32
	var owner []int // problem of each aggregation prompt
	fitted := 0
	for i, g := range groups {
		rng := rand.New(rand.NewPCG(Stream{Seed: seed, Round: round, Problem: uint64(i), Phase: PhaseSubsets, AggRound: a}.Derive(), 0))
		subsets, err := Subsets(rng, len(population[i]), c.K, c.N)
		if err != nil {
			return nil, Stats{}, err
		}
		rounds[i].Subsets = subsets
		for _, members := range subsets {
			cands := make([][]int32, len(members))
			for m, idx := range members {
				cands[m] = candidateIDs(p.pr, population[i][idx])
			}
			prompt, fit, err := aggregationPrompt(p.pr, g.Problem.Problem, cands, c.CandidateTokens, c.PromptLimit)
			if err != nil {
				return nil, Stats{}, fmt.Errorf("aggregation prompt of problem %q: %w", g.Problem.ID, err)
			}
			if fit {
				fitted++
			}
			prompts = append(prompts, prompt)
			owner = append(owner, i)
		}
	}
	agg, st, err := Complete(ctx, p.gen, p.pr, prompts, c.N2, func(k, j int) Stream {
		return Stream{Seed: seed, Round: round, Problem: uint64(owner[k]), Sample: uint64((k%c.K)*c.N2 + j), Phase: PhaseAggregate, AggRound: a}
	}, progress)
	if err != nil {
		return nil, st, err
	}
	st.FittedPrompts = fitted
	for i := range rounds {
		rounds[i].Aggregates = agg[i*c.K : (i+1)*c.K]
	}
	return rounds, st, nil
}

// aggregationPrompt renders the aggregation prompt of problem over the
// candidate traces cands (token ids), each cut to its last capTok tokens
// (all when capTok <= 0) and decoded (see candidateText). When limit > 0
// and the prompt is longer than limit tokens, every candidate is cut to
// one shorter cap (keeping the ends where the answers are), and fitted is
// true: a cap that fits where one token more does not, found by
// bisection. It need not be the largest that fits: with a BPE tokenizer a
// prompt's length does not always grow with the cap (a longer cut can
// merge into fewer tokens, TestAggregationPromptFitWhereLengthDips), and
// only a render of every cap above the one found would rule out a larger
// one, where bisection renders about log2 of the longest candidate's
// length. Where not even a cap of one token fits, the candidates are cut
// to no text: with a BPE tokenizer a candidate's one token can cost the
// rendered prompt more than one (the template's newlines around an empty
// candidate merge into one token, and its text splits them), so a prompt
// that fits with its candidates empty plus one token of each (what the
// commands check up front) may not fit with one token of each. A prompt
// that does not fit even with its candidates empty is an error that gives
// both lengths.
func aggregationPrompt(pr Prompter, problem string, cands [][]int32, capTok, limit int) (prompt []int32, fitted bool, err error) {
	// A candidate's whole text, decoded only for a cut text that starts
	// with U+FFFD (see candidateText), once.
	full := make([]*string, len(cands))
	fullText := func(i int) func() string {
		return func() string {
			if full[i] == nil {
				s := pr.Text(cands[i])
				full[i] = &s
			}
			return *full[i]
		}
	}
	render := func(c int) ([]int32, error) {
		texts := make([]string, len(cands))
		for i, t := range cands {
			texts[i] = candidateText(pr, t, c, fullText(i))
		}
		return pr.AggregatePrompt(problem, texts)
	}
	prompt, err = render(capTok)
	if err != nil || limit <= 0 || len(prompt) <= limit {
		return prompt, false, err
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
	// The largest cap in [1, hi] whose prompt fits.
	for lo <= hi {
		mid := (lo + hi) / 2
		p, err := render(mid)
		if err != nil {
			return nil, false, err
		}
		if len(p) <= limit {
			best, lo = p, mid+1
		} else {
			hi = mid - 1
		}
	}
	if best != nil {
		return best, true, nil
	}
	empty, err := pr.AggregatePrompt(problem, make([]string, len(cands)))
	if err != nil {
		return nil, false, err
	}
	if len(empty) > limit {
		return nil, false, fmt.Errorf("aggregation prompt of %d tokens is %d even with every candidate cut to no text, over the %d-token limit", len(prompt), len(empty), limit)
	}
	return empty, true, nil
}

// candidateText decodes the last n tokens of ids (all when n <= 0), whose
// whole text full returns. A cut inside a character leaves bytes of it at
// the start, which decode to U+FFFD; those are dropped (a U+FFFD that the
// whole text has there is kept), so the text starts at the first whole
// character kept.
func candidateText(pr Prompter, ids []int32, n int, full func() string) string {
	s := pr.Text(capTokens(ids, n))
	for strings.HasPrefix(s, "\uFFFD") && !strings.HasSuffix(full(), s) {
		s = s[len("\uFFFD"):]
	}
	return s
}

// candidateIDs returns the ids of trace t that stand for it as a
// candidate and that a cap counts: its tokens less the stop id a stopped
// trace ends with (<|im_end|>), which decodes to no text, so that a cap of
// n leaves a stopped candidate n tokens of text as it does a cut one.
func candidateIDs(dec TextDecoder, t Trace) []int32 {
	ids := t.Tokens
	if t.Finish == FinishStop && len(ids) > 0 && dec.Text(ids[len(ids)-1:]) == "" {
		return ids[:len(ids)-1]
	}
	return ids
}

// capTokens keeps the last n tokens of ids (all when n <= 0).
func capTokens(ids []int32, n int) []int32 {
	if n <= 0 || len(ids) <= n {
		return ids
	}
	return ids[len(ids)-n:]
}
