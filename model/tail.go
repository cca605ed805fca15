package model

import (
	"fmt"

	"github.com/spiral-rl/spiral/model/blocks"
	"github.com/spiral-rl/spiral/model/ortc"
)

// tailLive is how many tensors as wide as a tail's widest weight dim (the
// MLP's intermediate size) one tail call holds per position, forward and
// backward: gate, up, the activation and product, and their gradients.
const tailLive = 10

// tailChunk is one call's share of a tail's positions: rows p0..p1 of
// the input flattened to [positions, width].
type tailChunk struct{ p0, p1 int }

// tailChunks splits the n positions of a tail's input into chunks of at
// most MLPBytes of temporaries (at least one position each).
func (e *Executor) tailChunks(p *blocks.Piece, n int) []tailChunk {
	width := int64(1)
	for _, w := range p.Weights {
		for _, d := range e.tensors[w].Shape {
			width = max(width, d)
		}
	}
	per := int(max(1, e.opt.MLPBytes/(4*tailLive*width)))
	var out []tailChunk
	for p0 := 0; p0 < n; p0 += per {
		out = append(out, tailChunk{p0, min(n, p0+per)})
	}
	return out
}

// chunkView returns positions c of v (rank >= 2, positions the product of
// all dims but the last) as a tensor [1, ..., 1, c.p1-c.p0, width] over
// v's memory: a view in device memory, or a slice of host memory.
func (e *Executor) chunkView(v *ortc.Value, c tailChunk) (*ortc.Value, error) {
	shape := v.Shape()
	width := int(shape[len(shape)-1])
	return e.rowsOf(v, c.p0*width, unitLead(len(shape), c.p1-c.p0, width))
}

// tailInput returns the tail's input and its number of positions.
func tailInput(st *stepState, p *blocks.Piece) (*ortc.Value, int, error) {
	x, ok := st.lookup(p.Inputs[0])
	if !ok {
		return nil, 0, fmt.Errorf("value %q is not computed", p.Inputs[0])
	}
	shape := x.Shape()
	if len(shape) < 2 || x.Elem() != ortc.Float32 {
		return nil, 0, fmt.Errorf("the MLP's input %q is %v, want a float tensor [..., positions, width]", p.Inputs[0], shape)
	}
	return x, x.Len() / int(shape[len(shape)-1]), nil
}

// tailForward runs tail p on chunks of positions and keeps its output.
// On the host the chunks' outputs are assembled in memory ONNX Runtime
// allocates, like forward does; on the device layer each chunk reads a
// view of the input and writes a view of the output, in device memory
// (the residual stream's width: the tail ends with the residual add).
func (e *Executor) tailForward(st *stepState, p *blocks.Piece, dst values) error {
	x, n, err := tailInput(st, p)
	if err != nil {
		return err
	}
	in := make([]*ortc.Value, 1, 1+len(p.Weights))
	for _, w := range p.Weights {
		in = append(in, e.weight(w))
	}
	var y *ortc.Value
	if e.dev != nil {
		if y, err = e.devGrads.mem.alloc.AllocLike(x); err != nil {
			return fmt.Errorf("MLP output: %w", err)
		}
	}
	for _, c := range e.tailChunks(p, n) {
		if err = e.tailChunkForward(p, x, c, in, &y); err != nil {
			break
		}
	}
	if err != nil {
		y.Release()
		return err
	}
	e.keep(st, p.Outputs[0], y, dst)
	return nil
}

// tailChunkForward runs chunk c of tail p into *y: its rows of a
// preallocated output in device memory, or (on the host) of one
// allocated for the tail's whole output on the first chunk. in holds the
// weights after the input's slot.
func (e *Executor) tailChunkForward(p *blocks.Piece, x *ortc.Value, c tailChunk, in []*ortc.Value, y **ortc.Value) error {
	var err error
	if in[0], err = e.chunkView(x, c); err != nil {
		return err
	}
	defer in[0].Release()
	out := []*ortc.Value{nil}
	if *y != nil && (*y).Placed() {
		if out[0], err = e.chunkView(*y, c); err != nil {
			return err
		}
	}
	defer func() { out[0].Release() }() // the run's output, or the view
	if err := e.runKeeping(p.Forward, in, out, e.placed); err != nil {
		return fmt.Errorf("MLP on positions %d..%d: %w", c.p0, c.p1, err)
	}
	if *y != nil && (*y).Placed() {
		return nil
	}
	part := out[0].Float32s()
	w := len(part) / (c.p1 - c.p0)
	if *y == nil {
		shape := append([]int64(nil), x.Shape()...)
		shape[len(shape)-1] = int64(w)
		if *y, err = ortc.Alloc[float32](e.env, shape); err != nil {
			return err
		}
	}
	copy((*y).Float32s()[c.p0*w:c.p1*w], part)
	return nil
}

// tailBackward runs tail p's backward graph on chunks of positions: the
// chunks' input gradients land in their rows of the input's gradient
// (in device memory on the device layer), the weights' gradients are
// summed over the chunks into the store.
func (e *Executor) tailBackward(st *stepState, p *blocks.Piece) error {
	if p.Backward == "" {
		return nil
	}
	g, ok := st.gradVal[p.Outputs[0]]
	if !ok {
		return nil // no gradient reached the layer's output: all of the tail's are zero
	}
	x, n, err := tailInput(st, p)
	if err != nil {
		return err
	}
	var gx *ortc.Value
	if len(p.GradInputs) > 0 {
		if e.dev != nil {
			gx, err = e.devGrads.mem.alloc.AllocLike(x)
		} else {
			gx, err = ortc.NewTensor(e.env, x.Shape(), e.scratch("tail-grad", x.Len()))
		}
		if err != nil {
			return fmt.Errorf("the MLP's input gradient: %w", err)
		}
	}
	in := make([]*ortc.Value, 1, 2+len(p.Weights))
	for _, w := range p.Weights {
		in = append(in, e.weight(w))
	}
	in = append(in, nil)
	for _, c := range e.tailChunks(p, n) {
		if err := e.tailChunkBackward(st, p, x, g, c, in, gx); err != nil {
			gx.Release()
			return err
		}
	}
	if gx == nil {
		return nil
	}
	return e.addGrad(st, p.Inputs[0], gx)
}

// tailChunkBackward runs chunk c of tail p's backward, writing its rows
// of gx (when set); in holds the weights' views between the input and
// output-gradient slots.
func (e *Executor) tailChunkBackward(st *stepState, p *blocks.Piece, x, g *ortc.Value, c tailChunk, in []*ortc.Value, gx *ortc.Value) error {
	var err error
	if in[0], err = e.chunkView(x, c); err != nil {
		return err
	}
	defer in[0].Release()
	last := len(in) - 1
	if in[last], err = e.chunkView(g, c); err != nil {
		return err
	}
	defer in[last].Release()
	out := make([]*ortc.Value, len(p.GradInputs)+len(p.GradWeights))
	if gx != nil {
		if out[0], err = e.chunkView(gx, c); err != nil {
			return err
		}
	}
	if err := e.runKeeping(p.Backward, in, out, e.gradsKept(p)); err != nil {
		return fmt.Errorf("MLP backward on positions %d..%d: %w", c.p0, c.p1, err)
	}
	defer func() {
		for _, v := range out {
			v.Release()
		}
	}()
	for k, j := range p.GradWeights {
		if err := e.addParamGrad(st, p.Weights[j], out[len(p.GradInputs)+k]); err != nil {
			return err
		}
	}
	return nil
}
