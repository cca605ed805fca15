package rollout

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestJudgeTruncation is the reward rule for traces cut at the token
// limit: by default such a trace is correct only when it had stated its
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
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := Judge{Grade: grade(tc.explicit), Equal: evalEqual, CreditTruncated: tc.creditTruncated}
			v := j.Judge(Trace{Completion: Completion{Finish: tc.finish}, Text: "5*3=15. 7+15=22. 22-4=18."}, "18")
			require.Equal(t, tc.want, v.Correct)
			require.Equal(t, tc.answer, v.Answer)
		})
	}
}
