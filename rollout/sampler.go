package rollout

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/spiral-rl/spiral/model"
)

// FinishReason says why a completion ended.
type FinishReason string

const (
	// FinishStop: a stop id was sampled or a stop string appeared.
	FinishStop FinishReason = "stop"
	// FinishLength: MaxNewTokens were generated (or the context is full).
	FinishLength FinishReason = "length"
)

// SamplerConfig configures a Sampler. DefaultSamplerConfig gives the
// defaults; Validate lists what is wrong, naming the flags.
type SamplerConfig struct {
	// Temperature divides the logits; 0 means greedy decoding (argmax).
	Temperature float64
	// TopP keeps the smallest most-probable set with mass >= TopP, in
	// (0, 1]; 1 disables it.
	TopP float64
	// TopK keeps the K most probable ids; 0 disables it.
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
	// logits are 151,936 wide but the tokenizer has 151,669 ids.
	VocabLimit int
	// BatchSize is the number of rows decoded together.
	BatchSize int
	// Refill, when true, replaces finished rows with waiting prompts so
	// that the batch stays full (admitting them in groups of at least a
	// quarter of the batch, see refillMin); when false, a new batch starts
	// only when the previous one has finished entirely.
	Refill bool
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
	return errors.Join(errs...)
}

// Request is one prompt to complete. Seed makes the completion
// reproducible and independent of the batch it runs in: each request draws
// from its own generator, seeded from (Seed, 0).
type Request struct {
	Prompt []int32
	Seed   uint64
}

// Completion is one generated sequence.
type Completion struct {
	// Tokens are the generated ids (a sampled stop id is the last one).
	Tokens []int32
	// PolicyLogProbs[t] is log pi(Tokens[t]): the model's own
	// distribution (temperature 1, every logit, no top-k/top-p), the
	// pi_old of the policy-gradient ratio, whatever distribution the
	// sampler drew from.
	PolicyLogProbs []float32
	// Finish is why generation stopped.
	Finish FinishReason
	// PromptTokens is len(Request.Prompt).
	PromptTokens int
}

// Stats summarises one Generate call.
type Stats struct {
	// PromptTokens and GeneratedTokens are totals over all requests.
	PromptTokens, GeneratedTokens int
	// ForwardCalls counts model calls (prefills and decode steps).
	ForwardCalls int
	// PeakCacheLen is the longest the batch's KV cache grew (positions).
	PeakCacheLen int
	// Elapsed is the wall time of the call.
	Elapsed time.Duration
}

// Progress receives the number of newly generated tokens after each step;
// nil is allowed.
type Progress func(newTokens int)

// Sampler generates completions with an LM: prompts are left-padded into
// a batch, prefilled, then decoded one token per step with the KV cache.
// Rows that finish leave the batch; with Refill, waiting prompts are
// prefilled and merged into the running batch.
type Sampler struct {
	lm  *model.LM
	cfg SamplerConfig
	// parallelMin is parallelSampleMin (tests lower it).
	parallelMin int
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

// row is one sequence in flight.
type row struct {
	req  int // index into the requests
	rng  *rand.Rand
	ctx  []int32 // prompt + generated so far
	mask []int64 // attention over the cache's positions (0 = padding)
	pos  int64   // next position id
	out  *Completion
	done bool
	// limit is how many tokens this row may generate.
	limit int
}

// Generate completes every request and returns the completions in request
// order. It stops early with ctx's error.
func (s *Sampler) Generate(ctx context.Context, reqs []Request, progress Progress) ([]Completion, Stats, error) {
	start := time.Now()
	var st Stats
	outs := make([]Completion, len(reqs))
	for i, r := range reqs {
		if len(r.Prompt) == 0 {
			return nil, st, fmt.Errorf("rollout: request %d has an empty prompt", i)
		}
		if c := s.cfg.ContextLength; c > 0 && len(r.Prompt) >= c {
			return nil, st, fmt.Errorf("rollout: request %d: prompt of %d tokens leaves no room in the model's %d-position context", i, len(r.Prompt), c)
		}
		outs[i].PromptTokens = len(r.Prompt)
		st.PromptTokens += len(r.Prompt)
	}
	queue := make([]int, len(reqs))
	for i := range queue {
		queue[i] = i
	}
	var (
		active  []*row
		cache   *model.KVCache
		logits  []float32
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
		free := s.cfg.BatchSize - len(active)
		if len(queue) > 0 && free > 0 && (len(active) == 0 || s.cfg.Refill && free >= s.refillMin(len(queue))) {
			n := min(free, len(queue))
			fresh := make([]*row, n)
			for i, ri := range queue[:n] {
				fresh[i] = &row{req: ri, rng: rand.New(rand.NewPCG(reqs[ri].Seed, 0)),
					ctx: append([]int32(nil), reqs[ri].Prompt...), out: &outs[ri], limit: s.rowLimit(len(reqs[ri].Prompt))}
			}
			queue = queue[n:]
			var err error
			var freshLogits []float32
			cache, freshLogits, err = s.admit(ctx, cache, active, fresh)
			if err != nil {
				return nil, st, err
			}
			st.ForwardCalls++
			// Sample each fresh row's first token from its prompt's last logits.
			s.sampleRows(fresh, freshLogits, vocab, limit, &scratch)
			active = append(active, fresh...)
			st.GeneratedTokens += len(fresh)
			if progress != nil {
				progress(len(fresh))
			}
		}
		active = s.retire(active, cache)
		if len(active) == 0 {
			continue
		}
		s.trimPadding(active, cache, false)
		// One decode step for every active row.
		B := len(active)
		P := cache.Len()
		step := model.Step{Batch: B, Seq: 1, InputIDs: make([]int64, B), AttentionMask: make([]int64, 0, B*(P+1)), PositionIDs: make([]int64, B)}
		for i, r := range active {
			step.InputIDs[i] = int64(r.ctx[len(r.ctx)-1])
			r.mask = append(r.mask, 1)
			step.AttentionMask = append(step.AttentionMask, r.mask...)
			step.PositionIDs[i] = r.pos
			r.pos++
		}
		var err error
		logits, err = s.lm.Forward(ctx, step, cache, logits)
		if err != nil {
			return nil, st, err
		}
		st.ForwardCalls++
		st.PeakCacheLen = max(st.PeakCacheLen, cache.Len())
		s.sampleRows(active, logits, vocab, limit, &scratch)
		st.GeneratedTokens += B
		if progress != nil {
			progress(B)
		}
		active = s.retire(active, cache)
	}
	st.Elapsed = time.Since(start)
	return outs, st, nil
}

// refillMin is the number of free rows worth a refill: each refill costs a
// prefill and a cache merge that copies the running batch's cache, so
// rows are admitted in groups of a quarter of the batch (or whatever is
// left in the queue).
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
// with its log-probability under the policy (temperature 1, full
// vocabulary), computed again only when the sampling distribution differs.
func (s *Sampler) sampleInto(r *row, full []float32, limit int, probs []float64, order []int) ([]float64, []int) {
	logits := full[:limit]
	var id int
	var logp float64
	plain := s.cfg.Temperature == 1 && s.cfg.TopK == 0 && s.cfg.TopP >= 1 && limit == len(full)
	if s.cfg.Temperature == 0 {
		id = greedy(logits)
	} else {
		probs = softmax(logits, s.cfg.Temperature, probs)
		order = topK(probs, s.cfg.TopK, order)
		if s.cfg.TopP < 1 {
			order = topP(probs, s.cfg.TopP, order)
		}
		id = draw(probs, r.rng.Float64())
		logp = math.Log(probs[id])
	}
	if !plain {
		logp = LogProbOf(full, id)
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

// retire drops finished rows from the batch and compacts the cache.
func (s *Sampler) retire(active []*row, cache *model.KVCache) []*row {
	keep := make([]int, 0, len(active))
	kept := active[:0]
	for i, r := range active {
		if !r.done {
			keep = append(keep, i)
			kept = append(kept, r)
		}
	}
	if len(keep) != cache.Batch() && len(keep) > 0 {
		// Keep only fails on programmer error (rows out of order).
		if err := cache.Keep(keep); err != nil {
			panic(err)
		}
	}
	return kept
}

// admit prefills fresh rows and merges them with the running batch. It
// returns the new cache and the fresh rows' last-position logits
// [len(fresh), vocab].
func (s *Sampler) admit(ctx context.Context, cache *model.KVCache, active, fresh []*row) (*model.KVCache, []float32, error) {
	vocab := s.lm.Signature().Vocab
	if cache != nil && len(active) > 0 {
		// The merge copies the running cache anyway: drop its dead
		// columns first so that the merged length stays bounded.
		s.trimPadding(active, cache, true)
	}
	// Left-pad the fresh prompts to a common length T.
	T := 0
	for _, r := range fresh {
		T = max(T, len(r.ctx))
	}
	B := len(fresh)
	step := model.Step{Batch: B, Seq: T, InputIDs: make([]int64, B*T), AttentionMask: make([]int64, B*T), PositionIDs: make([]int64, B*T)}
	for i, r := range fresh {
		pad := T - len(r.ctx)
		r.mask = make([]int64, T)
		for t := 0; t < T; t++ {
			if t < pad {
				step.PositionIDs[i*T+t] = 1 // HF convention for padded positions; masked anyway
				continue
			}
			step.InputIDs[i*T+t] = int64(r.ctx[t-pad])
			step.AttentionMask[i*T+t] = 1
			step.PositionIDs[i*T+t] = int64(t - pad)
			r.mask[t] = 1
		}
		r.pos = int64(len(r.ctx))
	}
	// The fresh cache must hold the prompts plus the longest continuation
	// any merged row may still need.
	need := T + s.cfg.MaxNewTokens + 1
	if cache != nil {
		need = max(need, cache.Len()+s.cfg.MaxNewTokens+1)
	}
	fc := s.lm.NewKVCache(B, need)
	logits, err := s.lm.Forward(ctx, step, fc, nil)
	if err != nil {
		return nil, nil, err
	}
	last := logits
	if !s.lm.Signature().LastLogitsOnly {
		last = make([]float32, B*vocab)
		for i := 0; i < B; i++ {
			copy(last[i*vocab:(i+1)*vocab], logits[(i*T+T-1)*vocab:(i*T+T)*vocab])
		}
	}
	if cache == nil || len(active) == 0 {
		return fc, last, nil
	}
	merged, err := model.MergeKVCaches(cache, fc, s.cfg.MaxNewTokens+1)
	if err != nil {
		return nil, nil, err
	}
	// Left-pad the masks of whichever side is shorter.
	L := merged.Len()
	for _, r := range active {
		r.mask = leftPad(r.mask, L)
	}
	for _, r := range fresh {
		r.mask = leftPad(r.mask, L)
	}
	return merged, last, nil
}

// trimPadding drops the cache positions that every active row masks out
// (the left padding of rows that have left the batch), so the cache length
// tracks the longest live row instead of the number of steps taken. It
// copies the whole cache, so unless force is set it only does so when a
// quarter or more of the positions are dead.
func (s *Sampler) trimPadding(active []*row, cache *model.KVCache, force bool) {
	dead := cache.Len()
	for _, r := range active {
		lead := 0
		for lead < len(r.mask) && r.mask[lead] == 0 {
			lead++
		}
		dead = min(dead, lead)
	}
	if dead == 0 || (!force && dead*4 < cache.Len()) {
		return
	}
	if err := cache.TrimLeft(dead); err != nil {
		panic(err) // dead <= Len by construction
	}
	for _, r := range active {
		r.mask = r.mask[dead:]
	}
}

func leftPad(mask []int64, n int) []int64 {
	if len(mask) >= n {
		return mask
	}
	out := make([]int64, n)
	copy(out[n-len(mask):], mask)
	return out
}
