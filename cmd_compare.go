package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/spf13/pflag"

	"github.com/spiral-rl/spiral/model/atomicfile"
	"github.com/spiral-rl/spiral/model/checkpoint"
	"github.com/spiral-rl/spiral/rl"
	"github.com/spiral-rl/spiral/rollout"
	"github.com/spiral-rl/spiral/rollout/report"
)

func setupCompare(fs *pflag.FlagSet) func(context.Context, *cliEnv, []string) error {
	out := fs.String("out", "", "directory for the overlay plots and summary.md (default: print only)")
	markNonEmpty(fs, "out", "the directory for the plots and summary.md (leave --out out to print only)")
	runs := fs.StringArray("run", nil, "LABEL=DIR: a training run's metrics.jsonl and eval.jsonl (repeatable; runs of one label are seeds)")
	maxK := fs.Int("max-k", 0, "compare pass@k scaling efficiency at the reference's k <= this only, reading the other curves to their largest k (evaluate them with more --samples to measure ratios above max-k/k); 0: every k")
	allowDiff := fs.Bool("allow-different-problems", false, "compare reports evaluated on other problems than their mode's first report (another dataset, problem count or problem ids), with a warning, instead of refusing")
	figures := fs.String("figures", "png", "format of the plots --out writes: png, svg or pdf (vector graphics, for a paper)")
	return func(_ context.Context, env *cliEnv, args []string) error {
		// Runs alone are summarised (entropy, held-out and search credit
		// curves); reports alone need two to compare.
		if len(args) < 2 && len(*runs) == 0 {
			return usageError{errors.New("usage: spiral compare [--out DIR] [--figures png|svg|pdf] [--max-k K] [--allow-different-problems] [--run LABEL=DIR ...] [REF.json OTHER.json ...] (two eval reports or more, or one with --run, or --run alone; reports sharing a label are seeds; each mode's first label is the reference)")}
		}
		if *maxK < 0 {
			return usageError{fmt.Errorf("--max-k %d: want a k >= 1, or 0 for every k", *maxK)}
		}
		if err := countsAtMost(count{"--max-k", *maxK, 0}); err != nil {
			return usageError{err}
		}
		if !report.PlotFormat(*figures) { // the plots' extension
			return usageError{fmt.Errorf("--figures %q: want png, svg or pdf", *figures)}
		}
		if fs.Changed("figures") && *out == "" {
			return usageError{fmt.Errorf("--figures %s is the format of the plots --out writes, and no --out is given (compare prints its tables only): give --out DIR", *figures)}
		}
		if *out != "" {
			if err := refuseHousekeptOut(*out, "the plots and summary.md", "compare"); err != nil {
				return err
			}
		}
		if err := checkPathArgs(reportArgs, args); err != nil {
			return err
		}
		c := comparison{maxK: *maxK, figures: *figures}
		given := givenPaths{twice: "it would count twice (as two seeds of one label, or as a label compared with itself)"}
		for _, r := range *runs {
			label, dir, ok := strings.Cut(r, "=")
			if !ok || label == "" || dir == "" {
				return usageError{fmt.Errorf("--run %q: want LABEL=DIR", r)}
			}
			if err := given.add("--run "+r, dir, "run directory"); err != nil {
				return err
			}
		}
		for _, p := range args {
			if err := given.add(p, p, "report"); err != nil {
				return err
			}
		}
		for _, r := range *runs {
			label, dir, _ := strings.Cut(r, "=")
			if err := checkRunDir(r, dir); err != nil {
				return err
			}
			curves, err := rl.ReadRunCurves(dir)
			if err != nil {
				return err
			}
			for _, f := range curves.Torn {
				fmt.Fprintf(env.stderr, "spiral: warning: --run %s: %s: its last line is cut short (the run was killed while writing it, or is writing it now): left out\n", r, f)
			}
			c.runs = append(c.runs, labelledRun{label, dir, curves})
		}
		for _, p := range args {
			if err := c.read(p); err != nil {
				return err
			}
		}
		if *maxK > 0 && len(c.passk) == 0 {
			return usageError{fmt.Errorf("--max-k %d bounds the k of the pass@k comparison, and no pass@k report is given: it would be ignored", *maxK)}
		}
		if err := c.checkSeeds(); err != nil {
			return err
		}
		if diff := c.problemDifferences(); diff != "" {
			if !*allowDiff {
				return fmt.Errorf("reports evaluated on different problems (a ratio or gain between them compares different questions; --allow-different-problems compares them anyway):\n%s", diff)
			}
			fmt.Fprintf(env.stderr, "spiral: warning: reports evaluated on different problems, compared anyway (--allow-different-problems): a ratio or gain between them compares different questions:\n%s\n", diff)
		}
		if diff := c.modeDifferences(); diff != "" && *out != "" {
			// The printed tables compare within a mode; --out's summary.md
			// rows and tokens.png curves set every label's modes side by
			// side.
			if !*allowDiff {
				return fmt.Errorf("reports of different modes evaluated on different problems (--out's summary.md rows and tokens.%s curves would set them side by side; --allow-different-problems writes them anyway):\n%s", *figures, diff)
			}
			fmt.Fprintf(env.stderr, "spiral: warning: reports of different modes evaluated on different problems, written anyway (--allow-different-problems): --out's summary.md rows and tokens.%s curves set them side by side:\n%s\n", *figures, diff)
		}
		if diff := c.settingDifferences(); diff != "" {
			fmt.Fprintf(env.stderr, "spiral: warning: reports evaluated with different settings, compared anyway: a ratio or gain between them mixes the models' difference with the settings':\n%s\n", diff)
		}
		if diff := c.candidateCapDifferences(); diff != "" {
			fmt.Fprintf(env.stderr, "spiral: warning: RSA reports that cut candidates (--candidate-tokens, or prompts fitted to the model's context) counting other tokens, compared anyway (one recording no %s was written before it was recorded, when the cut counted a stopped candidate's closing <|im_end|>, keeping one token less of its text): their seeds are not of one setting, nor their difference the models' alone:\n%s\n", report.CandidateCapKey, diff)
		}
		if pairs := c.repeatedSeeds(); pairs != "" {
			fmt.Fprintf(env.stderr, "spiral: warning: reports of one label that record one model, seed and settings, averaged as two seeds (most likely one evaluation run twice, which counts twice in the label's mean, range and bootstrap): evaluate a label's seeds with other --seed, or leave the copy out:\n%s\n", pairs)
		}
		if *out == "" {
			return c.report(env.stdout, "")
		}
		if err := c.checkOut(*out); err != nil {
			return err
		}
		// The plots and summary.md are written in a stage in --out and
		// moved in together: an interrupted comparison leaves none of its
		// files beside the last one's.
		stage, err := atomicfile.NewStage(*out)
		if err != nil {
			return outError("--out", *out, err)
		}
		defer stage.Discard()
		if err := c.report(env.stdout, stage.Dir()); err != nil {
			return err
		}
		// What this comparison made; plots of modes it was not given stay,
		// as comparisons of one mode at a time into one --out expect. A
		// comparison removes the plots of its kind it drew none of (the
		// commit removes a name its stage lacks): of runs, the run plots;
		// of reports, tokens, which every mode feeds. An earlier
		// comparison's would show other runs or labels beside this one's.
		// A plot it draws or claims replaces an earlier comparison's of
		// the name in every format (passk.png beside a new passk.svg would
		// set two comparisons side by side), but eval's own plot of a
		// report in --out (passk.png beside passk.json), which --figures
		// svg or pdf keeps (checkOut).
		names := []string{"summary.md"}
		for _, p := range comparePlots {
			name := p + "." + c.figures
			_, err := os.Stat(filepath.Join(stage.Dir(), name))
			if err != nil && !c.claims(p) {
				continue
			}
			names = append(names, name)
			for _, f := range report.PlotFormats {
				if f != c.figures && !evalPlot(*out, p, f) {
					names = append(names, p+"."+f)
				}
			}
		}
		if err := stage.Commit(names...); err != nil {
			return fmt.Errorf("--out %s: %w", *out, err)
		}
		fmt.Fprintf(env.stdout, "wrote %s (plots and summary.md)\n", *out)
		return nil
	}
}

// checkRunDir refuses a --run (given as arg) whose dir does not exist or
// is a file, such as an eval report (usage errors, as a missing path
// flag is), or is a directory without a metrics.jsonl, such as an eval's
// --out: not a training run's directory (one whose metrics.jsonl a
// killed --fresh left in .previous-pending says so: rl.AsidePending).
// One that cannot be opened (permission denied, a link loop) is a usage
// error too, as a path flag's is (statOpenable); a run's file that
// cannot be read is left to rl.ReadRunCurves, which names it.
func checkRunDir(arg, dir string) error {
	st, err := statOpenable(dir)
	if errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return usageError{fmt.Errorf("--run %s: %s does not exist: want a training run's directory (train's --out)", arg, dir)}
	}
	if err != nil {
		return usageError{fmt.Errorf("--run %s: %s: %w: want a training run's directory (train's --out)", arg, dir, err)}
	}
	if !st.IsDir() {
		return usageError{fmt.Errorf("--run %s: %s is a file: want a training run's directory (train's --out, holding %s); an eval report is given as an argument", arg, dir, rl.MetricsFile)}
	}
	if _, err := os.Stat(filepath.Join(dir, rl.MetricsFile)); errors.Is(err, os.ErrNotExist) {
		if why := rl.AsidePending(dir, rl.MetricsFile); why != "" {
			return fmt.Errorf("--run %s: %s holds no %s: %s", arg, dir, rl.MetricsFile, why)
		}
		return fmt.Errorf("--run %s: %s holds no %s: want a training run's directory (train's --out)", arg, dir, rl.MetricsFile)
	}
	return nil
}

// comparePlots names the plots compare --out writes (each with the
// format's extension), as many as it has curves for.
var comparePlots = []string{"passk", "rsa", "sequential", "tokens", "entropy", "search-entropy", "heldout"}

// runPlots are the comparePlots drawn from --run's training runs.
var runPlots = []string{"entropy", "search-entropy", "heldout"}

// claims says whether the comparison replaces plot p of an earlier
// comparison in --out even where it draws no curve of p: a run plot
// where it compares runs, tokens where it compares reports.
func (c *comparison) claims(p string) bool {
	if slices.Contains(runPlots, p) {
		return len(c.runs) > 0
	}
	return p == "tokens" && len(c.passk)+len(c.rsa)+len(c.budget) > 0
}

// givenPaths are the run directories and report files a compare or a
// plot was given, to refuse one given twice.
type givenPaths struct {
	args  []string
	infos []os.FileInfo
	// twice says what one path given twice would do (compare: count
	// twice, as a second seed of its label or as another label).
	twice string
}

// add refuses path (given as arg, a what) when it is a file or directory
// given before, under any spelling. A path that cannot be read is left
// to its reader, which names it.
func (g *givenPaths) add(arg, path, what string) error {
	st, err := os.Stat(path)
	if err != nil {
		return nil
	}
	for i, o := range g.infos {
		if os.SameFile(o, st) {
			return usageError{fmt.Errorf("%s and %s are one %s, given twice: %s", g.args[i], arg, what, g.twice)}
		}
	}
	g.args, g.infos = append(g.args, arg), append(g.infos, st)
	return nil
}

// evalPlot says whether p.format in out is eval's own plot of a report
// there: MODE.png beside MODE.json.
func evalPlot(out, p, format string) bool {
	if format != "png" || !slices.Contains([]report.Mode{report.ModePassAtK, report.ModeRSA, report.ModeSequential}, report.Mode(p)) {
		return false
	}
	_, err := os.Stat(filepath.Join(out, p+".json"))
	return err == nil
}

// checkOut refuses out when it holds an eval report (MODE.json) of a
// mode the comparison plots under the name of eval's own plot of it
// (MODE.png): the overlay would replace that report's plot in silence.
func (c *comparison) checkOut(out string) error {
	if c.figures != "png" {
		return nil
	}
	for _, m := range []struct {
		mode    report.Mode
		reports int
	}{{report.ModePassAtK, len(c.passk)}, {report.ModeRSA, len(c.rsa)}, {report.ModeSequential, len(c.budget)}} {
		rep := filepath.Join(out, string(m.mode)+".json")
		if _, err := os.Stat(rep); m.reports > 0 && err == nil {
			return usageError{fmt.Errorf("--out %s holds the eval report %s, whose plot %s.png the comparison's overlay of %s reports would replace; give another --out (or --figures svg or pdf)", out, rep, m.mode, m.mode)}
		}
	}
	return nil
}

type labelledRun struct {
	label, dir string
	curves     rl.RunCurves
}

// comparison holds the reports and runs of one spiral compare.
type comparison struct {
	passk  []report.PassAtK
	rsa    []report.RSA
	budget []report.Budget
	runs   []labelledRun
	// maxK limits the reference's k in the scaling efficiency (0: none).
	maxK int
	// figures is the plots' format, their file extension: png, svg or pdf.
	figures string
	// sources are the report files read, per mode in the order read, with
	// the problems each was evaluated on.
	sources map[report.Mode][]reportSource
}

// reportSource is a report file, its label, the problems it was
// evaluated on and the points it measured (k, RSA steps or budgets).
type reportSource struct {
	path, label string
	meta        report.Meta // the report's, all it records
	problems    report.ProblemSet
	points      []int
	settings    []evalSetting
	// finalRSA: a training run's final RSA report (finalRSAReport);
	// trained the run settings that the checkpoint it evaluated records,
	// and trainedFrom that checkpoint (rl.EvaluatedSettings; nil where
	// none of its run's does).
	finalRSA    bool
	trained     *rl.RunSettings
	trainedFrom checkpoint.Entry
}

// finalRSAReport says whether the report at path is a training run's
// final RSA report: rl.FinalRSAFile beside the run's rl.MetricsFile, as
// train refuses an evaluation's rsa.json in its --out (refuseEvalReport)
// and eval a run directory's. Its meta's seed is the run's --seed (plus
// the final RSA's offset) and its label the run's --algo.
func finalRSAReport(path string) bool {
	if filepath.Base(path) != rl.FinalRSAFile {
		return false
	}
	_, err := os.Stat(filepath.Join(filepath.Dir(path), rl.MetricsFile))
	return err == nil
}

// evalSetting is one setting of an evaluation that shapes what it
// measures, as its report records it ("" where it records none: a report
// written before it did), with the eval flags that set it.
type evalSetting struct {
	name, flags, value string
}

// evalSettings are the settings m and, for an RSA report, cfg record:
// the sampling settings, the reward rule and the prompt templates of
// meta's extra, and RSA's population, subset size and candidate cap.
func evalSettings(m report.Meta, cfg *rollout.RSAConfig) []evalSetting {
	out := []evalSetting{
		{"temperature", "--temperature", m.Extra["temperature"]},
		{"top-p", "--top-p", m.Extra["top_p"]},
		{"top-k", "--top-k", m.Extra["top_k"]},
		{"max new tokens", "--max-new-tokens", m.Extra["max_new_tokens"]},
		{"reward rule", "--reward-fallback, --reward-truncated", m.Extra["reward_rule"]},
		{"prompt templates", "--search-template, --aggregate-template", m.Extra["templates"]},
	}
	if cfg != nil && cfg.Population > 0 { // a report's config records them all
		out = append(out,
			evalSetting{"RSA population", "--population", strconv.Itoa(cfg.Population)},
			evalSetting{"RSA subset size", "--subset", strconv.Itoa(cfg.SubsetSize)},
			evalSetting{"RSA candidate cap", "--candidate-tokens", strconv.Itoa(cfg.CandidateTokens)})
	}
	return out
}

// settingDifferences lists the settings a and b both record with other
// values, "NAME A and B (eval's FLAGS)" with sep for "and", joined by
// "; ": "" when none differs.
func settingDifferences(a, b []evalSetting, sep string) string {
	quote := func(v string) string {
		if strings.ContainsAny(v, " ;,") {
			return strconv.Quote(v)
		}
		return v
	}
	var diffs []string
	// evalSettings lists them in one order; an RSA report without its
	// config records fewer.
	for i, s := range a[:min(len(a), len(b))] {
		o := b[i]
		if s.value == "" || o.value == "" || s.value == o.value {
			continue
		}
		diffs = append(diffs, fmt.Sprintf("%s %s %s %s (eval's %s)", s.name, quote(s.value), sep, quote(o.value), s.flags))
	}
	return strings.Join(diffs, "; ")
}

func (c *comparison) read(path string) error {
	m, err := reportMode("compare", path)
	if err != nil {
		return err
	}
	src := reportSource{path: path}
	switch m {
	case report.ModePassAtK:
		var r report.PassAtK
		if err := report.ReadJSON(path, &r); err != nil {
			return err
		}
		c.passk = append(c.passk, r)
		src.label, src.meta, src.problems, src.settings = r.Meta.Name(), r.Meta, r.ProblemSet(), evalSettings(r.Meta, nil)
		for _, p := range r.Points {
			src.points = append(src.points, p.K)
		}
	case report.ModeRSA:
		var r report.RSA
		if err := report.ReadJSON(path, &r); err != nil {
			return err
		}
		c.rsa = append(c.rsa, r)
		src.label, src.meta, src.problems, src.settings = r.Meta.Name(), r.Meta, r.ProblemSet(), evalSettings(r.Meta, &r.Config)
		if src.finalRSA = finalRSAReport(path); src.finalRSA {
			if src.trained, src.trainedFrom, err = rl.EvaluatedSettings(filepath.Dir(path), r.Meta.CheckpointDigest); err != nil {
				return fmt.Errorf("%s, a training run's final RSA report: its run's settings: %w", path, err)
			}
		}
		for _, st := range r.Steps {
			src.points = append(src.points, st.Step)
		}
	case report.ModeSequential:
		var r report.Budget
		if err := report.ReadJSON(path, &r); err != nil {
			return err
		}
		c.budget = append(c.budget, r)
		src.label, src.meta, src.problems, src.settings = r.Meta.Name(), r.Meta, r.ProblemSet(), evalSettings(r.Meta, nil)
		for _, p := range r.Points {
			src.points = append(src.points, p.Budget)
		}
	}
	if c.sources == nil {
		c.sources = map[report.Mode][]reportSource{}
	}
	c.sources[m] = append(c.sources[m], src)
	return nil
}

// checkSeeds refuses a label's reports (seeds, averaged point by point)
// that measured other points than its first: other k, RSA steps or
// budgets, or that were evaluated with other settings (evalSettings),
// naming both files; reports of a label eval gave by default that
// evaluated other checkpoints or models (otherModels), and training runs'
// final RSA reports of one label and seed (runsOfOneSeed), or of one
// label whose checkpoints were trained otherwise (runsTrainedOtherwise);
// and a --run label's runs that logged other training steps than its
// first, or held out evaluations at other steps (of those that logged
// any), or whose newest checkpoints record other training settings than
// the seed (rl.SeedSettingsDiff; of those that kept one), naming both
// directories.
func (c *comparison) checkSeeds() error {
	if err := c.otherModels(); err != nil {
		return err
	}
	if err := c.runsOfOneSeed(); err != nil {
		return err
	}
	if err := c.runsTrainedOtherwise(); err != nil {
		return err
	}
	for _, g := range report.Group(c.runs, func(r labelledRun) string { return r.label }) {
		var held, set *labelledRun
		for i, r := range g {
			if !slices.Equal(r.curves.Steps, g[0].curves.Steps) {
				return fmt.Errorf("run %s: seeds %s and %s log different training steps (%d and %d steps)",
					r.label, g[0].dir, r.dir, len(g[0].curves.Steps), len(r.curves.Steps))
			}
			if r.curves.Settings != nil {
				if set == nil {
					set = &g[i]
				} else if d := rl.SeedSettingsDiff(*set.curves.Settings, *r.curves.Settings); len(d) > 0 {
					return fmt.Errorf("run %s: seeds %s and %s were trained with other settings (%s against %s): %s: train a label's seeds alike, or give them other labels",
						r.label, set.dir, r.dir, filepath.Join(set.curves.SettingsFrom, checkpoint.StateFile), filepath.Join(r.curves.SettingsFrom, checkpoint.StateFile), strings.Join(d, "; "))
				}
			}
			if len(r.curves.HeldOut.Keys) == 0 {
				continue
			}
			if held == nil {
				held = &g[i]
			} else if !slices.Equal(r.curves.HeldOut.Keys, held.curves.HeldOut.Keys) {
				return fmt.Errorf("run %s: seeds %s and %s log held-out evaluations at different steps (%v and %v; %s)",
					r.label, held.dir, r.dir, held.curves.HeldOut.Keys, r.curves.HeldOut.Keys, rl.EvalFile)
			}
		}
	}
	for _, m := range []struct {
		mode       report.Mode
		what, flag string
	}{{report.ModePassAtK, "pass@k at k", "--samples"}, {report.ModeRSA, "RSA steps", "--rsa-steps"}, {report.ModeSequential, "sequential accuracy at budgets", "--max-new-tokens"}} {
		first := map[string]reportSource{}
		for _, s := range c.sources[m.mode] {
			f, ok := first[s.label]
			if !ok {
				first[s.label] = s
				continue
			}
			if !slices.Equal(s.points, f.points) {
				return fmt.Errorf("%s and %s, seeds of label %s (averaged point by point), measure %s %v and %v (eval's %s): evaluate a label's seeds alike, or give them other --label",
					f.path, s.path, s.label, m.what, f.points, s.points, m.flag)
			}
			if d := settingDifferences(f.settings, s.settings, "and"); d != "" {
				return fmt.Errorf("%s and %s, seeds of label %s (averaged point by point), were evaluated with other settings: %s: evaluate a label's seeds alike, or give them other --label",
					f.path, s.path, s.label, d)
			}
		}
	}
	return nil
}

// otherModels refuses reports of one label that eval gave them by
// default (meta.label unset: the model as given, with its checkpoint's
// run directory and name) and that record other checkpoints
// (meta.checkpoint_digest) or other models (meta.model_digest), in any
// mode, naming both files: checkpoints of two runs in directories of one
// name (the default --out runs/spiral in two working directories), or
// two models so (sft's runs/sft), which compare would take for one
// model, its reports of a mode averaged as seeds. A label given on
// purpose groups what it names; reports written before these were
// recorded are not checked.
func (c *comparison) otherModels() error {
	const fix = "which compare would take for one model, its reports of a mode averaged as seeds: give their evaluations --label, one each to compare them, or one for both to average them as seeds (or set meta.label in the reports)"
	seen := map[string][]reportSource{}
	for _, m := range []report.Mode{report.ModePassAtK, report.ModeRSA, report.ModeSequential} {
		for _, s := range c.sources[m] {
			if s.meta.Label != "" {
				continue
			}
			for _, f := range seen[s.label] {
				if d, e := f.meta.CheckpointDigest, s.meta.CheckpointDigest; d != "" && e != "" && d != e {
					return fmt.Errorf("%s and %s share the label %s, eval's default (the model with its checkpoint's run directory and name), but evaluated different checkpoints (checkpoint_digest %s and %s; of runs in directories of one name?), %s",
						f.path, s.path, s.label, d, e, fix)
				}
				if d, e := f.meta.ModelDigest, s.meta.ModelDigest; d != "" && e != "" && d != e {
					return fmt.Errorf("%s and %s share the label %s, eval's default (the model as given), but evaluated different models (ids %.12s and %.12s; models in directories of one name?), %s",
						f.path, s.path, s.label, d, e, fix)
				}
			}
			seen[s.label] = append(seen[s.label], s)
		}
	}
	return nil
}

// runsOfOneSeed refuses training runs' final RSA reports (rsa.json,
// labelled by the run's --algo, so that compare averages one algorithm's
// runs as seeds) of one label that record one seed, the runs' --seed
// (their meta.seed less rl.FinalRSASeedOffset), naming both files: with
// other checkpoints, runs of one --seed with other settings (another
// --lr, say), and with the same, one run trained twice (or copied),
// which are not two seeds. Reports that
// record no checkpoint_digest (of versions before it) are not checked.
func (c *comparison) runsOfOneSeed() error {
	seen := map[string][]reportSource{}
	for _, s := range c.sources[report.ModeRSA] {
		if !s.finalRSA || s.meta.CheckpointDigest == "" {
			continue
		}
		for _, f := range seen[s.label] {
			if f.meta.Seed != s.meta.Seed {
				continue
			}
			if f.meta.CheckpointDigest == s.meta.CheckpointDigest {
				return fmt.Errorf("%s and %s, final RSA reports of training runs that share the label %s (their --algo) and the --seed %d (meta.seed %d), evaluated one checkpoint (checkpoint_digest %s): one run trained twice (or copied), which compare would average as two seeds: leave one out, or train one again with another --seed",
					f.path, s.path, s.label, s.meta.Seed-rl.FinalRSASeedOffset, s.meta.Seed, s.meta.CheckpointDigest)
			}
			return fmt.Errorf("%s and %s, final RSA reports of training runs that share the label %s (their --algo) and the --seed %d (meta.seed %d), evaluated other checkpoints (checkpoint_digest %s and %s): runs of one --seed (of other settings, or one run trained twice), which compare would average as two seeds: compare runs of other --seed as seeds, or leave one out (or set meta.label in one to compare them)",
				f.path, s.path, s.label, s.meta.Seed-rl.FinalRSASeedOffset, s.meta.Seed, f.meta.CheckpointDigest, s.meta.CheckpointDigest)
		}
		seen[s.label] = append(seen[s.label], s)
	}
	return nil
}

// runsTrainedOtherwise refuses training runs' final RSA reports of one
// label (their --algo's) whose evaluated checkpoints record other
// training settings than the seed (rl.SeedSettingsDiff) or another step,
// naming both reports and checkpoints, as --run refuses a label's runs
// trained otherwise: runs of another --lr or --steps, say, which compare
// would average as seeds of one training. Reports whose run keeps no
// checkpoint of their checkpoint_digest (copied out of their run, or of
// versions before it was recorded) are not checked.
func (c *comparison) runsTrainedOtherwise() error {
	first := map[string]reportSource{}
	for _, s := range c.sources[report.ModeRSA] {
		if s.trained == nil {
			continue
		}
		f, ok := first[s.label]
		if !ok {
			first[s.label] = s
			continue
		}
		var d []string
		if f.trainedFrom.Step != s.trainedFrom.Step {
			d = append(d, fmt.Sprintf("step (--steps): %d -> %d", f.trainedFrom.Step, s.trainedFrom.Step))
		}
		if d = append(d, rl.SeedSettingsDiff(*f.trained, *s.trained)...); len(d) > 0 {
			return fmt.Errorf("label %s: seeds %s and %s, final RSA reports of training runs (labelled by their --algo), were trained with other settings (%s against %s): %s: train a label's seeds alike, or leave one out (or set meta.label in one to compare them)",
				s.label, f.path, s.path, filepath.Join(f.trainedFrom.Path, checkpoint.StateFile), filepath.Join(s.trainedFrom.Path, checkpoint.StateFile), strings.Join(d, "; "))
		}
	}
	return nil
}

// problemDifferences lists, one indented line each, the reports evaluated
// on other problems than their mode's first report (the reference of its
// comparisons): "" when every report of a mode records the same dataset,
// problem count and problem ids as far as both record them.
func (c *comparison) problemDifferences() string {
	var lines []string
	for _, m := range []report.Mode{report.ModePassAtK, report.ModeRSA, report.ModeSequential} {
		srcs := c.sources[m]
		for _, s := range srcs[min(1, len(srcs)):] {
			if d := s.problems.Difference(srcs[0].problems); d != "" {
				lines = append(lines, fmt.Sprintf("  %s against %s (%s reports): %s", s.path, srcs[0].path, m, d))
			}
		}
	}
	// The runs' held-out evaluations during training, averaged per label
	// and drawn on one axis: each run's must be the first's.
	var first *labelledRun
	for i, r := range c.runs {
		if len(r.curves.HeldOutSets) == 0 {
			continue
		}
		if first == nil {
			first = &c.runs[i]
		}
		if !slices.Equal(r.curves.HeldOutSets, first.curves.HeldOutSets) {
			lines = append(lines, fmt.Sprintf("  --run %s=%s against --run %s=%s (held-out evaluations during training): %s against %s",
				r.label, r.dir, first.label, first.dir, strings.Join(r.curves.HeldOutSets, ", then "), strings.Join(first.curves.HeldOutSets, ", then ")))
		} else if d, d0 := r.curves.HeldOutDigests, first.curves.HeldOutDigests; len(d) > 0 && len(d0) > 0 && !slices.Equal(d, d0) {
			// The same counts of other problems (another --eval-data):
			// eval.jsonl's fingerprints of their texts and answers differ.
			lines = append(lines, fmt.Sprintf("  --run %s=%s against --run %s=%s (held-out evaluations during training): problems %s against %s (eval.jsonl's problems_digest)",
				r.label, r.dir, first.label, first.dir, strings.Join(d, ", then "), strings.Join(d0, ", then ")))
		}
	}
	return strings.Join(lines, "\n")
}

// modeDifferences lists, one indented line each, the reports of another
// mode than the comparison's first (in the order pass@k, RSA,
// sequential) evaluated on other problems than its first report, of
// their label or another, as ProblemSet.Difference tells them: "" when
// none was. summary.md's rows and tokens.png's curves set every label's
// modes side by side; within a mode, problemDifferences checks them.
func (c *comparison) modeDifferences() string {
	var lines []string
	var ref *reportSource
	var refMode report.Mode
	for _, m := range []report.Mode{report.ModePassAtK, report.ModeRSA, report.ModeSequential} {
		for i, s := range c.sources[m] {
			if ref == nil {
				ref, refMode = &c.sources[m][i], m
				continue
			}
			if m == refMode {
				continue // within the first mode: problemDifferences
			}
			if d := s.problems.Difference(ref.problems); d != "" {
				lines = append(lines, fmt.Sprintf("  %s against %s (label %s's %s report against label %s's %s report): %s", s.path, ref.path, s.label, m, ref.label, refMode, d))
			}
		}
	}
	return strings.Join(lines, "\n")
}

// settingDifferences lists, one indented line each, the reports of
// another label than their mode's first report (the reference of its
// comparisons) evaluated with other settings than it (evalSettings): ""
// when none was. A label's seeds were evaluated alike (checkSeeds).
func (c *comparison) settingDifferences() string {
	var lines []string
	for _, m := range []report.Mode{report.ModePassAtK, report.ModeRSA, report.ModeSequential} {
		srcs := c.sources[m]
		for _, s := range srcs[min(1, len(srcs)):] {
			if s.label == srcs[0].label {
				continue
			}
			if d := settingDifferences(s.settings, srcs[0].settings, "against"); d != "" {
				lines = append(lines, fmt.Sprintf("  %s against %s (%s reports): %s", s.path, srcs[0].path, m, d))
			}
		}
	}
	return strings.Join(lines, "\n")
}

// candidateCapDifferences lists, one indented line each, the RSA reports
// that cut candidates (--candidate-tokens above 0, or prompts fitted to
// the model's context: report.RSA.CutsCandidates) and record what the
// cut counts (meta.extra's report.CandidateCapKey) otherwise than the
// first such report, or not at all where it does (an older report, whose
// cut counted a stopped candidate's closing <|im_end|> too), or the other
// way round: "" when none differs. Their candidate_tokens alike, they are
// not of one setting, which settingDifferences cannot tell.
func (c *comparison) candidateCapDifferences() string {
	counts := func(r report.RSA) string {
		if v := r.Meta.Extra[report.CandidateCapKey]; v != "" {
			return fmt.Sprintf("%s %q", report.CandidateCapKey, v)
		}
		return "no " + report.CandidateCapKey
	}
	var lines []string
	first := -1
	for i, r := range c.rsa {
		if !r.CutsCandidates() {
			continue
		}
		if first < 0 {
			first = i
			continue
		}
		if ref := c.rsa[first]; counts(r) != counts(ref) {
			lines = append(lines, fmt.Sprintf("  %s (%s) and %s (%s)", c.sources[report.ModeRSA][first].path, counts(ref), c.sources[report.ModeRSA][i].path, counts(r)))
		}
	}
	return strings.Join(lines, "\n")
}

// repeatedSeeds lists, one indented line each, the pairs of reports of
// one label and mode that record one model (and the same checkpoint
// and model id, where both record them: checkpoints of two runs
// in directories of one name share a model's name, as models do), one
// seed, the same problems and the same settings (evalSettings and all of
// meta's extra, each alike, some recorded): one evaluation run twice
// (into two --out folders, say), which averaged as two seeds counts
// twice in the label's mean, range and bootstrap. "" when none.
func (c *comparison) repeatedSeeds() string {
	same := func(a, b reportSource) bool {
		otherDigest := a.meta.CheckpointDigest != "" && b.meta.CheckpointDigest != "" && a.meta.CheckpointDigest != b.meta.CheckpointDigest ||
			a.meta.ModelDigest != "" && b.meta.ModelDigest != "" && a.meta.ModelDigest != b.meta.ModelDigest
		if a.label != b.label || a.meta.Model != b.meta.Model || otherDigest || a.meta.Seed != b.meta.Seed || len(a.settings) != len(b.settings) ||
			!maps.Equal(a.meta.Extra, b.meta.Extra) || a.problems.Difference(b.problems) != "" || b.problems.Difference(a.problems) != "" {
			return false
		}
		recorded := len(a.meta.Extra) > 0
		for i, s := range a.settings {
			if s.value != b.settings[i].value {
				return false
			}
			recorded = recorded || s.value != ""
		}
		return recorded
	}
	var lines []string
	for _, m := range []report.Mode{report.ModePassAtK, report.ModeRSA, report.ModeSequential} {
		srcs := c.sources[m]
		for i, a := range srcs {
			for _, b := range srcs[i+1:] {
				if same(a, b) {
					lines = append(lines, fmt.Sprintf("  %s and %s (label %s, %s reports): model %s, seed %d", a.path, b.path, a.label, m, a.meta.Model, a.meta.Seed))
				}
			}
		}
	}
	return strings.Join(lines, "\n")
}

// seeds averages each label's reports (seeds) with mean.
func seeds[R any](reps []R, name func(R) string, mean func([]R) (report.Seeds, error)) ([]report.Seeds, error) {
	var out []report.Seeds
	for _, g := range report.Group(reps, name) {
		s, err := mean(g)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// report prints the comparison's tables and, with dir, writes the plots
// and summary.md there.
func (c *comparison) report(w io.Writer, dir string) error {
	passk, err := seeds(c.passk, func(r report.PassAtK) string { return r.Meta.Name() }, report.MeanPassAtK)
	if err != nil {
		return err
	}
	rsa, err := seeds(c.rsa, func(r report.RSA) string { return r.Meta.Name() }, report.MeanRSA)
	if err != nil {
		return err
	}
	budget, err := seeds(c.budget, func(r report.Budget) string { return r.Meta.Name() }, report.MeanBudget)
	if err != nil {
		return err
	}
	sum := newSummary()
	plot := func(name string, f report.Figure, curves []report.Seeds) error {
		if dir == "" || len(curves) == 0 {
			return nil
		}
		return report.PlotSeeds(filepath.Join(dir, name+"."+c.figures), report.PlotSize{}, f, curves...)
	}

	if len(passk) > 0 {
		if err := c.comparePassAtK(w, passk, sum); err != nil {
			return err
		}
		if err := plot("passk", report.PassAtKFigure(), passk); err != nil {
			return err
		}
	}
	if len(rsa) > 0 {
		if err := compareRSA(w, rsa, sum); err != nil {
			return err
		}
		if err := plot("rsa", report.Figure{Title: "Recursive self-aggregation", XLabel: "RSA step", Axis: report.AxisSteps, Name: "accuracy", Name2: "majority"}, rsa); err != nil {
			return err
		}
	}
	if len(budget) > 0 {
		// Each label's largest budget, as pass@k's and RSA's headline
		// figures, in the order of the budgets; every label's accuracy
		// at each of those budgets that it measured.
		var budgets []int
		for _, g := range budget {
			budgets = append(budgets, int(g.X[len(g.X)-1]))
		}
		for _, b := range sortedInts(budgets) {
			sum.column(fmt.Sprintf("sequential at budget %d", b))
		}
		for _, g := range budget {
			sum.seeds(g.Label, "sequential", g.N)
			for j, x := range g.X {
				if slices.Contains(budgets, int(x)) {
					sum.set(g.Label, fmt.Sprintf("sequential at budget %d", int(x)), g.Y[j].String())
				}
			}
		}
		if err := plot("sequential", report.Figure{Title: "Sequential scaling", XLabel: "token budget", Axis: report.AxisLog2, Name: "accuracy"}, budget); err != nil {
			return err
		}
	}
	tokens, leftOut, err := c.tokenCurves()
	if err != nil {
		return err
	}
	switch {
	case len(budget) == 1:
		fmt.Fprintf(w, "sequential: only %s; nothing to compare\n\n", budget[0].Label)
	case len(budget) > 1:
		if err := c.compareBudget(w, tokens); err != nil {
			return err
		}
	}
	if dir != "" {
		for _, l := range leftOut {
			fmt.Fprintf(w, "tokens.%s: %s\n", c.figures, l)
		}
	}
	if err := plot("tokens", report.Figure{Title: "Accuracy against generated tokens per problem", XLabel: "generated tokens per problem", Axis: report.AxisLog}, tokens); err != nil {
		return err
	}
	entropy, searchEntropy, held, err := c.runCurves(w, sum)
	if err != nil {
		return err
	}
	if err := plot("entropy", report.Figure{Title: "Token entropy over training", XLabel: "step", YLabel: "nats", Axis: report.AxisSteps}, entropy); err != nil {
		return err
	}
	if err := plot("search-entropy", report.Figure{Title: "Search traces' token entropy over training", XLabel: "step", YLabel: "nats", Axis: report.AxisSteps}, searchEntropy); err != nil {
		return err
	}
	if err := plot("heldout", report.Figure{Title: "Held-out pass@1 over training", XLabel: "step", Axis: report.AxisSteps}, held); err != nil {
		return err
	}
	if dir == "" {
		return nil
	}
	if err := atomicfile.WriteFile(filepath.Join(dir, "summary.md"), []byte(sum.markdown()), 0o666); err != nil {
		return fmt.Errorf("--out %s: %w", dir, err)
	}
	return nil
}

// tokenCurves is every label's accuracy against generated tokens per
// problem: sequential, majority@k and RSA on one axis; and leftOut, a
// line for each label's pass@k or RSA reports that record no generated
// tokens, which report.TokenCurves leaves out of its majority@k or RSA
// curve (compareBudget names the sequential ones).
func (c *comparison) tokenCurves() (curves []report.Seeds, leftOut []string, err error) {
	var labels []string
	seen := map[string]bool{}
	add := func(n string) {
		if !seen[n] {
			seen[n] = true
			labels = append(labels, n)
		}
	}
	for _, r := range c.budget {
		add(r.Meta.Name())
	}
	for _, r := range c.passk {
		add(r.Meta.Name())
	}
	for _, r := range c.rsa {
		add(r.Meta.Name())
	}
	for li, l := range labels {
		var p []report.PassAtK
		var r []report.RSA
		var b []report.Budget
		for _, x := range c.passk {
			if x.Meta.Name() == l {
				p = append(p, x)
			}
		}
		for _, x := range c.rsa {
			if x.Meta.Name() == l {
				r = append(r, x)
			}
		}
		for _, x := range c.budget {
			if x.Meta.Name() == l {
				b = append(b, x)
			}
		}
		for _, m := range []struct {
			what, curve string
			n, all      int
		}{
			{"pass@k", "majority@k", len(slices.DeleteFunc(slices.Clone(p), report.PassAtK.RecordsTokens)), len(p)},
			{"RSA", "RSA", len(slices.DeleteFunc(slices.Clone(r), report.RSA.RecordsTokens)), len(r)},
		} {
			if m.n == 0 {
				continue
			}
			line := fmt.Sprintf("%s: %d of its %d %s reports record no generated tokens: left out of its %s curve", l, m.n, m.all, m.what, m.curve)
			if m.n == m.all {
				line += " (none drawn)"
			}
			leftOut = append(leftOut, line)
		}
		cs, err := report.TokenCurves(l, p, r, b)
		if err != nil {
			return nil, nil, err
		}
		// One colour per model; majority@k dashed, sequential and RSA
		// solid (they lie in different token ranges), RSA's points
		// triangles so that the legend tells it from sequential.
		for i := range cs {
			cs[i].Style = &report.Style{Colour: li, Dashed: strings.HasSuffix(cs[i].Label, " majority@k"), Triangles: strings.HasSuffix(cs[i].Label, " RSA")}
		}
		curves = append(curves, cs...)
	}
	return curves, leftOut, nil
}

// comparePassAtK prints, for each other label, how many times more
// samples its mean curve needs to reach the reference's mean pass@k, with
// a bootstrap interval over problems and seeds where every report of the
// two labels has its per-problem counts.
func (c *comparison) comparePassAtK(w io.Writer, groups []report.Seeds, sum *summary) error {
	ref := groups[0]
	lasts := make([]int, len(groups))
	var ks []int
	majority := map[int]bool{}
	for i, g := range groups {
		last := len(g.X) - 1
		for last > 0 && c.maxK > 0 && int(g.X[last]) > c.maxK {
			last-- // the summary's largest k is the comparison's
		}
		lasts[i] = last
		ks = append(ks, int(g.X[0]), int(g.X[last]))
		majority[int(g.X[last])] = int(g.X[last]) > 1
	}
	// The columns in the order of k, whichever label brought them.
	for _, k := range sortedInts(ks) {
		sum.column(fmt.Sprintf("pass@%d", k))
		if majority[k] {
			sum.column(fmt.Sprintf("majority@%d", k))
		}
	}
	// Each label's figures in every column whose k it measured, not only
	// the columns it brought.
	for i, g := range groups {
		sum.seeds(g.Label, "pass@k", g.N)
		for j, x := range g.X[:lasts[i]+1] {
			k := int(x)
			if !slices.Contains(ks, k) {
				continue
			}
			sum.set(g.Label, fmt.Sprintf("pass@%d", k), g.Y[j].String())
			// No majority@1 (--samples 1, or --max-k 1): the vote of one
			// sample is that sample, its pass@1 in a column of its own.
			if majority[k] {
				sum.set(g.Label, fmt.Sprintf("majority@%d", k), g.Y2[j].String())
			}
		}
	}
	if len(groups) == 1 {
		fmt.Fprintf(w, "pass@k: only %s; nothing to compare\n\n", ref.Label)
		return nil
	}
	reports := report.Group(c.passk, func(r report.PassAtK) string { return r.Meta.Name() })
	refCurve, refReports, err := c.upToMaxK(ref.PassAtK(), reports[0])
	if err != nil {
		return err
	}
	within := ""
	if c.maxK > 0 {
		within = fmt.Sprintf(" at k <= %d", c.maxK)
	}
	boot := report.DefaultBootstrap()
	for gi, o := range groups[1:] {
		eff, err := report.PassAtKEfficiency(refCurve, o.PassAtK())
		if err != nil {
			return err
		}
		intervals, ivErr := report.EfficiencyIntervals(refReports, reports[gi+1], boot)
		fmt.Fprintf(w, "pass@k: samples %s needs to reach %s's pass@k%s (means over seeds, n = %d and %d)\n", o.Label, ref.Label, within, o.N, ref.N)
		header := fmt.Sprintf("  %6s  %8s  %10s  %s", "k", "target", "other k", "ratio")
		if ivErr == nil {
			over := "problems and seeds"
			if o.N == 1 && ref.N == 1 {
				// Nothing to resample but the problems: the interval
				// holds no seed's noise.
				over = "problems alone: one seed of each"
			}
			header += fmt.Sprintf("  (%.0f%% interval over %s)", 100*boot.Level, over)
		}
		fmt.Fprintln(w, header)
		for j, p := range eff.Points {
			bound := ""
			if p.Bound != report.Exact {
				bound = " (" + string(p.Bound) + ")"
			}
			line := fmt.Sprintf("  %6d  %8.4f  %10.2f  %.2fx%s", p.K, p.Target, p.OtherK, p.Ratio, bound)
			if ivErr == nil {
				line += "  " + intervalText(intervals[j])
			}
			fmt.Fprintln(w, line)
		}
		col := fmt.Sprintf("efficiency of %s over it", ref.Label)
		var cells []string
		if eff.Max > 0 {
			cell := fmt.Sprintf("up to %.2fx (k = %d", eff.Max, eff.MaxK)
			if ivErr == nil {
				// The interval of the ratio at the maximum's k, not one of
				// the maximum over k (which each draw could take at
				// another k): the wording names the k.
				for _, iv := range intervals {
					if iv.K == eff.MaxK {
						cell += fmt.Sprintf("; %.0f%% interval at k = %d: %s", 100*boot.Level, iv.K, intervalText(iv))
					}
				}
			}
			cells = append(cells, cell+")")
		} else {
			fmt.Fprintf(w, "  %s\n", noExactRatio(ref.Label, o.Label, eff))
		}
		if eff.Floor > 0 {
			// A lower bound above every exact ratio: the maximum is at
			// least it, which "up to" the exact one alone would deny.
			cells = append(cells, fmt.Sprintf("at least %.2fx at k = %d (%s never reaches %s's pass@%d within its measured k)", eff.Floor, eff.FloorK, o.Label, ref.Label, eff.FloorK))
		}
		if eff.Ceiling > 0 {
			// An upper bound above every exact ratio: the ratio there is
			// anything up to it, which "up to" the exact one alone, or a
			// measured 1.00x, would hide.
			first := int(o.X[0])
			cells = append(cells, fmt.Sprintf("at most %.2fx at k = %d (%s is above %s's pass@%d already at its smallest k, %d)", eff.Ceiling, eff.CeilingK, o.Label, ref.Label, eff.CeilingK, first))
		}
		if len(cells) > 0 {
			cell := strings.Join(cells, "; ")
			fmt.Fprintf(w, "  scaling efficiency of %s over %s: %s\n", ref.Label, o.Label, cell)
			sum.set(o.Label, col, cell)
		} else {
			sum.set(o.Label, col, "-")
		}
		if ivErr != nil {
			fmt.Fprintf(w, "  no interval: %v", ivErr)
			// A label's seeds share its name: say which files.
			if files := c.intervalFiles(ivErr, ref.Label, o.Label); files != "" {
				fmt.Fprintf(w, ": %s", files)
			}
			fmt.Fprintln(w)
		}
		fmt.Fprintln(w)
	}
	return nil
}

// intervalFiles names the pass@k report files of the reference's label
// ref and the other label that err, report.EfficiencyIntervals' error
// for them, is about: every file of the two without per-problem counts
// (PassAtK.PerProblem), which the bootstrap needs; else the report's,
// with the reference's first where their problems differ; "" where err
// is about no one report.
func (c *comparison) intervalFiles(err error, ref, other string) string {
	var re *report.IntervalReportError
	if !errors.As(err, &re) {
		return ""
	}
	var files, refFiles, otherFiles []string
	for i, src := range c.sources[report.ModePassAtK] { // read with c.passk, in its order
		switch src.label {
		case ref:
			refFiles = append(refFiles, src.path)
		case other:
			otherFiles = append(otherFiles, src.path)
		default:
			continue
		}
		if len(c.passk[i].PerProblem) == 0 {
			files = append(files, src.path)
		}
	}
	if errors.Is(err, report.ErrNoPerProblem) {
		return strings.Join(files, ", ")
	}
	label := refFiles
	if re.Other {
		label = otherFiles
	}
	if re.Index >= len(label) {
		return "" // not expected: the reports are the labels' files'
	}
	if re.AgainstReference {
		return fmt.Sprintf("%s (the reference's first report: %s)", label[re.Index], refFiles[0])
	}
	return label[re.Index]
}

// noExactRatio says why an efficiency has no exact ratio to give a
// maximum of: other never reaches ref's pass@k within its measured k
// (every ratio a lower bound), or is above it already at its smallest k
// (an upper bound: level with it there is an exact ratio; at a target of
// 0, where ref solved nothing, no sample at all is needed, so there is
// nothing to measure), or some of each.
func noExactRatio(ref, other string, eff report.Efficiency) string {
	var atLeast, atMost, zero int
	for _, p := range eff.Points {
		switch p.Bound {
		case report.AtLeast:
			atLeast++
		case report.AtMost:
			atMost++
			if p.Target == 0 {
				zero++
			}
		}
	}
	switch {
	case atMost == 0:
		return fmt.Sprintf("no k where %s reaches %s's pass@k within its measured k", other, ref)
	case atLeast == 0 && zero == len(eff.Points):
		return fmt.Sprintf("no ratio to measure: %s's pass@k is 0 at every k (it solved nothing), which %s reaches with no sample at all", ref, other)
	case atLeast == 0 && zero > 0:
		return fmt.Sprintf("no exact ratio: %s is above %s's pass@k already at its smallest k at %d k (each ratio an upper bound), and %s's pass@k is 0 at the other %d (nothing to measure)", other, ref, atMost-zero, ref, zero)
	case atLeast == 0:
		return fmt.Sprintf("no exact ratio: %s is above %s's pass@k already at its smallest k (each ratio an upper bound)", other, ref)
	}
	return fmt.Sprintf("no exact ratio: %s never reaches %s's pass@k within its measured k at %d k, and is above it already at its smallest k at %d", other, ref, atLeast, atMost)
}

// upToMaxK limits the reference's mean curve and its seeds' reports to
// k <= c.maxK (unchanged when c.maxK is 0).
func (c *comparison) upToMaxK(curve report.PassAtK, reps []report.PassAtK) (report.PassAtK, []report.PassAtK, error) {
	if c.maxK == 0 {
		return curve, reps, nil
	}
	curve, err := curve.UpToK(c.maxK)
	if err != nil {
		return report.PassAtK{}, nil, fmt.Errorf("--max-k: %w", err)
	}
	out := make([]report.PassAtK, len(reps))
	for i, r := range reps {
		if out[i], err = r.UpToK(c.maxK); err != nil {
			return report.PassAtK{}, nil, fmt.Errorf("--max-k: %w", err)
		}
	}
	return curve, out, nil
}

// intervalText writes a ratio interval, marking an end that is a bound.
func intervalText(iv report.RatioInterval) string {
	mark := func(atMost, atLeast bool) string {
		switch {
		case atMost:
			return "<="
		case atLeast:
			return ">="
		}
		return ""
	}
	return fmt.Sprintf("%s%.2f to %s%.2fx", mark(iv.LoAtMost, iv.LoAtLeast), iv.Lo, mark(iv.HiAtMost, iv.HiAtLeast), iv.Hi)
}

// compareRSA prints each label's mean accuracy per step with its gain
// over its step 0 and over the reference.
func compareRSA(w io.Writer, groups []report.Seeds, sum *summary) error {
	ref := groups[0].RSA()
	// Each label's step 0, step 4 and last step, in the order of the
	// steps, whichever label brought them; every label's accuracy in each
	// of those columns that it measured.
	steps := []int{0}
	for _, g := range groups {
		for j, x := range g.X {
			if rsaSummaryStep(g, j) {
				steps = append(steps, int(x))
			}
		}
	}
	for _, s := range sortedInts(steps) {
		sum.column(fmt.Sprintf("RSA step %d", s))
	}
	fmt.Fprintf(w, "RSA: accuracy per step, mean over seeds (gain over step 0; over %s)\n", groups[0].Label)
	for i, g := range groups {
		gains, err := report.RSAGains(ref, g.RSA())
		if err != nil {
			return fmt.Errorf("%s: %w", g.Label, err)
		}
		var cells []string
		for _, s := range gains {
			c := fmt.Sprintf("%d: %.3f (%+.3f", s.Step, s.Accuracy, s.OverStep0)
			if i > 0 && !math.IsNaN(s.OverRef) {
				c += fmt.Sprintf("; %+.3f", s.OverRef)
			}
			cells = append(cells, c+")")
		}
		fmt.Fprintf(w, "  %s (n = %d): %s\n", g.Label, g.N, strings.Join(cells, ", "))
		sum.seeds(g.Label, "RSA", g.N)
		for j, x := range g.X {
			if slices.Contains(steps, int(x)) {
				sum.set(g.Label, fmt.Sprintf("RSA step %d", int(x)), g.Y[j].String())
			}
		}
	}
	fmt.Fprintln(w)
	return nil
}

// rsaSummaryStep says whether g's j-th step has a column in summary.md
// besides step 0: step 4 and its last.
func rsaSummaryStep(g report.Seeds, j int) bool {
	return int(g.X[j]) == 4 || j == len(g.X)-1
}

// compareBudget prints the first label's sequential accuracy over each
// other's at equal tokens per trace, each a mean over the label's seeds
// that record tokens per trace (their count named). A label's reports
// that record no tokens per trace (a mean_tokens of 0:
// report.TokenCurves leaves them out) are named as left out; where none
// of the reference's is left, there is no comparison.
func (c *comparison) compareBudget(w io.Writer, tokens []report.Seeds) error {
	curves := map[string]report.Seeds{}
	for _, s := range tokens {
		if l, ok := strings.CutSuffix(s.Label, " sequential"); ok {
			curves[l] = s
		}
	}
	var seq []report.Seeds
	groups := report.Group(c.budget, func(r report.Budget) string { return r.Meta.Name() })
	for _, g := range groups {
		label := g[0].Meta.Name()
		s, ok := curves[label]
		if n := len(g) - s.N; n > 0 {
			fmt.Fprintf(w, "sequential at equal tokens: %s: %d of its %d reports record no tokens per trace (mean_tokens 0 at some budget): left out\n", label, n, len(g))
		}
		if ok {
			seq = append(seq, s)
		}
	}
	if _, ok := curves[groups[0][0].Meta.Name()]; !ok {
		fmt.Fprintf(w, "sequential at equal tokens: no comparison: the reference, %s, has no curve against tokens\n\n", groups[0][0].Meta.Name())
		return nil
	}
	if len(seq) < 2 {
		fmt.Fprintln(w)
		return nil
	}
	ref := seq[0]
	for _, o := range seq[1:] {
		g, err := report.BudgetGains(c.seqBudget(ref), c.seqBudget(o))
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "%s over %s at equal tokens per trace (means over seeds, n = %d and %d)\n", ref.Label, o.Label, ref.N, o.N)
		fmt.Fprintf(w, "  %10s  %8s  %8s  %s\n", "tokens", "ref", "other", "gain")
		held := false
		for _, p := range g {
			if math.IsNaN(p.Other) {
				fmt.Fprintf(w, "  %10.1f  %8.4f  %8s  -\n", p.Tokens, p.Accuracy, "-")
				continue
			}
			held = held || p.Held
			fmt.Fprintf(w, "  %10.1f  %8.4f  %8.4f  %+.4f\n", p.Tokens, p.Accuracy, p.Other, p.Gain)
		}
		if held {
			fmt.Fprintf(w, "  (past %.1f tokens, %s's accuracy is that of its largest budget: none of its traces was cut there)\n", o.X[len(o.X)-1], o.Label)
		}
		fmt.Fprintln(w)
	}
	return nil
}

// seqBudget is a label's mean sequential curve against tokens (s, from
// tokenCurves) as a budget curve for report.BudgetGains, each point's
// truncated fraction the largest of the label's seeds' at its budget (a
// curve holds its accuracy past its largest budget only where no seed
// cut a trace there).
func (c *comparison) seqBudget(s report.Seeds) report.Budget {
	b := s.Budget()
	label := strings.TrimSuffix(s.Label, " sequential")
	for _, r := range c.budget {
		if r.Meta.Name() != label {
			continue
		}
		for i, p := range r.Points[:min(len(r.Points), len(b.Points))] {
			b.Points[i].Truncated = max(b.Points[i].Truncated, p.Truncated)
		}
	}
	return b
}

// runCurves averages the runs' entropy (of all trained tokens and of
// the search traces') and held-out curves per label and prints their
// ends.
func (c *comparison) runCurves(w io.Writer, sum *summary) (entropy, searchEntropy, held []report.Seeds, err error) {
	for _, g := range report.Group(c.runs, func(r labelledRun) string { return r.label }) {
		label := g[0].label
		var ent, searchEnt, ho []report.Curve
		var credit []float64
		generated, traces, heldLeftOut := 0, 0, 0
		for _, r := range g {
			ent = append(ent, r.curves.Entropy)
			searchEnt = append(searchEnt, r.curves.SearchEntropy)
			if len(r.curves.HeldOut.Keys) > 0 {
				ho = append(ho, r.curves.HeldOut)
			}
			heldLeftOut += r.curves.HeldOutLeftOut
			if r.curves.CreditSteps > 0 {
				credit = append(credit, r.curves.SearchCredit)
			}
			generated += r.curves.Generated
			traces += r.curves.Traces
		}
		// A step that trained nothing measured no entropy: the mean curve
		// has the steps every seed measured.
		ent = sharedKeys(ent)
		fmt.Fprintf(w, "run %s (n = %d): ", label, len(g))
		sum.seeds(label, "runs", len(g))
		if steps := len(g[0].curves.Steps); len(ent[0].Keys) == 0 {
			text, cell := noEntropy(g)
			fmt.Fprint(w, text)
			sum.set(label, "entropy, first -> last steps", cell)
		} else {
			e, err := report.MeanCurves(label, ent)
			if err != nil {
				return nil, nil, nil, err
			}
			entropy = append(entropy, e)
			text := entropyChange(e.Y)
			fmt.Fprintf(w, "token entropy %s", text)
			if n := len(e.Y); n < steps {
				fmt.Fprintf(w, " (%d of %d steps left out: they trained nothing, in some seed at least)", steps-n, steps)
			}
			sum.set(label, "entropy, first -> last steps", text)
		}
		// The search traces' own entropy, where every seed logged it (runs
		// since metrics.jsonl's entropy_search): SPIRAL's token entropy
		// mixes in its aggregation traces'.
		if searchEnt = sharedKeys(searchEnt); len(searchEnt[0].Keys) > 0 {
			e, err := report.MeanCurves(label, searchEnt)
			if err != nil {
				return nil, nil, nil, err
			}
			searchEntropy = append(searchEntropy, e)
			text := entropyChange(e.Y)
			fmt.Fprintf(w, "; search traces' token entropy %s", text)
			sum.set(label, "search traces' entropy, first -> last steps", text)
		}
		perSeed := func(n int) float64 { return math.Round(float64(n) / float64(len(g))) }
		fmt.Fprintf(w, "; %.0f traces and %.0f generated tokens per seed", perSeed(traces), perSeed(generated))
		sum.set(label, "training traces / tokens per seed", fmt.Sprintf("%.0f / %.0f", perSeed(traces), perSeed(generated)))
		if len(ho) > 0 {
			h, err := report.MeanCurves(label, ho)
			if err != nil {
				return nil, nil, nil, err
			}
			held = append(held, h)
			// A mean over the seeds that logged held-out evaluations, the
			// label's n = len(g) or fewer: say which where fewer.
			// Evaluations of other held-out problems than a run's last
			// (an --override onto others) are left out, as the run's own
			// held-out summary leaves them: said, as it says it.
			left := ""
			switch {
			case heldLeftOut > 0 && len(g) == 1:
				left = fmt.Sprintf("; %d of %s's evaluations, on other held-out problems than its last, left out", heldLeftOut, rl.EvalFile)
			case heldLeftOut > 0:
				left = fmt.Sprintf("; %d of the seeds' %s evaluations, on other held-out problems than their last, left out", heldLeftOut, rl.EvalFile)
			}
			fmt.Fprintf(w, "; held-out pass@1 %s (step %d) -> %s (step %d%s)", h.Y[0], int(h.X[0]), h.Y[len(h.Y)-1], int(h.X[len(h.X)-1]), left)
			if len(ho) < len(g) {
				fmt.Fprintf(w, " (mean of %d of the %d seeds: the rest logged no held-out evaluation)", len(ho), len(g))
			}
			cell := fmt.Sprintf("%s -> %s%s", h.Y[0], h.Y[len(h.Y)-1], seedsOf(len(ho), len(g)))
			if heldLeftOut > 0 {
				cell += fmt.Sprintf(" (%s on other held-out problems left out)", rollout.Plural(heldLeftOut, "evaluation"))
			}
			sum.set(label, "held-out pass@1 during training", cell)
		}
		if len(credit) > 0 {
			s := report.SpreadOf(credit)
			fmt.Fprintf(w, "; search credit %s (correlation of a trained search trace's own reward with its advantage, mean over steps", s)
			if len(credit) < len(g) {
				fmt.Fprintf(w, "; %d of the %d seeds: the rest logged none", len(credit), len(g))
			}
			fmt.Fprint(w, ")")
			sum.set(label, "search credit (own reward vs advantage)", s.String()+seedsOf(len(credit), len(g)))
		}
		fmt.Fprintln(w)
	}
	if len(c.runs) > 0 {
		fmt.Fprintln(w)
	}
	return entropy, searchEntropy, held, nil
}

// seedsOf is a summary cell's note of a mean over n of a label's all
// seeds, " (n of all seeds)", where n is fewer; "" where it is all.
func seedsOf(n, all int) string {
	if n == all {
		return ""
	}
	return fmt.Sprintf(" (%d of %d seeds)", n, all)
}

// noEntropy says why a label's seeds (runs) have no step with a token
// entropy in every one of them, and its summary cell: no step of any
// seed trained something (rl.Metrics.NoUpdate: no informative problem,
// or no trained token); or the steps that did logged none (null: an
// update skipped for a non-finite loss); or the seeds measured it at
// different steps.
func noEntropy(g []labelledRun) (text, cell string) {
	steps := len(g[0].curves.Steps)
	measured, noUpdate := 0, 0
	for _, r := range g {
		measured += len(r.curves.Entropy.Keys)
		noUpdate += r.curves.NoUpdateSteps
	}
	all := steps * len(g)
	switch {
	case noUpdate == all:
		return fmt.Sprintf("no step updated the weights (%d of %d trained nothing: no informative problem or no trained token): no token entropy", steps, steps), "no update"
	case measured == 0:
		return fmt.Sprintf("no step logged a token entropy (%d of %d step logs trained nothing: no informative problem or no trained token; the other %d with a null entropy: a non-finite loss)", noUpdate, all, all-noUpdate), "none logged"
	}
	return fmt.Sprintf("no step with a token entropy in every seed (the seeds measured it at different steps; %d of %d step logs without one): no mean token entropy", all-measured, all), "no step shared by the seeds"
}

// entropyChange describes a mean entropy curve's change: the means of
// its first and last min(10, n/2) steps, which never overlap, or its one
// value when it has a single step.
func entropyChange(ys []report.Spread) string {
	n := min(10, len(ys)/2)
	if n == 0 {
		return fmt.Sprintf("%.4f (1 step: too short for first -> last)", ys[0].Mean)
	}
	mean := func(part []report.Spread) float64 {
		var s float64
		for _, y := range part {
			s += y.Mean
		}
		return s / float64(len(part))
	}
	first, last := mean(ys[:n]), mean(ys[len(ys)-n:])
	change := "-"
	if first != 0 {
		// Rounded first, and + 0 turns a -0 (a fall under half a
		// percent) into 0: "+0%", not "-0%".
		change = fmt.Sprintf("%+.0f%%", math.Round((last-first)/first*100)+0)
	}
	return fmt.Sprintf("%.4f -> %.4f (%s; means of the first and last %d of %d steps)", first, last, change, n, len(ys))
}

// sharedKeys restricts curves to the keys every one of them has, in the
// first's order.
func sharedKeys(curves []report.Curve) []report.Curve {
	count := map[int]int{}
	for _, c := range curves {
		for _, k := range c.Keys {
			count[k]++
		}
	}
	out := make([]report.Curve, len(curves))
	for i, c := range curves {
		for j, k := range c.Keys {
			if count[k] == len(curves) {
				out[i].Keys, out[i].Y = append(out[i].Keys, k), append(out[i].Y, c.Y[j])
			}
		}
	}
	return out
}

// summary is a table of labels x columns, in the order they were set.
type summary struct {
	labels, cols []string
	cells        map[[2]string]string
	// counts are each label's seed counts, per mode or of its runs.
	counts map[string][]seedCount
}

// seedCount is the number of a label's seeds in a mode (or its runs).
type seedCount struct {
	what string
	n    int
}

// newSummary is an empty table whose first column, after the model's,
// is the seeds.
func newSummary() *summary {
	return &summary{cols: []string{"seeds"}, cells: map[[2]string]string{}, counts: map[string][]seedCount{}}
}

// sortedInts is ns sorted, each once.
func sortedInts(ns []int) []int {
	ns = slices.Clone(ns)
	slices.Sort(ns)
	return slices.Compact(ns)
}

// seeds counts label's n seeds of what (a mode, or runs) in the seeds
// column: their number where every mode and run of the label has as
// many, else each's ("sequential 1, runs 2").
func (s *summary) seeds(label, what string, n int) {
	s.counts[label] = append(s.counts[label], seedCount{what, n})
	same := true
	var parts []string
	for _, c := range s.counts[label] {
		parts = append(parts, fmt.Sprintf("%s %d", c.what, c.n))
		same = same && c.n == n
	}
	if same {
		s.set(label, "seeds", strconv.Itoa(n))
		return
	}
	s.set(label, "seeds", strings.Join(parts, ", "))
}

func (s *summary) set(label, col, v string) {
	if !slices.Contains(s.labels, label) {
		s.labels = append(s.labels, label)
	}
	s.column(col)
	s.cells[[2]string{label, col}] = v
}

// column adds col after the table's columns, where it has none of that
// name: a mode's columns are added in order of their k, step or budget
// before its labels' cells are set, which would add them in the order
// the labels bring them.
func (s *summary) column(col string) {
	if !slices.Contains(s.cols, col) {
		s.cols = append(s.cols, col)
	}
}

// markdown renders the table (mean and, over several seeds, the range)
// and, where a label has several seeds in a mode or of its runs, a line
// under it saying what a value's parentheses hold; a column without
// cells is left out. A "|" in a label, as
// a column's name or a cell, is escaped as \|, and a line break is a
// space: either would end the cell or the row.
func (s *summary) markdown() string {
	esc := strings.NewReplacer("|", `\|`, "\r\n", " ", "\n", " ", "\r", " ")
	row := func(cells []string) string {
		for i, c := range cells {
			cells[i] = esc.Replace(c)
		}
		return "| " + strings.Join(cells, " | ") + " |\n"
	}
	// A column no label has a cell in (the seeds of a table set by hand)
	// is left out.
	var cols []string
	for _, c := range s.cols {
		if slices.ContainsFunc(s.labels, func(l string) bool { return s.cells[[2]string{l, c}] != "" }) {
			cols = append(cols, c)
		}
	}
	var b strings.Builder
	b.WriteString(row(append([]string{"model"}, cols...)) + "|---|" + strings.Repeat("---|", len(cols)) + "\n")
	for _, l := range s.labels {
		cells := []string{l}
		for _, c := range cols {
			v := s.cells[[2]string{l, c}]
			if v == "" {
				v = "-"
			}
			cells = append(cells, v)
		}
		b.WriteString(row(cells))
	}
	for _, counts := range s.counts {
		if slices.ContainsFunc(counts, func(c seedCount) bool { return c.n > 1 }) {
			b.WriteString("\nA value with a range, 0.500 (0.400-0.600), is the mean over the label's seeds, with the least and greatest of them.\n")
			break
		}
	}
	return b.String()
}
