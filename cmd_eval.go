package main

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/spiral-rl/spiral/data"
	"github.com/spiral-rl/spiral/model"
	"github.com/spiral-rl/spiral/model/atomicfile"
	"github.com/spiral-rl/spiral/model/smallfile"
	"github.com/spiral-rl/spiral/rl"
	"github.com/spiral-rl/spiral/rollout"
	"github.com/spiral-rl/spiral/rollout/report"
)

func setupEval(fs *pflag.FlagSet) func(context.Context, *cliEnv, []string) error {
	return flagsCommand[evalFlags](fs, runEval)
}

func runEval(ctx context.Context, env *cliEnv, f *evalFlags) (err error) {
	con := newConsole(env.stderr, f.quiet)
	env = con.on(env)
	for _, w := range f.ignoredFlags() {
		fmt.Fprintf(env.stderr, "spiral: warning: %s\n", w)
	}
	// --out holds the artifacts as well as the report: made first. An
	// evaluation refused before it starts leaves nothing new there.
	lock, err := lockEvalOutput(f.out, f.mode)
	if err != nil {
		return err
	}
	defer func() { err = lock.release(err) }()
	if err := f.checkInputs(); err != nil {
		return err
	}
	sess, err := openSessionOn(env, &f.rf, &f.mf, f.engine.engine)
	if err != nil {
		return err
	}
	defer sess.close()
	onTask := f.data == ""
	var ds *data.Dataset
	dsName := f.data
	if onTask {
		dsName = embeddedTestName
		ds, err = embeddedEvalSet(f.limit)
	} else {
		ds, err = loadProblems("--data", f.data, f.df.opt, env.stderr)
	}
	if err != nil {
		return err
	}
	// Every template file is checked, as the counts --mode ignores are
	// (a bad value is a mistake either way); but only RSA renders
	// aggregation prompts: another mode ignores an --aggregate-template
	// (warned of: ignoredFlags), which its report then does not record
	// as one of its prompts.
	tmpl, err := loadTemplates(onTask || sess.embedded, f.tmpl)
	if err != nil {
		return err
	}
	given := tmpl // the pair the flags name, as train records it
	tf := f.tmpl
	if f.mode != "rsa" && tf.aggregate != "" {
		tf.aggregate = ""
		if tmpl, err = loadTemplates(onTask || sess.embedded, tf); err != nil {
			return err
		}
	}
	aggCandidates := 0 // none: only --mode rsa renders aggregation prompts
	if f.mode == "rsa" {
		aggCandidates = f.rsa.SubsetSize
		if err := checkAggregateTemplate(tmpl, tf, subsetSize{fmt.Sprintf("--subset %d", aggCandidates), aggCandidates}); err != nil {
			return err
		}
	}
	problems := ds.Problems
	if f.limit > 0 && f.limit < len(problems) {
		problems = problems[:f.limit]
	}
	if f.limit > len(problems) {
		fmt.Fprintf(env.stderr, "spiral: note: --limit %d: %s has %s\n", f.limit, dsName, evaluatingThose(len(problems)))
	}
	if err := checkRequests(len(problems), "problems", f.draws(), f.drawsFlag()); err != nil {
		return err
	}
	name := sess.reportName()
	if f.engine.engine == "openai" {
		name = f.engine.model + "@" + f.engine.baseURL
	}
	// The prompts' tokenizer, whose ids sequential and rsa save: a
	// rerun with another reads them, and tokenizes its prompts, as
	// other text.
	tokID, err := sess.tokenizerID()
	if err != nil {
		return err
	}
	// metaOf is the report's meta of an evaluation of problems, of which
	// skipped were too long for the model, sampling with c, of the model
	// of content id modelID. The checkpoint's name and weights, and the
	// start, are the load's.
	metaOf := func(c rollout.SamplerConfig, problems []data.Problem, skipped int, modelID string) report.Meta {
		return report.Meta{Model: name, Label: f.label, ModelDigest: modelID, Dataset: dsName, Problems: len(problems), Seed: f.seed,
			Extra:      reportExtra(c, f.reward.rule, tmpl, tf, skipped),
			ProblemIDs: report.ProblemIDs(problems), ProblemsDigest: data.ProblemsDigest(problems)}
	}
	// The local engine's settings that may change the last bits of the
	// logits alone, which a rerun with others resumes, warned of
	// (report.EvalKey.Numerics). The threads are those the sessions run
	// (1 under --deterministic, one per physical core for --threads 0),
	// not the flag: --threads 0 on a machine of other cores runs others.
	// The ONNX Runtime library (--ort-lib) is recorded by the version it
	// reports, as spiral version shows it: another release may compute
	// other last bits.
	var numerics map[string]string
	if f.engine.engine == "local" {
		device := "cpu" // after --device auto's fallback
		if sess.rt.Device().Kind == model.CUDA {
			device = "cuda"
		}
		numerics = map[string]string{"--gen-batch": strconv.Itoa(f.sf.cfg.BatchSize), "--gen-call-mib": strconv.Itoa(f.sf.callMiB),
			"--threads": strconv.Itoa(sess.rt.Threads()), "--deterministic": strconv.FormatBool(f.rf.deterministic), "--device": device,
			"onnxruntime": sess.rt.Version()}
	}
	// pass@k and the sequential budget sweep save their problems as
	// they finish, RSA its state after each step, which a rerun of the
	// same settings resumes: keyOf is the key of an evaluation of meta.
	keyOf := func(meta report.Meta) report.EvalKey {
		if f.mode != "rsa" {
			key := report.KeyOf(report.Mode(f.mode), meta, f.samples)
			key.Tokenizer, key.Numerics = tokID, numerics
			return key
		}
		key, cfg := report.KeyOf(report.ModeRSA, meta, f.rsa.Population), f.rsa
		key.RSA, key.Tokenizer, key.Numerics = &cfg, tokID, numerics
		return key
	}
	base := filepath.Join(f.out, f.mode)
	// refuseOther refuses what an interrupted evaluation of another key
	// than key saved, but for what unknown leaves out (resumable,
	// resumableRSA).
	refuseOther := func(key report.EvalKey, problems, all []data.Problem, unknown unknowns) error {
		if f.mode == "rsa" {
			_, err := resumableRSA(base+report.StepsSuffix, key, problems, all, unknown, f.traces)
			return err
		}
		_, err := resumable(base+report.ProblemsSuffix, key, problems, all, unknown, f.traces)
		return err
	}
	// A commit killed within its renames is finished first, as the
	// report's stage would: it removes the file of the problems or
	// steps that its evaluation saved, which would otherwise be read
	// here as an interrupted evaluation's.
	if err := atomicfile.FinishKilled(f.out); err != nil {
		return outError("--out", f.out, err)
	}
	if f.engine.engine == "openai" && !f.fresh {
		// A serving engine's check waits for it (up to --engine-timeout,
		// for a server still loading its model): the settings known
		// before the context it serves is are compared first.
		c, err := sess.samplerConfig(f.sf, onTask, 0, io.Discard) // its errors and warnings engineSamplerConfig's
		if err != nil {
			return err
		}
		unknown := unknowns{context: true, traceLength: f.sf.cfg.MaxNewTokens == 0 && !sess.embedded && !onTask}
		if err := refuseOther(keyOf(metaOf(c, problems, 0, "")), nil, nil, unknown); err != nil {
			return err
		}
	}
	samplerCfg, _, sglangListed, err := sess.engineSamplerConfig(ctx, f.engine, "", f.sf, onTask, env.stderr)
	if err != nil {
		return err
	}
	sess.noteGenerationSampling(f.sf, samplerCfg, env.stderr)
	if n := f.draws(); samplerCfg.Temperature == 0 && n > 1 {
		fmt.Fprintf(env.stderr, "spiral: note: --temperature 0 samples greedily: the %d samples of a problem are all the same\n", n)
	}
	f.rsa.PromptLimit = promptLimit(samplerCfg)
	before := len(problems)
	if problems, err = fitContext(sess, tmpl, problems, samplerCfg, aggCandidates, env.stderr); err != nil {
		return err
	}
	if err := warnUnreadable(sess, tmpl, problems, aggCandidates, env.stderr); err != nil {
		return err
	}
	skipped := before - len(problems)
	if len(problems) == 0 {
		which := "the " + rollout.Plural(before, "problem")
		switch {
		case before < len(ds.Problems) || onTask && f.limit > 0:
			which = "the first " + rollout.Plural(before, "problem") + " (--limit)" // as train says of its held-out problems
		case onTask: // eval's, of the test split's many more
			which = "the first " + rollout.Plural(before, "problem")
		}
		return fmt.Errorf("no problems to evaluate: %s of %s %s for the model (listed above)", which, dsName, tooLong(before))
	}
	// The model's content id, which tells it from a model in a directory
	// of the same name elsewhere (the name reports give it); a
	// checkpoint's digest tells its evaluation apart.
	var modelID string
	if f.engine.engine == "local" && f.ckpt == "" && !sess.embedded {
		if modelID, err = model.SourceID(sess.onnx); err != nil {
			return err
		}
	}
	meta := metaOf(samplerCfg, problems, skipped, modelID)
	if !f.fresh {
		// What an interrupted evaluation of other settings saved is
		// refused before the model loads (minutes, for a real model),
		// by all but the checkpoint, which only its load picks:
		// openEvalProblems and openEvalSteps check that too, once it
		// is loaded.
		if err := refuseOther(keyOf(meta), problems, ds.Problems, unknowns{checkpoint: f.ckpt != "", sglangListed: sglangListed}); err != nil {
			return err
		}
	}
	var pol *model.Policy
	var ckpt loadedCheckpoint
	if f.engine.engine == "local" {
		if pol, ckpt, err = openSamplingPolicy(ctx, sess, f.ckpt, filepath.Join(f.out, rl.ArtifactsDir), env.stderr); err != nil {
			return err
		}
		defer pol.Close()
		if ckpt.path != "" {
			warnOtherTemplates(env.stderr, ckpt.path, ckpt.settings, given, f.tmpl, f.mode)
			warnTrainingData(env.stderr, ckpt.path, ckpt.settings, f.data)
		}
	}
	gen, err := sess.generator(f.engine, pol, samplerCfg, env.stderr)
	if err != nil {
		return err
	}
	lock.started = true
	bar := con.progress(-1, "eval "+f.mode, "tok")
	ev := rollout.Evaluator{Gen: gen, Prompter: sess.prompter(tmpl), Judge: rl.NewJudge(f.reward.rule), Progress: bar.add}
	if ckpt.path != "" {
		meta.Model += "@" + rl.CheckpointName(ckpt.path)
		meta.CheckpointDigest = ckpt.digest
	}
	meta.Timestamp = time.Now().UTC()
	noteReplacedReport(env.stderr, base+".json", f.mode, meta)
	var saved *evalProblems
	var steps *evalSteps
	if f.mode == "rsa" {
		// Saved after each step, resumed from the step after the last
		// by a rerun of the same settings.
		if steps, err = openEvalSteps(base+report.StepsSuffix, keyOf(meta), problems, meta.Timestamp, f.fresh, f.traces, env.stderr); err != nil {
			return err
		}
		meta.Timestamp = steps.started
	} else {
		// Saved as its problems finish, resumed by a rerun of the same
		// settings: a long evaluation on a serving engine, failed or
		// interrupted at 90%, does not start over.
		key := keyOf(meta)
		if saved, err = openEvalProblems(base+report.ProblemsSuffix, key, problems, meta.Timestamp, f.fresh, f.traces, env.stderr); err != nil {
			return err
		}
		defer saved.close()
		meta.Timestamp = saved.started
		parallel := samplerCfg.BatchSize
		if f.engine.engine == "openai" {
			parallel = f.engine.concurrency
		}
		ev.Chunk = evalChunk(parallel, f.samples)
		// One with --traces saves none: its traces, written as the
		// report is, would not resume with them, so its rerun (with
		// --traces again) would be refused by what it saved.
		if !f.traces {
			ev.Done, ev.Resumed = saved.save(problems), saved.resumed
		}
	}
	var traces *report.TraceWriter
	if f.traces {
		if traces, err = report.NewTraceWriter(base+tracesSuffix, problems); err != nil {
			return err
		}
		defer traces.Abort() // after Stage, a no-op
		ev.Traces = traces.Write
	}
	cuts := &cutCounter{next: ev.Traces}
	ev.Traces = cuts.write
	if saved != nil {
		for _, p := range saved.resumed {
			cuts.count(p.Traces...)
		}
	}
	// One with --traces saves no steps, as pass@k saves no problems.
	if steps != nil && !f.traces {
		if steps.resumed != nil {
			cuts.cut, cuts.padding, cuts.traces = steps.counts.Cut, steps.counts.Padding, steps.counts.Traces
		}
		ev.StepDone, ev.ResumedRSA = steps.save(cuts), steps.resumed
	}
	save := func(rep any, plot func(path string) error) error {
		return saveEval(f.out, f.mode, traces, rep, plot, env.stdout)
	}
	switch f.mode {
	case "rsa":
		res, err := ev.RSA(ctx, problems, f.rsa, f.seed)
		bar.done()
		if err != nil {
			steps.noteKept(env.stderr, err, f.traces)
			return err
		}
		rep := report.NewRSA(meta, res)
		if err := save(rep, func(path string) error { return report.PlotRSA(path, report.PlotSize{}, rep) }); err != nil {
			return err
		}
		if note := res.FittedNote(len(problems), f.mode+".json"); note != "" {
			fmt.Fprintf(env.stderr, "spiral: note: %s\n", note)
		}
		fmt.Fprintf(env.stdout, "%-5s %-9s %-9s %s\n", "step", "accuracy", "majority", "tokens so far (prompt + generated)")
		for _, s := range res.Steps {
			fmt.Fprintf(env.stdout, "%-5d %-9.4f %-9.4f %d\n", s.Step, s.Accuracy, s.Majority, s.Cumulative.Total())
		}
	case "passk":
		res, err := ev.PassAtK(ctx, problems, rollout.PassAtKConfig{Samples: f.samples}, f.seed)
		bar.done()
		if err != nil {
			saved.noteKept(env.stderr, err, f.traces)
			return err
		}
		rep := report.NewPassAtK(meta, res)
		if err := save(rep, func(path string) error { return report.PlotPassAtK(path, report.PlotSize{}, rep) }); err != nil {
			return err
		}
		passAtKTable(env.stdout, res.Points, rep.Config.Majority)
	case "sequential":
		res, err := ev.Sequential(ctx, problems, rollout.BudgetConfig{Samples: f.samples, MaxTokens: samplerCfg.MaxNewTokens}, f.seed)
		bar.done()
		if err != nil {
			saved.noteKept(env.stderr, err, f.traces)
			return err
		}
		rep := report.NewBudget(meta, res)
		if err := save(rep, func(path string) error { return report.PlotBudget(path, report.PlotSize{}, rep) }); err != nil {
			return err
		}
		sequentialTable(env.stdout, res.Points)
	}
	cuts.note(env.stderr, samplerCfg.MaxNewTokens, f.reward.rule)
	if skipped > 0 {
		fmt.Fprintf(env.stdout, "skipped %s too long for the model (listed above)\n", rollout.Plural(skipped, "problem"))
	}
	fmt.Fprintf(env.stdout, "wrote %s.json and %s.png\n", base, base)
	return nil
}

// passAtKTable prints eval's pass@k table: pass@k and majority@k at each
// k, a majority@k that is a Monte Carlo estimate (some problem's C(n, k)
// above mcfg.MaxExact: KPoint.MajorityExact false) marked with "*" and
// a note under the table naming mcfg's subsets a problem.
func passAtKTable(w io.Writer, pts []rollout.KPoint, mcfg rollout.MajorityConfig) {
	fmt.Fprintf(w, "%-5s %-9s %s\n", "k", "pass@k", "majority@k")
	estimated := false
	for _, p := range pts {
		mark := ""
		if !p.MajorityExact {
			mark, estimated = " *", true
		}
		fmt.Fprintf(w, "%-5d %-9.4f %.4f%s\n", p.K, p.PassAtK, p.MajorityAtK, mark)
	}
	if estimated {
		fmt.Fprintf(w, "* a Monte Carlo estimate: majority@k over %d random subsets of k samples a problem, where C(n, k) exceeds %d (the report's config.majority)\n", mcfg.Samples, mcfg.MaxExact)
	}
}

// sequentialTable prints eval's sequential table: at each budget (the
// tokens a trace may generate), the accuracy, the mean tokens a trace
// spent within it (what compare sets the models side by side at) and
// the fraction of traces it cut.
func sequentialTable(w io.Writer, pts []rollout.BudgetPoint) {
	fmt.Fprintf(w, "%-16s %-9s %-18s %s\n", "budget (tokens)", "accuracy", "mean tokens/trace", "truncated (of traces)")
	for _, p := range pts {
		fmt.Fprintf(w, "%-16d %-9.4f %-18.1f %.3f\n", p.Budget, p.Accuracy, p.MeanTokens, p.Truncated)
	}
}

// warnOtherTemplates warns on w where the checkpoint at path was trained
// on other prompt templates than the evaluation's, given (those the
// flags f name): its run's settings (trained) record each template's
// fingerprint (sampling.search_template, sampling.aggregate_template),
// and those the mode reads differ from given's (the search template in
// every mode, the aggregation template in rsa alone, where the run read
// one: a GRPO run without a final RSA records none). A checkpoint of a
// version that recorded only both's fingerprint (sampling.templates) is
// compared by it, the aggregation template included in every mode, as
// train recorded the pair: it warns where that is neither given's nor,
// for template files with CRLF line ends, the one versions that kept
// them recorded. The run records no template's text or path, so eval
// cannot take its templates: the warning names the fingerprints and the
// files to give. A checkpoint that records none (older versions, sft's)
// is not checked.
func warnOtherTemplates(w io.Writer, path string, trained rl.RunSettings, given templateSet, f templateFlags, mode string) {
	run := trained.TemplatePrints()
	if run.Search != "" {
		warnOtherTemplate(w, path, run, given.prints(), f, mode)
		return
	}
	if run.Both == "" || run.Both == given.digest() || run.Both == given.crlfDigest() {
		return
	}
	ours := "the built-in templates"
	switch {
	case f.search != "" && f.aggregate != "":
		ours = "--search-template " + f.search + " and --aggregate-template " + f.aggregate
	case f.search != "":
		ours = "--search-template " + f.search + " with the built-in aggregation template"
	case f.aggregate != "":
		ours = "the built-in search template with --aggregate-template " + f.aggregate
	}
	fix := "give the run's --search-template and --aggregate-template"
	if f != (templateFlags{}) {
		fix = "the templates given are used"
	}
	fmt.Fprintf(w, "spiral: warning: checkpoint %s was trained on other prompt templates (its run's sampling.templates %s) than this evaluation's, %s (%s), so the model is evaluated on prompts it was not trained on: %s",
		path, run.Both, ours, given.digest(), fix)
	if mode != "rsa" && f.aggregate == "" {
		fmt.Fprintf(w, " (the fingerprint covers the aggregation template too, which --mode %s does not render: one trained with another --aggregate-template alone differs too; give it to compare the pair)", mode)
	}
	fmt.Fprintln(w)
}

// warnOtherTemplate is warnOtherTemplates of a checkpoint whose run's
// settings record each template's fingerprint (run), given's being ours:
// it names the templates the mode reads that differ, each by its setting
// and fingerprint, and says which flags to give.
func warnOtherTemplate(w io.Writer, path string, run, ours rl.TemplatePrints, f templateFlags, mode string) {
	type template struct{ name, setting, flag, file, run, ours string }
	var differ []template
	if run.Search != ours.Search {
		differ = append(differ, template{"search", "sampling.search_template", "--search-template", f.search, run.Search, ours.Search})
	}
	if mode == "rsa" && run.Aggregate != "" && run.Aggregate != ours.Aggregate {
		differ = append(differ, template{"aggregation", "sampling.aggregate_template", "--aggregate-template", f.aggregate, run.Aggregate, ours.Aggregate})
	}
	if len(differ) == 0 {
		return
	}
	var names, runs, given, prints, missing []string
	for _, d := range differ {
		names = append(names, d.name)
		runs = append(runs, d.setting+" "+d.run)
		prints = append(prints, d.ours)
		if d.file == "" {
			given = append(given, "the built-in one")
			missing = append(missing, d.flag)
		} else {
			given = append(given, d.flag+" "+d.file)
		}
	}
	which := "another " + names[0] + " template"
	if len(differ) > 1 {
		which = "other " + strings.Join(names, " and ") + " templates"
	}
	fix := "give the run's " + strings.Join(missing, " and ")
	switch {
	case len(missing) > 0:
	case len(differ) > 1:
		fix = "the templates given are used"
	default:
		fix = "the template given is used"
	}
	fmt.Fprintf(w, "spiral: warning: checkpoint %s was trained on %s (its run's %s) than this evaluation's, %s (%s), so the model is evaluated on prompts it was not trained on: %s\n",
		path, which, strings.Join(runs, " and "), strings.Join(given, " and "), strings.Join(prints, " and "), fix)
}

// warnTrainingData warns on w where the checkpoint at path was trained on
// the file that --data (data, "" for the embedded test split) names: its
// run's settings record the training file's absolute path (DataPath;
// none for the embedded task's training split, nor in checkpoints of
// older versions), and an evaluation there measures the model on
// problems it was trained on, not held-out ones, as train warns of
// held-out problems that are training problems.
func warnTrainingData(w io.Writer, path string, trained rl.RunSettings, data string) {
	if data == "" || trained.DataPath == "" {
		return
	}
	ours, err := os.Stat(data)
	if err != nil {
		return // loaded already: gone since, which the report does not need
	}
	if theirs, err := os.Stat(trained.DataPath); err != nil || !os.SameFile(ours, theirs) {
		return
	}
	fmt.Fprintf(w, "spiral: warning: checkpoint %s was trained on %s, the --data %s evaluated: its accuracy there is on problems it was trained on, not held-out ones\n",
		path, trained.DataPath, data)
}

// reportModelName names the model file at path in a report: path as
// given, or where that names no directory of the model's (model.onnx,
// given as --model . or from beside it, ../model.onnx) with its
// directory's name ahead (sft-a/model.onnx), so that two models each
// evaluated from its own directory are not named alike, which compare
// would average as one model's seeds.
func reportModelName(path string) string {
	for _, e := range strings.Split(filepath.ToSlash(filepath.Dir(filepath.Clean(path))), "/") {
		if e != "." && e != ".." && e != "" {
			return path
		}
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return path
	}
	return filepath.Join(filepath.Base(filepath.Dir(abs)), filepath.Base(abs))
}

// noteReplacedReport notes on w that the report at path, of the given
// mode, which the evaluation described by meta replaces, is another
// model's, checkpoint's or label's (its meta's model or name differs, or
// the checkpoint or model digests both record: another run's
// checkpoint of the same name, another model of that name), or no
// report that names its model. The report is replaced all the same
// (make study and users re-evaluate into the same --out), but not
// silently; one of the same model, checkpoint and name is a re-evaluation,
// not noted.
func noteReplacedReport(w io.Writer, path, mode string, meta report.Meta) {
	b, err := smallfile.Read(path, smallfile.Limit)
	if err != nil {
		return // none there (one that cannot be read fails the commit)
	}
	var old struct {
		Meta report.Meta `json:"meta"`
	}
	if err := json.Unmarshal(b, &old); err != nil || old.Meta.Model == "" {
		why := ""
		if err != nil {
			why = " (" + err.Error() + ")"
		}
		fmt.Fprintf(w, "spiral: note: %s, which this evaluation will replace, is no report that names its model%s\n", path, why)
		return
	}
	// A checkpoint of another run in a directory of the same name has
	// the same name, as another model there has: its digest or id tell
	// it apart, where both record them.
	otherCheckpoint := old.Meta.CheckpointDigest != "" && meta.CheckpointDigest != "" && old.Meta.CheckpointDigest != meta.CheckpointDigest
	otherModel := old.Meta.ModelDigest != "" && meta.ModelDigest != "" && old.Meta.ModelDigest != meta.ModelDigest
	if old.Meta.Model == meta.Model && old.Meta.Name() == meta.Name() && !otherCheckpoint && !otherModel {
		return
	}
	was, is := evaluated(old.Meta), evaluated(meta)
	switch {
	case was != is:
	case otherCheckpoint:
		was += " (checkpoint_digest " + old.Meta.CheckpointDigest + ")"
		is += " (checkpoint_digest " + meta.CheckpointDigest + ")"
	default:
		was += fmt.Sprintf(" (id %.12s)", old.Meta.ModelDigest)
		is += fmt.Sprintf(" (id %.12s)", meta.ModelDigest)
	}
	fmt.Fprintf(w, "spiral: note: %s, the %s report of %s, will be replaced by this evaluation's, of %s\n", path, mode, was, is)
}

// evaluated names the model a report's meta evaluated: its model (with
// its checkpoint), and its label where it has one of its own.
func evaluated(m report.Meta) string {
	if m.Name() == m.Model {
		return m.Model
	}
	return fmt.Sprintf("%s (label %s)", m.Model, m.Label)
}

// saveEval writes an evaluation's outputs in --out (out), named for its
// mode: the report rep, its plot (written by plot at the path given) and
// the traces (nil without --traces). They are written in a stage in out
// and moved in together, the report last: one that fails (a full disk)
// or is killed while writing leaves the earlier evaluation's report, plot
// and traces as they were (its own traces stay .partial), and a report
// is there only with its own plot and traces beside it. An earlier
// evaluation's traces, finished or .partial, which would sit beside this
// report as if they were its own, are removed once this report is in
// place, as stdout is told.
func saveEval(out, mode string, traces *report.TraceWriter, rep any, plot func(path string) error, stdout io.Writer) error {
	stage, err := atomicfile.NewStage(out)
	if err != nil {
		return outError("--out", out, err)
	}
	defer stage.Discard()
	staged := filepath.Join(stage.Dir(), mode)
	if err := plot(staged + ".png"); err != nil {
		return err
	}
	if err := report.WriteJSON(staged+".json", rep); err != nil {
		return err
	}
	tracesFile := filepath.Join(out, mode+tracesSuffix)
	partial := tracesFile + rl.PartialSuffix
	// The traces' .partial file goes once the report is in place: this
	// evaluation's, which the stage holds a link of, or without --traces
	// one that an interrupted earlier evaluation left, as its finished
	// traces file goes.
	// So does the file in which a pass@k or sequential evaluation saved
	// its problems as they finished (report.ProblemsSuffix), or an RSA
	// evaluation its steps (report.StepsSuffix), this one's or an
	// earlier's.
	names := []string{mode + ".png", mode + tracesSuffix, mode + ".json", filepath.Base(partial), mode + report.ProblemsSuffix, mode + report.StepsSuffix}
	var stale []string
	if traces != nil {
		if err := traces.Stage(stage.Dir()); err != nil {
			return err
		}
	} else {
		for _, p := range []string{tracesFile, partial} {
			if _, err := os.Lstat(p); err == nil {
				stale = append(stale, p)
			}
		}
	}
	if err := stage.Commit(names...); err != nil {
		return fmt.Errorf("--out %s: %w", out, err)
	}
	if traces != nil {
		fmt.Fprintf(stdout, "wrote %s\n", tracesFile)
	}
	for _, p := range stale {
		what := "an earlier evaluation's"
		if p == partial {
			what = "an interrupted earlier evaluation's unfinished traces"
		}
		fmt.Fprintf(stdout, "removed %s, %s (--traces writes this one's)\n", p, what)
	}
	return nil
}

// evaluatingThose says that the n problems a data set has, fewer than
// asked for, are evaluated: "3 problems; evaluating those".
func evaluatingThose(n int) string {
	if n == 1 {
		return "1 problem; evaluating it"
	}
	return rollout.Plural(n, "problem") + "; evaluating those"
}

// cutCounter counts an evaluation's judged traces, those the sampler
// cut at --max-new-tokens, and those a serving engine cut before a
// padding id it sampled (rollout.FinishPadding), handing them on to next
// (when set).
type cutCounter struct {
	cut, padding, traces int
	next                 rollout.TraceSink
}

func (c *cutCounter) write(b []rollout.TracedTrace) error {
	for _, t := range b {
		c.count(t.Trace)
	}
	if c.next == nil {
		return nil
	}
	return c.next(b)
}

// count counts the traces ts without handing them on: those of the
// problems a resumed evaluation saved earlier.
func (c *cutCounter) count(ts ...rollout.Trace) {
	for _, t := range ts {
		c.traces++
		switch t.Finish {
		case rollout.FinishLength:
			c.cut++
		case rollout.FinishPadding:
			c.padding++
		}
	}
}

// note says on w how many traces were cut at --max-new-tokens (maxNew),
// if any, and what rule made of them: by default a cut trace earns
// nothing unless it had stated an explicit answer, which a limit too
// short for the model's reasoning turns into an accuracy of 0. Those cut
// before a padding id, graded alike though no limit cut them, are
// counted in a line of their own.
func (c *cutCounter) note(w io.Writer, maxNew int, rule rl.RewardRule) {
	were := func(n int) string {
		if n == 1 {
			return "was"
		}
		return "were"
	}
	if c.cut > 0 {
		fmt.Fprintf(w, "spiral: note: %d of the %d traces %s cut at --max-new-tokens %d", c.cut, c.traces, were(c.cut), maxNew)
		if h := rule.CutTraces(); h != "" {
			fmt.Fprint(w, "; "+h)
		}
		fmt.Fprintln(w)
	}
	if c.padding > 0 {
		as := "as cut traces"
		if c.padding == 1 {
			as = "as a cut trace"
		}
		fmt.Fprintf(w, "spiral: note: %d of the %d traces %s cut before a token id past the tokenizer's that the engine sampled (one of the model's padding logits, not --max-new-tokens %d), and graded %s\n",
			c.padding, c.traces, were(c.padding), maxNew, as)
	}
}

// reportExtra's keys that refuseSaved names: the count of the problems
// skipped as too long for the model and the trace length, which may
// depend on a serving engine's context, and the template files', which
// only their flags record (reportExtra records the others of every
// evaluation).
const (
	skippedProblemsKey   = "skipped_problems"
	maxNewTokensKey      = "max_new_tokens"
	searchTemplateKey    = "search_template"
	aggregateTemplateKey = "aggregate_template"
)

// reportExtra is a report's meta.extra: the sampling settings of
// samplerCfg and the reward rule, which spiral compare checks a label's
// seeds against (cmd_compare.go's evalSettings), the prompt templates'
// fingerprint as train's settings record it (sampling.templates), each
// template file of the user's (f) with the digest of its text as read
// (without a byte order mark or the trailing newline, CRLF line ends
// read as LF), the text the prompts were rendered from, and the number
// of problems skipped as too long for the model. spiral eval's reports and train's final RSA
// report (rl.RunParts.ReportExtra) record it alike.
func reportExtra(samplerCfg rollout.SamplerConfig, rule rl.RewardRule, tmpl templateSet, f templateFlags, skipped int) map[string]string {
	extra := map[string]string{
		"temperature":      strconv.FormatFloat(samplerCfg.Temperature, 'g', -1, 64),
		"top_p":            strconv.FormatFloat(samplerCfg.TopP, 'g', -1, 64),
		"top_k":            strconv.Itoa(samplerCfg.TopK),
		maxNewTokensKey:    strconv.Itoa(samplerCfg.MaxNewTokens),
		"reward_rule":      rule.String(),
		skippedProblemsKey: strconv.Itoa(skipped),
		"templates":        tmpl.digest(),
	}
	for _, t := range []struct{ key, path, text string }{
		{searchTemplateKey, f.search, tmpl.SearchSource()},
		{aggregateTemplateKey, f.aggregate, tmpl.AggregateSource()},
	} {
		if t.path != "" {
			extra[t.key] = fmt.Sprintf("%s (sha256 %x)", t.path, sha256.Sum256([]byte(t.text)))
		}
	}
	return extra
}

// evalChunkWaves is how many times the requests an engine runs at once
// a Generate call of a resumable evaluation holds: each call's end,
// where its last requests run with fewer beside them, costs about one
// trace's time at part of the engine's width (measured locally on 4,096
// requests of up to 96 tokens at --gen-batch 64: two calls of 2,048 took
// 1.7% more model calls than one, the same tokens generated; calls of
// 8 times the rows, 10% more).
const evalChunkWaves = 32

// evalChunk is how many problems of n samples each a Generate call of a
// resumable evaluation holds (rollout.Evaluator.Chunk), on an engine
// that runs parallel requests at once (--gen-batch's rows,
// --engine-concurrency's requests): evalChunkWaves times parallel
// requests, at least one problem.
func evalChunk(parallel, n int) int {
	return max(1, (evalChunkWaves*parallel+n-1)/n)
}

// evalProblems is the file in --out in which a pass@k or sequential
// evaluation saves its problems as they finish (report.ProblemsSuffix;
// a sequential one's with every sample's generated ids), made as the first
// are: resumed, what an interrupted evaluation of the same settings
// saved there, which this one takes rather than generates, and started
// when it began (the report's timestamp).
type evalProblems struct {
	w       *report.ProblemsWriter // nil until the file is made or resumed
	path    string
	key     report.EvalKey
	resumed map[int]rollout.SampledProblem
	started time.Time
	// saved counts the problems the file holds.
	saved int
}

// openEvalProblems opens the file at path for an evaluation of key, of
// problems, that starts now: one there that holds problems it resumes
// (resumable) is resumed (its problems kept, a last line cut short left
// out; one of the first of problems rewritten under key), as stderr is
// told; one that resumable refuses is refused, unless fresh (--fresh),
// which removes it. One that holds no problem, which is nothing to
// resume, is replaced by this evaluation's as its first problems finish.
func openEvalProblems(path string, key report.EvalKey, problems []data.Problem, now time.Time, fresh, traces bool, stderr io.Writer) (*evalProblems, error) {
	p := &evalProblems{path: path, key: key, started: now}
	if fresh {
		s, err := report.ReadProblems(path)
		if errors.Is(err, fs.ErrNotExist) || err == nil && len(s.Problems) == 0 {
			return p, nil
		}
		what := "the problems an interrupted evaluation saved (which did not read)"
		if err == nil {
			what = s.Describe()
		}
		if err := discardSaved(path, what, stderr); err != nil {
			return nil, err
		}
		return p, nil
	}
	// The check before the load, given the data set's problems, refused
	// a file of another --limit on other texts: none is needed here.
	s, err := resumable(path, key, problems, nil, unknowns{}, traces)
	if err != nil || s == nil {
		return p, err
	}
	numerics := s.Key.NumericsDiff(key)
	if len(numerics) > 0 {
		p.key.Numerics = s.Key.Numerics // what its saved problems were sampled with
	}
	first := ""
	if n := len(s.Key.ProblemIDs); n < len(key.ProblemIDs) {
		first = fmt.Sprintf(" by an evaluation of the first %d", n)
		p.w, err = report.RekeyProblems(path, s, p.key)
	} else {
		p.w, err = report.AppendProblems(path, s)
	}
	if err != nil {
		return nil, outError("--out", filepath.Dir(path), err)
	}
	p.started, p.saved = s.Started, len(s.Problems)
	p.resumed = make(map[int]rollout.SampledProblem, len(s.Problems))
	for _, rec := range s.Problems {
		p.resumed[rec.Problem] = rec.Sampled()
	}
	cut := ""
	if s.Cut {
		cut = ", less its last line, cut short"
	}
	fmt.Fprintf(stderr, "spiral: resuming: %d of %s already evaluated (saved in %s%s%s)\n", len(s.Problems), rollout.Plural(len(key.ProblemIDs), "problem"), path, first, cut)
	warnOtherNumerics(stderr, path, numerics)
	return p, nil
}

// warnOtherNumerics warns on w where what an interrupted evaluation saved
// in the file at path is resumed with other settings of the local engine
// (diff, report.EvalKey.NumericsDiff), which determine no result but may
// change the last bits of the model's logits, and so, rarely, a sampled
// token: the report may then differ from an uninterrupted evaluation's.
// The file goes on recording the saved ones.
func warnOtherNumerics(w io.Writer, path string, diff []string) {
	if len(diff) > 0 {
		fmt.Fprintf(w, "spiral: warning: %s was saved with %s: resumed, but these change the last bits of the model's logits, so a rare sampled token, and the report, may differ from an uninterrupted evaluation's; rerun with the saved ones for that one's report bit for bit, or give --fresh to start over\n",
			path, strings.Join(diff, "; "))
	}
}

// resumable reads the file at path in which an interrupted evaluation
// saved its problems, for an evaluation of key, of problems (of the data
// set's all, which refuseSaved reads): it returns them where the
// evaluation resumes them, nil where there are none (no file, or one
// that holds no problem). It resumes those of the same key, and those of
// an evaluation of the first of problems (a smaller --limit: the saved
// problem ids the first of key's, and their texts and answers as the
// saved problems_digest has them: other ones are refused as such, not
// as another --limit), each trace being seeded by its problem's index
// and sample alone; how many problems each
// skipped as too long for the model (extra's skipped_problems, which
// determines no result) is not compared. It refuses them where they are
// of another key (naming how), or where traces (--traces, whose traces
// of the saved problems were not kept), and a file that does not read;
// what unknown names is not compared.
func resumable(path string, key report.EvalKey, problems, all []data.Problem, unknown unknowns, traces bool) (*report.SavedProblems, error) {
	s, err := report.ReadProblems(path)
	switch {
	case errors.Is(err, fs.ErrNotExist) || err == nil && len(s.Problems) == 0:
		return nil, nil
	case err != nil:
		return nil, unreadSaved(err, "what an interrupted evaluation finished")
	}
	was := s.Key
	if n := len(was.ProblemIDs); n < len(problems) && slices.Equal(was.ProblemIDs, key.ProblemIDs[:n]) {
		// Of another --limit it resumes, or, where their texts or
		// answers changed, of other problems (not of another --limit).
		was.ProblemIDs = key.ProblemIDs
		if was.ProblemsDigest == data.ProblemsDigest(problems[:n]) {
			was.ProblemsDigest = key.ProblemsDigest
		}
	}
	if v, ok := key.Extra[skippedProblemsKey]; ok && was.Extra[skippedProblemsKey] != "" {
		was.Extra = maps.Clone(was.Extra)
		was.Extra[skippedProblemsKey] = v
	}
	if err := refuseSaved(path, s.Describe(), was, key, problems, all, unknown, traces); err != nil {
		return nil, err
	}
	return s, nil
}

// digestOf is the problems_digest of the problems of all whose ids are
// ids, in their order, as all has them now; false where one of ids is
// not in all, or not once.
func digestOf(all []data.Problem, ids []string) (string, bool) {
	at := make(map[string]int, len(all))
	for i, p := range all {
		if _, twice := at[p.ID]; twice {
			at[p.ID] = -1
			continue
		}
		at[p.ID] = i
	}
	of := make([]data.Problem, len(ids))
	for j, id := range ids {
		i, ok := at[id]
		if !ok || i < 0 {
			return "", false
		}
		of[j] = all[i]
	}
	return data.ProblemsDigest(of), true
}

// unknowns are what the key of an evaluation does not know yet where what
// an interrupted evaluation saved is compared with it, and so are not
// compared: with checkpoint, the checkpoint's name and digest, before
// its load picks it; with context, before a serving engine's check says
// the context it serves the model with, what depends on it: the
// problems that fit it (their ids, texts and answers, and how many were
// skipped), the aggregation prompts' limit and, with traceLength, the
// trace length (no --max-new-tokens given on a real model: its default
// is half the context). sglangListed, which the key does not record
// either, is the max_model_len of the SGLang that serves the model where
// its context is that less one (checkEngine), for a refusal of a saved
// RSA evaluation's prompt limit one more (sglangEvalNote), or of a saved
// default trace length one more, to say why.
type unknowns struct {
	checkpoint, context, traceLength bool
	sglangListed                     int
}

// sglangEvalNote says why an RSA evaluation that a version before
// 2026-12-07 saved on an SGLang records a prompt limit one more than
// now: SGLang's context, which it fitted to, is one position less since
// (rollout.OpenAI.CheckModel), and its saved steps were fitted to the
// other limit.
const sglangEvalNote = sglangLess + ", and no flags resume what a spiral before then saved on it"

// sglangLess says that SGLang's context is one position less than the
// max_model_len a version before 2026-12-07 fitted to.
const sglangLess = "SGLang's context is taken one position shorter than it serves since spiral of 2026-12-07, as SGLang refuses a request that fills it"

// unreadSaved is the refusal of a saved evaluation that did not read
// (err), which holds what: one with a field this spiral does not know
// (report.NewerError) was saved by a newer spiral, and resumes with it.
func unreadSaved(err error, what string) error {
	var newer *report.NewerError
	if errors.As(err, &newer) {
		return fmt.Errorf("%w: saved by a newer spiral, whose settings this one does not know: resume it with that spiral, or %s", err, restart)
	}
	return fmt.Errorf("%w: the file holds %s: %s", err, what, restart)
}

// restart is how a refusal of what an interrupted evaluation saved ends.
const restart = "give --fresh to discard them and start over, or another --out"

// settingsOnlyIn lists, sorted, the settings of extra that other lacks,
// but a template file's, which an evaluation records only where given.
func settingsOnlyIn(extra, other map[string]string) []string {
	var only []string
	for k := range extra {
		if _, ok := other[k]; !ok && k != searchTemplateKey && k != aggregateTemplateKey {
			only = append(only, k)
		}
	}
	slices.Sort(only)
	return only
}

// refuseSaved refuses what an interrupted evaluation saved in the file
// at path (described by what) for an evaluation of key, of problems (of
// the data set's all), where it is of another key, was (naming how;
// problems of which one's are the first of the other's as another
// --limit, the saved one's to finish it, and their texts or answers
// where these first problems', or, where the saved ones are the more,
// those of all of their ids (digestOf; none given: not compared),
// differ), or where traces (--traces, whose traces of what was saved
// were not kept); what unknown names is not compared. An RSA
// evaluation's prompt limit one more than key's on an SGLang
// (unknown.sglangListed) is refused saying why (sglangEvalNote), alone
// as what an older spiral saved; a max_new_tokens of half that SGLang's
// max_model_len where key's is half of one less (the default trace
// length, which that spiral fitted to it) says why too: a pass@k or
// sequential evaluation's, that the saved one resumes; an RSA one's,
// whose aggregation prompts it would fit one token fewer, as its prompt
// limit is.
// What lacks a setting that key's extra records of every evaluation
// (all but a template file's) was saved by an older spiral, and what
// records one that key's extra does not (but a template file's) by a
// newer one, which no flags make resumable: each is refused as such.
// The others are usage errors (exit 2), the flags' to change, as
// train's and sft's refusals of a run of other settings are
// (rl.OtherRunError).
func refuseSaved(path, what string, was, key report.EvalKey, problems, all []data.Problem, unknown unknowns, traces bool) error {
	if unknown.checkpoint {
		was.Model, was.CheckpointDigest = key.Model, key.CheckpointDigest
	}
	if unknown.context {
		was.ProblemIDs, was.ProblemsDigest = key.ProblemIDs, key.ProblemsDigest
		was.Extra = maps.Clone(was.Extra)
		for _, k := range []string{skippedProblemsKey, maxNewTokensKey} {
			// One the saved evaluation did not record is an older
			// spiral's, refused as such below.
			if _, ok := was.Extra[k]; ok && (k != maxNewTokensKey || unknown.traceLength) {
				was.Extra[k] = key.Extra[k]
			}
		}
		if was.RSA != nil && key.RSA != nil {
			cfg := *was.RSA
			cfg.PromptLimit = key.RSA.PromptLimit
			was.RSA = &cfg
		}
	}
	var sglang string // the prompt limit of a spiral before SGLang's was one less
	if unknown.sglangListed > 0 && was.RSA != nil && key.RSA != nil && was.RSA.PromptLimit == key.RSA.PromptLimit+1 {
		sglang = fmt.Sprintf("aggregation prompts of up to %d tokens (the model's context less --max-new-tokens), not %d: %s", was.RSA.PromptLimit, key.RSA.PromptLimit, sglangEvalNote)
		cfg := *was.RSA
		cfg.PromptLimit = key.RSA.PromptLimit
		was.RSA = &cfg
	}
	var sglangTrace string // the default trace length of a spiral before SGLang's context was one less
	if old, is := was.Extra[maxNewTokensKey], key.Extra[maxNewTokensKey]; unknown.sglangListed > 0 &&
		old == strconv.Itoa(unknown.sglangListed/2) && is == strconv.Itoa((unknown.sglangListed-1)/2) && old != is {
		if key.RSA == nil {
			sglangTrace = fmt.Sprintf("%s %s, not %s (--max-new-tokens, by default half the context; %s: --max-new-tokens %s resumes)", maxNewTokensKey, old, is, sglangLess, old)
		} else {
			// --max-new-tokens of the saved one would fit aggregation
			// prompts of one token fewer: no flags resume it.
			if sglang != "" {
				sglang += "; "
			}
			sglang += fmt.Sprintf("%s %s, not %s (--max-new-tokens, by default half the context; %s)", maxNewTokensKey, old, is, sglangEvalNote)
		}
		was.Extra = maps.Clone(was.Extra) // said with its reason below
		was.Extra[maxNewTokensKey] = is
	}
	if unrecorded := settingsOnlyIn(key.Extra, was.Extra); len(unrecorded) > 0 {
		return fmt.Errorf("%s holds %s, saved by an older spiral, which did not record its %s: %s", path, what, strings.Join(unrecorded, ", "), restart)
	}
	if newer := settingsOnlyIn(was.Extra, key.Extra); len(newer) > 0 {
		return fmt.Errorf("%s holds %s, saved by a newer spiral, which records its %s, unknown to this one: resume it with that spiral, or %s", path, what, strings.Join(newer, ", "), restart)
	}
	// Problems of which one's are the first of the other's: another
	// --limit, named as the flag (and the problems it skipped with it).
	var limit, otherTexts string
	n := len(was.ProblemIDs)
	if m := len(key.ProblemIDs); n != m && slices.Equal(was.ProblemIDs[:min(n, m)], key.ProblemIDs[:min(n, m)]) {
		skipped, _ := strconv.Atoi(was.Extra[skippedProblemsKey])
		limit = fmt.Sprintf("--limit %d", n+skipped)
		// Said with the --limit: a rerun of that one would be refused
		// for them.
		now, ok := "", false
		if n < m && n <= len(problems) {
			now, ok = data.ProblemsDigest(problems[:n]), true
		} else if n > m {
			now, ok = digestOf(all, was.ProblemIDs)
		}
		if ok && now != was.ProblemsDigest {
			otherTexts = fmt.Sprintf("the first %d problems of other texts or answers (problems_digest)", n)
		}
		was.ProblemIDs, was.ProblemsDigest = key.ProblemIDs, key.ProblemsDigest
		if v, ok := key.Extra[skippedProblemsKey]; ok && was.Extra[skippedProblemsKey] != "" {
			was.Extra = maps.Clone(was.Extra)
			was.Extra[skippedProblemsKey] = v
		}
	}
	diff := was.Diff(key)
	if sglangTrace != "" {
		diff = append(diff, sglangTrace)
	}
	if otherTexts != "" {
		diff = append(diff, otherTexts)
	}
	if sglang != "" {
		if len(diff) == 0 && limit == "" {
			return fmt.Errorf("%s holds %s of %s: %s", path, what, sglang, restart)
		}
		diff = append(diff, sglang)
	}
	switch {
	case limit != "" && len(diff) == 0:
		return usageError{fmt.Errorf("%s holds %s of %s, not of these %s: rerun with %s to finish it, or %s",
			path, what, limit, rollout.Plural(len(key.ProblemIDs), "problem"), limit, restart)}
	case limit != "":
		diff = append(diff, fmt.Sprintf("the first %d problems (%s), not these %d", n, limit, len(key.ProblemIDs)))
		fallthrough
	case len(diff) > 0:
		return usageError{fmt.Errorf("%s holds %s of other settings (%s): rerun with those to resume it, or %s",
			path, what, strings.Join(diff, "; "), restart)}
	}
	if traces {
		return usageError{fmt.Errorf("--traces: %s holds %s, whose traces were not kept: rerun without --traces to resume it, or %s", path, what, restart)}
	}
	return nil
}

// resumableRSA reads the file at path in which an interrupted RSA
// evaluation saved its steps, for an evaluation of key, of problems (of
// the data set's all): it returns them where the evaluation resumes them
// (they are of key, or of another --rsa-steps that saved no more steps than key's has: no step depends
// on how many follow it, each seeded by its step, problem and member
// alone), nil where there is none; it refuses them as refuseSaved does,
// and a file that does not read.
func resumableRSA(path string, key report.EvalKey, problems, all []data.Problem, unknown unknowns, traces bool) (*report.SavedRSA, error) {
	s, err := report.ReadRSA(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil
	case err != nil:
		return nil, unreadSaved(err, "the steps an interrupted evaluation finished")
	}
	was := s.Key
	if key.RSA != nil && was.RSA.Steps != key.RSA.Steps && len(s.Steps) <= key.RSA.Steps+1 {
		cfg := *was.RSA
		cfg.Steps = key.RSA.Steps
		was.RSA = &cfg
	}
	if err := refuseSaved(path, s.Describe(), was, key, problems, all, unknown, traces); err != nil {
		return nil, err
	}
	return s, nil
}

// evalSteps is the file in --out in which an RSA evaluation saves its
// state after each step (report.StepsSuffix): resumed, the state an
// interrupted evaluation of the same settings saved there, which this
// one goes on from, with the cut traces it counted, and started when it
// began (the report's timestamp).
type evalSteps struct {
	path    string
	key     report.EvalKey
	resumed *rollout.RSAState
	counts  savedCounts
	started time.Time
	// saved counts the steps the file holds.
	saved int
}

// savedCounts is what an RSA evaluation's file keeps of its cutCounter.
type savedCounts struct {
	Traces  int `json:"traces"`
	Cut     int `json:"cut"`
	Padding int `json:"padding"`
}

// discardSaved removes, for --fresh, the file at path in which an
// interrupted evaluation saved what, and says so on stderr.
func discardSaved(path, what string, stderr io.Writer) error {
	if err := os.Remove(path); err != nil {
		return fmt.Errorf("--fresh: %w", err)
	}
	fmt.Fprintf(stderr, "spiral: note: --fresh: removed %s, %s\n", path, what)
	return nil
}

// openEvalSteps opens the file at path for an RSA evaluation of key, of
// problems, that starts now: one there that resumableRSA resumes is resumed, as stderr
// is told (one of another --rsa-steps saved under key from its next
// step on), and one it refuses is refused, unless fresh (--fresh), which
// removes it.
func openEvalSteps(path string, key report.EvalKey, problems []data.Problem, now time.Time, fresh, traces bool, stderr io.Writer) (*evalSteps, error) {
	p := &evalSteps{path: path, key: key, started: now}
	if fresh {
		s, err := report.ReadRSA(path)
		if errors.Is(err, fs.ErrNotExist) {
			return p, nil
		}
		what := "the steps an interrupted evaluation saved (which did not read)"
		if err == nil {
			what = s.Describe()
		}
		if err := discardSaved(path, what, stderr); err != nil {
			return nil, err
		}
		return p, nil
	}
	s, err := resumableRSA(path, key, problems, nil, unknowns{}, traces) // as openEvalProblems
	if err != nil || s == nil {
		return p, err
	}
	if len(s.Counts) > 0 {
		if err := json.Unmarshal(s.Counts, &p.counts); err != nil {
			return nil, fmt.Errorf("%s: counts: %w: %s", path, err, restart)
		}
	}
	p.resumed, p.started, p.saved = s.State(), s.Started, len(s.Steps)
	numerics := s.Key.NumericsDiff(key)
	if len(numerics) > 0 {
		p.key.Numerics = s.Key.Numerics // what its saved steps were sampled with
	}
	other := ""
	if s.Key.RSA.Steps != key.RSA.Steps {
		other = fmt.Sprintf(" by an evaluation of --rsa-steps %d", s.Key.RSA.Steps)
	}
	fmt.Fprintf(stderr, "spiral: resuming: %d of %d RSA steps already evaluated (saved in %s%s)\n", len(s.Steps), key.RSA.Steps+1, path, other)
	warnOtherNumerics(stderr, path, numerics)
	return p, nil
}

// save is rollout.Evaluator.StepDone: it writes the state after a step,
// with what cuts counted, to the file, whole.
func (p *evalSteps) save(cuts *cutCounter) func(rollout.RSAState) error {
	return func(st rollout.RSAState) error {
		counts, err := json.Marshal(savedCounts{Traces: cuts.traces, Cut: cuts.cut, Padding: cuts.padding})
		if err != nil {
			return err
		}
		if err := report.SaveRSA(p.path, report.RSAOf(p.key, p.started, st, counts)); err != nil {
			return outError("--out", filepath.Dir(p.path), err)
		}
		p.saved = len(st.Steps)
		return nil
	}
}

// noteKept tells w, where the evaluation failed or was interrupted
// (err), how many steps the file keeps for a rerun to resume from; where
// it keeps none, interrupted, and saves steps (not traces), that nothing
// is saved, which Ctrl-C's message ("it keeps the steps it finished")
// does not say.
func (p *evalSteps) noteKept(w io.Writer, err error, traces bool) {
	switch {
	case p.saved > 0:
		fmt.Fprintf(w, "spiral: note: %d of the %d RSA steps were evaluated and saved in %s: rerun the command to resume from there\n", p.saved, p.key.RSA.Steps+1, p.path)
	case errors.Is(err, context.Canceled) && !traces:
		fmt.Fprintln(w, "spiral: note: no RSA step was finished: nothing saved, a rerun starts over")
	}
}

// save is rollout.Evaluator.Done for the evaluation of problems: it
// appends the problems done to the file, synced, making it first where
// it is not yet.
func (p *evalProblems) save(problems []data.Problem) func([]rollout.SampledProblem) error {
	return func(done []rollout.SampledProblem) error {
		if p.w == nil {
			w, err := report.CreateProblems(p.path, p.key, p.started)
			if err != nil {
				return outError("--out", filepath.Dir(p.path), err)
			}
			p.w = w
		}
		recs := make([]report.ProblemRecord, len(done))
		for k, d := range done {
			recs[k] = report.RecordOf(d, problems[d.Index].ID, p.key.Mode == report.ModeSequential)
		}
		if err := p.w.Write(recs); err != nil {
			return err
		}
		p.saved += len(recs)
		return nil
	}
}

// noteKept tells w, where the evaluation failed or was interrupted
// (err), how many problems the file keeps for a rerun to resume from;
// where it keeps none, interrupted, and saves problems (not traces),
// that nothing is saved, which Ctrl-C's message ("it keeps the problems
// it finished") does not say: a Generate call can hold all the problems
// (evalChunk), none of which is saved before it ends.
func (p *evalProblems) noteKept(w io.Writer, err error, traces bool) {
	switch {
	case p.saved > 0:
		fmt.Fprintf(w, "spiral: note: %d of the %s were evaluated and saved in %s: rerun the command to resume from there\n", p.saved, rollout.Plural(len(p.key.ProblemIDs), "problem"), p.path)
	case errors.Is(err, context.Canceled) && !traces:
		fmt.Fprintln(w, "spiral: note: no problem was finished: nothing saved, a rerun starts over")
	}
}

// close closes the file, which the report's commit removes; an
// evaluation that failed or was interrupted leaves it for a rerun.
func (p *evalProblems) close() {
	if p.w != nil {
		_ = p.w.Close()
	}
}
