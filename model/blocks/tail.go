package blocks

import (
	"github.com/spiral-rl/spiral/model/autodiff"
	"github.com/spiral-rl/spiral/model/onnx/onnxpb"
)

// tailOps are the ops a position-wise tail may hold: elementwise ones
// (whose static operands broadcast along the last axis only), MatMul of
// an activation with a static matrix, and reductions over the last axis
// that keep it.
var tailOps = map[string]bool{
	"Identity": true, "Cast": true, "Neg": true, "Abs": true, "Tanh": true, "Sigmoid": true, "Relu": true,
	"Exp": true, "Log": true, "Erf": true, "Softplus": true, "Sqrt": true, "Reciprocal": true,
	"Add": true, "Sub": true, "Mul": true, "Div": true, "Pow": true,
	"MatMul": true, "ReduceMean": true, "ReduceSum": true,
}

// positionwiseTail returns the nodes of a block's Post piece (owner
// post) after the earliest residual cut chain[k] (first < k < end) from
// which they qualify: the MLP sub-layer with its norm and residual add
// (and whatever casts the exporter put around them). The nodes qualify
// when they read nothing computed before that cut but the cut itself
// (and static values), produce nothing read outside them but the
// block's output chain[end], and act on each position alone: each node
// one of tailOps, every static operand broadcasting along the last axis
// only (a weight vector, a scalar) or the matrix of a MatMul, every
// reduction over the last axis. Such nodes compute each position's
// output from that position's input alone, so the executor may run them
// on any chunk of positions. nil when no cut qualifies (first is the
// attention's segment).
func (a *analysis) positionwiseTail(st *structure, owner []int, post, first, end int) []int {
	for k := first + 1; k < end; k++ {
		if owner[st.chain[k]] != post {
			continue
		}
		if tail := a.tailFrom(st, owner, post, k, end); tail != nil {
			return tail
		}
	}
	return nil
}

// tailFrom returns the Post nodes after cut chain[k] when they qualify
// (see positionwiseTail), else nil.
func (a *analysis) tailFrom(st *structure, owner []int, post, k, end int) []int {
	cut := firstOutput(a.nodes[st.chain[k]])
	out := firstOutput(a.nodes[st.chain[end]])
	rank, ok := a.rank(cut)
	if !ok || rank < 2 {
		return nil
	}
	inTail := map[int]bool{}
	var tail []int
	for i := range a.nodes {
		if owner[i] == post && st.seg[i] >= k {
			inTail[i] = true
			tail = append(tail, i)
		}
	}
	if !inTail[st.chain[end]] {
		return nil
	}
	for _, i := range tail {
		n := a.nodes[i]
		op := n.GetOpType()
		if !tailOps[op] || len(n.GetOutput()) != 1 {
			return nil
		}
		for j, in := range n.GetInput() {
			if in == "" {
				continue
			}
			p, produced := a.prod[in]
			switch {
			case in == cut || produced && inTail[p]:
				if op == "MatMul" && j != 0 {
					return nil
				}
			case a.valueClass(in) == classStatic:
				if !a.tailOperand(n, j, rank) {
					return nil
				}
			default:
				return nil // a side value or an activation from before the cut
			}
		}
		if (op == "ReduceMean" || op == "ReduceSum") && !a.reducesLastAxis(n, rank) {
			return nil
		}
		o := n.GetOutput()[0]
		for _, c := range a.cons[o] {
			if !inTail[c] && o != out {
				return nil
			}
		}
	}
	return tail
}

// tailOperand reports whether static input j of tail node n keeps the
// node position-wise: a MatMul's matrix [in, out], or an elementwise
// operand whose dims are 1 but for the last.
func (a *analysis) tailOperand(n *onnxpb.NodeProto, j, rank int) bool {
	switch n.GetOpType() {
	case "MatMul":
		dims, ok := a.staticDims(n.GetInput()[j])
		return ok && j == 1 && len(dims) == 2
	case "ReduceMean", "ReduceSum":
		return j == 1 // the axes, checked by reducesLastAxis
	}
	dims, ok := a.staticDims(n.GetInput()[j])
	if !ok || len(dims) > rank {
		return false
	}
	for _, d := range dims[:max(0, len(dims)-1)] {
		if d != 1 {
			return false
		}
	}
	return true
}

// reducesLastAxis reports whether reduction n runs over the last of its
// input's rank axes alone and keeps it (keepdims, the default).
func (a *analysis) reducesLastAxis(n *onnxpb.NodeProto, rank int) bool {
	var axes []int64
	for _, at := range n.GetAttribute() {
		switch at.GetName() {
		case "keepdims":
			if at.GetI() != 1 {
				return false
			}
		case "axes":
			axes = at.GetInts()
		case "noop_with_empty_axes":
			if at.GetI() != 0 {
				return false
			}
		}
	}
	if in := n.GetInput(); len(in) > 1 && in[1] != "" {
		var ok bool
		if axes, ok = a.staticInts(in[1]); !ok {
			return false
		}
	}
	return len(axes) == 1 && (axes[0] == -1 || axes[0] == int64(rank-1))
}

// rank returns v's rank as inferred.
func (a *analysis) rank(v string) (int, bool) {
	t := a.info[v].GetType().GetTensorType()
	if t == nil || t.GetShape() == nil {
		return 0, false
	}
	return len(t.GetShape().GetDim()), true
}

// staticDims returns the dims of a static value: an initializer's, or
// the inferred ones when all are known.
func (a *analysis) staticDims(v string) ([]int64, bool) {
	if t := a.init[v]; t != nil {
		return t.GetDims(), true
	}
	t := a.info[v].GetType().GetTensorType()
	if t == nil || t.GetShape() == nil {
		return nil, false
	}
	var dims []int64
	for _, d := range t.GetShape().GetDim() {
		if _, known := d.GetValue().(*onnxpb.TensorShapeProto_Dimension_DimValue); !known {
			return nil, false
		}
		dims = append(dims, d.GetDimValue())
	}
	return dims, true
}

// staticInts returns the contents of an integer initializer or Constant.
func (a *analysis) staticInts(v string) ([]int64, bool) {
	if t := a.init[v]; t != nil {
		return autodiff.TensorInts(t)
	}
	p, ok := a.prod[v]
	if !ok || a.nodes[p].GetOpType() != "Constant" {
		return nil, false
	}
	for _, at := range a.nodes[p].GetAttribute() {
		if at.GetName() == "value" {
			return autodiff.TensorInts(at.GetT())
		}
	}
	return nil, false
}
