package synth

import (
	_ "embed"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"

	"github.com/spiral-rl/spiral/data"
)

// The compact templates for the tiny model.
var (
	//go:embed templates/search.txt
	searchTemplate string
	//go:embed templates/aggregate.txt
	aggregateTemplate string
)

// Templates returns the compact prompt templates of the synthetic task:
// the search prompt is the problem alone, and the aggregation prompt is
// the problem, one line "#k <candidate>" per candidate, and a short
// instruction. A fresh value is returned on every call.
func Templates() *data.Templates {
	t, err := data.ParseTemplates(searchTemplate, aggregateTemplate)
	if err != nil {
		panic("synth: embedded templates: " + err.Error()) // a build defect
	}
	return t
}

// problemChars are the characters problems and solutions are made of.
const problemChars = `Compute Solve x ok no 0123456789+-*/=.\boxed{}`

// Alphabet returns, sorted and without repeats, every character that the
// task's problems, solutions and compact prompts (with up to 9
// candidates) can contain, newline included. A character-level tokenizer
// built from it covers the whole task.
func Alphabet() string {
	t := Templates()
	cands := make([]string, 9)
	for i := range cands {
		cands[i] = problemChars
	}
	search, err := t.Search(problemChars)
	if err != nil {
		panic("synth: embedded templates: " + err.Error())
	}
	agg, err := t.Aggregate(problemChars, cands)
	if err != nil {
		panic("synth: embedded templates: " + err.Error())
	}
	set := map[rune]bool{}
	for _, c := range problemChars + search + agg {
		set[c] = true
	}
	rs := make([]rune, 0, len(set))
	for c := range set {
		rs = append(rs, c)
	}
	slices.Sort(rs)
	return string(rs)
}

// Kinds of supervised examples.
const (
	KindSearch    = "search"
	KindAggregate = "aggregate"
	// KindCheck is a solve-form search example whose derivation and
	// value of x are given (Prefix) and may be wrong: it teaches an honest
	// check of any value.
	KindCheck = "check"
)

// Example is one supervised (prompt, completion) pair.
type Example struct {
	// Kind is KindSearch, KindCheck or KindAggregate.
	Kind string `json:"kind"`
	// Prompt is the rendered template (the user turn, without chat markup).
	Prompt string `json:"prompt"`
	// Problem is the problem's text, which Prompt renders (an
	// aggregation example's with its Candidates).
	Problem string `json:"problem"`
	// Prefix, when set, is the start of the reply given to the model as
	// context (no loss on it): the forced derivation and value of a check
	// example.
	Prefix string `json:"prefix,omitempty"`
	// Completion is the reply trained on, ending in \boxed{}: the worked
	// solution of a search example; the honest check of a check
	// example's given value, right or wrong; an aggregation example's
	// confirmation of a right candidate or worked solution, or, where it
	// does not read its candidates (Mix.ReadShare), the confirmation of
	// one drawn uniformly, right or wrong.
	Completion string `json:"completion"`
	// Answer is the gold answer (the problem's, whatever Completion
	// boxes).
	Answer string `json:"answer"`
	// Candidates are the candidate solutions of an aggregation example,
	// and CandidateAnswers their final answers.
	Candidates       []string `json:"candidates,omitempty"`
	CandidateAnswers []string `json:"candidate_answers,omitempty"`
	// CorrectCandidates counts candidates without a planted mistake.
	CorrectCandidates int `json:"correct_candidates,omitempty"`
}

// SearchExample returns the search example of it: prompt = tm's search
// template on the problem, completion = the worked solution. A nil tm means
// the compact Templates().
func (t *Task) SearchExample(tm *data.Templates, it Item) (Example, error) {
	if tm == nil {
		tm = t.tmpl
	}
	p, err := tm.Search(it.Problem())
	if err != nil {
		return Example{}, fmt.Errorf("synth: %w", err)
	}
	return Example{Kind: KindSearch, Prompt: p, Problem: it.Problem(), Completion: it.Solution(), Answer: strconv.Itoa(it.Answer)}, nil
}

// AggregateExample returns an aggregation example of it with n candidates.
// In the solve form see aggregateSolve; in the compute form each candidate carries a planted mistake with probability MistakeRate;
// with probability SharedMistakeRate all wrong candidates share one
// mistake (so a wrong answer can win a vote). The completion is the
// correct worked solution. A nil tm means the compact Templates().
func (t *Task) AggregateExample(r *rand.Rand, tm *data.Templates, it Item, n int) (Example, error) {
	if n < 1 {
		return Example{}, fmt.Errorf("synth: aggregation example with %d candidates, want at least 1", n)
	}
	if tm == nil {
		tm = t.tmpl
	}
	if t.cfg.Form == FormSolve {
		return t.aggregateSolve(r, tm, it, n)
	}
	ex := Example{Kind: KindAggregate, Problem: it.Problem(), Completion: it.Solution(), Answer: strconv.Itoa(it.Answer)}
	shared := r.Float64() < t.cfg.SharedMistakeRate
	common := it.PlantMistake(r)
	for range n {
		if r.Float64() >= t.cfg.MistakeRate {
			ex.Candidates = append(ex.Candidates, it.Solution())
			ex.CandidateAnswers = append(ex.CandidateAnswers, strconv.Itoa(it.Answer))
			ex.CorrectCandidates++
			continue
		}
		m := common
		if !shared {
			m = it.PlantMistake(r)
		}
		text, ans := it.WrongSolution(m)
		ex.Candidates = append(ex.Candidates, text)
		ex.CandidateAnswers = append(ex.CandidateAnswers, strconv.Itoa(ans))
	}
	p, err := tm.Aggregate(it.Problem(), ex.Candidates)
	if err != nil {
		return Example{}, fmt.Errorf("synth: %w", err)
	}
	ex.Prompt = p
	return ex, nil
}

// Mix is the make-up of a batch of supervised examples (SFTExamples).
type Mix struct {
	// Candidates is the number of candidates of an aggregation example.
	Candidates int `json:"candidates"`
	// AggregateShare is the share of aggregation examples, in [0, 1]; the
	// rest are search examples (in the solve form, a check example with
	// probability checkShare).
	AggregateShare float64 `json:"aggregate_share"`
	// ReadShare is the share of aggregation examples, in [0, 1], whose
	// completion reads the candidates (AggregateExample's: the right one,
	// or the worked solution when none is right). The rest take a
	// candidate drawn uniformly, right or wrong, as their answer (see
	// unread): they teach the form of an aggregation trace without the
	// choice, so that reading is left for RL to learn. 1 is every
	// aggregation example reading.
	ReadShare float64 `json:"aggregate_read_share"`
}

// Validate reports the first field of m outside its range.
func (m Mix) Validate() error {
	switch {
	case m.Candidates < 1:
		return fmt.Errorf("synth: %d candidates per aggregation example: want at least 1", m.Candidates)
	case !(m.AggregateShare >= 0 && m.AggregateShare <= 1):
		return fmt.Errorf("synth: aggregate share %g: want 0 to 1", m.AggregateShare)
	case !(m.ReadShare >= 0 && m.ReadShare <= 1):
		return fmt.Errorf("synth: read share %g: want 0 to 1", m.ReadShare)
	}
	return nil
}

// SFTExamples returns n supervised examples on fresh train problems drawn
// from r, made up as m says. A nil tm means the compact Templates(). With
// m.ReadShare 1 it draws nothing from r for the choice, so its examples
// are those of a mix without ReadShare's draws.
func (t *Task) SFTExamples(r *rand.Rand, tm *data.Templates, n int, m Mix) ([]Example, error) {
	if err := m.Validate(); err != nil {
		return nil, err
	}
	if tm == nil {
		tm = t.tmpl
	}
	out := make([]Example, 0, n)
	for range n {
		it, err := t.Sample(r, Train)
		if err != nil {
			return nil, err
		}
		var ex Example
		switch {
		case r.Float64() < m.AggregateShare:
			ex, err = t.AggregateExample(r, tm, it, m.Candidates)
			if err == nil && m.ReadShare < 1 && r.Float64() >= m.ReadShare {
				ex = t.unread(r, it, ex)
			}
		case t.cfg.Form == FormSolve && r.Float64() < checkShare:
			ex, err = t.checkExample(r, tm, it)
		default:
			ex, err = t.SearchExample(tm, it)
		}
		if err != nil {
			return nil, err
		}
		out = append(out, ex)
	}
	return out, nil
}

// unread returns the aggregation example ex of it with a completion that
// does not read the candidates: it takes candidate i, drawn uniformly, as
// its answer. In the solve form that is the confirmation of the
// candidate's x, checked honestly (so it ends "no" when that x is wrong);
// in the compute form, the candidate's own solution.
func (t *Task) unread(r *rand.Rand, it Item, ex Example) Example {
	i := r.IntN(len(ex.Candidates))
	ex.Completion = ex.Candidates[i]
	if t.cfg.Form == FormSolve {
		g, err := strconv.Atoi(ex.CandidateAnswers[i])
		if err != nil {
			panic("synth: a candidate answer is not an integer: " + err.Error()) // AggregateExample wrote it
		}
		ex.Completion = it.confirmationOf(g)
	}
	return ex
}
