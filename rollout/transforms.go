package rollout

import (
	"cmp"
	"math"
	"slices"
)

// The sampling transforms below each do one thing to one row of logits
// [vocab]; Sampler chains them as: vocabulary limit -> temperature ->
// softmax -> top-k -> top-p -> draw, where top-k, when k is below the
// row's width, normalises the softmax's weights itself (the softmax of
// the kept logits, as Hugging Face computes it). Probabilities are
// float64 for the normalisation and log-probabilities.

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
	probs, sum := softmaxWeights(logits, temperature, probs)
	for i := range probs {
		probs[i] /= sum
	}
	return probs
}

// softmaxWeights writes the softmax's weights before normalisation,
// exp((logits-max)/temperature), into w (resized): the largest logits
// weigh exactly 1. It returns w and the weights' sum.
func softmaxWeights(logits []float32, temperature float64, w []float64) ([]float64, float64) {
	if cap(w) < len(logits) {
		w = make([]float64, len(logits))
	}
	w = w[:len(logits)]
	maxv := math.Inf(-1)
	for _, v := range logits {
		maxv = math.Max(maxv, float64(v))
	}
	sum := 0.0
	for i, v := range logits {
		p := math.Exp((float64(v) - maxv) / temperature)
		w[i] = p
		sum += p
	}
	return w, sum
}

// topK zeroes every probability below the k-th largest and renormalises;
// k <= 0 or k >= len(probs) is a no-op. probs may be a softmax's weights
// (softmaxWeights), which it normalises over the ids it keeps. Ids tied
// with the k-th largest are all kept, so more than k may remain: Hugging Face's
// TopKLogitsWarper and vLLM's top-k mask only the scores strictly below
// the k-th (softmax is monotone, so equal logits are equal
// probabilities). The k-th largest is selected (a heap of k), not
// sorted out of the whole row, and the kept ids are summed from the most
// probable down, in byProb's order. order is scratch space.
func topK(probs []float64, k int, order []int) []int {
	if k <= 0 || k >= len(probs) {
		return order
	}
	var kth float64
	kth, order = kthLargest(probs, k, order)
	order = sortedAbove(probs, kth, order)
	sum := 0.0
	for _, i := range order {
		sum += probs[i]
	}
	for i, p := range probs {
		if !(p >= kth) {
			probs[i] = 0
		}
	}
	for _, i := range order {
		probs[i] /= sum
	}
	return order
}

// kthLargest returns the k-th largest of probs, 1 <= k <= len(probs),
// counting equal values apart, kept in a min-heap of k ids in heap
// (scratch space, returned).
func kthLargest(probs []float64, k int, heap []int) (float64, []int) {
	less := func(a, b int) bool { return probs[heap[a]] < probs[heap[b]] }
	down := func(i int) {
		for {
			c := 2*i + 1
			if c >= len(heap) {
				return
			}
			if c+1 < len(heap) && less(c+1, c) {
				c++
			}
			if !less(c, i) {
				return
			}
			heap[i], heap[c] = heap[c], heap[i]
			i = c
		}
	}
	heap = heap[:0]
	for i, p := range probs {
		if len(heap) < k {
			heap = append(heap, i)
			for j := len(heap) - 1; j > 0 && less(j, (j-1)/2); j = (j - 1) / 2 {
				heap[j], heap[(j-1)/2] = heap[(j-1)/2], heap[j]
			}
			continue
		}
		if p > probs[heap[0]] {
			heap[0] = i
			down(0)
		}
	}
	return probs[heap[0]], heap
}

// topP keeps the smallest set of most probable tokens whose mass reaches p
// (nucleus sampling, Holtzman et al. 2020) and renormalises; p >= 1 is a
// no-op. The most probable token is always kept, and of ids tied at the
// cutoff the highest are kept, as Hugging Face's TopPLogitsWarper and
// vLLM keep them (byProb). The set is found among the ids of probability
// at least (1-p)/len(probs), which the others, holding less than 1-p
// together, cannot enter, sorted alone; where rounding leaves their mass
// short of p, the whole row is sorted. Either way the ids are walked in
// byProb's order, so the kept set and its mass are the same.
func topP(probs []float64, p float64, order []int) []int {
	if p >= 1 {
		return order
	}
	least := (1 - p) / float64(len(probs))
	order = sortedAbove(probs, least, order)
	keep, mass, reached := nucleus(probs, p, order)
	if reached {
		for i, q := range probs {
			if !(q >= least) {
				probs[i] = 0
			}
		}
	} else {
		order = sortedByProb(probs, order)
		keep, mass, _ = nucleus(probs, p, order)
	}
	for _, i := range order[keep:] {
		probs[i] = 0
	}
	for _, i := range order[:keep] {
		probs[i] /= mass
	}
	return order
}

// nucleus walks order, most probable first, until the mass reaches p,
// and returns how many ids it took, their mass and whether it reached p.
func nucleus(probs []float64, p float64, order []int) (int, float64, bool) {
	mass := 0.0
	for keep, i := range order {
		mass += probs[i]
		if mass >= p {
			return keep + 1, mass, true
		}
	}
	return len(order), mass, false
}

// sortedAbove returns the ids whose probability is at least least in
// byProb's order (the head of sortedByProb's), in order (scratch space).
func sortedAbove(probs []float64, least float64, order []int) []int {
	order = order[:0]
	for i, q := range probs {
		if q >= least {
			order = append(order, i)
		}
	}
	slices.SortFunc(order, byProb(probs))
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
	slices.SortFunc(order, byProb(probs))
	return order
}

// byProb orders ids by probability, highest first, and ids of equal
// probability from the highest id down: the reverse of the stable
// ascending sort whose low tail Hugging Face's TopPLogitsWarper (and
// vLLM's top-p) removes, lowest ids first among ties. It is a total
// order, so any sort gives the same result.
func byProb(probs []float64) func(a, b int) int {
	return func(a, b int) int {
		if c := cmp.Compare(probs[b], probs[a]); c != 0 {
			return c
		}
		return cmp.Compare(b, a)
	}
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
