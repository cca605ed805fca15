package ortc

/*
#include <stdlib.h>
#include <string.h>
#include "onnxruntime_c_api.h"

// spiral_msg_ext turns a status into a malloc'ed message (session.go).
char* spiral_msg_ext(const OrtApi* api, OrtStatus* st);

static void spiral_release_memory_info(const OrtApi* api, OrtMemoryInfo* info) { api->ReleaseMemoryInfo(info); }

static char* spiral_memory_info(const OrtApi* api, const char* name, int id, OrtMemoryInfo** out) {
	return spiral_msg_ext(api, api->CreateMemoryInfo(name, OrtDeviceAllocator, id, OrtMemTypeDefault, out));
}

static char* spiral_create_allocator(const OrtApi* api, OrtSession* s, OrtMemoryInfo* info, OrtAllocator** out) {
	return spiral_msg_ext(api, api->CreateAllocator(s, info, out));
}

static void spiral_release_allocator(const OrtApi* api, OrtAllocator* a) { api->ReleaseAllocator(a); }

static char* spiral_alloc_on(const OrtApi* api, OrtAllocator* a, const int64_t* shape, size_t rank, int elem, OrtValue** out) {
	return spiral_msg_ext(api, api->CreateTensorAsOrtValue(a, shape, rank, (ONNXTensorElementDataType)elem, out));
}

static void spiral_release_ort_value(const OrtApi* api, OrtValue* v) { api->ReleaseValue(v); }

// spiral_view makes a tensor over bytes of memory at base + off (device
// memory included: the pointer is never dereferenced here).
static char* spiral_view(const OrtApi* api, const OrtMemoryInfo* info, void* base, size_t off, size_t bytes,
		const int64_t* shape, size_t rank, int elem, OrtValue** out) {
	return spiral_msg_ext(api, api->CreateTensorWithDataAsOrtValue(info, (char*)base + off, bytes, shape, rank,
		(ONNXTensorElementDataType)elem, out));
}

// spiral_value_info returns the memory info of v's data (v's own, valid
// while v is).
static char* spiral_value_info(const OrtApi* api, const OrtValue* v, const OrtMemoryInfo** out) {
	return spiral_msg_ext(api, api->GetTensorMemoryInfo(v, out));
}

static char* spiral_create_binding(const OrtApi* api, OrtSession* s, OrtIoBinding** out) {
	return spiral_msg_ext(api, api->CreateIoBinding(s, out));
}

static void spiral_release_binding(const OrtApi* api, OrtIoBinding* b) { api->ReleaseIoBinding(b); }

static char* spiral_bind(const OrtApi* api, OrtIoBinding* b, const char* name, OrtValue* v, int output) {
	return spiral_msg_ext(api, output ? api->BindOutput(b, name, v) : api->BindInput(b, name, v));
}

static char* spiral_bind_output_to(const OrtApi* api, OrtIoBinding* b, const char* name, OrtMemoryInfo* info) {
	return spiral_msg_ext(api, api->BindOutputToDevice(b, name, info));
}

static void spiral_clear_binding(const OrtApi* api, OrtIoBinding* b) {
	api->ClearBoundInputs(b);
	api->ClearBoundOutputs(b);
}

static char* spiral_run_binding(const OrtApi* api, OrtSession* s, OrtIoBinding* b) {
	char* err = spiral_msg_ext(api, api->SynchronizeBoundInputs(b));
	if (err == NULL) err = spiral_msg_ext(api, api->RunWithBinding(s, NULL, b));
	if (err == NULL) err = spiral_msg_ext(api, api->SynchronizeBoundOutputs(b));
	return err;
}

// spiral_bound_outputs returns the bound output values in a malloc'ed
// array (freed by the caller) after freeing ONNX Runtime's.
static char* spiral_bound_outputs(const OrtApi* api, OrtIoBinding* b, OrtValue*** out, size_t* n) {
	OrtAllocator* a = NULL;
	char* err = spiral_msg_ext(api, api->GetAllocatorWithDefaultOptions(&a));
	if (err != NULL) return err;
	OrtValue** vals = NULL;
	err = spiral_msg_ext(api, api->GetBoundOutputValues(b, a, &vals, n));
	if (err != NULL) return err;
	*out = (OrtValue**)calloc(*n > 0 ? *n : 1, sizeof(OrtValue*));
	if (*n > 0) memcpy(*out, vals, *n * sizeof(OrtValue*));
	if (vals != NULL) a->Free(a, vals);
	return NULL;
}

*/
import "C"

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"unsafe"

	ort "github.com/yalue/onnxruntime_go"
	"google.golang.org/protobuf/proto"

	"github.com/spiral-rl/spiral/model/onnx/onnxpb"
)

// MemoryInfo names where tensors live: the CPU, or CUDA device N.
type MemoryInfo struct {
	api  *API
	info *C.OrtMemoryInfo
	name string
	id   int
	// twin: host memory that stands in for a device's (NewTwinMemoryInfo).
	twin bool
}

// NewMemoryInfo describes device memory: name "Cpu" (host memory, the CPU
// twin of a device) or "Cuda" with device id. Release it when done.
func (e *Env) NewMemoryInfo(name string, id int) (*MemoryInfo, error) {
	if name != "Cpu" && name != "Cuda" {
		return nil, fmt.Errorf("ortc: memory info %q: want Cpu or Cuda", name)
	}
	cn := C.CString(name)
	defer C.free(unsafe.Pointer(cn))
	m := &MemoryInfo{api: e.api, name: name, id: id}
	if err := status(C.spiral_memory_info(e.api.api, cn, C.int(id), &m.info)); err != nil {
		return nil, fmt.Errorf("ortc: memory info %s:%d: %w", name, id, err)
	}
	return m, nil
}

// NewTwinMemoryInfo describes host memory standing in for a device's:
// the CPU twin of a device path. Tensors placed on it (AllocOn,
// AllocLike, their views, outputs bound with BindOutputOn) report
// OnDevice and cannot be read from Go, as device tensors cannot: a CPU
// run of device code fails where reading device memory from Go would.
// Release it when done.
func (e *Env) NewTwinMemoryInfo() (*MemoryInfo, error) {
	m, err := e.NewMemoryInfo("Cpu", 0)
	if err != nil {
		return nil, err
	}
	m.twin = true
	return m, nil
}

// String is "Cpu:0", "Cuda:N", or "Cpu:0 (device twin)".
func (m *MemoryInfo) String() string {
	if m.twin {
		return fmt.Sprintf("%s:%d (device twin)", m.name, m.id)
	}
	return fmt.Sprintf("%s:%d", m.name, m.id)
}

// errReleasedInfo is the error of a use of a released MemoryInfo, whose
// null OrtMemoryInfo ONNX Runtime would dereference.
var errReleasedInfo = errors.New("the memory info is released")

// Release frees the description.
func (m *MemoryInfo) Release() {
	if m != nil && m.info != nil {
		C.spiral_release_memory_info(m.api.api, m.info)
		m.info = nil
	}
}

// Allocator allocates tensors in a session's memory of one MemoryInfo.
type Allocator struct {
	api  *API
	a    *C.OrtAllocator
	info *MemoryInfo
	// A tensor from CreateTensorAsOrtValue frees its memory through the
	// OrtAllocator it came from, so the OrtAllocator is freed once it is
	// released and so is the memory of the tensors it allocated (mu
	// guards these; tensors counts that memory, which the tensors' views,
	// bindings and bound outputs hold).
	mu       sync.Mutex
	tensors  int
	released bool
}

// NewAllocator returns the allocator session s uses for info's memory.
// Release it before the session; tensors allocated from it, and the
// bindings and bound outputs that reference them, may outlive Release
// (the allocator is freed with the last of them).
func (s *Session) NewAllocator(info *MemoryInfo) (*Allocator, error) {
	switch {
	case s.s == nil:
		return nil, fmt.Errorf("ortc: allocator for %s: %w", info, errClosed)
	case info.info == nil:
		return nil, fmt.Errorf("ortc: allocator for %s: %w", info, errReleasedInfo)
	}
	a := &Allocator{api: s.api, info: info}
	if err := status(C.spiral_create_allocator(s.api.api, s.s, info.info, &a.a)); err != nil {
		return nil, fmt.Errorf("ortc: allocator for %s: %w", info, err)
	}
	return a, nil
}

// Release frees the allocator, or has the last of the tensors allocated
// from it and not released yet free it. Safe on nil and more than once.
func (a *Allocator) Release() {
	if a == nil {
		return
	}
	a.mu.Lock()
	free := !a.released && a.tensors == 0
	a.released = true
	a.mu.Unlock()
	if free {
		C.spiral_release_allocator(a.api.api, a.a)
	}
}

// drop notes that the memory of a tensor allocated from a is freed,
// freeing a when it was the last one and a is released.
func (a *Allocator) drop() {
	a.mu.Lock()
	a.tensors--
	free := a.released && a.tensors == 0
	a.mu.Unlock()
	if free {
		C.spiral_release_allocator(a.api.api, a.a)
	}
}

// AllocOn returns a tensor of the given shape in a's memory (contents
// undefined), freed by Release. On a device its data cannot be read from
// Go (Float32s panics); a Copier moves it.
func AllocOn[T element](a *Allocator, shape []int64) (*Value, error) {
	return a.alloc(shape, elemOf[T]())
}

// AllocLike returns a tensor in a's memory of v's shape and element type
// (contents undefined).
func (a *Allocator) AllocLike(v *Value) (*Value, error) { return a.alloc(v.shape, v.elem) }

func (a *Allocator) alloc(shape []int64, elem ElemType) (*Value, error) {
	a.mu.Lock()
	if a.released {
		a.mu.Unlock()
		return nil, fmt.Errorf("ortc: allocate %v on %s: the allocator is released", shape, a.info)
	}
	a.tensors++
	a.mu.Unlock()
	var dims *C.int64_t
	if len(shape) > 0 {
		dims = (*C.int64_t)(unsafe.Pointer(&shape[0]))
	}
	var p *C.OrtValue
	if err := status(C.spiral_alloc_on(a.api.api, a.a, dims, C.size_t(len(shape)), C.int(elem), &p)); err != nil {
		a.drop()
		return nil, fmt.Errorf("ortc: allocate %v on %s: %w", shape, a.info, err)
	}
	v, err := a.api.describe(p, nil)
	if err != nil {
		C.spiral_release_ort_value(a.api.api, p)
		a.drop()
		return nil, fmt.Errorf("ortc: allocate %v on %s: %w", shape, a.info, err)
	}
	a.info.place(v)
	v.mem.from = a
	return v, nil
}

// place records that v lives in m's memory (Placed), unreadable from Go
// when m is a device twin.
func (m *MemoryInfo) place(v *Value) {
	v.info = m
	v.device = v.device || m.twin
}

// View returns a tensor of the given shape over v's elements from offset
// on, in the same memory (device memory included) and without a copy:
// runs that write the view write v. v must live on a memory info (from
// AllocOn, AllocLike or View) and not be released; the view holds v's
// memory, which v's Release then leaves to it (the view goes on reading
// v's values), and releasing the view leaves v as it is. A shape with a
// zero dim gives an empty view (an empty past, say).
func (v *Value) View(offset int, shape []int64) (*Value, error) {
	if v.info == nil {
		return nil, errors.New("ortc: view of a tensor not allocated on a memory info")
	}
	if v.v == nil {
		// Release cleared data: the view would be of address 0 on.
		return nil, fmt.Errorf("ortc: view of a released tensor of shape %v", v.shape)
	}
	if v.info.info == nil {
		return nil, fmt.Errorf("ortc: view %v on %s: %w", shape, v.info, errReleasedInfo)
	}
	w, err := v.view(v.info.info, offset, shape)
	if err != nil {
		return nil, fmt.Errorf("ortc: view %v on %s: %w", shape, v.info, err)
	}
	v.info.place(w)
	return w, nil
}

// HostView is View for a tensor in host memory on no memory info (from
// NewTensor or Alloc, or a run's output): a tensor of the given shape
// over v's elements from offset on, without a copy, that holds v's
// memory as a view does, so that it goes on reading v's values after
// v's Release (ONNX Runtime's memory is not freed, Go memory not
// unpinned, under it). Like v, it is not Placed.
func (v *Value) HostView(offset int, shape []int64) (*Value, error) {
	switch {
	case v.info != nil:
		return nil, fmt.Errorf("ortc: host view %v of a tensor on %s (View)", shape, v.info)
	case v.device:
		return nil, fmt.Errorf("ortc: host view %v of a tensor in device memory", shape)
	case v.v == nil:
		return nil, fmt.Errorf("ortc: host view of a released tensor of shape %v", v.shape)
	}
	var info *C.OrtMemoryInfo
	if err := status(C.spiral_value_info(v.api.api, v.v, &info)); err != nil {
		return nil, fmt.Errorf("ortc: host view %v: %w", shape, err)
	}
	w, err := v.view(info, offset, shape)
	if err != nil {
		return nil, fmt.Errorf("ortc: host view %v: %w", shape, err)
	}
	return w, nil
}

// view returns a tensor of shape over v's elements from offset on, on
// info, holding v's memory.
func (v *Value) view(info *C.OrtMemoryInfo, offset int, shape []int64) (*Value, error) {
	n := 1
	for _, d := range shape {
		if d < 0 {
			return nil, fmt.Errorf("shape %v has a negative dim", shape)
		}
		n *= int(d)
	}
	// offset > v.n-n rather than offset+n > v.n: the sum of a large
	// offset and n wraps negative and would pass.
	if offset < 0 || n > v.n || offset > v.n-n {
		return nil, fmt.Errorf("%d values from %d in a tensor of %d", n, offset, v.n)
	}
	dims := append([]int64(nil), shape...)
	var pdims *C.int64_t
	if len(dims) > 0 {
		pdims = (*C.int64_t)(unsafe.Pointer(&dims[0]))
	}
	var p *C.OrtValue
	size := v.elem.Size()
	if err := status(C.spiral_view(v.api.api, info, v.data, C.size_t(offset*size), C.size_t(n*size),
		pdims, C.size_t(len(dims)), C.int(v.elem), &p)); err != nil {
		return nil, err
	}
	w, err := v.api.describe(p, v.mem)
	if err != nil {
		C.spiral_release_ort_value(v.api.api, p)
		return nil, err
	}
	return w, nil
}

// Binding binds a session's inputs and outputs to values (IoBinding), so
// that a run reads and writes them where they are, device memory
// included, without copies through the host.
type Binding struct {
	s *Session
	b *C.OrtIoBinding
	// outs are the bound outputs in binding order, as Outputs returns
	// them.
	outs []boundOutput
	// held is the memory of the bound tensors, held (memory.hold) while
	// the binding references the tensors: the Values may be released
	// first.
	held []*memory
}

// boundOutput is what Outputs needs to know of a bound output.
type boundOutput struct {
	name string
	// placed is the memory of an output bound with BindOutputOn, or
	// bound with BindOutput to a tensor placed there (nil otherwise).
	placed *MemoryInfo
	// over is the memory of the tensor an output bound with BindOutput
	// is (nil otherwise): Outputs returns a tensor over it.
	over *memory
}

// output records output name's binding, replacing an earlier one of the
// name as ONNX Runtime's IoBinding does (one entry per name, in the
// order of first binding).
func (b *Binding) output(o boundOutput) {
	for i := range b.outs {
		if b.outs[i].name == o.name {
			b.outs[i] = o
			return
		}
	}
	b.outs = append(b.outs, o)
}

// NewBinding returns an empty binding for s. Release it before s.
func (s *Session) NewBinding() (*Binding, error) {
	if s.s == nil {
		return nil, fmt.Errorf("ortc: io binding: %w", errClosed)
	}
	b := &Binding{s: s}
	if err := status(C.spiral_create_binding(s.api.api, s.s, &b.b)); err != nil {
		return nil, fmt.Errorf("ortc: io binding: %w", err)
	}
	return b, nil
}

// errReleasedBinding is the error of a call on a released Binding,
// whose null OrtIoBinding ONNX Runtime would dereference.
var errReleasedBinding = errors.New("the binding is released")

// BindInput binds input name to v (kept alive by the binding).
func (b *Binding) BindInput(name string, v *Value) error { return b.bind("input", name, v) }

// BindOutput binds output name to the preallocated v, which the run
// fills.
func (b *Binding) BindOutput(name string, v *Value) error {
	if err := b.bind("output", name, v); err != nil {
		return err
	}
	b.output(boundOutput{name: name, placed: v.info, over: v.mem})
	return nil
}

// bind binds v to the input or output name, holding its memory.
func (b *Binding) bind(what, name string, v *Value) error {
	// ONNX Runtime dereferences the value without a null check.
	if v == nil || v.v == nil {
		return fmt.Errorf("ortc: bind %s %q: the value is nil or released", what, name)
	}
	switch {
	case b.b == nil:
		return fmt.Errorf("ortc: bind %s %q: %w", what, name, errReleasedBinding)
	case b.s.s == nil:
		// ONNX Runtime looks the name up in the session's state.
		return fmt.Errorf("ortc: bind %s %q: %w", what, name, errClosed)
	}
	cn := C.CString(name)
	defer C.free(unsafe.Pointer(cn))
	output := C.int(0)
	if what == "output" {
		output = 1
	}
	if err := status(C.spiral_bind(b.s.api.api, b.b, cn, v.v, output)); err != nil {
		return fmt.Errorf("ortc: bind %s %q: %w", what, name, err)
	}
	v.mem.hold()
	b.held = append(b.held, v.mem)
	return nil
}

// BindOutputTo has the run allocate output name in info's memory (read
// it with Outputs).
func (b *Binding) BindOutputTo(name string, info *MemoryInfo) error {
	return b.bindTo(name, info, nil)
}

// BindOutputOn has the run allocate output name in the memory a
// allocates from (with the session's own allocator for it, as
// BindOutputTo does): Outputs returns it Placed there, as if from
// AllocOn (so it has views).
func (b *Binding) BindOutputOn(name string, a *Allocator) error {
	return b.bindTo(name, a.info, a.info)
}

func (b *Binding) bindTo(name string, info, placed *MemoryInfo) error {
	switch {
	case b.b == nil:
		return fmt.Errorf("ortc: bind output %q to %s: %w", name, info, errReleasedBinding)
	case b.s.s == nil:
		return fmt.Errorf("ortc: bind output %q to %s: %w", name, info, errClosed)
	case info.info == nil:
		return fmt.Errorf("ortc: bind output %q to %s: %w", name, info, errReleasedInfo)
	}
	cn := C.CString(name)
	defer C.free(unsafe.Pointer(cn))
	if err := status(C.spiral_bind_output_to(b.s.api.api, b.b, cn, info.info)); err != nil {
		return fmt.Errorf("ortc: bind output %q to %s: %w", name, info, err)
	}
	b.output(boundOutput{name: name, placed: placed})
	return nil
}

// Clear unbinds every input and output (nothing on a released binding).
func (b *Binding) Clear() {
	if b.b == nil {
		return
	}
	C.spiral_clear_binding(b.s.api.api, b.b)
	b.outs = nil
	b.dropHeld()
}

// Release frees the binding.
func (b *Binding) Release() {
	if b != nil && b.b != nil {
		C.spiral_release_binding(b.s.api.api, b.b)
		b.b, b.outs = nil, nil
		b.dropHeld()
	}
}

// dropHeld drops the binding's hold on the memory of its tensors, once
// ONNX Runtime's binding no longer references them.
func (b *Binding) dropHeld() {
	for _, m := range b.held {
		m.drop()
	}
	b.held = nil
}

// RunBinding runs s on binding b.
func (s *Session) RunBinding(b *Binding) error {
	switch {
	case s.s == nil:
		return fmt.Errorf("ortc: run with binding: %w", errClosed)
	case b.b == nil:
		return fmt.Errorf("ortc: run with binding: %w", errReleasedBinding)
	}
	if err := status(C.spiral_run_binding(s.api.api, s.s, b.b)); err != nil {
		return fmt.Errorf("ortc: run with binding: %w", err)
	}
	runtime.KeepAlive(b)
	return nil
}

// Outputs returns the bound outputs of the last run, in binding order:
// new references (Release each), each knowing whether it is in device
// memory.
func (b *Binding) Outputs() ([]*Value, error) {
	if b.b == nil {
		return nil, fmt.Errorf("ortc: bound outputs: %w", errReleasedBinding)
	}
	var arr **C.OrtValue
	var n C.size_t
	if err := status(C.spiral_bound_outputs(b.s.api.api, b.b, &arr, &n)); err != nil {
		return nil, fmt.Errorf("ortc: bound outputs: %w", err)
	}
	defer C.free(unsafe.Pointer(arr))
	ps := unsafe.Slice(arr, int(n))
	out := make([]*Value, 0, len(ps))
	for i, p := range ps {
		// An output bound with BindOutput is another tensor over the
		// bound one's memory, which it holds.
		var o boundOutput
		if i < len(b.outs) {
			o = b.outs[i]
		}
		v, err := b.s.api.describe(p, o.over)
		if err != nil {
			for _, q := range ps[i:] {
				C.spiral_release_ort_value(b.s.api.api, q)
			}
			for _, o := range out {
				o.Release()
			}
			return nil, fmt.Errorf("ortc: bound output %d: %w", i, err)
		}
		if o.placed != nil {
			o.placed.place(v)
		}
		out = append(out, v)
	}
	return out, nil
}

// Copier copies tensors between host and device memory by running a
// one-node Identity session through an IoBinding (input the source,
// output the preallocated destination): ONNX Runtime moves the data the
// way its execution provider does. (The C API's CopyTensors needs data
// transfers registered the newer way, which the CUDA provider appended
// to session options does not do.) Each copy is counted in
// Env.CopiedBytes.
type Copier struct {
	env  *Env
	so   *ort.SessionOptions
	sess map[ElemType]*Session
}

// NewCopier returns a Copier whose sessions use so (with the device's
// execution provider). Close it before so is destroyed.
func (e *Env) NewCopier(so *ort.SessionOptions) *Copier {
	return &Copier{env: e, so: so, sess: map[ElemType]*Session{}}
}

// IdentityModel is the graph Identity(x) -> y on tensors of elem, any
// shape: a copy, wherever ONNX Runtime places its input and output.
func IdentityModel(elem ElemType) ([]byte, error) {
	vi := func(name string) *onnxpb.ValueInfoProto {
		return &onnxpb.ValueInfoProto{Name: proto.String(name), Type: &onnxpb.TypeProto{Value: &onnxpb.TypeProto_TensorType{
			TensorType: &onnxpb.TypeProto_Tensor{ElemType: proto.Int32(int32(elem))}}}}
	}
	m := &onnxpb.ModelProto{IrVersion: proto.Int64(8), OpsetImport: []*onnxpb.OperatorSetIdProto{{Domain: proto.String(""), Version: proto.Int64(18)}},
		Graph: &onnxpb.GraphProto{Name: proto.String("copy"), Input: []*onnxpb.ValueInfoProto{vi("x")}, Output: []*onnxpb.ValueInfoProto{vi("y")},
			Node: []*onnxpb.NodeProto{{OpType: proto.String("Identity"), Input: []string{"x"}, Output: []string{"y"}}}}}
	return proto.Marshal(m)
}

// Copy copies src into dst, of the same element type and size, whichever
// memory each is in.
func (c *Copier) Copy(dst, src *Value) error {
	if src.n != dst.n || src.elem != dst.elem {
		return fmt.Errorf("ortc: copy %d values of type %d into %d of type %d", src.n, src.elem, dst.n, dst.elem)
	}
	s, err := c.session(src.elem)
	if err != nil {
		return err
	}
	b, err := s.NewBinding()
	if err != nil {
		return err
	}
	defer b.Release()
	if err := b.BindInput("x", src); err != nil {
		return err
	}
	if err := b.BindOutput("y", dst); err != nil {
		return err
	}
	if err := s.RunBinding(b); err != nil {
		return fmt.Errorf("ortc: copy: %w", err)
	}
	c.env.copied.Add(int64(src.n * src.elem.Size()))
	return nil
}

// session returns the copy session for elem, opened on first use.
func (c *Copier) session(elem ElemType) (*Session, error) {
	if c.sess == nil {
		return nil, errors.New("ortc: copy: the copier is closed")
	}
	if s, ok := c.sess[elem]; ok {
		return s, nil
	}
	raw, err := IdentityModel(elem)
	if err != nil {
		return nil, fmt.Errorf("ortc: copy: %w", err)
	}
	s, err := c.env.NewSession(raw, c.so, []string{"x"}, []string{"y"})
	if err != nil {
		return nil, fmt.Errorf("ortc: copy: %w", err)
	}
	c.sess[elem] = s
	return s, nil
}

// NewAllocator returns the allocator for info's memory of one of c's
// sessions: device memory for tensors that no other session owns
// (parameters shared by several). Release it before c.
func (c *Copier) NewAllocator(info *MemoryInfo) (*Allocator, error) {
	s, err := c.session(Float32)
	if err != nil {
		return nil, err
	}
	return s.NewAllocator(info)
}

// Close releases the copy sessions.
func (c *Copier) Close() {
	for _, s := range c.sess {
		s.Close()
	}
	c.sess = nil
}

// CopiedBytes returns the bytes Copiers have moved so far.
func (e *Env) CopiedBytes() int64 { return e.copied.Load() }
