package rl_test

import (
	"context"
	"math"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/spiral-rl/spiral/model"
	"github.com/spiral-rl/spiral/model/modeltest"
	"github.com/spiral-rl/spiral/model/optim"
	"github.com/spiral-rl/spiral/model/qwen3"
	"github.com/spiral-rl/spiral/rl"
)

// openTinyPolicy writes the tiny Qwen3 (vocabulary 100) for seed into a
// temporary directory and opens it for training.
func openTinyPolicy(t *testing.T, seed uint64) *model.Policy {
	t.Helper()
	rt := modeltest.Runtime(t)
	dir := t.TempDir()
	require.NoError(t, qwen3.WriteDir(dir, qwen3.Tiny(), seed))
	p, err := model.OpenPolicy(context.Background(), rt, filepath.Join(dir, "model.onnx"), filepath.Join(dir, "artifacts"), model.PolicyOptions{Train: true})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, p.Close()) })
	return p
}

// fixedExamples draws n (prompt, completion) pairs of random token ids in
// [1, vocab): prompts of 3..6 tokens, completions of 4..9.
func fixedExamples(r *rand.Rand, n, vocab int) []rl.Example {
	ex := make([]rl.Example, n)
	draw := func(l int) []int32 {
		s := make([]int32, l)
		for i := range s {
			s[i] = int32(1 + r.IntN(vocab-1))
		}
		return s
	}
	for i := range ex {
		ex[i] = rl.Example{Prompt: draw(3 + r.IntN(4)), Completion: draw(4 + r.IntN(6))}
	}
	return ex
}

// completionNLL computes the token-mean negative log-likelihood of the
// examples' completions with the rollout LM, one row at a time through
// Forward and a float64 log-softmax written here, independently of the
// training graph and of model.Policy.Scorer.
func completionNLL(t *testing.T, lm *model.LM, examples []rl.Example) float64 {
	t.Helper()
	V := lm.Signature().Vocab
	sum, n := 0.0, 0
	for _, e := range examples {
		ids := make([]int64, 0, len(e.Prompt)+len(e.Completion))
		for _, id := range append(append([]int32{}, e.Prompt...), e.Completion...) {
			ids = append(ids, int64(id))
		}
		logits := modeltest.SequenceLogits(t, lm, ids)
		for j, tok := range e.Completion {
			row := logits[(len(e.Prompt)-1+j)*V : (len(e.Prompt)+j)*V]
			maxv := math.Inf(-1)
			for _, v := range row {
				maxv = math.Max(maxv, float64(v))
			}
			z := 0.0
			for _, v := range row {
				z += math.Exp(float64(v) - maxv)
			}
			sum -= float64(row[tok]) - maxv - math.Log(z)
			n++
		}
	}
	return sum / float64(n)
}

// TestSFTOverfits trains the tiny Qwen3 (random init, seed 21) on 8 fixed
// random sequences with rl.SFTStep (AdamW defaults, peak lr 1e-2 after 5
// warmup steps, global-norm clip 1, micro-batches of at most 64 positions
// so accumulation is exercised) and requires the token-mean cross-entropy
// of the completions to fall below 0.05 nats within maxSteps. At the start
// it is near log(100) = 4.6 (uniform over the vocabulary); the figures the
// steps report are checked against completionNLL, computed through the
// rollout graph, before the first and after the last update. maxSteps is
// about 3x the 19 steps this needed when written (see the log line), so a
// slower-converging regression fails rather than slipping through.
func TestSFTOverfits(t *testing.T) {
	const (
		target     = 0.05
		maxSteps   = 60
		microBatch = 64
	)
	p := openTinyPolicy(t, 21)
	vocab := p.LM.Signature().Vocab
	examples := fixedExamples(rand.New(rand.NewPCG(21, 1)), 8, vocab)

	opt, err := optim.NewAdamW(optim.DefaultConfig(), p.Weights)
	require.NoError(t, err)
	sched := optim.Schedule{PeakLR: 1e-2, WarmupSteps: 5}
	require.NoError(t, sched.Validate())

	start := time.Now()
	initial := completionNLL(t, sftScorer(t, p), examples)
	require.InDelta(t, math.Log(float64(vocab)), initial, 1.5, "a random init is near uniform")
	var first, last rl.SFTMetrics
	steps := 0
	for steps < maxSteps {
		m, err := rl.SFTStep(context.Background(), p, opt, sched, examples, microBatch, 1.0)
		require.NoError(t, err)
		steps++
		if steps == 1 {
			first = m
		}
		last = m
		// The graph's loss with advantage 1 and detached old log-probs is
		// -mean(ratio) = -1 exactly at ratio 1.
		require.InDelta(t, -1, m.PGLoss, 1e-5, "step %d: policy-gradient loss", steps)
		if m.Loss < target {
			break
		}
	}
	final := completionNLL(t, sftScorer(t, p), examples)
	t.Logf("cross-entropy %.4f -> %.4f (%.4f after the last update) in %d steps, %.1fs; last step %.0f positions/s",
		first.Loss, last.Loss, final, steps, time.Since(start).Seconds(), last.TokensPerSecond)

	// The first step's loss is the untouched model's NLL (float32 logits in
	// both, summed in different orders).
	require.InDelta(t, initial, first.Loss, 1e-4, "step 1's cross-entropy = NLL of the initial weights")
	require.Less(t, last.Loss, target, "cross-entropy after %d steps", steps)
	// last.Loss is measured before the last update; the update must not
	// undo it.
	require.Less(t, final, target, "cross-entropy after the last update")
	require.Positive(t, last.LossTokens)
}

// sftScorer returns p's full-sequence LM.
func sftScorer(t testing.TB, p *model.Policy) *model.LM {
	t.Helper()
	lm, err := p.Scorer()
	if err != nil {
		t.Fatal(err)
	}
	return lm
}
