package rollout

import (
	"math"
	"sort"
)

// The sampling transforms below each do one thing to one row of logits
// [vocab]; Sampler chains them as: vocabulary limit -> temperature ->
// softmax -> top-k -> top-p -> draw. Probabilities are float64 for the
// normalisation and log-probabilities.

// greedy returns the index of the largest logit
// (ties to the lowest index).
func greedy(logits []float32) int {
	best := 0
	for i, v := range logits {
		if v > logits[best] {
			best = i
		}
	}
	return best
}

// softmax writes exp(logits/temperature) normalised into probs (resized)
// with the max subtracted for stability, and returns probs.
func softmax(logits []float32, temperature float64, probs []float64) []float64 {
	if cap(probs) < len(logits) {
		probs = make([]float64, len(logits))
	}
	probs = probs[:len(logits)]
	maxv := math.Inf(-1)
	for _, v := range logits {
		maxv = math.Max(maxv, float64(v))
	}
	sum := 0.0
	for i, v := range logits {
		p := math.Exp((float64(v) - maxv) / temperature)
		probs[i] = p
		sum += p
	}
	for i := range probs {
		probs[i] /= sum
	}
	return probs
}

// topK zeroes every probability below the k-th largest and renormalises;
// k <= 0 or k >= len(probs) is a no-op. Ids tied with the k-th largest
// are all kept, so more than k may remain: Hugging Face's
// TopKLogitsWarper and vLLM's top-k mask only the scores strictly below
// the k-th (softmax is monotone, so equal logits are equal
// probabilities). order is scratch space.
func topK(probs []float64, k int, order []int) []int {
	if k <= 0 || k >= len(probs) {
		return order
	}
	order = sortedByProb(probs, order)
	kth := probs[order[k-1]]
	for k < len(order) && probs[order[k]] == kth {
		k++
	}
	sum := 0.0
	for _, i := range order[:k] {
		sum += probs[i]
	}
	for _, i := range order[k:] {
		probs[i] = 0
	}
	for _, i := range order[:k] {
		probs[i] /= sum
	}
	return order
}

// topP keeps the smallest set of most probable tokens whose mass reaches p
// (nucleus sampling, Holtzman et al. 2020) and renormalises; p >= 1 is a
// no-op. The most probable token is always kept.
func topP(probs []float64, p float64, order []int) []int {
	if p >= 1 {
		return order
	}
	order = sortedByProb(probs, order)
	mass, keep := 0.0, 0
	for keep < len(order) {
		mass += probs[order[keep]]
		keep++
		if mass >= p {
			break
		}
	}
	for _, i := range order[keep:] {
		probs[i] = 0
	}
	for _, i := range order[:keep] {
		probs[i] /= mass
	}
	return order
}

func sortedByProb(probs []float64, order []int) []int {
	if cap(order) < len(probs) {
		order = make([]int, len(probs))
	}
	order = order[:len(probs)]
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return probs[order[a]] > probs[order[b]] })
	return order
}

// draw returns the index whose cumulative probability first exceeds u in
// [0,1); rounding leftovers go to the last index with non-zero mass.
func draw(probs []float64, u float64) int {
	acc, last := 0.0, 0
	for i, p := range probs {
		if p == 0 {
			continue
		}
		acc += p
		last = i
		if u < acc {
			return i
		}
	}
	return last
}

// LogProbOf returns log softmax(logits)[id], the log-probability of id
// under the model's own distribution (temperature 1), computed stably in
// float64. The sampler records it as pi_old; rl scores sequences with it.
func LogProbOf(logits []float32, id int) float64 {
	return float64(logits[id]) - logSumExp(logits)
}

// logSumExp returns log sum exp(x) computed stably in float64.
func logSumExp(x []float32) float64 {
	maxv := math.Inf(-1)
	for _, v := range x {
		maxv = math.Max(maxv, float64(v))
	}
	sum := 0.0
	for _, v := range x {
		sum += math.Exp(float64(v) - maxv)
	}
	return maxv + math.Log(sum)
}
