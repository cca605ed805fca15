package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/pflag"

	"github.com/spiral-rl/spiral/model"
	"github.com/spiral-rl/spiral/model/lmgraph"
	"github.com/spiral-rl/spiral/model/memplan"
	"github.com/spiral-rl/spiral/rollout"
)

// The default shapes plan predicts: the paper's aggregation prompt (n = 4
// candidates, about 9k tokens) and generation's prompt plus new tokens
// (1,024 + 4,096).
const (
	defaultPlanTokens      = 9216
	defaultPlanGenCapacity = 5120
)

// planFlags are spiral plan's flags.
type planFlags struct {
	model        string
	rows, tokens int
	loraRank     int
	loraAlpha    float64
	loraTargets  string
	genRows      int
	genCapacity  int
	genCallMiB   int
	device       string // --device-memory
	onDevice     string // --device, train's
	json         bool
	exec         executorFlags
	train        string // train's --train and --freeze
	freeze       string
	// changed reports whether a flag was given (pflag.FlagSet.Changed).
	changed func(name string) bool
}

func (f *planFlags) register(fs *pflag.FlagSet) {
	f.changed = fs.Changed
	f.exec.register(fs)
	fs.StringVar(&f.model, "model", "", "a model file or directory with config.json beside it, or a name: "+strings.Join(memplan.Names(), ", ")+" (a directory of that name here is read instead, with a note)")
	markNonEmpty(fs, "model", "a model file, a directory or one of "+strings.Join(memplan.Names(), ", "))
	fs.IntVar(&f.rows, "rows", 1, "training: rows per micro-batch")
	fs.IntVar(&f.tokens, "tokens", defaultPlanTokens, "training: tokens per row (the paper's aggregation prompt with n = 4 candidates is about 9k); the default is cut to a shorter context of the model's (config.json max_position_embeddings), a value given is planned as given")
	fs.IntVar(&f.loraRank, "lora-rank", 0, "training: LoRA rank (0: full fine-tune)")
	fs.Float64Var(&f.loraAlpha, "lora-alpha", 32, "training: LoRA alpha, as train's (the adapters' product is scaled by alpha / rank); it changes no memory, and is taken so that train's LoRA flags can be planned as given")
	fs.StringVar(&f.loraTargets, "lora-targets", strings.Join(lmgraph.LoRATargets, ","), "training: comma-separated projections LoRA adapts")
	registerSelection(fs, &f.train, &f.freeze)
	fs.IntVar(&f.genRows, "gen-rows", 64, "generation: rows decoded together (--gen-batch)")
	fs.IntVar(&f.genCapacity, "gen-capacity", defaultPlanGenCapacity, "generation: positions per row, prompt plus new tokens (the paper: 1,024 + 4,096); the default is cut to a shorter context of the model's, as --tokens'")
	registerGenCallMiB(fs, &f.genCallMiB)
	fs.StringVar(&f.onDevice, "device", "cpu", "training: the device train runs on, as train's --device: cpu, cuda, cuda:N or auto (planned as cuda); on cuda the device layer holds a trained untied head's gradient transposed too")
	fs.StringVar(&f.device, "device-memory", "", "memory to fit: a number with a unit, k, M, G or T (powers of 1000) or KiB, MiB, GiB or TiB (of 1024), B optional, any case, e.g. 80GB, 1.5T or 24GiB; a number without one is bytes, at least 1 MiB; default: this machine's")
	fs.BoolVar(&f.json, "json", false, "print the prediction as JSON")
}

func setupPlan(fs *pflag.FlagSet) func(context.Context, *cliEnv, []string) error {
	var f planFlags
	f.register(fs)
	return func(_ context.Context, env *cliEnv, args []string) error {
		if len(args) != 0 {
			if f.model == "" {
				// `spiral plan qwen3-4b`, as other tools take a model.
				return usageError{unexpectedArgs{args: args, msg: fmt.Sprintf("unexpected arguments %q: plan takes its model as --model", args), usage: planUsage}}
			}
			return usageError{unexpectedArgs{args: args}}
		}
		budget, err := f.validate()
		if err != nil {
			return usageError{err}
		}
		arch, graph, err := planArch(f.model, env.stderr)
		if err != nil {
			return err
		}
		return runPlan(env, arch, graph, &f, budget)
	}
}

// planUsage ends the usage errors of a missing model.
const planUsage = " (usage: spiral plan --model MODEL [flags])"

// validate checks the flags and returns the memory budget in bytes.
func (f *planFlags) validate() (int64, error) {
	errs := []error{f.exec.validate(), counted("--rows", f.rows), counted("--tokens", f.tokens),
		counted("--gen-rows", f.genRows), counted("--gen-capacity", f.genCapacity), mebibytes("--gen-call-mib", f.genCallMiB)}
	if f.model == "" {
		errs = append(errs, errors.New("--model is required: a model file, a directory with config.json, or one of "+strings.Join(memplan.Names(), ", ")+planUsage))
	}
	if _, _, err := model.ParseDevice(f.onDevice); err != nil {
		errs = append(errs, fmt.Errorf("--device: %w", err))
	}
	if f.loraRank < 0 {
		errs = append(errs, fmt.Errorf("--lora-rank %d: want >= 0", f.loraRank))
	} else if _, err := parseLoRA(f.loraRank, f.loraAlpha, f.loraTargets); err != nil {
		errs = append(errs, err)
	} else { // a bad value is said first, and alone, as paramFlags.artifacts says it
		errs = append(errs, loraWithoutRank(f.changed, f.loraRank))
	}
	_, err := parseSelection(f.train, f.freeze)
	errs = append(errs, err, loraSelection(f.loraRank, f.train, f.freeze))
	var budget int64
	// An empty one given ("$MEM" unset) is no size: it planned for this
	// machine in silence.
	if f.device != "" || f.changed("device-memory") {
		b, err := parseByteSize(f.device)
		if err != nil {
			errs = append(errs, fmt.Errorf("--device-memory: %w", err))
		}
		budget = b
	} else {
		b, err := machineMemory()
		if err != nil {
			errs = append(errs, fmt.Errorf("--device-memory not given and %w", err))
		}
		budget = b
	}
	return budget, errors.Join(errs...)
}

// planArch reads the model's shape: the config.json beside a model
// file (or inside a directory), whose architecture (memplan.ParseConfig:
// Qwen3, Qwen2, Llama, Mistral) says what parameters it has, or a name
// memplan knows. A directory is read even where its name is a release's
// too (a qwen3-4b/ that an export or init-model made: the model the user
// has, as every other command's --model reads it), with a note to warn.
// It returns too the model's graph, whose parameter names --train and
// --freeze select by as train's do: the model file, or a directory's
// model.onnx ("" for a name, config.json itself or a directory without a
// graph).
func planArch(m string, warn io.Writer) (memplan.Arch, string, error) {
	named, isName := memplan.Named(m)
	st, err := os.Stat(m)
	switch {
	case isName && (err != nil || !st.IsDir()):
		return named, "", nil
	case err != nil:
		// Neither a name nor a path that is there: a bad value of the
		// flag, as another command's --model that is not there is.
		return memplan.Arch{}, "", usageError{fmt.Errorf("--model %q: not one of %s, and %w", m, strings.Join(memplan.Names(), ", "), err)}
	}
	path, graph := filepath.Join(filepath.Dir(m), model.ConfigFile), m
	if filepath.Base(m) == model.ConfigFile {
		graph = ""
	}
	if st.IsDir() {
		path, graph = filepath.Join(m, model.ConfigFile), filepath.Join(m, "model.onnx")
		if !isRegular(graph) {
			graph = ""
		}
	}
	if isName {
		fmt.Fprintf(warn, "spiral: note: --model %s: planning the model at %s (%s), which exists, not the %s release of that name (run from a directory without %s to plan the release)\n", m, m, path, m, m)
	}
	a, err := memplan.LoadConfig(path)
	if errors.Is(err, fs.ErrNotExist) && st.IsDir() {
		if err := planRunPathError(m); err != nil {
			return memplan.Arch{}, "", err
		}
	}
	if errors.Is(err, fs.ErrNotExist) {
		return memplan.Arch{}, "", fmt.Errorf("--model %q needs the Hugging Face config.json beside it: %w", m, err)
	}
	if err != nil {
		return memplan.Arch{}, "", fmt.Errorf("--model %q: %w", m, err)
	}
	return a, graph, nil
}

// planReport is spiral plan's output.
type planReport struct {
	Arch memplan.Arch `json:"arch"`
	// Device is the device planned, "cpu" or "cuda" (--device; auto
	// planned as cuda).
	Device string `json:"device"`
	// Rows, Tokens, GenRows and GenCapacity are the shapes planned (the
	// defaults cut to the model's context: withinContext).
	// TrainedParams is what the training step trains: LoRA's adapters,
	// or the parameters --train and --freeze select (all by default).
	Rows          int            `json:"rows"`
	Tokens        int            `json:"tokens"`
	GenRows       int            `json:"gen_rows"`
	GenCapacity   int            `json:"gen_capacity"`
	Params        int64          `json:"params"`
	TrainedParams int64          `json:"trained_params"`
	DeviceMemory  int64          `json:"device_memory_bytes"`
	Train         []memplan.Item `json:"train"`
	TrainTotal    int64          `json:"train_total_bytes"`
	Generate      []memplan.Item `json:"generate"`
	GenerateTotal int64          `json:"generate_total_bytes"`
	// MaxTokens maps rows per micro-batch to the longest rows that fit.
	MaxTokens map[int]int `json:"max_tokens"`
	// MaxGenRows is the most rows of --gen-capacity positions generation
	// fits.
	MaxGenRows int `json:"max_gen_rows"`
	// TrainingGenerateTotal and MaxTrainingGenRows are generation's peak
	// and rows within spiral train, whose gradients and AdamW moments
	// stay allocated through the rollouts.
	TrainingGenerateTotal int64 `json:"training_generate_total_bytes"`
	MaxTrainingGenRows    int   `json:"max_training_gen_rows"`
	// Traffic is what crosses between host and device memory on CUDA.
	Traffic memplan.Traffic `json:"device_traffic"`
}

func runPlan(env *cliEnv, arch memplan.Arch, graph string, f *planFlags, budget int64) error {
	opts := f.exec.options()
	tokensCut := f.withinContext(arch, "tokens", &f.tokens)
	genCut := f.withinContext(arch, "gen-capacity", &f.genCapacity)
	lora, err := parseLoRA(f.loraRank, f.loraAlpha, f.loraTargets)
	if err != nil {
		return usageError{err}
	}
	// adapted says where LoRA's targets were found, for the training
	// line: the graph's projections, as train finds them, else
	// config.json's.
	var adapted string
	if lora.Rank > 0 {
		n := arch.Layers * len(lora.Targets)
		adapted = "of config.json's shape"
		if graph != "" {
			if n, err = graphLoRA(graph, arch, lora); err != nil {
				return modelFlagUsage(err)
			}
			adapted = "of the graph, found by their module names"
		}
		adapted = rollout.Plural(n, "projection") + " " + adapted
	}
	if err := arch.CheckLoRARank(lora.Rank, lora.Targets); err != nil {
		return usageError{fmt.Errorf("--lora-rank %d: %w", lora.Rank, err)}
	}
	sel, err := parseSelection(f.train, f.freeze)
	if err != nil {
		return usageError{err}
	}
	// known is what the selection trains of a graph whose parameters
	// have no transformers names, sized by its shapes.
	var known *memplan.Trained
	if graph != "" && lora.Rank == 0 && (sel.Train != nil || sel.Freeze != nil) {
		if sel, known, err = graphSelection(graph, arch, sel, selectionFlags(f.train, f.freeze)); err != nil {
			return modelFlagUsage(err)
		}
	} else if graph != "" && lora.Rank == 0 {
		if err := graphParams(graph, arch); err != nil {
			return err
		}
	}
	trained := arch.LoRAParams(lora.Rank, lora.Targets)
	if known != nil {
		trained = known.Params
	} else if lora.Rank == 0 {
		// A selection that matches no parameter, or leaves none to train,
		// is refused as train refuses it.
		t, err := arch.Trained(sel)
		var se *lmgraph.SelectionError
		if graph == "" && errors.As(err, &se) {
			se.Names += "; transformers' names, from config.json: train matches its graph's own names, which spiral artifacts lists; give --model the model file to plan by them"
		}
		if err != nil {
			return modelFlagUsage(err)
		}
		trained = t.Params
	}
	dev, _, err := model.ParseDevice(f.onDevice)
	if err != nil {
		return usageError{fmt.Errorf("--device: %w", err)}
	}
	tr := memplan.Train{Rows: f.rows, Tokens: f.tokens, LoRARank: lora.Rank, LoRATargets: lora.Targets, Selection: sel, Known: known,
		AttentionBytes: opts.AttentionBytes, LossChunkBytes: opts.LossChunkBytes, MLPBytes: opts.MLPBytes, KeptBytes: opts.KeptBytes,
		Device: dev.Kind == model.CUDA}
	// The shape is valid (planArch): what the peaks refuse is a size of
	// the flags past memplan.MaxBytes.
	train, err := memplan.TrainPeak(arch, tr)
	if err != nil {
		return planShapeError("--rows/--tokens/--lora-rank", err)
	}
	gen := memplan.Generate{Rows: f.genRows, Capacity: f.genCapacity, CallBytes: int64(f.genCallMiB) << 20, Chunk: rollout.PrefillChunk}
	generate, err := memplan.GeneratePeak(arch, gen)
	if err != nil {
		return planShapeError("--gen-rows/--gen-capacity", err)
	}
	held := tr // the loop below changes tr's rows
	inTraining := gen
	inTraining.Training = &held
	trainingGen, err := memplan.GeneratePeak(arch, inTraining)
	if err != nil {
		return planShapeError("--gen-rows/--gen-capacity/--lora-rank", err)
	}
	traffic, err := memplan.DeviceTraffic(arch, gen, tr)
	if err != nil {
		return err
	}
	// onDevice is what the device layer adds to both peaks in train,
	// which a CPU plan says.
	var onDevice int64
	if !tr.Device {
		cuda := tr
		cuda.Device = true
		items, err := memplan.TrainPeak(arch, cuda)
		if err != nil {
			return planShapeError("--rows/--tokens/--lora-rank", err)
		}
		onDevice = memplan.Total(items) - memplan.Total(train)
	}
	rep := planReport{Arch: arch, Device: "cpu", Rows: f.rows, Tokens: f.tokens, GenRows: f.genRows, GenCapacity: f.genCapacity, Params: arch.Params(), TrainedParams: trained, DeviceMemory: budget, Train: train, TrainTotal: memplan.Total(train),
		Generate: generate, GenerateTotal: memplan.Total(generate), MaxTokens: map[int]int{}, MaxGenRows: memplan.MaxRows(arch, gen, budget),
		TrainingGenerateTotal: memplan.Total(trainingGen), MaxTrainingGenRows: memplan.MaxRows(arch, inTraining, budget),
		Traffic: traffic}
	if tr.Device {
		rep.Device = "cuda"
	}
	for _, rows := range []int{1, 2, 4, 8, 16} {
		tr.Rows = rows
		rep.MaxTokens[rows] = memplan.MaxTokens(arch, tr, budget)
	}
	if f.json {
		return json.NewEncoder(env.stdout).Encode(rep)
	}
	what := "full fine-tune, AdamW"
	switch {
	case f.loraRank > 0:
		what = fmt.Sprintf("LoRA rank %d on %s: %s, AdamW", f.loraRank, strings.Join(lora.Targets, ","), adapted)
	case f.train != "" || f.freeze != "":
		names := "transformers'"
		if graph != "" {
			names = "the graph's"
		}
		if known != nil {
			names += " names, which have no transformers names: a layer's gradients planned as a whole layer's"
		} else {
			names += " names"
		}
		what = fmt.Sprintf("%s of the parameters trained (%s, by %s), AdamW", paramCount(trained), selectionFlags(f.train, f.freeze), names)
	}
	fmt.Fprintf(env.stdout, "model: %d layers, hidden %d, %s parameters; memory to fit: %s\n", arch.Layers, arch.Hidden, paramCount(rep.Params), gib(budget))
	w := tabwriter.NewWriter(env.stdout, 0, 0, 2, ' ', 0)
	// Section headers are not cells (no tab): a long one would widen
	// the column; each section's rows are aligned among themselves.
	if tokensCut {
		what += fmt.Sprintf("; the default --tokens %d cut to the model's %d positions, config.json max_position_embeddings", defaultPlanTokens, arch.Context)
	}
	fmt.Fprintf(w, "\ntraining step: %d x %d tokens (%s)%s\n", f.rows, f.tokens, what, pastContext(arch, f.tokens))
	for _, it := range train {
		fmt.Fprintf(w, "  %s\t%10s\n", it.Name, gib(it.Bytes))
	}
	fmt.Fprintf(w, "  peak\t%10s\n", gib(rep.TrainTotal))
	if onDevice > 0 {
		fmt.Fprintf(w, "  (--device cuda adds %s to both peaks in train: the device layer's transposed sum of the untied head's gradient)\n", gib(onDevice))
	}
	genCutNote := ""
	if genCut {
		genCutNote = fmt.Sprintf(" (the default --gen-capacity %d cut to the model's %d positions)", defaultPlanGenCapacity, arch.Context)
	}
	fmt.Fprintf(w, "\ngeneration: %d rows x %d positions%s%s\n", f.genRows, f.genCapacity, genCutNote, pastContext(arch, f.genCapacity))
	for _, it := range generate {
		fmt.Fprintf(w, "  %s\t%10s\n", it.Name, gib(it.Bytes))
	}
	fmt.Fprintf(w, "  peak\t%10s\n", gib(rep.GenerateTotal))
	fmt.Fprintf(w, "  peak in train (its gradients and AdamW moments held)\t%10s\n", gib(rep.TrainingGenerateTotal))
	fmt.Fprintf(w, "\nhost <-> device with --device cuda\n")
	fmt.Fprintf(w, "  per decode step (token ids, mask, positions, cache indices, logits)\t%10s\n", mib(rep.Traffic.DecodeStep))
	fmt.Fprintf(w, "  once (the weights, shared by generation and training)\t%10s\n", gib(rep.Traffic.Weights))
	fmt.Fprintf(w, "  once (AdamW's moments; the update runs on the device)\t%10s\n", gib(rep.Traffic.Moments))
	fmt.Fprintf(w, "  per checkpoint (the trained parameters and moments, to the host)\t%10s\n", gib(rep.Traffic.Checkpoint))
	if err := w.Flush(); err != nil {
		return err
	}
	// Not a row of the table: its width would pad every other row.
	fmt.Fprintf(env.stdout, "  per training step: the batch's token inputs, the loss's per-position numbers and the embedding's gradient (not planned; bench train's call_copy_bytes)\n")
	fmt.Fprintf(env.stdout, "\nfits in %s:\n", gib(budget))
	for _, rows := range []int{1, 2, 4, 8, 16} {
		what := fmt.Sprintf("%2d rows:", rows)
		if rows == 1 {
			what = " 1 row: "
		}
		if n := rep.MaxTokens[rows]; n > 0 {
			fmt.Fprintf(env.stdout, "  training, %s up to %d tokens per row\n", what, n)
		} else {
			fmt.Fprintf(env.stdout, "  training, %s does not fit\n", what)
		}
	}
	if c := arch.Context; c > 0 && rep.MaxTokens[1] > c {
		fmt.Fprintf(env.stdout, "  (rows past the model's %d positions, config.json max_position_embeddings, are no use)\n", c)
	}
	for _, g := range []struct {
		what string
		rows int
	}{{"generation", rep.MaxGenRows}, {"generation in train (its gradients and moments held)", rep.MaxTrainingGenRows}} {
		if g.rows > 0 {
			fmt.Fprintf(env.stdout, "  %s, %d positions per row: up to %s\n", g.what, f.genCapacity, rollout.Plural(g.rows, "row"))
		} else {
			fmt.Fprintf(env.stdout, "  %s, %d positions per row: does not fit\n", g.what, f.genCapacity)
		}
	}
	return nil
}

// graphSelection returns sel as train makes it on the model's graph at
// path, which it selects from by the graph's own parameter names (an
// optimum export's projections are onnx::MatMul_N, not
// model.layers.N.self_attn.q_proj.weight), refusing what train refuses:
// the parameters it trains, by their transformers names, which
// memplan's are; or, where the graph's parameters have no transformers
// names (a dynamo export without its name scopes), which train does not
// need, what they are by the graph's shapes, a layer's gradients
// counted as a whole layer's (the graph does not say which layer holds
// a parameter) and an untied head's transposed gradient wherever a
// parameter of its size is trained. A config.json that does not
// describe the graph (another count of the trained parameters, or more
// than it has) is refused. flags writes the --train and --freeze given
// (selectionFlags).
func graphSelection(path string, arch memplan.Arch, sel lmgraph.Selection, flags string) (lmgraph.Selection, *memplan.Trained, error) {
	t, err := model.TrainedHFParameters(path, sel)
	if err != nil {
		return lmgraph.Selection{}, nil, err
	}
	var n int64
	for _, size := range t.Sizes {
		n += size
	}
	if t.Unnamed != nil {
		if all := arch.Params(); n > all {
			return lmgraph.Selection{}, nil, fmt.Errorf("--model %s: %s trains %d parameters of its graph, more than config.json's shapes hold (%d): config.json does not describe the graph", path, flags, n, all)
		}
		head := int64(arch.Vocab) * int64(arch.Hidden)
		return lmgraph.Selection{}, &memplan.Trained{Params: n, Layer: min(n, arch.LayerParams()), Head: !arch.Tied && slices.Contains(t.Sizes, head)}, nil
	}
	names := make([]string, len(t.Names))
	for i, name := range t.Names {
		names[i] = regexp.QuoteMeta(name)
	}
	hf := lmgraph.Selection{Train: regexp.MustCompile("^(?:" + strings.Join(names, "|") + ")$")}
	// A selection memplan refuses matches none of config.json's names:
	// nothing of the graph's is planned either.
	byConfig, err := arch.Trained(hf)
	if err != nil || byConfig.Params != n {
		return lmgraph.Selection{}, nil, fmt.Errorf("--model %s: %s trains %d parameters of its graph, %d by config.json's shapes: config.json does not describe the graph", path, flags, n, byConfig.Params)
	}
	return hf, nil, nil
}

// graphParams refuses a config.json that does not describe the graph at
// path by its parameters' count, as graphSelection refuses it for a
// selection: a full fine-tune is planned by config.json's shapes alone,
// which would otherwise be another model's in silence.
func graphParams(path string, arch memplan.Arch) error {
	t, err := model.TrainedHFParameters(path, lmgraph.Selection{})
	if err != nil {
		return err
	}
	var n int64
	for _, size := range t.Sizes {
		n += size
	}
	if all := arch.Params(); n != all {
		return fmt.Errorf("--model %s: its graph has %d parameters, config.json's shapes %d: config.json does not describe the graph", path, n, all)
	}
	return nil
}

// graphLoRA finds the adapters of l on the model's graph at path as
// train finds them (model.GraphAdapters: by the transformers module
// names the graph gives its projections, an optimum export's
// onnx::MatMul_N by their MatMul nodes), refusing what train refuses,
// and returns how many projections they adapt. A config.json that does
// not describe the graph (another count of the adapters' parameters
// than its shapes give, by which plan sizes them) is refused.
func graphLoRA(path string, arch memplan.Arch, l lmgraph.LoRA) (int, error) {
	as, err := model.GraphAdapters(path, l)
	if err != nil {
		return 0, err
	}
	var n int64
	for _, a := range as {
		n += int64(l.Rank) * (a.In + a.Out)
	}
	if want := arch.LoRAParams(l.Rank, l.Targets); n != want {
		return 0, fmt.Errorf("--model %s: LoRA rank %d on %s adapts %d parameters of its graph (%s), %d by config.json's shapes: config.json does not describe the graph",
			path, l.Rank, strings.Join(l.Targets, ","), n, rollout.Plural(len(as), "projection"), want)
	}
	return len(as), nil
}

// planShapeError is the usage error of flags for a shape that memplan
// refuses (one past memplan.MaxBytes), its message without the
// package's prefix: the flags say where it comes from.
func planShapeError(flags string, err error) error {
	return usageError{fmt.Errorf("%s: %s", flags, strings.TrimPrefix(err.Error(), "memplan: "))}
}

// withinContext cuts the flag name's value *v, when it was not given, to
// the model's context (arch.Context, when config.json gives it) where it
// is longer, and reports whether it did: a default shape past the context
// would plan rows the model never reads. A value given is planned as
// given (pastContext marks it).
func (f *planFlags) withinContext(arch memplan.Arch, name string, v *int) bool {
	if f.changed(name) || arch.Context == 0 || *v <= arch.Context {
		return false
	}
	*v = arch.Context
	return true
}

// pastContext notes that a row of n positions is longer than the model's
// context (arch.Context, when config.json gives it), else "".
func pastContext(arch memplan.Arch, n int) string {
	if arch.Context == 0 || n <= arch.Context {
		return ""
	}
	return fmt.Sprintf(", past the model's %d positions (config.json max_position_embeddings)", arch.Context)
}

// selectionFlags writes the --train and --freeze given.
func selectionFlags(train, freeze string) string {
	var given []string
	for _, x := range [][2]string{{"--train", train}, {"--freeze", freeze}} {
		if x[1] != "" {
			given = append(given, fmt.Sprintf("%s %q", x[0], x[1]))
		}
	}
	return strings.Join(given, ", ")
}

// paramCount writes n in billions (4.02B), below a billion in millions
// (0.11M, where billions read 0.00B), and below 10,000, where millions
// read 0.00M or 0.01M, whole (384).
func paramCount(n int64) string {
	switch {
	case n >= 1e9:
		return fmt.Sprintf("%.2fB", float64(n)/1e9)
	case n >= 1e4:
		return fmt.Sprintf("%.2fM", float64(n)/1e6)
	}
	return fmt.Sprint(n)
}

func gib(b int64) string { return fmt.Sprintf("%.2f GiB", float64(b)/(1<<30)) }

func mib(b int64) string { return fmt.Sprintf("%.2f MiB", float64(b)/(1<<20)) }

// parseByteSize reads a size with a unit, k, M, G or T (powers of 1000)
// or KiB, MiB, GiB or TiB (of 1024), with or without B, in any case
// (80GB, 1.5T, 24GiB, 512k), or a number without a unit, bytes: at least
// 1 MiB, since less fits no model and is a unit left out ("80").
func parseByteSize(s string) (int64, error) {
	units := []struct {
		suffix string
		mult   float64
	}{{"KIB", 1 << 10}, {"MIB", 1 << 20}, {"GIB", 1 << 30}, {"TIB", 1 << 40}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12},
		{"K", 1e3}, {"M", 1e6}, {"G", 1e9}, {"T", 1e12}, {"B", 1}}
	t := strings.ToUpper(strings.TrimSpace(s))
	mult, unit := 1.0, false
	for _, u := range units {
		if strings.HasSuffix(t, u.suffix) {
			t, mult, unit = strings.TrimSpace(strings.TrimSuffix(t, u.suffix)), u.mult, true
			break
		}
	}
	v, err := strconv.ParseFloat(t, 64)
	if err == nil && v*mult > 1<<62 {
		return 0, fmt.Errorf("%q is past 2^62 bytes (4 EiB): want a size such as 80GB, 24GiB or 512MiB", s)
	}
	if err != nil || !(v > 0) {
		return 0, fmt.Errorf("%q: want a positive size such as 80GB, 24GiB or 512MiB", s)
	}
	if v*mult < 1 {
		return 0, fmt.Errorf("%q is %g bytes: want at least one byte", s, v*mult)
	}
	if !unit && v < 1<<20 {
		n := strings.TrimSpace(s)
		return 0, fmt.Errorf("%q is %s bytes (a number without a unit is bytes, at least 1 MiB): give a unit, such as %sGB or %sGiB", s, strconv.FormatFloat(v, 'f', -1, 64), n, n)
	}
	return int64(v * mult), nil
}

// machineMemory returns MemTotal of /proc/meminfo.
func machineMemory() (int64, error) { return meminfo("MemTotal") }

// availableMemory returns MemAvailable of /proc/meminfo, the memory a
// process can take now without swapping (free, and the caches the kernel
// gives back), or MemTotal where the kernel reports no MemAvailable.
func availableMemory() (int64, error) {
	if b, err := meminfo("MemAvailable"); err == nil {
		return b, nil
	}
	return machineMemory()
}

// meminfo returns the field key of /proc/meminfo in bytes.
func meminfo(key string) (int64, error) {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0, fmt.Errorf("this machine's memory is unknown: %w", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, key+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err == nil {
				return kb << 10, nil
			}
		}
	}
	return 0, fmt.Errorf("this machine's memory is unknown: no %s in /proc/meminfo", key)
}
