package model_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/spiral-rl/spiral/model"
	"github.com/spiral-rl/spiral/model/modeltest"
)

// hfFixtureDir holds a real Hugging Face export: a tiny random-weight
// transformers Qwen3ForCausalLM exported by PyTorch's TorchScript exporter
// the way optimum does, with reference logits computed by transformers.
// model/testdata/hfqwen3/make_fixture.py makes it (by hand, not in CI).
const hfFixtureDir = "testdata/hfqwen3"

// copyHFFixture copies the HF fixture's model.onnx and config.json into a
// new temporary directory, for a test that edits or adds files beside
// them, and returns it.
func copyHFFixture(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, name := range []string{"model.onnx", model.ConfigFile} {
		b, err := os.ReadFile(filepath.Join(hfFixtureDir, name))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), b, 0o666))
	}
	return dir
}

// hfFixtureTol is the largest absolute logit error accepted against the
// transformers reference: both sides run fp32, so what is left is summation
// order (the script measured onnxruntime against transformers too; see
// reference.json's onnxruntime_check).
const hfFixtureTol = 1e-4

// hfReference is reference.json as make_fixture.py writes it.
type hfReference struct {
	Batch      int   `json:"batch"`
	Seq        int   `json:"seq"`
	Vocab      int   `json:"vocab"`
	PromptLens []int `json:"prompt_lens"`
	Config     struct {
		Layers   int `json:"num_hidden_layers"`
		Hidden   int `json:"hidden_size"`
		Heads    int `json:"num_attention_heads"`
		KVHeads  int `json:"num_key_value_heads"`
		HeadDim  int `json:"head_dim"`
		VocabCfg int `json:"vocab_size"`
	} `json:"config"`
	InputIDs          [][]int64 `json:"input_ids"`
	AttentionMask     [][]int64 `json:"attention_mask"`
	PositionIDs       [][]int64 `json:"position_ids"`
	PrefillShape      []int     `json:"prefill_logits_shape"`
	PrefillLogits     []float64 `json:"prefill_logits"`
	NextInputIDs      [][]int64 `json:"next_input_ids"`
	NextAttentionMask [][]int64 `json:"next_attention_mask"`
	NextPositionIDs   [][]int64 `json:"next_position_ids"`
	StepShape         []int     `json:"step_logits_shape"`
	StepLogits        []float64 `json:"step_logits"`
}

// loadHFReference reads the reference.json in dir.
func loadHFReference(t *testing.T, dir string) *hfReference {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, "reference.json"))
	require.NoError(t, err)
	var ref hfReference
	require.NoError(t, json.Unmarshal(raw, &ref))
	B, T, V := ref.Batch, ref.Seq, ref.Vocab
	require.Equal(t, []int{B, T, V}, ref.PrefillShape, "prefill_logits_shape")
	require.Equal(t, []int{B, 1, V}, ref.StepShape, "step_logits_shape")
	require.Len(t, ref.PrefillLogits, B*T*V)
	require.Len(t, ref.StepLogits, B*V)
	require.Len(t, ref.InputIDs, B)
	require.Len(t, ref.NextInputIDs, B)
	return &ref
}

// hfFlat concatenates rows into one row-major slice, checking their width.
func hfFlat(t *testing.T, name string, rows [][]int64, width int) []int64 {
	t.Helper()
	out := make([]int64, 0, len(rows)*width)
	for i, r := range rows {
		require.Len(t, r, width, "%s row %d", name, i)
		out = append(out, r...)
	}
	return out
}

// hfMaxErr returns the largest |got - want| over the positions whose mask
// is 1, and where it occurred. got and want are [B, S, V]; mask is [B, S].
func hfMaxErr(got []float32, want []float64, mask []int64, V int) (maxErr float64, at string) {
	for p, m := range mask {
		if m == 0 {
			continue
		}
		for v := 0; v < V; v++ {
			i := p*V + v
			if e := math.Abs(float64(got[i]) - want[i]); e > maxErr || math.IsNaN(e) {
				maxErr, at = e, fmt.Sprintf("flat position %d, token %d: got %g, want %g", p, v, got[i], want[i])
				if math.IsNaN(e) {
					return math.Inf(1), at
				}
			}
		}
	}
	return maxErr, at
}

// TestLMHFQwen3Fixture checks model.LM against Hugging Face transformers: the
// fixture's model.onnx was exported by PyTorch from transformers'
// Qwen3ForCausalLM (head_dim 24 != hidden 64 / 4 heads, 2 KV heads, tied
// embeddings), and reference.json holds the logits transformers computed
// itself for a left-padded batch of three prompts (full sequence, no cache)
// and for one more token per row decoded with transformers' cache. LM runs
// the prefill on an empty (zero-length) cache and then the decode step on
// its own KV cache.
//
// Padded positions are excluded from the prefill comparison: a padded query
// may attend to no real key at all (every key left of it is padding), so its
// attention row is fully masked and its output is whatever each
// implementation makes of an all-masked softmax. transformers' eager path
// adds the float32 minimum to every masked score, so such a row becomes a
// near-uniform average over all keys, future ones included; this export
// carries the same arithmetic (reference.json records 2.6e-6 there), but
// model/qwen3's graph or a fused-attention export need not, and nothing
// depends on it: sampling reads only the last real position of a row, and
// later steps mask padded keys out.
func TestLMHFQwen3Fixture(t *testing.T) {
	ref := loadHFReference(t, hfFixtureDir)
	require.NotEqual(t, ref.Config.Hidden/ref.Config.Heads, ref.Config.HeadDim, "fixture must have head_dim != hidden/heads")
	checkLMReference(t, hfFixtureDir, ref)
}

// TestLMHFQwen2Fixture checks model.LM against transformers'
// Qwen2ForCausalLM as TestLMHFQwen3Fixture does: testdata/hfqwen2 is the
// architecture of Qwen2 and Qwen2.5 (q, k and v projections with a bias,
// drawn at random; no q/k norms; an untied head), exported the same way.
func TestLMHFQwen2Fixture(t *testing.T) {
	dir := filepath.Join("testdata", "hfqwen2")
	checkLMReference(t, dir, loadHFReference(t, dir))
}

// checkLMReference runs the model.onnx in dir with model.LM on ref's
// batch, the prefill on an empty cache and then one decode step on LM's
// own cache, and compares the logits with ref's (transformers'), over the
// real positions.
func checkLMReference(t *testing.T, dir string, ref *hfReference) {
	t.Helper()
	rt := modeltest.Runtime(t)
	B, T, V := ref.Batch, ref.Seq, ref.Vocab

	lm, err := model.OpenLM(rt, filepath.Join(dir, "model.onnx"), model.LMOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, lm.Close()) })

	// The signature comes from the graph's metadata; the expected numbers
	// are the transformers config the script recorded.
	sig := lm.Signature()
	require.Equal(t, ref.Config.Layers, sig.Layers, "layers")
	require.Equal(t, ref.Config.KVHeads, sig.KVHeads, "kv heads")
	require.Equal(t, ref.Config.HeadDim, sig.HeadDim, "head dim")
	require.Equal(t, ref.Config.VocabCfg, sig.Vocab, "vocab")
	require.True(t, sig.HasPositionIDs, "optimum exports have position_ids")
	require.Empty(t, sig.Weights, "a plain export has no weight inputs")

	mask := hfFlat(t, "attention_mask", ref.AttentionMask, T)
	for r, n := range ref.PromptLens {
		real := 0
		for _, m := range mask[r*T : (r+1)*T] {
			real += int(m)
		}
		require.Equal(t, n, real, "row %d: attention_mask ones vs prompt_lens", r)
	}

	ctx := context.Background()
	cache := lm.NewKVCache(B, T+1)
	logits, err := lm.Forward(ctx, model.Step{
		Batch:         B,
		Seq:           T,
		InputIDs:      hfFlat(t, "input_ids", ref.InputIDs, T),
		AttentionMask: mask,
		PositionIDs:   hfFlat(t, "position_ids", ref.PositionIDs, T),
	}, cache, nil)
	require.NoError(t, err)
	require.Equal(t, T, cache.Len())
	prefillErr, at := hfMaxErr(logits, ref.PrefillLogits, mask, V)
	t.Logf("prefill [%d x %d, empty past]: max abs error %.3g over real positions", B, T, prefillErr)
	require.Less(t, prefillErr, hfFixtureTol, "prefill logits vs transformers (%s)", at)

	stepMask := make([]int64, B) // the decoded token of every row is real
	for i := range stepMask {
		stepMask[i] = 1
	}
	logits, err = lm.Forward(ctx, model.Step{
		Batch:         B,
		Seq:           1,
		InputIDs:      hfFlat(t, "next_input_ids", ref.NextInputIDs, 1),
		AttentionMask: hfFlat(t, "next_attention_mask", ref.NextAttentionMask, T+1),
		PositionIDs:   hfFlat(t, "next_position_ids", ref.NextPositionIDs, 1),
	}, cache, logits)
	require.NoError(t, err)
	require.Equal(t, T+1, cache.Len())
	stepErr, at := hfMaxErr(logits, ref.StepLogits, stepMask, V)
	t.Logf("decode step [%d x 1, past %d]: max abs error %.3g", B, T, stepErr)
	require.Less(t, stepErr, hfFixtureTol, "decode logits vs transformers (%s)", at)
}
