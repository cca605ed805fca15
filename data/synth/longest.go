package synth

import (
	"errors"
	"fmt"
	"maps"
	"slices"
)

// longestParts are the parts of a solve problem's longest aggregation
// example: the problem text, the longest candidate the example can hold
// and the longest completion it can take.
type longestParts struct{ problem, candidate, completion string }

// size is the length in bytes of an aggregation example of p with n
// candidates, less the templates' own text.
func (p longestParts) size(n int) int {
	return len(p.problem) + n*len(p.candidate) + len(p.completion)
}

// LongestAggregate returns the aggregation example of n candidates that
// is the longest in bytes of those SFTExamples can draw from any problem
// of the task, of either split: its problem's text, every candidate the
// longest that problem's examples can hold (an attempt at any guess
// aggregateSolve can draw, with any slip, or the check alone) and the
// completion the longest they can take (the worked solution, the
// confirmation, or an unread example's check of a guess), its prompt
// rendered by the task's templates. With a tokenizer of one token a
// character, as the embedded task's is, it is the longest in tokens too.
// Only the solve form has it.
func (t *Task) LongestAggregate(n int) (Example, error) {
	if t.cfg.Form != FormSolve {
		return Example{}, fmt.Errorf("synth: the longest aggregation example of the %s form is not known", t.cfg.Form)
	}
	if n < 1 {
		return Example{}, fmt.Errorf("synth: aggregation example with %d candidates, want at least 1", n)
	}
	parts := t.longest()
	if len(parts) == 0 {
		return Example{}, errors.New("synth: the task has no problem")
	}
	best := parts[0]
	for _, p := range parts[1:] {
		if p.size(n) > best.size(n) {
			best = p
		}
	}
	cands := make([]string, n)
	for i := range cands {
		cands[i] = best.candidate
	}
	prompt, err := t.tmpl.Aggregate(best.problem, cands)
	if err != nil {
		return Example{}, fmt.Errorf("synth: %w", err)
	}
	return Example{Kind: KindAggregate, Prompt: prompt, Problem: best.problem, Completion: best.completion, Candidates: cands}, nil
}

// longest returns, for each length of the longest candidate a problem's
// aggregation examples can hold, the parts of the problem with the
// longest problem text and completion besides (only those can be the
// longest example, for any number of candidates), computed once.
func (t *Task) longest() []longestParts {
	t.longestOnce.Do(func() {
		byCandidate := map[int]longestParts{}
		t.eachItem(func(it Item) {
			p := it.longestParts(t.cfg.MinOperand, t.cfg.MaxOperand)
			if q, ok := byCandidate[len(p.candidate)]; !ok || p.size(0) > q.size(0) {
				byCandidate[len(p.candidate)] = p
			}
		})
		for _, c := range slices.Sorted(maps.Keys(byCandidate)) {
			t.longestParts = append(t.longestParts, byCandidate[c])
		}
	})
	return t.longestParts
}

// eachItem calls fn with every problem Sample can draw, of either
// split: every count of operands, operand values, operators and, in the
// solve form, position of the unknown, less the expressions whose values
// could pass maxValue. The Item's Operands and Ops are fn's to read
// during the call only: the next call's reuse them.
func (t *Task) eachItem(fn func(Item)) {
	for n := t.cfg.MinOperands; n <= t.cfg.MaxOperands; n++ {
		operands := make([]int, n)
		ops := make([]byte, n-1)
		// digits counts through the operands (MinOperand up) and the
		// operators (indices into Ops), the last fastest.
		digits := make([]int, 2*n-1)
		for {
			for i := range operands {
				operands[i] = t.cfg.MinOperand + digits[i]
			}
			for i := range ops {
				ops[i] = t.cfg.Ops[digits[n+i]]
			}
			switch {
			case maxValueBound(ops, t.cfg.MaxOperand) > maxValue:
			case t.cfg.Form == FormSolve:
				for u := range n {
					fn(solveItem(operands, ops, u))
				}
			default:
				fn(build(operands, ops))
			}
			i := len(digits) - 1
			for ; i >= 0; i-- {
				base := len(t.cfg.Ops)
				if i < n {
					base = t.cfg.MaxOperand - t.cfg.MinOperand + 1
				}
				if digits[i]++; digits[i] < base {
					break
				}
				digits[i] = 0
			}
			if i < 0 {
				break
			}
		}
	}
}

// longestParts returns it's problem text, the longest candidate its
// aggregation examples can hold and the longest completion they can
// take, guesses ranging over lo..hi (aggregateSolve's wrongGuess draws
// within the operand range).
func (it Item) longestParts(lo, hi int) longestParts {
	p := longestParts{problem: it.Problem()}
	longer := func(s *string, c string) {
		if len(c) > len(*s) {
			*s = c
		}
	}
	steps, start := it.derivation()
	for g := lo; g <= hi; g++ {
		// The check alone: a short candidate and, as a completion, the
		// Confirmation or an unread example's.
		check := it.confirmationOf(g)
		longer(&p.candidate, check)
		longer(&p.completion, check)
		if g == it.Answer {
			text, _ := renderSteps(steps, -1, 0)
			longer(&p.candidate, text+check)
			longer(&p.completion, text+check) // the Solution
			continue
		}
		for slip := start; slip < len(steps); slip++ {
			longer(&p.candidate, it.derivationSlipped(steps, slip, g)+check)
		}
	}
	return p
}
