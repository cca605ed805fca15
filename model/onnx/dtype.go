package onnx

import (
	"fmt"
	"math"

	"github.com/spiral-rl/spiral/model/onnx/onnxpb"
)

// DType is an ONNX tensor element type; its values are those of
// TensorProto.DataType.
type DType int32

// The element types spiral names. Others (float8, int4, complex) can be
// read from a graph as DType values but have no Go slice helpers.
const (
	Undefined DType = DType(onnxpb.TensorProto_UNDEFINED)
	Float32   DType = DType(onnxpb.TensorProto_FLOAT)
	Uint8     DType = DType(onnxpb.TensorProto_UINT8)
	Int8      DType = DType(onnxpb.TensorProto_INT8)
	Uint16    DType = DType(onnxpb.TensorProto_UINT16)
	Int16     DType = DType(onnxpb.TensorProto_INT16)
	Int32     DType = DType(onnxpb.TensorProto_INT32)
	Int64     DType = DType(onnxpb.TensorProto_INT64)
	String    DType = DType(onnxpb.TensorProto_STRING)
	Bool      DType = DType(onnxpb.TensorProto_BOOL)
	Float16   DType = DType(onnxpb.TensorProto_FLOAT16)
	Float64   DType = DType(onnxpb.TensorProto_DOUBLE)
	Uint32    DType = DType(onnxpb.TensorProto_UINT32)
	Uint64    DType = DType(onnxpb.TensorProto_UINT64)
	BFloat16  DType = DType(onnxpb.TensorProto_BFLOAT16)
)

var dtypeNames = map[DType]string{
	Undefined: "undefined",
	Float32:   "float32",
	Uint8:     "uint8",
	Int8:      "int8",
	Uint16:    "uint16",
	Int16:     "int16",
	Int32:     "int32",
	Int64:     "int64",
	String:    "string",
	Bool:      "bool",
	Float16:   "float16",
	Float64:   "float64",
	Uint32:    "uint32",
	Uint64:    "uint64",
	BFloat16:  "bfloat16",
}

// String returns the numpy-style name of d ("float32", "bfloat16"), or the
// ONNX enum name for types without one ("FLOAT8E4M3FN"), or "dtype(N)".
func (d DType) String() string {
	if s, ok := dtypeNames[d]; ok {
		return s
	}
	if s, ok := onnxpb.TensorProto_DataType_name[int32(d)]; ok {
		return s
	}
	return fmt.Sprintf("dtype(%d)", int32(d))
}

// Size returns the bytes one element of d takes in raw_data: 1, 2, 4 or 8;
// 0 for string, undefined and sub-byte or unknown types.
func (d DType) Size() int {
	switch d {
	case Uint8, Int8, Bool:
		return 1
	case Uint16, Int16, Float16, BFloat16:
		return 2
	case Float32, Int32, Uint32:
		return 4
	case Int64, Float64, Uint64:
		return 8
	case DType(onnxpb.TensorProto_FLOAT8E4M3FN), DType(onnxpb.TensorProto_FLOAT8E4M3FNUZ),
		DType(onnxpb.TensorProto_FLOAT8E5M2), DType(onnxpb.TensorProto_FLOAT8E5M2FNUZ):
		return 1
	case DType(onnxpb.TensorProto_COMPLEX64):
		return 8
	case DType(onnxpb.TensorProto_COMPLEX128):
		return 16
	}
	return 0
}

// rawSize returns the bytes of raw_data a tensor of dt with n elements
// holds, including the packed 4-bit types (two per byte, rounded up); -1
// when the type has no fixed-size encoding (string, undefined), when n is
// negative, or when the byte count overflows int64 (tensorRawSize tells
// the cases apart).
func rawSize(dt DType, n int64) int64 {
	if n < 0 {
		return -1
	}
	switch dt {
	case DType(onnxpb.TensorProto_UINT4), DType(onnxpb.TensorProto_INT4), DType(onnxpb.TensorProto_FLOAT4E2M1):
		return n/2 + n%2
	}
	if s := int64(dt.Size()); s > 0 && n <= math.MaxInt64/s {
		return n * s
	}
	return -1
}

// tensorRawSize is rawSize for t's type and its n elements, and an
// error when that type has a fixed-size encoding but the byte count
// overflows int64 (-1 and no error: the type has none).
func tensorRawSize(t *onnxpb.TensorProto, n int64) (int64, error) {
	dt := TensorDType(t)
	size := rawSize(dt, n)
	if size < 0 && rawSize(dt, 0) == 0 {
		return -1, fmt.Errorf("%s%v is too large: its byte size overflows int64", dt, t.GetDims())
	}
	return size, nil
}
