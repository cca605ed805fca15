package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/spiral-rl/spiral/model/checkpoint"
	"github.com/spiral-rl/spiral/model/optim"
	"github.com/spiral-rl/spiral/model/params"
	"github.com/spiral-rl/spiral/rl"
	"github.com/spiral-rl/spiral/rollout"
	"github.com/spiral-rl/spiral/rollout/report"
)

// TestTokenCurvesStyles: in the accuracy-against-tokens figure every
// curve of a model has its colour and a style of its own, so that no two
// legend entries look alike: majority@k dashed, sequential solid with
// circles, RSA solid with triangles.
func TestTokenCurvesStyles(t *testing.T) {
	tokens := rollout.Tokens{Generated: 640}
	var c comparison
	for _, label := range []string{"spiral", "grpo"} {
		m := report.Meta{Label: label, Problems: 2}
		c.passk = append(c.passk, report.PassAtK{Meta: m, Config: rollout.PassAtKConfig{Samples: 4},
			Points: []rollout.KPoint{{K: 1, PassAtK: 0.5, MajorityAtK: 0.5}, {K: 4, PassAtK: 0.8, MajorityAtK: 0.6}}, Tokens: tokens})
		c.rsa = append(c.rsa, report.RSA{Meta: m, Steps: []rollout.RSAStep{
			{Step: 0, Accuracy: 0.5, Cumulative: tokens}, {Step: 1, Accuracy: 0.6, Cumulative: rollout.Tokens{Generated: 1280}}}})
		c.budget = append(c.budget, report.Budget{Meta: m, Points: []rollout.BudgetPoint{
			{Budget: 8, MeanTokens: 8, Accuracy: 0}, {Budget: 96, MeanTokens: 80, Accuracy: 0.5}}})
	}
	curves, _, err := c.tokenCurves()
	require.NoError(t, err)
	want := []struct {
		label string
		style report.Style
	}{
		{"spiral sequential", report.Style{Colour: 0}},
		{"spiral majority@k", report.Style{Colour: 0, Dashed: true}},
		{"spiral RSA", report.Style{Colour: 0, Triangles: true}},
		{"grpo sequential", report.Style{Colour: 1}},
		{"grpo majority@k", report.Style{Colour: 1, Dashed: true}},
		{"grpo RSA", report.Style{Colour: 1, Triangles: true}},
	}
	require.Len(t, curves, len(want))
	seen := map[report.Style]string{}
	for i, w := range want {
		require.Equal(t, w.label, curves[i].Label)
		require.NotNil(t, curves[i].Style)
		require.Equal(t, w.style, *curves[i].Style)
		require.NotContains(t, seen, *curves[i].Style, "%s drawn like %s", w.label, seen[*curves[i].Style])
		seen[*curves[i].Style] = w.label
	}
}

// TestNoExactRatio: an efficiency without an exact ratio says why: the
// other curve never reaches the reference's pass@k, or is above it from
// its first k (a reference that solved nothing needs no sample: no ratio
// to measure), never that a curve above the reference does not reach it.
func TestNoExactRatio(t *testing.T) {
	point := func(target float64, b report.Bound) report.EfficiencyPoint {
		return report.EfficiencyPoint{K: 1, Target: target, OtherK: 1, Ratio: 1, Bound: b}
	}
	for _, tc := range []struct {
		name   string
		points []report.EfficiencyPoint
		want   string
	}{
		{"never reaches", []report.EfficiencyPoint{point(0.5, report.AtLeast), point(0.9, report.AtLeast)},
			"no k where B reaches A's pass@k within its measured k"},
		{"reference solved nothing", []report.EfficiencyPoint{point(0, report.AtMost), point(0, report.AtMost)},
			"no ratio to measure: A's pass@k is 0 at every k (it solved nothing), which B reaches with no sample at all"},
		{"above from its first k", []report.EfficiencyPoint{point(0.1, report.AtMost), point(0, report.AtMost)},
			"no exact ratio: B is above A's pass@k already at its smallest k at 1 k (each ratio an upper bound), and A's pass@k is 0 at the other 1 (nothing to measure)"},
		{"both", []report.EfficiencyPoint{point(0.1, report.AtMost), point(0.9, report.AtLeast)},
			"no exact ratio: B never reaches A's pass@k within its measured k at 1 k, and is above it already at its smallest k at 1"},
	} {
		require.Equal(t, tc.want, noExactRatio("A", "B", report.Efficiency{Points: tc.points}), tc.name)
	}

	// The whole path, as compare prints it: a reference that solved
	// nothing against one that solved something.
	var c comparison
	for _, label := range []string{"none", "some"} {
		r := report.PassAtK{Meta: report.Meta{Label: label, Problems: 1}, Config: rollout.PassAtKConfig{Samples: 4}}
		for _, k := range []int{1, 2, 4} {
			p := rollout.KPoint{K: k}
			if label == "some" {
				p.PassAtK = 0.25 * float64(k)
			}
			r.Points = append(r.Points, p)
		}
		c.passk = append(c.passk, r)
	}
	groups, err := seeds(c.passk, func(r report.PassAtK) string { return r.Meta.Name() }, report.MeanPassAtK)
	require.NoError(t, err)
	var out strings.Builder
	require.NoError(t, c.comparePassAtK(&out, groups, newSummary()))
	require.Contains(t, out.String(), "no ratio to measure: none's pass@k is 0 at every k")
	require.NotContains(t, out.String(), "no k where some reaches none's pass@k")
}

// TestNoEntropy: a label whose seeds share no step with a token entropy
// says why, and only says that no step updated the weights when none of
// any seed's did: a run whose updates logged a null entropy (a
// non-finite loss), or seeds that measured it at different steps, are
// not runs that trained nothing.
func TestNoEntropy(t *testing.T) {
	run := func(steps, noUpdate int, measured ...int) labelledRun {
		c := rl.RunCurves{NoUpdateSteps: noUpdate}
		for s := 1; s <= steps; s++ {
			c.Steps = append(c.Steps, s)
		}
		for _, s := range measured {
			c.Entropy.Keys, c.Entropy.Y = append(c.Entropy.Keys, s), append(c.Entropy.Y, 0.1)
		}
		return labelledRun{label: "x", dir: "d", curves: c}
	}
	for _, tc := range []struct {
		name       string
		runs       []labelledRun
		text, cell string
	}{
		{"no informative problem", []labelledRun{run(2, 2), run(2, 2)},
			"no step updated the weights (2 of 2 trained nothing: no informative problem or no trained token): no token entropy", "no update"},
		{"null entropy", []labelledRun{run(3, 1)},
			"no step logged a token entropy (1 of 3 step logs trained nothing: no informative problem or no trained token; the other 2 with a null entropy: a non-finite loss)", "none logged"},
		{"seeds measured different steps", []labelledRun{run(2, 1, 1), run(2, 1, 2)},
			"no step with a token entropy in every seed (the seeds measured it at different steps; 2 of 4 step logs without one): no mean token entropy", "no step shared by the seeds"},
	} {
		text, cell := noEntropy(tc.runs)
		require.Equal(t, tc.text, text, tc.name)
		require.Equal(t, tc.cell, cell, tc.name)
	}

	// The whole path, as compare prints it: two seeds that each trained
	// at one step, not the same one.
	c := comparison{runs: []labelledRun{run(2, 1, 1), run(2, 1, 2)}}
	var out strings.Builder
	_, _, _, err := c.runCurves(&out, newSummary())
	require.NoError(t, err)
	require.NotContains(t, out.String(), "no step updated the weights")
	require.Contains(t, out.String(), "the seeds measured it at different steps")
}

// TestCompareSeedsMeasureDifferentPoints: reports of one label are seeds,
// averaged point by point, so seeds that measured other points are
// refused naming both files and what differs; the error named neither
// file ("report: m: seed reports measure different points ([1 2 4] and
// [1 2])"), leaving the user to find which of the label's reports it was.
func TestCompareSeedsMeasureDifferentPoints(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
		return p
	}
	passk := func(ks ...int) string {
		var pts []string
		for _, k := range ks {
			pts = append(pts, fmt.Sprintf(`{"k": %d, "pass_at_k": 0.5, "majority_at_k": 0.5}`, k))
		}
		return `{"meta": {"mode": "passk", "model": "m", "problems": 1}, "config": {"samples": 4}, "points": [` + strings.Join(pts, ", ") + `]}`
	}
	rsa := func(steps int) string {
		var sts []string
		for s := range steps {
			sts = append(sts, fmt.Sprintf(`{"step": %d, "accuracy": 0.5, "majority": 0.5}`, s))
		}
		return `{"meta": {"mode": "rsa", "model": "m", "problems": 1}, "steps": [` + strings.Join(sts, ", ") + `]}`
	}
	budget := func(budgets ...int) string {
		var pts []string
		for _, b := range budgets {
			pts = append(pts, fmt.Sprintf(`{"budget": %d, "accuracy": 0.5, "mean_tokens": 1}`, b))
		}
		return `{"meta": {"mode": "sequential", "model": "m", "problems": 1}, "points": [` + strings.Join(pts, ", ") + `]}`
	}
	for _, tc := range []struct {
		name, a, b, want string
	}{
		{"passk", passk(1, 2, 4), passk(1, 2), "pass@k at k [1 2 4] and [1 2] (eval's --samples)"},
		{"rsa", rsa(3), rsa(2), "RSA steps [0 1 2] and [0 1] (eval's --rsa-steps)"},
		{"sequential", budget(1, 2), budget(1, 4), "sequential accuracy at budgets [1 2] and [1 4] (eval's --max-new-tokens)"},
	} {
		a, b := write(tc.name+"-a.json", tc.a), write(tc.name+"-b.json", tc.b)
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), []string{"compare", a, b}, &cliEnv{stdout: &stdout, stderr: &stderr})
		require.Equal(t, exitFailure, code, tc.name)
		require.Equal(t, fmt.Sprintf("spiral compare: %s and %s, seeds of label m (averaged point by point), measure %s: evaluate a label's seeds alike, or give them other --label\n", a, b, tc.want), stderr.String(), tc.name)
		require.Empty(t, stdout.String(), tc.name)
	}
}

// TestCompareRunSeedsHeldOutAtOtherSteps: seeds of a --run label whose
// held-out evaluations (eval.jsonl) were logged at other steps, as when
// one run's last line is cut short and left out, are refused naming both
// run directories before any table is printed; the error named neither
// ("report: a: seed reports measure different points ([0 2] and [0])"),
// after the label's entropy had been printed.
func TestCompareRunSeedsHeldOutAtOtherSteps(t *testing.T) {
	dir := t.TempDir()
	runDir := func(name string, evalSteps ...int) string {
		d := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(d, 0o755))
		var metrics, evals string
		for s := 1; s <= 2; s++ {
			metrics += fmt.Sprintf(`{"step": %d, "search": {"traces": 2, "reward": 0.5, "mean_length": 3}, "entropy": 0.1}`+"\n", s)
		}
		for _, s := range evalSteps {
			evals += fmt.Sprintf(`{"step": %d, "problems": 1, "samples": 1, "points": [{"k": 1, "pass_at_k": 0.5, "majority_at_k": 0.5}]}`+"\n", s)
		}
		require.NoError(t, os.WriteFile(filepath.Join(d, "metrics.jsonl"), []byte(metrics), 0o644))
		require.NoError(t, os.WriteFile(filepath.Join(d, "eval.jsonl"), []byte(evals), 0o644))
		return d
	}
	a, b := runDir("s1", 0, 2), runDir("s2", 0)
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"compare", "--run", "x=" + a, "--run", "x=" + b}, &cliEnv{stdout: &stdout, stderr: &stderr})
	require.Equal(t, exitFailure, code)
	require.Equal(t, fmt.Sprintf("spiral compare: run x: seeds %s and %s log held-out evaluations at different steps ([0 2] and [0]; eval.jsonl)\n", a, b), stderr.String())
	require.Empty(t, stdout.String())

	// Seeds that logged different training steps are refused as before,
	// before any table too.
	c := runDir("s3", 0, 2)
	require.NoError(t, os.WriteFile(filepath.Join(c, "metrics.jsonl"), []byte(`{"step": 1, "search": {"traces": 2, "reward": 0.5, "mean_length": 3}, "entropy": 0.1}`+"\n"), 0o644))
	stdout.Reset()
	stderr.Reset()
	code = run(context.Background(), []string{"compare", "--run", "x=" + a, "--run", "x=" + c}, &cliEnv{stdout: &stdout, stderr: &stderr})
	require.Equal(t, exitFailure, code)
	require.Equal(t, fmt.Sprintf("spiral compare: run x: seeds %s and %s log different training steps (2 and 1 steps)\n", a, c), stderr.String())
	require.Empty(t, stdout.String())
}

// TestReportModeOfADirectory: a directory given where an eval report is
// wanted is a usage error that says what the command takes; compare's
// said "plot takes eval reports", and that a training run "draws its own
// training.png", both of plot.
func TestReportModeOfADirectory(t *testing.T) {
	dir := t.TempDir()
	rep := twoPassKReports(t, dir)[0]
	for _, tc := range []struct{ cmd, want string }{
		{"plot", fmt.Sprintf("spiral plot: %s is a directory: plot takes eval reports (%s, ...); a training run draws its own training.png, and `spiral compare --run LABEL=%s` compares runs\n",
			dir, filepath.Join(dir, "passk.json"), dir)},
		{"compare", fmt.Sprintf("spiral compare: %s is a directory: compare takes eval reports (%s, ...) as arguments, and a training run as --run LABEL=%s\n",
			dir, filepath.Join(dir, "passk.json"), dir)},
	} {
		var stderr bytes.Buffer
		code := run(context.Background(), []string{tc.cmd, dir, rep}, &cliEnv{stdout: io.Discard, stderr: &stderr})
		require.Equal(t, exitUsage, code, tc.cmd)
		require.Equal(t, tc.want, stderr.String(), tc.cmd)
	}
}

// TestCompareRunNotARunDirectory: a --run that names a file (an eval
// report, or the run's metrics.jsonl) or a directory without a
// metrics.jsonl (an eval's --out), or that does not exist, says what
// --run wants; it said "rl: run e/passk.json: open
// e/passk.json/metrics.jsonl: not a directory", and of a directory that
// does not exist "rl: run D: open D/metrics.jsonl: no such file or
// directory", naming no --run.
func TestCompareRunNotARunDirectory(t *testing.T) {
	dir := t.TempDir()
	rep := twoPassKReports(t, dir)[0]
	evalOut := filepath.Dir(rep)
	// A --fresh killed while it set the run aside left its metrics.jsonl
	// in .previous-pending: it said only "holds no metrics.jsonl: want a
	// training run's directory".
	pendingRun := filepath.Join(dir, "pending")
	require.NoError(t, os.MkdirAll(filepath.Join(pendingRun, ".previous-pending"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(pendingRun, ".previous-pending", "metrics.jsonl"), []byte(`{"step": 1}`+"\n"), 0o644))
	for _, tc := range []struct {
		name, arg string
		code      int
		want      string
	}{
		{"a file", "a=" + rep, exitUsage, fmt.Sprintf("spiral compare: --run a=%s: %s is a file: want a training run's directory (train's --out, holding metrics.jsonl); an eval report is given as an argument\n", rep, rep)},
		{"no metrics.jsonl", "a=" + evalOut, exitFailure, fmt.Sprintf("spiral compare: --run a=%s: %s holds no metrics.jsonl: want a training run's directory (train's --out)\n", evalOut, evalOut)},
		{"set aside pending", "a=" + pendingRun, exitFailure, fmt.Sprintf("spiral compare: --run a=%s: %s holds no metrics.jsonl: a --fresh (or a rerun that started over) killed while it set the run aside left it in %s, which the next train, sft or tensorboard there puts back\n", pendingRun, pendingRun, filepath.Join(pendingRun, ".previous-pending"))},
		{"absent", "a=" + filepath.Join(dir, "absent"), exitUsage, fmt.Sprintf("spiral compare: --run a=%s: %s does not exist: want a training run's directory (train's --out)\n", filepath.Join(dir, "absent"), filepath.Join(dir, "absent"))},
	} {
		var stderr bytes.Buffer
		code := run(context.Background(), []string{"compare", "--run", tc.arg}, &cliEnv{stdout: io.Discard, stderr: &stderr})
		require.Equal(t, tc.code, code, tc.name)
		require.Equal(t, tc.want, stderr.String(), tc.name)
	}
}

// TestRunCurvesTokensPerSeed: the traces and tokens per seed are the
// means over the label's seeds, rounded: seeds that sampled 1, 2 and 2
// tokens (and 2, 2 and 3 traces) are 2 tokens and 2 traces a seed, where
// the integer division read 1 and 2 (the study's SPIRAL, 9,542,324 tokens
// over 3 seeds, read 3,180,774 for 3,180,774.67).
func TestRunCurvesTokensPerSeed(t *testing.T) {
	var c comparison
	for i, g := range []int{1, 2, 2} {
		c.runs = append(c.runs, labelledRun{label: "x", dir: fmt.Sprint("s", i), curves: rl.RunCurves{
			Steps: []int{1}, Entropy: report.Curve{Keys: []int{1}, Y: []float64{0.1}}, Generated: g, Traces: []int{2, 2, 3}[i]}})
	}
	var out strings.Builder
	sum := newSummary()
	_, _, _, err := c.runCurves(&out, sum)
	require.NoError(t, err)
	require.Contains(t, out.String(), "; 2 traces and 2 generated tokens per seed")
	require.Equal(t, "2 / 2", sum.cells[[2]string{"x", "training traces / tokens per seed"}])
}

// TestRunCurvesSeedsAveraged: a label's held-out pass@1 and search
// credit are means over the seeds that logged them, and where that is
// fewer than the label's n the line and summary.md say how many: two of
// three seeds with eval.jsonl lines and one with a search credit printed
// "run x (n = 3): ...; held-out pass@1 0.500 (0.400-0.600) (step 0)" and
// "search credit 0.300", as if over all three.
func TestRunCurvesSeedsAveraged(t *testing.T) {
	var c comparison
	for i := range 3 {
		curves := rl.RunCurves{Steps: []int{1}, Entropy: report.Curve{Keys: []int{1}, Y: []float64{0.1}}}
		if i < 2 {
			curves.HeldOut = report.Curve{Keys: []int{0}, Y: []float64{0.4 + 0.2*float64(i)}}
		}
		if i == 0 {
			curves.SearchCredit, curves.CreditSteps = 0.3, 1
		}
		c.runs = append(c.runs, labelledRun{label: "x", dir: fmt.Sprint("s", i), curves: curves})
	}
	var out strings.Builder
	sum := newSummary()
	_, _, _, err := c.runCurves(&out, sum)
	require.NoError(t, err)
	require.Contains(t, out.String(), "run x (n = 3): ")
	require.Contains(t, out.String(), "; held-out pass@1 0.500 (0.400-0.600) (step 0) -> 0.500 (0.400-0.600) (step 0) (mean of 2 of the 3 seeds: the rest logged no held-out evaluation)")
	require.Contains(t, out.String(), "; search credit 0.300 (correlation of a trained search trace's own reward with its advantage, mean over steps; 1 of the 3 seeds: the rest logged none)")
	require.Equal(t, "0.500 (0.400-0.600) -> 0.500 (0.400-0.600) (2 of 3 seeds)", sum.cells[[2]string{"x", "held-out pass@1 during training"}])
	require.Equal(t, "0.300 (1 of 3 seeds)", sum.cells[[2]string{"x", "search credit (own reward vs advantage)"}])
}

// TestCompareSequentialOneLabel: sequential reports of one label (its
// seeds) have nothing to compare, which compare says, as it does of
// pass@k; it printed nothing at all and exited 0.
func TestCompareSequentialOneLabel(t *testing.T) {
	dir := t.TempDir()
	var reps []string
	for i := range 2 {
		p := filepath.Join(dir, fmt.Sprintf("s%d.json", i))
		require.NoError(t, os.WriteFile(p, []byte(`{"meta": {"mode": "sequential", "model": "m", "problems": 1}, "config": {"samples": 1},
			"points": [{"budget": 1, "accuracy": 0, "mean_tokens": 1}, {"budget": 2, "accuracy": 0.5, "mean_tokens": 1.5}]}`), 0o644))
		reps = append(reps, p)
	}
	var stdout, stderr bytes.Buffer
	require.Zero(t, run(context.Background(), append([]string{"compare"}, reps...), &cliEnv{stdout: &stdout, stderr: &stderr}), stderr.String())
	require.Equal(t, "sequential: only m; nothing to compare\n\n", stdout.String())
}

// TestEntropyChange: the change of a mean entropy curve is the percent
// change of its last steps' mean over its first's, rounded, with no
// "-0%" for a fall that rounds to nothing.
func TestEntropyChange(t *testing.T) {
	spreads := func(ys ...float64) []report.Spread {
		out := make([]report.Spread, len(ys))
		for i, y := range ys {
			out[i] = report.Spread{Mean: y}
		}
		return out
	}
	for _, c := range []struct {
		ys   []float64
		want string
	}{
		{[]float64{0.1, 0.1, 0.11, 0.11}, "0.1000 -> 0.1100 (+10%; means of the first and last 2 of 4 steps)"},
		{[]float64{0.1, 0.0999}, "0.1000 -> 0.0999 (+0%; means of the first and last 1 of 2 steps)"},
		{[]float64{0.1, 0.09}, "0.1000 -> 0.0900 (-10%; means of the first and last 1 of 2 steps)"},
		{[]float64{0.2}, "0.2000 (1 step: too short for first -> last)"},
	} {
		require.Equal(t, c.want, entropyChange(spreads(c.ys...)), "%v", c.ys)
	}
}

// TestCompareRunSearchEntropy: compare prints the search traces' own
// token entropy (metrics.jsonl's entropy_search) beside the token
// entropy of all trained tokens, averaged over a label's seeds
// (hand-computed: per step means 0.3, 0.3, 0.2, 0.1, so 0.3 -> 0.15,
// -50%), and leaves it out for a label whose runs never logged it (runs
// from before it existed).
func TestCompareRunSearchEntropy(t *testing.T) {
	dir := t.TempDir()
	runDir := func(name string, search []string) string {
		d := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(d, 0o755))
		var metrics string
		for s := 1; s <= 4; s++ {
			extra := ""
			if search != nil {
				extra = `, "entropy_search": ` + search[s-1]
			}
			metrics += fmt.Sprintf(`{"step": %d, "search": {"traces": 2, "reward": 0.5, "mean_length": 3}, "entropy": 0.5%s}`+"\n", s, extra)
		}
		require.NoError(t, os.WriteFile(filepath.Join(d, "metrics.jsonl"), []byte(metrics), 0o644))
		return d
	}
	a := runDir("a", []string{"0.2", "0.2", "0.1", "0.1"})
	b := runDir("b", []string{"0.4", "0.4", "0.3", "0.1"})
	old := runDir("old", nil)
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"compare", "--out", filepath.Join(dir, "report"), "--run", "s=" + a, "--run", "s=" + b, "--run", "g=" + old}, &cliEnv{stdout: &stdout, stderr: &stderr})
	require.Zero(t, code, stderr.String())
	require.Contains(t, stdout.String(), "run s (n = 2): token entropy 0.5000 -> 0.5000 (+0%; means of the first and last 2 of 4 steps); search traces' token entropy 0.3000 -> 0.1500 (-50%; means of the first and last 2 of 4 steps);")
	require.Contains(t, stdout.String(), "run g (n = 1): token entropy 0.5000 -> 0.5000 (+0%; means of the first and last 2 of 4 steps); 8 traces")
	for _, plot := range []string{"entropy.png", "search-entropy.png"} {
		require.FileExists(t, filepath.Join(dir, "report", plot))
	}
	summary, err := os.ReadFile(filepath.Join(dir, "report", "summary.md"))
	require.NoError(t, err)
	require.Contains(t, string(summary), "search traces' entropy, first -> last steps")
}

// TestCompareRunPlotsOfEarlierRuns: a comparison of runs into an --out
// where an earlier comparison of other runs drew plots this one has no
// curve for (search-entropy.png of runs that logged entropy_search,
// heldout.png of runs with held-out evaluations) removes them: left,
// they would show the earlier runs beside this comparison's summary.md
// and entropy.png. Report plots stay, as comparisons of one mode at a
// time expect.
func TestCompareRunPlotsOfEarlierRuns(t *testing.T) {
	dir := t.TempDir()
	runDir := func(name string, newer bool) string {
		d := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(d, 0o755))
		var metrics, evals string
		for s := 1; s <= 4; s++ {
			extra := ""
			if newer {
				extra = `, "entropy_search": 0.25`
				evals += fmt.Sprintf(`{"step": %d, "problems": 2, "samples": 1, "points": [{"k": 1, "pass_at_k": 0.5, "majority_at_k": 0.5}]}`+"\n", s)
			}
			metrics += fmt.Sprintf(`{"step": %d, "search": {"traces": 2, "reward": 0.5, "mean_length": 3}, "entropy": 0.5%s}`+"\n", s, extra)
		}
		require.NoError(t, os.WriteFile(filepath.Join(d, "metrics.jsonl"), []byte(metrics), 0o644))
		if newer {
			require.NoError(t, os.WriteFile(filepath.Join(d, "eval.jsonl"), []byte(evals), 0o644))
		}
		return d
	}
	out := filepath.Join(dir, "report")
	require.NoError(t, os.MkdirAll(out, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(out, "passk.png"), []byte("an earlier passk comparison"), 0o644))
	for _, tc := range []struct {
		run  string
		want []string
	}{
		{runDir("new", true), []string{"entropy.png", "heldout.png", "passk.png", "search-entropy.png", "summary.md"}},
		{runDir("old", false), []string{"entropy.png", "passk.png", "summary.md"}},
	} {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), []string{"compare", "--out", out, "--run", "s=" + tc.run}, &cliEnv{stdout: &stdout, stderr: &stderr})
		require.Zero(t, code, stderr.String())
		got := dirNames(t, out)
		require.Equal(t, tc.want, got, tc.run)
	}
}

// TestCompareSeedsEvaluatedWithOtherSettings: reports of one label are
// seeds of one measurement, so seeds evaluated with other sampling
// settings (meta.extra's temperature, top-p, top-k, max new tokens,
// reward rule, templates; RSA's population, subset and candidate cap)
// are refused naming both files and the setting, as seeds that measured
// other k are; they were averaged in silence. Reports of other labels
// evaluated with other settings are compared, with a warning naming the
// setting (a ratio between a temperature-1 and a temperature-0.6
// evaluation mixes the models' difference with the temperatures').
func TestCompareSeedsEvaluatedWithOtherSettings(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
		return p
	}
	meta := func(mode, label, extra string) string {
		return fmt.Sprintf(`"meta": {"mode": %q, "model": "m", "label": %q, "problems": 1, "extra": {%s}}`, mode, label, extra)
	}
	passk := func(label, extra string) string {
		return `{` + meta("passk", label, extra) + `, "config": {"samples": 2}, "points": [{"k": 1, "pass_at_k": 0.5, "majority_at_k": 0.5}, {"k": 2, "pass_at_k": 0.7, "majority_at_k": 0.5}]}`
	}
	rsa := func(label, extra, config string) string {
		return `{` + meta("rsa", label, extra) + `, "config": {` + config + `}, "steps": [{"step": 0, "accuracy": 0.5, "majority": 0.5}, {"step": 1, "accuracy": 0.6, "majority": 0.5}]}`
	}
	budget := func(label, extra string) string {
		return `{` + meta("sequential", label, extra) + `, "config": {"samples": 1}, "points": [{"budget": 1, "accuracy": 0, "mean_tokens": 1}, {"budget": 2, "accuracy": 0.5, "mean_tokens": 1.5}]}`
	}
	const (
		t1     = `"temperature": "1", "top_p": "1", "top_k": "0", "max_new_tokens": "64", "reward_rule": "explicit answers only", "templates": "aa"`
		config = `"population": 4, "subset_size": 2, "steps": 1`
	)
	t06 := strings.Replace(t1, `"temperature": "1"`, `"temperature": "0.6"`, 1)
	for _, tc := range []struct {
		name, a, b, want string
	}{
		{"passk temperature", passk("m", t1), passk("m", t06), "temperature 1 and 0.6 (eval's --temperature)"},
		{"passk top-p and max new tokens", passk("m", t1), passk("m", strings.NewReplacer(`"top_p": "1"`, `"top_p": "0.9"`, `"64"`, `"128"`).Replace(t1)),
			"top-p 1 and 0.9 (eval's --top-p); max new tokens 64 and 128 (eval's --max-new-tokens)"},
		{"rsa population", rsa("m", t1, config), rsa("m", t1, strings.Replace(config, `"population": 4`, `"population": 8`, 1)), "RSA population 4 and 8 (eval's --population)"},
		{"rsa subset", rsa("m", t1, config), rsa("m", t1, strings.Replace(config, `"subset_size": 2`, `"subset_size": 3`, 1)), "RSA subset size 2 and 3 (eval's --subset)"},
		{"sequential reward rule", budget("m", t1), budget("m", strings.Replace(t1, "explicit answers only", "explicit answers, else the last number", 1)),
			`reward rule "explicit answers only" and "explicit answers, else the last number" (eval's --reward-fallback, --reward-truncated)`},
		{"sequential templates", budget("m", t1), budget("m", strings.Replace(t1, `"aa"`, `"bb"`, 1)), "prompt templates aa and bb (eval's --search-template, --aggregate-template)"},
	} {
		a, b := write("a.json", tc.a), write("b.json", tc.b)
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), []string{"compare", a, b}, &cliEnv{stdout: &stdout, stderr: &stderr})
		require.Equal(t, exitFailure, code, tc.name)
		require.Equal(t, fmt.Sprintf("spiral compare: %s and %s, seeds of label m (averaged point by point), were evaluated with other settings: %s: evaluate a label's seeds alike, or give them other --label\n", a, b, tc.want), stderr.String(), tc.name)
		require.Empty(t, stdout.String(), tc.name)
	}

	// Other labels: compared, with a warning naming the setting.
	a, b := write("a.json", passk("base", t1)), write("b.json", passk("trained", t06))
	var stdout, stderr bytes.Buffer
	require.Zero(t, run(context.Background(), []string{"compare", a, b}, &cliEnv{stdout: &stdout, stderr: &stderr}), stderr.String())
	require.Equal(t, fmt.Sprintf("spiral: warning: reports evaluated with different settings, compared anyway: a ratio or gain between them mixes the models' difference with the settings':\n  %s against %s (passk reports): temperature 0.6 against 1 (eval's --temperature)\n", b, a), stderr.String())
	require.Contains(t, stdout.String(), "pass@k: samples trained needs to reach base's pass@k")

	// A report that does not record a setting (written before it was
	// recorded) is not held against one that does.
	a, b = write("a.json", passk("m", t1)), write("b.json", passk("m", ""))
	stdout.Reset()
	stderr.Reset()
	require.Zero(t, run(context.Background(), []string{"compare", a, b}, &cliEnv{stdout: &stdout, stderr: &stderr}), stderr.String())
	require.Empty(t, stderr.String())
}

// TestCompareSummarySeeds: summary.md's seeds column counts each label's
// seeds in every mode and of its --runs, naming the mode where a label's
// counts differ; it was filled by pass@k reports only, so an RSA-only
// summary showed ranges with no seed count ("| m | 0.500 (0.400-0.600) |").
func TestCompareSummarySeeds(t *testing.T) {
	// The line under a table with a label of several seeds: a cell read
	// "0.500 (0.400-0.600)" with nothing saying what the parentheses
	// hold (an interval? a standard deviation?).
	const seedsNote = "\nA value with a range, 0.500 (0.400-0.600), is the mean over the label's seeds, with the least and greatest of them.\n"
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
		return p
	}
	rsa := func(name, label string, acc float64) string {
		return write(name, fmt.Sprintf(`{"meta": {"mode": "rsa", "model": %q, "problems": 1}, "steps": [{"step": 0, "accuracy": %v, "majority": 0.5}]}`, label, acc))
	}
	budget := func(name, label string) string {
		return write(name, fmt.Sprintf(`{"meta": {"mode": "sequential", "model": %q, "problems": 1}, "config": {"samples": 1}, "points": [{"budget": 2, "accuracy": 0.5, "mean_tokens": 1.5}]}`, label))
	}
	runDir := func(name string) string {
		d := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(d, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(d, rl.MetricsFile), []byte(`{"step":1,"entropy":0.1}`+"\n"), 0o644))
		return d
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"rsa only", []string{rsa("a.json", "a", 0.5), rsa("b1.json", "b", 0.4), rsa("b2.json", "b", 0.6)},
			"| model | seeds | RSA step 0 |\n|---|---|---|\n| a | 1 | 0.500 |\n| b | 2 | 0.500 (0.400-0.600) |\n" + seedsNote},
		{"sequential and runs, counts differing", []string{"--run", "a=" + runDir("r1"), "--run", "a=" + runDir("r2"), budget("s1.json", "a"), budget("s2.json", "b")},
			"| model | seeds | sequential at budget 2 | entropy, first -> last steps | training traces / tokens per seed |\n|---|---|---|---|---|\n" +
				"| a | sequential 1, runs 2 | 0.500 | 0.1000 (1 step: too short for first -> last) | 0 / 0 |\n| b | 1 | 0.500 | - | - |\n" + seedsNote},
		{"one seed each: no range to explain", []string{rsa("c.json", "a", 0.5), rsa("d.json", "b", 0.4)},
			"| model | seeds | RSA step 0 |\n|---|---|---|\n| a | 1 | 0.500 |\n| b | 1 | 0.400 |\n"},
	} {
		out := filepath.Join(dir, "cmp")
		var stderr bytes.Buffer
		require.Zero(t, run(context.Background(), append([]string{"compare", "--out", out}, tc.args...), &cliEnv{stdout: io.Discard, stderr: &stderr}), tc.name+": "+stderr.String())
		b, err := os.ReadFile(filepath.Join(out, "summary.md"))
		require.NoError(t, err)
		require.Equal(t, tc.want, string(b), tc.name)
	}
}

// writePassKOfOneProblem writes at path a pass@k report of label on one
// problem, of ks[len(ks)-1] samples, with a point at each of ks (pass@k
// and majority@k written "0.N", N = 4+k), and returns path.
func writePassKOfOneProblem(t *testing.T, path, label string, ks ...int) string {
	t.Helper()
	var pts []string
	for _, k := range ks {
		pts = append(pts, fmt.Sprintf(`{"k": %d, "pass_at_k": 0.%d, "majority_at_k": 0.%d}`, k, 4+k, 4+k))
	}
	require.NoError(t, os.WriteFile(path, []byte(fmt.Sprintf(`{"meta": {"mode": "passk", "model": %q, "problems": 1}, "config": {"samples": %d}, "points": [%s]}`,
		label, ks[len(ks)-1], strings.Join(pts, ", "))), 0o644))
	return path
}

// TestCompareSummaryMajorityOfOneSample: a label evaluated with
// --samples 1 has pass@k at k = 1 only, and summary.md gave it a
// majority@1 column, the vote of one sample, which is its pass@1: the
// same figure twice, read as two measurements that agree (training.png
// and TensorBoard draw no majority@1 for that reason). Such a label has
// no majority cell; one of more samples keeps its majority@k, whose
// column the other's row leaves empty.
func TestCompareSummaryMajorityOfOneSample(t *testing.T) {
	dir := t.TempDir()
	passk := func(name, label string, ks ...int) string {
		return writePassKOfOneProblem(t, filepath.Join(dir, name), label, ks...)
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"one sample", []string{passk("a.json", "a", 1), passk("c.json", "c", 1)},
			"| model | seeds | pass@1 | efficiency of a over it |\n|---|---|---|---|\n| a | 1 | 0.500 | - |\n| c | 1 | 0.500 | up to 1.00x (k = 1) |\n"},
		{"one sample, then four", []string{passk("a.json", "a", 1), passk("b.json", "b", 1, 2, 4)},
			"| model | seeds | pass@1 | pass@4 | majority@4 | efficiency of a over it |\n|---|---|---|---|---|---|\n| a | 1 | 0.500 | - | - | - |\n| b | 1 | 0.500 | 0.800 | 0.800 | up to 1.00x (k = 1) |\n"},
		{"four samples, then one", []string{passk("b.json", "b", 1, 2, 4), passk("a.json", "a", 1)},
			"| model | seeds | pass@1 | pass@4 | majority@4 | efficiency of b over it |\n|---|---|---|---|---|---|\n| b | 1 | 0.500 | 0.800 | 0.800 | - |\n| a | 1 | 0.500 | - | - | up to 1.00x (k = 1) |\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "cmp")
			var stderr bytes.Buffer
			require.Zero(t, run(context.Background(), append([]string{"compare", "--out", out}, tc.args...), &cliEnv{stdout: io.Discard, stderr: &stderr}), stderr.String())
			b, err := os.ReadFile(filepath.Join(out, "summary.md"))
			require.NoError(t, err)
			require.Equal(t, tc.want, string(b))
		})
	}
}

// TestCompareSummaryColumnOrder: summary.md's columns of a mode are in
// the order of their k, RSA step or budget, whichever label comes first.
// They were in the order the labels brought them: a reference of more
// samples, RSA steps or a larger budget than a later label put that
// label's columns after its own ("| pass@1 | pass@8 | majority@8 |
// pass@4 | majority@4 |", "| RSA step 0 | RSA step 4 | RSA step 6 | RSA
// step 2 |").
//
// Every label's cell is filled in each column whose k, step or budget it
// measured: a label filled only the columns it brought (its first and
// last k, its step 4 and last step, its largest budget), so a reference
// of 8 samples showed "-" under pass@4, a column a 4-sample label
// brought, though it measured pass@4.
func TestCompareSummaryColumnOrder(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
		return p
	}
	passk := func(name, label string, ks ...int) string {
		var pts []string
		for _, k := range ks {
			pts = append(pts, fmt.Sprintf(`{"k": %d, "pass_at_k": 0.%d, "majority_at_k": 0.%d}`, k, 1+k, 1+k))
		}
		return write(name, fmt.Sprintf(`{"meta": {"mode": "passk", "model": %q, "problems": 1}, "config": {"samples": %d}, "points": [%s]}`,
			label, ks[len(ks)-1], strings.Join(pts, ", ")))
	}
	rsa := func(name, label string, steps int) string {
		var pts []string
		for s := 0; s <= steps; s++ {
			pts = append(pts, fmt.Sprintf(`{"step": %d, "accuracy": 0.5, "majority": 0.5}`, s))
		}
		return write(name, fmt.Sprintf(`{"meta": {"mode": "rsa", "model": %q, "problems": 1}, "steps": [%s]}`, label, strings.Join(pts, ", ")))
	}
	budget := func(name, label string, budgets ...int) string {
		var pts []string
		for _, b := range budgets {
			pts = append(pts, fmt.Sprintf(`{"budget": %d, "accuracy": 0.5, "mean_tokens": %d}`, b, b-1))
		}
		return write(name, fmt.Sprintf(`{"meta": {"mode": "sequential", "model": %q, "problems": 1}, "config": {"samples": 1}, "points": [%s]}`, label, strings.Join(pts, ", ")))
	}
	// cells: label -> the row's cells after "| label | seeds |" up to
	// the efficiency column (pass@k: 0.(1+k); RSA and sequential: 0.5).
	for _, tc := range []struct {
		name  string
		args  []string
		want  string
		cells map[string]string
	}{
		{"pass@k, more samples first", []string{passk("b8.json", "b", 1, 2, 4, 8), passk("a4.json", "a", 1, 2, 4)},
			"| model | seeds | pass@1 | pass@4 | majority@4 | pass@8 | majority@8 | efficiency of b over it |",
			map[string]string{"b": "0.200 | 0.500 | 0.500 | 0.900 | 0.900 |", "a": "0.200 | 0.500 | 0.500 | - | - |"}},
		{"pass@k, fewer samples first", []string{passk("a4.json", "a", 1, 2, 4), passk("b8.json", "b", 1, 2, 4, 8)},
			"| model | seeds | pass@1 | pass@4 | majority@4 | pass@8 | majority@8 | efficiency of a over it |",
			map[string]string{"a": "0.200 | 0.500 | 0.500 | - | - |", "b": "0.200 | 0.500 | 0.500 | 0.900 | 0.900 |"}},
		{"rsa, more steps first", []string{rsa("r6.json", "a", 6), rsa("r2.json", "b", 2)},
			"| model | seeds | RSA step 0 | RSA step 2 | RSA step 4 | RSA step 6 |",
			map[string]string{"a": "0.500 | 0.500 | 0.500 | 0.500 |", "b": "0.500 | 0.500 | - | - |"}},
		{"sequential, larger budget first", []string{budget("s8.json", "a", 2, 4, 8), budget("s4.json", "b", 2, 4)},
			"| model | seeds | sequential at budget 4 | sequential at budget 8 |",
			map[string]string{"a": "0.500 | 0.500 |", "b": "0.500 | - |"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "cmp")
			var stderr bytes.Buffer
			require.Zero(t, run(context.Background(), append([]string{"compare", "--out", out}, tc.args...), &cliEnv{stdout: io.Discard, stderr: &stderr}), stderr.String())
			b, err := os.ReadFile(filepath.Join(out, "summary.md"))
			require.NoError(t, err)
			header, _, _ := strings.Cut(string(b), "\n")
			require.Equal(t, tc.want, header)
			for label, cells := range tc.cells {
				require.Contains(t, string(b), "\n| "+label+" | 1 | "+cells, "%s's row", label)
			}
		})
	}
}

// TestComparePassAtKPlotTitle: compare's passk plot of labels each
// evaluated with one sample a problem draws no majority@k curve (the vote
// of one sample is its pass@1), and its title still read "pass@k and
// majority@k". The title names what is drawn: pass@k alone there, both
// where some label has a majority@k curve.
func TestComparePassAtKPlotTitle(t *testing.T) {
	dir := t.TempDir()
	passk := func(name, label string, ks ...int) string {
		return writePassKOfOneProblem(t, filepath.Join(dir, name), label, ks...)
	}
	for _, tc := range []struct {
		name     string
		args     []string
		title    string
		majority bool
	}{
		{"one sample each", []string{passk("a.json", "a", 1), passk("c.json", "c", 1)}, "pass@k", false},
		{"one sample, then four", []string{passk("a.json", "a", 1), passk("b.json", "b", 1, 2, 4)}, "pass@k and majority@k", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "cmp")
			var stderr bytes.Buffer
			require.Zero(t, run(context.Background(), append([]string{"compare", "--figures", "svg", "--out", out}, tc.args...), &cliEnv{stdout: io.Discard, stderr: &stderr}), stderr.String())
			b, err := os.ReadFile(filepath.Join(out, "passk.svg"))
			require.NoError(t, err)
			require.Contains(t, string(b), ">"+tc.title+"<", "the title")
			require.Equal(t, tc.majority, strings.Contains(string(b), "majority@k"), "majority@k named anywhere")
		})
	}
}

// TestCompareBudgetPastAStoppedCurve: the sequential table at equal
// tokens gives the other model's accuracy past its largest mean tokens
// where none of its traces (in any seed) was cut at its largest budget:
// a model that stopped early holds its accuracy at larger budgets. It
// printed "-" there; it still does where some trace was cut. Its heading
// names each label's seeds, as the pass@k and RSA tables do: a mean over
// b's two seeds read as one evaluation.
func TestCompareBudgetPastAStoppedCurve(t *testing.T) {
	dir := t.TempDir()
	write := func(name, label string, points string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(fmt.Sprintf(`{"meta": {"mode": "sequential", "model": %q, "problems": 1}, "config": {"samples": 4}, "points": [%s]}`, label, points)), 0o644))
		return p
	}
	ref := write("a.json", "a", `{"budget": 8, "accuracy": 0.25, "mean_tokens": 8, "truncated": 1}, {"budget": 16, "accuracy": 0.5, "mean_tokens": 14, "truncated": 0.25}`)
	stopped := write("b1.json", "b", `{"budget": 8, "accuracy": 0.5, "mean_tokens": 6, "truncated": 0.25}, {"budget": 16, "accuracy": 0.75, "mean_tokens": 10, "truncated": 0}`)
	cut := write("b2.json", "b", `{"budget": 8, "accuracy": 0.5, "mean_tokens": 6, "truncated": 0.25}, {"budget": 16, "accuracy": 0.5, "mean_tokens": 10, "truncated": 0.25}`)
	for _, tc := range []struct {
		name  string
		other []string
		want  string
	}{
		{"stopped", []string{stopped}, "a sequential over b sequential at equal tokens per trace (means over seeds, n = 1 and 1)\n" +
			"      tokens       ref     other  gain\n" +
			"         8.0    0.2500    0.6408  -0.3908\n" +
			"        14.0    0.5000    0.7500  -0.2500\n" +
			"  (past 10.0 tokens, b sequential's accuracy is that of its largest budget: none of its traces was cut there)\n\n"},
		{"a seed cut", []string{stopped, cut}, "a sequential over b sequential at equal tokens per trace (means over seeds, n = 1 and 2)\n" +
			"      tokens       ref     other  gain\n" +
			"         8.0    0.2500    0.5704  -0.3204\n" +
			"        14.0    0.5000         -  -\n\n"},
	} {
		var stdout, stderr bytes.Buffer
		require.Zero(t, run(context.Background(), append([]string{"compare", ref}, tc.other...), &cliEnv{stdout: &stdout, stderr: &stderr}), tc.name+": "+stderr.String())
		require.Equal(t, tc.want, stdout.String(), tc.name)
	}
}

// TestCompareBudgetReportsWithoutTokens: a label whose sequential
// reports record no tokens per trace (a mean_tokens of 0) has no curve at
// equal tokens; compare says so, naming it and how many of its reports,
// instead of comparing the next label with the others as if it were the
// reference ("b sequential over c sequential") or printing nothing.
func TestCompareBudgetReportsWithoutTokens(t *testing.T) {
	dir := t.TempDir()
	write := func(name, label string, meanTokens float64) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(fmt.Sprintf(`{"meta": {"mode": "sequential", "model": %q, "problems": 1}, "config": {"samples": 4}, "points": [{"budget": 8, "accuracy": 0.25, "mean_tokens": %g, "truncated": 1}, {"budget": 16, "accuracy": 0.5, "mean_tokens": 14, "truncated": 0.25}]}`, label, meanTokens)), 0o644))
		return p
	}
	a, b1, b2, c := write("a.json", "a", 0), write("b1.json", "b", 8), write("b2.json", "b", 0), write("c.json", "c", 8)
	for _, tc := range []struct {
		name    string
		reports []string
		want    []string
		not     string
	}{
		{"reference without tokens", []string{a, b1, c}, []string{
			"sequential at equal tokens: a: 1 of its 1 reports record no tokens per trace (mean_tokens 0 at some budget): left out\n",
			"sequential at equal tokens: no comparison: the reference, a, has no curve against tokens\n\n"}, "over"},
		{"a seed without tokens", []string{c, b1, b2}, []string{
			"sequential at equal tokens: b: 1 of its 2 reports record no tokens per trace (mean_tokens 0 at some budget): left out\n",
			"c sequential over b sequential at equal tokens per trace (means over seeds, n = 1 and 1)\n"}, ""},
	} {
		var stdout, stderr bytes.Buffer
		require.Zero(t, run(context.Background(), append([]string{"compare"}, tc.reports...), &cliEnv{stdout: &stdout, stderr: &stderr}), tc.name+": "+stderr.String())
		for _, w := range tc.want {
			require.Contains(t, stdout.String(), w, tc.name)
		}
		if tc.not != "" {
			require.NotContains(t, stdout.String(), tc.not, tc.name)
		}
	}
}

// TestCompareEfficiencyFloor: where the other curve never reaches the
// reference's pass@k at some k, that ratio is a lower bound, and one
// above every exact ratio is printed with the maximum and in summary.md
// (it printed "up to 4.00x (k = 2)" alone, though the ratio at k = 4 is
// at least 16x; and "-" in summary.md where no ratio was exact, though
// one was at least 8x).
func TestCompareEfficiencyFloor(t *testing.T) {
	for _, tc := range []struct {
		name  string
		other []rollout.KPoint
		line  string
		cell  string
	}{
		{"bound above the exact maximum", kPoints(1, 0.1, 2, 0.2, 8, 0.4, 64, 0.5),
			"  scaling efficiency of a over b: up to 4.00x (k = 2); at least 16.00x at k = 4 (b never reaches a's pass@4 within its measured k)\n",
			"| up to 4.00x (k = 2); at least 16.00x at k = 4 (b never reaches a's pass@4 within its measured k) |"},
		{"bounds only", kPoints(8, 0.1),
			"  no k where b reaches a's pass@k within its measured k\n  scaling efficiency of a over b: at least 8.00x at k = 1 (b never reaches a's pass@1 within its measured k)\n",
			"| at least 8.00x at k = 1 (b never reaches a's pass@1 within its measured k) |"},
	} {
		printed, markdown := compareWithA(t, tc.name, 64, tc.other)
		require.Contains(t, printed, tc.line, tc.name)
		require.Contains(t, markdown, tc.cell, tc.name)
	}
}

// kPoints is the pass@k curve of the (k, pass@k) pairs kp.
func kPoints(kp ...float64) []rollout.KPoint {
	var out []rollout.KPoint
	for i := 0; i < len(kp); i += 2 {
		out = append(out, rollout.KPoint{K: int(kp[i]), PassAtK: kp[i+1]})
	}
	return out
}

// compareWithA compares the pass@k of b, of samples samples a problem
// and curve other, with a's (0.2, 0.4 and 0.8 at k = 1, 2 and 4 of 4
// samples), one problem each, as compare does, and returns what it
// prints and summary.md.
func compareWithA(t *testing.T, name string, samples int, other []rollout.KPoint) (printed, markdown string) {
	t.Helper()
	c := comparison{passk: []report.PassAtK{
		{Meta: report.Meta{Label: "a", Problems: 1}, Config: rollout.PassAtKConfig{Samples: 4}, Points: kPoints(1, 0.2, 2, 0.4, 4, 0.8)},
		{Meta: report.Meta{Label: "b", Problems: 1}, Config: rollout.PassAtKConfig{Samples: samples}, Points: other},
	}}
	groups, err := seeds(c.passk, func(r report.PassAtK) string { return r.Meta.Name() }, report.MeanPassAtK)
	require.NoError(t, err)
	var out strings.Builder
	sum := newSummary()
	require.NoError(t, c.comparePassAtK(&out, groups, sum), name)
	return out.String(), sum.markdown()
}

// TestCompareEfficiencyCeiling: where the other curve is above the
// reference's pass@k already at its smallest k, k = 1 included, the
// ratio is a cap, at most its value, and one above every exact ratio is
// printed beside the maximum as such. b ahead at k = 1 printed "1.00x"
// at k = 1 and "up to 1.00x (k = 1)", as if measured, where b needs
// 0.71x and 0.91x at k = 2 and 4.
func TestCompareEfficiencyCeiling(t *testing.T) {
	for _, tc := range []struct {
		name  string
		other []rollout.KPoint
		lines []string
		cell  string
	}{
		{"ahead at k = 1", kPoints(1, 0.3, 2, 0.5, 4, 0.85), []string{
			"       1    0.2000        1.00  1.00x (at most)\n",
			"  scaling efficiency of a over b: up to 0.91x (k = 4); at most 1.00x at k = 1 (b is above a's pass@1 already at its smallest k, 1)\n"},
			"| up to 0.91x (k = 4); at most 1.00x at k = 1 (b is above a's pass@1 already at its smallest k, 1) |"},
		{"ahead everywhere", kPoints(1, 0.9, 2, 0.95, 4, 0.99), []string{
			"  no exact ratio: b is above a's pass@k already at its smallest k (each ratio an upper bound)\n",
			"  scaling efficiency of a over b: at most 1.00x at k = 1 (b is above a's pass@1 already at its smallest k, 1)\n"},
			"| at most 1.00x at k = 1 (b is above a's pass@1 already at its smallest k, 1) |"},
	} {
		printed, markdown := compareWithA(t, tc.name, 4, tc.other)
		for _, l := range tc.lines {
			require.Contains(t, printed, l, tc.name)
		}
		require.Contains(t, markdown, tc.cell, tc.name)
	}
}

// TestCompareEfficiencyHeadlineInterval: the interval beside "up to" is
// the bootstrap interval of the ratio at the maximum's k, and says so;
// it read "(k = 1; 95%: ...)", as if an interval of the maximum over k.
// With every problem alike the interval is the point estimate itself.
func TestCompareEfficiencyHeadlineInterval(t *testing.T) {
	counted := func(label string, c int) report.PassAtK {
		r := report.PassAtK{Meta: report.Meta{Label: label, Problems: 2}, Config: rollout.PassAtKConfig{Samples: 64}}
		r.PerProblem = []rollout.ProblemCorrect{{ID: "x", Correct: c}, {ID: "y", Correct: c}}
		for k := 1; k <= 16; k *= 2 {
			p, err := rollout.PassAtK(64, c, k)
			require.NoError(t, err)
			r.Points = append(r.Points, rollout.KPoint{K: k, PassAtK: p})
		}
		return r
	}
	c := comparison{passk: []report.PassAtK{counted("a", 8), counted("b", 3)}}
	eff, err := report.PassAtKEfficiency(c.passk[0], c.passk[1])
	require.NoError(t, err)
	groups, err := seeds(c.passk, func(r report.PassAtK) string { return r.Meta.Name() }, report.MeanPassAtK)
	require.NoError(t, err)
	var out strings.Builder
	sum := newSummary()
	require.NoError(t, c.comparePassAtK(&out, groups, sum))
	want := fmt.Sprintf("up to %.2fx (k = %d; 95%% interval at k = %[2]d: %.2f to %.2fx)", eff.Max, eff.MaxK, eff.Max, eff.Max)
	require.Contains(t, out.String(), "  scaling efficiency of a over b: "+want+"\n")
	require.Contains(t, sum.markdown(), "| "+want+" |")
	// One seed of each label: the draws resample the problems alone, so
	// the header does not claim the seeds' noise ("over problems and
	// seeds" it read); with two seeds of one label it does.
	require.Contains(t, out.String(), "ratio  (95% interval over problems alone: one seed of each)\n")
	c.passk = append(c.passk, counted("b", 4))
	c.passk[2].PerProblem[1].Correct = 2
	for i, p := range c.passk[2].Points {
		v4, err := rollout.PassAtK(64, 4, p.K)
		require.NoError(t, err)
		v2, err := rollout.PassAtK(64, 2, p.K)
		require.NoError(t, err)
		c.passk[2].Points[i].PassAtK = (v4 + v2) / 2
	}
	groups, err = seeds(c.passk, func(r report.PassAtK) string { return r.Meta.Name() }, report.MeanPassAtK)
	require.NoError(t, err)
	out.Reset()
	require.NoError(t, c.comparePassAtK(&out, groups, newSummary()))
	require.Contains(t, out.String(), "(means over seeds, n = 2 and 1)\n       k    target     other k  ratio  (95% interval over problems and seeds)\n")
}

// TestCompareUsageNamesEveryFlag: compare's usage line lists --figures
// with its values, as it lists the other flags; it left it out.
func TestCompareUsageNamesEveryFlag(t *testing.T) {
	var stdout, stderr bytes.Buffer
	require.Equal(t, 2, run(context.Background(), append([]string{"compare"}, emptyFiles(t, "a.json")...), &cliEnv{stdout: &stdout, stderr: &stderr}))
	require.Contains(t, stderr.String(), "usage: spiral compare [--out DIR] [--figures png|svg|pdf] [--max-k K] [--allow-different-problems] [--run LABEL=DIR ...] [REF.json OTHER.json ...]")
}

// TestCompareNoIntervalNamesTheFiles: where a report of the two labels
// has no per-problem counts, the note says which files, since a label's
// seeds share its name: "no interval: report: efficiency intervals: a: no
// per-problem counts" left the user to guess which of a's reports to
// evaluate again.
func TestCompareNoIntervalNamesTheFiles(t *testing.T) {
	dir := t.TempDir()
	write := func(name, label string, counts bool) string {
		r := report.PassAtK{Meta: report.Meta{Mode: report.ModePassAtK, Label: label, Problems: 1}, Config: rollout.PassAtKConfig{Samples: 4}}
		c := map[string]int{"a": 2, "b": 1}[label]
		if counts {
			r.PerProblem = []rollout.ProblemCorrect{{ID: "x", Correct: c}}
		}
		for k := 1; k <= 4; k *= 2 {
			v, err := rollout.PassAtK(4, c, k)
			require.NoError(t, err)
			r.Points = append(r.Points, rollout.KPoint{K: k, PassAtK: v})
		}
		p := filepath.Join(dir, name)
		require.NoError(t, report.WriteJSON(p, r))
		return p
	}
	a1, a2, b := write("a1.json", "a", true), write("a2.json", "a", false), write("b.json", "b", true)
	var stdout, stderr bytes.Buffer
	require.Zero(t, run(context.Background(), []string{"compare", a1, a2, b}, &cliEnv{stdout: &stdout, stderr: &stderr}), stderr.String())
	require.Contains(t, stdout.String(), "  no interval: report: efficiency intervals: a: no per-problem counts (a report written before spiral eval recorded them; run the evaluation again): "+a2+"\n")
}

// TestSummaryMarkdownEscapesPipes: a label with a "|" (eval's --label,
// --run's LABEL) is one cell of summary.md, in its row and in a column
// named after the reference, not a cell boundary that shifts the row's
// numbers under the wrong columns.
func TestSummaryMarkdownEscapesPipes(t *testing.T) {
	s := newSummary()
	s.set("base|v2", "pass@1", "0.500")
	s.set("base|v2", "efficiency of base|v2 over it", "-")
	s.set("spiral", "efficiency of base|v2 over it", "up to 2.00x (k = 4)")
	require.Equal(t, "| model | pass@1 | efficiency of base\\|v2 over it |\n|---|---|---|\n"+
		"| base\\|v2 | 0.500 | - |\n| spiral | - | up to 2.00x (k = 4) |\n", s.markdown())
}

// TestCompareFiguresWithoutOut: --figures without --out, where compare
// prints its tables and writes no plot, is a usage error; the format
// asked for was ignored in silence (exit 0, no figure).
func TestCompareFiguresWithoutOut(t *testing.T) {
	reps := twoPassKReports(t, t.TempDir())
	var stderr bytes.Buffer
	code := run(context.Background(), append([]string{"compare", "--figures", "svg"}, reps...), &cliEnv{stdout: io.Discard, stderr: &stderr})
	require.Equal(t, exitUsage, code, stderr.String())
	require.Equal(t, "spiral compare: --figures svg is the format of the plots --out writes, and no --out is given (compare prints its tables only): give --out DIR\n", stderr.String())
	// With --out it writes them.
	out := filepath.Join(t.TempDir(), "cmp")
	require.Zero(t, run(context.Background(), append([]string{"compare", "--figures", "svg", "--out", out}, reps...), &cliEnv{stdout: io.Discard, stderr: &stderr}), stderr.String())
	require.FileExists(t, filepath.Join(out, "passk.svg"))
}

// TestCompareModesOnOtherProblems: summary.md's rows and tokens.png's
// curves set every label's modes side by side, so --out refuses a report
// of another mode than the comparison's first evaluated on other problems
// than its first report (a pass@k report on 2 problems beside a
// sequential one on 1, another --limit), of the same label or another
// (label b's sequential report beside label a's pass@k one was written
// in silence), naming both files, and --allow-different-problems writes
// them with the same line as a warning. Without --out nothing sets them
// side by side: no refusal.
func TestCompareModesOnOtherProblems(t *testing.T) {
	dir := t.TempDir()
	passk := filepath.Join(dir, "passk.json")
	require.NoError(t, report.WriteJSON(passk, report.PassAtK{
		Meta:   report.Meta{Mode: report.ModePassAtK, Label: "a", Dataset: "p.jsonl", Problems: 2, ProblemIDs: []string{"x", "y"}},
		Config: rollout.PassAtKConfig{Samples: 2},
		Points: []rollout.KPoint{{K: 1, PassAtK: 0.5}, {K: 2, PassAtK: 0.75}}}))
	seq := func(name, label string, ids ...string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, report.WriteJSON(p, report.Budget{
			Meta:   report.Meta{Mode: report.ModeSequential, Label: label, Dataset: "p.jsonl", Problems: len(ids), ProblemIDs: ids},
			Config: rollout.BudgetConfig{Samples: 1, Budgets: []int{4, 8}, MaxTokens: 8},
			Points: []rollout.BudgetPoint{{Budget: 4, Accuracy: 0.25, MeanTokens: 4, Truncated: 1}, {Budget: 8, Accuracy: 0.5, MeanTokens: 6}}}))
		return p
	}
	fewer, same := seq("fewer.json", "a", "x"), seq("same.json", "a", "x", "y")
	otherLabel, otherIDs := seq("b-fewer.json", "b", "x"), seq("b-other.json", "b", "x", "z")
	want := "  " + fewer + " against " + passk + " (label a's sequential report against label a's passk report): problem count 1 against 2\n"
	wantB := "  " + otherLabel + " against " + passk + " (label b's sequential report against label a's passk report): problem count 1 against 2\n"
	wantIDs := "  " + otherIDs + " against " + passk + " (label b's sequential report against label a's passk report): problem 1 is \"z\" against \"y\"\n"
	const refused = "spiral compare: reports of different modes evaluated on different problems (--out's summary.md rows and tokens.png curves would set them side by side; --allow-different-problems writes them anyway):\n"
	const warned = "spiral: warning: reports of different modes evaluated on different problems, written anyway (--allow-different-problems): --out's summary.md rows and tokens.png curves set them side by side:\n"
	for _, tc := range []struct {
		name    string
		args    []string
		code    int
		stderr  string
		summary bool
	}{
		{"printed only", []string{passk, fewer}, 0, "", false},
		{"refused", []string{"--out", filepath.Join(dir, "refused"), passk, fewer}, 1, refused + want, false},
		{"allowed", []string{"--allow-different-problems", "--out", filepath.Join(dir, "allowed"), passk, fewer}, 0, warned + want, true},
		{"same problems", []string{"--out", filepath.Join(dir, "same"), passk, same}, 0, "", true},
		{"another label printed only", []string{passk, otherLabel}, 0, "", false},
		{"another label refused", []string{"--out", filepath.Join(dir, "b-refused"), passk, otherLabel}, 1, refused + wantB, false},
		{"another label's ids refused", []string{"--out", filepath.Join(dir, "b-ids"), passk, otherIDs}, 1, refused + wantIDs, false},
		{"another label allowed", []string{"--allow-different-problems", "--out", filepath.Join(dir, "b-allowed"), passk, otherLabel}, 0, warned + wantB, true},
		{"both labels", []string{"--out", filepath.Join(dir, "both"), passk, fewer, otherLabel}, 1, refused + want + wantB, false},
		{"another label refused, --figures svg", []string{"--figures", "svg", "--out", filepath.Join(dir, "b-svg"), passk, otherLabel}, 1, strings.Replace(refused, "tokens.png", "tokens.svg", 1) + wantB, false},
		{"another label on the same problems", []string{"--out", filepath.Join(dir, "b-same"), passk, seq("b-same.json", "b", "x", "y")}, 0, "", true},
	} {
		var stderr bytes.Buffer
		require.Equal(t, tc.code, run(context.Background(), append([]string{"compare"}, tc.args...), &cliEnv{stdout: io.Discard, stderr: &stderr}), tc.name)
		require.Equal(t, tc.stderr, stderr.String(), tc.name)
		if i := slices.Index(tc.args, "--out"); i >= 0 {
			_, err := os.Stat(filepath.Join(tc.args[i+1], "summary.md"))
			require.Equal(t, tc.summary, err == nil, tc.name)
		}
	}
}

// TestCompareNoIntervalMismatchNamesTheFiles: where a report's
// per-problem counts are over other problems than the reference's first
// report (other count or ids, compared with --allow-different-problems),
// the note names that file and the reference's, not the label alone,
// which a label's seeds share; and a no-counts file of the other label
// is not named for a reference seed's mismatch, as it was.
func TestCompareNoIntervalMismatchNamesTheFiles(t *testing.T) {
	dir := t.TempDir()
	write := func(name, label string, counts bool, ids ...string) string {
		r := report.PassAtK{Meta: report.Meta{Mode: report.ModePassAtK, Label: label, Problems: len(ids)}, Config: rollout.PassAtKConfig{Samples: 4}}
		for k := 1; k <= 4; k *= 2 {
			v, err := rollout.PassAtK(4, 2, k)
			require.NoError(t, err)
			r.Points = append(r.Points, rollout.KPoint{K: k, PassAtK: v})
		}
		for _, id := range ids {
			if counts {
				r.PerProblem = append(r.PerProblem, rollout.ProblemCorrect{ID: id, Correct: 2})
			}
		}
		p := filepath.Join(dir, name)
		require.NoError(t, report.WriteJSON(p, r))
		return p
	}
	a1 := write("a1.json", "a", true, "x", "y")
	fewer, otherIDs := write("fewer.json", "b", true, "x"), write("other-ids.json", "b", true, "x", "z")
	a2, bare := write("a2.json", "a", true, "x"), write("bare.json", "b", false, "x", "y")
	for _, tc := range []struct {
		name  string
		files []string
		want  string
	}{
		{"fewer problems", []string{a1, fewer},
			"  no interval: report: efficiency intervals: b: 1 problem, the reference's first report 2: " + fewer + " (the reference's first report: " + a1 + ")\n"},
		{"other ids", []string{a1, otherIDs},
			`  no interval: report: efficiency intervals: b: problem 1 is "z", the reference's first report has "y" there: ` + otherIDs + " (the reference's first report: " + a1 + ")\n"},
		{"a reference seed's, beside a file without counts", []string{a1, a2, bare},
			"  no interval: report: efficiency intervals: a: 1 problem, the reference's first report 2: " + a2 + " (the reference's first report: " + a1 + ")\n"},
	} {
		var stdout, stderr bytes.Buffer
		require.Zero(t, run(context.Background(), append([]string{"compare", "--allow-different-problems"}, tc.files...), &cliEnv{stdout: &stdout, stderr: &stderr}), stderr.String())
		require.Contains(t, stdout.String(), tc.want, tc.name)
	}
}

// TestCompareTokensLeftOut: reports of pass@k or RSA that record no
// generated tokens (written before eval recorded them) are left out of
// tokens.png's majority@k and RSA curves; --out's output says so, per
// label, as compare says it of sequential reports, where the curve was
// a mean of fewer seeds than the label's, or missing, in silence.
func TestCompareTokensLeftOut(t *testing.T) {
	tokens := rollout.Tokens{Generated: 640}
	passk := func(label string, tok rollout.Tokens) report.PassAtK {
		return report.PassAtK{Meta: report.Meta{Mode: report.ModePassAtK, Label: label, Problems: 2}, Config: rollout.PassAtKConfig{Samples: 4},
			Points: []rollout.KPoint{{K: 1, PassAtK: 0.5, MajorityAtK: 0.5}, {K: 4, PassAtK: 0.8, MajorityAtK: 0.6}}, Tokens: tok}
	}
	rsa := func(label string, tok rollout.Tokens) report.RSA {
		return report.RSA{Meta: report.Meta{Mode: report.ModeRSA, Label: label, Problems: 2}, Steps: []rollout.RSAStep{
			{Step: 0, Accuracy: 0.5, Cumulative: tok}, {Step: 1, Accuracy: 0.6, Cumulative: rollout.Tokens{Generated: 2 * tok.Generated}}}}
	}
	c := comparison{figures: "png",
		passk: []report.PassAtK{passk("spiral", tokens), passk("spiral", rollout.Tokens{}), passk("grpo", tokens)},
		rsa:   []report.RSA{rsa("spiral", tokens), rsa("grpo", rollout.Tokens{})}}
	var out bytes.Buffer
	require.NoError(t, c.report(&out, t.TempDir()))
	require.Contains(t, out.String(), "tokens.png: spiral: 1 of its 2 pass@k reports record no generated tokens: left out of its majority@k curve\n")
	require.Contains(t, out.String(), "tokens.png: grpo: 1 of its 1 RSA reports record no generated tokens: left out of its RSA curve (none drawn)\n")
	require.Equal(t, 2, strings.Count(out.String(), "tokens.png:"), out.String())
	// Printed only, no figure: no note.
	out.Reset()
	require.NoError(t, c.report(&out, ""))
	require.NotContains(t, out.String(), "tokens.png")
	// --figures svg: the note names the plot written, tokens.svg, not
	// tokens.png, which is not there.
	c.figures = "svg"
	out.Reset()
	require.NoError(t, c.report(&out, t.TempDir()))
	require.Contains(t, out.String(), "tokens.svg: spiral: 1 of its 2 pass@k reports record no generated tokens: left out of its majority@k curve\n")
	require.NotContains(t, out.String(), "tokens.png")
}

// TestCompareTokensPlotOfAnEarlierComparison: a comparison of reports
// that draws no tokens.png curve (its reports record no generated
// tokens) removes an earlier comparison's tokens.png from --out, as a
// comparison of runs removes the run plots it draws none of: left, it
// would show the earlier labels beside this comparison's summary.md. A
// comparison of runs alone leaves it, as it leaves passk.png.
func TestCompareTokensPlotOfAnEarlierComparison(t *testing.T) {
	dir := t.TempDir()
	var reps []string
	for _, label := range []string{"a", "b"} {
		p := filepath.Join(dir, label+".json")
		require.NoError(t, report.WriteJSON(p, report.PassAtK{Meta: report.Meta{Mode: report.ModePassAtK, Label: label, Problems: 2}, Config: rollout.PassAtKConfig{Samples: 4},
			Points: []rollout.KPoint{{K: 1, PassAtK: 0.5, MajorityAtK: 0.5}, {K: 4, PassAtK: 0.8, MajorityAtK: 0.6}}}))
		reps = append(reps, p)
	}
	runDir := filepath.Join(dir, "run")
	require.NoError(t, os.MkdirAll(runDir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(runDir, "metrics.jsonl"), []byte(`{"step": 1, "search": {"traces": 2, "reward": 0.5, "mean_length": 3}, "entropy": 0.5}`+"\n"), 0o644))
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"reports without tokens", reps, []string{"passk.png", "summary.md"}},
		{"runs alone", []string{"--run", "s=" + runDir}, []string{"entropy.png", "summary.md", "tokens.png"}},
	} {
		out := filepath.Join(dir, "out-"+strings.ReplaceAll(tc.name, " ", "-"))
		require.NoError(t, os.MkdirAll(out, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(out, "tokens.png"), []byte("an earlier comparison's tokens"), 0o644))
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), append([]string{"compare", "--out", out}, tc.args...), &cliEnv{stdout: &stdout, stderr: &stderr})
		require.Zero(t, code, stderr.String())
		got := dirNames(t, out)
		require.Equal(t, tc.want, got, tc.name)
	}
}

// TestComparePlotsOfAnEarlierFormat: a comparison in one --figures
// format removes the plots of the same names an earlier comparison drew
// in another (passk.png beside passk.svg showed two comparisons in one
// --out); eval's own plot of a report in --out (passk.png beside
// passk.json), which --figures svg is there to keep, and the plots of
// modes not compared stay.
func TestComparePlotsOfAnEarlierFormat(t *testing.T) {
	dir := t.TempDir()
	var reps []string
	for _, label := range []string{"a", "b"} {
		p := filepath.Join(dir, label+".json")
		require.NoError(t, report.WriteJSON(p, report.PassAtK{Meta: report.Meta{Mode: report.ModePassAtK, Label: label, Problems: 2}, Config: rollout.PassAtKConfig{Samples: 4},
			Points: []rollout.KPoint{{K: 1, PassAtK: 0.5, MajorityAtK: 0.5}, {K: 4, PassAtK: 0.8, MajorityAtK: 0.6}}}))
		reps = append(reps, p)
	}
	for _, tc := range []struct {
		name    string
		figures string
		before  []string // files in --out before the comparison
		want    []string
	}{
		{"svg over png", "svg", []string{"passk.png", "tokens.png", "rsa.png"}, []string{"passk.svg", "rsa.png", "summary.md"}},
		{"pdf over png and svg", "pdf", []string{"passk.png", "passk.svg", "tokens.svg"}, []string{"passk.pdf", "summary.md"}},
		{"png over svg", "png", []string{"passk.svg", "tokens.pdf"}, []string{"passk.png", "summary.md"}},
		{"eval's own plot kept", "svg", []string{"passk.json", "passk.png"}, []string{"passk.json", "passk.png", "passk.svg", "summary.md"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(dir, "out-"+strings.ReplaceAll(tc.name, " ", "-"))
			require.NoError(t, os.MkdirAll(out, 0o755))
			for _, name := range tc.before {
				content := "an earlier comparison's plot"
				if name == "passk.json" {
					b, err := os.ReadFile(reps[0])
					require.NoError(t, err)
					content = string(b)
				}
				require.NoError(t, os.WriteFile(filepath.Join(out, name), []byte(content), 0o644))
			}
			var stderr bytes.Buffer
			code := run(context.Background(), append([]string{"compare", "--figures", tc.figures, "--out", out}, reps...), &cliEnv{stdout: io.Discard, stderr: &stderr})
			require.Zero(t, code, stderr.String())
			got := dirNames(t, out)
			require.Equal(t, tc.want, got)
		})
	}
}

// TestCompareRunNoUpdateOfEachKind: compare --run's note on a run none
// of whose steps updated the weights is true of both kinds of no-update
// step: one that drew no informative problem and one whose informative
// problems' trained traces held no token.
func TestCompareRunNoUpdateOfEachKind(t *testing.T) {
	dir := t.TempDir()
	metrics := `{"step": 1, "search": {"traces": 2, "reward": 0.5, "mean_length": 3}, "problems_informative": 0, "no_update": true}` + "\n" +
		`{"step": 2, "search": {"traces": 2, "reward": 0.5, "mean_length": 0}, "problems_informative": 1, "no_update": true}` + "\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, "metrics.jsonl"), []byte(metrics), 0o644))
	var stdout, stderr bytes.Buffer
	require.Zero(t, run(context.Background(), []string{"compare", "--run", "n=" + dir}, &cliEnv{stdout: &stdout, stderr: &stderr}), stderr.String())
	require.Contains(t, stdout.String(), "run n (n = 1): no step updated the weights (2 of 2 trained nothing: no informative problem or no trained token): no token entropy")
}

// TestCompareMaxKWithoutPassK: --max-k bounds the pass@k comparison's
// k, and with no pass@k report given (RSA reports, runs alone) it is
// refused as a flag nothing would read, as --figures without --out is;
// it was taken in silence, the tables printed as without it.
func TestCompareMaxKWithoutPassK(t *testing.T) {
	dir := t.TempDir()
	var reps []string
	for _, label := range []string{"a", "b"} {
		p := filepath.Join(dir, label+".json")
		require.NoError(t, os.WriteFile(p, []byte(fmt.Sprintf(`{"meta": {"mode": "rsa", "model": %q, "problems": 1}, "steps": [{"step": 0, "accuracy": 0.5, "majority": 0.5}]}`, label)), 0o644))
		reps = append(reps, p)
	}
	var stderr bytes.Buffer
	code := run(context.Background(), append([]string{"compare", "--max-k", "8"}, reps...), &cliEnv{stdout: io.Discard, stderr: &stderr})
	require.Equal(t, exitUsage, code, stderr.String())
	require.Equal(t, "spiral compare: --max-k 8 bounds the k of the pass@k comparison, and no pass@k report is given: it would be ignored\n", stderr.String())
	// --max-k 0, every k, is the default; and with pass@k reports it is read.
	require.Zero(t, run(context.Background(), append([]string{"compare", "--max-k", "0"}, reps...), &cliEnv{stdout: io.Discard, stderr: &stderr}), stderr.String())
	require.Zero(t, run(context.Background(), append([]string{"compare", "--max-k", "2"}, twoPassKReports(t, t.TempDir())...), &cliEnv{stdout: io.Discard, stderr: &stderr}), stderr.String())
}

// TestCompareTornRunWarning: a --run whose metrics.jsonl's last line is
// cut short is compared without it, with a warning in the form of every
// other command's, "spiral: warning:"; compare's said "spiral compare:
// warning:".
func TestCompareTornRunWarning(t *testing.T) {
	dir := t.TempDir()
	metrics := `{"step": 1, "search": {"traces": 2, "reward": 0.5, "mean_length": 3}, "problems_informative": 1, "entropy": 0.5}` + "\n" + `{"step": 2, "sea`
	require.NoError(t, os.WriteFile(filepath.Join(dir, "metrics.jsonl"), []byte(metrics), 0o644))
	var stderr bytes.Buffer
	require.Zero(t, run(context.Background(), []string{"compare", "--run", "a=" + dir}, &cliEnv{stdout: io.Discard, stderr: &stderr}), stderr.String())
	require.Equal(t, fmt.Sprintf("spiral: warning: --run a=%s: %s: its last line is cut short (the run was killed while writing it, or is writing it now): left out\n", dir, filepath.Join(dir, "metrics.jsonl")), stderr.String())
}

// TestCompareCandidateCapCounts: RSA reports capping candidates at one
// --candidate-tokens, one written before e4d994d (whose cap counted a
// stopped candidate's <|im_end|>, no candidate_cap recorded) and one
// after, were averaged as seeds of one setting without a word. They are
// now compared with a warning naming both files.
func TestCompareCandidateCapCounts(t *testing.T) {
	dir := t.TempDir()
	seed := 0 // each report a seed of its own, as seeds are
	rsa := func(name, extra string, capTokens int) string {
		p := filepath.Join(dir, name)
		fitted := 0 // -1: no cap, but a step's prompts fitted to the context
		if capTokens < 0 {
			capTokens, fitted = 0, 1
		}
		seed++
		body := fmt.Sprintf(`{"meta": {"mode": "rsa", "model": "m", "seed": %d, "problems": 1, "extra": {%s}}, "config": {"population": 4, "subset_size": 2, "steps": 1, "candidate_tokens": %d}, "steps": [{"step": 0, "accuracy": 0.5, "majority": 0.5}, {"step": 1, "accuracy": 0.6, "majority": 0.5, "fitted_prompts": %d}]}`, seed, extra, capTokens, fitted)
		require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
		return p
	}
	const text = `"candidate_cap": "text tokens"`
	older, newer := rsa("older.json", "", 64), rsa("newer.json", text, 64)
	warning := func(a, b, ca, cb string) string {
		return fmt.Sprintf("spiral: warning: RSA reports that cut candidates (--candidate-tokens, or prompts fitted to the model's context) counting other tokens, compared anyway (one recording no candidate_cap was written before it was recorded, when the cut counted a stopped candidate's closing <|im_end|>, keeping one token less of its text): their seeds are not of one setting, nor their difference the models' alone:\n  %s (%s) and %s (%s)\n", a, ca, b, cb)
	}
	for _, tc := range []struct {
		name  string
		files []string
		want  string
	}{
		{"older then newer", []string{older, newer}, warning(older, newer, "no candidate_cap", `candidate_cap "text tokens"`)},
		{"newer then older", []string{newer, older}, warning(newer, older, `candidate_cap "text tokens"`, "no candidate_cap")},
		{"both newer", []string{newer, rsa("newer2.json", text, 64)}, ""},
		{"both older", []string{older, rsa("older2.json", "", 64)}, ""},
		{"uncapped", []string{rsa("u1.json", "", 0), rsa("u2.json", "", 0)}, ""},
		{"uncapped, older fitted", []string{rsa("f1.json", "", -1), rsa("f2.json", text, -1)}, warning(filepath.Join(dir, "f1.json"), filepath.Join(dir, "f2.json"), "no candidate_cap", `candidate_cap "text tokens"`)},
		{"uncapped, one fitted", []string{rsa("f3.json", "", 0), rsa("f4.json", text, -1)}, ""},
	} {
		var stdout, stderr bytes.Buffer
		require.Zero(t, run(context.Background(), append([]string{"compare"}, tc.files...), &cliEnv{stdout: &stdout, stderr: &stderr}), stderr.String())
		require.Equal(t, tc.want, stderr.String(), tc.name)
	}
}

// TestCompareRunHeldOutSwitched: a run resumed under --override onto
// other held-out problems (eval.jsonl's problems_digest changes) was
// summarised "held-out pass@1 0.750 (step 0) -> 0.250 (step 3)", across
// both problem sets, without a word. Its curve now keeps the last set's
// evaluations, as train's held-out summary does, and says how many it
// left out.
func TestCompareRunHeldOutSwitched(t *testing.T) {
	dir := t.TempDir()
	runDir := func(name string, digests ...string) string {
		d := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(d, 0o755))
		var metrics, evals string
		for s, digest := range digests {
			metrics += fmt.Sprintf(`{"step": %d, "search": {"traces": 2, "reward": 0.5, "mean_length": 3}, "entropy": 0.5}`+"\n", s+1)
			evals += fmt.Sprintf(`{"step": %d, "problems": 4, "samples": 1, "points": [{"k": 1, "pass_at_k": %g}], "problems_digest": %q}`+"\n", s, 0.75-0.25*float64(s), digest)
		}
		require.NoError(t, os.WriteFile(filepath.Join(d, "metrics.jsonl"), []byte(metrics), 0o644))
		require.NoError(t, os.WriteFile(filepath.Join(d, "eval.jsonl"), []byte(evals), 0o644))
		return d
	}
	switched, other := runDir("switched", "aa", "aa", "bb", "bb"), runDir("other", "cc", "cc", "bb", "bb")
	for _, tc := range []struct {
		name string
		runs []string
		want string
	}{
		{"one run", []string{"s=" + switched}, "; held-out pass@1 0.250 (step 2) -> 0.000 (step 3; 2 of eval.jsonl's evaluations, on other held-out problems than its last, left out)"},
		{"seeds", []string{"s=" + switched, "s=" + other}, "; held-out pass@1 0.250 (step 2) -> 0.000 (step 3; 4 of the seeds' eval.jsonl evaluations, on other held-out problems than their last, left out)"},
		{"unswitched", []string{"s=" + runDir("one", "bb", "bb", "bb", "bb")}, "; held-out pass@1 0.750 (step 0) -> 0.000 (step 3)\n"},
	} {
		var stdout, stderr bytes.Buffer
		args := []string{"compare"}
		for _, r := range tc.runs {
			args = append(args, "--run", r)
		}
		require.Zero(t, run(context.Background(), args, &cliEnv{stdout: &stdout, stderr: &stderr}), stderr.String())
		require.Contains(t, stdout.String(), tc.want, tc.name)
	}
}

// TestCompareSummaryHeldOutLeftOut: summary.md's held-out cell of a run
// whose eval.jsonl switched held-out problems gave the last set's pass@1
// first -> last without saying that evaluations were left out, as the
// printed line says.
func TestCompareSummaryHeldOutLeftOut(t *testing.T) {
	dir := t.TempDir()
	d := filepath.Join(dir, "run")
	require.NoError(t, os.MkdirAll(d, 0o755))
	var metrics, evals string
	for s, digest := range []string{"aa", "bb", "bb"} {
		metrics += fmt.Sprintf(`{"step": %d, "search": {"traces": 2, "reward": 0.5, "mean_length": 3}, "entropy": 0.5}`+"\n", s+1)
		evals += fmt.Sprintf(`{"step": %d, "problems": 4, "samples": 1, "points": [{"k": 1, "pass_at_k": 0.5}], "problems_digest": %q}`+"\n", s, digest)
	}
	require.NoError(t, os.WriteFile(filepath.Join(d, "metrics.jsonl"), []byte(metrics), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(d, "eval.jsonl"), []byte(evals), 0o644))
	out := filepath.Join(dir, "out")
	var stdout, stderr bytes.Buffer
	require.Zero(t, run(context.Background(), []string{"compare", "--out", out, "--run", "s=" + d}, &cliEnv{stdout: &stdout, stderr: &stderr}), stderr.String())
	summary, err := os.ReadFile(filepath.Join(out, "summary.md"))
	require.NoError(t, err)
	require.Contains(t, string(summary), "| 0.500 -> 0.500 (1 evaluation on other held-out problems left out) |")
}

// TestCompareSeedsOfOneEvaluation: two reports of one label that record
// one model, seed and settings (one evaluation run twice, into two
// --out folders) were averaged as two seeds in silence, n = 2 with a
// range of 0 and a bootstrap that drew the same counts twice. compare
// warns of them, naming both files; reports of other seeds, models or
// settings, or of one that records none of the settings, are not warned
// of.
func TestCompareSeedsOfOneEvaluation(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
		return p
	}
	const extra = `"extra": {"temperature": "1", "top_p": "1", "top_k": "0", "max_new_tokens": "64"}`
	passk := func(name, label, model string, seed int, extra string) string {
		return write(name, fmt.Sprintf(`{"meta": {"mode": "passk", "model": %q, "label": %q, "seed": %d, "problems": 1, %s}, "config": {"samples": 2}, "points": [{"k": 1, "pass_at_k": 0.5}, {"k": 2, "pass_at_k": 0.75}]}`, model, label, seed, extra))
	}
	rsa := func(name string, seed int) string {
		return write(name, fmt.Sprintf(`{"meta": {"mode": "rsa", "model": "m", "seed": %d, "problems": 1, %s}, "config": {"population": 4, "subset_size": 2, "steps": 1}, "steps": [{"step": 0, "accuracy": 0.5, "majority": 0.5}, {"step": 1, "accuracy": 0.6, "majority": 0.5}]}`, seed, extra))
	}
	const warning = "spiral: warning: reports of one label that record one model, seed and settings, averaged as two seeds (most likely one evaluation run twice, which counts twice in the label's mean, range and bootstrap): evaluate a label's seeds with other --seed, or leave the copy out:\n"
	base := passk("base.json", "base", "b", 0, extra)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"one evaluation twice", []string{base, passk("a1.json", "t", "m", 3, extra), passk("a2.json", "t", "m", 3, extra)},
			warning + "  " + filepath.Join(dir, "a1.json") + " and " + filepath.Join(dir, "a2.json") + " (label t, passk reports): model m, seed 3\n"},
		{"rsa, a third seed of its own", []string{rsa("r1.json", 0), rsa("r2.json", 1), rsa("r3.json", 0)},
			warning + "  " + filepath.Join(dir, "r1.json") + " and " + filepath.Join(dir, "r3.json") + " (label m, rsa reports): model m, seed 0\n"},
		{"other seeds", []string{base, passk("b1.json", "t", "m", 1, extra), passk("b2.json", "t", "m", 2, extra)}, ""},
		{"other models", []string{base, passk("c1.json", "t", "run1/final", 0, extra), passk("c2.json", "t", "run2/final", 0, extra)}, ""},
		{"one records no settings", []string{base, passk("d1.json", "t", "m", 0, extra), passk("d2.json", "t", "m", 0, `"extra": {}`)}, ""},
	} {
		var stderr bytes.Buffer
		require.Zero(t, run(context.Background(), append([]string{"compare"}, tc.args...), &cliEnv{stdout: io.Discard, stderr: &stderr}), tc.name+": "+stderr.String())
		require.Equal(t, tc.want, stderr.String(), tc.name)
	}
}

// TestCompareRunSeedsTrainedOtherwise: runs of one --run label are
// averaged as seeds of one training, so runs whose newest checkpoints
// record other training settings than the seed (another --algo, --lr or
// model) are refused naming both directories and the settings, as seed
// reports evaluated with other settings are; they were averaged in
// silence (a SPIRAL and a GRPO run as one label's two seeds). Seeds of
// one training differ by the seed alone and are compared; a run without
// a checkpoint records no settings and is not checked.
func TestCompareRunSeedsTrainedOtherwise(t *testing.T) {
	dir := t.TempDir()
	base := rl.RunSettings{Model: "embedded", ModelID: "m1", Data: "embedded:synth", DataID: "d1",
		RL: rl.DefaultConfig(), Schedule: optim.Schedule{PeakLR: 1e-4, WarmupSteps: 5},
		Sampling: rl.SamplingSettings(1, 1, 0, 96, "", rl.TemplatePrints{Both: "t1", Search: "s1", Aggregate: "a1"})}
	runDir := func(name string, settings *rl.RunSettings) string {
		d := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(d, 0o755))
		var metrics string
		for s := 1; s <= 2; s++ {
			metrics += fmt.Sprintf(`{"step": %d, "search": {"traces": 2, "reward": 0.5, "mean_length": 3}, "entropy": 0.1}`+"\n", s)
		}
		require.NoError(t, os.WriteFile(filepath.Join(d, rl.MetricsFile), []byte(metrics), 0o644))
		if settings != nil {
			w, err := params.NewStore([]params.Spec{{Name: "a", Shape: []int64{2}}})
			require.NoError(t, err)
			b, err := json.Marshal(settings)
			require.NoError(t, err)
			_, err = checkpoint.Save(filepath.Join(d, rl.CheckpointsDir), w, nil, checkpoint.State{Step: 2, Config: b}, checkpoint.Options{})
			require.NoError(t, err)
		}
		return d
	}
	seeded := func(seed uint64, change func(*rl.RunSettings)) *rl.RunSettings {
		s := base
		s.RL.Seed = seed
		if change != nil {
			change(&s)
		}
		return &s
	}
	first := runDir("spiral-s1", seeded(1, nil))
	for _, tc := range []struct {
		name     string
		settings *rl.RunSettings
		want     string // "" for compared
	}{
		{"another seed", seeded(2, nil), ""},
		{"no checkpoint", nil, ""},
		{"another algorithm", seeded(2, func(s *rl.RunSettings) { s.RL.Algo = rl.AlgoGRPO }), `rl.algo (--algo): "spiral" -> "grpo"`},
		{"another learning rate", seeded(2, func(s *rl.RunSettings) { s.Schedule.PeakLR = 2e-4 }), "schedule.peak_lr (--lr): 0.0001 -> 0.0002"},
		{"another model", seeded(2, func(s *rl.RunSettings) { s.ModelID = "m2" }), "model (--model): embedded (m1) -> embedded (m2)"},
		{"other training data", seeded(2, func(s *rl.RunSettings) { s.Data, s.DataID = "p.jsonl", "d2" }), "data (--data): embedded:synth (d1) -> p.jsonl (d2)"},
	} {
		other := runDir(strings.ReplaceAll(tc.name, " ", "-"), tc.settings)
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), []string{"compare", "--run", "x=" + first, "--run", "x=" + other}, &cliEnv{stdout: &stdout, stderr: &stderr})
		if tc.want == "" {
			require.Equal(t, 0, code, "%s: %s", tc.name, stderr.String())
			require.Contains(t, stdout.String(), "run x (n = 2)", tc.name)
			continue
		}
		require.Equal(t, exitFailure, code, tc.name)
		state := func(run string) string {
			return filepath.Join(run, rl.CheckpointsDir, "ckpt-000002", checkpoint.StateFile)
		}
		require.Equal(t, fmt.Sprintf("spiral compare: run x: seeds %s and %s were trained with other settings (%s against %s): %s: train a label's seeds alike, or give them other labels\n",
			first, other, state(first), state(other), tc.want), stderr.String(), tc.name)
		require.Empty(t, stdout.String(), tc.name)
	}
}

// TestCompareDefaultLabelsOfOtherCheckpoints: the checkpoints of two runs
// in directories of one name (the default --out runs/spiral in two
// working directories) get one default label, the model with the
// checkpoint's run directory and name, and compare averaged their
// reports as seeds of one model without a word (with one eval seed it
// even warned that one evaluation was run twice). Reports record the
// checkpoint's weights (state.json's CRC-32C and size of them) now, and
// compare refuses reports of a label eval gave by default that record
// other weights, naming both files and suggesting --label; copies of
// one checkpoint are one model still (and one seed evaluated twice is
// warned of as before), and labels given on purpose group whatever they
// group, without the warning of one evaluation run twice.
func TestCompareDefaultLabelsOfOtherCheckpoints(t *testing.T) {
	t.Setenv("SPIRAL_CACHE_DIR", t.TempDir())
	dir := t.TempDir()
	runA, runB, runC := filepath.Join(dir, "a", "run"), filepath.Join(dir, "b", "run"), filepath.Join(dir, "c", "run")
	trainTinyLoRA(t, runA)
	var stderr bytes.Buffer
	require.Zero(t, run(context.Background(), []string{"train", "--out", runB, "--seed", "2", "--lora-rank", "2", "--steps", "1", "--problems", "1", "--n1", "2", "--k", "1", "--n", "2", "--n2", "2",
		"--max-new-tokens", "4", "--eval-every", "0", "--final-rsa-steps", "0", "--threads", "1", "--quiet"}, &cliEnv{stdout: io.Discard, stderr: &stderr}), stderr.String())
	require.NoError(t, os.CopyFS(runC, os.DirFS(runA))) // a copy of run a's checkpoints
	eval := func(from, name string) (string, report.PassAtK) {
		out := filepath.Join(dir, "eval-"+name)
		var stderr bytes.Buffer
		require.Zero(t, run(context.Background(), []string{"eval", "--checkpoint", from, "--mode", "passk", "--limit", "1", "--samples", "2", "--max-new-tokens", "4", "--quiet", "--threads", "1", "--out", out},
			&cliEnv{stdout: io.Discard, stderr: &stderr}), stderr.String())
		path := filepath.Join(out, "passk.json")
		var rep report.PassAtK
		require.NoError(t, report.ReadJSON(path, &rep))
		return path, rep
	}
	a, repA := eval(runA, "a")
	b, repB := eval(runB, "b")
	c, repC := eval(runC, "c")
	const label = "embedded@run/ckpt-000001"
	for _, r := range []report.PassAtK{repA, repB, repC} {
		require.Equal(t, label, r.Meta.Name(), "one default label")
		require.NotEmpty(t, r.Meta.CheckpointDigest, "the checkpoint's digest recorded")
	}
	require.NotEqual(t, repA.Meta.CheckpointDigest, repB.Meta.CheckpointDigest, "two runs' checkpoints")
	require.Equal(t, repA.Meta.CheckpointDigest, repC.Meta.CheckpointDigest, "a copy of one checkpoint")
	// labelled writes a copy of the report at path with the label given.
	labelled := func(path, name string) string {
		var rep report.PassAtK
		require.NoError(t, report.ReadJSON(path, &rep))
		rep.Meta.Label = "t"
		p := filepath.Join(dir, name+".json")
		require.NoError(t, report.WriteJSON(p, rep))
		return p
	}
	const twice = "spiral: warning: reports of one label that record one model, seed and settings, averaged as two seeds"
	for _, tc := range []struct {
		name       string
		args       []string
		code       int
		want, warn string // want: stderr's error line; warn: a line stderr starts with
	}{
		{name: "two runs' checkpoints", args: []string{a, b}, code: exitFailure,
			want: "spiral compare: " + a + " and " + b + " share the label " + label + ", eval's default (the model with its checkpoint's run directory and name), but evaluated different checkpoints (checkpoint_digest " + repA.Meta.CheckpointDigest + " and " + repB.Meta.CheckpointDigest + "; of runs in directories of one name?), which compare would take for one model, its reports of a mode averaged as seeds: give their evaluations --label, one each to compare them, or one for both to average them as seeds (or set meta.label in the reports)\n"},
		{name: "a copy of one checkpoint", args: []string{a, c}, warn: twice},
		{name: "labels given", args: []string{labelled(a, "la"), labelled(b, "lb")}},
	} {
		var stderr bytes.Buffer
		code := run(context.Background(), append([]string{"compare"}, tc.args...), &cliEnv{stdout: io.Discard, stderr: &stderr})
		require.Equal(t, tc.code, code, tc.name+": "+stderr.String())
		switch {
		case tc.want != "":
			require.Equal(t, tc.want, stderr.String(), tc.name)
		case tc.warn != "":
			require.True(t, strings.HasPrefix(stderr.String(), tc.warn), "%s: %s", tc.name, stderr.String())
		default:
			require.Empty(t, stderr.String(), tc.name)
		}
	}
	// Run b's checkpoint evaluated into the --out of run a's: the note
	// on the report replaced tells their weights apart, the names alike.
	out := filepath.Join(dir, "eval-a")
	stderr.Reset()
	require.Zero(t, run(context.Background(), []string{"eval", "--checkpoint", runB, "--mode", "passk", "--limit", "1", "--samples", "2", "--max-new-tokens", "4", "--quiet", "--threads", "1", "--out", out},
		&cliEnv{stdout: io.Discard, stderr: &stderr}), stderr.String())
	require.Contains(t, stderr.String(), "spiral: note: "+a+", the passk report of "+label+" (checkpoint_digest "+repA.Meta.CheckpointDigest+"), will be replaced by this evaluation's, of "+label+" (checkpoint_digest "+repB.Meta.CheckpointDigest+")\n")
}

// TestCompareFinalRSAOfRunsOfOneSeed: train's final RSA report, rsa.json
// in its run directory, is labelled by the --algo, so that compare
// averages the rsa.json of one algorithm's runs as seeds; two runs of
// one --seed (here with another --lr), whose reports record one seed and
// other checkpoints, were averaged as two seeds of the label
// without a word. They are refused, naming both files, as reports of
// eval's default label of other checkpoints are; runs of other seeds are
// compared as before. Runs of other seeds trained otherwise (another
// --lr, or --steps) were averaged as seeds in silence too, while --run
// refuses them: the settings and step of the checkpoint each report
// evaluated (its weights') are checked as --run's are
// (rl.SeedSettingsDiff), naming both checkpoints' state.json; copies of
// the reports outside their runs are not checked, as before. One run
// trained twice (one --seed and settings, into two --out: the same
// weights, --threads 1 training deterministically) was averaged as two
// seeds too, only other weights being refused: it is refused, as one run
// twice.
func TestCompareFinalRSAOfRunsOfOneSeed(t *testing.T) {
	t.Setenv("SPIRAL_CACHE_DIR", t.TempDir())
	dir := t.TempDir()
	train := func(name, seed, lr, steps string) (string, report.RSA) {
		out := filepath.Join(dir, name)
		var stderr bytes.Buffer
		require.Zero(t, run(context.Background(), []string{"train", "--out", out, "--seed", seed, "--lr", lr, "--lora-rank", "2", "--steps", steps, "--problems", "1", "--n1", "2", "--k", "1", "--n", "2", "--n2", "2",
			"--max-new-tokens", "4", "--eval-every", "0", "--final-rsa-steps", "1", "--eval-problems", "2", "--threads", "1", "--quiet"}, &cliEnv{stdout: io.Discard, stderr: &stderr}), stderr.String())
		path := filepath.Join(out, rl.FinalRSAFile)
		var rep report.RSA
		require.NoError(t, report.ReadJSON(path, &rep))
		return path, rep
	}
	a, repA := train("a", "1", "1e-4", "1")
	b, repB := train("b", "1", "3e-4", "1")
	c, repC := train("c", "2", "1e-4", "1")
	d, repD := train("d", "2", "3e-4", "1")
	e, repE := train("e", "3", "1e-4", "2")
	require.Equal(t, repA.Meta.Seed, repB.Meta.Seed, "one --seed")
	require.NotEqual(t, repA.Meta.Seed, repC.Meta.Seed)
	require.NotEqual(t, repA.Meta.CheckpointDigest, repB.Meta.CheckpointDigest, "other checkpoints")
	twice, repTwice := train("twice", "1", "1e-4", "1")
	require.Equal(t, repA.Meta.CheckpointDigest, repTwice.Meta.CheckpointDigest, "one run trained twice")
	for _, r := range []report.RSA{repA, repB, repC, repD, repE} {
		require.Equal(t, "spiral", r.Meta.Name(), "the --algo's label")
	}
	// Copies of a's and d's reports outside their runs: no run to read
	// the settings of.
	copied := func(from, name string) string {
		to := filepath.Join(dir, "copies", name)
		require.NoError(t, os.MkdirAll(filepath.Dir(to), 0o755))
		b, err := os.ReadFile(from)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(to, b, 0o644))
		return to
	}
	state := func(rsa string, step int64) string {
		return filepath.Join(filepath.Dir(rsa), rl.CheckpointsDir, checkpoint.DirName(step), checkpoint.StateFile)
	}
	trainedOtherwise := func(other string, step int64, diff string) string {
		return "spiral compare: label spiral: seeds " + a + " and " + other + ", final RSA reports of training runs (labelled by their --algo), were trained with other settings (" +
			state(a, 1) + " against " + state(other, step) + "): " + diff + ": train a label's seeds alike, or leave one out (or set meta.label in one to compare them)\n"
	}
	for _, tc := range []struct {
		name, ref, other, want string // want: stderr's error line, "" for compared
	}{
		{"runs of one --seed", a, b, "spiral compare: " + a + " and " + b + ", final RSA reports of training runs that share the label spiral (their --algo) and the --seed 1 (meta.seed " +
			fmt.Sprint(repA.Meta.Seed) + "), evaluated other checkpoints (checkpoint_digest " + repA.Meta.CheckpointDigest + " and " + repB.Meta.CheckpointDigest +
			"): runs of one --seed (of other settings, or one run trained twice), which compare would average as two seeds: compare runs of other --seed as seeds, or leave one out (or set meta.label in one to compare them)\n"},
		{"one run trained twice", a, twice, "spiral compare: " + a + " and " + twice + ", final RSA reports of training runs that share the label spiral (their --algo) and the --seed 1 (meta.seed " +
			fmt.Sprint(repA.Meta.Seed) + "), evaluated one checkpoint (checkpoint_digest " + repA.Meta.CheckpointDigest +
			"): one run trained twice (or copied), which compare would average as two seeds: leave one out, or train one again with another --seed\n"},
		{"runs of other seeds", a, c, ""},
		{"runs of other seeds and --lr", a, d, trainedOtherwise(d, 1, "schedule.peak_lr (--lr): 0.0001 -> 0.0003")},
		{"runs of other seeds and --steps", a, e, trainedOtherwise(e, 2, "step (--steps): 1 -> 2")},
		{"copies outside their runs", copied(a, "a.json"), copied(d, "d.json"), ""},
	} {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), []string{"compare", tc.ref, tc.other}, &cliEnv{stdout: &stdout, stderr: &stderr})
		if tc.want == "" {
			require.Zero(t, code, "%s: %s", tc.name, stderr.String())
			require.Contains(t, stdout.String(), "spiral (n = 2)", tc.name)
			continue
		}
		require.Equal(t, exitFailure, code, tc.name)
		require.Equal(t, tc.want, stderr.String(), tc.name)
		require.Empty(t, stdout.String(), tc.name)
	}
}

// TestCompareDefaultLabelsOfOtherModels: two models in directories of
// one name (sft's default --out runs/sft in two working directories),
// each evaluated as --model runs/sft from its own, get one default label,
// the path as given, and compare averaged their reports as seeds of one
// model, warning that one evaluation had been run twice. Reports record
// the model's content id now (the id checkpoints record of the model
// they were trained from), and compare refuses reports of a label eval
// gave by default that record other ids; a copy of one model is one
// model still.
func TestCompareDefaultLabelsOfOtherModels(t *testing.T) {
	t.Setenv("SPIRAL_CACHE_DIR", t.TempDir())
	dir := t.TempDir()
	eval := func(name, seed string) (string, report.PassAtK) {
		wd := filepath.Join(dir, name)
		if seed != "" {
			var stderr bytes.Buffer
			require.Zero(t, run(context.Background(), []string{"init-model", "--out", filepath.Join(wd, "runs", "m"), "--seed", seed}, &cliEnv{stdout: io.Discard, stderr: &stderr}), stderr.String())
		} else {
			require.NoError(t, os.CopyFS(filepath.Join(wd, "runs", "m"), os.DirFS(filepath.Join(dir, "a", "runs", "m"))))
		}
		t.Chdir(wd)
		out := filepath.Join(wd, "eval")
		var stderr bytes.Buffer
		require.Zero(t, run(context.Background(), []string{"eval", "--model", "runs/m", "--mode", "passk", "--limit", "1", "--samples", "2", "--max-new-tokens", "4", "--quiet", "--threads", "1", "--out", out},
			&cliEnv{stdout: io.Discard, stderr: &stderr}), stderr.String())
		path := filepath.Join(out, "passk.json")
		var rep report.PassAtK
		require.NoError(t, report.ReadJSON(path, &rep))
		return path, rep
	}
	a, repA := eval("a", "1")
	b, repB := eval("b", "2")
	c, repC := eval("c", "") // a copy of a's model
	const label = "runs/m/model.onnx"
	for _, r := range []report.PassAtK{repA, repB, repC} {
		require.Equal(t, label, r.Meta.Name(), "one default label")
		require.NotEmpty(t, r.Meta.ModelDigest, "the model's id recorded")
	}
	require.NotEqual(t, repA.Meta.ModelDigest, repB.Meta.ModelDigest, "two models' ids")
	require.Equal(t, repA.Meta.ModelDigest, repC.Meta.ModelDigest, "a copy's id")
	var stderr bytes.Buffer
	require.Equal(t, exitFailure, run(context.Background(), []string{"compare", a, b}, &cliEnv{stdout: io.Discard, stderr: &stderr}))
	require.Equal(t, "spiral compare: "+a+" and "+b+" share the label "+label+", eval's default (the model as given), but evaluated different models (ids "+repA.Meta.ModelDigest[:12]+" and "+repB.Meta.ModelDigest[:12]+"; models in directories of one name?), which compare would take for one model, its reports of a mode averaged as seeds: give their evaluations --label, one each to compare them, or one for both to average them as seeds (or set meta.label in the reports)\n", stderr.String())
	stderr.Reset()
	require.Zero(t, run(context.Background(), []string{"compare", a, c}, &cliEnv{stdout: io.Discard, stderr: &stderr}), stderr.String())
	// Model b evaluated into model a's --out: the note on the report
	// replaced tells their ids apart, the names alike.
	t.Chdir(filepath.Join(dir, "b"))
	stderr.Reset()
	require.Zero(t, run(context.Background(), []string{"eval", "--model", "runs/m", "--mode", "passk", "--limit", "1", "--samples", "2", "--max-new-tokens", "4", "--quiet", "--threads", "1", "--out", filepath.Dir(a)},
		&cliEnv{stdout: io.Discard, stderr: &stderr}), stderr.String())
	require.Contains(t, stderr.String(), "spiral: note: "+a+", the passk report of "+label+" (id "+repA.Meta.ModelDigest[:12]+"), will be replaced by this evaluation's, of "+label+" (id "+repB.Meta.ModelDigest[:12]+")\n")
}
