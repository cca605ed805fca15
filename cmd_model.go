package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/pflag"

	"github.com/spiral-rl/spiral/data/synth"
	"github.com/spiral-rl/spiral/model"
	"github.com/spiral-rl/spiral/model/atomicfile"
	"github.com/spiral-rl/spiral/model/onnx"
	"github.com/spiral-rl/spiral/model/qwen3"
	"github.com/spiral-rl/spiral/model/tokenizer"
)

func setupInitModel(fs *pflag.FlagSet) func(context.Context, *cliEnv, []string) error {
	c := qwen3.Tiny()
	out := fs.String("out", "", "output directory (required)")
	markNonEmpty(fs, "out", "the directory to write the model in")
	fs.IntVar(&c.Layers, "layers", c.Layers, "decoder layers")
	fs.IntVar(&c.Hidden, "hidden", c.Hidden, "hidden size")
	fs.IntVar(&c.Heads, "heads", c.Heads, "query heads")
	fs.IntVar(&c.KVHeads, "kv-heads", c.KVHeads, "key/value heads (divides --heads)")
	fs.IntVar(&c.HeadDim, "head-dim", c.HeadDim, "head width, even (need not be hidden/heads)")
	fs.IntVar(&c.Intermediate, "intermediate", c.Intermediate, "MLP width")
	fs.Float64Var(&c.RopeTheta, "rope-theta", c.RopeTheta, "rotary base (--config: the release's, 1e6)")
	fs.IntVar(&c.MaxPositions, "max-positions", c.MaxPositions, "the model's context in positions, config.json max_position_embeddings, which plan and bench keep rows within (--config: the release's, 40960)")
	fs.BoolVar(&c.TiedEmbeddings, "tied-embeddings", c.TiedEmbeddings, "tie the LM head to the token embedding")
	tok := fs.String("tokenizer", "char", "tokenizer: char (characters of the synthetic task) or byte (any UTF-8 text)")
	seed := fs.Uint64("seed", 1, "weight initialisation seed")
	vocab := fs.Int("vocab", 0, "logits per position, at least the tokenizer's (0: the tokenizer's); ids past it are never produced, e.g. a real config's 151,936 for benchmarks")
	config := fs.String("config", "", "start from the shape (layers, widths, heads, vocabulary, tied head), context and rotary base of a real config, "+strings.Join(qwen3.Releases(), ", ")+" (config.json of Qwen/Qwen3-0.6B, -1.7B, -4B, -8B; Qwen3-4B-Instruct-2507 is qwen3-4b with --max-positions 262144 --rope-theta 5e6), which the flags given override; random weights, and --tokenizer's, not the real model's tokenizer (its vocabulary only widens the logits)")
	overwrite := fs.Bool("overwrite", false, "replace a model already in --out")
	return func(ctx context.Context, env *cliEnv, args []string) (err error) {
		const usage = " (usage: spiral init-model --out DIR [flags])"
		if len(args) > 0 {
			return usageError{unexpectedArgs{args: args, usage: usage}}
		}
		if *out == "" {
			return usageError{errors.New("--out is required: the directory to write the model in" + usage)}
		}
		if err := refuseHousekeptOut(*out, "the model", "model"); err != nil {
			return err
		}
		// An empty --config given ("$CFG" unset) is no release: it
		// made the tiny model in silence.
		if *config != "" || fs.Changed("config") {
			a, ok := qwen3.Release(*config)
			if !ok {
				return usageError{fmt.Errorf("--config %q: want one of %s", *config, strings.Join(qwen3.Releases(), ", "))}
			}
			// The config's shape, context and rotary base, except where a
			// flag says otherwise (e.g. --layers 8 for a shallow variant).
			take := func(flag string, dst *int, v int) {
				if !fs.Changed(flag) {
					*dst = v
				}
			}
			take("layers", &c.Layers, a.Layers)
			take("hidden", &c.Hidden, a.Hidden)
			take("intermediate", &c.Intermediate, a.Intermediate)
			take("heads", &c.Heads, a.Heads)
			take("kv-heads", &c.KVHeads, a.KVHeads)
			take("head-dim", &c.HeadDim, a.HeadDim)
			take("vocab", vocab, a.Vocab)
			take("max-positions", &c.MaxPositions, a.MaxPositions)
			if !fs.Changed("rope-theta") {
				c.RopeTheta = a.RopeTheta
			}
			if !fs.Changed("tied-embeddings") {
				c.TiedEmbeddings = a.TiedEmbeddings
			}
			c.RMSEps = a.RMSEps
		}
		var tj []byte
		var reads string // what the tokenizer's ids stand for
		switch *tok {
		case "char":
			tj, err = tokenizer.BuildCharTokenizerJSON([]rune(synth.Alphabet()))
			reads = "the synthetic task's characters, <unk>"
		case "byte":
			tj, err = tokenizer.BuildByteTokenizerJSON()
			reads = "UTF-8 bytes"
		default:
			return usageError{fmt.Errorf("--tokenizer %q: want char or byte", *tok)}
		}
		if err != nil {
			return err
		}
		t, err := tokenizer.FromBytes(tj)
		if err != nil {
			return err
		}
		c.Vocab = t.VocabSize()
		t.Close()
		tokIDs := c.Vocab
		switch {
		case *vocab > 0 && *vocab < c.Vocab:
			return usageError{fmt.Errorf("--vocab %d: the %s tokenizer has %d ids; want at least that", *vocab, *tok, c.Vocab)}
		case *vocab > 0:
			c.Vocab = *vocab
		case *vocab < 0:
			return usageError{fmt.Errorf("--vocab %d: want >= 0", *vocab)}
		}
		if err := countsAtMost(count{"--layers", c.Layers, 1}, count{"--hidden", c.Hidden, 1}, count{"--heads", c.Heads, 1}, count{"--kv-heads", c.KVHeads, 1},
			count{"--head-dim", c.HeadDim, 2}, count{"--intermediate", c.Intermediate, 1}, count{"--vocab", *vocab, 0}, count{"--max-positions", c.MaxPositions, 1}); err != nil {
			return usageError{err}
		}
		// config.json's 0 is "not given" (transformers' 32,768 is
		// written), not a context to ask for.
		if err := positive("--max-positions", c.MaxPositions); err != nil {
			return usageError{err}
		}
		if err := c.Validate(); err != nil {
			return usageError{errors.New(withInitModelFlags(err.Error()))}
		}
		if have, err := availableMemory(); err == nil { // the shape is not refused on a guess
			if err := checkWeightsFit(c, have); err != nil {
				return err
			}
		}
		// The directories made for --out are removed again when the
		// run fails or is interrupted and they hold nothing.
		created := missingDirs(*out)
		defer func() {
			if err != nil {
				removeEmptyDirs(created)
			}
		}()
		// A run killed while it moved its model in from the stage left
		// part of it there: that model is whole again before --out is
		// looked at.
		if err := atomicfile.FinishKilled(*out); err != nil {
			return fmt.Errorf("--out %s: %w", *out, err)
		}
		if err := refuseOverwrite(*out, *overwrite); err != nil {
			return err
		}
		// The files are written in a stage in --out and moved in at the
		// end, so that an interruption (Ctrl-C ends the drawing and the
		// writing at the next weight) leaves --out's files as they were.
		stage, err := atomicfile.NewStage(*out)
		if err != nil {
			return outError("--out", *out, err)
		}
		defer stage.Discard()
		if err := qwen3.WriteDirContext(ctx, stage.Dir(), c, *seed); err != nil {
			return err
		}
		if err := atomicfile.WriteFile(filepath.Join(stage.Dir(), "tokenizer.json"), tj, 0o666); err != nil {
			return fmt.Errorf("write tokenizer: %w", err)
		}
		// The data file before the model that refers to it; a replaced
		// model's data file goes when the new model keeps its weights
		// inline, and so do its tokenizer's other files and generation
		// defaults (tokenizer_config.json, vocab.json...), which describe
		// that model's tokenizer and which exports would copy beside this
		// one's, and its Hugging Face weights and adapter
		// (replacedModelFiles).
		names := append([]string{"model.onnx" + onnx.DataFileSuffix, "model.onnx", model.ConfigFile}, model.SideFileNames()...)
		names = append(names, replacedModelFiles...)
		// A Ctrl-C while the model file was written (one write of the
		// whole graph, past the last weight's check) leaves --out as
		// it was too.
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := stage.Commit(names...); err != nil {
			return fmt.Errorf("--out %s: %w", *out, err)
		}
		fmt.Fprintf(env.stdout, "wrote %s: %d layers, hidden %d, %d heads (%d KV) x %d, vocab %d, %s\n",
			*out, c.Layers, c.Hidden, c.Heads, c.KVHeads, c.HeadDim, c.Vocab, describeInitTokenizer(*tok, reads, tokIDs, c.Vocab, *config))
		return nil
	}
}

// describeInitTokenizer says which tokenizer init-model wrote (kind, with
// ids ids standing for reads) for a model of vocab logits, made from the
// shape of config (a real config's name, or ""): the logits past the
// tokenizer's ids are never produced, and a real config's tokenizer is
// not the one written.
func describeInitTokenizer(kind, reads string, ids, vocab int, config string) string {
	s := fmt.Sprintf("with the %s tokenizer (%d ids: %s and the chat template's special tokens)", kind, ids, reads)
	if vocab > ids {
		s += "; the logits past its ids are never produced"
	}
	if config != "" {
		s += fmt.Sprintf("; not %s's own tokenizer (put that tokenizer.json in the directory to read text as the real model does)", config)
	}
	return s
}

// checkWeightsFit refuses, as a usage error naming the shape's flags, a
// shape that would not fit in have, the memory available: init-model
// holds the whole model while it draws and writes it (past have, the
// kernel kills it or Go's allocator fails, after minutes of drawing;
// past int's range the builder's sizes would panic). The parameters are
// memplan.Arch.Params' count in float64, which no shape overflows. The
// process peaks at about 1.25 times the fp32 weights (the weights and
// the garbage collector's headroom; measured: 2.88 GB resident for
// qwen3-0.6b's 2.39 GB), and where the graph keeps its weights inline
// (under protobuf's 2 GiB) at 2 more times, the marshalled graph
// beside them (2.66 GB for qwen3-0.6b --layers 4's 0.87 GB).
func checkWeightsFit(c qwen3.Config, have int64) error {
	h, hd := float64(c.Hidden), float64(c.HeadDim)
	q, kv := float64(c.Heads)*hd, float64(c.KVHeads)*hd
	layer := 2*h + 2*hd + 2*h*q + 2*h*kv + 3*h*float64(c.Intermediate)
	embedding := float64(c.Vocab) * h
	if !c.TiedEmbeddings {
		embedding *= 2
	}
	weights := 4 * (embedding + float64(c.Layers)*layer + h)
	need := 1.25 * weights
	if weights < onnx.MaxProtoSize {
		need += 2 * weights
	}
	if need <= float64(have) {
		return nil
	}
	return usageError{fmt.Errorf("a model of --layers %d --hidden %d --intermediate %d --heads %d --kv-heads %d --head-dim %d --vocab %d has %.2f GiB of fp32 weights and needs about %.2f GiB of memory while they are drawn and written, more than the %s this machine has available: give a smaller shape",
		c.Layers, c.Hidden, c.Intermediate, c.Heads, c.KVHeads, c.HeadDim, c.Vocab, weights/(1<<30), need/(1<<30), gib(have))}
}

// withInitModelFlags names the flags of init-model in a message of
// qwen3.Config.Validate, which names config.json's keys.
func withInitModelFlags(msg string) string {
	return strings.NewReplacer(
		"qwen3: config: ", "",
		"num_hidden_layers", "--layers", "hidden_size", "--hidden", "num_attention_heads", "--heads",
		"num_key_value_heads", "--kv-heads", "head_dim", "--head-dim", "intermediate_size", "--intermediate",
		"rope_theta", "--rope-theta", "vocab_size", "--vocab", "max_position_embeddings", "--max-positions").Replace(msg)
}

func setupArtifacts(fs *pflag.FlagSet) func(context.Context, *cliEnv, []string) error {
	var mf modelFlags
	var pf paramFlags
	mf.registerModel(fs)
	pf.register(fs)
	out := fs.String("out", "", "output directory (default: artifacts/ beside the model)")
	markNonEmpty(fs, "out", "the directory to write the graphs in (leave --out out for artifacts/ beside the model)")
	return func(ctx context.Context, env *cliEnv, args []string) error {
		if len(args) > 0 {
			return usageError{unexpectedArgs{args: args}}
		}
		arts, err := pf.artifacts()
		if err != nil {
			return usageError{err}
		}
		r, err := mf.resolve(env.stderr)
		if err != nil {
			return err
		}
		dir := *out
		if dir == "" {
			dir = filepath.Join(filepath.Dir(r.onnx), "artifacts")
		}
		arts.Waiting = env.stderr
		if st, err := os.Stat(dir); err == nil && !st.IsDir() && *out != "" {
			return usageError{fmt.Errorf("--out %s is a file: want the directory to write the graphs in, such as %s", dir, filepath.Join(filepath.Dir(dir), "artifacts"))}
		}
		if err := refuseBrokenLink("--out", dir, dir); err != nil {
			return err
		}
		if *out != "" {
			if err := refuseHousekeptOut(*out, "the graphs", "artifacts"); err != nil {
				return err
			}
		}
		created := missingDirs(dir)
		art, err := model.PrepareArtifacts(ctx, r.onnx, dir, arts)
		if err != nil {
			removeEmptyDirs(created) // a refused --out that did not exist is not left behind
			return modelFlagUsage(err)
		}
		m := art.Manifest
		state := "reused"
		if art.Rebuilt {
			state = "built"
		}
		prog, err := art.Program()
		if err != nil {
			return err
		}
		graphs := model.RolloutFile + ", " + model.SampleFile
		if m.Decode != "" {
			graphs += ", " + m.Decode
		}
		fmt.Fprintf(env.stdout, "%s %s: %s, %s (%d layers, %d piece graphs), %s\n", state, dir, graphs,
			model.ProgramFile, len(prog.Blocks), len(prog.Graphs), model.ManifestFile)
		if m.Decode == "" {
			fmt.Fprintf(env.stdout, "no decode graph (the export's attention is not of the form it rewrites, its head width is not a multiple of 8, or config.json gives it a sliding window): decode steps and prefill chunks run on %s\n", model.SampleFile)
		}
		for i, b := range prog.Blocks {
			if b.CoreNote != "" {
				fmt.Fprintf(env.stdout, "layer %d: attention over all positions at once (%s)\n", i, b.CoreNote)
			}
		}
		fmt.Fprintf(env.stdout, "trained: %d tensors, %d parameters\n", len(m.Weights), model.NumParams(m.Weights))
		for _, w := range m.Weights {
			fmt.Fprintf(env.stdout, "  %s %v: %s\n", w.Name, w.Shape, w.Reason)
		}
		fmt.Fprintf(env.stdout, "frozen:  %d tensors, %d parameters\n", len(m.Frozen), model.NumParams(m.Frozen))
		for _, w := range m.Frozen {
			fmt.Fprintf(env.stdout, "  %s %v: %s\n", w.Name, w.Shape, w.Reason)
		}
		fmt.Fprintf(env.stdout, "constants (not parameters): %d tensors, %d scalars\n", len(m.Constants), m.Scalars)
		for _, w := range m.Constants {
			fmt.Fprintf(env.stdout, "  %s %v: %s\n", w.Name, w.Shape, w.Reason)
		}
		for _, t := range m.Ties {
			how := "a copy"
			if t.Transposed {
				how = "a transposed copy"
			}
			fmt.Fprintf(env.stdout, "tied: %s is %s of %s (trained as one)\n", t.Copy, how, t.Of)
		}
		return nil
	}
}
