package model_test

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/spiral-rl/spiral/model"
	"github.com/spiral-rl/spiral/model/lmgraph"
	"github.com/spiral-rl/spiral/model/modeltest"
	"github.com/spiral-rl/spiral/model/onnx"
	"github.com/spiral-rl/spiral/model/qwen3"
	"github.com/spiral-rl/spiral/model/qwen3/qwen3ref"
)

// tinyDir writes the tiny Qwen3 model into a temp dir and returns the
// model path and config.
func tinyDir(t *testing.T) (string, qwen3.Config) {
	t.Helper()
	cfg := qwen3.Tiny()
	dir := t.TempDir()
	require.NoError(t, qwen3.WriteDir(dir, cfg, 7))
	return filepath.Join(dir, "model.onnx"), cfg
}

// paddedBatch is three left-padded prompts of lengths 5, 3 and 1.
func paddedBatch() (B, T int, ids, mask, pos []int64) {
	rows := [][]int64{{5, 9, 13, 2, 44}, {7, 7, 81}, {3}}
	B, T = len(rows), 5
	for _, r := range rows {
		pad := T - len(r)
		for t := 0; t < T; t++ {
			if t < pad {
				ids, mask, pos = append(ids, 0), append(mask, 0), append(pos, 1)
			} else {
				ids, mask, pos = append(ids, r[t-pad]), append(mask, 1), append(pos, int64(t-pad))
			}
		}
	}
	return
}

// extendPadded runs the left-padded batch (paddedBatch) through
// lm.Extend on a fresh RowCache and returns each row's last logits.
func extendPadded(t *testing.T, lm *model.LM, B, T int, ids, mask []int64) []float32 {
	t.Helper()
	c, err := lm.NewRowCache(B, T)
	require.NoError(t, err)
	real := make([]int, B)
	for i, m := range mask {
		real[i/T] += int(m)
	}
	logits, err := lm.Extend(context.Background(), c, 0, ids, real, nil)
	require.NoError(t, err)
	return logits
}

func maxAbsDiffMasked(a []float32, b []float64, mask []int64, vocab int) float64 {
	worst := 0.0
	for i, m := range mask {
		if m == 0 {
			continue // padded query rows attend to nothing real; their logits are unspecified
		}
		for v := 0; v < vocab; v++ {
			worst = math.Max(worst, math.Abs(float64(a[i*vocab+v])-b[i*vocab+v]))
		}
	}
	return worst
}

// TestLMMatchesReferenceAndCache checks the generated graph through LM
// against the pure-Go float64 reference (full sequence) and checks that
// prefill + step-by-step decode with the KV cache reproduces full-sequence
// logits.
func TestLMMatchesReferenceAndCache(t *testing.T) {
	rt := modeltest.Runtime(t)
	path, cfg := tinyDir(t)
	lm, err := model.OpenLM(rt, path, model.LMOptions{})
	require.NoError(t, err)
	defer lm.Close()
	sig := lm.Signature()
	require.Equal(t, model.Signature{Layers: cfg.Layers, KVHeads: cfg.KVHeads, HeadDim: cfg.HeadDim, Vocab: cfg.Vocab, HasPositionIDs: true, Present: true}, *sig)

	B, T, ids, mask, pos := paddedBatch()
	cache := lm.NewKVCache(B, T+4)
	full, err := lm.Forward(context.Background(), model.Step{Batch: B, Seq: T, InputIDs: ids, AttentionMask: mask, PositionIDs: pos}, cache, nil)
	require.NoError(t, err)
	m, err := onnx.Load(path)
	require.NoError(t, err)
	ref, err := qwen3ref.New(m, cfg)
	require.NoError(t, err)
	want, err := ref.Forward(B, T, ids, mask, pos)
	require.NoError(t, err)
	require.Less(t, maxAbsDiffMasked(full, want, mask, cfg.Vocab), 1e-4)

	// Decode: prefill the first 2 positions, then one position at a time.
	cache.Reset()
	stepLogits := make([]float32, 0)
	got := make([]float32, B*T*cfg.Vocab)
	for t0 := 0; t0 < T; {
		n := 1
		if t0 == 0 {
			n = 2
		}
		st := model.Step{Batch: B, Seq: n}
		for b := 0; b < B; b++ {
			st.InputIDs = append(st.InputIDs, ids[b*T+t0:b*T+t0+n]...)
			st.PositionIDs = append(st.PositionIDs, pos[b*T+t0:b*T+t0+n]...)
		}
		for b := 0; b < B; b++ {
			st.AttentionMask = append(st.AttentionMask, mask[b*T:b*T+t0+n]...)
		}
		stepLogits, err = lm.Forward(context.Background(), st, cache, stepLogits)
		require.NoError(t, err)
		for b := 0; b < B; b++ {
			copy(got[(b*T+t0)*cfg.Vocab:(b*T+t0+n)*cfg.Vocab], stepLogits[b*n*cfg.Vocab:(b+1)*n*cfg.Vocab])
		}
		t0 += n
	}
	full64 := make([]float64, len(full))
	for i, v := range full {
		full64[i] = float64(v)
	}
	require.Less(t, maxAbsDiffMasked(got, full64, mask, cfg.Vocab), 1e-4)
	require.Equal(t, T, cache.Len())
}

func TestLMForwardErrors(t *testing.T) {
	rt := modeltest.Runtime(t)
	path, _ := tinyDir(t)
	lm, err := model.OpenLM(rt, path, model.LMOptions{})
	require.NoError(t, err)
	defer lm.Close()
	cache := lm.NewKVCache(2, 4)
	_, err = lm.Forward(context.Background(), model.Step{Batch: 1, Seq: 1, InputIDs: []int64{1}, AttentionMask: []int64{1}, PositionIDs: []int64{0}}, cache, nil)
	require.ErrorContains(t, err, "cache holds 2 rows")
	_, err = lm.Forward(context.Background(), model.Step{Batch: 2, Seq: 5, InputIDs: make([]int64, 10), AttentionMask: make([]int64, 10), PositionIDs: make([]int64, 10)}, cache, nil)
	require.ErrorContains(t, err, "cannot hold 0+5")
}

// TestLMForwardAfterFailedSession: a Forward whose session could not be
// created (here the graph file gone) leaves the LM as it was: the same
// error again, and once the file is back a Forward that runs, where the
// weights wrapped before the failure stayed and were passed twice.
func TestLMForwardAfterFailedSession(t *testing.T) {
	rt := modeltest.Runtime(t)
	path, _ := tinyDir(t)
	art, err := model.PrepareArtifacts(context.Background(), path, t.TempDir(), model.ArtifactOptions{})
	require.NoError(t, err)
	w, _, err := model.InitialWeights(context.Background(), path, art.Manifest, 1)
	require.NoError(t, err)
	feed := map[string]model.Weight{}
	for i := range w.Len() {
		tn := w.At(i)
		feed[tn.Name] = model.Weight{Shape: tn.Shape, Data: tn.Data}
	}
	roll := art.RolloutPath()
	lm, err := model.OpenLM(rt, roll, model.LMOptions{Weights: feed})
	require.NoError(t, err)
	defer lm.Close()
	require.NotEmpty(t, lm.Signature().Weights, "the graph takes its weights as inputs")
	B, T, ids, mask, pos := paddedBatch()
	st := model.Step{Batch: B, Seq: T, InputIDs: ids, AttentionMask: mask, PositionIDs: pos}

	aside := roll + ".aside"
	require.NoError(t, os.Rename(roll, aside))
	_, first := lm.Forward(context.Background(), st, lm.NewKVCache(B, T), nil)
	require.ErrorContains(t, first, "create session")
	_, again := lm.Forward(context.Background(), st, lm.NewKVCache(B, T), nil)
	require.EqualError(t, again, first.Error())

	require.NoError(t, os.Rename(aside, roll))
	got, err := lm.Forward(context.Background(), st, lm.NewKVCache(B, T), nil)
	require.NoError(t, err)
	fresh, err := model.OpenLM(rt, roll, model.LMOptions{Weights: feed})
	require.NoError(t, err)
	defer fresh.Close()
	want, err := fresh.Forward(context.Background(), st, fresh.NewKVCache(B, T), nil)
	require.NoError(t, err)
	require.Equal(t, want, got)
}

func TestOpenLMErrors(t *testing.T) {
	rt := modeltest.Runtime(t)
	dir := t.TempDir()
	bad := filepath.Join(dir, "trunc.onnx")
	path, _ := tinyDir(t)
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(bad, raw[:len(raw)/3], 0o644))
	_, err = model.OpenLM(rt, bad, model.LMOptions{})
	require.ErrorContains(t, err, "trunc.onnx")
	_, err = model.OpenLM(rt, filepath.Join(dir, "missing.onnx"), model.LMOptions{})
	require.ErrorContains(t, err, "missing.onnx")
}

// TestArtifactsProgramReadUnderLock: the program PrepareArtifacts returns
// was read before it released the directory's lock, so a process that
// rebuilds the directory afterwards (here: the files removed) does not
// change what the caller reads.
func TestArtifactsProgramReadUnderLock(t *testing.T) {
	path, _ := tinyDir(t)
	dir := t.TempDir()
	art, err := model.PrepareArtifacts(context.Background(), path, dir, model.ArtifactOptions{})
	require.NoError(t, err)
	want, err := os.ReadFile(filepath.Join(dir, art.Manifest.Program))
	require.NoError(t, err)
	pieces, err := filepath.Glob(filepath.Join(dir, "piece-*.onnx"))
	require.NoError(t, err)
	require.NotEmpty(t, pieces)
	for _, f := range append(pieces, filepath.Join(dir, art.Manifest.Program)) {
		require.NoError(t, os.Remove(f))
	}
	prog, err := art.Program()
	require.NoError(t, err)
	require.NotEmpty(t, prog.Blocks)
	require.Len(t, prog.Graphs, len(pieces))
	require.Contains(t, string(want), prog.Blocks[0].Pre.Backward)
}

// TestArtifactsRebuildRemovesStalePieces: a rebuild of the directory for
// other graphs (here: LoRA adapters, then none again) leaves only the
// program graphs its manifest names, not every earlier program's beside
// them, which a run dir rebuilt by --fresh runs with other settings, or
// a cache shared by models, would gather without end.
func TestArtifactsRebuildRemovesStalePieces(t *testing.T) {
	path, _ := tinyDir(t)
	dir := t.TempDir()
	for _, opt := range []model.ArtifactOptions{{}, {LoRA: lmgraph.LoRA{Rank: 2, Alpha: 4, Targets: lmgraph.LoRATargets}}, {}} {
		art, err := model.PrepareArtifacts(context.Background(), path, dir, opt)
		require.NoError(t, err)
		require.True(t, art.Rebuilt)
		var want []string
		for name := range art.Manifest.Files {
			if strings.HasPrefix(name, "piece-") {
				want = append(want, filepath.Join(dir, name))
			}
		}
		got, err := filepath.Glob(filepath.Join(dir, "piece-*.onnx"))
		require.NoError(t, err)
		require.ElementsMatch(t, want, got, "LoRA %+v: the piece files", opt.LoRA)
	}
}

// TestArtifacts builds the rollout graph and training program of the tiny model,
// checks that the rollout graph fed from the parameter store gives the
// source's logits, that artifacts are reused while the source is unchanged
// and rebuilt when it changes, and that the training executor runs.
func TestArtifacts(t *testing.T) {
	rt := modeltest.Runtime(t)
	path, cfg := tinyDir(t)
	dir := t.TempDir()
	art, err := model.PrepareArtifacts(context.Background(), path, dir, model.ArtifactOptions{})
	require.NoError(t, err)
	require.True(t, art.Rebuilt)
	require.Equal(t, cfg.Layers, art.Manifest.Layers)
	require.NotEmpty(t, art.Manifest.Weights)
	again, err := model.PrepareArtifacts(context.Background(), path, dir, model.ArtifactOptions{})
	require.NoError(t, err)
	require.False(t, again.Rebuilt, "unchanged source must reuse the artifacts")
	// A damaged generated file is detected by its checksum and rebuilt.
	prog, err := art.Program()
	require.NoError(t, err)
	f, err := os.OpenFile(filepath.Join(dir, "piece-"+prog.Blocks[0].Pre.Backward+".onnx"), os.O_WRONLY|os.O_APPEND, 0)
	require.NoError(t, err)
	_, err = f.Write([]byte{0})
	require.NoError(t, err)
	require.NoError(t, f.Close())
	again, err = model.PrepareArtifacts(context.Background(), path, dir, model.ArtifactOptions{})
	require.NoError(t, err)
	require.True(t, again.Rebuilt, "a corrupt piece graph must be rebuilt")

	w, frozen, err := model.InitialWeights(context.Background(), path, art.Manifest, 1)
	require.NoError(t, err)
	feed := map[string]model.Weight{}
	for i := 0; i < w.Len(); i++ {
		tn := w.At(i)
		feed[tn.Name] = model.Weight{Shape: tn.Shape, Data: tn.Data}
	}
	src, err := model.OpenLM(rt, path, model.LMOptions{})
	require.NoError(t, err)
	defer src.Close()
	roll, err := model.OpenLM(rt, art.RolloutPath(), model.LMOptions{Weights: feed})
	require.NoError(t, err)
	defer roll.Close()
	B, T, ids, mask, pos := paddedBatch()
	st := model.Step{Batch: B, Seq: T, InputIDs: ids, AttentionMask: mask, PositionIDs: pos}
	a, err := src.Forward(context.Background(), st, src.NewKVCache(B, T), nil)
	require.NoError(t, err)
	b, err := roll.Forward(context.Background(), st, roll.NewKVCache(B, T), nil)
	require.NoError(t, err)
	require.Equal(t, a, b)

	// The sampling graph computes the last position's logits only, equal
	// to the full graph's last row.
	samp, err := model.OpenLM(rt, art.SamplePath(), model.LMOptions{Weights: feed})
	require.NoError(t, err)
	defer samp.Close()
	require.True(t, samp.Signature().LastLogitsOnly)
	require.False(t, roll.Signature().LastLogitsOnly)
	require.True(t, samp.Signature().NewKV)
	require.False(t, samp.Signature().Present, "a sampling graph keeps no layer's present to the end of a call")
	_, err = samp.Forward(context.Background(), st, samp.NewKVCache(B, T), nil)
	require.ErrorContains(t, err, "use Extend")
	last := extendPadded(t, samp, B, T, ids, mask)
	V := cfg.Vocab
	require.Len(t, last, B*V)
	for r := 0; r < B; r++ {
		require.InDeltaSlice(t, a[(r*T+T-1)*V:(r*T+T)*V], last[r*V:(r+1)*V], 1e-5, "row %d", r)
	}

	// In-place weight updates are seen by the next call without reopening.
	w.Scale(0.5)
	c, err := roll.Forward(context.Background(), st, roll.NewKVCache(B, T), nil)
	require.NoError(t, err)
	require.NotEqual(t, a, c)

	// Training executor: finite loss, gradients written into the store.
	grads := w.NewGrads()
	ts, err := model.OpenExecutor(rt, art, w, frozen, model.ExecutorOptions{})
	require.NoError(t, err)
	defer ts.Close()
	n := B * T
	tb := model.TrainBatch{Batch: B, Seq: T, InputIDs: ids, AttentionMask: mask, PositionIDs: pos,
		LossMask: make([]float32, n), Advantages: make([]float32, n), OldLogProbs: make([]float32, n), ClipLow: 0.2, ClipHigh: 0.28}
	for i := range tb.LossMask {
		if mask[i] == 1 && i%T < T-1 {
			tb.LossMask[i], tb.Advantages[i] = 1, 1
		}
	}
	var res model.TrainResult
	require.NoError(t, ts.Accumulate(context.Background(), tb, 1, grads, &res))
	require.False(t, math.IsNaN(float64(res.Loss)))
	require.Positive(t, grads.Norm())

	// A changed source is rebuilt.
	require.NoError(t, qwen3.WriteDir(filepath.Dir(path), cfg, 8))
	rebuilt, err := model.PrepareArtifacts(context.Background(), path, dir, model.ArtifactOptions{})
	require.NoError(t, err)
	require.True(t, rebuilt.Rebuilt)
}
