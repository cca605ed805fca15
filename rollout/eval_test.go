package rollout

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/spiral-rl/spiral/data"
)

// The eval fakes work on text with one token per byte:
//   - search prompts are "S|<problem>";
//   - aggregation prompts are "A|<problem>|" followed by the candidates
//     separated by evalSep;
//   - a response's answer is the run of digits after its last "ans="
//     ("" when there is none), and answers are equal when they are equal
//     after dropping leading zeros ("07" == "7"), which string equality
//     would not see.

const evalSep = "\x1e"

type evalPrompter struct{}

func (evalPrompter) SearchPrompt(problem string) ([]int32, error) {
	return evalTokens("S|" + problem), nil
}

func (evalPrompter) AggregatePrompt(problem string, cands []string) ([]int32, error) {
	return evalTokens("A|" + problem + "|" + strings.Join(cands, evalSep)), nil
}

func (evalPrompter) Text(ids []int32) string {
	b := make([]byte, len(ids))
	for i, id := range ids {
		b[i] = byte(id)
	}
	return string(b)
}

func evalTokens(s string) []int32 {
	ids := make([]int32, len(s))
	for i := range len(s) {
		ids[i] = int32(s[i])
	}
	return ids
}

func evalAnswer(text string) string {
	i := strings.LastIndex(text, "ans=")
	if i < 0 {
		return ""
	}
	rest := text[i+len("ans="):]
	j := 0
	for j < len(rest) && rest[j] >= '0' && rest[j] <= '9' {
		j++
	}
	return rest[:j]
}

func evalNorm(a string) string {
	t := strings.TrimLeft(a, "0")
	if t == "" && a != "" {
		return "0"
	}
	return t
}

func evalEqual(a, b string) bool { return evalNorm(a) == evalNorm(b) }

// evalGrade finds the answer after "ans=" (an explicit answer, in the
// fakes' convention).
func evalGrade(response, gold string) Verdict {
	a := evalAnswer(response)
	return Verdict{Answer: a, Explicit: a != "", Correct: a != "" && evalEqual(a, gold)}
}

var evalJudge = Judge{Grade: evalGrade, Equal: evalEqual}

// evalText decodes like evalPrompter.
func evalText(ids []int32) string { return evalPrompter{}.Text(ids) }

// evalScripted answers call c, request r with script[c][r] and records
// requests and completions.
type evalScripted struct {
	script [][]string
	calls  [][]Request
	outs   [][]Completion
	// limit, when > 0, is the sampler's MaxNewTokens: a scripted trace of
	// that many tokens or more is cut there and finishes FinishLength.
	limit int
}

func (g *evalScripted) Generate(_ context.Context, reqs []Request, _ Progress) ([]Completion, Stats, error) {
	c := len(g.calls)
	if c >= len(g.script) || len(g.script[c]) != len(reqs) {
		return nil, Stats{}, fmt.Errorf("eval fake: call %d with %d requests not scripted", c, len(reqs))
	}
	outs := make([]Completion, len(reqs))
	for r, req := range reqs {
		outs[r] = Completion{Tokens: evalTokens(g.script[c][r]), Finish: FinishStop, PromptTokens: len(req.Prompt)}
		if g.limit > 0 && len(outs[r].Tokens) >= g.limit {
			outs[r].Tokens, outs[r].Finish = outs[r].Tokens[:g.limit], FinishLength
		}
	}
	g.calls = append(g.calls, reqs)
	g.outs = append(g.outs, outs)
	return outs, Stats{}, nil
}

func TestPowersOfTwo(t *testing.T) {
	tests := []struct {
		name string
		max  int
		want []int
	}{
		{"zero", 0, nil},
		{"negative", -3, nil},
		{"one", 1, []int{1}},
		{"power", 16, []int{1, 2, 4, 8, 16}},
		{"not a power: max appended", 12, []int{1, 2, 4, 8, 12}},
		{"three", 3, []int{1, 2, 3}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, PowersOfTwo(tc.max))
		})
	}
	t.Run("no overflow at MaxInt", func(t *testing.T) {
		got := PowersOfTwo(math.MaxInt)
		// 2^0..2^62 are <= MaxInt = 2^63-1, then MaxInt itself.
		require.Len(t, got, 64)
		require.Equal(t, 1<<62, got[62])
		require.Equal(t, math.MaxInt, got[63])
	})
}

// evalPassProblems: problem A (gold 7) has answers 7, 7, 3, 07 and
// problem B (gold 5) has 1, 2, 2, 5.
func evalPassProblems() ([]data.Problem, *evalScripted) {
	problems := []data.Problem{{ID: "A", Problem: "a", Answer: "7"}, {ID: "B", Problem: "b", Answer: "5"}}
	gen := &evalScripted{script: [][]string{{"ans=7", "ans=7", "ans=3", "ans=07", "ans=1", "ans=2", "ans=2", "ans=5"}}}
	return problems, gen
}

func TestPassAtKHandComputedReport(t *testing.T) {
	problems, gen := evalPassProblems()
	e := Evaluator{Gen: gen, Prompter: evalPrompter{}, Judge: evalJudge}
	res, err := e.PassAtK(context.Background(), problems, PassAtKConfig{Samples: 4}, 1)
	require.NoError(t, err)
	require.Equal(t, []int{1, 2, 4}, res.Config.Ks, "default ks are powers of two up to n")
	// pass@k = 1 - C(n-c,k)/C(n,k) with n = 4; A has c = 3 (07 counts as
	// 7), B has c = 1.
	//   A: pass@1 = 3/4, pass@2 = 1 - C(1,2)/C(4,2) = 1, pass@4 = 1.
	//   B: pass@1 = 1/4, pass@2 = 1 - C(3,2)/C(4,2) = 1/2, pass@4 = 1.
	// majority@k over all C(4,k) subsets, ties to the earliest sample:
	//   A: maj@1 = 3/4; maj@2: of the 6 pairs only {3, 07} (tie, 3 first)
	//      is wrong -> 5/6; maj@4: cluster {7,7,07} wins -> 1.
	//   B: maj@1 = 1/4; maj@2: every pair with 5 ties it with an earlier
	//      answer, the others lack 5 -> 0; maj@4: {2,2} wins -> 0.
	want := []KPoint{
		{K: 1, PassAtK: (0.75 + 0.25) / 2, MajorityAtK: (0.75 + 0.25) / 2, MajorityExact: true},
		{K: 2, PassAtK: (1 + 0.5) / 2, MajorityAtK: (5.0/6 + 0.0) / 2, MajorityExact: true},
		{K: 4, PassAtK: (1.0 + 1.0) / 2, MajorityAtK: (1.0 + 0.0) / 2, MajorityExact: true},
	}
	require.Len(t, res.Points, len(want))
	for i, w := range want {
		got := res.Points[i]
		require.Equal(t, w.K, got.K)
		require.InDelta(t, w.PassAtK, got.PassAtK, 1e-12, "pass@%d", w.K)
		require.InDelta(t, w.MajorityAtK, got.MajorityAtK, 1e-12, "majority@%d", w.K)
		require.Equal(t, w.MajorityExact, got.MajorityExact)
	}
	require.Equal(t, []ProblemCorrect{{ID: "A", Correct: 3}, {ID: "B", Correct: 1}}, res.PerProblem)
	// Tokens: prompts "S|a" and "S|b" (3 tokens) x 4 samples each; the
	// generated texts are 5 bytes, except "ans=07" (6).
	require.Equal(t, Tokens{Prompt: 8 * 3, Generated: 7*5 + 6}, res.Tokens)
}

func TestSampleSeedsAndOrder(t *testing.T) {
	problems, gen := evalPassProblems()
	e := Evaluator{Gen: gen, Prompter: evalPrompter{}, Judge: evalJudge}
	set, err := e.Sample(context.Background(), problems, 4, 99)
	require.NoError(t, err)
	require.Len(t, gen.calls, 1, "one batched Generate call")
	seen := map[uint64]bool{}
	for r, req := range gen.calls[0] {
		i := r / 4
		require.Equal(t, "S|"+problems[i].Problem, evalText(req.Prompt))
		require.False(t, seen[req.Seed], "request %d reuses a seed", r)
		seen[req.Seed] = true
	}
	require.Equal(t, "07", set.Traces[0][3].Verdict.Answer)
	require.True(t, set.Traces[0][3].Verdict.Correct)
	require.False(t, set.Traces[1][0].Verdict.Correct)
}

// TestSampleTraces: the sink gets each sample once, judged, at step 0.
func TestSampleTraces(t *testing.T) {
	problems, gen := evalPassProblems()
	var got []TracedTrace
	e := Evaluator{Gen: gen, Prompter: evalPrompter{}, Judge: evalJudge, Traces: func(b []TracedTrace) error {
		got = append(got, b...)
		return nil
	}}
	_, err := e.PassAtK(context.Background(), problems, PassAtKConfig{Samples: 4}, 1)
	require.NoError(t, err)
	require.Len(t, got, 8)
	for r, tt := range got {
		require.Equal(t, TracedTrace{Step: 0, Problem: r / 4, Sample: r % 4, Trace: tt.Trace}, tt, "trace %d", r)
		require.Equal(t, gen.script[0][r], tt.Trace.Text)
	}
	require.Equal(t, []bool{true, true, false, true, false, false, false, true}, func() []bool {
		var c []bool
		for _, tt := range got {
			c = append(c, tt.Trace.Verdict.Correct)
		}
		return c
	}(), "judged before the sink sees them")
}

func TestSequentialBudgetTruncation(t *testing.T) {
	problems := []data.Problem{{ID: "A", Problem: "a", Answer: "7"}, {ID: "B", Problem: "b", Answer: "1"}}
	script := []string{
		"ans=7",        // 5 tokens, correct from budget 5
		"xxxxxxxans=7", // 12 tokens, correct from budget 12
		"ans=3",        // 5 tokens, never correct
		"xxxans=7xxxx", // 12 tokens, correct from budget 8 ("xxxans=7")
		"ans=1", "ans=1", "ans=1", "ans=2",
	}
	tests := []struct {
		name    string
		cfg     BudgetConfig
		limit   int // the generator's token limit (0: none)
		budgets []int
		want    []BudgetPoint
	}{
		{
			name:    "given budgets",
			cfg:     BudgetConfig{Samples: 4, Budgets: []int{4, 8, 16}},
			budgets: []int{4, 8, 16},
			// Per problem, correct traces at the budget / 4, averaged:
			//   b=4:  A 0/4, B 0/4 ("ans=" has no digits)      -> 0
			//   b=8:  A 2/4 (ans=7, xxxans=7), B 3/4            -> 0.625
			//   b=16: A 3/4, B 3/4                              -> 0.75
			// MeanTokens = mean of min(len, b) over the 8 traces:
			//   b=4: 4; b=8: (5+8+5+8 + 4*5)/8 = 5.75;
			//   b=16: (5+12+5+12 + 4*5)/8 = 6.75.
			// Truncated: b=4: 8/8; b=8: 2/8; b=16: 0.
			want: []BudgetPoint{
				{Budget: 4, Accuracy: 0, MeanTokens: 4, Truncated: 1},
				{Budget: 8, Accuracy: 0.625, MeanTokens: 5.75, Truncated: 0.25},
				{Budget: 16, Accuracy: 0.75, MeanTokens: 6.75, Truncated: 0},
			},
		},
		{
			name: "default budgets up to the longest trace",
			cfg:  BudgetConfig{Samples: 4},
			// longest trace = 12 -> 1, 2, 4, 8, 12
			budgets: []int{1, 2, 4, 8, 12},
			want: []BudgetPoint{
				{Budget: 1, Accuracy: 0, MeanTokens: 1, Truncated: 1},
				{Budget: 2, Accuracy: 0, MeanTokens: 2, Truncated: 1},
				{Budget: 4, Accuracy: 0, MeanTokens: 4, Truncated: 1},
				{Budget: 8, Accuracy: 0.625, MeanTokens: 5.75, Truncated: 0.25},
				// b=12 is every trace in full: A 3/4, B 3/4.
				{Budget: 12, Accuracy: 0.75, MeanTokens: 6.75, Truncated: 0},
			},
		},
		{
			name: "default budgets up to max tokens",
			cfg:  BudgetConfig{Samples: 4, MaxTokens: 16},
			// 1..16; budget 16 equals the full traces.
			budgets: []int{1, 2, 4, 8, 16},
			want: []BudgetPoint{
				{Budget: 1, Accuracy: 0, MeanTokens: 1, Truncated: 1},
				{Budget: 2, Accuracy: 0, MeanTokens: 2, Truncated: 1},
				{Budget: 4, Accuracy: 0, MeanTokens: 4, Truncated: 1},
				{Budget: 8, Accuracy: 0.625, MeanTokens: 5.75, Truncated: 0.25},
				{Budget: 16, Accuracy: 0.75, MeanTokens: 6.75, Truncated: 0},
			},
		},
		{
			name: "traces cut at the generator's limit are truncated at every budget",
			cfg:  BudgetConfig{Samples: 4, MaxTokens: 12},
			// The two 12-token traces hit the limit of 12 (FinishLength):
			// at budget 12 they are whole but were cut, so 2/8 truncated,
			// not 0. xxxans=7xxxx stated its answer and still grades;
			// xxxxxxxans=7's answer runs up to the cut, where it may have
			// been going on ("ans=70"), so it had not: A 2/4, B 3/4.
			limit:   12,
			budgets: []int{1, 2, 4, 8, 12},
			want: []BudgetPoint{
				{Budget: 1, Accuracy: 0, MeanTokens: 1, Truncated: 1},
				{Budget: 2, Accuracy: 0, MeanTokens: 2, Truncated: 1},
				{Budget: 4, Accuracy: 0, MeanTokens: 4, Truncated: 1},
				{Budget: 8, Accuracy: 0.625, MeanTokens: 5.75, Truncated: 0.25},
				{Budget: 12, Accuracy: 0.625, MeanTokens: 6.75, Truncated: 0.25},
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			gen := &evalScripted{script: [][]string{script}, limit: tc.limit}
			e := Evaluator{Gen: gen, Prompter: evalPrompter{}, Judge: evalJudge}
			res, err := e.Sequential(context.Background(), problems, tc.cfg, 3)
			require.NoError(t, err)
			require.Equal(t, tc.budgets, res.Config.Budgets)
			require.Len(t, res.Points, len(tc.want))
			for i, w := range tc.want {
				got := res.Points[i]
				require.Equal(t, w.Budget, got.Budget)
				require.InDelta(t, w.Accuracy, got.Accuracy, 1e-12, "accuracy at %d", w.Budget)
				require.InDelta(t, w.MeanTokens, got.MeanTokens, 1e-12, "mean tokens at %d", w.Budget)
				require.InDelta(t, w.Truncated, got.Truncated, 1e-12, "truncated at %d", w.Budget)
			}
		})
	}
}

// TestBudgetCountsTheStopToken: a sequential budget of b is b generated
// tokens, the stop token included, as --max-new-tokens counts them (the
// sampler ends a row at its limit whatever it drew; the paper's
// sequential budget is the chain's maximum token count), so budget b
// grades a trace as generation at --max-new-tokens b would have. A trace
// of 3 text tokens and its stop token, "x=7" with its answer taken from
// its last number (unboxed: a cut trace states none):
//
//	b=3: cut to "x=7" (generation at 3 would have stopped there, cut):
//	     truncated, no answer, 3 tokens;
//	b=4: whole, stopped: correct, 4 tokens.
func TestBudgetCountsTheStopToken(t *testing.T) {
	const stop = 0
	text := func(ids []int32) string {
		b := make([]byte, 0, len(ids))
		for _, id := range ids {
			if id != stop {
				b = append(b, byte(id))
			}
		}
		return string(b)
	}
	judge := Judge{Grade: func(response, gold string) Verdict {
		a := response[len(response)-1:]
		return Verdict{Answer: a, Correct: a == gold}
	}, Equal: evalEqual}
	tr := Trace{Completion: Completion{Tokens: append(evalTokens("x=7"), stop), Finish: FinishStop}, Text: "x=7"}
	tr.Verdict = judge.Judge(tr, "7")
	set := &SampleSet{Problems: []data.Problem{{ID: "a", Problem: "a", Answer: "7"}}, Traces: [][]Trace{{tr}}}
	pts, err := BudgetCurve(set, []int{3, 4}, text, judge)
	require.NoError(t, err)
	require.Equal(t, []BudgetPoint{
		{Budget: 3, Accuracy: 0, MeanTokens: 3, Truncated: 1},
		{Budget: 4, Accuracy: 1, MeanTokens: 4, Truncated: 0},
	}, pts)
	atLimit := Trace{Completion: Completion{Tokens: evalTokens("x=7"), Finish: FinishLength}, Text: "x=7"}
	require.False(t, judge.Judge(atLimit, "7").Correct, "generation at --max-new-tokens 3 grades it so")
}

func TestEvalErrors(t *testing.T) {
	problems, _ := evalPassProblems()
	failing := errors.New("boom")
	tests := []struct {
		name string
		run  func() error
		want string
	}{
		{"no judge", func() error {
			_, err := Evaluator{Gen: &evalScripted{}, Prompter: evalPrompter{}}.Sample(context.Background(), problems, 1, 0)
			return err
		}, "judge"},
		{"no generator", func() error {
			_, err := Evaluator{Prompter: evalPrompter{}, Judge: evalJudge}.Sample(context.Background(), problems, 1, 0)
			return err
		}, "generator"},
		{"zero samples", func() error {
			_, err := Evaluator{Gen: &evalScripted{}, Prompter: evalPrompter{}, Judge: evalJudge}.Sample(context.Background(), problems, 0, 0)
			return err
		}, "samples"},
		{"generator error wrapped", func() error {
			_, err := Evaluator{Gen: evalFailing{failing}, Prompter: evalPrompter{}, Judge: evalJudge}.Sample(context.Background(), problems, 2, 0)
			if !errors.Is(err, failing) {
				return fmt.Errorf("lost the cause: %v", err)
			}
			return err
		}, "rollout: sample: boom"},
		{"zero samples for pass@k", func() error {
			_, err := Evaluator{Gen: &evalScripted{}, Prompter: evalPrompter{}, Judge: evalJudge}.PassAtK(context.Background(), problems, PassAtKConfig{}, 0)
			return err
		}, "--samples 0"},
		{"short generator", func() error {
			_, err := Evaluator{Gen: evalShort{}, Prompter: evalPrompter{}, Judge: evalJudge}.Sample(context.Background(), problems, 2, 0)
			return err
		}, "3 completions for 4 requests"},
		{"k above n", func() error {
			_, gen := evalPassProblems()
			_, err := Evaluator{Gen: gen, Prompter: evalPrompter{}, Judge: evalJudge}.PassAtK(context.Background(), problems, PassAtKConfig{Samples: 4, Ks: []int{8}}, 0)
			return err
		}, "k = 8 > n = 4"},
		{"budgets not increasing", func() error {
			_, gen := evalPassProblems()
			_, err := Evaluator{Gen: gen, Prompter: evalPrompter{}, Judge: evalJudge}.Sequential(context.Background(), problems, BudgetConfig{Samples: 4, Budgets: []int{8, 4}}, 0)
			return err
		}, "not increasing"},
		{"zero budget", func() error {
			_, gen := evalPassProblems()
			_, err := Evaluator{Gen: gen, Prompter: evalPrompter{}, Judge: evalJudge}.Sequential(context.Background(), problems, BudgetConfig{Samples: 4, Budgets: []int{0, 4}}, 0)
			return err
		}, "budget 0 < 1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.run()
			require.Error(t, err)
			require.Contains(t, err.Error(), tc.want)
		})
	}
}

// TestEvalConfigCheckedBeforeSampling: a k or budget list that cannot
// give a readable report (k outside [1, n], a budget below 1, values not
// strictly increasing) is refused before any trace is generated, not
// after the whole generation (or, for a repeated value, not at all: the
// report was written and report.ReadJSON refused it, "want k increasing").
func TestEvalConfigCheckedBeforeSampling(t *testing.T) {
	problems, _ := evalPassProblems()
	for _, tc := range []struct {
		name string
		run  func(Evaluator) error
		want string
	}{
		{"k above n", func(e Evaluator) error {
			_, err := e.PassAtK(context.Background(), problems, PassAtKConfig{Samples: 4, Ks: []int{1, 8}}, 0)
			return err
		}, "k = 8 > n = 4"},
		{"k zero", func(e Evaluator) error {
			_, err := e.PassAtK(context.Background(), problems, PassAtKConfig{Samples: 4, Ks: []int{0, 2}}, 0)
			return err
		}, "k = 0 < 1"},
		{"k repeated", func(e Evaluator) error {
			_, err := e.PassAtK(context.Background(), problems, PassAtKConfig{Samples: 4, Ks: []int{1, 2, 2}}, 0)
			return err
		}, "not increasing"},
		{"k decreasing", func(e Evaluator) error {
			_, err := e.PassAtK(context.Background(), problems, PassAtKConfig{Samples: 4, Ks: []int{2, 1}}, 0)
			return err
		}, "not increasing"},
		{"zero budget", func(e Evaluator) error {
			_, err := e.Sequential(context.Background(), problems, BudgetConfig{Samples: 4, Budgets: []int{0, 4}}, 0)
			return err
		}, "budget 0 < 1"},
		{"budget repeated", func(e Evaluator) error {
			_, err := e.Sequential(context.Background(), problems, BudgetConfig{Samples: 4, Budgets: []int{4, 4}}, 0)
			return err
		}, "not increasing"},
		{"budgets decreasing", func(e Evaluator) error {
			_, err := e.Sequential(context.Background(), problems, BudgetConfig{Samples: 4, Budgets: []int{8, 4}}, 0)
			return err
		}, "not increasing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, gen := evalPassProblems()
			err := tc.run(Evaluator{Gen: gen, Prompter: evalPrompter{}, Judge: evalJudge})
			require.ErrorContains(t, err, tc.want)
			require.Empty(t, gen.calls, "refused before generating")
		})
	}
}

type evalFailing struct{ err error }

func (g evalFailing) Generate(context.Context, []Request, Progress) ([]Completion, Stats, error) {
	return nil, Stats{}, g.err
}

// evalShort drops the last completion.
type evalShort struct{}

func (evalShort) Generate(_ context.Context, reqs []Request, _ Progress) ([]Completion, Stats, error) {
	return make([]Completion, len(reqs)-1), Stats{}, nil
}

func BenchmarkPassAtKCurve(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	const problems, n = 64, 16
	set := &SampleSet{Problems: make([]data.Problem, problems), Traces: make([][]Trace, problems)}
	for i := range set.Traces {
		set.Traces[i] = make([]Trace, n)
		for j := range set.Traces[i] {
			a := rng.IntN(4)
			set.Traces[i][j] = Trace{Verdict: Verdict{Answer: fmt.Sprint(a), Correct: a == 0}}
		}
	}
	b.ResetTimer()
	for b.Loop() {
		if _, err := PassAtKCurve(rng, set, nil, evalEqual, MajorityConfig{}); err != nil {
			b.Fatal(err)
		}
	}
}

func TestPassAtKCurveRejectsMalformedSets(t *testing.T) {
	two := []Trace{{}, {}}
	for name, tc := range map[string]struct {
		set  *SampleSet
		want string
	}{
		"empty":                         {&SampleSet{}, "no samples"},
		"ragged":                        {&SampleSet{Problems: make([]data.Problem, 2), Traces: [][]Trace{two, two[:1]}}, "problem 1 has 1 samples, problem 0 has 2"},
		"traces without their problems": {&SampleSet{Problems: make([]data.Problem, 1), Traces: [][]Trace{two, two}}, "1 problems with traces for 2"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := PassAtKCurve(nil, tc.set, []int{1}, evalEqual, MajorityConfig{})
			require.ErrorContains(t, err, tc.want)
		})
	}
}

// TestMajorityCutTracesDoNotVote: a trace cut at the token limit that had
// stated no explicit answer earns nothing (Judge), and so it casts no
// vote either, as in the default rule, where such a trace has no answer:
// with a fallback grade (the last number) its number would otherwise
// vote, and a cluster headed by it would count as wrong even when its
// answer is the gold one, so that majority@k would depend on the order of
// the samples. Expected values are hand-computed over all subsets.
func TestMajorityCutTracesDoNotVote(t *testing.T) {
	// The fallback grade: "ans=N" is explicit, else the last digit run.
	fallback := func(response, gold string) Verdict {
		if v := evalGrade(response, gold); v.Explicit {
			return v
		}
		a := ""
		for _, f := range strings.FieldsFunc(response, func(r rune) bool { return r < '0' || r > '9' }) {
			a = f
		}
		return Verdict{Answer: a, Correct: a != "" && evalEqual(a, gold)}
	}
	for _, tc := range []struct {
		name    string
		samples []string // cut at 6 tokens: "x=7 and more" is "x=7 an"
		want    []float64
	}{
		// {cut}: no vote, wrong; {ans=7}: right; {cut, ans=7}: 7 wins.
		{"cut trace first", []string{"x=7 and more", "ans=7"}, []float64{1.0 / 2, 1}},
		{"cut trace last", []string{"ans=7", "x=7 and more"}, []float64{1.0 / 2, 1}},
		// The two cut 3s never outvote the explicit 7: k = 2, {cut,
		// cut} has no vote, the two pairs with ans=7 are right.
		{"cut traces outnumber", []string{"x=3 and more", "y=3 and more", "ans=7"}, []float64{1.0 / 3, 2.0 / 3, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gen := &evalScripted{script: [][]string{tc.samples}, limit: 6}
			e := Evaluator{Gen: gen, Prompter: evalPrompter{}, Judge: Judge{Grade: fallback, Equal: evalEqual}}
			res, err := e.PassAtK(context.Background(), []data.Problem{{ID: "A", Problem: "a", Answer: "7"}}, PassAtKConfig{Samples: len(tc.samples)}, 1)
			require.NoError(t, err)
			require.Len(t, res.Points, len(tc.want))
			for i, w := range tc.want {
				require.InDelta(t, w, res.Points[i].MajorityAtK, 1e-12, "majority@%d", res.Points[i].K)
			}
			require.Equal(t, 1, res.PerProblem[0].Correct, "only the explicit 7 earns a reward")
		})
	}
}

// evalSeeded answers each request from its seed alone ("ans=<seed % 4>",
// a request's answer whatever call it is in), as a seeded engine does,
// and fails its call failAt (1-based; 0: none).
type evalSeeded struct {
	calls  int
	failAt int
	seeds  []uint64
}

func (g *evalSeeded) Generate(_ context.Context, reqs []Request, _ Progress) ([]Completion, Stats, error) {
	g.calls++
	if g.calls == g.failAt {
		return nil, Stats{}, errors.New("engine gone")
	}
	outs := make([]Completion, len(reqs))
	for r, req := range reqs {
		g.seeds = append(g.seeds, req.Seed)
		outs[r] = Completion{Tokens: evalTokens(fmt.Sprintf("ans=%d", req.Seed%4)), Finish: FinishStop, PromptTokens: len(req.Prompt)}
		if req.Seed%5 == 0 {
			outs[r].Finish = FinishLength
		}
	}
	return outs, Stats{}, nil
}

// TestPassAtKResumed: a pass@k evaluation generated in chunks, which
// fails after two of them, saves those chunks' problems as they finish
// (Done); resumed from them (only their verdicts and finish reasons, as
// a file keeps them), it generates only the other problems, and its
// result is an uninterrupted evaluation's, bit for bit.
func TestPassAtKResumed(t *testing.T) {
	var problems []data.Problem
	for i := range 7 {
		problems = append(problems, data.Problem{ID: fmt.Sprint("p", i), Problem: fmt.Sprint("q", i), Answer: fmt.Sprint(i % 4)})
	}
	cfg := PassAtKConfig{Samples: 3}
	ctx := context.Background()
	whole := &evalSeeded{}
	want, err := Evaluator{Gen: whole, Prompter: evalPrompter{}, Judge: evalJudge}.PassAtK(ctx, problems, cfg, 5)
	require.NoError(t, err)
	require.Equal(t, 1, whole.calls, "without Chunk, one Generate call")

	saved := map[int]SampledProblem{}
	cut := &evalSeeded{failAt: 3}
	e := Evaluator{Gen: cut, Prompter: evalPrompter{}, Judge: evalJudge, Chunk: 2, Done: func(ps []SampledProblem) error {
		for _, p := range ps {
			kept := SampledProblem{Index: p.Index, Tokens: p.Tokens}
			for _, tr := range p.Traces {
				kept.Traces = append(kept.Traces, Trace{Completion: Completion{Finish: tr.Finish}, Verdict: tr.Verdict})
			}
			saved[p.Index] = kept
		}
		return nil
	}}
	_, err = e.PassAtK(ctx, problems, cfg, 5)
	require.ErrorContains(t, err, "engine gone")
	require.Len(t, saved, 4, "the two chunks that finished")
	require.Equal(t, whole.seeds[:4*3], cut.seeds, "chunks of the problems in order, seeded as in one call")

	rest := &evalSeeded{}
	var traced []int
	resumed := maps.Clone(saved)
	e.Gen, e.Resumed, e.Traces = rest, resumed, func(b []TracedTrace) error {
		for _, tt := range b {
			traced = append(traced, tt.Problem)
		}
		return nil
	}
	got, err := e.PassAtK(ctx, problems, cfg, 5)
	require.NoError(t, err)
	require.Equal(t, want, got)
	require.Equal(t, 2, rest.calls, "problems 4, 5 and 6 in chunks of 2")
	require.Equal(t, whole.seeds[4*3:], rest.seeds, "only the problems not resumed")
	require.Equal(t, []int{4, 4, 4, 5, 5, 5, 6, 6, 6}, traced, "the generated traces, under their problems' indices")

	// Every problem saved (a rerun of one whose report failed to be
	// written): nothing is generated.
	require.Len(t, saved, 7, "the rerun saved the rest")
	got, err = Evaluator{Gen: evalFailing{errors.New("generated")}, Prompter: evalPrompter{}, Judge: evalJudge, Resumed: saved}.PassAtK(ctx, problems, cfg, 5)
	require.NoError(t, err)
	require.Equal(t, want, got)

	_, err = Evaluator{Gen: &evalSeeded{}, Prompter: evalPrompter{}, Judge: evalJudge, Resumed: saved}.PassAtK(ctx, problems, PassAtKConfig{Samples: 2}, 5)
	require.ErrorContains(t, err, `problem "p0" resumed with 3 samples, want 2`)
	_, err = Evaluator{Gen: &evalSeeded{}, Prompter: evalPrompter{}, Judge: evalJudge, Resumed: saved}.Sequential(ctx, problems, BudgetConfig{Samples: 3}, 5)
	require.ErrorContains(t, err, `resumed problem "p0" keeps 0 of its traces' 15 generated tokens`)
}

// TestSequentialResumed: a sequential evaluation resumed from the
// problems an interrupted one saved, with every trace's generated
// tokens (which its budget curve cuts), generates only the others, and
// its result is an uninterrupted evaluation's.
func TestSequentialResumed(t *testing.T) {
	var problems []data.Problem
	for i := range 7 {
		problems = append(problems, data.Problem{ID: fmt.Sprint("p", i), Problem: fmt.Sprint("q", i), Answer: fmt.Sprint(i % 4)})
	}
	cfg := BudgetConfig{Samples: 3}
	ctx := context.Background()
	want, err := Evaluator{Gen: &evalSeeded{}, Prompter: evalPrompter{}, Judge: evalJudge}.Sequential(ctx, problems, cfg, 5)
	require.NoError(t, err)

	saved := map[int]SampledProblem{}
	e := Evaluator{Gen: &evalSeeded{failAt: 3}, Prompter: evalPrompter{}, Judge: evalJudge, Chunk: 2, Done: func(ps []SampledProblem) error {
		for _, p := range ps {
			kept := SampledProblem{Index: p.Index, Tokens: p.Tokens}
			for _, tr := range p.Traces {
				kept.Traces = append(kept.Traces, Trace{Completion: Completion{Tokens: tr.Tokens, Finish: tr.Finish}, Verdict: tr.Verdict})
			}
			saved[p.Index] = kept
		}
		return nil
	}}
	_, err = e.Sequential(ctx, problems, cfg, 5)
	require.ErrorContains(t, err, "engine gone")
	require.Len(t, saved, 4)
	rest := &evalSeeded{}
	e.Gen, e.Resumed = rest, saved
	got, err := e.Sequential(ctx, problems, cfg, 5)
	require.NoError(t, err)
	require.Equal(t, want, got)
	require.Equal(t, 2, rest.calls, "problems 4, 5 and 6 in chunks of 2")
}
