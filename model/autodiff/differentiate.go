package autodiff

import (
	"errors"
	"fmt"
	"slices"

	"github.com/spiral-rl/spiral/model/onnx/onnxpb"
	"google.golang.org/protobuf/proto"
)

// GradPrefix starts the name of every gradient output: the gradient of the
// loss with respect to w is the graph output GradPrefix + w.
const GradPrefix = "grad."

// GradName returns the name of the graph output that holds d loss / d w.
func GradName(w string) string { return GradPrefix + w }

// Options configures Differentiate. The zero value is ready to use.
type Options struct {
	// KeepOutputs lists forward graph outputs to keep; nil keeps all of them.
	// The loss is always kept.
	KeepOutputs []string
	// Seeds, when set, replaces the loss (pass loss ""): Differentiate
	// then computes the vector-Jacobian product, sum over the seeds of
	// Grad . d Value / d w, each Grad a graph input of its Value's type
	// and shape (the gradient reaching Value from outside the graph).
	// Unlike a surrogate loss sum(Value * Grad), it leaves no node that
	// reads the Values, so computing them can be pruned away when
	// nothing else needs them.
	Seeds []Seed
}

// Seed is a value of the graph and the graph input holding its
// gradient (Options.Seeds).
type Seed struct {
	Value, Grad string
}

// UnsupportedOpError reports a node on a path from a wrt value to the loss
// whose op has no gradient rule.
type UnsupportedOpError struct {
	OpType string
	Domain string
	Node   string
}

func (e *UnsupportedOpError) Error() string {
	op := e.OpType
	if e.Domain != "" {
		op = e.Domain + "." + op
	}
	return fmt.Sprintf("autodiff: no gradient rule for op %s (node %q) on a path to the loss", op, e.Node)
}

// Differentiate returns a graph that computes everything g computes plus, for
// each name w in wrt (a graph input or initializer of float type), the output
// GradName(w) = d sum(loss) / d w (or, with Options.Seeds and loss "",
// the seeds' vector-Jacobian product), by reverse-mode accumulation. Fused ops
// are decomposed into primitives first (see Decompose). g is not modified.
func Differentiate(g *onnxpb.GraphProto, loss string, wrt []string, opt Options) (*onnxpb.GraphProto, error) {
	for _, p := range []string{gradTag, decTag} {
		if name := hasPrefixName(g, p); name != "" {
			return nil, fmt.Errorf("autodiff: graph already uses the reserved name prefix %q (%q)", p, name)
		}
	}
	out := proto.Clone(g).(*onnxpb.GraphProto)
	if err := decompose(newBuilder(out, decTag)); err != nil {
		return nil, err
	}
	b := newBuilder(out, gradTag)
	t := inferTypes(out)

	if (loss == "") == (len(opt.Seeds) == 0) {
		return nil, errors.New("autodiff: give either a loss or seeds")
	}
	if opt.KeepOutputs != nil {
		var keep []*onnxpb.ValueInfoProto
		for _, o := range out.Output {
			if (loss != "" && o.GetName() == loss) || slices.Contains(opt.KeepOutputs, o.GetName()) {
				keep = append(keep, o)
			}
		}
		out.Output = keep
	}
	if loss != "" && !isFloat(t.dt(loss)) {
		return nil, fmt.Errorf("autodiff: loss %q: not a float tensor of this graph (element type %d)", loss, t.dt(loss))
	}
	for _, sd := range opt.Seeds {
		if !isFloat(t.dt(sd.Value)) || t.dt(sd.Grad) != t.dt(sd.Value) {
			return nil, fmt.Errorf("autodiff: seed %q of %q: element types %d and %d, want the same float type", sd.Grad, sd.Value, t.dt(sd.Grad), t.dt(sd.Value))
		}
	}
	sources := map[string]bool{}
	for _, i := range out.GetInput() {
		sources[i.GetName()] = true
	}
	for _, i := range out.GetInitializer() {
		sources[i.GetName()] = true
	}
	for _, w := range wrt {
		if !sources[w] {
			return nil, fmt.Errorf("autodiff: wrt %q: not a graph input or initializer", w)
		}
		if !isFloat(t.dt(w)) {
			return nil, fmt.Errorf("autodiff: wrt %q: element type %d is not a float type", w, t.dt(w))
		}
	}

	// Forward activity: values that depend differentiably on some wrt.
	active := map[string]bool{}
	for _, w := range wrt {
		active[w] = true
	}
	nodes := out.GetNode()
	for _, n := range nodes {
		if !slices.ContainsFunc(diffInputs(n), func(i int) bool { return active[input(n, i)] }) {
			continue
		}
		for _, o := range n.GetOutput() {
			if o != "" && isFloat(t.dt(o)) {
				active[o] = true
			}
		}
	}
	// Backward: active values the loss depends on.
	needed := map[string]bool{}
	if loss != "" {
		needed[loss] = active[loss]
	}
	for _, sd := range opt.Seeds {
		needed[sd.Value] = needed[sd.Value] || active[sd.Value]
	}
	var path []*onnxpb.NodeProto
	for i := len(nodes) - 1; i >= 0; i-- {
		n := nodes[i]
		if !slices.ContainsFunc(n.GetOutput(), func(o string) bool { return needed[o] }) {
			continue
		}
		path = append(path, n)
		for _, j := range diffInputs(n) {
			if in := input(n, j); active[in] {
				needed[in] = true
			}
		}
	}

	nanChecked := map[string]bool{}
	for _, n := range nodes {
		if n.GetOpType() == "IsNaN" && len(n.GetInput()) == 1 {
			nanChecked[n.GetInput()[0]] = true
		}
	}
	grads := map[string][]string{}
	if loss != "" && active[loss] {
		dt := t.dt(loss)
		grads[loss] = []string{b.op("ConstantOfShape", []string{b.shape(loss)}, attrTensor("value", tensorFloat(dt, []int64{1}, 1)))}
	}
	for _, sd := range opt.Seeds {
		if active[sd.Value] {
			grads[sd.Value] = append(grads[sd.Value], sd.Grad)
		}
	}
	for _, n := range path { // reverse topological order
		gy := make([]string, len(n.GetOutput()))
		any := false
		for i, o := range n.GetOutput() {
			if o != "" && len(grads[o]) > 0 {
				gy[i] = b.sum(grads[o])
				any = true
			}
		}
		if !any {
			continue
		}
		r, ok := rules[n.GetOpType()]
		if !ok || (n.GetDomain() != "" && n.GetDomain() != "ai.onnx") {
			return nil, &UnsupportedOpError{OpType: n.GetOpType(), Domain: n.GetDomain(), Node: n.GetName()}
		}
		need := make([]bool, len(n.GetInput()))
		for _, j := range diffInputs(n) {
			need[j] = needed[input(n, j)]
		}
		gx, err := r(&gradCtx{b: b, t: t, n: n, gy: gy, need: need, nanChecked: nanChecked})
		if err != nil {
			return nil, fmt.Errorf("autodiff: node %q (%s): %w", n.GetName(), n.GetOpType(), err)
		}
		for j, gj := range gx {
			if gj != "" && j < len(need) && need[j] {
				in := input(n, j)
				grads[in] = append(grads[in], gj)
			}
		}
	}

	for _, w := range wrt {
		dt := t.dt(w)
		gw := b.sum(grads[w])
		if gw == "" {
			gw = b.zerosLike(w, dt)
		}
		name := GradName(w)
		out.Node = append(out.Node, &onnxpb.NodeProto{
			Name: proto.String(gradTag + "out/" + w), OpType: proto.String("Identity"),
			Input: []string{gw}, Output: []string{name},
		})
		out.Output = append(out.Output, valueInfo(name, dt, t.info[w]))
	}
	return out, nil
}

// valueInfo makes a tensor ValueInfoProto of element type dt with the dims of
// ti when known (unknown dims are left without value).
func valueInfo(name string, dt int32, ti tinfo) *onnxpb.ValueInfoProto {
	tt := &onnxpb.TypeProto_Tensor{ElemType: proto.Int32(dt)}
	if ti.known {
		sh := &onnxpb.TensorShapeProto{}
		for _, d := range ti.dims {
			dim := &onnxpb.TensorShapeProto_Dimension{}
			if d >= 0 {
				dim.Value = &onnxpb.TensorShapeProto_Dimension_DimValue{DimValue: d}
			}
			sh.Dim = append(sh.Dim, dim)
		}
		tt.Shape = sh
	}
	return &onnxpb.ValueInfoProto{
		Name: proto.String(name),
		Type: &onnxpb.TypeProto{Value: &onnxpb.TypeProto_TensorType{TensorType: tt}},
	}
}

// diffInputs lists the input slots of n through which gradients flow.
func diffInputs(n *onnxpb.NodeProto) []int {
	switch n.GetOpType() {
	case "Gather", "GatherElements", "Reshape", "Expand", "Slice", "Unsqueeze", "Squeeze",
		"Split", "Tile", "Pad", "Dropout", "Trilu", "CumSum", "CastLike":
		return []int{0}
	case "Where":
		return []int{1, 2}
	case "Shape", "Size", "Range", "ConstantOfShape", "Constant", "Floor", "Ceil", "Round",
		"Sign", "ArgMax", "ArgMin", "NonZero", "Equal", "Less", "Greater", "LessOrEqual",
		"GreaterOrEqual", "Not", "And", "Or", "Xor", "IsNaN", "IsInf", "EyeLike", "RandomNormal",
		"RandomUniform", "RandomNormalLike", "RandomUniformLike", "Bernoulli", "Multinomial":
		return nil
	}
	idx := make([]int, len(n.GetInput()))
	for i := range idx {
		idx[i] = i
	}
	return idx
}
