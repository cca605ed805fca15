package ortc

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stdlib.h>

#include <string.h>

// spiral_dlopen returns NULL, or the loader's message as a copy the
// caller frees: dlerror's own buffer belongs to the thread, which the
// calling goroutine may leave, and another call on it overwrites.
static char* spiral_dlopen(const char* path, int global) {
	void* h = dlopen(path, RTLD_NOW | (global ? RTLD_GLOBAL : RTLD_LOCAL));
	if (h == NULL) {
		const char* e = dlerror();
		return strdup(e != NULL ? e : "dlopen failed");
	}
	if (!global) dlclose(h);
	return NULL;
}
*/
import "C"

import (
	"errors"
	"unsafe"
)

// LoadLibrary loads the shared library at path with its symbols global,
// so that libraries loaded later that need it by its soname find it
// already loaded (CUDA's libraries beside ONNX Runtime's CUDA provider,
// which does not look beside itself). It stays loaded.
func LoadLibrary(path string) error { return dlopen(path, true) }

// CheckLibrary loads and unloads the shared library at path, returning
// the dynamic loader's message (naming the dependency it could not find)
// when it cannot be loaded.
func CheckLibrary(path string) error { return dlopen(path, false) }

func dlopen(path string, global bool) error {
	cp := C.CString(path)
	defer C.free(unsafe.Pointer(cp))
	g := C.int(0)
	if global {
		g = 1
	}
	if msg := C.spiral_dlopen(cp, g); msg != nil {
		defer C.free(unsafe.Pointer(msg))
		return errors.New(C.GoString(msg))
	}
	return nil
}
