package rollout

import "errors"

// Verdict is the judge's reading of one trace.
type Verdict struct {
	// Answer is the extracted answer ("" when none was found, which counts
	// as no vote in majorities).
	Answer string
	// Explicit is true when the answer was stated explicitly (in \boxed{}
	// or an explicit final-answer sentence), not taken from the trace's
	// last number.
	Explicit bool
	// Correct is the reward: the answer equals the gold answer under the
	// judge's rules.
	Correct bool
}

// GradeFunc grades one response text against a gold answer.
type GradeFunc func(response, gold string) Verdict

// Judge grades traces: it is the reward of every training step and the
// score of every evaluation, so that both read answers the same way. It is
// injected (rl.NewJudge adapts the grader) so that this package does not
// import the grader and tests can use simple fakes.
type Judge struct {
	// Grade extracts the answer and compares it with the gold answer.
	Grade GradeFunc
	// Equal clusters extracted answers for majority votes.
	Equal Equivalence
	// CreditTruncated grades a trace that was cut (FinishReason.Cut: at
	// the token limit, or before a padding id) like any other. When false
	// (the default), such a trace is correct only if it had stated its
	// answer explicitly before it was cut: an answer running up to the
	// cut, which the trace may have been going on writing, is not stated
	// (cutProbe).
	CreditTruncated bool
}

func (j Judge) validate() error {
	if j.Grade == nil || j.Equal == nil {
		return errors.New("rollout: judge needs both Grade and Equal")
	}
	return nil
}

// Judge returns the verdict on t against gold (see CreditTruncated). A
// cut trace that states no answer (none explicit, or one cut short)
// has none either (Answer "", Explicit false), as
// under the default rule, where the grader finds none in it: its
// fallback number would otherwise vote in majorities, and a cluster it
// headed would count as wrong even when its answer is the gold one.
func (j Judge) Judge(t Trace, gold string) Verdict {
	return j.judge(t, gold, func() string { return t.Text + cutProbe })
}

// JudgePrefix is Judge for t, the first tokens of a longer trace
// (BudgetCurve's cut at a budget), and next, which gives the longer
// trace's text one token further (called only when it is needed): knowing how the trace went on, it takes t's
// explicit answer to run up to the cut when next's answer differs
// (the "1" of "18"), rather than when cutProbe would change it.
func (j Judge) JudgePrefix(t Trace, gold string, next func() string) Verdict {
	return j.judge(t, gold, next)
}

// judge is Judge with longer, the text of t going on past its end, made
// only for a cut trace with an explicit answer: a cut trace whose answer
// longer changes had not stated it.
func (j Judge) judge(t Trace, gold string, longer func() string) Verdict {
	v := j.Grade(t.Text, gold)
	if t.Finish.Cut() && !j.CreditTruncated && (!v.Explicit || j.Grade(longer(), gold).Answer != v.Answer) {
		// No answer stated: neither a vote nor an explicit one (an
		// answer cut short counts as unboxed).
		v.Correct, v.Answer, v.Explicit = false, "", false
	}
	return v
}

// cutProbe is what Judge appends to the text of a trace cut at the token
// limit to tell whether its explicit answer ran up to the cut: an answer
// that the probe changes ("The final answer is 1" becomes 10, "The answer
// is $1" inside an open math span likewise) may have been cut short (it
// was going on to "18", or "1.5"), so the trace had not stated it; one
// that something ended (a closed box, a sentence's end) stays as it was.
const cutProbe = "0"

// JudgeAll sets the verdict of every trace of traces[i] against golds[i].
func (j Judge) JudgeAll(traces [][]Trace, golds []string) {
	for i := range traces {
		for k := range traces[i] {
			traces[i][k].Verdict = j.Judge(traces[i][k], golds[i])
		}
	}
}
