package rl

import (
	"fmt"
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

// TestNewJudgeAnswerCutShort: a trace cut at --max-new-tokens whose
// explicit answer runs up to the cut had not stated it: "The final
// answer is 1" cut there may have been going on to "18" (or "1.5"), so
// for gold 1 it earned a reward for a prefix of its answer, and "The
// answer is $1" is cut inside its math span. By default such a trace
// earns nothing and casts no vote; an answer followed by anything that
// ends it (a closed box, a sentence's end) still counts, and a trace that
// stopped by itself, or --reward-truncated, grades the same text as
// before.
func TestNewJudgeAnswerCutShort(t *testing.T) {
	for i, tc := range []struct {
		text   string
		rule   RewardRule
		finish rollout.FinishReason
		want   bool
		answer string
	}{
		{"x=5. The final answer is 1", RewardRule{}, rollout.FinishLength, false, ""},
		{"x=5. The answer is $1", RewardRule{}, rollout.FinishLength, false, ""},
		{"x=5. Answer: 1", RewardRule{Fallback: true}, rollout.FinishLength, false, ""},
		{"x=5. #### 1", RewardRule{}, rollout.FinishLength, false, ""},
		{`x=5. \boxed{1}`, RewardRule{}, rollout.FinishLength, true, "1"},
		{`x=5. \boxed{1} and then`, RewardRule{}, rollout.FinishLength, true, "1"},
		{"x=5. The final answer is 1. Check: 1*2=2", RewardRule{}, rollout.FinishLength, true, "1"},
		{"x=5. The final answer is 1\n\nCheck", RewardRule{}, rollout.FinishLength, true, "1"},
		{"x=5. The final answer is 1", RewardRule{}, rollout.FinishStop, true, "1"},
		{"x=5. The final answer is 1", RewardRule{Truncated: true}, rollout.FinishLength, true, "1"},
	} {
		t.Run(fmt.Sprintf("case %d", i), func(t *testing.T) {
			v := NewJudge(tc.rule).Judge(rollout.Trace{Completion: rollout.Completion{Finish: tc.finish}, Text: tc.text}, "1")
			require.Equal(t, tc.want, v.Correct, "%q %s %+v: %+v", tc.text, tc.finish, tc.rule, v)
			require.Equal(t, tc.answer, v.Answer, "%q %s %+v: %+v", tc.text, tc.finish, tc.rule, v)
			// An answer cut short was not stated, explicitly or not: the
			// trace counts as unboxed, and its record does not read
			// {"answer": "", "explicit": true}.
			require.Equal(t, tc.answer != "", v.Explicit, "%q %s %+v: %+v", tc.text, tc.finish, tc.rule, v)
		})
	}
}

// TestRewardRuleCutTraces: the hint that follows a count of traces cut at
// --max-new-tokens names flags that make such a trace earn. A cut trace
// without an explicit answer ("5*3=15. 7+15=22. 22-4=18.", gold 18) earns
// nothing under --reward-truncated alone, as by default: without
// --reward-fallback every trace needs an explicit answer, and the grader
// finds none in it, cut or not. So the default's hint, "grade cut traces
// with --reward-truncated", changed nothing when followed, and under
// --reward-truncated alone no hint was given at all.
func TestRewardRuleCutTraces(t *testing.T) {
	cut := rollout.Trace{Completion: rollout.Completion{Finish: rollout.FinishLength}, Text: "5*3=15. 7+15=22. 22-4=18."}
	for _, tc := range []struct {
		rule RewardRule
		earn bool
		hint string
	}{
		{RewardRule{}, false, "a cut trace earns nothing unless it had stated an explicit answer (raise --max-new-tokens, or grade every trace by its last number, cut ones too, with --reward-fallback --reward-truncated)"},
		{RewardRule{Truncated: true}, false, "a trace earns nothing without an explicit answer, which a cut trace may not have reached (raise --max-new-tokens, or grade every trace by its last number with --reward-fallback)"},
		{RewardRule{Fallback: true}, false, "a cut trace earns nothing unless it had stated an explicit answer (raise --max-new-tokens, or grade cut traces like the others with --reward-truncated)"},
		{RewardRule{Fallback: true, Truncated: true}, true, ""},
	} {
		require.Equal(t, tc.earn, NewJudge(tc.rule).Judge(cut, "18").Correct, "%+v", tc.rule)
		require.Equal(t, tc.hint, tc.rule.CutTraces(), "%+v", tc.rule)
	}
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
