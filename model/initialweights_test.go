package model_test

import (
	"context"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/spiral-rl/spiral/model"
	"github.com/spiral-rl/spiral/model/onnx"
	"github.com/spiral-rl/spiral/model/onnx/onnxpb"
)

// A weight whose dims promise far more than its data holds is refused,
// naming it, before the store is sized by those dims (a 1 GiB store here,
// 4 TiB for dims a little larger).
func TestInitialWeightsRefusesOverstatedDims(t *testing.T) {
	dims := []int64{1 << 28} // 1 GiB of float32
	f32 := int32(onnx.Float32)
	tests := []struct {
		name string
		w    *onnxpb.TensorProto
		want string
	}{
		{"short raw_data", &onnxpb.TensorProto{Dims: dims, DataType: &f32, RawData: make([]byte, 16)}, "needs 1073741824 bytes of raw_data, has 16"},
		{"short float_data", &onnxpb.TensorProto{Dims: dims, DataType: &f32, FloatData: []float32{1, 2}}, "needs 268435456 values in float_data, has 2"},
		{"no data", &onnxpb.TensorProto{Dims: dims, DataType: &f32}, "needs 268435456 values in float_data, has 0"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := onnx.NewGraphBuilder("g")
			b.Input("x", onnx.Float32, onnx.D(1))
			w := b.Initializer("w", tc.w)
			b.NodeTo("Mul", []string{"x", w}, []string{"y"})
			b.Output("y", onnx.Float32, onnx.D(1))
			src := filepath.Join(t.TempDir(), "model.onnx")
			require.NoError(t, onnx.Save(src, b.Model(18), onnx.SaveOptions{}))
			man := model.Manifest{Frozen: []model.WeightInfo{{Name: "w", Shape: dims, DType: "F32"}}}

			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			_, _, err := model.InitialWeights(context.Background(), src, man, 1)
			runtime.ReadMemStats(&after)
			require.ErrorContains(t, err, `"w"`)
			require.ErrorContains(t, err, tc.want)
			require.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(64<<20), "bytes allocated before refusing the weight")
		})
	}
}
