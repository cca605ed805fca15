package model

import (
	"fmt"
	"path/filepath"

	"google.golang.org/protobuf/proto"

	"github.com/spiral-rl/spiral/model/onnx"
	"github.com/spiral-rl/spiral/model/params"
)

// Export writes the source model at src with its initializers replaced by
// the store's tensors of the same names (shapes must match) to out. Weights
// go to an external data file beside out (out + "_data") when the model
// would exceed protobuf's 2 GiB limit, or always when external is true.
// ONNX Runtime then computes with exactly the store's weights.
func Export(src string, w *params.Store, out string, external bool) error {
	m, err := onnx.Load(src)
	if err != nil {
		return err
	}
	replaced := 0
	for i, t := range m.Graph().GetInitializer() {
		st, ok := w.Get(t.GetName())
		if !ok {
			continue
		}
		if fmt.Sprint(st.Shape) != fmt.Sprint(t.GetDims()) {
			return fmt.Errorf("model: export: %q has shape %v in %s but %v in the weights", t.GetName(), t.GetDims(), src, st.Shape)
		}
		nt := onnx.NewTensor(t.GetName(), st.Shape, st.Data)
		m.Graph().Initializer[i] = nt
		replaced++
	}
	if replaced != w.Len() {
		return fmt.Errorf("model: export: %s has %d of the %d weight tensors; wrong source model?", src, replaced, w.Len())
	}
	var opt onnx.SaveOptions
	if external || proto.Size(m.Proto) > onnx.MaxProtoSize {
		opt.ExternalDataFile = filepath.Base(out) + "_data"
	}
	return onnx.Save(out, m, opt)
}
