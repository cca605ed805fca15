package model

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/spiral-rl/spiral/model/autodiff"
	"github.com/spiral-rl/spiral/model/blocks"
	"github.com/spiral-rl/spiral/model/ortc"
	"github.com/spiral-rl/spiral/model/params"
)

// ExecutorOptions bounds the working memory of a training step beyond
// the layer inputs it keeps. The zero value takes the defaults.
type ExecutorOptions struct {
	// AttentionBytes bounds the score tensors of one attention-core call
	// (one head, a block of queries against the keys they see, forward
	// and backward temporaries); default DefaultAttentionBytes.
	AttentionBytes int64
	// LossChunkBytes bounds the [positions x vocab] tensors of one loss
	// chunk (logits, log-probabilities and their gradients); default
	// DefaultLossChunkBytes.
	LossChunkBytes int64
	// MLPBytes bounds one call of a layer's position-wise tail (the MLP
	// sub-layer, blocks.Block.Tail), which runs on chunks of positions;
	// default DefaultMLPBytes.
	MLPBytes int64
	// KeptBytes bounds the values of the layers' pieces (attention's
	// inputs and output, the residual before the MLP) that the forward
	// pass keeps for the backward pass, which then need not recompute
	// those layers: layers are kept from the first on while their
	// values fit, the rest recomputed from their kept input; default
	// DefaultKeptBytes, negative keeps none (every layer recomputed).
	KeptBytes int64
	// OptimizerChunk bounds the elements of a tensor that one call of
	// the device optimizer's graphs takes (UseDeviceOptimizer; their
	// float64 temporaries are about 15 x 8 bytes an element); default
	// DefaultOptimizerChunk.
	OptimizerChunk int
	// VocabLimit, when > 0, is the policy's vocabulary: the ids below it
	// (the tokenizer's, which the sampler draws from:
	// rollout.SamplerConfig.VocabLimit), when the logits are wider (real
	// Qwen3: 151,669 of 151,936). The log-probabilities, the entropy and
	// the loss are then those of the softmax over those ids alone, the
	// logits of the others get no gradient, and a trained token at or
	// above it is refused. 0, or the logits' width, is the whole width
	// (the graphs of an unlimited head, bit for bit).
	VocabLimit int
	// device, set by OpenPolicy (PolicyOptions.Resident), feeds the
	// graphs these device copies of the parameters, copied when a
	// store's version (params.Store.Touch) has moved since the last
	// copy: once per optimiser step instead of on every call. The
	// layers' activations and their gradients stay there too
	// (activations.go).
	device *deviceParams
	// source, set by OpenPolicy, is the model the artifacts were built
	// from: the file the user gave, which a session's error names
	// before the artifacts.
	source string
}

// VocabLimitError is OpenExecutor's (so OpenPolicy's) refusal of an
// ExecutorOptions.VocabLimit past the model's logits: a tokenizer with
// more ids than the model has embedding rows.
type VocabLimitError struct {
	Limit, Logits int
}

func (e *VocabLimitError) Error() string {
	return fmt.Sprintf("model: executor: vocabulary limit %d exceeds the model's %d logits", e.Limit, e.Logits)
}

// Defaults of ExecutorOptions.
const (
	DefaultAttentionBytes = 64 << 20
	DefaultLossChunkBytes = 256 << 20
	DefaultMLPBytes       = 256 << 20
	DefaultKeptBytes      = 1 << 30
	DefaultOptimizerChunk = 1 << 22
)

// Live tensors of the sizes bounded by ExecutorOptions, per row of
// queries or per loss position: a core call holds scores, probabilities
// and the mask slice forward, their gradients backward; a loss chunk
// holds logits, log-probabilities, probabilities, their product and two
// gradients.
const (
	attentionLive = 6
	lossLive      = 6
)

// Executor runs training steps of a blocks.Program: one micro-batch at a
// time, forward through the layers keeping each layer's input (and, within
// ExecutorOptions.KeptBytes, its pieces' values), the loss and its
// gradient over chunks of the loss positions, then backward layer by
// layer, recomputing the forward of each layer whose values were not kept
// from its kept input.
// Attention runs per head on blocks of queries; parameter gradients are
// added into the caller's gradient store as each layer finishes.
type Executor struct {
	env     *ortc.Env
	prog    *blocks.Program
	dir     string
	sess    map[string]*ortc.Session
	views   map[string]*ortc.Value // every parameter, a view of its store
	tensors map[string]*params.Tensor
	trained map[string]int // trained parameter -> index in the weights store
	weights *params.Store
	// vocab is the logits' width; limit the policy's vocabulary, ids
	// 0..limit-1 (ExecutorOptions.VocabLimit; vocab without one).
	vocab, limit int
	opt          ExecutorOptions
	// step marks the values kept for the whole step (read by another
	// block, the head or the backward pass of another block).
	step  map[string]bool
	pool  map[string][]float32
	times StepTimes
	// dev are the device copies of the parameters (ExecutorOptions.
	// device, not owned), brought up to date through devGrads' copier;
	// devGrads sums the gradients of AccumulateBatches there.
	dev      *deviceParams
	devGrads *deviceGrads
	devOpt   *deviceOptim // UseDeviceOptimizer
	// crossed counts, on the device layer, the bytes of the host values
	// the graphs read and of the values they return to the host: what
	// ONNX Runtime copies on a device (to the device before a call,
	// back after it) without the copier. gradCrossed is the parameter
	// gradients' part of it.
	crossed, gradCrossed int64
	// segmentMasks are the attention masks packed rows change
	// (applySegments); packErr says why rows cannot be packed, if so.
	segmentMasks map[string]bool
	packErr      error
	// recomputed counts the layers the last (or current) Accumulate call
	// recomputed, kept the bytes of the other layers' values it kept
	// instead (the budget keepBlock holds to ExecutorOptions.KeptBytes).
	recomputed int
	kept       int64
}

// StepTimes splits the last Accumulate call's wall time.
type StepTimes struct {
	// Forward covers the prologue, the embedding and the layers forward;
	// Loss the LM head with the loss, forward and backward; Backward the
	// layers backward (with their recomputation) and the embedding's.
	Forward, Loss, Backward time.Duration
}

// Recomputation reports the last Accumulate call's backward pass: how
// many layers it recomputed (those whose values ExecutorOptions.KeptBytes
// could not keep; a layer without an attention core recomputes nothing),
// and the bytes of the values it kept of the others instead.
func (e *Executor) Recomputation() (layers int, keptBytes int64) { return e.recomputed, e.kept }

// Times returns the split of the last Accumulate call.
func (e *Executor) Times() StepTimes { return e.times }

// OpenExecutor opens the sessions of art's program over the parameter
// stores (trained weights and frozen), which must have the manifest's
// layout; their memory is read in place by every step.
func OpenExecutor(rt *Runtime, art *Artifacts, weights, frozen *params.Store, opt ExecutorOptions) (*Executor, error) {
	prog, err := art.Program()
	if err != nil {
		return nil, err
	}
	if opt.AttentionBytes <= 0 {
		opt.AttentionBytes = DefaultAttentionBytes
	}
	if opt.LossChunkBytes <= 0 {
		opt.LossChunkBytes = DefaultLossChunkBytes
	}
	if opt.MLPBytes <= 0 {
		opt.MLPBytes = DefaultMLPBytes
	}
	if opt.OptimizerChunk <= 0 {
		opt.OptimizerChunk = DefaultOptimizerChunk
	}
	if opt.KeptBytes == 0 {
		opt.KeptBytes = DefaultKeptBytes
	}
	vocab, limit := art.Manifest.Vocab, opt.VocabLimit
	switch {
	case limit < 0:
		return nil, fmt.Errorf("model: executor: vocabulary limit %d: want >= 0 (0 = the logits' whole width)", limit)
	case limit > vocab:
		return nil, &VocabLimitError{Limit: limit, Logits: vocab}
	case limit == 0:
		limit = vocab
	case limit < vocab && (prog.Head.Table != "" && prog.Head.StatsLimited == "" || prog.Head.Table == "" && prog.Head.TrainLimited == ""):
		return nil, fmt.Errorf("model: executor: %s: the program has no loss graph over %d of the %d logits (artifacts of an older spiral?)", art.Dir, limit, vocab)
	}
	env, err := rt.api.NewEnv()
	if err != nil {
		return nil, err
	}
	e := &Executor{env: env, prog: prog, dir: art.Dir, sess: map[string]*ortc.Session{}, views: map[string]*ortc.Value{},
		tensors: map[string]*params.Tensor{}, trained: map[string]int{}, weights: weights, vocab: vocab, limit: limit, opt: opt,
		step: map[string]bool{}, pool: map[string][]float32{}}
	for _, s := range []*params.Store{weights, frozen} {
		for i := range s.Len() {
			t := s.At(i)
			v, err := ortc.NewTensor(env, t.Shape, t.Data)
			if err != nil {
				return nil, errors.Join(fmt.Errorf("model: executor: parameter %q: %w", t.Name, err), e.Close())
			}
			e.views[t.Name], e.tensors[t.Name] = v, t
			if s == weights {
				e.trained[t.Name] = i
			}
		}
	}
	if err := e.openSessions(rt); err != nil {
		return nil, errors.Join(err, e.Close())
	}
	if opt.device != nil {
		if err := e.openDeviceGrads(rt); err != nil {
			return nil, errors.Join(fmt.Errorf("model: executor: %w", err), e.Close())
		}
		e.dev = opt.device
	}
	e.segmentMasks, e.packErr = segmentMasks(prog)
	e.markStep()
	return e, nil
}

// weight returns the tensor the graphs read parameter name from: its
// device copy on the device layer, else the view of its store.
func (e *Executor) weight(name string) *ortc.Value {
	if e.dev != nil {
		return e.dev.values[name]
	}
	return e.views[name]
}

// CopiedBytes returns the bytes the executor has copied between host and
// device memory on the device layer so far (0 on the host path): what
// went through its copier (parameters, moments, gradient sums) and what
// crossed with its graphs' calls (CallBytes).
func (e *Executor) CopiedBytes() int64 {
	if e.dev == nil {
		return 0
	}
	return e.env.CopiedBytes() + e.crossed
}

// CallBytes returns the part of CopiedBytes that crossed with the
// graphs' calls: every host value a call reads and every value it
// returns to the host. The parameters and the layers' activations and
// gradients stay on the device; what crosses is the batch's inputs, the
// loss's per-position numbers, the embedding's gradient, and the
// parameter gradients that return to the host gradient store
// (GradientBytes; none with a device optimizer). On the CPU twin nothing
// moves; the count is what would cross on CUDA (at most: an input that
// only CPU-placed nodes read stays on the host there).
func (e *Executor) CallBytes() int64 { return e.crossed }

// GradientBytes returns the bytes of parameter gradients returned to
// the host: with the graphs' calls (in CallBytes) or as the sums of an
// AccumulateBatches call (through the copier).
func (e *Executor) GradientBytes() int64 { return e.gradCrossed }

// countGradient counts n parameter-gradient values returned to the host
// on the device layer.
func (e *Executor) countGradient(n int) {
	if e.dev != nil {
		e.gradCrossed += int64(4 * n)
	}
}

// runSession runs sess on in, filling out, and counts on the device
// layer the bytes that cross with the call: its host inputs and every
// output, which returns to the host.
func (e *Executor) runSession(sess *ortc.Session, in, out []*ortc.Value) error {
	if err := sess.Run(in, out); err != nil {
		return err
	}
	e.countHost(in)
	e.countHost(out)
	return nil
}

// countHost counts, on the device layer, the bytes of the values of vs
// in host memory (not Placed): what crosses when a graph reads or
// returns them.
func (e *Executor) countHost(vs []*ortc.Value) {
	if e.dev == nil {
		return
	}
	for _, v := range vs {
		if !v.Placed() {
			e.crossed += int64(v.Len() * v.Elem().Size())
		}
	}
}

// openSessions creates one session per distinct graph of the program.
func (e *Executor) openSessions(rt *Runtime) error {
	so, err := rt.NewSessionOptions()
	if err != nil {
		return err
	}
	defer so.Destroy()
	// Tensors here vary in shape from call to call: an arena of each
	// session's own would keep the largest of each for good (the shared
	// arena, when the runtime has one, serves every session instead).
	if err := so.SetCpuMemArena(false); err != nil {
		return fmt.Errorf("model: executor: %w", err)
	}
	if err := so.SetMemPattern(false); err != nil {
		return fmt.Errorf("model: executor: %w", err)
	}
	open := func(key string, in, out []string) error {
		if _, ok := e.sess[key]; ok || key == "" {
			return nil
		}
		raw, ok := e.prog.Graphs[key]
		if !ok {
			return fmt.Errorf("model: %s: program graph %s is missing", e.dir, key)
		}
		s, err := e.env.NewSession(raw, so, in, out)
		if err != nil {
			where := e.dir
			if e.opt.source != "" {
				where = e.opt.source + ": artifacts " + e.dir
			}
			return fmt.Errorf("model: %s: piece %s: %w", where, key, err)
		}
		e.sess[key] = s
		return nil
	}
	for _, p := range e.prog.Pieces() {
		if err := open(p.Forward, pieceInputs(p), names(blocks.Y, len(p.Outputs))); err != nil {
			return err
		}
		if err := open(p.Backward, backwardInputs(p), backwardOutputs(p)); err != nil {
			return err
		}
	}
	h := &e.prog.Head
	if h.Table != "" {
		in := []string{blocks.HeadHidden, blocks.HeadTable, blocks.HeadTargets}
		if e.limited() {
			in = append(in, blocks.HeadVocabLimit)
		}
		if err := open(e.statsGraph(), in, []string{blocks.HeadLogSumExp, blocks.HeadTargetLogit, blocks.HeadEntropy}); err != nil {
			return err
		}
		outputs := []string{blocks.HeadGradHidden}
		if h.TableTrained {
			outputs = append(outputs, blocks.HeadGradTable)
		}
		return open(h.Grad, []string{blocks.HeadHidden, blocks.HeadTable, blocks.HeadLogSumExp, blocks.HeadLocal, blocks.HeadCoef}, outputs)
	}
	in := append(names(blocks.X, len(h.Inputs)), names(blocks.W, len(h.Weights))...)
	in = append(in, autodiff.HeadTargets, autodiff.InputAdvantages, autodiff.InputOldLogprobs, autodiff.HeadWeights,
		autodiff.InputClipLow, autodiff.InputClipHigh, autodiff.HeadDetached)
	if e.limited() {
		in = append(in, autodiff.HeadVocabLimit)
	}
	out := []string{autodiff.OutputLogprobs, autodiff.OutputEntropy, autodiff.OutputLoss, autodiff.GradName(blocks.X(0))}
	for _, j := range h.GradWeights {
		out = append(out, autodiff.GradName(blocks.W(j)))
	}
	return open(e.trainGraph(), in, out)
}

// limited reports whether the policy's vocabulary is narrower than the
// logits (ExecutorOptions.VocabLimit): then the head's loss runs on the
// graphs that take the limit (blocks.Head.StatsLimited, TrainLimited),
// else on those of the whole width.
func (e *Executor) limited() bool { return e.limit < e.vocab }

// statsGraph is the key of the table head's statistics graph.
func (e *Executor) statsGraph() string {
	if e.limited() {
		return e.prog.Head.StatsLimited
	}
	return e.prog.Head.Stats
}

// trainGraph is the key of the generic head's loss graph.
func (e *Executor) trainGraph() string {
	if e.limited() {
		return e.prog.Head.TrainLimited
	}
	return e.prog.Head.Train
}

func names(f func(int) string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = f(i)
	}
	return out
}

func pieceInputs(p *blocks.Piece) []string {
	return append(names(blocks.X, len(p.Inputs)), names(blocks.W, len(p.Weights))...)
}

func backwardInputs(p *blocks.Piece) []string {
	return append(pieceInputs(p), names(blocks.G, len(p.GradOutputs))...)
}

func backwardOutputs(p *blocks.Piece) []string {
	var out []string
	for _, i := range p.GradInputs {
		out = append(out, autodiff.GradName(blocks.X(i)))
	}
	for _, j := range p.GradWeights {
		out = append(out, autodiff.GradName(blocks.W(j)))
	}
	return out
}

// markStep finds the values that must outlive the block computing them.
func (e *Executor) markStep() {
	readBy := map[string]map[int]bool{}
	note := func(block int, vs []string) {
		for _, v := range vs {
			if readBy[v] == nil {
				readBy[v] = map[int]bool{}
			}
			readBy[v][block] = true
		}
	}
	for j, b := range e.prog.Blocks {
		note(j, b.Pre.Inputs)
		if b.Core != nil {
			note(j, b.Core.Inputs)
			note(j, b.Post.Inputs)
		}
		if b.Tail != nil {
			note(j, b.Tail.Inputs)
		}
		e.step[b.Input] = true
	}
	note(len(e.prog.Blocks), append([]string{e.prog.Head.Input}, e.prog.Head.Inputs...))
	for j, b := range e.prog.Blocks {
		outs := append([]string(nil), b.Pre.Outputs...)
		if b.Core != nil {
			outs = append(append(outs, b.Core.Outputs...), b.Post.Outputs...)
		}
		if b.Tail != nil {
			outs = append(outs, b.Tail.Outputs...)
		}
		for _, o := range outs {
			for k := range readBy[o] {
				if k != j {
					e.step[o] = true
				}
			}
		}
	}
}

// Close releases the sessions and views (not the stores).
func (e *Executor) Close() error {
	if e.devOpt != nil {
		e.devOpt.close()
		e.devOpt = nil
	}
	if e.devGrads != nil {
		e.devGrads.close()
		e.devGrads, e.dev = nil, nil
	}
	for _, s := range e.sess {
		s.Close()
	}
	for _, v := range e.views {
		v.Release()
	}
	e.sess, e.views = nil, nil
	if e.env != nil {
		e.env.Close()
		e.env = nil
	}
	return nil
}

// values holds the tensors of one step by value name, releasing them
// when dropped.
type values map[string]*ortc.Value

func (vs values) put(name string, v *ortc.Value) {
	if old, ok := vs[name]; ok && old != v {
		old.Release()
	}
	vs[name] = v
}

func (vs values) drop(name string) {
	if v, ok := vs[name]; ok {
		v.Release()
		delete(vs, name)
	}
}

func (vs values) release() {
	for k, v := range vs {
		v.Release()
		delete(vs, k)
	}
}

// stepState is one Accumulate call's working state.
type stepState struct {
	b       *TrainBatch
	scale   float32
	grads   *params.Store
	step    values // step-scope values (inputs, side values, layer inputs)
	local   values // the current block's values
	gradVal values // gradients of the current block's values
	// kept[j] holds block j's values from the forward pass for its
	// backward pass (nil: recomputed then); Executor.kept is their size.
	kept []values
}

// releaseKept releases the blocks' kept values.
func (st *stepState) releaseKept() {
	for _, vs := range st.kept {
		vs.release()
	}
	st.kept = nil
}

func (st *stepState) lookup(name string) (*ortc.Value, bool) {
	if v, ok := st.local[name]; ok {
		return v, true
	}
	v, ok := st.step[name]
	return v, ok
}

// Accumulate runs micro-batch b and adds scale x d loss(b) / d w into
// grads (which must have the weights' layout; nil within
// AccumulateBatches with a device optimizer, where every gradient goes
// to its device sum), where loss(b) is b's
// token-mean clipped policy-gradient loss (autodiff.LossGraph; with
// b.OldLogProbs nil, the ratio-1 loss of autodiff.HeadLossGraph's
// detached mode). res receives the log-probabilities and entropies at
// b's loss positions (0 elsewhere) and the loss.
func (e *Executor) Accumulate(ctx context.Context, b TrainBatch, scale float32, grads *params.Store, res *TrainResult) error {
	if err := b.validate(e.vocab, e.limit, slices.Contains(e.prog.Inputs, PositionIDs)); err != nil {
		return err
	}
	if err := e.checkGradStore(grads, e.devGrads != nil && e.devGrads.on); err != nil {
		return err
	}
	st := &stepState{b: &b, scale: scale, grads: grads, step: values{}, local: values{}, gradVal: values{},
		kept: make([]values, len(e.prog.Blocks))}
	defer st.releaseKept()
	defer st.step.release()
	defer st.local.release()
	defer st.gradVal.release()
	e.times, e.recomputed, e.kept = StepTimes{}, 0, 0
	start := time.Now()
	if e.dev != nil {
		if err := e.dev.sync(e.devGrads.mem.copier); err != nil {
			return fmt.Errorf("model: executor: %w", err)
		}
	}
	if err := e.bindInputs(st); err != nil {
		return err
	}
	if p := e.prog.Prologue; p != nil {
		if err := e.forward(st, p, st.step); err != nil {
			return err
		}
	}
	if err := e.embed(st); err != nil {
		return err
	}
	for j := range e.prog.Blocks {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := e.blockForward(st, j, false); err != nil {
			return fmt.Errorf("model: executor: layer %d forward: %w", j, err)
		}
		e.trim(st)
	}
	e.times.Forward = time.Since(start)
	start = time.Now()
	if err := e.head(st, res); err != nil {
		return fmt.Errorf("model: executor: loss: %w", err)
	}
	e.times.Loss = time.Since(start)
	start = time.Now()
	defer func() { e.times.Backward = time.Since(start) }()
	for j := len(e.prog.Blocks) - 1; j >= 0; j-- {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := e.blockBackward(st, j); err != nil {
			return fmt.Errorf("model: executor: layer %d backward: %w", j, err)
		}
		e.trim(st)
	}
	return e.embedBackward(st)
}

// validate checks b's sizes and token ids (position ids only when
// positions are read).
func (b *TrainBatch) validate(vocab, limit int, positions bool) error {
	n := b.Batch * b.Seq
	if b.Batch <= 0 || b.Seq <= 0 {
		return fmt.Errorf("model: train batch: %d x %d rows", b.Batch, b.Seq)
	}
	lens := []struct {
		name string
		n    int
	}{{"input_ids", len(b.InputIDs)}, {"attention_mask", len(b.AttentionMask)},
		{"loss_mask", len(b.LossMask)}, {"advantages", len(b.Advantages)}}
	if positions {
		lens = append(lens, struct {
			name string
			n    int
		}{"position_ids", len(b.PositionIDs)})
	}
	if b.OldLogProbs != nil {
		lens = append(lens, struct {
			name string
			n    int
		}{"old_logprobs", len(b.OldLogProbs)})
	}
	if b.Segments != nil {
		lens = append(lens, struct {
			name string
			n    int
		}{"segments", len(b.Segments)})
	}
	for _, l := range lens {
		if l.n != n {
			return fmt.Errorf("model: train batch: %s has %d values, want %d x %d", l.name, l.n, b.Batch, b.Seq)
		}
	}
	for i, id := range b.InputIDs {
		if id < 0 || id >= int64(vocab) {
			return fmt.Errorf("model: train batch: input_ids[%d][%d] = %d is outside the vocabulary [0, %d)", i/b.Seq, i%b.Seq, id, vocab)
		}
	}
	for i, sg := range b.Segments {
		if sg < 0 {
			return fmt.Errorf("model: train batch: segments[%d][%d] = %d is negative", i/b.Seq, i%b.Seq, sg)
		}
	}
	for i, m := range b.LossMask {
		switch r, t := i/b.Seq, i%b.Seq; {
		case m == 0:
		case !(m > 0) || math.IsInf(float64(m), 0):
			return fmt.Errorf("model: train batch: loss_mask[%d][%d] = %v: want a finite weight >= 0", r, t, m)
		case t == b.Seq-1:
			return fmt.Errorf("model: train batch: loss mask set at the last position of row %d, which has no next token", r)
		case b.AttentionMask[i+1] == 0:
			return fmt.Errorf("model: train batch: loss mask set at position %d of row %d, whose next token is padding (attention_mask 0)", t, r)
		case b.InputIDs[i+1] >= int64(limit):
			return fmt.Errorf("model: train batch: loss mask set at position %d of row %d, whose next token %d lies outside the policy's vocabulary, the tokenizer's ids [0, %d): its probability is 0",
				t, r, b.InputIDs[i+1], limit)
		}
	}
	return nil
}

// bindInputs wraps the batch's token inputs.
func (e *Executor) bindInputs(st *stepState) error {
	shape := []int64{int64(st.b.Batch), int64(st.b.Seq)}
	for _, name := range e.prog.Inputs {
		var data []int64
		switch name {
		case InputIDs:
			data = st.b.InputIDs
		case AttentionMask:
			data = st.b.AttentionMask
		case PositionIDs:
			data = st.b.PositionIDs
		default:
			return fmt.Errorf("model: executor: the program reads input %q, which training does not feed", name)
		}
		v, err := ortc.NewTensor(e.env, shape, data)
		if err != nil {
			return fmt.Errorf("model: executor: %s: %w", name, err)
		}
		st.step.put(name, v)
	}
	return nil
}

// gather returns the inputs of piece p from the step's values.
func (e *Executor) gather(st *stepState, p *blocks.Piece) ([]*ortc.Value, error) {
	in := make([]*ortc.Value, 0, len(p.Inputs)+len(p.Weights))
	for _, name := range p.Inputs {
		v, ok := st.lookup(name)
		if !ok {
			return nil, fmt.Errorf("value %q is not computed", name)
		}
		in = append(in, v)
	}
	for _, w := range p.Weights {
		in = append(in, e.weight(w))
	}
	return in, nil
}

// forward runs piece p's forward graph and puts its outputs in dst
// (step-scope ones in the step's values).
func (e *Executor) forward(st *stepState, p *blocks.Piece, dst values) error {
	in, err := e.gather(st, p)
	if err != nil {
		return err
	}
	out := make([]*ortc.Value, len(p.Outputs))
	if err := e.runKeeping(p.Forward, in, out, e.placed); err != nil {
		return err
	}
	err = e.applySegments(st, p, out)
	for k, name := range p.Outputs {
		e.keep(st, name, out[k], dst)
	}
	return err
}

// keep puts the computed value v of name in dst, or in the step's values
// when it outlives its block (a recomputed one is dropped there).
func (e *Executor) keep(st *stepState, name string, v *ortc.Value, dst values) {
	if e.step[name] || dst == nil {
		if _, ok := st.step[name]; ok {
			v.Release() // recomputed: keep the first
			return
		}
		st.step.put(name, v)
		return
	}
	dst.put(name, v)
}

// backward runs piece p's backward graph, reading the gradients of its
// outputs from st.gradVal, adding those of its inputs there and those of
// its parameters (times the step's scale) into the gradient store.
func (e *Executor) backward(st *stepState, p *blocks.Piece) error {
	if p.Backward == "" {
		return nil
	}
	in, err := e.gather(st, p)
	if err != nil {
		return err
	}
	for _, k := range p.GradOutputs {
		g, ok := st.gradVal[p.Outputs[k]]
		if !ok {
			// No reader took a gradient of it: zero.
			y, ok := st.lookup(p.Outputs[k])
			if !ok {
				return fmt.Errorf("gradient of %q: the value is not computed", p.Outputs[k])
			}
			z := make([]float32, y.Len())
			if g, err = ortc.NewTensor(e.env, y.Shape(), z); err != nil {
				return err
			}
			st.gradVal[p.Outputs[k]] = g
		}
		in = append(in, g)
	}
	out := make([]*ortc.Value, len(p.GradInputs)+len(p.GradWeights))
	if err := e.runKeeping(p.Backward, in, out, e.gradsKept(p)); err != nil {
		return err
	}
	for k, i := range p.GradInputs {
		if err == nil {
			err = e.addGrad(st, p.Inputs[i], out[k])
		} else {
			out[k].Release()
		}
	}
	for k, j := range p.GradWeights {
		if err == nil {
			err = e.addParamGrad(st, p.Weights[j], out[len(p.GradInputs)+k])
		}
		out[len(p.GradInputs)+k].Release()
	}
	return err
}

// gradsKept returns which outputs of piece p's backward graph stay in
// device memory on the device layer: the gradients of its inputs, and
// those of its weights that go to a device sum.
func (e *Executor) gradsKept(p *blocks.Piece) func(k int) bool {
	summed := e.weightGradsSummed(p.Weights, p.GradWeights, len(p.GradInputs))
	return func(k int) bool { return k < len(p.GradInputs) && e.placed(k) || summed(k) }
}

// weightGradsSummed returns, for a graph whose outputs from first on are
// the gradients of weights[gradWeights[...]] (a piece's or the head's),
// which outputs go to a device gradient sum (AccumulateBatches).
func (e *Executor) weightGradsSummed(weights []string, gradWeights []int, first int) func(k int) bool {
	return func(k int) bool { return k >= first && e.summed(weights[gradWeights[k-first]]) }
}

// addParamGrad adds scale x g into the gradient store entry of param, or
// into its device sum (AccumulateBatches, where g is in device memory).
func (e *Executor) addParamGrad(st *stepState, param string, g *ortc.Value) error {
	i, ok := e.trained[param]
	if !ok {
		return fmt.Errorf("gradient of %q, which is not trained", param)
	}
	if n := len(e.weights.At(i).Data); g.Len() != n {
		return fmt.Errorf("gradient of %q has %d values, the parameter %d", param, g.Len(), n)
	}
	if e.summed(param) {
		return e.addSummed(param, 0, g, st.scale)
	}
	dst := st.grads.At(i).Data
	addScaled(dst, g.Float32s(), st.scale)
	e.countGradient(len(dst))
	return nil
}

func addInto(dst, src []float32) {
	_ = dst[len(src)-1]
	for i, v := range src {
		dst[i] += v
	}
}

func addScaled(dst, src []float32, a float32) {
	if len(src) == 0 {
		return
	}
	_ = dst[len(src)-1]
	for i, v := range src {
		dst[i] += a * v
	}
}

// embed computes the first block's input.
func (e *Executor) embed(st *stepState) error {
	if em := e.prog.Embedding; em != nil {
		table := e.tensors[em.Table]
		ids, err := e.indices(st, em.Indices)
		if err != nil {
			return err
		}
		iv, _ := st.lookup(em.Indices)
		for p, id := range ids {
			if id < 0 || id >= table.Shape[0] {
				return fmt.Errorf("model: executor: embedding index %d at position %d outside [0, %d)", id, p, table.Shape[0])
			}
		}
		if e.dev != nil && len(iv.Shape()) == 2 && len(table.Shape) == 2 {
			// From the table's device copy (the device optimizer
			// updates it there).
			v, err := e.gatherRows(em.Table, iv.Shape(), ids)
			if err != nil {
				return fmt.Errorf("model: executor: embedding: %w", err)
			}
			st.step.put(em.Output, v)
			return e.embedPiece(st)
		}
		if e.devOpt != nil {
			return fmt.Errorf("model: executor: embedding indices of shape %v: the device optimizer gathers [rows, seq] only", iv.Shape())
		}
		row := len(table.Data) / int(table.Shape[0])
		out := make([]float32, len(ids)*row)
		for p, id := range ids {
			copy(out[p*row:(p+1)*row], table.Data[int(id)*row:(int(id)+1)*row])
		}
		shape := append(append([]int64(nil), iv.Shape()...), table.Shape[1:]...)
		v, err := ortc.NewTensor(e.env, shape, out)
		if err != nil {
			return fmt.Errorf("model: executor: embedding: %w", err)
		}
		st.step.put(em.Output, v)
	}
	return e.embedPiece(st)
}

// embedPiece runs the program's generic embedding piece, if any.
func (e *Executor) embedPiece(st *stepState) error {
	if p := e.prog.Embed; p != nil {
		if err := e.forward(st, p, nil); err != nil {
			return fmt.Errorf("model: executor: embedding: %w", err)
		}
	}
	return nil
}

// indices reads an integer tensor as int64s.
func (e *Executor) indices(st *stepState, name string) ([]int64, error) {
	v, ok := st.lookup(name)
	if !ok {
		return nil, fmt.Errorf("model: executor: embedding indices %q are not computed", name)
	}
	if v.Placed() {
		h, release, err := e.hostValue(v)
		if err != nil {
			return nil, fmt.Errorf("model: executor: embedding indices %q: %w", name, err)
		}
		defer release()
		v = h
		if v.Elem() == ortc.Int64 {
			return slices.Clone(v.Int64s()), nil
		}
	}
	switch v.Elem() {
	case ortc.Int64:
		return v.Int64s(), nil
	case ortc.Int32:
		out := make([]int64, v.Len())
		for i, x := range v.Int32s() {
			out[i] = int64(x)
		}
		return out, nil
	}
	return nil, fmt.Errorf("model: executor: embedding indices %q have element type %d", name, v.Elem())
}

// embedBackward finishes the step: the generic embedding piece's
// backward, then the gathered rows' gradients scattered into the table's.
func (e *Executor) embedBackward(st *stepState) error {
	if p := e.prog.Embed; p != nil {
		if err := e.backward(st, p); err != nil {
			return fmt.Errorf("model: executor: embedding backward: %w", err)
		}
	}
	em := e.prog.Embedding
	if em == nil {
		return nil
	}
	i, trained := e.trained[em.Table]
	g, ok := st.gradVal[em.Output]
	if !trained || !ok {
		return nil
	}
	ids, err := e.indices(st, em.Indices)
	if err != nil {
		return err
	}
	g, release, err := e.hostValue(g)
	if err != nil {
		return fmt.Errorf("model: executor: the embedding's gradient: %w", err)
	}
	defer release()
	if e.summed(em.Table) {
		return e.scatterSummed(em.Table, e.tensors[em.Table].Shape, ids, g.Float32s(), st.scale)
	}
	dst := st.grads.At(i).Data
	src := g.Float32s()
	row := len(src) / len(ids)
	for p, id := range ids {
		addScaled(dst[int(id)*row:(int(id)+1)*row], src[p*row:(p+1)*row], st.scale)
	}
	return nil
}

// blockForward runs block j forward: the whole block, whose values are
// then kept for its backward pass where they fit (keepBlock), or with
// recompute (the backward pass of a block whose values were not kept)
// what runBlock recomputes.
func (e *Executor) blockForward(st *stepState, j int, recompute bool) error {
	if recompute {
		return e.runBlock(st, j, true)
	}
	err := e.runBlock(st, j, false)
	if err == nil {
		e.keepBlock(st, j)
	}
	st.local.release()
	return err
}

// runBlock runs block j forward into the step's values (the block's own
// in st.local). With recompute it stops before the Post piece, whose
// backward graph recomputes it, or with a Tail, before the tail, whose
// chunks' backward graphs recompute it.
func (e *Executor) runBlock(st *stepState, j int, recompute bool) error {
	b := &e.prog.Blocks[j]
	if b.Core == nil {
		if recompute {
			return nil
		}
		return e.forward(st, &b.Pre, st.local)
	}
	if err := e.forward(st, &b.Pre, st.local); err != nil {
		return err
	}
	if err := e.coreForward(st, b.Core); err != nil {
		return err
	}
	if recompute && b.Tail == nil {
		return nil
	}
	if err := e.forward(st, b.Post, st.local); err != nil {
		return err
	}
	if recompute {
		return nil
	}
	if b.Tail != nil {
		return e.tailForward(st, b.Tail, st.local)
	}
	return nil
}

// keepBlock keeps block j's values, just computed, for its backward pass
// when they fit in what ExecutorOptions.KeptBytes leaves: then the
// backward pass reads them instead of recomputing the block. A block
// without an attention core recomputes nothing (its backward graph reads
// its input only), so nothing of it is kept.
func (e *Executor) keepBlock(st *stepState, j int) {
	if e.prog.Blocks[j].Core == nil || len(st.local) == 0 {
		return
	}
	var n int64
	for _, v := range st.local {
		n += int64(v.Len()) * int64(v.Elem().Size())
	}
	if e.kept+n > e.opt.KeptBytes {
		return
	}
	st.kept[j] = maps.Clone(st.local)
	clear(st.local) // moved, not released
	e.kept += n
	// The attention output may lie in the core's scratch buffer: the
	// next block's takes a new one.
	delete(e.pool, coreOutScratch)
}

// trimAfterLayer is the size of a micro-batch's residual stream (rows x
// tokens x hidden floats) from which the executor hands glibc's freed
// pages back after each layer (ortc.TrimMalloc): a layer's temporaries
// (the MLP's chunks in particular, below glibc's mmap threshold) leave
// holes in its heaps that later layers do not fill, and the resident size
// grows layer after layer. Small models skip it.
const trimAfterLayer = 8 << 20

// trim is ortc.TrimMalloc after a layer of a large micro-batch.
func (e *Executor) trim(st *stepState) {
	if int64(st.b.Batch)*int64(st.b.Seq)*int64(e.hidden(st))*4 >= trimAfterLayer {
		ortc.TrimMalloc()
	}
}

// hidden returns the residual stream's width: the last dim of the first
// block's input.
func (e *Executor) hidden(st *stepState) int {
	if v, ok := st.lookup(e.prog.Blocks[0].Input); ok {
		if sh := v.Shape(); len(sh) > 0 {
			return int(sh[len(sh)-1])
		}
	}
	return 0
}

// blockBackward runs block j backward from the gradient of its output
// (in st.gradVal) to that of its input.
func (e *Executor) blockBackward(st *stepState, j int) error {
	b := &e.prog.Blocks[j]
	defer st.local.release()
	if kept := st.kept[j]; kept != nil {
		maps.Copy(st.local, kept)
		st.kept[j] = nil
	} else {
		if b.Core != nil {
			e.recomputed++
		}
		if err := e.blockForward(st, j, true); err != nil {
			return err
		}
	}
	if b.Core == nil {
		if err := e.backward(st, &b.Pre); err != nil {
			return err
		}
	} else {
		if b.Tail != nil {
			if err := e.tailBackward(st, b.Tail); err != nil {
				return err
			}
		}
		if err := e.backward(st, b.Post); err != nil {
			return err
		}
		if err := e.coreBackward(st, b.Core); err != nil {
			return err
		}
		if err := e.backward(st, &b.Pre); err != nil {
			return err
		}
	}
	// Keep only the gradient of the block's input.
	for name := range st.gradVal {
		if name != b.Input {
			st.gradVal.drop(name)
		}
	}
	st.step.drop(b.Output)
	return nil
}

// head runs the LM head and the loss on chunks of the loss positions,
// filling res and the gradient of the head's input.
func (e *Executor) head(st *stepState, res *TrainResult) error {
	h := &e.prog.Head
	b := st.b
	n := b.Batch * b.Seq
	res.LogProbs = resize(res.LogProbs, n)
	res.Entropy = resize(res.Entropy, n)
	clear(res.LogProbs)
	clear(res.Entropy)
	res.Loss = 0
	z, ok := st.step[h.Input]
	if !ok {
		return fmt.Errorf("the head's input %q is not computed", h.Input)
	}
	zs := z.Shape()
	if len(zs) != 3 || zs[0] != int64(b.Batch) || zs[1] != int64(b.Seq) {
		return fmt.Errorf("the head's input %q has shape %v, want [%d, %d, hidden]", h.Input, zs, b.Batch, b.Seq)
	}
	hidden := int(zs[2])
	var pos []int
	count := 0.0
	for i, m := range b.LossMask {
		if m != 0 {
			pos = append(pos, i)
			count += float64(m)
		}
	}
	count = math.Max(count, 1)
	var limit []int64 // the limited graphs' input
	if e.limited() {
		limit = []int64{int64(e.limit)}
	}
	if h.Table != "" {
		g, err := e.tableHead(st, res, z, pos, count, limit)
		if err != nil {
			return err
		}
		return e.finishHead(st, g)
	}
	hs, err := e.newHeadStates(z, pos)
	if err != nil {
		return err
	}
	defer hs.release()
	live := lossLive
	if limit != nil {
		live += 2 // the logits' slice, and its gradient padded back
	}
	chunk := max(1, int(e.opt.LossChunkBytes/int64(e.vocab*4*live)))
	detached := []bool{b.OldLogProbs == nil}
	summed := e.weightGradsSummed(h.Weights, h.GradWeights, 4)
	for start := 0; start < len(pos); start += chunk {
		ps := pos[start:min(len(pos), start+chunk)]
		c := len(ps)
		tgt := make([]int64, c)
		adv := make([]float32, c)
		old := make([]float32, c)
		w := make([]float32, c)
		for k, p := range ps {
			tgt[k] = b.InputIDs[p+1]
			adv[k] = b.Advantages[p]
			if b.OldLogProbs != nil {
				old[k] = b.OldLogProbs[p]
			}
			w[k] = float32(float64(b.LossMask[p]) / count)
		}
		var owned []*ortc.Value
		wrap := func(v *ortc.Value, err error) *ortc.Value {
			if err == nil {
				owned = append(owned, v)
			}
			return v
		}
		chunkShape := []int64{1, int64(c)}
		in := []*ortc.Value{wrap(hs.states(e, start, start+c, []int64{1, int64(c), int64(hidden)}))}
		for _, name := range h.Inputs[1:] {
			v, ok := st.lookup(name)
			if !ok {
				return fmt.Errorf("the head's input %q is not computed", name)
			}
			in = append(in, v)
		}
		for _, wn := range h.Weights {
			in = append(in, e.weight(wn))
		}
		in = append(in, wrap(ortc.NewTensor(e.env, chunkShape, tgt)), wrap(ortc.NewTensor(e.env, chunkShape, adv)),
			wrap(ortc.NewTensor(e.env, chunkShape, old)), wrap(ortc.NewTensor(e.env, chunkShape, w)),
			wrap(ortc.NewTensor(e.env, []int64{1}, []float32{b.ClipLow})), wrap(ortc.NewTensor(e.env, []int64{1}, []float32{b.ClipHigh})),
			wrap(ortc.NewTensor(e.env, []int64{1}, detached)))
		wrapped := 8
		if limit != nil {
			in = append(in, wrap(ortc.NewTensor(e.env, []int64{1}, limit)))
			wrapped++
		}
		release := func() {
			for _, v := range owned {
				v.Release()
			}
		}
		if len(owned) != wrapped {
			release()
			return errors.New("wrap loss chunk inputs")
		}
		out := make([]*ortc.Value, 4+len(h.GradWeights))
		// The input's gradient stays with the states' (on the device
		// layer, in device memory).
		err := e.runKeeping(e.trainGraph(), in, out, func(k int) bool { return k == 3 && hs.grad != nil || summed(k) })
		release()
		if err != nil {
			return err
		}
		lp, ent, loss := out[0].Float32s(), out[1].Float32s(), out[2].Float32s()
		for k, p := range ps {
			res.LogProbs[p] = lp[k]
			res.Entropy[p] = ent[k]
		}
		res.Loss += loss[0]
		err = hs.addGrad(e, start, out[3])
		for k, j := range h.GradWeights {
			if err == nil {
				err = e.addParamGrad(st, h.Weights[j], out[4+k])
			}
		}
		for _, v := range out {
			v.Release()
		}
		if err != nil {
			return err
		}
	}
	g, err := hs.gradient(e)
	if err != nil {
		return err
	}
	return e.finishHead(st, g)
}

// finishHead hands the gradient of the head's input, g, to the backward
// pass and drops the input.
func (e *Executor) finishHead(st *stepState, g *ortc.Value) error {
	h := &e.prog.Head
	st.gradVal.put(h.Input, g)
	if !e.isBlockInput(h.Input) {
		st.step.drop(h.Input)
	}
	return nil
}

func (e *Executor) isBlockInput(v string) bool {
	for _, b := range e.prog.Blocks {
		if b.Input == v {
			return true
		}
	}
	return false
}

// scratch returns a zeroed buffer of n floats kept for reuse under key.
func (e *Executor) scratch(key string, n int) []float32 {
	buf := e.pool[key]
	if cap(buf) < n {
		buf = make([]float32, n)
		e.pool[key] = buf
	}
	buf = buf[:n]
	clear(buf)
	return buf
}
