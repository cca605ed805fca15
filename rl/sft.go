package rl

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/spiral-rl/spiral/data/synth"
	"github.com/spiral-rl/spiral/model"
	"github.com/spiral-rl/spiral/model/optim"
	"github.com/spiral-rl/spiral/rollout"
)

// SFTMetrics are one supervised step's figures (a line of sft.jsonl).
type SFTMetrics struct {
	Step int `json:"step"`
	// Loss is the token-mean cross-entropy (nats) before the update.
	Loss float64 `json:"loss"`
	// PGLoss is the policy-gradient loss the graph minimised (-1 for
	// advantage 1 and ratio 1; its gradient is the cross-entropy's).
	PGLoss   float64 `json:"pg_loss"`
	Entropy  float64 `json:"entropy"`
	GradNorm float64 `json:"grad_norm"`
	LR       float64 `json:"lr"`
	// UpdateSkipped says why the update was not applied ("" when it was).
	UpdateSkipped string `json:"update_skipped,omitempty"`
	// LossTokens counts supervised tokens; TokensPerSecond counts training
	// positions (rows x length) per second.
	LossTokens      int     `json:"loss_tokens"`
	TokensPerSecond float64 `json:"tokens_per_second"`
	Seconds         float64 `json:"seconds"`
}

// SFTStep takes one supervised step on examples (their Advantage is
// ignored and taken as 1): cross-entropy on the completion tokens, written
// as the policy-gradient loss with advantage 1 and old log-probabilities
// equal to the current ones (detached: the ratio is exactly 1), so its
// gradient is exactly that of the token-mean negative log-likelihood. Then global-norm clipping (maxGradNorm > 0) and an AdamW
// update at the schedule's rate.
func SFTStep(ctx context.Context, p *model.Policy, opt *optim.AdamW, sched optim.Schedule, examples []Example, microBatchTokens int, maxGradNorm float64) (SFTMetrics, error) {
	start := time.Now()
	m := SFTMetrics{Step: int(opt.Steps()) + 1}
	rows := make([]Example, len(examples))
	for i, e := range examples {
		rows[i] = Example{Prompt: e.Prompt, Completion: e.Completion, Advantage: 1, Kind: KindSFT}
	}
	grads := p.Grads
	gs, err := Gradients(ctx, p.Train, grads, rows, GradientOptions{
		MicroBatchTokens: microBatchTokens, ClipLow: 0.2, ClipHigh: 0.28, Detached: true,
	})
	if err != nil {
		return m, err
	}
	u, err := applyUpdate(p.Weights, grads, opt, sched, maxGradNorm)
	if err != nil {
		return m, fmt.Errorf("rl: sft step %d: %w", m.Step, err)
	}
	m.GradNorm, m.LR, m.UpdateSkipped = u.norm, u.lr, u.skipped
	m.Loss, m.PGLoss, m.Entropy, m.LossTokens = gs.NLL, gs.Loss, gs.Entropy, gs.LossTokens
	m.Seconds = time.Since(start).Seconds()
	m.TokensPerSecond = float64(gs.Positions) / m.Seconds
	return m, nil
}

// SFTConfig configures a supervised warm start (RunSFT) on the synthetic
// task. DefaultSFTConfig gives the defaults; Validate names the flags.
type SFTConfig struct {
	// Steps is the number of optimiser steps; Batch the examples per step.
	Steps, Batch int
	// Mix is the make-up of each step's examples: the share of
	// aggregation examples, their candidates (also those of the
	// evaluation's aggregation prompts) and the share of them that read
	// the candidates.
	Mix synth.Mix
	// MicroBatchTokens bounds rows x length per training call.
	MicroBatchTokens int
	// MaxGradNorm clips the global gradient norm (0 or less: off).
	MaxGradNorm float64
	// EvalEvery evaluates greedy accuracy every N steps and at the end
	// (0 = only at the end); EvalProblems is the number of held-out
	// problems evaluated.
	EvalEvery, EvalProblems int
	// Seed draws the examples and the evaluation.
	Seed uint64
	// ContextLength is the model's positions (config.json
	// max_position_embeddings): an example longer than it is an error,
	// naming --candidates, before its step runs (0: unchecked).
	ContextLength int
}

// DefaultSFTConfig returns 300 steps of 64 examples, half of them
// aggregation examples with 4 candidates, all reading them, evaluated every
// 50 steps on 64 problems.
func DefaultSFTConfig() SFTConfig {
	return SFTConfig{Steps: 300, Batch: 64, Mix: synth.Mix{AggregateShare: 0.5, Candidates: 4, ReadShare: 1}, MicroBatchTokens: 8192, MaxGradNorm: 1,
		EvalEvery: 50, EvalProblems: 64, Seed: 1}
}

// Validate reports every invalid field.
func (c SFTConfig) Validate() error {
	var errs []error
	for _, f := range []struct {
		name string
		v    int
	}{{"--steps", c.Steps}, {"--batch", c.Batch}, {"--candidates", c.Mix.Candidates}, {"--micro-batch-tokens", c.MicroBatchTokens}, {"--eval-problems", c.EvalProblems}} {
		if f.v < 1 {
			errs = append(errs, fmt.Errorf("%s %d: want >= 1", f.name, f.v))
		}
	}
	if !(c.Mix.AggregateShare >= 0 && c.Mix.AggregateShare <= 1) {
		errs = append(errs, fmt.Errorf("--aggregate-share %v: want a share in [0, 1]", c.Mix.AggregateShare))
	}
	if !(c.Mix.ReadShare >= 0 && c.Mix.ReadShare <= 1) {
		errs = append(errs, fmt.Errorf("--aggregate-read-share %v: want a share in [0, 1]", c.Mix.ReadShare))
	}
	if c.EvalEvery < 0 {
		errs = append(errs, fmt.Errorf("--eval-every %d: want >= 0 (0 = only at the end)", c.EvalEvery))
	}
	if math.IsNaN(c.MaxGradNorm) || math.IsInf(c.MaxGradNorm, 0) {
		errs = append(errs, fmt.Errorf("--max-grad-norm %v: want a finite norm (0 or less = no clipping)", c.MaxGradNorm))
	}
	return errors.Join(errs...)
}

// TurnPrompter renders texts as chat turns and decodes generated ids
// (rollout.ChatPrompter is one).
type TurnPrompter interface {
	// UserTurn is the prompt of one user turn with the generation prompt.
	UserTurn(text string) []int32
	// AssistantTurn is text as the assistant's reply, ending with the
	// end-of-turn id.
	AssistantTurn(text string) []int32
	// Text decodes generated ids without special tokens.
	Text(ids []int32) string
}

// SFTParts are what RunSFT drives.
type SFTParts struct {
	Policy    *model.Policy
	Optimizer *optim.AdamW
	Schedule  optim.Schedule
	Task      *synth.Task
	Prompter  TurnPrompter
	// StopIDs end the greedy evaluation's completions; VocabLimit bounds
	// its sampling (see rollout.SamplerConfig).
	StopIDs    []int32
	VocabLimit int
	Judge      rollout.Judge
	// Log receives sft.jsonl (one SFTMetrics line per step, one
	// evaluation line per evaluation); Out the human-readable lines.
	Log, Out io.Writer
	// Progress reports finished steps (nil: none).
	Progress func(steps int)
}

// MarshalJSON writes m with a loss, entropy or gradient norm that is not
// finite as null (see Metrics.MarshalJSON).
func (m SFTMetrics) MarshalJSON() ([]byte, error) {
	type plain SFTMetrics
	return json.Marshal(struct {
		plain
		Loss     *float64 `json:"loss"`
		PGLoss   *float64 `json:"pg_loss"`
		Entropy  *float64 `json:"entropy"`
		GradNorm *float64 `json:"grad_norm"`
	}{plain(m), finiteOrNil(m.Loss), finiteOrNil(m.PGLoss), finiteOrNil(m.Entropy), finiteOrNil(m.GradNorm)})
}

// SFTEval is one evaluation line of sft.jsonl.
type SFTEval struct {
	Step              int     `json:"step"`
	SearchAccuracy    float64 `json:"eval_search_accuracy"`
	AggregateAccuracy float64 `json:"eval_aggregate_accuracy"`
}

// RunSFT runs the supervised warm start: cfg.Steps steps of cfg.Batch
// synthetic examples (data/synth) drawn from a generator seeded with
// cfg.Seed, one SFTStep each, logging every step and evaluating greedy
// accuracy on held-out problems every cfg.EvalEvery steps and at the end.
func RunSFT(ctx context.Context, cfg SFTConfig, p SFTParts) error {
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("rl: sft: %w", err)
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x5f7))
	for step := 1; step <= cfg.Steps; step++ {
		exs, err := p.Task.SFTExamples(rng, nil, cfg.Batch, cfg.Mix)
		if err != nil {
			return err
		}
		batch := sftBatch(p.Prompter, exs)
		if n := cfg.ContextLength; n > 0 {
			for i, e := range batch {
				if l := len(e.Prompt) + len(e.Completion); l > n {
					what := "a search example"
					if exs[i].Kind == synth.KindAggregate {
						what = fmt.Sprintf("an aggregation example (of --candidates %d candidates: give fewer)", cfg.Mix.Candidates)
					}
					return fmt.Errorf("rl: sft: step %d: %s of %d tokens passes the model's %d positions (config.json max_position_embeddings)", step, what, l, n)
				}
			}
		}
		m, err := SFTStep(ctx, p.Policy, p.Optimizer, p.Schedule, batch, cfg.MicroBatchTokens, cfg.MaxGradNorm)
		if err != nil {
			return err
		}
		// The run's step, as the step line and the evaluation lines say:
		// the optimizer's count, which SFTStep numbers by, stands still
		// at a skipped update.
		m.Step = step
		if err := writeJSONLine(p.Log, m); err != nil {
			return err
		}
		if p.Progress != nil {
			p.Progress(1)
		}
		if m.UpdateSkipped != "" {
			fmt.Fprintf(p.Out, "step %4d  update skipped: %s\n", step, m.UpdateSkipped)
		}
		if cfg.EvalEvery > 0 && step%cfg.EvalEvery == 0 || step == cfg.Steps {
			acc, err := SynthAccuracy(ctx, p, cfg.EvalProblems, cfg.Mix.Candidates, cfg.Seed)
			if err != nil {
				return err
			}
			fmt.Fprintf(p.Out, "step %4d  loss %.4f  lr %.2e  search acc %.3f  aggregate acc %.3f  (%0.f tok/s)\n",
				step, m.Loss, m.LR, acc.SearchAccuracy, acc.AggregateAccuracy, m.TokensPerSecond)
			acc.Step = step
			if err := writeJSONLine(p.Log, acc); err != nil {
				return err
			}
		}
	}
	return nil
}

// sftBatch tokenizes supervised examples as chat turns: the prompt is the
// user turn followed by the example's Prefix (the given start of the
// reply, context without loss), the completion the rest of the reply with
// the end-of-turn id. The prefix is tokenized apart from the completion,
// which is exact for a character tokenizer (the synthetic task's).
func sftBatch(pr TurnPrompter, exs []synth.Example) []Example {
	batch := make([]Example, len(exs))
	for i, e := range exs {
		batch[i] = Example{Prompt: pr.UserTurn(e.Prompt), Completion: pr.AssistantTurn(e.Completion)}
		if e.Prefix != "" {
			pre := pr.AssistantTurn(e.Prefix)
			batch[i].Prompt = slices.Concat(batch[i].Prompt, pre[:len(pre)-1])
		}
	}
	return batch
}

// SynthEvalProblems returns the n held-out problems of task that
// SynthAccuracy evaluates for seed, or the error it would fail with (too
// many for the task's test split), which a caller can check before
// training.
func SynthEvalProblems(task *synth.Task, n int, seed uint64) ([]synth.Item, error) {
	return task.Problems(synth.Test, n, seed+1)
}

// SynthAccuracy measures greedy accuracy on n held-out problems of the
// synthetic task (SynthEvalProblems): search prompts, and aggregation
// prompts whose cands candidates carry planted mistakes.
func SynthAccuracy(ctx context.Context, p SFTParts, n, cands int, seed uint64) (SFTEval, error) {
	var acc SFTEval
	items, err := SynthEvalProblems(p.Task, n, seed)
	if err != nil {
		return acc, err
	}
	rng := rand.New(rand.NewPCG(seed, 0xe7a1))
	prompts := make([][]int32, 0, 2*len(items))
	golds := make([]string, 0, 2*len(items))
	for _, it := range items {
		s, err := p.Task.SearchExample(nil, it)
		if err != nil {
			return acc, err
		}
		a, err := p.Task.AggregateExample(rng, nil, it, cands)
		if err != nil {
			return acc, err
		}
		prompts = append(prompts, p.Prompter.UserTurn(s.Prompt), p.Prompter.UserTurn(a.Prompt))
		golds = append(golds, s.Answer, a.Answer)
	}
	lm := p.Policy.LM
	cfg := rollout.DefaultSamplerConfig()
	cfg.Temperature, cfg.MaxNewTokens, cfg.StopIDs, cfg.VocabLimit = 0, 128, p.StopIDs, p.VocabLimit
	s, err := rollout.NewSampler(lm, cfg)
	if err != nil {
		return acc, err
	}
	traces, _, err := rollout.Complete(ctx, s, p.Prompter, prompts, 1, func(i, _ int) rollout.Stream {
		return rollout.Stream{Seed: seed, Sample: uint64(i), Phase: rollout.PhaseEval}
	}, nil)
	if err != nil {
		return acc, err
	}
	for i, tr := range traces {
		if p.Judge.Judge(tr[0], golds[i]).Correct {
			if i%2 == 0 {
				acc.SearchAccuracy++
			} else {
				acc.AggregateAccuracy++
			}
		}
	}
	acc.SearchAccuracy /= float64(len(items))
	acc.AggregateAccuracy /= float64(len(items))
	return acc, nil
}
