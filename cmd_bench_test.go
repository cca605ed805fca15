package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/require"

	"github.com/spiral-rl/spiral/model"
	"github.com/spiral-rl/spiral/model/optim"
	"github.com/spiral-rl/spiral/model/qwen3"
	"github.com/spiral-rl/spiral/rl"
)

// TestMemoryMeterPeakNeverFalls: the peak a bench line reports is the
// largest the process's VmHWM has read so far, since the kernel's figure,
// from approximate counters, was seen to read lower a line later.
func TestMemoryMeterPeakNeverFalls(t *testing.T) {
	reads := [][2]int64{{50, 100}, {60, 120}, {40, 119}, {70, 130}}
	i := 0
	m := &memoryMeter{read: func() (int64, int64) { r := reads[i]; i++; return r[0], r[1] }}
	for _, want := range [][2]int64{{50, 100}, {60, 120}, {40, 120}, {70, 130}} {
		got, err := m.measure()
		require.NoError(t, err)
		require.Equal(t, want, [2]int64{got.RSSBytes, got.PeakRSSBytes})
	}
}

// TestBenchTrainMicroBatches: a bench train step takes train's
// micro-batches (rl.Gradients under --micro-batch-tokens, auto by
// default as train's), where it ran rows x tokens as one call whatever
// their size (and refused --micro-batch-tokens): 5 rows of 64 tokens
// under 128 are train's 3 calls of 2, 2 and 1 rows; by default the
// embedded model's auto bound (train's, 16,384) takes them in one. Its
// rate is train's peak for the embedded model, 1e-4 (it was 1e-6).
func TestBenchTrainMicroBatches(t *testing.T) {
	examples := benchExamples(model.RandomTrainBatch(5, 64, 10, 1), 1)
	for i := range examples {
		examples[i].OldLogProbs = make([]float32, len(examples[i].Completion))
	}
	train, _, err := rl.MicroBatches(examples, 128, 0.2, 0.28)
	require.NoError(t, err)
	require.Len(t, train, 3)
	for _, c := range []struct {
		args  []string
		bound int
		calls int
		lr    float64
	}{
		{[]string{"--micro-batch-tokens", "128"}, 128, len(train), embeddedLR},
		{nil, autoMicroBatchTokens(embeddedModelPath(t), io.Discard), 1, embeddedLR},
		{[]string{"--lr", "3e-5"}, 16384, 1, 3e-5},
	} {
		t.Run(fmt.Sprint(c.args), func(t *testing.T) {
			args := append([]string{"bench", "train", "--rows", "5", "--tokens", "64", "--steps", "1", "--threads", "1"}, c.args...)
			lines := runBenchTrain(t, args)
			require.Len(t, lines, 2)
			for _, l := range lines {
				require.Equal(t, c.bound, l.MicroBatchTokens)
				require.Equal(t, c.lr, l.LR)
			}
			require.Equal(t, c.calls, lines[1].MicroBatches)
		})
	}
}

// runBenchTrain runs spiral with args, a bench train command, requiring
// exit 0, and returns the lines it printed.
func runBenchTrain(t *testing.T, args []string) []benchTrainLine {
	t.Helper()
	var stdout, stderr bytes.Buffer
	require.Zero(t, run(context.Background(), args, &cliEnv{stdout: &stdout, stderr: &stderr}), stderr.String())
	var lines []benchTrainLine
	dec := json.NewDecoder(&stdout)
	for dec.More() {
		var l benchTrainLine
		require.NoError(t, dec.Decode(&l))
		lines = append(lines, l)
	}
	return lines
}

// embeddedModelPath is the embedded model's file, as bench resolves it
// without --model.
func embeddedModelPath(t *testing.T) string {
	var mf modelFlags
	r, err := mf.resolve(io.Discard)
	require.NoError(t, err)
	require.True(t, r.embedded)
	return r.onnx
}

// TestBenchTrainStepIsTrains: bench train's step updates the embedded
// model's weights as a train step does after warmup (rl.Gradients with
// train's options over the same examples, then the update at train's
// peak rate for the embedded model, clipped to 1), bit for bit; with
// 1e-6 for every model, as bench had it, the weights moved 100 times
// less than train's. With --group, the step packs each group's rows in
// one row, as train packs a subset's aggregation traces (bench's rows
// never shared a prompt, so its step never took the packed layout);
// with --pack-prompts=false, as train's --pack-prompts=false.
func TestBenchTrainStepIsTrains(t *testing.T) {
	for _, c := range []struct {
		args   []string
		packed int // rows packed by the step
	}{
		{[]string{"--rows", "3", "--tokens", "48"}, 0},
		{[]string{"--rows", "4", "--tokens", "48", "--group", "2"}, 2},
		{[]string{"--rows", "8", "--tokens", "48", "--group", "4"}, 2},
		{[]string{"--rows", "8", "--tokens", "48", "--group", "4", "--pack-prompts=false"}, 0},
	} {
		t.Run(fmt.Sprint(c.args), func(t *testing.T) { checkBenchTrainStepIsTrains(t, c.args, c.packed) })
	}
}

func checkBenchTrainStepIsTrains(t *testing.T, args []string, packed int) {
	ctx := context.Background()
	fs := pflag.NewFlagSet("bench", pflag.ContinueOnError)
	var f benchFlags
	f.register(fs)
	require.NoError(t, fs.Parse(append(args, "--threads", "1")))
	require.NoError(t, f.validate("train"))
	env := &cliEnv{stdout: io.Discard, stderr: io.Discard}
	r, err := f.mf.resolve(io.Discard)
	require.NoError(t, err)
	// Both policies on the runtime bench opens (one a process).
	rt, bench, vocab, closeBench, err := benchOpen(ctx, env, &f, r, nil, model.PolicyOptions{Train: true, Executor: f.exec.options(), Seed: f.seed})
	require.NoError(t, err)
	defer closeBench()
	require.Equal(t, 49, vocab.VocabLimit)
	dir, err := cachedArtifactsDir(r.onnx, f.arts)
	require.NoError(t, err)
	eo := f.exec.options()
	eo.VocabLimit = vocab.VocabLimit
	train, err := model.OpenPolicy(ctx, rt, r.onnx, dir, model.PolicyOptions{Train: true, Executor: eo, Seed: f.seed})
	require.NoError(t, err)
	defer train.Close()
	benchOpt, err := optim.NewAdamW(optim.DefaultConfig(), bench.Weights)
	require.NoError(t, err)
	trainOpt, err := optim.NewAdamW(optim.DefaultConfig(), train.Weights)
	require.NoError(t, err)
	b := model.RandomTrainBatch(f.rows, f.tokens, 49, f.seed)

	before := slices.Clone(bench.Weights.At(1).Data)
	st := f.trainStep(env, r, bench, benchOpt, b)
	_, err = st.gradients(ctx)
	require.NoError(t, err)
	require.Equal(t, packed, st.learner.packedRows)
	_, err = st.update()
	require.NoError(t, err)
	require.NotEqual(t, before, bench.Weights.At(1).Data, "the step moved %s", bench.Weights.At(1).Name)

	// A train step's learning half (rl.Trainer.TrainStep) on the same
	// examples, with train's defaults.
	cfg := rl.DefaultConfig()
	_, err = rl.Gradients(ctx, train.Train, train.Grads, benchExamples(b, f.group), rl.GradientOptions{
		MicroBatchTokens: autoMicroBatchTokens(r.onnx, io.Discard), ClipLow: cfg.ClipLow, ClipHigh: cfg.ClipHigh, Detached: true, PackPrompts: f.packPrompts})
	require.NoError(t, err)
	_, err = rl.Update(train.Train, train.Weights, train.Grads, trainOpt, optim.Schedule{PeakLR: embeddedLR}, cfg.MaxGradNorm)
	require.NoError(t, err)

	for i := range train.Weights.Len() {
		want, got := train.Weights.At(i), bench.Weights.At(i)
		require.Equal(t, want.Name, got.Name)
		require.Equal(t, want.Data, got.Data, want.Name)
	}
}

// TestBenchExamplesGroup: --group's rows share their group's first
// prompt, of three quarters of the row (an aggregation trace's shape),
// each keeping its own completion; without it each row is its own, half
// prompt.
func TestBenchExamplesGroup(t *testing.T) {
	b := model.RandomTrainBatch(4, 8, 1000, 1)
	ids := func(row, from, to int) []int32 {
		out := make([]int32, 0, to-from)
		for _, id := range b.InputIDs[row*8+from : row*8+to] {
			out = append(out, int32(id))
		}
		return out
	}
	for i, e := range benchExamples(b, 1) {
		require.Equal(t, rl.Example{Prompt: ids(i, 0, 4), Completion: ids(i, 4, 8), Advantage: 1}, e)
	}
	for i, e := range benchExamples(b, 2) {
		require.Equal(t, rl.Example{Prompt: ids(i-i%2, 0, 6), Completion: ids(i, 6, 8), Advantage: 1}, e)
	}
	require.NotEqual(t, ids(0, 0, 6), ids(2, 0, 6))
}

// TestBenchTrainGroupMicroBatches: bench train --group's calls are
// rl's micro-batches of packed rows (rl.PackedMicroBatches, as
// rl.Gradients lays a subset's aggregation traces out with
// PackPrompts), and its lines report the packed rows: 8 rows of 64
// tokens in 2 groups of 4 (48-token prompts, 16-token completions) are
// 2 packed rows of 47 + 4 x 17 = 115 positions; under 100 tokens a call,
// each group is split evenly across 2 packed rows of 2 (81 positions),
// not 3 in a row of 98 and the fourth alone. With --pack-prompts=false
// they are rl.MicroBatches' rows, none packed, as train's
// --pack-prompts=false.
func TestBenchTrainGroupMicroBatches(t *testing.T) {
	for _, c := range []struct {
		bound                  int // --micro-batch-tokens
		pack                   bool
		calls, packed, longest int
	}{
		{0, true, 1, 2, 115},
		{128, true, 2, 2, 115},
		{100, true, 4, 4, 81},
		{128, false, 4, 0, 0},
	} {
		t.Run(fmt.Sprint(c.bound, c.pack), func(t *testing.T) {
			args := []string{"bench", "train", "--rows", "8", "--tokens", "64", "--group", "4", "--steps", "1", "--threads", "1", "--micro-batch-tokens", fmt.Sprint(c.bound),
				"--pack-prompts=" + fmt.Sprint(c.pack)}
			lines := runBenchTrain(t, args)
			require.Len(t, lines, 2)
			step := lines[1]
			require.Equal(t, 4, step.Group)

			examples := benchExamples(model.RandomTrainBatch(8, 64, step.VocabLimit, 1), 4)
			for i := range examples {
				examples[i].OldLogProbs = make([]float32, len(examples[i].Completion))
			}
			layout := rl.MicroBatches
			if c.pack {
				layout = rl.PackedMicroBatches
			}
			train, _, err := layout(examples, step.MicroBatchTokens, 0.2, 0.28)
			require.NoError(t, err)
			positions := 0
			for _, b := range train {
				positions += b.Batch * b.Seq
			}
			require.Equal(t, len(train), step.MicroBatches)
			require.Equal(t, positions, step.Positions)
			require.Equal(t, [3]int{c.calls, c.packed, c.longest}, [3]int{step.MicroBatches, step.PackedRows, step.PackedRowTokens})
		})
	}
}

// TestBenchTrainGroupSplit: a group too many to be worth packing in one
// row is packed in the rows that cost fewest positions: 16 rows of 64
// tokens in one group of 16 (48-token prompt, 16-token completions; 8
// or more in a row cost more attention than apart) are packed 6 + 5 + 5
// in 3 rows of 149, 132 and 132 positions, one call padded to 3 x 149 =
// 447 positions, not 16 rows apart (1,024).
func TestBenchTrainGroupSplit(t *testing.T) {
	args := []string{"bench", "train", "--rows", "16", "--tokens", "64", "--group", "16", "--steps", "1", "--threads", "1"}
	lines := runBenchTrain(t, args)
	require.Len(t, lines, 2)
	step := lines[1]
	require.Equal(t, [4]int{1, 447, 3, 149}, [4]int{step.MicroBatches, step.Positions, step.PackedRows, step.PackedRowTokens})
}

// TestBenchGroupRefused: --group is a usage error where its groups
// cannot be formed, and on bench generate, which has no training step;
// --pack-prompts is one without --group G > 1, whose rows share no
// prompt (halves of random ids: a completion as long as its prompt is
// never worth packing), where it was ignored.
func TestBenchGroupRefused(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"train", "--rows", "6", "--group", "4"}, "spiral bench: --rows 6: want a multiple of --group 4 (groups of rows sharing their prompt)\n"},
		{[]string{"train", "--group", "0"}, "spiral bench: --group 0: want >= 1\n"},
		{[]string{"train", "--pack-prompts=false"}, "spiral bench: --pack-prompts without --group G > 1: no rows share a prompt to pack, so bench train would ignore it\n"},
		{[]string{"train", "--group", "1", "--pack-prompts"}, "spiral bench: --pack-prompts without --group G > 1: no rows share a prompt to pack, so bench train would ignore it\n"},
		{[]string{"generate", "--group", "2"}, "spiral bench: --group is bench train's; bench generate would ignore it\n"},
		{[]string{"generate", "--pack-prompts=false"}, "spiral bench: --pack-prompts is bench train's; bench generate would ignore it\n"},
	} {
		var stderr bytes.Buffer
		code := run(context.Background(), append([]string{"bench"}, c.args...), &cliEnv{stdout: io.Discard, stderr: &stderr})
		require.Equal(t, exitUsage, code, "%q", c.args)
		require.Equal(t, c.want, stderr.String(), "%q", c.args)
	}
}

// TestBenchTrainGroupWithoutPacking: on a model that cannot train packed
// rows (an export without position_ids: model.Executor.PackedRows), a
// --group step trains its rows apart, as train's does, and says so on
// stderr; it did so without a word, its lines only lacking packed_rows.
func TestBenchTrainGroupWithoutPacking(t *testing.T) {
	t.Setenv("SPIRAL_CACHE_DIR", t.TempDir())
	dir := t.TempDir()
	c := qwen3.Tiny()
	c.PositionsFromMask = true
	require.NoError(t, qwen3.WriteDir(dir, c, 17))
	m := filepath.Join(dir, "model.onnx")
	var stdout, stderr bytes.Buffer
	args := []string{"bench", "train", "--model", m, "--vocab-limit", "16", "--rows", "4", "--tokens", "32", "--group", "2", "--steps", "1", "--threads", "1"}
	require.Zero(t, run(context.Background(), args, &cliEnv{stdout: &stdout, stderr: &stderr}), stderr.String())
	require.Equal(t, "spiral: note: --group 2: "+m+" cannot train packed rows (the model reads no position_ids, so the positions of a packed row's completions cannot restart after its prompt): each row trains apart, as train's would\n", stderr.String())
	require.NotContains(t, stdout.String(), "packed_rows")
}

// TestREADMEBenchCommands: every `spiral bench` command README's
// Benchmarks section gives for its figures still parses and validates,
// and one on a placeholder model (`<init-model ...>/model.onnx`, `<it>`:
// a random-weight export of a real config's shape) names the vocabulary
// it measured (--vocab-limit). Those figures ran the logits' whole width,
// as bench did before it took the tokenizer's ids (26f6ec9); init-model
// writes its 49-id tokenizer beside the model, so the same command
// without --vocab-limit now runs a 49-id loss and samples below 49 ids.
func TestREADMEBenchCommands(t *testing.T) {
	b, err := os.ReadFile("README.md")
	require.NoError(t, err)
	_, section, ok := strings.Cut(string(b), "\n## Benchmarks\n")
	require.True(t, ok, "README has no Benchmarks section")
	section, _, _ = strings.Cut(section, "\n## ")
	placeholder := regexp.MustCompile(`<[^>]*>`)
	n := 0
	for _, m := range regexp.MustCompile("`(spiral bench [^`]*)`").FindAllStringSubmatch(section, -1) {
		cmd := m[1]
		t.Run(cmd, func(t *testing.T) {
			// [--flag v] is an option the row measured both ways.
			args := strings.Fields(strings.NewReplacer("[", "", "]", "").Replace(placeholder.ReplaceAllString(cmd, "MODEL")))
			require.GreaterOrEqual(t, len(args), 3)
			fs := pflag.NewFlagSet("bench", pflag.ContinueOnError)
			fs.SetOutput(io.Discard)
			var f benchFlags
			f.register(fs)
			require.NoError(t, fs.Parse(args[3:]))
			require.NoError(t, f.validate(args[2]))
			if strings.Contains(f.mf.model, "MODEL") {
				require.Positive(t, f.vocabLimit, "a placeholder model's command names its vocabulary (--vocab-limit)")
			}
		})
		n++
	}
	require.GreaterOrEqual(t, n, 10, "README's Benchmarks section's bench commands")
}

// TestBenchTokensRange: bench train's --tokens below its range is
// refused once, with its own bound (a prompt and a response: >= 2), not
// also with a count's ">= 1", which contradicted it.
func TestBenchTokensRange(t *testing.T) {
	for _, tokens := range []string{"1", "0", "-3"} {
		var stderr bytes.Buffer
		code := run(context.Background(), []string{"bench", "train", "--tokens", tokens}, &cliEnv{stdout: io.Discard, stderr: &stderr})
		require.Equal(t, exitUsage, code, stderr.String())
		require.Equal(t, "spiral bench: --tokens "+tokens+": want >= 2 (a prompt and a response)\n", stderr.String())
	}
}

// TestBenchTrainGenerateCopies: on the device layer (--resident, the
// CUDA path's twin) bench train --generate-rows reports what each
// generation copied (generate_copy_bytes), as train's device_copy_bytes
// counts the rollouts' copies with the step's: the first copies the
// weights, which the step then finds there (its own first copy is
// AdamW's two moments), later ones only each call's inputs and logits.
// The weights' copy was in no line, and the first step's
// device_copy_bytes, said to hold the parameters, held the moments
// alone. On the host path nothing is copied, and no field is written.
func TestBenchTrainGenerateCopies(t *testing.T) {
	for _, resident := range []bool{true, false} {
		var stdout, stderr bytes.Buffer
		args := []string{"bench", "train", "--rows", "2", "--tokens", "32", "--steps", "2", "--threads", "1",
			"--generate-rows", "3", "--prompt-tokens", "8", "--new-tokens", "2", "--resident=" + fmt.Sprint(resident)}
		require.Zero(t, run(context.Background(), args, &cliEnv{stdout: &stdout, stderr: &stderr}), stderr.String())
		var lines []map[string]any
		dec := json.NewDecoder(&stdout)
		for dec.More() {
			var l map[string]any
			require.NoError(t, dec.Decode(&l))
			lines = append(lines, l)
		}
		require.Len(t, lines, 3)
		if !resident {
			for _, l := range lines {
				require.NotContains(t, l, "generate_copy_bytes")
			}
			continue
		}
		for i, l := range lines[1:] {
			require.Contains(t, l, "generate_copy_bytes", "step %d", i+1)
			weights, gen := l["weights_bytes"].(float64), l["generate_copy_bytes"].(float64)
			step, calls := l["device_copy_bytes"].(float64), l["call_copy_bytes"].(float64)
			if i == 0 {
				require.Greater(t, gen, weights, "the first generation copies the weights")
				require.Equal(t, 2*weights+calls, step, "the first step copies the moments; the weights are there")
			} else {
				require.Positive(t, gen)
				require.Less(t, gen, weights, "the weights stay on the device")
				require.Equal(t, calls, step)
			}
		}
	}
}
