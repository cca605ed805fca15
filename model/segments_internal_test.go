package model

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/spiral-rl/spiral/model/ortc"
)

// TestApplySegmentMask: on random masks and segments (branches in any
// order, an id repeated in separate stretches, prompt positions between
// them), every entry whose query and key lie in different branches gets
// the entry at (0, 1) of its row and head, and no other entry changes:
// the definition, checked entry by entry.
func TestApplySegmentMask(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for trial := range 50 {
		B, per, T := 1+r.IntN(3), 1+r.IntN(3), 2+r.IntN(12)
		seg := make([]int64, B*T)
		for i := range seg {
			seg[i] = int64(r.IntN(4))
		}
		m := make([]float32, B*per*T*T)
		for i := range m {
			m[i] = r.Float32()
		}
		want := slices.Clone(m)
		for b := range B {
			for h := range per {
				base := (b*per + h) * T * T
				for q := range T {
					for k := range T {
						sq, sk := seg[b*T+q], seg[b*T+k]
						if sq != 0 && sk != 0 && sq != sk {
							want[base+q*T+k] = m[base+1]
						}
					}
				}
			}
		}
		applySegmentMask(m, seg, B, per, T)
		require.Equal(t, want, m, "trial %d: %d rows, %d heads, %d positions, segments %v", trial, B, per, T, seg)
	}
}

// TestMaskSegmentsOneMaskForAllRows: an export's mask made once for all
// rows ([1, 1, T, T]) becomes one mask a row, each with its own
// branches hidden from one another, on the host and on the device
// layer's twin.
func TestMaskSegmentsOneMaskForAllRows(t *testing.T) {
	e := openTinyResident(t, 1).Train
	const B, T = 2, 5
	seg := []int64{0, 0, 1, 1, 2, 0, 1, 2, 2, 0}
	causal := make([]float32, T*T)
	for q := range T {
		for k := q + 1; k < T; k++ {
			causal[q*T+k] = -1e9
		}
	}
	var want []float32
	for b := range B {
		m := slices.Clone(causal)
		for q := range T {
			for k := range T {
				if sq, sk := seg[b*T+q], seg[b*T+k]; sq != 0 && sk != 0 && sq != sk {
					m[q*T+k] = -1e9
				}
			}
		}
		want = append(want, m...)
	}
	st := &stepState{b: &TrainBatch{Batch: B, Seq: T, Segments: seg}}
	shape := []int64{1, 1, T, T}

	host, err := ortc.NewTensor(e.env, shape, slices.Clone(causal))
	require.NoError(t, err)
	got, err := e.maskSegments(st, host)
	require.NoError(t, err)
	defer got.Release()
	require.Equal(t, []int64{B, 1, T, T}, got.Shape())
	require.Equal(t, want, got.Float32s())

	src, err := ortc.NewTensor(e.env, shape, slices.Clone(causal))
	require.NoError(t, err)
	defer src.Release()
	copySess, err := e.devGrads.acts.identitySession(e, ortc.Float32)
	require.NoError(t, err)
	placed := []*ortc.Value{nil}
	require.NoError(t, e.runBound(copySess, []*ortc.Value{src}, placed))
	require.True(t, placed[0].Placed())
	got, err = e.maskSegments(st, placed[0])
	require.NoError(t, err)
	defer got.Release()
	require.Equal(t, []int64{B, 1, T, T}, got.Shape())
	h, release, err := e.hostValue(got)
	require.NoError(t, err)
	defer release()
	require.Equal(t, want, h.Float32s())
}
