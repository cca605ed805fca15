package rl_test

import (
	"context"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/spiral-rl/spiral/data"
	"github.com/spiral-rl/spiral/model"
	"github.com/spiral-rl/spiral/model/optim"
	"github.com/spiral-rl/spiral/model/params"
	"github.com/spiral-rl/spiral/rl"
	"github.com/spiral-rl/spiral/rollout"
)

// recordingLearner passes micro-batches to a real learner and keeps each
// batch, its scale and the learner's per-token results.
type recordingLearner struct {
	inner   *model.Executor
	batches []model.TrainBatch
	scales  []float32
	results []model.TrainResult
}

func (l *recordingLearner) Accumulate(ctx context.Context, b model.TrainBatch, scale float32, g *params.Store, res *model.TrainResult) error {
	if err := l.inner.Accumulate(ctx, b, scale, g, res); err != nil {
		return err
	}
	l.batches, l.scales = append(l.batches, b), append(l.scales, scale)
	l.results = append(l.results, model.TrainResult{LogProbs: slices.Clone(res.LogProbs), Entropy: slices.Clone(res.Entropy), Loss: res.Loss})
	return nil
}

// PackedRows lets Gradients pack a subset's aggregation traces, as the
// executor does.
func (l *recordingLearner) PackedRows() error { return l.inner.PackedRows() }

// recordingGen keeps every Generate call's requests and completions.
type recordingGen struct {
	inner rollout.Generator
	reqs  [][]rollout.Request
	comps [][]rollout.Completion
}

func (g *recordingGen) Generate(ctx context.Context, reqs []rollout.Request, p rollout.Progress) ([]rollout.Completion, rollout.Stats, error) {
	c, st, err := g.inner.Generate(ctx, reqs, p)
	g.reqs, g.comps = append(g.reqs, reqs), append(g.comps, c)
	return c, st, err
}

// candidatePrompter is learnPrompter whose aggregation prompt lists the
// candidates' tokens, each after a 3, so that a test reads its subset
// back from it.
type candidatePrompter struct{ learnPrompter }

func (candidatePrompter) AggregatePrompt(_ string, cands []string) ([]int32, error) {
	out := slices.Clone(learnAggregatePrompt)
	for _, c := range cands {
		out = append(out, 3)
		for _, f := range strings.Fields(c) {
			id, err := strconv.Atoi(f)
			if err != nil {
				return nil, err
			}
			out = append(out, int32(id))
		}
	}
	return out, nil
}

// TestTrainStepRecomputed recomputes one training step of the tiny model
// by hand from what it sampled and what the learner returned, and
// compares with its Metrics and with the advantages the learner was
// given. The advantages follow ARCHITECTURE.md's formulas read naively
// (A_marg as the mean of the set advantages A#(G) of the subsets holding
// a trace, not the trainer's rearrangement; the sample std with
// StdEpsilon where scaled; GRPO's (r - mean)/(std + eps)), a problem
// kept when some advantage of a trained trace is not 0; the loss is the
// clipped token-mean -min(ratio A, clip(ratio) A) of the learner's
// log-probabilities against the sampler's; the entropy the token mean of
// the learner's. Sampling at temperature 0.7 with top-k (pi_old is the
// model's own distribution, so the ratio is 1), micro-batches that split
// the step, one subset, and subsets drawn twice are among the cases.
func TestTrainStepRecomputed(t *testing.T) {
	for _, tc := range []struct {
		name  string
		algo  string
		pipe  rollout.PipelineConfig
		temp  float64
		topK  int
		micro int
		scale bool
		own   float64 // --search-own-reward
	}{
		{"spiral", rl.AlgoSpiral, rollout.PipelineConfig{N1: 4, K: 3, N: 2, N2: 3}, 1, 0, 0, false, 0},
		{"spiral, temperature 0.7, top-k 5, micro-batches", rl.AlgoSpiral, rollout.PipelineConfig{N1: 4, K: 3, N: 2, N2: 3}, 0.7, 5, 24, false, 0},
		{"spiral, one subset, scaled", rl.AlgoSpiral, rollout.PipelineConfig{N1: 3, K: 1, N: 2, N2: 3}, 1, 0, 30, true, 0},
		{"spiral, scaled", rl.AlgoSpiral, rollout.PipelineConfig{N1: 5, K: 4, N: 2, N2: 3}, 1, 0, 30, true, 0},
		{"agg-only", rl.AlgoAggOnly, rollout.PipelineConfig{N1: 4, K: 3, N: 2, N2: 3}, 1, 0, 0, false, 0},
		{"search-only", rl.AlgoSearchOnly, rollout.PipelineConfig{N1: 4, K: 3, N: 2, N2: 3}, 1, 0, 0, false, 0},
		{"grpo", rl.AlgoGRPO, rollout.PipelineConfig{}, 1, 0, 20, false, 0},
		{"spiral, own reward 0.5", rl.AlgoSpiral, rollout.PipelineConfig{N1: 4, K: 3, N: 2, N2: 3}, 1, 0, 0, false, 0.5},
		{"search-only, own reward 2, scaled", rl.AlgoSearchOnly, rollout.PipelineConfig{N1: 5, K: 4, N: 2, N2: 3}, 1, 0, 30, true, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := openTinyPolicy(t, 5)
			sc := rollout.DefaultSamplerConfig()
			sc.MaxNewTokens, sc.VocabLimit = 3, p.LM.Signature().Vocab
			sc.Temperature, sc.TopK, sc.StopIDs = tc.temp, tc.topK, []int32{1, 2}
			sampler, err := rollout.NewSampler(p.LM, sc)
			require.NoError(t, err)
			gen, learner := &recordingGen{inner: sampler}, &recordingLearner{inner: p.Train}
			opt, err := optim.NewAdamW(optim.DefaultConfig(), p.Weights)
			require.NoError(t, err)
			cfg := rl.DefaultConfig()
			cfg.Algo, cfg.Problems, cfg.GroupSize = tc.algo, 2, 6
			if tc.algo != rl.AlgoGRPO {
				cfg.Pipeline = tc.pipe
			}
			cfg.Advantage.ScaleSearch, cfg.Advantage.ScaleAggregation = tc.scale, tc.scale
			cfg.Advantage.SearchOwnReward = tc.own
			if tc.micro > 0 {
				cfg.MicroBatchTokens = tc.micro
			}
			ds := data.NewDataset("learn", []data.Problem{{ID: "p", Problem: "p", Answer: "even"}, {ID: "q", Problem: "q", Answer: "even"}})
			tr, err := rl.NewTrainer(cfg, rl.TrainerParts{
				Generator: gen, Prompter: candidatePrompter{}, Judge: learnJudge, Learner: learner,
				Problems: data.NewStream(ds, 1), Weights: p.Weights, Grads: p.Grads, Optimizer: opt,
				Schedule: optim.Schedule{PeakLR: 1e-3},
			})
			require.NoError(t, err)
			m, err := tr.TrainStep(context.Background(), nil)
			require.NoError(t, err)

			// The advantages by hand, as (advantage, completion length) of
			// each trained trace.
			type trained struct {
				adv    float64
				tokens int
			}
			var want []trained
			informative, ownUsed := 0, false
			reward := func(c rollout.Completion) float64 {
				if learnJudge.Judge(rollout.Trace{Completion: c, Text: learnPrompter{}.Text(c.Tokens)}, "even").Correct {
					return 1
				}
				return 0
			}
			if tc.algo == rl.AlgoGRPO {
				for call, comps := range gen.comps {
					for pi := range len(gen.reqs[call]) / cfg.GroupSize {
						group := comps[pi*cfg.GroupSize : (pi+1)*cfg.GroupSize]
						r := make([]float64, len(group))
						for j, c := range group {
							r[j] = reward(c)
						}
						mu, sd := meanStd(r)
						if sd == 0 {
							continue
						}
						informative++
						for j, c := range group {
							want = append(want, trained{(r[j] - mu) / (sd + rl.StdEpsilon), len(c.Tokens)})
						}
					}
				}
			} else {
				N1, K, N2 := tc.pipe.N1, tc.pipe.K, tc.pipe.N2
				for call := 0; call < len(gen.reqs); call += 2 { // search, then aggregation, each draw round
					search, aggReqs, aggs := gen.comps[call], gen.reqs[call+1], gen.comps[call+1]
					for pi := range len(search) / N1 {
						traces := search[pi*N1 : (pi+1)*N1]
						f, As := make([]float64, K), make([]float64, K)
						rewards := make([][]float64, K)
						holds := make([][]int, N1) // subsets holding each search trace
						for g := range K {
							for j := range N2 {
								rewards[g] = append(rewards[g], reward(aggs[(pi*K+g)*N2+j]))
							}
							f[g], _ = meanStd(rewards[g])
							// Read the subset back from the prompt: candidates after 3s.
							prompt := aggReqs[(pi*K+g)*N2].Prompt[len(learnAggregatePrompt):]
							for _, cand := range splitCandidates(prompt) {
								i := slices.IndexFunc(traces, func(c rollout.Completion) bool { return slices.Equal(c.Tokens, cand) })
								require.GreaterOrEqual(t, i, 0, "candidate %v is no search trace", cand)
								holds[i] = append(holds[i], g)
							}
						}
						fbar, fsd := meanStd(f)
						for g := range K {
							As[g] = f[g] - fbar
							if tc.scale && fsd > 0 {
								As[g] /= fsd + rl.StdEpsilon
							}
						}
						var got []trained
						signal := false
						// The own-reward term: each held trace's reward against
						// the mean over the held traces.
						var held []float64
						for i, gs := range holds {
							if len(gs) > 0 {
								held = append(held, reward(traces[i]))
							}
						}
						ownMean, ownSD := meanStd(held)
						if tc.algo != rl.AlgoAggOnly {
							for i, gs := range holds {
								if len(gs) == 0 {
									continue
								}
								a := 0.0
								for _, g := range gs {
									a += As[g] / float64(len(gs))
								}
								if ownSD > 0 {
									a += tc.own * (reward(traces[i]) - ownMean)
									ownUsed = true
								}
								got = append(got, trained{a, len(traces[i].Tokens)})
								signal = signal || math.Abs(a) > 1e-12
							}
						}
						if tc.algo != rl.AlgoSearchOnly {
							for g := range K {
								mu, sd := meanStd(rewards[g])
								for j, r := range rewards[g] {
									a := r - mu
									if tc.scale && sd > 0 {
										a /= sd + rl.StdEpsilon
									}
									got = append(got, trained{a, len(aggs[(pi*K+g)*N2+j].Tokens)})
									signal = signal || a != 0
								}
							}
						}
						if signal {
							informative++
							want = append(want, got...)
						}
					}
				}
			}
			require.Equal(t, informative, m.ProblemsInformative)
			require.Equal(t, len(want), m.Examples)
			if tc.own != 0 {
				require.True(t, ownUsed, "no problem's search rewards differed: the own-reward term went untested")
			}
			if len(want) == 0 {
				require.True(t, m.NoUpdate)
				return
			}
			var advs, tokenAdvs []float64
			for _, w := range want {
				advs = append(advs, w.adv)
				for range w.tokens {
					tokenAdvs = append(tokenAdvs, float64(float32(w.adv)))
				}
			}
			mu, _ := meanStd(advs)
			require.InDelta(t, mu, m.AdvMean, 1e-9)
			require.InDelta(t, slices.Min(advs), m.AdvMin, 1e-9)
			require.InDelta(t, slices.Max(advs), m.AdvMax, 1e-9)

			// The learner's side: every loss token carries its trace's
			// advantage; the loss and entropy are token means.
			var given []float64
			loss, entropy, scales := 0.0, 0.0, 0.0
			for k, b := range learner.batches {
				res := learner.results[k]
				scales += float64(learner.scales[k])
				for i, mask := range b.LossMask {
					if mask == 0 {
						continue
					}
					a := float64(b.Advantages[i])
					given = append(given, a)
					ratio := math.Exp(float64(res.LogProbs[i]) - float64(b.OldLogProbs[i]))
					require.InDelta(t, 1, ratio, 1e-4, "pi_old is the policy the learner computes")
					clipped := math.Min(math.Max(ratio, 1-cfg.ClipLow), 1+cfg.ClipHigh)
					loss -= math.Min(ratio*a, clipped*a)
					entropy += float64(res.Entropy[i])
				}
			}
			slices.Sort(given)
			slices.Sort(tokenAdvs)
			// The naive mean of the A# leaves a rounding residue (~1e-17)
			// where the trainer's rearrangement gives exactly 0.
			require.Len(t, given, len(tokenAdvs))
			for i := range given {
				require.InDelta(t, tokenAdvs[i], given[i], 1e-12, "the advantages of the loss tokens: %v, want %v", given, tokenAdvs)
			}
			require.Equal(t, len(given), m.LossTokens)
			require.InDelta(t, 1, scales, 1e-6, "the micro-batches' shares of the loss tokens")
			require.InDelta(t, loss/float64(len(given)), m.Loss, 1e-6)
			require.InDelta(t, entropy/float64(len(given)), m.Entropy, 1e-6)
			// The search traces' entropy: all of GRPO's, none under
			// agg-only (which trains none).
			switch tc.algo {
			case rl.AlgoGRPO, rl.AlgoSearchOnly:
				require.NotNil(t, m.EntropySearch)
				require.InDelta(t, m.Entropy, *m.EntropySearch, 1e-6)
			case rl.AlgoAggOnly:
				require.Nil(t, m.EntropySearch)
			default:
				require.NotNil(t, m.EntropySearch)
			}
			if tc.micro > 0 {
				require.Greater(t, len(learner.batches), 1, "the step is split in micro-batches")
			}
		})
	}
}

// meanStd is the mean and the sample standard deviation (0 for one value).
func meanStd(x []float64) (mean, std float64) {
	for _, v := range x {
		mean += v / float64(len(x))
	}
	if len(x) < 2 {
		return mean, 0
	}
	ss := 0.0
	for _, v := range x {
		ss += (v - mean) * (v - mean)
	}
	return mean, math.Sqrt(ss / float64(len(x)-1))
}

// splitCandidates reads candidatePrompter's candidate list back.
func splitCandidates(prompt []int32) [][]int32 {
	var out [][]int32
	for _, id := range prompt {
		if id == 3 {
			out = append(out, nil)
			continue
		}
		out[len(out)-1] = append(out[len(out)-1], id)
	}
	return out
}
