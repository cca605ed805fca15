package tests

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/spiral-rl/spiral/model/tokenizer"
)

// TestExportHFTokenizerFiles: the Hugging Face export of a model spiral
// made (init-model writes tokenizer.json alone) carries a
// tokenizer_config.json that loads that tokenizer.json as it is, with
// spiral's chat template, and a generation_config.json that stops where
// spiral's sampler stops; without them transformers has no chat template,
// stops at no end of turn and (5.x, taking Qwen2Tokenizer from the
// model_type) re-tokenizes the char and byte tokenizers' text otherwise.
func TestExportHFTokenizerFiles(t *testing.T) {
	dir := t.TempDir()
	src, hf := filepath.Join(dir, "src"), filepath.Join(dir, "hf")
	r := spiral(t, nil, "init-model", "--tokenizer", "byte", "--out", src)
	require.Equal(t, 0, r.code, r.stderr)
	r = spiral(t, nil, "export", "--format", "hf", "--model", src, "--out", hf)
	require.Equal(t, 0, r.code, r.stderr)

	tok, err := tokenizer.Load(filepath.Join(src, tokenizer.TokenizerFile))
	require.NoError(t, err)
	defer tok.Close()
	var cfg struct {
		Class    string `json:"tokenizer_class"`
		Template string `json:"chat_template"`
		EOS      string `json:"eos_token"`
	}
	b, err := os.ReadFile(filepath.Join(hf, tokenizer.ConfigFile))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &cfg))
	require.Equal(t, "PreTrainedTokenizerFast", cfg.Class)
	require.Equal(t, tokenizer.ChatMLTemplate, cfg.Template)
	require.Equal(t, tokenizer.IMEndToken, cfg.EOS)
	var gen struct {
		EOS []int32 `json:"eos_token_id"`
	}
	b, err = os.ReadFile(filepath.Join(hf, tokenizer.GenerationConfigFile))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &gen))
	require.Equal(t, tok.StopIDs(), gen.EOS)
}

// TestExportHFChatTemplateWhereConfigHasNone: a model whose
// tokenizer_config.json has no chat template, which spiral prompts with
// ChatML, is exported with spiral's template as chat_template.jinja
// (which transformers reads in the config's place), its config copied as
// it is; without it transformers and serving engines have no template
// to prompt the exported model as spiral did.
func TestExportHFChatTemplateWhereConfigHasNone(t *testing.T) {
	dir := t.TempDir()
	src, hf := filepath.Join(dir, "src"), filepath.Join(dir, "hf")
	r := spiral(t, nil, "init-model", "--tokenizer", "byte", "--out", src)
	require.Equal(t, 0, r.code, r.stderr)
	config := `{"tokenizer_class": "PreTrainedTokenizerFast", "eos_token": "<|im_end|>"}`
	require.NoError(t, os.WriteFile(filepath.Join(src, tokenizer.ConfigFile), []byte(config), 0o644))
	r = spiral(t, nil, "export", "--format", "hf", "--model", src, "--out", hf)
	require.Equal(t, 0, r.code, r.stderr)

	b, err := os.ReadFile(filepath.Join(hf, tokenizer.ConfigFile))
	require.NoError(t, err)
	require.Equal(t, config, string(b))
	b, err = os.ReadFile(filepath.Join(hf, tokenizer.TemplateFile))
	require.NoError(t, err)
	require.Equal(t, tokenizer.ChatMLTemplate, string(b))
}

// TestTrainedConfigNamesNoBase: config.json's _name_or_path (the Hugging
// Face id optimum records) names the model whose weights are beside it;
// a peft export takes it as the adapters' base by default. The
// config.json that spiral writes beside weights it trained (sft's model,
// the onnx and hf exports of a checkpoint) was a copy with that id, so
// LoRA trained on such a model (sft's warm start, say) was exported as an
// adapter of the original model, which peft and vLLM would load it on:
// base_model_name_or_path "Qwen/Qwen3-0.6B" for adapters of the sft
// model. The id is left out of those files (the peft export of adapters
// on them then names no base, and says so), and kept by the exports of
// the model itself (hf without --checkpoint) and by the peft export of
// adapters trained on the model it names.
func TestTrainedConfigNamesNoBase(t *testing.T) {
	requireRuntime(t)
	dir := t.TempDir()
	named := filepath.Join(dir, "named")
	require.NoError(t, os.MkdirAll(named, 0o755))
	for _, name := range []string{"model.onnx", "tokenizer.json"} {
		b, err := os.ReadFile(filepath.Join("..", "model", "embedded", "assets", name))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(named, name), b, 0o644))
	}
	var cfg map[string]any
	b, err := os.ReadFile(filepath.Join("..", "model", "embedded", "assets", "config.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &cfg))
	cfg["_name_or_path"] = "Qwen/Qwen3-0.6B"
	b, err = json.MarshalIndent(cfg, "", "  ")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(named, "config.json"), b, 0o644))
	delete(cfg, "_name_or_path")
	// config reads the config.json in dir, requiring every other field as
	// in the source's.
	config := func(dir string) map[string]any {
		t.Helper()
		var c map[string]any
		b, err := os.ReadFile(filepath.Join(dir, "config.json"))
		require.NoError(t, err)
		require.NoError(t, json.Unmarshal(b, &c))
		id, ok := c["_name_or_path"]
		delete(c, "_name_or_path")
		require.Equal(t, cfg, c, "the other fields as the source's")
		if !ok {
			return nil
		}
		return map[string]any{"_name_or_path": id}
	}
	baseOf := func(dir string) any {
		t.Helper()
		var c map[string]any
		b, err := os.ReadFile(filepath.Join(dir, "adapter_config.json"))
		require.NoError(t, err)
		require.NoError(t, json.Unmarshal(b, &c))
		return c["base_model_name_or_path"]
	}
	kept := map[string]any{"_name_or_path": "Qwen/Qwen3-0.6B"}

	sft := filepath.Join(dir, "sft")
	r := spiral(t, nil, "sft", "--model", named, "--out", sft, "--steps", "1", "--batch", "2", "--eval-every", "0", "--eval-problems", "1", "--quiet")
	require.Equal(t, 0, r.code, r.stderr)
	require.Nil(t, config(sft), "sft's model is not the one the id names")

	run := filepath.Join(dir, "run")
	r = spiral(t, nil, "train", "--model", named, "--out", run, "--lora-rank", "2", "--steps", "1", "--problems", "2", "--n1", "4", "--k", "2", "--n", "2", "--n2", "2",
		"--max-new-tokens", "24", "--checkpoint-every", "1", "--eval-every", "0", "--final-rsa-steps", "0", "--quiet")
	require.Equal(t, 0, r.code, r.stderr)
	base := filepath.Join(dir, "base")
	r = spiral(t, nil, "export", "--format", "hf", "--model", named, "--out", base)
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, kept, config(base), "the model itself")
	peft := filepath.Join(dir, "peft")
	r = spiral(t, nil, "export", "--format", "peft", "--model", named, "--checkpoint", run, "--out", peft)
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, "Qwen/Qwen3-0.6B", baseOf(peft), "adapters of the model the id names")
	var adapterTensors int
	_, err = fmt.Sscanf(r.stdout[strings.LastIndex(r.stdout, "("):], "(%d tensors)", &adapterTensors)
	require.NoError(t, err, r.stdout)
	hf := filepath.Join(dir, "hf")
	r = spiral(t, nil, "export", "--format", "hf", "--model", named, "--checkpoint", run, "--out", hf)
	require.Equal(t, 0, r.code, r.stderr)
	require.Nil(t, config(hf), "merged adapters: not the model the id names")
	// Beside the model, in its directory: its own config.json is left as
	// it is.
	r = spiral(t, nil, "export", "--format", "hf", "--model", named, "--checkpoint", run, "--out", named)
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, kept, config(named), "the source's own config.json")
	merged := filepath.Join(dir, "merged")
	r = spiral(t, nil, "export", "--model", named, "--checkpoint", run, "--out", filepath.Join(merged, "model.onnx"))
	require.Equal(t, 0, r.code, r.stderr)
	require.Nil(t, config(merged), "merged adapters: not the model the id names")
	// The onnx line counts, as the hf and peft lines do, the tensors it
	// wrote: the base weights the adapters (A and B of each) merged into,
	// not the adapters: in each of the 3 layers q [64, 128] (4 heads of
	// 32), k and v [64, 64] (2 KV heads), o [128, 64], gate and up
	// [64, 128], down [128, 64].
	require.Equal(t, 2*7*3, adapterTensors)
	require.Contains(t, r.stdout, fmt.Sprintf("(%d tensors, %d parameters)\n", 7*3, 3*(5*64*128+2*64*64)), r.stdout)
	require.Contains(t, r.stdout, "wrote "+filepath.Join(merged, "config.json")+": a copy of "+filepath.Join(named, "config.json")+" without its _name_or_path")

	// Adapters trained on sft's model: their base is not the id's.
	run2 := filepath.Join(dir, "run2")
	r = spiral(t, nil, "train", "--model", sft, "--out", run2, "--lora-rank", "2", "--steps", "1", "--problems", "2", "--n1", "4", "--k", "2", "--n", "2", "--n2", "2",
		"--max-new-tokens", "24", "--checkpoint-every", "1", "--eval-every", "0", "--final-rsa-steps", "0", "--quiet")
	require.Equal(t, 0, r.code, r.stderr)
	peft2 := filepath.Join(dir, "peft2")
	r = spiral(t, nil, "export", "--format", "peft", "--model", sft, "--checkpoint", run2, "--out", peft2)
	require.Equal(t, 0, r.code, r.stderr)
	require.Nil(t, baseOf(peft2))
	require.Contains(t, r.stderr, "names no base model")
}
