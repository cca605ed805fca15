package report

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/spiral-rl/spiral/rollout"
)

// TestValidate: each case breaks one thing in a valid report; Validate
// refuses it with a message naming the field, and ReadJSON refuses the
// written report naming the file too. The unbroken reports pass.
func TestValidate(t *testing.T) {
	passk := func(edit func(r *PassAtK)) func() (any, error) {
		return func() (any, error) {
			r := reportPassAtK()
			r.Meta.Problems = 2
			r.PerProblem = []rollout.ProblemCorrect{{ID: "a", Correct: 1}, {ID: "b", Correct: 8}}
			edit(&r)
			return &r, r.Validate()
		}
	}
	rsa := func(edit func(r *RSA)) func() (any, error) {
		return func() (any, error) {
			r := reportRSA()
			edit(&r)
			return &r, r.Validate()
		}
	}
	budget := func(edit func(r *Budget)) func() (any, error) {
		return func() (any, error) {
			r := reportBudget()
			edit(&r)
			return &r, r.Validate()
		}
	}
	tests := []struct {
		name   string
		report func() (any, error)
		want   string // "" for a valid report
	}{
		{"pass@k valid", passk(func(*PassAtK) {}), ""},
		{"pass@k without per-problem counts", passk(func(r *PassAtK) { r.PerProblem = nil }), ""},
		{"pass@k equal at every k", passk(func(r *PassAtK) {
			for i := range r.Points {
				r.Points[i].PassAtK = 1
			}
		}), ""},
		{"pass@k no points", passk(func(r *PassAtK) { r.Points = nil }), `"points" is empty: a pass@k report needs at least one k`},
		{"pass@k no samples", passk(func(r *PassAtK) { r.Config.Samples = 0 }), "config.samples = 0: want the samples per problem (>= 1)"},
		{"pass@k k of 0", passk(func(r *PassAtK) { r.Points[0].K = 0 }), "points[0].k = 0: want 1..8 (config.samples)"},
		{"pass@k k above the samples", passk(func(r *PassAtK) { r.Points[3].K = 16 }), "points[3].k = 16: want 1..8"},
		{"pass@k k repeated", passk(func(r *PassAtK) { r.Points[2].K = 2 }), "points[2].k = 2 after points[1].k = 2: want k increasing"},
		{"pass@k k decreasing", passk(func(r *PassAtK) { r.Points[0], r.Points[1] = r.Points[1], r.Points[0] }), "points[1].k = 1 after points[0].k = 2: want k increasing"},
		{"pass@k NaN", passk(func(r *PassAtK) { r.Points[1].PassAtK = math.NaN() }), "points[1].pass_at_k = NaN: want a fraction in [0, 1]"},
		{"pass@k above 1", passk(func(r *PassAtK) { r.Points[3].PassAtK = 1.5 }), "points[3].pass_at_k = 1.5: want a fraction in [0, 1]"},
		{"majority@k negative", passk(func(r *PassAtK) { r.Points[2].MajorityAtK = -0.1 }), "points[2].majority_at_k = -0.1"},
		{"pass@k falling", passk(func(r *PassAtK) { r.Points[2].PassAtK = 0.3 }), "points[2].pass_at_k = 0.3 below pass@2 = 0.4"},
		{"pass@k negative tokens", passk(func(r *PassAtK) { r.Tokens.Generated = -1 }), "tokens = {prompt 10, generated -1}"},
		{"pass@k negative problems", passk(func(r *PassAtK) { r.Meta.Problems = -2 }), "meta.problems = -2"},
		{"pass@k per-problem count mismatch", passk(func(r *PassAtK) { r.Meta.Problems = 3 }), "per_problem has 2 problems, meta.problems 3"},
		{"pass@k per-problem correct above samples", passk(func(r *PassAtK) { r.PerProblem[1].Correct = 9 }), `per_problem[1] ("b"): correct = 9: want 0..8`},
		{"pass@k with problem ids", passk(func(r *PassAtK) { r.Meta.ProblemIDs = []string{"a", "b"} }), ""},
		{"pass@k problem ids of fewer problems", passk(func(r *PassAtK) { r.Meta.ProblemIDs = []string{"a"} }), "meta.problem_ids has 1 ids, meta.problems 2"},
		{"pass@k per-problem id not the problem id", passk(func(r *PassAtK) { r.Meta.ProblemIDs = []string{"a", "c"} }),
			`per_problem[1].id = "b", meta.problem_ids[1] = "c": want the same problem`},

		{"rsa valid", rsa(func(*RSA) {}), ""},
		{"rsa no steps", rsa(func(r *RSA) { r.Steps = nil }), `"steps" is empty: an RSA report needs at least step 0`},
		{"rsa not from step 0", rsa(func(r *RSA) { r.Steps = r.Steps[1:] }), "steps[0].step = 1: want 0 (steps[t] is step t, from 0)"},
		{"rsa step skipped", rsa(func(r *RSA) { r.Steps[2].Step = 3 }), "steps[2].step = 3: want 2"},
		{"rsa accuracy NaN", rsa(func(r *RSA) { r.Steps[1].Accuracy = math.NaN() }), "steps[1].accuracy = NaN: want a fraction in [0, 1]"},
		{"rsa majority above 1", rsa(func(r *RSA) { r.Steps[0].Majority = 2 }), "steps[0].majority = 2"},
		{"rsa negative cumulative tokens", rsa(func(r *RSA) { r.Steps[2].Cumulative.Prompt = -5 }), "steps[2].cumulative = {prompt -5"},
		{"rsa details of fewer problems", rsa(func(r *RSA) { r.Meta.Problems = 30 }), "steps[0].problems has 1 problems, meta.problems 30"},
		{"rsa with problem ids", rsa(func(r *RSA) { r.Meta.ProblemIDs = []string{"a"} }), ""},
		{"rsa problem ids of more problems", rsa(func(r *RSA) { r.Meta.ProblemIDs = []string{"a", "b"} }), "meta.problem_ids has 2 ids, meta.problems 1"},
		{"rsa details' id not the problem id", rsa(func(r *RSA) { r.Meta.ProblemIDs = []string{"x"} }),
			`steps[0].problems[0].id = "a", meta.problem_ids[0] = "x": want the same problem`},

		{"budget valid", budget(func(*Budget) {}), ""},
		{"budget no points", budget(func(r *Budget) { r.Points = []rollout.BudgetPoint{} }), `"points" is empty: a sequential report needs at least one budget`},
		{"budget of 0", budget(func(r *Budget) { r.Points[0].Budget = 0 }), "points[0].budget = 0: want >= 1 token"},
		{"budget not increasing", budget(func(r *Budget) { r.Points[4].Budget = 8 }), "points[4].budget = 8 after points[3].budget = 8: want budgets increasing"},
		{"budget mean tokens above the budget", budget(func(r *Budget) { r.Points[1].MeanTokens = 3 }), "points[1].mean_tokens = 3: want 0..2"},
		{"budget mean tokens NaN", budget(func(r *Budget) { r.Points[1].MeanTokens = math.NaN() }), "points[1].mean_tokens = NaN"},
		{"budget accuracy above 1", budget(func(r *Budget) { r.Points[4].Accuracy = 1.25 }), "points[4].accuracy = 1.25"},
		{"budget truncated negative", budget(func(r *Budget) { r.Points[0].Truncated = -1 }), "points[0].truncated = -1"},
		{"budget with problem ids", budget(func(r *Budget) { r.Meta.Problems, r.Meta.ProblemIDs = 2, []string{"a", "b"} }), ""},
		{"budget problem ids of fewer problems", budget(func(r *Budget) { r.Meta.ProblemIDs = []string{"a", "b"} }), "meta.problem_ids has 2 ids, meta.problems 30"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := tc.report()
			if tc.want == "" {
				require.NoError(t, err)
			} else {
				require.ErrorContains(t, err, tc.want)
			}
			if strings.Contains(tc.want, "NaN") {
				return // NaN cannot be written as JSON: those cases stop at Validate
			}
			path := filepath.Join(t.TempDir(), "r.json")
			require.NoError(t, WriteJSON(path, r))
			back := newOf(r)
			err = ReadJSON(path, back)
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, "report: "+path+": "+tc.want)
		})
	}
}

// newOf returns a new zero report of r's type (r is *PassAtK, *RSA or
// *Budget).
func newOf(r any) any {
	switch r.(type) {
	case *PassAtK:
		return new(PassAtK)
	case *RSA:
		return new(RSA)
	default:
		return new(Budget)
	}
}

// TestReadJSONRejectsEmptyReports: the reports spiral compare used to
// panic on (a pass@k report without points, an RSA report without steps),
// as files; the error names the file and what is missing.
func TestReadJSONRejectsEmptyReports(t *testing.T) {
	tests := []struct {
		name, json string
		into       any
		want       string
	}{
		{"pass@k", `{"meta":{"mode":"passk","label":"X"},"points":[]}`, new(PassAtK), `"points" is empty`},
		{"pass@k points null", `{"meta":{"mode":"passk","label":"X"},"points":null}`, new(PassAtK), `"points" is empty`},
		{"rsa", `{"meta":{"mode":"rsa","label":"X"},"steps":[]}`, new(RSA), `"steps" is empty`},
		{"sequential", `{"meta":{"mode":"sequential","label":"X"},"points":[]}`, new(Budget), `"points" is empty`},
		{"NaN is not JSON", `{"meta":{"mode":"rsa"},"steps":[{"step":0,"accuracy":NaN}]}`, new(RSA), "report: decode"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "empty.json")
			require.NoError(t, os.WriteFile(path, []byte(tc.json), 0o644))
			err := ReadJSON(path, tc.into)
			require.ErrorContains(t, err, path)
			require.ErrorContains(t, err, tc.want)
		})
	}
}
