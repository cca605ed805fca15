package onnx

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"unsafe"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/spiral-rl/spiral/model/onnx/onnxpb"
)

// LoadGraph reads the ONNX model file at path like Load, but leaves tensors
// stored as external data where they are: their references are checked
// (location inside the model's directory, the file present, offset and
// length within it) and their data is read on demand with ReadFloat32s and
// Float32At. A multi-gigabyte export then costs only its graph in memory.
// An empty file or one that is not a ModelProto is an error saying so.
func LoadGraph(path string) (*Model, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("onnx: load %q: %w", path, err)
	}
	if len(data) == 0 {
		return nil, fmt.Errorf("onnx: load %q: the file is empty (0 bytes), not an ONNX model", path)
	}
	mp, err := decode(data, path)
	if err != nil {
		return nil, err
	}
	m := &Model{Proto: mp, dir: filepath.Dir(path), path: path}
	var refErr error
	walkModelTensors(mp, func(t *onnxpb.TensorProto) bool {
		if IsExternal(t) {
			_, _, _, refErr = m.externalRange(t)
		}
		return refErr == nil
	})
	if refErr != nil {
		return nil, refErr
	}
	return m, nil
}

// externalRange resolves t's external data: the file, offset and length.
func (m *Model) externalRange(t *onnxpb.TensorProto) (path string, offset, length int64, err error) {
	fail := func(format string, args ...any) error {
		return fmt.Errorf("onnx: load %q: tensor %q: "+format, append([]any{m.path, t.GetName()}, args...)...)
	}
	loc := externalKey(t, "location")
	if loc == "" {
		return "", 0, 0, fail("external data has no location")
	}
	if !filepath.IsLocal(filepath.FromSlash(loc)) {
		return "", 0, 0, fail("external data location %q is outside the model's directory", loc)
	}
	path = filepath.Join(m.dir, filepath.FromSlash(loc))
	st, err := os.Stat(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", 0, 0, fail("missing external data file %q: %w", path, err)
		}
		return "", 0, 0, fail("external data file %q: %w", path, err)
	}
	if offset, err = parseExtInt(t, "offset"); err != nil {
		return "", 0, 0, fail("external data file %q: %w", path, err)
	}
	n := NumElements(t.GetDims())
	if n < 0 {
		return "", 0, 0, fail("bad dims %v", t.GetDims())
	}
	want := rawSize(TensorDType(t), n)
	if want < 0 {
		return "", 0, 0, fail("%s data cannot be stored externally", TensorDType(t))
	}
	length = want
	if externalKey(t, "length") != "" {
		if length, err = parseExtInt(t, "length"); err != nil {
			return "", 0, 0, fail("external data file %q: %w", path, err)
		}
		if length != want {
			return "", 0, 0, fail("external data file %q: length %d does not match %s%v (%d bytes)", path, length, TensorDType(t), t.GetDims(), want)
		}
	}
	if offset > st.Size() || length > st.Size()-offset {
		return "", 0, 0, fail("external data file %q: offset %d + length %d is past its end (%d bytes)", path, offset, length, st.Size())
	}
	return path, offset, length, nil
}

// ReadFloat32s reads the data of t, a float tensor of m (inline or
// external), into dst, which must hold exactly its element count.
// float32 external data is read from the file straight into dst; other
// float types are converted (float64 rounded to nearest).
func (m *Model) ReadFloat32s(t *onnxpb.TensorProto, dst []float32) error {
	n := NumElements(t.GetDims())
	if n < 0 || int64(len(dst)) != n {
		return fmt.Errorf("onnx: tensor %q: %v holds %d values, destination %d", t.GetName(), t.GetDims(), n, len(dst))
	}
	if !IsExternal(t) {
		v, err := Float32s(t)
		if err != nil {
			return err
		}
		copy(dst, v)
		return nil
	}
	path, offset, length, err := m.externalRange(t)
	if err != nil {
		return err
	}
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("onnx: tensor %q: %w", t.GetName(), err)
	}
	defer f.Close()
	if TensorDType(t) == Float32 && nativeLittleEndian() {
		buf := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(dst))), 4*len(dst))
		if _, err := f.ReadAt(buf, offset); err != nil && len(buf) > 0 {
			return fmt.Errorf("onnx: tensor %q: read %q at offset %d: %w", t.GetName(), path, offset, err)
		}
		return nil
	}
	raw := make([]byte, length)
	if _, err := f.ReadAt(raw, offset); err != nil && length > 0 {
		return fmt.Errorf("onnx: tensor %q: read %q at offset %d: %w", t.GetName(), path, offset, err)
	}
	inline := &onnxpb.TensorProto{Name: t.Name, Dims: t.Dims, DataType: t.DataType, RawData: raw}
	v, err := Float32s(inline)
	if err != nil {
		return err
	}
	copy(dst, v)
	return nil
}

// Float32At returns element i (row-major) of t, a float32 tensor of m,
// reading only its four bytes when the data is external.
func (m *Model) Float32At(t *onnxpb.TensorProto, i int64) (float32, error) {
	if TensorDType(t) != Float32 {
		return 0, unsupported(t, "float32")
	}
	if n := NumElements(t.GetDims()); i < 0 || i >= n {
		return 0, fmt.Errorf("onnx: tensor %q: element %d of %d", t.GetName(), i, n)
	}
	if !IsExternal(t) {
		if t.RawData != nil {
			raw, _, _, err := tensorRaw(t)
			if err != nil {
				return 0, err
			}
			return math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:])), nil
		}
		if int64(len(t.FloatData)) <= i {
			return 0, fmt.Errorf("onnx: tensor %q: float_data has %d values", t.GetName(), len(t.FloatData))
		}
		return t.FloatData[i], nil
	}
	path, offset, _, err := m.externalRange(t)
	if err != nil {
		return 0, err
	}
	f, err := os.Open(path)
	if err != nil {
		return 0, fmt.Errorf("onnx: tensor %q: %w", t.GetName(), err)
	}
	defer f.Close()
	var b [4]byte
	if _, err := f.ReadAt(b[:], offset+4*i); err != nil {
		return 0, fmt.Errorf("onnx: tensor %q: read %q: %w", t.GetName(), path, err)
	}
	return math.Float32frombits(binary.LittleEndian.Uint32(b[:])), nil
}

// nativeLittleEndian reports whether this machine stores float32 in the
// byte order of ONNX raw data (little-endian: amd64, arm64).
func nativeLittleEndian() bool {
	x := uint16(1)
	return *(*byte)(unsafe.Pointer(&x)) == 1
}

// WriteData writes the little-endian bytes of t, a tensor of m, to w:
// copied from its external data file in bounded chunks, or its inline
// data.
func (m *Model) WriteData(t *onnxpb.TensorProto, w io.Writer) error {
	if !IsExternal(t) {
		raw, err := RawBytes(t)
		if err != nil {
			return err
		}
		_, err = w.Write(raw)
		return err
	}
	path, offset, length, err := m.externalRange(t)
	if err != nil {
		return err
	}
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("onnx: tensor %q: %w", t.GetName(), err)
	}
	defer f.Close()
	if _, err := io.Copy(w, io.NewSectionReader(f, offset, length)); err != nil {
		return fmt.Errorf("onnx: tensor %q: copy from %q: %w", t.GetName(), path, err)
	}
	return nil
}

// Inline reads t's external data into raw_data (a tensor of m), so that t
// no longer refers to m's files.
func (m *Model) Inline(t *onnxpb.TensorProto) error {
	if !IsExternal(t) {
		return nil
	}
	return m.readExternal(t)
}

// modelFields are the field numbers of ModelProto (onnx.proto3).
var modelFields = map[protowire.Number]bool{1: true, 2: true, 3: true, 4: true, 5: true, 6: true, 7: true, 8: true, 14: true, 20: true, 25: true, 26: true}

// Probe checks cheaply that path looks like an ONNX model, reading only
// the framing of its top-level fields (a multi-gigabyte inline export is
// not loaded): not empty, every top-level field a ModelProto field whose
// length fits the file, and a graph among them. It names the file and
// the problem.
func Probe(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("onnx: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("onnx: %w", err)
	}
	if st.Size() == 0 {
		return fmt.Errorf("onnx: %s: the file is empty (0 bytes), not an ONNX model", path)
	}
	return probe(bufio.NewReader(f), st.Size(), path)
}

// probe is Probe on the size bytes of r, named path in errors.
func probe(r *bufio.Reader, size int64, path string) error {
	bad := func(why string) error {
		return fmt.Errorf("onnx: %s: not a valid ONNX model (%s; truncated or corrupt protobuf, %d bytes)", path, why, size)
	}
	var pos int64
	graph := false
	for pos < size {
		tag, n, err := readUvarint(r)
		if err != nil {
			return bad("unreadable field tag")
		}
		pos += int64(n)
		num, typ := protowire.DecodeTag(tag)
		if !modelFields[num] {
			return bad(fmt.Sprintf("field %d is not a ModelProto field", num))
		}
		var skip int64
		switch typ {
		case protowire.VarintType:
			_, n, err := readUvarint(r)
			if err != nil {
				return bad("unreadable varint")
			}
			pos += int64(n)
		case protowire.BytesType:
			l, n, err := readUvarint(r)
			if err != nil {
				return bad("unreadable length")
			}
			pos += int64(n)
			skip = int64(l)
		case protowire.Fixed32Type:
			skip = 4
		case protowire.Fixed64Type:
			skip = 8
		default:
			return bad(fmt.Sprintf("wire type %d", typ))
		}
		if skip < 0 || skip > size-pos {
			return bad(fmt.Sprintf("field %d runs past the end of the file", num))
		}
		if _, err := r.Discard(int(skip)); err != nil {
			return bad(err.Error())
		}
		pos += skip
		graph = graph || num == 7
	}
	if !graph {
		return fmt.Errorf("onnx: %s: not an ONNX model: no graph", path)
	}
	return nil
}

// readUvarint reads a protobuf varint and reports how many bytes it took.
func readUvarint(r *bufio.Reader) (uint64, int, error) {
	var x uint64
	for i := 0; i < binary.MaxVarintLen64; i++ {
		b, err := r.ReadByte()
		if err != nil {
			return 0, i, err
		}
		x |= uint64(b&0x7f) << (7 * i)
		if b < 0x80 {
			return x, i + 1, nil
		}
	}
	return 0, binary.MaxVarintLen64, errors.New("varint too long")
}
