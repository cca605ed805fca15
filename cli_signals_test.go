package main

import (
	"bytes"
	"context"
	"os"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestWatchInterrupts: the first signal cancels the command and says how
// to quit at once; a second quits with exit status 130; closing the
// channel (the command ended) ends the watch without either.
func TestWatchInterrupts(t *testing.T) {
	for _, c := range []struct {
		name       string
		signals    []os.Signal
		lineStart  string
		wantCancel bool
		wantQuit   int
		wantWarn   string
	}{
		{"none", nil, "", false, -1, ""},
		{"one Ctrl-C", []os.Signal{os.Interrupt}, "\n", true, -1,
			"\nspiral: Ctrl-C: stopping (a training run saves its last completed step first); Ctrl-C again quits at once\n"},
		{"two Ctrl-C", []os.Signal{os.Interrupt, os.Interrupt}, "", true, exitInterrupted,
			"spiral: Ctrl-C: stopping (a training run saves its last completed step first); Ctrl-C again quits at once\n" +
				"spiral: quitting at once: a checkpoint being written is left unfinished, and a rerun resumes from the newest complete one\n"},
		{"SIGTERM then Ctrl-C", []os.Signal{syscall.SIGTERM, os.Interrupt}, "", true, exitInterrupted,
			"spiral: SIGTERM: stopping (a training run saves its last completed step first); SIGTERM again quits at once\n" +
				"spiral: quitting at once: a checkpoint being written is left unfinished, and a rerun resumes from the newest complete one\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			sigs := make(chan os.Signal, len(c.signals))
			for _, s := range c.signals {
				sigs <- s
			}
			close(sigs)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var warn bytes.Buffer
			quit := -1
			watchInterrupts(sigs, cancel, &warn, c.lineStart, func(code int) { quit = code })
			require.Equal(t, c.wantCancel, ctx.Err() != nil, "cancelled")
			require.Equal(t, c.wantQuit, quit, "quit's exit status (-1: not called)")
			require.Equal(t, c.wantWarn, warn.String())
		})
	}
}
