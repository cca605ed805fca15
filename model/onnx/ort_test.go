package onnx_test

import (
	"google.golang.org/protobuf/proto"
	"math"
	"path/filepath"
	"testing"

	ort "github.com/yalue/onnxruntime_go"

	"github.com/spiral-rl/spiral/model/modeltest"
	"github.com/spiral-rl/spiral/model/onnx"
)

// TestSavedModelRunsInONNXRuntime builds y = x·W + b with the builder,
// saves it with W in an external data file, and checks that ONNX Runtime
// reading the files itself, and from Load's in-memory model, computes the
// same numbers as a plain loop.
func TestSavedModelRunsInONNXRuntime(t *testing.T) {
	rt := modeltest.Runtime(t)
	const in, out = 300, 5 // W is 6000 bytes: over the default threshold
	w := make([]float32, in*out)
	for i := range w {
		w[i] = float32(math.Sin(float64(i)))
	}
	bias := []float32{1, 2, 3, 4, 5}
	b := onnx.NewGraphBuilder("affine")
	x := b.Input("x", onnx.Float32, onnx.P("batch_size"), onnx.D(in))
	wn := b.Initializer("W", onnx.NewTensor("", []int64{in, out}, w))
	bn := b.Initializer("b", onnx.NewTensor("", []int64{out}, bias))
	b.NodeTo("Add", []string{b.Node("MatMul", []string{x, wn}), bn}, []string{"y"})
	b.Output("y", onnx.Float32, onnx.P("batch_size"), onnx.D(out))
	dir := t.TempDir()
	path := filepath.Join(dir, "model.onnx")
	if err := onnx.Save(path, b.Model(18), onnx.SaveOptions{ExternalDataFile: "model.onnx_data"}); err != nil {
		t.Fatal(err)
	}

	xs := make([]float32, 2*in)
	for i := range xs {
		xs[i] = float32(i%7) - 3
	}
	want := make([]float64, 2*out)
	for r := range 2 {
		for j := range out {
			s := float64(bias[j])
			for k := range in {
				s += float64(xs[r*in+k]) * float64(w[k*out+j])
			}
			want[r*out+j] = s
		}
	}
	so, err := rt.NewSessionOptions()
	if err != nil {
		t.Fatal(err)
	}
	defer so.Destroy()
	run := func(name string, s *ort.DynamicAdvancedSession) {
		t.Helper()
		defer s.Destroy()
		xt, err := ort.NewTensor(ort.NewShape(2, in), xs)
		if err != nil {
			t.Fatal(err)
		}
		defer xt.Destroy()
		outs := []ort.Value{nil}
		if err := s.Run([]ort.Value{xt}, outs); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		defer outs[0].Destroy()
		got := outs[0].(*ort.Tensor[float32]).GetData()
		for i := range want {
			if d := math.Abs(float64(got[i]) - want[i]); d > 1e-4 {
				t.Errorf("%s: y[%d] = %g, want %g", name, i, got[i], want[i])
			}
		}
	}
	s, err := ort.NewDynamicAdvancedSession(path, []string{"x"}, []string{"y"}, so)
	if err != nil {
		t.Fatalf("ONNX Runtime cannot open the saved model with external data: %v", err)
	}
	run("file", s)

	m, err := onnx.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	data, err := proto.Marshal(m.Proto)
	if err != nil {
		t.Fatal(err)
	}
	s, err = ort.NewDynamicAdvancedSessionWithONNXData(data, []string{"x"}, []string{"y"}, so)
	if err != nil {
		t.Fatal(err)
	}
	run("loaded", s)
}
