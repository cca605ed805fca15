//go:build unix

package model

import (
	"bytes"
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
	require.NoError(t, lockTelling(open(), dir, &quiet, time.Millisecond))
	require.Empty(t, quiet.String(), "an uncontended lock")

	dir2 := t.TempDir()
	holder, err := os.Open(dir2)
	require.NoError(t, err)
	require.NoError(t, flock.Lock(holder))
	waiter, err := os.Open(dir2)
	require.NoError(t, err)
	defer waiter.Close()
	var told syncBuffer
	locked := make(chan error, 1)
	go func() { locked <- lockTelling(waiter, dir2, &told, 10*time.Millisecond) }()
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
