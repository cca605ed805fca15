//go:build unix

package model_test

import (
	"fmt"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/spiral-rl/spiral/model"
)

// TestFlockUnsupported: the errors of flock(2) on a file system without
// locks, wrapped or not, let the caller go on unlocked; the others, a
// lock held elsewhere among them, do not.
func TestFlockUnsupported(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{syscall.ENOTSUP, true},
		{syscall.EOPNOTSUPP, true},
		{syscall.ENOLCK, true},
		{fmt.Errorf("lock x: %w", syscall.ENOLCK), true},
		{syscall.EWOULDBLOCK, false},
		{syscall.EBADF, false},
		{syscall.EINTR, false},
		{nil, false},
	} {
		require.Equal(t, tc.want, model.FlockUnsupported(tc.err), "%v", tc.err)
	}
}
