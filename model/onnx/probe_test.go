package onnx

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protowire"
)

// TestProbe: a model passes, with a field a later ONNX may add too; an
// empty file, garbage, a truncated model, a protobuf without a graph or
// with a graph that is not a message are refused with the file's name.
func TestProbe(t *testing.T) {
	dir := t.TempDir()
	b := NewGraphBuilder("g")
	x := b.Input("x", Float32, D(2))
	b.Output(b.Node("Relu", []string{x}), Float32, D(2))
	good := filepath.Join(dir, "good.onnx")
	require.NoError(t, Save(good, b.Model(18), SaveOptions{}))
	require.NoError(t, Probe(good))
	full, err := os.ReadFile(good)
	require.NoError(t, err)
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, b, 0o644))
		return p
	}
	// A top-level field ModelProto does not have (yet): protobuf skips it,
	// and so does Probe, as the decoder does.
	later := append(append([]byte{}, full...), protowire.AppendVarint(protowire.AppendTag(nil, 40, protowire.VarintType), 3)...)
	require.NoError(t, Probe(write("later.onnx", later)))
	for _, tc := range []struct {
		name, path, want string
	}{
		{"graph not a message", write("graphvarint.onnx", []byte{0x38, 0x01}), "no graph"},
		{"field number 0", write("zero.onnx", []byte{0x00, 0x01}), "field number 0"},
		{"empty", write("empty.onnx", nil), "the file is empty"},
		{"garbage", write("garbage.onnx", []byte("\xff\xff\xff\xff not onnx")), "not a valid ONNX model"},
		{"truncated", write("short.onnx", full[:len(full)-5]), "truncated or corrupt protobuf"},
		{"no graph", write("nograph.onnx", []byte{0x08, 0x08}), "no graph"},
		// It was read as 4096 bytes with an "unreadable field tag".
		{"a directory", func() string { p := filepath.Join(dir, "dir.onnx"); require.NoError(t, os.Mkdir(p, 0o755)); return p }(), "is a directory: want an ONNX model file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Probe(tc.path)
			require.ErrorContains(t, err, tc.path)
			require.ErrorContains(t, err, tc.want)
		})
	}
}
