package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/spiral-rl/spiral/model/checkpoint"
	"github.com/spiral-rl/spiral/model/embedded"
	"github.com/spiral-rl/spiral/model/optim"
	"github.com/spiral-rl/spiral/model/params"
	"github.com/spiral-rl/spiral/model/tokenizer"
	"github.com/spiral-rl/spiral/rl"
	"github.com/spiral-rl/spiral/rollout"
)

// TestResolveDirectoryWithoutONNX: a directory without model.onnx that
// holds what `spiral export --format hf` or `--format peft` writes is
// named as such, with what to give instead, rather than asked for "the
// directory of an export", which it is. Those two are path mistakes
// (exit 2), as the same directories given as --checkpoint are
// (TestCheckpointIsAnExport): they exited 1. An empty directory, as an
// empty --checkpoint ("no checkpoint in"), still exits 1.
func TestResolveDirectoryWithoutONNX(t *testing.T) {
	for _, tc := range []struct {
		name, file, want string
		code             int
	}{
		{"empty", "", "--model: directory DIR holds no model.onnx (give the .onnx file, or the directory of an export)", exitFailure},
		{"hf", "model.safetensors", "--model: directory DIR holds a Hugging Face model (model.safetensors) and no model.onnx: spiral runs ONNX models; give the ONNX model it was exported from (with --checkpoint for a run's weights) or an ONNX export (spiral export --format onnx, optimum-cli export onnx)", exitUsage},
		{"peft", "adapter_config.json", "--model: directory DIR holds a peft adapter (adapter_config.json) and no model.onnx: give the ONNX base model as --model and the LoRA run as --checkpoint, or a merged export (spiral export --format onnx)", exitUsage},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if tc.file != "" {
				require.NoError(t, os.WriteFile(filepath.Join(dir, tc.file), []byte("{}"), 0o644))
			}
			want := strings.ReplaceAll(tc.want, "DIR", dir)
			f := modelFlags{model: dir}
			_, err := f.resolve(io.Discard)
			require.EqualError(t, err, want)
			for _, cmd := range [][]string{{"generate", "hi"}, {"eval", "--out", filepath.Join(t.TempDir(), "e")}, {"train", "--out", filepath.Join(t.TempDir(), "r")}} {
				var stderr bytes.Buffer
				args := append(slices.Clone(cmd), "--model", dir, "--threads", "1")
				require.Equal(t, tc.code, run(context.Background(), args, &cliEnv{stdout: io.Discard, stderr: &stderr}), "%q: %s", args, stderr.String())
				require.Equal(t, "spiral "+cmd[0]+": "+want+"\n", stderr.String(), "%q", args)
			}
		})
	}
}

// TestResolveCheckpointOrRunAsModel: a checkpoint directory, a run
// directory or its checkpoints/ given as --model is named as such, with
// the --model and --checkpoint to give (eval's, generate's and export's);
// a checkpoint was said to hold "a Hugging Face model
// (model.safetensors)", which its weights are not, and a run directory
// "no model.onnx (give ... the directory of an export)".
func TestResolveCheckpointOrRunAsModel(t *testing.T) {
	run := t.TempDir()
	ckpt := filepath.Join(run, "checkpoints", "ckpt-000003")
	require.NoError(t, os.MkdirAll(ckpt, 0o755))
	for _, name := range []string{"model.safetensors", "state.json"} {
		require.NoError(t, os.WriteFile(filepath.Join(ckpt, name), []byte("{}"), 0o644))
	}
	require.NoError(t, os.WriteFile(filepath.Join(run, "checkpoints", "latest"), []byte("ckpt-000003\n"), 0o644))
	for _, tc := range []struct {
		dir, want string
	}{
		{ckpt, "--model: directory " + ckpt + " is a checkpoint, not a model: give the ONNX model its run trained as --model, and this directory as --checkpoint (eval, generate, export; spiral export makes a model of it for the other commands)"},
		{run, "--model: directory " + run + " is a training run's (it holds checkpoints/), not a model: give the ONNX model it trained as --model, and this directory as --checkpoint for its newest intact checkpoint (eval, generate, export; spiral export makes a model of it for the other commands)"},
		{filepath.Join(run, "checkpoints"), "--model: directory " + filepath.Join(run, "checkpoints") + " holds a training run's checkpoints, not a model: give the ONNX model it trained as --model, and this directory as --checkpoint for its newest intact one (eval, generate, export; spiral export makes a model of it for the other commands)"},
	} {
		f := modelFlags{model: tc.dir}
		_, err := f.resolve(io.Discard)
		require.EqualError(t, err, tc.want)
	}
}

// TestResolveCheckpointsWithoutLatestAsModel: a run's checkpoints/ whose
// latest pointer is missing (a Save whose pointer could not be written
// warns and goes on) given as --model was "holds no model.onnx (give the
// .onnx file, or the directory of an export)", exit 1; it is named as a
// run's checkpoints, as one with the pointer is, a usage error.
func TestResolveCheckpointsWithoutLatestAsModel(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "checkpoints")
	ckpt := filepath.Join(dir, "ckpt-000003")
	require.NoError(t, os.MkdirAll(ckpt, 0o755))
	for _, name := range []string{"model.safetensors", "state.json"} {
		require.NoError(t, os.WriteFile(filepath.Join(ckpt, name), []byte("{}"), 0o644))
	}
	f := modelFlags{model: dir}
	_, err := f.resolve(io.Discard)
	require.EqualError(t, err, "--model: directory "+dir+" holds a training run's checkpoints, not a model: give the ONNX model it trained as --model, and this directory as --checkpoint for its newest intact one (eval, generate, export; spiral export makes a model of it for the other commands)")
	var usage usageError
	require.ErrorAs(t, err, &usage)
}

// TestChatTemplateBOSWarning: a model whose chat template writes
// bos_token where spiral's ChatML prompts do not follow it (in its
// message loop) is warned of once, naming the file; one that writes it
// first, which spiral renders, is not.
func TestChatTemplateBOSWarning(t *testing.T) {
	cache := t.TempDir()
	t.Setenv("SPIRAL_CACHE_DIR", cache)
	modelDir, err := embedded.Extract(cache)
	require.NoError(t, err)
	tokJSON, err := os.ReadFile(filepath.Join(modelDir, "tokenizer.json"))
	require.NoError(t, err)
	const body = "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
	loop := strings.Replace(body, "{{ '<|im_start|>'", "{{ bos_token + '<|im_start|>'", 1)
	for _, tc := range []struct {
		name, template string
		warn           bool
	}{
		{"first", "{{ bos_token }}" + body, false},
		{"in the loop", loop, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			require.NoError(t, os.WriteFile(filepath.Join(dir, "tokenizer.json"), tokJSON, 0o644))
			config, err := json.Marshal(map[string]string{"chat_template": tc.template, "bos_token": "<|endoftext|>"})
			require.NoError(t, err)
			configPath := filepath.Join(dir, "tokenizer_config.json")
			require.NoError(t, os.WriteFile(configPath, config, 0o644))
			var stderr bytes.Buffer
			code := run(context.Background(), []string{"generate", "--tokenizer", filepath.Join(dir, "tokenizer.json"), "--max-new-tokens", "2", "--threads", "1", "1+1="},
				&cliEnv{stdout: io.Discard, stderr: &stderr})
			require.Equal(t, 0, code, stderr.String())
			warnings := 0
			if tc.warn {
				warnings = 1
				require.Contains(t, stderr.String(), "spiral: warning: "+configPath+": chat_template writes bos_token elsewhere than once before the messages, which spiral's ChatML prompts do not follow: they differ there from transformers' apply_chat_template (spiral writes the BOS token only where a template writes {{ bos_token }} first)\n")
			}
			require.Equal(t, warnings, strings.Count(stderr.String(), "warning"), stderr.String())
		})
	}
}

// TestTokenizerFlagNamed: a --tokenizer that cannot be loaded (a
// directory without tokenizer.json, a file that is not a tokenizer) is
// named by its flag, as one that does not exist is; it said only
// "tokenizer: load ...". A directory without tokenizer.json is said to
// hold none, as a --model directory without model.onnx is; it was the
// system's "open DIR/tokenizer.json: no such file or directory".
func TestTokenizerFlagNamed(t *testing.T) {
	t.Setenv("SPIRAL_CACHE_DIR", t.TempDir())
	empty, bad := t.TempDir(), filepath.Join(t.TempDir(), "bad.json")
	require.NoError(t, os.WriteFile(bad, []byte("{"), 0o644))
	for _, tc := range []struct{ path, want string }{
		{empty, "--tokenizer: directory " + empty + " holds no tokenizer.json (give the tokenizer.json file, or the directory of a model or export that holds one)\n"},
		{bad, "--tokenizer: tokenizer: load \"" + bad + "\": "},
	} {
		for _, cmd := range [][]string{{"generate", "1+1="}, {"eval", "--out", filepath.Join(t.TempDir(), "e")}} {
			var stderr bytes.Buffer
			args := append(slices.Clone(cmd), "--tokenizer", tc.path, "--threads", "1")
			code := run(context.Background(), args, &cliEnv{stdout: io.Discard, stderr: &stderr})
			require.Equal(t, exitFailure, code, stderr.String())
			require.True(t, strings.HasPrefix(stderr.String(), "spiral "+cmd[0]+": "+tc.want), stderr.String())
		}
	}
}

// TestCheckpointIsAModelDirectory: a --checkpoint that is a model's
// directory (a finished sft's --out: model.onnx, no checkpoints) is a
// usage error saying to give it as --model; it said "no checkpoint in
// DIR (want a checkpoint directory or a run's checkpoints/ directory)"
// (exit 1), as of an empty directory.
func TestCheckpointIsAModelDirectory(t *testing.T) {
	t.Setenv("SPIRAL_CACHE_DIR", t.TempDir())
	dir, empty := t.TempDir(), t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "model.onnx"), []byte("x"), 0o644))
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"generate", "--checkpoint", dir, "hi"}, exitUsage, "spiral generate: --checkpoint " + dir + " holds a model (model.onnx), not checkpoints: give it as --model (a finished sft's --out is a model directory; its checkpoints are removed once the model is written)\n"},
		{[]string{"generate", "--checkpoint", empty, "hi"}, exitFailure, "spiral generate: --checkpoint " + empty + ": no checkpoint in " + empty + " (want a checkpoint directory or a run's checkpoints/ directory)\n"},
	} {
		var stderr bytes.Buffer
		code := run(context.Background(), append(tc.args, "--threads", "1"), &cliEnv{stdout: io.Discard, stderr: &stderr})
		require.Equal(t, tc.code, code, stderr.String())
		require.Equal(t, tc.want, stderr.String())
	}
}

// TestModelFlagGivenARunExitsUsage: a run directory, its checkpoints/ or
// a checkpoint given as --model, a path mistake as --checkpoint given a
// model directory is (exit 2, "give it as --model"), exited 1 (plan's:
// "needs the Hugging Face config.json beside it"). Every command that
// takes --model now exits 2, pointing to --checkpoint; plan, which has
// no --checkpoint and plans the run's model from its config.json,
// points to the model alone.
func TestModelFlagGivenARunExitsUsage(t *testing.T) {
	t.Setenv("SPIRAL_CACHE_DIR", t.TempDir())
	root := t.TempDir()
	runDir := filepath.Join(root, "run")
	ckpt := filepath.Join(runDir, "checkpoints", "ckpt-000003")
	require.NoError(t, os.MkdirAll(ckpt, 0o755))
	for _, name := range []string{"model.safetensors", "state.json"} {
		require.NoError(t, os.WriteFile(filepath.Join(ckpt, name), []byte("{}"), 0o644))
	}
	require.NoError(t, os.WriteFile(filepath.Join(runDir, "checkpoints", "latest"), []byte("ckpt-000003\n"), 0o644))
	for _, cmd := range [][]string{
		{"eval", "--out", filepath.Join(root, "eval")},
		{"generate", "hi"},
		{"export", "--checkpoint", runDir, "--out", filepath.Join(root, "x", "model.onnx")},
		{"train", "--out", filepath.Join(root, "train")},
		{"sft", "--out", filepath.Join(root, "sft")},
		{"artifacts"},
		{"bench", "train"},
		{"plan"},
	} {
		for _, tc := range []struct{ dir, want string }{
			{ckpt, "is a checkpoint, not a model: give the ONNX model its run trained as --model, and this directory as --checkpoint"},
			{runDir, "is a training run's (it holds checkpoints/), not a model: give the ONNX model it trained as --model, and this directory as --checkpoint"},
			{filepath.Join(runDir, "checkpoints"), "holds a training run's checkpoints, not a model: give the ONNX model it trained as --model, and this directory as --checkpoint"},
		} {
			var stderr bytes.Buffer
			args := append(append([]string{}, cmd...), "--model", tc.dir)
			code := run(context.Background(), args, &cliEnv{stdout: io.Discard, stderr: &stderr})
			require.Equal(t, exitUsage, code, "%q: %s", args, stderr.String())
			want := tc.want
			if cmd[0] == "plan" {
				want, _, _ = strings.Cut(want, ", and this directory as --checkpoint")
				want += " (plan reads the config.json beside it)\n"
				require.NotContains(t, stderr.String(), "--checkpoint", "%q", args)
			}
			require.Contains(t, stderr.String(), "--model: directory "+tc.dir+" "+want, "%q", args)
		}
	}
}

// TestCheckpointIsAnExport: an hf export's directory (model.safetensors,
// config.json) or a peft adapter's given as --checkpoint was "no
// checkpoint in DIR" with exit 1, though a model directory given so is a
// path mistake named as such (exit 2, "give it as --model"). They are
// named too, with what to give, with exit 2.
func TestCheckpointIsAnExport(t *testing.T) {
	t.Setenv("SPIRAL_CACHE_DIR", t.TempDir())
	hf, peft, sharded := t.TempDir(), t.TempDir(), t.TempDir()
	for dir, files := range map[string][]string{hf: {"model.safetensors", "config.json"}, peft: {"adapter_model.safetensors", "adapter_config.json"}, sharded: {"model.safetensors.index.json"}} {
		for _, f := range files {
			require.NoError(t, os.WriteFile(filepath.Join(dir, f), []byte("{}"), 0o644))
		}
	}
	for _, tc := range []struct{ dir, want string }{
		{hf, " holds a Hugging Face model (model.safetensors), not checkpoints: spiral reads a run's checkpoints (give the run, or its checkpoint, that the model was exported from) and runs ONNX models (give the ONNX model as --model)\n"},
		{sharded, " holds a Hugging Face model (model.safetensors.index.json), not checkpoints: spiral reads a run's checkpoints (give the run, or its checkpoint, that the model was exported from) and runs ONNX models (give the ONNX model as --model)\n"},
		{peft, " holds a peft adapter (adapter_config.json), not checkpoints: give the LoRA run it was exported from (or its checkpoint), with its ONNX base model as --model\n"},
	} {
		for _, cmd := range [][]string{{"generate", "hi"}, {"eval", "--out", filepath.Join(t.TempDir(), "e")}, {"export", "--out", filepath.Join(t.TempDir(), "m.onnx")}} {
			var stderr bytes.Buffer
			args := append(append([]string{}, cmd...), "--checkpoint", tc.dir, "--threads", "1")
			if cmd[0] == "export" {
				args = args[:len(args)-2]
			}
			code := run(context.Background(), args, &cliEnv{stdout: io.Discard, stderr: &stderr})
			require.Equal(t, exitUsage, code, "%q: %s", args, stderr.String())
			require.Equal(t, "spiral "+cmd[0]+": --checkpoint "+tc.dir+tc.want, stderr.String(), "%q", args)
		}
	}
}

// TestSamplingFlagsBeforeEngine: a --max-new-tokens that leaves no room
// for a prompt in the model's context (config.json's; an engine serves
// at most that) is refused (exit 2) before the serving engine is waited
// for, by train, eval and generate: each waited up to --engine-timeout
// for a server still loading its model (answering 503, here), minutes
// with a real one, before the usage error.
func TestSamplingFlagsBeforeEngine(t *testing.T) {
	t.Setenv("SPIRAL_CACHE_DIR", t.TempDir())
	var asked atomic.Int32
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		asked.Add(1)
		http.Error(w, "loading the model", http.StatusServiceUnavailable)
	}))
	defer hs.Close()
	dir := t.TempDir()
	engine := []string{"--engine", "openai", "--base-url", hs.URL + "/v1", "--served-model", "m", "--engine-timeout", "60s", "--max-new-tokens", "5000"}
	for _, args := range [][]string{
		{"train", "--out", filepath.Join(dir, "run"), "--engine-sync", "sglang", "--sync-dir", filepath.Join(dir, "sync"), "--threads", "1", "--quiet"},
		{"eval", "--out", filepath.Join(dir, "eval"), "--quiet"},
		{"generate", "hi"},
	} {
		t.Run(args[0], func(t *testing.T) {
			asked.Store(0)
			var stderr bytes.Buffer
			start := time.Now()
			code := run(context.Background(), append(append([]string{}, args...), engine...), &cliEnv{stdout: io.Discard, stderr: &stderr})
			require.Equal(t, exitUsage, code, stderr.String())
			require.Contains(t, stderr.String(), "--max-new-tokens 5000 leaves no room for a prompt in the 4096 positions of ")
			require.Less(t, time.Since(start), 30*time.Second, "refused without waiting for the engine")
			require.Zero(t, asked.Load(), "the engine was not asked")
		})
	}
}

// TestEngineModelFileAbsent: on a serving engine, a --model FILE.onnx
// that is not there, in a directory holding a tokenizer.json (README's
// `--model qwen3-4b/model.onnx` run where only the tokenizer and
// config.json were copied, which is enough there), is refused naming
// that directory, which --model can be; it said "no such file or
// directory" alone. Where the directory holds no tokenizer, or the
// engine is the local one, which needs the graph, it says that alone.
func TestEngineModelFileAbsent(t *testing.T) {
	served := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(served, "tokenizer.json"), []byte("{}"), 0o644))
	empty := t.TempDir()
	engine := []string{"--engine", "openai", "--base-url", "http://127.0.0.1:1/v1", "--served-model", "m"}
	hint := "on a serving engine --model is read for its tokenizer and config.json alone: give their directory, --model " + served
	for _, tc := range []struct {
		name   string
		args   []string
		model  string
		hinted bool
	}{
		{"eval on an engine", append([]string{"eval", "--out", t.TempDir()}, engine...), filepath.Join(served, "model.onnx"), true},
		{"generate on an engine", append([]string{"generate", "hi"}, engine...), filepath.Join(served, "model.onnx"), true},
		{"no tokenizer beside it", append([]string{"generate", "hi"}, engine...), filepath.Join(empty, "model.onnx"), false},
		{"local engine", []string{"generate", "hi"}, filepath.Join(served, "model.onnx"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stderr bytes.Buffer
			code := run(context.Background(), append(append([]string{}, tc.args...), "--model", tc.model), &cliEnv{stdout: io.Discard, stderr: &stderr})
			require.Equal(t, exitUsage, code, stderr.String())
			require.Contains(t, stderr.String(), "--model "+tc.model+": no such file or directory")
			if tc.hinted {
				require.Contains(t, stderr.String(), hint)
			} else {
				require.NotContains(t, stderr.String(), "on a serving engine")
			}
		})
	}
}

// TestCheckpointOfAnotherTokenizer: a checkpoint whose run recorded
// another tokenizer than the one given is warned of, naming both, by
// the commands that read it (generate and eval sample with it, an onnx
// or hf export copies that tokenizer beside its weights): they used it
// without a word, reading the model's ids as other text. The run's own
// tokenizer, given by --tokenizer, is not warned of.
func TestCheckpointOfAnotherTokenizer(t *testing.T) {
	t.Setenv("SPIRAL_CACHE_DIR", t.TempDir())
	dir := t.TempDir()
	runDir := filepath.Join(dir, "run")
	var stderr bytes.Buffer
	require.Zero(t, run(context.Background(), []string{"train", "--out", runDir, "--steps", "1", "--problems", "1", "--n1", "3", "--k", "2", "--n", "2", "--n2", "2",
		"--eval-every", "0", "--final-rsa-steps", "0", "--max-new-tokens", "4", "--threads", "1", "--quiet"}, &cliEnv{stdout: io.Discard, stderr: &stderr}), stderr.String())
	other := reversedTokenizer(t, filepath.Join(dir, "other"))
	own, err := embedded.Extract(os.Getenv("SPIRAL_CACHE_DIR"))
	require.NoError(t, err)
	ckpt := filepath.Join(runDir, rl.CheckpointsDir, "ckpt-000001")
	warned := "spiral: warning: checkpoint " + ckpt + " was trained with another tokenizer (its run's tokenizer "
	for _, tc := range []struct {
		name string
		args []string
		warn bool
	}{
		{"generate", []string{"generate", "--checkpoint", runDir, "--tokenizer", other, "--max-new-tokens", "2", "--threads", "1", "1+1="}, true},
		{"eval", []string{"eval", "--checkpoint", runDir, "--tokenizer", other, "--mode", "passk", "--samples", "1", "--limit", "1", "--max-new-tokens", "2",
			"--out", filepath.Join(dir, "eval"), "--threads", "1", "--quiet"}, true},
		{"export", []string{"export", "--format", "onnx", "--checkpoint", runDir, "--tokenizer", other, "--out", filepath.Join(dir, "export", "model.onnx")}, true},
		{"the run's tokenizer", []string{"generate", "--checkpoint", runDir, "--tokenizer", own, "--max-new-tokens", "2", "--threads", "1", "1+1="}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stderr.Reset()
			require.Zero(t, run(context.Background(), tc.args, &cliEnv{stdout: io.Discard, stderr: &stderr}), stderr.String())
			if !tc.warn {
				require.NotContains(t, stderr.String(), "another tokenizer")
				return
			}
			require.Contains(t, stderr.String(), warned)
			require.Contains(t, stderr.String(), filepath.Join(other, "tokenizer.json"))
		})
	}
}

// TestNoContextWarning: a config.json that states no
// max_position_embeddings, neither at its top level nor in text_config,
// leaves the model's context unknown (0, no limit), and sampling says so
// once, naming the file, rather than leaving every prompt and trace
// length unchecked without a word. One stated at either level is not
// warned of. No config.json beside the model at all (a bare model.onnx
// export) leaves the context as unknown, and was not warned of: it is,
// naming the file that is not there. The embedded model has its
// config.json, and is not.
func TestNoContextWarning(t *testing.T) {
	unchecked := "the model's context is not known, so prompts and traces are not fitted to it (--max-new-tokens 4096 a trace): a longer one runs past the positions the model was trained on\n"
	for _, tc := range []struct {
		name, config string // config "" writes none
		embedded     bool
		context      int
		warning      string // "%s" the config.json's path
	}{
		{name: "top level", config: `{"max_position_embeddings": 512}`, context: 512},
		{name: "text_config", config: `{"text_config": {"max_position_embeddings": 256}}`, context: 256},
		{name: "neither", config: `{"vocab_size": 8, "text_config": {"hidden_size": 16}}`,
			warning: "spiral: warning: %s states no max_position_embeddings (neither at its top level nor in text_config): " + unchecked},
		{name: "no text_config", config: `{"vocab_size": 8}`,
			warning: "spiral: warning: %s states no max_position_embeddings (neither at its top level nor in text_config): " + unchecked},
		{name: "no config.json",
			warning: "spiral: warning: there is no %s (the model's config.json, which would state its max_position_embeddings): " + unchecked},
		{name: "embedded", embedded: true, context: 4096},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if tc.embedded {
				var err error
				dir, err = embedded.Extract(dir)
				require.NoError(t, err)
			}
			if tc.config != "" {
				require.NoError(t, os.WriteFile(filepath.Join(dir, "config.json"), []byte(tc.config), 0o644))
			}
			tok, err := tokenizer.Load(filepath.Join("model", "tokenizer", "testdata", "char_tokenizer.json"))
			require.NoError(t, err)
			defer tok.Close()
			s := &modelSession{resolvedModel: resolvedModel{onnx: filepath.Join(dir, "model.onnx"), dir: dir, embedded: tc.embedded}, tok: tok}
			sf := samplingFlags{cfg: rollout.DefaultSamplerConfig()}
			if tc.embedded {
				sf.cfg.MaxNewTokens = 96
			}
			var warn bytes.Buffer
			c, served, _, err := s.engineSamplerConfig(context.Background(), engineFlags{engine: "local"}, "", sf, false, &warn)
			require.NoError(t, err)
			require.Zero(t, served)
			require.Equal(t, tc.context, c.ContextLength)
			if tc.warning == "" {
				require.Empty(t, warn.String())
				return
			}
			require.Equal(t, fmt.Sprintf(tc.warning, filepath.Join(dir, "config.json")), warn.String())
		})
	}
}

// TestWarnOtherTokenizerNamesTheEmbeddedModels: the warning for a
// checkpoint of another tokenizer than the embedded model's (no --model,
// no --tokenizer) named that tokenizer's file in the cache
// (~/.cache/spiral/embedded-*/tokenizer.json), a path the user never
// gave; it names it "the embedded model's tokenizer.json", as the
// commands name the model "embedded". A --tokenizer given is named as
// given.
func TestWarnOtherTokenizerNamesTheEmbeddedModels(t *testing.T) {
	cache := t.TempDir()
	t.Setenv("SPIRAL_CACHE_DIR", cache)
	var mf modelFlags
	r, err := mf.resolve(io.Discard)
	require.NoError(t, err)
	require.True(t, r.embedded)
	given := r
	given.tokenizerGiven = true
	for _, tc := range []struct {
		name string
		r    resolvedModel
		want string
	}{
		{"its own", r, " than the embedded model's tokenizer.json ("},
		{"given", given, " than " + r.tokenizer + " ("},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var w bytes.Buffer
			warnOtherTokenizer(&w, "ckpt", rl.RunSettings{Tokenizer: "0123456789abcdef0123456789abcdef"}, tc.r)
			require.Contains(t, w.String(), tc.want)
			if !tc.r.tokenizerGiven {
				require.NotContains(t, w.String(), cache)
			}
		})
	}
}

// TestWarnOtherTokenizerBytesRecorded: a checkpoint whose run recorded
// the fingerprint that older versions took of its tokenizer.json's bytes
// (tokenizer.ByteFingerprint) is of the tokenizer given when that is the
// same file, and is not warned of; another recorded fingerprint is.
func TestWarnOtherTokenizerBytesRecorded(t *testing.T) {
	path := filepath.Join("model", "tokenizer", "testdata", "char_tokenizer.json")
	bytesID, err := tokenizer.ByteFingerprint(path)
	require.NoError(t, err)
	var r resolvedModel
	r.setTokenizer(path)
	for _, tc := range []struct {
		name, recorded string
		warned         bool
	}{
		{"its bytes' fingerprint", bytesID, false},
		{"another", "0123456789abcdef0123456789abcdef", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var w bytes.Buffer
			warnOtherTokenizer(&w, "ckpt", rl.RunSettings{Tokenizer: tc.recorded}, r)
			if tc.warned {
				require.Contains(t, w.String(), "spiral: warning: checkpoint ckpt was trained with another tokenizer (its run's tokenizer "+tc.recorded+")")
				return
			}
			require.Empty(t, w.String())
		})
	}
}

// TestTokenizerFingerprintsTakenOnce: eval --checkpoint took the
// tokenizer's fingerprint (tokenizer.json read, parsed and written again:
// 0.5 to 2.6 s for Qwen3's 11 MB) for its resume key and again for the
// checkpoint's warning, and the fingerprint of its bytes both times,
// which neither needs where the run recorded the content's. Each is
// taken once a command, by the copies of the resolved model it passes
// along, and the bytes' only where the run's fingerprint is not the
// content's.
func TestTokenizerFingerprintsTakenOnce(t *testing.T) {
	path := filepath.Join("model", "tokenizer", "testdata", "char_tokenizer.json")
	id, err := tokenizer.Fingerprint(path)
	require.NoError(t, err)
	bytesID, err := tokenizer.ByteFingerprint(path)
	require.NoError(t, err)
	require.NotEqual(t, id, bytesID)
	for _, tc := range []struct {
		name, recorded   string
		warned           bool
		content, ofBytes int
	}{
		{"the run's is the content's", id, false, 1, 0},
		{"the run's is the bytes'", bytesID, false, 1, 1},
		{"another", "0123456789abcdef0123456789abcdef", true, 1, 1},
		{"none recorded", "", false, 1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r resolvedModel
			r.setTokenizer(path)
			taken := map[bool]int{}
			of := r.prints.of
			r.prints.of = func(path string, bytes bool) (string, error) {
				taken[bytes]++
				return of(path, bytes)
			}
			// As eval --checkpoint asks: its resume key, then the
			// checkpoint's warning, on the session's copy, twice.
			got, err := r.tokenizerID()
			require.NoError(t, err)
			require.Equal(t, id, got)
			sess := &modelSession{resolvedModel: r}
			for range 2 {
				var w bytes.Buffer
				warnOtherTokenizer(&w, "ckpt", rl.RunSettings{Tokenizer: tc.recorded}, sess.resolvedModel)
				require.Equal(t, tc.warned, w.Len() > 0, w.String())
			}
			require.Equal(t, map[bool]int{false: tc.content, true: tc.ofBytes}, map[bool]int{false: taken[false], true: taken[true]})
		})
	}
}

// TestSamplingFromACheckpointOfASelection: eval and generate
// --checkpoint of a train or sft run given --train, whose checkpoints
// hold the trained parameters only, failed ("does not match the store",
// every frozen tensor missing), where export read them. They sample
// with its weights, the frozen ones the model's, and eval's report
// names the checkpoint; generate samples as from the checkpoint's export.
func TestSamplingFromACheckpointOfASelection(t *testing.T) {
	t.Setenv("SPIRAL_CACHE_DIR", t.TempDir())
	dir := t.TempDir()
	const selection = `layers\.0\.`
	trainRun, sftRun := filepath.Join(dir, "train"), filepath.Join(dir, "sft")
	var stderr bytes.Buffer
	require.Zero(t, run(context.Background(), []string{"train", "--out", trainRun, "--train", selection, "--steps", "1", "--problems", "1", "--n1", "2", "--k", "1", "--n", "2", "--n2", "2",
		"--max-new-tokens", "4", "--eval-every", "0", "--final-rsa-steps", "0", "--threads", "1", "--quiet"}, &cliEnv{stdout: io.Discard, stderr: &stderr}), stderr.String())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stderr.Reset()
	require.Equal(t, exitInterrupted, run(ctx, []string{"sft", "--out", sftRun, "--train", selection, "--steps", "50", "--batch", "2", "--eval-every", "0", "--eval-problems", "2",
		"--checkpoint-every", "1", "--threads", "1", "--quiet"}, &cliEnv{stdout: &cancelAt{line: "checkpoint ", cancel: cancel}, stderr: &stderr}), stderr.String())
	for _, runDir := range []string{trainRun, sftRun} {
		t.Run(filepath.Base(runDir), func(t *testing.T) {
			out := filepath.Join(dir, "eval-"+filepath.Base(runDir))
			var stderr bytes.Buffer
			require.Zero(t, run(context.Background(), []string{"eval", "--checkpoint", runDir, "--mode", "passk", "--limit", "1", "--samples", "1", "--max-new-tokens", "4",
				"--threads", "1", "--quiet", "--out", out}, &cliEnv{stdout: io.Discard, stderr: &stderr}), stderr.String())
			b, err := os.ReadFile(filepath.Join(out, "passk.json"))
			require.NoError(t, err)
			var rep struct {
				Meta struct {
					Model            string `json:"model"`
					CheckpointDigest string `json:"checkpoint_digest"`
				} `json:"meta"`
			}
			require.NoError(t, json.Unmarshal(b, &rep))
			require.Contains(t, rep.Meta.Model, "embedded@"+filepath.Base(runDir)+"/ckpt-")
			require.NotEmpty(t, rep.Meta.CheckpointDigest)
			// generate samples as the checkpoint's export does.
			exported := filepath.Join(dir, "export-"+filepath.Base(runDir), "model.onnx")
			stderr.Reset()
			require.Zero(t, run(context.Background(), []string{"export", "--checkpoint", runDir, "--out", exported}, &cliEnv{stdout: io.Discard, stderr: &stderr}), stderr.String())
			var completions [2]bytes.Buffer
			for i, from := range [][]string{{"--checkpoint", runDir}, {"--model", exported}} {
				stderr.Reset()
				args := append([]string{"generate", "--jsonl", "--temperature", "0", "--max-new-tokens", "4", "--threads", "1"}, from...)
				require.Zero(t, run(context.Background(), append(args, "1+1"), &cliEnv{stdout: &completions[i], stderr: &stderr}), stderr.String())
			}
			require.Contains(t, completions[0].String(), `"logprobs":[`)
			require.Equal(t, completions[1].String(), completions[0].String())
		})
	}
}

// olderCheckpoint writes into the run directory dir a copy of the
// checkpoint at path as spiral sft wrote it before 2026-12-06
// (c7b9317): its settings without the --train and --freeze selection
// ("selection"), the tensors, their order and the optimiser's moments
// the same, as that version's sft --train wrote them. extra, when
// given, is one more tensor in its weights (which then go without the
// moments). It returns the copy's path.
func olderCheckpoint(t *testing.T, path, dir string, extra *params.Spec) string {
	t.Helper()
	st, err := checkpoint.ReadState(path)
	require.NoError(t, err)
	var config map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(st.Config, &config))
	require.Contains(t, config, "selection")
	delete(config, "selection")
	st.Config, err = json.Marshal(config)
	require.NoError(t, err)
	w, err := checkpoint.NewStoreFor(path)
	require.NoError(t, err)
	opt, err := optim.NewAdamW(optim.DefaultConfig(), w)
	require.NoError(t, err)
	_, err = checkpoint.Load(context.Background(), path, w, opt)
	require.NoError(t, err)
	if extra != nil {
		w, err = params.NewStore(append(w.Specs(), *extra))
		require.NoError(t, err)
		opt = nil
	}
	saved, err := checkpoint.Save(filepath.Join(dir, rl.CheckpointsDir), w, opt, st, checkpoint.Options{})
	require.NoError(t, err)
	return saved
}

// newestCheckpoint is the path of the newest checkpoint of the run
// directory dir.
func newestCheckpoint(t *testing.T, dir string) string {
	t.Helper()
	path, _, err := checkpoint.Newest(filepath.Join(dir, rl.CheckpointsDir), func(string) error { return nil })
	require.NoError(t, err)
	return path
}

// TestSamplingFromAnOlderCheckpointOfASelection: a checkpoint of an sft
// run given --train or --freeze, written before sft recorded the
// selection (c7b9317, 2026-12-06), holds the trained parameters only
// and records none: eval and generate --checkpoint took it for a
// checkpoint of every parameter and refused it ("missing tensor
// model.embed_tokens.weight"), where export read it. They take the
// selection from its tensors and sample as from the same checkpoint
// with its selection recorded: the same eval report and traces, the same
// greedy completions and log-probabilities; export --format peft calls it
// a fine-tune of some parameters, not a full one. One whose tensors no
// selection trains is refused as before, saying what it holds.
func TestSamplingFromAnOlderCheckpointOfASelection(t *testing.T) {
	t.Setenv("SPIRAL_CACHE_DIR", t.TempDir())
	dir := t.TempDir()
	for _, tc := range []struct{ name, flag, selection string }{
		{"train", "--train", `layers\.0\.`},
		{"freeze", "--freeze", `embed|norm`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			recorded, older := filepath.Join(dir, tc.name), filepath.Join(dir, tc.name+"-older")
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var stderr bytes.Buffer
			require.Equal(t, exitInterrupted, run(ctx, []string{"sft", "--out", recorded, tc.flag, tc.selection, "--steps", "50", "--batch", "2", "--eval-every", "0", "--eval-problems", "2",
				"--checkpoint-every", "1", "--threads", "1", "--quiet"}, &cliEnv{stdout: &cancelAt{line: "checkpoint ", cancel: cancel}, stderr: &stderr}), stderr.String())
			path := newestCheckpoint(t, recorded)
			olderCheckpoint(t, path, older, nil)

			var reports, traces, completions [2][]byte
			for i, runDir := range []string{recorded, older} {
				out := filepath.Join(dir, "eval-"+filepath.Base(runDir))
				stderr.Reset()
				require.Zero(t, run(context.Background(), []string{"eval", "--checkpoint", runDir, "--mode", "passk", "--limit", "3", "--samples", "2", "--max-new-tokens", "12",
					"--traces", "--threads", "1", "--quiet", "--out", out}, &cliEnv{stdout: io.Discard, stderr: &stderr}), stderr.String())
				var rep map[string]any
				b, err := os.ReadFile(filepath.Join(out, "passk.json"))
				require.NoError(t, err)
				require.NoError(t, json.Unmarshal(b, &rep))
				meta := rep["meta"].(map[string]any)
				require.Contains(t, meta["model"], "embedded@"+filepath.Base(runDir)+"/ckpt-")
				for _, k := range []string{"model", "timestamp", "checkpoint_digest"} { // the checkpoint's own
					delete(meta, k)
				}
				reports[i], err = json.Marshal(rep)
				require.NoError(t, err)
				traces[i], err = os.ReadFile(filepath.Join(out, "passk.traces.jsonl"))
				require.NoError(t, err)
				var stdout bytes.Buffer
				stderr.Reset()
				require.Zero(t, run(context.Background(), []string{"generate", "--checkpoint", runDir, "--jsonl", "--temperature", "0", "--max-new-tokens", "8", "--threads", "1", "1+1", "2+2"},
					&cliEnv{stdout: &stdout, stderr: &stderr}), stderr.String())
				completions[i] = stdout.Bytes()
			}
			require.NotEmpty(t, traces[0])
			require.Contains(t, string(completions[0]), `"logprobs":[`)
			require.Equal(t, string(reports[0]), string(reports[1]))
			require.Equal(t, string(traces[0]), string(traces[1]))
			require.Equal(t, string(completions[0]), string(completions[1]))
		})
	}
	// Tensors that no selection trains: the trained ones and one that
	// is none of the model's parameters.
	other := olderCheckpoint(t, newestCheckpoint(t, filepath.Join(dir, "train")), filepath.Join(dir, "other"), &params.Spec{Name: "extra.weight", Shape: []int64{2}})
	var stderr bytes.Buffer
	require.Equal(t, exitFailure, run(context.Background(), []string{"generate", "--checkpoint", other, "--max-new-tokens", "2", "--threads", "1", "1+1"}, &cliEnv{stdout: io.Discard, stderr: &stderr}))
	require.Contains(t, stderr.String(), "spiral generate: --checkpoint "+other+": checkpoint "+other+` holds 11 of the model's 35 parameters and 1 other tensor ("extra.weight") and records no --train and --freeze selection (an sft checkpoint of a spiral before 2026-12-06?): params: `)
	require.Contains(t, stderr.String(), `unexpected tensor "extra.weight"`)
	require.Contains(t, stderr.String(), `missing tensor "model.embed_tokens.weight"`)

	// export --format peft refuses such a checkpoint (no adapters) as
	// what it is, not "a full fine-tune".
	older := newestCheckpoint(t, filepath.Join(dir, "train-older"))
	stderr.Reset()
	require.Equal(t, exitFailure, run(context.Background(), []string{"export", "--checkpoint", older, "--format", "peft", "--out", filepath.Join(dir, "peft")}, &cliEnv{stdout: io.Discard, stderr: &stderr}))
	require.Equal(t, "spiral export: --format peft: checkpoint "+older+" is a fine-tune of 11 of the model's 35 parameters (it records no --train and --freeze selection: an sft checkpoint of a spiral before 2026-12-06?), not LoRA adapters; export it with --format onnx or hf\n", stderr.String())
}

// TestCheckEngineClosesItsConnection: checkEngine's client, made for the
// start-up check alone, kept its connection to the engine open, idle,
// for the run (until the transport's 90 s idle timeout at best): one
// connection more held on the server, beside the generator's. It closes
// it once the check is done.
func TestCheckEngineClosesItsConnection(t *testing.T) {
	var open atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(`{"object":"list","data":[{"id":"m","object":"model","owned_by":"vllm","max_model_len":256}]}`))
	}))
	srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		switch st {
		case http.StateNew:
			open.Add(1)
		case http.StateClosed, http.StateHijacked:
			open.Add(-1)
		}
	}
	srv.Start()
	defer srv.Close()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{"max_position_embeddings": 512}`), 0o644))
	s := &modelSession{resolvedModel: resolvedModel{onnx: filepath.Join(dir, "model.onnx"), dir: dir}}
	f := engineFlags{engine: "openai", baseURL: srv.URL + "/v1", model: "m", timeout: 5 * time.Second}
	served, _, err := s.checkEngine(context.Background(), f, "", io.Discard)
	require.NoError(t, err)
	require.Equal(t, 256, served, "the check was made")
	require.Eventually(t, func() bool { return open.Load() == 0 }, 5*time.Second, 10*time.Millisecond,
		"%d connections left open after the check", open.Load())
}

// TestCheckEngineOlderSGLang: an SGLang that lists no max_model_len and
// was given no --context-length serves config.json's context, and
// refuses a request whose prompt and max_tokens fill it: checkEngine
// fits requests to one position less, with a note, where it fitted them
// to config.json's whole context (rollout's TestOpenAIOlderSGLangContext
// has the server's other answers).
func TestCheckEngineOlderSGLang(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/models":
			_, _ = w.Write([]byte(`{"object":"list","data":[{"id":"m","object":"model","owned_by":"sglang","root":"m","max_model_len":null}]}`))
		case "/get_server_info":
			_, _ = w.Write([]byte(`{"model_path":"m","context_length":null,"max_total_num_tokens":90000}`))
		default:
			http.Error(w, `{"detail":"Not Found"}`, http.StatusNotFound)
		}
	}))
	defer srv.Close()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{"max_position_embeddings": 512}`), 0o644))
	s := &modelSession{resolvedModel: resolvedModel{onnx: filepath.Join(dir, "model.onnx"), dir: dir}}
	f := engineFlags{engine: "openai", baseURL: srv.URL + "/v1", model: "m", timeout: 5 * time.Second}
	var warn bytes.Buffer
	served, sglangListed, err := s.checkEngine(context.Background(), f, "", &warn)
	require.NoError(t, err)
	require.Equal(t, 511, served)
	require.Equal(t, 512, sglangListed)
	require.Equal(t, fmt.Sprintf("spiral: note: %[1]s/v1/models lists no max_model_len for \"m\" (an older SGLang): its context is 512, the model's (%[1]s/get_server_info says no --context-length)\n"+
		"spiral: note: %[1]s/v1 serves m with a context of 511 positions (its context 512 less one: SGLang refuses a request whose prompt and max_tokens reach it), below the 512 of %[2]s (config.json max_position_embeddings): prompts and traces are fitted to it\n",
		srv.URL, filepath.Join(dir, "model.onnx")), warn.String())
}

// TestSessionErrorNamesTheModel: a model whose graph passes spiral's
// checks but ONNX Runtime refuses (a Sqrt made a Size, whose int64 output
// a Reciprocal refuses) is named in the error, and so is the cached
// graph that failed: the error named only the graph under the artifacts
// directory, a file the user never gave.
func TestSessionErrorNamesTheModel(t *testing.T) {
	t.Setenv("SPIRAL_CACHE_DIR", t.TempDir())
	dir := filepath.Join(t.TempDir(), "m")
	require.Zero(t, run(context.Background(), []string{"init-model", "--layers", "1", "--out", dir}, &cliEnv{stdout: io.Discard, stderr: io.Discard}))
	src := filepath.Join(dir, "model.onnx")
	b, err := os.ReadFile(src)
	require.NoError(t, err)
	op := []byte("\x22\x04Sqrt") // a node's op_type field
	require.Contains(t, string(b), string(op))
	require.NoError(t, os.WriteFile(src, bytes.Replace(b, op, []byte("\x22\x04Size"), 1), 0o644))
	out := filepath.Join(t.TempDir(), "run")
	for _, tc := range []struct {
		name  string
		args  []string
		graph string // what the error names after the model
	}{
		{"generate", []string{"generate", "--model", dir, "--max-new-tokens", "2", "1+1="}, ": graph " + filepath.Join(os.Getenv("SPIRAL_CACHE_DIR"), "artifacts")},
		{"train", []string{"train", "--model", dir, "--steps", "1", "--out", out}, ": artifacts " + filepath.Join(out, "artifacts") + ": piece "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stderr bytes.Buffer
			require.Equal(t, 1, run(context.Background(), tc.args, &cliEnv{stdout: io.Discard, stderr: &stderr}), stderr.String())
			require.Contains(t, stderr.String(), "spiral "+tc.name+": model: "+src+tc.graph, "the model given, then the graph")
			require.Contains(t, stderr.String(), "ortc: create session: ")
		})
	}
}

// TestGenerationSamplingNote: a generation_config.json that suggests
// sampling (Qwen3's do_sample, temperature 0.6, top_p 0.95, top_k 20),
// which transformers and vLLM follow, was passed over in silence, and
// eval and generate sampled at spiral's defaults (temperature 1, no
// top-p or top-k): a user comparing against those tools read another
// accuracy without a word. They note what the file suggests and the
// flags that would follow it, for the flags not given; a file that
// samples as spiral does, or says do_sample false, or none, goes
// without a note.
func TestGenerationSamplingNote(t *testing.T) {
	skipWithoutRuntime(t)
	t.Setenv("SPIRAL_CACHE_DIR", t.TempDir())
	dir := filepath.Join(t.TempDir(), "m")
	require.Zero(t, run(context.Background(), []string{"init-model", "--layers", "1", "--out", dir}, &cliEnv{stdout: io.Discard, stderr: io.Discard}))
	gc := filepath.Join(dir, "generation_config.json")
	const qwen3 = `{"do_sample": true, "temperature": 0.6, "top_p": 0.95, "top_k": 20, "eos_token_id": null}`
	note := func(suggested, used string) string {
		return "spiral: note: " + gc + " suggests sampling with " + suggested + ", which transformers and vLLM follow; spiral samples with " + used + " (its defaults): give those flags to sample as they do\n"
	}
	for _, tc := range []struct {
		name, file string
		args       []string
		want       string // "" for no note
	}{
		{"qwen3", qwen3, nil, note("temperature 0.6, top_p 0.95, top_k 20", "--temperature 1, --top-p 1, --top-k 0")},
		{"temperature given", qwen3, []string{"--temperature", "0.7"}, note("top_p 0.95, top_k 20", "--top-p 1, --top-k 0")},
		{"all given", qwen3, []string{"--temperature", "1", "--top-p", "1", "--top-k", "0"}, ""},
		{"as spiral samples", `{"do_sample": true, "temperature": 1.0}`, nil, ""},
		{"greedy", `{"do_sample": false, "temperature": 0.6}`, nil, ""},
		{"no do_sample", `{"temperature": 0.6}`, nil, ""},
		{"no file", "", nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.NoError(t, os.RemoveAll(gc))
			if tc.file != "" {
				require.NoError(t, os.WriteFile(gc, []byte(tc.file), 0o644))
			}
			for _, cmd := range [][]string{
				{"generate", "--model", dir, "--max-new-tokens", "2", "--threads", "1"},
				{"eval", "--model", dir, "--mode", "passk", "--limit", "1", "--samples", "1", "--max-new-tokens", "2", "--threads", "1", "--quiet", "--out", filepath.Join(t.TempDir(), "e")},
			} {
				args := append(append(cmd, tc.args...), map[string][]string{"generate": {"1+1"}, "eval": nil}[cmd[0]]...)
				var stderr bytes.Buffer
				require.Zero(t, run(context.Background(), args, &cliEnv{stdout: io.Discard, stderr: &stderr}), stderr.String())
				if tc.want == "" {
					require.NotContains(t, stderr.String(), "suggests sampling", "%q", args)
				} else {
					require.Contains(t, stderr.String(), tc.want, "%q", args)
				}
			}
		})
	}
	// A field of another type: no note, and no refusal of the model
	// for a note's sake.
	require.NoError(t, os.WriteFile(gc, []byte(`{"do_sample": true, "temperature": "hot", "top_k": 20.0}`), 0o644))
	var stderr bytes.Buffer
	require.Zero(t, run(context.Background(), []string{"generate", "--model", dir, "--max-new-tokens", "2", "--threads", "1", "1+1"}, &cliEnv{stdout: io.Discard, stderr: &stderr}), stderr.String())
	require.NotContains(t, stderr.String(), "suggests sampling")
	// top_k written as a float (20.0) reads as the integer it is.
	require.NoError(t, os.WriteFile(gc, []byte(`{"do_sample": true, "top_k": 20.0}`), 0o644))
	stderr.Reset()
	require.Zero(t, run(context.Background(), []string{"generate", "--model", dir, "--max-new-tokens", "2", "--threads", "1", "1+1"}, &cliEnv{stdout: io.Discard, stderr: &stderr}), stderr.String())
	require.Contains(t, stderr.String(), note("top_k 20", "--top-k 0"))
}
