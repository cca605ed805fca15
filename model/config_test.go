package model_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/spiral-rl/spiral/model"
)

// TestTrainedConfig: the config.json of trained weights is the source's
// without _name_or_path, its other fields in their order; one without it
// is kept byte for byte; one that does not parse is an error.
func TestTrainedConfig(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"_name_or_path": "Qwen/Qwen3-0.6B", "vocab_size": 151936, "rope_scaling": null, "layer_types": ["full_attention"]}`,
			"{\n  \"vocab_size\": 151936,\n  \"rope_scaling\": null,\n  \"layer_types\": [\n    \"full_attention\"\n  ]\n}\n"},
		{`{"z": 1.50, "_name_or_path": "", "a": {"b": "_name_or_path"}}`, "{\n  \"z\": 1.50,\n  \"a\": {\n    \"b\": \"_name_or_path\"\n  }\n}\n"},
		{`{"_name_or_path": "x"}`, "{}\n"},
		{`{"vocab_size": 49,   "tie_word_embeddings": true}`, `{"vocab_size": 49,   "tie_word_embeddings": true}`},
	} {
		got, err := model.TrainedConfig([]byte(tc.in))
		require.NoError(t, err, tc.in)
		require.Equal(t, tc.want, string(got), tc.in)
	}
	_, err := model.TrainedConfig([]byte(`[1]`))
	require.ErrorContains(t, err, "model: config.json: json: cannot unmarshal array")
}

// TestReadGenerationEOS: generation_config.json's eos_token_id beside a
// model is read as one id or a list of them (Qwen3's [151645, 151643]);
// a model without the file, the field or with null has none; anything
// else is an error naming the file.
func TestReadGenerationEOS(t *testing.T) {
	for _, tc := range []struct {
		name, body string // body "" writes no file
		want       []int32
		err        string
	}{
		{name: "no file"},
		{name: "no field", body: `{"top_p": 0.8}`},
		{name: "null", body: `{"eos_token_id": null}`},
		{name: "one id", body: `{"eos_token_id": 151645}`, want: []int32{151645}},
		{name: "a list", body: `{"bos_token_id": 151643, "eos_token_id": [151645, 151643], "top_k": 20}`, want: []int32{151645, 151643}},
		{name: "an empty list", body: `{"eos_token_id": []}`, want: []int32{}},
		{name: "a string", body: `{"eos_token_id": "<|im_end|>"}`, err: "eos_token_id: want a token id or a list of token ids"},
		{name: "a negative id", body: `{"eos_token_id": [2, -1]}`, err: "eos_token_id: -1 is not a token id"},
		{name: "past int32", body: `{"eos_token_id": 4294967296}`, err: "eos_token_id: 4294967296 is not a token id"},
		{name: "a fraction", body: `{"eos_token_id": 2.5}`, err: "eos_token_id: want a token id or a list of token ids"},
		{name: "malformed", body: `{"eos_token_id": [1,`, err: "generation_config.json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			gc := filepath.Join(dir, "generation_config.json")
			if tc.body != "" {
				require.NoError(t, os.WriteFile(gc, []byte(tc.body), 0o644))
			}
			ids, err := model.ReadGenerationEOS(filepath.Join(dir, "model.onnx"))
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				require.ErrorContains(t, err, gc)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, ids)
		})
	}
}
