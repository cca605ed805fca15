package model_test

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/spiral-rl/spiral/model"
	"github.com/spiral-rl/spiral/model/modeltest"
	"github.com/spiral-rl/spiral/rl"
)

// limitedReference recomputes in Go, from the full-sequence logits of
// lm (every logit of every position), what the learner must report for
// b under a policy over the ids below limit: each loss position's
// log-probability and entropy of the softmax over logits 0..limit-1,
// and the micro-batch's token-mean clipped loss.
func limitedReference(t *testing.T, lm *model.LM, b model.TrainBatch, limit int) (logp, ent []float64, loss float64) {
	t.Helper()
	V := lm.Signature().Vocab
	logp, ent = make([]float64, len(b.LossMask)), make([]float64, len(b.LossMask))
	count := 0.0
	for _, m := range b.LossMask {
		count += float64(m)
	}
	for r := range b.Batch {
		row := b.InputIDs[r*b.Seq : (r+1)*b.Seq]
		n := 0
		for _, m := range b.AttentionMask[r*b.Seq : (r+1)*b.Seq] {
			n += int(m)
		}
		logits := modeltest.SequenceLogits(t, lm, row[:n])
		for pos := range n - 1 {
			i := r*b.Seq + pos
			if b.LossMask[i] == 0 {
				continue
			}
			z := logits[pos*V : pos*V+limit]
			maxz := math.Inf(-1)
			for _, v := range z {
				maxz = math.Max(maxz, float64(v))
			}
			sum, dot := 0.0, 0.0
			for _, v := range z {
				e := math.Exp(float64(v) - maxz)
				sum += e
				dot += e * float64(v)
			}
			lse := maxz + math.Log(sum)
			logp[i] = float64(z[row[pos+1]]) - lse
			ent[i] = lse - dot/sum
			ratio := math.Exp(logp[i] - float64(b.OldLogProbs[i]))
			a := float64(b.Advantages[i])
			clipped := math.Min(math.Max(ratio, 1-float64(b.ClipLow)), 1+float64(b.ClipHigh))
			loss -= float64(b.LossMask[i]) / count * math.Min(ratio*a, clipped*a)
		}
	}
	return logp, ent, loss
}

// TestVocabLimitPolicy: with ExecutorOptions.VocabLimit L below the
// logits' width V (a tokenizer with fewer ids than the model's logits,
// from which the sampler draws: rollout.SamplerConfig.VocabLimit), the
// learner's policy is the softmax over the ids below L, on every export
// (the table head, rows and columns, and the generic head of
// tiny-scaled), full fine-tune and LoRA, on the host and on the device
// layer's twin:
//   - its log-probabilities, entropies and loss are those recomputed in
//     Go from the full logits with the softmax over 0..L-1 (and differ
//     from the whole width's, so the check tells them apart);
//   - its gradient is the loss's (a central difference along it), and
//     the entries of the ids at and above L in every vocabulary-wide
//     parameter are exactly 0 (no input id reaches them either);
//   - the device layer's twin gives the host's bits;
//   - VocabLimit = V gives the bits of no limit (the unlimited graphs).
func TestVocabLimitPolicy(t *testing.T) {
	rt := modeltest.Runtime(t)
	ctx := context.Background()
	// Small loss chunks: several Stats chunks and Grad blocks, a block
	// straddling L.
	small := model.ExecutorOptions{AttentionBytes: 4 << 10, LossChunkBytes: 3 << 10, MLPBytes: 30 << 10}
	for name, tc := range trainCases(t) {
		t.Run(name, func(t *testing.T) {
			run := func(p *model.Policy, b model.TrainBatch) ([]float32, model.TrainResult) {
				t.Helper()
				p.Grads.Zero()
				var res model.TrainResult
				require.NoError(t, p.Train.Accumulate(ctx, b, 1, p.Grads, &res))
				return slices.Clone(p.Grads.Flat()), res
			}
			full, _ := openTrainTwin(t, rt, tc, small, false)
			defer full.Close()
			V := full.LM.Signature().Vocab
			L := V * 3 / 5
			samples := randomSamples(rand.New(rand.NewPCG(21, 4)), 3, L)
			bs, _, err := rl.MicroBatches(samples, 0, 0.2, 0.28)
			require.NoError(t, err)
			b := bs[0]
			fullGrad, fullRes := run(full, b)

			opt := small
			opt.VocabLimit = L
			p, _ := openTrainTwin(t, rt, tc, opt, false)
			defer p.Close()
			grad, res := run(p, b)
			scorer, err := p.Scorer()
			require.NoError(t, err)
			logp, ent, loss := limitedReference(t, scorer, b, L)
			apart := 0.0
			for i, m := range b.LossMask {
				if m == 0 {
					continue
				}
				require.InDelta(t, logp[i], res.LogProbs[i], 1e-4, "log-probability at %d", i)
				require.InDelta(t, ent[i], res.Entropy[i], 1e-4, "entropy at %d", i)
				apart = math.Max(apart, math.Abs(float64(fullRes.LogProbs[i]-res.LogProbs[i])))
			}
			require.InDelta(t, loss, res.Loss, 1e-5*math.Max(1, math.Abs(loss)))
			require.Greater(t, apart, 0.1, "the whole width's log-probabilities are those of the limited policy: the check tells nothing")
			require.Greater(t, maxRelDiff(grad, fullGrad), 0.05, "the whole width's gradient is the limited policy's: the check tells nothing")

			// No gradient for the ids at and above L.
			at := 0
			for k := range p.Weights.Len() {
				w := p.Weights.At(k)
				g := grad[at : at+len(w.Data)]
				at += len(w.Data)
				if len(w.Shape) != 2 {
					continue
				}
				rows, cols := int(w.Shape[0]), int(w.Shape[1])
				for r := range rows {
					for c := range cols {
						if (rows == V && r >= L || cols == V && c >= L) && g[r*cols+c] != 0 {
							t.Fatalf("%s%v: gradient %g at [%d, %d], an id at or above the limit %d", w.Name, w.Shape, g[r*cols+c], r, c, L)
						}
					}
				}
			}

			// The gradient is the loss's: a central difference along it.
			norm := 0.0
			for _, v := range grad {
				norm += float64(v) * float64(v)
			}
			norm = math.Sqrt(norm)
			weights := p.Weights.Flat()
			base := slices.Clone(weights)
			lossAt := func(step float64) float64 {
				for i, v := range grad {
					weights[i] = base[i] + float32(step*float64(v)/norm)
				}
				p.Weights.Touch()
				_, r := run(p, b)
				return float64(r.Loss)
			}
			const h = 2e-3
			fd := (lossAt(h) - lossAt(-h)) / (2 * h)
			copy(weights, base)
			p.Weights.Touch()
			require.InEpsilon(t, norm, fd, 3e-3, "d loss along the gradient: %g by difference, %g by the gradient", fd, norm)

			// The device layer's twin: the host's bits.
			twin, _ := openTrainTwin(t, rt, tc, opt, true)
			defer twin.Close()
			twinGrad, twinRes := run(twin, b)
			require.Equal(t, grad, twinGrad)
			require.Equal(t, res, twinRes)

			// A limit of the whole width is no limit, bit for bit.
			opt.VocabLimit = V
			whole, _ := openTrainTwin(t, rt, tc, opt, false)
			defer whole.Close()
			wholeGrad, wholeRes := run(whole, b)
			require.Equal(t, fullGrad, wholeGrad)
			require.Equal(t, fullRes, wholeRes)
		})
	}
}

// TestVocabLimitRefused: a limit outside 0..V is refused when the
// executor opens, and a micro-batch that trains a token at or above the
// limit (probability 0 under the policy) is refused naming it.
func TestVocabLimitRefused(t *testing.T) {
	rt := modeltest.Runtime(t)
	tc := trainCase{src: executorSources(t)["tiny"]}
	_, err := model.OpenPolicy(context.Background(), rt, tc.src, t.TempDir(), model.PolicyOptions{Train: true, Executor: model.ExecutorOptions{VocabLimit: -1}})
	require.ErrorContains(t, err, "model: executor: vocabulary limit -1: want >= 0 (0 = the logits' whole width)")
	_, err = model.OpenPolicy(context.Background(), rt, tc.src, t.TempDir(), model.PolicyOptions{Train: true, Executor: model.ExecutorOptions{VocabLimit: 101}})
	require.ErrorContains(t, err, "model: executor: vocabulary limit 101 exceeds the model's 100 logits")
	var ve *model.VocabLimitError
	require.ErrorAs(t, err, &ve)
	require.Equal(t, model.VocabLimitError{Limit: 101, Logits: 100}, *ve)
	p, _ := openTrainTwin(t, rt, tc, model.ExecutorOptions{VocabLimit: 60}, false)
	defer p.Close()
	b := rowsBatch(1, 8, 60)
	b.InputIDs[6] = 60 // scored at position 5, in the loss
	var res model.TrainResult
	err = p.Train.Accumulate(context.Background(), b, 1, p.Grads, &res)
	require.ErrorContains(t, err, "loss mask set at position 5 of row 0, whose next token 60 lies outside the policy's vocabulary, the tokenizer's ids [0, 60): its probability is 0")
	b.InputIDs[6] = 59
	require.NoError(t, p.Train.Accumulate(context.Background(), b, 1, p.Grads, &res))
}
