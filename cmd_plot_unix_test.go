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

// TestPlotOutInPlace: plot --out naming a pipe (a FIFO, or /dev/stdout's
// kind of path, /dev/fd/N), another file that is not a regular one, or a
// symbolic link writes the plot into it, as data synth --out does; one
// without a plot's extension (/dev/stdout, a FIFO) gets a PNG, the
// default --out's format. The atomic write renamed a regular file over
// a FIFO, which its reader never saw, and over /dev/null or /dev/stdout
// when root, failed to make its temporary file beside /dev/fd/N, and put
// a regular file in a link's place; a path without .png, .svg or .pdf
// was refused. Where --out is the command's own standard output, its
// "wrote" line goes to standard error, not into the plot.
func TestPlotOutInPlace(t *testing.T) {
	dir := t.TempDir()
	rep := filepath.Join(dir, "passk.json")
	require.NoError(t, os.WriteFile(rep, []byte(`{"meta": {"mode": "passk", "model": "m", "problems": 1}, "config": {"samples": 2}, "points": [{"k": 1, "pass_at_k": 0.5}, {"k": 2, "pass_at_k": 0.75}]}`), 0o644))
	plot := func(out string, stdout io.Writer) (code int, stderr string) {
		var e bytes.Buffer
		code = run(context.Background(), []string{"plot", "--width", "120", "--height", "100", "--out", out, rep}, &cliEnv{stdout: stdout, stderr: &e})
		return code, e.String()
	}
	ref := filepath.Join(dir, "ref.png")
	code, stderr := plot(ref, io.Discard)
	require.Zero(t, code, stderr)
	want, err := os.ReadFile(ref)
	require.NoError(t, err)
	pipe := func(t *testing.T) (r, w *os.File) {
		r, w, err := os.Pipe()
		require.NoError(t, err)
		t.Cleanup(func() { r.Close(); w.Close() })
		return r, w
	}
	fdPath := func(t *testing.T, f *os.File) string {
		path := fmt.Sprintf("/dev/fd/%d", f.Fd())
		if _, err := os.Stat(path); err != nil {
			t.Skip("no /dev/fd:", err)
		}
		return path
	}
	fifo := func(t *testing.T, name string) (string, func() ([]byte, error)) {
		path := filepath.Join(t.TempDir(), name)
		require.NoError(t, syscall.Mkfifo(path, 0o600))
		// Non-blocking, so that the open waits for no writer.
		r, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
		require.NoError(t, err)
		t.Cleanup(func() { r.Close() })
		return path, func() ([]byte, error) { return io.ReadAll(r) }
	}
	for _, tc := range []struct {
		name string
		// open makes the file to write and returns its path and how to
		// read what the command wrote in it.
		open func(t *testing.T) (path string, read func() ([]byte, error))
		// mode is the type the path is to keep (os.Lstat's).
		mode os.FileMode
	}{
		{name: "a named pipe", mode: os.ModeNamedPipe, open: func(t *testing.T) (string, func() ([]byte, error)) {
			return fifo(t, "plot.png")
		}},
		{name: "a named pipe without an extension", mode: os.ModeNamedPipe, open: func(t *testing.T) (string, func() ([]byte, error)) {
			return fifo(t, "plot")
		}},
		{name: "a pipe's /dev/fd path, as /dev/stdout is", open: func(t *testing.T) (string, func() ([]byte, error)) {
			r, w := pipe(t)
			return fdPath(t, w), func() ([]byte, error) {
				w.Close()
				return io.ReadAll(r)
			}
		}},
		{name: "a symbolic link to a regular file", mode: os.ModeSymlink, open: func(t *testing.T) (string, func() ([]byte, error)) {
			dir := t.TempDir()
			target := filepath.Join(dir, "plot.png")
			require.NoError(t, os.WriteFile(target, []byte(strings.Repeat("stale\n", 10000)), 0o644))
			link := filepath.Join(dir, "link.png")
			require.NoError(t, os.Symlink("plot.png", link))
			return link, func() ([]byte, error) { return os.ReadFile(target) }
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path, read := tc.open(t)
			var stdout bytes.Buffer
			code, stderr := plot(path, &stdout)
			require.Zero(t, code, stderr)
			require.Equal(t, "wrote "+path+" (1 passk report)\n", stdout.String())
			got, err := read()
			require.NoError(t, err)
			require.True(t, bytes.Equal(want, got), "the plot written into it: %d bytes, want %d", len(got), len(want))
			if tc.mode != 0 {
				st, err := os.Lstat(path)
				require.NoError(t, err)
				require.Equal(t, tc.mode, st.Mode().Type(), "its type kept")
			}
		})
	}
	t.Run("its own standard output", func(t *testing.T) {
		r, w := pipe(t)
		path := fdPath(t, w)
		code, stderr := plot(path, w)
		require.Zero(t, code, stderr)
		require.Equal(t, "wrote "+path+" (1 passk report)\n", stderr, "the line beside the plot")
		w.Close()
		got, err := io.ReadAll(r)
		require.NoError(t, err)
		require.True(t, bytes.Equal(want, got), "the plot alone: %d bytes, want %d", len(got), len(want))
	})
}
