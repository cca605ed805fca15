package model

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/spiral-rl/spiral/model/modeltest/perturbed"
	"github.com/spiral-rl/spiral/model/ortc"
)

// TestHostAliasOutlivesItsTensor: the executor's tensors over part of a
// host tensor's memory (rowsOf, chunkView, sliceScores' whole rows) hold
// that memory as a view does, so one still in use after the tensor it
// reads is released (its memory ONNX Runtime's, freed by that Release
// when nothing holds it) reads the tensor's values, not memory that the
// next allocations reuse and overwrite. Run in a child process
// (perturbed.InChild).
func TestHostAliasOutlivesItsTensor(t *testing.T) {
	if !perturbed.InChild(t) {
		return
	}
	p := openTinyResident(t, 1)
	e := p.Train
	live := p.rt.LiveValues()
	cases := []struct {
		name  string
		alias func(v *ortc.Value) (*ortc.Value, error)
		want  []float32
	}{
		{"rowsOf", func(v *ortc.Value) (*ortc.Value, error) {
			return e.rowsOf(v, 8, []int64{1, 1, 2, 4})
		}, []float32{9, 10, 11, 12, 13, 14, 15, 16}},
		{"chunkView", func(v *ortc.Value) (*ortc.Value, error) {
			return e.chunkView(v, tailChunk{1, 3})
		}, []float32{5, 6, 7, 8, 9, 10, 11, 12}},
		{"sliceScores", func(v *ortc.Value) (*ortc.Value, error) {
			var sc scoreSlice
			err := e.sliceScores(&sc, v, 0, 4, 2, 4, 0)
			return sc.v, err
		}, []float32{9, 10, 11, 12, 13, 14, 15, 16}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			whole, err := ortc.Alloc[float32](e.env, []int64{1, 1, 4, 4})
			require.NoError(t, err)
			for i := range whole.Float32s() {
				whole.Float32s()[i] = float32(i + 1)
			}
			alias, err := c.alias(whole)
			require.NoError(t, err)
			defer alias.Release()
			whole.Release()
			for range 64 {
				x, err := ortc.Alloc[float32](e.env, []int64{1, 1, 4, 4})
				require.NoError(t, err)
				defer x.Release()
				for i := range x.Float32s() {
					x.Float32s()[i] = -1
				}
			}
			require.Equal(t, c.want, alias.Float32s())
		})
	}
	require.Equal(t, live, p.rt.LiveValues(), "every tensor released")
}
