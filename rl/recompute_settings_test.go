package rl_test

import (
	"context"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/spiral-rl/spiral/data"
	"github.com/spiral-rl/spiral/model"
	"github.com/spiral-rl/spiral/model/lmgraph"
	"github.com/spiral-rl/spiral/model/modeltest"
	"github.com/spiral-rl/spiral/model/optim"
	"github.com/spiral-rl/spiral/model/params"
	"github.com/spiral-rl/spiral/model/qwen3"
	"github.com/spiral-rl/spiral/rl"
	"github.com/spiral-rl/spiral/rollout"
)

// lengthPrompter is learnPrompter whose aggregation prompt lists each
// candidate as a 3, its length and its tokens, so that a test reads the
// subsets back from the prompt whatever tokens the candidates hold.
type lengthPrompter struct{ learnPrompter }

func (lengthPrompter) AggregatePrompt(_ string, cands []string) ([]int32, error) {
	out := slices.Clone(learnAggregatePrompt)
	for _, c := range cands {
		f := strings.Fields(c)
		out = append(out, 3, int32(len(f)))
		for _, s := range f {
			id, err := strconv.Atoi(s)
			if err != nil {
				return nil, err
			}
			out = append(out, int32(id))
		}
	}
	return out, nil
}

// readCandidates is lengthPrompter's candidate list read back.
func readCandidates(t *testing.T, prompt []int32) [][]int32 {
	t.Helper()
	require.Equal(t, learnAggregatePrompt, prompt[:len(learnAggregatePrompt)])
	var out [][]int32
	for p := prompt[len(learnAggregatePrompt):]; len(p) > 0; {
		require.EqualValues(t, 3, p[0])
		n := int(p[1])
		out, p = append(out, p[2:2+n]), p[2+n:]
	}
	return out
}

// gradLearner is recordingLearner that also keeps the gradient summed
// so far after each micro-batch (the last: the step's, before clipping).
type gradLearner struct {
	recordingLearner
	grads []float32
}

func (l *gradLearner) Accumulate(ctx context.Context, b model.TrainBatch, scale float32, g *params.Store, res *model.TrainResult) error {
	if err := l.recordingLearner.Accumulate(ctx, b, scale, g, res); err != nil {
		return err
	}
	l.grads = slices.Clone(g.Flat())
	return nil
}

// skewedGen moves the recorded pi_old of a trace's second token down
// and of its third up by skew, so that the learner's ratios are
// exp(+-skew), some of them outside the clip range.
type skewedGen struct {
	inner rollout.Generator
	skew  float32
}

func (g skewedGen) Generate(ctx context.Context, reqs []rollout.Request, p rollout.Progress) ([]rollout.Completion, rollout.Stats, error) {
	c, st, err := g.inner.Generate(ctx, reqs, p)
	for i := range c {
		lp := slices.Clone(c[i].PolicyLogProbs)
		for j := range lp {
			switch j % 3 {
			case 1:
				lp[j] -= g.skew
			case 2:
				lp[j] += g.skew
			}
		}
		c[i].PolicyLogProbs = lp
	}
	return c, st, err
}

// trainedTrace is a trace as the step should train it: its prompt,
// completion, advantage and pi_old.
type trainedTrace struct {
	prompt, completion []int32
	adv                float64
	old                []float32
}

func (tt trainedTrace) key() string {
	return learnPrompter{}.Text(tt.prompt) + "|" + learnPrompter{}.Text(tt.completion)
}

// TestTrainStepRecomputedSettings recomputes training steps of the tiny
// model under the settings TestTrainStepRecomputed leaves out, from what
// the step sampled (read back from the generator's requests and
// completions) and from the definitions of ARCHITECTURE.md ("The
// algorithm"): later aggregation rounds (a round-r trace's advantage is
// its own r - f(G) plus its A_marg in round r+1, masked under
// agg-only), other subset shapes, traces cut at --max-new-tokens (a
// one-token trace cut there states no answer and earns nothing; a
// sampled stop id is trained like any token), pi_old away from the
// policy so that the asymmetric clip bounds bite (in micro-batches, each
// counting by its share of the loss tokens), a step whose rewards
// are all equal (no update, no optimizer step, informative fraction
// 0), the learning-rate warmup (PeakLR (i+1)/W at update i), clipping
// by the global norm (the pre-clip norm logged, the gradient scaled by
// max/(norm+1e-6)), AdamW with bias correction and decoupled weight
// decay on the matrices only, and LoRA (only the adapters move). Each
// step checks the trained traces and their advantages, the metrics
// (rewards, truncated and unboxed fractions, informative problems,
// advantage statistics, search credit, loss, entropy, loss tokens,
// gradient norm, learning rate) and the weights and moments after the
// update, to float32 rounding.
func TestTrainStepRecomputedSettings(t *testing.T) {
	spiral := func(n1, k, n, n2, rounds int) rollout.PipelineConfig {
		return rollout.PipelineConfig{N1: n1, K: k, N: n, N2: n2, Rounds: rounds}
	}
	for _, tc := range []struct {
		name      string
		algo      string
		pipe      rollout.PipelineConfig
		scale     bool
		maxNew    int
		stops     []int32
		everyOne  bool    // every trace is rewarded
		skew      float32 // pi_old moved off the policy
		clip      [2]float64
		warmup    int64
		maxNorm   float64
		lora      bool
		steps     int
		wantClips bool
	}{
		{name: "agg-rounds 2", algo: rl.AlgoSpiral, pipe: spiral(4, 4, 2, 2, 2)},
		{name: "agg-rounds 3, scaled", algo: rl.AlgoSpiral, pipe: spiral(4, 3, 2, 2, 3), scale: true},
		{name: "agg-only, agg-rounds 2", algo: rl.AlgoAggOnly, pipe: spiral(4, 4, 2, 2, 2)},
		{name: "n1 16, k 4, n2 2", algo: rl.AlgoSpiral, pipe: spiral(16, 4, 4, 2, 1)},
		{name: "k 8, n2 2", algo: rl.AlgoSpiral, pipe: spiral(8, 8, 4, 2, 1)},
		{name: "grpo, cut at one token", algo: rl.AlgoGRPO, maxNew: 1, stops: []int32{2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 11, 13, 15, 17}},
		{name: "every reward equal", algo: rl.AlgoSpiral, pipe: spiral(4, 3, 2, 2, 1), everyOne: true, steps: 2},
		{name: "pi_old off the policy, clipped", algo: rl.AlgoSpiral, pipe: spiral(4, 3, 2, 3, 1), skew: 0.15, clip: [2]float64{0.1, 0.05}, wantClips: true},
		{name: "grpo, pi_old off the policy, micro-batches", algo: rl.AlgoGRPO, skew: 0.4, wantClips: true},
		{name: "warmup 2, norm clipped", algo: rl.AlgoSpiral, pipe: spiral(4, 3, 2, 2, 1), warmup: 2, maxNorm: 0.05, steps: 3},
		{name: "no norm clipping", algo: rl.AlgoGRPO, maxNorm: -1},
		{name: "lora", algo: rl.AlgoSpiral, pipe: spiral(4, 3, 2, 2, 1), lora: true, steps: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rt := modeltest.Runtime(t)
			dir := t.TempDir()
			require.NoError(t, qwen3.WriteDir(dir, qwen3.Tiny(), 5))
			var ao model.ArtifactOptions
			if tc.lora {
				ao.LoRA = lmgraph.LoRA{Rank: 2, Alpha: 4, Targets: lmgraph.LoRATargets}
			}
			p, err := model.OpenPolicy(context.Background(), rt, filepath.Join(dir, "model.onnx"), filepath.Join(dir, "artifacts"), model.PolicyOptions{Train: true, Artifacts: ao, Seed: 3})
			require.NoError(t, err)
			t.Cleanup(func() { require.NoError(t, p.Close()) })

			sc := rollout.DefaultSamplerConfig()
			sc.MaxNewTokens, sc.VocabLimit, sc.StopIDs = 3, p.LM.Signature().Vocab, tc.stops
			if tc.maxNew > 0 {
				sc.MaxNewTokens = tc.maxNew
			}
			sampler, err := rollout.NewSampler(p.LM, sc)
			require.NoError(t, err)
			var inner rollout.Generator = sampler
			if tc.skew != 0 {
				inner = skewedGen{inner: sampler, skew: tc.skew}
			}
			gen, learner := &recordingGen{inner: inner}, &gradLearner{recordingLearner: recordingLearner{inner: p.Train}}
			acfg := optim.DefaultConfig()
			opt, err := optim.NewAdamW(acfg, p.Weights)
			require.NoError(t, err)
			cfg := rl.DefaultConfig()
			cfg.Algo, cfg.Problems, cfg.GroupSize = tc.algo, 2, 6
			if tc.algo != rl.AlgoGRPO {
				cfg.Pipeline = tc.pipe
			} else if tc.skew != 0 {
				cfg.MicroBatchTokens = 20
			}
			cfg.Advantage.ScaleSearch, cfg.Advantage.ScaleAggregation = tc.scale, tc.scale
			if tc.clip != [2]float64{} {
				cfg.ClipLow, cfg.ClipHigh = tc.clip[0], tc.clip[1]
			}
			if tc.maxNorm != 0 {
				cfg.MaxGradNorm = tc.maxNorm
			}
			judge := learnJudge
			if tc.everyOne {
				judge.Grade = func(string, string) rollout.Verdict {
					return rollout.Verdict{Answer: "x", Explicit: true, Correct: true}
				}
			}
			sched := optim.Schedule{PeakLR: 1e-3, WarmupSteps: tc.warmup}
			ds := data.NewDataset("learn", []data.Problem{{ID: "p", Problem: "p", Answer: "even"}, {ID: "q", Problem: "q", Answer: "even"}, {ID: "r", Problem: "r", Answer: "even"}})
			tr, err := rl.NewTrainer(cfg, rl.TrainerParts{
				Generator: gen, Prompter: lengthPrompter{}, Judge: judge, Learner: learner,
				Problems: data.NewStream(ds, 1), Weights: p.Weights, Grads: p.Grads, Optimizer: opt,
				Schedule: sched,
			})
			require.NoError(t, err)

			decays := make([]bool, 0, p.Weights.NumParams())
			for i := range p.Weights.Len() {
				w := p.Weights.At(i)
				require.Equal(t, len(w.Shape) >= 2, opt.Decayed(i), "weight decay on %s %v: the matrices only", w.Name, w.Shape)
				for range w.Data {
					decays = append(decays, opt.Decayed(i))
				}
			}
			cutOne := 0      // one-token traces cut at the limit
			laterCredit := 0 // aggregation traces a later round credits (but under agg-only)
			reward := func(c rollout.Completion) (r float64, explicit bool) {
				if tc.everyOne {
					return 1, true
				}
				// learnJudge through rollout.Judge: a cut trace whose first
				// field a further digit would change had not stated it.
				v := learnJudge.Judge(rollout.Trace{Completion: c, Text: learnPrompter{}.Text(c.Tokens)}, "even")
				if c.Finish == rollout.FinishLength && len(c.Tokens) == 1 {
					require.False(t, v.Correct, "a one-token trace cut at the limit states no answer")
					cutOne++
				}
				if v.Correct {
					return 1, v.Explicit
				}
				return 0, v.Explicit
			}
			updates := 0
			m0, v0 := make([]float64, len(decays)), make([]float64, len(decays))
			for step := range max(tc.steps, 1) {
				gen.reqs, gen.comps = nil, nil
				learner.batches, learner.scales, learner.results, learner.grads = nil, nil, nil, nil
				w0, frozen0 := slices.Clone(p.Weights.Flat()), slices.Clone(p.Frozen.Flat())
				m, err := tr.TrainStep(context.Background(), nil)
				require.NoError(t, err)
				require.Equal(t, frozen0, p.Frozen.Flat(), "the frozen parameters move")

				// The step by hand.
				var want []trainedTrace
				var searchR, aggR, aggExplicit, searchExplicit, searchCut, aggCut []float64
				var credit [][2]float64
				drawn, informative := 0, 0
				observe := func(c rollout.Completion, rs, explicit, cut *[]float64) float64 {
					r, e := reward(c)
					*rs = append(*rs, r)
					*explicit = append(*explicit, b2f(!e))
					*cut = append(*cut, b2f(c.Finish == rollout.FinishLength))
					return r
				}
				if tc.algo == rl.AlgoGRPO {
					for call, comps := range gen.comps {
						for pi := range len(gen.reqs[call]) / cfg.GroupSize {
							drawn++
							group := comps[pi*cfg.GroupSize : (pi+1)*cfg.GroupSize]
							r := make([]float64, len(group))
							for j, c := range group {
								r[j] = observe(c, &searchR, &searchExplicit, &searchCut)
							}
							mu, sd := meanStd(r)
							if sd == 0 {
								continue
							}
							informative++
							for j, c := range group {
								a := (r[j] - mu) / (sd + rl.StdEpsilon)
								want = append(want, trainedTrace{learnSearchPrompt, c.Tokens, a, c.PolicyLogProbs})
								credit = append(credit, [2]float64{r[j], a})
							}
						}
					}
				} else {
					N1, K, N2, R := tc.pipe.N1, tc.pipe.K, tc.pipe.N2, tc.pipe.AggregationRounds()
					require.Zero(t, len(gen.reqs)%(1+R), "a search call and R aggregation calls a draw round")
					for call := 0; call < len(gen.reqs); call += 1 + R {
						search := gen.comps[call]
						for pi := range len(search) / N1 {
							drawn++
							population := search[pi*N1 : (pi+1)*N1]
							var searchRewards []float64
							for _, c := range population {
								searchRewards = append(searchRewards, observe(c, &searchR, &searchExplicit, &searchCut))
							}
							type round struct {
								prompts [][]int32
								aggs    [][]rollout.Completion
								rewards [][]float64
								marg    []*float64 // A_marg of each member of the population
							}
							// laterMarg is the A_marg of trace i of a round's
							// population in the round after it, 0 when none.
							laterMarg := func(later []round, i int) float64 {
								if len(later) == 0 || later[0].marg[i] == nil {
									return 0
								}
								return *later[0].marg[i]
							}
							rounds := make([]round, R)
							for a := range R {
								rd := &rounds[a]
								f := make([]float64, K)
								holds := make([][]int, len(population))
								for g := range K {
									base := (pi*K + g) * N2
									prompt := gen.reqs[call+1+a][base].Prompt
									for _, cand := range readCandidates(t, prompt) {
										var at []int
										for i, c := range population {
											if slices.Equal(c.Tokens, cand) {
												at = append(at, i)
											}
										}
										require.Len(t, at, 1, "candidate %v: one trace of the population", cand)
										holds[at[0]] = append(holds[at[0]], g)
									}
									aggs := gen.comps[call+1+a][base : base+N2]
									var r []float64
									for _, c := range aggs {
										r = append(r, observe(c, &aggR, &aggExplicit, &aggCut))
									}
									f[g], _ = meanStd(r)
									rd.prompts, rd.aggs, rd.rewards = append(rd.prompts, prompt), append(rd.aggs, aggs), append(rd.rewards, r)
								}
								// A#(G) = f(G) - mean f (over its std + eps when scaled).
								fbar, fsd := meanStd(f)
								setAdv := make([]float64, K)
								for g := range K {
									setAdv[g] = f[g] - fbar
									if tc.scale && fsd > 0 {
										setAdv[g] /= fsd + rl.StdEpsilon
									}
								}
								rd.marg = make([]*float64, len(population))
								for i, gs := range holds {
									if len(gs) > 0 {
										a := 0.0
										for _, g := range gs {
											a += setAdv[g] / float64(len(gs))
										}
										rd.marg[i] = &a
									}
								}
								population = slices.Concat(rd.aggs...)
							}
							// The trained traces, each with the parts of its advantage.
							var got []trainedTrace
							signal := false
							add := func(prompt []int32, c rollout.Completion, parts ...float64) {
								a := 0.0
								for _, x := range parts {
									a += x
									signal = signal || math.Abs(x) > 1e-12
								}
								got = append(got, trainedTrace{prompt, c.Tokens, a, c.PolicyLogProbs})
							}
							if tc.algo != rl.AlgoAggOnly {
								for i, c := range search[pi*N1 : (pi+1)*N1] {
									if a := rounds[0].marg[i]; a != nil {
										add(learnSearchPrompt, c, *a)
										credit = append(credit, [2]float64{searchRewards[i], *a})
									}
								}
							}
							for a, rd := range rounds {
								for g := range K {
									mu, sd := meanStd(rd.rewards[g])
									for j, c := range rd.aggs[g] {
										own := rd.rewards[g][j] - mu
										if sd == 0 {
											own = 0
										} else if tc.scale {
											own /= sd + rl.StdEpsilon
										}
										parts := []float64{own}
										// A later round's credit, which agg-only masks out.
										if next := laterMarg(rounds[a+1:], g*N2+j); next != 0 {
											laterCredit++
											if tc.algo != rl.AlgoAggOnly {
												parts = append(parts, next)
											}
										}
										add(rd.prompts[g], c, parts...)
									}
								}
							}
							if signal {
								informative++
								want = append(want, got...)
							} else {
								credit = credit[:len(credit)-countSearch(got)]
							}
						}
					}
				}

				// Rollout metrics.
				mean := func(x []float64) float64 { v, _ := meanStd(x); return v }
				require.Equal(t, len(searchR), m.Search.Traces)
				require.InDelta(t, mean(searchR), m.Search.Reward, 1e-12)
				require.InDelta(t, mean(searchExplicit), m.Search.Unboxed, 1e-12)
				require.InDelta(t, mean(searchCut), m.Search.Truncated, 1e-12)
				require.Equal(t, len(aggR), m.Aggregate.Traces)
				if len(aggR) > 0 {
					require.InDelta(t, mean(aggR), m.Aggregate.Reward, 1e-12)
					require.InDelta(t, mean(aggExplicit), m.Aggregate.Unboxed, 1e-12)
					require.InDelta(t, mean(aggCut), m.Aggregate.Truncated, 1e-12)
				}
				if R := tc.pipe.AggregationRounds(); tc.algo != rl.AlgoGRPO && R > 1 {
					require.Len(t, m.AggregateRounds, R)
					traces := 0
					for _, r := range m.AggregateRounds {
						traces += r.Traces
					}
					require.Equal(t, len(aggR), traces)
				}
				require.Equal(t, drawn, m.ProblemsDrawn)
				require.Equal(t, informative, m.ProblemsInformative)
				require.InDelta(t, float64(informative)/float64(drawn), m.InformativeFraction, 1e-12)
				require.Equal(t, len(want), m.Examples)
				if c, ok := pearsonOf(credit); ok {
					require.NotNil(t, m.SearchCredit)
					require.InDelta(t, c, *m.SearchCredit, 1e-9)
				} else {
					require.Nil(t, m.SearchCredit)
				}
				if len(want) == 0 {
					require.True(t, m.NoUpdate)
					require.Empty(t, learner.batches)
					require.Equal(t, w0, p.Weights.Flat(), "a step without update moves the weights")
					require.EqualValues(t, updates, opt.Steps(), "a step without update is no optimizer step")
					require.Zero(t, m.LR)
					require.Zero(t, m.GradNorm)
					continue
				}
				var advs []float64
				tokens := 0
				for _, w := range want {
					advs = append(advs, w.adv)
					tokens += len(w.completion)
				}
				mu, _ := meanStd(advs)
				sd := 0.0
				for _, a := range advs {
					sd += (a - mu) * (a - mu) / float64(len(advs))
				}
				require.InDelta(t, mu, m.AdvMean, 1e-9)
				require.InDelta(t, math.Sqrt(sd), m.AdvStd, 1e-7)
				require.InDelta(t, slices.Min(advs), m.AdvMin, 1e-9)
				require.InDelta(t, slices.Max(advs), m.AdvMax, 1e-9)
				require.Equal(t, tokens, m.LossTokens)

				// The learner's side: every trace trained once with its
				// advantage and pi_old; the clipped loss and the entropy
				// token means.
				have := readTrained(t, learner.batches)
				require.Len(t, have, len(want))
				byKey := map[string][]trainedTrace{}
				for _, w := range want {
					byKey[w.key()] = append(byKey[w.key()], w)
				}
				for _, h := range have {
					ws := byKey[h.key()]
					i := slices.IndexFunc(ws, func(w trainedTrace) bool {
						return math.Abs(float64(float32(w.adv))-h.adv) < 1e-12 && slices.Equal(w.old, h.old)
					})
					require.GreaterOrEqual(t, i, 0, "trained trace %v -> %v with advantage %v: none such (want %v)", h.prompt, h.completion, h.adv, ws)
					byKey[h.key()] = slices.Delete(ws, i, i+1)
				}
				// Each micro-batch's gradient counts by its share of the
				// loss tokens (the step's loss is their token mean).
				loss, entropy, clipped := 0.0, 0.0, 0
				for k, b := range learner.batches {
					res := learner.results[k]
					n := 0
					for _, mask := range b.LossMask {
						n += int(mask)
					}
					require.Equal(t, float32(float64(n)/float64(tokens)), learner.scales[k], "micro-batch %d's share", k)
					if cfg.MicroBatchTokens < 1000 && b.Batch > 1 {
						require.LessOrEqual(t, b.Batch*b.Seq, cfg.MicroBatchTokens, "micro-batch %d's rows x length", k)
					}
					for i, mask := range b.LossMask {
						if mask == 0 {
							continue
						}
						ratio := math.Exp(float64(res.LogProbs[i]) - float64(b.OldLogProbs[i]))
						if tc.skew == 0 {
							require.InDelta(t, 1, ratio, 1e-4)
						}
						a := float64(b.Advantages[i])
						c := math.Min(math.Max(ratio, 1-cfg.ClipLow), 1+cfg.ClipHigh)
						if c*a < ratio*a {
							clipped++
						}
						loss -= math.Min(ratio*a, c*a)
						entropy += float64(res.Entropy[i])
					}
				}
				require.InDelta(t, loss/float64(tokens), m.Loss, 2e-6)
				require.InDelta(t, entropy/float64(tokens), m.Entropy, 1e-6)
				require.Equal(t, tc.wantClips, clipped > 0, "%d clipped tokens", clipped)
				if tc.skew != 0 && cfg.MicroBatchTokens < 1000 {
					require.Greater(t, len(learner.batches), 1, "the step is split in micro-batches")
				}

				// The update: pre-clip norm, clipping, the warmup's rate,
				// AdamW with bias correction and decay on the matrices.
				g := learner.grads
				ss := 0.0
				for _, x := range g {
					ss += float64(x) * float64(x)
				}
				norm := math.Sqrt(ss)
				require.InDelta(t, norm, m.GradNorm, 1e-9*norm)
				if cfg.MaxGradNorm > 0 && norm > cfg.MaxGradNorm {
					s := float32(cfg.MaxGradNorm / (norm + 1e-6))
					g = slices.Clone(g)
					for i := range g {
						g[i] *= s
					}
				}
				lr := sched.PeakLR
				if int64(updates) < tc.warmup {
					lr = sched.PeakLR * float64(updates+1) / float64(tc.warmup)
				}
				require.InDelta(t, lr, m.LR, 1e-18)
				updates++
				require.EqualValues(t, updates, opt.Steps())
				b1, b2 := acfg.Beta1, acfg.Beta2
				c1, c2 := 1-math.Pow(b1, float64(updates)), 1-math.Pow(b2, float64(updates))
				mNow, vNow, w1 := opt.ExpAvg().Flat(), opt.ExpAvgSq().Flat(), p.Weights.Flat()
				moved := 0
				for i, gi := range g {
					m0[i] = float64(float32(b1*m0[i] + (1-b1)*float64(gi)))
					v0[i] = float64(float32(b2*v0[i] + (1-b2)*float64(gi)*float64(gi)))
					require.Equal(t, float32(m0[i]), mNow[i], "first moment %d", i)
					require.Equal(t, float32(v0[i]), vNow[i], "second moment %d", i)
					wd := 0.0
					if decays[i] {
						wd = acfg.WeightDecay
					}
					w := float64(w0[i])
					want := w - lr*(m0[i]/c1/(math.Sqrt(v0[i]/c2)+acfg.Eps)+wd*w)
					require.InDelta(t, want, float64(w1[i]), 1e-9+1e-6*math.Abs(want), "weight %d", i)
					if w1[i] != w0[i] {
						moved++
					}
				}
				require.Positive(t, moved, "step %d moved no weight", step+1)
			}
			if tc.maxNew == 1 {
				require.Positive(t, cutOne, "no trace was cut at one token")
			}
			if tc.algo != rl.AlgoGRPO && tc.pipe.AggregationRounds() > 1 {
				require.Positive(t, laterCredit, "no aggregation trace has a later round's credit: the case does not test it")
			}
			if !tc.everyOne {
				require.Positive(t, updates, "no step updated: the case checks nothing of the update")
			}
		})
	}
}

// b2f is 1 for true, 0 for false.
func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// countSearch counts the traces of got that answer the search prompt.
func countSearch(got []trainedTrace) int {
	n := 0
	for _, g := range got {
		if slices.Equal(g.prompt, learnSearchPrompt) {
			n++
		}
	}
	return n
}

// pearsonOf is the correlation of the pairs' coordinates, false when
// undefined (fewer than two, or a constant coordinate).
func pearsonOf(pairs [][2]float64) (float64, bool) {
	if len(pairs) < 2 {
		return 0, false
	}
	var x, y []float64
	for _, p := range pairs {
		x, y = append(x, p[0]), append(y, p[1])
	}
	mx, _ := meanStd(x)
	my, _ := meanStd(y)
	sxy, sxx, syy := 0.0, 0.0, 0.0
	for i := range x {
		sxy += (x[i] - mx) * (y[i] - my)
		sxx += (x[i] - mx) * (x[i] - mx)
		syy += (y[i] - my) * (y[i] - my)
	}
	if sxx == 0 || syy == 0 {
		return 0, false
	}
	return sxy / math.Sqrt(sxx*syy), true
}

// readTrained reads every trained trace back from the micro-batches:
// each row's loss positions, by branch where the row is packed, with
// the prompt they follow, the tokens they score, their advantage and
// pi_old; the row's positions and mask are checked on the way.
func readTrained(t *testing.T, batches []model.TrainBatch) []trainedTrace {
	t.Helper()
	var out []trainedTrace
	for _, b := range batches {
		for r := range b.Batch {
			row := func(x []int64) []int64 { return x[r*b.Seq : (r+1)*b.Seq] }
			ids, mask, pos := row(b.InputIDs), row(b.AttentionMask), row(b.PositionIDs)
			seg := make([]int64, b.Seq)
			if b.Segments != nil {
				seg = row(b.Segments)
			}
			var shared []int32
			for i := range b.Seq {
				if seg[i] == 0 && mask[i] == 1 {
					shared = append(shared, int32(ids[i]))
				}
			}
			branches := slices.Max(seg)
			for br := int64(0); br <= branches; br++ {
				var at []int
				for i := range b.Seq {
					if b.LossMask[r*b.Seq+i] == 1 && seg[i] == br {
						at = append(at, i)
					}
				}
				if len(at) == 0 {
					continue
				}
				t0 := at[0]
				require.Equal(t, at[len(at)-1]-t0+1, len(at), "a trace's loss positions are contiguous")
				tt := trainedTrace{adv: float64(b.Advantages[r*b.Seq+t0])}
				if branches == 0 {
					for i := range t0 + 1 {
						tt.prompt = append(tt.prompt, int32(ids[i]))
					}
					for i := range b.Seq {
						require.Equal(t, b2i(i <= t0+len(at)), mask[i], "row %d position %d: attention mask", r, i)
						if i <= t0+len(at) {
							require.EqualValues(t, i, pos[i], "row %d: position id", r)
						}
					}
				} else {
					tt.prompt = append(slices.Clone(shared), int32(ids[t0]))
					for i := t0; i <= t0+len(at); i++ {
						require.EqualValues(t, len(tt.prompt)-1+i-t0, pos[i], "row %d branch %d: position id", r, br)
					}
				}
				for _, i := range at {
					tt.completion = append(tt.completion, int32(ids[i+1]))
					tt.old = append(tt.old, b.OldLogProbs[r*b.Seq+i])
					require.Equal(t, float32(tt.adv), b.Advantages[r*b.Seq+i], "one advantage a trace")
				}
				out = append(out, tt)
			}
		}
	}
	return out
}

// b2i is 1 for true, 0 for false.
func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}
