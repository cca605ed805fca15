// Package autodiff generates ONNX training graphs: reverse-mode
// differentiation of an ONNX forward graph (Differentiate), the causal LM's
// forward graph that model/blocks cuts into the training program
// (ForwardGraph), the loss graph of an LM head that is not one product with
// a table (HeadLossGraph), and the whole causal-LM policy-gradient training
// graph (TrainingGraph), which spiral keeps as the tests' oracle.
//
// Conventions:
//
//   - Graphs are raw onnxpb messages. Differentiate never mutates its input;
//     it returns a new graph that computes every value the forward graph did
//     (same node outputs, same graph outputs) plus one output per entry of
//     wrt named GradName(w) = "grad." + w, holding d loss / d w with the
//     dtype and shape of w. A wrt entry the loss does not depend on gets a
//     zero gradient.
//   - The loss must be a float tensor; its seed gradient is ones of its shape,
//     so a non-scalar loss is differentiated as the sum of its elements.
//     Without a loss, Options.Seeds gives the seeds as graph inputs, one per
//     value: the vector-Jacobian product the training program's backward
//     graphs compute, which, unlike a surrogate loss, leaves no node that
//     reads the seeded values, so Prune can drop their computation.
//   - Emitted nodes use opset-18 forms of the default domain (Reduce* with
//     axes as an input, ScatterND/ScatterElements with reduction="add"), so the
//     model must import the default domain at opset >= 18. Rules read both
//     the attribute and the input form of axes in forward nodes.
//     Softmax and LogSoftmax follow opset >= 13 semantics (one axis).
//   - Fused ops (Gemm, LayerNormalization, and the opset-23 RMSNormalization,
//     RotaryEmbedding and Attention) are first rewritten into primitives by
//     Decompose; the primitive graph is what gets differentiated.
//   - Generated value and node names start with NamePrefix ("ad/"), then the
//     pass ("grad/", "dec/", "lm/", "past/") and a counter; a pass fails if
//     the graph already uses its prefix.
//   - Shapes are inferred with symbolic dims: a dim_param of value_info (or
//     of an input) names one symbol per name, every other unknown dim gets a
//     fresh one, and shape arithmetic (Shape, Gather, Concat, Reshape,
//     Expand...) carries them. value_info is trusted. A broadcast gradient is
//     summed over constant axes when the dims decide it, and otherwise
//     reduced at run time (ReduceSum over the axes where the left-padded
//     input shape is 1, then Reshape to Shape(input)), so dynamic dims
//     (batch, sequence) need no static shape information.
//   - Only float tensors (float16, bfloat16, float, double) carry gradients.
//     Integer and bool values, and the index/shape/mask inputs of ops (Gather
//     indices, Reshape shape, Where condition, Slice starts...), are pruned.
//     A node on a path from wrt to the loss whose op has no gradient rule
//     stops Differentiate with an *UnsupportedOpError naming the op type and
//     the node.
//   - Ties in Max, Min and ReduceMax split the gradient evenly among the tied
//     inputs (the convention of PyTorch's amax); Relu passes no gradient at 0.
//
// LossGraph and TrainingGraph turn an optimum-style causal LM (input_ids,
// attention_mask, position_ids, past_key_values.*; logits, present.*) into
// the training graph of the clipped token-level policy-gradient loss; see
// LossGraph for the exact alignment of logprobs (position t scores token
// t+1) and the loss.
package autodiff
