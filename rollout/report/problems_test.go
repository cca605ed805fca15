package report

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/spiral-rl/spiral/data"
	"github.com/spiral-rl/spiral/rollout"
)

// TestProblemSetDifference: what each report type records of its
// problems, and how two sets differ in what both record.
func TestProblemSetDifference(t *testing.T) {
	test := ProblemSet{Dataset: "embedded:synth-test", Count: 3, IDs: []string{"synth-test-0", "synth-test-1", "synth-test-2"}}
	tests := []struct {
		name string
		s    ProblemSet
		want string
	}{
		{"same", test, ""},
		{"unknown dataset and count", ProblemSet{IDs: test.IDs}, ""},
		{"no ids", ProblemSet{Dataset: test.Dataset, Count: 3}, ""},
		{"other dataset", ProblemSet{Dataset: "train.jsonl", Count: 3, IDs: []string{"synth-train-0", "synth-train-1", "synth-train-2"}},
			`dataset "train.jsonl" against "embedded:synth-test"; problem 0 is "synth-train-0" against "synth-test-0"`},
		{"fewer problems (--limit)", ProblemSet{Dataset: test.Dataset, Count: 2, IDs: test.IDs[:2]}, "problem count 2 against 3"},
		{"same dataset name, other ids", ProblemSet{Dataset: test.Dataset, Count: 3, IDs: []string{"synth-test-0", "x", "synth-test-2"}},
			`problem 1 is "x" against "synth-test-1"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, tc.s.Difference(test))
		})
	}
}

// TestProblemsDigest: the same ids (positional, a file rewritten at its
// path) over other texts or answers differ by the digest; reports
// without one are not compared on it.
func TestProblemsDigest(t *testing.T) {
	p := []data.Problem{{ID: "p.jsonl:0", Problem: "1+1?", Answer: "2"}, {ID: "p.jsonl:1", Problem: "2+2?", Answer: "4"}}
	otherText := []data.Problem{{ID: "p.jsonl:0", Problem: "1+2?", Answer: "2"}, p[1]}
	otherAnswer := []data.Problem{p[0], {ID: "p.jsonl:1", Problem: "2+2?", Answer: "5"}}
	// Moving a character from a problem to its answer changes the digest.
	shifted := []data.Problem{{ID: "p.jsonl:0", Problem: "1+1", Answer: "?2"}, p[1]}
	set := func(ps []data.Problem, digest bool) ProblemSet {
		s := ProblemSet{Dataset: "p.jsonl", Count: len(ps), IDs: ProblemIDs(ps)}
		if digest {
			s.Digest = data.ProblemsDigest(ps)
		}
		return s
	}
	require.Equal(t, data.ProblemsDigest(p), data.ProblemsDigest(slices.Clone(p)))
	require.Len(t, data.ProblemsDigest(p), 32)
	for name, other := range map[string][]data.Problem{"text": otherText, "answer": otherAnswer, "shifted": shifted} {
		require.Contains(t, set(other, true).Difference(set(p, true)), "the problems' texts or answers differ", name)
		require.Empty(t, set(other, false).Difference(set(p, true)), "%s: no digest, nothing to compare", name)
	}
	require.Empty(t, set(p, true).Difference(set(p, true)))
}

// TestProblemSet: what each report type records of its problems:
// meta.problem_ids whatever the mode; in a report written before them,
// pass@k's per-problem counts or RSA's details, else no ids. Reports of
// one dataset and count evaluated on other problems differ by their ids
// in every mode (a data file rewritten at the same path).
func TestProblemSet(t *testing.T) {
	a, b := []string{"a0", "a1"}, []string{"b0", "b1"}
	passk := func(meta, counts []string) ProblemSet {
		r := reportPassAtK()
		r.Meta.Problems, r.Meta.ProblemIDs = 2, meta
		for _, id := range counts {
			r.PerProblem = append(r.PerProblem, rollout.ProblemCorrect{ID: id})
		}
		return r.ProblemSet()
	}
	rsa := func(meta []string, details bool) ProblemSet {
		r := reportRSA()
		r.Meta.ProblemIDs = meta
		if !details {
			r.Config.Details, r.Steps[0].Problems = false, nil
		}
		return r.ProblemSet()
	}
	budget := func(meta []string) ProblemSet {
		r := reportBudget()
		r.Meta.Problems, r.Meta.ProblemIDs = 2, meta
		return r.ProblemSet()
	}
	tests := []struct {
		name string
		got  ProblemSet
		want ProblemSet
	}{
		{"pass@k", passk(a, a), ProblemSet{Dataset: "aime25.jsonl", Count: 2, IDs: a}},
		{"pass@k without per-problem counts", passk(a, nil), ProblemSet{Dataset: "aime25.jsonl", Count: 2, IDs: a}},
		{"pass@k written before problem_ids", passk(nil, a), ProblemSet{Dataset: "aime25.jsonl", Count: 2, IDs: a}},
		{"pass@k written before per-problem counts", passk(nil, nil), ProblemSet{Dataset: "aime25.jsonl", Count: 2}},
		{"rsa", rsa([]string{"a"}, false), ProblemSet{Dataset: "aime25.jsonl", Count: 1, IDs: []string{"a"}}},
		{"rsa with details", rsa([]string{"a"}, true), ProblemSet{Dataset: "aime25.jsonl", Count: 1, IDs: []string{"a"}}},
		{"rsa written before problem_ids, details' ids", rsa(nil, true), ProblemSet{Dataset: "aime25.jsonl", Count: 1, IDs: []string{"a"}}},
		{"rsa written before problem_ids", rsa(nil, false), ProblemSet{Dataset: "aime25.jsonl", Count: 1}},
		{"sequential", budget(a), ProblemSet{Dataset: "aime25.jsonl", Count: 2, IDs: a}},
		{"sequential written before problem_ids", budget(nil), ProblemSet{Dataset: "aime25.jsonl", Count: 2}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, tc.got)
		})
	}

	rewritten := []struct {
		mode   string
		ra, rb ProblemSet
		want   string
	}{
		{"pass@k", passk(a, a), passk(b, b), `problem 0 is "b0" against "a0"`},
		{"rsa", rsa([]string{"a"}, false), rsa([]string{"b"}, false), `problem 0 is "b" against "a"`},
		{"sequential", budget(a), budget(b), `problem 0 is "b0" against "a0"`},
	}
	for _, tc := range rewritten {
		t.Run("rewritten data file: "+tc.mode, func(t *testing.T) {
			require.Equal(t, tc.want, tc.rb.Difference(tc.ra))
		})
	}
	t.Run("against a report written before problem_ids", func(t *testing.T) {
		require.Empty(t, budget(b).Difference(budget(nil)), "dataset and count only")
		require.Empty(t, rsa(nil, false).Difference(rsa([]string{"b"}, false)))
	})
}
