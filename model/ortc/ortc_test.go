package ortc_test

import (
	"math"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"
	ort "github.com/yalue/onnxruntime_go"
	"google.golang.org/protobuf/proto"

	"github.com/spiral-rl/spiral/model/modeltest"
	"github.com/spiral-rl/spiral/model/modeltest/perturbed"
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
// openEnv opens the test runtime's environment through ortc and session
// options for it, closed when the test ends.
func openEnv(t *testing.T) (*ortc.Env, *ort.SessionOptions) {
	t.Helper()
	_, env, so := openAPI(t)
	return env, so
}

// addSession is a session of addShapeModel (inputs a, b; outputs y, s),
// closed when the test ends.
func addSession(t *testing.T, env *ortc.Env, so *ort.SessionOptions) *ortc.Session {
	t.Helper()
	s, err := env.NewSession(addShapeModel(t), so, []string{"a", "b"}, []string{"y", "s"})
	require.NoError(t, err)
	t.Cleanup(s.Close)
	return s
}

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
	env, so := openEnv(t)
	s := addSession(t, env, so)

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

// TestReleasedValues: a released Value given to a run as a preallocated
// output, or bound in a binding, is an error: not an output that the run
// allocates and nothing releases, not a null value that ONNX Runtime
// dereferences.
func TestReleasedValues(t *testing.T) {
	env, so := openEnv(t)
	s := addSession(t, env, so)
	a, err := ortc.NewTensor(env, []int64{1, 2}, []float32{1, 2})
	require.NoError(t, err)
	defer a.Release()
	bv, err := ortc.NewTensor(env, []int64{2}, []float32{10, 20})
	require.NoError(t, err)
	defer bv.Release()
	gone, err := ortc.NewTensor(env, []int64{1, 2}, []float32{0, 0})
	require.NoError(t, err)
	gone.Release()

	require.ErrorContains(t, s.Run([]*ortc.Value{a, bv}, []*ortc.Value{gone, nil}), `output "y" is released`)

	b, err := s.NewBinding()
	require.NoError(t, err)
	defer b.Release()
	require.ErrorContains(t, b.BindInput("a", gone), `bind input "a"`)
	require.ErrorContains(t, b.BindOutput("y", gone), `bind output "y"`)
	cp := env.NewCopier(so)
	defer cp.Close()
	require.Error(t, cp.Copy(a, gone))
	require.Error(t, cp.Copy(gone, a))
}

// TestClosedSessionAndReleasedBinding: a closed Session, a released
// Binding and a closed Copier answer every call with an error naming
// what is gone (Clear does nothing), not a count of zero inputs, a crash
// in ONNX Runtime, which dereferences the null session or binding, or a
// panic on the Copier's dropped map.
func TestClosedSessionAndReleasedBinding(t *testing.T) {
	env, so := openEnv(t)
	info, err := env.NewMemoryInfo("Cpu", 0)
	require.NoError(t, err)
	defer info.Release()
	a, err := ortc.NewTensor(env, []int64{1, 2}, []float32{1, 2})
	require.NoError(t, err)
	defer a.Release()
	bv, err := ortc.NewTensor(env, []int64{2}, []float32{10, 20})
	require.NoError(t, err)
	defer bv.Release()

	open := addSession(t, env, so)
	released, err := open.NewBinding()
	require.NoError(t, err)
	released.Release()
	released.Release()
	released.Clear()
	const gone = "the binding is released"
	require.ErrorContains(t, open.RunBinding(released), gone)
	require.ErrorContains(t, released.BindInput("a", a), gone)
	require.ErrorContains(t, released.BindOutputTo("y", info), gone)
	_, err = released.Outputs()
	require.ErrorContains(t, err, gone)

	b, err := open.NewBinding()
	require.NoError(t, err)
	defer b.Release()
	s, err := env.NewSession(addShapeModel(t), so, []string{"a", "b"}, []string{"y", "s"})
	require.NoError(t, err)
	s.Close()
	s.Close()
	const closed = "the session is closed"
	require.ErrorContains(t, s.Run([]*ortc.Value{a, bv}, []*ortc.Value{nil, nil}), closed)
	require.ErrorContains(t, s.RunBinding(b), closed)
	_, err = s.NewBinding()
	require.ErrorContains(t, err, closed)
	_, err = s.NewAllocator(info)
	require.ErrorContains(t, err, closed)

	cp := env.NewCopier(so)
	cp.Close()
	out, err := ortc.NewTensor(env, []int64{2}, []float32{0, 0})
	require.NoError(t, err)
	defer out.Release()
	require.EqualError(t, cp.Copy(out, bv), "ortc: copy: the copier is closed")
	_, err = cp.NewAllocator(info)
	require.EqualError(t, err, "ortc: copy: the copier is closed")
}

// TestSessionErrors: wrong arity, a bad model and a shape that does not
// match its data are errors, not crashes.
func TestSessionErrors(t *testing.T) {
	env, so := openEnv(t)
	_, err := env.NewSession([]byte("not a model"), so, []string{"a"}, []string{"y"})
	require.ErrorContains(t, err, "ortc: create session")
	_, err = ortc.NewTensor(env, []int64{2, 2}, []float32{1, 2, 3})
	require.ErrorContains(t, err, "needs 4 values, have 3")
	s := addSession(t, env, so)
	require.ErrorContains(t, s.Run(nil, []*ortc.Value{nil, nil}), "0 inputs and 2 outputs; the session has 2 and 2")
	a, err := ortc.NewTensor(env, []int64{1, 3}, []float32{1, 2, 3})
	require.NoError(t, err)
	defer a.Release()
	bv, err := ortc.NewTensor(env, []int64{2}, []float32{1, 2})
	require.NoError(t, err)
	defer bv.Release()
	require.ErrorContains(t, s.Run([]*ortc.Value{a, bv}, []*ortc.Value{nil, nil}), "ortc: run")
}

// cpuTwin returns the CPU's memory info and s's allocator for it (the
// CPU twin of a device), released when the test ends.
func cpuTwin(t *testing.T, env *ortc.Env, s *ortc.Session) (*ortc.MemoryInfo, *ortc.Allocator) {
	t.Helper()
	info, err := env.NewMemoryInfo("Cpu", 0)
	require.NoError(t, err)
	alloc, err := s.NewAllocator(info)
	require.NoError(t, err)
	t.Cleanup(func() {
		alloc.Release()
		info.Release()
	})
	return info, alloc
}

// runAdd runs the add session s through a binding: inputs a and b,
// output y into the preallocated y and s allocated on info. The binding
// is released when the test ends.
func runAdd(t *testing.T, s *ortc.Session, a, b, y *ortc.Value, info *ortc.MemoryInfo) *ortc.Binding {
	t.Helper()
	bind, err := s.NewBinding()
	require.NoError(t, err)
	t.Cleanup(bind.Release)
	require.NoError(t, bind.BindInput("a", a))
	require.NoError(t, bind.BindInput("b", b))
	require.NoError(t, bind.BindOutput("y", y))
	require.NoError(t, bind.BindOutputTo("s", info))
	require.NoError(t, s.RunBinding(bind))
	return bind
}

// TestBindingCPUTwin runs a session through an IoBinding on tensors
// allocated by its allocator for a memory info, the path CUDA takes,
// with the CPU's memory info (the CPU twin): results equal a plain run,
// a preallocated output is written in place, an output bound to the
// memory info is allocated there, and a Copier moves data both ways and
// counts the bytes.
func TestBindingCPUTwin(t *testing.T) {
	env, so := openEnv(t)
	s := addSession(t, env, so)
	info, alloc := cpuTwin(t, env, s)

	host, err := ortc.NewTensor(env, []int64{3, 2}, []float32{1, 2, 3, 4, 5, 6})
	require.NoError(t, err)
	defer host.Release()
	bias, err := ortc.NewTensor(env, []int64{2}, []float32{10, 20})
	require.NoError(t, err)
	defer bias.Release()
	a, err := ortc.AllocOn[float32](alloc, []int64{3, 2})
	require.NoError(t, err)
	defer a.Release()
	require.False(t, a.OnDevice(), "the CPU twin's memory is the host's")
	cp := env.NewCopier(so)
	defer cp.Close()
	require.NoError(t, cp.Copy(a, host))
	require.Equal(t, int64(24), env.CopiedBytes())
	y, err := ortc.AllocOn[float32](alloc, []int64{3, 2})
	require.NoError(t, err)
	defer y.Release()

	b := runAdd(t, s, a, bias, y, info)
	want := []float32{11, 22, 13, 24, 15, 26}
	require.Equal(t, want, y.Float32s(), "the preallocated output is written in place")
	outs, err := b.Outputs()
	require.NoError(t, err)
	require.Len(t, outs, 2)
	require.Equal(t, want, outs[0].Float32s())
	require.Equal(t, []int64{3, 2}, outs[1].Int64s(), "the output allocated on the memory info")
	for _, o := range outs {
		o.Release()
	}

	back, err := ortc.NewTensor(env, []int64{3, 2}, make([]float32, 6))
	require.NoError(t, err)
	defer back.Release()
	require.NoError(t, cp.Copy(back, y))
	require.Equal(t, want, back.Float32s())
	require.Equal(t, int64(48), env.CopiedBytes(), "both copies counted")
	require.ErrorContains(t, cp.Copy(bias, y), "6 values")

	// A second run on the same binding sees new input data.
	copy(a.Float32s(), []float32{0, 0, 0, 0, 0, 0})
	require.NoError(t, s.RunBinding(b))
	require.Equal(t, []float32{10, 20, 10, 20, 10, 20}, y.Float32s())
	b.Clear()
	require.Error(t, s.RunBinding(b), "nothing bound")

	_, err = env.NewMemoryInfo("Tpu", 0)
	require.ErrorContains(t, err, "want Cpu or Cuda")
	// A session without the CUDA provider has no allocator for CUDA memory.
	cuda, err := env.NewMemoryInfo("Cuda", 0)
	require.NoError(t, err)
	defer cuda.Release()
	_, err = s.NewAllocator(cuda)
	require.ErrorContains(t, err, "allocator for Cuda:0")
}

// TestViewWritesItsTensor checks Value.View on the CPU twin: a run whose
// output is bound to a view of rows 1..2 of a tensor writes those rows of
// it and leaves the others, a view reads what its tensor holds, and
// views out of range or of tensors not allocated on a memory info are
// refused.
func TestViewWritesItsTensor(t *testing.T) {
	env, so := openEnv(t)
	s := addSession(t, env, so)
	info, alloc := cpuTwin(t, env, s)

	whole, err := ortc.AllocOn[float32](alloc, []int64{4, 2})
	require.NoError(t, err)
	defer whole.Release()
	copy(whole.Float32s(), []float32{-1, -1, -1, -1, -1, -1, -1, -1})
	a, err := ortc.NewTensor(env, []int64{2, 2}, []float32{1, 2, 3, 4})
	require.NoError(t, err)
	defer a.Release()
	bias, err := ortc.NewTensor(env, []int64{2}, []float32{10, 20})
	require.NoError(t, err)
	defer bias.Release()
	rows, err := whole.View(2, []int64{2, 2})
	require.NoError(t, err)
	defer rows.Release()
	require.Equal(t, []int64{2, 2}, rows.Shape())

	runAdd(t, s, a, bias, rows, info)
	require.Equal(t, []float32{-1, -1, 11, 22, 13, 24, -1, -1}, whole.Float32s())
	last, err := whole.View(6, []int64{1, 2})
	require.NoError(t, err)
	defer last.Release()
	require.Equal(t, []float32{-1, -1}, last.Float32s())

	empty, err := whole.View(8, []int64{2, 0})
	require.NoError(t, err)
	defer empty.Release()
	require.Equal(t, []int64{2, 0}, empty.Shape())
	require.Empty(t, empty.Float32s())

	_, err = whole.View(6, []int64{2, 2})
	require.ErrorContains(t, err, "4 values from 6 in a tensor of 8")
	// An offset so large that offset + n wraps is out of range too, not
	// a view before the tensor's first value.
	_, err = whole.View(math.MaxInt, []int64{1})
	require.ErrorContains(t, err, "in a tensor of 8")
	_, err = a.View(0, []int64{2})
	require.ErrorContains(t, err, "not allocated on a memory info")
	// A released tensor's memory is gone: a view of it would be a
	// tensor over an address that is no longer (or never was) its.
	gone, err := ortc.AllocOn[float32](alloc, []int64{4, 2})
	require.NoError(t, err)
	gone.Release()
	_, err = gone.View(2, []int64{2, 2})
	require.EqualError(t, err, "ortc: view of a released tensor of shape [4 2]")
}

// TestDeviceTwinIsSealed checks the device twin (NewTwinMemoryInfo):
// tensors allocated on it, their views and outputs bound with
// BindOutputOn are Placed there and cannot be read from Go, as device
// tensors cannot; runs and a Copier still move their data, and an
// output bound with BindOutputOn has views like an allocated tensor.
func TestDeviceTwinIsSealed(t *testing.T) {
	env, so := openEnv(t)
	s := addSession(t, env, so)
	info, err := env.NewTwinMemoryInfo()
	require.NoError(t, err)
	defer info.Release()
	require.Equal(t, "Cpu:0 (device twin)", info.String())
	alloc, err := s.NewAllocator(info)
	require.NoError(t, err)
	defer alloc.Release()

	a, err := ortc.AllocOn[float32](alloc, []int64{3, 2})
	require.NoError(t, err)
	defer a.Release()
	require.True(t, a.OnDevice())
	require.True(t, a.Placed())
	require.Panics(t, func() { a.Float32s() }, "the twin's tensors are not Go's to read")
	row, err := a.View(2, []int64{1, 2})
	require.NoError(t, err)
	defer row.Release()
	require.True(t, row.OnDevice(), "nor are their views")

	cp := env.NewCopier(so)
	defer cp.Close()
	host, err := ortc.NewTensor(env, []int64{3, 2}, []float32{1, 2, 3, 4, 5, 6})
	require.NoError(t, err)
	defer host.Release()
	require.NoError(t, cp.Copy(a, host))
	bias, err := ortc.NewTensor(env, []int64{2}, []float32{10, 20})
	require.NoError(t, err)
	defer bias.Release()

	bind, err := s.NewBinding()
	require.NoError(t, err)
	defer bind.Release()
	require.NoError(t, bind.BindInput("a", a))
	require.NoError(t, bind.BindInput("b", bias))
	require.NoError(t, bind.BindOutputOn("y", alloc))
	require.NoError(t, bind.BindOutputTo("s", info))
	require.NoError(t, s.RunBinding(bind))
	outs, err := bind.Outputs()
	require.NoError(t, err)
	defer func() {
		for _, o := range outs {
			o.Release()
		}
	}()
	y, shape := outs[0], outs[1]
	require.True(t, y.Placed(), "an output bound on an allocator is placed in its memory")
	require.True(t, y.OnDevice())
	require.False(t, shape.Placed(), "an output bound to a memory info alone is not")
	last, err := y.View(4, []int64{2})
	require.NoError(t, err)
	defer last.Release()
	got, err := ortc.NewTensor(env, []int64{2}, make([]float32, 2))
	require.NoError(t, err)
	defer got.Release()
	require.NoError(t, cp.Copy(got, last))
	require.Equal(t, []float32{15, 26}, got.Float32s())
}

// TestAllocatorOutlivedByTensor: a tensor from AllocOn frees its memory
// through the OrtAllocator it came from, so releasing the Allocator
// first must not free that OrtAllocator under it. The scenario runs in a
// child process whose glibc malloc overwrites freed memory (no tcache,
// MALLOC_PERTURB_), where a use after free reads a wild function
// pointer and crashes rather than passing by luck. An allocation on, or
// statistics of, a released Allocator are errors.
func TestAllocatorOutlivedByTensor(t *testing.T) {
	if !perturbed.InChild(t) {
		return
	}
	env, so := openEnv(t)
	s := addSession(t, env, so)
	info, err := env.NewMemoryInfo("Cpu", 0)
	require.NoError(t, err)
	defer info.Release()
	for range 20 {
		alloc, err := s.NewAllocator(info)
		require.NoError(t, err)
		v, err := ortc.AllocOn[float32](alloc, []int64{1024})
		require.NoError(t, err)
		w, err := ortc.AllocOn[float32](alloc, []int64{16})
		require.NoError(t, err)
		alloc.Release()
		_, err = ortc.AllocOn[float32](alloc, []int64{4})
		require.ErrorContains(t, err, "released")
		_, err = alloc.Stats()
		require.ErrorContains(t, err, "released")
		v.Release()
		w.Release()
		alloc.Release()
	}
}

// TestBindingOutlivesAllocator: a tensor from AllocOn bound in a Binding
// and then released stays the binding's (its own reference), and so does
// the OrtAllocator that frees the tensor's memory: releasing the
// Allocator next must not free it under the binding, whose runs still
// write the tensor and whose release (or Clear) frees it. An output the
// binding returns for that tensor (Outputs: another reference to it)
// holds the OrtAllocator too. Run in a child process (perturbed.InChild).
func TestBindingOutlivesAllocator(t *testing.T) {
	if !perturbed.InChild(t) {
		return
	}
	env, so := openEnv(t)
	s := addSession(t, env, so)
	info, err := env.NewMemoryInfo("Cpu", 0)
	require.NoError(t, err)
	defer info.Release()
	a, err := ortc.NewTensor(env, []int64{1, 2}, []float32{1, 2})
	require.NoError(t, err)
	defer a.Release()
	bv, err := ortc.NewTensor(env, []int64{2}, []float32{10, 20})
	require.NoError(t, err)
	defer bv.Release()
	for i := range 20 {
		alloc, err := s.NewAllocator(info)
		require.NoError(t, err)
		y, err := ortc.AllocOn[float32](alloc, []int64{1, 2})
		require.NoError(t, err)
		b, err := s.NewBinding()
		require.NoError(t, err)
		require.NoError(t, b.BindInput("a", a))
		require.NoError(t, b.BindInput("b", bv))
		require.NoError(t, b.BindOutput("y", y))
		require.NoError(t, b.BindOutputTo("s", info))
		y.Release()
		alloc.Release()
		require.NoError(t, s.RunBinding(b))
		outs, err := b.Outputs()
		require.NoError(t, err)
		require.Equal(t, []float32{11, 22}, outs[0].Float32s())
		if i%2 == 0 {
			b.Clear()
		}
		b.Release()
		for range 100 { // reuse of freed memory
			x, err := ortc.Alloc[float32](env, []int64{8})
			require.NoError(t, err)
			x.Release()
		}
		require.Equal(t, []float32{11, 22}, outs[0].Float32s())
		for _, o := range outs {
			o.Release()
		}
	}
}

// TestBindingKeepsGoMemory: a Value over Go memory bound in a Binding and
// then released is still read by the binding's runs (ONNX Runtime's
// binding holds its own reference to the tensor, as it does for tensors
// it allocated), so the binding keeps that memory alive: collections and
// new allocations before the run do not change what it reads.
func TestBindingKeepsGoMemory(t *testing.T) {
	env, so := openEnv(t)
	s := addSession(t, env, so)
	info, err := env.NewMemoryInfo("Cpu", 0)
	require.NoError(t, err)
	defer info.Release()
	const rows = 1 << 18
	b, err := s.NewBinding()
	require.NoError(t, err)
	defer b.Release()
	func() {
		data := make([]float32, 2*rows)
		for i := range data {
			data[i] = 1
		}
		a, err := ortc.NewTensor(env, []int64{rows, 2}, data)
		require.NoError(t, err)
		require.NoError(t, b.BindInput("a", a))
		a.Release()
	}()
	bias, err := ortc.NewTensor(env, []int64{2}, []float32{10, 20})
	require.NoError(t, err)
	defer bias.Release()
	y := make([]float32, 2*rows)
	yv, err := ortc.NewTensor(env, []int64{rows, 2}, y)
	require.NoError(t, err)
	defer yv.Release()
	require.NoError(t, b.BindInput("b", bias))
	require.NoError(t, b.BindOutput("y", yv))
	require.NoError(t, b.BindOutputTo("s", info))
	var junk [][]float32
	for range 8 {
		runtime.GC()
		j := make([]float32, 2*rows)
		for i := range j {
			j[i] = 1000
		}
		junk = append(junk, j)
	}
	require.NoError(t, s.RunBinding(b))
	runtime.KeepAlive(junk)
	for i := 0; i < len(y); i += 2 {
		require.Equal(t, float32(11), y[i], "row %d", i/2)
		require.Equal(t, float32(21), y[i+1], "row %d", i/2)
	}
}

// TestRunUnsupportedOutputReleases: when a run's later output has an
// element type that Value does not support (int8), the error names it,
// and the outputs the run allocated before it are released and left
// nil, as if the run had allocated none: none stays live that the
// caller, given only an error, would not know to release.
func TestRunUnsupportedOutputReleases(t *testing.T) {
	rt := modeltest.Runtime(t)
	api, err := ortc.Open(rt.LibraryPath())
	require.NoError(t, err)
	env, err := api.NewEnv()
	require.NoError(t, err)
	defer env.Close()
	so, err := ort.NewSessionOptions()
	require.NoError(t, err)
	defer so.Destroy()
	b := onnx.NewGraphBuilder("cast")
	x := b.Input("a", onnx.Float32, onnx.D(2))
	b.NodeTo("Identity", []string{x}, []string{"y"})
	b.NodeTo("Cast", []string{x}, []string{"h"}, onnx.AttrInt("to", int64(onnx.Int8)))
	b.Output("y", onnx.Float32, onnx.D(2))
	b.Output("h", onnx.Int8, onnx.D(2))
	raw, err := proto.Marshal(b.Model(18).Proto)
	require.NoError(t, err)
	s, err := env.NewSession(raw, so, []string{"a"}, []string{"y", "h"})
	require.NoError(t, err)
	defer s.Close()
	a, err := ortc.NewTensor(env, []int64{2}, []float32{1, 2})
	require.NoError(t, err)
	defer a.Release()
	live := api.LiveValues()
	out := []*ortc.Value{nil, nil}
	require.ErrorContains(t, s.Run([]*ortc.Value{a}, out), `output "h": element type 3 is not supported`)
	require.Equal(t, []*ortc.Value{nil, nil}, out, "no output returned")
	require.Equal(t, live, api.LiveValues(), "tensors left live by a failed run")
}
