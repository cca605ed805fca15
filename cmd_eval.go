package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/spf13/pflag"

	"github.com/spiral-rl/spiral/data"
	"github.com/spiral-rl/spiral/data/synth"
	"github.com/spiral-rl/spiral/grader"
	"github.com/spiral-rl/spiral/model"
	"github.com/spiral-rl/spiral/rollout"
	"github.com/spiral-rl/spiral/rollout/report"
)

func setupEval(fs *pflag.FlagSet) func(context.Context, *cliEnv, []string) error {
	var rf runtimeFlags
	var mf modelFlags
	var df dataFlags
	var sf samplingFlags
	rf.register(fs)
	mf.register(fs)
	df.register(fs)
	sf.register(fs)
	mode := fs.String("mode", "passk", "scaffold: sequential (accuracy vs token budget), passk (pass@k and majority@k), rsa (recursive self-aggregation)")
	dataPath := fs.String("data", "", "evaluation problems: JSONL, JSON or Parquet (default: the embedded task's test split)")
	limit := fs.Int("limit", 0, "evaluate only the first N problems (0 = all)")
	samples := fs.Int("samples", 16, "samples per problem (passk, sequential)")
	population := fs.Int("population", 8, "RSA population N")
	subset := fs.Int("subset", 4, "RSA subset size K")
	rsaSteps := fs.Int("rsa-steps", 10, "RSA aggregation steps T")
	candTokens := fs.Int("candidate-tokens", 0, "cap on each candidate in an aggregation prompt, keeping its end (0 = no cap)")
	out := fs.String("out", "runs/eval", "output directory for the JSON report and PNG plot")
	label := fs.String("label", "", "name of this run in plot legends (default: the model)")
	seed := fs.Uint64("seed", 1, "random seed")
	ckpt := fs.String("checkpoint", "", "evaluate the weights of this checkpoint directory (of a run on --model)")
	tmplS := fs.String("search-template", "", "search prompt template file (default: built in)")
	tmplA := fs.String("aggregate-template", "", "aggregation prompt template file (default: built in)")
	quiet := fs.Bool("quiet", false, "no progress bar")
	return func(ctx context.Context, env *cliEnv, args []string) error {
		if len(args) > 0 {
			return usageError{fmt.Errorf("unexpected arguments %q", args)}
		}
		switch *mode {
		case "sequential", "passk", "rsa":
		default:
			return usageError{fmt.Errorf("--mode %q: want sequential, passk or rsa", *mode)}
		}
		sess, err := openSession(env, &rf, &mf)
		if err != nil {
			return err
		}
		defer sess.close()
		r, rt, tok := sess.resolvedModel, sess.rt, sess.tok
		var problems []data.Problem
		dsName := *dataPath
		if dsName == "" {
			dsName = "embedded:synth-test"
			task, err := embeddedTask()
			if err != nil {
				return err
			}
			ds, err := task.Dataset(synth.Test, 128, embeddedTaskSeed)
			if err != nil {
				return err
			}
			problems = ds.Problems
		} else {
			ds, err := data.Load(*dataPath, df.options())
			if err != nil {
				return err
			}
			problems = ds.Problems
		}
		tmpl, err := promptTemplates(*dataPath == "", *tmplS, *tmplA)
		if err != nil {
			return err
		}
		if *limit > 0 && *limit < len(problems) {
			problems = problems[:*limit]
		}
		if len(problems) == 0 {
			return errors.New("no problems to evaluate")
		}
		lm, cleanup, err := openEvalLM(rt, r, *ckpt, filepath.Join(*out, "artifacts"))
		if err != nil {
			return err
		}
		defer cleanup()
		sampler, err := rollout.NewSampler(lm, sf.config(tok.StopIDs(), min(tok.VocabSize(), lm.Signature().Vocab), r.embedded), nil)
		if err != nil {
			return err
		}
		bar := newProgress(env.stderr, *quiet, -1, "eval "+*mode, "tok")
		ev := rollout.Evaluator{Gen: sampler, Prompter: rollout.ChatPrompter{Tok: tok, Templates: tmpl},
			Judge: graderJudge(), Progress: bar.add}
		name := r.onnx
		if r.embedded {
			name = "embedded"
		}
		if *ckpt != "" {
			name += "@" + filepath.Base(*ckpt)
		}
		meta := report.Meta{Model: name, Label: *label, Dataset: dsName, Problems: len(problems), Seed: *seed, Timestamp: time.Now().UTC(),
			Extra: map[string]string{"temperature": strconv.FormatFloat(sf.temperature, 'g', -1, 64), "top_p": strconv.FormatFloat(sf.topP, 'g', -1, 64), "max_new_tokens": strconv.Itoa(sf.maxNew)}}
		if err := os.MkdirAll(*out, 0o755); err != nil {
			return err
		}
		base := filepath.Join(*out, *mode)
		switch *mode {
		case "rsa":
			res, err := ev.RSA(ctx, problems, rollout.RSAConfig{Population: *population, SubsetSize: *subset, Steps: *rsaSteps, CandidateTokens: *candTokens}, *seed)
			bar.done()
			if err != nil {
				return err
			}
			rep := report.NewRSA(meta, res)
			if err := report.WriteJSON(base+".json", rep); err != nil {
				return err
			}
			if err := report.PlotRSA(base+".png", report.PlotSize{}, rep); err != nil {
				return err
			}
			fmt.Fprintf(env.stdout, "%-5s %-9s %-9s %s\n", "step", "accuracy", "majority", "tokens")
			for _, s := range res.Steps {
				fmt.Fprintf(env.stdout, "%-5d %-9.4f %-9.4f %d\n", s.Step, s.Accuracy, s.Majority, s.Cumulative.Total())
			}
		case "passk":
			res, err := ev.PassAtK(ctx, problems, rollout.PassAtKConfig{Samples: *samples}, *seed)
			bar.done()
			if err != nil {
				return err
			}
			rep := report.NewPassAtK(meta, res)
			if err := report.WriteJSON(base+".json", rep); err != nil {
				return err
			}
			if err := report.PlotPassAtK(base+".png", report.PlotSize{}, rep); err != nil {
				return err
			}
			fmt.Fprintf(env.stdout, "%-5s %-9s %s\n", "k", "pass@k", "majority@k")
			for _, p := range res.Points {
				fmt.Fprintf(env.stdout, "%-5d %-9.4f %.4f\n", p.K, p.PassAtK, p.MajorityAtK)
			}
		case "sequential":
			res, err := ev.Sequential(ctx, problems, rollout.BudgetConfig{Samples: *samples, MaxTokens: sf.maxNew}, *seed)
			bar.done()
			if err != nil {
				return err
			}
			rep := report.NewBudget(meta, res)
			if err := report.WriteJSON(base+".json", rep); err != nil {
				return err
			}
			if err := report.PlotBudget(base+".png", report.PlotSize{}, rep); err != nil {
				return err
			}
			fmt.Fprintf(env.stdout, "%-7s %-9s %s\n", "budget", "accuracy", "truncated")
			for _, p := range res.Points {
				fmt.Fprintf(env.stdout, "%-7d %-9.4f %.3f\n", p.Budget, p.Accuracy, p.Truncated)
			}
		}
		fmt.Fprintf(env.stdout, "wrote %s.json and %s.png\n", base, base)
		return nil
	}
}

// openEvalLM opens the model for sampling: the source graph as is, or,
// with a checkpoint, the rollout graph fed from the checkpoint's weights.
func openEvalLM(rt *model.Runtime, r resolvedModel, ckpt, artifactsDir string) (*model.LM, func(), error) {
	if ckpt == "" {
		lm, err := model.OpenLM(rt, r.onnx, model.LMOptions{})
		if err != nil {
			return nil, nil, err
		}
		return lm, func() { lm.Close() }, nil
	}
	pol, err := model.OpenPolicy(rt, r.onnx, artifactsDir, model.PolicyOptions{})
	if err != nil {
		return nil, nil, err
	}
	if _, err := loadCheckpointWeights(ckpt, pol); err != nil {
		pol.Close()
		return nil, nil, err
	}
	return pol.LM, func() { pol.Close() }, nil
}

// graderJudge adapts the grader to the evaluation scaffolds.
func graderJudge() rollout.Judge {
	return rollout.Judge{
		Grade: func(resp, gold string) (string, bool) { v := grader.Grade(resp, gold); return v.Extracted, v.Correct },
		Equal: grader.Equivalent,
	}
}
