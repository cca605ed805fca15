package lmgraph_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/spiral-rl/spiral/model/lmgraph"
	"github.com/spiral-rl/spiral/model/onnx/onnxpb"
)

func TestLoRAValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		l    lmgraph.LoRA
		err  string
	}{
		{"off", lmgraph.LoRA{}, ""},
		{"default targets", lmgraph.LoRA{Rank: 16, Alpha: 32, Targets: lmgraph.LoRATargets}, ""},
		{"negative rank", lmgraph.LoRA{Rank: -1}, "rank -1"},
		{"zero alpha", lmgraph.LoRA{Rank: 4, Targets: []string{"q_proj"}}, "alpha 0"},
		{"no targets", lmgraph.LoRA{Rank: 4, Alpha: 8}, "none given"},
		// A scale that float32 rounds to zero (or to a subnormal) left the
		// adapters untrained: sft --lora-rank 4 --lora-alpha 1e-46 ran
		// with gradient norm 0 at every step, its model the base's.
		{"scale vanishing in float32", lmgraph.LoRA{Rank: 4, Alpha: 1e-46, Targets: []string{"q_proj"}},
			"lora alpha 1e-46: alpha / rank (2.5e-47) is below float32's smallest normal value 1.1754943508222875e-38, in which the adapters' product and their gradients vanish"},
		{"subnormal scale", lmgraph.LoRA{Rank: 2, Alpha: 2e-38, Targets: []string{"q_proj"}}, "alpha / rank (1e-38) is below"},
		{"smallest normal scale", lmgraph.LoRA{Rank: 1, Alpha: 1.1754943508222875e-38, Targets: []string{"q_proj"}}, ""},
		{"unknown target", lmgraph.LoRA{Rank: 4, Alpha: 8, Targets: []string{"q_proj", "lm_head"}}, `"lm_head"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.l.Validate()
			if tc.err == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tc.err)
		})
	}
	require.Equal(t, 2.0, lmgraph.LoRA{Rank: 16, Alpha: 32}.Scale())
}

// TestAddLoRA rewrites y = x W into y = x W + s x A B and refuses a base
// that no MatMul reads as its right operand.
func TestAddLoRA(t *testing.T) {
	graph := func(op string) *onnxpb.GraphProto {
		return &onnxpb.GraphProto{Node: []*onnxpb.NodeProto{{OpType: proto.String(op), Input: []string{"x", "W"}, Output: []string{"y"}}}}
	}
	a := lmgraph.Adapter{Module: "model.layers.0.mlp.up_proj", Base: "W", A: "WA", B: "WB", In: 8, Out: 5}
	g := graph("MatMul")
	require.NoError(t, lmgraph.AddLoRA(g, []lmgraph.Adapter{a}, lmgraph.LoRA{Rank: 2, Alpha: 4, Targets: []string{"up_proj"}}))
	var ops []string
	for _, n := range g.GetNode() {
		ops = append(ops, n.GetOpType())
	}
	require.Equal(t, []string{"MatMul", "MatMul", "MatMul", "Mul", "Add"}, ops)
	require.Equal(t, "y", g.GetNode()[4].GetOutput()[0], "the sum takes the original output's name")
	require.Equal(t, []string{"x", "WA"}, g.GetNode()[1].GetInput())
	dims := map[string][]int64{}
	for _, init := range g.GetInitializer() {
		dims[init.GetName()] = init.GetDims()
		if len(init.GetFloatData()) == 1 {
			require.InDelta(t, 2.0, init.GetFloatData()[0], 0, "scale alpha / rank")
		}
	}
	require.Equal(t, []int64{8, 2}, dims["WA"])
	require.Equal(t, []int64{2, 5}, dims["WB"])

	require.ErrorContains(t, lmgraph.AddLoRA(graph("Gemm"), []lmgraph.Adapter{a}, lmgraph.LoRA{Rank: 2, Alpha: 4}), `"W"`)
}

// A malformed MatMul reading a base (no output, or an unnamed one) is an
// error naming it, not a panic or an adapter summed into nothing.
func TestAddLoRAMalformedMatMul(t *testing.T) {
	a := lmgraph.Adapter{Module: "model.layers.0.mlp.up_proj", Base: "W", A: "WA", B: "WB", In: 8, Out: 5}
	for _, tc := range []struct {
		name string
		out  []string
	}{
		{"no output", nil},
		{"unnamed output", []string{""}},
		{"two outputs", []string{"y", "z"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := &onnxpb.GraphProto{Node: []*onnxpb.NodeProto{{Name: proto.String("/mlp/up_proj/MatMul"), OpType: proto.String("MatMul"), Input: []string{"x", "W"}, Output: tc.out}}}
			var err error
			require.NotPanics(t, func() {
				err = lmgraph.AddLoRA(g, []lmgraph.Adapter{a}, lmgraph.LoRA{Rank: 2, Alpha: 4, Targets: []string{"up_proj"}})
			})
			require.ErrorContains(t, err, `MatMul node "/mlp/up_proj/MatMul" reading "W"`)
		})
	}
}
