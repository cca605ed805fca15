package rollout

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/spiral-rl/spiral/data"
	"github.com/spiral-rl/spiral/data/synth"
	"github.com/spiral-rl/spiral/model/tokenizer"
)

// rsaCountingGen wraps a Generator and records every call's requests and
// completions, so token counts can be recomputed independently.
type rsaCountingGen struct {
	inner Generator
	calls [][]Request
	outs  [][]Completion
}

func (g *rsaCountingGen) Generate(ctx context.Context, reqs []Request, p Progress) ([]Completion, Stats, error) {
	outs, st, err := g.inner.Generate(ctx, reqs, p)
	g.calls = append(g.calls, reqs)
	g.outs = append(g.outs, outs)
	return outs, st, err
}

// TestRSAOnTinyModel runs recursive self-aggregation with the real sampler
// on the tiny Qwen3 model (random weights, character tokenizer of the
// synthetic task) and checks the bookkeeping: one Generate call per step
// with N members per problem, population sizes, and per-step and
// cumulative token counts equal to the sums over the recorded prompts and
// completions.
func TestRSAOnTinyModel(t *testing.T) {
	lm := samplerTinyLMB(t)
	tj, err := tokenizer.BuildCharTokenizerJSON([]rune(synth.Alphabet()))
	require.NoError(t, err)
	tok, err := tokenizer.FromBytes(tj)
	require.NoError(t, err)
	defer tok.Close()
	require.LessOrEqual(t, tok.VocabSize(), lm.Signature().Vocab)
	s, err := NewSampler(lm, SamplerConfig{TopP: 1, Temperature: 1, MaxNewTokens: 12, BatchSize: 32, Refill: true, StopIDs: tok.StopIDs(), VocabLimit: tok.VocabSize()})
	require.NoError(t, err)
	gen := &rsaCountingGen{inner: s}
	ev := Evaluator{Gen: gen, Prompter: ChatPrompter{Tok: tok, Templates: synth.Templates()},
		Judge: Judge{Grade: func(r, g string) Verdict { return Verdict{Answer: r, Explicit: true, Correct: r == g} }, Equal: func(a, b string) bool { return a == b }}}
	problems := []data.Problem{{ID: "a", Problem: "Compute 1+2.", Answer: "3"}, {ID: "b", Problem: "Compute 4*5-6.", Answer: "14"}, {ID: "c", Problem: "Compute 7-3.", Answer: "4"}}
	cfg := RSAConfig{Population: 4, SubsetSize: 2, Steps: 3}
	res, err := ev.RSA(context.Background(), problems, cfg, 9)
	require.NoError(t, err)
	require.Len(t, res.Steps, cfg.Steps+1)
	require.Len(t, gen.calls, cfg.Steps+1)
	var cum Tokens
	for step, st := range res.Steps {
		require.Equal(t, step, st.Step)
		require.Equal(t, cfg.Population, st.Population)
		require.Len(t, gen.calls[step], len(problems)*cfg.Population, "step %d", step)
		var want Tokens
		for i, r := range gen.calls[step] {
			want.Prompt += len(r.Prompt)
			want.Generated += len(gen.outs[step][i].Tokens)
		}
		cum.Prompt += want.Prompt
		cum.Generated += want.Generated
		require.Equal(t, want, st.Tokens, "step %d", step)
		require.Equal(t, cum, st.Cumulative, "step %d", step)
		if step > 0 {
			// Aggregation prompts are longer than search prompts: they
			// carry K candidates.
			require.Greater(t, want.Prompt, res.Steps[0].Tokens.Prompt, "step %d", step)
		}
	}
	require.Len(t, res.Final, len(problems))
	for _, pop := range res.Final {
		require.Len(t, pop, cfg.Population)
	}
	// Same seed, same run.
	again, err := ev.RSA(context.Background(), problems, cfg, 9)
	require.NoError(t, err)
	require.Equal(t, fmt.Sprint(res.Steps), fmt.Sprint(again.Steps))
}
