// Package offheap allocates large, long-lived float32 buffers outside the
// Go heap.
//
// Go's collector paces itself by the live heap: with GOGC=100 it lets
// garbage grow to the size of what is live before collecting. A 15 GB KV
// cache in the heap thus lets gigabytes of short-lived buffers pile up
// (measured: 0.3 GB at a 0.7 GB cache, 64 decode steps), memory that the
// cache's owner never asked for. Mapped outside the heap, such a buffer
// does not count towards the pacing; its pages are committed on first
// write, so slots never filled cost nothing.
package offheap

import (
	"fmt"
	"math"
	"runtime"
	"unsafe"
)

// Float32s is a buffer of float32 values outside the Go heap. It is freed
// by Free, or when the Float32s becomes unreachable; the slice from
// Values must not be used after either.
type Float32s struct {
	values  []float32
	mem     []byte
	cleanup runtime.Cleanup
}

// New maps a zeroed buffer of n float32 values.
func New(n int) (*Float32s, error) {
	if n < 0 || n > math.MaxInt/4 {
		return nil, fmt.Errorf("offheap: %d values", n)
	}
	if n == 0 {
		return &Float32s{}, nil
	}
	mem, err := mapBytes(4 * n)
	if err != nil {
		return nil, fmt.Errorf("offheap: map %d values (%d bytes): %w", n, 4*n, err)
	}
	b := &Float32s{values: unsafe.Slice((*float32)(unsafe.Pointer(&mem[0])), n), mem: mem}
	b.cleanup = runtime.AddCleanup(b, func(mem []byte) { _ = unmapBytes(mem) }, mem)
	return b, nil
}

// Values returns the buffer's values.
func (b *Float32s) Values() []float32 { return b.values }

// Bytes returns the buffer's size.
func (b *Float32s) Bytes() int64 { return int64(len(b.mem)) }

// Free unmaps the buffer now; a second call does nothing.
func (b *Float32s) Free() error {
	if b.mem == nil {
		return nil
	}
	b.cleanup.Stop()
	mem := b.mem
	b.values, b.mem = nil, nil
	if err := unmapBytes(mem); err != nil {
		return fmt.Errorf("offheap: unmap %d bytes: %w", len(mem), err)
	}
	return nil
}
