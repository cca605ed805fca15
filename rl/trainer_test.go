package rl

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/spiral-rl/spiral/data"
	"github.com/spiral-rl/spiral/model"
	"github.com/spiral-rl/spiral/model/optim"
	"github.com/spiral-rl/spiral/model/params"
	"github.com/spiral-rl/spiral/rollout"
)

// trainerFakePrompter encodes prompts as bytes; aggregation prompts start
// with 'A'.
type trainerFakePrompter struct{}

func (trainerFakePrompter) SearchPrompt(p string) ([]int32, error) { return trainerBytes("S" + p), nil }
func (trainerFakePrompter) AggregatePrompt(p string, c []string) ([]int32, error) {
	return trainerBytes("A" + p + "|" + strings.Join(c, "|")), nil
}
func (trainerFakePrompter) Text(ids []int32) string {
	b := make([]byte, len(ids))
	for i, id := range ids {
		b[i] = byte(id)
	}
	return string(b)
}

func trainerBytes(s string) []int32 {
	out := make([]int32, len(s))
	for i := range s {
		out[i] = int32(s[i])
	}
	return out
}

// trainerFakeGen answers "1" or "0" from the request seed's parity, except
// that problem "easy" is always answered "1" (so it is never informative).
type trainerFakeGen struct{}

func (trainerFakeGen) Generate(_ context.Context, reqs []rollout.Request, _ rollout.Progress) ([]rollout.Completion, rollout.Stats, error) {
	out := make([]rollout.Completion, len(reqs))
	for i, r := range reqs {
		ans := fmt.Sprint(r.Seed % 2)
		if strings.Contains(trainerFakePrompter{}.Text(r.Prompt), "easy") {
			ans = "1"
		}
		toks := trainerBytes(ans)
		out[i] = rollout.Completion{Tokens: toks, PolicyLogProbs: []float32{-0.5}, Finish: rollout.FinishStop}
	}
	return out, rollout.Stats{}, nil
}

// copyingGen is trainerFakeGen on a device: each generation copies 100
// bytes between host and device.
type copyingGen struct {
	trainerFakeGen
	copied int64
}

func (g *copyingGen) Generate(ctx context.Context, reqs []rollout.Request, p rollout.Progress) ([]rollout.Completion, rollout.Stats, error) {
	g.copied += 100
	return g.trainerFakeGen.Generate(ctx, reqs, p)
}

func (g *copyingGen) CopiedBytes() int64 { return g.copied }

// trainerFakeLearner records the batches and adds a gradient of ones per
// micro-batch (scaled by its share), so the batch gradient is all ones.
type trainerFakeLearner struct {
	batches []model.TrainBatch
}

func (l *trainerFakeLearner) Accumulate(_ context.Context, b model.TrainBatch, scale float32, grads *params.Store, res *model.TrainResult) error {
	l.batches = append(l.batches, b)
	for i := range grads.Flat() {
		grads.Flat()[i] += scale
	}
	res.LogProbs = make([]float32, b.Batch*b.Seq)
	res.Entropy = make([]float32, b.Batch*b.Seq)
	return nil
}

// trainerJudge: a response is correct when it is the gold text.
var trainerJudge = rollout.Judge{
	Grade: func(r, g string) rollout.Verdict { return rollout.Verdict{Answer: r, Explicit: true, Correct: r == g} },
	Equal: func(a, b string) bool { return a == b },
}

// TestTrainerStepNoUpdate: a step whose drawn problems are all
// uninformative (the "easy" problem, answered "1" every time, or an
// answer no trace gives) trains nothing, leaves the weights and
// optimizer as they were, and is marked NoUpdate.
func TestTrainerStepNoUpdate(t *testing.T) {
	for _, tc := range []struct {
		name, problem, answer string
	}{
		{"every trace right", "easy", "1"},
		{"every trace wrong", "easy", "zzz"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, parts := hardTrainer(t, 0)
			cfg.MaxDrawRounds = 2
			learner := &trainerFakeLearner{}
			parts.Learner = learner
			parts.Problems = data.NewStream(data.NewDataset("t", []data.Problem{{ID: "p", Problem: tc.problem, Answer: tc.answer}}), 3)
			w, opt := parts.Weights, parts.Optimizer
			tr, err := NewTrainer(cfg, parts)
			require.NoError(t, err)
			m, err := tr.TrainStep(context.Background(), nil)
			require.NoError(t, err)
			require.Equal(t, 1, tr.Step(), "the step counts")
			require.True(t, m.NoUpdate)
			require.False(t, m.Updated())
			require.Zero(t, m.Examples)
			require.Empty(t, learner.batches)
			require.Zero(t, opt.Steps())
			for _, v := range w.At(0).Data {
				require.Zero(t, v)
			}
			var b strings.Builder
			require.NoError(t, m.WriteJSONL(&b))
			require.Contains(t, b.String(), `"no_update":true`)
		})
	}
}

func TestTrainerStep(t *testing.T) {
	w, err := params.NewStore([]params.Spec{{Name: "w", Shape: []int64{2, 2}}})
	require.NoError(t, err)
	opt, err := optim.NewAdamW(optim.DefaultConfig(), w)
	require.NoError(t, err)
	ds := data.NewDataset("t", []data.Problem{{ID: "easy", Problem: "easy", Answer: "1"}, {ID: "hard", Problem: "hard", Answer: "1"}})
	learner := &trainerFakeLearner{}
	cfg := DefaultConfig()
	cfg.Problems, cfg.MaxDrawRounds, cfg.Pipeline = 1, 3, rollout.PipelineConfig{N1: 4, K: 2, N: 2, N2: 2}
	tr, err := NewTrainer(cfg, TrainerParts{
		Generator: trainerFakeGen{}, Prompter: trainerFakePrompter{}, Learner: learner,
		Judge:    trainerJudge,
		Problems: data.NewStream(ds, 3), Weights: w, Grads: w.NewGrads(), Optimizer: opt,
		Schedule: optim.Schedule{PeakLR: 0.1, WarmupSteps: 2},
	})
	require.NoError(t, err)
	m, err := tr.TrainStep(context.Background(), nil)
	require.NoError(t, err)
	require.Equal(t, 1, tr.Step())
	require.Equal(t, 1, m.ProblemsInformative)
	require.GreaterOrEqual(t, m.ProblemsDrawn, 1)
	require.LessOrEqual(t, m.ProblemsDrawn, 2, "one informative problem is enough")
	// Every trained sample is a search trace in some subset or an
	// aggregation trace; the count matches the advantages' masks.
	require.NotEmpty(t, learner.batches)
	rows := 0
	for _, b := range learner.batches {
		rows += b.Batch
	}
	require.Equal(t, m.Examples, rows)
	require.LessOrEqual(t, rows, 4+2*2, "at most N1 search + K*N2 aggregation traces")
	require.GreaterOrEqual(t, rows, 2*2, "all K*N2 aggregation traces")
	// Gradient of ones has norm 2 (four elements), clipped to 1: each
	// element 0.5, so AdamW's moments are m = 0.1 x 0.5 = 0.05 and v =
	// 0.001 x 0.25 = 0.00025 (unclipped, 0.1 and 0.001). The first of two
	// warm-up steps has rate 0.1 x 1/2 = 0.05, and AdamW's first step moves
	// each weight by -lr*sign(g) (bias-corrected m/sqrt(v) = 1; the decay
	// of a zero weight is 0).
	require.InDelta(t, 2.0, m.GradNorm, 1e-9)
	require.InDelta(t, 0.05, m.LR, 1e-12)
	for i, v := range w.At(0).Data {
		require.InDelta(t, -0.05, v, 1e-6)
		require.InEpsilon(t, 0.05, opt.ExpAvg().At(0).Data[i], 1e-5, "clip divides by the norm + 1e-6")
		require.InEpsilon(t, 0.00025, opt.ExpAvgSq().At(0).Data[i], 1e-5)
	}
	require.Zero(t, m.DeviceCopyBytes, "generation on host memory copies nothing")

	// Step 2, at the peak rate 0.1, with the same clipped gradient 0.5:
	// m = 0.9 x 0.05 + 0.1 x 0.5 = 0.095, mhat = 0.095 / 0.19 = 0.5;
	// v = 0.999 x 0.00025 + 0.001 x 0.25 = 0.00049975, vhat = 0.00049975 /
	// (1 - 0.999^2) = 0.25; so the step is -0.1 x (0.5 / (0.5 + 1e-8) +
	// 0.01 x -0.05) = -0.09995 (to 2e-9): each weight -0.14995.
	m, err = tr.TrainStep(context.Background(), nil)
	require.NoError(t, err)
	require.Equal(t, 1, m.ProblemsInformative)
	require.InDelta(t, 2.0, m.GradNorm, 1e-9)
	require.InDelta(t, 0.1, m.LR, 1e-12)
	for _, v := range w.At(0).Data {
		require.InDelta(t, -0.14995, v, 1e-6)
	}
}

// recordingGen is trainerFakeGen recording every call's requests; with
// alternate set it answers request i of a call "1" or "0" by the parity
// of i instead of the seed's (so that, N1 and N2 being even, every
// problem but "easy" is informative).
type recordingGen struct {
	trainerFakeGen
	alternate bool
	calls     [][]rollout.Request
}

func (g *recordingGen) Generate(ctx context.Context, reqs []rollout.Request, p rollout.Progress) ([]rollout.Completion, rollout.Stats, error) {
	g.calls = append(g.calls, reqs)
	if !g.alternate {
		return g.trainerFakeGen.Generate(ctx, reqs, p)
	}
	alt := make([]rollout.Request, len(reqs))
	for i, r := range reqs {
		alt[i] = rollout.Request{Prompt: r.Prompt, Seed: uint64(i)}
	}
	return g.trainerFakeGen.Generate(ctx, alt, p)
}

// TestTrainerDrawsWhatIsMissing: dynamic sampling draws, in each draw
// round, only the problems still missing (Problems less those kept so
// far) and never keeps more than Problems. Of "hard" and "easy" (never
// informative), two wanted, with N1 = 4 search traces a problem: every
// search call holds 4 x (2 - kept) requests.
func TestTrainerDrawsWhatIsMissing(t *testing.T) {
	cfg, parts := hardTrainer(t, 0)
	cfg.Problems, cfg.MaxDrawRounds = 2, 4
	gen := &recordingGen{alternate: true}
	parts.Generator = gen
	parts.Problems = data.NewStream(data.NewDataset("t", []data.Problem{
		{ID: "hard", Problem: "hard", Answer: "1"}, {ID: "easy", Problem: "easy", Answer: "1"}}), 3)
	tr, err := NewTrainer(cfg, parts)
	require.NoError(t, err)
	for step := range 3 {
		gen.calls = nil
		m, err := tr.TrainStep(context.Background(), nil)
		require.NoError(t, err)
		kept, drawn, rounds := 0, 0, 0
		for _, call := range gen.calls {
			if (trainerFakePrompter{}).Text(call[0].Prompt)[0] != 'S' {
				continue // an aggregation call
			}
			rounds++
			require.Len(t, call, 4*(cfg.Problems-kept), "step %d, draw round %d", step+1, rounds)
			drawn += len(call) / 4
			for j := 0; j < len(call); j += 4 {
				if (trainerFakePrompter{}).Text(call[j].Prompt) == "Shard" {
					kept++ // every "hard" problem is informative (alternate)
				}
			}
		}
		require.Equal(t, kept, m.ProblemsInformative, "step %d", step+1)
		require.LessOrEqual(t, m.ProblemsInformative, cfg.Problems)
		require.Equal(t, drawn, m.ProblemsDrawn, "step %d", step+1)
		require.Equal(t, float64(kept)/float64(drawn), m.InformativeFraction, "step %d", step+1)
		require.Greater(t, rounds, 1, "step %d: the first draw round holds an easy problem", step+1)
	}
}

// TestTrainerDrawRoundsSeeded: every draw round of every step samples
// from streams of its own, so no two search requests of a run share a
// seed (the "easy" problem is never informative, so each step runs all
// three draw rounds).
func TestTrainerDrawRoundsSeeded(t *testing.T) {
	cfg, parts := hardTrainer(t, 0)
	gen := &recordingGen{}
	parts.Generator = gen
	parts.Problems = data.NewStream(data.NewDataset("t", []data.Problem{{ID: "easy", Problem: "easy", Answer: "1"}}), 3)
	tr, err := NewTrainer(cfg, parts)
	require.NoError(t, err)
	for range 3 {
		_, err := tr.TrainStep(context.Background(), nil)
		require.NoError(t, err)
	}
	seen := map[uint64]bool{}
	searches := 0
	for _, call := range gen.calls {
		if (trainerFakePrompter{}).Text(call[0].Prompt)[0] != 'S' {
			continue
		}
		searches++
		for _, req := range call {
			require.False(t, seen[req.Seed], "search call %d reuses a seed", searches)
			seen[req.Seed] = true
		}
	}
	require.Equal(t, 3*cfg.MaxDrawRounds, searches)
}

// copyingLearner is trainerFakeLearner on a device: each call copies 7
// bytes.
type copyingLearner struct {
	trainerFakeLearner
	copied int64
}

func (l *copyingLearner) Accumulate(ctx context.Context, b model.TrainBatch, scale float32, grads *params.Store, res *model.TrainResult) error {
	l.copied += 7
	return l.trainerFakeLearner.Accumulate(ctx, b, scale, grads, res)
}

func (l *copyingLearner) CopiedBytes() int64 { return l.copied }

// hardTrainer returns the trainer config and parts of the tests on one
// "hard" problem (N1 = 4, K = 2, N = 2, N2 = 2, one informative problem
// a step): a 2 x 2 weight store filled with fill, its AdamW, the fake
// generator, prompter, judge and learner, and a peak rate of 0.1; the
// tests replace what they probe.
func hardTrainer(t *testing.T, fill float32) (Config, TrainerParts) {
	w, err := params.NewStore([]params.Spec{{Name: "w", Shape: []int64{2, 2}}})
	require.NoError(t, err)
	for i := range w.Flat() {
		w.Flat()[i] = fill
	}
	opt, err := optim.NewAdamW(optim.DefaultConfig(), w)
	require.NoError(t, err)
	cfg := DefaultConfig()
	cfg.Problems, cfg.MaxDrawRounds, cfg.Pipeline = 1, 3, rollout.PipelineConfig{N1: 4, K: 2, N: 2, N2: 2}
	return cfg, TrainerParts{Generator: trainerFakeGen{}, Prompter: trainerFakePrompter{}, Learner: &trainerFakeLearner{},
		Judge: trainerJudge, Problems: data.NewStream(data.NewDataset("t", hardProblems), 3), Weights: w, Grads: w.NewGrads(), Optimizer: opt,
		Schedule: optim.Schedule{PeakLR: 0.1}}
}

// hardProblems is hardTrainer's problem set: "hard", answered "1".
var hardProblems = []data.Problem{{ID: "hard", Problem: "hard", Answer: "1"}}

// redrawHard draws again the SPIRAL rollout a trainer of cfg samples for
// hardProblems in the given round, with the same fakes, and returns its
// group.
func redrawHard(t *testing.T, cfg Config, round uint64) rollout.Group {
	t.Helper()
	pipe, err := rollout.NewPipeline(trainerFakeGen{}, trainerFakePrompter{}, cfg.Pipeline)
	require.NoError(t, err)
	groups, _, err := pipe.Run(context.Background(), hardProblems, cfg.Seed, round, nil)
	require.NoError(t, err)
	return groups[0]
}

// fakeReward is trainerJudge's reward for hardProblems: 1 for the answer
// "1", else 0.
func fakeReward(tr rollout.Trace) float64 {
	if tr.Text == "1" {
		return 1
	}
	return 0
}

// TestTrainerCountsDeviceCopies: a step's metrics carry what it copied
// between host and device, the generator's and the learner's counters
// over the step alone (100 bytes per generation call and 7 per
// micro-batch of the fakes).
func TestTrainerCountsDeviceCopies(t *testing.T) {
	cfg, parts := hardTrainer(t, 0)
	gen := &copyingGen{copied: 5000}
	learner := &copyingLearner{copied: 300}
	parts.Generator, parts.Learner = gen, learner
	tr, err := NewTrainer(cfg, parts)
	require.NoError(t, err)
	for range 2 {
		gens, calls := gen.copied, learner.copied
		m, err := tr.TrainStep(context.Background(), nil)
		require.NoError(t, err)
		require.Positive(t, gen.copied-gens)
		require.Positive(t, learner.copied-calls)
		require.Equal(t, gen.copied-gens+learner.copied-calls, m.DeviceCopyBytes)
		require.Equal(t, int64(7*len(learner.batches)), learner.copied-300)
	}
}

// TestTrainerSkipsNonFiniteUpdate: a step whose AdamW update would
// overflow float32 (a learning rate near float32's largest value on large
// weights) is skipped, reported in the metrics, and leaves the weights as
// they were; the step still counts.
func TestTrainerSkipsNonFiniteUpdate(t *testing.T) {
	cfg, parts := hardTrainer(t, -1e38)
	parts.Schedule = optim.Schedule{PeakLR: 3e38}
	w, opt := parts.Weights, parts.Optimizer
	tr, err := NewTrainer(cfg, parts)
	require.NoError(t, err)
	m, err := tr.TrainStep(context.Background(), nil)
	require.NoError(t, err)
	require.Equal(t, 1, tr.Step())
	require.Contains(t, m.UpdateSkipped, "non-finite")
	require.Contains(t, m.Line(), "update skipped")
	for _, v := range w.Flat() {
		require.Equal(t, float32(-1e38), v)
	}
	require.Zero(t, opt.Steps())
}

// nanLearner is trainerFakeLearner whose gradients come out NaN, as an
// overflowing backward pass gives them.
type nanLearner struct{ trainerFakeLearner }

func (l *nanLearner) Accumulate(ctx context.Context, b model.TrainBatch, scale float32, grads *params.Store, res *model.TrainResult) error {
	err := l.trainerFakeLearner.Accumulate(ctx, b, scale, grads, res)
	for i := range grads.Flat() {
		grads.Flat()[i] = float32(math.NaN())
	}
	return err
}

// TestTrainerSkipsNaNGradient: a step whose gradient norm is NaN skips
// its update, and its metrics line, which JSON cannot hold NaN in, is
// written with the norm null and read back as NaN, so that the run goes
// on to its next step; sft's lines alike.
func TestTrainerSkipsNaNGradient(t *testing.T) {
	cfg, parts := hardTrainer(t, 0.5)
	parts.Learner = &nanLearner{}
	tr, err := NewTrainer(cfg, parts)
	require.NoError(t, err)
	m, err := tr.TrainStep(context.Background(), nil)
	require.NoError(t, err)
	require.Equal(t, "gradient norm is NaN", m.UpdateSkipped)
	for _, v := range parts.Weights.Flat() {
		require.Equal(t, float32(0.5), v, "the update is skipped")
	}
	var line bytes.Buffer
	require.NoError(t, m.WriteJSONL(&line))
	require.Contains(t, line.String(), `"grad_norm":null`)
	back, err := decodeMetrics(line.Bytes())
	require.NoError(t, err)
	require.True(t, math.IsNaN(back.GradNorm))
	require.Equal(t, m.Loss, back.Loss, "a finite figure reads back as it was")
	require.Equal(t, m.UpdateSkipped, back.UpdateSkipped)

	sft, err := json.Marshal(SFTMetrics{Step: 1, Loss: math.Inf(1), GradNorm: math.NaN(), Entropy: 0.25})
	require.NoError(t, err)
	require.Contains(t, string(sft), `"loss":null`)
	require.Contains(t, string(sft), `"grad_norm":null`)
	require.Contains(t, string(sft), `"entropy":0.25`)
}

// deviceFakeLearner is trainerFakeLearner keeping its gradients and
// AdamW on a device, with no host gradient store (it refuses one): it
// records its Update calls, counts its SyncHost calls and reports a
// gradient norm of 3.
type deviceFakeLearner struct {
	trainerFakeLearner
	updates [][2]float64 // lr, max grad norm
	synced  int
}

func (l *deviceFakeLearner) Accumulate(_ context.Context, b model.TrainBatch, _ float32, grads *params.Store, res *model.TrainResult) error {
	if grads != nil {
		return errors.New("a host gradient store, for a learner that sums on the device")
	}
	l.batches = append(l.batches, b)
	res.LogProbs = make([]float32, b.Batch*b.Seq)
	res.Entropy = make([]float32, b.Batch*b.Seq)
	return nil
}

func (l *deviceFakeLearner) Update(lr, maxGradNorm float64) (model.UpdateResult, error) {
	l.updates = append(l.updates, [2]float64{lr, maxGradNorm})
	return model.UpdateResult{Norm: 3}, nil
}
func (l *deviceFakeLearner) SyncHost() error         { l.synced++; return nil }
func (l *deviceFakeLearner) SyncWeights() error      { l.synced++; return nil }
func (*deviceFakeLearner) UsesDeviceOptimizer() bool { return true }

// recordingSync is a WeightSync that notes how many host syncs its
// learner had when it was called.
type recordingSync struct {
	l     *deviceFakeLearner
	calls []int
}

func (s *recordingSync) Sync(_ context.Context, _ int) error {
	s.calls = append(s.calls, s.l.synced)
	return nil
}
func (*recordingSync) Version() string { return "" }

func (*recordingSync) Check(context.Context) error { return nil }

// TestTrainerUpdatesOnDevice: with a learner that keeps its gradients
// and AdamW on the device, the trainer needs no gradient store (without
// such a learner it refuses none); a step calls its Update (the
// schedule's rate, the clip norm) instead of stepping the host stores,
// whose weights stay as they were; the metrics carry the device's norm;
// a serving engine gets the weights only after the host has them
// (SyncHost first).
func TestTrainerUpdatesOnDevice(t *testing.T) {
	cfg, parts := hardTrainer(t, 0)
	parts.Grads = nil
	_, err := NewTrainer(cfg, parts)
	require.ErrorContains(t, err, "no gradient store")
	learner := &deviceFakeLearner{}
	sync := &recordingSync{l: learner}
	parts.Learner, parts.Sync = learner, sync
	w, opt := parts.Weights, parts.Optimizer
	tr, err := NewTrainer(cfg, parts)
	require.NoError(t, err)
	m, err := tr.TrainStep(context.Background(), nil)
	require.NoError(t, err)
	require.Equal(t, [][2]float64{{0.1, cfg.MaxGradNorm}}, learner.updates)
	require.Equal(t, 3.0, m.GradNorm)
	require.Equal(t, 0.1, m.LR)
	require.Zero(t, w.Norm(), "the host weights are not stepped")
	require.Zero(t, opt.Steps())
	_, err = tr.SyncEngine(context.Background())
	require.NoError(t, err)
	require.Equal(t, []int{1, 2}, sync.calls, "every engine sync after a host sync")
}

// TestRolloutSpiralLaterRoundAdvantages checks the advantages of a
// two-round rollout against the formulas written out here: a second-round
// trace gets its reward less its subset's mean; a first-round trace gets
// that too, plus the mean, over the second-round subsets that hold it, of
// the subset's mean reward less the mean over subsets; under agg-only the
// second term is masked out, as the search traces' advantages are.
func TestRolloutSpiralLaterRoundAdvantages(t *testing.T) {
	for _, algo := range []string{AlgoSpiral, AlgoAggOnly} {
		t.Run(algo, func(t *testing.T) {
			cfg, parts := hardTrainer(t, 0)
			cfg.Algo = algo
			cfg.Pipeline = rollout.PipelineConfig{N1: 6, K: 3, N: 3, N2: 3, Rounds: 2}
			tr, err := NewTrainer(cfg, parts)
			require.NoError(t, err)
			var m Metrics
			examples, informative, err := tr.rolloutSpiral(context.Background(), hardProblems, 5, &m, nil)
			require.NoError(t, err)

			// The same rollout, drawn again, and its advantages by hand.
			g := redrawHard(t, cfg, 5)
			require.Len(t, g.Rounds, 2)
			mean := func(xs []float64) float64 {
				s := 0.0
				for _, x := range xs {
					s += x
				}
				return s / float64(len(xs))
			}
			// own[a][k]: reward less the subset's mean; worth[a][k]: the
			// set advantage from round a's subsets holding trace k of
			// the population before it.
			own := make([][]float64, 2)
			worth := make([]map[int][]float64, 2)
			for a, rd := range g.Rounds {
				worth[a] = map[int][]float64{}
				f := make([]float64, len(rd.Subsets))
				for s, aggs := range rd.Aggregates {
					rs := make([]float64, len(aggs))
					for j, tr := range aggs {
						rs[j] = fakeReward(tr)
					}
					f[s] = mean(rs)
					for _, r := range rs {
						own[a] = append(own[a], r-f[s])
					}
				}
				for s, members := range rd.Subsets {
					for _, k := range members {
						worth[a][k] = append(worth[a][k], f[s]-mean(f))
					}
				}
			}
			var want []float64
			if algo == AlgoSpiral {
				for k := range g.Search {
					if v, ok := worth[0][k]; ok {
						want = append(want, mean(v))
					}
				}
			}
			for k, adv := range own[0] {
				if v, ok := worth[1][k]; ok && algo == AlgoSpiral {
					adv += mean(v)
				}
				want = append(want, adv)
			}
			want = append(want, own[1]...)

			got := make([]float64, len(examples))
			for i, e := range examples {
				got[i] = float64(e.Advantage)
			}
			require.Equal(t, 1, informative)
			require.InDeltaSlice(t, want, got, 1e-6)
			require.Equal(t, 6, m.Search.Traces)
			require.Equal(t, 9+9, m.Aggregate.Traces, "both rounds' aggregation traces are rewarded")
			m.finishRollout()
			require.Len(t, m.AggregateRounds, 2)
			for a, rd := range g.Rounds {
				var rs []float64
				for _, tr := range rd.Traces() {
					rs = append(rs, fakeReward(tr))
				}
				require.Equal(t, 9, m.AggregateRounds[a].Traces)
				require.InDelta(t, mean(rs), m.AggregateRounds[a].Reward, 1e-12, "round %d", a+1)
			}
			require.Contains(t, m.Line(), fmt.Sprintf("(%.3f -> %.3f)", m.AggregateRounds[0].Reward, m.AggregateRounds[1].Reward))
		})
	}
}

// TestRolloutSpiralOwnRewardLaterRounds: --search-own-reward with
// --agg-rounds 2 adds each search trace's centred own reward to its
// advantage, and leaves the aggregation traces' advantages, of either
// round, as they are without it (a later round's population is the
// previous round's aggregation traces, not search traces). It failed at
// the first step: the second round's SPIRAL problem was given the weight
// without the search rewards.
func TestRolloutSpiralOwnRewardLaterRounds(t *testing.T) {
	advantages := func(own float64) ([]Example, int) {
		cfg, parts := hardTrainer(t, 0)
		cfg.Pipeline = rollout.PipelineConfig{N1: 6, K: 3, N: 3, N2: 3, Rounds: 2}
		cfg.Advantage.SearchOwnReward = own
		tr, err := NewTrainer(cfg, parts)
		require.NoError(t, err)
		var m Metrics
		examples, informative, err := tr.rolloutSpiral(context.Background(), hardProblems, 5, &m, nil)
		require.NoError(t, err)
		return examples, informative
	}
	base, informative := advantages(0)
	require.Equal(t, 1, informative)
	got, informative := advantages(0.5)
	require.Equal(t, 1, informative)
	require.Len(t, got, len(base))

	cfg, _ := hardTrainer(t, 0)
	cfg.Pipeline = rollout.PipelineConfig{N1: 6, K: 3, N: 3, N2: 3, Rounds: 2}
	g := redrawHard(t, cfg, 5)
	held := map[int]bool{}
	for _, members := range g.Rounds[0].Subsets {
		for _, k := range members {
			held[k] = true
		}
	}
	var rs []float64
	for k, tr := range g.Search {
		if held[k] {
			rs = append(rs, fakeReward(tr))
		}
	}
	mean := 0.0
	for _, r := range rs {
		mean += r / float64(len(rs))
	}
	for i := range got {
		want := float64(base[i].Advantage)
		if i < len(rs) {
			require.Equal(t, KindSearch, got[i].Kind)
			want += 0.5 * (rs[i] - mean)
		} else {
			require.Equal(t, KindAggregate, got[i].Kind)
		}
		require.InDelta(t, want, float64(got[i].Advantage), 1e-6, "example %d (%s)", i, got[i].Kind)
	}
}

// TestRolloutSpiralAblations checks which traces each SPIRAL algorithm
// trains on one round: SPIRAL every search trace in a subset and every
// aggregation trace, agg-only the aggregation traces alone, search-only
// the search traces alone, each with the advantage SpiralAdvantages gives
// it; and that search-only rejects a second round, whose traces it would
// never train.
func TestRolloutSpiralAblations(t *testing.T) {
	for _, tc := range []struct {
		algo              string
		search, aggregate bool
	}{
		{AlgoSpiral, true, true},
		{AlgoAggOnly, false, true},
		{AlgoSearchOnly, true, false},
	} {
		t.Run(tc.algo, func(t *testing.T) {
			cfg, parts := hardTrainer(t, 0)
			cfg.Algo = tc.algo
			cfg.Pipeline = rollout.PipelineConfig{N1: 6, K: 3, N: 3, N2: 3}
			tr, err := NewTrainer(cfg, parts)
			require.NoError(t, err)
			var m Metrics
			examples, informative, err := tr.rolloutSpiral(context.Background(), hardProblems, 5, &m, nil)
			require.NoError(t, err)

			// The same rollout, drawn again, and SPIRAL's advantages of it.
			g := redrawHard(t, cfg, 5)
			sp := SpiralProblem{NumSearch: len(g.Search), Subsets: g.Rounds[0].Subsets}
			for _, aggs := range g.Rounds[0].Aggregates {
				var rs []float64
				for _, a := range aggs {
					rs = append(rs, fakeReward(a))
				}
				sp.Rewards = append(sp.Rewards, rs)
			}
			res, err := SpiralAdvantages(sp, AdvantageOptions{})
			require.NoError(t, err)
			require.True(t, slices.ContainsFunc(res.Search, func(a float64) bool { return a != 0 }), "the rollout has a search signal")

			var want []Example
			if tc.search {
				for i, tr := range g.Search {
					if res.Membership[i] > 0 {
						want = append(want, Example{Kind: KindSearch, Advantage: float32(res.Search[i]), Completion: tr.Tokens})
					}
				}
			}
			if tc.aggregate {
				for s, aggs := range g.Rounds[0].Aggregates {
					for j, tr := range aggs {
						want = append(want, Example{Kind: KindAggregate, Advantage: float32(res.Aggregation[s][j]), Completion: tr.Tokens})
					}
				}
			}
			require.Equal(t, 1, informative)
			require.Len(t, examples, len(want))
			for i, e := range examples {
				require.Equal(t, want[i].Kind, e.Kind, "example %d", i)
				require.InDelta(t, want[i].Advantage, e.Advantage, 1e-6, "example %d", i)
				require.Equal(t, want[i].Completion, e.Completion, "example %d", i)
			}

			// SearchCredit correlates the trained search traces' own
			// rewards with their advantages.
			m.finishRollout()
			if !tc.search {
				require.Nil(t, m.SearchCredit)
				return
			}
			var credit [][2]float64
			for i, tr := range g.Search {
				if res.Membership[i] > 0 {
					credit = append(credit, [2]float64{fakeReward(tr), res.Search[i]})
				}
			}
			wantCredit, ok := pearson(credit)
			require.True(t, ok)
			require.NotNil(t, m.SearchCredit)
			require.InDelta(t, wantCredit, *m.SearchCredit, 1e-12)
		})
	}
	cfg := DefaultConfig()
	cfg.Algo = AlgoSearchOnly
	cfg.Pipeline = rollout.PipelineConfig{N1: 6, K: 3, N: 3, N2: 3, Rounds: 2}
	require.ErrorContains(t, cfg.Validate(), "--algo search-only with --agg-rounds 2")

	// One aggregation trace per subset is its own baseline: an algorithm
	// that trains aggregation traces would train none of them. Later
	// rounds credit a trace through the next round's set values under
	// SPIRAL, and search-only needs no aggregation baseline, so those are
	// allowed; agg-only masks that credit out, so its later rounds do not
	// help.
	for _, tc := range []struct {
		algo    string
		rounds  int
		refused bool
	}{
		{AlgoSpiral, 1, true}, {AlgoAggOnly, 1, true}, {AlgoSearchOnly, 1, false}, {AlgoSpiral, 2, false}, {AlgoGRPO, 1, false},
		{AlgoAggOnly, 2, true},
	} {
		cfg := DefaultConfig()
		cfg.Algo = tc.algo
		cfg.Pipeline = rollout.PipelineConfig{N1: 6, K: 6, N: 3, N2: 1, Rounds: tc.rounds}
		err := cfg.Validate()
		if tc.refused {
			require.ErrorContains(t, err, "--algo "+tc.algo+" with --n2 1", tc)
		} else {
			require.NoError(t, err, tc)
		}
	}

	// With --n2 1 a later round draws its --k subsets of --n from the
	// previous round's --k traces: where --n is --k (--k 1 included) each
	// subset holds every one, so a trace's worth to that round is 0 as its
	// own advantage is, and no aggregation trace of any round would learn
	// (with --k 1 no search trace either: nothing at all trained).
	for _, tc := range []struct {
		k, n, rounds int
		refused      bool
	}{
		{1, 1, 2, true}, {2, 2, 2, true}, {4, 4, 3, true}, {6, 6, 2, true},
		{2, 1, 2, false}, {4, 2, 3, false}, {6, 3, 2, false},
	} {
		cfg := DefaultConfig()
		cfg.Pipeline = rollout.PipelineConfig{N1: 8, K: tc.k, N: tc.n, N2: 1, Rounds: tc.rounds}
		err := cfg.Validate()
		if tc.refused {
			require.ErrorContains(t, err, fmt.Sprintf("--algo spiral with --n2 1, --agg-rounds %d, --k %d and --n %d", tc.rounds, tc.k, tc.n), tc)
		} else {
			require.NoError(t, err, tc)
		}
	}

	// A search trace's advantage compares the subsets holding it with all
	// of them: one subset, or subsets of every search trace, leave it 0,
	// so search-only, which trains nothing else, would train nothing. The
	// other algorithms still train their aggregation traces.
	// With --search-own-reward a search trace learns from its own reward
	// too, centred on the held traces' mean: two held traces suffice.
	for _, tc := range []struct {
		algo     string
		n1, k, n int
		own      float64
		refused  bool
	}{
		{AlgoSearchOnly, 6, 1, 3, 0, true}, {AlgoSearchOnly, 6, 4, 6, 0, true}, {AlgoSearchOnly, 1, 1, 1, 0, true},
		{AlgoSearchOnly, 6, 2, 5, 0, false}, {AlgoSpiral, 6, 1, 3, 0, false}, {AlgoSpiral, 6, 4, 6, 0, false}, {AlgoAggOnly, 6, 1, 6, 0, false},
		{AlgoSearchOnly, 6, 1, 3, 1, false}, {AlgoSearchOnly, 6, 4, 6, 0.5, false}, {AlgoSearchOnly, 1, 1, 1, 1, true}, {AlgoSearchOnly, 6, 1, 1, 1, true},
	} {
		cfg := DefaultConfig()
		cfg.Algo = tc.algo
		cfg.Pipeline = rollout.PipelineConfig{N1: tc.n1, K: tc.k, N: tc.n, N2: 3, Rounds: 1}
		cfg.Advantage.SearchOwnReward = tc.own
		err := cfg.Validate()
		if tc.refused {
			require.ErrorContains(t, err, fmt.Sprintf("--algo search-only with --k %d, --n %d and --n1 %d", tc.k, tc.n, tc.n1), tc)
		} else {
			require.NoError(t, err, tc)
		}
	}
	// Such a run trains its held search traces on their own rewards.
	cfg, parts := hardTrainer(t, 0)
	cfg.Algo = AlgoSearchOnly
	cfg.Pipeline = rollout.PipelineConfig{N1: 6, K: 1, N: 3, N2: 3, Rounds: 1}
	cfg.Advantage.SearchOwnReward = 1
	tr, err := NewTrainer(cfg, parts)
	require.NoError(t, err)
	var m Metrics
	examples, informative, err := tr.rolloutSpiral(context.Background(), hardProblems, 5, &m, nil)
	require.NoError(t, err)
	require.Equal(t, 1, informative)
	require.Len(t, examples, 3)
	for _, e := range examples {
		require.Equal(t, KindSearch, e.Kind)
	}
}

// TestConfigIgnoredFields: what an algorithm does not read is not
// refused (train warns that it is ignored): GRPO takes any pipeline
// shape and advantage switches, the other algorithms any --group; what
// it reads still is. A GRPO trainer builds no pipeline.
func TestConfigIgnoredFields(t *testing.T) {
	badPipeline := rollout.PipelineConfig{N1: 3, K: 4, N: 4, N2: 4}
	for _, tc := range []struct {
		name    string
		algo    string
		edit    func(c *Config)
		refused string
	}{
		{"GRPO, a pipeline --n above --n1", AlgoGRPO, func(c *Config) { c.Pipeline = badPipeline }, ""},
		{"GRPO, a group of one", AlgoGRPO, func(c *Config) { c.GroupSize = 1 }, "--group 1"},
		{"SPIRAL, a group of one", AlgoSpiral, func(c *Config) { c.GroupSize = 1 }, ""},
		{"agg-only, a group of one", AlgoAggOnly, func(c *Config) { c.GroupSize = 0 }, ""},
		{"SPIRAL, a pipeline --n above --n1", AlgoSpiral, func(c *Config) { c.Pipeline = badPipeline }, "--n 4 exceeds --n1 3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.Algo = tc.algo
			tc.edit(&cfg)
			if tc.refused != "" {
				require.ErrorContains(t, cfg.Validate(), tc.refused)
				return
			}
			require.NoError(t, cfg.Validate())
		})
	}
	cfg, parts := hardTrainer(t, 0)
	cfg.Algo, cfg.Pipeline = AlgoGRPO, badPipeline
	tr, err := NewTrainer(cfg, parts)
	require.NoError(t, err)
	require.Nil(t, tr.pipe)
}

// TestRolloutSpiralStructurallyZero: where SPIRAL's definitions make an
// advantage 0 whatever the rewards (one subset; subsets that each hold
// every search trace; the last round's aggregation traces with --n2 1),
// the traces are still trained, with advantage 0, as train's warnings
// say: SPIRAL's batch is agg-only's plus the search traces at 0.
func TestRolloutSpiralStructurallyZero(t *testing.T) {
	rollout1 := func(algo string, p rollout.PipelineConfig) []Example {
		cfg, parts := hardTrainer(t, 0)
		cfg.Algo, cfg.Pipeline = algo, p
		tr, err := NewTrainer(cfg, parts)
		require.NoError(t, err)
		var m Metrics
		examples, informative, err := tr.rolloutSpiral(context.Background(), hardProblems, 5, &m, nil)
		require.NoError(t, err)
		require.Equal(t, 1, informative)
		return examples
	}
	for _, p := range []rollout.PipelineConfig{{N1: 4, K: 1, N: 2, N2: 4}, {N1: 3, K: 3, N: 3, N2: 4}} {
		spiral, aggOnly := rollout1(AlgoSpiral, p), rollout1(AlgoAggOnly, p)
		var search, agg []Example
		for _, e := range spiral {
			if e.Kind == KindSearch {
				search = append(search, e)
			} else {
				agg = append(agg, e)
			}
		}
		require.NotEmpty(t, search, "%+v", p)
		for _, e := range search {
			require.Zero(t, e.Advantage, "%+v", p)
		}
		require.Equal(t, aggOnly, agg, "%+v", p)
	}
	// The last of two rounds with one aggregation trace per subset (--n
	// below --k, so that the first round's learn from their worth to it;
	// Validate refuses --n = --k, where none would).
	examples := rollout1(AlgoSpiral, rollout.PipelineConfig{N1: 4, K: 3, N: 2, N2: 1, Rounds: 2})
	last := examples[len(examples)-3:]
	for _, e := range last {
		require.Equal(t, KindAggregate, e.Kind)
		require.Zero(t, e.Advantage)
	}
}

// emptyGen completes every request with no token: stopped (an empty
// answer) on an even seed, cut at the token limit on an odd one, as a
// serving engine that cuts a completion before its first token does.
type emptyGen struct{}

func (emptyGen) Generate(_ context.Context, reqs []rollout.Request, _ rollout.Progress) ([]rollout.Completion, rollout.Stats, error) {
	out := make([]rollout.Completion, len(reqs))
	for i, r := range reqs {
		out[i] = rollout.Completion{Finish: rollout.FinishStop}
		if r.Seed%2 == 1 {
			out[i].Finish = rollout.FinishLength
		}
	}
	return out, rollout.Stats{}, nil
}

// TestTrainerStepNoTrainedToken: a step whose informative problem's
// trained traces hold no token (the empty answer right when stopped,
// wrong when cut) has no gradient: it is a no-update step, as one
// without an informative problem, and AdamW takes no step on a zero
// gradient (which would move the weights by their decay and advance the
// warm-up); its line says why.
func TestTrainerStepNoTrainedToken(t *testing.T) {
	cfg, parts := hardTrainer(t, 0.5)
	cfg.Algo, cfg.GroupSize = AlgoGRPO, 8
	learner := &trainerFakeLearner{}
	parts.Generator, parts.Learner = emptyGen{}, learner
	// The empty answer is right, unless cut.
	parts.Judge = rollout.Judge{Grade: func(r, _ string) rollout.Verdict { return rollout.Verdict{Answer: r, Explicit: true, Correct: r == ""} }}
	w, opt := parts.Weights, parts.Optimizer
	tr, err := NewTrainer(cfg, parts)
	require.NoError(t, err)
	m, err := tr.TrainStep(context.Background(), nil)
	require.NoError(t, err)
	require.Equal(t, 1, m.ProblemsInformative, "the stopped empty answers are right, the cut ones wrong")
	require.True(t, m.NoUpdate)
	require.Zero(t, m.Examples)
	require.Empty(t, learner.batches)
	require.Zero(t, opt.Steps())
	for _, v := range w.At(0).Data {
		require.Equal(t, float32(0.5), v)
	}
	require.Contains(t, m.Line(), "informative 1/1  cut 2/8  no update (no trained token)")
	// Statistics of the trained samples, of which it has none: written
	// as a step without an informative problem writes them.
	require.Equal(t, [4]float64{}, [4]float64{m.AdvMean, m.AdvStd, m.AdvMin, m.AdvMax})
	require.Nil(t, m.SearchCredit)
}

// slowSync is a WeightSync that takes d to load the weights.
type slowSync struct{ d time.Duration }

func (s slowSync) Sync(context.Context, int) error { time.Sleep(s.d); return nil }
func (slowSync) Version() string                   { return "v" }
func (slowSync) Check(context.Context) error       { return nil }

// TestTrainerStepTimings: a step's rollout_seconds is its rollouts' wall
// time, not the serving engine's weight sync before them, which
// sync_seconds logs apart: the two add up to no more than the step.
func TestTrainerStepTimings(t *testing.T) {
	cfg, parts := hardTrainer(t, 0)
	parts.Sync = slowSync{200 * time.Millisecond}
	tr, err := NewTrainer(cfg, parts)
	require.NoError(t, err)
	m, err := tr.TrainStep(context.Background(), nil)
	require.NoError(t, err)
	require.GreaterOrEqual(t, m.SyncSeconds, 0.2)
	require.Less(t, m.RolloutSeconds, 0.1, "the fakes roll out at once")
	require.LessOrEqual(t, m.SyncSeconds+m.RolloutSeconds+m.TrainSeconds, m.StepSeconds)
}

// syncCopyingLearner is deviceFakeLearner that copies 1000 bytes from
// the device each time it brings the host weights up to date for a
// serving engine (SyncWeights).
type syncCopyingLearner struct {
	deviceFakeLearner
	copied int64
}

func (l *syncCopyingLearner) SyncWeights() error {
	l.copied += 1000
	return l.deviceFakeLearner.SyncWeights()
}
func (l *syncCopyingLearner) CopiedBytes() int64 { return l.copied }

// TestTrainerCountsSyncCopies: the device copies of a step's weight sync
// to a serving engine are the step's: device_copy_bytes counts them, as
// it counts those of the generation and the update.
func TestTrainerCountsSyncCopies(t *testing.T) {
	cfg, parts := hardTrainer(t, 0)
	learner := &syncCopyingLearner{}
	parts.Grads, parts.Learner, parts.Sync = nil, learner, &recordingSync{l: &learner.deviceFakeLearner}
	tr, err := NewTrainer(cfg, parts)
	require.NoError(t, err)
	m, err := tr.TrainStep(context.Background(), nil)
	require.NoError(t, err)
	require.Equal(t, int64(1000), m.DeviceCopyBytes)
}
