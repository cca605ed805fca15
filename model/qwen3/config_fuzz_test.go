package qwen3

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzParseConfig feeds arbitrary config.json files to ParseConfig: a
// config it accepts passes Validate, renders with HFConfigJSON and reads
// back the same (an unspecified max_position_embeddings as the default
// HFConfigJSON writes).
func FuzzParseConfig(f *testing.F) {
	for _, p := range []string{"testdata/qwen3-4b-config.json", "../testdata/hfqwen3/config.json",
		"../testdata/optimumqwen3/config.json", "../testdata/dynamoqwen3/config.json"} {
		b, err := os.ReadFile(filepath.FromSlash(p))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	tiny, err := Tiny().HFConfigJSON()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(tiny)
	f.Add([]byte(`{"num_hidden_layers":1,"hidden_size":8,"num_attention_heads":2,"intermediate_size":8,"vocab_size":4}`))
	f.Add([]byte(`{"model_type":"llama","num_hidden_layers":1}`))
	f.Add([]byte(`{"num_hidden_layers":1,"hidden_size":8,"num_attention_heads":2,"head_dim":2,"intermediate_size":8,"vocab_size":4,"rope_theta":1e300}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := ParseConfig(data)
		if err != nil {
			return
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("ParseConfig accepted %s as %+v, which Validate refuses: %v", data, c, err)
		}
		out, err := c.HFConfigJSON()
		if err != nil {
			t.Fatalf("HFConfigJSON(%+v): %v", c, err)
		}
		back, err := ParseConfig(out)
		if err != nil {
			t.Fatalf("ParseConfig(HFConfigJSON(%+v)): %v\n%s", c, err, out)
		}
		if c.MaxPositions == 0 {
			c.MaxPositions = 32768
		}
		if back != c {
			t.Fatalf("round trip: %+v\nread back as %+v\n%s", c, back, out)
		}
	})
}
