package qwen3

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLoadHFConfig reads a config.json in Hugging Face's format with
// Qwen3-4B's architecture (testdata/qwen3-4b-config.json, typed after the
// config.json of Qwen/Qwen3-4B on the Hugging Face Hub, not downloaded;
// unknown keys such as bos_token_id are ignored). head_dim 128 is not
// hidden/heads = 80.
func TestLoadHFConfig(t *testing.T) {
	c, err := LoadConfig(filepath.Join("testdata", "qwen3-4b-config.json"))
	if err != nil {
		t.Fatal(err)
	}
	want := Config{Layers: 36, Hidden: 2560, Heads: 32, KVHeads: 8, HeadDim: 128, Intermediate: 9728,
		Vocab: 151936, RopeTheta: 1e6, RMSEps: 1e-6, TiedEmbeddings: true, MaxPositions: 40960}
	if c != want {
		t.Errorf("LoadConfig = %+v\nwant %+v", c, want)
	}
}

// TestParseConfigRopeParameters reads rope_theta from rope_parameters,
// where transformers 5 writes it (save_pretrained leaves no top-level
// rope_theta): Qwen3-4B's 1e6 there was read as the default 10000.
func TestParseConfigRopeParameters(t *testing.T) {
	shape := `"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16, "intermediate_size": 128, "vocab_size": 100`
	for _, tc := range []struct {
		name, json string
		want       float64
	}{
		{"transformers 5", `{` + shape + `, "rope_parameters": {"rope_theta": 1000000.0, "rope_type": "default"}}`, 1e6},
		{"transformers 4", `{` + shape + `, "rope_theta": 5000000, "rope_scaling": null}`, 5e6},
		{"top level first", `{` + shape + `, "rope_theta": 5000000, "rope_parameters": {"rope_theta": 1000000.0}}`, 5e6},
		{"neither", `{` + shape + `, "rope_parameters": null}`, 10000},
	} {
		c, err := ParseConfig([]byte(tc.json))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if c.RopeTheta != tc.want {
			t.Errorf("%s: rope_theta %g, want %g", tc.name, c.RopeTheta, tc.want)
		}
	}
}

func TestParseConfigDefaults(t *testing.T) {
	c, err := ParseConfig([]byte(`{"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
		"intermediate_size": 128, "vocab_size": 100, "head_dim": null, "num_key_value_heads": null}`))
	if err != nil {
		t.Fatal(err)
	}
	if c.HeadDim != 16 || c.KVHeads != 4 || c.RopeTheta != 10000 || c.RMSEps != 1e-6 || c.TiedEmbeddings {
		t.Errorf("defaults: %+v", c)
	}
}

// TestParseConfigAbsentHeads: an absent head_dim or num_key_value_heads
// takes Qwen3Config's class defaults, 128 and 32, as transformers reads
// such a config.json (AutoConfig, transformers 5.25: head_dim 128 and 32
// KV heads for hidden 1024 over 16 heads), not hidden/heads and the query
// heads, which are what a null num_key_value_heads gives (and spiral
// gives a null head_dim, which transformers refuses).
func TestParseConfigAbsentHeads(t *testing.T) {
	const shape = `"num_hidden_layers": 2, "hidden_size": 1024, "intermediate_size": 128, "vocab_size": 100, "num_attention_heads": `
	for _, tc := range []struct {
		name, json      string
		headDim, kvHead int
	}{
		{"both absent", `{` + shape + `32}`, 128, 32},
		{"head_dim absent", `{` + shape + `16, "num_key_value_heads": 8}`, 128, 8},
		{"num_key_value_heads absent", `{` + shape + `64, "head_dim": 64}`, 64, 32},
		{"both null", `{` + shape + `16, "head_dim": null, "num_key_value_heads": null}`, 64, 16},
	} {
		c, err := ParseConfig([]byte(tc.json))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if c.HeadDim != tc.headDim || c.KVHeads != tc.kvHead {
			t.Errorf("%s: head_dim %d, num_key_value_heads %d; want %d, %d", tc.name, c.HeadDim, c.KVHeads, tc.headDim, tc.kvHead)
		}
	}
	// 32 KV heads do not divide 16 query heads, as transformers would
	// build them: refused.
	_, err := ParseConfig([]byte(`{` + shape + `16, "head_dim": 64}`))
	if want := "num_key_value_heads 32: want a divisor of num_attention_heads 16"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("error %v, want %q", err, want)
	}
}

func TestConfigErrors(t *testing.T) {
	tests := []struct {
		name string
		json string
		want string
	}{
		{"malformed", `{"hidden_size": `, "qwen3: config: line 1, column 17: unexpected end of JSON input"},
		{"wrong type", `{"hidden_size": "big"}`, "hidden_size"},
		{"other model", `{"model_type": "llama"}`, `model_type "llama"`},
		{"kv heads", `{"num_hidden_layers": 1, "hidden_size": 8, "num_attention_heads": 4, "num_key_value_heads": 3, "intermediate_size": 8, "vocab_size": 8}`,
			"num_key_value_heads 3: want a divisor of num_attention_heads 4"},
		{"odd head dim", `{"num_hidden_layers": 1, "hidden_size": 8, "num_attention_heads": 2, "head_dim": 3, "intermediate_size": 8, "vocab_size": 8}`,
			"head_dim 3: want an even number >= 2"},
		{"everything missing", `{}`, "num_hidden_layers 0: want >= 1; hidden_size 0: want >= 1"},
	}
	for _, tc := range tests {
		_, err := ParseConfig([]byte(tc.json))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want it to contain %q", tc.name, err, tc.want)
		}
	}
	bad := Tiny()
	bad.RMSEps = 0
	bad.RopeTheta = -1
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "rope_theta -1: want > 0; rms_norm_eps 0: want > 0") {
		t.Errorf("Validate: %v", err)
	}
	// +Inf is > 0, but no config.json can hold it (init-model's
	// --rope-theta Inf failed to write one).
	bad = Tiny()
	bad.RopeTheta = math.Inf(1)
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "rope_theta +Inf: want a finite value") {
		t.Errorf("Validate: %v", err)
	}
	// A tiny theta is > 0, but its inverse frequencies overflow float32:
	// init-model's --rope-theta 1e-300 wrote a model whose logits were
	// NaN. With head_dim d, theta^(-(d-2)/d) <= MaxFloat32 from theta =
	// MaxFloat32^(-d/(d-2)) on.
	d := float64(Tiny().HeadDim)
	least := math.Pow(math.MaxFloat32, -d/(d-2))
	for _, theta := range []float64{1e-300, least * 0.99} {
		bad = Tiny()
		bad.RopeTheta = theta
		if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "inverse frequencies pass float32's range: want at least") {
			t.Errorf("Validate rope_theta %g: %v", theta, err)
		}
	}
	for _, theta := range []float64{least * 1.01, 0.5, 1e6} {
		ok := Tiny()
		ok.RopeTheta = theta
		if err := ok.Validate(); err != nil {
			t.Errorf("Validate rope_theta %g: %v", theta, err)
		}
		inv := InvFreq(ok)
		for i, f := range inv {
			if math.IsInf(float64(f), 0) || math.IsNaN(float64(f)) {
				t.Errorf("rope_theta %g: inv_freq[%d] = %v", theta, i, f)
			}
		}
	}
	dir := t.TempDir()
	p := filepath.Join(dir, "config.json")
	os.WriteFile(p, []byte(`{"model_type": "qwen3"}`), 0o644)
	if _, err := LoadConfig(p); err == nil || !strings.Contains(err.Error(), p) {
		t.Errorf("LoadConfig error %v does not name the file", err)
	}
}

func TestHFConfigJSONRoundTrip(t *testing.T) {
	for _, c := range []Config{Tiny(), {Layers: 1, Hidden: 8, Heads: 2, KVHeads: 1, HeadDim: 6, Intermediate: 8, Vocab: 9, RopeTheta: 5, RMSEps: 1e-5, MaxPositions: 7}} {
		data, err := c.HFConfigJSON()
		if err != nil {
			t.Fatal(err)
		}
		got, err := ParseConfig(data)
		if err != nil {
			t.Fatal(err)
		}
		if got != c {
			t.Errorf("round trip: %+v, want %+v\n%s", got, c, data)
		}
		for _, key := range []string{`"model_type": "qwen3"`, `"Qwen3ForCausalLM"`, `"hidden_act": "silu"`, `"head_dim": `} {
			if !strings.Contains(string(data), key) {
				t.Errorf("config.json lacks %s", key)
			}
		}
	}
}

// TestParseConfigExplicitZero: a field given as 0 is refused naming it,
// not taken for absent (rope_theta 0 was read as 10000, rms_norm_eps 0
// as 1e-6); LoadConfig names the file.
func TestParseConfigExplicitZero(t *testing.T) {
	shape := `"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4, "head_dim": 16, "intermediate_size": 128, "vocab_size": 100`
	for _, tc := range []struct{ field, want string }{
		{`"rope_theta": 0, "num_key_value_heads": 2`, "rope_theta 0: want > 0"},
		{`"rope_theta": 0.0, "rope_parameters": {"rope_theta": 1000000.0}, "num_key_value_heads": 2`, "rope_theta 0: want > 0"},
		{`"rope_parameters": {"rope_theta": 0}, "num_key_value_heads": 2`, "rope_theta 0: want > 0"},
		{`"rms_norm_eps": 0, "num_key_value_heads": 2`, "rms_norm_eps 0: want > 0"},
		{`"num_key_value_heads": 0`, "num_key_value_heads 0: want >= 1"},
	} {
		_, err := ParseConfig([]byte(`{` + shape + `, ` + tc.field + `}`))
		if err == nil || err.Error() != "qwen3: config: "+tc.want {
			t.Errorf("%s: error %v, want %q", tc.field, err, "qwen3: config: "+tc.want)
		}
		path := filepath.Join(t.TempDir(), "config.json")
		if err := os.WriteFile(path, []byte(`{`+shape+`, `+tc.field+`}`), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := LoadConfig(path); err == nil || err.Error() != fmt.Sprintf("qwen3: config %q: %s", path, tc.want) {
			t.Errorf("%s: LoadConfig error %v", tc.field, err)
		}
	}
	// null is absent: the defaults.
	c, err := ParseConfig([]byte(`{` + shape + `, "rope_theta": null, "rms_norm_eps": null, "rope_parameters": {"rope_theta": null}, "num_key_value_heads": 2}`))
	if err != nil {
		t.Fatal(err)
	}
	if c.RopeTheta != 10000 || c.RMSEps != 1e-6 {
		t.Errorf("nulls: rope_theta %g, rms_norm_eps %g, want 10000 and 1e-6", c.RopeTheta, c.RMSEps)
	}
}
