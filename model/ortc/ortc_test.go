package ortc_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	ort "github.com/yalue/onnxruntime_go"
	"google.golang.org/protobuf/proto"

	"github.com/spiral-rl/spiral/model/modeltest"
	"github.com/spiral-rl/spiral/model/onnx"
	"github.com/spiral-rl/spiral/model/ortc"
)

// TestSessionOptionsShared checks that ortc reaches the OrtSessionOptions
// that onnxruntime_go created: an entry set through the C API is read back
// through onnxruntime_go, and deterministic compute can be switched on.
func TestSessionOptionsShared(t *testing.T) {
	rt := modeltest.Runtime(t)
	api, err := ortc.Open(rt.LibraryPath())
	require.NoError(t, err)
	so, err := ort.NewSessionOptions()
	require.NoError(t, err)
	defer so.Destroy()
	require.NoError(t, api.AddSessionConfigEntry(so, "spiral.test.key", "42"))
	v, err := so.GetSessionConfigEntry("spiral.test.key")
	require.NoError(t, err)
	require.Equal(t, "42", v)
	require.NoError(t, api.SetDeterministicCompute(so, true))
}

// TestOpenNotLoaded: a library that this process has not loaded is an
// error naming it.
func TestOpenNotLoaded(t *testing.T) {
	_, err := ortc.Open("/nonexistent/libonnxruntime.so")
	require.ErrorContains(t, err, "/nonexistent/libonnxruntime.so is not loaded")
}

// addShapeModel is y = a + b (float, broadcast) and s = Shape(a).
func addShapeModel(t *testing.T) []byte {
	t.Helper()
	b := onnx.NewGraphBuilder("add")
	x := b.Input("a", onnx.Float32, onnx.P("n"), onnx.D(2))
	y := b.Input("b", onnx.Float32, onnx.D(2))
	b.NodeTo("Add", []string{x, y}, []string{"y"})
	b.NodeTo("Shape", []string{x}, []string{"s"})
	b.Output("y", onnx.Float32, onnx.P("n"), onnx.D(2))
	b.Output("s", onnx.Int64, onnx.D(2))
	raw, err := proto.Marshal(b.Model(18).Proto)
	require.NoError(t, err)
	return raw
}

// TestSessionRun runs a session through the C API: inputs are views of Go
// memory, an output ONNX Runtime allocates comes back with its shape and
// data, and a preallocated output is written in place.
func TestSessionRun(t *testing.T) {
	rt := modeltest.Runtime(t)
	api, err := ortc.Open(rt.LibraryPath())
	require.NoError(t, err)
	env, err := api.NewEnv()
	require.NoError(t, err)
	defer env.Close()
	so, err := ort.NewSessionOptions()
	require.NoError(t, err)
	defer so.Destroy()
	s, err := env.NewSession(addShapeModel(t), so, []string{"a", "b"}, []string{"y", "s"})
	require.NoError(t, err)
	defer s.Close()

	a, err := ortc.NewTensor(env, []int64{3, 2}, []float32{1, 2, 3, 4, 5, 6})
	require.NoError(t, err)
	defer a.Release()
	bias := []float32{10, 20}
	bv, err := ortc.NewTensor(env, []int64{2}, bias)
	require.NoError(t, err)
	defer bv.Release()

	out := []*ortc.Value{nil, nil}
	require.NoError(t, s.Run([]*ortc.Value{a, bv}, out))
	require.Equal(t, []int64{3, 2}, out[0].Shape())
	require.Equal(t, []float32{11, 22, 13, 24, 15, 26}, out[0].Float32s())
	require.Equal(t, []int64{3, 2}, out[1].Int64s())
	out[0].Release()
	out[1].Release()
	out[1].Release() // twice is safe

	// In place: the input view sees Go writes, the output view is filled.
	bias[0] = 100
	y := make([]float32, 6)
	yv, err := ortc.NewTensor(env, []int64{3, 2}, y)
	require.NoError(t, err)
	defer yv.Release()
	out = []*ortc.Value{yv, nil}
	require.NoError(t, s.Run([]*ortc.Value{a, bv}, out))
	defer out[1].Release()
	require.Equal(t, []float32{101, 22, 103, 24, 105, 26}, y)

	// An ONNX Runtime-allocated tensor: written from Go, read by a run,
	// and a run can write into one.
	av, err := ortc.Alloc[float32](env, []int64{3, 2})
	require.NoError(t, err)
	defer av.Release()
	require.Equal(t, []int64{3, 2}, av.Shape())
	copy(av.Float32s(), []float32{0, 1, 0, 1, 0, 1})
	dst, err := ortc.Alloc[float32](env, []int64{3, 2})
	require.NoError(t, err)
	defer dst.Release()
	out = []*ortc.Value{dst, nil}
	require.NoError(t, s.Run([]*ortc.Value{av, bv}, out))
	defer out[1].Release()
	require.Equal(t, []float32{100, 21, 100, 21, 100, 21}, dst.Float32s())
	_, err = ortc.Alloc[float32](env, []int64{-1})
	require.ErrorContains(t, err, "negative dim")
}

// TestSessionErrors: wrong arity, a bad model and a shape that does not
// match its data are errors, not crashes.
func TestSessionErrors(t *testing.T) {
	rt := modeltest.Runtime(t)
	api, err := ortc.Open(rt.LibraryPath())
	require.NoError(t, err)
	env, err := api.NewEnv()
	require.NoError(t, err)
	defer env.Close()
	so, err := ort.NewSessionOptions()
	require.NoError(t, err)
	defer so.Destroy()
	_, err = env.NewSession([]byte("not a model"), so, []string{"a"}, []string{"y"})
	require.ErrorContains(t, err, "ortc: create session")
	_, err = ortc.NewTensor(env, []int64{2, 2}, []float32{1, 2, 3})
	require.ErrorContains(t, err, "needs 4 values, have 3")
	s, err := env.NewSession(addShapeModel(t), so, []string{"a", "b"}, []string{"y", "s"})
	require.NoError(t, err)
	defer s.Close()
	require.ErrorContains(t, s.Run(nil, []*ortc.Value{nil, nil}), "0 inputs and 2 outputs; the session has 2 and 2")
	a, err := ortc.NewTensor(env, []int64{1, 3}, []float32{1, 2, 3})
	require.NoError(t, err)
	defer a.Release()
	bv, err := ortc.NewTensor(env, []int64{2}, []float32{1, 2})
	require.NoError(t, err)
	defer bv.Release()
	require.ErrorContains(t, s.Run([]*ortc.Value{a, bv}, []*ortc.Value{nil, nil}), "ortc: run")
}
