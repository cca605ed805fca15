package tfevents

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spiral-rl/spiral/model/atomicfile"
)

// filePrefix begins the name of every event file (TensorBoard reads the
// files whose names hold "tfevents"), fileSuffix ends spiral's, and
// tempPrefix begins the temporary files they are written through
// (writeFile), one prefix for them all, so that those a killed process
// left are removed by the next write whatever file they were to be.
const (
	filePrefix = "events.out.tfevents."
	fileSuffix = ".spiral"
	tempPrefix = ".events.spiral.tmp-"
)

// Files lists spiral's event files in dir, in the order of their names
// (which is the order they were started in); none when dir does not
// exist.
func Files(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("tfevents: %w", err)
	}
	var out []string
	for _, e := range entries {
		if n := e.Name(); e.Type().IsRegular() && strings.HasPrefix(n, filePrefix) && strings.HasSuffix(n, fileSuffix) {
			out = append(out, filepath.Join(dir, n))
		}
	}
	return out, nil
}

// RemoveFiles removes spiral's event files in dir (Files) and the
// temporary files that writes of event files killed within them left
// there (leftover), however new: for a directory that no writer writes
// in any more (a finished run's events set aside, under the run's lock),
// where none can be a live write's. Other files, and dir, stay.
func RemoveFiles(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("tfevents: %w", err)
	}
	for _, e := range entries {
		n := e.Name()
		if spiral := e.Type().IsRegular() && strings.HasPrefix(n, filePrefix) && strings.HasSuffix(n, fileSuffix); !spiral && !leftover(n) {
			continue
		}
		if err := os.Remove(filepath.Join(dir, n)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("tfevents: %w", err)
		}
	}
	return nil
}

// newPath names a new event file in dir, which it creates:
// events.out.tfevents.<unix seconds>.<host>.spiral as TensorBoard's
// writers name theirs, at now's second or, if an event file in dir
// (spiral's or another writer's) is named for that second or a later
// one, at the second after the latest: a clock behind the files' (a run
// resumed on another machine, a clock stepped back) would name the new
// file before them, and TensorBoard, which reads a run's files in the
// order of their names, would read the resumed steps before the earlier
// ones (its default loader then drops the later steps as abandoned), so
// the names sort in the order the files were started. The temporary
// files that writes of event files killed within them left in dir
// (leftover) are removed first, as atomicfile removes a killed write's
// (RemoveAbandoned): every run that writes events, live or converted,
// starts a file here.
func newPath(dir string, now time.Time) (string, error) {
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return "", fmt.Errorf("tfevents: %w", err)
	}
	atomicfile.RemoveAbandoned(dir, leftover)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", fmt.Errorf("tfevents: %w", err)
	}
	sec := now.Unix()
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), filePrefix)
		if !ok {
			continue
		}
		field, _, _ := strings.Cut(rest, ".")
		if s, err := strconv.ParseInt(field, 10, 64); err == nil && s >= sec {
			sec = s + 1
		}
	}
	host, err := os.Hostname()
	if err != nil || host == "" || strings.ContainsRune(host, filepath.Separator) {
		host = "localhost"
	}
	return filepath.Join(dir, filePrefix+strconv.FormatInt(sec, 10)+"."+host+fileSuffix), nil
}

// leftover says whether name is a temporary file that a write of an
// event file leaves when its process is killed within it: writeFile's
// (tempPrefix and digits) or, as versions before it wrote, a staging
// file .<unix seconds>.<host>.spiral.partial and that name's atomicfile
// temporary file (a "." before it, ".tmp-" and digits after), which,
// named for the second, no later write would remove.
func leftover(name string) bool {
	digits := func(s string) bool { return s != "" && strings.Trim(s, "0123456789") == "" }
	if rest, ok := strings.CutPrefix(name, tempPrefix); ok {
		return digits(rest)
	}
	if i := strings.LastIndex(name, ".tmp-"); i > 0 && name[0] == '.' && digits(name[i+len(".tmp-"):]) {
		name = name[1:i]
	}
	rest, ok := strings.CutPrefix(name, ".")
	if !ok {
		return false
	}
	if rest, ok = strings.CutSuffix(rest, fileSuffix+".partial"); !ok {
		return false
	}
	sec, host, ok := strings.Cut(rest, ".")
	return ok && digits(sec) && host != ""
}

// Writer appends events to an event file as they come: each event is
// one write, so that TensorBoard, reading the file as it grows, sees
// every step as soon as it is logged.
type Writer struct {
	f *os.File
}

// Create starts a new event file in dir (created if need be), named for
// now (newPath), and writes its file_version event; when that write
// fails the file is removed.
func Create(dir string, now time.Time) (*Writer, error) {
	return create(dir, now, (*os.File).Write)
}

// create is Create, the file_version event written with write (a
// test's failing one).
func create(dir string, now time.Time, write func(*os.File, []byte) (int, error)) (*Writer, error) {
	p, err := newPath(dir, now)
	if err != nil {
		return nil, err
	}
	f, err := os.OpenFile(p, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o666)
	if err != nil {
		return nil, fmt.Errorf("tfevents: %w", err)
	}
	if _, err := write(f, Encode(WallTime(now), nil)); err != nil {
		f.Close()
		err = fmt.Errorf("tfevents: %s: %w", p, err)
		if rerr := os.Remove(p); rerr != nil {
			err = errors.Join(err, fmt.Errorf("tfevents: remove the file: %w", rerr))
		}
		return nil, err
	}
	return &Writer{f: f}, nil
}

// Path is the file w writes.
func (w *Writer) Path() string { return w.f.Name() }

// Write appends e.
func (w *Writer) Write(e Event) error {
	if _, err := w.f.Write(appendRecord(nil, marshalEvent(e, ""))); err != nil {
		return fmt.Errorf("tfevents: %w", err) // an *fs.PathError, naming the file
	}
	return nil
}

// Close syncs and closes the file.
func (w *Writer) Close() error {
	err := w.f.Sync()
	if cerr := w.f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("tfevents: %s: %w", w.f.Name(), err)
	}
	return nil
}

// WriteFile writes events as a new event file in dir (created if need
// be), named for now (newPath), whose file_version event is at now; the
// file is written atomically (writeFile), so that TensorBoard never
// reads it half-written. The files of dir named in replaced (event files
// the new one supersedes) are removed before it is written, and it is
// named after them too, so that a TensorBoard that read them reads it
// next. It returns the file's path.
func WriteFile(dir string, now time.Time, events []Event, replaced ...string) (string, error) {
	p, err := newPath(dir, now)
	if err != nil {
		return "", err
	}
	for _, f := range replaced {
		if err := os.Remove(f); err != nil {
			return "", fmt.Errorf("tfevents: remove %s, which %s replaces: %w", f, filepath.Base(p), err)
		}
	}
	if err := writeFile(p, Encode(WallTime(now), events)); err != nil {
		return "", err
	}
	return p, nil
}

// writeFile replaces path, one of spiral's event files, with data
// atomically, through a temporary file whose name does not hold
// "tfevents" (tempPrefix): TensorBoard reads every file of a run whose
// name does, and atomicfile's own temporary name, for the file it
// replaces, would be read as one while it was written, or for good once
// a process killed then left it, showing its steps twice.
func writeFile(path string, data []byte) error {
	if err := atomicfile.WriteAs(path, tempPrefix, 0o666, func(w io.Writer) error { _, err := w.Write(data); return err }); err != nil {
		return fmt.Errorf("tfevents: %w", err)
	}
	return nil
}

// Truncate drops the events of the event file at path whose step is past
// step (after a run resumed from an earlier checkpoint; -1 drops every
// one), and a last event cut short, rewriting the file atomically; a file
// left with no event but its file_version is removed. It returns the
// events left (as Decode returns them: those with a summary), none when
// the file was removed.
func Truncate(path string, step int64) (kept []Event, err error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("tfevents: %w", err)
	}
	var keep []byte
	dropped := false
	torn, err := eachRecord(b, func(off int, data []byte) error {
		e, _, hasSummary, err := unmarshalEvent(data)
		if err != nil {
			return fmt.Errorf("record at byte %d: %w", off, err)
		}
		if hasSummary && e.Step > step {
			dropped = true
			return nil
		}
		if hasSummary {
			kept = append(kept, e)
		}
		keep = appendRecord(keep, data)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("tfevents: %s: %w", path, err)
	}
	switch {
	case len(kept) == 0:
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("tfevents: %w", err)
		}
	case dropped || torn:
		if err := writeFile(path, keep); err != nil {
			return nil, err
		}
	}
	return kept, nil
}
