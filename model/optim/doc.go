// Package optim updates a params.Store from its gradients: AdamW with
// decoupled weight decay, a learning-rate schedule (linear warmup, then
// constant or cosine to a floor), and gradient accumulation over
// micro-batches.
//
// Conventions:
//
//   - Weights, gradients and both AdamW moments are params.Stores with one
//     layout; updates happen in place (the weights' Data slices are the ones
//     ONNX Runtime sessions wrap).
//   - Moments are float32, like PyTorch's for float32 parameters; each
//     element's update is computed in float64 and rounded once.
//   - Step numbers: AdamW.Steps counts completed updates; Schedule.LR takes
//     the 0-based index of the update about to happen, i.e. AdamW.Steps()
//     before calling Step. Bias correction uses t = Steps()+1.
//   - The learning rate is an argument of every Step, so the schedule, the
//     optimiser and the trainer stay independent and each is testable alone.
//   - Gradient accumulation: the loss of a batch is the token-mean over all
//     response tokens of the batch. A micro-batch graph returns gradients of
//     its own token-mean loss; scaling them by
//     tokens_in_micro/tokens_in_batch (MicroBatchScale) and summing gives
//     exactly the gradient of the batch's token-mean loss:
//     d/dw (1/T) sum_t l_t = sum_k (T_k/T) * d/dw (1/T_k) sum_{t in k} l_t.
//     Accumulator does this and checks that the token counts add up.
//   - Non-finite gradients are not checked by Step; use the norm returned
//     by params.Store.ClipByNorm and skip the step when it is not finite.
//     An update that would overflow float32 (from a huge learning rate or
//     huge weights) is refused whole with ErrNonFiniteUpdate before
//     anything is written.
package optim
