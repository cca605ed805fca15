//go:build unix

package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/spiral-rl/spiral/model/flock"
	"github.com/spiral-rl/spiral/rl"
)

// evalLock is the lock of an evaluation's outputs (lockEvalOutput), which
// knows what taking it made, so that an evaluation refused before it
// starts leaves nothing new behind.
type evalLock struct {
	dir, path string
	// f is the lock file, open and locked; nil on a file system without
	// locks, where the file is made (and removed) all the same.
	f *os.File
	// created lists the directories made for the lock (dir and missing
	// parents, innermost first); madeFile is set when the lock file was
	// made for it.
	created  []string
	madeFile bool
	// started is set once the evaluation runs; release removes nothing
	// but the lock file after that.
	started bool
	// runUnlock releases dir's run lock, which --mode rsa holds too
	// (lockEvalOutput); nil for other modes.
	runUnlock func() error
}

// lockEvalOutput makes dir (and its parents) and takes the lock of an
// evaluation's outputs there for mode (flock(2) on dir/.MODE.lock, which
// the kernel releases when the process exits, however it exits), refusing
// at once when another process holds it: two evaluations of one mode
// into one --out would write the same report, plot and traces files, the
// traces through one .partial file, and leave a report of one beside the
// traces of the other. On a file system without such locks
// (flock.Unsupported) it locks nothing, but makes the file and the
// directories as elsewhere, for release to undo. A lock file whose
// holder removed it before releasing it (release) is opened again, and
// a directory that another evaluation removed (release) before the lock
// file was opened in it is made again.
//
// For --mode rsa it takes dir's run lock too (rl.LockRun), for the whole
// evaluation: its rsa.json is the name of a training run's final RSA
// report, and a run and the evaluation in one directory at once replaced
// each other's report silently (a run removes an rsa.json before its last
// step and writes its own at its end; the evaluation wrote over a
// starting run's, which had no metrics.jsonl yet to refuse it by). Once
// both are held, a run's metrics.jsonl there refuses it (refuseRunDir).
func lockEvalOutput(dir, mode string) (*evalLock, error) {
	l, err := lockEvalOutputWith(dir, mode, evalLockOps{tryLock: flock.TryLock})
	if err != nil || mode != "rsa" {
		return l, err
	}
	if l.runUnlock, err = rl.LockRun(dir); err != nil {
		return nil, l.release(fmt.Errorf("--out %s: --mode rsa writes %s, a training run's final RSA report's name: %w", dir, rl.FinalRSAFile, err))
	}
	if err := refuseRunDir(dir, mode); err != nil {
		return nil, l.release(usageError{err})
	}
	return l, nil
}

// evalLockOps is how lockEvalOutputWith locks: lockEvalOutput's is
// flock.TryLock; tests put in a file system without locks, and with made
// (nil: nothing) what another process does between the making of the
// directory and the opening of the lock file in it.
type evalLockOps struct {
	tryLock func(*os.File) (bool, error)
	made    func()
}

// lockEvalOutputWith is lockEvalOutput locking with ops.
func lockEvalOutputWith(dir, mode string, ops evalLockOps) (*evalLock, error) {
	l := &evalLock{dir: dir, path: filepath.Join(dir, "."+mode+".lock")}
	fail := func(err error) (*evalLock, error) {
		removeEmptyDirs(l.created)
		return nil, err
	}
	const tries = 3
	for try := range tries {
		// Made again on each try: another evaluation (or run) refused
		// meanwhile removes the empty directory it made, which may be
		// this one, within the making or between it and the opening
		// below (removedMeanwhile). The directories made for this one are
		// the most found missing.
		if missing := missingDirs(dir); len(missing) > len(l.created) {
			l.created = missing
		}
		if err := os.MkdirAll(dir, 0o777); err != nil {
			if removedMeanwhile(err) && try < tries-1 {
				continue
			}
			return fail(outError("--out", dir, err))
		}
		if ops.made != nil {
			ops.made()
		}
		_, statErr := os.Lstat(l.path)
		f, err := os.OpenFile(l.path, os.O_CREATE|os.O_RDWR, 0o666)
		if removedMeanwhile(err) && try < tries-1 {
			continue
		}
		if err != nil {
			return fail(fmt.Errorf("--out %s: lock: %w", dir, err))
		}
		ok, err := ops.tryLock(f)
		switch {
		case flock.Unsupported(err):
			// A file system without locks: unlocked, as before, but what
			// taking the lock made is still undone if it is refused.
			f.Close()
			l.madeFile = errors.Is(statErr, fs.ErrNotExist)
			return l, nil
		case err != nil:
			f.Close()
			return fail(fmt.Errorf("--out %s: lock %s: %w", dir, l.path, err))
		case !ok:
			f.Close()
			return nil, fmt.Errorf("--out %s: another spiral eval --mode %s is writing there (lock %s); wait for it or give another --out", dir, mode, l.path)
		}
		if same, err := flock.Names(l.path, f); err != nil || !same {
			f.Close()
			if err != nil {
				return fail(fmt.Errorf("--out %s: lock %s: %w", dir, l.path, err))
			}
			continue // removed by a refused evaluation that held it
		}
		l.f, l.madeFile = f, errors.Is(statErr, fs.ErrNotExist)
		return l, nil
	}
	return fail(fmt.Errorf("--out %s: lock %s: taken by another process while starting", dir, l.path))
}

// release unlocks the evaluation's outputs and returns err with
// release's own errors. The lock file goes, however the evaluation
// ended, as a training run's .lock does: where the file system keeps
// locks, removed while it holds the lock (a process that opened the file
// meanwhile finds it gone and opens it again), whoever made it (an
// evaluation killed by SIGKILL, which left it); where it keeps none, only
// if made for this evaluation. An evaluation that failed (err not nil)
// before it started removes too, in a directory made for it that holds
// nothing else, the artifacts built for it and the directories made. A
// directory another process has written into meanwhile (another mode's
// evaluation, with its own lock, sharing the artifacts) stays.
func (l *evalLock) release(err error) error {
	if l.runUnlock != nil {
		if uerr := l.runUnlock(); uerr != nil {
			err = errors.Join(err, uerr)
		}
	}
	undo := err != nil && !l.started
	if undo && len(l.created) > 0 && holdsOnly(l.dir, filepath.Base(l.path), rl.ArtifactsDir) {
		if rerr := os.RemoveAll(filepath.Join(l.dir, rl.ArtifactsDir)); rerr != nil {
			err = errors.Join(err, fmt.Errorf("--out %s: remove the artifacts of the refused evaluation: %w", l.dir, rerr))
		}
	}
	if l.f != nil || l.madeFile {
		if rerr := os.Remove(l.path); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
			err = errors.Join(err, fmt.Errorf("--out %s: remove the evaluation's lock: %w", l.dir, rerr))
		}
	}
	if l.f != nil {
		l.f.Close()
	}
	if undo {
		removeEmptyDirs(l.created)
	}
	return err
}
