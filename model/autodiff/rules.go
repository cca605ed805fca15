package autodiff

import (
	"fmt"
	"math"

	"github.com/spiral-rl/spiral/model/onnx/onnxpb"
)

// gradCtx is what a rule sees: the forward node, the gradient of each of
// its outputs ("" = none reaches it) and which inputs need a gradient.
type gradCtx struct {
	b    *builder
	t    *typeTable
	n    *onnxpb.NodeProto
	gy   []string
	need []bool
	// nanChecked holds the values of the forward graph that an IsNaN node
	// reads (an exporter's guard such as Where(IsNaN(p), 0, p)).
	nanChecked map[string]bool
}

func (c *gradCtx) in(i int) string  { return input(c.n, i) }
func (c *gradCtx) out(i int) string { return c.n.GetOutput()[i] }
func (c *gradCtx) dt() int32        { return c.t.dt(c.out(0)) }
func (c *gradCtx) op(opType string, inputs ...string) string {
	return c.b.op(opType, inputs)
}
func (c *gradCtx) needs(i int) bool { return i < len(c.need) && c.need[i] }

// unb reduces g to the shape of input i.
// unb reduces g, shaped like output 0, to the shape of input i.
func (c *gradCtx) unb(g string, i int) string {
	var dims []int64
	if o := c.t.info[c.out(0)]; o.known {
		dims = o.dims
	}
	return c.b.unbroadcast(g, dims, c.in(i), c.t)
}

// rule computes the input gradients of one node ("" where none).
type rule func(c *gradCtx) ([]string, error)

// rules maps op types to gradient rules; the map is never modified.
var rules = map[string]rule{
	"Identity": func(c *gradCtx) ([]string, error) { return []string{c.gy[0]}, nil },
	"Dropout":  func(c *gradCtx) ([]string, error) { return dropoutGrad(c) },
	"Neg":      func(c *gradCtx) ([]string, error) { return []string{c.op("Neg", c.gy[0])}, nil },
	"Add": func(c *gradCtx) ([]string, error) {
		return []string{c.unbIf(0, c.gy[0]), c.unbIf(1, c.gy[0])}, nil
	},
	"Sub": func(c *gradCtx) ([]string, error) {
		gx := []string{c.unbIf(0, c.gy[0]), ""}
		if c.needs(1) {
			gx[1] = c.unb(c.op("Neg", c.gy[0]), 1)
		}
		return gx, nil
	},
	"Sum": func(c *gradCtx) ([]string, error) {
		gx := make([]string, len(c.n.GetInput()))
		for i := range gx {
			gx[i] = c.unbIf(i, c.gy[0])
		}
		return gx, nil
	},
	"Mul": func(c *gradCtx) ([]string, error) {
		gx := make([]string, 2)
		if c.needs(0) {
			gx[0] = c.unb(c.op("Mul", c.gy[0], c.in(1)), 0)
		}
		if c.needs(1) {
			gx[1] = c.unb(c.op("Mul", c.gy[0], c.in(0)), 1)
		}
		return gx, nil
	},
	"Div": func(c *gradCtx) ([]string, error) {
		gx := make([]string, 2)
		if c.needs(0) {
			gx[0] = c.unb(c.op("Div", c.gy[0], c.in(1)), 0)
		}
		if c.needs(1) { // d(a/b)/db = -y/b
			gx[1] = c.unb(c.op("Neg", c.op("Mul", c.gy[0], c.op("Div", c.out(0), c.in(1)))), 1)
		}
		return gx, nil
	},
	"Pow": powGrad,
	"Sqrt": func(c *gradCtx) ([]string, error) { // g / (2 y)
		return []string{c.op("Div", c.gy[0], c.op("Mul", c.out(0), c.b.scalar(c.dt(), 2)))}, nil
	},
	"Reciprocal": func(c *gradCtx) ([]string, error) { // -g y^2
		return []string{c.op("Neg", c.op("Mul", c.gy[0], c.op("Mul", c.out(0), c.out(0))))}, nil
	},
	"Exp": func(c *gradCtx) ([]string, error) { return []string{c.op("Mul", c.gy[0], c.out(0))}, nil },
	"Log": func(c *gradCtx) ([]string, error) { return []string{c.op("Div", c.gy[0], c.in(0))}, nil },
	"Tanh": func(c *gradCtx) ([]string, error) { // g (1 - y^2)
		one := c.b.scalar(c.dt(), 1)
		return []string{c.op("Mul", c.gy[0], c.op("Sub", one, c.op("Mul", c.out(0), c.out(0))))}, nil
	},
	"Sigmoid": func(c *gradCtx) ([]string, error) { // g y (1 - y)
		one := c.b.scalar(c.dt(), 1)
		return []string{c.op("Mul", c.gy[0], c.op("Mul", c.out(0), c.op("Sub", one, c.out(0))))}, nil
	},
	"Relu": func(c *gradCtx) ([]string, error) { // g where x > 0
		zero := c.b.scalar(c.dt(), 0)
		return []string{c.op("Where", c.op("Greater", c.in(0), zero), c.gy[0], zero)}, nil
	},
	"Erf": func(c *gradCtx) ([]string, error) { // g 2/sqrt(pi) exp(-x^2)
		x := c.in(0)
		e := c.op("Exp", c.op("Neg", c.op("Mul", x, x)))
		return []string{c.op("Mul", c.gy[0], c.op("Mul", e, c.b.scalar(c.dt(), 2/math.Sqrt(math.Pi))))}, nil
	},
	"Abs": func(c *gradCtx) ([]string, error) {
		return []string{c.op("Mul", c.gy[0], c.op("Sign", c.in(0)))}, nil
	},
	"Sin": func(c *gradCtx) ([]string, error) {
		return []string{c.op("Mul", c.gy[0], c.op("Cos", c.in(0)))}, nil
	},
	"Cos": func(c *gradCtx) ([]string, error) {
		return []string{c.op("Neg", c.op("Mul", c.gy[0], c.op("Sin", c.in(0))))}, nil
	},
	"Softmax": func(c *gradCtx) ([]string, error) { // y (g - sum(g y))
		ax := c.b.ints(attrIntOr(c.n, "axis", -1))
		y := c.out(0)
		if c.nanChecked[y] {
			// A row of -inf scores softmaxes to NaN, which the forward
			// graph then replaces (optimum's Where(IsNaN(p), 0, p) for
			// fully masked rows). Such rows carry no gradient: take their
			// probabilities as 0 here too, or 0 * NaN would spread NaN.
			y = c.op("Where", c.op("IsNaN", y), c.b.scalar(c.dt(), 0), y)
		}
		s := c.b.op("ReduceSum", []string{c.op("Mul", c.gy[0], y), ax}, attrInt("keepdims", 1))
		return []string{c.op("Mul", y, c.op("Sub", c.gy[0], s))}, nil
	},
	"LogSoftmax": func(c *gradCtx) ([]string, error) { // g - exp(y) sum(g)
		ax := c.b.ints(attrIntOr(c.n, "axis", -1))
		s := c.b.op("ReduceSum", []string{c.gy[0], ax}, attrInt("keepdims", 1))
		return []string{c.op("Sub", c.gy[0], c.op("Mul", c.op("Exp", c.out(0)), s))}, nil
	},
	"ReduceSum":  func(c *gradCtx) ([]string, error) { return reduceGrad(c, "sum") },
	"ReduceMean": func(c *gradCtx) ([]string, error) { return reduceGrad(c, "mean") },
	"ReduceMax":  func(c *gradCtx) ([]string, error) { return reduceGrad(c, "max") },
	"ReduceMin":  func(c *gradCtx) ([]string, error) { return reduceGrad(c, "max") },
	"MatMul":     matmulGrad,
	"Gather":     gatherGrad,
	"GatherElements": func(c *gradCtx) ([]string, error) {
		z := c.b.zerosLike(c.in(0), c.dt())
		return []string{c.b.op("ScatterElements", []string{z, c.in(1), c.gy[0]},
			attrInt("axis", attrIntOr(c.n, "axis", 0)), attrString("reduction", "add"))}, nil
	},
	"Reshape":   reshapeGrad,
	"Flatten":   reshapeGrad,
	"Squeeze":   reshapeGrad,
	"Unsqueeze": reshapeGrad,
	"Transpose": func(c *gradCtx) ([]string, error) {
		p := attr(c.n, "perm")
		if p == nil {
			return []string{c.op("Transpose", c.gy[0])}, nil
		}
		inv := make([]int64, len(p.GetInts()))
		for i, a := range p.GetInts() {
			inv[a] = int64(i)
		}
		return []string{c.b.op("Transpose", []string{c.gy[0]}, attrInts("perm", inv...))}, nil
	},
	"Concat": concatGrad,
	"Split":  splitGrad,
	"Slice":  sliceGrad,
	"Expand": func(c *gradCtx) ([]string, error) { return []string{c.unb(c.gy[0], 0)}, nil },
	"Where": func(c *gradCtx) ([]string, error) {
		zero := c.b.scalar(c.dt(), 0)
		gx := make([]string, 3)
		if c.needs(1) {
			gx[1] = c.unb(c.op("Where", c.in(0), c.gy[0], zero), 1)
		}
		if c.needs(2) {
			gx[2] = c.unb(c.op("Where", c.in(0), zero, c.gy[0]), 2)
		}
		return gx, nil
	},
	"Cast": func(c *gradCtx) ([]string, error) {
		return []string{c.b.cast(c.gy[0], c.t.dt(c.in(0)))}, nil
	},
	"CastLike": func(c *gradCtx) ([]string, error) {
		return []string{c.b.cast(c.gy[0], c.t.dt(c.in(0)))}, nil
	},
	"Max":  minMaxGrad,
	"Min":  minMaxGrad,
	"Clip": clipGrad,
}

func (c *gradCtx) unbIf(i int, g string) string {
	if !c.needs(i) {
		return ""
	}
	return c.unb(g, i)
}

func dropoutGrad(c *gradCtx) ([]string, error) {
	if c.in(1) != "" || c.in(2) != "" {
		return nil, fmt.Errorf("dropout in training mode is not supported")
	}
	return []string{c.gy[0]}, nil
}

// powGrad: y = a^b; da = g b a^(b-1); db = g y log(a). For the constant
// exponent 2 (RMSNorm's square) a^(b-1) is a itself: ONNX Runtime's Pow
// squares for an exponent of 2 but calls powf for 1, which returned a
// exactly at a cost of 7-8% of a training step of the embedded model.
func powGrad(c *gradCtx) ([]string, error) {
	gx := make([]string, 2)
	a, bExp := c.in(0), c.in(1)
	dt := c.dt()
	if c.needs(0) {
		bf := bExp
		if c.t.dt(bExp) != dt {
			bf = c.b.cast(bExp, dt)
		}
		pow := a // a^(b-1) for b = 2
		if e, ok := c.t.scalar(bExp); !ok || e != 2 {
			pow = c.op("Pow", a, c.op("Sub", bf, c.b.scalar(dt, 1)))
		}
		d := c.op("Mul", bf, pow)
		gx[0] = c.unb(c.op("Mul", c.gy[0], d), 0)
	}
	if c.needs(1) {
		// y log(a) is 0 * -inf = NaN at a = 0, where a^b is constant (0 for
		// b > 0); there the gradient is 0, as PyTorch takes it for b >= 0.
		d := c.op("Mul", c.out(0), c.op("Log", a))
		zero := c.b.scalar(dt, 0)
		at0 := c.op("And", c.op("Equal", a, zero), c.op("GreaterOrEqual", bExp, c.b.scalar(c.t.dt(bExp), 0)))
		gx[1] = c.unb(c.op("Mul", c.gy[0], c.op("Where", at0, zero, d)), 1)
	}
	return gx, nil
}

// reduceAxes returns the axes input to use for a Reduce* node (a value name,
// "" for all axes) and whether the op reduces at all. An empty axes list is
// the same as none: all axes, or none with noop_with_empty_axes.
func reduceAxes(c *gradCtx) (axes string, noop bool) {
	if a := attr(c.n, "axes"); a != nil && len(a.GetInts()) > 0 {
		return c.b.ints(a.GetInts()...), false
	}
	if ax := c.in(1); ax != "" {
		if v, ok := c.t.consts[ax]; !ok || len(v) > 0 {
			return ax, false
		}
	}
	return "", attrIntOr(c.n, "noop_with_empty_axes", 0) == 1
}

// reduceGrad handles ReduceSum, ReduceMean and ReduceMax/Min (kind "max":
// the gradient goes to the elements equal to the result, split evenly among
// ties).
func reduceGrad(c *gradCtx, kind string) ([]string, error) {
	axes, noop := reduceAxes(c)
	if noop {
		return []string{c.gy[0]}, nil
	}
	x, y, g := c.in(0), c.out(0), c.gy[0]
	if attrIntOr(c.n, "keepdims", 1) == 0 && axes != "" {
		g = c.op("Unsqueeze", g, axes)
		y = c.op("Unsqueeze", y, axes)
	}
	switch kind {
	case "sum":
		return []string{c.op("Expand", g, c.b.shape(x))}, nil
	case "mean":
		dt := c.dt()
		scale := c.op("Div", c.b.cast(c.op("Size", c.out(0)), dt), c.b.cast(c.op("Size", x), dt))
		return []string{c.op("Mul", c.op("Expand", g, c.b.shape(x)), scale)}, nil
	}
	mask := c.b.cast(c.op("Equal", x, y), c.dt())
	in := []string{mask}
	if axes != "" {
		in = append(in, axes)
	}
	// The count reduces like the node itself, also where axes turns out
	// empty at run time.
	cnt := c.b.op("ReduceSum", in, attrInt("keepdims", 1), attrInt("noop_with_empty_axes", attrIntOr(c.n, "noop_with_empty_axes", 0)))
	return []string{c.op("Mul", g, c.op("Div", mask, cnt))}, nil
}

// lastTwoSwap returns the Transpose perm that swaps the last two axes.
func lastTwoSwap(r int) []int64 {
	p := make([]int64, r)
	for i := range p {
		p[i] = int64(i)
	}
	p[r-1], p[r-2] = p[r-2], p[r-1]
	return p
}

// matmulGrad: Y = A B with numpy semantics. 1-D operands are promoted (A to
// [1, K], B to [K, 1]) and g gets the matching unit axes; then
// dA = unb(g B^T), dB = unb(A^T g), reshaped back to the 1-D shapes.
func matmulGrad(c *gradCtx) ([]string, error) {
	a, bm, g := c.in(0), c.in(1), c.gy[0]
	ra, rb := c.t.rank(a), c.t.rank(bm)
	if ra < 1 || rb < 1 {
		return nil, fmt.Errorf("MatMul needs the ranks of its inputs (got %d, %d; -1 = unknown)", ra, rb)
	}
	switch {
	case ra == 1 && rb == 1:
		g = c.b.op("Reshape", []string{g, c.b.ints(1, 1)})
	case ra == 1:
		g = c.op("Unsqueeze", g, c.b.ints(-2))
	case rb == 1:
		g = c.op("Unsqueeze", g, c.b.ints(-1))
	}
	a2, b2 := a, bm
	if ra == 1 {
		a2, ra = c.op("Unsqueeze", a, c.b.ints(0)), 2
	}
	if rb == 1 {
		b2, rb = c.op("Unsqueeze", bm, c.b.ints(-1)), 2
	}
	// Static dims of g B^T and A^T g when no operand was promoted.
	var dimsA, dimsB []int64
	if o, ia, ib := c.t.info[c.out(0)], c.t.info[a], c.t.info[bm]; o.known && a2 == a && b2 == bm && len(o.dims) >= 2 {
		batch := o.dims[:len(o.dims)-2]
		dimsA = append(append([]int64{}, batch...), ia.dims[ra-2:]...)
		dimsB = append(append([]int64{}, batch...), ib.dims[rb-2:]...)
	}
	gx := make([]string, 2)
	if c.needs(0) {
		bt := c.b.op("Transpose", []string{b2}, attrInts("perm", lastTwoSwap(rb)...))
		d := c.b.unbroadcast(c.op("MatMul", g, bt), dimsA, a2, c.t)
		if a2 != a {
			d = c.b.reshapeLike(d, a)
		}
		gx[0] = d
	}
	if c.needs(1) && rb == 2 && ra > 2 && b2 == bm {
		// A weight shared over batch dims: fold them into the rows,
		// dB = A'^T g' with A' = A as [-1, K], g' = g as [-1, N], instead of
		// materialising A^T g per batch entry and summing.
		rows := func(x string) string {
			last := c.b.op("Shape", []string{x}, attrInt("start", -1))
			return c.op("Reshape", x, c.b.op("Concat", []string{c.b.ints(-1), last}, attrInt("axis", 0)))
		}
		at := c.b.op("Transpose", []string{rows(a)}, attrInts("perm", 1, 0))
		gx[1] = c.op("MatMul", at, rows(g))
	} else if c.needs(1) {
		at := c.b.op("Transpose", []string{a2}, attrInts("perm", lastTwoSwap(ra)...))
		d := c.b.unbroadcast(c.op("MatMul", at, g), dimsB, b2, c.t)
		if b2 != bm {
			d = c.b.reshapeLike(d, bm)
		}
		gx[1] = d
	}
	return gx, nil
}

// gatherGrad scatters g back into zeros shaped like the data, adding at
// duplicated indices. Axis 0 (embeddings) uses ScatterND over rows; other
// axes scatter over flat positions of the data.
func gatherGrad(c *gradCtx) ([]string, error) {
	x, idx, g := c.in(0), c.in(1), c.gy[0]
	dt := c.dt()
	axis := attrIntOr(c.n, "axis", 0)
	if axis < 0 {
		r := c.t.rank(x)
		if r < 0 {
			return nil, fmt.Errorf("Gather with negative axis needs the rank of its data")
		}
		axis += int64(r)
	}
	if axis == 0 {
		// Normalise negative indices by gathering from 0..dim0-1.
		dim0 := c.b.op("Gather", []string{c.b.shape(x), c.b.scalarInt(0)})
		rng := c.op("Range", c.b.scalarInt(0), dim0, c.b.scalarInt(1))
		norm := c.op("Unsqueeze", c.op("Gather", rng, idx), c.b.ints(-1))
		return []string{c.b.op("ScatterND", []string{c.b.zerosLike(x, dt), norm, g}, attrString("reduction", "add"))}, nil
	}
	pos := c.op("Reshape", c.op("Range", c.b.scalarInt(0), c.op("Size", x), c.b.scalarInt(1)), c.b.shape(x))
	sel := c.b.op("Gather", []string{pos, idx}, attrInt("axis", axis))
	return []string{scatterFlat(c, sel, g, "add")}, nil
}

// scatterFlat writes g at the flat positions pos (same shape as g) of zeros
// shaped like input 0.
func scatterFlat(c *gradCtx, pos, g, reduction string) string {
	x := c.in(0)
	flat := c.b.op("ConstantOfShape", []string{c.op("Reshape", c.op("Size", x), c.b.ints(1))},
		attrTensor("value", tensorFloat(c.dt(), []int64{1}, 0)))
	ind := c.op("Unsqueeze", c.op("Reshape", pos, c.b.ints(-1)), c.b.ints(-1))
	upd := c.op("Reshape", g, c.b.ints(-1))
	var s string
	if reduction == "" {
		s = c.op("ScatterND", flat, ind, upd)
	} else {
		s = c.b.op("ScatterND", []string{flat, ind, upd}, attrString("reduction", reduction))
	}
	return c.b.reshapeLike(s, x)
}

func reshapeGrad(c *gradCtx) ([]string, error) {
	return []string{c.b.reshapeLike(c.gy[0], c.in(0))}, nil
}

// sliceGrad: the sliced positions of the data are distinct, so g is written
// to them in zeros shaped like the data.
//
// With unit steps the gradient is g padded with zeros back to the data's
// extent (Pad along the sliced axes), which costs one copy of g; other
// steps scatter g into zeros through the positions the slice selects.
func sliceGrad(c *gradCtx) ([]string, error) {
	x := c.in(0)
	if attr(c.n, "starts") != nil {
		return nil, fmt.Errorf("Slice with attribute starts (opset < 10) is not supported")
	}
	if g, ok := slicePad(c); ok {
		return []string{g}, nil
	}
	pos := c.op("Reshape", c.op("Range", c.b.scalarInt(0), c.op("Size", x), c.b.scalarInt(1)), c.b.shape(x))
	in := append([]string{pos}, c.n.GetInput()[1:]...)
	sel := c.op("Slice", in...)
	return []string{scatterFlat(c, sel, c.gy[0], "")}, nil
}

// slicePad is sliceGrad's unit-step case: for each sliced axis of extent
// d, the slice [s, e) normalised as Slice does (negatives count from the
// end, then clamped to [0, d], an empty slice where e < s), and g padded
// with s zeros before and d - e after.
func slicePad(c *gradCtx) (string, bool) {
	starts, ends := c.in(1), c.in(2)
	if steps := c.in(4); steps != "" {
		v, ok := c.t.consts[steps]
		if !ok {
			return "", false
		}
		for _, s := range v {
			if s != 1 {
				return "", false
			}
		}
	}
	axes := c.in(3)
	if axes == "" {
		v, ok := c.t.consts[starts]
		if !ok {
			return "", false
		}
		idx := make([]int64, len(v))
		for i := range idx {
			idx[i] = int64(i)
		}
		axes = c.b.ints(idx...)
	}
	x := c.in(0)
	i64 := func(v string) string { return c.b.cast(v, tInt64) }
	starts, ends, axes = i64(starts), i64(ends), i64(axes)
	dims := c.op("Gather", c.b.shape(x), axes)
	zero := c.b.ints(0)
	norm := func(v string) string {
		v = c.b.op("Where", []string{c.op("Less", v, zero), c.op("Add", v, dims), v})
		return c.op("Min", c.op("Max", v, zero), dims)
	}
	s := norm(starts)
	e := c.op("Max", norm(ends), s)
	pads := c.b.op("Concat", []string{s, c.op("Sub", dims, e)}, attrInt("axis", 0))
	return c.b.op("Pad", []string{c.gy[0], pads, c.b.scalar(c.dt(), 0), axes}), true
}

func concatGrad(c *gradCtx) ([]string, error) {
	axis := attrIntOr(c.n, "axis", 0)
	ax := c.b.ints(axis)
	gx := make([]string, len(c.n.GetInput()))
	start := c.b.ints(0)
	for i := range c.n.GetInput() {
		size := c.op("Gather", c.b.shape(c.in(i)), ax)
		end := c.op("Add", start, size)
		if c.needs(i) {
			gx[i] = c.op("Slice", c.gy[0], start, end, ax)
		}
		start = end
	}
	return gx, nil
}

func splitGrad(c *gradCtx) ([]string, error) {
	parts := make([]string, len(c.n.GetOutput()))
	for i, g := range c.gy {
		if g == "" {
			g = c.b.zerosLike(c.out(i), c.dt())
		}
		parts[i] = g
	}
	return []string{c.b.op("Concat", parts, attrInt("axis", attrIntOr(c.n, "axis", 0)))}, nil
}

// minMaxGrad: the gradient goes to the inputs equal to the result, split
// evenly among ties.
func minMaxGrad(c *gradCtx) ([]string, error) {
	ins := c.n.GetInput()
	gx := make([]string, len(ins))
	if len(ins) == 1 {
		gx[0] = c.gy[0]
		return gx, nil
	}
	masks := make([]string, len(ins))
	for i, x := range ins {
		masks[i] = c.b.cast(c.op("Equal", x, c.out(0)), c.dt())
	}
	cnt := c.b.op("Sum", masks)
	share := c.op("Div", c.gy[0], cnt)
	for i := range ins {
		if c.needs(i) {
			gx[i] = c.unb(c.op("Mul", share, masks[i]), i)
		}
	}
	return gx, nil
}

// clipGrad: y = min(max(x, lo), hi), as ONNX Runtime computes it (every
// element is hi where lo > hi). x gets g where lo <= x <= hi, lo where
// x < lo <= hi, hi where max(x, lo) > hi; the bounds' gradients are summed
// to their shapes.
func clipGrad(c *gradCtx) ([]string, error) {
	x, g := c.in(0), c.gy[0]
	lo, hi := c.in(1), c.in(2)
	zero := c.b.scalar(c.dt(), 0)
	gx := make([]string, 3)
	if c.needs(1) && lo != "" {
		m := c.op("Less", x, lo)
		if hi != "" {
			m = c.op("And", m, c.op("LessOrEqual", lo, hi))
		}
		gx[1] = c.unb(c.op("Where", m, g, zero), 1)
	}
	if c.needs(2) && hi != "" {
		m := x
		if lo != "" {
			m = c.op("Max", x, lo)
		}
		gx[2] = c.unb(c.op("Where", c.op("Greater", m, hi), g, zero), 2)
	}
	if lo != "" {
		g = c.op("Where", c.op("GreaterOrEqual", x, lo), g, zero)
	}
	if hi != "" {
		g = c.op("Where", c.op("LessOrEqual", x, hi), g, zero)
	}
	gx[0] = g
	return gx, nil
}
