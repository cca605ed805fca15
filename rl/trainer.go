package rl

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/spiral-rl/spiral/data"
	"github.com/spiral-rl/spiral/model"
	"github.com/spiral-rl/spiral/model/optim"
	"github.com/spiral-rl/spiral/model/params"
	"github.com/spiral-rl/spiral/rollout"
)

// Algorithms the trainer runs.
const (
	AlgoSpiral  = "spiral"
	AlgoGRPO    = "grpo"
	AlgoAggOnly = "agg-only"
)

// Config configures a Trainer. Zero fields take the defaults documented on
// each; Validate lists what is wrong.
type Config struct {
	// Algo is AlgoSpiral (default), AlgoGRPO or AlgoAggOnly.
	Algo string
	// Pipeline is SPIRAL's rollout shape (default 8 + 4 x 4 x 4).
	Pipeline rollout.PipelineConfig
	// GroupSize is GRPO's traces per problem (default 24, the paper's
	// rollout budget per problem, so the algorithms spend equal samples).
	GroupSize int
	// Problems is the number of informative problems per step (default 8).
	Problems int
	// MaxDrawRounds bounds dynamic sampling: rounds of drawing more
	// problems to replace uninformative ones (default 4). A step that still
	// has fewer informative problems trains on what it has, and reports it.
	MaxDrawRounds int
	// ClipLow and ClipHigh are the PPO clip bounds (defaults 0.2, 0.28).
	ClipLow, ClipHigh float64
	// MaxGradNorm clips the global gradient norm (default 1.0; < 0 = off).
	MaxGradNorm float64
	// MicroBatchTokens bounds rows x length of one training call
	// (default 16384).
	MicroBatchTokens int
	// Advantage holds the std-scaling switches (default off).
	Advantage AdvantageOptions
	// Seed derives every random draw (default 0 is a valid seed).
	Seed uint64
}

// WithDefaults fills zero fields.
func (c Config) WithDefaults() Config {
	if c.Algo == "" {
		c.Algo = AlgoSpiral
	}
	c.Pipeline = c.Pipeline.WithDefaults()
	if c.GroupSize == 0 {
		c.GroupSize = 24
	}
	if c.Problems == 0 {
		c.Problems = 8
	}
	if c.MaxDrawRounds == 0 {
		c.MaxDrawRounds = 4
	}
	if c.ClipLow == 0 {
		c.ClipLow = 0.2
	}
	if c.ClipHigh == 0 {
		c.ClipHigh = 0.28
	}
	if c.MaxGradNorm == 0 {
		c.MaxGradNorm = 1
	}
	if c.MicroBatchTokens == 0 {
		c.MicroBatchTokens = 16384
	}
	return c
}

// Validate reports every invalid field.
func (c Config) Validate() error {
	var errs []error
	switch c.Algo {
	case AlgoSpiral, AlgoGRPO, AlgoAggOnly:
	default:
		errs = append(errs, fmt.Errorf("algo %q: want %s, %s or %s", c.Algo, AlgoSpiral, AlgoGRPO, AlgoAggOnly))
	}
	if err := c.Pipeline.Validate(); err != nil {
		errs = append(errs, err)
	}
	if c.GroupSize < 2 {
		errs = append(errs, fmt.Errorf("group size %d: want >= 2", c.GroupSize))
	}
	if c.Problems < 1 || c.MaxDrawRounds < 1 || c.MicroBatchTokens < 1 {
		errs = append(errs, errors.New("problems, draw rounds and micro-batch tokens must be positive"))
	}
	if c.ClipLow < 0 || c.ClipLow >= 1 || c.ClipHigh < 0 {
		errs = append(errs, fmt.Errorf("clip bounds %v/%v: want 0 <= low < 1, high >= 0", c.ClipLow, c.ClipHigh))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("rl: config: %w", err)
	}
	return nil
}

// Judge grades a response against a gold answer (the reward).
type Judge func(response, gold string) bool

// Learner computes gradients of the policy-gradient loss: the trainer's
// view of model.TrainSession, which writes them into the store it was
// opened with.
type Learner interface {
	Run(ctx context.Context, b model.TrainBatch, res *model.TrainResult) error
}

// Trainer runs SPIRAL (or GRPO / agg-only) steps: rollout -> reward ->
// advantage -> loss -> AdamW step. The generator and the learner share the
// weight store, so every rollout sees the latest weights.
type Trainer struct {
	cfg      Config
	gen      rollout.Generator
	prompter rollout.Prompter
	pipe     *rollout.Pipeline
	learner  Learner
	judge    Judge
	problems *data.Sampler
	weights  *params.Store
	micro    *params.Store // gradients of one micro-batch (the learner's output)
	grads    *params.Store // accumulated batch gradients
	opt      *optim.AdamW
	sched    optim.Schedule
	oldLP    func(ctx context.Context, b *model.TrainBatch) error
	step     int
}

// TrainerParts are the collaborators a Trainer drives.
type TrainerParts struct {
	Generator rollout.Generator
	Prompter  rollout.Prompter
	Learner   Learner
	Judge     Judge
	Problems  *data.Sampler
	// Weights is the store the generator and learner read; MicroGrads the
	// one the learner writes.
	Weights, MicroGrads *params.Store
	Optimizer           *optim.AdamW
	Schedule            optim.Schedule
	// OldLogProbs, when set, recomputes pi_old on each micro-batch before
	// the learner runs (e.g. DetachedLogProbs over a scoring LM). Nil uses
	// the sampler's PolicyLogProbs, which are pi_old's at any temperature,
	// top-k, top-p or vocabulary limit (up to the float32 difference
	// between the cached and the full-sequence forward).
	OldLogProbs func(ctx context.Context, b *model.TrainBatch) error
}

// NewTrainer checks cfg and assembles a Trainer.
func NewTrainer(cfg Config, p TrainerParts) (*Trainer, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := p.Schedule.Validate(); err != nil {
		return nil, err
	}
	pipe, err := rollout.NewPipeline(p.Generator, p.Prompter, cfg.Pipeline)
	if err != nil {
		return nil, err
	}
	return &Trainer{cfg: cfg, gen: p.Generator, prompter: p.Prompter, pipe: pipe, learner: p.Learner, judge: p.Judge,
		problems: p.Problems, weights: p.Weights, micro: p.MicroGrads, grads: p.Weights.NewGrads(),
		opt: p.Optimizer, sched: p.Schedule, oldLP: p.OldLogProbs}, nil
}

// Step returns the number of completed steps.
func (t *Trainer) Step() int { return t.step }

// SetStep sets the completed-step count (when resuming).
func (t *Trainer) SetStep(n int) { t.step = n }

// Config returns the configuration with defaults filled in.
func (t *Trainer) Config() Config { return t.cfg }

// TrainStep runs one step and returns its metrics.
func (t *Trainer) TrainStep(ctx context.Context, progress rollout.Progress) (Metrics, error) {
	m := Metrics{Step: t.step + 1}
	start := time.Now()

	// 1. Rollout with dynamic sampling: keep informative problems only.
	samples, err := t.collect(ctx, &m, progress)
	if err != nil {
		return m, err
	}
	m.RolloutSeconds = time.Since(start).Seconds()

	// 2. Loss and gradients over all samples, token-mean over the batch.
	trainStart := time.Now()
	if len(samples) > 0 {
		if err := t.accumulate(ctx, samples, &m); err != nil {
			return m, err
		}
		// 3. Clip and update.
		var err error
		if m.GradNorm, m.LR, err = applyUpdate(t.weights, t.grads, t.opt, t.sched, t.cfg.MaxGradNorm); err != nil {
			return m, fmt.Errorf("rl: step %d: %w", m.Step, err)
		}
	}
	m.TrainSeconds = time.Since(trainStart).Seconds()
	if m.TrainSeconds > 0 {
		m.TrainTokensPerSecond = float64(m.TrainTokens) / m.TrainSeconds
	}
	m.StepSeconds = time.Since(start).Seconds()
	t.step++
	return m, nil
}

// collect rolls out problems until cfg.Problems informative ones are kept
// or the draw rounds run out, and returns their training samples.
func (t *Trainer) collect(ctx context.Context, m *Metrics, progress rollout.Progress) ([]Sample, error) {
	var samples []Sample
	kept := 0
	for round := 0; round < t.cfg.MaxDrawRounds && kept < t.cfg.Problems; round++ {
		need := t.cfg.Problems - kept
		probs := t.problems.Next(need)
		m.ProblemsDrawn += len(probs)
		// A distinct stream per (step, round) keeps resumed runs identical.
		stepSeed := uint64(t.step)*uint64(t.cfg.MaxDrawRounds) + uint64(round)
		var got []Sample
		var informative int
		var err error
		if t.cfg.Algo == AlgoGRPO {
			got, informative, err = t.rolloutGRPO(ctx, probs, stepSeed, m, progress)
		} else {
			got, informative, err = t.rolloutSpiral(ctx, probs, stepSeed, m, progress)
		}
		if err != nil {
			return nil, err
		}
		samples = append(samples, got...)
		kept += informative
	}
	m.ProblemsInformative = kept
	m.finishRollout()
	return samples, nil
}

func (t *Trainer) reward(text, gold string) float64 {
	if t.judge(text, gold) {
		return 1
	}
	return 0
}

func (t *Trainer) rolloutSpiral(ctx context.Context, probs []data.Problem, stepSeed uint64, m *Metrics, progress rollout.Progress) ([]Sample, int, error) {
	groups, ps, err := t.pipe.Run(ctx, probs, t.cfg.Seed, int(stepSeed), progress)
	if err != nil {
		return nil, 0, err
	}
	m.addPhase(&m.Search, ps.Search)
	m.addPhase(&m.Aggregate, ps.Aggregate)
	var samples []Sample
	informative := 0
	for _, g := range groups {
		sp := SpiralProblem{NumSearch: len(g.Search), Subsets: g.Subsets, Rewards: make([][]float64, len(g.Aggregates))}
		for _, tr := range g.Search {
			m.Search.observe(t.reward(tr.Text, g.Problem.Answer), tr.Completion)
		}
		for s, aggs := range g.Aggregates {
			sp.Rewards[s] = make([]float64, len(aggs))
			for j, tr := range aggs {
				r := t.reward(tr.Text, g.Problem.Answer)
				sp.Rewards[s][j] = r
				m.Aggregate.observe(r, tr.Completion)
			}
		}
		opt := t.cfg.Advantage
		opt.AggregationOnly = t.cfg.Algo == AlgoAggOnly
		res, err := SpiralAdvantages(sp, opt)
		if err != nil {
			return nil, 0, fmt.Errorf("rl: problem %q: %w", g.Problem.ID, err)
		}
		if !res.Informative() {
			continue
		}
		informative++
		for i, tr := range g.Search {
			if !res.SearchMask[i] {
				continue
			}
			samples = append(samples, Sample{Prompt: tr.Prompt, Completion: tr.Tokens, OldLogProbs: tr.PolicyLogProbs, Advantage: float32(res.Search[i]), Kind: "search"})
			m.observeAdvantage(res.Search[i])
		}
		for s, aggs := range g.Aggregates {
			for j, tr := range aggs {
				samples = append(samples, Sample{Prompt: tr.Prompt, Completion: tr.Tokens, OldLogProbs: tr.PolicyLogProbs, Advantage: float32(res.Aggregation[s][j]), Kind: "aggregate"})
				m.observeAdvantage(res.Aggregation[s][j])
			}
		}
	}
	return samples, informative, nil
}

func (t *Trainer) rolloutGRPO(ctx context.Context, probs []data.Problem, stepSeed uint64, m *Metrics, progress rollout.Progress) ([]Sample, int, error) {
	G := t.cfg.GroupSize
	reqs := make([]rollout.Request, 0, len(probs)*G)
	for i, p := range probs {
		prompt, err := t.prompter.SearchPrompt(p.Problem)
		if err != nil {
			return nil, 0, fmt.Errorf("rl: problem %q: %w", p.ID, err)
		}
		for j := 0; j < G; j++ {
			reqs = append(reqs, rollout.Request{Prompt: prompt, Seed: rollout.DeriveSeed(t.cfg.Seed, stepSeed, uint64(i), uint64(j), 1)})
		}
	}
	outs, st, err := t.gen.Generate(ctx, reqs, progress)
	if err != nil {
		return nil, 0, fmt.Errorf("rl: grpo rollout: %w", err)
	}
	m.addPhase(&m.Search, st)
	var samples []Sample
	informative := 0
	for i, p := range probs {
		rewards := make([]float64, G)
		for j := 0; j < G; j++ {
			c := outs[i*G+j]
			rewards[j] = t.reward(t.prompter.Text(c.Tokens), p.Answer)
			m.Search.observe(rewards[j], c)
		}
		adv, err := GRPOAdvantages(rewards, GRPOOptions{})
		if err != nil {
			return nil, 0, err
		}
		nonzero := false
		for _, a := range adv {
			nonzero = nonzero || a != 0
		}
		if !nonzero {
			continue
		}
		informative++
		for j := 0; j < G; j++ {
			c := outs[i*G+j]
			samples = append(samples, Sample{Prompt: reqs[i*G+j].Prompt, Completion: c.Tokens, OldLogProbs: c.PolicyLogProbs, Advantage: float32(adv[j]), Kind: "grpo"})
			m.observeAdvantage(adv[j])
		}
	}
	return samples, informative, nil
}

// accumulate runs the learner over micro-batches and sums the token-mean
// gradients into t.grads, weighted by each micro-batch's share of tokens.
func (t *Trainer) accumulate(ctx context.Context, samples []Sample, m *Metrics) error {
	g, err := Gradients(ctx, t.learner, t.micro, t.grads, samples, GradientOptions{
		MicroBatchTokens: t.cfg.MicroBatchTokens, ClipLow: t.cfg.ClipLow, ClipHigh: t.cfg.ClipHigh, Prepare: t.oldLP})
	if err != nil {
		return err
	}
	m.Loss, m.Entropy, m.LossTokens, m.TrainTokens = g.Loss, g.Entropy, g.LossTokens, g.Positions
	m.Samples = len(samples)
	return nil
}

// applyUpdate clips grads to maxGradNorm (<= 0: only measures the norm),
// refuses a non-finite norm, and takes an AdamW step on w at the
// schedule's rate. It returns the pre-clip norm and the rate used.
func applyUpdate(w, grads *params.Store, opt *optim.AdamW, sched optim.Schedule, maxGradNorm float64) (norm, lr float64, err error) {
	if maxGradNorm > 0 {
		norm = grads.ClipByNorm(maxGradNorm)
	} else {
		norm = grads.Norm()
	}
	if math.IsNaN(norm) || math.IsInf(norm, 0) {
		return norm, 0, fmt.Errorf("gradient norm is %v; not updating", norm)
	}
	lr = sched.LR(opt.Steps())
	return norm, lr, opt.Step(w, grads, lr)
}

// GradientOptions configures Gradients.
type GradientOptions struct {
	// MicroBatchTokens bounds rows x length of one learner call.
	MicroBatchTokens int
	// ClipLow and ClipHigh are the PPO clip bounds.
	ClipLow, ClipHigh float64
	// Prepare, if set, is called on each micro-batch before the learner
	// (e.g. DetachedLogProbs for supervised steps).
	Prepare func(ctx context.Context, b *model.TrainBatch) error
}

// GradientStats summarise one Gradients call.
type GradientStats struct {
	// Loss, Entropy and NLL (-log-probability of the trained tokens) are
	// token-means over the loss tokens.
	Loss, Entropy, NLL float64
	// LossTokens counts loss tokens; Positions rows x length processed.
	LossTokens, Positions int
}

// Gradients computes the gradient of the token-mean loss over all samples
// into grads: it packs them into micro-batches, runs the learner on each
// (which writes its micro-batch's token-mean gradient into micro) and
// accumulates micro x tokens_micro / tokens_total.
func Gradients(ctx context.Context, learner Learner, micro, grads *params.Store, samples []Sample, opt GradientOptions) (GradientStats, error) {
	var gs GradientStats
	batches, tokens, err := MicroBatches(samples, opt.MicroBatchTokens, float32(opt.ClipLow), float32(opt.ClipHigh))
	if err != nil {
		return gs, err
	}
	for _, n := range tokens {
		gs.LossTokens += n
	}
	if gs.LossTokens == 0 {
		grads.Zero()
		return gs, nil
	}
	acc, err := optim.NewAccumulator(grads, gs.LossTokens)
	if err != nil {
		return gs, err
	}
	var res model.TrainResult
	lossSum, entSum, nllSum := 0.0, 0.0, 0.0
	for k := range batches {
		b := &batches[k]
		if tokens[k] == 0 {
			continue
		}
		if opt.Prepare != nil {
			if err := opt.Prepare(ctx, b); err != nil {
				return gs, err
			}
		}
		if err := learner.Run(ctx, *b, &res); err != nil {
			return gs, fmt.Errorf("rl: micro-batch %d/%d: %w", k+1, len(batches), err)
		}
		if err := acc.Add(micro, tokens[k]); err != nil {
			return gs, err
		}
		lossSum += float64(res.Loss) * float64(tokens[k])
		for i, mask := range b.LossMask {
			if mask != 0 {
				entSum += float64(res.Entropy[i])
				nllSum -= float64(res.LogProbs[i])
			}
		}
		gs.Positions += b.Batch * b.Seq
	}
	if err := acc.Done(); err != nil {
		return gs, err
	}
	gs.Loss = lossSum / float64(gs.LossTokens)
	gs.Entropy = entSum / float64(gs.LossTokens)
	gs.NLL = nllSum / float64(gs.LossTokens)
	return gs, nil
}
