package synth

import (
	"fmt"
	"go/constant"
	"go/token"
	"go/types"
	"math"
	"math/big"
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/spiral-rl/spiral/data"
	"github.com/stretchr/testify/require"
)

// evalGo evaluates an integer expression with the Go type checker's
// constant folding: an evaluator independent of this package.
func evalGo(t *testing.T, expr string) int {
	t.Helper()
	tv, err := types.Eval(token.NewFileSet(), nil, token.NoPos, expr)
	require.NoError(t, err, "go/types cannot evaluate %q", expr)
	v, exact := constant.Int64Val(tv.Value)
	require.True(t, exact, "%q does not fit in int64", expr)
	return int(v)
}

// stepRE matches one step sentence of a worked solution.
var stepRE = regexp.MustCompile(`^(-?\d+)([+\-*/])(\d+)=(-?\d+)\.$`)

// bigStep computes a op b with math/big (an implementation apart from the
// package's int arithmetic, and cheaper than go/types per step).
func bigStep(t *testing.T, a, op, b string) string {
	t.Helper()
	x, ok1 := new(big.Int).SetString(a, 10)
	y, ok2 := new(big.Int).SetString(b, 10)
	require.True(t, ok1 && ok2, "operands %q %q", a, b)
	switch op {
	case "+":
		return x.Add(x, y).String()
	case "-":
		return x.Sub(x, y).String()
	case "*":
		return x.Mul(x, y).String()
	case "/":
		q, m := x.QuoRem(x, y, new(big.Int))
		if m.Sign() != 0 {
			return "inexact"
		}
		return q.String()
	}
	t.Fatalf("operator %q", op)
	return ""
}

// checkSolution parses a worked solution, checks each step with bigStep
// and returns the number of wrong steps and the boxed answer.
func checkSolution(t *testing.T, sol string) (wrong int, boxed int) {
	t.Helper()
	fields := strings.Split(sol, " ")
	require.GreaterOrEqual(t, len(fields), 2, "solution %q", sol)
	for _, f := range fields[:len(fields)-1] {
		m := stepRE.FindStringSubmatch(f)
		require.NotNil(t, m, "step %q of %q", f, sol)
		if bigStep(t, m[1], m[2], m[3]) != m[4] {
			wrong++
		}
	}
	ans, ok := data.LastBoxed(fields[len(fields)-1])
	require.True(t, ok, "no box in %q", sol)
	boxed, err := strconv.Atoi(ans)
	require.NoError(t, err)
	// The box repeats the last step's result.
	last := stepRE.FindStringSubmatch(fields[len(fields)-2])
	require.Equal(t, last[4], ans, "box differs from the last step in %q", sol)
	return wrong, boxed
}

// configs are the difficulty settings the tests sweep.
var configs = []struct {
	name string
	cfg  Config
}{
	{"default", Config{}},
	{"two operands, addition only", Config{MinOperands: 2, MaxOperands: 2, Ops: "+"}},
	{"many products", Config{MinOperands: 5, MaxOperands: 6, MaxOperand: 9, Ops: "*-"}},
	{"wide range", Config{MinOperand: 50, MaxOperand: 999, TestPercent: 50}},
}

// TestSolutionsCorrect checks, for every configuration, that the answer
// equals the expression evaluated by go/types, that every step of the
// worked solution is right, and that the box holds the answer.
func TestSolutionsCorrect(t *testing.T) {
	for _, tc := range configs {
		t.Run(tc.name, func(t *testing.T) {
			task, err := New(tc.cfg, 11)
			require.NoError(t, err)
			cfg := task.Config()
			r := rand.New(rand.NewPCG(3, 4))
			for i := range 2000 {
				it, err := task.Sample(r, Split(i%2))
				require.NoError(t, err)
				require.Equal(t, evalGo(t, it.Expr), it.Answer, "expr %q", it.Expr)
				require.Equal(t, "Compute "+it.Expr+".", it.Problem())
				require.GreaterOrEqual(t, len(it.Operands), cfg.MinOperands)
				require.LessOrEqual(t, len(it.Operands), cfg.MaxOperands)
				for _, v := range it.Operands {
					require.True(t, v >= cfg.MinOperand && v <= cfg.MaxOperand, "operand %d", v)
				}
				for _, op := range it.Ops {
					require.Contains(t, cfg.Ops, string(op))
				}
				wrong, boxed := checkSolution(t, it.Solution())
				require.Zero(t, wrong, "wrong step in %q", it.Solution())
				require.Equal(t, it.Answer, boxed)
				// One step per operator.
				require.Len(t, it.Steps, len(it.Ops))
			}
		})
	}
}

// TestSplit checks that train and test never share an expression, that
// the split depends only on the task seed, and that the test share is near
// TestPercent over an exhaustively enumerated expression space.
func TestSplit(t *testing.T) {
	task, err := New(Config{}, 5)
	require.NoError(t, err)
	train, err := task.Problems(Train, 3000, 1)
	require.NoError(t, err)
	test, err := task.Problems(Test, 500, 1)
	require.NoError(t, err)
	inTest := map[string]bool{}
	for _, it := range test {
		inTest[CanonicalExpr(it.Expr)] = true
		require.Equal(t, Test, task.SplitOf(it.Expr))
	}
	require.Len(t, inTest, 500, "test problems are distinct")
	for _, it := range train {
		require.False(t, inTest[CanonicalExpr(it.Expr)], "%q in both splits", it.Expr)
		require.Equal(t, Train, task.SplitOf(it.Expr))
	}

	// Same seeds, same sets; another sampling seed, another draw from the
	// same split; another task seed, another split.
	again, err := task.Problems(Test, 500, 1)
	require.NoError(t, err)
	require.Equal(t, test, again)
	other, err := task.Problems(Test, 500, 2)
	require.NoError(t, err)
	require.NotEqual(t, test, other)
	task2, err := New(Config{}, 6)
	require.NoError(t, err)
	moved := 0
	for _, it := range test {
		if task2.SplitOf(it.Expr) != Test {
			moved++
		}
	}
	// With independent hashes about 90% of the old test set leaves the
	// test split; 50% is a loose floor.
	require.Greater(t, moved, 250)

	// Exhaustive share: the problems (canonical forms) among all
	// 10*10*10*3*3 = 9000 expressions of three operands 1..10. The count
	// is Binomial(problems, 0.10) for a good hash: +-5 sd.
	small, err := New(Config{MinOperands: 3, MaxOperands: 3, MaxOperand: 10}, 5)
	require.NoError(t, err)
	problems := map[string]Split{}
	for a := 1; a <= 10; a++ {
		for b := 1; b <= 10; b++ {
			for c := 1; c <= 10; c++ {
				for _, o1 := range "+-*" {
					for _, o2 := range "+-*" {
						e := strconv.Itoa(a) + string(o1) + strconv.Itoa(b) + string(o2) + strconv.Itoa(c)
						problems[CanonicalExpr(e)] = small.SplitOf(e)
					}
				}
			}
		}
	}
	n := 0
	for _, s := range problems {
		if s == Test {
			n++
		}
	}
	p := float64(len(problems))
	require.InDelta(t, 0.1*p, n, 5*math.Sqrt(p*0.1*0.9))
}

func TestProblemsTooFew(t *testing.T) {
	// 2 operands in 1..2 with "+": 4 expressions, about 10% in test.
	task, err := New(Config{MinOperands: 2, MaxOperands: 2, MaxOperand: 2, Ops: "+"}, 1)
	require.NoError(t, err)
	_, err = task.Problems(Train, 10, 1)
	require.Error(t, err)
	// A split with no problem at all (1+1, 1-1 and 1*1 are all train
	// problems): too few, none found, as a split with some is, not the
	// error of one draw ("no test problem in 10000 tries").
	task, err = New(Config{MinOperands: 2, MaxOperands: 2, MaxOperand: 1}, 1)
	require.NoError(t, err)
	_, err = task.Problems(Test, 5, 1)
	var few *TooFewError
	require.ErrorAs(t, err, &few)
	require.Equal(t, TooFewError{Split: Test, Found: 0, Want: 5, Exact: true}, *few)
}

// TestProblemsAll asks for every problem of a small split, one more, and
// far more: all of them are found, and a request above them fails after
// a bounded number of fruitless draws (about 20 times the split's size)
// rather than 100 times the request.
func TestProblemsAll(t *testing.T) {
	// 2 operands of 1..3 joined by + or -: 18 expressions, 15 problems
	// (a+b and b+a are one).
	task, err := New(Config{MinOperands: 2, MaxOperands: 2, MaxOperand: 3, Ops: "+-", TestPercent: 50}, 1)
	require.NoError(t, err)
	problems := map[string]Split{}
	for a := 1; a <= 3; a++ {
		for b := 1; b <= 3; b++ {
			for _, op := range "+-" {
				e := fmt.Sprintf("%d%c%d", a, op, b)
				problems[CanonicalExpr(e)] = task.SplitOf(e)
			}
		}
	}
	require.Len(t, problems, 15)
	want := map[Split]int{}
	for _, s := range problems {
		want[s]++
	}
	for _, s := range []Split{Train, Test} {
		require.Positive(t, want[s], s)
		items, err := task.Problems(s, want[s], 1)
		require.NoError(t, err, s)
		require.Len(t, items, want[s])
		for _, n := range []int{want[s] + 1, 100_000_000} {
			_, err = task.Problems(s, n, 1)
			require.ErrorContains(t, err, fmt.Sprintf("only %d distinct %s problems, want %d", want[s], s, n))
		}
	}
}

func TestDataset(t *testing.T) {
	task, err := New(Config{}, 9)
	require.NoError(t, err)
	ds, err := task.Dataset(Test, 200, 3)
	require.NoError(t, err)
	require.Len(t, ds.Problems, 200)
	require.Empty(t, ds.Skipped())
	for _, p := range ds.Problems {
		it, err := Parse(p.Problem)
		require.NoError(t, err)
		require.Equal(t, strconv.Itoa(evalGo(t, it.Expr)), p.Answer)
		require.Equal(t, Test, task.SplitOf(it.Expr))
	}
	// It works with the data package's sampler.
	s := data.NewStream(ds, 1)
	require.Len(t, s.Next(450), 450)
}

// TestLengths checks the sizes the tiny model's context needs at the
// default difficulty: solutions of at most 80 characters and aggregation
// prompts with 4 candidates of at most 400, over 5000 samples.
func TestLengths(t *testing.T) {
	task, err := New(Config{}, 1)
	require.NoError(t, err)
	r := rand.New(rand.NewPCG(8, 9))
	maxSol, maxAgg := 0, 0
	for range 5000 {
		it, err := task.Sample(r, Train)
		require.NoError(t, err)
		maxSol = max(maxSol, len(it.Solution()))
		ex, err := task.AggregateExample(r, nil, it, 4)
		require.NoError(t, err)
		maxAgg = max(maxAgg, len(ex.Prompt)+len(ex.Completion))
	}
	t.Logf("longest solution %d chars, longest aggregation prompt+completion %d chars", maxSol, maxAgg)
	require.LessOrEqual(t, maxSol, 80)
	require.LessOrEqual(t, maxAgg, 400)
}

// TestAlphabet checks that every character of problems, solutions and
// both kinds of examples is in Alphabet, and that Alphabet is sorted and
// has no repeats.
func TestAlphabet(t *testing.T) {
	alpha := Alphabet()
	for i := 1; i < len(alpha); i++ {
		require.Less(t, alpha[i-1], alpha[i], "alphabet %q not sorted or repeated", alpha)
	}
	task, err := New(Config{MaxOperand: 99}, 1)
	require.NoError(t, err)
	r := rand.New(rand.NewPCG(1, 1))
	exs, err := task.SFTExamples(r, nil, 1000, Mix{Candidates: 9, AggregateShare: 0.5, ReadShare: 1})
	require.NoError(t, err)
	for _, ex := range exs {
		for _, s := range []string{ex.Prompt, ex.Completion, ex.Answer} {
			for _, c := range s {
				require.True(t, strings.ContainsRune(alpha, c), "%q (in %q) not in the alphabet %q", c, s, alpha)
			}
		}
	}
}

// TestMistakes checks planted mistakes: exactly one wrong step (checked
// with go/types), carried through so the final answer differs.
func TestMistakes(t *testing.T) {
	for _, tc := range configs {
		t.Run(tc.name, func(t *testing.T) {
			task, err := New(tc.cfg, 2)
			require.NoError(t, err)
			r := rand.New(rand.NewPCG(5, 6))
			for range 2000 {
				it, err := task.Sample(r, Train)
				require.NoError(t, err)
				m := it.PlantMistake(r)
				text, ans := it.WrongSolution(m)
				wrong, boxed := checkSolution(t, text)
				require.Equal(t, 1, wrong, "%q for %q", text, it.Expr)
				require.Equal(t, ans, boxed)
				require.NotEqual(t, it.Answer, ans, "%q for %q", text, it.Expr)
				require.NotContains(t, text, "+-")
			}
		})
	}
}

// TestAggregateExamples checks aggregation examples and measures how often
// the candidates disagree and how often a vote would pick a wrong answer.
func TestAggregateExamples(t *testing.T) {
	task, err := New(Config{}, 3)
	require.NoError(t, err)
	r := rand.New(rand.NewPCG(7, 7))
	tm := Templates()
	const trials, n = 4000, 4
	disagree, wrongPlurality, allWrong := 0, 0, 0
	for range trials {
		it, err := task.Sample(r, Train)
		require.NoError(t, err)
		ex, err := task.AggregateExample(r, nil, it, n)
		require.NoError(t, err)
		require.Equal(t, KindAggregate, ex.Kind)
		require.Equal(t, it.Solution(), ex.Completion)
		require.Len(t, ex.Candidates, n)
		want, err := tm.Aggregate(it.Problem(), ex.Candidates)
		require.NoError(t, err)
		require.Equal(t, want, ex.Prompt)
		correct := 0
		counts := map[string]int{}
		for i, c := range ex.Candidates {
			w, boxed := checkSolution(t, c)
			require.Equal(t, ex.CandidateAnswers[i], strconv.Itoa(boxed))
			if w == 0 {
				correct++
				require.Equal(t, it.Answer, boxed)
			}
			counts[ex.CandidateAnswers[i]]++
		}
		require.Equal(t, correct, ex.CorrectCandidates)
		if len(counts) > 1 {
			disagree++
		}
		if correct == 0 {
			allWrong++
		}
		if plurality(ex.CandidateAnswers, counts) != ex.Answer {
			wrongPlurality++
		}
	}
	t.Logf("of %d examples: candidates disagree %d, plurality wrong %d, all wrong %d", trials, disagree, wrongPlurality, allWrong)
	// With MistakeRate p = 0.5, SharedMistakeRate s = 0.3 and n = 4:
	// candidates agree when all are correct (p^0... (1-p)^4 = 0.0625) or
	// all wrong with one shared mistake (p^4 * s = 0.019), plus rare
	// coincidences: agreement is about 0.08, so disagreement about 0.92;
	// 0.85 is a 5-sd floor for 4000 trials (sd 0.0043).
	require.Greater(t, float64(disagree)/trials, 0.85)
	// All wrong: p^4 = 0.0625 (sd 0.0038); [0.04, 0.085].
	require.InDelta(t, 0.0625, float64(allWrong)/trials, 0.0225)
	// A wrong plurality needs a shared mistake held by more candidates
	// than the correct ones (s * P(wrong > correct) = 0.3 * 5/16 = 0.094,
	// plus ties won by a wrong answer seen first and all-wrong cases), so
	// at least 0.07.
	require.Greater(t, float64(wrongPlurality)/trials, 0.07)
}

func TestSearchExample(t *testing.T) {
	it, err := Parse("Compute 7+5*3-4.")
	require.NoError(t, err)
	task, err := New(Config{}, 1)
	require.NoError(t, err)
	ex, err := task.SearchExample(nil, it)
	require.NoError(t, err)
	// The solution in the order the package documentation states:
	// products first, then left to right.
	require.Equal(t, Example{Kind: KindSearch, Prompt: "Compute 7+5*3-4.", Problem: "Compute 7+5*3-4.", Completion: `5*3=15. 7+15=22. 22-4=18. \boxed{18}`, Answer: "18"}, ex)
	defaults, err := data.LoadTemplates("", "")
	require.NoError(t, err)
	long, err := task.SearchExample(defaults, it)
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(long.Prompt, "Compute 7+5*3-4.\nPlease reason step by step"))
}

func TestParse(t *testing.T) {
	cases := []struct {
		name, in, want string
		ok             bool
	}{
		{"problem text", "Compute 2*3+1.", "2*3+1", true},
		{"bare expression", "12-30", "12-30", true},
		{"single operand", "7", "7", true},
		{"empty", "", "", false},
		{"trailing operator", "1+", "", false},
		{"division", "4/2", "", false},
		{"spaces", "1 + 2", "", false},
		{"leading zero", "01+2", "", false},
		{"too many digits", "1234567890+1", "", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			it, err := Parse(tc.in)
			if !tc.ok {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, it.Expr)
			require.Equal(t, evalGo(t, it.Expr), it.Answer)
		})
	}
}

func TestConfigValidate(t *testing.T) {
	cases := []struct {
		name string
		cfg  Config
		want string
	}{
		{"one operand", Config{MinOperands: 1, MaxOperands: 1}, "operands"},
		{"max below min", Config{MinOperands: 4, MaxOperands: 3}, "operands"},
		{"operand range", Config{MinOperand: 9, MaxOperand: 3}, "operand range"},
		{"division", Config{Ops: "+/"}, "ops"},
		{"test percent", Config{TestPercent: 100}, "test percent"},
		{"mistake rate", Config{MistakeRate: 1.5}, "mistake rate"},
		{"unknown form", Config{Form: "divide"}, "form"},
		{"solve without a wrong guess", Config{Form: FormSolve, MinOperand: 4, MaxOperand: 4}, "solve form"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.cfg, 1)
			require.ErrorContains(t, err, tc.want)
		})
	}
	require.NoError(t, Config{}.Validate())
}

// FuzzParse checks that Parse never panics and that what it accepts
// round-trips and solves correctly.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"Compute 7+5*3-4.", "1", "2*3*4-100", "9+", "0*0", "999999999*999999999*999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		it, err := Parse(s)
		if err != nil {
			return
		}
		again, err := Parse(it.Problem())
		if err != nil || again.Expr != it.Expr || again.Answer != it.Answer {
			t.Fatalf("round trip of %q: %+v, %v", s, again, err)
		}
		tv, err := types.Eval(token.NewFileSet(), nil, token.NoPos, it.Expr)
		if err != nil {
			t.Fatalf("go/types cannot evaluate %q: %v", it.Expr, err)
		}
		// Results beyond int64 wrap in Parse (documented); compare the rest.
		if v, exact := constant.Int64Val(tv.Value); exact && int(v) != it.Answer {
			t.Fatalf("%q = %d, Parse says %d", it.Expr, v, it.Answer)
		}
	})
}

func BenchmarkSample(b *testing.B) {
	task, _ := New(Config{}, 1)
	r := rand.New(rand.NewPCG(1, 2))
	for b.Loop() {
		if _, err := task.Sample(r, Train); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAggregateExample(b *testing.B) {
	task, _ := New(Config{}, 1)
	r := rand.New(rand.NewPCG(1, 2))
	it, _ := task.Sample(r, Train)
	tm := Templates()
	for b.Loop() {
		if _, err := task.AggregateExample(r, tm, it, 4); err != nil {
			b.Fatal(err)
		}
	}
}

// plurality returns the most frequent of answers (counts holds their
// frequencies), ties to the first seen.
func plurality(answers []string, counts map[string]int) string {
	best := ""
	for _, a := range answers {
		if counts[a] > counts[best] {
			best = a
		}
	}
	return best
}

// TestMixValidate checks that SFTExamples refuses a mix out of range,
// naming the field.
func TestMixValidate(t *testing.T) {
	task, err := New(Config{}, 1)
	require.NoError(t, err)
	for _, tc := range []struct {
		name string
		mix  Mix
		want string
	}{
		{"no candidates", Mix{ReadShare: 1}, "candidates"},
		{"aggregate share", Mix{Candidates: 4, AggregateShare: 1.5, ReadShare: 1}, "aggregate share"},
		{"read share", Mix{Candidates: 4, ReadShare: -0.1}, "read share"},
		{"NaN read share", Mix{Candidates: 4, ReadShare: math.NaN()}, "read share"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := task.SFTExamples(rand.New(rand.NewPCG(1, 1)), nil, 1, tc.mix)
			require.ErrorContains(t, err, tc.want)
		})
	}
}

// TestLargeOperandsExact: every problem of a configuration whose values
// can pass int64 (--max-operand 1000000, or many operands) states a true
// equation or value, checked with the Go type checker's exact constants;
// about 2% of the solve problems with operands up to 10^6 had a wrapped
// right-hand side (822363*948360*x*379323=-8000948070870383600) and as
// many compute problems a wrapped answer. A configuration all of whose
// expressions could pass 2^53 fails, saying so.
func TestLargeOperandsExact(t *testing.T) {
	for _, cfg := range []Config{
		{Form: FormSolve, MaxOperand: 1_000_000},
		{Form: FormCompute, MaxOperand: 1_000_000},
		{Form: FormCompute, MinOperands: 30, MaxOperands: 40, MaxOperand: 9},
		{Form: FormSolve, MinOperands: 2, MaxOperands: 2, MaxOperand: 1_000_000, Ops: "*"},
	} {
		t.Run(fmt.Sprintf("%+v", cfg), func(t *testing.T) {
			task, err := New(cfg, 1)
			require.NoError(t, err)
			items, err := task.Problems(Test, 300, 1)
			require.NoError(t, err)
			for _, it := range items {
				lhs, rhs := it.Expr, strconv.Itoa(it.Answer)
				if it.Unknown >= 0 {
					var ok bool
					lhs, rhs, ok = strings.Cut(it.Expr, "=")
					require.True(t, ok, it.Expr)
					lhs = strings.ReplaceAll(lhs, "x", "("+strconv.Itoa(it.Answer)+")")
				}
				tv, err := types.Eval(token.NewFileSet(), nil, token.NoPos, lhs)
				require.NoError(t, err, lhs)
				want, ok := new(big.Int).SetString(rhs, 10)
				require.True(t, ok, rhs)
				require.Equal(t, want.String(), tv.Value.ExactString(), "%s: answer %d", it.Problem(), it.Answer)
				require.LessOrEqual(t, new(big.Int).Abs(want).Cmp(big.NewInt(maxValue)), 0, it.Problem())
			}
		})
	}
	task, err := New(Config{Form: FormSolve, MinOperands: 4, MaxOperands: 4, MaxOperand: 1_000_000, Ops: "*"}, 1)
	require.NoError(t, err)
	_, err = task.Problems(Train, 1, 1)
	require.ErrorContains(t, err, "could reach values past 2^53 with operands up to max operand 1000000")
}

// TestMaxValueBound checks the bound by hand: terms' products summed,
// saturating at math.MaxInt.
func TestMaxValueBound(t *testing.T) {
	for _, c := range []struct {
		ops  string
		max  int
		want int
	}{
		{"", 7, 7},
		{"+-", 5, 15},
		{"*+*", 5, 50},
		{"**-", 5, 130},
		{"***", 1_000_000, math.MaxInt},
		{"**+**", 1 << 21, math.MaxInt},
		{"+**", 1 << 21, math.MaxInt},
	} {
		require.Equal(t, c.want, maxValueBound([]byte(c.ops), c.max), "%q %d", c.ops, c.max)
	}
}
