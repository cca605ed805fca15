package rl

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/spiral-rl/spiral/model"
	"github.com/spiral-rl/spiral/model/params"
)

func TestMicroBatchesLayout(t *testing.T) {
	examples := []Example{
		{Prompt: []int32{1, 2}, Completion: []int32{3}, OldLogProbs: []float32{-0.5}, Advantage: 2},
		{Prompt: []int32{4, 5, 6}, Completion: []int32{7, 8}, OldLogProbs: []float32{-1, -2}, Advantage: -1},
	}
	// 10 positions: the longest (5) fits twice, so both rows share one batch.
	bs, toks, err := MicroBatches(examples, 10, 0.2, 0.28)
	require.NoError(t, err)
	require.Len(t, bs, 1)
	require.Equal(t, []int{3}, toks)
	b := bs[0]
	require.Equal(t, 2, b.Batch)
	require.Equal(t, 5, b.Seq)
	// Longest first, right-padded.
	require.Equal(t, []int64{4, 5, 6, 7, 8, 1, 2, 3, 0, 0}, b.InputIDs)
	require.Equal(t, []int64{1, 1, 1, 1, 1, 1, 1, 1, 0, 0}, b.AttentionMask)
	require.Equal(t, []int64{0, 1, 2, 3, 4, 0, 1, 2, 0, 0}, b.PositionIDs)
	// Row 0: completion tokens 7, 8 are scored at positions 2, 3.
	// Row 1: completion token 3 is scored at position 1.
	require.Equal(t, []float32{0, 0, 1, 1, 0, 0, 1, 0, 0, 0}, b.LossMask)
	require.Equal(t, []float32{0, 0, -1, -1, 0, 0, 2, 0, 0, 0}, b.Advantages)
	require.Equal(t, []float32{0, 0, -1, -2, 0, 0, -0.5, 0, 0, 0}, b.OldLogProbs)
	require.Equal(t, float32(0.2), b.ClipLow)

	// 6 positions: one row per batch.
	bs, toks, err = MicroBatches(examples, 6, 0.2, 0.28)
	require.NoError(t, err)
	require.Len(t, bs, 2)
	require.Equal(t, []int{2, 1}, toks)
	require.Equal(t, 3, bs[1].Seq)
}

// TestMicroBatchesLeastPadding: rows, longest first, are cut into the
// fewest calls that fit maxTokens, and of those into the calls that pad
// the fewest positions (each row padded to its call's longest): rows of
// 16, 12, 12, 4, 4 and 4 positions under 36 a call were taken greedily,
// 16 + 12 | 12 + 4 + 4 | 4, 32 + 36 + 4 = 72 positions, not 16 | 12 +
// 12 | 4 + 4 + 4, 16 + 24 + 12 = 52, also three calls. Rows of one length
// keep the greedy cut (its first calls the fullest).
func TestMicroBatchesLeastPadding(t *testing.T) {
	for _, c := range []struct {
		lengths   []int
		maxTokens int
		want      [][2]int // each call's rows and length
	}{
		{[]int{4, 16, 12, 4, 12, 4}, 36, [][2]int{{1, 16}, {2, 12}, {3, 4}}},
		{[]int{4, 3, 3, 2, 2, 2}, 9, [][2]int{{1, 4}, {2, 3}, {3, 2}}},
		{[]int{4, 4, 4, 4, 4}, 8, [][2]int{{2, 4}, {2, 4}, {1, 4}}},
		{[]int{3, 12, 3}, 10, [][2]int{{1, 12}, {2, 3}}},
		{[]int{3, 12, 3}, 0, [][2]int{{3, 12}}},
		{[]int{5, 2, 2, 2}, 8, [][2]int{{1, 5}, {3, 2}}},
	} {
		var examples []Example
		for i, n := range c.lengths {
			examples = append(examples, Example{Prompt: []int32{int32(i + 1)}, Completion: make([]int32, n-1), OldLogProbs: make([]float32, n-1)})
		}
		bs, _, err := MicroBatches(examples, c.maxTokens, 0.2, 0.28)
		require.NoError(t, err)
		var got [][2]int
		for _, b := range bs {
			got = append(got, [2]int{b.Batch, b.Seq})
		}
		require.Equal(t, c.want, got, "lengths %v, max %d", c.lengths, c.maxTokens)
	}
}

// TestCallsOfAgainstEveryCut: callsOf's cut of random rows, longest
// first, has the fewest calls and of those the fewest padded positions
// of every cut into consecutive calls that fit maxTokens (a row longer
// than it alone).
func TestCallsOfAgainstEveryCut(t *testing.T) {
	r := rand.New(rand.NewPCG(25, 1))
	for range 2000 {
		rows := make([]row, 1+r.IntN(10))
		for i := range rows {
			rows[i].positions = 1 + r.IntN(20)
		}
		slices.SortStableFunc(rows, func(a, b row) int { return b.positions - a.positions })
		maxTokens := 1 + r.IntN(60)
		// padded returns the calls' count and positions for the calls
		// ending at ends, ok when each fits.
		padded := func(ends []int) (calls, positions int, ok bool) {
			start := 0
			for _, end := range ends {
				T := rows[start].positions
				if end-start > 1 && (end-start)*T > maxTokens {
					return 0, 0, false
				}
				positions += (end - start) * T
				start = end
			}
			return len(ends), positions, true
		}
		best := [2]int{len(rows) + 1, 0}
		for mask := range 1 << (len(rows) - 1) {
			var ends []int
			for j := 1; j < len(rows); j++ {
				if mask&(1<<(j-1)) != 0 {
					ends = append(ends, j)
				}
			}
			calls, positions, ok := padded(append(ends, len(rows)))
			if ok && (calls < best[0] || calls == best[0] && positions < best[1]) {
				best = [2]int{calls, positions}
			}
		}
		ends := callsOf(rows, maxTokens)
		calls, positions, ok := padded(ends)
		require.True(t, ok, "rows %v, max %d: %v", rows, maxTokens, ends)
		require.Equal(t, len(rows), ends[len(ends)-1])
		require.Equal(t, best, [2]int{calls, positions}, "rows %v, max %d: %v", rows, maxTokens, ends)
	}
}

// TestPackedMicroBatchesLayout: PackedMicroBatches packs two
// completions of one 4-token prompt in one row of 3 + 2 + 2 positions
// (the prompt but its last token, then for each completion that token
// and the completion), as Gradients does with PackPrompts; MicroBatches
// keeps them in two rows of 5.
func TestPackedMicroBatchesLayout(t *testing.T) {
	prompt := []int32{1, 2, 3, 4}
	examples := []Example{
		{Prompt: prompt, Completion: []int32{5}, OldLogProbs: []float32{-0.5}, Advantage: 1},
		{Prompt: slices.Clone(prompt), Completion: []int32{6}, OldLogProbs: []float32{-1}, Advantage: -1},
	}
	bs, toks, err := PackedMicroBatches(examples, 0, 0.2, 0.28)
	require.NoError(t, err)
	require.Len(t, bs, 1)
	require.Equal(t, []int{2}, toks)
	b := bs[0]
	require.Equal(t, [2]int{1, 7}, [2]int{b.Batch, b.Seq})
	require.Equal(t, []int64{1, 2, 3, 4, 5, 4, 6}, b.InputIDs)
	require.Equal(t, []int64{0, 1, 2, 3, 4, 3, 4}, b.PositionIDs)
	require.Equal(t, []int64{0, 0, 0, 1, 1, 2, 2}, b.Segments)
	require.Equal(t, []float32{0, 0, 0, 1, 0, 1, 0}, b.LossMask)
	require.Equal(t, []float32{0, 0, 0, -0.5, 0, -1, 0}, b.OldLogProbs)

	bs, _, err = MicroBatches(examples, 0, 0.2, 0.28)
	require.NoError(t, err)
	require.Equal(t, [2]int{2, 5}, [2]int{bs[0].Batch, bs[0].Seq})
	require.Nil(t, bs[0].Segments)
}

func TestMicroBatchesErrors(t *testing.T) {
	_, _, err := MicroBatches([]Example{{Completion: []int32{1}, OldLogProbs: []float32{0}}}, 10, 0, 0)
	require.ErrorContains(t, err, "empty prompt")
	_, _, err = MicroBatches([]Example{{Prompt: []int32{1}, Completion: []int32{1}}}, 10, 0, 0)
	require.ErrorContains(t, err, "1 completion tokens")
}

// constLogProbLearner gives every position the log-probability -1.
type constLogProbLearner struct{}

func (constLogProbLearner) Accumulate(_ context.Context, b model.TrainBatch, _ float32, _ *params.Store, res *model.TrainResult) error {
	res.LogProbs = make([]float32, b.Batch*b.Seq)
	res.Entropy = make([]float32, b.Batch*b.Seq)
	for i := range res.LogProbs {
		res.LogProbs[i] = -1
	}
	return nil
}

// TestGradientsEngineLogProbs: the engine's log-probabilities are
// compared with the learner's at the tokens that have them (hand-computed
// differences), wherever the micro-batching puts their rows.
func TestGradientsEngineLogProbs(t *testing.T) {
	w, err := params.NewStore([]params.Spec{{Name: "w", Shape: []int64{1}}})
	require.NoError(t, err)
	examples := []Example{
		{Prompt: []int32{1, 2}, Completion: []int32{3, 4}, EngineLogProbs: []float32{-1.5, -0.75}, Advantage: 1},
		{Prompt: []int32{1}, Completion: []int32{3, 4, 5}, Advantage: 1}, // none: not counted
		{Prompt: []int32{1, 2, 3}, Completion: []int32{6}, EngineLogProbs: []float32{-3}, Advantage: -1},
	}
	for _, micro := range []int{0, 4} {
		g, err := Gradients(context.Background(), constLogProbLearner{}, w.NewGrads(), examples, GradientOptions{MicroBatchTokens: micro, ClipLow: 0.2, ClipHigh: 0.2, Detached: true})
		require.NoError(t, err)
		require.Equal(t, 6, g.LossTokens)
		require.Equal(t, 3, g.EngineTokens, "micro-batch tokens %d", micro)
		require.InDelta(t, (0.5+0.25+2)/3, g.EngineAbsDiff, 1e-6, "micro-batch tokens %d", micro)
		require.InDelta(t, 2, g.EngineMaxDiff, 1e-6, "micro-batch tokens %d", micro)
	}
	g, err := Gradients(context.Background(), constLogProbLearner{}, w.NewGrads(), examples[1:2], GradientOptions{Detached: true})
	require.NoError(t, err)
	require.Zero(t, g.EngineTokens)
	require.Zero(t, g.EngineAbsDiff)
}

// inputEntropyLearner gives every position the entropy of its input
// token's id, so that a statistic's tokens can be told apart.
type inputEntropyLearner struct{}

func (inputEntropyLearner) Accumulate(_ context.Context, b model.TrainBatch, _ float32, _ *params.Store, res *model.TrainResult) error {
	res.LogProbs = make([]float32, b.Batch*b.Seq)
	res.Entropy = make([]float32, b.Batch*b.Seq)
	for i, id := range b.InputIDs {
		res.Entropy[i] = float32(id)
	}
	return nil
}

// TestGradientsEntropyTokenMean: the step's entropy is the mean over
// the trained completion tokens only (the positions that predict them,
// whose inputs are the tokens before them), whatever the micro-batching
// and packing: 2, 3 | 1, 3, 4 | 3, hand-computed.
func TestGradientsEntropyTokenMean(t *testing.T) {
	w, err := params.NewStore([]params.Spec{{Name: "w", Shape: []int64{1}}})
	require.NoError(t, err)
	examples := []Example{
		{Prompt: []int32{1, 2}, Completion: []int32{3, 4}, Advantage: 1},
		{Prompt: []int32{1}, Completion: []int32{3, 4, 5}, Advantage: -1},
		{Prompt: []int32{1, 2, 3}, Completion: []int32{6}, Advantage: 1},
	}
	for _, micro := range []int{0, 3, 4, 100} {
		g, err := Gradients(context.Background(), inputEntropyLearner{}, w.NewGrads(), examples, GradientOptions{MicroBatchTokens: micro, ClipLow: 0.2, ClipHigh: 0.2, Detached: true})
		require.NoError(t, err)
		require.Equal(t, 6, g.LossTokens, "micro-batch tokens %d", micro)
		require.InDelta(t, (2.0+3+1+3+4+3)/6, g.Entropy, 1e-9, "micro-batch tokens %d", micro)
	}
}

// TestPackedLayout: completions of one long prompt share a row, the
// prompt but its last token once, then each completion after that token
// again, its positions going on from the prompt's, its loss positions,
// advantages and old log-probabilities at its own tokens, its engine
// log-probabilities likewise; another example stays a row of its own.
func TestPackedLayout(t *testing.T) {
	prompt := []int32{11, 12, 13, 14, 15, 16}
	examples := []Example{
		{Prompt: prompt, Completion: []int32{21, 22}, OldLogProbs: []float32{-1, -2}, EngineLogProbs: []float32{-1.5, -2.5}, Advantage: 1},
		{Prompt: []int32{9}, Completion: []int32{8}, OldLogProbs: []float32{-9}, Advantage: 3},
		{Prompt: prompt, Completion: []int32{31}, OldLogProbs: []float32{-3}, Advantage: -1},
	}
	bs, toks, engine, _, err := microBatches(examples, 0, 0.2, 0.28, false, true)
	require.NoError(t, err)
	require.Len(t, bs, 1)
	require.Equal(t, []int{4}, toks)
	b := bs[0]
	require.Equal(t, 2, b.Batch)
	require.Equal(t, 10, b.Seq) // 5 of the prompt + (1 + 2) + (1 + 1)
	require.Equal(t, []int64{11, 12, 13, 14, 15, 16, 21, 22, 16, 31, 9, 8, 0, 0, 0, 0, 0, 0, 0, 0}, b.InputIDs)
	require.Equal(t, []int64{0, 1, 2, 3, 4, 5, 6, 7, 5, 6, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0}, b.PositionIDs)
	require.Equal(t, []int64{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0}, b.AttentionMask)
	require.Equal(t, []int64{0, 0, 0, 0, 0, 1, 1, 1, 2, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, b.Segments)
	require.Equal(t, []float32{0, 0, 0, 0, 0, 1, 1, 0, 1, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0}, b.LossMask)
	require.Equal(t, []float32{0, 0, 0, 0, 0, 1, 1, 0, -1, 0, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0}, b.Advantages)
	require.Equal(t, []float32{0, 0, 0, 0, 0, -1, -2, 0, -3, 0, -9, 0, 0, 0, 0, 0, 0, 0, 0, 0}, b.OldLogProbs)
	require.Equal(t, []float32{-1.5, -2.5}, []float32{engine[0][5], engine[0][6]})
	for i, e := range engine[0] {
		if i != 5 && i != 6 {
			require.True(t, e != e, "position %d: want NaN, got %v", i, e)
		}
	}
	// Without packing, the same examples are three rows.
	bs, _, _, _, err = microBatches(examples, 0, 0.2, 0.28, false, false)
	require.NoError(t, err)
	require.Equal(t, 3, bs[0].Batch)
	require.Nil(t, bs[0].Segments)
}

// TestWorthPacking: completions are packed where the packed row's
// attention (its length squared) costs no more than the separate rows'.
func TestWorthPacking(t *testing.T) {
	for _, tc := range []struct {
		name   string
		prompt int
		comps  []int
		want   bool
	}{
		{"aggregation prompt, short completions", 170, []int{35, 35, 35, 35}, true},
		{"the paper's aggregation: 9k prompt, 3k completions", 9216, []int{3000, 3000, 3000, 3000}, true},
		{"search traces of one question", 20, []int{35, 35, 35, 35, 35, 35, 35, 35}, false},
		{"the paper's search: 1k prompt, 4k traces", 1024, []int{4096, 4096, 4096, 4096, 4096, 4096, 4096, 4096}, false},
		{"GRPO's group of 24", 20, slices.Repeat([]int{35}, 24), false},
		// Two equal halves: (p - 1 + 2(1 + c))^2 <= 2 (p + c)^2 when
		// p + 2c + 1 <= sqrt(2)(p + c).
		{"two completions as long as the prompt", 100, []int{100, 100}, false},
		{"two completions of a fifth of it", 100, []int{20, 20}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, worthPacking(tc.prompt, tc.comps))
		})
	}
}

// TestPackedRowsFitMicroBatch: a packed row never passes the
// micro-batch's positions; the completions that would are packed in
// rows that fit, or stay rows of their own.
func TestPackedRowsFitMicroBatch(t *testing.T) {
	prompt := make([]int32, 40)
	for i := range prompt {
		prompt[i] = int32(i + 1)
	}
	var examples []Example
	for range 4 {
		examples = append(examples, Example{Prompt: prompt, Completion: []int32{7, 7, 7, 7, 7}, OldLogProbs: make([]float32, 5)})
	}
	for _, tc := range []struct {
		maxTokens int
		want      [][]int // members of each row, longest row first
	}{
		{0, [][]int{{0, 1, 2, 3}}},        // 39 + 4 x 6 = 63
		{63, [][]int{{0, 1, 2, 3}}},       // fits exactly
		{62, [][]int{{0, 1}, {2, 3}}},     // 2 rows: 51 each, not 57 + 45
		{51, [][]int{{0, 1}, {2, 3}}},     // 51 each
		{50, [][]int{{0}, {1}, {2}, {3}}}, // no two fit: 45 each
		{1, [][]int{{0}, {1}, {2}, {3}}},  // a row per micro-batch
	} {
		rows := rowsOf(examples, true, tc.maxTokens)
		var got [][]int
		for _, r := range rows {
			got = append(got, r.members)
			if len(r.members) > 1 && tc.maxTokens > 0 {
				require.LessOrEqual(t, r.positions, tc.maxTokens)
			}
		}
		require.Equal(t, tc.want, got, "max tokens %d", tc.maxTokens)
	}
}

// TestPackedRowsSplitEvenly: a group that overflows the micro-batch
// is split across the fewest rows that fit, its completions shared out
// as evenly as their lengths allow, so that the longest row, which sets
// the memory, is as short as it can be: under 100 positions, four
// 16-token completions of a 48-token prompt are 2 + 2 (81 positions
// each), not 3 + 1 (98 and 64).
func TestPackedRowsSplitEvenly(t *testing.T) {
	prompt := make([]int32, 48)
	for i := range prompt {
		prompt[i] = int32(i + 1)
	}
	for _, tc := range []struct {
		name      string
		comps     []int // completion lengths, in order
		maxTokens int
		want      [][]int // members of each row, longest row first
		positions []int
	}{
		{"four of 16 under 100", []int{16, 16, 16, 16}, 100, [][]int{{0, 1}, {2, 3}}, []int{81, 81}},
		{"seven of 16 under 100", slices.Repeat([]int{16}, 7), 100, [][]int{{0, 1, 2}, {3, 4}, {5, 6}}, []int{98, 81, 81}},
		{"five of 16 under 115", slices.Repeat([]int{16}, 5), 115, [][]int{{0, 1, 2}, {3, 4}}, []int{98, 81}},
		{"four of 16 fitting one row", []int{16, 16, 16, 16}, 115, [][]int{{0, 1, 2, 3}}, []int{115}},
		// The long completions cannot share a row: 87 | 97, the only
		// split in two.
		{"two long, two short", []int{39, 39, 4, 4}, 100, [][]int{{1, 2, 3}, {0}}, []int{97, 87}},
		// 3 + 1 would be 94 and 56; 1 + 3 is 76 and 74.
		{"a long one first", []int{28, 8, 8, 8}, 100, [][]int{{0}, {1, 2, 3}}, []int{76, 74}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var examples []Example
			for _, c := range tc.comps {
				examples = append(examples, Example{Prompt: prompt, Completion: make([]int32, c), OldLogProbs: make([]float32, c)})
			}
			rows := rowsOf(examples, true, tc.maxTokens)
			slices.SortStableFunc(rows, func(a, b row) int { return b.positions - a.positions })
			var got [][]int
			var positions []int
			for _, r := range rows {
				got = append(got, r.members)
				positions = append(positions, r.positions)
			}
			require.Equal(t, tc.want, got)
			require.Equal(t, tc.positions, positions)
		})
	}
}

// TestPackedRowsSplitByCost: a group not worth packing in one row is
// packed in the fewest rows that are each worth packing (each row's
// attention no more than its members' apart) and fit, a row costing the
// prompt's positions once, the longest row as short as it can be; a
// completion that is cheaper apart stays apart. Sixteen 16-token
// completions of a 48-token prompt (64 positions each apart, 1,024 in
// all) are no row of more than 7 (47 + 7 x 17 = 166 positions, 166^2 <=
// 7 x 64^2; 8 are 183^2 > 8 x 64^2): 3 rows, 6 + 5 + 5 (149, 132 and 132
// positions, 413 in all), not 16 rows apart.
func TestPackedRowsSplitByCost(t *testing.T) {
	for _, tc := range []struct {
		name      string
		prompt    int
		comps     []int // completion lengths, in order
		maxTokens int
		want      [][]int // members of each row, longest row first
		positions []int
	}{
		{"sixteen of 16, unbounded", 48, slices.Repeat([]int{16}, 16), 0,
			[][]int{{0, 1, 2, 3, 4, 5}, {6, 7, 8, 9, 10}, {11, 12, 13, 14, 15}}, []int{149, 132, 132}},
		{"sixteen of 16 under 16384", 48, slices.Repeat([]int{16}, 16), 16384,
			[][]int{{0, 1, 2, 3, 4, 5}, {6, 7, 8, 9, 10}, {11, 12, 13, 14, 15}}, []int{149, 132, 132}},
		// Rows of 6 (149) pass 140: 4 rows, 4 + 4 + 4 + 4 (115 each),
		// not 5 + 5 + 5 + 1 (132, ..., 64).
		{"sixteen of 16 under 140", 48, slices.Repeat([]int{16}, 16), 140,
			[][]int{{0, 1, 2, 3}, {4, 5, 6, 7}, {8, 9, 10, 11}, {12, 13, 14, 15}}, []int{115, 115, 115, 115}},
		// 200 tokens shares no row (17 x 201 > 47^2 / 2): it stays apart,
		// its neighbours packed in pairs (81 positions each).
		{"a long completion amid short ones", 48, []int{16, 16, 200, 16, 16}, 0,
			[][]int{{2}, {0, 1}, {3, 4}}, []int{248, 81, 81}},
		{"two completions as long as the prompt", 100, []int{100, 100}, 0,
			[][]int{{0}, {1}}, []int{200, 200}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prompt := make([]int32, tc.prompt)
			for i := range prompt {
				prompt[i] = int32(i + 1)
			}
			var examples []Example
			for _, c := range tc.comps {
				examples = append(examples, Example{Prompt: prompt, Completion: make([]int32, c), OldLogProbs: make([]float32, c)})
			}
			rows := rowsOf(examples, true, tc.maxTokens)
			slices.SortStableFunc(rows, func(a, b row) int { return b.positions - a.positions })
			var got [][]int
			var positions []int
			for _, r := range rows {
				got = append(got, r.members)
				positions = append(positions, r.positions)
			}
			require.Equal(t, tc.want, got)
			require.Equal(t, tc.positions, positions)
		})
	}
}

// TestSplitGroupAgainstEveryCut: on random groups, splitGroup's runs are
// the fewest whose rows fit and are worth packing (a completion alone
// always is a row), the fewest positions, and its longest row is the
// shortest of any such cut, checked against every cut of the group.
func TestSplitGroupAgainstEveryCut(t *testing.T) {
	r := rand.New(rand.NewPCG(24, 1))
	for range 2000 {
		base := r.IntN(60)
		widths := make([]int, 1+r.IntN(8))
		for j := range widths {
			widths[j] = 1 + r.IntN(40)
		}
		maxTokens := 1 + r.IntN(200)
		if r.IntN(4) == 0 {
			maxTokens = 0 // unbounded
		}
		p, comps := base+1, make([]int, len(widths))
		for j, w := range widths {
			comps[j] = w - 1
		}
		length := func(i, j int) int {
			n := base
			for _, w := range widths[i:j] {
				n += w
			}
			return n
		}
		// cut returns the rows' count and the longest row of the runs
		// ending at ends, ok when every run of several fits and is worth
		// packing.
		cut := func(ends []int) (runs, longest int, ok bool) {
			start := 0
			for _, end := range ends {
				if end-start > 1 && (maxTokens > 0 && length(start, end) > maxTokens || !worthPacking(p, comps[start:end])) {
					return 0, 0, false
				}
				longest = max(longest, length(start, end))
				start = end
			}
			return len(ends), longest, true
		}
		bestRuns, bestLongest := len(widths)+1, 0
		for mask := range 1 << (len(widths) - 1) {
			var ends []int
			for j := 1; j < len(widths); j++ {
				if mask&(1<<(j-1)) != 0 {
					ends = append(ends, j)
				}
			}
			runs, longest, ok := cut(append(ends, len(widths)))
			if ok && (runs < bestRuns || runs == bestRuns && longest < bestLongest) {
				bestRuns, bestLongest = runs, longest
			}
		}
		ends := splitGroup(p, comps, maxTokens)
		runs, longest, ok := cut(ends)
		require.True(t, ok, "base %d, widths %v, max %d: %v", base, widths, maxTokens, ends)
		require.Equal(t, len(widths), ends[len(ends)-1])
		require.Equal(t, [2]int{bestRuns, bestLongest}, [2]int{runs, longest}, "base %d, widths %v, max %d: %v", base, widths, maxTokens, ends)
	}
}

// packingEntropyLearner is inputEntropyLearner taking packed rows.
type packingEntropyLearner struct{ inputEntropyLearner }

func (packingEntropyLearner) PackedRows() error { return nil }

// TestGradientsKindEntropy: each kind's entropy is the mean over its own
// examples' trained tokens, whatever the micro-batching and packing
// (hand-computed from the input ids before each completion token: search
// 2, 3 | 3; aggregation 1, 3, 7 | 9, 21 | 9, 22).
func TestGradientsKindEntropy(t *testing.T) {
	w, err := params.NewStore([]params.Spec{{Name: "w", Shape: []int64{1}}})
	require.NoError(t, err)
	long := []int32{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 9}
	examples := []Example{
		{Prompt: []int32{1, 2}, Completion: []int32{3, 4}, Advantage: 1, Kind: KindSearch},
		{Prompt: []int32{1}, Completion: []int32{3, 7, 5}, Advantage: -1, Kind: KindAggregate},
		{Prompt: []int32{1, 2, 3}, Completion: []int32{6}, Advantage: 1, Kind: KindSearch},
		{Prompt: long, Completion: []int32{21, 2}, Advantage: 1, Kind: KindAggregate},
		{Prompt: long, Completion: []int32{22, 2}, Advantage: -1, Kind: KindAggregate},
	}
	want := map[string]float64{KindSearch: (2.0 + 3 + 3) / 3, KindAggregate: (1.0 + 3 + 7 + 9 + 21 + 9 + 22) / 7}
	for _, learner := range []Learner{inputEntropyLearner{}, packingEntropyLearner{}} {
		for _, micro := range []int{0, 3, 24, 100} {
			g, err := Gradients(context.Background(), learner, w.NewGrads(), examples, GradientOptions{MicroBatchTokens: micro, ClipLow: 0.2, ClipHigh: 0.2, Detached: true, PackPrompts: true})
			require.NoError(t, err)
			require.Equal(t, 10, g.LossTokens, "%T, micro-batch tokens %d", learner, micro)
			require.Len(t, g.KindEntropy, 2)
			for kind, e := range want {
				require.InDelta(t, e, g.KindEntropy[kind], 1e-9, "%T, micro-batch tokens %d, %s", learner, micro, kind)
			}
			require.InDelta(t, (2.0+3+3+1+3+7+9+21+9+22)/10, g.Entropy, 1e-9)
		}
	}
}
