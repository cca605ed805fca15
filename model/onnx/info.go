package onnx

import (
	"strconv"
	"strings"

	"github.com/spiral-rl/spiral/model/onnx/onnxpb"
)

// Dim is one dimension of a value's shape: symbolic when Param is set
// ("batch_size"), fixed when Value >= 0, unknown otherwise.
type Dim struct {
	Value int64
	Param string
}

// D returns the fixed dimension v.
func D(v int64) Dim { return Dim{Value: v} }

// P returns the symbolic dimension named name.
func P(name string) Dim { return Dim{Value: -1, Param: name} }

// String returns the name of a symbolic dim, the value of a fixed one, "?"
// for an unknown one.
func (d Dim) String() string {
	switch {
	case d.Param != "":
		return d.Param
	case d.Value >= 0:
		return strconv.FormatInt(d.Value, 10)
	}
	return "?"
}

// ValueInfo describes a graph input, output or intermediate value.
type ValueInfo struct {
	Name  string
	DType DType
	// Shape is nil when the rank is unknown; a scalar has an empty,
	// non-nil Shape.
	Shape []Dim
}

// String renders v as `name dtype[d0,d1,...]`.
func (v ValueInfo) String() string {
	var b strings.Builder
	b.WriteString(v.Name)
	b.WriteByte(' ')
	b.WriteString(v.DType.String())
	if v.Shape == nil {
		b.WriteString("[...]")
		return b.String()
	}
	b.WriteByte('[')
	for i, d := range v.Shape {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(d.String())
	}
	b.WriteByte(']')
	return b.String()
}

// TensorInfo describes an initializer without its data.
type TensorInfo struct {
	Name  string
	DType DType
	Dims  []int64
	// Bytes is the size of the data in raw encoding, -1 for strings.
	Bytes int64
}

func valueInfoOf(vi *onnxpb.ValueInfoProto) ValueInfo {
	out := ValueInfo{Name: vi.GetName()}
	tt := vi.GetType().GetTensorType()
	if tt == nil {
		return out
	}
	out.DType = DType(tt.GetElemType())
	if tt.Shape == nil {
		return out
	}
	out.Shape = make([]Dim, 0, len(tt.Shape.GetDim()))
	for _, d := range tt.Shape.GetDim() {
		switch v := d.GetValue().(type) {
		case *onnxpb.TensorShapeProto_Dimension_DimValue:
			out.Shape = append(out.Shape, D(v.DimValue))
		case *onnxpb.TensorShapeProto_Dimension_DimParam:
			out.Shape = append(out.Shape, P(v.DimParam))
		default:
			out.Shape = append(out.Shape, Dim{Value: -1})
		}
	}
	return out
}

// newValueInfo returns a tensor ValueInfoProto; dims nil means unknown rank.
func newValueInfo(name string, dt DType, dims []Dim) *onnxpb.ValueInfoProto {
	tt := &onnxpb.TypeProto_Tensor{ElemType: ptr(int32(dt))}
	if dims != nil {
		tt.Shape = &onnxpb.TensorShapeProto{}
		for _, d := range dims {
			pd := &onnxpb.TensorShapeProto_Dimension{}
			switch {
			case d.Param != "":
				pd.Value = &onnxpb.TensorShapeProto_Dimension_DimParam{DimParam: d.Param}
			case d.Value >= 0:
				pd.Value = &onnxpb.TensorShapeProto_Dimension_DimValue{DimValue: d.Value}
			}
			tt.Shape.Dim = append(tt.Shape.Dim, pd)
		}
	}
	return &onnxpb.ValueInfoProto{
		Name: ptr(name),
		Type: &onnxpb.TypeProto{Value: &onnxpb.TypeProto_TensorType{TensorType: tt}},
	}
}

// Inputs lists the graph's inputs in order, leaving out those that are
// also initializers (inputs with defaults, allowed since IR version 4).
func (m *Model) Inputs() []ValueInfo {
	inits := map[string]bool{}
	for _, t := range m.Graph().GetInitializer() {
		inits[t.GetName()] = true
	}
	var out []ValueInfo
	for _, vi := range m.Graph().GetInput() {
		if !inits[vi.GetName()] {
			out = append(out, valueInfoOf(vi))
		}
	}
	return out
}

// Outputs lists the graph's outputs in order.
func (m *Model) Outputs() []ValueInfo {
	var out []ValueInfo
	for _, vi := range m.Graph().GetOutput() {
		out = append(out, valueInfoOf(vi))
	}
	return out
}

// Input returns the graph input called name.
func (m *Model) Input(name string) (ValueInfo, bool) {
	return findValueInfo(m.Graph().GetInput(), name)
}

// Output returns the graph output called name.
func (m *Model) Output(name string) (ValueInfo, bool) {
	return findValueInfo(m.Graph().GetOutput(), name)
}

func findValueInfo(vis []*onnxpb.ValueInfoProto, name string) (ValueInfo, bool) {
	for _, vi := range vis {
		if vi.GetName() == name {
			return valueInfoOf(vi), true
		}
	}
	return ValueInfo{}, false
}

// Initializers lists the main graph's initializers in order, without data.
func (m *Model) Initializers() []TensorInfo {
	var out []TensorInfo
	for _, t := range m.Graph().GetInitializer() {
		dt := TensorDType(t)
		out = append(out, TensorInfo{
			Name:  t.GetName(),
			DType: dt,
			Dims:  append([]int64{}, t.GetDims()...),
			Bytes: rawSize(dt, NumElements(t.GetDims())),
		})
	}
	return out
}

// Initializer returns the main graph's initializer called name, or nil.
func (m *Model) Initializer(name string) *onnxpb.TensorProto {
	for _, t := range m.Graph().GetInitializer() {
		if t.GetName() == name {
			return t
		}
	}
	return nil
}
