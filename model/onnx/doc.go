// Package onnx reads, writes and builds ONNX models.
//
// A Model wraps the generated protobuf message *onnxpb.ModelProto (field
// Proto), which graph transforms edit directly. Load and Parse decode a
// model; LoadGraph decodes its graph and leaves large tensors' data in
// their files, read on demand; Save encodes one atomically; GraphBuilder
// builds graphs node by node with fresh value names; NewTensor and the
// Float32s / Float64s / RawBytes helpers move tensor data between
// TensorProto and Go slices.
//
// Conventions:
//
//   - Tensor data is row-major and little-endian, as the ONNX IR stores
//     raw_data. NewTensor always writes raw_data; the readers accept raw_data
//     and the typed fields (float_data, int32_data, ...).
//   - External data: Load reads every tensor stored with
//     data_location=EXTERNAL (external_data keys location, offset, length;
//     location relative to the model file's directory, as model.onnx_data or
//     model.onnx.data in real exports) into raw_data, so a loaded Model never
//     refers to files (LoadGraph's does, until InlineAll). Save moves initializers of the main graph at or over
//     SaveOptions.SizeThreshold bytes into one side file, tensors of 1 MiB
//     or more aligned to 64 KiB as onnx.save_model aligns them.
//   - A serialized ModelProto is limited to 2 GiB - 1 bytes (MaxProtoSize) by
//     protobuf; larger models must use external data.
//   - Dims: a Dim is symbolic when Param is set ("batch_size"), fixed when
//     Value >= 0, and unknown otherwise.
//   - Errors name the file and the problem and carry the package prefix
//     "onnx:"; the builder panics on programmer misuse (a duplicate value
//     name, data that does not fit the dims) with the prefix "onnx:".
package onnx
