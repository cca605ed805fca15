package qwen3_test

import (
	"google.golang.org/protobuf/proto"
	"math/rand/v2"
	"testing"

	ort "github.com/yalue/onnxruntime_go"

	"github.com/spiral-rl/spiral/model/modeltest"
	"github.com/spiral-rl/spiral/model/onnx"
	"github.com/spiral-rl/spiral/model/qwen3"
)

// session runs a generated decoder in ONNX Runtime with plain Go slices.
type session struct {
	s   *ort.DynamicAdvancedSession
	cfg qwen3.Config
}

func newSession(tb testing.TB, m *onnx.Model, cfg qwen3.Config) *session {
	tb.Helper()
	rt := modeltest.Runtime(tb)
	data, err := proto.Marshal(m.Proto)
	if err != nil {
		tb.Fatal(err)
	}
	so, err := rt.NewSessionOptions()
	if err != nil {
		tb.Fatal(err)
	}
	defer so.Destroy()
	in := []string{qwen3.InputIDs, qwen3.AttentionMask, qwen3.PositionIDs}
	out := []string{qwen3.Logits}
	for i := range cfg.Layers {
		in = append(in, qwen3.PastKey(i), qwen3.PastValue(i))
		out = append(out, qwen3.PresentKey(i), qwen3.PresentValue(i))
	}
	s, err := ort.NewDynamicAdvancedSessionWithONNXData(data, in, out, so)
	if err != nil {
		tb.Fatalf("create session: %v", err)
	}
	tb.Cleanup(func() { s.Destroy() })
	return &session{s: s, cfg: cfg}
}

// batch is one forward call's inputs, [batch, seq] row-major, with the
// cache [2*layers][batch, kv_heads, past, head_dim] (key, value per layer)
// holding past positions.
type batch struct {
	n, seq, past int
	ids, mask    []int64 // mask is [n, past+seq]
	pos          []int64
	cache        [][]float32
}

// run returns logits [n, seq, vocab] and the present cache
// [2*layers][n, kv_heads, past+seq, head_dim].
func (s *session) run(tb testing.TB, in batch) (logits []float32, present [][]float32) {
	tb.Helper()
	c := s.cfg
	var vals []ort.Value
	defer func() {
		for _, v := range vals {
			v.Destroy()
		}
	}()
	add := func(v ort.Value, err error) {
		if err != nil {
			tb.Fatal(err)
		}
		vals = append(vals, v)
	}
	n, seq := int64(in.n), int64(in.seq)
	add(ort.NewTensor(ort.NewShape(n, seq), in.ids))
	add(ort.NewTensor(ort.NewShape(n, int64(in.past)+seq), in.mask))
	add(ort.NewTensor(ort.NewShape(n, seq), in.pos))
	kvShape := ort.NewShape(n, int64(c.KVHeads), int64(in.past), int64(c.HeadDim))
	for i := range 2 * c.Layers {
		data := []float32{}
		if in.cache != nil {
			data = in.cache[i]
		}
		add(ort.NewTensor(kvShape, data))
	}
	outs := make([]ort.Value, 1+2*c.Layers)
	if err := s.s.Run(vals, outs); err != nil {
		tb.Fatalf("run: %v", err)
	}
	defer func() {
		for _, o := range outs {
			o.Destroy()
		}
	}()
	logits = append([]float32{}, outs[0].(*ort.Tensor[float32]).GetData()...)
	for _, o := range outs[1:] {
		present = append(present, append([]float32{}, o.(*ort.Tensor[float32]).GetData()...))
	}
	return logits, present
}

// leftPad pads prompts on the left to the longest with token 0 and returns
// ids, attention mask and position ids [len(prompts), longest], with
// transformers' positions for padded batches: cumsum(mask) - 1, 1 at pads.
func leftPad(prompts [][]int64) (ids, mask, pos []int64, seq int) {
	for _, p := range prompts {
		seq = max(seq, len(p))
	}
	for _, p := range prompts {
		pad := seq - len(p)
		for j := range seq {
			if j < pad {
				ids, mask, pos = append(ids, 0), append(mask, 0), append(pos, 1)
			} else {
				ids, mask, pos = append(ids, p[j-pad]), append(mask, 1), append(pos, int64(j-pad))
			}
		}
	}
	return ids, mask, pos, seq
}

// randomPrompts returns prompts of the given lengths with tokens in
// [1, vocab).
func randomPrompts(r *rand.Rand, vocab int, lengths ...int) [][]int64 {
	var out [][]int64
	for _, n := range lengths {
		p := make([]int64, n)
		for i := range p {
			p[i] = 1 + r.Int64N(int64(vocab-1))
		}
		out = append(out, p)
	}
	return out
}
