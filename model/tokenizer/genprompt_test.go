package tokenizer

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestChatGenerationPromptGolden: a ChatML template whose generation
// prompt opens a <think> block (Qwen3-*-Thinking-2507's, QwQ's) prompts
// with it, as transformers' apply_chat_template renders it
// (testdata/prompt_golden.json, gen_prompt_golden.py); EncodeChat ended
// the prompt at "<|im_start|>assistant\n", so a thinking-only model was
// prompted otherwise than it was trained, without a word. Qwen3's hybrid
// template, whose <think> block is written only with
// enable_thinking=False, prompts as before.
func TestChatGenerationPromptGolden(t *testing.T) {
	var g struct {
		Source string `json:"source"`
		Cases  []struct {
			Name     string    `json:"name"`
			Template string    `json:"template"`
			Messages []Message `json:"messages"`
			Gen      bool      `json:"add_generation_prompt"`
			Text     string    `json:"text"`
		} `json:"cases"`
	}
	readGolden(t, "prompt_golden.json", &g)
	require.NotEmpty(t, g.Cases)
	data := byteTokenizerWithBOS(t)
	for _, c := range g.Cases {
		t.Run(c.Name, func(t *testing.T) {
			tok, _ := loadWithConfig(t, data, map[string]any{"chat_template": c.Template})
			require.Empty(t, tok.TemplateWarning())
			got := tok.EncodeChat(c.Messages, c.Gen)
			require.Equal(t, c.Text, tok.Decode(got), "source: %s", g.Source)
			require.Equal(t, tok.Encode(c.Text), got)
		})
	}
}

// TestChatGenerationPromptUnread: a generation prompt that spiral cannot
// read as "<|im_start|>assistant\n" and literal text after it (an
// expression of a variable, a filter, a nested block it may write
// from) is warned of, naming the file, and spiral's prompt is kept; a
// template with no add_generation_prompt block is not.
func TestChatGenerationPromptUnread(t *testing.T) {
	const loop = "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}{% endfor %}"
	data := byteTokenizerWithBOS(t)
	for _, tc := range []struct {
		name, template string
		warn           bool
	}{
		{"a prefix before a nested block", loop + "{% if add_generation_prompt %}{{ '<|im_start|>assistant' }}{% if x %}{{ '\\n' }}{% endif %}{% endif %}", true},
		{"a variable", loop + "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' + prefix }}{% endif %}", true},
		{"a filter", loop + "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' | trim }}{% endif %}", true},
		{"an unknown escape", loop + "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n\\x41' }}{% endif %}", true},
		{"nothing before a nested block", loop + "{% if add_generation_prompt %}{% if x %}{{ '<|im_start|>assistant\\n' }}{% endif %}{% endif %}", true},
		{"no block", loop, false},
		{"plain", loop + "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tok, config := loadWithConfig(t, data, map[string]any{"chat_template": tc.template})
			want := ""
			if tc.warn {
				want = config + ": chat_template's generation prompt (its add_generation_prompt block) is not literal text beginning <|im_start|>assistant\\n, the only kind spiral follows: spiral's prompts end in <|im_start|>assistant\\n and may differ there from transformers' apply_chat_template"
			}
			require.Equal(t, want, tok.TemplateWarning())
			require.Equal(t, RenderChat([]Message{{Role: RoleUser, Content: "hi"}}, true),
				tok.Decode(tok.EncodeChat([]Message{{Role: RoleUser, Content: "hi"}}, true)))
		})
	}
}

// TestChatTemplateDefaultSystem: a template that writes a system turn of
// its own where the messages have none (Qwen2.5-Instruct's, Qwen2's,
// Qwen2.5-Math's) is warned of, naming the file and the turn, since
// spiral's prompts leave it out (README says so; nothing said so at run
// time); one that writes only the messages' system turn (Qwen3's) is
// not.
func TestChatTemplateDefaultSystem(t *testing.T) {
	const rest = "{%- for message in messages %}{%- if message.role != 'system' %}{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>\\n' }}{%- endif %}{%- endfor %}{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
	const given = "{%- if messages[0]['role'] == 'system' %}{{- '<|im_start|>system\\n' + messages[0]['content'] + '<|im_end|>\\n' }}"
	data := byteTokenizerWithBOS(t)
	for _, tc := range []struct {
		name, template, system string // system: the default turn's text, "" for none
	}{
		{"qwen2.5", given + "{%- else %}{{- '<|im_start|>system\\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\\n' }}{%- endif %}" + rest,
			"You are Qwen, created by Alibaba Cloud. You are a helpful assistant."},
		{"qwen2", "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}{{ \"<|im_start|>system\\nYou are a helpful assistant.<|im_end|>\\n\" }}{% endif %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}",
			"You are a helpful assistant."},
		{"given only", given + "{%- endif %}" + rest, ""},
		{"empty default", given + "{%- else %}{{- '<|im_start|>system\\n<|im_end|>\\n' }}{%- endif %}" + rest, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tok, config := loadWithConfig(t, data, map[string]any{"chat_template": tc.template})
			want := ""
			if tc.system != "" {
				want = config + `: chat_template writes a system turn of its own ("` + tc.system + `"), which spiral's prompts, one user turn, leave out: they differ there from transformers' apply_chat_template`
			}
			require.Equal(t, want, tok.TemplateWarning())
			msgs := []Message{{Role: RoleUser, Content: "hi"}}
			require.Equal(t, RenderChat(msgs, true), tok.Decode(tok.EncodeChat(msgs, true)))
		})
	}
}

// TestChatGenerationPromptNotChatML: a template whose generation prompt
// is literal text other than ChatML's "<|im_start|>assistant\n" (Phi-4's
// "<|im_start|>assistant<|im_sep|>", whose tokenizer has ChatML's three
// tokens and so passed every check) is refused, naming the file and the
// prompt; spiral prompted such a model with ChatML's newlines in every
// turn, without a word.
func TestChatGenerationPromptNotChatML(t *testing.T) {
	const loop = "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}{% endfor %}"
	const phi4 = "{% for message in messages %}{% if (message['role'] == 'system') %}{{'<|im_start|>system<|im_sep|>' + message['content'] + '<|im_end|>'}}{% elif (message['role'] == 'user') %}{{'<|im_start|>user<|im_sep|>' + message['content'] + '<|im_end|>'}}{% elif (message['role'] == 'assistant') %}{{'<|im_start|>assistant<|im_sep|>' + message['content'] + '<|im_end|>'}}{% endif %}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant<|im_sep|>' }}{% endif %}"
	data := byteTokenizerWithBOS(t)
	for _, tc := range []struct{ name, template, prompt string }{
		{"phi-4", phi4, "<|im_start|>assistant<|im_sep|>"},
		{"other role", loop + "{% if add_generation_prompt %}{{ '<|im_start|>model\\n' }}{% endif %}", "<|im_start|>model\n"},
		{"no newline", loop + "{% if add_generation_prompt %}{{ '<|im_start|>assistant' }}{% else %}{% endif %}", "<|im_start|>assistant"},
		{"before a nested block", loop + "{% if add_generation_prompt %}{{ '<|im_start|>assistant ' }}{% if x %}{{ '\\n' }}{% endif %}{% endif %}", "<|im_start|>assistant "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			require.NoError(t, os.WriteFile(filepath.Join(dir, TokenizerFile), data, 0o644))
			config, err := json.Marshal(map[string]any{"chat_template": tc.template})
			require.NoError(t, err)
			path := filepath.Join(dir, ConfigFile)
			require.NoError(t, os.WriteFile(path, config, 0o644))
			_, err = Load(dir)
			require.EqualError(t, err, fmt.Sprintf(`tokenizer: load %q: chat_template's generation prompt (its add_generation_prompt block) writes %q, not ChatML's "<|im_start|>assistant\n": only ChatML is supported`, path, tc.prompt))
		})
	}
}

// TestAssistantReplyGolden: the prompt of a user turn (EncodeChat, with
// the generation prompt) followed by AssistantReply and the end of the
// turn is the text the chat template writes for that user turn and the
// assistant's reply (testdata/reply_golden.json, gen_reply_golden.py):
// on a template whose generation prompt opens <think>
// (Qwen3-*-Thinking-2507's) the reasoning is closed before the answer,
// as the template writes an assistant turn, whether the message gives
// the reasoning apart or in its content; on Qwen3's hybrid template,
// whose last assistant turn opens the block itself (empty without
// reasoning) whatever enable_thinking is, the reply opens it too; on
// ChatML the reply is the reasoning and answer as they are. spiral sft
// trained a thinking model's replies with the block left open, and a
// hybrid one's with no block.
func TestAssistantReplyGolden(t *testing.T) {
	var g struct {
		Source string `json:"source"`
		Cases  []struct {
			Name      string `json:"name"`
			Template  string `json:"template"`
			User      string `json:"user"`
			Reasoning string `json:"reasoning"`
			Answer    string `json:"answer"`
			Text      string `json:"text"`
		} `json:"cases"`
	}
	readGolden(t, "reply_golden.json", &g)
	require.NotEmpty(t, g.Cases)
	data := byteTokenizerWithBOS(t)
	for _, c := range g.Cases {
		t.Run(c.Name, func(t *testing.T) {
			tok, _ := loadWithConfig(t, data, map[string]any{"chat_template": c.Template})
			require.Empty(t, tok.TemplateWarning())
			prompt := tok.Decode(tok.EncodeChat([]Message{{Role: RoleUser, Content: c.User}}, true))
			require.Equal(t, c.Text, prompt+tok.AssistantReply(c.Reasoning, c.Answer)+IMEndToken+"\n", "source: %s", g.Source)
		})
	}
}

// TestReplyHead: a template that opens a <think> block in the
// assistant's turn, outside its generation prompt (Qwen3's hybrid
// template's '\n<think>\n' + reasoning_content), has AssistantReply open
// it; one whose generation prompt opens it, or that writes a block only
// in its generation prompt (an empty one, for enable_thinking=False), or
// that names the tags in an instruction, does not.
func TestReplyHead(t *testing.T) {
	const (
		loop = "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}{% endfor %}"
		turn = "{% for message in messages %}{% if message.role == 'assistant' %}{{ '<|im_start|>' + message.role + '\\n<think>\\n' + message.reasoning_content + '\\n</think>\\n\\n' + message.content + '<|im_end|>\\n' }}" +
			"{% else %}{{ '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>\\n' }}{% endif %}{% endfor %}"
		chatml   = "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
		thinking = "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n<think>\\n' }}{% endif %}"
		noThink  = "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% if enable_thinking is defined and enable_thinking is false %}{{ '<think>\\n\\n</think>\\n\\n' }}{% endif %}{% endif %}"
		system   = "{{ '<|im_start|>system\\nReason in <think> </think> tags.<|im_end|>\\n' }}"
	)
	data := byteTokenizerWithBOS(t)
	for _, tc := range []struct {
		name, template, head, reply string
	}{
		{"assistant turn opens the block", turn + chatml, "<think>\n", "<think>\n2+2=4.\n</think>\n\n\\boxed{4}"},
		{"and the generation prompt may close an empty one", turn + noThink, "<think>\n", "<think>\n2+2=4.\n</think>\n\n\\boxed{4}"},
		{"the generation prompt opens it", turn + thinking, "", "2+2=4.\n</think>\n\n\\boxed{4}"},
		{"a block only in the generation prompt", loop + noThink, "", "2+2=4. \\boxed{4}"},
		{"ChatML", loop + chatml, "", "2+2=4. \\boxed{4}"},
		{"an instruction naming the tags", "{% if messages[0].role != 'system' %}" + system + "{% endif %}" + loop + chatml, "", "2+2=4. \\boxed{4}"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tok, _ := loadWithConfig(t, data, map[string]any{"chat_template": tc.template})
			require.Equal(t, tc.head, tok.ReplyHead())
			require.Equal(t, tc.reply, tok.AssistantReply("2+2=4. ", `\boxed{4}`))
		})
	}
}
