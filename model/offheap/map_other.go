//go:build !unix

package offheap

// mapBytes falls back to the Go heap where anonymous mappings are not
// available.
func mapBytes(n int) ([]byte, error) { return make([]byte, n), nil }

func unmapBytes([]byte) error { return nil }
