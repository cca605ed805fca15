package ortc_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	ort "github.com/yalue/onnxruntime_go"

	"github.com/spiral-rl/spiral/model/ortc"
)

// TestSharedArena: sessions opened with UseEnvAllocatorsEntry take their
// device memory from the one arena registered in the environment, so a
// tensor one allocates is counted in the other's statistics and freeing
// it returns its bytes to what both can use; sessions without the entry,
// or opened after Unregister, keep arenas of their own.
func TestSharedArena(t *testing.T) {
	env, so := openEnv(t)
	info, err := env.NewTwinMemoryInfo()
	require.NoError(t, err)
	defer info.Release()
	stats := func(a *ortc.Allocator) ortc.AllocatorStats {
		t.Helper()
		s, err := a.Stats()
		require.NoError(t, err)
		return s
	}
	allocators := func(so *ort.SessionOptions) (*ortc.Allocator, *ortc.Allocator) {
		t.Helper()
		var out [2]*ortc.Allocator
		for i := range out {
			a, err := addSession(t, env, so).NewAllocator(info)
			require.NoError(t, err)
			t.Cleanup(a.Release)
			out[i] = a
		}
		return out[0], out[1]
	}
	const n = 1 << 20 // floats: 4 MiB

	// Each session its own arena: what one holds, the other does not see.
	own1, own2 := allocators(so)
	v, err := ortc.AllocOn[float32](own1, []int64{n})
	require.NoError(t, err)
	require.GreaterOrEqual(t, stats(own1).InUse, int64(4*n))
	require.Zero(t, stats(own2).InUse)
	v.Release()

	arena, err := env.RegisterArena(info, ortc.ArenaConfig{}, nil)
	require.NoError(t, err)
	shared, err := ort.NewSessionOptions()
	require.NoError(t, err)
	defer shared.Destroy()
	require.NoError(t, shared.AddSessionConfigEntry(ortc.UseEnvAllocatorsEntry, "1"))
	a1, a2 := allocators(shared)
	before := stats(a2)
	v, err = ortc.AllocOn[float32](a1, []int64{n})
	require.NoError(t, err)
	held := stats(a2)
	require.Equal(t, stats(a1), held, "both sessions read one arena")
	require.GreaterOrEqual(t, held.InUse-before.InUse, int64(4*n))
	require.GreaterOrEqual(t, held.Reserved, held.InUse)
	require.Equal(t, before.Allocs+1, held.Allocs)
	v.Release()
	freed := stats(a2)
	require.Equal(t, before.InUse, freed.InUse, "the bytes are back in the arena")
	require.Equal(t, held.Reserved, freed.Reserved, "and still reserved from the device, for any session")
	require.Equal(t, held.MaxInUse, freed.MaxInUse)
	// Reused: the same allocation from the other session does not grow it.
	v, err = ortc.AllocOn[float32](a2, []int64{n})
	require.NoError(t, err)
	require.Equal(t, held.Reserved, stats(a1).Reserved)
	v.Release()

	require.NoError(t, arena.Unregister())
	require.NoError(t, arena.Unregister(), "twice is safe")
	after1, after2 := allocators(shared)
	v, err = ortc.AllocOn[float32](after1, []int64{n})
	require.NoError(t, err)
	defer v.Release()
	require.Zero(t, stats(after2).InUse, "after Unregister each session has its own again")
}

// TestRegisterArenaErrors: provider options belong to a device's arena,
// and an allocator that keeps no statistics says so.
func TestRegisterArenaErrors(t *testing.T) {
	env, so := openEnv(t)
	info, err := env.NewTwinMemoryInfo()
	require.NoError(t, err)
	defer info.Release()
	_, err = env.RegisterArena(info, ortc.ArenaConfig{}, map[string]string{"gpu_mem_limit": "1"})
	require.ErrorContains(t, err, "provider options are for a device's arena")

	require.NoError(t, so.SetCpuMemArena(false))
	a, err := addSession(t, env, so).NewAllocator(info)
	require.NoError(t, err)
	defer a.Release()
	_, err = a.Stats()
	require.ErrorContains(t, err, "keeps none (not an arena)")
}

// TestArenaConfig: the configuration reaches the arena ONNX Runtime
// builds (the one CUDA's registration is given too): a cap on its bytes
// fails an allocation above it, and growing by what is asked reserves
// less than growing in powers of two.
func TestArenaConfig(t *testing.T) {
	env, _ := openEnv(t)
	info, err := env.NewTwinMemoryInfo()
	require.NoError(t, err)
	defer info.Release()
	shared, err := ort.NewSessionOptions()
	require.NoError(t, err)
	defer shared.Destroy()
	require.NoError(t, shared.AddSessionConfigEntry(ortc.UseEnvAllocatorsEntry, "1"))
	// reserve returns the bytes the arena reserves for the allocations of
	// sizes (floats), or the first allocation's error.
	reserve := func(cfg ortc.ArenaConfig, sizes ...int64) (int64, error) {
		t.Helper()
		arena, err := env.RegisterArena(info, cfg, nil)
		require.NoError(t, err)
		defer func() { require.NoError(t, arena.Unregister()) }()
		a, err := addSession(t, env, shared).NewAllocator(info)
		require.NoError(t, err)
		defer a.Release()
		for _, n := range sizes {
			v, err := ortc.AllocOn[float32](a, []int64{n})
			if err != nil {
				return 0, err
			}
			defer v.Release()
		}
		s, err := a.Stats()
		require.NoError(t, err)
		return s.Reserved, nil
	}
	sizes := []int64{3 << 20, 5 << 20} // 12 and 20 MiB
	pow2, err := reserve(ortc.ArenaConfig{}, sizes...)
	require.NoError(t, err)
	asked, err := reserve(ortc.ArenaConfig{SameAsRequested: true}, sizes...)
	require.NoError(t, err)
	t.Logf("reserved: powers of two %d, as requested %d", pow2, asked)
	require.GreaterOrEqual(t, asked, int64(32<<20))
	require.Less(t, asked, pow2)
	_, err = reserve(ortc.ArenaConfig{MaxBytes: 16 << 20}, sizes...)
	require.Error(t, err, "20 MiB more do not fit a 16 MiB cap")
	_, err = reserve(ortc.ArenaConfig{MaxBytes: 64 << 20}, sizes...)
	require.NoError(t, err)
	_, err = env.RegisterArena(info, ortc.ArenaConfig{MaxBytes: -1}, nil)
	require.ErrorContains(t, err, "a cap of -1 bytes")
}
