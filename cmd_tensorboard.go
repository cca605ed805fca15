package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/pflag"

	"github.com/spiral-rl/spiral/rl"
)

// setupTensorBoard converts the logs of training runs made without
// --tensorboard (train's metrics.jsonl and eval.jsonl, sft's sft.jsonl)
// into TensorBoard event files in each run's tensorboard/, or the steps
// of a run that went on without it that its event files lack.
func setupTensorBoard(*pflag.FlagSet) func(context.Context, *cliEnv, []string) error {
	return func(_ context.Context, env *cliEnv, args []string) (err error) {
		if len(args) == 0 {
			return usageError{errors.New("usage: spiral tensorboard RUN_DIR [RUN_DIR ...] (the --out of spiral train or spiral sft; train and sft --tensorboard log as they run)")}
		}
		if err := checkPathArgs(runDirArgs, args); err != nil {
			return err
		}
		given := givenPaths{twice: "its events would be written twice"}
		for _, dir := range args {
			st, err := os.Stat(dir) // one missing is refused above (checkPathArgs)
			if err != nil {
				return err
			}
			if !st.IsDir() {
				return usageError{fmt.Errorf("%s is a file: want a training run's directory (the --out of spiral train or sft), such as %s", dir, filepath.Dir(dir))}
			}
			if err := given.add(dir, dir, "run directory"); err != nil {
				return err
			}
			if err := refuseEventsFile(dir); err != nil {
				return err
			}
		}
		// Each run is locked as train and sft lock it while they run (a
		// training appends to the logs read here, and cuts them and the
		// event files back when it resumes), and every run is read and
		// checked before any is written: one refused leaves the others
		// unconverted, for the same command to convert them all once it
		// is mended.
		var unlocks []func() error
		defer func() {
			for _, unlock := range unlocks {
				err = errors.Join(err, unlock())
			}
		}()
		for _, dir := range args {
			unlock, err := rl.LockRun(dir)
			var inUse *rl.RunInUseError
			if errors.As(err, &inUse) {
				return fmt.Errorf("%s is in use by another spiral process (%s): a training writing its logs there; convert them once it is done (train and sft --tensorboard log as they run)%s", dir, inUse.Holder, inUse.Stale())
			}
			if err != nil {
				return err
			}
			unlocks = append(unlocks, unlock)
		}
		exports := make([]rl.TensorBoardExport, len(args))
		for i, dir := range args {
			// An sft --overwrite killed within or after its commit left
			// its removals to the next sft there: they are done first, so
			// that its log is read as the committed sft.jsonl and the
			// replaced run's events (tensorboard-finished/) go.
			if err := rl.FinishCommittedSFT(dir); err != nil {
				return fmt.Errorf("%s: %w", dir, err)
			}
			x, err := rl.PrepareTensorBoard(dir)
			if err != nil {
				return err
			}
			exports[i] = x
		}
		for _, x := range exports {
			if err := x.Write(); err != nil {
				return err
			}
			if len(x.Converted) > 0 {
				names := make([]string, len(x.Converted))
				for i, c := range x.Converted {
					names[i] = filepath.Base(c)
				}
				fmt.Fprintf(env.stderr, "spiral: note: %s holds the events of %s already (%s): left as it is\n",
					filepath.Dir(x.Converted[0]), strings.Join(x.Logs, " and "), strings.Join(names, ", "))
				continue
			}
			for _, r := range x.Removed {
				fmt.Fprintf(env.stderr, "spiral: note: removed %s: it held no event (a run with --tensorboard stopped before its first step)\n", r)
			}
			for _, t := range x.Torn {
				fmt.Fprintf(env.stderr, "spiral: note: the last line of %s is cut short (the run was killed while writing it): left out\n", t)
			}
			events := "events"
			if x.Events == 1 {
				events = "event"
			}
			// A run that went on without --tensorboard gets the steps its
			// event files lack, beside them.
			lacked := ""
			if len(x.Beside) > 0 {
				names := make([]string, len(x.Beside))
				for i, b := range x.Beside {
					names[i] = filepath.Base(b)
				}
				verb := "lack"
				if len(names) == 1 {
					verb = "lacks"
				}
				lacked = fmt.Sprintf(": %s, which %s %s", rl.StepList(x.Lacked), strings.Join(names, ", "), verb)
			}
			fmt.Fprintf(env.stdout, "wrote %s (%d %s from %s%s)\n", x.Path, x.Events, events, strings.Join(x.Logs, " and "), lacked)
		}
		return nil
	}
}

// refuseEventsFile refuses, as a usage error naming it, a run directory
// dir whose tensorboard (or, for an sft run, tensorboard-finished, where
// a finished run's events may be) is a file: the events are read and
// written there, which failed with a bare "not a directory".
func refuseEventsFile(dir string) error {
	names := []string{rl.TensorBoardDir}
	if _, err := os.Stat(filepath.Join(dir, rl.MetricsFile)); err != nil {
		names = append(names, rl.SFTFinishedTensorBoardDir)
	}
	for _, name := range names {
		p := filepath.Join(dir, name)
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return usageError{fmt.Errorf("%s is a file: want the directory of the run's TensorBoard event files, which spiral tensorboard writes in; move the file away", p)}
		}
	}
	return nil
}
