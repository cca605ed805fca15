package model

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/spiral-rl/spiral/model/onnx/onnxpb"
)

// Names of the causal-LM interface used by Hugging Face optimum and
// onnx-community exports.
const (
	InputIDs      = "input_ids"
	AttentionMask = "attention_mask"
	PositionIDs   = "position_ids"
	LogitsOutput  = "logits"
)

var (
	pastRe    = regexp.MustCompile(`^past_key_values\.(\d+)\.(key|value)$`)
	presentRe = regexp.MustCompile(`^present\.(\d+)\.(key|value)$`)
)

// PastName returns the graph input that feeds layer i's cached keys
// (value=false) or values (value=true).
func PastName(i int, value bool) string {
	if value {
		return "past_key_values." + strconv.Itoa(i) + ".value"
	}
	return "past_key_values." + strconv.Itoa(i) + ".key"
}

// PresentName returns the graph output holding layer i's keys or values
// after the step.
func PresentName(i int, value bool) string {
	if value {
		return "present." + strconv.Itoa(i) + ".value"
	}
	return "present." + strconv.Itoa(i) + ".key"
}

// NewKVName returns the output that, in a sampling graph of artifacts,
// holds only the keys (value=false) or values of layer i's new positions,
// [batch, kv_heads, seq, head_dim]: what present.{i}.* appends to the
// past (see Signature.NewKV).
func NewKVName(i int, value bool) string {
	if value {
		return "kv_new." + strconv.Itoa(i) + ".value"
	}
	return "kv_new." + strconv.Itoa(i) + ".key"
}

// Signature is the interface of a causal LM graph, read from its metadata:
// never derived from hidden size / heads (Qwen3-4B has hidden 2560, 32 heads
// and head_dim 128).
type Signature struct {
	// Layers is the number of past_key_values.{i}.key|value pairs.
	Layers int
	// KVHeads and HeadDim are dims 1 and 3 of the cache tensors
	// [batch, kv_heads, past, head_dim].
	KVHeads, HeadDim int
	// Vocab is the last dim of logits [batch, seq, vocab].
	Vocab int
	// LastLogitsOnly is true when logits hold the last position only
	// ([batch, 1, vocab], a static 1): the sampling graph of artifacts.
	LastLogitsOnly bool
	// HasPositionIDs is false for exports without a position_ids input.
	HasPositionIDs bool
	// NewKV is true when every layer outputs its new keys and values alone
	// (NewKVName), so that generation copies only those.
	NewKV bool
	// Present is true when every layer outputs its whole present.{i}.*
	// (an export, the rollout graph); a sampling graph with NewKV does not,
	// so that ONNX Runtime frees each layer's present after its attention
	// instead of keeping every layer's to the end of the call.
	Present bool
	// GroupedAttention is true when the graph's attention is grouped by
	// KV head (a sampling graph of artifacts, see groupedAttention): no
	// layer repeats its keys and values over the query heads.
	GroupedAttention bool
	// Weights lists float graph inputs outside the LM interface: weights
	// turned into inputs (the rollout graph), fed from the parameter store.
	Weights []TensorInfo
}

// TensorInfo is a graph input's name, element type and shape (-1 for a
// symbolic dim).
type TensorInfo struct {
	Name  string
	DType onnxpb.TensorProto_DataType
	Shape []int64
}

// ReadSignature checks that g has the causal-LM interface (input_ids,
// attention_mask, optional position_ids, past_key_values.{i}.key|value
// float32 [batch, kv_heads, past, head_dim]; outputs logits and
// present.{i}.key|value) and returns its dimensions. source names the file
// in errors.
func ReadSignature(g *onnxpb.GraphProto, source string) (*Signature, error) {
	fail := func(format string, a ...any) error {
		return fmt.Errorf("model: %s: %s", source, fmt.Sprintf(format, a...))
	}
	inits := map[string]bool{}
	for _, t := range g.GetInitializer() {
		inits[t.GetName()] = true
	}
	sig := &Signature{KVHeads: -1, HeadDim: -1}
	seen := map[string]bool{}
	pastLayers := map[int]int{}
	for _, in := range g.GetInput() {
		name := in.GetName()
		if inits[name] {
			continue // an initializer listed as input (old IR): a weight with a default
		}
		ti := tensorInfo(in)
		if seen[name] {
			return nil, fail("input %q is listed twice", name)
		}
		seen[name] = true
		switch {
		case name == InputIDs || name == AttentionMask:
			if ti.DType != onnxpb.TensorProto_INT64 {
				return nil, fail("input %q has type %s, want int64", name, ti.DType)
			}
		case name == PositionIDs:
			if ti.DType != onnxpb.TensorProto_INT64 {
				return nil, fail("input %q has type %s, want int64", name, ti.DType)
			}
			sig.HasPositionIDs = true
		case pastRe.MatchString(name):
			m := pastRe.FindStringSubmatch(name)
			layer, err := strconv.Atoi(m[1])
			if want := PastName(layer, m[2] == "value"); err != nil || name != want {
				return nil, fail("cache input %q: want layers numbered without leading zeros (%s)", name, want)
			}
			pastLayers[layer]++
			if ti.DType != onnxpb.TensorProto_FLOAT {
				return nil, fail("cache input %q has type %s; only float32 caches are supported (export the model in fp32)", name, ti.DType)
			}
			if len(ti.Shape) != 4 || ti.Shape[1] <= 0 || ti.Shape[3] <= 0 {
				return nil, fail("cache input %q has shape %v, want [batch, kv_heads, past, head_dim] with static kv_heads and head_dim", name, ti.Shape)
			}
			if sig.KVHeads >= 0 && (ti.Shape[1] != int64(sig.KVHeads) || ti.Shape[3] != int64(sig.HeadDim)) {
				return nil, fail("cache input %q has shape %v, unlike the other layers' [*, %d, *, %d]", name, ti.Shape, sig.KVHeads, sig.HeadDim)
			}
			sig.KVHeads, sig.HeadDim = int(ti.Shape[1]), int(ti.Shape[3])
		default:
			if ti.DType != onnxpb.TensorProto_FLOAT {
				return nil, fail("unrecognised input %q of type %s (want the causal-LM interface input_ids, attention_mask, position_ids, past_key_values.{i}.key|value, plus float weights)", name, ti.DType)
			}
			sig.Weights = append(sig.Weights, ti)
		}
	}
	for _, want := range []string{InputIDs, AttentionMask} {
		if !seen[want] {
			return nil, fail("graph has no %q input; not a causal LM export of the optimum signature", want)
		}
	}
	if len(pastLayers) == 0 {
		return nil, fail("graph has no past_key_values.{i}.key|value inputs; unrecognised cache layout (export with use_cache / the text-generation-with-past task)")
	}
	sig.Layers = len(pastLayers)
	for i := 0; i < sig.Layers; i++ {
		if pastLayers[i] != 2 {
			return nil, fail("cache layout: layer %d has %d of past_key_values.%d.key|value (layers must be numbered 0..%d, each with key and value)", i, pastLayers[i], i, sig.Layers-1)
		}
	}
	outs := map[string]TensorInfo{}
	for _, o := range g.GetOutput() {
		outs[o.GetName()] = tensorInfo(o)
	}
	logits, ok := outs[LogitsOutput]
	if !ok {
		names := make([]string, 0, len(outs))
		for n := range outs {
			names = append(names, n)
		}
		sort.Strings(names)
		return nil, fail("graph has no %q output (outputs: %s)", LogitsOutput, strings.Join(names, ", "))
	}
	if logits.DType != onnxpb.TensorProto_FLOAT {
		return nil, fail("output logits has type %s; only float32 logits are supported", logits.DType)
	}
	if len(logits.Shape) != 3 || logits.Shape[2] <= 0 {
		return nil, fail("output logits has shape %v, want [batch, seq, vocab] with a static vocab", logits.Shape)
	}
	sig.Vocab = int(logits.Shape[2])
	sig.LastLogitsOnly = logits.Shape[1] == 1
	sig.NewKV, sig.Present = true, true
	sig.GroupedAttention = slices.ContainsFunc(g.GetNode(), func(n *onnxpb.NodeProto) bool {
		return strings.HasPrefix(n.GetName(), groupedAttentionName)
	})
	missingPresent := ""
	for i := 0; i < sig.Layers; i++ {
		for _, v := range []bool{false, true} {
			if _, ok := outs[NewKVName(i, v)]; !ok {
				sig.NewKV = false
			}
			if _, ok := outs[PresentName(i, v)]; !ok && missingPresent == "" {
				sig.Present, missingPresent = false, PresentName(i, v)
			}
		}
	}
	if !sig.Present && !sig.NewKV {
		return nil, fail("graph has no %q output; unrecognised cache layout", missingPresent)
	}
	for n := range outs {
		if m := presentRe.FindStringSubmatch(n); m != nil {
			if l, _ := strconv.Atoi(m[1]); l >= sig.Layers {
				return nil, fail("output %q has no matching past_key_values input", n)
			}
		}
	}
	return sig, nil
}

func tensorInfo(v *onnxpb.ValueInfoProto) TensorInfo {
	ti := TensorInfo{Name: v.GetName()}
	tt := v.GetType().GetTensorType()
	if tt == nil {
		return ti
	}
	ti.DType = onnxpb.TensorProto_DataType(tt.GetElemType())
	if tt.GetShape() == nil {
		return ti
	}
	for _, d := range tt.GetShape().GetDim() {
		if _, ok := d.GetValue().(*onnxpb.TensorShapeProto_Dimension_DimValue); ok {
			ti.Shape = append(ti.Shape, d.GetDimValue())
		} else {
			ti.Shape = append(ti.Shape, -1)
		}
	}
	return ti
}
