package model

import (
	"errors"
	"fmt"
	"math"

	ort "github.com/yalue/onnxruntime_go"
	"google.golang.org/protobuf/proto"

	"github.com/spiral-rl/spiral/model/onnx"
	"github.com/spiral-rl/spiral/model/optim"
	"github.com/spiral-rl/spiral/model/ortc"
	"github.com/spiral-rl/spiral/model/params"
)

// deviceOptim runs AdamW on the device layer where the gradients are
// summed (deviceGrads) and the trained weights live (deviceParams): the
// moments have device copies too, and an update is a few small graphs
// per tensor whose outputs are bound to the weights and moments
// themselves, so nothing model-sized crosses per step. The host AdamW
// (its config, step count and moment stores) is the state a checkpoint
// saves: after an update the host weights and moments are stale until
// SyncHost copies them down, and a host moment store whose version
// moves (a checkpoint load) is copied up before the next update.
type deviceOptim struct {
	opt *optim.AdamW
	// m, v are the device moments by trained parameter name, flat;
	// copied the host moment stores' versions on the device.
	m, v   map[string]*ortc.Value
	copied [2]uint64
	// staleWeights and staleMoments are true while the host weights and
	// moments lag the device; pending while the gradient sums of an
	// AccumulateBatches call wait for their Update; broken is why an
	// update stopped partway (the device state is then no step's), until
	// the host has written the weights and both moments since (a
	// checkpoint load: see usable); brokenAt are the versions of those
	// host stores when it stopped.
	staleWeights, staleMoments, pending bool
	broken                              error
	brokenAt                            [3]uint64
}

// optimGraphs are the device optimizer's sessions, opened with the
// executor's device state (graph optimisations off: a rewrite, a cast
// chain folded say, could change their rounding): stats (sum of squares
// in float64, max |x| and a NaN flag of a gradient and a weight), scale
// (g *= s in place), update (AdamW in place), check (whether an update
// would stay finite) and gather (the embedding's rows).
type optimGraphs struct {
	stats, scale, update, check, gather *ortc.Session
}

var updateInputs = []string{"w", "g", "m", "v", "b1", "a1", "b2", "a2", "inv1", "inv2", "lr", "eps", "wd"}

// openOptimGraphs opens the sessions of optimGraphs.
func openOptimGraphs(rt *Runtime, env *ortc.Env) (*optimGraphs, error) {
	so, err := rt.NewSessionOptions()
	if err != nil {
		return nil, err
	}
	defer so.Destroy()
	if err := so.SetGraphOptimizationLevel(ort.GraphOptimizationLevelDisableAll); err != nil {
		return nil, fmt.Errorf("optimizer graphs: %w", err)
	}
	g := &optimGraphs{}
	type graph struct {
		dst     **ortc.Session
		model   func() ([]byte, error)
		in, out []string
	}
	for _, gr := range []graph{
		{&g.stats, statsModel, []string{"g", "w"}, []string{"sumsq", "max_g", "nan_g", "max_w", "nan_w"}},
		{&g.scale, scaleModel, []string{"g", "s"}, []string{"out"}},
		{&g.update, func() ([]byte, error) { return updateModel(false) }, updateInputs, []string{"w_out", "m_out", "v_out"}},
		{&g.check, func() ([]byte, error) { return updateModel(true) }, updateInputs, []string{"bad"}},
		{&g.gather, gatherModel, []string{"table", "ids"}, []string{"rows"}},
	} {
		raw, err := gr.model()
		if err == nil {
			*gr.dst, err = env.NewSession(raw, so, gr.in, gr.out)
		}
		if err != nil {
			g.close()
			return nil, fmt.Errorf("optimizer graphs: %w", err)
		}
	}
	return g, nil
}

func (g *optimGraphs) close() {
	for _, s := range []*ortc.Session{g.stats, g.scale, g.update, g.check, g.gather} {
		if s != nil {
			s.Close()
		}
	}
}

// DeviceLayer reports whether the executor runs on the device layer
// (PolicyOptions.Resident; always with CUDA).
func (e *Executor) DeviceLayer() bool { return e.dev != nil }

// UsesDeviceOptimizer reports whether UseDeviceOptimizer is in effect.
func (e *Executor) UsesDeviceOptimizer() bool { return e.devOpt != nil }

// UseDeviceOptimizer has Update run opt's AdamW on the device from now
// on, with device copies of its moments; AccumulateBatches then leaves
// the gradients on the device (the gradient store stays zero). It fails
// off the device layer.
func (e *Executor) UseDeviceOptimizer(opt *optim.AdamW) (err error) {
	if e.devGrads == nil {
		return errors.New("model: executor: the device optimizer needs the device layer")
	}
	if e.devOpt != nil {
		return errors.New("model: executor: a device optimizer is in use already")
	}
	if err := opt.ExpAvg().SameLayout(e.weights); err != nil {
		return fmt.Errorf("model: executor: optimizer: %w", err)
	}
	d := &deviceOptim{opt: opt, m: map[string]*ortc.Value{}, v: map[string]*ortc.Value{}}
	defer func() {
		if err != nil {
			d.close()
		}
	}()
	for name, i := range e.trained {
		n := []int64{int64(len(e.weights.At(i).Data))}
		for _, moments := range []map[string]*ortc.Value{d.m, d.v} {
			v, err := ortc.AllocOn[float32](e.devGrads.mem.alloc, n)
			if err != nil {
				return fmt.Errorf("model: executor: moment of %q on %s: %w", name, e.devGrads.mem.info, err)
			}
			moments[name] = v
		}
	}
	d.copied = [2]uint64{opt.ExpAvg().Version() - 1, opt.ExpAvgSq().Version() - 1}
	e.devOpt = d
	return nil
}

func (d *deviceOptim) close() {
	for _, ms := range []map[string]*ortc.Value{d.m, d.v} {
		for _, v := range ms {
			v.Release()
		}
	}
}

// UpdateResult is what Update did.
type UpdateResult struct {
	// Norm is the gradients' global L2 norm before clipping (float64
	// sums of squares on the device, added over the tensors on the host).
	Norm float64
	// Skipped says why the update was not applied ("" when it was).
	Skipped string
}

// Update clips the gradients of the last AccumulateBatches to
// maxGradNorm (<= 0: no clipping) and applies the device optimizer's
// AdamW step at rate lr, with Step's rules: a non-finite norm, or an
// update that would make a weight or moment non-finite, skips it. After
// an update that stopped partway it refuses until the host has written
// the weights and both moments (a checkpoint load).
func (e *Executor) Update(lr, maxGradNorm float64) (UpdateResult, error) {
	d := e.devOpt
	var u UpdateResult
	switch {
	case d == nil:
		return u, errors.New("model: executor: no device optimizer (UseDeviceOptimizer)")
	case e.usable() != nil:
		return u, d.broken
	case !d.pending:
		return u, errors.New("model: executor: Update without the gradients of an AccumulateBatches call")
	}
	d.pending = false
	// The weights as the host has them, if it wrote them since (a
	// checkpoint load after the gradients' last forward pass).
	if err := e.dev.sync(e.devGrads.mem.copier); err != nil {
		return u, fmt.Errorf("model: executor: %w", err)
	}
	if err := e.syncMoments(); err != nil {
		return u, err
	}
	names := e.weights.Names()
	sumsq, maxW, maxG := 0.0, 0.0, 0.0
	for _, name := range names {
		s, err := e.tensorStats(name)
		if err != nil {
			return u, fmt.Errorf("model: executor: gradient of %q: %w", name, err)
		}
		sumsq += s[0]
		maxG, maxW = math.Max(maxG, s[1]), math.Max(maxW, s[2])
	}
	u.Norm = math.Sqrt(sumsq)
	if math.IsNaN(u.Norm) || math.IsInf(u.Norm, 0) {
		u.Skipped = fmt.Sprintf("gradient norm is %v", u.Norm)
		return u, nil
	}
	if maxGradNorm > 0 && u.Norm > maxGradNorm {
		a := float32(maxGradNorm / (u.Norm + params.ClipEpsilon))
		for _, name := range names {
			if err := e.scaleSum(name, a); err != nil {
				return u, fmt.Errorf("model: executor: clip the gradient of %q: %w", name, err)
			}
		}
		maxG *= float64(a) // a bound on the clipped gradients
	}
	c, safe := d.opt.Next(lr, maxW, maxG)
	if !safe {
		for _, name := range names {
			bad, err := e.runUpdate(e.devGrads.graphs.check, name, c)
			if err != nil {
				return u, fmt.Errorf("model: executor: check the update of %q: %w", name, err)
			}
			if bad {
				u.Skipped = fmt.Sprintf("%v (learning rate %g)", optim.ErrNonFiniteUpdate, lr)
				return u, nil
			}
		}
	}
	d.staleWeights, d.staleMoments = true, true
	for _, name := range names {
		if _, err := e.runUpdate(e.devGrads.graphs.update, name, c); err != nil {
			d.broken = fmt.Errorf("model: executor: the device update of step %d stopped at %q: %w", d.opt.Steps()+1, name, err)
			d.brokenAt = e.hostVersions()
			return u, d.broken
		}
	}
	return u, d.opt.SetSteps(d.opt.Steps() + 1)
}

// usable returns why the device state cannot be used: an update that
// stopped partway (broken), unless the host has written the trained
// weights and both moment stores since (a checkpoint load), which the
// next update copies up over all of it; then nil, and broken is cleared.
func (e *Executor) usable() error {
	d := e.devOpt
	if d.broken == nil {
		return nil
	}
	now := e.hostVersions()
	if now[0] != d.brokenAt[0] && now[1] != d.brokenAt[1] && now[2] != d.brokenAt[2] {
		d.broken = nil
	}
	return d.broken
}

// hostVersions are the versions of the host stores the device optimizer
// mirrors: the trained weights and the two moments.
func (e *Executor) hostVersions() [3]uint64 {
	return [3]uint64{e.weights.Version(), e.devOpt.opt.ExpAvg().Version(), e.devOpt.opt.ExpAvgSq().Version()}
}

// syncMoments copies each host moment store whose version moved since
// its last copy to the device.
func (e *Executor) syncMoments() error {
	d := e.devOpt
	for k, c := range d.moments() {
		if d.copied[k] == c.store.Version() {
			continue
		}
		if err := e.copyStore(c, true); err != nil {
			return err
		}
		d.copied[k] = c.store.Version()
	}
	return nil
}

// storeCopy is a host store and the flat device copies of its tensors
// by name.
type storeCopy struct {
	store *params.Store
	dev   map[string]*ortc.Value
}

// moments pairs the host moment stores with their device copies.
func (d *deviceOptim) moments() [2]storeCopy {
	return [2]storeCopy{{d.opt.ExpAvg(), d.m}, {d.opt.ExpAvgSq(), d.v}}
}

// copyStore copies every tensor of c up (host to device) or down.
func (e *Executor) copyStore(c storeCopy, up bool) error {
	for i := range c.store.Len() {
		t := c.store.At(i)
		if err := e.copyFlat(c.dev[t.Name], t.Data, up); err != nil {
			return fmt.Errorf("model: executor: copy %q (up %v): %w", t.Name, up, err)
		}
	}
	return nil
}

// copyFlat copies between the flat device tensor dev and host data:
// up (host to device) or down.
func (e *Executor) copyFlat(dev *ortc.Value, data []float32, up bool) error {
	h, err := ortc.NewTensor(e.env, []int64{int64(len(data))}, data)
	if err != nil {
		return err
	}
	defer h.Release()
	flat, err := dev.View(0, []int64{int64(len(data))})
	if err != nil {
		return err
	}
	defer flat.Release()
	if up {
		return e.devGrads.mem.copier.Copy(flat, h)
	}
	return e.devGrads.mem.copier.Copy(h, flat)
}

// SyncHost copies the trained weights and the moments that the device
// optimizer has changed to their host stores (a checkpoint or an export
// reads those), without moving their versions. A store written on the
// host since its last copy to the device (a checkpoint load) is newer
// than the device's and is left as it is (the next step copies it up).
// It fails after an update that stopped partway: the device then holds
// no step's state (until a checkpoint load writes the host stores).
func (e *Executor) SyncHost() error { return e.syncHost(true) }

// SyncWeights is SyncHost for the trained weights alone (what a serving
// engine reads).
func (e *Executor) SyncWeights() error { return e.syncHost(false) }

func (e *Executor) syncHost(moments bool) error {
	d := e.devOpt
	if d == nil {
		return nil
	}
	if err := e.usable(); err != nil {
		return err
	}
	var parts []storeCopy
	if d.staleWeights && e.dev.current(e.weights) {
		parts = append(parts, storeCopy{e.weights, e.dev.values})
	}
	if moments && d.staleMoments {
		for k, c := range d.moments() {
			if d.copied[k] == c.store.Version() {
				parts = append(parts, c)
			}
		}
	}
	for _, c := range parts {
		if err := e.copyStore(c, false); err != nil {
			return err
		}
	}
	d.staleWeights = false
	if moments {
		d.staleMoments = false
	}
	return nil
}

// chunks calls fn with the element ranges of a tensor of n elements,
// OptimizerChunk at a time.
func (e *Executor) chunks(n int, fn func(lo, hi int) error) error {
	for lo := 0; lo < n; lo += e.opt.OptimizerChunk {
		if err := fn(lo, min(n, lo+e.opt.OptimizerChunk)); err != nil {
			return err
		}
	}
	return nil
}

// views returns views of elements lo..hi of flat-laid-out tensors.
func views(lo, hi int, vs ...*ortc.Value) ([]*ortc.Value, error) {
	out := make([]*ortc.Value, 0, len(vs))
	for _, v := range vs {
		w, err := v.View(lo, []int64{int64(hi - lo)})
		if err != nil {
			releaseAll(out)
			return nil, err
		}
		out = append(out, w)
	}
	return out, nil
}

// tensorStats returns, for trained parameter name, its gradient's sum
// of squares (float64, chunk by chunk), max |g| and max |w| (+Inf where
// one is NaN).
func (e *Executor) tensorStats(name string) ([3]float64, error) {
	var out [3]float64
	g := e.devGrads
	err := e.chunks(g.sums[name].Len(), func(lo, hi int) error {
		in, err := views(lo, hi, g.sums[name], e.dev.values[name])
		if err != nil {
			return err
		}
		defer releaseAll(in)
		res := make([]*ortc.Value, 5)
		if err := e.runSession(g.graphs.stats, in, res); err != nil {
			return err
		}
		defer releaseAll(res)
		out[0] += res[0].Float64s()[0]
		for k, at := range []int{1, 3} {
			m := float64(res[at].Float32s()[0])
			if res[at+1].Float32s()[0] > 0 {
				m = math.Inf(1)
			}
			out[k+1] = math.Max(out[k+1], m)
		}
		return nil
	})
	return out, err
}

// scaleSum multiplies the gradient sum of name by a in place.
func (e *Executor) scaleSum(name string, a float32) error {
	g := e.devGrads
	s, err := ortc.NewTensor(e.env, []int64{1}, []float32{a})
	if err != nil {
		return err
	}
	defer s.Release()
	return e.chunks(g.sums[name].Len(), func(lo, hi int) error {
		in, err := views(lo, hi, g.sums[name])
		if err != nil {
			return err
		}
		defer releaseAll(in)
		e.crossed += 4 // s
		return e.runBound(g.graphs.scale, []*ortc.Value{in[0], s}, in)
	})
}

// runUpdate runs, chunk by chunk, the update graph (outputs bound to
// the weight and moments of name, in place) or the check graph
// (reporting whether the update would make a value non-finite) for name
// with coefficients c.
func (e *Executor) runUpdate(sess *ortc.Session, name string, c optim.Coefficients) (bad bool, err error) {
	d := e.devOpt
	wd := 0.0
	if d.opt.Decayed(e.trained[name]) {
		wd = c.WeightDecay
	}
	var scalars []*ortc.Value
	defer func() { releaseAll(scalars) }()
	for _, x := range []float64{c.B1, c.A1, c.B2, c.A2, c.Inv1, c.Inv2, c.LR, c.Eps, wd} {
		v, err := ortc.NewTensor(e.env, []int64{1}, []float64{x})
		if err != nil {
			return false, err
		}
		scalars = append(scalars, v)
	}
	w := e.dev.values[name]
	for _, t := range []struct {
		what string
		v    *ortc.Value
	}{{"gradient sum", e.devGrads.sums[name]}, {"first moment", d.m[name]}, {"second moment", d.v[name]}} {
		if t.v.Len() != w.Len() {
			return false, fmt.Errorf("model: AdamW on the device for %s: its %s holds %d values, the weight %d", name, t.what, t.v.Len(), w.Len())
		}
	}
	err = e.chunks(w.Len(), func(lo, hi int) error {
		vs, err := views(lo, hi, w, e.devGrads.sums[name], d.m[name], d.v[name])
		if err != nil {
			return err
		}
		defer releaseAll(vs)
		args := append(vs, scalars...)
		if sess == e.devGrads.graphs.update {
			e.crossed += int64(8 * len(scalars))
			return e.runBound(sess, args, []*ortc.Value{vs[0], vs[2], vs[3]})
		}
		res := []*ortc.Value{nil}
		if err := e.runSession(sess, args, res); err != nil {
			return err
		}
		defer res[0].Release()
		bad = bad || res[0].Float32s()[0] > 0
		return nil
	})
	return bad, err
}

// runBound runs sess with its inputs bound to in and its outputs to the
// preallocated out, both in the session's order; an entry of out that is
// nil is allocated by the run in device memory and set. It counts
// nothing: an input may be a device output of another binding, which
// Placed does not know (Binding.Outputs), and the host inputs of some
// graphs are bounds their kernels read on the host (Slice's starts and
// ends), so callers count the host inputs they make.
func (e *Executor) runBound(sess *ortc.Session, in, out []*ortc.Value) error {
	return e.runBinding(sess, in, out, func(int) bool { return true })
}

// runBinding is runBound with the outputs not preallocated allocated in
// device memory where device(k) holds, else in host memory.
func (e *Executor) runBinding(sess *ortc.Session, in, out []*ortc.Value, device func(k int) bool) error {
	b, err := sess.NewBinding()
	if err != nil {
		return err
	}
	defer b.Release()
	for i, name := range sess.Inputs() {
		if err := b.BindInput(name, in[i]); err != nil {
			return err
		}
	}
	given := make([]bool, len(out))
	for k, name := range sess.Outputs() {
		switch {
		case out[k] != nil:
			given[k] = true
			err = b.BindOutput(name, out[k])
		case device(k):
			err = b.BindOutputOn(name, e.devGrads.mem.alloc)
		default:
			err = b.BindOutputTo(name, e.devGrads.host)
		}
		if err != nil {
			return err
		}
	}
	if err := sess.RunBinding(b); err != nil {
		return err
	}
	vs, err := b.Outputs()
	if err != nil {
		return err
	}
	for k, v := range vs {
		if given[k] {
			v.Release() // a second reference to out[k]
			continue
		}
		out[k] = v
	}
	return nil
}

// gatherRows returns the embedding rows of ids (of shape [rows, seq])
// from the device copy of table as a tensor [rows, seq, width] in device
// memory.
func (e *Executor) gatherRows(table string, shape, ids []int64) (*ortc.Value, error) {
	iv, err := ortc.NewTensor(e.env, shape, ids)
	if err != nil {
		return nil, err
	}
	defer iv.Release()
	out := []*ortc.Value{nil}
	if err := e.runSessionKeeping(e.devGrads.graphs.gather, []*ortc.Value{e.dev.values[table], iv}, out, e.placed); err != nil {
		return nil, err
	}
	return out[0], nil
}

// statsModel is the stats graph over flat float32 g and w: sumsq =
// sum g^2 in float64, max_g = max |g|, nan_g = 1 if a g is NaN (else 0),
// and the same two of w.
func statsModel() ([]byte, error) {
	b := onnx.NewGraphBuilder("gradient_stats")
	g := b.Input("g", onnx.Float32, onnx.P("n"))
	w := b.Input("w", onnx.Float32, onnx.P("n"))
	keep := onnx.AttrInt("keepdims", 0)
	b.NodeTo("ReduceSumSquare", []string{b.Node("Cast", []string{g}, onnx.AttrInt("to", int64(onnx.Float64)))}, []string{"sumsq"}, keep)
	b.Output("sumsq", onnx.Float64)
	for _, x := range []struct{ v, max, nan string }{{g, "max_g", "nan_g"}, {w, "max_w", "nan_w"}} {
		b.NodeTo("ReduceMax", []string{b.Node("Abs", []string{x.v})}, []string{x.max}, keep)
		b.NodeTo("ReduceMax", []string{b.Node("Cast", []string{b.Node("IsNaN", []string{x.v})}, onnx.AttrInt("to", int64(onnx.Float32)))}, []string{x.nan}, keep)
		b.Output(x.max, onnx.Float32)
		b.Output(x.nan, onnx.Float32)
	}
	return proto.Marshal(b.Model(18).Proto)
}

// scaleModel is out = g x s, run with out bound to g.
func scaleModel() ([]byte, error) {
	b := onnx.NewGraphBuilder("gradient_scale")
	g := b.Input("g", onnx.Float32, onnx.P("n"))
	s := b.Input("s", onnx.Float32, onnx.D(1))
	b.NodeTo("Mul", []string{g, s}, []string{"out"})
	b.Output("out", onnx.Float32, onnx.P("n"))
	return proto.Marshal(b.Model(18).Proto)
}

// updateModel is AdamW's element update (optim.Coefficients) over flat
// float32 w, g, m, v with float64 scalars, node by node in the order of
// optim's kernel (so that each rounds as it does, where Go does not fuse
// multiply-adds: amd64, not arm64): outputs w_out, m_out,
// v_out, run bound to w, m, v (each input is read, by a Cast, before the
// node that writes its buffer, which depends on it); with check, only
// bad = 1 if a new value is NaN or infinite (else 0).
func updateModel(check bool) ([]byte, error) {
	b := onnx.NewGraphBuilder("adamw")
	flat := onnx.P("n")
	vec := map[string]string{}
	for _, name := range updateInputs[:4] {
		vec[name] = b.Input(name, onnx.Float32, flat)
	}
	sc := map[string]string{}
	for _, name := range updateInputs[4:] {
		sc[name] = b.Input(name, onnx.Float64, onnx.D(1))
	}
	toD := func(x string) string { return b.Node("Cast", []string{x}, onnx.AttrInt("to", int64(onnx.Float64))) }
	op := func(name string, x, y string) string { return b.Node(name, []string{x, y}) }
	outs := map[string]string{"w_out": "w_new", "m_out": "m_new", "v_out": "v_new"}
	if !check {
		outs = map[string]string{"w_out": "w_out", "m_out": "m_out", "v_out": "v_out"}
	}
	toF := func(x, out string) string {
		b.NodeTo("Cast", []string{x}, []string{out}, onnx.AttrInt("to", int64(onnx.Float32)))
		return out
	}
	gi, wi := toD(vec["g"]), toD(vec["w"])
	m := toF(op("Add", op("Mul", sc["b1"], toD(vec["m"])), op("Mul", sc["a1"], gi)), outs["m_out"])
	v := toF(op("Add", op("Mul", sc["b2"], toD(vec["v"])), op("Mul", op("Mul", sc["a2"], gi), gi)), outs["v_out"])
	mhat, vhat := op("Mul", toD(m), sc["inv1"]), op("Mul", toD(v), sc["inv2"])
	step := op("Add", op("Div", mhat, op("Add", b.Node("Sqrt", []string{vhat}), sc["eps"])), op("Mul", sc["wd"], wi))
	w := toF(op("Sub", wi, op("Mul", sc["lr"], step)), outs["w_out"])
	if !check {
		for _, o := range []string{"w_out", "m_out", "v_out"} {
			b.Output(o, onnx.Float32, flat)
		}
		return proto.Marshal(b.Model(18).Proto)
	}
	var flags []string
	for _, x := range []string{w, m, v} {
		nonFinite := op("Or", b.Node("IsNaN", []string{x}), b.Node("IsInf", []string{x}))
		flags = append(flags, b.Node("ReduceMax", []string{b.Node("Cast", []string{nonFinite}, onnx.AttrInt("to", int64(onnx.Float32)))}, onnx.AttrInt("keepdims", 0)))
	}
	b.NodeTo("Max", flags, []string{"bad"})
	b.Output("bad", onnx.Float32)
	return proto.Marshal(b.Model(18).Proto)
}

// gatherModel is rows = Gather(table, ids): the embedding's rows of
// ids [rows, seq] from a [vocab, width] table.
func gatherModel() ([]byte, error) {
	b := onnx.NewGraphBuilder("embedding_rows")
	table := b.Input("table", onnx.Float32, onnx.P("vocab"), onnx.P("width"))
	ids := b.Input("ids", onnx.Int64, onnx.P("rows"), onnx.P("seq"))
	b.NodeTo("Gather", []string{table, ids}, []string{"rows"}, onnx.AttrInt("axis", 0))
	b.Output("rows", onnx.Float32, onnx.P("rows"), onnx.P("seq"), onnx.P("width"))
	return proto.Marshal(b.Model(18).Proto)
}
