// Package blocks cuts the training computation of a causal language model
// into pieces that an executor runs one at a time, so that training
// memory grows with what each layer receives (rows x tokens x hidden per
// layer) rather than with everything the layers compute.
//
// Split reads the forward graph of the model (autodiff.ForwardGraph,
// decomposed into primitive ops: inputs input_ids, attention_mask and
// maybe position_ids, the parameters as inputs, one output, the logits)
// and finds its structure from the data flow alone, without names, so
// that the optimum, TorchScript and dynamo exports of one architecture
// are cut alike:
//
//   - Classes of nodes: static nodes depend on no graph input (constants,
//     parameters and what is computed from them alone, such as a
//     transposed weight); side nodes depend on the graph inputs but not on
//     a parameter's data (position tables, the causal mask); activation
//     nodes are the rest. Side nodes form the prologue, run once per
//     micro-batch; static nodes are copied into every piece that reads
//     them.
//   - Cuts: an activation value through which every path from the
//     embedding to the logits passes (a dominator of the logits in the
//     data-flow graph of the activations; shape reads are not data). The
//     residual stream between two sub-layers is such a value. Cuts before
//     each attention softmax delimit the layers: a Block runs from one
//     such cut to the next, and its input is the only activation kept
//     across the whole step (activation checkpointing).
//   - Attention core: inside a block, the nodes from the score MatMul
//     (q x kT) through the softmax to the MatMul with the values. The
//     executor runs it in blocks of queries, each over the keys it may see
//     (causal: keys 0..q1), so no [heads x T x T] tensor exists at once.
//     The nodes before it (projections, norms, rotary embedding) form the
//     block's Pre piece; the rest (output projection, MLP, residuals) its
//     Post piece, less the Tail.
//   - Tail: the nodes after the layer's last residual cut when they act on
//     each position alone (positionwiseTail): the MLP with its norm and
//     residual add, and in the last layer the final norm. The executor
//     runs it on chunks of positions, so the MLP's wide intermediates
//     never exist for all positions at once.
//   - Head: the LM-head MatMul and what follows it to the logits, which
//     must act on each position alone. When the logits are one MatMul
//     with a parameter table (tableHead), the executor runs the loss in
//     the graphs of tableHeadGraphs, over chunks of the loss positions and
//     blocks of the vocabulary; any other head in an
//     autodiff.HeadLossGraph over chunks of the loss positions. So no
//     [rows x tokens x vocab] tensor exists.
//   - Embedding: when the first activation is a Gather from a parameter
//     table, the executor gathers and scatters its rows itself, so its
//     gradient is never a dense table-sized tensor.
//
// Every piece comes with its backward graph (autodiff.Differentiate with
// the outputs' gradients as the seeds of the vector-Jacobian product,
// autodiff.Options.Seeds), which recomputes from the piece's inputs only
// the forward values its gradients need (not an output that nothing else
// reads, such as the attention core's product with the values). Pieces are stored with canonical value names, so that
// the layers of one architecture share one forward and one backward
// graph (Program.Graphs), fed different parameters.
package blocks
