package model_test

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/spiral-rl/spiral/model"
	"github.com/spiral-rl/spiral/model/modeltest"
)

// TestKeptLayersMatchRecompute: a backward pass that reads the layers'
// values kept from the forward pass gives the gradient, loss and
// per-token outputs of one that recomputes every layer, bit for bit,
// whether it keeps every layer or only those that fit a smaller
// ExecutorOptions.KeptBytes, on every export the executor is tested on,
// on the host and on the device layer's twin, on separate and packed
// rows.
func TestKeptLayersMatchRecompute(t *testing.T) {
	rt := modeltest.Runtime(t)
	for name, tc := range trainCases(t) {
		for _, resident := range []bool{false, true} {
			t.Run(name+map[bool]string{false: "/host", true: "/resident"}[resident], func(t *testing.T) {
				dir := t.TempDir()
				type result struct {
					grads      []float32
					res        model.TrainResult
					recomputed int
					kept       int64
				}
				run := func(kept int64, b model.TrainBatch) result {
					p, err := model.OpenPolicy(context.Background(), rt, tc.src, dir, model.PolicyOptions{Train: true, Resident: resident,
						Executor: model.ExecutorOptions{KeptBytes: kept}, Artifacts: model.ArtifactOptions{LoRA: tc.lora}, Seed: 3})
					require.NoError(t, err)
					defer p.Close()
					g := p.Weights.NewGrads()
					var r result
					require.NoError(t, p.Train.Accumulate(context.Background(), b, 1, g, &r.res))
					r.grads = g.Flat()
					r.recomputed, r.kept = p.Train.Recomputation()
					return r
				}
				probe, err := model.OpenPolicy(context.Background(), rt, tc.src, dir, model.PolicyOptions{Train: true, Artifacts: model.ArtifactOptions{LoRA: tc.lora}, Seed: 3})
				require.NoError(t, err)
				vocab, canPack := probe.LM.Signature().Vocab, probe.Train.PackedRows() == nil
				require.NoError(t, probe.Close())
				r := rand.New(rand.NewPCG(8, 2))
				draw := func(n int) []int64 { return randomIDs64(r, n, vocab) }
				comps := [][]int64{draw(5), draw(3), draw(6)}
				old := [][]float32{make([]float32, 5), make([]float32, 3), make([]float32, 6)}
				rows, packed := sharedPromptRows(draw(7), comps, []float32{0.9, -1.1, 0.3}, old)
				batches := []model.TrainBatch{rows, packed}
				if !canPack {
					batches = batches[:1]
				}
				for _, b := range batches {
					all := run(-1, b)
					require.Positive(t, all.recomputed, "every layer recomputed")
					require.Zero(t, all.kept)
					none := run(0, b) // the default keeps them all
					require.Zero(t, none.recomputed)
					require.Positive(t, none.kept)
					// A budget of one and a half layers keeps the first.
					perLayer := none.kept / int64(all.recomputed)
					some := run(perLayer+perLayer/2, b)
					require.Equal(t, all.recomputed-1, some.recomputed)
					require.Equal(t, perLayer, some.kept)
					for _, r := range []result{none, some} {
						require.Equal(t, all.grads, r.grads)
						require.Equal(t, all.res, r.res)
					}
				}
			})
		}
	}
}
