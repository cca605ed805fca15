package model_test

import (
	"bufio"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/spiral-rl/spiral/model"
	"github.com/spiral-rl/spiral/model/modeltest"
	"github.com/spiral-rl/spiral/model/optim"
	"github.com/spiral-rl/spiral/model/params"
	"github.com/spiral-rl/spiral/model/qwen3"
	"github.com/spiral-rl/spiral/rl"
)

// openTrainPolicy writes the tiny Qwen3 for seed into a temporary directory
// and opens it with its training session. It returns the policy and the
// source model's path.
func openTrainPolicy(t testing.TB, seed uint64) (*model.Policy, string) {
	t.Helper()
	return openTrainPolicyWith(t, seed, model.ExecutorOptions{})
}

// openTrainPolicyWith is openTrainPolicy with executor options opt.
func openTrainPolicyWith(t testing.TB, seed uint64, opt model.ExecutorOptions) (*model.Policy, string) {
	t.Helper()
	rt := modeltest.Runtime(t)
	dir := t.TempDir()
	require.NoError(t, qwen3.WriteDir(dir, qwen3.Tiny(), seed))
	src := filepath.Join(dir, "model.onnx")
	p, err := model.OpenPolicy(context.Background(), rt, src, filepath.Join(dir, "artifacts"), model.PolicyOptions{Train: true, Executor: opt})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, p.Close()) })
	return p, src
}

// randomSamples draws n policy-gradient samples over token ids [1, vocab):
// prompts of 2..5 tokens, completions of 3..8, advantages N(0, 1) and old
// log-probabilities log(1/vocab) + N(0, 0.5^2), so that the clipped
// branch of the loss is taken at some tokens and not at others.
func randomSamples(r *rand.Rand, n, vocab int) []rl.Example {
	draw := func(l int) []int32 {
		s := make([]int32, l)
		for i := range s {
			s[i] = int32(1 + r.IntN(vocab-1))
		}
		return s
	}
	out := make([]rl.Example, n)
	for i := range out {
		s := rl.Example{Prompt: draw(2 + r.IntN(4)), Completion: draw(3 + r.IntN(6)), Advantage: float32(r.NormFloat64())}
		for range s.Completion {
			s.OldLogProbs = append(s.OldLogProbs, float32(-math.Log(float64(vocab))+0.5*r.NormFloat64()))
		}
		out[i] = s
	}
	return out
}

// maxRelDiff returns max|a-b| / max|b|.
func maxRelDiff(a, b []float32) float64 {
	maxErr, maxB := 0.0, 0.0
	for i := range b {
		maxErr = math.Max(maxErr, math.Abs(float64(a[i])-float64(b[i])))
		maxB = math.Max(maxB, math.Abs(float64(b[i])))
	}
	return maxErr / maxB
}

// TestGradientAccumulation checks that rl.Gradients over the training
// session gives the same token-mean gradient, loss and entropy whether the
// samples go through in one call or split into micro-batches and
// accumulated (each scaled by its share of loss tokens, see rl.Gradients). Tolerance: relative 1e-4 of the largest gradient entry, since
// the two differ only in float32 summation order (per-call token means,
// then the weighted sum) and padding lengths; float32 epsilon is 1.2e-7 and
// a few hundred tokens are summed.
func TestGradientAccumulation(t *testing.T) {
	p, _ := openTrainPolicy(t, 31)
	samples := randomSamples(rand.New(rand.NewPCG(31, 2)), 6, p.LM.Signature().Vocab)
	longest := 0
	for _, s := range samples {
		longest = max(longest, s.Len())
	}
	grads := func(microTokens int) (*params.Store, rl.GradientStats) {
		g := p.Weights.NewGrads()
		gs, err := rl.Gradients(context.Background(), p.Train, g, samples,
			rl.GradientOptions{MicroBatchTokens: microTokens, ClipLow: 0.2, ClipHigh: 0.28})
		require.NoError(t, err)
		return g, gs
	}
	whole, wholeStats := grads(len(samples) * longest)
	batches, _, err := rl.MicroBatches(samples, len(samples)*longest, 0.2, 0.28)
	require.NoError(t, err)
	require.Len(t, batches, 1, "the reference must be one call")
	require.Greater(t, whole.Norm(), 0.0)

	for _, tc := range []struct {
		name        string
		microTokens int
	}{
		{"one row per call", 1},
		{"two rows per call", 2 * longest},
		{"ragged", longest + 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bs, _, err := rl.MicroBatches(samples, tc.microTokens, 0.2, 0.28)
			require.NoError(t, err)
			require.Greater(t, len(bs), 1, "must split into several calls")
			g, gs := grads(tc.microTokens)
			rel := maxRelDiff(g.Flat(), whole.Flat())
			t.Logf("%d calls: gradient relative error %.3g, loss %.7g vs %.7g", len(bs), rel, gs.Loss, wholeStats.Loss)
			require.Less(t, rel, 1e-4, "accumulated gradient vs one call")
			require.Equal(t, wholeStats.LossTokens, gs.LossTokens)
			require.InDelta(t, wholeStats.Loss, gs.Loss, 1e-5*math.Max(1, math.Abs(wholeStats.Loss)))
			require.InDelta(t, wholeStats.Entropy, gs.Entropy, 1e-5*wholeStats.Entropy)
			require.InDelta(t, wholeStats.NLL, gs.NLL, 1e-5*wholeStats.NLL)
		})
	}
}

// scoreLogProbs returns log pi(token t+1 | ..t) at b's loss positions (0
// elsewhere) under lm, a full-sequence LM: one forward pass and a float64
// log-softmax written here, independent of the training executor.
func scoreLogProbs(t *testing.T, lm *model.LM, b model.TrainBatch) []float32 {
	t.Helper()
	V := lm.Signature().Vocab
	logits, err := lm.Forward(context.Background(), model.Step{Batch: b.Batch, Seq: b.Seq, InputIDs: b.InputIDs, AttentionMask: b.AttentionMask, PositionIDs: b.PositionIDs},
		lm.NewKVCache(b.Batch, b.Seq), nil)
	require.NoError(t, err)
	out := make([]float32, len(b.LossMask))
	for i, m := range b.LossMask {
		if m == 0 {
			continue
		}
		row := logits[i*V : (i+1)*V]
		maxv := math.Inf(-1)
		for _, v := range row {
			maxv = math.Max(maxv, float64(v))
		}
		z := 0.0
		for _, v := range row {
			z += math.Exp(float64(v) - maxv)
		}
		out[i] = float32(float64(row[b.InputIDs[i+1]]) - maxv - math.Log(z))
	}
	return out
}

// meanNLL returns the token-mean negative log-likelihood of b's loss
// tokens under lm (scoreLogProbs, float64 sum).
func meanNLL(t *testing.T, lm *model.LM, b model.TrainBatch) float64 {
	t.Helper()
	lp := scoreLogProbs(t, lm, b)
	sum, n := 0.0, 0
	for i, m := range b.LossMask {
		if m != 0 {
			sum -= float64(lp[i])
			n++
		}
	}
	return sum / float64(n)
}

// TestSupervisedLossIsNLL checks the supervised case of the executor
// (advantage 1, detached old log-probabilities): the loss is -mean(ratio)
// = -1, its log-probabilities equal those of the rollout graph scored
// independently (scoreLogProbs; bound 1e-5, float32 log-softmax over 100
// logits of magnitude < 10), and the gradient is that of the mean
// negative log-likelihood: the directional derivative of the NLL along
// u = g/|g|, by a central difference with step h = 1e-3 in float64 sums
// of float32 log-probabilities, equals |g| within 0.1%. Error budget:
// truncation O(h^2) (measured when written: relative error 2.4e-3 at
// h = 1e-2, 2.2e-4 at 3e-3, 2.3e-5 at 1e-3, the h^2 decay of a correct
// gradient) plus float32 rounding of the NLL, ~3e-7 / 2h ~ 1.5e-4
// absolute on |g| ~ 4.
func TestSupervisedLossIsNLL(t *testing.T) {
	p, _ := openTrainPolicy(t, 41)
	samples := randomSamples(rand.New(rand.NewPCG(41, 2)), 4, p.LM.Signature().Vocab)
	for i := range samples {
		samples[i].Advantage = 1
	}
	bs, _, err := rl.MicroBatches(samples, 0, 0.2, 0.28)
	require.NoError(t, err)
	require.Len(t, bs, 1)
	b := bs[0]
	b.OldLogProbs = nil
	ctx := context.Background()
	scored := scoreLogProbs(t, scorerOf(t, p), b)

	var res model.TrainResult
	p.Grads.Zero()
	require.NoError(t, p.Train.Accumulate(ctx, b, 1, p.Grads, &res))
	require.InDelta(t, -1, res.Loss, 1e-5, "loss at ratio 1 with advantage 1")
	worst := 0.0
	for i, m := range b.LossMask {
		if m != 0 {
			worst = math.Max(worst, math.Abs(float64(res.LogProbs[i]-scored[i])))
		}
	}
	t.Logf("executor log-probabilities vs the rollout graph's: max |diff| %.3g", worst)
	require.Less(t, worst, 1e-5)

	g := p.Weights.NewGrads()
	require.NoError(t, g.CopyFrom(p.Grads))
	norm := g.Norm()
	require.Greater(t, norm, 0.0)
	w := p.Weights.Flat()
	orig := append([]float32(nil), w...)
	const h = 1e-3
	at := func(s float64) float64 {
		for i, gi := range g.Flat() {
			w[i] = orig[i] + float32(s*h*float64(gi)/norm)
		}
		return meanNLL(t, scorerOf(t, p), b)
	}
	dir := (at(1) - at(-1)) / (2 * h)
	copy(w, orig)
	t.Logf("|g| = %.6g, directional derivative of the NLL along g/|g| = %.6g", norm, dir)
	require.InEpsilon(t, norm, dir, 1e-3)
}

// peakRSS returns the process's peak resident set size (VmHWM of
// /proc/self/status) in bytes, or 0 where that file does not exist.
func peakRSS() float64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			if err != nil {
				return 0
			}
			return kb * 1024
		}
	}
	return 0
}

// resetPeakRSS asks Linux to restart the VmHWM high-water mark (writing 5
// to /proc/self/clear_refs, Linux >= 4.0); where that fails, peakRSS stays
// the peak since the process started.
func resetPeakRSS() {
	_ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
}

// BenchmarkTrainingStep measures one training step of the tiny Qwen3
// (forward, loss and backward through the executor, then AdamW over the
// store)
// on B rows of 64 tokens, all of them loss tokens but the last. Metrics:
// tok/s (B*64 positions per step), peak-rss-MiB (the process's VmHWM
// during the sub-benchmark: ONNX Runtime's arena included) and go-sys-MiB
// (memory the Go runtime holds, runtime.MemStats.Sys). Run:
//
//	source ~/.cache/spiral/env.sh && go test ./model -run '^$' -bench TrainingStep -benchtime 20x
func BenchmarkTrainingStep(b *testing.B) {
	p, _ := openTrainPolicy(b, 51)
	opt, err := optim.NewAdamW(optim.DefaultConfig(), p.Weights)
	require.NoError(b, err)
	vocab := p.LM.Signature().Vocab
	const T = 64
	r := rand.New(rand.NewPCG(51, 1))
	for _, B := range []int{1, 8, 32} {
		b.Run(fmt.Sprintf("batch=%d", B), func(b *testing.B) {
			tb := model.TrainBatch{Batch: B, Seq: T, ClipLow: 0.2, ClipHigh: 0.28,
				InputIDs: make([]int64, B*T), AttentionMask: make([]int64, B*T), PositionIDs: make([]int64, B*T),
				LossMask: make([]float32, B*T), Advantages: make([]float32, B*T), OldLogProbs: make([]float32, B*T)}
			for i := range tb.InputIDs {
				tb.InputIDs[i] = int64(1 + r.IntN(vocab-1))
				tb.AttentionMask[i] = 1
				tb.PositionIDs[i] = int64(i % T)
				if i%T < T-1 {
					tb.LossMask[i] = 1
				}
				tb.Advantages[i] = float32(r.NormFloat64())
				tb.OldLogProbs[i] = float32(-math.Log(float64(vocab)))
			}
			var res model.TrainResult
			ctx := context.Background()
			// One untimed step warms ONNX Runtime's allocations up.
			require.NoError(b, p.Train.Accumulate(ctx, tb, 1, p.Grads, &res))
			runtime.GC()
			resetPeakRSS()
			for b.Loop() {
				p.Grads.Zero()
				if err := p.Train.Accumulate(ctx, tb, 1, p.Grads, &res); err != nil {
					b.Fatal(err)
				}
				if err := opt.Step(p.Weights, p.Grads, 1e-5); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(B*T*b.N)/b.Elapsed().Seconds(), "tok/s")
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			b.ReportMetric(peakRSS()/(1<<20), "peak-rss-MiB")
			b.ReportMetric(float64(ms.Sys)/(1<<20), "go-sys-MiB")
		})
	}
}

// TestHFFixtureTrainSession opens the PyTorch-exported Hugging Face fixture
// (see lm_fixture_test.go) as a training policy, the path a real optimum
// export takes: artifacts, rollout LM fed from the store, training
// executor. In the supervised case the loss is -1 and the
// log-probabilities equal the rollout graph's (scoreLogProbs; bound
// 1e-5 as in TestSupervisedLossIsNLL), and the gradient is finite and
// non-zero. Its float64 exactness is TestHFFixtureGradients' (autodiff),
// its equality with the whole training graph TestExecutorMatchesWholeGraph's.
func TestHFFixtureTrainSession(t *testing.T) {
	rt := modeltest.Runtime(t)
	p, err := model.OpenPolicy(context.Background(), rt, filepath.Join(hfFixtureDir, "model.onnx"), t.TempDir(), model.PolicyOptions{Train: true})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, p.Close()) })
	samples := randomSamples(rand.New(rand.NewPCG(71, 2)), 3, p.LM.Signature().Vocab)
	for i := range samples {
		samples[i].Advantage = 1
	}
	bs, _, err := rl.MicroBatches(samples, 0, 0.2, 0.28)
	require.NoError(t, err)
	b := bs[0]
	b.OldLogProbs = nil
	ctx := context.Background()
	scored := scoreLogProbs(t, scorerOf(t, p), b)
	var res model.TrainResult
	require.NoError(t, p.Train.Accumulate(ctx, b, 1, p.Grads, &res))
	require.InDelta(t, -1, res.Loss, 1e-5)
	for i, m := range b.LossMask {
		if m != 0 {
			require.InDelta(t, scored[i], res.LogProbs[i], 1e-5, "position %d", i)
		}
	}
	norm := p.Grads.Norm()
	require.False(t, math.IsNaN(norm) || math.IsInf(norm, 0), "gradient norm %v", norm)
	require.Greater(t, norm, 0.0)
}

// scorerOf returns p's full-sequence LM (the sampling LM has last-position
// logits only).
func scorerOf(t testing.TB, p *model.Policy) *model.LM {
	t.Helper()
	lm, err := p.Scorer()
	if err != nil {
		t.Fatal(err)
	}
	return lm
}
