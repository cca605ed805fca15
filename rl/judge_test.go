package rl

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/spiral-rl/spiral/rollout"
)

// TestNewJudgeRewardRules: the truncated trace of issue 10 ("5*3=15.
// 7+15=22. 22-4=18.", no box) earns nothing for gold 18 by default; with
// --reward-fallback a finished trace like it is graded by its last number;
// a trace cut at the limit needs an explicit answer unless
// --reward-truncated.
func TestNewJudgeRewardRules(t *testing.T) {
	unboxed := "5*3=15. 7+15=22. 22-4=18."
	boxed := `5*3=15. 7+15=22. 22-4=18, so \boxed{18}.`
	sentence := "5*3=15. 7+15=22. 22-4=18. The final answer is 18."
	for _, tc := range []struct {
		name   string
		rule   RewardRule
		text   string
		finish rollout.FinishReason
		want   bool
	}{
		{"default: unboxed, finished", RewardRule{}, unboxed, rollout.FinishStop, false},
		{"default: unboxed, truncated", RewardRule{}, unboxed, rollout.FinishLength, false},
		{"default: boxed", RewardRule{}, boxed, rollout.FinishStop, true},
		{"default: boxed then cut", RewardRule{}, boxed, rollout.FinishLength, true},
		{"default: answer sentence", RewardRule{}, sentence, rollout.FinishStop, true},
		{"fallback: unboxed, finished", RewardRule{Fallback: true}, unboxed, rollout.FinishStop, true},
		{"fallback: unboxed, truncated", RewardRule{Fallback: true}, unboxed, rollout.FinishLength, false},
		{"fallback and truncated credit", RewardRule{Fallback: true, Truncated: true}, unboxed, rollout.FinishLength, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := NewJudge(tc.rule)
			v := j.Judge(rollout.Trace{Completion: rollout.Completion{Finish: tc.finish}, Text: tc.text}, "18")
			require.Equal(t, tc.want, v.Correct, "%+v", v)
		})
	}
	require.Contains(t, RewardRule{}.String(), "explicit answers only")
}

// TestNewJudgeEmptyAnswersDoNotVote: a boxed answer that the grader
// normalizes to nothing (\quad, a lone ".", "\$") is no answer: the
// grader compares it with nothing, itself included, so it formed a
// cluster of its own in every majority vote and, seen first, won a tie:
// the vote of "so \boxed{.}" and "so \boxed{5}" for gold 5 went to "."
// and counted as wrong. Its Answer is "", which does not vote, as the
// rollout.Verdict documents.
func TestNewJudgeEmptyAnswersDoNotVote(t *testing.T) {
	j := NewJudge(RewardRule{})
	for _, tc := range []struct {
		text, answer string
	}{
		{`so \boxed{\quad}`, ""},
		{`so \boxed{.}`, ""},
		{`so \boxed{\$}`, ""},
		{`so \boxed{\%}`, `\%`}, // "%": an answer, equal to itself
		{`so \boxed{5}`, "5"},
	} {
		v := j.Judge(rollout.Trace{Completion: rollout.Completion{Finish: rollout.FinishStop}, Text: tc.text}, "5")
		require.Equal(t, tc.answer, v.Answer, "%s: %+v", tc.text, v)
	}
	traces := [][]rollout.Trace{{{Text: `so \boxed{.}`}, {Text: `so \boxed{5}`}}}
	j.JudgeAll(traces, []string{"5"})
	answers := []string{traces[0][0].Verdict.Answer, traces[0][1].Verdict.Answer}
	require.Equal(t, rollout.Vote{Winner: 1, Votes: 1}, rollout.MajorityVote(answers, []int{0, 1}, j.Equal))
}
