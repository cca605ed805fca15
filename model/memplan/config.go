package memplan

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/spiral-rl/spiral/model/jsonerr"
	"github.com/spiral-rl/spiral/model/lmgraph"
	"github.com/spiral-rl/spiral/model/qwen3"
	"github.com/spiral-rl/spiral/model/smallfile"
)

// The architectures plan knows (config.json's model_type; Arch.Type),
// those model/ runs and exports (its Qwen3 graphs and exports of
// transformers' Qwen3, Qwen2, Llama and Mistral decoders), and the
// transformers classes (config.json's architectures) that name them.
var archClasses = []struct{ typ, class string }{
	{"qwen3", "Qwen3ForCausalLM"},
	{"qwen2", "Qwen2ForCausalLM"},
	{"llama", "LlamaForCausalLM"},
	{"mistral", "MistralForCausalLM"},
}

// knownArchs lists archClasses for a message: qwen3 (Qwen3ForCausalLM),
// qwen2 (Qwen2ForCausalLM), ...
func knownArchs() string {
	var s []string
	for _, a := range archClasses {
		s = append(s, fmt.Sprintf("%s (%s)", a.typ, a.class))
	}
	return strings.Join(s, ", ")
}

// typeOf returns the architecture a config.json names: its model_type,
// else the model type of its first architectures entry, else qwen3 (as
// qwen3.ParseConfig takes a config without model_type for Qwen3's).
func typeOf(modelType string, classes []string) (string, error) {
	if modelType != "" {
		for _, a := range archClasses {
			if a.typ == modelType {
				return a.typ, nil
			}
		}
		return "", fmt.Errorf("model_type %q: want one of %s", modelType, knownArchs())
	}
	if len(classes) == 0 {
		return "qwen3", nil
	}
	for _, a := range archClasses {
		if a.class == classes[0] {
			return a.typ, nil
		}
	}
	return "", fmt.Errorf("architectures %q: want one of %s", classes[0], knownArchs())
}

// ParseConfig reads a Hugging Face config.json's shape and context, and
// the architecture (model_type, else architectures) that says which
// parameters the model has: qwen3 as qwen3.ParseConfig reads it
// (attention_bias adds the four attention projections' biases); qwen2,
// llama and mistral with the defaults of transformers' config classes
// for an absent or null num_key_value_heads (Qwen2Config 32,
// LlamaConfig num_attention_heads, MistralConfig 8; null:
// num_attention_heads) and head_dim (hidden_size / num_attention_heads),
// tie_word_embeddings false, and attention_bias and mlp_bias (Llama's)
// false. num_hidden_layers, hidden_size, intermediate_size,
// num_attention_heads and vocab_size must be given.
func ParseConfig(data []byte) (Arch, error) {
	var head struct {
		ModelType     string   `json:"model_type"`
		Architectures []string `json:"architectures"`
		AttentionBias bool     `json:"attention_bias"`
		MLPBias       bool     `json:"mlp_bias"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return Arch{}, jsonerr.Describe(data, &head, err)
	}
	typ, err := typeOf(head.ModelType, head.Architectures)
	if err != nil {
		return Arch{}, err
	}
	if typ == "qwen3" {
		c, err := qwen3.ParseConfig(data)
		if err != nil {
			return Arch{}, err
		}
		a := FromQwen3(c)
		a.AttentionBias = head.AttentionBias
		if err := a.valid(); err != nil {
			return Arch{}, err
		}
		return a, nil
	}
	var c struct {
		Layers       *int `json:"num_hidden_layers"`
		Hidden       *int `json:"hidden_size"`
		Intermediate *int `json:"intermediate_size"`
		Heads        *int `json:"num_attention_heads"`
		KVHeads      *int `json:"num_key_value_heads"`
		HeadDim      *int `json:"head_dim"`
		Vocab        *int `json:"vocab_size"`
		Tied         bool `json:"tie_word_embeddings"`
		Context      int  `json:"max_position_embeddings"`
	}
	if err := json.Unmarshal(data, &c); err != nil {
		return Arch{}, jsonerr.Describe(data, &c, err)
	}
	a := Arch{Type: typ, Tied: c.Tied, Context: c.Context, AttentionBias: typ == "llama" && head.AttentionBias, MLPBias: typ == "llama" && head.MLPBias}
	var errs []string
	for _, f := range []struct {
		name string
		v    *int
		dst  *int
	}{{"num_hidden_layers", c.Layers, &a.Layers}, {"hidden_size", c.Hidden, &a.Hidden}, {"intermediate_size", c.Intermediate, &a.Intermediate},
		{"num_attention_heads", c.Heads, &a.Heads}, {"vocab_size", c.Vocab, &a.Vocab}} {
		switch {
		case f.v == nil:
			errs = append(errs, fmt.Sprintf("%s: absent or null, want >= 1", f.name))
		case *f.v < 1:
			errs = append(errs, fmt.Sprintf("%s %d: want >= 1", f.name, *f.v))
		default:
			*f.dst = *f.v
		}
	}
	a.KVHeads = map[string]int{"qwen2": 32, "llama": a.Heads, "mistral": 8}[typ]
	if c.KVHeads != nil {
		a.KVHeads = *c.KVHeads
	} else if hasNull(data, "num_key_value_heads") {
		a.KVHeads = a.Heads
	}
	if c.HeadDim != nil {
		a.HeadDim = *c.HeadDim
	} else if a.Heads > 0 {
		a.HeadDim = a.Hidden / a.Heads
	}
	if c.Context < 0 {
		errs = append(errs, fmt.Sprintf("max_position_embeddings %d: want >= 0", c.Context))
	}
	if len(errs) > 0 {
		// One line, as qwen3.ParseConfig's: a note quotes it.
		return Arch{}, errors.New(strings.Join(errs, "; "))
	}
	if err := a.check(); err != nil {
		return Arch{}, err
	}
	if err := a.valid(); err != nil {
		return Arch{}, err
	}
	return a, nil
}

// hasNull reports whether config.json data gives key as null.
func hasNull(data []byte, key string) bool {
	var keys map[string]json.RawMessage
	return json.Unmarshal(data, &keys) == nil && string(keys[key]) == "null"
}

// check reports what ParseConfig's generic architectures need besides
// positive widths: key/value heads and head_dim >= 1, the key/value
// heads dividing the query heads.
func (a Arch) check() error {
	switch {
	case a.KVHeads < 1:
		return fmt.Errorf("num_key_value_heads %d: want >= 1", a.KVHeads)
	case a.Heads%a.KVHeads != 0:
		return fmt.Errorf("num_key_value_heads %d: want a divisor of num_attention_heads %d", a.KVHeads, a.Heads)
	case a.HeadDim < 1:
		return fmt.Errorf("head_dim %d: want >= 1 (absent: hidden_size / num_attention_heads)", a.HeadDim)
	}
	return nil
}

// LoadConfig reads the config.json at path (ParseConfig).
func LoadConfig(path string) (Arch, error) {
	data, err := smallfile.Read(path, smallfile.Limit)
	if err != nil {
		return Arch{}, fmt.Errorf("memplan: %w", err)
	}
	a, err := ParseConfig(data)
	if err != nil {
		return Arch{}, fmt.Errorf("memplan: config %q: %w", path, err)
	}
	return a, nil
}

// Param is one parameter tensor of a model's graph: its name, as
// transformers' state dict and spiral's graphs name it, and its shape
// ([in, out] for a projection, as the graph's MatMul reads it).
type Param struct {
	Name  string
	Shape []int64
}

// size is p's element count.
func (p Param) size() int64 {
	n := int64(1)
	for _, d := range p.Shape {
		n *= d
	}
	return n
}

// biased returns the projections (lmgraph.LoRATargets' names) that carry
// a bias in a's architecture: Qwen2's q, k and v; attention_bias's q,
// k, v and o (Qwen3, Llama); mlp_bias's gate, up and down (Llama).
func (a Arch) biased() []string {
	var b []string
	if a.Type == "qwen2" {
		b = append(b, "q_proj", "k_proj", "v_proj")
	}
	if a.AttentionBias {
		b = append(b, "q_proj", "k_proj", "v_proj", "o_proj")
	}
	if a.MLPBias {
		b = append(b, "gate_proj", "up_proj", "down_proj")
	}
	return b
}

// qkNorm reports whether a's layers norm the queries and keys per head
// (Qwen3's q_norm and k_norm).
func (a Arch) qkNorm() bool { return a.Type == "" || a.Type == "qwen3" }

// layerParams are layer i's parameters, in transformers' module order.
func (a Arch) layerParams(i int) []Param {
	h, d := int64(a.Hidden), int64(a.HeadDim)
	name := func(module, kind string) string { return fmt.Sprintf("model.layers.%d.%s.%s", i, module, kind) }
	biased := a.biased()
	ps := []Param{{name("input_layernorm", "weight"), []int64{h}}}
	proj := func(group string, k int) {
		m := a.layerMatrices()[k]
		target := lmgraph.LoRATargets[k]
		ps = append(ps, Param{name(group+"."+target, "weight"), []int64{m[0], m[1]}})
		if slices.Contains(biased, target) {
			ps = append(ps, Param{name(group+"."+target, "bias"), []int64{m[1]}})
		}
	}
	for k := range 3 {
		proj("self_attn", k)
	}
	if a.qkNorm() {
		ps = append(ps, Param{name("self_attn.q_norm", "weight"), []int64{d}}, Param{name("self_attn.k_norm", "weight"), []int64{d}})
	}
	proj("self_attn", 3)
	ps = append(ps, Param{name("post_attention_layernorm", "weight"), []int64{h}})
	for k := 4; k < 7; k++ {
		proj("mlp", k)
	}
	return ps
}

// Parameters lists a's parameter tensors, as transformers names them in
// its state dict and spiral's graphs (qwen3.Params) their initializers:
// the embedding, each layer's (the projections, their biases where the
// architecture has them, the norms), the final norm and, untied,
// lm_head.weight (a tied head is the embedding).
func (a Arch) Parameters() []Param {
	ps := []Param{{qwen3.EmbedWeight, []int64{int64(a.Vocab), int64(a.Hidden)}}}
	for i := range a.Layers {
		ps = append(ps, a.layerParams(i)...)
	}
	ps = append(ps, Param{qwen3.NormWeight, []int64{int64(a.Hidden)}})
	if !a.Tied {
		ps = append(ps, Param{qwen3.LMHeadWeight, []int64{int64(a.Hidden), int64(a.Vocab)}})
	}
	return ps
}
