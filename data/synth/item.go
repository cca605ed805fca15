package synth

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
)

// Ref is a step operand: a literal from the expression (Step < 0) or the
// result of an earlier step.
type Ref struct {
	Value int // the literal; unused when Step >= 0
	Step  int // index of the step whose result this is, or -1
}

// Step is one operation of a worked solution: A Op B = Result.
type Step struct {
	Op     byte
	A, B   Ref
	Result int
}

// Item is one problem with its worked solution.
type Item struct {
	// Expr is the expression, such as "7+5*3-4".
	Expr string
	// Operands and Ops are the expression's parts; len(Ops) ==
	// len(Operands)-1.
	Operands []int
	Ops      []byte
	// Steps is the worked solution in order; the last step's result is
	// the answer.
	Steps []Step
	// Answer is the value of Expr, or in a solve problem the value of x.
	Answer int
	// Unknown is the index of the operand written as "x" in a solve
	// problem ("Solve x*7+3=38."), -1 in a compute problem; Target is the
	// right-hand side of a solve problem, the value of the expression with
	// the true x (Steps compute it).
	Unknown, Target int
}

// Problem returns the problem text: "Compute <expr>." or, for a solve
// problem, "Solve <equation>.".
func (it Item) Problem() string {
	if it.Unknown >= 0 {
		return "Solve " + it.Expr + "."
	}
	return "Compute " + it.Expr + "."
}

// Solution returns the worked solution, such as
// "5*3=15. 7+15=22. 22-4=18. \boxed{18}", or for a solve problem the
// derivation of x and the check of it, such as
// "38-3=35. 35/7=5. x=5. 5*7=35. 35+3=38. 38-38=0. ok \boxed{5}".
func (it Item) Solution() string {
	if it.Unknown >= 0 {
		steps, _ := it.derivation()
		text, _ := renderSteps(steps, -1, 0)
		return text + it.Trial(it.Answer) + boxed(it.Answer)
	}
	s, ans := renderSteps(it.Steps, -1, 0)
	return s + boxed(ans)
}

// boxed returns "\boxed{v}".
func boxed(v int) string { return `\boxed{` + strconv.Itoa(v) + "}" }

// build turns operands and operators into an Item with its steps.
func build(operands []int, ops []byte) Item {
	var sb strings.Builder
	for i, v := range operands {
		if i > 0 {
			sb.WriteByte(ops[i-1])
		}
		sb.WriteString(strconv.Itoa(v))
	}
	it := Item{Expr: sb.String(), Operands: operands, Ops: ops, Unknown: -1}
	// Products first: each run of "*" becomes a chain of steps.
	var terms []Ref  // the additive terms
	var signs []byte // the operator before each term after the first
	cur := Ref{Value: operands[0], Step: -1}
	for i, op := range ops {
		next := Ref{Value: operands[i+1], Step: -1}
		if op == '*' {
			it.Steps = append(it.Steps, Step{Op: '*', A: cur, B: next})
			cur = Ref{Step: len(it.Steps) - 1}
			continue
		}
		terms = append(terms, cur)
		signs = append(signs, op)
		cur = next
	}
	terms = append(terms, cur)
	acc := terms[0]
	for i, sign := range signs {
		it.Steps = append(it.Steps, Step{Op: sign, A: acc, B: terms[i+1]})
		acc = Ref{Step: len(it.Steps) - 1}
	}
	if len(it.Steps) == 0 {
		// A single operand (not generated; Parse may see it): one
		// trivial step keeps every solution non-empty.
		it.Steps = append(it.Steps, Step{Op: '+', A: acc, B: Ref{Value: 0, Step: -1}})
	}
	vals := setResults(it.Steps)
	it.Answer = vals[len(vals)-1]
	return it
}

func apply(op byte, a, b int) int {
	switch op {
	case '+':
		return a + b
	case '-':
		return a - b
	case '*':
		return a * b
	case '/':
		return a / b
	}
	panic(fmt.Sprintf("synth: unknown operator %q", op))
}

// setResults computes every step's Result and returns the results.
func setResults(steps []Step) []int {
	vals := evalSteps(steps, -1, 0)
	for i := range steps {
		steps[i].Result = vals[i]
	}
	return vals
}

// evalSteps computes every step's result; the result of step override (if
// >= 0) is replaced by value, and later steps use it.
func evalSteps(steps []Step, override, value int) []int {
	vals := make([]int, len(steps))
	get := func(r Ref) int {
		if r.Step >= 0 {
			return vals[r.Step]
		}
		return r.Value
	}
	for i, s := range steps {
		vals[i] = apply(s.Op, get(s.A), get(s.B))
		if i == override {
			vals[i] = value
		}
	}
	return vals
}

// renderSteps writes the steps as "A op B=R. " sentences, with the result
// of step override replaced by value and carried through later steps. It
// returns the text and the last step's result.
func renderSteps(steps []Step, override, value int) (string, int) {
	vals := evalSteps(steps, override, value)
	get := func(r Ref) int {
		if r.Step >= 0 {
			return vals[r.Step]
		}
		return r.Value
	}
	b := make([]byte, 0, 16*len(steps))
	for i, s := range steps { // "A op B=C. ", written without fmt: LongestAggregate renders a million
		b = strconv.AppendInt(b, int64(get(s.A)), 10)
		b = append(b, s.Op)
		b = strconv.AppendInt(b, int64(get(s.B)), 10)
		b = append(b, '=')
		b = strconv.AppendInt(b, int64(vals[i]), 10)
		b = append(b, ". "...)
	}
	return string(b), vals[len(vals)-1]
}

// Mistake is a planted slip: the result of step Step is written as Value
// instead of the true result.
type Mistake struct {
	Step  int
	Value int
}

// maxMistakeTries bounds the search for a slip that changes the answer.
const maxMistakeTries = 100

// PlantMistake draws a slip of the kinds a learner makes: a result off by
// 1, 2 or 10, a result computed with another operator, or the last two
// digits swapped. The slip always changes the final answer, and a wrong
// product stays positive (so no "+-" appears in the text).
func (it Item) PlantMistake(r *rand.Rand) Mistake {
	for range maxMistakeTries {
		i := r.IntN(len(it.Steps))
		s := it.Steps[i]
		v := s.Result
		switch r.IntN(3) {
		case 0:
			d := []int{1, 2, 10}[r.IntN(3)]
			if r.IntN(2) == 0 {
				d = -d
			}
			v += d
		case 1:
			a, b := refValue(it.Steps, s.A), refValue(it.Steps, s.B)
			others := strings.ReplaceAll("+-*", string(s.Op), "")
			v = apply(others[r.IntN(len(others))], a, b)
		case 2:
			v = swapLastDigits(v)
		}
		if v == s.Result || (s.Op == '*' && v <= 0) {
			continue
		}
		if vals := evalSteps(it.Steps, i, v); vals[len(vals)-1] != it.Answer {
			return Mistake{Step: i, Value: v}
		}
	}
	// Fallback: the last step off by one always changes the answer.
	last := len(it.Steps) - 1
	return Mistake{Step: last, Value: it.Steps[last].Result + 1}
}

// WrongSolution renders the solution with mistake m carried through, and
// returns its (wrong) final answer.
func (it Item) WrongSolution(m Mistake) (string, int) {
	s, ans := renderSteps(it.Steps, m.Step, m.Value)
	return s + boxed(ans), ans
}

func refValue(steps []Step, r Ref) int {
	if r.Step >= 0 {
		return steps[r.Step].Result
	}
	return r.Value
}

// swapLastDigits swaps the last two decimal digits of v (keeping the sign);
// numbers below 10 are returned unchanged.
func swapLastDigits(v int) int {
	neg := v < 0
	if neg {
		v = -v
	}
	if v >= 10 {
		d0, d1 := v%10, v/10%10
		v = v - d0 - 10*d1 + d1 + 10*d0
	}
	if neg {
		return -v
	}
	return v
}
