package tests

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/spiral-rl/spiral/model/onnx"
	"github.com/spiral-rl/spiral/model/qwen3"
)

// TestExternalDataPastTensors: a model whose external data file runs on
// past its last tensor by more than one alignment granule (64 KiB) is
// warned of, naming the file, where the tensors end and its size: the
// data file of another, larger model beside the graph was read without a
// word as long as every tensor fit. A file as Save writes it (tensors of
// 1 MiB or more aligned to 64 KiB, nothing after the last), or a granule
// longer, or weights inline in the model file, are not.
func TestExternalDataPastTensors(t *testing.T) {
	requireRuntime(t)
	const data = "model.onnx_data"
	// The MLP's matrices are 1 MiB: Save aligns them.
	cfg := qwen3.Tiny()
	cfg.Hidden, cfg.Intermediate = 256, 1024
	// save writes the model of cfg (seed 1) into a new directory of its
	// own, its weights in model.onnx_data when external, and returns the
	// directory.
	save := func(t *testing.T, cfg qwen3.Config, external bool) string {
		t.Helper()
		dir := t.TempDir()
		m, err := qwen3.Build(cfg, 1)
		require.NoError(t, err)
		opt := onnx.SaveOptions{}
		if external {
			opt.ExternalDataFile = data
		}
		require.NoError(t, onnx.Save(filepath.Join(dir, "model.onnx"), m, opt))
		return dir
	}
	appendZeros := func(t *testing.T, path string, n int) {
		t.Helper()
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
		require.NoError(t, err)
		_, err = f.Write(make([]byte, n))
		require.NoError(t, err)
		require.NoError(t, f.Close())
	}
	size := func(t *testing.T, path string) int64 {
		t.Helper()
		st, err := os.Stat(path)
		require.NoError(t, err)
		return st.Size()
	}
	tests := []struct {
		name string
		// model returns the model directory and, when the warning is
		// due, the end of its tensors in model.onnx_data.
		model func(t *testing.T) (dir string, end int64)
	}{
		{name: "inline weights", model: func(t *testing.T) (string, int64) { return save(t, cfg, false), 0 }},
		{name: "external data as saved", model: func(t *testing.T) (string, int64) { return save(t, cfg, true), 0 }},
		{name: "one granule more", model: func(t *testing.T) (string, int64) {
			dir := save(t, cfg, true)
			appendZeros(t, filepath.Join(dir, data), 64<<10)
			return dir, 0
		}},
		{name: "a byte past a granule", model: func(t *testing.T) (string, int64) {
			dir := save(t, cfg, true)
			end := size(t, filepath.Join(dir, data))
			appendZeros(t, filepath.Join(dir, data), 64<<10+1)
			return dir, end
		}},
		{name: "the data file of a deeper model", model: func(t *testing.T) (string, int64) {
			dir := save(t, cfg, true)
			end := size(t, filepath.Join(dir, data))
			deeper := cfg
			deeper.Layers += 2
			b, err := os.ReadFile(filepath.Join(save(t, deeper, true), data))
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(filepath.Join(dir, data), b, 0o644))
			return dir, end
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir, end := tt.model(t)
			r := spiral(t, nil, "artifacts", "--model", dir, "--out", t.TempDir())
			require.Equal(t, 0, r.code, r.stderr)
			if end == 0 {
				require.NotContains(t, r.stderr, "warning")
				return
			}
			path := filepath.Join(dir, data)
			require.Contains(t, r.stderr, fmt.Sprintf("spiral: warning: %s: its tensors use ", filepath.Join(dir, "model.onnx")))
			require.Contains(t, r.stderr, fmt.Sprintf("of external data file %s, ending at byte %d, but the file has %d: the %d bytes after them are not this model's",
				path, end, size(t, path), size(t, path)-end))
		})
	}
}
