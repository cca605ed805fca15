package model_test

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/spiral-rl/spiral/model"
	"github.com/spiral-rl/spiral/model/memplan"
	"github.com/spiral-rl/spiral/model/modeltest"
	"github.com/spiral-rl/spiral/model/qwen3"
)

// aloneLogits runs lm (full-sequence logits) on seq alone and returns the
// logits of its last position.
func aloneLogits(t *testing.T, lm *model.LM, seq []int64) []float32 {
	t.Helper()
	T, V := len(seq), lm.Signature().Vocab
	return modeltest.SequenceLogits(t, lm, seq)[(T-1)*V : T*V]
}

// TestExtendMatchesForward checks generation's cache on every export:
// three prompts of different lengths prefilled together in chunks of 3
// positions (right-aligned, each row holding its own tokens only), then
// decoded token by token, give each row the last-position logits of its
// sequence run alone through the full-sequence graph (bound 1e-4: float32
// attention over the cache's capacity instead of the sequence, summed in
// another order). It runs the sampling LM, which prefills on the
// sampling graph (outputting the new keys and values alone) and decodes
// on the decode graph (writing them into the cache itself), and the
// rollout graph, whose whole present the cache copies its new positions
// from; and a row moved to another cache row (a finished row's
// replacement) decodes on unchanged.
func TestExtendMatchesForward(t *testing.T) {
	rt := modeltest.Runtime(t)
	for name, src := range executorSources(t) {
		t.Run(name, func(t *testing.T) {
			p, err := model.OpenPolicy(context.Background(), rt, src, t.TempDir(), model.PolicyOptions{})
			require.NoError(t, err)
			t.Cleanup(func() { require.NoError(t, p.Close()) })
			full := scorerOf(t, p)
			if name != "tiny-scaled" {
				require.True(t, p.LM.Signature().NewKV, "the sampling graph outputs the new keys and values")
				require.True(t, p.LM.Signature().GroupedAttention, "the sampling graph does not repeat the cache over the query heads")
				require.NotEmpty(t, p.Artifacts.DecodePath(), "a decode graph writes the cache in place")
				t.Cleanup(func() {
					// The last prefill chunk, whose rows all take its 3
					// positions, row by row; then the decode steps.
					require.Equal(t, int64(3+2+2), p.LM.DecodeGraphCalls(), "the last chunk and the decode steps ran on the decode graph")
				})
			}
			require.False(t, full.Signature().NewKV)
			V := p.LM.Signature().Vocab
			r := rand.New(rand.NewPCG(3, 3))
			seqs := make([][]int64, 3)
			for i, n := range []int{7, 4, 9} {
				for range n {
					seqs[i] = append(seqs[i], int64(1+r.IntN(V-1)))
				}
			}
			for _, lm := range []*model.LM{p.LM, full} {
				const capacity, chunk = 12, 3
				c, err := lm.NewRowCache(3, capacity)
				require.NoError(t, err)
				last := func(logits []float32, rows, S int) func(i int) []float32 {
					L := len(logits) / (rows * V)
					return func(i int) []float32 { return logits[(i*L+L-1)*V : (i*L+L)*V] }
				}
				// Prefill, right-aligned in chunks.
				width := 9
				var logits []float32
				for c0 := 0; c0 < width; c0 += chunk {
					tokens := make([]int64, 3*chunk)
					real := make([]int, 3)
					for i, s := range seqs {
						first := width - len(s)
						lo := max(c0, first)
						real[i] = max(0, c0+chunk-lo)
						for col := lo; col < c0+chunk; col++ {
							tokens[i*chunk+col-c0] = s[col-first]
						}
					}
					logits, err = lm.Extend(context.Background(), c, 0, tokens, real, logits)
					require.NoError(t, err)
				}
				for i, s := range seqs {
					require.Equal(t, len(s), c.Len(i))
					require.InDeltaSlice(t, aloneLogits(t, full, s), last(logits, 3, chunk)(i), 1e-4, "row %d after prefill", i)
				}
				// Decode two tokens per row.
				for range 2 {
					tokens := make([]int64, 3)
					for i := range seqs {
						tokens[i] = int64(1 + r.IntN(V-1))
						seqs[i] = append(seqs[i], tokens[i])
					}
					logits, err = lm.Extend(context.Background(), c, 0, tokens, []int{1, 1, 1}, logits)
					require.NoError(t, err)
					for i, s := range seqs {
						require.InDeltaSlice(t, aloneLogits(t, full, s), last(logits, 3, 1)(i), 1e-4, "row %d, %d tokens", i, len(s))
					}
				}
				// Row 2 replaces row 0, and decodes on there.
				require.NoError(t, c.Move(0, 2))
				tok := int64(5)
				seqs2 := append(append([]int64(nil), seqs[2]...), tok)
				logits, err = lm.Extend(context.Background(), c, 0, []int64{tok}, []int{1}, logits)
				require.NoError(t, err)
				require.InDeltaSlice(t, aloneLogits(t, full, seqs2), last(logits, 1, 1)(0), 1e-4, "moved row")
				// Row 1 alone, a call starting past the cache's first row.
				seqs1 := append(append([]int64(nil), seqs[1]...), tok)
				logits, err = lm.Extend(context.Background(), c, 1, []int64{tok}, []int{1}, logits)
				require.NoError(t, err)
				require.InDeltaSlice(t, aloneLogits(t, full, seqs1), last(logits, 1, 1)(0), 1e-4, "row 1 alone")
				for i := range seqs {
					seqs[i] = seqs[i][:len(seqs[i])-2]
				}
			}
			// Errors: past the capacity, outside the vocabulary.
			c, err := p.LM.NewRowCache(1, 2)
			require.NoError(t, err)
			_, err = p.LM.Extend(context.Background(), c, 0, []int64{1, 2, 3}, []int{3}, nil)
			require.ErrorContains(t, err, "exceed the cache's 2")
			_, err = p.LM.Extend(context.Background(), c, 0, []int64{int64(V)}, []int{1}, nil)
			require.ErrorContains(t, err, "outside the vocabulary")
		})
	}
}

// TestCallRows checks the call budget by hand on the tiny model (2 KV
// heads, 4 query heads, head width 32, vocabulary 100): per row, the
// present keys and values and their repeats over the query heads (the
// rollout graph; the sampling graph's grouped attention has no repeats,
// and its decode graph, for one position per row, no present either),
// the score-sized temporaries (13 a row), and the logits of the
// last position (the sampling graph) or of every position. The
// attention spans the past fed and the new positions: a prompt's first
// chunk is fed no past.
func TestCallRows(t *testing.T) {
	rt := modeltest.Runtime(t)
	path, _ := tinyDir(t)
	const budget = 8 << 20
	for _, c := range []struct {
		past, S int
	}{{100, 1}, {100, 20}, {500, 64}, {0, 64}} {
		span := c.past + c.S
		perRow := (2*2+2*4)*span*32*4 + 13*4*c.S*span*4
		full, err := model.OpenLM(rt, path, model.LMOptions{Heads: 4, CallBytes: budget})
		require.NoError(t, err)
		require.Equal(t, max(1, budget/(perRow+c.S*100*4)), full.CallRows(c.past, c.S), "%+v", c)
		require.NoError(t, full.Close())
	}
	// The sampling graph's logits are the last position's alone, and its
	// grouped attention does not repeat the keys and values.
	p, err := model.OpenPolicy(context.Background(), rt, path, t.TempDir(), model.PolicyOptions{})
	require.NoError(t, err)
	defer p.Close()
	require.True(t, p.LM.Signature().LastLogitsOnly)
	require.True(t, p.LM.Signature().GroupedAttention)
	span := 500 + 64
	perRow := 2*2*span*32*4 + 13*4*64*span*4 + 100*4
	require.Equal(t, model.DefaultCallBytes/perRow, p.LM.CallRows(500, 64))
	// spiral plan's one row of a prefill chunk (memplan) is this
	// estimate: a budget of two of its rows takes two, a byte less one.
	items, err := memplan.GeneratePeak(memplan.FromQwen3(qwen3.Tiny()), memplan.Generate{Rows: 1, Capacity: 500, CallBytes: 1, Chunk: 64})
	require.NoError(t, err)
	row := items[2].Bytes
	require.Equal(t, int64(perRow), row)
	require.Equal(t, 2, p.LM.CallRowsWithin(2*row, 500, 64))
	require.Equal(t, 1, p.LM.CallRowsWithin(2*row-1, 500, 64))
	// A call of one position per row runs on the decode graph, which
	// writes the cache in place: no present is made.
	require.NotEmpty(t, p.Artifacts.DecodePath())
	span = 500 + 1
	require.Equal(t, model.DefaultCallBytes/(13*4*span*4+100*4), p.LM.CallRows(500, 1))
}
