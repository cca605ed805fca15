package autodiff_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/spiral-rl/spiral/model/modeltest"
	"github.com/spiral-rl/spiral/model/onnx/onnxpb"
	ort "github.com/yalue/onnxruntime_go"
	"google.golang.org/protobuf/proto"
)

// feed is one input tensor of a test graph.
type feed struct {
	name  string
	shape []int64
	f64   []float64 // double input
	f32   []float32 // float input
	i64   []int64   // int64 input
	b     []bool    // bool input
}

func (f feed) value() (ort.Value, error) {
	s := ort.NewShape(f.shape...)
	if len(f.shape) == 0 { // onnxruntime_go makes 0-D tensors only as Scalar
		switch {
		case f.f32 != nil:
			return ort.NewScalar(f.f32[0])
		case f.i64 != nil:
			return ort.NewScalar(f.i64[0])
		case f.b != nil:
			return ort.NewScalar(f.b[0])
		}
		return ort.NewScalar(f.f64[0])
	}
	switch {
	case f.f32 != nil:
		return ort.NewTensor(s, append([]float32(nil), f.f32...))
	case f.i64 != nil:
		return ort.NewTensor(s, append([]int64(nil), f.i64...))
	case f.b != nil:
		return ort.NewTensor(s, append([]bool(nil), f.b...))
	}
	return ort.NewTensor(s, append([]float64(nil), f.f64...))
}

func (f feed) elemType() int32 {
	switch {
	case f.f32 != nil:
		return tFloat
	case f.i64 != nil:
		return tInt64
	case f.b != nil:
		return tBool
	}
	return tDouble
}

func numel(shape []int64) int {
	n := 1
	for _, d := range shape {
		n *= int(d)
	}
	return n
}

// modelBytes wraps g in a model importing the default domain at opset.
func modelBytes(t testing.TB, g *onnxpb.GraphProto, opset int64) []byte {
	t.Helper()
	m := &onnxpb.ModelProto{
		IrVersion:   proto.Int64(10),
		OpsetImport: []*onnxpb.OperatorSetIdProto{{Domain: proto.String(""), Version: proto.Int64(opset)}},
		Graph:       g,
	}
	data, err := proto.Marshal(m)
	if err != nil {
		t.Fatalf("marshal model: %v", err)
	}
	return data
}

// session runs one graph on ONNX Runtime's CPU provider.
type session struct {
	s      *ort.DynamicAdvancedSession
	inputs []string
	outs   []string
}

func newSession(t testing.TB, g *onnxpb.GraphProto, opset int64, outs []string) (*session, error) {
	t.Helper()
	rt := modeltest.Runtime(t)
	so, err := rt.NewSessionOptions()
	if err != nil {
		return nil, err
	}
	defer so.Destroy()
	// Extended optimizations fuse patterns into com.microsoft ops that have
	// float32 kernels only (x*Sigmoid(x) -> QuickGelu); the float64 checks
	// need the graph as written.
	if err := so.SetGraphOptimizationLevel(ort.GraphOptimizationLevelEnableBasic); err != nil {
		return nil, err
	}
	var ins []string
	for _, i := range g.GetInput() {
		ins = append(ins, i.GetName())
	}
	// Fetch every output flattened: onnxruntime_go cannot auto-allocate 0-D
	// outputs.
	g = proto.Clone(g).(*onnxpb.GraphProto)
	g.Node = append(g.Node, cI64("test/flat", -1))
	var flat []string
	for _, o := range outs {
		g.Node = append(g.Node, nd("Reshape", []string{o, "test/flat"}, []string{o + "/flat"}))
		g.Output = append(g.Output, &onnxpb.ValueInfoProto{Name: proto.String(o + "/flat")})
		flat = append(flat, o+"/flat")
	}
	s, err := ort.NewDynamicAdvancedSessionWithONNXData(modelBytes(t, g, opset), ins, flat, so)
	if err != nil {
		return nil, err
	}
	ss := &session{s: s, inputs: ins, outs: outs}
	t.Cleanup(func() { s.Destroy() })
	return ss, nil
}

// output is one fetched output, converted to float64.
type output struct {
	shape []int64
	v     []float64
}

// run feeds the named inputs (every graph input must be fed) and returns
// the outputs as float64.
func (s *session) run(feeds map[string]feed) (map[string]output, error) {
	in := make([]ort.Value, len(s.inputs))
	defer func() {
		for _, v := range in {
			if v != nil {
				v.Destroy()
			}
		}
	}()
	for i, name := range s.inputs {
		f, ok := feeds[name]
		if !ok {
			return nil, fmt.Errorf("no feed for input %q", name)
		}
		v, err := f.value()
		if err != nil {
			return nil, err
		}
		in[i] = v
	}
	out := make([]ort.Value, len(s.outs))
	if err := s.s.Run(in, out); err != nil {
		return nil, err
	}
	res := map[string]output{}
	for i, v := range out {
		o := output{shape: v.GetShape()}
		switch tv := v.(type) {
		case *ort.Tensor[float64]:
			o.v = append([]float64(nil), tv.GetData()...)
		case *ort.Tensor[float32]:
			for _, x := range tv.GetData() {
				o.v = append(o.v, float64(x))
			}
		case *ort.Tensor[int64]:
			for _, x := range tv.GetData() {
				o.v = append(o.v, float64(x))
			}
		default:
			v.Destroy()
			return nil, fmt.Errorf("output %q: unsupported type %T", s.outs[i], v)
		}
		v.Destroy()
		res[s.outs[i]] = o
	}
	return res, nil
}

// gradCheck compares Differentiate's gradients of loss with respect to wrt
// against central finite differences (step h) of the forward graph fwd,
// over the coordinates chosen by pick (nil = all). It returns the largest
// relative error max|ad - fd| / max(max|fd|, floor) per wrt input.
func gradCheck(t *testing.T, fwd *onnxpb.GraphProto, opset int64, feeds map[string]feed, loss string, wrt []string,
	h, floor float64, pick func(name string, n int) []int) map[string]float64 {
	t.Helper()
	gg, err := Differentiate(fwd, loss, wrt, Options{})
	if err != nil {
		t.Fatalf("Differentiate: %v", err)
	}
	return gradCheckGraph(t, gg, fwd, opset, feeds, loss, wrt, h, floor, pick)
}

// gradCheckGraph is gradCheck with the gradient graph gg given.
func gradCheckGraph(t *testing.T, gg, fwd *onnxpb.GraphProto, opset int64, feeds map[string]feed, loss string, wrt []string,
	h, floor float64, pick func(name string, n int) []int) map[string]float64 {
	t.Helper()
	var outs []string
	for _, w := range wrt {
		outs = append(outs, GradName(w))
	}
	gs, err := newSession(t, gg, opset, append([]string{loss}, outs...))
	if err != nil {
		t.Fatalf("gradient graph session: %v", err)
	}
	got, err := gs.run(feeds)
	if err != nil {
		t.Fatalf("run gradient graph: %v", err)
	}
	// Finite differences on the forward graph with fused ops decomposed (the
	// decomposition itself is checked against ONNX Runtime's kernels in
	// TestDecomposeMatchesRuntime).
	dec, err := Decompose(fwd)
	if err != nil {
		t.Fatalf("Decompose: %v", err)
	}
	fs, err := newSession(t, dec, opset, []string{loss})
	if err != nil {
		t.Fatalf("forward session: %v", err)
	}
	lossAt := func(fd map[string]feed) float64 {
		o, err := fs.run(fd)
		if err != nil {
			t.Fatalf("run forward: %v", err)
		}
		s := 0.0
		for _, v := range o[loss].v {
			s += v
		}
		return s
	}
	base := lossAt(feeds)
	if d := base - sum(got[loss].v); d > 1e-9*max(1, abs(base)) || -d > 1e-9*max(1, abs(base)) {
		t.Errorf("loss of gradient graph %v != forward loss %v", sum(got[loss].v), base)
	}
	rel := map[string]float64{}
	for _, w := range wrt {
		f := feeds[w]
		ad := got[GradName(w)]
		if len(ad.v) != numel(f.shape) {
			t.Fatalf("%s: gradient has %d elements (shape %v), want %d", w, len(ad.v), ad.shape, numel(f.shape))
		}
		coords := make([]int, numel(f.shape))
		for i := range coords {
			coords[i] = i
		}
		if pick != nil {
			coords = pick(w, len(coords))
		}
		maxFD, maxErr := 0.0, 0.0
		for _, i := range coords {
			fd := finiteDiff(f, i, h, func(x feed) float64 {
				m := map[string]feed{}
				for k, v := range feeds {
					m[k] = v
				}
				m[w] = x
				return lossAt(m)
			})
			maxFD = max(maxFD, abs(fd))
			maxErr = max(maxErr, abs(fd-ad.v[i]))
			if testing.Verbose() && len(coords) <= 4 {
				t.Logf("%s[%d]: ad %.10g fd %.10g", w, i, ad.v[i], fd)
			}
		}
		rel[w] = maxErr / max(maxFD, floor)
		if math.IsNaN(rel[w]) {
			// A NaN gradient (or loss) compares false with any bound:
			// report it as the largest error.
			rel[w] = math.Inf(1)
		}
	}
	return rel
}

// finiteDiff returns (L(x + h e_i) - L(x - h e_i)) / 2h.
func finiteDiff(f feed, i int, h float64, loss func(feed) float64) float64 {
	shift := func(d float64) feed {
		g := f
		if f.f32 != nil {
			g.f32 = append([]float32(nil), f.f32...)
			g.f32[i] += float32(d)
		} else {
			g.f64 = append([]float64(nil), f.f64...)
			g.f64[i] += d
		}
		return g
	}
	return (loss(shift(h)) - loss(shift(-h))) / (2 * h)
}

func sum(v []float64) float64 {
	s := 0.0
	for _, x := range v {
		s += x
	}
	return s
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

// randn returns n standard normal draws.
func randn(r *rand.Rand, n int) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = r.NormFloat64()
	}
	return v
}
