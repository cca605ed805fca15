package report

import (
	"errors"
	"fmt"

	"github.com/spiral-rl/spiral/rollout"
)

// passkSlack is how far a mean pass@k may fall from one k to the next
// (rounding; the unbiased estimator's mean never decreases with k).
const passkSlack = 1e-9

// Validate reports what makes r unusable by the comparisons and plots: no
// pass@k point, a k outside [1, config.samples] or not increasing, a
// rate outside [0, 1], pass@k falling with k, per-problem counts that do
// not fit the report (in number, or ids other than meta.problem_ids).
// Its messages name the JSON field (ReadJSON adds the file).
func (r PassAtK) Validate() error {
	if err := r.Meta.validate(); err != nil {
		return err
	}
	n := r.Config.Samples
	switch {
	case len(r.Points) == 0:
		return errors.New(`"points" is empty: a pass@k report needs at least one k`)
	case n < 1:
		return fmt.Errorf("config.samples = %d: want the samples per problem (>= 1)", n)
	}
	for i, p := range r.Points {
		switch {
		case p.K < 1 || p.K > n:
			return fmt.Errorf("points[%d].k = %d: want 1..%d (config.samples)", i, p.K, n)
		case i > 0 && p.K <= r.Points[i-1].K:
			return fmt.Errorf("points[%d].k = %d after points[%d].k = %d: want k increasing", i, p.K, i-1, r.Points[i-1].K)
		}
		if err := rate(fmt.Sprintf("points[%d].pass_at_k", i), p.PassAtK); err != nil {
			return err
		}
		if err := rate(fmt.Sprintf("points[%d].majority_at_k", i), p.MajorityAtK); err != nil {
			return err
		}
		if prev := r.Points[max(i-1, 0)]; p.PassAtK < prev.PassAtK-passkSlack {
			return fmt.Errorf("points[%d].pass_at_k = %g below pass@%d = %g: pass@k never falls as k grows", i, p.PassAtK, prev.K, prev.PassAtK)
		}
	}
	if err := tokens("tokens", r.Tokens); err != nil {
		return err
	}
	if len(r.PerProblem) > 0 && len(r.PerProblem) != r.Meta.Problems {
		return fmt.Errorf("per_problem has %d problems, meta.problems %d", len(r.PerProblem), r.Meta.Problems)
	}
	for i, pc := range r.PerProblem {
		if pc.Correct < 0 || pc.Correct > n {
			return fmt.Errorf("per_problem[%d] (%q): correct = %d: want 0..%d (config.samples)", i, pc.ID, pc.Correct, n)
		}
		if err := r.Meta.sameID(fmt.Sprintf("per_problem[%d].id", i), i, pc.ID); err != nil {
			return err
		}
	}
	return nil
}

// Validate reports what makes r unusable by the comparisons and plots: no
// step, steps not numbered 0, 1, 2, ..., a rate outside [0, 1], per-problem
// details that do not fit the report (in number, or ids other than
// meta.problem_ids). Its messages name the JSON field (ReadJSON adds the
// file).
func (r RSA) Validate() error {
	if err := r.Meta.validate(); err != nil {
		return err
	}
	if len(r.Steps) == 0 {
		return errors.New(`"steps" is empty: an RSA report needs at least step 0 (the search population)`)
	}
	for i, s := range r.Steps {
		if s.Step != i {
			return fmt.Errorf("steps[%d].step = %d: want %d (steps[t] is step t, from 0)", i, s.Step, i)
		}
		if err := rate(fmt.Sprintf("steps[%d].accuracy", i), s.Accuracy); err != nil {
			return err
		}
		if err := rate(fmt.Sprintf("steps[%d].majority", i), s.Majority); err != nil {
			return err
		}
		if err := tokens(fmt.Sprintf("steps[%d].tokens", i), s.Tokens); err != nil {
			return err
		}
		if err := tokens(fmt.Sprintf("steps[%d].cumulative", i), s.Cumulative); err != nil {
			return err
		}
		if len(s.Problems) > 0 && len(s.Problems) != r.Meta.Problems {
			return fmt.Errorf("steps[%d].problems has %d problems, meta.problems %d", i, len(s.Problems), r.Meta.Problems)
		}
		for j, p := range s.Problems {
			if err := r.Meta.sameID(fmt.Sprintf("steps[%d].problems[%d].id", i, j), j, p.ID); err != nil {
				return err
			}
		}
	}
	return nil
}

// Validate reports what makes r unusable by the comparisons and plots: no
// point, a budget below 1 or not increasing, a rate outside [0, 1], a
// negative or non-finite token count, meta.problem_ids not numbering
// meta.problems (as for every mode). Its messages name the JSON field
// (ReadJSON adds the file).
func (r Budget) Validate() error {
	if err := r.Meta.validate(); err != nil {
		return err
	}
	if len(r.Points) == 0 {
		return errors.New(`"points" is empty: a sequential report needs at least one budget`)
	}
	for i, p := range r.Points {
		switch {
		case p.Budget < 1:
			return fmt.Errorf("points[%d].budget = %d: want >= 1 token", i, p.Budget)
		case i > 0 && p.Budget <= r.Points[i-1].Budget:
			return fmt.Errorf("points[%d].budget = %d after points[%d].budget = %d: want budgets increasing", i, p.Budget, i-1, r.Points[i-1].Budget)
		case !(p.MeanTokens >= 0 && p.MeanTokens <= float64(p.Budget)):
			return fmt.Errorf("points[%d].mean_tokens = %g: want 0..%d (its budget)", i, p.MeanTokens, p.Budget)
		}
		if err := rate(fmt.Sprintf("points[%d].accuracy", i), p.Accuracy); err != nil {
			return err
		}
		if err := rate(fmt.Sprintf("points[%d].truncated", i), p.Truncated); err != nil {
			return err
		}
	}
	return tokens("tokens", r.Tokens)
}

func (m Meta) validate() error {
	if m.Problems < 0 {
		return fmt.Errorf("meta.problems = %d: want >= 0", m.Problems)
	}
	if len(m.ProblemIDs) > 0 && len(m.ProblemIDs) != m.Problems {
		return fmt.Errorf("meta.problem_ids has %d ids, meta.problems %d", len(m.ProblemIDs), m.Problems)
	}
	return nil
}

// sameID checks that id, the report's field naming problem i, is
// meta.problem_ids[i] (when the report has them; validate has checked
// their number).
func (m Meta) sameID(field string, i int, id string) error {
	if len(m.ProblemIDs) > 0 && id != m.ProblemIDs[i] {
		return fmt.Errorf("%s = %q, meta.problem_ids[%d] = %q: want the same problem", field, id, i, m.ProblemIDs[i])
	}
	return nil
}

// rate checks that the field's value is a fraction in [0, 1] (NaN is
// not).
func rate(field string, v float64) error {
	if !(v >= 0 && v <= 1) {
		return fmt.Errorf("%s = %g: want a fraction in [0, 1]", field, v)
	}
	return nil
}

// tokens checks that the field's token counts are not negative.
func tokens(field string, t rollout.Tokens) error {
	if t.Prompt < 0 || t.Generated < 0 {
		return fmt.Errorf("%s = {prompt %d, generated %d}: want counts >= 0", field, t.Prompt, t.Generated)
	}
	return nil
}
