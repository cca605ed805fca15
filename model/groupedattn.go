package model

import (
	"strconv"

	"github.com/spiral-rl/spiral/model/autodiff"
	"github.com/spiral-rl/spiral/model/onnx"
	"github.com/spiral-rl/spiral/model/onnx/onnxpb"
	"google.golang.org/protobuf/proto"
)

// groupedAttentionName prefixes the names of the nodes groupedAttention
// adds, but for those writing a value of the export's, which keep its
// name.
const groupedAttentionName = "spiral/grouped_attention/"

// attentionSite is one layer's attention as the exports write it:
//
//	present = Concat(past, new, axis 2)                         [B, KV, T, D]
//	rep     = Reshape(Expand(Unsqueeze(present, 2)))            [B, H, T, D]   (absent when KV = H)
//	scores  = MatMul(q, Mul?(Transpose(rep_k, 0 1 3 2), c))     [B, H, S, T]
//	...       scale, mask, Softmax                              -> probs
//	mixed   = MatMul(probs, rep_v)                              [B, H, S, D]
//
// with c an optional scalar constant (optimum scales keys and queries by
// the fourth root of the head width each).
type attentionSite struct {
	present [2]string // keys, values
	// keyScale multiplies the keys (1 when the export does not scale them).
	keyScale    float32
	scores, mix *onnxpb.NodeProto
	// shapes are the Shape nodes reading the repeats (the exports size
	// their repeats and masks from them).
	shapes []shapeRead
}

// shapeRead is a Shape node reading a value of a layer's repeat of its
// keys or values; layout names that value's dims by letter (B, K for the
// KV heads, R for the repeats, H, T, D, 1).
type shapeRead struct {
	node   *onnxpb.NodeProto
	layout string
}

// groupedAttention rewrites, in m, every layer's attention so that no
// call repeats the KV cache over the query heads: the queries are grouped
// by the KV head they share, [B, H, S, D] -> [B, KV, H/KV x S, D] (a
// Reshape, no copy), and multiplied with the present keys as they are
// (FusedMatMul, transposing in the kernel, with the export's key scale as
// its alpha), the probabilities grouped the same way and multiplied with
// the present values. The export's repeats (Expand, a copy of every
// row's whole cache H/KV times per layer and call, for keys and values)
// and the keys' transpose are then dead and removed; the scores, mask
// and softmax in between are the export's own. Each present (the
// export's Concat of past and new positions) is still made: splitting
// the products over the past and the new positions instead saves that
// copy but costs two passes over the scores, which measured slower for
// prefill and for the embedded model (ARCHITECTURE.md, generation).
//
// m is a graph withNewKV rewrote, so each present is Concat(past, new) on
// axis 2. It returns whether it rewrote m: every layer has
// attentionSite's form, or m is left as it was.
func groupedAttention(m *onnxpb.ModelProto, sig *Signature) bool {
	g := m.GetGraph()
	producer, consumers, subgraphs := indexGraph(g)
	if subgraphs {
		// A subgraph may read any value, so the repeats could not be
		// pruned (autodiff.Prune keeps everything then).
		return false
	}
	sites := make([]attentionSite, sig.Layers)
	for i := range sites {
		if !matchAttention(g, producer, consumers, i, &sites[i]) {
			return false
		}
	}
	replaced := map[*onnxpb.NodeProto]bool{}
	var added []*onnxpb.NodeProto
	for i, s := range sites {
		b := onnx.NewGraphBuilder("")
		b.SetScope(groupedAttentionName + strconv.Itoa(i))
		rewriteAttention(b, s, sig)
		added = append(added, b.Graph().Node...)
		replaced[s.scores], replaced[s.mix] = true, true
		for _, r := range s.shapes {
			replaced[r.node] = true
		}
	}
	nodes := make([]*onnxpb.NodeProto, 0, len(g.Node)+len(added))
	for _, n := range g.Node {
		if !replaced[n] {
			nodes = append(nodes, n)
		}
	}
	g.Node = append(nodes, added...)
	sortTopologically(g)
	autodiff.Prune(g)
	if (&onnx.Model{Proto: m}).Opset("com.microsoft") == 0 {
		m.OpsetImport = append(m.OpsetImport, &onnxpb.OperatorSetIdProto{Domain: proto.String("com.microsoft"), Version: proto.Int64(1)})
	}
	return true
}

// indexGraph maps each value of g to the node producing it and the nodes
// reading it, and reports whether a node holds a subgraph (If, Loop),
// which may read any value.
func indexGraph(g *onnxpb.GraphProto) (producer map[string]*onnxpb.NodeProto, consumers map[string][]*onnxpb.NodeProto, subgraphs bool) {
	producer, consumers = map[string]*onnxpb.NodeProto{}, map[string][]*onnxpb.NodeProto{}
	for _, n := range g.Node {
		for _, o := range n.Output {
			producer[o] = n
		}
		for _, in := range n.Input {
			consumers[in] = append(consumers[in], n)
		}
		for _, a := range n.Attribute {
			subgraphs = subgraphs || a.GetG() != nil || len(a.GetGraphs()) > 0
		}
	}
	return producer, consumers, subgraphs
}

// matchAttention fills s with layer i's attention, or reports that it
// does not have attentionSite's form. The repeat's Expand and Reshape
// targets are not read: after the Unsqueeze at axis 2 that axis is the
// one an Expand can broadcast (the others hold the batch, heads,
// positions and head width), and a Reshape of [B, KV, R, T, D] to the
// rank 4 the keys' Transpose (perm 0 1 3 2) requires, multiplied with the
// queries [B, H, S, D], merges KV and R in that order: query head h reads
// KV head h / R, as the grouping assumes. TestExtendMatchesForward
// checks the rewrite against the export on every export tested.
func matchAttention(g *onnxpb.GraphProto, producer map[string]*onnxpb.NodeProto, consumers map[string][]*onnxpb.NodeProto, i int, s *attentionSite) bool {
	// only returns v's one consumer other than Shape nodes, recording
	// those with the value's layout (none when layout is empty: the
	// present stays).
	only := func(v, layout string) *onnxpb.NodeProto {
		var c *onnxpb.NodeProto
		for _, n := range consumers[v] {
			if n.GetOpType() == "Shape" && n.GetDomain() == "" {
				if layout != "" {
					s.shapes = append(s.shapes, shapeRead{n, layout})
				}
				continue
			}
			if c != nil {
				return nil
			}
			c = n
		}
		return c
	}
	s.keyScale = 1
	for k, value := range []bool{false, true} {
		present := PresentName(i, value)
		s.present[k] = present
		x, n := present, only(present, "")
		if isOp(n, "Unsqueeze") {
			if !unsqueezesAxis2(g, producer, n) {
				return false
			}
			e := only(n.Output[0], "BK1TD")
			if !isOp(e, "Expand") || e.Input[0] != n.Output[0] {
				return false
			}
			r := only(e.Output[0], "BKRTD")
			if !isOp(r, "Reshape") || r.Input[0] != e.Output[0] {
				return false
			}
			x, n = r.Output[0], only(r.Output[0], "BHTD")
		}
		if !value {
			if !isOp(n, "Transpose") || !isLastTwoSwapped(n) {
				return false
			}
			x, n = n.Output[0], only(n.Output[0], "BHDT")
			if isOp(n, "Mul") {
				c := n.Input[0]
				if c == x {
					c = n.Input[1]
				}
				scale, ok := scalarConst(g, producer, c)
				if !ok {
					return false
				}
				s.keyScale = scale
				x, n = n.Output[0], only(n.Output[0], "BHDT")
			}
		}
		if !isOp(n, "MatMul") || n.Input[1] != x {
			return false
		}
		if value {
			s.mix = n
		} else {
			s.scores = n
		}
	}
	// Shape nodes with start/end attributes read part of a shape; the
	// rewrite rebuilds whole shapes only.
	for _, r := range s.shapes {
		if len(r.node.Attribute) > 0 {
			return false
		}
	}
	return true
}

// rewriteAttention adds to b the nodes that replace s's two MatMuls
// (writing their outputs) and the Shape nodes of its repeats.
func rewriteAttention(b *onnx.GraphBuilder, s attentionSite, sig *Signature) {
	kv, d := int64(sig.KVHeads), int64(sig.HeadDim)
	part := func(shape string, from, to int64) string {
		return b.Node("Slice", []string{shape, b.ConstInt64s(from), b.ConstInt64s(to), b.ConstInt64s(0)})
	}
	q, probs := s.scores.Input[0], s.mix.Input[0]
	qShape := b.Node("Shape", []string{q}) // [B, H, S, D]
	ungroup := b.Node("Concat", []string{part(qShape, 0, 3), b.ConstInt64s(-1)}, onnx.AttrInt("axis", 0))

	// [B, KV, H/KV x S, D] x [B, KV, T, D]^T -> [B, KV, H/KV x S, T] -> [B, H, S, T]
	grouped := b.Node("Reshape", []string{q, b.ConstInt64s(0, kv, -1, d)})
	scores := b.Node("FusedMatMul", []string{grouped, s.present[0]}, onnx.AttrInt("transB", 1), onnx.AttrFloat("alpha", s.keyScale))
	b.NodeTo("Reshape", []string{scores, ungroup}, []string{s.scores.Output[0]})

	// [B, H, S, T] -> [B, KV, H/KV x S, T] x [B, KV, T, D] -> [B, H, S, D]
	byKV := b.Node("Concat", []string{b.ConstInt64s(0, kv, -1), part(b.Node("Shape", []string{probs}), 3, 4)}, onnx.AttrInt("axis", 0))
	mixed := b.Node("MatMul", []string{b.Node("Reshape", []string{probs, byKV}), s.present[1]})
	b.NodeTo("Reshape", []string{mixed, ungroup}, []string{s.mix.Output[0]})
	for _, n := range b.Graph().Node {
		if n.GetOpType() == "FusedMatMul" {
			n.Domain = proto.String("com.microsoft")
		}
	}

	// The repeats' shapes, from the queries' and the present's.
	if len(s.shapes) == 0 {
		return
	}
	kShape := b.Node("Shape", []string{s.present[0]}) // [B, KV, T, D]
	dim := map[byte]string{
		'B': part(qShape, 0, 1), 'H': part(qShape, 1, 2), 'D': part(qShape, 3, 4),
		'K': part(kShape, 1, 2), 'T': part(kShape, 2, 3), '1': b.ConstInt64s(1),
	}
	dim['R'] = b.Node("Div", []string{dim['H'], dim['K']})
	for _, r := range s.shapes {
		parts := make([]string, len(r.layout))
		for j := range r.layout {
			parts[j] = dim[r.layout[j]]
		}
		b.NodeTo("Concat", parts, r.node.Output, onnx.AttrInt("axis", 0))
	}
}

// isOp reports whether n is a node of the standard operator op.
func isOp(n *onnxpb.NodeProto, op string) bool {
	return n != nil && n.GetOpType() == op && n.GetDomain() == ""
}

func isLastTwoSwapped(n *onnxpb.NodeProto) bool {
	for _, a := range n.Attribute {
		if a.GetName() == "perm" {
			p := a.GetInts()
			return len(p) == 4 && p[0] == 0 && p[1] == 1 && p[2] == 3 && p[3] == 2
		}
	}
	return false
}

// unsqueezesAxis2 reports whether the Unsqueeze n inserts axis 2 alone
// (its axes an attribute before opset 13, a constant input after).
func unsqueezesAxis2(g *onnxpb.GraphProto, producer map[string]*onnxpb.NodeProto, n *onnxpb.NodeProto) bool {
	for _, a := range n.Attribute {
		if a.GetName() == "axes" {
			return len(a.GetInts()) == 1 && a.GetInts()[0] == 2
		}
	}
	if len(n.Input) != 2 {
		return false
	}
	t := constTensor(g, producer, n.Input[1])
	if t == nil {
		return false
	}
	v, ok := autodiff.TensorInts(t)
	return ok && len(v) == 1 && v[0] == 2
}

// constTensor returns the tensor behind v when v is an initializer or a
// Constant node's value.
func constTensor(g *onnxpb.GraphProto, producer map[string]*onnxpb.NodeProto, v string) *onnxpb.TensorProto {
	if p := producer[v]; p != nil {
		if p.GetOpType() != "Constant" || p.GetDomain() != "" {
			return nil
		}
		for _, a := range p.Attribute {
			if a.GetName() == "value" {
				return a.GetT()
			}
		}
		return nil
	}
	for _, t := range g.Initializer {
		if t.GetName() == v {
			return t
		}
	}
	return nil
}

// scalarConst returns the value of v when v is a constant float of one
// element.
func scalarConst(g *onnxpb.GraphProto, producer map[string]*onnxpb.NodeProto, v string) (float32, bool) {
	t := constTensor(g, producer, v)
	if t == nil || t.GetDataType() != int32(onnxpb.TensorProto_FLOAT) {
		return 0, false
	}
	vals, err := onnx.Float32s(t)
	if err != nil || len(vals) != 1 {
		return 0, false
	}
	return vals[0], true
}
