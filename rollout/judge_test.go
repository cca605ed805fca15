package rollout

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestJudgeTruncation is the reward rule for traces cut at the token
// limit (or before a padding id): by default such a trace is correct only when it had stated its
// answer explicitly; with CreditTruncated it is graded like any other. A
// trace that stopped by itself is graded as Grade says either way. A cut
// trace that earns nothing has no answer, so that it casts no vote.
func TestJudgeTruncation(t *testing.T) {
	grade := func(explicit bool) GradeFunc {
		return func(string, string) Verdict { return Verdict{Answer: "18", Explicit: explicit, Correct: true} }
	}
	for _, tc := range []struct {
		name            string
		finish          FinishReason
		explicit        bool
		creditTruncated bool
		want            bool
		answer          string
	}{
		{"stopped, explicit", FinishStop, true, false, true, "18"},
		{"stopped, last number only", FinishStop, false, false, true, "18"}, // the grade function's fallback decides
		{"truncated, explicit answer already given", FinishLength, true, false, true, "18"},
		{"truncated, no explicit answer", FinishLength, false, false, false, ""},
		{"truncated, no explicit answer, credited", FinishLength, false, true, true, "18"},
		// A trace cut before a padding id an engine sampled is cut as
		// well, though at no token limit: graded alike.
		{"cut before padding, explicit answer already given", FinishPadding, true, false, true, "18"},
		{"cut before padding, no explicit answer", FinishPadding, false, false, false, ""},
		{"cut before padding, no explicit answer, credited", FinishPadding, false, true, true, "18"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := Judge{Grade: grade(tc.explicit), Equal: evalEqual, CreditTruncated: tc.creditTruncated}
			v := j.Judge(Trace{Completion: Completion{Finish: tc.finish}, Text: "5*3=15. 7+15=22. 22-4=18."}, "18")
			require.Equal(t, tc.want, v.Correct)
			require.Equal(t, tc.answer, v.Answer)
		})
	}
}
