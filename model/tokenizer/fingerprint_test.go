package tokenizer

import (
	"encoding/json"
	"os"
	"path/filepath"
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

// TestFingerprintErrors: a file Load refuses is refused, naming it.
func TestFingerprintErrors(t *testing.T) {
	dir := t.TempDir()
	_, err := Fingerprint(dir)
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
