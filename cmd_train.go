package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/spf13/pflag"

	"github.com/spiral-rl/spiral/data"
	"github.com/spiral-rl/spiral/data/synth"
	"github.com/spiral-rl/spiral/model"
	"github.com/spiral-rl/spiral/model/lmgraph"
	"github.com/spiral-rl/spiral/model/memplan"
	"github.com/spiral-rl/spiral/model/optim"
	"github.com/spiral-rl/spiral/rl"
	"github.com/spiral-rl/spiral/rollout"
	"github.com/spiral-rl/spiral/rollout/report/tfevents"
)

// Default peak learning rates when --lr is 0: 1e-4 suits the embedded
// tiny model (1e-3 undid its warm start within 13 steps), 1e-6 is the
// paper's scale for a real model.
const (
	embeddedLR = 1e-4
	modelLR    = 1e-6
)

func setupTrain(fs *pflag.FlagSet) func(context.Context, *cliEnv, []string) error {
	return flagsCommand[trainFlags](fs, runTrain)
}

// runTrain wires a training run together: the model and its policy, the
// problems, the sampler, the judge and the trainer, then hands over to
// rl.Run.
func runTrain(ctx context.Context, env *cliEnv, f *trainFlags) (err error) {
	if err := f.checkInputs(); err != nil {
		return err
	}
	con := newConsole(env.stderr, f.quiet)
	env = con.on(env)
	warnings := f.ignoredFlags()
	for _, w := range []string{f.untrainedSearch(), f.untrainedLastRound(), f.offPolicySampling(), f.nearGreedySampling()} {
		if w != "" {
			warnings = append(warnings, w)
		}
	}
	for _, w := range warnings {
		fmt.Fprintf(env.stderr, "spiral: warning: %s\n", w)
	}
	sess, err := openSession(env, &f.rf, &f.mf)
	if err != nil {
		return err
	}
	defer sess.close()
	onTask := f.data == ""
	tmpl, err := loadTemplates(onTask || sess.embedded, f.tmpl)
	if err != nil {
		return err
	}
	var ds *data.Dataset
	dataName := f.data
	dataPath, err := absData(f.data)
	if err != nil {
		return err
	}
	if onTask {
		dataName = "embedded:synth"
		ds, err = synth.EmbeddedSplit(synth.Train, embeddedTrainProblems)
	} else {
		ds, err = loadProblems("--data", f.data, f.df.opt, env.stderr)
	}
	if err != nil {
		return err
	}
	// The held-out problems serve the evaluations during training and the
	// final RSA, each on when asked for.
	var held []data.Problem
	var heldName, heldPath string
	wantHeld := f.run.EvalEvery > 0 || f.run.FinalRSA.Steps > 0
	switch {
	case !wantHeld:
	case f.evalData != "":
		eds, err := loadProblems("--eval-data", f.evalData, f.df.opt, env.stderr)
		if err != nil {
			var ue usageError // a path that is no file: said with its flag
			if f.df.opt != (data.LoadOptions{}) && !errors.As(err, &ue) {
				return fmt.Errorf("%w (it is read with the --problem-field, --answer-field, --id-field and --format given for --data)", err)
			}
			return err
		}
		if heldPath, err = absData(f.evalData); err != nil {
			return err
		}
		held, heldName = eds.Problems, f.evalData
	case onTask:
		task, err := synth.Embedded()
		if err != nil {
			return err
		}
		eds, err := task.Dataset(synth.Test, f.evalN, synth.EmbeddedSeed)
		if err != nil {
			return evalProblemsError(f.evalN, err)
		}
		held, heldName = eds.Problems, embeddedTestName
	}
	if n := len(held); n > 0 && n < f.evalN && f.changed("eval-problems") {
		fmt.Fprintf(env.stderr, "spiral: note: --eval-problems %d: %s has %s\n", f.evalN, heldName, evaluatingThose(n))
	}
	held = held[:min(len(held), f.evalN)]
	// Each evaluation every --eval-every steps samples them in one call;
	// rollout.Complete refused more at step 0, once the policy was built.
	if f.run.EvalEvery > 0 {
		if err := checkRequests(len(held), "held-out problems", f.run.EvalSamples, "--eval-samples"); err != nil {
			return err
		}
	}
	if wantHeld && len(held) == 0 {
		fmt.Fprintf(env.stderr, "spiral: note: no held-out evaluation (eval.jsonl, rsa.json): training on --data %s, give --eval-data for one\n", f.data)
	}
	var sizes []subsetSize
	if f.cfg.Algo != rl.AlgoGRPO {
		sizes = append(sizes, subsetSize{fmt.Sprintf("--n %d", f.cfg.Pipeline.N), f.cfg.Pipeline.N})
	}
	if k := f.run.FinalRSA.SubsetSize; f.run.FinalRSA.Steps > 0 && len(held) > 0 {
		sizes = append(sizes, subsetSize{fmt.Sprintf("the final RSA's %d candidates a prompt (--final-rsa-steps 0 runs none)", k), k})
	}
	if err := checkAggregateTemplate(tmpl, f.tmpl, sizes...); err != nil {
		return err
	}
	arts, err := f.params.artifacts()
	if err != nil {
		return usageError{err}
	}
	// The run directory is locked before the engine is checked, which
	// waits up to --engine-timeout for a server still loading its model,
	// and before the policy's artifacts are built into it: a second
	// process is refused at once, before it loads the model or rewrites
	// the running run's artifacts. A first run refused before it starts
	// (a --lora-rank past the model's projections, say) leaves nothing
	// new (runLock.release).
	lock, err := lockRunDir(f.run.Dir)
	if err != nil {
		return err
	}
	defer func() { err = lock.release(err) }()
	// An rsa.json in --out without the metrics.jsonl a run writes at its
	// first step is an evaluation's report (eval --mode rsa into the
	// directory): the final RSA evaluation removed it before the last step
	// and wrote the run's in its place, beside the evaluation's plot and
	// traces (--fresh moved it aside alone, leaving those). Checked under
	// the lock, which such an evaluation holds while it runs
	// (lockEvalOutput): one that ended just before is seen.
	if f.run.FinalRSA.Steps > 0 && len(held) > 0 {
		if err := refuseEvalReport(f.run.Dir); err != nil {
			return err
		}
	}
	// An sft run killed within or after its model's commit left its
	// checkpoints and sft.jsonl.partial (the committed sft.jsonl's very
	// file) to the next sft there: they go first, as sft and tensorboard
	// remove them, rather than refusing the run for the finished sft's
	// checkpoints, or, with --fresh, leaving the partial log, which made
	// the next sft or tensorboard there remove this run's checkpoints.
	if err := rl.FinishCommittedSFT(f.run.Dir); err != nil {
		return fmt.Errorf("--out %s: %w", f.run.Dir, err)
	}
	// A checkpoints that is a file, which the resume cannot list, is
	// refused now rather than after the engine check and the artifacts'
	// build; --fresh moves it aside.
	if !f.run.Fresh {
		if err := refuseCheckpointsFile(f.run.Dir); err != nil {
			return err
		}
	}
	trainCandidates := 0 // GRPO renders no aggregation prompt
	if f.cfg.Algo != rl.AlgoGRPO {
		trainCandidates = f.cfg.Pipeline.N
	}
	modelID, err := model.SourceID(sess.onnx)
	if err != nil {
		return err
	}
	tokID, err := sess.tokenizerID()
	if err != nil {
		return err
	}
	tokBytes, err := sess.tokenizerBytesID()
	if err != nil {
		return err
	}
	var lora *lmgraph.LoRA // the run's settings record none for a full fine-tune
	if arts.LoRA.Enabled() {
		lora = &arts.LoRA
	}
	cfg := f.cfg
	if cfg.MicroBatchTokens == 0 {
		cfg.MicroBatchTokens = autoMicroBatchTokens(sess.onnx, env.stderr)
	}
	cfg.SeparateRows = !f.packPrompts
	cfg.Reward = f.reward.rule
	lr := f.lr
	if lr == 0 {
		lr = modelLR
		if sess.embedded {
			lr = embeddedLR
		}
	}
	sched := optim.Schedule{PeakLR: lr, WarmupSteps: int64(f.warmup)}
	if err := sched.Validate(); err != nil {
		return usageError{err}
	}
	// settings are the run's, sampling with c, its usable problems of
	// the content id dataID ("" before they are fitted to the context).
	settings := func(c rollout.SamplerConfig, dataID string) rl.RunSettings {
		cfg := cfg
		cfg.Pipeline.PromptLimit = promptLimit(c)
		return rl.RunSettings{Model: sess.name(), ModelID: modelID, Data: dataName, DataPath: dataPath, DataID: dataID, RL: cfg, Schedule: sched,
			Sampling: rl.SamplingSettings(c.Temperature, c.TopP, c.TopK, c.MaxNewTokens, arts.Selection.String(), tmpl.prints()),
			LoRA:     lora, Tokenizer: tokID, TokenizerBytes: tokBytes}
	}
	// A run of another model, data set, algorithm or LoRA setting, or
	// whose checkpoints hold other parameters than --train and --freeze
	// select, is refused before the serving engine is waited for (up to
	// --engine-timeout) and before its directory's artifacts are built
	// again for this one (minutes, for a real model), as resuming would
	// refuse it. The problems the run draws from are known by content
	// (dataID, below) only once the engine's context says which fit:
	// where the data's name and file do not tell, those of them that fit
	// as many as the run's do are compared (usableDigest). So is a run of
	// another tokenizer, a setting (--override lets it differ) known
	// before the engine: the prompts it is sent are spiral's token ids. A
	// --train or --freeze that selects nothing, found as the parameters
	// they select are compared with the checkpoint's, is the usage error
	// it is into a new --out.
	if !f.run.Fresh {
		now := rl.RunSettings{Model: sess.name(), ModelID: modelID, Data: dataName, DataPath: dataPath, RL: rl.Config{Algo: f.cfg.Algo}, LoRA: lora,
			Sampling: map[string]any{"selection": arts.Selection.String()}}
		if !f.run.Override {
			now.Tokenizer, now.TokenizerBytes = tokID, tokBytes
		}
		usable := func(n int) (string, error) { return usableDigest(sess, tmpl, ds.Problems, trainCandidates, n) }
		if err := rl.CheckRunIdentity(f.run.Dir, now, usable, func() ([]string, error) { return model.TrainedParameters(sess.onnx, arts.Selection) }); err != nil {
			return modelFlagUsage(err)
		}
		// The other settings, but those that depend on the model's
		// context, which the engine may serve below config.json's: a
		// rerun with another --seed or --lr is refused at once, not after
		// a wait of up to --engine-timeout (or the engine's error). The
		// sampling flags' warnings are engineSamplerConfig's to say;
		// the trace length is the context's where not given (traceLength).
		c, err := sess.samplerConfig(f.sf, onTask, 0, io.Discard)
		if err != nil {
			return err
		}
		traceByContext := f.sf.cfg.MaxNewTokens == 0 && !(sess.embedded || onTask)
		parts := rl.RunParts{Held: held, HeldName: heldName, HeldPath: heldPath, Settings: settings(c, ""), CRLFTemplates: tmpl.crlfDigest()}
		if err := rl.CheckSettingsBeforeEngine(f.run, parts, traceByContext); err != nil {
			return err
		}
		if err := refuseSFTLog(f.run.Dir); err != nil {
			return err
		}
		if err := refuseSFTEvents(f.run.Dir); err != nil {
			return err
		}
	}
	// The sampling settings and the problems that fit the context are
	// checked before the graphs are built into the run directory.
	syncDir := "" // where an engine that loads from disk names its model
	if f.sync.mode == "sglang" {
		syncDir = f.sync.dir
	}
	samplerCfg, _, sglangListed, err := sess.engineSamplerConfig(ctx, f.engine, syncDir, f.sf, onTask, env.stderr)
	if err != nil {
		return err
	}
	problems, err := fitContext(sess, tmpl, ds.Problems, samplerCfg, trainCandidates, env.stderr)
	if err != nil {
		return err
	}
	aggCandidates := 0 // none: no aggregation prompt is rendered
	if len(sizes) > 0 {
		aggCandidates = sizes[0].n
	}
	if err := warnUnreadable(sess, tmpl, problems, aggCandidates, env.stderr); err != nil {
		return err
	}
	if len(problems) == 0 {
		return fmt.Errorf("no usable problems in %s: the %s %s for the model (listed above)", dataName, rollout.Plural(len(ds.Problems), "problem"), tooLong(len(ds.Problems)))
	}
	usable := "problem" // what a step draws from: the problems that fit
	if len(problems) < len(ds.Problems) {
		ds, usable = data.NewDataset(ds.Path, problems), "usable problem"
	}
	if n := len(ds.Problems); f.cfg.Problems > n {
		them := "some of them"
		if n == 1 {
			them = "it"
		}
		fmt.Fprintf(env.stderr, "spiral: warning: --problems %d is more than the %s of %s: a step draws %s more than once\n", f.cfg.Problems, rollout.Plural(n, usable), dataName, them)
	}
	// The held-out problems are fitted as spiral eval --limit fits its
	// own: the first --eval-problems, less those too long for the model,
	// so that no evaluation fails on one after hours of training.
	heldSkipped := 0
	if n := len(held); n > 0 {
		heldCandidates := 0 // held-out pass@1 and majority render no aggregation prompt
		if f.run.FinalRSA.Steps > 0 {
			heldCandidates = f.run.FinalRSA.SubsetSize
		}
		if held, err = fitContext(sess, tmpl, held, samplerCfg, heldCandidates, env.stderr); err != nil {
			return err
		}
		if len(held) == 0 {
			return fmt.Errorf("no held-out problems to evaluate: the first %s of %s %s for the model (listed above)", rollout.Plural(n, "problem"), heldName, tooLong(n))
		}
		// As the training problems are (warnUnreadable): one the
		// tokenizer encodes to no token would be evaluated as none.
		if err := refuseLost(sess, tmpl, held, heldCandidates); err != nil {
			return err
		}
		heldSkipped = n - len(held)
	}
	// The problems the run draws from by content, as its data cursor
	// records them: the file moved still resumes.
	dataID := data.ProblemsDigest(ds.Problems)
	// Of the problems each draws from: one too long for training is not
	// trained, so not counted as new by the held-out accuracy.
	if shared := data.Shared(ds.Problems, held); len(shared) > 0 {
		are, first, them := "are training problems", "the first: ", "them"
		if len(shared) == 1 {
			are, first, them = "is a training problem", "", "it"
		}
		fmt.Fprintf(env.stderr, "spiral: warning: %d of the %s of %s %s of %s too (%s%s at %s): the held-out accuracy counts %s as new; give held-out problems that --data lacks\n",
			len(shared), rollout.Plural(len(held), "held-out problem"), heldName, are, dataName, first, shared[0].ID, shared[0].Source, them)
	}
	cfg.Pipeline.PromptLimit = promptLimit(samplerCfg)
	stream := data.NewStream(ds, cfg.Seed)
	run := f.run
	run.FinalRSA.CandidateTokens, run.FinalRSA.PromptLimit = cfg.Pipeline.CandidateTokens, cfg.Pipeline.PromptLimit
	parts := rl.RunParts{Problems: stream, Held: held, HeldName: heldName, HeldPath: heldPath, Settings: settings(samplerCfg, dataID), CRLFTemplates: tmpl.crlfDigest(),
		SGLangListed: sglangListed}
	// A rerun with other settings (without --override) or on other
	// usable problems is refused before the policy is loaded, which
	// reads the model's weights (minutes, for a real model), as resuming
	// would refuse it.
	if err := rl.CheckRunSettings(run, parts); err != nil {
		return err
	}
	// The learner's policy is over the ids the sampler draws from, the
	// tokenizer's; a tokenizer with more ids than the model's logits is
	// refused there (sess.vocabError).
	eo := f.exec.options()
	eo.VocabLimit = samplerCfg.VocabLimit
	pol, err := model.OpenPolicy(ctx, sess.rt, sess.onnx, filepath.Join(f.run.Dir, rl.ArtifactsDir), model.PolicyOptions{Train: true, Executor: eo, Artifacts: arts, Seed: f.cfg.Seed})
	if err != nil {
		return modelFlagUsage(sess.vocabError(err))
	}
	defer pol.Close()
	// Packing is for a subset's aggregation traces: grpo and search-only
	// train a question's traces, long completions of a short prompt,
	// which cost more packed than apart (rl.worthPacking).
	if f.packPrompts && (cfg.Algo == rl.AlgoSpiral || cfg.Algo == rl.AlgoAggOnly) {
		noteUnpackedRows(env.stderr, "--pack-prompts", sess.name(), pol.Train, "each trace trains in a row of its own, as with --pack-prompts=false")
	}
	opt, err := optim.NewAdamW(optim.DefaultConfig(), pol.Weights)
	if err != nil {
		return err
	}
	useDeviceOptimizer(env, pol, opt)
	sampler, err := sess.generator(f.engine, pol, samplerCfg, env.stderr)
	if err != nil {
		return err
	}
	engineSync, err := weightSync(sess, f.sync, sampler, arts, pol)
	if err != nil {
		return err
	}
	judge := rl.NewJudge(f.reward.rule)
	prompter := sess.prompter(tmpl)
	tr, err := rl.NewTrainer(cfg, rl.TrainerParts{
		Generator: sampler, Prompter: prompter, Judge: judge, Learner: pol.Train, Problems: stream,
		Weights: pol.Weights, Grads: pol.Grads, Optimizer: opt, Schedule: sched, Sync: engineSync,
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(env.stdout, "spiral train: %s on %s (%s), algo %s, %s, lr %g, %d new tokens a trace, out %s\n",
		sess.name(), dataName, rollout.Plural(ds.Len(), "problem"), cfg.Algo, rollout.Plural(f.run.Steps, "step"), lr, samplerCfg.MaxNewTokens, f.run.Dir)
	lock.started = true
	parts.Trainer, parts.Weights, parts.Optimizer = tr, pol.Weights, opt
	parts.Evaluator = rollout.Evaluator{Gen: sampler, Prompter: prompter, Judge: judge}
	parts.ReportExtra, parts.Model = reportExtra(samplerCfg, f.reward.rule, tmpl, f.tmpl, heldSkipped), sess.reportName()
	parts.Out, parts.Warn = env.stdout, env.stderr
	parts.Progress = func(desc string) (func(int), func()) {
		bar := con.progress(-1, desc, "tok")
		return bar.add, bar.done
	}
	return rl.Run(ctx, run, parts)
}

// noteUnpackedRows notes on w, where learner (model name's) cannot train
// packed rows (model.Executor.PackedRows), which flag asks for, why, and
// how its rows train instead (apart); nothing where it can.
func noteUnpackedRows(w io.Writer, flag, name string, learner interface{ PackedRows() error }, apart string) {
	if err := learner.PackedRows(); err != nil {
		fmt.Fprintf(w, "spiral: note: %s: %s cannot train packed rows (%v): %s\n", flag, name, err, apart)
	}
}

// autoMicroBatchTokens sizes training calls by what the executor keeps
// per token (every layer's input and one layer's working set; the loss
// and the MLPs run in chunks whatever the micro-batch): 4 GiB of them,
// within 512..16384, for a model whose config.json is beside it
// (Qwen3-0.6B: 16,384 tokens, Qwen3-4B: 7,013; a Qwen2, Llama or
// Mistral config.json read as plan reads it, memplan.ParseConfig);
// without one, 4,096, and with one it cannot read too, each noted on
// warn with the file. A row longer than the bound is a micro-batch of its
// own.
func autoMicroBatchTokens(modelPath string, warn io.Writer) int {
	const fallback = 4096
	path := filepath.Join(filepath.Dir(modelPath), model.ConfigFile)
	a, err := memplan.LoadConfig(path)
	if errors.Is(err, fs.ErrNotExist) {
		fmt.Fprintf(warn, "spiral: note: --micro-batch-tokens auto: there is no %s, whose shape sizes training calls: training calls of %d tokens (give --micro-batch-tokens to choose)\n", path, fallback)
		return fallback
	}
	if err != nil {
		fmt.Fprintf(warn, "spiral: note: --micro-batch-tokens auto: %v; training calls of %d tokens (give --micro-batch-tokens to choose)\n", err, fallback)
		return fallback
	}
	return memplan.MicroBatchTokens(a, 4<<30)
}

// weightSync returns how the serving engine gen gets the trained weights
// (nil for the local sampler, which reads the store itself): vLLM loads
// each step's LoRA adapter (peft export), SGLang each step's Hugging Face
// export (LoRA merged).
func weightSync(sess *modelSession, f syncFlags, gen rollout.Generator, arts model.ArtifactOptions, pol *model.Policy) (rollout.WeightSync, error) {
	eng, ok := gen.(*rollout.OpenAI)
	if !ok {
		return nil, nil
	}
	if err := os.MkdirAll(f.dir, 0o777); err != nil {
		return nil, outError("--sync-dir", f.dir, err)
	}
	if f.mode == "vllm-lora" {
		base := eng.Model()
		export := func(ctx context.Context, dir string) error { // adapters: small, written at once
			_, err := model.ExportPEFT(ctx, sess.onnx, arts.LoRA, pol.Weights, base, "", dir)
			return err
		}
		return &rollout.VLLMLoRASync{Engine: eng, Dir: f.dir, Export: export}, nil
	}
	tokFiles, err := sess.tok.HFConfigFiles()
	if err != nil {
		return nil, err
	}
	export := func(ctx context.Context, dir string) error {
		_, err := model.ExportHF(ctx, sess.onnx, sess.tokenizer, dir, pol.Weights, arts.LoRA, tokFiles, false)
		return err
	}
	return &rollout.SGLangDiskSync{Engine: eng, Dir: f.dir, Export: export}, nil
}

// refuseCheckpointsFile refuses the run directory dir whose checkpoints
// (rl.CheckpointsDir) is a file, or a link to one: a usage error that
// names it.
func refuseCheckpointsFile(dir string) error {
	path := filepath.Join(dir, rl.CheckpointsDir)
	fi, err := os.Stat(path)
	if err != nil || fi.IsDir() {
		return nil // none yet, or the resume's to report
	}
	return usageError{fmt.Errorf("--out %s: %s is a file, not a directory of checkpoints: move it away, or use --fresh (which moves it aside into previous-*)", dir, path)}
}

// refuseEvalReport refuses (a usage error) a run directory dir holding
// an evaluation's rsa.json: one without the metrics.jsonl beside it that
// every run writes before its final RSA report.
func refuseEvalReport(dir string) error {
	if _, err := os.Stat(filepath.Join(dir, rl.FinalRSAFile)); err != nil {
		return nil
	}
	if _, err := os.Stat(filepath.Join(dir, rl.MetricsFile)); !errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	// A train --fresh killed while it set the run aside may have left
	// its metrics.jsonl in the pending directory, and rsa.json in dir:
	// the run's lock puts it back.
	if rl.AsidePending(dir, rl.MetricsFile) != "" {
		return nil
	}
	return usageError{fmt.Errorf("--out %s holds %s but no %s: an evaluation's report (spiral eval --mode rsa), not a training run's, which the run's final RSA evaluation would replace; give another --out (or --final-rsa-steps 0)",
		dir, rl.FinalRSAFile, rl.MetricsFile)}
}

// refuseSFTLog refuses (a usage error) an --out holding the log of an
// interrupted spiral sft run (sft.jsonl.partial; that of one killed
// within or after its commit is gone by now, rl.FinishCommittedSFT), as
// one holding its checkpoints is refused (rl.CheckRunIdentity): an sft
// run interrupted before its first checkpoint left its log alone, and
// train trained beside it. --fresh moves it aside.
func refuseSFTLog(dir string) error {
	name := rl.SFTLogFile + rl.PartialSuffix
	if _, err := os.Lstat(filepath.Join(dir, name)); err != nil {
		return nil
	}
	return usageError{fmt.Errorf("--out %s holds the log of an interrupted spiral sft run (%s), not of train: use another --out, or --fresh (which moves it aside into previous-*)", dir, name)}
}

// refuseSFTEvents refuses (a usage error) an --out holding a finished
// spiral sft run (sft.jsonl, without a train run's metrics.jsonl) whose
// tensorboard/ holds event files: that run's (sft --tensorboard, or
// spiral tensorboard), which the train run, starting over without a
// checkpoint, would remove (rl.Run cuts every event there away, as it
// cuts its logs). --fresh moves them aside. Without events there, train
// runs beside the finished sft.
func refuseSFTEvents(dir string) error {
	if _, err := os.Lstat(filepath.Join(dir, rl.SFTLogFile)); err != nil {
		return nil
	}
	if _, err := os.Lstat(filepath.Join(dir, rl.MetricsFile)); err == nil {
		return nil // the train run's own events, or none of sft's left
	}
	tb := filepath.Join(dir, rl.TensorBoardDir)
	if files, err := tfevents.Files(tb); err != nil || len(files) == 0 {
		return nil // one that cannot be listed is the run's to warn of
	}
	return usageError{fmt.Errorf("--out %s holds the TensorBoard events of the spiral sft run whose log is %s (%s), which train would remove as it starts: use another --out, or --fresh (which moves them aside into previous-*)", dir, rl.SFTLogFile, tb)}
}
