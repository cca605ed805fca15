package rl

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/spiral-rl/spiral/data"
	"github.com/spiral-rl/spiral/model"
	"github.com/spiral-rl/spiral/model/optim"
	"github.com/spiral-rl/spiral/model/params"
	"github.com/spiral-rl/spiral/rollout"
)

// Algorithms the trainer runs.
const (
	AlgoSpiral     = "spiral"
	AlgoGRPO       = "grpo"
	AlgoAggOnly    = "agg-only"
	AlgoSearchOnly = "search-only"
)

// Config configures a Trainer. DefaultConfig gives the defaults; every
// field is used as given, so a zero is a zero (a clip bound of 0 is a
// legitimate choice), and Validate names what is wrong.
type Config struct {
	// Algo is AlgoSpiral, AlgoGRPO, AlgoAggOnly or AlgoSearchOnly.
	Algo string `json:"algo"`
	// Pipeline is SPIRAL's rollout shape (8 + 4 x 4 x 4).
	Pipeline rollout.PipelineConfig `json:"pipeline"`
	// GroupSize is GRPO's traces per problem (24, the paper's rollout
	// budget per problem, so the algorithms spend equal samples).
	GroupSize int `json:"group"`
	// Problems is the number of informative problems per step (8).
	Problems int `json:"problems"`
	// MaxDrawRounds bounds dynamic sampling: rounds of drawing more
	// problems to replace uninformative ones (4). A step that still has
	// fewer informative problems trains on what it has, and reports it.
	MaxDrawRounds int `json:"draw_rounds"`
	// ClipLow and ClipHigh are the PPO clip bounds eps_low, eps_high (0.2,
	// 0.28, DAPO's clip-higher; Yu et al. 2025, arXiv:2503.14476).
	ClipLow  float64 `json:"clip_low"`
	ClipHigh float64 `json:"clip_high"`
	// MaxGradNorm clips the global gradient norm (1.0); 0 or less turns
	// clipping off.
	MaxGradNorm float64 `json:"max_grad_norm"`
	// MicroBatchTokens bounds rows x length of one training call (16384;
	// the CLI sizes it to the model's vocabulary).
	MicroBatchTokens int `json:"micro_batch_tokens"`
	// SeparateRows trains every trace in a row of its own, never packing
	// the completions of one prompt in one row (GradientOptions.
	// PackPrompts), as runs before packing did: the same gradient but for
	// float rounding, and more positions (false: pack).
	SeparateRows bool `json:"separate_rows,omitempty"`
	// Advantage holds the std-scaling switches (off).
	Advantage AdvantageOptions `json:"advantage"`
	// Reward says which traces can earn a reward (explicit answers only).
	Reward RewardRule `json:"reward"`
	// Seed derives every random draw (1).
	Seed uint64 `json:"seed"`
}

// DefaultConfig returns the defaults documented on Config's fields.
func DefaultConfig() Config {
	return Config{Algo: AlgoSpiral, Pipeline: rollout.DefaultPipelineConfig(), GroupSize: 24, Problems: 8, MaxDrawRounds: 4,
		ClipLow: 0.2, ClipHigh: 0.28, MaxGradNorm: 1, MicroBatchTokens: 16384, Seed: 1}
}

// Validate reports every invalid field, naming the training flags.
func (c Config) Validate() error {
	var errs []error
	switch c.Algo {
	case AlgoSpiral, AlgoGRPO, AlgoAggOnly, AlgoSearchOnly:
	default:
		errs = append(errs, fmt.Errorf("--algo %q: want %s, %s, %s or %s", c.Algo, AlgoSpiral, AlgoGRPO, AlgoAggOnly, AlgoSearchOnly))
	}
	// GRPO reads neither the pipeline nor the advantage switches, the
	// others not --group, the ablations not the scaling of the advantages
	// they do not train (train warns of the flags given; ignoredFields):
	// what an algorithm ignores is not refused.
	if c.Algo != AlgoGRPO {
		if err := c.Pipeline.Validate(); err != nil {
			errs = append(errs, err)
		}
	}
	if c.Algo == AlgoGRPO && c.Pipeline.AggregationRounds() > 1 {
		errs = append(errs, fmt.Errorf("--algo %s with --agg-rounds %d: GRPO samples --group traces a problem and aggregates none; want 1", AlgoGRPO, c.Pipeline.Rounds))
	}
	if c.Algo == AlgoSearchOnly && c.Pipeline.AggregationRounds() > 1 {
		errs = append(errs, fmt.Errorf("--algo %s with --agg-rounds %d: search-only trains the search traces alone, which only the first round reads, so later rounds would be sampled for nothing; want 1",
			AlgoSearchOnly, c.Pipeline.Rounds))
	}
	// Under SPIRAL a later round credits an aggregation trace with its
	// worth to the next round's aggregator; agg-only masks that out, so
	// there its later rounds do not help.
	if c.Pipeline.N2 == 1 && (c.Algo == AlgoAggOnly || c.Algo == AlgoSpiral && c.Pipeline.AggregationRounds() == 1) {
		errs = append(errs, fmt.Errorf("--algo %s with --n2 1: an aggregation trace's baseline is the mean reward of its subset's --n2 traces, so with one its advantage is always 0 and no aggregation trace would learn; want --n2 >= 2 (or --algo %s, which trains the search traces alone)",
			c.Algo, AlgoSearchOnly))
	}
	// That worth is the set advantage of the next round's subsets holding
	// the trace, always 0 where each holds every one: with --n2 1 a later
	// round draws --k subsets of --n from --k traces, so --n = --k (--k 1
	// included) leaves no aggregation trace of any round to learn.
	if p := c.Pipeline; p.N2 == 1 && c.Algo == AlgoSpiral && p.AggregationRounds() > 1 && p.N >= p.K {
		errs = append(errs, fmt.Errorf("--algo %s with --n2 1, --agg-rounds %d, --k %d and --n %d: an aggregation trace's baseline is the mean reward of its subset's --n2 traces, so with one its own advantage is always 0, and a later round's --k subsets of --n of the previous round's %d traces each hold every one, so its worth to that round is always 0 too: no aggregation trace would learn; want --n2 >= 2, or --n < --k (or --algo %s, which trains the search traces alone)",
			AlgoSpiral, p.Rounds, p.K, p.N, p.K, AlgoSearchOnly))
	}
	// --search-own-reward adds each held trace's own reward, centred on
	// the held traces' mean: it moves them whenever two or more are held.
	if p := c.Pipeline; c.Algo == AlgoSearchOnly && p.N1 > 0 && p.N > 0 && p.N <= p.N1 && (p.K == 1 || p.N == p.N1) && (c.Advantage.SearchOwnReward == 0 || p.N < 2) {
		errs = append(errs, fmt.Errorf("--algo %s with --k %d, --n %d and --n1 %d: a search trace's advantage is the mean over the subsets holding it of their value less the mean value of all --k subsets, so with one subset, or subsets that each hold every search trace, it is always 0 and no trace would learn; want --k >= 2 and --n < --n1 (or --search-own-reward above 0 with --n >= 2)",
			AlgoSearchOnly, p.K, p.N, p.N1))
	}
	if c.Algo == AlgoGRPO && c.GroupSize < 2 {
		errs = append(errs, fmt.Errorf("--group %d: want >= 2 traces per problem", c.GroupSize))
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"--problems", c.Problems}, {"--draw-rounds", c.MaxDrawRounds}, {"--micro-batch-tokens", c.MicroBatchTokens}} {
		if f.v < 1 {
			errs = append(errs, fmt.Errorf("%s %d: want >= 1", f.name, f.v))
		}
	}
	if !(c.ClipLow >= 0 && c.ClipLow < 1) {
		errs = append(errs, fmt.Errorf("--clip-low %v: want 0 <= eps_low < 1", c.ClipLow))
	}
	if !(c.ClipHigh >= 0) || math.IsInf(c.ClipHigh, 0) {
		errs = append(errs, fmt.Errorf("--clip-high %v: want a finite eps_high >= 0", c.ClipHigh))
	}
	// The weight multiplies centred rewards into the examples' float32
	// advantages: past float32's range they would be infinite.
	if w := c.Advantage.SearchOwnReward; !(w >= 0 && w <= math.MaxFloat32) {
		errs = append(errs, fmt.Errorf("--search-own-reward %v: want a finite weight >= 0, at most float32's largest value %v", w, float64(math.MaxFloat32)))
	}
	if math.IsNaN(c.MaxGradNorm) || math.IsInf(c.MaxGradNorm, 0) {
		errs = append(errs, fmt.Errorf("--max-grad-norm %v: want a finite norm (0 or less = no clipping)", c.MaxGradNorm))
	}
	return errors.Join(errs...)
}

// ignoredFields are the keys of Config's JSON, as settingsDiff flattens
// them under "rl.", that algo does not read: GRPO's are the pipeline's
// and the advantage switches, the others' --group, and the ablations'
// the scaling of the advantages they do not train (search-only's of the
// aggregation traces, agg-only's of the set advantages).
func ignoredFields(algo string) []string {
	switch algo {
	case AlgoGRPO:
		return []string{"pipeline.", "advantage."}
	case AlgoSearchOnly:
		return []string{"group", "advantage.ScaleAggregation"}
	case AlgoAggOnly:
		return []string{"group", "advantage.ScaleSearch", "advantage.SearchOwnReward"}
	}
	return []string{"group"}
}

// readsPipeline reports whether algo's steps run the SPIRAL pipeline
// (all but GRPO's, whose final RSA alone reads its --candidate-tokens).
func readsPipeline(algo string) bool {
	return !slices.Contains(ignoredFields(algo), "pipeline.")
}

// Learner computes gradients of the token-mean policy-gradient loss: the
// trainer's view of the model's training session.
type Learner interface {
	// Accumulate adds scale x d loss(b) / d w into grads, where loss(b) is
	// b's token-mean clipped policy-gradient loss, and fills res with b's
	// per-token log-probabilities and entropies and its loss.
	Accumulate(ctx context.Context, b model.TrainBatch, scale float32, grads *params.Store, res *model.TrainResult) error
}

// deviceUpdater is a Learner that keeps the gradients and AdamW on the
// device (model.Executor after UseDeviceOptimizer): the trainer calls
// Update instead of clipping and stepping the host stores, and SyncHost
// before anything reads the host weights or moments.
type deviceUpdater interface {
	Update(lr, maxGradNorm float64) (model.UpdateResult, error)
	SyncHost() error
	SyncWeights() error
	UsesDeviceOptimizer() bool
}

// Trainer runs SPIRAL (or GRPO / agg-only / search-only) steps: rollout
// -> reward -> advantage -> loss -> AdamW step. The generator and the
// learner share the weight store, so every rollout sees the latest
// weights.
type Trainer struct {
	cfg      Config
	gen      rollout.Generator
	prompter rollout.Prompter
	judge    rollout.Judge
	pipe     *rollout.Pipeline
	learner  Learner
	problems *data.Stream
	weights  *params.Store
	grads    *params.Store // the batch's accumulated gradients
	opt      *optim.AdamW
	sched    optim.Schedule
	step     int
	streams  DrawStreams
	sync     rollout.WeightSync
	synced   int // the step whose weights the engine serves (-1: none yet)
}

// TrainerParts are the collaborators a Trainer drives.
type TrainerParts struct {
	Generator rollout.Generator
	Prompter  rollout.Prompter
	Judge     rollout.Judge
	Learner   Learner
	Problems  *data.Stream
	// Weights is the store the generator and learner read; Grads receives
	// each step's accumulated gradients (the one model-sized gradient
	// store of the step; nil when the learner keeps them on the device
	// for its own optimizer).
	Weights, Grads *params.Store
	Optimizer      *optim.AdamW
	Schedule       optim.Schedule
	// Sync, when the generator is a serving engine, brings the engine to
	// the current weights before each step's rollouts (nil: the generator
	// reads the weight store itself).
	Sync rollout.WeightSync
}

// NewTrainer checks cfg and assembles a Trainer.
func NewTrainer(cfg Config, p TrainerParts) (*Trainer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("rl: config: %w", err)
	}
	if err := p.Schedule.Validate(); err != nil {
		return nil, err
	}
	var pipe *rollout.Pipeline // SPIRAL's rollouts; GRPO samples groups
	if cfg.Algo != AlgoGRPO {
		var err error
		if pipe, err = rollout.NewPipeline(p.Generator, p.Prompter, cfg.Pipeline); err != nil {
			return nil, err
		}
	}
	switch d, ok := p.Learner.(deviceUpdater); {
	case p.Grads != nil:
		if err := p.Weights.SameLayout(p.Grads); err != nil {
			return nil, fmt.Errorf("rl: trainer: gradient store: %w", err)
		}
	case !ok || !d.UsesDeviceOptimizer():
		return nil, errors.New("rl: trainer: no gradient store, and the learner does not keep its gradients on the device")
	}
	return &Trainer{cfg: cfg, gen: p.Generator, prompter: p.Prompter, judge: p.Judge, pipe: pipe, learner: p.Learner,
		problems: p.Problems, weights: p.Weights, grads: p.Grads, opt: p.Optimizer, sched: p.Schedule, sync: p.Sync, synced: -1}, nil
}

// Step returns the number of completed steps.
func (t *Trainer) Step() int { return t.step }

// SetStep sets the completed-step count (when resuming).
func (t *Trainer) SetStep(n int) { t.step = n }

// DrawStreams places the random streams of a run's rollouts: draw round
// i of step s (counted from 0) rolls out on stream Base + (s - Step) x
// MaxDrawRounds + i. A run starts at the zero value; a resumed run whose
// MaxDrawRounds changed starts a new stretch after the streams its steps
// so far could use (NextDrawStreams), so that no stream serves two steps.
type DrawStreams struct {
	Base uint64 `json:"base"`
	Step int    `json:"step"`
}

// NextDrawStreams returns the streams from step on of a run that drew
// with s and stride (its MaxDrawRounds) until step, for a new stride.
func (s DrawStreams) NextDrawStreams(step, stride int) DrawStreams {
	return DrawStreams{Base: s.Base + uint64(step-s.Step)*uint64(stride), Step: step}
}

// SetDrawStreams sets where the rollouts' random streams lie (when
// resuming).
func (t *Trainer) SetDrawStreams(s DrawStreams) { t.streams = s }

// DrawStreams returns where the rollouts' random streams lie.
func (t *Trainer) DrawStreams() DrawStreams { return t.streams }

// device returns the learner as a deviceUpdater when it keeps AdamW on
// the device, else nil.
func (t *Trainer) device() deviceUpdater { return onDevice(t.learner) }

// onDevice returns l as a deviceUpdater when it keeps AdamW on the
// device, else nil.
func onDevice(l Learner) deviceUpdater {
	if d, ok := l.(deviceUpdater); ok && d.UsesDeviceOptimizer() {
		return d
	}
	return nil
}

// update clips and applies the step's AdamW update, on the device when
// the learner keeps it there.
func (t *Trainer) update() (update, error) {
	return stepUpdate(t.device(), t.weights, t.grads, t.opt, t.sched, t.cfg.MaxGradNorm)
}

// stepUpdate clips and applies a step's AdamW update: with d (a learner
// that keeps AdamW on the device; onDevice) there, its gradients being
// there, else on the host stores w and grads (applyUpdate).
func stepUpdate(d deviceUpdater, w, grads *params.Store, opt *optim.AdamW, sched optim.Schedule, maxGradNorm float64) (update, error) {
	if d == nil {
		return applyUpdate(w, grads, opt, sched, maxGradNorm)
	}
	lr := sched.LR(opt.Steps())
	r, err := d.Update(lr, maxGradNorm)
	u := update{norm: r.Norm, lr: lr, skipped: r.Skipped}
	if math.IsNaN(r.Norm) || math.IsInf(r.Norm, 0) {
		u.lr = 0 // as applyUpdate: no rate for a step skipped by its norm
	}
	return u, err
}

// UpdateResult is one step's update as Update applied it.
type UpdateResult struct {
	// Norm is the gradient's global norm before clipping; LR the rate
	// applied (0 for an update skipped for a non-finite norm); Skipped
	// says why the update was not applied ("" when it was).
	Norm, LR float64
	Skipped  string
}

// Update clips and applies one step's AdamW update as a training step
// does (TrainStep, SFTStep): on the device when learner keeps AdamW
// there (model.Executor after UseDeviceOptimizer), else on the host
// stores w and grads, at sched's rate for opt's step, skipping an update
// that would make the weights non-finite. Benchmarks call it to take
// train's step.
func Update(learner Learner, w, grads *params.Store, opt *optim.AdamW, sched optim.Schedule, maxGradNorm float64) (UpdateResult, error) {
	u, err := stepUpdate(onDevice(learner), w, grads, opt, sched, maxGradNorm)
	return UpdateResult{Norm: u.norm, LR: u.lr, Skipped: u.skipped}, err
}

// SyncHost brings the host weights and optimizer moments up to date
// when the learner updates them on the device (a checkpoint, an export
// or a serving engine reads the host ones); otherwise it does nothing.
func (t *Trainer) SyncHost() error {
	if d := t.device(); d != nil {
		if err := d.SyncHost(); err != nil {
			return fmt.Errorf("rl: %w", err)
		}
	}
	return nil
}

// EngineSync is what one weight sync of a serving engine took: its wall
// time and what it copied between host and device (the weights brought
// to the host under --device cuda). Zero when there was nothing to sync.
type EngineSync struct {
	Seconds         float64
	DeviceCopyBytes int64
}

// SyncEngine brings a serving engine (TrainerParts.Sync) to the weights
// of the steps completed so far, unless it has them already; without
// one it does nothing. Rollouts and evaluations call it first; it
// returns what the sync took, so that whichever of them did it logs it.
// Where the engine has this step's weights already (synced for an
// evaluation), it checks that the engine still serves them.
func (t *Trainer) SyncEngine(ctx context.Context) (EngineSync, error) {
	if t.sync == nil {
		return EngineSync{}, nil
	}
	if t.synced == t.step { // synced for an evaluation: still served?
		return EngineSync{}, t.CheckEngine(ctx)
	}
	start, copied := time.Now(), t.deviceCopies()
	if d := t.device(); d != nil {
		if err := d.SyncWeights(); err != nil { // what the engine reads
			return EngineSync{}, fmt.Errorf("rl: %w", err)
		}
	}
	if err := t.sync.Sync(ctx, t.step); err != nil {
		return EngineSync{}, fmt.Errorf("rl: after step %d: %w", t.step, err)
	}
	t.synced = t.step
	return EngineSync{Seconds: time.Since(start).Seconds(), DeviceCopyBytes: t.deviceCopies() - copied}, nil
}

// CheckEngine fails when a serving engine no longer serves the weights
// SyncEngine loaded last (rollout.WeightSync.Check: it was restarted);
// without one, or before the first sync, it does nothing.
func (t *Trainer) CheckEngine(ctx context.Context) error {
	if t.sync == nil || t.synced < 0 {
		return nil
	}
	if err := t.sync.Check(ctx); err != nil {
		return fmt.Errorf("rl: the weights of step %d: %w", t.synced, err)
	}
	return nil
}

// Config returns the configuration.
func (t *Trainer) Config() Config { return t.cfg }

// TrainStep runs one step and returns its metrics. An update that would
// make the weights non-finite (a non-finite gradient, or an overflowing
// AdamW step) is skipped and reported in Metrics.UpdateSkipped; the step
// still counts. A step with no informative problem, or whose trained
// traces hold no token, trains nothing and is marked Metrics.NoUpdate;
// it counts too.
func (t *Trainer) TrainStep(ctx context.Context, progress rollout.Progress) (Metrics, error) {
	m := Metrics{Step: t.step + 1}
	start := time.Now()
	copied := t.deviceCopies() // the sync's copies are the step's too

	// 0. A serving engine samples with the weights trained so far.
	// A held-out evaluation after the previous step synced it already,
	// and logged the sync on its eval.jsonl line: this step logs none.
	if t.sync != nil {
		s, err := t.SyncEngine(ctx)
		if err != nil {
			return m, err
		}
		m.SyncSeconds = s.Seconds
		m.PolicyVersion, m.PolicyLag = t.sync.Version(), t.step-t.synced
	}

	// 1. Rollout with dynamic sampling: keep informative problems only.
	rolloutStart := time.Now() // after the sync, which SyncSeconds times
	examples, err := t.collect(ctx, &m, progress)
	if err != nil {
		return m, err
	}
	// An engine restarted while they ran answered from other weights.
	if err := t.CheckEngine(ctx); err != nil {
		return m, fmt.Errorf("step %d's rollouts: %w", m.Step, err)
	}
	m.RolloutSeconds = time.Since(rolloutStart).Seconds()

	// 2. Loss and gradients over all examples, token-mean over the batch.
	trainStart := time.Now()
	// Only completion tokens carry a gradient: examples that all hold
	// none (a serving engine's completions cut before their first token)
	// train nothing, on which AdamW's step would still move the weights
	// (their decay, its momentum) and advance the warm-up.
	if slices.ContainsFunc(examples, func(e Example) bool { return len(e.Completion) > 0 }) {
		if r, ok := t.gen.(interface{ Release() }); ok {
			r.Release() // the rollouts' KV cache is not needed while learning
		}
		// A serving engine's numbers are not the policy's: its traces
		// carry no log-probabilities, and pi_old is the current policy
		// (synced before the rollout), computed by the learner's own
		// forward pass (the detached loss: ratio 1).
		detached := slices.ContainsFunc(examples, func(e Example) bool { return e.OldLogProbs == nil && len(e.Completion) > 0 })
		g, err := Gradients(ctx, t.learner, t.grads, examples, GradientOptions{
			MicroBatchTokens: t.cfg.MicroBatchTokens, ClipLow: t.cfg.ClipLow, ClipHigh: t.cfg.ClipHigh, Detached: detached, PackPrompts: !t.cfg.SeparateRows})
		if err != nil {
			return m, err
		}
		m.Loss, m.Entropy, m.LossTokens, m.TrainTokens = g.Loss, g.Entropy, g.LossTokens, g.Positions
		for _, kind := range []string{KindSearch, KindGRPO} {
			if e, ok := g.KindEntropy[kind]; ok && !math.IsNaN(e) && !math.IsInf(e, 0) {
				m.EntropySearch = &e
			}
		}
		m.EngineLogProbDiff, m.EngineLogProbMaxDiff, m.EngineLogProbTokens = g.EngineAbsDiff, g.EngineMaxDiff, g.EngineTokens
		m.Examples = len(examples)
		// 3. Clip and update.
		u, err := t.update()
		if err != nil {
			return m, &UpdateError{Step: m.Step, Err: err}
		}
		m.GradNorm, m.LR, m.UpdateSkipped = u.norm, u.lr, u.skipped
	} else {
		m.NoUpdate = true
		m.trainedNone()
	}
	m.TrainSeconds = time.Since(trainStart).Seconds()
	if m.TrainSeconds > 0 {
		m.TrainTokensPerSecond = float64(m.TrainTokens) / m.TrainSeconds
	}
	m.DeviceCopyBytes = t.deviceCopies() - copied
	m.StepSeconds = time.Since(start).Seconds()
	t.step++
	return m, nil
}

// UpdateError is a step that failed while applying its update: the
// weights and optimizer moments may be part-updated, so they are not the
// previous step's either, and a run does not save them (any other failure
// of a step leaves the completed steps' weights as they were).
type UpdateError struct {
	Step int
	Err  error
}

func (e *UpdateError) Error() string { return fmt.Sprintf("rl: step %d: update: %v", e.Step, e.Err) }
func (e *UpdateError) Unwrap() error { return e.Err }

// deviceCopies sums the bytes the generator and the learner have copied
// between host and device memory so far (those that count them).
func (t *Trainer) deviceCopies() int64 {
	var n int64
	for _, c := range []any{t.gen, t.learner} {
		if c, ok := c.(interface{ CopiedBytes() int64 }); ok {
			n += c.CopiedBytes()
		}
	}
	return n
}

// collect rolls out problems until cfg.Problems informative ones are kept
// or the draw rounds run out, and returns their training examples.
func (t *Trainer) collect(ctx context.Context, m *Metrics, progress rollout.Progress) ([]Example, error) {
	var examples []Example
	kept := 0
	for round := 0; round < t.cfg.MaxDrawRounds && kept < t.cfg.Problems; round++ {
		probs := t.problems.Next(t.cfg.Problems - kept)
		m.ProblemsDrawn += len(probs)
		// A distinct stream per (step, draw round) keeps resumed runs
		// identical (DrawStreams).
		r := t.streams.Base + uint64(t.step-t.streams.Step)*uint64(t.cfg.MaxDrawRounds) + uint64(round)
		var got []Example
		var informative int
		var err error
		if t.cfg.Algo == AlgoGRPO {
			got, informative, err = t.rolloutGRPO(ctx, probs, r, m, progress)
		} else {
			got, informative, err = t.rolloutSpiral(ctx, probs, r, m, progress)
		}
		if err != nil {
			return nil, err
		}
		examples = append(examples, got...)
		kept += informative
	}
	m.ProblemsInformative = kept
	m.finishRollout()
	return examples, nil
}

// reward is the judge's verdict on tr as a reward in {0, 1}, recorded in
// the phases' metrics.
func (t *Trainer) reward(tr rollout.Trace, gold string, phases ...*PhaseMetrics) float64 {
	v := t.judge.Judge(tr, gold)
	r := 0.0
	if v.Correct {
		r = 1
	}
	for _, p := range phases {
		p.observe(r, tr, v)
	}
	return r
}

func (t *Trainer) rolloutSpiral(ctx context.Context, probs []data.Problem, round uint64, m *Metrics, progress rollout.Progress) ([]Example, int, error) {
	groups, ps, err := t.pipe.Run(ctx, probs, t.cfg.Seed, round, progress)
	if err != nil {
		return nil, 0, err
	}
	m.addPhase(&m.Search, ps.Search)
	if len(ps.Aggregate) > 1 && m.AggregateRounds == nil {
		m.AggregateRounds = make([]PhaseMetrics, len(ps.Aggregate))
	}
	for a, st := range ps.Aggregate {
		m.addPhase(&m.Aggregate, st)
		if m.AggregateRounds != nil {
			m.addPhase(&m.AggregateRounds[a], st)
		}
	}
	opt := t.cfg.Advantage
	opt.AggregationOnly = t.cfg.Algo == AlgoAggOnly
	opt.SearchOnly = t.cfg.Algo == AlgoSearchOnly
	var examples []Example
	informative := 0
	for _, g := range groups {
		searchRewards := make([]float64, len(g.Search))
		for i, tr := range g.Search {
			searchRewards[i] = t.reward(tr, g.Problem.Answer, &m.Search)
		}
		// One SPIRAL problem per aggregation round, whose population is the
		// search traces in the first round and the previous round's
		// aggregation traces in later ones.
		results := make([]SpiralResult, len(g.Rounds))
		population := len(g.Search)
		for a, rd := range g.Rounds {
			sp := SpiralProblem{NumSearch: population, Subsets: rd.Subsets, Rewards: make([][]float64, len(rd.Aggregates))}
			// The own-reward term is the search traces': a later round's
			// population is the previous round's aggregation traces.
			roundOpt := opt
			if a == 0 && opt.SearchOwnReward != 0 {
				sp.SearchRewards = searchRewards
			} else {
				roundOpt.SearchOwnReward = 0
			}
			phases := []*PhaseMetrics{&m.Aggregate}
			if m.AggregateRounds != nil {
				phases = append(phases, &m.AggregateRounds[a])
			}
			for s, aggs := range rd.Aggregates {
				sp.Rewards[s] = make([]float64, len(aggs))
				for j, tr := range aggs {
					sp.Rewards[s][j] = t.reward(tr, g.Problem.Answer, phases...)
				}
			}
			if results[a], err = SpiralAdvantages(sp, roundOpt); err != nil {
				return nil, 0, fmt.Errorf("rl: problem %q, aggregation round %d: %w", g.Problem.ID, a+1, err)
			}
			population = len(rd.Traces())
		}
		if !informativeRounds(results) {
			continue
		}
		informative++
		for i, tr := range g.Search {
			if results[0].SearchMask[i] {
				examples = append(examples, exampleOf(tr, results[0].Search[i], KindSearch))
				m.observeAdvantage(results[0].Search[i])
				m.observeSearchCredit(searchRewards[i], results[0].Search[i])
			}
		}
		for a, rd := range g.Rounds {
			if !results[a].TrainAggregation {
				continue
			}
			for s, aggs := range rd.Aggregates {
				for j, tr := range aggs {
					adv := roundAdvantage(results, a, s, j, len(aggs))
					examples = append(examples, exampleOf(tr, adv, KindAggregate))
					m.observeAdvantage(adv)
				}
			}
		}
	}
	return examples, informative, nil
}

// informativeRounds reports whether one problem's aggregation rounds
// carry any gradient signal: some trained trace has a nonzero advantage,
// a search trace of the first round (SearchMask) or an aggregation trace
// of a round that trains them (TrainAggregation), with its advantage as
// roundAdvantage sums it. Dynamic sampling drops problems that are not
// informative. Each round's advantages tested on their own would keep a
// problem whose second round's A_marg cancels the first round's
// aggregation advantages (0.5 and -0.5), every trained advantage 0.
func informativeRounds(results []SpiralResult) bool {
	first := results[0]
	for i, a := range first.Search {
		if first.SearchMask[i] && a != 0 {
			return true
		}
	}
	for a, r := range results {
		if !r.TrainAggregation {
			continue
		}
		for s, row := range r.Aggregation {
			for j := range row {
				if roundAdvantage(results, a, s, j, len(row)) != 0 {
					return true
				}
			}
		}
	}
	return false
}

// roundAdvantage is the advantage of aggregation trace j of subset s in
// round a: its own, against its subset's mean reward, plus, when a later
// round reads it, its worth to that round's aggregator (the set advantage
// a search trace gets from the first round). Under agg-only the later
// round's share is masked out as the search traces' is. (Under
// search-only no aggregation trace is trained, and Validate allows one
// round only.)
func roundAdvantage(results []SpiralResult, a, s, j, n2 int) float64 {
	adv := results[a].Aggregation[s][j]
	if a+1 < len(results) {
		next, k := results[a+1], s*n2+j
		if next.SearchMask[k] {
			adv += next.Search[k]
		}
	}
	return adv
}

func (t *Trainer) rolloutGRPO(ctx context.Context, probs []data.Problem, round uint64, m *Metrics, progress rollout.Progress) ([]Example, int, error) {
	G := t.cfg.GroupSize
	prompts := make([][]int32, len(probs))
	for i, p := range probs {
		var err error
		if prompts[i], err = t.prompter.SearchPrompt(p.Problem); err != nil {
			return nil, 0, fmt.Errorf("rl: problem %q: %w", p.ID, err)
		}
	}
	traces, st, err := rollout.Complete(ctx, t.gen, t.prompter, prompts, G, func(i, j int) rollout.Stream {
		return rollout.Stream{Seed: t.cfg.Seed, Round: round, Problem: uint64(i), Sample: uint64(j), Phase: rollout.PhaseSearch}
	}, progress)
	if err != nil {
		return nil, 0, fmt.Errorf("rl: grpo rollout: %w", err)
	}
	m.addPhase(&m.Search, st)
	var examples []Example
	informative := 0
	for i, p := range probs {
		rewards := make([]float64, G)
		for j, tr := range traces[i] {
			rewards[j] = t.reward(tr, p.Answer, &m.Search)
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
		for j, tr := range traces[i] {
			examples = append(examples, exampleOf(tr, adv[j], KindGRPO))
			m.observeAdvantage(adv[j])
			m.observeSearchCredit(rewards[j], adv[j])
		}
	}
	return examples, informative, nil
}

// exampleOf is the training example of a trace with its advantage.
func exampleOf(tr rollout.Trace, adv float64, kind string) Example {
	return Example{Prompt: tr.Prompt, Completion: tr.Tokens, OldLogProbs: tr.PolicyLogProbs, EngineLogProbs: tr.EngineLogProbs,
		Advantage: float32(adv), Kind: kind}
}

// update is what applyUpdate did.
type update struct {
	norm, lr float64
	// skipped is why the update was not applied ("" when it was).
	skipped string
}

// applyUpdate clips grads to maxGradNorm (<= 0: only measures the norm)
// and takes an AdamW step on w at the schedule's rate. An update that
// would make the weights non-finite (a non-finite gradient norm, or
// optim.ErrNonFiniteUpdate) is skipped, with the reason.
func applyUpdate(w, grads *params.Store, opt *optim.AdamW, sched optim.Schedule, maxGradNorm float64) (update, error) {
	var u update
	if maxGradNorm > 0 {
		u.norm = grads.ClipByNorm(maxGradNorm)
	} else {
		u.norm = grads.Norm()
	}
	if math.IsNaN(u.norm) || math.IsInf(u.norm, 0) {
		u.skipped = fmt.Sprintf("gradient norm is %v", u.norm)
		return u, nil
	}
	u.lr = sched.LR(opt.Steps())
	err := opt.Step(w, grads, u.lr)
	if errors.Is(err, optim.ErrNonFiniteUpdate) {
		u.skipped = err.Error()
		return u, nil
	}
	return u, err
}
