package model

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/spiral-rl/spiral/model/onnx"
	"github.com/spiral-rl/spiral/model/onnx/onnxpb"
	"github.com/spiral-rl/spiral/model/qwen3"
)

// groupedSources are exports of Qwen3 whose attention groupedAttention
// rewrites: spiral's own builder (repeats by Expand, scale after the
// MatMul; none with as many KV heads as query heads), the TorchScript
// exports of HF and optimum (optimum scales the transposed keys, and
// sizes its mask from the repeated keys' shape), and PyTorch's dynamo
// export.
func groupedSources(t *testing.T) map[string]*onnxpb.ModelProto {
	t.Helper()
	tiny, err := qwen3.Build(qwen3.Tiny(), 3)
	require.NoError(t, err)
	c := qwen3.Tiny()
	c.KVHeads = c.Heads
	mha, err := qwen3.Build(c, 3)
	require.NoError(t, err)
	out := map[string]*onnxpb.ModelProto{"tiny": tiny.Proto, "tiny-mha": mha.Proto}
	for name, dir := range map[string]string{"hf": "hfqwen3", "optimum": "optimumqwen3", "dynamo": "dynamoqwen3"} {
		m, err := onnx.Load(filepath.Join("testdata", dir, "model.onnx"))
		require.NoError(t, err)
		out[name] = m.Proto
	}
	return out
}

// TestGroupedAttentionRepeatsNothing checks what the rewrite is for: in
// the sampling graph of each export, each layer's present keys and values
// (past and new positions) are read by one matrix product each, and by
// Shape nodes: no Expand repeats them over the query heads, and the keys
// are not transposed. The outputs' equality with the export is
// TestExtendMatchesForward's.
func TestGroupedAttentionRepeatsNothing(t *testing.T) {
	for name, src := range groupedSources(t) {
		t.Run(name, func(t *testing.T) {
			sig, err := ReadSignature(src.GetGraph(), name)
			require.NoError(t, err)
			m, _ := samplingGraphs(src, sig, HFConfig{})
			got, err := ReadSignature(m.GetGraph(), name)
			require.NoError(t, err)
			require.True(t, got.GroupedAttention)
			require.True(t, got.NewKV)
			for i := range sig.Layers {
				for value, want := range map[bool]string{false: "FusedMatMul", true: "MatMul"} {
					var readers []string
					for _, n := range m.GetGraph().GetNode() {
						if slices.Contains(n.GetInput(), PresentName(i, value)) && n.GetOpType() != "Shape" {
							readers = append(readers, n.GetOpType())
						}
					}
					require.Equal(t, []string{want}, readers, "readers of %s", PresentName(i, value))
				}
			}
		})
	}
}

// tinyBeforeGrouping returns the tiny model's graph as samplingGraphs has
// it just before groupedAttention, and its signature.
func tinyBeforeGrouping(t *testing.T) (*onnxpb.ModelProto, *Signature) {
	t.Helper()
	src, err := qwen3.Build(qwen3.Tiny(), 3)
	require.NoError(t, err)
	sig, err := ReadSignature(src.Graph(), "tiny")
	require.NoError(t, err)
	m := lastPositionLogits(src.Proto)
	require.True(t, withNewKV(m, sig.Layers))
	return m, sig
}

// TestGroupedAttentionAllOrNothing checks that a graph with one layer
// outside the pattern is left as it was (the export's attention then
// runs as written) rather than rewritten in part.
func TestGroupedAttentionAllOrNothing(t *testing.T) {
	m, sig := tinyBeforeGrouping(t)
	// An Identity between the last layer's repeated keys and their
	// transpose: the same function, not the pattern.
	g := m.GetGraph()
	var transposes []*onnxpb.NodeProto
	for _, n := range g.GetNode() {
		if n.GetOpType() == "Transpose" && isLastTwoSwapped(n) {
			transposes = append(transposes, n)
		}
	}
	require.Len(t, transposes, sig.Layers)
	last := transposes[len(transposes)-1]
	g.Node = append(g.Node, &onnxpb.NodeProto{OpType: proto.String("Identity"), Name: proto.String("test/identity"),
		Input: []string{last.Input[0]}, Output: []string{"test/keys"}})
	last.Input[0] = "test/keys"
	sortTopologically(g)
	before := proto.Clone(m)
	require.False(t, groupedAttention(m, sig))
	require.True(t, proto.Equal(before, m), "the graph is left as it was")
}

// SamplingGraph is, for tests, the sampling graph of m as artifacts
// write it (last-position logits, new keys and values, grouped attention).
func SamplingGraph(m *onnxpb.ModelProto) (*onnxpb.ModelProto, error) {
	sig, err := ReadSignature(m.GetGraph(), "model")
	if err != nil {
		return nil, err
	}
	sample, _ := samplingGraphs(m, sig, HFConfig{})
	return sample, nil
}

// TestGroupedAttentionSkipsSubgraphs checks that a graph holding a
// subgraph (If, Loop), which may read any value, is left as it was: the
// repeats could not be pruned, and the call budget would count them out.
func TestGroupedAttentionSkipsSubgraphs(t *testing.T) {
	m, sig := tinyBeforeGrouping(t)
	g := m.GetGraph()
	g.Node = append(g.Node, &onnxpb.NodeProto{OpType: proto.String("If"), Name: proto.String("test/if"),
		Input: []string{"test/cond"}, Output: []string{"test/branch"},
		Attribute: []*onnxpb.AttributeProto{{Name: proto.String("then_branch"), Type: onnxpb.AttributeProto_GRAPH.Enum(),
			G: &onnxpb.GraphProto{Name: proto.String("then")}}}})
	before := proto.Clone(m)
	require.False(t, groupedAttention(m, sig))
	require.True(t, proto.Equal(before, m), "the graph is left as it was")
}
