package rollout

import (
	"github.com/spiral-rl/spiral/data"
	"github.com/spiral-rl/spiral/model/tokenizer"
)

// ChatPrompter renders prompts from text templates as one user turn of the
// model's chat template (ChatML for Qwen) with the generation prompt, and
// tokenizes them.
type ChatPrompter struct {
	Tok       *tokenizer.Tokenizer
	Templates *data.Templates
}

// UserTurn renders text as one user turn with the generation prompt.
func (p ChatPrompter) UserTurn(text string) []int32 {
	return p.Tok.EncodeChat([]tokenizer.Message{{Role: tokenizer.RoleUser, Content: text}}, true)
}

// AssistantTurn renders text as the assistant's reply: its tokens and
// the end-of-turn id, what a completion of a UserTurn prompt ends with.
func (p ChatPrompter) AssistantTurn(text string) []int32 {
	return append(p.Tok.Encode(text), p.Tok.IMEnd())
}

// Reply is the text of the assistant's reply, reasoning then answer,
// as the chat template writes it after UserTurn's generation prompt
// (tokenizer.Tokenizer.AssistantReply).
func (p ChatPrompter) Reply(reasoning, answer string) string {
	return p.Tok.AssistantReply(reasoning, answer)
}

// ReplyHead is what Reply writes before the reasoning
// (tokenizer.Tokenizer.ReplyHead: Qwen3's hybrid template's "<think>\n").
func (p ChatPrompter) ReplyHead() string { return p.Tok.ReplyHead() }

// SearchPrompt renders the search template for problem. Its error (a
// *data.TemplateError) names the template and its file.
func (p ChatPrompter) SearchPrompt(problem string) ([]int32, error) {
	text, err := p.Templates.Search(problem)
	if err != nil {
		return nil, err
	}
	return p.UserTurn(text), nil
}

// AggregatePrompt renders the aggregation template for problem and the
// candidate solutions. Its error (a *data.TemplateError) names the
// template and its file.
func (p ChatPrompter) AggregatePrompt(problem string, candidates []string) ([]int32, error) {
	text, err := p.Templates.Aggregate(problem, candidates)
	if err != nil {
		return nil, err
	}
	return p.UserTurn(text), nil
}

// Text decodes generated ids without special tokens (the end-of-turn id a
// completion ends with is dropped).
func (p ChatPrompter) Text(ids []int32) string { return p.Tok.DecodeSkipSpecial(ids) }
