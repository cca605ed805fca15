package blocks

import (
	"github.com/spiral-rl/spiral/model/onnx"
	"github.com/spiral-rl/spiral/model/onnx/onnxpb"
)

// Names of the values of the table head's graphs (Head.Stats, Head.Grad).
const (
	// HeadHidden is the [n, hidden] input: hidden states of n positions.
	HeadHidden = "hidden"
	// HeadTable is the table input: the whole head table (Stats) or a
	// block of its vocabulary (Grad), [vocab, hidden] when Head.TableRows
	// is set, else [hidden, vocab].
	HeadTable = "table"
	// HeadTargets is Stats' [n] int64 input, the token each position
	// scores.
	HeadTargets = "targets"
	// HeadVocabLimit is StatsLimited's [1] int64 input L: the statistics
	// are those of the logits of ids 0..L-1 only (the policy's
	// vocabulary, model.ExecutorOptions.VocabLimit).
	HeadVocabLimit = "vocab_limit"
	// HeadLogSumExp, HeadTargetLogit and HeadEntropy are Stats' [n]
	// outputs: log sum_v exp(logit_v), the target's logit and the entropy
	// of softmax(logits). HeadLogSumExp is Grad's [n, 1] input too.
	HeadLogSumExp   = "lse"
	HeadTargetLogit = "target_logit"
	HeadEntropy     = "entropy"
	// HeadLocal is Grad's [n, 1] int64 input: the target's index within
	// the table block, or -1 when it lies outside.
	HeadLocal = "local"
	// HeadCoef is Grad's [n, 1] input c: the derivative of the loss with
	// respect to each position's target log-probability.
	HeadCoef = "coef"
	// HeadGradHidden and HeadGradTable are Grad's outputs: the gradient of
	// the loss with respect to the hidden states (through this block of
	// the vocabulary) and, when the table is trained, to the table block.
	HeadGradHidden = "grad_hidden"
	HeadGradTable  = "grad_table"
)

// tableHeadGraphs builds the graphs of a head whose logits are
// hidden x table^T (rows) or hidden x table (not rows). Stats computes,
// per position, what the loss needs from the whole vocabulary (log-sum-
// exp, the target's logit, the entropy) over a chunk of positions;
// statsLimited the same over the ids below its HeadVocabLimit input (a
// Slice of the logits, so that the ids above it, whose probability is 0,
// add nothing: no -Inf logit whose 0 x -Inf would be NaN); Grad
// computes, for one block of the vocabulary, the gradient of the logits,
// c (onehot(target) - softmax), and from it the gradients of the hidden
// states and of the table block, so that no [positions x vocabulary]
// tensor and no table-sized temporary ever exists. A table that is not
// trained (a LoRA run's, frozen) gets no gradient: Grad then outputs the
// hidden states' alone, a product of the logits' size saved per tile.
func tableHeadGraphs(rows, trained bool, opsets []*onnxpb.OperatorSetIdProto, ir int64) (stats, statsLimited, grad *onnxpb.ModelProto) {
	model := func(b *onnx.GraphBuilder) *onnxpb.ModelProto {
		return &onnxpb.ModelProto{IrVersion: &ir, OpsetImport: opsets, Graph: b.Graph(), ProducerName: ptr("spiral")}
	}
	tableDims := []onnx.Dim{onnx.P("vocab"), onnx.P("width")}
	if !rows {
		tableDims = []onnx.Dim{onnx.P("width"), onnx.P("vocab")}
	}
	logits := func(b *onnx.GraphBuilder, h, t string) string {
		if rows {
			return b.Node("Gemm", []string{h, t}, onnx.AttrInt("transB", 1))
		}
		return b.Node("MatMul", []string{h, t})
	}

	statsGraph := func(limited bool) *onnxpb.ModelProto {
		name := "head_stats"
		if limited {
			name = "head_stats_limited"
		}
		sb := onnx.NewGraphBuilder(name)
		h := sb.Input(HeadHidden, onnx.Float32, onnx.P("n"), onnx.P("width"))
		t := sb.Input(HeadTable, onnx.Float32, tableDims...)
		tgt := sb.Input(HeadTargets, onnx.Int64, onnx.P("n"))
		z := logits(sb, h, t)
		axis := sb.ConstInt64s(1)
		if limited {
			limit := sb.Input(HeadVocabLimit, onnx.Int64, onnx.D(1))
			z = sb.Node("Slice", []string{z, sb.ConstInt64s(0), limit, axis})
		}
		lse := sb.Node("ReduceLogSumExp", []string{z, axis}, onnx.AttrInt("keepdims", 1))
		tl := sb.Node("GatherElements", []string{z, sb.Node("Unsqueeze", []string{tgt, axis})}, onnx.AttrInt("axis", 1))
		p := sb.Node("Exp", []string{sb.Node("Sub", []string{z, lse})})
		mean := sb.Node("ReduceSum", []string{sb.Node("Mul", []string{p, z}), axis}, onnx.AttrInt("keepdims", 1))
		flat := sb.ConstInt64s(-1)
		sb.NodeTo("Reshape", []string{lse, flat}, []string{HeadLogSumExp})
		sb.NodeTo("Reshape", []string{tl, flat}, []string{HeadTargetLogit})
		sb.NodeTo("Reshape", []string{sb.Node("Sub", []string{lse, mean}), flat}, []string{HeadEntropy})
		for _, o := range []string{HeadLogSumExp, HeadTargetLogit, HeadEntropy} {
			sb.Output(o, onnx.Float32, onnx.P("n"))
		}
		return model(sb)
	}

	gb := onnx.NewGraphBuilder("head_grad")
	h := gb.Input(HeadHidden, onnx.Float32, onnx.P("n"), onnx.P("width"))
	t := gb.Input(HeadTable, onnx.Float32, tableDims...)
	lse := gb.Input(HeadLogSumExp, onnx.Float32, onnx.P("n"), onnx.D(1))
	local := gb.Input(HeadLocal, onnx.Int64, onnx.P("n"), onnx.D(1))
	coef := gb.Input(HeadCoef, onnx.Float32, onnx.P("n"), onnx.D(1))
	z := logits(gb, h, t)
	p := gb.Node("Exp", []string{gb.Node("Sub", []string{z, lse})})
	vocabAxis := int64(0)
	if !rows {
		vocabAxis = 1
	}
	width := gb.Node("Gather", []string{gb.Node("Shape", []string{t}), gb.ConstInt64(vocabAxis)}, onnx.AttrInt("axis", 0))
	ids := gb.Node("Unsqueeze", []string{gb.Node("Range", []string{gb.ConstInt64(0), width, gb.ConstInt64(1)}), gb.ConstInt64s(0)})
	onehot := gb.Node("Cast", []string{gb.Node("Equal", []string{ids, local})}, onnx.AttrInt("to", int64(onnx.Float32)))
	g := gb.Node("Mul", []string{coef, gb.Node("Sub", []string{onehot, p})})
	if rows {
		gb.NodeTo("MatMul", []string{g, t}, []string{HeadGradHidden})
	} else {
		gb.NodeTo("Gemm", []string{g, t}, []string{HeadGradHidden}, onnx.AttrInt("transB", 1))
	}
	gb.Output(HeadGradHidden, onnx.Float32, onnx.P("n"), onnx.P("width"))
	if trained {
		if rows {
			gb.NodeTo("Gemm", []string{g, h}, []string{HeadGradTable}, onnx.AttrInt("transA", 1))
		} else {
			gb.NodeTo("Gemm", []string{h, g}, []string{HeadGradTable}, onnx.AttrInt("transA", 1))
		}
		gb.Output(HeadGradTable, onnx.Float32, tableDims...)
	}
	return statsGraph(false), statsGraph(true), model(gb)
}

func ptr[T any](v T) *T { return &v }

// tableHead recognizes the usual LM head: the logits are one MatMul of
// the head's input with a parameter table, [hidden, vocab] as stored or
// [vocab, hidden] through a Transpose (a head tied to the embedding).
// It returns the table and its layout, or "" when the head is anything
// else (then the generic head-loss graph is used).
func (s *splitter) tableHead(p int, x string) (table string, rows bool) {
	a := s.a
	var own []int
	for i, o := range s.owner {
		if o == p {
			own = append(own, i)
		}
	}
	if len(own) != 1 {
		return "", false
	}
	n := a.nodes[own[0]]
	if n.GetOpType() != "MatMul" || n.GetInput()[0] != x || firstOutput(n) != a.logits {
		return "", false
	}
	w := n.GetInput()[1]
	if a.weight[w] {
		return w, false
	}
	q, ok := a.prod[w]
	if !ok || a.class[q] != classStatic || a.nodes[q].GetOpType() != "Transpose" || !swapsLastTwo(a.nodes[q]) {
		return "", false
	}
	if src := a.nodes[q].GetInput()[0]; a.weight[src] {
		return src, true
	}
	return "", false
}
