// Command spiral trains and evaluates language models with SPIRAL
// (Sequential-Parallel-Aggregative RL): the model samples several reasoning
// traces in parallel, then writes one aggregation trace that reads them; only
// the aggregated answer is rewarded.
//
// Usage:
//
//	spiral [command] [flags]
//
// Commands: train (the default, also when only flags are given), eval, sft,
// generate, artifacts, export, init-model, bench, plan, compare, plot, tensorboard, data, version. `spiral COMMAND
// --help` gives its usage line and lists its flags with their defaults.
//
// The package is wiring: main.go picks the command (commands),
// whose flags are bound in its cmd_*.go and cli_flags.go (one
// pflag.FlagSet per command) and handed to the packages that do the work.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/spiral-rl/spiral/rl"
)

// exitUsage is the exit status for command-line mistakes (unknown flag or
// command, bad flag value, flags that contradict the run of train's or
// sft's --out, rl.OtherRunError, or what eval saved in its --out, or a
// --checkpoint of another model than --model); exitInterrupted for a
// command stopped by SIGINT, SIGTERM or SIGHUP; exitFailure for
// everything else that fails.
const (
	exitUsage       = 2
	exitFailure     = 1
	exitInterrupted = 130 // 128 + SIGINT, as shells report it
)

// command is one subcommand: its flags are registered on fs by setup, and
// run executes it with the positional arguments left after parsing.
type command struct {
	name    string
	summary string
	// usage is the command line --help shows after "Usage: ": the
	// arguments besides flags and the flags the command requires.
	usage string
	// setup registers the command's flags and returns its run function.
	setup func(fs *pflag.FlagSet) func(ctx context.Context, env *cliEnv, args []string) error
	// stops: run watches ctx, which Ctrl-C, SIGTERM and SIGHUP cancel
	// (stopSignals), and stops where it can (train saves its last
	// step). A command that does not is left to the signals' default
	// action, which ends it at once (its ctx is then done: its run takes
	// none).
	stops bool
	// pathArgs: the positional arguments that are paths, which run
	// refuses empty (checkEmptyValues), and the command, once its flags
	// are checked, missing (checkPathArgs).
	pathArgs pathArgs
}

// pathArgs describes a command's positional arguments that are paths:
// name, as its usage line names one, and want, what it must be; sub,
// where not "", is the subcommand that the one path follows (data's
// inspect), the first argument.
type pathArgs struct{ name, want, sub string }

// The path arguments of plot and compare (reports), tensorboard (run
// directories) and data inspect (its file).
var (
	reportArgs   = pathArgs{"REPORT.json", "an eval report (spiral eval's MODE.json)", ""}
	runDirArgs   = pathArgs{"RUN_DIR", "a training run's directory (the --out of spiral train or sft)", ""}
	dataFileArgs = pathArgs{"FILE", dataFileWant, "inspect"}
)

// paths returns the arguments of args that are paths: none where p names
// none, or where p.sub is not args' first; else the one after p.sub
// (more are the subcommand's usage error), or all where p has no sub.
func (p pathArgs) paths(args []string) []string {
	if p.name == "" || p.sub != "" && (len(args) == 0 || args[0] != p.sub) {
		return nil
	}
	if p.sub != "" {
		return args[1:min(2, len(args))]
	}
	return args
}

// cliEnv carries the process's standard streams to commands, and
// release, which gives Ctrl-C, SIGTERM, SIGHUP and SIGPIPE their default
// action back, and stopping, which tells main's watch of them what the
// command keeps when they stop it (stopNotes, for its messages); both
// main's (catchSignals), nil where nothing catches them.
type cliEnv struct {
	stdout, stderr io.Writer
	release        func()
	stopping       func(stopNote)
}

// usageError marks an error as a command-line mistake (exit status 2).
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// unexpectedArgs is the error of positional arguments args that a
// command does not take; usage, where not "", follows its message. run
// names the flag that the first of them directly follows where that
// flag's value may be left out (strayValue), saying what the command
// takes there: takes, where not "" (bench's "train or generate"), else
// none. msg, where not "", is the message where no flag is at fault, in
// place of "unexpected arguments".
type unexpectedArgs struct {
	args       []string
	usage      string
	takes, msg string
}

func (e unexpectedArgs) Error() string {
	if e.msg != "" {
		return e.msg + e.usage
	}
	return fmt.Sprintf("unexpected arguments %q%s", e.args, e.usage)
}

func commands() []command {
	return []command{
		{"train", "train a model with SPIRAL, GRPO or the ablations that train only the aggregation or only the search traces (default command)", "spiral train [flags]   (also spiral [flags])", setupTrain, true, pathArgs{}},
		{"eval", "evaluate a model: sequential, pass@k, majority@k, RSA", "spiral eval [flags]", setupEval, true, pathArgs{}},
		{"sft", "supervised warm start on search and aggregation traces", "spiral sft [flags]", setupSFT, true, pathArgs{}},
		{"generate", "sample completions for prompts", `spiral generate [flags] "PROMPT" ["PROMPT" ...]`, setupGenerate, true, pathArgs{}},
		{"artifacts", "build the rollout and training graphs of an ONNX model", "spiral artifacts [flags]", setupArtifacts, false, pathArgs{}},
		{"export", "write a checkpoint's weights into the original ONNX graph, as a Hugging Face model directory, or its LoRA adapters as a peft adapter", "spiral export --checkpoint DIR --out PATH [flags]   (--format hf may omit --checkpoint)", setupExport, true, pathArgs{}},
		{"init-model", "write a randomly initialised Qwen3-architecture model (tiny, or a real config's shape)", "spiral init-model --out DIR [flags]", setupInitModel, true, pathArgs{}},
		{"bench", "measure a training step or generation on random tokens (spiral bench train|generate)", "spiral bench train|generate [flags]", setupBench, true, pathArgs{}},
		{"compare", "compare eval reports: pass@k scaling efficiency, RSA gains per step, accuracy at equal tokens; and training runs (--run, alone too): token entropy, held-out pass@1, search credit", "spiral compare [flags] [--run LABEL=DIR ...] [REF.json OTHER.json ...]   (two eval reports or more, or one with --run, or --run alone)", setupCompare, false, reportArgs},
		{"plan", "predict the memory of a training step and of generation, and the largest shapes that fit", "spiral plan --model MODEL [flags]", setupPlan, false, pathArgs{}},
		{"plot", "overlay eval reports of one mode in one figure, PNG, SVG or PDF (e.g. base vs trained)", "spiral plot [flags] REPORT.json [REPORT.json ...]   (reports of one eval mode)", setupPlot, false, reportArgs},
		{"tensorboard", "write training runs' logs (metrics.jsonl and eval.jsonl, or sft.jsonl) as TensorBoard event files in each run's tensorboard/", "spiral tensorboard RUN_DIR [RUN_DIR ...]   (the --out of spiral train or spiral sft)", setupTensorBoard, false, runDirArgs},
		{"data", "inspect a dataset file (spiral data inspect FILE) or write the synthetic task's problems (spiral data synth)", "spiral data inspect FILE [flags] | spiral data synth [flags]", setupData, false, dataFileArgs},
		{"version", "print the versions of spiral, ONNX Runtime and tokenizers", "spiral version [flags]", setupVersion, false, pathArgs{}},
	}
}

func main() {
	c := catchSignals(os.Stderr)
	code := run(c.ctx, os.Args[1:], &cliEnv{stdout: os.Stdout, stderr: os.Stderr, release: c.release, stopping: c.stopping})
	c.end()
	os.Exit(code)
}

// run dispatches args to a command and returns the process exit status.
func run(ctx context.Context, args []string, env *cliEnv) int {
	name, implicit := "train", true
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		name, args, implicit = args[0], args[1:], false
	} else if len(args) > 0 && (args[0] == "-h" || args[0] == "--help") {
		if len(args) == 1 || strings.HasPrefix(args[1], "-") {
			printTopUsage(env.stdout)
			return 0
		}
		name, args, implicit = "help", args[1:], false // spiral --help CMD: spiral help CMD
	} else if len(args) > 0 && args[0] == "--version" {
		name, args, implicit = "version", args[1:], false // as most tools take it
	}
	if name == "help" {
		// spiral help, spiral help help and spiral help --help: the
		// command list.
		if len(args) == 0 || args[0] == "help" || strings.HasPrefix(args[0], "-") {
			printTopUsage(env.stdout)
			return 0
		}
		name, args = args[0], []string{"--help"} // spiral help CMD: spiral CMD --help
	}
	var cmd *command
	for _, c := range commands() {
		if c.name == name {
			cmd = &c
			break
		}
	}
	if cmd == nil {
		fmt.Fprintf(env.stderr, "spiral: unknown command %q (run 'spiral --help' for the list)\n", name)
		return exitUsage
	}
	if !cmd.stops && env.release != nil {
		// Its work does not look at ctx: a signal caught would be lost
		// (data synth, artifacts building a real model's graphs ran on
		// to the end and exited 0, deaf to every Ctrl-C and SIGTERM).
		env.release()
	}
	fs := pflag.NewFlagSet("spiral "+cmd.name, pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	runFn := cmd.setup(fs)
	fs.Usage = func() {}
	// `spiral --quiet eval`: flags before a command are train's, and
	// the command train's argument ("unexpected arguments"), or, with
	// flags of its own after it, train's unknown flags. On a failed
	// parse, fs.Args() holds the arguments read before the flag that
	// failed.
	commandAfterFlags := func() bool {
		rest := fs.Args()
		if !implicit || len(rest) == 0 || !slices.ContainsFunc(commands(), func(c command) bool { return c.name == rest[0] }) {
			return false
		}
		fmt.Fprintf(env.stderr, "spiral: %s is a command, given after flags: give it first (spiral %s [flags]); flags with no command before them are train's\n", rest[0], rest[0])
		return true
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			printCommandUsage(env.stdout, cmd, fs)
			return 0
		}
		if !commandAfterFlags() {
			fmt.Fprintf(env.stderr, "spiral %s: %v (run 'spiral %s --help')\n", cmd.name, err, cmd.name)
		}
		return exitUsage
	}
	if commandAfterFlags() {
		return exitUsage
	}
	if err := checkDetachedValues(fs, args); err != nil {
		printError(env.stderr, cmd.name, err)
		return exitUsage
	}
	if err := checkEmptyValues(cmd, fs, fs.Args()); err != nil {
		printError(env.stderr, cmd.name, err)
		return exitUsage
	}
	if cmd.stops && env.stopping != nil {
		env.stopping(stopNotes(cmd.name, fs))
	}
	if err := runFn(ctx, env, fs.Args()); err != nil {
		var ua unexpectedArgs
		if errors.As(err, &ua) {
			if stray := strayValue(fs, args, ua.args[0]); stray != "" {
				takes := ua.takes
				if takes == "" {
					takes = "none"
				}
				err = usageError{fmt.Errorf("%s, and spiral %s takes %s%s", stray, cmd.name, takes, ua.usage)}
			}
		}
		if ctx.Err() != nil && errors.Is(err, context.Canceled) {
			err = withoutCancellation(err)
			if err == nil {
				fmt.Fprintf(env.stderr, "spiral %s: interrupted\n", cmd.name)
				return exitInterrupted
			}
		}
		printError(env.stderr, cmd.name, err)
		var ue usageError
		var other *rl.OtherRunError // the flags contradict the run in --out
		if errors.As(err, &ue) || errors.As(err, &other) {
			return exitUsage
		}
		return exitFailure
	}
	return 0
}

// withoutCancellation returns err without its context cancellations: nil
// when a signal's cancellation is all it says, else err, or what of a
// joined error is not a cancellation (a checkpoint saved on the way out
// that failed).
func withoutCancellation(err error) error {
	if !errors.Is(err, context.Canceled) {
		return err
	}
	switch u := err.(type) {
	case interface{ Unwrap() []error }:
		var rest []error
		for _, e := range u.Unwrap() {
			if e = withoutCancellation(e); e != nil {
				rest = append(rest, e)
			}
		}
		return errors.Join(rest...)
	case interface{ Unwrap() error }:
		if withoutCancellation(u.Unwrap()) == nil {
			return nil
		}
		return err
	}
	return nil
}

// flagValuesAnnotation lists, on a flag whose value may be left out (a
// NoOptDefVal), the values it takes (pflag.Flag.Annotations).
const flagValuesAnnotation = "spiral/values"

// checkDetachedValues refuses a flag whose value may be left out, given
// without "=" and followed by an argument that is one of its values
// (isFlagValue: `--shared-arena false`, `--deterministic false`, `--raw
// 0`): pflag reads that as the flag's default for a bare flag and a
// positional argument, the opposite of what was meant, and a command
// taking positional arguments (generate's prompts) would run on.
func checkDetachedValues(fs *pflag.FlagSet, args []string) error {
	for i := 0; i+1 < len(args); i++ {
		a := args[i]
		if a == "--" {
			return nil
		}
		if f := detachedFlag(fs, a); f != nil && isFlagValue(f, args[i+1]) {
			return usageError{fmt.Errorf("%s %s: a value of %s goes after \"=\" (%s=%s); without it %q is read as an argument", a, args[i+1], a, a, args[i+1], args[i+1])}
		}
	}
	return nil
}

// detachedFlag returns the flag that the argument a gives without "="
// (--shared-arena, not --shared-arena=...) where its value may be left
// out (a NoOptDefVal), so that the argument after a is not its value;
// nil where a is no such flag.
func detachedFlag(fs *pflag.FlagSet, a string) *pflag.Flag {
	if !strings.HasPrefix(a, "--") || strings.Contains(a, "=") {
		return nil
	}
	f := fs.Lookup(strings.TrimPrefix(a, "--"))
	if f == nil || f.NoOptDefVal == "" {
		return nil
	}
	return f
}

// flagValues are the values of f, a flag whose value may be left out,
// as usage names them (a bool's true and false).
func flagValues(f *pflag.Flag) []string {
	if f.Value.Type() == "bool" {
		return []string{"true", "false"}
	}
	return f.Annotations[flagValuesAnnotation]
}

// isFlagValue reports whether v is a value that f, a flag whose value
// may be left out, takes after "=": for a bool flag every spelling
// strconv.ParseBool reads, as pflag does (--raw=0, --raw=TRUE, --raw=f),
// not only flagValues' true and false; else one of flagValues.
func isFlagValue(f *pflag.Flag, v string) bool {
	if f.Value.Type() == "bool" {
		_, err := strconv.ParseBool(v)
		return err == nil
	}
	return slices.Contains(flagValues(f), v)
}

// strayValue says, where the positional argument stray directly follows
// in args a flag whose value may be left out given without "=" (a bool
// flag, --shared-arena), that its value goes after "=", with the values
// it takes: `--shared-arena maybe` read as a bare --shared-arena and the
// argument "maybe". It returns "" where stray follows no such flag.
func strayValue(fs *pflag.FlagSet, args []string, stray string) string {
	for i := 0; i+1 < len(args) && args[i] != "--"; i++ {
		a := args[i]
		f := detachedFlag(fs, a)
		if args[i+1] != stray || f == nil {
			continue
		}
		values := flagValues(f)
		forms := make([]string, len(values))
		for j, v := range values {
			forms[j] = a + "=" + v
		}
		if n := len(forms); n > 1 {
			forms = append(forms[:n-2], forms[n-2]+" or "+forms[n-1])
		}
		return fmt.Sprintf("%s %s: a value of %s goes after \"=\" (%s); without it %q is read as an argument", a, stray, a, strings.Join(forms, ", "), stray)
	}
	return ""
}

func printTopUsage(w io.Writer) {
	fmt.Fprintln(w, "spiral — train and evaluate language models with SPIRAL (learning to search and aggregate)")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Usage: spiral [command] [flags]   (no command = train)")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Commands:")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-11s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Run 'spiral COMMAND --help' for a command's flags and their defaults.")
}

// printCommandUsage prints a command's --help: its summary, its usage
// line and its flags with their defaults (no heading where it has none).
func printCommandUsage(w io.Writer, c *command, fs *pflag.FlagSet) {
	fmt.Fprintf(w, "spiral %s — %s\n\nUsage: %s\n", c.name, c.summary, c.usage)
	if flags := fs.FlagUsages(); flags != "" {
		fmt.Fprintf(w, "\nFlags:\n%s", flags)
	}
}

// printError writes err to w as the error of spiral command cmd: each
// error joined in it (errors.Join, within a usageError too: several
// checks' refusals) on a line of its own, prefixed "spiral CMD: " as a
// single error is. A package's error naming its package ("data: F:1:
// ...") where that is the command's own name (spiral data) says it once.
func printError(w io.Writer, cmd string, err error) {
	for _, e := range joinedErrors(err) {
		fmt.Fprintf(w, "spiral %s: %s\n", cmd, strings.TrimPrefix(e.Error(), cmd+": "))
	}
}

// joinedErrors lists the errors joined in err, in order, through
// usageError and nested joins; err alone where it joins none. An error
// that wraps several in a message of its own (fmt.Errorf with two %w),
// whose text is not theirs line by line, is one.
func joinedErrors(err error) []error {
	switch u := err.(type) {
	case usageError:
		return joinedErrors(u.err)
	case interface{ Unwrap() []error }:
		errs := u.Unwrap()
		lines := make([]string, len(errs))
		for i, e := range errs {
			lines[i] = e.Error()
		}
		if strings.Join(lines, "\n") != err.Error() {
			return []error{err}
		}
		var out []error
		for _, e := range errs {
			out = append(out, joinedErrors(e)...)
		}
		return out
	}
	return []error{err}
}
