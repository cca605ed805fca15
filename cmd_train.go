package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/pflag"

	"github.com/spiral-rl/spiral/data"
	"github.com/spiral-rl/spiral/data/synth"
	"github.com/spiral-rl/spiral/grader"
	"github.com/spiral-rl/spiral/model"
	"github.com/spiral-rl/spiral/model/checkpoint"
	"github.com/spiral-rl/spiral/model/optim"
	"github.com/spiral-rl/spiral/rl"
	"github.com/spiral-rl/spiral/rollout"
	"github.com/spiral-rl/spiral/rollout/report"
)

// trainFlags are the flags of `spiral train`.
type trainFlags struct {
	rf       runtimeFlags
	mf       modelFlags
	df       dataFlags
	sf       samplingFlags
	data     string
	out      string
	cfg      rl.Config
	steps    int
	lr       float64
	warmup   int
	ckptEach int
	keep     int
	fresh    bool
	quiet    bool
	tmplS    string
	tmplA    string
	evalData string
	evalN    int
	evalK    int
	evalEach int
}

// samplingFlags configure generation.
type samplingFlags struct {
	temperature, topP float64
	topK              int
	maxNew            int
	batch             int
}

// Default trace lengths when --max-new-tokens is 0: the embedded task's
// solutions are under 60 characters; real models reason for thousands of
// tokens.
const (
	embeddedMaxNewTokens = 96
	modelMaxNewTokens    = 4096
)

func (f *samplingFlags) register(fs *pflag.FlagSet) {
	fs.Float64Var(&f.temperature, "temperature", 1.0, "sampling temperature (0 = greedy)")
	fs.Float64Var(&f.topP, "top-p", 1.0, "nucleus sampling mass (1 = off)")
	fs.IntVar(&f.topK, "top-k", 0, "keep the k most probable tokens (0 = off)")
	fs.IntVar(&f.maxNew, "max-new-tokens", 0, "tokens per trace (0 = 96 for the embedded model, 4096 for a given one)")
	fs.IntVar(&f.batch, "gen-batch", 64, "rows decoded together")
}

// config returns the sampler configuration; embedded picks the default
// trace length.
func (f *samplingFlags) config(tokStop []int32, vocabLimit int, embedded bool) rollout.SamplerConfig {
	if f.maxNew == 0 {
		f.maxNew = modelMaxNewTokens
		if embedded {
			f.maxNew = embeddedMaxNewTokens
		}
	}
	return rollout.SamplerConfig{Temperature: f.temperature, TopP: f.topP, TopK: f.topK, MaxNewTokens: f.maxNew,
		StopIDs: tokStop, VocabLimit: vocabLimit, BatchSize: f.batch, Refill: true}
}

func setupTrain(fs *pflag.FlagSet) func(context.Context, *cliEnv, []string) error {
	var f trainFlags
	f.rf.register(fs)
	f.mf.register(fs)
	f.df.register(fs)
	f.sf.register(fs)
	fs.StringVar(&f.data, "data", "", "training problems: JSONL, JSON or Parquet (default: the embedded arithmetic task)")
	fs.StringVar(&f.out, "out", "runs/spiral", "run directory: metrics.jsonl, checkpoints/, artifacts/, plots")
	fs.StringVar(&f.cfg.Algo, "algo", rl.AlgoSpiral, "algorithm: spiral, grpo, or agg-only")
	fs.IntVar(&f.steps, "steps", 50, "training steps")
	fs.IntVar(&f.cfg.Problems, "problems", 8, "informative problems per step")
	fs.IntVar(&f.cfg.MaxDrawRounds, "draw-rounds", 4, "dynamic-sampling rounds per step")
	fs.IntVar(&f.cfg.Pipeline.N1, "n1", 8, "search traces per problem")
	fs.IntVar(&f.cfg.Pipeline.K, "k", 4, "subsets per problem")
	fs.IntVar(&f.cfg.Pipeline.N, "n", 4, "traces per subset")
	fs.IntVar(&f.cfg.Pipeline.N2, "n2", 4, "aggregation traces per subset")
	fs.IntVar(&f.cfg.Pipeline.CandidateTokens, "candidate-tokens", 0, "cap on each candidate in an aggregation prompt, keeping its end (0 = no cap)")
	fs.IntVar(&f.cfg.GroupSize, "group", 24, "GRPO traces per problem")
	fs.Float64Var(&f.lr, "lr", 0, "peak learning rate (0 = 1e-4 for the embedded tiny model, 1e-6 for a given model, the paper's scale)")
	fs.IntVar(&f.warmup, "warmup", 5, "warmup steps")
	fs.Float64Var(&f.cfg.ClipLow, "clip-low", 0.2, "PPO clip bound below 1")
	fs.Float64Var(&f.cfg.ClipHigh, "clip-high", 0.28, "PPO clip bound above 1")
	fs.Float64Var(&f.cfg.MaxGradNorm, "max-grad-norm", 1.0, "global gradient-norm clip (< 0 = off)")
	fs.IntVar(&f.cfg.MicroBatchTokens, "micro-batch-tokens", 0, "rows x length per training call (0 = auto: 2^29 / vocab, so one logits buffer stays near 2 GiB, within 512..16384)")
	fs.BoolVar(&f.cfg.Advantage.ScaleSearch, "scale-search-adv", false, "divide set advantages by their std")
	fs.BoolVar(&f.cfg.Advantage.ScaleAggregation, "scale-agg-adv", false, "divide aggregation advantages by their subset's std")
	fs.Uint64Var(&f.cfg.Seed, "seed", 1, "random seed")
	fs.IntVar(&f.ckptEach, "checkpoint-every", 10, "checkpoint every N steps (and at the end or on Ctrl-C)")
	fs.IntVar(&f.keep, "keep", 3, "checkpoints to keep")
	fs.BoolVar(&f.fresh, "fresh", false, "ignore existing checkpoints in --out and start over")
	fs.StringVar(&f.tmplS, "search-template", "", "search prompt template file (default: built in)")
	fs.StringVar(&f.tmplA, "aggregate-template", "", "aggregation prompt template file (default: built in)")
	fs.BoolVar(&f.quiet, "quiet", false, "no progress bars")
	fs.StringVar(&f.evalData, "eval-data", "", "held-out problems evaluated during training (default: the embedded task's test split when training on it)")
	fs.IntVar(&f.evalEach, "eval-every", 10, "evaluate every N steps and at the end (0 = never)")
	fs.IntVar(&f.evalN, "eval-problems", 64, "held-out problems per evaluation")
	fs.IntVar(&f.evalK, "eval-samples", 4, "samples per held-out problem (pass@1 and majority@k are reported)")
	return func(ctx context.Context, env *cliEnv, args []string) error {
		if len(args) > 0 {
			return usageError{fmt.Errorf("unexpected arguments %q", args)}
		}
		if f.steps < 1 {
			return usageError{errors.New("--steps must be positive")}
		}
		return runTrain(ctx, env, &f)
	}
}

// autoMicroBatchTokens sizes training calls by the vocabulary: the
// training graph holds several [tokens, vocab] float32 buffers (logits,
// log-softmax, their gradients), so tokens x vocab is kept near 2^29
// (2 GiB per buffer): 3,533 tokens for Qwen3's 151,936 logits, the
// 16,384 cap for the embedded model.
func autoMicroBatchTokens(vocab int) int {
	return min(16384, max(512, (1<<29)/max(vocab, 1)))
}

// runConfig is what a run records in its checkpoints, so that a resumed
// run can refuse to continue with a different setup.
type runConfig struct {
	Model string    `json:"model"`
	Data  string    `json:"data"`
	RL    rl.Config `json:"rl"`
	LR    float64   `json:"lr"`
}

func runTrain(ctx context.Context, env *cliEnv, f *trainFlags) error {
	sess, err := openSession(env, &f.rf, &f.mf)
	if err != nil {
		return err
	}
	defer sess.close()
	r, rt, tok := sess.resolvedModel, sess.rt, sess.tok
	if err := os.MkdirAll(f.out, 0o755); err != nil {
		return err
	}

	// Problems and prompts: the embedded task uses its compact templates.
	var ds *data.Dataset
	tmpl, err := promptTemplates(f.data == "", f.tmplS, f.tmplA)
	if err != nil {
		return err
	}
	if f.data == "" {
		task, err := embeddedTask()
		if err != nil {
			return err
		}
		if ds, err = task.Dataset(synth.Train, 2000, embeddedTaskSeed); err != nil {
			return err
		}
	} else {
		if ds, err = data.Load(f.data, f.df.options()); err != nil {
			return err
		}
	}
	if ds.Len() == 0 {
		return fmt.Errorf("no usable problems in %s", f.data)
	}
	var held []data.Problem
	switch {
	case f.evalEach <= 0:
	case f.evalData != "":
		eds, err := data.Load(f.evalData, f.df.options())
		if err != nil {
			return err
		}
		held = eds.Problems
	case f.data == "":
		task, err := embeddedTask()
		if err != nil {
			return err
		}
		eds, err := task.Dataset(synth.Test, f.evalN, embeddedTaskSeed)
		if err != nil {
			return err
		}
		held = eds.Problems
	}
	if len(held) > f.evalN {
		held = held[:f.evalN]
	}

	pol, err := model.OpenPolicy(rt, r.onnx, filepath.Join(f.out, "artifacts"), model.PolicyOptions{Train: true})
	if err != nil {
		return err
	}
	defer pol.Close()
	opt, err := optim.NewAdamW(optim.DefaultConfig(), pol.Weights)
	if err != nil {
		return err
	}
	if f.lr == 0 {
		f.lr = 1e-6
		if r.embedded {
			f.lr = 1e-4
		}
	}
	sched := optim.Schedule{PeakLR: f.lr, WarmupSteps: int64(f.warmup)}
	if err := sched.Validate(); err != nil {
		return usageError{err}
	}
	if f.cfg.MicroBatchTokens == 0 {
		f.cfg.MicroBatchTokens = autoMicroBatchTokens(pol.LM.Signature().Vocab)
	}
	problems := data.NewSampler(ds, f.cfg.Seed)
	sampler, err := rollout.NewSampler(pol.LM, f.sf.config(tok.StopIDs(), min(tok.VocabSize(), pol.LM.Signature().Vocab), r.embedded), nil)
	if err != nil {
		return err
	}
	prompter := rollout.ChatPrompter{Tok: tok, Templates: tmpl}
	tr, err := rl.NewTrainer(f.cfg, rl.TrainerParts{
		Generator: sampler, Prompter: prompter, Learner: pol.Train,
		Judge:    func(resp, gold string) bool { return grader.Grade(resp, gold).Correct },
		Problems: problems, Weights: pol.Weights, MicroGrads: pol.Grads, Optimizer: opt, Schedule: sched,
	})
	if err != nil {
		return usageError{err}
	}
	dataName := f.data
	if dataName == "" {
		dataName = "embedded:synth"
	}
	modelName := r.onnx
	if r.embedded {
		modelName = "embedded"
	}
	rc := runConfig{Model: modelName, Data: dataName, RL: tr.Config(), LR: f.lr}
	rcJSON, _ := json.Marshal(rc)

	// Resume from the newest good checkpoint unless --fresh, which moves
	// the previous run's checkpoints and logs aside (never deletes them).
	ckptDir := filepath.Join(f.out, "checkpoints")
	if f.fresh {
		if err := moveAside(f.out, []string{"checkpoints", "metrics.jsonl", "eval.jsonl", "training.png"}); err != nil {
			return err
		}
	} else {
		path, st, skipped, err := checkpoint.Resume(ckptDir, pol.Weights, opt)
		for _, e := range skipped {
			fmt.Fprintf(env.stderr, "spiral: skipped a damaged checkpoint: %v\n", e)
		}
		switch {
		case err == nil:
			var prev runConfig
			if json.Unmarshal(st.Config, &prev) == nil && (prev.Model != rc.Model || prev.Data != rc.Data || prev.RL.Algo != rc.RL.Algo) {
				return fmt.Errorf("%s holds a run of %s on %s (%s); use another --out or --fresh", f.out, prev.Model, prev.Data, prev.RL.Algo)
			}
			var cur data.Cursor
			if err := json.Unmarshal(st.DataCursor, &cur); err != nil {
				return fmt.Errorf("checkpoint %s: data cursor: %w", path, err)
			}
			if err := problems.Restore(cur); err != nil {
				return fmt.Errorf("checkpoint %s: %w", path, err)
			}
			tr.SetStep(int(st.Step))
			fmt.Fprintf(env.stdout, "resumed from %s (step %d)\n", path, st.Step)
		case errors.Is(err, checkpoint.ErrNoCheckpoint):
		default:
			return fmt.Errorf("resume: %w (use --fresh to start over)", err)
		}
	}
	for _, log := range []string{"metrics.jsonl", "eval.jsonl"} {
		if err := truncateMetrics(filepath.Join(f.out, log), tr.Step()); err != nil {
			return err
		}
	}
	mf, err := os.OpenFile(filepath.Join(f.out, "metrics.jsonl"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer mf.Close()

	// save checkpoints the last completed step with the data cursor as it
	// was when that step ended (stepCursor), not as an interrupted step
	// left it.
	stepCursor := problems.Cursor()
	save := func() error {
		cur, _ := json.Marshal(stepCursor)
		p, err := checkpoint.Save(ckptDir, pol.Weights, opt, checkpoint.State{Step: int64(tr.Step()), DataCursor: cur, Config: rcJSON}, checkpoint.Options{Keep: f.keep})
		if err != nil {
			return err
		}
		fmt.Fprintf(env.stdout, "checkpoint %s\n", p)
		return plotTraining(filepath.Join(f.out, "metrics.jsonl"), filepath.Join(f.out, "training.png"), f.cfg.Algo)
	}
	lastSaved := tr.Step()
	// interrupted saves the last completed step (if not saved yet) and
	// returns the interruption joined with any save error.
	interrupted := func(err error) error {
		fmt.Fprintf(env.stderr, "spiral: interrupted; saving step %d\n", tr.Step())
		if tr.Step() > lastSaved {
			if serr := save(); serr != nil {
				return errors.Join(err, serr)
			}
		}
		return err
	}
	fmt.Fprintf(env.stdout, "spiral train: %s on %s (%d problems), algo %s, %d steps, out %s\n", modelName, dataName, ds.Len(), f.cfg.Algo, f.steps, f.out)
	ev := rollout.Evaluator{Gen: sampler, Prompter: prompter, Judge: graderJudge()}
	ef, err := os.OpenFile(filepath.Join(f.out, "eval.jsonl"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer ef.Close()
	if len(held) > 0 && tr.Step() == 0 {
		if err := evalDuringTraining(ctx, env, ev, held, f.evalK, 0, f.cfg.Seed, ef); err != nil {
			return err
		}
	}
	for tr.Step() < f.steps {
		bar := newProgress(env.stderr, f.quiet, -1, fmt.Sprintf("step %d/%d rollout", tr.Step()+1, f.steps), "tok")
		m, err := tr.TrainStep(ctx, bar.add)
		bar.done()
		if err != nil {
			if ctx.Err() != nil {
				return interrupted(err)
			}
			return err
		}
		stepCursor = problems.Cursor()
		if err := m.WriteJSONL(mf); err != nil {
			return err
		}
		agg := "  -  "
		if m.Aggregate.Traces > 0 {
			agg = fmt.Sprintf("%.3f", m.Aggregate.Reward)
		}
		fmt.Fprintf(env.stdout, "step %3d  search %.3f  agg %s  informative %d/%d  loss %+.4f  entropy %.3f  |g| %.3f  %.1fs\n",
			m.Step, m.Search.Reward, agg, m.ProblemsInformative, m.ProblemsDrawn, m.Loss, m.Entropy, m.GradNorm, m.StepSeconds)
		if len(held) > 0 && (tr.Step()%f.evalEach == 0 || tr.Step() == f.steps) {
			if err := evalDuringTraining(ctx, env, ev, held, f.evalK, tr.Step(), f.cfg.Seed, ef); err != nil {
				if ctx.Err() != nil {
					return interrupted(err)
				}
				return err
			}
		}
		if tr.Step()%f.ckptEach == 0 || tr.Step() == f.steps {
			if err := save(); err != nil {
				return err
			}
			lastSaved = tr.Step()
		}
		if ctx.Err() != nil {
			return interrupted(ctx.Err())
		}
	}
	return nil
}

// evalDuringTraining reports pass@1 and majority@k on held-out problems
// (k samples each at the training temperature) to stdout and eval.jsonl.
func evalDuringTraining(ctx context.Context, env *cliEnv, ev rollout.Evaluator, held []data.Problem, k, step int, seed uint64, w *os.File) error {
	res, err := ev.PassAtK(ctx, held, rollout.PassAtKConfig{Samples: k, Ks: []int{1, k}}, seed+0x5eed)
	if err != nil {
		return fmt.Errorf("held-out evaluation at step %d: %w", step, err)
	}
	last := res.Points[len(res.Points)-1]
	fmt.Fprintf(env.stdout, "eval %3d  held-out pass@1 %.3f  pass@%d %.3f  majority@%d %.3f  (%d problems)\n",
		step, res.Points[0].PassAtK, last.K, last.PassAtK, last.K, last.MajorityAtK, len(held))
	return writeJSONLine(w, map[string]any{"step": step, "problems": len(held), "samples": k, "points": res.Points})
}

// moveAside moves the named entries of dir that exist into
// dir/previous-<UTC time>/.
func moveAside(dir string, names []string) error {
	dst := filepath.Join(dir, "previous-"+time.Now().UTC().Format("20060102T150405"))
	for _, n := range names {
		src := filepath.Join(dir, n)
		if _, err := os.Stat(src); errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err := os.MkdirAll(dst, 0o755); err != nil {
			return err
		}
		if err := os.Rename(src, filepath.Join(dst, n)); err != nil {
			return fmt.Errorf("--fresh: move %s aside: %w", src, err)
		}
	}
	return nil
}

// plotTraining plots the rewards in metrics.jsonl.
func plotTraining(metricsPath, pngPath, label string) error {
	b, err := os.ReadFile(metricsPath)
	if err != nil {
		return err
	}
	var pts []report.TrainingPoint
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	for sc.Scan() {
		var m rl.Metrics
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			return fmt.Errorf("%s: %w", metricsPath, err)
		}
		pts = append(pts, report.TrainingPoint{Step: m.Step, SearchReward: m.Search.Reward, AggregateReward: m.Aggregate.Reward, HasAggregate: m.Aggregate.Traces > 0})
	}
	if len(pts) == 0 {
		return nil
	}
	return report.PlotTraining(pngPath, report.PlotSize{}, label, pts)
}

// truncateMetrics drops lines of metrics.jsonl past step (after a resume
// from an earlier checkpoint), so the log matches the weights.
func truncateMetrics(path string, step int) error {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var keep bytes.Buffer
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	for sc.Scan() {
		var s struct {
			Step int `json:"step"`
		}
		if json.Unmarshal(sc.Bytes(), &s) == nil && s.Step <= step {
			keep.Write(sc.Bytes())
			keep.WriteByte('\n')
		}
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, keep.Bytes(), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
