package autodiff

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/spiral-rl/spiral/model/onnx/onnxpb"
	"google.golang.org/protobuf/proto"
)

// ConvertFloat (a test oracle, for the external tests too) returns a copy
// of g in which every float32 tensor becomes a
// float64 tensor (toDouble) or the reverse: input, output and value_info
// types, initializers, Constant and ConstantOfShape values, and Cast "to"
// attributes. Gradient checks use it to run a float32 model in float64.
// Initializers stored as external data are an error.
func ConvertFloat(g *onnxpb.GraphProto, toDouble bool) (*onnxpb.GraphProto, error) {
	from, to := tFloat, tDouble
	if !toDouble {
		from, to = tDouble, tFloat
	}
	out := proto.Clone(g).(*onnxpb.GraphProto)
	fixType := func(vs []*onnxpb.ValueInfoProto) {
		for _, v := range vs {
			if tt := v.GetType().GetTensorType(); tt != nil && tt.GetElemType() == from {
				tt.ElemType = proto.Int32(to)
			}
		}
	}
	fixType(out.Input)
	fixType(out.Output)
	fixType(out.ValueInfo)
	for _, t := range out.Initializer {
		if err := convertTensor(t, from, to); err != nil {
			return nil, err
		}
	}
	for _, n := range out.Node {
		for _, a := range n.Attribute {
			if a.GetT() != nil {
				if err := convertTensor(a.T, from, to); err != nil {
					return nil, fmt.Errorf("autodiff: node %q: %w", n.GetName(), err)
				}
			}
			if n.GetOpType() == "Cast" && a.GetName() == "to" && int32(a.GetI()) == from {
				a.I = proto.Int64(int64(to))
			}
		}
	}
	return out, nil
}

func convertTensor(t *onnxpb.TensorProto, from, to int32) error {
	if t.GetDataType() != from {
		return nil
	}
	if len(t.GetExternalData()) > 0 {
		return fmt.Errorf("autodiff: tensor %q: external data is not supported", t.GetName())
	}
	var v []float64
	switch from {
	case tFloat:
		if raw := t.GetRawData(); raw != nil {
			for i := 0; i+4 <= len(raw); i += 4 {
				v = append(v, float64(math.Float32frombits(binary.LittleEndian.Uint32(raw[i:]))))
			}
		} else {
			for _, x := range t.GetFloatData() {
				v = append(v, float64(x))
			}
		}
	case tDouble:
		if raw := t.GetRawData(); raw != nil {
			for i := 0; i+8 <= len(raw); i += 8 {
				v = append(v, math.Float64frombits(binary.LittleEndian.Uint64(raw[i:])))
			}
		} else {
			v = t.GetDoubleData()
		}
	}
	t.RawData, t.FloatData, t.DoubleData = nil, nil, nil
	nt := tensorFloat(to, nil, v...)
	t.FloatData, t.DoubleData = nt.FloatData, nt.DoubleData
	t.DataType = proto.Int32(to)
	return nil
}
