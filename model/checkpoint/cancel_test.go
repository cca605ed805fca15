package checkpoint

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestNewestStopsAtCancellation: a load that stops because its context
// is done (Ctrl-C while a checkpoint is read) ends the search with that
// error: it is no damage, to skip with a warning while the older
// checkpoints are read in turn, each failing the same way, and the
// search ending in "no checkpoint loads". Nor is a deadline.
func TestNewestStopsAtCancellation(t *testing.T) {
	for _, cause := range []error{context.Canceled, context.DeadlineExceeded} {
		t.Run(cause.Error(), func(t *testing.T) {
			dir := t.TempDir()
			saveSteps(t, dir, []int64{100, 200, 300}, Options{})
			var tried []string
			path, skipped, err := Newest(dir, func(p string) error {
				tried = append(tried, filepath.Base(p))
				return fmt.Errorf("checkpoint: %s: read: %w", p, cause)
			})
			require.ErrorIs(t, err, cause)
			require.Equal(t, "checkpoint: "+filepath.Join(dir, DirName(300))+": read: "+cause.Error(), err.Error())
			require.Empty(t, path)
			require.Empty(t, skipped)
			require.Equal(t, []string{DirName(300)}, tried)
		})
	}
}

// cancelAfter is a context that is cancelled from the n+1-th call of its
// Err on (a Ctrl-C at a chosen point of a read).
type cancelAfter struct {
	context.Context
	n, calls int
}

func (c *cancelAfter) Err() error {
	c.calls++
	if c.calls > c.n {
		return context.Canceled
	}
	return nil
}

// TestLoadStopsWhenCancelled: Load stops reading a checkpoint's data once
// its context is done, at the next read (here one a tensor, so the
// tensors before it are loaded and none after), with an error wrapping
// context.Canceled that names the file; Resume returns it at once, with
// nothing skipped. They read every checkpoint's gigabytes (a 4B model's
// weights and moments: 48 GB) to the end, whatever Ctrl-C said.
func TestLoadStopsWhenCancelled(t *testing.T) {
	dir := t.TempDir()
	saved := saveSteps(t, dir, []int64{100, 200}, Options{})[200]
	newest := filepath.Join(dir, DirName(200))
	for _, n := range []int{0, 2} {
		w, o := fresh(t)
		_, err := Load(&cancelAfter{Context: context.Background(), n: n}, newest, w, o)
		require.ErrorIs(t, err, context.Canceled, "cancelled after %d reads", n)
		require.ErrorContains(t, err, "checkpoint: "+filepath.Join(newest, ModelFile)+": ")
		for i := range w.Len() {
			if i < n {
				require.Equal(t, saved.At(i).Data, w.At(i).Data, "tensor %d, read before", i)
			} else {
				require.Equal(t, make([]float32, len(w.At(i).Data)), w.At(i).Data, "tensor %d, not read", i)
			}
		}
	}
	w, o := fresh(t)
	path, st, skipped, err := Resume(&cancelAfter{Context: context.Background()}, dir, w, o)
	require.ErrorIs(t, err, context.Canceled)
	require.ErrorContains(t, err, filepath.Join(newest, ModelFile))
	require.Empty(t, path)
	require.Zero(t, st.Step)
	require.Empty(t, skipped, "a cancelled read is no damage")
}
