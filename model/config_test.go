package model_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/spiral-rl/spiral/model"
	"github.com/spiral-rl/spiral/model/tokenizer"
)

// TestTrainedConfig: the config.json of trained weights is the source's
// without _name_or_path, its other fields in their order; one without it
// is kept byte for byte; one that does not parse is an error in the
// file's terms, as ReadHFConfig's (jsonerr): encoding/json's Go types
// ("into Go value of type map[string]json.RawMessage") and byte offsets
// were shown.
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
	for _, tc := range []struct{ in, want string }{
		{`[1]`, "model: config.json: an object expected, got an array"},
		{`"Qwen/Qwen3-0.6B"`, "model: config.json: an object expected, got a string"},
		{"{\n  \"vocab_size\": 49", "model: config.json: line 2, column 19: unexpected end of JSON input"},
	} {
		_, err := model.TrainedConfig([]byte(tc.in))
		require.EqualError(t, err, tc.want, tc.in)
	}
}

// thinkTokenizer is spiral's byte-level tokenizer (bytes 0 to 255,
// <|endoftext|> 256, <|im_start|> 257, <|im_end|> 258, special) with
// <think> as an added token that is not special (259), as Qwen3's
// tokenizer.json has it: 260 ids.
func thinkTokenizer(t *testing.T) *tokenizer.Tokenizer {
	t.Helper()
	b, err := tokenizer.BuildByteTokenizerJSON()
	require.NoError(t, err)
	var f map[string]any
	require.NoError(t, json.Unmarshal(b, &f))
	f["added_tokens"] = append(f["added_tokens"].([]any), map[string]any{"id": 259, "content": "<think>",
		"single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": false})
	b, err = json.Marshal(f)
	require.NoError(t, err)
	tok, err := tokenizer.FromBytes(b)
	require.NoError(t, err)
	t.Cleanup(func() { tok.Close() })
	require.Equal(t, 260, tok.VocabSize())
	return tok
}

// TestReadGenerationEOS: generation_config.json's eos_token_id beside a
// model is read as one id or a list of them (Qwen3's [151645, 151643]:
// <|im_end|> and <|endoftext|>); a model without the file, the field or
// with null has none; anything else is an error naming the file, an id
// past the tokenizer's ids (the file of a model with a larger
// vocabulary) too, naming the id and the tokenizer's ids. An id that is
// not a special token of the tokenizer (another model's eos, which is an
// ordinary text token here, or Qwen3's <think>) is warned of, naming the
// file, the id and its text.
func TestReadGenerationEOS(t *testing.T) {
	tok := thinkTokenizer(t)
	for _, tc := range []struct {
		name, body string // body "" writes no file
		want       []int32
		warn       []string // the warning contains each; none where empty
		err        string
	}{
		{name: "no file"},
		{name: "no field", body: `{"top_p": 0.8}`},
		{name: "null", body: `{"eos_token_id": null}`},
		{name: "one id", body: `{"eos_token_id": 258}`, want: []int32{258}},
		{name: "a list", body: `{"bos_token_id": 256, "eos_token_id": [258, 256], "top_k": 20}`, want: []int32{258, 256}},
		{name: "an empty list", body: `{"eos_token_id": []}`, want: []int32{}},
		{name: "a string", body: `{"eos_token_id": "<|im_end|>"}`, err: "eos_token_id: want a token id or a list of token ids"},
		{name: "a negative id", body: `{"eos_token_id": [2, -1]}`, err: "eos_token_id: -1 is not a token id"},
		{name: "past int32", body: `{"eos_token_id": 4294967296}`, err: "eos_token_id: 4294967296 is not a token id"},
		{name: "a fraction", body: `{"eos_token_id": 2.5}`, err: "eos_token_id: want a token id or a list of token ids"},
		{name: "malformed", body: `{"eos_token_id": [1,`, err: "generation_config.json"},
		{name: "Qwen3's", body: `{"eos_token_id": [151645, 151643]}`, err: "eos_token_id: 151645 is past the tokenizer's 260 ids"},
		{name: "just past the tokenizer", body: `{"eos_token_id": [258, 260]}`, err: "eos_token_id: 260 is past the tokenizer's 260 ids"},
		{name: "a text token", body: `{"eos_token_id": [258, 97]}`, want: []int32{258, 97},
			warn: []string{`eos_token_id 97 is not a special token of the tokenizer (it decodes to "a")`}},
		{name: "a plain added token", body: `{"eos_token_id": 259}`, want: []int32{259},
			warn: []string{`eos_token_id 259 is not a special token of the tokenizer (it decodes to "<think>")`}},
		{name: "two", body: `{"eos_token_id": [97, 258, 98]}`, want: []int32{97, 258, 98},
			warn: []string{`eos_token_id 97 is not`, `"a"`, `eos_token_id 98 is not`, `"b"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			gc := filepath.Join(dir, "generation_config.json")
			if tc.body != "" {
				require.NoError(t, os.WriteFile(gc, []byte(tc.body), 0o644))
			}
			ids, warning, err := model.ReadGenerationEOS(filepath.Join(dir, "model.onnx"), tok)
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				require.ErrorContains(t, err, gc)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, ids)
			if len(tc.warn) == 0 {
				require.Empty(t, warning)
				return
			}
			require.Contains(t, warning, gc)
			for _, w := range tc.warn {
				require.Contains(t, warning, w)
			}
		})
	}
}

// TestReadHFConfigTextConfig: a multimodal model's config.json (Qwen3-VL's,
// Gemma 3's, Llava's) holds its text model's fields under text_config,
// which transformers' get_text_config reads in the top level's place: the
// fields it states are read from it, those it leaves out from the top
// level; _name_or_path stays the top level's (text_config's names the
// text model it was made from). A text_config that is not an object is
// an error naming the file and the field.
func TestReadHFConfigTextConfig(t *testing.T) {
	yes := true
	for _, tc := range []struct {
		name, body string
		want       model.HFConfig
		err        string
	}{
		{name: "Qwen3-VL", body: `{"_name_or_path": "Qwen/Qwen3-VL-2B-Instruct", "model_type": "qwen3_vl", "tie_word_embeddings": true,
			"text_config": {"_name_or_path": "", "max_position_embeddings": 262144, "vocab_size": 151936, "hidden_size": 2048, "intermediate_size": 6144,
				"num_hidden_layers": 28, "num_attention_heads": 16, "head_dim": 128, "rope_theta": 5000000, "tie_word_embeddings": true},
			"vision_config": {"hidden_size": 1024, "depth": 24}}`,
			want: model.HFConfig{NameOrPath: "Qwen/Qwen3-VL-2B-Instruct", MaxPositionEmbeddings: 262144, VocabSize: 151936, HiddenSize: 2048,
				IntermediateSize: 6144, NumHiddenLayers: 28, NumAttentionHeads: 16, HeadDim: 128, RopeTheta: 5e6, TieWordEmbeddings: &yes}},
		{name: "Llava, vocab_size at the top", body: `{"vocab_size": 32064, "text_config": {"_name_or_path": "lmsys/vicuna-7b-v1.5", "max_position_embeddings": 4096}}`,
			want: model.HFConfig{VocabSize: 32064, MaxPositionEmbeddings: 4096}},
		{name: "text_config wins", body: `{"max_position_embeddings": 2048, "text_config": {"max_position_embeddings": 4096}}`,
			want: model.HFConfig{MaxPositionEmbeddings: 4096}},
		{name: "Gemma 3's window", body: `{"text_config": {"sliding_window": 1024, "hidden_size": 2560}}`,
			want: model.HFConfig{SlidingWindow: 1024.0, HiddenSize: 2560}},
		{name: "null", body: `{"max_position_embeddings": 2048, "text_config": null}`, want: model.HFConfig{MaxPositionEmbeddings: 2048}},
		{name: "a string", body: `{"text_config": "qwen3"}`, err: "text_config"},
		{name: "negative", body: `{"text_config": {"max_position_embeddings": -1}}`, err: "negative max_position_embeddings"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, model.ConfigFile)
			require.NoError(t, os.WriteFile(path, []byte(tc.body), 0o644))
			cfg, found, err := model.ReadHFConfig(filepath.Join(dir, "model.onnx"))
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				require.ErrorContains(t, err, path)
				return
			}
			require.NoError(t, err)
			require.True(t, found)
			require.Equal(t, tc.want, cfg)
		})
	}
}

// TestReadHFConfigRefusesSizes: a config.json whose sizes cannot be a
// model's (negative: a corrupt file) or whose partial_rotary_factor is
// no fraction is refused, naming the file and the field; only three
// negative fields were. Real models' sizes pass: Gemma 3's head_dim 256
// over hidden_size 640, a head_dim wider than hidden_size (init-model
// --hidden 16 with its head_dim 32 writes one), Phi's partial factor.
func TestReadHFConfigRefusesSizes(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		err        string
	}{
		{"negative head_dim", `{"head_dim": -8}`, "negative head_dim -8"},
		{"text_config's negative head_dim", `{"text_config": {"head_dim": -8}}`, "negative head_dim -8"},
		{"negative hidden_size", `{"hidden_size": -1}`, "negative hidden_size -1"},
		{"negative intermediate_size", `{"intermediate_size": -1}`, "negative intermediate_size -1"},
		{"negative num_hidden_layers", `{"num_hidden_layers": -2}`, "negative num_hidden_layers -2"},
		{"negative vocab_size", `{"vocab_size": -3}`, "negative vocab_size -3"},
		{"partial_rotary_factor past 1", `{"head_dim": 64, "partial_rotary_factor": 1e9}`, "partial_rotary_factor 1e+09 is not a fraction in (0, 1]"},
		{"negative partial_rotary_factor", `{"head_dim": 64, "partial_rotary_factor": -0.5}`, "partial_rotary_factor -0.5 is not a fraction in (0, 1]"},
		{"rope_parameters' partial_rotary_factor", `{"head_dim": 64, "rope_parameters": {"rope_type": "yarn", "partial_rotary_factor": 3}}`,
			"rope_parameters.partial_rotary_factor 3 is not a fraction in (0, 1]"},
		{"Gemma 3", `{"text_config": {"hidden_size": 640, "head_dim": 256, "num_attention_heads": 4}}`, ""},
		{"head_dim alone", `{"head_dim": 128}`, ""},
		{"head_dim wider than hidden_size", `{"hidden_size": 16, "num_attention_heads": 4, "head_dim": 32}`, ""},
		{"Phi's partial factor", `{"hidden_size": 2560, "num_attention_heads": 32, "partial_rotary_factor": 0.4}`, ""},
		{"transformers 5's partial factor", `{"head_dim": 64, "rope_parameters": {"rope_type": "default", "partial_rotary_factor": 0.25}}`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, model.ConfigFile)
			require.NoError(t, os.WriteFile(path, []byte(tc.body), 0o644))
			_, _, err := model.ReadHFConfig(filepath.Join(dir, "model.onnx"))
			if tc.err == "" {
				require.NoError(t, err)
				return
			}
			require.EqualError(t, err, "model: "+path+": "+tc.err)
		})
	}
}

// TestSideFileJSONErrors: a config.json, generation_config.json or
// tokenizer_config.json of the wrong JSON type, or with a field of the
// wrong type, is refused naming the file, the field by its JSON path and
// the JSON types; it said "cannot unmarshal array into Go value of type
// struct { model.HFConfig; ... }" or "Go struct field
// .HFConfig.max_position_embeddings of type int".
func TestSideFileJSONErrors(t *testing.T) {
	tok := thinkTokenizer(t)
	for _, tc := range []struct {
		file, body, want string
	}{
		{model.ConfigFile, `[]`, "an object expected, got an array"},
		{model.ConfigFile, `{"max_position_embeddings": "4096"}`, "max_position_embeddings: an integer expected, got a string"},
		{model.ConfigFile, `{"tie_word_embeddings": 1}`, "tie_word_embeddings: true or false expected, got a number"},
		{model.ConfigFile, `{"text_config": {"num_attention_heads": 2.5}}`, "text_config: num_attention_heads: an integer expected, got the number 2.5"},
		{model.ConfigFile, `{"text_config": []}`, "text_config: an object expected, got an array"},
		{tokenizer.GenerationConfigFile, `[]`, "an object expected, got an array"},
		{tokenizer.ConfigFile, `[]`, "malformed JSON: an object expected, got an array"},
	} {
		t.Run(tc.file+" "+tc.body, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, tc.file)
			require.NoError(t, os.WriteFile(path, []byte(tc.body), 0o644))
			var err error
			switch tc.file {
			case model.ConfigFile:
				_, _, err = model.ReadHFConfig(filepath.Join(dir, "model.onnx"))
			case tokenizer.GenerationConfigFile:
				_, _, err = model.ReadGenerationEOS(filepath.Join(dir, "model.onnx"), tok)
			default:
				b, berr := tokenizer.BuildByteTokenizerJSON()
				require.NoError(t, berr)
				require.NoError(t, os.WriteFile(filepath.Join(dir, tokenizer.TokenizerFile), b, 0o644))
				_, err = tokenizer.Load(dir)
			}
			require.Error(t, err)
			require.Contains(t, err.Error(), path)
			require.True(t, strings.HasSuffix(err.Error(), ": "+tc.want), "%v", err)
			require.NotContains(t, err.Error(), "Go ")
		})
	}
}
