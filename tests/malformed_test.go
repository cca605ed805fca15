package tests

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/spiral-rl/spiral/data/synth"
	"github.com/spiral-rl/spiral/model/checkpoint"
	"github.com/spiral-rl/spiral/model/onnx"
	"github.com/spiral-rl/spiral/model/optim"
	"github.com/spiral-rl/spiral/model/qwen3"
	"github.com/spiral-rl/spiral/model/tokenizer"
)

// fixtures are the files the malformed-input cases point at, made once.
type fixtures struct {
	dir  string
	good string // a tiny model directory: model.onnx, tokenizer.json, config.json
}

func (f fixtures) path(name string) string { return filepath.Join(f.dir, name) }

// write creates dir/name with content.
func (f fixtures) write(t *testing.T, name, content string) string {
	t.Helper()
	p := f.path(name)
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	return p
}

// modelDir writes a tiny model into dir/name with edit applied to its
// graph, and the task's character tokenizer beside it.
func (f fixtures) modelDir(t *testing.T, name string, edit func(m *onnx.Model)) string {
	t.Helper()
	dir := f.path(name)
	require.NoError(t, qwen3.WriteDir(dir, tinyConfig(t), 5))
	if edit != nil {
		m, err := onnx.Load(filepath.Join(dir, "model.onnx"))
		require.NoError(t, err)
		edit(m)
		require.NoError(t, onnx.Save(filepath.Join(dir, "model.onnx"), m, onnx.SaveOptions{}))
	}
	tj, err := tokenizer.BuildCharTokenizerJSON([]rune(synth.Alphabet()))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "tokenizer.json"), tj, 0o644))
	return dir
}

// tinyConfig is init-model's architecture with the task's vocabulary.
func tinyConfig(t *testing.T) qwen3.Config {
	t.Helper()
	tj, err := tokenizer.BuildCharTokenizerJSON([]rune(synth.Alphabet()))
	require.NoError(t, err)
	tok, err := tokenizer.FromBytes(tj)
	require.NoError(t, err)
	defer tok.Close()
	c := qwen3.Tiny()
	c.Vocab = tok.VocabSize()
	return c
}

// TestMalformedInputs feeds the binary malformed model files, tokenizers,
// datasets, flags, checkpoints and reports. Each case asserts the exit
// status (2 for a command-line mistake, 1 for bad input), that nothing
// panicked (no Go panic or goroutine dump in the output), and that the
// message names the offending file, row, flag or tensor.
func TestMalformedInputs(t *testing.T) {
	requireRuntime(t)
	f := fixtures{dir: t.TempDir()}
	good := f.modelDir(t, "good", nil)
	f.good = good
	f.write(t, "empty/model.onnx", "")
	f.write(t, "empty/tokenizer.json", "{}")
	require.NoError(t, os.MkdirAll(f.path("nomodel"), 0o755))
	require.NoError(t, os.MkdirAll(f.path("nockpt"), 0o755)) // a directory without a checkpoint
	f.write(t, "nomodel/tokenizer.json", "{}")
	f.write(t, "garbage/model.onnx", "\xff\xff\xff\xff not onnx")
	require.NoError(t, os.MkdirAll(f.path("dironnx/model.onnx"), 0o755))
	notok := f.modelDir(t, "notok", nil)
	require.NoError(t, os.Remove(filepath.Join(notok, "tokenizer.json")))
	// A tokenizer.json beside the model that is there but cannot be
	// read: it was said not to exist, or (a directory) to lack a
	// tokenizer.json of its own.
	looptok := f.modelDir(t, "looptok", nil)
	require.NoError(t, os.Remove(filepath.Join(looptok, "tokenizer.json")))
	require.NoError(t, os.Symlink("tokenizer.json", filepath.Join(looptok, "tokenizer.json")))
	dirtok := f.modelDir(t, "dirtok", nil)
	require.NoError(t, os.Remove(filepath.Join(dirtok, "tokenizer.json")))
	require.NoError(t, os.Mkdir(filepath.Join(dirtok, "tokenizer.json"), 0o755))
	badtok := f.modelDir(t, "badtok", nil)
	f.write(t, "badtok/tokenizer.json", "{not json")
	bigtok := f.modelDir(t, "bigtok", nil)
	bj, err := tokenizer.BuildByteTokenizerJSON()
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(bigtok, "tokenizer.json"), bj, 0o644))
	nan := f.modelDir(t, "nan", func(m *onnx.Model) {
		for _, tp := range m.Graph().GetInitializer() {
			if tp.GetName() == qwen3.LayerWeight(1, "mlp.up_proj") {
				v, _ := onnx.Float32s(tp)
				v[3] = float32(math.NaN())
				*tp = *onnx.NewTensor(tp.GetName(), tp.GetDims(), v)
			}
		}
	})
	f64 := f.modelDir(t, "f64", func(m *onnx.Model) {
		for _, tp := range m.Graph().GetInitializer() {
			if tp.GetName() == qwen3.NormWeight {
				v, _ := onnx.Float64s(tp)
				*tp = *onnx.NewTensor(tp.GetName(), tp.GetDims(), v)
			}
		}
	})
	other := f.modelDir(t, "other", nil)
	require.NoError(t, qwen3.WriteDir(other, tinyConfig(t), 6)) // same shapes, other weights
	data := f.write(t, "ok.jsonl", `{"problem":"Compute 1+2.","answer":"3"}`+"\n")
	keyed := f.write(t, "keyed.jsonl", `{"key":"a","problem":"Compute 1+2.","answer":"3"}`+"\n")
	bad := f.write(t, "bad.jsonl", `{"problem":"Compute 1+2.","answer":"3"}`+"\n"+`{"problem": oops`+"\n")
	noAnswers := f.write(t, "noanswers.jsonl", `{"problem":"Compute 1+2.","answer":""}`+"\n")
	huge := f.write(t, "huge.jsonl", fmt.Sprintf(`{"problem":%q,"answer":"3"}`+"\n", "Compute "+strings.Repeat("1+", 60_000)+"1."))
	long := f.write(t, "long.jsonl", fmt.Sprintf(`{"problem":%q,"answer":"3"}`+"\n", "Compute "+strings.Repeat("1+", 2_100)+"1."))
	longs := f.write(t, "longs.jsonl", fmt.Sprintf(`{"problem":%q,"answer":"3"}`+"\n"+`{"problem":%q,"answer":"4"}`+"\n",
		"Compute "+strings.Repeat("1+", 2_100)+"1.", "Compute "+strings.Repeat("2+", 2_100)+"2."))
	notReport := f.write(t, "notreport.json", `[1, 2]`)
	passk := f.write(t, "passk.json", `{"meta":{"mode":"passk","label":"A","problems":1},"config":{"samples":2},"points":[{"k":1,"pass_at_k":0.5,"majority_at_k":0.5},{"k":2,"pass_at_k":1,"majority_at_k":0.5}]}`)
	rsa := f.write(t, "rsa.json", `{"meta":{"mode":"rsa","label":"A","problems":1},"steps":[{"step":0,"accuracy":0.5},{"step":1,"accuracy":0.75}]}`)
	noPoints := f.write(t, "nopoints.json", `{"meta":{"mode":"passk","label":"X"},"points":[]}`)
	noSteps := f.write(t, "nosteps.json", `{"meta":{"mode":"rsa","label":"X"},"steps":[]}`)
	noBudgets := f.write(t, "nobudgets.json", `{"meta":{"mode":"sequential","label":"X"},"points":[]}`)
	// compare takes two reports and refuses one given twice.
	noBudgets2 := f.write(t, "nobudgets2.json", `{"meta":{"mode":"sequential","label":"X"},"points":[]}`)
	kDown := f.write(t, "kdown.json", `{"meta":{"mode":"passk","label":"B","problems":1},"config":{"samples":2},"points":[{"k":2,"pass_at_k":1},{"k":1,"pass_at_k":0.5}]}`)
	fromStep1 := f.write(t, "fromstep1.json", `{"meta":{"mode":"rsa","label":"B","problems":1},"steps":[{"step":1,"accuracy":0.5}]}`)
	above1 := f.write(t, "above1.json", `{"meta":{"mode":"passk","label":"B","problems":1},"config":{"samples":2},"points":[{"k":1,"pass_at_k":1.5}]}`)

	// A real run's checkpoint, then a copy with a flipped byte.
	run := f.path("run")
	r := spiral(t, nil, "train", "--model", good, "--out", run, "--steps", "1", "--problems", "1", "--n1", "2", "--k", "1", "--n", "2", "--n2", "2",
		"--max-new-tokens", "8", "--eval-every", "0", "--quiet")
	require.Equal(t, 0, r.code, r.stderr)
	ckpt := filepath.Join(run, "checkpoints", "ckpt-000001")
	// copyCheckpoint copies ckpt's files to dst, each through edit.
	copyCheckpoint := func(dst string, edit func(name string, b []byte) []byte) string {
		require.NoError(t, os.MkdirAll(dst, 0o755))
		for _, name := range []string{"model.safetensors", "optimizer.safetensors", "state.json"} {
			b, err := os.ReadFile(filepath.Join(ckpt, name))
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(filepath.Join(dst, name), edit(name, b), 0o644))
		}
		return dst
	}
	corrupt := copyCheckpoint(f.path("corrupt/ckpt-000001"), func(name string, b []byte) []byte {
		if name == "model.safetensors" {
			b[len(b)-3] ^= 0x40
		}
		return b
	})

	// The checkpoint as an older spiral wrote it (no model id), which
	// export finds of another layout only as it writes: its error names
	// what it exported onto what. It is saved again (not its state.json
	// edited, which model.safetensors' checksum of the state would
	// reject as damage).
	noID := func() string {
		w, err := checkpoint.NewStoreFor(ckpt)
		require.NoError(t, err)
		opt, err := optim.NewAdamW(optim.DefaultConfig(), w)
		require.NoError(t, err)
		st, err := checkpoint.Load(context.Background(), ckpt, w, opt)
		require.NoError(t, err)
		dec := json.NewDecoder(bytes.NewReader(st.Config))
		dec.UseNumber()
		var cfg map[string]any
		require.NoError(t, dec.Decode(&cfg))
		require.Contains(t, cfg, "model_id")
		delete(cfg, "model_id")
		b, err := json.Marshal(cfg)
		require.NoError(t, err)
		path, err := checkpoint.Save(f.path("noid"), w, opt, checkpoint.State{Step: st.Step, DataCursor: st.DataCursor, Config: b}, checkpoint.Options{})
		require.NoError(t, err)
		return path
	}()
	shallow := f.path("shallow")
	shallowConfig := tinyConfig(t)
	shallowConfig.Layers = 1
	require.NoError(t, qwen3.WriteDir(shallow, shallowConfig, 6))

	type tc struct {
		name string
		args []string
		code int
		want []string
	}
	usage := func(name, want string, args ...string) tc { return tc{name, args, 2, []string{want}} }
	fail := func(name string, want []string, args ...string) tc { return tc{name, args, 1, want} }
	train := func(args ...string) []string { return append([]string{"train", "--model", good, "--quiet"}, args...) }
	cases := []tc{
		// Flags: usage errors before any work.
		usage("negative temperature", "--temperature -1", train("--temperature", "-1")...),
		usage("infinite temperature", "--temperature +Inf", train("--temperature", "Inf")...),
		usage("negative max new tokens", "--max-new-tokens -1", train("--max-new-tokens", "-1")...),
		usage("negative top-k", "--top-k -1", train("--top-k", "-1")...),
		usage("top-p above 1", "--top-p 2", train("--top-p", "2")...),
		usage("negative top-p", "--top-p -0.5", train("--top-p", "-0.5")...),
		usage("zero generation batch", "--gen-batch 0", train("--gen-batch", "0")...),
		usage("negative threads", "--threads -1", train("--threads", "-1")...),
		usage("unknown device", `device "tpu"`, train("--device", "tpu")...),
		usage("bad cuda ordinal", `"cuda:x"`, train("--device", "cuda:x")...),
		usage("negative keep", "--keep -1", train("--keep", "-1")...),
		usage("zero checkpoint interval", "--checkpoint-every 0", train("--checkpoint-every", "0")...),
		usage("negative checkpoint interval", "--checkpoint-every -1", train("--checkpoint-every", "-1")...),
		usage("NaN gradient-norm clip", "--max-grad-norm NaN", train("--max-grad-norm", "NaN")...),
		usage("learning rate beyond float32", "--lr 1e+300", train("--lr", "1e300")...),
		usage("zero search traces", "--n1 (search traces per problem) is 0", train("--n1", "0")...),
		usage("subset above search traces", "--n 9 exceeds --n1 8", train("--n", "9")...),
		usage("negative aggregation rounds", "--agg-rounds is -1", train("--agg-rounds", "-1")...),
		usage("later round's subset above its population", "--n 4 exceeds the 3 aggregation traces", train("--agg-rounds", "2", "--k", "1", "--n2", "3")...),
		usage("clip-low of 1", "--clip-low 1", train("--clip-low", "1")...),
		usage("unknown algorithm", `--algo "foo"`, train("--algo", "foo")...),
		usage("search-only with a second aggregation round", "--algo search-only with --agg-rounds 2", train("--algo", "search-only", "--agg-rounds", "2")...),
		usage("one aggregation trace per subset", "--algo spiral with --n2 1", train("--n2", "1")...),
		usage("GRPO group of one", "--group 1", train("--algo", "grpo", "--group", "1")...),
		usage("zero eval samples", "--eval-samples 0", train("--eval-samples", "0")...),
		usage("more held-out problems than the embedded test split", "--eval-problems 100000: the embedded task's test split has 1134 problems", train("--eval-problems", "100000", "--steps", "1")...),
		usage("bad --train pattern", "--train \"(\"", train("--train", "(")...),
		usage("deterministic with threads", "--deterministic", train("--deterministic", "--threads", "4")...),
		usage("trace longer than the context", "--max-new-tokens 5000 leaves no room", train("--max-new-tokens", "5000")...),
		usage("unknown eval mode", `--mode "foo"`, "eval", "--mode", "foo"),
		usage("negative eval limit", "--limit -3", "eval", "--limit", "-3"),
		usage("zero eval samples (passk)", "--samples 0", "eval", "--samples", "0"),
		usage("RSA subset above population", "--subset 4 exceeds --population 2", "eval", "--mode", "rsa", "--subset", "4", "--population", "2"),
		usage("zero RSA steps", "--rsa-steps 0", "eval", "--mode", "rsa", "--rsa-steps", "0"),
		usage("aggregate share above 1", "--aggregate-share 2", "sft", "--aggregate-share", "2"),
		usage("read share below 0", "--aggregate-read-share -0.5", "sft", "--aggregate-read-share", "-0.5"),
		usage("zero generations", "--n 0", "generate", "--n", "0", "hello"),
		usage("unknown data format", `--format "xml"`, "data", "inspect", "--format", "xml", data),
		usage("kv heads not dividing heads", "--kv-heads 3: want a divisor of --heads 4", "init-model", "--out", f.path("x"), "--kv-heads", "3"),
		usage("no layers", "--layers 0: want >= 1", "init-model", "--out", f.path("x"), "--layers", "0"),
		usage("odd head width", "--head-dim 3: want an even number", "init-model", "--out", f.path("x"), "--head-dim", "3"),
		usage("vocabulary below the tokenizer's", "--vocab 5: the char tokenizer has", "init-model", "--out", f.path("x"), "--vocab", "5"),
		usage("unknown config", `--config "qwen9"`, "init-model", "--out", f.path("x"), "--config", "qwen9"),
		usage("plot too large", "--width 100000 --height 100000", "plot", "--width", "100000", "--height", "100000", notReport),
		usage("export without --out", "usage: spiral export", "export", "--checkpoint", ckpt),
		usage("export to an unknown format", `--format "tar"`, "export", "--checkpoint", ckpt, "--out", f.path("x"), "--format", "tar"),
		fail("peft export of a full fine-tune", []string{"is a full fine-tune, not LoRA adapters"}, "export", "--model", good, "--checkpoint", ckpt, "--out", f.path("x"), "--format", "peft"),
		// Named by its run, the checkpoint loaded is the one named.
		fail("peft export of a run's full fine-tune", []string{"checkpoint " + ckpt + " is a full fine-tune, not LoRA adapters"}, "export", "--model", good, "--checkpoint", run, "--out", f.path("x"), "--format", "peft"),
		usage("negative LoRA rank", "--lora-rank -1: want >= 0", train("--lora-rank", "-1")...),
		usage("LoRA with --train", "do not combine", train("--lora-rank", "4", "--train", "q_proj")...),
		usage("unknown LoRA target", `--lora-targets: "foo": want q, k, v, o, gate, up or down`, train("--lora-rank", "4", "--lora-targets", "q,foo")...),
		usage("LoRA alpha of zero", "--lora-alpha 0: want > 0", "sft", "--lora-rank", "4", "--lora-alpha", "0"),
		usage("unknown engine", `--engine "tgi"`, "eval", "--engine", "tgi"),
		usage("openai engine without a URL", "needs --base-url", "eval", "--engine", "openai", "--served-model", "m"),
		usage("base URL for the local engine", "need --engine openai", "eval", "--base-url", "http://127.0.0.1:1/v1"),
		usage("checkpoint on a serving engine", "a serving engine samples with the weights it loaded", "eval", "--engine", "openai", "--base-url", "http://127.0.0.1:1/v1", "--served-model", "m", "--checkpoint", ckpt),
		usage("training on an engine without sync", "needs --engine-sync", train("--engine", "openai", "--base-url", "http://127.0.0.1:1/v1", "--served-model", "m", "--sync-dir", f.path("s"))...),
		usage("vLLM LoRA sync without LoRA", "give --lora-rank", train("--engine", "openai", "--base-url", "http://127.0.0.1:1/v1", "--served-model", "m", "--engine-sync", "vllm-lora", "--sync-dir", f.path("s"))...),

		// Model files.
		fail("empty model file", []string{"empty/model.onnx", "the file is empty"}, "train", "--model", f.path("empty"), "--quiet"),
		fail("directory without model.onnx", []string{f.path("nomodel"), "holds no model.onnx"}, "train", "--model", f.path("nomodel"), "--quiet"),
		fail("model.onnx a directory", []string{"dironnx/model.onnx", "is a directory: want an ONNX model file"}, "eval", "--model", f.path("dironnx"), "--quiet"),
		fail("not an ONNX file", []string{"garbage/model.onnx", "not a valid ONNX model"}, "eval", "--model", f.path("garbage"), "--quiet"),
		usage("missing model", "--model "+f.path("absent")+": no such file or directory", "eval", "--model", f.path("absent"), "--quiet"),
		// Retried until --engine-timeout (a server still starting), then
		// said with the last failure.
		fail("serving engine down", []string{"http://127.0.0.1:9/v1/models: no answer within 2s (--engine-timeout)", "http://127.0.0.1:9/v1/models is not reachable"},
			"eval", "--engine", "openai", "--base-url", "http://127.0.0.1:9/v1", "--served-model", "m", "--engine-timeout", "2s", "--quiet"),
		fail("NaN weight", []string{"nan/model.onnx", qwen3.LayerWeight(1, "mlp.up_proj"), "NaN"}, "train", "--model", nan, "--quiet", "--steps", "1"),
		fail("float64 weight in generate", []string{qwen3.NormWeight, "float64", "float32"}, "generate", "--model", f64, "hi"),
		// Tokenizers.
		fail("missing tokenizer", []string{"notok/tokenizer.json", "--tokenizer"}, "eval", "--model", notok, "--quiet"),
		fail("tokenizer a symbolic link loop", []string{"looptok/tokenizer.json: too many levels of symbolic links"}, "eval", "--model", looptok, "--quiet"),
		fail("tokenizer a directory", []string{"dirtok/tokenizer.json is a directory: want the model's tokenizer.json file (or pass --tokenizer)"}, "eval", "--model", dirtok, "--quiet"),
		usage("missing --tokenizer file", "--tokenizer "+f.path("absent-tok.json")+": no such file or directory", "eval", "--model", good, "--tokenizer", f.path("absent-tok.json"), "--quiet"),
		fail("corrupt tokenizer", []string{"badtok/tokenizer.json"}, "eval", "--model", badtok, "--quiet"),
		fail("tokenizer wider than the model", []string{"bigtok/tokenizer.json", "ids but model", "embedding rows"}, "eval", "--model", bigtok, "--quiet"),
		// An export copies the tokenizer beside it: one that eval and
		// generate would refuse there is refused before anything is written
		// (checked after the cases).
		fail("onnx export with a corrupt tokenizer", []string{"badtok/tokenizer.json"}, "export", "--model", badtok, "--checkpoint", ckpt, "--out", f.path("exp-badtok/m.onnx")),
		fail("onnx export with a tokenizer wider than the model", []string{"bigtok/tokenizer.json", "ids but model", "embedding rows"},
			"export", "--model", bigtok, "--checkpoint", ckpt, "--out", f.path("exp-bigtok/m.onnx")),
		fail("onnx export with a --tokenizer wider than the model", []string{"bigtok/tokenizer.json", "ids but model", "embedding rows"},
			"export", "--model", good, "--tokenizer", filepath.Join(bigtok, "tokenizer.json"), "--checkpoint", ckpt, "--out", f.path("exp-given/m.onnx")),
		fail("hf export with a corrupt tokenizer", []string{"badtok/tokenizer.json"}, "export", "--format", "hf", "--model", badtok, "--out", f.path("exp-badtok-hf")),
		fail("hf export with a tokenizer wider than the model", []string{"bigtok/tokenizer.json", "ids but model", "embedding rows"},
			"export", "--format", "hf", "--model", bigtok, "--out", f.path("exp-bigtok-hf")),
		// Datasets.
		usage("missing data", "--data "+f.path("absent.jsonl")+": no such file or directory", train("--data", f.path("absent.jsonl"))...),
		fail("malformed row", []string{"bad.jsonl:2"}, train("--data", bad)...),
		fail("no usable problems", []string{"noanswers.jsonl:1", "empty answer", "none of the 1 records is usable"}, train("--data", noAnswers)...),
		fail("problem over the size cap", []string{"huge.jsonl:1", "100000-byte cap"}, train("--data", huge)...),
		fail("problem longer than the context", []string{"long.jsonl:1", "need", "the model has 4096", "no usable problems in " + long + ": the 1 problem is too long for the model"}, train("--data", long, "--max-new-tokens", "8")...),
		fail("eval: every problem longer than the context", []string{"long.jsonl:1", "the model has 4096", "no problems to evaluate: the 1 problem of " + long + " is too long for the model"},
			"eval", "--model", good, "--data", long, "--max-new-tokens", "8", "--out", f.path("eval-long"), "--quiet"),
		// --limit keeps the first problems: the message does not pass them
		// off as the whole file.
		fail("eval: every problem within --limit longer than the context", []string{"no problems to evaluate: the first 1 problem (--limit) of " + longs + " is too long for the model"},
			"eval", "--model", good, "--data", longs, "--limit", "1", "--max-new-tokens", "8", "--out", f.path("eval-longs"), "--quiet"),
		usage("missing held-out data", "--eval-data "+f.path("absent-eval.jsonl")+": no such file or directory", train("--data", data, "--eval-data", f.path("absent-eval.jsonl"))...),
		fail("held-out data read with --data's field flags", []string{"--eval-data", "ok.jsonl:1", `id field "key"`, "read with the --problem-field, --answer-field, --id-field and --format given for --data"}, train("--data", keyed, "--id-field", "key", "--eval-data", data)...),
		usage("missing template", "--search-template "+f.path("absent.txt")+": no such file or directory", train("--data", data, "--search-template", f.path("absent.txt"))...),
		usage("eval output that is a file", "--out "+data+": mkdir "+data+": not a directory", "eval", "--model", good, "--out", data, "--quiet"),
		usage("eval output empty", "--out is empty", "eval", "--model", good, "--out", "", "--quiet"),
		// Checkpoints.
		// --checkpoint and --model contradict each other: a usage error,
		// as a train rerun into a run of another model is.
		{"checkpoint of another model", []string{"eval", "--model", other, "--checkpoint", ckpt, "--quiet"}, 2, []string{"was trained from", "--model " + other}},
		{"export: checkpoint of another model", []string{"export", "--model", other, "--checkpoint", ckpt, "--out", f.path("exp-other/m.onnx")}, 2, []string{"was trained from", "--model " + other}},
		fail("no checkpoint there", []string{"--checkpoint", f.path("nockpt"), "no checkpoint in"}, "eval", "--model", good, "--checkpoint", f.path("nockpt"), "--quiet"),
		usage("missing checkpoint", "--checkpoint "+f.path("absent-ckpt")+": no such file or directory", "eval", "--model", good, "--checkpoint", f.path("absent-ckpt"), "--quiet"),
		fail("corrupt checkpoint", []string{"corrupt/ckpt-000001/model.safetensors", "CRC-32C"}, "export", "--model", good, "--checkpoint", corrupt, "--out", f.path("exp/m.onnx")),
		fail("checkpoint without a model id, of another layout", []string{"export the weights of " + noID + " onto --model " + filepath.Join(shallow, "model.onnx") + ": "},
			"export", "--model", shallow, "--checkpoint", noID, "--out", f.path("exp-noid/m.onnx")),
		fail("the same, as hf", []string{"export the weights of " + noID + " onto --model " + filepath.Join(shallow, "model.onnx") + ": "},
			"export", "--format", "hf", "--model", shallow, "--checkpoint", noID, "--out", f.path("exp-noid-hf")),
		// Reports.
		fail("not a report", []string{"notreport.json", "not a spiral eval report"}, "plot", notReport),
		usage("missing report", "REPORT.json "+f.path("absent.json")+" does not exist: want an eval report", "plot", f.path("absent.json")),
		usage("missing data file", "FILE "+f.path("absent.jsonl")+" does not exist: want a JSONL, JSON or Parquet data file", "data", "inspect", f.path("absent.jsonl")),
		fail("compare: pass@k report without points", []string{"nopoints.json", `"points" is empty`}, "compare", passk, noPoints),
		fail("compare: RSA reference without steps", []string{"nosteps.json", `"steps" is empty`}, "compare", noSteps, rsa),
		fail("compare: sequential report without points", []string{"nobudgets.json", `"points" is empty`}, "compare", noBudgets, noBudgets2),
		fail("compare: k decreasing", []string{"kdown.json", "points[1].k = 1 after points[0].k = 2: want k increasing"}, "compare", passk, kDown),
		fail("compare: RSA steps from 1", []string{"fromstep1.json", "steps[0].step = 1: want 0"}, "compare", rsa, fromStep1),
		fail("compare: pass@k above 1", []string{"above1.json", "points[0].pass_at_k = 1.5: want a fraction in [0, 1]"}, "compare", passk, above1),
		fail("plot: pass@k report without points", []string{"nopoints.json", `"points" is empty`}, "plot", "--out", f.path("p.png"), noPoints),
		fail("plot: RSA report without steps", []string{"nosteps.json", `"steps" is empty`}, "plot", "--out", f.path("p.png"), rsa, noSteps),
	}
	require.GreaterOrEqual(t, len(cases), 40)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := spiral(t, []string{"SPIRAL_CACHE_DIR=" + f.path("cache")}, c.args...)
			requireExit(t, r, c.code, c.args, c.want...)
		})
	}
	for _, out := range []string{"exp-badtok", "exp-bigtok", "exp-given", "exp-badtok-hf", "exp-bigtok-hf"} {
		require.NoDirExists(t, f.path(out), "an export refused for its tokenizer wrote nothing")
	}
}

// requireExit checks that the run of args exited with code, that its
// output (stdout and stderr) holds each of want, and that nothing
// panicked (no Go panic or goroutine dump).
func requireExit(t *testing.T, r result, code int, args []string, want ...string) {
	t.Helper()
	out := r.stdout + r.stderr
	require.Equal(t, code, r.code, "args %q\n%s", args, out)
	require.NotContains(t, out, "panic:")
	require.NotContains(t, out, "goroutine ")
	for _, w := range want {
		require.Contains(t, out, w)
	}
}
