package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/spiral-rl/spiral/model"
	"github.com/spiral-rl/spiral/model/atomicfile"
	"github.com/spiral-rl/spiral/model/params"
)

// TestExportRefusesAnotherModelsDirectory: an export into a directory
// that holds another model's files (an init-model directory: model.onnx
// and config.json of another shape) replaced config.json and
// tokenizer.json (hf) and exited 0, leaving the directory's model.onnx
// beside another model's config, which eval and train then read. It is
// refused, naming --out and the file, unless --overwrite, which replaces
// that model (its files the export does not write removed); a re-export
// into the export's own directory, and an hf export into --model's own
// directory, still work.
func TestExportRefusesAnotherModelsDirectory(t *testing.T) {
	t.Setenv("SPIRAL_CACHE_DIR", t.TempDir())
	dir := t.TempDir()
	runDir := filepath.Join(dir, "run")
	trainTinyLoRA(t, runDir)
	export := func(args ...string) (int, string) {
		var stderr bytes.Buffer
		code := run(context.Background(), append([]string{"export"}, args...), &cliEnv{stdout: io.Discard, stderr: &stderr})
		return code, stderr.String()
	}
	initModel := func(name string) (string, []byte) {
		out := filepath.Join(dir, name)
		require.Zero(t, run(context.Background(), []string{"init-model", "--layers", "1", "--hidden", "32", "--out", out}, &cliEnv{stdout: io.Discard, stderr: io.Discard}))
		cfg, err := os.ReadFile(filepath.Join(out, "config.json"))
		require.NoError(t, err)
		return out, cfg
	}
	for _, tc := range []struct {
		format  string
		args    []string // besides --format and --out
		onnxOut bool     // --out is DIR/model.onnx
		want    string   // the refusal, DIR for the directory
	}{
		{"hf", nil, false, "--out DIR holds model.onnx, a model file that --format hf does not write (another model's, which would be left beside the export's config.json): give --overwrite to replace that model (its model.onnx removed), or another --out"},
		{"peft", []string{"--checkpoint", runDir}, false, "--out DIR holds model.onnx, a model file that --format peft does not write (another model's, which would be left beside the export's adapter): give --overwrite to replace that model (its model.onnx, config.json, tokenizer.json removed), or another --out"},
		{"onnx", []string{"--checkpoint", runDir}, true, "--out DIR/model.onnx: DIR/config.json already exists and differs from"},
	} {
		t.Run(tc.format, func(t *testing.T) {
			out, cfg := initModel("init-" + tc.format)
			outArg := out
			if tc.onnxOut {
				outArg = filepath.Join(out, "model.onnx")
			}
			args := append([]string{"--format", tc.format, "--out", outArg}, tc.args...)
			code, stderr := export(args...)
			require.Equal(t, exitUsage, code, stderr)
			require.Contains(t, stderr, "spiral export: "+replaceDir(tc.want, out), stderr)
			got, err := os.ReadFile(filepath.Join(out, "config.json"))
			require.NoError(t, err)
			require.Equal(t, cfg, got, "the directory's model left as it was")

			code, stderr = export(append(args, "--overwrite")...)
			require.Zero(t, code, stderr)
			if !tc.onnxOut {
				require.NoFileExists(t, filepath.Join(out, "model.onnx"), "the replaced model's file")
			}
			// Re-exported into its own files: no --overwrite needed.
			code, stderr = export(args...)
			require.Zero(t, code, stderr)
		})
	}
	// The hf export beside --model, in its directory, as before, with
	// the model's other graphs there (an optimum export's).
	src, _ := initModel("src")
	require.NoError(t, os.WriteFile(filepath.Join(src, "decoder_model.onnx"), []byte("x"), 0o644))
	code, msg := export("--format", "hf", "--model", src, "--out", src)
	require.Zero(t, code, msg)
	require.FileExists(t, filepath.Join(src, "model.onnx"))
}

func replaceDir(s, dir string) string { return strings.ReplaceAll(s, "DIR", dir) }

// TestExportHFOverwriteShardedModel: an hf export into a directory
// holding a sharded model (model.safetensors.index.json and shards) was
// refused with exit 1 ("export into another directory, or remove them")
// even with --overwrite, so --overwrite could not replace a sharded
// model as it replaces any other. Without --overwrite it is refused as
// another model's files are (exit 2, naming --overwrite); with it the
// index and shards are removed as the export moves in.
func TestExportHFOverwriteShardedModel(t *testing.T) {
	t.Setenv("SPIRAL_CACHE_DIR", t.TempDir())
	out := t.TempDir()
	shards := []string{"model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors", "model.safetensors.index.json"}
	for _, f := range shards {
		require.NoError(t, os.WriteFile(filepath.Join(out, f), []byte("{}"), 0o644))
	}
	args := []string{"export", "--format", "hf", "--out", out}
	var stderr bytes.Buffer
	code := run(context.Background(), args, &cliEnv{stdout: io.Discard, stderr: &stderr})
	require.Equal(t, exitUsage, code, stderr.String())
	require.Equal(t, "spiral export: --out "+out+" holds model-00001-of-00002.safetensors, a model file that --format hf does not write (another model's, which would be left beside the export's config.json): give --overwrite to replace that model (its "+strings.Join(shards, ", ")+" removed), or another --out\n", stderr.String())
	for _, f := range shards {
		require.FileExists(t, filepath.Join(out, f), "left as it was")
	}
	stderr.Reset()
	var stdout bytes.Buffer
	code = run(context.Background(), append(args, "--overwrite"), &cliEnv{stdout: &stdout, stderr: &stderr})
	require.Zero(t, code, stderr.String())
	for _, f := range shards {
		require.NoFileExists(t, filepath.Join(out, f), "the replaced model's")
		require.Contains(t, stdout.String(), "removed "+filepath.Join(out, f)+": the replaced model's (--overwrite)\n")
	}
	require.FileExists(t, filepath.Join(out, "model.safetensors"))
}

// TestExportPEFTOverwriteLeavesAnAdapterDirectory: a peft export with
// --overwrite into a model's directory (an hf export's, an init-model
// one's) removed the replaced model's weights but left its config.json,
// tokenizer and generation files beside the adapter, which
// AutoTokenizer and AutoConfig read from the adapter's directory, and
// vLLM tokenizes a LoRA request with (get_lora_tokenizer loads the
// tokenizer in the adapter's directory where there is one), though they
// are the replaced model's, not the adapter's base's. A peft adapter
// directory holds the adapter (adapter_model.safetensors,
// adapter_config.json; peft's save_pretrained adds a README.md model
// card, which is left, as any file that is no model's): the replaced
// model's files are removed with it.
func TestExportPEFTOverwriteLeavesAnAdapterDirectory(t *testing.T) {
	t.Setenv("SPIRAL_CACHE_DIR", t.TempDir())
	dir := t.TempDir()
	runDir := filepath.Join(dir, "run")
	trainTinyLoRA(t, runDir)
	for _, tc := range []struct {
		name string
		make []string // the command that writes the replaced model into DIR
	}{
		{"hf", []string{"export", "--format", "hf", "--out", "DIR"}},
		{"init-model", []string{"init-model", "--layers", "1", "--hidden", "32", "--out", "DIR"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(dir, tc.name)
			args := make([]string, len(tc.make))
			for i, a := range tc.make {
				args[i] = replaceDir(a, out)
			}
			var stderr bytes.Buffer
			require.Zero(t, run(context.Background(), args, &cliEnv{stdout: io.Discard, stderr: &stderr}), stderr.String())
			require.NoError(t, os.WriteFile(filepath.Join(out, "README.md"), []byte("card"), 0o644))
			code := run(context.Background(), []string{"export", "--format", "peft", "--checkpoint", runDir, "--out", out, "--overwrite"}, &cliEnv{stdout: io.Discard, stderr: &stderr})
			require.Zero(t, code, stderr.String())
			names := dirNames(t, out)
			require.Equal(t, []string{"README.md", "adapter_config.json", "adapter_model.safetensors"}, names)
		})
	}
}

// TestBaseModelName: a --base-model that is a local path is recorded
// absolute in adapter_config.json, since peft and transformers resolve
// base_model_name_or_path against the loader's working directory: a
// relative "../hf" was recorded as given, so the adapter loaded from any
// other directory named another base, or none. A Hugging Face id stays
// as given.
func TestBaseModelName(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "runs", "hf"), 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "work"), 0o755))
	t.Chdir(filepath.Join(dir, "work"))
	for _, tc := range []struct{ given, want string }{
		{"", ""},
		{"Qwen/Qwen3-4B", "Qwen/Qwen3-4B"},
		{"../runs/hf", filepath.Join(dir, "runs", "hf")},
		{"./later-hf", filepath.Join(dir, "work", "later-hf")}, // a path, not yet written
		{filepath.Join(dir, "runs", "hf"), filepath.Join(dir, "runs", "hf")},
	} {
		got, err := baseModelName(tc.given)
		require.NoError(t, err)
		require.Equal(t, tc.want, got, "%q", tc.given)
	}
	t.Chdir(dir)
	got, err := baseModelName("runs/hf") // exists here: a directory, as transformers would load it
	require.NoError(t, err)
	require.Equal(t, filepath.Join(dir, "runs", "hf"), got)
}

// TestExportRefusesCheckpointDirectory: an export into a checkpoint's
// directory is refused, --overwrite or not: hf into the --checkpoint it
// exports ("--out CKPT") was refused only for the checkpoint's
// optimizer.safetensors, "another model's", and with --overwrite it wrote
// its model.safetensors over the checkpoint's and removed the optimizer
// file, so that eval --checkpoint CKPT then failed ("model.safetensors:
// 608528 bytes, state.json records 608576"); and the run's --keep
// removes such a directory, export and all.
func TestExportRefusesCheckpointDirectory(t *testing.T) {
	t.Setenv("SPIRAL_CACHE_DIR", t.TempDir())
	runDir := filepath.Join(t.TempDir(), "run")
	trainTinyLoRA(t, runDir)
	ckpts, err := filepath.Glob(filepath.Join(runDir, "checkpoints", "ckpt-*"))
	require.NoError(t, err)
	require.NotEmpty(t, ckpts)
	ckpt := ckpts[len(ckpts)-1]
	before, err := os.ReadDir(ckpt)
	require.NoError(t, err)
	for _, tc := range []struct {
		format, out string
	}{
		{"hf", ckpt},
		{"peft", ckpt},
		{"onnx", filepath.Join(ckpt, "model.onnx")},
	} {
		for _, overwrite := range []bool{false, true} {
			args := []string{"export", "--format", tc.format, "--checkpoint", ckpt, "--out", tc.out}
			if overwrite {
				args = append(args, "--overwrite")
			}
			var stderr bytes.Buffer
			code := run(context.Background(), args, &cliEnv{stdout: io.Discard, stderr: &stderr})
			require.Equal(t, exitUsage, code, "%q: %s", args, stderr.String())
			require.Equal(t, "spiral export: --out "+tc.out+": "+ckpt+" is a checkpoint directory (it holds state.json): the export would replace or remove the checkpoint's files, and its run's --keep removes the directory with the export; give another --out\n", stderr.String())
			after, err := os.ReadDir(ckpt)
			require.NoError(t, err)
			require.Equal(t, len(before), len(after), "%q", args)
		}
	}
}

// TestExportTokenizerDirectory: --tokenizer may name a directory holding
// tokenizer.json, as the tokenizer loader takes it; the export copied its
// files as though --tokenizer were a file, reading the directory itself
// ("is a directory") and its parent's side files. The tokenizer.json and
// tokenizer_config.json of the directory are copied beside the export.
func TestExportTokenizerDirectory(t *testing.T) {
	t.Setenv("SPIRAL_CACHE_DIR", t.TempDir())
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	require.Zero(t, run(context.Background(), []string{"init-model", "--layers", "1", "--hidden", "32", "--out", src}, &cliEnv{stdout: io.Discard, stderr: io.Discard}))
	tok, err := os.ReadFile(filepath.Join(src, "tokenizer.json"))
	require.NoError(t, err)
	require.NoError(t, os.Remove(filepath.Join(src, "tokenizer.json")))
	tokDir := filepath.Join(dir, "tok")
	require.NoError(t, os.MkdirAll(tokDir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(tokDir, "tokenizer.json"), tok, 0o644))
	tokConfig := []byte(`{"model_max_length": 77}`)
	require.NoError(t, os.WriteFile(filepath.Join(tokDir, "tokenizer_config.json"), tokConfig, 0o644))
	// A decoy in the directory's parent, which must not be copied.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "tokenizer_config.json"), []byte(`{"decoy": true}`), 0o644))
	for _, tokArg := range []string{tokDir, filepath.Join(tokDir, "tokenizer.json")} {
		out := filepath.Join(t.TempDir(), "hf")
		var stderr bytes.Buffer
		code := run(context.Background(), []string{"export", "--format", "hf", "--model", src, "--tokenizer", tokArg, "--out", out}, &cliEnv{stdout: io.Discard, stderr: &stderr})
		require.Zero(t, code, "--tokenizer %s: %s", tokArg, stderr.String())
		got, err := os.ReadFile(filepath.Join(out, "tokenizer.json"))
		require.NoError(t, err)
		require.Equal(t, tok, got, tokArg)
		got, err = os.ReadFile(filepath.Join(out, "tokenizer_config.json"))
		require.NoError(t, err)
		require.Contains(t, string(got), `"model_max_length": 77`, tokArg)
		require.NotContains(t, string(got), "decoy", tokArg)
	}
}

// TestBaseModelNameNotYetWritten: a --base-model that cannot be a Hugging
// Face id (a trailing slash, as the README writes qwen3-4b-hf/, or more
// than one slash) is a directory, recorded absolute whether or not it
// is written yet: the README's LoRA commands export the adapter before
// the base, and "qwen3-4b-hf/" was recorded as given, an id no hub
// has, which peft then resolved against its own working directory.
func TestBaseModelNameNotYetWritten(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	for _, tc := range []struct{ given, want string }{
		{"qwen3-4b-hf/", filepath.Join(dir, "qwen3-4b-hf")},
		{"runs/lora/hf", filepath.Join(dir, "runs", "lora", "hf")},
		{"runs/hf/", filepath.Join(dir, "runs", "hf")},
		// An id's shape, written nowhere here: an id.
		{"Qwen/Qwen3-4B-Instruct-2507", "Qwen/Qwen3-4B-Instruct-2507"},
		{"gpt2", "gpt2"},
	} {
		got, err := baseModelName(tc.given)
		require.NoError(t, err)
		require.Equal(t, tc.want, got, "%q", tc.given)
	}
}

// TestExportONNXRefusesAHuggingFaceModel: an onnx export into a
// directory holding an hf export of another checkpoint (model.safetensors
// and a config.json alike) wrote model.onnx beside that model.safetensors
// and exited 0, so transformers loading the directory read the other
// checkpoint's weights; an hf export into a directory holding model.onnx
// is refused. It is refused the same way (exit 2, naming the file) unless
// --overwrite, which removes the replaced model's weights once the export
// is in.
func TestExportONNXRefusesAHuggingFaceModel(t *testing.T) {
	t.Setenv("SPIRAL_CACHE_DIR", t.TempDir())
	dir := t.TempDir()
	runDir := filepath.Join(dir, "run")
	trainTinyLoRA(t, runDir)
	export := func(args ...string) (int, string, string) {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), append([]string{"export"}, args...), &cliEnv{stdout: &stdout, stderr: &stderr})
		return code, stdout.String(), stderr.String()
	}
	for _, tc := range []struct {
		name  string
		files []string // the Hugging Face model's files the onnx export does not write
	}{
		{"hf export", []string{"model.safetensors"}},
		{"sharded", []string{"model-00001-of-00002.safetensors", "model.safetensors.index.json"}},
		{"peft adapter", []string{"adapter_config.json", "adapter_model.safetensors"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-"))
			code, _, stderr := export("--format", "hf", "--out", out) // the model's own weights: another checkpoint's
			require.Zero(t, code, stderr)
			require.NoError(t, os.Remove(filepath.Join(out, "model.safetensors")))
			for _, f := range tc.files {
				require.NoError(t, os.WriteFile(filepath.Join(out, f), []byte("{}"), 0o644))
			}
			args := []string{"--format", "onnx", "--checkpoint", runDir, "--out", filepath.Join(out, "model.onnx")}
			code, _, stderr = export(args...)
			require.Equal(t, exitUsage, code, stderr)
			require.Equal(t, "spiral export: --out "+filepath.Join(out, "model.onnx")+" holds "+tc.files[0]+", a model file that --format onnx does not write (another model's, which would be left beside the export's model.onnx): give --overwrite to replace that model (its "+strings.Join(tc.files, ", ")+" removed), or another --out\n", stderr)
			require.NoFileExists(t, filepath.Join(out, "model.onnx"))

			code, stdout, stderr := export(append(args, "--overwrite")...)
			require.Zero(t, code, stderr)
			require.FileExists(t, filepath.Join(out, "model.onnx"))
			for _, f := range tc.files {
				require.NoFileExists(t, filepath.Join(out, f), "the replaced model's")
				require.Contains(t, stdout, "removed "+filepath.Join(out, f)+": the replaced model's (--overwrite)\n")
			}
			code, _, stderr = export(args...) // re-exported into its own files
			require.Zero(t, code, stderr)
		})
	}
}

// TestExportAddedTokensFile: a tokenizer's added_tokens.json (which
// transformers' save_pretrained writes for Qwen's tokenizers, and
// AutoTokenizer reads beside tokenizer.json, adding its tokens at its
// ids) was neither copied by the exports nor removed with a replaced
// model's tokenizer files: an hf export over an earlier export of
// another model left that model's added_tokens.json beside the new
// tokenizer.json, so AutoTokenizer loaded the directory with another
// tokenizer's tokens. It is one of the tokenizer's files now: copied
// where the source has one, removed where it has none.
func TestExportAddedTokensFile(t *testing.T) {
	t.Setenv("SPIRAL_CACHE_DIR", t.TempDir())
	dir := t.TempDir()
	export := func(args ...string) {
		t.Helper()
		var stderr bytes.Buffer
		require.Zero(t, run(context.Background(), append([]string{"export"}, args...), &cliEnv{stdout: io.Discard, stderr: &stderr}), stderr.String())
	}
	added := []byte(`{"<tool_call>": 151657}` + "\n")
	// A source with one: copied.
	src := filepath.Join(dir, "src")
	require.NoError(t, os.Mkdir(src, 0o755))
	emb := filepath.Dir(embeddedModelPath(t))
	for _, f := range []string{"model.onnx", "config.json", "tokenizer.json"} {
		b, err := os.ReadFile(filepath.Join(emb, f))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(src, f), b, 0o644))
	}
	require.NoError(t, os.WriteFile(filepath.Join(src, "added_tokens.json"), added, 0o644))
	hf := filepath.Join(dir, "hf")
	export("--format", "hf", "--model", src, "--out", hf)
	got, err := os.ReadFile(filepath.Join(hf, "added_tokens.json"))
	require.NoError(t, err)
	require.Equal(t, added, got)
	// The embedded model has none: its export over that one removes it.
	export("--format", "hf", "--out", hf)
	require.NoFileExists(t, filepath.Join(hf, "added_tokens.json"), "the replaced model's tokenizer file")
	require.FileExists(t, filepath.Join(hf, "tokenizer.json"))
}

// TestExportONNXStaleSideFiles: an onnx export into a directory holding
// a tokenizer or generation file that its model has none of (another
// model's chat_template.jinja, which transformers and spiral read in
// tokenizer_config.json's place, its merges.txt) left it there, without
// a word and with --overwrite too, so the export was prompted with the
// other model's chat template. It is refused (exit 2, naming the file)
// unless --overwrite, which removes it once the export is in, as the hf
// export removes a replaced model's.
func TestExportONNXStaleSideFiles(t *testing.T) {
	t.Setenv("SPIRAL_CACHE_DIR", t.TempDir())
	dir := t.TempDir()
	runDir := filepath.Join(dir, "run")
	trainTinyLoRA(t, runDir)
	export := func(args ...string) (int, string, string) {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), append([]string{"export"}, args...), &cliEnv{stdout: &stdout, stderr: &stderr})
		return code, stdout.String(), stderr.String()
	}
	out := filepath.Join(dir, "onnx", "model.onnx")
	args := []string{"--checkpoint", runDir, "--out", out}
	code, _, stderr := export(args...)
	require.Zero(t, code, stderr)
	stale := []string{"merges.txt", "chat_template.jinja"}
	for _, name := range stale {
		require.NoError(t, os.WriteFile(filepath.Join(dir, "onnx", name), []byte("another model's"), 0o644))
	}
	code, _, stderr = export(args...)
	require.Equal(t, exitUsage, code, stderr)
	require.Equal(t, "spiral export: --out "+out+": "+filepath.Join(dir, "onnx", "merges.txt")+" is a tokenizer or generation file that the export of embedded does not write (the model has none): another model's, which transformers and spiral would read as the export's; give --overwrite to remove it (merges.txt, chat_template.jinja), or another --out\n", stderr)

	code, stdout, stderr := export(append(args, "--overwrite")...)
	require.Zero(t, code, stderr)
	for _, name := range stale {
		path := filepath.Join(dir, "onnx", name)
		require.NoFileExists(t, path)
		require.Contains(t, stdout, "removed "+path+": the replaced model's (--overwrite)\n")
	}
	code, _, stderr = export(args...)
	require.Zero(t, code, stderr)
}

// TestExportPEFTBaseModelIsOut: a peft export whose --base-model is its
// own --out (the hf export of the base, which the adapter should name)
// wrote the adapter there naming its own directory as its base, and
// with --overwrite removed the base model's weights, config.json and
// tokenizer for it, exiting 0: the adapter named a base that was gone,
// and transformers loading it read the adapter's directory as its base.
// It is refused (exit 2), --overwrite or not, nothing removed.
func TestExportPEFTBaseModelIsOut(t *testing.T) {
	t.Setenv("SPIRAL_CACHE_DIR", t.TempDir())
	dir := t.TempDir()
	runDir := filepath.Join(dir, "run")
	trainTinyLoRA(t, runDir)
	hf := filepath.Join(dir, "hf")
	var stderr bytes.Buffer
	require.Zero(t, run(context.Background(), []string{"export", "--format", "hf", "--out", hf}, &cliEnv{stdout: io.Discard, stderr: &stderr}), stderr.String())
	before, err := os.ReadDir(hf)
	require.NoError(t, err)
	t.Chdir(dir)
	for _, tc := range []struct{ base, out string }{
		{hf, hf},
		{"hf", "./hf/"},
		{filepath.Join(dir, "new"), "new"},
	} {
		for _, overwrite := range []bool{false, true} {
			args := []string{"export", "--format", "peft", "--checkpoint", runDir, "--base-model", tc.base, "--out", tc.out}
			if overwrite {
				args = append(args, "--overwrite")
			}
			stderr.Reset()
			code := run(context.Background(), args, &cliEnv{stdout: io.Discard, stderr: &stderr})
			require.Equal(t, exitUsage, code, "%q: %s", args, stderr.String())
			require.Equal(t, "spiral export: --base-model "+tc.base+" is --out "+tc.out+": the adapter would name its own directory as its base model, which peft and transformers load from base_model_name_or_path (and --overwrite would remove the model there); give the adapter a directory of its own, such as --out "+filepath.Join(filepath.Dir(filepath.Clean(tc.out)), "peft")+"\n", stderr.String(), "%q", args)
		}
	}
	after, err := os.ReadDir(hf)
	require.NoError(t, err)
	require.Equal(t, before, after)
	require.NoDirExists(t, filepath.Join(dir, "new"))
}

// TestExportHFRefusesAnotherModelsConfig: an hf export into the
// directory of another model's hf export (its model.safetensors and a
// config.json of another shape) replaced that model without a word,
// though an onnx export refuses a config.json beside it that differs
// from its own, as another model's. It is refused the same way (exit 2,
// naming config.json) unless --overwrite; an export of the same model
// (after more training, or untrained) into its own directory still
// needs none.
func TestExportHFRefusesAnotherModelsConfig(t *testing.T) {
	t.Setenv("SPIRAL_CACHE_DIR", t.TempDir())
	dir := t.TempDir()
	runDir := filepath.Join(dir, "run")
	trainTinyLoRA(t, runDir)
	cli := func(args ...string) (int, string) {
		var stderr bytes.Buffer
		code := run(context.Background(), args, &cliEnv{stdout: io.Discard, stderr: &stderr})
		return code, stderr.String()
	}
	other := filepath.Join(dir, "other")
	code, stderr := cli("init-model", "--layers", "1", "--hidden", "32", "--out", other)
	require.Zero(t, code, stderr)
	hf := filepath.Join(dir, "hf")
	code, stderr = cli("export", "--format", "hf", "--model", other, "--out", hf)
	require.Zero(t, code, stderr)
	cfg, err := os.ReadFile(filepath.Join(hf, "config.json"))
	require.NoError(t, err)

	for _, args := range [][]string{
		{"export", "--format", "hf", "--out", hf},
		{"export", "--format", "hf", "--checkpoint", runDir, "--out", hf},
	} {
		code, stderr = cli(args...)
		require.Equal(t, exitUsage, code, stderr)
		require.Equal(t, "spiral export: --out "+hf+" holds "+filepath.Join(hf, "config.json")+", which differs from the one the export of embedded writes (another model's?): give --overwrite to replace that model, or another --out\n", stderr)
		got, err := os.ReadFile(filepath.Join(hf, "config.json"))
		require.NoError(t, err)
		require.Equal(t, cfg, got, "the model there left as it was")
	}
	code, stderr = cli("export", "--format", "hf", "--checkpoint", runDir, "--out", hf, "--overwrite")
	require.Zero(t, code, stderr)
	// Its own directory, after more training: replaced without --overwrite.
	code, stderr = cli("export", "--format", "hf", "--checkpoint", runDir, "--out", hf)
	require.Zero(t, code, stderr)
	code, stderr = cli("export", "--format", "hf", "--out", hf) // the model before training
	require.Zero(t, code, stderr)
}

// TestExportRefusesOutInCheckpoints: an export --out within a
// checkpoint directory (--out RUN/checkpoints/ckpt-000050/hf) or a run's
// checkpoints/ was taken, and the run's --keep then removed the export
// with the checkpoint, its --fresh moved it into previous-*. Refused
// before anything is written (exit 2), naming the directory and why.
func TestExportRefusesOutInCheckpoints(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	writeFakeRun(t, root)
	ckpts := filepath.Join(root, "run", "checkpoints")
	ckpt := filepath.Join(ckpts, "ckpt-000050")
	inCkpt := func(out string) string {
		return "spiral export: --out " + out + " lies in checkpoint directory " + ckpt + ": its run's --keep removes that directory, the export with it; give an --out outside the run's checkpoints\n"
	}
	inCkpts := func(out, where, instead string) string {
		return "spiral export: --out " + out + " " + where + ", the directory of a training run's checkpoints: the run's --fresh moves it aside into previous-*, the export with it, and its --keep removes what there is named as a checkpoint (ckpt-NNNNNN); give an --out outside it, such as --out " + filepath.Join(root, "run", instead) + "\n"
	}
	for _, tc := range []struct{ format, out, want string }{
		{"hf", filepath.Join(ckpt, "hf"), inCkpt(filepath.Join(ckpt, "hf"))},
		{"peft", filepath.Join(ckpt, "peft"), inCkpt(filepath.Join(ckpt, "peft"))},
		{"onnx", filepath.Join(ckpt, "onnx", "model.onnx"), inCkpt(filepath.Join(ckpt, "onnx", "model.onnx"))},
		{"hf", filepath.Join(ckpts, "hf"), inCkpts(filepath.Join(ckpts, "hf"), "is in "+ckpts, "hf")},
		{"peft", ckpts, inCkpts(ckpts, "is "+ckpts, "peft")},
		{"onnx", filepath.Join(ckpts, "model.onnx"), inCkpts(filepath.Join(ckpts, "model.onnx"), "is "+ckpts, filepath.Join("export", "model.onnx"))},
	} {
		before := entries(t, root)
		args := []string{"export", "--format", tc.format, "--checkpoint", ckpt, "--out", tc.out, "--overwrite"}
		var stderr bytes.Buffer
		code := run(context.Background(), args, &cliEnv{stdout: io.Discard, stderr: &stderr})
		require.Equal(t, exitUsage, code, "%q: %s", args, stderr.String())
		require.Equal(t, tc.want, stderr.String(), "%q", args)
		require.Equal(t, before, entries(t, root), "%q: nothing written", args)
	}
}

// TestExportPEFTRefusesAnotherRunsAdapter: a peft export into the
// directory of another run's adapter replaced it and exited 0, where
// every other format refuses another model without --overwrite. The
// adapter records its run (adapter_model.safetensors' spiral_run): a
// re-export of the same run's (after more training) replaces it, another
// run's, or one that records none (another tool's), is refused (exit 2,
// the adapter left as it was) unless --overwrite.
func TestExportPEFTRefusesAnotherRunsAdapter(t *testing.T) {
	t.Setenv("SPIRAL_CACHE_DIR", t.TempDir())
	dir, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	run1, run2 := filepath.Join(dir, "run1"), filepath.Join(dir, "run2")
	trainTinyLoRA(t, run1)
	trainTinyLoRA(t, run2)
	out := filepath.Join(dir, "peft")
	export := func(runDir string, extra ...string) (int, string) {
		var stderr bytes.Buffer
		code := run(context.Background(), append([]string{"export", "--format", "peft", "--checkpoint", runDir, "--out", out}, extra...), &cliEnv{stdout: io.Discard, stderr: &stderr})
		return code, stderr.String()
	}
	code, stderr := export(run1)
	require.Zero(t, code, stderr)
	code, stderr = export(run1) // a re-export: its own adapter
	require.Zero(t, code, stderr)
	link := filepath.Join(dir, "link")
	require.NoError(t, os.Symlink(run1, link))
	code, stderr = export(link) // the same run, through a link
	require.Zero(t, code, stderr)
	before, err := os.ReadFile(filepath.Join(out, "adapter_model.safetensors"))
	require.NoError(t, err)
	code, stderr = export(run2)
	require.Equal(t, exitUsage, code, stderr)
	require.Equal(t, "spiral export: --out "+out+" holds a peft adapter that is of the run in "+run1+", not of this export's run, "+run2+": give --overwrite to replace it, or another --out\n", stderr)
	after, err := os.ReadFile(filepath.Join(out, "adapter_model.safetensors"))
	require.NoError(t, err)
	require.Equal(t, before, after, "the adapter left as it was")
	code, stderr = export(run2, "--overwrite")
	require.Zero(t, code, stderr)
	recorded, found, err := model.PEFTRun(out)
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, run2, recorded)

	// An adapter that records no run: another tool's.
	require.NoError(t, os.WriteFile(filepath.Join(out, "adapter_model.safetensors"), []byte("\x02\x00\x00\x00\x00\x00\x00\x00{}"), 0o644))
	code, stderr = export(run2)
	require.Equal(t, exitUsage, code, stderr)
	require.Equal(t, "spiral export: --out "+out+" holds a peft adapter that records no spiral run (another tool's adapter, or an older spiral's export), not of this export's run, "+run2+": give --overwrite to replace it, or another --out\n", stderr)
}

// TestExportPEFTRefusesFullFineTuneUnread: a peft export of a full
// fine-tune's checkpoint loaded its weights whole (gigabytes, for a real
// model) before it found that the run has no LoRA adapters to export. It
// is refused from the checkpoint's settings now, before its weights are
// read: a checkpoint whose weights are damaged is refused as the full
// fine-tune it is, not reported as damaged (named) or skipped (through
// its run).
func TestExportPEFTRefusesFullFineTuneUnread(t *testing.T) {
	t.Setenv("SPIRAL_CACHE_DIR", t.TempDir())
	dir := t.TempDir()
	runDir := filepath.Join(dir, "run")
	var stderr bytes.Buffer
	require.Zero(t, run(context.Background(), []string{"train", "--out", runDir, "--steps", "1", "--problems", "1", "--n1", "2", "--k", "1", "--n", "2", "--n2", "2",
		"--max-new-tokens", "4", "--eval-every", "0", "--final-rsa-steps", "0", "--threads", "1", "--quiet"}, &cliEnv{stdout: io.Discard, stderr: &stderr}), stderr.String())
	ckpts, err := filepath.Glob(filepath.Join(runDir, "checkpoints", "ckpt-*"))
	require.NoError(t, err)
	require.Len(t, ckpts, 1)
	ckpt := ckpts[0]
	weights := filepath.Join(ckpt, "model.safetensors")
	b, err := os.ReadFile(weights)
	require.NoError(t, err)
	b[len(b)-1] ^= 1 // the last tensor's data: read only by a load
	require.NoError(t, os.WriteFile(weights, b, 0o644))
	out := filepath.Join(dir, "peft")
	for _, from := range []string{ckpt, runDir} {
		t.Run(filepath.Base(from), func(t *testing.T) {
			var stderr bytes.Buffer
			code := run(context.Background(), []string{"export", "--format", "peft", "--checkpoint", from, "--out", out}, &cliEnv{stdout: io.Discard, stderr: &stderr})
			require.Equal(t, 1, code, stderr.String())
			require.Equal(t, "spiral export: --format peft: checkpoint "+ckpt+" is a full fine-tune, not LoRA adapters; export it with --format onnx or hf\n", stderr.String())
			require.NoDirExists(t, out)
		})
	}
}

// TestExportPEFTOfASelectionSaysWhatItTrained: a peft export of a
// checkpoint of a --train or --freeze run, which trained some of the
// model's own parameters, was refused as "a full fine-tune". It is
// refused naming the selection the run trained.
func TestExportPEFTOfASelectionSaysWhatItTrained(t *testing.T) {
	t.Setenv("SPIRAL_CACHE_DIR", t.TempDir())
	for _, tc := range []struct {
		name string
		flag []string
		want string
	}{
		{"train", []string{"--train", `layers\.0\.`}, `a fine-tune of the model's own parameters (--train "layers\\.0\\."), not LoRA adapters`},
		{"freeze", []string{"--freeze", "embed"}, `a fine-tune of the model's own parameters (--freeze "embed"), not LoRA adapters`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			runDir := filepath.Join(dir, "run")
			var stderr bytes.Buffer
			args := append([]string{"train", "--out", runDir, "--steps", "1", "--problems", "1", "--n1", "2", "--k", "1", "--n", "2", "--n2", "2",
				"--max-new-tokens", "4", "--eval-every", "0", "--final-rsa-steps", "0", "--threads", "1", "--quiet"}, tc.flag...)
			require.Zero(t, run(context.Background(), args, &cliEnv{stdout: io.Discard, stderr: &stderr}), stderr.String())
			ckpt := filepath.Join(runDir, "checkpoints", "ckpt-000001")
			stderr.Reset()
			out := filepath.Join(dir, "peft")
			code := run(context.Background(), []string{"export", "--format", "peft", "--checkpoint", runDir, "--out", out}, &cliEnv{stdout: io.Discard, stderr: &stderr})
			require.Equal(t, 1, code, stderr.String())
			require.Equal(t, "spiral export: --format peft: checkpoint "+ckpt+" is "+tc.want+"; export it with --format onnx or hf\n", stderr.String())
			require.NoDirExists(t, out)
		})
	}
}

// TestExportONNXOverwriteRemovesInItsCommit: an onnx export with
// --overwrite that replaces another model removed that model's other
// graphs only after its commit: a process killed between the two left
// them beside the export's config.json, and a rerun, finding the files
// beside them the export's own, kept them as graphs of the export's
// model. Their removal is now part of the commit, whose record a
// killed process leaves for the next stage in the directory to finish
// (atomicfile.FinishKilled). The commit is made to stop at its first
// rename here (the data file's name taken by a directory), which leaves
// its record as a kill within it does.
func TestExportONNXOverwriteRemovesInItsCommit(t *testing.T) {
	t.Setenv("SPIRAL_CACHE_DIR", t.TempDir())
	dir := t.TempDir()
	runDir := filepath.Join(dir, "run")
	trainTinyLoRA(t, runDir)
	outDir := filepath.Join(dir, "other")
	require.Zero(t, run(context.Background(), []string{"init-model", "--layers", "1", "--hidden", "32", "--out", outDir}, &cliEnv{stdout: io.Discard, stderr: io.Discard}))
	decoder := filepath.Join(outDir, "decoder_model.onnx") // the replaced model's other graph
	require.NoError(t, os.WriteFile(decoder, []byte("graph"), 0o644))
	blocker := filepath.Join(outDir, "model.onnx_data")
	require.NoError(t, os.MkdirAll(filepath.Join(blocker, "x"), 0o755))

	args := []string{"export", "--checkpoint", runDir, "--out", filepath.Join(outDir, "model.onnx"), "--external-data", "--overwrite"}
	var stderr bytes.Buffer
	require.Equal(t, 1, run(context.Background(), args, &cliEnv{stdout: io.Discard, stderr: &stderr}), stderr.String())
	require.Contains(t, stderr.String(), "the files not moved are in ")
	kept, err := filepath.Glob(filepath.Join(outDir, ".stage-kept-*"))
	require.NoError(t, err)
	require.Len(t, kept, 1)
	require.FileExists(t, decoder, "nothing removed before the export's files are in")

	// Killed there: the stage and its record left, unlocked.
	require.NoError(t, os.RemoveAll(blocker))
	require.NoError(t, os.Rename(kept[0], filepath.Join(outDir, ".stage-1")))
	require.NoError(t, atomicfile.FinishKilled(outDir))
	require.NoFileExists(t, decoder, "the replaced model's graph, removed as the commit is finished")
	require.FileExists(t, blocker, "the export's weights moved in")
	stderr.Reset()
	require.Zero(t, run(context.Background(), args, &cliEnv{stdout: io.Discard, stderr: &stderr}), stderr.String())
	require.NoFileExists(t, decoder)
}

// TestExportHFPEFTOverwriteRemovesInItsCommit: an hf or peft export
// with --overwrite that replaces another model removed that model's
// files (its graph; for peft its config.json and tokenizer too) only
// after its commit, as the onnx export did
// (TestExportONNXOverwriteRemovesInItsCommit): a process killed between
// the two left them beside the export's files, where transformers and
// vLLM read them as the export's. Their removal is now part of the
// commit, which a killed process leaves for the next stage in the
// directory to finish (atomicfile.FinishKilled). The commit is made to
// stop at its first rename here (the weights' name taken by a
// directory), which leaves its record as a kill within it does.
func TestExportHFPEFTOverwriteRemovesInItsCommit(t *testing.T) {
	t.Setenv("SPIRAL_CACHE_DIR", t.TempDir())
	dir := t.TempDir()
	runDir := filepath.Join(dir, "run")
	trainTinyLoRA(t, runDir)
	for _, tc := range []struct {
		format  string
		weights string   // the export's first file moved in
		removed []string // the replaced model's files the commit removes
	}{
		{"hf", model.HFWeightsFile, []string{"model.onnx"}},
		{"peft", model.PEFTWeightsFile, []string{"model.onnx", model.ConfigFile, "tokenizer.json"}},
	} {
		t.Run(tc.format, func(t *testing.T) {
			outDir := filepath.Join(dir, tc.format)
			require.Zero(t, run(context.Background(), []string{"init-model", "--layers", "1", "--hidden", "32", "--out", outDir}, &cliEnv{stdout: io.Discard, stderr: io.Discard}))
			for _, name := range tc.removed {
				require.FileExists(t, filepath.Join(outDir, name))
			}
			blocker := filepath.Join(outDir, tc.weights)
			require.NoError(t, os.MkdirAll(filepath.Join(blocker, "x"), 0o755))

			args := []string{"export", "--format", tc.format, "--checkpoint", runDir, "--out", outDir, "--overwrite"}
			var stderr bytes.Buffer
			require.Equal(t, 1, run(context.Background(), args, &cliEnv{stdout: io.Discard, stderr: &stderr}), stderr.String())
			require.Contains(t, stderr.String(), "the files not moved are in ")
			kept, err := filepath.Glob(filepath.Join(outDir, ".stage-kept-*"))
			require.NoError(t, err)
			require.Len(t, kept, 1)
			for _, name := range tc.removed {
				require.FileExists(t, filepath.Join(outDir, name), "nothing removed before the export's files are in")
			}

			// Killed there: the stage and its record left, unlocked.
			require.NoError(t, os.RemoveAll(blocker))
			require.NoError(t, os.Rename(kept[0], filepath.Join(outDir, ".stage-1")))
			require.NoError(t, atomicfile.FinishKilled(outDir))
			for _, name := range tc.removed {
				require.NoFileExists(t, filepath.Join(outDir, name), "the replaced model's, removed as the commit is finished")
			}
			require.FileExists(t, blocker, "the export's weights moved in")
			stderr.Reset()
			require.Zero(t, run(context.Background(), args, &cliEnv{stdout: io.Discard, stderr: &stderr}), stderr.String())
			require.NoFileExists(t, filepath.Join(outDir, "model.onnx"))
		})
	}
}

// TestExportPEFTRefusesStaleTokenizer: a peft export into an adapter's
// directory holding a tokenizer.json (left there by hand, or by another
// tool) kept it beside the new adapter, and vLLM tokenizes a LoRA
// request with the tokenizer in the adapter's directory, AutoTokenizer
// reads it there, though no peft export wrote it (those of a replaced
// model go with --overwrite). It is refused, naming the file, unless
// --overwrite, which removes it.
func TestExportPEFTRefusesStaleTokenizer(t *testing.T) {
	t.Setenv("SPIRAL_CACHE_DIR", t.TempDir())
	dir, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	runDir := filepath.Join(dir, "run")
	trainTinyLoRA(t, runDir)
	out := filepath.Join(dir, "peft")
	args := []string{"export", "--format", "peft", "--checkpoint", runDir, "--out", out}
	var stdout, stderr bytes.Buffer
	require.Zero(t, run(context.Background(), args, &cliEnv{stdout: io.Discard, stderr: &stderr}), stderr.String())
	tok := filepath.Join(out, "tokenizer.json")
	require.NoError(t, os.WriteFile(tok, []byte("{}"), 0o644))
	stderr.Reset()
	require.Equal(t, exitUsage, run(context.Background(), args, &cliEnv{stdout: io.Discard, stderr: &stderr}), stderr.String())
	require.Equal(t, "spiral export: --out "+out+": "+tok+" is a config, tokenizer or generation file, which a peft export does not write: another model's, which vLLM (tokenizing the adapter's requests with a tokenizer in its directory), AutoTokenizer and AutoConfig would read as the adapter's; give --overwrite to remove it (tokenizer.json), or another --out\n", stderr.String())
	require.FileExists(t, tok)
	stderr.Reset()
	require.Zero(t, run(context.Background(), append(args, "--overwrite"), &cliEnv{stdout: &stdout, stderr: &stderr}), stderr.String())
	require.NoFileExists(t, tok)
	require.Contains(t, stdout.String(), "removed "+tok+": the replaced model's (--overwrite)\n")
}

// TestExportHFKeepsTheModelsOwnSideFiles: an hf export into --model's
// own directory with a --tokenizer from elsewhere wrote that tokenizer
// over the model's tokenizer.json, spiral's defaults over its
// tokenizer_config.json and removed its added_tokens.json, exiting 0
// without a word (model.ExportHF replaces a directory's side files
// whole), though spiral reads the model's tokenizer there and the onnx
// export refuses the same. It is refused (exit 2, naming the first file
// it would replace or remove, nothing written) unless --overwrite;
// without --tokenizer the model's files are the export's, as before.
func TestExportHFKeepsTheModelsOwnSideFiles(t *testing.T) {
	t.Setenv("SPIRAL_CACHE_DIR", t.TempDir())
	emb := filepath.Dir(embeddedModelPath(t))
	tok, err := os.ReadFile(filepath.Join(emb, "tokenizer.json"))
	require.NoError(t, err)
	tokConfig := `{"model_max_length": 77}`
	own := map[string]string{
		"tokenizer.json":        string(tok),
		"tokenizer_config.json": tokConfig,
		"added_tokens.json":     `{"<x>": 3}`,
	}
	const differs = " is a file of --model's own that the export would replace with "
	const removes = " is a file of --model's own that the export would remove, "
	for _, tc := range []struct {
		name    string
		tokDir  map[string]string // the --tokenizer directory's files; nil: no --tokenizer
		refused string            // the file named, "" for none
		why     string
	}{
		{"its own tokenizer", nil, "", ""},
		{"another tokenizer.json", map[string]string{"tokenizer.json": string(tok) + "\n"}, "tokenizer.json", differs},
		{"no tokenizer_config.json", map[string]string{"tokenizer.json": string(tok)}, "tokenizer_config.json", differs},
		{"no added_tokens.json", map[string]string{"tokenizer.json": string(tok), "tokenizer_config.json": tokConfig}, "added_tokens.json", removes},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			src := filepath.Join(root, "src")
			require.NoError(t, os.Mkdir(src, 0o755))
			for _, f := range []string{"model.onnx", "config.json"} {
				b, err := os.ReadFile(filepath.Join(emb, f))
				require.NoError(t, err)
				require.NoError(t, os.WriteFile(filepath.Join(src, f), b, 0o644))
			}
			for name, s := range own {
				require.NoError(t, os.WriteFile(filepath.Join(src, name), []byte(s), 0o644))
			}
			args := []string{"export", "--format", "hf", "--model", src, "--out", src}
			if tc.tokDir != nil {
				tokDir := filepath.Join(root, "tok")
				require.NoError(t, os.Mkdir(tokDir, 0o755))
				for name, s := range tc.tokDir {
					require.NoError(t, os.WriteFile(filepath.Join(tokDir, name), []byte(s), 0o644))
				}
				args = append(args, "--tokenizer", filepath.Join(tokDir, "tokenizer.json"))
			}
			var stderr bytes.Buffer
			code := run(context.Background(), args, &cliEnv{stdout: io.Discard, stderr: &stderr})
			if tc.refused == "" {
				require.Zero(t, code, stderr.String())
			} else {
				require.Equal(t, exitUsage, code, stderr.String())
				require.Contains(t, stderr.String(), "spiral export: --out "+src+": "+filepath.Join(src, tc.refused)+tc.why, stderr.String())
				require.NoFileExists(t, filepath.Join(src, "model.safetensors"), "nothing written")
			}
			for name, s := range own {
				got, err := os.ReadFile(filepath.Join(src, name))
				require.NoError(t, err, name)
				require.Equal(t, s, string(got), "the model's own %s", name)
			}
			if tc.refused == "" {
				return
			}
			stderr.Reset()
			require.Zero(t, run(context.Background(), append(args, "--overwrite"), &cliEnv{stdout: io.Discard, stderr: &stderr}), stderr.String())
			got, err := os.ReadFile(filepath.Join(src, "tokenizer.json"))
			require.NoError(t, err)
			require.Equal(t, tc.tokDir["tokenizer.json"], string(got), "--overwrite: the given tokenizer")
			require.NoFileExists(t, filepath.Join(src, "added_tokens.json"), "--overwrite: the model's own, which the given tokenizer's directory lacks")
		})
	}
}

// TestExportRerunAfterAKilledOverwrite: an export with --overwrite
// killed within its commit (its record written, the replaced model's
// graph not removed yet) leaves the commit for the next stage in the
// directory to finish (atomicfile.FinishKilled), but a rerun checked the
// directory before it made its stage: a re-export without --overwrite,
// into what were the killed export's own files once finished, was
// refused naming the replaced model's graph (hf, peft) or its
// config.json (onnx), which the killed commit was to remove or replace.
// The killed commit is finished before the directory is looked at. The
// commit is made to stop at its first rename (its first file's name
// taken by a directory), which leaves its record as a kill within it
// does.
func TestExportRerunAfterAKilledOverwrite(t *testing.T) {
	t.Setenv("SPIRAL_CACHE_DIR", t.TempDir())
	dir := t.TempDir()
	runDir := filepath.Join(dir, "run")
	trainTinyLoRA(t, runDir)
	for _, tc := range []struct {
		format  string
		first   string // the export's first file moved in
		onnxOut bool   // --out is DIR/model.onnx
	}{
		{"hf", model.HFWeightsFile, false},
		{"peft", model.PEFTWeightsFile, false},
		{"onnx", "model.onnx_data", true},
	} {
		t.Run(tc.format, func(t *testing.T) {
			outDir := filepath.Join(dir, tc.format)
			require.Zero(t, run(context.Background(), []string{"init-model", "--layers", "1", "--hidden", "32", "--out", outDir}, &cliEnv{stdout: io.Discard, stderr: io.Discard}))
			decoder := filepath.Join(outDir, "decoder_model.onnx") // the replaced model's other graph
			require.NoError(t, os.WriteFile(decoder, []byte("graph"), 0o644))
			blocker := filepath.Join(outDir, tc.first)
			require.NoError(t, os.MkdirAll(filepath.Join(blocker, "x"), 0o755))
			out := outDir
			if tc.onnxOut {
				out = filepath.Join(outDir, "model.onnx")
			}
			args := []string{"export", "--format", tc.format, "--checkpoint", runDir, "--out", out}
			if tc.onnxOut {
				args = append(args, "--external-data")
			}
			var stderr bytes.Buffer
			require.Equal(t, 1, run(context.Background(), append(args, "--overwrite"), &cliEnv{stdout: io.Discard, stderr: &stderr}), stderr.String())
			kept, err := filepath.Glob(filepath.Join(outDir, ".stage-kept-*"))
			require.NoError(t, err)
			require.Len(t, kept, 1)
			// Killed there: the stage and its record left, unlocked.
			require.NoError(t, os.RemoveAll(blocker))
			require.NoError(t, os.Rename(kept[0], filepath.Join(outDir, ".stage-1")))
			require.FileExists(t, decoder)

			stderr.Reset()
			require.Zero(t, run(context.Background(), args, &cliEnv{stdout: io.Discard, stderr: &stderr}), stderr.String())
			require.NoFileExists(t, decoder, "the replaced model's graph, removed as the killed commit is finished")
			stages, err := filepath.Glob(filepath.Join(outDir, ".stage-*"))
			require.NoError(t, err)
			require.Empty(t, stages)
		})
	}
}

// TestExportHFRefusesAMultimodalConfig: an hf export of a model whose
// config.json is a multimodal model's (its text model in text_config, as
// Qwen3-VL's) copied that config beside the causal LM's weights, which
// transformers would load into the multimodal model, its vision tower
// drawn at random; it exited 0. It is refused (exit 1, naming the file),
// nothing written and --out not made.
func TestExportHFRefusesAMultimodalConfig(t *testing.T) {
	t.Setenv("SPIRAL_CACHE_DIR", t.TempDir())
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	require.Zero(t, run(context.Background(), []string{"init-model", "--layers", "1", "--hidden", "32", "--out", src}, &cliEnv{stdout: io.Discard, stderr: io.Discard}))
	cfgPath := filepath.Join(src, model.ConfigFile)
	b, err := os.ReadFile(cfgPath)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(cfgPath, fmt.Appendf(nil, `{"architectures": ["Qwen3VLForConditionalGeneration"], "model_type": "qwen3_vl", "text_config": %s}`, b), 0o644))
	out := filepath.Join(dir, "hf")
	var stderr bytes.Buffer
	code := run(context.Background(), []string{"export", "--format", "hf", "--model", src, "--out", out}, &cliEnv{stdout: io.Discard, stderr: &stderr})
	require.Equal(t, 1, code, stderr.String())
	require.Contains(t, stderr.String(), "spiral export: model: hf export: "+cfgPath+" is the config of a multimodal model (architectures Qwen3VLForConditionalGeneration), its text model's in text_config")
	require.NoDirExists(t, out)
}

// TestExportHFKeepsFilesNoExportWrote: a re-export into an hf export's
// directory removed, without a word and without --overwrite, every
// tokenizer or generation file there that it does not write (the model
// has none, nor spiral a default): a chat_template.jinja or
// special_tokens_map.json the user put beside the export went, though
// no export had written it, where the onnx and peft exports refuse such
// a file. Those an earlier export wrote (recorded in its
// model.safetensors) still go with it, as the export replaces its own
// files; any other is refused (exit 2, naming it, nothing changed)
// unless --overwrite, which removes it. Files that are no tokenizer's
// nor model's (a README.md) stay either way.
func TestExportHFKeepsFilesNoExportWrote(t *testing.T) {
	t.Setenv("SPIRAL_CACHE_DIR", t.TempDir())
	emb := embeddedModelPath(t)
	dir := t.TempDir()
	out := filepath.Join(dir, "hf")
	export := func(args ...string) (int, string, string) {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), append([]string{"export", "--format", "hf", "--out", out}, args...), &cliEnv{stdout: &stdout, stderr: &stderr})
		return code, stdout.String(), stderr.String()
	}
	// An export whose tokenizer's directory has a special_tokens_map.json,
	// then one of the embedded model's, which has none: the earlier
	// export's own file goes without --overwrite.
	tokDir := filepath.Join(dir, "tok")
	require.NoError(t, os.Mkdir(tokDir, 0o755))
	tok, err := os.ReadFile(filepath.Join(filepath.Dir(emb), "tokenizer.json"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(tokDir, "tokenizer.json"), tok, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(tokDir, "special_tokens_map.json"), []byte(`{"eos_token": "<|im_end|>"}`), 0o644))
	code, _, stderr := export("--tokenizer", filepath.Join(tokDir, "tokenizer.json"))
	require.Zero(t, code, stderr)
	require.FileExists(t, filepath.Join(out, "special_tokens_map.json"))
	code, _, stderr = export()
	require.Zero(t, code, stderr)
	require.NoFileExists(t, filepath.Join(out, "special_tokens_map.json"), "the earlier export's own")

	// The user's files beside the export.
	mine := map[string]string{"special_tokens_map.json": `{"eos_token": "mine"}`, "chat_template.jinja": "{{ mine }}", "README.md": "card"}
	for name, s := range mine {
		require.NoError(t, os.WriteFile(filepath.Join(out, name), []byte(s), 0o644))
	}
	code, _, stderr = export()
	require.Equal(t, exitUsage, code, stderr)
	require.Equal(t, "spiral export: --out "+out+": "+filepath.Join(out, "special_tokens_map.json")+" is a tokenizer or generation file that the export of embedded"+
		" does not write (the model has none) and no earlier export wrote there: yours or another model's, which transformers would read as the export's; give --overwrite to remove it (special_tokens_map.json, chat_template.jinja), or another --out\n", stderr)
	for name, s := range mine {
		got, err := os.ReadFile(filepath.Join(out, name))
		require.NoError(t, err)
		require.Equal(t, s, string(got), "left as it was")
	}
	code, stdout, stderr := export("--overwrite")
	require.Zero(t, code, stderr)
	for _, name := range []string{"special_tokens_map.json", "chat_template.jinja"} {
		require.NoFileExists(t, filepath.Join(out, name))
		require.Contains(t, stdout, "removed "+filepath.Join(out, name)+": the replaced model's (--overwrite)\n")
	}
	require.FileExists(t, filepath.Join(out, "README.md"))
}

// TestExportNamesTheEmbeddedModel: an export of a run on the embedded
// model names it "embedded" in its line, as train and eval's reports
// name it: each format named its file in the cache
// (~/.cache/spiral/embedded-*/model.onnx), a path the user never gave.
// (The lines of the files copied beside an onnx export name the files
// they copy, the cache's.)
func TestExportNamesTheEmbeddedModel(t *testing.T) {
	cache := t.TempDir()
	t.Setenv("SPIRAL_CACHE_DIR", cache)
	dir := t.TempDir()
	runDir := filepath.Join(dir, "run")
	trainTinyLoRA(t, runDir)
	from := "the LoRA adapters of " + filepath.Join(runDir, "checkpoints") + "/"
	for _, tc := range []struct {
		format, out, want string
	}{
		{"peft", "peft", "a peft adapter directory for embedded from " + from},
		{"hf", "hf", "a Hugging Face model directory from embedded with " + from},
		{"onnx", "model.onnx", "embedded with " + from},
	} {
		t.Run(tc.format, func(t *testing.T) {
			out := filepath.Join(dir, tc.out)
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), []string{"export", "--format", tc.format, "--checkpoint", runDir, "--out", out}, &cliEnv{stdout: &stdout, stderr: &stderr})
			require.Zero(t, code, stderr.String())
			line, _, _ := strings.Cut(stdout.String(), "\n")
			require.True(t, strings.HasPrefix(line, "wrote "+out+": "+tc.want), "%q", line)
			require.NotContains(t, line, cache)
		})
	}
}

// stripSideFilesRecord rewrites dir's model.safetensors without the
// record of the files its export wrote (model.HFSideFilesKey), as an
// export by a spiral older than that record leaves it.
func stripSideFilesRecord(t *testing.T, dir string) {
	t.Helper()
	path := filepath.Join(dir, model.HFWeightsFile)
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	f, err := params.Decode(b)
	require.NoError(t, err)
	require.NotEmpty(t, f.Metadata[model.HFSideFilesKey], "an export records its files")
	var out bytes.Buffer
	require.NoError(t, params.Encode(&out, f.Tensors, map[string]string{"format": "pt"}))
	require.NoError(t, os.WriteFile(path, out.Bytes(), 0o644))
	require.Empty(t, model.HFSideFiles(dir))
}

// TestExportHFOverAnOlderSpiralsExport: an hf export into the directory
// of one by an older spiral (its model.safetensors records no files)
// refused a tokenizer file that old export wrote and this one does not,
// saying "no earlier export wrote there", which spiral cannot know
// there. It is still refused (exit 2, nothing changed), saying what it
// does know: the weights there record no files, as an older spiral's
// export or another tool's; --overwrite removes it.
func TestExportHFOverAnOlderSpiralsExport(t *testing.T) {
	t.Setenv("SPIRAL_CACHE_DIR", t.TempDir())
	emb := embeddedModelPath(t)
	dir := t.TempDir()
	out := filepath.Join(dir, "hf")
	export := func(args ...string) (int, string) {
		var stderr bytes.Buffer
		code := run(context.Background(), append([]string{"export", "--format", "hf", "--out", out}, args...), &cliEnv{stdout: io.Discard, stderr: &stderr})
		return code, stderr.String()
	}
	// The older export's tokenizer had a special_tokens_map.json.
	tokDir := filepath.Join(dir, "tok")
	require.NoError(t, os.Mkdir(tokDir, 0o755))
	tok, err := os.ReadFile(filepath.Join(filepath.Dir(emb), "tokenizer.json"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(tokDir, "tokenizer.json"), tok, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(tokDir, "special_tokens_map.json"), []byte(`{"eos_token": "<|im_end|>"}`), 0o644))
	code, stderr := export("--tokenizer", filepath.Join(tokDir, "tokenizer.json"))
	require.Zero(t, code, stderr)
	stripSideFilesRecord(t, out)
	side := filepath.Join(out, "special_tokens_map.json")

	code, stderr = export()
	require.Equal(t, exitUsage, code, stderr)
	require.Equal(t, "spiral export: --out "+out+": "+side+" is a tokenizer or generation file that the export of embedded does not write (the model has none), beside a "+
		"model.safetensors that records no files written with it (an older spiral's export, or another tool's model): its or yours, which transformers would read as the export's; give --overwrite to remove it (special_tokens_map.json), or another --out\n", stderr)
	require.NotContains(t, stderr, "no earlier export")
	require.FileExists(t, side, "left as it was")

	code, stderr = export("--overwrite")
	require.Zero(t, code, stderr)
	require.NoFileExists(t, side)
	require.NotEmpty(t, model.HFSideFiles(out), "the new export records its files")
}

// TestExportONNXReexportWithAnotherTokenizer: an onnx re-export over its
// own --out with another --tokenizer was refused without --overwrite
// ("tokenizer.json already exists and differs ... (another model's?)"),
// and one back to the model's tokenizer refused the chat_template.jinja
// the earlier export wrote, where an hf re-export into its own
// directory replaces its files, recorded in its model.safetensors. The
// onnx export records its files in the graph's metadata now, and a
// re-export over that graph replaces or removes them as hf's does; a
// file no export wrote, and the files beside another graph (read with
// them too), or beside a new --out, are refused as before.
func TestExportONNXReexportWithAnotherTokenizer(t *testing.T) {
	t.Setenv("SPIRAL_CACHE_DIR", t.TempDir())
	emb := embeddedModelPath(t)
	dir := t.TempDir()
	runDir := filepath.Join(dir, "run")
	trainTinyLoRA(t, runDir)
	// Another tokenizer: the model's own, with other pretty-printing and
	// a tokenizer_config.json of its own.
	tokDir := filepath.Join(dir, "tok")
	require.NoError(t, os.Mkdir(tokDir, 0o755))
	tok, err := os.ReadFile(filepath.Join(filepath.Dir(emb), "tokenizer.json"))
	require.NoError(t, err)
	other := append(bytes.Clone(tok), '\n')
	require.NoError(t, os.WriteFile(filepath.Join(tokDir, "tokenizer.json"), other, 0o644))
	tokConfig := []byte(`{"model_max_length": 77}`)
	require.NoError(t, os.WriteFile(filepath.Join(tokDir, "tokenizer_config.json"), tokConfig, 0o644))
	export := func(out string, args ...string) (int, string) {
		var stderr bytes.Buffer
		code := run(context.Background(), append([]string{"export", "--checkpoint", runDir, "--out", out}, args...), &cliEnv{stdout: io.Discard, stderr: &stderr})
		return code, stderr.String()
	}
	read := func(path string) []byte {
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		return b
	}
	withTok := []string{"--tokenizer", filepath.Join(tokDir, "tokenizer.json")}

	out := filepath.Join(dir, "onnx", "model.onnx")
	code, stderr := export(out)
	require.Zero(t, code, stderr)
	code, stderr = export(out, withTok...)
	require.Zero(t, code, stderr)
	require.Equal(t, other, read(filepath.Join(dir, "onnx", "tokenizer.json")))
	require.Equal(t, tokConfig, read(filepath.Join(dir, "onnx", "tokenizer_config.json")))
	// spiral's chat template, as the tokenizer's config has none.
	template := filepath.Join(dir, "onnx", "chat_template.jinja")
	require.FileExists(t, template)
	code, stderr = export(out)
	require.Zero(t, code, stderr, "and back")
	require.Equal(t, tok, read(filepath.Join(dir, "onnx", "tokenizer.json")))
	require.NoFileExists(t, template, "the earlier export's, which this one does not write")
	// A file no export wrote there is still refused.
	require.NoError(t, os.WriteFile(template, []byte("{{ mine }}"), 0o644))
	code, stderr = export(out)
	require.Equal(t, exitUsage, code, stderr)
	require.Contains(t, stderr, template+" is a tokenizer or generation file that the export of embedded does not write")
	require.NoError(t, os.Remove(template))

	// Another graph beside it, read with the same tokenizer: refused.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "onnx", "decoder_model.onnx"), []byte("x"), 0o644))
	code, stderr = export(out, withTok...)
	require.Equal(t, exitUsage, code, stderr)
	require.Contains(t, stderr, "tokenizer.json already exists and differs from")
	require.NoError(t, os.Remove(filepath.Join(dir, "onnx", "decoder_model.onnx")))

	// A new --out in a directory holding the tokenizer: not a re-export.
	fresh := filepath.Join(dir, "onnx", "other.onnx")
	code, stderr = export(fresh, withTok...)
	require.Equal(t, exitUsage, code, stderr)
	require.Contains(t, stderr, "tokenizer.json already exists and differs from")
	require.NoFileExists(t, fresh)
}

// TestExportErrorsNameTheEmbeddedModel: the errors of an export of the
// embedded model (no --model) that name the model named its file in the
// cache (~/.cache/spiral/embedded-*/model.onnx), a path the user never
// gave, and said "--model" for it; they name it "embedded", as the
// export's line does (TestExportNamesTheEmbeddedModel).
func TestExportErrorsNameTheEmbeddedModel(t *testing.T) {
	cache := t.TempDir()
	t.Setenv("SPIRAL_CACHE_DIR", cache)
	dir := t.TempDir()
	// A LoRA run on another model, whose checkpoint is not the embedded
	// model's.
	src := filepath.Join(dir, "src")
	require.Zero(t, run(context.Background(), []string{"init-model", "--layers", "1", "--hidden", "32", "--out", src}, &cliEnv{stdout: io.Discard, stderr: io.Discard}))
	otherRun := filepath.Join(dir, "other-run")
	var trainErr bytes.Buffer
	require.Zero(t, run(context.Background(), []string{"train", "--model", src, "--out", otherRun, "--lora-rank", "2", "--steps", "1", "--problems", "1", "--n1", "2", "--k", "1", "--n", "2", "--n2", "2",
		"--max-new-tokens", "4", "--eval-every", "0", "--final-rsa-steps", "0", "--threads", "1", "--quiet"}, &cliEnv{stdout: io.Discard, stderr: &trainErr}), trainErr.String())
	for _, tc := range []struct {
		name  string
		args  []string
		setup func(out string) // before the export
		want  string
	}{
		{"hf stale side file", []string{"--format", "hf"}, func(out string) {
			require.NoError(t, os.MkdirAll(out, 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(out, "merges.txt"), []byte("x"), 0o644))
		}, "the export of embedded does not write"},
		{"onnx stale side file", []string{"--format", "onnx", "--checkpoint", otherRun}, func(out string) {
			require.NoError(t, os.MkdirAll(filepath.Dir(out), 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(filepath.Dir(out), "merges.txt"), []byte("x"), 0o644))
		}, "the export of embedded does not write"},
		{"hf another config", []string{"--format", "hf"}, func(out string) {
			require.NoError(t, os.MkdirAll(out, 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(out, "config.json"), []byte("{}"), 0o644))
		}, "differs from the one the export of embedded writes"},
		{"onnx another config", []string{"--format", "onnx", "--checkpoint", otherRun}, func(out string) {
			require.NoError(t, os.MkdirAll(filepath.Dir(out), 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(filepath.Dir(out), "config.json"), []byte("{}"), 0o644))
		}, "which the export of embedded needs beside it"},
		{"another model's checkpoint", []string{"--format", "onnx", "--checkpoint", otherRun}, nil, "not from the embedded model (model id "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out")
			if tc.args[1] == "onnx" {
				out = filepath.Join(out, "model.onnx")
			}
			if tc.setup != nil {
				tc.setup(out)
			}
			var stderr bytes.Buffer
			code := run(context.Background(), append([]string{"export", "--out", out}, tc.args...), &cliEnv{stdout: io.Discard, stderr: &stderr})
			require.NotZero(t, code, stderr.String())
			require.Contains(t, stderr.String(), tc.want)
			require.NotContains(t, stderr.String(), cache)
		})
	}
}

// TestExportPEFTRefusesAMultimodalBase: a peft export of a model whose
// config.json is a multimodal model's (Qwen3-VL's: its text model in
// text_config) wrote an adapter naming that model as its base, its keys
// a causal LM's (base_model.model.model.layers.N...), where
// transformers' multimodal classes hold the language model's modules
// under model.language_model.: peft then finds no weights of the
// adapter's keys (with a warning at most), the adapter not applied. It
// is refused, as the hf export refuses that config (exit 1, naming the
// file, nothing written), and so is a --base-model directory holding
// such a config.json.
func TestExportPEFTRefusesAMultimodalBase(t *testing.T) {
	t.Setenv("SPIRAL_CACHE_DIR", t.TempDir())
	dir := t.TempDir()
	multimodal := func(dir string) string {
		cfgPath := filepath.Join(dir, model.ConfigFile)
		b, err := os.ReadFile(cfgPath)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(cfgPath, fmt.Appendf(nil, `{"architectures": ["Qwen3VLForConditionalGeneration"], "model_type": "qwen3_vl", "_name_or_path": "Qwen/Qwen3-VL-2B-Instruct", "text_config": %s}`, b), 0o644))
		return cfgPath
	}
	src := filepath.Join(dir, "src")
	require.Zero(t, run(context.Background(), []string{"init-model", "--layers", "1", "--hidden", "32", "--out", src}, &cliEnv{stdout: io.Discard, stderr: io.Discard}))
	runDir := filepath.Join(dir, "run")
	var trainErr bytes.Buffer
	require.Zero(t, run(context.Background(), []string{"train", "--model", src, "--out", runDir, "--lora-rank", "2", "--steps", "1", "--problems", "1", "--n1", "2", "--k", "1", "--n", "2", "--n2", "2",
		"--max-new-tokens", "4", "--eval-every", "0", "--final-rsa-steps", "0", "--threads", "1", "--quiet"}, &cliEnv{stdout: io.Discard, stderr: &trainErr}), trainErr.String())
	// A base model directory with a multimodal config.json.
	base := filepath.Join(dir, "base")
	require.NoError(t, os.Mkdir(base, 0o755))
	b, err := os.ReadFile(filepath.Join(src, model.ConfigFile))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(base, model.ConfigFile), b, 0o644))
	baseCfg := multimodal(base)

	export := func(out string, args ...string) (int, string) {
		var stderr bytes.Buffer
		code := run(context.Background(), append([]string{"export", "--format", "peft", "--model", src, "--checkpoint", runDir, "--out", out}, args...), &cliEnv{stdout: io.Discard, stderr: &stderr})
		return code, stderr.String()
	}
	out := filepath.Join(dir, "peft")
	code, stderr := export(out, "--base-model", base)
	require.Equal(t, 1, code, stderr)
	require.Contains(t, stderr, "spiral export: model: peft export: --base-model "+base+": "+baseCfg+" is the config of a multimodal model (architectures Qwen3VLForConditionalGeneration), its text model's in text_config")
	require.NoDirExists(t, out)

	code, stderr = export(out) // the text model's config.json: as before
	require.Zero(t, code, stderr)
	require.NoError(t, os.RemoveAll(out))

	srcCfg := multimodal(src)
	code, stderr = export(out)
	require.Equal(t, 1, code, stderr)
	require.Contains(t, stderr, "spiral export: model: peft export: "+srcCfg+" is the config of a multimodal model (architectures Qwen3VLForConditionalGeneration), its text model's in text_config")
	require.NoDirExists(t, out)
}

// TestExportRefusesAGenerationConfigEvalRefuses: an onnx or hf export
// copies the generation_config.json beside --model into the export, and
// one that eval and generate refuse (malformed, half-copied; an
// eos_token_id that is no token id, or past the tokenizer's ids:
// another model's) was copied as it was and the export exited 0, where
// a tokenizer they would refuse is refused before anything is written.
// It is refused too (exit 1, naming the file and what is wrong), nothing
// written and --out not made.
func TestExportRefusesAGenerationConfigEvalRefuses(t *testing.T) {
	t.Setenv("SPIRAL_CACHE_DIR", t.TempDir())
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	require.Zero(t, run(context.Background(), []string{"init-model", "--layers", "1", "--hidden", "32", "--out", src}, &cliEnv{stdout: io.Discard, stderr: io.Discard}))
	runDir := filepath.Join(dir, "run")
	var stderr bytes.Buffer
	require.Zero(t, run(context.Background(), []string{"train", "--model", src, "--out", runDir, "--steps", "1", "--problems", "1", "--n1", "2", "--k", "1", "--n", "2", "--n2", "2",
		"--max-new-tokens", "4", "--eval-every", "0", "--final-rsa-steps", "0", "--threads", "1", "--quiet"}, &cliEnv{stdout: io.Discard, stderr: &stderr}), stderr.String())
	gc := filepath.Join(src, "generation_config.json")
	for _, tt := range []struct {
		name, body, want string
	}{
		{"cut short", `{"eos_token_id": [1,`, gc + ": line 1, column 21: unexpected end of JSON input"},
		{"eos not an id", `{"eos_token_id": "</s>"}`, gc + `: eos_token_id: want a token id or a list of token ids, got "</s>"`},
		{"eos past the tokenizer", `{"eos_token_id": 151645}`, gc + ": eos_token_id: 151645"},
	} {
		for _, format := range []string{"onnx", "hf"} {
			t.Run(tt.name+"/"+format, func(t *testing.T) {
				require.NoError(t, os.WriteFile(gc, []byte(tt.body), 0o644))
				out := filepath.Join(dir, strings.ReplaceAll(tt.name, " ", "-")+"-"+format)
				args := []string{"export", "--format", format, "--model", src, "--out", out}
				if format == "onnx" {
					args = []string{"export", "--model", src, "--checkpoint", runDir, "--out", filepath.Join(out, "model.onnx")}
				}
				var stderr bytes.Buffer
				code := run(context.Background(), args, &cliEnv{stdout: io.Discard, stderr: &stderr})
				require.Equal(t, exitFailure, code, stderr.String())
				require.Contains(t, stderr.String(), tt.want)
				require.NoDirExists(t, out)
			})
		}
	}
}
