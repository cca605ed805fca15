package qwen3_test

import (
	"bytes"
	"context"
	"errors"
	"google.golang.org/protobuf/proto"
	"io/fs"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/spiral-rl/spiral/model/onnx"
	"github.com/spiral-rl/spiral/model/qwen3"
)

func TestBuildSignature(t *testing.T) {
	c := qwen3.Tiny()
	m, err := qwen3.Build(c, 1)
	if err != nil {
		t.Fatal(err)
	}
	var in, out []string
	for _, v := range m.Inputs() {
		in = append(in, v.String())
	}
	for _, v := range m.Outputs() {
		out = append(out, v.String())
	}
	wantIn := []string{
		"input_ids int64[batch_size,sequence_length]",
		"attention_mask int64[batch_size,total_sequence_length]",
		"position_ids int64[batch_size,sequence_length]",
		"past_key_values.0.key float32[batch_size,2,past_sequence_length,32]",
		"past_key_values.0.value float32[batch_size,2,past_sequence_length,32]",
		"past_key_values.1.key float32[batch_size,2,past_sequence_length,32]",
		"past_key_values.1.value float32[batch_size,2,past_sequence_length,32]",
	}
	wantOut := []string{
		"logits float32[batch_size,sequence_length,100]",
		"present.0.key float32[batch_size,2,total_sequence_length,32]",
		"present.0.value float32[batch_size,2,total_sequence_length,32]",
		"present.1.key float32[batch_size,2,total_sequence_length,32]",
		"present.1.value float32[batch_size,2,total_sequence_length,32]",
	}
	if !slices.Equal(in, wantIn) {
		t.Errorf("inputs:\n%s\nwant:\n%s", strings.Join(in, "\n"), strings.Join(wantIn, "\n"))
	}
	if !slices.Equal(out, wantOut) {
		t.Errorf("outputs:\n%s\nwant:\n%s", strings.Join(out, "\n"), strings.Join(wantOut, "\n"))
	}
	var inits []string
	for _, it := range m.Initializers() {
		inits = append(inits, it.Name)
		if it.DType != onnx.Float32 {
			t.Errorf("%s is %s, want float32", it.Name, it.DType)
		}
	}
	if !slices.Equal(inits, qwen3.ParamNames(c)) {
		t.Errorf("initializers %v\nwant ParamNames %v", inits, qwen3.ParamNames(c))
	}
	for name, dims := range map[string][]int64{
		"model.embed_tokens.weight":                      {100, 64},
		"model.layers.0.self_attn.q_proj.weight":         {64, 128},
		"model.layers.1.self_attn.k_proj.weight":         {64, 64},
		"model.layers.0.self_attn.o_proj.weight":         {128, 64},
		"model.layers.0.self_attn.q_norm.weight":         {32},
		"model.layers.1.mlp.down_proj.weight":            {128, 64},
		"model.layers.1.post_attention_layernorm.weight": {64},
		"model.norm.weight":                              {64},
	} {
		if got := m.Initializer(name).GetDims(); !slices.Equal(got, dims) {
			t.Errorf("%s dims %v, want %v", name, got, dims)
		}
	}
	if m.Initializer(qwen3.LMHeadWeight) != nil {
		t.Error("tied model has lm_head.weight")
	}
	untied := c
	untied.TiedEmbeddings = false
	mu, err := qwen3.Build(untied, 1)
	if err != nil {
		t.Fatal(err)
	}
	if got := mu.Initializer(qwen3.LMHeadWeight).GetDims(); !slices.Equal(got, []int64{64, 100}) {
		t.Errorf("lm_head.weight dims %v, want [64 100]", got)
	}
	if m.Opset("") != 18 || len(m.Proto.OpsetImport) != 1 {
		t.Errorf("opset imports %v, want only ai.onnx 18", m.Proto.OpsetImport)
	}
}

// standardOps are the primitive ONNX operators the generated graph may
// use: the autodiff package differentiates exactly these.
var standardOps = map[string]bool{
	"Gather": true, "MatMul": true, "Add": true, "Sub": true, "Mul": true, "Div": true, "Pow": true,
	"ReduceMean": true, "Sqrt": true, "Reciprocal": true, "Sigmoid": true, "Softmax": true,
	"Transpose": true, "Reshape": true, "Concat": true, "Slice": true, "Unsqueeze": true,
	"Squeeze": true, "Expand": true, "Where": true, "Cast": true, "Cos": true, "Sin": true,
	"Equal": true, "Less": true, "LessOrEqual": true, "And": true, "Shape": true, "Range": true,
	"ConstantOfShape": true, "Constant": true, "Neg": true, "Identity": true,
}

func TestOnlyStandardPrimitiveOps(t *testing.T) {
	for _, tc := range testConfigs() {
		m, err := qwen3.Build(tc.cfg, 1)
		if err != nil {
			t.Fatal(err)
		}
		used := map[string]int{}
		for _, n := range m.Graph().GetNode() {
			if n.GetDomain() != "" || !standardOps[n.GetOpType()] {
				t.Errorf("%s: node %s is %s.%s, not a standard primitive op", tc.name, n.GetName(), n.GetDomain(), n.GetOpType())
			}
			used[n.GetOpType()]++
		}
		t.Logf("%s: %d nodes, ops %v", tc.name, len(m.Graph().GetNode()), used)
	}
}

func TestBuildDeterministic(t *testing.T) {
	c := qwen3.Tiny()
	marshal := func(seed uint64) []byte {
		m, err := qwen3.Build(c, seed)
		if err != nil {
			t.Fatal(err)
		}
		b, err := proto.Marshal(m.Proto)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	a, b, other := marshal(5), marshal(5), marshal(6)
	if !bytes.Equal(a, b) {
		t.Error("same seed, different models")
	}
	if bytes.Equal(a, other) {
		t.Error("different seeds, same model")
	}
	m, _ := qwen3.Build(c, 5)
	w, _ := onnx.Float32s(m.Initializer("model.layers.0.mlp.up_proj.weight"))
	var mean, sq float64
	for _, v := range w {
		mean += float64(v)
		sq += float64(v) * float64(v)
	}
	mean /= float64(len(w))
	std := sq/float64(len(w)) - mean*mean
	if std = math.Sqrt(std); std < 0.018 || std > 0.022 || mean > 0.002 || mean < -0.002 {
		t.Errorf("up_proj init mean %.4f std %.4f, want about 0 and %g", mean, std, qwen3.InitStd)
	}
	norm, _ := onnx.Float32s(m.Initializer("model.layers.1.self_attn.k_norm.weight"))
	for _, v := range norm {
		if v != 1 {
			t.Fatalf("k_norm init %g, want 1", v)
		}
	}
}

func TestBuildInvalidConfig(t *testing.T) {
	c := qwen3.Tiny()
	c.KVHeads = 3
	if _, err := qwen3.Build(c, 1); err == nil || !strings.Contains(err.Error(), "num_key_value_heads 3") {
		t.Errorf("Build with 3 KV heads for 4 heads: %v", err)
	}
}

func TestWriteDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tiny")
	c := qwen3.Tiny()
	if err := qwen3.WriteDir(dir, c, 3); err != nil {
		t.Fatal(err)
	}
	m, err := onnx.Load(filepath.Join(dir, "model.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	built, _ := qwen3.Build(c, 3)
	a, _ := proto.Marshal(m.Proto)
	b, _ := proto.Marshal(built.Proto)
	if !bytes.Equal(a, b) {
		t.Error("model.onnx differs from Build's model")
	}
	got, err := qwen3.LoadConfig(filepath.Join(dir, "config.json"))
	if err != nil || got != c {
		t.Errorf("config.json: %+v, %v; want %+v", got, err, c)
	}
	// Over a model whose weights were external, an inline model leaves no
	// stale model.onnx_data beside it.
	stale := filepath.Join(dir, "model.onnx_data")
	if err := os.WriteFile(stale, []byte("weights of the replaced model"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := qwen3.WriteDir(dir, c, 4); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stale); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("model.onnx_data after an inline model was written over it: %v", err)
	}
}

// countdown is a context that ends after its Err has been asked n times:
// a Ctrl-C arriving while a model is built, at a point the test chooses.
type countdown struct {
	context.Context
	n int
}

func (c *countdown) Err() error {
	if c.n <= 0 {
		return context.Canceled
	}
	c.n--
	return nil
}

// TestWriteDirContext: an interruption before anything is written, or
// while the weights are drawn, ends WriteDirContext with the context's
// error and writes no file; an uninterrupted context writes what
// WriteDir writes.
func TestWriteDirContext(t *testing.T) {
	c := qwen3.Tiny()
	for _, n := range []int{0, 1, 5} {
		dir := filepath.Join(t.TempDir(), "m")
		err := qwen3.WriteDirContext(&countdown{context.Background(), n}, dir, c, 3)
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("ended after %d checks: %v, want context.Canceled", n, err)
		}
		if entries, _ := os.ReadDir(dir); len(entries) > 0 {
			t.Errorf("ended after %d checks: %d files written", n, len(entries))
		}
		if _, err := qwen3.BuildContext(&countdown{context.Background(), n}, c, 3); !errors.Is(err, context.Canceled) {
			t.Errorf("BuildContext ended after %d checks: %v", n, err)
		}
	}
	dir := filepath.Join(t.TempDir(), "m")
	if err := qwen3.WriteDirContext(&countdown{context.Background(), 1 << 30}, dir, c, 3); err != nil {
		t.Fatal(err)
	}
	m, err := onnx.Load(filepath.Join(dir, "model.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	built, _ := qwen3.Build(c, 3)
	if !proto.Equal(m.Proto, built.Proto) {
		t.Error("model.onnx differs from Build's model")
	}
}

// checkerScript runs the Python onnx package's full checker, with strict
// shape inference, on each model named in argv[1:], prints the inferred
// shape of every graph output, and ends with "ok <path>" per model.
const checkerScript = `
import sys, onnx
for path in sys.argv[1:]:
    m = onnx.load(path)
    onnx.checker.check_model(m, full_check=True)
    inferred = onnx.shape_inference.infer_shapes(m, check_type=True, strict_mode=True, data_prop=True)
    for o in inferred.graph.output:
        dims = [d.dim_param or str(d.dim_value) for d in o.type.tensor_type.shape.dim]
        print(o.name, onnx.helper.tensor_dtype_to_np_dtype(o.type.tensor_type.elem_type), dims)
    print("onnx", onnx.__version__, "ok", path)
`

// TestONNXChecker passes generated models through
// onnx.checker.check_model(m, full_check=True) and strict shape inference
// in one python3 process. It needs the Python onnx package
// (pip install onnx) and skips without it. A model with a wrong weight
// shape must be rejected, so the test cannot pass vacuously.
func TestONNXChecker(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not found; install Python 3 and run `pip install onnx` to run the ONNX checker test")
	}
	if out, err := exec.Command(py, "-c", "import onnx").CombinedOutput(); err != nil {
		t.Skipf("the Python onnx package is not importable; run `pip install onnx` to run the ONNX checker test (%v: %s)", err, bytes.TrimSpace(out))
	}
	var paths []string
	for i, tc := range testConfigs() {
		dir := filepath.Join(t.TempDir(), strconv.Itoa(i))
		if err := qwen3.WriteDir(dir, tc.cfg, 1); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, filepath.Join(dir, "model.onnx"))
	}
	out, err := exec.Command(py, append([]string{"-c", checkerScript}, paths...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("onnx checker rejects a generated model: %v\n%s", err, out)
	}
	t.Logf("%s", out)
	for _, p := range paths {
		if !strings.Contains(string(out), "ok "+p) {
			t.Errorf("no verdict for %s", p)
		}
	}

	// A q_proj with 50 input rows cannot multiply the 64-wide hidden state.
	m, err := qwen3.Build(qwen3.Tiny(), 1)
	if err != nil {
		t.Fatal(err)
	}
	for i, it := range m.Graph().Initializer {
		if it.GetName() == qwen3.LayerWeight(0, "self_attn.q_proj") {
			m.Graph().Initializer[i] = onnx.NewTensor(it.GetName(), []int64{50, 128}, make([]float32, 50*128))
		}
	}
	bad := filepath.Join(t.TempDir(), "bad.onnx")
	if err := onnx.Save(bad, m, onnx.SaveOptions{}); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(py, "-c", checkerScript, bad).CombinedOutput(); err == nil {
		t.Errorf("the checker accepts a model with a [50, 128] q_proj:\n%s", out)
	}
}
