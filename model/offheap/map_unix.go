//go:build unix

package offheap

import "syscall"

// mapBytes maps n zeroed bytes of anonymous private memory.
func mapBytes(n int) ([]byte, error) {
	return syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
}

func unmapBytes(mem []byte) error { return syscall.Munmap(mem) }
