package onnx

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/spiral-rl/spiral/model/onnx/onnxpb"
)

func TestTensorRoundTrip(t *testing.T) {
	f32 := []float32{1, -2.5, float32(math.Inf(1)), 3e-40}
	if got, err := Float32s(NewTensor("a", []int64{2, 2}, f32)); err != nil || !slices.Equal(got, f32) {
		t.Errorf("float32: got %v, %v; want %v", got, err, f32)
	}
	f64 := []float64{1, -2.5, 1e300}
	if got, err := Float64s(NewTensor("b", []int64{3}, f64)); err != nil || !slices.Equal(got, f64) {
		t.Errorf("float64: got %v, %v; want %v", got, err, f64)
	}
	i64 := []int64{math.MinInt64, -1, 0, math.MaxInt64}
	if got, err := int64s(NewTensor("c", []int64{4}, i64)); err != nil || !slices.Equal(got, i64) {
		t.Errorf("int64: got %v, %v; want %v", got, err, i64)
	}
	i32 := []int32{math.MinInt32, -1, 7, math.MaxInt32}
	if got, err := int32s(NewTensor("d", []int64{4}, i32)); err != nil || !slices.Equal(got, i32) {
		t.Errorf("int32: got %v, %v; want %v", got, err, i32)
	}
	if got, err := int64s(NewTensor("e", []int64{3}, []bool{true, false, true})); err != nil || !slices.Equal(got, []int64{1, 0, 1}) {
		t.Errorf("bool: got %v, %v", got, err)
	}
	if got, err := int64s(NewTensor("s", nil, []int8{-3})); err != nil || !slices.Equal(got, []int64{-3}) {
		t.Errorf("scalar int8: got %v, %v", got, err)
	}
	halves := []float32{1, -2, 0.5, 65504}
	if got, err := Float32s(NewFloat16Tensor("h", []int64{4}, halves)); err != nil || !slices.Equal(got, halves) {
		t.Errorf("float16: got %v, %v; want %v", got, err, halves)
	}
	bf := []float64{1, -2, 0.5}
	if got, err := Float64s(NewBFloat16Tensor("bf", []int64{3}, []float32{1, -2, 0.5})); err != nil || !slices.Equal(got, bf) {
		t.Errorf("bfloat16: got %v, %v; want %v", got, err, bf)
	}
}

func TestNewTensorPanicsOnLengthMismatch(t *testing.T) {
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(string), `"w"`) {
			t.Errorf("recover() = %v, want a panic naming the tensor", r)
		}
	}()
	NewTensor("w", []int64{2, 3}, []float32{1, 2})
}

func TestTypedFields(t *testing.T) {
	tests := []struct {
		name string
		t    *onnxpb.TensorProto
		f32  []float32
		i64  []int64
	}{
		{"float_data", &onnxpb.TensorProto{Dims: []int64{2}, DataType: ptr(int32(Float32)), FloatData: []float32{1.5, -3}}, []float32{1.5, -3}, nil},
		{"double_data", &onnxpb.TensorProto{Dims: []int64{2}, DataType: ptr(int32(Float64)), DoubleData: []float64{0.25, 8}}, []float32{0.25, 8}, nil},
		{"float16 in int32_data", &onnxpb.TensorProto{Dims: []int64{2}, DataType: ptr(int32(Float16)), Int32Data: []int32{0x3c00, 0xc000}}, []float32{1, -2}, nil},
		{"bfloat16 in int32_data", &onnxpb.TensorProto{Dims: []int64{1}, DataType: ptr(int32(BFloat16)), Int32Data: []int32{0x3f80}}, []float32{1}, nil},
		{"int64_data", &onnxpb.TensorProto{Dims: []int64{2}, DataType: ptr(int32(Int64)), Int64Data: []int64{-9, 9}}, nil, []int64{-9, 9}},
		{"uint8 in int32_data", &onnxpb.TensorProto{Dims: []int64{2}, DataType: ptr(int32(Uint8)), Int32Data: []int32{255, 1}}, nil, []int64{255, 1}},
		{"uint64_data", &onnxpb.TensorProto{Dims: []int64{1}, DataType: ptr(int32(Uint64)), Uint64Data: []uint64{42}}, nil, []int64{42}},
	}
	for _, tc := range tests {
		if tc.f32 != nil {
			got, err := Float32s(tc.t)
			if err != nil || !slices.Equal(got, tc.f32) {
				t.Errorf("%s: Float32s = %v, %v; want %v", tc.name, got, err, tc.f32)
			}
		}
		if tc.i64 != nil {
			got, err := int64s(tc.t)
			if err != nil || !slices.Equal(got, tc.i64) {
				t.Errorf("%s: Int64s = %v, %v; want %v", tc.name, got, err, tc.i64)
			}
		}
		// RawBytes encodes the typed field; reading the raw form agrees.
		raw, err := RawBytes(tc.t)
		if err != nil {
			t.Errorf("%s: RawBytes: %v", tc.name, err)
			continue
		}
		rt := &onnxpb.TensorProto{Dims: tc.t.Dims, DataType: tc.t.DataType, RawData: raw}
		if tc.f32 != nil {
			if got, err := Float32s(rt); err != nil || !slices.Equal(got, tc.f32) {
				t.Errorf("%s: raw form Float32s = %v, %v; want %v", tc.name, got, err, tc.f32)
			}
		} else if got, err := int64s(rt); err != nil || !slices.Equal(got, tc.i64) {
			t.Errorf("%s: raw form Int64s = %v, %v; want %v", tc.name, got, err, tc.i64)
		}
	}
}

func TestTensorErrors(t *testing.T) {
	tests := []struct {
		name string
		read func() error
		want string
	}{
		{"raw too short", func() error {
			_, err := Float32s(&onnxpb.TensorProto{Name: ptr("w"), Dims: []int64{3}, DataType: ptr(int32(Float32)), RawData: make([]byte, 8)})
			return err
		}, `tensor "w": float32[3] needs 12 bytes of raw_data, has 8`},
		{"typed too short", func() error {
			_, err := int64s(&onnxpb.TensorProto{Name: ptr("i"), Dims: []int64{2}, DataType: ptr(int32(Int64)), Int64Data: []int64{1}})
			return err
		}, `needs 2 values in int64_data, has 1`},
		{"wrong kind", func() error {
			_, err := Float32s(NewTensor("ids", []int64{1}, []int64{1}))
			return err
		}, `tensor "ids": cannot read int64 data as float32`},
		{"int32 overflow", func() error {
			_, err := int32s(NewTensor("big", []int64{1}, []int64{1 << 40}))
			return err
		}, `overflows int32`},
		{"float as int32", func() error {
			_, err := int32s(NewTensor("f", []int64{1}, []float32{1}))
			return err
		}, `cannot read float32 data as int32`},
		{"external", func() error {
			_, err := Float32s(&onnxpb.TensorProto{Name: ptr("x"), Dims: []int64{1}, DataType: ptr(int32(Float32)),
				DataLocation: onnxpb.TensorProto_EXTERNAL.Enum(),
				ExternalData: []*onnxpb.StringStringEntryProto{{Key: ptr("location"), Value: ptr("w.bin")}}})
			return err
		}, `external file "w.bin"`},
	}
	for _, tc := range tests {
		err := tc.read()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want it to contain %q", tc.name, err, tc.want)
		}
	}
}

// The integer readers below decode tensors independently of the package's
// writers, to check NewTensor and RawBytes on integer data (production
// code reads only float tensors).

// Int64s returns t's elements as int64. It reads every integer type and
// bool (0 or 1); uint64 values over MaxInt64 are an error.
func int64s(t *onnxpb.TensorProto) ([]int64, error) { return readInt64sForTest(t, "int64") }

func readInt64sForTest(t *onnxpb.TensorProto, as string) ([]int64, error) {
	switch TensorDType(t) {
	case Int64, Uint64, Int32, Uint32, Int16, Uint16, Int8, Uint8, Bool:
	default:
		return nil, unsupported(t, as)
	}
	raw, n, isRaw, err := tensorRaw(t)
	if err != nil {
		return nil, err
	}
	out := make([]int64, n)
	dt := TensorDType(t)
	if isRaw {
		for i := range out {
			switch dt {
			case Int64:
				out[i] = int64(binary.LittleEndian.Uint64(raw[8*i:]))
			case Uint64:
				u := binary.LittleEndian.Uint64(raw[8*i:])
				if u > math.MaxInt64 {
					return nil, fmt.Errorf("onnx: tensor %q: uint64 value %d overflows int64", t.GetName(), u)
				}
				out[i] = int64(u)
			case Int32:
				out[i] = int64(int32(binary.LittleEndian.Uint32(raw[4*i:])))
			case Uint32:
				out[i] = int64(binary.LittleEndian.Uint32(raw[4*i:]))
			case Int16:
				out[i] = int64(int16(binary.LittleEndian.Uint16(raw[2*i:])))
			case Uint16:
				out[i] = int64(binary.LittleEndian.Uint16(raw[2*i:]))
			case Int8:
				out[i] = int64(int8(raw[i]))
			case Uint8, Bool:
				out[i] = int64(raw[i])
			default:
				return nil, unsupported(t, as)
			}
		}
		return out, nil
	}
	switch dt {
	case Int64:
		if err := typedLen(t, len(t.Int64Data), n, "int64_data"); err != nil {
			return nil, err
		}
		copy(out, t.Int64Data)
	case Uint32, Uint64:
		if err := typedLen(t, len(t.Uint64Data), n, "uint64_data"); err != nil {
			return nil, err
		}
		for i, u := range t.Uint64Data {
			if u > math.MaxInt64 {
				return nil, fmt.Errorf("onnx: tensor %q: uint64 value %d overflows int64", t.GetName(), u)
			}
			out[i] = int64(u)
		}
	case Int32, Int16, Int8, Uint16, Uint8, Bool:
		if err := typedLen(t, len(t.Int32Data), n, "int32_data"); err != nil {
			return nil, err
		}
		for i, v := range t.Int32Data {
			if dt == Uint16 {
				v = int32(uint16(v))
			} else if dt == Uint8 || dt == Bool {
				v = int32(uint8(v))
			}
			out[i] = int64(v)
		}
	default:
		return nil, unsupported(t, as)
	}
	return out, nil
}

// Int32s returns t's elements as int32. It reads every integer type and
// bool; values outside the int32 range are an error.
func int32s(t *onnxpb.TensorProto) ([]int32, error) {
	v, err := readInt64sForTest(t, "int32")
	if err != nil {
		return nil, err
	}
	out := make([]int32, len(v))
	for i, x := range v {
		if x < math.MinInt32 || x > math.MaxInt32 {
			return nil, fmt.Errorf("onnx: tensor %q: value %d overflows int32", t.GetName(), x)
		}
		out[i] = int32(x)
	}
	return out, nil
}

// Dims whose element count fits int64 but whose byte count does not must
// not wrap around to a small size that a short raw_data or data file
// matches (the reader would then allocate the element count and panic).
func TestTensorByteSizeOverflow(t *testing.T) {
	huge := []int64{1<<62 + 1} // 4 bytes each wraps to 4 bytes
	tests := []struct {
		name string
		t    *onnxpb.TensorProto
	}{
		{"float32 raw_data", &onnxpb.TensorProto{Name: ptr("w"), Dims: huge, DataType: ptr(int32(Float32)), RawData: make([]byte, 4)}},
		{"float16 raw_data", &onnxpb.TensorProto{Name: ptr("w"), Dims: []int64{1<<63 - 1, 1}, DataType: ptr(int32(Float16)), RawData: make([]byte, 2)}},
		{"float64 raw_data", &onnxpb.TensorProto{Name: ptr("w"), Dims: []int64{1 << 61, 2}, DataType: ptr(int32(Float64)), RawData: []byte{}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			require.NotPanics(t, func() { _, err = Float32s(tc.t) })
			require.ErrorContains(t, err, `tensor "w"`)
			require.ErrorContains(t, err, "too large")
			require.NotPanics(t, func() { _, err = RawBytes(tc.t) })
			require.ErrorContains(t, err, "too large")
		})
	}
}
