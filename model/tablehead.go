package model

import (
	"fmt"
	"math"

	"github.com/spiral-rl/spiral/model/ortc"
)

// Live tensors per [positions x vocabulary] entry in the table head's
// graphs: logits, probabilities and their product (Stats); logits,
// probabilities, the one-hot target and the logits' gradient (Grad).
const (
	statsLive = 3
	gradLive  = 4
)

// tableHead computes the loss of the usual LM head (blocks.Head.Table)
// the way Cut Cross-Entropy does (Wijmans et al. 2024, arXiv:2411.09009:
// never all the [positions x vocabulary] logits at once, recomputed per
// tile in the backward) on the loss positions pos of the head's input z
// ([B, T, hidden]): their log-probabilities and entropies into res, the
// table's gradient into the gradient store, and it returns z's gradient.
// Two passes: Stats over chunks of positions (the log-sum-exp and target
// logit each position needs), then the per-position loss derivative,
// then Grad over tiles of positions x vocabulary, each adding its share
// of both gradients. With a policy narrower than the logits (limit, the
// limited Stats graph's input, non-nil) both passes cover the ids below
// it only: the statistics are the softmax's over them, and the others,
// of probability 0, get no gradient.
func (e *Executor) tableHead(st *stepState, res *TrainResult, z *ortc.Value, pos []int, count float64, limit []int64) (*ortc.Value, error) {
	h := &e.prog.Head
	b := st.b
	table := e.tensors[h.Table]
	V := e.vocab // the table's width
	L := e.limit // the policy's ids, 0..L-1
	N := len(pos)
	hs, err := e.newHeadStates(z, pos)
	if err != nil {
		return nil, err
	}
	defer hs.release()
	if N == 0 {
		return hs.gradient(e)
	}
	hidden := hs.hidden
	tgt := make([]int64, N)
	for k, p := range pos {
		tgt[k] = b.InputIDs[p+1]
	}
	lse := make([]float32, N)

	// Pass 1: per-position statistics over the policy's vocabulary.
	live := statsLive
	if limit != nil {
		live++ // the logits' slice
	}
	chunk := max(1, int(e.opt.LossChunkBytes/int64(V*4*live)))
	for lo := 0; lo < N; lo += chunk {
		hi := min(N, lo+chunk)
		out := []*ortc.Value{nil, nil, nil}
		if err := e.runOwned(e.statsGraph(), out, func(t tensors) {
			hs.rows(t, lo, hi)
			t.view(e.weight(h.Table))
			t.i64([]int64{int64(hi - lo)}, tgt[lo:hi])
			if limit != nil {
				t.i64([]int64{1}, limit)
			}
		}); err != nil {
			return nil, err
		}
		l, tl, ent := out[0].Float32s(), out[1].Float32s(), out[2].Float32s()
		for k := range hi - lo {
			p := pos[lo+k]
			lse[lo+k] = l[k]
			res.LogProbs[p] = tl[k] - l[k]
			res.Entropy[p] = ent[k]
		}
		for _, v := range out {
			v.Release()
		}
	}

	// The loss and its derivative with respect to each log-probability.
	coef := make([]float32, N)
	loss := 0.0
	lo, hi := float64(1-b.ClipLow), float64(1+b.ClipHigh)
	for k, p := range pos {
		w := float64(b.LossMask[p]) / count
		a := float64(b.Advantages[p])
		obj, d := a, a // detached: ratio 1, d obj / d logp = A
		if b.OldLogProbs != nil {
			obj, d = clippedObjective(float64(res.LogProbs[p]), float64(b.OldLogProbs[p]), a, lo, hi)
		}
		loss -= w * obj
		coef[k] = float32(-w * d)
	}
	res.Loss = float32(loss)

	// Pass 2: gradients, tile by tile: all positions against as wide a
	// block of the policy's vocabulary as the bound allows, else fewer
	// positions. A frozen table's Grad graph computes no table gradient
	// block: the tile's bound leaves it out, and the call has one output
	// (the hidden states' gradient), not two.
	gradWidth, outputs := 0, 1
	if h.TableTrained {
		gradWidth, outputs = hidden, 2
	}
	block, rowsPerTile := tableTile(e.opt.LossChunkBytes, N, L, gradWidth)
	local := make([]int64, N)
	i, trained := e.trained[h.Table]
	trained = trained && h.TableTrained
	// The table's gradient goes to its device sum (summed), or into the
	// host store (gtab).
	summed := trained && e.summed(h.Table)
	var gtab []float32
	if trained && !summed {
		gtab = st.grads.At(i).Data
	}
	var cols []float32 // a block of a [hidden, vocab] table
	for v0 := 0; v0 < L; v0 += block {
		v1 := min(L, v0+block)
		w := v1 - v0
		for k, t := range tgt {
			local[k] = -1
			if t >= int64(v0) && t < int64(v1) {
				local[k] = t - int64(v0)
			}
		}
		tshape := []int64{int64(w), int64(hidden)}
		tdata := table.Data[v0*hidden : v1*hidden]
		// On the device layer a block of a [vocab, hidden] table is a view
		// of its device copy, and a [hidden, vocab] table's block, strided,
		// a slice made there; on the host the latter is assembled in Go.
		var tview *ortc.Value
		switch {
		case e.dev != nil:
			var err error
			if tview, err = e.tableBlock(v0, v1, hidden); err != nil {
				return nil, fmt.Errorf("table block %d..%d: %w", v0, v1, err)
			}
		case !h.TableRows:
			tshape = []int64{int64(hidden), int64(w)}
			cols = resize(cols, hidden*w)
			for r := range hidden {
				copy(cols[r*w:(r+1)*w], table.Data[r*V+v0:r*V+v1])
			}
			tdata = cols
		}
		for r0 := 0; r0 < N; r0 += rowsPerTile {
			r1 := min(N, r0+rowsPerTile)
			out := make([]*ortc.Value, outputs)
			if err := e.runOwnedKeeping(h.Grad, out, func(k int) bool { return k == 0 && hs.grad != nil || k == 1 && summed }, func(t tensors) {
				hs.rows(t, r0, r1)
				if tview != nil {
					t.view(tview)
				} else {
					t.f32(tshape, tdata)
				}
				t.f32([]int64{int64(r1 - r0), 1}, lse[r0:r1])
				t.i64([]int64{int64(r1 - r0), 1}, local[r0:r1])
				t.f32([]int64{int64(r1 - r0), 1}, coef[r0:r1])
			}); err != nil {
				tview.Release() // a nil view releases nothing
				return nil, err
			}
			err := hs.addGrad(e, r0, out[0])
			if err == nil && h.TableTrained {
				err = e.addTableGrad(st, out[1], summed, gtab, v0, v1, hidden)
			}
			for _, v := range out {
				v.Release()
			}
			if err != nil {
				tview.Release()
				return nil, err
			}
		}
		tview.Release()
	}
	return hs.gradient(e)
}

// tableTile returns the vocabulary entries (block) and positions
// (rows) of one Grad tile of n positions against a vocab-entry table of
// hidden-wide rows, as many as fit lossChunkBytes (at least one of
// each): the tile's [rows x block] tensors (gradLive of them) and the
// table's gradient block [block, hidden] that the call returns, which
// at few positions is the larger (all the table's, 4 x vocab x hidden
// bytes, for one position); hidden is 0 for a frozen table, whose
// gradient is not computed.
func tableTile(lossChunkBytes int64, n, vocab, hidden int) (block, rows int) {
	block = max(1, min(vocab, int(lossChunkBytes/(4*(int64(n)*gradLive+int64(hidden))))))
	rows = n
	if int64(n)*int64(block)*4*gradLive > lossChunkBytes {
		rows = max(1, int(lossChunkBytes/(int64(block)*4*gradLive)))
	}
	return block, rows
}

// tableBlock returns the head table's block of vocabulary entries
// v0..v1 from its device copy: rows v0..v1 of a [vocab, hidden] table (a
// view), or columns v0..v1 of a [hidden, vocab] one (a slice made in
// device memory).
func (e *Executor) tableBlock(v0, v1, hidden int) (*ortc.Value, error) {
	h := &e.prog.Head
	table := e.weight(h.Table)
	if h.TableRows {
		return table.View(v0*hidden, []int64{int64(v1 - v0), int64(hidden)})
	}
	sess, err := e.devGrads.acts.sliceSession(e, ortc.Float32, 2)
	if err != nil {
		return nil, err
	}
	starts, err := ortc.NewTensor(e.env, []int64{2}, []int64{0, int64(v0)})
	if err != nil {
		return nil, err
	}
	defer starts.Release()
	ends, err := ortc.NewTensor(e.env, []int64{2}, []int64{int64(hidden), int64(v1)})
	if err != nil {
		return nil, err
	}
	defer ends.Release()
	out := []*ortc.Value{nil}
	if err := e.runBound(sess, []*ortc.Value{table, starts, ends}, out); err != nil {
		return nil, err
	}
	return out[0], nil
}

// addTableGrad adds g, the gradient of the table's vocabulary block
// v0..v1 from one tile, times the step's scale: into the table's device
// sum (summed) or into the host store's gtab, when it is trained.
func (e *Executor) addTableGrad(st *stepState, g *ortc.Value, summed bool, gtab []float32, v0, v1, hidden int) error {
	h := &e.prog.Head
	switch {
	case summed && h.TableRows:
		// A [vocab, hidden] table: its block's rows, in place.
		return e.addSummed(h.Table, v0*hidden, g, st.scale)
	case summed:
		// A [hidden, vocab] table: its block's columns, as rows of the
		// transposed sum.
		return e.addColumns(v0, g, st.scale)
	case gtab == nil:
		return nil
	}
	gt := g.Float32s()
	e.countGradient(len(gt))
	if h.TableRows {
		addScaled(gtab[v0*hidden:v1*hidden], gt, st.scale)
		return nil
	}
	w, V := v1-v0, e.vocab
	for r := range hidden {
		addScaled(gtab[r*V+v0:r*V+v1], gt[r*w:(r+1)*w], st.scale)
	}
	return nil
}

// headStates are the LM head's loss positions' hidden states [N,
// hidden], which every call reads rows of, and their gradient summed
// over the calls (the table head's blocks of the vocabulary). On the host they are copied out of the
// head's input in Go and the gradient is added into its rows of z's;
// on the device layer a Gather graph takes them from z there, and the
// gradient, summed there, goes into z's by a ScatterND: nothing crosses.
type headStates struct {
	z      *ortc.Value
	pos    []int
	hidden int
	// On the host: the states, and z's gradient.
	zs, gz []float32
	// On the device layer: the states and their gradient.
	dev, grad *ortc.Value
}

func (e *Executor) newHeadStates(z *ortc.Value, pos []int) (*headStates, error) {
	shape := z.Shape()
	hs := &headStates{z: z, pos: pos, hidden: int(shape[len(shape)-1])}
	n, hidden := len(pos), hs.hidden
	if !z.Placed() {
		zd := z.Float32s()
		hs.zs = make([]float32, n*hidden)
		for k, p := range pos {
			copy(hs.zs[k*hidden:(k+1)*hidden], zd[p*hidden:(p+1)*hidden])
		}
		hs.gz = e.scratch("head-grad", z.Len())
		return hs, nil
	}
	if n == 0 {
		return hs, nil
	}
	rows, err := z.View(0, []int64{int64(z.Len() / hidden), int64(hidden)})
	if err != nil {
		return nil, err
	}
	defer rows.Release()
	ids := make([]int64, n)
	for k, p := range pos {
		ids[k] = int64(p)
	}
	iv, err := ortc.NewTensor(e.env, []int64{1, int64(n)}, ids)
	if err != nil {
		return nil, err
	}
	defer iv.Release()
	out := []*ortc.Value{nil}
	if err := e.runSessionKeeping(e.devGrads.graphs.gather, []*ortc.Value{rows, iv}, out, e.placed); err != nil {
		return nil, fmt.Errorf("the loss positions' hidden states: %w", err)
	}
	hs.dev = out[0]
	if hs.grad, err = e.zeroGrad("", []int64{int64(n), int64(hidden)}); err != nil {
		hs.release()
		return nil, fmt.Errorf("the loss positions' gradient: %w", err)
	}
	return hs, nil
}

func (hs *headStates) release() {
	hs.dev.Release()
	hs.grad.Release()
}

// rows adds the hidden states of loss positions lo..hi to a call's
// inputs.
func (hs *headStates) rows(t tensors, lo, hi int) {
	t.add(hs.states(t.e, lo, hi, []int64{int64(hi - lo), int64(hs.hidden)}))
}

// states returns the hidden states of loss positions lo..hi as a tensor
// of the given shape over their memory (release it).
func (hs *headStates) states(e *Executor, lo, hi int, shape []int64) (*ortc.Value, error) {
	if hs.dev != nil {
		return hs.dev.View(lo*hs.hidden, shape)
	}
	return ortc.NewTensor(e.env, shape, hs.zs[lo*hs.hidden:hi*hs.hidden])
}

// addGrad adds g, the gradient of loss positions from lo on, into their
// rows.
func (hs *headStates) addGrad(e *Executor, lo int, g *ortc.Value) error {
	if hs.grad != nil {
		return e.addRows(hs.grad, lo*hs.hidden, g)
	}
	gh, h := g.Float32s(), hs.hidden
	for k := range len(gh) / h {
		p := hs.pos[lo+k]
		addInto(hs.gz[p*h:(p+1)*h], gh[k*h:(k+1)*h])
	}
	return nil
}

// gradient returns z's gradient: the loss positions' rows summed, zeros
// elsewhere (the positions are distinct).
func (hs *headStates) gradient(e *Executor) (*ortc.Value, error) {
	if hs.gz != nil {
		return ortc.NewTensor(e.env, hs.z.Shape(), hs.gz)
	}
	gz, err := e.zeroGrad("", hs.z.Shape())
	if err != nil || hs.grad == nil {
		return gz, err
	}
	rows, err := gz.View(0, []int64{int64(gz.Len() / hs.hidden), int64(hs.hidden)})
	if err == nil {
		err = e.scatterRows(rows, hs.pos, hs.grad)
		rows.Release()
	}
	if err != nil {
		gz.Release()
		return nil, fmt.Errorf("the head input's gradient: %w", err)
	}
	return gz, nil
}

// clippedObjective returns PPO's min(ratio A, clip(ratio, lo, hi) A) for
// ratio = exp(logp - old) and its derivative with respect to logp, the
// subgradient autodiff.LossGraph's Where nodes give: through the ratio
// where the unclipped term is taken (ties take it) or the ratio lies
// within [lo, hi], zero where a clipped bound is taken.
func clippedObjective(logp, old, a, lo, hi float64) (obj, d float64) {
	ratio := math.Exp(logp - old)
	clipped, inside := ratio, true
	switch {
	case ratio < lo:
		clipped, inside = lo, false
	case ratio > hi:
		clipped, inside = hi, false
	}
	s1, s2 := ratio*a, clipped*a
	if s2 < s1 {
		if inside {
			return s2, a * ratio
		}
		return s2, 0
	}
	return s1, a * ratio
}

// tensors collects the inputs of one run: views of Go memory made for
// it and released after.
type tensors struct {
	e   *Executor
	in  *[]*ortc.Value
	own *[]*ortc.Value
	err *error
}

func (t tensors) f32(shape []int64, data []float32) { t.add(ortc.NewTensor(t.e.env, shape, data)) }
func (t tensors) i64(shape []int64, data []int64)   { t.add(ortc.NewTensor(t.e.env, shape, data)) }
func (t tensors) view(v *ortc.Value)                { *t.in = append(*t.in, v) }

func (t tensors) add(v *ortc.Value, err error) {
	if err != nil {
		if *t.err == nil {
			*t.err = err
		}
		return
	}
	*t.own = append(*t.own, v)
	*t.in = append(*t.in, v)
}

// runOwned runs the graph key with the inputs fill adds, releasing the
// views it made; out's nil entries come back allocated.
func (e *Executor) runOwned(key string, out []*ortc.Value, fill func(tensors)) error {
	return e.runOwnedKeeping(key, out, func(int) bool { return false }, fill)
}

// runOwnedKeeping is runOwned with the outputs device reports allocated
// in device memory (runKeeping).
func (e *Executor) runOwnedKeeping(key string, out []*ortc.Value, device func(k int) bool, fill func(tensors)) error {
	var in, own []*ortc.Value
	var err error
	fill(tensors{e: e, in: &in, own: &own, err: &err})
	defer func() {
		for _, v := range own {
			v.Release()
		}
	}()
	if err != nil {
		return fmt.Errorf("loss inputs: %w", err)
	}
	return e.runKeeping(key, in, out, device)
}
