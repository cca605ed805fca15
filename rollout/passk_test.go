package rollout

import (
	"math/big"
	"testing"

	"github.com/stretchr/testify/require"
)

// exactPassAtK is 1 - C(n-c,k)/C(n,k) in exact rational arithmetic.
func exactPassAtK(n, c, k int) *big.Rat {
	num := new(big.Int).Binomial(int64(n-c), int64(k)) // 0 when n-c < k
	den := new(big.Int).Binomial(int64(n), int64(k))
	fail := new(big.Rat).SetFrac(num, den)
	return new(big.Rat).Sub(big.NewRat(1, 1), fail)
}

func TestPassAtKMatchesExactCombinatorics(t *testing.T) {
	// Every (n, c, k) with 1 <= k <= n <= 64, 0 <= c <= n: 91,520 cases,
	// including C(64,32) ~ 1.8e18 that would lose precision as float64
	// binomials. Tolerance: the product has at most 64 factors, each with
	// relative error <= 2^-53, so the failure probability is off by at
	// most ~64 * 1.1e-16 relative; 1e-13 absolute covers it.
	cases := 0
	for n := 1; n <= 64; n++ {
		for c := 0; c <= n; c++ {
			for k := 1; k <= n; k++ {
				got, err := PassAtK(n, c, k)
				require.NoError(t, err)
				want, _ := exactPassAtK(n, c, k).Float64()
				require.InDelta(t, want, got, 1e-13, "n=%d c=%d k=%d", n, c, k)
				cases++
			}
		}
	}
	require.Equal(t, 91520, cases) // sum_{n=1}^{64} n(n+1) = 64*65*66/3
}

func TestPassAtKHandComputed(t *testing.T) {
	tests := []struct {
		name    string
		n, c, k int
		want    float64
		source  string
	}{
		{"pass@1 is c/n", 10, 3, 1, 0.3, "1 - C(7,1)/C(10,1) = 1 - 7/10"},
		{"two of four, k=2", 4, 2, 2, 5.0 / 6, "1 - C(2,2)/C(4,2) = 1 - 1/6"},
		{"none correct", 8, 0, 4, 0, "C(8,4)/C(8,4) = 1"},
		{"too few wrong to fill k", 5, 3, 3, 1, "n-c = 2 < k = 3: every 3-subset has a correct one"},
		{"k = n", 6, 1, 6, 1, "the only subset is all samples"},
		{"large n", 1000, 1, 10, 0.01, "1 - (1 - 10/1000): one factor"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := PassAtK(tc.n, tc.c, tc.k)
			require.NoError(t, err)
			require.InDelta(t, tc.want, got, 1e-15, tc.source)
		})
	}
}

func TestPassAtKErrors(t *testing.T) {
	tests := []struct {
		name    string
		n, c, k int
		want    string
	}{
		{"k > n", 4, 1, 5, "rollout: pass@k: k = 5 > n = 4 samples"},
		{"k zero", 4, 1, 0, "k = 0 < 1"},
		{"c > n", 4, 5, 2, "5 correct of 4 samples"},
		{"c negative", 4, -1, 2, "-1 correct of 4 samples"},
		{"no samples", 0, 0, 1, "k = 1 > n = 0"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := PassAtK(tc.n, tc.c, tc.k)
			require.ErrorContains(t, err, tc.want)
		})
	}
}

func BenchmarkPassAtK(b *testing.B) {
	for b.Loop() {
		if _, err := PassAtK(256, 17, 64); err != nil {
			b.Fatal(err)
		}
	}
}
