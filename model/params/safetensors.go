package params

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"unicode/utf8"
)

// DType is a safetensors element type, spelled as in the header ("F32").
type DType string

// The safetensors dtypes this reader knows, with their sizes in DTypeSize.
// A Store only holds F32; the others can be read as raw bytes.
const (
	Bool   DType = "BOOL"
	U8     DType = "U8"
	I8     DType = "I8"
	F8E5M2 DType = "F8_E5M2"
	F8E4M3 DType = "F8_E4M3"
	I16    DType = "I16"
	U16    DType = "U16"
	F16    DType = "F16"
	BF16   DType = "BF16"
	I32    DType = "I32"
	U32    DType = "U32"
	F32    DType = "F32"
	F64    DType = "F64"
	I64    DType = "I64"
	U64    DType = "U64"
	F8E8M0 DType = "F8_E8M0"
	C64    DType = "C64"
)

// DTypeSize returns the size in bytes of one element of d, or 0 when d is
// not a dtype this package knows (sub-byte types such as F4 included).
func DTypeSize(d DType) int {
	switch d {
	case Bool, U8, I8, F8E5M2, F8E4M3, F8E8M0:
		return 1
	case I16, U16, F16, BF16:
		return 2
	case I32, U32, F32:
		return 4
	case F64, I64, U64, C64:
		return 8
	}
	return 0
}

// MaxHeaderSize bounds the JSON header of a safetensors file, as the
// reference implementation does (100 MB); larger headers are rejected
// before any allocation.
const MaxHeaderSize = 100_000_000

// headerAlign is the alignment of the data section that the writer pads the
// header to (with spaces, which the format allows).
const headerAlign = 8

// TensorInfo describes one tensor of a safetensors file: its dtype, shape
// and [Begin, End) byte range relative to the start of the data section.
type TensorInfo struct {
	Name       string
	DType      DType
	Shape      []int64
	Begin, End int64
}

// Header is the parsed, validated header of a safetensors file. Tensors are
// sorted by Begin (file order). DataStart is the file offset of the data
// section (8 + header length); DataSize is its length.
type Header struct {
	Tensors   []TensorInfo
	Metadata  map[string]string
	DataStart int64
	DataSize  int64
}

// Find returns the tensor called name, or nil.
func (h *Header) Find(name string) *TensorInfo {
	for i := range h.Tensors {
		if h.Tensors[i].Name == name {
			return &h.Tensors[i]
		}
	}
	return nil
}

// ReadHeader reads and validates the header of a safetensors file of
// fileSize bytes from r, leaving r positioned at the start of the data
// section. It checks the header size against MaxHeaderSize and fileSize, the
// JSON, duplicate names, dtypes, shapes against byte lengths, and that the
// tensors tile [0, fileSize-DataStart) exactly.
func ReadHeader(r io.Reader, fileSize int64) (*Header, error) {
	var lenBuf [8]byte
	if _, err := io.ReadFull(r, lenBuf[:]); err != nil {
		return nil, fmt.Errorf("params: safetensors: read header length: %w", noEOF(err))
	}
	n := binary.LittleEndian.Uint64(lenBuf[:])
	if n > MaxHeaderSize {
		return nil, fmt.Errorf("params: safetensors: header length %d exceeds limit %d", n, MaxHeaderSize)
	}
	if fileSize >= 0 && int64(n) > fileSize-8 {
		return nil, fmt.Errorf("params: safetensors: header length %d exceeds file size %d (truncated?)", n, fileSize)
	}
	buf := make([]byte, n)
	if _, err := io.ReadFull(r, buf); err != nil {
		return nil, fmt.Errorf("params: safetensors: read header: %w", noEOF(err))
	}
	h, err := parseHeader(buf)
	if err != nil {
		return nil, err
	}
	h.DataStart = 8 + int64(n)
	if fileSize >= 0 {
		if got := fileSize - h.DataStart; got != h.DataSize {
			return nil, fmt.Errorf("params: safetensors: data section is %d bytes, header describes %d (truncated or trailing bytes)", got, h.DataSize)
		}
	}
	return h, nil
}

func noEOF(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

type rawInfo struct {
	DType       *string  `json:"dtype"`
	Shape       *[]int64 `json:"shape"`
	DataOffsets *[]int64 `json:"data_offsets"`
}

// parseHeader parses the JSON header and validates the tensor table; it
// sets DataSize but not DataStart.
func parseHeader(buf []byte) (*Header, error) {
	trimmed := bytes.TrimRight(buf, " ")
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return nil, errors.New("params: safetensors: header is not a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	dec.UseNumber()
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, fmt.Errorf("params: safetensors: header is not a JSON object: %v", err)
	}
	h := &Header{}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("params: safetensors: header JSON: %w", err)
		}
		name, ok := tok.(string)
		if !ok {
			return nil, fmt.Errorf("params: safetensors: header JSON: key %v is not a string", tok)
		}
		if seen[name] {
			return nil, fmt.Errorf("params: safetensors: duplicate entry %q", name)
		}
		seen[name] = true
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, fmt.Errorf("params: safetensors: header JSON at %q: %w", name, err)
		}
		if name == "__metadata__" {
			if err := json.Unmarshal(raw, &h.Metadata); err != nil {
				return nil, fmt.Errorf("params: safetensors: __metadata__ must map strings to strings: %w", err)
			}
			continue
		}
		ti, err := parseInfo(name, raw)
		if err != nil {
			return nil, err
		}
		h.Tensors = append(h.Tensors, ti)
	}
	if _, err := dec.Token(); err != nil {
		return nil, fmt.Errorf("params: safetensors: header JSON: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("params: safetensors: trailing bytes after header JSON")
	}
	slices.SortStableFunc(h.Tensors, func(a, b TensorInfo) int {
		if a.Begin != b.Begin {
			return cmpInt64(a.Begin, b.Begin)
		}
		return cmpInt64(a.End, b.End)
	})
	var pos int64
	for _, t := range h.Tensors {
		if t.Begin != pos {
			if t.Begin > pos {
				return nil, fmt.Errorf("params: safetensors: tensor %q starts at %d, expected %d (hole in data)", t.Name, t.Begin, pos)
			}
			return nil, fmt.Errorf("params: safetensors: tensor %q starts at %d, overlapping data before %d", t.Name, t.Begin, pos)
		}
		pos = t.End
	}
	h.DataSize = pos
	return h, nil
}

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func parseInfo(name string, raw json.RawMessage) (TensorInfo, error) {
	var ri rawInfo
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&ri); err != nil {
		return TensorInfo{}, fmt.Errorf("params: safetensors: tensor %q: %w", name, err)
	}
	if ri.DType == nil || ri.Shape == nil || ri.DataOffsets == nil {
		return TensorInfo{}, fmt.Errorf("params: safetensors: tensor %q: dtype, shape and data_offsets are required", name)
	}
	t := TensorInfo{Name: name, DType: DType(*ri.DType), Shape: *ri.Shape}
	size := DTypeSize(t.DType)
	if size == 0 {
		return TensorInfo{}, fmt.Errorf("params: safetensors: tensor %q: unknown dtype %q", name, *ri.DType)
	}
	if len(*ri.DataOffsets) != 2 {
		return TensorInfo{}, fmt.Errorf("params: safetensors: tensor %q: data_offsets must have 2 entries, has %d", name, len(*ri.DataOffsets))
	}
	t.Begin, t.End = (*ri.DataOffsets)[0], (*ri.DataOffsets)[1]
	if t.Begin < 0 || t.End < t.Begin {
		return TensorInfo{}, fmt.Errorf("params: safetensors: tensor %q: bad data_offsets [%d, %d]", name, t.Begin, t.End)
	}
	n, err := NumElements(t.Shape)
	if err != nil {
		return TensorInfo{}, fmt.Errorf("params: safetensors: tensor %q: %w", name, err)
	}
	if int64(n) > math.MaxInt64/int64(size) || int64(n)*int64(size) != t.End-t.Begin {
		return TensorInfo{}, fmt.Errorf("params: safetensors: tensor %q: shape %v of %s needs %d bytes, data_offsets give %d",
			name, t.Shape, t.DType, int64(n)*int64(size), t.End-t.Begin)
	}
	return t, nil
}

// RawTensor is a tensor of any dtype as little-endian bytes.
type RawTensor struct {
	Name  string
	DType DType
	Shape []int64
	Data  []byte
}

// File is a whole safetensors file decoded into memory. Tensors are in file
// order; their Data alias the buffer given to Decode.
type File struct {
	Tensors  []RawTensor
	Metadata map[string]string
}

// Decode parses and validates a whole safetensors file held in b.
func Decode(b []byte) (*File, error) {
	r := bytes.NewReader(b)
	h, err := ReadHeader(r, int64(len(b)))
	if err != nil {
		return nil, err
	}
	f := &File{Metadata: h.Metadata, Tensors: make([]RawTensor, len(h.Tensors))}
	data := b[h.DataStart:]
	for i, t := range h.Tensors {
		f.Tensors[i] = RawTensor{Name: t.Name, DType: t.DType, Shape: t.Shape, Data: data[t.Begin:t.End:t.End]}
	}
	return f, nil
}

// headerJSON renders the header for infos (in order) and metadata, padded
// with spaces so that the data section starts at a multiple of headerAlign.
func headerJSON(infos []TensorInfo, meta map[string]string) ([]byte, error) {
	var sb bytes.Buffer
	sb.WriteByte('{')
	first := true
	if len(meta) > 0 {
		for k, v := range meta {
			for _, s := range []string{k, v} {
				if !utf8.ValidString(s) {
					return nil, fmt.Errorf("params: safetensors: metadata %q is not valid UTF-8", s)
				}
			}
		}
		m, err := json.Marshal(meta)
		if err != nil {
			return nil, fmt.Errorf("params: safetensors: metadata: %w", err)
		}
		sb.WriteString(`"__metadata__":`)
		sb.Write(m)
		first = false
	}
	seen := make(map[string]bool, len(infos))
	for _, t := range infos {
		if t.Name == "__metadata__" || t.Name == "" {
			return nil, fmt.Errorf("params: safetensors: invalid tensor name %q", t.Name)
		}
		// JSON would carry it with U+FFFD for its bad bytes: another name.
		if !utf8.ValidString(t.Name) {
			return nil, fmt.Errorf("params: safetensors: tensor name %q is not valid UTF-8", t.Name)
		}
		if seen[t.Name] {
			return nil, fmt.Errorf("params: safetensors: duplicate tensor name %q", t.Name)
		}
		seen[t.Name] = true
		if !first {
			sb.WriteByte(',')
		}
		first = false
		k, err := json.Marshal(t.Name)
		if err != nil {
			return nil, fmt.Errorf("params: safetensors: name %q: %w", t.Name, err)
		}
		shape := t.Shape
		if shape == nil {
			shape = []int64{}
		}
		v, err := json.Marshal(struct {
			DType       DType   `json:"dtype"`
			Shape       []int64 `json:"shape"`
			DataOffsets []int64 `json:"data_offsets"`
		}{t.DType, shape, []int64{t.Begin, t.End}})
		if err != nil {
			return nil, fmt.Errorf("params: safetensors: tensor %q: %w", t.Name, err)
		}
		sb.Write(k)
		sb.WriteByte(':')
		sb.Write(v)
	}
	sb.WriteByte('}')
	for (8+sb.Len())%headerAlign != 0 {
		sb.WriteByte(' ')
	}
	if sb.Len() > MaxHeaderSize {
		return nil, fmt.Errorf("params: safetensors: header of %d bytes exceeds limit %d", sb.Len(), MaxHeaderSize)
	}
	return sb.Bytes(), nil
}

func writeHeader(w io.Writer, hdr []byte) error {
	var lenBuf [8]byte
	binary.LittleEndian.PutUint64(lenBuf[:], uint64(len(hdr)))
	if _, err := w.Write(lenBuf[:]); err != nil {
		return err
	}
	_, err := w.Write(hdr)
	return err
}

// Encode writes raw tensors, in order, as a safetensors file. Each tensor's
// Data must have NumElements(Shape)*DTypeSize(DType) bytes.
func Encode(w io.Writer, ts []RawTensor, meta map[string]string) error {
	infos := make([]TensorInfo, len(ts))
	var off int64
	for i, t := range ts {
		size := DTypeSize(t.DType)
		if size == 0 {
			return fmt.Errorf("params: safetensors: tensor %q: unknown dtype %q", t.Name, t.DType)
		}
		n, err := NumElements(t.Shape)
		if err != nil {
			return fmt.Errorf("params: safetensors: tensor %q: %w", t.Name, err)
		}
		if n*size != len(t.Data) {
			return fmt.Errorf("params: safetensors: tensor %q: %d bytes for shape %v of %s (want %d)", t.Name, len(t.Data), t.Shape, t.DType, n*size)
		}
		infos[i] = TensorInfo{Name: t.Name, DType: t.DType, Shape: t.Shape, Begin: off, End: off + int64(len(t.Data))}
		off += int64(len(t.Data))
	}
	hdr, err := headerJSON(infos, meta)
	if err != nil {
		return err
	}
	if err := writeHeader(w, hdr); err != nil {
		return fmt.Errorf("params: safetensors: write: %w", err)
	}
	for _, t := range ts {
		if _, err := w.Write(t.Data); err != nil {
			return fmt.Errorf("params: safetensors: write %q: %w", t.Name, err)
		}
	}
	return nil
}

// Part is one Store written to or read from a safetensors file, with an
// optional Rename applied to its tensor names (nil keeps them). Several
// parts share one file when their renamed names are distinct: the
// optimiser's moments are stored as "<name>.exp_avg" and
// "<name>.exp_avg_sq" in one file this way.
type Part struct {
	Store  *Store
	Rename func(string) string
}

func (p Part) name(i int) string {
	n := p.Store.tensors[i].Name
	if p.Rename != nil {
		n = p.Rename(n)
	}
	return n
}

// WriteParts writes every tensor of every part, in order, as F32 to w with
// the given metadata (may be nil). It streams; the stores are not copied.
func WriteParts(w io.Writer, meta map[string]string, parts ...Part) error {
	var infos []TensorInfo
	var data [][]float32
	var off int64
	for _, p := range parts {
		for i, t := range p.Store.tensors {
			n := int64(len(t.Data)) * 4
			infos = append(infos, TensorInfo{Name: p.name(i), DType: F32, Shape: t.Shape, Begin: off, End: off + n})
			data = append(data, t.Data)
			off += n
		}
	}
	return writeF32File(w, meta, infos, func(k int) ([]float32, error) { return data[k], nil })
}

// WriteFunc writes a safetensors file of F32 tensors laid out by specs,
// in order, with the given metadata (may be nil), asking fill for each
// tensor's values as it is written: fill(i, buf) returns the values of
// specs[i], either in buf (as long as the tensor, reused from one tensor
// to the next) or in a slice of its own. Only one tensor's values need
// exist at a time.
func WriteFunc(w io.Writer, meta map[string]string, specs []Spec, fill func(i int, buf []float32) ([]float32, error)) error {
	infos := make([]TensorInfo, len(specs))
	var off int64
	for i, sp := range specs {
		n, err := NumElements(sp.Shape)
		if err != nil {
			return fmt.Errorf("params: safetensors: tensor %q: %w", sp.Name, err)
		}
		infos[i] = TensorInfo{Name: sp.Name, DType: F32, Shape: sp.Shape, Begin: off, End: off + 4*int64(n)}
		off += 4 * int64(n)
	}
	var buf []float32
	return writeF32File(w, meta, infos, func(i int) ([]float32, error) {
		n := int(infos[i].End-infos[i].Begin) / 4
		if cap(buf) < n {
			buf = make([]float32, n)
		}
		data, err := fill(i, buf[:n])
		if err != nil {
			return nil, err
		}
		if len(data) != n {
			return nil, fmt.Errorf("params: safetensors: tensor %q: %d values for shape %v", infos[i].Name, len(data), infos[i].Shape)
		}
		return data, nil
	})
}

// writeF32File writes the header of infos (F32 tensors, in order) and
// then each tensor's values as values(k) returns them, through one
// buffered writer.
func writeF32File(w io.Writer, meta map[string]string, infos []TensorInfo, values func(k int) ([]float32, error)) error {
	hdr, err := headerJSON(infos, meta)
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	if err := writeHeader(bw, hdr); err != nil {
		return fmt.Errorf("params: safetensors: write: %w", err)
	}
	out := make([]byte, 1<<16)
	for k, t := range infos {
		data, err := values(k)
		if err != nil {
			return err
		}
		if err := writeF32(bw, data, out); err != nil {
			return fmt.Errorf("params: safetensors: write %q: %w", t.Name, err)
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("params: safetensors: write: %w", err)
	}
	return nil
}

// WriteSafetensors writes every tensor of s, in store order, as F32 to w,
// with the given metadata (may be nil) and optional renaming (nil keeps
// the names). It streams; s is not copied.
func (s *Store) WriteSafetensors(w io.Writer, meta map[string]string, rename func(string) string) error {
	return WriteParts(w, meta, Part{Store: s, Rename: rename})
}

func writeF32(w io.Writer, x []float32, buf []byte) error {
	per := len(buf) / 4
	for len(x) > 0 {
		n := min(per, len(x))
		for i, v := range x[:n] {
			binary.LittleEndian.PutUint32(buf[4*i:], math.Float32bits(v))
		}
		if _, err := w.Write(buf[:4*n]); err != nil {
			return err
		}
		x = x[n:]
	}
	return nil
}

// MismatchError lists every difference between a safetensors file and the
// Store it is loaded into. File names the source when known.
type MismatchError struct {
	File     string
	Problems []string
}

// Error reports every mismatch, one per line after the first.
func (e *MismatchError) Error() string {
	src := "safetensors"
	if e.File != "" {
		src = e.File
	}
	return fmt.Sprintf("params: %s does not match the store (%d problems):\n  %s", src, len(e.Problems), strings.Join(e.Problems, "\n  "))
}

// CheckParts compares a header with the layout of the parts: every tensor
// of every part must be present (after renaming) as F32 with the same
// shape, and the file must hold no other tensor. It returns a
// *MismatchError listing every problem, or nil.
func CheckParts(h *Header, parts ...Part) error {
	var probs []string
	want := map[string]*Tensor{}
	for _, p := range parts {
		for i := range p.Store.tensors {
			want[p.name(i)] = &p.Store.tensors[i]
		}
	}
	found := make(map[string]bool, len(h.Tensors))
	for _, ti := range h.Tensors {
		t, ok := want[ti.Name]
		if !ok {
			probs = append(probs, fmt.Sprintf("unexpected tensor %q (%s %v)", ti.Name, ti.DType, ti.Shape))
			continue
		}
		found[ti.Name] = true
		if ti.DType != F32 {
			probs = append(probs, fmt.Sprintf("tensor %q: dtype %s, want F32", ti.Name, ti.DType))
		}
		if !equalShape(ti.Shape, t.Shape) {
			probs = append(probs, fmt.Sprintf("tensor %q: shape %v, want %v", ti.Name, ti.Shape, t.Shape))
		}
	}
	for _, p := range parts {
		for i := range p.Store.tensors {
			if n := p.name(i); !found[n] {
				probs = append(probs, fmt.Sprintf("missing tensor %q (F32 %v)", n, p.Store.tensors[i].Shape))
			}
		}
	}
	if len(probs) > 0 {
		return &MismatchError{Problems: probs}
	}
	return nil
}

// ReadParts reads the data section described by h from r (positioned at
// its start, as ReadHeader leaves it) into the parts, in place. Call
// CheckParts first: ReadParts assumes that h matches. A read error leaves
// the stores partly overwritten.
func ReadParts(r io.Reader, h *Header, parts ...Part) error {
	defer func() { // a failed read changed the stores too
		for _, p := range parts {
			p.Store.Touch()
		}
	}()
	byName := map[string]*Tensor{}
	for _, p := range parts {
		for i := range p.Store.tensors {
			byName[p.name(i)] = &p.Store.tensors[i]
		}
	}
	buf := make([]byte, 1<<16)
	for _, ti := range h.Tensors { // file order, contiguous
		t, ok := byName[ti.Name]
		if !ok || int64(len(t.Data))*4 != ti.End-ti.Begin {
			return fmt.Errorf("params: safetensors: tensor %q does not match the store (call CheckParts first)", ti.Name)
		}
		if err := readF32(r, t.Data, buf); err != nil {
			return fmt.Errorf("params: safetensors: read %q: %w", ti.Name, noEOF(err))
		}
	}
	return nil
}

// CheckHeader is CheckParts for s alone.
func (s *Store) CheckHeader(h *Header, rename func(string) string) error {
	return CheckParts(h, Part{Store: s, Rename: rename})
}

// ReadSafetensors reads a safetensors file of fileSize bytes from r into s,
// in place (the tensors' Data slices keep their identity). The header is
// read and checked against s first; on a mismatch s is untouched and the
// error is a *MismatchError. A read error during the data section leaves s
// partly overwritten.
func (s *Store) ReadSafetensors(r io.Reader, fileSize int64, rename func(string) string) (*Header, error) {
	br := bufio.NewReaderSize(r, 1<<20)
	h, err := ReadHeader(br, fileSize)
	if err != nil {
		return nil, err
	}
	p := Part{Store: s, Rename: rename}
	if err := CheckParts(h, p); err != nil {
		return h, err
	}
	return h, ReadParts(br, h, p)
}

func readF32(r io.Reader, x []float32, buf []byte) error {
	per := len(buf) / 4
	for len(x) > 0 {
		n := min(per, len(x))
		b := buf[:4*n]
		if _, err := io.ReadFull(r, b); err != nil {
			return err
		}
		for i := range x[:n] {
			x[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
		}
		x = x[n:]
	}
	return nil
}
