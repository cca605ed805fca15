package onnx

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/spiral-rl/spiral/model/onnx/onnxpb"
)

// MaxProtoSize is the largest serialized ModelProto, in bytes, that
// protobuf allows (2 GiB - 1). Larger models keep their weights in an
// external data file.
const MaxProtoSize = 1<<31 - 1

// Model is an ONNX model held in memory. Proto is the decoded message;
// transforms edit it directly. Tensors of a Model from Load or Parse hold
// their data in memory (raw_data or the typed fields), never in files.
type Model struct {
	Proto *onnxpb.ModelProto
	// dir and path locate the file a Model was loaded from, for its
	// external data ("" for models built or parsed in memory).
	dir, path string
	// inFile marks the initializers whose inline data LoadGraph left in
	// the model file (see StoredInline).
	inFile map[*onnxpb.TensorProto]bool
}

// Graph returns the model's main graph (nil only for a Model built by hand
// without one).
func (m *Model) Graph() *onnxpb.GraphProto { return m.Proto.GetGraph() }

// Opset returns the opset version the model imports for domain ("" or
// "ai.onnx" for the standard operators), or 0 when it imports none.
func (m *Model) Opset(domain string) int64 {
	if domain == "ai.onnx" {
		domain = ""
	}
	for _, o := range m.Proto.GetOpsetImport() {
		d := o.GetDomain()
		if d == "ai.onnx" {
			d = ""
		}
		if d == domain {
			return o.GetVersion()
		}
	}
	return 0
}

func checkSize(mp *onnxpb.ModelProto, path string) error {
	if n := proto.Size(mp); n > MaxProtoSize {
		what := "marshal model"
		if path != "" {
			what = fmt.Sprintf("save %q", path)
		}
		return fmt.Errorf("onnx: %s: model is %d bytes, over protobuf's 2 GiB limit; save it with SaveOptions.ExternalDataFile", what, n)
	}
	return nil
}

// Load reads the ONNX model file at path. Tensors stored as external data
// (external_data location/offset/length, location relative to the model's
// directory) are read into memory, so the returned Model refers to no
// file. Errors name the file and the problem: a truncated or corrupt
// protobuf, a missing external data file (errors.Is fs.ErrNotExist), an
// offset or length past the end of the data file, a location outside the
// model's directory. LoadGraph reads the graph alone.
func Load(path string) (*Model, error) {
	m, err := LoadGraph(path)
	if err != nil {
		return nil, err
	}
	var loadErr error
	walkModelTensors(m.Proto, func(t *onnxpb.TensorProto) bool {
		if IsExternal(t) {
			loadErr = m.readExternal(t)
		}
		return loadErr == nil
	})
	if loadErr != nil {
		return nil, loadErr
	}
	return m, nil
}

// Parse decodes a model held in memory (a file's bytes; name names it in
// errors). Its external data, if any, is not resolved.
func Parse(data []byte, name string) (*Model, error) {
	mp, err := decode(data, name)
	if err != nil {
		return nil, err
	}
	return &Model{Proto: mp, path: name}, nil
}

func decode(data []byte, name string) (*onnxpb.ModelProto, error) {
	mp := &onnxpb.ModelProto{}
	if err := proto.Unmarshal(data, mp); err != nil {
		return nil, fmt.Errorf("onnx: load %q: not a valid ONNX model (truncated or corrupt protobuf, %d bytes): %w", name, len(data), err)
	}
	if mp.Graph == nil {
		return nil, fmt.Errorf("onnx: load %q: not an ONNX model: no graph in %d bytes", name, len(data))
	}
	return mp, nil
}

// externalKey returns the value of key in t's external_data, "" if absent.
func externalKey(t *onnxpb.TensorProto, key string) string {
	for _, e := range t.GetExternalData() {
		if e.GetKey() == key {
			return e.GetValue()
		}
	}
	return ""
}

// readExternal reads t's external data into raw_data.
func (m *Model) readExternal(t *onnxpb.TensorProto) error {
	path, offset, length, err := m.externalRange(t)
	if err != nil {
		return err
	}
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("onnx: load %q: tensor %q: external data file %q: %w", m.path, t.GetName(), path, err)
	}
	defer f.Close()
	buf := make([]byte, length)
	if _, err := f.ReadAt(buf, offset); err != nil && !(err == io.EOF && length == 0) {
		return fmt.Errorf("onnx: load %q: tensor %q: read external data file %q at offset %d: %w", m.path, t.GetName(), path, offset, err)
	}
	t.RawData = buf
	t.DataLocation = nil
	t.ExternalData = nil
	return nil
}

func parseExtInt(t *onnxpb.TensorProto, key string) (int64, error) {
	s := externalKey(t, key)
	if s == "" {
		return 0, nil
	}
	v, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("bad %s %q: want a non-negative integer", key, s)
	}
	return v, nil
}

// walkModelTensors calls fn on every tensor of the model: initializers,
// sparse initializers, tensor attributes, in the main graph, nested
// graphs, functions and training info. It stops when fn returns false.
func walkModelTensors(mp *onnxpb.ModelProto, fn func(*onnxpb.TensorProto) bool) {
	w := tensorWalker{fn: fn}
	w.graph(mp.GetGraph())
	for _, f := range mp.GetFunctions() {
		w.nodes(f.GetNode())
		for _, a := range f.GetAttributeProto() {
			w.attr(a)
		}
	}
	for _, ti := range mp.GetTrainingInfo() {
		w.graph(ti.GetInitialization())
		w.graph(ti.GetAlgorithm())
	}
}

type tensorWalker struct {
	fn   func(*onnxpb.TensorProto) bool
	stop bool
}

func (w *tensorWalker) tensor(t *onnxpb.TensorProto) {
	if t != nil && !w.stop && !w.fn(t) {
		w.stop = true
	}
}

func (w *tensorWalker) sparse(s *onnxpb.SparseTensorProto) {
	w.tensor(s.GetValues())
	w.tensor(s.GetIndices())
}

func (w *tensorWalker) graph(g *onnxpb.GraphProto) {
	if g == nil {
		return
	}
	for _, t := range g.GetInitializer() {
		w.tensor(t)
	}
	for _, s := range g.GetSparseInitializer() {
		w.sparse(s)
	}
	w.nodes(g.GetNode())
}

func (w *tensorWalker) nodes(ns []*onnxpb.NodeProto) {
	for _, n := range ns {
		for _, a := range n.GetAttribute() {
			w.attr(a)
		}
	}
}

func (w *tensorWalker) attr(a *onnxpb.AttributeProto) {
	w.tensor(a.GetT())
	for _, t := range a.GetTensors() {
		w.tensor(t)
	}
	if s := a.GetSparseTensor(); s != nil {
		w.sparse(s)
	}
	for _, s := range a.GetSparseTensors() {
		w.sparse(s)
	}
	w.graph(a.GetG())
	for _, g := range a.GetGraphs() {
		w.graph(g)
	}
}
