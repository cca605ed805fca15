package blocks_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/spiral-rl/spiral/model/autodiff"
	"github.com/spiral-rl/spiral/model/blocks"
	"github.com/spiral-rl/spiral/model/lmgraph"
	"github.com/spiral-rl/spiral/model/onnx"
	"github.com/spiral-rl/spiral/model/onnx/onnxpb"
	"github.com/spiral-rl/spiral/model/qwen3"
)

// forward returns the forward model of m (autodiff.ForwardGraph, its
// parameters chosen by lmgraph.Classify) and the parameter names.
func forward(t *testing.T, m *onnx.Model) (*onnxpb.ModelProto, []string) {
	t.Helper()
	isParam := map[string]bool{}
	for _, c := range lmgraph.Classify(m.Graph()) {
		isParam[c.Name] = c.Parameter
	}
	l, err := autodiff.ForwardGraph(m.Graph(), autodiff.LMOptions{Trainable: func(t *onnxpb.TensorProto) bool { return isParam[t.GetName()] }})
	require.NoError(t, err)
	fm := proto.Clone(m.Proto).(*onnxpb.ModelProto)
	fm.Graph = l.Graph
	return fm, l.WeightNames()
}

func count(roles []blocks.Role, r blocks.Role) int {
	n := 0
	for _, x := range roles {
		if x == r {
			n++
		}
	}
	return n
}

// TestSplitStructure cuts the exports of one architecture (Qwen3: the
// tiny model spiral builds, with 2 and 5 layers, and the TorchScript and
// dynamo exports of transformers' Qwen3 in model/testdata) and checks
// what the executor relies on: one block per layer, each with an
// attention core of one query operand and two key operands; the gathered
// embedding; blocks chained input to output into the head, a MatMul
// with a parameter table (the table head); every
// parameter read by some piece, trained ones given gradients; and the
// layers of one export sharing their core graphs (and, for spiral's own
// graph, every piece of the middle layers), so that graphs do not grow
// with depth.
func TestSplitStructure(t *testing.T) {
	sources := map[string]func(t *testing.T) *onnx.Model{}
	for _, layers := range []int{2, 5} {
		sources["tiny"+string(rune('0'+layers))] = func(t *testing.T) *onnx.Model {
			c := qwen3.Tiny()
			c.Layers = layers
			m, err := qwen3.Build(c, 1)
			require.NoError(t, err)
			return m
		}
	}
	for _, dir := range []string{"hfqwen3", "optimumqwen3", "dynamoqwen3"} {
		sources[dir] = func(t *testing.T) *onnx.Model {
			m, err := onnx.LoadGraph("../testdata/" + dir + "/model.onnx")
			require.NoError(t, err)
			return m
		}
	}
	graphs := map[string]int{}
	for name, load := range sources {
		t.Run(name, func(t *testing.T) {
			m := load(t)
			layers := 2
			if name == "tiny5" {
				layers = 5
			}
			fm, params := forward(t, m)
			p, err := blocks.Split(fm, params, nil)
			require.NoError(t, err)
			require.Len(t, p.Blocks, layers)
			require.NotNil(t, p.Embedding, "the token embedding is a gather from a parameter")
			require.Contains(t, params, p.Embedding.Table)
			require.Equal(t, "input_ids", p.Embedding.Indices)
			read := map[string]bool{}
			for _, pc := range p.Pieces() {
				for _, w := range pc.Weights {
					read[w] = true
				}
				require.NotEmpty(t, p.Graphs[pc.Forward])
				if pc.Backward != "" {
					require.NotEmpty(t, p.Graphs[pc.Backward])
				}
			}
			read[p.Head.Table] = true
			read[p.Embedding.Table] = true
			for _, w := range params {
				require.True(t, read[w], "parameter %s is read by no piece", w)
			}
			for i, b := range p.Blocks {
				require.NotNil(t, b.Core, "layer %d: %s", i, b.CoreNote)
				require.Equal(t, 1, count(b.Core.Roles, blocks.RoleQueries))
				require.Equal(t, 2, count(b.Core.Roles, blocks.RoleKeys))
				require.Len(t, b.Core.Outputs, 1)
				require.ElementsMatch(t, b.Core.GradInputs, slices.DeleteFunc([]int{0, 1, 2, 3}[:len(b.Core.Inputs)], func(i int) bool { return b.Core.Roles[i] == blocks.RoleScores }))
				require.NotEmpty(t, b.Pre.GradWeights, "layer %d: projections are trained", i)
				// The MLP sub-layer is the position-wise tail: its one input
				// is Post's output (the residual after attention), its one
				// output the block's, and it holds the MLP's weights.
				require.NotNil(t, b.Tail, "layer %d: no position-wise tail", i)
				require.Equal(t, []string{b.Output}, b.Tail.Outputs)
				require.Len(t, b.Tail.Inputs, 1)
				require.Equal(t, []int{0}, b.Tail.GradInputs)
				require.Equal(t, b.Post.Outputs, b.Tail.Inputs)
				// The norm's scale, gate, up and down; the last layer's tail
				// runs on to the head's input, through the final norm.
				wantWeights := 4
				if i == layers-1 {
					wantWeights = 5
				}
				require.Len(t, b.Tail.GradWeights, wantWeights, "layer %d: tail weights %v", i, b.Tail.Weights)
				require.NotEmpty(t, b.Post.GradWeights, "the output projection")
				if i > 0 {
					require.Equal(t, p.Blocks[i-1].Output, b.Input)
					require.Equal(t, p.Blocks[i-1].Core.Forward, b.Core.Forward, "layers share the core graph")
					require.Equal(t, p.Blocks[i-1].Core.Backward, b.Core.Backward)
				}
			}
			require.Equal(t, p.Blocks[layers-1].Output, p.Head.Input)
			require.Contains(t, params, p.Head.Table, "the head is a MatMul with a parameter table")
			// spiral's builder reads the tied embedding through a Transpose;
			// the exports store the head [hidden, vocab] (untied here: no
			// lmgraph.ApplyTies in this test).
			require.Equal(t, strings.HasPrefix(name, "tiny"), p.Head.TableRows)
			require.True(t, p.Head.TableTrained)
			require.NotEmpty(t, p.Graphs[p.Head.Stats])
			require.NotEmpty(t, p.Graphs[p.Head.Grad])
			graphs[name] = len(p.Graphs)
		})
	}
	require.Equal(t, graphs["tiny2"], graphs["tiny5"], "the graphs of a 5-layer model are those of a 2-layer one")
}

// TestSplitFrozenHeadTable: the head table's loss graph outputs the
// table's gradient only when the table is trained; a frozen one (a LoRA
// run's) gets the hidden states' alone, and no product computes the
// other.
func TestSplitFrozenHeadTable(t *testing.T) {
	m, err := qwen3.Build(qwen3.Tiny(), 1)
	require.NoError(t, err)
	fm, params := forward(t, m)
	for _, frozen := range []bool{false, true} {
		trained, fixed := params, []string(nil)
		if frozen {
			p, err := blocks.Split(fm, params, nil)
			require.NoError(t, err)
			trained = slices.DeleteFunc(slices.Clone(params), func(w string) bool { return w == p.Head.Table })
			fixed = []string{p.Head.Table}
		}
		p, err := blocks.Split(fm, trained, fixed)
		require.NoError(t, err)
		require.Equal(t, !frozen, p.Head.TableTrained)
		var g onnxpb.ModelProto
		require.NoError(t, proto.Unmarshal(p.Graphs[p.Head.Grad], &g))
		var outputs []string
		for _, o := range g.GetGraph().GetOutput() {
			outputs = append(outputs, o.GetName())
		}
		want := []string{blocks.HeadGradHidden, blocks.HeadGradTable}
		if frozen {
			want = want[:1]
		}
		require.Equal(t, want, outputs, "frozen %v", frozen)
		products := 0
		for _, n := range g.GetGraph().GetNode() {
			if n.GetOpType() == "MatMul" || n.GetOpType() == "Gemm" {
				products++
			}
		}
		require.Equal(t, len(want)+1, products, "the logits, and a product for each gradient")
	}
}

// TestSplitErrors: a graph without attention, and one whose logits are
// not a MatMul of the last hidden state, are refused with the reason.
func TestSplitErrors(t *testing.T) {
	build := func(attention, softcap bool) *onnxpb.ModelProto {
		b := onnx.NewGraphBuilder("lm")
		ids := b.Input("input_ids", onnx.Int64, onnx.P("b"), onnx.P("t"))
		b.Input("attention_mask", onnx.Int64, onnx.P("b"), onnx.P("t"))
		emb := b.Input("emb", onnx.Float32, onnx.D(10), onnx.D(4))
		head := b.Input("head", onnx.Float32, onnx.D(4), onnx.D(10))
		proj := b.Input("proj", onnx.Float32, onnx.D(4), onnx.D(4))
		h := b.Node("Gather", []string{emb, ids})
		if attention {
			q := b.Node("MatMul", []string{h, proj})
			k := b.Node("Mul", []string{h, q})
			s := b.Node("Softmax", []string{b.Node("MatMul", []string{q, b.Node("Transpose", []string{k}, onnx.AttrInts("perm", 0, 2, 1))})}, onnx.AttrInt("axis", -1))
			h = b.Node("Add", []string{h, b.Node("MatMul", []string{s, h})})
		}
		logits := b.Node("MatMul", []string{h, head})
		if softcap {
			logits = b.Node("Softmax", []string{logits}, onnx.AttrInt("axis", -1))
		}
		b.NodeTo("Identity", []string{logits}, []string{"logits"})
		b.Output("logits", onnx.Float32, onnx.P("b"), onnx.P("t"), onnx.D(10))
		return b.Model(18).Proto
	}
	_, err := blocks.Split(build(false, false), []string{"emb", "head", "proj"}, nil)
	require.ErrorContains(t, err, "no attention softmax")
	_, err = blocks.Split(build(true, true), []string{"emb", "head", "proj"}, nil)
	require.ErrorContains(t, err, "does not act on each position alone")
	p, err := blocks.Split(build(true, false), []string{"emb", "head", "proj"}, nil)
	require.NoError(t, err)
	require.Len(t, p.Blocks, 1)
	require.NotNil(t, p.Blocks[0].Core, p.Blocks[0].CoreNote)
}

// TestSplitTailNeedsPositionwise: when the MLP mixes positions (here its
// output gets its mean over the positions added), the layer has no
// position-wise tail, so it runs whole; with the MLP intact it has one.
func TestSplitTailNeedsPositionwise(t *testing.T) {
	for _, mix := range []bool{false, true} {
		m, err := qwen3.Build(qwen3.Tiny(), 1)
		require.NoError(t, err)
		g := m.Graph()
		if mix {
			g.Initializer = append(g.Initializer, onnx.NewTensor("positions_axis", []int64{1}, []int64{1}))
			var extra []*onnxpb.NodeProto
			for _, n := range g.GetNode() {
				if n.GetOpType() != "MatMul" || !strings.Contains(n.GetInput()[1], "down_proj") {
					continue
				}
				o := n.GetOutput()[0]
				n.Output[0] = o + "_raw"
				extra = append(extra,
					&onnxpb.NodeProto{OpType: proto.String("ReduceMean"), Input: []string{o + "_raw", "positions_axis"}, Output: []string{o + "_mean"}},
					&onnxpb.NodeProto{OpType: proto.String("Add"), Input: []string{o + "_raw", o + "_mean"}, Output: []string{o}})
			}
			require.Len(t, extra, 2*qwen3.Tiny().Layers)
			// Insert each pair right after its MatMul (topological order).
			var nodes []*onnxpb.NodeProto
			for _, n := range g.GetNode() {
				nodes = append(nodes, n)
				if n.GetOpType() == "MatMul" && strings.Contains(n.GetInput()[1], "down_proj") {
					nodes, extra = append(nodes, extra[:2]...), extra[2:]
				}
			}
			g.Node = nodes
		}
		fm, params := forward(t, m)
		p, err := blocks.Split(fm, params, nil)
		require.NoError(t, err)
		for i, b := range p.Blocks {
			require.NotNil(t, b.Core, "layer %d", i)
			require.NotNil(t, b.Post, "layer %d", i)
			mlpInTail := b.Tail != nil && slices.ContainsFunc(b.Tail.Weights, func(w string) bool { return strings.Contains(w, "down_proj") })
			require.Equal(t, !mix, mlpInTail, "mix %v, layer %d", mix, i)
			if mix && i < len(p.Blocks)-1 {
				// The last layer keeps a tail: the final norm after its
				// output, position-wise on its own.
				require.Nil(t, b.Tail, "layer %d", i)
				require.Contains(t, b.Post.Outputs, b.Output, "Post runs to the layer's output")
			}
		}
	}
}
