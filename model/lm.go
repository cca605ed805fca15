package model

import (
	"context"
	"errors"
	"fmt"

	ort "github.com/yalue/onnxruntime_go"

	"github.com/spiral-rl/spiral/model/onnx"
	"github.com/spiral-rl/spiral/model/ortc"
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
	// Heads is the number of query heads (config.json's
	// num_attention_heads), for CallRows' estimates; 0 takes the KV heads.
	Heads int
	// CallBytes bounds the temporaries of one Extend call for CallRows;
	// 0 takes DefaultCallBytes.
	CallBytes int64
	// Decode is the path of the decode graph of the graph OpenLM opens
	// (Artifacts.DecodePath), which Extend runs for calls on a host cache
	// in which every row takes all the call's positions; "" runs every
	// call on the graph.
	Decode string
	// Graph and DecodeGraph, when set, are the bytes of the files at the
	// path and Decode, read by the caller (OpenPolicy, while it holds the
	// artifacts' lock): the sessions, opened on first use, are made from
	// them, so that they are the graphs read under the lock though the
	// files have been replaced since. They must hold no external data.
	Graph, DecodeGraph []byte
	// device, set by OpenPolicy (PolicyOptions.Resident), keeps
	// generation in the runtime device's memory: Extend reads these
	// device copies of the weights (copied when their store changes) and
	// the RowCache's keys and values live there, so that a call moves
	// only the token ids, mask, positions, the cache write indices and
	// the logits between host and device (LM.CopiedBytes).
	device *deviceParams
	// source, set by OpenPolicy, is the model the graph was built from:
	// the file the user gave, which errors name before the graph.
	source string
}

// DefaultCallBytes is the default LMOptions.CallBytes.
const DefaultCallBytes = 512 << 20

// LM runs a causal language model of the optimum export signature with a
// KV cache: Extend on a RowCache (generation), or Forward on a KVCache
// (one padded batch, the graph's own cache layout).
type LM struct {
	sig       *Signature
	rt        *Runtime
	env       *ortc.Env
	path      string
	source    string // LMOptions.source
	weights   map[string]Weight
	heads     int
	callBytes int64
	// sess and ortWeights serve Forward, extend and views Extend; both
	// are opened on first use.
	sess       *ort.DynamicAdvancedSession
	inNames    []string
	outNames   []string
	ortWeights []*ort.Tensor[float32]
	extend     *ortc.Session
	views      []*ortc.Value
	// decodePath is LMOptions.Decode; decode its session, opened with
	// extend.
	decodePath string
	decode     *ortc.Session
	// graph and decodeGraph are LMOptions.Graph and DecodeGraph.
	graph, decodeGraph []byte
	// decodeCalls counts the decode graph's runs (DecodeGraphCalls).
	decodeCalls int64
	// params: LMOptions.device; res is the device state, opened with
	// extend.
	params *deviceParams
	res    *resident
}

// OpenLM reads path's signature and checks the weights; sessions are
// opened on first use. External data (model.onnx_data, model.onnx.data)
// is resolved by ONNX Runtime relative to the model file.
func OpenLM(rt *Runtime, path string, opt LMOptions) (*LM, error) {
	// The graph only: external weights stay on disk, which keeps this cheap
	// for multi-gigabyte exports.
	load := func() (*onnx.Model, error) { return onnx.LoadGraph(path) }
	if opt.Graph != nil {
		load = func() (*onnx.Model, error) { return onnx.Parse(opt.Graph, path) }
	}
	m, err := load()
	if err != nil {
		return nil, fmt.Errorf("model: open LM: %w", err)
	}
	sig, err := ReadSignature(m.Graph(), path)
	if err != nil {
		return nil, err
	}
	lm := &LM{sig: sig, rt: rt, path: path, source: opt.source, weights: opt.Weights, heads: opt.Heads, callBytes: opt.CallBytes, params: opt.device, decodePath: opt.Decode,
		graph: opt.Graph, decodeGraph: opt.DecodeGraph}
	if lm.heads <= 0 {
		lm.heads = sig.KVHeads
	}
	if lm.callBytes <= 0 {
		lm.callBytes = DefaultCallBytes
	}
	for _, w := range sig.Weights {
		src, ok := opt.Weights[w.Name]
		if !ok {
			return nil, fmt.Errorf("model: %s: weight input %q [%v] not supplied", path, w.Name, w.Shape)
		}
		if err := checkShape(w, src); err != nil {
			return nil, fmt.Errorf("model: %s: %w", path, err)
		}
	}
	return lm, nil
}

// graphInputs returns the session inputs: the token inputs, the cache,
// the weights.
func (lm *LM) graphInputs() []string {
	in := []string{InputIDs, AttentionMask}
	if lm.sig.HasPositionIDs {
		in = append(in, PositionIDs)
	}
	for i := 0; i < lm.sig.Layers; i++ {
		in = append(in, PastName(i, false), PastName(i, true))
	}
	for _, w := range lm.sig.Weights {
		in = append(in, w.Name)
	}
	return in
}

// presentOutputs returns the outputs of a graph that gives the logits and
// every layer's whole present (Forward's, the decode graph's).
func (lm *LM) presentOutputs() []string {
	out := []string{LogitsOutput}
	for i := range lm.sig.Layers {
		out = append(out, PresentName(i, false), PresentName(i, true))
	}
	return out
}

// forwardSession opens Forward's session on first use. On failure it
// leaves the LM as it was, with no weight wrapped, for a later call to
// try again.
func (lm *LM) forwardSession() (err error) {
	if lm.sess != nil {
		return nil
	}
	weights := make([]*ort.Tensor[float32], 0, len(lm.sig.Weights))
	defer func() {
		if err != nil {
			for _, t := range weights {
				t.Destroy()
			}
		}
	}()
	for _, w := range lm.sig.Weights {
		src := lm.weights[w.Name]
		t, err := ort.NewTensor(ort.NewShape(src.Shape...), src.Data)
		if err != nil {
			return fmt.Errorf("model: %s: wrap weight %q: %w", lm.path, w.Name, err)
		}
		weights = append(weights, t)
	}
	inNames, outNames := lm.graphInputs(), lm.presentOutputs()
	so, err := lm.rt.NewSessionOptions()
	if err != nil {
		return err
	}
	defer so.Destroy()
	var sess *ort.DynamicAdvancedSession
	if lm.graph != nil {
		sess, err = ort.NewDynamicAdvancedSessionWithONNXData(lm.graph, inNames, outNames, so)
	} else {
		sess, err = ort.NewDynamicAdvancedSession(lm.path, inNames, outNames, so)
	}
	if err != nil {
		return fmt.Errorf("model: %s: create session: %w", lm.named(lm.path), err)
	}
	lm.sess, lm.ortWeights, lm.inNames, lm.outNames = sess, weights, inNames, outNames
	return nil
}

// extendSession opens Extend's session on first use: the same graph,
// asked for the new keys and values only when it offers them
// (Signature.NewKV), else for the whole present.
func (lm *LM) extendSession() (*ortc.Session, error) {
	if lm.extend != nil {
		return lm.extend, nil
	}
	if lm.env == nil {
		env, err := lm.rt.api.NewEnv()
		if err != nil {
			return nil, err
		}
		lm.env = env
	}
	if lm.views == nil {
		for _, w := range lm.sig.Weights {
			src := lm.weights[w.Name]
			v, err := ortc.NewTensor(lm.env, src.Shape, src.Data)
			if err != nil {
				releaseAll(lm.views)
				lm.views = nil
				return nil, fmt.Errorf("model: %s: wrap weight %q: %w", lm.path, w.Name, err)
			}
			lm.views = append(lm.views, v)
		}
	}
	out := []string{LogitsOutput}
	for i := 0; i < lm.sig.Layers; i++ {
		for _, v := range []bool{false, true} {
			if lm.sig.NewKV {
				out = append(out, NewKVName(i, v))
			} else {
				out = append(out, PresentName(i, v))
			}
		}
	}
	so, err := lm.rt.NewSessionOptions()
	if err != nil {
		return nil, err
	}
	defer so.Destroy()
	// Shapes change with every call (rows, positions, capacity): an arena
	// of the session's own would keep the largest of each (the shared
	// arena, when the runtime has one, serves every session instead).
	if err := so.SetCpuMemArena(false); err != nil {
		return nil, fmt.Errorf("model: %w", err)
	}
	open := func(path string, graph []byte, inputs, outputs []string) (*ortc.Session, error) {
		if graph != nil {
			return lm.env.NewSession(graph, so, inputs, outputs)
		}
		return lm.env.NewSessionFile(path, so, inputs, outputs)
	}
	s, err := open(lm.path, lm.graph, lm.graphInputs(), out)
	if err != nil {
		return nil, fmt.Errorf("model: %s: %w", lm.named(lm.path), err)
	}
	if lm.params != nil {
		if err := lm.openResident(); err != nil {
			s.Close()
			return nil, err
		}
	} else if lm.decodePath != "" {
		// The decode graph's present outputs are the past's buffers,
		// which a device-resident LM keeps elsewhere: it runs on the
		// host only.
		in := append(lm.graphInputs(), DecodeSeqLens, DecodeTotal)
		if lm.decode, err = open(lm.decodePath, lm.decodeGraph, in, lm.presentOutputs()); err != nil {
			s.Close()
			return nil, fmt.Errorf("model: %s: %w", lm.named(lm.decodePath), err)
		}
	}
	lm.extend = s
	return s, nil
}

// named names the graph at path in an error: after the model it was
// built from (LMOptions.source), where that is another file, as
// "SOURCE: graph PATH".
func (lm *LM) named(path string) string {
	if lm.source == "" || lm.source == path {
		return path
	}
	return lm.source + ": graph " + path
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

// DecodeGraphCalls returns how many times the decode graph
// (LMOptions.Decode) ran so far: once for each decode step of a
// generation, once a row for each prefill chunk without padding over a
// past (LM.Extend), where the LM has one.
func (lm *LM) DecodeGraphCalls() int64 { return lm.decodeCalls }

// Close releases the sessions and the weight wrappers (not the weight
// data).
func (lm *LM) Close() error {
	var errs []error
	if lm.sess != nil {
		errs = append(errs, lm.sess.Destroy())
		lm.sess = nil
	}
	for _, t := range lm.ortWeights {
		errs = append(errs, t.Destroy())
	}
	lm.ortWeights = nil
	if lm.res != nil {
		lm.res.close()
		lm.res = nil
	}
	if lm.extend != nil {
		lm.extend.Close()
		lm.extend = nil
	}
	if lm.decode != nil {
		lm.decode.Close()
		lm.decode = nil
	}
	for _, v := range lm.views {
		v.Release()
	}
	lm.views = nil
	if lm.env != nil {
		lm.env.Close()
		lm.env = nil
	}
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
	case !lm.sig.Present:
		return logits, errors.New("model: forward: this graph outputs only the new keys and values (a sampling graph); use Extend")
	}
	if err := lm.forwardSession(); err != nil {
		return logits, err
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
	for _, w := range lm.ortWeights {
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
		return logits, fmt.Errorf("model: %s: forward [%d x %d, past %d]: %w", lm.named(lm.path), B, S, P, err)
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
