package lmgraph

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/spiral-rl/spiral/model/onnx"
	"github.com/spiral-rl/spiral/model/onnx/onnxpb"
)

// TokensInput is the graph input whose data defines the activations.
const TokensInput = "input_ids"

// Reasons an initializer is not a parameter, or a parameter is frozen, as
// Initializer.Reason and Frozen.Reason report them.
const (
	ReasonNotFloat  = "not a float tensor"
	ReasonScalar    = "one element (a scalar constant such as an epsilon, a scale or a fill value)"
	ReasonBuffer    = "buffer: never combined with the token activations (computed with positions, masks or shapes only, like RoPE frequencies)"
	ReasonUnused    = "not read by any node"
	ReasonTiedCopy  = "an exact copy of another parameter (tied weights); trained as that one"
	reasonParameter = "parameter: combined with the token activations by %s node %q"
)

// Initializer is the classification of one initializer of a graph.
type Initializer struct {
	Name  string
	DType onnx.DType
	Shape []int64
	// Parameter is true for the model's weights (see the package doc).
	Parameter bool
	// Reason says why: the node that combines a parameter with the
	// activations, or one of the Reason* constants for a constant.
	Reason string
}

// layoutOps pass an initializer's data through without combining it with
// anything (input 0 only).
var layoutOps = map[string]bool{
	"Identity": true, "Cast": true, "CastLike": true, "Transpose": true, "Reshape": true,
	"Unsqueeze": true, "Squeeze": true, "Flatten": true, "Expand": true,
}

// combiningOps are the arithmetic ops through which a weight meets the
// activations. Where, Slice, Concat and the like are absent on purpose:
// they select or move data, as masks and tables are moved.
var combiningOps = map[string]bool{
	"MatMul": true, "Gemm": true, "Mul": true, "Add": true, "Sub": true, "Div": true,
	"Conv": true, "ConvTranspose": true, "Einsum": true, "Gather": true,
	"LayerNormalization": true, "RMSNormalization": true, "SimplifiedLayerNormalization": true,
	"SkipLayerNormalization": true, "SkipSimplifiedLayerNormalization": true,
	"GroupNormalization": true, "BatchNormalization": true, "InstanceNormalization": true,
}

// Activations returns the set of values of g whose data depends on
// TokensInput (see the package doc).
func Activations(g *onnxpb.GraphProto) map[string]bool {
	act := map[string]bool{TokensInput: true}
	for _, n := range g.GetNode() {
		switch n.GetOpType() {
		case "Shape", "Size", "ConstantOfShape", "EyeLike":
			continue
		}
		hit := false
		for _, in := range n.GetInput() {
			if in != "" && act[in] {
				hit = true
				break
			}
		}
		if hit {
			for _, o := range n.GetOutput() {
				if o != "" {
					act[o] = true
				}
			}
		}
	}
	return act
}

// Classify returns the classification of every initializer of g's main
// graph, in initializer order.
func Classify(g *onnxpb.GraphProto) []Initializer {
	act := Activations(g)
	consumers := map[string][]*onnxpb.NodeProto{}
	for _, n := range g.GetNode() {
		for _, in := range n.GetInput() {
			if in != "" {
				consumers[in] = append(consumers[in], n)
			}
		}
	}
	out := make([]Initializer, 0, len(g.GetInitializer()))
	for _, t := range g.GetInitializer() {
		c := Initializer{Name: t.GetName(), DType: onnx.TensorDType(t), Shape: append([]int64{}, t.GetDims()...)}
		switch {
		case !isFloat(c.DType):
			c.Reason = ReasonNotFloat
		case onnx.NumElements(t.GetDims()) <= 1:
			c.Reason = ReasonScalar
		case len(consumers[c.Name]) == 0:
			c.Reason = ReasonUnused
		default:
			if n := combiner(c.Name, consumers, act); n != nil {
				c.Parameter = true
				c.Reason = fmt.Sprintf(reasonParameter, n.GetOpType(), n.GetName())
			} else {
				c.Reason = ReasonBuffer
			}
		}
		out = append(out, c)
	}
	return out
}

// combiner returns the first node that combines the value name (followed
// through layout-only ops) with an activation, or nil.
func combiner(name string, consumers map[string][]*onnxpb.NodeProto, act map[string]bool) *onnxpb.NodeProto {
	seen := map[string]bool{}
	frontier := []string{name}
	for len(frontier) > 0 {
		v := frontier[0]
		frontier = frontier[1:]
		if seen[v] {
			continue
		}
		seen[v] = true
		for _, n := range consumers[v] {
			op := n.GetOpType()
			if layoutOps[op] {
				if len(n.GetInput()) > 0 && n.GetInput()[0] == v {
					frontier = append(frontier, n.GetOutput()...)
				}
				continue
			}
			if !combiningOps[op] {
				continue
			}
			for i, in := range n.GetInput() {
				if in == v || in == "" || !act[in] {
					continue
				}
				if op == "Gather" && !(i == 1 && n.GetInput()[0] == v) {
					continue // a table is gathered by activation indices, not the reverse
				}
				return n
			}
		}
	}
	return nil
}

func isFloat(dt onnx.DType) bool {
	switch dt {
	case onnx.Float32, onnx.Float64, onnx.Float16, onnx.BFloat16:
		return true
	}
	return false
}

// Selection chooses the trained parameters among a graph's parameters:
// those matching Train (nil = all) and not matching Freeze (nil = none).
type Selection struct {
	Train, Freeze *regexp.Regexp
}

// Frozen is a parameter that is not trained, or a float constant, with the
// reason.
type Frozen struct {
	Name   string
	Shape  []int64
	Reason string
}

// Select splits the parameters of cls into trained and frozen ones by s,
// in initializer order. It returns an error when no parameter is left to
// train, or when --train or --freeze matches no parameter (a misspelt
// name would otherwise train everything or nothing unnoticed).
func (s Selection) Select(cls []Initializer) (trained []Initializer, frozen []Frozen, err error) {
	var trainMatched, freezeMatched bool
	for _, c := range cls {
		if !c.Parameter {
			continue
		}
		inTrain := s.Train == nil || s.Train.MatchString(c.Name)
		inFreeze := s.Freeze != nil && s.Freeze.MatchString(c.Name)
		trainMatched, freezeMatched = trainMatched || inTrain, freezeMatched || inFreeze
		switch {
		case !inTrain:
			frozen = append(frozen, Frozen{Name: c.Name, Shape: c.Shape, Reason: fmt.Sprintf("not matched by --train %q", s.Train)})
		case inFreeze:
			frozen = append(frozen, Frozen{Name: c.Name, Shape: c.Shape, Reason: fmt.Sprintf("matched by --freeze %q", s.Freeze)})
		default:
			trained = append(trained, c)
		}
	}
	// spiral artifacts takes --train and --freeze too, and refuses these
	// as train does: it lists the names given the model alone.
	const list = "spiral artifacts, without --train and --freeze, lists the parameters' names"
	switch {
	case s.Train != nil && !trainMatched:
		return nil, nil, &SelectionError{fmt.Sprintf("--train %q matches no parameter", s.Train), list}
	case s.Freeze != nil && !freezeMatched:
		return nil, nil, &SelectionError{fmt.Sprintf("--freeze %q matches no parameter", s.Freeze), list}
	case len(trained) == 0 && s.Train != nil:
		return nil, nil, &SelectionError{fmt.Sprintf("no parameter left to train: --freeze %q freezes every one --train %q matches", s.Freeze, s.Train), list}
	case len(trained) == 0:
		return nil, nil, &SelectionError{fmt.Sprintf("no parameter left to train: --freeze %q matches every one", s.Freeze), list}
	}
	return trained, frozen, nil
}

// SelectionError is Select's refusal of a --train or --freeze that leaves
// the graph nothing to train, or matches none of its parameters: Flags
// says which, naming the flags, for the command line to report as its
// mistake (Message); Names where the parameters' names are to be found
// (Select: spiral artifacts, which reads the model's graph; a caller
// without one, spiral plan, lists them).
type SelectionError struct {
	Flags, Names string
}

// Message is the refusal without the package's prefix: Flags, then
// Names in parentheses.
func (e *SelectionError) Message() string { return fmt.Sprintf("%s (%s)", e.Flags, e.Names) }

func (e *SelectionError) Error() string { return "lmgraph: " + e.Message() }

// String renders s for manifests and fingerprints.
func (s Selection) String() string {
	str := func(r *regexp.Regexp) string {
		if r == nil {
			return ""
		}
		return r.String()
	}
	return fmt.Sprintf("train=%q freeze=%q", str(s.Train), str(s.Freeze))
}

// Flags renders s as the flags that choose it, as refusals name them
// (and plan, from the flags): --train "REGEX", --freeze "REGEX", those
// given; "" for the zero Selection, every parameter trained.
func (s Selection) Flags() string {
	var flags []string
	if s.Train != nil {
		flags = append(flags, fmt.Sprintf("--train %q", s.Train))
	}
	if s.Freeze != nil {
		flags = append(flags, fmt.Sprintf("--freeze %q", s.Freeze))
	}
	return strings.Join(flags, ", ")
}

// ParseSelection reads a Selection back from its String, as run
// settings record it; "" (recorded by older versions, or by none) is
// the zero Selection, every parameter trained.
func ParseSelection(recorded string) (Selection, error) {
	var s Selection
	if recorded == "" {
		return s, nil
	}
	rest := recorded
	for _, f := range []struct {
		prefix string
		dst    **regexp.Regexp
	}{{"train=", &s.Train}, {" freeze=", &s.Freeze}} {
		var ok bool
		if rest, ok = strings.CutPrefix(rest, f.prefix); !ok {
			return Selection{}, fmt.Errorf("lmgraph: selection %q: want train=\"REGEX\" freeze=\"REGEX\"", recorded)
		}
		q, err := strconv.QuotedPrefix(rest)
		if err != nil {
			return Selection{}, fmt.Errorf("lmgraph: selection %q: want train=\"REGEX\" freeze=\"REGEX\"", recorded)
		}
		rest = rest[len(q):]
		expr, err := strconv.Unquote(q)
		if err != nil {
			return Selection{}, fmt.Errorf("lmgraph: selection %q: %w", recorded, err)
		}
		if expr == "" {
			continue
		}
		if *f.dst, err = regexp.Compile(expr); err != nil {
			return Selection{}, fmt.Errorf("lmgraph: selection %q: %w", recorded, err)
		}
	}
	if rest != "" {
		return Selection{}, fmt.Errorf("lmgraph: selection %q: want train=\"REGEX\" freeze=\"REGEX\"", recorded)
	}
	return s, nil
}

// SelectionOf returns a Selection that trains exactly the parameters
// named in held of a model whose parameters (Select's, in initializer
// order) are parameters: the zero Selection where held names every
// one; else a --train, or a --freeze where that is shorter, of the
// names themselves (anchored, each quoted), which trains them as the
// run that held them did. It is for a checkpoint that records no
// selection (spiral sft's before 2026-12-06), whose tensors are the
// parameters its run trained. Names that are none of the parameters,
// or none at all, are refused with an *UnselectableError: no selection
// trains them.
func SelectionOf(parameters, held []string) (Selection, error) {
	isParameter := make(map[string]bool, len(parameters))
	for _, p := range parameters {
		isParameter[p] = true
	}
	isHeld := make(map[string]bool, len(held))
	var others []string
	for _, h := range held {
		if !isParameter[h] {
			others = append(others, h)
		}
		isHeld[h] = true
	}
	var trained, frozen []string
	for _, p := range parameters {
		if isHeld[p] {
			trained = append(trained, p)
		} else {
			frozen = append(frozen, p)
		}
	}
	switch {
	case len(others) > 0 || len(trained) == 0:
		return Selection{}, &UnselectableError{Held: len(trained), Parameters: len(parameters), Others: others}
	case len(frozen) == 0:
		return Selection{}, nil
	}
	train, freeze := namesPattern(trained), namesPattern(frozen)
	if len(freeze) < len(train) {
		return Selection{Freeze: regexp.MustCompile(freeze)}, nil
	}
	return Selection{Train: regexp.MustCompile(train)}, nil
}

// namesPattern is the regular expression that matches the names, each
// whole, and nothing else.
func namesPattern(names []string) string {
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = regexp.QuoteMeta(n)
	}
	return "^(?:" + strings.Join(quoted, "|") + ")$"
}

// UnselectableError is SelectionOf's refusal of tensor names that no
// Selection trains: Held of them are of the model's Parameters, Others
// none of them.
type UnselectableError struct {
	Held, Parameters int
	Others           []string
}

// Found says what the names are: "holds 12 of the model's 311
// parameters", and of Others "and 2 other tensors (\"a\", \"b\")",
// the first three named.
func (e *UnselectableError) Found() string {
	found := fmt.Sprintf("holds %d of the model's %d parameters", e.Held, e.Parameters)
	if len(e.Others) == 0 {
		return found
	}
	named := make([]string, 0, 3)
	for _, o := range e.Others[:min(3, len(e.Others))] {
		named = append(named, strconv.Quote(o))
	}
	if len(e.Others) > 3 {
		named = append(named, "...")
	}
	what := "other tensors"
	if len(e.Others) == 1 {
		what = "other tensor"
	}
	return fmt.Sprintf("%s and %d %s (%s)", found, len(e.Others), what, strings.Join(named, ", "))
}

func (e *UnselectableError) Error() string {
	return "lmgraph: no --train and --freeze selection trains exactly the tensors held: " + e.Found()
}
