package model_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/spiral-rl/spiral/model"
	"github.com/spiral-rl/spiral/model/onnx"
	"github.com/spiral-rl/spiral/model/onnx/onnxpb"
)

// TestPrepareArtifactsRefusesUnsupportedOperators: a source model of an
// IR version, standard opset or operator that the generated graphs could
// not run is refused before any graph is generated, in an error naming
// the source file and what is unsupported (ONNX Runtime named the
// generated sample.onnx or a training piece, and a renamed node).
func TestPrepareArtifactsRefusesUnsupportedOperators(t *testing.T) {
	const softmax = "/model/layers.0/self_attn/Softmax"
	// firstSoftmax returns the first Softmax node of the tiny model.
	firstSoftmax := func(t *testing.T, m *onnx.Model) *onnxpb.NodeProto {
		for _, n := range m.Graph().GetNode() {
			if n.GetOpType() == "Softmax" {
				n.Name = proto.String(softmax)
				return n
			}
		}
		t.Fatal("the tiny model has no Softmax")
		return nil
	}
	setOpset := func(v int64) func(*testing.T, *onnx.Model) {
		return func(_ *testing.T, m *onnx.Model) {
			m.Proto.OpsetImport = []*onnxpb.OperatorSetIdProto{{Domain: proto.String(""), Version: proto.Int64(v)}}
		}
	}
	tests := []struct {
		name string
		edit func(*testing.T, *onnx.Model)
		want []string // nil: accepted
	}{
		{name: "opset 18", edit: setOpset(18)},
		{name: "opset 26", edit: setOpset(26)},
		{name: "opset 17", edit: setOpset(17), want: []string{"imports ONNX opset 17", "opset 18 to 26"}},
		{name: "opset 27", edit: setOpset(27), want: []string{"imports ONNX opset 27", "ONNX Runtime " + model.ORTVersion + " runs opsets up to 26", "opset 18 to 26"}},
		{name: "no standard opset", edit: func(_ *testing.T, m *onnx.Model) { m.Proto.OpsetImport = nil }, want: []string{"imports no standard ONNX opset", "opset 18 to 26"}},
		{name: "IR version 14", edit: func(_ *testing.T, m *onnx.Model) { m.Proto.IrVersion = proto.Int64(14) }, want: []string{"ONNX IR version 14", "IR versions up to 13"}},
		{name: "unknown operator", edit: func(t *testing.T, m *onnx.Model) { firstSoftmax(t, m).OpType = proto.String("FancySoftmax") },
			want: []string{`node "` + softmax + `"`, `op type "FancySoftmax"`, "not a standard ONNX operator (ai.onnx, opset 18)", "opsets 18 to 26"}},
		{name: "operator of a later opset", edit: func(t *testing.T, m *onnx.Model) { firstSoftmax(t, m).OpType = proto.String("Swish") },
			want: []string{`node "` + softmax + `"`, `op type "Swish"`, "from opset 24 on", "imports opset 18"}},
		{name: "domain not imported", edit: func(t *testing.T, m *onnx.Model) { firstSoftmax(t, m).Domain = proto.String("com.example") },
			want: []string{`node "` + softmax + `"`, `op type "Softmax" of domain "com.example"`, "does not import"}},
		// The training program's pieces rename their nodes: the error names
		// the source's.
		{name: "operator without a gradient rule", edit: func(t *testing.T, m *onnx.Model) {
			firstSoftmax(t, m).Domain = proto.String("com.example")
			m.Proto.OpsetImport = append(m.Proto.OpsetImport, &onnxpb.OperatorSetIdProto{Domain: proto.String("com.example"), Version: proto.Int64(1)})
		}, want: []string{"no gradient rule for op com.example.Softmax", `node "` + softmax + `"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path, _ := tinyDir(t)
			m, err := onnx.Load(path)
			require.NoError(t, err)
			tt.edit(t, m)
			require.NoError(t, onnx.Save(path, m, onnx.SaveOptions{}))
			_, err = model.PrepareArtifacts(context.Background(), path, t.TempDir(), model.ArtifactOptions{})
			if tt.want == nil {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			require.Contains(t, err.Error(), path)
			for _, w := range tt.want {
				require.Contains(t, err.Error(), w)
			}
		})
	}
}
