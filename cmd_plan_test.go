package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/spiral-rl/spiral/model"
	"github.com/spiral-rl/spiral/model/lmgraph"
	"github.com/spiral-rl/spiral/model/memplan"
	"github.com/spiral-rl/spiral/model/onnx"
	"github.com/stretchr/testify/require"
)

// TestPlanGenerationInTraining: spiral train's rollouts run beside its
// gradients and AdamW moments, which stay allocated for the whole run, so
// plan says how many rows generation fits there too. Qwen3-4B on 80 GB
// (memplan's TestGeneratePeakInTraining has the arithmetic, there with
// the call budget, 512 MiB, as the call's temporaries; here one row of a
// 256-position prefill chunk over 5,120 positions, 2,334,737,920 bytes
// (memplan's TestCallTemporaries), takes its place): a full fine-tune's
// 16 bytes a parameter leave 8 rows of 5,120 positions of the 40
// generation alone fits; LoRA r = 16's adapters leave all 40.
func TestPlanGenerationInTraining(t *testing.T) {
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"full fine-tune", nil, "generation in train (its gradients and moments held), 5120 positions per row: up to 8 rows"},
		{"LoRA r = 16", []string{"--lora-rank", "16"}, "generation in train (its gradients and moments held), 5120 positions per row: up to 40 rows"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			args := append([]string{"plan", "--model", "qwen3-4b", "--device-memory", "80GB"}, c.args...)
			code := run(context.Background(), args, &cliEnv{stdout: &stdout, stderr: &stderr})
			require.Zero(t, code, stderr.String())
			require.Contains(t, stdout.String(), "  generation, 5120 positions per row: up to 40 rows\n")
			require.Contains(t, stdout.String(), "  "+c.want+"\n")
		})
	}
}

// TestPlanDeviceUntiedHead: the device layer's transposed sum of a
// trained untied head's gradient (model's deviceGrads.columnSum, 4 x
// 151,936 x 4,096 = 2,489,319,424 bytes for Qwen3-8B) is allocated on
// --device cuda only (openDeviceGrads): plan counted it in a CPU run's
// peaks too. --device takes train's values (auto planned as cuda); the
// CPU plan says what cuda adds; a bad value is a usage error.
func TestPlanDeviceUntiedHead(t *testing.T) {
	const head = 4 * 151936 * 4096
	plan := func(args ...string) (int, string, string) {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), append([]string{"plan", "--model", "qwen3-8b", "--device-memory", "141GB"}, args...), &cliEnv{stdout: &stdout, stderr: &stderr})
		return code, stdout.String(), stderr.String()
	}
	type report struct {
		Device                string         `json:"device"`
		Train                 []memplan.Item `json:"train"`
		TrainTotal            int64          `json:"train_total_bytes"`
		TrainingGenerateTotal int64          `json:"training_generate_total_bytes"`
	}
	reports := map[string]report{}
	for _, c := range []struct {
		device, want string
		head         bool
	}{
		{"", "cpu", false},
		{"cpu", "cpu", false},
		{"cuda", "cuda", true},
		{"cuda:1", "cuda", true},
		{"auto", "cuda", true},
	} {
		t.Run(c.device, func(t *testing.T) {
			args := []string{"--json"}
			if c.device != "" {
				args = append(args, "--device", c.device)
			}
			code, stdout, stderr := plan(args...)
			require.Zero(t, code, stderr)
			var rep report
			require.NoError(t, json.Unmarshal([]byte(stdout), &rep))
			require.Equal(t, c.want, rep.Device)
			got := int64(0)
			for _, it := range rep.Train {
				if strings.HasPrefix(it.Name, "untied head's gradient") {
					got += it.Bytes
				}
			}
			require.Equal(t, c.head, got == head, "%v", rep.Train)
			require.Equal(t, !c.head, got == 0, "%v", rep.Train)
			reports[c.want] = rep
		})
	}
	cpu, cuda := reports["cpu"], reports["cuda"]
	require.Equal(t, int64(head), cuda.TrainTotal-cpu.TrainTotal)
	require.Equal(t, int64(head), cuda.TrainingGenerateTotal-cpu.TrainingGenerateTotal)

	code, stdout, stderr := plan()
	require.Zero(t, code, stderr)
	require.Contains(t, stdout, "  (--device cuda adds 2.32 GiB to both peaks in train: the device layer's transposed sum of the untied head's gradient)\n")
	code, stdout, stderr = plan("--device", "cuda")
	require.Zero(t, code, stderr)
	require.NotContains(t, stdout, "--device cuda adds")
	code, _, stderr = plan("--device", "tpu")
	require.Equal(t, exitUsage, code)
	require.Contains(t, stderr, `--device: "tpu": want cpu, cuda, cuda:N or auto`)
}

// TestPlanLoRARankPastProjection: a LoRA rank past a targeted
// projection's smaller side is refused, as train refuses it when it reads
// the model (model/lora.go), where plan predicted it (Qwen3-4B, rank
// 5000: 53 GiB of weights, exit 0). Qwen3-4B's k_proj and v_proj are
// [2560, 1024], its q_proj [2560, 4096]: rank 1024 fits every
// projection, 1025 passes k_proj's (and v_proj's) smaller side, and with
// only q and o targeted 2560 fits and 2561 does not.
func TestPlanLoRARankPastProjection(t *testing.T) {
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--lora-rank", "1024"}, 0, ""},
		{[]string{"--lora-rank", "1025"}, exitUsage, "spiral plan: --lora-rank 1025: k_proj is [2560, 1024]: want at most 1024, the smaller side, past which an adapter is no more expressive\n"},
		{[]string{"--lora-rank", "5000"}, exitUsage, "spiral plan: --lora-rank 5000: q_proj is [2560, 4096]: want at most 2560"},
		{[]string{"--lora-rank", "2560", "--lora-targets", "q,o"}, 0, ""},
		{[]string{"--lora-rank", "2561", "--lora-targets", "q,o"}, exitUsage, "spiral plan: --lora-rank 2561: q_proj is [2560, 4096]: want at most 2560"},
	} {
		t.Run(fmt.Sprint(c.args), func(t *testing.T) {
			var stderr bytes.Buffer
			args := append([]string{"plan", "--model", "qwen3-4b", "--device-memory", "80GB"}, c.args...)
			code := run(context.Background(), args, &cliEnv{stdout: io.Discard, stderr: &stderr})
			require.Equal(t, c.code, code, stderr.String())
			if c.want != "" {
				require.Contains(t, stderr.String(), c.want)
			}
		})
	}
}

// TestAutoMicroBatchTokens: --micro-batch-tokens 0 sizes training calls
// from config.json's shape; without a config.json it is 4,096, with a
// note naming the file (it was silent: a bare model.onnx export of
// Qwen3-4B trained in calls of 4,096 tokens and one of Qwen3-0.6B too,
// the user told nothing of either), and a config.json it cannot read
// gives 4,096 too, with a note saying why. A Qwen2, Llama or Mistral
// config.json is read as plan reads it (memplan.ParseConfig), where it
// was refused as not Qwen3's: Qwen2.5-7B's shape (28 layers of 3,584,
// 28 heads of 128) keeps 29 x 3,584 x 4 + 4 x (10 x 3,584 + 8 x 3,584)
// = 673,792 bytes a token, so 4 GiB / 673,792 = 6,374 tokens a call,
// not 4,096.
func TestAutoMicroBatchTokens(t *testing.T) {
	qwen3Config := `{"model_type": "qwen3", "num_hidden_layers": 28, "hidden_size": 1024, "num_attention_heads": 16, "num_key_value_heads": 8,
		"head_dim": 128, "intermediate_size": 3072, "vocab_size": 151936, "tie_word_embeddings": true}`
	for _, tc := range []struct {
		name, config string
		want         int
		note         string
	}{
		{"Qwen3-0.6B's shape", qwen3Config, 16384, ""},
		{"no config.json", "", 4096,
			"spiral: note: --micro-batch-tokens auto: there is no DIR/config.json, whose shape sizes training calls: training calls of 4096 tokens (give --micro-batch-tokens to choose)\n"},
		{"Qwen2.5-7B's shape", `{"model_type": "qwen2", "num_hidden_layers": 28, "hidden_size": 3584, "intermediate_size": 18944, "num_attention_heads": 28,
			"num_key_value_heads": 4, "vocab_size": 152064}`, 6374, ""},
		{"a config.json without the widths", `{"model_type": "qwen2", "num_hidden_layers": 24, "hidden_size": 896}`, 4096,
			`spiral: note: --micro-batch-tokens auto: memplan: config "DIR/config.json": intermediate_size: absent or null, want >= 1; ` +
				`num_attention_heads: absent or null, want >= 1; vocab_size: absent or null, want >= 1; training calls of 4096 tokens (give --micro-batch-tokens to choose)` + "\n"},
		{"another architecture", `{"model_type": "gemma", "num_hidden_layers": 24, "hidden_size": 896}`, 4096,
			`spiral: note: --micro-batch-tokens auto: memplan: config "DIR/config.json": model_type "gemma": want one of qwen3 (Qwen3ForCausalLM), qwen2 (Qwen2ForCausalLM), llama (LlamaForCausalLM), mistral (MistralForCausalLM); training calls of 4096 tokens (give --micro-batch-tokens to choose)` + "\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if tc.config != "" {
				require.NoError(t, os.WriteFile(filepath.Join(dir, "config.json"), []byte(tc.config), 0o666))
			}
			var note bytes.Buffer
			require.Equal(t, tc.want, autoMicroBatchTokens(filepath.Join(dir, "model.onnx"), &note))
			require.Equal(t, strings.ReplaceAll(tc.note, "DIR", dir), note.String())
		})
	}
}

// TestPlanRowsSingular: plan's fitting rows read "1 row", not "1 rows".
func TestPlanRowsSingular(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"plan", "--model", "qwen3-4b", "--device-memory", "80GB"}, &cliEnv{stdout: &stdout, stderr: &stderr})
	require.Zero(t, code, stderr.String())
	require.Regexp(t, `\n  training,  1 row:  up to \d+ tokens per row\n  training,  2 rows: up to \d+ tokens per row\n`, stdout.String())
	// Qwen3-4B on 80 GB: generation over 20,000 positions fits 9 rows, 1
	// in train.
	stdout.Reset()
	code = run(context.Background(), []string{"plan", "--model", "qwen3-4b", "--device-memory", "80GB", "--gen-capacity", "20000"}, &cliEnv{stdout: &stdout, stderr: &stderr})
	require.Zero(t, code, stderr.String())
	require.Contains(t, stdout.String(), "  generation, 20000 positions per row: up to 9 rows\n  generation in train (its gradients and moments held), 20000 positions per row: up to 1 row\n")
}

// TestPlanDefaultsWithinContext: plan's default shapes, --tokens 9216 and
// --gen-capacity 5120, are cut to the model's context where config.json
// gives a shorter one (the embedded model's 4,096): its default plan
// predicted a row of 9,216 tokens and generation over 5,120 positions,
// both past what the model reads, and --json did not say which shape it
// planned. A shape given is planned as given, marked past the context;
// a named model, whose context plan does not know, keeps the defaults.
func TestPlanDefaultsWithinContext(t *testing.T) {
	embedded := filepath.Join("model", "embedded", "assets")
	for _, tc := range []struct {
		name   string
		args   []string
		want   []string
		tokens int
		gen    int
	}{
		{"defaults cut", []string{"--model", embedded}, []string{
			"\ntraining step: 1 x 4096 tokens (full fine-tune, AdamW; the default --tokens 9216 cut to the model's 4096 positions, config.json max_position_embeddings)\n",
			"\ngeneration: 64 rows x 4096 positions (the default --gen-capacity 5120 cut to the model's 4096 positions)\n",
			"  generation, 4096 positions per row: up to "}, 4096, 4096},
		{"given", []string{"--model", embedded, "--tokens", "9216", "--gen-capacity", "5000"}, []string{
			"\ntraining step: 1 x 9216 tokens (full fine-tune, AdamW), past the model's 4096 positions (config.json max_position_embeddings)\n",
			"\ngeneration: 64 rows x 5000 positions, past the model's 4096 positions (config.json max_position_embeddings)\n"}, 9216, 5000},
		{"within", []string{"--model", embedded, "--tokens", "2048"}, []string{
			"\ntraining step: 1 x 2048 tokens (full fine-tune, AdamW)\n"}, 2048, 4096},
		{"named", []string{"--model", "qwen3-4b"}, []string{
			"\ntraining step: 1 x 9216 tokens (full fine-tune, AdamW)\n", "\ngeneration: 64 rows x 5120 positions\n"}, 9216, 5120},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			args := append([]string{"plan", "--device-memory", "80GB"}, tc.args...)
			require.Zero(t, run(context.Background(), args, &cliEnv{stdout: &stdout, stderr: &stderr}), stderr.String())
			for _, s := range tc.want {
				require.Contains(t, stdout.String(), s)
			}
			stdout.Reset()
			require.Zero(t, run(context.Background(), append(args, "--json"), &cliEnv{stdout: &stdout, stderr: &stderr}), stderr.String())
			var rep struct {
				Rows        int `json:"rows"`
				Tokens      int `json:"tokens"`
				GenRows     int `json:"gen_rows"`
				GenCapacity int `json:"gen_capacity"`
			}
			require.NoError(t, json.Unmarshal(stdout.Bytes(), &rep))
			require.Equal(t, 1, rep.Rows)
			require.Equal(t, tc.tokens, rep.Tokens)
			require.Equal(t, 64, rep.GenRows)
			require.Equal(t, tc.gen, rep.GenCapacity)
		})
	}
}

// TestPlanPastAnyMemoryNamed: a shape past any memory is refused naming
// its flags, without the memplan package's prefix ("--rows/--tokens/
// --lora-rank: memplan: 1048576 rows x ...").
func TestPlanPastAnyMemoryNamed(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--rows", "1048576", "--tokens", "1048576"},
			`spiral plan: --rows/--tokens/--lora-rank: 1048576 rows x 1048576 tokens: "one layer's recompute and backward" alone would take over 64 PiB` + "\n"},
		{[]string{"--gen-rows", "1048576", "--gen-capacity", "1048576"},
			`spiral plan: --gen-rows/--gen-capacity: 1048576 rows x 1048576 positions: "KV cache" alone would take over 64 PiB` + "\n"},
	} {
		var stderr bytes.Buffer
		code := run(context.Background(), append([]string{"plan", "--model", "qwen3-8b", "--device-memory", "80GB"}, tc.args...), &cliEnv{stdout: io.Discard, stderr: &stderr})
		require.Equal(t, exitUsage, code, stderr.String())
		require.Equal(t, tc.want, stderr.String())
	}
}

// TestPlanSelection: plan takes train's --train and --freeze and plans
// the gradients and AdamW moments of the parameters they select only:
// Qwen3-0.6B (tied) holds 596,049,920 parameters, its embedding 151,936
// x 1,024 = 155,582,464 of them, so --freeze embed_tokens trains
// 440,467,456 (4 bytes each of gradients, 8 of moments), where plan
// planned all 596M. A selection train refuses (nothing left to train,
// no parameter matched, with --lora-rank, a bad expression) plan refuses
// with exit 2, naming the flag.
//
// The refusal lists the names plan selects among (28 layers, tied),
// where it pointed to spiral artifacts, which needs a model file a plan
// of a config.json or a named model does not have.
func TestPlanSelection(t *testing.T) {
	const all, embed = 596_049_920, 155_582_464
	const qwen3Names = "the model's parameters: model.embed_tokens.weight, model.layers.N.{input_layernorm, self_attn.q_proj, self_attn.k_proj, " +
		"self_attn.v_proj, self_attn.q_norm, self_attn.k_norm, self_attn.o_proj, post_attention_layernorm, mlp.gate_proj, mlp.up_proj, mlp.down_proj}.weight " +
		"for N in 0..27, model.norm.weight" + planNoGraph
	plan := func(args ...string) (int, string, string) {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), append([]string{"plan", "--model", "qwen3-0.6b", "--device-memory", "80GB"}, args...), &cliEnv{stdout: &stdout, stderr: &stderr})
		return code, stdout.String(), stderr.String()
	}
	for _, c := range []struct {
		args    []string
		trained int64
	}{
		{nil, all},
		{[]string{"--freeze", "embed_tokens"}, all - embed},
		{[]string{"--train", `layers\.`, "--freeze", `mlp`}, all - embed - 1024 - 28*3*1024*3072},
	} {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			code, stdout, stderr := plan(append(c.args, "--json")...)
			require.Zero(t, code, stderr)
			var rep struct {
				TrainedParams int64 `json:"trained_params"`
				Train         []struct {
					Name  string
					Bytes int64
				}
				Traffic struct {
					Moments int64 `json:"moments_bytes"`
					Frozen  int64 `json:"frozen_bytes"`
				} `json:"device_traffic"`
			}
			require.NoError(t, json.Unmarshal([]byte(stdout), &rep))
			require.Equal(t, c.trained, rep.TrainedParams)
			bytes := map[string]int64{}
			for _, it := range rep.Train {
				bytes[it.Name] = it.Bytes
			}
			require.Equal(t, 4*c.trained, bytes["gradients"])
			require.Equal(t, 8*c.trained, bytes["AdamW moments"])
			require.Equal(t, int64(4*all), bytes["weights"])
			require.Equal(t, 8*c.trained, rep.Traffic.Moments)
			require.Equal(t, 4*(all-c.trained), rep.Traffic.Frozen)
		})
	}
	code, stdout, stderr := plan("--freeze", "embed_tokens")
	require.Zero(t, code, stderr)
	require.Contains(t, stdout, "training step: 1 x 9216 tokens (440.47M of the parameters trained (--freeze \"embed_tokens\", by transformers' names), AdamW)\n")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--freeze", "."}, `spiral plan: no parameter left to train: --freeze "." matches every one (` + qwen3Names + `)` + "\n"},
		{[]string{"--train", "mlp", "--freeze", "proj"}, `spiral plan: no parameter left to train: --freeze "proj" freezes every one --train "mlp" matches (` + qwen3Names + `)` + "\n"},
		{[]string{"--train", "z_proj"}, `spiral plan: --train "z_proj" matches no parameter (` + qwen3Names + `)` + "\n"},
		{[]string{"--train", "mlp", "--lora-rank", "8"}, "spiral plan: --lora-rank trains adapters only: --train and --freeze do not combine with it\n"},
		{[]string{"--freeze", "["}, "spiral plan: --freeze \"[\": error parsing regexp: missing closing ]: `[`\n"},
	} {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			code, _, stderr := plan(c.args...)
			require.Equal(t, exitUsage, code)
			require.Equal(t, c.want, stderr)
		})
	}
}

// TestPlanArchitectures: plan reads the parameters from config.json's
// architecture, where it read every config.json as Qwen3's and refused
// the others (`--model "DIR": qwen3: config "DIR/config.json": model_type
// "qwen2", want "qwen3"`): a Qwen2 export's q, k and v biases, Llama's
// and Mistral's layers without q/k norms, tied or untied heads are
// planned and selected with --train and --freeze. Counts by hand on 2
// layers of hidden 8, MLP 16, 2 query heads over 1 KV head of 4, a
// vocabulary of 10: a layer's projections 64 + 32 + 32 + 64 + 3 x 128 =
// 576 and norms 16, the embedding 80, the final norm 8, an untied head
// 80; Qwen2's biases 8 + 4 + 4 a layer.
func TestPlanArchitectures(t *testing.T) {
	const shape = `"num_hidden_layers": 2, "hidden_size": 8, "intermediate_size": 16, "num_attention_heads": 2, "num_key_value_heads": 1, "vocab_size": 10`
	for _, c := range []struct {
		name, config    string
		args            []string
		params, trained int64
	}{
		{"qwen2", `{"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", ` + shape + `}`, nil, 80 + 2*(576+16+16) + 8 + 80, 80 + 2*(576+16+16) + 8 + 80},
		{"qwen2 biases", `{"model_type": "qwen2", ` + shape + `}`, []string{"--train", `_proj\.bias$`}, 80 + 2*(576+16+16) + 8 + 80, 2 * 16},
		{"llama tied, embedding frozen", `{"model_type": "llama", "tie_word_embeddings": true, ` + shape + `}`, []string{"--freeze", "embed_tokens"}, 80 + 2*(576+16) + 8, 2*(576+16) + 8},
		{"mistral head", `{"architectures": ["MistralForCausalLM"], ` + shape + `}`, []string{"--train", "lm_head"}, 80 + 2*(576+16) + 8 + 80, 80},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			require.NoError(t, os.WriteFile(filepath.Join(dir, "config.json"), []byte(c.config), 0o666))
			var stdout, stderr bytes.Buffer
			args := append([]string{"plan", "--model", dir, "--device-memory", "1GB", "--tokens", "64", "--json"}, c.args...)
			require.Zero(t, run(context.Background(), args, &cliEnv{stdout: &stdout, stderr: &stderr}), stderr.String())
			var rep struct {
				Params        int64 `json:"params"`
				TrainedParams int64 `json:"trained_params"`
			}
			require.NoError(t, json.Unmarshal(stdout.Bytes(), &rep))
			require.Equal(t, c.params, rep.Params)
			require.Equal(t, c.trained, rep.TrainedParams)
		})
	}
}

// planNoGraph ends the names a refusal without a graph lists: they are
// transformers' names, which train, matching its graph's, may not share.
const planNoGraph = "; transformers' names, from config.json: train matches its graph's own names, which spiral artifacts lists; give --model the model file to plan by them"

// TestPlanSelectionNames: a selection plan refuses lists the names of
// the architecture's parameters, biases apart, untied head last (a Qwen2
// config.json of 2 layers), and says they are transformers', from
// config.json, not the graph's, which train matches (an optimum export's
// onnx::MatMul_N): the refusal listed the names without saying so.
func TestPlanSelectionNames(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{"model_type": "qwen2", "num_hidden_layers": 2, "hidden_size": 8,
		"intermediate_size": 16, "num_attention_heads": 2, "num_key_value_heads": 1, "vocab_size": 10}`), 0o666))
	var stderr bytes.Buffer
	code := run(context.Background(), []string{"plan", "--model", dir, "--device-memory", "1GB", "--train", "q_norm"}, &cliEnv{stdout: io.Discard, stderr: &stderr})
	require.Equal(t, exitUsage, code)
	require.Equal(t, `spiral plan: --train "q_norm" matches no parameter (the model's parameters: model.embed_tokens.weight, `+
		"model.layers.N.{input_layernorm, self_attn.q_proj, self_attn.k_proj, self_attn.v_proj, self_attn.o_proj, post_attention_layernorm, mlp.gate_proj, mlp.up_proj, mlp.down_proj}.weight "+
		"and model.layers.N.{self_attn.q_proj, self_attn.k_proj, self_attn.v_proj}.bias for N in 0..1, model.norm.weight, lm_head.weight"+planNoGraph+")\n", stderr.String())
}

// TestPlanSmallCounts: a count that millions would write as 0.00M (below
// 5,000) is written whole: --train of a small model's biases read
// "0.00M of the parameters trained"; larger counts keep their units.
func TestPlanSmallCounts(t *testing.T) {
	for _, c := range []struct {
		n    int64
		want string
	}{{0, "0"}, {32, "32"}, {9_999, "9999"}, {10_000, "0.01M"}, {102_784, "0.10M"}, {596_049_920, "596.05M"}, {4_022_468_096, "4.02B"}} {
		require.Equal(t, c.want, paramCount(c.n), "%d", c.n)
	}
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{"model_type": "qwen2", "num_hidden_layers": 2, "hidden_size": 8,
		"intermediate_size": 16, "num_attention_heads": 2, "num_key_value_heads": 1, "vocab_size": 10}`), 0o666))
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"plan", "--model", dir, "--device-memory", "1GB", "--tokens", "64", "--train", "bias"}, &cliEnv{stdout: &stdout, stderr: &stderr})
	require.Zero(t, code, stderr.String())
	require.Contains(t, stdout.String(), "model: 2 layers, hidden 8, 1384 parameters;")
	require.Contains(t, stdout.String(), "training step: 1 x 64 tokens (32 of the parameters trained (--train \"bias\", by transformers' names), AdamW)\n")
}

// TestPlanArchUnknownModel: a --model that is neither a name plan knows
// nor a path that is there (a typo of a name) is a usage error, as
// another command's --model that is not there is: it exited 1.
func TestPlanArchUnknownModel(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "qwen3-5b")
	_, _, err := planArch(missing, io.Discard)
	var ue usageError
	require.ErrorAs(t, err, &ue)
	require.EqualError(t, err, `--model "`+missing+`": not one of qwen3-0.6b, qwen3-1.7b, qwen3-4b, qwen3-8b, and stat `+missing+`: no such file or directory`)
}

// TestPlanPathNamedAsRelease: a --model that is both a release's name
// and a directory here (the qwen3-4b/ an export or init-model made)
// plans the model in it, with a note saying so (a file of that name,
// no model directory, leaves the release planned); the directory was
// ignored and the release planned (params 4,022,468,096 here, not the
// folder's 2-layer model's 1,384), as though the folder were not there.
func TestPlanPathNamedAsRelease(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	const config = `{"model_type": "qwen3", "num_hidden_layers": 2, "hidden_size": 8, "intermediate_size": 16, "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 4, "vocab_size": 10, "tie_word_embeddings": true}`
	for _, tc := range []struct {
		name, model, note string
	}{
		{"a path", "qwen3-4b", "spiral: note: --model qwen3-4b: planning the model at qwen3-4b (qwen3-4b/config.json), which exists, not the qwen3-4b release of that name (run from a directory without qwen3-4b to plan the release)\n"},
		{"a name only", "qwen3-1.7b", ""},
		{"a file of the name", "qwen3-0.6b", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.NoError(t, os.MkdirAll("qwen3-4b", 0o777))
			require.NoError(t, os.WriteFile(filepath.Join("qwen3-4b", "config.json"), []byte(config), 0o666))
			require.NoError(t, os.WriteFile("qwen3-0.6b", []byte("a log"), 0o666))
			var stdout, stderr bytes.Buffer
			args := []string{"plan", "--model", tc.model, "--device-memory", "80GB", "--tokens", "64", "--json"}
			require.Zero(t, run(context.Background(), args, &cliEnv{stdout: &stdout, stderr: &stderr}), stderr.String())
			require.Equal(t, tc.note, stderr.String())
			var rep struct {
				Params int64 `json:"params"`
			}
			require.NoError(t, json.Unmarshal(stdout.Bytes(), &rep))
			want, ok := memplan.Named(tc.model)
			if tc.note != "" {
				a, err := memplan.LoadConfig(filepath.Join("qwen3-4b", "config.json"))
				require.NoError(t, err)
				want, ok = a, true
			}
			require.True(t, ok)
			require.Equal(t, want.Params(), rep.Params)
		})
	}
}

// TestPlanDeviceMemoryRange: a --device-memory too large is refused
// saying so; it said "want a positive size" of "1e30GB", which is one.
func TestPlanDeviceMemoryRange(t *testing.T) {
	for _, tc := range []struct{ size, want string }{
		{"1e30GB", `--device-memory: "1e30GB" is past 2^62 bytes (4 EiB): want a size such as 80GB, 24GiB or 512MiB`},
		{"99999999999999999999GiB", `--device-memory: "99999999999999999999GiB" is past 2^62 bytes (4 EiB): want a size such as 80GB, 24GiB or 512MiB`},
		{"Inf", `--device-memory: "Inf" is past 2^62 bytes (4 EiB): want a size such as 80GB, 24GiB or 512MiB`},
		{"-5GB", `--device-memory: "-5GB": want a positive size such as 80GB, 24GiB or 512MiB`},
		{"NaN", `--device-memory: "NaN": want a positive size such as 80GB, 24GiB or 512MiB`},
		{"lots", `--device-memory: "lots": want a positive size such as 80GB, 24GiB or 512MiB`},
		// It planned for this machine's memory, as though left out.
		{"", `--device-memory: "": want a positive size such as 80GB, 24GiB or 512MiB`},
	} {
		var stderr bytes.Buffer
		code := run(context.Background(), []string{"plan", "--model", "qwen3-0.6b", "--device-memory", tc.size}, &cliEnv{stdout: io.Discard, stderr: &stderr})
		require.Equal(t, exitUsage, code, tc.size)
		require.Equal(t, "spiral plan: "+tc.want+"\n", stderr.String(), tc.size)
	}
}

// TestPlanSelectionGraphNames: with a model file (or a directory holding
// model.onnx), plan selects --train and --freeze by the graph's own
// parameter names, as train does (model.TrainedParameters), so the two
// accept and refuse the same selections. An optimum export names its
// projections onnx::MatMul_N (testdata/optimumqwen3): plan matched
// transformers' names, so it planned `--train q_proj`, which train
// refuses, and refused `--train MatMul`, which train trains (73,728
// parameters: 2 layers of q 6,144, k 3,072, v 3,072, o 6,144 and gate,
// up, down 6,144 each); `--freeze MatMul` leaves the embedding 8,192,
// 2 layers' norms 176 and the final norm 64.
func TestPlanSelectionGraphNames(t *testing.T) {
	src := filepath.Join("model", "testdata", "optimumqwen3", "model.onnx")
	const names = "spiral artifacts, without --train and --freeze, lists the parameters' names"
	for _, c := range []struct {
		args    []string
		trained int64
		refusal string
	}{
		{[]string{"--train", "MatMul"}, 73_728, ""},
		{[]string{"--freeze", "MatMul"}, 8_192 + 2*176 + 64, ""},
		{[]string{"--train", "norm"}, 2*176 + 64, ""},
		{[]string{"--train", "embed"}, 8_192, ""}, // the tied head (onnx::MatMul_858) is the embedding's copy
		{[]string{"--train", "q_proj"}, 0, `--train "q_proj" matches no parameter (` + names + `)`},
		{[]string{"--train", "mlp"}, 0, `--train "mlp" matches no parameter (` + names + `)`},
		{[]string{"--train", "norm", "--freeze", "norm"}, 0, `no parameter left to train: --freeze "norm" freezes every one --train "norm" matches (` + names + `)`},
	} {
		for _, m := range []string{src, filepath.Dir(src)} {
			t.Run(strings.Join(c.args, " ")+" "+m, func(t *testing.T) {
				out := planSelection(t, src, append([]string{"plan", "--model", m, "--device-memory", "1GB", "--tokens", "64", "--json"}, c.args...), c.refusal)
				if c.refusal != "" {
					return
				}
				var rep struct {
					TrainedParams int64 `json:"trained_params"`
				}
				require.NoError(t, json.Unmarshal(out, &rep))
				require.Equal(t, c.trained, rep.TrainedParams)
			})
		}
	}
}

// TestPlanSelectionGraphNamesSaid: plan's training line says which names
// the selection matched: the graph's, given a model file, else
// transformers' (TestPlanSmallCounts).
func TestPlanSelectionGraphNamesSaid(t *testing.T) {
	var stdout, stderr bytes.Buffer
	args := []string{"plan", "--model", filepath.Join("model", "testdata", "optimumqwen3", "model.onnx"), "--device-memory", "1GB", "--tokens", "64", "--train", "MatMul"}
	require.Zero(t, run(context.Background(), args, &cliEnv{stdout: &stdout, stderr: &stderr}), stderr.String())
	require.Contains(t, stdout.String(), "training step: 1 x 64 tokens (0.07M of the parameters trained (--train \"MatMul\", by the graph's names), AdamW)\n")
}

// TestPlanGraphNotConfig: a config.json that does not describe the
// graph beside it (a Qwen2 one, without q/k norms, beside the optimum
// Qwen3 export) is refused, naming both counts: --train q_norm, 2 x 24
// of the graph's parameters, was refused as `--train
// "^(?:model\.layers\.0\.self_attn\.q_norm\.weight|...)$" matches no
// parameter`, a regular expression the user never gave.
func TestPlanGraphNotConfig(t *testing.T) {
	dir := t.TempDir()
	graph, err := os.ReadFile(filepath.Join("model", "testdata", "optimumqwen3", "model.onnx"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "model.onnx"), graph, 0o666))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{"model_type": "qwen2", "num_hidden_layers": 2, "hidden_size": 64,
		"intermediate_size": 96, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 24, "vocab_size": 128, "tie_word_embeddings": true}`), 0o666))
	// Without --train or --freeze, a full fine-tune, it was planned by
	// config.json's shapes in silence: another model's peaks. Its counts
	// are the graph's parameters and config.json's.
	t0, err := model.TrainedHFParameters(filepath.Join(dir, "model.onnx"), lmgraph.Selection{})
	require.NoError(t, err)
	var inGraph int64
	for _, n := range t0.Sizes {
		inGraph += n
	}
	arch, err := memplan.LoadConfig(filepath.Join(dir, "config.json"))
	require.NoError(t, err)
	require.NotEqual(t, inGraph, arch.Params())
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--train", "q_norm"}, "--train \"q_norm\" trains 48 parameters of its graph, 0 by config.json's shapes"},
		{nil, fmt.Sprintf("its graph has %d parameters, config.json's shapes %d", inGraph, arch.Params())},
	} {
		var stderr bytes.Buffer
		code := run(context.Background(), append([]string{"plan", "--model", dir, "--device-memory", "1GB"}, c.args...), &cliEnv{stdout: io.Discard, stderr: &stderr})
		require.Equal(t, exitFailure, code, "%q: %s", c.args, stderr.String())
		require.Equal(t, "spiral plan: --model "+filepath.Join(dir, "model.onnx")+": "+c.want+": config.json does not describe the graph\n", stderr.String())
	}
}

// TestPlanGraphWithoutTransformersNames: a graph whose parameters have
// no transformers name (the dynamo export without its name scopes, whose
// projections are val_N; a MatMul weight "w" of a node "mm") is planned
// with --train and --freeze as train trains it, selected by the graph's
// own names and sized by their shapes, where plan refused every selection
// on it (`plan sizes what --train "^val_" selects by transformers' names:
// ... has no transformers name; give --model DIR/config.json`, whose
// names train does not match) while train trained it: --train "^val_"
// 14 projections, 2 x (1,536 x 2 + 768 x 2 + 3 x 6,144) = 73,728
// parameters; --train norm the norms, named, 2 x (64 x 2 + 24 x 2) + 64 =
// 416, refused too for the projections' names it never selects. A
// selection train refuses is refused with train's words, naming the
// graph's names. The gradients of one layer's backward are planned as
// the most a layer holds (its names do not say which layer a parameter
// is in), 2 x 4 x 36,864 + 4 x 176 = 295,616 bytes for the dynamo
// export's layer, and the training line says so.
func TestPlanGraphWithoutTransformersNames(t *testing.T) {
	nonames := graphWithoutModuleNames(t)
	const layer = 4 * (36_864 + 176)
	const names = "spiral artifacts, without --train and --freeze, lists the parameters' names"
	for _, c := range []struct {
		args          []string
		trained       int64
		layerGradient int64
		refusal       string
	}{
		{[]string{"--train", "^val_"}, 73_728, layer, ""},
		{[]string{"--train", "norm"}, 416, 4 * 416, ""},
		{[]string{"--freeze", "."}, 0, 0, `no parameter left to train: --freeze "." matches every one (` + names + `)`},
		{[]string{"--train", "q_proj"}, 0, 0, `--train "q_proj" matches no parameter (` + names + `)`},
	} {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			args := append([]string{"plan", "--model", nonames, "--device-memory", "1GB", "--tokens", "64", "--kept-mib", "0", "--json"}, c.args...)
			out := planSelection(t, filepath.Join(nonames, "model.onnx"), args, c.refusal)
			if c.refusal != "" {
				return
			}
			var rep struct {
				TrainedParams int64 `json:"trained_params"`
				Train         []memplan.Item
				Arch          memplan.Arch
			}
			require.NoError(t, json.Unmarshal(out, &rep))
			require.Equal(t, c.trained, rep.TrainedParams)
			items := map[string]int64{}
			for _, it := range rep.Train {
				items[it.Name] = it.Bytes
			}
			require.Equal(t, 4*c.trained, items["gradients"])
			require.Equal(t, 8*c.trained, items["AdamW moments"])
			const rt = 64
			h, qd := int64(rep.Arch.Hidden), int64(rep.Arch.Heads*rep.Arch.HeadDim)
			require.Equal(t, rt*4*(10*h+8*qd)+c.layerGradient, items["one layer's recompute and backward"])
		})
	}
	var stdout, stderr bytes.Buffer
	require.Zero(t, run(context.Background(), []string{"plan", "--model", nonames, "--device-memory", "1GB", "--tokens", "64", "--train", "^val_"},
		&cliEnv{stdout: &stdout, stderr: &stderr}), stderr.String())
	require.Contains(t, stdout.String(), "training step: 1 x 64 tokens (0.07M of the parameters trained (--train \"^val_\", by the graph's names, "+
		"which have no transformers names: a layer's gradients planned as a whole layer's), AdamW)\n")
	// A config.json of one layer (8,192 + 37,040 + 64 parameters) does
	// not describe the graph's two.
	config, err := os.ReadFile(filepath.Join(nonames, "config.json"))
	require.NoError(t, err)
	oneLayer := strings.Replace(string(config), `"num_hidden_layers": 2`, `"num_hidden_layers": 1`, 1)
	require.NotEqual(t, string(config), oneLayer)
	require.NoError(t, os.WriteFile(filepath.Join(nonames, "config.json"), []byte(oneLayer), 0o666))
	stderr.Reset()
	code := run(context.Background(), []string{"plan", "--model", nonames, "--device-memory", "1GB", "--train", "^val_"}, &cliEnv{stdout: io.Discard, stderr: &stderr})
	require.Equal(t, exitFailure, code)
	require.Equal(t, "spiral plan: --model "+filepath.Join(nonames, "model.onnx")+": --train \"^val_\" trains 73728 parameters of its graph, "+
		"more than config.json's shapes hold (45296): config.json does not describe the graph\n", stderr.String())

	dir := t.TempDir()
	b := onnx.NewGraphBuilder("g")
	ids := b.Input("input_ids", onnx.Int64, onnx.P("batch"), onnx.P("seq"))
	emb := b.Initializer("model.embed_tokens.weight", onnx.NewTensor("model.embed_tokens.weight", []int64{10, 8}, make([]float32, 80)))
	w := b.Initializer("w", onnx.NewTensor("w", []int64{8, 8}, make([]float32, 64)))
	b.NodeTo("MatMul", []string{b.Node("Gather", []string{emb, ids}), w}, []string{"mm"})
	b.Output("mm", onnx.Float32)
	require.NoError(t, onnx.Save(filepath.Join(dir, "model.onnx"), b.Model(17), onnx.SaveOptions{}))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{"model_type": "qwen3", "num_hidden_layers": 1, "hidden_size": 8,
		"intermediate_size": 16, "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 4, "vocab_size": 10, "tie_word_embeddings": true}`), 0o666))
	stdout.Reset()
	code = run(context.Background(), []string{"plan", "--model", dir, "--device-memory", "1GB", "--train", "^w$", "--json"}, &cliEnv{stdout: &stdout, stderr: &stderr})
	require.Zero(t, code, stderr.String())
	var rep struct {
		TrainedParams int64 `json:"trained_params"`
	}
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &rep))
	require.Equal(t, int64(64), rep.TrainedParams)
}

// selectionArg returns the value after flag in args, or "".
func selectionArg(args []string, flag string) string {
	for i := 0; i+1 < len(args); i++ {
		if args[i] == flag {
			return args[i+1]
		}
	}
	return ""
}

// planSelection runs the spiral plan command args, whose --train and
// --freeze select parameters of the graph src, and requires plan to
// take the selection as train does (model.TrainedParameters): refused
// with refusal, exit 2, where that is not "", planned otherwise. It
// returns what plan printed (nothing when refused).
func planSelection(t *testing.T, src string, args []string, refusal string) []byte {
	t.Helper()
	sel, err := parseSelection(selectionArg(args, "--train"), selectionArg(args, "--freeze"))
	require.NoError(t, err)
	_, trainErr := model.TrainedParameters(src, sel)
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), args, &cliEnv{stdout: &stdout, stderr: &stderr})
	if refusal != "" {
		require.Error(t, trainErr)
		require.Equal(t, refusal, modelFlagUsage(trainErr).Error())
		require.Equal(t, exitUsage, code)
		require.Equal(t, "spiral plan: "+refusal+"\n", stderr.String())
		require.Empty(t, stdout.String())
		return nil
	}
	require.NoError(t, trainErr)
	require.Zero(t, code, stderr.String())
	return stdout.Bytes()
}

// graphWithoutModuleNames writes, in a new directory, the dynamo Qwen3
// export (model/testdata/dynamoqwen3) without the name scopes that
// place its anonymous weights (val_N): a graph no parameter of which
// names its transformers module but the norms and the embedding, with
// its config.json. It returns the directory.
func graphWithoutModuleNames(t *testing.T) string {
	t.Helper()
	src := filepath.Join("model", "testdata", "dynamoqwen3")
	m, err := onnx.Load(filepath.Join(src, "model.onnx"))
	require.NoError(t, err)
	for _, n := range m.Graph().GetNode() {
		n.MetadataProps = nil
	}
	dir := t.TempDir()
	require.NoError(t, onnx.Save(filepath.Join(dir, "model.onnx"), m, onnx.SaveOptions{}))
	config, err := os.ReadFile(filepath.Join(src, "config.json"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "config.json"), config, 0o666))
	return dir
}

// TestPlanLoRAGraphTargets: given a model file (or a directory with
// model.onnx), plan finds LoRA's targets in the graph as train does
// (model.LoRAAdapters, by the module names the graph gives its
// projections) and refuses what train refuses, where it checked them
// against config.json's shapes only: a graph without module names (the
// dynamo export without its name scopes), which train refuses at once
// (`model: lora: ... has no transformers name`), was planned (exit 0),
// and a rank past the graph's projection was refused naming config.json's
// projection, not the graph's module as train names it. The training
// line says where the targets were found: the optimum export's 2 layers
// x 7 projections, its q_proj alone 2, and config.json's without a graph.
func TestPlanLoRAGraphTargets(t *testing.T) {
	optimum := filepath.Join("model", "testdata", "optimumqwen3", "model.onnx")
	nonames := graphWithoutModuleNames(t)
	for _, c := range []struct {
		name, model string
		args        []string
		line        string // the training line's parenthesis, on success
		code        int    // else the exit code of train's refusal
	}{
		{"optimum", optimum, []string{"--lora-rank", "4"}, "LoRA rank 4 on q_proj,k_proj,v_proj,o_proj,gate_proj,up_proj,down_proj: 14 projections of the graph, found by their module names, AdamW", 0},
		{"optimum dir, q", filepath.Dir(optimum), []string{"--lora-rank", "4", "--lora-targets", "q"}, "LoRA rank 4 on q_proj: 2 projections of the graph, found by their module names, AdamW", 0},
		{"config.json", filepath.Join(filepath.Dir(optimum), "config.json"), []string{"--lora-rank", "4", "--lora-targets", "q"}, "LoRA rank 4 on q_proj: 2 projections of config.json's shape, AdamW", 0},
		{"optimum, rank past k_proj", optimum, []string{"--lora-rank", "49"}, "", exitUsage},
		{"no module names", nonames, []string{"--lora-rank", "4"}, "", exitFailure},
	} {
		t.Run(c.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			args := append([]string{"plan", "--model", c.model, "--device-memory", "1GB", "--tokens", "64"}, c.args...)
			code := run(context.Background(), args, &cliEnv{stdout: &stdout, stderr: &stderr})
			if c.line != "" {
				require.Zero(t, code, stderr.String())
				require.Contains(t, stdout.String(), "training step: 1 x 64 tokens ("+c.line+")\n")
				return
			}
			src := c.model
			if st, err := os.Stat(src); err == nil && st.IsDir() {
				src = filepath.Join(src, "model.onnx")
			}
			rank, err := strconv.Atoi(c.args[1])
			require.NoError(t, err)
			l, err := parseLoRA(rank, 32, strings.Join(lmgraph.LoRATargets, ","))
			require.NoError(t, err)
			_, trainErr := model.PrepareArtifacts(context.Background(), src, t.TempDir(), model.ArtifactOptions{LoRA: l})
			require.Error(t, trainErr)
			require.Equal(t, c.code, code, stderr.String())
			require.Equal(t, "spiral plan: "+modelFlagUsage(trainErr).Error()+"\n", stderr.String())
		})
	}
	// A config.json whose MLP (128) is not the graph's (96): the adapters
	// of gate_proj it sizes are not those train makes.
	dir := t.TempDir()
	graph, err := os.ReadFile(optimum)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "model.onnx"), graph, 0o666))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{"model_type": "qwen3", "num_hidden_layers": 2, "hidden_size": 64,
		"intermediate_size": 128, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 24, "vocab_size": 128, "tie_word_embeddings": true}`), 0o666))
	var stderr bytes.Buffer
	code := run(context.Background(), []string{"plan", "--model", dir, "--device-memory", "1GB", "--lora-rank", "4", "--lora-targets", "gate"}, &cliEnv{stdout: io.Discard, stderr: &stderr})
	require.Equal(t, exitFailure, code)
	require.Equal(t, "spiral plan: --model "+filepath.Join(dir, "model.onnx")+": LoRA rank 4 on gate_proj adapts 1280 parameters of its graph (2 projections), "+
		"1536 by config.json's shapes: config.json does not describe the graph\n", stderr.String())
}

// TestPlanModelMissing: plan has no default model, so a command without
// --model, or with the model given as an argument as other tools take
// it (`spiral plan qwen3-4b`), says that --model is required and shows
// the usage line (with --model given, an argument is as before:
// TestStrayArgumentAfterFlag). It said "--model: want a model file, ..." (no word that
// the flag was missing) and "unexpected arguments ["qwen3-4b"]" (no word
// of --model at all).
func TestPlanModelMissing(t *testing.T) {
	const usage = " (usage: spiral plan --model MODEL [flags])"
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "--model is required: a model file, a directory with config.json, or one of qwen3-0.6b, qwen3-1.7b, qwen3-4b, qwen3-8b" + usage},
		{[]string{"--rows", "2"}, "--model is required: a model file, a directory with config.json, or one of qwen3-0.6b, qwen3-1.7b, qwen3-4b, qwen3-8b" + usage},
		{[]string{"qwen3-4b"}, `unexpected arguments ["qwen3-4b"]: plan takes its model as --model` + usage},
		{[]string{"--json", "qwen3-4b"}, `--json qwen3-4b: a value of --json goes after "=" (--json=true or --json=false); without it "qwen3-4b" is read as an argument, and spiral plan takes none` + usage},
	} {
		var stderr bytes.Buffer
		code := run(context.Background(), append([]string{"plan", "--device-memory", "80GB"}, tc.args...), &cliEnv{stdout: io.Discard, stderr: &stderr})
		require.Equal(t, exitUsage, code, "%q", tc.args)
		require.Equal(t, "spiral plan: "+tc.want+"\n", stderr.String(), "%q", tc.args)
	}
}

// TestParseByteSizeUnits: --device-memory takes k, M, G and T (powers of
// 1000) and KiB, MiB, GiB and TiB (of 1024), with or without B, in any
// case; 1.5T and 512k were refused ("want a positive size"). A number
// without a unit is bytes, for a script's exact count, but under 1 MiB,
// which fits no model, it is refused suggesting a unit: 80 planned for
// 80 bytes ("memory to fit: 0.00 GiB", nothing fits).
func TestParseByteSizeUnits(t *testing.T) {
	for _, tc := range []struct {
		size string
		want int64
	}{
		{"1.5T", 1.5e12}, {"1.5TB", 1.5e12}, {"2tib", 2 << 40}, {"80G", 80e9}, {"80gb", 80e9}, {"24GiB", 24 << 30},
		{"512M", 512e6}, {"512MiB", 512 << 20}, {"512k", 512e3}, {"512K", 512e3}, {"512kB", 512e3}, {"512KiB", 512 << 10},
		{"1048576", 1 << 20}, {"85899345920", 80 << 30}, {"512B", 512},
	} {
		got, err := parseByteSize(tc.size)
		require.NoError(t, err, tc.size)
		require.Equal(t, tc.want, got, tc.size)
	}
	for _, tc := range []struct{ size, want string }{
		{"80", `"80" is 80 bytes (a number without a unit is bytes, at least 1 MiB): give a unit, such as 80GB or 80GiB`},
		{"1048575", `"1048575" is 1048575 bytes (a number without a unit is bytes, at least 1 MiB): give a unit, such as 1048575GB or 1048575GiB`},
		{"0.5", `"0.5" is 0.5 bytes: want at least one byte`},
	} {
		_, err := parseByteSize(tc.size)
		require.EqualError(t, err, tc.want, tc.size)
	}
	var stderr bytes.Buffer
	code := run(context.Background(), []string{"plan", "--model", "qwen3-0.6b", "--device-memory", "80"}, &cliEnv{stdout: io.Discard, stderr: &stderr})
	require.Equal(t, exitUsage, code, stderr.String())
	require.Equal(t, "spiral plan: --device-memory: \"80\" is 80 bytes (a number without a unit is bytes, at least 1 MiB): give a unit, such as 80GB or 80GiB\n", stderr.String())
	var stdout bytes.Buffer
	require.Zero(t, run(context.Background(), []string{"plan", "--model", "qwen3-0.6b", "--device-memory", "1.5T", "--json"}, &cliEnv{stdout: &stdout, stderr: &stderr}), stderr.String())
	var rep planReport
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &rep))
	require.Equal(t, int64(1.5e12), rep.DeviceMemory)
}

// TestPlanLoRAAlpha: plan takes train's --lora-alpha, so that a training
// command's LoRA flags can be planned as they are ("unknown flag:
// --lora-alpha", exit 2); it changes no memory planned, and is refused
// without --lora-rank, as --lora-targets is and as train refuses it.
func TestPlanLoRAAlpha(t *testing.T) {
	plan := func(args ...string) (int, string, string) {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), append([]string{"plan", "--model", "qwen3-4b", "--device-memory", "80GB", "--json"}, args...), &cliEnv{stdout: &stdout, stderr: &stderr})
		return code, stdout.String(), stderr.String()
	}
	code, without, stderr := plan("--lora-rank", "8")
	require.Zero(t, code, stderr)
	code, with, stderr := plan("--lora-rank", "8", "--lora-alpha", "16")
	require.Zero(t, code, stderr)
	require.Equal(t, without, with)
	code, _, stderr = plan("--lora-alpha", "16")
	require.Equal(t, exitUsage, code)
	require.Equal(t, "spiral plan: --lora-alpha shapes --lora-rank's adapters; without --lora-rank (a full fine-tune) it would be ignored\n", stderr)
}

// TestPlanBadLoRAValueAlone: a bad --lora-alpha or --lora-targets given
// without --lora-rank is refused for its value alone, as train, sft and
// bench refuse it (paramFlags.artifacts: a bad value is said first, and
// alone); plan said too that the flag shapes --lora-rank's adapters.
func TestPlanBadLoRAValueAlone(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--lora-alpha", "-1"}, "--lora-alpha -1: want > 0, with --lora-alpha / --lora-rank (-1) at most float32's largest value 3.4028234663852886e+38"},
		{[]string{"--lora-targets", "nope"}, `--lora-targets: "nope": want q, k, v, o, gate, up or down (or their _proj names)`},
	} {
		for _, cmd := range [][]string{{"plan", "--model", "qwen3-4b", "--device-memory", "80GB"}, {"train"}} {
			var stderr bytes.Buffer
			args := append(slices.Clone(cmd), tc.args...)
			code := run(context.Background(), args, &cliEnv{stdout: io.Discard, stderr: &stderr})
			require.Equal(t, exitUsage, code, stderr.String())
			require.Equal(t, "spiral "+cmd[0]+": "+tc.want+"\n", stderr.String(), "%q", args)
		}
	}
}

// TestPlanTrainingStepTraffic: plan's host <-> device section said a
// training step's traffic was "the activations of the executor's
// calls"; they stay in device memory (model/activations.go, model
// TestExecutorActivationsStayOnDevice), and what crosses is the batch's
// token inputs, the loss's per-position numbers and the embedding's
// gradient, which the line now names.
func TestPlanTrainingStepTraffic(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"plan", "--model", "qwen3-4b", "--device-memory", "80GB"}, &cliEnv{stdout: &stdout, stderr: &stderr})
	require.Zero(t, code, stderr.String())
	require.Contains(t, stdout.String(), "  per training step: the batch's token inputs, the loss's per-position numbers and the embedding's gradient (not planned; bench train's call_copy_bytes)\n")
	require.NotContains(t, stdout.String(), "activations of the executor's calls")
}
