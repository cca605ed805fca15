package grader

import (
	"testing"
)

type math500Rec struct {
	Solution string `json:"solution"`
	Answer   string `json:"Answer"`
	ID       string `json:"unique_id"`
}

// TestMATH500SelfConsistency grades every MATH500 reference solution
// (which ends in \boxed{...}) against the dataset's own answer field: all
// must be judged correct. It also grades each solution against the next
// problem's answer, which must be judged incorrect whenever the two
// answers differ as normalized strings (a false-positive check).
func TestMATH500SelfConsistency(t *testing.T) {
	recs := readJSONL[math500Rec](t, sharedData(t, "math500/zai-org__glm-simple-evals/MATH500.jsonl"))
	fails, fps := 0, 0
	for i, r := range recs {
		v := Grade(r.Solution, r.Answer)
		if !v.Correct {
			fails++
			t.Errorf("%s: own answer %q judged wrong: extracted %q (%s)", r.ID, r.Answer, v.Extracted, v.Reason)
		}
		o := recs[(i+1)%len(recs)]
		if Equivalent(o.Answer, r.Answer) {
			continue // x=5 and 5 are the same answer
		}
		if w := Grade(r.Solution, o.Answer); w.Correct {
			fps++
			t.Errorf("%s: other answer %q judged equal to %q (%s)", r.ID, o.Answer, w.Extracted, w.Reason)
		}
	}
	t.Logf("MATH500: %d/%d own answers rejected, %d false positives", fails, len(recs), fps)
}

type gsm8kRec struct {
	Answer string `json:"answer"`
}

// TestGSM8KSelfConsistency grades every GSM8K reference solution (which
// ends in "#### N") against its own final number and against the next
// problem's number.
func TestGSM8KSelfConsistency(t *testing.T) {
	recs := readJSONL[gsm8kRec](t, sharedData(t, "gsm8k/openai__grade-school-math/test.jsonl"))
	fails, fps := 0, 0
	for i, r := range recs {
		gold := Config{}.ExtractGold(r.Answer)
		if v := Grade(r.Answer, gold); !v.Correct {
			fails++
			t.Errorf("record %d: own answer %q judged wrong: extracted %q (%s)", i, gold, v.Extracted, v.Reason)
		}
		other := Config{}.ExtractGold(recs[(i+1)%len(recs)].Answer)
		if !Equivalent(other, gold) && Grade(r.Answer, other).Correct {
			fps++
			t.Errorf("record %d: other answer %q judged equal", i, other)
		}
	}
	t.Logf("GSM8K: %d/%d own answers rejected, %d false positives", fails, len(recs), fps)
}
