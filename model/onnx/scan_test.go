package onnx

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// A length prefix inside the graph or an initializer near 2^63 must not
// wrap the bounds check around and make LoadGraph allocate it.
func TestLoadGraphHugeNestedLength(t *testing.T) {
	maxLen := []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f} // varint 2^63-1
	cat := func(parts ...[]byte) []byte {
		var b []byte
		for _, p := range parts {
			b = append(b, p...)
		}
		return b
	}
	tests := []struct {
		name  string
		graph []byte // the GraphProto's bytes
		want  string
	}{
		{"graph field", cat([]byte{0x0a}, maxLen), "graph field 1 runs past its message"},
		{"tensor field", cat([]byte{0x2a, 0x0a, 0x0a}, maxLen), "tensor field 1 runs past its message"},
		{"tensor raw_data", cat([]byte{0x2a, 0x0a, 0x4a}, maxLen), "tensor field 9 runs past its message"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "m.onnx")
			require.NoError(t, os.WriteFile(p, cat([]byte{0x3a, byte(len(tc.graph))}, tc.graph), 0o644))
			var err error
			require.NotPanics(t, func() { _, err = LoadGraph(p) })
			require.ErrorContains(t, err, p)
			require.ErrorContains(t, err, tc.want)
		})
	}
}
