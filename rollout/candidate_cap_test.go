package rollout

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/spiral-rl/spiral/data"
	"github.com/spiral-rl/spiral/model/tokenizer"
)

// fixedGen answers request r with outs[r % len(outs)] and records the
// requests.
type fixedGen struct {
	outs  []Completion
	calls [][]Request
}

func (g *fixedGen) Generate(_ context.Context, reqs []Request, _ Progress) ([]Completion, Stats, error) {
	g.calls = append(g.calls, reqs)
	out := make([]Completion, len(reqs))
	for r, req := range reqs {
		out[r] = g.outs[r%len(g.outs)]
		out[r].PromptTokens = len(req.Prompt)
	}
	return out, Stats{}, nil
}

// TestCandidateCapCountsTextTokens: --candidate-tokens N leaves every
// candidate its last N tokens of text, stopped or cut alike. A stopped
// trace ends with <|im_end|>, which decodes to nothing: counted, a cap of
// N left a stopped candidate N-1 tokens of text (at a cap of 1, none),
// and a cut one N. Byte tokenizer: one token per byte.
func TestCandidateCapCountsTextTokens(t *testing.T) {
	tj, err := tokenizer.BuildByteTokenizerJSON()
	require.NoError(t, err)
	tok, err := tokenizer.FromBytes(tj)
	require.NoError(t, err)
	defer tok.Close()
	pr := ChatPrompter{Tok: tok, Templates: aggTestTemplates(t)}
	outs := []Completion{
		{Tokens: append(tok.Encode("x=42"), tok.IMEnd()), Finish: FinishStop},
		{Tokens: tok.Encode("y=17"), Finish: FinishLength},
	}
	// candidates reads the candidates of an aggregation prompt
	// ("p|c1|c2|" as one user turn), sorted.
	candidates := func(t *testing.T, prompt []int32) []string {
		user := tok.DecodeSkipSpecial(prompt)
		body, ok := strings.CutPrefix(strings.TrimSuffix(user, "|\nassistant\n"), "user\np|")
		require.True(t, ok, "%q", user)
		cands := strings.Split(body, "|")
		slices.Sort(cands)
		return cands
	}
	for _, tc := range []struct {
		cap  int
		want []string
	}{
		{1, []string{"2", "7"}},
		{2, []string{"17", "42"}},
		{4, []string{"x=42", "y=17"}},
		{5, []string{"x=42", "y=17"}},
		{0, []string{"x=42", "y=17"}},
	} {
		t.Run(fmt.Sprintf("pipeline cap %d", tc.cap), func(t *testing.T) {
			gen := &fixedGen{outs: outs}
			p, err := NewPipeline(gen, pr, PipelineConfig{N1: 2, K: 1, N: 2, N2: 1, CandidateTokens: tc.cap})
			require.NoError(t, err)
			_, _, err = p.Run(context.Background(), []data.Problem{{ID: "a", Problem: "p", Answer: "42"}}, 1, 0, nil)
			require.NoError(t, err)
			require.Equal(t, tc.want, candidates(t, gen.calls[1][0].Prompt), "cap %d", tc.cap)
		})
		t.Run(fmt.Sprintf("rsa cap %d", tc.cap), func(t *testing.T) {
			gen := &fixedGen{outs: outs}
			e := Evaluator{Gen: gen, Prompter: pr, Judge: evalJudge}
			_, err := e.RSA(context.Background(), []data.Problem{{ID: "a", Problem: "p", Answer: "42"}}, RSAConfig{Population: 2, SubsetSize: 2, Steps: 1, CandidateTokens: tc.cap}, 1)
			require.NoError(t, err)
			for _, req := range gen.calls[1] {
				require.Equal(t, tc.want, candidates(t, req.Prompt), "cap %d", tc.cap)
			}
		})
	}
}
