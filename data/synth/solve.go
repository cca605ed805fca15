package synth

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/spiral-rl/spiral/data"
)

// The solve form is the embedded default's task because it separates
// finding an answer from recognizing one. A search trace derives x by
// undoing the equation from its right-hand side, writes the value it
// found, checks it by substituting it into the left side, compares the
// value it reaches with the target by subtracting it, and gives a
// verdict: "ok" when the difference is 0, else "no":
//
//	38-3=35. 35/7=5. x=5. 5*7=35. 35+3=38. 38-38=0. ok \boxed{5}
//	38-3=35. 35/7=4. x=4. 4*7=28. 28+3=31. 31-38=-7. no \boxed{4}
//
// (the second with a slip in its division). The derivation gives a tiny
// model problem-dependent competence, which RL can sharpen: without it,
// guessing x outright (inverting the expression in one token) stayed near
// chance for every problem, trivial ones included (measured; see the
// README), so RL had nothing to sharpen.
// A derivation's arithmetic slips are independent across samples, so
// candidates disagree, and a slip leads to a wrong x whose check fails:
// a reader of several candidates can beat every one of them and a
// majority vote by reading, taking a candidate whose check passed even
// when it is a minority. The verdict is the tiny model's way to read a
// check: with the target only at the end of the check, the 3-layer model
// learned to write the target rather than select the candidate that
// reaches it (measured; see the README). The comparison makes the verdict
// a local decision: without it, the model had to match the check's value
// against the target at the start of the prompt, and its verdicts carried
// no information (P(ok | right) 0.68, P(ok | wrong) 0.59, with 95% of its
// check steps right; measured, see the README); "0" or not is read off
// the step just before the verdict. An aggregation trace confirms a
// candidate whose check passed (Confirmation: that x and its check, no
// derivation) or, when none passed, derives x afresh as a search trace
// does; recursive self-aggregation feeds both back as candidates, so
// aggregation examples hold both forms.

// Shares of kinds of solve examples.
const (
	// nearGuessShare of wrong guesses are within 2 of the true x (the
	// rest are uniform over the operand range).
	nearGuessShare = 0.6
	// checkShare of solve search examples are check examples: the
	// derivation and the value it arrives at are given, the value
	// uniform over the operand range (with a slip in the derivation when
	// it is wrong), and the completion is its honest check. Without them
	// every check a model sees reaches the target, and it learns to write
	// the target rather than compute, so a reader could not tell a right
	// guess from a wrong one.
	checkShare = 0.5
	// shortCandidateShare of the candidates of solve aggregation examples
	// are in an aggregation trace's form, a check alone.
	shortCandidateShare = 0.5
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
// the steps of the expression with g in place of x, the comparison of
// their value v with Target, "v-Target=d. " ("v+|Target|=d. " when Target
// is negative, so no "--" is written), and the verdict "ok " when d is 0
// (exactly when g is the answer), else "no ", such as
// "x=4. 4*7=28. 28+3=31. 31-38=-7. no ".
func (it Item) Trial(g int) string {
	operands := slices.Clone(it.Operands)
	operands[it.Unknown] = g
	text, v := renderSteps(build(operands, it.Ops).Steps, -1, 0)
	verdict := "no "
	if v == it.Target {
		verdict = "ok "
	}
	residual := fmt.Sprintf("%d-%d=%d. ", v, it.Target, v-it.Target)
	if it.Target < 0 {
		residual = fmt.Sprintf("%d+%d=%d. ", v, -it.Target, v-it.Target)
	}
	return "x=" + strconv.Itoa(g) + ". " + text + residual + verdict
}

// CheckVerdict reads the verdict of a solve trace such as
// "x=4. 4*7=28. 28+3=31. 31-38=-7. no \boxed{4}": passed is true for "ok", false
// for "no"; found is false when the trace has neither (the last of them
// counts when it has several).
func CheckVerdict(trace string) (passed, found bool) {
	passed, _, found = VerdictAt(trace)
	return passed, found
}

// VerdictAt is CheckVerdict (the last of the whitespace-separated words
// "ok" and "no") with the offset in trace where the verdict's word
// starts, for a reader of what the trace wrote before it.
func VerdictAt(trace string) (passed bool, at int, found bool) {
	for end := len(trace); end > 0; {
		text := strings.TrimRightFunc(trace[:end], unicode.IsSpace)
		start := 0
		if i := strings.LastIndexFunc(text, unicode.IsSpace); i >= 0 {
			_, size := utf8.DecodeRuneInString(text[i:])
			start = i + size
		}
		switch text[start:] {
		case "ok":
			return true, start, true
		case "no":
			return false, start, true
		}
		end = start
	}
	return false, 0, false
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
// an attempt arriving at a wrong value (with probability SharedMistakeRate
// all wrong candidates share one), every check honest; with probability
// shortCandidateShare a candidate is in the form of an aggregation trace
// (the check and \boxed{} alone), as recursive self-aggregation feeds
// them. The completion is the Confirmation when a candidate is right (so
// its check passed), else the worked solution.
func (t *Task) aggregateSolve(r *rand.Rand, tm *data.Templates, it Item, n int) (Example, error) {
	ex := Example{Kind: KindAggregate, Problem: it.Problem(), Answer: strconv.Itoa(it.Answer)}
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
		candidate := it.Attempt(r, g)
		if r.Float64() < shortCandidateShare {
			candidate = it.confirmationOf(g)
		}
		ex.Candidates = append(ex.Candidates, candidate)
		ex.CandidateAnswers = append(ex.CandidateAnswers, strconv.Itoa(g))
	}
	ex.Completion = it.Solution()
	if ex.CorrectCandidates > 0 {
		ex.Completion = it.Confirmation()
	}
	p, err := tm.Aggregate(it.Problem(), ex.Candidates)
	if err != nil {
		return Example{}, fmt.Errorf("synth: %w", err)
	}
	ex.Prompt = p
	return ex, nil
}

// Confirmation is the aggregation trace that takes x from a candidate
// whose check passed and checks it again: the check of x and \boxed{x},
// such as "x=5. 5*7=35. 35+3=38. 38-38=0. ok \boxed{5}". It starts with
// the value taken, so the aggregator's choice is its first decision (a
// lookup of the "ok" candidates, whose lines end with their verdicts),
// not the continuation of a derivation at the step where candidates part,
// whose verdicts come later in their lines: taught to re-derive, the
// 3-layer model copied the last candidate (measured; see the README).
func (it Item) Confirmation() string { return it.confirmationOf(it.Answer) }

// confirmationOf is an aggregation trace's form with g taken: the check
// of g and \boxed{g}, whatever the check says (a candidate in that form
// may be wrong).
func (it Item) confirmationOf(g int) string { return it.Trial(g) + boxed(g) }

// checkExample is a check example of it: the reply starts with a given
// derivation arriving at g and "x=g. " (Prefix, g uniform over the operand
// range, the derivation slipping when g is wrong) and the completion
// checks g honestly and boxes it.
func (t *Task) checkExample(r *rand.Rand, tm *data.Templates, it Item) (Example, error) {
	p, err := tm.Search(it.Problem())
	if err != nil {
		return Example{}, fmt.Errorf("synth: %w", err)
	}
	g := t.cfg.MinOperand + r.IntN(t.cfg.MaxOperand-t.cfg.MinOperand+1)
	guess := "x=" + strconv.Itoa(g) + ". "
	prefix := it.slippedDerivation(r, g) + guess
	check := strings.TrimPrefix(it.Trial(g), guess)
	return Example{Kind: KindCheck, Prompt: p, Problem: it.Problem(), Prefix: prefix, Completion: check + boxed(g), Answer: strconv.Itoa(it.Answer)}, nil
}

// derivation returns the steps that solve a solve problem for x, in the
// order a learner isolates x: first the product of every other term with
// more than one factor and of x's coefficient (left to right), then the
// chain that undoes the other terms from the right-hand side, then the
// division by x's coefficient (when it has one). With x's term added,
// "x*7+3=38" gives "38-3=35. 35/7=5."; with x's term subtracted,
// "9-x*2=1" gives "9-1=8. 8/2=4.". The chain orders its steps so that
// every intermediate value after the first is positive, and never writes
// "+-" or "--". The chain is the tail of the steps from chainStart on:
// each chain step after the first takes the one before as its A.
func (it Item) derivation() (steps []Step, chainStart int) {
	// The additive terms of the left side, each a run of factors.
	type term struct {
		sign    byte  // '+' or '-'
		factors []int // operand indices
	}
	terms := []term{{sign: '+', factors: []int{0}}}
	for i, op := range it.Ops {
		if op == '*' {
			last := &terms[len(terms)-1]
			last.factors = append(last.factors, i+1)
			continue
		}
		terms = append(terms, term{sign: op, factors: []int{i + 1}})
	}
	// link writes the step a op b and returns its result.
	link := func(op byte, a, b Ref) Ref {
		steps = append(steps, Step{Op: op, A: a, B: b})
		return Ref{Step: len(steps) - 1}
	}
	// product returns the product of the factors other than x as a
	// reference, writing its steps; ok is false when there is none.
	product := func(factors []int) (ref Ref, ok bool) {
		for _, f := range factors {
			if f == it.Unknown {
				continue
			}
			next := Ref{Value: it.Operands[f], Step: -1}
			if ok {
				next = link('*', ref, next)
			}
			ref, ok = next, true
		}
		return ref, ok
	}
	var pos, neg []Ref // the other terms, by sign
	var coef Ref
	var hasCoef, xAdded bool
	for _, t := range terms {
		ref, ok := product(t.factors)
		switch {
		case slices.Contains(t.factors, it.Unknown):
			coef, hasCoef, xAdded = ref, ok, t.sign == '+'
		case t.sign == '+':
			pos = append(pos, ref)
		default:
			neg = append(neg, ref)
		}
	}
	chainStart = len(steps)
	target := Ref{Value: it.Target, Step: -1}
	var acc Ref
	if xAdded {
		// coef*x = target + (subtracted terms) - (added terms).
		acc = target
		for _, v := range neg {
			acc = link('+', acc, v)
		}
		for _, v := range pos {
			acc = link('-', acc, v)
		}
	} else {
		// coef*x = (added terms) - target - (other subtracted terms); x's
		// term is not the first, so an added term exists.
		acc = pos[0]
		for _, v := range pos[1:] {
			acc = link('+', acc, v)
		}
		if it.Target < 0 {
			acc = link('+', acc, Ref{Value: -it.Target, Step: -1})
		} else {
			acc = link('-', acc, target)
		}
		for _, v := range neg {
			acc = link('-', acc, v)
		}
	}
	if hasCoef {
		link('/', acc, coef)
	}
	setResults(steps)
	return steps, chainStart
}

// Attempt returns a whole solve trace that arrives at g: the derivation,
// the check of g with its verdict, and \boxed{g}. For the true x it is
// Solution; for another g the derivation carries one slip, drawn from r
// among the chain's steps, whose written result leads the later steps to
// g (they are computed right), as a learner's slip does.
func (it Item) Attempt(r *rand.Rand, g int) string {
	return it.slippedDerivation(r, g) + it.Trial(g) + boxed(g)
}

// slippedDerivation is the derivation text arriving at g: see Attempt.
func (it Item) slippedDerivation(r *rand.Rand, g int) string {
	steps, start := it.derivation()
	if g == it.Answer {
		text, _ := renderSteps(steps, -1, 0)
		return text
	}
	return it.derivationSlipped(steps, start+r.IntN(len(steps)-start), g)
}

// derivationSlipped is the derivation text (steps, it.derivation's)
// whose step slip slips so that it arrives at g.
func (it Item) derivationSlipped(steps []Step, slip, g int) string {
	// Walk back from the end: the value each chain step must have for
	// the last to be g.
	need := g
	for i := len(steps) - 1; i > slip; i-- {
		b := refValue(steps, steps[i].B)
		switch steps[i].Op {
		case '+':
			need -= b
		case '-':
			need += b
		case '/':
			need *= b
		}
	}
	text, _ := renderSteps(steps, slip, need)
	return text
}
