// Package qwen3ref is the test oracle of the graphs model/qwen3 builds: a
// plain-loop float64 forward pass of the Qwen3 decoder, independent of
// ONNX and of ONNX Runtime. Only tests import it.
package qwen3ref

import (
	"fmt"
	"math"
	"slices"

	"github.com/spiral-rl/spiral/model/onnx"
	"github.com/spiral-rl/spiral/model/qwen3"
)

// Reference is a plain-loop float64 forward pass of the Qwen3 decoder,
// independent of ONNX Runtime, reading its weights from a model Build
// made (or any model with the same initializer names and layouts). It
// defines what the graph must compute; it is slow and meant for tests.
type Reference struct {
	cfg    qwen3.Config
	embed  []float64 // [vocab, hidden]
	layers []refLayer
	norm   []float64 // [hidden]
	head   []float64 // [hidden, vocab]
}

type refLayer struct {
	inNorm, qNorm, kNorm, postNorm []float64
	q, k, v, o, gate, up, down     []float64 // [in, out]
}

// New reads c's weights from m (all converted to float64) and
// checks their shapes.
func New(m *onnx.Model, c qwen3.Config) (*Reference, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	read := func(name string, dims ...int) ([]float64, error) {
		t := m.Initializer(name)
		if t == nil {
			return nil, fmt.Errorf("qwen3ref: no initializer %q", name)
		}
		want := make([]int64, len(dims))
		for i, d := range dims {
			want[i] = int64(d)
		}
		if !slices.Equal(t.GetDims(), want) {
			return nil, fmt.Errorf("qwen3ref: initializer %q has dims %v, want %v", name, t.GetDims(), want)
		}
		return onnx.Float64s(t)
	}
	r := &Reference{cfg: c}
	var err error
	if r.embed, err = read(qwen3.EmbedWeight, c.Vocab, c.Hidden); err != nil {
		return nil, err
	}
	if r.norm, err = read(qwen3.NormWeight, c.Hidden); err != nil {
		return nil, err
	}
	if c.TiedEmbeddings {
		r.head = make([]float64, c.Hidden*c.Vocab)
		for v := range c.Vocab {
			for h := range c.Hidden {
				r.head[h*c.Vocab+v] = r.embed[v*c.Hidden+h]
			}
		}
	} else if r.head, err = read(qwen3.LMHeadWeight, c.Hidden, c.Vocab); err != nil {
		return nil, err
	}
	for i := range c.Layers {
		var l refLayer
		fields := map[string]*[]float64{
			"input_layernorm": &l.inNorm, "self_attn.q_proj": &l.q, "self_attn.k_proj": &l.k,
			"self_attn.v_proj": &l.v, "self_attn.q_norm": &l.qNorm, "self_attn.k_norm": &l.kNorm,
			"self_attn.o_proj": &l.o, "post_attention_layernorm": &l.postNorm,
			"mlp.gate_proj": &l.gate, "mlp.up_proj": &l.up, "mlp.down_proj": &l.down,
		}
		h, q, kv, d, mlp := c.Hidden, c.Heads*c.HeadDim, c.KVHeads*c.HeadDim, c.HeadDim, c.Intermediate
		// In the graph's order, so that the first mismatch reported is
		// always the same one.
		for _, w := range []struct {
			module string
			dims   []int
		}{
			{"input_layernorm", []int{h}}, {"self_attn.q_proj", []int{h, q}}, {"self_attn.k_proj", []int{h, kv}},
			{"self_attn.v_proj", []int{h, kv}}, {"self_attn.q_norm", []int{d}}, {"self_attn.k_norm", []int{d}},
			{"self_attn.o_proj", []int{q, h}}, {"post_attention_layernorm", []int{h}},
			{"mlp.gate_proj", []int{h, mlp}}, {"mlp.up_proj", []int{h, mlp}}, {"mlp.down_proj", []int{mlp, h}},
		} {
			if *fields[w.module], err = read(qwen3.LayerWeight(i, w.module), w.dims...); err != nil {
				return nil, err
			}
		}
		r.layers = append(r.layers, l)
	}
	return r, nil
}

// Forward returns the logits [batch, seq, vocab] (row-major) of a batch
// without cache. inputIDs, attentionMask and positionIDs are [batch, seq]
// row-major. Query position q sees key j when j <= q and
// attentionMask[b, j] != 0; a query that sees no key (a padding position)
// attends uniformly to all seq keys, which is what the graph's finite
// MaskValue produces.
func (r *Reference) Forward(batch, seq int, inputIDs, attentionMask, positionIDs []int64) ([]float64, error) {
	c := r.cfg
	n := batch * seq
	if len(inputIDs) != n || len(attentionMask) != n || len(positionIDs) != n {
		return nil, fmt.Errorf("qwen3ref: want %d ids, mask and positions for [%d, %d], got %d, %d, %d",
			n, batch, seq, len(inputIDs), len(attentionMask), len(positionIDs))
	}
	logits := make([]float64, n*c.Vocab)
	for bi := range batch {
		row := bi * seq
		x := make([][]float64, seq) // [S][hidden]
		for s := range seq {
			id := inputIDs[row+s]
			if id < 0 || id >= int64(c.Vocab) {
				return nil, fmt.Errorf("qwen3ref: token id %d outside [0, %d)", id, c.Vocab)
			}
			x[s] = slices.Clone(r.embed[int(id)*c.Hidden : int(id+1)*c.Hidden])
		}
		cos, sin := r.rotary(positionIDs[row : row+seq])
		mask := attentionMask[row : row+seq]
		for _, l := range r.layers {
			a := r.attention(l, x, cos, sin, mask)
			for s := range seq {
				for h := range c.Hidden {
					x[s][h] += a[s][h]
				}
			}
			for s := range seq {
				hn := rmsNorm(x[s], l.postNorm, c.RMSEps)
				gate := matVec(hn, l.gate, c.Intermediate)
				up := matVec(hn, l.up, c.Intermediate)
				for j := range gate {
					gate[j] = gate[j] / (1 + math.Exp(-gate[j])) * up[j] // SiLU(gate) · up
				}
				down := matVec(gate, l.down, c.Hidden)
				for h := range c.Hidden {
					x[s][h] += down[h]
				}
			}
		}
		for s := range seq {
			hn := rmsNorm(x[s], r.norm, c.RMSEps)
			copy(logits[(row+s)*c.Vocab:], matVec(hn, r.head, c.Vocab))
		}
	}
	return logits, nil
}

// rotary returns cos and sin [S][head_dim] of the angles pos · inv_freq,
// the angle rounded to float32 as the graph computes it.
func (r *Reference) rotary(pos []int64) (cos, sin [][]float64) {
	d := r.cfg.HeadDim
	inv := qwen3.InvFreq(r.cfg)
	for _, p := range pos {
		cs, sn := make([]float64, d), make([]float64, d)
		for i, f := range inv {
			ang := float64(float32(p) * f)
			cs[i], cs[i+d/2] = math.Cos(ang), math.Cos(ang)
			sn[i], sn[i+d/2] = math.Sin(ang), math.Sin(ang)
		}
		cos, sin = append(cos, cs), append(sin, sn)
	}
	return cos, sin
}

// attention returns o_proj(attention(input_layernorm(x))) for one row,
// [S][hidden].
func (r *Reference) attention(l refLayer, x, cos, sin [][]float64, mask []int64) [][]float64 {
	c := r.cfg
	seq, d := len(x), c.HeadDim
	// q [S][H][D], k and v [S][KV][D]
	q := make([][][]float64, seq)
	k := make([][][]float64, seq)
	v := make([][][]float64, seq)
	split := func(flat []float64, n int, norm []float64, s int) [][]float64 {
		out := make([][]float64, n)
		for h := range n {
			out[h] = flat[h*d : (h+1)*d]
			if norm != nil {
				out[h] = ropeVec(rmsNorm(out[h], norm, c.RMSEps), cos[s], sin[s])
			}
		}
		return out
	}
	for s := range seq {
		hn := rmsNorm(x[s], l.inNorm, c.RMSEps)
		q[s] = split(matVec(hn, l.q, c.Heads*d), c.Heads, l.qNorm, s)
		k[s] = split(matVec(hn, l.k, c.KVHeads*d), c.KVHeads, l.kNorm, s)
		v[s] = split(matVec(hn, l.v, c.KVHeads*d), c.KVHeads, nil, s)
	}
	scale := 1 / math.Sqrt(float64(d))
	rep := c.Heads / c.KVHeads
	out := make([][]float64, seq)
	for s := range seq {
		attn := make([]float64, c.Heads*d)
		for h := range c.Heads {
			kv := h / rep
			var seen []int
			for j := 0; j <= s; j++ {
				if mask[j] != 0 {
					seen = append(seen, j)
				}
			}
			uniform := len(seen) == 0
			if uniform { // fully masked: uniform over all keys
				for j := range seq {
					seen = append(seen, j)
				}
			}
			scores := make([]float64, len(seen))
			top := math.Inf(-1)
			for i, j := range seen {
				scores[i] = dot(q[s][h], k[j][kv]) * scale
				top = max(top, scores[i])
			}
			if uniform {
				for i := range scores {
					scores[i] = top
				}
			}
			var sum float64
			for i := range scores {
				scores[i] = math.Exp(scores[i] - top)
				sum += scores[i]
			}
			for i, j := range seen {
				p := scores[i] / sum
				for e := range d {
					attn[h*d+e] += p * v[j][kv][e]
				}
			}
		}
		out[s] = matVec(attn, l.o, c.Hidden)
	}
	return out
}

// rmsNorm returns w · x / sqrt(mean(x²) + eps).
func rmsNorm(x, w []float64, eps float64) []float64 {
	var ms float64
	for _, v := range x {
		ms += v * v
	}
	inv := 1 / math.Sqrt(ms/float64(len(x))+eps)
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = w[i] * v * inv
	}
	return out
}

// ropeVec returns x·cos + rotate_half(x)·sin for one head.
func ropeVec(x, cos, sin []float64) []float64 {
	h := len(x) / 2
	out := make([]float64, len(x))
	for i := range h {
		out[i] = x[i]*cos[i] - x[i+h]*sin[i]
		out[i+h] = x[i+h]*cos[i+h] + x[i]*sin[i+h]
	}
	return out
}

// matVec returns x · W for W [len(x), n] row-major.
func matVec(x, w []float64, n int) []float64 {
	out := make([]float64, n)
	for i, xv := range x {
		row := w[i*n : (i+1)*n]
		for j, wv := range row {
			out[j] += xv * wv
		}
	}
	return out
}

func dot(a, b []float64) float64 {
	var s float64
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}
