package model_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/stretchr/testify/require"

	"github.com/spiral-rl/spiral/model"
	"github.com/spiral-rl/spiral/model/modeltest"
	"github.com/spiral-rl/spiral/model/onnx"
	"github.com/spiral-rl/spiral/model/onnx/onnxpb"
	"github.com/spiral-rl/spiral/model/qwen3"
	"github.com/spiral-rl/spiral/rl"
)

// executorSources are the exports the executor is checked on: the tiny
// Qwen3 spiral builds (with and without a position_ids input, untied, and
// with as many KV heads as query heads, whose attention repeats nothing),
// and PyTorch's TorchScript (HF, optimum) and dynamo
// exports of transformers' Qwen3, and the tiny model with a scaled head
// (the generic head-loss path).
func executorSources(t *testing.T) map[string]string {
	t.Helper()
	dir, nopos, untied, mha := t.TempDir(), t.TempDir(), t.TempDir(), t.TempDir()
	require.NoError(t, qwen3.WriteDir(dir, qwen3.Tiny(), 3))
	c := qwen3.Tiny()
	c.PositionsFromMask = true
	require.NoError(t, qwen3.WriteDir(nopos, c, 4))
	c = qwen3.Tiny()
	c.TiedEmbeddings = false
	require.NoError(t, qwen3.WriteDir(untied, c, 6))
	c = qwen3.Tiny()
	c.KVHeads = c.Heads
	require.NoError(t, qwen3.WriteDir(mha, c, 7))
	return map[string]string{
		"tiny-untied": filepath.Join(untied, "model.onnx"),
		"tiny-mha":    filepath.Join(mha, "model.onnx"),
		"tiny-scaled": scaledHeadModel(t),
		"tiny":        filepath.Join(dir, "model.onnx"),
		"tiny-nopos":  filepath.Join(nopos, "model.onnx"),
		"hf":          filepath.Join(hfFixtureDir, "model.onnx"),
		"optimum":     filepath.Join("testdata", "optimumqwen3", "model.onnx"),
		"dynamo":      filepath.Join("testdata", "dynamoqwen3", "model.onnx"),
	}
}

// scaledHeadModel writes the tiny Qwen3 with its logits halved after the
// LM head (as logit soft-capping or scaling heads do), which the table
// head does not cover: the executor then runs the generic head-loss graph.
func scaledHeadModel(t *testing.T) string {
	t.Helper()
	c := qwen3.Tiny()
	m, err := qwen3.Build(c, 5)
	require.NoError(t, err)
	g := m.Graph()
	for _, n := range g.GetNode() {
		for i, o := range n.GetOutput() {
			if o == qwen3.Logits {
				n.Output[i] = "logits_unscaled"
			}
		}
	}
	g.Initializer = append(g.Initializer, onnx.NewTensor("logit_scale", nil, []float32{0.5}))
	g.Node = append(g.Node, &onnxpb.NodeProto{OpType: proto.String("Mul"), Input: []string{"logits_unscaled", "logit_scale"}, Output: []string{qwen3.Logits}})
	dir := t.TempDir()
	path := filepath.Join(dir, "model.onnx")
	require.NoError(t, onnx.Save(path, m, onnx.SaveOptions{}))
	cfg, err := c.HFConfigJSON()
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "config.json"), cfg, 0o644))
	return path
}

// relErr returns max|a-b| / max|b|.
func relErr(a, b []float32) float64 {
	worst, scale := 0.0, 0.0
	for i := range b {
		worst = math.Max(worst, math.Abs(float64(a[i])-float64(b[i])))
		scale = math.Max(scale, math.Abs(float64(b[i])))
	}
	if scale == 0 {
		return worst
	}
	return worst / scale
}

// TestExecutorMatchesWholeGraph checks the layered executor against the
// whole training graph (autodiff.TrainingGraph in one ONNX Runtime call)
// on every export: the accumulated gradient (relative error <= 1e-5 of
// the largest entry, and per tensor <= 1e-4 of that tensor's largest),
// the loss and the log-probabilities and entropies at the loss
// positions. Each export runs with the default working-memory bounds
// (one attention call per head, one loss chunk, one MLP call per layer),
// with bounds so small that every attention call takes one query, every
// loss tile one position and one token of the vocabulary and every MLP
// call one position, and with bounds in between (blocks of a few
// queries; all loss positions against blocks of a dozen tokens; MLP
// chunks of a few positions, the last one short), so the blocking itself
// is what is compared. Both sides are
// float32 evaluations of one function summed in different orders.
func TestExecutorMatchesWholeGraph(t *testing.T) {
	rt := modeltest.Runtime(t)
	for name, src := range executorSources(t) {
		for _, opt := range []model.ExecutorOptions{{}, {AttentionBytes: 1, LossChunkBytes: 1, MLPBytes: 1}, {AttentionBytes: 4 << 10, LossChunkBytes: 4 << 10, MLPBytes: 30 << 10}} {
			t.Run(fmt.Sprintf("%s/attention=%d", name, opt.AttentionBytes), func(t *testing.T) {
				p, err := model.OpenPolicy(context.Background(), rt, src, t.TempDir(), model.PolicyOptions{Train: true, Executor: opt})
				require.NoError(t, err)
				t.Cleanup(func() { require.NoError(t, p.Close()) })
				wholeGrads := p.Weights.NewGrads()
				whole, err := model.OpenWholeGraph(rt, p, wholeGrads)
				require.NoError(t, err)
				t.Cleanup(func() { require.NoError(t, whole.Close()) })

				samples := randomSamples(rand.New(rand.NewPCG(7, 7)), 4, p.LM.Signature().Vocab)
				bs, _, err := rl.MicroBatches(samples, 0, 0.2, 0.28)
				require.NoError(t, err)
				b := bs[0]
				ctx := context.Background()
				const scale = 0.7
				compare := func(b model.TrainBatch, what string) {
					got, want := p.Weights.NewGrads(), p.Weights.NewGrads()
					var gr, wr model.TrainResult
					require.NoError(t, p.Train.Accumulate(ctx, b, scale, got, &gr))
					wb := b
					if wb.OldLogProbs == nil { // detached: the whole graph's own log-probabilities
						var first model.TrainResult
						wb.OldLogProbs = make([]float32, len(b.LossMask))
						require.NoError(t, whole.Run(ctx, wb, &first))
						copy(wb.OldLogProbs, first.LogProbs)
					}
					require.NoError(t, whole.Accumulate(ctx, wb, scale, want, &wr))
					require.Greater(t, want.Norm(), 0.0)
					rel := relErr(got.Flat(), want.Flat())
					t.Logf("%s: gradient relative error %.3g, loss %.7g vs %.7g", what, rel, gr.Loss, wr.Loss)
					require.Less(t, rel, 1e-5, "%s: gradient", what)
					for i := range want.Len() {
						require.Less(t, relErr(got.At(i).Data, want.At(i).Data), 1e-4, "%s: gradient of %s", what, want.At(i).Name)
					}
					require.InDelta(t, wr.Loss, gr.Loss, 1e-5*math.Max(1, math.Abs(float64(wr.Loss))), "%s: loss", what)
					for i, m := range b.LossMask {
						if m != 0 {
							require.InDelta(t, wr.LogProbs[i], gr.LogProbs[i], 1e-5, "%s: log-probability at %d", what, i)
							require.InDelta(t, wr.Entropy[i], gr.Entropy[i], 1e-5, "%s: entropy at %d", what, i)
						}
					}
				}
				compare(b, "clipped")
				b.OldLogProbs = nil
				compare(b, "detached")
			})
		}
	}
}

// TestExecutorAccumulates: two calls add up (the store is not
// overwritten), each scaled.
func TestExecutorAccumulates(t *testing.T) {
	p, _ := openTrainPolicy(t, 5)
	samples := randomSamples(rand.New(rand.NewPCG(5, 5)), 3, p.LM.Signature().Vocab)
	bs, _, err := rl.MicroBatches(samples, 0, 0.2, 0.28)
	require.NoError(t, err)
	ctx := context.Background()
	var res model.TrainResult
	once := p.Weights.NewGrads()
	require.NoError(t, p.Train.Accumulate(ctx, bs[0], 1, once, &res))
	twice := p.Weights.NewGrads()
	require.NoError(t, p.Train.Accumulate(ctx, bs[0], 0.25, twice, &res))
	require.NoError(t, p.Train.Accumulate(ctx, bs[0], 0.75, twice, &res))
	require.Less(t, relErr(twice.Flat(), once.Flat()), 1e-6)
}
