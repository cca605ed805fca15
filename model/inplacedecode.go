package model

import (
	"slices"
	"strconv"

	"github.com/spiral-rl/spiral/model/autodiff"
	"github.com/spiral-rl/spiral/model/onnx"
	"github.com/spiral-rl/spiral/model/onnx/onnxpb"
	"google.golang.org/protobuf/proto"
)

// The decode graph's inputs beyond the sampling graph's: each row's
// filled length after the call less one (int32 [batch],
// GroupQueryAttention's seqlens_k: the length before the call plus S - 1
// for S new positions) and the longest row's length after it (an int32
// scalar).
const (
	DecodeSeqLens = "spiral_seqlens_k"
	DecodeTotal   = "spiral_total_sequence_length"
)

// inPlaceDecodeName prefixes the names of the nodes inPlaceDecode adds.
const inPlaceDecodeName = "spiral/in_place_decode/"

// decodeSite is what inPlaceDecode replaces in one layer: the Concat of
// past and new keys (and values), the attention between them and the
// queries, from the scores' MatMul to the mix's.
type decodeSite struct {
	site attentionSite
	// newKV are the new positions' keys and values [B, KV, S, D], the
	// Concats' second inputs; concat the Concats.
	newKV  [2]string
	concat [2]*onnxpb.NodeProto
	// scale multiplies the queries' products with the keys before the
	// mask (the keys' scale times the scores' own factors).
	scale float32
	heads int64
}

// inPlaceDecode returns the decode graph of the sampling graph m (a graph
// withNewKV rewrote, not yet grouped; heads is config.json's count of
// query heads, 0 when unknown), or nil when m's attention does not
// have the form it recognises. In the decode graph every layer's
// attention is ONNX Runtime's GroupQueryAttention (com.microsoft) over
// the past as the cache holds it, [B, KV, capacity, D]: its present
// outputs are the past's own buffers (bound to the same memory by
// LM.Extend), so that each call writes the new positions' keys and
// values into the cache in place and attends over each row's filled
// length only (DecodeSeqLens), where the sampling graph copies every
// row's whole capacity into a new present (the export's Concat) and
// attends over all of it under the mask. It serves calls in which every
// row takes all S positions over a past: decode steps, and prefill
// chunks without padding, one row a run when S > 1 (LM.extendInPlace);
// a chunk with padding or without a past stays on the sampling graph.
//
// The form: a head width that is a multiple of 8 (as ONNX Runtime's
// kernels require); every layer's attention is attentionSite's, each
// present Concat(past, new), the scores scaled by constants only, then
// a binary mask added (isBinaryMask) and a Softmax on the last axis, the
// probabilities
// reaching the mix through Casts or NaN guards (Where) only; the query
// heads' count is known from the graph's shapes or config.json (checked
// against the output projection, attentionOutputWidth); and
// nothing left in the graph reads a present but the new attention.
func inPlaceDecode(m *onnxpb.ModelProto, sig *Signature, heads int) *onnxpb.ModelProto {
	if sig.HeadDim%8 != 0 {
		return nil // GroupQueryAttention's kernels take multiples of 8
	}
	m = proto.Clone(m).(*onnxpb.ModelProto)
	g := m.GetGraph()
	producer, consumers, subgraphs := indexGraph(g)
	if subgraphs {
		return nil
	}
	infos := autodiff.ValueInfos(g)
	sites := make([]decodeSite, sig.Layers)
	for i := range sites {
		if !matchDecode(g, producer, consumers, infos, sig, heads, i, &sites[i]) {
			return nil
		}
	}
	replaced := map[*onnxpb.NodeProto]bool{}
	b := onnx.NewGraphBuilder("")
	for i, s := range sites {
		b.SetScope(inPlaceDecodeName + strconv.Itoa(i))
		rewriteDecode(b, i, s, sig)
		for _, n := range []*onnxpb.NodeProto{s.site.scores, s.site.mix, s.concat[0], s.concat[1]} {
			replaced[n] = true
		}
	}
	for _, n := range b.Graph().Node {
		if n.GetOpType() == "GroupQueryAttention" {
			n.Domain = proto.String("com.microsoft")
		}
	}
	g.Node = append(slices.DeleteFunc(g.Node, func(n *onnxpb.NodeProto) bool { return replaced[n] }), b.Graph().Node...)

	// Outputs: the logits and every present, which is the past's buffer.
	newKV := map[string]bool{}
	for i := range sig.Layers {
		newKV[NewKVName(i, false)], newKV[NewKVName(i, true)] = true, true
	}
	g.Output = slices.DeleteFunc(g.Output, func(o *onnxpb.ValueInfoProto) bool { return newKV[o.GetName()] })
	io := onnx.NewGraphBuilder("")
	cache := []onnx.Dim{onnx.P("batch"), onnx.D(int64(sig.KVHeads)), onnx.P("capacity"), onnx.D(int64(sig.HeadDim))}
	for i := range sig.Layers {
		for _, v := range []bool{false, true} {
			io.Output(PresentName(i, v), onnx.Float32, cache...)
		}
	}
	io.Input(DecodeSeqLens, onnx.Int32, onnx.P("batch"))
	io.Input(DecodeTotal, onnx.Int32)
	g.Output = append(g.Output, io.Graph().Output...)
	g.ValueInfo = slices.DeleteFunc(g.ValueInfo, func(v *onnxpb.ValueInfoProto) bool { return presentRe.MatchString(v.GetName()) })
	g.Input = append(g.Input, io.Graph().Input...)
	sortTopologically(g)
	autodiff.Prune(g)

	// Nothing else may read a present: its length is now the capacity,
	// where the export's reader expected past + 1.
	for _, n := range g.Node {
		if n.GetOpType() == "GroupQueryAttention" {
			continue
		}
		for _, in := range n.Input {
			if presentRe.MatchString(in) {
				return nil
			}
		}
	}
	if (&onnx.Model{Proto: m}).Opset("com.microsoft") == 0 {
		m.OpsetImport = append(m.OpsetImport, &onnxpb.OperatorSetIdProto{Domain: proto.String("com.microsoft"), Version: proto.Int64(1)})
	}
	return m
}

// matchDecode fills s with layer i's attention, or reports that it does
// not have inPlaceDecode's form.
func matchDecode(g *onnxpb.GraphProto, producer map[string]*onnxpb.NodeProto, consumers map[string][]*onnxpb.NodeProto, infos map[string]*onnxpb.ValueInfoProto, sig *Signature, heads, i int, s *decodeSite) bool {
	if !matchAttention(g, producer, consumers, i, &s.site) {
		return false
	}
	// withNewKV made each present Concat(past, new) on axis 2.
	for k, value := range []bool{false, true} {
		c := producer[PresentName(i, value)]
		s.concat[k], s.newKV[k] = c, c.Input[1]
	}
	only := func(v string) *onnxpb.NodeProto {
		if c := consumers[v]; len(c) == 1 {
			return c[0]
		}
		return nil
	}
	// scores -> Mul/Div by constants -> Add(mask) -> Softmax(last axis).
	s.scale = s.site.keyScale
	x := s.site.scores.Output[0]
	n := only(x)
	for isOp(n, "Mul") || isOp(n, "Div") {
		other := n.Input[1]
		if other == x {
			if isOp(n, "Div") {
				return false
			}
			other = n.Input[0]
		}
		c, ok := scalarConst(g, producer, other)
		if !ok || c == 0 {
			return false
		}
		if isOp(n, "Div") {
			c = 1 / c
		}
		s.scale *= c
		x = n.Output[0]
		n = only(x)
	}
	if !isOp(n, "Add") {
		return false
	}
	mask := n.Input[1]
	if mask == x {
		mask = n.Input[0]
	}
	if !isBinaryMask(g, producer, mask) {
		return false
	}
	x = n.Output[0]
	softmax := only(x)
	if !isOp(softmax, "Softmax") || !lastAxis(softmax, 4) {
		return false
	}
	// The mix's probabilities back to the Softmax: Casts to float, or
	// NaN guards Where(IsNaN(probs), constant, probs).
	for p := s.site.mix.Input[0]; p != softmax.Output[0]; {
		n := producer[p]
		switch {
		case isOp(n, "Cast") && castsToFloat(n):
			p = n.Input[0]
		case isOp(n, "Where") && len(n.Input) == 3:
			nan := producer[n.Input[0]]
			if _, ok := scalarConst(g, producer, n.Input[1]); !ok || !isOp(nan, "IsNaN") || nan.Input[0] != n.Input[2] {
				return false
			}
			p = n.Input[2]
		default:
			return false
		}
	}
	// The query heads, from the queries' shape [B, H, S, D] where the
	// graph's shapes tell, else config.json's. (A wrong count would give
	// GroupQueryAttention a head width other than the cache's, which it
	// refuses.)
	q := infos[s.site.scores.Input[0]]
	dims := q.GetType().GetTensorType().GetShape().GetDim()
	if len(dims) != 4 {
		return false
	}
	if d := dims[3].GetDimValue(); d != 0 && d != int64(sig.HeadDim) {
		return false
	}
	s.heads = dims[1].GetDimValue()
	if s.heads <= 0 {
		s.heads = int64(heads)
		if attentionOutputWidth(consumers, infos, s.site.mix.Output[0]) != s.heads*int64(sig.HeadDim) {
			return false
		}
	}
	return s.heads > 0 && s.heads%int64(sig.KVHeads) == 0
}

// attentionOutputWidth returns the width the heads are projected from
// after the mix: the first dimension of the rank-2 weight of every
// MatMul its output reaches through Transpose and Reshape (o_proj, and
// under LoRA its adapter's A too), or 0 when none is reached or they
// disagree. It checks config.json's head count where the graph's shapes
// give none (TorchScript exports, whose weights are anonymous): a wrong
// count leaves no decode graph (whose kernel would refuse every call)
// rather than break generation.
func attentionOutputWidth(consumers map[string][]*onnxpb.NodeProto, infos map[string]*onnxpb.ValueInfoProto, v string) int64 {
	for range 4 {
		cs := consumers[v]
		if len(cs) != 1 || !(isOp(cs[0], "Transpose") || isOp(cs[0], "Reshape")) {
			break
		}
		v = cs[0].Output[0]
	}
	var width int64
	for _, n := range consumers[v] {
		if !isOp(n, "MatMul") || n.Input[0] != v {
			continue
		}
		dims := infos[n.Input[1]].GetType().GetTensorType().GetShape().GetDim()
		if len(dims) != 2 || dims[0].GetDimValue() <= 0 || (width != 0 && width != dims[0].GetDimValue()) {
			return 0
		}
		width = dims[0].GetDimValue()
	}
	return width
}

// rewriteDecode adds to b layer i's GroupQueryAttention, fed the
// queries and the new keys and values as [B, S, heads x D], and the
// nodes writing its output back as the mix's [B, H, S, D].
func rewriteDecode(b *onnx.GraphBuilder, i int, s decodeSite, sig *Signature) {
	bsd := func(x string) string { // [B, N, S, D] -> [B, S, N x D]
		t := b.Node("Transpose", []string{x}, onnx.AttrInts("perm", 0, 2, 1, 3))
		return b.Node("Reshape", []string{t, b.ConstInt64s(0, 0, -1)})
	}
	q, k, v := bsd(s.site.scores.Input[0]), bsd(s.newKV[0]), bsd(s.newKV[1])
	out := b.Node("GroupQueryAttention",
		[]string{q, k, v, PastName(i, false), PastName(i, true), DecodeSeqLens, DecodeTotal},
		onnx.AttrInt("num_heads", s.heads), onnx.AttrInt("kv_num_heads", int64(sig.KVHeads)), onnx.AttrFloat("scale", s.scale))
	gqa := b.Graph().Node[len(b.Graph().Node)-1]
	gqa.Output = append(gqa.Output, PresentName(i, false), PresentName(i, true))
	heads := b.Node("Reshape", []string{out, b.ConstInt64s(0, 0, s.heads, int64(sig.HeadDim))})
	b.NodeTo("Transpose", []string{heads}, []string{s.site.mix.Output[0]}, onnx.AttrInts("perm", 0, 2, 1, 3))
}

// isBinaryMask reports whether v, added to the scores, only hides
// positions: Where(cond, 0, m) or Where(cond, m, 0) of scalar constants
// with m at most -1e30 (the exports' float minimum or -inf), maybe
// through shape-only ops. Which positions it hides is not read: the
// causal and padding mask of a causal LM is assumed (a sliding window is
// config.json's to tell; samplingGraphs), but an additive bias such as
// ALiBi's, which GroupQueryAttention would drop, is refused.
func isBinaryMask(g *onnxpb.GraphProto, producer map[string]*onnxpb.NodeProto, v string) bool {
	for {
		n := producer[v]
		if n == nil || n.GetDomain() != "" {
			return false
		}
		switch n.GetOpType() {
		case "Slice", "Expand", "Reshape", "Unsqueeze", "Squeeze", "Identity":
			v = n.Input[0]
			continue
		case "Cast":
			if !castsToFloat(n) {
				return false
			}
			v = n.Input[0]
			continue
		case "Where":
			a, okA := scalarConst(g, producer, n.Input[1])
			b, okB := scalarConst(g, producer, n.Input[2])
			return okA && okB && (a == 0 && b <= -1e30 || b == 0 && a <= -1e30)
		}
		return false
	}
}

// lastAxis reports whether the Softmax n normalises the last axis of a
// rank-r input (its default from opset 13; artifacts need opset 18).
func lastAxis(n *onnxpb.NodeProto, r int64) bool {
	for _, a := range n.Attribute {
		if a.GetName() == "axis" {
			return a.GetI() == -1 || a.GetI() == r-1
		}
	}
	return true
}

// castsToFloat reports whether the Cast n casts to float32.
func castsToFloat(n *onnxpb.NodeProto) bool {
	for _, a := range n.Attribute {
		if a.GetName() == "to" {
			return a.GetI() == int64(onnxpb.TensorProto_FLOAT)
		}
	}
	return false
}
