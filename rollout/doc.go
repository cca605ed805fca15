// Package rollout owns generation: the batched sampling engine over
// model.LM (KV cache, temperature / top-p / top-k, stop ids, the policy's
// log-probability of every sampled token), a serving engine behind the
// same Generator interface (OpenAI: vLLM or SGLang through their
// OpenAI-compatible API, with the weight syncs of enginesync.go), and the
// inference scaffolds built on them: SPIRAL's Search -> Subsets ->
// Aggregate pipeline, and the evaluation scaffolds sequential (token
// budget), pass@k, majority@k and recursive self-aggregation (RSA).
//
// Conventions:
//
//   - Every scaffold generates through Complete (prompts x n seeds ->
//     Generate -> decode), the one place that checks that a generator
//     answered every request.
//   - A Trace is a prompt, its Completion, the decoded text and the
//     Judge's Verdict; a Judge (injected, see rl.NewJudge) is the reward in
//     training and the score in evaluation, so both read answers alike.
//   - Randomness: every trace and subset draw has its own Stream (run
//     seed, round, problem, sample, phase), so results do not depend on
//     batching and resumed runs draw what uninterrupted ones would.
package rollout
