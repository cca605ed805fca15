package memplan_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/spiral-rl/spiral/model/lmgraph"
	"github.com/spiral-rl/spiral/model/memplan"
	"github.com/spiral-rl/spiral/model/qwen3"
)

// TestParseConfigParams: plan reads the parameter set from config.json's
// architecture, where it knew Qwen3's only (a Qwen2, Llama or Mistral
// config was refused: model_type "llama", want "qwen3"). The counts are
// computed by hand from the releases' config.json fields below and are
// the parameter counts of their safetensors (the models' cards):
//   - Qwen2.5-0.5B, tied: embedding 151,936 x 896 = 136,134,656; a layer
//     q 896 x 896 + k, v 896 x 128 each + o 896 x 896 = 1,835,008, the q,
//     k, v biases 896 + 128 + 128 = 1,152, MLP 3 x 896 x 4,864 =
//     13,074,432, norms 1,792: 14,912,384, x 24 = 357,897,216; final norm
//     896: 494,032,768.
//   - Llama-2-7B, untied, 32 KV heads: embedding and head 2 x 32,000 x
//     4,096 = 262,144,000; a layer 4 x 4,096^2 + 3 x 4,096 x 11,008 +
//     8,192 = 202,383,360, x 32; final norm 4,096: 6,738,415,616.
//   - Llama-3.2-1B, tied, 8 KV heads of 64: embedding 128,256 x 2,048 =
//     262,668,288; a layer 2 x 2,048^2 + 2 x 2,048 x 512 + 3 x 2,048 x
//     8,192 + 4,096 = 60,821,504, x 16; final norm 2,048: 1,235,814,400.
//   - Mistral-7B-v0.1, untied, 8 KV heads: 262,144,000 + 32 x (2 x
//     4,096^2 + 2 x 4,096 x 1,024 + 3 x 4,096 x 14,336 + 8,192) + 4,096
//     = 7,241,732,096.
//   - Qwen3-0.6B, tied, q/k norms: 596,049,920 (memplan.Named's).
func TestParseConfigParams(t *testing.T) {
	for _, c := range []struct {
		name, config string
		params       int64
		layer0       []string // layer 0's parameters past its name's prefix
	}{
		{"Qwen2.5-0.5B", `{"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": 896, "intermediate_size": 4864,
			"num_attention_heads": 14, "num_hidden_layers": 24, "num_key_value_heads": 2, "vocab_size": 151936, "tie_word_embeddings": true,
			"max_position_embeddings": 32768}`, 494_032_768,
			[]string{"input_layernorm.weight", "self_attn.q_proj.weight", "self_attn.q_proj.bias", "self_attn.k_proj.weight", "self_attn.k_proj.bias",
				"self_attn.v_proj.weight", "self_attn.v_proj.bias", "self_attn.o_proj.weight", "post_attention_layernorm.weight",
				"mlp.gate_proj.weight", "mlp.up_proj.weight", "mlp.down_proj.weight"}},
		{"Llama-2-7B", `{"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096, "intermediate_size": 11008,
			"num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 32, "vocab_size": 32000, "tie_word_embeddings": false,
			"attention_bias": false, "max_position_embeddings": 4096}`, 6_738_415_616,
			[]string{"input_layernorm.weight", "self_attn.q_proj.weight", "self_attn.k_proj.weight", "self_attn.v_proj.weight",
				"self_attn.o_proj.weight", "post_attention_layernorm.weight", "mlp.gate_proj.weight", "mlp.up_proj.weight", "mlp.down_proj.weight"}},
		{"Llama-3.2-1B", `{"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 2048, "intermediate_size": 8192,
			"num_attention_heads": 32, "num_hidden_layers": 16, "num_key_value_heads": 8, "head_dim": 64, "vocab_size": 128256,
			"tie_word_embeddings": true, "attention_bias": false, "mlp_bias": false, "max_position_embeddings": 131072}`, 1_235_814_400, nil},
		{"Mistral-7B-v0.1", `{"architectures": ["MistralForCausalLM"], "model_type": "mistral", "hidden_size": 4096, "intermediate_size": 14336,
			"num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 8, "vocab_size": 32000, "tie_word_embeddings": false,
			"sliding_window": 4096, "max_position_embeddings": 32768}`, 7_241_732_096,
			[]string{"input_layernorm.weight", "self_attn.q_proj.weight", "self_attn.k_proj.weight", "self_attn.v_proj.weight",
				"self_attn.o_proj.weight", "post_attention_layernorm.weight", "mlp.gate_proj.weight", "mlp.up_proj.weight", "mlp.down_proj.weight"}},
		{"Qwen3-0.6B", `{"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "hidden_size": 1024, "intermediate_size": 3072,
			"num_attention_heads": 16, "num_hidden_layers": 28, "num_key_value_heads": 8, "head_dim": 128, "vocab_size": 151936,
			"tie_word_embeddings": true, "attention_bias": false, "max_position_embeddings": 40960}`, 596_049_920,
			[]string{"input_layernorm.weight", "self_attn.q_proj.weight", "self_attn.k_proj.weight", "self_attn.v_proj.weight",
				"self_attn.q_norm.weight", "self_attn.k_norm.weight", "self_attn.o_proj.weight", "post_attention_layernorm.weight",
				"mlp.gate_proj.weight", "mlp.up_proj.weight", "mlp.down_proj.weight"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			a, err := memplan.ParseConfig([]byte(c.config))
			require.NoError(t, err)
			require.Equal(t, c.params, a.Params())
			if c.layer0 == nil {
				return
			}
			var layer0 []string
			for _, p := range a.Parameters() {
				if rest, ok := strings.CutPrefix(p.Name, "model.layers.0."); ok {
					layer0 = append(layer0, rest)
				}
			}
			require.Equal(t, c.layer0, layer0)
		})
	}
}

// TestParseConfigDefaults: the fields a config.json may leave out take
// the defaults of transformers' config classes, per architecture; the
// counts are by hand on 2 layers of hidden 8, MLP 16, 2 query heads, a
// vocabulary of 10. A layer's projections are q 8 x 8, k and v 8 x kv,
// o 8 x 8, the MLP 3 x 8 x 16 = 384, its norms 16.
func TestParseConfigDefaults(t *testing.T) {
	const shape = `"num_hidden_layers": 2, "hidden_size": 8, "intermediate_size": 16, "num_attention_heads": 2, "vocab_size": 10`
	// layer returns a layer's parameters with key/value width kv (heads
	// x head_dim) and extra ones (biases, norms); embedding 80, final
	// norm 8, untied head 80.
	model := func(kv, extra int64) int64 { return 80 + 8 + 80 + 2*(64+2*8*kv+64+384+16+extra) }
	for _, c := range []struct {
		name, config string
		kvHeads      int
		params       int64
	}{
		// Llama: num_key_value_heads defaults to the query heads, head_dim
		// to hidden / heads = 4; no bias.
		{"llama", `{"model_type": "llama", ` + shape + `}`, 2, model(8, 0)},
		// mlp_bias: gate, up (16 each) and down (8); attention_bias: q, k,
		// v, o (8 each).
		{"llama, mlp_bias", `{"model_type": "llama", "mlp_bias": true, ` + shape + `}`, 2, model(8, 40)},
		{"llama, attention_bias", `{"model_type": "llama", "attention_bias": true, ` + shape + `}`, 2, model(8, 32)},
		// Mistral: 8 KV heads by default (a divisor of 2 heads it is
		// not); given 1: k and v 8 x 4; attention_bias is not Mistral's.
		{"mistral", `{"model_type": "mistral", "num_key_value_heads": 1, "attention_bias": true, ` + shape + `}`, 1, model(4, 0)},
		// Qwen2: q, k, v biases (8 + 4 + 4) with one KV head.
		{"qwen2", `{"model_type": "qwen2", "num_key_value_heads": 1, ` + shape + `}`, 1, model(4, 16)},
		// null num_key_value_heads: the query heads.
		{"qwen2, null KV heads", `{"model_type": "qwen2", "num_key_value_heads": null, ` + shape + `}`, 2, model(8, 24)},
		// Read from architectures without a model_type.
		{"architectures only", `{"architectures": ["MistralForCausalLM"], "num_key_value_heads": 2, ` + shape + `}`, 2, model(8, 0)},
		{"tied", `{"model_type": "llama", "tie_word_embeddings": true, ` + shape + `}`, 2, model(8, 0) - 80},
	} {
		t.Run(c.name, func(t *testing.T) {
			a, err := memplan.ParseConfig([]byte(c.config))
			require.NoError(t, err)
			require.Equal(t, c.kvHeads, a.KVHeads)
			require.Equal(t, 4, a.HeadDim)
			require.Equal(t, c.params, a.Params())
		})
	}
	for _, c := range []struct{ name, config, want string }{
		{"mistral's 8 KV heads over 2 heads", `{"model_type": "mistral", ` + shape + `}`, "num_key_value_heads 8: want a divisor of num_attention_heads 2"},
		{"unknown model_type", `{"model_type": "gemma", ` + shape + `}`,
			`model_type "gemma": want one of qwen3 (Qwen3ForCausalLM), qwen2 (Qwen2ForCausalLM), llama (LlamaForCausalLM), mistral (MistralForCausalLM)`},
		{"unknown architecture", `{"architectures": ["GPT2LMHeadModel"], ` + shape + `}`, `architectures "GPT2LMHeadModel": want one of qwen3`},
		{"missing widths", `{"model_type": "llama", "hidden_size": 64}`,
			"num_hidden_layers: absent or null, want >= 1; intermediate_size: absent or null, want >= 1; num_attention_heads: absent or null, want >= 1; vocab_size: absent or null, want >= 1"},
		{"qwen3 as qwen3.ParseConfig reads it", `{"model_type": "qwen3", ` + shape + `, "head_dim": 3}`, "head_dim 3: want an even number >= 2"},
		// The JSON's types, not Go's ("Go value of type struct {
		// ModelType string ...", "Go struct field Config.num_hidden_layers").
		{"an array", `[]`, "an object expected, got an array"},
		{"a llama width of another type", `{"model_type": "llama", "num_hidden_layers": "2"}`, "num_hidden_layers: an integer expected, got a string"},
		{"a qwen3 width of another type", `{"model_type": "qwen3", "num_hidden_layers": "2"}`, "num_hidden_layers: an integer expected, got a string"},
		{"a qwen3 rope_theta of another type", `{"model_type": "qwen3", "rope_parameters": {"rope_theta": "1e6"}}`, "rope_parameters.rope_theta: a number expected, got a string"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := memplan.ParseConfig([]byte(c.config))
			require.ErrorContains(t, err, c.want)
		})
	}
}

// TestQwen3ParametersAreTheGraphs: a Qwen3 config's parameters are the
// initializers spiral's Qwen3 graphs hold (qwen3.Params), by name and
// size, which --train and --freeze select among; with attention_bias
// the four attention projections' biases follow their weights.
func TestQwen3ParametersAreTheGraphs(t *testing.T) {
	for _, tied := range []bool{true, false} {
		c := qwen3.Tiny()
		c.TiedEmbeddings = tied
		want := map[string]int64{}
		for _, p := range qwen3.Params(c) {
			want[p.Name] = product(p.Shape)
		}
		got := map[string]int64{}
		for _, p := range memplan.FromQwen3(c).Parameters() {
			got[p.Name] = product(p.Shape)
		}
		require.Equal(t, want, got, "tied %v", tied)
	}
	a, err := memplan.ParseConfig([]byte(`{"model_type": "qwen3", "attention_bias": true, "num_hidden_layers": 1, "hidden_size": 8,
		"intermediate_size": 16, "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 4, "vocab_size": 10}`))
	require.NoError(t, err)
	tr, err := a.Trained(lmgraph.Selection{Train: regexp.MustCompile(`bias`)})
	require.NoError(t, err)
	require.Equal(t, int64(8+4+4+8), tr.Params, fmt.Sprint("q, k, v, o biases of ", a))
}

func product(shape []int64) int64 {
	n := int64(1)
	for _, d := range shape {
		n *= d
	}
	return n
}

// TestParamsSumParameters: Params, computed per layer, is the sum of
// Parameters' sizes for every architecture.
func TestParamsSumParameters(t *testing.T) {
	for _, a := range []memplan.Arch{
		{Type: "qwen3", Layers: 3, Hidden: 8, Intermediate: 16, Heads: 2, KVHeads: 1, HeadDim: 4, Vocab: 10, AttentionBias: true},
		{Type: "qwen2", Layers: 3, Hidden: 8, Intermediate: 16, Heads: 2, KVHeads: 1, HeadDim: 4, Vocab: 10, Tied: true},
		{Type: "llama", Layers: 3, Hidden: 8, Intermediate: 16, Heads: 2, KVHeads: 2, HeadDim: 4, Vocab: 10, AttentionBias: true, MLPBias: true},
		{Type: "mistral", Layers: 3, Hidden: 8, Intermediate: 16, Heads: 2, KVHeads: 1, HeadDim: 4, Vocab: 10},
	} {
		var n int64
		for _, p := range a.Parameters() {
			n += product(p.Shape)
		}
		require.Equal(t, n, a.Params(), "%+v", a)
	}
}

// TestParseConfigPastAnyModel: a config.json whose weights alone would
// pass memplan.MaxBytes, or of more layers than memplan.MaxLayers, is
// refused where it is read. Hidden and vocabulary 2^32 overflowed int64:
// the embedding's 2^64 parameters counted 0, plan printed "708.67B
// parameters" and an untied head's gradient of 0.00 GiB; 2^30 layers
// listed 11 x 2^30 parameter names for --train to match, past the
// machine's memory.
func TestParseConfigPastAnyModel(t *testing.T) {
	for _, c := range []struct{ name, config, want string }{
		{"widths", `{"model_type": "llama", "num_hidden_layers": 2, "hidden_size": 4294967296, "intermediate_size": 16, "num_attention_heads": 1,
			"num_key_value_heads": 1, "head_dim": 8, "vocab_size": 4294967296}`,
			`memplan: config "PATH": 2 layers of hidden 4294967296, MLP 16, 1 heads of 8 (1 KV), vocab 4294967296: the weights alone would take over 64 PiB`},
		{"layers", `{"model_type": "mistral", "num_hidden_layers": 1073741824, "hidden_size": 8, "intermediate_size": 16, "num_attention_heads": 2,
			"num_key_value_heads": 1, "vocab_size": 10}`, "num_hidden_layers 1073741824: want at most 65536"},
		{"qwen3 widths", `{"model_type": "qwen3", "num_hidden_layers": 2, "hidden_size": 4294967296, "intermediate_size": 16, "num_attention_heads": 1,
			"num_key_value_heads": 1, "head_dim": 8, "vocab_size": 4294967296}`, "the weights alone would take over 64 PiB"},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "config.json")
			require.NoError(t, os.WriteFile(path, []byte(c.config), 0o666))
			_, err := memplan.LoadConfig(path)
			require.ErrorContains(t, err, strings.ReplaceAll(c.want, "PATH", path))
		})
	}
	// The largest real shapes pass.
	a, ok := memplan.Named("qwen3-8b")
	require.True(t, ok)
	require.NoError(t, a.Validate())
}
