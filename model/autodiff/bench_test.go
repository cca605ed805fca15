package autodiff_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// BenchmarkTrainingStep measures one training-graph run (forward, loss and
// backward; no optimizer) of the one-layer test LM in float32 with 32-token
// sequences, reporting tokens/s. Run:
//
//	source ~/.cache/spiral/env.sh && go test ./model/autodiff -run '^$' -bench TrainingStep
func BenchmarkTrainingStep(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	fwd := tinyLM(r)
	tg, err := TrainingGraph(fwd, LMOptions{})
	if err != nil {
		b.Fatal(err)
	}
	outs := []string{OutputLoss}
	for _, w := range tg.WeightNames() {
		outs = append(outs, GradName(w))
	}
	s, err := newSession(b, tg.Graph, 23, outs)
	if err != nil {
		b.Fatal(err)
	}
	const T = 32
	for _, B := range []int{1, 4, 16} {
		b.Run(fmt.Sprintf("batch=%d", B), func(b *testing.B) {
			feeds := newLMBatch(r, B, T, lmV, 3).feeds(fwd.Initializer, false)
			for b.Loop() {
				if _, err := s.run(feeds); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(B*T*b.N)/b.Elapsed().Seconds(), "tokens/s")
		})
	}
}
