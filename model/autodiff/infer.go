package autodiff

import (
	"encoding/binary"
	"slices"

	"github.com/spiral-rl/spiral/model/onnx"
	"github.com/spiral-rl/spiral/model/onnx/onnxpb"
)

// tinfo is what is known statically about one value: its element type and,
// when rank >= 0, its rank and dims (-1 for a dimension unknown here).
type tinfo struct {
	dt    int32
	dims  []int64 // valid when known
	known bool
}

func (t tinfo) rank() int {
	if !t.known {
		return -1
	}
	return len(t.dims)
}

// typeTable holds element types and shapes of a graph's values, read from
// inputs, initializers and value_info and inferred for the ops this package
// knows; plus the contents of constant int64 tensors (axes, perms, shapes)
// and the values of one-element floating-point constants (a Pow's
// exponent).
type typeTable struct {
	info    map[string]tinfo
	consts  map[string][]int64
	scalars map[string]float64
	// Symbolic dims: a dim value <= symBase is a symbol; equal symbols are
	// equal at run time. Named dims (dim_param) share a symbol per name;
	// every other unknown dim gets a fresh one.
	next   int64
	params map[string]int64
}

// symBase is the largest symbolic dim value; far from any real constant
// (axes, the -1 of Reshape).
const symBase = -(int64(1) << 40)

func isSym(d int64) bool { return d <= symBase }

// fresh returns a new symbol.
func (t *typeTable) fresh() int64 {
	t.next--
	return symBase + t.next
}

// symbolize replaces the unknown (-1) dims of ti by fresh symbols.
func (t *typeTable) symbolize(ti tinfo) tinfo {
	if !ti.known {
		return ti
	}
	dims := make([]int64, len(ti.dims))
	for i, d := range ti.dims {
		dims[i] = d
		if d < 0 && !isSym(d) {
			dims[i] = t.fresh()
		}
	}
	ti.dims = dims
	return ti
}

func (t *typeTable) dt(name string) int32 { return t.info[name].dt }
func (t *typeTable) rank(name string) int { return t.info[name].rank() }

func (t *typeTable) valueInfoType(v *onnxpb.ValueInfoProto) (tinfo, bool) {
	tt := v.GetType().GetTensorType()
	if tt == nil {
		return tinfo{}, false
	}
	ti := tinfo{dt: tt.GetElemType()}
	if sh := tt.GetShape(); sh != nil {
		ti.known = true
		ti.dims = make([]int64, len(sh.GetDim()))
		for i, d := range sh.GetDim() {
			ti.dims[i] = t.fresh()
			switch dv := d.GetValue().(type) {
			case *onnxpb.TensorShapeProto_Dimension_DimValue:
				ti.dims[i] = dv.DimValue
			case *onnxpb.TensorShapeProto_Dimension_DimParam:
				if dv.DimParam != "" {
					if _, ok := t.params[dv.DimParam]; !ok {
						t.params[dv.DimParam] = t.fresh()
					}
					ti.dims[i] = t.params[dv.DimParam]
				}
			}
		}
	}
	return ti, true
}

// TensorInts returns the contents of an integer tensor (int64/int32 data or
// raw data), or nil, false.
func TensorInts(t *onnxpb.TensorProto) ([]int64, bool) {
	switch t.GetDataType() {
	case tInt64:
		if raw := t.GetRawData(); raw != nil {
			v := make([]int64, len(raw)/8)
			for i := range v {
				v[i] = int64(binary.LittleEndian.Uint64(raw[8*i:]))
			}
			return v, true
		}
		return append([]int64{}, t.GetInt64Data()...), true
	case tInt32:
		if raw := t.GetRawData(); raw != nil {
			v := make([]int64, len(raw)/4)
			for i := range v {
				v[i] = int64(int32(binary.LittleEndian.Uint32(raw[4*i:])))
			}
			return v, true
		}
		v := make([]int64, len(t.GetInt32Data()))
		for i, x := range t.GetInt32Data() {
			v[i] = int64(x)
		}
		return v, true
	}
	return nil, false
}

// noteScalar records the value of name when ct, its constant tensor, is a
// floating-point tensor of one element held in the graph (not external
// data).
func (t *typeTable) noteScalar(name string, ct *onnxpb.TensorProto) {
	if !isFloat(ct.GetDataType()) {
		return
	}
	for _, d := range ct.GetDims() {
		if d != 1 {
			return
		}
	}
	if v, err := onnx.Float64s(ct); err == nil && len(v) == 1 {
		t.scalars[name] = v[0]
	}
}

// scalar returns the value of the constant name when it is known and has
// one element (floating-point or integer).
func (t *typeTable) scalar(name string) (float64, bool) {
	if v, ok := t.scalars[name]; ok {
		return v, true
	}
	if v, ok := t.consts[name]; ok && len(v) == 1 {
		return float64(v[0]), true
	}
	return 0, false
}

func tensorInfo(t *onnxpb.TensorProto) tinfo {
	return tinfo{dt: t.GetDataType(), dims: append([]int64{}, t.GetDims()...), known: true}
}

func unknownDims(r int) []int64 {
	d := make([]int64, r)
	for i := range d {
		d[i] = -1
	}
	return d
}

// broadcastDims combines shapes by numpy broadcasting. Dims are known
// values, symbols (equal symbols are equal) or -1 (unknown); a result that
// cannot be decided statically is -1.
func broadcastDims(shapes ...[]int64) []int64 {
	r := 0
	for _, s := range shapes {
		r = max(r, len(s))
	}
	out := make([]int64, r)
	for i := range out {
		res := int64(1)
		for _, s := range shapes {
			j := i - (r - len(s))
			if j < 0 {
				continue
			}
			switch d := s[j]; {
			case d == 1 || d == res:
			case res == 1:
				res = d
			case d >= 0 && res < 0:
				res = d // a known extent > 1 fixes the result
			case d < 0 && res >= 0:
			default:
				res = -1 // two different symbols, or unknown
			}
		}
		out[i] = res
	}
	return out
}

func normAxis(a int64, r int) int64 {
	if a < 0 {
		return a + int64(r)
	}
	return a
}

// axisIn returns a, an axis of a value of rank r (negative from the
// end), as an index, and whether it is one: an axis outside the rank is
// a damaged or hand-edited node's, whose output the inference leaves
// without a shape (ONNX Runtime refuses the node where it runs it).
func axisIn(a int64, r int) (int64, bool) {
	a = normAxis(a, r)
	return a, a >= 0 && a < int64(r)
}

// inferTypes builds the type table of g (best effort: values of unknown type
// get dt 0 and unknown rank).
func inferTypes(g *onnxpb.GraphProto) *typeTable {
	t := &typeTable{info: map[string]tinfo{}, consts: map[string][]int64{}, scalars: map[string]float64{}, params: map[string]int64{}}
	for _, init := range g.GetInitializer() {
		t.info[init.GetName()] = tensorInfo(init)
		if v, ok := TensorInts(init); ok {
			t.consts[init.GetName()] = v
		}
		t.noteScalar(init.GetName(), init)
	}
	for _, lists := range [][]*onnxpb.ValueInfoProto{g.GetInput(), g.GetValueInfo(), g.GetOutput()} {
		for _, v := range lists {
			if ti, ok := t.valueInfoType(v); ok {
				if _, done := t.info[v.GetName()]; !done {
					t.info[v.GetName()] = ti
				}
			}
		}
	}
	for _, n := range g.GetNode() {
		outs := t.inferNode(n)
		for i, o := range n.GetOutput() {
			if o == "" || i >= len(outs) {
				continue
			}
			outs[i] = t.symbolize(outs[i])
			old, had := t.info[o]
			if had && old.dt != 0 {
				// value_info wins for dtype; fill in the shape if missing.
				if !old.known && outs[i].known {
					old.known, old.dims = true, outs[i].dims
					t.info[o] = old
				}
				continue
			}
			t.info[o] = outs[i]
		}
	}
	return t
}

func (t *typeTable) in(n *onnxpb.NodeProto, i int) tinfo {
	return t.info[input(n, i)]
}

// axesOf returns the axes of a Reduce/Squeeze/Unsqueeze node from its
// attribute or constant second input; ok=false when dynamic; nil, true when
// absent.
func (t *typeTable) axesOf(n *onnxpb.NodeProto) ([]int64, bool) {
	if a := attr(n, "axes"); a != nil {
		return a.GetInts(), true
	}
	if ax := input(n, 1); ax != "" {
		v, ok := t.consts[ax]
		return v, ok
	}
	return nil, true
}

func (t *typeTable) inferNode(n *onnxpb.NodeProto) []tinfo {
	x := t.in(n, 0)
	same := func() []tinfo { return []tinfo{x} }
	withDt := func(dt int32, dims []int64, known bool) []tinfo {
		return []tinfo{{dt: dt, dims: dims, known: known}}
	}
	allKnown := func() ([][]int64, bool) {
		var s [][]int64
		for i := range n.GetInput() {
			ti := t.in(n, i)
			if !ti.known {
				return nil, false
			}
			s = append(s, ti.dims)
		}
		return s, true
	}
	switch n.GetOpType() {
	case "Constant":
		if a := attr(n, "value"); a != nil && a.GetT() != nil {
			if v, ok := TensorInts(a.GetT()); ok {
				t.consts[n.GetOutput()[0]] = v
			}
			t.noteScalar(n.GetOutput()[0], a.GetT())
			return []tinfo{tensorInfo(a.GetT())}
		}
		if a := attr(n, "value_ints"); a != nil {
			t.consts[n.GetOutput()[0]] = a.GetInts()
			return withDt(tInt64, []int64{int64(len(a.GetInts()))}, true)
		}
		if a := attr(n, "value_int"); a != nil {
			t.consts[n.GetOutput()[0]] = []int64{a.GetI()}
			return withDt(tInt64, nil, true)
		}
		if a := attr(n, "value_float"); a != nil {
			t.scalars[n.GetOutput()[0]] = float64(a.GetF())
			return withDt(tFloat, nil, true)
		}
		return nil
	case "Identity", "Neg", "Sqrt", "Reciprocal", "Exp", "Log", "Tanh", "Sigmoid", "Relu", "Erf",
		"Softmax", "LogSoftmax", "Abs", "Cos", "Sin", "Floor", "Ceil", "Round", "Sign", "Clip",
		"Trilu", "CumSum", "ScatterND", "ScatterElements", "Dropout", "Transpose", "LayerNormalization",
		"RMSNormalization", "RotaryEmbedding", "Tile", "Pad", "Selu", "Elu", "LeakyRelu", "Softplus", "HardSigmoid":
		out := x
		if v, ok := t.consts[input(n, 0)]; ok && n.GetOpType() == "Identity" {
			t.consts[n.GetOutput()[0]] = v
		}
		if n.GetOpType() == "Transpose" && x.known {
			if p := attr(n, "perm"); p != nil && len(p.GetInts()) == len(x.dims) {
				out.dims = make([]int64, len(x.dims))
				for i, a := range p.GetInts() {
					if a < 0 || a >= int64(len(x.dims)) {
						out.dims = unknownDims(len(x.dims))
						break
					}
					out.dims[i] = x.dims[a]
				}
			} else {
				out.dims = make([]int64, len(x.dims))
				for i := range x.dims {
					out.dims[i] = x.dims[len(x.dims)-1-i]
				}
			}
		}
		if n.GetOpType() == "Tile" || n.GetOpType() == "Pad" {
			out.dims = unknownDims(len(x.dims))
		}
		return []tinfo{out}
	case "Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "Sum", "Mean", "Mod", "BitShift":
		if s, ok := allKnown(); ok {
			return withDt(x.dt, broadcastDims(s...), true)
		}
		return withDt(x.dt, nil, false)
	case "Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual", "And", "Or", "Xor", "Not", "IsNaN", "IsInf":
		if s, ok := allKnown(); ok {
			return withDt(tBool, broadcastDims(s...), true)
		}
		return withDt(tBool, nil, false)
	case "Where":
		if s, ok := allKnown(); ok {
			return withDt(t.in(n, 1).dt, broadcastDims(s...), true)
		}
		return withDt(t.in(n, 1).dt, nil, false)
	case "Cast":
		if v, ok := t.consts[input(n, 0)]; ok && !isFloat(int32(attrIntOr(n, "to", 0))) {
			t.consts[n.GetOutput()[0]] = v
		}
		return withDt(int32(attrIntOr(n, "to", 0)), x.dims, x.known)
	case "CastLike":
		return withDt(t.in(n, 1).dt, x.dims, x.known)
	case "MatMul":
		a, b := x, t.in(n, 1)
		if !a.known || !b.known || len(a.dims) == 0 || len(b.dims) == 0 {
			return withDt(a.dt, nil, false)
		}
		switch {
		case len(a.dims) == 1 && len(b.dims) == 1:
			return withDt(a.dt, nil, true)
		case len(a.dims) == 1:
			d := append(append([]int64{}, b.dims[:len(b.dims)-2]...), b.dims[len(b.dims)-1])
			return withDt(a.dt, d, true)
		case len(b.dims) == 1:
			return withDt(a.dt, append([]int64{}, a.dims[:len(a.dims)-1]...), true)
		}
		batch := broadcastDims(a.dims[:len(a.dims)-2], b.dims[:len(b.dims)-2])
		return withDt(a.dt, append(batch, a.dims[len(a.dims)-2], b.dims[len(b.dims)-1]), true)
	case "Gemm":
		return withDt(x.dt, unknownDims(2), true)
	case "Shape":
		if !x.known {
			return withDt(tInt64, []int64{-1}, true)
		}
		r := int64(len(x.dims))
		start, end := attrIntOr(n, "start", 0), attrIntOr(n, "end", r)
		start, end = min(max(normAxis(start, int(r)), 0), r), min(max(normAxis(end, int(r)), 0), r)
		if end > start {
			t.consts[n.GetOutput()[0]] = append([]int64{}, x.dims[start:end]...)
		}
		return withDt(tInt64, []int64{max(end-start, 0)}, true)
	case "Size":
		return withDt(tInt64, nil, true)
	case "NonZero":
		return withDt(tInt64, []int64{int64(x.rank()), -1}, x.known)
	case "Range":
		return withDt(x.dt, []int64{-1}, true)
	case "ConstantOfShape":
		dt := tFloat
		if a := attr(n, "value"); a != nil && a.GetT() != nil {
			dt = a.GetT().GetDataType()
		}
		if x.known && len(x.dims) == 1 && x.dims[0] >= 0 {
			dims := unknownDims(int(x.dims[0]))
			if v, ok := t.consts[input(n, 0)]; ok {
				dims = append([]int64{}, v...)
			}
			return withDt(dt, dims, true)
		}
		return withDt(dt, nil, false)
	case "Reshape":
		s := t.in(n, 1)
		if v, ok := t.consts[input(n, 1)]; ok {
			dims := make([]int64, len(v))
			for i, d := range v {
				dims[i] = d
				if d <= 0 && !isSym(d) {
					dims[i] = -1
					if d == 0 && x.known && i < len(x.dims) {
						dims[i] = x.dims[i]
					}
				}
			}
			inferReshapeWildcard(dims, v, x)
			return withDt(x.dt, dims, true)
		}
		if s.known && len(s.dims) == 1 && s.dims[0] >= 0 {
			return withDt(x.dt, unknownDims(int(s.dims[0])), true)
		}
		return withDt(x.dt, nil, false)
	case "Expand":
		s := t.in(n, 1)
		if x.known && s.known && len(s.dims) == 1 && s.dims[0] >= 0 {
			target := unknownDims(int(s.dims[0]))
			if v, ok := t.consts[input(n, 1)]; ok {
				target = v
			}
			return withDt(x.dt, broadcastDims(x.dims, target), true)
		}
		return withDt(x.dt, nil, false)
	case "Flatten":
		return withDt(x.dt, unknownDims(2), true)
	case "Unsqueeze", "Squeeze":
		if v, ok := t.consts[input(n, 0)]; ok && len(v) == 1 {
			t.consts[n.GetOutput()[0]] = v
		}
		axes, ok := t.axesOf(n)
		if !x.known || !ok {
			return withDt(x.dt, nil, false)
		}
		if n.GetOpType() == "Unsqueeze" {
			r := len(x.dims) + len(axes)
			out := make([]int64, r)
			ins := map[int64]bool{}
			for _, a := range axes {
				a, ok := axisIn(a, r)
				if !ok || ins[a] {
					return withDt(x.dt, nil, false)
				}
				ins[a] = true
			}
			j := 0
			for i := range out {
				if ins[int64(i)] {
					out[i] = 1
				} else {
					out[i] = x.dims[j]
					j++
				}
			}
			return withDt(x.dt, out, true)
		}
		drop := map[int64]bool{}
		if axes == nil {
			for i, d := range x.dims {
				if d == 1 {
					drop[int64(i)] = true
				} else if d < 0 {
					return withDt(x.dt, nil, false)
				}
			}
		}
		for _, a := range axes {
			drop[normAxis(a, len(x.dims))] = true
		}
		var out []int64
		for i, d := range x.dims {
			if !drop[int64(i)] {
				out = append(out, d)
			}
		}
		return withDt(x.dt, out, true)
	case "Concat":
		s, ok := allKnown()
		if !ok {
			return withDt(x.dt, nil, false)
		}
		ax, ok := axisIn(attrIntOr(n, "axis", 0), len(s[0]))
		if !ok || slices.ContainsFunc(s, func(d []int64) bool { return len(d) != len(s[0]) }) {
			return withDt(x.dt, nil, false)
		}
		out := append([]int64{}, s[0]...)
		for _, d := range s[1:] {
			if out[ax] < 0 || d[ax] < 0 {
				out[ax] = -1
			} else {
				out[ax] += d[ax]
			}
		}
		if len(s) == 1 {
			out[ax] = s[0][ax]
		}
		if v, ok := t.concatConsts(n); ok {
			t.consts[n.GetOutput()[0]] = v
		}
		return withDt(x.dt, out, true)
	case "Slice", "Split":
		if !x.known {
			return []tinfo{{dt: x.dt}}
		}
		changed := map[int64]bool{}
		if n.GetOpType() == "Split" {
			changed[normAxis(attrIntOr(n, "axis", 0), len(x.dims))] = true
		} else if ax := input(n, 3); ax != "" {
			v, ok := t.consts[ax]
			if !ok {
				return withDt(x.dt, unknownDims(len(x.dims)), true)
			}
			for _, a := range v {
				changed[normAxis(a, len(x.dims))] = true
			}
		} else if st, ok := t.consts[input(n, 1)]; ok {
			for i := range st {
				changed[int64(i)] = true
			}
		} else {
			return withDt(x.dt, unknownDims(len(x.dims)), true)
		}
		if n.GetOpType() == "Slice" && len(x.dims) == 1 {
			// Slice of a shape vector with constant bounds and step 1.
			vec, ok1 := t.consts[input(n, 0)]
			st, ok2 := t.consts[input(n, 1)]
			en, ok3 := t.consts[input(n, 2)]
			if ok1 && ok2 && ok3 && len(st) == 1 && len(en) == 1 && input(n, 4) == "" {
				l := int64(len(vec))
				a, e := st[0], en[0]
				if a < 0 {
					a += l
				}
				if e < 0 {
					e += l
				}
				a, e = min(max(a, 0), l), min(max(e, 0), l)
				if e >= a {
					t.consts[n.GetOutput()[0]] = append([]int64{}, vec[a:e]...)
				}
			}
		}
		var outs []tinfo
		for range n.GetOutput() {
			dims := append([]int64{}, x.dims...)
			for a := range changed {
				if a >= 0 && a < int64(len(dims)) {
					dims[a] = -1
				}
			}
			outs = append(outs, tinfo{dt: x.dt, dims: dims, known: true})
		}
		return outs
	case "Gather":
		idx := t.in(n, 1)
		if vec, ok := t.consts[input(n, 0)]; ok && len(x.dims) == 1 {
			if iv, ok := t.consts[input(n, 1)]; ok {
				var v []int64
				for _, i := range iv {
					if i < 0 {
						i += int64(len(vec))
					}
					if i < 0 || i >= int64(len(vec)) {
						v = nil
						break
					}
					v = append(v, vec[i])
				}
				if len(v) == len(iv) {
					t.consts[n.GetOutput()[0]] = v
				}
			}
		}
		if !x.known || !idx.known {
			return withDt(x.dt, nil, false)
		}
		ax, ok := axisIn(attrIntOr(n, "axis", 0), len(x.dims))
		if !ok {
			return withDt(x.dt, nil, false)
		}
		out := append(append(append([]int64{}, x.dims[:ax]...), idx.dims...), x.dims[ax+1:]...)
		return withDt(x.dt, out, true)
	case "GatherElements":
		idx := t.in(n, 1)
		return withDt(x.dt, idx.dims, idx.known)
	case "ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL2", "ReduceLogSumExp", "ArgMax", "ArgMin":
		dt := x.dt
		if n.GetOpType() == "ArgMax" || n.GetOpType() == "ArgMin" {
			dt = tInt64
			if !x.known {
				return withDt(dt, nil, false)
			}
			keep := attrIntOr(n, "keepdims", 1)
			ax, ok := axisIn(attrIntOr(n, "axis", 0), len(x.dims))
			if !ok {
				return withDt(dt, nil, false)
			}
			var out []int64
			for i, d := range x.dims {
				if int64(i) == ax {
					if keep == 1 {
						out = append(out, 1)
					}
					continue
				}
				out = append(out, d)
			}
			return withDt(dt, out, true)
		}
		axes, ok := t.axesOf(n)
		if !x.known || !ok {
			return withDt(dt, nil, false)
		}
		if len(axes) == 0 {
			axes = nil // an empty axes list is the same as none
		}
		keep := attrIntOr(n, "keepdims", 1)
		if axes == nil && attrIntOr(n, "noop_with_empty_axes", 0) == 1 {
			return same()
		}
		red := map[int64]bool{}
		for _, a := range axes {
			red[normAxis(a, len(x.dims))] = true
		}
		var out []int64
		for i, d := range x.dims {
			if axes == nil || red[int64(i)] {
				if keep == 1 {
					out = append(out, 1)
				}
				continue
			}
			out = append(out, d)
		}
		return withDt(dt, out, true)
	case "Attention":
		q, v := x, t.in(n, 2)
		outs := []tinfo{{dt: q.dt}}
		if q.known && v.known && len(q.dims) == 4 && len(v.dims) == 4 {
			outs[0] = tinfo{dt: q.dt, dims: []int64{q.dims[0], q.dims[1], q.dims[2], v.dims[3]}, known: true}
		} else if q.known {
			outs[0] = tinfo{dt: q.dt, dims: unknownDims(len(q.dims)), known: true}
		}
		for i := 1; i < len(n.GetOutput()); i++ {
			outs = append(outs, tinfo{dt: q.dt, dims: unknownDims(4), known: true})
		}
		return outs
	}
	return nil
}

// concatConsts folds Concat of constant int vectors.
func (t *typeTable) concatConsts(n *onnxpb.NodeProto) ([]int64, bool) {
	var out []int64
	for _, in := range n.GetInput() {
		v, ok := t.consts[in]
		if !ok {
			return nil, false
		}
		out = append(out, v...)
	}
	return out, true
}

// inferReshapeWildcard fills the one -1 of a constant Reshape target (dims,
// already resolved for 0 = copy) when x's shape decides it: flattening a
// vector keeps its (possibly symbolic) length, and with every other dim a
// known value the wildcard is numel(x) / product(others). Exported graphs
// flatten shape vectors this way (Reshape(Concat(...), [-1])) before
// Expand, whose output rank is the vector's length.
func inferReshapeWildcard(dims, target []int64, x tinfo) {
	at := -1
	for i, d := range target {
		if d == -1 {
			if at >= 0 {
				return
			}
			at = i
		}
	}
	if at < 0 || !x.known {
		return
	}
	if len(dims) == 1 && len(x.dims) == 1 {
		dims[0] = x.dims[0]
		return
	}
	n := int64(1)
	for _, d := range x.dims {
		if d < 0 {
			return
		}
		n *= d
	}
	rest := int64(1)
	for i, d := range dims {
		if i == at {
			continue
		}
		if d <= 0 {
			return
		}
		rest *= d
	}
	if n%rest == 0 {
		dims[at] = n / rest
	}
}
