package main

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/spiral-rl/spiral/model"
	"github.com/spiral-rl/spiral/model/atomicfile"
	"github.com/spiral-rl/spiral/model/checkpoint"
	"github.com/spiral-rl/spiral/model/onnx"
	"github.com/spiral-rl/spiral/model/smallfile"
	"github.com/spiral-rl/spiral/rl"
)

// copyFile copies src to dst (atomically).
func copyFile(src, dst string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	if err := atomicfile.WriteFile(dst, b, 0o666); err != nil {
		return fmt.Errorf("copy %s: %w", src, err)
	}
	return nil
}

// modelDirFiles are the files a model directory written by init-model or
// sft holds, and those of another model's that such a directory would
// hold beside them (replacedModelFiles), any of which refuseOverwrite
// keeps.
var modelDirFiles = append([]string{"model.onnx", "model.onnx_data", "config.json", "tokenizer.json"}, replacedModelFiles...)

// replacedModelFiles are the files of a model that init-model and sft do
// not write, which --overwrite removes with the model it replaces: a
// Hugging Face export's weights, which transformers and serving engines
// would load with the new model's config.json, and a peft adapter, which
// transformers would load on its base instead of the new model.
var replacedModelFiles = []string{model.HFWeightsFile, model.HFWeightsFile + ".index.json", model.PEFTWeightsFile, model.PEFTConfigFile}

// hfWeightsFiles are the files that hold a Hugging Face model's weights,
// whole or sharded (its index): either marks a directory as one.
var hfWeightsFiles = []string{model.HFWeightsFile, model.HFWeightsFile + ".index.json"}

// refuseOverwrite refuses to write a model into dir when one is there
// already, or a model's files (a directory of the tokenizer and
// config.json that a serving engine's evaluation reads), unless
// overwrite: nothing is lost to a command given the wrong --out. The
// refusal is a usage error (exit 2), as export's of another model is.
func refuseOverwrite(dir string, overwrite bool) error {
	if overwrite {
		return nil
	}
	for _, name := range modelDirFiles {
		path := filepath.Join(dir, name)
		if _, err := os.Stat(path); err == nil {
			what := "a model's " + name
			if name == "model.onnx" {
				what = "a model"
			}
			return usageError{fmt.Errorf("--out %s already holds %s (%s): give --overwrite to replace it, or another --out", dir, what, path)}
		}
	}
	return nil
}

// statFlag returns what os.Stat says of the path a flag gives; a path
// that is not there, cannot be looked at, or cannot be opened
// (statOpenable) is a bad value of the flag, a usage error naming the
// flag and path.
func statFlag(flag, path string) (fs.FileInfo, error) {
	st, err := statOpenable(path)
	if err != nil {
		return nil, usageError{fmt.Errorf("%s %s: %w", flag, path, err)}
	}
	return st, nil
}

// statOpenable returns what os.Stat says of path, and the error of
// opening it where it is a regular file (for reading) or a directory
// (entering it, which reading the files in it takes: permission denied):
// a path the user names that cannot be opened is the user's mistake, as
// one that is not there is. Other files (a FIFO, which an open would
// block on or consume) are left to their reader. The error is the
// system's alone (a *fs.PathError's Err): the caller names the path.
func statOpenable(path string) (fs.FileInfo, error) {
	st, err := os.Stat(path)
	switch {
	case err != nil:
	case st.Mode().IsRegular():
		var f *os.File
		if f, err = os.Open(path); err == nil {
			err = f.Close()
		}
	case st.IsDir():
		// Its "." resolves only through it, as its files' names do (a
		// directory one may enter but not list, 0711, serves a model).
		_, err = os.Stat(path + string(filepath.Separator) + ".")
	}
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err // the path is said once, by the caller
		}
		return nil, err
	}
	return st, nil
}

// inputFile refuses, as a usage error naming the flag and path, a file
// flag's value that is not there or is a directory rather than the file
// it wants (what, "a template file"): a bad value of the flag.
func inputFile(flag, path, what string) error {
	st, err := statFlag(flag, path)
	if err != nil {
		return err
	}
	if st.IsDir() {
		return usageError{fmt.Errorf("%s %s is a directory: want %s", flag, path, what)}
	}
	return nil
}

// makeParentDir creates the directory that will hold the file path (and
// its parents), as the commands that write a directory create it.
func makeParentDir(flag, path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o777); err != nil {
		return outError(flag, path, err)
	}
	return nil
}

// outError wraps err, from making or reading the directory of a flag's
// path or a stage in it (os.MkdirAll), with the flag and path; where it
// failed on a symbolic link that leads nowhere, it says so
// (linkLeadsNowhere). A file where the path wants a directory (ENOTDIR:
// --out naming a file, or a path under one) is a bad value of the flag,
// a usage error, as a missing input path is.
func outError(flag, path string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) && pe.Op == "mkdir" && errors.Is(pe.Err, fs.ErrExist) {
		if lerr := linkLeadsNowhere(flag, path, pe.Path); lerr != nil {
			return lerr
		}
	}
	err = fmt.Errorf("%s %s: %w", flag, path, err)
	if errors.Is(err, syscall.ENOTDIR) {
		return usageError{err}
	}
	return err
}

// refuseUnderFile refuses, before any work, a directory flag's path dir
// that is a file or lies under one, which making it would find (the
// usage error outError gives for mkdir's ENOTDIR, naming that file): the
// commands that check it this early (train, sft) make the directory only
// after ONNX Runtime is loaded and the model read.
func refuseUnderFile(flag, dir string) error {
	for d := dir; ; d = filepath.Dir(d) {
		if st, err := os.Stat(d); err == nil {
			if st.IsDir() {
				return nil
			}
			return outError(flag, dir, &fs.PathError{Op: "mkdir", Path: d, Err: syscall.ENOTDIR})
		}
		if d == filepath.Dir(d) {
			return nil
		}
	}
}

// refuseUnwritable refuses, before any work, a directory flag's path dir
// in which no file can be made (a usage error naming the flag, dir and
// the directory looked at, as refuseUnderFile's is): a file is made and
// removed in dir, or where dir is not there yet in the nearest directory
// above it, where making it would write. Only writing finds both a
// directory whose permissions refuse the user and a read-only file
// system. Train checks --sync-dir so, which it first writes in at the
// first weight sync, after the policy's artifacts are built and the
// first rollouts sampled. A disk that is full (ENOSPC), or a quota used
// up (EDQUOT), is an error that says so, not a usage error: the command
// is not wrong, the disk is.
func refuseUnwritable(flag, dir string) error {
	return refuseUnwritableBy(flag, dir, os.CreateTemp)
}

// refuseUnwritableBy is refuseUnwritable making its file with create
// (os.CreateTemp; a test's gives the errors of a full disk).
func refuseUnwritableBy(flag, dir string, create func(dir, pattern string) (*os.File, error)) error {
	d := dir
	for {
		if _, err := os.Stat(d); !errors.Is(err, fs.ErrNotExist) || d == filepath.Dir(d) {
			break
		}
		d = filepath.Dir(d)
	}
	f, err := create(d, ".spiral-write-check-*")
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err // the temporary name says nothing to the user
		}
		err = fmt.Errorf("%s %s: cannot write in %s: %w", flag, dir, d, err)
		switch {
		case errors.Is(err, syscall.ENOSPC):
			return fmt.Errorf("%w (the disk is full: free room on it, or give a %s on another)", err, flag)
		case errors.Is(err, syscall.EDQUOT):
			return fmt.Errorf("%w (the disk quota is used up: free room in it, or give a %s on another disk)", err, flag)
		}
		return usageError{err}
	}
	if err := errors.Join(f.Close(), os.Remove(f.Name())); err != nil {
		return usageError{fmt.Errorf("%s %s: %w", flag, dir, err)}
	}
	return nil
}

// housekeptBy finds what of a training run's own housekeeping would take
// away an output directory dir with what is written there: ckpt, the
// spiral checkpoint directory that dir is or lies in
// (checkpoint.IsSaved), which the run's --keep removes whole; else
// ckpts, the run's checkpoints/ directory that dir is or lies in
// (checkpoint.HoldsCheckpoints), which the run's --fresh moves aside
// into previous-* (and whose ckpt-NNNNNN entries --keep removes). Both
// are "" where neither is; the path of dir through symbolic links is
// looked at as well as dir's own.
func housekeptBy(dir string) (ckpt, ckpts string) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", ""
	}
	walk := func(path string) (string, string) {
		for d := path; ; d = filepath.Dir(d) {
			if checkpoint.IsSaved(d) {
				return d, ""
			}
			if checkpoint.HoldsCheckpoints(d) {
				return "", d
			}
			if d == filepath.Dir(d) {
				return "", ""
			}
		}
	}
	if ckpt, ckpts = walk(abs); ckpt != "" || ckpts != "" {
		return ckpt, ckpts
	}
	// The nearest of dir and its parents that is there, through links.
	for d := abs; ; d = filepath.Dir(d) {
		if real, err := filepath.EvalSymlinks(d); err == nil {
			if rest, _ := filepath.Rel(d, abs); real != d {
				return walk(filepath.Join(real, rest))
			}
			return "", ""
		}
		if d == filepath.Dir(d) {
			return "", ""
		}
	}
}

// refuseHousekept refuses, as a usage error, an --out (out, as given;
// dir the directory the command writes in) that a training run's own
// housekeeping would take away (housekeptBy): a checkpoint directory or
// one within it, which the run's --keep removes, or its checkpoints/ or
// within it, which --fresh moves aside, as it does a run's tensorboard/
// (runTensorBoardOf) and what is in it. what names what would go with it
// ("the export"), itself is the error where dir is a checkpoint's own
// directory (the command says what else writing there would do), and
// instead the --out suggested in the run's directory ("eval").
func refuseHousekept(out, dir, what, itself, instead string) error {
	ckpt, ckpts := housekeptBy(dir)
	abs, _ := filepath.Abs(dir)
	switch {
	case ckpt != "" && ckpt == abs:
		return usageError{errors.New(itself)}
	case ckpt != "":
		return usageError{fmt.Errorf("--out %s lies in checkpoint directory %s: its run's --keep removes that directory, %s with it; give an --out outside the run's checkpoints", out, ckpt, what)}
	case ckpts != "":
		return usageError{fmt.Errorf("--out %s %s, the directory of a training run's checkpoints: the run's --fresh moves it aside into previous-*, %s with it, and its --keep removes what there is named as a checkpoint (ckpt-NNNNNN); give an --out outside it, such as --out %s",
			out, isOrIn(abs, ckpts), what, filepath.Join(filepath.Dir(ckpts), instead))}
	}
	if tb := runTensorBoardOf(dir); tb != "" {
		return usageError{fmt.Errorf("--out %s %s, a training run's TensorBoard events (--tensorboard): the run's --fresh moves it aside into previous-*, %s with it; give an --out outside it, such as --out %s",
			out, isOrIn(abs, tb), what, filepath.Join(filepath.Dir(tb), instead))}
	}
	return nil
}

// isOrIn says where abs lies of dir, which is abs or one of its parents:
// "is DIR" or "is in DIR".
func isOrIn(abs, dir string) string {
	if dir == abs {
		return "is " + dir
	}
	return "is in " + dir
}

// runTensorBoardOf returns the training run's tensorboard/ (or sft's
// tensorboard-finished/) that dir is or lies in, which the run's
// --fresh moves aside into previous-*: a directory of that name beside
// a run's log (metrics.jsonl, sft.jsonl or sft.jsonl.partial) or its
// checkpoints; "" where there is none.
func runTensorBoardOf(dir string) string {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return ""
	}
	for d := abs; d != filepath.Dir(d); d = filepath.Dir(d) {
		if base := filepath.Base(d); base != rl.TensorBoardDir && base != rl.SFTFinishedTensorBoardDir {
			continue
		}
		run := filepath.Dir(d)
		for _, log := range []string{rl.MetricsFile, rl.SFTLogFile, rl.SFTLogFile + rl.PartialSuffix} {
			if _, err := os.Stat(filepath.Join(run, log)); err == nil {
				return d
			}
		}
		if checkpoint.HoldsCheckpoints(filepath.Join(run, rl.CheckpointsDir)) {
			return d
		}
	}
	return ""
}

// refuseHousekeptOut is refuseHousekept for the path an --out names,
// a directory or a file, which every command that writes an --out
// checks: what names what would go with it ("the plot"), instead the
// --out suggested in the run's directory.
func refuseHousekeptOut(out, what, instead string) error {
	return refuseHousekept(out, out, what,
		fmt.Sprintf("--out %s is a checkpoint directory (it holds %s): its run's --keep removes the directory, %s with it; give another --out", out, checkpoint.StateFile, what),
		instead)
}

// refuseBrokenLink refuses, before any work, a directory dir to be made
// for the flag's value path where the nearest of dir and its parents
// that exists is a symbolic link that leads nowhere (linkLeadsNowhere).
func refuseBrokenLink(flag, path, dir string) error {
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Lstat(d); err == nil {
			return linkLeadsNowhere(flag, path, d)
		}
		if d == filepath.Dir(d) {
			return nil
		}
	}
}

// linkLeadsNowhere returns the error for making a directory at link, in
// the flag's value path, where link is a symbolic link to a directory
// that does not exist (or one that cannot be followed, a loop): mkdir(2)
// answers "file exists" there (the link is), which names neither the
// link nor what is missing. It is a usage error, a bad value of the
// flag, as a file where a directory is wanted is (outError). Nil where
// link is no such link.
func linkLeadsNowhere(flag, path, link string) error {
	target, err := os.Readlink(link)
	if err != nil {
		return nil
	}
	_, err = os.Stat(link)
	if err == nil {
		return nil
	}
	if !filepath.IsAbs(target) {
		target = filepath.Join(filepath.Dir(link), target)
	}
	why := "which does not exist: make that directory"
	var pe *fs.PathError
	if errors.As(err, &pe) && !errors.Is(err, fs.ErrNotExist) {
		why = "which cannot be followed (" + pe.Err.Error() + "): correct the link"
	}
	return usageError{fmt.Errorf("%s %s: %s is a symbolic link to %s, %s, or give another %s", flag, path, link, target, why, flag)}
}

// sidecar is a file that spiral reads beside a model file, to be written
// beside an export of the model.
type sidecar struct {
	from, to string // where it is read ("" for spiral's default) and where it goes
	data     []byte
	// unnamed: a config.json written without its _name_or_path
	// (model.TrainedConfig); retyped: with its dtype float32
	// (model.Float32Config).
	unnamed, retyped bool
}

// String names where the sidecar's contents come from.
func (s sidecar) String() string {
	if s.from == "" {
		return "spiral's " + filepath.Base(s.to) + " (the model has none of its own)"
	}
	return s.from
}

// exportSidecars returns the files beside the model r that an export to
// the model file out needs beside it to be used as r is, as far as they
// exist (a --tokenizer given must): its tokenizer, as tokenizer.json,
// which eval and generate find there; config.json, which holds the
// context length, the head count and the tie of the LM head; and the
// rest of model.SideFiles (tokenizer_config.json with its chat template,
// generation_config.json...; the tokenizer's read beside the
// tokenizer.json used), which spiral does not read but an hf export of
// the export, or transformers given its tokenizer, does. A
// file of that name already beside out with the same contents is left
// alone; one with other contents is a usage error naming both (it may be
// another model's in that directory), so nothing is replaced silently
// and, asked before the export is written, nothing is written; the
// source's own files (out beside the model) are left as they are. A
// re-export over an earlier export's graph replaces that export's own
// tokenizer and generation files (ownSideFiles) of other contents
// (another --tokenizer's) without overwrite, as an hf re-export
// replaces its own.
// defaults holds files by name, written where the model has none of its
// own (the chat template and stop ids of a model spiral made, as the hf
// export writes them: tokenizer.HFConfigFiles). With overwrite, a file
// of other contents is replaced instead, and replaced reports one was.
// config.json's dtype
// says float32, the type of the weights spiral writes
// (model.Float32Config), and with trained (the export of a checkpoint's
// weights) it goes without its _name_or_path, which names r and not the
// trained weights (model.TrainedConfig), either replacing a copy of r's
// there.
func exportSidecars(r resolvedModel, out string, defaults map[string][]byte, trained, overwrite bool) (files []sidecar, replaced bool, err error) {
	dir := filepath.Dir(out)
	type side struct {
		name, from string
		required   bool
	}
	var sides []side
	for _, f := range model.ModelSideFiles(r.onnx, r.tokenizer) {
		sides = append(sides, side{f.Name, f.From, f.Name == "tokenizer.json" && r.tokenizerGiven})
	}
	own := ownSideFiles(r, out)
	for _, s := range sides {
		b, err := smallfile.ReadRegular(s.from, smallfile.Limit)
		if d, ok := defaults[s.name]; ok && errors.Is(err, fs.ErrNotExist) {
			b, err, s.from = d, nil, ""
		}
		if errors.Is(err, fs.ErrNotExist) && !s.required {
			continue
		}
		if err != nil {
			return nil, false, err
		}
		f := sidecar{from: s.from, to: filepath.Join(dir, s.name), data: b}
		if s.name == model.ConfigFile {
			if trained {
				if f.data, err = model.TrainedConfig(b); err != nil {
					return nil, false, fmt.Errorf("%s: %w", s.from, err)
				}
				f.unnamed = !bytes.Equal(f.data, b)
			}
			// The weights are float32, whatever dtype the source's
			// release was stored in (spiral reads no other).
			named := f.data
			if f.data, err = model.Float32Config(named); err != nil {
				return nil, false, fmt.Errorf("%s: %w", s.from, err)
			}
			f.retyped = !bytes.Equal(f.data, named)
		}
		have, err := os.ReadFile(f.to)
		switch {
		case err == nil && (bytes.Equal(have, f.data) || model.SameFile(f.to, s.from)):
			continue // there already, or the source's own (exported beside it)
		case err == nil && bytes.Equal(have, b):
			// A copy of the source's config.json, which the trained
			// weights' replaces.
		case err == nil && slices.Contains(own, s.name):
			// The earlier export's, of another --tokenizer.
		case err == nil && overwrite:
			replaced = true
		case err == nil:
			from := f.String()
			if r.embedded && s.from != "" && filepath.Dir(s.from) == r.dir {
				from = "the embedded model's " + s.name // its file in the cache, no path the user gave
			}
			return nil, false, usageError{fmt.Errorf("--out %s: %s already exists and differs from %s, which the export of %s needs beside it (another model's?): give --overwrite to replace it, or another --out", out, f.to, from, r.name())}
		case !errors.Is(err, fs.ErrNotExist):
			return nil, false, outError("--out", out, err)
		}
		files = append(files, f)
	}
	return files, replaced, nil
}

// ownSideFiles returns the tokenizer and generation files beside out, an
// onnx export's file, that the earlier export whose graph out is
// recorded writing there (model.ONNXSideFiles): that export's own, which
// a re-export replaces (another --tokenizer's) or removes (those it
// does not write) without --overwrite, as an hf re-export does the
// files its model.safetensors records. None where out is not alone in
// its directory (soleGraph), as another graph there would be read with
// them; config.json is never among them, as hf's differing one is
// another model's.
func ownSideFiles(r resolvedModel, out string) []string {
	if !soleGraph(r, out) {
		return nil
	}
	return slices.DeleteFunc(model.ONNXSideFiles(out), func(name string) bool { return !slices.Contains(model.SideFileNames(), name) })
}

// exportedSideNames returns the names of the files an onnx export of r
// has beside it once written, which it records (model.ExportTrained):
// those of model.ModelSideFiles that r has, or defaults holds
// (exportSidecars' files, and those of theirs already there).
func exportedSideNames(r resolvedModel, defaults map[string][]byte) []string {
	var names []string
	for _, f := range model.ModelSideFiles(r.onnx, r.tokenizer) {
		if _, err := os.Stat(f.From); err == nil || defaults[f.Name] != nil {
			names = append(names, f.Name)
		}
	}
	return names
}

// soleGraph reports whether out, an onnx export's file, is a file there
// already, alone in its directory: no other graph nor graph's data file
// beside it and its own, outside --model's (r's) own directory, whose
// files are the model's.
func soleGraph(r resolvedModel, out string) bool {
	dir, base := filepath.Dir(out), filepath.Base(out)
	if st, err := os.Stat(out); err != nil || !st.Mode().IsRegular() || model.SameFile(dir, filepath.Dir(r.onnx)) {
		return false
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, e := range entries {
		if name := e.Name(); isGraphFile(name) && name != base && name != base+onnx.DataFileSuffix {
			return false
		}
	}
	return true
}

// staleSideFiles returns the names of the tokenizer and generation files
// (model.SideFileNames) in dir, the directory an onnx or hf export
// writes in, that the export does not write, r having none of them
// (beside its tokenizer or itself) and defaults none either: another
// model's, such as a chat_template.jinja, which transformers and spiral
// read in tokenizer_config.json's place, or a merges.txt, which would be
// read as the export's. r's own directory has none that are not r's.
func staleSideFiles(r resolvedModel, dir string, defaults map[string][]byte) ([]string, error) {
	if model.SameFile(dir, filepath.Dir(r.onnx)) {
		return nil, nil
	}
	var stale []string
	for _, f := range model.SideFiles(r.onnx, r.tokenizer) {
		if _, ok := defaults[f.Name]; ok {
			continue
		}
		if _, err := os.Stat(f.From); err == nil {
			continue
		}
		_, err := os.Lstat(filepath.Join(dir, f.Name))
		switch {
		case err == nil:
			stale = append(stale, f.Name)
		case !errors.Is(err, fs.ErrNotExist):
			return nil, outError("--out", dir, err)
		}
	}
	return stale, nil
}

// refuseOwnSideFiles refuses, as a usage error, an hf export into dir,
// --model's own directory, that would replace a tokenizer or generation
// file of the model's there with other contents or remove it: with a
// --tokenizer from another directory the export copies that
// tokenizer's files (spiral's defaults where it has none) and removes
// those it lacks, as model.ExportHF replaces a directory's side files
// whole, though spiral reads the model's tokenizer there. The onnx
// export refuses the same (exportSidecars); config.json, which the
// export reads from there, is the model's either way.
func refuseOwnSideFiles(r resolvedModel, dir string, defaults map[string][]byte) error {
	for _, f := range model.SideFiles(r.onnx, r.tokenizer) {
		path := filepath.Join(dir, f.Name)
		have, err := os.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) || err == nil && model.SameFile(path, f.From) {
			continue
		}
		if err != nil {
			return outError("--out", dir, err)
		}
		b, err := smallfile.ReadRegular(f.From, smallfile.Limit)
		from := f.From
		if errors.Is(err, fs.ErrNotExist) {
			d, ok := defaults[f.Name]
			if !ok {
				return usageError{fmt.Errorf("--out %s: %s is a file of --model's own that the export would remove, the --tokenizer's directory %s having none: give --overwrite to remove it, or another --out",
					dir, path, filepath.Dir(f.From))}
			}
			b, err, from = d, nil, "spiral's "+f.Name
		}
		if err != nil {
			return err
		}
		if !bytes.Equal(have, b) {
			return usageError{fmt.Errorf("--out %s: %s is a file of --model's own that the export would replace with %s: give --overwrite to replace it, or another --out",
				dir, path, from)}
		}
	}
	return nil
}

// report is the export's line on the sidecar written.
func (s sidecar) report() string {
	if s.from == "" {
		return s.String()
	}
	r := "a copy of " + s.from
	if s.unnamed {
		r += " without its _name_or_path (it names that model, not these weights)"
	}
	if s.unnamed && s.retyped {
		r += " and"
	}
	if s.retyped {
		r += " with its dtype float32, the weights' type"
	}
	return r
}

// writeIn writes the sidecar under its name in dir (atomically): a
// stage's, whose commit moves it to its place.
func (s sidecar) writeIn(dir string) error {
	if err := atomicfile.WriteFile(filepath.Join(dir, filepath.Base(s.to)), s.data, 0o666); err != nil {
		return fmt.Errorf("write %s: %w", s.to, err)
	}
	return nil
}

// missingDirs returns dir and those of its parents that do not exist,
// innermost first: what os.MkdirAll(dir) would create. The parents are
// dir's own, not its cleaned path's, as MkdirAll walks them: a
// "new/../run" makes new too (a "." or ".." element names a directory
// made or there already, and is left out).
func missingDirs(dir string) []string {
	var out []string
	for d := dir; ; {
		d = strings.TrimRight(d, string(filepath.Separator))
		if d == "" {
			return out // the root
		}
		if _, err := os.Lstat(d); !errors.Is(err, fs.ErrNotExist) {
			return out
		}
		if base := filepath.Base(d); base != "." && base != ".." {
			out = append(out, d)
		}
		i := strings.LastIndexByte(d, filepath.Separator)
		if i < 0 {
			return out
		}
		d = d[:i]
	}
}

// runLock is the lock of a run directory (rl.LockRun) that knows the
// directories taking it made, so that a first run refused before it
// starts leaves nothing new.
type runLock struct {
	dir     string
	created []string // made for the lock: dir and missing parents, innermost first
	unlock  func() error
	// started is set once the run writes what a rerun resumes from;
	// release removes nothing after that.
	started bool
}

// lockRunDir locks dir, making it and its missing parents (rl.LockRun);
// its errors name dir as --out. A run or evaluation refused meanwhile
// removes the empty directory it made, which may be dir, within
// LockRun's making of it or between that and the opening of the lock
// file in it (removedMeanwhile): then LockRun makes it again (up to 3
// tries), the directories made for this run being the most found
// missing.
func lockRunDir(dir string) (*runLock, error) {
	var created []string
	for try := 1; ; try++ {
		if missing := missingDirs(dir); len(missing) > len(created) {
			created = missing
		}
		unlock, err := rl.LockRun(dir)
		if removedMeanwhile(err) && try < 3 {
			continue
		}
		if err != nil {
			return nil, outError("--out", dir, err)
		}
		return &runLock{dir: dir, created: created, unlock: unlock}, nil
	}
}

// release unlocks the run directory and returns err with release's own
// errors. A run that failed (err not nil) before it started, in a
// directory made for it that holds nothing else, has its artifacts
// (rl.ArtifactsDir, built for the refused run, and rebuilt by the next)
// and the directories made removed again. A directory that another
// process has written into meanwhile (an eval --out DIR, which shares
// its artifacts; a run that took the directory between missingDirs and
// the lock) keeps them.
func (l *runLock) release(err error) error {
	undo := err != nil && !l.started && len(l.created) > 0 && holdsOnly(l.dir, rl.LockFile, rl.ArtifactsDir)
	if undo {
		if rerr := os.RemoveAll(filepath.Join(l.dir, rl.ArtifactsDir)); rerr != nil {
			err = errors.Join(err, fmt.Errorf("--out %s: remove the artifacts of the refused run: %w", l.dir, rerr))
		}
	}
	err = errors.Join(err, l.unlock())
	if undo {
		removeEmptyDirs(l.created)
	}
	return err
}

// removedMeanwhile reports whether err, from making a directory
// (os.MkdirAll) and then opening a file in it, says that another
// process removed the directory meanwhile: the file's directory is gone
// (ENOENT), or MkdirAll found the directory missing, then there when it
// made it, then gone again (EEXIST; a file in its place fails its first
// stat with ENOTDIR).
func removedMeanwhile(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrExist)
}

// removeEmptyDirs removes dirs (missingDirs' list, innermost first) again,
// stopping at the first that is not empty: one that another process has
// written into meanwhile is left, with its parents.
func removeEmptyDirs(dirs []string) {
	for _, d := range dirs {
		if os.Remove(d) != nil {
			return
		}
	}
}

// holdsOnly reports whether dir's entries are all among names.
func holdsOnly(dir string, names ...string) bool {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, e := range entries {
		if !slices.Contains(names, e.Name()) {
			return false
		}
	}
	return true
}
