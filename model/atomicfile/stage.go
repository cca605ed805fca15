package atomicfile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// Stage holds the files that will replace a set of files of one
// directory, written in a hidden temporary directory inside it (on its
// file system, whatever is mounted where): the writing, however long,
// leaves the directory's files as they were, and Commit then moves them
// in by rename, so that an interruption leaves a mix of old and new
// files only within Commit's renames, never within a file or the
// writing. A process killed before Commit or Discard leaves the stage
// (.stage-* in the directory) behind, as Write leaves its temporary file.
type Stage struct {
	dir, tmp string
	// committing is set once Commit starts moving files: the stage is
	// kept from then on (Discard leaves it), so that a Commit that fails
	// halfway loses none of the new files.
	committing bool
}

// NewStage creates dir (and its parents) and the stage's directory in
// it.
func NewStage(dir string) (*Stage, error) {
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp(dir, ".stage-*")
	if err != nil {
		return nil, err
	}
	return &Stage{dir: dir, tmp: tmp}, nil
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
	return os.RemoveAll(s.tmp)
}
