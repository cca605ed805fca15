package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/pflag"

	"github.com/spiral-rl/spiral/data"
	"github.com/spiral-rl/spiral/data/synth"
	"github.com/spiral-rl/spiral/model/atomicfile"
	"github.com/spiral-rl/spiral/rollout"
)

// dataFileWant is what data inspect's FILE must be.
const dataFileWant = "a JSONL, JSON or Parquet data file"

const dataUsage = "usage: spiral data inspect FILE | spiral data synth [--split test] [--problems 128] [--max-operand 5] ... [--out FILE|-]"

func setupData(fs *pflag.FlagSet) func(context.Context, *cliEnv, []string) error {
	var df dataFlags
	df.register(fs)
	var sf synthFlags
	sf.register(fs)
	return func(_ context.Context, env *cliEnv, args []string) error {
		if err := checkDataArgs(args); err != nil {
			return err
		}
		if args[0] == "inspect" {
			if err := refuseFlags(fs, "inspect", true); err != nil {
				return err
			}
			if err := df.opt.Validate(); err != nil {
				return usageError{err}
			}
			if err := checkPathArgs(dataFileArgs, args); err != nil {
				return err
			}
			if err := inputFile("FILE", args[1], dataFileWant); err != nil {
				return err
			}
			return data.Inspect(env.stdout, args[1], df.opt)
		}
		if err := refuseFlags(fs, "synth", false); err != nil {
			return err
		}
		return writeSynth(env, &sf)
	}
}

// checkDataArgs refuses arguments other than `inspect FILE` or `synth`,
// naming those it did not understand, then data's usage.
func checkDataArgs(args []string) error {
	if len(args) == 0 {
		return usageError{errors.New(dataUsage)}
	}
	const usage = " (" + dataUsage + ")"
	got := strings.Join(args, " ")
	switch {
	case args[0] != "inspect" && args[0] != "synth":
		// run names a flag that args[0] directly follows whose value
		// may be left out, as bench's.
		return usageError{unexpectedArgs{args: args, usage: usage, takes: "inspect or synth", msg: fmt.Sprintf("want `spiral data inspect FILE` or `spiral data synth`, not %q", got)}}
	case args[0] == "inspect" && len(args) == 1:
		return usageError{fmt.Errorf("want `spiral data inspect FILE`, not %q: no FILE given%s", got, usage)}
	case args[0] == "inspect" && len(args) > 2:
		return usageError{unexpectedArgs{args: args[2:], usage: usage, takes: "none after inspect FILE", msg: fmt.Sprintf("want `spiral data inspect FILE`, one FILE, not %q", got)}}
	case args[0] == "synth" && len(args) > 1:
		return usageError{unexpectedArgs{args: args[1:], usage: usage, takes: "none after synth", msg: fmt.Sprintf("want `spiral data synth`, no argument after it, not %q", got)}}
	}
	return nil
}

// synthFlagPrefix starts the help of every flag of `spiral data synth`;
// the others are `spiral data inspect`'s.
const synthFlagPrefix = "synth: "

// refuseFlags returns a usage error naming every flag given that
// belongs to the other subcommand than sub, which would ignore it: the
// synth flags when synthFlag, else the inspect flags.
func refuseFlags(fs *pflag.FlagSet, sub string, synthFlag bool) error {
	other := "inspect"
	if synthFlag {
		other = "synth"
	}
	var errs []error
	fs.Visit(func(f *pflag.Flag) {
		if strings.HasPrefix(f.Usage, synthFlagPrefix) == synthFlag {
			errs = append(errs, fmt.Errorf("--%s is spiral data %s's; spiral data %s would ignore it", f.Name, other, sub))
		}
	})
	if len(errs) > 0 {
		return usageError{errors.Join(errs...)}
	}
	return nil
}

// synthFlags are the flags of `spiral data synth`: a problem set of the
// synthetic task, by default the embedded task's held-out split, with its
// difficulty knobs.
type synthFlags struct {
	cfg      synth.Config
	split    string
	problems int
	out      string
}

func (f *synthFlags) register(fs *pflag.FlagSet) {
	f.cfg = synth.EmbeddedConfig
	fs.StringVar(&f.split, "split", "test", synthFlagPrefix+"train or test (the split is the embedded task's for every setting: a test problem is never one the embedded model was trained on)")
	fs.IntVar(&f.problems, "problems", embeddedEvalProblems, synthFlagPrefix+"distinct problems to write")
	fs.StringVar(&f.cfg.Form, "form", f.cfg.Form, synthFlagPrefix+"solve (\"Solve x*7+3=38.\") or compute (\"Compute 7+5*3-4.\")")
	fs.IntVar(&f.cfg.MinOperands, "min-operands", f.cfg.MinOperands, synthFlagPrefix+"fewest operands per expression")
	fs.IntVar(&f.cfg.MaxOperands, "max-operands", f.cfg.MaxOperands, synthFlagPrefix+"most operands per expression")
	fs.IntVar(&f.cfg.MinOperand, "min-operand", f.cfg.MinOperand, synthFlagPrefix+"smallest operand")
	fs.IntVar(&f.cfg.MaxOperand, "max-operand", f.cfg.MaxOperand, synthFlagPrefix+"largest operand (the embedded model was trained on 1-5; larger is harder)")
	fs.StringVar(&f.out, "out", "", synthFlagPrefix+"JSONL file to write, its directory created (default, or -: standard output)")
	markNonEmpty(fs, "out", "the JSONL file to write (leave --out out for standard output)")
}

// synthRow is a line of `spiral data synth`'s JSONL, in the field names
// spiral data's loader detects.
type synthRow struct {
	ID      string `json:"id"`
	Problem string `json:"problem"`
	Answer  string `json:"answer"`
}

// writeSynth writes f.problems problems of the synthetic task as JSONL.
// With the embedded task's settings it is the very problem set the
// embedded commands use (spiral eval's held-out problems, spiral train's
// training problems), in their order.
func writeSynth(env *cliEnv, f *synthFlags) error {
	var split synth.Split
	switch f.split {
	case "train":
		split = synth.Train
	case "test":
		split = synth.Test
	default:
		return usageError{fmt.Errorf("--split %q: want train or test", f.split)}
	}
	// synth.Config reads 0 and "" as "the default": refuse them here so
	// that a flag is never silently replaced. The operand flags have
	// bounds of their own, synth's, below maxCount.
	if err := counted("--problems", f.problems); err != nil {
		return usageError{err}
	}
	for _, c := range []struct {
		flag             string
		value, low, high int
	}{
		{"min-operands", f.cfg.MinOperands, 2, synth.MaxOperandsBound},
		{"max-operands", f.cfg.MaxOperands, 2, synth.MaxOperandsBound},
		{"min-operand", f.cfg.MinOperand, 1, synth.MaxOperandBound},
		{"max-operand", f.cfg.MaxOperand, 1, synth.MaxOperandBound},
	} {
		if c.value < c.low || c.value > c.high {
			return usageError{fmt.Errorf("--%s %d: want %d..%d", c.flag, c.value, c.low, c.high)}
		}
	}
	if f.cfg.Form == "" {
		return usageError{errors.New(`--form "": want solve or compute`)}
	}
	task, err := synth.New(f.cfg, synth.EmbeddedSeed)
	if err != nil {
		// synth.Config's names, as the flags that set them.
		return usageError{errors.New(strings.NewReplacer(
			"synth: ", "",
			`form "`, `--form "`,
			"operand range ", "--min-operand..--max-operand ",
			"operands ", "--min-operands..--max-operands ",
			"max operand ", "--max-operand ").Replace(err.Error()))}
	}
	ds, err := task.Dataset(split, f.problems, synth.EmbeddedSeed)
	var few *synth.TooFewError
	if errors.As(err, &few) {
		return tooFewProblems(f.problems, few)
	}
	if err != nil {
		return usageError{err}
	}
	write := func(w io.Writer) error {
		enc := json.NewEncoder(w)
		for _, p := range ds.Problems {
			if err := enc.Encode(synthRow{ID: p.ID, Problem: p.Problem, Answer: p.Answer}); err != nil {
				return err
			}
		}
		return nil
	}
	if f.out == "" || f.out == "-" {
		return write(env.stdout)
	}
	if st, err := os.Stat(f.out); err == nil && st.IsDir() {
		return usageError{fmt.Errorf("--out %s is a directory: want the JSONL file to write, such as %s", f.out, filepath.Join(f.out, "problems.jsonl"))}
	}
	// A symbolic link that cannot be followed (a loop) is a bad value, as
	// one among its directories is (makeParentDir); one to no file is
	// written through, as a shell's > writes it.
	if _, err := os.Stat(f.out); err != nil && !errors.Is(err, fs.ErrNotExist) {
		if err := linkLeadsNowhere("--out", f.out, f.out); err != nil {
			return err
		}
	}
	// A directory's name not there yet ("sub/"): its parent would be made,
	// and the file then fail to take the directory's name.
	if os.IsPathSeparator(f.out[len(f.out)-1]) {
		return usageError{fmt.Errorf("--out %s names a directory: want the JSONL file to write, such as %s", f.out, filepath.Join(f.out, "problems.jsonl"))}
	}
	if err := checkSynthOut(f.out); err != nil {
		return err
	}
	if err := refuseHousekeptOut(f.out, "the problems", "problems.jsonl"); err != nil {
		return err
	}
	if err := makeParentDir("--out", f.out); err != nil {
		return err
	}
	// A pipe, a device or a symbolic link (/dev/stdout, /dev/null, a
	// FIFO, a link to the file to write) is written into, as a shell's >
	// writes it; a regular file is replaced atomically.
	if err := atomicfile.WriteNamed(f.out, 0o644, write); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	fmt.Fprintf(env.stderr, "spiral: wrote %d %s problems to %s\n", len(ds.Problems), f.split, f.out)
	return nil
}

// checkSynthOut refuses a synth --out whose extension names a format
// other than JSON Lines, which spiral's data loader would read the file
// as (and refuse): a .json file as one JSON document, .parquet and .pq
// as Parquet, .csv and .tsv not at all.
func checkSynthOut(out string) error {
	ext := filepath.Ext(out)
	var as string
	switch strings.ToLower(ext) {
	case ".json":
		as = "they read it as one JSON document"
	case ".parquet", ".pq":
		as = "they read it as Parquet"
	case ".csv", ".tsv":
		as = "they refuse CSV and TSV"
	default:
		return nil
	}
	return usageError{fmt.Errorf("--out %s: data synth writes JSON Lines, which --data and data inspect do not read from a %s file (%s): want a .jsonl path, such as %s",
		out, ext, as, strings.TrimSuffix(out, ext)+".jsonl")}
}

// tooFewProblems is the usage error of a --problems n past the distinct
// problems that few found: all there are where it counted them, else at
// least as many as its draws found.
func tooFewProblems(n int, few *synth.TooFewError) error {
	found := rollout.Plural(few.Found, fmt.Sprintf("distinct %s problem", few.Split))
	if few.Exact {
		found = "only " + found + " found"
	} else {
		found = "at least " + found + " (found by drawing, not counted)"
	}
	return usageError{fmt.Errorf("--problems %d: %s with these settings: ask for fewer, or widen --min-operand..--max-operand or --min-operands..--max-operands", n, found)}
}
