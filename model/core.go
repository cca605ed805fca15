package model

import (
	"fmt"
	"unsafe"

	"github.com/spiral-rl/spiral/model/blocks"
	"github.com/spiral-rl/spiral/model/ortc"
)

// coreRun is one attention core's operands laid out for calls on one
// head's block of queries.
type coreRun struct {
	c       *blocks.Core
	in      []*ortc.Value // full operands, then the weights
	T       int
	outLead []int64 // leading dims of the output (operands' broadcast)
	// lead[i][l] is operand i's flat leading index for output lead l.
	lead  [][]int
	block int // queries per call
}

// newCoreRun reads the operands of c from the step's values.
func (e *Executor) newCoreRun(st *stepState, c *blocks.Core) (*coreRun, error) {
	in, err := e.gather(st, &c.Piece)
	if err != nil {
		return nil, err
	}
	r := &coreRun{c: c, in: in, T: -1}
	for i, role := range c.Roles {
		if role == blocks.RoleScores {
			continue
		}
		s := in[i].Shape()
		if len(s) < 2 {
			return nil, fmt.Errorf("attention operand %q has shape %v, want [..., T, d]", c.Inputs[i], s)
		}
		if t := int(s[len(s)-2]); r.T < 0 {
			r.T = t
		} else if t != r.T {
			return nil, fmt.Errorf("attention operand %q has %d positions, others %d", c.Inputs[i], t, r.T)
		}
		if r.outLead, err = broadcastDims(r.outLead, s[:len(s)-2]); err != nil {
			return nil, fmt.Errorf("attention operand %q: %w", c.Inputs[i], err)
		}
	}
	for i, role := range c.Roles {
		s := in[i].Shape()
		if role == blocks.RoleScores {
			if len(s) < 2 {
				r.lead = append(r.lead, nil)
				continue
			}
			for a, want := range []int{r.T, r.T} {
				if d := int(s[len(s)-2+a]); d != want && d != 1 {
					return nil, fmt.Errorf("%q, combined with the attention scores, has shape %v: its last two axes must be %d or 1", c.Inputs[i], s, r.T)
				}
			}
		}
		idx, err := leadIndices(r.outLead, s[:len(s)-2])
		if err != nil {
			return nil, fmt.Errorf("%q: %w", c.Inputs[i], err)
		}
		r.lead = append(r.lead, idx)
	}
	r.block = max(1, min(r.T, int(e.opt.AttentionBytes/int64(max(1, r.T)*4*attentionLive))))
	return r, nil
}

func numLead(dims []int64) int {
	n := 1
	for _, d := range dims {
		n *= int(d)
	}
	return n
}

// broadcastDims broadcasts two shapes (right-aligned).
func broadcastDims(a, b []int64) ([]int64, error) {
	if len(a) < len(b) {
		a, b = b, a
	}
	out := append([]int64(nil), a...)
	off := len(a) - len(b)
	for i, d := range b {
		switch o := out[off+i]; {
		case o == d || d == 1:
		case o == 1:
			out[off+i] = d
		default:
			return nil, fmt.Errorf("leading dims %v and %v do not broadcast", a, b)
		}
	}
	return out, nil
}

// leadIndices maps every flat index over out (row-major) to the flat
// index over lead, broadcast to out.
func leadIndices(out, lead []int64) ([]int, error) {
	if len(lead) > len(out) {
		return nil, fmt.Errorf("leading dims %v exceed %v", lead, out)
	}
	n := 1
	for _, d := range out {
		n *= int(d)
	}
	idx := make([]int, n)
	off := len(out) - len(lead)
	for l := range n {
		rem, flat, stride := l, 0, 1
		for a := len(out) - 1; a >= 0; a-- {
			c := rem % int(out[a])
			rem /= int(out[a])
			if a >= off {
				d := int(lead[a-off])
				if d != 1 {
					if d != int(out[a]) {
						return nil, fmt.Errorf("leading dims %v do not broadcast to %v", lead, out)
					}
					flat += c * stride
				}
				stride *= d
			}
		}
		idx[l] = flat
	}
	return idx, nil
}

// callInputs builds the inputs of the call on output lead l, queries
// q0..q1: views of the operands' rows and copies of the score-shaped
// inputs (cached in scores while their leading index is unchanged).
func (e *Executor) callInputs(r *coreRun, l, q0, q1 int, scores []scoreSlice) ([]*ortc.Value, []*ortc.Value, error) {
	var in, owned []*ortc.Value
	fail := func(err error) ([]*ortc.Value, []*ortc.Value, error) {
		for _, v := range owned {
			v.Release()
		}
		return nil, nil, err
	}
	for i, role := range r.c.Roles {
		v := r.in[i]
		s := v.Shape()
		var view *ortc.Value
		var err error
		switch role {
		case blocks.RoleQueries, blocks.RoleKeys:
			d := int(s[len(s)-1])
			lo, hi := q0, q1
			if role == blocks.RoleKeys {
				lo = 0
			}
			base := r.lead[i][l] * r.T * d
			shape := unitLead(len(s), hi-lo, d)
			view, err = e.rowsOf(v, base+lo*d, shape)
		case blocks.RoleScores:
			if len(s) < 2 {
				in = append(in, v)
				continue
			}
			sc := &scores[i]
			if sc.v == nil || sc.lead != r.lead[i][l] || sc.q0 != q0 {
				sc.release()
				if err := e.sliceScores(sc, v, r.lead[i][l], r.T, q0, q1, i); err != nil {
					return fail(err)
				}
			}
			in = append(in, sc.v)
			continue
		}
		if err != nil {
			return fail(err)
		}
		owned = append(owned, view)
		in = append(in, view)
	}
	in = append(in, r.in[len(r.c.Roles):]...)
	return in, owned, nil
}

// unitLead returns the shape [1, ..., 1, rows, cols] of the given rank.
func unitLead(rank, rows, cols int) []int64 {
	s := make([]int64, rank)
	for i := range s {
		s[i] = 1
	}
	s[rank-2], s[rank-1] = int64(rows), int64(cols)
	return s
}

// scoreSlice is a score-shaped input's block for the current queries: a
// copy, or a tensor over its rows where they lie.
type scoreSlice struct {
	v    *ortc.Value
	lead int
	q0   int
}

func (s *scoreSlice) release() {
	s.v.Release()
	s.v = nil
}

// sliceScores copies rows q0..q1 (where axis -2 has T entries) and columns
// 0..q1 (where axis -1 has) of leading index lead of v into sc; whole rows
// are not copied but viewed where they lie (the view holds v's memory).
func (e *Executor) sliceScores(sc *scoreSlice, v *ortc.Value, lead, T, q0, q1, slot int) error {
	s := v.Shape()
	rows, cols := int(s[len(s)-2]), int(s[len(s)-1])
	r0, r1, c1 := 0, rows, cols
	if rows == T {
		r0, r1 = q0, q1
	}
	if cols == T {
		c1 = q1
	}
	sc.lead, sc.q0 = lead, q0
	if v.Placed() {
		return e.sliceScoresOn(sc, v, lead, [2]int{r0, r1}, c1)
	}
	if el := v.Elem(); el != ortc.Float32 && el != ortc.Bool {
		return fmt.Errorf("score-shaped attention input of element type %d", el)
	}
	shape := unitLead(len(s), r1-r0, c1)
	var err error
	if c1 == cols {
		// Whole rows (always so when a call takes every query): they
		// lie together in v, viewed as they are.
		sc.v, err = v.HostView((lead*rows+r0)*cols, shape)
		return err
	}
	size := v.Elem().Size()
	src := v.Bytes()[lead*rows*cols*size : (lead+1)*rows*cols*size]
	n := (r1 - r0) * c1
	buf := e.scratchBytes(fmt.Sprintf("core-scores-%d", slot), n*size)
	for r := r0; r < r1; r++ {
		copy(buf[(r-r0)*c1*size:(r-r0+1)*c1*size], src[r*cols*size:(r*cols+c1)*size])
	}
	if v.Elem() == ortc.Float32 {
		sc.v, err = ortc.NewTensor(e.env, shape, unsafe.Slice((*float32)(unsafe.Pointer(&buf[0])), n))
	} else {
		sc.v, err = ortc.NewTensor(e.env, shape, unsafe.Slice((*bool)(unsafe.Pointer(&buf[0])), n))
	}
	return err
}

// scratchBytes is scratch for byte data (kept as float32s, so aligned).
func (e *Executor) scratchBytes(key string, n int) []byte {
	f := e.scratch(key, (n+3)/4)
	if len(f) == 0 {
		f = e.scratch(key, 1)
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&f[0])), n)
}

// coreOutScratch is the scratch buffer of the attention core's output on
// the host.
const coreOutScratch = "core-out"

// coreForward runs attention core c per head and block of queries, into
// one output [lead..., T, d] held in the block's values: in host memory,
// or on the device layer in device memory, each call writing its rows.
func (e *Executor) coreForward(st *stepState, c *blocks.Core) error {
	r, err := e.newCoreRun(st, c)
	if err != nil {
		return err
	}
	scores := make([]scoreSlice, len(c.Roles))
	defer func() {
		for i := range scores {
			scores[i].release()
		}
	}()
	var out coreOutput
	nLead := numLead(r.outLead)
	for q0 := 0; q0 < r.T; q0 += r.block {
		q1 := min(r.T, q0+r.block)
		for l := range nLead {
			in, owned, err := e.callInputs(r, l, q0, q1, scores)
			if err == nil {
				err = out.call(e, r, c, in, l, q0, q1)
			}
			for _, v := range owned {
				v.Release()
			}
			if err != nil {
				out.v.Release()
				return err
			}
		}
	}
	if out.v == nil {
		shape := append(append([]int64(nil), r.outLead...), int64(r.T), int64(out.d))
		if out.v, err = ortc.NewTensor(e.env, shape, out.host); err != nil {
			return err
		}
	}
	st.local.put(c.Outputs[0], out.v)
	return nil
}

// coreOutput is the attention core's output as its calls fill it: rows
// of a host buffer, or on the device layer of a tensor in device memory.
type coreOutput struct {
	host []float32
	v    *ortc.Value
	d    int // width
}

// call runs the core's forward on output lead l, queries q0..q1.
func (o *coreOutput) call(e *Executor, r *coreRun, c *blocks.Core, in []*ortc.Value, l, q0, q1 int) error {
	res := []*ortc.Value{nil}
	var err error
	if o.v != nil {
		if res[0], err = o.v.View((l*r.T+q0)*o.d, unitLead(len(r.outLead)+2, q1-q0, o.d)); err != nil {
			return err
		}
	}
	defer func() { res[0].Release() }() // the run's output, or the view
	if err := e.runKeeping(c.Forward, in, res, e.placed); err != nil {
		return err
	}
	if o.v != nil {
		return nil
	}
	rs := res[0].Shape()
	o.d = int(rs[len(rs)-1])
	if !res[0].Placed() {
		if o.host == nil {
			o.host = e.scratch(coreOutScratch, numLead(r.outLead)*r.T*o.d)
		}
		copy(o.host[(l*r.T+q0)*o.d:(l*r.T+q1)*o.d], res[0].Float32s())
		return nil
	}
	// The first call on the device layer: now that the width is known,
	// the whole output, and this call's rows of it.
	shape := append(append([]int64(nil), r.outLead...), int64(r.T), int64(o.d))
	if o.v, err = ortc.AllocOn[float32](e.devGrads.mem.alloc, shape); err != nil {
		return fmt.Errorf("attention output: %w", err)
	}
	rows, err := o.v.View((l*r.T+q0)*o.d, rs)
	if err != nil {
		return err
	}
	defer rows.Release()
	return e.copyOnDevice(rows, res[0])
}

// coreBackward runs core c's backward per head and block of queries: the
// gradients of the queries land in their rows, those of the keys and
// values are summed over the blocks that read them (in device memory on
// the device layer).
func (e *Executor) coreBackward(st *stepState, c *blocks.Core) error {
	if c.Backward == "" {
		return nil
	}
	r, err := e.newCoreRun(st, c)
	if err != nil {
		return err
	}
	g, ok := st.gradVal[c.Outputs[0]]
	if !ok {
		return fmt.Errorf("no gradient reached the attention output %q", c.Outputs[0])
	}
	gs := g.Shape()
	d := int(gs[len(gs)-1])
	grads := map[int]*ortc.Value{}
	defer func() {
		for _, v := range grads {
			v.Release()
		}
	}()
	for _, i := range c.GradInputs {
		if grads[i], err = e.zeroGrad(fmt.Sprintf("core-grad-%d", i), r.in[i].Shape()); err != nil {
			return fmt.Errorf("gradient of %q: %w", c.Inputs[i], err)
		}
	}
	scores := make([]scoreSlice, len(c.Roles))
	defer func() {
		for i := range scores {
			scores[i].release()
		}
	}()
	nLead := numLead(r.outLead)
	for q0 := 0; q0 < r.T; q0 += r.block {
		q1 := min(r.T, q0+r.block)
		for l := range nLead {
			in, owned, err := e.callInputs(r, l, q0, q1, scores)
			if err != nil {
				return err
			}
			gv, err := e.rowsOf(g, (l*r.T+q0)*d, unitLead(len(gs), q1-q0, d))
			if err != nil {
				return err
			}
			owned = append(owned, gv)
			in = append(in, gv)
			out := make([]*ortc.Value, len(c.GradInputs))
			err = e.runKeeping(c.Backward, in, out, e.placed)
			for _, v := range owned {
				v.Release()
			}
			for k, i := range c.GradInputs {
				if err == nil {
					s := r.in[i].Shape()
					w := int(s[len(s)-1])
					lo := q0
					if c.Roles[i] == blocks.RoleKeys {
						lo = 0
					}
					err = e.addRows(grads[i], (r.lead[i][l]*r.T+lo)*w, out[k])
				}
				out[k].Release()
			}
			if err != nil {
				return err
			}
		}
	}
	for _, i := range c.GradInputs {
		v := grads[i]
		delete(grads, i)
		if err := e.addGrad(st, c.Inputs[i], v); err != nil {
			return err
		}
	}
	return nil
}
