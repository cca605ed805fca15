package memplan_test

import (
	"os"
	"testing"

	"github.com/spiral-rl/spiral/model/memplan"
)

// FuzzParseConfig feeds arbitrary config.json files to ParseConfig: a
// config it accepts passes Validate, and its parameters count without
// overflow: positive, and the untied head's and embedding's within them.
func FuzzParseConfig(f *testing.F) {
	for _, p := range []string{"../testdata/hfqwen2/config.json", "../testdata/hfqwen3/config.json", "../embedded/assets/config.json"} {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"model_type":"llama","num_hidden_layers":2,"hidden_size":8,"intermediate_size":16,"num_attention_heads":2,"vocab_size":10,"mlp_bias":true}`))
	f.Add([]byte(`{"architectures":["MistralForCausalLM"],"num_hidden_layers":2,"hidden_size":8,"intermediate_size":16,"num_attention_heads":8,"vocab_size":10}`))
	f.Add([]byte(`{"model_type":"qwen2","num_hidden_layers":2,"hidden_size":4294967296,"intermediate_size":16,"num_attention_heads":1,"num_key_value_heads":null,"vocab_size":4294967296}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		a, err := memplan.ParseConfig(data)
		if err != nil {
			return
		}
		if err := a.Validate(); err != nil {
			t.Fatalf("ParseConfig accepted %s as %+v, which Validate refuses: %v", data, a, err)
		}
		emb := int64(a.Vocab) * int64(a.Hidden)
		if n := a.Params(); n <= 0 || n < emb || 4*n > memplan.MaxBytes {
			t.Fatalf("%+v: %d parameters (embedding %d)", a, n, emb)
		}
	})
}
