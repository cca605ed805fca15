package model

// standardOps maps each operator of the standard ONNX domain (ai.onnx)
// to the first opset from MinOpset to MaxOpset at which ONNX defines it,
// not deprecated: Upsample and Scatter, deprecated before opset 18, are
// absent, and GroupNormalization, deprecated at 18 and defined anew at
// 21, maps to 21. It was listed from the operator schemas of the onnx
// Python package (1.23.2) by
//
//	import collections, onnx.defs
//	hist = collections.defaultdict(list)
//	for s in onnx.defs.get_all_schemas_with_history():
//	    if s.domain in ("", "ai.onnx"):
//	        hist[s.name].append((s.since_version, s.deprecated))
//	for name, vs in sorted(hist.items()):
//	    for v in range(18, 27):
//	        defined = sorted(x for x in vs if x[0] <= v)
//	        if defined and not defined[-1][1]:
//	            print(name, v)
//	            break
var standardOps = map[string]int64{
	"Abs": 18, "Acos": 18, "Acosh": 18, "Add": 18, "AffineGrid": 20, "And": 18,
	"ArgMax": 18, "ArgMin": 18, "Asin": 18, "Asinh": 18, "Atan": 18, "Atanh": 18,
	"Attention": 23, "AveragePool": 18, "BatchNormalization": 18, "Bernoulli": 18, "BitCast": 26, "BitShift": 18,
	"BitwiseAnd": 18, "BitwiseNot": 18, "BitwiseOr": 18, "BitwiseXor": 18, "BlackmanWindow": 18, "Cast": 18,
	"CastLike": 18, "Ceil": 18, "Celu": 18, "CenterCropPad": 18, "Clip": 18, "Col2Im": 18,
	"Compress": 18, "Concat": 18, "ConcatFromSequence": 18, "Constant": 18, "ConstantOfShape": 18, "Conv": 18,
	"ConvInteger": 18, "ConvTranspose": 18, "Cos": 18, "Cosh": 18, "CumProd": 26, "CumSum": 18,
	"DFT": 18, "DeformConv": 19, "DepthToSpace": 18, "DequantizeLinear": 18, "Det": 18, "Div": 18,
	"Dropout": 18, "DynamicQuantizeLinear": 18, "Einsum": 18, "Elu": 18, "Equal": 18, "Erf": 18,
	"Exp": 18, "Expand": 18, "EyeLike": 18, "Flatten": 18, "Floor": 18, "GRU": 18,
	"Gather": 18, "GatherElements": 18, "GatherND": 18, "Gelu": 20, "Gemm": 18, "GlobalAveragePool": 18,
	"GlobalLpPool": 18, "GlobalMaxPool": 18, "Greater": 18, "GreaterOrEqual": 18, "GridSample": 18, "GroupNormalization": 21,
	"HammingWindow": 18, "HannWindow": 18, "HardSigmoid": 18, "HardSwish": 18, "Hardmax": 18, "Identity": 18,
	"If": 18, "ImageDecoder": 20, "InstanceNormalization": 18, "IsInf": 18, "IsNaN": 18, "LRN": 18,
	"LSTM": 18, "LayerNormalization": 18, "LeakyRelu": 18, "Less": 18, "LessOrEqual": 18, "Log": 18,
	"LogSoftmax": 18, "Loop": 18, "LpNormalization": 18, "LpPool": 18, "MatMul": 18, "MatMulInteger": 18,
	"Max": 18, "MaxPool": 18, "MaxRoiPool": 18, "MaxUnpool": 18, "Mean": 18, "MeanVarianceNormalization": 18,
	"MelWeightMatrix": 18, "Min": 18, "Mish": 18, "Mod": 18, "Mul": 18, "Multinomial": 18,
	"Neg": 18, "NegativeLogLikelihoodLoss": 18, "NonMaxSuppression": 18, "NonZero": 18, "Not": 18, "OneHot": 18,
	"Optional": 18, "OptionalGetElement": 18, "OptionalHasElement": 18, "Or": 18, "PRelu": 18, "Pad": 18,
	"Pow": 18, "QLinearConv": 18, "QLinearMatMul": 18, "QuantizeLinear": 18, "RMSNormalization": 23, "RNN": 18,
	"RandomNormal": 18, "RandomNormalLike": 18, "RandomUniform": 18, "RandomUniformLike": 18, "Range": 18, "Reciprocal": 18,
	"ReduceL1": 18, "ReduceL2": 18, "ReduceLogSum": 18, "ReduceLogSumExp": 18, "ReduceMax": 18, "ReduceMean": 18,
	"ReduceMin": 18, "ReduceProd": 18, "ReduceSum": 18, "ReduceSumSquare": 18, "RegexFullMatch": 20, "Relu": 18,
	"Reshape": 18, "Resize": 18, "ReverseSequence": 18, "RoiAlign": 18, "RotaryEmbedding": 23, "Round": 18,
	"STFT": 18, "Scan": 18, "ScatterElements": 18, "ScatterND": 18, "Selu": 18, "SequenceAt": 18,
	"SequenceConstruct": 18, "SequenceEmpty": 18, "SequenceErase": 18, "SequenceInsert": 18, "SequenceLength": 18, "SequenceMap": 18,
	"Shape": 18, "Shrink": 18, "Sigmoid": 18, "Sign": 18, "Sin": 18, "Sinh": 18,
	"Size": 18, "Slice": 18, "Softmax": 18, "SoftmaxCrossEntropyLoss": 18, "Softplus": 18, "Softsign": 18,
	"SpaceToDepth": 18, "Split": 18, "SplitToSequence": 18, "Sqrt": 18, "Squeeze": 18, "StringConcat": 20,
	"StringNormalizer": 18, "StringSplit": 20, "Sub": 18, "Sum": 18, "Swish": 24, "Tan": 18,
	"Tanh": 18, "TensorScatter": 24, "TfIdfVectorizer": 18, "ThresholdedRelu": 18, "Tile": 18, "TopK": 18,
	"Transpose": 18, "Trilu": 18, "Unique": 18, "Unsqueeze": 18, "Where": 18, "Xor": 18,
}
