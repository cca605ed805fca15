package model

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/spiral-rl/spiral/model/onnx"
	"github.com/spiral-rl/spiral/model/onnx/onnxpb"
	"github.com/spiral-rl/spiral/model/qwen3"
)

// TestInPlaceDecodeForm checks the decode graph of every export
// groupedSources holds (TestExtendMatchesForward checks its logits
// against the export's): each layer's attention is one
// GroupQueryAttention reading its layer's past and writing that
// layer's present, which the graph outputs beside the logits (no new
// keys and values of their own); nothing else reads a present, and the
// past is read by that attention or for its shape only: no Concat
// copies it. The sampling graph it was made from is left as it was.
func TestInPlaceDecodeForm(t *testing.T) {
	for name, src := range groupedSources(t) {
		t.Run(name, func(t *testing.T) {
			sig, err := ReadSignature(src.GetGraph(), name)
			require.NoError(t, err)
			m := lastPositionLogits(src)
			require.True(t, withNewKV(m, sig.Layers))
			before := proto.Clone(m)
			// The TorchScript exports' query heads are known from config.json
			// only (their shapes are computed at run time).
			d := inPlaceDecode(m, sig, qwen3.Tiny().Heads)
			require.NotNil(t, d)
			require.True(t, proto.Equal(before, m), "the sampling graph is left as it was")
			require.Equal(t, int64(1), (&onnx.Model{Proto: d}).Opset("com.microsoft"), "the contrib domain is imported, as ONNX requires of GroupQueryAttention's")

			g := d.GetGraph()
			var outs []string
			for _, o := range g.GetOutput() {
				outs = append(outs, o.GetName())
			}
			want := []string{LogitsOutput}
			for i := range sig.Layers {
				want = append(want, PresentName(i, false), PresentName(i, true))
			}
			require.ElementsMatch(t, want, outs)
			var ins []string
			for _, in := range g.GetInput() {
				ins = append(ins, in.GetName())
			}
			require.Subset(t, ins, []string{DecodeSeqLens, DecodeTotal})

			gqa := 0
			for _, n := range g.GetNode() {
				if n.GetOpType() == "GroupQueryAttention" {
					require.Equal(t, "com.microsoft", n.GetDomain())
					require.Len(t, n.Output, 3)
					i := gqa
					require.Equal(t, []string{PastName(i, false), PastName(i, true), DecodeSeqLens, DecodeTotal}, n.Input[3:])
					require.Equal(t, []string{PresentName(i, false), PresentName(i, true)}, n.Output[1:])
					gqa++
					continue
				}
				for _, in := range n.GetInput() {
					require.False(t, presentRe.MatchString(in), "%s %s reads %s", n.GetOpType(), n.GetName(), in)
					if pastRe.MatchString(in) {
						require.Equal(t, "Shape", n.GetOpType(), "%s reads %s", n.GetName(), in)
					}
				}
			}
			require.Equal(t, sig.Layers, gqa)
		})
	}
}

// tinyNewKV returns the tiny model's sampling graph in the form
// inPlaceDecode takes (last-position logits, each layer's new keys and
// values an output of their own), a fresh copy each call, and its
// signature.
func tinyNewKV(t *testing.T) (*onnxpb.ModelProto, *Signature) {
	t.Helper()
	tiny, err := qwen3.Build(qwen3.Tiny(), 3)
	require.NoError(t, err)
	sig, err := ReadSignature(tiny.Graph(), "tiny")
	require.NoError(t, err)
	m := lastPositionLogits(tiny.Proto)
	require.True(t, withNewKV(m, sig.Layers))
	return m, sig
}

// TestInPlaceDecodeAllOrNothing checks that a graph whose attention has
// another form in any layer gets no decode graph (generation then runs
// on the sampling graph alone): a Tanh (as a soft cap would be) between
// the masked scores and the Softmax, a present read by another node, a
// head width GroupQueryAttention does not take, an unknown head count.
func TestInPlaceDecodeAllOrNothing(t *testing.T) {
	base, sig := tinyNewKV(t)
	require.NotNil(t, inPlaceDecode(base, sig, 0), "the builder's shapes tell the heads")

	t.Run("soft cap", func(t *testing.T) {
		m := proto.Clone(base).(*onnxpb.ModelProto)
		g := m.GetGraph()
		var softmaxes []*onnxpb.NodeProto
		for _, n := range g.GetNode() {
			if n.GetOpType() == "Softmax" {
				softmaxes = append(softmaxes, n)
			}
		}
		require.Len(t, softmaxes, sig.Layers)
		last := softmaxes[len(softmaxes)-1]
		g.Node = append(g.Node, &onnxpb.NodeProto{OpType: proto.String("Tanh"), Name: proto.String("test/tanh"),
			Input: []string{last.Input[0]}, Output: []string{"test/capped"}})
		last.Input[0] = "test/capped"
		sortTopologically(g)
		require.Nil(t, inPlaceDecode(m, sig, 0))
	})
	t.Run("present read", func(t *testing.T) {
		m := proto.Clone(base).(*onnxpb.ModelProto)
		g := m.GetGraph()
		g.Node = append(g.Node, &onnxpb.NodeProto{OpType: proto.String("ReduceSum"), Name: proto.String("test/sum"),
			Input: []string{PresentName(1, true)}, Output: []string{"test/sum"}})
		g.Output = append(g.Output, &onnxpb.ValueInfoProto{Name: proto.String("test/sum")})
		require.Nil(t, inPlaceDecode(m, sig, 0))
	})
	t.Run("head width 12", func(t *testing.T) {
		c := qwen3.Tiny()
		c.HeadDim = 12
		m, err := qwen3.Build(c, 3)
		require.NoError(t, err)
		sig, err := ReadSignature(m.Graph(), "tiny")
		require.NoError(t, err)
		s := lastPositionLogits(m.Proto)
		require.True(t, withNewKV(s, sig.Layers))
		require.Nil(t, inPlaceDecode(s, sig, c.Heads))
	})
	t.Run("heads unknown", func(t *testing.T) {
		m := proto.Clone(base).(*onnxpb.ModelProto)
		g := m.GetGraph()
		// Every reshape to a 4-D shape reads an input now, so that no
		// shape inference can tell the query heads.
		g.Input = append(g.Input, &onnxpb.ValueInfoProto{Name: proto.String("test/shape"), Type: &onnxpb.TypeProto{
			Value: &onnxpb.TypeProto_TensorType{TensorType: &onnxpb.TypeProto_Tensor{ElemType: proto.Int32(int32(onnxpb.TensorProto_INT64)),
				Shape: &onnxpb.TensorShapeProto{Dim: []*onnxpb.TensorShapeProto_Dimension{{Value: &onnxpb.TensorShapeProto_Dimension_DimValue{DimValue: 4}}}}}}}})
		producer := map[string]*onnxpb.NodeProto{}
		for _, n := range g.GetNode() {
			for _, o := range n.Output {
				producer[o] = n
			}
		}
		changed := 0
		for _, n := range g.GetNode() {
			if n.GetOpType() != "Reshape" || len(n.Input) != 2 {
				continue
			}
			if shape := constTensor(g, producer, n.Input[1]); shape != nil && slices.Equal(shape.GetDims(), []int64{4}) {
				n.Input[1] = "test/shape"
				changed++
			}
		}
		require.Positive(t, changed)
		require.Nil(t, inPlaceDecode(m, sig, 0))
		require.NotNil(t, inPlaceDecode(m, sig, qwen3.Tiny().Heads), "config.json's heads serve")
	})
}

// TestSlidingWindowActive reads config.json's window as Mistral's and
// Qwen3's configs write it, and samplingGraphs makes no decode graph
// under an active one: GroupQueryAttention's own mask would attend past
// the window.
func TestSlidingWindowActive(t *testing.T) {
	for _, c := range []struct {
		config string
		active bool
	}{
		{`{}`, false},
		{`{"sliding_window": null}`, false},
		{`{"sliding_window": 4096}`, true}, // Mistral 7B v0.1
		{`{"sliding_window": 32768, "use_sliding_window": false}`, false}, // Qwen3
		{`{"sliding_window": 4096, "use_sliding_window": true}`, true},
		{`{"sliding_window": 0}`, false},
		{`{"sliding_window": [4096, null]}`, true},
	} {
		dir := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(dir, ConfigFile), []byte(c.config), 0o666))
		hf, found, err := ReadHFConfig(filepath.Join(dir, "model.onnx"))
		require.NoError(t, err, c.config)
		require.True(t, found)
		require.Equal(t, c.active, hf.SlidingWindowActive(), c.config)
	}
	tiny, err := qwen3.Build(qwen3.Tiny(), 3)
	require.NoError(t, err)
	sig, err := ReadSignature(tiny.Graph(), "tiny")
	require.NoError(t, err)
	_, decode := samplingGraphs(tiny.Proto, sig, HFConfig{})
	require.NotNil(t, decode)
	_, decode = samplingGraphs(tiny.Proto, sig, HFConfig{SlidingWindow: 4096.0})
	require.Nil(t, decode)
}

// scoresSite is one layer's path from the scores' scaling to the
// Softmax in the tiny model's sampling graph: the Mul by 1/sqrt(D), the
// Add of the mask and the Softmax; mask is the Where making the mask
// (shared by the layers).
type scoresSite struct {
	mul, add, softmax, mask *onnxpb.NodeProto
}

// TestInPlaceDecodeScores checks, on variants of the tiny model's
// sampling graph, what inPlaceDecode reads between the scores and the
// mix: the scale it gives GroupQueryAttention (the product of the
// constants the scores are multiplied or divided by, in any operand
// order and over several nodes), and that it refuses what the kernel
// would not compute as the graph does (a constant divided by the
// scores, a zero factor, a mask that is not 0 where allowed and at most
// -1e30 elsewhere, a mask of another domain, a Softmax over another
// axis, a NaN guard of another value or with a computed fill, a
// present's shape read after the attention).
func TestInPlaceDecodeScores(t *testing.T) {
	base, sig := tinyNewKV(t)
	root := float32(math.Sqrt(float64(sig.HeadDim)))

	// sites finds each layer's scaling, mask and Softmax in g.
	sites := func(t *testing.T, g *onnxpb.GraphProto) []scoresSite {
		producer, _, _ := indexGraph(g)
		var out []scoresSite
		for _, n := range g.GetNode() {
			if n.GetOpType() != "Softmax" {
				continue
			}
			s := scoresSite{softmax: n, add: producer[n.Input[0]]}
			require.Equal(t, "Add", s.add.GetOpType())
			s.mul, s.mask = producer[s.add.Input[0]], producer[s.add.Input[1]]
			require.Equal(t, "Mul", s.mul.GetOpType())
			require.Equal(t, "Where", s.mask.GetOpType())
			out = append(out, s)
		}
		require.Len(t, out, sig.Layers)
		return out
	}
	constant := func(g *onnxpb.GraphProto, name string, v float32) string {
		if !slices.ContainsFunc(g.Initializer, func(t *onnxpb.TensorProto) bool { return t.GetName() == name }) {
			g.Initializer = append(g.Initializer, onnx.NewTensor(name, nil, []float32{v}))
		}
		return name
	}
	// guard puts Where(IsNaN(of(s)), fill(s), probs) between each layer's
	// Softmax and the mix.
	guard := func(of, fill func(g *onnxpb.GraphProto, s scoresSite) string) func(*testing.T, *onnxpb.GraphProto, []scoresSite) {
		return func(t *testing.T, g *onnxpb.GraphProto, ss []scoresSite) {
			_, consumers, _ := indexGraph(g)
			for i, s := range ss {
				probs := s.softmax.Output[0]
				mix := consumers[probs]
				require.Len(t, mix, 1)
				nan, guarded := fmt.Sprint("test/isnan", i), fmt.Sprint("test/guarded", i)
				g.Node = append(g.Node,
					&onnxpb.NodeProto{OpType: proto.String("IsNaN"), Input: []string{of(g, s)}, Output: []string{nan}},
					&onnxpb.NodeProto{OpType: proto.String("Where"), Input: []string{nan, fill(g, s), probs}, Output: []string{guarded}})
				mix[0].Input[0] = guarded
			}
		}
	}
	zeroFill := func(g *onnxpb.GraphProto, s scoresSite) string { return constant(g, "test/zero", 0) }
	for _, c := range []struct {
		name string
		edit func(*testing.T, *onnxpb.GraphProto, []scoresSite)
		// scale is GroupQueryAttention's scale, 0 where there must be
		// no decode graph.
		scale float32
	}{
		{"as built", func(*testing.T, *onnxpb.GraphProto, []scoresSite) {}, 1 / root},
		{"divided by the root", func(_ *testing.T, g *onnxpb.GraphProto, ss []scoresSite) {
			for _, s := range ss {
				s.mul.OpType = proto.String("Div")
				s.mul.Input[1] = constant(g, "test/root", root)
			}
		}, 1 / root},
		{"the constant first", func(_ *testing.T, _ *onnxpb.GraphProto, ss []scoresSite) {
			for _, s := range ss {
				s.mul.Input[0], s.mul.Input[1] = s.mul.Input[1], s.mul.Input[0]
			}
		}, 1 / root},
		{"then halved", func(_ *testing.T, g *onnxpb.GraphProto, ss []scoresSite) {
			for i, s := range ss {
				halved := fmt.Sprint("test/halved", i)
				g.Node = append(g.Node, &onnxpb.NodeProto{OpType: proto.String("Div"), Input: []string{s.mul.Output[0], constant(g, "test/two", 2)}, Output: []string{halved}})
				s.add.Input[0] = halved
			}
		}, 1 / (2 * root)},
		{"a constant divided by the scores", func(_ *testing.T, _ *onnxpb.GraphProto, ss []scoresSite) {
			for _, s := range ss {
				s.mul.OpType = proto.String("Div")
				s.mul.Input[0], s.mul.Input[1] = s.mul.Input[1], s.mul.Input[0]
			}
		}, 0},
		{"times zero", func(_ *testing.T, g *onnxpb.GraphProto, ss []scoresSite) {
			for _, s := range ss {
				s.mul.Input[1] = constant(g, "test/zero", 0)
			}
		}, 0},
		{"the mask first", func(_ *testing.T, _ *onnxpb.GraphProto, ss []scoresSite) {
			for _, s := range ss {
				s.add.Input[0], s.add.Input[1] = s.add.Input[1], s.add.Input[0]
			}
		}, 1 / root},
		{"the mask -1 where hidden", func(_ *testing.T, g *onnxpb.GraphProto, ss []scoresSite) {
			ss[0].mask.Input[2] = constant(g, "test/minus1", -1)
		}, 0},
		{"the mask 0.5 where allowed", func(_ *testing.T, g *onnxpb.GraphProto, ss []scoresSite) {
			ss[0].mask.Input[1] = constant(g, "test/half", 0.5)
		}, 0},
		{"the mask hidden where allowed", func(_ *testing.T, _ *onnxpb.GraphProto, ss []scoresSite) {
			ss[0].mask.Input[1], ss[0].mask.Input[2] = ss[0].mask.Input[2], ss[0].mask.Input[1]
		}, 1 / root}, // Where(cond, -inf, 0): the condition is not read (isBinaryMask)
		{"the mask of another domain", func(_ *testing.T, _ *onnxpb.GraphProto, ss []scoresSite) {
			ss[0].mask.Domain = proto.String("com.example")
		}, 0},
		{"a Softmax over axis 2", func(_ *testing.T, _ *onnxpb.GraphProto, ss []scoresSite) {
			last := ss[len(ss)-1].softmax
			last.Attribute = []*onnxpb.AttributeProto{onnx.AttrInt("axis", 2)}
		}, 0},
		{"a Softmax over axis 3", func(_ *testing.T, _ *onnxpb.GraphProto, ss []scoresSite) {
			for _, s := range ss {
				s.softmax.Attribute = []*onnxpb.AttributeProto{onnx.AttrInt("axis", 3)}
			}
		}, 1 / root},
		{"a NaN guard", func(t *testing.T, g *onnxpb.GraphProto, ss []scoresSite) {
			guard(func(_ *onnxpb.GraphProto, s scoresSite) string { return s.softmax.Output[0] }, zeroFill)(t, g, ss)
		}, 1 / root},
		{"a NaN guard of the mask", func(t *testing.T, g *onnxpb.GraphProto, ss []scoresSite) {
			guard(func(_ *onnxpb.GraphProto, s scoresSite) string { return s.mask.Output[0] }, zeroFill)(t, g, ss)
		}, 0},
		{"a NaN guard filling in the mask", func(t *testing.T, g *onnxpb.GraphProto, ss []scoresSite) {
			guard(func(_ *onnxpb.GraphProto, s scoresSite) string { return s.softmax.Output[0] },
				func(_ *onnxpb.GraphProto, s scoresSite) string { return s.mask.Output[0] })(t, g, ss)
		}, 0},
		{"a present's shape read", func(_ *testing.T, g *onnxpb.GraphProto, _ []scoresSite) {
			g.Node = append(g.Node, &onnxpb.NodeProto{OpType: proto.String("Shape"), Input: []string{PresentName(1, true)}, Output: []string{"test/shape"}})
			g.Output = append(g.Output, &onnxpb.ValueInfoProto{Name: proto.String("test/shape")})
		}, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := proto.Clone(base).(*onnxpb.ModelProto)
			g := m.GetGraph()
			c.edit(t, g, sites(t, g))
			sortTopologically(g)
			d := inPlaceDecode(m, sig, 0)
			if c.scale == 0 {
				require.Nil(t, d)
				return
			}
			require.NotNil(t, d)
			n := 0
			for _, node := range d.GetGraph().GetNode() {
				if node.GetOpType() != "GroupQueryAttention" {
					continue
				}
				n++
				var scale *float32
				for _, a := range node.GetAttribute() {
					if a.GetName() == "scale" {
						scale = proto.Float32(a.GetF())
					}
				}
				require.NotNil(t, scale, "GroupQueryAttention's scale")
				require.InDelta(t, c.scale, *scale, 1e-7)
			}
			require.Equal(t, sig.Layers, n)
		})
	}
}

// TestInPlaceDecodeHeadsFromConfig: where the graph's shapes do not tell
// the query heads, config.json's count serves only when the output
// projection the attention's mix feeds reads its width (heads x head
// width), found by the graph's structure whatever the weights' names,
// and the KV heads divide it; a count it refutes, or one that does not
// group the KV heads, leaves no decode graph (whose kernel would refuse
// every call); so do queries of unknown rank.
func TestInPlaceDecodeHeadsFromConfig(t *testing.T) {
	_, sig := tinyNewKV(t)
	// reshaped is the sampling graph with every reshape to a 4-D shape
	// reading an input, of 4 elements or of an unknown count, so that no
	// shape inference can tell the query heads, or even the queries'
	// rank.
	reshaped := func(rank int64) *onnxpb.ModelProto {
		m, _ := tinyNewKV(t)
		g := m.GetGraph()
		dim := &onnxpb.TensorShapeProto_Dimension{Value: &onnxpb.TensorShapeProto_Dimension_DimParam{DimParam: "rank"}}
		if rank > 0 {
			dim = &onnxpb.TensorShapeProto_Dimension{Value: &onnxpb.TensorShapeProto_Dimension_DimValue{DimValue: rank}}
		}
		g.Input = append(g.Input, &onnxpb.ValueInfoProto{Name: proto.String("test/shape"), Type: &onnxpb.TypeProto{
			Value: &onnxpb.TypeProto_TensorType{TensorType: &onnxpb.TypeProto_Tensor{ElemType: proto.Int32(int32(onnxpb.TensorProto_INT64)),
				Shape: &onnxpb.TensorShapeProto{Dim: []*onnxpb.TensorShapeProto_Dimension{dim}}}}}})
		producer, _, _ := indexGraph(g)
		for _, n := range g.GetNode() {
			if n.GetOpType() != "Reshape" || len(n.Input) != 2 {
				continue
			}
			if shape := constTensor(g, producer, n.Input[1]); shape != nil && slices.Equal(shape.GetDims(), []int64{4}) {
				n.Input[1] = "test/shape"
			}
		}
		return m
	}
	m, unranked := reshaped(4), reshaped(0)
	// unnamed is m with every weight renamed as TorchScript exports name
	// them (onnx::MatMul_N): the count is checked against the output
	// projection found by the graph's structure, not by name.
	unnamed := proto.Clone(m).(*onnxpb.ModelProto)
	renamed := 0
	for i, w := range unnamed.GetGraph().GetInitializer() {
		if len(w.GetDims()) != 2 {
			continue
		}
		old := w.GetName()
		w.Name = proto.String("onnx::MatMul_" + strconv.Itoa(i))
		for _, n := range unnamed.GetGraph().GetNode() {
			for i, in := range n.Input {
				if in == old {
					n.Input[i] = w.GetName()
				}
			}
		}
		if strings.HasSuffix(old, "o_proj.weight") {
			renamed++
		}
	}
	require.Equal(t, sig.Layers, renamed)

	c := qwen3.Tiny() // hidden 64, 4 heads of 32, 2 KV heads: o_proj [128, 64]
	for _, tc := range []struct {
		name  string
		m     *onnxpb.ModelProto
		heads int
		ok    bool
	}{
		{"config's count", m, c.Heads, true},
		{"no count", m, 0, false},
		{"a count of 8: width 256", m, 8, false},
		{"a count of 6: width 192", m, 6, false},
		{"a count of 2: width 64, the hidden size", m, 2, false},
		{"anonymous weights, config's count", unnamed, c.Heads, true},
		{"anonymous weights, a count of 3 over 2 KV heads", unnamed, 3, false},
		{"anonymous weights, a count of 2", unnamed, 2, false},
		{"queries of unknown rank", unranked, c.Heads, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := inPlaceDecode(tc.m, sig, tc.heads)
			if !tc.ok {
				require.Nil(t, d)
				return
			}
			require.NotNil(t, d)
			for _, n := range d.GetGraph().GetNode() {
				if n.GetOpType() == "GroupQueryAttention" {
					for _, a := range n.GetAttribute() {
						if a.GetName() == "num_heads" {
							require.Equal(t, int64(tc.heads), a.GetI())
						}
					}
				}
			}
		})
	}
}
