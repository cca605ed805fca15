package model_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/spiral-rl/spiral/model"
	"github.com/spiral-rl/spiral/model/lmgraph"
	"github.com/spiral-rl/spiral/model/modeltest"
	"github.com/spiral-rl/spiral/model/onnx"
	"github.com/spiral-rl/spiral/model/params"
	"github.com/spiral-rl/spiral/model/qwen3"
)

// TestHFWeightsMatchTransformers checks the HF export of the optimum
// fixture against transformers' own parameter list (parameters.json):
// every named parameter appears once under its name and shape (the tied
// head left out), read from one of the initializers that hold it, and
// transposed exactly when that initializer is stored transposed; values
// equal the initializer's.
func TestHFWeightsMatchTransformers(t *testing.T) {
	dir := filepath.Join("testdata", "optimumqwen3")
	want := modeltest.FixtureParameters(t, dir)
	m, err := onnx.LoadGraph(filepath.Join(dir, "model.onnx"))
	require.NoError(t, err)
	ps, err := model.HFParams(m, true)
	require.NoError(t, err)
	got := map[string]model.HFParam{}
	for _, p := range ps {
		got[p.Name] = p
	}
	require.Len(t, got, len(want))
	ties, err := model.Ties(filepath.Join(dir, "model.onnx"))
	require.NoError(t, err)
	w, err := model.HFWeights(m, ps, ties, &params.Store{})
	require.NoError(t, err)
	for _, wp := range want {
		p, ok := got[wp.Name]
		require.True(t, ok, "%s missing", wp.Name)
		if p.Transposed {
			require.Contains(t, wp.Transposed, p.Initializer, wp.Name)
		} else {
			require.Contains(t, wp.Initializers, p.Initializer, wp.Name)
		}
		tensor, ok := w.Get(wp.Name)
		require.True(t, ok, wp.Name)
		require.Equal(t, wp.Shape, tensor.Shape, wp.Name)
	}
	// Values: q_proj is stored [in, out]; the export holds its transpose.
	q := got["model.layers.0.self_attn.q_proj.weight"]
	init := initializer(t, m, q.Initializer)
	tensor, _ := w.Get(q.Name)
	rows, cols := int(tensor.Shape[0]), int(tensor.Shape[1])
	for r := range rows {
		for c := range cols {
			require.Equal(t, init[c*rows+r], tensor.Data[r*cols+c])
		}
	}

	// ExportHF streams the same tensors to model.safetensors, one at a
	// time (with a trained tensor, kept as is, and a transposed one).
	trained, err := params.NewStore([]params.Spec{{Name: q.Initializer, Shape: []int64{int64(cols), int64(rows)}}})
	require.NoError(t, err)
	for i := range trained.Flat() {
		trained.Flat()[i] = float32(i)
	}
	w, err = model.HFWeights(m, ps, ties, trained)
	require.NoError(t, err)
	out := t.TempDir()
	// Interrupted (its context ended), the export writes no weights file,
	// nor leaves a temporary one.
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = model.ExportHF(ended, filepath.Join(dir, "model.onnx"), "", out, trained, lmgraph.LoRA{}, nil, false)
	require.ErrorIs(t, err, context.Canceled)
	entries, err := os.ReadDir(out)
	require.NoError(t, err)
	require.Empty(t, entries, "nothing written")
	n, err := model.ExportHF(context.Background(), filepath.Join(dir, "model.onnx"), "", out, trained, lmgraph.LoRA{}, nil, false)
	require.NoError(t, err)
	require.Equal(t, w.Len(), n)
	file, err := os.ReadFile(filepath.Join(out, model.HFWeightsFile))
	require.NoError(t, err)
	var stored bytes.Buffer
	// The metadata names the files written beside the weights.
	require.NoError(t, w.WriteSafetensors(&stored, map[string]string{"format": "pt", model.HFSideFilesKey: model.ConfigFile}, nil))
	require.Equal(t, stored.Bytes(), file, "the streamed file holds HFWeights' tensors")
}

// TestHFParamsDynamo places the dynamo exporter's anonymous weights by
// their MatMul nodes' name scopes and checks the result against
// parameters.json, which make_fixture.py wrote from transformers'
// named_parameters() with the initializers that hold each; without the
// scopes the graph is refused with the initializer named.
func TestHFParamsDynamo(t *testing.T) {
	m, err := onnx.LoadGraph(filepath.Join("testdata", "dynamoqwen3", "model.onnx"))
	require.NoError(t, err)
	ps, err := model.HFParams(m, true)
	require.NoError(t, err)
	b, err := os.ReadFile(filepath.Join("testdata", "dynamoqwen3", "parameters.json"))
	require.NoError(t, err)
	var ref struct {
		Parameters []struct {
			Name       string   `json:"name"`
			Same       []string `json:"initializers"`
			Transposed []string `json:"transposed_initializers"`
		} `json:"parameters"`
	}
	require.NoError(t, json.Unmarshal(b, &ref))
	got := map[string]model.HFParam{}
	for _, p := range ps {
		got[p.Name] = p
	}
	require.Len(t, got, len(ref.Parameters), "one tensor per transformers parameter (the tied head left to transformers)")
	for _, r := range ref.Parameters {
		p, ok := got[r.Name]
		require.True(t, ok, "%s placed", r.Name)
		if p.Transposed {
			require.Contains(t, r.Transposed, p.Initializer, "%s: a transposed copy", r.Name)
		} else {
			require.Contains(t, r.Same, p.Initializer, "%s: a copy in transformers' layout", r.Name)
		}
	}

	for _, n := range m.Graph().GetNode() {
		n.MetadataProps = nil
	}
	_, err = model.HFParams(m, true)
	require.ErrorContains(t, err, "has no transformers name")
}

// TestHFWeightsFromTrained checks that trained tensors replace the graph's
// and that spiral's own graphs (transformers' names, MatMul weights stored
// [in, out]) export with every projection transposed.
func TestHFWeightsFromTrained(t *testing.T) {
	m, err := qwen3.Build(qwen3.Tiny(), 1)
	require.NoError(t, err)
	ps, err := model.HFParams(m, true)
	require.NoError(t, err)
	for _, p := range ps {
		require.Equal(t, p.Name, p.Initializer)
		if p.Name == "model.layers.0.mlp.down_proj.weight" {
			require.True(t, p.Transposed)
		}
		if p.Name == "model.embed_tokens.weight" || p.Name == "model.norm.weight" {
			require.False(t, p.Transposed, p.Name)
		}
	}
	norm := initializer(t, m, "model.norm.weight")
	for i := range norm {
		norm[i] += 1
	}
	trained, err := params.FromTensors([]params.Tensor{{Name: "model.norm.weight", Shape: []int64{int64(len(norm))}, Data: norm}})
	require.NoError(t, err)
	w, err := model.HFWeights(m, ps, nil, trained)
	require.NoError(t, err)
	got, ok := w.Get("model.norm.weight")
	require.True(t, ok)
	require.Equal(t, norm, got.Data)
}

func initializer(t *testing.T, m *onnx.Model, name string) []float32 {
	t.Helper()
	for _, init := range m.Graph().GetInitializer() {
		if init.GetName() == name {
			n, err := params.NumElements(init.GetDims())
			require.NoError(t, err)
			out := make([]float32, n)
			require.NoError(t, m.ReadFloat32s(init, out))
			return out
		}
	}
	t.Fatalf("no initializer %q", name)
	return nil
}

// TestExportsReplaceTheirFilesTogether exports the HF fixture over an
// older export of another model's files: the new files replace the old
// together, a side file the source lacks (the older export's
// generation_config.json) goes instead of staying beside the new
// weights, a file of the user's stays, and no stage is left; the peft
// export replaces its two files alike.
func TestExportsReplaceTheirFilesTogether(t *testing.T) {
	src := filepath.Join(hfFixtureDir, "model.onnx")
	names := func(dir string) []string {
		entries, err := os.ReadDir(dir)
		require.NoError(t, err)
		var got []string
		for _, e := range entries {
			got = append(got, e.Name())
		}
		return got
	}
	none, err := params.NewStore(nil)
	require.NoError(t, err)
	out := t.TempDir()
	// An earlier peft export's files there would make transformers load
	// that adapter on its base instead of these weights: removed too.
	for name, body := range map[string]string{model.HFWeightsFile: "old weights", model.ConfigFile: "{}", "generation_config.json": "{}", "README.md": "mine",
		model.PEFTConfigFile: `{"r": 64}`, model.PEFTWeightsFile: "old adapters"} {
		require.NoError(t, os.WriteFile(filepath.Join(out, name), []byte(body), 0o666))
	}
	_, err = model.ExportHF(context.Background(), src, "", out, none, lmgraph.LoRA{}, nil, false)
	require.NoError(t, err)
	require.ElementsMatch(t, []string{model.HFWeightsFile, model.ConfigFile, "README.md"}, names(out))
	cfg, err := os.ReadFile(filepath.Join(out, model.ConfigFile))
	require.NoError(t, err)
	want, err := os.ReadFile(filepath.Join(hfFixtureDir, model.ConfigFile))
	require.NoError(t, err)
	require.Equal(t, want, cfg)

	l := lmgraph.LoRA{Rank: 2, Alpha: 4, Targets: []string{"q_proj"}}
	p, err := model.OpenPolicy(context.Background(), modeltest.Runtime(t), src, t.TempDir(), model.PolicyOptions{Artifacts: model.ArtifactOptions{LoRA: l}})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, p.Close()) })
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = model.ExportHF(ended, src, "", out, p.Weights, l, nil, false)
	require.ErrorIs(t, err, context.Canceled)
	require.ElementsMatch(t, []string{model.HFWeightsFile, model.ConfigFile, "README.md"}, names(out), "an interrupted export leaves no stage")

	peft := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(peft, model.PEFTConfigFile), []byte(`{"r": 64}`), 0o666))
	_, err = model.ExportPEFT(context.Background(), src, l, p.Weights, "base", "", peft)
	require.NoError(t, err)
	require.ElementsMatch(t, []string{model.PEFTWeightsFile, model.PEFTConfigFile}, names(peft))
	b, err := os.ReadFile(filepath.Join(peft, model.PEFTConfigFile))
	require.NoError(t, err)
	require.Contains(t, string(b), `"r": 2`)
}

// TestExportHFWritesDefaultsWhereTheSourceHasNone: a side file the
// source directory lacks is written from defaults (the chat template and
// stop ids of a model spiral made, which has only tokenizer.json), and one
// the source has is copied from it, not replaced by the default.
func TestExportHFWritesDefaultsWhereTheSourceHasNone(t *testing.T) {
	src := copyHFFixture(t)
	defaults := map[string][]byte{
		"tokenizer_config.json":  []byte(`{"chat_template": "default"}`),
		"generation_config.json": []byte(`{"eos_token_id": [1, 2]}`),
	}
	none, err := params.NewStore(nil)
	require.NoError(t, err)
	read := func(dir, name string) string {
		b, err := os.ReadFile(filepath.Join(dir, name))
		require.NoError(t, err)
		return string(b)
	}

	out := t.TempDir()
	_, err = model.ExportHF(context.Background(), filepath.Join(src, "model.onnx"), "", out, none, lmgraph.LoRA{}, defaults, false)
	require.NoError(t, err)
	for name, want := range defaults {
		require.Equal(t, string(want), read(out, name))
	}

	own := `{"chat_template": "the model's own"}`
	require.NoError(t, os.WriteFile(filepath.Join(src, "tokenizer_config.json"), []byte(own), 0o666))
	_, err = model.ExportHF(context.Background(), filepath.Join(src, "model.onnx"), "", out, none, lmgraph.LoRA{}, defaults, false)
	require.NoError(t, err)
	require.Equal(t, own, read(out, "tokenizer_config.json"))
	require.Equal(t, string(defaults["generation_config.json"]), read(out, "generation_config.json"))
}

// TestExportHFRefusesOtherWeights: weights of another model, in a tensor
// of the graph's name but another shape or in tensors the graph lacks,
// are refused before anything is written, as Export refuses them;
// nothing would otherwise stop a model.safetensors that config.json does
// not describe, or one missing the trained tensors.
func TestExportHFRefusesOtherWeights(t *testing.T) {
	src := filepath.Join(hfFixtureDir, "model.onnx")
	for _, tc := range []struct {
		name  string
		specs []params.Spec
		want  string
	}{
		{"a known tensor of another shape", []params.Spec{{Name: "onnx::MatMul_723", Shape: []int64{64, 128}}},
			`"onnx::MatMul_723" has shape [64 96] in the graph but [64 128] in the weights`},
		{"a tensor the graph lacks", []params.Spec{{Name: "onnx::MatMul_723", Shape: []int64{64, 96}}, {Name: "model.layers.2.mlp.up_proj.weight", Shape: []int64{64, 96}}},
			"has 1 of the 2 weight tensors; wrong source model?"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, err := params.NewStore(tc.specs)
			require.NoError(t, err)
			out := t.TempDir()
			_, err = model.ExportHF(context.Background(), src, "", out, w, lmgraph.LoRA{}, nil, false)
			require.ErrorContains(t, err, tc.want)
			entries, err := os.ReadDir(out)
			require.NoError(t, err)
			require.Empty(t, entries, "nothing written")
		})
	}
}

// TestSideFiles: the tokenizer's files are read beside the tokenizer.json
// used (a --tokenizer given from elsewhere keeps its own chat template
// and merges), the generation defaults beside the model.
func TestSideFiles(t *testing.T) {
	from := func(files []model.SideFile) map[string]string {
		m := map[string]string{}
		for _, f := range files {
			m[f.Name] = f.From
		}
		return m
	}
	src := filepath.Join("m", "model.onnx")
	own := model.SideFiles(src, "")
	require.Equal(t, "tokenizer.json", own[0].Name, "tokenizer.json first")
	require.Equal(t, map[string]string{
		"tokenizer.json": filepath.Join("m", "tokenizer.json"), "tokenizer_config.json": filepath.Join("m", "tokenizer_config.json"),
		"special_tokens_map.json": filepath.Join("m", "special_tokens_map.json"), "added_tokens.json": filepath.Join("m", "added_tokens.json"),
		"vocab.json": filepath.Join("m", "vocab.json"),
		"merges.txt": filepath.Join("m", "merges.txt"), "chat_template.jinja": filepath.Join("m", "chat_template.jinja"),
		"generation_config.json": filepath.Join("m", "generation_config.json"),
	}, from(own))
	given := from(model.SideFiles(src, filepath.Join("t", "qwen.json")))
	require.Equal(t, filepath.Join("t", "qwen.json"), given["tokenizer.json"])
	require.Equal(t, filepath.Join("t", "tokenizer_config.json"), given["tokenizer_config.json"])
	require.Equal(t, filepath.Join("t", "merges.txt"), given["merges.txt"])
	require.Equal(t, filepath.Join("m", "generation_config.json"), given["generation_config.json"])
}

// TestExportHFQwen2 exports testdata/hfqwen2 (transformers'
// Qwen2ForCausalLM: q, k and v projections with a bias, an untied head)
// and compares model.safetensors with the state dict transformers saves
// for that model (weights.safetensors, made by make_fixture.py): the same
// names, shapes and bytes, the biases among them. A bias, which the graph
// adds under its transformers name, was refused as having none.
func TestExportHFQwen2(t *testing.T) {
	dir := filepath.Join("testdata", "hfqwen2")
	out := t.TempDir()
	_, err := model.ExportHF(context.Background(), filepath.Join(dir, "model.onnx"), "", out, &params.Store{}, lmgraph.LoRA{}, nil, false)
	require.NoError(t, err)
	decode := func(path string) map[string]params.RawTensor {
		raw, err := os.ReadFile(path)
		require.NoError(t, err)
		f, err := params.Decode(raw)
		require.NoError(t, err)
		byName := map[string]params.RawTensor{}
		for _, tensor := range f.Tensors {
			byName[tensor.Name] = tensor
		}
		return byName
	}
	got := decode(filepath.Join(out, model.HFWeightsFile))
	want := decode(filepath.Join(dir, "weights.safetensors"))
	require.Contains(t, want, "model.layers.1.self_attn.v_proj.bias")
	require.Contains(t, want, "lm_head.weight")
	require.ElementsMatch(t, slices.Collect(maps.Keys(want)), slices.Collect(maps.Keys(got)))
	for name, w := range want {
		g := got[name]
		require.Equal(t, w.DType, g.DType, name)
		require.Equal(t, w.Shape, g.Shape, name)
		require.True(t, bytes.Equal(w.Data, g.Data), "%s: values differ from transformers'", name)
	}
}

// TestExportHFRefusesOtherCheckpointFiles: a directory that holds another
// checkpoint's safetensors (a sharded model's index and shards, as a
// Hugging Face download has) is refused before anything is written:
// vLLM and SGLang load only the shards an index names, so the export's
// model.safetensors beside them would be served as the old weights, and
// without an index they load every .safetensors file, old and new.
func TestExportHFRefusesOtherCheckpointFiles(t *testing.T) {
	src := filepath.Join(hfFixtureDir, "model.onnx")
	for _, tc := range []struct {
		name  string
		files []string
		want  string
	}{
		{"a sharded model", []string{"model.safetensors.index.json", "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"},
			"holds model-00001-of-00002.safetensors, model-00002-of-00002.safetensors, model.safetensors.index.json, another checkpoint's weights, which vLLM and SGLang would load beside or instead of the export's model.safetensors: export into another directory, or remove them"},
		{"a stray shard", []string{"model-00001-of-00002.safetensors"},
			"holds model-00001-of-00002.safetensors, another checkpoint's weights"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := t.TempDir()
			for _, f := range tc.files {
				require.NoError(t, os.WriteFile(filepath.Join(out, f), []byte("old"), 0o666))
			}
			_, err := model.ExportHF(context.Background(), src, "", out, &params.Store{}, lmgraph.LoRA{}, nil, false)
			require.ErrorContains(t, err, "model: hf export: "+out+" "+tc.want)
			entries, err := os.ReadDir(out)
			require.NoError(t, err)
			require.Len(t, entries, len(tc.files), "nothing written")
		})
	}
	// An earlier export's own files and a peft adapter's, which the
	// export replaces, are no obstacle.
	out := t.TempDir()
	for _, f := range []string{model.HFWeightsFile, model.PEFTWeightsFile} {
		require.NoError(t, os.WriteFile(filepath.Join(out, f), []byte("old"), 0o666))
	}
	_, err := model.ExportHF(context.Background(), src, "", out, &params.Store{}, lmgraph.LoRA{}, nil, false)
	require.NoError(t, err)
}

// TestExportHFReplacesShardedModel: with replace (export --overwrite)
// a sharded model's index and shards were refused all the same, so
// --overwrite could not replace a sharded model; they are removed with
// the commit that moves the export in, the export's files left.
func TestExportHFReplacesShardedModel(t *testing.T) {
	src := filepath.Join(hfFixtureDir, "model.onnx")
	out := t.TempDir()
	shards := []string{"model.safetensors.index.json", "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"}
	for _, f := range append(shards, "README.md") {
		require.NoError(t, os.WriteFile(filepath.Join(out, f), []byte("old"), 0o666))
	}
	_, err := model.ExportHF(context.Background(), src, "", out, &params.Store{}, lmgraph.LoRA{}, nil, true)
	require.NoError(t, err)
	for _, f := range shards {
		require.NoFileExists(t, filepath.Join(out, f), "the replaced model's")
	}
	require.FileExists(t, filepath.Join(out, model.HFWeightsFile))
	require.FileExists(t, filepath.Join(out, model.ConfigFile))
	require.FileExists(t, filepath.Join(out, "README.md"), "not a model file: left")
}

// TestExportHFRefusesAnotherShape: a config.json whose shape is not the
// model's is refused, naming it and each field that differs, before
// anything is written. transformers builds the model config.json
// describes and loads the weights into it: a layer the config has and
// the weights lack is drawn at random, one the weights have and it lacks
// is dropped, each with a warning only (transformers 5.25); a width or
// vocabulary that differs fails to load.
func TestExportHFRefusesAnotherShape(t *testing.T) {
	for _, tc := range []struct {
		name, from, to, want string
	}{
		{"more layers", `"num_hidden_layers": 2`, `"num_hidden_layers": 3`, "num_hidden_layers 3, but the weights have 2"},
		{"fewer layers", `"num_hidden_layers": 2`, `"num_hidden_layers": 1`, "num_hidden_layers 1, but the weights have 2"},
		{"width", `"hidden_size": 64`, `"hidden_size": 32`, "hidden_size 32, but the weights have 64"},
		{"mlp", `"intermediate_size": 96`, `"intermediate_size": 97`, "intermediate_size 97, but the weights have 96"},
		{"vocabulary", `"vocab_size": 128`, `"vocab_size": 151936`, "vocab_size 151936, but the weights have 128"},
		{"head width", `"head_dim": 24`, `"head_dim": 4000000000`, "head_dim 4000000000, but the weights have 24"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			exportRefusedConfig(t, tc.from, tc.to, func(path string) string {
				return "model: hf export: " + path + " says " + tc.want +
					": transformers would build another model than the weights (another model's config.json?)"
			})
		})
	}
}

// TestLoRAAdaptersQwen2: LoRA finds its projections on a Qwen2 export by
// the names the hf export gives them; the q, k and v biases beside them
// made it refuse the model ("initializer ...q_proj.bias (read by no
// MatMul) has no transformers name").
func TestLoRAAdaptersQwen2(t *testing.T) {
	m, err := onnx.LoadGraph(filepath.Join("testdata", "hfqwen2", "model.onnx"))
	require.NoError(t, err)
	adapters, err := model.LoRAAdapters(m, lmgraph.LoRA{Rank: 2, Alpha: 4, Targets: lmgraph.LoRATargets})
	require.NoError(t, err)
	require.Len(t, adapters, 2*len(lmgraph.LoRATargets), "every projection of both layers")
	for _, a := range adapters {
		require.NotContains(t, a.Base, ".bias", a.Module)
	}
}

// TestExportHFRefusesRotaryScalingNotInTheGraph: a config.json that asks
// for scaled rotary frequencies (rope_scaling, or transformers 5's
// rope_parameters, with a rope_type other than default) beside a graph
// whose frequencies are the unscaled ones of its rope_theta is refused
// before anything is written: transformers would scale them, the graph
// spiral trained does not. The hf fixture with yarn written into its
// config.json as Qwen's docs suggest for long context exported, and
// transformers 5.25 then computed logits up to 2 away from the ONNX
// model's (largest 5.25; scripts/check_hf_export.py). A graph whose
// frequencies are scaled passes.
func TestExportHFRefusesRotaryScalingNotInTheGraph(t *testing.T) {
	const refused = " asks for %s rotary scaling, but the graph holds the unscaled frequencies of rope_theta 10000 (rotary width %d): transformers would compute other logits than the graph; export the model with the scaling in its graph, or remove it from config.json"
	for _, tc := range []struct {
		name, from, to, kind string
	}{
		{"yarn added to a transformers 5 config", `"rope_parameters": {`, `"rope_scaling": {"type": "yarn", "factor": 4.0, "original_max_position_embeddings": 64}, "rope_parameters": {`, "yarn"},
		{"llama3, transformers 4", "\"rope_parameters\": {\n    \"rope_theta\": 10000.0,\n    \"rope_type\": \"default\"\n  }",
			`"rope_theta": 10000.0, "rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0, "original_max_position_embeddings": 64}`, "llama3"},
		{"linear, transformers 5", `"rope_type": "default"`, `"rope_type": "linear", "factor": 2.0`, "linear"},
		{"dynamic, which an export fixes", `"rope_type": "default"`, `"rope_type": "dynamic", "factor": 2.0`, "dynamic"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			exportRefusedConfig(t, tc.from, tc.to, func(path string) string {
				return "model: hf export: " + path + fmt.Sprintf(refused, tc.kind, 24)
			})
		})
	}

	// spiral's own graph with its frequencies halved, as linear scaling
	// by 2 computes them: exported with that config.json; unhalved,
	// refused.
	c := qwen3.Tiny()
	for _, scaled := range []bool{true, false} {
		m, err := qwen3.Build(c, 1)
		require.NoError(t, err)
		if scaled {
			halveInvFreq(t, m, qwen3.InvFreq(c))
		}
		dir := t.TempDir()
		src := filepath.Join(dir, "model.onnx")
		require.NoError(t, onnx.Save(src, m, onnx.SaveOptions{}))
		cfg, err := c.HFConfigJSON()
		require.NoError(t, err)
		cfg = bytes.Replace(cfg, []byte(`"rope_scaling": null`), []byte(`"rope_scaling": {"rope_type": "linear", "factor": 2}`), 1)
		require.NoError(t, os.WriteFile(filepath.Join(dir, model.ConfigFile), cfg, 0o666))
		_, err = model.ExportHF(context.Background(), src, "", t.TempDir(), &params.Store{}, lmgraph.LoRA{}, nil, false)
		if scaled {
			require.NoError(t, err)
		} else {
			require.EqualError(t, err, "model: hf export: "+filepath.Join(dir, model.ConfigFile)+fmt.Sprintf(refused, "linear", c.HeadDim))
		}
	}
}

// TestExportHFRotaryWidthNoGraphHas: a config.json with yarn and a
// corrupt head_dim (2^61) made an hf export compute half that many
// rotary frequencies to look for in the graph, which panicked in
// makeslice (4,000,000,000: 8 GB allocated); no tensor of the graph has
// that many values, so none is computed, and the head_dim is refused as
// not the weights' (TestExportHFRefusesAnotherShape).
func TestExportHFRotaryWidthNoGraphHas(t *testing.T) {
	c := qwen3.Tiny()
	m, err := qwen3.Build(c, 1)
	require.NoError(t, err)
	dir := t.TempDir()
	src := filepath.Join(dir, "model.onnx")
	require.NoError(t, onnx.Save(src, m, onnx.SaveOptions{}))
	b, err := c.HFConfigJSON()
	require.NoError(t, err)
	var cfg map[string]any
	require.NoError(t, json.Unmarshal(b, &cfg))
	cfg["head_dim"] = json.Number("2305843009213693952")
	cfg["rope_scaling"] = map[string]any{"rope_type": "yarn", "factor": 4}
	b, err = json.Marshal(cfg)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, model.ConfigFile), b, 0o666))
	require.NotPanics(t, func() {
		_, err = model.ExportHF(context.Background(), src, "", t.TempDir(), &params.Store{}, lmgraph.LoRA{}, nil, false)
	})
	require.EqualError(t, err, fmt.Sprintf("model: hf export: %s says head_dim 2305843009213693952, but the weights have %d: transformers would build another model than the weights (another model's config.json?)",
		filepath.Join(dir, model.ConfigFile), c.HeadDim))
}

// halveInvFreq halves the values of the tensor of m that holds want, the
// rotary frequencies (an initializer or a Constant node's value).
func halveInvFreq(t *testing.T, m *onnx.Model, want []float32) {
	t.Helper()
	tensors := m.Graph().GetInitializer()
	for _, n := range m.Graph().GetNode() {
		for _, a := range n.GetAttribute() {
			if a.GetT() != nil {
				tensors = append(tensors, a.GetT())
			}
		}
	}
	for _, tp := range tensors {
		if v, err := onnx.Float32s(tp); err == nil && slices.Equal(v, want) {
			half := make([]float32, len(v))
			for i := range v {
				half[i] = v[i] / 2
			}
			tp.RawData, tp.FloatData = onnx.NewTensor(tp.GetName(), tp.GetDims(), half).GetRawData(), nil
			return
		}
	}
	t.Fatal("no tensor holds the rotary frequencies")
}

// exportRefusedConfig exports the hf fixture with from replaced by to in
// its config.json and requires the refusal want(config.json's path) with
// nothing written.
func exportRefusedConfig(t *testing.T, from, to string, want func(path string) string) {
	t.Helper()
	dir := copyHFFixture(t)
	path := filepath.Join(dir, model.ConfigFile)
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Contains(t, string(b), from)
	require.NoError(t, os.WriteFile(path, bytes.Replace(b, []byte(from), []byte(to), 1), 0o666))
	out := t.TempDir()
	_, err = model.ExportHF(context.Background(), filepath.Join(dir, "model.onnx"), "", out, &params.Store{}, lmgraph.LoRA{}, nil, false)
	require.EqualError(t, err, want(path))
	entries, err := os.ReadDir(out)
	require.NoError(t, err)
	require.Empty(t, entries, "nothing written")
}

// TestExportHFConfigDtype: the hf export writes float32 weights, and its
// config.json says so: a source config.json of a bfloat16 release (Qwen3's
// "torch_dtype": "bfloat16", transformers 5's "dtype") was copied as it
// was, so transformers (torch_dtype "auto", and transformers 5 by
// default) and serving engines took the float32 tensors for bfloat16
// ones. The other fields stay, in their order; a config.json without a
// dtype, or with null, is left as it is (float32 is transformers'
// default).
func TestExportHFConfigDtype(t *testing.T) {
	none, err := params.NewStore(nil)
	require.NoError(t, err)
	for _, tc := range []struct {
		name, from, to, want string
	}{
		{"torch_dtype", `"vocab_size": 128`, `"vocab_size": 128, "torch_dtype": "bfloat16"`, `"torch_dtype": "float32"`},
		{"dtype", `"vocab_size": 128`, `"dtype": "float16", "vocab_size": 128`, `"dtype": "float32"`},
		{"both", `"vocab_size": 128`, `"torch_dtype": "bfloat16", "vocab_size": 128, "dtype": "bfloat16"`, `"torch_dtype": "float32"`},
		{"null", `"vocab_size": 128`, `"vocab_size": 128, "torch_dtype": null`, `"torch_dtype": null`},
		{"none", `"vocab_size": 128`, `"vocab_size": 128`, ``},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := copyHFFixture(t)
			cfgPath := filepath.Join(src, model.ConfigFile)
			b, err := os.ReadFile(cfgPath)
			require.NoError(t, err)
			require.Contains(t, string(b), tc.from)
			edited := strings.Replace(string(b), tc.from, tc.to, 1)
			require.NoError(t, os.WriteFile(cfgPath, []byte(edited), 0o666))
			out := t.TempDir()
			_, err = model.ExportHF(context.Background(), filepath.Join(src, "model.onnx"), "", out, none, lmgraph.LoRA{}, nil, false)
			require.NoError(t, err)
			got, err := os.ReadFile(filepath.Join(out, model.ConfigFile))
			require.NoError(t, err)
			if tc.name == "none" {
				require.Equal(t, edited, string(got), "kept byte for byte")
				return
			}
			require.Contains(t, string(got), tc.want)
			require.NotContains(t, string(got), "16\"")
			var in, exported map[string]any
			require.NoError(t, json.Unmarshal([]byte(edited), &in))
			require.NoError(t, json.Unmarshal(got, &exported))
			for _, k := range []string{"torch_dtype", "dtype"} {
				if s, ok := in[k].(string); ok && s != "" {
					in[k] = "float32"
				}
			}
			require.Equal(t, in, exported, "the other fields as they were")
		})
	}
}

// stagedCtx reads as interrupted (Err is context.Canceled) once a stage
// in dir holds a file named name: a Ctrl-C that comes after the export's
// last tensor, while its files are written.
type stagedCtx struct {
	context.Context
	dir, name string
}

func (c stagedCtx) Err() error {
	if found, _ := filepath.Glob(filepath.Join(c.dir, ".stage-*", c.name)); len(found) > 0 {
		return context.Canceled
	}
	return c.Context.Err()
}

// TestExportHFInterruptedAfterItsWeights: a Ctrl-C that came after the
// last tensor's check (while model.safetensors was synced and renamed in
// the stage, or the tokenizer and config files written) did not stop
// the export: it moved its files in over the earlier export's and
// returned no error, so spiral export exited 0. It now stops before the
// move, leaving the earlier files as they were.
func TestExportHFInterruptedAfterItsWeights(t *testing.T) {
	none, err := params.NewStore(nil)
	require.NoError(t, err)
	out := t.TempDir()
	earlier := map[string]string{model.HFWeightsFile: "the earlier weights", model.ConfigFile: "{}"}
	for name, body := range earlier {
		require.NoError(t, os.WriteFile(filepath.Join(out, name), []byte(body), 0o666))
	}
	ctx := stagedCtx{Context: context.Background(), dir: out, name: model.HFWeightsFile}
	_, err = model.ExportHF(ctx, filepath.Join(hfFixtureDir, "model.onnx"), "", out, none, lmgraph.LoRA{}, nil, false)
	require.ErrorIs(t, err, context.Canceled)
	entries, err := os.ReadDir(out)
	require.NoError(t, err)
	require.Len(t, entries, len(earlier), "the earlier files alone, no stage")
	for name, body := range earlier {
		b, err := os.ReadFile(filepath.Join(out, name))
		require.NoError(t, err)
		require.Equal(t, body, string(b), name)
	}
}

// TestExportHFRefusesAnotherTying: config.json's tie_word_embeddings was
// trusted as it was: over a graph whose LM head reads the embedding
// table, an untied config.json (false, or the key left out, Qwen's
// default) gave an export without lm_head.weight, which transformers
// draws at random; over a graph whose head has weights of its own, a
// tied one gave an export without them, transformers computing the
// logits with the embedding instead. Both exited without an error. They
// are refused, naming config.json and the setting to give, nothing
// written; the configs that match their graphs export as before.
func TestExportHFRefusesAnotherTying(t *testing.T) {
	none, err := params.NewStore(nil)
	require.NoError(t, err)
	tiny := func(tied bool) string {
		c := qwen3.Tiny()
		c.Layers, c.TiedEmbeddings = 1, tied
		dir := t.TempDir()
		require.NoError(t, qwen3.WriteDir(dir, c, 3))
		return dir
	}
	qwen2 := func(bool) string {
		dir := t.TempDir()
		for _, name := range []string{"model.onnx", model.ConfigFile} {
			b, err := os.ReadFile(filepath.Join("testdata", "hfqwen2", name))
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(filepath.Join(dir, name), b, 0o666))
		}
		return dir
	}
	for _, tc := range []struct {
		name   string
		src    func(tied bool) string
		graph  bool // the graph's head reads the embedding
		config any  // config.json's tie_word_embeddings; nil: left out
		want   string
	}{
		{"tied graph, tied config", tiny, true, true, ""},
		{"untied graph, untied config", tiny, false, false, ""},
		{"untied graph, config without the key", tiny, false, nil, ""},
		{"tied graph, untied config", tiny, true, false, "says tie_word_embeddings false, but the graph's LM head reads the embedding table: the export would have no lm_head.weight, which transformers would draw at random; set tie_word_embeddings true in it"},
		{"tied graph, config without the key", tiny, true, nil, "leaves tie_word_embeddings out (false for Qwen), but the graph's LM head reads the embedding table"},
		{"untied graph, tied config", tiny, false, true, "says tie_word_embeddings true, but the graph's LM head has weights of its own (\"lm_head.weight\"), not the embedding's"},
		{"qwen2 export, tied config", qwen2, false, true, "says tie_word_embeddings true, but the graph's LM head has weights of its own (\"onnx::MatMul_736\"), not the embedding's"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := tc.src(tc.graph)
			path := filepath.Join(dir, model.ConfigFile)
			b, err := os.ReadFile(path)
			require.NoError(t, err)
			var cfg map[string]any
			require.NoError(t, json.Unmarshal(b, &cfg))
			delete(cfg, "tie_word_embeddings")
			if tc.config != nil {
				cfg["tie_word_embeddings"] = tc.config
			}
			b, err = json.Marshal(cfg)
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(path, b, 0o666))
			out := t.TempDir()
			_, err = model.ExportHF(context.Background(), filepath.Join(dir, "model.onnx"), "", out, none, lmgraph.LoRA{}, nil, false)
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, "model: hf export: "+path+" "+tc.want)
			entries, err := os.ReadDir(out)
			require.NoError(t, err)
			require.Empty(t, entries, "nothing written")
		})
	}
}

// TestCheckCausalLMConfig: the hf export writes a causal
// LM's checkpoint (transformers' Qwen3 names, model.layers.N...), but
// beside a multimodal model's config.json (Qwen3-VL's, Gemma 3's,
// Llava's, whose text model ReadHFConfig reads from text_config) it
// copied that config, architectures and all: transformers would build
// the multimodal model from it and load these weights into it, its
// vision tower (and, for Gemma 3 and Llava, whose language model's
// weights go by other names, the language model too) drawn at random,
// with a warning only. It is refused (CheckCausalLMConfig, which spiral
// export calls before it loads a checkpoint), naming the file and its
// architectures; a text_config of null is no multimodal model's. A
// config whose architectures or model_type is of another JSON type (which
// ReadHFConfig does not read, so the model loads) is an error in the
// file's terms (jsonerr), as ReadHFConfig's are: encoding/json's Go types
// were shown ("cannot unmarshal string into Go struct field
// .architectures of type []string").
func TestCheckCausalLMConfig(t *testing.T) {
	for _, tc := range []struct {
		name, wrap, err string // wrap: the config around the fixture's (%s), as text_config; "": text_config null
	}{
		{"Qwen3-VL", `{"architectures": ["Qwen3VLForConditionalGeneration"], "model_type": "qwen3_vl", "tie_word_embeddings": true, "text_config": %s, "vision_config": {"depth": 2}}`,
			"model: hf export: %s is the config of a multimodal model (architectures Qwen3VLForConditionalGeneration), its text model's in text_config: the export writes the language model alone, a causal LM's checkpoint under transformers' Qwen3 names (model.layers.N...), which transformers would load into Qwen3VLForConditionalGeneration, leaving its other modules (a vision tower; a language model under other names) drawn at random; put the text model's own config.json beside the model (text_config's fields at its top level, and its causal LM class, such as Qwen3ForCausalLM, in architectures), or export with --format onnx"},
		{"no architectures", `{"model_type": "llava", "text_config": %s}`,
			"model: hf export: %s is the config of a multimodal model (model_type llava), its text model's in text_config: the export writes the language model alone, a causal LM's checkpoint under transformers' Qwen3 names (model.layers.N...), which transformers would load into that model, leaving its other modules (a vision tower; a language model under other names) drawn at random; put the text model's own config.json beside the model (text_config's fields at its top level, and its causal LM class, such as Qwen3ForCausalLM, in architectures), or export with --format onnx"},
		{"null", "", ""},
		{"architectures a string", `{"architectures": "Qwen3VLForConditionalGeneration", "text_config": %s}`, "model: hf export: %s: architectures: an array expected, got a string"},
		{"model_type a number", `{"model_type": 3, "text_config": %s}`, "model: hf export: %s: model_type: a string expected, got a number"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := copyHFFixture(t)
			path := filepath.Join(dir, model.ConfigFile)
			b, err := os.ReadFile(path)
			require.NoError(t, err)
			if tc.wrap == "" { // the fixture's own fields at the top
				b = bytes.Replace(b, []byte("{"), []byte(`{"text_config": null,`), 1)
			} else {
				b = fmt.Appendf(nil, tc.wrap, b)
			}
			require.NoError(t, os.WriteFile(path, b, 0o666))
			err = model.CheckCausalLMConfig(filepath.Join(dir, "model.onnx"))
			if tc.err == "" {
				require.NoError(t, err)
				return
			}
			require.EqualError(t, err, fmt.Sprintf(tc.err, path))
		})
	}
}
