package rollout

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"runtime/debug"
	"slices"
	"sync"
	"time"

	"github.com/spiral-rl/spiral/model"
)

// FinishReason says why a completion ended.
type FinishReason string

const (
	// FinishStop: a stop id was sampled (SamplerConfig.StopIDs; spiral
	// has no stop strings), or a serving engine answered finish_reason
	// "stop" (or "length" for a completion whose last token, at the
	// limit, is a stop id).
	FinishStop FinishReason = "stop"
	// FinishLength: MaxNewTokens were generated (or the context is full).
	FinishLength FinishReason = "length"
	// FinishPadding: a serving engine sampled an id past the tokenizer's,
	// one of the model's padding logits (OpenAIConfig.PolicyVocab), and
	// the completion was cut before it, short of any token limit. Such a
	// trace is judged as one cut at the limit (Cut), but counted apart.
	FinishPadding FinishReason = "padding"
)

// Cut reports whether a completion that ended for f was cut short
// (FinishLength, FinishPadding) rather than stopped by the model.
func (f FinishReason) Cut() bool {
	return f == FinishLength || f == FinishPadding
}

// SamplerConfig configures a Sampler. DefaultSamplerConfig gives the
// defaults; Validate lists what is wrong, naming the flags.
type SamplerConfig struct {
	// Temperature divides the logits; 0 means greedy decoding (argmax).
	Temperature float64
	// TopP keeps the smallest most-probable set with mass >= TopP, in
	// (0, 1], decided in exact arithmetic with TopP read as the decimal
	// it prints as (topP); 1 disables it.
	TopP float64
	// TopK keeps the K most probable ids and any tied with the K-th (as
	// Hugging Face and vLLM do); 0 disables it.
	TopK int
	// MaxNewTokens bounds each completion.
	MaxNewTokens int
	// ContextLength, when > 0, is the model's context in positions: a
	// completion also stops (FinishLength) when prompt + completion fill
	// it, and a prompt that leaves no room is an error.
	ContextLength int
	// StopIDs end a completion when sampled (the id is kept as the last
	// token), e.g. <|im_end|> and <|endoftext|>.
	StopIDs []int32
	// VocabLimit, when > 0, restricts sampling to ids below it: real Qwen3
	// logits are 151,936 wide but the tokenizer has 151,669 ids. The
	// policy is then the softmax over those ids (PolicyLogProbs), as the
	// learner's must be (model.ExecutorOptions.VocabLimit).
	VocabLimit int
	// BatchSize is the number of rows decoded together.
	BatchSize int
	// Refill, when true, replaces finished rows with waiting prompts so
	// that the batch stays full (admitting them in groups of at least a
	// quarter of the batch, see refillMin); when false, a new batch starts
	// only when the previous one has finished entirely.
	Refill bool
	// CallBytes bounds the temporaries of one model call (a prefill chunk
	// or a decode step): the rows are split into calls that stay within
	// it (model.LM.CallRowsWithin). 0 takes the LM's budget
	// (model.DefaultCallBytes, 512 MiB, sized for a CPU's memory; on an
	// H200 it left prefill at 4 rows a call for Qwen3-0.6B's shape and 1
	// for Qwen3-4B's).
	CallBytes int64
}

// DefaultSamplerConfig returns the sampling defaults: temperature 1 (the
// policy's own distribution, as the paper samples), no top-p or top-k,
// batches of 64 rows with refill. MaxNewTokens has no default here: the
// caller sizes it to the model.
func DefaultSamplerConfig() SamplerConfig {
	return SamplerConfig{Temperature: 1, TopP: 1, BatchSize: 64, Refill: true}
}

// Validate reports every invalid field.
func (c SamplerConfig) Validate() error {
	var errs []error
	if !(c.Temperature >= 0) || math.IsInf(c.Temperature, 0) {
		errs = append(errs, fmt.Errorf("--temperature %v: want a finite value >= 0 (0 = greedy)", c.Temperature))
	}
	if !(c.TopP > 0 && c.TopP <= 1) {
		errs = append(errs, fmt.Errorf("--top-p %v: want a probability mass in (0, 1] (1 = off)", c.TopP))
	}
	if c.TopK < 0 {
		errs = append(errs, fmt.Errorf("--top-k %d: want >= 0 (0 = off)", c.TopK))
	}
	if c.MaxNewTokens <= 0 {
		errs = append(errs, fmt.Errorf("--max-new-tokens %d: want > 0", c.MaxNewTokens))
	}
	if c.BatchSize <= 0 {
		errs = append(errs, fmt.Errorf("--gen-batch %d: want > 0", c.BatchSize))
	}
	if c.ContextLength < 0 {
		errs = append(errs, fmt.Errorf("context length %d: want >= 0 (0 = unknown)", c.ContextLength))
	}
	if c.VocabLimit < 0 {
		errs = append(errs, fmt.Errorf("vocab limit %d: want >= 0", c.VocabLimit))
	}
	if c.CallBytes < 0 {
		errs = append(errs, fmt.Errorf("--gen-call-mib %d: want >= 0 (0 = the default)", c.CallBytes>>20))
	}
	return errors.Join(errs...)
}

// Request is one prompt to complete. Seed makes the completion
// reproducible: each request draws from its own generator, seeded from
// (Seed, 0), so the random numbers it draws do not depend on the batch
// it runs in. Its logits may, in their last bits: a model call of one
// row rounds differently from a call of several (ONNX Runtime's kernels
// take other paths for a product of one row), and a prompt's prefill
// chunks are cut where the longest prompt admitted with it puts them
// (the prompts are right-aligned: a prompt of 300 tokens is prefilled
// as 256 + 44 alone, as 56 + 244 beside one of 500), either of which
// can move a draw that falls on a boundary.
type Request struct {
	Prompt []int32
	Seed   uint64
}

// Completion is one generated sequence.
type Completion struct {
	// Tokens are the generated ids (a sampled stop id is the last one).
	Tokens []int32
	// PolicyLogProbs[t] is log pi(Tokens[t]): the model's own
	// distribution (temperature 1, no top-k/top-p) over the ids below
	// SamplerConfig.VocabLimit (all of them without one), the pi_old of
	// the policy-gradient ratio, whatever distribution the sampler drew
	// from. The learner's policy is over the same ids
	// (model.ExecutorOptions.VocabLimit).
	PolicyLogProbs []float32
	// EngineLogProbs[t], from a serving engine that returned them, is the
	// engine's log-probability of Tokens[t]: vLLM's (V1) of the raw model
	// distribution, as PolicyLogProbs; SGLang's of the distribution at the
	// sampling temperature, unless it runs with
	// SGLANG_RETURN_ORIGINAL_LOGPROB=True (the two agree at temperature
	// 1). Training never uses them in the loss; it reports how far they
	// are from the learner's own (a weight-sync or numerics check). nil
	// otherwise.
	EngineLogProbs []float32
	// Finish is why generation stopped.
	Finish FinishReason
	// PromptTokens is len(Request.Prompt).
	PromptTokens int
}

// Stats summarises one Generate call.
type Stats struct {
	// PromptTokens and GeneratedTokens are totals over all requests.
	PromptTokens, GeneratedTokens int
	// PrefilledTokens counts the prompt tokens the model ran on: a prompt
	// admitted together with an equal one (a problem's N search traces,
	// an aggregation prompt's traces) is prefilled once and the others'
	// cache rows copied from it.
	PrefilledTokens int
	// ForwardCalls counts model calls (prefills and decode steps).
	ForwardCalls int
	// PeakCacheLen is the longest a row of the KV cache grew (positions).
	PeakCacheLen int
	// Prefill is the wall time of the prefill calls and of the sampling
	// of each row's first token from their logits (the rest of Elapsed
	// is the decode steps and their sampling).
	Prefill time.Duration
	// Elapsed is the wall time of the call.
	Elapsed time.Duration
	// FittedPrompts counts the call's aggregation prompts that were longer
	// than the prompt limit (the model's context less the trace length)
	// and had their candidates cut further to fit (aggregationPrompt).
	// Pipeline and RSA set it; a Generator leaves it 0.
	FittedPrompts int
}

// Progress receives the number of newly generated tokens after each step;
// nil is allowed.
type Progress func(newTokens int)

// Sampler generates completions with an LM: prompts are prefilled (in
// chunks of positions, rows of different lengths together), then decoded
// one token per step. Each row holds its own tokens in a KV cache
// (model.RowCache) allocated once per generation and kept for the next
// one that fits; rows that finish leave the batch and, with Refill,
// waiting prompts are prefilled into the freed rows.
type Sampler struct {
	lm  *model.LM
	cfg SamplerConfig
	// parallelMin is parallelSampleMin (tests lower it).
	parallelMin int
	// retireWith, when set (tests), retires finished rows instead of
	// retire.
	retireWith func(s *Sampler, active []*row) ([]*row, error)
	cache      *model.RowCache
	// logits holds each row's last logits; callLogits one Extend call's
	// output; tokens and real a decode step's input. All are kept across
	// steps so that decoding makes no garbage per token (with the cache
	// outside the heap, garbage is what the Go heap grows by).
	logits, callLogits []float32
	tokens             []int64
	real               []int
}

// NewSampler checks cfg and returns a Sampler.
func NewSampler(lm *model.LM, cfg SamplerConfig) (*Sampler, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("rollout: sampler: %w", err)
	}
	if cfg.VocabLimit > lm.Signature().Vocab {
		return nil, fmt.Errorf("rollout: sampler: vocab limit %d exceeds the model's %d logits", cfg.VocabLimit, lm.Signature().Vocab)
	}
	return &Sampler{lm: lm, cfg: cfg, parallelMin: parallelSampleMin}, nil
}

// Release frees the KV cache and the buffers the sampler keeps between
// generations (the next Generate allocates them again), e.g. before a
// training step; also after a generation that failed on non-finite
// logits, which dropped the cache but not the logits buffers.
func (s *Sampler) Release() {
	if s.cache == nil && s.logits == nil && s.callLogits == nil && s.tokens == nil && s.real == nil {
		return // nothing held: no collection to force
	}
	if s.cache != nil {
		s.freeCache()
	}
	s.logits, s.callLogits, s.tokens, s.real = nil, nil, nil, nil
	debug.FreeOSMemory() // hand the heap buffers back now, not at some later collection
}

// freeCache unmaps the KV cache now rather than when a collection finds
// it unreachable.
func (s *Sampler) freeCache() {
	if err := s.cache.Free(); err != nil {
		panic(fmt.Sprintf("rollout: sampler: %v", err)) // munmap of our own mapping: a bug, not an input error
	}
	s.cache = nil
}

// dropPoisonedCache frees the KV cache after a generation met logits
// that are not finite: the row's keys and values in the cache are not
// finite either, and a later generation reusing the buffers would read
// them in its rows' unfilled slots wherever attention spans the whole
// capacity under the mask (the sampling graph, the device-resident
// path), where 0 x NaN is NaN. The next generation allocates the cache
// anew (zeroed).
func (s *Sampler) dropPoisonedCache() {
	if s.cache != nil {
		s.freeCache()
	}
}

// CopiedBytes returns the bytes the sampler's LM has copied between host
// and device memory so far (LM.CopiedBytes: 0 unless generation is
// device-resident).
func (s *Sampler) CopiedBytes() int64 { return s.lm.CopiedBytes() }

// CacheBytes returns the size of the KV cache the sampler holds (0 when
// none).
func (s *Sampler) CacheBytes() int64 {
	if s.cache == nil {
		return 0
	}
	return s.cache.Bytes()
}

// PrefillChunk is how many prompt positions one prefill call feeds.
const PrefillChunk = 256

// row is one sequence in flight.
type row struct {
	req  int // index into the requests
	rng  *rand.Rand
	ctx  []int32 // prompt + generated so far
	out  *Completion
	done bool
	// limit is how many tokens this row may generate.
	limit int
	// err, when set, is why the row's last logits could not be sampled
	// (sampleInto); Generate returns it.
	err error
}

// Generate completes every request and returns the completions in request
// order. It stops early with ctx's error, or with an error naming the
// request when the model's logits are not finite (NaN or +Inf, or all
// -Inf), from which no token can be sampled.
func (s *Sampler) Generate(ctx context.Context, reqs []Request, progress Progress) ([]Completion, Stats, error) {
	start := time.Now()
	var st Stats
	outs := make([]Completion, len(reqs))
	capacity := 0
	for i, r := range reqs {
		if len(r.Prompt) == 0 {
			return nil, st, fmt.Errorf("rollout: request %d has an empty prompt", i)
		}
		if c := s.cfg.ContextLength; c > 0 && len(r.Prompt) >= c {
			return nil, st, fmt.Errorf("rollout: request %d: prompt of %d tokens leaves no room in the model's %d-position context", i, len(r.Prompt), c)
		}
		outs[i].PromptTokens = len(r.Prompt)
		st.PromptTokens += len(r.Prompt)
		capacity = max(capacity, len(r.Prompt)+s.rowLimit(len(r.Prompt)))
	}
	if len(reqs) == 0 {
		return outs, st, nil
	}
	rows := min(s.cfg.BatchSize, len(reqs))
	if s.cache == nil || !s.cache.Fit(rows, capacity) {
		if s.cache != nil {
			s.freeCache() // the old buffers go before the new ones come
		}
		var err error
		if s.cache, err = s.lm.NewRowCache(rows, capacity); err != nil {
			return nil, st, err
		}
	}
	queue := make([]int, len(reqs))
	for i := range queue {
		queue[i] = i
	}
	var (
		active  []*row // active[i] holds cache row i
		scratch []sampleScratch
	)
	vocab := s.lm.Signature().Vocab
	limit := vocab
	if s.cfg.VocabLimit > 0 {
		limit = s.cfg.VocabLimit
	}
	for len(queue) > 0 || len(active) > 0 {
		if err := ctx.Err(); err != nil {
			return nil, st, err
		}
		// Admit waiting prompts: all at once into an empty batch, or (with
		// Refill) into the free rows of a running one.
		free := rows - len(active)
		if len(queue) > 0 && free > 0 && (len(active) == 0 || s.cfg.Refill && free >= s.refillMin(len(queue))) {
			n := min(free, len(queue))
			fresh := make([]*row, n)
			for i, ri := range queue[:n] {
				fresh[i] = &row{req: ri, rng: rand.New(rand.NewPCG(reqs[ri].Seed, 0)),
					ctx: append([]int32(nil), reqs[ri].Prompt...), out: &outs[ri], limit: s.rowLimit(len(reqs[ri].Prompt))}
			}
			queue = queue[n:]
			t0 := time.Now()
			last, calls, fed, err := s.prefill(ctx, fresh, len(active))
			if err != nil {
				st.Prefill += time.Since(t0)
				return nil, st, err
			}
			st.ForwardCalls += calls
			st.PrefilledTokens += fed
			for i := range fresh {
				st.PeakCacheLen = max(st.PeakCacheLen, s.cache.Len(len(active)+i))
			}
			// Sample each fresh row's first token from its prompt's last
			// logits: the prefill's token, in its time.
			s.sampleRows(fresh, last, vocab, limit, &scratch)
			st.Prefill += time.Since(t0)
			if err := rowsErr(fresh); err != nil {
				s.dropPoisonedCache()
				return nil, st, err
			}
			active = append(active, fresh...)
			st.GeneratedTokens += len(fresh)
			if progress != nil {
				progress(len(fresh))
			}
		}
		var err error
		if active, err = s.retireRows(active); err != nil {
			return nil, st, err
		}
		if len(active) == 0 {
			continue
		}
		// One decode step for every active row.
		B := len(active)
		s.tokens, s.real = slices.Grow(s.tokens[:0], B)[:B], slices.Grow(s.real[:0], B)[:B]
		for i, r := range active {
			s.tokens[i] = int64(r.ctx[len(r.ctx)-1])
			s.real[i] = 1
		}
		logits, calls, err := s.extend(ctx, 0, 1, s.tokens, s.real)
		if err != nil {
			return nil, st, err
		}
		st.ForwardCalls += calls
		for i := range active {
			st.PeakCacheLen = max(st.PeakCacheLen, s.cache.Len(i))
		}
		s.sampleRows(active, logits, vocab, limit, &scratch)
		if err := rowsErr(active); err != nil {
			s.dropPoisonedCache()
			return nil, st, err
		}
		st.GeneratedTokens += B
		if progress != nil {
			progress(B)
		}
		if active, err = s.retireRows(active); err != nil {
			return nil, st, err
		}
	}
	st.Elapsed = time.Since(start)
	return outs, st, nil
}

// prefill feeds the prompts of fresh, which occupy the cache rows r0..,
// and returns each row's last logits [len(fresh), vocab], the number of
// model calls and the prompt tokens fed. Rows with equal prompts share
// one prefill: fresh is reordered (in place) so that the first of each
// prompt come first, only those are run, and each repeat's cache row
// and logits are copied from its first.
func (s *Sampler) prefill(ctx context.Context, fresh []*row, r0 int) ([]float32, int, int, error) {
	n := len(fresh)
	firstOf := shareEqualPrompts(fresh)
	u := n - len(firstOf)
	vocab := s.lm.Signature().Vocab
	last, calls, err := s.prefillRows(ctx, fresh[:u], r0)
	if err != nil {
		return nil, calls, 0, err
	}
	fed := 0
	for _, r := range fresh[:u] {
		fed += len(r.ctx)
	}
	// Room for the repeats' rows after the firsts' (kept as the sampler's
	// logits buffer for the steps to come).
	last = slices.Grow(last, (n-u)*vocab)[:n*vocab]
	s.logits = last
	for i, f := range firstOf {
		dst := u + i
		if err := s.cache.Move(r0+dst, r0+f); err != nil {
			return nil, calls, fed, err
		}
		copy(last[dst*vocab:(dst+1)*vocab], last[f*vocab:(f+1)*vocab])
	}
	return last, calls, fed, nil
}

// shareEqualPrompts reorders rows (stably) so that each prompt's first
// row comes before every repeat, and returns, for each repeat in its new
// place after the firsts, the index of the first with its prompt.
func shareEqualPrompts(rows []*row) []int {
	firstIdx := make(map[string]int, len(rows))
	var firsts, repeats []*row
	var firstOf []int
	for _, r := range rows {
		key := promptKey(r.ctx)
		if f, seen := firstIdx[key]; seen {
			repeats = append(repeats, r)
			firstOf = append(firstOf, f)
			continue
		}
		firstIdx[key] = len(firsts)
		firsts = append(firsts, r)
	}
	copy(rows, firsts)
	copy(rows[len(firsts):], repeats)
	return firstOf
}

// promptKey is a map key equal for equal token sequences.
func promptKey(ids []int32) string {
	b := make([]byte, 4*len(ids))
	for i, id := range ids {
		binary.LittleEndian.PutUint32(b[4*i:], uint32(id))
	}
	return string(b)
}

// prefillRows feeds the prompts of fresh, which occupy the cache rows
// r0.., in chunks of PrefillChunk positions: the prompts are
// right-aligned, so that in every chunk each row's new tokens are its
// last entries and the last chunk ends every prompt. It returns each
// row's last logits [len(fresh), vocab] and the number of model calls.
func (s *Sampler) prefillRows(ctx context.Context, fresh []*row, r0 int) ([]float32, int, error) {
	n := len(fresh)
	width := 0
	for i, r := range fresh {
		s.cache.Clear(r0 + i)
		width = max(width, len(r.ctx))
	}
	var last []float32
	calls := 0
	for c0 := 0; c0 < width; c0 += PrefillChunk {
		S := min(PrefillChunk, width-c0)
		tokens := make([]int64, n*S)
		real := make([]int, n)
		for i, r := range fresh {
			first := width - len(r.ctx) // the prompt's first column
			lo := max(c0, first)
			real[i] = max(0, c0+S-lo)
			for col := lo; col < c0+S; col++ {
				tokens[i*S+col-c0] = int64(r.ctx[col-first])
			}
		}
		var err error
		var k int
		if last, k, err = s.extend(ctx, r0, S, tokens, real); err != nil {
			return nil, calls, err
		}
		calls += k
	}
	return last, calls, nil
}

// extend runs one step of S positions on the cache rows r0..r0+len(real)
// (tokens [len(real), S], see model.LM.Extend) in groups of rows sized to
// the LM's call budget, and returns each row's last logits [rows, vocab]
// (in the sampler's buffer, valid until the next call) and the number of
// calls.
func (s *Sampler) extend(ctx context.Context, r0, S int, tokens []int64, real []int) ([]float32, int, error) {
	n := len(real)
	vocab := s.lm.Signature().Vocab
	if cap(s.logits) < n*vocab {
		s.logits = make([]float32, n*vocab)
	}
	out := s.logits[:n*vocab]
	group := s.lm.CallRowsWithin(s.cfg.CallBytes, s.cache.Past(r0, n), S)
	calls := 0
	for g0 := 0; g0 < n; g0 += group {
		g1 := min(n, g0+group)
		var err error
		s.callLogits, err = s.lm.Extend(ctx, s.cache, r0+g0, tokens[g0*S:g1*S], real[g0:g1], s.callLogits)
		if err != nil {
			return nil, calls, err
		}
		calls++
		buf := s.callLogits
		L := len(buf) / ((g1 - g0) * vocab)
		for i := g0; i < g1; i++ {
			at := ((i-g0)*L + L - 1) * vocab
			copy(out[i*vocab:(i+1)*vocab], buf[at:at+vocab])
		}
	}
	return out, calls, nil
}

// refillMin is the number of free rows worth a refill: each refill is a
// prefill of its own (a model call per chunk, however few rows it
// holds), so rows are admitted in groups of a quarter of the batch (or
// whatever is left in the queue).
func (s *Sampler) refillMin(queued int) int {
	return max(1, min(s.cfg.BatchSize/4, queued))
}

// sampleScratch is one worker's scratch space for sampleInto.
type sampleScratch struct {
	probs []float64
	order []int
}

// parallelSampleMin is the batch x vocabulary size from which rows are
// sampled on several goroutines: below it (tiny vocabularies) the
// goroutines cost more than the softmax they share.
const parallelSampleMin = 1 << 18

// sampleRows draws the next token of every row from its logits row
// ([len(rows), vocab]). Rows are independent (each has its own generator),
// so with wide vocabularies (Qwen3: 151,936) they are spread over
// GOMAXPROCS goroutines; the result does not depend on the split.
func (s *Sampler) sampleRows(rows []*row, logits []float32, vocab, limit int, scratch *[]sampleScratch) {
	workers := 1
	if len(rows)*vocab >= s.parallelMin {
		workers = min(len(rows), runtime.GOMAXPROCS(0))
	}
	for len(*scratch) < workers {
		*scratch = append(*scratch, sampleScratch{})
	}
	if workers == 1 {
		sc := &(*scratch)[0]
		for i, r := range rows {
			sc.probs, sc.order = s.sampleInto(r, logits[i*vocab:(i+1)*vocab], limit, sc.probs, sc.order)
		}
		return
	}
	var wg sync.WaitGroup
	per := (len(rows) + workers - 1) / workers
	for w := 0; w < workers; w++ {
		lo, hi := w*per, min(len(rows), (w+1)*per)
		if lo >= hi {
			break
		}
		wg.Add(1)
		go func(sc *sampleScratch, lo, hi int) {
			defer wg.Done()
			for i := lo; i < hi; i++ {
				sc.probs, sc.order = s.sampleInto(rows[i], logits[i*vocab:(i+1)*vocab], limit, sc.probs, sc.order)
			}
		}(&(*scratch)[w], lo, hi)
	}
	wg.Wait()
}

// sampleInto draws r's next token from one row of logits and records it
// with its log-probability under the policy (temperature 1, the ids
// below limit: the ids at and above it are never drawn, so the policy
// gives them probability 0): the sampling distribution's own where it
// is the policy, else from the row's log-sum-exp at temperature 1, which
// the softmax gives at temperature 1 and LogProbOf computes again at
// another.
func (s *Sampler) sampleInto(r *row, full []float32, limit int, probs []float64, order []int) ([]float64, []int) {
	logits := full[:limit]
	var id int
	var logp float64
	plain := s.cfg.Temperature == 1 && s.cfg.TopK == 0 && s.cfg.TopP >= 1
	// lse is logSumExp(logits) where the softmax's weights gave it: at
	// temperature 1.
	var lse float64
	if s.cfg.Temperature == 0 {
		id = greedy(logits)
	} else {
		var maxv, sum float64
		if k := s.cfg.TopK; k > 0 && k < len(logits) {
			// The kept ids' probabilities are the softmax of their
			// logits alone, as HF computes them: the weights normalised
			// once, not probabilities divided again (eight tied maxima
			// kept got 1/8 less an ulp each, and top-p 0.75 then kept
			// seven of them, not six).
			probs, maxv, sum = softmaxWeights(logits, s.cfg.Temperature, probs)
		} else {
			probs, maxv, sum = softmax(logits, s.cfg.Temperature, probs)
		}
		if s.cfg.Temperature == 1 {
			lse = maxv + math.Log(sum) // logSumExp's own sum: the same bits
		}
		order = topK(probs, s.cfg.TopK, order)
		if s.cfg.TopP < 1 {
			order = topP(probs, s.cfg.TopP, order)
		}
		id = draw(probs, r.rng.Float64())
		logp = math.Log(probs[id])
	}
	switch {
	case plain:
	case s.cfg.Temperature == 1:
		// Temperature 1 under top-k or top-p: LogProbOf's value without
		// its second pass over the row.
		logp = float64(logits[id]) - lse
	default:
		logp = LogProbOf(logits, id)
	}
	if math.IsNaN(logp) || math.IsInf(logp, 0) {
		// NaN or +Inf logits (or a row all -Inf) leave no distribution:
		// draw would fall through to the last id and the loss would get a
		// NaN pi_old. Finite logits always give a finite log-probability.
		r.err = fmt.Errorf("rollout: request %d, generated token %d: the model's logits are not finite (NaN, +Inf, or all -Inf): log-probability %v", r.req, len(r.out.Tokens), logp)
		r.done = true
		return probs, order
	}
	r.ctx = append(r.ctx, int32(id))
	c := r.out
	c.Tokens = append(c.Tokens, int32(id))
	c.PolicyLogProbs = append(c.PolicyLogProbs, float32(logp))
	switch {
	case s.isStopID(int32(id)):
		r.done, c.Finish = true, FinishStop
	case len(c.Tokens) >= r.limit:
		r.done, c.Finish = true, FinishLength
	}
	return probs, order
}

// rowsErr returns the first error a row's sampling left.
func rowsErr(rows []*row) error {
	for _, r := range rows {
		if r.err != nil {
			return r.err
		}
	}
	return nil
}

// rowLimit is how many tokens a row with a prompt of n tokens may
// generate: MaxNewTokens, or what is left of the context.
func (s *Sampler) rowLimit(n int) int {
	if c := s.cfg.ContextLength; c > 0 {
		return min(s.cfg.MaxNewTokens, c-n)
	}
	return s.cfg.MaxNewTokens
}

func (s *Sampler) isStopID(id int32) bool {
	return slices.Contains(s.cfg.StopIDs, id)
}

// retireRows is retire, or the tests' retireWith.
func (s *Sampler) retireRows(active []*row) ([]*row, error) {
	if s.retireWith != nil {
		return s.retireWith(s, active)
	}
	return s.retire(active)
}

// retire drops finished rows from the batch: each finished row's place
// takes the last running row (one cache Move), so that active[i] keeps
// holding row i and no other row moves. The running rows' order changes,
// which changes nothing they compute: each row draws from its own
// generator, and a call's rows are computed independently of their
// places in it (TestSamplerRetireOrder; measured bit for bit on the
// decode graph, calls of 2 to 64 rows). One caveat: a call of one row
// rounds differently (measured on the embedded model's decode graph:
// most of a row's logits differ in their last bits run alone; ONNX
// Runtime's kernels take other paths for a product of one row), so
// where --gen-call-mib splits a step into calls, which row is left
// alone in the last call depends on the order.
// Shifting every later row up instead, as retire did before, cost a Move
// per row after the finished one: 4-5% of an aggregation's generation on
// the embedded model.
func (s *Sampler) retire(active []*row) ([]*row, error) {
	n := len(active)
	for i := 0; i < n; i++ {
		if !active[i].done {
			continue
		}
		for n > i+1 && active[n-1].done {
			n-- // finished rows at the end leave without moving
		}
		n--
		if i == n {
			break
		}
		if err := s.cache.Move(i, n); err != nil {
			return nil, fmt.Errorf("rollout: %w", err)
		}
		active[i] = active[n]
	}
	clear(active[n:]) // the finished rows, for the collector
	return active[:n], nil
}
