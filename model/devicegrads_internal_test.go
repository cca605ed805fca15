package model

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/spiral-rl/spiral/model/qwen3"
)

// TestDistinctRounds: the rounds partition the positions, none repeats
// an id, and each id's positions keep their order across rounds.
func TestDistinctRounds(t *testing.T) {
	ids := []int64{3, 1, 3, 3, 0, 1, 7}
	require.Equal(t, [][]int{{0, 1, 4, 6}, {2, 5}, {3}}, distinctRounds(ids))
	r := rand.New(rand.NewPCG(1, 2))
	ids = make([]int64, 500)
	for i := range ids {
		ids[i] = int64(r.IntN(9))
	}
	seen := make([]bool, len(ids))
	last := map[int64]int{}
	for _, round := range distinctRounds(ids) {
		in := map[int64]bool{}
		for _, p := range round {
			require.False(t, in[ids[p]], "an id twice in a round")
			in[ids[p]] = true
			require.False(t, seen[p])
			seen[p] = true
			if q, ok := last[ids[p]]; ok {
				require.Less(t, q, p)
			}
			last[ids[p]] = p
		}
	}
	require.NotContains(t, seen, false)
}

// TestScatterSummedMatchesGo: the embedding gradient's device scatter,
// with ONNX Runtime on two threads and 65,536 positions over 8 ids (a
// single ScatterND with repeated indices loses additions there), equals
// Go's position-order sum bit for bit.
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
	require.NoError(t, fillZeros(e.env, e.devGrads.zero, sum))
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
	want := make([]float32, sum.Len())
	for p, id := range ids {
		addScaled(want[int(id)*width:(int(id)+1)*width], rows[p*width:(p+1)*width], 0.7)
	}
	require.Equal(t, want, got)
}
