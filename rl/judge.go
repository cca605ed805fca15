package rl

import (
	"github.com/spiral-rl/spiral/grader"
	"github.com/spiral-rl/spiral/rollout"
)

// RewardRule says which traces can earn a reward (--reward-fallback,
// --reward-truncated). The zero value is the default: an answer must be
// stated explicitly, and a trace cut at the token limit earns nothing
// unless it had already stated one (an answer running up to the cut is
// not stated: rollout.Judge).
type RewardRule struct {
	// Fallback accepts a response's last LaTeX span or number as its answer
	// when it states none explicitly (in \boxed{} or an answer sentence
	// such as "the final answer is 18", "Answer: 18" or "#### 18", see
	// grader.SourceSentence). Off by default: a truncated trace such as "5*3=15.
	// 7+15=22. 22-4=18." must not earn a reward for gold 18.
	Fallback bool `json:"fallback"`
	// Truncated grades a trace that hit the token limit like any other.
	Truncated bool `json:"truncated"`
}

// String describes the rule for reports ("explicit answers only;
// truncated traces need an explicit answer").
func (r RewardRule) String() string {
	s := "explicit answers only (\\boxed{} or a final-answer sentence)"
	if r.Fallback {
		s = "explicit answers, else the last number or LaTeX span"
	}
	if r.Truncated {
		return s + "; truncated traces graded like the others"
	}
	return s + "; a truncated trace earns nothing unless it had stated an explicit answer"
}

// CutTraces says what the rule makes of traces cut at the token limit
// when a cut trace without an explicit answer earns nothing ("" when it
// is graded by its last number), and which flags change that: the end
// of a line that counts such traces. --reward-truncated alone grades cut
// traces like the others, which without --reward-fallback need an
// explicit answer too, so it does not make them earn.
func (r RewardRule) CutTraces() string {
	switch {
	case r.Fallback && r.Truncated:
		return ""
	case r.Truncated:
		return "a trace earns nothing without an explicit answer, which a cut trace may not have reached (raise --max-new-tokens, or grade every trace by its last number with --reward-fallback)"
	case r.Fallback:
		return "a cut trace earns nothing unless it had stated an explicit answer (raise --max-new-tokens, or grade cut traces like the others with --reward-truncated)"
	}
	return "a cut trace earns nothing unless it had stated an explicit answer (raise --max-new-tokens, or grade every trace by its last number, cut ones too, with --reward-fallback --reward-truncated)"
}

// NewJudge adapts the grader to the rollout scaffolds once, for training
// and evaluation alike: grader.Config{NoFallback: !r.Fallback}.Grade
// decides correctness, grader.Equivalent clusters answers for majority
// votes, and r.Truncated decides truncated traces. An extracted answer
// that normalizes to nothing is no answer (Verdict.Answer ""), which
// does not vote.
func NewJudge(r RewardRule) rollout.Judge {
	cfg := grader.Config{NoFallback: !r.Fallback}
	return rollout.Judge{
		Grade: func(response, gold string) rollout.Verdict {
			v := cfg.Grade(response, gold)
			explicit := v.Source == grader.SourceBoxed || v.Source == grader.SourceSentence
			answer := v.Extracted
			if grader.Normalize(answer) == "" {
				// \boxed{\quad}, \boxed{.}: the grader compares such an
				// answer with nothing, itself included, so it would
				// vote in majorities as a cluster of its own.
				answer = ""
			}
			return rollout.Verdict{Answer: answer, Explicit: explicit, Correct: v.Correct}
		},
		Equal:           grader.Equivalent,
		CreditTruncated: r.Truncated,
	}
}
