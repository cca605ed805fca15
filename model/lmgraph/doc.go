// Package lmgraph analyses the ONNX graph of a causal language model (the
// optimum export signature: input_ids, attention_mask, position_ids,
// past_key_values.* -> logits, present.*) for training: which initializers
// are the model's parameters and which are constants or buffers, and which
// initializers are exact copies of another (a tied head that an exporter
// wrote twice). It also chooses the trained parameters among them
// (Selection: --train, --freeze) and adds LoRA's adapters to the graph
// (AddLoRA).
//
// Conventions:
//
//   - An activation is a value whose data depends on input_ids: the token
//     embedding and everything computed from it. Outputs of Shape and Size
//     depend on shapes only and are never activations, so the causal mask,
//     position ids and RoPE tables built from them are not.
//   - A parameter is a float initializer of more than one element that,
//     possibly through layout-only ops (Identity, Cast, Transpose, Reshape,
//     Unsqueeze, Squeeze, Flatten, Expand), enters an arithmetic node
//     (MatMul, Gemm, Mul, Add, Sub, Div, Gather as the table, a
//     normalization's scale or bias, ...) together with an activation.
//     That is what a weight does and a buffer does not: RoPE's inv_freq is
//     multiplied by position ids, a float mask is sliced and selected, an
//     epsilon or a scale is a single number. Everything else is a constant.
//   - Tied copies: a parameter that is not an embedding table but equals
//     one (or its transpose) bit for bit is the same weight stored twice,
//     as the TorchScript and dynamo exporters store an LM head tied to the
//     embedding; ApplyTies rewrites the graph to read the table (through a
//     Transpose node where needed), so training keeps them tied as the
//     source model was. Tensors whose values are all equal (fresh norm
//     gains of ones) are never taken for copies.
package lmgraph
