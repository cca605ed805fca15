package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"syscall"
	"time"

	"github.com/spf13/pflag"
)

// forceQuitGap is how long after the first signal a Ctrl-C must come to
// quit at once: one keypress can reach spiral twice (the terminal's SIGINT
// to the whole process group, then a wrapper's, as make study's trap
// sends SIGTERM to its jobs), and that must not cut a checkpoint short.
const forceQuitGap = time.Second

// watchInterrupts turns the signals on sigs into a two-step stop: the
// first cancels the command (cancel), which then stops at its next safe
// point, its message saying what the command keeps (keeps: stopKeeps of
// the running command, "" where it keeps nothing or none runs yet); a later
// Ctrl-C, forceQuitGap or more after the first signal, quits at once
// through quit, for a user who will not wait for that (a checkpoint being
// written is then left unfinished, and the newest complete one is what a
// rerun resumes from: checkpoints are written to a temporary name and
// renamed). A SIGTERM never forces: the program that sends it sends
// SIGKILL when it will not wait. Each message begins with lineStart
// ("\n" on a terminal, after the ^C it echoes or a progress bar's text).
// now is the clock; it returns when sigs is closed.
func watchInterrupts(sigs <-chan os.Signal, cancel context.CancelFunc, warn io.Writer, lineStart string, keeps func() string, now func() time.Time, quit func(code int)) {
	sig, ok := <-sigs
	if !ok {
		return
	}
	first := now()
	cancel()
	kept := keeps()
	if kept != "" {
		kept = " (" + kept + ")"
	}
	fmt.Fprintf(warn, "%sspiral: %s: stopping%s; Ctrl-C again quits at once\n", lineStart, signalName(sig), kept)
	for sig := range sigs {
		if at := now(); sig == os.Interrupt && at.Sub(first) >= forceQuitGap {
			fmt.Fprintf(warn, "%sspiral: quitting at once: a checkpoint being written is left unfinished, and a rerun resumes from the newest complete one\n", lineStart)
			quit(exitInterrupted)
			return
		}
	}
}

// stopKeeps says what the command name, of the flags fs as parsed, keeps
// when a signal stops it, for the first signal's message: train and sft
// save their last completed step, eval --mode passk keeps the problems
// it finished in its problems file (report.ProblemsSuffix), which a
// rerun resumes from; the others keep nothing ("").
func stopKeeps(name string, fs *pflag.FlagSet) string {
	switch name {
	case "train", "sft":
		return "it saves its last completed step first"
	case "eval":
		if mode := fs.Lookup("mode"); mode != nil && mode.Value.String() == "passk" {
			return "it keeps the problems it finished for a rerun to resume from"
		}
	}
	return ""
}

// stopSignals are the signals that stop a command as Ctrl-C does:
// SIGINT, SIGTERM, and SIGHUP (the terminal or ssh session of the run
// gone) unless ignored, which reports whether a signal was ignored at
// start, says SIGHUP was: nohup starts a command with SIGHUP ignored so
// that it carries on untouched, and it must.
func stopSignals(ignored func(os.Signal) bool) []os.Signal {
	sigs := []os.Signal{os.Interrupt, syscall.SIGTERM}
	if !ignored(syscall.SIGHUP) {
		sigs = append(sigs, syscall.SIGHUP)
	}
	return sigs
}

// signalName is how a user sends sig: Ctrl-C for SIGINT.
func signalName(sig os.Signal) string {
	if sig == os.Interrupt {
		return "Ctrl-C"
	}
	if sig == syscall.SIGTERM {
		return "SIGTERM"
	}
	if sig == syscall.SIGHUP {
		return "SIGHUP"
	}
	return sig.String()
}
