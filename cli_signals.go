package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"syscall"
)

// watchInterrupts turns the signals on sigs into a two-step stop: the
// first cancels the command (cancel), which then stops at its next safe
// point (a training run saves its last completed step first); a second
// quits at once through quit, for a user who will not wait for that (a
// checkpoint being written is then left unfinished, and the newest
// complete one is what a rerun resumes from: checkpoints are written to a
// temporary name and renamed). It returns when sigs is closed.
func watchInterrupts(sigs <-chan os.Signal, cancel context.CancelFunc, warn io.Writer, lineStart string, quit func(code int)) {
	sig, ok := <-sigs
	if !ok {
		return
	}
	cancel()
	fmt.Fprintf(warn, "%sspiral: %s: stopping (a training run saves its last completed step first); %s again quits at once\n", lineStart, signalName(sig), signalName(sig))
	if _, ok := <-sigs; !ok {
		return
	}
	fmt.Fprintln(warn, "spiral: quitting at once: a checkpoint being written is left unfinished, and a rerun resumes from the newest complete one")
	quit(exitInterrupted)
}

// signalName is how a user sends sig: Ctrl-C for SIGINT.
func signalName(sig os.Signal) string {
	if sig == os.Interrupt {
		return "Ctrl-C"
	}
	if sig == syscall.SIGTERM {
		return "SIGTERM"
	}
	return sig.String()
}
