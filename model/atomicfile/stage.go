package atomicfile

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// Stage holds the files that will replace a set of files of one
// directory, written in a hidden temporary directory inside it (on its
// file system, whatever is mounted where): the writing, however long,
// leaves the directory's files as they were, and Commit then moves them
// in by rename, so that an interruption leaves a mix of old and new
// files only within Commit's renames, never within a file or the
// writing, and a mix left by a process killed within them is finished
// by the next NewStage in the directory. The stage (.stage-N in the
// directory) is locked while its process lives; one a killed process
// left behind is removed by the next NewStage or Commit in the directory
// (see RemoveAbandonedStages), or, when it was killed within Commit's renames,
// finished by it (see FinishKilled).
type Stage struct {
	dir, tmp string
	// lock is the stage's directory, open and flock(2)ed until Commit or
	// Discard.
	lock *os.File
	// committing is set once Commit starts moving files: the stage is
	// kept from then on (Discard leaves it), so that a Commit that fails
	// halfway loses none of the new files.
	committing bool
}

// stagePrefix begins a stage's name; keptPrefix a stage kept by a
// failed Commit, which no later NewStage removes.
const (
	stagePrefix = ".stage-"
	keptPrefix  = ".stage-kept-"
)

// lockedMark is the empty file NewStage makes in a stage once it holds
// its lock: a stage holding anything was locked, so that one no process
// holds the lock of is a dead process's however recent, and only one
// killed between its making and its mark waits abandonedAfter (see
// removeUnlocked). A command can work long before its first file is in
// its stage (an export merges and checks the weights, a comparison draws
// its plots), and a stage it was killed in then stayed empty, taken for
// one not locked yet, until some write in the directory a minute on.
const lockedMark = ".locked"

// commitRecord is the file in a stage in which Commit records, before
// its first rename, what it moves in and removes: a commit its process
// was killed within is finished from it by the next NewStage.
const commitRecord = ".commit"

// commitPlan is what commitRecord holds: the names to move in, in order,
// and then those to remove from the directory.
type commitPlan struct {
	Move   []string `json:"move"`
	Remove []string `json:"remove"`
}

// NewStage creates dir (and its parents) and the stage's directory in
// it, first finishing the commits that killed processes left halfway
// there and removing the stages they left before committing.
func NewStage(dir string) (*Stage, error) {
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return nil, err
	}
	if err := FinishKilled(dir); err != nil {
		return nil, err
	}
	RemoveAbandonedStages(dir)
	tmp, err := os.MkdirTemp(dir, stagePrefix+"*")
	if err != nil {
		return nil, err
	}
	lock, err := os.Open(tmp)
	if err != nil {
		os.Remove(tmp)
		return nil, err
	}
	lockExclusive(lock)
	s := &Stage{dir: dir, tmp: tmp, lock: lock}
	mark, err := os.Create(filepath.Join(tmp, lockedMark))
	if err == nil {
		err = mark.Close()
	}
	if err != nil {
		s.Discard()
		return nil, fmt.Errorf("atomicfile: mark the stage of %s: %w", dir, err)
	}
	return s, nil
}

// RemoveAbandonedStages removes the stages in dir that killed processes
// left before their commits began (removeUnlocked: unlocked, and holding
// a file or a minute old), as NewStage does first. A command that makes its stage
// only after long work (sft trains first) calls it as it starts, so that
// a model-sized stage a killed run left does not stay through the
// rerun's training; the commits killed processes began are finished by
// FinishKilled, which should come first.
func RemoveAbandonedStages(dir string) {
	removeUnlocked(dir, digitsAfter(stagePrefix), lockedStages)
}

// unlock releases the stage's lock.
func (s *Stage) unlock() {
	if s.lock != nil {
		s.lock.Close()
		s.lock = nil
	}
}

// Dir returns the directory to write the files in (it holds the stage's
// mark, lockedMark, which Commit leaves out).
func (s *Stage) Dir() string { return s.tmp }

// Commit makes dir's files of the given names the stage's: in the order
// given, each the stage holds is renamed over dir's (so that a file
// another refers to, such as a model's external data, is named first);
// then each it does not hold is removed from dir, as a replaced model's
// stale data file is. The stage's directory is removed. A name the stage
// holds that is not given is an error, and nothing is moved then. When a
// rename or removal fails, the error names the stage, which is kept with
// the files not yet moved.
func (s *Stage) Commit(names ...string) error {
	defer s.unlock()
	given := map[string]bool{}
	for _, n := range names {
		given[n] = true
	}
	entries, err := os.ReadDir(s.tmp)
	if err != nil {
		return err
	}
	held := map[string]bool{}
	for _, e := range entries {
		if e.Name() == lockedMark {
			continue
		}
		if !given[e.Name()] {
			return fmt.Errorf("atomicfile: the stage of %s holds %s, which the commit does not name", s.dir, e.Name())
		}
		held[e.Name()] = true
	}
	s.committing = true
	var plan commitPlan
	for _, n := range names {
		if held[n] {
			plan.Move = append(plan.Move, n)
		} else {
			plan.Remove = append(plan.Remove, n)
		}
	}
	record, err := json.Marshal(plan)
	if err != nil {
		return err
	}
	// Written (and synced) before the first rename: a process killed
	// within the renames leaves the record for FinishKilled.
	if err := WriteFile(filepath.Join(s.tmp, commitRecord), record, 0o666); err != nil {
		s.committing = false
		return fmt.Errorf("atomicfile: commit to %s: %w", s.dir, err)
	}
	kept := func(err error) error {
		// Renamed out of RemoveAbandonedStages' way where it can be: the
		// files not moved stay until someone moves or removes them.
		keep := filepath.Join(s.dir, keptPrefix+strings.TrimPrefix(filepath.Base(s.tmp), stagePrefix))
		if os.Rename(s.tmp, keep) == nil {
			s.tmp = keep
		}
		return fmt.Errorf("atomicfile: commit to %s (the files not moved are in %s): %w", s.dir, s.tmp, err)
	}
	for _, n := range names {
		if held[n] {
			if err := moveIn(filepath.Join(s.tmp, n), filepath.Join(s.dir, n)); err != nil {
				return kept(err)
			}
		}
	}
	for _, n := range names {
		if !held[n] {
			if err := os.Remove(filepath.Join(s.dir, n)); err != nil && !errors.Is(err, os.ErrNotExist) {
				return kept(err)
			}
		}
	}
	if err := SyncDir(s.dir); err != nil {
		return err
	}
	for _, n := range []string{commitRecord, lockedMark} {
		if err := os.Remove(filepath.Join(s.tmp, n)); err != nil {
			return err
		}
	}
	if err := os.Remove(s.tmp); err != nil {
		return err
	}
	// A stage a killed process left that was too recent for NewStage to
	// take for abandoned (empty: a rerun made within abandonedAfter of a
	// kill as it was made) may be old enough by now: it goes, rather than staying beside the
	// files committed until the next write in dir.
	RemoveAbandonedStages(s.dir)
	return nil
}

// FinishKilled finishes the commits to dir that their processes were
// killed within (NewStage does first; a command that reads what a
// commit writes before it makes a stage calls it itself): each stage
// holding a commit record that no live process holds the lock of has its
// files moved in and the record's other names removed, as Commit would
// have, and is then removed. The record was
// written under the stage's lock, so no wait for a lock to be taken is
// needed (as RemoveAbandonedStages' is for an empty stage).
func FinishKilled(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return nil // nothing was committed there (and making it will say why)
	}
	if err != nil {
		return fmt.Errorf("atomicfile: read %s: %w", dir, err)
	}
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), stagePrefix)
		if !ok || rest == "" || strings.Trim(rest, "0123456789") != "" || !e.IsDir() {
			continue
		}
		if err := finishStage(dir, filepath.Join(dir, e.Name())); err != nil {
			return err
		}
	}
	return nil
}

// finishStage finishes the killed commit of stage into dir, if it is one
// (see FinishKilled).
func finishStage(dir, stage string) error {
	record := filepath.Join(stage, commitRecord)
	b, err := os.ReadFile(record)
	if err != nil {
		return nil // no commit began (or it is gone): RemoveAbandonedStages'
	}
	rec, err := os.Stat(record)
	if err != nil {
		return nil
	}
	lock, err := os.Open(stage)
	if err != nil {
		return nil
	}
	defer lock.Close()
	if !lockExclusive(lock) {
		return nil // its process lives
	}
	var plan commitPlan
	if err := json.Unmarshal(b, &plan); err != nil {
		return nil // not a record Commit wrote: left as it is (RemoveAbandonedStages leaves a stage holding a record too)
	}
	for _, n := range append(plan.Move, plan.Remove...) {
		if n != filepath.Base(n) || n == "." || n == ".." {
			return nil // names a file outside dir: not a record Commit wrote
		}
	}
	fail := func(err error) error {
		return fmt.Errorf("atomicfile: finish the commit a killed process began from %s: %w", stage, err)
	}
	// A file of dir changed after the commit began was written by a
	// later writer that does not stage (atomicfile.Write): it is newer
	// than what the killed commit was to put there, and stays.
	newer := func(n string) bool {
		fi, err := os.Lstat(filepath.Join(dir, n))
		return err == nil && fi.ModTime().After(rec.ModTime())
	}
	for _, n := range plan.Move {
		if newer(n) {
			continue
		}
		if err := moveIn(filepath.Join(stage, n), filepath.Join(dir, n)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fail(err)
		}
	}
	for _, n := range plan.Remove {
		if newer(n) {
			continue
		}
		if err := os.Remove(filepath.Join(dir, n)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fail(err)
		}
	}
	if err := SyncDir(dir); err != nil {
		return fail(err)
	}
	if err := os.RemoveAll(stage); err != nil {
		return fail(err)
	}
	return nil
}

// Discard removes the stage's directory and what is in it, leaving dir's
// files as they were; after Commit has started it does nothing (a
// failed Commit keeps the stage).
func (s *Stage) Discard() error {
	if s.committing {
		return nil
	}
	defer s.unlock()
	return os.RemoveAll(s.tmp)
}

// moveIn renames the staged file src to dst. When both are hard links of
// one file (a writer linked the file it replaces into its stage),
// rename(2) does nothing and reports success, leaving src: it is removed,
// so that dst alone names the file, as after any other move.
func moveIn(src, dst string) error {
	if err := os.Rename(src, dst); err != nil {
		return err
	}
	if err := os.Remove(src); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}
