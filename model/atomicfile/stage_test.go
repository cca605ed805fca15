package atomicfile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// dirFiles maps the files in dir to their contents, and counts the
// stages there.
func dirFiles(t *testing.T, dir string) (map[string]string, int) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	out, stages := map[string]string{}, 0
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".stage-") {
			stages++
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		require.NoError(t, err)
		out[e.Name()] = string(b)
	}
	return out, stages
}

// TestStage: what is written in the stage leaves the directory's files
// as they were until Commit, which moves the stage's files in, removes
// the named files the stage does not hold (a replaced model's stale data
// file), leaves files it does not name, and removes the stage; Discard
// leaves the files as they were and removes the stage; a stage holding a
// file the commit does not name moves nothing; a commit that fails
// halfway says where the files not moved are and keeps them there, even
// from Discard.
func TestStage(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	require.NoError(t, os.MkdirAll(dir, 0o777))
	old := map[string]string{"model.onnx": "old model", "model.onnx_data": "old data", "notes.txt": "the user's"}
	for n, c := range old {
		require.NoError(t, os.WriteFile(filepath.Join(dir, n), []byte(c), 0o666))
	}
	write := func(s *Stage, files map[string]string) {
		for n, c := range files {
			require.NoError(t, WriteFile(filepath.Join(s.Dir(), n), []byte(c), 0o666))
		}
	}
	requireFiles := func(want map[string]string, wantStages int) {
		t.Helper()
		got, stages := dirFiles(t, dir)
		require.Equal(t, want, got)
		require.Equal(t, wantStages, stages, "stages")
	}
	names := []string{"model.onnx_data", "model.onnx", "config.json"}

	t.Run("discard", func(t *testing.T) {
		s, err := NewStage(dir)
		require.NoError(t, err)
		write(s, map[string]string{"model.onnx": "new model", "config.json": "{}"})
		requireFiles(old, 1)
		require.NoError(t, s.Discard())
		requireFiles(old, 0)
	})
	t.Run("a file not named", func(t *testing.T) {
		s, err := NewStage(dir)
		require.NoError(t, err)
		write(s, map[string]string{"model.onnx": "new model", "stray": "x"})
		require.ErrorContains(t, s.Commit(names...), "holds stray")
		require.NoError(t, s.Discard())
		requireFiles(old, 0)
	})
	t.Run("commit", func(t *testing.T) {
		s, err := NewStage(dir)
		require.NoError(t, err)
		write(s, map[string]string{"model.onnx": "new model", "config.json": "{}"})
		require.NoError(t, s.Commit(names...))
		requireFiles(map[string]string{"model.onnx": "new model", "config.json": "{}", "notes.txt": "the user's"}, 0)
		require.NoError(t, s.Discard(), "after a commit")
	})
	t.Run("a commit that fails", func(t *testing.T) {
		// A directory where tokenizer.json goes: its rename fails after
		// the model's.
		blocked := filepath.Join(dir, "tokenizer.json")
		require.NoError(t, os.MkdirAll(filepath.Join(blocked, "x"), 0o777))
		s, err := NewStage(dir)
		require.NoError(t, err)
		write(s, map[string]string{"model.onnx": "newer model", "tokenizer.json": "{}"})
		err = s.Commit("model.onnx", "tokenizer.json", "config.json")
		require.ErrorContains(t, err, "the files not moved are in "+s.Dir())
		require.True(t, strings.HasPrefix(filepath.Base(s.Dir()), keptPrefix), "%s: named out of the way of the next stage's clean-up", s.Dir())
		require.NoError(t, s.Discard())
		b, err := os.ReadFile(filepath.Join(s.Dir(), "tokenizer.json"))
		require.NoError(t, err, "the file not moved is kept")
		require.Equal(t, "{}", string(b))
		b, err = os.ReadFile(filepath.Join(dir, "model.onnx"))
		require.NoError(t, err)
		require.Equal(t, "newer model", string(b))
		require.FileExists(t, filepath.Join(dir, "config.json"), "nothing removed after the failure")
	})
	t.Run("a new directory", func(t *testing.T) {
		fresh := filepath.Join(dir, "a", "b")
		s, err := NewStage(fresh)
		require.NoError(t, err)
		write(s, map[string]string{"model.onnx": "m"})
		require.NoError(t, s.Commit(names...))
		got, stages := dirFiles(t, fresh)
		require.Equal(t, map[string]string{"model.onnx": "m"}, got)
		require.Zero(t, stages)
	})
}

// TestStageKilledMidCommit: a process killed while its Commit moved the
// stage's files in (SIGKILL, the OOM killer, a power cut) left the
// directory with some of the new files and some of the old: a model's
// new external data beside its old graph, an evaluation's new traces
// beside its old report. The next NewStage there finishes that commit
// from the record Commit wrote in the stage before its first rename, at
// once (the record is written under the stage's lock, so an unlocked
// one is a dead process's), rather than leaving the mix; a stage killed
// before its commit began keeps the directory's files as they were, and
// a live committing stage is left to its process.
func TestStageKilledMidCommit(t *testing.T) {
	old := map[string]string{"model.onnx_data": "old data", "model.onnx": "old model", "config.json": "old config", "stale.txt": "old stale"}
	killed := func(t *testing.T, dir string, journal bool) string {
		// model.onnx_data was moved in; model.onnx and config.json were not.
		stage := filepath.Join(dir, ".stage-123")
		require.NoError(t, os.MkdirAll(stage, 0o777))
		for n, c := range map[string]string{"model.onnx": "new model", "config.json": "new config"} {
			require.NoError(t, os.WriteFile(filepath.Join(stage, n), []byte(c), 0o666))
		}
		require.NoError(t, os.WriteFile(filepath.Join(dir, "model.onnx_data"), []byte("new data"), 0o666))
		if journal {
			require.NoError(t, os.WriteFile(filepath.Join(stage, ".commit"),
				[]byte(`{"move":["model.onnx_data","model.onnx","config.json"],"remove":["stale.txt"]}`), 0o666))
		}
		return stage
	}
	setup := func(t *testing.T) string {
		dir := t.TempDir()
		for n, c := range old {
			require.NoError(t, os.WriteFile(filepath.Join(dir, n), []byte(c), 0o666))
		}
		return dir
	}
	t.Run("killed mid-commit", func(t *testing.T) {
		dir := setup(t)
		killed(t, dir, true)
		s, err := NewStage(dir)
		require.NoError(t, err)
		require.NoError(t, s.Discard())
		got, stages := dirFiles(t, dir)
		require.Equal(t, map[string]string{"model.onnx_data": "new data", "model.onnx": "new model", "config.json": "new config"}, got)
		require.Zero(t, stages)
	})
	t.Run("a file written since", func(t *testing.T) {
		dir := setup(t)
		stage := killed(t, dir, true)
		past := time.Now().Add(-time.Hour)
		for _, p := range []string{filepath.Join(stage, ".commit"), filepath.Join(dir, "model.onnx_data"), filepath.Join(dir, "config.json"), filepath.Join(dir, "stale.txt")} {
			require.NoError(t, os.Chtimes(p, past, past))
		}
		require.NoError(t, os.WriteFile(filepath.Join(dir, "model.onnx"), []byte("exported since"), 0o666))
		s, err := NewStage(dir)
		require.NoError(t, err)
		require.NoError(t, s.Discard())
		got, stages := dirFiles(t, dir)
		require.Equal(t, map[string]string{"model.onnx_data": "new data", "model.onnx": "exported since", "config.json": "new config"}, got)
		require.Zero(t, stages)
	})
	t.Run("killed while writing", func(t *testing.T) {
		dir := setup(t)
		stage := killed(t, dir, false)
		require.NoError(t, os.WriteFile(filepath.Join(dir, "model.onnx_data"), []byte("old data"), 0o666)) // nothing moved yet
		s, err := NewStage(dir)
		require.NoError(t, err)
		require.NoError(t, s.Discard())
		got, _ := dirFiles(t, dir)
		require.Equal(t, old, got)
		require.NoDirExists(t, stage, "a stage holding files was locked before they were written: unlocked, its process is dead")
	})
	t.Run("a live commit", func(t *testing.T) {
		dir := setup(t)
		stage := killed(t, dir, true)
		f, err := os.Open(stage)
		require.NoError(t, err)
		defer f.Close()
		require.True(t, lockExclusive(f))
		s, err := NewStage(dir)
		require.NoError(t, err)
		require.NoError(t, s.Discard())
		got, _ := dirFiles(t, dir)
		require.Equal(t, "old model", got["model.onnx"])
		require.DirExists(t, stage)
	})
}

// TestStageCommitsAHardLinkOfItsDestination: a staged file that is a
// hard link of the file it replaces (sft links its log into the stage) is
// committed: rename(2) of one link onto another of the same file does
// nothing and reports success, which left the staged link, and the
// stage's removal failed "directory not empty"; so also for a killed
// commit finished by FinishKilled.
func TestStageCommitsAHardLinkOfItsDestination(t *testing.T) {
	for _, killed := range []bool{false, true} {
		dir := filepath.Join(t.TempDir(), "out")
		require.NoError(t, os.MkdirAll(dir, 0o777))
		log := filepath.Join(dir, "log.jsonl")
		require.NoError(t, os.WriteFile(log, []byte("steps\n"), 0o666))
		if killed {
			// A commit killed right after writing its record, as
			// TestStageKilledMidCommit's.
			stage := filepath.Join(dir, ".stage-123")
			require.NoError(t, os.MkdirAll(stage, 0o777))
			require.NoError(t, os.Link(log, filepath.Join(stage, "log.jsonl")))
			require.NoError(t, os.WriteFile(filepath.Join(stage, "model.onnx"), []byte("model"), 0o666))
			require.NoError(t, os.WriteFile(filepath.Join(stage, ".commit"), []byte(`{"move":["log.jsonl","model.onnx"]}`), 0o666))
			require.NoError(t, FinishKilled(dir))
		} else {
			s, err := NewStage(dir)
			require.NoError(t, err)
			require.NoError(t, os.Link(log, filepath.Join(s.Dir(), "log.jsonl")))
			require.NoError(t, WriteFile(filepath.Join(s.Dir(), "model.onnx"), []byte("model"), 0o666))
			require.NoError(t, s.Commit("log.jsonl", "model.onnx"))
		}
		got, stages := dirFiles(t, dir)
		require.Equal(t, map[string]string{"log.jsonl": "steps\n", "model.onnx": "model"}, got, "killed %v", killed)
		require.Zero(t, stages, "killed %v", killed)
	}
}
