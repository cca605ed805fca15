package rl

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spiral-rl/spiral/data/synth"
	"github.com/spiral-rl/spiral/model"
	"github.com/spiral-rl/spiral/model/atomicfile"
	"github.com/spiral-rl/spiral/model/checkpoint"
	"github.com/spiral-rl/spiral/model/lmgraph"
	"github.com/spiral-rl/spiral/model/optim"
	"github.com/spiral-rl/spiral/rollout"
	"github.com/spiral-rl/spiral/rollout/report/tfevents"
)

// SFTMetrics are one supervised step's figures (a line of sft.jsonl).
type SFTMetrics struct {
	Step int `json:"step"`
	// Loss is the token-mean cross-entropy (nats) before the update.
	Loss float64 `json:"loss"`
	// PGLoss is the policy-gradient loss the graph minimised (-1 for
	// advantage 1 and ratio 1; its gradient is the cross-entropy's). It
	// is -1 at every step by construction, so sft.jsonl leaves it out
	// (older versions logged it).
	PGLoss   float64 `json:"-"`
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
// update at the schedule's rate: on the device when p's executor keeps
// the gradients and AdamW there (Policy.UseDeviceOptimizer, opt its
// optimizer), as train's steps do; the host weights and moments are
// then stale until p.Train.SyncHost.
func SFTStep(ctx context.Context, p *model.Policy, opt *optim.AdamW, sched optim.Schedule, examples []Example, microBatchTokens int, maxGradNorm float64) (SFTMetrics, error) {
	start := time.Now()
	m := SFTMetrics{Step: int(opt.Steps()) + 1}
	rows := make([]Example, len(examples))
	for i, e := range examples {
		rows[i] = Example{Prompt: e.Prompt, Completion: e.Completion, Advantage: 1, Kind: KindSFT}
	}
	gs, err := Gradients(ctx, p.Train, p.Grads, rows, GradientOptions{
		MicroBatchTokens: microBatchTokens, ClipLow: 0.2, ClipHigh: 0.28, Detached: true,
	})
	if err != nil {
		return m, err
	}
	u, err := stepUpdate(onDevice(p.Train), p.Weights, p.Grads, opt, sched, maxGradNorm)
	if err != nil {
		// Part of the weights may be updated: not a step to save.
		return m, &UpdateError{Step: m.Step, Err: err}
	}
	m.GradNorm, m.LR, m.UpdateSkipped = u.norm, u.lr, u.skipped
	m.Loss, m.PGLoss, m.Entropy, m.LossTokens = gs.NLL, gs.Loss, gs.Entropy, gs.LossTokens
	m.Seconds = time.Since(start).Seconds()
	m.TokensPerSecond = float64(gs.Positions) / m.Seconds
	return m, nil
}

// SFTConfig configures a supervised warm start (RunSFT) on the synthetic
// task. DefaultSFTConfig gives the defaults; Validate names the flags.
// Its JSON form is what a checkpoint records of it (SFTSettings): the
// fields that shape the weights and the evaluations' problems, not those
// that say when to evaluate and save or how to resume.
type SFTConfig struct {
	// Steps is the number of optimiser steps (recorded through the
	// schedule, whose cosine decay it sets); Batch the examples per step.
	Steps int `json:"-"`
	Batch int `json:"batch"`
	// Mix is the make-up of each step's examples: the share of
	// aggregation examples, their candidates (also those of the
	// evaluation's aggregation prompts) and the share of them that read
	// the candidates.
	Mix synth.Mix `json:"mix"`
	// MicroBatchTokens bounds rows x length per training call.
	MicroBatchTokens int `json:"micro_batch_tokens"`
	// MaxGradNorm clips the global gradient norm (0 or less: off).
	MaxGradNorm float64 `json:"max_grad_norm"`
	// EvalEvery evaluates greedy accuracy every N steps and at the end
	// (0 = only at the end); EvalProblems is the number of held-out
	// problems evaluated (0 = no evaluation at all, EvalEvery unread).
	EvalEvery    int `json:"-"`
	EvalProblems int `json:"eval_problems"`
	// Seed draws the examples and the evaluation.
	Seed uint64 `json:"seed"`
	// ContextLength is the model's positions (config.json
	// max_position_embeddings): an example longer than it is an error,
	// naming --candidates, before its step runs, and the evaluation's
	// completions stop where it ends (0: unchecked).
	ContextLength int `json:"-"`
	// CheckpointEvery saves a checkpoint every N steps (>= 1), at the end
	// and on an interruption; Keep retains the newest N (0 = all).
	CheckpointEvery int `json:"-"`
	Keep            int `json:"-"`
	// Fresh moves an earlier run's checkpoints and log aside (a spiral
	// train run's logs, plot and final report too) and starts over;
	// Override resumes a run whose settings differ from the ones
	// given (the new ones apply).
	Fresh    bool `json:"-"`
	Override bool `json:"-"`
	// TensorBoard logs every line of the log as it is written to a new
	// event file in the run directory's TensorBoardDir too (see
	// openTensorBoardLog).
	TensorBoard bool `json:"-"`
}

// DefaultSFTConfig returns 300 steps of 64 examples, half of them
// aggregation examples with 4 candidates, all reading them, evaluated every
// 50 steps on 64 problems, a checkpoint every 10 steps, the newest 3 kept
// (train's defaults).
func DefaultSFTConfig() SFTConfig {
	return SFTConfig{Steps: 300, Batch: 64, Mix: synth.Mix{AggregateShare: 0.5, Candidates: 4, ReadShare: 1}, MicroBatchTokens: 8192, MaxGradNorm: 1,
		EvalEvery: 50, EvalProblems: 64, Seed: 1, CheckpointEvery: 10, Keep: 3}
}

// Validate reports every invalid field.
func (c SFTConfig) Validate() error {
	var errs []error
	for _, f := range []struct {
		name string
		v    int
	}{{"--steps", c.Steps}, {"--batch", c.Batch}, {"--candidates", c.Mix.Candidates}, {"--micro-batch-tokens", c.MicroBatchTokens},
		{"--checkpoint-every", c.CheckpointEvery}} {
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
	if c.EvalProblems < 0 {
		errs = append(errs, fmt.Errorf("--eval-problems %d: want >= 0 (0 = no evaluation)", c.EvalProblems))
	}
	if c.Keep < 0 {
		errs = append(errs, fmt.Errorf("--keep %d: want >= 0 (0 = keep every checkpoint)", c.Keep))
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
	// AggregatePrompt is the prompt of an aggregation trace that reads
	// the candidates' texts, as rollouts render it
	// (rollout.Prompter.AggregatePrompt).
	AggregatePrompt(problem string, candidates []string) ([]int32, error)
	// AssistantTurn is text as the assistant's reply, ending with the
	// end-of-turn id.
	AssistantTurn(text string) []int32
	// Reply is the text of the assistant's reply, reasoning then answer,
	// as the chat template writes it after the generation prompt
	// (tokenizer.Tokenizer.AssistantReply: a <think> block that prompt
	// opens is closed before the answer).
	Reply(reasoning, answer string) string
	// ReplyHead is what Reply writes before the reasoning ("<think>\n"
	// where the template opens the block in the assistant's turn, not in
	// its generation prompt).
	ReplyHead() string
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
	// Dir is the run directory (--out), locked by the caller (LockRun):
	// RunSFT writes its log there, SFTLogFile + PartialSuffix (one
	// SFTMetrics line per step, one evaluation line per evaluation), and
	// its checkpoints in Dir/checkpoints.
	Dir string
	// Settings name the model the checkpoints record (RunSFT fills in the
	// schedule and the configuration).
	Settings SFTSettings
	// Out receives the human-readable lines (evaluations, checkpoints),
	// Warn the warnings.
	Out, Warn io.Writer
	// Progress reports finished steps (nil: none); a resumed run reports
	// the steps it resumed at first.
	Progress func(steps int)
}

// The log of an sft run in its directory: SFTLogFile + PartialSuffix
// while the run goes on, SFTLogFile once its model is written.
const (
	SFTLogFile    = "sft.jsonl"
	PartialSuffix = ".partial"
)

// SFTSettings are what an sft run records in each checkpoint, as
// RunSettings are train's (and under the same names, so that
// CheckpointSettings reads the model and LoRA of either): the model,
// which must match, and the settings that shape training, which may
// change only with SFTConfig.Override.
type SFTSettings struct {
	// Model names the model; ModelID identifies it by content
	// (model.SourceID).
	Model   string `json:"model"`
	ModelID string `json:"model_id"`
	// LoRA is the adapters' configuration when the run trains LoRA
	// adapters (the checkpoints then hold the adapters only).
	LoRA *lmgraph.LoRA `json:"lora,omitempty"`
	// Selection is the --train and --freeze choice of the trained
	// parameters (lmgraph.Selection.String; "" in checkpoints of older
	// versions, which record none).
	Selection string `json:"selection,omitempty"`
	// Tokenizer fingerprints the tokenizer the examples are tokenized
	// with, its tokenizer.json and chat template (tokenizer.Fingerprint;
	// "" in checkpoints of older versions, which record
	// none): a rerun with another would train the run's weights on ids
	// that mean other text, and write its model with that tokenizer.
	Tokenizer string `json:"tokenizer,omitempty"`
	// TokenizerBytes is the fingerprint that older versions took of the
	// same tokenizer (tokenizer.ByteFingerprint), which a checkpoint of
	// this tokenizer may record as its Tokenizer; recorded beside it, no
	// setting of its own (RunSettings.TokenizerBytes).
	TokenizerBytes string `json:"tokenizer_bytes,omitempty"`
	// ReplyHead is what the chat template writes to open the
	// assistant's reply, before the reasoning (TurnPrompter.ReplyHead:
	// Qwen3's hybrid template's "<think>\n", "" for most), which
	// Tokenizer's fingerprint leaves out: a rerun whose template writes
	// another, beside the same tokenizer.json, would train on replies
	// rendered otherwise. nil in checkpoints of older versions, which
	// record none.
	ReplyHead *string `json:"reply_head,omitempty"`
	// Schedule and SFT are the run's (RunSFT sets them); SFT is nil in a
	// checkpoint of spiral train.
	Schedule optim.Schedule `json:"schedule"`
	SFT      *SFTConfig     `json:"sft"`
}

// sftCursor is where an sft run's example stream stands after a step:
// its generator's state (rand.PCG's MarshalBinary), so that a resumed run
// draws the examples the uninterrupted one would have.
type sftCursor struct {
	RNG []byte `json:"rng"`
}

// MarshalJSON writes m with a loss, entropy or gradient norm that is not
// finite as null (see Metrics.MarshalJSON).
func (m SFTMetrics) MarshalJSON() ([]byte, error) {
	type plain SFTMetrics
	return json.Marshal(struct {
		plain
		Loss     *float64 `json:"loss"`
		Entropy  *float64 `json:"entropy"`
		GradNorm *float64 `json:"grad_norm"`
	}{plain(m), finiteOrNil(m.Loss), finiteOrNil(m.Entropy), finiteOrNil(m.GradNorm)})
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
// accuracy on held-out problems every cfg.EvalEvery steps and at the end
// (never with cfg.EvalProblems 0).
// As Run does for train, in the run directory p.Dir (locked by the
// caller):
//
//  1. cfg.Fresh: move an earlier run's checkpoints, log and event
//     files aside (previous-*/), a finished run's event files too, and
//     a spiral train run's logs, plot and final report with its
//     checkpoints, so that previous-*/ holds that run whole and none
//     of its files stays beside this one's;
//     otherwise set a finished run's event files aside
//     (setAsideFinishedEvents) and resume from the newest intact
//     checkpoint, if any (the weights, AdamW's moments and count, the
//     step and the examples' generator), refusing another model, and
//     other settings unless cfg.Override;
//  2. cut the log back to the resumed step and append to it (a new run
//     starts it empty, one that logs completed steps set aside first:
//     setAsideUnresumed), and spiral's TensorBoard event files with it;
//     cfg.TensorBoard: start a new event file (openTensorBoardLog);
//  3. evaluate the resumed step if that evaluation is due and not logged;
//  4. each step: draw, train, log; evaluate when due; save a checkpoint
//     every cfg.CheckpointEvery steps and at the end;
//  5. on interruption (ctx), or when a step or an evaluation fails, save
//     the last completed step if it is not saved yet (not after a failed
//     update, UpdateError, whose weights may be part-updated), and return
//     the interruption or the failure.
//
// The caller writes the model from p.Policy's weights once RunSFT
// returns nil, and then removes the checkpoints (RemoveSFTCheckpoints).
func RunSFT(ctx context.Context, cfg SFTConfig, p SFTParts) (err error) {
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("rl: sft: %w", err)
	}
	if p.Dir == "" {
		return errors.New("rl: sft: no run directory")
	}
	src := rand.NewPCG(cfg.Seed, 0x5f7)
	rng := rand.New(src)
	p.Settings = recordedSFTSettings(cfg, p)
	settings, err := json.Marshal(p.Settings)
	if err != nil {
		return fmt.Errorf("rl: sft settings: %w", err)
	}

	// 1. Resume, or start afresh; the events of a finished run this one
	// replaces are kept until its model is, or with --fresh in
	// previous-*/ with the rest (those an earlier overwrite set aside
	// too). A train run in p.Dir, whose checkpoints sft refuses
	// offering --fresh, goes aside whole: its metrics.jsonl and
	// eval.jsonl left here would be what spiral tensorboard reads of
	// the directory, rather than this run's log.
	logPath := filepath.Join(p.Dir, SFTLogFile+PartialSuffix)
	step := 0
	if cfg.Fresh {
		moved, err := moveAside(p.Dir, []string{CheckpointsDir, SFTLogFile + PartialSuffix, TensorBoardDir, SFTFinishedTensorBoardDir,
			MetricsFile, EvalFile, TrainingPlot, FinalRSAFile})
		if err != nil {
			return fmt.Errorf("--fresh: %w", err)
		}
		if moved != "" {
			fmt.Fprintf(p.Out, "--fresh: the previous run is in %s\n", moved)
		}
	} else {
		if err := setAsideFinishedEvents(p.Dir); err != nil {
			return err
		}
		if step, err = resumeSFT(ctx, cfg, p, src); err != nil {
			return err
		}
		if step == 0 {
			if err := setAsideUnresumed(p.Dir, []string{SFTLogFile + PartialSuffix}, []string{TensorBoardDir}, p.Warn); err != nil {
				return err
			}
		}
	}

	// 2. The log describes the weights: lines past the resumed step go.
	flags := os.O_CREATE | os.O_WRONLY | os.O_TRUNC
	var last sftLogged
	if step > 0 {
		damaged, err := truncateLog(logPath, step)
		if err != nil {
			return err
		}
		warnDamagedLines(p.Warn, damaged)
		if last, err = readSFTLog(logPath, step); err != nil {
			return err
		}
		if last.steps != step {
			fmt.Fprintf(p.Warn, "spiral: warning: %s logs %d of the %s resumed (its lines were lost): the log of this run lacks the others\n", logPath, last.steps, rollout.Plural(step, "step"))
		}
		flags = os.O_CREATE | os.O_WRONLY | os.O_APPEND
	}
	logf, err := os.OpenFile(logPath, flags, 0o666)
	if err != nil {
		return fmt.Errorf("rl: sft: %w", err)
	}
	defer func() { err = errors.Join(err, logf.Close()) }()
	kept := step
	if step == 0 {
		kept = -1
	}
	tb := openTensorBoardLog(p.Dir, cfg.TensorBoard, kept, logPath, func() ([]tfevents.Event, error) {
		events, _, err := sftEvents(logPath)
		return events, err
	}, p.Warn)
	defer tb.close()
	if p.Progress != nil && step > 0 {
		p.Progress(step)
	}

	// Checkpoints hold the last completed step with the generator as it
	// was when that step ended, not as an interrupted step left it.
	stepRNG, err := src.MarshalBinary()
	if err != nil {
		return err
	}
	lastSaved := step
	// syncHost brings the host weights and moments up to date when the
	// executor updates them on the device (Policy.UseDeviceOptimizer):
	// a checkpoint reads them, and the caller's export the weights.
	syncHost := func() error {
		if err := p.Policy.Train.SyncHost(); err != nil {
			return fmt.Errorf("rl: sft: %w", err)
		}
		return nil
	}
	save := func() error {
		if err := syncHost(); err != nil {
			return err
		}
		// The log's lines up to the step are on disk before the
		// checkpoint that a resume cuts the log back to.
		if err := logf.Sync(); err != nil {
			return fmt.Errorf("rl: sft: %w", err)
		}
		cur, err := json.Marshal(sftCursor{RNG: stepRNG})
		if err != nil {
			return err
		}
		path, err := checkpoint.Save(filepath.Join(p.Dir, CheckpointsDir), p.Policy.Weights, p.Optimizer,
			checkpoint.State{Step: int64(step), DataCursor: cur, Config: settings}, checkpoint.Options{Keep: cfg.Keep, Warn: p.Warn})
		if err != nil {
			return err
		}
		lastSaved = step
		fmt.Fprintf(p.Out, "checkpoint %s\n", path)
		return nil
	}
	interrupted := func(cause error) error { return saveInterrupted(p.Warn, step, lastSaved, cause, save) }
	// stopped saves the completed steps before a step's or an
	// evaluation's error ends the run, Ctrl-C's or another, as train's
	// run does: a rerun once the cause is mended resumes from the last
	// step, not from the newest regular checkpoint.
	stopped := func(cause error) error { return saveStopped(ctx, p.Warn, step, lastSaved, cause, save) }
	evaluate := func(m SFTMetrics) error {
		acc, err := SynthAccuracy(ctx, p, cfg)
		if err != nil {
			return stopped(err)
		}
		fmt.Fprintf(p.Out, "step %4d  loss %.4f  lr %.2e  search acc %.3f  aggregate acc %.3f  (%0.f tok/s)\n",
			step, m.Loss, m.LR, acc.SearchAccuracy, acc.AggregateAccuracy, m.TokensPerSecond)
		acc.Step = step
		if err := writeJSONLine(logf, acc); err != nil {
			return err
		}
		tb.write(acc, sftEvent)
		return nil
	}
	evalDue := func() bool {
		return cfg.EvalProblems > 0 && (cfg.EvalEvery > 0 && step%cfg.EvalEvery == 0 || step == cfg.Steps)
	}

	if step > cfg.Steps {
		fmt.Fprintf(p.Warn, "spiral: note: the run in %s is at step %d, past --steps %d: nothing to train\n", p.Dir, step, cfg.Steps)
	}
	if step < cfg.Steps {
		warnWithinWarmup(p.Warn, cfg.Steps, p.Schedule)
	}
	// 3. The resumed step's evaluation, unless it was logged already (an
	// interruption during it saved the step).
	if step > 0 && evalDue() && !last.evaluated {
		if err := evaluate(last.metrics); err != nil {
			return err
		}
	}
	// 4. The steps.
	for step < cfg.Steps {
		if err := ctx.Err(); err != nil {
			return interrupted(err)
		}
		next := step + 1
		exs, err := p.Task.SFTExamples(rng, nil, cfg.Batch, cfg.Mix)
		if err != nil {
			return stopped(err)
		}
		batch, err := sftBatch(p.Prompter, exs)
		if err != nil {
			return stopped(err)
		}
		if n := cfg.ContextLength; n > 0 {
			for i, e := range batch {
				if l := len(e.Prompt) + len(e.Completion); l > n {
					what := "a search example"
					if exs[i].Kind == synth.KindAggregate {
						what = fmt.Sprintf("an aggregation example (of --candidates %d candidates: give fewer)", cfg.Mix.Candidates)
					}
					return stopped(fmt.Errorf("rl: sft: step %d: %s of %d tokens passes the model's %d positions (config.json max_position_embeddings)", next, what, l, n))
				}
			}
		}
		m, err := SFTStep(ctx, p.Policy, p.Optimizer, p.Schedule, batch, cfg.MicroBatchTokens, cfg.MaxGradNorm)
		if err != nil {
			var ue *UpdateError
			if errors.As(err, &ue) {
				ue.Step = next // the run's step, not the optimizer's count
			}
			return stopped(err)
		}
		step = next
		if stepRNG, err = src.MarshalBinary(); err != nil {
			return err
		}
		// The run's step, as the step line and the evaluation lines say:
		// the optimizer's count, which SFTStep numbers by, stands still
		// at a skipped update.
		m.Step = step
		if err := writeJSONLine(logf, m); err != nil {
			return err
		}
		tb.write(m, sftEvent)
		if p.Progress != nil {
			p.Progress(1)
		}
		if m.UpdateSkipped != "" {
			fmt.Fprintf(p.Out, "step %4d  update skipped: %s\n", step, m.UpdateSkipped)
		}
		if evalDue() {
			if err := evaluate(m); err != nil {
				return err
			}
		}
		if step%cfg.CheckpointEvery == 0 || step == cfg.Steps {
			if err := save(); err != nil {
				return err
			}
		}
	}
	return syncHost() // the caller exports the weights
}

// resumeSFT loads the newest intact checkpoint of the sft run in p.Dir,
// if any, into the weights, the optimiser and the examples' generator
// src (left as cfg.Seed seeded it when the run's seed was another),
// after checking that it is an sft run of the same model with the same
// settings (other settings pass with cfg.Override). It returns the step
// resumed at (0 when there is no checkpoint).
func resumeSFT(ctx context.Context, cfg SFTConfig, p SFTParts, src *rand.PCG) (int, error) {
	path, st, err := resumeNewest(ctx, p.Dir, p.Settings.LoRA, p.Settings.Selection, p.Policy.Weights, p.Optimizer, p.Warn, func(path string) error {
		st, err := checkpoint.ReadState(path)
		if err != nil {
			return nil
		}
		prev, err := recordedSFT(p.Dir, path, st.Config, p.Settings)
		if err != nil {
			return err
		}
		if err := otherSelection(p.Dir, "selection", prev.Selection, p.Settings.Selection); err != nil {
			return err
		}
		if prev.Selection == "" && prev.LoRA == nil {
			return unrecordedSelection(p.Dir, path, p.Settings.Selection, func() ([]string, error) { return p.Policy.Weights.Names(), nil })
		}
		return nil
	})
	switch {
	case errors.Is(err, checkpoint.ErrNoCheckpoint):
		return 0, nil
	case err != nil:
		return 0, err
	}
	prev, err := recordedSFT(p.Dir, path, st.Config, p.Settings)
	if err != nil {
		return 0, err
	}
	if err := checkSettings(p.Dir, sftSettingsDiff(prev, p.Settings), cfg.Override, p.Warn); err != nil {
		return 0, err
	}
	if prev.ReplyHead == nil && p.Settings.ReplyHead != nil && *p.Settings.ReplyHead != "" {
		// An older version recorded none: its replies may have opened
		// without the head (versions before it wrote one had none).
		fmt.Fprintf(p.Warn, "spiral: warning: %s: its checkpoints record no reply head (an older spiral's, whose replies may have opened otherwise); the examples from here on open theirs with %q, as --tokenizer's chat template writes it\n", p.Dir, *p.Settings.ReplyHead)
	}
	warnOtherSFTEvals(p.Warn, *prev.SFT, cfg, int(st.Step))
	// The examples go on from the generator's state, unless --override
	// gave another seed: then from that seed's stream (src as given),
	// which the new seed's evaluations follow too.
	if prev.SFT.Seed == cfg.Seed {
		var cur sftCursor
		if err := json.Unmarshal(st.DataCursor, &cur); err != nil {
			return 0, fmt.Errorf("checkpoint %s: examples' generator: %w", path, err)
		}
		if err := src.UnmarshalBinary(cur.RNG); err != nil {
			return 0, fmt.Errorf("checkpoint %s: examples' generator: %w", path, err)
		}
	}
	fmt.Fprintf(p.Out, "resumed from %s (step %d)\n", path, st.Step)
	return int(st.Step), nil
}

// warnOtherSFTEvals warns to w, a resume at step past --override, when
// the evaluations from here on are of other problems than the run's
// (prev): another --seed draws others (SynthEvalProblems), another
// --eval-problems another number of them, other --candidates other
// aggregation prompts; the log's accuracies up to step and after it are
// then not one curve. Where either evaluates nothing (--eval-problems 0)
// there is no such pair of curves to warn of.
func warnOtherSFTEvals(w io.Writer, prev, now SFTConfig, step int) {
	if prev.EvalProblems == 0 || now.EvalProblems == 0 {
		return
	}
	var what []string
	if prev.Seed != now.Seed {
		what = append(what, fmt.Sprintf("--seed %d, not %d", now.Seed, prev.Seed))
	}
	if prev.EvalProblems != now.EvalProblems {
		what = append(what, fmt.Sprintf("--eval-problems %d, not %d", now.EvalProblems, prev.EvalProblems))
	}
	if prev.Mix.Candidates != now.Mix.Candidates {
		what = append(what, fmt.Sprintf("--candidates %d, not %d", now.Mix.Candidates, prev.Mix.Candidates))
	}
	if len(what) == 0 {
		return
	}
	fmt.Fprintf(w, "spiral: --override: %s: the evaluations from here on are of other problems than the run's: %s's accuracies up to step %d and those after it are not one curve\n",
		strings.Join(what, ", "), SFTLogFile, step)
}

// recordedSFTSettings are p.Settings as the sft run of cfg records them:
// with its schedule (p.Schedule) and its configuration.
func recordedSFTSettings(cfg SFTConfig, p SFTParts) SFTSettings {
	s := p.Settings
	s.Schedule = p.Schedule
	recorded := cfg
	s.SFT = &recorded
	return s
}

// CheckSFTRunSettings refuses an sft rerun into p.Dir that RunSFT's
// resume would refuse for its settings, p.Settings completed as RunSFT
// records them (recordedSFTSettings; p's Settings, Schedule and Dir are
// read): the newest checkpoint (whose state reads intact) records other
// settings (sftSettingsDiff), and cfg.Override is not given; or it is of
// spiral train or another model (recordedSFT). This is said before the
// caller loads the policy, reading the model's weights (minutes, for a
// real model), which the refusal made wasted, as CheckRunSettings says
// it for train. A directory without a checkpoint passes, as does any
// with cfg.Fresh or cfg.Override.
func CheckSFTRunSettings(cfg SFTConfig, p SFTParts) error {
	if cfg.Fresh || cfg.Override {
		return nil
	}
	now := recordedSFTSettings(cfg, p)
	return checkNewest(p.Dir, func(path string, st checkpoint.State) error {
		prev, err := recordedSFT(p.Dir, path, st.Config, now)
		if err != nil {
			return err
		}
		return checkSettings(p.Dir, sftSettingsDiff(prev, now), false, io.Discard)
	})
}

// CheckSFTRunIdentity refuses an sft rerun into the directory dir whose
// newest checkpoint (whose state reads intact) is spiral train's, or an
// sft run of another model or LoRA configuration than now's (its Model,
// ModelID, LoRA and Selection are read), or whose --train and --freeze
// select other parameters than the checkpoint holds (trains gives the
// names of those now's selection trains; asked for only when the
// recorded selection is another, or where the checkpoint records none:
// unrecordedSelection): what RunSFT refuses on resuming, said
// before the caller builds the model's artifacts into dir, as
// CheckRunIdentity says it for train. A directory without a checkpoint
// passes; settings that --override lets differ are RunSFT's to compare.
func CheckSFTRunIdentity(dir string, now SFTSettings, trains func() ([]string, error)) error {
	return checkNewest(dir, func(path string, st checkpoint.State) error {
		prev, err := recordedSFT(dir, path, st.Config, now)
		if err != nil {
			return err
		}
		if err := otherLoRARun(dir, prev.LoRA, prev.Selection, now.LoRA, now.Selection); err != nil {
			return err
		}
		if prev.Selection == "" && prev.LoRA == nil && now.Selection != "" {
			return unrecordedSelection(dir, path, now.Selection, trains)
		}
		return otherTrained(dir, path, "selection", prev.Selection, now.Selection, trains)
	})
}

// unrecordedSelection refuses the sft run in dir whose checkpoint at
// path records no --train and --freeze selection (sft's before
// 2026-12-06, which held the parameters it trained all the same) where
// the tensors it holds are not those the rerun's selection now trains
// (trains gives their names), saying how many each has: the resume would
// stop at them with a line for each that differs. A checkpoint whose
// tensors cannot be read passes (resuming skips and reports it).
func unrecordedSelection(dir, path, now string, trains func() ([]string, error)) error {
	held, trained, differ, err := tensorsDiffer(path, trains)
	if !differ || err != nil {
		return err
	}
	return otherRun("%s holds a run that trains other parameters: its checkpoint %s holds %d tensors and records no --train and --freeze selection (an sft run of a spiral before 2026-12-06); this one trains %d others (%s: %s): use the run's --train and --freeze, another --out, or --fresh",
		dir, path, held, trained, withFlags("selection"), now)
}

// recordedSFT returns the settings that config, recorded in the
// checkpoint at path of the sft run in dir, holds, refusing a run of
// spiral train, or of another model than now.
func recordedSFT(dir, path string, config json.RawMessage, now SFTSettings) (SFTSettings, error) {
	var prev SFTSettings
	if err := json.Unmarshal(config, &prev); err != nil {
		return SFTSettings{}, fmt.Errorf("checkpoint %s: run settings: %w (use another --out, or --fresh)", path, err)
	}
	if prev.SFT == nil {
		return SFTSettings{}, otherRun("%s holds checkpoints of spiral train, not of sft: use another --out, or --fresh", dir)
	}
	if !sameModel(prev.Model, prev.ModelID, now.Model, now.ModelID) {
		return SFTSettings{}, otherRun("%s holds an sft run of %s (model id %.12s); this one is of %s (model id %.12s): use another --out, or --fresh",
			dir, prev.Model, prev.ModelID, now.Model, now.ModelID)
	}
	return prev, nil
}

// sftSettingsDiff lists the settings that differ between an sft run's
// checkpoint (a) and its rerun (b) as "path (flags): old -> new"
// (flatDiff, withFlags), the
// model left to its own check, and the selection, the tokenizer and the
// reply head where both record one (one's tokenizer taken as the other's
// where it is the other's TokenizerBytes: sameTokenizer).
func sftSettingsDiff(a, b SFTSettings) []string {
	a.Tokenizer, b.Tokenizer = sameTokenizer(a.Tokenizer, a.TokenizerBytes, b.Tokenizer, b.TokenizerBytes)
	a.TokenizerBytes, b.TokenizerBytes = "", ""
	return flatDiff(a, b, func(k string, fa, fb map[string]string) string {
		switch k {
		case "model", "model_id":
			return ""
		case "schedule.total_steps":
			// --steps, raised to --warmup + 1 where it is not above
			// --warmup (the cosine ends after the warmup): a side that
			// shows that floor may not be the --steps given.
			if atWarmupFloor(fa) || atWarmupFloor(fb) {
				return k + " (--steps, or --warmup + 1 where --steps is not above --warmup)"
			}
		case "schedule.min_lr":
			// Derived: --lr / 10, whose own difference says it (and
			// whose quotient prints as 0.00030000000000000003).
			if fa["schedule.peak_lr"] != fb["schedule.peak_lr"] {
				return ""
			}
		case "selection", "tokenizer", "reply_head":
			if fa[k] == "" || fb[k] == "" {
				return "" // recorded by neither, or not by older versions
			}
		}
		return withFlags(k)
	})
}

// atWarmupFloor reports whether the flattened settings f (flatDiff's)
// record a cosine whose total steps are its warmup's + 1, the least
// spiral sft gives it, whatever --steps was.
func atWarmupFloor(f map[string]string) bool {
	total, err := strconv.ParseInt(f["schedule.total_steps"], 10, 64)
	if err != nil {
		return false
	}
	warmup, err := strconv.ParseInt(f["schedule.warmup_steps"], 10, 64)
	return err == nil && total == warmup+1
}

// sftLogged is what an sft log says of the step a run resumes at.
type sftLogged struct {
	// steps counts the step lines; metrics is the resumed step's line;
	// evaluated is whether its evaluation is logged.
	steps     int
	metrics   SFTMetrics
	evaluated bool
}

// readSFTLog reads the sft log at path (cut back to step) for what it
// logs of step.
func readSFTLog(path string, step int) (sftLogged, error) {
	var l sftLogged
	err := readJSONLines(path, func(b []byte) error {
		var line struct {
			Step int      `json:"step"`
			Eval *float64 `json:"eval_search_accuracy"`
			Loss *float64 `json:"loss"`
			LR   float64  `json:"lr"`
			TPS  float64  `json:"tokens_per_second"`
		}
		if err := json.Unmarshal(b, &line); err != nil {
			return err
		}
		switch {
		case line.Eval != nil:
			l.evaluated = l.evaluated || line.Step == step
		default:
			l.steps++
			if line.Step == step {
				l.metrics = SFTMetrics{Step: step, LR: line.LR, TokensPerSecond: line.TPS, Loss: math.NaN()}
				if line.Loss != nil {
					l.metrics.Loss = *line.Loss
				}
			}
		}
		return nil
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return l, fmt.Errorf("rl: sft: %w", err)
	}
	return l, nil
}

// FinishCommittedSFT finishes what an sft run killed within its model's
// commit, or after it, left in dir (the caller holds dir's lock,
// LockRun): the commit's renames (atomicfile.FinishKilled) and, once
// sft.jsonl is the very file of sft.jsonl.partial (the log is linked into
// the stage and moved in: the model is written), or its copy
// (committedLog), the removal of the
// checkpoints, of the events of the run it replaced set aside
// (SFTFinishedTensorBoardDir) and of the partial log
// (RemoveSFTCheckpoints), which would make the next sft --overwrite
// resume the finished run, and which TensorBoard shows as a run of its
// own. spiral sft does it before it looks at its --out, spiral
// tensorboard before it reads a run's logs.
func FinishCommittedSFT(dir string) error {
	if err := atomicfile.FinishKilled(dir); err != nil {
		return err
	}
	committed, err := committedLog(dir)
	if err != nil {
		return fmt.Errorf("rl: sft: %w", err)
	}
	if committed {
		if err := RemoveSFTCheckpoints(dir); err != nil {
			return fmt.Errorf("the checkpoints of the sft run whose model is written: %w", err)
		}
	}
	return nil
}

// committedLog says whether dir's sft.jsonl is the log beside it,
// sft.jsonl.partial, moved in by its run's commit: the very file (linked
// into the stage), or, on a file system without hard links, where spiral
// sft copies the log into the stage, a file of the same bytes, not none
// (each step line logs its seconds, so another run's log differs).
func committedLog(dir string) (bool, error) {
	log, partial := filepath.Join(dir, SFTLogFile), filepath.Join(dir, SFTLogFile+PartialSuffix)
	if model.SameFile(log, partial) {
		return true, nil
	}
	a, aerr := os.Stat(log)
	b, berr := os.Stat(partial)
	if errors.Is(aerr, fs.ErrNotExist) || errors.Is(berr, fs.ErrNotExist) {
		return false, nil
	}
	if err := errors.Join(aerr, berr); err != nil {
		return false, err
	}
	if a.Size() == 0 || a.Size() != b.Size() {
		return false, nil
	}
	la, err := os.ReadFile(log)
	if err != nil {
		return false, err
	}
	lb, err := os.ReadFile(partial)
	if err != nil {
		return false, err
	}
	return bytes.Equal(la, lb), nil
}

// RemoveSFTCheckpoints removes the checkpoints of the sft run in dir and
// its partial log, once the model and the log are written: they served to
// resume it, and left there they would make the next sft into dir (an
// --overwrite) resume the finished run instead of starting one. The
// event files of the run whose model and log it replaced, set aside
// (setAsideFinishedEvents), go too, and their directory with them unless
// it holds other files. The partial log, the file of the committed
// sft.jsonl, goes last, once the rest is gone: it is how the next sft
// into dir tells that the run's model is written (and removes the rest,
// which a process killed here leaves) rather than resuming its
// checkpoints as an unfinished run's.
func RemoveSFTCheckpoints(dir string) error {
	if err := errors.Join(os.RemoveAll(filepath.Join(dir, CheckpointsDir)), removeFinishedEvents(dir)); err != nil {
		return err
	}
	err := os.Remove(filepath.Join(dir, SFTLogFile+PartialSuffix))
	if errors.Is(err, fs.ErrNotExist) {
		err = nil
	}
	return err
}

// setAsideFinishedEvents moves the tensorboard directory of the finished
// sft run in dir (its sft.jsonl there, and no run since it: no partial
// log, no checkpoints) to SFTFinishedTensorBoardDir, before a run that
// starts over there (spiral sft --overwrite) cuts the event files in
// TensorBoardDir back as it empties its log: that run replaces the
// finished run's model and log only once its own model is written
// (RemoveSFTCheckpoints then removes the events set aside), so that one
// that fails, or is interrupted, leaves them too. Where
// SFTFinishedTensorBoardDir is there already (holding files of another
// writer, which removeFinishedEvents leaves, or the event files of a
// set-aside killed within these moves), spiral's event files in
// TensorBoardDir are moved into it one by one, one of a name it holds
// already refused: the run would otherwise cut them away as it starts.
func setAsideFinishedEvents(dir string) error {
	tb, aside := filepath.Join(dir, TensorBoardDir), filepath.Join(dir, SFTFinishedTensorBoardDir)
	if !fileExists(filepath.Join(dir, SFTLogFile)) || fileExists(filepath.Join(dir, SFTLogFile+PartialSuffix)) ||
		fileExists(filepath.Join(dir, CheckpointsDir)) || !isDir(tb) {
		return nil // a file named tensorboard is no run's events: left alone
	}
	fail := func(err error) error {
		return fmt.Errorf("rl: sft: set the finished run's TensorBoard events aside: %w", err)
	}
	if !fileExists(aside) {
		if err := os.Rename(tb, aside); err != nil {
			return fail(err)
		}
		return nil
	}
	files, err := tfevents.Files(tb)
	if err != nil {
		return fail(err)
	}
	if len(files) > 0 && !isDir(aside) {
		return fail(fmt.Errorf("%s is a file, not a directory of event files: move it away to start the run over", aside))
	}
	for _, f := range files {
		to := filepath.Join(aside, filepath.Base(f))
		if fileExists(to) {
			return fail(fmt.Errorf("%s exists already: move it away to start the run over", to))
		}
		if err := os.Rename(f, to); err != nil {
			return fail(err)
		}
	}
	return nil
}

// removeFinishedEvents removes spiral's event files in dir's
// SFTFinishedTensorBoardDir, and the temporary files of killed writes of
// them set aside with them (tfevents.RemoveFiles), and the directory if
// that leaves it empty (one holding another writer's files stays, and
// the next --overwrite moves the finished run's event files into it:
// setAsideFinishedEvents).
func removeFinishedEvents(dir string) error {
	aside := filepath.Join(dir, SFTFinishedTensorBoardDir)
	if fileExists(aside) && !isDir(aside) {
		return nil // another writer's file, never the events set aside
	}
	if err := tfevents.RemoveFiles(aside); err != nil {
		return fmt.Errorf("rl: the replaced run's TensorBoard events: %w", err)
	}
	entries, err := os.ReadDir(aside)
	if errors.Is(err, fs.ErrNotExist) || err == nil && len(entries) > 0 {
		return nil
	}
	if err == nil {
		err = os.Remove(aside)
	}
	if err != nil {
		return fmt.Errorf("rl: the replaced run's TensorBoard events: %w", err)
	}
	return nil
}

// sftBatch tokenizes supervised examples as chat turns (SFTExample).
func sftBatch(pr TurnPrompter, exs []synth.Example) ([]Example, error) {
	batch := make([]Example, len(exs))
	for i, e := range exs {
		var err error
		if batch[i], err = SFTExample(pr, e); err != nil {
			return nil, err
		}
	}
	return batch, nil
}

// SFTExample tokenizes the supervised example e as chat turns: the
// prompt is the user turn followed by e's Prefix (the given start of the
// reply, context without loss), the completion the rest of the reply
// with the end-of-turn id. The reply is the chat template's (pr.Reply)
// of e's reasoning, its Prefix and Completion up to the final \boxed{}
// the completion ends with, and its answer, that \boxed{}: on a
// template whose generation prompt opens a <think> block
// (Qwen3-*-Thinking-2507's) the block is closed before the answer, as
// the template writes an assistant turn and the model's own traces do;
// on one that opens the block in the assistant's turn itself (Qwen3's
// hybrid template) the reply opens it too; elsewhere the reply is
// Prefix + Completion. The prompt takes as much of the reply's start as
// the prefix is, after what the reply writes before the reasoning (all
// of it, but where the template trims the reasoning's trailing blanks
// and the completion's reasoning is blank). The prefix is tokenized
// apart from the completion, which is exact for a character tokenizer
// (the synthetic task's).
//
// The user turn of an aggregation example is rendered again from its
// Problem and Candidates (pr.AggregatePrompt), each candidate as the
// text of the completion SFTExample gives it as a search example (its
// reply, decoded: pr.Text): what a rollout's aggregation prompt carries
// of the model's own traces, a thinking template's <think> block closed
// before each candidate's answer.
func SFTExample(pr TurnPrompter, e synth.Example) (Example, error) {
	reply, n := sftReply(pr, e.Prefix, e.Completion)
	var prompt []int32
	if e.Kind == synth.KindAggregate {
		texts := make([]string, len(e.Candidates))
		for i, c := range e.Candidates {
			r, _ := sftReply(pr, "", c)
			texts[i] = pr.Text(pr.AssistantTurn(r))
		}
		var err error
		if prompt, err = pr.AggregatePrompt(e.Problem, texts); err != nil {
			return Example{}, fmt.Errorf("rl: sft: the aggregation example of %q: %w", e.Problem, err)
		}
	} else {
		prompt = pr.UserTurn(e.Prompt)
	}
	if n > 0 {
		pre := pr.AssistantTurn(reply[:n])
		prompt = slices.Concat(prompt, pre[:len(pre)-1])
	}
	return Example{Prompt: prompt, Completion: pr.AssistantTurn(reply[n:])}, nil
}

// sftReply is the reply of a supervised example whose reasoning starts
// with prefix and goes on with completion (SFTExample), and the length of
// its start that the prompt takes: where there is a prefix, what the
// reply writes before the reasoning (pr.ReplyHead) and the prefix's
// share of the rest.
func sftReply(pr TurnPrompter, prefix, completion string) (reply string, n int) {
	text := prefix + completion
	at := strings.LastIndex(text, `\boxed{`)
	if at < len(prefix) {
		at = len(text) // no answer in the completion: all reasoning
	}
	reply = pr.Reply(text[:at], text[at:])
	if prefix == "" {
		return reply, 0
	}
	n = len(pr.ReplyHead())
	for i := 0; i < len(prefix) && n < len(reply) && reply[n] == prefix[i]; i++ {
		n++
	}
	return reply, n
}

// SynthEvalProblems returns the n held-out problems of task that
// SynthAccuracy evaluates for seed, or the error it would fail with (too
// many for the task's test split), which a caller can check before
// training.
func SynthEvalProblems(task *synth.Task, n int, seed uint64) ([]synth.Item, error) {
	return task.Problems(synth.Test, n, seed+1)
}

// SynthAccuracy measures greedy accuracy on cfg.EvalProblems held-out
// problems of the synthetic task (SynthEvalProblems for cfg.Seed): search
// prompts, and aggregation prompts whose cfg.Mix.Candidates candidates
// carry planted mistakes (rendered as SFTExample renders them).
// Completions stop at 128 tokens or at the end of the model's
// cfg.ContextLength positions, and a prompt that leaves no room is an
// error.
func SynthAccuracy(ctx context.Context, p SFTParts, cfg SFTConfig) (SFTEval, error) {
	n, cands, seed := cfg.EvalProblems, cfg.Mix.Candidates, cfg.Seed
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
		agg, err := SFTExample(p.Prompter, a)
		if err != nil {
			return acc, err
		}
		prompts = append(prompts, p.Prompter.UserTurn(s.Prompt), agg.Prompt)
		golds = append(golds, s.Answer, a.Answer)
	}
	lm := p.Policy.LM
	sc := rollout.DefaultSamplerConfig()
	sc.Temperature, sc.MaxNewTokens, sc.StopIDs, sc.VocabLimit = 0, 128, p.StopIDs, p.VocabLimit
	sc.ContextLength = cfg.ContextLength
	s, err := rollout.NewSampler(lm, sc)
	if err != nil {
		return acc, err
	}
	// The KV cache goes back now: on the device layer the LM would hold
	// it until it closes, one more for each evaluation of the run.
	defer s.Release()
	traces, _, err := rollout.Complete(ctx, s, p.Prompter, prompts, 1, func(i, _ int) rollout.Stream {
		return rollout.Stream{Seed: seed, Sample: uint64(i), Phase: rollout.PhaseEval}
	}, nil)
	if err != nil {
		return acc, fmt.Errorf("rl: sft: evaluation: %w", err)
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
