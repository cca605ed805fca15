package lmgraph

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/spiral-rl/spiral/model/onnx/onnxpb"
)

// LoRATargets are the projections LoRA adapts by default: every attention
// and MLP projection of a Qwen3 layer, as peft and "LoRA without regret"
// (2025) recommend for RL.
var LoRATargets = []string{"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"}

// LoRA configures low-rank adapters: each targeted projection y = x W
// becomes y = x W + (alpha / rank) x A B with W frozen, A [in, rank] and B
// [rank, out] trained (A random, B zero at the start, so training starts
// from the base model). Rank 0 is full fine-tuning.
type LoRA struct {
	Rank  int     `json:"rank"`
	Alpha float64 `json:"alpha"`
	// Targets are projection names (q_proj, ..., down_proj), matched
	// against the last part of the module name.
	Targets []string `json:"targets"`
}

// Enabled reports whether l asks for adapters.
func (l LoRA) Enabled() bool { return l.Rank > 0 }

// Scale returns alpha / rank, the factor of the adapters' product.
func (l LoRA) Scale() float64 { return l.Alpha / float64(l.Rank) }

// Validate checks the rank, alpha and targets.
func (l LoRA) Validate() error {
	if l.Rank < 0 {
		return fmt.Errorf("lora rank %d: want >= 0", l.Rank)
	}
	if !l.Enabled() {
		return nil
	}
	// The scale multiplies float32 products in the graphs: past
	// float32's range it is +Inf, and the adapters' output NaN.
	if !(l.Alpha > 0) || !(l.Scale() <= math.MaxFloat32) {
		return fmt.Errorf("lora alpha %v: want > 0, with alpha / rank (%v) at most float32's largest value %v", l.Alpha, l.Scale(), float64(math.MaxFloat32))
	}
	// Below float32's normal range the scale is zero or subnormal: the
	// adapters' product and gradients vanish, and they never train.
	if smallest := 0x1p-126; l.Scale() < smallest {
		return fmt.Errorf("lora alpha %v: alpha / rank (%v) is below float32's smallest normal value %v, in which the adapters' product and their gradients vanish", l.Alpha, l.Scale(), smallest)
	}
	if len(l.Targets) == 0 {
		return fmt.Errorf("lora targets: none given")
	}
	for _, t := range l.Targets {
		if !slices.Contains(LoRATargets, t) {
			return fmt.Errorf("lora target %q: want one of %s", t, strings.Join(LoRATargets, ", "))
		}
	}
	return nil
}

// Canonical returns l with its targets in LoRATargets' order, each once:
// the targets are a set, so runs given them in another order or twice
// are the same run.
func (l LoRA) Canonical() LoRA {
	var ts []string
	for _, t := range LoRATargets {
		if slices.Contains(l.Targets, t) {
			ts = append(ts, t)
		}
	}
	for _, t := range l.Targets { // unknown ones, for Validate to name
		if !slices.Contains(LoRATargets, t) && !slices.Contains(ts, t) {
			ts = append(ts, t)
		}
	}
	l.Targets = ts
	return l
}

// String renders l for manifests (empty when disabled).
func (l LoRA) String() string {
	if !l.Enabled() {
		return ""
	}
	return fmt.Sprintf("lora rank=%d alpha=%g targets=%s", l.Rank, l.Alpha, strings.Join(l.Targets, ","))
}

// Adapter is one adapted projection: the transformers module it belongs
// to, the frozen initializer Base ([In, Out], a MatMul's right operand)
// and the names of its two trained factors, A [In, rank] and B [rank,
// Out], stored as MatMul operands like the base (peft's lora_A.weight is
// A transposed, lora_B.weight is B transposed).
type Adapter struct {
	Module string `json:"module"`
	Base   string `json:"base"`
	A      string `json:"a"`
	B      string `json:"b"`
	In     int64  `json:"in"`
	Out    int64  `json:"out"`
}

// AdapterNames returns the names of the factors of the adapter of module.
func AdapterNames(module string) (a, b string) { return module + ".lora_A", module + ".lora_B" }

// loraScale is the name of the scale constant AddLoRA adds.
const loraScale = "lora.scale"

// AddLoRA rewrites every MatMul of g whose right operand is the base of
// one of adapters: its output y = x Base becomes y = x Base + scale x A B
// (scale = l.Scale()) through four new nodes after it; A [In, rank] and B
// [rank, Out] become initializers of g without data, to be fed as
// parameters, and the scale a float constant. It fails, naming the
// initializer, when a base is read by no MatMul as its right operand.
func AddLoRA(g *onnxpb.GraphProto, adapters []Adapter, l LoRA) error {
	byBase := map[string]Adapter{}
	for _, a := range adapters {
		byBase[a.Base] = a
	}
	uses := map[string]int{}
	var nodes []*onnxpb.NodeProto
	for _, n := range g.GetNode() {
		nodes = append(nodes, n)
		if n.GetOpType() != "MatMul" || len(n.GetInput()) != 2 {
			continue
		}
		a, ok := byBase[n.GetInput()[1]]
		if !ok {
			continue
		}
		if len(n.GetOutput()) != 1 || n.GetOutput()[0] == "" {
			return fmt.Errorf("lmgraph: lora: MatMul node %q reading %q has outputs %q, want one", n.GetName(), a.Base, n.GetOutput())
		}
		uses[a.Base]++
		p := fmt.Sprintf("/lora/%s/%d", a.Module, uses[a.Base])
		y, base, xa, xab, scaled := n.GetOutput()[0], p+"/base", p+"/xA", p+"/xAB", p+"/scaled"
		n.Output[0] = base
		node := func(op, name string, in []string, out string) *onnxpb.NodeProto {
			return &onnxpb.NodeProto{Name: proto.String(p + "/" + name), OpType: proto.String(op), Input: in, Output: []string{out}}
		}
		nodes = append(nodes,
			node("MatMul", "MatMulA", []string{n.GetInput()[0], a.A}, xa),
			node("MatMul", "MatMulB", []string{xa, a.B}, xab),
			node("Mul", "Scale", []string{xab, loraScale}, scaled),
			node("Add", "Add", []string{base, scaled}, y))
	}
	for _, a := range adapters {
		if uses[a.Base] == 0 {
			return fmt.Errorf("lmgraph: lora: initializer %q (%s) is not read by a MatMul as its right operand", a.Base, a.Module)
		}
	}
	g.Node = nodes
	float := proto.Int32(int32(onnxpb.TensorProto_FLOAT))
	r := int64(l.Rank)
	for _, a := range adapters {
		g.Initializer = append(g.Initializer,
			&onnxpb.TensorProto{Name: proto.String(a.A), Dims: []int64{a.In, r}, DataType: float},
			&onnxpb.TensorProto{Name: proto.String(a.B), Dims: []int64{r, a.Out}, DataType: float})
	}
	g.Initializer = append(g.Initializer, &onnxpb.TensorProto{Name: proto.String(loraScale), DataType: float, FloatData: []float32{float32(l.Scale())}})
	return nil
}
