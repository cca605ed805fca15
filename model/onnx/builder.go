package onnx

import (
	"fmt"
	"strconv"

	"github.com/spiral-rl/spiral/model/onnx/onnxpb"
)

// Attr is a node attribute; build one with AttrInt, AttrInts, AttrFloat
// or AttrTensor, or take one from an existing node.
type Attr = *onnxpb.AttributeProto

// AttrInt returns the INT attribute name=v.
func AttrInt(name string, v int64) Attr {
	return &onnxpb.AttributeProto{Name: ptr(name), Type: onnxpb.AttributeProto_INT.Enum(), I: ptr(v)}
}

// AttrInts returns the INTS attribute name=v.
func AttrInts(name string, v ...int64) Attr {
	return &onnxpb.AttributeProto{Name: ptr(name), Type: onnxpb.AttributeProto_INTS.Enum(), Ints: append([]int64{}, v...)}
}

// AttrFloat returns the FLOAT attribute name=v.
func AttrFloat(name string, v float32) Attr {
	return &onnxpb.AttributeProto{Name: ptr(name), Type: onnxpb.AttributeProto_FLOAT.Enum(), F: ptr(v)}
}

// AttrTensor returns the TENSOR attribute name=t (t is not copied).
func AttrTensor(name string, t *onnxpb.TensorProto) Attr {
	return &onnxpb.AttributeProto{Name: ptr(name), Type: onnxpb.AttributeProto_TENSOR.Enum(), T: t}
}

// GraphBuilder builds an ONNX graph node by node. Value names must be
// unique in the graph: Input, Initializer and NodeTo panic on a name
// already used, and Node / NodeN / Const* generate fresh names
// "<scope>/<Op>_<n>". A GraphBuilder is not safe for concurrent use.
type GraphBuilder struct {
	g     *onnxpb.GraphProto
	used  map[string]bool
	n     int
	scope string
}

// NewGraphBuilder returns a builder for an empty graph called name.
func NewGraphBuilder(name string) *GraphBuilder {
	return &GraphBuilder{
		g:    &onnxpb.GraphProto{Name: ptr(name)},
		used: map[string]bool{},
	}
}

// SetScope sets the prefix of the names generated from now on, such as
// "/model/layers.0/self_attn" (as PyTorch's exporter names values); ""
// removes it.
func (b *GraphBuilder) SetScope(scope string) { b.scope = scope }

func (b *GraphBuilder) claim(name string) {
	if name == "" {
		panic("onnx: empty value name")
	}
	if b.used[name] {
		panic(fmt.Sprintf("onnx: value name %q used twice in graph %q", name, b.g.GetName()))
	}
	b.used[name] = true
}

// fresh returns an unused name for the output of an op.
func (b *GraphBuilder) fresh(op string) string {
	for {
		name := op + "_" + strconv.Itoa(b.n)
		if b.scope != "" {
			name = b.scope + "/" + name
		}
		b.n++
		if !b.used[name] {
			return name
		}
	}
}

// Input adds a graph input of type dt and shape dims (symbolic with P,
// fixed with D) and returns its name. No dims declares a scalar.
func (b *GraphBuilder) Input(name string, dt DType, dims ...Dim) string {
	b.claim(name)
	b.g.Input = append(b.g.Input, newValueInfo(name, dt, nonNil(dims)))
	return name
}

// Output declares the existing value name as a graph output of type dt and
// shape dims, and returns name.
func (b *GraphBuilder) Output(name string, dt DType, dims ...Dim) string {
	b.g.Output = append(b.g.Output, newValueInfo(name, dt, nonNil(dims)))
	return name
}

func nonNil(d []Dim) []Dim {
	if d == nil {
		return []Dim{}
	}
	return d
}

// Initializer adds t to the graph's initializers under name (setting
// t.Name) and returns name.
func (b *GraphBuilder) Initializer(name string, t *onnxpb.TensorProto) string {
	b.claim(name)
	t.Name = ptr(name)
	b.g.Initializer = append(b.g.Initializer, t)
	return name
}

// Node adds a node of the standard operator op with one output and
// returns the output's fresh name. An empty input name skips an optional
// input.
func (b *GraphBuilder) Node(op string, inputs []string, attrs ...Attr) string {
	return b.NodeN(op, inputs, 1, attrs...)[0]
}

// NodeN adds a node of op with n outputs and returns their fresh names.
func (b *GraphBuilder) NodeN(op string, inputs []string, n int, attrs ...Attr) []string {
	base := b.fresh(op)
	outs := make([]string, n)
	for i := range outs {
		if n == 1 {
			outs[i] = base
		} else {
			outs[i] = base + "_out" + strconv.Itoa(i)
		}
	}
	node := b.NodeTo(op, inputs, outs, attrs...)
	node.Name = ptr(base)
	return outs
}

// NodeTo adds a node of op whose outputs get the given names (a graph
// output such as "logits", say) and returns it, so that callers can set
// fields such as Domain.
func (b *GraphBuilder) NodeTo(op string, inputs, outputs []string, attrs ...Attr) *onnxpb.NodeProto {
	for _, o := range outputs {
		if o != "" {
			b.claim(o)
		}
	}
	node := &onnxpb.NodeProto{
		OpType:    ptr(op),
		Input:     append([]string{}, inputs...),
		Output:    append([]string{}, outputs...),
		Attribute: attrs,
	}
	if len(outputs) > 0 {
		// Node names and value names live in separate namespaces.
		node.Name = ptr(outputs[0])
	}
	b.g.Node = append(b.g.Node, node)
	return node
}

// Const adds a Constant node holding t and returns its output's name.
func (b *GraphBuilder) Const(t *onnxpb.TensorProto) string {
	return b.Node("Constant", nil, AttrTensor("value", t))
}

// ConstInt64s adds a 1-D int64 Constant (axes, shapes, slice bounds).
func (b *GraphBuilder) ConstInt64s(v ...int64) string {
	return b.Const(NewTensor("", []int64{int64(len(v))}, v))
}

// ConstInt64 adds a scalar int64 Constant.
func (b *GraphBuilder) ConstInt64(v int64) string {
	return b.Const(NewTensor("", nil, []int64{v}))
}

// ConstFloat32 adds a scalar float32 Constant.
func (b *GraphBuilder) ConstFloat32(v float32) string {
	return b.Const(NewTensor("", nil, []float32{v}))
}

// Graph returns the graph built so far (not a copy).
func (b *GraphBuilder) Graph() *onnxpb.GraphProto { return b.g }

// IRVersion returns the ONNX IR version that goes with a standard opset
// (opset 18: 8, as onnx.helper's VERSION_TABLE), the version Model writes.
func IRVersion(opset int) int64 {
	table := []struct{ opset, ir int }{
		{8, 3}, {9, 4}, {10, 5}, {11, 6}, {14, 7}, {18, 8}, {20, 9}, {22, 10}, {23, 11}, {24, 12}, {27, 13}, {28, 14},
	}
	for _, e := range table {
		if opset <= e.opset {
			return int64(e.ir)
		}
	}
	return int64(table[len(table)-1].ir)
}

// Model wraps the graph in a ModelProto importing the standard opset
// version opset, with the matching IR version and producer "spiral". The
// model shares the builder's graph.
func (b *GraphBuilder) Model(opset int) *Model {
	return &Model{Proto: &onnxpb.ModelProto{
		IrVersion:    ptr(IRVersion(opset)),
		ProducerName: ptr("spiral"),
		OpsetImport:  []*onnxpb.OperatorSetIdProto{{Domain: ptr(""), Version: ptr(int64(opset))}},
		Graph:        b.g,
	}}
}
