package ortc

/*
#include <stdlib.h>
#include <string.h>
#include "onnxruntime_c_api.h"

char* spiral_msg_ext(const OrtApi* api, OrtStatus* st);

static char* spiral_arena_info(const OrtApi* api, const char* name, int id, OrtMemoryInfo** out) {
	return spiral_msg_ext(api, api->CreateMemoryInfo(name, OrtArenaAllocator, id, OrtMemTypeDefault, out));
}

// spiral_register_arena registers an arena allocator for info in env,
// configured by the n_cfg keys and values of an OrtArenaCfg: the CPU's
// through CreateAndRegisterAllocator, another device's through
// CreateAndRegisterAllocatorV2 with its execution provider and options
// (which reads the configuration's fields, so it is never NULL here).
static char* spiral_register_arena(const OrtApi* api, OrtEnv* env, const char* provider, OrtMemoryInfo* info,
		const char** cfg_keys, const size_t* cfg_values, size_t n_cfg,
		const char** keys, const char** values, size_t n) {
	OrtArenaCfg* cfg = NULL;
	char* err = spiral_msg_ext(api, api->CreateArenaCfgV2(cfg_keys, cfg_values, n_cfg, &cfg));
	if (err != NULL) return err;
	if (provider == NULL) err = spiral_msg_ext(api, api->CreateAndRegisterAllocator(env, info, cfg));
	else err = spiral_msg_ext(api, api->CreateAndRegisterAllocatorV2(env, provider, info, cfg, keys, values, n));
	api->ReleaseArenaCfg(cfg);
	return err;
}

static char* spiral_unregister_arena(const OrtApi* api, OrtEnv* env, OrtMemoryInfo* info) {
	return spiral_msg_ext(api, api->UnregisterAllocator(env, info));
}

// spiral_allocator_stats returns the allocator's statistics as n
// malloc'ed key and value strings (freed by the caller).
static char* spiral_allocator_stats(const OrtApi* api, OrtAllocator* a, char*** keys, char*** values, size_t* n) {
	OrtKeyValuePairs* kv = NULL;
	char* err = spiral_msg_ext(api, api->AllocatorGetStats(a, &kv));
	if (err != NULL) return err;
	const char* const* k = NULL;
	const char* const* v = NULL;
	api->GetKeyValuePairs(kv, &k, &v, n);
	*keys = (char**)calloc(*n > 0 ? *n : 1, sizeof(char*));
	*values = (char**)calloc(*n > 0 ? *n : 1, sizeof(char*));
	for (size_t i = 0; i < *n; i++) {
		(*keys)[i] = strdup(k[i]);
		(*values)[i] = strdup(v[i]);
	}
	api->ReleaseKeyValuePairs(kv);
	return NULL;
}
*/
import "C"

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"unsafe"
)

// UseEnvAllocatorsEntry is the session configuration entry that, set to
// "1", makes a session take its allocators from those registered in the
// environment (Env.RegisterArena) instead of making its own.
const UseEnvAllocatorsEntry = "session.use_env_allocators"

// CUDAProviderName is the name ONNX Runtime knows its CUDA execution
// provider by.
const CUDAProviderName = "CUDAExecutionProvider"

// SharedArena is an arena allocator registered in the environment: every
// session opened with UseEnvAllocatorsEntry takes its memory of that
// device from it, so memory one session frees (a KV cache) is memory
// another may use (a training step's activations), where each session's
// own arena would keep it. Unregister it before the environment closes.
type SharedArena struct {
	env  *Env
	info *MemoryInfo // of allocator type arena, which makes ONNX Runtime build one
}

// ArenaConfig configures a SharedArena; the zero value is ONNX Runtime's
// defaults.
type ArenaConfig struct {
	// MaxBytes caps the bytes the arena reserves (0: no cap).
	MaxBytes int64
	// SameAsRequested grows the arena by what an allocation asks, where
	// by default it grows in powers of two.
	SameAsRequested bool
}

// RegisterArena registers an arena allocator for the memory device
// describes (NewMemoryInfo's name and id; the twin's is the CPU's):
// "Cpu" through CreateAndRegisterAllocator, "Cuda" through
// CreateAndRegisterAllocatorV2 with the CUDA provider's options.
// Register one per device.
func (e *Env) RegisterArena(device *MemoryInfo, cfg ArenaConfig, providerOptions map[string]string) (*SharedArena, error) {
	if cfg.MaxBytes < 0 {
		return nil, fmt.Errorf("ortc: arena on %s: a cap of %d bytes", device, cfg.MaxBytes)
	}
	cn := C.CString(device.name)
	defer C.free(unsafe.Pointer(cn))
	a := &SharedArena{env: e, info: &MemoryInfo{api: e.api, name: device.name, id: device.id}}
	if err := status(C.spiral_arena_info(e.api.api, cn, C.int(device.id), &a.info.info)); err != nil {
		return nil, fmt.Errorf("ortc: arena memory info %s: %w", device, err)
	}
	var provider *C.char
	if device.name == "Cuda" {
		provider = C.CString(CUDAProviderName)
		defer C.free(unsafe.Pointer(provider))
	} else if len(providerOptions) > 0 {
		a.info.Release()
		return nil, fmt.Errorf("ortc: arena on %s: provider options are for a device's arena, not the CPU's", device)
	}
	// The string arrays live in C memory: cgo does not let C keep a Go
	// pointer to Go memory that holds pointers.
	cfgKeys := newCStrings("max_mem", "arena_extend_strategy")
	defer cfgKeys.free()
	extend := C.size_t(0) // kNextPowerOfTwo
	if cfg.SameAsRequested {
		extend = 1 // kSameAsRequested
	}
	cfgValues := []C.size_t{C.size_t(cfg.MaxBytes), extend}
	names := slices.Sorted(maps.Keys(providerOptions))
	vals := make([]string, len(names))
	for i, k := range names {
		vals[i] = providerOptions[k]
	}
	keys, values := newCStrings(names...), newCStrings(vals...)
	defer keys.free()
	defer values.free()
	if err := status(C.spiral_register_arena(e.api.api, e.env, provider, a.info.info,
		cfgKeys.ptr(), &cfgValues[0], C.size_t(len(cfgValues)), keys.ptr(), values.ptr(), C.size_t(len(names)))); err != nil {
		a.info.Release()
		return nil, fmt.Errorf("ortc: register an arena for %s in the environment: %w", device, err)
	}
	return a, nil
}

// cStrings is an array of C strings in C memory.
type cStrings struct {
	s   []*C.char
	arr []*C.char // cArray, made by ptr
}

func newCStrings(ss ...string) *cStrings {
	c := &cStrings{}
	for _, s := range ss {
		c.s = append(c.s, C.CString(s))
	}
	return c
}

// ptr returns the array (nil when empty).
func (c *cStrings) ptr() **C.char {
	if len(c.s) == 0 {
		return nil
	}
	if c.arr == nil {
		c.arr = cArray[*C.char](len(c.s))
		copy(c.arr, c.s)
	}
	return &c.arr[0]
}

func (c *cStrings) free() {
	for _, p := range c.s {
		C.free(unsafe.Pointer(p))
	}
	if c.arr != nil {
		C.free(unsafe.Pointer(&c.arr[0]))
	}
	c.s, c.arr = nil, nil
}

// Unregister removes the arena from the environment (sessions that took
// it keep it until they close). Safe on nil and more than once.
func (a *SharedArena) Unregister() error {
	if a == nil || a.info.info == nil {
		return nil
	}
	err := status(C.spiral_unregister_arena(a.env.api.api, a.env.env, a.info.info))
	a.info.Release()
	if err != nil {
		return fmt.Errorf("ortc: unregister the arena for %s: %w", a.info, err)
	}
	return nil
}

// AllocatorStats are an arena's counters (ONNX Runtime's AllocatorStats).
type AllocatorStats struct {
	// InUse is the bytes handed out and not freed; MaxInUse its peak.
	InUse, MaxInUse int64
	// Reserved is the bytes the arena holds from the device (in use or
	// free for reuse): what the device sees as used.
	Reserved int64
	// Allocs counts allocations.
	Allocs int64
}

// Stats returns a's statistics; an allocator that keeps none (not an
// arena) is an error.
func (a *Allocator) Stats() (AllocatorStats, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.released {
		return AllocatorStats{}, errors.New("ortc: allocator statistics: the allocator is released")
	}
	return allocatorStats(a.api, a.a)
}

func allocatorStats(api *API, a *C.OrtAllocator) (AllocatorStats, error) {
	var ck, cv **C.char
	var n C.size_t
	if err := status(C.spiral_allocator_stats(api.api, a, &ck, &cv, &n)); err != nil {
		return AllocatorStats{}, fmt.Errorf("ortc: allocator statistics: %w", err)
	}
	defer C.free(unsafe.Pointer(ck))
	defer C.free(unsafe.Pointer(cv))
	kv := map[string]string{}
	keys, values := unsafe.Slice(ck, int(n)), unsafe.Slice(cv, int(n))
	for i := range keys {
		kv[C.GoString(keys[i])] = C.GoString(values[i])
		C.free(unsafe.Pointer(keys[i]))
		C.free(unsafe.Pointer(values[i]))
	}
	if len(kv) == 0 {
		return AllocatorStats{}, errors.New("ortc: allocator statistics: the allocator keeps none (not an arena)")
	}
	var s AllocatorStats
	for _, f := range []struct {
		key string
		to  *int64
	}{{"InUse", &s.InUse}, {"MaxInUse", &s.MaxInUse}, {"TotalAllocated", &s.Reserved}, {"NumAllocs", &s.Allocs}} {
		v, ok := kv[f.key]
		if !ok {
			return AllocatorStats{}, fmt.Errorf("ortc: allocator statistics: no %q among %v", f.key, slices.Sorted(maps.Keys(kv)))
		}
		var err error
		if *f.to, err = strconv.ParseInt(v, 10, 64); err != nil {
			return AllocatorStats{}, fmt.Errorf("ortc: allocator statistics: %s = %q: %w", f.key, v, err)
		}
	}
	return s, nil
}
