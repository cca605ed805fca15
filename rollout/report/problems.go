package report

import (
	"fmt"
	"strings"

	"github.com/spiral-rl/spiral/data"
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
	// lists them: Meta.ProblemIDs, or in a report written before it
	// existed pass@k's per-problem counts or RSA's details; else nil.
	IDs []string
	// Digest is Meta.ProblemsDigest ("" when the report has none).
	Digest string
}

// ProblemIDs returns the ids of problems, in order: Meta.ProblemIDs of a
// report evaluated on them.
func ProblemIDs(problems []data.Problem) []string {
	ids := make([]string, len(problems))
	for i, p := range problems {
		ids[i] = p.ID
	}
	return ids
}

// problemSet is m's problem set with ids, the ids the report lists
// elsewhere (nil when none), standing in for Meta.ProblemIDs in a report
// written before it existed.
func (m Meta) problemSet(ids []string) ProblemSet {
	if len(m.ProblemIDs) > 0 {
		ids = m.ProblemIDs
	}
	return ProblemSet{Dataset: m.Dataset, Count: m.Problems, IDs: ids, Digest: m.ProblemsDigest}
}

// ProblemSet returns the problems r was evaluated on.
func (r PassAtK) ProblemSet() ProblemSet {
	var ids []string
	for _, pc := range r.PerProblem {
		ids = append(ids, pc.ID)
	}
	return r.Meta.problemSet(ids)
}

// ProblemSet returns the problems r was evaluated on.
func (r RSA) ProblemSet() ProblemSet {
	var ids []string
	if len(r.Steps) > 0 {
		for _, p := range r.Steps[0].Problems {
			ids = append(ids, p.ID)
		}
	}
	return r.Meta.problemSet(ids)
}

// ProblemSet returns the problems r was evaluated on (their ids only
// from Meta.ProblemIDs: a sequential report lists them nowhere else).
func (r Budget) ProblemSet() ProblemSet {
	return r.Meta.problemSet(nil)
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
	idsDiffer := false
	for i := range min(len(s.IDs), len(ref.IDs)) {
		if s.IDs[i] != ref.IDs[i] {
			d = append(d, fmt.Sprintf("problem %d is %q against %q", i, s.IDs[i], ref.IDs[i]))
			idsDiffer = true
			break
		}
	}
	if !idsDiffer && s.Digest != "" && ref.Digest != "" && s.Digest != ref.Digest {
		d = append(d, fmt.Sprintf("the problems' texts or answers differ (digest %s against %s)", s.Digest, ref.Digest))
	}
	return strings.Join(d, "; ")
}
