package tests

import (
	"encoding/json"
	"os"
	"path/filepath"
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
