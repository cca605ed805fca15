package model

import (
	"errors"
	"fmt"

	ort "github.com/yalue/onnxruntime_go"
	"google.golang.org/protobuf/proto"

	"github.com/spiral-rl/spiral/model/onnx"
	"github.com/spiral-rl/spiral/model/ortc"
	"github.com/spiral-rl/spiral/model/params"
)

// resident is what a device-resident LM keeps for Extend in the runtime
// device's memory: the policy's device copies of the weights (shared
// with training, brought up to date before each call), and the session
// that writes new keys and values into a RowCache whose buffers live
// there too. Per call the device layer copies only the token ids, the
// mask, the positions, the cache write indices and the logits between
// host and device, through one Copier, whose bytes are LM.CopiedBytes
// (with the weights' copies the LM's calls make). With the CPU's memory
// info it is the CPU twin of the CUDA path: the same calls, host memory.
type resident struct {
	*deviceMemory
	// writer is the cache write graph (cacheWriteModel), zero the one
	// that clears a new cache's buffers (zeroModel).
	writer, zero *ortc.Session
	// weights are the device copies of the weights, in
	// Signature().Weights order (views of params' values, not owned).
	params  *deviceParams
	weights []*ortc.Value
	// caches are the live device caches, freed with the LM: their
	// memory belongs to alloc.
	caches map[*deviceCache]bool
}

// hostCopier copies between host and device memory for one Env (whose
// CopiedBytes counts it), with the session options its sessions need
// alive.
type hostCopier struct {
	so     *ort.SessionOptions
	copier *ortc.Copier
}

func newHostCopier(rt *Runtime, env *ortc.Env) (*hostCopier, error) {
	so, err := rt.NewSessionOptions()
	if err != nil {
		return nil, err
	}
	return &hostCopier{so: so, copier: env.NewCopier(so)}, nil
}

func (h *hostCopier) close() {
	h.copier.Close()
	h.so.Destroy()
}

// deviceMemory is the runtime device's memory as an Env sees it: its
// memory info, an allocator for it (one of the copier's sessions'), and
// a copier between it and the host.
type deviceMemory struct {
	*hostCopier
	info  *ortc.MemoryInfo
	alloc *ortc.Allocator
}

// openDeviceMemory returns rt's device memory for env.
func openDeviceMemory(rt *Runtime, env *ortc.Env) (m *deviceMemory, err error) {
	m = &deviceMemory{}
	defer func() {
		if err != nil {
			m.close()
		}
	}()
	// On the CPU, the device twin: host memory that Go may not read,
	// so that the twin fails where reading device memory would.
	if d := rt.Device(); d.Kind == CUDA {
		m.info, err = env.NewMemoryInfo("Cuda", d.ID)
	} else {
		m.info, err = env.NewTwinMemoryInfo()
	}
	if err != nil {
		return nil, err
	}
	if m.hostCopier, err = newHostCopier(rt, env); err != nil {
		return nil, err
	}
	if m.alloc, err = m.copier.NewAllocator(m.info); err != nil {
		return nil, err
	}
	return m, nil
}

func (m *deviceMemory) close() {
	m.alloc.Release()
	if m.hostCopier != nil {
		m.hostCopier.close()
	}
	m.info.Release()
}

// openResident prepares the device state for Extend.
func (lm *LM) openResident() (err error) {
	mem, err := openDeviceMemory(lm.rt, lm.env)
	if err != nil {
		return fmt.Errorf("model: %s: %w", lm.path, err)
	}
	r := &resident{deviceMemory: mem, params: lm.params, caches: map[*deviceCache]bool{}}
	defer func() {
		if err != nil {
			r.close()
		}
	}()
	raw, err := cacheWriteModel(2 * lm.sig.Layers)
	if err != nil {
		return fmt.Errorf("model: cache write graph: %w", err)
	}
	if r.writer, err = lm.env.NewSession(raw, r.so, cacheWriteInputs(2*lm.sig.Layers), cacheWriteOutputs(2*lm.sig.Layers)); err != nil {
		return fmt.Errorf("model: cache write graph: %w", err)
	}
	if raw, err = zeroModel(); err != nil {
		return fmt.Errorf("model: cache zero graph: %w", err)
	}
	if r.zero, err = lm.env.NewSession(raw, r.so, []string{"shape"}, []string{"zeros"}); err != nil {
		return fmt.Errorf("model: cache zero graph: %w", err)
	}
	for _, w := range lm.sig.Weights {
		v, ok := r.params.values[w.Name]
		if !ok {
			return fmt.Errorf("model: %s: weight %q is not among the device parameters", lm.path, w.Name)
		}
		r.weights = append(r.weights, v)
	}
	lm.res = r
	return nil
}

// upload copies host values to a new device tensor.
func (r *resident) upload(host *ortc.Value) (*ortc.Value, error) {
	v, err := r.alloc.AllocLike(host)
	if err != nil {
		return nil, err
	}
	if err := r.copier.Copy(v, host); err != nil {
		v.Release()
		return nil, err
	}
	return v, nil
}

func (r *resident) close() {
	for d := range r.caches {
		d.free()
	}
	r.weights = nil
	for _, s := range []*ortc.Session{r.writer, r.zero} {
		if s != nil {
			s.Close()
		}
	}
	r.deviceMemory.close()
}

// CopiedBytes returns the bytes a device-resident LM has copied between
// host and device memory so far (0 for an LM on host memory).
func (lm *LM) CopiedBytes() int64 {
	if lm.res == nil {
		return 0
	}
	return lm.env.CopiedBytes()
}

// cacheWriteModel is the graph that copies key and value vectors into
// caches in place: for each of n caches, out_j = ScatterND(cache_j,
// dst_index, GatherND(new_j, src_index)), indices [M, 3] over (row, head,
// slot). Each out_j is bound to cache_j's own memory: ScatterND writes
// its output's rows and, output and input being one buffer, copies
// nothing else (ONNX Runtime's CPU and CUDA kernels skip the input copy
// when they are the same).
func cacheWriteModel(n int) ([]byte, error) {
	b := onnx.NewGraphBuilder("cache_write")
	index := []onnx.Dim{onnx.P("M"), onnx.D(3)}
	dst := b.Input("dst_index", onnx.Int64, index...)
	src := b.Input("src_index", onnx.Int64, index...)
	for j := range n {
		cache := b.Input(fmt.Sprintf("cache_%d", j), onnx.Float32, onnx.P("rows"), onnx.P("heads"), onnx.P("slots"), onnx.P("dim"))
		fresh := b.Input(fmt.Sprintf("new_%d", j), onnx.Float32, onnx.P("n"), onnx.P("heads"), onnx.P("span"), onnx.P("dim"))
		vecs := b.Node("GatherND", []string{fresh, src})
		out := fmt.Sprintf("out_%d", j)
		b.NodeTo("ScatterND", []string{cache, dst, vecs}, []string{out})
		b.Output(out, onnx.Float32, onnx.P("rows"), onnx.P("heads"), onnx.P("slots"), onnx.P("dim"))
	}
	return proto.Marshal(b.Model(18).Proto)
}

// zeroModel is ConstantOfShape(shape) of float32 zeros, run with its
// output bound to a new cache buffer: device memory comes uninitialised,
// and a NaN in a masked slot would still reach the attention output (0 x
// NaN). The shape stays in host memory, where the kernel reads it.
func zeroModel() ([]byte, error) {
	b := onnx.NewGraphBuilder("zeros")
	shape := b.Input("shape", onnx.Int64, onnx.D(1))
	b.NodeTo("ConstantOfShape", []string{shape}, []string{"zeros"}, onnx.AttrTensor("value", onnx.NewTensor("value", []int64{1}, []float32{0})))
	b.Output("zeros", onnx.Float32, onnx.P("n"))
	return proto.Marshal(b.Model(18).Proto)
}

// fillZeros sets every value of v, a tensor in the device layer's memory
// of any shape, to 0 by running zero, a session of zeroModel, into a flat
// view of it.
func fillZeros(env *ortc.Env, zero *ortc.Session, v *ortc.Value) error {
	if len(v.Shape()) != 1 {
		flat, err := v.View(0, []int64{int64(v.Len())})
		if err != nil {
			return err
		}
		defer flat.Release()
		v = flat
	}
	shape, err := ortc.NewTensor(env, []int64{1}, []int64{int64(v.Len())})
	if err != nil {
		return err
	}
	defer shape.Release()
	b, err := zero.NewBinding()
	if err != nil {
		return err
	}
	defer b.Release()
	if err := errors.Join(b.BindInput("shape", shape), b.BindOutput("zeros", v)); err != nil {
		return err
	}
	return zero.RunBinding(b)
}

func cacheWriteInputs(n int) []string {
	in := []string{"dst_index", "src_index"}
	for j := range n {
		in = append(in, fmt.Sprintf("cache_%d", j), fmt.Sprintf("new_%d", j))
	}
	return in
}

func cacheWriteOutputs(n int) []string {
	var out []string
	for j := range n {
		out = append(out, fmt.Sprintf("out_%d", j))
	}
	return out
}

// deviceCache is a RowCache's buffers in device memory: for every layer,
// keys and values each one flat tensor laid out as RowCache says.
type deviceCache struct {
	lm *LM
	kv [][2]*ortc.Value
}

// newDeviceCache allocates layers x 2 buffers of n values on lm's device,
// zeroed.
func (lm *LM) newDeviceCache(n int) (*deviceCache, error) {
	if _, err := lm.extendSession(); err != nil {
		return nil, err
	}
	d := &deviceCache{lm: lm, kv: make([][2]*ortc.Value, lm.sig.Layers)}
	for l := range d.kv {
		for j := range 2 {
			v, err := ortc.AllocOn[float32](lm.res.alloc, []int64{int64(n)})
			if err == nil {
				d.kv[l][j] = v
				err = fillZeros(lm.env, lm.res.zero, v)
			}
			if err != nil {
				d.free()
				return nil, fmt.Errorf("model: row cache on %s: %w", lm.res.info, err)
			}
		}
	}
	lm.res.caches[d] = true
	return d, nil
}

// free releases the buffers; a second call does nothing.
func (d *deviceCache) free() {
	for l := range d.kv {
		for j := range 2 {
			d.kv[l][j].Release()
		}
	}
	d.kv = nil
	if d.lm.res != nil {
		delete(d.lm.res.caches, d)
	}
}

// views returns, per buffer (layer-major, keys before values), rows r0..
// r0+n of c's layout as [n, kv_heads, positions, head_dim] tensors;
// positions is the capacity, or 0 for an empty past (the rows' buffers
// are contiguous only whole).
func (d *deviceCache) views(c *RowCache, r0, n, positions int) ([]*ortc.Value, error) {
	if d.kv == nil {
		return nil, errors.New("the cache was freed (by RowCache.Free or LM.Close)")
	}
	per := c.kvHeads * c.capacity * c.headDim
	shape := []int64{int64(n), int64(c.kvHeads), int64(positions), int64(c.headDim)}
	var out []*ortc.Value
	for l := range d.kv {
		for j := range 2 {
			v, err := d.kv[l][j].View(r0*per, shape)
			if err != nil {
				releaseAll(out)
				return nil, err
			}
			out = append(out, v)
		}
	}
	return out, nil
}

func releaseAll(vs []*ortc.Value) {
	for _, v := range vs {
		v.Release()
	}
}

// write copies vectors into the whole cache c in place: for each buffer
// b, the vectors at src_index of srcs[b] to dst_index of whole[b], the
// views of c's rows (views(c, 0, c.rows)).
func (d *deviceCache) write(whole, srcs []*ortc.Value, dstIndex, srcIndex []int64) error {
	M := len(dstIndex) / 3
	if M == 0 {
		return nil
	}
	r := d.lm.res
	var index [2]*ortc.Value // dst, src on the device
	for i, host := range [][]int64{dstIndex, srcIndex} {
		h, err := ortc.NewTensor(d.lm.env, []int64{int64(M), 3}, host)
		if err != nil {
			return err
		}
		index[i], err = r.upload(h)
		h.Release()
		if err != nil {
			return err
		}
		defer index[i].Release()
	}
	dst, src := index[0], index[1]
	b, err := r.writer.NewBinding()
	if err != nil {
		return err
	}
	defer b.Release()
	if err := errors.Join(b.BindInput("dst_index", dst), b.BindInput("src_index", src)); err != nil {
		return err
	}
	for j, v := range whole {
		if err := errors.Join(b.BindInput(fmt.Sprintf("cache_%d", j), v), b.BindInput(fmt.Sprintf("new_%d", j), srcs[j]),
			b.BindOutput(fmt.Sprintf("out_%d", j), v)); err != nil {
			return err
		}
	}
	return r.writer.RunBinding(b)
}

// move copies row src of c into row dst on the device.
func (d *deviceCache) move(c *RowCache, dst, src int) error {
	k := c.lens[src]
	dstIndex := make([]int64, 0, 3*k*c.kvHeads)
	srcIndex := make([]int64, 0, 3*k*c.kvHeads)
	for h := range c.kvHeads {
		for t := range k {
			dstIndex = append(dstIndex, int64(dst), int64(h), int64(t))
			srcIndex = append(srcIndex, int64(src), int64(h), int64(t))
		}
	}
	whole, err := d.views(c, 0, c.rows, c.capacity)
	if err != nil {
		return err
	}
	defer releaseAll(whole)
	return d.write(whole, whole, dstIndex, srcIndex)
}

// extendOnDevice is Extend's run on a device cache: the token inputs go
// to the device, the graph reads the past and the weights where they
// are, its new keys and values stay there and are written into the rows'
// next slots, and only the logits come back.
func (lm *LM) extendOnDevice(sess *ortc.Session, c *RowCache, r0, pastLen int, real []int, host []*ortc.Value, logits *ortc.Value) error {
	r := lm.res
	if err := r.params.sync(r.copier); err != nil {
		return err
	}
	b, err := sess.NewBinding()
	if err != nil {
		return err
	}
	defer b.Release()
	names := sess.Inputs()
	var owned []*ortc.Value
	defer func() { releaseAll(owned) }()
	for i, h := range host {
		v, err := r.upload(h)
		if err != nil {
			return err
		}
		owned = append(owned, v)
		if err := b.BindInput(names[i], v); err != nil {
			return err
		}
	}
	n := len(real)
	past, err := c.dev.views(c, r0, n, pastLen)
	if err != nil {
		return err
	}
	owned = append(owned, past...)
	at := len(host)
	for _, v := range append(past, r.weights...) {
		if err := b.BindInput(names[at], v); err != nil {
			return err
		}
		at++
	}
	out, err := r.alloc.AllocLike(logits)
	if err != nil {
		return err
	}
	owned = append(owned, out)
	outNames := sess.Outputs()
	if err := b.BindOutput(outNames[0], out); err != nil {
		return err
	}
	for _, name := range outNames[1:] {
		if err := b.BindOutputTo(name, r.info); err != nil {
			return err
		}
	}
	if err := sess.RunBinding(b); err != nil {
		return err
	}
	res, err := b.Outputs()
	if err != nil {
		return err
	}
	owned = append(owned, res...)
	if err := r.copier.Copy(logits, out); err != nil {
		return err
	}
	// The new keys and values: [n, kv_heads, span, head_dim] whose last
	// real[i] slots of row i are new.
	span := int(res[1].Shape()[2])
	var dstIndex, srcIndex []int64
	for i, k := range real {
		for h := range c.kvHeads {
			for t := range k {
				dstIndex = append(dstIndex, int64(r0+i), int64(h), int64(c.lens[r0+i]+t))
				srcIndex = append(srcIndex, int64(i), int64(h), int64(span-k+t))
			}
		}
	}
	whole, err := c.dev.views(c, 0, c.rows, c.capacity)
	if err != nil {
		return err
	}
	defer releaseAll(whole)
	return c.dev.write(whole, res[1:], dstIndex, srcIndex)
}

// deviceParams are device copies of a policy's parameter stores, shared
// by its sampling LMs and its training executor, each store copied
// again when its version moves (params.Store.Touch), by whichever of
// them next needs it (through that one's Copier, which counts the
// bytes).
type deviceParams struct {
	env *ortc.Env
	mem *deviceMemory
	// stores[i]'s tensors have host views host[i] and device copies
	// values (by name); copied[i] is the version on the device (before
	// the first copy, one that is not the store's).
	stores []*params.Store
	host   [][]*ortc.Value
	copied []uint64
	values map[string]*ortc.Value
}

// newDeviceParams allocates device copies of stores' tensors on rt's
// device (copied on the first sync).
func newDeviceParams(rt *Runtime, stores []*params.Store) (d *deviceParams, err error) {
	env, err := rt.api.NewEnv()
	if err != nil {
		return nil, err
	}
	d = &deviceParams{env: env, stores: stores, values: map[string]*ortc.Value{}}
	defer func() {
		if err != nil {
			d.close()
		}
	}()
	if d.mem, err = openDeviceMemory(rt, env); err != nil {
		return nil, err
	}
	for _, s := range stores {
		var host []*ortc.Value
		for i := range s.Len() {
			t := s.At(i)
			h, err := ortc.NewTensor(env, t.Shape, t.Data)
			if err != nil {
				return nil, fmt.Errorf("parameter %q: %w", t.Name, err)
			}
			host = append(host, h)
			v, err := d.mem.alloc.AllocLike(h)
			if err != nil {
				d.host = append(d.host, host)
				return nil, fmt.Errorf("parameter %q on %s: %w", t.Name, d.mem.info, err)
			}
			d.values[t.Name] = v
		}
		d.host = append(d.host, host)
		d.copied = append(d.copied, s.Version()-1) // differs from the current version
	}
	return d, nil
}

// sync copies, through cp, each store whose version moved since its last
// copy.
func (d *deviceParams) sync(cp *ortc.Copier) error {
	for i, s := range d.stores {
		if d.copied[i] == s.Version() {
			continue
		}
		for k := range s.Len() {
			if err := cp.Copy(d.values[s.At(k).Name], d.host[i][k]); err != nil {
				return fmt.Errorf("copy parameter %q to %s: %w", s.At(k).Name, d.mem.info, err)
			}
		}
		d.copied[i] = s.Version()
	}
	return nil
}

// current reports whether the device copy of store s is of its current
// version (s is one of d's stores).
func (d *deviceParams) current(s *params.Store) bool {
	for i, t := range d.stores {
		if t == s {
			return d.copied[i] == s.Version()
		}
	}
	return false
}

func (d *deviceParams) close() {
	for _, v := range d.values {
		v.Release()
	}
	for _, hs := range d.host {
		releaseAll(hs)
	}
	d.values, d.host = nil, nil
	if d.mem != nil {
		d.mem.close()
	}
	d.env.Close()
}
