package data

import (
	"encoding/json"
	"math/big"
	"strconv"
	"strings"
	"testing"
)

// FuzzIntegerLiteral feeds arbitrary JSON number literals to
// integerLiteral: it takes a literal for an integer exactly when its value
// is one of at most maxIntegerDigits digits, and writes that integer.
func FuzzIntegerLiteral(f *testing.F) {
	for _, s := range []string{"27", "27.0", "1e3", "-12.000", "0.5", "1e400", "1e-400", "0.99999999999999999", "-0",
		"0.0e-5", "1234567890123456", "12345678901234567", "1.5e1", "15E-1", "100e-2", "0e9999999999999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var n json.Number
		if json.Unmarshal([]byte(s), &n) != nil || strings.TrimSpace(s) != s || strings.HasPrefix(s, `"`) {
			return // not one number literal (json.Number also reads "12")
		}
		got, ok := integerLiteral(s)
		if _, e, found := strings.Cut(strings.ToLower(s), "e"); found {
			if exp, err := strconv.Atoi(e); err != nil || exp > 1000 || exp < -1000 {
				// Past what big.Rat reads in reasonable time: only
				// the literal's zero decides.
				if ok && strings.Trim(got, "-0") != "" {
					t.Fatalf("%q read as the integer %s", s, got)
				}
				return
			}
		}
		r, valid := new(big.Rat).SetString(s)
		if !valid {
			t.Fatalf("big.Rat does not read %q", s)
		}
		want := r.IsInt() && len(strings.TrimPrefix(r.Num().String(), "-")) <= maxIntegerDigits
		if ok != want {
			t.Fatalf("%q: integer %t (%q), want %t (%s)", s, ok, got, want, r.RatString())
		}
		if ok {
			g, _ := new(big.Int).SetString(got, 10)
			if g == nil || g.Cmp(r.Num()) != 0 {
				t.Fatalf("%q read as %q, want %s", s, got, r.Num())
			}
		}
	})
}
