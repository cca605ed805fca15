package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/spiral-rl/spiral/data"
	"github.com/spiral-rl/spiral/model"
	"github.com/spiral-rl/spiral/model/lmgraph"
	"github.com/spiral-rl/spiral/rl"
	"github.com/spiral-rl/spiral/rollout"
)

// Every flag of every command is bound in this file, each to a field of a
// component's config whose default comes from that component
// (rl.DefaultConfig, rollout.DefaultSamplerConfig, ...), so that defaults
// are stated once. Each command's setup function picks the groups it
// takes.

// nonEmptyAnnotation marks a flag whose value may not be empty, a path
// or another string (markNonEmpty), in pflag.Flag.Annotations, with what
// the value names: checkEmptyValues refuses it given empty.
const nonEmptyAnnotation = "spiral/non-empty"

// checkpointWant is what a --checkpoint names.
const checkpointWant = "a checkpoint directory, or a run directory (or its checkpoints/) for its newest intact one (leave --checkpoint out for the model's own weights)"

// markNonEmpty marks fs's flag name, registered already, as a path or
// another string that names want, whose empty value is its default
// (left out) and is refused given explicitly.
func markNonEmpty(fs *pflag.FlagSet, name, want string) {
	f := fs.Lookup(name)
	if f.Annotations == nil {
		f.Annotations = map[string][]string{}
	}
	f.Annotations[nonEmptyAnnotation] = []string{want}
}

// checkEmptyValues refuses, as a usage error naming it, an empty value: a
// flag markNonEmpty marked given "" (a script's unset variable in --out
// "$DIR"), which read as the flag's default or failed naming no file
// ("open : no such file or directory"), and an empty positional
// argument of a command whose arguments are paths (its pathArgs).
func checkEmptyValues(c *command, fs *pflag.FlagSet, args []string) error {
	var errs []error
	fs.Visit(func(f *pflag.Flag) {
		if want := f.Annotations[nonEmptyAnnotation]; len(want) > 0 && f.Value.String() == "" {
			errs = append(errs, fmt.Errorf("--%s is empty: want %s", f.Name, want[0]))
		}
	})
	if p := c.pathArgs; slices.Contains(p.paths(args), "") {
		errs = append(errs, fmt.Errorf(`an empty %s argument (""): want %s`, p.name, p.want))
	}
	if len(errs) > 0 {
		return usageError{errors.Join(errs...)}
	}
	return nil
}

// checkPathArgs refuses, as a usage error naming it and what it must be,
// a positional path argument of args (p's paths) that does not exist
// (under a file too: ENOTDIR) or cannot be opened (statOpenable:
// permission denied, a symbolic link loop), as a path flag's value is
// refused (statFlag): `spiral plot nope.json` exited 1 where `--model
// nope` exits 2. A path that opens but whose contents are bad is left
// to the command (exit status 1). A command calls it once its flags are
// checked: a bad flag value is named first, as a command's path flags
// are checked after its other flags.
func checkPathArgs(p pathArgs, args []string) error {
	var errs []error
	for _, path := range p.paths(args) {
		_, err := statOpenable(path)
		switch {
		case errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ENOTDIR):
			errs = append(errs, fmt.Errorf("%s %s does not exist: want %s", p.name, path, p.want))
		case err != nil:
			errs = append(errs, fmt.Errorf("%s %s: %w: want %s", p.name, path, err, p.want))
		}
	}
	if len(errs) > 0 {
		return usageError{errors.Join(errs...)}
	}
	return nil
}

// commandFlags are a command's flags: bound to a flag set, then checked
// before the command runs.
type commandFlags[F any] interface {
	*F
	register(fs *pflag.FlagSet)
	validate() error
}

// flagsCommand binds the flags F of a command that takes no arguments
// and returns the command: positional arguments and flags that fail
// validate are usage errors, otherwise run gets the flags.
func flagsCommand[F any, PF commandFlags[F]](fs *pflag.FlagSet, run func(context.Context, *cliEnv, PF) error) func(context.Context, *cliEnv, []string) error {
	f := PF(new(F))
	f.register(fs)
	return func(ctx context.Context, env *cliEnv, args []string) error {
		if len(args) > 0 {
			return usageError{unexpectedArgs{args: args}}
		}
		if err := f.validate(); err != nil {
			return usageError{err}
		}
		return run(ctx, env, f)
	}
}

// runtimeFlags are the ONNX Runtime flags of every model-running command.
type runtimeFlags struct {
	ortLib        string
	device        string
	threads       int
	deterministic bool
	cudaOptions   map[string]string
	sharedArena   string
	arena         model.ArenaSharing // sharedArena parsed by validate
	changed       func(name string) bool
}

func (f *runtimeFlags) register(fs *pflag.FlagSet) {
	f.changed = fs.Changed
	fs.StringVar(&f.ortLib, "ort-lib", "", "ONNX Runtime shared library (default: $"+model.LibEnvVar+", then the location "+model.SetupCommand+" installs to)")
	markNonEmpty(fs, "ort-lib", "the ONNX Runtime shared library (leave --ort-lib out for $"+model.LibEnvVar+", then "+model.SetupCommand+"'s)")
	fs.StringVar(&f.device, "device", "cpu", "execution device: cpu, cuda, cuda:N, or auto (CUDA if it loads, else CPU with a warning)")
	fs.IntVar(&f.threads, "threads", 0, "intra-op threads per ONNX Runtime session (0 = one per physical core)")
	fs.BoolVar(&f.deterministic, "deterministic", false, "bit-reproducible runs: one thread and ONNX Runtime's deterministic kernels (slower)")
	fs.StringToStringVar(&f.cudaOptions, "cuda-option", nil, "an option of ONNX Runtime's CUDA execution provider, KEY=VALUE (repeatable; e.g. arena_extend_strategy=kSameAsRequested, gpu_mem_limit=BYTES)")
	fs.StringVar(&f.sharedArena, "shared-arena", "auto", "one arena for the device's memory shared by every ONNX Runtime session, so that what one frees (the KV cache after generation) the others can use (the training step): true, false, or auto (on the CPU, where it holds every host tensor and trains faster; not on CUDA, where it is not measured yet)")
	arena := fs.Lookup("shared-arena")
	arena.NoOptDefVal = "true"
	arena.Annotations = map[string][]string{flagValuesAnnotation: {"true", "false", "auto"}}
}

// options returns the runtime options the flags give, warnings to warn.
func (f *runtimeFlags) options(warn io.Writer) model.RuntimeOptions {
	return model.RuntimeOptions{LibPath: f.ortLib, Device: f.device, Threads: f.threads,
		Deterministic: f.deterministic, CUDAOptions: f.cudaOptions, Arena: f.arena, Warn: warn}
}

// validate checks the runtime flags without loading anything: an
// --ort-lib that is missing or a directory is a bad value of the flag,
// as every input path flag's is.
func (f *runtimeFlags) validate() error {
	var errs []error
	if f.ortLib != "" {
		if err := inputFile("--ort-lib", f.ortLib, "the ONNX Runtime shared library"); err != nil {
			errs = append(errs, err)
		}
	}
	dev, _, err := model.ParseDevice(f.device)
	if strings.TrimSpace(f.device) == "" {
		// The library's "" is the CPU; the flag's default says cpu, so
		// an empty one is given ("$DEV" unset), and a GPU run meant.
		err = fmt.Errorf("%q: want cpu, cuda, cuda:N or auto", f.device)
	}
	if err != nil {
		errs = append(errs, fmt.Errorf("--device %w", err))
	}
	if len(f.cudaOptions) > 0 && err == nil && dev.Kind != model.CUDA {
		errs = append(errs, fmt.Errorf("--cuda-option applies to --device cuda or auto, not %q", f.device))
	}
	if _, ok := f.cudaOptions["device_id"]; ok {
		errs = append(errs, errors.New("--cuda-option device_id: choose the device with --device cuda:N"))
	}
	for _, k := range slices.Sorted(maps.Keys(f.cudaOptions)) {
		switch v := f.cudaOptions[k]; {
		case k == "":
			errs = append(errs, fmt.Errorf("--cuda-option %q: want KEY=VALUE, with a key", k+"="+v))
		case v == "":
			errs = append(errs, fmt.Errorf("--cuda-option %q: want KEY=VALUE, with a value (leave the option out for ONNX Runtime's default)", k+"="))
		}
	}
	if a, err := model.ParseArenaSharing(f.sharedArena); err != nil {
		errs = append(errs, fmt.Errorf("--shared-arena %w", err))
	} else {
		f.arena = a
	}
	if f.arena == model.ArenaShared {
		if _, err := model.ArenaConfig(f.cudaOptions); err != nil {
			errs = append(errs, fmt.Errorf("--shared-arena: --cuda-option %w", err))
		}
	}
	if f.threads < 0 {
		errs = append(errs, fmt.Errorf("--threads %d: want >= 0 (0 = one per physical core)", f.threads))
	}
	errs = append(errs, countsAtMost(count{"--threads", f.threads, 0}))
	if f.deterministic && f.threads > 1 {
		errs = append(errs, fmt.Errorf("--deterministic runs one thread; --threads %d contradicts it", f.threads))
	}
	return errors.Join(errs...)
}

// validateOn is validate for a command that runs its model on engine
// and no model here with --engine openai (eval, generate): there the
// flags given are refused as unread (validateEngine), their values not
// checked, so that the refusal is not preceded by a complaint about a
// value (an --ort-lib missing, a --cuda-option without --device cuda)
// whose fix would be refused all the same.
func (f *runtimeFlags) validateOn(engine string) error {
	if engine == "openai" {
		return f.validateEngine(engine)
	}
	return f.validate()
}

// validateEngine refuses, with --engine openai in a command that runs no
// model here (eval, generate: train still trains it here), the ONNX
// Runtime flags given, which nothing would read, as the local sampler's
// are (samplingFlags.validateEngine).
func (f *runtimeFlags) validateEngine(engine string) error {
	if engine != "openai" {
		return nil
	}
	var errs []error
	for _, name := range []string{"ort-lib", "device", "threads", "deterministic", "cuda-option", "shared-arena"} {
		if f.changed(name) {
			errs = append(errs, fmt.Errorf("--%s is for the local engine; --engine openai runs no model here and would ignore it", name))
		}
	}
	return errors.Join(errs...)
}

// modelFlags locate a model and its tokenizer.
type modelFlags struct {
	model, tokenizer string
}

func (f *modelFlags) register(fs *pflag.FlagSet) {
	f.registerModel(fs)
	fs.StringVar(&f.tokenizer, "tokenizer", "", "tokenizer.json, or a directory holding it (default: beside the model)")
	markNonEmpty(fs, "tokenizer", "a tokenizer.json or a directory holding one (leave --tokenizer out for the one beside the model)")
}

// registerModel registers --model alone, for the commands that read no
// tokenizer (artifacts): a --tokenizer there would be ignored.
func (f *modelFlags) registerModel(fs *pflag.FlagSet) {
	fs.StringVar(&f.model, "model", "", "ONNX causal LM: a .onnx file or a directory with model.onnx (default: the embedded tiny model)")
	markNonEmpty(fs, "model", "a .onnx file or a directory with model.onnx (leave --model out for the embedded tiny model)")
}

// dataFlags are the dataset flags of every command that reads problems.
type dataFlags struct {
	opt data.LoadOptions
}

func (f *dataFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.opt.ProblemField, "problem-field", "", "problem field name (default: detect problem, question, prompt, ...)")
	fs.StringVar(&f.opt.AnswerField, "answer-field", "", "gold-answer field name (default: detect answer, final_answer, ground_truth, ..., solution)")
	fs.StringVar(&f.opt.IDField, "id-field", "", `id field name, in every row and not empty when named (default: detect, rows without it numbered; "-" = row numbers)`)
	fs.StringVar(&f.opt.Format, "format", "", "jsonl, json or parquet (default: from the extension, else from the content)")
	markNonEmpty(fs, "problem-field", "the field that holds the problem (leave --problem-field out to detect it)")
	markNonEmpty(fs, "answer-field", "the field that holds the gold answer (leave --answer-field out to detect it)")
	markNonEmpty(fs, "id-field", `the field that holds the id, or "-" for row numbers (leave --id-field out to detect it)`)
	markNonEmpty(fs, "format", "jsonl, json or parquet (leave --format out to tell it from the extension, else the content)")
}

// unreadDataFlags refuses the flags of dataFlags given (changed) to a
// command that reads no data file, where they would be ignored in
// silence: files names the flags of the files they read, embedded what
// the command reads instead.
func unreadDataFlags(changed func(name string) bool, files, embedded string) error {
	var errs []error
	for _, name := range []string{"problem-field", "answer-field", "id-field", "format"} {
		if changed(name) {
			errs = append(errs, fmt.Errorf("--%s says how to read %s, and none is given: %s is read as it is", name, files, embedded))
		}
	}
	return errors.Join(errs...)
}

// samplingFlags configure generation; maxNew 0 picks the model's default
// trace length (see traceLength).
type samplingFlags struct {
	cfg     rollout.SamplerConfig
	callMiB int
	changed func(name string) bool // whether a flag was given
}

func (f *samplingFlags) register(fs *pflag.FlagSet) {
	f.changed = fs.Changed
	f.cfg = rollout.DefaultSamplerConfig()
	fs.Float64Var(&f.cfg.Temperature, "temperature", f.cfg.Temperature, "sampling temperature (0 = greedy)")
	fs.Float64Var(&f.cfg.TopP, "top-p", f.cfg.TopP, "nucleus sampling mass in (0, 1] (1 = off)")
	fs.IntVar(&f.cfg.TopK, "top-k", f.cfg.TopK, "keep the k most probable tokens and any tied with the k-th (0 = off)")
	fs.IntVar(&f.cfg.MaxNewTokens, "max-new-tokens", 0, fmt.Sprintf("tokens per trace (0 = %d for the embedded model or task, %d for a given model on given problems, at most half its context, or of a serving engine's where smaller)", embeddedMaxNewTokens, modelMaxNewTokens))
	fs.IntVar(&f.cfg.BatchSize, "gen-batch", f.cfg.BatchSize, "rows decoded together")
	registerGenCallMiB(fs, &f.callMiB)
}

// registerGenCallMiB registers --gen-call-mib, the MiB of temporaries one
// generation call may hold (rollout.SamplerConfig.CallBytes).
func registerGenCallMiB(fs *pflag.FlagSet, mib *int) {
	fs.IntVar(mib, "gen-call-mib", int(model.DefaultCallBytes>>20), "generation: MiB of temporaries per model call (rows are split into calls within it; the default suits a CPU, a GPU can take more)")
}

// validate checks the flags as given (a zero --max-new-tokens is "auto").
func (f *samplingFlags) validate() error {
	c := f.cfg
	var errs []error
	if c.MaxNewTokens < 0 {
		errs = append(errs, fmt.Errorf("--max-new-tokens %d: want >= 0 (0 = the model's default)", c.MaxNewTokens))
	}
	if c.MaxNewTokens <= 0 {
		// 0 is auto, sized to the model later, and a negative value is
		// refused above with the flag's range: not also with the
		// sampler's "want > 0", which would contradict it.
		c.MaxNewTokens = 1
	}
	return errors.Join(append(errs, mebibytes("--gen-call-mib", f.callMiB), c.Validate(),
		countsAtMost(count{"--max-new-tokens", f.cfg.MaxNewTokens, 0}, count{"--top-k", c.TopK, 0}, count{"--gen-batch", c.BatchSize, 1}))...)
}

// validateEngine refuses, with --engine openai, the flags only the local
// sampler reads, which a serving engine would ignore (as
// engineFlags.validate refuses the engine's flags with the local one).
func (f *samplingFlags) validateEngine(engine string) error {
	if engine != "openai" {
		return nil
	}
	var errs []error
	if f.changed("gen-batch") {
		errs = append(errs, errors.New("--gen-batch is for the local engine; a serving engine batches the requests itself (--engine-concurrency bounds those in flight)"))
	}
	if f.changed("gen-call-mib") {
		errs = append(errs, errors.New("--gen-call-mib is for the local engine; a serving engine would ignore it"))
	}
	return errors.Join(errs...)
}

// rewardFlags choose which traces earn a reward (training and evaluation).
type rewardFlags struct {
	rule rl.RewardRule
}

// ignored says, in a list for ignoredFlags, that --reward-truncated
// without --reward-fallback changes almost no reward: it grades cut
// traces like the others, which then need an explicit answer, as a cut
// trace does by default (the grader finds no answer in a trace without
// one); only a cut trace whose explicit answer runs up to the cut, which
// by default had not stated it (rollout.Judge), earns by it.
func (f *rewardFlags) ignored() []string {
	if !f.rule.Truncated || f.rule.Fallback {
		return nil
	}
	return []string{`--reward-truncated grades traces cut at --max-new-tokens like the others, which without --reward-fallback need an explicit answer, as a cut trace does by default: alone it changes only the reward of a cut trace whose explicit answer runs up to the cut ("The final answer is 1", which may have been going on to 18), which it credits (add --reward-fallback to grade every trace by its last number)`}
}

func (f *rewardFlags) register(fs *pflag.FlagSet) {
	fs.BoolVar(&f.rule.Fallback, "reward-fallback", false, `accept a response's last number or LaTeX span when it boxes no answer (default: only \boxed{} or a "final answer is" sentence counts)`)
	fs.BoolVar(&f.rule.Truncated, "reward-truncated", false, "grade traces cut at --max-new-tokens like the others, by their last number too with --reward-fallback (default: a cut trace earns nothing unless it already stated an explicit answer)")
}

// paramFlags choose the trained parameters: a selection of the model's
// own, or LoRA adapters of its projections.
type paramFlags struct {
	train, freeze string
	lora          lmgraph.LoRA
	loraTargets   string
	changed       func(name string) bool
}

func (f *paramFlags) register(fs *pflag.FlagSet) {
	f.changed = fs.Changed
	registerSelection(fs, &f.train, &f.freeze)
	registerLoRA(fs, &f.lora.Rank, &f.lora.Alpha, &f.loraTargets)
}

// registerSelection adds --train and --freeze.
func registerSelection(fs *pflag.FlagSet, train, freeze *string) {
	fs.StringVar(train, "train", "", "train only the parameters whose names match this regular expression (default: all)")
	fs.StringVar(freeze, "freeze", "", "do not train the parameters whose names match this regular expression")
	markNonEmpty(fs, "train", "a regular expression of the parameters to train (leave --train out to train all)")
	markNonEmpty(fs, "freeze", "a regular expression of the parameters not to train (leave --freeze out to train all)")
}

// parseSelection compiles --train and --freeze into the choice of
// trained parameters.
func parseSelection(train, freeze string) (lmgraph.Selection, error) {
	var s lmgraph.Selection
	var errs []error
	for _, x := range []struct {
		flag, expr string
		dst        **regexp.Regexp
	}{{"--train", train, &s.Train}, {"--freeze", freeze, &s.Freeze}} {
		if x.expr == "" {
			continue
		}
		re, err := regexp.Compile(x.expr)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s %q: %w", x.flag, x.expr, err))
			continue
		}
		*x.dst = re
	}
	return s, errors.Join(errs...)
}

// loraSelection refuses --train or --freeze with --lora-rank (rank > 0):
// LoRA trains its adapters only.
func loraSelection(rank int, train, freeze string) error {
	if rank > 0 && (train != "" || freeze != "") {
		return errors.New("--lora-rank trains adapters only: --train and --freeze do not combine with it")
	}
	return nil
}

// registerLoRA adds --lora-rank, --lora-alpha and --lora-targets.
func registerLoRA(fs *pflag.FlagSet, rank *int, alpha *float64, targets *string) {
	fs.IntVar(rank, "lora-rank", 0, "LoRA rank: train low-rank adapters of the projections, the base weights frozen (0 = full fine-tune)")
	fs.Float64Var(alpha, "lora-alpha", 32, "LoRA alpha: the adapters' product is scaled by alpha / rank")
	fs.StringVar(targets, "lora-targets", strings.Join(lmgraph.LoRATargets, ","), "comma-separated projections LoRA adapts")
}

// loraWithoutRank refuses --lora-alpha and --lora-targets given (changed)
// without --lora-rank: the adapters they shape are not made.
func loraWithoutRank(changed func(name string) bool, rank int) error {
	if rank != 0 {
		return nil
	}
	var errs []error
	for _, name := range []string{"lora-alpha", "lora-targets"} {
		if changed(name) {
			errs = append(errs, fmt.Errorf("--%s shapes --lora-rank's adapters; without --lora-rank (a full fine-tune) it would be ignored", name))
		}
	}
	return errors.Join(errs...)
}

// modelFlagUsage returns err, or the usage error of the flags it names
// when err refuses a flag that does not fit the model, which is found
// when the model is read: a --lora-rank past a targeted projection's
// smaller side (plan refuses it so from config.json), a --train or
// --freeze that leaves nothing to train.
func modelFlagUsage(err error) error {
	var re *model.LoRARankError
	if errors.As(err, &re) {
		return usageError{fmt.Errorf("--lora-rank %d: %s is [%d, %d]: %s", re.Rank, re.Module, re.In, re.Out, re.Want())}
	}
	var se *lmgraph.SelectionError
	if errors.As(err, &se) {
		return usageError{errors.New(se.Message())}
	}
	return err
}

// parseLoRA checks the LoRA flags (targets may omit "_proj").
func parseLoRA(rank int, alpha float64, targets string) (lmgraph.LoRA, error) {
	l := lmgraph.LoRA{Rank: rank, Alpha: alpha}
	if err := countsAtMost(count{"--lora-rank", rank, 0}); err != nil {
		return l, err
	}
	for _, given := range strings.Split(targets, ",") {
		t := strings.ToLower(strings.TrimSpace(given))
		if t == "" {
			continue
		}
		if !strings.HasSuffix(t, "_proj") {
			t += "_proj"
		}
		if !slices.Contains(lmgraph.LoRATargets, t) {
			return l, fmt.Errorf("--lora-targets: %q: want q, k, v, o, gate, up or down (or their _proj names)", strings.TrimSpace(given))
		}
		l.Targets = append(l.Targets, t)
	}
	l = l.Canonical()
	// Alpha and targets are checked without a rank too: given alone they
	// would do nothing, and a bad value is a mistake either way.
	probe := l
	if rank == 0 {
		probe.Rank = 1
	}
	if err := probe.Validate(); err != nil {
		return l, errors.New(withLoRAFlags(err.Error()))
	}
	if rank == 0 {
		return lmgraph.LoRA{Rank: 0, Alpha: alpha}, nil
	}
	return l, nil
}

// withLoRAFlags names the LoRA flags in a message of lmgraph.LoRA's
// Validate, which names its fields ("lora alpha 0: want > 0").
func withLoRAFlags(msg string) string {
	return strings.NewReplacer("lora rank ", "--lora-rank ", "lora alpha ", "--lora-alpha ", "alpha / rank", "--lora-alpha / --lora-rank",
		"lora targets: ", "--lora-targets: ", "lora target ", "--lora-targets ").Replace(msg)
}

// artifacts compiles the flags into the choice of trained parameters.
func (f *paramFlags) artifacts() (model.ArtifactOptions, error) {
	s, err := parseSelection(f.train, f.freeze)
	errs := []error{err}
	l, err := parseLoRA(f.lora.Rank, f.lora.Alpha, f.loraTargets)
	if err == nil { // a bad value is said first, and alone
		err = loraWithoutRank(f.changed, f.lora.Rank)
	}
	errs = append(errs, err)
	errs = append(errs, loraSelection(l.Rank, f.train, f.freeze))
	return model.ArtifactOptions{Selection: s, LoRA: l}, errors.Join(errs...)
}

// engineFlags choose where generation runs: the local ONNX Runtime
// sampler, or a serving engine's OpenAI-compatible API.
type engineFlags struct {
	engine, baseURL, model, keyEnv string
	concurrency                    int
	timeout                        time.Duration
	// changed reports whether a flag was given (pflag.FlagSet.Changed).
	changed func(name string) bool
}

func (f *engineFlags) register(fs *pflag.FlagSet) {
	f.changed = fs.Changed
	fs.StringVar(&f.engine, "engine", "local", "where generation runs: local (ONNX Runtime here) or openai (a serving engine's OpenAI-compatible completions API: vLLM, SGLang)")
	fs.StringVar(&f.baseURL, "base-url", "", "openai engine: the API root, e.g. http://127.0.0.1:8000/v1")
	fs.StringVar(&f.model, "served-model", "", "openai engine: the model name the server serves")
	markNonEmpty(fs, "base-url", "the serving engine's API root, e.g. http://127.0.0.1:8000/v1")
	markNonEmpty(fs, "served-model", "the model name the serving engine serves")
	fs.StringVar(&f.keyEnv, "api-key-env", "", "openai engine: environment variable holding the API key (sent as a bearer token)")
	markNonEmpty(fs, "api-key-env", "the environment variable that holds the API key (leave --api-key-env out to send none)")
	fs.IntVar(&f.concurrency, "engine-concurrency", rollout.DefaultEngineConcurrency, "openai engine: requests in flight")
	fs.DurationVar(&f.timeout, "engine-timeout", rollout.DefaultEngineTimeout, fmt.Sprintf("openai engine: the longest one request may take, its retries included (a 429, 5xx or connection error is retried up to %d times with backoff, no sooner than the server's Retry-After asks; the first request, the check of --served-model, until this timeout, for a server still starting; the retries are announced on stderr, at most a line in %v, which counts those not shown)", rollout.DefaultEngineRetries, rollout.DefaultEngineRetryNotice))
}

func (f *engineFlags) validate() error {
	switch f.engine {
	case "local":
		var errs []error
		if f.baseURL != "" || f.model != "" {
			errs = append(errs, errors.New("--base-url and --served-model need --engine openai"))
		}
		// The serving engine's other flags, which the local engine
		// would ignore, a bad value or the default included.
		for _, name := range []string{"api-key-env", "engine-concurrency", "engine-timeout"} {
			if f.changed(name) {
				errs = append(errs, fmt.Errorf("--%s is for --engine openai; the local engine would ignore it", name))
			}
		}
		return errors.Join(errs...)
	case "openai":
		var errs []error
		if f.baseURL == "" {
			errs = append(errs, errors.New("--engine openai needs --base-url"))
		} else if err := rollout.CheckBaseURL(f.baseURL); err != nil {
			errs = append(errs, fmt.Errorf("--base-url %w", err))
		}
		if f.model == "" {
			errs = append(errs, errors.New("--engine openai needs --served-model"))
		}
		if f.keyEnv != "" {
			if key, set := os.LookupEnv(f.keyEnv); !set {
				errs = append(errs, fmt.Errorf("--api-key-env %s: the variable is not set", f.keyEnv))
			} else if key == "" {
				errs = append(errs, fmt.Errorf("--api-key-env %s: the variable is empty", f.keyEnv))
			} else if err := rollout.CheckAPIKey(key); err != nil {
				errs = append(errs, fmt.Errorf("--api-key-env %s: %w", f.keyEnv, err))
			}
		}
		if f.timeout <= 0 {
			errs = append(errs, fmt.Errorf("--engine-timeout %v: want > 0", f.timeout))
		}
		return errors.Join(append(errs, counted("--engine-concurrency", f.concurrency))...)
	}
	return fmt.Errorf("--engine %q: want local or openai", f.engine)
}

// engineModelUsage ends --model's help where --engine openai may be
// given.
const engineModelUsage = "; with --engine openai, which runs no model here, a directory holding its tokenizer.json and config.json is enough"

// errEngineCheckpoint refuses --checkpoint with --engine openai.
var errEngineCheckpoint = errors.New("--checkpoint is for the local engine: a serving engine samples with the weights it loaded (export the checkpoint, then serve it)")

// syncFlags choose how a serving engine gets the trained weights.
type syncFlags struct {
	mode, dir string
}

func (f *syncFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.mode, "engine-sync", "", "openai engine in training: how the engine gets each update: vllm-lora (peft adapters loaded at runtime; needs --lora-rank) or sglang (Hugging Face weights loaded from disk)")
	fs.StringVar(&f.dir, "sync-dir", "", "openai engine in training: directory for the synced weights, the same path on the server (a shared filesystem)")
	markNonEmpty(fs, "engine-sync", "vllm-lora or sglang")
	markNonEmpty(fs, "sync-dir", "the directory for the synced weights, the same path on the server")
}

// validate checks the sync flags against the engine and the LoRA choice.
func (f *syncFlags) validate(engine string, lora bool) error {
	if engine != "openai" {
		if f.mode != "" || f.dir != "" {
			return errors.New("--engine-sync and --sync-dir need --engine openai")
		}
		return nil
	}
	var errs []error
	switch f.mode {
	case "vllm-lora":
		if !lora {
			errs = append(errs, errors.New("--engine-sync vllm-lora syncs LoRA adapters: give --lora-rank"))
		}
	case "sglang":
	case "":
		errs = append(errs, errors.New("--engine openai in training needs --engine-sync vllm-lora or sglang, so that the engine samples from the trained weights"))
	default:
		errs = append(errs, fmt.Errorf("--engine-sync %q: want vllm-lora or sglang", f.mode))
	}
	if f.dir == "" {
		errs = append(errs, errors.New("--engine openai in training needs --sync-dir"))
	}
	return errors.Join(errs...)
}

// templateFlags name the prompt template files.
type templateFlags struct {
	search, aggregate string
}

func (f *templateFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.search, "search-template", "", "search prompt template file (default: built in; the embedded task's for the embedded model or task)")
	fs.StringVar(&f.aggregate, "aggregate-template", "", "aggregation prompt template file (default: built in; the embedded task's for the embedded model or task)")
	markNonEmpty(fs, "search-template", "a search prompt template file (leave --search-template out for the built-in one)")
	markNonEmpty(fs, "aggregate-template", "an aggregation prompt template file (leave --aggregate-template out for the built-in one)")
}

// trainFlags are the flags of `spiral train`.
type trainFlags struct {
	rf       runtimeFlags
	mf       modelFlags
	df       dataFlags
	sf       samplingFlags
	reward   rewardFlags
	params   paramFlags
	tmpl     templateFlags
	cfg      rl.Config
	run      rl.RunConfig
	data     string
	lr       float64
	warmup   int
	quiet    bool
	evalData string
	evalN    int
	// packPrompts is --pack-prompts (rl.Config.SeparateRows negated).
	packPrompts bool
	engine      engineFlags
	sync        syncFlags
	exec        executorFlags
	// changed reports whether a flag was given (pflag.FlagSet.Changed).
	changed func(name string) bool
}

func (f *trainFlags) register(fs *pflag.FlagSet) {
	f.changed = fs.Changed
	f.rf.register(fs)
	f.exec.register(fs)
	f.engine.register(fs)
	f.sync.register(fs)
	f.mf.register(fs)
	f.df.register(fs)
	f.sf.register(fs)
	// Training refuses greedy sampling (validate): sampling's "0 =
	// greedy" would offer it.
	fs.Lookup("temperature").Usage = "sampling temperature, > 0 (0, greedy, trains nothing: every trace of a problem alike)"
	f.reward.register(fs)
	f.params.register(fs)
	f.tmpl.register(fs)
	f.cfg = rl.DefaultConfig()
	c := &f.cfg
	fs.StringVar(&f.data, "data", "", "training problems: JSONL, JSON or Parquet (default: the embedded equation task)")
	markNonEmpty(fs, "data", "a JSONL, JSON or Parquet file of training problems (leave --data out for the embedded equation task)")
	fs.StringVar(&f.run.Dir, "out", "runs/spiral", "run directory: metrics.jsonl, eval.jsonl (--eval-every), checkpoints/, artifacts/, training.png, rsa.json (--final-rsa-steps), tensorboard/ (--tensorboard)")
	markNonEmpty(fs, "out", "the run directory (default runs/spiral)")
	fs.StringVar(&c.Algo, "algo", c.Algo, "algorithm: spiral, grpo, agg-only or search-only (the ablations: gradients on the aggregation or the search traces only)")
	fs.IntVar(&f.run.Steps, "steps", 50, "training steps")
	fs.IntVar(&c.Problems, "problems", c.Problems, "informative problems per step")
	fs.IntVar(&c.MaxDrawRounds, "draw-rounds", c.MaxDrawRounds, "dynamic-sampling rounds per step")
	fs.IntVar(&c.Pipeline.N1, "n1", c.Pipeline.N1, "search traces per problem")
	fs.IntVar(&c.Pipeline.K, "k", c.Pipeline.K, "subsets per problem")
	fs.IntVar(&c.Pipeline.N, "n", c.Pipeline.N, "traces per subset")
	fs.IntVar(&c.Pipeline.N2, "n2", c.Pipeline.N2, "aggregation traces per subset")
	fs.IntVar(&c.Pipeline.Rounds, "agg-rounds", c.Pipeline.Rounds, "aggregation rounds per problem: a later round aggregates subsets of the previous round's aggregation traces, as RSA's later steps do; their traces learn from their own reward and, as search traces do, from their worth to the next round (1 = the paper's SPIRAL)")
	fs.IntVar(&c.Pipeline.CandidateTokens, "candidate-tokens", c.Pipeline.CandidateTokens, "cap on each candidate in an aggregation prompt, keeping its end (0 = no cap)")
	fs.IntVar(&c.GroupSize, "group", c.GroupSize, "GRPO traces per problem")
	fs.Float64Var(&f.lr, "lr", 0, "peak learning rate (0 = 1e-4 for the embedded tiny model, 1e-6 for a given model, the paper's scale)")
	fs.IntVar(&f.warmup, "warmup", 5, "linear learning-rate warmup, in optimizer updates (a step whose update is skipped, for no informative problem, no trained token or a non-finite gradient, does not advance it)")
	fs.Float64Var(&c.ClipLow, "clip-low", c.ClipLow, "PPO clip bound below 1 (eps_low)")
	fs.Float64Var(&c.ClipHigh, "clip-high", c.ClipHigh, "PPO clip bound above 1 (eps_high)")
	fs.Float64Var(&c.MaxGradNorm, "max-grad-norm", c.MaxGradNorm, "global gradient-norm clip (0 or less = off)")
	fs.IntVar(&c.MicroBatchTokens, "micro-batch-tokens", 0, "rows x length per training call, at least one row (0 = auto: 4 GiB of kept activations by the model's config.json, within 512..16384)")
	fs.BoolVar(&f.packPrompts, "pack-prompts", true, "train the completions of one prompt (a subset's aggregation traces) in one row that computes the prompt once, where that costs less and fits --micro-batch-tokens, else in the fewest such rows; false trains every trace in a row of its own (the same gradient but for float rounding)")
	fs.BoolVar(&c.Advantage.ScaleSearch, "scale-search-adv", false, "divide set advantages by their std")
	fs.BoolVar(&c.Advantage.ScaleAggregation, "scale-agg-adv", false, "divide aggregation advantages by their subset's std")
	fs.Float64Var(&c.Advantage.SearchOwnReward, "search-own-reward", 0, "add this weight times a search trace's own reward, minus the mean over its problem's search traces that some subset holds, to its set advantage (not in the paper; 0 = SPIRAL as published)")
	fs.Uint64Var(&c.Seed, "seed", c.Seed, "random seed")
	fs.IntVar(&f.run.CheckpointEvery, "checkpoint-every", 10, "checkpoint every N steps (and at the end or on Ctrl-C)")
	fs.IntVar(&f.run.Keep, "keep", 3, "checkpoints to keep (0 = all)")
	fs.BoolVar(&f.run.Fresh, "fresh", false, "move the previous run in --out aside and start over")
	fs.BoolVar(&f.run.Override, "override", false, "resume a run in --out although these settings differ from its own")
	fs.BoolVar(&f.run.TensorBoard, "tensorboard", false, "log every metrics.jsonl and eval.jsonl line to TensorBoard too, as it is written: an event file in --out/tensorboard/ (tensorboard --logdir OUT)")
	fs.BoolVar(&f.quiet, "quiet", false, "no progress bars")
	fs.StringVar(&f.evalData, "eval-data", "", "held-out problems evaluated during training (default: the embedded task's test split when training on it)")
	markNonEmpty(fs, "eval-data", "a JSONL, JSON or Parquet file of held-out problems")
	fs.IntVar(&f.run.EvalEvery, "eval-every", 10, "evaluate every N steps, at step 0 and at the end (0 = never)")
	fs.IntVar(&f.evalN, "eval-problems", 64, "held-out problems per evaluation")
	fs.IntVar(&f.run.EvalSamples, "eval-samples", 4, "samples per held-out problem (pass@1 and majority@k are reported)")
	f.run.FinalRSA = rollout.DefaultRSAConfig()
	fs.IntVar(&f.run.FinalRSA.Steps, "final-rsa-steps", 4, "at the end, RSA (N = 8, K = 4) on the held-out problems for this many steps, written to rsa.json with a summary line (0 = none)")
}

// validate checks every flag before any work; errors are usage errors.
func (f *trainFlags) validate() error {
	cfg := f.cfg
	if cfg.MicroBatchTokens <= 0 {
		// 0 is auto, sized to the model later; a negative value is
		// refused below with train's range (>= 0), which cfg.Validate's
		// ">= 1" would contradict.
		cfg.MicroBatchTokens = 1
	}
	// Sampling's range takes the greedy 0 ("want a finite value >= 0 (0
	// = greedy)"), which training refuses: a temperature not above 0 is
	// refused below with train's own range.
	sf := f.sf
	if t := sf.cfg.Temperature; !(t > 0) || math.IsInf(t, 0) {
		sf.cfg.Temperature = 1
	}
	errs := []error{f.rf.validate(), f.exec.validate(), sf.validate(), cfg.Validate(), f.run.Validate(), validLR(f.lr, true), countedOrNone("--warmup", f.warmup),
		counted("--eval-problems", f.evalN)}
	// Every count, those the algorithm ignores included (a bad value is a
	// mistake either way); their lower bounds are the configs'.
	c, p, r := f.cfg, f.cfg.Pipeline, f.run
	errs = append(errs, countsAtMost(count{"--steps", r.Steps, 1}, count{"--problems", c.Problems, 1}, count{"--draw-rounds", c.MaxDrawRounds, 1},
		count{"--n1", p.N1, 1}, count{"--k", p.K, 1}, count{"--n", p.N, 1}, count{"--n2", p.N2, 1}, count{"--agg-rounds", p.Rounds, 1},
		count{"--candidate-tokens", p.CandidateTokens, 0}, count{"--group", c.GroupSize, 2}, count{"--micro-batch-tokens", c.MicroBatchTokens, 0},
		count{"--checkpoint-every", r.CheckpointEvery, 1}, count{"--keep", r.Keep, 0}, count{"--eval-every", r.EvalEvery, 0},
		count{"--eval-samples", r.EvalSamples, 1}, count{"--final-rsa-steps", r.FinalRSA.Steps, 0}))
	if f.cfg.MicroBatchTokens < 0 {
		errs = append(errs, fmt.Errorf("--micro-batch-tokens %d: want >= 0 (0 = auto)", f.cfg.MicroBatchTokens))
	}
	errs = append(errs, freshOrOverride(f.run.Fresh, f.run.Override))
	// A run within another's checkpoint, or its checkpoints/: that run's
	// --keep or --fresh would take this one away (eval's and export's
	// --out are refused alike).
	errs = append(errs, refuseHousekeptOut(f.run.Dir, "this run", "train"))
	if f.cfg.Pipeline.Rounds == 0 { // the config's 0 (runs saved before the flag) is not a value to give
		errs = append(errs, errors.New("--agg-rounds is 0; want >= 1"))
	}
	// GRPO validates no pipeline, whose --candidate-tokens its final RSA
	// reads: a negative cap there was refused by rl.Run, once the model
	// was opened and its graphs built.
	if f.cfg.Algo == rl.AlgoGRPO && f.finalRSA() && p.CandidateTokens < 0 {
		errs = append(errs, fmt.Errorf("--candidate-tokens %d: want >= 0 (0 = no cap)", p.CandidateTokens))
	}
	switch t := f.sf.cfg.Temperature; {
	case t == 0:
		errs = append(errs, errors.New("--temperature 0 samples greedily: every trace of a problem would be the same, so no advantage is ever non-zero and no step trains; want a temperature > 0 (1 samples the policy being trained)"))
	case !(t > 0) || math.IsInf(t, 0):
		errs = append(errs, fmt.Errorf("--temperature %v: want a finite temperature > 0 (1 samples the policy being trained)", t))
	}
	if f.data == "" && f.evalData == "" {
		errs = append(errs, unreadDataFlags(f.changed, "--data and --eval-data", "the embedded task"))
	}
	if f.data != "" && f.evalData == "" {
		// The embedded task's test split is the held-out set only when
		// training on that task: asked-for evaluations would not run.
		for _, name := range []string{"eval-every", "eval-problems", "eval-samples", "final-rsa-steps"} {
			if f.changed(name) && (name != "eval-every" || f.run.EvalEvery > 0) && (name != "final-rsa-steps" || f.run.FinalRSA.Steps > 0) {
				errs = append(errs, fmt.Errorf("--%s: training on --data %s evaluates held-out problems from --eval-data only; give one", name, f.data))
			}
		}
	}
	errs = append(errs, f.requests())
	arts, err := f.params.artifacts()
	if err != nil {
		errs = append(errs, err)
	}
	errs = append(errs, f.engine.validate(), f.sf.validateEngine(f.engine.engine), f.sync.validate(f.engine.engine, arts.LoRA.Enabled()))
	if err := f.df.opt.Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// requests refuses, as checkRequests does eval's and generate's, counts
// whose product is more completions than one generation call takes
// (rollout.MaxRequests): a step's search traces (--problems x --n1),
// aggregation traces (--problems x --k x --n2, each round's) or GRPO's
// (--problems x --group); the held-out evaluations', of the problems
// --eval-problems leaves, runTrain's. A count out of its range is refused
// on its own, and its products not checked.
func (f *trainFlags) requests() error {
	c, p := f.cfg, f.cfg.Pipeline
	type call struct {
		counts []count
		what   string
	}
	calls := []call{{[]count{{"--problems", c.Problems, 1}, {"--group", c.GroupSize, 1}}, "a step's traces"}}
	if c.Algo != rl.AlgoGRPO {
		calls = []call{{[]count{{"--problems", c.Problems, 1}, {"--n1", p.N1, 1}}, "a step's search traces"},
			{[]count{{"--problems", c.Problems, 1}, {"--k", p.K, 1}, {"--n2", p.N2, 1}}, "a step's aggregation traces"}}
	}
	var errs []error
	for _, cl := range calls {
		n := 1
		var names []string
		for _, x := range cl.counts {
			if x.v < x.low || x.v > maxCount {
				n = 0 // refused on its own
				break
			}
			n *= x.v
			names = append(names, fmt.Sprintf("%s %d", x.flag, x.v))
		}
		if n > rollout.MaxRequests {
			errs = append(errs, fmt.Errorf("%s: %d completions in one call (%s); want at most %d", strings.Join(names, " x "), n, cl.what, rollout.MaxRequests))
		}
	}
	return errors.Join(errs...)
}

// checkInputs refuses the input files given that are not there, cannot
// be opened or are directories, an --out or --sync-dir that is a file or
// lies under one, and a --sync-dir that cannot be written in
// (refuseUnwritable; errors naming their flags, usage errors but for a
// full disk), before ONNX
// Runtime is looked for or the model read, as a missing --model is: a
// machine without the runtime said only that.
func (f *trainFlags) checkInputs() error {
	errs := []error{checkDataFile("--data", f.data), checkDataFile("--eval-data", f.evalData), f.tmpl.check(), refuseUnderFile("--out", f.run.Dir)}
	if f.engine.engine == "openai" {
		err := refuseUnderFile("--sync-dir", f.sync.dir)
		if err == nil {
			err = refuseUnwritable("--sync-dir", f.sync.dir)
		}
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// spiralOnlyFlags are train's flags that only the SPIRAL pipeline's
// algorithms read (--agg-rounds with GRPO is rl.Config's to refuse;
// --candidate-tokens, which the final RSA reads too, is ignoredFlags').
var spiralOnlyFlags = []string{"n1", "k", "n", "n2", "scale-search-adv", "scale-agg-adv", "search-own-reward"}

// ignoredFlags lists the flags given that --algo does not read, each with
// why: GRPO samples --group traces a problem and no SPIRAL pipeline, the
// other algorithms the pipeline and no group; search-only does not
// scale the aggregation advantages it does not train, nor agg-only the
// set advantages; --reward-truncated without --reward-fallback changes
// almost no reward (rewardFlags.ignored). --candidate-tokens and
// --aggregate-template also shape the final RSA's aggregation prompts,
// so GRPO ignores them only when no final RSA runs (--final-rsa-steps 0,
// or --data without --eval-data). The held-out evaluations' flags are listed too where no
// evaluation reads them. They are warnings, not usage errors, so that one
// set of flags can serve runs of each algorithm, with evaluations or
// without.
func (f *trainFlags) ignoredFlags() []string {
	var out []string
	if f.cfg.Algo == rl.AlgoGRPO {
		for _, name := range spiralOnlyFlags {
			if f.changed(name) {
				out = append(out, fmt.Sprintf("--%s shapes the SPIRAL pipeline (--algo spiral, agg-only or search-only); --algo grpo, which samples --group traces a problem, ignores it", name))
			}
		}
		finalRSA := f.finalRSA()
		if f.changed("candidate-tokens") && !finalRSA {
			out = append(out, "--candidate-tokens caps the candidates of the SPIRAL pipeline's aggregation prompts and of the final RSA; --algo grpo, which samples --group traces a problem, with no final RSA (--final-rsa-steps 0, or --data without --eval-data) ignores it")
		}
		if f.changed("aggregate-template") && !finalRSA {
			out = append(out, "--aggregate-template renders the SPIRAL pipeline's aggregation prompts and the final RSA's; --algo grpo, which samples --group traces a problem, with no final RSA (--final-rsa-steps 0, or --data without --eval-data) ignores it")
		}
	} else if f.changed("group") {
		out = append(out, fmt.Sprintf("--group is --algo grpo's; --algo %s, which samples --n1 search traces a problem, ignores it", f.cfg.Algo))
	}
	// The ablations compute the advantages of the traces they do not
	// train and use them for nothing, their scaling included.
	switch {
	case f.cfg.Algo == rl.AlgoSearchOnly && f.changed("scale-agg-adv"):
		out = append(out, "--scale-agg-adv scales the aggregation traces' advantages; --algo search-only, which trains the search traces alone, ignores it")
	case f.cfg.Algo == rl.AlgoAggOnly && f.changed("scale-search-adv"):
		out = append(out, "--scale-search-adv scales the set advantages that credit a round's candidates (the search traces, and with --agg-rounds above 1 the previous round's aggregation traces); --algo agg-only, which trains the aggregation traces on their own rewards alone, ignores it")
	}
	if f.cfg.Algo == rl.AlgoAggOnly && f.changed("search-own-reward") {
		out = append(out, "--search-own-reward adds to the search traces' advantages; --algo agg-only, which trains the aggregation traces alone, ignores it")
	}
	out = append(out, f.reward.ignored()...)
	// The held-out evaluations' flags where none reads them.
	if f.run.EvalEvery == 0 && f.changed("eval-samples") {
		out = append(out, "--eval-samples sets the samples of the evaluations every --eval-every steps; --eval-every 0 runs none and ignores it")
	}
	if f.run.EvalEvery == 0 && f.run.FinalRSA.Steps == 0 {
		for _, name := range []string{"eval-data", "eval-problems"} {
			if f.changed(name) {
				out = append(out, fmt.Sprintf("--%s chooses the held-out problems; with --eval-every 0 and --final-rsa-steps 0 no evaluation runs, so it is ignored", name))
			}
		}
	}
	return out
}

// finalRSA reports whether the run ends with an RSA evaluation of its
// held-out problems: asked for (--final-rsa-steps), and with held-out
// problems to evaluate (the embedded task's, or --eval-data's).
func (f *trainFlags) finalRSA() bool {
	return f.run.FinalRSA.Steps > 0 && (f.data == "" || f.evalData != "")
}

// untrainedSearch says why a SPIRAL run's search traces cannot learn,
// or "" when they can: a search trace's advantage is the mean value of
// the subsets holding it less the mean of all --k subsets, always 0 with
// one subset or with subsets that each hold every search trace, so only
// the aggregation traces learn. The search traces are still trained, as
// SPIRAL trains every search trace in a subset, with advantage 0: their
// tokens count in the token-mean loss and the entropy, where --algo
// agg-only leaves them out. (search-only, which would then train
// nothing, is refused by rl.Config.Validate.) With --search-own-reward
// and two or more traces a subset, the held traces learn from their own
// rewards, centred on the held traces' mean.
func (f *trainFlags) untrainedSearch() string {
	p := f.cfg.Pipeline
	if f.cfg.Algo != rl.AlgoSpiral || !(p.K == 1 || p.N == p.N1) || f.cfg.Advantage.SearchOwnReward > 0 && p.N >= 2 {
		return ""
	}
	why := "every subset holds every search trace, so each one's set-level advantage is always 0"
	if p.K == 1 {
		why = "one subset is the mean of all --k subsets, so a search trace's set-level advantage is always 0 (and one in no subset has none)"
	}
	return fmt.Sprintf("--algo spiral with --k %d, --n %d and --n1 %d: %s and only the aggregation traces learn; the search traces are still trained, with advantage 0, so their tokens count in the token-mean loss (scaling the aggregation traces' gradient down) and in the entropy, which --algo agg-only leaves them out of; want --k >= 2 and --n < --n1 for the search traces to learn", p.K, p.N, p.N1, why)
}

// untrainedLastRound says why a SPIRAL run's last-round aggregation
// traces cannot learn, or "" when they can: with --n2 1 a trace is its
// subset's baseline, so its own advantage is always 0, and the last round
// has no next one to credit it (rl.Config.Validate refuses --n2 1 with
// one round, or with --n = --k, where no aggregation trace would learn).
func (f *trainFlags) untrainedLastRound() string {
	p := f.cfg.Pipeline
	if f.cfg.Algo != rl.AlgoSpiral || p.N2 != 1 || p.AggregationRounds() < 2 {
		return ""
	}
	return fmt.Sprintf("--algo spiral with --n2 1 and --agg-rounds %d: a round-%d aggregation trace is its subset's baseline and no later round credits it, so its advantage is always 0: those traces only score round %d's and are still trained, with advantage 0, so their tokens count in the token-mean loss (scaling the other traces' gradient down) and in the entropy; want --n2 >= 2 for them to learn",
		p.Rounds, p.Rounds, p.Rounds-1)
}

// offPolicySampling warns of sampling settings that draw the traces from
// another distribution than the one the update's log-probabilities (and
// pi_old) are of, the model's at temperature 1 over the tokenizer's ids;
// "" at the defaults.
func (f *trainFlags) offPolicySampling() string {
	c := f.sf.cfg
	var set []string
	if c.Temperature != 1 {
		set = append(set, fmt.Sprintf("--temperature %g", c.Temperature))
	}
	if c.TopP < 1 {
		set = append(set, fmt.Sprintf("--top-p %g", c.TopP))
	}
	if c.TopK > 0 {
		set = append(set, fmt.Sprintf("--top-k %d", c.TopK))
	}
	if len(set) == 0 {
		return ""
	}
	return fmt.Sprintf("%s: the traces are drawn from another distribution than the model's at temperature 1 over the tokenizer's ids, whose log-probabilities the update uses (pi_old included), so it is off-policy; train at the defaults (--temperature 1, --top-p 1, --top-k 0) for the policy gradient", strings.Join(set, ", "))
}

// nearGreedySampling warns of sampling settings that draw (nearly) only
// the most probable token (rl.NearGreedy): a problem's traces then agree,
// so few steps update; "" for none.
func (f *trainFlags) nearGreedySampling() string {
	c := f.sf.cfg
	set := rl.NearGreedy(c.Temperature, c.TopP, c.TopK)
	if set == "" {
		return ""
	}
	verb := "samples"
	if strings.Contains(set, ",") {
		verb = "sample"
	}
	return fmt.Sprintf("%s %s near-greedily, so a problem's traces agree and few steps will update (a step trains on problems whose traces got different rewards); train at the defaults (--temperature 1, --top-p 1, --top-k 0)", set, verb)
}

// evalFlags are the flags of `spiral eval`.
type evalFlags struct {
	rf      runtimeFlags
	mf      modelFlags
	df      dataFlags
	sf      samplingFlags
	reward  rewardFlags
	tmpl    templateFlags
	mode    string
	data    string
	limit   int
	samples int
	rsa     rollout.RSAConfig
	out     string
	label   string
	seed    uint64
	ckpt    string
	quiet   bool
	traces  bool
	fresh   bool
	engine  engineFlags
	// changed reports whether a flag was given (pflag.FlagSet.Changed).
	changed func(name string) bool
}

func (f *evalFlags) register(fs *pflag.FlagSet) {
	f.changed = fs.Changed
	f.rf.register(fs)
	f.engine.register(fs)
	f.mf.register(fs)
	fs.Lookup("model").Usage += engineModelUsage
	f.df.register(fs)
	f.sf.register(fs)
	f.reward.register(fs)
	f.tmpl.register(fs)
	f.rsa = rollout.DefaultRSAConfig()
	fs.StringVar(&f.mode, "mode", "passk", "scaffold: sequential (accuracy vs token budget), passk (pass@k and majority@k), rsa (recursive self-aggregation)")
	fs.StringVar(&f.data, "data", "", "evaluation problems: JSONL, JSON or Parquet (default: the embedded task's test split)")
	markNonEmpty(fs, "data", "a JSONL, JSON or Parquet file of problems (leave --data out for the embedded task's test split)")
	fs.IntVar(&f.limit, "limit", 0, fmt.Sprintf("evaluate only the first N problems (0 = all; on the embedded task, 0 is the first %d of its test split and N its first N, as data synth --problems N writes them; more than there are evaluates all, with a note)", embeddedEvalProblems))
	fs.IntVar(&f.samples, "samples", rollout.DefaultEvalSamples, "samples per problem (passk, sequential)")
	fs.IntVar(&f.rsa.Population, "population", f.rsa.Population, "RSA population N")
	fs.IntVar(&f.rsa.SubsetSize, "subset", f.rsa.SubsetSize, "RSA subset size K")
	fs.IntVar(&f.rsa.Steps, "rsa-steps", f.rsa.Steps, "RSA aggregation steps T")
	fs.IntVar(&f.rsa.CandidateTokens, "candidate-tokens", f.rsa.CandidateTokens, "cap on each candidate in an aggregation prompt, keeping its end (0 = no cap)")
	fs.StringVar(&f.out, "out", "runs/eval", "output directory: the JSON report MODE.json and its PNG plot, MODE.traces.jsonl (--traces), artifacts/ (the model's sampling graphs), and until the report is written what the evaluation finished (MODE.problems.jsonl.partial, rsa.steps.json.partial), which a rerun resumes")
	markNonEmpty(fs, "out", "the directory to write the report in (default runs/eval)")
	fs.StringVar(&f.label, "label", "", "name of this model in compare's tables and plot's legends (default: the model, with its checkpoint; compare averages the reports of one name as seeds)")
	markNonEmpty(fs, "label", "the model's name in compare and plot (leave --label out for the model's own)")
	fs.Uint64Var(&f.seed, "seed", 1, "random seed")
	fs.StringVar(&f.ckpt, "checkpoint", "", "evaluate the weights of this checkpoint directory (of a run on --model), or of the newest intact one of a run directory (or its checkpoints/) (newer damaged ones are skipped with a warning)")
	markNonEmpty(fs, "checkpoint", checkpointWant)
	fs.BoolVar(&f.quiet, "quiet", false, "no progress bar")
	fs.BoolVar(&f.traces, "traces", false, "also write every judged trace to MODE.traces.jsonl in --out (text, answer, grade; RSA: step and the candidates it read)")
	fs.BoolVar(&f.fresh, "fresh", false, "discard what an interrupted evaluation saved in --out (passk and sequential: the problems it finished, MODE.problems.jsonl.partial; rsa: the steps, rsa.steps.json.partial), which a rerun of its settings resumes, and start over")
}

// checkInputs is trainFlags.checkInputs for eval's input files and
// --checkpoint (a serving engine's is refused by validate).
func (f *evalFlags) checkInputs() error {
	errs := []error{checkDataFile("--data", f.data), f.tmpl.check()}
	if f.ckpt != "" && f.engine.engine != "openai" {
		errs = append(errs, checkCheckpointFlag(f.ckpt))
	}
	return errors.Join(errs...)
}

// rsaOnlyFlags are eval's flags that only --mode rsa reads.
var rsaOnlyFlags = []string{"population", "subset", "rsa-steps", "candidate-tokens"}

// ignoredFlags lists the flags given that --mode does not read, each
// with why: --samples is pass@k's and the sequential budget's, the RSA
// flags and --aggregate-template RSA's; and --reward-truncated without --reward-fallback, which
// changes almost no reward (rewardFlags.ignored). They are warnings, not
// usage errors, so that one set of flags can serve evaluations in each
// mode.
func (f *evalFlags) ignoredFlags() []string {
	var out []string
	if f.mode == "rsa" {
		if f.changed("samples") {
			out = append(out, "--samples is for --mode passk and sequential; --mode rsa, which samples --population members a problem, ignores it")
		}
		return append(out, f.reward.ignored()...)
	}
	for _, name := range rsaOnlyFlags {
		if f.changed(name) {
			out = append(out, fmt.Sprintf("--%s is for --mode rsa; --mode %s, which samples --samples traces a problem, ignores it", name, f.mode))
		}
	}
	if f.changed("aggregate-template") {
		out = append(out, fmt.Sprintf("--aggregate-template is for --mode rsa; --mode %s, which renders search prompts only, ignores it", f.mode))
	}
	return append(out, f.reward.ignored()...)
}

// draws is how many samples of a problem the mode draws from one prompt:
// --samples, or RSA's population.
func (f *evalFlags) draws() int {
	if f.mode == "rsa" {
		return f.rsa.Population
	}
	return f.samples
}

// drawsFlag names the flag of draws.
func (f *evalFlags) drawsFlag() string {
	if f.mode == "rsa" {
		return "--population"
	}
	return "--samples"
}

// checkRequests refuses, as a usage error, more requests than one
// generation call takes (rollout.MaxRequests): n things (problems,
// prompts) x draws samples of each (flag's).
func checkRequests(n int, things string, draws int, flag string) error {
	if n > 0 && draws > rollout.MaxRequests/n {
		return usageError{fmt.Errorf("%s %d x %d %s: %d completions in one call; want at most %d", flag, draws, n, things, n*draws, rollout.MaxRequests)}
	}
	return nil
}

func (f *evalFlags) validate() error {
	errs := []error{f.rf.validateOn(f.engine.engine), f.sf.validate(), f.df.opt.Validate(), countedOrNone("--limit", f.limit), f.engine.validate(), f.sf.validateEngine(f.engine.engine),
		// Every mode's counts, those --mode ignores included (a bad value
		// is a mistake either way); their lower bounds are the mode's.
		countsAtMost(count{"--samples", f.samples, 1}, count{"--population", f.rsa.Population, 1}, count{"--subset", f.rsa.SubsetSize, 1},
			count{"--rsa-steps", f.rsa.Steps, 1}, count{"--candidate-tokens", f.rsa.CandidateTokens, 0})}
	errs = append(errs, refuseRunDir(f.out, f.mode))
	// A checkpoint's directory, the one --checkpoint reads say, or one
	// within it: the run's --keep removes it, the report, plot and
	// artifacts written there with it; its --fresh moves one within its
	// checkpoints/ aside (export refuses such an --out too).
	errs = append(errs, refuseHousekeptOut(f.out, "the evaluation's report", "eval"))
	if f.data == "" {
		errs = append(errs, unreadDataFlags(f.changed, "--data", "the embedded task's test split"))
	}
	if f.engine.engine == "openai" && f.ckpt != "" {
		errs = append(errs, errEngineCheckpoint)
	}
	switch f.mode {
	case "sequential", "passk":
		errs = append(errs, positive("--samples", f.samples))
	case "rsa":
		errs = append(errs, f.rsa.Validate())
	default:
		errs = append(errs, fmt.Errorf("--mode %q: want sequential, passk or rsa", f.mode))
	}
	return errors.Join(errs...)
}

// refuseRunDir refuses eval --mode rsa (mode) into a training run's
// directory out (one holding its metrics.jsonl): the report would be
// written over the run's final RSA report, rsa.json. validate checks it
// up front, and lockEvalOutput again once it holds out's run lock (a run
// may have begun meanwhile).
func refuseRunDir(out, mode string) error {
	if _, err := os.Stat(filepath.Join(out, rl.MetricsFile)); err != nil || mode != "rsa" {
		return nil
	}
	return fmt.Errorf("--out %s is a training run's directory (it holds %s): --mode rsa would write %s over the run's final RSA report, which a resumed run reads as done; give another --out",
		out, rl.MetricsFile, rl.FinalRSAFile)
}

// sftFlags are the flags of `spiral sft`.
type sftFlags struct {
	rf     runtimeFlags
	mf     modelFlags
	params paramFlags
	cfg    rl.SFTConfig
	out    string
	lr     float64
	warmup int
	quiet  bool
	exec   executorFlags
	// overwrite lets the trained model replace one already in out.
	overwrite bool
	// changed reports whether a flag was given (pflag.FlagSet.Changed).
	changed func(name string) bool
}

func (f *sftFlags) register(fs *pflag.FlagSet) {
	f.changed = fs.Changed
	f.rf.register(fs)
	f.exec.register(fs)
	f.mf.register(fs)
	fs.Lookup("tokenizer").Usage += "; the trained model in --out gets it, with the tokenizer files beside it (tokenizer_config.json, ...)"
	f.params.register(fs)
	f.cfg = rl.DefaultSFTConfig()
	c := &f.cfg
	fs.StringVar(&f.out, "out", "runs/sft", "output directory: the trained model (model.onnx, tokenizer.json, config.json), sft.jsonl, artifacts/, tensorboard/ (--tensorboard), and checkpoints/ until the model is written")
	markNonEmpty(fs, "out", "the directory to write the trained model in (default runs/sft)")
	fs.BoolVar(&f.overwrite, "overwrite", false, "replace a model already in --out")
	fs.IntVar(&c.Steps, "steps", c.Steps, "optimizer steps")
	fs.IntVar(&c.Batch, "batch", c.Batch, "examples per step")
	fs.Float64Var(&f.lr, "lr", 3e-3, "peak learning rate (cosine decay to 10% after warmup)")
	fs.IntVar(&f.warmup, "warmup", 20, "linear learning-rate warmup, in optimizer updates (a skipped update does not advance it)")
	fs.Float64Var(&c.Mix.AggregateShare, "aggregate-share", c.Mix.AggregateShare, "share of aggregation examples in [0, 1] (the rest are search examples)")
	fs.IntVar(&c.Mix.Candidates, "candidates", c.Mix.Candidates, "candidate solutions per aggregation example")
	fs.Float64Var(&c.Mix.ReadShare, "aggregate-read-share", c.Mix.ReadShare, "share in [0, 1] of aggregation examples that read the candidates (take a right one); the rest take one drawn uniformly")
	fs.Uint64Var(&c.Seed, "seed", c.Seed, "random seed")
	fs.IntVar(&c.EvalEvery, "eval-every", c.EvalEvery, "evaluate every N steps (0 = only at the end)")
	fs.IntVar(&c.EvalProblems, "eval-problems", c.EvalProblems, "held-out problems per evaluation (0 = no evaluation, not even at the end)")
	fs.IntVar(&c.MicroBatchTokens, "micro-batch-tokens", c.MicroBatchTokens, "rows x length per training call")
	fs.Float64Var(&c.MaxGradNorm, "max-grad-norm", c.MaxGradNorm, "global gradient-norm clip (0 or less = off)")
	fs.IntVar(&c.CheckpointEvery, "checkpoint-every", c.CheckpointEvery, "checkpoint every N steps (and at the end or on Ctrl-C) in --out/checkpoints/, removed once the model is written")
	fs.IntVar(&c.Keep, "keep", c.Keep, "checkpoints to keep (0 = all)")
	fs.BoolVar(&c.Fresh, "fresh", false, "move an interrupted run's checkpoints and log in --out aside and start over")
	fs.BoolVar(&c.Override, "override", false, "resume an interrupted run in --out although these settings differ from its own")
	fs.BoolVar(&c.TensorBoard, "tensorboard", false, "log every sft.jsonl line to TensorBoard too, as it is written: an event file in --out/tensorboard/ (tensorboard --logdir OUT)")
	fs.BoolVar(&f.quiet, "quiet", false, "no progress bar")
}

func (f *sftFlags) validate() error {
	c := f.cfg
	errs := []error{f.rf.validate(), f.exec.validate(), c.Validate(), validLR(f.lr, false), countedOrNone("--warmup", f.warmup),
		countsAtMost(count{"--steps", c.Steps, 1}, count{"--batch", c.Batch, 1}, count{"--candidates", c.Mix.Candidates, 1}, count{"--eval-every", c.EvalEvery, 0},
			count{"--eval-problems", c.EvalProblems, 0}, count{"--micro-batch-tokens", c.MicroBatchTokens, 1}, count{"--checkpoint-every", c.CheckpointEvery, 1},
			count{"--keep", c.Keep, 0})}
	errs = append(errs, freshOrOverride(c.Fresh, c.Override))
	errs = append(errs, refuseHousekeptOut(f.out, "the trained model", "sft"))
	if _, err := f.params.artifacts(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// ignoredFlags lists the flags given that the run does not read, each
// with why, as train's ignoredFlags does: --aggregate-read-share shapes
// the aggregation examples, which --aggregate-share 0 never draws;
// --eval-every times the evaluations, which --eval-problems 0 turns off;
// --candidates is read by the aggregation examples and the evaluations'
// aggregation prompts, so by neither under both.
func (f *sftFlags) ignoredFlags() []string {
	var out []string
	noAggregation, noEval := f.cfg.Mix.AggregateShare == 0, f.cfg.EvalProblems == 0
	if noAggregation && f.changed("aggregate-read-share") {
		out = append(out, "--aggregate-read-share is the share of aggregation examples that read their candidates; --aggregate-share 0 draws none, so it is ignored")
	}
	if noEval && f.changed("eval-every") {
		out = append(out, "--eval-every sets how often the held-out problems are evaluated; --eval-problems 0 evaluates none, so it is ignored")
	}
	if noAggregation && noEval && f.changed("candidates") {
		out = append(out, "--candidates sets the candidates of the aggregation examples and of the evaluations' aggregation prompts; --aggregate-share 0 draws no such example and --eval-problems 0 runs no evaluation, so it is ignored")
	}
	return out
}

// generateFlags are the flags of `spiral generate`.
type generateFlags struct {
	rf     runtimeFlags
	mf     modelFlags
	sf     samplingFlags
	engine engineFlags
	n      int
	raw    bool
	jsonl  bool
	seed   uint64
	ckpt   string
}

func (f *generateFlags) register(fs *pflag.FlagSet) {
	f.rf.register(fs)
	f.engine.register(fs)
	f.mf.register(fs)
	fs.Lookup("model").Usage += engineModelUsage
	f.sf.register(fs)
	// generate reads no problems: a given model's default is modelMaxNewTokens.
	fs.Lookup("max-new-tokens").Usage = fmt.Sprintf("tokens per completion (0 = %d for the embedded model, %d for a given model, at most half its context, or of a serving engine's where smaller)", embeddedMaxNewTokens, modelMaxNewTokens)
	fs.IntVar(&f.n, "n", 1, "completions per prompt")
	fs.BoolVar(&f.raw, "raw", false, "send the prompt as is (default: one user turn of the chat template)")
	fs.BoolVar(&f.jsonl, "jsonl", false, "print one JSON object a completion (prompt and sample index, the text as generated, its token ids, why it stopped and the log-probabilities) instead of the text")
	fs.Uint64Var(&f.seed, "seed", 1, "random seed")
	fs.StringVar(&f.ckpt, "checkpoint", "", "sample with the weights of this checkpoint directory (of a run on --model), or of the newest intact one of a run directory (or its checkpoints/) (newer damaged ones are skipped with a warning)")
	markNonEmpty(fs, "checkpoint", checkpointWant)
}

func (f *generateFlags) validate() error {
	errs := []error{f.rf.validateOn(f.engine.engine), f.sf.validate(), counted("--n", f.n), f.engine.validate(), f.sf.validateEngine(f.engine.engine)}
	if f.engine.engine == "openai" && f.ckpt != "" {
		errs = append(errs, errEngineCheckpoint)
	}
	return errors.Join(errs...)
}

// freshOrOverride refuses --fresh with --override: the one starts a run
// over, the other resumes it, and together --override would do nothing.
func freshOrOverride(fresh, override bool) error {
	if fresh && override {
		return errors.New("--fresh starts over and --override resumes: give one of them")
	}
	return nil
}

// validLR checks a --lr value: a positive rate that float32 weights can
// take, or 0 for the model's default where the command has one
// (withDefault: train's, not sft's).
func validLR(lr float64, withDefault bool) error {
	if lr == 0 && withDefault {
		return nil
	}
	if !(lr > 0) || lr > maxLR {
		def := ""
		if withDefault {
			def = " (0 = the model's default)"
		}
		return fmt.Errorf("--lr %v: want a learning rate in (0, %g]%s", lr, float32(maxLR), def)
	}
	return nil
}

// maxLR is the largest learning rate accepted: float32's largest value,
// since an update lr x O(1) must fit the weights.
const maxLR = 3.4028234663852886e38

func positive(flag string, v int) error {
	if v < 1 {
		return fmt.Errorf("%s %d: want >= 1", flag, v)
	}
	return nil
}

// maxCount bounds every flag that counts something (samples, traces,
// problems, rows, steps, tokens, subsets, rounds, ranks, threads...):
// 2^20, past any run (the paper's scale is 256 problems a step, 64
// samples, pass@k to k = 1024, 9k-token prompts in 40k-token contexts),
// so that the products the commands form of two or three counts
// (problems x samples, rows x tokens, problems x population x steps)
// fit int, and a count no run needs is refused before it reaches an
// allocation (a make of 2^63 elements panics, one of 10^8 traces runs
// the machine out of memory).
const maxCount = 1 << 20

// maxTokens bounds the tokens of one step or one generation that bench
// forms as rows x tokens: 2^24, past what any model's activations or KV
// cache fit in a device's memory, and small enough that bench's random
// token ids (a few bytes a token) fit in a machine's.
const maxTokens = 1 << 24

// counted checks a count flag: 1..maxCount.
func counted(flag string, v int) error { return countedFrom(flag, v, 1) }

// countedOrNone checks a count flag where 0 means none, auto or all:
// 0..maxCount.
func countedOrNone(flag string, v int) error { return countedFrom(flag, v, 0) }

// countedFrom checks a count flag against low..maxCount, with
// positive's and nonNegative's messages below low.
func countedFrom(flag string, v, low int) error {
	switch {
	case v > maxCount:
		return fmt.Errorf("%s %d: want %d..%d (a count past any run)", flag, v, low, maxCount)
	case low == 1:
		return positive(flag, v)
	}
	return nonNegative(flag, v)
}

// count is a count flag's name and value, and its least value (0 where
// 0 means none, auto or all).
type count struct {
	flag   string
	v, low int
}

// countsAtMost refuses the counts above maxCount; their lower bounds are
// checked, with messages of their own, by the configs' Validate.
func countsAtMost(counts ...count) error {
	var errs []error
	for _, c := range counts {
		if c.v > maxCount {
			errs = append(errs, countedFrom(c.flag, c.v, c.low))
		}
	}
	return errors.Join(errs...)
}

// maxMiB bounds the flags given in MiB: 2^30 MiB (1 PiB), past any
// machine, so that their bytes (MiB << 20) fit int64.
const maxMiB = 1 << 30

// mebibytes checks a flag of MiB: 1..maxMiB.
func mebibytes(flag string, v int) error { return mebibytesFrom(flag, v, positive) }

// mebibytesOrNone checks a flag of MiB where 0 means none: 0..maxMiB.
func mebibytesOrNone(flag string, v int) error { return mebibytesFrom(flag, v, nonNegative) }

// mebibytesFrom checks a flag of MiB against maxMiB, and against low's
// lower bound.
func mebibytesFrom(flag string, v int, low func(flag string, v int) error) error {
	if v > maxMiB {
		return fmt.Errorf("%s %d: want at most %d (1 PiB)", flag, v, maxMiB)
	}
	return low(flag, v)
}

func nonNegative(flag string, v int) error {
	if v < 0 {
		return fmt.Errorf("%s %d: want >= 0", flag, v)
	}
	return nil
}

// executorFlags bound the training step's working memory
// (model.ExecutorOptions).
type executorFlags struct {
	attentionMiB, lossChunkMiB, mlpMiB, keptMiB int
}

func (f *executorFlags) register(fs *pflag.FlagSet) {
	fs.IntVar(&f.attentionMiB, "attention-mib", model.DefaultAttentionBytes>>20, "training: MiB of attention scores per call (one head, a block of queries)")
	fs.IntVar(&f.lossChunkMiB, "loss-chunk-mib", model.DefaultLossChunkBytes>>20, "training: MiB of [positions x vocabulary] tensors per loss chunk")
	fs.IntVar(&f.mlpMiB, "mlp-mib", model.DefaultMLPBytes>>20, "training: MiB of MLP temporaries per call (a layer's MLP runs on chunks of positions)")
	fs.IntVar(&f.keptMiB, "kept-mib", model.DefaultKeptBytes>>20, "training: MiB of layer values the forward pass keeps for the backward pass, which then recomputes only the layers that did not fit (0 = recompute every layer: the least memory)")
}

func (f *executorFlags) validate() error {
	return errors.Join(mebibytes("--attention-mib", f.attentionMiB), mebibytes("--loss-chunk-mib", f.lossChunkMiB), mebibytes("--mlp-mib", f.mlpMiB),
		mebibytesOrNone("--kept-mib", f.keptMiB))
}

func (f *executorFlags) options() model.ExecutorOptions {
	kept := int64(f.keptMiB) << 20
	if kept == 0 {
		kept = -1 // ExecutorOptions' "none"
	}
	return model.ExecutorOptions{AttentionBytes: int64(f.attentionMiB) << 20, LossChunkBytes: int64(f.lossChunkMiB) << 20, MLPBytes: int64(f.mlpMiB) << 20, KeptBytes: kept}
}
