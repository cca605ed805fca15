package model

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spiral-rl/spiral/model/jsonerr"
	"github.com/spiral-rl/spiral/model/smallfile"
	"github.com/spiral-rl/spiral/model/tokenizer"
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
	// RopeTheta, RopeScaling, RopeParameters, HeadDim and
	// PartialRotaryFactor describe the rotary embedding (rotary reads
	// them): transformers 5 keeps rope_theta, the scaling and the
	// partial factor in rope_parameters, earlier releases rope_theta and
	// partial_rotary_factor at the top and the scaling in rope_scaling.
	RopeTheta           float64 `json:"rope_theta"`
	RopeScaling         any     `json:"rope_scaling"`
	RopeParameters      any     `json:"rope_parameters"`
	HeadDim             int     `json:"head_dim"`
	PartialRotaryFactor float64 `json:"partial_rotary_factor"`
	// NumAttentionHeads is the number of query heads.
	NumAttentionHeads int `json:"num_attention_heads"`
	// NumKeyValueHeads is the number of key and value heads (0 where
	// the file does not say: as many as the query heads).
	NumKeyValueHeads int `json:"num_key_value_heads"`
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

// rotary returns the rotary scaling c asks for (the rope_type, or type,
// of rope_scaling or else rope_parameters; "" when none, "default" or
// "mrope"),
// its rope_theta (10000 when unstated, transformers' default) and the
// width the rotation spans: head_dim (else hidden_size /
// num_attention_heads) times partial_rotary_factor, 0 when unknown.
func (c HFConfig) rotary() (kind string, theta float64, width int) {
	str := func(m map[string]any, key string) string {
		s, _ := m[key].(string)
		return s
	}
	num := func(m map[string]any, key string) float64 {
		f, _ := m[key].(float64)
		return f
	}
	params, _ := c.RopeParameters.(map[string]any)
	scaling, _ := c.RopeScaling.(map[string]any)
	for _, m := range []map[string]any{scaling, params} { // transformers 5 takes rope_scaling first
		if kind == "" {
			kind = cmp.Or(str(m, "rope_type"), str(m, "type"))
		}
	}
	if kind == "default" || kind == "mrope" { // Qwen2-VL's mrope: the default frequencies
		kind = ""
	}
	theta = cmp.Or(num(scaling, "rope_theta"), num(params, "rope_theta"), c.RopeTheta, 10000)
	headDim := c.HeadDim
	if headDim == 0 && c.NumAttentionHeads > 0 {
		headDim = c.HiddenSize / c.NumAttentionHeads
	}
	factor := cmp.Or(num(params, "partial_rotary_factor"), c.PartialRotaryFactor, 1)
	return kind, theta, int(float64(headDim) * factor)
}

// nameOrPath is config.json's key of the model the weights beside it
// are (see HFConfig.NameOrPath).
const nameOrPath = "_name_or_path"

// TrainedConfig returns the config.json b for weights that spiral trained
// from the model it describes: without _name_or_path, which names that
// model and not these weights (a peft export takes it as its adapters'
// base: adapters trained on sft's model would be loaded on the model sft
// started from); b itself when it has none. The other fields keep their
// order, reindented.
func TrainedConfig(b []byte) ([]byte, error) {
	return editConfig(b, func(key string, v json.RawMessage) (json.RawMessage, bool) {
		return v, key != nameOrPath
	})
}

// dtypeKeys are config.json's keys of the dtype its weights are stored
// in: transformers 4's torch_dtype and transformers 5's dtype.
var dtypeKeys = []string{"torch_dtype", "dtype"}

// textConfigKey is config.json's key of a multimodal model's text model
// config (Qwen3-VL's, Gemma 3's, Llava's), which ReadHFConfig reads.
const textConfigKey = "text_config"

// Float32Config returns the config.json b for weights written in
// float32, as spiral writes every model's (the hf and onnx exports, sft's
// model): its torch_dtype and dtype, and those of its text_config (a
// multimodal model's text model, whose weights these are), where
// they name another type (a bfloat16 release's "bfloat16"), say
// "float32", so that transformers and serving engines do not take the
// float32 tensors for that type; b itself when none does (absent,
// null or float32 already). Another sub-model's config (vision_config),
// whose weights spiral writes none of, is left as it is. The other
// fields keep their order, reindented.
func Float32Config(b []byte) ([]byte, error) {
	return editConfig(b, float32Field)
}

// float32Field is Float32Config's edit of one field of a config: a
// dtype said float32, a text_config object edited likewise.
func float32Field(key string, v json.RawMessage) (json.RawMessage, bool) {
	var name string
	if slices.Contains(dtypeKeys, key) && json.Unmarshal(v, &name) == nil && name != "" && name != "float32" {
		return json.RawMessage(`"float32"`), true
	}
	if key == textConfigKey && bytes.HasPrefix(bytes.TrimSpace(v), []byte("{")) {
		// An object that parsed with the whole file: it parses again.
		if w, err := editConfig(v, float32Field); err == nil {
			return w, true
		}
	}
	return v, true
}

// editConfig returns the config.json b with each top-level field's value
// replaced by edit's (the field left out where edit says not to keep
// it), its fields in their order, reindented; b itself when edit changes
// nothing.
func editConfig(b []byte, edit func(key string, v json.RawMessage) (json.RawMessage, bool)) ([]byte, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(b, &fields); err != nil {
		return nil, fmt.Errorf("model: %s: %w", ConfigFile, jsonerr.Describe(b, &fields, err))
	}
	changed := false
	for k, v := range fields {
		if w, keep := edit(k, v); !keep || !bytes.Equal(w, v) {
			changed = true
		}
	}
	if !changed {
		return b, nil
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if _, err := dec.Token(); err != nil { // the object's '{', as Unmarshal found
		return nil, fmt.Errorf("model: %s: %w", ConfigFile, err)
	}
	var kept bytes.Buffer
	kept.WriteByte('{')
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("model: %s: %w", ConfigFile, err)
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("model: %s: %w", ConfigFile, err)
		}
		v, keep := edit(key.(string), v)
		if !keep {
			continue
		}
		k, err := json.Marshal(key)
		if err != nil {
			return nil, fmt.Errorf("model: %s: %w", ConfigFile, err)
		}
		if kept.Len() > 1 {
			kept.WriteByte(',')
		}
		kept.Write(k)
		kept.WriteByte(':')
		kept.Write(v)
	}
	kept.WriteByte('}')
	var out bytes.Buffer
	if err := json.Indent(&out, kept.Bytes(), "", "  "); err != nil {
		return nil, fmt.Errorf("model: %s: %w", ConfigFile, err)
	}
	out.WriteByte('\n')
	return out.Bytes(), nil
}

// ReadHFConfig reads config.json from the directory of the model file at
// modelPath. A missing file gives the zero HFConfig and found=false; a file
// that does not parse, or states a negative size or a
// partial_rotary_factor outside (0, 1], is an error naming it. A multimodal model's
// config.json (Qwen3-VL's, Gemma 3's, Llava's) holds its text model's
// fields in text_config, which transformers' get_text_config reads in the
// top level's place: the fields text_config states are read from it,
// those it leaves out from the top level, and _name_or_path from the top
// level (text_config's names the text model it was made from).
func ReadHFConfig(modelPath string) (cfg HFConfig, found bool, err error) {
	path := filepath.Join(filepath.Dir(modelPath), ConfigFile)
	b, err := smallfile.Read(path, smallfile.Limit)
	if errors.Is(err, fs.ErrNotExist) {
		return HFConfig{}, false, nil
	}
	if err != nil {
		return HFConfig{}, false, fmt.Errorf("model: %w", err)
	}
	var file struct {
		HFConfig
		TextConfig json.RawMessage `json:"text_config"`
	}
	if err := json.Unmarshal(b, &file); err != nil {
		return HFConfig{}, false, fmt.Errorf("model: %s: %w", path, jsonerr.Describe(b, &file, err))
	}
	cfg = file.HFConfig
	if len(file.TextConfig) > 0 && string(file.TextConfig) != "null" {
		if err := json.Unmarshal(file.TextConfig, &cfg); err != nil {
			return HFConfig{}, false, fmt.Errorf("model: %s: text_config: %w", path, jsonerr.Describe(file.TextConfig, &cfg, err))
		}
		cfg.NameOrPath = file.NameOrPath
	}
	if err := cfg.checkSizes(); err != nil {
		return HFConfig{}, false, fmt.Errorf("model: %s: %w", path, err)
	}
	return cfg, true, nil
}

// checkSizes refuses sizes of c that no model has: a negative one, or a
// partial_rotary_factor that is not a fraction. The error names the
// field. A head_dim wider than hidden_size is a model's (init-model
// writes one for --hidden 16); how wide one may be, nothing here says.
func (c HFConfig) checkSizes() error {
	for _, f := range []struct {
		field string
		n     int
	}{
		{"max_position_embeddings", c.MaxPositionEmbeddings}, {"vocab_size", c.VocabSize}, {"num_attention_heads", c.NumAttentionHeads},
		{"num_hidden_layers", c.NumHiddenLayers}, {"hidden_size", c.HiddenSize}, {"intermediate_size", c.IntermediateSize}, {"head_dim", c.HeadDim},
	} {
		if f.n < 0 {
			return fmt.Errorf("negative %s %d", f.field, f.n)
		}
	}
	params, _ := c.RopeParameters.(map[string]any)
	for _, f := range []struct {
		field string
		v     any
	}{{"partial_rotary_factor", c.PartialRotaryFactor}, {"rope_parameters.partial_rotary_factor", params["partial_rotary_factor"]}} {
		if v, ok := f.v.(float64); ok && v != 0 && (v < 0 || v > 1) {
			return fmt.Errorf("%s %g is not a fraction in (0, 1]", f.field, v)
		}
	}
	return nil
}

// ReadGenerationEOS returns the ids that end generation by the
// eos_token_id of the generation_config.json beside modelPath: one id or
// a list of them (Qwen3's [151645, 151643]); nil when there is no such
// file, or it states none (absent or null). An id past tok's ids is an
// error naming the file, the id and tok's ids: the file is another
// model's, with a larger vocabulary. warning names, in turn, the ids
// that are not special tokens of tok (another model's eos that is an
// ordinary text token here, Qwen3's <think>) and their text, which would
// end each completion that writes it; "" where every id is one.
func ReadGenerationEOS(modelPath string, tok *tokenizer.Tokenizer) (ids []int32, warning string, err error) {
	var gc struct {
		EOS json.RawMessage `json:"eos_token_id"`
	}
	path, err := readGenerationConfig(modelPath, &gc)
	if err != nil {
		return nil, "", err
	}
	if len(gc.EOS) == 0 || string(gc.EOS) == "null" {
		return nil, "", nil
	}
	var read []int64
	if err := json.Unmarshal(gc.EOS, &read); err != nil {
		var id int64
		if json.Unmarshal(gc.EOS, &id) != nil {
			return nil, "", fmt.Errorf("model: %s: eos_token_id: want a token id or a list of token ids, got %s", path, gc.EOS)
		}
		read = []int64{id}
	}
	special := map[int32]bool{}
	for _, a := range tok.AddedTokens() {
		special[a.ID] = special[a.ID] || a.Special
	}
	ids = make([]int32, len(read))
	var warnings []string
	for i, id := range read {
		if id < 0 || id > math.MaxInt32 {
			return nil, "", fmt.Errorf("model: %s: eos_token_id: %d is not a token id", path, id)
		}
		if id >= int64(tok.VocabSize()) {
			return nil, "", fmt.Errorf("model: %s: eos_token_id: %d is past the tokenizer's %d ids (another model's file?)", path, id, tok.VocabSize())
		}
		ids[i] = int32(id)
		if !special[ids[i]] {
			warnings = append(warnings, fmt.Sprintf("eos_token_id %d is not a special token of the tokenizer (it decodes to %q)", id, tok.Decode([]int32{ids[i]})))
		}
	}
	if len(warnings) > 0 {
		warning = fmt.Sprintf("%s: %s: generation ends wherever a completion writes it (another model's file?)", path, strings.Join(warnings, "; "))
	}
	return ids, warning, nil
}

// GenerationSampling is the sampling a generation_config.json suggests
// (transformers' generate defaults for the model; Qwen3's temperature
// 0.6, top_p 0.95, top_k 20): nil where the file does not state a field.
type GenerationSampling struct {
	DoSample    *bool    `json:"do_sample"`
	Temperature *float64 `json:"temperature"`
	TopP        *float64 `json:"top_p"`
	TopK        *float64 `json:"top_k"` // an integer, which some files write as 20.0
}

// ReadGenerationSampling reads the sampling fields of the
// generation_config.json beside modelPath, and the file's path; the zero
// GenerationSampling where there is no such file. Fields of another type
// are an error naming the file and the field.
func ReadGenerationSampling(modelPath string) (GenerationSampling, string, error) {
	var gs GenerationSampling
	path, err := readGenerationConfig(modelPath, &gs)
	if err != nil {
		return GenerationSampling{}, path, err
	}
	return gs, path, nil
}

// readGenerationConfig decodes the generation_config.json beside
// modelPath into v and returns the file's path; v is left as it is where
// there is no such file. Errors name the file (and a mistyped field).
func readGenerationConfig(modelPath string, v any) (string, error) {
	path := filepath.Join(filepath.Dir(modelPath), tokenizer.GenerationConfigFile)
	b, err := smallfile.Read(path, smallfile.Limit)
	if errors.Is(err, fs.ErrNotExist) {
		return path, nil
	}
	if err != nil {
		return path, fmt.Errorf("model: %w", err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return path, fmt.Errorf("model: %s: %w", path, jsonerr.Describe(b, v, err))
	}
	return path, nil
}
