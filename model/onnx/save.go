package onnx

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/spiral-rl/spiral/model/atomicfile"
	"github.com/spiral-rl/spiral/model/onnx/onnxpb"
)

// DefaultSizeThreshold is the SizeThreshold used when SaveOptions leaves it
// zero: 1024 bytes, as onnx.save_model.
const DefaultSizeThreshold = 1024

// Alignment of large tensors in external data files, as onnx.save_model
// writes them: tensors of alignThreshold bytes or more start at a multiple
// of alignGranularity, so that runtimes can map them from the file.
const (
	alignThreshold   = 1 << 20
	alignGranularity = 1 << 16
)

// SaveOptions configures Save. The zero value writes one self-contained
// file.
type SaveOptions struct {
	// ExternalDataFile names the side file for large initializers, relative
	// to the model file's directory ("model.onnx_data" as HF optimum writes,
	// or "model.onnx.data"). Empty keeps all data inside the model file,
	// which protobuf limits to MaxProtoSize.
	ExternalDataFile string
	// SizeThreshold is the size in bytes at or over which an initializer of
	// the main graph moves to ExternalDataFile; 0 means
	// DefaultSizeThreshold. Ignored without ExternalDataFile.
	SizeThreshold int
	// Data, when set, supplies the bytes of an initializer instead of its
	// raw_data (ok=false: use the tensor's own data): the writer receives
	// exactly the tensor's little-endian bytes. It lets a caller stream
	// weights from its own buffers, or from another model's data file,
	// into ExternalDataFile without building them in memory. Ignored
	// without ExternalDataFile.
	Data func(t *onnxpb.TensorProto) (write func(io.Writer) error, ok bool)
}

// Save writes m to path atomically: each file is written to a temporary
// file in the same directory, synced, and renamed over its target (the
// external data file first, then the model). m is not modified. With
// opt.ExternalDataFile, initializers of the main graph whose raw data is at
// least opt.SizeThreshold bytes go to that file (string tensors stay
// inline); tensors in attributes and nested graphs stay inline. A model
// still over MaxProtoSize is an error.
func Save(path string, m *Model, opt SaveOptions) error {
	if m == nil || m.Proto == nil {
		return fmt.Errorf("onnx: save %q: nil model", path)
	}
	dir := filepath.Dir(path)
	out := m.Proto
	var writeData func(io.Writer) error
	if opt.ExternalDataFile != "" {
		loc := filepath.FromSlash(opt.ExternalDataFile)
		if !filepath.IsLocal(loc) {
			return fmt.Errorf("onnx: save %q: external data file %q must be a relative path inside the model's directory", path, opt.ExternalDataFile)
		}
		if filepath.Join(dir, loc) == filepath.Clean(path) {
			return fmt.Errorf("onnx: save %q: external data file %q is the model file itself", path, opt.ExternalDataFile)
		}
		threshold := opt.SizeThreshold
		if threshold <= 0 {
			threshold = DefaultSizeThreshold
		}
		var err error
		out, writeData, err = planExternal(path, opt.ExternalDataFile, m.Proto, int64(threshold), opt.Data)
		if err != nil {
			return err
		}
	}
	if err := checkSize(out, path); err != nil {
		return err
	}
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(out)
	if err != nil {
		return fmt.Errorf("onnx: save %q: marshal: %w", path, err)
	}
	// The data file first, then the graph that refers to it.
	if writeData != nil {
		dataPath := filepath.Join(dir, filepath.FromSlash(opt.ExternalDataFile))
		if err := atomicfile.Write(dataPath, 0o666, writeData); err != nil {
			return fmt.Errorf("onnx: save %q: external data: %w", path, err)
		}
	}
	if err := atomicfile.WriteFile(path, b, 0o666); err != nil {
		return fmt.Errorf("onnx: save %q: %w", path, err)
	}
	return nil
}

// DataFileSuffix names the external data file spiral writes beside a
// model: the model's file name and this suffix (model.onnx_data).
const DataFileSuffix = "_data"

// RemoveReplacedData removes the external data file beside path
// (path + DataFileSuffix), when there is one, after a model saved there
// inline replaced one that kept its weights in it: nothing refers to it
// any more.
func RemoveReplacedData(path string) error {
	if err := os.Remove(path + DataFileSuffix); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("onnx: remove the replaced model's weights: %w", err)
	}
	return nil
}

// planExternal lays out the large initializers of mp in an external data
// file at location and returns a shallow copy of mp whose graph refers to
// them, with the function that writes the file's content (nil when
// nothing moved). data, when not nil, supplies tensors' bytes (see
// SaveOptions.Data); small tensors it supplies are inlined as raw_data.
func planExternal(path, location string, mp *onnxpb.ModelProto, threshold int64, data func(*onnxpb.TensorProto) (func(io.Writer) error, bool)) (*onnxpb.ModelProto, func(io.Writer) error, error) {
	g := mp.GetGraph()
	if g == nil {
		return mp, nil, nil
	}
	type moved struct {
		idx    int
		write  func(io.Writer) error
		size   int64
		offset int64 // -1: inline raw
		raw    []byte
	}
	var plan []moved
	var end int64
	for i, t := range g.GetInitializer() {
		if TensorDType(t) == String {
			continue
		}
		var write func(io.Writer) error
		var size int64
		supplied := false
		if data != nil {
			write, supplied = data(t)
		}
		if supplied {
			if size = rawSize(TensorDType(t), NumElements(t.GetDims())); size < 0 {
				return nil, nil, fmt.Errorf("onnx: save %q: tensor %q: %s has no raw layout", path, t.GetName(), TensorDType(t))
			}
		} else {
			if IsExternal(t) {
				return nil, nil, fmt.Errorf("onnx: save %q: tensor %q: data is in external file %q and no data source was given", path, t.GetName(), externalKey(t, "location"))
			}
			raw, err := RawBytes(t)
			if err != nil {
				return nil, nil, fmt.Errorf("onnx: save %q: %w", path, err)
			}
			write, size = func(w io.Writer) error { _, err := w.Write(raw); return err }, int64(len(raw))
		}
		if size < threshold {
			if supplied {
				var buf bytes.Buffer
				if err := write(&buf); err != nil {
					return nil, nil, fmt.Errorf("onnx: save %q: tensor %q: %w", path, t.GetName(), err)
				}
				plan = append(plan, moved{idx: i, size: size, offset: -1, raw: buf.Bytes()})
			}
			continue
		}
		off := end
		if size >= alignThreshold {
			off = (off + alignGranularity - 1) / alignGranularity * alignGranularity
		}
		plan = append(plan, moved{idx: i, write: write, size: size, offset: off})
		end = off + size
	}
	if len(plan) == 0 {
		return mp, nil, nil
	}
	var writeData func(io.Writer) error
	if end > 0 {
		writeData = func(w io.Writer) error {
			var pos int64
			var zeros [alignGranularity]byte
			for _, p := range plan {
				if p.offset < 0 {
					continue
				}
				if _, err := w.Write(zeros[:p.offset-pos]); err != nil {
					return err
				}
				cw := &countingWriter{w: w}
				if err := p.write(cw); err != nil {
					return err
				}
				if cw.n != p.size {
					return fmt.Errorf("tensor %q: wrote %d bytes, want %d", g.Initializer[p.idx].GetName(), cw.n, p.size)
				}
				pos = p.offset + p.size
			}
			return nil
		}
	}
	g2 := shallowClone(g)
	g2.Initializer = append([]*onnxpb.TensorProto{}, g.Initializer...)
	for _, p := range plan {
		t := g.Initializer[p.idx]
		nt := &onnxpb.TensorProto{
			Name:          t.Name,
			Dims:          t.Dims,
			DataType:      t.DataType,
			Segment:       t.Segment,
			DocString:     t.DocString,
			MetadataProps: t.MetadataProps,
		}
		if p.offset < 0 {
			nt.RawData = p.raw
		} else {
			nt.DataLocation = onnxpb.TensorProto_EXTERNAL.Enum()
			nt.ExternalData = []*onnxpb.StringStringEntryProto{
				{Key: ptr("location"), Value: ptr(filepath.ToSlash(location))},
				{Key: ptr("offset"), Value: ptr(strconv.FormatInt(p.offset, 10))},
				{Key: ptr("length"), Value: ptr(strconv.FormatInt(p.size, 10))},
			}
		}
		g2.Initializer[p.idx] = nt
	}
	m2 := shallowClone(mp)
	m2.Graph = g2
	return m2, writeData, nil
}

// countingWriter counts the bytes written through it.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// shallowClone returns a new message whose fields share src's values
// (sub-messages and lists alias), unknown fields included.
func shallowClone[T proto.Message](src T) T {
	s := src.ProtoReflect()
	d := s.New()
	s.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		d.Set(fd, v)
		return true
	})
	d.SetUnknown(s.GetUnknown())
	return d.Interface().(T)
}
