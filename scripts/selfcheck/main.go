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
// did and when they did not. Later steps are left out: their candidates
// are aggregations.
package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spiral-rl/spiral/data/synth"
	"github.com/spiral-rl/spiral/rollout/report"
)

// counts are the tallies of one traces file.
type counts struct {
	search, right, okRight, wrong, okWrong, noVerdict int
	agg, aggWithRight, aggRightWith, aggRightWithout  int
}

func tally(recs []report.TraceRecord) (counts, error) {
	var c counts
	type key struct{ step, problem, sample int }
	correct := make(map[key]bool, len(recs))
	for _, r := range recs {
		correct[key{r.Step, r.Problem, r.Sample}] = r.Correct
	}
	for _, r := range recs {
		if r.Step > 1 {
			continue
		}
		if r.Step == 1 {
			c.agg++
			with := false
			for _, m := range r.Candidates {
				ok, found := correct[key{r.Step - 1, r.Problem, m}]
				if !found {
					return c, fmt.Errorf("step %d problem %d: candidate %d of step %d is not in the file", r.Step, r.Problem, m, r.Step-1)
				}
				with = with || ok
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
		passed, found := synth.CheckVerdict(r.Text)
		if !found {
			c.noVerdict++
			continue
		}
		if r.Correct {
			c.right++
			if passed {
				c.okRight++
			}
		} else {
			c.wrong++
			if passed {
				c.okWrong++
			}
		}
	}
	return c, nil
}

func ratio(a, b int) string {
	if b == 0 {
		return "-"
	}
	return fmt.Sprintf("%.3f", float64(a)/float64(b))
}

func run(args []string, w io.Writer) error {
	if len(args) == 0 {
		return fmt.Errorf("usage: selfcheck LABEL=FILE.traces.jsonl ...")
	}
	fmt.Fprintln(w, "| model | search traces | accuracy | P(ok \\| right) | P(ok \\| wrong) | P(right \\| ok) | step-1 aggregations | candidates hold a right one | accuracy, with one | accuracy, without |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|")
	for _, a := range args {
		label, path, ok := strings.Cut(a, "=")
		if !ok {
			return fmt.Errorf("%q: want LABEL=FILE", a)
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		recs, err := report.ReadTraces(f)
		f.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		c, err := tally(recs)
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		fmt.Fprintf(w, "| %s | %d | %s | %s | %s | %s | %d | %s | %s | %s |\n", label, c.search,
			ratio(c.right, c.search), ratio(c.okRight, c.right), ratio(c.okWrong, c.wrong), ratio(c.okRight, c.okRight+c.okWrong),
			c.agg, ratio(c.aggWithRight, c.agg), ratio(c.aggRightWith, c.aggWithRight), ratio(c.aggRightWithout, c.agg-c.aggWithRight))
	}
	return nil
}

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "selfcheck:", err)
		os.Exit(2)
	}
}
