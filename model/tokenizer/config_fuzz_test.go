package tokenizer

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// FuzzReadChatTemplate feeds arbitrary tokenizer_config.json files (and,
// with jinja, a chat_template.jinja beside) to readChatTemplate: a
// template it accepts is ChatML, the .jinja file's when there is one, and
// the config's last one named "default" (even empty: no template) when
// the config names its templates; an error names one of the two files.
func FuzzReadChatTemplate(f *testing.F) {
	files, err := (&Tokenizer{template: ChatMLTemplate}).HFConfigFiles()
	require.NoError(f, err)
	f.Add(files[ConfigFile], []byte(nil), false)
	f.Add([]byte(`{"chat_template": null, "model_max_length": 32768}`), []byte(ChatMLTemplate), true)
	f.Add([]byte(`{"chat_template": [{"name": "default", "template": "<|im_start|>{{ m }}"}, {"name": "tool_use", "template": "<|im_start|>tool"}]}`), []byte(nil), false)
	f.Add([]byte(`{"chat_template": [{"name": "tool_use", "template": "<|im_start|>tool"}, {"name": "default", "template": ""}]}`), []byte(nil), false)
	f.Add([]byte(`{"chat_template": "{{ bos_token }}[INST]"}`), []byte(nil), false)
	f.Add([]byte(`{"chat_template": 3}`), []byte("<|im_start|>"), true)
	f.Add([]byte("{\n\"chat_template\": \"a\",\n}"), []byte(nil), false)
	dir := f.TempDir()
	configPath, jinjaPath := filepath.Join(dir, ConfigFile), filepath.Join(dir, TemplateFile)
	f.Fuzz(func(t *testing.T, config, jinja []byte, withJinja bool) {
		require.NoError(t, os.WriteFile(configPath, config, 0o666))
		if withJinja {
			require.NoError(t, os.WriteFile(jinjaPath, jinja, 0o666))
		} else if err := os.Remove(jinjaPath); err != nil {
			require.ErrorIs(t, err, fs.ErrNotExist)
		}
		tmpl, _, from, err := readChatTemplate(dir)
		if err != nil {
			require.Contains(t, []string{configPath, jinjaPath}, from)
			return
		}
		require.True(t, tmpl == "" || strings.Contains(tmpl, IMStartToken), "template %q", tmpl)
		if withJinja { // even empty, as transformers reads it
			require.Equal(t, jinjaPath, from)
			require.Equal(t, string(jinja), tmpl)
			return
		}
		var named struct {
			ChatTemplate []struct{ Name, Template string } `json:"chat_template"`
		}
		if json.Unmarshal(config, &named) == nil && named.ChatTemplate != nil {
			def, ok := "", false
			for _, n := range named.ChatTemplate {
				if n.Name == "default" {
					def, ok = n.Template, true
				}
			}
			require.True(t, ok, "a list without a default is refused")
			require.Equal(t, def, tmpl, "the last template named default")
		}
	})
}
