package rl

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"

	"github.com/spiral-rl/spiral/data"
	"github.com/spiral-rl/spiral/model/checkpoint"
	"github.com/spiral-rl/spiral/model/lmgraph"
	"github.com/spiral-rl/spiral/model/optim"
	"github.com/spiral-rl/spiral/model/params"
)

// What train (Run) and sft (RunSFT) share about the checkpoints of a run
// directory: resuming from the newest intact one, checking the settings
// it recorded against the rerun's, and saving the last step when the run
// is interrupted.

// resumeNewest loads the newest checkpoint of the run directory dir
// (dir/checkpoints) that loads cleanly into w and opt, warning to warn
// for each newer one skipped as damaged (WarnSkippedCheckpoints). A run
// of another LoRA configuration than lora is refused first, naming both
// (without LoRA, with the --train and --freeze selection each trains:
// selection, the rerun's): its checkpoints hold other tensors, which
// would each fail to load. A
// checkpoint that holds other tensors than w is refused with the error
// otherTensors gives for it, which names the setting that made them
// (another model, other --train or --freeze), when it gives one; else
// with the tensors that differ. It returns the path loaded and its
// state, or an error wrapping checkpoint.ErrNoCheckpoint when dir holds
// no checkpoint. The read stops when ctx is done (checkpoint.Load).
func resumeNewest(ctx context.Context, dir string, lora *lmgraph.LoRA, selection string, w *params.Store, opt *optim.AdamW, warn io.Writer, otherTensors func(path string) error) (string, checkpoint.State, error) {
	ckptDir := filepath.Join(dir, CheckpointsDir)
	// The settings are the newest checkpoint's whose settings read; what
	// does not read is Resume's to report, below.
	var otherLoRA error
	_, _, _ = checkpoint.Newest(ckptDir, func(path string) error {
		prev, err := CheckpointSettings(path)
		if err != nil {
			return err
		}
		prevSelection, err := CheckpointSelection(path)
		if err == nil {
			otherLoRA = otherLoRARun(dir, prev.LoRA, prevSelection, lora, selection)
		}
		return err
	})
	if otherLoRA != nil {
		return "", checkpoint.State{}, otherLoRA
	}
	path, st, skipped, err := checkpoint.Resume(ctx, ckptDir, w, opt)
	WarnSkippedCheckpoints(warn, skipped)
	var me *params.MismatchError
	if errors.As(err, &me) {
		if why := otherTensors(me.File); why != nil {
			return "", checkpoint.State{}, why
		}
	}
	if err != nil && !errors.Is(err, checkpoint.ErrNoCheckpoint) {
		err = resumeRefusal(err, ckptDir)
	}
	return path, st, err
}

// CheckRunIdentity refuses a rerun into the run directory dir whose
// newest checkpoint (whose state reads intact) is spiral sft's, or a run
// of another model, data set, algorithm or LoRA configuration than now's
// (its Model, ModelID, Data, DataPath, DataID, RL.Algo, LoRA, Tokenizer
// and Sampling's selection are read), or whose --train and --freeze
// select other parameters than the checkpoint holds (trains gives the names of
// those now's selection trains; asked for only when the recorded
// selection is another): what Run refuses on resuming, said before the
// caller builds the model's artifacts into dir, which for a real model
// takes minutes and replaces the run's own, and before it waits for a
// serving engine, whose context decides which problems are usable. So
// now.DataID may be "": usable then gives the content id of the usable
// problems were n of them usable (n the run's count, its data cursor's),
// "" where no context leaves n usable; it is asked only where the data's
// names and files do not say whether the data is the run's (a file
// moved, or another data set). A directory without a checkpoint passes;
// settings that --override lets differ are Run's to compare, but for
// now.Tokenizer, known before the engine is waited for: a run of another
// tokenizer is refused as Run refuses it, where both record one (the
// caller leaves it "" with --override, which lets it differ).
func CheckRunIdentity(dir string, now RunSettings, usable func(n int) (string, error), trains func() ([]string, error)) error {
	return checkNewest(dir, func(path string, st checkpoint.State) error {
		run := now
		if run.DataID == "" && usable != nil {
			id, err := usableDataID(st, now, usable)
			if err != nil {
				return err
			}
			run.DataID = id
		}
		prev, err := recordedRun(dir, path, st.Config, run)
		if err != nil {
			return err
		}
		if err := otherLoRARun(dir, prev.LoRA, prev.selection(), now.LoRA, now.selection()); err != nil {
			return err
		}
		if err := checkSettings(dir, settingsDiff(RunSettings{Tokenizer: prev.Tokenizer}, RunSettings{Tokenizer: now.Tokenizer, TokenizerBytes: now.TokenizerBytes}), false, io.Discard); err != nil {
			return err
		}
		return otherTrained(dir, path, selectionKey, prev.selection(), now.selection(), trains)
	})
}

// usableDataID is the content id of now's usable problems that
// recordedRun compares with the run's of the checkpoint state st, where
// it decides (sameTrainingData): usable's for the run's count of usable
// problems (its data cursor's). Where it does not decide it is the
// run's, as it is where the cursor records no count (which Run's resume
// then reads the problems for); "" where the run records none.
func usableDataID(st checkpoint.State, now RunSettings, usable func(n int) (string, error)) (string, error) {
	var prev RunSettings
	var cur data.Cursor
	if json.Unmarshal(st.Config, &prev) != nil || prev.DataID == "" || sameDataFile(prev, now, true) ||
		json.Unmarshal(st.DataCursor, &cur) != nil || cur.Size <= 0 {
		return prev.DataID, nil
	}
	return usable(cur.Size)
}

// checkNewest returns what refuse says of the newest checkpoint of the
// run directory dir whose state reads intact (damaged ones are the
// resume's to skip and warn of), at path with the state st; nil without
// one. A newer checkpoint that stops the resume (a newer spiral's:
// checkpoint.IsFinal) is refused as the resume refuses it; one that the
// system fails to read (checkpoint.Unreadable) is refused with that
// error, which the resume would stop at too (resumeRefusal).
func checkNewest(dir string, refuse func(path string, st checkpoint.State) error) error {
	var refused error
	ckptDir := filepath.Join(dir, CheckpointsDir)
	_, _, err := checkpoint.Newest(ckptDir, func(path string) error {
		st, err := checkpoint.ReadCheckedState(path)
		if err != nil {
			return err
		}
		refused = refuse(path, st)
		return nil
	})
	if checkpoint.Unreadable(err) || checkpoint.IsFinal(err) {
		return resumeRefusal(err, ckptDir)
	}
	return refused
}

// resumeRefusal is the resume's refusal of the checkpoints in ckptDir
// for err, which stopped the search, naming the way out: for a
// checkpoint that the system fails to read (checkpoint.Unreadable: EIO,
// EACCES, ...), no damage to pass over for an older checkpoint but one
// that never reads again (a bad sector) would refuse every rerun, moving
// it out of ckptDir (the resume then takes the one before) or --fresh;
// for any other, --fresh.
func resumeRefusal(err error, ckptDir string) error {
	if checkpoint.Unreadable(err) {
		return fmt.Errorf("resume: %w; if it never reads again (a bad sector), move that checkpoint out of %s to resume from the one before it, or use --fresh to start over", err, ckptDir)
	}
	return fmt.Errorf("resume: %w (use --fresh to start over)", err)
}

// OtherRunError is the refusal of a rerun into a run directory whose
// checkpoints are of another run than the rerun's flags describe: of
// the other command (train's, sft's), another model, data set,
// algorithm, LoRA setting or --train and --freeze selection, or, without
// --override, other settings or training problems (the data file edited
// in place). No file is bad: the way on is other flags (the run's,
// --override, another --out or --fresh).
type OtherRunError struct{ Err error }

func (e *OtherRunError) Error() string { return e.Err.Error() }
func (e *OtherRunError) Unwrap() error { return e.Err }

// otherRun is the OtherRunError of the message format and args
// (fmt.Errorf's).
func otherRun(format string, args ...any) error {
	return &OtherRunError{fmt.Errorf(format, args...)}
}

// otherLoRARun refuses the run in dir trained with the LoRA setting prev
// (nil: the model's own parameters, those the --train and --freeze
// selection prevSelection chose), not now (nowSelection the rerun's):
// its checkpoints hold other tensors. The selections only describe the
// runs (trainedString); otherSelection compares them.
func otherLoRARun(dir string, prev *lmgraph.LoRA, prevSelection string, now *lmgraph.LoRA, nowSelection string) error {
	if loraString(prev) == loraString(now) {
		return nil
	}
	return otherRun("%s holds a run with %s; this one is %s: use the same LoRA flags, another --out, or --fresh",
		dir, trainedString(prev, prevSelection), trainedString(now, nowSelection))
}

// otherSelection refuses the run in dir whose checkpoints were trained
// with the --train and --freeze selection prev (Selection.String), not
// now, naming setting (where the settings record it) with its flags
// (withFlags): the checkpoint holds other tensors than the rerun trains.
// Empty selections (recorded by none, or by older versions) say nothing.
func otherSelection(dir, setting, prev, now string) error {
	if prev == "" || now == "" || prev == now {
		return nil
	}
	return otherRun("%s holds a run that trains other parameters (%s: %s -> %s): use the same --train and --freeze, another --out, or --fresh",
		dir, withFlags(setting), prev, now)
}

// otherTrained refuses, as otherSelection does, the run in dir whose
// checkpoint at path was trained with the selection prev when now's
// trains other parameters than the checkpoint holds: trains gives their
// names, asked for only when the selections differ. Other patterns that
// train the same parameters pass (the settings check names that
// change), as does a checkpoint whose tensors cannot be read (resuming
// skips and reports it).
func otherTrained(dir, path, setting, prev, now string, trains func() ([]string, error)) error {
	refused := otherSelection(dir, setting, prev, now)
	if refused == nil {
		return nil
	}
	if _, _, differ, err := tensorsDiffer(path, trains); !differ || err != nil {
		return err
	}
	return refused
}

// sameModel reports whether a checkpoint's model (its name and content
// id, model.SourceID) is the rerun's: by id, or by name for checkpoints
// of older versions, which record no id.
func sameModel(prevName, prevID, name, id string) bool {
	if prevID == "" {
		return prevName == name
	}
	return prevID == id
}

// sameData reports whether two runs' data sets, each named as given
// (name) and by its file's absolute path (path; "" for an embedded set
// or where a checkpoint of an older version records none), are one: the
// same name, or paths of one file (the same path, or, where both are
// there, another path to the file: a link).
func sameData(prevName, prevPath, name, path string) bool {
	if prevName == name {
		return true
	}
	return prevPath != "" && path != "" && sameFile(prevPath, path)
}

// sameFile reports whether two absolute paths are of one file: the same
// path, or another path to the file (a link).
func sameFile(prevPath, path string) bool {
	if prevPath == path {
		return true
	}
	a, err := os.Stat(prevPath)
	if err != nil {
		return false
	}
	b, err := os.Stat(path)
	return err == nil && os.SameFile(a, b)
}

// checkSettings refuses to go on with the run in dir when diff (a
// settings difference: flatDiff) lists settings that differ from the
// run's, naming them, unless override, which goes on with the new ones
// and says so to warn.
func checkSettings(dir string, diff []string, override bool, warn io.Writer) error {
	if len(diff) == 0 {
		return nil
	}
	if !override {
		return otherRun("%s holds a run with other settings: %s; rerun with --override to continue with the new ones, or use another --out or --fresh",
			dir, strings.Join(diff, ", "))
	}
	fmt.Fprintf(warn, "spiral: --override: continuing %s with new settings: %s\n", dir, strings.Join(diff, ", "))
	return nil
}

// settingFlags names the flags that set the settings train (RunSettings)
// and sft (SFTSettings) record in their checkpoints, by their flattened
// paths (flatDiff's), for the settings differences to name them;
// settingsDiff and sftSettingsDiff name the derived ones (the longest
// prompt; the cosine's total steps where --warmup raised them) and leave
// out those that are no setting (the model, the data set, where the
// draws stand).
var settingFlags = map[string]string{
	"rl.algo":                       "--algo",
	"rl.pipeline.n1":                "--n1",
	"rl.pipeline.k":                 "--k",
	"rl.pipeline.n":                 "--n",
	"rl.pipeline.n2":                "--n2",
	"rl.pipeline.candidate_tokens":  "--candidate-tokens",
	"rl.pipeline.rounds":            "--agg-rounds",
	"rl.group":                      "--group",
	"rl.problems":                   "--problems",
	"rl.draw_rounds":                "--draw-rounds",
	"rl.clip_low":                   "--clip-low",
	"rl.clip_high":                  "--clip-high",
	"rl.max_grad_norm":              "--max-grad-norm",
	"rl.micro_batch_tokens":         "--micro-batch-tokens",
	"rl.separate_rows":              "--pack-prompts=false",
	"rl.advantage.ScaleSearch":      "--scale-search-adv",
	"rl.advantage.ScaleAggregation": "--scale-agg-adv",
	"rl.advantage.AggregationOnly":  "--algo",
	"rl.advantage.SearchOnly":       "--algo",
	"rl.advantage.SearchOwnReward":  "--search-own-reward",
	"rl.reward.fallback":            "--reward-fallback",
	"rl.reward.truncated":           "--reward-truncated",
	"rl.seed":                       "--seed",
	"schedule.peak_lr":              "--lr",
	"schedule.warmup_steps":         "--warmup",
	"schedule.total_steps":          "--steps",
	"schedule.min_lr":               "--lr / 10",
	"sampling.temperature":          "--temperature",
	"sampling.top_p":                "--top-p",
	"sampling.top_k":                "--top-k",
	"sampling.max_new_tokens":       "--max-new-tokens",
	selectionKey:                    "--train, --freeze",
	templatesKey:                    "--search-template, --aggregate-template",
	searchTemplateKey:               "--search-template",
	aggregateTemplateKey:            "--aggregate-template",
	candidateCapKey:                 "what --candidate-tokens counts",
	"lora.rank":                     "--lora-rank",
	"lora.alpha":                    "--lora-alpha",
	"lora.targets":                  "--lora-targets",
	"held_out.data":                 "--eval-data",
	"held_out.problems":             "--eval-problems",
	"held_out.digest":               "the problems of --eval-data and --eval-problems",
	heldOutSamplesKey:               "--eval-samples",
	"selection":                     "--train, --freeze",
	"sft.batch":                     "--batch",
	"sft.mix.candidates":            "--candidates",
	"sft.mix.aggregate_share":       "--aggregate-share",
	"sft.mix.aggregate_read_share":  "--aggregate-read-share",
	"sft.micro_batch_tokens":        "--micro-batch-tokens",
	"sft.max_grad_norm":             "--max-grad-norm",
	"sft.eval_problems":             "--eval-problems",
	"sft.seed":                      "--seed",
	"tokenizer":                     "--tokenizer",
	"reply_head":                    "--tokenizer's chat template",
}

// withFlags returns the setting at the flattened path key followed by
// the flags that set it (settingFlags), "rl.pipeline.n1 (--n1)".
func withFlags(key string) string {
	if f, ok := settingFlags[key]; ok {
		return key + " (" + f + ")"
	}
	return key
}

// flatDiff lists the settings that differ between a and b, values of one
// type, as "path: old -> new" ("(unset)" for a side that lacks the path),
// by the paths of their JSON form in order (schedule.peak_lr,
// sampling.temperature, ...). name gives the name to list a differing
// path under, or "" to leave it out; it sees both sides' flattened forms.
func flatDiff(a, b any, name func(key string, fa, fb map[string]string) string) []string {
	flat := func(s any) map[string]string {
		raw, _ := json.Marshal(s)
		var v any
		_ = json.Unmarshal(raw, &v)
		out := map[string]string{}
		var walk func(prefix string, v any)
		walk = func(prefix string, v any) {
			if m, ok := v.(map[string]any); ok {
				for k, x := range m {
					walk(strings.TrimPrefix(prefix+"."+k, "."), x)
				}
				return
			}
			// Its text as it is: "<think>", not "\u003cthink\u003e".
			var b strings.Builder
			enc := json.NewEncoder(&b)
			enc.SetEscapeHTML(false)
			_ = enc.Encode(v)
			out[prefix] = strings.TrimSuffix(b.String(), "\n")
		}
		walk("", v)
		return out
	}
	fa, fb := flat(a), flat(b)
	var keys []string
	for k := range fa {
		keys = append(keys, k)
	}
	for k := range fb {
		if _, ok := fa[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var diff []string
	for _, k := range keys {
		if reflect.DeepEqual(fa[k], fb[k]) {
			continue
		}
		n := name(k, fa, fb)
		if n == "" {
			continue
		}
		old, now := fa[k], fb[k]
		if old == "" {
			old = "(unset)"
		}
		if now == "" {
			now = "(unset)"
		}
		diff = append(diff, fmt.Sprintf("%s: %s -> %s", n, old, now))
	}
	return diff
}

// saveStopped is a run's answer to cause ending it after step completed
// steps, the newest saved being lastSaved: saveInterrupted's when ctx is
// done (Ctrl-C), else saveFailed's, and saveFailed's for a failed update
// (UpdateError) even under Ctrl-C, whose weights are not to be saved.
func saveStopped(ctx context.Context, warn io.Writer, step, lastSaved int, cause error, save func() error) error {
	var ue *UpdateError
	if ctx.Err() != nil && !errors.As(cause, &ue) {
		return saveInterrupted(warn, step, lastSaved, cause, save)
	}
	return saveFailed(warn, step, lastSaved, cause, save)
}

// saveFailed is saveInterrupted for a run that failed (an engine, a
// device, an evaluation) after step: the completed steps are saved, so
// that a rerun resumes from the last of them once the cause is mended;
// not after a failed update (UpdateError), whose weights are neither the
// step's nor the one before.
func saveFailed(warn io.Writer, step, lastSaved int, cause error, save func() error) error {
	var ue *UpdateError
	switch {
	case step == 0 || step == lastSaved:
		return cause
	case errors.As(cause, &ue):
		rerun := fmt.Sprintf("resumes from step %d, the newest checkpoint", lastSaved)
		if lastSaved == 0 {
			rerun = "starts over, no step being saved yet"
		}
		fmt.Fprintf(warn, "spiral: step %d failed in its update, which may have changed part of the weights: they are not saved; a rerun %s\n", ue.Step, rerun)
		return cause
	}
	fmt.Fprintf(warn, "spiral: failed after step %d; saving it: rerun the command to resume once the cause is mended\n", step)
	return errors.Join(cause, save())
}

// saveInterrupted is a run's answer to an interruption (cause) after
// step completed steps, the newest of them saved being lastSaved: it
// saves the step unless no step finished or it is saved already, says
// which to warn, and returns cause (with save's error).
func saveInterrupted(warn io.Writer, step, lastSaved int, cause error, save func() error) error {
	switch {
	case step == 0:
		fmt.Fprintln(warn, "spiral: interrupted before the first step finished; nothing to save")
		return cause
	case step == lastSaved:
		fmt.Fprintf(warn, "spiral: interrupted; step %d is already saved: rerun the command to resume\n", step)
		return cause
	}
	fmt.Fprintf(warn, "spiral: interrupted; saving step %d: rerun the command to resume\n", step)
	return errors.Join(cause, save())
}

// tensorsDiffer reports whether the checkpoint at path holds other
// tensors than those trains names (in any order), and how many each
// has; false where its tensors cannot be read (resuming skips and
// reports it), so that no refusal is made of them.
func tensorsDiffer(path string, trains func() ([]string, error)) (held, trained int, differ bool, err error) {
	names, err := trains()
	if err != nil {
		return 0, 0, false, err
	}
	tensors, err := checkpoint.TensorNames(path)
	if err != nil {
		return 0, 0, false, nil
	}
	slices.Sort(names)
	slices.Sort(tensors)
	return len(tensors), len(names), !slices.Equal(names, tensors), nil
}
