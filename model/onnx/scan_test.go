package onnx

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// A field of the graph or of an initializer must end inside its message:
// a length prefix near 2^63 must not wrap the bounds check around and make
// LoadGraph allocate it, and a varint or fixed-size value that runs on
// past the message's end makes the file as corrupt as protobuf finds it.
func TestLoadGraphFieldPastItsMessage(t *testing.T) {
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
		after []byte // bytes of the file after the graph
		want  string
	}{
		{"graph field of length 2^63-1", cat([]byte{0x0a}, maxLen), nil, "graph field 1 runs past its message"},
		{"tensor field of length 2^63-1", cat([]byte{0x2a, 0x0a, 0x0a}, maxLen), nil, "tensor field 1 runs past its message"},
		{"tensor raw_data of length 2^63-1", cat([]byte{0x2a, 0x0a, 0x4a}, maxLen), nil, "tensor field 9 runs past its message"},
		// field 15 varint, its value after the graph
		{"graph varint past the graph", []byte{0x78}, []byte{0x05}, "graph field 15 runs past its message"},
		// tensor field 15 fixed32, two of its bytes after the tensor
		{"tensor fixed32 past the tensor", []byte{0x2a, 0x03, 0x7d, 0x00, 0x00}, []byte{0x00, 0x00}, "tensor field 15 runs past its message"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "m.onnx")
			require.NoError(t, os.WriteFile(p, cat([]byte{0x3a, byte(len(tc.graph))}, tc.graph, tc.after), 0o644))
			var err error
			require.NotPanics(t, func() { _, err = LoadGraph(p) })
			require.ErrorContains(t, err, p)
			require.ErrorContains(t, err, tc.want)
		})
	}
}
