package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/spiral-rl/spiral/model"
	"github.com/spiral-rl/spiral/model/optim"
	"github.com/spiral-rl/spiral/model/params"
	"github.com/spiral-rl/spiral/model/tokenizer"
	"github.com/spiral-rl/spiral/rl"
	"github.com/spiral-rl/spiral/rollout"
)

// benchFlags are spiral bench's flags (train and generate).
type benchFlags struct {
	rf     runtimeFlags
	mf     modelFlags
	rows   int
	tokens int
	steps  int
	// params are train's --train, --freeze and LoRA flags; arts what
	// they select (validate).
	params  paramFlags
	arts    model.ArtifactOptions
	prompt  int
	newTok  int
	callMiB int
	seed    uint64
	exec    executorFlags
	// resident: the device layer on the CPU too (the CUDA path's twin).
	resident bool
	// genRows: train's steps each after a generation of that many rows,
	// as training's are (0: none).
	genRows int
	// vocabLimit: the policy's vocabulary, as train's with a tokenizer of
	// that many ids (0: the tokenizer's).
	vocabLimit int
	// maxGradNorm clips train's update as train's --max-grad-norm does.
	maxGradNorm float64
	// microBatchTokens and lr are train's --micro-batch-tokens and --lr
	// (0: train's defaults, benchTrainStep).
	microBatchTokens int
	lr               float64
	// group: train's rows come in groups of that many sharing their
	// prompt, as a subset's aggregation traces do (benchExamples).
	group int
	// packPrompts is train's --pack-prompts (false: every row apart).
	packPrompts bool
	// changed reports whether a flag was given (pflag.FlagSet.Changed).
	changed func(name string) bool
}

// Flags of one bench command only, which the other would ignore: train's
// step and generate's generation (also train's with --generate-rows).
var (
	benchTrainOnly = []string{"tokens", "train", "freeze", "lora-rank", "lora-alpha", "lora-targets", "attention-mib", "loss-chunk-mib", "mlp-mib", "kept-mib", "max-grad-norm",
		"micro-batch-tokens", "lr", "group", "pack-prompts"}
	benchGenerateOnly = []string{"prompt-tokens", "new-tokens", "gen-call-mib"}
)

func (f *benchFlags) register(fs *pflag.FlagSet) {
	f.changed = fs.Changed
	f.rf.register(fs)
	f.mf.register(fs)
	fs.Lookup("tokenizer").Usage += "; its ids are the policy's vocabulary, as train's (a model without one: the logits' whole width)"
	fs.IntVar(&f.vocabLimit, "vocab-limit", 0, "the policy's vocabulary, ids 0..N-1, as train's with a tokenizer of N ids, for a model without that tokenizer (Qwen3's 151669 on a random-weight model of its shape; 0: the tokenizer's ids)")
	f.exec.register(fs)
	fs.IntVar(&f.rows, "rows", 1, "rows per step (train) or sequences (generate)")
	fs.IntVar(&f.tokens, "tokens", 512, "train: tokens per row; the second half is the response the loss covers")
	fs.IntVar(&f.steps, "steps", 3, "full training steps (forward, backward, AdamW) or generations")
	f.params.register(fs)
	for _, name := range []string{"train", "freeze", "lora-rank", "lora-alpha", "lora-targets"} {
		fs.Lookup(name).Usage = "train: " + fs.Lookup(name).Usage
	}
	fs.IntVar(&f.prompt, "prompt-tokens", 512, "generate (and train --generate-rows): prompt tokens per row")
	fs.IntVar(&f.newTok, "new-tokens", 64, "generate (and train --generate-rows): tokens generated per row")
	fs.Float64Var(&f.maxGradNorm, "max-grad-norm", rl.DefaultConfig().MaxGradNorm, "train: global gradient-norm clip (0 or less = off)")
	fs.IntVar(&f.microBatchTokens, "micro-batch-tokens", 0, "train: rows x length per training call, at least one row, as train's (0 = auto: train's, 4 GiB of kept activations by the model's config.json, within 512..16384)")
	fs.Float64Var(&f.lr, "lr", 0, "train: the update's learning rate (0 = train's peak: 1e-4 for the embedded tiny model, 1e-6 for a given model)")
	fs.IntVar(&f.group, "group", 1, "train: rows come in groups of `G` sharing their prompt, as a subset's aggregation traces do, which the step packs as train's --pack-prompts does: in one row where that costs less than separate rows and fits --micro-batch-tokens, else in the fewest rows that do; with G > 1 a row's response is its last quarter (an aggregation trace's share of its row), not its second half; --rows a multiple of G")
	fs.BoolVar(&f.packPrompts, "pack-prompts", true, "train: pack --group's rows as train's --pack-prompts does; false trains every row apart, as train's --pack-prompts=false (the unpacked twin of a --group step); only with --group G > 1")
	fs.IntVar(&f.genRows, "generate-rows", 0, "train: before each step, a generation of this many rows of --prompt-tokens + --new-tokens whose KV cache is released before the step, as training does (the device memory both take; 0: none)")
	registerGenCallMiB(fs, &f.callMiB)
	fs.Uint64Var(&f.seed, "seed", 1, "seed of the random token ids (and of train's LoRA adapters, with --lora-rank)")
	fs.BoolVar(&f.resident, "resident", false, "keep generation's weights and KV cache, and training's parameters, in the device's memory on the CPU too (the CUDA path's CPU twin; always so with --device cuda)")
}

func (f *benchFlags) validate(what string) error {
	errs := []error{f.rf.validate(), f.exec.validate(), counted("--rows", f.rows), counted("--steps", f.steps),
		countsAtMost(count{"--tokens", f.tokens, 2}, count{"--prompt-tokens", f.prompt, 1}, count{"--new-tokens", f.newTok, 1}, count{"--vocab-limit", f.vocabLimit, 0})}
	switch {
	case f.vocabLimit < 0:
		errs = append(errs, fmt.Errorf("--vocab-limit %d: want >= 0 (0: the tokenizer's ids)", f.vocabLimit))
	case f.vocabLimit > 0 && f.mf.tokenizer != "":
		errs = append(errs, fmt.Errorf("--vocab-limit %d and --tokenizer: give one (the policy's vocabulary is the tokenizer's ids)", f.vocabLimit))
	}
	switch what {
	case "train":
		errs = append(errs, tokensOfRows("--rows", f.rows, "--tokens", f.tokens), counted("--group", f.group))
		if f.group >= 1 && f.group <= maxCount && f.rows >= 1 && f.rows%f.group != 0 {
			errs = append(errs, fmt.Errorf("--rows %d: want a multiple of --group %d (groups of rows sharing their prompt)", f.rows, f.group))
		}
		// Without groups every row has a prompt of its own (a half of
		// random ids, which a completion as long never packs beside).
		if f.group == 1 && f.changed("pack-prompts") {
			errs = append(errs, errors.New("--pack-prompts without --group G > 1: no rows share a prompt to pack, so bench train would ignore it"))
		}
		if f.genRows < 0 {
			errs = append(errs, fmt.Errorf("--generate-rows %d: want >= 0 (0: no generation)", f.genRows))
		}
		errs = append(errs, countsAtMost(count{"--generate-rows", f.genRows, 0}))
		if f.genRows > 0 {
			errs = append(errs, positive("--prompt-tokens", f.prompt), positive("--new-tokens", f.newTok), mebibytes("--gen-call-mib", f.callMiB),
				tokensOfRows("--generate-rows", f.genRows, "--prompt-tokens + --new-tokens", f.prompt+f.newTok))
		}
		if f.tokens < 2 {
			errs = append(errs, fmt.Errorf("--tokens %d: want >= 2 (a prompt and a response)", f.tokens))
		}
		if f.microBatchTokens < 0 {
			errs = append(errs, fmt.Errorf("--micro-batch-tokens %d: want >= 0 (0 = auto)", f.microBatchTokens))
		}
		errs = append(errs, countsAtMost(count{"--micro-batch-tokens", f.microBatchTokens, 0}), validLR(f.lr, true))
		if math.IsNaN(f.maxGradNorm) || math.IsInf(f.maxGradNorm, 0) {
			errs = append(errs, fmt.Errorf("--max-grad-norm %v: want a finite norm (0 or less = no clipping)", f.maxGradNorm))
		}
		arts, err := f.params.artifacts()
		errs = append(errs, err)
		f.arts = arts
		if f.genRows == 0 {
			for _, name := range benchGenerateOnly {
				if f.changed(name) {
					errs = append(errs, fmt.Errorf("--%s is bench generate's, or bench train's with --generate-rows (a generation before each step); without it bench train would ignore it", name))
				}
			}
		}
	case "generate":
		errs = append(errs, positive("--prompt-tokens", f.prompt), positive("--new-tokens", f.newTok), mebibytes("--gen-call-mib", f.callMiB),
			tokensOfRows("--rows", f.rows, "--prompt-tokens + --new-tokens", f.prompt+f.newTok))
		if f.changed("generate-rows") {
			errs = append(errs, errors.New("--generate-rows is bench train's (a generation before each step); bench generate takes --rows"))
		}
		for _, name := range benchTrainOnly {
			if f.changed(name) {
				errs = append(errs, fmt.Errorf("--%s is bench train's; bench generate would ignore it", name))
			}
		}
	}
	return errors.Join(errs...)
}

// tokensOfRows refuses rows x tokens above maxTokens, the tokens of one
// step or generation, which bench's random token ids take a few bytes
// each of (counts at most maxCount, so the sum and product fit int; a
// count out of range is refused on its own).
func tokensOfRows(rowsFlag string, rows int, tokensFlag string, tokens int) error {
	if rows < 1 || tokens < 1 || rows > maxCount || tokens > 2*maxCount || rows*tokens <= maxTokens {
		return nil
	}
	return fmt.Errorf("%s %d x %s %d: %d tokens a step; want at most %d", rowsFlag, rows, tokensFlag, tokens, rows*tokens, maxTokens)
}

// checkContext refuses rows longer than --model's context
// (config.json's max_position_embeddings, when stated), as train and
// generate do, rather than running past the positions the model knows or
// failing on an allocation.
func (f *benchFlags) checkContext(what string, r resolvedModel) error {
	hf, err := r.hfConfig()
	if err != nil || hf.MaxPositionEmbeddings == 0 {
		return err
	}
	limit := hf.MaxPositionEmbeddings
	if what == "train" && f.tokens > limit {
		return usageError{fmt.Errorf("--tokens %d: the model (%s) has %d positions (config.json max_position_embeddings)", f.tokens, r.name(), limit)}
	}
	// Compared without the sum, which two large flags overflow past int's
	// range into a negative that every limit passes.
	if (what == "generate" || f.genRows > 0) && (f.prompt > limit || f.newTok > limit-f.prompt) {
		return usageError{fmt.Errorf("--prompt-tokens %d + --new-tokens %d: the model (%s) has %d positions (config.json max_position_embeddings)", f.prompt, f.newTok, r.name(), limit)}
	}
	return nil
}

func setupBench(fs *pflag.FlagSet) func(context.Context, *cliEnv, []string) error {
	var f benchFlags
	f.register(fs)
	return func(ctx context.Context, env *cliEnv, args []string) error {
		const want = "want `spiral bench train` or `spiral bench generate`"
		switch {
		case len(args) == 0:
			return usageError{errors.New(want)}
		case args[0] != "train" && args[0] != "generate":
			// run names a flag that args[0] directly follows whose value
			// may be left out (`bench --shared-arena maybe train`).
			return usageError{unexpectedArgs{args: args, takes: "train or generate", msg: fmt.Sprintf("%s, not %q", want, strings.Join(args, " "))}}
		case len(args) > 1:
			// `bench train --shared-arena maybe`, likewise.
			return usageError{unexpectedArgs{args: args[1:], takes: "none after " + args[0], msg: fmt.Sprintf("%s, not %q", want, strings.Join(args, " "))}}
		}
		if err := f.validate(args[0]); err != nil {
			return usageError{err}
		}
		r, err := f.mf.resolve(env.stderr)
		if err != nil {
			return err
		}
		if err := f.checkContext(args[0], r); err != nil {
			return err
		}
		var tok *tokenizer.Tokenizer
		if f.vocabLimit == 0 {
			if tok, err = benchTokenizer(r); err != nil {
				return err
			}
		}
		if tok != nil {
			defer tok.Close()
		}
		if args[0] == "train" {
			return benchTrain(ctx, env, &f, r, tok)
		}
		return benchGenerate(ctx, env, &f, r, tok)
	}
}

// benchTokenizer loads r's tokenizer, whose ids are the policy's
// vocabulary in train (ExecutorOptions.VocabLimit and the sampler's
// VocabLimit): --tokenizer's, else the tokenizer.json beside the model;
// nil when there is none of the latter (bench's random token ids need
// no tokenizer: benchOpen then runs the logits' whole width).
func benchTokenizer(r resolvedModel) (*tokenizer.Tokenizer, error) {
	if _, err := os.Stat(r.tokenizer); !r.tokenizerGiven && errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return r.loadTokenizer()
}

// benchTrainLine is one JSON line of spiral bench train.
type benchTrainLine struct {
	Phase string `json:"phase"` // "open" or "step"
	Step  int    `json:"step,omitempty"`
	Rows  int    `json:"rows"`
	Toks  int    `json:"tokens"`
	// Group is --group: rows in groups of that many sharing their prompt.
	Group int `json:"group"`
	benchVocab
	// MicroBatchTokens and LR are the step's bounds on a training call
	// (rows x length) and its learning rate, train's (benchTrainStep);
	// MicroBatches is how many calls the step took.
	MicroBatchTokens int     `json:"micro_batch_tokens"`
	LR               float64 `json:"lr"`
	MicroBatches     int     `json:"micro_batches,omitempty"`
	// PackedRows are the step's packed rows (--group's rows sharing a
	// prompt, in one row that computes it once), PackedRowTokens the
	// longest one's positions; absent: none packed. Positions is rows x
	// length over the step's calls (their padding included): packing
	// takes fewer than rows x tokens.
	PackedRows      int `json:"packed_rows,omitempty"`
	PackedRowTokens int `json:"packed_row_tokens,omitempty"`
	Positions       int `json:"positions,omitempty"`
	// Seconds is the step's wall time (forward, loss, backward, AdamW);
	// TokensPerSecond counts rows x tokens over the step before AdamW
	// (the gradients zeroed, forward, loss, backward); the forward, loss
	// and backward seconds are summed over its calls. Step 1 runs the
	// graphs for the first time: steady figures are those of step 2 on.
	// GenerateSeconds is the generation before it (--generate-rows), not
	// counted in Seconds.
	Seconds          float64 `json:"seconds"`
	GenerateSeconds  float64 `json:"generate_seconds,omitempty"`
	TokensPerSecond  float64 `json:"tokens_per_second,omitempty"`
	ForwardSeconds   float64 `json:"forward_seconds,omitempty"`
	LossSeconds      float64 `json:"loss_seconds,omitempty"`
	BackwardSeconds  float64 `json:"backward_seconds,omitempty"`
	OptimizerSeconds float64 `json:"optimizer_seconds,omitempty"`
	// NLL (the mean -log p of the response tokens) and GradNorm are the
	// step's, before the update: the same rows give the same figures on
	// every device, a check between them.
	NLL      float64 `json:"nll,omitempty"`
	GradNorm float64 `json:"grad_norm,omitempty"`
	// UpdateSkipped says why the update was not applied (a non-finite
	// gradient norm or update, as train skips it); absent: applied.
	UpdateSkipped string `json:"update_skipped,omitempty"`
	// RecomputedLayers are the layers the backward pass recomputed,
	// KeptBytes the values kept of the others (--kept-mib), the most of
	// any of the step's calls; absent: none.
	RecomputedLayers int   `json:"recomputed_layers,omitempty"`
	KeptBytes        int64 `json:"kept_bytes,omitempty"`
	// DeviceCopyBytes is what the step copied between host and device
	// memory through the device layer (--device cuda, or --resident):
	// the parameters (unless the generation before it copied them) and
	// AdamW's moments on the first step (AdamW runs there too), and
	// CallCopyBytes, the activations that cross with the graphs' calls
	// (on the CPU twin: what would cross on CUDA); GradientCopyBytes is
	// the parameter gradients returned to the host (none with AdamW on
	// the device; model.Executor.CallBytes, GradientBytes).
	// GenerateCopyBytes is what the generation before the step copied
	// (--generate-rows): the weights on the first, then each call's
	// inputs and logits (Sampler.CopiedBytes), not counted in
	// DeviceCopyBytes.
	DeviceCopyBytes   int64 `json:"device_copy_bytes,omitempty"`
	CallCopyBytes     int64 `json:"call_copy_bytes,omitempty"`
	GradientCopyBytes int64 `json:"gradient_copy_bytes,omitempty"`
	GenerateCopyBytes int64 `json:"generate_copy_bytes,omitempty"`
	// WeightsBytes is the trained and frozen parameters.
	WeightsBytes int64 `json:"weights_bytes"`
	// The memory after the step.
	benchMemory
}

// benchVocab is a bench line's vocabulary: the policy's ids (the
// tokenizer's, as train's, or --vocab-limit's; the logits' whole width
// without either),
// which the token ids are drawn below and the loss's softmax and the
// sampler cover, and the logits' width (config.json's vocab_size). A
// limit below the width runs the vocabulary-limited loss graphs
// (model.ExecutorOptions.VocabLimit).
type benchVocab struct {
	VocabLimit int `json:"vocab_limit"`
	VocabSize  int `json:"vocab_size"`
}

// benchMemory is a bench line's memory: the resident set now and the
// process's peak so far (VmRSS, VmHWM), and the shared device arena's
// counters when the arena is shared.
type benchMemory struct {
	RSSBytes     int64       `json:"rss_bytes"`
	PeakRSSBytes int64       `json:"peak_rss_bytes"`
	Arena        *benchArena `json:"arena,omitempty"`
}

// benchArena is the shared device arena's counters in a bench line:
// bytes in use and their peak so far, and bytes reserved from the device
// (in use or free for any session).
type benchArena struct {
	InUseBytes    int64 `json:"in_use_bytes"`
	PeakBytes     int64 `json:"peak_in_use_bytes"`
	ReservedBytes int64 `json:"reserved_bytes"`
}

// memoryMeter measures the memory of a bench command's lines: the
// process's now, and, when rt (not nil) shares its device arena, the
// arena's counters. The peak it reports never falls from line to line:
// the kernel's VmHWM comes from approximate counters, and read a line
// later it was seen below the one before.
type memoryMeter struct {
	rt   *model.Runtime
	read func() (rss, peak int64) // memoryUse
	peak int64
}

func newMemoryMeter(rt *model.Runtime) *memoryMeter { return &memoryMeter{rt: rt, read: memoryUse} }

func (mm *memoryMeter) measure() (benchMemory, error) {
	var m benchMemory
	var peak int64
	m.RSSBytes, peak = mm.read()
	mm.peak = max(mm.peak, peak)
	m.PeakRSSBytes = mm.peak
	if mm.rt == nil {
		return m, nil
	}
	a := mm.rt.DeviceArena()
	if a == nil {
		return m, nil
	}
	s, err := a.Stats()
	if err != nil {
		return m, err
	}
	m.Arena = &benchArena{InUseBytes: s.InUse, PeakBytes: s.MaxInUse, ReservedBytes: s.Reserved}
	return m, nil
}

// benchOpen opens the runtime and the policy of r, the model --model
// resolved to (artifacts cached by the model's content), stopping when
// ctx is done; closeAll closes both. The policy's vocabulary is tok's
// ids, as train's (a training policy's loss then runs the
// vocabulary-limited graphs where the logits are wider), and a tokenizer
// with more ids than the logits is refused in train's words (checkVocab);
// without tok it is --vocab-limit's ids, or without that the logits'
// whole width, noted on env.stderr.
func benchOpen(ctx context.Context, env *cliEnv, f *benchFlags, r resolvedModel, tok *tokenizer.Tokenizer, opts model.PolicyOptions) (rt *model.Runtime, pol *model.Policy, v benchVocab, closeAll func(), err error) {
	rt, err = model.OpenRuntime(f.rf.options(env.stderr))
	if err != nil {
		return nil, nil, v, nil, err
	}
	v.VocabLimit = f.vocabLimit
	if tok != nil {
		v.VocabLimit = tok.VocabSize()
	}
	opts.Executor.VocabLimit = v.VocabLimit
	dir, err := cachedArtifactsDir(r.onnx, opts.Artifacts)
	opts.Artifacts.Waiting = env.stderr
	if err == nil {
		pol, err = model.OpenPolicy(ctx, rt, r.onnx, dir, opts)
	}
	var ve *model.VocabLimitError
	if errors.As(err, &ve) {
		err = f.vocabError(tok, r, ve.Logits)
	}
	if err == nil {
		v.VocabSize = pol.LM.Signature().Vocab
		if err = f.vocabError(tok, r, v.VocabSize); err != nil {
			err = errors.Join(err, pol.Close())
		}
	}
	if err != nil {
		rt.Close()
		return nil, nil, v, nil, modelFlagUsage(err)
	}
	if v.VocabLimit == 0 {
		v.VocabLimit = v.VocabSize
		fmt.Fprintf(env.stderr, "spiral: note: no tokenizer (%s does not exist; give --tokenizer or --vocab-limit): the softmax over all %d logits, where train runs it over the tokenizer's ids\n", r.tokenizer, v.VocabSize)
	}
	return rt, pol, v, func() { pol.Close(); rt.Close() }, nil
}

// vocabError refuses a policy vocabulary past the model's logits
// (vocab): tok's ids in train's words (checkVocab), or --vocab-limit as a
// usage error; nil when it fits.
func (f *benchFlags) vocabError(tok *tokenizer.Tokenizer, r resolvedModel, vocab int) error {
	if tok != nil {
		return checkVocab(tok, r, vocab)
	}
	if f.vocabLimit > vocab {
		return usageError{fmt.Errorf("--vocab-limit %d: the model (%s) has %d logits", f.vocabLimit, r.name(), vocab)}
	}
	return nil
}

// benchTrain runs --steps full training steps on random rows and prints
// one JSON line after opening and one per step.
func benchTrain(ctx context.Context, env *cliEnv, f *benchFlags, r resolvedModel, tok *tokenizer.Tokenizer) error {
	start := time.Now()
	rt, pol, vocab, closeAll, err := benchOpen(ctx, env, f, r, tok, model.PolicyOptions{Train: true, Executor: f.exec.options(), Artifacts: f.arts, Seed: f.seed, Resident: f.resident})
	if err != nil {
		return err
	}
	defer closeAll()
	meter := newMemoryMeter(rt)
	opt, err := optim.NewAdamW(optim.DefaultConfig(), pol.Weights)
	if err != nil {
		return err
	}
	// The moments resident from the start, as they are from step 2 on, so
	// that the open line counts them and step 1 shows the steady state.
	opt.ExpAvg().Zero()
	opt.ExpAvgSq().Zero()
	useDeviceOptimizer(env, pol, opt) // as training does
	b := model.RandomTrainBatch(f.rows, f.tokens, vocab.VocabLimit, f.seed)
	st := f.trainStep(env, r, pol, opt, b)
	if f.group > 1 && f.packPrompts {
		noteUnpackedRows(env.stderr, fmt.Sprintf("--group %d", f.group), r.name(), pol.Train, "each row trains apart, as train's would")
	}
	weights := int64(4 * (pol.Weights.NumParams() + pol.Frozen.NumParams()))
	enc := json.NewEncoder(env.stdout)
	line := benchTrainLine{Phase: "open", Rows: f.rows, Toks: f.tokens, Group: f.group, benchVocab: vocab, MicroBatchTokens: st.grad.MicroBatchTokens, LR: st.sched.PeakLR,
		Seconds: time.Since(start).Seconds(), WeightsBytes: weights}
	if line.benchMemory, err = meter.measure(); err != nil {
		return err
	}
	if err := enc.Encode(line); err != nil {
		return err
	}
	var sampler *rollout.Sampler
	var reqs []rollout.Request
	if f.genRows > 0 {
		if sampler, err = benchSampler(pol, f.genRows, f, vocab.VocabLimit); err != nil {
			return err
		}
		reqs = benchRequests(f.genRows, f, vocab.VocabLimit)
	}
	for step := 1; step <= f.steps; step++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		var generated time.Duration
		var genCopied int64
		if sampler != nil {
			g0, c0 := time.Now(), sampler.CopiedBytes()
			if _, _, err := sampler.Generate(ctx, reqs, nil); err != nil {
				return err
			}
			sampler.Release()
			generated, genCopied = time.Since(g0), sampler.CopiedBytes()-c0
		}
		t0 := time.Now()
		copied, called, grads := pol.Train.CopiedBytes(), pol.Train.CallBytes(), pol.Train.GradientBytes()
		gs, err := st.gradients(ctx)
		if err != nil {
			return err
		}
		t1 := time.Now()
		u, err := st.update()
		if err != nil {
			return err
		}
		c := st.learner
		line := benchTrainLine{Phase: "step", Step: step, Rows: f.rows, Toks: f.tokens, Group: f.group, benchVocab: vocab, MicroBatchTokens: st.grad.MicroBatchTokens, LR: st.sched.PeakLR,
			MicroBatches: c.calls, PackedRows: c.packedRows, PackedRowTokens: c.packedRowTokens, Positions: gs.Positions, Seconds: time.Since(t0).Seconds(),
			ForwardSeconds: c.times.Forward.Seconds(), LossSeconds: c.times.Loss.Seconds(), BackwardSeconds: c.times.Backward.Seconds(),
			OptimizerSeconds: time.Since(t1).Seconds(), GenerateSeconds: generated.Seconds(), WeightsBytes: weights, NLL: gs.NLL, GradNorm: u.Norm,
			UpdateSkipped: u.Skipped, RecomputedLayers: c.recomputed, KeptBytes: c.kept,
			DeviceCopyBytes: pol.Train.CopiedBytes() - copied, CallCopyBytes: pol.Train.CallBytes() - called,
			GradientCopyBytes: pol.Train.GradientBytes() - grads, GenerateCopyBytes: genCopied}
		line.TokensPerSecond = float64(f.rows*f.tokens) / t1.Sub(t0).Seconds()
		if line.benchMemory, err = meter.measure(); err != nil {
			return err
		}
		if err := enc.Encode(line); err != nil {
			return err
		}
	}
	return nil
}

// benchTrainStep is bench train's step, the learning half of a train
// step (rl.Trainer.TrainStep): the random rows as examples through
// rl.Gradients, in train's micro-batches (--micro-batch-tokens, auto by
// default as train's; --group's rows of one prompt packed as train's
// --pack-prompts packs a subset's aggregation traces, unless
// --pack-prompts=false), then rl.Update, clipped to
// --max-grad-norm, at --lr (0: train's peak rate, as after warmup).
type benchTrainStep struct {
	learner     *stepCalls
	pol         *model.Policy
	opt         *optim.AdamW
	sched       optim.Schedule
	examples    []rl.Example
	grad        rl.GradientOptions
	maxGradNorm float64
}

// trainStep makes bench train's step on pol of the model r, over b's
// rows (RandomTrainBatch's, in groups of --group sharing a prompt), with
// opt its optimizer; an auto --micro-batch-tokens without r's
// config.json, or that cannot read it, is noted on env.stderr, as train
// notes it.
func (f *benchFlags) trainStep(env *cliEnv, r resolvedModel, pol *model.Policy, opt *optim.AdamW, b model.TrainBatch) *benchTrainStep {
	cfg := rl.DefaultConfig()
	mbt := f.microBatchTokens
	if mbt == 0 {
		mbt = autoMicroBatchTokens(r.onnx, env.stderr)
	}
	lr := f.lr
	if lr == 0 {
		lr = modelLR
		if r.embedded {
			lr = embeddedLR
		}
	}
	return &benchTrainStep{learner: &stepCalls{Executor: pol.Train}, pol: pol, opt: opt, sched: optim.Schedule{PeakLR: lr}, examples: benchExamples(b, f.group),
		grad:        rl.GradientOptions{MicroBatchTokens: mbt, ClipLow: cfg.ClipLow, ClipHigh: cfg.ClipHigh, Detached: true, PackPrompts: f.packPrompts},
		maxGradNorm: f.maxGradNorm}
}

// gradients computes the step's gradients as train does (rl.Gradients).
func (s *benchTrainStep) gradients(ctx context.Context) (rl.GradientStats, error) {
	return rl.Gradients(ctx, s.learner, s.pol.Grads, s.examples, s.grad)
}

// update clips and applies the step's update as train does (rl.Update).
func (s *benchTrainStep) update() (rl.UpdateResult, error) {
	return rl.Update(s.learner, s.pol.Weights, s.pol.Grads, s.opt, s.sched, s.maxGradNorm)
}

// benchExamples are b's rows (RandomTrainBatch's) as training's
// examples, advantage 1, in groups of group rows (b.Batch a multiple of
// it) that share the first row's prompt, as a subset's aggregation
// traces do. A row's prompt is its first half and its completion the
// rest; with group > 1, as an aggregation trace's (the paper's 3,000
// tokens after a 9,216-token prompt), the completion is its last
// quarter, at least one token, so that the group is worth packing
// (rl's worthPacking: up to 7 rows in one row at 64 tokens, 8 at 256,
// more across several rows; with halves never).
func benchExamples(b model.TrainBatch, group int) []rl.Example {
	ex := make([]rl.Example, b.Batch)
	prompt := b.Seq / 2
	if group > 1 {
		prompt = b.Seq - max(1, b.Seq/4)
	}
	for i := range ex {
		src := i - i%group // the prompt's row
		ids := make([]int32, b.Seq)
		for t := range ids {
			row := i
			if t < prompt {
				row = src
			}
			ids[t] = int32(b.InputIDs[row*b.Seq+t])
		}
		ex[i] = rl.Example{Prompt: ids[:prompt], Completion: ids[prompt:], Advantage: 1}
	}
	return ex
}

// stepCalls is the executor as a bench step calls it: it counts the
// step's calls (micro-batches) and sums their split (Executor.Times is
// the last call's), keeping the most layers any call recomputed and
// bytes it kept, and its packed rows and the longest one's positions.
type stepCalls struct {
	*model.Executor
	calls           int
	times           model.StepTimes
	recomputed      int
	kept            int64
	packedRows      int
	packedRowTokens int
}

// AccumulateBatches is the executor's, measured call by call.
func (c *stepCalls) AccumulateBatches(ctx context.Context, bs []model.TrainBatch, scales []float32, grads *params.Store, res *model.TrainResult, done func(int) error) error {
	c.calls, c.times, c.recomputed, c.kept = 0, model.StepTimes{}, 0, 0
	c.packedRows, c.packedRowTokens = 0, 0
	for _, b := range bs {
		if b.Segments == nil {
			continue
		}
		for r := range b.Batch {
			row := b.Segments[r*b.Seq : (r+1)*b.Seq]
			if !slices.ContainsFunc(row, func(s int64) bool { return s != 0 }) {
				continue // a row of one example beside packed ones
			}
			c.packedRows++
			n := 0
			for _, m := range b.AttentionMask[r*b.Seq : (r+1)*b.Seq] {
				n += int(m)
			}
			c.packedRowTokens = max(c.packedRowTokens, n)
		}
	}
	return c.Executor.AccumulateBatches(ctx, bs, scales, grads, res, func(k int) error {
		t := c.Executor.Times()
		c.calls++
		c.times.Forward += t.Forward
		c.times.Loss += t.Loss
		c.times.Backward += t.Backward
		layers, kept := c.Executor.Recomputation()
		c.recomputed, c.kept = max(c.recomputed, layers), max(c.kept, kept)
		return done(k)
	})
}

// memoryUse returns the process's resident set and its peak (VmRSS and
// VmHWM of /proc/self/status), 0 where that file does not exist.
func memoryUse() (rss, peak int64) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0, 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		for _, field := range []struct {
			prefix string
			dst    *int64
		}{{"VmRSS:", &rss}, {"VmHWM:", &peak}} {
			if rest, ok := strings.CutPrefix(sc.Text(), field.prefix); ok {
				kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
				if err == nil {
					*field.dst = kb << 10
				}
			}
		}
	}
	return rss, peak
}

// benchGenerateLine is one JSON line of spiral bench generate.
type benchGenerateLine struct {
	Phase        string `json:"phase"` // "open", "generate" or "release"
	Step         int    `json:"step,omitempty"`
	Rows         int    `json:"rows"`
	PromptTokens int    `json:"prompt_tokens"`
	NewTokens    int    `json:"new_tokens"`
	benchVocab
	// Seconds is the generation's wall time, PrefillSeconds its prefill
	// part, up to each row's first token, sampled from the prefill's
	// logits (Stats.Prefill); TokensPerSecond counts the tokens of the
	// decode steps over the rest (--new-tokens 1 has no decode rate), PromptTokensPerSecond the
	// prompt tokens prefilled over the prefill (rows with equal prompts
	// are prefilled once: Stats.PrefilledTokens). Step 1's prefill also
	// opens the graphs' sessions (opened on first use, not in the open
	// line) and its rest allocates the KV cache: steady rates are those
	// of step 2 on.
	Seconds               float64 `json:"seconds"`
	PrefillSeconds        float64 `json:"prefill_seconds,omitempty"`
	TokensPerSecond       float64 `json:"tokens_per_second,omitempty"`
	PromptTokensPerSecond float64 `json:"prompt_tokens_per_second,omitempty"`
	// KVCacheBytes is the cache the generation held.
	KVCacheBytes int64 `json:"kv_cache_bytes,omitempty"`
	// DeviceCopyBytes is what the generation copied between host and
	// device memory (device-resident generation: --device cuda, or
	// --resident): the weights once, then per call the token inputs,
	// cache write indices and last-position logits.
	DeviceCopyBytes int64 `json:"device_copy_bytes,omitempty"`
	// DecodeGraphCalls is how many model runs were on the decode graph
	// (on the host, of a model whose attention it rewrites: spiral
	// artifacts says whether there is one): one a decode step, and one a
	// row for each prefill chunk with a past and no padding
	// (LM.DecodeGraphCalls).
	DecodeGraphCalls int64 `json:"decode_graph_calls,omitempty"`
	WeightsBytes     int64 `json:"weights_bytes"`
	// The memory after the generation (the "release" line: after
	// Sampler.Release).
	benchMemory
}

// benchGenerate samples --new-tokens after random prompts of
// --prompt-tokens for --rows rows, --steps times, through the sampler
// generate, eval and training use; one JSON line after opening and one
// per generation.
func benchGenerate(ctx context.Context, env *cliEnv, f *benchFlags, r resolvedModel, tok *tokenizer.Tokenizer) error {
	start := time.Now()
	rt, pol, vocab, closeAll, err := benchOpen(ctx, env, f, r, tok, model.PolicyOptions{Resident: f.resident})
	if err != nil {
		return err
	}
	defer closeAll()
	meter := newMemoryMeter(rt)
	s, err := benchSampler(pol, f.rows, f, vocab.VocabLimit)
	if err != nil {
		return err
	}
	weights := int64(4 * (pol.Weights.NumParams() + pol.Frozen.NumParams()))
	enc := json.NewEncoder(env.stdout)
	line := benchGenerateLine{Phase: "open", Rows: f.rows, PromptTokens: f.prompt, NewTokens: f.newTok, benchVocab: vocab, Seconds: time.Since(start).Seconds(), WeightsBytes: weights}
	if line.benchMemory, err = meter.measure(); err != nil {
		return err
	}
	if err := enc.Encode(line); err != nil {
		return err
	}
	reqs := benchRequests(f.rows, f, vocab.VocabLimit)
	for step := 1; step <= f.steps; step++ {
		copied, decodes := s.CopiedBytes(), pol.LM.DecodeGraphCalls()
		_, st, err := s.Generate(ctx, reqs, nil)
		if err != nil {
			return err
		}
		line := benchGenerateLine{Phase: "generate", Step: step, Rows: f.rows, PromptTokens: f.prompt, NewTokens: f.newTok, benchVocab: vocab,
			Seconds: st.Elapsed.Seconds(), PrefillSeconds: st.Prefill.Seconds(), KVCacheBytes: s.CacheBytes(), WeightsBytes: weights,
			PromptTokensPerSecond: float64(st.PrefilledTokens) / st.Prefill.Seconds(), DeviceCopyBytes: s.CopiedBytes() - copied,
			DecodeGraphCalls: pol.LM.DecodeGraphCalls() - decodes}
		if decoded := st.GeneratedTokens - len(reqs); decoded > 0 {
			line.TokensPerSecond = float64(decoded) / (st.Elapsed - st.Prefill).Seconds()
		}
		if line.benchMemory, err = meter.measure(); err != nil {
			return err
		}
		if err := enc.Encode(line); err != nil {
			return err
		}
	}
	// As training does before its step: the cache goes back to where it
	// came from (with --shared-arena, to what every session can use).
	t0 := time.Now()
	s.Release()
	line = benchGenerateLine{Phase: "release", Rows: f.rows, PromptTokens: f.prompt, NewTokens: f.newTok, benchVocab: vocab, Seconds: time.Since(t0).Seconds(), WeightsBytes: weights}
	if line.benchMemory, err = meter.measure(); err != nil {
		return err
	}
	return enc.Encode(line)
}

// benchSampler is the sampler bench generate (and train
// --generate-rows) samples with: rows at once, --new-tokens each, drawn
// from the ids below limit (the policy's vocabulary, as train's).
func benchSampler(pol *model.Policy, rows int, f *benchFlags, limit int) (*rollout.Sampler, error) {
	cfg := rollout.DefaultSamplerConfig()
	cfg.MaxNewTokens, cfg.BatchSize, cfg.Refill, cfg.CallBytes, cfg.VocabLimit = f.newTok, rows, false, int64(f.callMiB)<<20, limit
	return rollout.NewSampler(pol.LM, cfg)
}

// benchRequests are rows prompts of --prompt-tokens random ids below
// vocab.
func benchRequests(rows int, f *benchFlags, vocab int) []rollout.Request {
	rng := rand.New(rand.NewPCG(f.seed, 0x9e4))
	reqs := make([]rollout.Request, rows)
	for i := range reqs {
		reqs[i].Seed = uint64(i)
		for range f.prompt {
			reqs[i].Prompt = append(reqs[i].Prompt, int32(rng.IntN(vocab)))
		}
	}
	return reqs
}
