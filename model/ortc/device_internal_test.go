package ortc

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// A tensor in device memory cannot be read from Go: every accessor
// panics with the remedy rather than dereferencing a device pointer.
func TestDeviceValueIsNotReadable(t *testing.T) {
	v := &Value{elem: Float32, n: 1, device: true}
	require.True(t, v.OnDevice())
	require.PanicsWithValue(t, "ortc: the data of a tensor in device memory read from Go; copy it to the host first (Copier)", func() { v.Float32s() })
	require.Panics(t, func() { v.Bytes() })
}
