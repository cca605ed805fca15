package model_test

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/spiral-rl/spiral/model"
	"github.com/spiral-rl/spiral/model/modeltest"
	"github.com/spiral-rl/spiral/model/onnx"
	"github.com/spiral-rl/spiral/model/optim"
	"github.com/spiral-rl/spiral/model/params"
)

// optimumFixture is parameters.json of testdata/optimumqwen3: a left-padded
// batch, its loss mask and advantages, and PyTorch's loss.
type optimumFixture struct {
	InputIDs      [][]int64   `json:"input_ids"`
	AttentionMask [][]int64   `json:"attention_mask"`
	PositionIDs   [][]int64   `json:"position_ids"`
	LossMask      [][]float64 `json:"loss_mask"`
	Advantages    [][]float64 `json:"advantages"`
	Loss          float64     `json:"loss"`
}

// TestOptimumGradientsMatchPyTorch trains on a left-padded batch through an
// optimum export, whose attention guards fully masked rows with
// Where(IsNaN(softmax), 0, softmax): the gradient of the ratio-1
// policy-gradient loss must be finite and equal PyTorch autograd's
// (gradients.safetensors, made by make_fixture.py from transformers' own
// Qwen3). Tolerance: 1e-4 relative to each tensor's largest entry, both
// sides being float32 computations of the same function.
func TestOptimumGradientsMatchPyTorch(t *testing.T) {
	rt := modeltest.Runtime(t)
	dir := filepath.Join("testdata", "optimumqwen3")
	p, err := model.OpenPolicy(context.Background(), rt, filepath.Join(dir, "model.onnx"), t.TempDir(), model.PolicyOptions{Train: true})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, p.Close()) })
	var fx optimumFixture
	b, err := os.ReadFile(filepath.Join(dir, "parameters.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &fx))
	B, T := len(fx.InputIDs), len(fx.InputIDs[0])
	tb := model.TrainBatch{Batch: B, Seq: T, ClipLow: 0.2, ClipHigh: 0.28}
	for r := range B {
		tb.InputIDs = append(tb.InputIDs, fx.InputIDs[r]...)
		tb.AttentionMask = append(tb.AttentionMask, fx.AttentionMask[r]...)
		tb.PositionIDs = append(tb.PositionIDs, fx.PositionIDs[r]...)
		for c := range T {
			tb.LossMask = append(tb.LossMask, float32(fx.LossMask[r][c]))
			tb.Advantages = append(tb.Advantages, float32(fx.Advantages[r][c]))
		}
	}
	ctx := context.Background()
	var res model.TrainResult
	// Ratio 1: detached old log-probabilities.
	require.NoError(t, p.Train.Accumulate(ctx, tb, 1, p.Grads, &res))
	// PyTorch's loss is -sum(A m logp) / sum(m): the same from our logprobs.
	num, den := 0.0, 0.0
	for i, m := range tb.LossMask {
		num -= float64(m * tb.Advantages[i] * res.LogProbs[i])
		den += float64(m)
	}
	require.InDelta(t, fx.Loss, num/den, 1e-5)
	raw, err := os.ReadFile(filepath.Join(dir, "gradients.safetensors"))
	require.NoError(t, err)
	want, err := params.Decode(raw)
	require.NoError(t, err)
	require.Len(t, want.Tensors, p.Grads.Len(), "one PyTorch gradient per trained parameter")
	for _, w := range want.Tensors {
		g, ok := p.Grads.Get(w.Name)
		require.True(t, ok, "no gradient for %s", w.Name)
		ref := make([]float32, len(w.Data)/4)
		for i := range ref {
			ref[i] = math.Float32frombits(binary.LittleEndian.Uint32(w.Data[4*i:]))
		}
		for i, v := range g.Data {
			require.False(t, math.IsNaN(float64(v)) || math.IsInf(float64(v), 0), "%s[%d] = %v", w.Name, i, v)
		}
		require.Less(t, maxRelDiff(g.Data, ref), 1e-4, "gradient of %s", w.Name)
	}
}

// TestTrainingTouchesOnlyParameters trains the dynamo export (which keeps
// rotary_emb.inv_freq as an initializer) with a large learning rate and
// exports it: every initializer that holds no transformers named parameter
// (parameters.json, made from the source model, not from spiral's
// classification) comes back bit-identical, every one that does has
// changed.
func TestTrainingTouchesOnlyParameters(t *testing.T) {
	rt := modeltest.Runtime(t)
	src := filepath.Join("testdata", "dynamoqwen3", "model.onnx")
	p, err := model.OpenPolicy(context.Background(), rt, src, t.TempDir(), model.PolicyOptions{Train: true})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, p.Close()) })
	opt, err := optim.NewAdamW(optim.DefaultConfig(), p.Weights)
	require.NoError(t, err)
	B, T, ids, mask, pos := paddedBatch()
	_ = pos
	tb := model.TrainBatch{Batch: B, Seq: T, ClipLow: 0.2, ClipHigh: 0.28, InputIDs: ids, AttentionMask: mask,
		PositionIDs: make([]int64, B*T), LossMask: make([]float32, B*T), Advantages: make([]float32, B*T), OldLogProbs: make([]float32, B*T)}
	for r := range B { // right-padded view of the same rows: positions from 0
		n := int64(0)
		for c := range T {
			if mask[r*T+c] == 1 {
				tb.PositionIDs[r*T+c] = n
				n++
			}
		}
	}
	for i := range tb.LossMask {
		if mask[i] == 1 && i%T < T-1 && mask[i+1] == 1 {
			tb.LossMask[i], tb.Advantages[i] = 1, 1
		}
	}
	var res model.TrainResult
	for range 3 {
		p.Grads.Zero()
		require.NoError(t, p.Train.Accumulate(context.Background(), tb, 1, p.Grads, &res))
		require.NoError(t, opt.Step(p.Weights, p.Grads, 1e-2))
	}
	out := filepath.Join(t.TempDir(), "model.onnx")
	require.NoError(t, model.Export(context.Background(), src, p.Artifacts.Manifest.Ties, out, false, p.Weights, p.Frozen))
	before, err := onnx.Load(src)
	require.NoError(t, err)
	after, err := onnx.Load(out)
	require.NoError(t, err)
	var fx struct {
		Parameters []struct {
			Initializers []string `json:"initializers"`
			Transposed   []string `json:"transposed_initializers"`
		} `json:"parameters"`
	}
	raw, err := os.ReadFile(filepath.Join(filepath.Dir(src), "parameters.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(raw, &fx))
	trained := map[string]bool{}
	for _, np := range fx.Parameters {
		for _, n := range append(np.Initializers, np.Transposed...) {
			trained[n] = true
		}
	}
	changed := 0
	for _, t0 := range before.Graph().GetInitializer() {
		t1 := after.Initializer(t0.GetName())
		require.NotNil(t, t1, t0.GetName())
		a, err := onnx.RawBytes(t0)
		require.NoError(t, err)
		b, err := onnx.RawBytes(t1)
		require.NoError(t, err)
		if trained[t0.GetName()] {
			if string(a) != string(b) {
				changed++
			}
			continue
		}
		require.Equal(t, a, b, "non-parameter initializer %q changed", t0.GetName())
	}
	require.Equal(t, len(trained), changed, "every initializer holding a parameter (the tied copy too) moves")
}
