package model

import (
	"fmt"
	"slices"

	"google.golang.org/protobuf/proto"

	"github.com/spiral-rl/spiral/model/blocks"
	"github.com/spiral-rl/spiral/model/onnx"
	"github.com/spiral-rl/spiral/model/ortc"
)

// Packed rows (TrainBatch.Segments) hold one shared prompt and several
// completions of it: segment 0 is the prompt (and every position of a
// row that is not packed), segments 1, 2, ... the branches, each with its
// own positions (position_ids restart where the prompt ends), so that the
// prompt is computed once for all of them. A position of a branch must
// not see another branch: whenever a piece computes an attention mask
// (the score-shaped input of an attention core), every entry where a
// query and a key lie in different branches is set to the mask's own
// "not seen" value, the one it holds where the first position would see
// the second (causally hidden in every row). Where the mask is additive
// or boolean, of either sense, the result is the mask the row would have
// had with the other branches absent.

// segmentMasks returns the values that attention cores read as
// score-shaped inputs (the masks), or an error saying why rows cannot be
// packed on this program: a layer without an attention core (its
// attention runs whole, on a mask the executor does not see), or no
// position_ids input (positions could not restart for each branch).
func segmentMasks(prog *blocks.Program) (map[string]bool, error) {
	if !slices.Contains(prog.Inputs, PositionIDs) {
		return nil, fmt.Errorf("the model reads no %s, so the positions of a packed row's completions cannot restart after its prompt", PositionIDs)
	}
	masks := map[string]bool{}
	for j, b := range prog.Blocks {
		if b.Core == nil {
			return nil, fmt.Errorf("layer %d runs its attention whole (%s)", j, b.CoreNote)
		}
		found := false
		for i, role := range b.Core.Roles {
			if role == blocks.RoleScores {
				masks[b.Core.Inputs[i]], found = true, true
			}
		}
		if !found {
			return nil, fmt.Errorf("layer %d's attention reads no mask", j)
		}
	}
	return masks, nil
}

// PackedRows returns nil when micro-batches may hold packed rows
// (TrainBatch.Segments) on this executor, else why not.
func (e *Executor) PackedRows() error {
	return e.packErr
}

// applySegments applies st's segments to the attention masks among
// piece p's outputs out (nothing when st's batch packs no rows).
func (e *Executor) applySegments(st *stepState, p *blocks.Piece, out []*ortc.Value) error {
	if st.b.Segments == nil {
		return nil
	}
	if e.packErr != nil {
		return fmt.Errorf("model: executor: packed rows: %w", e.packErr)
	}
	for k, name := range p.Outputs {
		if !e.segmentMasks[name] {
			continue
		}
		v, err := e.maskSegments(st, out[k])
		if err != nil {
			return fmt.Errorf("model: executor: packed rows: mask %q: %w", name, err)
		}
		out[k] = v
	}
	return nil
}

// maskSegments applies st's segments to mask v [rows or 1, ..., T, T]:
// in place on the host (on a copy for each row where v is one for all);
// on the device layer by a graph; it returns the result in v's place (v
// released when it is another value).
func (e *Executor) maskSegments(st *stepState, v *ortc.Value) (*ortc.Value, error) {
	B, T := st.b.Batch, st.b.Seq
	s := v.Shape()
	if len(s) < 3 || s[len(s)-1] != int64(T) || s[len(s)-2] != int64(T) || T < 2 {
		return nil, fmt.Errorf("shape %v: want [rows, ..., %d, %d]", s, T, T)
	}
	if s[0] != int64(B) && s[0] != 1 {
		return nil, fmt.Errorf("shape %v: want a mask a row (%d rows), or one for all", s, B)
	}
	if v.Placed() {
		return e.maskSegmentsOn(st, v) // Where broadcasts a mask for all rows
	}
	switch v.Elem() {
	case ortc.Float32:
		return maskSegmentsHost(e.env, v, v.Float32s(), st.b.Segments, B, T)
	case ortc.Bool:
		return maskSegmentsHost(e.env, v, v.Bools(), st.b.Segments, B, T)
	}
	return nil, fmt.Errorf("element type %d: want float32 or bool", v.Elem())
}

// maskSegmentsHost is maskSegments for a host mask v holding m: in place,
// or, where v is one mask for all B rows, on a copy for each row, which
// it returns in v's place (v released).
func maskSegmentsHost[E float32 | bool](env *ortc.Env, v *ortc.Value, m []E, seg []int64, B, T int) (*ortc.Value, error) {
	if s := v.Shape(); s[0] != int64(B) {
		rows := make([]E, 0, B*len(m))
		for range B {
			rows = append(rows, m...)
		}
		out, err := ortc.NewTensor(env, append([]int64{int64(B)}, s[1:]...), rows)
		if err != nil {
			return nil, err
		}
		v.Release()
		v, m = out, rows
	}
	applySegmentMask(m, seg, B, len(m)/(B*T*T), T)
	return v, nil
}

// applySegmentMask sets m[b][h][q][k] to m[b][h][0][1] where segments
// q and k of row b are different branches.
func applySegmentMask[E any](m []E, seg []int64, B, per, T int) {
	for b := range B {
		runs := branchRuns(seg[b*T : (b+1)*T])
		for h := range per {
			base := (b*per + h) * T * T
			hidden := m[base+1]
			for _, rq := range runs {
				for q := rq.start; q < rq.end; q++ {
					line := m[base+q*T : base+(q+1)*T]
					for _, rk := range runs {
						if rk.id != rq.id {
							fill(line[rk.start:rk.end], hidden)
						}
					}
				}
			}
		}
	}
}

// run is a stretch of positions of one branch.
type run struct{ start, end, id int }

// branchRuns returns the stretches of equal nonzero segments of a row.
func branchRuns(seg []int64) []run {
	var runs []run
	for t, s := range seg {
		switch {
		case s == 0:
		case len(runs) > 0 && runs[len(runs)-1].end == t && runs[len(runs)-1].id == int(s):
			runs[len(runs)-1].end++
		default:
			runs = append(runs, run{t, t + 1, int(s)})
		}
	}
	return runs
}

// fill sets every element of x to v.
func fill[E any](x []E, v E) {
	for i := range x {
		x[i] = v
	}
}

// maskSegmentsOn is maskSegments for a mask in device memory: the
// segment mask graph computes the new mask there from the segments.
func (e *Executor) maskSegmentsOn(st *stepState, v *ortc.Value) (*ortc.Value, error) {
	sess, err := openOnce(e, e.devGrads.acts.segments, sliceKey{v.Elem(), len(v.Shape())}, "segment mask graph",
		func() ([]byte, error) { return segmentMaskModel(onnx.DType(v.Elem()), len(v.Shape())) },
		[]string{"mask", "segments"}, []string{"out"})
	if err != nil {
		return nil, err
	}
	seg, err := ortc.NewTensor(e.env, []int64{int64(st.b.Batch), int64(st.b.Seq)}, st.b.Segments)
	if err != nil {
		return nil, err
	}
	defer seg.Release()
	out := []*ortc.Value{nil}
	if err := e.runSessionKeeping(sess, []*ortc.Value{v, seg}, out, e.placed); err != nil {
		return nil, err
	}
	v.Release()
	return out[0], nil
}

// segmentMaskModel is out = Where(cross, mask[..., 0:1, 1:2], mask) for
// a rank-r mask of type t [B or 1, ..., T, T] and segments [B, T] (int64),
// cross[b, ..., q, k] true where segments q and k of row b are different
// branches (both nonzero): applySegmentMask as a graph.
func segmentMaskModel(t onnx.DType, r int) ([]byte, error) {
	b := onnx.NewGraphBuilder("segment_mask")
	dims := make([]onnx.Dim, r)
	for i := range dims {
		dims[i] = onnx.P(fmt.Sprintf("d%d", i))
	}
	mask := b.Input("mask", t, dims...)
	seg := b.Input("segments", onnx.Int64, onnx.P("rows"), onnx.P("T"))
	node := func(op string, in ...string) string { return b.Node(op, in) }
	q := node("Unsqueeze", seg, b.ConstInt64s(-1)) // [B, T, 1]
	k := node("Unsqueeze", seg, b.ConstInt64s(-2)) // [B, 1, T]
	zero := b.ConstInt64s(0)
	other := node("Not", node("Equal", q, k))          // different segments
	inQ := node("Not", node("Equal", q, zero))         // the query in a branch
	inK := node("Not", node("Equal", k, zero))         // the key in a branch
	cross := node("And", node("And", other, inQ), inK) // [B, T, T]
	if r > 3 {                                         // the mask's middle axes (heads)
		axes := make([]int64, r-3)
		for i := range axes {
			axes[i] = int64(i + 1)
		}
		cross = node("Unsqueeze", cross, b.ConstInt64s(axes...))
	}
	hidden := node("Slice", mask, b.ConstInt64s(0, 1), b.ConstInt64s(1, 2), b.ConstInt64s(-2, -1))
	b.NodeTo("Where", []string{cross, hidden, mask}, []string{"out"})
	out := make([]onnx.Dim, r) // the mask's, or rows of it where it has one for all
	for i := range out {
		out[i] = onnx.P(fmt.Sprintf("o%d", i))
	}
	b.Output("out", t, out...)
	return proto.Marshal(b.Model(18).Proto)
}
