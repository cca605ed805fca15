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
//     Post piece.
//   - Head: the LM-head MatMul and what follows it to the logits, which
//     must act on each position alone; the executor runs it with the loss
//     on chunks of the loss positions (autodiff.HeadLossGraph), so no
//     [rows x tokens x vocab] tensor exists.
//   - Embedding: when the first activation is a Gather from a parameter
//     table, the executor gathers and scatters its rows itself, so its
//     gradient is never a dense table-sized tensor.
//
// Every piece comes with its backward graph (autodiff.Differentiate of
// sum(output x output gradient)), which recomputes the piece's forward
// from its inputs. Pieces are stored with canonical value names, so that
// the layers of one architecture share one forward and one backward
// graph (Program.Graphs), fed different parameters.
package blocks
