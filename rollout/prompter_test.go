package rollout

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/spiral-rl/spiral/data"
	"github.com/spiral-rl/spiral/model/tokenizer"
)

// aggTestTemplates renders an aggregation prompt as "problem|cand1|...|".
func aggTestTemplates(t *testing.T) *data.Templates {
	t.Helper()
	tm, err := data.ParseTemplates("{{.Problem}}", "{{.Problem}}{{range .Candidates}}|{{.Text}}{{end}}|")
	require.NoError(t, err)
	return tm
}

// TestAggregationPromptCutKeepsWholeCharacters: a candidate capped by
// --candidate-tokens (or cut to fit the prompt limit) may start inside a
// multi-byte character; the bytes of that character left at the start
// must not reach the prompt as U+FFFD: the candidate's text is the suffix
// of its full text from the first whole character kept. Byte tokenizer:
// one token per UTF-8 byte, so every cap is exact.
func TestAggregationPromptCutKeepsWholeCharacters(t *testing.T) {
	tj, err := tokenizer.BuildByteTokenizerJSON()
	require.NoError(t, err)
	tok, err := tokenizer.FromBytes(tj)
	require.NoError(t, err)
	defer tok.Close()
	pr := ChatPrompter{Tok: tok, Templates: aggTestTemplates(t)}
	// "x=😀é": x, =, 4 bytes of 😀, 2 of é, then <|im_end|>.
	cand := append(tok.Encode("x=😀é"), tok.IMEnd())
	require.Len(t, cand, 9)
	for _, tc := range []struct {
		name string
		cand []int32
		cap  int
		want string // the candidate's text in the prompt
	}{
		{"no cap", cand, 0, "x=😀é"},
		{"cap at a character boundary", cand, 3, "é"},
		{"cap inside é", cand, 2, ""},
		{"cap inside 😀, one byte of it kept", cand, 4, "é"},
		{"cap inside 😀, three bytes of it kept", cand, 6, "é"},
		{"cap before 😀", cand, 7, "😀é"},
		{"a U+FFFD of the text itself is kept", append(tok.Encode("a\uFFFDb"), tok.IMEnd()), 3, "\uFFFDb"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prompt, fitted, err := aggregationPrompt(pr, "p", [][]int32{tc.cand}, tc.cap, 0)
			require.NoError(t, err)
			require.False(t, fitted)
			want := tokenizer.RenderChat([]tokenizer.Message{{Role: tokenizer.RoleUser, Content: "p|" + tc.want + "|"}}, true)
			require.Equal(t, want, tok.Decode(prompt))
		})
	}
	// Cut to fit a limit: "p|" + c bytes + "|" in the chat markup.
	base := len(pr.UserTurn("p||"))
	prompt, fitted, err := aggregationPrompt(pr, "p", [][]int32{cand}, 0, base+5)
	require.NoError(t, err)
	require.True(t, fitted)
	require.NotContains(t, tok.Decode(prompt), "\uFFFD", "cut to fit inside 😀")
	require.Contains(t, tok.Decode(prompt), "|é|")
}

// TestAggregationPromptCutQwen3: with the real Qwen3 tokenizer, every cap
// of candidates whose characters span several byte-level tokens (emoji,
// rare CJK and math symbols) puts a suffix of the candidate's text into
// the prompt, never a U+FFFD.
func TestAggregationPromptCutQwen3(t *testing.T) {
	dir := os.Getenv("SPIRAL_QWEN3_TOKENIZER_DIR")
	if dir == "" {
		t.Skip("SPIRAL_QWEN3_TOKENIZER_DIR is unset: run scripts/setup.sh and source ~/.cache/spiral/env.sh")
	}
	tok, err := tokenizer.Load(dir)
	require.NoError(t, err)
	defer tok.Close()
	pr := ChatPrompter{Tok: tok, Templates: aggTestTemplates(t)}
	for _, text := range []string{
		"emojis 👨‍👩‍👧 ≤ ≥ ∑ ∫ ℝ so $\\boxed{42}$",
		"𝔽𝕡 𝑥² ½ ⅓ ∞. Final: \\boxed{\\frac{1}{2}}",
		"计算 and 😀 🧮🫨 ⛩️ \\boxed{7}",
	} {
		t.Run(text, func(t *testing.T) {
			cand := append(tok.Encode(text), tok.IMEnd())
			for c := 1; c <= len(cand); c++ {
				prompt, _, err := aggregationPrompt(pr, "p", [][]int32{cand}, c, 0)
				require.NoError(t, err)
				user := tok.DecodeSkipSpecial(prompt)
				got, ok := strings.CutPrefix(strings.TrimSuffix(user, "|\nassistant\n"), "user\np|")
				require.True(t, ok, "%q", user)
				require.NotContains(t, got, "\uFFFD", "cap %d", c)
				require.True(t, strings.HasSuffix(text, got), "cap %d: %q is not a suffix of %q", c, got, text)
			}
		})
	}
}

// TestAggregationPromptFitsWhereATokenCostsMoreQwen3: the up-front check
// (fitContext) keeps a problem whose aggregation prompt with its K
// candidates empty, plus one token of each, fits the limit. With a BPE
// tokenizer a candidate cut to one token can cost the rendered prompt
// more: with the default template and Qwen3's tokenizer, the empty
// candidates' newlines merge ("\n\n\n" is one token) and a candidate's
// last token " x" splits them, 2 tokens a candidate. RSA stopped at step 1
// with "aggregation prompt of 135 tokens is 131 even with one token per
// candidate, over the 127-token limit" though the check had passed; the
// candidates are cut further, to no text, which fits wherever the check
// passed.
func TestAggregationPromptFitsWhereATokenCostsMoreQwen3(t *testing.T) {
	dir := os.Getenv("SPIRAL_QWEN3_TOKENIZER_DIR")
	if dir == "" {
		t.Skip("SPIRAL_QWEN3_TOKENIZER_DIR is unset: run scripts/setup.sh and source ~/.cache/spiral/env.sh")
	}
	tok, err := tokenizer.Load(dir)
	require.NoError(t, err)
	defer tok.Close()
	tm, err := data.LoadTemplates("", "")
	require.NoError(t, err)
	pr := ChatPrompter{Tok: tok, Templates: tm}
	const problem, k = "2+2?", 4
	empty, err := pr.AggregatePrompt(problem, make([]string, k))
	require.NoError(t, err)
	limit := len(empty) + k // the most the up-front check lets through
	one, err := pr.AggregatePrompt(problem, []string{" x", " x", " x", " x"})
	require.NoError(t, err)
	require.Equal(t, []int{123, 131}, []int{len(empty), len(one)}, "one token of each costs 2")

	gen := &fixedGen{outs: []Completion{{Tokens: append(tok.Encode("so x"), tok.IMEnd()), Finish: FinishStop}}}
	e := Evaluator{Gen: gen, Prompter: pr, Judge: evalJudge}
	res, err := e.RSA(context.Background(), []data.Problem{{ID: "a", Problem: problem, Answer: "4"}},
		RSAConfig{Population: k, SubsetSize: k, Steps: 1, PromptLimit: limit}, 1)
	require.NoError(t, err)
	require.Equal(t, k, res.Steps[1].FittedPrompts)
	for _, req := range gen.calls[1] {
		require.Equal(t, empty, req.Prompt, "candidates cut to no text")
	}

	// Where even that does not fit, the error says so.
	_, _, err = aggregationPrompt(pr, problem, [][]int32{tok.Encode("so x")}, 0, 10)
	require.EqualError(t, err, "aggregation prompt of 105 tokens is 102 even with every candidate cut to no text, over the 10-token limit")
}

// TestTemplateFailureNamesFileAndProblem: a template that passes the
// load's probe and fails on a real problem read
// `rollout: search prompt of problem "p7": rollout: search template:
// data: search template: template: ...`: the prefix twice, and the file
// unnamed. It says the file once, after the problem's id.
func TestTemplateFailureNamesFileAndProblem(t *testing.T) {
	tj, err := tokenizer.BuildByteTokenizerJSON()
	require.NoError(t, err)
	tok, err := tokenizer.FromBytes(tj)
	require.NoError(t, err)
	defer tok.Close()
	dir := t.TempDir()
	search, agg := filepath.Join(dir, "search.tmpl"), filepath.Join(dir, "agg.tmpl")
	// The probe problem is 9 bytes long, a real one 3: index 99 fails.
	require.NoError(t, os.WriteFile(search, []byte("{{.Problem}}{{if eq (len .Problem) 3}}{{index .Problem 99}}{{end}}"), 0o644))
	require.NoError(t, os.WriteFile(agg, []byte("{{.Problem}}{{range .Candidates}}{{.Text}}{{end}}{{if eq (len .Problem) 3}}{{index .Problem 99}}{{end}}"), 0o644))
	tm, err := data.LoadTemplates(search, agg)
	require.NoError(t, err)
	pr := ChatPrompter{Tok: tok, Templates: tm}
	p, err := NewPipeline(&pipeFakeGen{}, pr, PipelineConfig{N1: 2, K: 1, N: 2, N2: 1})
	require.NoError(t, err)
	_, _, err = p.Run(context.Background(), []data.Problem{{ID: "p7", Problem: "abc", Answer: "1"}}, 1, 0, nil)
	require.EqualError(t, err, `rollout: search prompt of problem "p7": data: search template `+search+
		`: template: search:1:40: executing "search" at <index .Problem 99>: error calling index: index out of range: 99`)

	_, err = pr.AggregatePrompt("abc", []string{"x"})
	require.EqualError(t, err, "data: aggregation template "+agg+
		`: template: aggregate:1:77: executing "aggregate" at <index .Problem 99>: error calling index: index out of range: 99`)
}
