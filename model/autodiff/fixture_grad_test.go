package autodiff_test

import (
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/spiral-rl/spiral/model/onnx"
)

// hfFixture is the PyTorch export of a tiny random-weight transformers
// Qwen3ForCausalLM (see model/lm_fixture_test.go and make_fixture.py there):
// graph built by the TorchScript exporter rather than by model/qwen3, so it
// carries the ops and patterns a real optimum export has (Expand/Where mask
// building, Shape arithmetic, tied embeddings, head_dim != hidden/heads).
var hfFixture = filepath.Join("..", "testdata", "hfqwen3", "model.onnx")

// TestHFFixtureGradients checks the training graph derived from the
// PyTorch-exported fixture (converted to float64 by ConvertFloat) against
// central finite differences of the loss graph on 3 sampled coordinates of
// every weight tensor, in two regimes: REINFORCE (old_logprobs = the
// current logprobs, every ratio 1) and clipped PPO (old_logprobs shifted by
// N(0, 0.5^2), so some ratios leave [1-0.2, 1+0.28]). Row 1 of the batch is
// left-padded by 2 tokens, as batched prompts are. Bound: relative error
// 1e-6, step 1e-5, as in TestRules and TestQwen3Gradients (float64 central
// differences have truncation error O(h^2) ~ 1e-10 and rounding
// error ~ eps |L| / h ~ 1e-11 here).
func TestHFFixtureGradients(t *testing.T) {
	m, err := onnx.Load(hfFixture)
	if err != nil {
		t.Fatal(err)
	}
	fwd, err := ConvertFloat(m.Graph(), true)
	if err != nil {
		t.Fatal(err)
	}
	lg, err := LossGraph(fwd, LMOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tg, err := TrainingGraph(fwd, LMOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Every float initializer with more than one element is a weight: the
	// embedding, 2 layers x (q, k, v, o, q_norm, k_norm, gate, up, down and
	// 2 RMSNorm gains), the final norm, and the LM head. config.json ties
	// the LM head to the embedding, but the TorchScript exporter stores the
	// head as its own transposed copy (onnx::MatMul_779, [64, 128]), so the
	// training graph sees 1 + 2*11 + 1 + 1 = 25 independent tensors.
	if got, want := len(tg.WeightNames()), 25; got != want {
		t.Errorf("%d trainable weights %v, want %d", got, tg.WeightNames(), want)
	}
	opset := m.Opset("")
	const vocab = 128 // config.json vocab_size
	r := rand.New(rand.NewPCG(4, 4))
	batch := newLMBatch(r, 2, 6, vocab, 2)
	feeds := batch.feeds(fwd.Initializer, true)

	// Current logprobs for the REINFORCE regime.
	s, err := newSession(t, tg.Graph, opset, []string{OutputLogprobs})
	if err != nil {
		t.Fatal(err)
	}
	out, err := s.run(feeds)
	if err != nil {
		t.Fatal(err)
	}
	cur := out[OutputLogprobs].v

	pick := func(name string, n int) []int {
		return rand.New(rand.NewPCG(uint64(n), uint64(len(name)))).Perm(n)[:min(3, n)]
	}
	for _, tc := range []struct {
		name  string
		shift float64 // std of the N(0, shift^2) offset of old_logprobs
	}{
		{"reinforce", 0},
		{"clipped", 0.5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fd := map[string]feed{}
			for k, v := range feeds {
				fd[k] = v
			}
			old := fd[InputOldLogprobs]
			old.f64 = make([]float64, len(cur))
			rr := rand.New(rand.NewPCG(5, 5))
			for i, v := range cur {
				old.f64[i] = v + tc.shift*rr.NormFloat64()
			}
			fd[InputOldLogprobs] = old
			rel := gradCheckGraph(t, tg.Graph, lg.Graph, opset, fd, OutputLoss, tg.WeightNames(), 1e-5, 1e-6, pick)
			worst := 0.0
			for _, w := range tg.WeightNames() {
				worst = max(worst, rel[w])
				if rel[w] > 1e-6 {
					t.Errorf("d loss / d %s: relative error %.3g > 1e-6", w, rel[w])
				}
			}
			t.Logf("largest relative error over %d weight tensors: %.3g", len(rel), worst)
		})
	}
}
