package rl

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spiral-rl/spiral/data"
	"github.com/spiral-rl/spiral/model/atomicfile"
	"github.com/spiral-rl/spiral/model/checkpoint"
	"github.com/spiral-rl/spiral/model/lmgraph"
	"github.com/spiral-rl/spiral/model/optim"
	"github.com/spiral-rl/spiral/model/params"
	"github.com/spiral-rl/spiral/model/smallfile"
	"github.com/spiral-rl/spiral/rollout"
	"github.com/spiral-rl/spiral/rollout/report"
	"github.com/spiral-rl/spiral/rollout/report/tfevents"
)

// Files of a run directory.
const (
	MetricsFile     = "metrics.jsonl"
	EvalFile        = "eval.jsonl"
	FinalRSAFile    = "rsa.json"
	TrainingPlot    = "training.png"
	CheckpointsDir  = "checkpoints"
	ArtifactsDir    = "artifacts"
	LockFile        = ".lock"
	previousPattern = "previous-"
	// AsidePendingDir gathers the entries --fresh (or a rerun that
	// starts over past logged steps: setAsideUnresumed) moves aside
	// before it is renamed to previous-* (moveAside); one a killed
	// process left is put back by LockRun (restoreAside).
	AsidePendingDir = ".previous-pending"
)

// RunConfig configures a training run (Run). Validate names the flags.
type RunConfig struct {
	// Dir is the run directory (--out).
	Dir string
	// Steps is the number of steps the run reaches (a resumed run goes on
	// from where it stopped).
	Steps int
	// CheckpointEvery saves a checkpoint every N steps (>= 1), and at the
	// end; Keep retains the newest N checkpoints (0 = all).
	CheckpointEvery, Keep int
	// Fresh moves the previous run's checkpoints and logs aside and starts
	// over; Override resumes a run whose settings differ from the ones
	// given (the new ones apply).
	Fresh, Override bool
	// EvalEvery evaluates the held-out problems every N steps, at step 0
	// and at the end (0 = never); EvalSamples samples each (pass@1 and
	// majority@EvalSamples are reported).
	EvalEvery, EvalSamples int
	// TensorBoard logs every metrics.jsonl and eval.jsonl line as it is
	// written to a new event file in Dir/TensorBoardDir too (see
	// openTensorBoardLog).
	TensorBoard bool
	// FinalRSA, when its Steps > 0, runs recursive self-aggregation on the
	// held-out problems once the run reaches Steps, writes it to
	// FinalRSAFile and prints one summary line with the held-out pass@1
	// at the first and last evaluation and RSA's first and last step.
	FinalRSA rollout.RSAConfig
}

// Validate reports every invalid field.
func (c RunConfig) Validate() error {
	var errs []error
	if c.Dir == "" {
		errs = append(errs, errors.New("--out is empty"))
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"--steps", c.Steps}, {"--checkpoint-every", c.CheckpointEvery}, {"--eval-samples", c.EvalSamples}} {
		if f.v < 1 {
			errs = append(errs, fmt.Errorf("%s %d: want >= 1", f.name, f.v))
		}
	}
	if c.Keep < 0 {
		errs = append(errs, fmt.Errorf("--keep %d: want >= 0 (0 = keep every checkpoint)", c.Keep))
	}
	if c.EvalEvery < 0 {
		errs = append(errs, fmt.Errorf("--eval-every %d: want >= 0 (0 = never)", c.EvalEvery))
	}
	if c.FinalRSA.Steps < 0 {
		errs = append(errs, fmt.Errorf("--final-rsa-steps %d: want >= 0 (0 = none)", c.FinalRSA.Steps))
	} else if c.FinalRSA.Steps > 0 {
		errs = append(errs, c.FinalRSA.Validate())
	}
	return errors.Join(errs...)
}

// RunSettings are what a run records in each checkpoint, so that rerunning
// it in the same directory with other settings is noticed: the model and
// data (which must match), and the settings that shape training (which
// may change only with RunConfig.Override).
type RunSettings struct {
	// Model names the model; ModelID identifies it by content
	// (model.SourceID), so that a moved model still resumes and another
	// model with the same name does not.
	Model   string `json:"model"`
	ModelID string `json:"model_id"`
	// Data names the training problems as given (an --data path, or the
	// embedded set's name); DataPath is their file's absolute path (""
	// for the embedded set, and in checkpoints of older versions), so
	// that the run resumes from another working directory, where the
	// path given reads otherwise ("../p.jsonl" for "p.jsonl"); DataID
	// identifies its usable problems by content (data.ProblemsDigest, as
	// the data cursor records them; "" in checkpoints of older
	// versions), so that the file moved still resumes.
	Data     string         `json:"data"`
	DataPath string         `json:"data_path,omitempty"`
	DataID   string         `json:"data_id,omitempty"`
	RL       Config         `json:"rl"`
	Schedule optim.Schedule `json:"schedule"`
	// Sampling holds the sampling settings (temperature, top-p, top-k,
	// trace length) as the CLI names them, the --train and --freeze
	// selection ("selection") and fingerprints of the prompt templates
	// (TemplatePrints): the search and aggregation templates' together
	// ("templates"; none in checkpoints of older versions), and each
	// one's ("search_template", "aggregate_template"; none in
	// checkpoints of older versions, and no aggregation template's for
	// a run that reads none: recordedSettings).
	Sampling map[string]any `json:"sampling"`
	// LoRA is the adapters' configuration when the run trains LoRA
	// adapters (the checkpoints then hold the adapters only).
	LoRA *lmgraph.LoRA `json:"lora,omitempty"`
	// Tokenizer fingerprints the tokenizer the prompts are tokenized
	// with, its tokenizer.json and chat template (tokenizer.Fingerprint,
	// as SFTSettings.Tokenizer; "" in checkpoints of
	// older versions, which record none): a rerun with another would
	// train the run's weights on ids that mean other text.
	Tokenizer string `json:"tokenizer,omitempty"`
	// TokenizerBytes is the fingerprint that versions before
	// tokenizer.Fingerprint read tokenizer.json's content took of the
	// same tokenizer (tokenizer.ByteFingerprint): a checkpoint recording
	// it as its Tokenizer is of this tokenizer (settingsDiff), and its
	// run resumes, recording Tokenizer from then on. Recorded beside
	// Tokenizer so that spiral compare, which reads runs' settings with
	// no tokenizer file to fingerprint, takes a run those versions
	// recorded and one of the same file recorded since as of one
	// tokenizer (SeedSettingsDiff); no setting of its own, since the
	// same tokenizer saved again has other bytes.
	TokenizerBytes string `json:"tokenizer_bytes,omitempty"`
	// HeldOut identifies the held-out problems that eval.jsonl and the
	// final RSA evaluate (Run sets it; nil when the run evaluates none),
	// so that a rerun on other held-out problems is noticed rather than
	// continuing one curve on two problem sets.
	HeldOut *HeldOut `json:"held_out,omitempty"`
	// DrawStreams is where the rollouts' random streams lie from its Step
	// on (nil: the zero value, a run whose --draw-rounds never changed).
	DrawStreams *DrawStreams `json:"draw_streams,omitempty"`
	// CandidateCap is what RL.Pipeline.CandidateTokens counts where the
	// run caps its aggregation prompts' candidates (its steps', or a GRPO
	// run's final RSA's)
	// (report.CandidateCapText: tokens of text; Run sets it): "" in
	// checkpoints of older versions, whose cap counted a stopped
	// candidate's closing <|im_end|> too, and where nothing is capped.
	CandidateCap string `json:"candidate_cap,omitempty"`
}

// SamplingSettings returns RunSettings.Sampling for a run sampling at
// temperature, topP and topK, maxNewTokens a trace, training the
// parameters selection (lmgraph.Selection.String) selects, with prompt
// templates of the fingerprints templates.
func SamplingSettings(temperature, topP float64, topK, maxNewTokens int, selection string, templates TemplatePrints) map[string]any {
	return map[string]any{"temperature": temperature, "top_p": topP, "top_k": topK, "max_new_tokens": maxNewTokens,
		"selection": selection, templatesField: templates.Both, searchTemplateField: templates.Search, aggregateTemplateField: templates.Aggregate}
}

// TemplatePrints are the fingerprints of a run's prompt templates that
// its settings record: the search and aggregation templates' together
// (Both, which eval's reports record too), and each one's, so that a
// rerun compares only the templates its algorithm reads (settingsDiff).
type TemplatePrints struct {
	Both, Search, Aggregate string
}

// TemplatePrints returns the prompt templates' fingerprints that the
// run's settings record (Sampling's "templates", "search_template" and
// "aggregate_template"), each "" where they record none: none in
// checkpoints of older versions and sft's, Both alone in those of
// versions before each template's was recorded, and no Aggregate for a
// run that reads no aggregation template (GRPO without a final RSA).
func (s RunSettings) TemplatePrints() TemplatePrints {
	field := func(name string) string {
		v, _ := s.Sampling[name].(string)
		return v
	}
	return TemplatePrints{Both: field(templatesField), Search: field(searchTemplateField), Aggregate: field(aggregateTemplateField)}
}

// HeldOut names a run's held-out problems: their data set as
// RunParts.HeldName gives it, their number and their fingerprint
// (data.ProblemsDigest, as eval reports record it), and the samples its
// evaluations every RunConfig.EvalEvery steps draw of each (0: none ran,
// or a checkpoint of an older version), whose majority@k eval.jsonl logs
// at k = Samples.
type HeldOut struct {
	Data string `json:"data"`
	// Path is Data's file, absolute (as RunParts.HeldPath gives it; ""
	// for the embedded split, and in checkpoints of older versions).
	Path     string `json:"path,omitempty"`
	Problems int    `json:"problems"`
	Digest   string `json:"digest"`
	Samples  int    `json:"samples,omitempty"`
}

// RunParts are the collaborators of a run.
type RunParts struct {
	Trainer   *Trainer
	Weights   *params.Store
	Optimizer *optim.AdamW
	Problems  *data.Stream
	// Evaluator and Held are the held-out evaluation (Held empty: none);
	// HeldName names Held's data set in the final RSA report as spiral
	// eval names it ("embedded:synth-test", an --eval-data path), so that
	// the two compare.
	// HeldPath is the absolute path of HeldName's file ("" for the
	// embedded split), which the run settings record beside it.
	Evaluator rollout.Evaluator
	Held      []data.Problem
	HeldName  string
	HeldPath  string
	// ReportExtra is the final RSA report's meta.extra: the settings its
	// samples were drawn and graded with, as spiral eval's reports record
	// them, so that spiral compare holds the two alike.
	ReportExtra map[string]string
	// Model names the model trained in the final RSA report as spiral
	// eval's reports name it (Settings.Model is the --model path as
	// given, which may name no directory of the model's: "model.onnx"),
	// so that compare holds the two reports as of one model.
	Model    string
	Settings RunSettings
	// CRLFTemplates is the prompt templates' fingerprint as versions that
	// kept a template file's CRLF line ends in its prompts took it, where
	// it is another than Settings' ("" where no file has them): a
	// checkpoint recording it is of these templates, and resumes.
	CRLFTemplates string
	// SGLangListed is the max_model_len that the serving engine, an
	// SGLang, lists, where prompts and traces are fitted to one position
	// less (rollout.OpenAI.CheckModel); 0 otherwise. A run that a
	// version before 2026-12-07 started on it recorded a prompt limit, or
	// a default trace length, one more: its resume's refusal says why
	// (sglangNote).
	SGLangListed int
	// Out receives the run's lines (steps, evaluations, checkpoints);
	// Warn its warnings.
	Out, Warn io.Writer
	// Progress starts a progress indicator for one step and returns the
	// function that advances it (by generated tokens) and the one that
	// ends it; nil shows none.
	Progress func(desc string) (add func(int), done func())
}

// LockRun creates the run directory dir and takes its lock, so that two
// processes never train into one directory (see lockRun): a second is
// refused, naming the holder's pid. The caller takes it before it writes
// anything there (the artifacts the policy is opened with, which a
// process refused only later rebuilt under a running run for its own
// settings) and holds it through Run. The entries that a --fresh killed
// while it moved them aside left are put back first (restoreAside), and
// the temporary checkpoints of a killed Save removed. It
// returns the release; its errors name dir, for the caller to say which
// flag gave it.
func LockRun(dir string) (func() error, error) {
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return nil, err
	}
	unlock, err := lockRun(dir)
	if err != nil {
		return nil, err
	}
	// A --fresh killed while it moved the run aside left part of it in
	// .previous-pending: it is put back before anything reads the run.
	if err := restoreAside(dir); err != nil {
		return nil, errors.Join(err, unlock())
	}
	// A Save killed within it left a temporary checkpoint, as large as
	// one: it goes now, not at the run's next Save, nor into previous-*
	// with the checkpoints (--fresh), to stay there.
	checkpoint.RemoveStale(filepath.Join(dir, CheckpointsDir))
	return unlock, nil
}

// Run trains until cfg.Steps steps are done, top to bottom, the run
// directory locked by the caller (LockRun):
//
//  1. check the configuration;
//  2. --fresh: move the previous run aside; otherwise resume from the
//     newest intact checkpoint, refusing another model or data, and other
//     settings unless cfg.Override;
//  3. cut the logs back to the resumed step (empty them when there was
//     none to resume, those that log completed steps set aside first:
//     setAsideUnresumed; eval.jsonl then goes where the run evaluates
//     nothing every cfg.EvalEvery steps, which opens none), and
//     spiral's TensorBoard event files with them;
//     cfg.TensorBoard: start a new event file (openTensorBoardLog);
//  4. evaluate the held-out problems at the resumed step if that
//     evaluation is due and not logged yet (a killed run is not evaluated
//     twice; an evaluation that was interrupted is redone);
//  5. each step: roll out, train, log metrics; evaluate when due; save a
//     checkpoint (and draw training.png) every cfg.CheckpointEvery steps
//     and at the end; a run resumed at its last step draws the plot too;
//  6. on interruption (ctx), or an error in a step or an evaluation
//     (a serving engine's, a device's) but not in a step's update,
//     save the last completed step if it is not saved yet, and return
//     the cause.
func Run(ctx context.Context, cfg RunConfig, p RunParts) (err error) {
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("rl: run: %w", err)
	}
	tr := p.Trainer
	p.Settings = recordedSettings(cfg, p)

	// 2. Resume, or start afresh.
	ckptDir := filepath.Join(cfg.Dir, CheckpointsDir)
	if cfg.Fresh {
		// An interrupted sft run's log goes with its checkpoints, whose
		// refusal offers --fresh: the next sft here would empty it; so
		// do the events of the finished run an interrupted sft
		// --overwrite set aside, as sft's own --fresh moves them.
		moved, err := moveAside(cfg.Dir, []string{CheckpointsDir, MetricsFile, EvalFile, TrainingPlot, FinalRSAFile, TensorBoardDir,
			SFTLogFile + PartialSuffix, SFTFinishedTensorBoardDir})
		if err != nil {
			return fmt.Errorf("--fresh: %w", err)
		}
		if moved != "" {
			fmt.Fprintf(p.Out, "--fresh: the previous run is in %s\n", moved)
		}
	} else {
		prevHeld, err := resume(ctx, cfg, p)
		if err != nil {
			return err
		}
		if tr.Step() == 0 {
			if err := setAsideUnresumed(cfg.Dir, []string{MetricsFile, EvalFile}, []string{TrainingPlot, FinalRSAFile, TensorBoardDir}, p.Warn); err != nil {
				return err
			}
		}
		switch {
		case p.Settings.HeldOut == nil:
			// A rerun that evaluates nothing keeps the run's held-out
			// problems, for the rerun after it to be checked against.
			p.Settings.HeldOut = prevHeld
		case p.Settings.HeldOut.Samples == 0 && prevHeld != nil:
			// Likewise one that evaluates only at the end (its RSA) keeps
			// the samples of the run's evaluations every --eval-every.
			p.Settings.HeldOut.Samples = prevHeld.Samples
		}
	}
	p.Settings.DrawStreams = nil
	if s := tr.DrawStreams(); s != (DrawStreams{}) {
		p.Settings.DrawStreams = &s
	}
	settings, err := json.Marshal(p.Settings)
	if err != nil {
		return fmt.Errorf("rl: run settings: %w", err)
	}

	// 3. The logs describe the weights: drop lines past the resumed step,
	// or every line when no step was resumed: a run that saved no
	// checkpoint starts over, and its step-0 evaluation may be of other
	// settings (another model, other held-out problems or sampling) that
	// no checkpoint recorded. (Logs of completed steps were set aside
	// above: setAsideUnresumed.)
	metricsPath, evalPath := filepath.Join(cfg.Dir, MetricsFile), filepath.Join(cfg.Dir, EvalFile)
	kept := tr.Step()
	if kept == 0 {
		kept = -1
	}
	for _, log := range []string{metricsPath, evalPath} {
		damaged, err := truncateLog(log, kept)
		if err != nil {
			return err
		}
		warnDamagedLines(p.Warn, damaged)
	}
	// eval.jsonl is written by a run that evaluates every --eval-every
	// steps alone: one of none holds no such file, but the one a resumed
	// step's run logged, cut back above (one of no step resumed is
	// empty now, and goes).
	evaluates := len(p.Held) > 0 && cfg.EvalEvery > 0
	if !evaluates && kept < 0 {
		if err := os.Remove(evalPath); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("rl: run: %w", err)
		}
	}
	tb := openTensorBoardLog(cfg.Dir, cfg.TensorBoard, kept, metricsPath, func() ([]tfevents.Event, error) {
		events, _, err := trainEvents(cfg.Dir)
		return events, err
	}, p.Warn)
	defer tb.close()
	mf, err := os.OpenFile(metricsPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o666)
	if err != nil {
		return fmt.Errorf("rl: run: %w", err)
	}
	defer mf.Close()
	var ef *os.File
	if evaluates {
		if ef, err = os.OpenFile(evalPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o666); err != nil {
			return fmt.Errorf("rl: run: %w", err)
		}
		defer ef.Close()
	}
	evaluated, err := loggedSteps(evalPath)
	if err != nil {
		return err
	}

	// Checkpoints hold the last completed step with the data cursor as it
	// was when that step ended, not as an interrupted step left it.
	stepCursor := p.Problems.Cursor()
	lastSaved := tr.Step()
	// plotted: training.png shows the logs as they are now (save draws
	// it; an evaluation adds a point to it).
	plotted := false
	// A plot that cannot be drawn is warned of, as a checkpoint's pruning
	// and its latest pointer are: the plot is the logs' picture, which
	// the next checkpoint, or a rerun of the finished run, draws again.
	plot := func() {
		if err := PlotTraining(cfg.Dir, tr.Config().Algo); err != nil {
			fmt.Fprintf(p.Warn, "spiral: warning: could not draw %s: %v (the next checkpoint tries again; a rerun of the finished run draws it again)\n",
				filepath.Join(cfg.Dir, TrainingPlot), err)
		}
	}
	save := func() error {
		if err := tr.SyncHost(); err != nil {
			return err
		}
		// The logs' lines up to the step are on disk before the
		// checkpoint that a resume cuts them back to: after a power
		// loss, a resumed run's logs lack none of its steps.
		for _, f := range []*os.File{mf, ef} {
			if f == nil {
				continue // no eval.jsonl
			}
			if err := f.Sync(); err != nil {
				return fmt.Errorf("rl: run: %w", err)
			}
		}
		cur, err := json.Marshal(stepCursor)
		if err != nil {
			return err
		}
		path, err := checkpoint.Save(ckptDir, p.Weights, p.Optimizer,
			checkpoint.State{Step: int64(tr.Step()), DataCursor: cur, Config: settings}, checkpoint.Options{Keep: cfg.Keep, Warn: p.Warn})
		if err != nil {
			return err
		}
		lastSaved = tr.Step()
		fmt.Fprintf(p.Out, "checkpoint %s\n", path)
		plotted = true
		plot()
		return nil
	}
	interrupted := func(cause error) error { return saveInterrupted(p.Warn, tr.Step(), lastSaved, cause, save) }
	// stopped saves the completed steps before a step's or an
	// evaluation's error ends the run, Ctrl-C's or another.
	stopped := func(cause error) error { return saveStopped(ctx, p.Warn, tr.Step(), lastSaved, cause, save) }
	evalDue := func(step int) bool {
		return evaluates && (step%cfg.EvalEvery == 0 || step == cfg.Steps) && !evaluated[step]
	}
	evaluate := func() error {
		// Ctrl-C in the engine's sync (an export, a load) saves the
		// step as Ctrl-C in the evaluation does.
		sync, err := tr.SyncEngine(ctx)
		if err == nil {
			err = heldOutEval(ctx, p, cfg.EvalSamples, tr.Step(), tr.Config().Seed, sync, ef, tb, tr.CheckEngine)
		}
		if err != nil {
			return stopped(err)
		}
		evaluated[tr.Step()] = true
		plotted = false
		return nil
	}

	// The final RSA evaluation, after the last step's checkpoint: an
	// interruption loses no training, and a rerun does it (rsa.json is
	// written only once it is done).
	rsaPath := filepath.Join(cfg.Dir, FinalRSAFile)
	finalDue := cfg.FinalRSA.Steps > 0 && len(p.Held) > 0
	finalDone := false
	final := func() error {
		if err := finalSummary(ctx, cfg, p, tr); err != nil {
			if ctx.Err() != nil {
				fmt.Fprintln(p.Warn, "spiral: interrupted during the final RSA evaluation; the run is saved: rerun the command to evaluate it")
			}
			return err
		}
		return nil
	}

	// A finished run rerun keeps its final RSA evaluation where that is
	// of its step, held-out problems and settings (read once: nothing
	// before the end of Run writes it where no step is trained).
	finalKept := finalDue && tr.Step() == cfg.Steps && finalWritten(rsaPath, tr.Step(), p.Settings.HeldOut.Digest, cfg.FinalRSA, p.ReportExtra)
	switch {
	case tr.Step() > cfg.Steps:
		fmt.Fprintf(p.Warn, "spiral: note: the run in %s is at step %d, past --steps %d: nothing to train (give --steps above %d to go on, or --fresh to start over)\n",
			cfg.Dir, tr.Step(), cfg.Steps, tr.Step())
	case tr.Step() == cfg.Steps:
		// A finished run rerun: "resumed from" alone would read as if
		// it had trained.
		rsa := ""
		if finalDue {
			rsa = fmt.Sprintf("; its final RSA evaluation (%s) is kept", FinalRSAFile)
			if !finalKept {
				rsa = fmt.Sprintf("; its final RSA evaluation (%s) is missing, or of another step, other held-out problems or other settings: it is done again", FinalRSAFile)
			}
		}
		fmt.Fprintf(p.Warn, "spiral: note: the run in %s is at --steps %d already: nothing to train%s (give --steps above %d to go on, or --fresh to start over)\n",
			cfg.Dir, cfg.Steps, rsa, cfg.Steps)
	}
	if tr.Step() < cfg.Steps {
		warnWithinWarmup(p.Warn, cfg.Steps, tr.sched)
	}
	// 4. The resumed step's evaluation, unless it was logged already.
	if evalDue(tr.Step()) {
		if err := evaluate(); err != nil {
			return err
		}
	}
	// 5. The steps.
	warnedFitted := false // the first step whose aggregation prompts were cut to fit is announced
	for tr.Step() < cfg.Steps {
		if err := ctx.Err(); err != nil {
			return interrupted(err)
		}
		if tr.Step()+1 == cfg.Steps && finalDue {
			// An rsa.json already here is an earlier, shorter run's: it
			// goes before the last step, so that this run's final
			// evaluation is missing, and redone, however the run is
			// interrupted from here on (in the last step's held-out
			// evaluation, whose interruption saves the step, too).
			if err := os.Remove(rsaPath); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("rl: run: %w", err)
			}
		}
		add, done := func(int) {}, func() {}
		if p.Progress != nil {
			add, done = p.Progress(fmt.Sprintf("step %d/%d rollout", tr.Step()+1, cfg.Steps))
		}
		m, err := tr.TrainStep(ctx, add)
		done()
		if err != nil {
			return stopped(err)
		}
		stepCursor = p.Problems.Cursor()
		if err := m.WriteJSONL(mf); err != nil {
			return err
		}
		tb.write(m, metricsEvent)
		fmt.Fprintln(p.Out, m.Line())
		if n := m.Aggregate.FittedPrompts; n > 0 && !warnedFitted {
			warnedFitted = true
			fmt.Fprintf(p.Warn, "spiral: warning: step %d: %d aggregation prompts passed %d tokens (the model's context less --max-new-tokens), so their candidates were cut to fit, keeping as much of each one's end as fits; metrics.jsonl's aggregate.fitted_prompts counts them at every step where any were, left out at 0 (--candidate-tokens caps candidates up front, a shorter --max-new-tokens leaves more room)\n",
				m.Step, n, tr.Config().Pipeline.PromptLimit)
		}
		if evalDue(tr.Step()) {
			if err := evaluate(); err != nil {
				return err
			}
		}
		if tr.Step()%cfg.CheckpointEvery == 0 || tr.Step() == cfg.Steps {
			if err := save(); err != nil {
				return err
			}
		}
		if tr.Step() == cfg.Steps && finalDue {
			if err := final(); err != nil {
				return err
			}
			finalDone = true
		}
	}
	// A run resumed at its last step whose final RSA evaluation was
	// interrupted (or never written, or is of another step or of other
	// held-out problems) has it done now.
	if finalDue && !finalDone && tr.Step() == cfg.Steps && !finalKept {
		if err := final(); err != nil {
			return err
		}
	}
	if err := warnNoUpdate(p.Warn, metricsPath, tr.Config(), p.Settings.nearGreedy()); err != nil {
		return err
	}
	// A run resumed at its last step took no step here: its plot may lack
	// the evaluation just redone, or be gone.
	if !plotted && tr.Step() > 0 {
		plot()
	}
	return tr.SyncHost() // the caller may export the weights
}

// recordedSettings are p.Settings as the run of cfg records them: with
// what its candidate cap counts (CandidateCap: where its steps' pipeline
// or, GRPO's, its final RSA caps candidates), without the aggregation
// template's fingerprint where nothing reads that template (GRPO's steps
// without a final RSA), and with the held-out problems it evaluates
// (HeldOut, nil for none).
func recordedSettings(cfg RunConfig, p RunParts) RunSettings {
	s := p.Settings
	s.CandidateCap = ""
	finalRSA := cfg.FinalRSA.Steps > 0 && len(p.Held) > 0
	if _, ok := s.Sampling[aggregateTemplateField]; ok && !readsPipeline(s.RL.Algo) && !finalRSA {
		s.Sampling = maps.Clone(s.Sampling)
		delete(s.Sampling, aggregateTemplateField)
	}
	if s.RL.Pipeline.CandidateTokens > 0 && (readsPipeline(s.RL.Algo) || finalRSA) {
		s.CandidateCap = report.CandidateCapText
	}
	s.HeldOut = nil
	if len(p.Held) > 0 && (cfg.EvalEvery > 0 || cfg.FinalRSA.Steps > 0) {
		s.HeldOut = &HeldOut{Data: p.HeldName, Path: p.HeldPath, Problems: len(p.Held), Digest: data.ProblemsDigest(p.Held)}
		if cfg.EvalEvery > 0 {
			s.HeldOut.Samples = cfg.EvalSamples
		}
	}
	return s
}

// CheckRunSettings refuses a rerun into cfg.Dir that Run's resume would
// refuse for its settings, p.Settings completed as Run records them, or
// for its problems, p.Problems: the newest checkpoint (whose state reads
// intact) records other settings (settingsDiff), or a data cursor of
// other usable problems (dataChange), and cfg.Override is not given; or
// it is of another model, data set or algorithm (recordedRun). This is
// said before the caller loads the policy, reading the model's weights
// (minutes, for a real model), which the refusal made wasted. p's
// Settings, Held, HeldName, HeldPath, CRLFTemplates and Problems are
// read. A directory without a checkpoint passes, as does any with
// cfg.Fresh or cfg.Override.
func CheckRunSettings(cfg RunConfig, p RunParts) error {
	if cfg.Fresh || cfg.Override {
		return nil
	}
	now := recordedSettings(cfg, p)
	return checkNewest(cfg.Dir, func(path string, st checkpoint.State) error {
		prev, err := recordedRun(cfg.Dir, path, st.Config, now)
		if err != nil {
			return err
		}
		diff, _ := resumedDiff(prev, now, p)
		if err := checkSettings(cfg.Dir, diff, false, io.Discard); err != nil {
			return err
		}
		var cur data.Cursor
		if json.Unmarshal(st.DataCursor, &cur) != nil {
			return nil // resume's to report
		}
		if changed, _ := dataChange(cur, p.Problems.Cursor(), now.Data); changed != "" {
			return otherProblems(path, changed)
		}
		return nil
	})
}

// CheckSettingsBeforeEngine refuses, as CheckRunSettings does, a rerun
// into cfg.Dir whose settings, p.Settings completed as Run records them,
// differ from the run's, in those known before the model's context is:
// train asks it before it waits for a serving engine (up to
// --engine-timeout), whose context may be below config.json's, so that
// another --seed or --lr is said at once. The settings that depend on
// that context are taken as the run's, for CheckRunSettings to compare
// once it is known: the longest prompt, the held-out problems that fit
// it (their data set, number and contents; their evaluations' samples
// are compared) and, where traceByContext (no --max-new-tokens given:
// its default is half the context), the trace length. p.Held are the
// held-out problems before they are fitted; p.Problems is not read. The
// run's model, data set, algorithm and LoRA setting are
// CheckRunIdentity's to compare, asked first. A directory without a
// checkpoint passes, as does any with cfg.Fresh or cfg.Override.
func CheckSettingsBeforeEngine(cfg RunConfig, p RunParts, traceByContext bool) error {
	if cfg.Fresh || cfg.Override {
		return nil
	}
	now := recordedSettings(cfg, p)
	return checkNewest(cfg.Dir, func(path string, st checkpoint.State) error {
		prev, err := recordedSettingsOf(cfg.Dir, path, st.Config)
		if err != nil {
			return err
		}
		known := now
		known.RL.Pipeline.PromptLimit = prev.RL.Pipeline.PromptLimit
		if traceByContext {
			field := strings.TrimPrefix(maxNewTokensKey, "sampling.")
			known.Sampling = maps.Clone(known.Sampling)
			delete(known.Sampling, field)
			if v, ok := prev.Sampling[field]; ok {
				known.Sampling[field] = v
			}
		}
		if prev.HeldOut != nil && known.HeldOut != nil {
			held := *prev.HeldOut
			held.Samples = known.HeldOut.Samples
			known.HeldOut = &held
		}
		diff, _ := resumedDiff(prev, known, p)
		return checkSettings(cfg.Dir, diff, false, io.Discard)
	})
}

// resumedDiff is the settings difference (settingsDiff, on p's
// SGLangListed) between the run's settings prev and now's, whose
// templates fingerprint taken as versions that kept CRLF line ends took
// it is p.CRLFTemplates ("" where no template file has them): a run
// that recorded that one is of these templates (crlf), not of others.
func resumedDiff(prev, now RunSettings, p RunParts) (diff []string, crlf bool) {
	crlf = p.CRLFTemplates != "" && prev.TemplatePrints().Both == p.CRLFTemplates
	if crlf {
		prev.Sampling = maps.Clone(prev.Sampling)
		prev.Sampling[templatesField] = now.Sampling[templatesField]
	}
	return servedSettingsDiff(prev, now, p.SGLangListed), crlf
}

// dataChange says how the usable problems of the data set name, whose
// cursor is now now, differ from those the run's data cursor cur drew
// from: in number, or as many with other contents (the file edited in
// place; cursors of older versions record no digest); changed says it
// for a refusal (otherProblems), overridden for --override's warning;
// both "" where they do not differ.
func dataChange(cur, now data.Cursor, name string) (changed, overridden string) {
	switch {
	case cur.Size != 0 && cur.Size != now.Size:
		return fmt.Sprintf("the run drew from %d usable problems and %s now has %d", cur.Size, name, now.Size),
			fmt.Sprintf("%s now has %d usable problems, not %d", name, now.Size, cur.Size)
	case cur.Digest != "" && cur.Digest != now.Digest:
		return fmt.Sprintf("the run drew from other problems than the %d usable ones %s now holds (the file changed)", now.Size, name),
			fmt.Sprintf("%s now holds other problems", name)
	}
	return "", ""
}

// otherProblems refuses to resume from the checkpoint at path, whose run
// drew from other problems (changed: dataChange's), without --override:
// an OtherRunError, as other held-out problems or the model's other
// contents are, the way on being other flags.
func otherProblems(path, changed string) error {
	return otherRun("checkpoint %s: %s: restore the file, rerun with --override to go on from a new epoch of it, or use another --out or --fresh", path, changed)
}

// finalWritten reports whether the rsa.json at path is the final RSA
// evaluation of the run's step on the held-out problems of digest with
// the RSA settings rsa and the meta.extra extra (RunParts.ReportExtra):
// not one that is missing or does not read, nor one of an earlier step
// (a run continued past it with --final-rsa-steps 0, which removes
// none), of other problems (a finished run resumed under --override
// onto others) or of other settings (one rerun under --override with
// another --temperature or --candidate-tokens, or with another
// --final-rsa-steps: sameFinalSettings). One of an older version, which
// names no checkpoint or records no digest, is taken as the step's.
func finalWritten(path string, step int, digest string, rsa rollout.RSAConfig, extra map[string]string) bool {
	var rep report.RSA
	if report.ReadJSON(path, &rep) != nil {
		return false
	}
	m := rep.Meta
	if strings.Contains(m.Model, "@") && !strings.HasSuffix(m.Model, "/"+checkpoint.DirName(int64(step))) {
		return false
	}
	if m.ProblemsDigest != "" && m.ProblemsDigest != digest {
		return false
	}
	return sameFinalSettings(rep, rsa, extra)
}

// sameFinalSettings reports whether the final RSA report rep records the
// RSA settings rsa and the meta.extra extra that the run's final RSA
// records now. Left out of extra are the template files' entries, which
// name each file as given (relative to the directory the run was
// started in), whose contents its "templates" fingerprints, and
// report.CandidateCapKey, which report.NewRSA adds where candidates were
// cut (rsa's CandidateTokens is the cap). What a report of an older
// version does not record (an extra key, its config's prompt limit) is
// taken as now's.
func sameFinalSettings(rep report.RSA, rsa rollout.RSAConfig, extra map[string]string) bool {
	got := rep.Config
	if got.PromptLimit == 0 {
		got.PromptLimit = rsa.PromptLimit
	}
	if got != rsa {
		return false
	}
	for k, v := range rep.Meta.Extra {
		if k == "search_template" || k == "aggregate_template" || k == report.CandidateCapKey {
			continue
		}
		if now, ok := extra[k]; ok && now != v {
			return false
		}
	}
	return true
}

// FinalRSASeedOffset sets the final RSA evaluation's random streams
// apart from the training's: it samples with the run's seed plus this,
// the seed its report records (what spiral eval --seed takes to repeat it).
const FinalRSASeedOffset = 0x75a

// finalSummary runs cfg.FinalRSA on the held-out problems, writes it to
// FinalRSAFile and prints the held-out summary line. p.Settings.HeldOut
// names those problems (Run sets it before any evaluation).
func finalSummary(ctx context.Context, cfg RunConfig, p RunParts, tr *Trainer) error {
	if _, err := tr.SyncEngine(ctx); err != nil {
		return err
	}
	seed := tr.Config().Seed + FinalRSASeedOffset
	res, err := p.Evaluator.RSA(ctx, p.Held, cfg.FinalRSA, seed)
	if err == nil {
		err = tr.CheckEngine(ctx) // an engine restarted meanwhile answered from other weights
	}
	if err != nil {
		return fmt.Errorf("final RSA evaluation: %w", err)
	}
	// The weights evaluated are the last step's, named as eval names a
	// checkpoint it reads (RUN/ckpt-N), not the model the run started
	// from.
	ckpt := filepath.Join(cfg.Dir, CheckpointsDir, checkpoint.DirName(int64(tr.Step())))
	model := p.Model + "@" + CheckpointName(ckpt)
	// The checkpoint's fingerprint, as eval records it
	// (checkpoint.State.Digest; none where the checkpoint cannot
	// be read: the report does not need it).
	st, _ := checkpoint.ReadState(ckpt)
	meta := report.Meta{Model: model, Label: tr.Config().Algo, CheckpointDigest: st.Digest(), Dataset: p.HeldName,
		Problems: len(p.Held), Seed: seed, Timestamp: time.Now().UTC(), Extra: p.ReportExtra,
		ProblemIDs: report.ProblemIDs(p.Held), ProblemsDigest: p.Settings.HeldOut.Digest}
	rsaPath := filepath.Join(cfg.Dir, FinalRSAFile)
	if err := report.WriteJSON(rsaPath, report.NewRSA(meta, res)); err != nil {
		return err
	}
	if note := res.FittedNote(len(p.Held), rsaPath); note != "" {
		fmt.Fprintf(p.Warn, "spiral: note: final RSA: %s\n", note)
	}
	// pass@1 first -> last compares evaluations of these problems alone:
	// an --override onto other held-out problems left others before
	// them (lines of older versions record no digest: counted).
	var first, last *EvalLine
	others := 0
	err = readJSONLines(filepath.Join(cfg.Dir, EvalFile), func(b []byte) error {
		e, err := decodeEvalLine(b)
		if err != nil {
			return err
		}
		if e.Digest != "" && e.Digest != p.Settings.HeldOut.Digest {
			others++
			return nil
		}
		if first == nil || e.Step < first.Step {
			first = &e
		}
		if last == nil || e.Step >= last.Step {
			last = &e
		}
		return nil
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	line := "held-out summary:"
	if first == nil && others > 0 {
		line += fmt.Sprintf(" no pass@1 (%s's %s, of other held-out problems, left out),", EvalFile, rollout.Plural(others, "evaluation"))
	}
	if first != nil {
		left := ""
		if others > 0 {
			left = fmt.Sprintf("; %d of %s's evaluations, on other held-out problems, left out", others, EvalFile)
		}
		if first.Step == last.Step {
			line += fmt.Sprintf(" pass@1 %.3f (step %d%s),", last.Points[0].PassAtK, last.Step, left)
		} else {
			line += fmt.Sprintf(" pass@1 %.3f -> %.3f (step %d -> %d%s),", first.Points[0].PassAtK, last.Points[0].PassAtK, first.Step, last.Step, left)
		}
	}
	s0, sT := res.Steps[0], res.Steps[len(res.Steps)-1]
	line += fmt.Sprintf(" RSA (N=%d, K=%d) accuracy %.3f -> %.3f over %s, majority %.3f -> %.3f (%s; %s)",
		cfg.FinalRSA.Population, cfg.FinalRSA.SubsetSize, s0.Accuracy, sT.Accuracy, rollout.Plural(sT.Step, "step"), s0.Majority, sT.Majority,
		rollout.Plural(len(p.Held), "problem"), rsaPath)
	fmt.Fprintln(p.Out, line)
	return nil
}

// resume loads the newest intact checkpoint of the run, if any, into the
// weights, the optimiser, the data stream and the trainer's step count,
// after checking that it is a run of the same model and data with the
// same settings (other settings pass with cfg.Override), and where the
// rollouts' random streams lie from the resumed step on (the run's, or
// after them when --draw-rounds changed). It returns the held-out
// problems the checkpoint recorded (nil when none).
func resume(ctx context.Context, cfg RunConfig, p RunParts) (*HeldOut, error) {
	path, st, err := resumeNewest(ctx, cfg.Dir, p.Settings.LoRA, p.Settings.selection(), p.Weights, p.Optimizer, p.Warn, func(path string) error {
		st, err := checkpoint.ReadState(path)
		if err != nil {
			return nil
		}
		prev, err := recordedRun(cfg.Dir, path, st.Config, p.Settings)
		if err != nil {
			return err
		}
		return otherSelection(cfg.Dir, selectionKey, prev.selection(), p.Settings.selection())
	})
	switch {
	case errors.Is(err, checkpoint.ErrNoCheckpoint):
		return nil, nil
	case err != nil:
		return nil, err
	}
	prev, err := recordedRun(cfg.Dir, path, st.Config, p.Settings)
	if err != nil {
		return nil, err
	}
	// The same template files, which this version reads with LF line
	// ends: the run goes on, recording their new fingerprint.
	diff, crlf := resumedDiff(prev, p.Settings, p)
	if err := checkSettings(cfg.Dir, diff, cfg.Override, p.Warn); err != nil {
		return nil, err
	}
	if crlf {
		fmt.Fprintf(p.Warn, "spiral: note: the prompt templates' files have CRLF line ends, which the run's steps up to %d kept in their prompts; they read as LF now\n", st.Step)
	}
	warnOtherHeldOut(p.Warn, prev.HeldOut, p.Settings.HeldOut, int(st.Step))
	if prev.CandidateCap == "" && p.Settings.CandidateCap != "" && prev.RL.Pipeline.CandidateTokens > 0 && readsPipeline(prev.RL.Algo) {
		fmt.Fprintf(p.Warn, "spiral: note: the run's steps up to %d capped aggregation candidates at --candidate-tokens %d counting a stopped candidate's closing <|im_end|> too (a version from before the cap counted tokens of text alone); from here on such a candidate keeps one more token of its text\n",
			st.Step, prev.RL.Pipeline.CandidateTokens)
	}
	var cur data.Cursor
	if err := json.Unmarshal(st.DataCursor, &cur); err != nil {
		return nil, fmt.Errorf("checkpoint %s: data cursor: %w", path, err)
	}
	// A position in other problems means nothing.
	now := p.Problems.Cursor()
	if changed, overridden := dataChange(cur, now, p.Settings.Data); changed != "" {
		if !cfg.Override {
			return nil, otherProblems(path, changed)
		}
		fmt.Fprintf(p.Warn, "spiral: --override: %s: going on from the start of a new epoch of it\n", overridden)
		cur = data.Cursor{Epoch: cur.Epoch + 1, Seed: cur.Seed, Size: now.Size, Digest: now.Digest}
	}
	// Another --seed (only with --override: it is a setting) orders the
	// problems as it orders the rollouts: from the start of a new epoch
	// of its order, since the rest of this one in the new order would
	// repeat some problems and skip others.
	if cur.Seed != now.Seed {
		fmt.Fprintf(p.Warn, "spiral: --override: --seed %d, not %d: the problems go on from the start of a new epoch in its order\n", now.Seed, cur.Seed)
		if cur.Position > 0 {
			cur.Epoch++
		}
		cur.Position, cur.Seed = 0, now.Seed
	}
	if err := p.Problems.Restore(cur); err != nil {
		return nil, fmt.Errorf("checkpoint %s: %w", path, err)
	}
	p.Trainer.SetStep(int(st.Step))
	var streams DrawStreams
	if prev.DrawStreams != nil {
		streams = *prev.DrawStreams
	}
	if stride := prev.RL.MaxDrawRounds; stride != p.Settings.RL.MaxDrawRounds {
		streams = streams.NextDrawStreams(int(st.Step), stride)
	}
	p.Trainer.SetDrawStreams(streams)
	fmt.Fprintf(p.Out, "resumed from %s (step %d)\n", path, st.Step)
	return prev.HeldOut, nil
}

// recordedRun returns the run settings that config, recorded in the
// checkpoint at path of the run in dir, holds (recordedSettingsOf),
// refusing a run of spiral sft, or of another model, data set or
// algorithm than now.
func recordedRun(dir, path string, config json.RawMessage, now RunSettings) (RunSettings, error) {
	prev, err := recordedSettingsOf(dir, path, config)
	if err != nil {
		return RunSettings{}, err
	}
	if !sameModel(prev.Model, prev.ModelID, now.Model, now.ModelID) || !sameTrainingData(prev, now) || prev.RL.Algo != now.RL.Algo {
		// A model replaced at its path (an sft --overwrite, an export
		// again) has the run's name: its content id says what differs.
		prevModel, nowModel, prevData, nowData, changed := prev.Model, now.Model, prev.Data, now.Data, ""
		if prev.Model == now.Model && !sameModel(prev.Model, prev.ModelID, now.Model, now.ModelID) {
			prevModel = fmt.Sprintf("%s (model id %.12s)", prev.Model, prev.ModelID)
			nowModel = fmt.Sprintf("%s (model id %.12s)", now.Model, now.ModelID)
			changed = ": the model's contents changed"
		}
		if prev.Data == now.Data && !sameTrainingData(prev, now) {
			// A relative --data given from another directory: its files.
			prevData = fmt.Sprintf("%s (%s)", prev.Data, prev.DataPath)
			nowData = fmt.Sprintf("%s (%s)", now.Data, now.DataPath)
			changed += ": another file of that name"
		}
		return RunSettings{}, otherRun("%s holds a run of %s on %s (%s); this one is %s on %s (%s)%s: use another --out, or --fresh",
			dir, prevModel, prevData, prev.RL.Algo, nowModel, nowData, now.RL.Algo, changed)
	}
	return prev, nil
}

// recordedSettingsOf returns the run settings that config, recorded in
// the checkpoint at path of the run in dir, holds, refusing a run of
// spiral sft; LoRA targets in their canonical order.
func recordedSettingsOf(dir, path string, config json.RawMessage) (RunSettings, error) {
	var prev RunSettings
	if err := json.Unmarshal(config, &prev); err != nil {
		return RunSettings{}, fmt.Errorf("checkpoint %s: run settings: %w (use another --out, or --fresh)", path, err)
	}
	var sft struct {
		SFT *SFTConfig `json:"sft"`
	}
	if json.Unmarshal(config, &sft) == nil && sft.SFT != nil {
		return RunSettings{}, otherRun("%s holds checkpoints of spiral sft, not of train: use another --out, or --fresh", dir)
	}
	if prev.LoRA != nil { // targets saved in the order given, by older versions
		c := prev.LoRA.Canonical()
		prev.LoRA = &c
	}
	return prev, nil
}

// sameTrainingData reports whether a checkpoint's training problems
// (prev) are the rerun's: by name or file (sameData), or by content id
// (DataID) where the checkpoint records one, for the file moved. A file
// edited in place keeps its name: its other contents are the data
// cursor's to notice (resume), which --override lets go on from a new
// epoch of it. The name alone is not the file where both record their
// files and contents: a relative --data given from another directory
// that names another file of other problems is another data set.
func sameTrainingData(prev, now RunSettings) bool {
	if prev.DataID != "" && prev.DataID == now.DataID {
		return true
	}
	return sameDataFile(prev, now, now.DataID != "")
}

// sameDataFile is sameTrainingData less the content ids' match: whether
// the names and files of the data sets say they are one, where nowID
// says whether now records a content id.
func sameDataFile(prev, now RunSettings, nowID bool) bool {
	if prev.Data == now.Data && prev.DataPath != "" && now.DataPath != "" && prev.DataID != "" && nowID {
		return sameFile(prev.DataPath, now.DataPath)
	}
	return sameData(prev.Data, prev.DataPath, now.Data, now.DataPath)
}

// otherHeldOutFile reports whether the held-out problems now, of the
// run's --eval-data name, are another file of other problems than prev
// (a relative path given from another directory), which only both
// files tell apart, as recordedRun tells the training data's apart.
func otherHeldOutFile(prev, now *HeldOut) bool {
	return prev != nil && now != nil && prev.Data == now.Data && prev.Path != "" && now.Path != "" &&
		otherHeldOut(prev, now) && !sameFile(prev.Path, now.Path)
}

// otherHeldOut reports whether the held-out problems now are others than
// prev's, by digest, where both record them.
func otherHeldOut(prev, now *HeldOut) bool {
	return prev != nil && now != nil && prev.Digest != "" && now.Digest != "" && prev.Digest != now.Digest
}

// heldOutName names the held-out problems h as --eval-data gave them,
// with their file where file (the name alone would not tell two files
// apart: otherHeldOutFile).
func heldOutName(h *HeldOut, file bool) string {
	if file {
		return fmt.Sprintf("%s (%s)", h.Data, h.Path)
	}
	return h.Data
}

// warnOtherHeldOut warns to w, a resume at step past --override, that
// the held-out problems now are others than the run's (prev), naming
// both: eval.jsonl's figures up to step and after it measure different
// problems.
func warnOtherHeldOut(w io.Writer, prev, now *HeldOut, step int) {
	if !otherHeldOut(prev, now) {
		return
	}
	file := otherHeldOutFile(prev, now)
	fmt.Fprintf(w, "spiral: --override: the held-out problems are others than the run's (%s, %s, not %s, %s): eval.jsonl's held-out figures up to step %d and those after it are on different problems, not one curve\n",
		heldOutName(now, file), rollout.Plural(now.Problems, "problem"), heldOutName(prev, file), rollout.Plural(prev.Problems, "problem"), step)
}

// selection is the --train and --freeze choice s records (Sampling's
// selectionKey), "" when it records none.
func (s RunSettings) selection() string {
	sel, _ := s.Sampling[strings.TrimPrefix(selectionKey, "sampling.")].(string)
	return sel
}

// nearGreedyAtMost is the largest --temperature and --top-p that
// NearGreedy names: at 0.1 a token half as probable as the most probable
// is drawn about a thousandth as often, and a top-p keeps the most
// probable token alone wherever it holds a tenth of the mass.
const nearGreedyAtMost = 0.1

// NearGreedy names the sampling settings that draw (nearly) only the
// most probable token, as the flags give them: --top-k 1 (greedy but for
// ties), and a --temperature or --top-p of at most nearGreedyAtMost
// (a NaN, none recorded, is not); "" for none. train warns of them at
// the start of a run, and the run's closing warning names them.
func NearGreedy(temperature, topP float64, topK int) string {
	var set []string
	if temperature <= nearGreedyAtMost {
		set = append(set, fmt.Sprintf("--temperature %g", temperature))
	}
	if topP <= nearGreedyAtMost {
		set = append(set, fmt.Sprintf("--top-p %g", topP))
	}
	if topK == 1 {
		set = append(set, "--top-k 1")
	}
	return strings.Join(set, ", ")
}

// nearGreedy is NearGreedy of the sampling settings s records ("" for
// none recorded).
func (s RunSettings) nearGreedy() string {
	number := func(name string) float64 {
		switch v := s.Sampling[name].(type) {
		case float64:
			return v
		case int:
			return float64(v)
		}
		return math.NaN()
	}
	topK := 0 // none recorded: all tokens
	if k := number("top_k"); !math.IsNaN(k) {
		topK = int(k)
	}
	return NearGreedy(number("temperature"), number("top_p"), topK)
}

// WarnSkippedCheckpoints writes one warning to w for each checkpoint that
// checkpoint.Resume, Newest or Pick skipped as damaged, with why (the
// errors name the file at fault): what train prints when it resumes, and
// eval, generate and export when given a run's checkpoints/ directory.
func WarnSkippedCheckpoints(w io.Writer, skipped []error) {
	for _, e := range skipped {
		fmt.Fprintf(w, "spiral: skipped a damaged checkpoint: %v\n", e)
	}
}

// loraString describes a run's LoRA setting, its targets as a set.
func loraString(l *lmgraph.LoRA) string {
	if l == nil || !l.Enabled() {
		return "full fine-tuning"
	}
	return l.Canonical().String()
}

// trainedString describes what a run trains: its LoRA setting
// (loraString), or, without LoRA, the model's own parameters that its
// --train and --freeze selection (lmgraph.Selection.String) chose,
// "full fine-tuning" where it chose every one.
func trainedString(l *lmgraph.LoRA, selection string) string {
	if l != nil && l.Enabled() {
		return loraString(l)
	}
	sel, err := lmgraph.ParseSelection(selection)
	if err != nil {
		return fmt.Sprintf("fine-tuning of the model's own parameters (%s)", selection)
	}
	if flags := sel.Flags(); flags != "" {
		return fmt.Sprintf("fine-tuning of the model's own parameters (%s)", flags)
	}
	return loraString(l)
}

// settingsDiff lists the settings that differ between a and b as
// "path (flags): old -> new", with paths of their JSON form and the
// flags that set them ("rl.pipeline.n1 (--n1)", "schedule.peak_lr
// (--lr)": withFlags), leaving out those b's
// algorithm does not read (ignoredFields: GRPO's pipeline, the others'
// group), but GRPO's --candidate-tokens where a final RSA caps
// candidates: b's (it records a CandidateCap), or a's where b caps none.
// One's tokenizer is taken as the other's where it is the other's
// TokenizerBytes (sameTokenizer).
func settingsDiff(a, b RunSettings) []string {
	return servedSettingsDiff(a, b, 0)
}

// sglangNote says why a run that a version before 2026-12-07 started
// on an SGLang recorded a prompt limit, or a default trace length, one
// more than now: SGLang's context, which it fitted to, is one position
// less since (rollout.OpenAI.CheckModel).
const sglangNote = "SGLang's context is taken one position shorter than it serves since spiral of 2026-12-07, as SGLang refuses a request that fills it: --override continues"

// servedSettingsDiff is settingsDiff, b's model served by an SGLang
// that lists the context sglangListed (RunParts.SGLangListed; 0: none):
// a's prompt limit one more than b's, or a's trace length the default
// half of that context where b's is half of one less (a version before
// 2026-12-07 fitted to the listed context), is said with sglangNote.
func servedSettingsDiff(a, b RunSettings, sglangListed int) []string {
	a.Tokenizer, b.Tokenizer = sameTokenizer(a.Tokenizer, a.TokenizerBytes, b.Tokenizer, b.TokenizerBytes)
	a.TokenizerBytes, b.TokenizerBytes = "", ""
	// 0 aggregation rounds are 1 (runs from before --agg-rounds recorded
	// none).
	a.RL.Pipeline.Rounds, b.RL.Pipeline.Rounds = a.RL.Pipeline.AggregationRounds(), b.RL.Pipeline.AggregationRounds()
	diff := flatDiff(a, b, func(k string, fa, fb map[string]string) string {
		if k == "model" || k == "model_id" || k == "data" || k == "data_path" || k == "data_id" || k == heldOutPathKey || strings.HasPrefix(k, drawStreamsPrefix) {
			return "" // draw_streams: placed by resume, not a setting
		}
		if k == heldOutDataKey && (sameData(flatString(fa[k]), flatString(fa[heldOutPathKey]), flatString(fb[k]), flatString(fb[heldOutPathKey])) ||
			fa[heldOutDigestKey] != "" && fa[heldOutDigestKey] == fb[heldOutDigestKey]) {
			// The same file, given from another directory, or another
			// file of the same problems (moved, copied), as the training
			// data's (sameTrainingData).
			return ""
		}
		if strings.HasPrefix(k, heldOutPrefix) && (fa[k] == "" || fb[k] == "") {
			// A run that evaluated nothing, or saved before held_out was
			// recorded, mixes no held-out problem sets.
			return ""
		}
		if k == "rl.pipeline.candidate_tokens" && !readsPipeline(b.RL.Algo) && (b.CandidateCap != "" || fa[candidateCapKey] != "" && b.RL.Pipeline.CandidateTokens == 0) {
			// GRPO's final RSA caps candidates: now's (b records what
			// its cap counts), or the run's, now uncapped.
			return withFlags(k)
		}
		if slices.ContainsFunc(ignoredFields(b.RL.Algo), func(f string) bool { return strings.HasPrefix(k, "rl."+f) }) {
			return "" // a setting the algorithm does not read
		}
		if k == tokenizerKey && (fa[k] == "" || fb[k] == "") {
			return "" // saved before it was recorded
		}
		if k == templatesKey && (fa[k] == "" || fb[k] == "" || fa[searchTemplateKey] != "" && fb[searchTemplateKey] != "") {
			// Saved before the templates were recorded; or both record
			// each template's own fingerprint, which say it.
			return ""
		}
		if (k == searchTemplateKey || k == aggregateTemplateKey) && (fa[k] == "" || fb[k] == "") {
			// Saved before each template's was recorded ("templates"
			// says it), or a run that reads no aggregation template
			// (recordedSettings).
			return ""
		}
		if k == candidateCapKey && (fa[k] == "" || fb[k] == "") {
			// Saved before it was recorded (resume notes the change), or
			// nothing capped: rl.pipeline.candidate_tokens says it.
			return ""
		}
		if k == promptLimitKey {
			// Derived: the model's context less --max-new-tokens, whose
			// own difference says it.
			if fa[maxNewTokensKey] != fb[maxNewTokensKey] {
				return ""
			}
			if was, is := a.RL.Pipeline.PromptLimit, b.RL.Pipeline.PromptLimit; sglangListed > 0 && was == is+1 {
				return k + " (the model's context less --max-new-tokens; " + sglangNote + ")"
			}
			return k + " (the model's context less --max-new-tokens)"
		}
		if k == maxNewTokensKey && sglangListed > 0 && fa[k] == strconv.Itoa(sglangListed/2) && fb[k] == strconv.Itoa((sglangListed-1)/2) {
			return k + " (--max-new-tokens, by default half the context; " + sglangNote + ")"
		}
		return withFlags(k)
	})
	if otherHeldOutFile(a.HeldOut, b.HeldOut) {
		// The run's --eval-data name, which flatDiff sees as the same,
		// naming another file of other problems: both files, in the
		// held-out data's place among the keys.
		i := slices.IndexFunc(diff, func(d string) bool { return d > heldOutDataKey })
		if i < 0 {
			i = len(diff)
		}
		diff = slices.Insert(diff, i, fmt.Sprintf("%s: %q (%s) -> %q (%s): another file of that name",
			withFlags(heldOutDataKey), a.HeldOut.Data, a.HeldOut.Path, b.HeldOut.Data, b.HeldOut.Path))
	}
	return diff
}

// sameTokenizer returns the tokenizer fingerprints a and b that two
// runs record (RunSettings.Tokenizer, SFTSettings.Tokenizer), with
// aBytes and bBytes, their TokenizerBytes, one taken as the other where
// it is the other's TokenizerBytes: the fingerprint that versions before
// tokenizer.Fingerprint read tokenizer.json's content took of the same
// file.
func sameTokenizer(a, aBytes, b, bBytes string) (string, string) {
	if a != "" && a == bBytes {
		return b, b
	}
	if b != "" && b == aBytes {
		return a, a
	}
	return a, b
}

// flatString is the string a flattened setting (flatDiff's JSON text)
// holds; "" for one not recorded.
func flatString(v string) string {
	var s string
	_ = json.Unmarshal([]byte(v), &s)
	return s
}

// Keys of RunSettings as settingsDiff flattens them: the longest prompt
// and --max-new-tokens, of which it is the model's context less, the
// --train and --freeze selection, the prompt templates' fingerprint, the
// tokenizer's, the prefix of the held-out problems' keys, their digest
// and their evaluations' samples.
const (
	promptLimitKey    = "rl.pipeline.prompt_limit"
	selectionKey      = "sampling.selection"
	templatesKey      = "sampling.templates"
	templatesField    = "templates" // templatesKey in RunSettings.Sampling
	tokenizerKey      = "tokenizer"
	candidateCapKey   = "candidate_cap"
	maxNewTokensKey   = "sampling.max_new_tokens"
	heldOutPrefix     = "held_out."
	heldOutDataKey    = "held_out.data"
	heldOutPathKey    = "held_out.path"
	heldOutDigestKey  = "held_out.digest"
	heldOutSamplesKey = "held_out.samples"
	drawStreamsPrefix = "draw_streams."
)

// Keys of each prompt template's own fingerprint (TemplatePrints), as
// settingsDiff flattens them and in RunSettings.Sampling.
const (
	searchTemplateKey      = "sampling.search_template"
	searchTemplateField    = "search_template"
	aggregateTemplateKey   = "sampling.aggregate_template"
	aggregateTemplateField = "aggregate_template"
)

// CheckpointSettings returns the run settings recorded in the checkpoint
// at path (state.json, checked against model.safetensors:
// checkpoint.ReadCheckedState), for checking that it belongs to a model.
func CheckpointSettings(path string) (RunSettings, error) {
	st, err := checkpoint.ReadCheckedState(path)
	if err != nil {
		return RunSettings{}, err
	}
	var s RunSettings
	if err := json.Unmarshal(st.Config, &s); err != nil {
		return RunSettings{}, fmt.Errorf("checkpoint %s: run settings: %w", path, err)
	}
	return s, nil
}

// CheckpointSelection is the --train and --freeze choice
// (lmgraph.Selection.String) of the run, train's or sft's, that wrote
// the checkpoint at path, whose checkpoints hold the parameters it
// trains only: train records it in its sampling settings (selectionKey),
// sft as its own setting (SFTSettings.Selection). "" where it records
// none: sft's before 2026-12-06 (c7b9317), whose tensors then say which
// parameters it trained (lmgraph.SelectionOf).
func CheckpointSelection(path string) (string, error) {
	st, err := checkpoint.ReadCheckedState(path)
	if err != nil {
		return "", err
	}
	var s struct {
		Selection string         `json:"selection"`
		Sampling  map[string]any `json:"sampling"`
	}
	if err := json.Unmarshal(st.Config, &s); err != nil {
		return "", fmt.Errorf("checkpoint %s: run settings: %w", path, err)
	}
	if s.Selection != "" {
		return s.Selection, nil
	}
	return RunSettings{Sampling: s.Sampling}.selection(), nil
}

// heldOutEval reports pass@1 and majority@k on the held-out problems (k
// samples each at the training sampler's settings) to Out, eval.jsonl
// (w) and the TensorBoard log tb (when there is one); the line records
// p.Settings.HeldOut's digest (Run sets it before any evaluation) and
// sync, the serving engine's weight sync done for it; checkEngine
// (Trainer.CheckEngine) runs before anything is reported.
func heldOutEval(ctx context.Context, p RunParts, k, step int, seed uint64, sync EngineSync, w io.Writer, tb *tensorBoardLog, checkEngine func(context.Context) error) error {
	ks := []int{1}
	if k > 1 {
		ks = append(ks, k)
	}
	res, err := p.Evaluator.PassAtK(ctx, p.Held, rollout.PassAtKConfig{Samples: k, Ks: ks}, seed+0x5eed)
	if err == nil {
		err = checkEngine(ctx) // an engine restarted meanwhile answered from other weights
	}
	if err != nil {
		return fmt.Errorf("held-out evaluation at step %d: %w", step, err)
	}
	line := fmt.Sprintf("eval %3d  held-out pass@1 %.3f", step, res.Points[0].PassAtK)
	if last := res.Points[len(res.Points)-1]; last.K > 1 {
		line += fmt.Sprintf("  pass@%d %.3f  majority@%d %.3f", last.K, last.PassAtK, last.K, last.MajorityAtK)
	}
	fmt.Fprintf(p.Out, "%s  (%s)\n", line, rollout.Plural(len(p.Held), "problem"))
	e := EvalLine{Step: step, Problems: len(p.Held), Samples: k, Points: res.Points, Digest: p.Settings.HeldOut.Digest,
		SyncSeconds: sync.Seconds, SyncDeviceCopyBytes: sync.DeviceCopyBytes}
	if err := writeJSONLine(w, e); err != nil {
		return err
	}
	tb.write(e, evalEvent)
	return nil
}

// EvalLine is one line of eval.jsonl. Digest fingerprints the held-out
// problems (data.ProblemsDigest, as eval reports record it); lines
// written by older versions have none. SyncSeconds and
// SyncDeviceCopyBytes are the serving engine's weight sync done before
// the evaluation sampled (EngineSync; absent when there was none: the
// local engine, or an engine that had the weights), which the next
// step's sync_seconds does not count again.
type EvalLine struct {
	Step                int              `json:"step"`
	Problems            int              `json:"problems"`
	Samples             int              `json:"samples"`
	Points              []rollout.KPoint `json:"points"`
	Digest              string           `json:"problems_digest,omitempty"`
	SyncSeconds         float64          `json:"sync_seconds,omitempty"`
	SyncDeviceCopyBytes int64            `json:"sync_device_copy_bytes,omitempty"`
}

// decodeEvalLine reads b, a line of eval.jsonl, refusing its points
// where they are no held-out evaluation's (checkPoints).
func decodeEvalLine(b []byte) (EvalLine, error) {
	var e EvalLine
	if err := json.Unmarshal(b, &e); err != nil {
		return EvalLine{}, err
	}
	return e, e.checkPoints()
}

// checkPoints refuses e's points where they are not as train logs them
// (a damaged or edited log), naming the field: none (every version of
// train logged pass@1 at least, so a line without it is another tool's,
// which was read as no evaluation), the first not k = 1, which the
// readers take for pass@1, k not increasing, or a pass@k or majority@k
// outside [0, 1], as an eval report's are refused.
func (e EvalLine) checkPoints() error {
	if len(e.Points) == 0 {
		return errors.New(`no "points": want the held-out pass@k, k = 1 first, as train logs them: another tool's log?`)
	}
	for i, p := range e.Points {
		switch {
		case i == 0 && p.K != 1:
			return fmt.Errorf("points[0].k = %d: want 1 (pass@1 first), as train logs them", p.K)
		case i > 0 && p.K <= e.Points[i-1].K:
			return fmt.Errorf("points[%d].k = %d after points[%d].k = %d: want k increasing", i, p.K, i-1, e.Points[i-1].K)
		}
		for _, f := range []struct {
			field string
			v     float64
		}{{"pass_at_k", p.PassAtK}, {"majority_at_k", p.MajorityAtK}} {
			if !(f.v >= 0 && f.v <= 1) {
				return fmt.Errorf("points[%d].%s = %g: want a fraction in [0, 1]", i, f.field, f.v)
			}
		}
	}
	return nil
}

// setAsideUnresumed moves aside (moveAside) the logs of the run in dir
// when they log completed steps (lines past step 0) that no checkpoint
// was left to resume (its checkpoints/ removed, or the run stopped
// before its first checkpoint), with the files that go with them
// (others: a train run's plot, final RSA evaluation and TensorBoard
// events, an sft run's events), as --fresh moves them, and says where
// to warn: the rerun starts over, and emptying the logs lost a
// finished run's without a word. The checkpoints/ directory stays.
// logs are train's metrics.jsonl and eval.jsonl, or sft's partial log.
func setAsideUnresumed(dir string, logs, others []string, warn io.Writer) error {
	last := 0
	for _, log := range logs {
		logged, err := loggedSteps(filepath.Join(dir, log))
		if err != nil {
			return err
		}
		for s := range logged {
			last = max(last, s)
		}
	}
	if last == 0 {
		return nil
	}
	moved, err := moveAside(dir, append(slices.Clip(logs), others...))
	if err != nil {
		return fmt.Errorf("rl: %s logs steps that no checkpoint holds: setting them aside to start over: %w", dir, err)
	}
	fmt.Fprintf(warn, "spiral: note: %s logs training up to step %d but holds no checkpoint to resume it from (%s/ removed, or the run stopped before its first): this run starts over; those logs are in %s\n",
		dir, last, CheckpointsDir, moved)
	return nil
}

// moveAside moves the named entries of dir that exist into
// dir/previous-<UTC time>/ (a fresh name each time), never deleting them,
// and returns that directory ("" when there was nothing to move). They
// are gathered in dir/.previous-pending and that is renamed at once, so
// that a process killed within the moves leaves no previous-* holding
// part of the run: the next lock of dir (LockRun) puts them back
// (restoreAside), and a rerun with --fresh sets the run aside whole. One
// that fails puts them back itself.
func moveAside(dir string, names []string) (string, error) {
	pending := filepath.Join(dir, AsidePendingDir)
	staged := false
	for _, n := range names {
		src := filepath.Join(dir, n)
		if _, err := os.Stat(src); errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if !staged {
			if err := os.Mkdir(pending, 0o777); err != nil {
				return "", err
			}
			staged = true
		}
		if err := os.Rename(src, filepath.Join(pending, n)); err != nil {
			return "", errors.Join(fmt.Errorf("move %s aside: %w", src, err), restoreAside(dir))
		}
	}
	if !staged {
		return "", nil
	}
	dst := previousDir(dir)
	if err := os.Rename(pending, dst); err != nil {
		return "", errors.Join(fmt.Errorf("move the previous run to %s: %w", dst, err), restoreAside(dir))
	}
	return dst, nil
}

// AsidePending says, for an entry name missing from the run directory
// dir, where it is: in dir/.previous-pending, where a --fresh (or a
// rerun that started over) killed while it set the run aside
// (moveAside) left it, and which the next
// lock of dir (LockRun: train, sft, tensorboard) puts back; "" when that
// holds no such entry. Readers that take no lock (compare --run, eval
// --checkpoint) say it beside the entry they miss.
func AsidePending(dir, name string) string {
	pending := filepath.Join(dir, AsidePendingDir)
	if _, err := os.Lstat(filepath.Join(pending, name)); err != nil {
		return ""
	}
	return fmt.Sprintf("a --fresh (or a rerun that started over) killed while it set the run aside left it in %s, which the next train, sft or tensorboard there puts back", pending)
}

// previousDir names a new dir/previous-<UTC time>, with a random suffix
// when one of that second is there.
func previousDir(dir string) string {
	dst := filepath.Join(dir, previousPattern+time.Now().UTC().Format("20060102T150405"))
	if _, err := os.Stat(dst); err == nil {
		dst += fmt.Sprintf("-%04d", rand.IntN(10000))
	}
	return dst
}

// restoreAside puts back into dir the entries that a moveAside killed
// before its rename left in dir/.previous-pending: that run was not set
// aside, and its files are where a rerun resumes or sets it aside from.
// An entry whose name dir holds again (written since by another hand)
// is not put over it: the pending directory then becomes a previous-*,
// never deleted.
func restoreAside(dir string) error {
	pending := filepath.Join(dir, AsidePendingDir)
	entries, err := os.ReadDir(pending)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("rl: read the previous run a killed --fresh was moving aside: %w", err)
	}
	kept := false
	for _, e := range entries {
		dst := filepath.Join(dir, e.Name())
		if _, err := os.Lstat(dst); err == nil {
			kept = true
			continue
		}
		if err := os.Rename(filepath.Join(pending, e.Name()), dst); err != nil {
			return fmt.Errorf("rl: put back %s, which a killed --fresh was moving aside: %w", dst, err)
		}
	}
	if kept {
		if err := os.Rename(pending, previousDir(dir)); err != nil {
			return fmt.Errorf("rl: keep %s: %w", pending, err)
		}
		return nil
	}
	if err := os.Remove(pending); err != nil {
		return fmt.Errorf("rl: %w", err)
	}
	return nil
}

// truncateLog drops the lines of a JSONL log whose step is past step
// (after a resume from an earlier checkpoint; -1 drops every line), so
// the log matches the weights; it is rewritten atomically. It drops
// lines that are not log lines too, and returns those before the last
// (damaged: not JSON, or without a step), each naming the file and line,
// for the run to warn of (a byte order mark opening it is dropped, as
// readLog drops it, and its line kept); blank lines, a last line cut short (a run
// killed while writing it) and every line of a log emptied (step -1) it
// drops without a word.
func truncateLog(path string, step int) (damaged []error, err error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("rl: %w", err)
	}
	// A byte order mark (readLog) is dropped, not its line.
	bom := bytes.HasPrefix(b, []byte(byteOrderMark))
	b = bytes.TrimPrefix(b, []byte(byteOrderMark))
	var keep bytes.Buffer
	dropped := false
	// The file is in memory already: its lines are cut from it, whatever
	// their length (a Scanner's limit would end the loop early and drop
	// the lines after a long one).
	for n, rest := 1, b; len(rest) > 0; n++ {
		var line []byte
		line, rest, _ = bytes.Cut(rest, []byte{'\n'})
		var s struct {
			Step *int `json:"step"`
		}
		err := json.Unmarshal(line, &s)
		if err == nil && s.Step == nil {
			err = errors.New("no step")
		}
		if err == nil && *s.Step <= step {
			keep.Write(line)
			keep.WriteByte('\n')
			continue
		}
		dropped = true
		if err != nil && step >= 0 && len(bytes.TrimSpace(line)) > 0 && len(bytes.TrimSpace(rest)) > 0 {
			damaged = append(damaged, fmt.Errorf("%s:%d: %w", path, n, err))
		}
	}
	if !dropped && !bom && (len(b) == 0 || b[len(b)-1] == '\n') {
		return nil, nil
	}
	// Rewritten too when its last line, kept, lacks its newline (a write
	// cut just before it), which the next line appended would run into.
	return damaged, atomicfile.WriteFile(path, keep.Bytes(), 0o666)
}

// warnDamagedLines warns on w of each line truncateLog dropped as damaged.
func warnDamagedLines(w io.Writer, damaged []error) {
	for _, d := range damaged {
		fmt.Fprintf(w, "spiral: warning: dropped a damaged log line as the log was cut back to the resumed step: %v\n", d)
	}
}

// loggedSteps returns the steps that the log at path (eval.jsonl,
// metrics.jsonl) has a line for; none where it is missing.
func loggedSteps(path string) (map[int]bool, error) {
	out := map[int]bool{}
	err := readJSONLines(path, func(b []byte) error {
		var s struct {
			Step *int `json:"step"`
		}
		if json.Unmarshal(b, &s) == nil && s.Step != nil {
			out[*s.Step] = true
		}
		return nil
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("rl: %w", err)
	}
	return out, nil
}

// warnNoUpdate writes a warning to w when no step the metrics file at
// path logs (this invocation's and those it resumed) updated the weights,
// saying what gave cfg's algorithm no signal (noSignal), or that the
// informative problems' trained traces held no token. It counts the
// traces of the steps without an informative problem that were cut at
// the token limit, which under cfg.Reward (not Truncated) earn nothing
// without an explicit answer: then the trace length, not the data, is
// the likely cause; and apart from them those a serving engine's padding
// id cut (graded as cut traces), where the engine's sampling is. greedy
// names the sampling settings that draw near-greedily
// (RunSettings.nearGreedy; "" for none): with them a problem's traces
// agree, the likely cause rather than the data.
func warnNoUpdate(w io.Writer, path string, cfg Config, greedy string) error {
	ms, err := readMetrics(path)
	if err != nil {
		return fmt.Errorf("rl: run: %w", err)
	}
	var none, empty, skipped, cut, padded, traces int
	for _, m := range ms {
		switch {
		case m.NoUpdate && m.ProblemsInformative > 0:
			empty++
		case m.NoUpdate:
			none++
			c, t := m.cutTraces()
			p, _ := m.paddingCutTraces()
			cut, padded, traces = cut+c, padded+p, traces+t
		case m.UpdateSkipped != "":
			skipped++
		}
	}
	if steps := len(ms); steps > 0 && none+empty+skipped == steps {
		// What kept each step from updating, the first naming the steps
		// of the run: the data is to blame only for the first.
		var whys []string
		check := "check the data's answers and the model's accuracy on them"
		if greedy != "" {
			verb := "samples"
			if strings.Contains(greedy, ",") {
				verb = "sample"
			}
			check = fmt.Sprintf("likely %s, which %s near-greedily, so a problem's traces agree; train at the defaults (--temperature 1, --top-p 1, --top-k 0)", greedy, verb)
		}
		for _, c := range []struct {
			n   int
			why string
		}{
			{none, fmt.Sprintf("drew no informative problem (%s: %s)", noSignal(cfg), check)},
			{empty, "trained no token (their informative problems' trained traces were empty: completions cut before their first token)"},
			{skipped, "skipped a non-finite update"},
		} {
			switch {
			case c.n == 0:
			case len(whys) == 0:
				whys = append(whys, fmt.Sprintf("%d of its %s %s", c.n, rollout.Plural(steps, "step"), c.why))
			default:
				whys = append(whys, fmt.Sprintf("%d %s", c.n, c.why))
			}
		}
		why := strings.Join(whys, ", ")
		if cut > 0 {
			why += fmt.Sprintf("; %d of the %d traces of the steps without an informative problem were cut at --max-new-tokens", cut, traces)
			if h := cfg.Reward.CutTraces(); h != "" {
				why += ", and " + h
			}
		}
		if padded > 0 {
			why += fmt.Sprintf("; %d of the %d traces of the steps without an informative problem were cut before a padding id that the serving engine sampled (a logit past the tokenizer's ids, which the policy never draws), and graded as cut traces", padded, traces)
		}
		fmt.Fprintf(w, "spiral: warning: no step of this run updated the weights (%s): %s\n", path, why)
	}
	return nil
}

// noSignal says what leaves a problem without an advantage under cfg's
// algorithm (Informative): GRPO's traces all got one reward; the SPIRAL
// pipeline's advantages come from the aggregation traces' rewards, each
// against its subset's mean, and the subsets' means crediting their
// candidates (the search traces, and a later round's those of the round
// before), whatever the search traces' own rewards, which only
// --search-own-reward reads.
func noSignal(cfg Config) string {
	const agg, set = "the aggregation traces of each subset got one reward", "the subsets' mean rewards credited none of their"
	var why string
	switch cfg.Algo {
	case AlgoGRPO:
		return "every trace of each problem got the same reward"
	case AlgoAggOnly:
		return agg + ", whatever the search traces got"
	case AlgoSearchOnly:
		why = set + " search traces"
	default:
		why = agg + " and " + set + " candidates"
	}
	if cfg.Advantage.SearchOwnReward > 0 {
		return why + ", and the search traces the subsets hold got one reward"
	}
	return why + ", whatever the search traces' own rewards"
}

// PlotTraining draws dir/training.png from dir/metrics.jsonl and
// dir/eval.jsonl (when there is one).
func PlotTraining(dir, label string) error {
	ms, err := readMetrics(filepath.Join(dir, MetricsFile))
	if err != nil {
		return fmt.Errorf("rl: plot: %w", err)
	}
	var pts []report.TrainingPoint
	for _, m := range ms {
		pt := report.TrainingPoint{Step: m.Step, SearchReward: m.Search.Reward, AggregateReward: m.Aggregate.Reward,
			HasAggregate: m.Aggregate.Traces > 0, Entropy: m.Entropy, NoUpdate: m.NoUpdate, Informative: m.InformativeFraction, SearchCredit: m.SearchCredit}
		for _, r := range m.AggregateRounds {
			pt.AggregateRounds = append(pt.AggregateRounds, r.Reward)
		}
		pts = append(pts, pt)
	}
	if len(pts) == 0 {
		return nil
	}
	var held []report.HeldOutPoint
	err = readJSONLines(filepath.Join(dir, EvalFile), func(b []byte) error {
		e, err := decodeEvalLine(b)
		if err != nil {
			return err
		}
		last := e.Points[len(e.Points)-1]
		held = append(held, report.HeldOutPoint{Step: e.Step, PassAt1: e.Points[0].PassAtK, MajorityAtK: last.MajorityAtK, K: last.K, Digest: e.Digest})
		return nil
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("rl: plot: %w", err)
	}
	return report.PlotTraining(filepath.Join(dir, TrainingPlot), report.PlotSize{}, label, pts, held)
}

// readMetrics reads the metrics.jsonl at path, a Metrics a line
// (decodeMetrics), naming the file and line in an error.
func readMetrics(path string) ([]Metrics, error) {
	var ms []Metrics
	err := readJSONLines(path, func(b []byte) error {
		m, err := decodeMetrics(b)
		ms = append(ms, m)
		return err
	})
	return ms, err
}

// byteOrderMark is the UTF-8 byte order mark, which an editor saving a
// log on Windows may write at its start.
const byteOrderMark = "\ufeff"

// readLog reads the JSON-lines log at path, less a byte order mark that
// opens it, which would make its first line malformed JSON. A path that
// is not a regular file (a named pipe, a device: /dev/zero linked in
// its place) is refused by its kind, unread: no run wrote it, and it
// may not end.
func readLog(path string) ([]byte, error) {
	if st, err := os.Stat(path); err == nil && !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: a %s, not a regular file: want the log a run wrote", path, smallfile.Kind(st.Mode()))
	}
	b, err := os.ReadFile(path)
	return bytes.TrimPrefix(b, []byte(byteOrderMark)), err
}

// readJSONLines calls line with each line of the file at path (readLog),
// naming the file and line in an error.
func readJSONLines(path string, line func([]byte) error) error {
	b, err := readLog(path)
	if err != nil {
		return err
	}
	return scanJSONLines(path, b, line)
}

// readJSONLinesTorn is readJSONLines, except that a last line that no
// newline ends and that is not JSON (cut short: the run was killed while
// writing it, or is writing it now) is left out, torn saying so, rather
// than an error; such a line anywhere else is still one.
func readJSONLinesTorn(path string, line func([]byte) error) (torn bool, err error) {
	b, err := readLog(path)
	if err != nil {
		return false, err
	}
	if n := len(b); n > 0 && b[n-1] != '\n' {
		i := bytes.LastIndexByte(b, '\n')
		if tail := bytes.TrimSpace(b[i+1:]); len(tail) > 0 && !json.Valid(tail) {
			b, torn = b[:i+1], true
		}
	}
	return torn, scanJSONLines(path, b, line)
}

// scanJSONLines calls line with each non-blank line of b, the file at
// path (less a carriage return ending it), naming the file and line in
// an error. The file is in memory already: its lines are cut from it,
// whatever their length, as truncateLog cuts them (a Scanner's limit
// ended the read at a line over it, with an error naming neither the
// file nor the line).
func scanJSONLines(path string, b []byte, line func([]byte) error) error {
	for n, rest := 1, b; len(rest) > 0; n++ {
		var text []byte
		text, rest, _ = bytes.Cut(rest, []byte{'\n'})
		text = bytes.TrimSuffix(text, []byte{'\r'})
		if len(bytes.TrimSpace(text)) == 0 {
			continue
		}
		if err := line(text); err != nil {
			return fmt.Errorf("%s:%d: %w", path, n, err)
		}
	}
	return nil
}

// stepAfter refuses the step of a line of metrics.jsonl or eval.jsonl
// that is not past prev, the step of the line before (-1 for none):
// train logs each step once, increasing, cutting a log back to the step
// it resumes from, so a step repeated or gone back is another run's
// lines joined on, whose figures would count twice.
func stepAfter(step, prev int) error {
	if step <= prev {
		return fmt.Errorf("step %d after step %d: want each step once, increasing, as train logs them (lines of another run joined on?)", step, prev)
	}
	return nil
}

// RunCurves are a run's per-step series for comparisons across runs
// (spiral compare --run).
type RunCurves struct {
	// Steps are the training steps metrics.jsonl logs, in order, and
	// NoUpdateSteps how many of them trained nothing (no informative
	// problem, or no trained token).
	Steps         []int
	NoUpdateSteps int
	// Entropy is the token entropy at each training step that trained
	// something (no NoUpdate step: its entropy was not measured), and
	// SearchEntropy that over the search traces' tokens alone
	// (Metrics.EntropySearch), at the steps that logged it.
	Entropy, SearchEntropy report.Curve
	// HeldOut is the held-out pass@1 at each evaluation (eval.jsonl) on
	// the run's last held-out problems, HeldOutSets the distinct sets it
	// was measured on ("64 problems x 4 samples"), in the order logged,
	// and HeldOutDigests the distinct fingerprints of their problems
	// (EvalLine.Digest, where logged). HeldOutLeftOut counts the
	// evaluations left out, those of other held-out problems than the
	// last line's fingerprint (an --override onto other held-out
	// problems left them before it), as the run's held-out summary
	// leaves them out (lines without a fingerprint, of older versions,
	// count).
	HeldOut        report.Curve
	HeldOutSets    []string
	HeldOutDigests []string
	HeldOutLeftOut int
	// Generated is the tokens sampled over all steps (search and
	// aggregation), Traces the traces.
	Generated, Traces int
	// SearchCredit is the mean over steps of Metrics.SearchCredit (the
	// correlation of a trained search trace's own reward with its
	// advantage) and CreditSteps the steps that had one (none under
	// agg-only, which trains no search trace).
	SearchCredit float64
	CreditSteps  int
	// Torn are the files (metrics.jsonl, eval.jsonl) whose last line was
	// cut short and left out: the run was killed while writing it, or was
	// writing it as they were read.
	Torn []string
	// Settings are the run settings that its newest readable checkpoint
	// records (state.json alone), and SettingsFrom that checkpoint; nil
	// and "" for a run without one.
	Settings     *RunSettings
	SettingsFrom string
}

// ReadRunCurves reads dir's metrics.jsonl and eval.jsonl, and the
// settings its newest checkpoint records (RunCurves.Settings). A
// metrics.jsonl that logs no step (a run interrupted before its first
// step finished) is an error naming it, as is a checkpoint's state.json
// that the system fails to read (newestSettings).
func ReadRunCurves(dir string) (RunCurves, error) {
	var c RunCurves
	metrics := filepath.Join(dir, MetricsFile)
	var ms []Metrics
	torn, err := readJSONLinesTorn(metrics, func(b []byte) error {
		m, err := decodeMetrics(b)
		if err == nil && len(ms) > 0 {
			err = stepAfter(m.Step, ms[len(ms)-1].Step)
		}
		ms = append(ms, m)
		return err
	})
	if err != nil {
		return RunCurves{}, fmt.Errorf("rl: run %s: %w", dir, err)
	}
	if torn {
		c.Torn = append(c.Torn, metrics)
	}
	for _, m := range ms {
		c.Steps = append(c.Steps, m.Step)
		if m.NoUpdate {
			c.NoUpdateSteps++
		}
		if !m.NoUpdate && !math.IsNaN(m.Entropy) {
			c.Entropy.Keys, c.Entropy.Y = append(c.Entropy.Keys, m.Step), append(c.Entropy.Y, m.Entropy)
		}
		if !m.NoUpdate && m.EntropySearch != nil {
			c.SearchEntropy.Keys, c.SearchEntropy.Y = append(c.SearchEntropy.Keys, m.Step), append(c.SearchEntropy.Y, *m.EntropySearch)
		}
		for _, p := range []PhaseMetrics{m.Search, m.Aggregate} {
			c.Generated += int(math.Round(p.MeanLength * float64(p.Traces)))
			c.Traces += p.Traces
		}
		if m.SearchCredit != nil {
			c.SearchCredit += *m.SearchCredit
			c.CreditSteps++
		}
	}
	if len(c.Steps) == 0 {
		return RunCurves{}, fmt.Errorf("rl: run %s: %s logs no training step (was the run interrupted before its first step finished?)", dir, metrics)
	}
	if c.CreditSteps > 0 {
		c.SearchCredit /= float64(c.CreditSteps)
	}
	evals := filepath.Join(dir, EvalFile)
	var lines []EvalLine
	last := "" // the last held-out problems' fingerprint
	prev := -1 // the step of the line before
	torn, err = readJSONLinesTorn(evals, func(b []byte) error {
		e, err := decodeEvalLine(b)
		if err != nil {
			return err
		}
		if err := stepAfter(e.Step, prev); err != nil {
			return err
		}
		prev = e.Step
		lines = append(lines, e)
		if e.Digest != "" {
			last = e.Digest
		}
		return nil
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return RunCurves{}, fmt.Errorf("rl: run %s: %w", dir, err)
	}
	for _, e := range lines {
		if e.Digest != "" && e.Digest != last {
			c.HeldOutLeftOut++
			continue
		}
		c.HeldOut.Keys, c.HeldOut.Y = append(c.HeldOut.Keys, e.Step), append(c.HeldOut.Y, e.Points[0].PassAtK)
		if set := fmt.Sprintf("%d problems x %d samples", e.Problems, e.Samples); !slices.Contains(c.HeldOutSets, set) {
			c.HeldOutSets = append(c.HeldOutSets, set)
		}
		if e.Digest != "" && !slices.Contains(c.HeldOutDigests, e.Digest) {
			c.HeldOutDigests = append(c.HeldOutDigests, e.Digest)
		}
	}
	if torn {
		c.Torn = append(c.Torn, evals)
	}
	if c.Settings, c.SettingsFrom, err = newestSettings(dir); err != nil {
		return RunCurves{}, fmt.Errorf("rl: run %s: %w", dir, err)
	}
	return c, nil
}

// newestSettings returns the run settings that the newest checkpoint in
// dir's checkpoints whose state.json reads records, and that checkpoint
// (its weights are not read); nil and "" where there is none
// (settingsWhere).
func newestSettings(dir string) (*RunSettings, string, error) {
	s, e, err := settingsWhere(dir, func(checkpoint.State) bool { return true })
	return s, e.Path, err
}

// EvaluatedSettings returns the run settings that the checkpoint in
// dir's checkpoints whose fingerprint is digest (checkpoint.State.Digest,
// as a final RSA report's meta records the checkpoint it evaluated)
// records, and that checkpoint (its weights are not read): what the
// run's FinalRSAFile was trained with. Nil where digest is "" (a report
// of a version before it was recorded) or no readable checkpoint of dir
// has it (settingsWhere).
func EvaluatedSettings(dir, digest string) (*RunSettings, checkpoint.Entry, error) {
	if digest == "" {
		return nil, checkpoint.Entry{}, nil
	}
	return settingsWhere(dir, func(st checkpoint.State) bool { return st.Digest() == digest })
}

// settingsWhere returns the run settings that the newest checkpoint in
// dir's checkpoints whose state.json reads, records settings and is one
// that match takes records, and that checkpoint; nil where there is
// none. A state.json that the system fails to read
// (checkpoint.Unreadable: EIO, EACCES, ...) is no damage to pass over
// for an older checkpoint's settings, which may be others: it is the
// error, naming the file.
func settingsWhere(dir string, match func(checkpoint.State) bool) (*RunSettings, checkpoint.Entry, error) {
	list, err := checkpoint.List(filepath.Join(dir, CheckpointsDir))
	if err != nil {
		return nil, checkpoint.Entry{}, nil
	}
	for i := len(list) - 1; i >= 0; i-- {
		st, err := checkpoint.ReadState(list[i].Path)
		if checkpoint.Unreadable(err) {
			return nil, checkpoint.Entry{}, fmt.Errorf("%w (a failure to read %s, not damage: its run's settings are not taken from an older checkpoint; rerun once it reads)", err, list[i].Path)
		}
		if err != nil || len(st.Config) == 0 || !match(st) {
			continue
		}
		var s RunSettings
		if err := json.Unmarshal(st.Config, &s); err != nil {
			continue
		}
		return &s, list[i], nil
	}
	return nil, checkpoint.Entry{}, nil
}

// SeedSettingsDiff lists what b records otherwise than a besides the
// seed, what makes two runs more than two seeds of one training (spiral
// compare --run averages a label's runs as seeds): the model by its
// content (ModelID, where both record one), the training problems (by
// content, DataID, where both record one, else by name or file), then
// the settings a resume lists (settingsDiff).
func SeedSettingsDiff(a, b RunSettings) []string {
	var diff []string
	named := func(name, id string) string {
		if id == "" {
			return name
		}
		return fmt.Sprintf("%s (%s)", name, id)
	}
	if a.ModelID != "" && b.ModelID != "" && a.ModelID != b.ModelID {
		diff = append(diff, fmt.Sprintf("model (--model): %s -> %s", named(a.Model, a.ModelID), named(b.Model, b.ModelID)))
	}
	otherData := !sameData(a.Data, a.DataPath, b.Data, b.DataPath)
	if a.DataID != "" && b.DataID != "" {
		otherData = a.DataID != b.DataID
	}
	if otherData {
		diff = append(diff, fmt.Sprintf("data (--data): %s -> %s", named(a.Data, a.DataID), named(b.Data, b.DataID)))
	}
	a.RL.Seed = b.RL.Seed
	return append(diff, settingsDiff(a, b)...)
}

// CheckpointName names the checkpoint directory ckpt in a report: with
// its run directory (RUN/checkpoints/ckpt-N gives RUN/ckpt-N), so that the
// evaluations of two runs' checkpoints of one step, left unlabelled, are
// told apart by compare and plot rather than averaged as seeds of one
// model; a checkpoint outside a run's checkpoints directory by its own
// name. A relative ckpt is named from its absolute path, so that one
// given from inside its run (checkpoints/ckpt-N, or .) is named as it is
// from anywhere else, not ./ckpt-N.
func CheckpointName(ckpt string) string {
	if abs, err := filepath.Abs(ckpt); err == nil {
		ckpt = abs
	}
	parent := filepath.Dir(ckpt)
	if filepath.Base(parent) != CheckpointsDir {
		return filepath.Base(ckpt)
	}
	return filepath.Base(filepath.Dir(parent)) + "/" + filepath.Base(ckpt)
}

// warnWithinWarmup warns on w where a run of steps steps, each at most an
// optimizer update, ends before sched's warmup does: every update of it is
// in the warmup, at a learning rate of at most steps/warmup of the peak
// that --lr names. Run and RunSFT call it once a run where steps are left
// to train, a resumed run too, and not where a finished one is rerun.
func warnWithinWarmup(w io.Writer, steps int, sched optim.Schedule) {
	if int64(steps) >= sched.WarmupSteps {
		return
	}
	fmt.Fprintf(w, "spiral: warning: --steps %d is below --warmup %d: the run ends inside the warmup, its learning rate at most %.3g (%d/%d of the peak, --lr %.3g); give --warmup %d or less to reach the peak\n",
		steps, sched.WarmupSteps, sched.LR(int64(steps-1)), steps, sched.WarmupSteps, sched.PeakLR, steps)
}
