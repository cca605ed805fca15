package rollout

import "fmt"

// PassAtK is the unbiased pass@k estimator of Chen et al. 2021 ("Evaluating
// Large Language Models Trained on Code", arXiv:2107.03374): from n >= k
// samples of which c are correct, the probability that a uniformly drawn
// k-subset holds at least one correct sample,
//
//	pass@k = 1 - C(n-c, k) / C(n, k) = 1 - prod_{i=n-c+1}^{n} (1 - k/i),
//
// computed in the product form, which never forms a binomial coefficient
// (no overflow, relative error a few ulps per factor). It is 1 when
// n - c < k. It returns an error unless 0 <= c <= n and 1 <= k <= n.
func PassAtK(n, c, k int) (float64, error) {
	switch {
	case k < 1:
		return 0, fmt.Errorf("rollout: pass@k: k = %d < 1", k)
	case k > n:
		return 0, fmt.Errorf("rollout: pass@k: k = %d > n = %d samples", k, n)
	case c < 0 || c > n:
		return 0, fmt.Errorf("rollout: pass@k: %d correct of %d samples", c, n)
	}
	if n-c < k {
		return 1, nil
	}
	fail := 1.0 // C(n-c, k) / C(n, k)
	for i := n - c + 1; i <= n; i++ {
		fail *= 1 - float64(k)/float64(i)
	}
	return 1 - fail, nil
}
