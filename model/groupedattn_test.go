package model_test

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	ort "github.com/yalue/onnxruntime_go"
	"google.golang.org/protobuf/proto"

	"github.com/spiral-rl/spiral/model"
	"github.com/spiral-rl/spiral/model/modeltest"
	"github.com/spiral-rl/spiral/model/onnx"
	"github.com/spiral-rl/spiral/model/onnx/onnxpb"
	"github.com/spiral-rl/spiral/model/qwen3"
)

// TestGroupedAttentionShapes checks the shapes the rewrite computes for
// the Shape nodes that read the removed repeats: the tiny model (4 query
// heads over 2 KV heads) with every value of layer 0's key and value
// repeats read by a Shape node that is a graph output, run by ONNX Runtime
// before and after the rewrite on 2 rows of 5 cached and 3 new positions.
// Each shape must be the one ONNX Runtime gives the original value.
func TestGroupedAttentionShapes(t *testing.T) {
	rt := modeltest.Runtime(t)
	m, err := qwen3.Build(qwen3.Tiny(), 3)
	require.NoError(t, err)
	g := m.Graph()
	consumers := map[string][]*onnxpb.NodeProto{}
	for _, n := range g.GetNode() {
		for _, in := range n.GetInput() {
			consumers[in] = append(consumers[in], n)
		}
	}
	var shapes []string
	for _, present := range []string{model.PresentName(0, false), model.PresentName(0, true)} {
		v := present
		for depth := 0; ; depth++ {
			next := consumers[v]
			require.Len(t, next, 1, "%s has one reader", v)
			n := next[0]
			if n.GetOpType() == "MatMul" {
				break
			}
			v = n.GetOutput()[0]
			name := fmt.Sprintf("test/shape/%s/%d", present, depth)
			g.Node = append(g.Node, &onnxpb.NodeProto{OpType: proto.String("Shape"), Name: proto.String(name), Input: []string{v}, Output: []string{name}})
			g.Output = append(g.Output, &onnxpb.ValueInfoProto{Name: proto.String(name), Type: &onnxpb.TypeProto{Value: &onnxpb.TypeProto_TensorType{
				TensorType: &onnxpb.TypeProto_Tensor{ElemType: proto.Int32(int32(onnxpb.TensorProto_INT64)), Shape: &onnxpb.TensorShapeProto{Dim: []*onnxpb.TensorShapeProto_Dimension{{}}}}}}})
			shapes = append(shapes, name)
		}
	}
	require.Len(t, shapes, 3+4, "the keys' Unsqueeze, Expand, Reshape and Transpose; the values' first three")
	rewritten, err := model.SamplingGraph(m.Proto)
	require.NoError(t, err)
	sig, err := model.ReadSignature(rewritten.GetGraph(), "rewritten")
	require.NoError(t, err)
	require.True(t, sig.GroupedAttention)

	run := func(mp *onnxpb.ModelProto) [][]int64 {
		t.Helper()
		path := filepath.Join(t.TempDir(), "model.onnx")
		require.NoError(t, onnx.Save(path, &onnx.Model{Proto: mp}, onnx.SaveOptions{}))
		src, err := onnx.LoadGraph(path)
		require.NoError(t, err)
		ssig, err := model.ReadSignature(src.Graph(), path)
		require.NoError(t, err)
		const rows, past, S = 2, 5, 3
		var names []string
		var inputs []ort.Value
		add := func(name string, v ort.Value, err error) {
			require.NoError(t, err)
			names, inputs = append(names, name), append(inputs, v)
		}
		ids := make([]int64, rows*S)
		for i := range ids {
			ids[i] = int64(1 + i)
		}
		v, err := ort.NewTensor(ort.NewShape(rows, S), ids)
		add(model.InputIDs, v, err)
		mask := make([]int64, rows*(past+S))
		for i := range mask {
			mask[i] = 1
		}
		v, err = ort.NewTensor(ort.NewShape(rows, past+S), mask)
		add(model.AttentionMask, v, err)
		pos := make([]int64, rows*S)
		for i := range pos {
			pos[i] = int64(past + i%S)
		}
		v, err = ort.NewTensor(ort.NewShape(rows, S), pos)
		add(model.PositionIDs, v, err)
		for l := range ssig.Layers {
			for _, value := range []bool{false, true} {
				kv := make([]float32, rows*ssig.KVHeads*past*ssig.HeadDim)
				v, err := ort.NewTensor(ort.NewShape(rows, int64(ssig.KVHeads), past, int64(ssig.HeadDim)), kv)
				add(model.PastName(l, value), v, err)
			}
		}
		defer func() {
			for _, v := range inputs {
				v.Destroy()
			}
		}()
		so, err := rt.NewSessionOptions()
		require.NoError(t, err)
		defer so.Destroy()
		s, err := ort.NewDynamicAdvancedSession(path, names, shapes, so)
		require.NoError(t, err)
		defer s.Destroy()
		outs := make([]ort.Value, len(shapes))
		require.NoError(t, s.Run(inputs, outs))
		var got [][]int64
		for _, o := range outs {
			got = append(got, o.(*ort.Tensor[int64]).GetData())
			o.Destroy()
		}
		return got
	}
	want, got := run(m.Proto), run(rewritten)
	for i, name := range shapes {
		require.Equal(t, want[i], got[i], name)
	}
	require.Equal(t, []int64{2, 4, 8, 32}, want[2], "the repeated keys: [rows, heads, positions, head_dim]")
}
