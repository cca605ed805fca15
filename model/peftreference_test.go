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

// readSafetensorsFile reads the safetensors file at path into a store of
// its own tensors.
func readSafetensorsFile(t *testing.T, path string) *params.Store {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	fi, err := f.Stat()
	require.NoError(t, err)
	h, err := params.ReadHeader(f, fi.Size())
	require.NoError(t, err)
	specs := make([]params.Spec, len(h.Tensors))
	for i, ti := range h.Tensors {
		specs[i] = params.Spec{Name: ti.Name, Shape: ti.Shape}
	}
	s, err := params.NewStore(specs)
	require.NoError(t, err)
	_, err = f.Seek(0, 0)
	require.NoError(t, err)
	_, err = s.ReadSafetensors(f, fi.Size(), nil)
	require.NoError(t, err)
	return s
}

// peftAdapterConfig holds the fields of peft's adapter_config.json that
// define a plain LoRA adapter.
type peftAdapterConfig struct {
	PEFTType    string   `json:"peft_type"`
	TaskType    string   `json:"task_type"`
	R           int      `json:"r"`
	Alpha       float64  `json:"lora_alpha"`
	Targets     []string `json:"target_modules"`
	Bias        string   `json:"bias"`
	RSLoRA      bool     `json:"use_rslora"`
	DoRA        bool     `json:"use_dora"`
	FanInFanOut bool     `json:"fan_in_fan_out"`
}

// TestLoRAMatchesPEFT checks spiral's LoRA against peft itself: the HF
// fixture's model with an adapter that peft wrote (testdata/hfqwen3/peft,
// rank 3, alpha 5, every projection, random A and B;
// make_peft_reference.py) gives in spiral's LoRA graphs, its factors
// loaded as A = lora_A^T and B = lora_B^T, the logits that peft's
// PeftModel computed (peft_reference.json), within the fixture's
// tolerance, while the adapter moves them by far more; and spiral's peft
// export of those factors is peft's file, tensor for tensor and bit for
// bit, with the rank, alpha, scaling (no rsLoRA) and targets of peft's
// adapter_config.json.
func TestLoRAMatchesPEFT(t *testing.T) {
	rt := modeltest.Runtime(t)
	ref := loadHFReference(t, hfFixtureDir)
	var pref struct {
		Rank    int       `json:"rank"`
		Alpha   float64   `json:"alpha"`
		Targets []string  `json:"targets"`
		Moved   float64   `json:"moved"`
		Shape   []int     `json:"logits_shape"`
		Logits  []float64 `json:"logits"`
	}
	b, err := os.ReadFile(filepath.Join(hfFixtureDir, "peft_reference.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &pref))
	B, T, V := ref.Batch, ref.Seq, ref.Vocab
	require.Equal(t, []int{B, T, V}, pref.Shape)
	peftDir := filepath.Join(hfFixtureDir, "peft")
	var peftCfg peftAdapterConfig
	b, err = os.ReadFile(filepath.Join(peftDir, model.PEFTConfigFile))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &peftCfg))
	l := lmgraph.LoRA{Rank: peftCfg.R, Alpha: peftCfg.Alpha, Targets: peftCfg.Targets}.Canonical()
	require.Equal(t, lmgraph.LoRA{Rank: pref.Rank, Alpha: pref.Alpha, Targets: pref.Targets}.Canonical(), l)
	peftWeights := readSafetensorsFile(t, filepath.Join(peftDir, model.PEFTWeightsFile))

	src := filepath.Join(hfFixtureDir, "model.onnx")
	p, err := model.OpenPolicy(context.Background(), rt, src, t.TempDir(), model.PolicyOptions{Artifacts: model.ArtifactOptions{LoRA: l}})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, p.Close()) })
	adapters := p.Artifacts.Manifest.LoRA.Adapters
	require.Len(t, adapters, 7*ref.Config.Layers)
	require.Equal(t, 2*len(adapters), peftWeights.Len(), "peft's file: lora_A and lora_B of every adapter")
	for _, a := range adapters {
		for _, f := range []struct{ factor, peft string }{{a.A, "lora_A"}, {a.B, "lora_B"}} {
			pt, ok := peftWeights.Get("base_model.model." + a.Module + "." + f.peft + ".weight")
			require.True(t, ok, "%s.%s in peft's file", a.Module, f.peft)
			st, ok := p.Weights.Get(f.factor)
			require.True(t, ok)
			require.Equal(t, []int64{pt.Shape[1], pt.Shape[0]}, st.Shape, "%s: spiral's factor is peft's transposed", f.factor)
			rows, cols := int(pt.Shape[0]), int(pt.Shape[1])
			for i := range rows {
				for j := range cols {
					st.Data[j*rows+i] = pt.Data[i*cols+j]
				}
			}
		}
	}
	p.Weights.Touch()
	lm, err := p.Scorer()
	require.NoError(t, err)
	mask := hfFlat(t, "attention_mask", ref.AttentionMask, T)
	logits, err := lm.Forward(context.Background(), model.Step{Batch: B, Seq: T, InputIDs: hfFlat(t, "input_ids", ref.InputIDs, T),
		AttentionMask: mask, PositionIDs: hfFlat(t, "position_ids", ref.PositionIDs, T)}, lm.NewKVCache(B, T), nil)
	require.NoError(t, err)
	maxErr, at := hfMaxErr(logits, pref.Logits, mask, V)
	t.Logf("spiral's LoRA vs peft: max |diff| %.3g (%s); the adapter moves the logits by up to %.3g", maxErr, at, pref.Moved)
	require.Greater(t, pref.Moved, 1.0, "the adapter must move the logits")
	require.LessOrEqual(t, maxErr, hfFixtureTol, at)

	out := filepath.Join(t.TempDir(), "peft")
	n, err := model.ExportPEFT(context.Background(), src, l, p.Weights, "", "", out)
	require.NoError(t, err)
	require.Equal(t, peftWeights.Len(), n)
	exported := readSafetensorsFile(t, filepath.Join(out, model.PEFTWeightsFile))
	require.Equal(t, peftWeights.Len(), exported.Len())
	for i := range peftWeights.Len() {
		want := peftWeights.At(i)
		got, ok := exported.Get(want.Name)
		require.True(t, ok, want.Name)
		require.Equal(t, want.Shape, got.Shape, want.Name)
		require.Equal(t, want.Data, got.Data, want.Name)
	}
	var cfg peftAdapterConfig
	b, err = os.ReadFile(filepath.Join(out, model.PEFTConfigFile))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &cfg))
	slices.Sort(cfg.Targets)
	slices.Sort(peftCfg.Targets)
	require.Equal(t, peftCfg, cfg)
}
