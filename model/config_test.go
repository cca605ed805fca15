package model_test

import (
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
