package report

import (
	"math"
	"strconv"
	"testing"
)

// FuzzIntegerTicks feeds arbitrary axis ranges to integerTicks (the x
// axis of steps and of k): it returns, promptly, at most 20 ticks, at
// increasing integers within the range (up to rounding past 2^53), each
// labelled with its value.
func FuzzIntegerTicks(f *testing.F) {
	for _, r := range [][2]float64{{-0.25, 3.25}, {1, 300}, {1, 20}, {0, 1e15}, {1 << 53, 1<<53 + 4}, {1 << 63, 1 << 63},
		{-1e308, 1e308}, {-5, 9.223372036854775807e18}, {3, 2}, {math.Inf(-1), 0}} {
		f.Add(r[0], r[1])
	}
	f.Fuzz(func(t *testing.T, lo, hi float64) {
		ticks := integerTicks(lo, hi)
		if len(ticks) > 20 {
			t.Fatalf("[%g, %g]: %d ticks", lo, hi, len(ticks))
		}
		for i, tk := range ticks {
			// Past 2^53 the first multiple of the stride may round
			// to a float just below lo (gonum leaves it out).
			if tk.Value < lo-math.Abs(lo)*1e-15 || tk.Value > hi || tk.Value != math.Trunc(tk.Value) || i > 0 && tk.Value <= ticks[i-1].Value {
				t.Fatalf("[%g, %g]: tick %d at %g (the one before: %v)", lo, hi, i, tk.Value, ticks[max(i-1, 0)])
			}
			if tk.Label != strconv.FormatFloat(tk.Value, 'f', 0, 64) {
				t.Fatalf("[%g, %g]: tick at %g labelled %q", lo, hi, tk.Value, tk.Label)
			}
		}
	})
}
