// Package qwen3 generates ONNX graphs of the Qwen3 decoder architecture
// (transformers' Qwen3ForCausalLM) with random weights. The plain-Go
// forward pass they are tested against is in qwen3ref, which only tests
// import.
//
// The graph has the signature of HF optimum / onnx-community exports, so
// the code that runs a real export runs ours unchanged:
//
//	inputs   input_ids                 int64   [batch_size, sequence_length]
//	         attention_mask            int64   [batch_size, total_sequence_length]
//	         position_ids              int64   [batch_size, sequence_length]
//	         past_key_values.{i}.key   float32 [batch_size, kv_heads, past_sequence_length, head_dim]
//	         past_key_values.{i}.value float32 (same)
//	outputs  logits                    float32 [batch_size, sequence_length, vocab]
//	         present.{i}.key           float32 [batch_size, kv_heads, total_sequence_length, head_dim]
//	         present.{i}.value         float32 (same)
//
// total_sequence_length = past_sequence_length + sequence_length; the first
// call passes a cache of length 0. present.{i}.* is the past concatenated
// with this call's keys and values (after k_norm and rotary), ready to be
// fed back.
//
// Computation, per transformers' Qwen3 in float32 (eager attention):
//
//	x = embed_tokens[input_ids]                                   [B, S, hidden]
//	per layer:
//	  h = RMSNorm(x) · input_layernorm                            RMSNorm(x) = x / sqrt(mean(x², -1) + eps)
//	  q = rope(RMSNorm(h·Wq as [B, S, heads, D]) · q_norm)         per-head norm BEFORE rotary
//	  k = rope(RMSNorm(h·Wk as [B, S, kv_heads, D]) · k_norm)
//	  v = h·Wv as [B, S, kv_heads, D]
//	  K, V = concat(past, k|v) on the sequence axis -> present
//	  a = softmax(q·repeat_kv(K)ᵀ / sqrt(D) + mask) · repeat_kv(V)
//	  x = x + a·Wo
//	  x = x + (SiLU(RMSNorm(x)·post_attention_layernorm·Wgate) * (... ·Wup)) · Wdown
//	logits = (RMSNorm(x) · norm) · lm_head        lm_head = embed_tokensᵀ when tied
//
// Rotary embedding: inv_freq[i] = θ^(-2i/D) (InvFreq, rounded to float32),
// angles = position_ids · inv_freq duplicated over both halves of D,
// rope(x) = x·cos + rotate_half(x)·sin with rotate_half(x) =
// cat(-x[D/2:], x[:D/2]). Angles come from position_ids, so each row of a
// padded batch carries its own positions.
//
// Mask: query slot past+q may see key slot j when j <= past+q (causal over
// cache slots, not over position_ids) and attention_mask[b, j] != 0. Masked
// scores get MaskValue (the lowest finite float32) added, so a query that
// sees nothing (a padding position) gets a uniform softmax, never NaN; its
// logits are meaningless and callers ignore them.
//
// Weights are float32 initializers named as in the Hugging Face state dict
// (ParamNames): model.embed_tokens.weight [vocab, hidden];
// model.layers.{i}.{input_layernorm, post_attention_layernorm}.weight
// [hidden]; model.layers.{i}.self_attn.{q_norm, k_norm}.weight [head_dim];
// model.norm.weight [hidden]. Projection weights (q/k/v/o_proj,
// gate/up/down_proj and lm_head) are stored as [in, out] for MatMul, that
// is TRANSPOSED relative to PyTorch's nn.Linear [out, in]: q_proj is
// [hidden, heads·head_dim], o_proj [heads·head_dim, hidden], lm_head
// [hidden, vocab]. A tied model has no lm_head.weight; its head is a
// Transpose node of the embedding. Projections and the embedding start
// from N(0, InitStd²), norm weights from 1, drawn in ParamNames order from
// a PCG seeded with the build seed.
//
// Only standard ai.onnx operators at opset 18 appear (Gather, MatMul, Add,
// Mul, Pow, ReduceMean, Sqrt, Reciprocal, Sigmoid, Softmax, Transpose,
// Reshape, Concat, Slice, Unsqueeze, Expand, Where, Cast, Cos, Sin, Neg,
// Shape, Range, LessOrEqual, And, Constant; with Config.PositionsFromMask
// also CumSum, Sub and Max): the autodiff package differentiates this
// graph. Small constants (axes, shapes, inv_freq) are
// Constant nodes, so that every initializer is a trainable weight.
package qwen3
