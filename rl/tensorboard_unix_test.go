//go:build unix

package rl

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestTensorBoardLogNotAFile: a log that is a named pipe (or a device,
// /dev/zero) was read until it ended, if ever; it is refused by its
// kind, unread. The writer here ends, so that a read of it ends too.
func TestTensorBoardLogNotAFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, MetricsFile)
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	wrote := make(chan error, 1)
	go func() {
		w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		if err == nil {
			_, err = w.WriteString(`{"step":1,"loss":1}` + "\n")
			err = errors.Join(err, w.Close())
		}
		wrote <- err
	}()
	_, err := exportTensorBoard(dir)
	// The writer waits for a reader where the log was not opened.
	r, rerr := os.OpenFile(fifo, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	require.NoError(t, rerr)
	require.NoError(t, <-wrote)
	require.NoError(t, r.Close())
	require.EqualError(t, err, "rl: "+fifo+": a named pipe (FIFO), not a regular file: want the log a run wrote")
}
