// Package ortc calls the parts of ONNX Runtime's C API that
// github.com/yalue/onnxruntime_go does not expose, on the same shared
// library that onnxruntime_go loaded: the C API table is obtained from the
// already-loaded library (dlopen with RTLD_NOLOAD), so both packages work
// on one ONNX Runtime environment. The header is onnxruntime_go's own copy
// of onnxruntime_c_api.h (scripts/setup.sh puts its directory in
// CGO_CFLAGS), so the API version is the one onnxruntime_go asks for.
//
// Conventions: functions take onnxruntime_go values where they exist
// (*ort.SessionOptions) and return errors prefixed "ortc:" with ONNX
// Runtime's own message.
package ortc

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stdlib.h>
#include "onnxruntime_c_api.h"

typedef const OrtApiBase* (*get_api_base_fn)(void);

static const OrtApi* spiral_ort_api(void* handle) {
	get_api_base_fn f = (get_api_base_fn)dlsym(handle, "OrtGetApiBase");
	if (f == NULL) return NULL;
	const OrtApiBase* base = f();
	if (base == NULL) return NULL;
	return base->GetApi(ORT_API_VERSION);
}

static void* spiral_dlopen_loaded(const char* path) {
	return dlopen(path, RTLD_NOW | RTLD_NOLOAD);
}

static char* spiral_status_message(const OrtApi* api, OrtStatus* st) {
	if (st == NULL) return NULL;
	const char* msg = api->GetErrorMessage(st);
	char* out = strdup(msg ? msg : "unknown error");
	api->ReleaseStatus(st);
	return out;
}

static char* spiral_set_deterministic(const OrtApi* api, OrtSessionOptions* so, int on) {
	return spiral_status_message(api, api->SetDeterministicCompute(so, on != 0));
}

static char* spiral_add_config(const OrtApi* api, OrtSessionOptions* so, const char* k, const char* v) {
	return spiral_status_message(api, api->AddSessionConfigEntry(so, k, v));
}
*/
import "C"

import (
	"errors"
	"fmt"
	"sync/atomic"
	"unsafe"

	ort "github.com/yalue/onnxruntime_go"
)

// API is the C API table of a loaded ONNX Runtime library.
type API struct {
	api *C.OrtApi
	lib string
	// live counts the Values made through this API and not released.
	live atomic.Int64
}

// LiveValues returns how many Values made through a are not released
// yet: tensors ONNX Runtime allocated and views of Go or device memory.
// A caller that releases what it makes returns it to where it was: a
// leak check.
func (a *API) LiveValues() int64 { return a.live.Load() }

// Open returns the C API of the ONNX Runtime library at path, which
// onnxruntime_go must already have loaded (ort.InitializeEnvironment).
func Open(path string) (*API, error) {
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	h := C.spiral_dlopen_loaded(cpath)
	if h == nil {
		return nil, fmt.Errorf("ortc: %s is not loaded in this process (initialise onnxruntime_go with it first)", path)
	}
	// The handle only adds a reference; the library stays loaded by
	// onnxruntime_go, so it is not closed here.
	api := C.spiral_ort_api(h)
	if api == nil {
		return nil, fmt.Errorf("ortc: %s does not provide ONNX Runtime C API version %d", path, int(C.ORT_API_VERSION))
	}
	return &API{api: api, lib: path}, nil
}

// sessionOptionsPtr returns the OrtSessionOptions* held by so:
// onnxruntime_go's SessionOptions is a struct whose only field is that
// pointer (checked by this package's tests through a config entry round
// trip).
func sessionOptionsPtr(so *ort.SessionOptions) *C.OrtSessionOptions {
	return (*C.OrtSessionOptions)(*(*unsafe.Pointer)(unsafe.Pointer(so)))
}

func status(msg *C.char) error {
	if msg == nil {
		return nil
	}
	defer C.free(unsafe.Pointer(msg))
	return errors.New(C.GoString(msg))
}

// SetDeterministicCompute asks ONNX Runtime to use deterministic kernels
// for sessions made with so (OrtApi::SetDeterministicCompute).
func (a *API) SetDeterministicCompute(so *ort.SessionOptions, on bool) error {
	v := C.int(0)
	if on {
		v = 1
	}
	if err := status(C.spiral_set_deterministic(a.api, sessionOptionsPtr(so), v)); err != nil {
		return fmt.Errorf("ortc: set deterministic compute: %w", err)
	}
	return nil
}

// AddSessionConfigEntry sets a session configuration entry on so through
// the C API (the same as so.AddSessionConfigEntry, used to check that both
// packages see one OrtSessionOptions).
func (a *API) AddSessionConfigEntry(so *ort.SessionOptions, key, value string) error {
	k, v := C.CString(key), C.CString(value)
	defer C.free(unsafe.Pointer(k))
	defer C.free(unsafe.Pointer(v))
	if err := status(C.spiral_add_config(a.api, sessionOptionsPtr(so), k, v)); err != nil {
		return fmt.Errorf("ortc: session config %s=%s: %w", key, value, err)
	}
	return nil
}
