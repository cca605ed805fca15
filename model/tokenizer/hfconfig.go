package tokenizer

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
)

// ChatMLTemplate is RenderChat as a Jinja chat_template, the form
// transformers' apply_chat_template (and vLLM, SGLang) render: one
// "<|im_start|>{role}\n{content}<|im_end|>\n" per message, then
// "<|im_start|>assistant\n" with the generation prompt.
//
//go:embed chatml.jinja
var ChatMLTemplate string

// GenerationConfigFile is the generation defaults of a Hugging Face model
// directory (the ids generate stops at).
const GenerationConfigFile = "generation_config.json"

// HFConfigFiles returns a tokenizer_config.json and a
// generation_config.json that make transformers tokenize, prompt and stop
// as spiral does with t: tokenizer.json loaded as it is
// (PreTrainedTokenizerFast; without a class, transformers 5 takes
// Qwen2Tokenizer from config.json's model_type, which rebuilds a byte-level
// BPE from the file's vocabulary and so drops the spaces and unknown
// characters of the char tokenizer and garbles the byte tokenizer), the
// ChatML chat_template (ChatMLTemplate), <|im_end|> as the end-of-sequence
// token and <|endoftext|> as padding (none where t has no <|endoftext|>),
// and generation stopping at t's StopIDs. They are for a model directory
// that has no such files of its own (a model spiral made), keyed by file
// name.
func (t *Tokenizer) HFConfigFiles() (map[string][]byte, error) {
	var pad *string
	var padID *int32
	if eot, ok := t.EndOfText(); ok {
		content := EndOfTextToken
		pad, padID = &content, &eot
	}
	tc, err := indentedJSON(struct {
		Class        string  `json:"tokenizer_class"`
		ChatTemplate string  `json:"chat_template"`
		EOSToken     string  `json:"eos_token"`
		PadToken     *string `json:"pad_token,omitempty"`
		BOSToken     *string `json:"bos_token"`
		CleanUp      bool    `json:"clean_up_tokenization_spaces"`
	}{"PreTrainedTokenizerFast", ChatMLTemplate, IMEndToken, pad, nil, false})
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %s: %w", ConfigFile, err)
	}
	gc, err := indentedJSON(struct {
		EOSTokenID []int32 `json:"eos_token_id"`
		PadTokenID *int32  `json:"pad_token_id,omitempty"`
	}{t.StopIDs(), padID})
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %s: %w", GenerationConfigFile, err)
	}
	return map[string][]byte{ConfigFile: tc, GenerationConfigFile: gc}, nil
}

// indentedJSON is v as indented JSON ending in a newline, the special
// tokens' angle brackets written as they are (not as HTML escapes).
func indentedJSON(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
