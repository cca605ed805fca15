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
// point, its message saying what the command keeps (note: stopNotes of
// the running command, the zero stopNote where it keeps nothing or none
// runs yet); a later Ctrl-C, forceQuitGap or more after the first
// signal, quits at once through quit, for a user who will not wait for
// that, its message saying what a rerun resumes from where the command
// keeps anything (a checkpoint being written is then left unfinished,
// and the newest complete one is what a rerun resumes from: checkpoints
// are written to a temporary name and renamed). A SIGTERM never forces:
// the program that sends it sends SIGKILL when it will not wait. Each
// message begins with lineStart ("\n" on a terminal, after the ^C it
// echoes or a progress bar's text). now is the clock; it returns when
// sigs is closed.
func watchInterrupts(sigs <-chan os.Signal, cancel context.CancelFunc, warn io.Writer, lineStart string, note func() stopNote, now func() time.Time, quit func(code int)) {
	sig, ok := <-sigs
	if !ok {
		return
	}
	first := now()
	cancel()
	n := note()
	kept := n.keeps
	if kept != "" {
		kept = " (" + kept + ")"
	}
	fmt.Fprintf(warn, "%sspiral: %s: stopping%s; Ctrl-C again quits at once\n", lineStart, signalName(sig), kept)
	for sig := range sigs {
		if at := now(); sig == os.Interrupt && at.Sub(first) >= forceQuitGap {
			left := n.quits
			if left != "" {
				left = ": " + left
			}
			fmt.Fprintf(warn, "%sspiral: quitting at once%s\n", lineStart, left)
			quit(exitInterrupted)
			return
		}
	}
}

// stopNote is what a command keeps when a signal stops it (stopNotes),
// for the messages of main's watch (watchInterrupts): keeps, in the
// first signal's, what it saves as it stops; quits, in that of a Ctrl-C
// that quits at once, what it leaves for a rerun then. "" where there is
// nothing to say: a command that keeps nothing.
type stopNote struct{ keeps, quits string }

// stopNotes says what the command name, of the flags fs as parsed, keeps
// when a signal stops it: train and sft save their last completed step,
// and quitting at once leaves a checkpoint being written unfinished, the
// newest complete one resumed; eval --mode passk keeps the problems it
// finished in its problems file (report.ProblemsSuffix), which a rerun
// resumes from, but not with --traces, which saves none; the others
// keep nothing (the zero stopNote).
func stopNotes(name string, fs *pflag.FlagSet) stopNote {
	switch name {
	case "train", "sft":
		return stopNote{"it saves its last completed step first", "a checkpoint being written is left unfinished, and a rerun resumes from the newest complete one"}
	case "eval":
		if flagValue(fs, "mode") == "passk" && flagValue(fs, "traces") != "true" {
			return stopNote{"it keeps the problems it finished for a rerun to resume from", "a rerun resumes from the problems it saved"}
		}
	}
	return stopNote{}
}

// flagValue is the value of fs's flag name as parsed, "" where fs has
// no such flag.
func flagValue(fs *pflag.FlagSet, name string) string {
	if f := fs.Lookup(name); f != nil {
		return f.Value.String()
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
