package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestWatchInterrupts: the first signal cancels the command and says how
// to quit at once; a Ctrl-C a second or more later quits with exit status
// 130, but not one on the heels of the first (one keypress reaching
// spiral twice) nor a SIGTERM; closing the channel (the command ended)
// ends the watch.
func TestWatchInterrupts(t *testing.T) {
	const (
		first = "spiral: Ctrl-C: stopping (it saves its last completed step first); Ctrl-C again quits at once\n"
		quits = "spiral: quitting at once: a checkpoint being written is left unfinished, and a rerun resumes from the newest complete one\n"
	)
	type arrival struct {
		sig os.Signal
		at  time.Duration // after the first
	}
	for _, c := range []struct {
		name       string
		signals    []arrival
		lineStart  string
		wantCancel bool
		wantQuit   int
		wantWarn   string
	}{
		{"none", nil, "", false, -1, ""},
		{"one Ctrl-C", []arrival{{os.Interrupt, 0}}, "\n", true, -1, "\n" + first},
		{"a second Ctrl-C later", []arrival{{os.Interrupt, 0}, {os.Interrupt, 3 * time.Second}}, "", true, exitInterrupted, first + quits},
		// On a terminal the second, as the first, begins a line of its
		// own, after the ^C echoed or the progress bar drawn again.
		{"a second Ctrl-C later, on a terminal", []arrival{{os.Interrupt, 0}, {os.Interrupt, 3 * time.Second}}, "\n", true, exitInterrupted, "\n" + first + "\n" + quits},
		{"a second Ctrl-C on the heels of the first", []arrival{{os.Interrupt, 0}, {os.Interrupt, 10 * time.Millisecond}}, "", true, -1, first},
		{"a script's SIGTERM after the terminal's SIGINT", []arrival{{os.Interrupt, 0}, {syscall.SIGTERM, 5 * time.Millisecond}, {syscall.SIGTERM, 2 * time.Second}}, "", true, -1, first},
		{"SIGTERM, then a user's Ctrl-C", []arrival{{syscall.SIGTERM, 0}, {os.Interrupt, 2 * time.Second}}, "", true, exitInterrupted,
			"spiral: SIGTERM: stopping (it saves its last completed step first); Ctrl-C again quits at once\n" + quits},
		{"a quick Ctrl-C, then a later one", []arrival{{os.Interrupt, 0}, {os.Interrupt, 100 * time.Millisecond}, {os.Interrupt, 1500 * time.Millisecond}}, "", true, exitInterrupted, first + quits},
	} {
		t.Run(c.name, func(t *testing.T) {
			sigs := make(chan os.Signal, len(c.signals))
			for _, a := range c.signals {
				sigs <- a.sig
			}
			close(sigs)
			start := time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC)
			read := 0 // the clock is read once per signal, as it arrives
			now := func() time.Time {
				at := c.signals[read].at
				read++
				return start.Add(at)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var warn bytes.Buffer
			quit := -1
			note := func() stopNote { return stopNotes("train", nil) }
			watchInterrupts(sigs, cancel, &warn, c.lineStart, note, now, func(code int) { quit = code })
			require.Equal(t, c.wantCancel, ctx.Err() != nil, "cancelled")
			require.Equal(t, c.wantQuit, quit, "quit's exit status (-1: not called)")
			require.Equal(t, c.wantWarn, warn.String())
		})
	}
}

// TestStopMessages: the first signal's message said "a training run
// saves its last completed step first" whatever the command; it says
// what the running command keeps: train's and sft's last completed
// step, eval --mode passk's finished problems (not with --traces, which
// saves none), and nothing for the commands that keep nothing. The
// message of a second Ctrl-C that quits at once spoke of a checkpoint
// left unfinished for every command; it says what a rerun resumes from
// where the command keeps anything, and nothing more where it keeps
// nothing. run tells main's watch (cliEnv.stopping) once the command's
// flags are read, before it runs.
func TestStopMessages(t *testing.T) {
	const (
		step     = "spiral: Ctrl-C: stopping (it saves its last completed step first); Ctrl-C again quits at once\n"
		problems = "spiral: Ctrl-C: stopping (it keeps the problems it finished for a rerun to resume from); Ctrl-C again quits at once\n"
		nothing  = "spiral: Ctrl-C: stopping; Ctrl-C again quits at once\n"

		checkpoint = "spiral: quitting at once: a checkpoint being written is left unfinished, and a rerun resumes from the newest complete one\n"
		saved      = "spiral: quitting at once: a rerun resumes from the problems it saved\n"
		quits      = "spiral: quitting at once\n"
	)
	missing := filepath.Join(t.TempDir(), "missing.jsonl")
	for _, c := range []struct {
		args                []string
		wantFirst, wantQuit string
	}{
		{[]string{"--steps", "1", "--data", missing}, step, checkpoint}, // train, the default command
		{[]string{"train", "--data", missing}, step, checkpoint},
		{[]string{"sft", "--model", missing}, step, checkpoint},
		{[]string{"eval", "--data", missing}, problems, saved},
		{[]string{"eval", "--mode", "passk", "--data", missing}, problems, saved},
		{[]string{"eval", "--mode", "passk", "--traces", "--data", missing}, nothing, quits},
		{[]string{"eval", "--mode", "rsa", "--data", missing}, nothing, quits},
		{[]string{"eval", "--mode", "sequential", "--data", missing}, nothing, quits},
		{[]string{"generate", "--model", missing, "2+2?"}, nothing, quits},
		{[]string{"export", "--checkpoint", missing, "--out", missing}, nothing, quits},
		{[]string{"init-model", "--out", filepath.Join(missing, "model")}, nothing, quits},
		{[]string{"bench", "generate", "--model", missing}, nothing, quits},
	} {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			var notes []stopNote
			env := &cliEnv{stdout: io.Discard, stderr: io.Discard, stopping: func(n stopNote) { notes = append(notes, n) }}
			run(context.Background(), c.args, env)
			require.Len(t, notes, 1, "run tells the watch once what the command keeps")
			sigs := make(chan os.Signal, 2)
			sigs <- os.Interrupt
			sigs <- os.Interrupt
			close(sigs)
			at := time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC)
			now := func() time.Time { at = at.Add(2 * forceQuitGap); return at }
			var warn bytes.Buffer
			quit := -1
			watchInterrupts(sigs, func() {}, &warn, "", func() stopNote { return notes[0] }, now, func(code int) { quit = code })
			require.Equal(t, exitInterrupted, quit, "the second Ctrl-C quits")
			require.Equal(t, c.wantFirst+c.wantQuit, warn.String())
		})
	}
}

// TestStopSignals: SIGHUP stops a command as SIGTERM does (a dropped ssh
// session ended a training run at once, its last steps unsaved), unless
// it is ignored at start, as under nohup, where the command must carry
// on untouched.
func TestStopSignals(t *testing.T) {
	for _, c := range []struct {
		name    string
		ignored []os.Signal
		want    []os.Signal
	}{
		{"none ignored", nil, []os.Signal{os.Interrupt, syscall.SIGTERM, syscall.SIGHUP}},
		{"under nohup", []os.Signal{syscall.SIGHUP}, []os.Signal{os.Interrupt, syscall.SIGTERM}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := stopSignals(func(sig os.Signal) bool { return slices.Contains(c.ignored, sig) })
			require.Equal(t, c.want, got)
		})
	}
	require.Equal(t, "SIGHUP", signalName(syscall.SIGHUP))
}
