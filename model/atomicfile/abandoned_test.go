package atomicfile

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestRemoveAbandoned: a stage or temporary file that no process holds
// the lock of and that has not changed for abandonedAfter was left by a
// killed process, and the next stage or write of the same file in the
// directory removes it; so was a stage holding a file that no process
// holds the lock of, however recent (NewStage locks it before anything
// is written in it: a killed export rerun at once left it for good, when
// its Commit came within abandonedAfter too), and so was one killed
// before its first file, which holds its mark (an export killed while
// it merged the weights left it empty, taken for one not locked yet);
// one whose process lives
// (its lock held: another open file description in this process stands
// for another process), a recent empty stage or recent temporary file
// (made, not yet locked), a stage a failed commit kept and other names
// stay.
func TestRemoveAbandoned(t *testing.T) {
	old := time.Now().Add(-2 * abandonedAfter)
	for _, tc := range []struct {
		name   string
		create func(t *testing.T, dir string) string // what is there before, and its path
		run    func(dir string) error                // the write that cleans up
		stays  bool
	}{
		{name: "an abandoned stage", create: leftDir(".stage-123", old), run: newStage},
		{name: "a recent stage", create: emptyDir(".stage-123", time.Now()), run: newStage, stays: true},
		{name: "a recent stage holding a file", create: leftDir(".stage-123", time.Now()), run: newStage},
		{name: "a recent stage killed before its first file", create: killedStage(time.Now()), run: newStage},
		{name: "a live stage", create: liveStage(old), run: newStage, stays: true},
		{name: "a recent live stage holding a file", create: liveStageHolding(time.Now()), run: newStage, stays: true},
		{name: "a killed commit", create: killedCommit(old), run: removeStages, stays: true},
		{name: "a recent killed commit", create: killedCommit(time.Now()), run: removeStages, stays: true},
		{name: "a recent temporary file", create: emptyFile(".model.onnx.tmp-42", time.Now()), run: writeModel, stays: true},
		{name: "a recent temporary file holding data", create: leftFile(".model.onnx.tmp-42", time.Now()), run: writeModel},
		{name: "a recent live temporary file holding data", create: liveFile(".model.onnx.tmp-42", time.Now()), run: writeModel, stays: true},
		{name: "a stage a failed commit kept", create: leftDir(".stage-kept-123", old), run: newStage, stays: true},
		{name: "another name", create: leftDir(".stage-abc", old), run: newStage, stays: true},
		{name: "an abandoned temporary file", create: leftFile(".model.onnx.tmp-42", old), run: writeModel},
		{name: "a live temporary file", create: liveFile(".model.onnx.tmp-42", old), run: writeModel, stays: true},
		{name: "another file's temporary file", create: leftFile(".config.json.tmp-42", old), run: writeModel, stays: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := tc.create(t, dir)
			require.NoError(t, tc.run(dir))
			_, err := os.Stat(path)
			if tc.stays {
				require.NoError(t, err, "kept")
			} else {
				require.ErrorIs(t, err, os.ErrNotExist, "removed")
			}
		})
	}
}

func newStage(dir string) error {
	s, err := NewStage(dir)
	if err != nil {
		return err
	}
	return s.Discard()
}

// removeStages is the clean-up Commit does after its renames, and sft
// as it starts: it finishes no killed commit (FinishKilled does).
func removeStages(dir string) error {
	RemoveAbandonedStages(dir)
	return nil
}

// killedCommit makes a stage whose process was killed within its commit
// (its record written, a file not moved in yet), last changed at mtime:
// FinishKilled's to finish, not to be removed with the file.
func killedCommit(mtime time.Time) func(*testing.T, string) string {
	return func(t *testing.T, dir string) string {
		p := leftDir(".stage-123", mtime)(t, dir)
		require.NoError(t, os.WriteFile(filepath.Join(p, commitRecord), []byte(`{"move":["model.onnx"]}`), 0o666))
		require.NoError(t, os.Chtimes(p, mtime, mtime))
		return p
	}
}

func writeModel(dir string) error {
	return WriteFile(filepath.Join(dir, "model.onnx"), []byte("m"), 0o666)
}

// leftDir makes a stage-like directory holding a file, last changed at
// mtime.
func leftDir(name string, mtime time.Time) func(*testing.T, string) string {
	return func(t *testing.T, dir string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(p, 0o777))
		require.NoError(t, os.WriteFile(filepath.Join(p, "model.onnx"), []byte("partial"), 0o666))
		require.NoError(t, os.Chtimes(p, mtime, mtime))
		return p
	}
}

// emptyDir makes an empty stage-like directory (one made by a process
// that has not locked it yet), last changed at mtime.
func emptyDir(name string, mtime time.Time) func(*testing.T, string) string {
	return func(t *testing.T, dir string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(p, 0o777))
		require.NoError(t, os.Chtimes(p, mtime, mtime))
		return p
	}
}

// emptyFile makes an empty temporary file (one made by a process killed
// before it locked it) last changed at mtime.
func emptyFile(name string, mtime time.Time) func(*testing.T, string) string {
	return func(t *testing.T, dir string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, nil, 0o600))
		require.NoError(t, os.Chtimes(p, mtime, mtime))
		return p
	}
}

// leftFile makes a temporary file holding data, last changed at mtime.
func leftFile(name string, mtime time.Time) func(*testing.T, string) string {
	return func(t *testing.T, dir string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte("partial"), 0o666))
		require.NoError(t, os.Chtimes(p, mtime, mtime))
		return p
	}
}

// liveStage makes a stage as NewStage does, kept open and locked, last
// changed at mtime.
func liveStage(mtime time.Time) func(*testing.T, string) string {
	return func(t *testing.T, dir string) string {
		s, err := NewStage(dir)
		require.NoError(t, err)
		t.Cleanup(func() { s.Discard() })
		require.NoError(t, os.Chtimes(s.Dir(), mtime, mtime))
		return s.Dir()
	}
}

// killedStage makes a stage as NewStage does and unlocks it, as its
// process's death does, before anything is written in it (an export
// killed while it merged and checked the weights), last changed at mtime.
func killedStage(mtime time.Time) func(*testing.T, string) string {
	return func(t *testing.T, dir string) string {
		s, err := NewStage(dir)
		require.NoError(t, err)
		s.unlock()
		require.NoError(t, os.Chtimes(s.Dir(), mtime, mtime))
		return s.Dir()
	}
}

// liveStageHolding makes a stage as NewStage does, kept open and locked,
// holding a file, last changed at mtime.
func liveStageHolding(mtime time.Time) func(*testing.T, string) string {
	return func(t *testing.T, dir string) string {
		p := liveStage(mtime)(t, dir)
		require.NoError(t, os.WriteFile(filepath.Join(p, "model.onnx"), []byte("partial"), 0o666))
		require.NoError(t, os.Chtimes(p, mtime, mtime))
		return p
	}
}

// liveFile makes a temporary file locked as Write locks its own, last
// changed at mtime.
func liveFile(name string, mtime time.Time) func(*testing.T, string) string {
	return func(t *testing.T, dir string) string {
		p := leftFile(name, mtime)(t, dir)
		f, err := os.Open(p)
		require.NoError(t, err)
		t.Cleanup(func() { f.Close() })
		require.True(t, lockExclusive(f))
		return p
	}
}

// TestWriteLocksItsTemporaryFile: while Write writes, its temporary file
// is locked, so another process's clean-up (removeAbandoned) leaves it
// however long the writing takes.
func TestWriteLocksItsTemporaryFile(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "model.onnx")
	err := Write(target, 0o666, func(w io.Writer) error {
		tmp, err := filepath.Glob(filepath.Join(dir, ".model.onnx.tmp-*"))
		require.NoError(t, err)
		require.Len(t, tmp, 1)
		old := time.Now().Add(-2 * abandonedAfter)
		require.NoError(t, os.Chtimes(tmp[0], old, old))
		removeAbandoned(dir, ".model.onnx.tmp-")
		require.FileExists(t, tmp[0], "a file being written is not abandoned")
		_, err = w.Write([]byte("m"))
		return err
	})
	require.NoError(t, err)
	b, err := os.ReadFile(target)
	require.NoError(t, err)
	require.Equal(t, "m", string(b))
}

// TestWriteMarksItsTemporaryFile: Write's temporary file holds a byte
// (its mark) from its lock on, before write has given any, so that one a
// writer killed while it made its content (a plot encoded whole at the
// end) is taken for abandoned at once, as one holding data is, not for
// one not locked yet; the file written holds what write gave, nothing
// where it gave nothing.
func TestWriteMarksItsTemporaryFile(t *testing.T) {
	for _, content := range []string{"", "m", strings.Repeat("x", 3<<20)} {
		dir := t.TempDir()
		target := filepath.Join(dir, "plot.png")
		err := Write(target, 0o666, func(w io.Writer) error {
			tmp, err := filepath.Glob(filepath.Join(dir, ".plot.png.tmp-*"))
			require.NoError(t, err)
			require.Len(t, tmp, 1)
			st, err := os.Stat(tmp[0])
			require.NoError(t, err)
			require.NotZero(t, st.Size(), "marked before its first byte")
			_, err = io.WriteString(w, content)
			return err
		})
		require.NoError(t, err)
		b, err := os.ReadFile(target)
		require.NoError(t, err)
		require.Equal(t, len(content), len(b))
		require.Equal(t, content, string(b))
	}
}

// TestCommitRemovesAbandonedStages: a stage a killed process left that
// was too recent for NewStage to take for abandoned (a rerun started
// within abandonedAfter of a process killed as it made its stage, before
// it locked it) is removed by the Commit once it is old enough, rather
// than staying beside the committed files until some later write there.
func TestCommitRemovesAbandonedStages(t *testing.T) {
	dir := t.TempDir()
	left := emptyDir(".stage-123", time.Now())(t, dir)
	s, err := NewStage(dir)
	require.NoError(t, err)
	require.DirExists(t, left, "recent at NewStage")
	old := time.Now().Add(-2 * abandonedAfter)
	require.NoError(t, os.Chtimes(left, old, old)) // the writing took its time
	require.NoError(t, os.WriteFile(filepath.Join(s.Dir(), "model.onnx"), []byte("m"), 0o666))
	require.NoError(t, s.Commit("model.onnx"))
	require.NoDirExists(t, left)
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 1, "model.onnx alone")
}
