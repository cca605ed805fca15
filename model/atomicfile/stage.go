package atomicfile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// Stage holds the files that will replace a set of files of one
// directory, written in a temporary directory beside it: the writing,
// however long, leaves the directory as it was, and Commit then moves
// them in by rename, so that an interruption leaves a mix of old and new
// files only within Commit's renames, never within a file or the writing.
// A process killed before Commit or Discard leaves the stage's directory
// behind (as Write leaves its temporary file), hidden beside dir.
type Stage struct {
	dir, tmp string
}

// NewStage creates dir (and its parents) and the temporary directory
// beside it (".<dir>.stage-*" in dir's parent) that Commit moves files
// from.
func NewStage(dir string) (*Stage, error) {
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return nil, err
	}
	dir = filepath.Clean(dir)
	tmp, err := os.MkdirTemp(filepath.Dir(dir), "."+filepath.Base(dir)+".stage-*")
	if err != nil {
		return nil, err
	}
	return &Stage{dir: dir, tmp: tmp}, nil
}

// Dir returns the temporary directory to write the files in.
func (s *Stage) Dir() string { return s.tmp }

// Commit makes dir's files of the given names the stage's: in the order
// given, each the stage holds is renamed over dir's (so that a file
// another refers to, such as a model's external data, is named first);
// then each it does not hold is removed from dir, as a replaced model's
// stale data file is. The stage's own directory is removed; a name the
// stage holds that is not given is an error, and nothing is moved then.
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
			return fmt.Errorf("atomicfile: stage of %s holds %s, which the commit does not name", s.dir, e.Name())
		}
		held[e.Name()] = true
	}
	for _, n := range names {
		if held[n] {
			if err := os.Rename(filepath.Join(s.tmp, n), filepath.Join(s.dir, n)); err != nil {
				return err
			}
		}
	}
	for _, n := range names {
		if !held[n] {
			if err := os.Remove(filepath.Join(s.dir, n)); err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
		}
	}
	if err := SyncDir(s.dir); err != nil {
		return err
	}
	return os.Remove(s.tmp)
}

// Discard removes the stage's directory and what is in it; dir is left
// as it was. It may follow Commit (then it does nothing).
func (s *Stage) Discard() error { return os.RemoveAll(s.tmp) }
