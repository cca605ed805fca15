package memplan_test

import (
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/spiral-rl/spiral/model/lmgraph"
	"github.com/spiral-rl/spiral/model/memplan"
	"github.com/spiral-rl/spiral/model/qwen3"
)

// TestParamsMatchGenerator counts the parameters of graphs the Qwen3
// generator writes: every float initializer whose name ends in .weight.
func TestParamsMatchGenerator(t *testing.T) {
	tied := qwen3.Tiny()
	untied := tied
	untied.TiedEmbeddings = false
	wide := qwen3.Config{Layers: 3, Hidden: 48, Heads: 6, KVHeads: 2, HeadDim: 16, Intermediate: 80, Vocab: 37,
		RopeTheta: 10000, RMSEps: 1e-6}
	for _, c := range []qwen3.Config{tied, untied, wide} {
		m, err := qwen3.Build(c, 1)
		require.NoError(t, err)
		var n int64
		for _, init := range m.Graph().GetInitializer() {
			if !strings.HasSuffix(init.GetName(), ".weight") {
				continue
			}
			size := int64(1)
			for _, d := range init.GetDims() {
				size *= d
			}
			n += size
		}
		require.Equal(t, n, memplan.FromQwen3(c).Params(), "config %+v", c)
	}
}

func TestNamedQwen3_4B(t *testing.T) {
	a, ok := memplan.Named("Qwen3-4B")
	require.True(t, ok)
	// Qwen3-4B's model card: 4.0B parameters, 3.6B without the embedding.
	require.InDelta(t, 4.02e9, float64(a.Params()), 0.01e9)
	require.InDelta(t, 3.63e9, float64(a.Params()-int64(a.Vocab*a.Hidden)), 0.01e9)
	_, ok = memplan.Named("qwen3-5b")
	require.False(t, ok)
}

// TestLoRAParams checks the adapter count by hand on a small shape: every
// projection [in, out] gets r x (in + out).
func TestLoRAParams(t *testing.T) {
	a := memplan.Arch{Layers: 2, Hidden: 8, Intermediate: 16, Heads: 2, KVHeads: 1, HeadDim: 4, Vocab: 10}
	// q 8x8, k 8x4, v 8x4, o 8x8, gate 8x16, up 8x16, down 16x8.
	perRank := int64(16 + 12 + 12 + 16 + 24 + 24 + 24)
	require.Equal(t, 2*3*perRank, a.LoRAParams(3, nil))
	require.Equal(t, 2*3*int64(16+12), a.LoRAParams(3, []string{"q_proj", "v_proj"}), "q 8x8 and v 8x4 only")
	require.Equal(t, 2*3*perRank, a.LoRAParams(3, lmgraph.LoRATargets))
}

// TestTrainPeakUntiedHead: a full fine-tune of an untied head on the
// device layer (Train.Device) plans its transposed gradient sum, vocab x
// hidden floats; on the CPU, where the executor allocates none (model's
// openDeviceGrads runs on the device layer only), a tied head or LoRA
// (the head frozen) plans none.
func TestTrainPeakUntiedHead(t *testing.T) {
	untied, _ := memplan.Named("qwen3-8b")
	tied, _ := memplan.Named("qwen3-4b")
	for _, c := range []struct {
		name   string
		arch   memplan.Arch
		device bool
		lora   int
		want   int64
	}{
		{"untied, device", untied, true, 0, 4 * 151936 * 4096},
		{"untied, CPU", untied, false, 0, 0},
		{"tied, device", tied, true, 0, 0},
		{"untied, device, LoRA", untied, true, 16, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			items, err := memplan.TrainPeak(c.arch, memplan.Train{Rows: 1, Tokens: 512, LoRARank: c.lora, Device: c.device,
				AttentionBytes: 64 << 20, LossChunkBytes: 256 << 20, MLPBytes: 256 << 20})
			require.NoError(t, err)
			got := int64(0)
			for _, it := range items {
				if strings.HasPrefix(it.Name, "untied head's gradient") {
					got += it.Bytes
				}
			}
			require.Equal(t, c.want, got)
		})
	}
}

func TestTrainPeakGrows(t *testing.T) {
	a, _ := memplan.Named("qwen3-0.6b")
	base := memplan.Train{Rows: 1, Tokens: 1024, AttentionBytes: 64 << 20, LossChunkBytes: 256 << 20, MLPBytes: 256 << 20}
	total := func(tr memplan.Train) int64 {
		items, err := memplan.TrainPeak(a, tr)
		require.NoError(t, err)
		return memplan.Total(items)
	}
	p := total(base)
	more := base
	more.Tokens *= 2
	require.Greater(t, total(more), p)
	more = base
	more.Rows *= 2
	require.Greater(t, total(more), p)
	lora := base
	lora.LoRARank = 16
	require.Less(t, total(lora), p, "LoRA keeps no full-size gradients or moments")
	// Static part: weights, gradients and moments are 16 bytes a parameter.
	require.Greater(t, p, 16*a.Params())

	_, err := memplan.TrainPeak(a, memplan.Train{Rows: 0, Tokens: 10})
	require.Error(t, err)
	_, err = memplan.TrainPeak(memplan.Arch{}, base)
	require.ErrorContains(t, err, "layers 0")
}

func TestMaxTokensIsTheLargestThatFits(t *testing.T) {
	a, _ := memplan.Named("qwen3-0.6b")
	tr := memplan.Train{Rows: 2, AttentionBytes: 64 << 20, LossChunkBytes: 256 << 20, MLPBytes: 256 << 20, KeptBytes: 1 << 30}
	for _, budget := range []int64{12 << 30, 24 << 30, 80 << 30} {
		n := memplan.MaxTokens(a, tr, budget)
		require.Positive(t, n)
		fits := func(tokens int) bool {
			tr.Tokens = tokens
			items, err := memplan.TrainPeak(a, tr)
			require.NoError(t, err)
			return memplan.Total(items) <= budget
		}
		require.True(t, fits(n), "budget %d", budget)
		require.False(t, fits(n+64), "budget %d", budget)
	}
	require.Zero(t, memplan.MaxTokens(a, tr, 1<<30), "the weights alone exceed 1 GiB")
}

func TestMaxRows(t *testing.T) {
	a, _ := memplan.Named("qwen3-0.6b")
	g := memplan.Generate{Capacity: 1024, CallBytes: 512 << 20}
	n := memplan.MaxRows(a, g, 24<<30)
	g.Rows = n
	items, err := memplan.GeneratePeak(a, g)
	require.NoError(t, err)
	require.LessOrEqual(t, memplan.Total(items), int64(24<<30))
	g.Rows = n + 1
	items, err = memplan.GeneratePeak(a, g)
	require.NoError(t, err)
	require.Greater(t, memplan.Total(items), int64(24<<30))
	// The KV cache: layers x 2 x kv heads x head dim x 4 bytes a position.
	require.Equal(t, int64(28*2*8*128*4*1024*n), items[1].Bytes/int64(n+1)*int64(n))
}

// TestDeviceTraffic checks the host <-> device traffic by hand on the
// Qwen3-0.6B config, 64 rows over 5,120 positions: per decode step
// 8 x 64 x 5,123 bytes of token ids, positions and mask, 48 x 64 x 8 of
// cache indices and 4 x 64 x 151,936 of logits; the weights and the two
// moments once, a checkpoint the weights and moments, and with LoRA the
// adapters' only (the base goes up once).
func TestDeviceTraffic(t *testing.T) {
	a, ok := memplan.Named("qwen3-0.6b")
	require.True(t, ok)
	g := memplan.Generate{Rows: 64, Capacity: 5120}
	full, err := memplan.DeviceTraffic(a, g, memplan.Train{})
	require.NoError(t, err)
	require.Equal(t, int64(2_622_976+24_576+38_895_616), full.DecodeStep)
	require.Equal(t, 4*a.Params(), full.Weights)
	require.Equal(t, 8*a.Params(), full.Moments)
	require.Equal(t, 12*a.Params(), full.Checkpoint)
	require.Zero(t, full.Frozen)
	lora, err := memplan.DeviceTraffic(a, g, memplan.Train{LoRARank: 16})
	require.NoError(t, err)
	require.Equal(t, full.DecodeStep, lora.DecodeStep)
	require.Equal(t, 8*a.LoRAParams(16, nil), lora.Moments)
	require.Equal(t, 12*a.LoRAParams(16, nil), lora.Checkpoint)
	require.Equal(t, 4*a.Params(), lora.Frozen)
	require.Equal(t, lora.Frozen+4*a.LoRAParams(16, nil), lora.Weights)
}

// TestPeaksPastMaxBytes: a shape whose bytes would overflow int64 (they
// wrapped to negative peaks, and generation "fit" a budget) is refused,
// naming its first item past MaxBytes, and fits no budget.
func TestPeaksPastMaxBytes(t *testing.T) {
	a, _ := memplan.Named("qwen3-4b")
	ok := memplan.Train{Rows: 1, Tokens: 9216, AttentionBytes: 64 << 20, LossChunkBytes: 256 << 20, MLPBytes: 256 << 20}
	for _, c := range []struct {
		name        string
		rows, toks  int
		rank        int
		item, shape string
	}{
		{"rows x tokens past int64", 1 << 32, 1 << 32, 0, "one layer's recompute and backward", "4294967296 rows x 4294967296 tokens"},
		{"many long rows", 1_000_000, 1_000_000, 0, "one layer's recompute and backward", "1000000 rows x 1000000 tokens"},
		{"one long row", 1, 1 << 28, 0, "attention mask tables", "1 rows x 268435456 tokens"},
		{"LoRA rank", 1, 9216, 1 << 50, "LoRA adapters", "LoRA rank 1125899906842624"},
	} {
		t.Run(c.name, func(t *testing.T) {
			tr := ok
			tr.Rows, tr.Tokens, tr.LoRARank = c.rows, c.toks, c.rank
			_, err := memplan.TrainPeak(a, tr)
			require.ErrorContains(t, err, c.shape)
			require.ErrorContains(t, err, c.item)
			require.ErrorContains(t, err, "alone would take over 64 PiB")
		})
	}
	items, err := memplan.TrainPeak(a, ok)
	require.NoError(t, err)
	require.Positive(t, memplan.Total(items))

	g := memplan.Generate{Rows: 100_000_000, Capacity: 100_000_000, CallBytes: 512 << 20}
	_, err = memplan.GeneratePeak(a, g)
	require.ErrorContains(t, err, `100000000 rows x 100000000 positions: "KV cache" alone would take over 64 PiB`)
	require.Zero(t, memplan.MaxRows(a, g, 24<<30), "a row of 10^8 positions fits no 24 GiB")
	g = memplan.Generate{Rows: 1 << 40, Capacity: 1, CallBytes: 512 << 20}
	_, err = memplan.GeneratePeak(a, g)
	require.ErrorContains(t, err, "KV cache")
}

// TestKeptValues: the layers' kept values are every layer's where they
// fit KeptBytes, KeptBytes where they do not, nothing without it.
func TestKeptValues(t *testing.T) {
	a, _ := memplan.Named("qwen3-0.6b")
	layer := int64(1024) * 4 * (1024 + 4*16*128) // one layer of 1 x 1024 tokens
	for _, tc := range []struct {
		kept, want int64
	}{
		{0, 0},
		{-1, 0},
		{layer / 2, layer / 2},
		{5 * layer, 5 * layer},
		{1 << 40, 28 * layer},
	} {
		items, err := memplan.TrainPeak(a, memplan.Train{Rows: 1, Tokens: 1024, KeptBytes: tc.kept})
		require.NoError(t, err)
		var got int64 = -1
		for _, it := range items {
			if it.Name == "layers' values kept for the backward pass" {
				got = it.Bytes
			}
		}
		require.Equal(t, tc.want, got, "KeptBytes %d", tc.kept)
	}
}

// TestCallTemporaries: a generation call takes at least one row, so the
// call's temporaries are the budget or, where it is more, one row of a
// prefill chunk over the whole capacity, by hand for Qwen3-4B (8 KV
// heads, 32 heads, head_dim 128, vocabulary 151,936), 256 positions over
// 5,120: 4 x (2 x 8 x 5,376 x 128 + 13 x 32 x 256 x 5,376 + 151,936) =
// 4 x (11,010,048 + 572,522,496 + 151,936) bytes.
func TestCallTemporaries(t *testing.T) {
	a, _ := memplan.Named("qwen3-4b")
	const row = 4 * (11_010_048 + 572_522_496 + 151_936)
	for _, c := range []struct {
		name      string
		chunk     int
		callBytes int64
		want      int64
		past      bool
	}{
		{"no prefill planned", 0, 512 << 20, 512 << 20, false},
		{"a row past the budget", 256, 512 << 20, row, true},
		{"a row within the budget", 256, 4 << 30, 4 << 30, false},
	} {
		items, err := memplan.GeneratePeak(a, memplan.Generate{Rows: 64, Capacity: 5120, CallBytes: c.callBytes, Chunk: c.chunk})
		require.NoError(t, err)
		require.Equal(t, c.want, items[2].Bytes, c.name)
		require.Equal(t, c.past, strings.Contains(items[2].Name, "past the budget"), c.name)
	}
}

// TestGeneratePeakInTraining: the rollouts of a training run hold its
// gradients and AdamW moments (allocated for the whole run; only the KV
// cache is released for the step), and with LoRA read the adapters too.
// Qwen3-4B (4,022,468,096 parameters; LoRA r = 16 on every projection:
// 33,030,144), 5,120 positions a row: a row is 36 x 2 x 8 x 128 x 4 x
// 5,120 bytes of cache and 151,936 x 12 of logits (1,511,772,672), beside
// 512 MiB of call temporaries and the runtime's 400 MiB. On 80 GB a full
// fine-tune's 16 bytes a parameter leave room for 9 rows, not the 41 that
// generation alone fits.
func TestGeneratePeakInTraining(t *testing.T) {
	a, _ := memplan.Named("qwen3-4b")
	const params, lora = int64(4_022_468_096), int64(33_030_144)
	require.Equal(t, params, a.Params())
	require.Equal(t, lora, a.LoRAParams(16, nil))
	for _, c := range []struct {
		name     string
		training *memplan.Train
		want     map[string]int64 // items besides the KV cache, call, logits and runtime
		rows     int              // MaxRows on 80 GB
	}{
		{"generation alone", nil, map[string]int64{"weights": 4 * params}, 41},
		{"full fine-tune", &memplan.Train{}, map[string]int64{"weights": 4 * params,
			"gradients (held by training)": 4 * params, "AdamW moments (held by training)": 8 * params}, 9},
		{"LoRA r = 16", &memplan.Train{LoRARank: 16}, map[string]int64{"weights": 4*params + 4*lora,
			"gradients (held by training)": 4 * lora, "AdamW moments (held by training)": 8 * lora}, 41},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := memplan.Generate{Rows: 2, Capacity: 5120, CallBytes: 512 << 20, Training: c.training}
			items, err := memplan.GeneratePeak(a, g)
			require.NoError(t, err)
			got := map[string]int64{}
			for _, it := range items {
				got[it.Name] = it.Bytes
			}
			want := map[string]int64{"KV cache": 2 * 36 * 2 * 8 * 128 * 4 * 5120, "one call's temporaries": 512 << 20,
				"logits and sampling": 2 * 151936 * 12, "runtime (ONNX Runtime, sessions, Go)": memplan.Baseline}
			for k, v := range c.want {
				want[k] = v
			}
			require.Equal(t, want, got)
			require.Equal(t, c.rows, memplan.MaxRows(a, g, 80e9))
		})
	}
}

// TestTrainPeakSelection: a full fine-tune that --train and --freeze
// narrow plans the gradients (4 bytes), AdamW's two moments (8) and one
// layer's backward gradients of the selected tensors only, and the
// untied head's transposed gradient only where the head is trained. By
// hand, on 2 layers of hidden 8, MLP 16, 2 heads and 1 KV head of 4, a
// vocabulary of 10: each layer holds 600 parameters (input and
// post-attention norms 8 + 8, q_proj 8x8 = 64, k_proj and v_proj 8x4 =
// 32 each, q_norm and k_norm 4 each, o_proj 64, gate_proj and up_proj
// 8x16 = 128 each, down_proj 128: its MLP 384, its norms 24), the
// embedding 80, the final norm 8, the untied head 80: 1,368 in all, tied
// 1,288. One layer's working set at 1 x 4 tokens is 4 x 4 x (10 x 8 +
// 8 x 8) = 2,304 bytes, plus its trained parameters' gradients.
func TestTrainPeakSelection(t *testing.T) {
	untied := memplan.Arch{Layers: 2, Hidden: 8, Intermediate: 16, Heads: 2, KVHeads: 1, HeadDim: 4, Vocab: 10}
	tied := untied
	tied.Tied = true
	require.Equal(t, int64(1368), untied.Params())
	require.Equal(t, int64(1288), tied.Params())
	re := regexp.MustCompile
	for _, c := range []struct {
		name           string
		arch           memplan.Arch
		sel            lmgraph.Selection
		trained, layer int64
		head           bool
	}{
		{"all", untied, lmgraph.Selection{}, 1368, 600, true},
		{"--freeze embed", untied, lmgraph.Selection{Freeze: re(`embed`)}, 1288, 600, true},
		{"--freeze lm_head", untied, lmgraph.Selection{Freeze: re(`lm_head`)}, 1288, 600, false},
		{"--train layers.1.mlp", untied, lmgraph.Selection{Train: re(`layers\.1\.mlp`)}, 384, 384, false},
		{"--train layers --freeze layers.0.", untied, lmgraph.Selection{Train: re(`layers`), Freeze: re(`layers\.0\.`)}, 600, 600, false},
		{"--train norm", untied, lmgraph.Selection{Train: re(`norm`)}, 2*24 + 8, 24, false},
		{"tied, all", tied, lmgraph.Selection{}, 1288, 600, false},
		{"tied, --freeze embed", tied, lmgraph.Selection{Freeze: re(`embed_tokens`)}, 1208, 600, false},
		{"tied, --train embed|lm_head (no lm_head)", tied, lmgraph.Selection{Train: re(`embed|lm_head`)}, 80, 0, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := c.arch.Trained(c.sel)
			require.NoError(t, err)
			require.Equal(t, memplan.Trained{Params: c.trained, Layer: c.layer, Head: c.head}, got)
			items, err := memplan.TrainPeak(c.arch, memplan.Train{Rows: 1, Tokens: 4, Selection: c.sel, Device: true})
			require.NoError(t, err)
			bytes := map[string]int64{}
			for _, it := range items {
				bytes[it.Name] = it.Bytes
			}
			require.Equal(t, 4*c.arch.Params(), bytes["weights"])
			require.Equal(t, 4*c.trained, bytes["gradients"])
			require.Equal(t, 8*c.trained, bytes["AdamW moments"])
			require.Equal(t, 2304+4*c.layer, bytes["one layer's recompute and backward"])
			head, ok := bytes["untied head's gradient, transposed (device)"]
			require.Equal(t, c.head, ok)
			if c.head {
				require.Equal(t, int64(4*10*8), head)
			}
			gen, err := memplan.GeneratePeak(c.arch, memplan.Generate{Rows: 1, Capacity: 4, Training: &memplan.Train{Selection: c.sel}})
			require.NoError(t, err)
			held := map[string]int64{}
			for _, it := range gen {
				held[it.Name] = it.Bytes
			}
			require.Equal(t, 4*c.trained, held["gradients (held by training)"])
			require.Equal(t, 8*c.trained, held["AdamW moments (held by training)"])
			traffic, err := memplan.DeviceTraffic(c.arch, memplan.Generate{Rows: 1, Capacity: 4}, memplan.Train{Selection: c.sel})
			require.NoError(t, err)
			require.Equal(t, 8*c.trained, traffic.Moments)
			require.Equal(t, 12*c.trained, traffic.Checkpoint)
			require.Equal(t, 4*(c.arch.Params()-c.trained), traffic.Frozen)
		})
	}
	// The refusal lists the parameters' names, where it pointed to
	// spiral artifacts, which reads a model file memplan's callers need
	// not have.
	const names = "the model's parameters: model.embed_tokens.weight, model.layers.N.{input_layernorm, self_attn.q_proj, self_attn.k_proj, " +
		"self_attn.v_proj, self_attn.q_norm, self_attn.k_norm, self_attn.o_proj, post_attention_layernorm, mlp.gate_proj, mlp.up_proj, mlp.down_proj}.weight " +
		"for N in 0..1, model.norm.weight, lm_head.weight"
	for _, c := range []struct {
		name string
		tr   memplan.Train
		want string
	}{
		{"nothing left", memplan.Train{Selection: lmgraph.Selection{Freeze: re(`.`)}},
			`memplan: lmgraph: no parameter left to train: --freeze "." matches every one (` + names + `)`},
		{"no match", memplan.Train{Selection: lmgraph.Selection{Train: re(`attn\.z_proj`)}},
			`memplan: lmgraph: --train "attn\\.z_proj" matches no parameter (` + names + `)`},
		{"with LoRA", memplan.Train{LoRARank: 2, Selection: lmgraph.Selection{Freeze: re(`embed`)}},
			"memplan: LoRA trains adapters only: a selection of the parameters does not combine with it"},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.tr.Rows, c.tr.Tokens = 1, 4
			_, err := memplan.TrainPeak(untied, c.tr)
			require.EqualError(t, err, c.want)
			var se *lmgraph.SelectionError
			require.Equal(t, c.tr.LoRARank == 0, errors.As(err, &se), "an *lmgraph.SelectionError for the command line")
		})
	}
}

// BenchmarkPlanSearches measures MaxTokens' and MaxRows' searches (16
// and 20 tries) beside one TrainPeak and GeneratePeak on a config of
// 4,000 layers: each search selects the trained parameters once, so it
// costs a few peaks, not 16 or 20 (it selected at each try: MaxTokens
// took 11x a peak).
func BenchmarkPlanSearches(b *testing.B) {
	a, _ := memplan.Named("qwen3-0.6b")
	a.Layers = 4000
	tr := memplan.Train{Rows: 1, Tokens: 64, AttentionBytes: 64 << 20, LossChunkBytes: 256 << 20, MLPBytes: 256 << 20, KeptBytes: 1 << 30}
	g := memplan.Generate{Rows: 1, Capacity: 1024, CallBytes: 512 << 20, Training: &tr}
	for _, c := range []struct {
		name string
		run  func() error
	}{
		{"TrainPeak", func() error { _, err := memplan.TrainPeak(a, tr); return err }},
		{"GeneratePeak", func() error { _, err := memplan.GeneratePeak(a, g); return err }},
		{"MaxTokens", func() error {
			if memplan.MaxTokens(a, tr, 1<<50) == 0 {
				return errors.New("MaxTokens: none fits")
			}
			return nil
		}},
		{"MaxRows", func() error {
			if memplan.MaxRows(a, g, 1<<50) == 0 {
				return errors.New("MaxRows: none fits")
			}
			return nil
		}},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if err := c.run(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestTrainPeakKnown: a Train's Known, what a fine-tune trains found
// otherwise than by name, is planned as given, its selection not read
// (a --train matching no name of Parameters would refuse it), its head
// counted (on the device layer); LoRA, which trains adapters, refuses
// it as a selection.
func TestTrainPeakKnown(t *testing.T) {
	a, _ := memplan.Named("qwen3-0.6b")
	a.Tied = false
	known := &memplan.Trained{Params: 1000, Layer: 600, Head: true}
	items, err := memplan.TrainPeak(a, memplan.Train{Rows: 1, Tokens: 64, Known: known, Selection: lmgraph.Selection{Train: regexp.MustCompile("^val_")}, Device: true})
	require.NoError(t, err)
	got := map[string]int64{}
	for _, it := range items {
		got[it.Name] = it.Bytes
	}
	require.Equal(t, int64(4000), got["gradients"])
	require.Equal(t, int64(8000), got["AdamW moments"])
	require.Equal(t, 4*int64(a.Vocab)*int64(a.Hidden), got["untied head's gradient, transposed (device)"])
	h, qd := int64(a.Hidden), int64(a.Heads*a.HeadDim)
	require.Equal(t, 64*4*(10*h+8*qd)+4*600, got["one layer's recompute and backward"])
	_, err = memplan.TrainPeak(a, memplan.Train{Rows: 1, Tokens: 64, LoRARank: 8, Known: known})
	require.EqualError(t, err, "memplan: LoRA trains adapters only: a selection of the parameters does not combine with it")
}

// TestTrainPeakWorkingSetsWithinShape: the attention block and the loss
// chunk are the executor's bounds where the shape needs more, and what
// the shape needs where it needs less, as the MLP chunk always was: on
// the embedded model's shape (3 layers of 64, 4 heads of 32, a
// vocabulary of 49), one row of 64 tokens, plan counted the attention
// block at its 64 MiB bound and the loss tile at 256 MiB, 0.31 GiB of a
// step whose ONNX Runtime tensors peak at 0.77 MB (spiral bench train's
// arena peak_in_use_bytes, 765,695). The executor's core call holds
// 64 x 64 queries x keys x 6 tensors x 4 bytes = 98,304 bytes; its loss,
// 32 positions, 32 x 49 x 6 x 4 = 37,632 (the table head's: 32 x 49 x 4
// x 4 + the table's gradient block 49 x 64 x 4, the same), beside the
// hidden states 64 x 4 x (2 x 32 + 64) = 32,768. Qwen3-4B's 9,216
// tokens keep both bounds.
func TestTrainPeakWorkingSetsWithinShape(t *testing.T) {
	bounds := memplan.Train{AttentionBytes: 64 << 20, LossChunkBytes: 256 << 20, MLPBytes: 256 << 20}
	embedded := memplan.Arch{Type: "qwen3", Layers: 3, Hidden: 64, Intermediate: 128, Heads: 4, KVHeads: 2, HeadDim: 32, Vocab: 49, Tied: true}
	qwen3_4b, _ := memplan.Named("qwen3-4b")
	for _, c := range []struct {
		name         string
		a            memplan.Arch
		tokens       int
		attn, lossTl int64
	}{
		{"embedded, 64 tokens", embedded, 64, 98_304, 32_768 + 37_632},
		{"qwen3-4b, 9216 tokens", qwen3_4b, 9216, 64 << 20, 2560*4*(2*4608+9216) + 256<<20},
	} {
		t.Run(c.name, func(t *testing.T) {
			tr := bounds
			tr.Rows, tr.Tokens = 1, c.tokens
			items, err := memplan.TrainPeak(c.a, tr)
			require.NoError(t, err)
			got := map[string]int64{}
			for _, it := range items {
				got[it.Name] = it.Bytes
			}
			require.Equal(t, c.attn, got["attention block (one head, a block of queries)"])
			require.Equal(t, c.lossTl, got["loss tile and its gradients"])
		})
	}
}

// TestGeneratePeakInTrainingUntiedHead: the device layer allocates the
// transposed sum of a trained untied head's gradient (model's
// deviceGrads.columnSum, vocab x hidden floats) when the executor opens
// and holds it until it closes, through every rollout of the run, as
// the gradients and moments: generation within training holds it too.
// Qwen3-8B, untied (151,936 x 4,096): its 2.32 GiB were in the training
// step's peak but not in generation's within train, whose rows were
// planned without them. LoRA (the head frozen), a selection freezing
// the head and a run on the CPU (no device layer) hold none.
func TestGeneratePeakInTrainingUntiedHead(t *testing.T) {
	a, _ := memplan.Named("qwen3-8b")
	const name = "untied head's gradient, transposed (device, held by training)"
	for _, c := range []struct {
		name     string
		training memplan.Train
		want     int64
	}{
		{"full fine-tune", memplan.Train{Device: true}, 4 * 151936 * 4096},
		{"full fine-tune, CPU", memplan.Train{}, 0},
		{"head frozen", memplan.Train{Device: true, Selection: lmgraph.Selection{Freeze: regexp.MustCompile("lm_head")}}, 0},
		{"LoRA", memplan.Train{Device: true, LoRARank: 16}, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			items, err := memplan.GeneratePeak(a, memplan.Generate{Rows: 2, Capacity: 5120, CallBytes: 512 << 20, Training: &c.training})
			require.NoError(t, err)
			got := int64(0)
			for _, it := range items {
				if it.Name == name {
					got = it.Bytes
				}
			}
			require.Equal(t, c.want, got)
		})
	}
}
