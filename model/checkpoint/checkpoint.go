package checkpoint

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/spiral-rl/spiral/model/atomicfile"
	"github.com/spiral-rl/spiral/model/optim"
	"github.com/spiral-rl/spiral/model/params"
)

// FormatVersion is the version of the layout and state.json written by
// Save. Load accepts versions 1..FormatVersion.
const FormatVersion = 1

// File names inside a checkpoint directory and in the run directory.
const (
	ModelFile     = "model.safetensors"
	OptimizerFile = "optimizer.safetensors"
	StateFile     = "state.json"
	LatestFile    = "latest"
	dirPrefix     = "ckpt-"
	tmpPrefix     = ".tmp-"
)

// Name suffixes of the AdamW moments in OptimizerFile (PyTorch's names).
const (
	ExpAvgSuffix   = ".exp_avg"
	ExpAvgSqSuffix = ".exp_avg_sq"
)

// ErrNoCheckpoint is returned (wrapped) by Resume and Find when the run
// directory holds no checkpoint.
var ErrNoCheckpoint = errors.New("checkpoint: no checkpoint")

// State is the JSON part of a checkpoint. The trainer fills Step,
// DataCursor and Config; Save fills FormatVersion, OptimizerSteps and
// Files. No random-generator state is kept here: train seeds every draw
// from the run's seed, the step and its place in the step, and sft keeps
// its examples' generator state in its DataCursor.
type State struct {
	// FormatVersion is the checkpoint format (FormatVersion when written).
	FormatVersion int `json:"format_version"`
	// Step is the trainer step the checkpoint was taken after; it names
	// the directory. >= 0.
	Step int64 `json:"step"`
	// OptimizerSteps is AdamW.Steps() at save time (0 without optimiser).
	OptimizerSteps int64 `json:"optimizer_steps"`
	// DataCursor is the data sampler's position (sft: its examples'
	// generator state), opaque here.
	DataCursor json.RawMessage `json:"data_cursor,omitempty"`
	// Config is the run configuration, opaque here.
	Config json.RawMessage `json:"config,omitempty"`
	// Files maps each safetensors file name to its size and checksum.
	Files map[string]FileInfo `json:"files"`
}

// Digest fingerprints the checkpoint by what st records of its
// weights file, ModelFile, "crc32c:CRC:SIZE" (hexadecimal CRC-32C, size
// in bytes): the whole file, whose metadata records the step and a
// checksum of the data cursor and configuration (checkCounts), not its
// tensors alone. It is alike for copies of one checkpoint, and other for
// another run's (but for a CRC-32C collision) or another step's, even
// where the tensors are byte-identical (a run of other settings that
// leave them alone); "" where st records no ModelFile.
func (st State) Digest() string {
	f, ok := st.Files[ModelFile]
	if !ok {
		return ""
	}
	return fmt.Sprintf("crc32c:%08x:%d", f.CRC32C, f.Size)
}

// FileInfo is the size in bytes and CRC-32C (Castagnoli) of one file.
type FileInfo struct {
	Size   int64  `json:"size"`
	CRC32C uint32 `json:"crc32c"`
}

// Options configures Save. The zero value keeps every checkpoint.
type Options struct {
	// Keep is how many checkpoints to retain, newest by step first; older
	// ones are deleted after a successful Save. 0 keeps all. The one just
	// saved is never deleted. Checkpoints of a step above the one saved,
	// which a resume skipped as damaged (a run resumes from its newest
	// intact checkpoint), do not count, and are deleted too, with a note.
	Keep int
	// Warn receives the notes of checkpoints deleted as damaged, the
	// warnings of those that could not be deleted and the warning of a
	// latest pointer that could not be updated (nil: discarded): neither
	// failure fails the Save, whose checkpoint is saved.
	Warn io.Writer

	// remove deletes a checkpoint directory (nil: os.RemoveAll); tests
	// make it fail.
	remove func(path string) error
	// pointLatest points DIR/latest at a checkpoint directory's name
	// (nil: writeLatest); tests make it fail.
	pointLatest func(dir, name string) error
}

// warn returns o.Warn, or io.Discard when it is nil.
func (o Options) warn() io.Writer {
	if o.Warn == nil {
		return io.Discard
	}
	return o.Warn
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// DirName returns the directory name of the checkpoint for step.
func DirName(step int64) string { return fmt.Sprintf("%s%06d", dirPrefix, step) }

// parseDirName returns the step of a checkpoint directory name.
func parseDirName(name string) (int64, bool) {
	digits, ok := strings.CutPrefix(name, dirPrefix)
	if !ok || digits == "" {
		return 0, false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(digits, 10, 64)
	return n, err == nil
}

func momentParts(opt *optim.AdamW) []params.Part {
	return []params.Part{
		{Store: opt.ExpAvg(), Rename: func(n string) string { return n + ExpAvgSuffix }},
		{Store: opt.ExpAvgSq(), Rename: func(n string) string { return n + ExpAvgSqSuffix }},
	}
}

// Save writes the weights w, the moments of opt (nil: weights only) and st
// as checkpoint DirName(st.Step) under dir, atomically (see the package
// doc), points DIR/latest at it (a failure is a warning to o.Warn), and
// applies o.Keep. An existing checkpoint of the same step is replaced. It
// returns the checkpoint's path.
func Save(dir string, w *params.Store, opt *optim.AdamW, st State, o Options) (string, error) {
	if st.Step < 0 {
		return "", fmt.Errorf("checkpoint: negative step %d", st.Step)
	}
	if o.Keep < 0 {
		return "", fmt.Errorf("checkpoint: negative retention %d", o.Keep)
	}
	if name, i, v, ok := firstNonFinite(w); ok {
		return "", fmt.Errorf("checkpoint: refusing to save step %d: weight %q holds %v at element %d", st.Step, name, v, i)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("checkpoint: %w", err)
	}
	RemoveStale(dir)
	name := DirName(st.Step)
	tmp, err := mkdirTemp(dir, tmpPrefix+name+"-")
	if err != nil {
		return "", fmt.Errorf("checkpoint: %w", err)
	}
	ok := false
	defer func() {
		if !ok {
			os.RemoveAll(tmp)
		}
	}()

	st.FormatVersion = FormatVersion
	st.OptimizerSteps = 0
	st.Files = map[string]FileInfo{}
	meta := map[string]string{"format": "pt", metaStep: strconv.FormatInt(st.Step, 10)}
	sum, err := stateChecksum(st)
	if err != nil {
		return "", err
	}
	meta[metaState] = sum
	fi, err := writeFile(filepath.Join(tmp, ModelFile), func(f io.Writer) error {
		return params.WriteParts(f, meta, params.Part{Store: w})
	})
	if err != nil {
		return "", err
	}
	st.Files[ModelFile] = fi
	if opt != nil {
		if err := opt.ExpAvg().SameLayout(w); err != nil {
			return "", fmt.Errorf("checkpoint: optimiser does not match the weights: %w", err)
		}
		st.OptimizerSteps = opt.Steps()
		meta := map[string]string{"spiral_optimizer": "adamw", metaOptimizerSteps: strconv.FormatInt(opt.Steps(), 10)}
		fi, err := writeFile(filepath.Join(tmp, OptimizerFile), func(f io.Writer) error {
			return params.WriteParts(f, meta, momentParts(opt)...)
		})
		if err != nil {
			return "", err
		}
		st.Files[OptimizerFile] = fi
	}
	js, err := json.Marshal(st)
	if err != nil {
		return "", fmt.Errorf("checkpoint: encode state: %w", err)
	}
	if _, err := writeFile(filepath.Join(tmp, StateFile), func(f io.Writer) error {
		_, err := f.Write(append(js, '\n'))
		return err
	}); err != nil {
		return "", err
	}
	if err := atomicfile.SyncDir(tmp); err != nil {
		return "", fmt.Errorf("checkpoint: %w", err)
	}

	final := filepath.Join(dir, name)
	var old string
	if _, err := os.Lstat(final); err == nil {
		// Move the old checkpoint of this step aside first: rename cannot
		// replace a non-empty directory.
		old = filepath.Join(dir, movedAsidePrefix+name+"-"+filepath.Base(tmp)[len(tmpPrefix+name+"-"):])
		if err := os.Rename(final, old); err != nil {
			return "", fmt.Errorf("checkpoint: move aside %s: %w", final, err)
		}
	}
	if err := os.Rename(tmp, final); err != nil {
		return "", fmt.Errorf("checkpoint: %w", err)
	}
	ok = true
	if err := atomicfile.SyncDir(dir); err != nil {
		return "", fmt.Errorf("checkpoint: %w", err)
	}
	if old != "" {
		os.RemoveAll(old)
	}
	// The checkpoint is in place: a pointer that cannot be updated is a
	// warning, since readers go by the checkpoint directories (Newest).
	point := o.pointLatest
	if point == nil {
		point = writeLatest
	}
	if err := point(dir, name); err != nil {
		fmt.Fprintf(o.warn(), "spiral: warning: saved checkpoint %s, but could not point %s at it (readers go by the checkpoint directories, not the pointer): %v\n",
			final, filepath.Join(dir, LatestFile), err)
	}
	if o.Keep > 0 {
		prune(dir, st.Step, o)
	}
	return final, nil
}

// mkdirTemp creates a new directory under dir named prefix + random
// digits with mode 0777 less the umask, like every other directory of a
// run (os.MkdirTemp would make it 0700).
func mkdirTemp(dir, prefix string) (string, error) {
	var b [8]byte
	for range 100 {
		if _, err := rand.Read(b[:]); err != nil {
			return "", err
		}
		p := filepath.Join(dir, prefix+hex.EncodeToString(b[:]))
		err := os.Mkdir(p, 0o777)
		if err == nil {
			return p, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return "", err
		}
	}
	return "", fmt.Errorf("create a temporary directory in %s: too many collisions", dir)
}

// firstNonFinite finds a NaN or infinite value in w.
func firstNonFinite(w *params.Store) (name string, index int, v float32, found bool) {
	for i := range w.Len() {
		t := w.At(i)
		for j, x := range t.Data {
			if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
				return t.Name, j, x, true
			}
		}
	}
	return "", 0, 0, false
}

// writeFile creates path, writes it with fill through a CRC-32C and byte
// counter, fsyncs and closes it.
func writeFile(path string, fill func(io.Writer) error) (FileInfo, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o666)
	if err != nil {
		return FileInfo{}, fmt.Errorf("checkpoint: %w", err)
	}
	h := crc32.New(castagnoli)
	cw := &countWriter{w: io.MultiWriter(f, h)}
	bw := bufio.NewWriterSize(cw, 1<<20)
	err = fill(bw)
	if err == nil {
		err = bw.Flush()
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return FileInfo{}, fmt.Errorf("checkpoint: write %s: %w", path, err)
	}
	return FileInfo{Size: cw.n, CRC32C: h.Sum32()}, nil
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// writeLatest atomically replaces DIR/latest with name; its error names
// the file.
func writeLatest(dir, name string) error {
	return atomicfile.WriteFile(filepath.Join(dir, LatestFile), []byte(name+"\n"), 0o666)
}

// RemoveStale deletes temporary files and directories left in dir by an
// interrupted Save: its checkpoint directories (tmpPrefix) and the
// latest pointer's temporary file (atomicfile.Write's .latest.tmp-*),
// once a checkpoint moved aside has been put back (restoreMovedAside).
// It is the writer's (Save and Resume call it; a run directory's lock
// holder may, before it resumes or sets the run aside). Errors are
// ignored: they only leave litter behind.
func RemoveStale(dir string) {
	restoreMovedAside(dir)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if isTemporary(e.Name()) {
			os.RemoveAll(filepath.Join(dir, e.Name()))
		}
	}
}

// isTemporary says whether name is one of Save's temporaries: a
// checkpoint directory's (tmpPrefix) or the latest pointer's
// (atomicfile.Write's .latest.tmp-*).
func isTemporary(name string) bool {
	return strings.HasPrefix(name, tmpPrefix) || strings.HasPrefix(name, "."+LatestFile+".tmp-")
}

// movedAsidePrefix begins the name Save gives a checkpoint it replaces
// while the new one takes its name.
const movedAsidePrefix = tmpPrefix + "old-"

// restoreMovedAside puts back under its name a checkpoint that a Save of
// its step moved aside, where a crash between the two renames left no
// checkpoint of that name: the one moved aside is complete. Errors are
// ignored: the checkpoint then stays aside, as before.
func restoreMovedAside(dir string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), movedAsidePrefix)
		if !ok || !e.IsDir() {
			continue
		}
		i := strings.LastIndexByte(rest, '-') // before Save's random suffix
		if i < 0 {
			continue
		}
		name := rest[:i]
		if _, ok := parseDirName(name); !ok {
			continue
		}
		final, aside := filepath.Join(dir, name), filepath.Join(dir, e.Name())
		if _, err := os.Stat(filepath.Join(aside, StateFile)); err != nil {
			continue // not a whole checkpoint: litter
		}
		if _, err := os.Lstat(final); errors.Is(err, fs.ErrNotExist) {
			if os.Rename(aside, final) == nil {
				_ = atomicfile.SyncDir(dir)
			}
		}
	}
}

// Entry is one checkpoint directory found by List.
type Entry struct {
	Step int64
	Path string
}

// List returns the checkpoint directories under dir, oldest step first. It
// does not check their contents.
func List(dir string) ([]Entry, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: list %s: %w", dir, err)
	}
	var out []Entry
	for _, e := range entries {
		if step, ok := parseDirName(e.Name()); ok && e.IsDir() {
			out = append(out, Entry{Step: step, Path: filepath.Join(dir, e.Name())})
		}
	}
	slices.SortFunc(out, func(a, b Entry) int {
		switch {
		case a.Step < b.Step:
			return -1
		case a.Step > b.Step:
			return 1
		}
		return strings.Compare(a.Path, b.Path)
	})
	return out, nil
}

// prune deletes all but the newest o.Keep checkpoints of steps up to
// saved, never the one of step saved (DirName(saved)), and those of
// later steps (ones a resume skipped as damaged), writing a note of each
// of those and a warning of each deletion that fails to o.Warn.
func prune(dir string, saved int64, o Options) {
	warn, remove := o.warn(), o.remove
	if remove == nil {
		remove = os.RemoveAll
	}
	list, err := List(dir)
	if err != nil {
		fmt.Fprintf(warn, "spiral: warning: --keep %d: old checkpoints not removed: %v\n", o.Keep, err)
		return
	}
	var older []Entry
	for _, e := range list {
		if e.Step > saved {
			if err := remove(e.Path); err != nil {
				fmt.Fprintf(warn, "spiral: warning: --keep %d: could not remove the damaged checkpoint %s: %v\n", o.Keep, e.Path, err)
				continue
			}
			fmt.Fprintf(warn, "spiral: note: --keep %d: removed %s, newer than step %d just saved: a checkpoint the run resumed past (damaged)\n", o.Keep, e.Path, saved)
		} else if filepath.Base(e.Path) != DirName(saved) {
			older = append(older, e)
		}
	}
	for i := 0; i < len(older)-(o.Keep-1); i++ {
		if err := remove(older[i].Path); err != nil {
			fmt.Fprintf(warn, "spiral: warning: --keep %d: could not remove the old checkpoint %s: %v\n", o.Keep, older[i].Path, err)
		}
	}
}

// ReadState reads and validates path/state.json without touching any
// store. A format version above FormatVersion (a newer spiral's
// checkpoint) is an error marked by Final, so that Newest stops at it.
func ReadState(path string) (State, error) {
	file := filepath.Join(path, StateFile)
	b, err := os.ReadFile(file)
	if err != nil {
		return State{}, fmt.Errorf("checkpoint: %w", err)
	}
	var st State
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&st); err != nil {
		return State{}, fmt.Errorf("checkpoint: %s: corrupted: %w", file, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return State{}, fmt.Errorf("checkpoint: %s: corrupted: extra data after the JSON object", file)
	}
	// A newer spiral's checkpoint is no damage: passed over, it would
	// be resumed past (its steps dropped) and then pruned as damaged.
	if st.FormatVersion > FormatVersion {
		return State{}, Final(fmt.Errorf("checkpoint: %s: format version %d, this build reads 1..%d: a newer spiral's checkpoint, which this one neither reads nor passes over for an older one: read it with that version", file, st.FormatVersion, FormatVersion))
	}
	if st.FormatVersion < 1 {
		return State{}, fmt.Errorf("checkpoint: %s: format version %d, this build reads 1..%d", file, st.FormatVersion, FormatVersion)
	}
	if st.Step < 0 || st.OptimizerSteps < 0 {
		return State{}, fmt.Errorf("checkpoint: %s: negative step", file)
	}
	if _, ok := st.Files[ModelFile]; !ok {
		return State{}, fmt.Errorf("checkpoint: %s: no entry for %s", file, ModelFile)
	}
	return st, nil
}

// Load restores the checkpoint at path into w and, when opt is not nil,
// into opt's moments and step count, all in place, and returns its state.
// Both safetensors headers are checked against w before any data is read;
// every mismatch is listed in one *params.MismatchError whose File names
// the file (once the file's CRC-32C shows that the header naming other
// tensors is intact, not damaged). Size and CRC-32C are checked against state.json; a mismatch is
// an error naming the file; one found once the data is read is a
// *PartlyLoadedError (and leaves w partly loaded, see the package doc). Loading a weights-only checkpoint with a non-nil opt is an error.
// The read of the data stops when ctx is done, within 64 KiB, with an
// error wrapping ctx.Err() (and w partly loaded).
func Load(ctx context.Context, path string, w *params.Store, opt *optim.AdamW) (State, error) {
	st, err := ReadState(path)
	if err != nil {
		return State{}, err
	}
	type job struct {
		name  string
		parts []params.Part
		f     *os.File
		r     *crcReader
		h     *params.Header
	}
	jobs := []*job{{name: ModelFile, parts: []params.Part{{Store: w}}}}
	if opt != nil {
		if _, ok := st.Files[OptimizerFile]; !ok {
			return State{}, fmt.Errorf("checkpoint: %s holds no optimiser state (weights only)", path)
		}
		jobs = append(jobs, &job{name: OptimizerFile, parts: momentParts(opt)})
	}
	defer func() {
		for _, j := range jobs {
			if j.f != nil {
				j.f.Close()
			}
		}
	}()
	// Pass 1: open, check sizes, parse and check headers.
	var mismatch []string
	for _, j := range jobs {
		file := filepath.Join(path, j.name)
		want := st.Files[j.name]
		f, r, h, err := openChecked(path, j.name, st)
		if err != nil {
			return State{}, err
		}
		j.f, j.r, j.h = f, r, h
		if err := params.CheckParts(h, j.parts...); err != nil {
			var me *params.MismatchError
			if !errors.As(err, &me) {
				return State{}, fmt.Errorf("checkpoint: %s: %w", file, err)
			}
			// A header that parses but names other tensors may be a
			// damaged one (a flipped bit in a name): the mismatch,
			// which stops Newest's search, counts only when the file
			// is intact. Read on an error path only.
			if _, err := io.Copy(io.Discard, j.r); err != nil {
				return State{}, fmt.Errorf("checkpoint: %s: %w", file, err)
			}
			if got, want := j.r.h.Sum32(), want.CRC32C; got != want {
				return State{}, fmt.Errorf("checkpoint: %s: CRC-32C %08x, state.json records %08x (corrupted)", file, got, want)
			}
			for _, p := range me.Problems {
				mismatch = append(mismatch, j.name+": "+p)
			}
		}
	}
	if len(mismatch) > 0 {
		return State{}, &params.MismatchError{File: path, Problems: mismatch}
	}
	// Pass 2: read the data in place and verify the checksums.
	for _, j := range jobs {
		file := filepath.Join(path, j.name)
		if err := params.ReadParts(ctxReader{ctx, j.r}, j.h, j.parts...); err != nil {
			return State{}, fmt.Errorf("checkpoint: %s: %w", file, err)
		}
		if got, want := j.r.h.Sum32(), st.Files[j.name].CRC32C; got != want {
			return State{}, &PartlyLoadedError{File: file, Got: got, Want: want}
		}
	}
	if opt != nil {
		if err := opt.SetSteps(st.OptimizerSteps); err != nil {
			return State{}, fmt.Errorf("checkpoint: %s: %w", path, err)
		}
	}
	return st, nil
}

// PartlyLoadedError is Load's error for a file whose CRC-32C fails once
// its data has been read into the Store (and the optimiser's moments),
// which then hold partly loaded values.
type PartlyLoadedError struct {
	File      string // the file at fault
	Got, Want uint32 // its CRC-32C, and the one state.json records
}

func (e *PartlyLoadedError) Error() string {
	return fmt.Sprintf("checkpoint: %s: CRC-32C %08x, state.json records %08x (corrupted; the store now holds partly loaded values)", e.File, e.Got, e.Want)
}

// Discarded is e for a caller that discards the Store it loaded into:
// the same error without the note on partly loaded values.
func (e *PartlyLoadedError) Discarded() error {
	return fmt.Errorf("checkpoint: %s: CRC-32C %08x, state.json records %08x (corrupted)", e.File, e.Got, e.Want)
}

// openChecked opens the file name of the checkpoint at path, whose
// state is st, checks its size and the counts its header records against
// st (checkCounts), and returns it with its header, read through r, a
// CRC-32C reader then at the start of its data. Its errors name the file
// at fault.
func openChecked(path, name string, st State) (f *os.File, r *crcReader, h *params.Header, err error) {
	file := filepath.Join(path, name)
	f, err = os.Open(file)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("checkpoint: %w", err)
	}
	defer func() {
		if err != nil {
			f.Close()
		}
	}()
	fi, err := f.Stat()
	if err != nil {
		return nil, nil, nil, fmt.Errorf("checkpoint: %w", err)
	}
	if fi.IsDir() {
		// Its size is the directory's, not a file's cut short.
		return nil, nil, nil, fmt.Errorf("checkpoint: %s is a directory, not the checkpoint's %s file (damaged)", file, name)
	}
	if want := st.Files[name].Size; fi.Size() != want {
		return nil, nil, nil, fmt.Errorf("checkpoint: %s: %d bytes, state.json records %d (truncated or corrupted)", file, fi.Size(), want)
	}
	r = &crcReader{r: bufio.NewReaderSize(f, 1<<20), h: crc32.New(castagnoli)}
	if h, err = params.ReadHeader(r, fi.Size()); err != nil {
		return nil, nil, nil, fmt.Errorf("checkpoint: %s: %w", file, err)
	}
	if err := checkCounts(name, h.Metadata, st); err != nil {
		return nil, nil, nil, fmt.Errorf("checkpoint: %s: %w", filepath.Join(path, StateFile), err)
	}
	return f, r, h, nil
}

// ReadCheckedState is ReadState, the state then checked against what
// model.safetensors records of it (its size, and in its header the step
// and the checksum of the data cursor and configuration), reading no
// tensor data: for a reader that goes by a checkpoint's settings before
// it loads it (which model, which LoRA configuration), so that a damaged
// state.json is damage, skipped, not another model or configuration.
func ReadCheckedState(path string) (State, error) {
	st, err := ReadState(path)
	if err != nil {
		return State{}, err
	}
	f, _, _, err := openChecked(path, ModelFile, st)
	if err != nil {
		return State{}, err
	}
	f.Close()
	return st, nil
}

// The safetensors metadata keys under which Save writes the step counts
// (ModelFile's step, OptimizerFile's optimizer steps) and the checksum of
// state.json's data cursor and configuration (ModelFile's), checked on
// Load against state.json's (checkCounts).
const (
	metaStep           = "spiral_step"
	metaOptimizerSteps = "spiral_optimizer_steps"
	metaState          = "spiral_state_crc32c"
)

// stateChecksum is the CRC-32C, in hexadecimal, of st's data cursor and
// configuration as state.json holds them (json.Marshal's compact form,
// which Unmarshal gives back byte for byte): what of state.json no file
// size, checksum or copy of a count covers.
func stateChecksum(st State) (string, error) {
	h := crc32.New(castagnoli)
	for _, raw := range []json.RawMessage{st.DataCursor, st.Config} {
		b, err := json.Marshal(raw)
		if err != nil {
			return "", fmt.Errorf("checkpoint: encode state: %w", err)
		}
		h.Write(b)
		h.Write([]byte{'\n'})
	}
	return fmt.Sprintf("%08x", h.Sum32()), nil
}

// checkCounts compares the step counts and, for ModelFile, the checksum
// of the data cursor and configuration that st records with those Save
// also wrote in the metadata of file (under the file's checksum;
// state.json has none of its own): a difference is damage to one of
// them. Checkpoints of older versions, without a key, pass.
func checkCounts(file string, meta map[string]string, st State) error {
	what, key, want := "step", metaStep, st.Step
	if file == OptimizerFile {
		what, key, want = "optimizer_steps", metaOptimizerSteps, st.OptimizerSteps
	}
	if got, ok := meta[key]; ok && got != strconv.FormatInt(want, 10) {
		return fmt.Errorf("%s %d, but %s records %s (corrupted)", what, want, file, got)
	}
	if file != ModelFile {
		return nil
	}
	got, ok := meta[metaState]
	if !ok {
		return nil
	}
	sum, err := stateChecksum(st)
	if err != nil {
		return err
	}
	if sum != got {
		return fmt.Errorf("data cursor and configuration: CRC-32C %s, but %s records %s (corrupted)", sum, file, got)
	}
	return nil
}

// ctxReader is r until ctx is done, then fails with ctx.Err(): a read
// of a checkpoint's gigabytes stops at Ctrl-C.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

type crcReader struct {
	r io.Reader
	h hash.Hash32
}

func (c *crcReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.h.Write(p[:n])
	return n, err
}

// Resume loads the newest checkpoint under dir that loads cleanly into w
// and, when not nil, opt (Newest with Load). It returns the path loaded,
// its state, and one error per newer checkpoint that was skipped (for the
// caller to log). When none loads, err joins every failure (wrapping
// ErrNoCheckpoint when there was none at all). Layout mismatches (a
// different model) are not skipped over: they stop the search, since
// older checkpoints of the same run would mismatch too. Nor is a read
// that ctx stopped (Load), or that the system failed (Unreadable). Resume is the writer's, as Save is: what a
// Save killed within it left is removed first (RemoveStale), a
// temporary checkpoint as large as a checkpoint among it, rather than
// at the resumed run's first Save.
func Resume(ctx context.Context, dir string, w *params.Store, opt *optim.AdamW) (path string, st State, skipped []error, err error) {
	RemoveStale(dir)
	path, skipped, err = Newest(dir, func(p string) error {
		var err error
		st, err = Load(ctx, p, w, opt)
		return err
	})
	if err != nil {
		return "", State{}, skipped, err
	}
	return path, st, skipped, nil
}

// Newest tries the checkpoint directories under dir with load, from the
// highest step down, whatever the latest pointer says (a crash between a
// checkpoint's rename and the pointer's update leaves the pointer one
// checkpoint behind), and returns the path of the first one load takes
// and one error per newer checkpoint that it skipped (for the caller to
// report; each names the file at fault when load's errors do, as Load's
// and ReadState's do). An intact checkpoint whose state.json records
// another step than its name (renamed, or copied in from another run),
// which would be taken for the step its name says, stops the search,
// marked by Final, naming both. load reads one checkpoint directory, typically
// with Load. Only an error that may be the checkpoint's damage is
// skipped: one that the system gave reading it (Unreadable: EIO, EMFILE,
// EACCES, ...) stops the search, with the checkpoint's path added. An
// error that says the checkpoint is intact but does not fit
// stops the search, since older checkpoints of the same run would not fit
// either: a *params.MismatchError (Load's layout check) or an error marked
// by Final (ReadState's of a newer spiral's checkpoint too), or a
// cancellation (an error wrapping context.Canceled or
// context.DeadlineExceeded: Ctrl-C during a read, which would fail the
// older ones too, and is no damage); Newest then returns that error with
// the checkpoints skipped before it. A run training into dir meanwhile
// (an evaluation or export of its checkpoints/ while it trains) saves
// while load reads: a failure
// on a checkpoint that was removed (retention) or replaced while load
// read it, or after which a newer checkpoint appeared, is not damage,
// and the search starts again from the newest (savedDuring). When no
// checkpoint loads, err joins every failure (and skipped is nil); when
// there is none at all, err wraps ErrNoCheckpoint.
func Newest(dir string, load func(path string) error) (path string, skipped []error, err error) {
search:
	for {
		list, err := List(dir)
		if errors.Is(err, fs.ErrNotExist) || err == nil && len(list) == 0 {
			return "", nil, fmt.Errorf("%w in %s", ErrNoCheckpoint, dir)
		}
		if err != nil {
			return "", nil, err
		}
		skipped = nil
		for i := len(list) - 1; i >= 0; i-- {
			before, berr := os.Stat(list[i].Path)
			// The search goes by the steps the names say: an intact
			// checkpoint (its state as its weights record it: a state
			// garbled is damage, for load to find) of another step would
			// be resumed in its place, and a Save would then remove the
			// checkpoints named past it.
			if st, err := ReadCheckedState(list[i].Path); err == nil && st.Step != list[i].Step {
				fix := "move it out of " + dir
				if _, err := os.Lstat(filepath.Join(dir, DirName(st.Step))); errors.Is(err, fs.ErrNotExist) {
					fix = fmt.Sprintf("rename it %s, or %s", DirName(st.Step), fix)
				}
				return "", skipped, Final(fmt.Errorf("checkpoint: %s: its state.json records step %d, not the step %d its name says (renamed, or copied in from another run?): %s",
					list[i].Path, st.Step, list[i].Step, fix))
			}
			err := load(list[i].Path)
			if err == nil {
				return list[i].Path, skipped, nil
			}
			var me *params.MismatchError
			var fe finalError
			if errors.As(err, &me) || errors.As(err, &fe) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
				return "", skipped, err
			}
			if savedDuring(dir, list[i].Path, before, berr, list[len(list)-1].Step) {
				continue search
			}
			if Unreadable(err) {
				return "", skipped, fmt.Errorf("%w (a failure to read %s, not damage: it is not passed over for an older checkpoint; rerun once it reads)", err, list[i].Path)
			}
			skipped = append(skipped, err)
		}
		return "", nil, fmt.Errorf("checkpoint: no checkpoint in %s loads: %w", dir, errors.Join(skipped...))
	}
}

// Unreadable reports whether err, a load's, is the system's failure to
// read a checkpoint rather than evidence against the checkpoint: an
// error number (an I/O error, a permission refused, no file descriptor
// or memory left) other than a missing file's or a directory's in a
// file's place or a file's in a directory's. Newest stops at it: passed
// over, the checkpoint's steps would be trained again from an older one,
// and a Save with Options.Keep would remove it as damaged.
func Unreadable(err error) bool {
	var errno syscall.Errno
	return errors.As(err, &errno) && !errors.Is(err, fs.ErrNotExist) && errno != syscall.EISDIR && errno != syscall.ENOTDIR
}

// savedDuring reports whether a Save into dir may have changed the
// checkpoint at path while it was read: it is no longer the directory
// that os.Stat gave as before, berr before the read (removed by
// retention, or replaced by a Save of its step), or dir now holds a
// checkpoint newer than newest, the highest step listed before (whose
// Save prunes the older ones after it).
func savedDuring(dir, path string, before os.FileInfo, berr error, newest int64) bool {
	after, err := os.Stat(path)
	if errors.Is(berr, fs.ErrNotExist) || errors.Is(err, fs.ErrNotExist) ||
		berr == nil && err == nil && !os.SameFile(before, after) {
		return true
	}
	list, err := List(dir)
	return err == nil && len(list) > 0 && list[len(list)-1].Step > newest
}

// Final marks err, returned by a load function given to Newest or Pick,
// as one that older checkpoints would share, so that the search stops at
// it: the checkpoint belongs to another model, or what it is loaded into
// fails whatever the checkpoint (the model does not open); or as one of
// a checkpoint that is no damage and must not be passed over (ReadState's
// newer format version). The error reads as err and wraps it. Final(nil)
// is nil.
func Final(err error) error {
	if err == nil {
		return nil
	}
	return finalError{err}
}

// IsFinal reports whether err is, or wraps, an error marked by Final: one
// that stopped Newest or Pick at an intact checkpoint.
func IsFinal(err error) bool {
	var fe finalError
	return errors.As(err, &fe)
}

// finalError is an error marked by Final.
type finalError struct{ err error }

func (e finalError) Error() string { return e.err.Error() }
func (e finalError) Unwrap() error { return e.err }

// Pick loads the checkpoint a user named with load: path itself when it
// is a checkpoint directory (IsCheckpointDir), else the newest checkpoint
// under path that load takes (a run's checkpoints/ directory; see
// Newest), falling back to older ones as Resume does; it returns the path
// loaded and one error per newer checkpoint skipped. A checkpoint
// directory named itself is not skipped over: its error is returned.
func Pick(path string, load func(path string) error) (string, []error, error) {
	if IsCheckpointDir(path) {
		if err := load(path); err != nil {
			return "", nil, err
		}
		return path, nil, nil
	}
	if _, err := os.Stat(path); err != nil {
		return "", nil, fmt.Errorf("checkpoint: %w", err)
	}
	p, skipped, err := Newest(path, load)
	if errors.Is(err, ErrNoCheckpoint) {
		err = fmt.Errorf("%w (want a checkpoint directory or a run's checkpoints/ directory)", err)
	}
	return p, skipped, err
}

// IsCheckpointDir reports whether path names one checkpoint rather than
// a directory of them: it holds state.json, or its name is a checkpoint
// directory's (ckpt-NNNNNN; one whose state.json is missing is still
// one, and damaged).
func IsCheckpointDir(path string) bool {
	if _, err := os.Stat(filepath.Join(path, StateFile)); err == nil {
		return true
	}
	_, ok := parseDirName(filepath.Base(path))
	return ok
}

// IsSaved reports whether path is a checkpoint directory of spiral's
// (one Save wrote, or one of its name that a run's pruning removes): it
// holds state.json, and its name is a checkpoint directory's
// (ckpt-NNNNNN) or its state.json reads as a checkpoint's (ReadState).
// A state.json of another tool's, in a directory of another name, is
// not one.
func IsSaved(path string) bool {
	if st, err := os.Stat(filepath.Join(path, StateFile)); err != nil || st.IsDir() {
		return false
	}
	if _, ok := parseDirName(filepath.Base(path)); ok {
		return true
	}
	_, err := ReadState(path)
	return err == nil
}

// HoldsCheckpoints reports whether dir is a directory that Save writes
// checkpoints in (a run's checkpoints/): its latest pointer names a
// checkpoint directory's name, or a checkpoint directory in it is one
// (IsSaved). A run's --keep removes the checkpoints there, and its
// --fresh moves the directory aside whole.
func HoldsCheckpoints(dir string) bool {
	if b, err := os.ReadFile(filepath.Join(dir, LatestFile)); err == nil {
		if _, ok := parseDirName(strings.TrimSpace(string(b))); ok {
			return true
		}
	}
	list, err := List(dir)
	if err != nil {
		return false
	}
	for _, e := range list {
		if IsSaved(e.Path) {
			return true
		}
	}
	return false
}

// Foreign returns the names of the entries of dir that Save does not
// write there (a checkpoint directory's name, the latest pointer, their
// temporaries): another writer's files, which a removal of the run's
// checkpoints directory would take with it. A dir that is not there
// holds none.
func Foreign(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	var names []string
	for _, e := range entries {
		name := e.Name()
		if _, ok := parseDirName(name); ok && e.IsDir() || name == LatestFile || isTemporary(name) {
			continue
		}
		names = append(names, name)
	}
	return names, nil
}

// NewStoreFor allocates a store shaped like the weights of the checkpoint
// at path (names, shapes and order from its model.safetensors header), for
// loading a checkpoint without the model it was trained from.
func NewStoreFor(path string) (*params.Store, error) {
	h, err := readModelHeader(path)
	if err != nil {
		return nil, err
	}
	specs := make([]params.Spec, len(h.Tensors))
	for i, t := range h.Tensors {
		specs[i] = params.Spec{Name: t.Name, Shape: t.Shape}
	}
	return params.NewStore(specs)
}

// TensorNames returns the names of the weights the checkpoint at path
// holds (its model.safetensors header's), in file order.
func TensorNames(path string) ([]string, error) {
	h, err := readModelHeader(path)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(h.Tensors))
	for i, t := range h.Tensors {
		names[i] = t.Name
	}
	return names, nil
}

// readModelHeader reads the header of the checkpoint at path's
// model.safetensors.
func readModelHeader(path string) (*params.Header, error) {
	f, err := os.Open(filepath.Join(path, ModelFile))
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	h, err := params.ReadHeader(f, fi.Size())
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %s: %w", f.Name(), err)
	}
	return h, nil
}
