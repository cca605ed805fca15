package blocks

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/spiral-rl/spiral/model/autodiff"
	"github.com/spiral-rl/spiral/model/onnx/onnxpb"
)

// Piece kinds, which decide what the executor feeds them.
const (
	pieceProlog = iota
	pieceEmbed
	piecePre
	pieceCore
	piecePost
	pieceTail
	pieceHead
	pieceGather // the Go-side embedding gather
)

// splitter builds a Program from an analysis.
type splitter struct {
	a      *analysis
	opsets []*onnxpb.OperatorSetIdProto
	ir     int64
	prog   *Program
	// owner is the piece each node runs in (-1: none, static nodes are
	// copied where read); kinds the kind of each piece.
	owner []int
	kinds []int
	// cuts are the values between blocks (and the head's input).
	cuts map[string]bool
	// coreOps are each core piece's queries, keys and values.
	coreOps map[int][3]string
}

func (s *splitter) newPiece(kind int) int {
	s.kinds = append(s.kinds, kind)
	return len(s.kinds) - 1
}

func (s *splitter) run() error {
	a := s.a
	st, err := a.cuts()
	if err != nil {
		return err
	}
	if st.head, err = a.findHead(st); err != nil {
		return err
	}
	region, err := a.layout(st)
	if err != nil {
		return err
	}
	for _, in := range a.g.GetInput() {
		if a.input[in.GetName()] {
			s.prog.Inputs = append(s.prog.Inputs, in.GetName())
		}
	}
	s.owner = make([]int, len(a.nodes))
	for i := range s.owner {
		s.owner[i] = -1
	}
	nBlocks := len(st.softmaxSegs)
	cutOut := func(k int) string { return firstOutput(a.nodes[st.chain[k]]) }

	// Prologue: the side nodes.
	prolog := s.newPiece(pieceProlog)
	for i := range a.nodes {
		if a.class[i] == classSide {
			s.owner[i] = prolog
		}
	}

	// Embedding.
	gather := -1
	var embedNodes []int
	for i := range a.nodes {
		if region[i] == -1 {
			embedNodes = append(embedNodes, i)
		}
	}
	if g := a.embeddingGather(embedNodes); g >= 0 {
		gather = g
		n := a.nodes[g]
		s.prog.Embedding = &Embedding{Table: n.GetInput()[0], Indices: n.GetInput()[1], Output: n.GetOutput()[0]}
		s.owner[g] = s.newPiece(pieceGather)
	}
	embedPiece := -1
	for _, i := range embedNodes {
		if i == gather {
			continue
		}
		if embedPiece < 0 {
			embedPiece = s.newPiece(pieceEmbed)
		}
		s.owner[i] = embedPiece
	}

	s.cuts = map[string]bool{cutOut(st.head): true}
	for _, k := range st.softmaxSegs {
		s.cuts[cutOut(k)] = true
	}

	// Blocks.
	type blockPieces struct {
		pre, core, post, tail int
		q, k, v               string // the core's operands
	}
	blocks := make([]blockPieces, nBlocks)
	s.prog.Blocks = make([]Block, nBlocks)
	for j := range nBlocks {
		end := st.head
		if j+1 < nBlocks {
			end = st.softmaxSegs[j+1]
		}
		blk := &s.prog.Blocks[j]
		blk.Input, blk.Output = cutOut(st.softmaxSegs[j]), cutOut(end)
		members := map[int]bool{}
		var softmax []int
		for i := range a.nodes {
			if region[i] == j {
				members[i] = true
				if a.nodes[i].GetOpType() == "Softmax" && a.wdepNode(i) {
					softmax = append(softmax, i)
				}
			}
		}
		bp := blockPieces{pre: s.newPiece(piecePre), core: -1, post: -1, tail: -1}
		var core map[int]bool
		if len(softmax) == 1 {
			var why string
			core, bp.q, bp.k, bp.v, why = a.findCore(members, softmax[0])
			if core == nil {
				blk.CoreNote = why
			}
		} else {
			blk.CoreNote = fmt.Sprintf("the layer has %d attention softmaxes", len(softmax))
		}
		if core == nil {
			for i := range members {
				s.owner[i] = bp.pre
			}
			blocks[j] = bp
			continue
		}
		bp.core, bp.post = s.newPiece(pieceCore), s.newPiece(piecePost)
		if s.coreOps == nil {
			s.coreOps = map[int][3]string{}
		}
		s.coreOps[bp.core] = [3]string{bp.q, bp.k, bp.v}
		// Pre: the ancestors, within the block, of what the core reads.
		pre := map[int]bool{}
		var visit func(v string)
		visit = func(v string) {
			p, ok := a.prod[v]
			if !ok || !members[p] || core[p] || pre[p] {
				return
			}
			pre[p] = true
			for _, in := range a.nodes[p].GetInput() {
				visit(in)
			}
		}
		for i := range core {
			for _, in := range a.nodes[i].GetInput() {
				visit(in)
			}
		}
		for i := range members {
			switch {
			case core[i]:
				s.owner[i] = bp.core
			case pre[i]:
				s.owner[i] = bp.pre
			default:
				s.owner[i] = bp.post
			}
		}
		if tail := a.positionwiseTail(st, s.owner, bp.post, st.softmaxSegs[j], end); tail != nil {
			bp.tail = s.newPiece(pieceTail)
			for _, i := range tail {
				s.owner[i] = bp.tail
			}
		}
		blocks[j] = bp
	}

	// Head.
	head := s.newPiece(pieceHead)
	for i := range a.nodes {
		if region[i] == nBlocks {
			s.owner[i] = head
		}
	}

	// Graphs.
	if p, err := s.build(prolog); err != nil {
		return err
	} else if len(p.Outputs) > 0 {
		s.prog.Prologue = p
	}
	if embedPiece >= 0 {
		if s.prog.Embed, err = s.build(embedPiece); err != nil {
			return err
		}
	}
	if s.prog.Embedding == nil && s.prog.Embed == nil {
		return fmt.Errorf("no embedding before the first layer")
	}
	for j, bp := range blocks {
		blk := &s.prog.Blocks[j]
		p, err := s.build(bp.pre)
		if err != nil {
			return err
		}
		blk.Pre = *p
		if bp.core < 0 {
			continue
		}
		c, err := s.build(bp.core)
		if err != nil {
			return err
		}
		blk.Core = &Core{Piece: *c, Roles: coreRoles(c.Inputs, bp.q, bp.k, bp.v)}
		if blk.Post, err = s.build(bp.post); err != nil {
			return err
		}
		if bp.tail >= 0 {
			if blk.Tail, err = s.build(bp.tail); err != nil {
				return err
			}
		}
	}
	return s.buildHead(head, cutOut(st.head))
}

func firstOutput(n *onnxpb.NodeProto) string {
	for _, o := range n.GetOutput() {
		if o != "" {
			return o
		}
	}
	return ""
}

// wdepNode reports whether a node's outputs depend on the parameters' data.
func (a *analysis) wdepNode(i int) bool {
	return slices.ContainsFunc(a.nodes[i].GetOutput(), func(o string) bool { return o != "" && a.wdep[o] })
}

// embeddingGather returns the embedding Gather among the region's nodes,
// or -1: the region's only root, reading a parameter table along axis 0
// with integer indices that are not activations.
func (a *analysis) embeddingGather(region []int) int {
	found := -1
	for _, i := range region {
		n := a.nodes[i]
		if !a.wdepNode(i) {
			continue
		}
		root := true
		for _, in := range n.GetInput() {
			if a.isAct(in) {
				root = false
			}
		}
		if !root {
			continue
		}
		if found >= 0 || n.GetOpType() != "Gather" || len(n.GetInput()) != 2 || !a.weight[n.GetInput()[0]] || a.isAct(n.GetInput()[1]) || a.weight[n.GetInput()[1]] {
			return -1
		}
		axis := int64(0)
		for _, at := range n.GetAttribute() {
			if at.GetName() == "axis" {
				axis = at.GetI()
			}
		}
		switch onnxpb.TensorProto_DataType(a.dtype(n.GetInput()[1])) {
		case onnxpb.TensorProto_INT64, onnxpb.TensorProto_INT32:
		default:
			return -1
		}
		if axis != 0 || a.valueClass(n.GetInput()[1]) == classStatic {
			return -1
		}
		found = i
	}
	return found
}

// build makes the forward (and backward) graph of piece p.
func (s *splitter) build(p int) (*Piece, error) {
	a := s.a
	var own []int
	for i, o := range s.owner {
		if o == p {
			own = append(own, i)
		}
	}
	if len(own) == 0 {
		return &Piece{}, nil
	}
	c := s.canonical(p, own, s.kinds[p] == pieceTail)
	piece := &Piece{Inputs: c.inputs, Weights: c.weights, Outputs: c.outputs}
	var err error
	if piece.Forward, err = s.store(c.graph); err != nil {
		return nil, err
	}
	if s.kinds[p] == pieceProlog {
		return piece, nil
	}
	for k, o := range c.outputs {
		if a.isGrad(o) {
			piece.GradOutputs = append(piece.GradOutputs, k)
		}
	}
	for i, in := range c.inputs {
		if a.isGrad(in) {
			piece.GradInputs = append(piece.GradInputs, i)
		}
	}
	for j, w := range c.weights {
		if a.trained[w] {
			piece.GradWeights = append(piece.GradWeights, j)
		}
	}
	if len(piece.GradOutputs) == 0 || len(piece.GradInputs)+len(piece.GradWeights) == 0 {
		piece.GradOutputs, piece.GradInputs, piece.GradWeights = nil, nil, nil
		return piece, nil
	}
	bwd, err := backward(c.graph, piece)
	if err != nil {
		// The node of the source graph, not of the piece.
		if uo := (*autodiff.UnsupportedOpError)(nil); errors.As(err, &uo) && c.nodes[uo.Node] != "" {
			uo.Node = c.nodes[uo.Node]
		}
		return nil, fmt.Errorf("backward of %s: %w", c.describe(), err)
	}
	if piece.Backward, err = s.store(bwd); err != nil {
		return nil, err
	}
	return piece, nil
}

// coreRoles returns the attention roles of a core's inputs, given its
// queries, keys and values.
func coreRoles(inputs []string, q, k, v string) []Role {
	roles := make([]Role, len(inputs))
	for i, in := range inputs {
		switch in {
		case q:
			roles[i] = RoleQueries
		case k, v:
			roles[i] = RoleKeys
		default:
			roles[i] = RoleScores
		}
	}
	return roles
}

// buildHead makes the head's loss graph: the head piece (input the cut
// x, output the logits) through autodiff.HeadLossGraph.
func (s *splitter) buildHead(p int, x string) error {
	a := s.a
	if table, rows := s.tableHead(p, x); table != "" {
		stats, statsLimited, grad := tableHeadGraphs(rows, a.trained[table], s.opsets, s.ir)
		h := Head{Input: x, Table: table, TableRows: rows, TableTrained: a.trained[table]}
		var err error
		if h.Stats, err = s.store(stats); err != nil {
			return err
		}
		if h.StatsLimited, err = s.store(statsLimited); err != nil {
			return err
		}
		if h.Grad, err = s.store(grad); err != nil {
			return err
		}
		s.prog.Head = h
		return nil
	}
	var own []int
	for i, o := range s.owner {
		if o == p {
			own = append(own, i)
		}
	}
	c := s.canonical(p, own, true)
	if len(c.inputs) == 0 || c.inputs[0] != x || len(c.outputs) != 1 || c.outputs[0] != a.logits {
		return fmt.Errorf("the LM head reads %v and writes %v; want %q first and the logits", c.inputs, c.outputs, x)
	}
	for _, in := range c.inputs[1:] {
		if a.isAct(in) {
			return fmt.Errorf("the LM head reads the activation %q besides %q", in, x)
		}
	}
	h := Head{Input: x, Inputs: c.inputs, Weights: c.weights}
	var wrt []string
	for j, w := range c.weights {
		if a.trained[w] {
			h.GradWeights = append(h.GradWeights, j)
			wrt = append(wrt, W(j))
		}
	}
	for _, limited := range []bool{false, true} {
		lg, err := autodiff.HeadLossGraph(c.graph.GetGraph(), X(0), wrt, limited)
		if err != nil {
			return fmt.Errorf("LM head loss: %w", err)
		}
		m := proto.Clone(c.graph).(*onnxpb.ModelProto)
		m.Graph = lg
		key := &h.Train
		if limited {
			key = &h.TrainLimited
		}
		if *key, err = s.store(m); err != nil {
			return err
		}
	}
	s.prog.Head = h
	return nil
}

// store serializes m into the program's graphs under its content key.
func (s *splitter) store(m *onnxpb.ModelProto) (string, error) {
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		return "", fmt.Errorf("serialize piece: %w", err)
	}
	sum := sha256.Sum256(b)
	key := hex.EncodeToString(sum[:8])
	s.prog.Graphs[key] = b
	return key, nil
}

// canon is a piece's graph in canonical names, with the bindings.
type canon struct {
	graph                    *onnxpb.ModelProto
	inputs, weights, outputs []string
	// nodes maps each canonical node name to the node's name in the
	// source graph, for errors.
	nodes map[string]string
}

func (c *canon) describe() string {
	return fmt.Sprintf("the piece reading %s", strings.Join(c.inputs, ", "))
}

// canonical builds the graph of the nodes own (piece p) plus the static
// nodes they read, with canonical names. free drops symbolic dims from
// the inputs (for pieces the executor feeds cut tensors).
func (s *splitter) canonical(p int, own []int, free bool) *canon {
	a := s.a
	// The static nodes read are emitted just before their first reader,
	// so that the order does not depend on where the exporter (or common
	// subexpression elimination) put them.
	var all []int
	emitted := map[int]bool{}
	var emit func(i int)
	emit = func(i int) {
		if emitted[i] {
			return
		}
		emitted[i] = true
		for _, in := range a.nodes[i].GetInput() {
			if q, ok := a.prod[in]; ok && a.class[q] == classStatic && s.owner[q] != p {
				emit(q)
			}
		}
		all = append(all, i)
	}
	for _, i := range own {
		emit(i)
	}
	produced := map[string]bool{}
	for _, i := range all {
		for _, o := range a.nodes[i].GetOutput() {
			produced[o] = true
		}
	}
	c := &canon{nodes: map[string]string{}}
	names := map[string]string{}
	var acts, sides, inits []string
	seenIn := map[string]bool{}
	for _, i := range all {
		for _, in := range a.nodes[i].GetInput() {
			if in == "" || produced[in] || seenIn[in] {
				continue
			}
			seenIn[in] = true
			switch {
			case a.weight[in]:
				names[in] = W(len(c.weights))
				c.weights = append(c.weights, in)
			case a.init[in] != nil:
				names[in] = fmt.Sprintf("c%d", len(inits))
				inits = append(inits, in)
			case a.isAct(in):
				acts = append(acts, in)
			default:
				sides = append(sides, in)
			}
		}
	}
	c.inputs = append(acts, sides...)
	for i, in := range c.inputs {
		names[in] = X(i)
	}
	// Outputs: values read by nodes of other pieces, or the logits.
	internal := 0
	for _, i := range all {
		for _, o := range a.nodes[i].GetOutput() {
			if o == "" {
				continue
			}
			out := o == a.logits && s.owner[i] == p
			if s.owner[i] == p {
				for _, k := range a.cons[o] {
					if s.owner[k] != p && a.class[k] != classStatic {
						out = true
					}
				}
			}
			if out {
				names[o] = Y(len(c.outputs))
				c.outputs = append(c.outputs, o)
			} else {
				names[o] = fmt.Sprintf("v%d", internal)
				internal++
			}
		}
	}
	rename := func(v string) string {
		if v == "" {
			return ""
		}
		return names[v]
	}
	g := &onnxpb.GraphProto{Name: proto.String("piece")}
	dims := &dimNames{names: map[string]string{}}
	for _, in := range c.inputs {
		vi := s.inputInfo(in)
		if s.kinds[p] == pieceCore {
			vi = s.coreInfo(p, in, vi)
		}
		g.Input = append(g.Input, dims.info(vi, names[in], free))
	}
	for _, w := range c.weights {
		g.Input = append(g.Input, dims.info(a.info[w], names[w], false))
	}
	for _, in := range inits {
		t := proto.Clone(a.init[in]).(*onnxpb.TensorProto)
		t.Name = proto.String(names[in])
		g.Initializer = append(g.Initializer, t)
	}
	for k, i := range all {
		n := proto.Clone(a.nodes[i]).(*onnxpb.NodeProto)
		n.Name = proto.String(fmt.Sprintf("n%d", k))
		c.nodes[n.GetName()] = a.nodes[i].GetName()
		n.DocString, n.MetadataProps = nil, nil
		for j := range n.Input {
			n.Input[j] = rename(n.Input[j])
		}
		for j := range n.Output {
			n.Output[j] = rename(n.Output[j])
		}
		n.Attribute = slices.Clone(n.Attribute)
		g.Node = append(g.Node, n)
	}
	// Output types as inferred within the piece, so that they depend on
	// the piece alone.
	inferred := autodiff.ValueInfos(g)
	for _, o := range c.outputs {
		g.Output = append(g.Output, dims.info(inferred[names[o]], names[o], free))
	}
	c.graph = &onnxpb.ModelProto{IrVersion: proto.Int64(s.ir), OpsetImport: s.opsets, Graph: g, ProducerName: proto.String("spiral")}
	return c
}

// coreInfo is the type of an attention core's input as the executor
// feeds it: one head's rows, so leading dims of 1; the queries' rows one
// symbol and the keys' (and values') another, which the score-shaped
// inputs take on their last two axes where they are not 1.
func (s *splitter) coreInfo(p int, v string, vi *onnxpb.ValueInfoProto) *onnxpb.ValueInfoProto {
	ops := s.coreOps[p]
	out := proto.Clone(vi).(*onnxpb.ValueInfoProto)
	dims := out.GetType().GetTensorType().GetShape().GetDim()
	if len(dims) < 2 {
		return out
	}
	one := func(d *onnxpb.TensorShapeProto_Dimension) {
		d.Value = &onnxpb.TensorShapeProto_Dimension_DimValue{DimValue: 1}
	}
	sym := func(d *onnxpb.TensorShapeProto_Dimension, name string) {
		d.Value = &onnxpb.TensorShapeProto_Dimension_DimParam{DimParam: name}
	}
	for _, d := range dims[:len(dims)-2] {
		one(d)
	}
	rows, cols := dims[len(dims)-2], dims[len(dims)-1]
	switch v {
	case ops[0]:
		sym(rows, "queries")
	case ops[1], ops[2]:
		sym(rows, "keys")
	default:
		for _, rc := range []struct {
			d    *onnxpb.TensorShapeProto_Dimension
			name string
		}{{rows, "queries"}, {cols, "keys"}} {
			if rc.d.GetDimValue() != 1 || rc.d.GetDimParam() != "" {
				sym(rc.d, rc.name)
			}
		}
	}
	return out
}

// inputInfo is the type of a piece input: the inferred one, except that
// every cut (the residual stream between layers) takes the type of the
// first block's input, which it has at run time: inference loses track
// of equal symbolic dims through the layers, and the pieces of
// isomorphic layers must be alike to be shared.
func (s *splitter) inputInfo(v string) *onnxpb.ValueInfoProto {
	vi := s.a.info[v]
	if !s.cuts[v] || len(s.prog.Blocks) == 0 {
		return vi
	}
	first := s.a.info[s.prog.Blocks[0].Input]
	if sameStatic(vi, first) {
		return first
	}
	return vi
}

// sameStatic reports whether two types have the same element type, rank
// and static dims.
func sameStatic(a, b *onnxpb.ValueInfoProto) bool {
	ta, tb := a.GetType().GetTensorType(), b.GetType().GetTensorType()
	if ta == nil || tb == nil || ta.GetElemType() != tb.GetElemType() || ta.GetShape() == nil || tb.GetShape() == nil {
		return false
	}
	da, db := ta.GetShape().GetDim(), tb.GetShape().GetDim()
	if len(da) != len(db) {
		return false
	}
	for i := range da {
		_, va := da[i].GetValue().(*onnxpb.TensorShapeProto_Dimension_DimValue)
		_, vb := db[i].GetValue().(*onnxpb.TensorShapeProto_Dimension_DimValue)
		if va != vb || (va && da[i].GetDimValue() != db[i].GetDimValue()) {
			return false
		}
	}
	return true
}

// dimNames renames symbolic dims in order of first appearance, so that
// isomorphic pieces serialize alike.
type dimNames struct{ names map[string]string }

// info returns vi renamed to name, its symbolic dims canonical. With
// free, every dim but the last is left unknown: the executor feeds such
// pieces slices of one head's rows.
func (d *dimNames) info(vi *onnxpb.ValueInfoProto, name string, free bool) *onnxpb.ValueInfoProto {
	out := &onnxpb.ValueInfoProto{Name: proto.String(name)}
	if vi == nil {
		return out
	}
	out.Type = proto.Clone(vi.GetType()).(*onnxpb.TypeProto)
	dims := out.GetType().GetTensorType().GetShape().GetDim()
	for i, dim := range dims {
		if free && i < len(dims)-1 {
			dim.Value = nil
			continue
		}
		p, ok := dim.GetValue().(*onnxpb.TensorShapeProto_Dimension_DimParam)
		if !ok {
			continue
		}
		if free {
			dim.Value = nil
			continue
		}
		if _, seen := d.names[p.DimParam]; !seen {
			d.names[p.DimParam] = fmt.Sprintf("d%d", len(d.names))
		}
		p.DimParam = d.names[p.DimParam]
	}
	return out
}

// backward returns the backward graph of a piece's canonical forward
// graph: inputs the forward's and G(k) for each gradient output, outputs
// the gradients of the GradInputs and GradWeights.
func backward(fwd *onnxpb.ModelProto, piece *Piece) (*onnxpb.ModelProto, error) {
	m := proto.Clone(fwd).(*onnxpb.ModelProto)
	g := m.GetGraph()
	outInfo := map[string]*onnxpb.ValueInfoProto{}
	for _, o := range g.GetOutput() {
		outInfo[o.GetName()] = o
	}
	// The gradient of each output y enters as its input G(k), a seed of
	// the vector-Jacobian product, not through a surrogate loss
	// sum(y * G(k)), whose nodes read y and kept the computation of the
	// outputs alive where nothing else needs it (the attention core's
	// product with the values, the last projection of a layer's MLP).
	var seeds []autodiff.Seed
	for k, o := range piece.GradOutputs {
		y := Y(o)
		vi := proto.Clone(outInfo[y]).(*onnxpb.ValueInfoProto)
		vi.Name = proto.String(G(k))
		g.Input = append(g.Input, vi)
		seeds = append(seeds, autodiff.Seed{Value: y, Grad: G(k)})
	}
	var wrt []string
	for _, i := range piece.GradInputs {
		wrt = append(wrt, X(i))
	}
	for _, j := range piece.GradWeights {
		wrt = append(wrt, W(j))
	}
	dg, err := autodiff.Differentiate(g, "", wrt, autodiff.Options{KeepOutputs: []string{}, Seeds: seeds})
	if err != nil {
		return nil, err
	}
	m.Graph = autodiff.Prune(dg)
	return m, nil
}
