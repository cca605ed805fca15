package autodiff

import (
	"fmt"
	"math"

	"github.com/spiral-rl/spiral/model/onnx/onnxpb"
	"google.golang.org/protobuf/proto"
)

// maskBias is the additive bias of a masked attention score in decomposed
// Attention: the lowest finite float32, instead of -inf, so that the
// backward pass of a fully masked row stays finite (such rows are then set
// to zero, as the ONNX spec says).
const maskBias = -math.MaxFloat32

// Decompose returns a copy of g in which the fused ops Gemm,
// LayerNormalization, RMSNormalization, RotaryEmbedding and Attention are
// rewritten into primitive opset-18 ops with the same outputs. Differentiate
// calls it; it is exported so that the rewrite can be checked on its own.
func Decompose(g *onnxpb.GraphProto) (*onnxpb.GraphProto, error) {
	out := proto.Clone(g).(*onnxpb.GraphProto)
	if err := decompose(newBuilder(out, decTag)); err != nil {
		return nil, err
	}
	return out, nil
}

func decompose(b *builder) error {
	t := inferTypes(b.g)
	old := b.g.Node
	b.g.Node = make([]*onnxpb.NodeProto, 0, len(old))
	for _, n := range old {
		var outs []string
		var err error
		if n.GetDomain() != "" && n.GetDomain() != "ai.onnx" {
			b.g.Node = append(b.g.Node, n)
			continue
		}
		switch n.GetOpType() {
		case "Gemm":
			outs = decGemm(b, n)
		case "LayerNormalization":
			outs, err = decLayerNorm(b, t, n)
		case "RMSNormalization":
			outs, err = decRMSNorm(b, t, n)
		case "RotaryEmbedding":
			outs, err = decRotary(b, t, n)
		case "Attention":
			outs, err = decAttention(b, t, n)
		default:
			b.g.Node = append(b.g.Node, n)
			continue
		}
		if err != nil {
			return fmt.Errorf("autodiff: decompose %s node %q: %w", n.GetOpType(), n.GetName(), err)
		}
		for i, o := range n.GetOutput() {
			if o == "" {
				continue
			}
			if i >= len(outs) || outs[i] == "" {
				return fmt.Errorf("autodiff: decompose %s node %q: output %d (%q) is not supported", n.GetOpType(), n.GetName(), i, o)
			}
			b.g.Node = append(b.g.Node, &onnxpb.NodeProto{
				Name: proto.String(b.fresh("out")), OpType: proto.String("Identity"),
				Input: []string{outs[i]}, Output: []string{o},
			})
		}
	}
	return nil
}

// decGemm: Y = alpha op(A) op(B) + beta C.
func decGemm(b *builder, n *onnxpb.NodeProto) []string {
	a, bm := input(n, 0), input(n, 1)
	if attrIntOr(n, "transA", 0) == 1 {
		a = b.op("Transpose", []string{a}, attrInts("perm", 1, 0))
	}
	if attrIntOr(n, "transB", 0) == 1 {
		bm = b.op("Transpose", []string{bm}, attrInts("perm", 1, 0))
	}
	y := b.op("MatMul", []string{a, bm})
	// alpha and beta are float attributes; cast them like A so that a double
	// graph stays double.
	like := func(v float32) string {
		return b.op("CastLike", []string{b.scalar(tDouble, float64(v)), input(n, 0)})
	}
	if alpha := attrFloatOr(n, "alpha", 1); alpha != 1 {
		y = b.op("Mul", []string{y, like(alpha)})
	}
	if c := input(n, 2); c != "" {
		if beta := attrFloatOr(n, "beta", 1); beta != 1 {
			c = b.op("Mul", []string{c, like(beta)})
		}
		y = b.op("Add", []string{y, c})
	}
	return []string{y}
}

// normAxes returns the axes from axis to the last one of x, as a constant
// when the rank is known and computed at run time otherwise.
func normAxes(b *builder, t *typeTable, x string, axis int64) string {
	if r := t.rank(x); r >= 0 {
		axis = normAxis(axis, r)
		var v []int64
		for i := axis; i < int64(r); i++ {
			v = append(v, i)
		}
		return b.ints(v...)
	}
	rank := b.op("Size", []string{b.shape(x)})
	start := b.scalarInt(axis)
	if axis < 0 {
		start = b.op("Add", []string{rank, start})
	}
	return b.op("Range", []string{start, rank, b.scalarInt(1)})
}

// decLayerNorm: Y = (X - mean) / sqrt(var + eps) * scale + bias over the
// axes from axis on; outputs Mean and InvStdDev when asked. The statistics
// are computed in X's type (stash_type is ignored).
func decLayerNorm(b *builder, t *typeTable, n *onnxpb.NodeProto) ([]string, error) {
	x := input(n, 0)
	dt := t.dt(x)
	axes := normAxes(b, t, x, attrIntOr(n, "axis", -1))
	mean := b.op("ReduceMean", []string{x, axes}, attrInt("keepdims", 1))
	d := b.op("Sub", []string{x, mean})
	v := b.op("ReduceMean", []string{b.op("Mul", []string{d, d}), axes}, attrInt("keepdims", 1))
	eps := b.scalar(dt, float64(attrFloatOr(n, "epsilon", 1e-5)))
	inv := b.op("Reciprocal", []string{b.op("Sqrt", []string{b.op("Add", []string{v, eps})})})
	y := b.op("Mul", []string{b.op("Mul", []string{d, inv}), input(n, 1)})
	if bias := input(n, 2); bias != "" {
		y = b.op("Add", []string{y, bias})
	}
	return []string{y, mean, inv}, nil
}

// decRMSNorm: Y = X / sqrt(mean(X^2) + eps) * scale over the axes from axis.
func decRMSNorm(b *builder, t *typeTable, n *onnxpb.NodeProto) ([]string, error) {
	x := input(n, 0)
	dt := t.dt(x)
	axes := normAxes(b, t, x, attrIntOr(n, "axis", -1))
	ms := b.op("ReduceMean", []string{b.op("Mul", []string{x, x}), axes}, attrInt("keepdims", 1))
	eps := b.scalar(dt, float64(attrFloatOr(n, "epsilon", 1e-5)))
	inv := b.op("Reciprocal", []string{b.op("Sqrt", []string{b.op("Add", []string{ms, eps})})})
	return []string{b.op("Mul", []string{b.op("Mul", []string{x, inv}), input(n, 1)})}, nil
}

// decRotary follows the opset-23 RotaryEmbedding: X is [B, H, S, D] or
// [B, S, H*D] (num_heads given); cos/sin caches are [maxPos, R/2] indexed by
// position_ids [B, S], or [B, S, R/2] without position_ids; the first R
// features of each head (R = rotary_embedding_dim, 0 = all) are rotated as
// (x1, x2) -> (cos x1 - sin x2, sin x1 + cos x2), with x1, x2 the two halves
// (interleaved=0) or the even and odd features (interleaved=1).
func decRotary(b *builder, t *typeTable, n *onnxpb.NodeProto) ([]string, error) {
	x, cos, sin, pos := input(n, 0), input(n, 1), input(n, 2), input(n, 3)
	r := t.rank(x)
	if r != 3 && r != 4 {
		return nil, fmt.Errorf("input rank %d: want 3 or 4 (known statically)", r)
	}
	if pos != "" {
		cos = b.op("Gather", []string{cos, pos})
		sin = b.op("Gather", []string{sin, pos})
	}
	xh := x
	headAxis := int64(1) // where cos/sin get their unit head axis
	if r == 3 {
		h := attrIntOr(n, "num_heads", 0)
		if h <= 0 {
			return nil, fmt.Errorf("3-D input needs num_heads")
		}
		xh = b.op("Reshape", []string{x, b.ints(0, 0, h, -1)})
		headAxis = 2
	}
	cos = b.op("Unsqueeze", []string{cos, b.ints(headAxis)})
	sin = b.op("Unsqueeze", []string{sin, b.ints(headAxis)})
	rd := attrIntOr(n, "rotary_embedding_dim", 0)
	xr, xp := xh, ""
	if rd > 0 {
		xr = b.op("Slice", []string{xh, b.ints(0), b.ints(rd), b.ints(-1)})
		xp = b.op("Slice", []string{xh, b.ints(rd), b.ints(math.MaxInt64), b.ints(-1)})
	}
	var x1, x2 string
	inter := attrIntOr(n, "interleaved", 0) == 1
	if inter {
		x1 = b.op("Slice", []string{xr, b.ints(0), b.ints(math.MaxInt64), b.ints(-1), b.ints(2)})
		x2 = b.op("Slice", []string{xr, b.ints(1), b.ints(math.MaxInt64), b.ints(-1), b.ints(2)})
	} else {
		p := b.opN("Split", []string{xr}, 2, attrInt("axis", -1), attrInt("num_outputs", 2))
		x1, x2 = p[0], p[1]
	}
	re := b.op("Sub", []string{b.op("Mul", []string{cos, x1}), b.op("Mul", []string{sin, x2})})
	im := b.op("Add", []string{b.op("Mul", []string{sin, x1}), b.op("Mul", []string{cos, x2})})
	var y string
	if inter {
		re = b.op("Unsqueeze", []string{re, b.ints(-1)})
		im = b.op("Unsqueeze", []string{im, b.ints(-1)})
		y = b.reshapeLike(b.op("Concat", []string{re, im}, attrInt("axis", -1)), xr)
	} else {
		y = b.op("Concat", []string{re, im}, attrInt("axis", -1))
	}
	if xp != "" {
		y = b.op("Concat", []string{y, xp}, attrInt("axis", -1))
	}
	if r == 3 {
		y = b.reshapeLike(y, x)
	}
	return []string{y}, nil
}

// decAttention follows the opset-23 Attention for Q, K, V of rank 4
// [B, heads, S, D] or rank 3 [B, S, heads*D] (q_num_heads, kv_num_heads
// given), with optional attn_mask (bool: true attends; float: added) whose
// last dim equals the total key length, past_key/past_value, is_causal
// (bottom-right aligned after the past), scale (default 1/sqrt(D)), softcap,
// and grouped KV heads (each KV head serves q_heads/kv_heads consecutive
// query heads). Masked scores are replaced by maskBias (after a float mask is
// added); rows with every key masked output zero. qk_matmul_output and nonpad_kv_seqlen are not supported.
func decAttention(b *builder, t *typeTable, n *onnxpb.NodeProto) ([]string, error) {
	q, k, v := input(n, 0), input(n, 1), input(n, 2)
	mask, pk, pv := input(n, 3), input(n, 4), input(n, 5)
	if input(n, 6) != "" {
		return nil, fmt.Errorf("nonpad_kv_seqlen is not supported")
	}
	dt := t.dt(q)
	r := t.rank(q)
	if r != 3 && r != 4 {
		return nil, fmt.Errorf("Q rank %d: want 3 or 4 (known statically)", r)
	}
	toHeads := func(x string, h int64) string {
		return b.op("Transpose", []string{b.op("Reshape", []string{x, b.ints(0, 0, h, -1)})}, attrInts("perm", 0, 2, 1, 3))
	}
	if r == 3 {
		qh, kvh := attrIntOr(n, "q_num_heads", 0), attrIntOr(n, "kv_num_heads", 0)
		if qh <= 0 || kvh <= 0 {
			return nil, fmt.Errorf("3-D inputs need q_num_heads and kv_num_heads")
		}
		q, k, v = toHeads(q, qh), toHeads(k, kvh), toHeads(v, kvh)
	}
	if pk != "" {
		k = b.op("Concat", []string{pk, k}, attrInt("axis", 2))
		v = b.op("Concat", []string{pv, v}, attrInt("axis", 2))
	}
	presentK, presentV := k, v
	// Grouped heads: repeat each KV head rep = Hq/Hkv times, interleaved.
	sq, sk := b.shape(q), b.shape(k)
	dim := func(s string, i int64) string { return b.op("Gather", []string{s, b.ints(i)}) }
	rep := b.op("Div", []string{dim(sq, 1), dim(sk, 1)})
	expand := func(x string) string {
		sx := b.shape(x)
		e := b.op("Expand", []string{b.op("Unsqueeze", []string{x, b.ints(2)}),
			b.op("Concat", []string{dim(sx, 0), dim(sx, 1), rep, dim(sx, 2), dim(sx, 3)}, attrInt("axis", 0))})
		return b.op("Reshape", []string{e, b.op("Concat", []string{dim(sx, 0), b.op("Mul", []string{dim(sx, 1), rep}), dim(sx, 2), dim(sx, 3)}, attrInt("axis", 0))})
	}
	k, v = expand(k), expand(v)
	var scale string
	if a := attr(n, "scale"); a != nil {
		scale = b.op("CastLike", []string{b.scalar(tDouble, float64(a.GetF())), q})
	} else {
		d := b.op("CastLike", []string{b.op("Gather", []string{sq, b.scalarInt(3)}), q})
		scale = b.op("Reciprocal", []string{b.op("Sqrt", []string{d})})
	}
	s := b.op("Mul", []string{b.op("MatMul", []string{q, b.op("Transpose", []string{k}, attrInts("perm", 0, 1, 3, 2))}), scale})
	if sc := attrFloatOr(n, "softcap", 0); sc > 0 {
		c := b.op("CastLike", []string{b.scalar(tDouble, float64(sc)), q})
		s = b.op("Mul", []string{b.op("Tanh", []string{b.op("Div", []string{s, c})}), c})
	}
	neg := b.op("CastLike", []string{b.scalar(tDouble, maskBias), q})
	zero := b.scalar(dt, 0)
	var allowed string // bool, broadcastable to the scores; "" = all
	if mask != "" {
		if t.dt(mask) == tBool {
			allowed = mask
		} else {
			s = b.op("Add", []string{s, mask})
		}
	}
	if attrIntOr(n, "is_causal", 0) == 1 {
		lenQ, lenK := b.op("Gather", []string{sq, b.scalarInt(2)}), b.op("Gather", []string{b.shape(k), b.scalarInt(2)})
		offset := b.scalarInt(0)
		if pk != "" {
			offset = b.op("Gather", []string{b.shape(pk), b.scalarInt(2)})
		}
		i := b.op("Unsqueeze", []string{b.op("Add", []string{b.op("Range", []string{b.scalarInt(0), lenQ, b.scalarInt(1)}), offset}), b.ints(1)})
		j := b.op("Unsqueeze", []string{b.op("Range", []string{b.scalarInt(0), lenK, b.scalarInt(1)}), b.ints(0)})
		c := b.op("LessOrEqual", []string{j, i})
		if allowed == "" {
			allowed = c
		} else {
			allowed = b.op("And", []string{allowed, c})
		}
	}
	if allowed != "" {
		s = b.op("Where", []string{allowed, s, neg})
	}
	p := b.op("Softmax", []string{s}, attrInt("axis", -1))
	if allowed != "" {
		// A row with every key masked outputs zero.
		seen := b.op("ReduceMax", []string{b.cast(allowed, dt), b.ints(-1)}, attrInt("keepdims", 1))
		p = b.op("Where", []string{b.op("Equal", []string{seen, zero}), zero, p})
	}
	y := b.op("MatMul", []string{p, v})
	if r == 3 {
		y = b.op("Reshape", []string{b.op("Transpose", []string{y}, attrInts("perm", 0, 2, 1, 3)), b.ints(0, 0, -1)})
	}
	return []string{y, presentK, presentV}, nil
}
