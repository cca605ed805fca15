//go:build unix

package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestExportSideFileNotAFile: a model's side file that is a named pipe
// or a device (merges.txt linked to /dev/zero) was read whole by export
// until memory ran out; it is refused by its kind, unread, naming the
// file. The FIFO's writer here ends, so that the old read of it ended.
func TestExportSideFileNotAFile(t *testing.T) {
	t.Setenv("SPIRAL_CACHE_DIR", t.TempDir())
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	require.Zero(t, run(context.Background(), []string{"init-model", "--layers", "1", "--hidden", "32", "--out", src}, &cliEnv{stdout: io.Discard, stderr: io.Discard}))
	fifo := filepath.Join(src, "merges.txt")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	wrote := make(chan error, 1)
	go func() {
		w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		if err == nil {
			_, err = w.WriteString("#version: 0.2\n")
			err = errors.Join(err, w.Close())
		}
		wrote <- err
	}()
	var stderr bytes.Buffer
	code := run(context.Background(), []string{"export", "--format", "hf", "--model", src, "--out", filepath.Join(dir, "hf")}, &cliEnv{stdout: io.Discard, stderr: &stderr})
	// The writer waits for a reader where the file was not opened.
	r, err := os.OpenFile(fifo, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	require.NoError(t, err)
	require.NoError(t, <-wrote)
	require.NoError(t, r.Close())
	require.Equal(t, exitFailure, code, stderr.String())
	require.Contains(t, stderr.String(), "read "+fifo+": a named pipe (FIFO), not a regular file")
}
