package tests

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestToolInputs feeds spiral plan, bench, generate, plot, artifacts and
// init-model (and train and compare where they share the flag or the
// reader) bad and boundary input. Each case asserts the
// exit status (2 for a command-line mistake, 1 for bad input), that
// nothing panicked (no Go panic or goroutine dump in the output), that
// the message names the offending flag or file, and that the paths in
// absent were not written.
func TestToolInputs(t *testing.T) {
	requireRuntime(t)
	f := fixtures{dir: t.TempDir()}
	f.good = f.modelDir(t, "good", nil)
	f.write(t, "nocfg/model.onnx", "")
	f.write(t, "llama/config.json", `{"model_type":"llama","hidden_size":64}`)
	passk := f.write(t, "passk.json", `{"meta":{"mode":"passk","label":"A","problems":1},"config":{"samples":2},"points":[{"k":1,"pass_at_k":0.5,"majority_at_k":0.5},{"k":2,"pass_at_k":1,"majority_at_k":0.5}]}`)
	noMode := f.write(t, "nomode.json", `{"meta":{"label":"A"},"points":[{"k":1,"pass_at_k":0.5}]}`)
	bogus := f.write(t, "bogus.json", `{"meta":{"mode":"bogus","label":"A"}}`)
	runLog := f.write(t, "run/metrics.jsonl", `{"step":1,"loss":0.5}`+"\n"+`{"step":2,"loss":0.4}`+"\n")
	runDir := f.path("run")

	type tc struct {
		name   string
		args   []string
		code   int
		want   []string
		absent []string
	}
	usage := func(name, want string, args ...string) tc {
		return tc{name: name, args: args, code: 2, want: []string{want}}
	}
	cases := []tc{
		// Sizes past int64 wrapped to negative peaks, and a row of 10^8
		// positions "fit" 41 rows in a GPU.
		usage("plan: rows x tokens past any memory", `--rows/--tokens/--lora-rank: 1000000 rows x 1000000 tokens: "one layer's recompute and backward" alone would take over 64 PiB`,
			"plan", "--model", "qwen3-4b", "--rows", "1000000", "--tokens", "1000000"),
		// Counts past 2^20 (maxCount) are refused as such.
		usage("plan: LoRA rank past any count", "--lora-rank 4611686018427387904: want 0..1048576",
			"plan", "--model", "qwen3-4b", "--lora-rank", "4611686018427387904"),
		usage("plan: generation past any memory", `--gen-rows/--gen-capacity: 1000000 rows x 1000000 positions: "KV cache" alone`,
			"plan", "--model", "qwen3-4b", "--gen-rows", "1000000", "--gen-capacity", "1000000"),
		{name: "plan: a row no memory fits", args: []string{"plan", "--model", "qwen3-4b", "--gen-capacity", "1000000", "--device-memory", "80GB"},
			want: []string{"generation, 1000000 positions per row: does not fit"}},
		// MiB << 20 wrapped: 2^43 MiB was "--gen-call-mib -8796093022208"
		// (exit 1), 2^44 MiB the default.
		usage("generate: call memory past int64", "--gen-call-mib 8796093022208: want at most 1073741824 (1 PiB)",
			"generate", "--model", f.good, "--gen-call-mib", "8796093022208", "hi"),
		usage("bench: attention memory past int64", "--attention-mib 17592186044416: want at most 1073741824",
			"bench", "train", "--model", f.good, "--attention-mib", "17592186044416"),
		usage("plan: loss tile past int64", "--loss-chunk-mib 17592186044416: want at most 1073741824",
			"plan", "--model", "qwen3-4b", "--loss-chunk-mib", "17592186044416"),
		usage("train: MLP chunk past int64", "--mlp-mib 9223372036854775807: want at most 1073741824",
			"train", "--model", f.good, "--mlp-mib", "9223372036854775807"),
		usage("plan: kept values past int64", "--kept-mib 17592186044416: want at most 1073741824",
			"plan", "--model", "qwen3-4b", "--kept-mib", "17592186044416"),
		// "spiral plan: plan: --model ...", and 0.5 bytes planned for 0.
		// Neither a name nor a path: a usage error, as eval's --model
		// that is not there (it exited 1).
		{name: "plan: missing model file", args: []string{"plan", "--model", f.path("absent/model.onnx")}, code: 2,
			want: []string{"spiral plan: --model \"" + f.path("absent/model.onnx") + "\": not one of qwen3-0.6b", "no such file or directory"}},
		{name: "plan: model without config.json", args: []string{"plan", "--model", f.path("nocfg/model.onnx")}, code: 1,
			want: []string{"spiral plan: --model \"" + f.path("nocfg/model.onnx") + "\" needs the Hugging Face config.json beside it"}},
		usage("plan: memory below a byte", `--device-memory: "0.5" is 0.5 bytes: want at least one byte`, "plan", "--model", "qwen3-4b", "--device-memory", "0.5"),
		// A shape past memory crashed Go's allocator ("fatal error: out of
		// memory"), past int a panic of the builder; +Inf failed to
		// encode config.json ("json: unsupported value", exit 1). Past
		// the memory available it is the shape flags' usage error.
		{name: "init-model: weights past memory", args: []string{"init-model", "--out", f.path("huge"), "--hidden", "1000000", "--intermediate", "1000000"}, code: 2,
			want: []string{"a model of --layers 2 --hidden 1000000 --intermediate 1000000", "GiB of fp32 weights and needs about", "this machine has available: give a smaller shape"}, absent: []string{f.path("huge")}},
		{name: "init-model: sizes past int", args: []string{"init-model", "--out", f.path("huge"), "--hidden", "4611686018427387904", "--heads", "4611686018427387904", "--kv-heads", "1"}, code: 2,
			want: []string{"--hidden 4611686018427387904: want 1..1048576", "--heads 4611686018427387904: want 1..1048576"}, absent: []string{f.path("huge")}},
		{name: "init-model: infinite rotary base", args: []string{"init-model", "--out", f.path("inf"), "--rope-theta", "Inf"}, code: 2,
			want: []string{"--rope-theta +Inf: want a finite value"}, absent: []string{f.path("inf")}},
		// A report without meta.mode was "a  report"; --out a directory or
		// "" failed in atomicfile's rename.
		{name: "plot: report without a mode after one with", args: []string{"plot", "--out", f.path("p.png"), passk, noMode}, code: 1,
			want: []string{noMode + ": not a spiral eval report: no meta.mode"}, absent: []string{f.path("p.png")}},
		{name: "plot: report without a mode", args: []string{"plot", "--out", f.path("p.png"), noMode}, code: 1,
			want: []string{noMode + ": not a spiral eval report: no meta.mode"}, absent: []string{f.path("p.png")}},
		{name: "plot: unknown mode", args: []string{"plot", "--out", f.path("p.png"), passk, bogus}, code: 1,
			want: []string{bogus + `: unknown report mode "bogus" (want passk, rsa or sequential)`}, absent: []string{f.path("p.png")}},
		{name: "compare: report without a mode", args: []string{"compare", passk, noMode}, code: 1,
			want: []string{noMode + ": not a spiral eval report: no meta.mode"}},
		// One report given twice was two seeds of its label.
		usage("compare: one report twice", passk+" and "+f.dir+"/./passk.json are one report, given twice", "compare", passk, f.dir+"/./passk.json"),
		usage("plot: output a directory", "--out "+f.dir+" is a directory: want the file to write", "plot", "--out", f.dir, passk),
		// A training run given to plot was "is a directory" or "not a
		// spiral eval report: invalid character": compare --run reads runs.
		usage("plot: a run directory", runDir+" is a directory: plot takes eval reports", "plot", "--out", f.path("p.png"), runDir),
		{name: "plot: a run's log", args: []string{"plot", "--out", f.path("p.png"), runLog}, code: 1,
			want: []string{runLog + ": not a spiral eval report but JSON lines", "spiral compare --run LABEL=" + runDir}, absent: []string{f.path("p.png")}},
		usage("plot: output empty", "--out is empty: want the .png, .svg or .pdf file to write", "plot", "--out", "", passk),
		// --out x.jpg was written as PNG bytes.
		usage("plot: output of another format", "--out "+f.path("p.jpg")+": want a .png, .svg or .pdf file (the extension chooses the format)", "plot", "--out", f.path("p.jpg"), passk),
		// A rank of 2^20 passed the count bound into adapters of 2^20 x
		// 64 floats each: Go's allocator died ("fatal error: out of memory").
		usage("bench train: LoRA rank past the projections", "--lora-rank 1048576: model.layers.0.self_attn.q_proj is [64, 128]: want at most 64",
			"bench", "train", "--model", f.good, "--rows", "1", "--tokens", "16", "--steps", "1", "--lora-rank", "1048576"),
		// Each bench command ignored the other's flags: a LoRA rank or a
		// row length given to generate, a prompt length to train.
		usage("bench generate: LoRA", "--lora-rank is bench train's; bench generate would ignore it", "bench", "generate", "--model", f.good, "--lora-rank", "4"),
		usage("bench generate: training row length", "--tokens is bench train's", "bench", "generate", "--model", f.good, "--tokens", "64"),
		usage("bench generate: training memory", "--mlp-mib is bench train's", "bench", "generate", "--model", f.good, "--mlp-mib", "16"),
		usage("bench train: prompt length without a generation", "--prompt-tokens is bench generate's, or bench train's with --generate-rows", "bench", "train", "--model", f.good, "--prompt-tokens", "8"),
		usage("bench train: call memory without a generation", "--gen-call-mib is bench generate's", "bench", "train", "--model", f.good, "--gen-call-mib", "64"),
		// A prompt filling the context was warned about ("its completions
		// stop at 0 new tokens"), then failed in the sampler.
		{name: "generate: prompt past the context", args: []string{"generate", "--model", f.good, "--raw", "hi", strings.Repeat("1", 4096)}, code: 2,
			want: []string{"prompt 1 is 4096 tokens: the model's 4096 positions (config.json max_position_embeddings) leave none to generate"}},
		// A model under a billion parameters read "0.00B parameters".
		{name: "plan: a small model's parameters", args: []string{"plan", "--model", f.good, "--device-memory", "1GiB"},
			want: []string{"model: 2 layers, hidden 64, 0.10M parameters"}},
		{name: "plan: a named model's parameters", args: []string{"plan", "--model", "qwen3-0.6b", "--device-memory", "1GiB"},
			want: []string{"model: 28 layers, hidden 1024, 596.05M parameters"}},
		// A config.json that is there but not a Qwen3 one was "needed";
		// then refused as not Qwen3's. A Llama config is planned
		// (memplan.ParseConfig); this one lacks the widths.
		{name: "plan: a config.json without the widths", args: []string{"plan", "--model", f.path("llama")}, code: 1,
			want: []string{"spiral plan: --model \"" + f.path("llama") + "\": memplan: config \"" + f.path("llama/config.json") + "\": num_hidden_layers: absent or null, want >= 1; intermediate_size: absent or null, want >= 1"}},
		// --train's and --freeze's errors say "spiral artifacts, without
		// --train and --freeze, lists the parameters' names", and README
		// that it lists what is trained and why; it listed the frozen
		// ones only.
		{name: "artifacts: the trained parameters' names", args: []string{"artifacts", "--model", f.good, "--out", f.path("arts")},
			want: []string{"trained: 24 tensors", "\n  model.layers.1.mlp.up_proj.weight [64 128]: parameter: combined with the token activations by MatMul node",
				"rollout.onnx, sample.onnx, decode.onnx, program.json"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := spiral(t, []string{"SPIRAL_CACHE_DIR=" + f.path("cache")}, c.args...)
			requireExit(t, r, c.code, c.args, c.want...)
			for _, p := range c.absent {
				_, err := os.Stat(p)
				require.ErrorIs(t, err, os.ErrNotExist, "%s was written", p)
			}
		})
	}
}

// TestCommandSummaries: the summaries of spiral --help and of each
// command's --help name what the command does (train's said "the
// aggregation-only ablation" after search-only was added; export's only
// the ONNX format).
func TestCommandSummaries(t *testing.T) {
	for _, c := range []struct {
		command string
		want    []string
	}{
		{"train", []string{"SPIRAL, GRPO", "only the aggregation", "only the search traces"}},
		{"export", []string{"ONNX graph", "Hugging Face model directory", "peft adapter"}},
		{"plot", []string{"PNG, SVG or PDF"}},
	} {
		t.Run(c.command, func(t *testing.T) {
			top := spiral(t, nil, "--help")
			require.Equal(t, 0, top.code)
			own := spiral(t, nil, c.command, "--help")
			require.Equal(t, 0, own.code)
			line := regexp.MustCompile(`(?m)^  ` + regexp.QuoteMeta(c.command) + ` .*$`).FindString(top.stdout)
			first, _, _ := strings.Cut(own.stdout, "\n")
			for _, w := range c.want {
				require.Contains(t, line, w)
				require.Contains(t, first, w)
			}
		})
	}
}

// TestHelpCommand: spiral help CMD is spiral CMD --help (it printed the
// command list whatever CMD was); an unknown CMD is a usage error.
func TestHelpCommand(t *testing.T) {
	for _, cmd := range []string{"plan", "train", "bench"} {
		help := spiral(t, nil, "help", cmd)
		require.Equal(t, 0, help.code, help.stderr)
		own := spiral(t, nil, cmd, "--help")
		require.Equal(t, own.stdout, help.stdout, cmd)
	}
	top := spiral(t, nil, "help")
	require.Equal(t, 0, top.code)
	require.Contains(t, top.stdout, "Commands:")
	r := spiral(t, nil, "help", "nosuch")
	require.Equal(t, 2, r.code)
	require.Contains(t, r.stderr, `unknown command "nosuch"`)
}
