package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/spf13/pflag"
	"golang.org/x/term"
)

// forceQuitGap is how long after the first signal a Ctrl-C must come to
// quit at once: one keypress can reach spiral twice (the terminal's SIGINT
// to the whole process group, then a wrapper's, as make study's trap
// sends SIGTERM to its jobs), and that must not cut a checkpoint short.
const forceQuitGap = time.Second

// brokenPipeGrace is how long after a SIGPIPE, a line written to a pipe
// whose reader is gone, the watch waits for a signal that stops the
// command (watchInterrupts): the Ctrl-C that ended the reader as well
// (spiral train | tee log) may be read after the SIGPIPE it caused.
const brokenPipeGrace = time.Second

// watchProcess is what watchInterrupts does to the process, and its
// clock: main's are time.Now, time.After, signal.Stop of SIGPIPE's
// channel where brokenWriteEnds finds stdout or stderr broken, and
// os.Exit (catchSignals); tests' fake them.
type watchProcess struct {
	now   func() time.Time
	after func(time.Duration) <-chan time.Time
	// brokenPipe gives SIGPIPE its default action back where spiral's
	// stdout or stderr is a pipe whose reader is gone and ends the
	// process by it at once (endByBrokenPipe: spiral train | head stops
	// as the reader goes, not at the next step's line), and reports
	// whether it found them so (in tests, which fake it): a
	// SIGPIPE of another pipe or socket (a serving engine's connection),
	// whose writes fail whether it is caught or not, leaves it caught.
	brokenPipe func() bool
	quit       func(code int)
}

// watchInterrupts turns the signals on sigs into a two-step stop: the
// first cancels the command (cancel), which then stops at its next safe
// point, its message saying what the command keeps (note: stopNotes of
// the running command, the zero stopNote where it keeps nothing or none
// runs yet); a later Ctrl-C, forceQuitGap or more after the first
// signal, quits at once through p.quit, for a user who will not wait for
// that, its message saying what a rerun resumes from where the command
// keeps anything (a checkpoint being written is then left unfinished,
// and the newest complete one is what a rerun resumes from: checkpoints
// are written to a temporary name and renamed). A SIGTERM never forces:
// the program that sends it sends SIGKILL when it will not wait. Each
// message begins with lineStart ("\n" on a terminal, after the ^C it
// echoes or a progress bar's text).
//
// pipes carries SIGPIPE, caught from the start, so that a line written
// while the command stops, to a pipe whose reader the same Ctrl-C ended,
// fails rather than end spiral unsaved, whether the signal was read
// before it or not: a SIGPIPE before any signal waits brokenPipeGrace
// for one, and where none comes (spiral train | head: the reader ended
// on its own) gives SIGPIPE its default action back and ends spiral by
// it (p.brokenPipe), as a write there ends any program. p.now is the clock;
// it returns when sigs is closed.
func watchInterrupts(sigs, pipes <-chan os.Signal, cancel context.CancelFunc, warn io.Writer, lineStart string, note func() stopNote, p watchProcess) {
	var sig os.Signal
	for sig == nil {
		var ok bool
		select {
		case sig, ok = <-sigs:
		case <-pipes:
			select {
			case sig, ok = <-sigs:
			case <-p.after(brokenPipeGrace):
				if p.brokenPipe() {
					pipes = nil
				}
				continue
			}
		}
		if !ok {
			return
		}
	}
	first := p.now()
	cancel()
	n := note()
	kept := n.keeps
	if kept != "" {
		kept = " (" + kept + ")"
	}
	fmt.Fprintf(warn, "%sspiral: %s: stopping%s; Ctrl-C again quits at once\n", lineStart, signalName(sig), kept)
	for sig := range sigs {
		if at := p.now(); sig == os.Interrupt && at.Sub(first) >= forceQuitGap {
			left := n.quits
			if left != "" {
				left = ": " + left
			}
			fmt.Fprintf(warn, "%sspiral: quitting at once%s\n", lineStart, left)
			p.quit(exitInterrupted)
			return
		}
	}
}

// signalCatch is main's catch of the signals that stop a command
// (catchSignals): ctx, which the first cancels; release and stopping,
// as cliEnv has them; end, once the command has returned, gives every
// signal caught its default action back and ends the watch, and ends
// the process by SIGPIPE where a SIGPIPE came, no signal stopped the
// command, and its stdout or stderr is a pipe whose reader is gone
// (endByBrokenPipe).
type signalCatch struct {
	ctx      context.Context
	release  func()
	stopping func(stopNote)
	end      func()
}

// catchSignals starts main's watch of the signals that stop a command
// (stopSignals) and of SIGPIPE (watchInterrupts), warning on stderr; it
// comes first in main, before anything is written.
func catchSignals(stderr *os.File) signalCatch {
	sigs := make(chan os.Signal, 2)
	// signal.Ignored is read before Notify, which would un-ignore SIGHUP.
	signal.Notify(sigs, stopSignals(signal.Ignored)...)
	// A channel of its own: SIGPIPEs, one a failed write, must not fill
	// sigs, whose signals the channel's sender drops when it is full.
	pipes := make(chan os.Signal, 1)
	signal.Notify(pipes, syscall.SIGPIPE)
	// Read by none: it holds a SIGPIPE once one came, for end.
	piped := make(chan os.Signal, 1)
	signal.Notify(piped, syscall.SIGPIPE)
	ctx, cancel := context.WithCancel(context.Background())
	lineStart := "" // after a progress bar's line, or the terminal's ^C
	if term.IsTerminal(int(stderr.Fd())) {
		lineStart = "\n"
	}
	var keeps atomic.Pointer[stopNote] // what the command keeps when stopped: run says, once its flags are read
	kept := func() stopNote {
		if n := keeps.Load(); n != nil {
			return *n
		}
		return stopNote{}
	}
	brokenPipe := func() bool {
		if !brokenWriteEnds(int(os.Stdout.Fd()), int(stderr.Fd())) {
			return false
		}
		signal.Stop(pipes)
		signal.Stop(piped)
		endByBrokenPipe(os.Stdout, stderr)
		return true
	}
	p := watchProcess{now: time.Now, after: time.After, brokenPipe: brokenPipe, quit: os.Exit}
	go watchInterrupts(sigs, pipes, cancel, stderr, lineStart, kept, p)
	release := func() {
		signal.Stop(sigs)
		signal.Stop(pipes)
		signal.Stop(piped) // a SIGPIPE not yet delivered is, first
	}
	return signalCatch{
		ctx:      ctx,
		release:  release,
		stopping: func(n stopNote) { keeps.Store(&n) },
		end: func() {
			stopped := ctx.Err() != nil // by a signal: the command exits as it says
			release()
			close(sigs)
			cancel()
			if !stopped && len(piped) > 0 {
				endByBrokenPipe(os.Stdout, stderr)
			}
		},
	}
}

// endByBrokenPipe ends the process by SIGPIPE, as a write there would,
// where one of files is a pipe whose reader is gone (brokenWriteEnds):
// catchSignals' end, when the command has returned after a SIGPIPE that
// no stop signal followed. A command whose last line went to a stdout
// whose reader was gone (spiral generate | a consumer that ended), with
// SIGPIPE still caught, would exit 0, its output lost. SIGPIPE's default
// action must be back (the watch's channels stopped); the line written
// is read by none.
func endByBrokenPipe(files ...*os.File) {
	for _, f := range files {
		if brokenWriteEnds(int(f.Fd())) {
			_, _ = f.Write([]byte("\n"))
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
// newest complete one resumed; eval --mode passk and sequential keep the
// problems they finished in their problems file (report.ProblemsSuffix),
// and --mode rsa its steps (report.StepsSuffix), which a rerun resumes
// from, but not with --traces, which saves none; the others keep
// nothing (the zero stopNote).
func stopNotes(name string, fs *pflag.FlagSet) stopNote {
	switch name {
	case "train", "sft":
		return stopNote{"it saves its last completed step first", "a checkpoint being written is left unfinished, and a rerun resumes from the newest complete one"}
	case "eval":
		if flagValue(fs, "traces") == "true" {
			break
		}
		if flagValue(fs, "mode") == "rsa" {
			return stopNote{"it keeps the steps it finished for a rerun to resume from", "a rerun resumes from the steps it saved"}
		}
		return stopNote{"it keeps the problems it finished for a rerun to resume from", "a rerun resumes from the problems it saved"}
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
