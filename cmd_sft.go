package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"

	"github.com/spf13/pflag"

	"github.com/spiral-rl/spiral/data/synth"
	"github.com/spiral-rl/spiral/grader"
	"github.com/spiral-rl/spiral/model"
	"github.com/spiral-rl/spiral/model/optim"
	"github.com/spiral-rl/spiral/model/tokenizer"
	"github.com/spiral-rl/spiral/rl"
	"github.com/spiral-rl/spiral/rollout"
)

func setupSFT(fs *pflag.FlagSet) func(context.Context, *cliEnv, []string) error {
	var rf runtimeFlags
	var mf modelFlags
	rf.register(fs)
	mf.register(fs)
	out := fs.String("out", "runs/sft", "output directory: the trained model (model.onnx, tokenizer.json, config.json), sft.jsonl, artifacts/")
	steps := fs.Int("steps", 300, "optimizer steps")
	batch := fs.Int("batch", 64, "examples per step")
	lr := fs.Float64("lr", 3e-3, "peak learning rate (cosine decay to 10% after warmup)")
	warmup := fs.Int("warmup", 20, "warmup steps")
	aggShare := fs.Float64("aggregate-share", 0.5, "share of aggregation examples (the rest are search examples)")
	cands := fs.Int("candidates", 4, "candidate solutions per aggregation example")
	seed := fs.Uint64("seed", 1, "random seed")
	evalEvery := fs.Int("eval-every", 50, "evaluate every N steps (0 = only at the end)")
	evalProblems := fs.Int("eval-problems", 64, "held-out problems per evaluation")
	microTokens := fs.Int("micro-batch-tokens", 8192, "rows x length per training call")
	quiet := fs.Bool("quiet", false, "no progress bar")
	return func(ctx context.Context, env *cliEnv, args []string) error {
		if len(args) > 0 {
			return usageError{fmt.Errorf("unexpected arguments %q", args)}
		}
		if *steps < 1 || *batch < 1 {
			return usageError{errors.New("--steps and --batch must be positive")}
		}
		sess, err := openSession(env, &rf, &mf)
		if err != nil {
			return err
		}
		defer sess.close()
		r, rt, tok := sess.resolvedModel, sess.rt, sess.tok
		if err := os.MkdirAll(*out, 0o755); err != nil {
			return err
		}
		pol, err := model.OpenPolicy(rt, r.onnx, filepath.Join(*out, "artifacts"), model.PolicyOptions{Train: true})
		if err != nil {
			return err
		}
		defer pol.Close()
		task, err := embeddedTask()
		if err != nil {
			return err
		}
		opt, err := optim.NewAdamW(optim.DefaultConfig(), pol.Weights)
		if err != nil {
			return err
		}
		sched := optim.Schedule{PeakLR: *lr, WarmupSteps: int64(*warmup), Decay: optim.Cosine, TotalSteps: int64(max(*steps, *warmup+1)), MinLR: *lr / 10}
		if err := sched.Validate(); err != nil {
			return usageError{err}
		}
		logf, err := os.OpenFile(filepath.Join(*out, "sft.jsonl"), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
		if err != nil {
			return err
		}
		defer logf.Close()
		rng := rand.New(rand.NewPCG(*seed, 0x5f7))
		bar := newProgress(env.stderr, *quiet, *steps, "sft", "steps")
		for step := 1; step <= *steps; step++ {
			exs, err := task.SFTExamples(rng, nil, *batch, *cands, *aggShare)
			if err != nil {
				return err
			}
			batchEx := make([]rl.SFTExample, len(exs))
			for i, e := range exs {
				batchEx[i] = rl.SFTExample{Prompt: chatPrompt(tok, e.Prompt), Completion: append(tok.Encode(e.Completion), tok.IMEnd())}
			}
			m, err := rl.SFTStep(ctx, pol, opt, sched, batchEx, *microTokens, 1.0)
			if err != nil {
				return err
			}
			if err := writeJSONLine(logf, m); err != nil {
				return err
			}
			bar.add(1)
			bar.describe(fmt.Sprintf("sft loss %.3f", m.Loss))
			if *evalEvery > 0 && step%*evalEvery == 0 || step == *steps {
				acc, err := synthAccuracy(ctx, pol.LM, tok, task, *evalProblems, *cands, *seed)
				if err != nil {
					return err
				}
				bar.done()
				fmt.Fprintf(env.stdout, "step %4d  loss %.4f  lr %.2e  search acc %.3f  aggregate acc %.3f  (%0.f tok/s)\n",
					step, m.Loss, m.LR, acc.search, acc.aggregate, m.TokensPerSecond)
				if err := writeJSONLine(logf, map[string]any{"step": step, "eval_search_accuracy": acc.search, "eval_aggregate_accuracy": acc.aggregate}); err != nil {
					return err
				}
				if step < *steps {
					bar = newProgress(env.stderr, *quiet, *steps-step, "sft", "steps")
				}
			}
		}
		bar.done()
		if err := model.Export(r.onnx, pol.Artifacts.Manifest.Ties, filepath.Join(*out, "model.onnx"), false, pol.Weights, pol.Frozen); err != nil {
			return err
		}
		for _, f := range []string{"tokenizer.json", "config.json"} {
			src := filepath.Join(filepath.Dir(r.onnx), f)
			if f == "tokenizer.json" {
				src = r.tokenizer
			}
			if err := copyFile(src, filepath.Join(*out, f)); err != nil && !(f == "config.json" && errors.Is(err, os.ErrNotExist)) {
				return err
			}
		}
		fmt.Fprintf(env.stdout, "wrote %s\n", filepath.Join(*out, "model.onnx"))
		return nil
	}
}

// chatPrompt renders text as one user turn with the generation prompt.
func chatPrompt(tok *tokenizer.Tokenizer, text string) []int32 {
	return tok.EncodeChat([]tokenizer.Message{{Role: tokenizer.RoleUser, Content: text}}, true)
}

type synthAcc struct{ search, aggregate float64 }

// synthAccuracy measures greedy accuracy on held-out problems of the
// synthetic task: search prompts, and aggregation prompts whose candidates
// carry planted mistakes.
func synthAccuracy(ctx context.Context, lm *model.LM, tok *tokenizer.Tokenizer, task *synth.Task, n, cands int, seed uint64) (synthAcc, error) {
	var acc synthAcc
	items, err := task.Problems(synth.Test, n, seed+1)
	if err != nil {
		return acc, err
	}
	rng := rand.New(rand.NewPCG(seed, 0xe7a1))
	var reqs []rollout.Request
	var gold []string
	for i, it := range items {
		s, err := task.SearchExample(nil, it)
		if err != nil {
			return acc, err
		}
		a, err := task.AggregateExample(rng, nil, it, cands)
		if err != nil {
			return acc, err
		}
		reqs = append(reqs, rollout.Request{Prompt: chatPrompt(tok, s.Prompt), Seed: uint64(2 * i)}, rollout.Request{Prompt: chatPrompt(tok, a.Prompt), Seed: uint64(2*i + 1)})
		gold = append(gold, s.Answer, a.Answer)
	}
	s, err := rollout.NewSampler(lm, rollout.SamplerConfig{Temperature: 0, MaxNewTokens: 128, BatchSize: 64, Refill: true,
		StopIDs: tok.StopIDs(), VocabLimit: min(tok.VocabSize(), lm.Signature().Vocab)}, nil)
	if err != nil {
		return acc, err
	}
	outs, _, err := s.Generate(ctx, reqs, nil)
	if err != nil {
		return acc, err
	}
	for i, o := range outs {
		if grader.Grade(tok.DecodeSkipSpecial(o.Tokens), gold[i]).Correct {
			if i%2 == 0 {
				acc.search++
			} else {
				acc.aggregate++
			}
		}
	}
	acc.search /= float64(len(items))
	acc.aggregate /= float64(len(items))
	return acc, nil
}
