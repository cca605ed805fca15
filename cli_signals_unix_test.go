//go:build unix

package main

import (
	"os"
	"path/filepath"
	"testing"

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
