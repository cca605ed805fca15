package rollout

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"math"
	"math/big"
	"math/bits"
	"slices"
	"strconv"
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
// with the max subtracted for stability, and returns probs with
// softmaxWeights' largest logit and sum of weights.
func softmax(logits []float32, temperature float64, probs []float64) (_ []float64, maxv, sum float64) {
	probs, maxv, sum = softmaxWeights(logits, temperature, probs)
	for i := range probs {
		probs[i] /= sum
	}
	return probs, maxv, sum
}

// softmaxWeights writes the softmax's weights before normalisation,
// exp((logits-max)/temperature), into w (resized): the largest logits
// weigh exactly 1. It returns w, the largest logit and the weights' sum,
// which at temperature 1 are logSumExp's own: logSumExp(logits) is
// maxv + math.Log(sum), bit for bit.
func softmaxWeights(logits []float32, temperature float64, w []float64) (_ []float64, maxv, sum float64) {
	if cap(w) < len(logits) {
		w = make([]float64, len(logits))
	}
	w = w[:len(logits)]
	maxv = math.Inf(-1)
	for _, v := range logits {
		maxv = math.Max(maxv, float64(v))
	}
	for i, v := range logits {
		p := math.Exp((float64(v) - maxv) / temperature)
		w[i] = p
		sum += p
	}
	return w, maxv, sum
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

// topP keeps the smallest set of most probable tokens whose mass reaches
// p of the row's (nucleus sampling, Holtzman et al. 2020) and
// renormalises; p >= 1 is a no-op. This is Hugging Face's
// TopPLogitsWarper rule (sort ascending, remove the ids whose cumulative
// probability is <= 1-p, never the most probable) decided exactly: an id
// is kept when the mass of the ids before it, in byProb's order, is below
// p times the row's mass, in exact arithmetic on probs and on p read as
// the decimal it prints as (nucleusCut), so that the mass of tied ids
// meets p where it should (24 ids of 1/24 each, rounded, summed to less
// than 0.625 at the fifteenth, which kept a sixteenth). The most probable
// token is always kept, and of ids tied at the cutoff the highest are
// kept, as Hugging Face's TopPLogitsWarper and vLLM keep them (byProb).
// The set is found among the ids of probability at least
// (1-p)/len(probs) of the row's mass, which the others, holding less
// than 1-p together, cannot enter, sorted alone; where rounding leaves
// their mass short of p, the whole row is sorted. Either way the ids are
// walked in byProb's order, so the kept set and its mass are the same.
func topP(probs []float64, p float64, order []int) []int {
	if p >= 1 {
		return order
	}
	cut := newNucleusCut(probs, p)
	least := (1 - p) * cut.total / float64(len(probs))
	order = sortedAbove(probs, least, order)
	keep, mass, reached := cut.walk(order)
	if reached {
		for i, q := range probs {
			if !(q >= least) {
				probs[i] = 0
			}
		}
	} else {
		order = sortedByProb(probs, order)
		keep, mass, _ = cut.walk(order)
	}
	for _, i := range order[keep:] {
		probs[i] = 0
	}
	for _, i := range order[:keep] {
		probs[i] /= mass
	}
	return order
}

// nucleusCut decides where top-p cuts a row of probabilities: whether the
// mass before an id reaches p of the row's mass. It decides in float64
// where rounding cannot change the answer and in exact arithmetic where
// it can (ties whose mass meets p exactly, which float64 sums miss by an
// ulp either way). p is taken as the shortest decimal that reads back as
// it (strconv's 'g', -1: what --top-p spells), so that 5 tied ids at
// top-p 0.2 keep one, not two: the float64 nearest 0.2 is above 1/5.
type nucleusCut struct {
	probs []float64
	p     float64
	// total is the row's mass in float64, bound p times it.
	total, bound float64
	// rel bounds the relative error of float64 masses and of bound, and
	// short is the slack reaches allows a mass below bound: a mass
	// further below is short of p, which walk tells without reaches.
	rel, short float64
	// Once a decision needed them: exactBound is p's decimal numerator
	// times the row's mass, exact, in units of 2^(lo-1075) (fixedSum),
	// and den the decimal's denominator.
	exactBound, den *big.Int
	lo, hi          int
}

func newNucleusCut(probs []float64, p float64) *nucleusCut {
	total := 0.0
	for _, q := range probs {
		total += q
	}
	// A sum of n float64 values is within (n-1)u of the exact sum
	// relatively (u = 2^-53); p's decimal is within u of p; their
	// product rounds once more: 8(n+4)u is a generous bound.
	c := &nucleusCut{probs: probs, p: p, total: total, bound: p * total, rel: float64(len(probs)+4) * 0x1p-50}
	c.short = c.slack(c.bound)
	return c
}

// slack is how far from bound a float64 mass of the row's ids must lie
// for the comparison of the two to be the exact one's.
func (c *nucleusCut) slack(mass float64) float64 {
	return c.rel*max(mass, c.bound) + float64(len(c.probs)+4)*0x1p-1074
}

// walk goes down order, most probable first, until the mass before an id
// reaches p of the row's, and returns how many ids come before it (all of
// order where none does), their float64 mass and whether p was reached
// (the mass of all of order reaching p counts).
func (c *nucleusCut) walk(order []int) (int, float64, bool) {
	mass := 0.0
	var before *fixedSum // the exact mass before order[k], from the first close call on
	for k := 0; ; k++ {
		// Short of p by more than the slack (reaches' second case, bound
		// being the larger), it is not reached: a flat row walks half
		// its ids at top-p 0.5.
		if !(c.bound-mass > c.short) && c.reaches(mass, order[:k], &before) {
			return k, mass, true
		}
		if k == len(order) {
			return k, mass, false
		}
		q := c.probs[order[k]]
		mass += q
		if before != nil {
			before.add(q)
		}
	}
}

// reaches reports whether the mass of the ids in prefix, mass in float64
// and *before exact (nil until a close call computes it), is at least p
// of the row's.
func (c *nucleusCut) reaches(mass float64, prefix []int, before **fixedSum) bool {
	if math.IsNaN(c.bound) || math.IsInf(c.total, 0) {
		return mass >= c.bound // no distribution to cut: the sampler refuses the row
	}
	slack := c.slack(mass)
	switch {
	case mass-c.bound > slack:
		return true
	case c.bound-mass > slack:
		return false
	}
	if c.exactBound == nil {
		c.lo, c.hi = exponentSpan(c.probs)
		total := newFixedSum(c.lo, c.hi)
		for _, v := range c.probs {
			total.add(v)
		}
		pr, ok := new(big.Rat).SetString(strconv.FormatFloat(c.p, 'g', -1, 64))
		if !ok {
			panic(fmt.Sprintf("rollout: top-p %v does not read back", c.p)) // strconv's own output
		}
		t := total.int()
		c.exactBound = t.Mul(t, pr.Num())
		c.den = pr.Denom()
	}
	if *before == nil {
		*before = newFixedSum(c.lo, c.hi)
		for _, i := range prefix {
			(*before).add(c.probs[i])
		}
	}
	// before >= p*total, p = num/den: before*den >= num*total.
	b := (*before).int()
	return b.Mul(b, c.den).Cmp(c.exactBound) >= 0
}

// exponentSpan returns the smallest and the largest biased exponent
// (fixedSum's, 1 for a subnormal) of probs' non-zero values (finite,
// >= 0); 1, 1 where all are zero.
func exponentSpan(probs []float64) (lo, hi int) {
	lo, hi = math.MaxInt, 1
	for _, q := range probs {
		if q != 0 {
			e := max(int(math.Float64bits(q)>>52), 1)
			lo, hi = min(lo, e), max(hi, e)
		}
	}
	return min(lo, hi), hi
}

// fixedSum is an exact sum of float64 values >= 0 (finite) whose biased
// exponents lie in [lo, hi], as a fixed-point integer in units of
// 2^(lo-1075), the value of the lowest mantissa bit of the smallest: words,
// least significant first, with room for the carries of 2^64 terms. An
// add costs a few word additions, where a big.Float costs a hundred
// nanoseconds: a flat row of 151,668 ids at top-p 0.5, whose mass meets p
// at the 75,834th id, sums all of them exactly.
type fixedSum struct {
	lo    int
	words []uint64
}

func newFixedSum(lo, hi int) *fixedSum {
	return &fixedSum{lo: lo, words: make([]uint64, (hi-lo+53+64)/64+1)}
}

// add adds v (finite, >= 0, its exponent within the sum's span).
func (s *fixedSum) add(v float64) {
	b := math.Float64bits(v)
	e, m := int(b>>52), b&(1<<52-1)
	if e == 0 {
		e = 1 // subnormal: m * 2^(1-1075)
	} else {
		m |= 1 << 52
	}
	if m == 0 {
		return
	}
	sh := e - s.lo
	w, bit := sh/64, uint(sh%64)
	var c uint64
	s.words[w], c = bits.Add64(s.words[w], m<<bit, 0)
	s.words[w+1], c = bits.Add64(s.words[w+1], m>>(64-bit), c) // m>>64 is 0
	for i := w + 2; c != 0; i++ {
		s.words[i], c = bits.Add64(s.words[i], 0, c)
	}
}

// int returns the sum as an integer (in units of 2^(lo-1075)).
func (s *fixedSum) int() *big.Int {
	buf := make([]byte, 8*len(s.words))
	for i, w := range s.words {
		binary.BigEndian.PutUint64(buf[len(buf)-8*(i+1):], w)
	}
	return new(big.Int).SetBytes(buf)
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
// float64. The sampler records its value as pi_old whatever distribution
// it draws from (sampleInto); rl does not call it: the learner's
// log-probabilities come from its training graph.
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
