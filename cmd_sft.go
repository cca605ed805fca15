package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/spf13/pflag"

	"github.com/spiral-rl/spiral/data/synth"
	"github.com/spiral-rl/spiral/model"
	"github.com/spiral-rl/spiral/model/atomicfile"
	"github.com/spiral-rl/spiral/model/checkpoint"
	"github.com/spiral-rl/spiral/model/onnx"
	"github.com/spiral-rl/spiral/model/optim"
	"github.com/spiral-rl/spiral/model/smallfile"
	"github.com/spiral-rl/spiral/rl"
	"github.com/spiral-rl/spiral/rollout"
)

func setupSFT(fs *pflag.FlagSet) func(context.Context, *cliEnv, []string) error {
	return flagsCommand[sftFlags](fs, runSFT)
}

// runSFT wires the supervised warm start on the embedded task: the model's
// policy, AdamW with a cosine schedule, the task, then rl.RunSFT, which
// checkpoints into --out/checkpoints and resumes from there; the trained
// weights are exported to --out as a model directory, and the
// checkpoints removed.
func runSFT(ctx context.Context, env *cliEnv, f *sftFlags) (err error) {
	// Before ONNX Runtime is looked for, as train's (checkInputs).
	if err := refuseUnderFile("--out", f.out); err != nil {
		return err
	}
	con := newConsole(env.stderr, f.quiet)
	env = con.on(env)
	for _, w := range f.ignoredFlags() {
		fmt.Fprintf(env.stderr, "spiral: warning: %s\n", w)
	}
	task, err := synth.Embedded()
	if err != nil {
		return err
	}
	// The evaluations' problems, before anything is written: too many
	// fail here rather than at the first evaluation, after --eval-every
	// steps of training.
	if _, err := rl.SynthEvalProblems(task, f.cfg.EvalProblems, f.cfg.Seed); err != nil {
		return evalProblemsError(f.cfg.EvalProblems, err)
	}
	sess, err := openSession(env, &f.rf, &f.mf)
	if err != nil {
		return err
	}
	defer sess.close()
	hf, err := sess.hfConfig()
	if err != nil {
		return err
	}
	f.cfg.ContextLength = hf.MaxPositionEmbeddings
	w, err := sess.noContextWarning("its examples and --candidates are not checked against it")
	if err != nil {
		return err
	}
	if w != "" {
		fmt.Fprintf(env.stderr, "spiral: warning: %s\n", w)
	}
	stops, err := sess.stopIDs(env.stderr)
	if err != nil {
		return err
	}
	// Each candidate takes a token of an aggregation prompt at least: as
	// many as the model's positions never fit, and a step's worth of such
	// prompts (a million candidates each, say) takes gigabytes to draw
	// before the first step's check of their length refuses them. A run
	// that draws no aggregation example and evaluates nothing reads no
	// --candidates (ignoredFlags).
	readsCandidates := f.cfg.Mix.AggregateShare > 0 || f.cfg.EvalProblems > 0
	if n, c := f.cfg.ContextLength, f.cfg.Mix.Candidates; readsCandidates && n > 0 && c >= n {
		return usageError{fmt.Errorf("--candidates %d: an aggregation prompt of %d candidates passes the model's %d positions (config.json max_position_embeddings), each candidate taking a token at least: give fewer", c, c, n)}
	}
	// The task's templates, by which the examples' aggregation prompts
	// are rendered again (rl.SFTExample).
	pr := sess.prompter(templateSet{synth.Templates()})
	if readsCandidates {
		if err := checkCandidatesFit(task, pr, f.cfg); err != nil {
			return err
		}
	}
	if model.SameFile(f.out, filepath.Dir(sess.onnx)) {
		return usageError{fmt.Errorf("--out %s is the directory of --model: sft would write its model.onnx over the model it starts from; give another --out", f.out)}
	}
	// Locked as a run directory is: a second sft into --out is refused
	// before it checks what is there, rather than sharing the log's
	// .partial file and committing the model over the other's. A first
	// run refused before it starts leaves nothing new (runLock.release).
	lock, err := lockRunDir(f.out)
	if err != nil {
		return err
	}
	defer func() { err = lock.release(err) }()
	// A run killed while it moved its model in from the stage left part
	// of it there: that model is whole again before --out is looked at.
	// One killed after its commit began (within it, finished just now,
	// or after it) has its log moved in but its checkpoints not removed:
	// its model is written, and they go as they would have.
	if err := rl.FinishCommittedSFT(f.out); err != nil {
		return fmt.Errorf("--out %s: %w", f.out, err)
	}
	// The stage of a run killed before its commit began can hold a
	// whole model: it goes now, not at this run's own stage, after its
	// training.
	atomicfile.RemoveAbandonedStages(f.out)
	if err := refuseOverwrite(f.out, f.overwrite); err != nil {
		return err
	}
	if !f.cfg.Fresh {
		if err := refuseForeignCheckpoints(f.out); err != nil {
			return err
		}
	}
	arts, err := f.params.artifacts()
	if err != nil {
		return usageError{err}
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
	replyHead := sess.tok.ReplyHead()
	settings := rl.SFTSettings{Model: sess.name(), ModelID: modelID, Selection: arts.Selection.String(), Tokenizer: tokID, TokenizerBytes: tokBytes, ReplyHead: &replyHead}
	if arts.LoRA.Enabled() {
		settings.LoRA = &arts.LoRA
	}
	// A run of another model or LoRA setting, or of spiral train, or one
	// whose checkpoints hold other parameters than --train and --freeze
	// select, is refused before the directory's artifacts are built again
	// for this one, as train refuses it (rl.CheckRunIdentity); a --train
	// or --freeze that selects nothing is the usage error it is there.
	if !f.cfg.Fresh {
		if err := rl.CheckSFTRunIdentity(f.out, settings, func() ([]string, error) { return model.TrainedParameters(sess.onnx, arts.Selection) }); err != nil {
			return modelFlagUsage(err)
		}
		if err := refuseTrainLogs(f.out); err != nil {
			return err
		}
	}
	sched := optim.Schedule{PeakLR: f.lr, WarmupSteps: int64(f.warmup), Decay: optim.Cosine,
		TotalSteps: int64(max(f.cfg.Steps, f.warmup+1)), MinLR: f.lr / 10}
	if err := sched.Validate(); err != nil {
		return usageError{err}
	}
	// A rerun with other settings (without --override) is refused before
	// the policy is loaded, which reads the model's weights (minutes, for
	// a real model), as resuming would refuse it.
	if err := rl.CheckSFTRunSettings(f.cfg, rl.SFTParts{Dir: f.out, Settings: settings, Schedule: sched}); err != nil {
		return err
	}
	// The policy is over the tokenizer's ids, those its greedy evaluation
	// draws from (VocabLimit below); a tokenizer with more ids than the
	// model's logits is refused there (sess.vocabError).
	eo := f.exec.options()
	eo.VocabLimit = sess.tok.VocabSize()
	pol, err := model.OpenPolicy(ctx, sess.rt, sess.onnx, filepath.Join(f.out, rl.ArtifactsDir), model.PolicyOptions{Train: true, Executor: eo, Artifacts: arts, Seed: f.cfg.Seed})
	if err != nil {
		return modelFlagUsage(sess.vocabError(err))
	}
	defer pol.Close()
	opt, err := optim.NewAdamW(optim.DefaultConfig(), pol.Weights)
	if err != nil {
		return err
	}
	// On the device layer (--device cuda) the gradients and AdamW stay in
	// device memory, as train's do; rl.RunSFT brings the host weights and
	// moments up to date before each checkpoint and at the end, for the
	// export below.
	useDeviceOptimizer(env, pol, opt)
	// The log goes to sft.jsonl.partial until the model is written (a run
	// that fails or is interrupted leaves the model and sft.jsonl of the
	// one before it, --overwrite, as they were), the checkpoints to
	// checkpoints/, from which the same command run again resumes.
	bar := con.progress(f.cfg.Steps, "sft", "steps")
	lock.started = true
	err = rl.RunSFT(ctx, f.cfg, rl.SFTParts{
		Policy: pol, Optimizer: opt, Schedule: sched, Task: task, Prompter: pr,
		StopIDs: stops, VocabLimit: eo.VocabLimit,
		Judge: rl.NewJudge(rl.RewardRule{}), Dir: f.out, Settings: settings, Out: env.stdout, Warn: env.stderr, Progress: bar.add,
	})
	bar.done()
	if err != nil {
		return err
	}
	// The model, its tokenizer and config and the log are written in a
	// stage in --out and moved in together at the end: an interruption
	// while they are written leaves --out's files as they were.
	stage, err := atomicfile.NewStage(f.out)
	if err != nil {
		return err
	}
	defer stage.Discard()
	interrupted := func(err error) error {
		fmt.Fprintln(env.stderr, "spiral: interrupted while the model was written; its last step is saved: rerun the command to write it")
		return err
	}
	if _, _, err := model.ExportTrained(ctx, sess.onnx, arts.LoRA, pol.Weights, filepath.Join(stage.Dir(), "model.onnx"), false, nil); err != nil {
		if ctx.Err() != nil {
			return interrupted(err)
		}
		return err
	}
	// config.json (without its _name_or_path, which names the model sft
	// started from: model.TrainedConfig; its dtype float32, the weights':
	// model.Float32Config) and the tokenizer's files
	// (tokenizer_config.json with its chat template...) and generation
	// defaults, as export copies them: a file the model lacks goes from
	// --out at the commit, since one left there by the model that
	// --overwrite replaced describes that model.
	names := []string{"model.onnx" + onnx.DataFileSuffix, "model.onnx"}
	for _, c := range model.ModelSideFiles(sess.onnx, sess.tokenizer) {
		names = append(names, c.Name)
		b, err := smallfile.ReadRegular(c.From, smallfile.Limit)
		if c.Name != "tokenizer.json" && errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		if c.Name == model.ConfigFile {
			if b, err = model.TrainedConfig(b); err == nil {
				b, err = model.Float32Config(b)
			}
			if err != nil {
				return fmt.Errorf("%s: %w", c.From, err)
			}
		}
		if err := atomicfile.WriteFile(filepath.Join(stage.Dir(), c.Name), b, 0o666); err != nil {
			return fmt.Errorf("copy %s: %w", c.From, err)
		}
	}
	// The log is linked (or copied) into the stage, not moved: until the
	// commit, a rerun resumes from the last checkpoint with the whole log.
	partial, staged := filepath.Join(f.out, rl.SFTLogFile+rl.PartialSuffix), filepath.Join(stage.Dir(), rl.SFTLogFile)
	if err := os.Link(partial, staged); err != nil {
		if err := copyFile(partial, staged); err != nil {
			return err
		}
	}
	// A Ctrl-C after the model's last tensor (while its graph was
	// written, or the files beside it) leaves --out as it was too.
	if err := ctx.Err(); err != nil {
		return interrupted(err)
	}
	// The data file before the model that refers to it; the replaced
	// model's Hugging Face weights and adapter go (replacedModelFiles).
	if err := stage.Commit(append(append(names, rl.SFTLogFile), replacedModelFiles...)...); err != nil {
		return fmt.Errorf("--out %s: %w", f.out, err)
	}
	fmt.Fprintf(env.stdout, "wrote %s\n", filepath.Join(f.out, "model.onnx"))
	// The checkpoints served to resume the run; its model is written.
	if err := rl.RemoveSFTCheckpoints(f.out); err != nil {
		return fmt.Errorf("--out %s: the model is written, but its checkpoints were not removed: %w", f.out, err)
	}
	return nil
}

// checkCandidatesFit refuses a --candidates whose aggregation examples
// can pass the model's positions (cfg.ContextLength, when known): the
// task's longest (synth's LongestAggregate: the longest in tokens for a
// tokenizer of one token a character, as the embedded model's is; close
// to it for others) must fit, its prompt and completion when training
// draws aggregation examples, else its prompt and the one token the
// evaluations' greedy completions need. The first step or evaluation to
// draw a longer one failed, after minutes of training for a count that
// fits most examples. The usage error names the most candidates that fit.
func checkCandidatesFit(task *synth.Task, pr rollout.ChatPrompter, cfg rl.SFTConfig) error {
	positions, c := cfg.ContextLength, cfg.Mix.Candidates
	if positions == 0 {
		return nil
	}
	size := func(n int) (int, error) {
		ex, err := task.LongestAggregate(n)
		if err != nil {
			return 0, err
		}
		e, err := rl.SFTExample(pr, ex)
		if err != nil {
			return 0, err
		}
		completion := 1
		if cfg.Mix.AggregateShare > 0 {
			completion = len(e.Completion)
		}
		return len(e.Prompt) + completion, nil
	}
	l, err := size(c)
	if err != nil || l <= positions {
		return err
	}
	lo, hi := 0, c // the most that fit lies in [lo, hi)
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		m, err := size(mid)
		if err != nil {
			return err
		}
		if m <= positions {
			lo = mid
		} else {
			hi = mid
		}
	}
	limit := fmt.Sprintf("give at most %d", lo)
	if lo == 0 {
		limit = "no count of candidates fits"
	}
	return usageError{fmt.Errorf("--candidates %d: the task's longest aggregation example of %d candidates takes %d tokens, past the model's %d positions (config.json max_position_embeddings), so any step or evaluation could draw one and fail: %s",
		c, c, l, positions, limit)}
}

// refuseForeignCheckpoints refuses, as a usage error, an sft --out (dir)
// whose checkpoints/ is not a directory, or holds what spiral's
// checkpoints do not (another tool's checkpoints): sft removes its
// checkpoints/ whole once its model is written (rl.RemoveSFTCheckpoints),
// and could save none into a file. --fresh moves it aside instead.
func refuseForeignCheckpoints(dir string) error {
	ckpts := filepath.Join(dir, rl.CheckpointsDir)
	if st, err := os.Stat(ckpts); err == nil && !st.IsDir() {
		return usageError{fmt.Errorf("--out %s: %s is a file, where sft saves its checkpoints: move it away, or give another --out", dir, ckpts)}
	}
	others, err := checkpoint.Foreign(ckpts)
	if err != nil {
		return fmt.Errorf("--out %s: %w", dir, err)
	}
	if len(others) > 0 {
		return usageError{fmt.Errorf("--out %s: %s holds %s, which is no spiral checkpoint: sft removes %s once its model is written, so it would go too; move it away, or give another --out (or --fresh, which moves %s aside into previous-*)",
			dir, ckpts, filepath.Join(ckpts, others[0]), ckpts, ckpts)}
	}
	return nil
}

// refuseTrainLogs refuses (a usage error) an --out holding the logs of a
// spiral train run (metrics.jsonl, eval.jsonl), as one holding its
// checkpoints is refused (rl.CheckSFTRunIdentity): a train run killed
// before its first checkpoint left its logs alone, and sft trained beside
// them, which spiral tensorboard then converted rather than sft.jsonl.
// --fresh moves them aside with the rest of that run.
func refuseTrainLogs(dir string) error {
	for _, name := range []string{rl.MetricsFile, rl.EvalFile} {
		if _, err := os.Lstat(filepath.Join(dir, name)); err == nil {
			return usageError{fmt.Errorf("--out %s holds the logs of a spiral train run (%s), not of sft: use another --out, or --fresh (which moves them aside into previous-*)", dir, name)}
		}
	}
	return nil
}
