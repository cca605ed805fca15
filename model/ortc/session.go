package ortc

/*
#include <stdlib.h>
#include <string.h>
#include "onnxruntime_c_api.h"

static char* spiral_msg(const OrtApi* api, OrtStatus* st) {
	if (st == NULL) return NULL;
	const char* msg = api->GetErrorMessage(st);
	char* out = strdup(msg ? msg : "unknown error");
	api->ReleaseStatus(st);
	return out;
}

// spiral_msg_ext is spiral_msg for the other files' preambles.
char* spiral_msg_ext(const OrtApi* api, OrtStatus* st) { return spiral_msg(api, st); }

static char* spiral_create_env(const OrtApi* api, OrtEnv** env) {
	return spiral_msg(api, api->CreateEnv(ORT_LOGGING_LEVEL_ERROR, "spiral", env));
}

static void spiral_release_env(const OrtApi* api, OrtEnv* env) { api->ReleaseEnv(env); }

static char* spiral_cpu_info(const OrtApi* api, OrtMemoryInfo** info) {
	return spiral_msg(api, api->CreateCpuMemoryInfo(OrtDeviceAllocator, OrtMemTypeDefault, info));
}

static void spiral_release_info(const OrtApi* api, OrtMemoryInfo* info) { api->ReleaseMemoryInfo(info); }

static char* spiral_create_session(const OrtApi* api, OrtEnv* env, const void* data, size_t n,
		OrtSessionOptions* so, OrtSession** out) {
	return spiral_msg(api, api->CreateSessionFromArray(env, data, n, so, out));
}

static char* spiral_create_session_file(const OrtApi* api, OrtEnv* env, const char* path,
		OrtSessionOptions* so, OrtSession** out) {
	return spiral_msg(api, api->CreateSession(env, path, so, out));
}

static void spiral_release_session(const OrtApi* api, OrtSession* s) { api->ReleaseSession(s); }

static char* spiral_run(const OrtApi* api, OrtSession* s, const char** in_names, OrtValue** in, size_t nin,
		const char** out_names, OrtValue** out, size_t nout) {
	return spiral_msg(api, api->Run(s, NULL, in_names, (const OrtValue* const*)in, nin, out_names, nout, out));
}

static char* spiral_tensor(const OrtApi* api, OrtMemoryInfo* info, void* data, size_t bytes,
		const int64_t* shape, size_t rank, int elem, OrtValue** out) {
	return spiral_msg(api, api->CreateTensorWithDataAsOrtValue(info, data, bytes, shape, rank,
		(ONNXTensorElementDataType)elem, out));
}

static char* spiral_alloc_tensor(const OrtApi* api, const int64_t* shape, size_t rank, int elem, OrtValue** out) {
	OrtAllocator* alloc = NULL;
	char* err = spiral_msg(api, api->GetAllocatorWithDefaultOptions(&alloc));
	if (err != NULL) return err;
	return spiral_msg(api, api->CreateTensorAsOrtValue(alloc, shape, rank, (ONNXTensorElementDataType)elem, out));
}

static char* spiral_describe(const OrtApi* api, OrtValue* v, int* elem, int64_t* dims, size_t* rank, size_t maxRank, void** data, int* device) {
	const OrtMemoryInfo* mem = NULL;
	const char* where = NULL;
	char* merr = spiral_msg(api, api->GetTensorMemoryInfo(v, &mem));
	if (merr == NULL) merr = spiral_msg(api, api->MemoryInfoGetName(mem, &where));
	if (merr != NULL) return merr;
	// Host memory: the CPU's and CUDA's pinned host memory.
	*device = strcmp(where, "Cpu") != 0 && strcmp(where, "CudaPinned") != 0;
	OrtTensorTypeAndShapeInfo* info = NULL;
	char* err = spiral_msg(api, api->GetTensorTypeAndShape(v, &info));
	if (err != NULL) return err;
	ONNXTensorElementDataType t;
	err = spiral_msg(api, api->GetTensorElementType(info, &t));
	if (err == NULL) err = spiral_msg(api, api->GetDimensionsCount(info, rank));
	if (err == NULL && *rank > maxRank) err = strdup("tensor rank exceeds 16");
	if (err == NULL) err = spiral_msg(api, api->GetDimensions(info, dims, *rank));
	api->ReleaseTensorTypeAndShapeInfo(info);
	if (err != NULL) return err;
	*elem = (int)t;
	return spiral_msg(api, api->GetTensorMutableData(v, data));
}

static void spiral_release_value(const OrtApi* api, OrtValue* v) { api->ReleaseValue(v); }
*/
import "C"

import (
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"unsafe"

	ort "github.com/yalue/onnxruntime_go"
)

// maxRank bounds the rank of the tensors Session.Run returns.
const maxRank = 16

// Env is a reference to the process's ONNX Runtime environment (the C API
// keeps one per process and counts references, so this is the environment
// onnxruntime_go created) with a CPU memory description for tensors over
// Go memory.
type Env struct {
	api *API
	env *C.OrtEnv
	cpu *C.OrtMemoryInfo
	// copied counts the bytes Copiers have moved.
	copied atomic.Int64
}

// NewEnv takes a reference to the environment.
func (a *API) NewEnv() (*Env, error) {
	e := &Env{api: a}
	if err := status(C.spiral_create_env(a.api, &e.env)); err != nil {
		return nil, fmt.Errorf("ortc: environment: %w", err)
	}
	if err := status(C.spiral_cpu_info(a.api, &e.cpu)); err != nil {
		C.spiral_release_env(a.api, e.env)
		return nil, fmt.Errorf("ortc: cpu memory info: %w", err)
	}
	return e, nil
}

// Close drops the reference.
func (e *Env) Close() {
	if e.cpu != nil {
		C.spiral_release_info(e.api.api, e.cpu)
		e.cpu = nil
	}
	if e.env != nil {
		C.spiral_release_env(e.api.api, e.env)
		e.env = nil
	}
}

// ElemType is an ONNX tensor element type (onnx.TensorProto.DataType).
type ElemType int

// Element types a Value can hold.
const (
	Float32 ElemType = 1
	Uint8   ElemType = 2
	Int32   ElemType = 6
	Int64   ElemType = 7
	Bool    ElemType = 9
	Float64 ElemType = 11
)

// Size returns the element size in bytes.
func (t ElemType) Size() int {
	switch t {
	case Float32, Int32:
		return 4
	case Int64, Float64:
		return 8
	case Uint8, Bool:
		return 1
	}
	return 0
}

// Value is a tensor: either ONNX Runtime's (an output it allocated; the
// memory is freed by Release), a view of Go memory (pinned by the Value
// until Release), or a view of another tensor's memory (View). Every
// Value over some memory, and every Binding such a Value is bound in,
// holds that memory (memory): it is freed, or unpinned, with the last of
// them, so releasing a tensor before its views leaves them reading its
// values.
type Value struct {
	api   *API
	v     *C.OrtValue
	shape []int64
	elem  ElemType
	data  unsafe.Pointer
	n     int // elements
	// mem is the memory data lies in, held by v until Release.
	mem *memory
	// device: the data is in device memory, not readable from Go.
	device bool
	// info is the memory a tensor from AllocOn (or a view of one) lives
	// in; nil otherwise.
	info *MemoryInfo
}

// memory is the memory of a tensor's data, shared by the Value it was
// made for and every Value over it (its views, the outputs a Binding
// returns for it) and held by the Bindings they are bound in: freed
// when the last of them lets go (drop). Go memory that a Value reads in
// place (NewTensor) is pinned until then, as cgo requires of Go memory
// that C keeps a pointer to after a call (which also keeps it alive).
type memory struct {
	api  *API
	refs atomic.Int64
	// owner is the OrtValue of the tensor the memory was made for: it
	// frees memory ONNX Runtime allocated, and is released last.
	owner *C.OrtValue
	// pin pins the Go memory of a tensor over it (nil otherwise); unpin
	// unpins it should the memory become unreachable before its last
	// reference is dropped (a Value never released), where the Pinner
	// would otherwise crash the process as a leak.
	pin   *runtime.Pinner
	unpin runtime.Cleanup
	// from is the Allocator that frees the memory (AllocOn; nil
	// otherwise), which must outlive it.
	from *Allocator
}

// newMemory returns the memory of the tensor owner (set by the caller
// when nil), with one reference.
func newMemory(api *API, owner *C.OrtValue) *memory {
	m := &memory{api: api, owner: owner}
	m.refs.Store(1)
	return m
}

// pinGo pins the Go memory at p (nothing when p is not Go memory) until
// the memory is freed.
func (m *memory) pinGo(p unsafe.Pointer) {
	m.pin = new(runtime.Pinner)
	m.pin.Pin(p)
	m.unpin = runtime.AddCleanup(m, (*runtime.Pinner).Unpin, m.pin)
}

// hold notes another reference to m, taken by a holder of one.
func (m *memory) hold() { m.refs.Add(1) }

// drop drops a reference to m, freeing m with the last one.
func (m *memory) drop() {
	if m.refs.Add(-1) == 0 {
		m.free()
	}
}

func (m *memory) free() {
	if m.owner != nil {
		C.spiral_release_value(m.api.api, m.owner)
		m.owner = nil
	}
	if m.pin != nil {
		m.unpin.Stop()
		m.pin.Unpin()
		m.pin = nil
	}
	if m.from != nil {
		m.from.drop()
		m.from = nil
	}
}

// OnDevice reports whether v's data is in device memory (not readable
// from Go: copy it to a host tensor with a Copier).
func (v *Value) OnDevice() bool { return v.device }

// Placed reports whether v lives in memory taken from an allocator
// (AllocOn, AllocLike, or a View of such a tensor): the device layer's
// memory, which is the host's on the CPU twin, where OnDevice is false.
func (v *Value) Placed() bool { return v.info != nil }

// checkReadable panics when v's data cannot be read from Go: it is in
// device memory, or v is released (naming accessor and v's shape).
func (v *Value) checkReadable(accessor string) {
	if v.device {
		panic("ortc: the data of a tensor in device memory read from Go; copy it to the host first (Copier)")
	}
	if v.v == nil {
		panic(fmt.Sprintf("ortc: %s of a released tensor of shape %v", accessor, v.shape))
	}
}

// Shape returns the tensor's dims (not to be modified).
func (v *Value) Shape() []int64 { return v.shape }

// Elem returns the element type.
func (v *Value) Elem() ElemType { return v.elem }

// Len returns the number of elements.
func (v *Value) Len() int { return v.n }

// Float32s returns the data of a float tensor, in place: writes are seen
// by the next run that reads v.
func (v *Value) Float32s() []float32 { return elements[float32](v, "Float32s") }

// Float64s returns the data of a double tensor, in place.
func (v *Value) Float64s() []float64 { return elements[float64](v, "Float64s") }

// Int64s returns the data of an int64 tensor, in place.
func (v *Value) Int64s() []int64 { return elements[int64](v, "Int64s") }

// Int32s returns the data of an int32 tensor, in place.
func (v *Value) Int32s() []int32 { return elements[int32](v, "Int32s") }

// Bools returns the data of a bool tensor, in place.
func (v *Value) Bools() []bool { return elements[bool](v, "Bools") }

// elements returns v's data as a []T in place; it panics (naming the
// accessor) when v is released, in device memory or of another element
// type.
func elements[T element](v *Value, accessor string) []T {
	v.checkReadable(accessor)
	if v.elem != elemOf[T]() {
		panic(fmt.Sprintf("ortc: %s of a tensor of element type %d", accessor, v.elem))
	}
	if v.n == 0 {
		return nil
	}
	return unsafe.Slice((*T)(v.data), v.n)
}

// Bytes returns the raw data of a tensor of any element type, in place.
func (v *Value) Bytes() []byte {
	v.checkReadable("Bytes")
	if v.n == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(v.data), v.n*v.elem.Size())
}

// Release releases the tensor, and its memory (ONNX Runtime's, or the Go
// memory it pins) unless views of it, outputs over it or Bindings it is
// bound in still hold that: the last of them frees it. Reading or
// viewing v afterwards is an error. It is safe on nil and more than
// once.
func (v *Value) Release() {
	if v == nil || v.v == nil {
		return
	}
	if v.v != v.mem.owner {
		C.spiral_release_value(v.api.api, v.v)
	}
	v.mem.drop()
	v.v, v.data, v.mem = nil, nil, nil
	v.api.live.Add(-1)
}

// Scalar element types of the Go slices NewTensor wraps.
type element interface {
	~float32 | ~float64 | ~int64 | ~int32 | ~bool | ~uint8
}

func elemOf[T element]() ElemType {
	var z T
	switch any(z).(type) {
	case float32:
		return Float32
	case float64:
		return Float64
	case int64:
		return Int64
	case int32:
		return Int32
	case bool:
		return Bool
	case uint8:
		return Uint8
	}
	panic("ortc: unsupported element type")
}

// NewTensor wraps data (shape's element count, at least one element) as
// a tensor without copying it, pinning it (runtime.Pinner: ONNX Runtime
// keeps the pointer after this call) until the tensor and whatever holds
// it let go (Release). data must not be reallocated while the Value
// lives; writes to it are seen by later runs.
func NewTensor[T element](e *Env, shape []int64, data []T) (*Value, error) {
	n := int64(1)
	for _, d := range shape {
		if d < 0 {
			return nil, fmt.Errorf("ortc: tensor shape %v has a negative dim", shape)
		}
		n *= d
	}
	if int64(len(data)) != n {
		return nil, fmt.Errorf("ortc: tensor shape %v needs %d values, have %d", shape, n, len(data))
	}
	elem := elemOf[T]()
	v := &Value{api: e.api, shape: append([]int64(nil), shape...), elem: elem, n: int(n)}
	var ptr unsafe.Pointer
	if n > 0 {
		ptr = unsafe.Pointer(&data[0])
	} else {
		// ONNX Runtime wants a non-null pointer even for empty tensors.
		ptr = unsafe.Pointer(new([8]byte))
	}
	v.data = ptr
	v.mem = newMemory(e.api, nil)
	v.mem.pinGo(ptr)
	var dims *C.int64_t
	if len(shape) > 0 {
		dims = (*C.int64_t)(unsafe.Pointer(&v.shape[0]))
	}
	if err := status(C.spiral_tensor(e.api.api, e.cpu, ptr, C.size_t(int(n)*elem.Size()), dims, C.size_t(len(shape)), C.int(elem), &v.v)); err != nil {
		v.mem.free()
		return nil, fmt.Errorf("ortc: tensor %v: %w", shape, err)
	}
	v.mem.owner = v.v
	e.api.live.Add(1)
	return v, nil
}

// Alloc returns a tensor of the given shape in memory ONNX Runtime
// allocates (outside the Go heap; freed by Release), its contents
// undefined.
func Alloc[T element](e *Env, shape []int64) (*Value, error) {
	for _, d := range shape {
		if d < 0 {
			return nil, fmt.Errorf("ortc: tensor shape %v has a negative dim", shape)
		}
	}
	var dims *C.int64_t
	if len(shape) > 0 {
		dims = (*C.int64_t)(unsafe.Pointer(&shape[0]))
	}
	var p *C.OrtValue
	if err := status(C.spiral_alloc_tensor(e.api.api, dims, C.size_t(len(shape)), C.int(elemOf[T]()), &p)); err != nil {
		return nil, fmt.Errorf("ortc: allocate tensor %v: %w", shape, err)
	}
	v, err := e.api.describe(p, nil)
	if err != nil {
		C.spiral_release_value(e.api.api, p)
		return nil, fmt.Errorf("ortc: allocate tensor %v: %w", shape, err)
	}
	return v, nil
}

// Session is an inference session with fixed input and output names.
type Session struct {
	api      *API
	s        *C.OrtSession
	inNames  []*C.char
	outNames []*C.char
	ins      []string
	outs     []string
}

// NewSession creates a session on the serialized model with the options
// so (built with onnxruntime_go), reading the named inputs and computing
// the named outputs.
func (e *Env) NewSession(model []byte, so *ort.SessionOptions, inputs, outputs []string) (*Session, error) {
	if len(model) == 0 {
		return nil, errors.New("ortc: empty model")
	}
	if len(outputs) == 0 {
		return nil, errors.New("ortc: session without outputs")
	}
	s := &Session{api: e.api, ins: append([]string(nil), inputs...), outs: append([]string(nil), outputs...)}
	if err := status(C.spiral_create_session(e.api.api, e.env, unsafe.Pointer(&model[0]), C.size_t(len(model)), sessionOptionsPtr(so), &s.s)); err != nil {
		return nil, fmt.Errorf("ortc: create session: %w", err)
	}
	runtime.KeepAlive(model)
	for _, n := range inputs {
		s.inNames = append(s.inNames, C.CString(n))
	}
	for _, n := range outputs {
		s.outNames = append(s.outNames, C.CString(n))
	}
	return s, nil
}

// NewSessionFile is NewSession on the model file at path (its external
// data resolved beside it).
func (e *Env) NewSessionFile(path string, so *ort.SessionOptions, inputs, outputs []string) (*Session, error) {
	if len(outputs) == 0 {
		return nil, errors.New("ortc: session without outputs")
	}
	s := &Session{api: e.api, ins: append([]string(nil), inputs...), outs: append([]string(nil), outputs...)}
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	if err := status(C.spiral_create_session_file(e.api.api, e.env, cpath, sessionOptionsPtr(so), &s.s)); err != nil {
		return nil, fmt.Errorf("ortc: create session from %s: %w", path, err)
	}
	for _, n := range inputs {
		s.inNames = append(s.inNames, C.CString(n))
	}
	for _, n := range outputs {
		s.outNames = append(s.outNames, C.CString(n))
	}
	return s, nil
}

// errClosed is the error of a call on a closed Session, whose null
// OrtSession ONNX Runtime would dereference.
var errClosed = errors.New("the session is closed")

// Inputs and Outputs return the names the session was made with.
func (s *Session) Inputs() []string  { return s.ins }
func (s *Session) Outputs() []string { return s.outs }

// Close releases the session.
func (s *Session) Close() {
	if s.s != nil {
		C.spiral_release_session(s.api.api, s.s)
		s.s = nil
	}
	for _, p := range append(s.inNames, s.outNames...) {
		C.free(unsafe.Pointer(p))
	}
	s.inNames, s.outNames = nil, nil
}

// Run computes the outputs from inputs (in the session's orders). A nil
// entry of outputs is allocated by ONNX Runtime and returned in its place;
// the caller releases it (on error none is: the entries stay nil).
// Non-nil entries are written in place.
func (s *Session) Run(inputs, outputs []*Value) error {
	if s.s == nil {
		// Close dropped the names too: the counts below would be 0.
		return fmt.Errorf("ortc: run: %w", errClosed)
	}
	if len(inputs) != len(s.inNames) || len(outputs) != len(s.outNames) {
		return fmt.Errorf("ortc: run with %d inputs and %d outputs; the session has %d and %d", len(inputs), len(outputs), len(s.inNames), len(s.outNames))
	}
	// The pointer arrays live in C memory, out of the garbage
	// collector's way while ONNX Runtime reads them.
	nin, nout := len(inputs), len(outputs)
	inArr := cArray[*C.OrtValue](max(1, nin))
	outArr := cArray[*C.OrtValue](nout)
	inNames := cArray[*C.char](max(1, nin))
	outNames := cArray[*C.char](nout)
	defer C.free(unsafe.Pointer(&inArr[0]))
	defer C.free(unsafe.Pointer(&outArr[0]))
	defer C.free(unsafe.Pointer(&inNames[0]))
	defer C.free(unsafe.Pointer(&outNames[0]))
	for i, v := range inputs {
		if v == nil || v.v == nil {
			return fmt.Errorf("ortc: run: input %q is not set", s.ins[i])
		}
		inArr[i] = v.v
		inNames[i] = s.inNames[i]
	}
	for i, v := range outputs {
		outArr[i] = nil
		if v != nil {
			// A released Value's nil would have the run allocate an
			// output that nothing returns or releases.
			if v.v == nil {
				return fmt.Errorf("ortc: run: output %q is released", s.outs[i])
			}
			outArr[i] = v.v
		}
		outNames[i] = s.outNames[i]
	}
	if err := status(C.spiral_run(s.api.api, s.s, &inNames[0], &inArr[0], C.size_t(nin), &outNames[0], &outArr[0], C.size_t(nout))); err != nil {
		return fmt.Errorf("ortc: run: %w", err)
	}
	runtime.KeepAlive(inputs)
	var made []int // the outputs this run allocated and described so far
	for i, v := range outputs {
		if v != nil {
			continue
		}
		out, err := s.api.describe(outArr[i], nil)
		if err != nil {
			// The caller, given an error, releases no output: those
			// this run allocated go, the ones described already too.
			for _, j := range made {
				outputs[j].Release()
				outputs[j] = nil
			}
			for j := i; j < nout; j++ {
				if outputs[j] == nil {
					C.spiral_release_value(s.api.api, outArr[j])
				}
			}
			return fmt.Errorf("ortc: run: output %q: %w", s.outs[i], err)
		}
		outputs[i] = out
		made = append(made, i)
	}
	return nil
}

// cArray allocates n pointers in C memory (freed by the caller), zeroed:
// storing a pointer into the array runs Go's write barrier, which reads
// the slot's old value as a pointer while the collector runs, and
// malloc's leftovers can look like a pointer into the Go heap ("found bad
// pointer in Go heap").
func cArray[T any](n int) []T {
	var z T
	return unsafe.Slice((*T)(C.calloc(C.size_t(n), C.size_t(unsafe.Sizeof(z)))), n)
}

// describe wraps an ONNX Runtime tensor, noting whether it is in device
// memory: one that owns its data (mem nil), or one over mem, which the
// Value holds. On error p is left to the caller to release.
func (a *API) describe(p *C.OrtValue, mem *memory) (*Value, error) {
	var elem, device C.int
	var dims [maxRank]C.int64_t
	var rank C.size_t
	var data unsafe.Pointer
	if err := status(C.spiral_describe(a.api, p, &elem, &dims[0], &rank, maxRank, &data, &device)); err != nil {
		return nil, err
	}
	v := &Value{api: a, v: p, elem: ElemType(elem), data: data, n: 1, device: device != 0}
	for i := 0; i < int(rank); i++ {
		v.shape = append(v.shape, int64(dims[i]))
		v.n *= int(dims[i])
	}
	if v.elem.Size() == 0 {
		return nil, fmt.Errorf("element type %d is not supported", v.elem)
	}
	if mem == nil {
		mem = newMemory(a, p)
	} else {
		mem.hold()
	}
	v.mem = mem
	a.live.Add(1)
	return v, nil
}
