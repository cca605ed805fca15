package model

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

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

// TestInPlaceDecodeAllOrNothing checks that a graph whose attention has
// another form in any layer gets no decode graph (generation then runs
// on the sampling graph alone): a Tanh (as a soft cap would be) between
// the masked scores and the Softmax, a present read by another node, a
// head width GroupQueryAttention does not take, an unknown head count.
func TestInPlaceDecodeAllOrNothing(t *testing.T) {
	tiny, err := qwen3.Build(qwen3.Tiny(), 3)
	require.NoError(t, err)
	sig, err := ReadSignature(tiny.Graph(), "tiny")
	require.NoError(t, err)
	base := lastPositionLogits(tiny.Proto)
	require.True(t, withNewKV(base, sig.Layers))
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
