package rollout

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/bits"
	"math/rand/v2"
	"slices"
)

// Equivalence reports whether two non-empty final answers are the same
// answer. It is the grader's (e.g. "1/2" and "0.5" are one answer), injected
// so that this package does not import the grader. Majority voting calls it
// as equal(earlier, later), with earlier the representative of a cluster.
type Equivalence func(a, b string) bool

// NoAnswer is the Vote.Winner of a vote in which every answer is empty
// (unscorable: no final answer could be extracted). Such a vote counts as
// incorrect.
const NoAnswer = -1

// Vote is the outcome of a majority vote.
type Vote struct {
	// Winner is the index into the answers of the first-seen member of the
	// winning cluster, or NoAnswer.
	Winner int
	// Votes is the number of members in the winning cluster (0 for
	// NoAnswer).
	Votes int
}

// MajorityVote clusters the answers of the given members and returns the
// most frequent cluster. Conventions:
//   - clustering is greedy in member order: each answer joins the first
//     cluster whose representative (its first-seen member) is equivalent
//     to it, else starts a new cluster; so a non-transitive equivalence
//     is still well defined;
//   - ties go to the cluster seen first;
//   - empty answers are unscorable: they never join or form a cluster, so
//     they never win unless all answers are empty, in which case the
//     result is Vote{NoAnswer, 0} (an empty member list gives the same).
//
// Indices in members must be valid for answers (it panics otherwise).
func MajorityVote(answers []string, members []int, equal Equivalence) Vote {
	var reps, counts []int
	for _, m := range members {
		if answers[m] == "" {
			continue
		}
		joined := false
		for c, r := range reps {
			if equal(answers[r], answers[m]) {
				counts[c]++
				joined = true
				break
			}
		}
		if !joined {
			reps = append(reps, m)
			counts = append(counts, 1)
		}
	}
	v := Vote{Winner: NoAnswer}
	for c, n := range counts {
		if n > v.Votes { // strict: ties keep the earlier cluster
			v = Vote{Winner: reps[c], Votes: n}
		}
	}
	return v
}

// Defaults of MajorityConfig.
const (
	// DefaultMaxExactSubsets is the largest C(n, k) for which majority@k
	// enumerates every subset.
	DefaultMaxExactSubsets = 10000
	// DefaultMajoritySamples is the number of Monte Carlo subsets drawn
	// beyond that: the standard error of one problem's estimate is at most
	// 0.5/sqrt(2000) ~ 0.011.
	DefaultMajoritySamples = 2000
)

// MajorityConfig sets how majority@k averages over subsets. The zero value
// uses the defaults; in JSON a field at 0, the default, is omitted.
type MajorityConfig struct {
	// MaxExact: enumerate all C(n, k) subsets when there are at most this
	// many; 0 (absent in JSON) means DefaultMaxExactSubsets.
	MaxExact int `json:"max_exact,omitempty"`
	// Samples: otherwise, average over this many subsets drawn uniformly
	// and independently (with Subsets); 0 (absent in JSON) means
	// DefaultMajoritySamples.
	Samples int `json:"samples,omitempty"`
}

// WithDefaults returns c with its zero fields set to the defaults they
// stand for (DefaultMaxExactSubsets, DefaultMajoritySamples): the values
// in use, as a report records them.
func (c MajorityConfig) WithDefaults() MajorityConfig {
	if c.MaxExact == 0 {
		c.MaxExact = DefaultMaxExactSubsets
	}
	if c.Samples == 0 {
		c.Samples = DefaultMajoritySamples
	}
	return c
}

// UnmarshalJSON reads c from its keys (max_exact, samples) or from the Go
// field names that pass@k reports wrote before the fields had tags
// ("MaxExact", "Samples"), so that those reports still read; any other
// key is an error, as in report.ReadJSON. null leaves c as it is.
func (c *MajorityConfig) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	var v struct {
		MaxExact *int `json:"max_exact"`
		// Samples also reads "Samples" (keys match case-insensitively).
		Samples   *int `json:"samples"`
		MaxExact0 *int `json:"MaxExact"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil {
		return fmt.Errorf("majority: %w", err)
	}
	if v.MaxExact0 != nil {
		if v.MaxExact != nil {
			return errors.New(`majority: both "max_exact" and "MaxExact" given`)
		}
		v.MaxExact = v.MaxExact0
	}
	*c = MajorityConfig{}
	if v.MaxExact != nil {
		c.MaxExact = *v.MaxExact
	}
	if v.Samples != nil {
		c.Samples = *v.Samples
	}
	return nil
}

// MajorityResult is majority@k for one problem.
type MajorityResult struct {
	// Accuracy is the fraction of the evaluated subsets whose majority
	// vote is correct.
	Accuracy float64
	// Exact is true when every subset was evaluated, false for a Monte
	// Carlo estimate.
	Exact bool
	// Subsets is the number of subsets evaluated.
	Subsets int
}

// Ballots is one problem's n sampled answers (answers [n], correct [n]:
// the gold correctness of each answer, which the grader computed) with
// their pairwise equivalence worked out once, so that majority@k at every
// k reads one table. equal is called once per ordered pair of distinct
// non-empty answer strings that some sample pair (i < j) needs, and once
// per repeated string for equal(s, s): sampled answers repeat (256
// samples of a problem hold a handful of distinct answers), and the
// grader parses both sides on every call. equal must be a function of its
// arguments only.
type Ballots struct {
	answers []string
	correct []bool
	// class[i] numbers answers[i]'s string among the d distinct ones;
	// same[a*d+b] is equal(string a, string b) wherever some sample of
	// a precedes one of b (both non-empty), the only pairs a vote asks.
	class []int
	d     int
	same  []bool
}

// NewBallots checks the lengths and builds the equivalence table:
// memory n + d^2 for d distinct answers.
func NewBallots(answers []string, correct []bool, equal Equivalence) (*Ballots, error) {
	n := len(answers)
	switch {
	case len(correct) != n:
		return nil, fmt.Errorf("rollout: majority@k: %d answers but %d correctness flags", n, len(correct))
	case equal == nil:
		return nil, fmt.Errorf("rollout: majority@k: nil equivalence")
	}
	b := &Ballots{answers: answers, correct: correct, class: make([]int, n)}
	index := map[string]int{}
	var distinct []string
	var first, last []int // each string's first and last sample
	for i, a := range answers {
		c, ok := index[a]
		if !ok {
			c = len(distinct)
			index[a] = c
			distinct = append(distinct, a)
			first = append(first, i)
			last = append(last, i)
		}
		b.class[i] = c
		last[c] = i
	}
	b.d = len(distinct)
	b.same = make([]bool, b.d*b.d)
	for x, sx := range distinct {
		for y, sy := range distinct {
			if sx != "" && sy != "" && first[x] < last[y] {
				b.same[x*b.d+y] = equal(sx, sy)
			}
		}
	}
	return b, nil
}

// MajorityAtK is majority@k: the mean over k-subsets of the n samples of
// whether the subset's MajorityVote is correct (correct[Winner]; NoAnswer
// counts as incorrect). Members of each subset are taken in increasing
// index order, so "first seen" is the earliest sample. The average is
// exact over all C(n, k) subsets when that is at most cfg.MaxExact, else a
// Monte Carlo average over cfg.Samples uniform subsets drawn from rng
// (which may be nil when the exact path is taken). It returns an error for
// k outside [1, n], a negative cfg, or a nil rng when one is needed.
func (b *Ballots) MajorityAtK(rng *rand.Rand, k int, cfg MajorityConfig) (MajorityResult, error) {
	n := len(b.answers)
	if k < 1 || k > n {
		return MajorityResult{}, fmt.Errorf("rollout: majority@k: k = %d outside [1, %d]", k, n)
	}
	if cfg.MaxExact < 0 || cfg.Samples < 0 {
		return MajorityResult{}, fmt.Errorf("rollout: majority@k: negative config %+v", cfg)
	}
	cfg = cfg.WithDefaults()
	maxExact, samples := cfg.MaxExact, cfg.Samples
	exact := !binomialExceeds(n, k, maxExact)
	if !exact && rng == nil {
		return MajorityResult{}, fmt.Errorf("rollout: majority@k: C(%d, %d) > %d subsets needs an rng for Monte Carlo", n, k, maxExact)
	}

	v := voter{answers: b.answers, eq: func(i, j int) bool { return b.same[b.class[i]*b.d+b.class[j]] }}
	hits, count := 0, 0
	score := func(members []int) {
		w := v.vote(members)
		if w != NoAnswer && b.correct[w] {
			hits++
		}
		count++
	}
	if exact {
		members := make([]int, k)
		for i := range members {
			members[i] = i
		}
		for {
			score(members)
			if !nextCombination(members, n) {
				break
			}
		}
	} else {
		subsets, err := Subsets(rng, n, samples, k)
		if err != nil {
			return MajorityResult{}, fmt.Errorf("rollout: majority@k: %w", err)
		}
		for _, members := range subsets {
			slices.Sort(members)
			score(members)
		}
	}
	return MajorityResult{Accuracy: float64(hits) / float64(count), Exact: exact, Subsets: count}, nil
}

// voter is MajorityVote over index-based equivalence with reusable
// buffers; members must be increasing.
type voter struct {
	answers      []string
	eq           func(i, j int) bool
	reps, counts []int
}

func (v *voter) vote(members []int) int {
	v.reps, v.counts = v.reps[:0], v.counts[:0]
	for _, m := range members {
		if v.answers[m] == "" {
			continue
		}
		joined := false
		for c, r := range v.reps {
			if v.eq(r, m) {
				v.counts[c]++
				joined = true
				break
			}
		}
		if !joined {
			v.reps = append(v.reps, m)
			v.counts = append(v.counts, 1)
		}
	}
	winner, best := NoAnswer, 0
	for c, cnt := range v.counts {
		if cnt > best {
			winner, best = v.reps[c], cnt
		}
	}
	return winner
}

// nextCombination advances members, an increasing k-subset of [0, n), to
// the next one in lexicographic order, reporting false after the last.
func nextCombination(members []int, n int) bool {
	k := len(members)
	i := k - 1
	for i >= 0 && members[i] == n-k+i {
		i--
	}
	if i < 0 {
		return false
	}
	members[i]++
	for j := i + 1; j < k; j++ {
		members[j] = members[j-1] + 1
	}
	return true
}

// binomialExceeds reports whether C(n, k) > limit, for 0 <= k <= n and
// limit >= 0. It stops as soon as the partial product passes limit, and
// forms each product in 128 bits, so it never overflows.
func binomialExceeds(n, k, limit int) bool {
	k = min(k, n-k)
	c := uint64(1)
	for i := 1; i <= k; i++ {
		// c*(n-k+i)/i is C(n-k+i, i), an integer, and C(n-k+i, i) <= C(n, k).
		hi, lo := bits.Mul64(c, uint64(n-k+i))
		if hi >= uint64(i) { // quotient would not fit in 64 bits
			return true
		}
		c, _ = bits.Div64(hi, lo, uint64(i))
		if c > uint64(limit) {
			return true
		}
	}
	return false
}
