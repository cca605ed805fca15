package autodiff

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/spiral-rl/spiral/model/onnx/onnxpb"
	"google.golang.org/protobuf/proto"
)

// NamePrefix starts the name of every node and value that this package adds
// to a graph.
const NamePrefix = "ad/"

// Name prefixes of the passes: Differentiate's gradient nodes, Decompose's
// primitives, LossGraph's empty cache and loss nodes.
const (
	gradTag = NamePrefix + "grad/"
	decTag  = NamePrefix + "dec/"
	pastTag = NamePrefix + "past/"
	lmTag   = NamePrefix + "lm/"
)

// ONNX tensor element types used here (TensorProto.DataType).
const (
	tFloat   = int32(onnxpb.TensorProto_FLOAT)
	tDouble  = int32(onnxpb.TensorProto_DOUBLE)
	tFloat16 = int32(onnxpb.TensorProto_FLOAT16)
	tBF16    = int32(onnxpb.TensorProto_BFLOAT16)
	tInt64   = int32(onnxpb.TensorProto_INT64)
	tInt32   = int32(onnxpb.TensorProto_INT32)
	tBool    = int32(onnxpb.TensorProto_BOOL)
)

func isFloat(dt int32) bool {
	return dt == tFloat || dt == tDouble || dt == tFloat16 || dt == tBF16
}

// builder appends nodes to a graph under fresh names.
type builder struct {
	g      *onnxpb.GraphProto
	tag    string // prefix of generated names, e.g. "ad/"
	n      int
	consts map[string]string // dedup key -> value name
}

func newBuilder(g *onnxpb.GraphProto, tag string) *builder {
	return &builder{g: g, tag: tag, consts: map[string]string{}}
}

func (b *builder) fresh(hint string) string {
	b.n++
	return b.tag + hint + "_" + strconv.Itoa(b.n)
}

// op appends one node with a single output and returns the output name.
func (b *builder) op(opType string, inputs []string, attrs ...*onnxpb.AttributeProto) string {
	return b.opN(opType, inputs, 1, attrs...)[0]
}

// opN appends one node with nout outputs.
func (b *builder) opN(opType string, inputs []string, nout int, attrs ...*onnxpb.AttributeProto) []string {
	name := b.fresh(opType)
	outs := make([]string, nout)
	for i := range outs {
		outs[i] = name + "/" + strconv.Itoa(i)
	}
	b.g.Node = append(b.g.Node, &onnxpb.NodeProto{
		Name:      proto.String(name),
		OpType:    proto.String(opType),
		Input:     append([]string(nil), inputs...),
		Output:    outs,
		Attribute: attrs,
	})
	return outs
}

func attrInt(name string, v int64) *onnxpb.AttributeProto {
	return &onnxpb.AttributeProto{Name: proto.String(name), Type: onnxpb.AttributeProto_INT.Enum(), I: proto.Int64(v)}
}

func attrInts(name string, v ...int64) *onnxpb.AttributeProto {
	return &onnxpb.AttributeProto{Name: proto.String(name), Type: onnxpb.AttributeProto_INTS.Enum(), Ints: v}
}

func attrString(name, v string) *onnxpb.AttributeProto {
	return &onnxpb.AttributeProto{Name: proto.String(name), Type: onnxpb.AttributeProto_STRING.Enum(), S: []byte(v)}
}

func attrTensor(name string, t *onnxpb.TensorProto) *onnxpb.AttributeProto {
	return &onnxpb.AttributeProto{Name: proto.String(name), Type: onnxpb.AttributeProto_TENSOR.Enum(), T: t}
}

// tensorI64 makes an int64 TensorProto with the given dims (nil = scalar).
func tensorI64(dims []int64, v ...int64) *onnxpb.TensorProto {
	return &onnxpb.TensorProto{Dims: dims, DataType: proto.Int32(tInt64), Int64Data: v}
}

// tensorFloat makes a float tensor of element type dt holding v.
func tensorFloat(dt int32, dims []int64, v ...float64) *onnxpb.TensorProto {
	t := &onnxpb.TensorProto{Dims: dims, DataType: proto.Int32(dt)}
	switch dt {
	case tDouble:
		t.DoubleData = v
	case tFloat:
		for _, x := range v {
			t.FloatData = append(t.FloatData, float32(x))
		}
	case tFloat16, tBF16:
		// Stored in int32_data as raw 16-bit patterns.
		for _, x := range v {
			t.Int32Data = append(t.Int32Data, int32(half(dt, x)))
		}
	}
	return t
}

// half encodes x as an IEEE float16 or bfloat16 bit pattern (round to nearest
// even); enough for the small constants this package emits.
func half(dt int32, x float64) uint16 {
	f := math.Float32bits(float32(x))
	if dt == tBF16 {
		r := f + 0x7fff + (f>>16)&1
		return uint16(r >> 16)
	}
	sign := uint16(f>>16) & 0x8000
	exp := int32(f>>23&0xff) - 127 + 15
	mant := f & 0x7fffff
	switch {
	case f&0x7fffffff == 0:
		return sign
	case exp >= 31:
		return sign | 0x7c00
	case exp <= 0:
		return sign // flush tiny values to zero
	}
	h := uint32(exp)<<10 | mant>>13
	rest := mant & 0x1fff
	if rest > 0x1000 || (rest == 0x1000 && h&1 == 1) {
		h++
	}
	return sign | uint16(h)
}

// constant emits (once per distinct value) a Constant node holding t.
func (b *builder) constant(key string, t *onnxpb.TensorProto) string {
	if name, ok := b.consts[key]; ok {
		return name
	}
	name := b.op("Constant", nil, attrTensor("value", t))
	b.consts[key] = name
	return name
}

// ints emits a 1-D int64 constant.
func (b *builder) ints(v ...int64) string {
	return b.constant("i64:"+fmt.Sprint(v), tensorI64([]int64{int64(len(v))}, v...))
}

// scalarInt emits a 0-D int64 constant.
func (b *builder) scalarInt(v int64) string {
	return b.constant("i64s:"+strconv.FormatInt(v, 10), tensorI64(nil, v))
}

// scalar emits a 0-D float constant of element type dt.
func (b *builder) scalar(dt int32, v float64) string {
	return b.constant(fmt.Sprintf("f%d:%v", dt, v), tensorFloat(dt, nil, v))
}

func (b *builder) shape(x string) string { return b.op("Shape", []string{x}) }

// zerosLike emits zeros with the shape of x and element type dt.
func (b *builder) zerosLike(x string, dt int32) string {
	return b.op("ConstantOfShape", []string{b.shape(x)}, attrTensor("value", tensorFloat(dt, []int64{1}, 0)))
}

func (b *builder) cast(x string, dt int32) string {
	return b.op("Cast", []string{x}, attrInt("to", int64(dt)))
}

// reshapeLike reshapes x to the run-time shape of like.
func (b *builder) reshapeLike(x, like string) string {
	return b.op("Reshape", []string{x, b.shape(like)})
}

// unbroadcast reduces g (the gradient of a broadcast result, with static
// dims gdims when known, nil otherwise) back to the shape of x.
//
// When the dims of g and x decide it statically, it sums the leading axes
// of g that x lacks and the axes where x has extent 1 (constant axes), or
// does nothing when the shapes are equal. Otherwise it decides at run time:
// the axes where x, left-padded with ones to the rank of g, has extent 1 are
// summed (keepdims), then the result is reshaped to Shape(x). Summing an axis
// where g also has extent 1 is a no-op, so this needs no static shapes.
func (b *builder) unbroadcast(g string, gdims []int64, x string, t *typeTable) string {
	ix := t.info[x]
	if gdims != nil && ix.known && len(ix.dims) <= len(gdims) {
		rg, rx := len(gdims), len(ix.dims)
		var axes []int64
		for i := range rg - rx {
			axes = append(axes, int64(i))
		}
		static := true
		for i, dx := range ix.dims {
			dg := gdims[rg-rx+i]
			switch {
			case dx == dg && dx != -1:
			case dx == 1:
				axes = append(axes, int64(rg-rx+i))
			default:
				static = false
			}
		}
		if static {
			if len(axes) == 0 {
				return g
			}
			s := b.op("ReduceSum", []string{g, b.ints(axes...)}, attrInt("keepdims", 1))
			if rg > rx {
				s = b.reshapeLike(s, x)
			}
			return s
		}
	}
	sg, sx := b.shape(g), b.shape(x)
	pad := b.op("Sub", []string{b.shape(sg), b.shape(sx)})
	ones := b.op("ConstantOfShape", []string{pad}, attrTensor("value", tensorI64([]int64{1}, 1)))
	padded := b.op("Concat", []string{ones, sx}, attrInt("axis", 0))
	isOne := b.op("Equal", []string{padded, b.ints(1)})
	axes := b.op("Reshape", []string{b.op("NonZero", []string{isOne}), b.ints(-1)})
	sum := b.op("ReduceSum", []string{g, axes}, attrInt("keepdims", 1), attrInt("noop_with_empty_axes", 1))
	return b.op("Reshape", []string{sum, sx})
}

// sum adds the terms (nil -> "").
func (b *builder) sum(terms []string) string {
	switch len(terms) {
	case 0:
		return ""
	case 1:
		return terms[0]
	}
	return b.op("Sum", terms)
}

func hasPrefixName(g *onnxpb.GraphProto, prefix string) string {
	for _, n := range g.GetNode() {
		if strings.HasPrefix(n.GetName(), prefix) {
			return n.GetName()
		}
		for _, o := range n.GetOutput() {
			if strings.HasPrefix(o, prefix) {
				return o
			}
		}
	}
	for _, i := range g.GetInput() {
		if strings.HasPrefix(i.GetName(), prefix) {
			return i.GetName()
		}
	}
	for _, i := range g.GetInitializer() {
		if strings.HasPrefix(i.GetName(), prefix) {
			return i.GetName()
		}
	}
	return ""
}

func attr(n *onnxpb.NodeProto, name string) *onnxpb.AttributeProto {
	for _, a := range n.GetAttribute() {
		if a.GetName() == name {
			return a
		}
	}
	return nil
}

func attrIntOr(n *onnxpb.NodeProto, name string, def int64) int64 {
	if a := attr(n, name); a != nil {
		return a.GetI()
	}
	return def
}

func attrFloatOr(n *onnxpb.NodeProto, name string, def float32) float32 {
	if a := attr(n, name); a != nil {
		return a.GetF()
	}
	return def
}

// input returns the i-th input of n, "" when absent.
func input(n *onnxpb.NodeProto, i int) string {
	if i < len(n.GetInput()) {
		return n.GetInput()[i]
	}
	return ""
}
