package model

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
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
