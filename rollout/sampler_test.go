package rollout

import (
	"context"
	"math"
	"math/rand/v2"
	"path/filepath"
	"runtime"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/spiral-rl/spiral/model"
	"github.com/spiral-rl/spiral/model/modeltest"
	"github.com/spiral-rl/spiral/model/qwen3"
)

// samplerTinyLM opens a freshly generated tiny Qwen3 model (random
// weights, vocabulary 100).
func samplerTinyLM(t *testing.T) *model.LM { return samplerTinyLMB(t) }

func samplerTinyLMB(t testing.TB) *model.LM {
	t.Helper()
	rt := modeltest.Runtime(t)
	dir := t.TempDir()
	require.NoError(t, qwen3.WriteDir(dir, qwen3.Tiny(), 11))
	lm, err := model.OpenLM(rt, filepath.Join(dir, "model.onnx"), model.LMOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { lm.Close() })
	return lm
}

var samplerPrompts = [][]int32{{5, 9, 13, 2, 44, 17}, {7, 7, 81}, {3}, {60, 61, 62, 63}, {9, 9}}

func samplerRequests(seed uint64) []Request {
	reqs := make([]Request, len(samplerPrompts))
	for i, p := range samplerPrompts {
		reqs[i] = Request{Prompt: p, Seed: seed + uint64(i)}
	}
	return reqs
}

func TestSamplerReproducibleAndBatchInvariant(t *testing.T) {
	lm := samplerTinyLM(t)
	cfg := SamplerConfig{TopP: 1, Temperature: 1, MaxNewTokens: 12, BatchSize: 8, StopIDs: []int32{99}}
	s, err := NewSampler(lm, cfg)
	require.NoError(t, err)
	ctx := context.Background()
	a, st, err := s.Generate(ctx, samplerRequests(1), nil)
	require.NoError(t, err)
	b, _, err := s.Generate(ctx, samplerRequests(1), nil)
	require.NoError(t, err)
	require.Equal(t, a, b, "same seed, same outputs")
	c, _, err := s.Generate(ctx, samplerRequests(100), nil)
	require.NoError(t, err)
	require.NotEqual(t, a, c, "another seed, other outputs")
	total := 0
	for _, x := range a {
		total += len(x.Tokens)
		require.Len(t, x.PolicyLogProbs, len(x.Tokens))
		for i := range x.PolicyLogProbs {
			require.LessOrEqual(t, x.PolicyLogProbs[i], float32(0))
		}
		if x.Finish == FinishLength {
			require.Len(t, x.Tokens, 12)
		} else {
			require.Equal(t, int32(99), x.Tokens[len(x.Tokens)-1])
		}
	}
	require.Equal(t, total, st.GeneratedTokens)

	// Each prompt alone (batch of one) gives what it gave inside the
	// padded batch of five.
	for i, req := range samplerRequests(1) {
		alone, _, err := s.Generate(ctx, []Request{req}, nil)
		require.NoError(t, err)
		require.Equal(t, a[i].Tokens, alone[0].Tokens, "prompt %d alone vs in a padded batch", i)
		require.InDeltaSlice(t, a[i].PolicyLogProbs, alone[0].PolicyLogProbs, 1e-4)
	}

	// Batches of two with and without refill give the same completions.
	for _, refill := range []bool{false, true} {
		cfg2 := cfg
		cfg2.BatchSize, cfg2.Refill = 2, refill
		s2, err := NewSampler(lm, cfg2)
		require.NoError(t, err)
		d, st2, err := s2.Generate(ctx, samplerRequests(1), nil)
		require.NoError(t, err)
		for i := range a {
			require.Equal(t, a[i].Tokens, d[i].Tokens, "refill=%v prompt %d", refill, i)
		}
		require.Equal(t, st.GeneratedTokens, st2.GeneratedTokens)
	}
}

// TestSamplerGreedyEqualsArgmax compares temperature-0 sampling with a
// plain loop that recomputes the full sequence without the cache and
// takes the argmax each step.
func TestSamplerGreedyEqualsArgmax(t *testing.T) {
	lm := samplerTinyLM(t)
	s, err := NewSampler(lm, SamplerConfig{TopP: 1, Temperature: 0, MaxNewTokens: 8, BatchSize: 4})
	require.NoError(t, err)
	got, _, err := s.Generate(context.Background(), samplerRequests(5), nil)
	require.NoError(t, err)
	vocab := lm.Signature().Vocab
	for i, p := range samplerPrompts {
		seq := append([]int64(nil), toInt64(p)...)
		var want []int32
		for len(want) < 8 {
			T := len(seq)
			logits := modeltest.SequenceLogits(t, lm, seq)
			next := greedy(logits[(T-1)*vocab : T*vocab])
			want = append(want, int32(next))
			seq = append(seq, int64(next))
		}
		require.Equal(t, want, got[i].Tokens, "prompt %d", i)
	}
}

func TestSamplerVocabLimitAndConfig(t *testing.T) {
	lm := samplerTinyLM(t)
	s, err := NewSampler(lm, SamplerConfig{TopP: 1, Temperature: 2, MaxNewTokens: 30, BatchSize: 4, VocabLimit: 10})
	require.NoError(t, err)
	out, _, err := s.Generate(context.Background(), samplerRequests(3), nil)
	require.NoError(t, err)
	for _, c := range out {
		for _, id := range c.Tokens {
			require.Less(t, id, int32(10))
		}
	}
	_, err = NewSampler(lm, SamplerConfig{TopP: 1, MaxNewTokens: 1, BatchSize: 1, VocabLimit: 1000})
	require.ErrorContains(t, err, "exceeds")
	for _, tc := range []struct {
		name string
		edit func(*SamplerConfig)
		want string
	}{
		{"negative temperature", func(c *SamplerConfig) { c.Temperature = -1 }, "--temperature -1"},
		{"infinite temperature", func(c *SamplerConfig) { c.Temperature = math.Inf(1) }, "--temperature +Inf"},
		{"top-p above 1", func(c *SamplerConfig) { c.TopP = 2 }, "--top-p 2"},
		{"negative top-p", func(c *SamplerConfig) { c.TopP = -0.5 }, "--top-p -0.5"},
		{"zero top-p", func(c *SamplerConfig) { c.TopP = 0 }, "--top-p 0"},
		{"negative top-k", func(c *SamplerConfig) { c.TopK = -1 }, "--top-k -1"},
		{"negative max tokens", func(c *SamplerConfig) { c.MaxNewTokens = -1 }, "--max-new-tokens -1"},
		{"zero batch", func(c *SamplerConfig) { c.BatchSize = 0 }, "--gen-batch 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultSamplerConfig()
			c.MaxNewTokens = 4
			tc.edit(&c)
			_, err := NewSampler(lm, c)
			require.ErrorContains(t, err, tc.want)
		})
	}
}

func toInt64(x []int32) []int64 {
	out := make([]int64, len(x))
	for i, v := range x {
		out[i] = int64(v)
	}
	return out
}

// TestSamplerLastLogitsGraph checks that sampling through the artifacts'
// sampling graph (last-position logits only, weights fed from the store)
// gives the completions of the full source graph.
func TestSamplerLastLogitsGraph(t *testing.T) {
	rt := modeltest.Runtime(t)
	dir := t.TempDir()
	require.NoError(t, qwen3.WriteDir(dir, qwen3.Tiny(), 11))
	full, err := model.OpenLM(rt, filepath.Join(dir, "model.onnx"), model.LMOptions{})
	require.NoError(t, err)
	defer full.Close()
	pol, err := model.OpenPolicy(context.Background(), rt, filepath.Join(dir, "model.onnx"), filepath.Join(dir, "artifacts"), model.PolicyOptions{})
	require.NoError(t, err)
	defer pol.Close()
	require.True(t, pol.LM.Signature().LastLogitsOnly)
	cfg := SamplerConfig{TopP: 1, Temperature: 1, MaxNewTokens: 10, BatchSize: 2, Refill: true}
	a, err := NewSampler(full, cfg)
	require.NoError(t, err)
	b, err := NewSampler(pol.LM, cfg)
	require.NoError(t, err)
	x, _, err := a.Generate(context.Background(), samplerRequests(4), nil)
	require.NoError(t, err)
	y, _, err := b.Generate(context.Background(), samplerRequests(4), nil)
	require.NoError(t, err)
	for i := range x {
		require.Equal(t, x[i].Tokens, y[i].Tokens, "request %d", i)
	}
}

// TestSamplerParallelRows forces the multi-goroutine sampling path (used
// for wide vocabularies) and checks it gives the sequential path's
// completions.
func TestSamplerParallelRows(t *testing.T) {
	lm := samplerTinyLM(t)
	cfg := SamplerConfig{TopP: 1, Temperature: 1, TopK: 20, MaxNewTokens: 10, BatchSize: 5}
	seq, err := NewSampler(lm, cfg)
	require.NoError(t, err)
	par, err := NewSampler(lm, cfg)
	require.NoError(t, err)
	par.parallelMin = 0
	a, _, err := seq.Generate(context.Background(), samplerRequests(2), nil)
	require.NoError(t, err)
	b, _, err := par.Generate(context.Background(), samplerRequests(2), nil)
	require.NoError(t, err)
	require.Equal(t, a, b)
}

// TestSamplerPolicyLogProbs checks that PolicyLogProbs are the model's own
// log-probabilities (temperature 1, every id below VocabLimit: the
// policy's vocabulary) whatever the sampling transforms: recomputed here
// from an uncached forward pass.
func TestSamplerPolicyLogProbs(t *testing.T) {
	lm := samplerTinyLM(t)
	vocab := lm.Signature().Vocab
	for _, cfg := range []SamplerConfig{
		{Temperature: 1, TopP: 1, MaxNewTokens: 6, BatchSize: 4},
		{Temperature: 0.7, TopK: 10, TopP: 0.9, MaxNewTokens: 6, BatchSize: 4, VocabLimit: 50},
		{Temperature: 1, TopP: 1, MaxNewTokens: 6, BatchSize: 4, VocabLimit: 50}, // the sampled distribution is pi over 50 ids
		{Temperature: 0, TopP: 1, MaxNewTokens: 6, BatchSize: 4},                 // greedy: pi_old is still pi's
	} {
		s, err := NewSampler(lm, cfg)
		require.NoError(t, err)
		out, _, err := s.Generate(context.Background(), samplerRequests(8), nil)
		require.NoError(t, err)
		for i, c := range out {
			seq := toInt64(samplerPrompts[i])
			for j, id := range c.Tokens {
				T := len(seq)
				logits := modeltest.SequenceLogits(t, lm, seq)
				row := logits[(T-1)*vocab : T*vocab]
				if cfg.VocabLimit > 0 {
					row = row[:cfg.VocabLimit] // ids at and above it have probability 0
				}
				want := float64(row[id]) - logSumExp(row)
				require.InDelta(t, want, c.PolicyLogProbs[j], 1e-4, "cfg %+v request %d token %d", cfg, i, j)
				seq = append(seq, int64(id))
			}
		}
	}
}

// TestSamplerCacheStaysBounded runs many short requests through a small
// refilling batch: each cache row holds its own sequence only (prompt +
// generated, no padding), so the cache never grows with the number of
// decode steps or refills.
func TestSamplerCacheStaysBounded(t *testing.T) {
	lm := samplerTinyLM(t)
	s, err := NewSampler(lm, SamplerConfig{TopP: 1, Temperature: 1, MaxNewTokens: 20, BatchSize: 8, Refill: true, StopIDs: []int32{1, 2, 3, 4, 5, 6, 7, 8}})
	require.NoError(t, err)
	reqs := make([]Request, 256)
	for i := range reqs {
		reqs[i] = Request{Prompt: []int32{40, 41, 42}, Seed: uint64(i)}
	}
	out, st, err := s.Generate(context.Background(), reqs, nil)
	require.NoError(t, err)
	require.Len(t, out, 256)
	// A live row holds at most 3 prompt + 20 generated positions (the
	// last generated token is never fed back).
	require.LessOrEqual(t, st.PeakCacheLen, 3+20-1, "peak cache length %d", st.PeakCacheLen)
}

// TestSamplerPeakCacheLen: the peak counts the prompts the cache holds
// after prefill, also of rows that end at their first token (no decode
// step ever runs with one new token each), and each decode step's
// lengths.
func TestSamplerPeakCacheLen(t *testing.T) {
	lm := samplerTinyLM(t)
	longest := 0
	for _, p := range samplerPrompts {
		longest = max(longest, len(p))
	}
	for _, tc := range []struct {
		maxNew, batch int
		want          int
	}{
		{1, 8, longest}, // prefill only
		{1, 2, longest}, // prefill only, in refills
		{3, 8, longest + 2},
	} {
		s, err := NewSampler(lm, SamplerConfig{TopP: 1, Temperature: 1, MaxNewTokens: tc.maxNew, BatchSize: tc.batch, Refill: true})
		require.NoError(t, err)
		_, st, err := s.Generate(context.Background(), samplerRequests(1), nil)
		require.NoError(t, err)
		require.Equal(t, tc.want, st.PeakCacheLen, "%+v", tc)
	}
}

// TestSamplerContextLength: a row stops (FinishLength) when its prompt and
// completion fill the context, and a prompt that leaves no room is an
// error naming the request.
func TestSamplerContextLength(t *testing.T) {
	lm := samplerTinyLM(t)
	cfg := SamplerConfig{TopP: 1, Temperature: 1, MaxNewTokens: 50, BatchSize: 4, ContextLength: 10}
	s, err := NewSampler(lm, cfg)
	require.NoError(t, err)
	out, _, err := s.Generate(context.Background(), samplerRequests(1), nil)
	require.NoError(t, err)
	for i, c := range out {
		require.LessOrEqual(t, len(samplerPrompts[i])+len(c.Tokens), 10, "request %d", i)
		if c.Finish == FinishLength {
			require.Equal(t, 10, len(samplerPrompts[i])+len(c.Tokens))
		}
	}
	_, _, err = s.Generate(context.Background(), []Request{{Prompt: make([]int32, 10)}}, nil)
	require.ErrorContains(t, err, "request 0: prompt of 10 tokens leaves no room")
}

// TestSamplerDecodingMakesLittleGarbage: a decode step reuses its buffers
// (logits, the call's output, tokens, the mask), so the heap does not
// grow by a logits row per step. With the KV cache outside the heap, such
// garbage would be what generation's memory grows by between collections.
func TestSamplerDecodingMakesLittleGarbage(t *testing.T) {
	rt := modeltest.Runtime(t)
	dir := t.TempDir()
	cfg := qwen3.Tiny()
	cfg.Vocab = 4096
	require.NoError(t, qwen3.WriteDir(dir, cfg, 3))
	lm, err := model.OpenLM(rt, filepath.Join(dir, "model.onnx"), model.LMOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { lm.Close() })
	const rows = 8
	allocated := func(newTokens int) uint64 {
		s, err := NewSampler(lm, SamplerConfig{TopP: 1, Temperature: 1, MaxNewTokens: newTokens, BatchSize: rows})
		require.NoError(t, err)
		reqs := make([]Request, rows)
		for i := range reqs {
			reqs[i] = Request{Prompt: []int32{40, 41, 42}, Seed: uint64(i)}
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, _, err = s.Generate(context.Background(), reqs, nil)
		require.NoError(t, err)
		runtime.ReadMemStats(&after)
		return after.TotalAlloc - before.TotalAlloc
	}
	allocated(8) // warm the sessions
	short, long := allocated(8), allocated(72)
	perStep := float64(long-short) / 64
	logitsRow := float64(rows * cfg.Vocab * 4)
	require.Less(t, perStep, logitsRow/4, "a decode step allocates %.0f bytes; one logits buffer is %.0f", perStep, logitsRow)
}

// TestSamplerResident checks sampling on device-resident generation (the
// CPU twin of the CUDA path: weights and KV cache in the runtime device's
// memory): with refill and stop-free sampling at temperature 1, it gives
// bit-identical completions and policy log-probabilities to the host
// path on the sampling graph (model.PolicyOptions.SamplingGraphOnly),
// and across two generations (the second after the weights moved,
// as after an optimiser step) too. Neither path leaves a tensor behind
// (model.Runtime.LiveValues): the second generation holds as many as the
// first, and closing the sampler and the policy releases all they made.
func TestSamplerResident(t *testing.T) {
	rt := modeltest.Runtime(t)
	dir := t.TempDir()
	require.NoError(t, qwen3.WriteDir(dir, qwen3.Tiny(), 12))
	cfg := SamplerConfig{TopP: 0.9, Temperature: 1, MaxNewTokens: 12, BatchSize: 3, Refill: true}
	var got [2][][]Completion
	for i, resident := range []bool{false, true} {
		opened := rt.LiveValues()
		pol, err := model.OpenPolicy(context.Background(), rt, filepath.Join(dir, "model.onnx"), t.TempDir(), model.PolicyOptions{Resident: resident, SamplingGraphOnly: true})
		require.NoError(t, err)
		s, err := NewSampler(pol.LM, cfg)
		require.NoError(t, err)
		var live []int64
		for range 2 {
			out, _, err := s.Generate(context.Background(), samplerRequests(5), nil)
			require.NoError(t, err)
			live = append(live, rt.LiveValues())
			got[i] = append(got[i], out)
			w := pol.Weights.Flat()
			for j := range w {
				w[j] *= 1.05
			}
			pol.Weights.Touch()
		}
		if resident {
			require.Positive(t, pol.LM.CopiedBytes())
		}
		require.Equal(t, live[0], live[1], "resident %v: tensors left live by a generation", resident)
		s.Release()
		require.NoError(t, pol.Close())
		require.Equal(t, opened, rt.LiveValues(), "resident %v: tensors left live by the policy and sampler after Close", resident)
	}
	require.Equal(t, got[0], got[1])
	require.NotEqual(t, got[0][0], got[0][1], "the weight change shows in the second generation")
}

// TestSamplerSharesEqualPrompts: equal prompts admitted together are
// prefilled once (PrefilledTokens counts each distinct prompt once) and
// every copy completes as it does alone, on the host cache and on the
// device-resident one (whose cache rows are copied in device memory),
// with and without refill (which admits rows in smaller groups).
func TestSamplerSharesEqualPrompts(t *testing.T) {
	rt := modeltest.Runtime(t)
	dir := t.TempDir()
	require.NoError(t, qwen3.WriteDir(dir, qwen3.Tiny(), 13))
	p, q, r := []int32{5, 9, 13, 2, 44, 17}, []int32{7, 7, 81}, []int32{60, 61}
	prompts := [][]int32{p, q, p, p, q, r, p}
	reqs := make([]Request, len(prompts))
	for i, pr := range prompts {
		reqs[i] = Request{Prompt: pr, Seed: 40 + uint64(i)}
	}
	for _, tc := range []struct {
		resident, refill bool
		batch, fed       int
	}{
		{false, false, 8, len(p) + len(q) + len(r)},
		{true, false, 8, len(p) + len(q) + len(r)},
		// Batches of 3 rows: {p q p}, then refills of the rows that free.
		{false, true, 3, -1},
	} {
		pol, err := model.OpenPolicy(context.Background(), rt, filepath.Join(dir, "model.onnx"), t.TempDir(), model.PolicyOptions{Resident: tc.resident})
		require.NoError(t, err)
		s, err := NewSampler(pol.LM, SamplerConfig{TopP: 1, Temperature: 1, MaxNewTokens: 10, BatchSize: tc.batch, Refill: tc.refill, StopIDs: []int32{99}})
		require.NoError(t, err)
		got, st, err := s.Generate(context.Background(), reqs, nil)
		require.NoError(t, err)
		require.Equal(t, 4*len(p)+2*len(q)+len(r), st.PromptTokens)
		if tc.fed >= 0 {
			require.Equal(t, tc.fed, st.PrefilledTokens, "resident=%v: each distinct prompt prefilled once", tc.resident)
		} else {
			require.Less(t, st.PrefilledTokens, st.PromptTokens, "the first batch shares p")
		}
		for i, req := range reqs {
			alone, _, err := s.Generate(context.Background(), []Request{req}, nil)
			require.NoError(t, err)
			require.Equal(t, alone[0].Tokens, got[i].Tokens, "%+v: request %d shared vs alone", tc, i)
			require.InDeltaSlice(t, alone[0].PolicyLogProbs, got[i].PolicyLogProbs, 1e-4)
		}
		require.NotEqual(t, got[0].Tokens, got[2].Tokens, "copies of one prompt draw their own samples")
		s.Release()
		require.NoError(t, pol.Close())
	}
}

// TestSamplerCallBytes: a call budget too small for two rows makes
// every prefill chunk and decode step one call per row, and changes
// nothing else; a negative one is refused, naming the flag.
func TestSamplerCallBytes(t *testing.T) {
	lm := samplerTinyLM(t)
	cfg := SamplerConfig{TopP: 1, Temperature: 1, MaxNewTokens: 8, BatchSize: 8}
	run := func(callBytes int64) ([]Completion, Stats) {
		c := cfg
		c.CallBytes = callBytes
		s, err := NewSampler(lm, c)
		require.NoError(t, err)
		out, st, err := s.Generate(context.Background(), samplerRequests(3), nil)
		require.NoError(t, err)
		return out, st
	}
	wide, wideSt := run(0)
	narrow, narrowSt := run(1)
	require.Equal(t, 1+7, wideSt.ForwardCalls, "the default budget holds the whole batch: one prefill call, then a decode step for each of the 7 tokens after the first")
	require.Equal(t, len(samplerPrompts)*(1+7), narrowSt.ForwardCalls, "one row a call")
	for i := range wide {
		require.Equal(t, wide[i].Tokens, narrow[i].Tokens, "request %d", i)
		require.InDeltaSlice(t, wide[i].PolicyLogProbs, narrow[i].PolicyLogProbs, 1e-4)
	}
	_, err := NewSampler(lm, SamplerConfig{TopP: 1, Temperature: 1, MaxNewTokens: 8, BatchSize: 8, CallBytes: -1 << 20})
	require.ErrorContains(t, err, "--gen-call-mib -1")
}

// TestSamplerFirstChunkBudget: a prompt's first chunk is fed no past
// (its rows are empty), so the call budget is sized over the chunk
// alone, not over the cache's capacity: a budget that holds every
// prompt's first chunk at once prefills them in one call, though it
// would hold fewer rows over the whole capacity.
func TestSamplerFirstChunkBudget(t *testing.T) {
	lm := samplerTinyLM(t)
	n, width := len(samplerPrompts), 0
	for _, p := range samplerPrompts {
		width = max(width, len(p))
	}
	capacity := width + 1 // the longest prompt and its one new token
	// The smallest budget that holds n rows of the first chunk.
	budget := int64(1)
	for lm.CallRowsWithin(budget, 0, width) < n {
		budget *= 2
	}
	for lo := budget / 2; lo+1 < budget; {
		if mid := (lo + budget) / 2; lm.CallRowsWithin(mid, 0, width) >= n {
			budget = mid
		} else {
			lo = mid
		}
	}
	require.Less(t, lm.CallRowsWithin(budget, capacity, width), n, "over the capacity the budget holds fewer rows")
	s, err := NewSampler(lm, SamplerConfig{TopP: 1, Temperature: 1, MaxNewTokens: 1, BatchSize: 8, CallBytes: budget})
	require.NoError(t, err)
	_, st, err := s.Generate(context.Background(), samplerRequests(5), nil)
	require.NoError(t, err)
	require.Equal(t, 1, st.ForwardCalls, "one prefill call, and no decode step for a single token")
	s.Release()
}

// retireShifting is how retire worked before it moved the last running
// row into a finished one's place: every running row after a finished
// one moves up, keeping the batch's order. It counts in *middle the calls
// that found a finished row before a running one (where the two differ).
func retireShifting(middle *int) func(s *Sampler, active []*row) ([]*row, error) {
	return func(s *Sampler, active []*row) ([]*row, error) {
		if i := slices.IndexFunc(active, func(r *row) bool { return r.done }); i >= 0 && slices.ContainsFunc(active[i:], func(r *row) bool { return !r.done }) {
			*middle++
		}
		kept := active[:0]
		for i, r := range active {
			if r.done {
				continue
			}
			if err := s.cache.Move(len(kept), i); err != nil {
				return nil, err
			}
			kept = append(kept, r)
		}
		return kept, nil
	}
}

// TestSamplerRetireOrder: retiring a finished row by moving the last
// running row into its place (which reorders the batch) gives the
// completions, bit for bit, of retiring it by shifting every later row
// up (which keeps the order), on the decode graph and on the sampling
// graph, with and without refill.
func TestSamplerRetireOrder(t *testing.T) {
	rt := modeltest.Runtime(t)
	dir := t.TempDir()
	require.NoError(t, qwen3.WriteDir(dir, qwen3.Tiny(), 17))
	pol, err := model.OpenPolicy(context.Background(), rt, filepath.Join(dir, "model.onnx"), t.TempDir(), model.PolicyOptions{})
	require.NoError(t, err)
	defer pol.Close()
	plain := samplerTinyLM(t)
	r := rand.New(rand.NewPCG(3, 3))
	reqs := make([]Request, 23)
	for i := range reqs {
		p := make([]int32, 1+r.IntN(40))
		for j := range p {
			p[j] = int32(r.IntN(100))
		}
		reqs[i] = Request{Prompt: p, Seed: uint64(100 + i)}
	}
	stops := []int32{3, 11, 19, 27, 35, 43, 51, 59} // about one draw in 12 ends a row
	for _, tc := range []struct {
		name   string
		lm     *model.LM
		batch  int
		refill bool
	}{
		{"decode graph, refill", pol.LM, 8, true},
		{"decode graph, one batch", pol.LM, 32, false},
		{"decode graph, batches", pol.LM, 6, false},
		{"sampling graph, refill", plain, 5, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := SamplerConfig{TopP: 1, Temperature: 1, MaxNewTokens: 30, BatchSize: tc.batch, Refill: tc.refill, StopIDs: stops}
			swap, err := NewSampler(tc.lm, cfg)
			require.NoError(t, err)
			shift, err := NewSampler(tc.lm, cfg)
			require.NoError(t, err)
			middle := 0
			shift.retireWith = retireShifting(&middle)
			want, wantSt, err := shift.Generate(context.Background(), reqs, nil)
			require.NoError(t, err)
			got, gotSt, err := swap.Generate(context.Background(), reqs, nil)
			require.NoError(t, err)
			require.Greater(t, middle, 2, "rows finished before running ones")
			require.Equal(t, want, got)
			require.Equal(t, wantSt.GeneratedTokens, gotSt.GeneratedTokens)
			require.Equal(t, wantSt.ForwardCalls, gotSt.ForwardCalls)
		})
	}
}

// TestSamplerPrefillHoldsFirstTokens: Stats.Prefill ends once each row's
// first token is sampled from its prompt's last logits, so that Elapsed
// less Prefill is the decode steps' time alone (bench generate's
// tokens_per_second divides the tokens after the first by it). It ended
// before that sampling, whose time fell in the decode steps' share: with
// --new-tokens 1 (no decode step) the "decode" time was the first
// tokens' sampling, half the call here, rather than next to nothing.
func TestSamplerPrefillHoldsFirstTokens(t *testing.T) {
	rt := modeltest.Runtime(t)
	dir := t.TempDir()
	cfg := qwen3.Tiny()
	cfg.Vocab = 1 << 17 // sampling a row's token costs as a real vocabulary's
	require.NoError(t, qwen3.WriteDir(dir, cfg, 3))
	lm, err := model.OpenLM(rt, filepath.Join(dir, "model.onnx"), model.LMOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { lm.Close() })
	const rows = 32
	s, err := NewSampler(lm, SamplerConfig{TopP: 1, Temperature: 1, MaxNewTokens: 1, BatchSize: rows})
	require.NoError(t, err)
	reqs := make([]Request, rows)
	for i := range reqs {
		reqs[i] = Request{Prompt: []int32{40, 41, 42}, Seed: uint64(i)}
	}
	_, _, err = s.Generate(context.Background(), reqs, nil) // warm the sessions
	require.NoError(t, err)
	_, st, err := s.Generate(context.Background(), reqs, nil)
	require.NoError(t, err)
	require.Equal(t, rows, st.GeneratedTokens)
	t.Logf("elapsed %v, prefill %v", st.Elapsed, st.Prefill)
	require.Less(t, st.Elapsed-st.Prefill, st.Elapsed/10, "no decode step ran: the time after the prefill is bookkeeping")
}
