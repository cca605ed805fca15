//go:build unix

package model

import (
	"bytes"
	"context"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/spiral-rl/spiral/model/flock"
)

// syncBuffer is a bytes.Buffer that a timer's goroutine and the test can
// share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestLockTellingSaysItWaits: a lock held by another open file (as by
// another process: flock's locks belong to the open file) is waited for,
// and a wait past the notice time is said, with its end; an uncontended
// lock says nothing.
func TestLockTellingSaysItWaits(t *testing.T) {
	dir := t.TempDir()
	open := func() *os.File {
		f, err := os.Open(dir)
		require.NoError(t, err)
		t.Cleanup(func() { f.Close() })
		return f
	}

	var quiet syncBuffer
	require.NoError(t, lockTelling(context.Background(), open(), dir, &quiet, time.Millisecond))
	require.Empty(t, quiet.String(), "an uncontended lock")

	dir2 := t.TempDir()
	holder, err := os.Open(dir2)
	require.NoError(t, err)
	ok, err := flock.TryLock(holder)
	require.NoError(t, err)
	require.True(t, ok)
	waiter, err := os.Open(dir2)
	require.NoError(t, err)
	defer waiter.Close()
	var told syncBuffer
	locked := make(chan error, 1)
	go func() { locked <- lockTelling(context.Background(), waiter, dir2, &told, 10*time.Millisecond) }()
	require.Eventually(t, func() bool { return told.String() != "" }, 10*time.Second, 5*time.Millisecond, "no word of the wait")
	require.Equal(t, "spiral: waiting for "+dir2+": another spiral process is building or reading these artifacts\n", told.String())
	select {
	case err := <-locked:
		t.Fatalf("locked while another held the lock (err %v)", err)
	default:
	}
	holder.Close() // releases the lock
	require.NoError(t, <-locked)
	require.Equal(t, "spiral: waiting for "+dir2+": another spiral process is building or reading these artifacts\n"+
		"spiral: "+dir2+" is free; going on\n", told.String())
}

// TestLockDirStopsWhenCancelled: a wait for a lock that another process
// holds ends when the context is done, within a poll or so, with an
// error wrapping context.Canceled and naming the directory; the holder
// keeps its lock. The wait was a blocking flock(2), retried on EINTR,
// which no Ctrl-C ended: spiral train or eval waiting for another
// process's artifacts went on waiting after the first Ctrl-C.
func TestLockDirStopsWhenCancelled(t *testing.T) {
	for _, tc := range []struct {
		name   string
		cancel time.Duration // after the wait begins; 0: cancelled before
	}{{"cancelled before", 0}, {"cancelled while waiting", 200 * time.Millisecond}} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			holder, err := os.Open(dir)
			require.NoError(t, err)
			defer holder.Close()
			ok, err := flock.TryLock(holder)
			require.NoError(t, err)
			require.True(t, ok)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tc.cancel == 0 {
				cancel()
			} else {
				time.AfterFunc(tc.cancel, cancel)
			}
			start := time.Now()
			release, err := lockDir(ctx, dir, nil)
			took := time.Since(start)
			require.ErrorIs(t, err, context.Canceled)
			require.Nil(t, release)
			require.Equal(t, "model: lock "+dir+": context canceled", err.Error())
			require.Less(t, took, tc.cancel+time.Second, "the wait outlasted the cancellation")
			other, err := os.Open(dir)
			require.NoError(t, err)
			defer other.Close()
			ok, err = flock.TryLock(other)
			require.NoError(t, err)
			require.False(t, ok, "the holder keeps its lock")
		})
	}
}

// TestLockDirFree: a lock nobody holds is taken even with a cancelled
// context (the context bounds a wait, not the lock), and its release
// frees it.
func TestLockDirFree(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	release, err := lockDir(ctx, dir, nil)
	require.NoError(t, err)
	other, err := os.Open(dir)
	require.NoError(t, err)
	defer other.Close()
	ok, err := flock.TryLock(other)
	require.NoError(t, err)
	require.False(t, ok, "locked")
	release()
	ok, err = flock.TryLock(other)
	require.NoError(t, err)
	require.True(t, ok, "released")
}
