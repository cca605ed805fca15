package autodiff_test

import (
	"github.com/spiral-rl/spiral/model/autodiff"
)

// Short names for the package under test; the tests live in autodiff_test
// because modeltest imports model, which imports autodiff.
type (
	Options            = autodiff.Options
	LMOptions          = autodiff.LMOptions
	UnsupportedOpError = autodiff.UnsupportedOpError
	Seed               = autodiff.Seed
)

var (
	Differentiate = autodiff.Differentiate
	Decompose     = autodiff.Decompose
	ConvertFloat  = autodiff.ConvertFloat
	LossGraph     = autodiff.LossGraph
	TrainingGraph = autodiff.TrainingGraph
	GradName      = autodiff.GradName
	Prune         = autodiff.Prune

	attrInt     = autodiff.AttrInt
	attrInts    = autodiff.AttrInts
	attrFloat   = autodiff.AttrFloat
	attrTensor  = autodiff.AttrTensor
	tensorI64   = autodiff.TensorI64
	tensorFloat = autodiff.TensorFloat
	valueInfo   = autodiff.ValueInfo
	namedDims   = autodiff.NamedDims
)

const (
	tFloat  = autodiff.TFloat
	tDouble = autodiff.TDouble
	tInt64  = autodiff.TInt64
	tBool   = autodiff.TBool

	InputLossMask    = autodiff.InputLossMask
	InputAdvantages  = autodiff.InputAdvantages
	InputOldLogprobs = autodiff.InputOldLogprobs
	InputClipLow     = autodiff.InputClipLow
	InputClipHigh    = autodiff.InputClipHigh
	OutputLogprobs   = autodiff.OutputLogprobs
	OutputEntropy    = autodiff.OutputEntropy
	OutputLoss       = autodiff.OutputLoss
	OutputLogits     = autodiff.OutputLogits
)
