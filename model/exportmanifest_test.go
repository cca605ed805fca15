package model_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/spiral-rl/spiral/model"
	"github.com/spiral-rl/spiral/model/lmgraph"
	"github.com/spiral-rl/spiral/model/modeltest"
	"github.com/spiral-rl/spiral/model/params"
)

// exportManifest is testdata/hfqwen3/export_manifest.json, written by
// make_export_manifest.py from what transformers and peft save for the
// HF fixture's config.
type exportManifest struct {
	LoRA struct {
		Rank    int      `json:"rank"`
		Alpha   float64  `json:"alpha"`
		Targets []string `json:"targets"`
	} `json:"lora"`
	HF   map[string]manifestTensor `json:"hf"`
	PEFT map[string]manifestTensor `json:"peft"`
}

type manifestTensor struct {
	Shape []int64 `json:"shape"`
	DType string  `json:"dtype"`
}

// torchDTypes maps safetensors dtypes to torch's names.
var torchDTypes = map[params.DType]string{params.F32: "float32", params.F16: "float16", params.BF16: "bfloat16"}

// requireSafetensorsMatch reads the header of the safetensors file at path
// (validated by params.ReadHeader) and checks that it holds exactly the
// tensors of want, with their shapes and dtypes.
func requireSafetensorsMatch(t *testing.T, path string, want map[string]manifestTensor) {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	st, err := f.Stat()
	require.NoError(t, err)
	h, err := params.ReadHeader(f, st.Size())
	require.NoError(t, err, "valid safetensors header")
	got := map[string]manifestTensor{}
	for _, ti := range h.Tensors {
		got[ti.Name] = manifestTensor{Shape: ti.Shape, DType: torchDTypes[ti.DType]}
	}
	require.Equal(t, want, got)
}

// TestExportsMatchManifest checks spiral's HF and peft exports of the HF
// fixture against the names, shapes and dtypes transformers' and peft's
// save_pretrained write for the same config (export_manifest.json), and
// the adapter config against the LoRA it was made with.
func TestExportsMatchManifest(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(hfFixtureDir, "export_manifest.json"))
	require.NoError(t, err)
	var want exportManifest
	require.NoError(t, json.Unmarshal(raw, &want))
	src := filepath.Join(hfFixtureDir, "model.onnx")
	// The dynamo fixture is the same model exported by PyTorch's dynamo
	// exporter (weights anonymous, placed by their nodes' name scopes).
	dynamo := filepath.Join("testdata", "dynamoqwen3", "model.onnx")

	var hfFile []byte
	for _, tc := range []struct{ name, src string }{{"hf", src}, {"hf from the dynamo export", dynamo}} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			none, err := params.NewStore(nil)
			require.NoError(t, err)
			_, err = model.ExportHF(context.Background(), tc.src, "", dir, none, lmgraph.LoRA{}, nil, false)
			require.NoError(t, err)
			requireSafetensorsMatch(t, filepath.Join(dir, model.HFWeightsFile), want.HF)
			b, err := os.ReadFile(filepath.Join(dir, model.HFWeightsFile))
			require.NoError(t, err)
			if hfFile == nil {
				hfFile = b
			} else {
				require.Equal(t, hfFile, b, "both exporters' graphs give the same weights file")
			}
		})
	}

	t.Run("peft from the dynamo export", func(t *testing.T) {
		l := lmgraph.LoRA{Rank: want.LoRA.Rank, Alpha: want.LoRA.Alpha, Targets: want.LoRA.Targets}
		p, err := model.OpenPolicy(context.Background(), modeltest.Runtime(t), dynamo, t.TempDir(), model.PolicyOptions{Artifacts: model.ArtifactOptions{LoRA: l}})
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, p.Close()) })
		dir := t.TempDir()
		n, err := model.ExportPEFT(context.Background(), dynamo, l, p.Weights, "base", "", dir)
		require.NoError(t, err)
		require.Equal(t, len(want.PEFT), n)
		requireSafetensorsMatch(t, filepath.Join(dir, model.PEFTWeightsFile), want.PEFT)
	})

	t.Run("peft", func(t *testing.T) {
		l := lmgraph.LoRA{Rank: want.LoRA.Rank, Alpha: want.LoRA.Alpha, Targets: want.LoRA.Targets}
		p, err := model.OpenPolicy(context.Background(), modeltest.Runtime(t), src, t.TempDir(), model.PolicyOptions{Artifacts: model.ArtifactOptions{LoRA: l}})
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, p.Close()) })
		dir := t.TempDir()
		n, err := model.ExportPEFT(context.Background(), src, l, p.Weights, "base", "", dir)
		require.NoError(t, err)
		require.Equal(t, len(want.PEFT), n)
		requireSafetensorsMatch(t, filepath.Join(dir, model.PEFTWeightsFile), want.PEFT)
		var cfg struct {
			PEFTType      string   `json:"peft_type"`
			R             int      `json:"r"`
			Alpha         float64  `json:"lora_alpha"`
			TargetModules []string `json:"target_modules"`
		}
		b, err := os.ReadFile(filepath.Join(dir, model.PEFTConfigFile))
		require.NoError(t, err)
		require.NoError(t, json.Unmarshal(b, &cfg))
		require.Equal(t, "LORA", cfg.PEFTType)
		require.Equal(t, l.Rank, cfg.R)
		require.Equal(t, l.Alpha, cfg.Alpha)
		require.True(t, slices.Equal(l.Targets, cfg.TargetModules))
	})
}
