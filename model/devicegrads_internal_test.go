package model

import (
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/spiral-rl/spiral/model/optim"
	"github.com/spiral-rl/spiral/model/ortc"
	"github.com/spiral-rl/spiral/model/params"
	"github.com/spiral-rl/spiral/model/qwen3"
)

// openTinyResident opens the tiny Qwen3 for training on the device
// layer's CPU twin, with ONNX Runtime on threads threads; both are closed
// at the end of the test.
func openTinyResident(t *testing.T, threads int) *Policy {
	t.Helper()
	rt, err := OpenRuntime(RuntimeOptions{Threads: threads})
	if err != nil {
		if os.Getenv("CI") == "" {
			t.Skipf("ONNX Runtime not available: %v", err)
		}
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	dir := t.TempDir()
	require.NoError(t, qwen3.WriteDir(dir, qwen3.Tiny(), 3))
	p, err := OpenPolicy(context.Background(), rt, filepath.Join(dir, "model.onnx"), t.TempDir(), PolicyOptions{Train: true, Resident: true, Seed: 3})
	require.NoError(t, err)
	t.Cleanup(func() { p.Close() })
	return p
}

// TestScatterSummedMatchesGo: the embedding gradient's device scatter,
// with ONNX Runtime on two threads and 65,536 positions over 8 ids (a
// ScatterND adding repeated indices loses additions there), equals Go's
// position-order sum bit for bit, into a sum that holds values already.
func TestScatterSummedMatchesGo(t *testing.T) {
	e := openTinyResident(t, 2).Train
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

// TestDeviceUpdateStoppedPartway: a second update that fails on its
// last tensor leaves the device holding no step's state, so Update and
// SyncHost refuse it, fresh gradients or not, and a host write of the
// weights alone does not reopen it; once the host has written the
// weights and both moments (a checkpoint load's writes), the next step
// copies them up and equals the first step.
func TestDeviceUpdateStoppedPartway(t *testing.T) {
	p := openTinyResident(t, 1)
	opt, err := optim.NewAdamW(optim.DefaultConfig(), p.Weights)
	require.NoError(t, err)
	require.NoError(t, p.UseDeviceOptimizer(opt))
	e := p.Train
	vocab := p.LM.Signature().Vocab
	b := TrainBatch{Batch: 1, Seq: 6, ClipLow: 0.2, ClipHigh: 0.28}
	for i := range b.Seq {
		b.InputIDs = append(b.InputIDs, int64(1+i%(vocab-1)))
		b.AttentionMask = append(b.AttentionMask, 1)
		b.PositionIDs = append(b.PositionIDs, int64(i))
		loss := float32(i % 2)
		if i == b.Seq-1 {
			loss = 0 // no next token
		}
		b.LossMask = append(b.LossMask, loss)
		b.Advantages = append(b.Advantages, 1)
	}
	start := [3][]float32{slices.Clone(p.Weights.Flat()), slices.Clone(opt.ExpAvg().Flat()), slices.Clone(opt.ExpAvgSq().Flat())}
	restore := func(stores ...int) { // as checkpoint.Load writes them
		for _, k := range stores {
			s := [3]*params.Store{p.Weights, opt.ExpAvg(), opt.ExpAvgSq()}[k]
			copy(s.Flat(), start[k])
			s.Touch()
		}
		require.NoError(t, opt.SetSteps(0))
	}
	step := func() error {
		var res TrainResult
		require.NoError(t, e.AccumulateBatches(context.Background(), []TrainBatch{b}, []float32{1}, nil, &res, func(int) error { return nil }))
		_, err := e.Update(1e-2, 0)
		return err
	}
	state := func() [3][]float32 {
		require.NoError(t, e.SyncHost())
		return [3][]float32{slices.Clone(p.Weights.Flat()), slices.Clone(opt.ExpAvg().Flat()), slices.Clone(opt.ExpAvgSq().Flat())}
	}
	require.NoError(t, step())
	want := state()

	names := p.Weights.Names()
	last := names[len(names)-1]
	good := e.devOpt.m[last]
	bad, err := ortc.AllocOn[float32](e.devGrads.mem.alloc, []int64{1})
	require.NoError(t, err)
	defer bad.Release()
	// Its update fails: a first moment of the wrong size (shorter than
	// the weight, which once updated only the moment's length silently).
	e.devOpt.m[last] = bad
	err = step()
	require.ErrorContains(t, err, "stopped at")
	require.ErrorContains(t, err, "AdamW on the device for "+last+": its first moment holds 1 values, the weight")
	e.devOpt.m[last] = good
	require.ErrorContains(t, step(), "stopped at", "fresh gradients do not reopen it")
	require.ErrorContains(t, e.SyncHost(), "stopped at")
	restore(0)
	require.ErrorContains(t, step(), "stopped at", "the weights alone do not reopen it")
	restore(0, 1, 2)
	require.NoError(t, step())
	require.Equal(t, want, state())
}
