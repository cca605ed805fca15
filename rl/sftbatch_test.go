package rl

import (
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/spiral-rl/spiral/data"
	"github.com/spiral-rl/spiral/data/synth"
	"github.com/spiral-rl/spiral/model"
	"github.com/spiral-rl/spiral/model/modeltest"
	"github.com/spiral-rl/spiral/model/tokenizer"
	"github.com/spiral-rl/spiral/rollout"
)

// sftFakePrompter renders turns as bytes: "U" text for a user turn (an
// aggregation prompt's text the synthetic task's template), the text and
// 0 (end of turn) for an assistant turn, which Text drops.
type sftFakePrompter struct{}

func (sftFakePrompter) UserTurn(text string) []int32 { return trainerBytes("U" + text) }
func (p sftFakePrompter) AggregatePrompt(problem string, cands []string) ([]int32, error) {
	text, err := synth.Templates().Aggregate(problem, cands)
	return p.UserTurn(text), err
}
func (sftFakePrompter) AssistantTurn(text string) []int32 {
	return append(trainerBytes(text), 0)
}
func (sftFakePrompter) Reply(reasoning, answer string) string { return reasoning + answer }
func (sftFakePrompter) ReplyHead() string                     { return "" }
func (sftFakePrompter) Text(ids []int32) string {
	return strings.ReplaceAll(trainerFakePrompter{}.Text(ids), "\x00", "")
}

// TestSFTBatchPrefix checks that a check example's given prefix joins the
// prompt (no loss) and the completion holds only the rest of the reply.
func TestSFTBatchPrefix(t *testing.T) {
	got, err := sftBatch(sftFakePrompter{}, []synth.Example{
		{Kind: synth.KindSearch, Prompt: "p1", Completion: "c1"},
		{Kind: synth.KindCheck, Prompt: "p2", Prefix: "x=4. ", Completion: "4+1=5. "},
	})
	require.NoError(t, err)
	require.Equal(t, []Example{
		{Prompt: trainerBytes("Up1"), Completion: append(trainerBytes("c1"), 0)},
		{Prompt: trainerBytes("Up2x=4. "), Completion: append(trainerBytes("4+1=5. "), 0)},
	}, got)
}

// TestSynthAccuracyReleasesCache: SynthAccuracy's greedy evaluation
// hands its sampler's KV cache back when it returns. On the device layer
// (always so on CUDA; here its CPU twin) a cache is held by the LM until
// it closes, so each evaluation of an sft run (every --eval-every steps)
// used to leave one more cache in device memory for the rest of the run.
func TestSynthAccuracyReleasesCache(t *testing.T) {
	rt := modeltest.Runtime(t)
	src := sftModelDir(t)
	pol, err := model.OpenPolicy(context.Background(), rt, filepath.Join(src, "model.onnx"), t.TempDir(), model.PolicyOptions{Resident: true})
	require.NoError(t, err)
	defer pol.Close()
	task, err := synth.Embedded()
	require.NoError(t, err)
	p := SFTParts{Policy: pol, Task: task, Prompter: sftFakePrompter{}, StopIDs: []int32{0}, VocabLimit: 256, Judge: NewJudge(RewardRule{})}
	cfg := DefaultSFTConfig()
	cfg.EvalProblems, cfg.Seed = 2, 1
	var live []int64
	for range 3 {
		_, err := SynthAccuracy(context.Background(), p, cfg)
		require.NoError(t, err)
		live = append(live, rt.LiveValues())
	}
	require.Equal(t, live[1], live[2], "tensors left live by an evaluation (the first opens the sessions)")
}

// TestSFTExampleThinkingTemplate: on a chat template whose generation
// prompt opens a <think> block (Qwen3-*-Thinking-2507's), which the
// prompts end with, an example's reply closes the block before its
// final \boxed{} answer, as the template writes an assistant turn
// (tokenizer's TestAssistantReplyGolden): sft trained completions that
// never closed it, a format the template's parsers read as reasoning
// with no answer. On one that opens the block in the assistant's turn
// itself (Qwen3's hybrid template), the reply opens it too: sft's
// completions were the reasoning and answer with no block. A check
// example's given prefix stays in the prompt, after the block's
// opening. On ChatML the example is the prompt, then the completion as
// it is.
func TestSFTExampleThinkingTemplate(t *testing.T) {
	exs := []synth.Example{
		{Kind: synth.KindSearch, Prompt: "p1", Completion: `2+2=4. \boxed{4}`},
		{Kind: synth.KindCheck, Prompt: "p2", Prefix: "x=4. ", Completion: `4+1=5. \boxed{4}`},
		{Kind: synth.KindSearch, Prompt: "p3", Completion: "no answer"},
	}
	for _, tc := range []struct {
		name, template string
		prompts        []string
		completions    []string
	}{
		{"thinking", chatLoop + genBlock("<|im_start|>assistant\\n<think>\\n"),
			[]string{"<|im_start|>user\np1<|im_end|>\n<|im_start|>assistant\n<think>\n", "<|im_start|>user\np2<|im_end|>\n<|im_start|>assistant\n<think>\nx=4. ",
				"<|im_start|>user\np3<|im_end|>\n<|im_start|>assistant\n<think>\n"},
			[]string{"2+2=4.\n</think>\n\n\\boxed{4}<|im_end|>", "4+1=5.\n</think>\n\n\\boxed{4}<|im_end|>", "no answer\n</think>\n\n<|im_end|>"}},
		{"hybrid", hybridLoop + genBlock("<|im_start|>assistant\\n"),
			[]string{"<|im_start|>user\np1<|im_end|>\n<|im_start|>assistant\n", "<|im_start|>user\np2<|im_end|>\n<|im_start|>assistant\n<think>\nx=4. ",
				"<|im_start|>user\np3<|im_end|>\n<|im_start|>assistant\n"},
			[]string{"<think>\n2+2=4.\n</think>\n\n\\boxed{4}<|im_end|>", "4+1=5.\n</think>\n\n\\boxed{4}<|im_end|>", "<think>\nno answer\n</think>\n\n<|im_end|>"}},
		{"chatml", chatLoop + genBlock("<|im_start|>assistant\\n"),
			[]string{"<|im_start|>user\np1<|im_end|>\n<|im_start|>assistant\n", "<|im_start|>user\np2<|im_end|>\n<|im_start|>assistant\nx=4. ",
				"<|im_start|>user\np3<|im_end|>\n<|im_start|>assistant\n"},
			[]string{"2+2=4. \\boxed{4}<|im_end|>", "4+1=5. \\boxed{4}<|im_end|>", "no answer<|im_end|>"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tok := chatTokenizer(t, tc.template)
			batch, err := sftBatch(rollout.ChatPrompter{Tok: tok}, exs)
			require.NoError(t, err)
			for i, e := range batch {
				require.Equal(t, tc.prompts[i], tok.Decode(e.Prompt), "example %d", i)
				require.Equal(t, tc.completions[i], tok.Decode(e.Completion), "example %d", i)
				require.Equal(t, tok.IMEnd(), e.Completion[len(e.Completion)-1])
			}
		})
	}
}

// replayGen answers its first Generate call (the search traces) with
// search, request i with search[i], and records the prompts of the calls
// after it (the aggregation prompts), answering them with "x".
type replayGen struct {
	search    [][]int32
	calls     int
	aggregate [][]int32
}

func (g *replayGen) Generate(_ context.Context, reqs []rollout.Request, _ rollout.Progress) ([]rollout.Completion, rollout.Stats, error) {
	g.calls++
	out := make([]rollout.Completion, len(reqs))
	for i, r := range reqs {
		out[i] = rollout.Completion{Tokens: trainerBytes("x"), Finish: rollout.FinishStop}
		if g.calls == 1 {
			out[i].Tokens = g.search[i]
		} else {
			g.aggregate = append(g.aggregate, r.Prompt)
		}
	}
	return out, rollout.Stats{}, nil
}

// TestSFTAggregateCandidatesAsRollouts: an aggregation example's prompt
// carries its candidates as a rollout's aggregation prompt carries the
// model's own traces: a pipeline whose search traces are the completions
// sft trains for those candidates (SFTExample of each as a search
// example) renders the very prompt SFTExample gives the example. On a
// template whose generation prompt opens <think> those traces close the
// block before their \boxed{} answer, and the prompt carries them so;
// sft's prompts carried the raw solutions instead, which the model never
// reads in training or evaluation.
func TestSFTAggregateCandidatesAsRollouts(t *testing.T) {
	task, err := synth.Embedded()
	require.NoError(t, err)
	it, err := task.Sample(rand.New(rand.NewPCG(3, 3)), synth.Train)
	require.NoError(t, err)
	for _, tc := range []struct {
		name, template string
		think          bool // the rollout's candidates hold </think>
	}{
		{"thinking", chatLoop + genBlock("<|im_start|>assistant\\n<think>\\n"), true},
		{"hybrid", hybridLoop + genBlock("<|im_start|>assistant\\n"), true},
		{"chatml", chatLoop + genBlock("<|im_start|>assistant\\n"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tok := chatTokenizer(t, tc.template)
			pr := rollout.ChatPrompter{Tok: tok, Templates: synth.Templates()}
			ex, err := task.AggregateExample(rand.New(rand.NewPCG(4, 4)), nil, it, 3)
			require.NoError(t, err)
			gen := &replayGen{}
			for _, c := range ex.Candidates {
				s, err := SFTExample(pr, synth.Example{Kind: synth.KindSearch, Prompt: "p", Completion: c})
				require.NoError(t, err)
				gen.search = append(gen.search, s.Completion)
			}
			pipe, err := rollout.NewPipeline(gen, pr, rollout.PipelineConfig{N1: 3, K: 1, N: 3, N2: 1})
			require.NoError(t, err)
			groups, _, err := pipe.Run(context.Background(), []data.Problem{{ID: "p", Problem: it.Problem(), Answer: ex.Answer}}, 1, 0, nil)
			require.NoError(t, err)
			require.Len(t, gen.aggregate, 1)
			// The example of the candidates in the subset's order.
			ordered := ex
			ordered.Candidates = nil
			for _, m := range groups[0].Rounds[0].Subsets[0] {
				ordered.Candidates = append(ordered.Candidates, ex.Candidates[m])
			}
			ordered.Prompt, err = synth.Templates().Aggregate(it.Problem(), ordered.Candidates)
			require.NoError(t, err)
			sft, err := SFTExample(pr, ordered)
			require.NoError(t, err)
			got := tok.Decode(sft.Prompt)
			require.Equal(t, tok.Decode(gen.aggregate[0]), got)
			require.Equal(t, tc.think, strings.Contains(got, "\n</think>\n\n\\boxed{"), got)
		})
	}
}

// Chat templates of the byte tokenizer's tests: ChatML's message loop,
// and one that writes an assistant turn as Qwen3's hybrid template writes
// the last, its reasoning in a <think> block it opens.
const (
	chatLoop   = "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}{% endfor %}"
	hybridLoop = "{% for message in messages %}{% if message.role == 'assistant' %}" +
		"{{ '<|im_start|>' + message.role + '\\n<think>\\n' + message.reasoning_content + '\\n</think>\\n\\n' + message.content + '<|im_end|>\\n' }}" +
		"{% else %}{{ '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>\\n' }}{% endif %}{% endfor %}"
)

// genBlock is a chat template's generation prompt block writing gen (a
// Jinja string literal's text).
func genBlock(gen string) string {
	return "{% if add_generation_prompt %}{{ '" + gen + "' }}{% endif %}"
}

// chatTokenizer loads the byte tokenizer with the chat template tmpl.
func chatTokenizer(t *testing.T, tmpl string) *tokenizer.Tokenizer {
	t.Helper()
	dir := t.TempDir()
	b, err := tokenizer.BuildByteTokenizerJSON()
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, tokenizer.TokenizerFile), b, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, tokenizer.TemplateFile), []byte(tmpl), 0o644))
	tok, err := tokenizer.Load(dir)
	require.NoError(t, err)
	t.Cleanup(func() { tok.Close() })
	require.Empty(t, tok.TemplateWarning())
	return tok
}
