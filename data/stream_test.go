package data

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// numbered returns a dataset of n problems "p0".."p<n-1>".
func numbered(n int) *Dataset {
	ps := make([]Problem, n)
	for i := range ps {
		ps[i] = Problem{Problem: fmt.Sprintf("p%d", i), Answer: "1"}
	}
	return NewDataset("numbered", ps)
}

func ids(ps []Problem) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.Problem
	}
	return out
}

// TestStreamResume is a property test: for many dataset sizes, seeds,
// batch-size sequences and stop points, stopping, saving the cursor as
// JSON, and resuming in a fresh Stream (built with another seed, which
// Restore must replace) yields the same sequence as an uninterrupted pass.
func TestStreamResume(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for trial := range 300 {
		n := 1 + r.IntN(12)
		seed := r.Uint64()
		total := r.IntN(5*n + 3)
		ds := numbered(n)

		// Uninterrupted reference: one draw at a time.
		ref := ids(NewStream(ds, seed).Next(total))
		require.Len(t, ref, total)

		// Interrupted at every possible stop point, with random batches.
		for stop := 0; stop <= total; stop++ {
			s := NewStream(ds, seed)
			got := []string{}
			for len(got) < stop {
				got = append(got, ids(s.Next(min(1+r.IntN(n+2), stop-len(got))))...)
			}
			b, err := json.Marshal(s.Cursor())
			require.NoError(t, err)
			var c Cursor
			require.NoError(t, json.Unmarshal(b, &c))
			resumed := NewStream(ds, seed+1)
			require.NoError(t, resumed.Restore(c))
			for len(got) < total {
				got = append(got, ids(resumed.Next(min(1+r.IntN(n+2), total-len(got))))...)
			}
			require.Equal(t, ref, got, "trial %d: n=%d seed=%d stop=%d", trial, n, seed, stop)
		}
	}
}

// TestStreamEpochs checks that every epoch visits each problem exactly
// once, that the cursor counts epochs and positions, and that epochs and
// seeds give different orders.
func TestStreamEpochs(t *testing.T) {
	const n, epochs = 20, 5
	ds := numbered(n)
	s := NewStream(ds, 7)
	var orders [][]string
	for e := range epochs {
		got := ids(s.Next(n))
		seen := map[string]bool{}
		for _, g := range got {
			seen[g] = true
		}
		require.Len(t, seen, n, "epoch %d is not a permutation", e)
		orders = append(orders, got)
		// After exactly n draws the sampler sits at the end of epoch e.
		require.Equal(t, Cursor{Epoch: e, Position: n, Seed: 7, Size: n, Digest: ProblemsDigest(ds.Problems)}, s.Cursor())
	}
	// 20! orders: two equal epochs would mean the epoch is ignored.
	for i := 1; i < epochs; i++ {
		require.NotEqual(t, orders[0], orders[i])
	}
	require.NotEqual(t, orders[0], ids(NewStream(ds, 8).Next(n)), "seed ignored")
	require.Nil(t, s.Next(0))
}

func TestStreamRestoreErrors(t *testing.T) {
	ds := numbered(5)
	cases := []struct {
		name string
		c    Cursor
		want string
	}{
		{"negative epoch", Cursor{Epoch: -1}, "negative"},
		{"negative position", Cursor{Position: -2}, "negative"},
		{"position past the end", Cursor{Position: 6}, "past the dataset"},
		{"other dataset size", Cursor{Position: 1, Size: 9}, "taken on 9 problems"},
		{"other problems, as many", Cursor{Position: 1, Size: 5, Digest: ProblemsDigest(numbered(6).Problems[1:])}, "taken on other problems"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := NewStream(ds, 1)
			before := s.Cursor()
			require.ErrorContains(t, s.Restore(tc.c), tc.want)
			require.Equal(t, before, s.Cursor(), "a failed Restore moved the sampler")
		})
	}
}

// TestProblemsDigest: the digest changes with any statement or answer
// and with their order, and not with ids or sources; a statement and
// answer split at another place are other problems.
func TestProblemsDigest(t *testing.T) {
	base := []Problem{{ID: "a", Problem: "x + 1 = 2", Answer: "1", Source: "f:1"}, {ID: "b", Problem: "2x = 4", Answer: "2", Source: "f:2"}}
	edit := func(f func(ps []Problem) []Problem) []Problem {
		ps := slices.Clone(base)
		return f(ps)
	}
	same := map[string][]Problem{
		"other ids and sources": edit(func(ps []Problem) []Problem {
			ps[0].ID, ps[1].Source = "z", "g:9"
			return ps
		}),
	}
	other := map[string][]Problem{
		"a statement":   edit(func(ps []Problem) []Problem { ps[1].Problem = "2x = 6"; return ps }),
		"an answer":     edit(func(ps []Problem) []Problem { ps[0].Answer = "1.0"; return ps }),
		"the order":     edit(func(ps []Problem) []Problem { ps[0], ps[1] = ps[1], ps[0]; return ps }),
		"a split moved": edit(func(ps []Problem) []Problem { ps[0].Problem, ps[0].Answer = "x + 1 = 21", ""; return ps }),
		"one fewer":     base[:1],
	}
	want := ProblemsDigest(base)
	require.Len(t, want, 32)
	// The format eval reports have recorded since they record one:
	// sha256("4:1+1?1:2" "4:2+2?1:4"), computed apart (Python's hashlib).
	require.Equal(t, "5b4ce28a0b777d4966c3550ae8cfdc61", ProblemsDigest([]Problem{{Problem: "1+1?", Answer: "2"}, {Problem: "2+2?", Answer: "4"}}))
	for name, ps := range same {
		require.Equal(t, want, ProblemsDigest(ps), name)
	}
	for name, ps := range other {
		require.NotEqual(t, want, ProblemsDigest(ps), name)
	}
}

func BenchmarkStreamNext(b *testing.B) {
	s := NewStream(numbered(50_000), 3)
	for b.Loop() {
		s.Next(256)
	}
}
