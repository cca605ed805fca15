package autodiff_test

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/spiral-rl/spiral/model/onnx/onnxpb"
	"google.golang.org/protobuf/proto"
)

// nd makes a test node.
func nd(op string, ins, outs []string, attrs ...*onnxpb.AttributeProto) *onnxpb.NodeProto {
	return &onnxpb.NodeProto{Name: proto.String(op + "_" + outs[0]), OpType: proto.String(op), Input: ins, Output: outs, Attribute: attrs}
}

// cI64 makes a Constant node with a 1-D int64 value.
func cI64(out string, v ...int64) *onnxpb.NodeProto {
	return nd("Constant", nil, []string{out}, attrTensor("value", tensorI64([]int64{int64(len(v))}, v...)))
}

// cF64 makes a Constant node with a double tensor.
func cF64(out string, dims []int64, v ...float64) *onnxpb.NodeProto {
	return nd("Constant", nil, []string{out}, attrTensor("value", tensorFloat(tDouble, dims, v...)))
}

// spec describes one test input; kind 'n' = normal, 'p' = positive
// (0.5 + |normal|), 'i' = the int64 values ints, 'b' = the bool values.
type spec struct {
	name  string
	shape []int64
	kind  byte
	ints  []int64
	bools []bool
}

func (s spec) feed(r *rand.Rand) feed {
	f := feed{name: s.name, shape: s.shape}
	switch s.kind {
	case 'i':
		f.i64 = s.ints
	case 'b':
		f.b = s.bools
	case 'p':
		f.f64 = randn(r, numel(s.shape))
		for i, v := range f.f64 {
			f.f64[i] = 0.5 + math.Abs(v)
		}
	default:
		f.f64 = randn(r, numel(s.shape))
	}
	return f
}

// testGraph builds a graph from specs and nodes producing "y", with
// loss = sum(y^2 / 2 + y) so that d loss / d y = y + 1 differs per element.
// The loss keeps its reduced axes (onnxruntime_go cannot fetch 0-D outputs).
func testGraph(specs []spec, nodes []*onnxpb.NodeProto) *onnxpb.GraphProto {
	return testGraphDims(specs, nodes, false)
}

// testGraphDims is testGraph; with dynamic, the float inputs are declared
// with their rank only (every dim unknown), so that broadcast gradients are
// reduced by the run-time path instead of the static one.
func testGraphDims(specs []spec, nodes []*onnxpb.NodeProto, dynamic bool) *onnxpb.GraphProto {
	g := &onnxpb.GraphProto{Name: proto.String("t")}
	for _, s := range specs {
		f := feed{shape: s.shape}
		switch s.kind {
		case 'i':
			f.i64 = []int64{}
		case 'b':
			f.b = []bool{}
		}
		dims := s.shape
		if dynamic && (s.kind == 'n' || s.kind == 'p') {
			dims = make([]int64, len(s.shape))
			for i := range dims {
				dims[i] = -1
			}
		}
		g.Input = append(g.Input, valueInfo(s.name, f.elemType(), dims, true))
	}
	g.Node = append(g.Node, nodes...)
	g.Node = append(g.Node,
		cF64("half", nil, 0.5),
		nd("Mul", []string{"y", "y"}, []string{"yy"}),
		nd("Mul", []string{"yy", "half"}, []string{"yy2"}),
		nd("Add", []string{"yy2", "y"}, []string{"terms"}),
		nd("ReduceSum", []string{"terms"}, []string{"loss"}),
	)
	g.Output = append(g.Output, valueInfo("loss", tDouble, nil, false))
	return g
}

type ruleCase struct {
	name  string
	opset int64 // 0 = 18
	in    []spec
	nodes []*onnxpb.NodeProto
}

func f(name string, shape ...int64) spec   { return spec{name: name, shape: shape, kind: 'n'} }
func pos(name string, shape ...int64) spec { return spec{name: name, shape: shape, kind: 'p'} }

var ruleCases = []ruleCase{
	{name: "Add/same", in: []spec{f("a", 2, 3), f("b", 2, 3)}, nodes: []*onnxpb.NodeProto{nd("Add", []string{"a", "b"}, []string{"y"})}},
	{name: "Add/broadcast", in: []spec{f("a", 2, 1, 3), f("b", 4, 1)}, nodes: []*onnxpb.NodeProto{nd("Add", []string{"a", "b"}, []string{"y"})}},
	{name: "Add/scalar", in: []spec{f("a", 2, 3), f("b")}, nodes: []*onnxpb.NodeProto{nd("Add", []string{"a", "b"}, []string{"y"})}},
	{name: "Sub/broadcast", in: []spec{f("a", 3), f("b", 2, 3)}, nodes: []*onnxpb.NodeProto{nd("Sub", []string{"a", "b"}, []string{"y"})}},
	{name: "Mul/broadcast", in: []spec{f("a", 2, 3, 1), f("b", 1, 4)}, nodes: []*onnxpb.NodeProto{nd("Mul", []string{"a", "b"}, []string{"y"})}},
	{name: "Mul/same_input", in: []spec{f("a", 2, 3)}, nodes: []*onnxpb.NodeProto{nd("Mul", []string{"a", "a"}, []string{"y"})}},
	{name: "Div/broadcast", in: []spec{f("a", 2, 3), pos("b", 3)}, nodes: []*onnxpb.NodeProto{nd("Div", []string{"a", "b"}, []string{"y"})}},
	{name: "Neg", in: []spec{f("a", 2, 3)}, nodes: []*onnxpb.NodeProto{nd("Neg", []string{"a"}, []string{"y"})}},
	{name: "Pow/const_exponent", in: []spec{pos("a", 2, 3)}, nodes: []*onnxpb.NodeProto{cF64("e", nil, 2.5), nd("Pow", []string{"a", "e"}, []string{"y"})}},
	{name: "Pow/int_exponent", in: []spec{f("a", 2, 3)}, nodes: []*onnxpb.NodeProto{cI64("e", 3), nd("Pow", []string{"a", "e"}, []string{"y"})}},
	{name: "Pow/square", in: []spec{f("a", 2, 3)}, nodes: []*onnxpb.NodeProto{cF64("e", nil, 2), nd("Pow", []string{"a", "e"}, []string{"y"})}},
	{name: "Pow/square_int", in: []spec{f("a", 2, 3)}, nodes: []*onnxpb.NodeProto{cI64("e", 2), nd("Pow", []string{"a", "e"}, []string{"y"})}},
	{name: "Pow/both", in: []spec{pos("a", 2, 3), f("b", 3)}, nodes: []*onnxpb.NodeProto{nd("Pow", []string{"a", "b"}, []string{"y"})}},
	// At a = 0 (a^b = 0 for b > 0) the exponent's gradient is 0, not NaN.
	{name: "Pow/zero_base", in: []spec{pos("b", 2, 3)}, nodes: []*onnxpb.NodeProto{
		cF64("a", []int64{3}, 0, 1.5, 0.3), nd("Pow", []string{"a", "b"}, []string{"y"})}},
	{name: "Sqrt", in: []spec{pos("a", 2, 3)}, nodes: []*onnxpb.NodeProto{nd("Sqrt", []string{"a"}, []string{"y"})}},
	{name: "Reciprocal", in: []spec{pos("a", 2, 3)}, nodes: []*onnxpb.NodeProto{nd("Reciprocal", []string{"a"}, []string{"y"})}},
	{name: "Exp", in: []spec{f("a", 2, 3)}, nodes: []*onnxpb.NodeProto{nd("Exp", []string{"a"}, []string{"y"})}},
	{name: "Log", in: []spec{pos("a", 2, 3)}, nodes: []*onnxpb.NodeProto{nd("Log", []string{"a"}, []string{"y"})}},
	{name: "Tanh", in: []spec{f("a", 2, 3)}, nodes: []*onnxpb.NodeProto{nd("Tanh", []string{"a"}, []string{"y"})}},
	{name: "Sigmoid", in: []spec{f("a", 2, 3)}, nodes: []*onnxpb.NodeProto{nd("Sigmoid", []string{"a"}, []string{"y"})}},
	{name: "Relu", in: []spec{f("a", 3, 4)}, nodes: []*onnxpb.NodeProto{nd("Relu", []string{"a"}, []string{"y"})}},
	{name: "Abs", in: []spec{f("a", 3, 4)}, nodes: []*onnxpb.NodeProto{nd("Abs", []string{"a"}, []string{"y"})}},
	{name: "Sin_Cos", in: []spec{f("a", 3, 4)}, nodes: []*onnxpb.NodeProto{nd("Sin", []string{"a"}, []string{"s"}), nd("Cos", []string{"s"}, []string{"y"})}},
	{name: "Softmax/last", in: []spec{f("a", 2, 3, 4)}, nodes: []*onnxpb.NodeProto{nd("Softmax", []string{"a"}, []string{"y"})}},
	{name: "Softmax/axis1", in: []spec{f("a", 2, 3, 4)}, nodes: []*onnxpb.NodeProto{nd("Softmax", []string{"a"}, []string{"y"}, attrInt("axis", 1))}},
	{name: "LogSoftmax", in: []spec{f("a", 2, 5)}, nodes: []*onnxpb.NodeProto{nd("LogSoftmax", []string{"a"}, []string{"y"})}},
	{name: "ReduceMean/keepdims", in: []spec{f("a", 2, 3, 4)}, nodes: []*onnxpb.NodeProto{cI64("ax", 1, -1), nd("ReduceMean", []string{"a", "ax"}, []string{"y"})}},
	{name: "ReduceMean/nokeep", in: []spec{f("a", 2, 3, 4)}, nodes: []*onnxpb.NodeProto{cI64("ax", 1), nd("ReduceMean", []string{"a", "ax"}, []string{"y"}, attrInt("keepdims", 0))}},
	{name: "ReduceMean/opset13_attr", opset: 13, in: []spec{f("a", 2, 3, 4)}, nodes: []*onnxpb.NodeProto{nd("ReduceMean", []string{"a"}, []string{"y"}, attrInts("axes", 2), attrInt("keepdims", 0))}},
	{name: "ReduceSum/all", in: []spec{f("a", 2, 3)}, nodes: []*onnxpb.NodeProto{nd("ReduceSum", []string{"a"}, []string{"r"}, attrInt("keepdims", 0)), nd("Mul", []string{"r", "a"}, []string{"y"})}},
	{name: "ReduceSum/nokeep", in: []spec{f("a", 2, 3, 4)}, nodes: []*onnxpb.NodeProto{cI64("ax", 0, 2), nd("ReduceSum", []string{"a", "ax"}, []string{"y"}, attrInt("keepdims", 0))}},
	{name: "ReduceMax/nokeep", in: []spec{f("a", 3, 5)}, nodes: []*onnxpb.NodeProto{cI64("ax", 1), nd("ReduceMax", []string{"a", "ax"}, []string{"y"}, attrInt("keepdims", 0))}},
	{name: "ReduceMax/all", in: []spec{f("a", 3, 5)}, nodes: []*onnxpb.NodeProto{nd("ReduceMax", []string{"a"}, []string{"y"})}},
	// An empty axes list reduces all axes, or none with noop_with_empty_axes.
	{name: "ReduceSum/empty_axes", in: []spec{f("a", 2, 3)}, nodes: []*onnxpb.NodeProto{cI64("ax"), nd("ReduceSum", []string{"a", "ax"}, []string{"r"}), nd("Mul", []string{"r", "a"}, []string{"y"})}},
	{name: "ReduceMean/empty_axes_nokeep", in: []spec{f("a", 2, 3)}, nodes: []*onnxpb.NodeProto{cI64("ax"), nd("ReduceMean", []string{"a", "ax"}, []string{"r"}, attrInt("keepdims", 0)), nd("Mul", []string{"r", "a"}, []string{"y"})}},
	{name: "ReduceMax/empty_axes", in: []spec{f("a", 2, 3)}, nodes: []*onnxpb.NodeProto{cI64("ax"), nd("ReduceMax", []string{"a", "ax"}, []string{"r"}), nd("Mul", []string{"r", "a"}, []string{"y"})}},
	{name: "ReduceMax/empty_axes_noop", in: []spec{f("a", 2, 3)}, nodes: []*onnxpb.NodeProto{cI64("ax"), nd("ReduceMax", []string{"a", "ax"}, []string{"y"}, attrInt("noop_with_empty_axes", 1))}},
	{name: "ReduceMax/runtime_empty_axes_noop", in: []spec{f("a", 2, 3), {name: "ax", shape: []int64{0}, kind: 'i', ints: []int64{}}},
		nodes: []*onnxpb.NodeProto{nd("ReduceMax", []string{"a", "ax"}, []string{"y"}, attrInt("noop_with_empty_axes", 1))}},
	{name: "MatMul/2d", in: []spec{f("a", 3, 4), f("b", 4, 2)}, nodes: []*onnxpb.NodeProto{nd("MatMul", []string{"a", "b"}, []string{"y"})}},
	{name: "MatMul/batch_broadcast", in: []spec{f("a", 2, 1, 3, 4), f("b", 5, 4, 2)}, nodes: []*onnxpb.NodeProto{nd("MatMul", []string{"a", "b"}, []string{"y"})}},
	{name: "MatMul/weight_shared_over_batch", in: []spec{f("a", 2, 3, 4), f("b", 4, 5)}, nodes: []*onnxpb.NodeProto{nd("MatMul", []string{"a", "b"}, []string{"y"})}},
	{name: "MatMul/1d_left", in: []spec{f("a", 4), f("b", 2, 4, 3)}, nodes: []*onnxpb.NodeProto{nd("MatMul", []string{"a", "b"}, []string{"y"})}},
	{name: "MatMul/1d_right", in: []spec{f("a", 2, 3, 4), f("b", 4)}, nodes: []*onnxpb.NodeProto{nd("MatMul", []string{"a", "b"}, []string{"y"})}},
	{name: "MatMul/1d_both", in: []spec{f("a", 4), f("b", 4)}, nodes: []*onnxpb.NodeProto{nd("MatMul", []string{"a", "b"}, []string{"y"})}},
	{name: "Gemm/trans_alpha_beta", in: []spec{f("a", 4, 3), f("b", 2, 4), f("c", 2)}, nodes: []*onnxpb.NodeProto{
		nd("Gemm", []string{"a", "b", "c"}, []string{"y"}, attrInt("transA", 1), attrInt("transB", 1), attrFloat("alpha", 0.5), attrFloat("beta", 2))}},
	{name: "Gather/embedding_duplicates", in: []spec{f("a", 5, 3), {name: "i", shape: []int64{2, 3}, kind: 'i', ints: []int64{0, 2, 2, -1, 4, 0}}},
		nodes: []*onnxpb.NodeProto{nd("Gather", []string{"a", "i"}, []string{"y"})}},
	{name: "Gather/axis1", in: []spec{f("a", 2, 5, 3), {name: "i", shape: []int64{4}, kind: 'i', ints: []int64{1, 1, -2, 0}}},
		nodes: []*onnxpb.NodeProto{nd("Gather", []string{"a", "i"}, []string{"y"}, attrInt("axis", 1))}},
	{name: "Gather/scalar_index", in: []spec{f("a", 4, 3), {name: "i", kind: 'i', ints: []int64{2}}},
		nodes: []*onnxpb.NodeProto{nd("Gather", []string{"a", "i"}, []string{"y"}, attrInt("axis", -1))}},
	{name: "GatherElements", in: []spec{f("a", 3, 4), {name: "i", shape: []int64{3, 2}, kind: 'i', ints: []int64{0, 0, 3, 1, -1, 2}}},
		nodes: []*onnxpb.NodeProto{nd("GatherElements", []string{"a", "i"}, []string{"y"}, attrInt("axis", 1))}},
	{name: "Reshape", in: []spec{f("a", 2, 3, 4)}, nodes: []*onnxpb.NodeProto{cI64("s", 0, -1, 2), nd("Reshape", []string{"a", "s"}, []string{"r"}), nd("Mul", []string{"r", "r"}, []string{"y"})}},
	{name: "Transpose/perm", in: []spec{f("a", 2, 3, 4)}, nodes: []*onnxpb.NodeProto{nd("Transpose", []string{"a"}, []string{"t"}, attrInts("perm", 1, 2, 0)), cF64("w", []int64{4, 1}, 1, -2, 3, 0.5), nd("Mul", []string{"t", "w"}, []string{"y"})}},
	{name: "Transpose/default", in: []spec{f("a", 2, 3, 4)}, nodes: []*onnxpb.NodeProto{nd("Transpose", []string{"a"}, []string{"t"}), cF64("w", []int64{2}, 1, -2), nd("Mul", []string{"t", "w"}, []string{"y"})}},
	{name: "Unsqueeze_Squeeze", in: []spec{f("a", 2, 3), f("b", 2, 1, 3)}, nodes: []*onnxpb.NodeProto{
		cI64("ax", 1), nd("Unsqueeze", []string{"a", "ax"}, []string{"u"}), nd("Squeeze", []string{"b", "ax"}, []string{"s"}),
		nd("Mul", []string{"u", "b"}, []string{"m"}), nd("Squeeze", []string{"m"}, []string{"m2"}), nd("Add", []string{"m2", "s"}, []string{"y"})}},
	{name: "Flatten", in: []spec{f("a", 2, 3, 4)}, nodes: []*onnxpb.NodeProto{nd("Flatten", []string{"a"}, []string{"r"}, attrInt("axis", 2)), cF64("w", []int64{4}, 1, -2, 3, 0.5), nd("Mul", []string{"r", "w"}, []string{"y"})}},
	{name: "Concat/neg_axis", in: []spec{f("a", 2, 1, 3), f("b", 2, 2, 3), f("c", 2, 3, 3)}, nodes: []*onnxpb.NodeProto{nd("Concat", []string{"a", "b", "c", "a"}, []string{"y"}, attrInt("axis", -2))}},
	{name: "Slice/axes_steps", in: []spec{f("a", 4, 5, 3)}, nodes: []*onnxpb.NodeProto{
		cI64("st", 1, -1), cI64("en", 100, -100), cI64("ax", 0, 1), cI64("sp", 2, -2), nd("Slice", []string{"a", "st", "en", "ax", "sp"}, []string{"y"})}},
	{name: "Slice/simple", in: []spec{f("a", 4, 5)}, nodes: []*onnxpb.NodeProto{cI64("st", 1), cI64("en", 3), nd("Slice", []string{"a", "st", "en"}, []string{"y"})}},
	{name: "Slice/negative_unit_steps", in: []spec{f("a", 4, 5, 3)}, nodes: []*onnxpb.NodeProto{
		cI64("st", -3, 0), cI64("en", -1, 100), cI64("ax", 1, -1), cI64("sp", 1, 1), nd("Slice", []string{"a", "st", "en", "ax", "sp"}, []string{"y"})}},
	{name: "Slice/empty", in: []spec{f("a", 4, 5)}, nodes: []*onnxpb.NodeProto{cI64("st", 3), cI64("en", 1), cI64("ax", 1), nd("Slice", []string{"a", "st", "en", "ax"}, []string{"y"})}},
	{name: "Split/unused_output", in: []spec{f("a", 2, 6)}, nodes: []*onnxpb.NodeProto{cI64("sp", 1, 2, 3),
		nd("Split", []string{"a", "sp"}, []string{"p0", "p1", "p2"}, attrInt("axis", 1)), nd("Mul", []string{"p0", "p1"}, []string{"y"})}},
	{name: "Split/num_outputs", in: []spec{f("a", 4, 3)}, nodes: []*onnxpb.NodeProto{
		nd("Split", []string{"a"}, []string{"p0", "p1"}, attrInt("num_outputs", 2)), nd("Sub", []string{"p0", "p1"}, []string{"y"})}},
	{name: "Expand", in: []spec{f("a", 3, 1)}, nodes: []*onnxpb.NodeProto{cI64("s", 2, 3, 4), nd("Expand", []string{"a", "s"}, []string{"e"}), cF64("w", []int64{4}, 1, -2, 3, 0.5), nd("Mul", []string{"e", "w"}, []string{"y"})}},
	{name: "Where/broadcast", in: []spec{{name: "c", shape: []int64{3, 1}, kind: 'b', bools: []bool{true, false, true}}, f("a", 3, 4), f("b", 4)},
		nodes: []*onnxpb.NodeProto{nd("Where", []string{"c", "a", "b"}, []string{"y"})}},
	{name: "Cast/identity", in: []spec{f("a", 2, 3)}, nodes: []*onnxpb.NodeProto{nd("Cast", []string{"a"}, []string{"c"}, attrInt("to", int64(tDouble))), nd("Identity", []string{"c"}, []string{"y"})}},
	{name: "Max/broadcast3", in: []spec{f("a", 2, 3), f("b", 3), f("c", 2, 1)}, nodes: []*onnxpb.NodeProto{nd("Max", []string{"a", "b", "c"}, []string{"y"})}},
	{name: "Min", in: []spec{f("a", 2, 3), f("b", 2, 3)}, nodes: []*onnxpb.NodeProto{nd("Min", []string{"a", "b"}, []string{"y"})}},
	{name: "Clip", in: []spec{f("a", 3, 4)}, nodes: []*onnxpb.NodeProto{cF64("lo", nil, -0.5), cF64("hi", nil, 0.7), nd("Clip", []string{"a", "lo", "hi"}, []string{"y"})}},
	// Bounds that depend on a weight get gradients: x spread by 3 so that
	// elements fall below lo, between the bounds and above hi; and bounds
	// with lo > hi, where every element is hi.
	{name: "Clip/bound_gradients", in: []spec{f("x", 3, 4), pos("l"), pos("hi")}, nodes: []*onnxpb.NodeProto{
		cF64("three", nil, 3), nd("Mul", []string{"x", "three"}, []string{"a"}), nd("Neg", []string{"l"}, []string{"lo"}),
		nd("Clip", []string{"a", "lo", "hi"}, []string{"y"})}},
	{name: "Clip/bounds_crossed", in: []spec{f("a", 3, 4), pos("lo"), pos("h")}, nodes: []*onnxpb.NodeProto{
		nd("Neg", []string{"h"}, []string{"hi"}), nd("Clip", []string{"a", "lo", "hi"}, []string{"y"})}},
	{name: "Clip/min_only_bound", in: []spec{f("a", 3, 4), f("lo")}, nodes: []*onnxpb.NodeProto{nd("Clip", []string{"a", "lo"}, []string{"y"})}},
	{name: "Clip/max_only_bound", in: []spec{f("a", 3, 4), f("hi")}, nodes: []*onnxpb.NodeProto{nd("Clip", []string{"a", "", "hi"}, []string{"y"})}},
	{name: "Sum", in: []spec{f("a", 2, 3), f("b", 3)}, nodes: []*onnxpb.NodeProto{nd("Sum", []string{"a", "b", "a"}, []string{"y"})}},
	{name: "LayerNormalization/axis-1", in: []spec{f("a", 2, 3, 4), f("s", 4), f("b", 4)}, nodes: []*onnxpb.NodeProto{nd("LayerNormalization", []string{"a", "s", "b"}, []string{"y"})}},
	{name: "LayerNormalization/axis1_no_bias", in: []spec{f("a", 2, 3, 4), f("s", 3, 4)}, nodes: []*onnxpb.NodeProto{nd("LayerNormalization", []string{"a", "s"}, []string{"y"}, attrInt("axis", 1), attrFloat("epsilon", 1e-3))}},
	{name: "RMSNormalization", opset: 23, in: []spec{f("a", 2, 3, 4), f("s", 4)}, nodes: []*onnxpb.NodeProto{nd("RMSNormalization", []string{"a", "s"}, []string{"y"})}},
	{name: "RotaryEmbedding/4d_positions", opset: 23, in: []spec{f("x", 2, 2, 3, 4), f("cos", 5, 2), f("sin", 5, 2), {name: "p", shape: []int64{2, 3}, kind: 'i', ints: []int64{0, 1, 2, 4, 3, 3}}},
		nodes: []*onnxpb.NodeProto{nd("RotaryEmbedding", []string{"x", "cos", "sin", "p"}, []string{"y"})}},
	{name: "RotaryEmbedding/3d_interleaved_partial", opset: 23, in: []spec{f("x", 2, 3, 12), f("cos", 2, 3, 2), f("sin", 2, 3, 2)},
		nodes: []*onnxpb.NodeProto{nd("RotaryEmbedding", []string{"x", "cos", "sin"}, []string{"y"}, attrInt("num_heads", 2), attrInt("interleaved", 1), attrInt("rotary_embedding_dim", 4))}},
	{name: "Attention/4d_causal_gqa", opset: 23, in: []spec{f("q", 2, 4, 3, 2), f("k", 2, 2, 3, 2), f("v", 2, 2, 3, 2)},
		nodes: []*onnxpb.NodeProto{nd("Attention", []string{"q", "k", "v"}, []string{"y"}, attrInt("is_causal", 1))}},
	{name: "Attention/3d_mask_past_scale", opset: 23, in: []spec{f("q", 1, 2, 4), f("k", 1, 2, 4), f("v", 1, 2, 4), {name: "m", shape: []int64{1, 1, 2, 3}, kind: 'b', bools: []bool{true, false, true, true, true, false}},
		f("pk", 1, 2, 1, 2), f("pv", 1, 2, 1, 2)},
		nodes: []*onnxpb.NodeProto{nd("Attention", []string{"q", "k", "v", "m", "pk", "pv"}, []string{"y", "pk_out", "pv_out"}, attrInt("q_num_heads", 2), attrInt("kv_num_heads", 2), attrFloat("scale", 0.7), attrInt("is_causal", 1))}},
}

// TestRules checks every gradient rule against central finite differences
// in float64: the largest error must be below 1e-6 of the largest gradient
// component (floor 1e-3 for gradients that vanish). Step 1e-5: the central
// difference's truncation error O(h^2) ~ 1e-10 and rounding ~ 1e-16/h ~ 1e-11
// are far below the bound.
//
// Each case runs with static input shapes and again with every dim unknown
// ("dynamic"), which exercises the run-time reduction of broadcast
// gradients.
func TestRules(t *testing.T) {
	for i, c := range ruleCases {
		for _, dynamic := range []bool{false, true} {
			name := c.name
			if dynamic {
				name += "/dynamic"
			}
			t.Run(name, func(t *testing.T) {
				r := rand.New(rand.NewPCG(uint64(i), 4))
				feeds := map[string]feed{}
				var wrt []string
				for _, s := range c.in {
					feeds[s.name] = s.feed(r)
					if s.kind == 'n' || s.kind == 'p' {
						wrt = append(wrt, s.name)
					}
				}
				opset := c.opset
				if opset == 0 {
					opset = 18
				}
				g := testGraphDims(c.in, c.nodes, dynamic)
				rel := gradCheck(t, g, opset, feeds, "loss", wrt, 1e-5, 1e-3, nil)
				for _, w := range wrt {
					if rel[w] > 1e-6 {
						t.Errorf("d loss / d %s: relative error %.3g > 1e-6", w, rel[w])
					}
				}
			})
		}
	}
}

// TestRulesCoverIssueOps fails when an op the issue lists has no rule and no
// decomposition, or has no finite-difference case above.
func TestRulesCoverIssueOps(t *testing.T) {
	ops := []string{"MatMul", "Gemm", "Add", "Sub", "Mul", "Div", "Neg", "Pow", "Sqrt", "Reciprocal", "Exp", "Log",
		"Tanh", "Sigmoid", "Relu", "Erf", "Softmax", "LogSoftmax", "ReduceMean", "ReduceSum", "ReduceMax", "Gather",
		"GatherElements", "Reshape", "Transpose", "Unsqueeze", "Squeeze", "Flatten", "Concat", "Slice", "Split", "Expand",
		"Where", "Cast", "Identity", "Max", "Min", "LayerNormalization", "RMSNormalization", "RotaryEmbedding", "Attention"}
	tested := map[string]bool{"Erf": true} // TestErf
	for _, c := range ruleCases {
		for _, n := range c.nodes {
			tested[n.GetOpType()] = true
		}
	}
	for _, op := range ops {
		if !tested[op] {
			t.Errorf("op %s has no gradient test case", op)
		}
	}
}

// TestUnsupportedOp: an op without a rule on the path to the loss is an
// error naming the op and the node; off the path it is ignored.
func TestUnsupportedOp(t *testing.T) {
	in := []spec{f("a", 2, 3), f("b", 2, 3)}
	g := testGraph(in, []*onnxpb.NodeProto{
		nd("Softplus", []string{"a"}, []string{"s"}),
		nd("Add", []string{"s", "b"}, []string{"y"}),
	})
	_, err := Differentiate(g, "loss", []string{"a", "b"}, Options{})
	var ue *UnsupportedOpError
	if !errors.As(err, &ue) || ue.OpType != "Softplus" || ue.Node != "Softplus_s" {
		t.Fatalf("err = %v, want UnsupportedOpError for Softplus node Softplus_s", err)
	}
	// Only b is differentiated: the Softplus node is not on a path from b.
	if _, err := Differentiate(g, "loss", []string{"b"}, Options{}); err != nil {
		t.Fatalf("Softplus off the path: %v", err)
	}
}

// TestPruning: integer and shape paths get no gradient, and a wrt the loss
// does not depend on gets zeros.
func TestPruning(t *testing.T) {
	in := []spec{f("a", 2, 3), f("unused", 4)}
	g := testGraph(in, []*onnxpb.NodeProto{
		nd("Shape", []string{"a"}, []string{"s"}),
		nd("Cast", []string{"a"}, []string{"ai"}, attrInt("to", int64(tInt64))),
		nd("ConstantOfShape", []string{"s"}, []string{"z"}, attrTensor("value", tensorFloat(tDouble, []int64{1}, 2))),
		nd("Cast", []string{"ai"}, []string{"af"}, attrInt("to", int64(tDouble))),
		nd("Mul", []string{"a", "z"}, []string{"m"}),
		nd("Add", []string{"m", "af"}, []string{"y"}),
	})
	gg, err := Differentiate(g, "loss", []string{"a", "unused"}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range gg.GetNode() {
		if n.GetOpType() == "Cast" && slices.Contains(n.GetInput(), "ai") && len(n.GetOutput()) > 0 && n.GetOutput()[0] != "af" {
			t.Errorf("gradient flows through the integer cast: %v", n)
		}
	}
	r := rand.New(rand.NewPCG(7, 7))
	feeds := map[string]feed{"a": in[0].feed(r), "unused": in[1].feed(r)}
	rel := gradCheck(t, g, 18, feeds, "loss", []string{"a", "unused"}, 1e-5, 1e-3, nil)
	for w, e := range rel {
		if e > 1e-6 {
			t.Errorf("%s: relative error %.3g", w, e)
		}
	}
}

// TestPowSquareGradient: the gradient of a^2 (RMSNorm's square) is
// 2 a g with no Pow, and in float32 it equals bit for bit what the general
// rule, 2 a^(2-1) g, gives with ONNX Runtime's Pow (which calls powf for
// the exponent 1), so models train exactly as before the shortcut. The
// values include signs, zeros, subnormals, and powers of two and their
// neighbours across the range.
func TestPowSquareGradient(t *testing.T) {
	vals := []float32{0, float32(math.Copysign(0, -1)), 1, -1, 3, -0.1, 1e-38, -1e-40, math.SmallestNonzeroFloat32, 1e30, -3.4e38}
	for e := -149; e <= 127; e += 3 {
		p := float32(math.Ldexp(1, e))
		vals = append(vals, p, -math.Nextafter32(p, 0), math.Nextafter32(p, float32(math.Inf(1))))
	}
	r := rand.New(rand.NewPCG(2, 2))
	for range 200 {
		vals = append(vals, float32(r.NormFloat64()*math.Pow(10, r.Float64()*20-10)))
	}
	n := int64(len(vals))
	g := &onnxpb.GraphProto{Name: proto.String("square")}
	g.Input = append(g.Input, valueInfo("a", tFloat, []int64{n}, true), valueInfo("w", tFloat, []int64{n}, true))
	g.Node = append(g.Node,
		nd("Constant", nil, []string{"two"}, attrTensor("value", tensorFloat(tFloat, nil, 2))),
		nd("Pow", []string{"a", "two"}, []string{"y"}),
		nd("Mul", []string{"y", "w"}, []string{"yw"}),
		nd("ReduceSum", []string{"yw"}, []string{"loss"}),
	)
	g.Output = append(g.Output, valueInfo("loss", tFloat, nil, false))
	gg, err := Differentiate(g, "loss", []string{"a"}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	pows := 0
	for _, nn := range gg.GetNode() {
		if nn.GetOpType() == "Pow" {
			pows++
		}
	}
	if pows != 1 {
		t.Errorf("gradient graph has %d Pow nodes, want 1 (the forward's)", pows)
	}
	// The general rule's value, da = w (2 a^(2-1)), built by hand.
	ref := &onnxpb.GraphProto{Name: proto.String("general")}
	ref.Input = g.Input
	ref.Node = append(ref.Node,
		nd("Constant", nil, []string{"two"}, attrTensor("value", tensorFloat(tFloat, nil, 2))),
		nd("Constant", nil, []string{"one"}, attrTensor("value", tensorFloat(tFloat, nil, 1))),
		nd("Sub", []string{"two", "one"}, []string{"e1"}),
		nd("Pow", []string{"a", "e1"}, []string{"p"}),
		nd("Mul", []string{"two", "p"}, []string{"d"}),
		nd("Mul", []string{"w", "d"}, []string{"da"}),
	)
	ref.Output = append(ref.Output, valueInfo("da", tFloat, nil, false))
	w := make([]float32, n)
	for i := range w {
		w[i] = float32(r.NormFloat64())
	}
	feeds := map[string]feed{"a": {name: "a", shape: []int64{n}, f32: vals}, "w": {name: "w", shape: []int64{n}, f32: w}}
	got := runOne(t, gg, 18, feeds, GradName("a"))
	want := runOne(t, ref, 18, feeds, "da")
	for i := range vals {
		if math.Float64bits(got[i]) != math.Float64bits(want[i]) {
			t.Errorf("a = %g, w = %g: gradient %g, the general rule's %g", vals[i], w[i], got[i], want[i])
		}
	}
}

// TestErf checks the Erf rule. ONNX Runtime's CPU Erf has no double kernel,
// so the gradient graph runs in float32 and the reference is a central finite
// difference (h = 1e-5) of the same loss, sum(erf(x)^2/2 + erf(x)), evaluated
// in float64 in Go with math.Erf. The float32 gradient has a relative
// rounding error of a few float32 ulps (~1e-7) per element; 1e-5 leaves room
// for the handful of float32 operations in the rule.
func TestErf(t *testing.T) {
	g := &onnxpb.GraphProto{Name: proto.String("erf")}
	g.Input = append(g.Input, valueInfo("a", tFloat, []int64{3, 4}, true))
	g.Node = append(g.Node,
		nd("Erf", []string{"a"}, []string{"y"}),
		nd("Constant", nil, []string{"half"}, attrTensor("value", tensorFloat(tFloat, nil, 0.5))),
		nd("Mul", []string{"y", "y"}, []string{"yy"}),
		nd("Mul", []string{"yy", "half"}, []string{"yy2"}),
		nd("Add", []string{"yy2", "y"}, []string{"terms"}),
		nd("ReduceSum", []string{"terms"}, []string{"loss"}),
	)
	g.Output = append(g.Output, valueInfo("loss", tFloat, nil, false))
	gg, err := Differentiate(g, "loss", []string{"a"}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := newSession(t, gg, 18, []string{GradName("a")})
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(11, 4))
	x := make([]float32, 12)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	out, err := s.run(map[string]feed{"a": {shape: []int64{3, 4}, f32: x}})
	if err != nil {
		t.Fatal(err)
	}
	loss := func(v []float64) float64 {
		l := 0.0
		for _, xi := range v {
			e := math.Erf(xi)
			l += e*e/2 + e
		}
		return l
	}
	const h = 1e-5
	for i := range x {
		v := make([]float64, len(x))
		for j := range x {
			v[j] = float64(x[j])
		}
		v[i] += h
		lp := loss(v)
		v[i] -= 2 * h
		fd := (lp - loss(v)) / (2 * h)
		if ad := out[GradName("a")].v[i]; abs(ad-fd) > 1e-5*max(abs(fd), 1e-3) {
			t.Errorf("a[%d]: gradient %.8g, finite difference %.8g", i, ad, fd)
		}
	}
}

// TestSeeds: with Options.Seeds the gradients equal, bit for bit, those of
// the surrogate loss sum(y * gy) + sum(z * gz) (whose seed, 1 x g, is g
// exactly), also where one seeded value (y) feeds the other (z), and once
// pruned the graph no longer computes z, which nothing else reads.
func TestSeeds(t *testing.T) {
	in := []spec{f("a", 3, 4), f("b", 4, 5), f("gy", 3, 5), f("gz", 3, 5)}
	fwd := testGraph(in, []*onnxpb.NodeProto{
		nd("Tanh", []string{"a"}, []string{"t"}),
		nd("MatMul", []string{"t", "b"}, []string{"y"}),
		nd("Sigmoid", []string{"y"}, []string{"s"}),
		nd("Transpose", []string{"b"}, []string{"bt"}),
		nd("MatMul", []string{"bt", "b"}, []string{"bb"}),
		nd("MatMul", []string{"s", "bb"}, []string{"z0"}),
		nd("Mul", []string{"y", "z0"}, []string{"z"}),
	})
	fwd.Node = fwd.Node[:7] // without testGraph's loss
	fwd.Output = nil
	wrt := []string{"a", "b"}

	sur := proto.Clone(fwd).(*onnxpb.GraphProto)
	sur.Node = append(sur.Node,
		nd("Mul", []string{"y", "gy"}, []string{"py"}),
		nd("ReduceSum", []string{"py"}, []string{"ty"}, attrInt("keepdims", 0)),
		nd("Mul", []string{"z", "gz"}, []string{"pz"}),
		nd("ReduceSum", []string{"pz"}, []string{"tz"}, attrInt("keepdims", 0)),
		nd("Sum", []string{"ty", "tz"}, []string{"loss"}),
	)
	sur.Output = append(sur.Output, valueInfo("loss", tDouble, nil, false))
	want, err := Differentiate(sur, "loss", wrt, Options{KeepOutputs: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	got, err := Differentiate(fwd, "", wrt, Options{KeepOutputs: []string{}, Seeds: []Seed{{Value: "y", Grad: "gy"}, {Value: "z", Grad: "gz"}}})
	if err != nil {
		t.Fatal(err)
	}
	got = Prune(got)
	for _, n := range got.GetNode() {
		if slices.Contains(n.GetOutput(), "z") {
			t.Errorf("the pruned seeded graph still computes z: %v", n)
		}
	}
	r := rand.New(rand.NewPCG(3, 3))
	feeds := map[string]feed{}
	for _, s := range in {
		feeds[s.name] = s.feed(r)
	}
	for _, w := range wrt {
		a, b := runOne(t, got, 18, feeds, GradName(w)), runOne(t, want, 18, feeds, GradName(w))
		if len(a) != len(b) {
			t.Fatalf("%s: %d values, the surrogate loss's %d", w, len(a), len(b))
		}
		for i := range a {
			if math.Float64bits(a[i]) != math.Float64bits(b[i]) {
				t.Errorf("%s[%d]: %g, the surrogate loss's %g", w, i, a[i], b[i])
			}
		}
	}
	if _, err := Differentiate(fwd, "", wrt, Options{}); err == nil {
		t.Error("neither a loss nor seeds: no error")
	}
}
