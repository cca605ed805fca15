package autodiff

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/spiral-rl/spiral/model/onnx/onnxpb"
	"google.golang.org/protobuf/proto"
)

// Names of the training graph's extra inputs and its outputs.
const (
	// InputLossMask is the [batch, seq] float input: 1 where the token at
	// position t+1 is a response token whose log-probability enters the loss.
	InputLossMask = "loss_mask"
	// InputAdvantages is the [batch, seq] float input A, aligned like
	// OutputLogprobs.
	InputAdvantages = "advantages"
	// InputOldLogprobs is the [batch, seq] float input logp_old, aligned like
	// OutputLogprobs.
	InputOldLogprobs = "old_logprobs"
	// InputClipLow and InputClipHigh are the [1] float inputs eps_low and
	// eps_high of the clipped ratio.
	InputClipLow  = "clip_low"
	InputClipHigh = "clip_high"
	// OutputLogprobs is the [batch, seq] float output whose entry t is
	// log p(input_ids[t+1] | input_ids[..t]); the last position has no next
	// token and holds 0.
	OutputLogprobs = "logprobs"
	// OutputEntropy is the [batch, seq] float output -sum_v p log p of the
	// predictive distribution at position t (the distribution of token t+1).
	OutputEntropy = "entropy"
	// OutputLoss is the [1] float output: the token-mean clipped
	// policy-gradient loss. It is a one-element vector rather than a scalar
	// because onnxruntime_go cannot auto-allocate 0-D outputs.
	OutputLoss = "loss"
	// OutputLogits is the forward graph's [batch, seq, vocab] logits, kept as
	// an output only with LMOptions.KeepLogits.
	OutputLogits = "logits"
)

// pastPrefix starts the names of the KV-cache inputs of an optimum-style
// causal LM; presentPrefix starts the names of its cache outputs.
const (
	pastPrefix    = "past_key_values."
	presentPrefix = "present."
)

// LMOptions configures LossGraph and TrainingGraph. The zero value is ready.
type LMOptions struct {
	// Trainable selects the initializers that become weight inputs and get
	// gradients. nil selects every float initializer with more than one
	// element (scalars and one-element constants of exported graphs, such as
	// epsilons, stay constants).
	Trainable func(t *onnxpb.TensorProto) bool
	// Frozen selects further initializers that become graph inputs
	// (LMGraph.Frozen, fed by the caller like the weights) without a
	// gradient: parameters that are not trained. nil selects none.
	Frozen func(t *onnxpb.TensorProto) bool
	// KeepLogits keeps OutputLogits as an output (tests, diagnostics).
	KeepLogits bool
}

// DefaultTrainable is the LMOptions.Trainable used when none is given:
// float initializers with more than one element. It reads only the
// tensor's type and dims, never its data.
func DefaultTrainable(w *onnxpb.TensorProto) bool {
	n := int64(1)
	for _, d := range w.GetDims() {
		n *= d
	}
	return isFloat(w.GetDataType()) && n > 1
}

// LMGraph is a generated causal-LM training graph.
type LMGraph struct {
	// Graph computes OutputLogprobs, OutputEntropy, OutputLoss and (from
	// TrainingGraph) GradName(w) for each trainable weight w.
	Graph *onnxpb.GraphProto
	// Weights are the trainable initializers, now graph inputs, in the order
	// of the source graph's initializers.
	Weights []*onnxpb.ValueInfoProto
	// Frozen are the initializers selected by LMOptions.Frozen, now graph
	// inputs without gradients, in the same order.
	Frozen []*onnxpb.ValueInfoProto
}

// WeightNames returns the names of l.Weights.
func (l *LMGraph) WeightNames() []string {
	names := make([]string, len(l.Weights))
	for i, w := range l.Weights {
		names[i] = w.GetName()
	}
	return names
}

// TrainingGraph derives the training graph of a causal LM with the optimum
// signature (inputs input_ids, attention_mask, position_ids,
// past_key_values.{i}.key|value [batch, kv_heads, past, head_dim]; outputs
// logits [batch, seq, vocab] and present.*): LossGraph, then Differentiate
// with respect to every trainable weight. Outputs: OutputLogprobs,
// OutputEntropy, OutputLoss and GradName(w) per weight.
func TrainingGraph(g *onnxpb.GraphProto, opt LMOptions) (*LMGraph, error) {
	l, err := LossGraph(g, opt)
	if err != nil {
		return nil, err
	}
	keep := []string{OutputLogprobs, OutputEntropy, OutputLoss}
	if opt.KeepLogits {
		keep = append(keep, OutputLogits)
	}
	dg, err := Differentiate(l.Graph, OutputLoss, l.WeightNames(), Options{KeepOutputs: keep})
	if err != nil {
		return nil, err
	}
	l.Graph = pruneDead(dg)
	return l, nil
}

// LossGraph is TrainingGraph without the gradients: the full-sequence
// forward with an empty KV cache and the loss. It
//
//   - replaces each past_key_values.* input by zeros [batch, kv_heads, 0,
//     head_dim] (batch read from input_ids at run time; kv_heads and head_dim
//     must be static in the input's type) and drops the present.* outputs;
//   - turns the trainable initializers into graph inputs (LMGraph.Weights);
//   - adds the inputs InputLossMask, InputAdvantages, InputOldLogprobs
//     ([batch, seq]) and InputClipLow, InputClipHigh ([1]), all of the logits'
//     float type;
//   - computes, with lp = LogSoftmax(logits) [batch, seq, vocab]:
//     logprobs[b,t] = lp[b, t, input_ids[b, t+1]] for t < seq-1 and 0 at
//     t = seq-1; entropy[b,t] = -sum_v exp(lp[b,t,v]) lp[b,t,v];
//     ratio = exp(logprobs - old_logprobs);
//     obj = min(ratio A, clip(ratio, 1-clip_low, 1+clip_high) A);
//     loss = -sum(obj * loss_mask) / max(sum(loss_mask), 1).
//
// The min and the clip are written with Where, so the gradient is the exact
// subgradient PPO uses: through ratio where the unclipped term is selected
// (ties select it) or the ratio lies inside the clip range, zero otherwise.
// With old_logprobs = logprobs the ratio is 1 and d loss = -sum(A mask
// d logprobs) / sum(mask): REINFORCE. Supervised cross-entropy is the same
// graph fed advantages = 1 and old_logprobs = the logprobs of the same
// batch (a detached copy).
//
// loss_mask[b,t] selects the token input_ids[b,t+1]; the caller sets it to 0
// at the last position and wherever t+1 is not a response token.
func LossGraph(g *onnxpb.GraphProto, opt LMOptions) (*LMGraph, error) {
	for _, name := range []string{OutputLogprobs, OutputEntropy, OutputLoss, InputLossMask, InputAdvantages, InputOldLogprobs, InputClipLow, InputClipHigh} {
		if hasValue(g, name) {
			return nil, fmt.Errorf("autodiff: LM graph already has a value named %q", name)
		}
	}
	l, err := ForwardGraph(g, opt)
	if err != nil {
		return nil, err
	}
	out := l.Graph
	t := inferTypes(out)
	dt := t.dt(OutputLogits)

	// Loss, logprobs and entropy.
	b := newBuilder(out, lmTag)
	seqInput := func(name string) *onnxpb.ValueInfoProto {
		return namedDims(name, dt, "batch", "sequence")
	}
	out.Input = append(out.Input, seqInput(InputLossMask), seqInput(InputAdvantages), seqInput(InputOldLogprobs),
		valueInfo(InputClipLow, dt, tinfo{dims: []int64{1}, known: true}),
		valueInfo(InputClipHigh, dt, tinfo{dims: []int64{1}, known: true}))

	lp := b.op("LogSoftmax", []string{OutputLogits}, attrInt("axis", -1)) // [B, T, V]
	ids := "input_ids"
	next := b.op("Slice", []string{ids, b.ints(1), b.ints(math.MaxInt64), b.ints(1)}) // [B, T-1]
	pad := b.op("ConstantOfShape", []string{b.op("Concat", []string{b.op("Shape", []string{ids}, attrInt("start", 0), attrInt("end", 1)), b.ints(1)}, attrInt("axis", 0))},
		attrTensor("value", tensorI64([]int64{1}, 0)))
	tgt := b.op("Concat", []string{next, b.cast(pad, t.dt(ids))}, attrInt("axis", 1)) // [B, T]
	tok, ent := tokenLogProbs(b, lp, tgt, t.dt(ids))
	seqLen := b.op("Gather", []string{b.shape(ids), b.scalarInt(1)})
	pos := b.op("Range", []string{b.scalarInt(0), seqLen, b.scalarInt(1)})
	hasNext := b.cast(b.op("Less", []string{pos, b.op("Sub", []string{seqLen, b.scalarInt(1)})}), dt) // [T]
	addNode(out, "Mul", []string{tok, hasNext}, OutputLogprobs)
	addNode(out, "Identity", []string{ent}, OutputEntropy)

	obj := clippedObjective(b, dt, OutputLogprobs, InputOldLogprobs, InputAdvantages, InputClipLow, InputClipHigh)
	one := b.scalar(dt, 1)
	total := b.op("ReduceSum", []string{b.op("Mul", []string{obj, InputLossMask})}, attrInt("keepdims", 0))
	count := b.op("Max", []string{b.op("ReduceSum", []string{InputLossMask}, attrInt("keepdims", 0)), one})
	loss := b.op("Neg", []string{b.op("Div", []string{total, count})})
	addNode(out, "Reshape", []string{loss, b.ints(1)}, OutputLoss)

	outs := []*onnxpb.ValueInfoProto{
		namedDims(OutputLogprobs, dt, "batch", "sequence"),
		namedDims(OutputEntropy, dt, "batch", "sequence"),
		valueInfo(OutputLoss, dt, tinfo{dims: []int64{1}, known: true}),
	}
	if opt.KeepLogits {
		outs = append(outs, out.Output...)
	}
	out.Output = outs
	l.Graph = pruneDead(out)
	return l, nil
}

// ForwardGraph is the forward half of LossGraph: the causal LM g with an
// empty KV cache (each past_key_values.* input replaced by zeros [batch,
// kv_heads, 0, head_dim], batch read from input_ids at run time; kv_heads
// and head_dim must be static), its trainable initializers turned into
// graph inputs (LMGraph.Weights, then LMGraph.Frozen), and one output,
// OutputLogits.
func ForwardGraph(g *onnxpb.GraphProto, opt LMOptions) (*LMGraph, error) {
	if name := hasPrefixName(g, NamePrefix); name != "" {
		return nil, fmt.Errorf("autodiff: graph already uses the reserved name prefix %q (%q)", NamePrefix, name)
	}
	out := proto.Clone(g).(*onnxpb.GraphProto)
	t := inferTypes(out)
	if !slices.ContainsFunc(out.Input, func(v *onnxpb.ValueInfoProto) bool { return v.GetName() == "input_ids" }) {
		return nil, fmt.Errorf("autodiff: LM graph has no input_ids input")
	}
	if !slices.ContainsFunc(out.Output, func(v *onnxpb.ValueInfoProto) bool { return v.GetName() == OutputLogits }) {
		return nil, fmt.Errorf("autodiff: LM graph has no %s output", OutputLogits)
	}
	if dt := t.dt(OutputLogits); !isFloat(dt) {
		return nil, fmt.Errorf("autodiff: logits have element type %d, want a float type", dt)
	}

	// Empty KV cache, built before every other node.
	pre := &onnxpb.GraphProto{}
	pb := newBuilder(pre, pastTag)
	batch := pb.op("Shape", []string{"input_ids"}, attrInt("start", 0), attrInt("end", 1))
	var inputs []*onnxpb.ValueInfoProto
	for _, in := range out.Input {
		if !strings.HasPrefix(in.GetName(), pastPrefix) {
			inputs = append(inputs, in)
			continue
		}
		ti := t.info[in.GetName()]
		if !ti.known || len(ti.dims) != 4 || ti.dims[1] < 0 || ti.dims[3] < 0 {
			return nil, fmt.Errorf("autodiff: cache input %q: want static kv_heads and head_dim in [batch, kv_heads, past, head_dim], got %v", in.GetName(), ti.dims)
		}
		shape := pb.op("Concat", []string{batch, pb.ints(ti.dims[1], 0, ti.dims[3])}, attrInt("axis", 0))
		pre.Node = append(pre.Node, &onnxpb.NodeProto{
			Name: proto.String(pb.fresh("empty")), OpType: proto.String("ConstantOfShape"),
			Input: []string{shape}, Output: []string{in.GetName()},
			Attribute: []*onnxpb.AttributeProto{attrTensor("value", tensorFloat(ti.dt, []int64{1}, 0))},
		})
	}
	out.Node = append(pre.Node, out.Node...)

	// Trainable initializers become inputs.
	trainable := opt.Trainable
	if trainable == nil {
		trainable = DefaultTrainable
	}
	l := &LMGraph{}
	var keep []*onnxpb.TensorProto
	for _, w := range out.Initializer {
		switch {
		case isFloat(w.GetDataType()) && trainable(w):
			vi := valueInfo(w.GetName(), w.GetDataType(), tensorInfo(w))
			l.Weights = append(l.Weights, vi)
			inputs = append(inputs, vi)
		case opt.Frozen != nil && opt.Frozen(w):
			l.Frozen = append(l.Frozen, valueInfo(w.GetName(), w.GetDataType(), tensorInfo(w)))
		default:
			keep = append(keep, w)
		}
	}
	out.Input = append(inputs, l.Frozen...)
	out.Initializer = keep
	for _, o := range out.Output {
		if o.GetName() == OutputLogits {
			out.Output = []*onnxpb.ValueInfoProto{o}
			break
		}
	}
	l.Graph = pruneDead(out)
	return l, nil
}

// tokenLogProbs returns, for log-probabilities lp [..., V] and target ids
// tgt [...] of element type idType, the target's log-probability [...]
// and the entropy -sum_v exp(lp) lp [...].
func tokenLogProbs(b *builder, lp, tgt string, idType int32) (tok, ent string) {
	if idType != tInt64 {
		tgt = b.cast(tgt, tInt64)
	}
	tok = b.op("GatherElements", []string{lp, b.op("Unsqueeze", []string{tgt, b.ints(-1)})}, attrInt("axis", -1))
	tok = b.op("Squeeze", []string{tok, b.ints(-1)})
	ent = b.op("Neg", []string{b.op("ReduceSum", []string{b.op("Mul", []string{b.op("Exp", []string{lp}), lp}), b.ints(-1)}, attrInt("keepdims", 0))})
	return tok, ent
}

// clippedObjective returns PPO's (Schulman et al. 2017, arXiv:1707.06347)
// per-token objective min(ratio A,
// clip(ratio, 1-lo, 1+hi) A), ratio = exp(logp - old), written with Where
// so that its gradient is the subgradient PPO uses (see LossGraph); the
// asymmetric range is DAPO's clip-higher (arXiv:2503.14476).
func clippedObjective(b *builder, dt int32, logp, old, adv, lo, hi string) string {
	one := b.scalar(dt, 1)
	ratio := b.op("Exp", []string{b.op("Sub", []string{logp, old})})
	low := b.op("Sub", []string{one, lo})
	high := b.op("Add", []string{one, hi})
	clipped := b.op("Where", []string{b.op("Less", []string{ratio, low}), low,
		b.op("Where", []string{b.op("Greater", []string{ratio, high}), high, ratio})})
	s1 := b.op("Mul", []string{ratio, adv})
	s2 := b.op("Mul", []string{clipped, adv})
	return b.op("Where", []string{b.op("Less", []string{s2, s1}), s2, s1})
}

// Names of HeadLossGraph's extra inputs and outputs (besides the gradients
// GradName(x)).
const (
	// HeadTargets is the [1, n] int64 input: the token each position scores.
	HeadTargets = "targets"
	// HeadWeights is the [1, n] float input: each position's weight in the
	// loss (its loss-mask entry over the micro-batch's loss-token count).
	HeadWeights = "loss_weights"
	// HeadDetached is the [1] bool input: true when the old log-probabilities
	// are the current ones (see HeadLossGraph).
	HeadDetached = "detached"
	// HeadObjective is the output the gradients are of.
	HeadObjective = "objective"
	// HeadVocabLimit is the limited graph's [1] int64 input L: the
	// softmax is over the first L logits (ids 0..L-1) only.
	HeadVocabLimit = "vocab_limit"
)

// HeadLossGraph turns head, a graph from hidden states (its input x, of
// shape [1, n, hidden]) to logits (its only output, [1, n, vocab]), into
// the loss graph of one chunk of n positions and differentiates it with
// respect to x and the inputs named in wrt. Inputs: head's, then
// HeadTargets, InputAdvantages, InputOldLogprobs, HeadWeights ([1, n]),
// InputClipLow, InputClipHigh ([1]) and HeadDetached. Outputs:
// OutputLogprobs and OutputEntropy ([1, n]), OutputLoss ([1]), then
// GradName of x and of each wrt.
//
// The loss is LossGraph's, weighted per position: loss = -sum(obj w).
// When detached is true the old log-probabilities are taken to be the
// current ones (a detached copy): the ratio is exactly 1, so OutputLoss
// is -sum(A w) and the gradient -sum(A w d logp) (REINFORCE; with A = 1,
// cross-entropy), old_logprobs being ignored.
//
// With limited, the graph takes one more input, HeadVocabLimit (last), and
// its softmax is over the ids below it only, the logits sliced to them:
// the policy of a model whose tokenizer has fewer ids than its logits
// (the ids above have probability 0, and no gradient reaches their
// logits). The targets must lie below it.
func HeadLossGraph(head *onnxpb.GraphProto, x string, wrt []string, limited bool) (*onnxpb.GraphProto, error) {
	for _, name := range []string{OutputLogprobs, OutputEntropy, OutputLoss, HeadTargets, InputAdvantages, InputOldLogprobs, HeadWeights, InputClipLow, InputClipHigh, HeadDetached, HeadObjective, HeadVocabLimit} {
		if hasValue(head, name) {
			return nil, fmt.Errorf("autodiff: head graph already has a value named %q", name)
		}
	}
	if len(head.GetOutput()) != 1 {
		return nil, fmt.Errorf("autodiff: head graph has %d outputs, want the logits only", len(head.GetOutput()))
	}
	out := proto.Clone(head).(*onnxpb.GraphProto)
	logits := out.Output[0].GetName()
	t := inferTypes(out)
	dt := t.dt(logits)
	if !isFloat(dt) {
		return nil, fmt.Errorf("autodiff: head logits %q have element type %d, want a float type", logits, dt)
	}
	b := newBuilder(out, lmTag)
	chunk := func(name string, dt int32) *onnxpb.ValueInfoProto {
		return valueInfo(name, dt, tinfo{dims: []int64{1, -1}, known: true})
	}
	one := func(name string, dt int32) *onnxpb.ValueInfoProto {
		return valueInfo(name, dt, tinfo{dims: []int64{1}, known: true})
	}
	out.Input = append(out.Input, chunk(HeadTargets, tInt64), chunk(InputAdvantages, dt), chunk(InputOldLogprobs, dt), chunk(HeadWeights, dt),
		one(InputClipLow, dt), one(InputClipHigh, dt), one(HeadDetached, tBool))
	z := logits
	if limited {
		out.Input = append(out.Input, one(HeadVocabLimit, tInt64))
		z = b.op("Slice", []string{logits, b.ints(0), HeadVocabLimit, b.ints(-1)})
	}

	lp := b.op("LogSoftmax", []string{z}, attrInt("axis", -1))
	tok, ent := tokenLogProbs(b, lp, HeadTargets, tInt64)
	addNode(out, "Identity", []string{tok}, OutputLogprobs)
	addNode(out, "Identity", []string{ent}, OutputEntropy)
	ppo := clippedObjective(b, dt, OutputLogprobs, InputOldLogprobs, InputAdvantages, InputClipLow, InputClipHigh)
	obj := b.op("Where", []string{HeadDetached, b.op("Mul", []string{InputAdvantages, OutputLogprobs}), ppo})
	report := b.op("Where", []string{HeadDetached, InputAdvantages, ppo})
	weighted := func(v string) string {
		return b.op("Neg", []string{b.op("ReduceSum", []string{b.op("Mul", []string{v, HeadWeights}), b.ints(0, 1)}, attrInt("keepdims", 0))})
	}
	addNode(out, "Reshape", []string{weighted(obj), b.ints(1)}, HeadObjective)
	addNode(out, "Reshape", []string{weighted(report), b.ints(1)}, OutputLoss)
	out.Output = []*onnxpb.ValueInfoProto{
		valueInfo(OutputLogprobs, dt, tinfo{dims: []int64{1, -1}, known: true}),
		valueInfo(OutputEntropy, dt, tinfo{dims: []int64{1, -1}, known: true}),
		one(OutputLoss, dt),
		one(HeadObjective, dt),
	}
	dg, err := Differentiate(out, HeadObjective, append([]string{x}, wrt...), Options{KeepOutputs: []string{OutputLogprobs, OutputEntropy, OutputLoss}})
	if err != nil {
		return nil, err
	}
	dg.Output = slices.DeleteFunc(dg.Output, func(v *onnxpb.ValueInfoProto) bool { return v.GetName() == HeadObjective })
	return pruneDead(dg), nil
}

// hasValue reports whether g has a value (input, initializer or node
// output) called name.
func hasValue(g *onnxpb.GraphProto, name string) bool {
	for _, v := range g.GetInput() {
		if v.GetName() == name {
			return true
		}
	}
	for _, v := range g.GetInitializer() {
		if v.GetName() == name {
			return true
		}
	}
	for _, n := range g.GetNode() {
		if slices.Contains(n.GetOutput(), name) {
			return true
		}
	}
	return false
}

// Prune drops, in place, the nodes of g that no output depends on and the
// initializers and value_info entries no remaining node reads; inputs are
// kept. It returns g.
func Prune(g *onnxpb.GraphProto) *onnxpb.GraphProto { return pruneDead(g) }

// ValueInfos returns a ValueInfoProto for every value of g whose type is
// known or inferred: its element type and, when its rank is known, its
// dims: values where static, the same dim_param name ("sym<k>") for dims
// known to be equal at run time, none where nothing is known.
func ValueInfos(g *onnxpb.GraphProto) map[string]*onnxpb.ValueInfoProto {
	t := inferTypes(g)
	out := make(map[string]*onnxpb.ValueInfoProto, len(t.info))
	for name, ti := range t.info {
		if ti.dt == 0 {
			continue
		}
		tt := &onnxpb.TypeProto_Tensor{ElemType: proto.Int32(ti.dt)}
		if ti.known {
			sh := &onnxpb.TensorShapeProto{}
			for _, d := range ti.dims {
				dim := &onnxpb.TensorShapeProto_Dimension{}
				switch {
				case d >= 0:
					dim.Value = &onnxpb.TensorShapeProto_Dimension_DimValue{DimValue: d}
				case isSym(d):
					dim.Value = &onnxpb.TensorShapeProto_Dimension_DimParam{DimParam: fmt.Sprintf("sym%d", symBase-d)}
				}
				sh.Dim = append(sh.Dim, dim)
			}
			tt.Shape = sh
		}
		out[name] = &onnxpb.ValueInfoProto{Name: proto.String(name), Type: &onnxpb.TypeProto{Value: &onnxpb.TypeProto_TensorType{TensorType: tt}}}
	}
	return out
}
func addNode(g *onnxpb.GraphProto, op string, in []string, out string) {
	g.Node = append(g.Node, &onnxpb.NodeProto{
		Name: proto.String(lmTag + out), OpType: proto.String(op), Input: in, Output: []string{out},
	})
}

// namedDims makes a tensor ValueInfoProto with symbolic dims.
func namedDims(name string, dt int32, dims ...string) *onnxpb.ValueInfoProto {
	sh := &onnxpb.TensorShapeProto{}
	for _, d := range dims {
		sh.Dim = append(sh.Dim, &onnxpb.TensorShapeProto_Dimension{Value: &onnxpb.TensorShapeProto_Dimension_DimParam{DimParam: d}})
	}
	return &onnxpb.ValueInfoProto{
		Name: proto.String(name),
		Type: &onnxpb.TypeProto{Value: &onnxpb.TypeProto_TensorType{TensorType: &onnxpb.TypeProto_Tensor{ElemType: proto.Int32(dt), Shape: sh}}},
	}
}

// pruneDead drops the nodes no graph output depends on, and initializers no
// remaining node reads (graph inputs are kept: they are the signature).
func pruneDead(g *onnxpb.GraphProto) *onnxpb.GraphProto {
	live := map[string]bool{}
	for _, o := range g.Output {
		live[o.GetName()] = true
	}
	keep := make([]bool, len(g.Node))
	for i := len(g.Node) - 1; i >= 0; i-- {
		n := g.Node[i]
		if !slices.ContainsFunc(n.GetOutput(), func(o string) bool { return live[o] }) {
			continue
		}
		keep[i] = true
		for _, in := range n.GetInput() {
			live[in] = true
		}
		for _, a := range n.GetAttribute() {
			if a.GetG() != nil || len(a.GetGraphs()) > 0 {
				// Subgraphs may read outer values: keep everything.
				return g
			}
		}
	}
	var nodes []*onnxpb.NodeProto
	for i, n := range g.Node {
		if keep[i] {
			nodes = append(nodes, n)
		}
	}
	g.Node = nodes
	var inits []*onnxpb.TensorProto
	for _, w := range g.Initializer {
		if live[w.GetName()] {
			inits = append(inits, w)
		}
	}
	g.Initializer = inits
	var vis []*onnxpb.ValueInfoProto
	for _, v := range g.ValueInfo {
		if live[v.GetName()] {
			vis = append(vis, v)
		}
	}
	g.ValueInfo = vis
	return g
}
