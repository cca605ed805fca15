package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/pflag"

	"github.com/spiral-rl/spiral/rollout/report"
)

func setupCompare(fs *pflag.FlagSet) func(context.Context, *cliEnv, []string) error {
	out := fs.String("out", "", "directory for the overlay plots (passk.png, rsa.png, sequential.png; default: none)")
	return func(_ context.Context, env *cliEnv, args []string) error {
		if len(args) < 2 {
			return usageError{errors.New("usage: spiral compare [--out DIR] REF.json OTHER.json [OTHER.json ...] (eval reports; each mode's first report is the reference)")}
		}
		byMode := map[report.Mode][]string{}
		var order []report.Mode
		for _, p := range args {
			m, err := reportMode(p)
			if err != nil {
				return err
			}
			if _, ok := byMode[m]; !ok {
				order = append(order, m)
			}
			byMode[m] = append(byMode[m], p)
		}
		if *out != "" {
			if err := os.MkdirAll(*out, 0o777); err != nil {
				return fmt.Errorf("compare: --out: %w", err)
			}
		}
		size := report.PlotSize{}
		for _, m := range order {
			paths := byMode[m]
			var err error
			switch m {
			case report.ModePassAtK:
				err = compareReports(paths, func(r []report.PassAtK) error {
					if err := comparePassAtK(env.stdout, r); err != nil {
						return err
					}
					return plotInto(*out, "passk.png", func(p string) error { return report.PlotPassAtK(p, size, r...) })
				})
			case report.ModeRSA:
				err = compareReports(paths, func(r []report.RSA) error {
					if err := compareRSA(env.stdout, r); err != nil {
						return err
					}
					return plotInto(*out, "rsa.png", func(p string) error { return report.PlotRSA(p, size, r...) })
				})
			case report.ModeSequential:
				err = compareReports(paths, func(r []report.Budget) error {
					if err := compareBudget(env.stdout, r); err != nil {
						return err
					}
					return plotInto(*out, "sequential.png", func(p string) error { return report.PlotBudget(p, size, r...) })
				})
			default:
				return fmt.Errorf("%s: unknown report mode %q", paths[0], m)
			}
			if err != nil {
				return err
			}
		}
		return nil
	}
}

// compareReports reads every path as a report of type R.
func compareReports[R any](paths []string, compare func([]R) error) error {
	reps := make([]R, len(paths))
	for i, p := range paths {
		if err := report.ReadJSON(p, &reps[i]); err != nil {
			return err
		}
	}
	return compare(reps)
}

func plotInto(dir, name string, plot func(path string) error) error {
	if dir == "" {
		return nil
	}
	return plot(filepath.Join(dir, name))
}

func reportLabel(m report.Meta) string {
	if m.Label != "" {
		return m.Label
	}
	return m.Model
}

// comparePassAtK prints, for each other report, how many times more
// samples it needs to reach the reference's pass@k at each k.
func comparePassAtK(w io.Writer, reps []report.PassAtK) error {
	ref := reps[0]
	if len(reps) == 1 {
		fmt.Fprintf(w, "pass@k: only %s; nothing to compare\n\n", reportLabel(ref.Meta))
		return nil
	}
	for _, o := range reps[1:] {
		eff, err := report.PassAtKEfficiency(ref, o)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "pass@k: samples %s needs to reach %s's pass@k\n", reportLabel(o.Meta), reportLabel(ref.Meta))
		fmt.Fprintf(w, "  %6s  %8s  %10s  %s\n", "k", "target", "other k", "ratio")
		for _, p := range eff.Points {
			bound := ""
			if p.Bound != report.Exact {
				bound = " (" + string(p.Bound) + ")"
			}
			fmt.Fprintf(w, "  %6d  %8.4f  %10.2f  %.2fx%s\n", p.K, p.Target, p.OtherK, p.Ratio, bound)
		}
		if eff.Max > 0 {
			fmt.Fprintf(w, "  scaling efficiency of %s over %s: up to %.2fx (at k = %d)\n\n", reportLabel(ref.Meta), reportLabel(o.Meta), eff.Max, eff.MaxK)
		} else {
			fmt.Fprintf(w, "  no k where %s reaches %s's pass@k within its measured k\n\n", reportLabel(o.Meta), reportLabel(ref.Meta))
		}
	}
	return nil
}

// compareRSA prints each report's accuracy per step, its gain over its
// step 0 and over the reference.
func compareRSA(w io.Writer, reps []report.RSA) error {
	ref := reps[0]
	fmt.Fprintf(w, "RSA: accuracy per step (gain over step 0; over %s)\n", reportLabel(ref.Meta))
	for i, r := range reps {
		g, err := report.RSAGains(ref, r)
		if err != nil {
			return err
		}
		var cells []string
		for _, s := range g {
			c := fmt.Sprintf("%d: %.3f (%+.3f", s.Step, s.Accuracy, s.OverStep0)
			if i > 0 && !math.IsNaN(s.OverRef) {
				c += fmt.Sprintf("; %+.3f", s.OverRef)
			}
			cells = append(cells, c+")")
		}
		fmt.Fprintf(w, "  %s: %s\n", reportLabel(r.Meta), strings.Join(cells, ", "))
	}
	fmt.Fprintln(w)
	return nil
}

// compareBudget prints the reference's gain over each other report at
// equal tokens per trace.
func compareBudget(w io.Writer, reps []report.Budget) error {
	ref := reps[0]
	for _, o := range reps[1:] {
		g, err := report.BudgetGains(ref, o)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "sequential budget: %s over %s at equal tokens per trace\n", reportLabel(ref.Meta), reportLabel(o.Meta))
		fmt.Fprintf(w, "  %10s  %8s  %8s  %s\n", "tokens", "ref", "other", "gain")
		for _, p := range g {
			if math.IsNaN(p.Other) {
				fmt.Fprintf(w, "  %10.1f  %8.4f  %8s  -\n", p.Tokens, p.Accuracy, "-")
				continue
			}
			fmt.Fprintf(w, "  %10.1f  %8.4f  %8.4f  %+.4f\n", p.Tokens, p.Accuracy, p.Other, p.Gain)
		}
		fmt.Fprintln(w)
	}
	return nil
}
