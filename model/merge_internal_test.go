package model

import (
	"fmt"

	"github.com/spiral-rl/spiral/model/lmgraph"
	"github.com/spiral-rl/spiral/model/onnx/onnxpb"
	"github.com/spiral-rl/spiral/model/params"
)

// MergeLoRA is, for tests, the merged weights themselves: for each adapter
// of l on the model at src, its base weight with the adapter merged in
// (W + scale x A B, [in, out], named as the base initializer). The
// exports merge as they write instead; tests check them against this.
func MergeLoRA(src string, l lmgraph.LoRA, adapters *params.Store) (*params.Store, error) {
	m, as, err := sourceAdapters(src, l)
	if err != nil {
		return nil, err
	}
	inits := map[string]*onnxpb.TensorProto{}
	for _, t := range m.Graph().GetInitializer() {
		inits[t.GetName()] = t
	}
	specs := make([]params.Spec, len(as))
	for i, a := range as {
		specs[i] = params.Spec{Name: a.Base, Shape: []int64{a.In, a.Out}}
	}
	out, err := params.NewStore(specs)
	if err != nil {
		return nil, err
	}
	for i, a := range as {
		f, err := adapterFactors(a, l, adapters)
		if err != nil {
			return nil, err
		}
		w := out.At(i).Data
		if err := m.ReadFloat32s(inits[a.Base], w); err != nil {
			return nil, fmt.Errorf("model: lora: %s: %w", a.Base, err)
		}
		f.addTo(w)
	}
	return out, nil
}
