package model

import (
	"math"

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
