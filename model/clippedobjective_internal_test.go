package model

import (
	"math"
	"testing"
)

// TestClippedObjectiveHandCases checks the table head's per-token
// objective and its derivative d obj / d logp (the coefficient each
// loss position gets, times -weight) on hand-made cases, against
// values written out here: obj = min(r A, clip(r, 1-0.2, 1+0.28) A),
// r = exp(logp - old); d = r A where the unclipped term is the one
// min() keeps (always inside the range; A > 0 below it; A < 0 above
// it) and 0 where the clipped constant is kept (A > 0 above 1.28, A < 0
// below 0.8), and 0 whenever A = 0. A positive A gives a positive d: a
// gradient step on the loss -obj raises log pi of the token.
func TestClippedObjectiveHandCases(t *testing.T) {
	const lo, hi = 0.8, 1.28
	for _, tc := range []struct {
		name     string
		r, a     float64
		obj, der float64
	}{
		{"on-policy, A > 0", 1, 2, 2, 2},
		{"on-policy, A < 0", 1, -0.5, -0.5, -0.5},
		{"on-policy, A = 0", 1, 0, 0, 0},
		{"inside, A > 0", 1.1, 1, 1.1, 1.1},
		{"inside, A < 0", 0.9, -1, -0.9, -0.9},
		{"above 1+eps_high, A > 0: clipped", 1.5, 2, 1.28 * 2, 0},
		{"above 1+eps_high, A < 0: unclipped", 1.5, -2, -3, -3},
		{"below 1-eps_low, A < 0: clipped", 0.5, -2, -1.6, 0},
		{"below 1-eps_low, A > 0: unclipped", 0.5, 2, 1, 1},
		{"far above, A = 0", 3, 0, 0, 0},
		{"far below, A = 0", 0.1, 0, 0, 0},
		{"clip-higher: 1.25 is inside for A > 0", 1.25, 1, 1.25, 1.25},
		{"clip-higher: 0.78 is outside for A < 0", 0.78, -1, -0.8, 0},
	} {
		old := -1.7
		logp := old + math.Log(tc.r)
		obj, d := clippedObjective(logp, old, tc.a, lo, hi)
		if math.Abs(obj-tc.obj) > 1e-12 || math.Abs(d-tc.der) > 1e-12 {
			t.Errorf("%s (r %v, A %v): obj %.15g, d %.15g; want %.15g, %.15g", tc.name, tc.r, tc.a, obj, d, tc.obj, tc.der)
		}
		// d is the derivative where the objective is smooth.
		const h = 1e-6
		o1, _ := clippedObjective(logp+h, old, tc.a, lo, hi)
		o0, _ := clippedObjective(logp-h, old, tc.a, lo, hi)
		if fd := (o1 - o0) / (2 * h); math.Abs(fd-d) > 1e-6 {
			t.Errorf("%s: d %.9g, central difference %.9g", tc.name, d, fd)
		}
	}
}
