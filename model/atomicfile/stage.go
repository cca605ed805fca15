package atomicfile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Stage holds the files that will replace a set of files of one
// directory, written in a hidden temporary directory inside it (on its
// file system, whatever is mounted where): the writing, however long,
// leaves the directory's files as they were, and Commit then moves them
// in by rename, so that an interruption leaves a mix of old and new
// files only within Commit's renames, never within a file or the
// writing. The stage (.stage-N in the directory) is locked while its
// process lives; one a killed process left behind is removed by the
// next NewStage in the directory (see removeAbandoned).
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

// NewStage creates dir (and its parents) and the stage's directory in
// it, first removing the stages that killed processes left there.
func NewStage(dir string) (*Stage, error) {
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return nil, err
	}
	removeAbandoned(dir, stagePrefix)
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
	return &Stage{dir: dir, tmp: tmp, lock: lock}, nil
}

// unlock releases the stage's lock.
func (s *Stage) unlock() {
	if s.lock != nil {
		s.lock.Close()
		s.lock = nil
	}
}

// Dir returns the directory to write the files in.
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
		if !given[e.Name()] {
			return fmt.Errorf("atomicfile: the stage of %s holds %s, which the commit does not name", s.dir, e.Name())
		}
		held[e.Name()] = true
	}
	s.committing = true
	kept := func(err error) error {
		// Renamed out of removeAbandoned's way where it can be: the
		// files not moved stay until someone moves or removes them.
		keep := filepath.Join(s.dir, keptPrefix+strings.TrimPrefix(filepath.Base(s.tmp), stagePrefix))
		if os.Rename(s.tmp, keep) == nil {
			s.tmp = keep
		}
		return fmt.Errorf("atomicfile: commit to %s (the files not moved are in %s): %w", s.dir, s.tmp, err)
	}
	for _, n := range names {
		if held[n] {
			if err := os.Rename(filepath.Join(s.tmp, n), filepath.Join(s.dir, n)); err != nil {
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
	return os.Remove(s.tmp)
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
