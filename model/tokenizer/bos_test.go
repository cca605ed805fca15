package tokenizer

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// byteTokenizerWithBOS is the byte tokenizer with "<s>" as a special
// added token (id 259), as Mistral's and Llama 2's tokenizers have it.
func byteTokenizerWithBOS(t *testing.T) []byte {
	t.Helper()
	data, err := BuildByteTokenizerJSON()
	require.NoError(t, err)
	var f map[string]any
	require.NoError(t, json.Unmarshal(data, &f))
	f["added_tokens"] = append(f["added_tokens"].([]any), map[string]any{"id": 259, "content": "<s>", "single_word": false,
		"lstrip": false, "rstrip": false, "normalized": false, "special": true})
	out, err := json.Marshal(f)
	require.NoError(t, err)
	return out
}

// loadWithConfig loads tokenizer data from a directory holding config as
// its tokenizer_config.json.
func loadWithConfig(t *testing.T, data []byte, config map[string]any) (*Tokenizer, string) {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, TokenizerFile), data, 0o644))
	b, err := json.Marshal(config)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, ConfigFile), b, 0o644))
	tok, err := Load(dir)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, tok.Close()) })
	return tok, filepath.Join(dir, ConfigFile)
}

// TestChatBOSGolden: a ChatML template that writes {{ bos_token }} before
// its messages (Hermes-style ChatML on Mistral and Llama bases) prompts
// with the tokenizer's BOS token first, as transformers'
// apply_chat_template renders it (testdata/bos_golden.json,
// gen_bos_golden.py); EncodeChat left it out ("<s><|im_start|>user..."
// -> "<|im_start|>user..."), so the model was prompted otherwise than it
// was trained.
func TestChatBOSGolden(t *testing.T) {
	var g struct {
		Source string `json:"source"`
		Cases  []struct {
			Name     string    `json:"name"`
			Template string    `json:"template"`
			BOS      any       `json:"bos_token"`
			Messages []Message `json:"messages"`
			Gen      bool      `json:"add_generation_prompt"`
			Text     string    `json:"text"`
		} `json:"cases"`
	}
	readGolden(t, "bos_golden.json", &g)
	require.NotEmpty(t, g.Cases)
	data := byteTokenizerWithBOS(t)
	for _, c := range g.Cases {
		t.Run(c.Name, func(t *testing.T) {
			config := map[string]any{"chat_template": c.Template}
			if c.BOS != nil {
				config["bos_token"] = c.BOS
			}
			tok, _ := loadWithConfig(t, data, config)
			require.Empty(t, tok.TemplateWarning())
			got := tok.EncodeChat(c.Messages, c.Gen)
			require.Equal(t, tok.Encode(c.Text), got, "source: %s", g.Source)
			require.Equal(t, c.Text, tok.Decode(got))
		})
	}
}

// TestChatTemplateBOSElsewhere: a template that writes bos_token
// elsewhere than once before its messages (in its message loop, under a
// condition, within a longer expression) is rendered as ChatML without
// it, with a warning naming the file and what differs; the BOS of a
// template that writes it first is not warned of.
func TestChatTemplateBOSElsewhere(t *testing.T) {
	const body = "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
	const loopBOS = "{% for message in messages %}{{ bos_token + '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
	data := byteTokenizerWithBOS(t)
	for _, tc := range []struct {
		name, template string
		bos            bool // prompts start with <s>
		warn           bool
	}{
		{"first", "{{ bos_token }}" + body, true, false},
		{"first after a set", "{%- set x = 1 %}{{- bos_token }}" + body, true, false},
		{"in the loop", loopBOS, false, true},
		{"under a condition", "{% if messages %}{{ bos_token }}{% endif %}" + body, false, true},
		{"after other text", "{{ 'x' }}{{ bos_token }}" + body, false, true},
		{"after the messages", body + "{{ bos_token }}", false, true},
		{"twice", "{{ bos_token }}{{ bos_token }}" + body, true, true},
		{"none", body, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tok, config := loadWithConfig(t, data, map[string]any{"chat_template": tc.template, "bos_token": "<s>"})
			want := ""
			if tc.warn {
				want = config + ": chat_template writes bos_token elsewhere than once before the messages, which spiral's ChatML prompts do not follow: they differ there from transformers' apply_chat_template (spiral writes the BOS token only where a template writes {{ bos_token }} first)"
			}
			require.Equal(t, want, tok.TemplateWarning())
			ids := tok.EncodeChat([]Message{{Role: RoleUser, Content: "hi"}}, true)
			require.Equal(t, tc.bos, ids[0] == 259, "prompt %q", tok.Decode(ids))
		})
	}
}

// TestChatMLWithoutEndOfText: a ChatML tokenizer whose vocabulary has
// no <|endoftext|> (Hermes-style ChatML on a Mistral or Llama base, which
// adds only <|im_start|> and <|im_end|> to the base's "</s>") loads,
// prompts with the BOS its template writes first and stops at
// <|im_end|>; the generation files spiral writes for it stop there too
// and name no padding token. Load refused it ("added_tokens lacks
// <|endoftext|>"), so the BOS of such templates, which TestChatBOSGolden
// renders, never reached a model that has one.
func TestChatMLWithoutEndOfText(t *testing.T) {
	var f map[string]any
	require.NoError(t, json.Unmarshal(byteTokenizerWithBOS(t), &f))
	for _, a := range f["added_tokens"].([]any) {
		if a := a.(map[string]any); a["content"] == EndOfTextToken {
			a["content"] = "</s>"
		}
	}
	data, err := json.Marshal(f)
	require.NoError(t, err)
	const hermes = "{{bos_token}}{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
	tok, _ := loadWithConfig(t, data, map[string]any{"chat_template": hermes, "bos_token": "<s>", "eos_token": IMEndToken})
	_, ok := tok.EndOfText()
	require.False(t, ok)
	require.Equal(t, []int32{tok.IMEnd()}, tok.StopIDs())
	ids := tok.EncodeChat([]Message{{Role: RoleUser, Content: "hi"}}, true)
	require.Equal(t, "<s><|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n", tok.Decode(ids))
	files, err := tok.HFConfigFiles()
	require.NoError(t, err)
	var cfg map[string]any
	require.NoError(t, json.Unmarshal(files[ConfigFile], &cfg))
	require.NotContains(t, cfg, "pad_token")
	require.Equal(t, IMEndToken, cfg["eos_token"])
	var gen map[string]any
	require.NoError(t, json.Unmarshal(files[GenerationConfigFile], &gen))
	require.Equal(t, map[string]any{"eos_token_id": []any{float64(tok.IMEnd())}}, gen)
}
