package model

import (
	"context"
	"errors"
	"fmt"

	ort "github.com/yalue/onnxruntime_go"

	"github.com/spiral-rl/spiral/model/onnx"
)

// Weight is a float32 tensor fed to a graph input. Data is shared with the
// session without a copy: ONNX Runtime reads it in place on every call, so
// in-place updates (an optimiser step) are seen by the next call, and Data
// must never be reallocated while an LM uses it.
type Weight struct {
	Shape []int64
	Data  []float32
}

// LMOptions configures OpenLM.
type LMOptions struct {
	// Weights feeds the graph's weight inputs by name (the rollout graph,
	// whose trainable initializers were turned into inputs). Every weight
	// input of the graph must be present.
	Weights map[string]Weight
}

// LM runs a causal language model of the optimum export signature with a
// KV cache: a prefill of a padded batch, then decode steps.
type LM struct {
	sig      *Signature
	sess     *ort.DynamicAdvancedSession
	inNames  []string
	outNames []string
	weights  []*ort.Tensor[float32]
	path     string
}

// OpenLM reads path's signature and opens an ONNX Runtime session on it.
// External data (model.onnx_data, model.onnx.data) is resolved by ONNX
// Runtime relative to the model file.
func OpenLM(rt *Runtime, path string, opt LMOptions) (*LM, error) {
	// The graph only: external weights stay on disk, which keeps this cheap
	// for multi-gigabyte exports.
	m, err := onnx.LoadGraph(path)
	if err != nil {
		return nil, fmt.Errorf("model: open LM: %w", err)
	}
	sig, err := ReadSignature(m.Graph(), path)
	if err != nil {
		return nil, err
	}
	lm := &LM{sig: sig, path: path}
	lm.inNames = []string{InputIDs, AttentionMask}
	if sig.HasPositionIDs {
		lm.inNames = append(lm.inNames, PositionIDs)
	}
	for i := 0; i < sig.Layers; i++ {
		lm.inNames = append(lm.inNames, PastName(i, false), PastName(i, true))
	}
	for _, w := range sig.Weights {
		src, ok := opt.Weights[w.Name]
		if !ok {
			lm.Close()
			return nil, fmt.Errorf("model: %s: weight input %q [%v] not supplied", path, w.Name, w.Shape)
		}
		if err := checkShape(w, src); err != nil {
			lm.Close()
			return nil, fmt.Errorf("model: %s: %w", path, err)
		}
		t, err := ort.NewTensor(ort.NewShape(src.Shape...), src.Data)
		if err != nil {
			lm.Close()
			return nil, fmt.Errorf("model: %s: wrap weight %q: %w", path, w.Name, err)
		}
		lm.weights = append(lm.weights, t)
		lm.inNames = append(lm.inNames, w.Name)
	}
	lm.outNames = []string{LogitsOutput}
	for i := 0; i < sig.Layers; i++ {
		lm.outNames = append(lm.outNames, PresentName(i, false), PresentName(i, true))
	}
	so, err := rt.NewSessionOptions()
	if err != nil {
		lm.Close()
		return nil, err
	}
	defer so.Destroy()
	lm.sess, err = ort.NewDynamicAdvancedSession(path, lm.inNames, lm.outNames, so)
	if err != nil {
		lm.Close()
		return nil, fmt.Errorf("model: %s: create session: %w", path, err)
	}
	return lm, nil
}

func checkShape(want TensorInfo, got Weight) error {
	n := int64(1)
	for _, d := range got.Shape {
		n *= d
	}
	if int64(len(got.Data)) != n {
		return fmt.Errorf("weight %q: shape %v needs %d values, have %d", want.Name, got.Shape, n, len(got.Data))
	}
	if len(want.Shape) != len(got.Shape) {
		return fmt.Errorf("weight %q: graph wants shape %v, supplied %v", want.Name, want.Shape, got.Shape)
	}
	for i := range want.Shape {
		if want.Shape[i] >= 0 && want.Shape[i] != got.Shape[i] {
			return fmt.Errorf("weight %q: graph wants shape %v, supplied %v", want.Name, want.Shape, got.Shape)
		}
	}
	return nil
}

// Signature returns the model's interface dimensions.
func (lm *LM) Signature() *Signature { return lm.sig }

// Close releases the session and the weight wrappers (not the weight data).
func (lm *LM) Close() error {
	var errs []error
	if lm.sess != nil {
		errs = append(errs, lm.sess.Destroy())
		lm.sess = nil
	}
	for _, t := range lm.weights {
		errs = append(errs, t.Destroy())
	}
	lm.weights = nil
	return errors.Join(errs...)
}

// Step is one forward call's token inputs for a batch of B rows and S new
// positions per row. Rows are left-padded: padding sits before the tokens.
type Step struct {
	// Batch is B, Seq is S.
	Batch, Seq int
	// InputIDs [B, S]; padded positions hold any valid id (e.g. 0).
	InputIDs []int64
	// AttentionMask [B, past+S]: 1 for real tokens, 0 for padding, over the
	// cached positions followed by the new ones.
	AttentionMask []int64
	// PositionIDs [B, S]: each row counts its own real tokens from 0 (padded
	// positions may hold anything, conventionally 1 as HF does).
	PositionIDs []int64
}

// Forward runs one step on the cache: it reads cache's past (length
// cache.Len()), appends S positions, and writes logits [B, S, vocab] (or
// [B, 1, vocab], the last position, when Signature().LastLogitsOnly) into
// logits (resized as needed and returned). The cache buffers are swapped,
// not copied, between calls.
func (lm *LM) Forward(ctx context.Context, st Step, cache *KVCache, logits []float32) ([]float32, error) {
	if err := ctx.Err(); err != nil {
		return logits, err
	}
	B, S, P := st.Batch, st.Seq, cache.Len()
	switch {
	case cache.batch != B:
		return logits, fmt.Errorf("model: forward: cache holds %d rows, step has %d", cache.batch, B)
	case len(st.InputIDs) != B*S:
		return logits, fmt.Errorf("model: forward: input_ids has %d values, want batch*seq = %d", len(st.InputIDs), B*S)
	case len(st.AttentionMask) != B*(P+S):
		return logits, fmt.Errorf("model: forward: attention_mask has %d values, want batch*(past+seq) = %d*(%d+%d)", len(st.AttentionMask), B, P, S)
	case lm.sig.HasPositionIDs && len(st.PositionIDs) != B*S:
		return logits, fmt.Errorf("model: forward: position_ids has %d values, want %d", len(st.PositionIDs), B*S)
	case P+S > cache.maxLen:
		return logits, fmt.Errorf("model: forward: cache of %d positions cannot hold %d+%d", cache.maxLen, P, S)
	case cache.layers != lm.sig.Layers || cache.kvHeads != lm.sig.KVHeads || cache.headDim != lm.sig.HeadDim:
		return logits, errors.New("model: forward: cache was made for another model")
	}
	var owned []ort.Value
	defer func() {
		for _, v := range owned {
			v.Destroy()
		}
	}()
	wrap := func(shape ort.Shape, data []int64) (ort.Value, error) {
		t, err := ort.NewTensor(shape, data)
		if err != nil {
			return nil, err
		}
		owned = append(owned, t)
		return t, nil
	}
	wrapF := func(shape ort.Shape, data []float32) (ort.Value, error) {
		t, err := ort.NewTensor(shape, data)
		if err != nil {
			return nil, err
		}
		owned = append(owned, t)
		return t, nil
	}
	inputs := make([]ort.Value, 0, len(lm.inNames))
	v, err := wrap(ort.NewShape(int64(B), int64(S)), st.InputIDs)
	if err != nil {
		return logits, fmt.Errorf("model: forward: input_ids: %w", err)
	}
	inputs = append(inputs, v)
	if v, err = wrap(ort.NewShape(int64(B), int64(P+S)), st.AttentionMask); err != nil {
		return logits, fmt.Errorf("model: forward: attention_mask: %w", err)
	}
	inputs = append(inputs, v)
	if lm.sig.HasPositionIDs {
		if v, err = wrap(ort.NewShape(int64(B), int64(S)), st.PositionIDs); err != nil {
			return logits, fmt.Errorf("model: forward: position_ids: %w", err)
		}
		inputs = append(inputs, v)
	}
	kvShape := func(n int) ort.Shape {
		return ort.NewShape(int64(B), int64(lm.sig.KVHeads), int64(n), int64(lm.sig.HeadDim))
	}
	for i := 0; i < lm.sig.Layers; i++ {
		for j := 0; j < 2; j++ {
			if v, err = wrapF(kvShape(P), cache.past(i, j)); err != nil {
				return logits, fmt.Errorf("model: forward: past layer %d: %w", i, err)
			}
			inputs = append(inputs, v)
		}
	}
	for _, w := range lm.weights {
		inputs = append(inputs, w)
	}
	L := S
	if lm.sig.LastLogitsOnly {
		L = 1
	}
	n := B * L * lm.sig.Vocab
	if cap(logits) < n {
		logits = make([]float32, n)
	}
	logits = logits[:n]
	outputs := make([]ort.Value, 0, len(lm.outNames))
	if v, err = wrapF(ort.NewShape(int64(B), int64(L), int64(lm.sig.Vocab)), logits); err != nil {
		return logits, fmt.Errorf("model: forward: logits: %w", err)
	}
	outputs = append(outputs, v)
	for i := 0; i < lm.sig.Layers; i++ {
		for j := 0; j < 2; j++ {
			if v, err = wrapF(kvShape(P+S), cache.next(i, j)); err != nil {
				return logits, fmt.Errorf("model: forward: present layer %d: %w", i, err)
			}
			outputs = append(outputs, v)
		}
	}
	if err := lm.sess.Run(inputs, outputs); err != nil {
		return logits, fmt.Errorf("model: %s: forward [%d x %d, past %d]: %w", lm.path, B, S, P, err)
	}
	cache.advance(S)
	return logits, nil
}

// KVCache holds a batch's cached keys and values for every layer, laid out
// [batch, kv_heads, len, head_dim] as the graph reads them. It keeps two
// buffers per tensor and swaps them after each step: the graph reads past
// from one and writes present into the other, so nothing is copied between
// Go and the runtime per token.
type KVCache struct {
	batch, maxLen, layers, kvHeads, headDim int
	len                                     int
	cur                                     int
	// buf[layer][k=0|v=1][ping|pong]
	buf [][2][2][]float32
}

// NewKVCache allocates a cache for batch rows of up to maxLen positions.
func (lm *LM) NewKVCache(batch, maxLen int) *KVCache {
	c := &KVCache{batch: batch, maxLen: maxLen, layers: lm.sig.Layers, kvHeads: lm.sig.KVHeads, headDim: lm.sig.HeadDim}
	size := batch * c.kvHeads * maxLen * c.headDim
	c.buf = make([][2][2][]float32, c.layers)
	for i := range c.buf {
		for j := 0; j < 2; j++ {
			for p := 0; p < 2; p++ {
				c.buf[i][j][p] = make([]float32, size)
			}
		}
	}
	return c
}

// Len returns the number of cached positions.
func (c *KVCache) Len() int { return c.len }

// Batch returns the number of rows.
func (c *KVCache) Batch() int { return c.batch }

// Cap returns the maximum number of positions.
func (c *KVCache) Cap() int { return c.maxLen }

// Reset empties the cache, keeping its buffers.
func (c *KVCache) Reset() { c.len = 0 }

func (c *KVCache) past(layer, kv int) []float32 {
	return c.buf[layer][kv][c.cur][:c.batch*c.kvHeads*c.len*c.headDim]
}

func (c *KVCache) next(layer, kv int) []float32 { return c.buf[layer][kv][1-c.cur] }

func (c *KVCache) advance(n int) {
	c.cur = 1 - c.cur
	c.len += n
}

// Keep compacts the cache to the given rows, strictly increasing, e.g.
// after some sequences finished; it copies each kept row at most once.
func (c *KVCache) Keep(rows []int) error {
	rowSize := c.kvHeads * c.len * c.headDim
	for i, r := range rows {
		if r < 0 || r >= c.batch || (i > 0 && r <= rows[i-1]) {
			return fmt.Errorf("model: kv cache keep: rows %v must be strictly increasing in [0,%d)", rows, c.batch)
		}
	}
	for i := range c.buf {
		for j := 0; j < 2; j++ {
			b := c.buf[i][j][c.cur]
			for dst, src := range rows {
				if dst != src {
					copy(b[dst*rowSize:(dst+1)*rowSize], b[src*rowSize:(src+1)*rowSize])
				}
			}
		}
	}
	c.batch = len(rows)
	return nil
}

// MergeKVCaches returns a new cache holding a's rows followed by b's, both
// left-padded with zeros to the longer length L = max(a.Len(), b.Len()),
// with room for extra more positions. Callers left-pad the rows' attention
// masks to L the same way, so padded positions are never attended.
func MergeKVCaches(a, b *KVCache, extra int) (*KVCache, error) {
	if a.layers != b.layers || a.kvHeads != b.kvHeads || a.headDim != b.headDim {
		return nil, errors.New("model: merge kv caches: caches of different models")
	}
	L := max(a.len, b.len)
	c := &KVCache{batch: a.batch + b.batch, maxLen: L + extra, layers: a.layers, kvHeads: a.kvHeads, headDim: a.headDim, len: L}
	size := c.batch * c.kvHeads * c.maxLen * c.headDim
	c.buf = make([][2][2][]float32, c.layers)
	hd := c.headDim
	for i := range c.buf {
		for j := 0; j < 2; j++ {
			c.buf[i][j][0] = make([]float32, size)
			c.buf[i][j][1] = make([]float32, size)
			dst := c.buf[i][j][0]
			row := 0
			for _, src := range []*KVCache{a, b} {
				s := src.buf[i][j][src.cur]
				pad := L - src.len
				for r := 0; r < src.batch; r++ {
					for h := 0; h < c.kvHeads; h++ {
						from := ((r*c.kvHeads + h) * src.len) * hd
						to := ((row*c.kvHeads+h)*L + pad) * hd
						copy(dst[to:to+src.len*hd], s[from:from+src.len*hd])
					}
					row++
				}
			}
		}
	}
	return c, nil
}

// TrimLeft drops the first n cached positions of every row (positions
// that every row masks out, e.g. left padding whose rows have left the
// batch), re-laying the cache out in place; Len shrinks by n. Callers drop
// the same n entries from the front of each row's attention mask.
func (c *KVCache) TrimLeft(n int) error {
	if n < 0 || n > c.len {
		return fmt.Errorf("model: kv cache trim %d of %d positions", n, c.len)
	}
	if n == 0 {
		return nil
	}
	hd, old, nl := c.headDim, c.len, c.len-n
	for i := range c.buf {
		for j := 0; j < 2; j++ {
			b := c.buf[i][j][c.cur]
			for blk := 0; blk < c.batch*c.kvHeads; blk++ {
				copy(b[blk*nl*hd:(blk+1)*nl*hd], b[(blk*old+n)*hd:(blk+1)*old*hd])
			}
		}
	}
	c.len = nl
	return nil
}

// Reshape empties the cache and readies it for batch rows of up to maxLen
// positions, reusing its buffers when they hold that many values; it
// reports false (and changes nothing) when they are too small.
func (c *KVCache) Reshape(batch, maxLen int) bool {
	need := batch * c.kvHeads * maxLen * c.headDim
	if batch <= 0 || maxLen <= 0 || need > len(c.buf[0][0][0]) {
		return false
	}
	c.batch, c.maxLen, c.len, c.cur = batch, maxLen, 0, 0
	return true
}
