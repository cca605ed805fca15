package offheap_test

import (
	"math"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/spiral-rl/spiral/model/offheap"
)

func TestNewIsZeroedAndWritable(t *testing.T) {
	for _, n := range []int{0, 1, 1023, 1 << 20} {
		b, err := offheap.New(n)
		require.NoError(t, err, n)
		v := b.Values()
		require.Len(t, v, n)
		require.Equal(t, int64(4*n), b.Bytes())
		for i := range v {
			require.Zero(t, v[i])
			v[i] = float32(i)
		}
		for i := range v {
			require.Equal(t, float32(i), v[i])
		}
		require.NoError(t, b.Free())
		require.NoError(t, b.Free(), "a second Free does nothing")
		require.Nil(t, b.Values())
	}
	_, err := offheap.New(-1)
	require.ErrorContains(t, err, "-1 values")
	// 4 x n wraps to 4 bytes: an error, not a one-page mapping under a
	// slice of n values (unsafe.Slice panics on it, the mapping leaks).
	_, err = offheap.New(math.MaxInt/2 + 2)
	require.ErrorContains(t, err, "values")
	_, err = offheap.New(math.MaxInt/4 + 1)
	require.ErrorContains(t, err, "values")
}

// The point of the package: a buffer of 256 MiB, written throughout, does
// not grow the Go heap, so the collector's pacing does not scale with it.
func TestBufferIsOutsideTheHeap(t *testing.T) {
	if runtime.GOOS == "windows" || runtime.GOOS == "plan9" {
		t.Skip("no anonymous mappings: the fallback is the heap")
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	b, err := offheap.New(64 << 20)
	require.NoError(t, err)
	v := b.Values()
	for i := 0; i < len(v); i += 1024 {
		v[i] = 1
	}
	runtime.ReadMemStats(&after)
	require.Less(t, int64(after.HeapAlloc)-int64(before.HeapAlloc), int64(16<<20), "heap grew with the buffer")
	require.Less(t, int64(after.HeapSys)-int64(before.HeapSys), int64(16<<20), "heap grew with the buffer")
	require.NoError(t, b.Free())
}

// An unreachable buffer is unmapped by the collector: 32 dropped buffers
// of 64 MiB (2 GiB of address space) leave the mapped size where it was.
func TestUnreachableBufferIsFreed(t *testing.T) {
	base := mappedBytes(t)
	for range 32 {
		b, err := offheap.New(16 << 20)
		require.NoError(t, err)
		b.Values()[0] = 1
	}
	require.Greater(t, mappedBytes(t), base+int64(1<<30), "the buffers were not mapped")
	require.Eventually(t, func() bool {
		runtime.GC()
		return mappedBytes(t) < base+int64(256<<20)
	}, 5*time.Second, 10*time.Millisecond, "the dropped buffers stay mapped")
}
