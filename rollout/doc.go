// Package rollout owns generation: the batched sampling engine over
// model.LM (KV cache, temperature / top-p / top-k, stop ids and strings,
// per-token log-probabilities and entropies) and the inference scaffolds
// built on it: SPIRAL's Search -> Subsets -> Aggregate pipeline, and the
// evaluation scaffolds sequential (token budget), pass@k, majority@k and
// recursive self-aggregation (RSA).
package rollout
