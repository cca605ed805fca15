package qwen3

import (
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"

	"google.golang.org/protobuf/proto"

	"github.com/spiral-rl/spiral/model/atomicfile"
	"github.com/spiral-rl/spiral/model/onnx"
	"github.com/spiral-rl/spiral/model/onnx/onnxpb"
)

// Opset is the standard ONNX opset version of generated graphs, as HF
// optimum exports.
const Opset = 18

// InitStd is the standard deviation of the normal initialisation of
// embedding and projection weights (transformers' initializer_range);
// RMSNorm weights start at 1.
const InitStd = 0.02

// MaskValue is the additive attention bias of a masked key: the lowest
// finite float32, as transformers uses torch.finfo(float32).min. Being
// finite, a query row with every key masked (a padding position) gets a
// uniform softmax instead of NaN.
const MaskValue = -math.MaxFloat32

// Graph input and output names, and the symbolic dims of their shapes, as
// HF optimum and onnx-community exports name them.
const (
	InputIDs      = "input_ids"
	AttentionMask = "attention_mask"
	PositionIDs   = "position_ids"
	Logits        = "logits"

	DimBatch = "batch_size"
	DimSeq   = "sequence_length"
	DimPast  = "past_sequence_length"
	DimTotal = "total_sequence_length"
)

// PastKey returns the name of layer i's key cache input, past_key_values.{i}.key.
func PastKey(i int) string { return fmt.Sprintf("past_key_values.%d.key", i) }

// PastValue returns the name of layer i's value cache input.
func PastValue(i int) string { return fmt.Sprintf("past_key_values.%d.value", i) }

// PresentKey returns the name of layer i's key cache output, present.{i}.key.
func PresentKey(i int) string { return fmt.Sprintf("present.%d.key", i) }

// PresentValue returns the name of layer i's value cache output.
func PresentValue(i int) string { return fmt.Sprintf("present.%d.value", i) }

// Initializer names, as in Hugging Face's Qwen3ForCausalLM state dict.
const (
	EmbedWeight  = "model.embed_tokens.weight" // [vocab, hidden]
	NormWeight   = "model.norm.weight"         // [hidden]
	LMHeadWeight = "lm_head.weight"            // [hidden, vocab], untied models only
)

// LayerWeight returns the initializer name of a weight of layer i, such as
// LayerWeight(0, "self_attn.q_proj") = "model.layers.0.self_attn.q_proj.weight".
func LayerWeight(i int, module string) string {
	return fmt.Sprintf("model.layers.%d.%s.weight", i, module)
}

// Param is one weight of the graph Build makes: its initializer name and
// shape ([in, out] for a projection).
type Param struct {
	Name  string
	Shape []int64
}

// Params lists the weights of the graph Build makes for c, all trainable,
// in the order Build creates them: the embedding, each layer's, the final
// norm and, untied, the head (a tied head is the embedding's Transpose).
func Params(c Config) []Param {
	ps := []Param{{EmbedWeight, []int64{int64(c.Vocab), int64(c.Hidden)}}}
	for i := range c.Layers {
		for _, p := range layerParams(c) {
			ps = append(ps, Param{LayerWeight(i, p.module), p.dims})
		}
	}
	ps = append(ps, Param{NormWeight, []int64{int64(c.Hidden)}})
	if !c.TiedEmbeddings {
		ps = append(ps, Param{LMHeadWeight, []int64{int64(c.Hidden), int64(c.Vocab)}})
	}
	return ps
}

// The modules of one layer, in initialisation order, with their shapes.
func layerParams(c Config) []struct {
	module string
	dims   []int64
	norm   bool
} {
	h, q, kv, d, m := int64(c.Hidden), int64(c.Heads*c.HeadDim), int64(c.KVHeads*c.HeadDim), int64(c.HeadDim), int64(c.Intermediate)
	return []struct {
		module string
		dims   []int64
		norm   bool
	}{
		{"input_layernorm", []int64{h}, true},
		{"self_attn.q_proj", []int64{h, q}, false},
		{"self_attn.k_proj", []int64{h, kv}, false},
		{"self_attn.v_proj", []int64{h, kv}, false},
		{"self_attn.q_norm", []int64{d}, true},
		{"self_attn.k_norm", []int64{d}, true},
		{"self_attn.o_proj", []int64{q, h}, false},
		{"post_attention_layernorm", []int64{h}, true},
		{"mlp.gate_proj", []int64{h, m}, false},
		{"mlp.up_proj", []int64{h, m}, false},
		{"mlp.down_proj", []int64{m, h}, false},
	}
}

// InvFreq returns the rotary inverse frequencies θ^(-2i/HeadDim),
// i = 0 .. HeadDim/2-1, rounded to float32: the constant the graph
// multiplies position_ids by.
func InvFreq(c Config) []float32 {
	out := make([]float32, c.HeadDim/2)
	for i := range out {
		out[i] = float32(1 / math.Pow(c.RopeTheta, float64(2*i)/float64(c.HeadDim)))
	}
	return out
}

// Build returns the Qwen3 decoder for c with weights drawn from seed: the
// graph of a HF optimum export (see the package documentation for its
// inputs, outputs and weight layout). Equal (c, seed) give byte-identical
// models.
func Build(c Config, seed uint64) (*onnx.Model, error) {
	return BuildContext(context.Background(), c, seed)
}

// BuildContext is Build, ended early with ctx's error when ctx ends
// (checked before each weight is drawn).
func BuildContext(ctx context.Context, c Config, seed uint64) (*onnx.Model, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(seed, 0x7177656e33)) // "qwen3"
	g := &graph{b: onnx.NewGraphBuilder("qwen3"), c: c}
	g.build(func(name string, dims []int64, norm bool) string {
		if ctx.Err() != nil {
			// The model is discarded: no weights are drawn from here on.
			return g.b.Initializer(name, onnx.NewTensor("", []int64{0}, []float32{}))
		}
		n := onnx.NumElements(dims)
		data := make([]float32, n)
		for i := range data {
			if norm {
				data[i] = 1
			} else {
				data[i] = float32(rng.NormFloat64() * InitStd)
			}
		}
		return g.b.Initializer(name, onnx.NewTensor("", dims, data))
	})
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m := g.b.Model(Opset)
	m.Proto.DocString = proto.String(fmt.Sprintf("Qwen3 decoder built by spiral: %d layers, hidden %d, %d heads / %d KV heads of %d, MLP %d, vocab %d, rope theta %g, rms eps %g, tied embeddings %v; seed %d",
		c.Layers, c.Hidden, c.Heads, c.KVHeads, c.HeadDim, c.Intermediate, c.Vocab, c.RopeTheta, c.RMSEps, c.TiedEmbeddings, seed))
	return m, nil
}

// graph holds the builder and the values shared by all layers.
type graph struct {
	b *onnx.GraphBuilder
	c Config

	two, eps, lastAxis string // RMSNorm constants
	cos, sin           string // [batch, 1, seq, head_dim]
	bias               string // [batch, 1, seq, total] additive mask
	half, full         string // rotate_half slice bounds: [head_dim/2], [head_dim]
	zeroStart          string // [0]
}

// param creates an initializer: name, dims, and whether it is a norm
// weight (ones) rather than a projection (random normal).
type param func(name string, dims []int64, norm bool) string

func (g *graph) build(newParam param) {
	b, c := g.b, g.c
	P, D := onnx.P, onnx.D
	ids := b.Input(InputIDs, onnx.Int64, P(DimBatch), P(DimSeq))
	mask := b.Input(AttentionMask, onnx.Int64, P(DimBatch), P(DimTotal))
	var pos string
	if !c.PositionsFromMask {
		pos = b.Input(PositionIDs, onnx.Int64, P(DimBatch), P(DimSeq))
	}
	pastK := make([]string, c.Layers)
	pastV := make([]string, c.Layers)
	for i := range c.Layers {
		kvDims := []onnx.Dim{P(DimBatch), D(int64(c.KVHeads)), P(DimPast), D(int64(c.HeadDim))}
		pastK[i] = b.Input(PastKey(i), onnx.Float32, kvDims...)
		pastV[i] = b.Input(PastValue(i), onnx.Float32, kvDims...)
	}

	embed := newParam(EmbedWeight, []int64{int64(c.Vocab), int64(c.Hidden)}, false)
	b.SetScope("/model/embed_tokens")
	x := b.Node("Gather", []string{embed, ids}, onnx.AttrInt("axis", 0)) // [B, S, hidden]

	if c.PositionsFromMask {
		b.SetScope("/model/positions")
		pos = g.positionsFromMask(ids, mask)
	}
	b.SetScope("/model/rotary_emb")
	g.rotary(pos)
	b.SetScope("/model/mask")
	g.mask(ids, mask, pastK[0])
	b.SetScope("/model/norm_constants")
	g.two = b.ConstFloat32(2)
	g.eps = b.ConstFloat32(float32(c.RMSEps))
	g.lastAxis = b.ConstInt64s(-1)

	for i := range c.Layers {
		w := map[string]string{}
		for _, p := range layerParams(c) {
			w[p.module] = newParam(LayerWeight(i, p.module), p.dims, p.norm)
		}
		scope := fmt.Sprintf("/model/layers.%d", i)
		b.SetScope(scope + "/input_layernorm")
		h := g.rmsNorm(x, w["input_layernorm"])
		b.SetScope(scope + "/self_attn")
		a := g.attention(i, h, w, pastK[i], pastV[i])
		b.SetScope(scope)
		x = b.Node("Add", []string{x, a})
		b.SetScope(scope + "/post_attention_layernorm")
		h = g.rmsNorm(x, w["post_attention_layernorm"])
		b.SetScope(scope + "/mlp")
		gate := b.Node("MatMul", []string{h, w["mlp.gate_proj"]})
		up := b.Node("MatMul", []string{h, w["mlp.up_proj"]})
		act := b.Node("Mul", []string{gate, b.Node("Sigmoid", []string{gate})}) // SiLU
		mlp := b.Node("MatMul", []string{b.Node("Mul", []string{act, up}), w["mlp.down_proj"]})
		b.SetScope(scope)
		x = b.Node("Add", []string{x, mlp})
	}

	normW := newParam(NormWeight, []int64{int64(c.Hidden)}, true)
	b.SetScope("/model/norm")
	x = g.rmsNorm(x, normW)
	b.SetScope("/lm_head")
	var head string
	if c.TiedEmbeddings {
		head = b.Node("Transpose", []string{embed}, onnx.AttrInts("perm", 1, 0)) // [hidden, vocab]
	} else {
		head = newParam(LMHeadWeight, []int64{int64(c.Hidden), int64(c.Vocab)}, false)
	}
	b.NodeTo("MatMul", []string{x, head}, []string{Logits})
	b.SetScope("")

	b.Output(Logits, onnx.Float32, P(DimBatch), P(DimSeq), D(int64(c.Vocab)))
	for i := range c.Layers {
		kvDims := []onnx.Dim{P(DimBatch), D(int64(c.KVHeads)), P(DimTotal), D(int64(c.HeadDim))}
		b.Output(PresentKey(i), onnx.Float32, kvDims...)
		b.Output(PresentValue(i), onnx.Float32, kvDims...)
	}
}

// positionsFromMask returns the positions of the seq new tokens
// [batch, seq]: the count of attended slots before each, cumsum(mask) - 1
// over the whole mask, clipped at 0 and cut to the last seq columns.
func (g *graph) positionsFromMask(ids, mask string) string {
	b := g.b
	dim := func(v string, i int64) string { // [1] dim i of v
		return b.Node("Slice", []string{b.Node("Shape", []string{v}), b.ConstInt64s(i), b.ConstInt64s(i + 1)})
	}
	seq, total := dim(ids, 1), dim(mask, 1)
	cum := b.Node("CumSum", []string{mask, b.ConstInt64(1)})
	pos := b.Node("Max", []string{b.Node("Sub", []string{cum, b.ConstInt64(1)}), b.ConstInt64(0)})
	return b.Node("Slice", []string{pos, b.Node("Sub", []string{total, seq}), total, b.ConstInt64s(1)})
}

// rotary computes cos and sin of the rotary angles
// position_ids · inv_freq, duplicated over both halves of head_dim (HF's
// cat(freqs, freqs)), shaped [batch, 1, seq, head_dim] to broadcast over
// heads.
func (g *graph) rotary(pos string) {
	b := g.b
	invFreq := b.Const(onnx.NewTensor("", []int64{int64(g.c.HeadDim / 2)}, InvFreq(g.c)))
	posF := b.Node("Cast", []string{pos}, onnx.AttrInt("to", int64(onnx.Float32))) // [B, S]
	posF = b.Node("Unsqueeze", []string{posF, b.ConstInt64s(2)})                   // [B, S, 1]
	freqs := b.Node("Mul", []string{posF, invFreq})                                // [B, S, D/2]
	angles := b.Node("Concat", []string{freqs, freqs}, onnx.AttrInt("axis", -1))   // [B, S, D]
	headAxis := b.ConstInt64s(1)
	g.cos = b.Node("Unsqueeze", []string{b.Node("Cos", []string{angles}), headAxis}) // [B, 1, S, D]
	g.sin = b.Node("Unsqueeze", []string{b.Node("Sin", []string{angles}), headAxis})
	g.zeroStart = b.ConstInt64s(0)
	g.half = b.ConstInt64s(int64(g.c.HeadDim / 2))
	g.full = b.ConstInt64s(int64(g.c.HeadDim))
}

// mask computes the additive attention bias [batch, 1, seq, total]: 0
// where key slot j may be seen by query slot past+q (j <= past+q, causal
// over cache slots, and attention_mask[b, j] != 0), MaskValue elsewhere.
func (g *graph) mask(ids, mask, past0 string) {
	b := g.b
	idx := func(v string, i int64) string { // scalar dim i of v
		return b.Node("Gather", []string{b.Node("Shape", []string{v}), b.ConstInt64(i)}, onnx.AttrInt("axis", 0))
	}
	seq := idx(ids, 1)
	past := idx(past0, 2)
	total := idx(mask, 1)
	one := b.ConstInt64(1)
	qPos := b.Node("Range", []string{past, b.Node("Add", []string{past, seq}), one}) // [S]
	kPos := b.Node("Range", []string{b.ConstInt64(0), total, one})                   // [T]
	qPos = b.Node("Unsqueeze", []string{qPos, b.ConstInt64s(1)})                     // [S, 1]
	kPos = b.Node("Unsqueeze", []string{kPos, b.ConstInt64s(0)})                     // [1, T]
	causal := b.Node("LessOrEqual", []string{kPos, qPos})                            // [S, T]
	keep := b.Node("Cast", []string{mask}, onnx.AttrInt("to", int64(onnx.Bool)))     // [B, T]
	keep = b.Node("Unsqueeze", []string{keep, b.ConstInt64s(1, 2)})                  // [B, 1, 1, T]
	allowed := b.Node("And", []string{keep, causal})                                 // [B, 1, S, T]
	g.bias = b.Node("Where", []string{allowed, b.ConstFloat32(0), b.ConstFloat32(MaskValue)})
}

// rmsNorm returns w · x / sqrt(mean(x², last axis) + eps), as HF's
// Qwen3RMSNorm (in float32).
func (g *graph) rmsNorm(x, w string) string {
	b := g.b
	ms := b.Node("ReduceMean", []string{b.Node("Pow", []string{x, g.two}), g.lastAxis}, onnx.AttrInt("keepdims", 1))
	inv := b.Node("Reciprocal", []string{b.Node("Sqrt", []string{b.Node("Add", []string{ms, g.eps})})})
	return b.Node("Mul", []string{w, b.Node("Mul", []string{x, inv})})
}

// rope applies the rotary embedding to x [B, heads, S, D]:
// x·cos + rotate_half(x)·sin, rotate_half(x) = cat(-x[D/2:], x[:D/2]).
func (g *graph) rope(x string) string {
	b := g.b
	axis := g.lastAxis
	x1 := b.Node("Slice", []string{x, g.zeroStart, g.half, axis})
	x2 := b.Node("Slice", []string{x, g.half, g.full, axis})
	rot := b.Node("Concat", []string{b.Node("Neg", []string{x2}), x1}, onnx.AttrInt("axis", -1))
	return b.Node("Add", []string{b.Node("Mul", []string{x, g.cos}), b.Node("Mul", []string{rot, g.sin})})
}

// heads projects h [B, S, hidden] with w and splits it into n heads:
// [B, S, n, D], normalised per head with normW when given, then
// transposed to [B, n, S, D].
func (g *graph) heads(h, w string, n int, normW string) string {
	b := g.b
	x := b.Node("MatMul", []string{h, w})
	x = b.Node("Reshape", []string{x, b.ConstInt64s(0, 0, int64(n), int64(g.c.HeadDim))})
	if normW != "" {
		x = g.rmsNorm(x, normW)
	}
	return b.Node("Transpose", []string{x}, onnx.AttrInts("perm", 0, 2, 1, 3))
}

// attention is Qwen3's self-attention of layer i with the KV cache; it
// writes present.{i}.key|value and returns the o_proj output [B, S, hidden].
func (g *graph) attention(i int, h string, w map[string]string, pastK, pastV string) string {
	b, c := g.b, g.c
	q := g.rope(g.heads(h, w["self_attn.q_proj"], c.Heads, w["self_attn.q_norm"]))           // [B, H, S, D]
	k := g.rope(g.heads(h, w["self_attn.k_proj"], c.KVHeads, w["self_attn.k_norm"]))         // [B, KV, S, D]
	v := g.heads(h, w["self_attn.v_proj"], c.KVHeads, "")                                    // [B, KV, S, D]
	b.NodeTo("Concat", []string{pastK, k}, []string{PresentKey(i)}, onnx.AttrInt("axis", 2)) // [B, KV, T, D]
	b.NodeTo("Concat", []string{pastV, v}, []string{PresentValue(i)}, onnx.AttrInt("axis", 2))
	k, v = g.repeatKV(PresentKey(i)), g.repeatKV(PresentValue(i)) // [B, H, T, D]
	kT := b.Node("Transpose", []string{k}, onnx.AttrInts("perm", 0, 1, 3, 2))
	scores := b.Node("MatMul", []string{q, kT}) // [B, H, S, T]
	scores = b.Node("Mul", []string{scores, b.ConstFloat32(float32(1 / math.Sqrt(float64(c.HeadDim))))})
	scores = b.Node("Add", []string{scores, g.bias})
	probs := b.Node("Softmax", []string{scores}, onnx.AttrInt("axis", -1))
	o := b.Node("MatMul", []string{probs, v})                               // [B, H, S, D]
	o = b.Node("Transpose", []string{o}, onnx.AttrInts("perm", 0, 2, 1, 3)) // [B, S, H, D]
	o = b.Node("Reshape", []string{o, b.ConstInt64s(0, 0, int64(c.Heads*c.HeadDim))})
	return b.Node("MatMul", []string{o, w["self_attn.o_proj"]})
}

// repeatKV repeats each of the KV heads of x [B, KV, T, D] Heads/KVHeads
// times, as HF's repeat_kv: [B, KV, 1, T, D] expanded to
// [B, KV, rep, T, D], reshaped to [B, H, T, D].
func (g *graph) repeatKV(x string) string {
	rep := int64(g.c.Heads / g.c.KVHeads)
	if rep == 1 {
		return x
	}
	b := g.b
	x = b.Node("Unsqueeze", []string{x, b.ConstInt64s(2)})
	x = b.Node("Expand", []string{x, b.ConstInt64s(1, 1, rep, 1, 1)})
	return b.Node("Reshape", []string{x, b.ConstInt64s(0, int64(g.c.Heads), -1, int64(g.c.HeadDim))})
}

// WriteDir builds the model for (c, seed) and writes dir/model.onnx and
// dir/config.json (Hugging Face format), creating dir. Weights go to
// dir/model.onnx_data when the model would pass MaxProtoSize; otherwise
// a model.onnx_data there, a replaced model's, is removed. The caller
// adds tokenizer.json.
func WriteDir(dir string, c Config, seed uint64) error {
	return WriteDirContext(context.Background(), dir, c, seed)
}

// WriteDirContext is WriteDir, ended early with ctx's error when ctx
// ends: while the weights are drawn (BuildContext), and before each
// weight written to an external data file, whose temporary file is then
// removed (files already in dir stay as they were).
func WriteDirContext(ctx context.Context, dir string, c Config, seed uint64) error {
	m, err := BuildContext(ctx, c, seed)
	if err != nil {
		return err
	}
	cfgJSON, err := c.HFConfigJSON()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("qwen3: %w", err)
	}
	var opt onnx.SaveOptions
	if proto.Size(m.Proto) > onnx.MaxProtoSize {
		opt.ExternalDataFile = "model.onnx" + onnx.DataFileSuffix
		opt.Data = func(t *onnxpb.TensorProto) (func(io.Writer) error, bool) {
			return func(w io.Writer) error {
				if err := ctx.Err(); err != nil {
					return err
				}
				_, err := w.Write(t.GetRawData())
				return err
			}, true
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	path := filepath.Join(dir, "model.onnx")
	if err := onnx.Save(path, m, opt); err != nil {
		return err
	}
	if opt.ExternalDataFile == "" {
		if err := onnx.RemoveReplacedData(path); err != nil {
			return err
		}
	}
	return atomicfile.WriteFile(filepath.Join(dir, "config.json"), cfgJSON, 0o666)
}
