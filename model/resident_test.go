package model_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/spiral-rl/spiral/model"
	"github.com/spiral-rl/spiral/model/checkpoint"
	"github.com/spiral-rl/spiral/model/lmgraph"
	"github.com/spiral-rl/spiral/model/memplan"
	"github.com/spiral-rl/spiral/model/modeltest"
	"github.com/spiral-rl/spiral/model/optim"
	"github.com/spiral-rl/spiral/model/qwen3"
	"github.com/spiral-rl/spiral/rl"
)

// generationScript drives lm through what generation does to a cache and
// returns the logits of every call: three prompts of different lengths
// prefilled together in chunks (right-aligned, with padding), decoding,
// a finished row replaced by moving another onto it, a row cleared and
// refilled, and a second generation on the same buffers (Fit) after
// change moves the weights (an optimiser step between generations,
// recorded by Touch).
func generationScript(t *testing.T, lm *model.LM, change func()) [][]float32 {
	t.Helper()
	ctx := context.Background()
	V := lm.Signature().Vocab
	r := rand.New(rand.NewPCG(5, 5))
	tok := func() int64 { return int64(1 + r.IntN(V-1)) }
	c, err := lm.NewRowCache(3, 16)
	require.NoError(t, err)
	defer func() { require.NoError(t, c.Free()) }()
	var out [][]float32
	call := func(r0 int, tokens []int64, real []int) {
		logits, err := lm.Extend(ctx, c, r0, tokens, real, nil)
		require.NoError(t, err)
		out = append(out, logits)
	}
	lens := []int{7, 2, 5}
	const chunk = 3
	for c0 := 0; c0 < 9; c0 += chunk {
		tokens := make([]int64, 3*chunk)
		real := make([]int, 3)
		for i, n := range lens {
			real[i] = max(0, min(chunk, c0+chunk-(9-n)))
			for j := chunk - real[i]; j < chunk; j++ {
				tokens[i*chunk+j] = tok()
			}
		}
		call(0, tokens, real)
	}
	for range 2 {
		call(0, []int64{tok(), tok(), tok()}, []int{1, 1, 1})
	}
	require.NoError(t, c.Move(0, 2))
	call(0, []int64{tok(), tok()}, []int{1, 1})
	c.Clear(2)
	call(2, []int64{tok(), tok(), tok(), tok()}, []int{4})
	call(1, []int64{tok(), tok()}, []int{1, 1})

	change()
	require.True(t, c.Fit(2, 20))
	call(0, []int64{tok(), tok(), tok(), 0, tok(), tok()}, []int{3, 2})
	call(0, []int64{tok(), tok()}, []int{1, 1})
	return out
}

// TestResidentMatchesHost is the CPU twin of device-resident generation:
// the same LM calls with the weights and the cache in memory of the
// runtime's device (here the CPU's, through ONNX Runtime's allocator,
// IoBinding and copies) give bit-identical logits to the host path on
// every export (on the sampling graph, as the resident path runs it; the
// host's decode graph is TestExtendMatchesForward's), for the sampling
// graph and the full-sequence one, through
// moves, clears, a second generation on the same buffers and a weight
// change between generations.
func TestResidentMatchesHost(t *testing.T) {
	rt := modeltest.Runtime(t)
	for name, src := range executorSources(t) {
		t.Run(name, func(t *testing.T) {
			var logits [2][][][]float32
			for i, resident := range []bool{false, true} {
				p, err := model.OpenPolicy(context.Background(), rt, src, t.TempDir(), model.PolicyOptions{Resident: resident, SamplingGraphOnly: true})
				require.NoError(t, err)
				change := func() {
					w := p.Weights.Flat()
					for j := range w {
						w[j] *= 0.9
					}
					p.Weights.Touch()
				}
				for _, lm := range []*model.LM{p.LM, scorerOf(t, p)} {
					logits[i] = append(logits[i], generationScript(t, lm, change))
				}
				require.NoError(t, p.Close())
			}
			require.Equal(t, logits[0], logits[1])
		})
	}
}

// TestResidentCopies counts what crosses between host and device
// (LM.CopiedBytes) on the CPU twin, by hand on the tiny model (2 layers,
// 2 KV heads, vocabulary 100, position ids): every weight before the
// first call, then per call only the token ids, mask and positions
// (int64), the last position's logits (float32) and the cache write
// indices (a destination and a source int64 triple per head of each new
// position, shared by every layer's keys and values): nothing of the
// size of the cache or the weights, until a store is touched (an
// update), whose weights alone cross again. A change not recorded by
// Touch does not reach the device: the calls read the device copies.
// The host path copies nothing through the counter.
func TestResidentCopies(t *testing.T) {
	rt := modeltest.Runtime(t)
	path, _ := tinyDir(t)
	p, err := model.OpenPolicy(context.Background(), rt, path, t.TempDir(), model.PolicyOptions{Resident: true})
	require.NoError(t, err)
	defer p.Close()
	lm := p.LM
	sig := lm.Signature()
	require.True(t, sig.HasPositionIDs)
	require.True(t, sig.LastLogitsOnly)
	weightBytes := int64(0)
	for _, w := range sig.Weights {
		n := int64(4)
		for _, d := range w.Shape {
			n *= d
		}
		weightBytes += n
	}
	frozen := p.Frozen.NumParams()
	require.Equal(t, int64(4*(p.Weights.NumParams()+frozen)), weightBytes)

	const rows, capacity = 3, 10
	c, err := lm.NewRowCache(rows, capacity)
	require.NoError(t, err)
	defer c.Free()
	// A call's past is the rows' capacity, or none when they are all
	// empty (the prefill): the mask covers it and the new positions.
	callBytes := func(n, S, past, newVectors int) int64 {
		tokens, mask, pos := n*S*8, n*(past+S)*8, n*S*8
		logits := n * 1 * sig.Vocab * 4
		index := 2 * newVectors * sig.KVHeads * 3 * 8
		return int64(tokens + mask + pos + logits + index)
	}
	ctx := context.Background()
	before := lm.CopiedBytes()
	_, err = lm.Extend(ctx, c, 0, []int64{1, 2, 3, 0, 4, 5, 0, 0, 6}, []int{3, 2, 1}, nil)
	require.NoError(t, err)
	require.Equal(t, weightBytes+callBytes(3, 3, 0, 6), lm.CopiedBytes()-before, "prefill, the generation's first call")
	for range 3 {
		before = lm.CopiedBytes()
		_, err = lm.Extend(ctx, c, 0, []int64{7, 8, 9}, []int{1, 1, 1}, nil)
		require.NoError(t, err)
		require.Equal(t, callBytes(3, 1, capacity, 3), lm.CopiedBytes()-before, "a decode step")
	}
	plan, err := memplan.DeviceTraffic(memplan.FromQwen3(qwen3.Tiny()), memplan.Generate{Rows: rows, Capacity: capacity}, memplan.Train{})
	require.NoError(t, err)
	require.Equal(t, callBytes(3, 1, capacity, 3), plan.DecodeStep, "spiral plan's prediction")
	before = lm.CopiedBytes()
	require.NoError(t, c.Move(0, 2))
	require.Equal(t, int64(2*(1+3)*sig.KVHeads*3*8), lm.CopiedBytes()-before, "a move copies its indices only")
	require.True(t, c.Fit(rows, capacity))
	before = lm.CopiedBytes()
	first, err := lm.Extend(ctx, c, 0, []int64{7, 8, 9}, []int{1, 1, 1}, nil)
	require.NoError(t, err)
	require.Equal(t, callBytes(3, 1, 0, 3), lm.CopiedBytes()-before, "a new generation on unchanged weights copies none")

	// Weights changed behind the store's back stay unseen; touched, the
	// trained ones cross (the frozen ones, untouched, do not).
	w := p.Weights.Flat()
	for j := range w {
		w[j] *= 0.5
	}
	again := func() []float32 {
		require.True(t, c.Fit(rows, capacity))
		out, err := lm.Extend(ctx, c, 0, []int64{7, 8, 9}, []int{1, 1, 1}, nil)
		require.NoError(t, err)
		return out
	}
	require.Equal(t, first, again(), "the calls read the device copies")
	p.Weights.Touch()
	before = lm.CopiedBytes()
	require.NotEqual(t, first, again())
	require.Equal(t, int64(4*p.Weights.NumParams())+callBytes(3, 1, 0, 3), lm.CopiedBytes()-before, "an update copies the trained weights")

	host, err := model.OpenPolicy(context.Background(), rt, path, t.TempDir(), model.PolicyOptions{})
	require.NoError(t, err)
	defer host.Close()
	hc, err := host.LM.NewRowCache(1, 4)
	require.NoError(t, err)
	defer hc.Free()
	_, err = host.LM.Extend(ctx, hc, 0, []int64{1}, []int{1}, nil)
	require.NoError(t, err)
	require.Zero(t, host.LM.CopiedBytes())
	_, err = lm.Extend(ctx, hc, 0, []int64{1}, []int{1}, nil)
	require.ErrorContains(t, err, "device-resident cache serves the LM that made it only")
}

// TestResidentTrainingMatchesHost is the CPU twin of training on device
// copies of the parameters: two steps (gradients of a micro-batch with
// small attention, loss and MLP chunks, then AdamW) give bit-identical
// gradients, loss, log-probabilities and updated weights to the host
// path, full fine-tune and LoRA, and so does a step after a checkpoint
// round trip. The parameter copies (Executor.CopiedBytes without
// CallBytes) are every parameter on
// the first call, nothing more until the weights change, then the
// trained weights alone: the frozen ones never move.
func TestResidentTrainingMatchesHost(t *testing.T) {
	rt := modeltest.Runtime(t)
	small := model.ExecutorOptions{AttentionBytes: 4 << 10, LossChunkBytes: 4 << 10, MLPBytes: 30 << 10}
	for name, tc := range trainCases(t) {
		t.Run(name, func(t *testing.T) {
			type outcome struct {
				grads  [][]float32
				res    []model.TrainResult
				copies []int64
				final  []float32
			}
			var got [2]outcome
			for i, resident := range []bool{false, true} {
				p, opt := openTrainTwin(t, rt, tc, small, resident)
				samples := randomSamples(rand.New(rand.NewPCG(8, 8)), 3, p.LM.Signature().Vocab)
				bs, _, err := rl.MicroBatches(samples, 0, 0.2, 0.28)
				require.NoError(t, err)
				ctx := context.Background()
				for range 2 {
					for range 2 { // the same batch twice: the second call copies nothing
						p.Grads.Zero()
						before := paramCopies(p)
						var res model.TrainResult
						require.NoError(t, p.Train.Accumulate(ctx, bs[0], 0.5, p.Grads, &res))
						got[i].copies = append(got[i].copies, paramCopies(p)-before)
						got[i].grads = append(got[i].grads, slices.Clone(p.Grads.Flat()))
						got[i].res = append(got[i].res, res)
					}
					require.NoError(t, opt.Step(p.Weights, p.Grads, 1e-2))
				}
				got[i].final = slices.Clone(p.Weights.Flat())
				// A checkpoint round trip: the loaded weights reach the
				// device copies too.
				dir := t.TempDir()
				path, err := checkpoint.Save(dir, p.Weights, opt, checkpoint.State{Step: 2}, checkpoint.Options{})
				require.NoError(t, err)
				clear(p.Weights.Flat())
				p.Weights.Touch()
				p.Grads.Zero()
				var res model.TrainResult
				require.NoError(t, p.Train.Accumulate(ctx, bs[0], 0.5, p.Grads, &res))
				zeroed := slices.Clone(p.Grads.Flat())
				_, err = checkpoint.Load(context.Background(), path, p.Weights, opt)
				require.NoError(t, err)
				before := paramCopies(p)
				p.Grads.Zero()
				require.NoError(t, p.Train.Accumulate(ctx, bs[0], 0.5, p.Grads, &res))
				got[i].copies = append(got[i].copies, paramCopies(p)-before)
				require.NotEqual(t, zeroed, p.Grads.Flat())
				got[i].grads = append(got[i].grads, slices.Clone(p.Grads.Flat()))
				// A change not recorded by Touch, to every weight: the host
				// path sees it, the device copies do not (the embedding's
				// rows are gathered from the table's device copy, the table
				// head reads its blocks there).
				loaded := slices.Clone(p.Grads.Flat())
				for k := range p.Weights.Len() {
					w := p.Weights.At(k)
					for j := range w.Data {
						w.Data[j] *= 0.5
					}
				}
				p.Grads.Zero()
				require.NoError(t, p.Train.Accumulate(ctx, bs[0], 0.5, p.Grads, &res))
				if resident {
					require.Equal(t, loaded, p.Grads.Flat(), "the graphs read the device copies")
				} else {
					require.NotEqual(t, loaded, p.Grads.Flat())
				}
				if resident {
					trained, frozen := int64(4*p.Weights.NumParams()), int64(4*p.Frozen.NumParams())
					require.Equal(t, []int64{trained + frozen, 0, trained, 0, trained}, got[i].copies)
					if tc.lora.Rank > 0 {
						require.Greater(t, frozen, trained, "LoRA: the frozen base outweighs the adapters")
					}
				}
				require.NoError(t, p.Close())
			}
			require.Equal(t, got[0].grads, got[1].grads)
			require.Equal(t, got[0].res, got[1].res)
			require.Equal(t, got[0].final, got[1].final)
			require.Equal(t, []int64{0, 0, 0, 0, 0}, got[0].copies, "the host path copies nothing")
		})
	}
}

// trainCase is a training twin test's model: an export, with LoRA or
// not.
type trainCase struct {
	src  string
	lora lmgraph.LoRA
}

// trainCases are every export of executorSources, full fine-tune, and
// the tiny model with LoRA adapters ("tiny-lora").
func trainCases(t *testing.T) map[string]trainCase {
	sources := executorSources(t)
	cases := map[string]trainCase{"tiny-lora": {sources["tiny"], lmgraph.LoRA{Rank: 2, Alpha: 4, Targets: lmgraph.LoRATargets}}}
	for name, src := range sources {
		cases[name] = trainCase{src: src}
	}
	return cases
}

// openTrainTwin opens tc's training policy with executor options opt,
// on the device layer or not, and an AdamW optimizer of its weights.
func openTrainTwin(t *testing.T, rt *model.Runtime, tc trainCase, opt model.ExecutorOptions, resident bool) (*model.Policy, *optim.AdamW) {
	p, err := model.OpenPolicy(context.Background(), rt, tc.src, t.TempDir(), model.PolicyOptions{Train: true, Executor: opt, Resident: resident,
		Artifacts: model.ArtifactOptions{LoRA: tc.lora}, Seed: 3})
	require.NoError(t, err)
	o, err := optim.NewAdamW(optim.DefaultConfig(), p.Weights)
	require.NoError(t, err)
	return p, o
}

// paramCopies returns the bytes p's executor has copied through its
// copier: the parameters (CopiedBytes without the calls' own).
func paramCopies(p *model.Policy) int64 { return p.Train.CopiedBytes() - p.Train.CallBytes() }

// rowsBatch is rows copies of one random row of seq tokens whose second
// half the loss covers (advantage 1, detached).
func rowsBatch(rows, seq, vocab int) model.TrainBatch {
	r := rand.New(rand.NewPCG(5, 5))
	row := make([]int64, seq)
	for i := range row {
		row[i] = int64(1 + r.IntN(vocab-1))
	}
	b := model.TrainBatch{Batch: rows, Seq: seq, ClipLow: 0.2, ClipHigh: 0.28}
	for range rows {
		b.InputIDs = append(b.InputIDs, row...)
		for t := range seq {
			b.AttentionMask = append(b.AttentionMask, 1)
			b.PositionIDs = append(b.PositionIDs, int64(t))
			loss := float32(0)
			if t >= seq/2 && t < seq-1 {
				loss = 1
			}
			b.LossMask = append(b.LossMask, loss)
			b.Advantages = append(b.Advantages, 1)
		}
	}
	return b
}

// TestExecutorCallBytes counts what crosses with the training graphs'
// calls on the device layer (Executor.CallBytes, in CopiedBytes): on
// the tiny model, unchunked, every trained parameter's gradient comes
// back once per micro-batch (GradientBytes), the rest (activations,
// their gradients, the loss inputs) grows by the same bytes per added
// row, and the host path counts nothing.
func TestExecutorCallBytes(t *testing.T) {
	rt := modeltest.Runtime(t)
	src := executorSources(t)["tiny"]
	for _, resident := range []bool{false, true} {
		p, err := model.OpenPolicy(context.Background(), rt, src, t.TempDir(), model.PolicyOptions{Train: true, Resident: resident, Seed: 3})
		require.NoError(t, err)
		var activations []int64
		for rows := 1; rows <= 3; rows++ {
			called, grads := p.Train.CallBytes(), p.Train.GradientBytes()
			var res model.TrainResult
			p.Grads.Zero()
			require.NoError(t, p.Train.Accumulate(context.Background(), rowsBatch(rows, 12, p.LM.Signature().Vocab), 1, p.Grads, &res))
			if !resident {
				require.Zero(t, p.Train.CopiedBytes()+p.Train.CallBytes()+p.Train.GradientBytes(), "the host path")
				continue
			}
			require.Equal(t, int64(4*p.Weights.NumParams()), p.Train.GradientBytes()-grads, "every gradient once")
			activations = append(activations, p.Train.CallBytes()-called-(p.Train.GradientBytes()-grads))
		}
		if resident {
			require.Positive(t, activations[0])
			require.Equal(t, activations[1]-activations[0], activations[2]-activations[1], "the same bytes per added row")
		}
		require.NoError(t, p.Close())
	}
}

// TestResidentAccumulateBatches is the CPU twin of summing a step's
// gradients on the device (Executor.AccumulateBatches): over three
// micro-batches (with small attention, loss and MLP chunks) the
// gradients and every micro-batch's results are bit-identical to the
// host path on every export, full fine-tune and LoRA (the embedding
// table's rows added in position order, a repeated token's included);
// and on the tiny model every gradient returns to the host once per
// call, not once per micro-batch.
func TestResidentAccumulateBatches(t *testing.T) {
	rt := modeltest.Runtime(t)
	small := model.ExecutorOptions{AttentionBytes: 4 << 10, LossChunkBytes: 4 << 10, MLPBytes: 30 << 10}
	for name, tc := range trainCases(t) {
		t.Run(name, func(t *testing.T) {
			type outcome struct {
				grads []float32
				res   []model.TrainResult
			}
			var got [2]outcome
			for i, resident := range []bool{false, true} {
				p, err := model.OpenPolicy(context.Background(), rt, tc.src, t.TempDir(), model.PolicyOptions{Train: true, Executor: small, Resident: resident,
					Artifacts: model.ArtifactOptions{LoRA: tc.lora}, Seed: 3})
				require.NoError(t, err)
				samples := randomSamples(rand.New(rand.NewPCG(9, 9)), 6, p.LM.Signature().Vocab)
				for k := range samples {
					samples[k].Completion[0] = samples[k].Prompt[0] // a repeated token
				}
				bs, _, err := rl.MicroBatches(samples, 24, 0.2, 0.28)
				require.NoError(t, err)
				require.GreaterOrEqual(t, len(bs), 3)
				bs = bs[:3]
				seen, repeated := map[int64]bool{}, false
				for _, id := range bs[0].InputIDs {
					repeated = repeated || seen[id]
					seen[id] = true
				}
				require.True(t, repeated, "a token repeats: the embedding's gradient adds rows into one row")
				// Twice, the second time on other scales: the sums start
				// from zero on every call.
				var before int64
				for _, scales := range [][]float32{{0.5, 0.3, 0.2}, {0.2, 0.2, 0.6}} {
					p.Grads.Zero()
					before = p.Train.GradientBytes()
					var res model.TrainResult
					require.NoError(t, p.Train.AccumulateBatches(context.Background(), bs, scales, p.Grads, &res, func(k int) error {
						got[i].res = append(got[i].res, model.TrainResult{LogProbs: slices.Clone(res.LogProbs), Entropy: slices.Clone(res.Entropy), Loss: res.Loss})
						return nil
					}))
					got[i].grads = append(got[i].grads, p.Grads.Flat()...)
					require.NotZero(t, p.Grads.Norm())
				}
				if resident && name == "tiny" {
					require.Equal(t, int64(4*p.Weights.NumParams()), p.Train.GradientBytes()-before, "the gradients return once")
				}
				require.NoError(t, p.Close())
			}
			require.Equal(t, got[0].grads, got[1].grads)
			require.Equal(t, got[0].res, got[1].res)
		})
	}
}

// TestResidentDeviceOptimizer is the CPU twin of AdamW on the device
// (Policy.UseDeviceOptimizer, which releases the host gradient store;
// Update, SyncHost): three steps of
// three micro-batches give bit-identical weights, moments and step
// counts to the host path (AccumulateBatches, ClipByNorm, AdamW.Step)
// on every export, full fine-tune and LoRA, with and without clipping,
// and so does the third step again after going back to a checkpoint of
// the second (the update's graphs on chunks of 1,000 values); the
// gradient norm equals the
// host's to float64 rounding (the device sums its squares in another
// order). Until SyncHost the host weights are the old ones, and after
// the first step nothing model-sized crosses: no parameter or gradient
// copy, only the calls' activations. Without a gradient store, a
// micro-batch outside AccumulateBatches, or any without a device
// optimizer, is refused.
func TestResidentDeviceOptimizer(t *testing.T) {
	rt := modeltest.Runtime(t)
	type tcase struct {
		trainCase
		clip float64
	}
	cases := map[string]tcase{}
	for name, tc := range trainCases(t) {
		cases[name] = tcase{tc, 1e9}
	}
	cases["tiny-clip"] = tcase{cases["tiny"].trainCase, 1e-3}
	small := model.ExecutorOptions{AttentionBytes: 4 << 10, LossChunkBytes: 4 << 10, MLPBytes: 30 << 10, OptimizerChunk: 1000}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			type outcome struct {
				weights, m, v [][]float32
				norms         []float64
				steps         int64
			}
			var got [2]outcome
			for i, resident := range []bool{false, true} {
				p, opt := openTrainTwin(t, rt, tc.trainCase, small, resident)
				samples := randomSamples(rand.New(rand.NewPCG(10, 10)), 6, p.LM.Signature().Vocab)
				bs, _, err := rl.MicroBatches(samples, 24, 0.2, 0.28)
				require.NoError(t, err)
				bs = bs[:3]
				ctx := context.Background()
				var res model.TrainResult
				noStore := p.Train.AccumulateBatches(ctx, bs, []float32{0.5, 0.3, 0.2}, nil, &res, func(int) error { return nil })
				require.ErrorContains(t, noStore, "no gradient store", "without a device optimizer")
				if resident {
					require.NoError(t, p.UseDeviceOptimizer(opt))
					require.Nil(t, p.Grads, "the host gradient store is released")
					require.ErrorContains(t, p.Train.Accumulate(ctx, bs[0], 1, nil, &res), "no gradient store",
						"a lone micro-batch has no device sum to go to")
				}
				step := func(k int) {
					if !resident {
						p.Grads.Zero()
					}
					copied, returned := paramCopies(p), p.Train.GradientBytes()
					require.NoError(t, p.Train.AccumulateBatches(ctx, bs, []float32{0.5, 0.3, 0.2}, p.Grads, &res, func(int) error { return nil }))
					if !resident {
						norm := p.Grads.ClipByNorm(tc.clip)
						require.NoError(t, opt.Step(p.Weights, p.Grads, 1e-2))
						got[i].norms = append(got[i].norms, norm)
						return
					}
					old := slices.Clone(p.Weights.Flat())
					u, err := p.Train.Update(1e-2, tc.clip)
					require.NoError(t, err)
					require.Empty(t, u.Skipped)
					got[i].norms = append(got[i].norms, u.Norm)
					require.Equal(t, old, p.Weights.Flat(), "the host weights are stale until SyncHost")
					if k == 1 {
						require.Zero(t, paramCopies(p)-copied, "nothing model-sized crosses")
					}
					require.Zero(t, p.Train.GradientBytes()-returned, "no gradient returns to the host (an untied head's included)")
					require.NoError(t, p.Train.SyncHost())
				}
				record := func() {
					got[i].weights = append(got[i].weights, slices.Clone(p.Weights.Flat()))
					got[i].m = append(got[i].m, slices.Clone(opt.ExpAvg().Flat()))
					got[i].v = append(got[i].v, slices.Clone(opt.ExpAvgSq().Flat()))
				}
				for k := range 2 {
					step(k)
					record()
				}
				// A checkpoint of step 2, a third step, then back to the
				// checkpoint (the device's weights and moments with it)
				// and the third step again.
				path, err := checkpoint.Save(t.TempDir(), p.Weights, opt, checkpoint.State{Step: 2}, checkpoint.Options{})
				require.NoError(t, err)
				step(2)
				record()
				_, err = checkpoint.Load(context.Background(), path, p.Weights, opt)
				require.NoError(t, err)
				require.Equal(t, int64(2), opt.Steps())
				step(2)
				record()
				got[i].steps = opt.Steps()
				require.NoError(t, p.Close())
			}
			require.Equal(t, int64(3), got[1].steps)
			require.Equal(t, got[1].weights[2], got[1].weights[3], "the third step again, from the checkpoint")
			require.Equal(t, got[0].steps, got[1].steps)
			require.InEpsilonSlice(t, got[0].norms, got[1].norms, 1e-12)
			require.Equal(t, got[0].weights, got[1].weights)
			require.Equal(t, got[0].m, got[1].m)
			require.Equal(t, got[0].v, got[1].v)
			if tc.clip < 1 {
				require.Greater(t, got[0].norms[0], tc.clip, "the gradients were clipped")
			}
		})
	}
}

// TestResidentDeviceOptimizerSkips: an update that would overflow (a
// learning rate of 1e39) is checked on the device and skipped, as
// AdamW.Step skips it, leaving the weights, moments and step count; a
// NaN gradient skips it by its norm; Update needs the gradients of an
// AccumulateBatches call that finished (of no micro-batch: zero);
// SyncHost leaves a host store written since the device's copy of it,
// and the next update starts from it.
func TestResidentDeviceOptimizerSkips(t *testing.T) {
	rt := modeltest.Runtime(t)
	p, err := model.OpenPolicy(context.Background(), rt, executorSources(t)["tiny"], t.TempDir(), model.PolicyOptions{Train: true, Resident: true, Seed: 3})
	require.NoError(t, err)
	defer p.Close()
	opt, err := optim.NewAdamW(optim.DefaultConfig(), p.Weights)
	require.NoError(t, err)
	require.NoError(t, p.Train.UseDeviceOptimizer(opt))
	require.ErrorContains(t, p.Train.UseDeviceOptimizer(opt), "in use already")
	_, err = p.Train.Update(1e-3, 1)
	require.ErrorContains(t, err, "without the gradients of an AccumulateBatches call")
	var res model.TrainResult
	b := rowsBatch(2, 12, p.LM.Signature().Vocab)
	require.NoError(t, p.Train.AccumulateBatches(context.Background(), []model.TrainBatch{b}, []float32{1}, p.Grads, &res, func(int) error { return nil }))
	before := slices.Clone(p.Weights.Flat())
	u, err := p.Train.Update(1e39, 0)
	require.NoError(t, err)
	require.Contains(t, u.Skipped, optim.ErrNonFiniteUpdate.Error())
	require.Zero(t, opt.Steps())
	require.NoError(t, p.Train.SyncHost())
	require.Equal(t, before, p.Weights.Flat())
	require.Zero(t, opt.ExpAvg().Norm())

	b.Advantages[b.Seq-2] = float32(math.NaN())
	require.NoError(t, p.Train.AccumulateBatches(context.Background(), []model.TrainBatch{b}, []float32{1}, p.Grads, &res, func(int) error { return nil }))
	u, err = p.Train.Update(1e-3, 1)
	require.NoError(t, err)
	require.Contains(t, u.Skipped, "gradient norm is NaN")
	require.Zero(t, opt.Steps())

	// No micro-batch (rl.Gradients without loss tokens): zero gradients,
	// a step that only decays the weights; then a host write while the
	// host is stale (a checkpoint load, say) is kept by SyncHost.
	require.NoError(t, p.Train.AccumulateBatches(context.Background(), nil, nil, p.Grads, &res, func(int) error { return nil }))
	u, err = p.Train.Update(1e-3, 1)
	require.NoError(t, err)
	require.Zero(t, u.Norm)
	require.Equal(t, int64(1), opt.Steps())
	for i := range p.Weights.Flat() {
		p.Weights.Flat()[i] = 0.25
	}
	p.Weights.Touch()
	require.NoError(t, p.Train.SyncHost())
	for _, v := range p.Weights.Flat() {
		require.Equal(t, float32(0.25), v)
	}
	// The next update starts from those host weights: as a host AdamW
	// with the same state steps them.
	ref := p.Weights.NewGrads()
	require.NoError(t, ref.CopyFrom(p.Weights))
	refOpt, err := optim.NewAdamW(optim.DefaultConfig(), ref)
	require.NoError(t, err)
	require.NoError(t, refOpt.ExpAvg().CopyFrom(opt.ExpAvg()))
	require.NoError(t, refOpt.ExpAvgSq().CopyFrom(opt.ExpAvgSq()))
	require.NoError(t, refOpt.SetSteps(opt.Steps()))
	require.NoError(t, refOpt.Step(ref, ref.NewGrads(), 1e-3))
	require.NoError(t, p.Train.AccumulateBatches(context.Background(), nil, nil, p.Grads, &res, func(int) error { return nil }))
	_, err = p.Train.Update(1e-3, 1)
	require.NoError(t, err)
	require.NoError(t, p.Train.SyncHost())
	require.Equal(t, ref.Flat(), p.Weights.Flat())
	require.NotEqual(t, float32(0.25), ref.Flat()[0], "the update moved the weights")

	// A call that fails partway leaves no gradients to update with, even
	// after one that succeeded.
	ok := rowsBatch(2, 12, p.LM.Signature().Vocab)
	require.NoError(t, p.Train.AccumulateBatches(context.Background(), []model.TrainBatch{ok}, []float32{1}, p.Grads, &res, func(int) error { return nil }))
	bad := rowsBatch(2, 12, p.LM.Signature().Vocab)
	bad.InputIDs[3] = int64(p.LM.Signature().Vocab)
	require.Error(t, p.Train.AccumulateBatches(context.Background(), []model.TrainBatch{ok, bad}, []float32{0.5, 0.5}, p.Grads, &res, func(int) error { return nil }))
	_, err = p.Train.Update(1e-3, 1)
	require.ErrorContains(t, err, "without the gradients of an AccumulateBatches call")
}

// TestResidentSmallestChunksMatchHost is the CPU twin of the executor's
// activations in device memory under its smallest chunks: attention one
// query a call (its score-shaped inputs sliced in device memory), the
// MLP one position a call, the loss one position a chunk. Gradients and
// results are bit-identical to the host path on every export, full
// fine-tune and LoRA. (The twin's memory panics when Go reads it, as
// device memory would fault.)
func TestResidentSmallestChunksMatchHost(t *testing.T) {
	rt := modeltest.Runtime(t)
	smallest := model.ExecutorOptions{AttentionBytes: 1, LossChunkBytes: 1, MLPBytes: 1}
	for name, tc := range trainCases(t) {
		t.Run(name, func(t *testing.T) {
			var grads [2][]float32
			var res [2]model.TrainResult
			for i, resident := range []bool{false, true} {
				p, _ := openTrainTwin(t, rt, tc, smallest, resident)
				b := rowsBatch(2, 12, p.LM.Signature().Vocab)
				b.AttentionMask[3] = 0 // a padded position: the masks differ by row
				p.Grads.Zero()
				require.NoError(t, p.Train.Accumulate(context.Background(), b, 0.5, p.Grads, &res[i]))
				grads[i] = slices.Clone(p.Grads.Flat())
				require.NoError(t, p.Close())
			}
			require.Equal(t, grads[0], grads[1])
			require.Equal(t, res[0], res[1])
		})
	}
}

// TestExecutorActivationsStayOnDevice checks that on the device layer a
// layer's activations and their gradients never cross to the host: the
// bytes that cross with the calls, the parameter gradients aside, are
// the batch's inputs, the head's and the embedding's, the same for 1
// layer and for 3, unchunked or in the smallest chunks. (The executor's
// host-memory activations crossed every piece's inputs and outputs: tens
// of hidden states a layer.) Nor do the table head's hidden states cross
// once per block of the vocabulary: with the loss in 4 blocks, what
// crosses beyond 1 block is less than the loss positions' hidden states
// (the per-position columns each block reads).
func TestExecutorActivationsStayOnDevice(t *testing.T) {
	rt := modeltest.Runtime(t)
	const rows, seq = 2, 12
	crossing := func(layers int, opt model.ExecutorOptions) int64 {
		c := qwen3.Tiny()
		c.Layers = layers
		dir := t.TempDir()
		require.NoError(t, qwen3.WriteDir(dir, c, 3))
		p, err := model.OpenPolicy(context.Background(), rt, filepath.Join(dir, "model.onnx"), t.TempDir(), model.PolicyOptions{Train: true, Resident: true, Seed: 3, Executor: opt})
		require.NoError(t, err)
		defer func() { require.NoError(t, p.Close()) }()
		called, grads := p.Train.CallBytes(), p.Train.GradientBytes()
		var res model.TrainResult
		p.Grads.Zero()
		require.NoError(t, p.Train.Accumulate(context.Background(), rowsBatch(rows, seq, c.Vocab), 1, p.Grads, &res))
		return p.Train.CallBytes() - called - (p.Train.GradientBytes() - grads)
	}
	for _, opt := range []model.ExecutorOptions{{}, {AttentionBytes: 1, MLPBytes: 1}} {
		one := crossing(1, opt)
		require.Positive(t, one)
		require.Equal(t, one, crossing(3, opt), "chunks %+v: bytes crossing with 1 layer and with 3", opt)
	}
	// rowsBatch's loss covers positions 6..10 of each row: 10 positions,
	// 16 bytes a position and vocabulary entry in the table head's
	// gradient graph; 4,000 bytes make blocks of 25 of the 100 entries.
	const lossPositions = 2 * 5
	hiddenStates := int64(lossPositions * qwen3.Tiny().Hidden * 4)
	extra := crossing(1, model.ExecutorOptions{LossChunkBytes: lossPositions * 16 * 25}) - crossing(1, model.ExecutorOptions{})
	require.Less(t, extra, hiddenStates, "bytes crossing in 4 blocks of the vocabulary beyond 1")
}

// TestExecutorReleasesWhatItMakes checks that a training step releases
// every tensor it makes (model.Runtime.LiveValues): after a first call,
// which may open what the executor keeps, another call leaves as many
// live as before, on the host path and on the device layer's twin,
// unchunked and in the smallest chunks; and closing the policy releases
// all it made. A step that dropped its MLP chunks' outputs once grew a
// run by 300 MB a step.
func TestExecutorReleasesWhatItMakes(t *testing.T) {
	rt := modeltest.Runtime(t)
	src := executorSources(t)["tiny"]
	b := rowsBatch(2, 12, qwen3.Tiny().Vocab)
	for _, resident := range []bool{false, true} {
		for _, opt := range []model.ExecutorOptions{{}, {AttentionBytes: 1, LossChunkBytes: 1, MLPBytes: 1}} {
			opened := rt.LiveValues()
			p, err := model.OpenPolicy(context.Background(), rt, src, t.TempDir(), model.PolicyOptions{Train: true, Resident: resident, Seed: 3, Executor: opt})
			require.NoError(t, err)
			var res model.TrainResult
			step := func() {
				p.Grads.Zero()
				require.NoError(t, p.Train.Accumulate(context.Background(), b, 1, p.Grads, &res))
			}
			step()
			live := rt.LiveValues()
			step()
			require.Equal(t, live, rt.LiveValues(), "resident %v, chunks %+v: tensors left live by a step", resident, opt)
			if resident {
				require.NoError(t, p.Train.AccumulateBatches(context.Background(), []model.TrainBatch{b, b}, []float32{1, 1}, p.Grads, &res, func(int) error { return nil }))
				require.Equal(t, live, rt.LiveValues(), "resident, chunks %+v: tensors left live by AccumulateBatches", opt)
			}
			require.NoError(t, p.Close())
			require.Equal(t, opened, rt.LiveValues(), "resident %v, chunks %+v: tensors left live after Close", resident, opt)
		}
	}
}

// TestResidentNaNWeightSkipsAsHost: a weight that is NaN already in an
// embedding row no batch reads (the untied model: the head does not read
// it either) leaves the gradient norm finite, and the update, which
// would keep it NaN, is skipped on both paths: AdamW.Step on the host
// (its bound once ignored a NaN weight and stepped) and Update on the
// device; the step count stays 0.
func TestResidentNaNWeightSkipsAsHost(t *testing.T) {
	rt := modeltest.Runtime(t)
	src := executorSources(t)["tiny-untied"]
	for _, resident := range []bool{false, true} {
		t.Run(fmt.Sprintf("resident=%v", resident), func(t *testing.T) {
			p, err := model.OpenPolicy(context.Background(), rt, src, t.TempDir(), model.PolicyOptions{Train: true, Resident: resident, Seed: 3})
			require.NoError(t, err)
			defer func() { require.NoError(t, p.Close()) }()
			opt, err := optim.NewAdamW(optim.DefaultConfig(), p.Weights)
			require.NoError(t, err)
			b := rowsBatch(2, 12, p.LM.Signature().Vocab)
			require.NotContains(t, b.InputIDs, int64(0), "row 0 is read by no position")
			emb := p.Weights.At(0)
			require.Equal(t, "model.embed_tokens.weight", emb.Name)
			for i := range int(emb.Shape[1]) {
				emb.Data[i] = float32(math.NaN())
			}
			p.Weights.Touch()
			var res model.TrainResult
			if resident {
				require.NoError(t, p.UseDeviceOptimizer(opt))
			}
			require.NoError(t, p.Train.AccumulateBatches(context.Background(), []model.TrainBatch{b}, []float32{1}, p.Grads, &res, func(int) error { return nil }))
			skipped := ""
			if resident {
				u, err := p.Train.Update(1e-3, 0)
				require.NoError(t, err)
				require.False(t, math.IsNaN(u.Norm) || math.IsInf(u.Norm, 0), "a finite gradient norm")
				skipped = u.Skipped
			} else {
				require.False(t, math.IsNaN(p.Grads.Norm()) || math.IsInf(p.Grads.Norm(), 0), "a finite gradient norm")
				if err := opt.Step(p.Weights, p.Grads, 1e-3); err != nil {
					skipped = err.Error()
				}
			}
			require.Contains(t, skipped, optim.ErrNonFiniteUpdate.Error())
			require.Zero(t, opt.Steps())
		})
	}
}
