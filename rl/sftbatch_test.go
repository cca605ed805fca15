package rl

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/spiral-rl/spiral/data/synth"
	"github.com/spiral-rl/spiral/model"
	"github.com/spiral-rl/spiral/model/modeltest"
	"github.com/spiral-rl/spiral/model/tokenizer"
	"github.com/spiral-rl/spiral/rollout"
)

// sftFakePrompter renders turns as bytes: "U" text for a user turn, the
// text and 0 (end of turn) for an assistant turn.
type sftFakePrompter struct{}

func (sftFakePrompter) UserTurn(text string) []int32 { return trainerBytes("U" + text) }
func (sftFakePrompter) AssistantTurn(text string) []int32 {
	return append(trainerBytes(text), 0)
}
func (sftFakePrompter) Reply(reasoning, answer string) string { return reasoning + answer }
func (sftFakePrompter) Text(ids []int32) string               { return trainerFakePrompter{}.Text(ids) }

// TestSFTBatchPrefix checks that a check example's given prefix joins the
// prompt (no loss) and the completion holds only the rest of the reply.
func TestSFTBatchPrefix(t *testing.T) {
	got := sftBatch(sftFakePrompter{}, []synth.Example{
		{Kind: synth.KindSearch, Prompt: "p1", Completion: "c1"},
		{Kind: synth.KindCheck, Prompt: "p2", Prefix: "x=4. ", Completion: "4+1=5. "},
	})
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
// with no answer. A check example's given prefix stays in the prompt.
// On ChatML the example is the prompt, then the completion as it is.
func TestSFTExampleThinkingTemplate(t *testing.T) {
	const loop = "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}{% endfor %}"
	exs := []synth.Example{
		{Kind: synth.KindSearch, Prompt: "p1", Completion: `2+2=4. \boxed{4}`},
		{Kind: synth.KindCheck, Prompt: "p2", Prefix: "x=4. ", Completion: `4+1=5. \boxed{4}`},
		{Kind: synth.KindSearch, Prompt: "p3", Completion: "no answer"},
	}
	for _, tc := range []struct {
		name, gen   string
		prompts     []string
		completions []string
	}{
		{"thinking", "<|im_start|>assistant\\n<think>\\n",
			[]string{"<|im_start|>user\np1<|im_end|>\n<|im_start|>assistant\n<think>\n", "<|im_start|>user\np2<|im_end|>\n<|im_start|>assistant\n<think>\nx=4. ",
				"<|im_start|>user\np3<|im_end|>\n<|im_start|>assistant\n<think>\n"},
			[]string{"2+2=4.\n</think>\n\n\\boxed{4}<|im_end|>", "4+1=5.\n</think>\n\n\\boxed{4}<|im_end|>", "no answer\n</think>\n\n<|im_end|>"}},
		{"chatml", "<|im_start|>assistant\\n",
			[]string{"<|im_start|>user\np1<|im_end|>\n<|im_start|>assistant\n", "<|im_start|>user\np2<|im_end|>\n<|im_start|>assistant\nx=4. ",
				"<|im_start|>user\np3<|im_end|>\n<|im_start|>assistant\n"},
			[]string{"2+2=4. \\boxed{4}<|im_end|>", "4+1=5. \\boxed{4}<|im_end|>", "no answer<|im_end|>"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			data, err := tokenizer.BuildByteTokenizerJSON()
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(filepath.Join(dir, tokenizer.TokenizerFile), data, 0o644))
			require.NoError(t, os.WriteFile(filepath.Join(dir, tokenizer.TemplateFile), []byte(loop+"{% if add_generation_prompt %}{{ '"+tc.gen+"' }}{% endif %}"), 0o644))
			tok, err := tokenizer.Load(dir)
			require.NoError(t, err)
			defer tok.Close()
			require.Empty(t, tok.TemplateWarning())
			for i, e := range sftBatch(rollout.ChatPrompter{Tok: tok}, exs) {
				require.Equal(t, tc.prompts[i], tok.Decode(e.Prompt), "example %d", i)
				require.Equal(t, tc.completions[i], tok.Decode(e.Completion), "example %d", i)
				require.Equal(t, tok.IMEnd(), e.Completion[len(e.Completion)-1])
			}
		})
	}
}
