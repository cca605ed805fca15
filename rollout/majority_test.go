package rollout

import (
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// ratEqual stands in for the grader: answers equal as rational numbers
// ("1/2" == "0.5"), else as trimmed strings.
func ratEqual(a, b string) bool {
	x, okx := new(big.Rat).SetString(a)
	y, oky := new(big.Rat).SetString(b)
	if okx && oky {
		return x.Cmp(y) == 0
	}
	return strings.TrimSpace(a) == strings.TrimSpace(b)
}

func stringEqual(a, b string) bool { return a == b }

func allMembers(n int) []int {
	m := make([]int, n)
	for i := range m {
		m[i] = i
	}
	return m
}

func TestMajorityVote(t *testing.T) {
	tests := []struct {
		name    string
		answers []string
		members []int
		equal   Equivalence
		want    Vote
		why     string
	}{
		{"clear winner", []string{"3", "2", "3"}, nil, stringEqual, Vote{0, 2}, `"3" x2 beats "2" x1`},
		{"tie to first seen", []string{"2", "3", "3", "2"}, nil, stringEqual, Vote{0, 2}, `"2" {0,3} and "3" {1,2} tie 2-2; "2" seen first`},
		{"tie order follows members", []string{"2", "3", "3", "2"}, []int{1, 0, 2, 3}, stringEqual, Vote{1, 2}, `same tie, "3" seen first in member order`},
		{"equivalence not string equality", []string{"1/2", "2", "0.5", "2.0", "2"}, nil, ratEqual, Vote{1, 3}, `{1/2, 0.5} x2, {2, 2.0, 2} x3`},
		{"equivalence tie", []string{"1/2", "2", "0.5", "2"}, nil, ratEqual, Vote{0, 2}, `{1/2, 0.5} and {2, 2} tie; 1/2 first`},
		{"string equality splits", []string{"1/2", "2", "0.5", "2"}, nil, stringEqual, Vote{1, 2}, `without the grader "1/2" and "0.5" differ`},
		{"empties never win", []string{"", "", "", "7"}, nil, stringEqual, Vote{3, 1}, `three unscorable answers lose to one answer`},
		{"empties do not break ties", []string{"", "5", "", "6"}, nil, stringEqual, Vote{1, 1}, `"5" and "6" tie 1-1; "5" first`},
		{"all empty", []string{"", "", ""}, nil, stringEqual, Vote{NoAnswer, 0}, `no scorable answer`},
		{"no members", []string{"1"}, []int{}, stringEqual, Vote{NoAnswer, 0}, `nothing to vote`},
		{"subset of members", []string{"1", "2", "2", "1", "1"}, []int{0, 1, 2}, stringEqual, Vote{1, 2}, `among {0,1,2}: "2" x2`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			members := tc.members
			if members == nil {
				members = allMembers(len(tc.answers))
			}
			require.Equal(t, tc.want, MajorityVote(tc.answers, members, tc.equal), tc.why)
		})
	}
}

// TestMajorityVoteNonTransitive: "a~b", "b~c" but not "a~c". Greedy
// clustering against representatives: b joins a's cluster, c does not
// match representative a and starts its own: {a,b} x2, {c} x1.
func TestMajorityVoteNonTransitive(t *testing.T) {
	near := func(a, b string) bool { return a == b || a+b == "ab" || a+b == "ba" || a+b == "bc" || a+b == "cb" }
	got := MajorityVote([]string{"a", "b", "c", "c"}, allMembers(4), near)
	// {a,b} x2 and {c,c} x2 tie; a's cluster first.
	require.Equal(t, Vote{0, 2}, got)
}

// majorityAtK is NewBallots and Ballots.MajorityAtK in one call.
func majorityAtK(rng *rand.Rand, answers []string, correct []bool, equal Equivalence, k int, cfg MajorityConfig) (MajorityResult, error) {
	b, err := NewBallots(answers, correct, equal)
	if err != nil {
		return MajorityResult{}, err
	}
	return b.MajorityAtK(rng, k, cfg)
}

func TestMajorityAtKHandComputed(t *testing.T) {
	tests := []struct {
		name    string
		answers []string
		correct []bool
		k       int
		want    float64
		source  string
	}{
		{"tie favours correct first", []string{"a", "a", "b"}, []bool{true, true, false}, 2, 1,
			"{0,1}: a; {0,2}: tie -> a; {1,2}: tie -> a; 3/3"},
		{"tie favours wrong first", []string{"b", "a", "a"}, []bool{false, true, true}, 2, 1.0 / 3,
			"{0,1}: tie -> b; {0,2}: tie -> b; {1,2}: a; 1/3"},
		{"k = 1 is mean accuracy", []string{"1", "2", "1", ""}, []bool{true, false, true, false}, 1, 0.5,
			"singletons: 1, 2, 1, empty -> 2 of 4 correct"},
		{"empty counts as incorrect", []string{"", ""}, []bool{true, true}, 1, 0,
			"an all-empty vote is NoAnswer, incorrect whatever correct[] says"},
		{"k = n single vote", []string{"2", "3", "3", "2"}, []bool{false, true, true, false}, 4, 0,
			`one subset; "2" wins the tie; wrong`},
		{"equivalent answers pool", []string{"0.5", "7", "1/2", "7", "2/4"}, []bool{true, false, true, false, true}, 5, 1,
			"{0.5, 1/2, 2/4} x3 beats {7, 7} x2"},
		{"k = 3 of 4", []string{"x", "y", "x", "z"}, []bool{true, false, true, false}, 3, 0.75,
			"{0,1,2}: x; {0,1,3}: tie x,y,z -> x; {0,2,3}: x; {1,2,3}: tie -> y; 3/4"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := majorityAtK(nil, tc.answers, tc.correct, ratEqual, tc.k, MajorityConfig{})
			require.NoError(t, err)
			require.True(t, got.Exact)
			require.InDelta(t, tc.want, got.Accuracy, 1e-15, tc.source)
		})
	}
}

func TestMajorityAtKErrors(t *testing.T) {
	ans, ok := []string{"1", "2", "3"}, []bool{true, false, false}
	tests := []struct {
		name    string
		rng     *rand.Rand
		answers []string
		correct []bool
		equal   Equivalence
		k       int
		cfg     MajorityConfig
		want    string
	}{
		{"length mismatch", nil, ans, ok[:2], stringEqual, 1, MajorityConfig{}, "3 answers but 2 correctness flags"},
		{"k > n", nil, ans, ok, stringEqual, 4, MajorityConfig{}, "k = 4 outside [1, 3]"},
		{"k zero", nil, ans, ok, stringEqual, 0, MajorityConfig{}, "k = 0 outside"},
		{"nil equal", nil, ans, ok, nil, 1, MajorityConfig{}, "nil equivalence"},
		{"monte carlo without rng", nil, ans, ok, stringEqual, 2, MajorityConfig{MaxExact: 2}, "C(3, 2) > 2 subsets needs an rng"},
		{"negative config", nil, ans, ok, stringEqual, 2, MajorityConfig{Samples: -1}, "negative config"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := majorityAtK(tc.rng, tc.answers, tc.correct, tc.equal, tc.k, tc.cfg)
			require.ErrorContains(t, err, "rollout: majority@k: ")
			require.ErrorContains(t, err, tc.want)
		})
	}
}

// randomAnswers draws n answers from a small vocabulary with equivalent
// spellings and empties, and marks "4" (in any spelling) correct.
func randomAnswers(rng *rand.Rand, n int) ([]string, []bool) {
	vocab := []string{"4", "4.0", "8/2", "3", "3.0", "5", "", ""}
	answers := make([]string, n)
	correct := make([]bool, n)
	for i := range answers {
		answers[i] = vocab[rng.IntN(len(vocab))]
		correct[i] = answers[i] != "" && ratEqual(answers[i], "4")
	}
	return answers, correct
}

// plainMajorityAtK enumerates the k-subsets recursively and calls
// MajorityVote (the grader directly, no cache) on each.
func plainMajorityAtK(answers []string, correct []bool, equal Equivalence, k int) float64 {
	hits, count := 0, 0
	var rec func(start int, members []int)
	rec = func(start int, members []int) {
		if len(members) == k {
			if w := MajorityVote(answers, members, equal).Winner; w != NoAnswer && correct[w] {
				hits++
			}
			count++
			return
		}
		for i := start; i < len(answers); i++ {
			rec(i+1, append(members, i))
		}
	}
	rec(0, nil)
	return float64(hits) / float64(count)
}

func TestMajorityAtKMatchesPlainLoop(t *testing.T) {
	for seed := range uint64(300) {
		rng := rand.New(rand.NewPCG(seed, 6))
		n := 1 + rng.IntN(10)
		k := 1 + rng.IntN(n)
		answers, correct := randomAnswers(rng, n)
		got, err := majorityAtK(nil, answers, correct, ratEqual, k, MajorityConfig{})
		require.NoError(t, err)
		require.True(t, got.Exact)
		require.Equal(t, int(new(big.Int).Binomial(int64(n), int64(k)).Int64()), got.Subsets)
		// Same hits over the same count: exact equality.
		require.Equal(t, plainMajorityAtK(answers, correct, ratEqual, k), got.Accuracy, "seed %d answers %q k %d", seed, answers, k)
	}
}

// TestBallotsReusedAcrossK: one table serves every k, with an
// equivalence that is neither symmetric nor transitive (a prefix
// relation), and repeated strings; each k matches the plain loop, which
// calls equal afresh on every pair of every subset.
func TestBallotsReusedAcrossK(t *testing.T) {
	prefix := func(a, b string) bool { return strings.HasPrefix(b, a) }
	vocab := []string{"1", "12", "2", "21", "1", ""}
	for seed := range uint64(60) {
		rng := rand.New(rand.NewPCG(seed, 11))
		n := 1 + rng.IntN(9)
		answers := make([]string, n)
		correct := make([]bool, n)
		for i := range answers {
			answers[i] = vocab[rng.IntN(len(vocab))]
			correct[i] = answers[i] == "12"
		}
		b, err := NewBallots(answers, correct, prefix)
		require.NoError(t, err)
		for k := 1; k <= n; k++ {
			got, err := b.MajorityAtK(nil, k, MajorityConfig{})
			require.NoError(t, err)
			require.Equal(t, plainMajorityAtK(answers, correct, prefix, k), got.Accuracy, "seed %d answers %q k %d", seed, answers, k)
		}
	}
}

// TestBallotsAskOncePerDistinctPair: 256 samples of 4 distinct answers
// and empties need at most 4 x 4 questions (one per ordered pair of
// distinct strings, equal(s, s) included), not one per sample pair, and
// never the same question twice.
func TestBallotsAskOncePerDistinctPair(t *testing.T) {
	answers, correct := make([]string, 256), make([]bool, 256)
	spellings := []string{"4", "8/2", "3", "5", ""}
	rng := rand.New(rand.NewPCG(5, 5))
	for i := range answers {
		answers[i] = spellings[rng.IntN(len(spellings))]
		correct[i] = ratEqual(answers[i], "4")
	}
	asked := map[[2]string]int{}
	counting := func(a, b string) bool {
		require.NotEmpty(t, a)
		require.NotEmpty(t, b)
		asked[[2]string{a, b}]++
		return ratEqual(a, b)
	}
	b, err := NewBallots(answers, correct, counting)
	require.NoError(t, err)
	require.Len(t, asked, 16, "every ordered pair of the 4 non-empty strings occurs among 256 samples")
	for pair, times := range asked {
		require.Equal(t, 1, times, "equal%q", pair)
	}
	got, err := b.MajorityAtK(nil, 1, MajorityConfig{})
	require.NoError(t, err)
	hits := 0
	for _, c := range correct {
		if c {
			hits++
		}
	}
	require.Equal(t, float64(hits)/256, got.Accuracy, "majority@1 is the mean accuracy")
	require.Len(t, asked, 16, "MajorityAtK asks nothing more")
}

func TestMajorityAtKMonteCarlo(t *testing.T) {
	// Force Monte Carlo on problems small enough to enumerate, and check
	// the estimate against the exact value: the estimate is a mean of S
	// Bernoulli(p) draws, so it lies within 5 sqrt(p(1-p)/S) of p except
	// with probability ~5.7e-7 (plus 1e-12 for p in {0, 1}).
	const samples = 4000
	for seed := range uint64(40) {
		rng := rand.New(rand.NewPCG(seed, 8))
		n := 6 + rng.IntN(7)
		k := 2 + rng.IntN(n-2)
		answers, correct := randomAnswers(rng, n)
		exact, err := majorityAtK(nil, answers, correct, ratEqual, k, MajorityConfig{})
		require.NoError(t, err)
		mc, err := majorityAtK(rng, answers, correct, ratEqual, k, MajorityConfig{MaxExact: 1, Samples: samples})
		require.NoError(t, err)
		require.False(t, mc.Exact)
		require.Equal(t, samples, mc.Subsets)
		p := exact.Accuracy
		require.InDelta(t, p, mc.Accuracy, 5*math.Sqrt(p*(1-p)/samples)+1e-12, "seed %d", seed)
	}
	// The Monte Carlo path is the documented one: Subsets from the same
	// rng, members sorted, MajorityVote on each.
	answers, correct := randomAnswers(rand.New(rand.NewPCG(1, 1)), 12)
	got, err := majorityAtK(rand.New(rand.NewPCG(9, 9)), answers, correct, ratEqual, 5, MajorityConfig{MaxExact: 10, Samples: 300})
	require.NoError(t, err)
	subsets, err := Subsets(rand.New(rand.NewPCG(9, 9)), 12, 300, 5)
	require.NoError(t, err)
	hits := 0
	for _, s := range subsets {
		slices.Sort(s)
		if w := MajorityVote(answers, s, ratEqual).Winner; w != NoAnswer && correct[w] {
			hits++
		}
	}
	require.Equal(t, float64(hits)/300, got.Accuracy)
}

func TestMajorityAtKDefaultsSwitchToMonteCarlo(t *testing.T) {
	// C(20,10) = 184756 > DefaultMaxExactSubsets: Monte Carlo with the
	// default sample count. C(14,7) = 3432 <= it: exact.
	answers, correct := randomAnswers(rand.New(rand.NewPCG(2, 2)), 20)
	got, err := majorityAtK(rand.New(rand.NewPCG(3, 3)), answers, correct, ratEqual, 10, MajorityConfig{})
	require.NoError(t, err)
	require.False(t, got.Exact)
	require.Equal(t, DefaultMajoritySamples, got.Subsets)
	got, err = majorityAtK(nil, answers[:14], correct[:14], ratEqual, 7, MajorityConfig{})
	require.NoError(t, err)
	require.True(t, got.Exact)
	require.Equal(t, 3432, got.Subsets)
}

func TestBinomialExceeds(t *testing.T) {
	for n := 0; n <= 70; n++ {
		for k := 0; k <= n; k++ {
			c := new(big.Int).Binomial(int64(n), int64(k))
			for _, limit := range []int{1, 10, 3432, 10000, 1 << 40, math.MaxInt} {
				want := c.Cmp(big.NewInt(int64(limit))) > 0
				require.Equal(t, want, binomialExceeds(n, k, limit), "C(%d,%d)=%s limit %d", n, k, c, limit)
			}
		}
	}
}

func TestNextCombination(t *testing.T) {
	m := []int{0, 1}
	var got []string
	for {
		got = append(got, fmt.Sprint(m))
		if !nextCombination(m, 4) {
			break
		}
	}
	require.Equal(t, []string{"[0 1]", "[0 2]", "[0 3]", "[1 2]", "[1 3]", "[2 3]"}, got)
}

func BenchmarkMajorityAtK(b *testing.B) {
	// One problem of the study's pass@k evaluation: n = 256 samples,
	// majority@k at k = 1, 2, 4, ..., 256 from one table (Monte Carlo
	// subsets for 2 <= k <= 254).
	answers, correct := randomAnswers(rand.New(rand.NewPCG(1, 2)), 256)
	rng := rand.New(rand.NewPCG(3, 4))
	for b.Loop() {
		ballots, err := NewBallots(answers, correct, ratEqual)
		if err != nil {
			b.Fatal(err)
		}
		for k := 1; k <= 256; k *= 2 {
			if _, err := ballots.MajorityAtK(rng, k, MajorityConfig{}); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// TestMajorityConfigJSON: MajorityConfig is written with snake_case keys,
// a field at 0 (the default) omitted, and reads those keys or the Go
// field names that reports wrote before the keys had tags.
func TestMajorityConfigJSON(t *testing.T) {
	for _, tc := range []struct {
		cfg  MajorityConfig
		want string
	}{
		{MajorityConfig{}, `{}`},
		{MajorityConfig{MaxExact: 100, Samples: 50}, `{"max_exact":100,"samples":50}`},
		{MajorityConfig{Samples: 50}, `{"samples":50}`},
	} {
		b, err := json.Marshal(tc.cfg)
		require.NoError(t, err)
		require.Equal(t, tc.want, string(b))
		b, err = json.Marshal(PassAtKConfig{Samples: 4, Majority: tc.cfg})
		require.NoError(t, err)
		if tc.cfg == (MajorityConfig{}) {
			require.Equal(t, `{"samples":4}`, string(b), "the defaults: no majority key")
		} else {
			require.Equal(t, `{"samples":4,"majority":`+tc.want+`}`, string(b))
		}
	}

	for _, tc := range []struct {
		name, in string
		want     MajorityConfig
		err      string
	}{
		{"snake_case", `{"max_exact":100,"samples":50}`, MajorityConfig{MaxExact: 100, Samples: 50}, ""},
		{"defaults omitted", `{}`, MajorityConfig{}, ""},
		{"null: no change", `null`, MajorityConfig{MaxExact: 7, Samples: 7}, ""},
		{"old Go field names", `{"MaxExact":100,"Samples":50}`, MajorityConfig{MaxExact: 100, Samples: 50}, ""},
		{"old Go field names at 0", `{"MaxExact":0,"Samples":0}`, MajorityConfig{}, ""},
		{"both spellings", `{"MaxExact":1,"max_exact":2}`, MajorityConfig{}, `both "max_exact" and "MaxExact"`},
		{"unknown key", `{"max_exact":1,"exact":2}`, MajorityConfig{}, `unknown field "exact"`},
		{"not a number", `{"samples":"many"}`, MajorityConfig{}, "cannot unmarshal string"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := MajorityConfig{MaxExact: 7, Samples: 7}
			err := json.Unmarshal([]byte(tc.in), &got)
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}
