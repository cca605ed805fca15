package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestNewestStopsAtReadFailure: a checkpoint that the system fails to
// read (an I/O error, no file descriptor or memory left, a permission
// refused) is no damage: skipped, the run would resume from an older
// one and --keep would then remove it. The search stops with the error,
// which names the file; only a missing file, a directory in a file's
// place or a checkpoint's own faults are skipped.
func TestNewestStopsAtReadFailure(t *testing.T) {
	read := func(errno syscall.Errno) func(p string) error {
		return func(p string) error {
			file := filepath.Join(p, ModelFile)
			return fmt.Errorf("checkpoint: %s: params: safetensors: read header: %w", file, &fs.PathError{Op: "read", Path: file, Err: errno})
		}
	}
	open := func(errno syscall.Errno) func(p string) error {
		return func(p string) error {
			return fmt.Errorf("checkpoint: %w", &fs.PathError{Op: "open", Path: filepath.Join(p, StateFile), Err: errno})
		}
	}
	cases := []struct {
		name string
		fail func(p string) error // load's error for the newest checkpoint
		stop error                // the search stops with it (errors.Is); nil: the checkpoint is skipped
	}{
		{"I/O error", read(syscall.EIO), syscall.EIO},
		{"too many open files", open(syscall.EMFILE), syscall.EMFILE},
		{"too many open files in the system", open(syscall.ENFILE), syscall.ENFILE},
		{"out of memory", read(syscall.ENOMEM), syscall.ENOMEM},
		{"permission denied", open(syscall.EACCES), syscall.EACCES},
		{"operation not permitted", open(syscall.EPERM), syscall.EPERM},
		{"missing file", open(syscall.ENOENT), nil},
		{"directory in a file's place", read(syscall.EISDIR), nil},
		{"cut short", func(p string) error {
			return fmt.Errorf("checkpoint: %s: %w", filepath.Join(p, ModelFile), io.ErrUnexpectedEOF)
		}, nil},
		{"corrupted", func(p string) error {
			return fmt.Errorf("checkpoint: %s: CRC-32C 00000000, state.json records 12345678 (corrupted)", filepath.Join(p, ModelFile))
		}, nil},
	}
	dir := t.TempDir()
	saveSteps(t, dir, []int64{1, 2}, Options{})
	newest, older := filepath.Join(dir, DirName(2)), filepath.Join(dir, DirName(1))
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var tried []string
			load := func(p string) error {
				tried = append(tried, p)
				if p == newest {
					return tc.fail(p)
				}
				return nil
			}
			for _, pick := range []bool{false, true} {
				tried = nil
				var path string
				var skipped []error
				var err error
				if pick {
					path, skipped, err = Pick(dir, load)
				} else {
					path, skipped, err = Newest(dir, load)
				}
				if tc.stop == nil {
					require.NoError(t, err)
					require.Equal(t, older, path)
					require.Len(t, skipped, 1)
					continue
				}
				require.ErrorIs(t, err, tc.stop)
				require.ErrorContains(t, err, newest, "the file that failed to read is named")
				require.ErrorContains(t, err, tc.stop.Error())
				require.ErrorContains(t, err, "not damage")
				require.Empty(t, path)
				require.Empty(t, skipped)
				require.Equal(t, []string{newest}, tried, "no older checkpoint is read in its place")
				require.True(t, Unreadable(err))
			}
		})
	}
	require.False(t, Unreadable(nil))
	require.False(t, Unreadable(context.Canceled))
	require.False(t, Unreadable(errors.Join(ErrNoCheckpoint)))
}
