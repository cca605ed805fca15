package autodiff_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/spiral-rl/spiral/model/qwen3"
)

// TestQwen3Gradients checks the training graph of the tiny Qwen3 model
// (model/qwen3, converted to float64 by ConvertFloat) against central finite
// differences on 3 sampled coordinates of every weight tensor, in the
// clipped PPO regime (old_logprobs shifted by N(0, 0.5^2)). Bound: relative
// error 1e-6, step 1e-5, as in TestRules.
func TestQwen3Gradients(t *testing.T) {
	m, err := qwen3.Build(qwen3.Tiny(), 1)
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
	opset := m.Opset("")
	r := rand.New(rand.NewPCG(8, 8))
	batch := newLMBatch(r, 2, 6, qwen3.Tiny().Vocab, 2)
	for i := range batch.oldLogps {
		batch.oldLogps[i] = -4.6 + 0.5*r.NormFloat64()
	}
	feeds := batch.feeds(fwd.Initializer, true)
	pick := func(_ string, n int) []int {
		return rand.New(rand.NewPCG(uint64(n), 3)).Perm(n)[:min(3, n)]
	}
	rel := gradCheckGraph(t, tg.Graph, lg.Graph, opset, feeds, OutputLoss, tg.WeightNames(), 1e-5, 1e-6, pick)
	worst := 0.0
	for _, w := range tg.WeightNames() {
		worst = max(worst, rel[w])
		if rel[w] > 1e-6 {
			t.Errorf("d loss / d %s: relative error %.3g > 1e-6", w, rel[w])
		}
	}
	t.Logf("largest relative error over %d weight tensors: %.3g", len(rel), worst)
}

// BenchmarkQwen3TrainingStep measures one run of the tiny Qwen3 training
// graph (forward, loss, backward; float32, no optimizer) on 64-token
// sequences, reporting tokens/s. Run:
//
//	source ~/.cache/spiral/env.sh && go test ./model/autodiff -run '^$' -bench Qwen3TrainingStep
func BenchmarkQwen3TrainingStep(b *testing.B) {
	c := qwen3.Tiny()
	m, err := qwen3.Build(c, 1)
	if err != nil {
		b.Fatal(err)
	}
	tg, err := TrainingGraph(m.Graph(), LMOptions{})
	if err != nil {
		b.Fatal(err)
	}
	outs := []string{OutputLoss}
	for _, w := range tg.WeightNames() {
		outs = append(outs, GradName(w))
	}
	s, err := newSession(b, tg.Graph, m.Opset(""), outs)
	if err != nil {
		b.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 1))
	const T = 64
	for _, B := range []int{1, 4, 16} {
		b.Run(fmt.Sprintf("batch=%d", B), func(b *testing.B) {
			feeds := newLMBatch(r, B, T, c.Vocab, 3).feeds(m.Graph().Initializer, false)
			for b.Loop() {
				if _, err := s.run(feeds); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(B*T*b.N)/b.Elapsed().Seconds(), "tokens/s")
		})
	}
}
