package autodiff_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/spiral-rl/spiral/model/autodiff"
	"github.com/spiral-rl/spiral/model/onnx/onnxpb"
)

// TestInferTypesDamagedAttributes: a node whose axis, axes or perm
// attribute does not fit its inputs' ranks (a damaged or hand-edited
// model: a flipped byte in a Concat's axis, which the protobuf still
// reads) made the type inference index out of range, and spiral
// generate, eval and train panicked building the artifacts. The
// inference is best effort: such a node's output gets no known shape,
// and ONNX Runtime says what is wrong with the node where it runs it.
func TestInferTypesDamagedAttributes(t *testing.T) {
	in := func(name string, dt int32, dims ...int64) *onnxpb.ValueInfoProto {
		return autodiff.ValueInfo(name, dt, dims, true)
	}
	node := func(op string, inputs []string, attrs ...*onnxpb.AttributeProto) *onnxpb.NodeProto {
		return &onnxpb.NodeProto{OpType: proto.String(op), Input: inputs, Output: []string{"out"}, Attribute: attrs}
	}
	f, i64 := autodiff.TFloat, autodiff.TInt64
	for _, tt := range []struct {
		name   string
		inputs []*onnxpb.ValueInfoProto
		node   *onnxpb.NodeProto
	}{
		{"Concat axis below the rank", []*onnxpb.ValueInfoProto{in("x", f, 2, 3), in("y", f, 2, 3)}, node("Concat", []string{"x", "y"}, autodiff.AttrInt("axis", -637))},
		{"Concat axis past the rank", []*onnxpb.ValueInfoProto{in("x", f, 2, 3), in("y", f, 2, 3)}, node("Concat", []string{"x", "y"}, autodiff.AttrInt("axis", 2))},
		{"Concat of other ranks", []*onnxpb.ValueInfoProto{in("x", f, 2, 3), in("y", f, 2)}, node("Concat", []string{"x", "y"}, autodiff.AttrInt("axis", 1))},
		{"Gather axis past the rank", []*onnxpb.ValueInfoProto{in("x", f, 2, 3), in("i", i64, 4)}, node("Gather", []string{"x", "i"}, autodiff.AttrInt("axis", 5))},
		{"Gather axis below the rank", []*onnxpb.ValueInfoProto{in("x", f, 2, 3), in("i", i64, 4)}, node("Gather", []string{"x", "i"}, autodiff.AttrInt("axis", -3))},
		{"Unsqueeze axis past the rank", []*onnxpb.ValueInfoProto{in("x", f, 2, 3)}, node("Unsqueeze", []string{"x"}, autodiff.AttrInts("axes", 9))},
		{"Unsqueeze axis twice", []*onnxpb.ValueInfoProto{in("x", f, 2, 3)}, node("Unsqueeze", []string{"x"}, autodiff.AttrInts("axes", 0, 0))},
		{"Transpose perm past the rank", []*onnxpb.ValueInfoProto{in("x", f, 2, 3)}, node("Transpose", []string{"x"}, autodiff.AttrInts("perm", 0, 7))},
		{"Transpose perm below 0", []*onnxpb.ValueInfoProto{in("x", f, 2, 3)}, node("Transpose", []string{"x"}, autodiff.AttrInts("perm", -1, 0))},
		{"MatMul of a scalar", []*onnxpb.ValueInfoProto{in("x", f), in("y", f, 2, 3)}, node("MatMul", []string{"x", "y"})},
		{"ArgMax axis past the rank", []*onnxpb.ValueInfoProto{in("x", f, 2, 3)}, node("ArgMax", []string{"x"}, autodiff.AttrInt("axis", 4))},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := &onnxpb.GraphProto{Input: tt.inputs, Node: []*onnxpb.NodeProto{tt.node}}
			require.NotPanics(t, func() {
				dims, known := autodiff.InferredShape(g, "out")
				if known {
					for _, d := range dims {
						require.Negative(t, d, "dims %v: no size is inferred from a node that does not fit its inputs", dims)
					}
				}
			})
		})
	}
	// A node that fits its inputs keeps its inferred shape.
	g := &onnxpb.GraphProto{Input: []*onnxpb.ValueInfoProto{in("x", f, 2, 3), in("y", f, 2, 3)}, Node: []*onnxpb.NodeProto{node("Concat", []string{"x", "y"}, autodiff.AttrInt("axis", -1))}}
	dims, known := autodiff.InferredShape(g, "out")
	require.True(t, known)
	require.Equal(t, []int64{2, 6}, dims)
}
