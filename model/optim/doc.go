// Package optim updates a params.Store from its gradients: AdamW with
// decoupled weight decay and a learning-rate schedule (linear warmup, then
// constant or cosine to a floor).
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
//   - The gradient handed to Step is the batch's: rl.Gradients sums the
//     micro-batches' token-mean gradients scaled by their share of tokens,
//     d/dw (1/T) sum_t l_t = sum_k (T_k/T) * d/dw (1/T_k) sum_{t in k} l_t.
//   - An update that would leave a weight or moment non-finite (from a
//     non-finite gradient, a huge learning rate or huge weights) is
//     refused whole with ErrNonFiniteUpdate before anything is written.
//     Callers check the gradient's norm first (params.Store.ClipByNorm
//     returns it) and skip a step whose norm is not finite, so that the
//     skip names the gradient as its cause.
package optim
