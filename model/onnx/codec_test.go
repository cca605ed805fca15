package onnx

import (
	"bufio"
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/spiral-rl/spiral/model/onnx/onnxpb"
)

// testModel returns a small model whose initializers cover the cases Save
// treats differently: under and over the threshold, over the alignment
// threshold (1 MiB), typed fields instead of raw_data, half precision,
// int64 and a string tensor.
func testModel(t *testing.T) *Model {
	t.Helper()
	b := NewGraphBuilder("test")
	x := b.Input("x", Float32, P("batch_size"), D(4))
	w := b.Initializer("w", NewTensor("", []int64{4, 3}, seq32(12)))        // 48 bytes: inline
	big := b.Initializer("big", NewTensor("", []int64{3, 100}, seq32(300))) // 1200 bytes: external
	b.Initializer("huge", NewTensor("", []int64{1 << 18}, seq32(1<<18)))    // 1 MiB: external, aligned
	typed := &onnxpb.TensorProto{Dims: []int64{400}, DataType: ptr(int32(Float32)), FloatData: seq32(400)}
	b.Initializer("typed", typed) // 1600 bytes in float_data: external as raw
	b.Initializer("half", NewFloat16Tensor("", []int64{1024}, seq32(1024)))
	b.Initializer("ids", NewTensor("", []int64{200}, make([]int64, 200)))
	b.Initializer("names", &onnxpb.TensorProto{Dims: []int64{1}, DataType: ptr(int32(String)), StringData: [][]byte{[]byte("hello")}})
	y := b.Node("MatMul", []string{x, w})
	s := b.Node("ReduceSum", []string{big}, AttrInt("keepdims", 0))
	b.NodeTo("Add", []string{y, s}, []string{"y"})
	b.Output("y", Float32, P("batch_size"), D(3))
	return b.Model(18)
}

func seq32(n int) []float32 {
	out := make([]float32, n)
	for i := range out {
		out[i] = float32(i)*0.5 - 7
	}
	return out
}

func TestSaveLoadRoundTrip(t *testing.T) {
	tests := []struct {
		name      string
		opt       SaveOptions
		external  []string // initializers expected in the side file
		dataFile  string
		alignment map[string]int64
	}{
		{name: "inline", opt: SaveOptions{}},
		{name: "external default threshold", opt: SaveOptions{ExternalDataFile: "model.onnx_data"},
			external: []string{"big", "huge", "typed", "half", "ids"}, dataFile: "model.onnx_data",
			alignment: map[string]int64{"huge": alignGranularity}},
		{name: "external onnx.data name, high threshold", opt: SaveOptions{ExternalDataFile: "model.onnx.data", SizeThreshold: 4096},
			external: []string{"huge"}, dataFile: "model.onnx.data"},
		{name: "external in sub-directory", opt: SaveOptions{ExternalDataFile: "weights/all.bin", SizeThreshold: 1},
			external: []string{"w", "big", "huge", "typed", "half", "ids"}, dataFile: "weights/all.bin"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := testModel(t)
			before := proto.Clone(m.Proto)
			dir := t.TempDir()
			if strings.Contains(tc.opt.ExternalDataFile, "/") {
				os.MkdirAll(filepath.Join(dir, filepath.Dir(tc.opt.ExternalDataFile)), 0o755)
			}
			path := filepath.Join(dir, "model.onnx")
			if err := Save(path, m, tc.opt); err != nil {
				t.Fatal(err)
			}
			if !proto.Equal(before, m.Proto) {
				t.Fatal("Save modified the model")
			}
			// What the file on disk says, before Load resolves it.
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var disk onnxpb.ModelProto
			if err := proto.Unmarshal(raw, &disk); err != nil {
				t.Fatal(err)
			}
			var gotExternal []string
			for _, it := range disk.Graph.Initializer {
				if IsExternal(it) {
					gotExternal = append(gotExternal, it.GetName())
					if loc := externalKey(it, "location"); loc != tc.dataFile {
						t.Errorf("%s: location %q, want %q", it.GetName(), loc, tc.dataFile)
					}
					if it.RawData != nil || it.FloatData != nil {
						t.Errorf("%s: external tensor still holds data inline", it.GetName())
					}
					if a := tc.alignment[it.GetName()]; a != 0 {
						off, _ := parseExtInt(it, "offset")
						if off%a != 0 {
							t.Errorf("%s: offset %d not aligned to %d", it.GetName(), off, a)
						}
					}
				}
			}
			if !slices.Equal(gotExternal, tc.external) {
				t.Errorf("external initializers %v, want %v", gotExternal, tc.external)
			}
			if tc.dataFile == "" {
				if !proto.Equal(&disk, m.Proto) {
					t.Error("inline save: file differs from the model")
				}
			}
			got, err := Load(path)
			if err != nil {
				t.Fatal(err)
			}
			if len(got.Graph().Initializer) != len(m.Graph().Initializer) {
				t.Fatalf("%d initializers after load, want %d", len(got.Graph().Initializer), len(m.Graph().Initializer))
			}
			for i, want := range m.Graph().Initializer {
				g := got.Graph().Initializer[i]
				if g.GetName() != want.GetName() || !slices.Equal(g.Dims, want.Dims) || g.GetDataType() != want.GetDataType() {
					t.Errorf("initializer %d: %s %v %d, want %s %v %d", i, g.GetName(), g.Dims, g.GetDataType(), want.GetName(), want.Dims, want.GetDataType())
				}
				if IsExternal(g) {
					t.Errorf("%s: still external after Load", g.GetName())
				}
				if TensorDType(want) == String {
					if !proto.Equal(g, want) {
						t.Errorf("%s: string tensor changed", g.GetName())
					}
					continue
				}
				wb, _ := RawBytes(want)
				gb, err := RawBytes(g)
				if err != nil || !bytes.Equal(gb, wb) {
					t.Errorf("%s: data differs after round trip (err %v)", g.GetName(), err)
				}
			}
			if !proto.Equal(got.Graph().Node[0], m.Graph().Node[0]) || !slices.EqualFunc(got.Outputs(), m.Outputs(), valueInfoEqual) {
				t.Error("graph structure changed in the round trip")
			}
		})
	}
}

func valueInfoEqual(a, b ValueInfo) bool {
	return a.Name == b.Name && a.DType == b.DType && slices.Equal(a.Shape, b.Shape)
}

func TestSaveOverwritesAtomically(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "model.onnx")
	m := testModel(t)
	for range 2 {
		if err := Save(path, m, SaveOptions{ExternalDataFile: "model.onnx_data"}); err != nil {
			t.Fatal(err)
		}
	}
	ents, _ := os.ReadDir(dir)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if !slices.Equal(names, []string{"model.onnx", "model.onnx_data"}) {
		t.Errorf("directory holds %v, want only the model and its data (no temporary files)", names)
	}
}

func TestSaveBadOptions(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "model.onnx")
	for _, loc := range []string{"../outside.bin", "/abs/data.bin", "model.onnx"} {
		err := Save(path, testModel(t), SaveOptions{ExternalDataFile: loc})
		if err == nil || !strings.Contains(err.Error(), path) {
			t.Errorf("ExternalDataFile %q: error %v, want one naming %s", loc, err, path)
		}
	}
	if err := Save(filepath.Join(dir, "no", "such", "dir", "m.onnx"), testModel(t), SaveOptions{}); err == nil {
		t.Error("save into a missing directory: no error")
	}
}

func TestLoadErrors(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.onnx")
	if err := Save(good, testModel(t), SaveOptions{}); err != nil {
		t.Fatal(err)
	}
	full, _ := os.ReadFile(good)

	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	mkdir := func(name string) string {
		p := filepath.Join(dir, name)
		if err := os.Mkdir(p, 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	// externalModel saves a model with one external tensor "w" [4] float32
	// whose external_data entries are kv, next to a data file of dataLen
	// bytes (none if dataLen < 0).
	var externalModelDims func(name string, dims []int64, dataLen int, kv ...string) string
	externalModel := func(name string, dataLen int, kv ...string) string {
		return externalModelDims(name, []int64{4}, dataLen, kv...)
	}
	externalModelDims = func(name string, dims []int64, dataLen int, kv ...string) string {
		b := NewGraphBuilder("g")
		b.Input("x", Float32, D(4))
		b.NodeTo("Add", []string{"x", "w"}, []string{"y"})
		b.Output("y", Float32, D(4))
		m := b.Model(18)
		ext := &onnxpb.TensorProto{Name: ptr("w"), Dims: dims, DataType: ptr(int32(Float32)), DataLocation: onnxpb.TensorProto_EXTERNAL.Enum()}
		for i := 0; i < len(kv); i += 2 {
			ext.ExternalData = append(ext.ExternalData, &onnxpb.StringStringEntryProto{Key: ptr(kv[i]), Value: ptr(kv[i+1])})
		}
		m.Graph().Initializer = append(m.Graph().Initializer, ext)
		data, err := proto.Marshal(m.Proto)
		if err != nil {
			t.Fatal(err)
		}
		sub := filepath.Join(dir, name)
		os.MkdirAll(sub, 0o755)
		if dataLen >= 0 {
			write(filepath.Join(name, "model.onnx_data"), make([]byte, dataLen))
		}
		return write(filepath.Join(name, "model.onnx"), data)
	}

	tests := []struct {
		name string
		path string
		want []string // substrings of the error
		is   error
	}{
		{"missing model file", filepath.Join(dir, "nope.onnx"), []string{"nope.onnx"}, fs.ErrNotExist},
		{"truncated", write("truncated.onnx", full[:len(full)/2]), []string{"truncated.onnx", "truncated or corrupt protobuf"}, nil},
		{"truncated by one byte", write("short.onnx", full[:len(full)-1]), []string{"short.onnx", "truncated or corrupt protobuf"}, nil},
		{"garbage", write("garbage.onnx", []byte("\xff\xff\xff\xff not onnx")), []string{"garbage.onnx", "not a valid ONNX model"}, nil},
		{"empty", write("empty.onnx", nil), []string{"empty.onnx", "the file is empty (0 bytes), not an ONNX model"}, nil},
		{"missing external data file", externalModel("missing", -1, "location", "model.onnx_data"),
			[]string{"missing/model.onnx", `tensor "w"`, "missing external data file", filepath.Join(dir, "missing", "model.onnx_data")}, fs.ErrNotExist},
		{"offset past end", externalModel("offset", 16, "location", "model.onnx_data", "offset", "100", "length", "16"),
			[]string{"offset/model.onnx_data", "offset 100 + length 16 is past its end (16 bytes)"}, nil},
		{"length past end", externalModel("length", 20, "location", "model.onnx_data", "offset", "8", "length", "16"),
			[]string{"length/model.onnx_data", "offset 8 + length 16 is past its end (20 bytes)"}, nil},
		{"length disagrees with dims", externalModel("mismatch", 64, "location", "model.onnx_data", "length", "32"),
			[]string{"length 32 does not match float32[4] (16 bytes)"}, nil},
		{"no length, file too short", externalModel("short", 8, "location", "model.onnx_data"),
			[]string{"offset 0 + length 16 is past its end (8 bytes)"}, nil},
		{"bad offset", externalModel("badoff", 64, "location", "model.onnx_data", "offset", "-4"),
			[]string{`bad offset "-4"`}, nil},
		{"location escapes", externalModel("escape", 64, "location", "../model.onnx_data"),
			[]string{`location "../model.onnx_data" is outside the model's directory`}, nil},
		{"byte size overflows int64", externalModelDims("overflow", []int64{1<<62 + 1}, 4, "location", "model.onnx_data", "length", "4"),
			[]string{`tensor "w"`, "too large"}, nil},
		{"no location", externalModel("noloc", 64, "offset", "0"),
			[]string{"external data has no location"}, nil},
		// A directory where the model file is wanted: it was "not a valid
		// ONNX model (truncated or corrupt protobuf, 4096 bytes)".
		{"model file a directory", mkdir("dir.onnx"), []string{"dir.onnx", "is a directory: want an ONNX model file"}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(tc.path)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			if !strings.Contains(err.Error(), tc.path) {
				t.Errorf("error %q does not name the model file", err)
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("error %q is not %v", err, tc.is)
			}
		})
	}
	// The same external layout with valid offsets loads.
	p := externalModel("ok", 32, "location", "model.onnx_data", "offset", "16", "length", "16")
	if _, err := Load(p); err != nil {
		t.Errorf("valid external data: %v", err)
	}
}

func TestAccessors(t *testing.T) {
	m := testModel(t)
	if got := m.Inputs(); len(got) != 1 || got[0].String() != "x float32[batch_size,4]" {
		t.Errorf("Inputs() = %v", got)
	}
	if got, ok := m.Output("y"); !ok || got.String() != "y float32[batch_size,3]" {
		t.Errorf("Output(y) = %v, %v", got, ok)
	}
	if _, ok := m.Input("nope"); ok {
		t.Error("Input(nope) found")
	}
	inits := m.Initializers()
	if len(inits) != 7 || inits[1].Name != "big" || !slices.Equal(inits[1].Dims, []int64{3, 100}) || inits[1].DType != Float32 || inits[1].Bytes != 1200 {
		t.Errorf("Initializers()[1] = %+v", inits[1])
	}
	if inits[4].DType != Float16 || inits[4].Bytes != 2048 {
		t.Errorf("half initializer: %+v", inits[4])
	}
	if m.Initializer("typed") == nil || m.Initializer("nope") != nil {
		t.Error("Initializer lookup")
	}
	if m.Opset("") != 18 || m.Opset("ai.onnx") != 18 || m.Opset("com.microsoft") != 0 {
		t.Errorf("Opset: %d", m.Opset(""))
	}
	if m.Proto.GetIrVersion() != 8 {
		t.Errorf("IR version %d, want 8 for opset 18", m.Proto.GetIrVersion())
	}
	// An input that is also an initializer (a default) is not listed.
	m.Graph().Input = append(m.Graph().Input, newValueInfo("w", Float32, []Dim{D(4), D(3)}))
	if got := m.Inputs(); len(got) != 1 {
		t.Errorf("Inputs() with a defaulted initializer = %v", got)
	}
}

func TestBuilderNames(t *testing.T) {
	b := NewGraphBuilder("g")
	b.Input("x", Float32, D(1))
	a := b.Node("Relu", []string{"x"})
	b.SetScope("/layer.0")
	c := b.Node("Relu", []string{a})
	outs := b.NodeN("Split", []string{c}, 2, AttrInt("axis", 0))
	if a != "Relu_0" || c != "/layer.0/Relu_1" || !slices.Equal(outs, []string{"/layer.0/Split_2_out0", "/layer.0/Split_2_out1"}) {
		t.Errorf("names %q %q %q", a, c, outs)
	}
	// A fresh name skips names already taken.
	b.SetScope("")
	b.Input("Relu_3", Float32, D(1))
	if got := b.Node("Relu", []string{"x"}); got != "Relu_4" {
		t.Errorf("fresh name %q, want Relu_4", got)
	}
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(string), `"x" used twice`) {
			t.Errorf("duplicate name: recover() = %v", r)
		}
	}()
	b.Initializer("x", NewTensor("", nil, []float32{1}))
}

// FuzzDecode feeds arbitrary bytes to the decoder LoadGraph uses and to
// Probe's framing check: neither panics, Probe accepts whatever decodes
// with a graph, and whatever decodes re-encodes and decodes to the same
// model, with readers and accessors that do not panic.
func FuzzDecode(f *testing.F) {
	// A small seed: large inputs make the fuzzer slow.
	b := NewGraphBuilder("g")
	x := b.Input("x", Float32, P("batch_size"), D(2))
	w := b.Initializer("w", NewTensor("", []int64{2, 2}, []float32{1, 2, 3, 4}))
	h := b.Initializer("h", NewFloat16Tensor("", []int64{2}, []float32{1, 2}))
	b.Initializer("f", &onnxpb.TensorProto{Dims: []int64{2}, DataType: ptr(int32(Float32)), FloatData: []float32{5, 6}})
	y := b.Node("MatMul", []string{x, w})
	b.NodeTo("Add", []string{y, h, b.ConstInt64s(1, 2)}, []string{"y"}, AttrInts("perm", 1, 0))
	b.Output("y", Float32, P("batch_size"), D(2))
	data, err := proto.Marshal(b.Model(18).Proto)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data)
	f.Add(data[:len(data)/3])
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		probeErr := probe(bufio.NewReader(bytes.NewReader(data)), int64(len(data)), "fuzz")
		mp, err := decode(data, "fuzz")
		if err != nil {
			return
		}
		if probeErr != nil && len(data) > 0 {
			t.Fatalf("decodes with a graph but Probe refuses it: %v", probeErr)
		}
		m := &Model{Proto: mp}
		m.Inputs()
		m.Outputs()
		for _, it := range m.Initializers() {
			_ = it.DType.String()
		}
		for _, it := range m.Graph().GetInitializer() {
			RawBytes(it)
			Float32s(it)
		}
		again, err := proto.Marshal(mp)
		if err != nil {
			t.Fatal(err)
		}
		m2, err := decode(again, "fuzz")
		if err != nil || !proto.Equal(mp, m2) {
			t.Fatalf("re-decode: %v", err)
		}
	})
}
