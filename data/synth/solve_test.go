package synth

import (
	"math"
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/spiral-rl/spiral/data"
)

// solveConfigs are the solve-form settings the tests sweep.
var solveConfigs = []struct {
	name string
	cfg  Config
}{
	{"embedded", EmbeddedConfig},
	{"long, wide", Config{Form: FormSolve, MinOperands: 4, MaxOperands: 5, MinOperand: 1, MaxOperand: 20}},
	{"products only", Config{Form: FormSolve, MinOperands: 2, MaxOperands: 3, MinOperand: 2, MaxOperand: 9, Ops: "*"}},
}

// trialRE matches the opening sentence of a trial, "x=g.".
var trialRE = regexp.MustCompile(`^x=(-?\d+)\.$`)

// parsedTrial is one parsed check of a guess: the value its steps reach
// (last), the result of its comparison with the right-hand side
// (residual), how many of its steps, the comparison included, are wrong,
// and its verdict.
type parsedTrial struct {
	guess, wrongSteps, last, residual int
	verdict                           string // "ok" or "no"
}

// parsedDerivation is the steps of a solve trace before its first guess:
// how many, how many are wrong, and the last one's result.
type parsedDerivation struct {
	steps, slips, last int
}

// parseTrials parses a solve trace, "A op B=R. ... x=g. A op B=R. ...
// R-T=D. ok|no \boxed{v}", into its derivation and its trials (each step
// checked with bigStep) and the boxed value. A trial's last step is its
// comparison, which must start from the value the steps before it reach.
func parseTrials(t *testing.T, text string) (parsedDerivation, []parsedTrial, int) {
	t.Helper()
	fields := strings.Split(text, " ")
	var deriv parsedDerivation
	var trials []parsedTrial
	var comparedFrom, checkSteps int // the current trial's last step's A, and its steps
	for _, f := range fields[:len(fields)-1] {
		if f == "ok" || f == "no" {
			require.NotEmpty(t, trials, "a verdict before the first guess in %q", text)
			require.GreaterOrEqual(t, checkSteps, 2, "a check of at least one step and a comparison in %q", text)
			cur := &trials[len(trials)-1]
			require.Equal(t, cur.last, comparedFrom, "the comparison starts from the check's value in %q", text)
			cur.verdict = f
			continue
		}
		if m := trialRE.FindStringSubmatch(f); m != nil {
			g, err := strconv.Atoi(m[1])
			require.NoError(t, err)
			trials = append(trials, parsedTrial{guess: g})
			checkSteps = 0
			continue
		}
		m := stepRE.FindStringSubmatch(f)
		require.NotNil(t, m, "sentence %q of %q", f, text)
		right := bigStep(t, m[1], m[2], m[3]) == m[4]
		last, err := strconv.Atoi(m[4])
		require.NoError(t, err)
		if len(trials) == 0 {
			deriv.steps++
			if !right {
				deriv.slips++
			}
			deriv.last = last
			continue
		}
		cur := &trials[len(trials)-1]
		if !right {
			cur.wrongSteps++
		}
		checkSteps++
		cur.last, cur.residual = cur.residual, last
		comparedFrom, err = strconv.Atoi(m[1])
		require.NoError(t, err)
	}
	ans, ok := data.LastBoxed(fields[len(fields)-1])
	require.True(t, ok, "no box in %q", text)
	v, err := strconv.Atoi(ans)
	require.NoError(t, err)
	return deriv, trials, v
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// substitute writes g for x in the left-hand side of an equation.
func substitute(lhs string, g int) string {
	return strings.Replace(lhs, "x", "("+strconv.Itoa(g)+")", 1)
}

// TestSolveSolutions checks solve problems against go/types: x occurs
// once, the true x makes the left side equal the target, no other value of
// the operand range does (the answer is unique), and the solution is one
// honest trial of x that reaches the target and boxes x.
func TestSolveSolutions(t *testing.T) {
	for _, tc := range solveConfigs {
		t.Run(tc.name, func(t *testing.T) {
			task, err := New(tc.cfg, 11)
			require.NoError(t, err)
			cfg := task.Config()
			r := rand.New(rand.NewPCG(3, 4))
			for i := range 1000 {
				it, err := task.Sample(r, Split(i%2))
				require.NoError(t, err)
				require.Equal(t, "Solve "+it.Expr+".", it.Problem())
				lhs, rhs, ok := strings.Cut(it.Expr, "=")
				require.True(t, ok, it.Expr)
				require.Equal(t, 1, strings.Count(lhs, "x"), it.Expr)
				require.Equal(t, rhs, strconv.Itoa(it.Target))
				for g := cfg.MinOperand; g <= cfg.MaxOperand; g++ {
					got := evalGo(t, substitute(lhs, g))
					require.Equal(t, g == it.Answer, got == it.Target, "x=%d in %q gives %d", g, it.Expr, got)
				}
				deriv, trials, boxed := parseTrials(t, it.Solution())
				require.Positive(t, deriv.steps, it.Solution())
				require.Zero(t, deriv.slips, it.Solution())
				require.Equal(t, it.Answer, deriv.last, it.Solution())
				require.Equal(t, []parsedTrial{{guess: it.Answer, last: it.Target, residual: 0, verdict: "ok"}}, trials, it.Solution())
				require.Equal(t, it.Answer, boxed)
				require.NotContains(t, it.Solution(), "+-")
				require.NotContains(t, it.Solution(), "--")
			}
		})
	}
}

// TestSolveDerivations checks solutions worked by hand: the derivation
// undoes the other terms from the right-hand side and divides by x's
// coefficient, for x's term added and subtracted, first and last, with a
// coefficient of several factors and with a negative right-hand side; and
// their confirmations, the same check without the derivation.
func TestSolveDerivations(t *testing.T) {
	for _, tc := range []struct {
		operands []int
		ops      string
		unknown  int
		want     string
	}{
		{[]int{5, 7, 3}, "*+", 0, `38-3=35. 35/7=5. x=5. 5*7=35. 35+3=38. 38-38=0. ok \boxed{5}`},
		{[]int{3, 5, 7}, "+*", 1, `38-3=35. 35/7=5. x=5. 5*7=35. 3+35=38. 38-38=0. ok \boxed{5}`},
		{[]int{9, 4, 2}, "-*", 1, `9-1=8. 8/2=4. x=4. 4*2=8. 9-8=1. 1-1=0. ok \boxed{4}`},
		{[]int{6, 6}, "-", 0, `0+6=6. x=6. 6-6=0. 0-0=0. ok \boxed{6}`},
		{[]int{2, 4, 3}, "**", 1, `2*3=6. 24/6=4. x=4. 2*4=8. 8*3=24. 24-24=0. ok \boxed{4}`},
		{[]int{5, 3, 7}, "*-", 2, `5*3=15. 15-8=7. x=7. 5*3=15. 15-7=8. 8-8=0. ok \boxed{7}`},
		{[]int{4, 7}, "-", 1, `4+3=7. x=7. 4-7=-3. -3+3=0. ok \boxed{7}`},
		{[]int{1, 9, 8}, "+-", 0, `2+8=10. 10-9=1. x=1. 1+9=10. 10-8=2. 2-2=0. ok \boxed{1}`},
		{[]int{2, 9, 6}, "--", 2, `2+13=15. 15-9=6. x=6. 2-9=-7. -7-6=-13. -13+13=0. ok \boxed{6}`},
		{[]int{8, 2, 3, 4}, "+-*", 1, `3*4=12. -2+12=10. 10-8=2. x=2. 3*4=12. 8+2=10. 10-12=-2. -2+2=0. ok \boxed{2}`},
	} {
		it := solveItem(tc.operands, []byte(tc.ops), tc.unknown)
		require.Equal(t, tc.want, it.Solution(), it.Expr)
		// The confirmation is the solution from its statement of x on.
		_, confirmation, ok := strings.Cut(tc.want, ". x=")
		require.True(t, ok, tc.want)
		require.Equal(t, "x="+confirmation, it.Confirmation(), it.Expr)
	}
}

// TestSolveAttempts checks wrong attempts: the derivation carries exactly
// one slip, in the chain after the terms' products, and arrives at the
// guess; the check of the guess is honest and says "no".
func TestSolveAttempts(t *testing.T) {
	task, err := New(solveConfigs[0].cfg, 5)
	require.NoError(t, err)
	cfg := task.Config()
	r := rand.New(rand.NewPCG(5, 6))
	slipAt := map[int]int{}
	for range 2000 {
		it, err := task.Sample(r, Train)
		require.NoError(t, err)
		g := it.wrongGuess(r, cfg.MinOperand, cfg.MaxOperand)
		text := it.Attempt(r, g)
		deriv, trials, boxed := parseTrials(t, text)
		require.Equal(t, 1, deriv.slips, text)
		require.Equal(t, g, deriv.last, text)
		require.Equal(t, g, boxed, text)
		require.Len(t, trials, 1, text)
		require.NotEqual(t, it.Target, trials[0].last, "the check of a wrong guess misses the target: %q", text)
		require.Equal(t, []parsedTrial{{guess: g, last: trials[0].last, residual: trials[0].last - it.Target, verdict: "no"}}, trials, text)
		steps, start := it.derivation()
		for i, f := range strings.Fields(text)[:len(steps)] {
			if m := stepRE.FindStringSubmatch(f); bigStep(t, m[1], m[2], m[3]) != m[4] {
				require.GreaterOrEqual(t, i, start, "a slip in a product: %q", text)
				slipAt[len(steps)-1-i]++
			}
		}
	}
	// Both the last step (the division or the last undo) and earlier
	// ones slip.
	require.Positive(t, slipAt[0])
	require.Positive(t, slipAt[1])
}

// TestSolveAggregateExamples checks solve aggregation examples: every
// candidate is an honest check of its stated answer that reaches the
// target exactly when the answer is right, about shortCandidateShare of
// them a check alone, the rest with a derivation; the completion confirms
// x by its check when a candidate is right, else is the worked solution.
// It also measures how often reading beats a vote.
func TestSolveAggregateExamples(t *testing.T) {
	for _, tc := range solveConfigs {
		t.Run(tc.name, func(t *testing.T) {
			task, err := New(tc.cfg, 3)
			require.NoError(t, err)
			r := rand.New(rand.NewPCG(7, 7))
			tm := Templates()
			const trials, n = 4000, 4
			wrongPlurality, allWrong, short, total := 0, 0, 0, 0
			for range trials {
				it, err := task.Sample(r, Train)
				require.NoError(t, err)
				ex, err := task.AggregateExample(r, nil, it, n)
				require.NoError(t, err)
				require.Equal(t, KindAggregate, ex.Kind)
				want, err := tm.Aggregate(it.Problem(), ex.Candidates)
				require.NoError(t, err)
				require.Equal(t, want, ex.Prompt)
				correct := 0
				counts := map[string]int{}
				for i, c := range ex.Candidates {
					deriv, ts, boxed := parseTrials(t, c)
					total++
					if deriv.steps == 0 {
						short++
					} else {
						require.Equal(t, boxed, deriv.last, "the derivation arrives at the guess: %q", c)
						require.Equal(t, boolInt(boxed != it.Answer), deriv.slips, "one slip in a wrong derivation: %q", c)
					}
					require.Len(t, ts, 1, c)
					require.Equal(t, ex.CandidateAnswers[i], strconv.Itoa(boxed))
					require.Equal(t, boxed, ts[0].guess, c)
					require.Zero(t, ts[0].wrongSteps, c)
					require.Equal(t, boxed == it.Answer, ts[0].last == it.Target, "only the right guess reaches the target: %q", c)
					require.Equal(t, ts[0].last-it.Target, ts[0].residual, c)
					require.Equal(t, boxed == it.Answer, ts[0].verdict == "ok", c)
					if boxed == it.Answer {
						correct++
					}
					counts[ex.CandidateAnswers[i]]++
				}
				require.Equal(t, correct, ex.CorrectCandidates)
				if correct == 0 {
					allWrong++
					require.Equal(t, it.Solution(), ex.Completion)
				} else {
					require.Equal(t, it.Confirmation(), ex.Completion)
				}
				if plurality(ex.CandidateAnswers, counts) != ex.Answer {
					wrongPlurality++
				}
			}
			t.Logf("of %d examples: plurality wrong %d, all wrong %d", trials, wrongPlurality, allWrong)
			// 16000 candidates: sd of the short share 0.004.
			require.InDelta(t, shortCandidateShare, float64(short)/float64(total), 0.02)
			// MistakeRate 0.5: all wrong p^4 = 0.0625 (sd 0.0038).
			require.InDelta(t, 0.0625, float64(allWrong)/trials, 0.0225)
			// Reading beats a vote whenever the plurality is wrong and a
			// candidate is right: shared mistakes (0.3) and ties won by a
			// wrong answer seen first make that at least 10%.
			require.Greater(t, float64(wrongPlurality-allWrong)/trials, 0.10)
		})
	}
}

// TestSolveSplit checks that the split keys on the whole equation: train
// and test problems never share one, in any order.
func TestSolveSplit(t *testing.T) {
	task, err := New(solveConfigs[0].cfg, 1)
	require.NoError(t, err)
	train, err := task.Problems(Train, 1000, 1)
	require.NoError(t, err)
	test, err := task.Problems(Test, 200, 1)
	require.NoError(t, err)
	seen := map[string]bool{}
	for _, it := range train {
		require.Equal(t, Train, task.SplitOf(it.Expr))
		seen[CanonicalExpr(it.Expr)] = true
	}
	for _, it := range test {
		require.Equal(t, Test, task.SplitOf(it.Expr))
		require.False(t, seen[CanonicalExpr(it.Expr)], "%q in both splits", it.Expr)
	}
}

// TestSolveLengths checks the sizes the embedded model's context and trace
// length need: searches of at most 90 characters (its traces stop at 96
// new tokens) and aggregation prompts with 4 candidates of at most 420,
// over 5000 samples.
func TestSolveLengths(t *testing.T) {
	task, err := New(solveConfigs[0].cfg, 1)
	require.NoError(t, err)
	r := rand.New(rand.NewPCG(8, 9))
	maxSol, maxAgg := 0, 0
	for range 5000 {
		it, err := task.Sample(r, Train)
		require.NoError(t, err)
		maxSol = max(maxSol, len(it.Solution()))
		ex, err := task.AggregateExample(r, nil, it, 4)
		require.NoError(t, err)
		maxAgg = max(maxAgg, len(ex.Prompt))
	}
	t.Logf("longest search %d chars, aggregation prompt %d", maxSol, maxAgg)
	require.LessOrEqual(t, maxSol, 90)
	require.LessOrEqual(t, maxAgg, 420)
}

// TestSolveCheckExamples checks the check examples among solve SFT
// examples: the prefix gives a derivation arriving at a guess from the
// operand range (with one slip when the guess is wrong), the
// completion checks that guess honestly and boxes it, and about checkShare
// of the search examples are check examples.
func TestSolveCheckExamples(t *testing.T) {
	task, err := New(solveConfigs[0].cfg, 1)
	require.NoError(t, err)
	r := rand.New(rand.NewPCG(4, 4))
	exs, err := task.SFTExamples(r, nil, 4000, Mix{Candidates: 4, ReadShare: 1})
	require.NoError(t, err)
	cfg := task.Config()
	checks, wrongGuesses := 0, 0
	for _, ex := range exs {
		// The search template is the problem itself: "Solve <lhs>=<rhs>."
		lhs, rhs, ok := strings.Cut(strings.TrimSuffix(strings.TrimPrefix(ex.Prompt, "Solve "), "."), "=")
		require.True(t, ok, ex.Prompt)
		target, err := strconv.Atoi(rhs)
		require.NoError(t, err)
		answer, err := strconv.Atoi(ex.Answer)
		require.NoError(t, err)
		require.Equal(t, target, evalGo(t, substitute(lhs, answer)), ex.Prompt)
		if ex.Kind != KindCheck {
			require.Equal(t, KindSearch, ex.Kind)
			require.Empty(t, ex.Prefix)
			deriv, trials, boxed := parseTrials(t, ex.Completion)
			require.Zero(t, deriv.slips, ex.Completion)
			require.Equal(t, answer, deriv.last, ex.Completion)
			require.Equal(t, []parsedTrial{{guess: answer, last: target, residual: 0, verdict: "ok"}}, trials, ex.Completion)
			require.Equal(t, answer, boxed)
			continue
		}
		checks++
		deriv, trials, boxed := parseTrials(t, ex.Prefix+ex.Completion)
		require.Len(t, trials, 1)
		g := trials[0].guess
		require.True(t, strings.HasSuffix(ex.Prefix, " x="+strconv.Itoa(g)+". "), "the prefix ends in the guess: %q", ex.Prefix)
		require.NotContains(t, ex.Completion, "x=", "the completion is the check alone")
		require.Equal(t, g, deriv.last, "the derivation arrives at the guess: %q", ex.Prefix)
		require.Equal(t, boolInt(g != answer), deriv.slips, ex.Prefix)
		require.True(t, g >= cfg.MinOperand && g <= cfg.MaxOperand, "guess %d", g)
		require.Equal(t, g, boxed)
		require.Zero(t, trials[0].wrongSteps, ex.Completion)
		require.Equal(t, g == answer, trials[0].last == target, ex.Completion)
		require.Equal(t, trials[0].last-target, trials[0].residual, ex.Completion)
		require.Equal(t, g == answer, trials[0].verdict == "ok", ex.Completion)
		if g != answer {
			wrongGuesses++
		}
	}
	// checkShare 0.5 of 4000 (sd 32): [0.45, 0.55]; guesses uniform over
	// n values are wrong (n-1)/n of the time (n = 5: sd 0.009).
	require.InDelta(t, 0.5, float64(checks)/4000, 0.05)
	n := float64(cfg.MaxOperand - cfg.MinOperand + 1)
	require.InDelta(t, (n-1)/n, float64(wrongGuesses)/float64(checks), 0.04)
}

func TestCheckVerdict(t *testing.T) {
	for _, tc := range []struct {
		trace         string
		passed, found bool
	}{
		{`x=5. 5*7=35. 35+3=38. ok \boxed{5}`, true, true},
		{`x=4. 4*7=28. 28+3=31. no \boxed{4}`, false, true},
		{`x=4. 4*7=28. 28+3=31. no x=5. 5*7=35. 35+3=38. ok \boxed{5}`, true, true}, // the last verdict
		{`x=5. 5*7=35. 35+3=38. ok x=4. 4*7=28. no \boxed{4}`, false, true},
		{`x=4. 4*7=28. \boxed{4}`, false, false},
		{`look \boxed{4}`, false, false},
		{"", false, false},
	} {
		passed, found := CheckVerdict(tc.trace)
		require.Equal(t, [2]bool{tc.passed, tc.found}, [2]bool{passed, found}, tc.trace)
	}
	// Every honest check reads back as its own verdict.
	task, err := New(solveConfigs[0].cfg, 3)
	require.NoError(t, err)
	r := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		it, err := task.Sample(r, Train)
		require.NoError(t, err)
		g := 1 + r.IntN(9) // beyond the operand range too
		passed, found := CheckVerdict(it.Trial(g) + boxed(g))
		require.True(t, found)
		require.Equal(t, g == it.Answer, passed, it.Trial(g))
	}
}

// TestSolveReadShare checks Mix.ReadShare on solve SFT examples: an
// aggregation example reads (its completion is AggregateExample's: the
// confirmation of x, or the worked solution when no candidate is right)
// with probability ReadShare; otherwise it confirms a candidate drawn
// uniformly, checked honestly, so it ends "no" when that candidate is
// wrong. ReadShare 1 leaves the examples of the same draws unchanged.
func TestSolveReadShare(t *testing.T) {
	task, err := New(solveConfigs[0].cfg, 1)
	require.NoError(t, err)
	all, err := task.SFTExamples(rand.New(rand.NewPCG(5, 5)), nil, 300, Mix{Candidates: 4, AggregateShare: 1, ReadShare: 1})
	require.NoError(t, err)
	// Without any read draw, every example is AggregateExample's, drawn
	// from the same stream after its problem.
	r := rand.New(rand.NewPCG(5, 5))
	for i, ex := range all {
		it, err := task.Sample(r, Train)
		require.NoError(t, err)
		r.Float64() // the aggregation share's draw
		want, err := task.AggregateExample(r, nil, it, 4)
		require.NoError(t, err)
		require.Equal(t, want, ex, "example %d", i)
	}
	for _, share := range []float64{0, 0.25, 0.7, 1} {
		t.Run(strconv.FormatFloat(share, 'g', -1, 64), func(t *testing.T) {
			const n = 4000
			exs, err := task.SFTExamples(rand.New(rand.NewPCG(6, 6)), nil, n, Mix{Candidates: 4, AggregateShare: 1, ReadShare: share})
			require.NoError(t, err)
			var right, want, variance float64
			for _, ex := range exs {
				require.Equal(t, KindAggregate, ex.Kind)
				answer, err := strconv.Atoi(ex.Answer)
				require.NoError(t, err)
				deriv, trials, boxed := parseTrials(t, ex.Completion)
				require.Len(t, trials, 1, ex.Completion)
				require.Zero(t, trials[0].wrongSteps, "the check is honest: %q", ex.Completion)
				require.Equal(t, boxed == answer, trials[0].verdict == "ok", ex.Completion)
				if deriv.steps > 0 {
					// Only a reading example with no right candidate
					// derives x afresh.
					require.Zero(t, ex.CorrectCandidates, ex.Completion)
					require.Equal(t, answer, boxed, ex.Completion)
					continue
				}
				require.Contains(t, ex.CandidateAnswers, strconv.Itoa(boxed), "the completion takes a candidate: %q", ex.Completion)
				if ex.CorrectCandidates == 0 {
					continue
				}
				// Reading takes x; a uniform pick is right with the
				// share of right candidates.
				p := share + (1-share)*float64(ex.CorrectCandidates)/4
				want += p
				variance += p * (1 - p)
				if boxed == answer {
					right++
				}
			}
			require.InDelta(t, want, right, 4*math.Sqrt(variance)+0.5, "right completions among examples with a right candidate")
		})
	}
}

// fieldsVerdict is the verdict read by strings.Fields: the last word
// "ok" or "no", a reference apart from VerdictAt's scan.
func fieldsVerdict(trace string) (passed, found bool) {
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

// TestVerdictAt: VerdictAt reads the verdict the last whitespace-separated
// word "ok" or "no" gives (fieldsVerdict), and says where its word starts.
func TestVerdictAt(t *testing.T) {
	for _, tc := range []struct {
		trace string
		at    int // -1: no verdict
	}{
		{`x=5. 38-38=0. ok \boxed{5}`, 14},
		{`x=4. 31-38=-7. no \boxed{4}`, 15},
		{`ok no`, 3},
		{"no\tok\n", 3},
		{"no\u00a0ok", 4},
		{"ok\u00a0", 0},
		{`nook okay no.`, -1},
		{`\boxed{4}`, -1},
		{``, -1},
		{` `, -1},
	} {
		passed, at, found := VerdictAt(tc.trace)
		wantPassed, wantFound := fieldsVerdict(tc.trace)
		require.Equal(t, wantFound, found, "%q", tc.trace)
		require.Equal(t, wantPassed, passed, "%q", tc.trace)
		if found {
			require.Equal(t, tc.at, at, "%q", tc.trace)
			require.Contains(t, []string{"ok", "no"}, tc.trace[at:at+2], "%q", tc.trace)
		} else {
			require.Equal(t, -1, tc.at, "%q", tc.trace)
		}
	}
}

// TestLongestAggregate: no aggregation example SFTExamples draws, of
// any problem of either split, is longer than LongestAggregate's of as
// many candidates (its prompt holds them all, each as long as its
// problem's longest), and the compute form, whose candidates are not
// enumerated, says so.
func TestLongestAggregate(t *testing.T) {
	task, err := Embedded()
	require.NoError(t, err)
	r := rand.New(rand.NewPCG(3, 3))
	for _, n := range []int{1, 4, 16} {
		longest, err := task.LongestAggregate(n)
		require.NoError(t, err)
		require.Len(t, longest.Candidates, n)
		for _, c := range longest.Candidates {
			require.Contains(t, longest.Prompt, c)
		}
		bound := len(longest.Prompt) + len(longest.Completion)
		exs, err := task.SFTExamples(r, nil, 20000, Mix{Candidates: n, AggregateShare: 1, ReadShare: 0.5})
		require.NoError(t, err)
		for _, ex := range exs {
			require.LessOrEqual(t, len(ex.Prompt)+len(ex.Completion), bound, "%d candidates: %q", n, ex.Prompt)
		}
	}
	_, err = task.LongestAggregate(0)
	require.ErrorContains(t, err, "0 candidates")
	compute, err := New(Config{}, 1)
	require.NoError(t, err)
	_, err = compute.LongestAggregate(4)
	require.EqualError(t, err, "synth: the longest aggregation example of the compute form is not known")
}
