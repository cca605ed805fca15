// Package model owns the network side of spiral: the ONNX Runtime
// environment (Runtime), the graphs derived from a model and cached
// beside it (PrepareArtifacts), language-model sessions that generate
// over a KV cache (LM, RowCache), the executor that runs the training
// program (Executor), the policy that holds them over one set of weights
// (Policy) and the exports (Export, ExportHF, ExportPEFT). The parameter
// store, the optimiser and checkpoints are its sub-packages model/params,
// model/optim and model/checkpoint; the other larger concepts are
// sub-packages too: model/onnx (ONNX codec and graph builder), model/qwen3
// (the Qwen3-architecture graph generator, with its float64 reference in
// qwen3ref), model/autodiff (reverse-mode differentiation of ONNX graphs),
// model/blocks (the training program), model/ortc (ONNX Runtime's C API)
// and model/tokenizer.
//
// Conventions: tensors are row-major; shapes are written in comments as
// [batch, seq, hidden]; token ids are int64 here as at the ONNX boundary
// (Step, TrainBatch, LM.Extend) and int32 in the tokenizer's and
// rollout's slices; weights are float32 unless a graph says otherwise.
package model
