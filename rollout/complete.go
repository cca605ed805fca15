package rollout

import (
	"context"
	"fmt"
)

// Trace is one generated trace: its prompt, the generator's completion and
// the completion decoded to text. Verdict is the judge's reading of it,
// set by Judge.Grade (zero until then).
type Trace struct {
	Prompt []int32
	Completion
	Text    string
	Verdict Verdict
}

// TextDecoder turns generated ids into text without special tokens; every
// Prompter is one.
type TextDecoder interface {
	Text(ids []int32) string
}

// MaxRequests bounds the requests of one Complete call (prompts x
// samples): 2^24, past any evaluation or training step (the paper's
// pass@k to k = 1024 on a 500-problem set is 512,000 requests; a step of
// 256 problems with 64 samples 16,384), so that a call asked for more is
// an error before anything is allocated, where the requests, traces and
// completions of 2^24 already take gigabytes and a product past int's
// range made the allocation panic.
const MaxRequests = 1 << 24

// Complete is the search primitive every scaffold uses: it asks gen for n
// completions of each prompt in one Generate call (prompt-major: request
// i*n+j is sample j of prompts[i], seeded by stream(i, j)), checks that
// every request was answered, and decodes each completion with dec. It
// returns traces[i][j] and the call's statistics, whose token counts are
// the exact sums over the traces (prompt tokens per request, generated
// tokens per completion) whatever the generator reported. More than
// MaxRequests requests are an error.
func Complete(ctx context.Context, gen Generator, dec TextDecoder, prompts [][]int32, n int, stream func(i, j int) Stream, progress Progress) ([][]Trace, Stats, error) {
	if n < 1 {
		return nil, Stats{}, fmt.Errorf("rollout: complete: %d samples per prompt, want >= 1", n)
	}
	// Compared by division: the product of two large counts overflows int.
	if len(prompts) > 0 && n > MaxRequests/len(prompts) {
		return nil, Stats{}, fmt.Errorf("rollout: complete: %d prompts x %d samples: want at most %d requests in one call", len(prompts), n, MaxRequests)
	}
	reqs := make([]Request, 0, len(prompts)*n)
	for i, p := range prompts {
		for j := range n {
			reqs = append(reqs, Request{Prompt: p, Seed: stream(i, j).Derive()})
		}
	}
	outs, st, err := gen.Generate(ctx, reqs, progress)
	if err != nil {
		return nil, st, err
	}
	if len(outs) != len(reqs) {
		return nil, st, fmt.Errorf("rollout: generator returned %d completions for %d requests", len(outs), len(reqs))
	}
	traces := make([][]Trace, len(prompts))
	st.PromptTokens, st.GeneratedTokens = 0, 0
	for i, p := range prompts {
		traces[i] = make([]Trace, n)
		for j := range n {
			c := outs[i*n+j]
			traces[i][j] = Trace{Prompt: p, Completion: c, Text: dec.Text(c.Tokens)}
			st.PromptTokens += len(p)
			st.GeneratedTokens += len(c.Tokens)
		}
	}
	return traces, st, nil
}
