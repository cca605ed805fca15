//go:build unix

package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestDataSynthOutInPlace: data synth --out naming a pipe (a FIFO, or
// /dev/stdout's kind of path, /dev/fd/N), another file that is not a
// regular one, or a symbolic link writes into it. The atomic write
// renamed a regular file over a FIFO, which its reader never saw, and
// over /dev/null or /dev/stdout when root (the system's, for every
// process), failed to make its temporary file beside /dev/fd/N, and put
// a regular file in a link's place, leaving the file it leads to as it
// was.
func TestDataSynthOutInPlace(t *testing.T) {
	var want bytes.Buffer
	var stderr bytes.Buffer
	require.Zero(t, run(context.Background(), []string{"data", "synth", "--problems", "2"}, &cliEnv{stdout: &want, stderr: &stderr}), stderr.String())
	for _, tc := range []struct {
		name string
		// open makes the file to write and returns its path and how to
		// read what the command wrote in it.
		open func(t *testing.T) (path string, read func() ([]byte, error))
		// mode is the type the path is to keep (os.Lstat's).
		mode os.FileMode
	}{
		{name: "a named pipe", mode: os.ModeNamedPipe, open: func(t *testing.T) (string, func() ([]byte, error)) {
			path := filepath.Join(t.TempDir(), "problems.jsonl")
			require.NoError(t, syscall.Mkfifo(path, 0o600))
			// Non-blocking, so that the open waits for no writer (and
			// a write that never comes reads as an empty file).
			r, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
			require.NoError(t, err)
			t.Cleanup(func() { r.Close() })
			return path, func() ([]byte, error) { return io.ReadAll(r) }
		}},
		{name: "a pipe's /dev/fd path, as /dev/stdout is", open: func(t *testing.T) (string, func() ([]byte, error)) {
			r, w, err := os.Pipe()
			require.NoError(t, err)
			t.Cleanup(func() { r.Close(); w.Close() })
			path := fmt.Sprintf("/dev/fd/%d", w.Fd())
			if _, err := os.Stat(path); err != nil {
				t.Skip("no /dev/fd:", err)
			}
			// The command opens the pipe again, through the path: the
			// test's own writing end is closed once it is done.
			return path, func() ([]byte, error) {
				w.Close()
				return io.ReadAll(r)
			}
		}},
		{name: "a regular file's /dev/fd path, as /dev/stdout is with > FILE", open: func(t *testing.T) (string, func() ([]byte, error)) {
			w, err := os.Create(filepath.Join(t.TempDir(), "out.jsonl"))
			require.NoError(t, err)
			t.Cleanup(func() { w.Close() })
			_, err = w.WriteString(strings.Repeat("stale\n", 100))
			require.NoError(t, err)
			path := fmt.Sprintf("/dev/fd/%d", w.Fd())
			if _, err := os.Stat(path); err != nil {
				t.Skip("no /dev/fd:", err)
			}
			return path, func() ([]byte, error) { return os.ReadFile(w.Name()) }
		}},
		{name: "a symbolic link to a regular file", mode: os.ModeSymlink, open: func(t *testing.T) (string, func() ([]byte, error)) {
			dir := t.TempDir()
			target := filepath.Join(dir, "problems.jsonl")
			require.NoError(t, os.WriteFile(target, []byte(strings.Repeat("stale\n", 100)), 0o644))
			link := filepath.Join(dir, "link.jsonl")
			require.NoError(t, os.Symlink("problems.jsonl", link))
			return link, func() ([]byte, error) { return os.ReadFile(target) }
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path, read := tc.open(t)
			var stderr bytes.Buffer
			code := run(context.Background(), []string{"data", "synth", "--problems", "2", "--out", path}, &cliEnv{stdout: io.Discard, stderr: &stderr})
			require.Zero(t, code, stderr.String())
			require.Equal(t, "spiral: wrote 2 test problems to "+path+"\n", stderr.String())
			got, err := read()
			require.NoError(t, err)
			require.Equal(t, want.String(), string(got))
			if tc.mode != 0 {
				st, err := os.Lstat(path)
				require.NoError(t, err)
				require.Equal(t, tc.mode, st.Mode().Type(), "its type kept")
			}
		})
	}
}
