package tokenizer

import "strings"

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
// No default system prompt is inserted and no BOS is written. Content is
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

// EncodeChat is Encode(RenderChat(msgs, addGenerationPrompt)).
func (t *Tokenizer) EncodeChat(msgs []Message, addGenerationPrompt bool) []int32 {
	return t.Encode(RenderChat(msgs, addGenerationPrompt))
}
