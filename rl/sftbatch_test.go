package rl

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/spiral-rl/spiral/data/synth"
	"github.com/spiral-rl/spiral/model"
	"github.com/spiral-rl/spiral/model/modeltest"
)

// sftFakePrompter renders turns as bytes: "U" text for a user turn, the
// text and 0 (end of turn) for an assistant turn.
type sftFakePrompter struct{}

func (sftFakePrompter) UserTurn(text string) []int32 { return trainerBytes("U" + text) }
func (sftFakePrompter) AssistantTurn(text string) []int32 {
	return append(trainerBytes(text), 0)
}
func (sftFakePrompter) Text(ids []int32) string { return trainerFakePrompter{}.Text(ids) }

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
