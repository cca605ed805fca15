package onnx

import (
	"bufio"
	"bytes"
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

// LoadGraph reads the ONNX model file at path like Load, but leaves tensor
// data in files: external data where it is, and inline raw_data of
// initializers of 64 KiB or more where it lies in the model file (read
// through a reference into the file itself). References are checked
// (location inside the model's directory, the file present, offset and
// length within it) and data is read on demand with ReadFloat32s,
// Float32At, WriteData and InlineAll. A multi-gigabyte export then costs
// only its graph in memory. An empty file, a directory or one that is
// not a ModelProto is an error saying so.
func LoadGraph(path string) (*Model, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("onnx: load %q: %w", path, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("onnx: load %q: %w", path, err)
	}
	if st.IsDir() {
		return nil, fmt.Errorf("onnx: load %q: is a directory: want an ONNX model file", path)
	}
	if st.Size() == 0 {
		return nil, fmt.Errorf("onnx: load %q: the file is empty (0 bytes), not an ONNX model", path)
	}
	data, lazy, err := scanModel(f, st.Size(), path)
	if err != nil {
		return nil, fmt.Errorf("onnx: load %q: not a valid ONNX model (truncated or corrupt protobuf, %d bytes): %w", path, st.Size(), err)
	}
	mp, err := decode(data, path)
	if err != nil {
		return nil, err
	}
	m := &Model{Proto: mp, dir: filepath.Dir(path), path: path, inFile: map[*onnxpb.TensorProto]bool{}}
	for _, t := range mp.GetGraph().GetInitializer() {
		if lazy[t.GetName()] {
			m.inFile[t] = true
		}
	}
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

// StoredInline reports whether t, a tensor of m, is inline in the model
// file though LoadGraph left its data there (it then looks external,
// referring to the model file itself).
func (m *Model) StoredInline(t *onnxpb.TensorProto) bool { return m.inFile[t] }

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
	want, err := tensorRawSize(t, n)
	if err != nil {
		return "", 0, 0, fail("%w", err)
	}
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

// CheckData checks that t, a tensor of m, holds the data its type and
// dims call for (inline, or a valid reference into a file), without
// reading or allocating it, so that a caller can refuse a tensor whose
// dims overstate its data before it sizes buffers by them.
func (m *Model) CheckData(t *onnxpb.TensorProto) error {
	if IsExternal(t) {
		_, _, _, err := m.externalRange(t)
		return err
	}
	_, _, _, err := tensorRaw(t)
	return err
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

// ReadFloat32sAt reads elements start .. start+len(dst) (row-major) of t,
// a float32 tensor of m, into dst, reading only those bytes when the data
// is in a file.
func (m *Model) ReadFloat32sAt(t *onnxpb.TensorProto, start int64, dst []float32) error {
	if TensorDType(t) != Float32 {
		return unsupported(t, "float32")
	}
	if n := NumElements(t.GetDims()); start < 0 || start+int64(len(dst)) > n {
		return fmt.Errorf("onnx: tensor %q: elements %d..%d of %d", t.GetName(), start, start+int64(len(dst)), n)
	}
	if !IsExternal(t) {
		v, err := Float32s(t)
		if err != nil {
			return err
		}
		copy(dst, v[start:])
		return nil
	}
	path, offset, _, err := m.externalRange(t)
	if err != nil {
		return err
	}
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("onnx: tensor %q: %w", t.GetName(), err)
	}
	defer f.Close()
	buf := make([]byte, 4*len(dst))
	if _, err := f.ReadAt(buf, offset+4*start); err != nil && len(buf) > 0 {
		return fmt.Errorf("onnx: tensor %q: read %q: %w", t.GetName(), path, err)
	}
	for i := range dst {
		dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(buf[4*i:]))
	}
	return nil
}

// OpenData returns a reader of t's little-endian data bytes, a tensor of
// m (from memory, or from its file without loading it), and a function
// that closes it.
func (m *Model) OpenData(t *onnxpb.TensorProto) (*io.SectionReader, func() error, error) {
	if !IsExternal(t) {
		raw, err := RawBytes(t)
		if err != nil {
			return nil, nil, err
		}
		return io.NewSectionReader(bytes.NewReader(raw), 0, int64(len(raw))), func() error { return nil }, nil
	}
	path, offset, length, err := m.externalRange(t)
	if err != nil {
		return nil, nil, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("onnx: tensor %q: %w", t.GetName(), err)
	}
	return io.NewSectionReader(f, offset, length), f.Close, nil
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

// InlineAll reads the data of every tensor of m that lives in a file
// (initializers, node attributes, nested graphs) into memory, except the
// initializers keep names, so that m no longer refers to its files but
// for those.
func (m *Model) InlineAll(keep func(name string) bool) error {
	inits := map[*onnxpb.TensorProto]bool{}
	for _, t := range m.Graph().GetInitializer() {
		inits[t] = true
	}
	var err error
	walkModelTensors(m.Proto, func(t *onnxpb.TensorProto) bool {
		if IsExternal(t) && !(inits[t] && keep(t.GetName())) {
			err = m.readExternal(t)
		}
		return err == nil
	})
	return err
}

// graphField is ModelProto's graph (onnx.proto3).
const graphField protowire.Number = 7

// Probe checks cheaply that path looks like an ONNX model, reading only
// the framing of its top-level fields (a multi-gigabyte inline export is
// not loaded): not empty, every top-level field well framed and fitting
// the file, and a length-delimited graph among them. Fields ModelProto
// does not have (yet), or of another wire type than its own, are
// skipped, as the decoder skips them: a later ONNX may add fields. It
// names the file and the problem (a directory's too).
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
	if st.IsDir() {
		// Read as its size in bytes, it had an "unreadable field tag".
		return fmt.Errorf("onnx: %s: is a directory: want an ONNX model file", path)
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
		if num < protowire.MinValidNumber || num > protowire.MaxValidNumber {
			return bad(fmt.Sprintf("field number %d", num))
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
		// A graph field of another wire type is an unknown field to the
		// decoder, as to protobuf.
		graph = graph || num == graphField && typ == protowire.BytesType
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
