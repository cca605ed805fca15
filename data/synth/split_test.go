package synth

import (
	"fmt"
	"iter"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCanonicalExpr(t *testing.T) {
	cases := []struct {
		a, b string
		same bool
	}{
		{"x+3*2=8", "2*3+x=8", true},
		{"x+3*2=8", "3*2+x=8", true},
		{"x-3+2*5=9", "5*2-3+x=9", true},
		{"2*x*3=12", "x*3*2=12", true},
		{"7+5*3-4", "5*3-4+7", true},
		{"4-x=2", "4-x=2", true},
		{"x-3+2=1", "x-2+3=1", false}, // the signs stay with their terms
		{"x+6=8", "x+2*3=8", false},   // the same value, another problem
		{"x*7+3=38", "7*x+3=38", true},
		{"x*7+3=38", "x*7+3=39", false},
		{"2*3", "2*3=6", false}, // an expression is not its equation
		{"12+1", "1+12", true},
		{"12*1", "1*21", false},
	}
	for _, tc := range cases {
		t.Run(tc.a+" "+tc.b, func(t *testing.T) {
			require.Equal(t, tc.same, CanonicalExpr(tc.a) == CanonicalExpr(tc.b), "%q %q", CanonicalExpr(tc.a), CanonicalExpr(tc.b))
		})
	}
	for _, s := range []string{"", "=", "+", "-*-", "x==", "1+-2"} {
		CanonicalExpr(s) // no panic outside the grammar
	}
}

// reorderAs writes its equation (or expression) with its additive
// terms and each term's factors shuffled by r: the same problem in
// another order, written without CanonicalExpr. A term with a "+" comes
// first when plusFirst; else the terms are in any order, a subtracted
// term first written with a leading "-" ("-3+x=5" for "x-3=5").
func reorderAs(it Item, r *rand.Rand, plusFirst bool) string {
	type term struct {
		sign    byte
		factors []string
	}
	terms := []term{{sign: '+'}}
	for i, v := range it.Operands {
		f := strconv.Itoa(v)
		if i == it.Unknown {
			f = "x"
		}
		if i > 0 && it.Ops[i-1] != '*' {
			terms = append(terms, term{sign: it.Ops[i-1]})
		}
		last := &terms[len(terms)-1]
		last.factors = append(last.factors, f)
	}
	r.Shuffle(len(terms), func(i, j int) { terms[i], terms[j] = terms[j], terms[i] })
	for i, tm := range terms {
		if plusFirst && tm.sign == '+' {
			terms[0], terms[i] = terms[i], terms[0]
			break
		}
	}
	var sb strings.Builder
	for i, tm := range terms {
		if i > 0 || tm.sign == '-' {
			sb.WriteByte(tm.sign)
		}
		r.Shuffle(len(tm.factors), func(i, j int) { tm.factors[i], tm.factors[j] = tm.factors[j], tm.factors[i] })
		sb.WriteString(strings.Join(tm.factors, "*"))
	}
	if it.Unknown >= 0 {
		sb.WriteString("=" + strconv.Itoa(it.Target))
	}
	return sb.String()
}

// checkReorderings draws n problems of each split of three
// configurations and 8 reorderings of each (reorderAs with plusFirst),
// and checks that each reordering has its problem's value, canonical form
// and split, and that the canonical form is its own. It returns, for each
// configuration, how many of its reorderings hit holds for.
func checkReorderings(t *testing.T, n int, pcg uint64, plusFirst bool, hit func(e string, it Item) bool) []int {
	t.Helper()
	var hits []int
	for _, cfg := range []Config{{}, EmbeddedConfig, solveConfigs[1].cfg} {
		task, err := New(cfg, 3)
		require.NoError(t, err)
		r := rand.New(rand.NewPCG(pcg, pcg+1))
		hits = append(hits, 0)
		for _, s := range []Split{Train, Test} {
			items, err := task.Problems(s, n, 1)
			require.NoError(t, err)
			for _, it := range items {
				c := CanonicalExpr(it.Expr)
				require.Equal(t, c, CanonicalExpr(c), "the canonical form of %q", it.Expr)
				require.Equal(t, s, task.SplitOf(c), "the canonical form of %q", it.Expr)
				for range 8 {
					e := reorderAs(it, r, plusFirst)
					if it.Unknown < 0 {
						require.Equal(t, it.Answer, evalGo(t, e), "%q from %q", e, it.Expr)
					}
					require.Equal(t, c, CanonicalExpr(e), "%q from %q", e, it.Expr)
					require.Equal(t, s, task.SplitOf(e), "%q from %q", e, it.Expr)
					if hit(e, it) {
						hits[len(hits)-1]++
					}
				}
			}
		}
	}
	return hits
}

// TestSplitKeepsReorderingsTogether checks that every problem's
// reorderings fall in its split, in both forms: the test split holds no
// training problem written in another order.
func TestSplitKeepsReorderingsTogether(t *testing.T) {
	moved := checkReorderings(t, 300, 4, true, func(e string, it Item) bool { return e != it.Expr })
	for _, n := range moved {
		require.Greater(t, n, 2000, "the reorderings differ from the written expression")
	}
}

// TestCanonicalExprLeadingSign checks the reorderings that put a
// subtracted term first, written with a leading "-" ("-3+x=5" for
// "x-3=5"): they are the same problem, so they have its canonical form
// and split. A canonical form starts with its first term's sign, so it
// is such an expression too: it is its own canonical form. (A leading
// sign was read as an empty first term: "-3+x=5" gave "++x-3=5" and
// "x-3=5" "+x-3=5".)
func TestCanonicalExprLeadingSign(t *testing.T) {
	for _, tc := range [][2]string{
		{"x-3=5", "-3+x=5"},
		{"7-5*3", "-3*5+7"},
		{"2-x*3=-1", "-3*x+2=-1"},
		{"x-3-2=1", "-2-3+x=1"},
		{"x-12*1=4", "-1*12+x=4"},
		{"x+3=5", "+3+x=5"},
	} {
		require.Equal(t, CanonicalExpr(tc[0]), CanonicalExpr(tc[1]), "%q %q", tc[0], tc[1])
	}
	require.NotEqual(t, CanonicalExpr("-3+x=5"), CanonicalExpr("3+x=5"), "the sign stays with its term")
	require.NotEqual(t, CanonicalExpr("-3-x"), CanonicalExpr("3-x"), "the sign stays with its term")
	leading := checkReorderings(t, 200, 6, false, func(e string, _ Item) bool { return e[0] == '-' })
	for _, n := range leading {
		require.Greater(t, n, 500, "reorderings with a leading minus")
	}
}

// embeddedSpace enumerates every problem of the embedded task: 3 or 4
// operands of 1..5, each gap one of +-*, each operand in turn the
// unknown.
func embeddedSpace(t *testing.T) []Item {
	t.Helper()
	cfg := EmbeddedConfig
	var items []Item
	var rec func(operands []int, ops []byte)
	rec = func(operands []int, ops []byte) {
		if n := len(operands); n >= cfg.MinOperands {
			for u := range n {
				items = append(items, solveItem(operands, ops, u))
			}
			if n == cfg.MaxOperands {
				return
			}
		}
		for v := cfg.MinOperand; v <= cfg.MaxOperand; v++ {
			if len(operands) == 0 {
				rec([]int{v}, nil)
				continue
			}
			for _, op := range []byte(cfg.Ops) {
				rec(append(append([]int{}, operands...), v), append(append([]byte{}, ops...), op))
			}
		}
	}
	cfg = cfg.WithDefaults()
	rec(nil, nil)
	return items
}

// TestEmbeddedSplitHasNoTwins enumerates the embedded task: equations
// with one canonical form are one problem (the same x, the same right-hand
// side) in one split, the test split holds about TestPercent of the
// problems, and Problems finds every test problem, each once.
func TestEmbeddedSplitHasNoTwins(t *testing.T) {
	if testing.Short() {
		t.Skip("enumerates 70,875 equations")
	}
	task, err := Embedded()
	require.NoError(t, err)
	items := embeddedSpace(t)
	require.Len(t, items, 5*5*5*9*3+5*5*5*5*27*4)
	first := map[string]Item{}
	for _, it := range items {
		key := CanonicalExpr(it.Expr)
		f, ok := first[key]
		if !ok {
			first[key] = it
			continue
		}
		require.Equal(t, f.Answer, it.Answer, "%q and %q", f.Expr, it.Expr)
		require.Equal(t, f.Target, it.Target, "%q and %q", f.Expr, it.Expr)
		require.Equal(t, task.SplitOf(f.Expr), task.SplitOf(it.Expr), "%q and %q", f.Expr, it.Expr)
	}
	test := 0
	for _, it := range first {
		if task.SplitOf(it.Expr) == Test {
			test++
		}
	}
	t.Logf("%d equations, %d problems, %d in the test split", len(items), len(first), test)
	require.Equal(t, []int{len(first) - test, test}, []int{embeddedTrainSize, embeddedTestSize}, "the split sizes Problems knows")
	// Binomial(len(first), 0.10): +-5 sd.
	n := float64(len(first))
	require.InDelta(t, 0.1*n, test, 5*math.Sqrt(n*0.1*0.9))
	all, err := task.Problems(Test, test, EmbeddedSeed)
	require.NoError(t, err)
	require.Len(t, all, test)
}

// permutations returns every order of xs.
func permutations[T any](xs []T) [][]T {
	if len(xs) <= 1 {
		return [][]T{slices.Clone(xs)}
	}
	var out [][]T
	for i := range xs {
		rest := slices.Concat(xs[:i:i], xs[i+1:])
		for _, p := range permutations(rest) {
			out = append(out, append([]T{xs[i]}, p...))
		}
	}
	return out
}

// reorderings returns every way of writing expr (an expression or
// equation without a leading sign) with its additive terms and each
// term's factors in another order, a term with a "+" first: its
// problem, as written in the task.
func reorderings(expr string) map[string]bool {
	lhs, rhs, equation := strings.Cut(expr, "=")
	type term struct {
		sign    byte
		factors []string
	}
	var terms []term
	start, sign := 0, byte('+')
	for i := 0; i <= len(lhs); i++ {
		if i == len(lhs) || lhs[i] == '+' || lhs[i] == '-' {
			terms = append(terms, term{sign, strings.Split(lhs[start:i], "*")})
			if i < len(lhs) {
				sign, start = lhs[i], i+1
			}
		}
	}
	// every order of the terms, each with every order of its factors
	writings := []string{""}
	out := map[string]bool{}
	for _, order := range permutations(terms) {
		if order[0].sign != '+' {
			continue
		}
		writings = writings[:1]
		writings[0] = ""
		for k, tm := range order {
			var next []string
			for _, w := range writings {
				for _, fs := range permutations(tm.factors) {
					s := w
					if k > 0 {
						s += string(tm.sign)
					}
					next = append(next, s+strings.Join(fs, "*"))
				}
			}
			writings = next
		}
		for _, w := range writings {
			if equation {
				w += "=" + rhs
			}
			out[w] = true
		}
	}
	return out
}

// TestCanonicalExprGroupsExactlyReorderings enumerates every expression
// and equation of 2 to 4 operands from {1, 2, 12, 21} (so that digits
// could be confused across operands: 12*1 and 1*21, 1*2+1 and 12+1):
// the expressions with one canonical form are exactly the reorderings of
// each of them, and they have one value for every x, one right-hand side
// and one answer.
func TestCanonicalExprGroupsExactlyReorderings(t *testing.T) {
	values := []int{1, 2, 12, 21}
	var items []Item
	var rec func(operands []int, ops []byte)
	rec = func(operands []int, ops []byte) {
		if n := len(operands); n >= 2 {
			items = append(items, build(operands, ops))
			for u := range n {
				items = append(items, solveItem(operands, ops, u))
			}
			if n == 4 {
				return
			}
		}
		for _, v := range values {
			if len(operands) == 0 {
				rec([]int{v}, nil)
				continue
			}
			for _, op := range []byte("+-*") {
				rec(append(slices.Clone(operands), v), append(slices.Clone(ops), op))
			}
		}
	}
	rec(nil, nil)
	groups := map[string]map[string]Item{}
	for _, it := range items {
		k := CanonicalExpr(it.Expr)
		if groups[k] == nil {
			groups[k] = map[string]Item{}
		}
		groups[k][it.Expr] = it
	}
	// value of an expression's left side at x = v, with math/big
	valueAt := func(expr string, v int) string {
		lhs, _, _ := strings.Cut(expr, "=")
		return fmt.Sprint(evalGo(t, strings.ReplaceAll(lhs, "x", strconv.Itoa(v))))
	}
	for k, g := range groups {
		var first Item
		for _, it := range g {
			first = it
			break
		}
		want := reorderings(first.Expr)
		require.Equal(t, len(want), len(g), "%s: %d reorderings of %q, %d expressions with its form", k, len(want), first.Expr, len(g))
		for e, it := range g {
			require.True(t, want[e], "%q has %q's canonical form %q but is not a reordering of it", e, first.Expr, k)
			require.Equal(t, first.Answer, it.Answer, "%q %q", first.Expr, e)
			require.Equal(t, first.Target, it.Target, "%q %q", first.Expr, e)
			for _, v := range []int{0, 1, 3, 1000} {
				require.Equal(t, valueAt(first.Expr, v), valueAt(e, v), "%q %q at x=%d", first.Expr, e, v)
			}
		}
	}
	t.Logf("%d expressions and equations, %d problems", len(items), len(groups))
}

// TestWarmStartHoldsNoTestProblem draws the embedded warm start's
// examples (spiral sft's mix: a quarter of the aggregation examples read)
// and checks that none is on a held-out problem in any order: the problem
// of each example's prompt has the canonical form of no problem of the
// embedded test split. (On the split keyed on the equation as written,
// 122 of the 128 held-out problems were among the warm start's examples
// in another order.)
func TestWarmStartHoldsNoTestProblem(t *testing.T) {
	task, err := Embedded()
	require.NoError(t, err)
	test, err := task.Problems(Test, 1134, EmbeddedSeed)
	require.NoError(t, err)
	held := map[string]bool{}
	for _, it := range test {
		held[CanonicalExpr(it.Expr)] = true
	}
	exs, err := task.SFTExamples(rand.New(rand.NewPCG(1, 0x5f7)), nil, 4000, Mix{Candidates: 4, AggregateShare: 0.5, ReadShare: 0.25})
	require.NoError(t, err)
	for _, ex := range exs {
		line, _, _ := strings.Cut(ex.Prompt, "\n")
		eq, ok := strings.CutPrefix(line, "Solve ")
		require.True(t, ok, ex.Prompt)
		eq = strings.TrimSuffix(eq, ".")
		require.False(t, held[CanonicalExpr(eq)], "the warm start has %q, a held-out problem", eq)
	}
}

// TestProblemsPastTheSplitDrawNothing: more problems of a split than the
// embedded task holds are refused at once, with how many it holds, and
// none drawn. Problems drew until 20 times as many draws as it had found
// problems found no new one: spiral train --eval-problems 5000 took 7 s
// to refuse.
func TestProblemsPastTheSplitDrawNothing(t *testing.T) {
	embedded, err := Embedded()
	require.NoError(t, err)
	for _, c := range []struct {
		name  string
		split Split
		n     int
		found int
	}{
		{"embedded test, one past", Test, 1135, 1134},
		{"embedded test, far past", Test, 5000, 1134},
		{"embedded train, one past", Train, 9992, 9991},
	} {
		t.Run(c.name, func(t *testing.T) {
			draws := 0
			_, err := embedded.problems(c.split, c.n, 7, func(r *rand.Rand, s Split) (Item, string, error) {
				draws++
				return embedded.sample(r, s)
			})
			var few *TooFewError
			require.ErrorAs(t, err, &few)
			require.Equal(t, TooFewError{Split: c.split, Found: c.found, Want: c.n, Exact: true}, *few)
			require.Zero(t, draws, "drew problems to refuse %d", c.n)
		})
	}
}

// TestProblemsPastACountedSplit: a task of few expressions (at most
// maxCounted) counts its split's problems once its draws stall (1,000 in
// a row found none), and refuses more than there are then, with their
// number: it drew until 20 times as many draws as it had found problems
// found no new one, so spiral data synth --form compute --max-operand 1
// --max-operands 12 --problems 100000 took 6 s (and --max-operand 2
// --min-operands 6 --max-operands 6, 3 s) to find that a few thousand
// exist. The draws counted are fewer than 20 for each problem found, the
// fruitless ones alone that the refusal took. A counted split's every
// problem is still found, and a task of more expressions is not counted.
func TestProblemsPastACountedSplit(t *testing.T) {
	task := func(cfg Config) *Task {
		tk, err := New(cfg, EmbeddedSeed)
		require.NoError(t, err)
		return tk
	}
	// 2 operands of 1..20 and the three operators: 1,200 expressions.
	compute := task(Config{MinOperands: 2, MaxOperands: 2, MinOperand: 1, MaxOperand: 20, TestPercent: 50})
	computeSplits := splitSizesOf(compute, func(yield func(Item) bool) {
		for _, operands := range tuples(ints(1, 20), 2) {
			for _, ops := range tuples([]byte("+-*"), 1) {
				if !yield(build(operands, ops)) {
					return
				}
			}
		}
	})
	// The solve form of 2 or 3 operands of 1..3 and the three operators,
	// each operand in turn the unknown: 2*9*3 + 3*27*9 = 783 equations.
	solve := task(Config{Form: FormSolve, MinOperands: 2, MaxOperands: 3, MinOperand: 1, MaxOperand: 3, TestPercent: 50})
	solveSplits := splitSizesOf(solve, func(yield func(Item) bool) {
		for n := 2; n <= 3; n++ {
			for _, operands := range tuples(ints(1, 3), n) {
				for _, ops := range tuples([]byte("+-*"), n-1) {
					for u := range n {
						if !yield(solveItem(operands, ops, u)) {
							return
						}
					}
				}
			}
		}
	})
	for _, c := range []struct {
		name  string
		task  *Task
		split Split
		n     int
		found int
	}{
		{"compute test, one past", compute, Test, computeSplits[Test] + 1, computeSplits[Test]},
		{"compute train, far past", compute, Train, 100_000, computeSplits[Train]},
		{"solve test, one past", solve, Test, solveSplits[Test] + 1, solveSplits[Test]},
		{"solve train, one past", solve, Train, solveSplits[Train] + 1, solveSplits[Train]},
	} {
		t.Run(c.name, func(t *testing.T) {
			require.Greater(t, c.found, 100, "enough problems that 20 draws each pass 1,000")
			draws := 0
			_, err := c.task.problems(c.split, c.n, 7, func(r *rand.Rand, s Split) (Item, string, error) {
				draws++
				return c.task.sample(r, s)
			})
			var few *TooFewError
			require.ErrorAs(t, err, &few)
			require.Equal(t, TooFewError{Split: c.split, Found: c.found, Want: c.n, Exact: true}, *few)
			require.Less(t, draws, 20*c.found, "drew until 20 draws a problem found none")
		})
	}
	for _, s := range []Split{Train, Test} {
		items, err := solve.Problems(s, solveSplits[s], 1)
		require.NoError(t, err, s)
		require.Len(t, items, solveSplits[s])
	}
	// The default compute task: 3 or 4 operands of 1..15, about 1.4
	// million expressions.
	_, counted := task(Config{}).splitSizes()
	require.False(t, counted, "more than maxCounted expressions")
}

// splitSizesOf returns the problems of each of task's splits among the
// items that each yields, each counted once (by its canonical form).
func splitSizesOf(task *Task, each iter.Seq[Item]) map[Split]int {
	keys := map[string]bool{}
	sizes := map[Split]int{}
	for it := range each {
		if key := CanonicalExpr(it.Expr); !keys[key] {
			keys[key] = true
			sizes[task.SplitOf(it.Expr)]++
		}
	}
	return sizes
}

// ints returns lo..hi.
func ints(lo, hi int) []int {
	var out []int
	for v := lo; v <= hi; v++ {
		out = append(out, v)
	}
	return out
}

// tuples returns every sequence of n values of xs.
func tuples[T any](xs []T, n int) [][]T {
	if n == 0 {
		return [][]T{nil}
	}
	var out [][]T
	for _, head := range tuples(xs, n-1) {
		for _, x := range xs {
			out = append(out, append(slices.Clone(head), x))
		}
	}
	return out
}

// TestProblemsTooFewSaysWhetherExact: a refusal's count is exact (all the
// split holds) where the split's problems are known or can be counted,
// which they are once the draws stall, whatever that cost; else it is the
// problems the draws found, a lower bound, and says so ("at least").
// spiral data synth --form compute --max-operand 1 --min-operands 2
// --max-operands 12 --problems 1048576 said "only 269 distinct test
// problems found", of 284: its draws stalled before counting was worth
// their cost, and the 269 was given as all there were.
func TestProblemsTooFewSaysWhetherExact(t *testing.T) {
	task := func(cfg Config) *Task {
		tk, err := New(cfg, EmbeddedSeed)
		require.NoError(t, err)
		return tk
	}
	// 2 operands of 1..20 and the three operators: 1,200 expressions.
	counted := task(Config{MinOperands: 2, MaxOperands: 2, MinOperand: 1, MaxOperand: 20, TestPercent: 50})
	sizes, ok := counted.splitSizes()
	require.True(t, ok)
	for _, c := range []struct {
		name  string
		task  *Task
		n     int
		want  TooFewError
		error string
	}{
		{"counted", counted, 100_000, TooFewError{Split: Test, Found: sizes[Test], Want: 100_000, Exact: true},
			fmt.Sprintf("synth: only %d distinct test problems, want 100000; widen the operand range or count", sizes[Test])},
		// The default compute task: about 1.4 million expressions, more
		// than maxCounted.
		{"not counted", task(Config{}), 100_000, TooFewError{Split: Test, Found: 1, Want: 100_000},
			"synth: at least 1 distinct test problems (found by drawing, not counted), want 100000; widen the operand range or count"},
	} {
		t.Run(c.name, func(t *testing.T) {
			// Every draw the same problem: the draws stall at once,
			// before counting is worth their cost.
			var first *Item
			var firstKey string
			_, err := c.task.problems(Test, c.n, 7, func(r *rand.Rand, s Split) (Item, string, error) {
				if first == nil {
					it, key, err := c.task.sample(r, s)
					if err != nil {
						return Item{}, "", err
					}
					first, firstKey = &it, key
				}
				return *first, firstKey, nil
			})
			var few *TooFewError
			require.ErrorAs(t, err, &few)
			require.Equal(t, c.want, *few)
			require.EqualError(t, err, c.error)
		})
	}
}
