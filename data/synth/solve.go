package synth

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"

	"github.com/spiral-rl/spiral/data"
)

// The solve form is the embedded default's task because it separates
// finding an answer from recognizing one. Guessing x in "Solve x*7+3=38."
// means inverting the expression, which a tiny model gets right only part
// of the time and with spread-out guesses, so independent samples
// disagree. A search trace is one guess, its check, and a verdict: "ok"
// when the check reaches the target, else "no":
//
//	x=4. 4*7=28. 28+3=31. no \boxed{4}
//	x=5. 5*7=35. 35+3=38. ok \boxed{5}
//
// so a reader of several candidates can beat every one of them and a
// majority vote by reading: it takes a candidate whose check passed, even
// a minority one. The verdict is the tiny model's way to read a check:
// with the target only at the end of the check, the 3-layer model
// learned to write the target rather than select the candidate that
// reaches it (measured; see the README). An aggregation trace has the
// search trace's form, so recursive self-aggregation feeds candidates of
// the same shape at every step.

// Shares of kinds of solve examples.
const (
	// nearGuessShare of wrong guesses are within 2 of the true x (the
	// rest are uniform over the operand range).
	nearGuessShare = 0.6
	// checkShare of solve search examples are check examples: the guess
	// is given, uniform over the operand range, and the completion is its
	// honest check. Without them every check a model sees reaches the
	// target, and it learns to write the target rather than compute, so a
	// reader could not tell a right guess from a wrong one.
	checkShare = 0.5
)

// solveItem is the solve problem made from (operands, ops) with operand u
// as the unknown: Expr is the equation such as "x*7+3=38", Answer the
// true value of x and Target the right-hand side.
func solveItem(operands []int, ops []byte, u int) Item {
	it := build(operands, ops)
	var sb strings.Builder
	for i, v := range operands {
		if i > 0 {
			sb.WriteByte(ops[i-1])
		}
		if i == u {
			sb.WriteByte('x')
		} else {
			sb.WriteString(strconv.Itoa(v))
		}
	}
	fmt.Fprintf(&sb, "=%d", it.Answer)
	it.Expr = sb.String()
	it.Unknown, it.Target, it.Answer = u, it.Answer, operands[u]
	return it
}

// Trial returns the check of guess g for x in a solve problem: "x=g. ",
// the steps of the expression with g in place of x, and the verdict "ok "
// when the last result equals Target (exactly when g is the answer), else
// "no ", such as "x=4. 4*7=28. 28+3=31. no ".
func (it Item) Trial(g int) string {
	operands := slices.Clone(it.Operands)
	operands[it.Unknown] = g
	text, v := renderSteps(build(operands, it.Ops).Steps, -1, 0)
	verdict := "no "
	if v == it.Target {
		verdict = "ok "
	}
	return "x=" + strconv.Itoa(g) + ". " + text + verdict
}

// CheckVerdict reads the verdict of a solve trace such as
// "x=4. 4*7=28. 28+3=31. no \boxed{4}": passed is true for "ok", false
// for "no"; found is false when the trace has neither (the last of them
// counts when it has several).
func CheckVerdict(trace string) (passed, found bool) {
	words := strings.Fields(trace)
	for i := len(words) - 1; i >= 0; i-- {
		switch words[i] {
		case "ok":
			return true, true
		case "no":
			return false, true
		}
	}
	return false, false
}

// wrongGuess draws a value other than x from [lo, hi]: within 2 of x with
// probability nearGuessShare, else uniform. The range must hold at least
// two values.
func (it Item) wrongGuess(r *rand.Rand, lo, hi int) int {
	for {
		g := lo + r.IntN(hi-lo+1)
		if r.Float64() < nearGuessShare {
			g = it.Answer + []int{-2, -1, 1, 2}[r.IntN(4)]
		}
		if g != it.Answer && g >= lo && g <= hi {
			return g
		}
	}
}

// aggregateSolve is AggregateExample for the solve form: each of n
// candidates is the search trace of x with probability 1-MistakeRate, else
// of a wrong guess (with probability SharedMistakeRate all wrong
// candidates share one), every check honest; the completion is the worked
// solution, which copies a right candidate when there is one.
func (t *Task) aggregateSolve(r *rand.Rand, tm *data.Templates, it Item, n int) (Example, error) {
	ex := Example{Kind: KindAggregate, Completion: it.Solution(), Answer: strconv.Itoa(it.Answer)}
	shared := r.Float64() < t.cfg.SharedMistakeRate
	common := it.wrongGuess(r, t.cfg.MinOperand, t.cfg.MaxOperand)
	for range n {
		g := it.Answer
		switch {
		case r.Float64() >= t.cfg.MistakeRate:
			ex.CorrectCandidates++
		case shared:
			g = common
		default:
			g = it.wrongGuess(r, t.cfg.MinOperand, t.cfg.MaxOperand)
		}
		ex.Candidates = append(ex.Candidates, it.Trial(g)+boxed(g))
		ex.CandidateAnswers = append(ex.CandidateAnswers, strconv.Itoa(g))
	}
	p, err := tm.Aggregate(it.Problem(), ex.Candidates)
	if err != nil {
		return Example{}, fmt.Errorf("synth: %w", err)
	}
	ex.Prompt = p
	return ex, nil
}

// checkExample is a check example of it: the reply starts with a given
// guess "x=g. " (Prefix, g uniform over the operand range) and the
// completion checks it honestly and boxes g.
func (t *Task) checkExample(r *rand.Rand, tm *data.Templates, it Item) (Example, error) {
	p, err := tm.Search(it.Problem())
	if err != nil {
		return Example{}, fmt.Errorf("synth: %w", err)
	}
	g := t.cfg.MinOperand + r.IntN(t.cfg.MaxOperand-t.cfg.MinOperand+1)
	prefix := "x=" + strconv.Itoa(g) + ". "
	check := strings.TrimPrefix(it.Trial(g), prefix)
	return Example{Kind: KindCheck, Prompt: p, Prefix: prefix, Completion: check + boxed(g), Answer: strconv.Itoa(it.Answer)}, nil
}
