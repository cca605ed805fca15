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
	"github.com/spiral-rl/spiral/model/lmgraph"
	"github.com/spiral-rl/spiral/model/modeltest"
	"github.com/spiral-rl/spiral/model/params"
	"github.com/spiral-rl/spiral/model/qwen3"
	"github.com/spiral-rl/spiral/rl"
)

// testLoRA is the LoRA of the tests: rank 3, scale 2, every projection.
var testLoRA = lmgraph.LoRA{Rank: 3, Alpha: 6, Targets: lmgraph.LoRATargets}

// lowRankGrads returns s G B^T and s A^T G, the gradients of A [in, r]
// and B [r, out] of y = x (W + s A B) given G, the gradient of the merged
// [in, out] weight (computed in float64).
func lowRankGrads(g, a, b []float32, in, r, out int, s float64) (ga, gb []float32) {
	ga, gb = make([]float32, in*r), make([]float32, r*out)
	for i := range in {
		for k := range r {
			var sa float64
			for j := range out {
				sa += float64(g[i*out+j]) * float64(b[k*out+j])
			}
			ga[i*r+k] = float32(s * sa)
		}
	}
	for k := range r {
		for j := range out {
			var sum float64
			for i := range in {
				sum += float64(a[i*r+k]) * float64(g[i*out+j])
			}
			gb[k*out+j] = float32(s * sum)
		}
	}
	return ga, gb
}

// TestLoRAMatchesMergedModel checks the LoRA graphs against the merged
// model on spiral's tiny Qwen3, PyTorch's TorchScript exports (HF
// fixture, optimum) and its dynamo export: the trained parameters are the adapters only, the
// base frozen; with B = 0 the logits are the base model's; with random
// A and B the logits equal those of the source with W + s A B exported
// into it (MergeLoRA, Export), and the adapters' gradients equal s G B^T
// and s A^T G, where G is the full fine-tune's gradient of each merged
// weight on the same batch, so the executor's LoRA gradient is checked
// against the full-model gradient that TestExecutorMatchesWholeGraph
// checks against the whole training graph.
func TestLoRAMatchesMergedModel(t *testing.T) {
	rt := modeltest.Runtime(t)
	tinyDir := t.TempDir()
	require.NoError(t, qwen3.WriteDir(tinyDir, qwen3.Tiny(), 3))
	sources := map[string]string{
		"tiny":    filepath.Join(tinyDir, "model.onnx"),
		"hf":      filepath.Join(hfFixtureDir, "model.onnx"),
		"optimum": filepath.Join("testdata", "optimumqwen3", "model.onnx"),
		"dynamo":  filepath.Join("testdata", "dynamoqwen3", "model.onnx"),
	}
	for name, src := range sources {
		t.Run(name, func(t *testing.T) {
			p, err := model.OpenPolicy(context.Background(), rt, src, t.TempDir(), model.PolicyOptions{Train: true, Seed: 4,
				Artifacts: model.ArtifactOptions{LoRA: testLoRA}})
			require.NoError(t, err)
			t.Cleanup(func() { require.NoError(t, p.Close()) })
			man := p.Artifacts.Manifest
			require.NotNil(t, man.LoRA)
			layers := man.Layers
			require.Len(t, man.LoRA.Adapters, 7*layers, "one adapter per projection and layer")
			require.Equal(t, 2*len(man.LoRA.Adapters), p.Weights.Len(), "only the factors are trained")
			for _, a := range man.LoRA.Adapters {
				_, ok := p.Frozen.Get(a.Base)
				require.True(t, ok, "base %s frozen", a.Base)
				tb, _ := p.Weights.Get(a.B)
				for _, v := range tb.Data {
					require.Zero(t, v, "B starts at zero")
				}
			}

			base, err := model.OpenLM(rt, src, model.LMOptions{})
			require.NoError(t, err)
			baseLogits, mask := forwardLogits(t, base)
			require.NoError(t, base.Close())
			vocab := p.LM.Signature().Vocab
			start, _ := forwardLogits(t, scorerOf(t, p))
			require.LessOrEqual(t, maxAbsDiff32(start, baseLogits, mask, vocab), 1e-5, "B = 0: the base model")

			r := rand.New(rand.NewPCG(11, 12))
			for _, a := range man.LoRA.Adapters {
				tb, _ := p.Weights.Get(a.B)
				for i := range tb.Data {
					tb.Data[i] = float32(0.2 * r.NormFloat64())
				}
			}
			merged, err := model.MergeLoRA(src, testLoRA, p.Weights)
			require.NoError(t, err)
			requireHFMergedStream(t, src, merged, p.Weights)
			dir := t.TempDir()
			out := filepath.Join(dir, "model.onnx")
			require.NoError(t, model.Export(context.Background(), src, man.Ties, out, false, merged))
			requireONNXMergedStream(t, src, out, p.Weights)
			cfg, err := os.ReadFile(filepath.Join(filepath.Dir(src), "config.json"))
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(filepath.Join(dir, "config.json"), cfg, 0o644))

			mlm, err := model.OpenLM(rt, out, model.LMOptions{})
			require.NoError(t, err)
			mergedLogits, _ := forwardLogits(t, mlm)
			require.NoError(t, mlm.Close())
			adapted, _ := forwardLogits(t, scorerOf(t, p))
			moved := maxAbsDiff32(adapted, baseLogits, mask, vocab)
			diff := maxAbsDiff32(adapted, mergedLogits, mask, vocab)
			t.Logf("LoRA vs merged logits: max |diff| %.3g (the adapters moved them by %.3g)", diff, moved)
			require.Greater(t, moved, 1e-2, "the adapters must change the logits")
			require.LessOrEqual(t, diff, 1e-5)

			full, err := model.OpenPolicy(context.Background(), rt, out, filepath.Join(dir, "artifacts"), model.PolicyOptions{Train: true})
			require.NoError(t, err)
			t.Cleanup(func() { require.NoError(t, full.Close()) })
			samples := randomSamples(rand.New(rand.NewPCG(7, 7)), 4, vocab)
			bs, _, err := rl.MicroBatches(samples, 0, 0.2, 0.28)
			require.NoError(t, err)
			ctx := context.Background()
			var lr, fr model.TrainResult
			lg := p.Weights.NewGrads()
			require.NoError(t, p.Train.Accumulate(ctx, bs[0], 0.7, lg, &lr))
			fg := full.Weights.NewGrads()
			require.NoError(t, full.Train.Accumulate(ctx, bs[0], 0.7, fg, &fr))
			require.InDelta(t, fr.Loss, lr.Loss, 1e-5*math.Max(1, math.Abs(float64(fr.Loss))))
			for _, a := range man.LoRA.Adapters {
				g, ok := fg.Get(a.Base)
				require.True(t, ok, "full fine-tune trains %s", a.Base)
				ta, _ := p.Weights.Get(a.A)
				tb, _ := p.Weights.Get(a.B)
				wantA, wantB := lowRankGrads(g.Data, ta.Data, tb.Data, int(a.In), testLoRA.Rank, int(a.Out), testLoRA.Scale())
				gotA, _ := lg.Get(a.A)
				gotB, _ := lg.Get(a.B)
				require.Less(t, relErr(gotA.Data, wantA), 1e-4, "gradient of %s", a.A)
				require.Less(t, relErr(gotB.Data, wantB), 1e-4, "gradient of %s", a.B)
			}
		})
	}
}

// requireONNXMergedStream checks that ExportTrained, which merges each
// adapter into its base weight as it writes it, writes the file that the
// export of the merged weights wrote to want, inline and with external
// data.
func requireONNXMergedStream(t *testing.T, src, want string, adapters *params.Store) {
	t.Helper()
	got := filepath.Join(t.TempDir(), "model.onnx")
	tensors, parameters, err := model.ExportTrained(context.Background(), src, testLoRA, adapters, got, false, nil)
	require.NoError(t, err)
	// It counts the base weights it wrote merged, not the adapters (A
	// and B of each), which the graph lacks.
	merged0, err := model.MergeLoRA(src, testLoRA, adapters)
	require.NoError(t, err)
	require.Equal(t, adapters.Len()/2, tensors)
	require.Equal(t, merged0.Len(), tensors)
	require.Equal(t, merged0.NumParams(), parameters)
	a, err := os.ReadFile(want)
	require.NoError(t, err)
	b, err := os.ReadFile(got)
	require.NoError(t, err)
	require.Equal(t, a, b, "merged as written = merged first")

	ties, err := model.Ties(src)
	require.NoError(t, err)
	merged, err := model.MergeLoRA(src, testLoRA, adapters)
	require.NoError(t, err)
	ext, extGot := filepath.Join(t.TempDir(), "model.onnx"), filepath.Join(t.TempDir(), "model.onnx")
	require.NoError(t, model.Export(context.Background(), src, ties, ext, true, merged))
	_, _, err = model.ExportTrained(context.Background(), src, testLoRA, adapters, extGot, true, nil)
	require.NoError(t, err)
	for _, suffix := range []string{"", "_data"} {
		a, err := os.ReadFile(ext + suffix)
		require.NoError(t, err)
		b, err := os.ReadFile(extGot + suffix)
		require.NoError(t, err)
		require.Equal(t, a, b, "external data: merged as written = merged first (%s)", "model.onnx"+suffix)
	}
}

// requireHFMergedStream checks that the Hugging Face export of LoRA
// adapters, merged as each base weight is read, writes the file the
// export of the merged weights (MergeLoRA's store) writes.
func requireHFMergedStream(t *testing.T, src string, merged, adapters *params.Store) {
	t.Helper()
	want, got := t.TempDir(), t.TempDir()
	_, err := model.ExportHF(context.Background(), src, "", want, merged, lmgraph.LoRA{}, nil, false)
	require.NoError(t, err)
	_, err = model.ExportHF(context.Background(), src, "", got, adapters, testLoRA, nil, false)
	require.NoError(t, err)
	a, err := os.ReadFile(filepath.Join(want, model.HFWeightsFile))
	require.NoError(t, err)
	b, err := os.ReadFile(filepath.Join(got, model.HFWeightsFile))
	require.NoError(t, err)
	require.Equal(t, a, b, "merged on read = merged first")
}
