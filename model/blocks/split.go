package blocks

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/spiral-rl/spiral/model/autodiff"
	"github.com/spiral-rl/spiral/model/onnx/onnxpb"
)

// Split cuts the forward graph of m (autodiff.ForwardGraph, decomposed:
// see the package doc) into a Program. trained and frozen name the
// parameters among m's inputs; only the trained get gradients.
func Split(m *onnxpb.ModelProto, trained, frozen []string) (*Program, error) {
	g, err := autodiff.Decompose(m.GetGraph())
	if err != nil {
		return nil, err
	}
	eliminateCommon(g)
	autodiff.Prune(g)
	a, err := analyse(g, trained, frozen)
	if err != nil {
		return nil, err
	}
	s := &splitter{a: a, opsets: m.GetOpsetImport(), ir: m.GetIrVersion(), prog: &Program{Graphs: map[string][]byte{}}}
	if err := s.run(); err != nil {
		return nil, fmt.Errorf("blocks: %w", err)
	}
	return s.prog, nil
}

type nodeClass int

const (
	classStatic nodeClass = iota // depends on no graph input
	classSide                    // on graph inputs, not on a parameter's data
	classAct                     // the activations
)

// analysis indexes a forward graph and classifies its values.
type analysis struct {
	g       *onnxpb.GraphProto
	nodes   []*onnxpb.NodeProto
	prod    map[string]int   // value -> producing node
	cons    map[string][]int // value -> consuming nodes, ascending
	init    map[string]*onnxpb.TensorProto
	input   map[string]bool // graph inputs that are not parameters
	weight  map[string]bool // parameters (graph inputs)
	trained map[string]bool
	info    map[string]*onnxpb.ValueInfoProto
	class   []nodeClass
	// wdep: the value's data depends on a parameter (shape reads do not
	// count); depIn: it depends on a graph input in any way.
	wdep, depIn map[string]bool
	logits      string
}

func analyse(g *onnxpb.GraphProto, trained, frozen []string) (*analysis, error) {
	a := &analysis{g: g, nodes: g.GetNode(), prod: map[string]int{}, cons: map[string][]int{},
		init: map[string]*onnxpb.TensorProto{}, input: map[string]bool{}, weight: map[string]bool{}, trained: map[string]bool{},
		info: autodiff.ValueInfos(g), wdep: map[string]bool{}, depIn: map[string]bool{}}
	if len(g.GetOutput()) != 1 {
		return nil, fmt.Errorf("blocks: forward graph has %d outputs, want the logits only", len(g.GetOutput()))
	}
	a.logits = g.GetOutput()[0].GetName()
	for _, w := range trained {
		a.weight[w], a.trained[w] = true, true
	}
	for _, w := range frozen {
		a.weight[w] = true
	}
	for _, in := range g.GetInput() {
		if !a.weight[in.GetName()] {
			a.input[in.GetName()] = true
			a.depIn[in.GetName()] = true
		}
	}
	for w := range a.weight {
		a.wdep[w] = true
	}
	for _, t := range g.GetInitializer() {
		a.init[t.GetName()] = t
	}
	a.class = make([]nodeClass, len(a.nodes))
	for i, n := range a.nodes {
		for _, o := range n.GetOutput() {
			if o != "" {
				a.prod[o] = i
			}
		}
		for j, in := range n.GetInput() {
			if in == "" || slices.Contains(n.GetInput()[:j], in) {
				continue
			}
			if _, ok := a.prod[in]; !ok && !a.input[in] && !a.weight[in] && a.init[in] == nil {
				return nil, fmt.Errorf("blocks: node %q reads %q, which nothing before it defines", n.GetName(), in)
			}
			a.cons[in] = append(a.cons[in], i)
		}
		dataWdep, anyAct, depIn := false, false, false
		for j, in := range n.GetInput() {
			if in == "" {
				continue
			}
			depIn = depIn || a.depIn[in]
			if p, ok := a.prod[in]; ok && a.class[p] == classAct {
				anyAct = true
			}
			if isDataInput(n, j) && a.wdep[in] {
				dataWdep = true
			}
		}
		switch {
		case !depIn:
			a.class[i] = classStatic
		case anyAct || dataWdep:
			a.class[i] = classAct
		default:
			a.class[i] = classSide
		}
		for _, o := range n.GetOutput() {
			if o == "" {
				continue
			}
			a.depIn[o] = depIn
			a.wdep[o] = dataWdep
		}
	}
	if _, ok := a.prod[a.logits]; !ok || a.class[a.prod[a.logits]] != classAct || !a.wdep[a.logits] {
		return nil, fmt.Errorf("blocks: the logits %q are not computed from the parameters and the tokens", a.logits)
	}
	return a, nil
}

// isDataInput reports whether input j of n carries data (rather than only
// its shape).
func isDataInput(n *onnxpb.NodeProto, j int) bool {
	switch n.GetOpType() {
	case "Shape", "Size":
		return false
	}
	return true
}

// dtype returns the element type of v (0 when unknown).
func (a *analysis) dtype(v string) int32 {
	if vi := a.info[v]; vi != nil {
		return vi.GetType().GetTensorType().GetElemType()
	}
	return 0
}

// isFloat reports whether v is a float tensor.
func (a *analysis) isFloat(v string) bool {
	switch onnxpb.TensorProto_DataType(a.dtype(v)) {
	case onnxpb.TensorProto_FLOAT, onnxpb.TensorProto_FLOAT16, onnxpb.TensorProto_BFLOAT16, onnxpb.TensorProto_DOUBLE:
		return true
	}
	return false
}

// valueClass is the class of the node producing v; graph inputs are side,
// parameters and initializers static.
func (a *analysis) valueClass(v string) nodeClass {
	if p, ok := a.prod[v]; ok {
		return a.class[p]
	}
	if a.input[v] {
		return classSide
	}
	return classStatic
}

// isAct reports whether v is an activation (produced by an activation node).
func (a *analysis) isAct(v string) bool { return a.valueClass(v) == classAct }

// isGrad reports whether gradients flow through v: a float activation
// whose data depends on the parameters.
func (a *analysis) isGrad(v string) bool { return a.isAct(v) && a.wdep[v] && a.isFloat(v) }

// eliminateCommon merges, in place, nodes that compute the same op with
// the same attributes on the same inputs (exporters repeat the mask and
// rotary tables per layer): the later one's outputs are renamed to the
// earlier one's. Nodes with subgraphs or randomness are left alone.
func eliminateCommon(g *onnxpb.GraphProto) {
	rename := map[string]string{}
	seen := map[string]*onnxpb.NodeProto{}
	for _, n := range g.GetNode() {
		for j, in := range n.Input {
			if r, ok := rename[in]; ok {
				n.Input[j] = r
			}
		}
		if !pure(n) {
			continue
		}
		var key strings.Builder
		fmt.Fprintf(&key, "%s\x00%s\x00%d\x00%q", n.GetDomain(), n.GetOpType(), len(n.GetOutput()), n.GetInput())
		for _, at := range n.GetAttribute() {
			c := proto.Clone(at).(*onnxpb.AttributeProto)
			b, err := proto.MarshalOptions{Deterministic: true}.Marshal(c)
			if err != nil {
				continue
			}
			key.WriteByte(0)
			key.Write(b)
		}
		k := key.String()
		if first, ok := seen[k]; ok {
			for j, o := range n.GetOutput() {
				if o != "" && first.GetOutput()[j] != "" {
					rename[o] = first.GetOutput()[j]
				}
			}
			continue
		}
		seen[k] = n
	}
	for _, o := range g.GetOutput() {
		if r, ok := rename[o.GetName()]; ok {
			// A graph output must keep its name: undo the merge by an
			// Identity.
			g.Node = append(g.Node, &onnxpb.NodeProto{OpType: proto.String("Identity"), Input: []string{r}, Output: []string{o.GetName()}})
		}
	}
}

// pure reports whether n's outputs are a function of its inputs and
// attributes alone.
func pure(n *onnxpb.NodeProto) bool {
	if n.GetDomain() != "" && n.GetDomain() != "ai.onnx" {
		return false
	}
	switch n.GetOpType() {
	case "RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike", "Bernoulli", "Multinomial", "Dropout":
		return false
	}
	for _, at := range n.GetAttribute() {
		if at.GetG() != nil || len(at.GetGraphs()) > 0 {
			return false
		}
	}
	return true
}

// structure is the layer structure found in the activations.
type structure struct {
	chain []int       // cut nodes, in order; the last produces the logits
	seg   map[int]int // activation node -> segment (-1 before chain[0])
	head  int         // chain index of the head's input cut
	// softmaxSegs are the segments holding an attention softmax, in order.
	softmaxSegs []int
}

// cuts finds the dominator chain of the logits in the data flow of the
// activations and the segment of every activation node: segment k holds
// the nodes after chain[k] up to chain[k+1] (which is its output).
func (a *analysis) cuts() (*structure, error) {
	const root = -1
	idom := map[int]int{}
	depth := map[int]int{root: 0}
	lca := func(x, y int) int {
		for x != y {
			if depth[x] < depth[y] {
				x, y = y, x
			}
			x = idom[x]
		}
		return x
	}
	isDom := func(i int) bool {
		if a.class[i] != classAct {
			return false
		}
		for _, o := range a.nodes[i].GetOutput() {
			if o != "" && a.wdep[o] {
				return true
			}
		}
		return false
	}
	for i, n := range a.nodes {
		if !isDom(i) {
			continue
		}
		d, first := root, true
		for j, in := range n.GetInput() {
			p, ok := a.prod[in]
			if in == "" || !ok || !isDataInput(n, j) || !isDom(p) {
				continue
			}
			if first {
				d, first = p, false
			} else {
				d = lca(d, p)
			}
		}
		idom[i] = d
		depth[i] = depth[d] + 1
	}
	sink := a.prod[a.logits]
	st := &structure{seg: map[int]int{}}
	for c := sink; c != root; c = idom[c] {
		st.chain = append(st.chain, c)
	}
	slices.Reverse(st.chain)
	index := map[int]int{}
	for k, c := range st.chain {
		index[c] = k
	}
	var segOf func(i int) int
	segOf = func(i int) int {
		if s, ok := st.seg[i]; ok {
			return s
		}
		var s int
		if k, ok := index[i]; ok {
			s = k - 1
		} else if d := idom[i]; d == root {
			s = -1
		} else if k, ok := index[d]; ok {
			s = k
		} else {
			s = segOf(d)
		}
		st.seg[i] = s
		return s
	}
	for i := range a.nodes {
		if a.class[i] != classAct {
			continue
		}
		if isDom(i) {
			segOf(i)
			continue
		}
		// Shape reads and what is computed from them alone (no gradient):
		// in the segment where their inputs are.
		s := -1
		for _, in := range a.nodes[i].GetInput() {
			if p, ok := a.prod[in]; ok && a.class[p] == classAct {
				s = max(s, st.seg[p])
			}
		}
		st.seg[i] = s
	}
	// Gradients may cross from one segment to the next only through the cut.
	for i, n := range a.nodes {
		if a.class[i] != classAct {
			continue
		}
		for _, in := range n.GetInput() {
			p, ok := a.prod[in]
			if !ok || a.class[p] != classAct {
				continue
			}
			sp, si := st.seg[p], st.seg[i]
			switch {
			case si < sp:
				return nil, fmt.Errorf("node %q reads %q from a later layer", n.GetName(), in)
			case si > sp && a.isGrad(in) && !(si == sp+1 && p == st.chain[sp+1]):
				return nil, fmt.Errorf("node %q reads %q across a layer boundary", n.GetName(), in)
			}
		}
	}
	for i, n := range a.nodes {
		if a.class[i] == classAct && n.GetOpType() == "Softmax" && isDom(i) {
			if s := st.seg[i]; len(st.softmaxSegs) == 0 || st.softmaxSegs[len(st.softmaxSegs)-1] != s {
				st.softmaxSegs = append(st.softmaxSegs, s)
			}
		}
	}
	return st, nil
}

// positionwise lists the ops a head may apply between its MatMul and the
// logits (each position on its own).
var positionwise = map[string]bool{
	"Identity": true, "Cast": true, "Neg": true, "Tanh": true, "Sigmoid": true, "Relu": true,
	"Add": true, "Sub": true, "Mul": true, "Div": true,
}

// findHead walks back from the logits to the LM head's MatMul, whose
// activation input must be a cut: it returns the cut's chain index.
func (a *analysis) findHead(st *structure) (int, error) {
	i := a.prod[a.logits]
	for {
		n := a.nodes[i]
		var acts []int
		for j, in := range n.GetInput() {
			if p, ok := a.prod[in]; ok && a.class[p] == classAct && isDataInput(n, j) {
				acts = append(acts, j)
			}
		}
		if n.GetOpType() == "MatMul" && len(acts) == 1 && acts[0] == 0 {
			p := a.prod[n.GetInput()[0]]
			for k, c := range st.chain {
				if c == p {
					return k, nil
				}
			}
			return 0, fmt.Errorf("the LM head %q reads %q, which is not a cut of the layer structure", n.GetName(), n.GetInput()[0])
		}
		if !positionwise[n.GetOpType()] || len(acts) != 1 {
			return 0, fmt.Errorf("cannot find the LM head: node %q (%s) between it and the logits does not act on each position alone", n.GetName(), n.GetOpType())
		}
		i = a.prod[n.GetInput()[acts[0]]]
	}
}

// ops a core (scores to attention output) may hold besides its two MatMuls.
var coreOps = map[string]bool{
	"Add": true, "Sub": true, "Mul": true, "Div": true, "Where": true, "Cast": true, "Identity": true,
	"Neg": true, "Softmax": true, "IsNaN": true, "Not": true, "Max": true, "Min": true, "Tanh": true,
}

// findCore finds the attention core of a block around its softmax node s:
// the core's nodes and its operands (queries, keys before their
// transpose, values), or a reason there is none.
func (a *analysis) findCore(block map[int]bool, s int) (nodes map[int]bool, q, k, v string, why string) {
	fail := func(format string, args ...any) (map[int]bool, string, string, string, string) {
		return nil, "", "", "", fmt.Sprintf(format, args...)
	}
	// Back from the softmax to the score MatMul.
	x := a.nodes[s].GetInput()[0]
	m1 := -1
	for {
		p, ok := a.prod[x]
		if !ok || !block[p] {
			return fail("the softmax input %q does not come from a MatMul in the layer", x)
		}
		n := a.nodes[p]
		if n.GetOpType() == "MatMul" {
			m1 = p
			break
		}
		if !coreOps[n.GetOpType()] {
			return fail("node %q (%s) between the scores and the softmax", n.GetName(), n.GetOpType())
		}
		var next []string
		for _, in := range n.GetInput() {
			if a.isGrad(in) {
				next = append(next, in)
			}
		}
		if len(next) != 1 {
			return fail("node %q before the softmax combines %d activations", n.GetName(), len(next))
		}
		x = next[0]
	}
	// Forward from the softmax to the MatMul with the values.
	m2 := -1
	reached := map[string]bool{}
	for _, o := range a.nodes[s].GetOutput() {
		reached[o] = true
	}
	for i := s + 1; i < len(a.nodes) && m2 < 0; i++ {
		if !block[i] {
			continue
		}
		n := a.nodes[i]
		if !slices.ContainsFunc(n.GetInput(), func(in string) bool { return reached[in] }) {
			continue
		}
		switch {
		case n.GetOpType() == "MatMul" && reached[n.GetInput()[0]] && !reached[n.GetInput()[1]]:
			m2 = i
		case coreOps[n.GetOpType()]:
			for _, o := range n.GetOutput() {
				reached[o] = true
			}
		default:
			return fail("node %q (%s) between the softmax and the values", n.GetName(), n.GetOpType())
		}
	}
	if m2 < 0 {
		return fail("no MatMul of the softmax with the values")
	}
	// Back from the score MatMul's second operand to the transpose of the
	// keys [..., T, d] -> [..., d, T], through ops with constants: the core
	// reads the keys untransposed, so that the keys a block of queries
	// sees are a prefix of rows.
	nodes = map[int]bool{}
	x = a.nodes[m1].GetInput()[1]
	for {
		p, ok := a.prod[x]
		if !ok || !block[p] {
			return fail("the keys %q do not come from a transpose in the layer", x)
		}
		n := a.nodes[p]
		nodes[p] = true
		if n.GetOpType() == "Transpose" {
			if !swapsLastTwo(n) {
				return fail("the keys' transpose %q does not swap the last two axes", n.GetName())
			}
			k = n.GetInput()[0]
			break
		}
		switch n.GetOpType() {
		case "Mul", "Div", "Cast", "Identity", "Neg":
		default:
			return fail("node %q (%s) between the keys' transpose and the scores", n.GetName(), n.GetOpType())
		}
		var next []string
		for _, in := range n.GetInput() {
			if in != "" && a.valueClass(in) != classStatic {
				next = append(next, in)
			}
		}
		if len(next) != 1 {
			return fail("node %q on the keys reads %d activations", n.GetName(), len(next))
		}
		x = next[0]
	}
	// The rest of the core: descendants of m1 that are ancestors of m2.
	desc := map[int]bool{m1: true}
	for i := m1 + 1; i <= m2; i++ {
		if !block[i] {
			continue
		}
		for _, in := range a.nodes[i].GetInput() {
			if p, ok := a.prod[in]; ok && desc[p] {
				desc[i] = true
				break
			}
		}
	}
	nodes[m2] = true
	for i := m2; i >= m1; i-- {
		if !nodes[i] || !desc[i] {
			continue
		}
		for _, in := range a.nodes[i].GetInput() {
			if p, ok := a.prod[in]; ok && desc[p] {
				nodes[p] = true
			}
		}
	}
	q, v = a.nodes[m1].GetInput()[0], a.nodes[m2].GetInput()[1]
	for _, in := range []string{q, k, v} {
		if !a.isGrad(in) {
			return fail("attention operand %q is not a float activation", in)
		}
	}
	if q == k || q == v || k == v {
		return fail("queries, keys and values are not distinct")
	}
	for i := range nodes {
		n := a.nodes[i]
		if i != m1 && i != m2 && !coreOps[n.GetOpType()] && n.GetOpType() != "Transpose" {
			return fail("node %q (%s) inside the attention core", n.GetName(), n.GetOpType())
		}
		for _, o := range n.GetOutput() {
			for _, c := range a.cons[o] {
				if !nodes[c] && i != m2 {
					return fail("%q, inside the attention core, is read outside it by %q", o, a.nodes[c].GetName())
				}
			}
		}
		for _, in := range n.GetInput() {
			if in == "" || in == q || in == k || in == v || a.valueClass(in) == classStatic {
				continue
			}
			if p, ok := a.prod[in]; ok && nodes[p] {
				continue
			}
			if i == m1 || i == m2 {
				return fail("attention MatMul %q reads %q", n.GetName(), in)
			}
			if a.wdep[in] {
				return fail("%q, added to the attention scores, depends on the parameters", in)
			}
		}
	}
	return nodes, q, k, v, ""
}

// swapsLastTwo reports whether a Transpose node swaps the last two axes
// and keeps the others.
func swapsLastTwo(n *onnxpb.NodeProto) bool {
	var perm []int64
	for _, at := range n.GetAttribute() {
		if at.GetName() == "perm" {
			perm = at.GetInts()
		}
	}
	r := len(perm)
	if r < 2 {
		return false
	}
	for i := range r - 2 {
		if perm[i] != int64(i) {
			return false
		}
	}
	return perm[r-2] == int64(r-1) && perm[r-1] == int64(r-2)
}

// errNoAttention is returned for graphs without an attention softmax.
var errNoAttention = errors.New("no attention softmax among the activations")

// layout assigns every activation node to a region: -1 the embedding,
// 0..len(Blocks)-1 the blocks, len(Blocks) the head.
func (a *analysis) layout(st *structure) ([]int, error) {
	if len(st.softmaxSegs) == 0 {
		return nil, errNoAttention
	}
	starts := slices.Clone(st.softmaxSegs)
	for _, s := range starts {
		if s >= st.head {
			return nil, fmt.Errorf("an attention softmax lies after the LM head's input")
		}
	}
	region := make([]int, len(a.nodes))
	for i := range a.nodes {
		region[i] = -2
		if a.class[i] != classAct {
			continue
		}
		s := st.seg[i]
		switch {
		case s >= st.head:
			region[i] = len(starts)
		case s < starts[0]:
			region[i] = -1
		default:
			region[i] = sort.SearchInts(starts, s+1) - 1
		}
	}
	return region, nil
}
