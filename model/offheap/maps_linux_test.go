package offheap_test

import (
	"bytes"
	"os"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// mappedBytes returns this process's mapped address space (VmSize).
func mappedBytes(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	require.NoError(t, err)
	for line := range bytes.Lines(b) {
		if f := bytes.Fields(line); len(f) == 3 && string(f[0]) == "VmSize:" {
			kb, err := strconv.ParseInt(string(f[1]), 10, 64)
			require.NoError(t, err)
			return kb << 10
		}
	}
	t.Fatal("no VmSize in /proc/self/status")
	return 0
}
