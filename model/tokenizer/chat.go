package tokenizer

import (
	"regexp"
	"strings"
)

// Roles of ChatML turns.
const (
	RoleSystem    = "system"
	RoleUser      = "user"
	RoleAssistant = "assistant"
)

// Message is one turn of a conversation.
type Message struct {
	Role    string // RoleSystem, RoleUser or RoleAssistant
	Content string
}

// RenderChat renders msgs with ChatML, the template of Qwen's chat models:
//
//	<|im_start|>{role}\n{content}<|im_end|>\n      for each message
//	<|im_start|>assistant\n                       when addGenerationPrompt
//
// No default system prompt is inserted and no BOS is written
// (EncodeChat writes the BOS token where the template does). Content is
// copied verbatim: special tokens inside it are not escaped (neither are
// they by Qwen's Jinja template). Encode the result with Encode, which
// recognises the special tokens.
//
// This equals Qwen3's Jinja chat_template for system, user and assistant
// turns without tool calls. Qwen3's hybrid-thinking template additionally
// writes an empty "<think>\n\n</think>\n\n" into the final assistant turn
// that follows the last user turn; RenderChat does not (Qwen3-*-2507's
// template does not either). Qwen2.5-Instruct's template differs: it
// inserts a default system prompt when the messages have none.
func RenderChat(msgs []Message, addGenerationPrompt bool) string {
	var b strings.Builder
	for _, m := range msgs {
		b.WriteString(IMStartToken)
		b.WriteString(m.Role)
		b.WriteByte('\n')
		b.WriteString(m.Content)
		b.WriteString(IMEndToken)
		b.WriteByte('\n')
	}
	if addGenerationPrompt {
		b.WriteString(IMStartToken)
		b.WriteString(RoleAssistant)
		b.WriteByte('\n')
	}
	return b.String()
}

// EncodeChat is Encode(RenderChat(msgs, addGenerationPrompt)), preceded
// by the BOS token where the chat template writes {{ bos_token }} before
// its messages (Hermes-style ChatML on Mistral and Llama bases) and
// tokenizer_config.json has a bos_token: the ids of transformers'
// apply_chat_template, which renders the template with the bos_token's
// text and tokenizes it without adding special tokens.
func (t *Tokenizer) EncodeChat(msgs []Message, addGenerationPrompt bool) []int32 {
	return t.Encode(t.bos + RenderChat(msgs, addGenerationPrompt))
}

// jinjaTag matches a Jinja expression ({{ }}: group 1), statement ({% %}:
// group 2) or comment.
var jinjaTag = regexp.MustCompile(`(?s)\{\{(.*?)\}\}|\{%(.*?)%\}|\{#.*?#\}`)

// bosPlacement reads where the chat template tmpl writes bos_token: first
// when its first output is {{ bos_token }}, outside any block (before its
// message loop, as Hermes-style ChatML writes it); elsewhere when it
// mentions bos_token anywhere else (a second time, in a loop or under a
// condition, in a longer expression or a statement), which RenderChat
// does not follow.
func bosPlacement(tmpl string) (first, elsewhere bool) {
	depth, wrote := 0, false // open blocks; output written before
	at := 0
	for _, m := range jinjaTag.FindAllStringSubmatchIndex(tmpl, -1) {
		if strings.TrimSpace(tmpl[at:m[0]]) != "" {
			wrote = true // literal text
		}
		at = m[1]
		switch {
		case m[2] >= 0:
			expr := strings.Trim(tmpl[m[2]:m[3]], "-+ \t\r\n")
			switch {
			case expr == "bos_token" && depth == 0 && !wrote:
				first = true
			case strings.Contains(expr, "bos_token"):
				elsewhere = true
			}
			wrote = true
		case m[4] >= 0:
			stmt := strings.Trim(tmpl[m[4]:m[5]], "-+ \t\r\n")
			if strings.Contains(stmt, "bos_token") {
				elsewhere = true
			}
			word, _, _ := strings.Cut(stmt, " ")
			switch {
			case word == "for" || word == "if" || word == "macro" || word == "call" || word == "filter" || word == "block" ||
				word == "set" && !strings.Contains(stmt, "="): // a block set
				depth++
			case strings.HasPrefix(word, "end"):
				depth--
				if word == "endfor" {
					wrote = true // the loop may have written
				}
			}
		}
	}
	return first, elsewhere
}
