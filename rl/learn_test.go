package rl_test

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/spiral-rl/spiral/data"
	"github.com/spiral-rl/spiral/model"
	"github.com/spiral-rl/spiral/model/modeltest"
	"github.com/spiral-rl/spiral/model/optim"
	"github.com/spiral-rl/spiral/rl"
	"github.com/spiral-rl/spiral/rollout"
)

// Fixed prompts of the learning tests: the search prompt, and the
// aggregation prompt, which ignores its candidates (so that the
// aggregation policy's reward depends on its own first token alone).
var (
	learnSearchPrompt    = []int32{5, 6, 7}
	learnAggregatePrompt = []int32{8, 9, 10, 11}
)

// learnPrompter writes the fixed prompts and decodes ids as numbers
// separated by spaces.
type learnPrompter struct{}

func (learnPrompter) SearchPrompt(string) ([]int32, error) { return learnSearchPrompt, nil }
func (learnPrompter) AggregatePrompt(string, []string) ([]int32, error) {
	return learnAggregatePrompt, nil
}
func (learnPrompter) Text(ids []int32) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = strconv.Itoa(int(id))
	}
	return strings.Join(s, " ")
}

// learnJudge rewards a response whose first token is even: half of the
// vocabulary, so about half of a random model's samples.
var learnJudge = rollout.Judge{
	Grade: func(response, _ string) rollout.Verdict {
		first, _, _ := strings.Cut(response, " ")
		id, err := strconv.Atoi(first)
		return rollout.Verdict{Answer: first, Explicit: true, Correct: err == nil && id%2 == 0}
	},
	Equal: func(a, b string) bool { return a == b },
}

// rewardedMass is the exact probability that lm's first token after
// prompt is even (the rewarded half), from one forward pass.
func rewardedMass(t *testing.T, lm *model.LM, prompt []int32) float64 {
	t.Helper()
	V, T := lm.Signature().Vocab, len(prompt)
	ids := make([]int64, T)
	for i, id := range prompt {
		ids[i] = int64(id)
	}
	row := modeltest.SequenceLogits(t, lm, ids)[(T-1)*V : T*V]
	maxv := math.Inf(-1)
	for _, v := range row {
		maxv = math.Max(maxv, float64(v))
	}
	z, even := 0.0, 0.0
	for id, v := range row {
		p := math.Exp(float64(v) - maxv)
		z += p
		if id%2 == 0 {
			even += p
		}
	}
	return even / z
}

// learnTrainer trains p on the one problem whose three-token answers
// learnJudge rewards when their first token is even, with the sampler
// drawing from p's whole vocabulary: algo with group, the pipeline pipe
// and AdamW at a constant peak lr.
func learnTrainer(t *testing.T, p *model.Policy, algo string, group int, pipe rollout.PipelineConfig, lr float64) *rl.Trainer {
	t.Helper()
	sc := rollout.DefaultSamplerConfig()
	sc.MaxNewTokens, sc.VocabLimit = 3, p.LM.Signature().Vocab
	sampler, err := rollout.NewSampler(p.LM, sc)
	require.NoError(t, err)
	opt, err := optim.NewAdamW(optim.DefaultConfig(), p.Weights)
	require.NoError(t, err)
	cfg := rl.DefaultConfig()
	cfg.Algo, cfg.Problems, cfg.GroupSize, cfg.Pipeline = algo, 1, group, pipe
	ds := data.NewDataset("learn", []data.Problem{{ID: "p", Problem: "p", Answer: "even"}})
	tr, err := rl.NewTrainer(cfg, rl.TrainerParts{
		Generator: sampler, Prompter: learnPrompter{}, Judge: learnJudge, Learner: p.Train,
		Problems: data.NewStream(ds, 1), Weights: p.Weights, Grads: p.Grads, Optimizer: opt,
		Schedule: optim.Schedule{PeakLR: lr},
	})
	require.NoError(t, err)
	return tr
}

// TestTrainStepsReleaseTheirValues: a training step (generation through
// the sampler, whose KV cache is released before the update, gradients,
// AdamW) leaves no ONNX Runtime tensor live that the step before did not:
// steps 2..5 end with as many live values as step 1, for each algorithm.
func TestTrainStepsReleaseTheirValues(t *testing.T) {
	for _, algo := range []string{rl.AlgoGRPO, rl.AlgoSpiral} {
		t.Run(algo, func(t *testing.T) {
			rt := modeltest.Runtime(t)
			p := openTinyPolicy(t, 5)
			tr := learnTrainer(t, p, algo, 8, rollout.PipelineConfig{N1: 4, K: 2, N: 2, N2: 2}, 1e-3)
			_, err := tr.TrainStep(context.Background(), nil)
			require.NoError(t, err)
			live, updated := rt.LiveValues(), 0
			for step := 2; step <= 5; step++ {
				m, err := tr.TrainStep(context.Background(), nil)
				require.NoError(t, err)
				require.Equal(t, live, rt.LiveValues(), "step %d left tensors live", step)
				if m.Updated() {
					updated++
				}
			}
			require.Positive(t, updated, "no step trained: the test would not cover the update")
		})
	}
}

// TestTrainerLearnsReward checks the sign and the scale of the whole RL
// update on a real model: the tiny Qwen3 (random init) samples
// three-token answers to one fixed problem, a response is rewarded when
// its first token is even, and the trainer (sampler -> judge ->
// advantages -> clipped loss -> gradients -> AdamW at lr 1e-2) must raise
// the exact probability of the rewarded first tokens from about a half to
// 0.9 within maxSteps: under GRPO for the search prompt, under SPIRAL and
// agg-only for the aggregation prompt, the only policy SPIRAL rewards
// directly. A flipped advantage or loss sign lowers it; an update scaled
// wrongly (or a misaligned loss position) stalls it. maxSteps is about 3x
// the steps each algorithm needed when written (see the log line).
func TestTrainerLearnsReward(t *testing.T) {
	for _, tc := range []struct {
		algo     string
		prompt   []int32
		maxSteps int
	}{
		{rl.AlgoGRPO, learnSearchPrompt, 40},
		{rl.AlgoSpiral, learnAggregatePrompt, 40},
		{rl.AlgoAggOnly, learnAggregatePrompt, 40},
	} {
		t.Run(tc.algo, func(t *testing.T) {
			p := openTinyPolicy(t, 5)
			tr := learnTrainer(t, p, tc.algo, 16, rollout.PipelineConfig{N1: 4, K: 4, N: 2, N2: 4}, 1e-2)

			scorer := sftScorer(t, p)
			start := rewardedMass(t, scorer, tc.prompt)
			require.InDelta(t, 0.5, start, 0.15, "a random init puts about half its mass on even ids")
			mass, steps := start, 0
			var trace []string
			for steps < tc.maxSteps && mass < 0.9 {
				_, err := tr.TrainStep(context.Background(), nil)
				require.NoError(t, err)
				steps++
				mass = rewardedMass(t, scorer, tc.prompt)
				trace = append(trace, fmt.Sprintf("%.2f", mass))
			}
			t.Logf("%s: rewarded first-token mass %.3f -> %.3f in %d steps (%s)", tc.algo, start, mass, steps, strings.Join(trace, " "))
			require.GreaterOrEqual(t, mass, 0.9, "rewarded mass after %d steps", steps)
		})
	}
}
