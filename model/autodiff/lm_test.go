package autodiff_test

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/spiral-rl/spiral/model/onnx/onnxpb"
	"google.golang.org/protobuf/proto"
)

// tinyLM sizes: vocab, hidden, query heads, KV heads, head dim, MLP width.
const (
	lmV, lmH, lmHeads, lmKV, lmHD, lmFF = 11, 8, 2, 1, 4, 16
)

// tinyLM builds a one-layer Qwen3-like causal LM in float32 with the optimum
// signature, written with the opset-23 fused ops (RMSNormalization,
// RotaryEmbedding, Attention with a KV cache and grouped KV heads), a SwiGLU
// MLP and an untied LM head. Weights are N(0, 0.3^2) from r.
func tinyLM(r *rand.Rand) *onnxpb.GraphProto {
	g := &onnxpb.GraphProto{Name: proto.String("tiny_lm")}
	w := func(name string, dims ...int64) {
		v := randn(r, numel(dims))
		for i := range v {
			v[i] *= 0.3
		}
		t := tensorFloat(tFloat, dims, v...)
		t.Name = proto.String(name)
		g.Initializer = append(g.Initializer, t)
	}
	ones := func(name string, n int64) {
		v := make([]float64, n)
		for i := range v {
			v[i] = 1 + 0.1*r.NormFloat64()
		}
		t := tensorFloat(tFloat, []int64{n}, v...)
		t.Name = proto.String(name)
		g.Initializer = append(g.Initializer, t)
	}
	w("embed", lmV, lmH)
	ones("ln1", lmH)
	w("wq", lmH, lmHeads*lmHD)
	w("wk", lmH, lmKV*lmHD)
	w("wv", lmH, lmKV*lmHD)
	w("wo", lmHeads*lmHD, lmH)
	ones("ln2", lmH)
	w("w1", lmH, lmFF)
	w("w3", lmH, lmFF)
	w("w2", lmFF, lmH)
	ones("lnf", lmH)
	w("lm_head", lmH, lmV)
	g.Input = []*onnxpb.ValueInfoProto{
		namedDims("input_ids", tInt64, "batch", "sequence"),
		namedDims("attention_mask", tInt64, "batch", "total"),
		namedDims("position_ids", tInt64, "batch", "sequence"),
		valueInfo("past_key_values.0.key", tFloat, []int64{-1, lmKV, -1, lmHD}, true),
		valueInfo("past_key_values.0.value", tFloat, []int64{-1, lmKV, -1, lmHD}, true),
	}
	invFreq := nd("Constant", nil, []string{"inv_freq"}, attrTensor("value", tensorFloat(tFloat, []int64{lmHD / 2}, 1, 0.01)))
	g.Node = []*onnxpb.NodeProto{
		invFreq,
		cI64("ax_last", -1), cI64("ax_mask", 1, 2),
		nd("Gather", []string{"embed", "input_ids"}, []string{"x"}),
		nd("RMSNormalization", []string{"x", "ln1"}, []string{"h"}, attrFloat("epsilon", 1e-6)),
		nd("MatMul", []string{"h", "wq"}, []string{"q"}),
		nd("MatMul", []string{"h", "wk"}, []string{"k"}),
		nd("MatMul", []string{"h", "wv"}, []string{"v"}),
		nd("Cast", []string{"position_ids"}, []string{"posf"}, attrInt("to", int64(tFloat))),
		nd("Unsqueeze", []string{"posf", "ax_last"}, []string{"posu"}),
		nd("Mul", []string{"posu", "inv_freq"}, []string{"freqs"}),
		nd("Cos", []string{"freqs"}, []string{"cos"}),
		nd("Sin", []string{"freqs"}, []string{"sin"}),
		nd("RotaryEmbedding", []string{"q", "cos", "sin"}, []string{"qr"}, attrInt("num_heads", lmHeads)),
		nd("RotaryEmbedding", []string{"k", "cos", "sin"}, []string{"kr"}, attrInt("num_heads", lmKV)),
		nd("Cast", []string{"attention_mask"}, []string{"maskb"}, attrInt("to", int64(tBool))),
		nd("Unsqueeze", []string{"maskb", "ax_mask"}, []string{"mask4"}),
		nd("Attention", []string{"qr", "kr", "v", "mask4", "past_key_values.0.key", "past_key_values.0.value"},
			[]string{"att", "present.0.key", "present.0.value"}, attrInt("q_num_heads", lmHeads), attrInt("kv_num_heads", lmKV), attrInt("is_causal", 1)),
		nd("MatMul", []string{"att", "wo"}, []string{"o"}),
		nd("Add", []string{"x", "o"}, []string{"x2"}),
		nd("RMSNormalization", []string{"x2", "ln2"}, []string{"h2"}, attrFloat("epsilon", 1e-6)),
		nd("MatMul", []string{"h2", "w1"}, []string{"a"}),
		nd("Sigmoid", []string{"a"}, []string{"sa"}),
		nd("Mul", []string{"a", "sa"}, []string{"silu"}),
		nd("MatMul", []string{"h2", "w3"}, []string{"u"}),
		nd("Mul", []string{"silu", "u"}, []string{"gu"}),
		nd("MatMul", []string{"gu", "w2"}, []string{"m"}),
		nd("Add", []string{"x2", "m"}, []string{"x3"}),
		nd("RMSNormalization", []string{"x3", "lnf"}, []string{"hf"}, attrFloat("epsilon", 1e-6)),
		nd("MatMul", []string{"hf", "lm_head"}, []string{"logits"}),
	}
	g.Output = []*onnxpb.ValueInfoProto{
		namedDims("logits", tFloat, "batch", "sequence", "vocab"),
		valueInfo("present.0.key", tFloat, []int64{-1, lmKV, -1, lmHD}, true),
		valueInfo("present.0.value", tFloat, []int64{-1, lmKV, -1, lmHD}, true),
	}
	return g
}

// lmBatch is one training batch for an LM graph of B sequences of T tokens.
type lmBatch struct {
	B, T                    int
	ids, mask, pos          []int64
	lossMask, adv, oldLogps []float64
	clipLow, clipHigh       float64
}

// newLMBatch draws token ids; sequence 1 is left-padded by pad tokens
// (attention 0, positions as HF computes them: cumsum(mask) - 1, clamped at
// 0), the loss mask covers the second half of the real tokens.
func newLMBatch(r *rand.Rand, B, T, vocab, pad int) lmBatch {
	b := lmBatch{B: B, T: T, clipLow: 0.2, clipHigh: 0.28}
	for s := range B {
		p := 0
		if s == 1 {
			p = pad
		}
		seen := int64(0)
		for t := range T {
			b.ids = append(b.ids, int64(r.IntN(vocab)))
			m := int64(1)
			if t < p {
				m = 0
			}
			b.mask = append(b.mask, m)
			seen += m
			b.pos = append(b.pos, max(seen-1, 0))
			lm := 0.0
			if t+1 < T && t+1 >= (p+T)/2 {
				lm = 1
			}
			b.lossMask = append(b.lossMask, lm)
			b.adv = append(b.adv, r.NormFloat64())
			b.oldLogps = append(b.oldLogps, 0)
		}
	}
	return b
}

// feeds returns the training graph's inputs for the batch and weights;
// double selects float64 tensors.
func (b lmBatch) feeds(weights []*onnxpb.TensorProto, double bool) map[string]feed {
	fl := func(name string, shape []int64, v []float64) feed {
		if double {
			return feed{name: name, shape: shape, f64: append([]float64(nil), v...)}
		}
		f := feed{name: name, shape: shape}
		for _, x := range v {
			f.f32 = append(f.f32, float32(x))
		}
		return f
	}
	bt := []int64{int64(b.B), int64(b.T)}
	m := map[string]feed{
		"input_ids":      {shape: bt, i64: b.ids},
		"attention_mask": {shape: bt, i64: b.mask},
		"position_ids":   {shape: bt, i64: b.pos},
		InputLossMask:    fl(InputLossMask, bt, b.lossMask),
		InputAdvantages:  fl(InputAdvantages, bt, b.adv),
		InputOldLogprobs: fl(InputOldLogprobs, bt, b.oldLogps),
		InputClipLow:     fl(InputClipLow, []int64{1}, []float64{b.clipLow}),
		InputClipHigh:    fl(InputClipHigh, []int64{1}, []float64{b.clipHigh}),
	}
	for _, w := range weights {
		var v []float64
		for _, x := range w.GetFloatData() {
			v = append(v, float64(x))
		}
		v = append(v, w.GetDoubleData()...)
		if raw := w.GetRawData(); raw != nil && w.GetDataType() == tFloat {
			for i := 0; i+4 <= len(raw); i += 4 {
				v = append(v, float64(math.Float32frombits(binary.LittleEndian.Uint32(raw[i:]))))
			}
		}
		m[w.GetName()] = fl(w.GetName(), w.GetDims(), v)
	}
	return m
}

// TestLMGradients checks the gradients of the tiny LM's training loss with
// respect to every weight tensor against central finite differences in
// float64 (the float32 graph converted by ConvertFloat), on 6 sampled
// coordinates per tensor, in two regimes: REINFORCE (old_logprobs = the
// current logprobs, ratio 1) and PPO with some ratios clipped
// (old_logprobs shifted by N(0, 0.5^2)). Bound: relative error 1e-6, step
// 1e-5, as in TestRules.
func TestLMGradients(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	fwd, err := ConvertFloat(tinyLM(r), true)
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
	if got, want := len(tg.Weights), len(fwd.Initializer); got != want {
		t.Fatalf("%d trainable weights, want all %d initializers", got, want)
	}
	batch := newLMBatch(r, 2, 6, lmV, 2)
	feeds := batch.feeds(fwd.Initializer, true)
	// Current logprobs, for old_logprobs.
	s, err := newSession(t, tg.Graph, 23, []string{OutputLogprobs})
	if err != nil {
		t.Fatal(err)
	}
	out, err := s.run(feeds)
	if err != nil {
		t.Fatal(err)
	}
	cur := out[OutputLogprobs].v
	pick := func(_ string, n int) []int {
		return rand.New(rand.NewPCG(uint64(n), 3)).Perm(n)[:min(6, n)]
	}
	for _, regime := range []struct {
		name  string
		shift float64
	}{{"reinforce", 0}, {"clipped", 0.5}} {
		t.Run(regime.name, func(t *testing.T) {
			rr := rand.New(rand.NewPCG(5, 5))
			old := make([]float64, len(cur))
			clipped := 0
			for i := range old {
				old[i] = cur[i] + regime.shift*rr.NormFloat64()
				if ratio := math.Exp(cur[i] - old[i]); batch.lossMask[i] == 1 && (ratio < 1-batch.clipLow || ratio > 1+batch.clipHigh) {
					clipped++
				}
			}
			t.Logf("%d of the masked tokens have a ratio outside the clip range", clipped)
			fd := map[string]feed{}
			for k, v := range feeds {
				fd[k] = v
			}
			fd[InputOldLogprobs] = feed{shape: feeds[InputOldLogprobs].shape, f64: old}
			rel := gradCheckGraph(t, tg.Graph, lg.Graph, 23, fd, OutputLoss, tg.WeightNames(), 1e-5, 1e-6, pick)
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

// TestLMLossMatchesGo runs the float32 training graph and recomputes
// logprobs, entropy and the clipped loss from its logits in plain Go
// (float64): agreement to 1e-5 relative to the values' scale (a few float32
// ulps after the log-softmax of O(1) logits).
func TestLMLossMatchesGo(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	fwd := tinyLM(r)
	tg, err := TrainingGraph(fwd, LMOptions{KeepLogits: true})
	if err != nil {
		t.Fatal(err)
	}
	batch := newLMBatch(r, 3, 7, lmV, 3)
	for i := range batch.oldLogps {
		batch.oldLogps[i] = -2.4 + 0.6*r.NormFloat64()
	}
	s, err := newSession(t, tg.Graph, 23, []string{OutputLogits, OutputLogprobs, OutputEntropy, OutputLoss})
	if err != nil {
		t.Fatal(err)
	}
	out, err := s.run(batch.feeds(fwd.Initializer, false))
	if err != nil {
		t.Fatal(err)
	}
	logits := out[OutputLogits].v
	var num, den float64
	for b := range batch.B {
		for tt := range batch.T {
			i := b*batch.T + tt
			row := logits[i*lmV : (i+1)*lmV]
			mx := math.Inf(-1)
			for _, x := range row {
				mx = max(mx, x)
			}
			z := 0.0
			for _, x := range row {
				z += math.Exp(x - mx)
			}
			lse := mx + math.Log(z)
			ent := 0.0
			for _, x := range row {
				lp := x - lse
				ent -= math.Exp(lp) * lp
			}
			lp := 0.0
			if tt+1 < batch.T {
				lp = row[batch.ids[i+1]] - lse
			}
			ratio := math.Exp(lp - batch.oldLogps[i])
			cl := min(max(ratio, 1-batch.clipLow), 1+batch.clipHigh)
			a := batch.adv[i]
			num += min(ratio*a, cl*a) * batch.lossMask[i]
			den += batch.lossMask[i]
			if got := out[OutputLogprobs].v[i]; abs(got-lp) > 1e-5*max(1, abs(lp)) {
				t.Errorf("logprobs[%d,%d] = %.7g, Go %.7g", b, tt, got, lp)
			}
			if got := out[OutputEntropy].v[i]; abs(got-ent) > 1e-5*max(1, ent) {
				t.Errorf("entropy[%d,%d] = %.7g, Go %.7g", b, tt, got, ent)
			}
		}
	}
	want := -num / max(den, 1)
	if got := out[OutputLoss].v[0]; abs(got-want) > 1e-5*max(1, abs(want)) {
		t.Errorf("loss = %.7g, Go %.7g", got, want)
	}
}
