package qwen3

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/spiral-rl/spiral/model/jsonerr"
	"github.com/spiral-rl/spiral/model/smallfile"
)

// Config is the architecture of a Qwen3 decoder. Its JSON names are those
// of Hugging Face's config.json, so a real model's config.json decodes
// into it (ParseConfig fills the defaults transformers' Qwen3Config uses
// for absent fields).
type Config struct {
	// Layers is the number of decoder layers.
	Layers int `json:"num_hidden_layers"`
	// Hidden is the width of the residual stream.
	Hidden int `json:"hidden_size"`
	// Heads is the number of query heads.
	Heads int `json:"num_attention_heads"`
	// KVHeads is the number of key/value heads (grouped-query attention);
	// it divides Heads.
	KVHeads int `json:"num_key_value_heads"`
	// HeadDim is the width of one head, even (rotary pairs) and in general
	// not Hidden/Heads (Qwen3-4B: 2560/32 = 80 but HeadDim 128).
	HeadDim int `json:"head_dim"`
	// Intermediate is the width of the SwiGLU MLP.
	Intermediate int `json:"intermediate_size"`
	// Vocab is the number of logits (rows of the embedding).
	Vocab int `json:"vocab_size"`
	// RopeTheta is the rotary base θ: inv_freq[i] = θ^(-2i/HeadDim).
	RopeTheta float64 `json:"rope_theta"`
	// RMSEps is ε in RMSNorm: x / sqrt(mean(x²) + ε) · w.
	RMSEps float64 `json:"rms_norm_eps"`
	// TiedEmbeddings makes the LM head the transpose of the token
	// embedding instead of a separate lm_head.weight.
	TiedEmbeddings bool `json:"tie_word_embeddings"`
	// MaxPositions is the longest sequence the model is meant for; the
	// graph does not depend on it (rotary angles are computed from
	// position_ids), it is recorded in config.json. 0 means unspecified.
	MaxPositions int `json:"max_position_embeddings"`
	// PositionsFromMask builds the graph without a position_ids input:
	// positions are counted from the attention mask (cumsum - 1, as
	// onnxruntime-genai layouts expect), for testing such exports. Not
	// part of config.json.
	PositionsFromMask bool `json:"-"`
}

// Tiny returns the small default architecture of spiral's tests and
// embedded model: 2 layers, hidden 64, 4 query heads over 2 KV heads of
// width 32 (deliberately not 64/4), MLP 128, a 100-token vocabulary, θ
// 10000, ε 1e-6, tied embeddings, 4096 positions.
func Tiny() Config {
	return Config{
		Layers: 2, Hidden: 64, Heads: 4, KVHeads: 2, HeadDim: 32,
		Intermediate: 128, Vocab: 100, RopeTheta: 10000, RMSEps: 1e-6,
		TiedEmbeddings: true, MaxPositions: 4096,
	}
}

// Validate reports every field outside its allowed values: Layers,
// Hidden, Heads, KVHeads, Intermediate, Vocab >= 1; KVHeads divides Heads;
// HeadDim >= 2 and even; RopeTheta > 0, finite, and small enough an
// inverse of it for float32; RMSEps > 0; MaxPositions >= 0.
func (c Config) Validate() error {
	if err := c.check(); err != nil {
		return fmt.Errorf("qwen3: config: %w", err)
	}
	return nil
}

func (c Config) check() error {
	var errs []string
	pos := func(name string, v int) {
		if v < 1 {
			errs = append(errs, fmt.Sprintf("%s %d: want >= 1", name, v))
		}
	}
	pos("num_hidden_layers", c.Layers)
	pos("hidden_size", c.Hidden)
	pos("num_attention_heads", c.Heads)
	pos("num_key_value_heads", c.KVHeads)
	pos("intermediate_size", c.Intermediate)
	pos("vocab_size", c.Vocab)
	if c.Heads >= 1 && c.KVHeads >= 1 && c.Heads%c.KVHeads != 0 {
		errs = append(errs, fmt.Sprintf("num_key_value_heads %d: want a divisor of num_attention_heads %d", c.KVHeads, c.Heads))
	}
	if c.HeadDim < 2 || c.HeadDim%2 != 0 {
		errs = append(errs, fmt.Sprintf("head_dim %d: want an even number >= 2", c.HeadDim))
	}
	if !(c.RopeTheta > 0) {
		errs = append(errs, fmt.Sprintf("rope_theta %g: want > 0", c.RopeTheta))
	} else if math.IsInf(c.RopeTheta, 1) {
		errs = append(errs, "rope_theta +Inf: want a finite value")
	} else if c.HeadDim > 2 && c.HeadDim%2 == 0 {
		// The largest inverse frequency, theta^(-(HeadDim-2)/HeadDim),
		// must be a float32: past it the rotary tables and every logit
		// are NaN.
		exp := float64(c.HeadDim-2) / float64(c.HeadDim)
		if least := math.Pow(math.MaxFloat32, -1/exp); c.RopeTheta < least {
			errs = append(errs, fmt.Sprintf("rope_theta %g: its inverse frequencies pass float32's range: want at least %.3g", c.RopeTheta, least))
		}
	}
	if !(c.RMSEps > 0) {
		errs = append(errs, fmt.Sprintf("rms_norm_eps %g: want > 0", c.RMSEps))
	}
	if c.MaxPositions < 0 {
		errs = append(errs, fmt.Sprintf("max_position_embeddings %d: want >= 0", c.MaxPositions))
	}
	if len(errs) > 0 {
		return errors.New(strings.Join(errs, "; "))
	}
	return nil
}

// DefaultHeadDim and DefaultKVHeads are transformers' Qwen3Config
// defaults for a config.json without head_dim or num_key_value_heads.
const (
	DefaultHeadDim = 128
	DefaultKVHeads = 32
)

// ParseConfig decodes a Hugging Face config.json and validates it.
// rope_theta is read where transformers 5 writes it, in rope_parameters,
// when the top level has none. Absent fields take transformers'
// Qwen3Config defaults where the architecture allows one: head_dim 128
// (DefaultHeadDim), num_key_value_heads 32 (DefaultKVHeads), rope_theta
// 10000, rms_norm_eps 1e-6, tie_word_embeddings false; a null
// num_key_value_heads is num_attention_heads, as in transformers, and a
// null head_dim hidden_size / num_attention_heads; a null rope_theta or
// rms_norm_eps takes the default. A value given is kept: an explicit 0 is
// refused, naming the field, not taken for the default. A model_type
// other than "qwen3" (when present) is an error.
func ParseConfig(data []byte) (Config, error) {
	c, err := parseConfig(data)
	if err != nil {
		return Config{}, fmt.Errorf("qwen3: config: %w", err)
	}
	return c, nil
}

func parseConfig(data []byte) (Config, error) {
	var c Config
	if err := json.Unmarshal(data, &c); err != nil {
		return Config{}, jsonerr.Describe(data, &c, err)
	}
	var extra struct {
		ModelType string `json:"model_type"`
		// RopeParameters is transformers 5's form of the rotary
		// settings, which holds rope_theta in place of the top level.
		RopeParameters map[string]json.RawMessage `json:"rope_parameters"`
	}
	if err := json.Unmarshal(data, &extra); err != nil {
		return Config{}, jsonerr.Describe(data, &extra, err)
	}
	if extra.ModelType != "" && extra.ModelType != "qwen3" {
		return Config{}, fmt.Errorf("model_type %q, want \"qwen3\"", extra.ModelType)
	}
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(data, &keys); err != nil {
		return Config{}, err
	}
	// given reports whether m holds key with a value other than null: a
	// value given, even 0, is kept (and 0 refused by check), where an
	// absent or null one takes its default.
	given := func(m map[string]json.RawMessage, key string) bool {
		v, ok := m[key]
		return ok && string(v) != "null"
	}
	switch {
	case given(keys, "rope_theta"):
	case given(extra.RopeParameters, "rope_theta"):
		if err := json.Unmarshal(extra.RopeParameters["rope_theta"], &c.RopeTheta); err != nil {
			return Config{}, fmt.Errorf("rope_parameters.rope_theta: %w", jsonerr.Describe(extra.RopeParameters["rope_theta"], &c.RopeTheta, err))
		}
	default:
		c.RopeTheta = 10000
	}
	if !given(keys, "rms_norm_eps") {
		c.RMSEps = 1e-6
	}
	// Absent, these take Qwen3Config's class defaults; null, what its
	// num_key_value_heads takes and what a head's width would be without
	// head_dim (transformers refuses a null head_dim).
	if _, ok := keys["num_key_value_heads"]; !ok {
		c.KVHeads = DefaultKVHeads
	} else if string(keys["num_key_value_heads"]) == "null" {
		c.KVHeads = c.Heads
	}
	if _, ok := keys["head_dim"]; !ok {
		c.HeadDim = DefaultHeadDim
	} else if string(keys["head_dim"]) == "null" && c.Heads > 0 {
		c.HeadDim = c.Hidden / c.Heads
	}
	if err := c.check(); err != nil {
		return Config{}, err
	}
	return c, nil
}

// LoadConfig reads and parses the config.json at path (see ParseConfig).
func LoadConfig(path string) (Config, error) {
	data, err := smallfile.Read(path, smallfile.Limit)
	if err != nil {
		return Config{}, fmt.Errorf("qwen3: %w", err)
	}
	c, err := parseConfig(data)
	if err != nil {
		return Config{}, fmt.Errorf("qwen3: config %q: %w", path, err)
	}
	return c, nil
}

// HFConfigJSON renders c as a Hugging Face config.json for
// Qwen3ForCausalLM (float32, no rope scaling, no sliding window), loadable
// by transformers' AutoConfig and by ParseConfig.
func (c Config) HFConfigJSON() ([]byte, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	type hf struct {
		Architectures []string `json:"architectures"`
		ModelType     string   `json:"model_type"`
		Config
		HiddenAct        string  `json:"hidden_act"`
		AttentionBias    bool    `json:"attention_bias"`
		AttentionDropout float64 `json:"attention_dropout"`
		InitializerRange float64 `json:"initializer_range"`
		RopeScaling      any     `json:"rope_scaling"`
		SlidingWindow    any     `json:"sliding_window"`
		UseSlidingWindow bool    `json:"use_sliding_window"`
		MaxWindowLayers  int     `json:"max_window_layers"`
		TorchDtype       string  `json:"torch_dtype"`
		UseCache         bool    `json:"use_cache"`
	}
	v := hf{
		Architectures: []string{"Qwen3ForCausalLM"}, ModelType: "qwen3", Config: c,
		HiddenAct: "silu", InitializerRange: InitStd, MaxWindowLayers: c.Layers,
		TorchDtype: "float32", UseCache: true,
	}
	if v.MaxPositions == 0 {
		v.MaxPositions = 32768 // transformers' Qwen3Config default
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("qwen3: config: %w", err)
	}
	return buf.Bytes(), nil
}
