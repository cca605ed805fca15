// Package params holds the trainable weights of a model (the parameter
// store), gradient buffers of the same layout, and the safetensors codec that
// stores them on disk.
//
// Conventions:
//
//   - A Store holds float32 tensors in a fixed order, the order given at
//     creation (for a model: the order of its trainable ONNX initializers).
//     Names are unique. Shapes are row-major, int64 as in ONNX.
//   - All tensors of a Store live in one contiguous []float32 (Flat); each
//     Tensor.Data is a sub-slice of it whose capacity is capped at its length.
//   - Data is never reallocated after creation. ONNX Runtime tensors wrap
//     these slices without copying, so every in-place update (an optimiser
//     step, a checkpoint load) is seen by the sessions that wrap them.
//     Callers must write through the slices (copy, index assignment) and
//     never assign a new slice to Tensor.Data or append to it.
//   - Gradients are a second Store with the same layout (NewGrads); the
//     methods that combine two stores (AddScaled, CopyFrom) check the layout
//     and return an error when it differs.
//   - Reductions (Norm, Sum of squares) accumulate in float64; element-wise
//     updates are float32.
//   - Misuse that is a programming error (negative dimensions, duplicate
//     names at creation) returns an error from the constructor; the methods
//     never panic on data.
//
// The safetensors format (https://huggingface.co/docs/safetensors) is
// implemented here from its specification: an 8-byte little-endian header
// length N, N bytes of JSON header mapping each tensor name to its dtype,
// shape and [begin, end) byte offsets into the data that follows (plus an
// optional "__metadata__" map of strings), then the raw little-endian data.
// The reader validates everything: the header size bound, JSON syntax,
// duplicate names, known dtypes, shape products against byte lengths, and
// that the offsets tile the data section contiguously with no holes and no
// bytes beyond the last tensor.
package params
