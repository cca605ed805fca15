package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/spiral-rl/spiral/model/memplan"
	"github.com/spiral-rl/spiral/model/qwen3"
)

// TestInitModelConfigContext: init-model --config writes the release's
// context and rotary base (config.json of Hugging Face's Qwen/Qwen3-*),
// as it writes its shape; it wrote the tiny model's 4096 positions and
// θ 10000, so that plan cut its default 9,216 tokens to 4,096 and bench
// refused the paper's 9k-token rows on it. A flag given overrides them,
// as the shape flags do.
func TestInitModelConfigContext(t *testing.T) {
	want := map[string]struct {
		positions int
		theta     float64
	}{
		"qwen3-0.6b": {40960, 1e6},
		"qwen3-1.7b": {40960, 1e6},
		"qwen3-4b":   {40960, 1e6},
		"qwen3-8b":   {40960, 1e6},
	}
	require.ElementsMatch(t, memplan.Names(), func() []string {
		var ns []string
		for n := range want {
			ns = append(ns, n)
		}
		return ns
	}(), "a named config without a row here")
	small := []string{"--layers", "1", "--hidden", "16", "--intermediate", "16", "--head-dim", "4"}
	read := func(dir string) map[string]any {
		b, err := os.ReadFile(filepath.Join(dir, "config.json"))
		require.NoError(t, err)
		var c map[string]any
		require.NoError(t, json.Unmarshal(b, &c))
		return c
	}
	for name, w := range want {
		t.Run(name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "m")
			var stderr bytes.Buffer
			args := append([]string{"init-model", "--out", out, "--config", name}, small...)
			require.Zero(t, run(context.Background(), args, &cliEnv{stdout: io.Discard, stderr: &stderr}), stderr.String())
			c := read(out)
			require.Equal(t, float64(w.positions), c["max_position_embeddings"])
			require.Equal(t, w.theta, c["rope_theta"])
		})
	}
	t.Run("flags override", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "m")
		var stderr bytes.Buffer
		args := append([]string{"init-model", "--out", out, "--config", "qwen3-4b", "--rope-theta", "5e6", "--max-positions", "262144"}, small...)
		require.Zero(t, run(context.Background(), args, &cliEnv{stdout: io.Discard, stderr: &stderr}), stderr.String())
		c := read(out)
		require.Equal(t, float64(262144), c["max_position_embeddings"])
		require.Equal(t, 5e6, c["rope_theta"])
	})
	t.Run("tiny default", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "m")
		var stderr bytes.Buffer
		require.Zero(t, run(context.Background(), []string{"init-model", "--out", out, "--layers", "1"}, &cliEnv{stdout: io.Discard, stderr: &stderr}), stderr.String())
		c := read(out)
		require.Equal(t, float64(4096), c["max_position_embeddings"])
		require.Equal(t, 1e4, c["rope_theta"])
	})
}

// TestDeviceFlagUsage: an unknown --device is a usage error naming the
// flag, the value and the accepted ones, without the model package's
// prefix ("--device: model: device \"gpu\": want ..." before).
func TestDeviceFlagUsage(t *testing.T) {
	for _, tc := range []struct{ device, want string }{
		{"gpu", `spiral generate: --device "gpu": want cpu, cuda, cuda:N or auto` + "\n"},
		{"GPU", `spiral generate: --device "GPU": want cpu, cuda, cuda:N or auto` + "\n"},
		{"cuda:x", `spiral generate: --device "cuda:x": want cuda:N with N a non-negative integer` + "\n"},
	} {
		t.Run(tc.device, func(t *testing.T) {
			var stderr bytes.Buffer
			code := run(context.Background(), []string{"generate", "--device", tc.device, "hi"}, &cliEnv{stdout: io.Discard, stderr: &stderr})
			require.Equal(t, exitUsage, code, stderr.String())
			require.Equal(t, tc.want, stderr.String())
		})
	}
}

// TestInitModelReplacesAnotherModelWhole: init-model into a peft
// adapter's directory (adapter_model.safetensors, adapter_config.json)
// wrote its model beside the adapter without --overwrite (exit 0), and
// --overwrite into an hf export's directory replaced its config.json and
// tokenizer but left its model.safetensors, which transformers and
// serving engines then loaded with the new model's config. The first is
// refused naming the file; --overwrite removes the replaced model's
// Hugging Face weights and adapter.
func TestInitModelReplacesAnotherModelWhole(t *testing.T) {
	for _, files := range [][]string{{"adapter_model.safetensors", "adapter_config.json"}, {"config.json", "model.safetensors"}, {"model.safetensors.index.json"}} {
		t.Run(files[0], func(t *testing.T) {
			dir := t.TempDir()
			for _, f := range files {
				require.NoError(t, os.WriteFile(filepath.Join(dir, f), []byte("{}"), 0o644))
			}
			var stderr bytes.Buffer
			args := []string{"init-model", "--layers", "1", "--out", dir}
			require.Equal(t, exitUsage, run(context.Background(), args, &cliEnv{stdout: io.Discard, stderr: &stderr}))
			require.Contains(t, stderr.String(), "--out "+dir+" already holds a model's "+files[0]+" ("+filepath.Join(dir, files[0])+"): give --overwrite to replace it, or another --out")
			stderr.Reset()
			require.Zero(t, run(context.Background(), append(args, "--overwrite"), &cliEnv{stdout: io.Discard, stderr: &stderr}), stderr.String())
			for _, f := range files {
				if f != "config.json" {
					require.NoFileExists(t, filepath.Join(dir, f), "the replaced model's")
				}
			}
			require.FileExists(t, filepath.Join(dir, "model.onnx"))
		})
	}
}

// TestArtifactsOutIsAFile: an artifacts --out that is a file is a usage
// error naming the flag; it said "model: artifacts: mkdir F: not a
// directory" (exit 1), naming no flag.
func TestArtifactsOutIsAFile(t *testing.T) {
	t.Setenv("SPIRAL_CACHE_DIR", t.TempDir())
	dir := t.TempDir()
	file := filepath.Join(dir, "graphs")
	require.NoError(t, os.WriteFile(file, []byte("x"), 0o644))
	var stderr bytes.Buffer
	code := run(context.Background(), []string{"artifacts", "--out", file}, &cliEnv{stdout: io.Discard, stderr: &stderr})
	require.Equal(t, exitUsage, code, stderr.String())
	require.Equal(t, "spiral artifacts: --out "+file+" is a file: want the directory to write the graphs in, such as "+filepath.Join(dir, "artifacts")+"\n", stderr.String())
}

// TestInitModelMaxPositionsRange: --max-positions 0 is refused naming
// the flag; it wrote max_position_embeddings 32768 (transformers'
// default, which config.json's 0 stands for), neither the 0 asked for
// nor the flag's documented default of 4096.
func TestInitModelMaxPositionsRange(t *testing.T) {
	for _, v := range []string{"0", "-1"} {
		out := filepath.Join(t.TempDir(), "m")
		var stderr bytes.Buffer
		code := run(context.Background(), []string{"init-model", "--out", out, "--max-positions", v}, &cliEnv{stdout: io.Discard, stderr: &stderr})
		require.Equal(t, exitUsage, code, stderr.String())
		require.Equal(t, "spiral init-model: --max-positions "+v+": want >= 1\n", stderr.String())
		require.NoDirExists(t, out)
	}
}

// TestInitModelShapePastMemory: a shape that would not fit in the memory
// available is refused before any weight is drawn, as a usage error
// naming the shape's flags, its weights and the memory it needs, from
// init-model's measured peak (1.25 times the fp32 weights, 3.25 times
// where the graph keeps them inline). It compared the weights alone with
// MemTotal and returned exit 1: qwen3-0.6b (2.22 GiB of weights, 2.68
// GiB resident at its peak) passed on a machine with 2.5 GiB and was
// killed or failed after drawing them, and so did qwen3-0.6b --layers 4
// (0.81 GiB, 2.48 GiB resident) with 1.5 GiB.
func TestInitModelShapePastMemory(t *testing.T) {
	small, _ := qwen3.Release("qwen3-0.6b")
	small.Layers = 4
	full, _ := qwen3.Release("qwen3-0.6b")
	for _, tc := range []struct {
		name string
		c    qwen3.Config
		have int64
		want string
	}{
		{"tiny", qwen3.Tiny(), 1 << 30, ""},
		{"external data fits", full, 3 << 30, ""},
		{"external data past", full, 5 << 29, "a model of --layers 28 --hidden 1024 --intermediate 3072 --heads 16 --kv-heads 8 --head-dim 128 --vocab 151936 has 2.22 GiB of fp32 weights and needs about 2.78 GiB of memory while they are drawn and written, more than the 2.50 GiB this machine has available: give a smaller shape"},
		{"inline fits", small, 3 << 30, ""},
		{"inline past", small, 3 << 29, "a model of --layers 4 --hidden 1024 --intermediate 3072 --heads 16 --kv-heads 8 --head-dim 128 --vocab 151936 has 0.81 GiB of fp32 weights and needs about 2.65 GiB of memory while they are drawn and written, more than the 1.50 GiB this machine has available: give a smaller shape"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := checkWeightsFit(tc.c, tc.have)
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			require.EqualError(t, err, tc.want)
			require.ErrorAs(t, err, new(usageError))
		})
	}
	// A shape past any machine: exit 2, before --out is made.
	out := filepath.Join(t.TempDir(), "m")
	var stderr bytes.Buffer
	code := run(context.Background(), []string{"init-model", "--out", out, "--layers", "1048576", "--hidden", "1048576", "--intermediate", "1048576"}, &cliEnv{stdout: io.Discard, stderr: &stderr})
	require.Equal(t, exitUsage, code, stderr.String())
	require.Contains(t, stderr.String(), "spiral init-model: a model of --layers 1048576 --hidden 1048576 --intermediate 1048576 ")
	require.NoDirExists(t, out)
}
