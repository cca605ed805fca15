package model

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/spiral-rl/spiral/model/qwen3"
)

// TestScatterSummedMatchesGo: the embedding gradient's device scatter,
// with ONNX Runtime on two threads and 65,536 positions over 8 ids (a
// ScatterND adding repeated indices loses additions there), equals Go's
// position-order sum bit for bit, into a sum that holds values already.
func TestScatterSummedMatchesGo(t *testing.T) {
	rt, err := OpenRuntime(RuntimeOptions{Threads: 2})
	if err != nil {
		if os.Getenv("CI") == "" {
			t.Skipf("ONNX Runtime not available: %v", err)
		}
		t.Fatal(err)
	}
	defer rt.Close()
	dir := t.TempDir()
	require.NoError(t, qwen3.WriteDir(dir, qwen3.Tiny(), 3))
	p, err := OpenPolicy(rt, filepath.Join(dir, "model.onnx"), t.TempDir(), PolicyOptions{Train: true, Resident: true, Seed: 3})
	require.NoError(t, err)
	defer p.Close()
	e := p.Train
	const table = "model.embed_tokens.weight"
	sum := e.devGrads.sums[table]
	require.NotNil(t, sum)
	start := make([]float32, sum.Len())
	for i := range start {
		start[i] = float32(i%7) - 3
	}
	require.NoError(t, e.copyFlat(sum, start, true))
	shape := e.tensors[table].Shape
	width := int(shape[1])
	r := rand.New(rand.NewPCG(3, 4))
	ids := make([]int64, 1<<16)
	rows := make([]float32, len(ids)*width)
	for i := range ids {
		ids[i] = int64(r.IntN(8))
	}
	for i := range rows {
		rows[i] = float32(r.NormFloat64())
	}
	require.NoError(t, e.scatterSummed(table, shape, ids, rows, 0.7))
	got := make([]float32, sum.Len())
	require.NoError(t, e.copyFlat(sum, got, false))
	want := slices.Clone(start)
	for p, id := range ids {
		addScaled(want[int(id)*width:(int(id)+1)*width], rows[p*width:(p+1)*width], 0.7)
	}
	require.Equal(t, want, got)
}
