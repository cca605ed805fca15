package tokenizer

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestChatMLTemplateMatchesRenderChat checks that the chat_template an
// HF export writes renders, in jinja2 as transformers renders it
// (testdata/chatml_golden.json, gen_chatml_golden.py), what RenderChat
// writes: a model prompted through transformers sees spiral's prompts.
func TestChatMLTemplateMatchesRenderChat(t *testing.T) {
	var g struct {
		Source   string `json:"source"`
		Template string `json:"template"`
		Cases    []struct {
			Name     string    `json:"name"`
			Messages []Message `json:"messages"`
			Gen      bool      `json:"add_generation_prompt"`
			Text     string    `json:"text"`
		} `json:"cases"`
	}
	readGolden(t, "chatml_golden.json", &g)
	require.Equal(t, ChatMLTemplate, g.Template, "chatml.jinja changed: rerun testdata/gen_chatml_golden.py")
	require.NotEmpty(t, g.Cases)
	for _, c := range g.Cases {
		t.Run(c.Name, func(t *testing.T) {
			require.Equal(t, c.Text, RenderChat(c.Messages, c.Gen), "source: %s", g.Source)
		})
	}
}

func TestHFConfigFiles(t *testing.T) {
	for _, tc := range generatedKinds {
		t.Run(tc.name, func(t *testing.T) {
			tok := newGenerated(t, tc.build)
			files, err := tok.HFConfigFiles()
			require.NoError(t, err)
			require.Len(t, files, 2)
			var cfg map[string]any
			require.NoError(t, json.Unmarshal(files[ConfigFile], &cfg))
			require.Equal(t, map[string]any{
				"tokenizer_class":              "PreTrainedTokenizerFast",
				"chat_template":                ChatMLTemplate,
				"eos_token":                    IMEndToken,
				"pad_token":                    EndOfTextToken,
				"bos_token":                    nil,
				"clean_up_tokenization_spaces": false,
			}, cfg)
			var gen struct {
				EOS []int32 `json:"eos_token_id"`
				Pad *int32  `json:"pad_token_id"`
			}
			require.NoError(t, json.Unmarshal(files[GenerationConfigFile], &gen))
			eot, ok := tok.EndOfText()
			require.True(t, ok)
			require.Equal(t, []int32{tok.IMEnd(), eot}, gen.EOS, "generation stops where the sampler stops")
			require.Equal(t, tok.StopIDs(), gen.EOS)
			require.NotNil(t, gen.Pad)
			require.Equal(t, eot, *gen.Pad)
		})
	}
}
