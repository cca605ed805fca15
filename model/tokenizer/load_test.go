package tokenizer

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestLoadErrors(t *testing.T) {
	good, err := BuildCharTokenizerJSON([]rune("ab"))
	require.NoError(t, err)
	noSpecials := strings.Replace(string(good), `"<|im_end|>"`, `"<|other|>"`, 1)
	// noUnk is good as a model of type typ whose vocab lacks its
	// unk_token, which made every text with a piece outside the vocab
	// encode to no token at all.
	noUnk := func(typ string, unk any) string {
		var f map[string]any
		require.NoError(t, json.Unmarshal(good, &f))
		m := f["model"].(map[string]any)
		delete(m["vocab"].(map[string]any), UnknownToken)
		m["type"], m["unk_token"] = typ, unk
		if unk == nil {
			delete(m, "unk_token")
		}
		b, err := json.Marshal(f)
		require.NoError(t, err)
		return string(b)
	}
	cases := []struct {
		name   string
		files  map[string]string // relative path -> contents
		load   string            // relative path given to Load
		inFile string            // file the error must name
		want   string            // problem the error must state
	}{
		{"missing path", nil, "nope", "nope", "no such file"},
		{"directory without tokenizer.json", map[string]string{"d/x": ""}, "d", "d/tokenizer.json", "no such file"},
		{"empty file", map[string]string{"t.json": " \n"}, "t.json", "t.json", "empty file"},
		{"truncated JSON", map[string]string{"t.json": string(good[:len(good)/2])}, "t.json", "t.json", "malformed JSON"},
		{"syntax error position", map[string]string{"t.json": "{\n  \"model\": {,}\n}"}, "t.json", "t.json", "line 2, column"},
		{"not an object", map[string]string{"t.json": "[1, 2]"}, "t.json", "t.json", "malformed JSON"},
		{"no model", map[string]string{"t.json": `{"added_tokens": []}`}, "t.json", "t.json", `no "model"`},
		{"no vocab", map[string]string{"t.json": `{"model": {"type": "BPE"}}`}, "t.json", "t.json", `has no "vocab"`},
		{"vocab of wrong type", map[string]string{"t.json": `{"model": {"vocab": 3}}`}, "t.json", "t.json", "neither an object nor a list"},
		{"negative id", map[string]string{"t.json": `{"model": {"vocab": {"a": -1}}}`}, "t.json", "t.json", "outside"},
		{"missing specials", map[string]string{"t.json": noSpecials}, "t.json", "t.json", "lacks <|im_end|>"},
		{"WordLevel unk_token outside the vocab", map[string]string{"t.json": noUnk("WordLevel", UnknownToken)}, "t.json", "t.json", `model (type "WordLevel"): unk_token "<unk>" is not in its vocab, and every text with a piece outside it would encode to no token`},
		{"WordLevel default unk_token outside the vocab", map[string]string{"t.json": noUnk("WordLevel", nil)}, "t.json", "t.json", `model (type "WordLevel"): unk_token "<unk>" is not in its vocab`},
		{"WordPiece unk_token outside the vocab", map[string]string{"t.json": noUnk("WordPiece", "[UNK]")}, "t.json", "t.json", `model (type "WordPiece"): unk_token "[UNK]" is not in its vocab`},
		{"rejected by native library", map[string]string{"t.json": strings.Replace(string(good), `"WordLevel"`, `"NoSuchModel"`, 1)}, "t.json", "t.json", "native tokenizers library rejected"},
		{"malformed config", map[string]string{"d/tokenizer.json": string(good), "d/tokenizer_config.json": "{"}, "d", "d/tokenizer_config.json", "malformed JSON"},
		{"non-ChatML template", map[string]string{"d/tokenizer.json": string(good), "d/tokenizer_config.json": `{"chat_template": "{{ bos_token }}[INST]"}`}, "d", "d/tokenizer_config.json", "not ChatML"},
		// A tokenizer given as a file (how the CLI loads a model's
		// tokenizer) is read with the config beside it, whatever its name.
		{"malformed config beside the file", map[string]string{"d/tokenizer.json": string(good), "d/tokenizer_config.json": "{"}, "d/tokenizer.json", "d/tokenizer_config.json", "malformed JSON"},
		{"non-ChatML template beside the file", map[string]string{"d/tokenizer.json": string(good), "d/tokenizer_config.json": `{"chat_template": "{{ bos_token }}[INST]"}`}, "d/tokenizer.json", "d/tokenizer_config.json", "not ChatML"},
		{"non-ChatML template beside a file of another name", map[string]string{"d/qwen.json": string(good), "d/tokenizer_config.json": `{"chat_template": "[INST]"}`}, "d/qwen.json", "d/tokenizer_config.json", "not ChatML"},
		// transformers saves the template as chat_template.jinja and reads
		// it in place of the config's.
		{"non-ChatML template file", map[string]string{"d/tokenizer.json": string(good), "d/chat_template.jinja": "{{ bos_token }}[INST]"}, "d/tokenizer.json", "d/chat_template.jinja", "not ChatML"},
		// transformers' apply_chat_template raises an error for a list of
		// named templates without one named "default".
		{"named templates without a default", map[string]string{"d/tokenizer.json": string(good), "d/tokenizer_config.json": `{"chat_template": [{"name": "tool_use", "template": "<|im_start|>t"}, {"name": "rag", "template": "<|im_start|>r"}]}`}, "d", "d/tokenizer_config.json",
			`chat_template lists templates named ["rag", "tool_use"] and none named "default", which transformers' apply_chat_template needs (it raises an error); name one "default" or give a chat_template.jinja`},
		{"empty list of named templates", map[string]string{"d/tokenizer.json": string(good), "d/tokenizer_config.json": `{"chat_template": []}`}, "d", "d/tokenizer_config.json", `chat_template lists templates named [] and none named "default"`},
		{"bos_token of another type", map[string]string{"d/tokenizer.json": string(good), "d/tokenizer_config.json": `{"bos_token": {"id": 1}, "chat_template": "{{ bos_token }}<|im_start|>"}`}, "d", "d/tokenizer_config.json",
			`bos_token is neither a string nor an object with a "content" string`},
		{"non-ChatML template file over a ChatML config", map[string]string{"d/tokenizer.json": string(good), "d/tokenizer_config.json": `{"chat_template": "<|im_start|>"}`, "d/chat_template.jinja": "[INST]"}, "d", "d/chat_template.jinja", "not ChatML"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			for rel, body := range c.files {
				p := filepath.Join(dir, rel)
				require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
				require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
			}
			tok, err := Load(filepath.Join(dir, c.load))
			require.Error(t, err)
			require.Nil(t, tok)
			require.ErrorContains(t, err, filepath.Join(dir, c.inFile))
			require.ErrorContains(t, err, c.want)
			require.True(t, strings.HasPrefix(err.Error(), "tokenizer: "), err.Error())
		})
	}
}

// TestLoadVocabTypeErrors: a model.vocab value of the wrong JSON type
// was said in encoding/json's Go types ("model vocab: json: cannot
// unmarshal string into Go value of type int64"), without the token,
// and a vocab of the other shape than its model type's was left to the
// native library ("invalid type: sequence, expected a map at line 1
// column 506"), and a null id passed as id 0 for the native library to
// refuse ("invalid type: null, expected u32 at line 1 column 597"), as
// was a Unigram piece's score that is no number ("expected f64").
// They are said in the file's terms (jsonerr), naming the field: the
// token of an entry, and the model type of a vocab.
func TestLoadVocabTypeErrors(t *testing.T) {
	good, err := BuildCharTokenizerJSON([]rune("ab"))
	require.NoError(t, err)
	for _, tc := range []struct {
		name string
		typ  string // the model's type
		// entry sets the vocab's token "a" to its value; vocab, where
		// entry is nil, is the whole vocab.
		entry, vocab any
		want         string
	}{
		{"id as a string", "WordLevel", "1", nil, `model.vocab["a"]: an integer expected, got a string`},
		{"id as a fraction", "WordLevel", 1.5, nil, `model.vocab["a"]: an integer expected, got the number 1.5`},
		{"id past int64", "WordLevel", json.Number("1e30"), nil, `model.vocab["a"]: an integer expected, got the number 1e30`},
		{"id as an array", "BPE", []int{1}, nil, `model.vocab["a"]: an integer expected, got an array`},
		{"id as an object", "WordPiece", map[string]int{"id": 1}, nil, `model.vocab["a"]: an integer expected, got an object`},
		{"id null", "WordLevel", json.RawMessage("null"), nil, `model.vocab["a"]: an integer expected, got null`},
		{"id null in a BPE model", "BPE", json.RawMessage("null"), nil, `model.vocab["a"]: an integer expected, got null`},
		{"array for a WordLevel model", "WordLevel", nil, [][]any{{"a", 0}}, `model.vocab: an object expected, got an array (a model of type "WordLevel" maps each token to its id)`},
		{"array for a BPE model", "BPE", nil, [][]any{{"a", 0}}, `model.vocab: an object expected, got an array (a model of type "BPE" maps each token to its id)`},
		{"object for a Unigram model", "Unigram", nil, map[string]int{"a": 0}, `model.vocab: an array expected, got an object (a model of type "Unigram" lists [piece, score] pairs)`},
		{"string for a Unigram model", "Unigram", nil, "a", `model.vocab: an array expected, got a string (a model of type "Unigram" lists [piece, score] pairs)`},
		{"null score", "Unigram", nil, [][]any{{"a", -1.5}, {"b", nil}}, `model.vocab[1]: the score of piece "b": a number expected, got null`},
		{"score as a string", "Unigram", nil, [][]any{{"a", "-1"}}, `model.vocab[0]: the score of piece "a": a number expected, got a string`},
		{"null piece", "Unigram", nil, [][]any{{nil, -1.5}}, `model.vocab[0]: piece is not a string`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var f map[string]any
			require.NoError(t, json.Unmarshal(good, &f))
			m := f["model"].(map[string]any)
			m["type"] = tc.typ
			if tc.entry != nil {
				m["vocab"].(map[string]any)["a"] = tc.entry
			} else {
				m["vocab"] = tc.vocab
			}
			b, err := json.Marshal(f)
			require.NoError(t, err)
			path := filepath.Join(t.TempDir(), TokenizerFile)
			require.NoError(t, os.WriteFile(path, b, 0o644))
			tok, err := Load(path)
			require.Nil(t, tok)
			require.EqualError(t, err, fmt.Sprintf("tokenizer: load %q: %s", path, tc.want))
		})
	}
}

func TestLoadDirectory(t *testing.T) {
	good, err := BuildByteTokenizerJSON()
	require.NoError(t, err)
	cases := []struct {
		name, config, wantTemplate string
	}{
		{"no config", "", ""},
		{"config without template", `{"eos_token": "<|im_end|>"}`, ""},
		{"string template", `{"chat_template": "<|im_start|>{{ m }}"}`, "<|im_start|>{{ m }}"},
		{"named templates", `{"chat_template": [{"name": "tool_use", "template": "<|im_start|>t"}, {"name": "default", "template": "<|im_start|>d"}]}`, "<|im_start|>d"},
		// "default" is taken even empty (transformers renders it), not
		// given way to another entry; of two, the last.
		{"named templates with an empty default", `{"chat_template": [{"name": "default", "template": ""}, {"name": "tool_use", "template": "<|im_start|>t"}]}`, ""},
		{"named templates with two defaults", `{"chat_template": [{"name": "default", "template": "<|im_start|>1"}, {"name": "default", "template": "<|im_start|>2"}]}`, "<|im_start|>2"},
		{"template file over named templates without a default", `{"chat_template": [{"name": "tool_use", "template": "<|im_start|>t"}]}`, "<|im_start|>file"},
		{"template file", "", "<|im_start|>file"},
		{"template file over the config's", `{"chat_template": "<|im_start|>config"}`, "<|im_start|>file"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			require.NoError(t, os.WriteFile(filepath.Join(dir, TokenizerFile), good, 0o644))
			if c.config != "" {
				require.NoError(t, os.WriteFile(filepath.Join(dir, ConfigFile), []byte(c.config), 0o644))
			}
			if strings.HasPrefix(c.name, "template file") {
				require.NoError(t, os.WriteFile(filepath.Join(dir, TemplateFile), []byte(c.wantTemplate), 0o644))
			}
			// The directory, and its tokenizer.json as a file, read the
			// same config.
			for _, path := range []string{dir, filepath.Join(dir, TokenizerFile)} {
				tok, err := Load(path)
				require.NoError(t, err)
				require.Equal(t, c.wantTemplate, tok.ChatTemplate(), path)
				require.Equal(t, 259, tok.VocabSize())
				require.NoError(t, tok.Close())
			}
		})
	}
}

func TestFromBytesErrors(t *testing.T) {
	_, err := FromBytes(nil)
	require.ErrorContains(t, err, "tokenizer: empty file")
	_, err = FromBytes([]byte(`{"model": {"vocab": {"a": 0}}}`))
	require.ErrorContains(t, err, "lacks <|im_start|>, <|im_end|> (ChatML needs <|im_start|> and <|im_end|> as added tokens)")
}

func TestCloseTwice(t *testing.T) {
	data, err := BuildByteTokenizerJSON()
	require.NoError(t, err)
	tok, err := FromBytes(data)
	require.NoError(t, err)
	require.NoError(t, tok.Close())
	require.NoError(t, tok.Close())
	require.PanicsWithValue(t, "tokenizer: use of a closed Tokenizer", func() { tok.Encode("a") })
}

// TestConcurrentUse runs Encode and Decode from several goroutines on one
// Tokenizer (run with -race to check the Go side).
func TestConcurrentUse(t *testing.T) {
	tok := newGenerated(t, BuildByteTokenizerJSON)
	texts := []string{"héllo", "计算 1+2", "<|im_start|>user\nx<|im_end|>", "😀😀"}
	var wg sync.WaitGroup
	errs := make(chan string, 8*len(texts))
	for g := range 8 {
		wg.Go(func() {
			for i := range 50 {
				s := texts[(g+i)%len(texts)]
				if got := tok.Decode(tok.Encode(s)); got != s {
					errs <- fmt.Sprintf("goroutine %d: %q became %q", g, s, got)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

// FuzzFromBytes feeds arbitrary bytes to FromBytes: it must return a
// tokenizer or an error, never crash, and a tokenizer it returns must
// encode and decode.
func FuzzFromBytes(f *testing.F) {
	char, err := BuildCharTokenizerJSON([]rune("xyz"))
	require.NoError(f, err)
	byteLevel, err := BuildByteTokenizerJSON()
	require.NoError(f, err)
	f.Add(char)
	f.Add(byteLevel)
	f.Add([]byte(`{"model": {"vocab": [["a", 0.0]]}}`))
	f.Add([]byte(`{"added_tokens": [{"id": 0, "content": "<|im_start|>"}], "model": {"vocab": {}}}`))
	f.Add(char[:len(char)-10])
	f.Fuzz(func(t *testing.T, data []byte) {
		tok, err := FromBytes(data)
		if err != nil {
			require.Nil(t, tok)
			return
		}
		defer tok.Close()
		ids := tok.Encode("<|im_start|>user\nxyz")
		_ = tok.Decode(ids)
		require.Positive(t, tok.VocabSize())
	})
}
