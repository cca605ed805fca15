package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/spiral-rl/spiral/rl"
	"github.com/spiral-rl/spiral/rollout"
)

// TestCutCounterNote: eval's note counts the traces cut at
// --max-new-tokens, and apart from them those an engine cut before a
// padding id it sampled, which reached no limit (raising it would not
// help them); none cut, no note.
func TestCutCounterNote(t *testing.T) {
	traces := func(fs ...rollout.FinishReason) []rollout.TracedTrace {
		var out []rollout.TracedTrace
		for _, f := range fs {
			out = append(out, rollout.TracedTrace{Trace: rollout.Trace{Completion: rollout.Completion{Finish: f}}})
		}
		return out
	}
	for _, tc := range []struct {
		name     string
		finishes []rollout.FinishReason
		want     string
	}{
		{"none cut", []rollout.FinishReason{rollout.FinishStop, rollout.FinishStop}, ""},
		{"cut at the limit", []rollout.FinishReason{rollout.FinishStop, rollout.FinishLength, rollout.FinishLength},
			"spiral: note: 2 of the 3 traces were cut at --max-new-tokens 16; " + rl.RewardRule{}.CutTraces() + "\n"},
		{"cut before a padding id", []rollout.FinishReason{rollout.FinishStop, rollout.FinishPadding, rollout.FinishStop},
			"spiral: note: 1 of the 3 traces was cut before a token id past the tokenizer's that the engine sampled (one of the model's padding logits, not --max-new-tokens 16), and graded as a cut trace\n"},
		{"both", []rollout.FinishReason{rollout.FinishLength, rollout.FinishPadding, rollout.FinishPadding, rollout.FinishStop},
			"spiral: note: 1 of the 4 traces was cut at --max-new-tokens 16; " + rl.RewardRule{}.CutTraces() + "\n" +
				"spiral: note: 2 of the 4 traces were cut before a token id past the tokenizer's that the engine sampled (one of the model's padding logits, not --max-new-tokens 16), and graded as cut traces\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var c cutCounter
			require.NoError(t, c.write(traces(tc.finishes...)))
			var w strings.Builder
			c.note(&w, 16, rl.RewardRule{})
			require.Equal(t, tc.want, w.String())
		})
	}
}
