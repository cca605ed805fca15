package report

import (
	"fmt"
	"strings"
)

// ProblemSet identifies the problems a report was evaluated on, as far as
// the report records them: comparing two reports (a scaling-efficiency
// ratio, a gain per step) means something only when they answered the
// same problems.
type ProblemSet struct {
	// Dataset is Meta.Dataset: the data set's name or path as given to
	// spiral eval ("" when unknown).
	Dataset string
	// Count is Meta.Problems (0 when unknown).
	Count int
	// IDs are the problems' ids in evaluation order where the report
	// lists them (pass@k's per-problem counts, RSA's details), else nil.
	IDs []string
}

// ProblemSet returns the problems r was evaluated on.
func (r PassAtK) ProblemSet() ProblemSet {
	s := ProblemSet{Dataset: r.Meta.Dataset, Count: r.Meta.Problems}
	for _, pc := range r.PerProblem {
		s.IDs = append(s.IDs, pc.ID)
	}
	return s
}

// ProblemSet returns the problems r was evaluated on (their ids when it
// has details).
func (r RSA) ProblemSet() ProblemSet {
	s := ProblemSet{Dataset: r.Meta.Dataset, Count: r.Meta.Problems}
	if len(r.Steps) > 0 {
		for _, p := range r.Steps[0].Problems {
			s.IDs = append(s.IDs, p.ID)
		}
	}
	return s
}

// ProblemSet returns the problems r was evaluated on (a sequential report
// lists no ids).
func (r Budget) ProblemSet() ProblemSet {
	return ProblemSet{Dataset: r.Meta.Dataset, Count: r.Meta.Problems}
}

// Difference says how s differs from ref in what both record: the data
// set, the number of problems, the first problem whose id differs (over
// the problems both list), each as "s's against ref's"; "" when nothing
// recorded differs.
func (s ProblemSet) Difference(ref ProblemSet) string {
	var d []string
	if s.Dataset != "" && ref.Dataset != "" && s.Dataset != ref.Dataset {
		d = append(d, fmt.Sprintf("dataset %q against %q", s.Dataset, ref.Dataset))
	}
	if s.Count != 0 && ref.Count != 0 && s.Count != ref.Count {
		d = append(d, fmt.Sprintf("problem count %d against %d", s.Count, ref.Count))
	}
	for i := range min(len(s.IDs), len(ref.IDs)) {
		if s.IDs[i] != ref.IDs[i] {
			d = append(d, fmt.Sprintf("problem %d is %q against %q", i, s.IDs[i], ref.IDs[i]))
			break
		}
	}
	return strings.Join(d, "; ")
}
