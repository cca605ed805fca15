package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/spiral-rl/spiral/rollout/report"
)

func TestTallyHandComputed(t *testing.T) {
	recs := []report.TraceRecord{
		// Step 0 of problem 0: right+ok, right+no, wrong+ok, wrong+no, no verdict.
		// The last "no" does not follow its (wrong) comparison.
		{Step: 0, Problem: 0, Sample: 0, Text: `x=5. 35+3=38. 38-38=0. ok \boxed{5}`, Correct: true},
		{Step: 0, Problem: 0, Sample: 1, Text: `x=5. 35+3=39. 39-38=1. no \boxed{5}`, Correct: true},
		{Step: 0, Problem: 0, Sample: 2, Text: `x=4. 28+3=38. 38-38=0. ok \boxed{4}`},
		{Step: 0, Problem: 0, Sample: 3, Text: `x=4. 28+3=31. 31-38=0. no \boxed{4}`},
		{Step: 0, Problem: 0, Sample: 4, Text: `\boxed{4}`},
		// Step 1: candidates {0, 2}, {0, 3} and {1, 3} hold a right one
		// (sample 0 marked ok beside wrong 2 marked ok, then alone;
		// sample 1 marked no), {2, 3} do not.
		// Their own verdicts: sample 0 right and ok, sample 1 wrong and
		// ok, the others without one.
		{Step: 1, Problem: 0, Sample: 0, Candidates: []int{0, 2}, Correct: true, Text: `x=5. 35+3=38. 38-38=0. ok \boxed{5}`},
		{Step: 1, Problem: 0, Sample: 1, Candidates: []int{2, 0}, Text: `x=4. 28+3=38. 38-38=0. ok \boxed{4}`},
		{Step: 1, Problem: 0, Sample: 2, Candidates: []int{2, 3}, Correct: true},
		{Step: 1, Problem: 0, Sample: 3, Candidates: []int{0, 3}, Correct: true},
		{Step: 1, Problem: 0, Sample: 4, Candidates: []int{1, 3}},
		// Step 2 (left out: its candidates are aggregations).
		{Step: 2, Problem: 0, Sample: 0, Candidates: []int{1}},
		{Step: 2, Problem: 0, Sample: 1, Candidates: []int{0}, Correct: true, Text: `x=5. 35+3=38. 38-38=0. ok \boxed{5}`},
	}
	c, err := tally(recs)
	require.NoError(t, err)
	require.Equal(t, counts{search: 5, searchRight: 2, searchVerdicts: verdicts{right: 2, okRight: 1, wrong: 2, okWrong: 1}, noVerdict: 1,
		agg: 5, aggWithRight: 4, aggRightWith: 2, aggRightWithout: 1,
		byOffer:     [numOffers][2]int{rightOkAlone: {1, 1}, rightOkBeside: {2, 1}, rightSaysNo: {1, 0}, noRight: {1, 1}},
		steps:       [numPlaces][2]int{earlierStep: {4, 2}, lastStep: {4, 3}},
		follow:      [2]int{4, 3},
		aggVerdicts: []verdicts{{right: 3, okRight: 1, wrong: 2, okWrong: 1}, {right: 1, okRight: 1, wrong: 1}},
		// No answers recorded: every population holds one, "".
		populations: []population{{1, 1, 1, 1, 0, 0}, {1, 1, 1, 1, 0, 0}, {1, 1, 1, 1, 0, 0}}}, c)

	_, err = tally(append(recs, report.TraceRecord{Step: 1, Problem: 0, Sample: 3, Candidates: []int{9}}))
	require.ErrorContains(t, err, "candidate 9 of step 0 is not in the file")
}

// TestPopulationsHandComputed counts three problems over three RSA
// steps: one keeps a right answer, one loses it at step 1 and regains
// it at step 2, one never holds it.
func TestPopulationsHandComputed(t *testing.T) {
	rec := func(step, problem int, answer string, correct bool) report.TraceRecord {
		return report.TraceRecord{Step: step, Problem: problem, Answer: answer, Correct: correct}
	}
	recs := []report.TraceRecord{
		rec(0, 0, "5", true), rec(0, 0, "4", false), rec(0, 0, "", false),
		rec(0, 1, "2", true), rec(0, 1, "3", false), rec(0, 1, "3", false),
		rec(0, 2, "7", false), rec(0, 2, "7", false), rec(0, 2, "7", false),
		rec(1, 0, "5", true), rec(1, 0, "5", true), rec(1, 0, "4", false),
		rec(1, 1, "3", false), rec(1, 1, "3", false), rec(1, 1, "3", false),
		rec(1, 2, "7", false), rec(1, 2, "1", false), rec(1, 2, "7", false),
		rec(2, 0, "5", true), rec(2, 0, "5", true), rec(2, 0, "5", true),
		rec(2, 1, "2", true), rec(2, 1, "3", false), rec(2, 1, "3", false),
		rec(2, 2, "7", false), rec(2, 2, "7", false), rec(2, 2, "7", false),
	}
	require.Equal(t, []population{
		{problems: 3, withRight: 2, unanimous: 1, answers: 3 + 2 + 1},
		{problems: 3, withRight: 1, unanimous: 1, answers: 2 + 1 + 2, lost: 1},
		{problems: 3, withRight: 2, unanimous: 2, answers: 1 + 2 + 1, gained: 1},
	}, populationsOf(recs))
	require.Empty(t, populationsOf(nil))
}

func TestRunTable(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rsa.traces.jsonl")
	w, err := report.NewTraceWriter(path, nil)
	require.NoError(t, err)
	require.NoError(t, w.Stage(filepath.Dir(path)))
	var out bytes.Buffer
	require.NoError(t, run([]string{"base=" + path}, &out))
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	require.Len(t, lines, 25)
	require.Equal(t, "| base | 0 | - | - | - | - | 0 | - | - | - |", lines[2])
	require.Equal(t, "| base | -: - | -: - | -: - | -: - |", lines[8])
	require.Equal(t, "|---|---|---|---|---|---|---|", lines[13], "no aggregation steps, no rows")
	require.Equal(t, "|---|---|---|---|---|---|---|---|---|", lines[18], "no populations, no rows")
	require.Equal(t, "| base | 0 | - | 0 | - | 0 | - | 0 | - |", lines[24])
	require.Error(t, run([]string{path}, &out), "no label")
	_, err = os.Stat(path)
	require.NoError(t, err)
}

// TestRunRefusals: a file that cannot be read leaves nothing written (the
// tables of the files before it were written, then the error), and only
// a command-line mistake is a usage error (exit 2).
func TestRunRefusals(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rsa.traces.jsonl")
	w, err := report.NewTraceWriter(path, nil)
	require.NoError(t, err)
	require.NoError(t, w.Stage(filepath.Dir(path)))
	for _, c := range []struct {
		name  string
		args  []string
		want  string
		usage bool
	}{
		{"no file", nil, "usage: selfcheck", true},
		{"no label", []string{path}, "want LABEL=FILE", true},
		{"empty label", []string{"=" + path}, "want LABEL=FILE", true},
		{"empty file name", []string{"base="}, "want LABEL=FILE", true},
		{"missing file after a good one", []string{"base=" + path, "other=" + path + ".absent"}, "no such file", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			var out bytes.Buffer
			err := run(c.args, &out)
			require.ErrorContains(t, err, c.want)
			require.Equal(t, c.usage, errors.As(err, new(usageError)))
			require.Empty(t, out.String())
		})
	}
}

// TestCheckSteps: checkSteps counts the steps of each place and
// lastComparison reads the check's last result, by hand.
func TestCheckSteps(t *testing.T) {
	cases := []struct {
		name       string
		trace      string
		want       [numPlaces][2]int
		comparison int // the check's last written result; absent when 0 and no check step
	}{
		{"a check and its comparison", `38-3=35. 35/7=4. x=4. 4*7=28. 28+3=31. 31-38=-7. no \boxed{4}`, [numPlaces][2]int{{2, 1}, {2, 2}, {1, 1}}, -7},
		{"two steps, both hold", `x=5. 5*7=35. 35+3=38. ok \boxed{5}`, [numPlaces][2]int{{0, 0}, {1, 1}, {1, 1}}, 38},
		{"the last one wrong", `x=5. 9+7=16. 16-5=8. ok \boxed{5}`, [numPlaces][2]int{{0, 0}, {1, 1}, {1, 0}}, 8},
		{"an earlier one wrong, negative results", `x=1. 2-6=-3. -3-1=-4. no \boxed{1}`, [numPlaces][2]int{{0, 0}, {1, 0}, {1, 1}}, -4},
		{"one step", `x=1. 1-6=-5. no \boxed{1}`, [numPlaces][2]int{{0, 0}, {0, 0}, {1, 1}}, -5},
		{"a derivation and its check", `38-3=35. 35/7=5. x=5. 5*7=35. 35+3=38. ok \boxed{5}`, [numPlaces][2]int{{2, 2}, {1, 1}, {1, 1}}, 38},
		{"a slipped, inexact division", `38-3=36. 36/7=5. x=5. 5*7=35. 35+3=38. ok \boxed{5}`, [numPlaces][2]int{{2, 0}, {1, 1}, {1, 1}}, 38},
		{"a division by zero", `8/0=0. x=0. 0*0=0. no \boxed{0}`, [numPlaces][2]int{{1, 0}, {0, 0}, {1, 1}}, 0},
		{"the last statement of x starts the check", `9-3=6. x=6. x=7. 7+3=10. no \boxed{7}`, [numPlaces][2]int{{1, 1}, {0, 0}, {1, 1}}, 10},
		{"a garbled step is none", `x=2. 2*2=d{2. ok \boxed{2}`, [numPlaces][2]int{}, 0},
		{"a number too long for an int", `x=1. 99999999999999999999+1=3. no`, [numPlaces][2]int{}, 0},
		{"no check", `\boxed{4}`, [numPlaces][2]int{}, 0},
		{"a derivation alone", `9-3=6. \boxed{6}`, [numPlaces][2]int{{1, 1}}, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got [numPlaces][2]int
			checkSteps(tc.trace, &got)
			comparison, compared := lastComparison(tc.trace)
			require.Equal(t, tc.want, got)
			require.Equal(t, tc.want[earlierStep][0]+tc.want[lastStep][0] > 0, compared, "a check step")
			require.Equal(t, tc.comparison, comparison)
		})
	}
}

func TestReportedSteps(t *testing.T) {
	for _, tc := range []struct {
		last int
		want []int
	}{
		{0, nil},
		{1, []int{1}},
		{2, []int{1, 2}},
		{3, []int{1, 2, 3}},
		{4, []int{1, 2, 4}},
		{10, []int{1, 2, 4, 10}},
	} {
		require.Equal(t, tc.want, reportedSteps(tc.last), "last step %d", tc.last)
	}
}

// TestAccuracy: a trace's accuracy is its answer's, at step 0 as at the
// aggregation steps: a right trace without a verdict is right (the
// evaluation's own accuracy, rsa.json's, counts it so).
func TestAccuracy(t *testing.T) {
	traces := func(step int) []report.TraceRecord {
		var cands []int
		if step > 0 {
			cands = []int{0}
		}
		return []report.TraceRecord{
			{Step: step, Sample: 0, Candidates: cands, Correct: true, Text: `x=5. 38-38=0. ok \boxed{5}`},
			{Step: step, Sample: 1, Candidates: cands, Correct: true, Text: `x=5. 35+3=\boxed{5}`},
			{Step: step, Sample: 2, Candidates: cands, Text: `x=4. 31-38=-7. no \boxed{4}`},
			{Step: step, Sample: 3, Candidates: cands, Text: `x=4. 31-38=\boxed{4}`},
		}
	}
	for _, tc := range []struct {
		name string
		recs []report.TraceRecord
		step int
		want string
	}{
		{"search traces, a right one without a verdict", traces(0), 0, "0.500"},
		{"aggregations, a right one without a verdict", append(traces(0), traces(1)...), 1, "0.500"},
		{"search traces beside aggregations", append(traces(0), traces(1)...), 0, "0.500"},
		{"search traces all with a verdict", traces(0)[:1], 0, "1.000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := tally(tc.recs)
			require.NoError(t, err)
			require.Equal(t, tc.want, c.accuracy(tc.step))
		})
	}
}

// TestFollow: a search trace's verdict is compared with the comparison
// written before it, the last step of the check that precedes it; steps
// written after the verdict (a trace that runs on past its box) are not
// its comparison.
func TestFollow(t *testing.T) {
	for _, tc := range []struct {
		name, trace string
		want        [2]int
	}{
		{"ok after a comparison of 0", `x=5. 35+3=38. 38-38=0. ok \boxed{5}`, [2]int{1, 1}},
		{"ok after a comparison of -7", `x=4. 28+3=31. 31-38=-7. ok \boxed{4}`, [2]int{1, 0}},
		{"steps after the verdict", `x=5. 35+3=38. 38-38=0. ok \boxed{5. 2+5=7. 7-1=6.`, [2]int{1, 1}},
		{"an x stated after the verdict", `x=5. 38-38=0. ok \boxed{5=3. x=2. 2+1=3. 3-38=-35.`, [2]int{1, 1}},
		{"no check step before the verdict", `x=5. ok 38-38=1.`, [2]int{}},
		{"the last of several verdicts", `x=5. 38-38=0. ok x=4. 31-38=-7. no \boxed{4}`, [2]int{1, 1}},
		{"no verdict", `x=5. 38-38=0. \boxed{5}`, [2]int{}},
		{"no check", `38-3=35. ok \boxed{5}`, [2]int{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := tally([]report.TraceRecord{{Text: tc.trace}})
			require.NoError(t, err)
			require.Equal(t, tc.want, c.follow)
		})
	}
}
