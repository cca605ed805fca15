package ortc_test

import (
	"runtime"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/require"
	ort "github.com/yalue/onnxruntime_go"

	"github.com/spiral-rl/spiral/model/modeltest"
	"github.com/spiral-rl/spiral/model/modeltest/perturbed"
	"github.com/spiral-rl/spiral/model/ortc"
)

// openAPI is openEnv with the API the environment's Values count in.
func openAPI(t *testing.T) (*ortc.API, *ortc.Env, *ort.SessionOptions) {
	t.Helper()
	api, err := ortc.Open(modeltest.Runtime(t).LibraryPath())
	require.NoError(t, err)
	env, err := api.NewEnv()
	require.NoError(t, err)
	so, err := ort.NewSessionOptions()
	require.NoError(t, err)
	t.Cleanup(func() {
		require.NoError(t, so.Destroy())
		env.Close()
	})
	return api, env, so
}

// churn allocates n tensors of shape on alloc filled with -1 (released
// when the test ends): memory freed before it is reused and overwritten,
// so a tensor still reading it reads -1. The tensors are returned, for
// fill to overwrite again after a run that wrote them.
func churn(t *testing.T, alloc *ortc.Allocator, shape []int64, n int) []*ortc.Value {
	t.Helper()
	var xs []*ortc.Value
	for range n {
		x, err := ortc.AllocOn[float32](alloc, shape)
		require.NoError(t, err)
		t.Cleanup(x.Release)
		xs = append(xs, x)
	}
	fill(xs, -1)
	return xs
}

func fill(xs []*ortc.Value, v float32) {
	for _, x := range xs {
		for i := range x.Float32s() {
			x.Float32s()[i] = v
		}
	}
}

// TestViewOutlivesItsTensor: a view keeps the memory of the tensor it
// views (and the OrtAllocator that frees it) until the view is
// released, so releasing the tensor and its Allocator first, as a caller
// may when it is done with the whole, leaves the view reading and
// feeding runs the tensor's values, not memory reused by the next
// allocation. A released tensor itself is an error to read or view, not
// a read of address 0. Run in a child process (perturbed.InChild).
func TestViewOutlivesItsTensor(t *testing.T) {
	if !perturbed.InChild(t) {
		return
	}
	api, env, so := openAPI(t)
	s := addSession(t, env, so)
	info, err := env.NewMemoryInfo("Cpu", 0)
	require.NoError(t, err)
	defer info.Release()
	alloc, err := s.NewAllocator(info)
	require.NoError(t, err)
	other, err := s.NewAllocator(info)
	require.NoError(t, err)
	defer other.Release()
	live := api.LiveValues()

	whole, err := ortc.AllocOn[float32](alloc, []int64{4, 2})
	require.NoError(t, err)
	copy(whole.Float32s(), []float32{1, 2, 3, 4, 5, 6, 7, 8})
	rows, err := whole.View(2, []int64{2, 2})
	require.NoError(t, err)
	last, err := rows.View(2, []int64{1, 2})
	require.NoError(t, err)
	whole.Release()
	whole.Release() // twice is safe
	alloc.Release()
	reused := churn(t, other, []int64{4, 2}, 20)

	require.Equal(t, []float32{3, 4, 5, 6}, rows.Float32s())
	require.Equal(t, []float32{5, 6}, last.Float32s())
	bias, err := ortc.NewTensor(env, []int64{2}, []float32{10, 20})
	require.NoError(t, err)
	defer bias.Release()
	out := []*ortc.Value{nil, nil}
	require.NoError(t, s.Run([]*ortc.Value{rows, bias}, out))
	require.Equal(t, []float32{13, 24, 15, 26}, out[0].Float32s())
	out[0].Release()
	out[1].Release()

	require.PanicsWithValue(t, "ortc: Float32s of a released tensor of shape [4 2]", func() { whole.Float32s() })
	require.PanicsWithValue(t, "ortc: Bytes of a released tensor of shape [4 2]", func() { whole.Bytes() })
	_, err = whole.View(0, []int64{2})
	require.EqualError(t, err, "ortc: view of a released tensor of shape [4 2]")
	rows.Release()
	require.Equal(t, []float32{5, 6}, last.Float32s(), "a view of a view keeps the memory too")
	require.PanicsWithValue(t, "ortc: Float32s of a released tensor of shape [2 2]", func() { rows.Float32s() })
	last.Release()
	require.Equal(t, live+int64(len(reused))+1, api.LiveValues(), "live: the churn's tensors and bias")
}

// TestBindingKeepsViewedMemory: a view bound in a Binding keeps the
// memory it views while the binding holds it, and so does an output the
// binding returns for it (Outputs: another tensor over that memory):
// with the view, its tensor and their Allocator released before the run,
// the run still writes the tensor's memory and the output reads it, even
// after the binding is released. Run in a child process
// (perturbed.InChild).
func TestBindingKeepsViewedMemory(t *testing.T) {
	if !perturbed.InChild(t) {
		return
	}
	env, so := openEnv(t)
	s := addSession(t, env, so)
	info, err := env.NewMemoryInfo("Cpu", 0)
	require.NoError(t, err)
	defer info.Release()
	other, err := s.NewAllocator(info)
	require.NoError(t, err)
	defer other.Release()
	a, err := ortc.NewTensor(env, []int64{2, 2}, []float32{1, 2, 3, 4})
	require.NoError(t, err)
	defer a.Release()
	bias, err := ortc.NewTensor(env, []int64{2}, []float32{10, 20})
	require.NoError(t, err)
	defer bias.Release()

	alloc, err := s.NewAllocator(info)
	require.NoError(t, err)
	whole, err := ortc.AllocOn[float32](alloc, []int64{4, 2})
	require.NoError(t, err)
	rows, err := whole.View(4, []int64{2, 2})
	require.NoError(t, err)
	b, err := s.NewBinding()
	require.NoError(t, err)
	defer b.Release()
	require.NoError(t, b.BindInput("a", a))
	require.NoError(t, b.BindInput("b", bias))
	require.NoError(t, b.BindOutput("y", rows))
	require.NoError(t, b.BindOutputTo("s", info))
	rows.Release()
	whole.Release()
	alloc.Release()
	reused := churn(t, other, []int64{4, 2}, 20)

	require.NoError(t, s.RunBinding(b))
	outs, err := b.Outputs()
	require.NoError(t, err)
	defer func() {
		for _, o := range outs {
			o.Release()
		}
	}()
	b.Release()
	fill(reused, -1)
	require.Equal(t, []float32{11, 22, 13, 24}, outs[0].Float32s())
}

// TestTensorPinsGoMemory: ONNX Runtime keeps the pointer to the Go memory
// a NewTensor reads after the call, which cgo allows only for pinned
// memory (runtime.Pinner), so the Value pins it until it and every
// Binding it is bound in let go. Shown by cgo's own check (cgocheck=1,
// the default): a call passing Go memory that holds a pointer to
// unpinned Go memory panics, so holder, passed to C as a NewTensor's
// bytes, is accepted only while the slice it points to is pinned.
func TestTensorPinsGoMemory(t *testing.T) {
	env, so := openEnv(t)
	s := addSession(t, env, so)
	data := make([]float32, 64)
	v, err := ortc.NewTensor(env, []int64{32, 2}, data)
	require.NoError(t, err)
	holder := &struct{ p *float32 }{&data[0]}
	raw := unsafe.Slice((*uint8)(unsafe.Pointer(holder)), unsafe.Sizeof(*holder))
	passHolder := func() {
		h, err := ortc.NewTensor(env, []int64{int64(len(raw))}, raw)
		require.NoError(t, err)
		h.Release()
	}
	require.NotPanics(t, passHolder, "the tensor's memory is pinned")

	b, err := s.NewBinding()
	require.NoError(t, err)
	require.NoError(t, b.BindInput("a", v))
	v.Release()
	require.NotPanics(t, passHolder, "the binding holds the tensor: its memory stays pinned")
	b.Release()
	require.PanicsWithError(t, "runtime error: argument of cgo function has Go pointer to unpinned Go pointer", passHolder,
		"released: unpinned")
	runtime.KeepAlive(data)
}

// TestUnreleasedTensorIsNotFatal: a NewTensor Value dropped without
// Release (a leak, counted by LiveValues) is unpinned once collected,
// not found by the runtime.Pinner's own leak check, which panics on the
// finalizer goroutine and so ends the process. Run in a child process
// (perturbed.InChild), where that crash fails the parent's test.
func TestUnreleasedTensorIsNotFatal(t *testing.T) {
	if !perturbed.InChild(t) {
		return
	}
	env, _ := openEnv(t)
	for range 8 {
		_, err := ortc.NewTensor(env, []int64{256}, make([]float32, 256))
		require.NoError(t, err)
	}
	for range 5 {
		runtime.GC()
		time.Sleep(20 * time.Millisecond) // for the finalizer goroutine
	}
}

// TestReleasedMemoryInfo: a view of a tensor placed on a released
// MemoryInfo, an output bound to one and an allocator for one are errors
// naming it, not a null OrtMemoryInfo that ONNX Runtime dereferences (a
// segmentation fault); the tensors allocated on it stay usable.
func TestReleasedMemoryInfo(t *testing.T) {
	env, so := openEnv(t)
	s := addSession(t, env, so)
	info, err := env.NewMemoryInfo("Cpu", 0)
	require.NoError(t, err)
	alloc, err := s.NewAllocator(info)
	require.NoError(t, err)
	defer alloc.Release()
	v, err := ortc.AllocOn[float32](alloc, []int64{4})
	require.NoError(t, err)
	defer v.Release()
	b, err := s.NewBinding()
	require.NoError(t, err)
	defer b.Release()
	info.Release()
	info.Release() // twice is safe

	_, err = v.View(0, []int64{2})
	require.EqualError(t, err, "ortc: view [2] on Cpu:0: the memory info is released")
	require.EqualError(t, b.BindOutputTo("y", info), `ortc: bind output "y" to Cpu:0: the memory info is released`)
	require.EqualError(t, b.BindOutputOn("y", alloc), `ortc: bind output "y" to Cpu:0: the memory info is released`)
	_, err = s.NewAllocator(info)
	require.EqualError(t, err, "ortc: allocator for Cpu:0: the memory info is released")
	copy(v.Float32s(), []float32{1, 2, 3, 4})
	require.Equal(t, []float32{1, 2, 3, 4}, v.Float32s())
}

// TestBindingOfClosedSession: binding a value or an output on a Binding
// whose session is closed is an error naming that, not a lookup of the
// name in the freed session's state (which answered "Failed to find
// input name in the mapping", read from freed memory).
func TestBindingOfClosedSession(t *testing.T) {
	env, so := openEnv(t)
	info, err := env.NewMemoryInfo("Cpu", 0)
	require.NoError(t, err)
	defer info.Release()
	a, err := ortc.NewTensor(env, []int64{1, 2}, []float32{1, 2})
	require.NoError(t, err)
	defer a.Release()
	s, err := env.NewSession(addShapeModel(t), so, []string{"a", "b"}, []string{"y", "s"})
	require.NoError(t, err)
	b, err := s.NewBinding()
	require.NoError(t, err)
	s.Close()
	require.EqualError(t, b.BindInput("a", a), `ortc: bind input "a": the session is closed`)
	require.EqualError(t, b.BindOutput("y", a), `ortc: bind output "y": the session is closed`)
	require.EqualError(t, b.BindOutputTo("s", info), `ortc: bind output "s" to Cpu:0: the session is closed`)
	b.Clear()
	b.Release()
}

// TestBoundOutputKeepsPlacement: the output Outputs returns for a tensor
// bound with BindOutput is that tensor (another reference to it), so it
// is Placed where the tensor is and, on the device twin, not readable
// from Go, as on a device; a view of it reads the run's values.
func TestBoundOutputKeepsPlacement(t *testing.T) {
	env, so := openEnv(t)
	s := addSession(t, env, so)
	twin, err := env.NewTwinMemoryInfo()
	require.NoError(t, err)
	defer twin.Release()
	alloc, err := s.NewAllocator(twin)
	require.NoError(t, err)
	defer alloc.Release()
	a, err := ortc.NewTensor(env, []int64{1, 2}, []float32{1, 2})
	require.NoError(t, err)
	defer a.Release()
	bias, err := ortc.NewTensor(env, []int64{2}, []float32{10, 20})
	require.NoError(t, err)
	defer bias.Release()
	y, err := ortc.AllocOn[float32](alloc, []int64{1, 2})
	require.NoError(t, err)
	defer y.Release()
	b := runAdd(t, s, a, bias, y, twin)
	outs, err := b.Outputs()
	require.NoError(t, err)
	defer func() {
		for _, o := range outs {
			o.Release()
		}
	}()
	require.True(t, outs[0].Placed())
	require.True(t, outs[0].OnDevice())
	require.Panics(t, func() { outs[0].Float32s() })
	second, err := outs[0].View(1, []int64{1})
	require.NoError(t, err)
	defer second.Release()
	got, err := ortc.NewTensor(env, []int64{1}, make([]float32, 1))
	require.NoError(t, err)
	defer got.Release()
	cp := env.NewCopier(so)
	defer cp.Close()
	require.NoError(t, cp.Copy(got, second))
	require.Equal(t, []float32{22}, got.Float32s())
}

// TestRebindOutput: binding an output name again replaces its binding
// (ONNX Runtime's IoBinding keeps one entry per name), so Outputs
// describes each output by its last binding: y, bound first to a tensor
// on the device twin and then to the host's memory info, comes back a
// host tensor of the run's values, and s after it unplaced.
func TestRebindOutput(t *testing.T) {
	env, so := openEnv(t)
	s := addSession(t, env, so)
	info, err := env.NewMemoryInfo("Cpu", 0)
	require.NoError(t, err)
	defer info.Release()
	twin, err := env.NewTwinMemoryInfo()
	require.NoError(t, err)
	defer twin.Release()
	alloc, err := s.NewAllocator(twin)
	require.NoError(t, err)
	defer alloc.Release()
	a, err := ortc.NewTensor(env, []int64{1, 2}, []float32{1, 2})
	require.NoError(t, err)
	defer a.Release()
	bias, err := ortc.NewTensor(env, []int64{2}, []float32{10, 20})
	require.NoError(t, err)
	defer bias.Release()
	y, err := ortc.AllocOn[float32](alloc, []int64{1, 2})
	require.NoError(t, err)
	defer y.Release()

	b, err := s.NewBinding()
	require.NoError(t, err)
	defer b.Release()
	require.NoError(t, b.BindInput("a", a))
	require.NoError(t, b.BindInput("b", bias))
	require.NoError(t, b.BindOutput("y", y))
	require.NoError(t, b.BindOutputTo("y", info))
	require.NoError(t, b.BindOutputOn("s", alloc))
	require.NoError(t, s.RunBinding(b))
	outs, err := b.Outputs()
	require.NoError(t, err)
	defer func() {
		for _, o := range outs {
			o.Release()
		}
	}()
	require.Len(t, outs, 2)
	require.False(t, outs[0].Placed())
	require.Equal(t, []float32{11, 22}, outs[0].Float32s())
	require.True(t, outs[1].Placed(), "s, bound on the twin's allocator")
}

// TestHostViewOutlivesItsTensor: a host view of a run's output (memory
// ONNX Runtime allocated, on no memory info) holds that memory as a
// view does: after the output's Release and a churn of allocations it
// reads the output's rows and feeds a run with them. HostView refuses
// tensors on a memory info (View's), released tensors and ranges out of
// v. Run in a child process (perturbed.InChild).
func TestHostViewOutlivesItsTensor(t *testing.T) {
	if !perturbed.InChild(t) {
		return
	}
	api, env, so := openAPI(t)
	s := addSession(t, env, so)
	live := api.LiveValues()
	a, err := ortc.NewTensor(env, []int64{4, 2}, []float32{1, 2, 3, 4, 5, 6, 7, 8})
	require.NoError(t, err)
	defer a.Release()
	bias, err := ortc.NewTensor(env, []int64{2}, []float32{10, 20})
	require.NoError(t, err)
	defer bias.Release()
	out := []*ortc.Value{nil, nil}
	require.NoError(t, s.Run([]*ortc.Value{a, bias}, out))
	out[1].Release()
	whole := out[0]
	rows, err := whole.HostView(2, []int64{2, 2})
	require.NoError(t, err)
	defer rows.Release()
	require.False(t, rows.Placed())
	_, err = whole.HostView(6, []int64{2, 2})
	require.EqualError(t, err, "ortc: host view [2 2]: 4 values from 6 in a tensor of 8")
	whole.Release()
	for range 20 {
		x, err := ortc.Alloc[float32](env, []int64{4, 2})
		require.NoError(t, err)
		defer x.Release()
		fill([]*ortc.Value{x}, -1)
	}
	require.Equal(t, []float32{13, 24, 15, 26}, rows.Float32s())
	again := []*ortc.Value{nil, nil}
	require.NoError(t, s.Run([]*ortc.Value{rows, bias}, again))
	require.Equal(t, []float32{23, 44, 25, 46}, again[0].Float32s())
	again[0].Release()
	again[1].Release()

	_, err = whole.HostView(0, []int64{2})
	require.EqualError(t, err, "ortc: host view of a released tensor of shape [4 2]")
	info, alloc := cpuTwin(t, env, s)
	placed, err := ortc.AllocOn[float32](alloc, []int64{4, 2})
	require.NoError(t, err)
	defer placed.Release()
	_, err = placed.HostView(0, []int64{2})
	require.EqualError(t, err, "ortc: host view [2] of a tensor on "+info.String()+" (View)")
	rows.Release()
	require.Equal(t, live+int64(20+3), api.LiveValues(), "live: a, bias, the churn's and placed")
}
