package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/spf13/pflag"

	"github.com/spiral-rl/spiral/model"
	"github.com/spiral-rl/spiral/model/atomicfile"
	"github.com/spiral-rl/spiral/model/checkpoint"
	"github.com/spiral-rl/spiral/model/lmgraph"
	"github.com/spiral-rl/spiral/model/onnx"
	"github.com/spiral-rl/spiral/model/params"
	"github.com/spiral-rl/spiral/model/smallfile"
	"github.com/spiral-rl/spiral/rl"
)

func setupExport(fs *pflag.FlagSet) func(context.Context, *cliEnv, []string) error {
	var mf modelFlags
	mf.register(fs)
	fs.Lookup("tokenizer").Usage += "; onnx and hf copy it, with the tokenizer files beside it (tokenizer_config.json, ...), into the export"
	ckpt := fs.String("checkpoint", "", "checkpoint directory (e.g. runs/spiral/checkpoints/ckpt-000050), or a run directory (or its checkpoints/) for its newest intact one; hf without one converts the model as it is")
	out := fs.String("out", "", "output: a .onnx path (onnx; the model's tokenizer.json, config.json and other tokenizer and generation files are copied beside it) or a directory (hf, peft); required, its directory is created")
	format := fs.String("format", "onnx", "onnx (the trained weights in the source graph; LoRA merged), hf (a Hugging Face model directory: model.safetensors with transformers' names, config.json, tokenizer files; LoRA merged) or peft (a LoRA checkpoint's adapters as a peft adapter directory)")
	baseModel := fs.String("base-model", "", "peft only: the base model adapter_config.json names (base_model_name_or_path): a Hugging Face id or a transformers model directory such as an --format hf export, recorded absolute (default: config.json's _name_or_path beside --model, as optimum writes the id there; else none)")
	markNonEmpty(fs, "checkpoint", checkpointWant)
	markNonEmpty(fs, "out", "the .onnx file to write (--format onnx), or the directory (hf, peft)")
	markNonEmpty(fs, "base-model", "a Hugging Face id or a transformers model directory (leave --base-model out for config.json's _name_or_path beside --model)")
	external := fs.Bool("external-data", false, "onnx only: always write weights to a side file (out + _data); automatic above 2 GiB or when the source has one")
	overwrite := fs.Bool("overwrite", false, "replace a model already in --out: its model files the export does not write (model.onnx, an adapter...; peft: its config.json, tokenizer and generation files too; onnx and hf: its tokenizer and generation files that the model has none of) are removed, and files of its that differ from the export's (onnx: config.json, the tokenizer's; hf into --model's own directory: the tokenizer's) replaced")
	return func(ctx context.Context, env *cliEnv, args []string) (err error) {
		if *format != "onnx" && *format != "hf" && *format != "peft" {
			return usageError{fmt.Errorf("--format %q: want onnx, hf or peft", *format)}
		}
		// The flags of one format, which the others would ignore.
		var ignored []error
		if fs.Changed("base-model") && *format != "peft" {
			ignored = append(ignored, fmt.Errorf("--base-model names the base model in a peft adapter's adapter_config.json; --format %s writes no adapter and would ignore it", *format))
		}
		if fs.Changed("external-data") && *format != "onnx" {
			ignored = append(ignored, fmt.Errorf("--external-data writes an onnx export's weights to a side file; --format %s writes no .onnx file and would ignore it", *format))
		}
		if fs.Changed("tokenizer") && *format == "peft" {
			ignored = append(ignored, errors.New("--tokenizer names the tokenizer an onnx or hf export copies beside the model; --format peft writes the adapters alone and would ignore it"))
		}
		if len(ignored) > 0 {
			return usageError{errors.Join(ignored...)}
		}
		const usage = " (usage: spiral export --checkpoint DIR --out PATH [--format onnx|hf|peft] [--model SOURCE])"
		switch {
		case len(args) > 0:
			return usageError{unexpectedArgs{args: args, usage: usage}}
		case *out == "":
			return usageError{errors.New("--out is required: the .onnx file to write (--format onnx), or the directory (hf, peft)" + usage)}
		case *ckpt == "" && *format != "hf":
			return usageError{fmt.Errorf("--format %s needs --checkpoint: the checkpoint (or run directory) whose weights it writes; only --format hf converts the model as it is without one"+usage, *format)}
		}
		// A checkpoint's directory, the one --checkpoint reads say: hf
		// would write its model.safetensors over the checkpoint's, peft
		// with --overwrite remove it as another model's, and the run's
		// --keep removes the directory, export and all; as it does one
		// within it, and its --fresh moves one in its checkpoints/ aside.
		dir := exportDir(*format, *out)
		instead := *format
		if *format == "onnx" {
			instead = filepath.Join("export", "model.onnx")
		}
		if err := refuseHousekept(*out, dir, "the export",
			fmt.Sprintf("--out %s: %s is a checkpoint directory (it holds %s): the export would replace or remove the checkpoint's files, and its run's --keep removes the directory with the export; give another --out", *out, dir, checkpoint.StateFile),
			instead); err != nil {
			return err
		}
		// --base-model as the adapter records it ("" unless given, which
		// peft alone takes).
		baseName, err := baseModelName(*baseModel)
		if err != nil {
			return err
		}
		// The adapter's base in its own directory: adapter_config.json
		// would name the adapter as its base, and --overwrite remove the
		// base model there as another model's.
		if baseName != "" {
			if abs, err := filepath.Abs(*out); err == nil && (baseName == abs || model.SameFile(baseName, *out)) {
				return usageError{fmt.Errorf("--base-model %s is --out %s: the adapter would name its own directory as its base model, which peft and transformers load from base_model_name_or_path (and --overwrite would remove the model there); give the adapter a directory of its own, such as --out %s",
					*baseModel, *out, filepath.Join(filepath.Dir(filepath.Clean(*out)), "peft"))}
			}
		}
		// Refused before any work: the model would be written whole to a
		// temporary file beside the directory, then fail to take its name.
		if st, err := os.Stat(*out); err == nil && st.IsDir() && *format == "onnx" {
			return usageError{fmt.Errorf("--out %s is a directory: --format onnx writes a .onnx file, its tokenizer and config.json beside it (such as --out %s); --format hf writes a directory", *out, filepath.Join(*out, "model.onnx"))}
		}
		// hf and peft write a directory: a file there would fail only
		// once the weights were loaded, at its creation.
		if st, err := os.Stat(*out); err == nil && !st.IsDir() && *format != "onnx" {
			files := "model.safetensors, config.json and the tokenizer's files"
			if *format == "peft" {
				files = "adapter_model.safetensors and adapter_config.json"
			}
			return usageError{fmt.Errorf("--out %s is a file: --format %s writes a directory (%s; such as --out %s)", *out, *format, files, filepath.Join(filepath.Dir(*out), *format))}
		}
		// Another name would be the model file, its side files (config.json,
		// tokenizer.json...) written in its directory, the current one for
		// a bare name.
		if *format == "onnx" && !strings.EqualFold(filepath.Ext(*out), ".onnx") {
			return usageError{fmt.Errorf("--out %s: --format onnx writes a .onnx file, its tokenizer and config.json beside it: want a path ending in .onnx (such as --out %s); --format hf writes a directory", *out, filepath.Join(*out, "model.onnx"))}
		}
		// The directory the files go to, and its parents, are made for
		// them: an export that fails or is interrupted removes those it
		// made again when they hold nothing.
		outDir := exportDir(*format, *out)
		if err := refuseBrokenLink("--out", *out, outDir); err != nil {
			return err
		}
		// An earlier export killed within its commit (--overwrite's
		// removals not made yet) is finished before the directory is
		// looked at: its files are in, and the replaced model's it was
		// to remove are not taken for another model's beside them.
		if err := atomicfile.FinishKilled(outDir); err != nil {
			return fmt.Errorf("--out %s: %w", *out, err)
		}
		// transformers loads a directory holding adapter_config.json as
		// that adapter on its base: the model there would load adapted
		// (the hf export removes an adapter's files for that reason).
		if *format == "peft" && !*overwrite {
			for _, name := range hfWeightsFiles {
				if _, err := os.Stat(filepath.Join(*out, name)); err == nil {
					return usageError{fmt.Errorf("--out %s holds a Hugging Face model (%s): transformers would load it with the adapter written beside it applied; give the adapter a directory of its own (such as --out %s), or --overwrite to replace that model",
						*out, name, filepath.Join(filepath.Dir(filepath.Clean(*out)), "peft"))}
				}
			}
		}
		created := missingDirs(outDir)
		defer func() {
			if err != nil {
				removeEmptyDirs(created)
			}
		}()
		r, err := mf.resolve(env.stderr)
		if err != nil {
			return err
		}
		if *format == "onnx" && model.SameFile(*out, r.onnx) {
			return usageError{fmt.Errorf("--out %s is the file of %s: the export would replace the model it reads, which the checkpoint's run was trained from; give another --out", *out, r.given())}
		}
		foreign, err := exportForeignFiles(*format, outDir, filepath.Base(*out), r.onnx)
		if err != nil {
			return err
		}
		// A peft adapter's directory holds the adapter: a replaced
		// model's config.json, tokenizer and generation files would be
		// read as the adapter's (vLLM tokenizes a LoRA request with the
		// tokenizer in the adapter's directory, AutoTokenizer and
		// AutoConfig read them there), though they describe that model,
		// not the adapter's base. They go with it, but for --model's own
		// directory, whose graph stays.
		// Such files beside no replaced model are another's too, left
		// beside an earlier adapter (peft writes none): refused below.
		var asides []string
		if *format == "peft" && !model.SameFile(outDir, filepath.Dir(r.onnx)) {
			for _, name := range append([]string{model.ConfigFile}, model.SideFileNames()...) {
				if _, err := os.Lstat(filepath.Join(outDir, name)); err == nil {
					asides = append(asides, name)
				}
			}
		}
		if len(foreign) > 0 {
			foreign = append(foreign, asides...)
		}
		// onnx's other graphs are another model's only where the files
		// beside them differ from the export's (exportSidecars); a
		// Hugging Face model's weights are, as transformers would load
		// them with the export's config.json.
		refused := foreign
		if *format == "onnx" {
			refused = slices.DeleteFunc(slices.Clone(foreign), isGraphFile)
		}
		if len(refused) > 0 && !*overwrite {
			beside := "config.json"
			switch *format {
			case "peft":
				beside = "adapter"
			case "onnx":
				beside = filepath.Base(*out)
			}
			return usageError{fmt.Errorf("--out %s holds %s, a model file that --format %s does not write (another model's, which would be left beside the export's %s): give --overwrite to replace that model (its %s removed), or another --out",
				*out, refused[0], *format, beside, strings.Join(refused, ", "))}
		}
		if len(foreign) == 0 && len(asides) > 0 {
			if !*overwrite {
				return usageError{fmt.Errorf("--out %s: %s is a config, tokenizer or generation file, which a peft export does not write: another model's, which vLLM (tokenizing the adapter's requests with a tokenizer in its directory), AutoTokenizer and AutoConfig would read as the adapter's; give --overwrite to remove it (%s), or another --out",
					*out, filepath.Join(outDir, asides[0]), strings.Join(asides, ", "))}
			}
			foreign = asides
		}
		if *format == "hf" && !*overwrite {
			if err := refuseOtherHFConfig(r, *out); err != nil {
				return err
			}
		}
		// A multimodal model's config.json would have transformers load
		// the causal LM's weights into that model: refused before a
		// checkpoint is read.
		if *format == "hf" {
			if err := model.CheckCausalLMConfig(r.onnx); err != nil {
				return err
			}
		}
		// So would peft load a causal LM's adapter into it, under other
		// module names: the base the adapter names (config.json's
		// _name_or_path, or a --base-model directory) is checked.
		if *format == "peft" {
			if err := model.CheckPEFTBaseConfig(r.onnx, baseName); err != nil {
				return err
			}
		}
		// The tokenizer's Hugging Face files, which hf writes where the
		// model has none; peft writes the adapters alone.
		var tokFiles map[string][]byte
		if *format != "peft" {
			if tokFiles, err = r.checkExportTokenizer(); err != nil {
				return err
			}
		}
		// --model's own tokenizer and generation files, which an hf
		// export into its directory would replace with another
		// --tokenizer's.
		if *format == "hf" && !*overwrite && model.SameFile(outDir, filepath.Dir(r.onnx)) {
			if err := refuseOwnSideFiles(r, outDir, tokFiles); err != nil {
				return err
			}
		}
		// A tokenizer or generation file in an hf export's directory
		// that the export does not write goes in its commit: an earlier
		// export's (recorded in its model.safetensors), as the export
		// replaces its own files, and any other (the user's
		// chat_template.jinja, another model's merges.txt) only with
		// --overwrite, as the onnx export's.
		if *format == "hf" {
			stale, err := staleSideFiles(r, outDir, tokFiles)
			if err != nil {
				return err
			}
			earlier := model.HFSideFiles(outDir)
			stale = slices.DeleteFunc(stale, func(name string) bool { return slices.Contains(earlier, name) })
			if len(stale) > 0 && !*overwrite {
				// Weights that record no files (an export's records
				// config.json at least) are an older spiral's export or
				// another tool's model: whether they came with the file
				// is not known.
				whose := " and no earlier export wrote there: yours or another model's"
				if _, err := os.Stat(filepath.Join(outDir, model.HFWeightsFile)); err == nil && len(earlier) == 0 {
					whose = fmt.Sprintf(", beside a %s that records no files written with it (an older spiral's export, or another tool's model): its or yours", model.HFWeightsFile)
				}
				return usageError{fmt.Errorf("--out %s: %s is a tokenizer or generation file that the export of %s does not write (the model has none)%s, which transformers would read as the export's; give --overwrite to remove it (%s), or another --out",
					*out, filepath.Join(outDir, stale[0]), r.name(), whose, strings.Join(stale, ", "))}
			}
			foreign = append(foreign, stale...)
		}
		var sides []sidecar  // what the onnx export writes beside it
		var dropped []string // the earlier onnx export's files there that this one does not write
		if *format == "onnx" {
			var replaced bool
			if sides, replaced, err = exportSidecars(r, *out, tokFiles, *ckpt != "", *overwrite); err != nil {
				return err
			}
			// Other graphs in the directory go with the files of theirs
			// replaced; a graph beside the same files stays.
			if !replaced {
				foreign = refused
			}
			stale, err := staleSideFiles(r, outDir, tokFiles)
			if err != nil {
				return err
			}
			// The earlier export's own (recorded in its graph) go in
			// the commit, as hf's do.
			own := ownSideFiles(r, *out)
			dropped = slices.DeleteFunc(slices.Clone(stale), func(name string) bool { return !slices.Contains(own, name) })
			stale = slices.DeleteFunc(stale, func(name string) bool { return slices.Contains(own, name) })
			if len(stale) > 0 && !*overwrite {
				return usageError{fmt.Errorf("--out %s: %s is a tokenizer or generation file that the export of %s does not write (the model has none): another model's, which transformers and spiral would read as the export's; give --overwrite to remove it (%s), or another --out",
					*out, filepath.Join(outDir, stale[0]), r.name(), strings.Join(stale, ", "))}
			}
			foreign = append(foreign, stale...)
		}
		w, err := params.NewStore(nil) // no checkpoint: the source's own weights
		if err != nil {
			return err
		}
		var lora lmgraph.LoRA
		loaded := "" // the checkpoint loaded, which --checkpoint may name through its run
		from := "its own weights"
		// exported names what is exported in an error: the writers cannot
		// tell a checkpoint of another layout from a damaged model.
		exported := func(err error) error {
			if err == nil || *ckpt == "" {
				return err
			}
			return fmt.Errorf("export %s onto %s: %w", from, r.given(), err)
		}
		if *ckpt != "" {
			fineTune, fineTuned := "", "" // the checkpoint of no LoRA adapters, which peft has none of, and what it trained
			var trained rl.RunSettings    // the loaded checkpoint's
			path, err := loadCheckpoint(*ckpt, r, env.stderr, func(path string, st rl.RunSettings) error {
				// Told from its settings before its weights are read
				// (gigabytes, for a real model); the run's older
				// checkpoints are of no adapters either.
				if *format == "peft" && !settingsLoRA(st).Enabled() {
					what, err := fineTuneOf(r.onnx, path)
					if err != nil {
						return err
					}
					fineTune, fineTuned = path, what
					return checkpoint.Final(errors.New(what))
				}
				ws, err := checkpoint.NewStoreFor(path)
				if err != nil {
					return err
				}
				if _, err := checkpoint.Load(ctx, path, ws, nil); err != nil {
					// ws, a store of its own, is discarded: no
					// partly loaded values are left to warn of.
					var partly *checkpoint.PartlyLoadedError
					if errors.As(err, &partly) {
						return partly.Discarded()
					}
					return err
				}
				w, lora, trained = ws, settingsLoRA(st), st
				return nil
			})
			if fineTune != "" {
				return fmt.Errorf("--format peft: checkpoint %s is %s, not LoRA adapters; export it with --format onnx or hf", fineTune, fineTuned)
			}
			if err != nil {
				return err
			}
			if *format != "peft" { // which writes no tokenizer
				warnOtherTokenizer(env.stderr, path, trained, r)
			}
			loaded, from = path, "the weights of "+path
			if lora.Enabled() {
				from = fmt.Sprintf("the LoRA adapters of %s (%s)", path, lora)
			}
		}
		switch *format {
		case "peft":
			base := baseName
			if base == "" {
				hf, err := r.hfConfig()
				if err != nil {
					return err
				}
				base = hf.NameOrPath
			}
			if base == "" && !r.embedded { // the embedded model has no Hugging Face base to name
				fmt.Fprintf(env.stderr, "spiral: warning: the peft adapter names no base model (base_model_name_or_path null): %s records no _name_or_path; give --base-model (the Hugging Face id or directory of the model it adapts) for tools that load the base from it\n",
					filepath.Join(r.dir, model.ConfigFile))
			}
			// Another run's adapter is replaced only with --overwrite, as
			// another model is; a re-export of the same run's is not.
			run := checkpointRun(loaded)
			if !*overwrite {
				if err := refuseOtherAdapter(*out, run); err != nil {
					return err
				}
			}
			n, err := model.ExportPEFT(ctx, r.onnx, lora, w, base, run, *out, foreign...)
			if err != nil {
				return exported(err)
			}
			fmt.Fprintf(env.stdout, "wrote %s: a peft adapter directory for %s from %s (%d tensors)\n", *out, r.name(), from, n)
		case "hf":
			n, err := model.ExportHF(ctx, r.onnx, r.tokenizer, *out, w, lora, tokFiles, *overwrite, foreign...)
			if err != nil {
				return exported(err)
			}
			fmt.Fprintf(env.stdout, "wrote %s: a Hugging Face model directory from %s with %s (%d tensors)\n", *out, r.name(), from, n)
		default:
			// The graph, its data file and the files beside it are written
			// in a stage in --out's directory and moved in together, the
			// data file first, once all are written and only while
			// uninterrupted: a Ctrl-C however late in the writing (the
			// graph, written whole after the last tensor's check) leaves
			// the files they were to replace as they were. A replaced
			// model's data file goes when this one keeps its weights
			// inline, and its other files (--overwrite: foreign) go in
			// the commit too, after the export's are in: a process
			// killed within it leaves them to the next stage in the
			// directory to remove (atomicfile.FinishKilled), where after
			// it they stayed beside the export's config.json, which a
			// rerun took for graphs of the export's model.
			dir, base := filepath.Dir(*out), filepath.Base(*out)
			stage, err := atomicfile.NewStage(dir)
			if err != nil {
				return outError("--out", *out, err)
			}
			defer stage.Discard()
			n, nParams, err := model.ExportTrained(ctx, r.onnx, lora, w, filepath.Join(stage.Dir(), base), *external, exportedSideNames(r, tokFiles))
			if err != nil {
				return exported(err)
			}
			names := []string{base + onnx.DataFileSuffix, base}
			for _, s := range sides {
				if err := s.writeIn(stage.Dir()); err != nil {
					return err
				}
				names = append(names, filepath.Base(s.to))
			}
			if err := ctx.Err(); err != nil {
				return err
			}
			if err := stage.Commit(slices.Concat(names, dropped, foreign)...); err != nil {
				return fmt.Errorf("--out %s: %w", *out, err)
			}
			fmt.Fprintf(env.stdout, "wrote %s: %s with %s (%d tensors, %d parameters)\n", *out, r.name(), from, n, nParams)
			for _, s := range sides {
				fmt.Fprintf(env.stdout, "wrote %s: %s\n", s.to, s.report())
			}
			for _, name := range foreign {
				fmt.Fprintf(env.stdout, "removed %s: the replaced model's (--overwrite)\n", filepath.Join(outDir, name))
			}
			return nil
		}
		// hf and peft: the replaced model's files (--overwrite) were
		// removed within the export's commit, after its files were in:
		// a process killed within it leaves them to the next stage in
		// the directory to remove (atomicfile.FinishKilled), where after
		// it they stayed beside the export's files.
		for _, name := range foreign {
			fmt.Fprintf(env.stdout, "removed %s: the replaced model's (--overwrite)\n", filepath.Join(outDir, name))
		}
		return nil
	}
}

// hfRepoID is the shape of a Hugging Face id, "name" or "owner/name"
// (huggingface_hub's validate_repo_id): no trailing slash, one slash at
// most.
var hfRepoID = regexp.MustCompile(`^([\w.-]+/)?[\w.-]+$`)

// baseModelName is --base-model as adapter_config.json records it: a
// local path (one that exists, that starts with "." or is absolute, or
// that no Hugging Face id is shaped like, such as "qwen3-4b-hf/" not yet
// written) made absolute, since peft and transformers read
// base_model_name_or_path against the working directory of whoever
// loads the adapter, not its directory (a relative "../qwen3-4b-hf"
// loaded from elsewhere named another directory, or none); anything
// else, a Hugging Face id, as given.
func baseModelName(base string) (string, error) {
	if base == "" {
		return "", nil
	}
	if _, err := os.Stat(base); err != nil && !strings.HasPrefix(base, ".") && !filepath.IsAbs(base) && hfRepoID.MatchString(base) {
		return base, nil
	}
	abs, err := filepath.Abs(base)
	if err != nil {
		return "", fmt.Errorf("--base-model %s: %w", base, err)
	}
	return abs, nil
}

// exportDir is the directory an export of format to out writes in: out's
// for onnx, whose out is the .onnx file, out itself for hf and peft.
func exportDir(format, out string) string {
	if format == "onnx" {
		return filepath.Dir(out)
	}
	return out
}

// exportForeignFiles returns the names of the model files in dir, the
// directory an export of the given format writes in (base the onnx
// export's file), that the export does not write: another model's,
// which the export would leave beside its own files (an init-model
// directory's model.onnx beside an hf export's config.json, the
// adapter's base in transformers' eyes). For onnx those are the other
// graphs and their data files, another model's where the files beside
// them differ from the export's (exportSidecars), and a Hugging Face
// model's safetensors, index or peft adapter (which transformers would
// load with the export's config.json); for hf the graphs, a
// sharded checkpoint's index and shards (which model.ExportHF removes
// with its files' move under --overwrite, and refuses without it) and a
// peft adapter; for peft the graphs and Hugging Face weights. The
// graphs in src's (--model's) directory are that model's (its graph, its
// data file, an optimum export's other graphs, an hf export of it): an
// export may go beside it, its config.json kept.
func exportForeignFiles(format, dir, base, src string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, outError("--out", dir, err)
	}
	beside := model.SameFile(dir, filepath.Dir(src))
	var names []string
	for _, e := range entries {
		name, lower := e.Name(), strings.ToLower(e.Name())
		if e.IsDir() {
			continue
		}
		graph := !beside && isGraphFile(name)
		var foreign bool
		switch format {
		case "onnx":
			hf := strings.HasSuffix(lower, ".safetensors") || name == model.HFWeightsFile+".index.json" || name == model.PEFTConfigFile
			foreign = graph && name != base && name != base+onnx.DataFileSuffix || !beside && hf
		case "hf":
			shard := (strings.HasSuffix(lower, ".safetensors") && name != model.HFWeightsFile && name != model.PEFTWeightsFile) || name == model.HFWeightsFile+".index.json"
			foreign = graph || shard || name == model.PEFTWeightsFile || name == model.PEFTConfigFile
		case "peft":
			foreign = graph || (strings.HasSuffix(lower, ".safetensors") && name != model.PEFTWeightsFile) || name == model.HFWeightsFile+".index.json"
		}
		if foreign {
			names = append(names, name)
		}
	}
	return names, nil
}

// checkpointRun names the run of the checkpoint at path, as a peft
// export records it (model.PEFTRunKey): the absolute run directory whose
// checkpoints/ holds it, or the checkpoint's own where none does,
// through symbolic links (the same run, however it is named).
func checkpointRun(path string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		return path
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		abs = real
	}
	if ckpts := filepath.Dir(abs); filepath.Base(ckpts) == rl.CheckpointsDir && checkpoint.HoldsCheckpoints(ckpts) {
		return filepath.Dir(ckpts)
	}
	return abs
}

// refuseOtherAdapter refuses, as a usage error, a peft export of run's
// checkpoint into dir where dir holds the adapter of another run (or
// one that records none: another tool's, an older spiral's), which the
// export would replace without a word, as the other formats refuse
// another model without --overwrite.
func refuseOtherAdapter(dir, run string) error {
	recorded, found, err := model.PEFTRun(dir)
	if err != nil {
		return usageError{fmt.Errorf("--out %s holds a peft adapter that cannot be read (%w): give --overwrite to replace it, or another --out", dir, err)}
	}
	if !found || recorded == run {
		return nil
	}
	which := "records no spiral run (another tool's adapter, or an older spiral's export)"
	if recorded != "" {
		which = "is of the run in " + recorded
	}
	return usageError{fmt.Errorf("--out %s holds a peft adapter that %s, not of this export's run, %s: give --overwrite to replace it, or another --out", dir, which, run)}
}

// isGraphFile says whether name is an ONNX graph's or its data file's.
func isGraphFile(name string) bool {
	lower := strings.ToLower(name)
	return strings.HasSuffix(lower, ".onnx") || strings.HasSuffix(lower, ".onnx"+onnx.DataFileSuffix) || strings.HasSuffix(lower, ".onnx.data")
}

// refuseOtherHFConfig refuses, as a usage error, an hf export into dir
// when the config.json there is none that an hf export of r writes (of
// its own weights, or of a checkpoint's, without _name_or_path:
// model.TrainedConfig; either with model.Float32Config's dtype, as
// model.ExportHF writes them) nor a copy of r's: another model's, which
// the export would replace without a word, as the onnx export refuses
// one beside it (exportSidecars). r's own directory's is r's.
func refuseOtherHFConfig(r resolvedModel, dir string) error {
	path, src := filepath.Join(dir, model.ConfigFile), filepath.Join(filepath.Dir(r.onnx), model.ConfigFile)
	have, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) || model.SameFile(path, src) {
		return nil
	}
	if err != nil {
		return outError("--out", dir, err)
	}
	b, err := smallfile.ReadRegular(src, smallfile.Limit)
	if err != nil {
		return nil // model.ExportHF names it
	}
	trained, err := model.TrainedConfig(b)
	if err != nil {
		return fmt.Errorf("%s: %w", src, err)
	}
	for _, c := range [][]byte{b, trained} {
		exported, err := model.Float32Config(c)
		if err != nil {
			return fmt.Errorf("%s: %w", src, err)
		}
		if bytes.Equal(have, c) || bytes.Equal(have, exported) {
			return nil
		}
	}
	return usageError{fmt.Errorf("--out %s holds %s, which differs from the one the export of %s writes (another model's?): give --overwrite to replace that model, or another --out", dir, path, r.name())}
}

// fineTuneOf says what the checkpoint at path, of no LoRA adapters, of
// the model at src trained: "a full fine-tune", or the model's own
// parameters that its run's --train and --freeze chose
// (rl.CheckpointSelection), or, where it records none (an sft checkpoint
// made before 2026-12-06), how many of them it holds.
func fineTuneOf(src, path string) (string, error) {
	recorded, err := rl.CheckpointSelection(path)
	if err != nil {
		return "", err
	}
	if recorded == "" {
		held, parameters, err := heldParameters(src, path)
		if err != nil {
			return "", err
		}
		if len(held) < len(parameters) {
			return fmt.Sprintf("a fine-tune of %d of the model's %d parameters (it records no --train and --freeze selection: an sft checkpoint of a spiral before 2026-12-06?)", len(held), len(parameters)), nil
		}
	}
	sel, err := lmgraph.ParseSelection(recorded)
	if err != nil {
		return "", checkpoint.Final(fmt.Errorf("checkpoint %s: %w", path, err))
	}
	if flags := sel.Flags(); flags != "" {
		return "a fine-tune of the model's own parameters (" + flags + ")", nil
	}
	return "a full fine-tune", nil
}
