package params

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// handFile builds a safetensors file from a literal header and data, the way
// the specification describes it, independently of the writer.
func handFile(header string, data []byte) []byte {
	var b bytes.Buffer
	var n [8]byte
	binary.LittleEndian.PutUint64(n[:], uint64(len(header)))
	b.Write(n[:])
	b.WriteString(header)
	b.Write(data)
	return b.Bytes()
}

func f32le(xs ...float32) []byte {
	out := make([]byte, 4*len(xs))
	for i, x := range xs {
		binary.LittleEndian.PutUint32(out[4*i:], math.Float32bits(x))
	}
	return out
}

func TestDecodeHandWritten(t *testing.T) {
	// Two tensors listed out of file order, metadata, trailing-space padding.
	hdr := `{"b":{"dtype":"I64","shape":[1],"data_offsets":[8,16]},"__metadata__":{"format":"pt"},"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}   `
	data := append(f32le(1.5, -2), 7, 0, 0, 0, 0, 0, 0, 0)
	f, err := Decode(handFile(hdr, data))
	require.NoError(t, err)
	require.Equal(t, map[string]string{"format": "pt"}, f.Metadata)
	require.Len(t, f.Tensors, 2)
	require.Equal(t, "a", f.Tensors[0].Name, "tensors are returned in file order")
	require.Equal(t, F32, f.Tensors[0].DType)
	require.Equal(t, f32le(1.5, -2), f.Tensors[0].Data)
	require.Equal(t, "b", f.Tensors[1].Name)
	require.Equal(t, int64(7), int64(binary.LittleEndian.Uint64(f.Tensors[1].Data)))
}

func TestDecodeRejects(t *testing.T) {
	ok := `{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}`
	cases := []struct {
		name string
		file []byte
		want string
	}{
		{"empty file", nil, "header length"},
		{"short length", []byte{1, 2, 3}, "header length"},
		{"header beyond file", handFile(ok, nil)[:20], "exceeds file size"},
		{"huge header size", append([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f}, '{', '}'), "exceeds limit"},
		{"not an object", handFile(`[1,2]`, nil), "not a JSON object"},
		{"bad json", handFile(`{"a":{"dtype":"F32",}`, nil), "header JSON"},
		{"trailing garbage", handFile(`{}{}`, nil), "trailing bytes"},
		{"duplicate", handFile(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`, make([]byte, 8)), "duplicate"},
		{"unknown dtype", handFile(`{"a":{"dtype":"F17","shape":[1],"data_offsets":[0,4]}}`, make([]byte, 4)), "unknown dtype"},
		{"missing field", handFile(`{"a":{"dtype":"F32","shape":[1]}}`, make([]byte, 4)), "required"},
		{"unknown field", handFile(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4],"x":1}}`, make([]byte, 4)), "unknown field"},
		{"shape vs bytes", handFile(`{"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}}`, make([]byte, 8)), "needs 12 bytes"},
		{"negative dim", handFile(`{"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}}`, make([]byte, 4)), "negative"},
		{"reversed offsets", handFile(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[4,0]}}`, make([]byte, 4)), "bad data_offsets"},
		{"hole", handFile(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`, make([]byte, 8)), "hole"},
		{"overlap", handFile(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`, make([]byte, 8)), "overlapping"},
		{"truncated data", handFile(ok, make([]byte, 7)), "truncated"},
		{"trailing data", handFile(ok, make([]byte, 9)), "trailing bytes"},
		{"metadata not strings", handFile(`{"__metadata__":{"a":1}}`, nil), "__metadata__"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Decode(tc.file)
			require.Error(t, err)
			require.Contains(t, err.Error(), tc.want)
			require.Contains(t, err.Error(), "params: safetensors:")
		})
	}
}

func TestEncodeDecodeRoundTrip(t *testing.T) {
	ts := []RawTensor{
		{Name: "w", DType: F32, Shape: []int64{2, 2}, Data: f32le(1, 2, 3, float32(math.NaN()))},
		{Name: "ids", DType: I64, Shape: []int64{1}, Data: []byte{1, 2, 3, 4, 5, 6, 7, 8}},
		{Name: "s", DType: BF16, Shape: []int64{}, Data: []byte{0x80, 0x3f}},
		{Name: "z", DType: F16, Shape: []int64{0}, Data: []byte{}},
	}
	var b bytes.Buffer
	require.NoError(t, Encode(&b, ts, map[string]string{"k": "v"}))
	hdrLen := binary.LittleEndian.Uint64(b.Bytes())
	require.Zero(t, (8+hdrLen)%8, "data section is 8-byte aligned")
	f, err := Decode(b.Bytes())
	require.NoError(t, err)
	require.Equal(t, map[string]string{"k": "v"}, f.Metadata)
	require.Len(t, f.Tensors, len(ts))
	byName := map[string]RawTensor{}
	for _, rt := range f.Tensors {
		byName[rt.Name] = rt
	}
	for _, want := range ts {
		got := byName[want.Name]
		require.Equal(t, want.DType, got.DType, want.Name)
		require.Equal(t, want.Shape, got.Shape, want.Name)
		require.Equal(t, want.Data, got.Data, want.Name)
	}
}

func TestStoreSafetensorsRoundTripBitExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	s := testStore(t, rng)
	s.Flat()[0] = float32(math.NaN())
	s.Flat()[1] = float32(math.Inf(-1))
	s.Flat()[2] = math.Float32frombits(1) // smallest subnormal
	var b bytes.Buffer
	require.NoError(t, s.WriteSafetensors(&b, map[string]string{"format": "pt"}, nil))

	// The generic decoder reads what the store wrote.
	f, err := Decode(b.Bytes())
	require.NoError(t, err)
	require.Len(t, f.Tensors, s.Len())

	dst := s.NewGrads()
	views := make([]*float32, 0)
	for i := range dst.Len() {
		if len(dst.At(i).Data) > 0 {
			views = append(views, &dst.At(i).Data[0])
		}
	}
	_, err = dst.ReadSafetensors(bytes.NewReader(b.Bytes()), int64(b.Len()), nil)
	require.NoError(t, err)
	for i := range s.Flat() {
		require.Equal(t, math.Float32bits(s.Flat()[i]), math.Float32bits(dst.Flat()[i]), "value %d", i)
	}
	j := 0
	for i := range dst.Len() {
		if len(dst.At(i).Data) > 0 {
			require.Same(t, views[j], &dst.At(i).Data[0], "loading must not reallocate Data")
			j++
		}
	}
}

func TestReadSafetensorsListsEveryMismatch(t *testing.T) {
	src, err := NewStore([]Spec{
		{"a", []int64{2, 3}},
		{"b", []int64{4}},
		{"extra", []int64{1}},
	})
	require.NoError(t, err)
	var b bytes.Buffer
	require.NoError(t, src.WriteSafetensors(&b, nil, nil))
	// Also one wrong dtype, written by the raw encoder.
	var b2 bytes.Buffer
	require.NoError(t, Encode(&b2, []RawTensor{{Name: "c", DType: F64, Shape: []int64{1}, Data: make([]byte, 8)}}, nil))

	dst, err := NewStore([]Spec{
		{"a", []int64{3, 2}},
		{"b", []int64{4}},
		{"missing", []int64{2}},
	})
	require.NoError(t, err)
	dst.Flat()[0] = 7
	_, err = dst.ReadSafetensors(bytes.NewReader(b.Bytes()), int64(b.Len()), nil)
	var me *MismatchError
	require.True(t, errors.As(err, &me), "got %v", err)
	require.ElementsMatch(t, []string{
		`tensor "a": shape [2 3], want [3 2]`,
		`unexpected tensor "extra" (F32 [1])`,
		`missing tensor "missing" (F32 [2])`,
	}, me.Problems)
	require.Equal(t, float32(7), dst.Flat()[0], "store untouched on mismatch")

	dst2, err := NewStore([]Spec{{"c", []int64{1}}})
	require.NoError(t, err)
	_, err = dst2.ReadSafetensors(bytes.NewReader(b2.Bytes()), int64(b2.Len()), nil)
	require.ErrorContains(t, err, `tensor "c": dtype F64, want F32`)
}

func TestReadSafetensorsRename(t *testing.T) {
	s := testStore(t, rand.New(rand.NewPCG(9, 9)))
	suffix := func(n string) string { return n + ".exp_avg" }
	var b bytes.Buffer
	require.NoError(t, s.WriteSafetensors(&b, nil, suffix))
	f, err := Decode(b.Bytes())
	require.NoError(t, err)
	require.Equal(t, "embed.weight.exp_avg", f.Tensors[0].Name)
	dst := s.NewGrads()
	_, err = dst.ReadSafetensors(bytes.NewReader(b.Bytes()), int64(b.Len()), nil)
	require.Error(t, err, "names without the rename do not match")
	_, err = dst.ReadSafetensors(bytes.NewReader(b.Bytes()), int64(b.Len()), suffix)
	require.NoError(t, err)
	require.Equal(t, s.Flat(), dst.Flat())
}

// FuzzDecode checks that Decode never panics, and that whatever it accepts
// survives an Encode/Decode round trip unchanged.
func FuzzDecode(f *testing.F) {
	seeds, _ := filepath.Glob(filepath.Join("testdata", "*.safetensors"))
	for _, p := range seeds {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add(handFile(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}`, f32le(1)))
	f.Fuzz(func(t *testing.T, b []byte) {
		file, err := Decode(b)
		if err != nil {
			return
		}
		var out bytes.Buffer
		if err := Encode(&out, file.Tensors, file.Metadata); err != nil {
			t.Fatalf("re-encode of an accepted file failed: %v", err)
		}
		again, err := Decode(out.Bytes())
		if err != nil {
			t.Fatalf("decode of re-encoded file failed: %v", err)
		}
		if len(again.Tensors) != len(file.Tensors) || len(again.Metadata) != len(file.Metadata) {
			t.Fatalf("round trip changed the file: %d/%d tensors", len(again.Tensors), len(file.Tensors))
		}
		for i := range file.Tensors {
			a, b := file.Tensors[i], again.Tensors[i]
			if a.Name != b.Name || a.DType != b.DType || !equalShape(a.Shape, b.Shape) || !bytes.Equal(a.Data, b.Data) {
				t.Fatalf("tensor %d changed: %q vs %q", i, a.Name, b.Name)
			}
		}
		for k, v := range file.Metadata {
			if again.Metadata[k] != v {
				t.Fatalf("metadata %q changed", k)
			}
		}
	})
}

func TestPartsShareOneFile(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	m, v := testStore(t, rng), testStore(t, rng)
	avg := func(n string) string { return n + ".exp_avg" }
	sq := func(n string) string { return n + ".exp_avg_sq" }
	var b bytes.Buffer
	require.NoError(t, WriteParts(&b, nil, Part{m, avg}, Part{v, sq}))
	h, err := ReadHeader(bytes.NewReader(b.Bytes()), int64(b.Len()))
	require.NoError(t, err)
	require.Len(t, h.Tensors, 2*m.Len())
	require.NotNil(t, h.Find("norm.weight.exp_avg_sq"))

	m2, v2 := m.NewGrads(), v.NewGrads()
	r := bytes.NewReader(b.Bytes())
	h, err = ReadHeader(r, int64(b.Len()))
	require.NoError(t, err)
	require.NoError(t, CheckParts(h, Part{m2, avg}, Part{v2, sq}))
	require.NoError(t, ReadParts(r, h, Part{m2, avg}, Part{v2, sq}))
	require.Equal(t, m.Flat(), m2.Flat())
	require.Equal(t, v.Flat(), v2.Flat())

	// Only one part given: every tensor of the other is "unexpected".
	var me *MismatchError
	require.True(t, errors.As(CheckParts(h, Part{m2, avg}), &me))
	require.Len(t, me.Problems, v.Len())
	// Same names for both parts collide at write time.
	require.ErrorContains(t, WriteParts(&bytes.Buffer{}, nil, Part{m, nil}, Part{v, nil}), "duplicate")
}

// TestWriteFuncMatchesStoreWriter: values handed out one tensor at a time,
// in the reused buffer or a slice of the caller's own, give the bytes the
// store writer gives; a fill of the wrong length or a failing one stops
// the write with the tensor named.
func TestWriteFuncMatchesStoreWriter(t *testing.T) {
	s := testStore(t, rand.New(rand.NewPCG(8, 9)))
	var want bytes.Buffer
	require.NoError(t, s.WriteSafetensors(&want, map[string]string{"format": "pt"}, nil))
	var got bytes.Buffer
	err := WriteFunc(&got, map[string]string{"format": "pt"}, s.Specs(), func(i int, buf []float32) ([]float32, error) {
		if i%2 == 0 {
			return s.At(i).Data, nil // a slice of its own
		}
		require.Len(t, buf, len(s.At(i).Data))
		copy(buf, s.At(i).Data)
		return buf, nil
	})
	require.NoError(t, err)
	require.Equal(t, want.Bytes(), got.Bytes())

	err = WriteFunc(&bytes.Buffer{}, nil, s.Specs(), func(i int, buf []float32) ([]float32, error) { return buf[:0], nil })
	require.ErrorContains(t, err, s.At(0).Name)
	boom := errors.New("boom")
	err = WriteFunc(&bytes.Buffer{}, nil, s.Specs(), func(int, []float32) ([]float32, error) { return nil, boom })
	require.ErrorIs(t, err, boom)
}

// TestWriteRefusesNamesJSONCannotHold: the header is JSON, whose strings
// are UTF-8; a name or metadata entry that is not valid UTF-8 would be
// written with U+FFFD in place of its bad bytes, a tensor of another name
// (and one two such names would share). The writers refuse it instead.
func TestWriteRefusesNamesJSONCannotHold(t *testing.T) {
	bad := "w\xff"
	for _, tc := range []struct {
		name  string
		write func() error
	}{
		{"store tensor name", func() error {
			s, err := NewStore([]Spec{{Name: bad, Shape: []int64{1}}})
			require.NoError(t, err)
			return s.WriteSafetensors(&bytes.Buffer{}, nil, nil)
		}},
		{"renamed", func() error {
			s, err := NewStore([]Spec{{Name: "w", Shape: []int64{1}}})
			require.NoError(t, err)
			return s.WriteSafetensors(&bytes.Buffer{}, nil, func(n string) string { return n + "\xff" })
		}},
		{"WriteFunc spec", func() error {
			return WriteFunc(&bytes.Buffer{}, nil, []Spec{{Name: bad, Shape: []int64{1}}}, func(_ int, buf []float32) ([]float32, error) { return buf, nil })
		}},
		{"raw tensor", func() error {
			return Encode(&bytes.Buffer{}, []RawTensor{{Name: bad, DType: U8, Shape: []int64{1}, Data: []byte{1}}}, nil)
		}},
		{"metadata key", func() error {
			return Encode(&bytes.Buffer{}, nil, map[string]string{bad: "v"})
		}},
		{"metadata value", func() error {
			return Encode(&bytes.Buffer{}, nil, map[string]string{"k": bad})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.write()
			require.ErrorContains(t, err, "not valid UTF-8")
			require.ErrorContains(t, err, `"w\xff"`)
		})
	}
}
