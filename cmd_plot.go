package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/pflag"

	"github.com/spiral-rl/spiral/model/jsonerr"
	"github.com/spiral-rl/spiral/model/smallfile"
	"github.com/spiral-rl/spiral/rollout/report"
)

// Bounds on a plot's sides in pixels (a 100000 x 100000 canvas would take
// 40 GB).
const (
	minPlotSide = 100
	maxPlotSide = 8000
)

func setupPlot(fs *pflag.FlagSet) func(context.Context, *cliEnv, []string) error {
	out := fs.String("out", "compare.png", "output file: .png, .svg or .pdf by its extension (its directory is created); a pipe, device or symbolic link is written into, a PNG where its name has none of them (/dev/stdout)")
	markNonEmpty(fs, "out", "the .png, .svg or .pdf file to write")
	width := fs.Int("width", 800, "width in pixels")
	height := fs.Int("height", 500, "height in pixels")
	return func(_ context.Context, env *cliEnv, args []string) error {
		if len(args) == 0 {
			return usageError{errors.New("usage: spiral plot [--out F.png|F.svg|F.pdf] REPORT.json [REPORT.json ...] (reports of one eval mode)")}
		}
		if *width < minPlotSide || *width > maxPlotSide || *height < minPlotSide || *height > maxPlotSide {
			return usageError{fmt.Errorf("--width %d --height %d: want %d..%d pixels each", *width, *height, minPlotSide, maxPlotSide)}
		}
		if st, err := os.Stat(*out); err == nil && st.IsDir() {
			// A run's checkpoints/ (or one of them): refused as such,
			// where the file suggested within it would be refused next.
			if err := refuseHousekeptOut(*out, "the plot", "compare.png"); err != nil {
				return err
			}
			return usageError{fmt.Errorf("--out %s is a directory: want the file to write, such as %s", *out, filepath.Join(*out, "compare.png"))}
		}
		if err := report.CheckPlotPath(*out); err != nil {
			return usageError{fmt.Errorf("--out %w", err)}
		}
		if err := refuseHousekeptOut(*out, "the plot", filepath.Base(*out)); err != nil {
			return err
		}
		if err := checkPathArgs(reportArgs, args); err != nil {
			return err
		}
		given := givenPaths{twice: "its curve would be drawn twice"}
		for _, p := range args {
			if err := given.add(p, p, "report"); err != nil {
				return err
			}
		}
		var mode report.Mode
		for _, p := range args {
			m, err := reportMode("plot", p)
			if err != nil {
				return err
			}
			if mode != "" && m != mode {
				return fmt.Errorf("%s is %s report and %s %s one: plot reports of one mode together", p, withArticle(m), args[0], withArticle(mode))
			}
			mode = m
		}
		size := report.PlotSize{Width: *width, Height: *height, Named: true}
		var err error
		switch mode {
		case report.ModePassAtK:
			err = plotReports(args, *out, func(r *report.PassAtK) *report.Meta { return &r.Meta }, func(r ...report.PassAtK) error { return report.PlotPassAtK(*out, size, r...) })
		case report.ModeRSA:
			err = plotReports(args, *out, func(r *report.RSA) *report.Meta { return &r.Meta }, func(r ...report.RSA) error { return report.PlotRSA(*out, size, r...) })
		case report.ModeSequential:
			err = plotReports(args, *out, func(r *report.Budget) *report.Meta { return &r.Meta }, func(r ...report.Budget) error { return report.PlotBudget(*out, size, r...) })
		}
		if err != nil {
			return err
		}
		reports := "reports"
		if len(args) == 1 {
			reports = "report"
		}
		// Not into the plot where --out is standard output's file
		// (/dev/stdout).
		said := env.stdout
		if isStdout(env.stdout, *out) {
			said = env.stderr
		}
		fmt.Fprintf(said, "wrote %s (%d %s %s)\n", *out, len(args), mode, reports)
		return nil
	}
}

// isStdout reports whether path is the file stdout writes to (os.Stat
// through links: /dev/stdout, /dev/fd/1, or the file or pipe they lead
// to), where a line printed there would go into what was written at
// path.
func isStdout(stdout io.Writer, path string) bool {
	f, ok := stdout.(*os.File)
	if !ok {
		return false
	}
	a, err := f.Stat()
	if err != nil {
		return false
	}
	b, err := os.Stat(path)
	return err == nil && os.SameFile(a, b)
}

// plotReports reads every path as a report of type R and plots them
// together into out, creating its directory: each curve named by its
// report (meta gives its Meta), and where two reports have one name
// (seeds of one model), by its file too (distinctNames).
func plotReports[R any](paths []string, out string, meta func(*R) *report.Meta, plot func(...R) error) error {
	reps := make([]R, len(paths))
	names := make([]string, len(paths))
	for i, p := range paths {
		if err := report.ReadJSON(p, &reps[i]); err != nil {
			return err
		}
		names[i] = meta(&reps[i]).Name()
	}
	for i, name := range distinctNames(names, paths) {
		meta(&reps[i]).Label = name
	}
	if err := makeParentDir("--out", out); err != nil {
		return err
	}
	return plot(reps...)
}

// distinctNames returns names with each that more than one report has
// followed by its file's directory in parentheses (the file's path where
// the directories' names are alike too), so that a legend tells them
// apart.
func distinctNames(names, paths []string) []string {
	dir := func(i int) string { return filepath.Base(filepath.Dir(paths[i])) }
	byName, byDir := map[string]int{}, map[[2]string]int{}
	for i, name := range names {
		byName[name]++
		byDir[[2]string{name, dir(i)}]++
	}
	out := slices.Clone(names)
	for i, name := range names {
		switch {
		case byName[name] == 1:
		case byDir[[2]string{name, dir(i)}] == 1:
			out[i] = fmt.Sprintf("%s (%s)", name, dir(i))
		default:
			out[i] = fmt.Sprintf("%s (%s)", name, paths[i])
		}
	}
	return out
}

// tracesSuffix ends the name of the traces eval --traces writes beside
// its report: MODE.traces.jsonl beside MODE.json.
const tracesSuffix = ".traces.jsonl"

// reportMode reads the meta.mode of a report file given to cmd (plot or
// compare): passk, rsa or sequential, else an error naming the file.
func reportMode(cmd, path string) (report.Mode, error) {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		reports := filepath.Join(path, "passk.json")
		if cmd == "compare" {
			return "", usageError{fmt.Errorf("%s is a directory: compare takes eval reports (%s, ...) as arguments, and a training run as --run LABEL=%s", path, reports, path)}
		}
		return "", usageError{fmt.Errorf("%s is a directory: plot takes eval reports (%s, ...); a training run draws its own training.png, and `spiral compare --run LABEL=%s` compares runs", path, reports, path)}
	}
	b, err := smallfile.Read(path, smallfile.Limit)
	if err != nil {
		return "", err
	}
	// Named by its file alone: one trace (eval --limit 1 --samples 1)
	// is a JSON object as a report is.
	if rep, ok := strings.CutSuffix(path, tracesSuffix); ok {
		return "", fmt.Errorf("%s: not a spiral eval report but an evaluation's traces (eval --traces): give its report, %s", path, rep+".json")
	}
	var r struct {
		Meta struct {
			Mode report.Mode `json:"mode"`
		} `json:"meta"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		if filepath.Ext(path) == ".jsonl" {
			return "", fmt.Errorf("%s: not a spiral eval report but JSON lines (a training run's log?): `spiral compare --run LABEL=%s` compares runs", path, filepath.Dir(path))
		}
		var syn *json.SyntaxError
		switch {
		case len(bytes.TrimSpace(b)) == 0:
			return "", fmt.Errorf("%s: the file is empty: want a spiral eval report", path)
		case errors.As(err, &syn) && syn.Offset == int64(len(b)) && bytes.HasPrefix(bytes.TrimSpace(b), []byte("{")):
			return "", fmt.Errorf("%s: the file ends inside its JSON (cut short?): want a whole spiral eval report", path)
		}
		return "", fmt.Errorf("%s: not a spiral eval report: %w", path, jsonerr.Describe(b, &r, err))
	}
	switch m := r.Meta.Mode; m {
	case report.ModePassAtK, report.ModeRSA, report.ModeSequential:
		return m, nil
	case "":
		return "", fmt.Errorf("%s: not a spiral eval report: no meta.mode", path)
	default:
		return "", fmt.Errorf("%s: unknown report mode %q (want %s, %s or %s)", path, m, report.ModePassAtK, report.ModeRSA, report.ModeSequential)
	}
}

// withArticle is an eval mode with its indefinite article: "an rsa",
// "a passk".
func withArticle(m report.Mode) string {
	if m == report.ModeRSA {
		return "an " + string(m)
	}
	return "a " + string(m)
}
