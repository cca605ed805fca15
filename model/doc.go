// Package model owns the network side of spiral: the ONNX Runtime
// environment (Runtime), language-model sessions with a KV cache (LM), the
// parameter store, optimiser and checkpoints. Sub-packages hold the larger
// concepts: model/onnx (ONNX codec and graph builder), model/qwen3 (the
// Qwen3-architecture graph generator and its pure-Go reference), model/autodiff
// (reverse-mode differentiation of ONNX graphs) and model/tokenizer.
//
// Conventions: tensors are row-major; shapes are written in comments as
// [batch, seq, hidden]; token ids are int64 at the ONNX boundary and int32 in
// Go slices; weights are float32 unless a graph says otherwise.
package model
