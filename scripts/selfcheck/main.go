// Command selfcheck reads the traces of `spiral eval --traces` on the
// embedded solve task and reports how far the traces' own checks can be
// trusted and what aggregation makes of its candidates: what a reader of
// several candidates has to work with. It is an analysis tool for the
// study (scripts/study.sh), not part of the spiral binary.
//
//	go run ./scripts/selfcheck LABEL=DIR/rsa.traces.jsonl ...
//
// For each file, over the search traces (step 0): accuracy, P(ok | right)
// and P(ok | wrong) (how often a trace's verdict says "ok" when its answer
// is right or wrong), and P(right | ok), the precision of "ok". Over the
// first aggregation step (step 1, whose candidates are search traces):
// the share whose candidates held a right answer, the accuracy when they
// did and when they did not; and the same aggregations by what their
// candidates' verdicts offered a reader who trusts them: a right answer
// marked "ok" and no wrong one marked "ok" (trusting "ok" suffices), a
// right one marked "ok" beside a wrong one marked "ok" (the reader must
// check the arithmetic itself), right answers all marked "no", or no
// right answer. Later steps are left out there: their candidates are
// aggregations. Then the aggregation traces' own verdicts at steps 1, 2,
// 4 and the last, which the next step reads as its candidates' verdicts:
// P(ok | right), P(ok | wrong) and P(right | ok). Then the populations
// at steps 0, 1, 2, 4 and the last: the share of problems whose
// population holds a right answer (what the later steps can reach: an
// aggregation reads only its candidates), the unanimous share, the
// distinct answers per problem, and the problems that lost every right
// answer since the step before or regained one. Last, the arithmetic
// of the search traces: how many of the steps "a op b = c" they write
// hold, in the derivation of x and in its check, the check's last step
// (its comparison with the equation's right-hand side, "31-38=-7.")
// apart from the others; and how many verdicts follow the comparison
// written before them ("ok" exactly when its result is 0), whether or not
// its arithmetic holds.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"

	"github.com/spiral-rl/spiral/data/synth"
	"github.com/spiral-rl/spiral/rollout/report"
)

// counts are the tallies of one traces file.
type counts struct {
	search, noVerdict                                int
	agg, aggWithRight, aggRightWith, aggRightWithout int
	// searchRight counts the right search traces, with a verdict or
	// without.
	searchRight int
	// searchVerdicts counts the search traces with a verdict by it.
	searchVerdicts verdicts
	// byOffer counts the first aggregations per offer class: [n, right].
	byOffer [numOffers][2]int
	// steps counts the search traces' written arithmetic steps, the
	// earlier ones and the last one: [n, right].
	steps [numPlaces][2]int
	// follow counts the search traces with a verdict after a comparison:
	// [n, verdict follows the comparison].
	follow [2]int
	// aggVerdicts counts the aggregation traces of each step (index
	// step-1) by their verdicts.
	aggVerdicts []verdicts
	// populations counts the problems of each RSA step (index step).
	populations []population
}

// population counts the problems of one RSA step by what their
// population of traces holds: a right answer (withRight), one answer
// only (unanimous), how many distinct answers in all (answers), and a
// right answer lost or gained since the step before.
type population struct {
	problems, withRight, unanimous, answers, lost, gained int
}

// populationsOf counts the populations of recs by step.
func populationsOf(recs []report.TraceRecord) []population {
	type key struct{ step, problem int }
	type held struct {
		answers map[string]bool
		right   bool
	}
	byKey := map[key]*held{}
	last := -1
	for _, r := range recs {
		k := key{r.Step, r.Problem}
		h := byKey[k]
		if h == nil {
			h = &held{answers: map[string]bool{}}
			byKey[k] = h
		}
		h.answers[r.Answer] = true
		h.right = h.right || r.Correct
		last = max(last, r.Step)
	}
	out := make([]population, last+1)
	for k, h := range byKey {
		p := &out[k.step]
		p.problems++
		p.answers += len(h.answers)
		if len(h.answers) == 1 {
			p.unanimous++
		}
		if h.right {
			p.withRight++
		}
		if prev, ok := byKey[key{k.step - 1, k.problem}]; ok {
			switch {
			case prev.right && !h.right:
				p.lost++
			case !prev.right && h.right:
				p.gained++
			}
		}
	}
	return out
}

// accuracy returns the share of right traces at RSA step: of the search
// traces at step 0, of the aggregations after (with a verdict or
// without, as the evaluation counts them).
func (c counts) accuracy(step int) string {
	if step == 0 {
		return ratio(c.searchRight, c.search)
	}
	v := c.aggVerdicts[step-1]
	return ratio(v.right, v.right+v.wrong)
}

// verdicts counts traces by answer and verdict (a trace without one
// counts as not passed).
type verdicts struct {
	right, okRight, wrong, okWrong int
}

// probabilities returns P(ok | right), P(ok | wrong) and P(right | ok),
// formatted by ratio.
func (v verdicts) probabilities() (okRight, okWrong, rightOk string) {
	return ratio(v.okRight, v.right), ratio(v.okWrong, v.wrong), ratio(v.okRight, v.okRight+v.okWrong)
}

// add counts a trace.
func (v *verdicts) add(correct, passed bool) {
	switch {
	case correct:
		v.right++
		if passed {
			v.okRight++
		}
	default:
		v.wrong++
		if passed {
			v.okWrong++
		}
	}
}

// Places of a written step in a search trace.
const (
	derivationStep = iota // before the value of x is stated
	earlierStep           // in the check, before its last step
	lastStep              // the check's last step: its comparison
	numPlaces
)

// stepPattern is one written step, such as "35+3=38." or "35/7=5.".
var stepPattern = regexp.MustCompile(`(-?\d+)([-+*/])(\d+)=(-?\d+)\.`)

// guessPattern is the statement of x that ends a derivation, "x=5.".
var guessPattern = regexp.MustCompile(`(^|\s)x=-?\d+\.`)

// derivationAndCheck splits trace at its last statement of x: the steps
// before it are its derivation, those after it its check; a trace that
// states no x has only a derivation.
func derivationAndCheck(trace string) (derivation, check string) {
	if locs := guessPattern.FindAllStringIndex(trace, -1); locs != nil {
		last := locs[len(locs)-1]
		return trace[:last[0]], trace[last[1]:]
	}
	return trace, ""
}

// lastComparison returns the written result of the last step of text's
// check (its comparison); ok is false when the check has no step.
func lastComparison(text string) (comparison int, ok bool) {
	_, check := derivationAndCheck(text)
	checked := writtenSteps(check)
	if len(checked) == 0 {
		return 0, false
	}
	return checked[len(checked)-1].result, true
}

// checkSteps adds the written steps of trace to steps: [place][n, right]
// (derivationAndCheck's derivation, the check's earlier steps, its last).
func checkSteps(trace string, steps *[numPlaces][2]int) {
	derivation, check := derivationAndCheck(trace)
	count := func(place int, holds bool) {
		steps[place][0]++
		if holds {
			steps[place][1]++
		}
	}
	for _, s := range writtenSteps(derivation) {
		count(derivationStep, s.holds)
	}
	checked := writtenSteps(check)
	for i, s := range checked {
		if i == len(checked)-1 {
			count(lastStep, s.holds)
		} else {
			count(earlierStep, s.holds)
		}
	}
}

// writtenStep is a step "a op b = c" as written: its result c and whether
// its arithmetic holds.
type writtenStep struct {
	result int
	holds  bool
}

// writtenSteps returns the written steps of text in turn.
func writtenSteps(text string) []writtenStep {
	var out []writtenStep
	for _, m := range stepPattern.FindAllStringSubmatch(text, -1) {
		a, errA := strconv.Atoi(m[1])
		b, errB := strconv.Atoi(m[3])
		c, errC := strconv.Atoi(m[4])
		if errA != nil || errB != nil || errC != nil {
			continue // too long for an int: not a step the task writes
		}
		holds := false
		switch m[2] {
		case "+":
			holds = a+b == c
		case "-":
			holds = a-b == c
		case "*":
			holds = a*b == c
		case "/":
			holds = b != 0 && a%b == 0 && a/b == c
		}
		out = append(out, writtenStep{result: c, holds: holds})
	}
	return out
}

// offer classes what a first aggregation's candidates offered a reader
// who trusts their verdicts.
type offer int

const (
	rightOkAlone  offer = iota // a right answer marked ok, no wrong one marked ok
	rightOkBeside              // a right answer marked ok and a wrong one marked ok
	rightSaysNo                // right answers, all marked no (or unmarked)
	noRight                    // no right answer
	numOffers
)

var offerNames = [numOffers]string{
	"a right one marked ok, no wrong one marked ok",
	"a right one and a wrong one marked ok",
	"right ones, none marked ok",
	"no right one",
}

// classify returns the offer of candidates given as (right, passed) pairs.
func classify(right, passed []bool) offer {
	var rightOk, wrongOk, anyRight bool
	for i, r := range right {
		anyRight = anyRight || r
		rightOk = rightOk || r && passed[i]
		wrongOk = wrongOk || !r && passed[i]
	}
	switch {
	case rightOk && !wrongOk:
		return rightOkAlone
	case rightOk:
		return rightOkBeside
	case anyRight:
		return rightSaysNo
	}
	return noRight
}

func tally(recs []report.TraceRecord) (counts, error) {
	c := counts{populations: populationsOf(recs)}
	type key struct{ step, problem, sample int }
	correct := make(map[key]bool, len(recs))
	passed := make(map[key]bool, len(recs))
	for _, r := range recs {
		k := key{r.Step, r.Problem, r.Sample}
		correct[k] = r.Correct
		passed[k], _ = synth.CheckVerdict(r.Text)
	}
	for _, r := range recs {
		if r.Step >= 1 {
			for len(c.aggVerdicts) < r.Step {
				c.aggVerdicts = append(c.aggVerdicts, verdicts{})
			}
			c.aggVerdicts[r.Step-1].add(r.Correct, passed[key{r.Step, r.Problem, r.Sample}])
		}
		if r.Step > 1 {
			continue
		}
		if r.Step == 1 {
			c.agg++
			with := false
			var rights, passes []bool
			for _, m := range r.Candidates {
				k := key{r.Step - 1, r.Problem, m}
				ok, found := correct[k]
				if !found {
					return c, fmt.Errorf("step %d problem %d: candidate %d of step %d is not in the file", r.Step, r.Problem, m, r.Step-1)
				}
				with = with || ok
				rights, passes = append(rights, ok), append(passes, passed[k])
			}
			o := &c.byOffer[classify(rights, passes)]
			o[0]++
			if r.Correct {
				o[1]++
			}
			switch {
			case with:
				c.aggWithRight++
				if r.Correct {
					c.aggRightWith++
				}
			case r.Correct:
				c.aggRightWithout++
			}
			continue
		}
		c.search++
		if r.Correct {
			c.searchRight++
		}
		checkSteps(r.Text, &c.steps)
		passed, at, found := synth.VerdictAt(r.Text)
		if !found {
			c.noVerdict++
			continue
		}
		// The comparison a verdict follows is written before it: the
		// last step of the check that precedes it, not a step of text
		// that runs on past the verdict.
		if comparison, compared := lastComparison(r.Text[:at]); compared {
			c.follow[0]++
			if passed == (comparison == 0) {
				c.follow[1]++
			}
		}
		c.searchVerdicts.add(r.Correct, passed)
	}
	return c, nil
}

func ratio(a, b int) string {
	if b == 0 {
		return "-"
	}
	return fmt.Sprintf("%.3f", float64(a)/float64(b))
}

// usageError marks a command-line mistake (exit status 2; other errors
// exit 1).
type usageError struct{ error }

// run reads every file, then writes the tables: a file that cannot be
// read leaves nothing written.
func run(args []string, w io.Writer) error {
	if len(args) == 0 {
		return usageError{fmt.Errorf("usage: selfcheck LABEL=FILE.traces.jsonl ...")}
	}
	var tallies []counts
	var labels []string
	for _, a := range args {
		label, path, ok := strings.Cut(a, "=")
		if !ok || label == "" || path == "" {
			return usageError{fmt.Errorf("%q: want LABEL=FILE", a)}
		}
		c, err := tallyFile(path)
		if err != nil {
			return err
		}
		tallies, labels = append(tallies, c), append(labels, label)
	}
	header(w, "model", "search traces", "accuracy", `P(ok \| right)`, `P(ok \| wrong)`, `P(right \| ok)`, "step-1 aggregations",
		"candidates hold a right one", "accuracy, with one", "accuracy, without")
	for i, c := range tallies {
		okRight, okWrong, rightOk := c.searchVerdicts.probabilities()
		fmt.Fprintf(w, "| %s | %d | %s | %s | %s | %s | %d | %s | %s | %s |\n", labels[i], c.search,
			c.accuracy(0), okRight, okWrong, rightOk,
			c.agg, ratio(c.aggWithRight, c.agg), ratio(c.aggRightWith, c.aggWithRight), ratio(c.aggRightWithout, c.agg-c.aggWithRight))
	}
	title(w, "Step-1 aggregations by what their candidates offered: share of aggregations, and their accuracy")
	header(w, append([]string{"model"}, offerNames[:]...)...)
	for i, c := range tallies {
		fmt.Fprintf(w, "| %s |", labels[i])
		for _, o := range c.byOffer {
			fmt.Fprintf(w, " %s: %s |", ratio(o[0], c.agg), ratio(o[1], o[0]))
		}
		fmt.Fprintln(w)
	}
	title(w, "The aggregation traces' own verdicts, which the next step reads: by RSA step")
	header(w, "model", "step", "aggregations", "accuracy", `P(ok \| right)`, `P(ok \| wrong)`, `P(right \| ok)`)
	for i, c := range tallies {
		for _, step := range reportedSteps(len(c.aggVerdicts)) {
			v := c.aggVerdicts[step-1]
			okRight, okWrong, rightOk := v.probabilities()
			fmt.Fprintf(w, "| %s | %d | %d | %s | %s | %s | %s |\n", labels[i], step, v.right+v.wrong, c.accuracy(step), okRight, okWrong, rightOk)
		}
	}
	title(w, "The populations by RSA step: problems whose population holds a right answer (what later steps can reach), unanimous ones, distinct answers per problem, and problems that lost every right answer since the step before or regained one")
	header(w, "model", "step", "problems", "accuracy", "holding a right answer", "unanimous", "distinct answers", "lost", "regained")
	for i, c := range tallies {
		if len(c.populations) == 0 {
			continue
		}
		for _, step := range append([]int{0}, reportedSteps(len(c.populations)-1)...) {
			p := c.populations[step]
			fmt.Fprintf(w, "| %s | %d | %d | %s | %s | %s | %s | %d | %d |\n", labels[i], step, p.problems, c.accuracy(step),
				ratio(p.withRight, p.problems), ratio(p.unanimous, p.problems), ratio(p.answers, p.problems), p.lost, p.gained)
		}
	}
	title(w, "The search traces' arithmetic: written steps, and the share that hold, in the derivation and in the check")
	header(w, "model", "derivation steps", "right", "earlier check steps", "right", "comparisons (last check steps)", "right", "verdicts after one", "follow it")
	for i, c := range tallies {
		fmt.Fprintf(w, "| %s |", labels[i])
		for _, p := range c.steps {
			fmt.Fprintf(w, " %d | %s |", p[0], ratio(p[1], p[0]))
		}
		fmt.Fprintf(w, " %d | %s |\n", c.follow[0], ratio(c.follow[1], c.follow[0]))
	}
	return nil
}

// tallyFile reads the traces file at path and tallies it.
func tallyFile(path string) (counts, error) {
	f, err := os.Open(path)
	if err != nil {
		return counts{}, err
	}
	recs, err := report.ReadTraces(f)
	f.Close()
	if err != nil {
		return counts{}, fmt.Errorf("%s: %w", path, err)
	}
	c, err := tally(recs)
	if err != nil {
		return counts{}, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// title starts a table after the one before: a blank line, the title,
// a blank line.
func title(w io.Writer, text string) {
	fmt.Fprintf(w, "\n%s\n\n", text)
}

// header writes a Markdown table's header row and separator.
func header(w io.Writer, columns ...string) {
	fmt.Fprintf(w, "| %s |\n|%s\n", strings.Join(columns, " | "), strings.Repeat("---|", len(columns)))
}

// reportedSteps returns the RSA steps reported of a file with steps
// 1..last: 1, 2, 4 and last, those that exist.
func reportedSteps(last int) []int {
	var out []int
	for _, s := range []int{1, 2, 4} {
		if s < last {
			out = append(out, s)
		}
	}
	if last > 0 {
		out = append(out, last)
	}
	return out
}

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "selfcheck:", err)
		if errors.As(err, new(usageError)) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}
