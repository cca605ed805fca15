package report

import (
	"testing"

	"github.com/stretchr/testify/require"

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

	p := reportPassAtK()
	p.Meta.Problems = 2
	p.PerProblem = []rollout.ProblemCorrect{{ID: "a", Correct: 1}, {ID: "b"}}
	require.Equal(t, ProblemSet{Dataset: "aime25.jsonl", Count: 2, IDs: []string{"a", "b"}}, p.ProblemSet())
	require.Equal(t, ProblemSet{Dataset: "aime25.jsonl", Count: 1, IDs: []string{"a"}}, reportRSA().ProblemSet(), "RSA details' ids")
	require.Equal(t, ProblemSet{Dataset: "aime25.jsonl", Count: 30}, reportBudget().ProblemSet())
}
