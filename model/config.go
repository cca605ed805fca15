package model

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// ConfigFile is the Hugging Face model configuration that exports keep
// beside model.onnx.
const ConfigFile = "config.json"

// HFConfig holds the fields of a Hugging Face config.json that spiral
// reads. Zero values mean "not stated".
type HFConfig struct {
	// MaxPositionEmbeddings is the model's context length in positions.
	MaxPositionEmbeddings int `json:"max_position_embeddings"`
	// TieWordEmbeddings says whether the LM head shares the embedding's
	// weights; nil when the file does not say.
	TieWordEmbeddings *bool `json:"tie_word_embeddings"`
	// VocabSize is the number of embedding rows.
	VocabSize int `json:"vocab_size"`
	// NumHiddenLayers, HiddenSize and IntermediateSize are the decoder
	// layers, the width of the residual stream and of the MLP.
	NumHiddenLayers  int `json:"num_hidden_layers"`
	HiddenSize       int `json:"hidden_size"`
	IntermediateSize int `json:"intermediate_size"`
	// NumAttentionHeads is the number of query heads.
	NumAttentionHeads int `json:"num_attention_heads"`
	// NameOrPath is the Hugging Face id or directory the model was made
	// from (transformers' _name_or_path; optimum's exports keep it).
	NameOrPath string `json:"_name_or_path"`
	// SlidingWindow and UseSlidingWindow are the attention window (a
	// number of positions, or null) and, in Qwen2's and Qwen3's configs,
	// whether it applies; any JSON is accepted (SlidingWindowActive reads
	// them).
	SlidingWindow    any `json:"sliding_window"`
	UseSlidingWindow any `json:"use_sliding_window"`
}

// SlidingWindowActive reports whether the config gives attention a
// sliding window: a positive sliding_window that use_sliding_window does
// not turn off (Mistral's configs have no use_sliding_window; Qwen3's set
// a window and turn it off). Anything else read as a window (a list of
// per-layer windows, say) counts as one.
func (c HFConfig) SlidingWindowActive() bool {
	if use, ok := c.UseSlidingWindow.(bool); ok && !use {
		return false
	}
	switch w := c.SlidingWindow.(type) {
	case nil:
		return false
	case float64:
		return w > 0
	default:
		return true
	}
}

// ReadHFConfig reads config.json from the directory of the model file at
// modelPath. A missing file gives the zero HFConfig and found=false; a file
// that does not parse is an error naming it.
func ReadHFConfig(modelPath string) (cfg HFConfig, found bool, err error) {
	path := filepath.Join(filepath.Dir(modelPath), ConfigFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return HFConfig{}, false, nil
	}
	if err != nil {
		return HFConfig{}, false, fmt.Errorf("model: %w", err)
	}
	if err := json.Unmarshal(b, &cfg); err != nil {
		return HFConfig{}, false, fmt.Errorf("model: %s: %w", path, err)
	}
	if cfg.MaxPositionEmbeddings < 0 || cfg.VocabSize < 0 || cfg.NumAttentionHeads < 0 {
		return HFConfig{}, false, fmt.Errorf("model: %s: negative max_position_embeddings, vocab_size or num_attention_heads", path)
	}
	return cfg, true, nil
}
