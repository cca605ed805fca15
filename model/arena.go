package model

import (
	"errors"
	"fmt"
	"maps"
	"strconv"

	"github.com/spiral-rl/spiral/model/ortc"
)

// DeviceArena is one arena for the device's memory that every session
// opened after it takes its device tensors from (ONNX Runtime's
// environment allocator): the memory one session frees, such as the KV
// cache Sampler.Release drops before a training step, is there for the
// others, such as the training step's activations. Without it each
// session keeps its own arena on CUDA, and what one frees stays reserved
// for it. On the CPU it is the device twin's arena, and every session's
// host memory comes from it too.
type DeviceArena struct {
	env  *ortc.Env
	reg  *ortc.SharedArena
	info *ortc.MemoryInfo
	// probe is a session that takes the arena, whose allocator reads its
	// statistics.
	probe *ortc.Session
	alloc *ortc.Allocator
}

// ShareDeviceArena registers r's device arena (OpenRuntime does so as
// RuntimeOptions.Arena says). Sessions opened before it keep their own
// arenas.
func (r *Runtime) ShareDeviceArena() (a *DeviceArena, err error) {
	if r.arena != nil {
		return nil, errors.New("model: the device arena is shared already")
	}
	a = &DeviceArena{}
	defer func() {
		if err != nil {
			err = errors.Join(fmt.Errorf("model: share the device arena: %w", err), a.close())
		}
	}()
	if a.env, err = r.api.NewEnv(); err != nil {
		return nil, err
	}
	cfg, err := ArenaConfig(r.cudaOptions)
	if err != nil {
		return nil, fmt.Errorf("CUDA option %w", err)
	}
	var options map[string]string
	if r.device.Kind == CUDA {
		a.info, err = a.env.NewMemoryInfo("Cuda", r.device.ID)
		options = map[string]string{"device_id": strconv.Itoa(r.device.ID)}
		maps.Copy(options, r.cudaOptions)
	} else {
		a.info, err = a.env.NewTwinMemoryInfo()
	}
	if err != nil {
		return nil, err
	}
	if a.reg, err = a.env.RegisterArena(a.info, cfg, options); err != nil {
		return nil, err
	}
	// The probe opens as every session will from now on.
	so, err := r.NewSessionOptions()
	if err != nil {
		return nil, err
	}
	defer so.Destroy()
	if err := so.AddSessionConfigEntry(ortc.UseEnvAllocatorsEntry, "1"); err != nil {
		return nil, err
	}
	raw, err := ortc.IdentityModel(ortc.Float32)
	if err != nil {
		return nil, err
	}
	if a.probe, err = a.env.NewSession(raw, so, []string{"x"}, []string{"y"}); err != nil {
		return nil, err
	}
	if a.alloc, err = a.probe.NewAllocator(a.info); err != nil {
		return nil, err
	}
	r.arena = a
	return a, nil
}

// ArenaConfig is the shared arena's configuration from the CUDA
// provider's options that configure its own arenas (the shared one
// replaces them): gpu_mem_limit (bytes) and arena_extend_strategy. Its
// errors name the option.
func ArenaConfig(cudaOptions map[string]string) (ortc.ArenaConfig, error) {
	var cfg ortc.ArenaConfig
	if v, ok := cudaOptions["gpu_mem_limit"]; ok {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			return cfg, fmt.Errorf("gpu_mem_limit=%s: want a number of bytes > 0", v)
		}
		cfg.MaxBytes = n
	}
	switch v, ok := cudaOptions["arena_extend_strategy"]; {
	case !ok, v == "kNextPowerOfTwo":
	case v == "kSameAsRequested":
		cfg.SameAsRequested = true
	default:
		return cfg, fmt.Errorf("arena_extend_strategy=%s: want kNextPowerOfTwo or kSameAsRequested", v)
	}
	return cfg, nil
}

// DeviceArena returns the shared device arena, nil when there is none.
func (r *Runtime) DeviceArena() *DeviceArena { return r.arena }

// UnshareDeviceArena removes the shared arena: sessions opened from now on
// take their own again (those open keep the shared one until they
// close).
func (r *Runtime) UnshareDeviceArena() error {
	if r.arena == nil {
		return nil
	}
	a := r.arena
	r.arena = nil
	return a.close()
}

// Stats returns the arena's counters: bytes in use and their peak, and
// bytes reserved from the device (what the device sees in use).
func (a *DeviceArena) Stats() (ortc.AllocatorStats, error) {
	s, err := a.alloc.Stats()
	if err != nil {
		return s, fmt.Errorf("model: device arena: %w", err)
	}
	return s, nil
}

func (a *DeviceArena) close() error {
	a.alloc.Release()
	if a.probe != nil {
		a.probe.Close()
	}
	err := a.reg.Unregister()
	if a.info != nil {
		a.info.Release()
	}
	if a.env != nil {
		a.env.Close()
	}
	return err
}
