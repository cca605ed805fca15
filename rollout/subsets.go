package rollout

import (
	"fmt"
	"math/rand/v2"
)

// Subsets draws k subsets of n distinct indices from [0, nTraces) for
// SPIRAL's aggregation step (shape [k][n]). Each subset is drawn uniformly
// among the C(nTraces, n) subsets, by a partial Fisher–Yates shuffle of a
// fresh identity permutation, and independently of the others, so one
// trace can sit in several subsets and two subsets can be equal. Members
// are listed in the random order drawn, which the aggregation prompt keeps
// (no trace is favoured by its position). k = 0 gives an empty, non-nil
// result. It returns an error if nTraces, k or n is negative, n is 0, or
// n > nTraces.
func Subsets(rng *rand.Rand, nTraces, k, n int) ([][]int, error) {
	switch {
	case nTraces < 0 || k < 0:
		return nil, fmt.Errorf("rollout: subsets: negative count (traces %d, subsets %d)", nTraces, k)
	case n < 1:
		return nil, fmt.Errorf("rollout: subsets: subset size %d < 1", n)
	case n > nTraces:
		return nil, fmt.Errorf("rollout: subsets: subset size %d > %d traces", n, nTraces)
	}
	perm := make([]int, nTraces)
	flat := make([]int, k*n) // one backing array for all subsets
	out := make([][]int, k)
	for g := range out {
		for i := range perm {
			perm[i] = i
		}
		// After step i, perm[:i+1] is a uniform random ordered draw
		// without replacement of i+1 indices.
		for i := range n {
			j := i + rng.IntN(nTraces-i)
			perm[i], perm[j] = perm[j], perm[i]
		}
		out[g] = flat[g*n : (g+1)*n : (g+1)*n]
		copy(out[g], perm[:n])
	}
	return out, nil
}
