package rl

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/spiral-rl/spiral/data/synth"
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
