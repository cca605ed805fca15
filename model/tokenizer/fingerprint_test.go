package tokenizer

import (
	"bytes"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestFingerprint: the fingerprint train and sft record of their
// tokenizer (a run setting) follows what shapes the ids of spiral's
// prompts: the tokenizer.json and the chat template's BOS token and
// generation prompt, read from chat_template.jinja or
// tokenizer_config.json as Load reads them. A template that prompts as
// spiral's does (spiral's own ChatML too, which the exports add beside a
// model that has none, so that an export's tokenizer is its run's), or
// differs where spiral does not follow it (a default system turn), keeps
// the fingerprint of none; one that adds
// "<think>\n" or the BOS token changes it (it covered tokenizer.json
// only, so a rerun with such a template resumed on other prompts).
// Equal fingerprints go with equal prompt ids, checked on a probe.
func TestFingerprint(t *testing.T) {
	const loop = "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}{% endfor %}"
	const gen = "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
	const think = "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n<think>\\n' }}{% endif %}"
	const system = "{% if messages[0]['role'] != 'system' %}{{ '<|im_start|>system\\nBe brief.<|im_end|>\\n' }}{% endif %}"
	data := byteTokenizerWithBOS(t)
	other, err := BuildByteTokenizerJSON()
	require.NoError(t, err)
	write := func(tokJSON []byte, files map[string]string) string {
		dir := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(dir, TokenizerFile), tokJSON, 0o644))
		for name, text := range files {
			require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644))
		}
		return dir
	}
	probe := []Message{{Role: RoleUser, Content: "1+1="}}
	base := write(data, nil)
	baseID, err := Fingerprint(base)
	require.NoError(t, err)
	baseTok, err := Load(base)
	require.NoError(t, err)
	defer baseTok.Close()
	for _, tc := range []struct {
		name  string
		dir   string
		equal bool
	}{
		{"the same files elsewhere", write(data, nil), true},
		{"its tokenizer.json named as a file", filepath.Join(base, TokenizerFile), true},
		{"a template that prompts as spiral's", write(data, map[string]string{TemplateFile: loop + gen}), true},
		{"spiral's ChatML template, which the exports add", write(data, map[string]string{TemplateFile: ChatMLTemplate}), true},
		{"a template with a default system turn", write(data, map[string]string{TemplateFile: system + loop + gen}), true},
		{"another tokenizer.json", write(other, nil), false},
		{"a generation prompt opening <think>", write(data, map[string]string{TemplateFile: loop + think}), false},
		{"the config's template opening <think>", write(data, map[string]string{ConfigFile: `{"chat_template": "` + jsonEscape(loop+think) + `"}`}), false},
		{"the BOS token first", write(data, map[string]string{ConfigFile: `{"bos_token": "<s>", "chat_template": "` + jsonEscape("{{ bos_token }}"+loop+gen) + `"}`}), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id, err := Fingerprint(tc.dir)
			require.NoError(t, err)
			require.Len(t, id, 32)
			tok, err := Load(tc.dir)
			require.NoError(t, err)
			defer tok.Close()
			if tc.equal {
				require.Equal(t, baseID, id)
				require.Equal(t, baseTok.EncodeChat(probe, true), tok.EncodeChat(probe, true))
				return
			}
			require.NotEqual(t, baseID, id)
		})
	}
}

// TestFingerprintResaved: the fingerprint is of what tokenizer.json
// says, not of its bytes: the same file saved again by another tool
// (its objects' keys in another order, other indentation, as
// tokenizers' and transformers' save_pretrained write it) keeps it,
// which the bytes' hash did not (a run was refused as "another
// tokenizer" on resuming with it); a changed vocabulary entry changes
// it.
func TestFingerprintResaved(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "char_tokenizer.json"))
	require.NoError(t, err)
	var vocabSwapped []byte
	{
		var v map[string]any
		require.NoError(t, json.Unmarshal(data, &v))
		vocab := v["model"].(map[string]any)["vocab"].(map[string]any)
		vocab["a"], vocab["b"] = vocab["b"], vocab["a"]
		vocabSwapped, err = json.Marshal(v)
		require.NoError(t, err)
	}
	var compact bytes.Buffer
	require.NoError(t, json.Compact(&compact, data))
	write := func(b []byte) string {
		path := filepath.Join(t.TempDir(), TokenizerFile)
		require.NoError(t, os.WriteFile(path, b, 0o644))
		return path
	}
	orig := write(data)
	want, err := Fingerprint(orig)
	require.NoError(t, err)
	wantBytes, err := ByteFingerprint(orig)
	require.NoError(t, err)
	for _, tc := range []struct {
		name  string
		data  []byte
		equal bool
	}{
		{"its keys in reverse order, indented by 4", resaved(t, data), true},
		{"compact", compact.Bytes(), true},
		{"with a trailing newline and CRLF line ends", append(bytes.ReplaceAll(data, []byte("\n"), []byte("\r\n")), '\r', '\n'), true},
		{"two vocabulary entries' ids swapped", vocabSwapped, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.NotEqual(t, string(data), string(tc.data))
			path := write(tc.data)
			id, err := Fingerprint(path)
			require.NoError(t, err)
			byBytes, err := ByteFingerprint(path)
			require.NoError(t, err)
			require.NotEqual(t, wantBytes, byBytes, "other bytes: the bytes' fingerprint differs")
			if tc.equal {
				require.Equal(t, want, id)
				return
			}
			require.NotEqual(t, want, id)
		})
	}
}

// TestFingerprintMerges: a BPE's merges as tokenizers 0.20 and later
// save them (pairs, ["a", "b"]) and as earlier versions did ("a b") are
// the same tokenizer, which a re-save converts, and keep one
// fingerprint; another merge changes it.
func TestFingerprintMerges(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "byte_tokenizer.json"))
	require.NoError(t, err)
	withMerges := func(merges ...any) string {
		var v map[string]any
		require.NoError(t, json.Unmarshal(data, &v))
		model := v["model"].(map[string]any)
		vocab := model["vocab"].(map[string]any)
		vocab["ab"], vocab["ba"] = 259, 260
		model["merges"] = merges
		b, err := json.MarshalIndent(v, "", "  ")
		require.NoError(t, err)
		path := filepath.Join(t.TempDir(), TokenizerFile)
		require.NoError(t, os.WriteFile(path, b, 0o644))
		return path
	}
	pairs, legacy, other := withMerges([]string{"a", "b"}), withMerges("a b"), withMerges([]string{"b", "a"})
	ids := map[string]string{}
	for name, path := range map[string]string{"pairs": pairs, "legacy": legacy, "other": other} {
		id, err := Fingerprint(path)
		require.NoError(t, err)
		ids[name] = id
		tok, err := Load(path)
		require.NoError(t, err)
		want := map[string][]int32{"pairs": {259}, "legacy": {259}, "other": {97, 98}}[name]
		require.Equal(t, want, tok.Encode("ab"), name)
		require.NoError(t, tok.Close())
	}
	require.Equal(t, ids["pairs"], ids["legacy"])
	require.NotEqual(t, ids["pairs"], ids["other"])
}

// TestByteFingerprint: ByteFingerprint is the fingerprint that versions
// before Fingerprint read tokenizer.json's content recorded in a run's
// settings (the hash of its bytes), for a run of theirs to resume with
// the same file: these are what they recorded for the testdata
// tokenizers (the value for each, printed by Fingerprint at 6656716).
func TestByteFingerprint(t *testing.T) {
	for file, recorded := range map[string]string{
		"char_tokenizer.json": "823eb6f17bec105d5aa4ca9820b821fb",
		"byte_tokenizer.json": "03670dc79d577f15d1694c9b0d12e4cd",
	} {
		t.Run(file, func(t *testing.T) {
			path := filepath.Join("testdata", file)
			id, err := ByteFingerprint(path)
			require.NoError(t, err)
			require.Equal(t, recorded, id)
			now, err := Fingerprint(path)
			require.NoError(t, err)
			require.NotEqual(t, recorded, now, "the content's fingerprint is another")
		})
	}
}

// resaved is the JSON data written again as another tool would: each
// object's keys in reverse sorted order, indented by four spaces, with
// ": " after a key.
func resaved(t *testing.T, data []byte) []byte {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	require.NoError(t, dec.Decode(&v))
	var b bytes.Buffer
	var write func(v any, indent string)
	write = func(v any, indent string) {
		switch x := v.(type) {
		case map[string]any:
			keys := slices.Sorted(maps.Keys(x))
			slices.Reverse(keys)
			b.WriteByte('{')
			for i, k := range keys {
				if i > 0 {
					b.WriteByte(',')
				}
				kb, err := json.Marshal(k)
				require.NoError(t, err)
				b.WriteString("\n" + indent + "    ")
				b.Write(kb)
				b.WriteString(": ")
				write(x[k], indent+"    ")
			}
			b.WriteString("\n" + indent + "}")
		case []any:
			b.WriteByte('[')
			for i, e := range x {
				if i > 0 {
					b.WriteByte(',')
				}
				b.WriteString("\n" + indent + "    ")
				write(e, indent+"    ")
			}
			b.WriteString("\n" + indent + "]")
		default:
			e, err := json.Marshal(x)
			require.NoError(t, err)
			b.Write(e)
		}
	}
	write(v, "")
	return b.Bytes()
}

// TestFingerprintErrors: a file Load refuses is refused, naming it.
func TestFingerprintErrors(t *testing.T) {
	dir := t.TempDir()
	_, err := Fingerprint(dir)
	require.ErrorContains(t, err, filepath.Join(dir, TokenizerFile))
	require.NoError(t, os.WriteFile(filepath.Join(dir, TokenizerFile), []byte(`{"model": `), 0o644))
	_, err = Fingerprint(dir)
	require.ErrorContains(t, err, filepath.Join(dir, TokenizerFile))
	data, err := BuildByteTokenizerJSON()
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, TokenizerFile), data, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, ConfigFile), []byte("{"), 0o644))
	_, err = Fingerprint(dir)
	require.ErrorContains(t, err, filepath.Join(dir, ConfigFile)+`": malformed JSON`)
}

// jsonEscape returns s as the inside of a JSON string.
func jsonEscape(s string) string {
	b, err := json.Marshal(s)
	if err != nil {
		panic(err)
	}
	return string(b[1 : len(b)-1])
}

// TestFingerprintPinned pins the fingerprints runs record of the testdata
// tokenizers and of setup.sh's Qwen3 tokenizer: a change of Fingerprint's
// value for the same files would refuse every recorded run's resume as
// another tokenizer's, so it must be deliberate (and accept the old
// value, as ByteFingerprint's is accepted).
func TestFingerprintPinned(t *testing.T) {
	for _, tc := range []struct {
		name, path, want string
	}{
		{"char", filepath.Join("testdata", "char_tokenizer.json"), "c250d79ba44cde30d897b7d4dabd5a10"},
		{"byte", filepath.Join("testdata", "byte_tokenizer.json"), "1a20c3949329e48e2774bba8e796cd5d"},
		{"qwen3", "", "f0564099c8acad7a945b2e3bc28ee511"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := tc.path
			if path == "" {
				path = os.Getenv(qwen3EnvVar)
				if path == "" {
					t.Skipf("%s is unset: run scripts/setup.sh and source ~/.cache/spiral/env.sh to test against the real Qwen3 tokenizer", qwen3EnvVar)
				}
				if filepath.Base(path) != "qwen3-tokenizer-3.7.2" {
					t.Skipf("%s is not setup.sh's qwen3-tokenizer-3.7.2", path)
				}
			}
			id, err := Fingerprint(path)
			require.NoError(t, err)
			require.Equal(t, tc.want, id)
		})
	}
}
