package onnx

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"google.golang.org/protobuf/encoding/protowire"
)

// lazyInline is the size from which LoadGraph leaves an initializer's
// inline raw_data in the file: an inline export's weights then cost no
// memory until read, like external data. Smaller tensors (shapes, axes,
// scalars, RoPE tables) are loaded, so that graph analyses see them.
const lazyInline = 64 << 10

// Field numbers of the messages scanModel walks (onnx.proto3).
const (
	modelGraph       = 7
	graphInitializer = 5
	tensorName       = 8
	tensorRawData    = 9
	tensorExternal   = 13
	tensorLocation   = 14
	entryKey         = 1
	entryValue       = 2
	locationExternal = 1
)

// fileReader reads a file sequentially and skips forward by seeking.
type fileReader struct {
	f   *os.File
	r   *bufio.Reader
	pos int64
}

func (fr *fileReader) varint() (uint64, error) {
	x, n, err := readUvarint(fr.r)
	fr.pos += int64(n)
	return x, err
}

func (fr *fileReader) bytes(n int64) ([]byte, error) {
	b := make([]byte, n)
	_, err := io.ReadFull(fr.r, b)
	fr.pos += n
	return b, err
}

func (fr *fileReader) skip(n int64) error {
	if n <= int64(fr.r.Buffered()) {
		_, err := fr.r.Discard(int(n))
		fr.pos += n
		return err
	}
	fr.pos += n
	if _, err := fr.f.Seek(fr.pos, io.SeekStart); err != nil {
		return err
	}
	fr.r.Reset(fr.f)
	return nil
}

// field is one protobuf field's framing as read.
type field struct {
	num  protowire.Number
	typ  protowire.Type
	head []byte // tag (and length for bytes fields), re-encoded
	n    int64  // length of a bytes field's value
	val  []byte // the value of a varint or fixed field, re-encoded
}

// next reads the next field's framing (not a bytes field's value).
func (fr *fileReader) next() (field, error) {
	tag, err := fr.varint()
	if err != nil {
		return field{}, err
	}
	num, typ := protowire.DecodeTag(tag)
	f := field{num: num, typ: typ, head: protowire.AppendVarint(nil, tag)}
	switch typ {
	case protowire.VarintType:
		v, err := fr.varint()
		f.val = protowire.AppendVarint(nil, v)
		return f, err
	case protowire.Fixed32Type:
		f.val, err = fr.bytes(4)
		return f, err
	case protowire.Fixed64Type:
		f.val, err = fr.bytes(8)
		return f, err
	case protowire.BytesType:
		l, err := fr.varint()
		f.n = int64(l)
		f.head = protowire.AppendVarint(f.head, l)
		return f, err
	}
	return f, fmt.Errorf("wire type %d", typ)
}

// scanModel reads the ModelProto of the size bytes of f and returns its
// encoding with every initializer's raw_data of at least lazyInline bytes
// replaced by an external-data reference into the model file itself
// (location = its base name, offset, length), and the names of those
// initializers.
func scanModel(f *os.File, size int64, path string) ([]byte, map[string]bool, error) {
	fr := &fileReader{f: f, r: bufio.NewReaderSize(f, 1<<20)}
	self := filepath.Base(path)
	lazy := map[string]bool{}
	out, err := scanFields(fr, size, "model", func(fl field) ([]byte, bool, error) {
		if fl.num != modelGraph {
			return nil, false, nil
		}
		g, err := scanGraph(fr, fr.pos+fl.n, self, lazy)
		return protowire.AppendBytes(protowire.AppendTag(nil, modelGraph, protowire.BytesType), g), true, err
	})
	if err != nil {
		return nil, nil, err
	}
	return out, lazy, nil
}

// scanFields re-encodes the fields of a message (what, in errors) that
// ends at end: each as read, but a length-delimited field that visit
// takes (handled), whose value visit reads from fr, exactly fl.n bytes,
// and returns re-encoded, framing included. A field that runs past end
// is an error.
func scanFields(fr *fileReader, end int64, what string, visit func(fl field) (b []byte, handled bool, err error)) ([]byte, error) {
	var out []byte
	for fr.pos < end {
		fl, err := fr.next()
		if err != nil {
			return nil, err
		}
		if fl.typ != protowire.BytesType {
			if fr.pos > end {
				return nil, fmt.Errorf("%s field %d runs past its message", what, fl.num)
			}
			out = append(append(out, fl.head...), fl.val...)
			continue
		}
		if fl.n < 0 || fl.n > end-fr.pos {
			return nil, fmt.Errorf("%s field %d runs past its message", what, fl.num)
		}
		b, handled, err := visit(fl)
		if err != nil {
			return nil, err
		}
		if !handled {
			if b, err = fr.bytes(fl.n); err != nil {
				return nil, err
			}
			b = append(fl.head, b...)
		}
		out = append(out, b...)
	}
	return out, nil
}

// scanGraph re-encodes a GraphProto ending at end, its initializers
// through scanTensor.
func scanGraph(fr *fileReader, end int64, self string, lazy map[string]bool) ([]byte, error) {
	return scanFields(fr, end, "graph", func(fl field) ([]byte, bool, error) {
		if fl.num != graphInitializer {
			return nil, false, nil
		}
		t, err := scanTensor(fr, fr.pos+fl.n, self, lazy)
		return protowire.AppendBytes(protowire.AppendTag(nil, graphInitializer, protowire.BytesType), t), true, err
	})
}

// scanTensor re-encodes a TensorProto ending at end, leaving a large
// raw_data in the file.
func scanTensor(fr *fileReader, end int64, self string, lazy map[string]bool) ([]byte, error) {
	var name string
	offset, length := int64(-1), int64(0)
	out, err := scanFields(fr, end, "tensor", func(fl field) ([]byte, bool, error) {
		switch {
		case fl.num == tensorRawData && fl.n >= lazyInline:
			offset, length = fr.pos, fl.n
			return nil, true, fr.skip(fl.n)
		case fl.num == tensorName:
			b, err := fr.bytes(fl.n)
			name = string(b)
			return append(fl.head, b...), true, err
		}
		return nil, false, nil
	})
	if err != nil || offset < 0 {
		return out, err
	}
	for _, kv := range [][2]string{{"location", self}, {"offset", strconv.FormatInt(offset, 10)}, {"length", strconv.FormatInt(length, 10)}} {
		var e []byte
		e = protowire.AppendTag(e, entryKey, protowire.BytesType)
		e = protowire.AppendString(e, kv[0])
		e = protowire.AppendTag(e, entryValue, protowire.BytesType)
		e = protowire.AppendString(e, kv[1])
		out = protowire.AppendTag(out, tensorExternal, protowire.BytesType)
		out = protowire.AppendBytes(out, e)
	}
	out = protowire.AppendTag(out, tensorLocation, protowire.VarintType)
	out = protowire.AppendVarint(out, locationExternal)
	lazy[name] = true
	return out, nil
}
