package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestResolveDirectoryWithoutONNX: a directory without model.onnx that
// holds what `spiral export --format hf` or `--format peft` writes is
// named as such, with what to give instead, rather than asked for "the
// directory of an export", which it is.
func TestResolveDirectoryWithoutONNX(t *testing.T) {
	for _, tc := range []struct {
		name, file, want string
	}{
		{"empty", "", "--model: directory DIR holds no model.onnx (give the .onnx file, or the directory of an export)"},
		{"hf", "model.safetensors", "--model: directory DIR holds a Hugging Face model (model.safetensors) and no model.onnx: spiral runs ONNX models; give the ONNX model it was exported from (with --checkpoint for a run's weights) or an ONNX export (spiral export --format onnx, optimum-cli export onnx)"},
		{"peft", "adapter_config.json", "--model: directory DIR holds a peft adapter (adapter_config.json) and no model.onnx: give the ONNX base model as --model and the LoRA run as --checkpoint, or a merged export (spiral export --format onnx)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if tc.file != "" {
				require.NoError(t, os.WriteFile(filepath.Join(dir, tc.file), []byte("{}"), 0o644))
			}
			f := modelFlags{model: dir}
			_, err := f.resolve(io.Discard)
			require.EqualError(t, err, strings.ReplaceAll(tc.want, "DIR", dir))
		})
	}
}
