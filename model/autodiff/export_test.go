package autodiff

import (
	"google.golang.org/protobuf/proto"

	"github.com/spiral-rl/spiral/model/onnx/onnxpb"
)

// Internals for the external tests (package autodiff_test).
var (
	AttrInt   = attrInt
	AttrInts  = attrInts
	AttrFloat = func(name string, v float32) *onnxpb.AttributeProto {
		return &onnxpb.AttributeProto{Name: proto.String(name), Type: onnxpb.AttributeProto_FLOAT.Enum(), F: proto.Float32(v)}
	}
	AttrTensor  = attrTensor
	TensorI64   = tensorI64
	TensorFloat = tensorFloat
	NamedDims   = namedDims
)

const (
	TFloat  = tFloat
	TDouble = tDouble
	TInt64  = tInt64
	TBool   = tBool
)

// ValueInfo makes a tensor ValueInfoProto; dims are used when known.
func ValueInfo(name string, dt int32, dims []int64, known bool) *onnxpb.ValueInfoProto {
	return valueInfo(name, dt, tinfo{dims: dims, known: known})
}

// InferredShape runs the type inference over g and returns what it
// found of the value name's shape: its dims, and whether they are known.
func InferredShape(g *onnxpb.GraphProto, name string) (dims []int64, known bool) {
	ti := inferTypes(g).info[name]
	return ti.dims, ti.known
}
