package model

import (
	"fmt"

	"github.com/spiral-rl/spiral/model/onnx"
	"github.com/spiral-rl/spiral/model/onnx/onnxpb"
)

// MinOpset and MaxOpset bound the standard ONNX opset (ai.onnx) a source
// model may import: the training graph is built of opset-18 forms
// (autodiff), and ONNX Runtime ORTVersion runs opsets up to 26.
// MaxIRVersion is the newest ONNX IR version that release loads.
const (
	MinOpset     = 18
	MaxOpset     = 26
	MaxIRVersion = 13
)

// checkOperators returns an error naming src, the model file m was read
// from, when spiral's graphs could not run what m is made of: an IR
// version or a standard opset out of the range above, a node of a domain
// m does not import, or a node of the standard domain whose op type is
// no ONNX operator at m's opset (standardOps). The generated graphs keep
// m's IR version, opsets and nodes, so ONNX Runtime would otherwise
// refuse one of them, in an error naming that file and a node renamed
// by the training program's pieces.
func checkOperators(m *onnx.Model, src string) error {
	if v := m.Proto.GetIrVersion(); v > MaxIRVersion {
		return fmt.Errorf("model: %s is of ONNX IR version %d; ONNX Runtime %s loads IR versions up to %d (re-export with opset %d, as optimum does, which writes IR version %d)",
			src, v, ORTVersion, MaxIRVersion, MinOpset, onnx.IRVersion(MinOpset))
	}
	opset := m.Opset("")
	switch {
	case opset == 0:
		return fmt.Errorf("model: %s imports no standard ONNX opset (ai.onnx); spiral needs opset %d to %d (re-export with opset %d, as optimum does)", src, MinOpset, MaxOpset, MinOpset)
	case opset < MinOpset:
		return fmt.Errorf("model: %s imports ONNX opset %d; the training graph needs opset %d to %d (re-export with opset %d, as optimum does)", src, opset, MinOpset, MaxOpset, MinOpset)
	case opset > MaxOpset:
		return fmt.Errorf("model: %s imports ONNX opset %d; ONNX Runtime %s runs opsets up to %d, so spiral needs opset %d to %d (re-export with opset %d, as optimum does)",
			src, opset, ORTVersion, MaxOpset, MinOpset, MaxOpset, MinOpset)
	}
	return walkNodes(m.Graph(), func(n *onnxpb.NodeProto) error {
		op, domain := n.GetOpType(), n.GetDomain()
		if domain != "" && domain != "ai.onnx" {
			if m.Opset(domain) == 0 {
				return fmt.Errorf("model: %s: node %q has op type %q of domain %q, which the model does not import (opset_import lists the domains of its nodes)", src, n.GetName(), op, domain)
			}
			return nil
		}
		since, ok := standardOps[op]
		switch {
		case !ok:
			return fmt.Errorf("model: %s: node %q has op type %q, which is not a standard ONNX operator (ai.onnx, opset %d); spiral runs the standard ONNX operators of opsets %d to %d and, of the other domains the model imports, those ONNX Runtime %s has",
				src, n.GetName(), op, opset, MinOpset, MaxOpset, ORTVersion)
		case since > opset:
			return fmt.Errorf("model: %s: node %q has op type %q, an ONNX operator from opset %d on, but the model imports opset %d", src, n.GetName(), op, since, opset)
		}
		return nil
	})
}

// walkNodes calls fn on every node of g and of the graphs its nodes'
// attributes hold (If, Loop and Scan bodies), depth first, and stops at
// the first error.
func walkNodes(g *onnxpb.GraphProto, fn func(*onnxpb.NodeProto) error) error {
	for _, n := range g.GetNode() {
		if err := fn(n); err != nil {
			return err
		}
		for _, a := range n.GetAttribute() {
			for _, sub := range append([]*onnxpb.GraphProto{a.GetG()}, a.GetGraphs()...) {
				if err := walkNodes(sub, fn); err != nil {
					return err
				}
			}
		}
	}
	return nil
}
