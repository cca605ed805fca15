//go:build unix

package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestBrokenWriteEnds: a pipe whose reader is gone is broken; one read
// still, and a file, are not.
func TestBrokenWriteEnds(t *testing.T) {
	for _, c := range []struct {
		name string
		open func(t *testing.T) *os.File
		want bool
	}{
		{"a pipe whose reader is gone", func(t *testing.T) *os.File {
			r, w, err := os.Pipe()
			require.NoError(t, err)
			require.NoError(t, r.Close())
			return w
		}, true},
		{"a pipe read still", func(t *testing.T) *os.File {
			r, w, err := os.Pipe()
			require.NoError(t, err)
			t.Cleanup(func() { r.Close() })
			return w
		}, false},
		{"a file", func(t *testing.T) *os.File {
			f, err := os.Create(filepath.Join(t.TempDir(), "log"))
			require.NoError(t, err)
			return f
		}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := c.open(t)
			defer f.Close()
			require.Equal(t, c.want, brokenWriteEnds(int(f.Fd())))
		})
	}
}

// pipeEndChildEnv, set to a case of TestBrokenPipeAtTheEnd, makes the
// test the process of that case (pipeEndChild).
const pipeEndChildEnv = "SPIRAL_TEST_PIPE_END_CHILD"

// TestBrokenPipeAtTheEnd: a command whose last line (eval's table,
// generate's completions) is written to a stdout whose reader is gone
// (spiral generate ... | consumer, the consumer ended) ended with exit
// status 0, its output lost, where the watch that catches SIGPIPE
// (catchSignals) had not given SIGPIPE its default back yet: no line came
// after to end it by SIGPIPE, as the write itself did before SIGPIPE was
// caught. It ends by SIGPIPE, as any program does; a SIGPIPE of a socket
// (a serving engine's connection), its stdout read, leaves exit 0. One
// that writes no more for a while (spiral train | head, the next step's
// line minutes away) is ended by SIGPIPE once the watch's grace for a
// stopping signal is over, not at that line.
func TestBrokenPipeAtTheEnd(t *testing.T) {
	if mode := os.Getenv(pipeEndChildEnv); mode != "" {
		pipeEndChild(mode)
		return
	}
	for _, c := range []struct {
		name, mode string
		signaled   bool
	}{
		{"its stdout's reader gone", "stdout", true},
		{"a socket's peer gone, its stdout read", "socket", false},
		{"its stdout's reader gone, the command writing no more", "wait", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestBrokenPipeAtTheEnd$")
			cmd.Env = append(os.Environ(), pipeEndChildEnv+"="+c.mode)
			var stderr strings.Builder
			cmd.Stderr = &stderr
			stdout, err := cmd.StdoutPipe()
			require.NoError(t, err)
			stdin, err := cmd.StdinPipe()
			require.NoError(t, err)
			require.NoError(t, cmd.Start())
			t.Cleanup(func() { _ = cmd.Process.Kill() })
			out := bufio.NewReader(stdout)
			line, err := out.ReadString('\n')
			require.NoError(t, err, stderr.String())
			require.Equal(t, "ready\n", line)
			if c.signaled {
				require.NoError(t, stdout.Close(), "the reader of its stdout is gone")
			}
			require.NoError(t, stdin.Close(), "go on")
			var rest []byte
			if !c.signaled {
				rest, err = io.ReadAll(out)
				require.NoError(t, err)
			}
			_ = cmd.Wait()
			ws := cmd.ProcessState.Sys().(syscall.WaitStatus)
			if c.signaled {
				require.True(t, ws.Signaled(), "exit status %d: %s", cmd.ProcessState.ExitCode(), stderr.String())
				require.Equal(t, syscall.SIGPIPE, ws.Signal(), stderr.String())
				return
			}
			require.False(t, ws.Signaled(), "ended by %v: %s", ws.Signal(), stderr.String())
			require.Equal(t, 0, cmd.ProcessState.ExitCode(), stderr.String())
			require.Equal(t, "result\n", string(rest))
			require.Contains(t, stderr.String(), "socket write: broken pipe")
		})
	}
}

// pipeEndChild is TestBrokenPipeAtTheEnd's process: it says ready, waits
// for its stdin to close, writes to a socket whose peer is gone where
// mode is "socket", then writes its last line to its stdout (a pipe read
// by none by then where mode is "stdout" or "wait"), ends the watch as
// main does once the command returns, and exits 0; where mode is "wait"
// it writes nothing more for 30 s instead, then exits 3.
func pipeEndChild(mode string) {
	c := catchSignals(os.Stderr)
	fmt.Fprintln(os.Stdout, "ready")
	_, _ = io.Copy(io.Discard, os.Stdin)
	if mode == "socket" {
		fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(exitFailure)
		}
		_ = syscall.Close(fds[1])
		_, err = syscall.Write(fds[0], []byte("x"))
		fmt.Fprintln(os.Stderr, "socket write:", err)
	}
	fmt.Fprintln(os.Stdout, "result")
	if mode == "wait" {
		// A training step that writes its line minutes later: the watch
		// ends the process before then, or it exits 3.
		time.Sleep(30 * time.Second)
		os.Exit(3)
	}
	c.end()
	os.Exit(0)
}
