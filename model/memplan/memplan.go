// Package memplan predicts the peak memory of spiral's training step and
// of generation from a model's architecture and the shapes, itemised the
// way the executor (model.Executor) and the sampler (model.RowCache)
// spend it, and finds the largest shapes that fit a memory budget.
//
// The items follow the executor's design: the parameters, their
// gradients and AdamW's moments; every layer's input, kept through the
// step; the layers' values kept for the backward pass, up to
// --kept-mib (LayerValueBytesPerToken); the attention mask tables; one
// layer's working set while it is
// recomputed and differentiated; one chunk of positions of its MLP (the
// executor runs a layer's position-wise tail on chunks); one
// attention-core call; one loss tile; a fixed runtime baseline. The
// per-layer working set is written in tensors of the layer's widths
// (hidden, MLP, heads x head_dim). The
// counts are the executor's, not fitted; testdata/measured.json holds the
// peaks spiral bench measured on the Qwen3-0.6B config and its 8-layer
// variant, and a test keeps every prediction within 15% of them (`make
// bench-scale` prints prediction and measurement side by side). It also
// predicts what crosses between host and device memory on the device
// layer (DeviceTraffic).
package memplan

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/spiral-rl/spiral/model/lmgraph"
	"github.com/spiral-rl/spiral/model/qwen3"
)

// Arch is a decoder-only transformer's shape, in config.json's names.
type Arch struct {
	Layers       int  `json:"num_hidden_layers"`
	Hidden       int  `json:"hidden_size"`
	Intermediate int  `json:"intermediate_size"`
	Heads        int  `json:"num_attention_heads"`
	KVHeads      int  `json:"num_key_value_heads"`
	HeadDim      int  `json:"head_dim"`
	Vocab        int  `json:"vocab_size"`
	Tied         bool `json:"tie_word_embeddings"`
	// Context is the longest sequence the model is meant for, in
	// positions (0: not known, as for the named configs, whose releases
	// differ in it: Qwen3-4B 40,960, Qwen3-4B-Instruct-2507 262,144; see
	// Named).
	// Memory does not depend on it; a row longer than it is no use.
	Context int `json:"max_position_embeddings,omitempty"`
	// Type is the architecture, config.json's model_type, which says
	// what parameters a layer has besides its projections and norms
	// (ParseConfig): "qwen3" (or "", as Arch's zero value) the per-head
	// q_norm and k_norm, "qwen2" the q, k and v projections' biases;
	// "llama" and "mistral" neither. AttentionBias (Qwen3's and Llama's
	// attention_bias) adds the q, k, v and o projections' biases,
	// MLPBias (Llama's mlp_bias) the MLP's.
	Type          string `json:"model_type,omitempty"`
	AttentionBias bool   `json:"attention_bias,omitempty"`
	MLPBias       bool   `json:"mlp_bias,omitempty"`
}

// FromQwen3 returns a Qwen3 config's shape and context.
func FromQwen3(c qwen3.Config) Arch {
	return Arch{Type: "qwen3", Layers: c.Layers, Hidden: c.Hidden, Intermediate: c.Intermediate, Heads: c.Heads,
		KVHeads: c.KVHeads, HeadDim: c.HeadDim, Vocab: c.Vocab, Tied: c.TiedEmbeddings, Context: c.MaxPositions}
}

// Named returns a real config's shape by name, case-insensitive
// (qwen3-0.6b, qwen3-1.7b, qwen3-4b, qwen3-8b: qwen3.Release, the
// configs scripts/bench/make_model.py also knows). Its Context is 0, not
// known: the name stands for the shape, which releases of different
// contexts share (Qwen3-4B 40,960 positions, Qwen3-4B-Instruct-2507
// 262,144), and memory does not depend on it.
func Named(name string) (Arch, bool) {
	c, ok := qwen3.Release(name)
	if !ok {
		return Arch{}, false
	}
	a := FromQwen3(c)
	a.Context = 0
	return a, true
}

// Names lists the names Named knows, sorted.
func Names() []string { return qwen3.Releases() }

// Validate reports a field that cannot describe a model, or a shape
// past any (more than MaxLayers layers, or weights alone past
// MaxBytes, where the counts of its parameters would overflow int64).
func (a Arch) Validate() error {
	if err := a.valid(); err != nil {
		return fmt.Errorf("memplan: %w", err)
	}
	return nil
}

// valid is Validate without the package's prefix (ParseConfig's
// refusal names the file instead).
func (a Arch) valid() error {
	for _, f := range []struct {
		name string
		v    int
	}{{"layers", a.Layers}, {"hidden", a.Hidden}, {"intermediate", a.Intermediate}, {"heads", a.Heads},
		{"kv heads", a.KVHeads}, {"head dim", a.HeadDim}, {"vocab", a.Vocab}} {
		if f.v <= 0 {
			return fmt.Errorf("%s %d: want > 0", f.name, f.v)
		}
	}
	if _, err := typeOf(a.Type, nil); a.Type != "" && err != nil {
		return err
	}
	if a.Layers > MaxLayers {
		return fmt.Errorf("num_hidden_layers %d: want at most %d", a.Layers, MaxLayers)
	}
	// Counted in float64, which does not overflow where int64 would.
	f := func(n int) float64 { return float64(n) }
	params := f(a.Vocab)*f(a.Hidden) + f(a.Hidden)
	if !a.Tied {
		params += f(a.Vocab) * f(a.Hidden)
	}
	h, q, kv := f(a.Hidden), f(a.Heads)*f(a.HeadDim), f(a.KVHeads)*f(a.HeadDim)
	params += f(a.Layers) * (2*h*q + 2*h*kv + 3*h*f(a.Intermediate)) // the projections (layerMatrices)
	if 4*params > MaxBytes {
		return fmt.Errorf("%d layers of hidden %d, MLP %d, %d heads of %d (%d KV), vocab %d: the weights alone would take over %d PiB",
			a.Layers, a.Hidden, a.Intermediate, a.Heads, a.HeadDim, a.KVHeads, a.Vocab, MaxBytes>>50)
	}
	return nil
}

// MaxLayers bounds the layers of a shape (Validate), far past any
// model's: Trained lists every layer's parameters by name.
const MaxLayers = 1 << 16

// layerMatrices are the [in, out] shapes of one layer's projections, in
// lmgraph.LoRATargets' order (q, k, v, o, gate, up, down).
func (a Arch) layerMatrices() [][2]int64 {
	h, i, q, kv := int64(a.Hidden), int64(a.Intermediate), int64(a.Heads*a.HeadDim), int64(a.KVHeads*a.HeadDim)
	return [][2]int64{{h, q}, {h, kv}, {h, kv}, {q, h}, {h, i}, {h, i}, {i, h}}
}

// LayerParams returns one layer's parameters: the projections, their
// biases where the architecture has them (Arch.Type), two norms of the
// hidden width and, Qwen3's, the q/k norms of the head width.
func (a Arch) LayerParams() int64 {
	var n int64
	for _, p := range a.layerParams(0) {
		n += p.size()
	}
	return n
}

// Params returns the model's parameters (a tied head counted once):
// Parameters' sizes, summed without listing every layer's.
func (a Arch) Params() int64 {
	emb := int64(a.Vocab) * int64(a.Hidden)
	n := emb + int64(a.Layers)*a.LayerParams() + int64(a.Hidden)
	if !a.Tied {
		n += emb
	}
	return n
}

// Trained is what a full fine-tune trains of a model's parameters.
type Trained struct {
	// Params is the trained parameters; Layer the most of them in one
	// layer (the gradients one layer's backward holds).
	Params, Layer int64
	// Head is whether an untied head (lm_head.weight) is trained.
	Head bool
}

// Trained returns what the selection s trains of a's parameters, named
// as transformers and spiral's graphs name them (Parameters:
// model.embed_tokens.weight, model.layers.N.self_attn.q_proj.weight...,
// lm_head.weight untied; a tied head is the embedding), selected as the
// model selects them (lmgraph.Selection.Select, whose refusal of a
// selection that matches no parameter or leaves none to train, an
// *lmgraph.SelectionError, it returns).
func (a Arch) Trained(s lmgraph.Selection) (Trained, error) {
	var cls []lmgraph.Initializer
	for _, p := range a.Parameters() {
		cls = append(cls, lmgraph.Initializer{Name: p.Name, Shape: p.Shape, Parameter: true})
	}
	trained, _, err := s.Select(cls)
	if err != nil {
		var se *lmgraph.SelectionError
		if errors.As(err, &se) {
			se.Names = a.parameterNames()
		}
		return Trained{}, fmt.Errorf("memplan: %w", err)
	}
	var t Trained
	layers := map[string]int64{}
	for _, p := range trained {
		n := int64(1)
		for _, d := range p.Shape {
			n *= d
		}
		t.Params += n
		t.Head = t.Head || p.Name == qwen3.LMHeadWeight
		if rest, ok := strings.CutPrefix(p.Name, "model.layers."); ok {
			layer, _, _ := strings.Cut(rest, ".")
			layers[layer] += n
			t.Layer = max(t.Layer, layers[layer])
		}
	}
	return t, nil
}

// parameterNames writes the names of a's parameters (Parameters) for a
// refusal of a selection, each layer's once with N for its index:
// "the model's parameters: model.embed_tokens.weight,
// model.layers.N.{input_layernorm, ...}.weight for N in 0..27,
// model.norm.weight".
func (a Arch) parameterNames() string {
	var weights, biases []string
	for _, p := range a.layerParams(0) {
		rest := strings.TrimPrefix(p.Name, "model.layers.0.")
		if m, ok := strings.CutSuffix(rest, ".bias"); ok {
			biases = append(biases, m)
		} else {
			weights = append(weights, strings.TrimSuffix(rest, ".weight"))
		}
	}
	layers := fmt.Sprintf("model.layers.N.{%s}.weight", strings.Join(weights, ", "))
	if biases != nil {
		layers += fmt.Sprintf(" and model.layers.N.{%s}.bias", strings.Join(biases, ", "))
	}
	names := []string{qwen3.EmbedWeight, fmt.Sprintf("%s for N in 0..%d", layers, a.Layers-1), qwen3.NormWeight}
	if !a.Tied {
		names = append(names, qwen3.LMHeadWeight)
	}
	return "the model's parameters: " + strings.Join(names, ", ")
}

// trained returns what t trains of a's parameters: LoRA's adapters (the
// head frozen), or t.Known, or the parameters t.Selection selects.
func (a Arch) trained(s *sizer, t Train) (Trained, error) {
	if t.LoRARank <= 0 && t.Known != nil {
		return *t.Known, nil
	}
	if t.LoRARank <= 0 {
		return a.Trained(t.Selection)
	}
	if t.Selection.Train != nil || t.Selection.Freeze != nil || t.Known != nil {
		return Trained{}, errors.New("memplan: LoRA trains adapters only: a selection of the parameters does not combine with it")
	}
	n := s.bytes("LoRA adapters", int64(t.LoRARank), a.LoRAParams(1, t.LoRATargets)).Bytes
	return Trained{Params: n, Layer: n / int64(a.Layers)}, nil
}

// LoRAParams returns the adapter parameters of rank r on the projections
// named by targets (lmgraph.LoRATargets' names; nil: every projection).
func (a Arch) LoRAParams(r int, targets []string) int64 {
	var n int64
	for k, m := range a.layerMatrices() {
		if targets == nil || slices.Contains(targets, lmgraph.LoRATargets[k]) {
			n += int64(r) * (m[0] + m[1])
		}
	}
	return n * int64(a.Layers)
}

// CheckLoRARank refuses a LoRA rank r past the smaller side of a
// projection named by targets (nil: every projection), as the model
// refuses it when it reads the graph: such an adapter is no more
// expressive than a full-rank one, and only takes memory.
func (a Arch) CheckLoRARank(r int, targets []string) error {
	for k, m := range a.layerMatrices() {
		name := lmgraph.LoRATargets[k]
		if targets != nil && !slices.Contains(targets, name) {
			continue
		}
		if side := min(m[0], m[1]); int64(r) > side {
			return fmt.Errorf("%s is [%d, %d]: want at most %d, the smaller side, past which an adapter is no more expressive", name, m[0], m[1], side)
		}
	}
	return nil
}

// Item is one line of a prediction.
type Item struct {
	Name  string `json:"name"`
	Bytes int64  `json:"bytes"`
}

// Total sums the items.
func Total(items []Item) int64 {
	var n int64
	for _, it := range items {
		n += it.Bytes
	}
	return n
}

// Train is a training step's shape and the executor's bounds.
type Train struct {
	Rows, Tokens int
	// LossTokens is how many positions the loss covers (0: half of
	// Rows x Tokens, the benchmark's rows).
	LossTokens int
	// LoRARank > 0 trains rank-r adapters on the LoRATargets projections
	// (nil: every one) instead of every parameter.
	LoRARank    int
	LoRATargets []string
	// Selection chooses the parameters a full fine-tune (LoRARank 0)
	// trains, as train's --train and --freeze do (the zero value: all);
	// the frozen ones have no gradients nor AdamW moments.
	Selection lmgraph.Selection
	// Known, when not nil, is what a full fine-tune trains, found
	// otherwise than by the names Parameters gives (spiral plan's
	// selection on a graph whose parameters have no transformers
	// names, sized by its shapes); Selection is then not read.
	Known *Trained
	// AttentionBytes, LossChunkBytes and MLPBytes are
	// model.ExecutorOptions'; MLPBytes <= 0 runs each MLP on all
	// positions at once.
	AttentionBytes, LossChunkBytes, MLPBytes int64
	// KeptBytes is model.ExecutorOptions': the layers' values the
	// forward pass keeps for the backward pass (<= 0: none).
	KeptBytes int64
	// Device is whether the step runs on the device layer (train's
	// --device cuda), whose executor allocates a buffer the CPU's does
	// not: a trained untied head's transposed gradient sum.
	Device bool
}

// Baseline is the process's memory besides what the items count: the
// ONNX Runtime library and its sessions, the Go runtime, the graphs.
const Baseline = 400 << 20

// Live tensors in one layer's recompute and backward, per row x
// position, in units of each width (see the package doc).
const (
	layerHidden       = 10 // hidden-wide: inputs, norms, residuals and their gradients
	layerIntermediate = 6  // MLP-wide: gate, up, activation, product, two gradients
	layerHeads        = 8  // heads x head_dim: queries, repeated keys and values, attention output, gradients
	maskBytes         = 9  // the [rows, 1, T, T] mask tables: a boolean and a float bias
	// mlpChunkLive is model's tailLive: the executor sizes an MLP chunk
	// to MLPBytes / (4 x mlpChunkLive x its widest weight dim), a bound
	// with room to spare; the chunk itself holds layerIntermediate such
	// tensors per position (what the item counts).
	mlpChunkLive = 10
)

// ActivationBytesPerToken is what a training step holds for each token of
// a micro-batch besides the attention masks and the MLP chunk (bounded
// whatever the micro-batch): every layer's input, kept through the step,
// and one layer's working set while it is recomputed and differentiated.
func (a Arch) ActivationBytesPerToken() int64 {
	h, qd := int64(a.Hidden), int64(a.Heads*a.HeadDim)
	return int64(a.Layers+1)*h*4 + 4*(layerHidden*h+layerHeads*qd)
}

// LayerValueBytesPerToken is what the executor keeps of one layer for its
// backward pass (ExecutorOptions.KeptBytes) per token: the values of its
// pieces around attention (queries, keys and values repeated to the
// query heads, the attention output, the residual after it; measured on
// spiral's exports by spiral bench train's kept_bytes).
func (a Arch) LayerValueBytesPerToken() int64 {
	h, qd := int64(a.Hidden), int64(a.Heads*a.HeadDim)
	return 4 * (h + 4*qd)
}

// MicroBatchTokens returns how many tokens a micro-batch may hold for its
// activations to stay within budget bytes, within 512..16384.
func MicroBatchTokens(a Arch, budget int64) int {
	return int(min(16384, max(512, budget/max(a.ActivationBytesPerToken(), 1))))
}

// MLPChunkPositions returns how many positions one MLP call of the
// executor takes under mlpBytes (all of them when mlpBytes <= 0).
func (a Arch) MLPChunkPositions(positions int64, mlpBytes int64) int64 {
	if mlpBytes <= 0 {
		return positions
	}
	width := int64(max(a.Intermediate, a.Hidden))
	return min(positions, max(1, mlpBytes/(4*mlpChunkLive*width)))
}

// MaxBytes bounds each item of a prediction: 2^56 bytes (64 PiB), past
// any machine's memory. TrainPeak and GeneratePeak refuse a shape with an
// item above it, so that no item, nor their total, overflows int64.
const MaxBytes = 1 << 56

// sizer multiplies sizes into bytes, noting the first item whose product
// passes MaxBytes.
type sizer struct{ over string }

// bytes returns the item name whose bytes are the product of factors
// (each >= 0); a product past MaxBytes is noted and counts as MaxBytes.
func (s *sizer) bytes(name string, factors ...int64) Item {
	p := int64(1)
	for _, f := range factors {
		if f != 0 && p > MaxBytes/f {
			if s.over == "" {
				s.over = name
			}
			return Item{name, MaxBytes}
		}
		p *= f
	}
	return Item{name, p}
}

// err reports the first item past MaxBytes, of the shape what.
func (s *sizer) err(what string) error {
	if s.over == "" {
		return nil
	}
	return fmt.Errorf("memplan: %s: %q alone would take over %d PiB", what, s.over, MaxBytes>>50)
}

// TrainPeak itemises a training step's peak; a shape whose items would
// pass MaxBytes is an error naming the first such item.
func TrainPeak(a Arch, t Train) ([]Item, error) {
	if err := a.Validate(); err != nil {
		return nil, err
	}
	if t.Rows <= 0 || t.Tokens <= 0 {
		return nil, errors.New("memplan: want rows and tokens > 0")
	}
	var s sizer
	sel, err := a.trained(&s, t)
	if err != nil {
		return nil, err
	}
	return trainPeak(a, t, s, sel)
}

// trainPeak is TrainPeak of a valid a and t whose fine-tune trains sel,
// s holding the sizing of that selection: MaxTokens selects once for
// all the lengths it tries.
func trainPeak(a Arch, t Train, s sizer, sel Trained) ([]Item, error) {
	shape := fmt.Sprintf("%d rows x %d tokens", t.Rows, t.Tokens)
	rows, tokens := int64(t.Rows), int64(t.Tokens)
	// Saturated at MaxBytes, a count that passes it makes the items it
	// enters pass it too, and they are named.
	rt := (&sizer{}).bytes("", rows, tokens).Bytes
	loss := int64(t.LossTokens)
	if loss <= 0 {
		loss = rt / 2
	}
	trained := sel.Params
	weights := 4 * a.Params()
	layerGrads := 4 * sel.Layer
	if t.LoRARank > 0 {
		shape = fmt.Sprintf("%s, LoRA rank %d", shape, t.LoRARank)
		weights += 4 * trained
	}
	h, i, qd := int64(a.Hidden), int64(a.Intermediate), int64(a.Heads*a.HeadDim)
	// A core call holds at least one query row against the keys, and at
	// most all of them (the executor's block is at most the row): the
	// budget binds only where the row's scores pass it.
	attn := max(t.AttentionBytes, s.bytes("attention block (one head, a block of queries)", tokens, 4*6).Bytes)
	attn = min(attn, (&sizer{}).bytes("", tokens, tokens, 4*6).Bytes)
	// A loss chunk holds at least one position's vocabulary-wide
	// tensors (6 of them), and at most every loss position's at once:
	// the generic head's 6, or the table head's gradient tile, 4 a
	// position and the table's gradient block.
	chunk := max(t.LossChunkBytes, int64(a.Vocab)*4*6)
	chunk = min(chunk, (&sizer{}).bytes("", int64(a.Vocab)*4, max(6*loss, 4*loss+h)).Bytes)
	layer := s.bytes("one layer's recompute and backward", rt, 4*(layerHidden*h+layerHeads*qd))
	layer.Bytes += layerGrads
	lossTile := s.bytes("loss tile and its gradients", h*4, 2*loss+rt)
	lossTile.Bytes += chunk
	items := []Item{
		{"weights", weights},
		s.bytes("gradients", 4, trained),
		s.bytes("AdamW moments", 8, trained),
		s.bytes("layer inputs (kept through the step)", int64(a.Layers+1), rt, h*4),
		keptValues(&s, a, rt, t.KeptBytes),
		s.bytes("attention mask tables", rt, tokens, maskBytes),
		layer,
		s.bytes("MLP chunk (a block of positions)", a.MLPChunkPositions(rt, t.MLPBytes), 4*layerIntermediate*i),
		{"attention block (one head, a block of queries)", attn},
		lossTile,
		{"runtime (ONNX Runtime, sessions, Go)", Baseline},
	}
	if sel.Head && t.Device {
		// The device layer sums an untied head's gradient transposed too,
		// a block of the vocabulary a range of its rows.
		items = append(items, Item{"untied head's gradient, transposed (device)", 4 * int64(a.Vocab) * h})
	}
	if err := s.err(shape); err != nil {
		return nil, err
	}
	return items, nil
}

// keptValues is the item of the layers' values kept for the backward
// pass: every layer's, or keptBytes where they pass it (the executor
// keeps whole layers within it: at most that much, a bound that grows
// with the shape as the other items do).
func keptValues(s *sizer, a Arch, rt, keptBytes int64) Item {
	all := s.bytes("layers' values kept for the backward pass", int64(a.Layers), rt, a.LayerValueBytesPerToken())
	all.Bytes = min(all.Bytes, max(keptBytes, 0))
	return all
}

// Generate is a generation's shape.
type Generate struct {
	// Rows decoded together and each row's capacity (prompt + new tokens).
	Rows, Capacity int
	// CallBytes is model.LMOptions.CallBytes.
	CallBytes int64
	// Chunk is the prompt positions one prefill call feeds
	// (rollout.PrefillChunk); 0 plans no prefill (CallBytes alone).
	Chunk int
	// Training, when not nil, makes these the rollouts of a training run
	// (spiral train) of that fine-tune (its LoRARank and LoRATargets):
	// its gradients and AdamW's moments stay allocated while it
	// generates (only the KV cache is released for the training step),
	// and LoRA's adapters are weights generation reads too.
	Training *Train
}

// GeneratePeak itemises generation's peak: the weights, the KV cache,
// one call's temporaries and the logits, and within a training run
// (g.Training) its gradients and moments, and on the device layer
// (Train.Device) a trained untied head's transposed gradient sum.
func GeneratePeak(a Arch, g Generate) ([]Item, error) {
	if err := a.Validate(); err != nil {
		return nil, err
	}
	if g.Rows <= 0 || g.Capacity <= 0 {
		return nil, errors.New("memplan: want rows and capacity > 0")
	}
	s, sel, err := a.trainedIn(g)
	if err != nil {
		return nil, err
	}
	return generatePeak(a, g, s, sel)
}

// trainedIn returns what the training run generation g is part of
// trains (Generate.Training; the zero Trained without one) and the
// sizing of that selection.
func (a Arch) trainedIn(g Generate) (sizer, Trained, error) {
	var s sizer
	if g.Training == nil {
		return s, Trained{}, nil
	}
	sel, err := a.trained(&s, *g.Training)
	return s, sel, err
}

// generatePeak is GeneratePeak of a valid a and g, g.Training's
// fine-tune training sel, s holding the sizing of that selection:
// MaxRows selects once for all the row counts it tries.
func generatePeak(a Arch, g Generate, s sizer, sel Trained) ([]Item, error) {
	rows := int64(g.Rows)
	shape := fmt.Sprintf("%d rows x %d positions", g.Rows, g.Capacity)
	weights := 4 * a.Params()
	var held []Item
	if t := g.Training; t != nil {
		trained := sel.Params
		if t.LoRARank > 0 {
			shape = fmt.Sprintf("%s, LoRA rank %d", shape, t.LoRARank)
			weights += 4 * trained
		}
		held = []Item{s.bytes("gradients (held by training)", 4, trained), s.bytes("AdamW moments (held by training)", 8, trained)}
		if sel.Head && t.Device {
			// The device layer's transposed sum of the head's gradient
			// (trainPeak's item) lives as long as the executor.
			held = append(held, Item{"untied head's gradient, transposed (device, held by training)", 4 * int64(a.Vocab) * int64(a.Hidden)})
		}
	}
	items := []Item{
		{"weights", weights},
		s.bytes("KV cache", int64(a.Layers)*2*int64(a.KVHeads)*int64(a.HeadDim)*4, rows, int64(g.Capacity)),
		callTemporaries(&s, a, g),
		s.bytes("logits and sampling", rows, int64(a.Vocab)*4*3),
		{"runtime (ONNX Runtime, sessions, Go)", Baseline},
	}
	items = append(items, held...)
	if err := s.err(shape); err != nil {
		return nil, err
	}
	return items, nil
}

// MaxTokens returns the longest rows (a multiple of 64 tokens) that a
// training step of t.Rows rows fits in budget bytes, or 0 when none does.
func MaxTokens(a Arch, t Train, budget int64) int {
	if a.Validate() != nil || t.Rows <= 0 {
		return 0
	}
	// The fine-tune trains the same parameters at every length: selected
	// once (Trained lists every layer's), not at each try.
	var s sizer
	sel, err := a.trained(&s, t)
	if err != nil {
		return 0
	}
	best := 0
	lo, hi := 1, 1<<22/64
	for lo <= hi {
		mid := (lo + hi) / 2
		t.Tokens = mid * 64
		items, err := trainPeak(a, t, s, sel)
		if err == nil && Total(items) <= budget {
			best, lo = t.Tokens, mid+1
		} else {
			hi = mid - 1
		}
	}
	return best
}

// ScoresPerRow is how many [heads, S, past + S] float32 tensors a row of
// a generation call (model.LM.Extend) is budgeted at its peak (scores,
// scaled, masked, the softmax, the exporters' NaN guards and their
// copies): with it model.LM.CallRowsWithin splits a call into rows within
// the call budget, and callTemporaries plans one. It was set from the
// process's growth, about 13 a row, on the Qwen3-0.6B config's 8-layer
// variant, 32 rows x 500 positions prefilled in chunks of 256 (96d131d).
// The graphs now have about 6 a row in use at once, with the attention
// grouped or not: 5.4-5.7 on that model (the shared arena's peak, calls
// of 8 and 16 rows; the process's growth without the arena says the
// same), 5.8-6.4 on the tiny builder, HF TorchScript, optimum and dynamo
// exports. The rest is margin for the allocator: an arena grows by
// doubling, so its footprint can reach twice what is in use.
const ScoresPerRow = 13

// callTemporaries is one generation call's temporaries: the call budget,
// or, where one row of a prefill chunk over the whole capacity takes
// more (every call takes at least one row), that row's, as
// LM.CallRowsWithin estimates it for the sampling graph (grouped
// attention, the last position's logits): the layer's present keys and
// values, ScoresPerRow score-sized tensors and the logits.
func callTemporaries(s *sizer, a Arch, g Generate) Item {
	const name = "one call's temporaries"
	if g.Chunk <= 0 {
		return Item{name, g.CallBytes}
	}
	perSpan := 2*int64(a.KVHeads)*int64(a.HeadDim) + ScoresPerRow*int64(a.Heads)*int64(g.Chunk)
	row := s.bytes(name, 4, perSpan, int64(g.Capacity)+int64(g.Chunk))
	row.Bytes = min(MaxBytes, row.Bytes+4*int64(a.Vocab))
	if row.Bytes <= g.CallBytes {
		return Item{name, g.CallBytes}
	}
	row.Name = name + " (one row of a prefill chunk, past the budget)"
	return row
}

// MaxRows returns the most rows of g.Capacity positions that generation
// fits in budget bytes, or 0 when none does.
func MaxRows(a Arch, g Generate, budget int64) int {
	if a.Validate() != nil || g.Capacity <= 0 {
		return 0
	}
	// As MaxTokens: the training run's selection, once.
	s, sel, err := a.trainedIn(g)
	if err != nil {
		return 0
	}
	best := 0
	lo, hi := 1, 1<<20
	for lo <= hi {
		mid := (lo + hi) / 2
		g.Rows = mid
		items, err := generatePeak(a, g, s, sel)
		if err == nil && Total(items) <= budget {
			best, lo = mid, mid+1
		} else {
			hi = mid - 1
		}
	}
	return best
}

// Traffic is what crosses between host and device memory on the device
// layer (--device cuda; model's Resident paths), in bytes.
type Traffic struct {
	// DecodeStep is one decode step of every row: token ids, positions
	// and the mask over the capacity (int64), the cache write indices (a
	// destination and a source int64 triple per KV head and row) and the
	// last position's logits (float32).
	DecodeStep int64 `json:"decode_step_bytes"`
	// Weights is every parameter generation reads, copied once (shared
	// with training), then a store again only when it changes.
	Weights int64 `json:"weights_bytes"`
	// Moments is AdamW's two moments of the trained parameters, copied
	// up once (and again after a checkpoint load); the update runs on the
	// device. Checkpoint is what a checkpoint (an export, a serving
	// engine's sync) brings down: the trained parameters and their
	// moments. Frozen is the frozen parameters (a LoRA run's base, or
	// those a full fine-tune's Selection leaves out, within Weights),
	// which stay. A training step's own traffic, what crosses with the
	// executor's calls (the batch's token inputs, the loss's
	// per-position numbers and the embedding's gradient: the
	// activations stay on the device), is not planned; bench train's
	// call_copy_bytes measures it.
	Moments    int64 `json:"moments_bytes"`
	Checkpoint int64 `json:"checkpoint_bytes"`
	Frozen     int64 `json:"frozen_bytes"`
}

// DeviceTraffic predicts the host <-> device traffic of generation g and
// of training t's parameters and optimizer state; it refuses t's
// Selection as TrainPeak does.
func DeviceTraffic(a Arch, g Generate, t Train) (Traffic, error) {
	n, c := int64(g.Rows), int64(g.Capacity)
	tr := Traffic{
		DecodeStep: 8*n*(c+3) + 48*n*int64(a.KVHeads) + 4*n*int64(a.Vocab),
		Weights:    4 * a.Params(),
	}
	sel, err := a.trained(&sizer{}, t)
	if err != nil {
		return Traffic{}, err
	}
	trained := sel.Params
	if t.LoRARank > 0 {
		tr.Frozen = 4 * a.Params()
		tr.Weights += 4 * trained
	} else {
		tr.Frozen = 4 * (a.Params() - trained)
	}
	tr.Moments, tr.Checkpoint = 8*trained, 12*trained
	return tr, nil
}
