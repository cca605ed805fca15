package model

import (
	"math"
	"slices"

	"google.golang.org/protobuf/proto"

	"github.com/spiral-rl/spiral/model/onnx"
	"github.com/spiral-rl/spiral/model/onnx/onnxpb"
)

// lastLogitsName prefixes the values lastPositionLogits adds.
const lastLogitsName = "spiral/last_logits/"

// lastPositionLogits returns a copy of m whose logits output holds only
// the last position, [batch, 1, vocab]: what sampling needs. Real
// vocabularies are wide (Qwen3: 151,936), so full-sequence prefill logits
// of a batch would need gigabytes; when logits come from a MatMul (the LM
// head) the hidden states are sliced before it, so the head runs on one
// position. Otherwise the logits themselves are sliced.
func lastPositionLogits(m *onnxpb.ModelProto) *onnxpb.ModelProto {
	out := proto.Clone(m).(*onnxpb.ModelProto)
	g := out.GetGraph()
	consts := []*onnxpb.TensorProto{
		onnx.NewTensor(lastLogitsName+"starts", []int64{1}, []int64{-1}),
		onnx.NewTensor(lastLogitsName+"ends", []int64{1}, []int64{math.MaxInt64}),
		onnx.NewTensor(lastLogitsName+"axes", []int64{1}, []int64{1}),
	}
	g.Initializer = append(g.Initializer, consts...)
	slice := func(in, outName string) *onnxpb.NodeProto {
		return &onnxpb.NodeProto{OpType: proto.String("Slice"), Name: proto.String(lastLogitsName + "slice/" + outName),
			Input:  []string{in, lastLogitsName + "starts", lastLogitsName + "ends", lastLogitsName + "axes"},
			Output: []string{outName}}
	}
	var producer *onnxpb.NodeProto
	for _, n := range g.Node {
		for _, o := range n.Output {
			if o == LogitsOutput {
				producer = n
			}
		}
	}
	if producer != nil && producer.GetOpType() == "MatMul" && producer.GetDomain() == "" {
		// Slice the head's input: [batch, seq, hidden] -> [batch, 1, hidden].
		sliced := lastLogitsName + "hidden"
		g.Node = append(g.Node, slice(producer.Input[0], sliced))
		producer.Input[0] = sliced
	} else {
		// Rename the full logits and slice them into the output.
		full := lastLogitsName + "full"
		for _, n := range g.Node {
			for i, o := range n.Output {
				if o == LogitsOutput {
					n.Output[i] = full
				}
			}
		}
		g.Node = append(g.Node, slice(full, LogitsOutput))
	}
	for _, o := range g.Output {
		if o.GetName() != LogitsOutput {
			continue
		}
		if dims := o.GetType().GetTensorType().GetShape().GetDim(); len(dims) == 3 {
			dims[1] = &onnxpb.TensorShapeProto_Dimension{Value: &onnxpb.TensorShapeProto_Dimension_DimValue{DimValue: 1}}
		}
	}
	sortTopologically(g)
	return out
}

// sortTopologically orders g's nodes so that each comes after the
// producers of its inputs (the appended Slice may feed earlier nodes).
func sortTopologically(g *onnxpb.GraphProto) {
	producer := map[string]int{}
	for i, n := range g.Node {
		for _, o := range n.Output {
			producer[o] = i
		}
	}
	state := make([]byte, len(g.Node)) // 0 new, 1 visiting, 2 done
	order := make([]*onnxpb.NodeProto, 0, len(g.Node))
	var visit func(i int)
	visit = func(i int) {
		if state[i] != 0 {
			return
		}
		state[i] = 1
		for _, in := range g.Node[i].Input {
			if j, ok := producer[in]; ok && state[j] == 0 {
				visit(j)
			}
		}
		state[i] = 2
		order = append(order, g.Node[i])
	}
	for i := range g.Node {
		visit(i)
	}
	g.Node = order
}

// passThrough follows v back through nodes that pass their one input on
// unchanged (Identity, a Concat of one input) and returns where it starts.
func passThrough(producer map[string]*onnxpb.NodeProto, v string) string {
	for {
		n := producer[v]
		if n == nil || n.GetDomain() != "" || len(n.Input) != 1 || (n.GetOpType() != "Identity" && n.GetOpType() != "Concat") {
			return v
		}
		v = n.Input[0]
	}
}

// isConcatOnAxis2 reports whether the Concat n joins along axis 2 (-2 of
// four).
func isConcatOnAxis2(n *onnxpb.NodeProto) bool {
	for _, a := range n.Attribute {
		if a.GetName() == "axis" {
			return a.GetI() == 2 || a.GetI() == -2
		}
	}
	return false
}

// withNewKV replaces, in m, the outputs present.{i}.key|value by
// NewKVName(i, *) when every layer's present is Concat(past, new, axis 2)
// (the past possibly through a pass-through node): the new keys and
// values alone, which generation appends to its cache. Without the
// presents as outputs, ONNX Runtime frees each layer's after its last use
// instead of holding every layer's to the end of the call (a second copy
// of the rows' cache). It reports whether it did; m is left as it was when
// any layer differs.
func withNewKV(m *onnxpb.ModelProto, layers int) bool {
	g := m.GetGraph()
	producer := map[string]*onnxpb.NodeProto{}
	for _, n := range g.Node {
		for _, o := range n.Output {
			producer[o] = n
		}
	}
	type add struct{ from, to string }
	var adds []add
	for i := range layers {
		for _, v := range []bool{false, true} {
			n := producer[PresentName(i, v)]
			if n == nil || n.GetOpType() != "Concat" || n.GetDomain() != "" || len(n.Input) != 2 || passThrough(producer, n.Input[0]) != PastName(i, v) || !isConcatOnAxis2(n) {
				return false
			}
			adds = append(adds, add{n.Input[1], NewKVName(i, v)})
		}
	}
	outs := map[string]*onnxpb.ValueInfoProto{}
	for _, o := range g.Output {
		outs[o.GetName()] = o
	}
	for k, a := range adds {
		g.Node = append(g.Node, &onnxpb.NodeProto{OpType: proto.String("Identity"), Name: proto.String(lastLogitsName + "kv_new/" + a.to),
			Input: []string{a.from}, Output: []string{a.to}})
		vi := proto.Clone(outs[PresentName(k/2, k%2 == 1)]).(*onnxpb.ValueInfoProto)
		vi.Name = proto.String(a.to)
		if dims := vi.GetType().GetTensorType().GetShape().GetDim(); len(dims) == 4 {
			dims[2] = &onnxpb.TensorShapeProto_Dimension{}
		}
		g.Output = append(g.Output, vi)
	}
	g.Output = slices.DeleteFunc(g.Output, func(o *onnxpb.ValueInfoProto) bool { return presentRe.MatchString(o.GetName()) })
	return true
}
