package tokenizer

import (
	"fmt"
	"regexp"
	"slices"
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
// writes a <think> block, empty where the message has no reasoning, into
// the final assistant turn that follows the last user turn; RenderChat
// does not (AssistantReply writes it into a reply's text). Qwen2.5-Instruct's template differs: it
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
// tokenizer_config.json has a bos_token, and with the generation prompt
// followed by what the template's generation prompt writes after
// "<|im_start|>assistant\n" (the "<think>\n" of Qwen3-*-Thinking-2507's
// and QwQ's, which open the model's reasoning there): the ids of
// transformers' apply_chat_template, which renders the template with the
// bos_token's text and tokenizes it without adding special tokens.
func (t *Tokenizer) EncodeChat(msgs []Message, addGenerationPrompt bool) []int32 {
	text := t.bos + RenderChat(msgs, addGenerationPrompt)
	if addGenerationPrompt {
		text += t.genSuffix
	}
	return t.Encode(text)
}

// Think-block tags, as Qwen3's and QwQ's tokenizers have them.
const (
	thinkOpen  = "<think>"
	thinkClose = "</think>"
)

// AssistantReply is the text of the assistant's reply, reasoning then
// answer, as the chat template writes it after the generation prompt
// (EncodeChat's) and before the end-of-turn token. Where that prompt
// opens a <think> block (Qwen3-*-Thinking-2507's and QwQ's "<think>\n")
// the reasoning, without its trailing whitespace, is closed by
// "\n</think>\n\n" before the answer, as Qwen3's templates write an
// assistant turn's reasoning_content and content (neither beginning nor
// ending with a newline, which they strip): a reply left in the block
// is one the template's own parsers (vLLM's reasoning parser, the
// template splitting its content at </think>) read as reasoning with no
// answer. Where the template opens the block in the assistant's turn
// itself rather than in its generation prompt (ReplyHead: Qwen3's
// hybrid template, whatever enable_thinking is), the reply opens it
// too, so that a reply without reasoning is "<think>\n\n</think>\n\n"
// and its answer. Otherwise it is reasoning + answer as they are.
func (t *Tokenizer) AssistantReply(reasoning, answer string) string {
	if i := strings.LastIndex(t.genSuffix, thinkOpen); t.replyHead == "" && (i < 0 || strings.Contains(t.genSuffix[i:], thinkClose)) {
		return reasoning + answer
	}
	return t.replyHead + strings.TrimRight(reasoning, " \t\r\n") + "\n" + thinkClose + "\n\n" + answer
}

// ReplyHead is what AssistantReply writes before the reasoning: "<think>\n"
// where the chat template opens the block in the assistant's turn
// rather than in its generation prompt (replyHead), else "".
func (t *Tokenizer) ReplyHead() string { return t.replyHead }

// replyHead reads whether the chat template tmpl writes a <think> block
// into the assistant's turn that its generation prompt does not open
// (suffix, generationSuffix's, opens none): it returns "<think>\n"
// where an expression outside the template's add_generation_prompt
// block holds a string literal ending in "<think>\n", the start of a
// block the expression writes the reasoning into (Qwen3's hybrid
// template: '<|im_start|>' + message.role + '\n<think>\n' +
// reasoning_content...), else "". One that writes a <think> block only
// in its generation prompt (Qwen3's with enable_thinking=False, an
// empty one) or mentions it otherwise (an instruction in a system turn)
// has none.
func replyHead(tmpl, suffix string) string {
	if strings.Contains(suffix, thinkOpen) {
		return "" // the generation prompt opens it (or closes an empty one)
	}
	gen := 0 // open blocks of the add_generation_prompt block, once in it
	for _, m := range jinjaTag.FindAllStringSubmatchIndex(tmpl, -1) {
		switch {
		case m[4] >= 0:
			stmt := strings.Trim(tmpl[m[4]:m[5]], "-+ \t\r\n")
			word, _, _ := strings.Cut(stmt, " ")
			switch {
			case stmt == "if add_generation_prompt" && gen == 0:
				gen = 1
			case gen > 0 && word == "if":
				gen++
			case gen > 0 && word == "endif":
				gen--
			}
		case m[2] >= 0 && gen == 0:
			expr := tmpl[m[2]:m[3]]
			for i := 0; i < len(expr); i++ {
				v, n, ok := readLiteral(expr[i:])
				if !ok {
					continue
				}
				if strings.HasSuffix(v, thinkOpen+"\n") {
					return thinkOpen + "\n"
				}
				i += n - 1
			}
		}
	}
	return ""
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

// chatMLGeneration is the generation prompt of ChatML, which RenderChat
// writes.
const chatMLGeneration = IMStartToken + RoleAssistant + "\n"

// generationSuffix reads the chat template tmpl's generation prompt
// (generationPrompt) and returns what it writes after ChatML's
// "<|im_start|>assistant\n" (Qwen3-*-Thinking-2507's "<think>\n"), for
// EncodeChat to write after RenderChat's; a warning, "" for none, when
// it cannot tell what the prompt writes there (an expression of a
// variable, a nested block before it is written), where the suffix is
// ""; and an error when the prompt is literal text other than ChatML's
// (Phi-4's "<|im_start|>assistant<|im_sep|>"), a template RenderChat
// does not render. A template with no add_generation_prompt block has
// none of the three.
func generationSuffix(tmpl string) (suffix, warning string, err error) {
	text, found, whole, readable := generationPrompt(tmpl)
	switch rest, ok := strings.CutPrefix(text, chatMLGeneration); {
	case !found:
		return "", "", nil
	case readable && ok:
		return rest, "", nil
	case readable && (whole || !strings.HasPrefix(chatMLGeneration, text)):
		return "", "", fmt.Errorf("chat_template's generation prompt (its add_generation_prompt block) writes %q, not ChatML's %q: only ChatML is supported", text, chatMLGeneration)
	}
	return "", "chat_template's generation prompt (its add_generation_prompt block) is not literal text beginning <|im_start|>assistant\\n, the only kind spiral follows: spiral's prompts end in <|im_start|>assistant\\n and may differ there from transformers' apply_chat_template", nil
}

// generationPrompt reads the text the chat template tmpl writes for the
// generation prompt, as transformers renders a template (trim_blocks and
// lstrip_blocks, the tags' whitespace control): the literal text and
// string literals (joined with + or ~) that its
// {% if add_generation_prompt %} block writes before its first statement
// (a nested condition, such as Qwen3's enable_thinking, or its endif).
// found is false when tmpl has no such block; whole is true when that
// statement ends the block's branch (endif, else, elif), so that text is
// all it writes; readable is false when the block writes anything else
// there first (an expression of a variable, a filter).
func generationPrompt(tmpl string) (text string, found, whole, readable bool) {
	tags := jinjaTag.FindAllStringSubmatchIndex(tmpl, -1)
	start := slices.IndexFunc(tags, func(m []int) bool {
		return m[4] >= 0 && strings.Trim(tmpl[m[4]:m[5]], "-+ \t\r\n") == "if add_generation_prompt"
	})
	if start < 0 {
		return "", false, false, false
	}
	var b strings.Builder
	prev, at := tmpl[tags[start][0]:tags[start][1]], tags[start][1]
	for _, m := range tags[start+1:] {
		tag := tmpl[m[0]:m[1]]
		b.WriteString(templateText(tmpl[at:m[0]], prev, tag))
		switch {
		case m[2] >= 0:
			s, ok := stringLiterals(strings.Trim(tmpl[m[2]:m[3]], "-+ \t\r\n"))
			if !ok {
				return "", true, false, false
			}
			b.WriteString(s)
		case m[4] >= 0:
			word, _, _ := strings.Cut(strings.Trim(tmpl[m[4]:m[5]], "-+ \t\r\n"), " ")
			return b.String(), true, word == "endif" || word == "else" || word == "elif", true
		}
		prev, at = tag, m[1]
	}
	return b.String(), true, false, true // an unclosed block: Jinja refuses it
}

// templateText is the output of the literal text raw between the tags
// prev and next, as Jinja writes it with trim_blocks and lstrip_blocks:
// all whitespace after a tag ending in "-" or before one starting with
// "-", a newline after a statement or comment, and the blanks before a
// statement or comment at the start of a line.
func templateText(raw, prev, next string) string {
	const space = " \t\r\n"
	block := func(tag string) bool { return tag[1] == '%' || tag[1] == '#' }
	lineStart := false
	switch {
	case strings.HasSuffix(prev[:len(prev)-2], "-"):
		raw = strings.TrimLeft(raw, space)
	case block(prev):
		for _, nl := range []string{"\r\n", "\n"} {
			if r, ok := strings.CutPrefix(raw, nl); ok {
				raw, lineStart = r, true
				break
			}
		}
	}
	switch {
	case strings.HasPrefix(next[2:], "-"):
		raw = strings.TrimRight(raw, space)
	case block(next) && !strings.HasPrefix(next[2:], "+"):
		i := strings.LastIndexByte(raw, '\n')
		if (i >= 0 || lineStart) && strings.Trim(raw[i+1:], " \t") == "" {
			raw = raw[:i+1]
		}
	}
	return raw
}

// stringLiterals returns the value of expr when it is Jinja string
// literals joined with + or ~ (see readLiteral); ok is false for any
// other expression.
func stringLiterals(expr string) (s string, ok bool) {
	var b strings.Builder
	rest := strings.TrimSpace(expr)
	for {
		v, n, ok := readLiteral(rest)
		if !ok {
			return "", false
		}
		b.WriteString(v)
		rest = strings.TrimSpace(rest[n:])
		if rest == "" {
			return b.String(), true
		}
		if rest[0] != '+' && rest[0] != '~' {
			return "", false
		}
		rest = strings.TrimSpace(rest[1:])
	}
}

// readLiteral reads the Jinja string literal that s starts with: its
// value, with the escapes \n, \t, \r, \\, \' and \", and its length in
// s; ok is false when s starts with none or it holds another escape.
func readLiteral(s string) (value string, n int, ok bool) {
	if s == "" || s[0] != '\'' && s[0] != '"' {
		return "", 0, false
	}
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		switch c := s[i]; {
		case c == s[0]:
			return b.String(), i + 1, true
		case c == '\\' && i+1 < len(s):
			i++
			switch e := s[i]; e {
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			case 'r':
				b.WriteByte('\r')
			case '\\', '\'', '"':
				b.WriteByte(e)
			default:
				return "", 0, false
			}
		default:
			b.WriteByte(c)
		}
	}
	return "", 0, false
}

// defaultSystem returns the text of a system turn that the chat template
// tmpl writes whole as one string literal,
// "<|im_start|>system\n...<|im_end|>", as Qwen2's and Qwen2.5's write
// theirs where the messages have no system turn (a turn of the messages
// is written from a variable, not a literal); "" when it writes none, or
// an empty one.
func defaultSystem(tmpl string) string {
	open := IMStartToken + RoleSystem + "\n"
	for _, m := range jinjaTag.FindAllStringSubmatchIndex(tmpl, -1) {
		if m[2] < 0 {
			continue
		}
		expr := tmpl[m[2]:m[3]]
		for i := 0; i < len(expr); i++ {
			v, n, ok := readLiteral(expr[i:])
			if !ok {
				continue
			}
			i += n - 1
			if text, ok := strings.CutPrefix(v, open); ok {
				if text, _, ok := strings.Cut(text, IMEndToken); ok && text != "" {
					return text
				}
			}
		}
	}
	return ""
}
