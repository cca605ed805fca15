package model

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/spiral-rl/spiral/model/memplan"
	"github.com/spiral-rl/spiral/model/offheap"
	"github.com/spiral-rl/spiral/model/ortc"
)

// RowCache is the KV cache generation runs on: for every layer, keys and
// values of rows x capacity positions laid out [rows, kv_heads, capacity,
// head_dim], the layout the graph reads as its past. Each row holds its
// own tokens only, from slot 0, filled to its own length: rows of
// different lengths need no padding, a finished row is replaced in
// place, and the buffers are allocated once for a whole generation (and
// reused by later ones that fit).
//
// The sampling graph is fed the whole capacity as its past, with the
// attention mask hiding each row's unfilled slots, and its new keys and
// values are written into the row's next slots. Attention thus spans
// the capacity rather than each row's length, which costs compute, never
// memory; a call whose rows are all empty (a prefill's first chunk) is
// fed no past at all. A call in which every row takes all S positions
// (a decode step, a prefill chunk once every prompt has begun) on the
// LM's decode graph instead has the graph write the new keys and values
// into the rows in place and attend over each row's length
// (LM.extendInPlace).
//
// The buffers live outside the Go heap (package offheap): a cache of
// gigabytes in the heap would let as much garbage pile up before each
// collection, and slots never written commit no memory. Free releases
// them; an unreachable cache is freed by the collector. A device-resident
// LM's cache lives in device memory instead (PolicyOptions.Resident),
// held until Free or the LM's Close.
type RowCache struct {
	layers, kvHeads, headDim int
	rows, capacity           int
	lens                     []int
	// perBuffer is the number of values each layer's keys (or values)
	// hold.
	perBuffer int
	mem       *offheap.Float32s
	// kv[layer][0|1] is the layer's keys or values, slices of mem; nil
	// when the buffers are in device memory (dev).
	kv  [][2][]float32
	dev *deviceCache
	// mask, pos, seqLens and total are Extend's scratch, kept so that
	// decoding makes no garbage per step.
	mask, pos []int64
	seqLens   []int32
	total     []int32
}

// NewRowCache allocates a cache of rows x capacity positions.
func (lm *LM) NewRowCache(rows, capacity int) (*RowCache, error) {
	if rows <= 0 || capacity <= 0 {
		return nil, fmt.Errorf("model: row cache of %d rows x %d positions", rows, capacity)
	}
	c := &RowCache{layers: lm.sig.Layers, kvHeads: lm.sig.KVHeads, headDim: lm.sig.HeadDim, rows: rows, capacity: capacity, lens: make([]int, rows)}
	n := rows * c.kvHeads * capacity * c.headDim
	c.perBuffer = n
	if lm.params != nil {
		dev, err := lm.newDeviceCache(n)
		if err != nil {
			return nil, err
		}
		c.dev = dev
		return c, nil
	}
	mem, err := offheap.New(c.layers * 2 * n)
	if err != nil {
		return nil, fmt.Errorf("model: row cache of %d rows x %d positions: %w", rows, capacity, err)
	}
	c.mem = mem
	all := mem.Values()
	c.kv = make([][2][]float32, c.layers)
	for i := range c.kv {
		k := all[2*i*n : (2*i+1)*n : (2*i+1)*n]
		v := all[(2*i+1)*n : (2*i+2)*n : (2*i+2)*n]
		c.kv[i] = [2][]float32{k, v}
	}
	return c, nil
}

// Free releases the cache's buffers now; the cache must not be used
// afterwards.
func (c *RowCache) Free() error {
	c.kv = nil
	if c.dev != nil {
		c.dev.free()
		c.dev = nil
		return nil
	}
	if c.mem == nil {
		return nil
	}
	err := c.mem.Free()
	c.mem = nil
	return err
}

// Rows returns the number of rows; Capacity the positions per row.
func (c *RowCache) Rows() int     { return c.rows }
func (c *RowCache) Capacity() int { return c.capacity }

// Len returns row r's filled length.
func (c *RowCache) Len(r int) int { return c.lens[r] }

// Bytes returns the cache's size.
func (c *RowCache) Bytes() int64 {
	return int64(c.layers) * 2 * int64(c.perBuffer) * 4
}

// Fit empties the cache and lays it out for rows x capacity when its
// buffers hold that many values, reporting whether they do (false
// changes nothing).
func (c *RowCache) Fit(rows, capacity int) bool {
	if rows <= 0 || capacity <= 0 || rows*c.kvHeads*capacity*c.headDim > c.perBuffer {
		return false
	}
	c.rows, c.capacity = rows, capacity
	if cap(c.lens) < rows {
		c.lens = make([]int, rows)
	}
	c.lens = c.lens[:rows]
	clear(c.lens)
	return true
}

// Clear empties row r.
func (c *RowCache) Clear(r int) { c.lens[r] = 0 }

// Past returns the past positions an Extend call on rows r0..r0+n-1
// feeds the graph: the cache's whole capacity, or none when every one of
// those rows is empty (a prompt's first chunk). It is what sizes the
// call's temporaries (LM.CallRowsWithin).
func (c *RowCache) Past(r0, n int) int {
	if slices.ContainsFunc(c.lens[r0:r0+n], func(l int) bool { return l > 0 }) {
		return c.capacity
	}
	return 0
}

// Move copies row src into row dst (each head's filled slots), leaving
// src as it was.
func (c *RowCache) Move(dst, src int) error {
	if dst == src {
		return nil
	}
	if c.dev != nil {
		if err := c.dev.move(c, dst, src); err != nil {
			return fmt.Errorf("model: move cache row %d to %d: %w", src, dst, err)
		}
		c.lens[dst] = c.lens[src]
		return nil
	}
	n := c.lens[src] * c.headDim
	stride := c.capacity * c.headDim
	for l := range c.kv {
		for _, buf := range c.kv[l] {
			for h := range c.kvHeads {
				from := (src*c.kvHeads + h) * stride
				to := (dst*c.kvHeads + h) * stride
				copy(buf[to:to+n], buf[from:from+n])
			}
		}
	}
	c.lens[dst] = c.lens[src]
	return nil
}

// rowValues is the slice of the layer buffer holding rows r0..r0+n.
func (c *RowCache) rowValues(buf []float32, r0, n int) []float32 {
	per := c.kvHeads * c.capacity * c.headDim
	return buf[r0*per : (r0+n)*per]
}

// Extend runs the model on S new positions of each of the n rows r0..
// r0+n-1 of c and appends their keys and values to the rows. tokens is
// [n, S]; row i's last real[i] entries are its new tokens (the entries
// before them are padding, never attended or cached), so that rows of
// different lengths prefill together and every row's last token is at
// position S-1. It returns the logits [n, L, vocab], L = 1 for a
// last-position graph (Signature().LastLogitsOnly), else S, reusing
// logits when large enough.
func (lm *LM) Extend(ctx context.Context, c *RowCache, r0 int, tokens []int64, real []int, logits []float32) ([]float32, error) {
	if err := ctx.Err(); err != nil {
		return logits, err
	}
	n := len(real)
	if n == 0 {
		return logits, errors.New("model: extend: no rows")
	}
	S := len(tokens) / n
	switch {
	case r0 < 0 || r0+n > c.rows:
		return logits, fmt.Errorf("model: extend: rows %d..%d of a %d-row cache", r0, r0+n, c.rows)
	case S == 0 || len(tokens) != n*S:
		return logits, fmt.Errorf("model: extend: %d tokens for %d rows", len(tokens), n)
	case c.layers != lm.sig.Layers || c.kvHeads != lm.sig.KVHeads || c.headDim != lm.sig.HeadDim:
		return logits, errors.New("model: extend: cache was made for another model")
	case (c.dev != nil) != (lm.params != nil) || (c.dev != nil && c.dev.lm != lm):
		return logits, errors.New("model: extend: a device-resident cache serves the LM that made it only")
	}
	for i, k := range real {
		if k < 0 || k > S {
			return logits, fmt.Errorf("model: extend: row %d has %d new tokens of %d", r0+i, k, S)
		}
		if c.lens[r0+i]+k > c.capacity {
			return logits, fmt.Errorf("model: extend: row %d holds %d positions; %d more exceed the cache's %d", r0+i, c.lens[r0+i], k, c.capacity)
		}
	}
	for _, id := range tokens {
		if id < 0 || id >= int64(lm.sig.Vocab) {
			return logits, fmt.Errorf("model: extend: token id %d outside the vocabulary [0, %d)", id, lm.sig.Vocab)
		}
	}
	sess, err := lm.extendSession()
	if err != nil {
		return logits, err
	}
	// The past fed is the rows' whole capacity, or none when every row
	// is empty (a prefill's first chunk): attention then spans the new
	// positions alone. A call on a host cache whose rows all take its S
	// positions (no padding) runs on the decode graph, where the LM has
	// one, unless every row is empty.
	C := c.Past(r0, n)
	inPlace := lm.decode != nil && c.dev == nil && C > 0 && !slices.ContainsFunc(real, func(k int) bool { return k != S })
	c.mask, c.pos = resize(c.mask, n*(C+S)), resize(c.pos, n*S)
	mask, pos := c.mask, c.pos
	clear(mask)
	for i, k := range real {
		row := mask[i*(C+S) : (i+1)*(C+S)]
		for j := range c.lens[r0+i] {
			row[j] = 1
		}
		for t := S - k; t < S; t++ {
			row[C+t] = 1
			pos[i*S+t] = int64(c.lens[r0+i] + t - (S - k))
		}
		for t := range S - k {
			pos[i*S+t] = 1 // padding: HF's convention, masked anyway
		}
	}
	L := S
	if lm.sig.LastLogitsOnly {
		L = 1
	}
	logits = resize(logits, n*L*lm.sig.Vocab)
	if inPlace {
		if err := lm.extendInPlace(ctx, c, r0, n, S, L, tokens, logits); err != nil {
			return logits, fmt.Errorf("model: %s: decode [%d rows x %d, capacity %d]: %w", lm.decodePath, n, S, C, err)
		}
	} else {
		in, lv, err := lm.callInputs(c, 0, n, S, C, L, tokens, logits)
		defer func() { releaseAll(append(in, lv)) }()
		if err != nil {
			return logits, fmt.Errorf("model: extend: %w", err)
		}
		if c.dev != nil {
			err = lm.extendOnDevice(sess, c, r0, C, real, in, lv)
		} else {
			err = lm.extendOnHost(sess, c, r0, C, real, in, lv)
		}
		if err != nil {
			where := ""
			if c.dev != nil {
				where = " on " + lm.res.info.String()
			}
			return logits, fmt.Errorf("model: %s: extend%s [%d x %d, past %d]: %w", lm.path, where, n, S, C, err)
		}
	}
	for i, k := range real {
		c.lens[r0+i] += k
	}
	if int64(n)*lm.rowTemporaries(C, S) >= trimAfter {
		ortc.TrimMalloc()
	}
	return logits, nil
}

// extendOnHost is Extend's run on a host cache: the past (the rows'
// whole capacity, or none: pastLen) is fed as views of the rows' buffers
// and the new keys and values are copied into the rows' next slots.
func (lm *LM) extendOnHost(sess *ortc.Session, c *RowCache, r0, pastLen int, real []int, tokenInputs []*ortc.Value, logits *ortc.Value) error {
	n := len(real)
	in := append([]*ortc.Value(nil), tokenInputs...)
	var past []*ortc.Value
	defer func() { releaseAll(past) }()
	shape := []int64{int64(n), int64(c.kvHeads), int64(pastLen), int64(c.headDim)}
	for l := range c.layers {
		for j := range 2 {
			var rows []float32
			if pastLen > 0 {
				rows = c.rowValues(c.kv[l][j], r0, n)
			}
			v, err := ortc.NewTensor(lm.env, shape, rows)
			if err != nil {
				return err
			}
			past = append(past, v)
		}
	}
	in = append(append(in, past...), lm.views...)
	out := make([]*ortc.Value, 1+2*c.layers)
	out[0] = logits
	if err := sess.Run(in, out); err != nil {
		return err
	}
	// The new keys and values: [n, kv_heads, S, head_dim], or the whole
	// present [n, kv_heads, C+S, head_dim] whose last S slots are new.
	stride := c.capacity * c.headDim
	for l := range c.layers {
		for j := range 2 {
			v := out[1+2*l+j]
			src := v.Float32s()
			span := int(v.Shape()[2])
			dst := c.rowValues(c.kv[l][j], r0, n)
			for i, k := range real {
				at := c.lens[r0+i] * c.headDim
				for h := range c.kvHeads {
					from := ((i*c.kvHeads+h)*span + span - k) * c.headDim
					to := (i*c.kvHeads+h)*stride + at
					copy(dst[to:to+k*c.headDim], src[from:from+k*c.headDim])
				}
			}
			v.Release()
		}
	}
	return nil
}

// callInputs makes the token inputs of rows i0..i1 of an Extend call of
// S positions over a past of C (the tokens, and the mask and positions
// Extend wrote in c's scratch) and the tensor of their L positions'
// logits, views of the slices. The caller releases them (nil ones too)
// whether or not err is nil.
func (lm *LM) callInputs(c *RowCache, i0, i1, S, C, L int, tokens []int64, logits []float32) (in []*ortc.Value, lv *ortc.Value, err error) {
	n := i1 - i0
	add := func(shape []int64, v []int64) {
		if err == nil {
			var t *ortc.Value
			t, err = ortc.NewTensor(lm.env, shape, v)
			in = append(in, t)
		}
	}
	add([]int64{int64(n), int64(S)}, tokens[i0*S:i1*S])
	add([]int64{int64(n), int64(C + S)}, c.mask[i0*(C+S):i1*(C+S)])
	if lm.sig.HasPositionIDs {
		add([]int64{int64(n), int64(S)}, c.pos[i0*S:i1*S])
	}
	if err != nil {
		return in, nil, err
	}
	per := L * lm.sig.Vocab
	lv, err = ortc.NewTensor(lm.env, []int64{int64(n), int64(L), int64(lm.sig.Vocab)}, logits[i0*per:i1*per])
	return in, lv, err
}

// extendInPlace is Extend's run of S new positions on each of the n rows
// r0.. of a host cache (every row taking S tokens), on the decode graph:
// the past fed, views of the rows' buffers over the whole capacity, is
// also the graph's present, into which its GroupQueryAttention writes
// each row's new keys and values after the row's length (and attends
// over the row's positions only). ONNX Runtime's kernel takes several
// positions over a past for one row at a time, so a chunk of S > 1 runs
// row by row, ending at the next row when ctx ends (the rows' lengths
// unchanged: what was written past them is free space).
func (lm *LM) extendInPlace(ctx context.Context, c *RowCache, r0, n, S, L int, tokens []int64, logits []float32) error {
	rows := n
	if S > 1 {
		rows = 1
	}
	for i0 := 0; i0 < n; i0 += rows {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := lm.runInPlace(c, r0, i0, i0+rows, S, L, tokens, logits); err != nil {
			return err
		}
		lm.decodeCalls++
	}
	return nil
}

// runInPlace runs the decode graph on rows i0..i1 of the call on rows
// r0.. (see extendInPlace).
func (lm *LM) runInPlace(c *RowCache, r0, i0, i1, S, L int, tokens []int64, logits []float32) error {
	n := i1 - i0
	c.seqLens = resize(c.seqLens, n)
	total := int32(0)
	for i := range n {
		c.seqLens[i] = int32(c.lens[r0+i0+i] + S - 1)
		total = max(total, c.seqLens[i]+1)
	}
	c.total = resize(c.total, 1)
	c.total[0] = total
	in, lv, err := lm.callInputs(c, i0, i1, S, c.capacity, L, tokens, logits)
	owned := append(in, lv)
	defer func() { releaseAll(owned) }()
	if err != nil {
		return err
	}
	shape := []int64{int64(n), int64(c.kvHeads), int64(c.capacity), int64(c.headDim)}
	out := []*ortc.Value{lv}
	for l := range c.layers {
		for j := range 2 {
			v, err := ortc.NewTensor(lm.env, shape, c.rowValues(c.kv[l][j], r0+i0, n))
			if err != nil {
				return err
			}
			owned = append(owned, v)
			out = append(out, v)
		}
	}
	seqLens, err := ortc.NewTensor(lm.env, []int64{int64(n)}, c.seqLens)
	if err != nil {
		return err
	}
	owned = append(owned, seqLens)
	totalLen, err := ortc.NewTensor(lm.env, nil, c.total)
	if err != nil {
		return err
	}
	owned = append(owned, totalLen)
	return lm.decode.Run(slices.Concat(in, out[1:], lm.views, []*ortc.Value{seqLens, totalLen}), out)
}

// CallRows returns how many rows one Extend call of S positions over
// past positions of the cache (RowCache.Past: its capacity, or 0 for a
// prompt's first chunk) should take so that the graph's per-layer
// temporaries (the layer's present keys and values, their copies
// repeated over the query heads unless the attention is grouped, the
// attention scores) and the logits (of
// the last position only in a sampling graph) stay within lm's call
// budget (LMOptions.CallBytes); at least 1.
func (lm *LM) CallRows(past, S int) int { return lm.CallRowsWithin(0, past, S) }

// CallRowsWithin is CallRows under a budget of the given bytes instead of
// the LM's (0 takes the LM's).
func (lm *LM) CallRowsWithin(budget int64, past, S int) int {
	if budget <= 0 {
		budget = lm.callBytes
	}
	return int(max(1, budget/max(1, lm.rowTemporaries(past, S))))
}

// rowTemporaries estimates the temporaries one row of an Extend call of
// S positions over past positions holds at its peak.
func (lm *LM) rowTemporaries(past, S int) int64 {
	kv, heads, d := int64(lm.sig.KVHeads), int64(lm.heads), int64(lm.sig.HeadDim)
	span := int64(past + S)
	positions := int64(S)
	if lm.sig.LastLogitsOnly {
		positions = 1
	}
	copies := (2*kv + 2*heads) * span * d // the present keys and values, their repeats over the query heads
	switch {
	case lm.decodePath != "" && lm.params == nil && S == 1:
		copies = 0 // the decode graph writes the cache in place
	case lm.sig.GroupedAttention:
		copies = 2 * kv * span * d
	}
	return copies*4 + memplan.ScoresPerRow*heads*int64(S)*span*4 + positions*int64(lm.sig.Vocab)*4
}

// trimAfter is the size of a call's temporaries from which Extend hands
// the freed memory back to the system afterwards (ortc.TrimMalloc): for
// small models the trim would cost more than the call.
const trimAfter = 64 << 20
