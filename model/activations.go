package model

import (
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/spiral-rl/spiral/model/onnx"
	"github.com/spiral-rl/spiral/model/ortc"
)

// On the device layer the executor keeps activations and their
// gradients in device memory: the graphs' outputs are allocated there
// (runKeeping), the MLP tail and the attention core run on views of
// their inputs and write views of their outputs, a score-shaped input's
// block of queries is sliced there, and gradients meeting at a value are
// added there (addGrad). What Go reads (the embedding's gradient,
// indices a prologue computes) comes to the host through hostValue, counted with the calls' bytes (CallBytes). On the
// CPU twin that memory is the device twin (ortc.NewTwinMemoryInfo),
// which Go may not read either: a read that would fault on CUDA panics
// in CI.

// activationSessions are the device layer's graphs over activations:
// the in-place sum of two gradients per rank, a copy per element type,
// and the slice of a score-shaped input per element type and rank.
type activationSessions struct {
	add      map[int]*ortc.Session
	identity map[ortc.ElemType]*ortc.Session
	slice    map[sliceKey]*ortc.Session
	segments map[sliceKey]*ortc.Session // segmentMaskModel
}

// sliceKey names a slice graph: its data's element type and rank.
type sliceKey struct {
	elem ortc.ElemType
	rank int
}

func newActivationSessions() activationSessions {
	return activationSessions{add: map[int]*ortc.Session{}, identity: map[ortc.ElemType]*ortc.Session{}, slice: map[sliceKey]*ortc.Session{}, segments: map[sliceKey]*ortc.Session{}}
}

func (a *activationSessions) close() {
	for _, s := range a.add {
		s.Close()
	}
	for _, s := range a.identity {
		s.Close()
	}
	for _, s := range a.slice {
		s.Close()
	}
	for _, s := range a.segments {
		s.Close()
	}
}

// placed reports whether the graphs' outputs go to device memory: on the
// device layer.
func (e *Executor) placed(int) bool { return e.dev != nil }

// runKeeping runs graph key on in, filling out: an entry of out that is
// set is preallocated and written in place; on the device layer the
// others for which device(k) holds are allocated in device memory, the
// rest on the host (counted as crossing, as the host inputs are).
func (e *Executor) runKeeping(key string, in, out []*ortc.Value, device func(k int) bool) error {
	return e.runSessionKeeping(e.sess[key], in, out, device)
}

// runSessionKeeping is runKeeping on session sess.
func (e *Executor) runSessionKeeping(sess *ortc.Session, in, out []*ortc.Value, device func(k int) bool) error {
	if e.dev == nil {
		return e.runSession(sess, in, out)
	}
	if err := e.runBinding(sess, in, out, device); err != nil {
		return err
	}
	e.countHost(in)
	e.countHost(out)
	return nil
}

// hostValue returns v in host memory, for Go to read: v itself unless it
// is in the device layer's memory, else a copy returned by a graph
// (counted as crossing). release frees the copy.
func (e *Executor) hostValue(v *ortc.Value) (h *ortc.Value, release func(), err error) {
	if !v.Placed() {
		return v, func() {}, nil
	}
	sess, err := e.devGrads.acts.identitySession(e, v.Elem())
	if err != nil {
		return nil, nil, err
	}
	out := []*ortc.Value{nil}
	if err := e.runSession(sess, []*ortc.Value{v}, out); err != nil {
		return nil, nil, fmt.Errorf("copy to the host: %w", err)
	}
	return out[0], out[0].Release, nil
}

// copyOnDevice copies src into dst, both in device memory, of one
// shape.
func (e *Executor) copyOnDevice(dst, src *ortc.Value) error {
	sess, err := e.devGrads.acts.identitySession(e, src.Elem())
	if err != nil {
		return err
	}
	return e.runBound(sess, []*ortc.Value{src}, []*ortc.Value{dst})
}

// rowsOf returns the values of v from offset on as a tensor of the given
// shape over v's memory, which it holds: a view in device memory, or a
// host view of host memory.
func (e *Executor) rowsOf(v *ortc.Value, offset int, shape []int64) (*ortc.Value, error) {
	if v.Placed() {
		return v.View(offset, shape)
	}
	return v.HostView(offset, shape)
}

// addRows adds src into dst's values from offset on, where dst is in
// host memory or in device memory.
func (e *Executor) addRows(dst *ortc.Value, offset int, src *ortc.Value) error {
	if !dst.Placed() {
		addInto(dst.Float32s()[offset:offset+src.Len()], src.Float32s())
		return nil
	}
	rows, err := dst.View(offset, src.Shape())
	if err != nil {
		return err
	}
	defer rows.Release()
	return e.addInPlace(rows, src)
}

// zeroGrad returns a zeroed float tensor of shape: on the host, over the
// scratch buffer key; on the device layer, in device memory.
func (e *Executor) zeroGrad(key string, shape []int64) (*ortc.Value, error) {
	n := 1
	for _, d := range shape {
		n *= int(d)
	}
	if e.dev == nil {
		return ortc.NewTensor(e.env, shape, e.scratch(key, n))
	}
	v, err := ortc.AllocOn[float32](e.devGrads.mem.alloc, shape)
	if err != nil {
		return nil, err
	}
	if err := fillZeros(e.env, e.devGrads.zero, v); err != nil {
		v.Release()
		return nil, err
	}
	return v, nil
}

// sliceScoresOn is sliceScores for v in device memory: rows r[0]..r[1]
// and columns 0..c1 of leading index lead into sc.v, a view when they
// are whole rows, else a copy made there by a Slice graph.
func (e *Executor) sliceScoresOn(sc *scoreSlice, v *ortc.Value, lead int, r [2]int, c1 int) error {
	s := v.Shape()
	rows, cols := int(s[len(s)-2]), int(s[len(s)-1])
	base := lead * rows * cols
	var err error
	if c1 == cols {
		sc.v, err = v.View(base+r[0]*cols, unitLead(len(s), r[1]-r[0], cols))
		return err
	}
	block, err := v.View(base, unitLead(len(s), rows, cols))
	if err != nil {
		return err
	}
	defer block.Release()
	sess, err := e.devGrads.acts.sliceSession(e, v.Elem(), len(s))
	if err != nil {
		return err
	}
	starts, err := ortc.NewTensor(e.env, []int64{2}, []int64{int64(r[0]), 0})
	if err != nil {
		return err
	}
	defer starts.Release()
	ends, err := ortc.NewTensor(e.env, []int64{2}, []int64{int64(r[1]), int64(c1)})
	if err != nil {
		return err
	}
	defer ends.Release()
	out := []*ortc.Value{nil}
	if err := e.runBound(sess, []*ortc.Value{block, starts, ends}, out); err != nil {
		return fmt.Errorf("slice of %v: %w", s, err)
	}
	sc.v = out[0]
	return nil
}

// sliceSession returns the slice graph of rank-r data of elem, opened on
// first use.
func (a *activationSessions) sliceSession(e *Executor, elem ortc.ElemType, r int) (*ortc.Session, error) {
	return openOnce(e, a.slice, sliceKey{elem, r}, "score slice graph", func() ([]byte, error) { return sliceModel(onnx.DType(elem), r) },
		[]string{"data", "starts", "ends"}, []string{"out"})
}

// sliceModel is out = Slice(data, starts, ends) over the last two axes
// of rank-r data of type t.
func sliceModel(t onnx.DType, r int) ([]byte, error) {
	b := onnx.NewGraphBuilder("score_slice")
	dims := make([]onnx.Dim, r)
	outDims := make([]onnx.Dim, r)
	for i := range dims {
		dims[i] = onnx.P(fmt.Sprintf("d%d", i))
		outDims[i] = onnx.P(fmt.Sprintf("o%d", i))
	}
	data := b.Input("data", t, dims...)
	starts := b.Input("starts", onnx.Int64, onnx.D(2))
	ends := b.Input("ends", onnx.Int64, onnx.D(2))
	b.NodeTo("Slice", []string{data, starts, ends, b.ConstInt64s(-2, -1)}, []string{"out"})
	b.Output("out", t, outDims...)
	return proto.Marshal(b.Model(18).Proto)
}

// scatterRows writes rows of src [len(pos), width] into rows pos (which
// are distinct) of dst [rows, width], both in device memory, in place.
func (e *Executor) scatterRows(dst *ortc.Value, pos []int, src *ortc.Value) error {
	ids := make([]int64, len(pos))
	for k, p := range pos {
		ids[k] = int64(p)
	}
	idx, err := ortc.NewTensor(e.env, []int64{int64(len(pos)), 1}, ids)
	if err != nil {
		return err
	}
	defer idx.Release()
	e.countHost([]*ortc.Value{idx})
	return e.runBound(e.devGrads.scatter, []*ortc.Value{dst, idx, src}, []*ortc.Value{dst})
}

// identitySession returns the copy graph of elem, opened on first use.
func (a *activationSessions) identitySession(e *Executor, elem ortc.ElemType) (*ortc.Session, error) {
	return openOnce(e, a.identity, elem, "copy graph", func() ([]byte, error) { return ortc.IdentityModel(elem) }, []string{"x"}, []string{"y"})
}

// openOnce returns m[k], opening it on first use from the graph build
// returns, with inputs in and outputs out, on the device layer's session
// options (what names the graph in errors).
func openOnce[K comparable](e *Executor, m map[K]*ortc.Session, k K, what string, build func() ([]byte, error), in, out []string) (*ortc.Session, error) {
	if s, ok := m[k]; ok {
		return s, nil
	}
	raw, err := build()
	if err == nil {
		m[k], err = e.env.NewSession(raw, e.devGrads.mem.so, in, out)
	}
	if err != nil {
		delete(m, k)
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return m[k], nil
}

// addGrad adds g to the gradient of value name, taking g over. Two host
// gradients are added in Go; when either is in device memory the sum is
// made there, in place of that one, by a graph whose float32 Add rounds
// as Go's does (x + y equals y + x).
func (e *Executor) addGrad(st *stepState, name string, g *ortc.Value) error {
	old, ok := st.gradVal[name]
	if !ok {
		st.gradVal[name] = g
		return nil
	}
	if !old.Placed() && !g.Placed() {
		addInto(old.Float32s(), g.Float32s())
		g.Release()
		return nil
	}
	dst, src := old, g
	if !old.Placed() {
		dst, src = g, old
	}
	defer src.Release()
	if err := e.addInPlace(dst, src); err != nil {
		return fmt.Errorf("gradient of %q: %w", name, err)
	}
	st.gradVal[name] = dst
	return nil
}

// addInPlace adds src into dst, a tensor of the same shape in device
// memory.
func (e *Executor) addInPlace(dst, src *ortc.Value) error {
	sess, err := e.devGrads.acts.addSession(e, len(dst.Shape()))
	if err != nil {
		return err
	}
	e.countHost([]*ortc.Value{src})
	return e.runBound(sess, []*ortc.Value{dst, src}, []*ortc.Value{dst})
}

// addSession returns the in-place add graph for rank r, opened on first
// use.
func (a *activationSessions) addSession(e *Executor, r int) (*ortc.Session, error) {
	return openOnce(e, a.add, r, "activation gradient add graph", func() ([]byte, error) { return addModel(r) }, []string{"dst", "src"}, []string{"out"})
}

// addModel is out = dst + src over rank-r float32 tensors of one shape,
// run with out bound to dst (each element read before it is written, by
// its own computation, as in axpyModel).
func addModel(r int) ([]byte, error) {
	b := onnx.NewGraphBuilder("activation_gradient_add")
	dims := rankDims(r)
	dst := b.Input("dst", onnx.Float32, dims...)
	src := b.Input("src", onnx.Float32, dims...)
	b.NodeTo("Add", []string{dst, src}, []string{"out"})
	b.Output("out", onnx.Float32, dims...)
	return proto.Marshal(b.Model(18).Proto)
}
