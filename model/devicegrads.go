package model

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/spiral-rl/spiral/model/onnx"
	"github.com/spiral-rl/spiral/model/ortc"
	"github.com/spiral-rl/spiral/model/params"
)

// deviceGrads sums, on the device layer, the parameter gradients of the
// micro-batches of one AccumulateBatches call in device memory: the
// backward graphs leave them there, a small graph adds each into its
// sum in place, and the sums come to the host once, after the last
// micro-batch, instead of every gradient after every call. A [hidden,
// vocab] head table, whose gradient comes in blocks of columns, is summed
// transposed (columnSum) and folded into its sum at the end.
type deviceGrads struct {
	mem  *deviceMemory
	host *ortc.MemoryInfo // the host's, for the outputs that return
	zero *ortc.Session
	// axpy holds the in-place dst += scale x src graph per rank; scatter
	// writes rows of an embedding table's gradient in place.
	axpy    map[int]*ortc.Session
	scatter *ortc.Session
	// graphs are the device optimizer's and the embedding gather's.
	graphs *optimGraphs
	// acts are the graphs over activations kept in device memory.
	acts activationSessions
	// sums are the device gradient sums by parameter name, flat.
	sums map[string]*ortc.Value
	// on is true inside AccumulateBatches: gradients of sums' parameters
	// go there.
	on bool
	// columnSum sums the gradient of a [hidden, vocab] head table
	// transposed, [vocab, hidden], so that a block of the vocabulary is
	// a range of its rows; AccumulateBatches adds it, transposed back,
	// into the table's sum at the end (foldColumns). nil without one.
	columnSum *ortc.Value
	// addT is dst += Transpose(src) x scale over [rows, cols] dst.
	addT *ortc.Session
}

// openDeviceGrads allocates device gradient sums for the trained
// parameters the device can sum whole.
func (e *Executor) openDeviceGrads(rt *Runtime) (err error) {
	mem, err := openDeviceMemory(rt, e.env)
	if err != nil {
		return err
	}
	d := &deviceGrads{mem: mem, axpy: map[int]*ortc.Session{}, sums: map[string]*ortc.Value{},
		acts: newActivationSessions()}
	e.devGrads = d
	if d.host, err = e.env.NewMemoryInfo("Cpu", 0); err != nil {
		return err
	}
	raw, err := zeroModel()
	if err != nil {
		return err
	}
	if d.zero, err = e.env.NewSession(raw, mem.so, []string{"shape"}, []string{"zeros"}); err != nil {
		return fmt.Errorf("zero graph: %w", err)
	}
	if d.graphs, err = openOptimGraphs(rt, e.env); err != nil {
		return err
	}
	if raw, err = scatterModel(); err != nil {
		return err
	}
	if d.scatter, err = e.env.NewSession(raw, mem.so, []string{"dst", "indices", "updates"}, []string{"out"}); err != nil {
		return fmt.Errorf("embedding gradient graph: %w", err)
	}
	for name, i := range e.trained {
		v, err := ortc.AllocOn[float32](mem.alloc, []int64{int64(len(e.weights.At(i).Data))})
		if err != nil {
			return fmt.Errorf("gradient of %q on %s: %w", name, mem.info, err)
		}
		d.sums[name] = v
	}
	if h := &e.prog.Head; h.Table != "" && !h.TableRows && d.sums[h.Table] != nil {
		shape := e.tensors[h.Table].Shape
		if len(shape) != 2 {
			return fmt.Errorf("head table %q has shape %v, want [hidden, vocab]", h.Table, shape)
		}
		if d.columnSum, err = ortc.AllocOn[float32](mem.alloc, []int64{shape[1], shape[0]}); err != nil {
			return fmt.Errorf("transposed gradient of %q on %s: %w", h.Table, mem.info, err)
		}
		if raw, err = addTransposedModel(); err != nil {
			return err
		}
		if d.addT, err = e.env.NewSession(raw, mem.so, []string{"dst", "src", "scale"}, []string{"out"}); err != nil {
			return fmt.Errorf("transposed gradient add graph: %w", err)
		}
	}
	return nil
}

// addTransposedModel is out = dst + Transpose(src) x scale over float32
// dst [rows, cols] and src [cols, rows], run with out bound to dst: the
// two float32 nodes after the exact transpose round as addScaled does
// (axpyModel).
func addTransposedModel() ([]byte, error) {
	b := onnx.NewGraphBuilder("gradient_add_transposed")
	dst := b.Input("dst", onnx.Float32, onnx.P("rows"), onnx.P("cols"))
	src := b.Input("src", onnx.Float32, onnx.P("cols"), onnx.P("rows"))
	scale := b.Input("scale", onnx.Float32, onnx.D(1))
	t := b.Node("Transpose", []string{src}, onnx.AttrInts("perm", 1, 0))
	b.NodeTo("Add", []string{dst, b.Node("Mul", []string{t, scale})}, []string{"out"})
	b.Output("out", onnx.Float32, onnx.P("rows"), onnx.P("cols"))
	return proto.Marshal(b.Model(18).Proto)
}

// addColumns adds scale x g, the gradient [hidden, v1-v0] of columns
// v0..v1 of the [hidden, vocab] head table, into their rows of
// columnSum.
func (e *Executor) addColumns(v0 int, g *ortc.Value, scale float32) error {
	d := e.devGrads
	gs := g.Shape()
	if len(gs) != 2 {
		return fmt.Errorf("head table gradient block of shape %v, want [hidden, width]", gs)
	}
	rows, err := d.columnSum.View(v0*int(gs[0]), []int64{gs[1], gs[0]})
	if err != nil {
		return err
	}
	defer rows.Release()
	return e.addTransposed(rows, g, scale)
}

// addTransposed runs dst += Transpose(src) x scale in place.
func (e *Executor) addTransposed(dst, src *ortc.Value, scale float32) error {
	return e.addScaledBy(e.devGrads.addT, dst, src, scale)
}

// addScaledBy runs sess, an in-place dst += f(src) x scale graph
// (axpyModel, addTransposedModel), with its output bound to dst; src and
// the scale cross when in host memory.
func (e *Executor) addScaledBy(sess *ortc.Session, dst, src *ortc.Value, scale float32) error {
	a, err := ortc.NewTensor(e.env, []int64{1}, []float32{scale})
	if err != nil {
		return err
	}
	defer a.Release()
	e.countHost([]*ortc.Value{src, a})
	return e.runBound(sess, []*ortc.Value{dst, src, a}, []*ortc.Value{dst})
}

// foldColumns adds columnSum, transposed back, into the head table's
// gradient sum: the end of an AccumulateBatches call.
func (e *Executor) foldColumns() error {
	d := e.devGrads
	if d.columnSum == nil {
		return nil
	}
	name := e.prog.Head.Table
	cs := d.columnSum.Shape()
	sum, err := d.sums[name].View(0, []int64{cs[1], cs[0]})
	if err != nil {
		return err
	}
	defer sum.Release()
	if err := e.addTransposed(sum, d.columnSum, 1); err != nil {
		return fmt.Errorf("model: executor: the gradient of %q: %w", name, err)
	}
	return nil
}

func (d *deviceGrads) close() {
	for _, v := range d.sums {
		v.Release()
	}
	d.columnSum.Release()
	if d.addT != nil {
		d.addT.Close()
	}
	for _, s := range d.axpy {
		s.Close()
	}
	d.acts.close()
	if d.graphs != nil {
		d.graphs.close()
	}
	for _, s := range []*ortc.Session{d.zero, d.scatter} {
		if s != nil {
			s.Close()
		}
	}
	d.host.Release()
	d.mem.close()
}

// checkGradStore checks the gradient store of a micro-batch: the
// weights' layout, or nil within AccumulateBatches (inBatches) with a
// device optimizer, where every trained gradient goes to its device sum.
func (e *Executor) checkGradStore(grads *params.Store, inBatches bool) error {
	if grads == nil && inBatches && e.devOpt != nil {
		return nil
	}
	if grads == nil {
		return errors.New("model: executor: no gradient store: only AccumulateBatches with a device optimizer sums without one")
	}
	if err := e.weights.SameLayout(grads); err != nil {
		return fmt.Errorf("model: executor: gradient store: %w", err)
	}
	return nil
}

// summed reports whether param's gradient goes to its device sum now.
func (e *Executor) summed(param string) bool {
	return e.devGrads != nil && e.devGrads.on && e.devGrads.sums[param] != nil
}

// AccumulateBatches runs micro-batches bs in turn, adding scales[k] x d
// loss(bs[k]) / d w into grads, and calls done with each one's result
// (res, reused between calls) before the next. On the device layer the
// parameter gradients are summed in device memory and added into grads
// after the last micro-batch: one gradient copy per call instead of one
// per micro-batch and chunk; with a device optimizer (UseDeviceOptimizer)
// they stay there for Update, and grads is left as it was (it may be nil
// then: no host gradient store is needed). Into a zeroed
// store (as rl.Gradients has it) the result is bit-identical to
// Accumulate in turn; into one that holds gradients already, the sums
// are added in another order.
func (e *Executor) AccumulateBatches(ctx context.Context, bs []TrainBatch, scales []float32, grads *params.Store, res *TrainResult, done func(k int) error) error {
	if len(scales) != len(bs) {
		return fmt.Errorf("model: executor: %d scales for %d micro-batches", len(scales), len(bs))
	}
	if err := e.checkGradStore(grads, true); err != nil {
		return err
	}
	d := e.devGrads
	if d != nil {
		if e.devOpt != nil {
			e.devOpt.pending = false // until these sums are complete
		}
		for name, v := range d.sums {
			if err := fillZeros(e.env, d.zero, v); err != nil {
				return fmt.Errorf("model: executor: zero the gradient of %q: %w", name, err)
			}
		}
		if d.columnSum != nil {
			if err := fillZeros(e.env, d.zero, d.columnSum); err != nil {
				return fmt.Errorf("model: executor: zero the transposed gradient of %q: %w", e.prog.Head.Table, err)
			}
		}
		d.on = true
		defer func() { d.on = false }()
	}
	for k := range bs {
		if err := e.Accumulate(ctx, bs[k], scales[k], grads, res); err != nil {
			return err
		}
		if err := done(k); err != nil {
			return err
		}
	}
	if d == nil {
		return nil
	}
	if err := e.foldColumns(); err != nil {
		return err
	}
	if e.devOpt != nil {
		e.devOpt.pending = true // Update reads them where they are
		return nil
	}
	for name, v := range d.sums {
		dst := grads.At(e.trained[name]).Data
		sum := e.scratch("gradient sum", len(dst))
		if err := e.copyFlat(v, sum, false); err != nil {
			return fmt.Errorf("model: executor: copy the gradient of %q to the host: %w", name, err)
		}
		addInto(dst, sum)
		e.gradCrossed += int64(4 * len(dst))
	}
	return nil
}

// addSummed adds scale x g, a gradient in device memory, into the device
// sum of param (at offset, in the shape of g), in place.
func (e *Executor) addSummed(param string, offset int, g *ortc.Value, scale float32) error {
	d := e.devGrads
	dst, err := d.sums[param].View(offset, g.Shape())
	if err != nil {
		return err
	}
	defer dst.Release()
	sess, err := e.axpySession(len(g.Shape()))
	if err != nil {
		return err
	}
	return e.addScaledBy(sess, dst, g, scale)
}

// scatterSummed adds scale x rows[p] into row ids[p] of the device
// gradient sum of the embedding table param ([vocab, width]), in
// position order: the embedding's backward. The rows of the distinct
// ids come to the host, take their additions there as Go's embedding
// backward makes them (addScaled, position by position), and go back
// by one ScatterND of distinct rows bound to the sum: ScatterND's own
// reduction would add repeated rows concurrently (threads on the CPU,
// atomics on CUDA), in no fixed order.
func (e *Executor) scatterSummed(param string, shape []int64, ids []int64, rows []float32, scale float32) error {
	d := e.devGrads
	dst, err := d.sums[param].View(0, shape)
	if err != nil {
		return err
	}
	defer dst.Release()
	width := len(rows) / len(ids)
	slot := map[int64]int{}
	var distinct []int64
	for _, id := range ids {
		if _, ok := slot[id]; !ok {
			slot[id] = len(distinct)
			distinct = append(distinct, id)
		}
	}
	n := int64(len(distinct))
	iv, err := ortc.NewTensor(e.env, []int64{1, n}, distinct)
	if err != nil {
		return err
	}
	defer iv.Release()
	out := []*ortc.Value{nil}
	if err := e.runSession(d.graphs.gather, []*ortc.Value{dst, iv}, out); err != nil {
		return fmt.Errorf("gather the rows of %q: %w", param, err)
	}
	defer out[0].Release()
	sums := out[0].Float32s()
	for p, id := range ids {
		k := slot[id]
		addScaled(sums[k*width:(k+1)*width], rows[p*width:(p+1)*width], scale)
	}
	idx, err := ortc.NewTensor(e.env, []int64{n, 1}, distinct)
	if err != nil {
		return err
	}
	defer idx.Release()
	upd, err := ortc.NewTensor(e.env, []int64{n, int64(width)}, sums)
	if err != nil {
		return err
	}
	defer upd.Release()
	e.countHost([]*ortc.Value{idx, upd})
	return e.runBound(d.scatter, []*ortc.Value{dst, idx, upd}, []*ortc.Value{dst})
}

// scatterModel is out = ScatterND(dst, indices, updates) over a [rows,
// width] table with distinct indices [n, 1], run with out bound to dst
// (ScatterND then copies nothing but its updates, as in
// cacheWriteModel).
func scatterModel() ([]byte, error) {
	b := onnx.NewGraphBuilder("embedding_gradient")
	dst := b.Input("dst", onnx.Float32, onnx.P("rows"), onnx.P("width"))
	indices := b.Input("indices", onnx.Int64, onnx.P("n"), onnx.D(1))
	updates := b.Input("updates", onnx.Float32, onnx.P("n"), onnx.P("width"))
	b.NodeTo("ScatterND", []string{dst, indices, updates}, []string{"out"})
	b.Output("out", onnx.Float32, onnx.P("rows"), onnx.P("width"))
	return proto.Marshal(b.Model(18).Proto)
}

// axpySession returns the in-place add graph for tensors of rank r.
func (e *Executor) axpySession(r int) (*ortc.Session, error) {
	return openOnce(e, e.devGrads.axpy, r, "gradient add graph", func() ([]byte, error) { return axpyModel(r) },
		[]string{"dst", "src", "scale"}, []string{"out"})
}

// rankDims returns r named dims d0, d1, ...: a graph input of any shape
// of rank r.
func rankDims(r int) []onnx.Dim {
	dims := make([]onnx.Dim, r)
	for i := range dims {
		dims[i] = onnx.P(fmt.Sprintf("d%d", i))
	}
	return dims
}

// axpyModel is out = dst + scale x src over rank-r float32 tensors of
// one shape, run with out bound to dst: each element is read before it
// is written, by the same element's computation. Its two float32 nodes
// round as Go's dst[i] += scale*src[i] does (addScaled) where Go does not
// fuse the multiply-add (amd64; arm64 fuses it).
func axpyModel(r int) ([]byte, error) {
	b := onnx.NewGraphBuilder("gradient_add")
	dims := rankDims(r)
	dst := b.Input("dst", onnx.Float32, dims...)
	src := b.Input("src", onnx.Float32, dims...)
	scale := b.Input("scale", onnx.Float32, onnx.D(1))
	b.NodeTo("Add", []string{dst, b.Node("Mul", []string{src, scale})}, []string{"out"})
	b.Output("out", onnx.Float32, dims...)
	return proto.Marshal(b.Model(18).Proto)
}
