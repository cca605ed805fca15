package rollout

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/spiral-rl/spiral/data"
)

// pipeFakePrompter encodes text as one token per byte and builds
// aggregation prompts as "AGG|cand1|cand2|...".
type pipeFakePrompter struct{}

func (pipeFakePrompter) SearchPrompt(problem string) ([]int32, error) {
	return pipeBytes("S:" + problem), nil
}

func (pipeFakePrompter) AggregatePrompt(problem string, cands []string) ([]int32, error) {
	return pipeBytes("A:" + problem + "|" + strings.Join(cands, "|")), nil
}

func (pipeFakePrompter) Text(ids []int32) string {
	b := make([]byte, len(ids))
	for i, id := range ids {
		b[i] = byte(id)
	}
	return string(b)
}

func pipeBytes(s string) []int32 {
	ids := make([]int32, len(s))
	for i := range s {
		ids[i] = int32(s[i])
	}
	return ids
}

// pipeFakeGen completes each request with "<seed mod 1000>" and records
// the requests it saw.
type pipeFakeGen struct{ calls [][]Request }

func (g *pipeFakeGen) Generate(_ context.Context, reqs []Request, _ Progress) ([]Completion, Stats, error) {
	g.calls = append(g.calls, reqs)
	out := make([]Completion, len(reqs))
	st := Stats{}
	for i, r := range reqs {
		toks := pipeBytes(fmt.Sprintf("t%d", r.Seed%1000))
		out[i] = Completion{Tokens: toks, PolicyLogProbs: make([]float32, len(toks)), Finish: FinishStop, PromptTokens: len(r.Prompt)}
		st.PromptTokens += len(r.Prompt)
		st.GeneratedTokens += len(toks)
	}
	return out, st, nil
}

func TestPipelineShapes(t *testing.T) {
	problems := []data.Problem{{ID: "a", Problem: "1+1", Answer: "2"}, {ID: "b", Problem: "2+2", Answer: "4"}}
	gen := &pipeFakeGen{}
	cfg := PipelineConfig{N1: 5, K: 3, N: 2, N2: 2, CandidateTokens: 3}
	p, err := NewPipeline(gen, pipeFakePrompter{}, cfg)
	require.NoError(t, err)
	groups, ps, err := p.Run(context.Background(), problems, 42, 7, nil)
	require.NoError(t, err)
	require.Len(t, gen.calls, 2, "one batched call per phase")
	require.Len(t, gen.calls[0], 2*5)
	require.Len(t, gen.calls[1], 2*3*2)
	require.Len(t, groups, 2)
	for i, g := range groups {
		require.Equal(t, problems[i], g.Problem)
		require.Len(t, g.Search, 5)
		require.Len(t, g.Rounds, 1)
		rd := g.Rounds[0]
		require.Len(t, rd.Subsets, 3)
		require.Len(t, rd.Aggregates, 3)
		for s, members := range rd.Subsets {
			require.Len(t, members, 2)
			require.NotEqual(t, members[0], members[1])
			require.Len(t, rd.Aggregates[s], 2)
			// The aggregation prompt holds the members' texts, each cut to
			// its last 3 tokens, in subset order.
			var cands []string
			for _, m := range members {
				txt := g.Search[m].Text
				cands = append(cands, txt[max(0, len(txt)-3):])
			}
			want := "A:" + g.Problem.Problem + "|" + strings.Join(cands, "|")
			for _, a := range rd.Aggregates[s] {
				require.Equal(t, want, pipeFakePrompter{}.Text(a.Prompt))
			}
		}
	}
	require.Equal(t, 10, len(gen.calls[0]))
	require.Positive(t, ps.Search.GeneratedTokens)
	require.Len(t, ps.Aggregate, 1)
	require.Positive(t, ps.Aggregate[0].GeneratedTokens)

	// Same seed and step: identical rollouts; another step: different seeds.
	gen2 := &pipeFakeGen{}
	p2, _ := NewPipeline(gen2, pipeFakePrompter{}, cfg)
	again, _, err := p2.Run(context.Background(), problems, 42, 7, nil)
	require.NoError(t, err)
	require.Equal(t, groups, again)
	_, _, err = p2.Run(context.Background(), problems, 42, 8, nil)
	require.NoError(t, err)
	require.NotEqual(t, gen2.calls[0][0].Seed, gen2.calls[2][0].Seed)
}

// TestPipelineCountsFittedPrompts: the aggregation stats count the
// prompts whose candidates were cut to fit the prompt limit, and only
// those: "A:1+1|" + two candidates "tN..." of 2-4 bytes + "|" passes 9
// bytes, a limit of 100 none.
func TestPipelineCountsFittedPrompts(t *testing.T) {
	problems := []data.Problem{{ID: "a", Problem: "1+1", Answer: "2"}, {ID: "b", Problem: "2+2", Answer: "4"}}
	for _, tc := range []struct {
		limit, fitted int
	}{{0, 0}, {100, 0}, {9, 2 * 3}} {
		cfg := PipelineConfig{N1: 5, K: 3, N: 2, N2: 2, PromptLimit: tc.limit}
		p, err := NewPipeline(&pipeFakeGen{}, pipeFakePrompter{}, cfg)
		require.NoError(t, err)
		groups, ps, err := p.Run(context.Background(), problems, 42, 7, nil)
		require.NoError(t, err)
		require.Equal(t, tc.fitted, ps.Aggregate[0].FittedPrompts, "limit %d", tc.limit)
		require.Zero(t, ps.Search.FittedPrompts)
		if tc.limit > 0 {
			for _, g := range groups {
				for _, aggs := range g.Rounds[0].Aggregates {
					require.LessOrEqual(t, len(aggs[0].Prompt), tc.limit)
				}
			}
		}
	}
}

// TestPipelineLaterRounds: a second aggregation round reads subsets of the
// first round's aggregation traces; the first round is the one-round
// rollout's, trace for trace, and the second draws other seeds.
func TestPipelineLaterRounds(t *testing.T) {
	problems := []data.Problem{{ID: "a", Problem: "1+1", Answer: "2"}, {ID: "b", Problem: "2+2", Answer: "4"}}
	one := PipelineConfig{N1: 5, K: 3, N: 2, N2: 2, CandidateTokens: 3}
	two := one
	two.Rounds = 2
	gen := &pipeFakeGen{}
	p, err := NewPipeline(gen, pipeFakePrompter{}, two)
	require.NoError(t, err)
	groups, ps, err := p.Run(context.Background(), problems, 42, 7, nil)
	require.NoError(t, err)
	require.Len(t, gen.calls, 3, "one batched call per phase and round")
	require.Len(t, gen.calls[2], 2*3*2)
	require.Len(t, ps.Aggregate, 2)
	p1, err := NewPipeline(&pipeFakeGen{}, pipeFakePrompter{}, one)
	require.NoError(t, err)
	single, _, err := p1.Run(context.Background(), problems, 42, 7, nil)
	require.NoError(t, err)
	first := map[uint64]bool{}
	for _, r := range gen.calls[1] {
		first[r.Seed] = true
	}
	for _, r := range gen.calls[2] {
		require.False(t, first[r.Seed], "the second round draws its own seeds")
	}
	for i, g := range groups {
		require.Equal(t, single[i].Search, g.Search)
		require.Equal(t, single[i].Rounds, g.Rounds[:1])
		population := g.Rounds[0].Traces()
		require.Len(t, population, 3*2)
		rd := g.Rounds[1]
		require.Len(t, rd.Subsets, 3)
		for s, members := range rd.Subsets {
			require.Len(t, members, 2)
			require.NotEqual(t, members[0], members[1])
			var cands []string
			for _, m := range members {
				txt := population[m].Text
				cands = append(cands, txt[max(0, len(txt)-3):])
			}
			require.Len(t, rd.Aggregates[s], 2)
			for _, a := range rd.Aggregates[s] {
				require.Equal(t, "A:"+g.Problem.Problem+"|"+strings.Join(cands, "|"), pipeFakePrompter{}.Text(a.Prompt))
			}
		}
	}
}

// TestPipelineStreamsDistinct: over a two-round rollout of several
// problems, no two requests share a seed (search traces, and aggregation
// traces of every subset, problem and round, each get their own stream),
// and every (problem, round) draws its own subsets: with K = 4 subsets
// of N = 3 from 8 traces, two pairs drawing the same ordered subsets by
// chance has probability 336^-4.
func TestPipelineStreamsDistinct(t *testing.T) {
	problems := []data.Problem{{ID: "a", Problem: "1+1"}, {ID: "b", Problem: "2+2"}, {ID: "c", Problem: "3+3"}}
	gen := &pipeFakeGen{}
	p, err := NewPipeline(gen, pipeFakePrompter{}, PipelineConfig{N1: 8, K: 4, N: 3, N2: 2, Rounds: 2})
	require.NoError(t, err)
	groups, _, err := p.Run(context.Background(), problems, 42, 7, nil)
	require.NoError(t, err)
	require.Len(t, gen.calls, 3)
	seen := map[uint64][2]int{}
	for c, call := range gen.calls {
		for r, req := range call {
			prev, dup := seen[req.Seed]
			require.False(t, dup, "call %d request %d has the seed of call %d request %d", c, r, prev[0], prev[1])
			seen[req.Seed] = [2]int{c, r}
		}
	}
	require.Len(t, seen, len(problems)*(8+2*4*2))
	var drawn [][][]int
	for _, g := range groups {
		require.Len(t, g.Rounds, 2)
		for _, rd := range g.Rounds {
			drawn = append(drawn, rd.Subsets)
		}
	}
	for a := range drawn {
		for b := a + 1; b < len(drawn); b++ {
			require.NotEqual(t, drawn[a], drawn[b], "(problem, round) %d and %d drew the same subsets", a, b)
		}
	}
}

func TestPipelineConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  PipelineConfig
		want string
	}{
		{"subset above the search traces", PipelineConfig{N1: 2, K: 1, N: 3, N2: 1}, "--n 3 exceeds --n1 2"},
		{"negative", PipelineConfig{N1: -1, K: 1, N: 1, N2: 1}, "--n1 (search traces per problem) is -1"},
		{"zero is not a default", PipelineConfig{N1: 8, K: 0, N: 4, N2: 4}, "--k (subsets per problem) is 0"},
		{"negative cap", PipelineConfig{N1: 8, K: 4, N: 4, N2: 4, CandidateTokens: -2}, "--candidate-tokens is -2"},
		{"negative rounds", PipelineConfig{N1: 8, K: 4, N: 4, N2: 4, Rounds: -1}, "--agg-rounds is -1"},
		{"later round's subset above its population", PipelineConfig{N1: 8, K: 1, N: 4, N2: 3, Rounds: 2}, "--n 4 exceeds the 3 aggregation traces (--k 1 x --n2 3)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewPipeline(&pipeFakeGen{}, pipeFakePrompter{}, tc.cfg)
			require.ErrorContains(t, err, tc.want)
		})
	}
	require.Equal(t, PipelineConfig{N1: 8, K: 4, N: 4, N2: 4, Rounds: 1}, DefaultPipelineConfig())
	_, err := NewPipeline(&pipeFakeGen{}, pipeFakePrompter{}, DefaultPipelineConfig())
	require.NoError(t, err)
}

// TestAggregationPromptFitsLimit: a prompt over the limit has every
// candidate cut to the largest common cap that fits (keeping the ends);
// under the limit it is unchanged; a limit no cap can meet has them cut to
// no text, and one that not even that meets is an error.
func TestAggregationPromptFitsLimit(t *testing.T) {
	pr := pipeFakePrompter{}
	cands := [][]int32{pipeBytes("abcdefghij"), pipeBytes("0123456789")}
	full, fitted, err := aggregationPrompt(pr, "p", cands, 0, 0)
	require.NoError(t, err)
	require.Equal(t, "A:p|abcdefghij|0123456789", pr.Text(full))
	require.False(t, fitted)
	same, fitted, err := aggregationPrompt(pr, "p", cands, 0, len(full))
	require.NoError(t, err)
	require.Equal(t, full, same)
	require.False(t, fitted)
	// "A:p|" + 2 candidates of c bytes + "|": 5 + 2c <= 15 -> c = 5.
	cut, fitted, err := aggregationPrompt(pr, "p", cands, 0, 15)
	require.NoError(t, err)
	require.Equal(t, "A:p|fghij|56789", pr.Text(cut))
	require.True(t, fitted, "cut to fit the limit")
	// The cap given is kept when it fits, and bounds the search otherwise.
	capped, fitted, err := aggregationPrompt(pr, "p", cands, 3, 100)
	require.NoError(t, err)
	require.Equal(t, "A:p|hij|789", pr.Text(capped))
	require.False(t, fitted, "--candidate-tokens' cap is not a cut to fit")
	// "A:p|" + 2 candidates of 1 byte + "|" = 7 > 6: no text, "A:p||".
	none, fitted, err := aggregationPrompt(pr, "p", cands, 0, 6)
	require.NoError(t, err)
	require.Equal(t, "A:p||", pr.Text(none))
	require.True(t, fitted)
	_, _, err = aggregationPrompt(pr, "p", cands, 0, 4)
	require.ErrorContains(t, err, "even with every candidate cut to no text")
}

// TestAggregationPromptUnfittableSaysShortest: a prompt that does not fit
// even with its candidates cut to no text is refused with that length,
// the shortest the fitting reaches, beside the limit; it gave the uncut
// length alone ("aggregation prompt of 25 tokens does not fit the 6-token
// limit even with one token per candidate"), which read as the length at
// one token.
func TestAggregationPromptUnfittableSaysShortest(t *testing.T) {
	pr := pipeFakePrompter{}
	cands := [][]int32{pipeBytes("abcdefghij"), pipeBytes("0123456789")}
	for _, tc := range []struct {
		capTok, limit int
		want          string
	}{
		{0, 4, "aggregation prompt of 25 tokens is 5 even with every candidate cut to no text, over the 4-token limit"},
		{3, 3, "aggregation prompt of 11 tokens is 5 even with every candidate cut to no text, over the 3-token limit"},
	} {
		_, _, err := aggregationPrompt(pr, "p", cands, tc.capTok, tc.limit)
		require.EqualError(t, err, tc.want, "cap %d, limit %d", tc.capTok, tc.limit)
	}
}

// mergePrompter is pipeFakePrompter whose aggregation prompts encode
// "cdefg" as one token (id 1000), as a BPE tokenizer merges a longer
// text into fewer tokens than a shorter cut of it.
type mergePrompter struct{ pipeFakePrompter }

func (mergePrompter) AggregatePrompt(problem string, cands []string) ([]int32, error) {
	var ids []int32
	for i, part := range strings.Split("A:"+problem+"|"+strings.Join(cands, "|"), "cdefg") {
		if i > 0 {
			ids = append(ids, 1000)
		}
		ids = append(ids, pipeBytes(part)...)
	}
	return ids, nil
}

// TestAggregationPromptFitWhereLengthDips: a prompt's length need not grow
// with the cap ("A:p|" + the last c bytes of "abcdefg" with "cdefg" one
// token: 5 6 7 8 5 6 7 tokens at caps 1..7), so a prompt fitted to a
// limit keeps a cap that fits where one token more does not, found by
// bisection: not always the largest that fits (at 5 tokens, "g" where
// "cdefg" fits too; at 6, "fg" where "bcdefg" does), which only a render
// of every larger cap could rule out.
func TestAggregationPromptFitWhereLengthDips(t *testing.T) {
	pr := mergePrompter{}
	cands := [][]int32{pipeBytes("abcdefg")}
	length := func(c int) int {
		p, fitted, err := aggregationPrompt(pr, "p", cands, c, 0)
		require.NoError(t, err)
		require.False(t, fitted)
		return len(p)
	}
	lengths := make([]int, 7)
	for c := range lengths {
		lengths[c] = length(c + 1)
	}
	require.Equal(t, []int{5, 6, 7, 8, 5, 6, 7}, lengths)
	for _, tc := range []struct {
		limit int
		want  string
	}{
		{5, "A:p|g"},
		{6, "A:p|fg"},
	} {
		prompt, fitted, err := aggregationPrompt(pr, "p", cands, 0, tc.limit)
		require.NoError(t, err)
		require.True(t, fitted)
		require.LessOrEqual(t, len(prompt), tc.limit)
		require.Equal(t, tc.want, pr.Text(prompt), "limit %d", tc.limit)
		c := len(tc.want) - len("A:p|")
		require.Greater(t, length(c+1), tc.limit, "limit %d: cap %d fits, and so does %d", tc.limit, c, c+1)
	}
}
