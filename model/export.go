package model

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unsafe"

	"google.golang.org/protobuf/proto"

	"github.com/spiral-rl/spiral/model/lmgraph"
	"github.com/spiral-rl/spiral/model/onnx"
	"github.com/spiral-rl/spiral/model/onnx/onnxpb"
	"github.com/spiral-rl/spiral/model/params"
)

// Export writes the source model at src to out with its parameters
// replaced by the tensors of the same names in stores (shapes must match;
// every store tensor must be used), and each tied copy of ties replaced by
// the tensor it copies (transposed where it was; a copy of a tensor no
// store holds stays as in src). Weights go to an external
// data file beside out (out + "_data") when src keeps its weights in one,
// when the model would exceed protobuf's 2 GiB limit, or always when
// external is true; they are then streamed from the stores (and the other
// initializers from src's data file) without a second copy in memory. The
// directory of out is created. ONNX Runtime then computes with exactly the
// stores' weights.
func Export(ctx context.Context, src string, ties []lmgraph.Tie, out string, external bool, stores ...*params.Store) error {
	return export(ctx, src, ties, out, external, nil, nil, stores...)
}

// export is Export with merges: each base weight named in merges is
// written as read from src with its adapter's scale x A B added, one
// tensor at a time (no copy of the merged weights is kept). files, when
// not nil, names the files written beside out, recorded in its metadata
// (SideFilesKey, ONNXSideFiles); a record src holds is left out either
// way, as it names the files beside src.
func export(ctx context.Context, src string, ties []lmgraph.Tie, out string, external bool, files []string, merges map[string]loraFactors, stores ...*params.Store) error {
	m, err := onnx.LoadGraph(src)
	if err != nil {
		return fmt.Errorf("model: export: %w", err)
	}
	m.Proto.MetadataProps = slices.DeleteFunc(m.Proto.MetadataProps, func(p *onnxpb.StringStringEntryProto) bool { return p.GetKey() == SideFilesKey })
	if files != nil {
		m.Proto.MetadataProps = append(m.Proto.MetadataProps, &onnxpb.StringStringEntryProto{Key: proto.String(SideFilesKey), Value: proto.String(strings.Join(files, ","))})
	}
	byName := map[string]*params.Tensor{}
	total := len(merges)
	for _, s := range stores {
		for i := range s.Len() {
			byName[s.At(i).Name] = s.At(i)
			total++
		}
	}
	tieOf := map[string]lmgraph.Tie{}
	for _, t := range ties {
		tieOf[t.Copy] = t
	}
	replaced := 0
	anyExternal := false
	var size int64
	for _, t := range m.Graph().GetInitializer() {
		anyExternal = anyExternal || (onnx.IsExternal(t) && !m.StoredInline(t))
		size += max(0, onnx.NumElements(t.GetDims())) * int64(max(1, onnx.TensorDType(t).Size()))
		name := t.GetName()
		tie, copied := tieOf[name]
		if copied {
			name = tie.Of
		}
		var want []int64
		if f, ok := merges[name]; ok {
			if copied {
				return fmt.Errorf("model: export: %q is a tied copy of the adapted %q; merging LoRA into tied weights is not supported", t.GetName(), name)
			}
			want = []int64{int64(f.in), int64(f.out)}
		} else if st, ok := byName[name]; ok {
			want = st.Shape
			if copied && tie.Transposed {
				want = []int64{st.Shape[1], st.Shape[0]}
			}
		} else {
			continue
		}
		if !slices.Equal(want, t.GetDims()) {
			return fmt.Errorf("model: export: %q has shape %v in %s but %v in the weights", t.GetName(), t.GetDims(), src, want)
		}
		if onnx.TensorDType(t) != onnx.Float32 {
			return fmt.Errorf("model: export: %q is %v in %s; the weights are float32", t.GetName(), onnx.TensorDType(t), src)
		}
		if !copied {
			replaced++
		}
	}
	if replaced != total {
		return fmt.Errorf("model: export: %s has %d of the %d weight tensors; wrong source model?", src, replaced, total)
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return fmt.Errorf("model: export: %w", err)
	}
	tensorData := func(t *onnxpb.TensorProto) (func(io.Writer) error, bool) {
		if tie, ok := tieOf[t.GetName()]; ok && byName[tie.Of] != nil {
			st := byName[tie.Of]
			if !tie.Transposed {
				return func(w io.Writer) error { return writeFloats(w, st.Data) }, true
			}
			return func(w io.Writer) error { return writeTransposed(w, st.Data, int(st.Shape[0]), int(st.Shape[1])) }, true
		}
		if st, ok := byName[t.GetName()]; ok {
			return func(w io.Writer) error { return writeFloats(w, st.Data) }, true
		}
		if f, ok := merges[t.GetName()]; ok {
			return func(w io.Writer) error {
				buf := make([]float32, f.in*f.out)
				if err := m.ReadFloat32s(t, buf); err != nil {
					return fmt.Errorf("%s: %w", t.GetName(), err)
				}
				f.addTo(buf)
				return writeFloats(w, buf)
			}, true
		}
		if onnx.IsExternal(t) {
			return func(w io.Writer) error { return m.WriteData(t, w) }, true
		}
		return nil, false
	}
	// Each tensor is written only while ctx lasts: an export of gigabytes
	// interrupted stops at the next tensor, its files not replaced.
	data := func(t *onnxpb.TensorProto) (func(io.Writer) error, bool) {
		write, ok := tensorData(t)
		if !ok {
			return nil, false
		}
		return func(w io.Writer) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			return write(w)
		}, true
	}
	if external || anyExternal || size > onnx.MaxProtoSize {
		return onnx.Save(out, m, onnx.SaveOptions{ExternalDataFile: filepath.Base(out) + onnx.DataFileSuffix, Data: data})
	}
	// Small and self-contained: every tensor inline.
	for i, t := range m.Graph().GetInitializer() {
		write, ok := data(t)
		if !ok {
			continue
		}
		var buf bytesWriter
		if err := write(&buf); err != nil {
			return fmt.Errorf("model: export: %w", err)
		}
		m.Graph().Initializer[i] = &onnxpb.TensorProto{Name: t.Name, Dims: t.Dims, DataType: t.DataType, RawData: buf}
	}
	if err := onnx.Save(out, m, onnx.SaveOptions{}); err != nil {
		return err
	}
	return onnx.RemoveReplacedData(out)
}

// bytesWriter collects written bytes.
type bytesWriter []byte

func (b *bytesWriter) Write(p []byte) (int, error) {
	*b = append(*b, p...)
	return len(p), nil
}

// writeFloats writes x as little-endian float32 bytes (ONNX raw data) in
// chunks, without copying the whole slice.
func writeFloats(w io.Writer, x []float32) error {
	const chunk = 1 << 18
	for lo := 0; lo < len(x); lo += chunk {
		part := x[lo:min(lo+chunk, len(x))]
		if _, err := w.Write(unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(part))), 4*len(part))); err != nil {
			return err
		}
	}
	return nil
}

// writeTransposed writes the transpose of the row-major [rows, cols]
// matrix x, one output row at a time.
func writeTransposed(w io.Writer, x []float32, rows, cols int) error {
	row := make([]float32, rows)
	for j := range cols {
		for i := range rows {
			row[i] = x[i*cols+j]
		}
		if err := writeFloats(w, row); err != nil {
			return err
		}
	}
	return nil
}

// ONNXSideFiles returns the names of the files beside the ONNX model at
// path that the export which wrote it recorded writing (SideFilesKey in
// its metadata, ExportTrained's files); none where there is no such
// file, or one that records none (another tool's, an older spiral's) or
// cannot be read, since such a file vouches for none.
func ONNXSideFiles(path string) []string {
	m, err := onnx.LoadGraph(path)
	if err != nil {
		return nil
	}
	for _, p := range m.Proto.GetMetadataProps() {
		if p.GetKey() == SideFilesKey && p.GetValue() != "" {
			return strings.Split(p.GetValue(), ",")
		}
	}
	return nil
}
