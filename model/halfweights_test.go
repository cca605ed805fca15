package model_test

import (
	"context"
	"encoding/binary"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/spiral-rl/spiral/model"
	"github.com/spiral-rl/spiral/model/onnx"
	"github.com/spiral-rl/spiral/model/onnx/onnxpb"
	"github.com/spiral-rl/spiral/model/qwen3"
)

// TestPrepareArtifactsRefusesHalfWeights: an export whose weights are
// float16 or bfloat16 (optimum-cli's --dtype fp16 or bf16, onnx-community's
// fp16 files) is refused naming the file, the weight and its type, for
// every command (eval and generate too: the weights are fed from a
// float32 store), and saying how to export one that runs; the message
// spoke of training alone.
func TestPrepareArtifactsRefusesHalfWeights(t *testing.T) {
	const weight = "model.layers.0.mlp.up_proj.weight"
	for _, tc := range []struct {
		dtype onnxpb.TensorProto_DataType
		name  string
	}{
		{onnxpb.TensorProto_FLOAT16, "float16"},
		{onnxpb.TensorProto_BFLOAT16, "bfloat16"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := qwen3.Build(qwen3.Tiny(), 1)
			require.NoError(t, err)
			found := false
			for _, init := range m.Graph().GetInitializer() {
				if init.GetName() == weight {
					n := len(init.GetRawData()) / 4
					half := make([]byte, 2*n)
					for i := range n { // the high half of each float32: its bfloat16, a float16 of other values
						binary.LittleEndian.PutUint16(half[2*i:], uint16(binary.LittleEndian.Uint32(init.GetRawData()[4*i:])>>16))
					}
					init.RawData, init.DataType = half, proto.Int32(int32(tc.dtype))
					found = true
				}
			}
			require.True(t, found, "the tiny model has %s", weight)
			path := filepath.Join(t.TempDir(), "model.onnx")
			require.NoError(t, onnx.Save(path, m, onnx.SaveOptions{}))
			_, err = model.PrepareArtifacts(context.Background(), path, t.TempDir(), model.ArtifactOptions{})
			require.EqualError(t, err, "model: "+path+`: weight "`+weight+`" has type `+tc.name+
				": spiral runs and trains float32 weights; export the model in float32 (optimum-cli export onnx's default, not --dtype fp16 or bf16)")
		})
	}
}
