//go:build unix

package flock_test

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/spiral-rl/spiral/model/flock"
)

// TestUnsupported: the errors of flock(2) on a file system without
// locks (NFS, FUSE, Lustre), wrapped or not, let the caller go on unlocked; the others, a
// lock held elsewhere among them, do not.
func TestUnsupported(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{syscall.ENOTSUP, true},
		{syscall.EOPNOTSUPP, true},
		{syscall.ENOLCK, true},
		{fmt.Errorf("lock x: %w", syscall.ENOLCK), true},
		// Lustre mounted without flock (its noflock mode, the default
		// of older releases) answers flock(2) with ENOSYS.
		{syscall.ENOSYS, true},
		{&os.PathError{Op: "flock", Path: "x", Err: syscall.ENOSYS}, true},
		{syscall.EWOULDBLOCK, false},
		{syscall.EBADF, false},
		{syscall.EINTR, false},
		{nil, false},
	} {
		require.Equal(t, tc.want, flock.Unsupported(tc.err), "%v", tc.err)
	}
}

// TestTryLock: a lock held through one open of a file (another process's,
// as flock(2) sees it) refuses TryLock through another, without waiting
// and without an error, until the holder closes it.
func TestTryLock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lock")
	open := func() *os.File {
		f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o666)
		require.NoError(t, err)
		t.Cleanup(func() { f.Close() })
		return f
	}
	holder, other := open(), open()
	ok, err := flock.TryLock(holder)
	require.NoError(t, err)
	require.True(t, ok)
	ok, err = flock.TryLock(other)
	require.NoError(t, err)
	require.False(t, ok, "held by the first open")
	require.NoError(t, holder.Close())
	ok, err = flock.TryLock(other)
	require.NoError(t, err)
	require.True(t, ok, "released by the close")
	require.NoError(t, other.Close())
}
