package rollout

import (
	"context"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

// textOf decodes nothing: Complete's tests read no text.
type textOf struct{}

func (textOf) Text([]int32) string { return "" }

// countingGen completes every request with one token and counts its
// calls.
type countingGen struct{ calls int }

func (g *countingGen) Generate(_ context.Context, reqs []Request, _ Progress) ([]Completion, Stats, error) {
	g.calls++
	outs := make([]Completion, len(reqs))
	for i := range outs {
		outs[i] = Completion{Tokens: []int32{2}, Finish: FinishStop}
	}
	return outs, Stats{}, nil
}

// TestCompleteRequestBound: a call of more than MaxRequests requests
// (prompts x samples) is an error before anything is allocated or
// generated, where a product past int's range panicked in make
// ("makeslice: cap out of range") and one within it could take the
// machine's memory; up to the bound the call goes ahead.
func TestCompleteRequestBound(t *testing.T) {
	prompts := func(n int) [][]int32 {
		ps := make([][]int32, n)
		for i := range ps {
			ps[i] = []int32{1}
		}
		return ps
	}
	for _, tc := range []struct {
		name    string
		prompts int
		n       int
		want    string // "" for no error
	}{
		{"samples past int's range", 3, math.MaxInt64, "rollout: complete: 3 prompts x 9223372036854775807 samples: want at most 16777216 requests in one call"},
		{"a product past int's range", 1 << 12, math.MaxInt64 / (1 << 11), "4096 prompts x 4503599627370495 samples"},
		{"one past the bound", 2, MaxRequests/2 + 1, "2 prompts x 8388609 samples: want at most 16777216"},
		{"one prompt past the bound", 1, MaxRequests + 1, "1 prompts x 16777217 samples"},
		{"within", 4, 2, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gen := &countingGen{}
			traces, _, err := Complete(context.Background(), gen, textOf{}, prompts(tc.prompts), tc.n, func(i, j int) Stream { return Stream{Problem: uint64(i), Sample: uint64(j)} }, nil)
			if tc.want != "" {
				require.ErrorContains(t, err, tc.want)
				require.Zero(t, gen.calls, "nothing generated")
				return
			}
			require.NoError(t, err)
			require.Len(t, traces, tc.prompts)
		})
	}
}
