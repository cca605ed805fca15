package model_test

import (
	"context"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/spiral-rl/spiral/model"
	"github.com/spiral-rl/spiral/model/modeltest"
	"github.com/spiral-rl/spiral/model/onnx"
	"github.com/spiral-rl/spiral/model/optim"
	"github.com/spiral-rl/spiral/rl"
)

// forwardLogits runs lm once over the left-padded paddedBatch on an empty
// cache and returns the logits [B, T, vocab] and the attention mask.
func forwardLogits(t *testing.T, lm *model.LM) ([]float32, []int64) {
	t.Helper()
	B, T, ids, mask, pos := paddedBatch()
	logits, err := lm.Forward(context.Background(), model.Step{Batch: B, Seq: T, InputIDs: ids, AttentionMask: mask, PositionIDs: pos},
		lm.NewKVCache(B, T), nil)
	require.NoError(t, err)
	return logits, mask
}

// maxAbsDiff32 returns max |a-b| over the positions whose mask is 1.
func maxAbsDiff32(a, b []float32, mask []int64, vocab int) float64 {
	worst := 0.0
	for p, m := range mask {
		if m == 0 {
			continue // padded queries attend to nothing real; see maxAbsDiffMasked
		}
		for v := 0; v < vocab; v++ {
			worst = math.Max(worst, math.Abs(float64(a[p*vocab+v])-float64(b[p*vocab+v])))
		}
	}
	return worst
}

// TestExport trains the tiny Qwen3 for two supervised steps (AdamW at lr
// 1e-2, so most weights move), exports the store into the source graph,
// and checks that ONNX Runtime on the exported file, with no weights fed,
// gives the logits the rollout LM computes from the store: the same
// network and the same float32 weights, once as initializers and once as
// graph inputs. The bound 1e-6 allows ONNX Runtime to pre-pack constant
// weights for other kernels (a different summation order) on logits of
// magnitude < 10; the measured difference is logged (0, bit-identical,
// when written, on ONNX Runtime 1.30 CPU). The exported logits must also
// differ from the untrained source's by far more than that, so a no-op
// export fails. With external data forced, the large weights must sit in
// the side file (the .onnx itself small) and the logits still match.
func TestExport(t *testing.T) {
	p, src := openTrainPolicy(t, 61)
	rt := modeltest.Runtime(t)
	vocab := p.LM.Signature().Vocab

	examples := make([]rl.Example, 4)
	r := rand.New(rand.NewPCG(61, 1))
	for i := range examples {
		for range 4 {
			examples[i].Prompt = append(examples[i].Prompt, int32(1+r.IntN(vocab-1)))
			examples[i].Completion = append(examples[i].Completion, int32(1+r.IntN(vocab-1)))
		}
	}
	opt, err := optim.NewAdamW(optim.DefaultConfig(), p.Weights)
	require.NoError(t, err)
	before := append([]float32(nil), p.Weights.Flat()...)
	for range 2 {
		_, err := rl.SFTStep(context.Background(), p, opt, optim.Schedule{PeakLR: 1e-2}, examples, 0, 1.0)
		require.NoError(t, err)
	}
	moved := 0
	for i, w := range p.Weights.Flat() {
		if w != before[i] {
			moved++
		}
	}
	require.Greater(t, moved, len(before)/2, "training must change the weights")

	want, mask := forwardLogits(t, scorerOf(t, p))
	orig, err := model.OpenLM(rt, src, model.LMOptions{})
	require.NoError(t, err)
	untrained, _ := forwardLogits(t, orig)
	require.NoError(t, orig.Close())
	moveBy := maxAbsDiff32(untrained, want, mask, vocab)
	require.Greater(t, moveBy, 1e-3, "training must change the logits")

	for _, tc := range []struct {
		name     string
		external bool
		over     bool // written over an export with external data
	}{
		{"inline", false, false},
		{"external data", true, false},
		// The replaced model's data file goes with it.
		{"inline over external data", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "trained.onnx")
			if tc.over {
				require.NoError(t, model.Export(context.Background(), src, p.Artifacts.Manifest.Ties, out, true, p.Weights, p.Frozen))
				require.FileExists(t, out+"_data")
			}
			require.NoError(t, model.Export(context.Background(), src, p.Artifacts.Manifest.Ties, out, tc.external, p.Weights, p.Frozen))
			side := out + "_data"
			st, err := os.Stat(out)
			require.NoError(t, err)
			sideSt, sideErr := os.Stat(side)
			// Tensors under onnx.DefaultSizeThreshold bytes (here the norm
			// gains) stay inline, as onnx.save_model keeps them.
			weightBytes, bigBytes := int64(4*p.Weights.NumParams()), int64(0)
			for i := range p.Weights.Len() {
				if n := int64(4 * len(p.Weights.At(i).Data)); n >= onnx.DefaultSizeThreshold {
					bigBytes += n
				}
			}
			if tc.external {
				require.NoError(t, sideErr, "external data file")
				require.GreaterOrEqual(t, sideSt.Size(), bigBytes, "side file holds every large weight")
				require.Less(t, st.Size(), weightBytes/4, "graph file without the weights")
			} else {
				require.True(t, os.IsNotExist(sideErr), "no side file without external data: %v", sideErr)
				require.Greater(t, st.Size(), weightBytes, "weights inline")
			}

			// Interrupted (its context ended), an export writes nothing
			// over the model it was to replace, nor a temporary file.
			ended, cancel := context.WithCancel(context.Background())
			cancel()
			before, err := os.ReadDir(filepath.Dir(out))
			require.NoError(t, err)
			require.ErrorIs(t, model.Export(ended, src, p.Artifacts.Manifest.Ties, out, tc.external, p.Weights, p.Frozen), context.Canceled)
			after, err := os.ReadDir(filepath.Dir(out))
			require.NoError(t, err)
			require.Equal(t, before, after)

			lm, err := model.OpenLM(rt, out, model.LMOptions{})
			require.NoError(t, err)
			t.Cleanup(func() { require.NoError(t, lm.Close()) })
			require.Empty(t, lm.Signature().Weights, "the exported graph has its weights inside")
			got, _ := forwardLogits(t, lm)
			diff := maxAbsDiff32(got, want, mask, vocab)
			t.Logf("exported vs store logits: max |diff| %.3g (training moved them by %.3g)", diff, moveBy)
			require.LessOrEqual(t, diff, 1e-6)
		})
	}
}
