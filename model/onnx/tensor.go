package onnx

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/spiral-rl/spiral/model/onnx/onnxpb"
)

// Element is the set of Go element types NewTensor stores; each maps to the
// ONNX type of the same name (bool to BOOL, one byte per element).
type Element interface {
	float32 | float64 | int8 | int16 | int32 | int64 | uint8 | uint16 | uint32 | uint64 | bool
}

// DTypeOf returns the ONNX element type of T.
func DTypeOf[T Element]() DType {
	var z T
	switch any(z).(type) {
	case float32:
		return Float32
	case float64:
		return Float64
	case int8:
		return Int8
	case int16:
		return Int16
	case int32:
		return Int32
	case int64:
		return Int64
	case uint8:
		return Uint8
	case uint16:
		return Uint16
	case uint32:
		return Uint32
	case uint64:
		return Uint64
	case bool:
		return Bool
	}
	panic("onnx: unreachable element type")
}

// NumElements returns the product of dims (1 for a scalar, dims empty), or
// -1 when a dim is negative or the product overflows int64.
func NumElements(dims []int64) int64 {
	n := int64(1)
	for _, d := range dims {
		if d < 0 {
			return -1
		}
		if d != 0 && n > math.MaxInt64/d {
			return -1
		}
		n *= d
	}
	return n
}

// NewTensor returns a tensor named name with the given dims (row-major;
// none for a scalar) holding a little-endian copy of data in raw_data. It
// panics if len(data) is not the product of dims.
func NewTensor[T Element](name string, dims []int64, data []T) *onnxpb.TensorProto {
	checkLen(name, dims, len(data))
	dt := DTypeOf[T]()
	raw := make([]byte, len(data)*dt.Size())
	switch v := any(data).(type) {
	case []float32:
		for i, x := range v {
			binary.LittleEndian.PutUint32(raw[4*i:], math.Float32bits(x))
		}
	case []float64:
		for i, x := range v {
			binary.LittleEndian.PutUint64(raw[8*i:], math.Float64bits(x))
		}
	case []int8:
		for i, x := range v {
			raw[i] = byte(x)
		}
	case []int16:
		for i, x := range v {
			binary.LittleEndian.PutUint16(raw[2*i:], uint16(x))
		}
	case []int32:
		for i, x := range v {
			binary.LittleEndian.PutUint32(raw[4*i:], uint32(x))
		}
	case []int64:
		for i, x := range v {
			binary.LittleEndian.PutUint64(raw[8*i:], uint64(x))
		}
	case []uint8:
		copy(raw, v)
	case []uint16:
		for i, x := range v {
			binary.LittleEndian.PutUint16(raw[2*i:], x)
		}
	case []uint32:
		for i, x := range v {
			binary.LittleEndian.PutUint32(raw[4*i:], x)
		}
	case []uint64:
		for i, x := range v {
			binary.LittleEndian.PutUint64(raw[8*i:], x)
		}
	case []bool:
		for i, x := range v {
			if x {
				raw[i] = 1
			}
		}
	}
	return rawTensor(name, dt, dims, raw)
}

// NewFloat16Tensor returns a FLOAT16 tensor holding data rounded to half
// precision (Float32ToFloat16). It panics if len(data) is not the product
// of dims.
func NewFloat16Tensor(name string, dims []int64, data []float32) *onnxpb.TensorProto {
	return halfTensor(name, Float16, dims, data, Float32ToFloat16)
}

// NewBFloat16Tensor returns a BFLOAT16 tensor holding data rounded to
// bfloat16 (Float32ToBFloat16). It panics if len(data) is not the product
// of dims.
func NewBFloat16Tensor(name string, dims []int64, data []float32) *onnxpb.TensorProto {
	return halfTensor(name, BFloat16, dims, data, Float32ToBFloat16)
}

func halfTensor(name string, dt DType, dims []int64, data []float32, conv func(float32) uint16) *onnxpb.TensorProto {
	checkLen(name, dims, len(data))
	raw := make([]byte, 2*len(data))
	for i, x := range data {
		binary.LittleEndian.PutUint16(raw[2*i:], conv(x))
	}
	return rawTensor(name, dt, dims, raw)
}

func checkLen(name string, dims []int64, n int) {
	if want := NumElements(dims); want != int64(n) {
		panic(fmt.Sprintf("onnx: tensor %q: dims %v need %d elements, got %d", name, dims, want, n))
	}
}

func rawTensor(name string, dt DType, dims []int64, raw []byte) *onnxpb.TensorProto {
	t := &onnxpb.TensorProto{
		Dims:     append([]int64{}, dims...),
		DataType: ptr(int32(dt)),
		RawData:  raw,
	}
	if name != "" {
		t.Name = ptr(name)
	}
	return t
}

func ptr[T any](v T) *T { return &v }

// TensorDType returns the element type of t.
func TensorDType(t *onnxpb.TensorProto) DType { return DType(t.GetDataType()) }

// IsExternal reports whether t's data lives in an external file
// (data_location=EXTERNAL). Tensors of a Model from Load never are.
func IsExternal(t *onnxpb.TensorProto) bool {
	return t.GetDataLocation() == onnxpb.TensorProto_EXTERNAL
}

// tensorRaw returns t's little-endian bytes when it stores raw_data
// (ok=true), after checking their length against the dims; ok=false when
// the data sits in a typed field.
func tensorRaw(t *onnxpb.TensorProto) (raw []byte, n int64, ok bool, err error) {
	if IsExternal(t) {
		return nil, 0, false, fmt.Errorf("onnx: tensor %q: data is in external file %q; load the model with Load", t.GetName(), externalKey(t, "location"))
	}
	n = NumElements(t.GetDims())
	if n < 0 {
		return nil, 0, false, fmt.Errorf("onnx: tensor %q: bad dims %v", t.GetName(), t.GetDims())
	}
	if t.RawData == nil {
		// Check the typed field before callers allocate n elements.
		got, field := typedCount(t)
		if field == "" {
			if n == 0 {
				return nil, 0, false, nil
			}
			return nil, 0, false, fmt.Errorf("onnx: tensor %q: %s%v has no raw_data", t.GetName(), TensorDType(t), t.GetDims())
		}
		if err := typedLen(t, got, n, field); err != nil {
			return nil, 0, false, err
		}
		return nil, n, false, nil
	}
	want, err := tensorRawSize(t, n)
	if err != nil {
		return nil, 0, false, fmt.Errorf("onnx: tensor %q: %w", t.GetName(), err)
	}
	if want >= 0 && int64(len(t.RawData)) != want {
		return nil, 0, false, fmt.Errorf("onnx: tensor %q: %s%v needs %d bytes of raw_data, has %d", t.GetName(), TensorDType(t), t.GetDims(), want, len(t.RawData))
	}
	return t.RawData, n, true, nil
}

// typedCount returns how many values t holds in the typed field its
// element type uses, and the field's name ("" for types without one).
func typedCount(t *onnxpb.TensorProto) (int, string) {
	switch TensorDType(t) {
	case Float32:
		return len(t.FloatData), "float_data"
	case Float64:
		return len(t.DoubleData), "double_data"
	case Int64:
		return len(t.Int64Data), "int64_data"
	case Uint32, Uint64:
		return len(t.Uint64Data), "uint64_data"
	case Int32, Int16, Int8, Uint16, Uint8, Bool, Float16, BFloat16:
		return len(t.Int32Data), "int32_data"
	case String:
		return len(t.StringData), "string_data"
	}
	return 0, ""
}

func typedLen(t *onnxpb.TensorProto, got int, n int64, field string) error {
	if int64(got) != n {
		return fmt.Errorf("onnx: tensor %q: %s%v needs %d values in %s, has %d", t.GetName(), TensorDType(t), t.GetDims(), n, field, got)
	}
	return nil
}

func unsupported(t *onnxpb.TensorProto, want string) error {
	return fmt.Errorf("onnx: tensor %q: cannot read %s data as %s", t.GetName(), TensorDType(t), want)
}

// Float32s returns t's elements as float32. It reads float32, float16 and
// bfloat16 exactly and float64 rounded to nearest.
func Float32s(t *onnxpb.TensorProto) ([]float32, error) {
	switch TensorDType(t) {
	case Float32, Float16, BFloat16, Float64:
	default:
		return nil, unsupported(t, "float32")
	}
	raw, n, isRaw, err := tensorRaw(t)
	if err != nil {
		return nil, err
	}
	out := make([]float32, n)
	switch dt := TensorDType(t); dt {
	case Float32:
		if isRaw {
			for i := range out {
				out[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
			}
			return out, nil
		}
		if err := typedLen(t, len(t.FloatData), n, "float_data"); err != nil {
			return nil, err
		}
		copy(out, t.FloatData)
		return out, nil
	case Float16, BFloat16:
		conv := Float16ToFloat32
		if dt == BFloat16 {
			conv = BFloat16ToFloat32
		}
		if isRaw {
			for i := range out {
				out[i] = conv(binary.LittleEndian.Uint16(raw[2*i:]))
			}
			return out, nil
		}
		if err := typedLen(t, len(t.Int32Data), n, "int32_data"); err != nil {
			return nil, err
		}
		for i, v := range t.Int32Data {
			out[i] = conv(uint16(v))
		}
		return out, nil
	case Float64:
		f, err := Float64s(t)
		if err != nil {
			return nil, err
		}
		for i, v := range f {
			out[i] = float32(v)
		}
		return out, nil
	}
	return nil, unsupported(t, "float32")
}

// Float64s returns t's elements as float64. It reads float64, float32,
// float16 and bfloat16, all exactly.
func Float64s(t *onnxpb.TensorProto) ([]float64, error) {
	if dt := TensorDType(t); dt != Float64 {
		if dt != Float32 && dt != Float16 && dt != BFloat16 {
			return nil, unsupported(t, "float64")
		}
		f, err := Float32s(t)
		if err != nil {
			return nil, err
		}
		out := make([]float64, len(f))
		for i, v := range f {
			out[i] = float64(v)
		}
		return out, nil
	}
	raw, n, isRaw, err := tensorRaw(t)
	if err != nil {
		return nil, err
	}
	if !isRaw {
		if err := typedLen(t, len(t.DoubleData), n, "double_data"); err != nil {
			return nil, err
		}
		return append([]float64{}, t.DoubleData...), nil
	}
	out := make([]float64, n)
	for i := range out {
		out[i] = math.Float64frombits(binary.LittleEndian.Uint64(raw[8*i:]))
	}
	return out, nil
}

// RawBytes returns t's data as little-endian raw_data bytes, encoding the
// typed fields (float_data, int32_data, ...) when t has no raw_data. The
// result aliases t.RawData when present. String tensors and external data
// are an error.
func RawBytes(t *onnxpb.TensorProto) ([]byte, error) {
	raw, n, isRaw, err := tensorRaw(t)
	if err != nil {
		return nil, err
	}
	if isRaw {
		return raw, nil
	}
	dt := TensorDType(t)
	size := rawSize(dt, n)
	if size < 0 {
		return nil, fmt.Errorf("onnx: tensor %q: %s data has no raw encoding", t.GetName(), dt)
	}
	out := make([]byte, size)
	switch dt {
	case Float32:
		if err := typedLen(t, len(t.FloatData), n, "float_data"); err != nil {
			return nil, err
		}
		for i, v := range t.FloatData {
			binary.LittleEndian.PutUint32(out[4*i:], math.Float32bits(v))
		}
	case Float64:
		if err := typedLen(t, len(t.DoubleData), n, "double_data"); err != nil {
			return nil, err
		}
		for i, v := range t.DoubleData {
			binary.LittleEndian.PutUint64(out[8*i:], math.Float64bits(v))
		}
	case Int64:
		if err := typedLen(t, len(t.Int64Data), n, "int64_data"); err != nil {
			return nil, err
		}
		for i, v := range t.Int64Data {
			binary.LittleEndian.PutUint64(out[8*i:], uint64(v))
		}
	case Uint32, Uint64:
		if err := typedLen(t, len(t.Uint64Data), n, "uint64_data"); err != nil {
			return nil, err
		}
		for i, v := range t.Uint64Data {
			if dt == Uint32 {
				binary.LittleEndian.PutUint32(out[4*i:], uint32(v))
			} else {
				binary.LittleEndian.PutUint64(out[8*i:], v)
			}
		}
	case Int32, Int16, Uint16, Float16, BFloat16, Int8, Uint8, Bool:
		if err := typedLen(t, len(t.Int32Data), n, "int32_data"); err != nil {
			return nil, err
		}
		for i, v := range t.Int32Data {
			switch dt.Size() {
			case 4:
				binary.LittleEndian.PutUint32(out[4*i:], uint32(v))
			case 2:
				binary.LittleEndian.PutUint16(out[2*i:], uint16(v))
			case 1:
				out[i] = byte(v)
			}
		}
	default:
		return nil, fmt.Errorf("onnx: tensor %q: cannot encode %s typed data as raw bytes", t.GetName(), dt)
	}
	return out, nil
}
