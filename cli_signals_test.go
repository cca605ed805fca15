package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
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
			watchInterrupts(sigs, nil, cancel, &warn, c.lineStart, note, watchProcess{now: now, quit: func(code int) { quit = code }})
			require.Equal(t, c.wantCancel, ctx.Err() != nil, "cancelled")
			require.Equal(t, c.wantQuit, quit, "quit's exit status (-1: not called)")
			require.Equal(t, c.wantWarn, warn.String())
		})
	}
}

// TestWatchBrokenPipe: SIGPIPE was ignored only once the watch had read
// the first signal, so that a line written to a pipe whose reader the
// same Ctrl-C had ended (spiral train | tee log) between the signal's
// arrival and its reading ended spiral by SIGPIPE, unsaved. It is caught
// from the start (pipes): a SIGPIPE followed, within
// brokenPipeGrace, by the signal stops the command as the signal alone
// does; one with no signal after it (spiral train | head) gives SIGPIPE
// its default action back (brokenPipe), which ends spiral at its next
// line as it ends any program, and a Ctrl-C after that still stops it;
// one of another pipe or socket, where stdout and stderr are whole,
// leaves SIGPIPE caught, the next one waited on too.
func TestWatchBrokenPipe(t *testing.T) {
	const stopping = "spiral: Ctrl-C: stopping; Ctrl-C again quits at once\n"
	for _, c := range []struct {
		name string
		// grace: the grace after a SIGPIPE runs out with no signal;
		// thenCtrlC: a Ctrl-C comes once it has; socket: stdout and
		// stderr are whole, and a second SIGPIPE comes.
		ctrlC, grace, thenCtrlC, socket bool
		wantCancel                      bool
		wantBroken                      int // brokenPipe's calls
		wantWarn                        string
	}{
		{"the Ctrl-C that ended the reader, after the SIGPIPE it caused", true, false, false, false, true, 0, stopping},
		{"a reader gone with no signal (spiral train | head)", false, true, false, false, false, 1, ""},
		{"a Ctrl-C once the reader is gone", false, true, true, false, true, 1, stopping},
		{"another pipe's or socket's", false, true, false, true, false, 2, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			sigs := make(chan os.Signal, 2)
			pipes := make(chan os.Signal, 1)
			pipes <- syscall.SIGPIPE
			if c.ctrlC {
				sigs <- os.Interrupt
				close(sigs)
			}
			var graces []time.Duration
			after := func(d time.Duration) <-chan time.Time {
				graces = append(graces, d)
				ch := make(chan time.Time, 1)
				if c.grace {
					ch <- time.Time{}
				}
				return ch
			}
			broken := 0
			brokenPipe := func() bool {
				broken++
				if c.socket && broken == 1 {
					pipes <- syscall.SIGPIPE
					return false
				}
				if c.thenCtrlC {
					sigs <- os.Interrupt
				}
				close(sigs)
				return !c.socket
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var warn bytes.Buffer
			quit := -1
			p := watchProcess{now: time.Now, after: after, brokenPipe: brokenPipe, quit: func(code int) { quit = code }}
			watchInterrupts(sigs, pipes, cancel, &warn, "", func() stopNote { return stopNote{} }, p)
			require.Equal(t, c.wantCancel, ctx.Err() != nil, "cancelled")
			require.Equal(t, c.wantBroken, broken, "SIGPIPE's default action asked back")
			require.Equal(t, -1, quit, "not quit at once")
			require.Equal(t, c.wantWarn, warn.String())
			if c.grace {
				require.Equal(t, slices.Repeat([]time.Duration{brokenPipeGrace}, c.wantBroken), graces, "the signal waited for")
			}
		})
	}
}

// brokenPipeChildEnv, set, makes TestBrokenPipeBeforeTheSignal the
// process it starts.
const brokenPipeChildEnv = "SPIRAL_TEST_BROKEN_PIPE_CHILD"

// TestBrokenPipeBeforeTheSignal: main's catch of the signals
// (catchSignals) in a process of its own, whose stdout's reader is gone
// when it writes a line, and which then gets the Ctrl-C that ended that
// reader: it stops as the Ctrl-C says (exit 130) rather than being
// ended by SIGPIPE at the line, as it was where the watch had not read
// the signal yet when the line was written.
func TestBrokenPipeBeforeTheSignal(t *testing.T) {
	if os.Getenv(brokenPipeChildEnv) != "" {
		brokenPipeChild()
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestBrokenPipeBeforeTheSignal$")
	cmd.Env = append(os.Environ(), brokenPipeChildEnv+"=1")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(t, err, stderr.String())
	require.Equal(t, "ready\n", line)
	require.NoError(t, stdout.Close(), "the reader of its stdout is gone")
	require.NoError(t, stdin.Close(), "go on")
	_ = cmd.Wait()
	ws := cmd.ProcessState.Sys().(syscall.WaitStatus)
	require.False(t, ws.Signaled(), "ended by %v: %s", ws.Signal(), stderr.String())
	require.Equal(t, exitInterrupted, cmd.ProcessState.ExitCode(), stderr.String())
	require.Contains(t, stderr.String(), "stopped\n")
}

// brokenPipeChild is TestBrokenPipeBeforeTheSignal's process: it says
// ready, waits for its stdin to close, writes a line to its stdout (a
// pipe read by none by then) and sends itself SIGINT, then exits 130
// once the command's context is cancelled.
func brokenPipeChild() {
	c := catchSignals(os.Stderr)
	fmt.Fprintln(os.Stdout, "ready")
	_, _ = io.Copy(io.Discard, os.Stdin)
	fmt.Fprintln(os.Stdout, "step 1")
	_ = syscall.Kill(os.Getpid(), syscall.SIGINT)
	select {
	case <-c.ctx.Done():
		fmt.Fprintln(os.Stderr, "stopped")
		c.end()
		os.Exit(exitInterrupted)
	case <-time.After(time.Minute):
		fmt.Fprintln(os.Stderr, "not stopped")
		os.Exit(exitFailure)
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
		steps    = "spiral: Ctrl-C: stopping (it keeps the steps it finished for a rerun to resume from); Ctrl-C again quits at once\n"
		nothing  = "spiral: Ctrl-C: stopping; Ctrl-C again quits at once\n"

		checkpoint = "spiral: quitting at once: a checkpoint being written is left unfinished, and a rerun resumes from the newest complete one\n"
		saved      = "spiral: quitting at once: a rerun resumes from the problems it saved\n"
		savedSteps = "spiral: quitting at once: a rerun resumes from the steps it saved\n"
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
		{[]string{"eval", "--mode", "rsa", "--data", missing}, steps, savedSteps},
		{[]string{"eval", "--mode", "rsa", "--traces", "--data", missing}, nothing, quits},
		{[]string{"eval", "--mode", "sequential", "--data", missing}, problems, saved},
		{[]string{"eval", "--mode", "sequential", "--traces", "--data", missing}, nothing, quits},
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
			watchInterrupts(sigs, nil, func() {}, &warn, "", func() stopNote { return notes[0] }, watchProcess{now: now, quit: func(code int) { quit = code }})
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
