package model_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/spiral-rl/spiral/model"
	"github.com/spiral-rl/spiral/model/onnx/onnxpb"
)

// vi builds a tensor ValueInfo; a negative dim is symbolic.
func vi(name string, dt onnxpb.TensorProto_DataType, dims ...int64) *onnxpb.ValueInfoProto {
	shape := &onnxpb.TensorShapeProto{}
	for _, d := range dims {
		if d < 0 {
			shape.Dim = append(shape.Dim, &onnxpb.TensorShapeProto_Dimension{Value: &onnxpb.TensorShapeProto_Dimension_DimParam{DimParam: "n"}})
		} else {
			shape.Dim = append(shape.Dim, &onnxpb.TensorShapeProto_Dimension{Value: &onnxpb.TensorShapeProto_Dimension_DimValue{DimValue: d}})
		}
	}
	return &onnxpb.ValueInfoProto{Name: proto.String(name), Type: &onnxpb.TypeProto{Value: &onnxpb.TypeProto_TensorType{
		TensorType: &onnxpb.TypeProto_Tensor{ElemType: proto.Int32(int32(dt)), Shape: shape}}}}
}

// lmGraph returns the interface of a 2-layer LM with 2 KV heads, head_dim
// 8 and vocab 50 (no nodes: ReadSignature reads the interface only).
func lmGraph() *onnxpb.GraphProto {
	i64, f32 := onnxpb.TensorProto_INT64, onnxpb.TensorProto_FLOAT
	g := &onnxpb.GraphProto{
		Input: []*onnxpb.ValueInfoProto{
			vi("input_ids", i64, -1, -1), vi("attention_mask", i64, -1, -1), vi("position_ids", i64, -1, -1),
		},
		Output: []*onnxpb.ValueInfoProto{vi("logits", f32, -1, -1, 50)},
	}
	for i := 0; i < 2; i++ {
		for _, v := range []bool{false, true} {
			g.Input = append(g.Input, vi(model.PastName(i, v), f32, -1, 2, -1, 8))
			g.Output = append(g.Output, vi(model.PresentName(i, v), f32, -1, 2, -1, 8))
		}
	}
	return g
}

func TestReadSignature(t *testing.T) {
	g := lmGraph()
	g.Input = append(g.Input, vi("model.norm.weight", onnxpb.TensorProto_FLOAT, 16))
	sig, err := model.ReadSignature(g, "m.onnx")
	require.NoError(t, err)
	require.Equal(t, 2, sig.Layers)
	require.Equal(t, 2, sig.KVHeads)
	require.Equal(t, 8, sig.HeadDim)
	require.Equal(t, 50, sig.Vocab)
	require.True(t, sig.HasPositionIDs)
	require.Len(t, sig.Weights, 1)
	require.Equal(t, "model.norm.weight", sig.Weights[0].Name)
}

func TestReadSignatureErrors(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(g *onnxpb.GraphProto)
		want   string
	}{
		{"no logits", func(g *onnxpb.GraphProto) { g.Output = g.Output[1:] }, `m.onnx: graph has no "logits" output`},
		{"no cache", func(g *onnxpb.GraphProto) { g.Input = g.Input[:3] }, "unrecognised cache layout"},
		{"missing value of layer 1", func(g *onnxpb.GraphProto) { g.Input = g.Input[:len(g.Input)-1] }, "layer 1 has 1 of past_key_values.1.key|value"},
		{"fp16 cache", func(g *onnxpb.GraphProto) {
			g.Input[3] = vi(model.PastName(0, false), onnxpb.TensorProto_FLOAT16, -1, 2, -1, 8)
		}, "only float32 caches"},
		{"symbolic head dim", func(g *onnxpb.GraphProto) {
			g.Input[3] = vi(model.PastName(0, false), onnxpb.TensorProto_FLOAT, -1, 2, -1, -1)
		}, "static kv_heads and head_dim"},
		{"no input_ids", func(g *onnxpb.GraphProto) { g.Input = g.Input[1:] }, `no "input_ids" input`},
		{"int32 mask", func(g *onnxpb.GraphProto) { g.Input[1] = vi("attention_mask", onnxpb.TensorProto_INT32, -1, -1) }, "want int64"},
		{"unknown int input", func(g *onnxpb.GraphProto) {
			g.Input = append(g.Input, vi("token_type_ids", onnxpb.TensorProto_INT64, -1, -1))
		}, `unrecognised input "token_type_ids"`},
		{"missing present", func(g *onnxpb.GraphProto) { g.Output = g.Output[:len(g.Output)-1] }, `no "present.1.value" output`},
		{"key of layer 0 listed twice, no value", func(g *onnxpb.GraphProto) {
			g.Input[4] = vi(model.PastName(0, false), onnxpb.TensorProto_FLOAT, -1, 2, -1, 8)
		},
			`input "past_key_values.0.key" is listed twice`},
		{"layer number with a leading zero", func(g *onnxpb.GraphProto) {
			g.Input[4] = vi("past_key_values.00.value", onnxpb.TensorProto_FLOAT, -1, 2, -1, 8)
		}, `cache input "past_key_values.00.value": want layers numbered without leading zeros (past_key_values.0.value)`},
		{"layer number past int", func(g *onnxpb.GraphProto) {
			g.Input[6] = vi("past_key_values.99999999999999999999.value", onnxpb.TensorProto_FLOAT, -1, 2, -1, 8)
		}, `cache input "past_key_values.99999999999999999999.value"`},
		{"symbolic vocab", func(g *onnxpb.GraphProto) { g.Output[0] = vi("logits", onnxpb.TensorProto_FLOAT, -1, -1, -1) }, "static vocab"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := lmGraph()
			c.mutate(g)
			_, err := model.ReadSignature(g, "m.onnx")
			require.ErrorContains(t, err, c.want)
		})
	}
}
