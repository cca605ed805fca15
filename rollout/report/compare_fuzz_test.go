package report

import (
	"math"
	"testing"

	"github.com/spiral-rl/spiral/rollout"
)

// passCurve builds a pass@k report from b: each pair of bytes is a step
// of k (1 + the first byte) and of pass@k (the second byte in 1/255ths,
// signed, so that a curve can also fall by rounding: 0xff falls by
// reachSlack / 2, the rounding of a mean that PassAtKEfficiency reads as
// no fall; Validate allows falls up to passkSlack, 1000 times more).
func passCurve(b []byte) PassAtK {
	r := PassAtK{Meta: Meta{Mode: ModePassAtK}}
	k, p := 0, 0.0
	for i := 0; i+1 < len(b); i += 2 {
		k += 1 + int(b[i])
		if d := int8(b[i+1]); d == -1 {
			p -= reachSlack / 2
		} else {
			p += float64(d) / 255
		}
		r.Points = append(r.Points, rollout.KPoint{K: k, PassAtK: p})
	}
	r.Config.Samples = k
	return r
}

// FuzzPassAtKEfficiency feeds pass@k curves that Validate accepts to
// PassAtKEfficiency: a curve against itself needs 1x at every k (exactly,
// but at most at a pass@k of 0 or below its first k's, where it fell by
// rounding); against another every ratio is finite and positive, Max is
// the largest exact one, and Floor the largest lower bound (AtLeast)
// where it exceeds Max, else 0.
func FuzzPassAtKEfficiency(f *testing.F) {
	f.Add([]byte{0, 60, 0, 30, 1, 20, 3, 10, 7, 5}, []byte{0, 40, 0, 40, 1, 30, 3, 20, 7, 10})
	f.Add([]byte{0, 0, 0, 0, 1, 100}, []byte{0, 100})
	f.Add([]byte{0, 128, 0, 255, 1, 0}, []byte{0, 0, 0, 0})
	f.Add([]byte{0, 255, 0, 255}, []byte{7, 1, 7, 1, 7, 1})
	f.Fuzz(func(t *testing.T, a, b []byte) {
		ref, other := passCurve(a), passCurve(b)
		if ref.Validate() != nil || other.Validate() != nil {
			return
		}
		self, err := PassAtKEfficiency(ref, ref)
		if err != nil {
			t.Fatalf("%v against itself: %v", ref.Points, err)
		}
		for _, e := range self.Points {
			want := Exact
			// Below the first point by more than reachSlack (after
			// falls by rounding, each within it): already passed there.
			if e.Target == 0 || e.Target < ref.Points[0].PassAtK-reachSlack {
				want = AtMost
			}
			if math.Abs(e.Ratio-1) > 1e-6 || e.Bound != want {
				t.Fatalf("%v against itself: at k = %d, %g x (%q), want 1 x (%q)", ref.Points, e.K, e.Ratio, e.Bound, want)
			}
		}
		eff, err := PassAtKEfficiency(ref, other)
		if err != nil {
			t.Fatalf("%v against %v: %v", ref.Points, other.Points, err)
		}
		best, floor := 0.0, 0.0
		for _, e := range eff.Points {
			if !(e.Ratio > 0) || math.IsInf(e.Ratio, 0) || !(e.OtherK >= 1) {
				t.Fatalf("%v against %v: at k = %d, %g samples, %g x", ref.Points, other.Points, e.K, e.OtherK, e.Ratio)
			}
			switch e.Bound {
			case Exact:
				best = max(best, e.Ratio)
			case AtLeast:
				floor = max(floor, e.Ratio)
			}
		}
		if eff.Max != best {
			t.Fatalf("%v against %v: max %g, want %g", ref.Points, other.Points, eff.Max, best)
		}
		if floor <= best {
			floor = 0 // no lower bound above the exact maximum
		}
		if eff.Floor != floor {
			t.Fatalf("%v against %v: floor %g, want %g (max %g)", ref.Points, other.Points, eff.Floor, floor, best)
		}
	})
}
