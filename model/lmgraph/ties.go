package lmgraph

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"

	"google.golang.org/protobuf/proto"

	"github.com/spiral-rl/spiral/model/onnx"
	"github.com/spiral-rl/spiral/model/onnx/onnxpb"
)

// Tie records that parameter Copy holds exactly the data of parameter Of
// (Transposed: of its transpose; both are then 2-D).
type Tie struct {
	Copy, Of   string
	Transposed bool
}

// tieSamples is how many elements are compared before reading two
// candidate tensors whole.
const tieSamples = 64

// FindTies returns the tied LM heads among the parameters names (float32
// initializers of m): a parameter that is not an embedding table but a
// bit-exact copy of one (or of its transpose), as exporters store a head
// tied to the embedding. The table is the kept side (Of). Only embedding
// tables count, and a tensor whose values are all equal (a fresh norm
// gain of ones, a zero bias) is never taken for a copy, since equal
// initial values do not make two parameters one. Candidates are screened
// by shape and by a few sampled elements before both are read in full.
func FindTies(m *onnx.Model, names []string) ([]Tie, error) {
	g := m.Graph()
	byName := map[string]*onnxpb.TensorProto{}
	for _, t := range g.GetInitializer() {
		byName[t.GetName()] = t
	}
	gathered := map[string]bool{}
	for _, n := range g.GetNode() {
		if n.GetOpType() == "Gather" && len(n.GetInput()) > 0 {
			gathered[n.GetInput()[0]] = true
		}
	}
	var ties []Tie
	copied := map[string]bool{}
	for _, a := range names {
		ta := byName[a]
		if !gathered[a] || ta == nil || onnx.TensorDType(ta) != onnx.Float32 {
			continue
		}
		if c, err := constant(m, ta); err != nil || c {
			if err != nil {
				return nil, err
			}
			continue
		}
		for _, b := range names {
			tb := byName[b]
			if b == a || gathered[b] || copied[b] || tb == nil || onnx.TensorDType(tb) != onnx.Float32 {
				continue
			}
			for _, transposed := range []bool{false, true} {
				if !tieShapes(ta.GetDims(), tb.GetDims(), transposed) {
					continue
				}
				same, err := sameData(m, ta, tb, transposed)
				if err != nil {
					return nil, err
				}
				if same {
					ties = append(ties, Tie{Copy: b, Of: a, Transposed: transposed})
					copied[b] = true
					break
				}
			}
		}
	}
	return ties, nil
}

// constant reports whether every element of t is the same value.
func constant(m *onnx.Model, t *onnxpb.TensorProto) (bool, error) {
	n := onnx.NumElements(t.GetDims())
	if n < 2 {
		return true, nil
	}
	first, err := m.Float32At(t, 0)
	if err != nil {
		return false, err
	}
	step := max(1, n/tieSamples)
	for k := step; k < n; k += step {
		v, err := m.Float32At(t, k)
		if err != nil {
			return false, err
		}
		if math.Float32bits(v) != math.Float32bits(first) {
			return false, nil
		}
	}
	buf := make([]float32, min(n, readChunk))
	for lo := int64(0); lo < n; lo += readChunk {
		part := buf[:min(readChunk, n-lo)]
		if err := m.ReadFloat32sAt(t, lo, part); err != nil {
			return false, err
		}
		for _, v := range part {
			if math.Float32bits(v) != math.Float32bits(first) {
				return false, nil
			}
		}
	}
	return true, nil
}

// readChunk bounds the elements read at once when comparing tensors in
// full (a Qwen3 embedding is 622 MB in float32).
const readChunk = 1 << 20

func tieShapes(a, b []int64, transposed bool) bool {
	if !transposed {
		return slices.Equal(a, b)
	}
	return len(a) == 2 && len(b) == 2 && a[0] == b[1] && a[1] == b[0] && a[0] != a[1]
}

// sameData compares a and b (or a and b's transpose) bit for bit.
func sameData(m *onnx.Model, a, b *onnxpb.TensorProto, transposed bool) (bool, error) {
	n := onnx.NumElements(a.GetDims())
	if n == 0 {
		return false, nil
	}
	var rows, cols int64 = 1, n
	if transposed {
		rows, cols = a.GetDims()[0], a.GetDims()[1]
	}
	// index in b of a's element k.
	at := func(k int64) int64 {
		if !transposed {
			return k
		}
		i, j := k/cols, k%cols
		return j*rows + i
	}
	step := max(1, n/tieSamples)
	for k := int64(0); k < n; k += step {
		x, err := m.Float32At(a, k)
		if err != nil {
			return false, err
		}
		y, err := m.Float32At(b, at(k))
		if err != nil {
			return false, err
		}
		if math.Float32bits(x) != math.Float32bits(y) {
			return false, nil
		}
	}
	if !transposed {
		da, db := make([]float32, min(n, readChunk)), make([]float32, min(n, readChunk))
		for lo := int64(0); lo < n; lo += readChunk {
			k := min(readChunk, n-lo)
			if err := m.ReadFloat32sAt(a, lo, da[:k]); err != nil {
				return false, err
			}
			if err := m.ReadFloat32sAt(b, lo, db[:k]); err != nil {
				return false, err
			}
			for i := range k {
				if math.Float32bits(da[i]) != math.Float32bits(db[i]) {
					return false, nil
				}
			}
		}
		return true, nil
	}
	// b is [cols, rows]: a block of a's rows i0..i1 is, in b, the columns
	// i0..i1 of every row.
	rb, closeB, err := m.OpenData(b)
	if err != nil {
		return false, err
	}
	defer closeB()
	block := max(1, readChunk/cols)
	da := make([]float32, block*cols)
	raw := make([]byte, 4*block)
	for i0 := int64(0); i0 < rows; i0 += block {
		i1 := min(rows, i0+block)
		w := i1 - i0
		if err := m.ReadFloat32sAt(a, i0*cols, da[:w*cols]); err != nil {
			return false, err
		}
		for j := range cols {
			if _, err := rb.ReadAt(raw[:4*w], 4*(j*rows+i0)); err != nil {
				return false, fmt.Errorf("lmgraph: read %q: %w", b.GetName(), err)
			}
			for i := range w {
				if binary.LittleEndian.Uint32(raw[4*i:]) != math.Float32bits(da[i*cols+j]) {
					return false, nil
				}
			}
		}
	}
	return true, nil
}

// tiePrefix starts the names of the Transpose nodes ApplyTies adds.
const tiePrefix = "spiral/tie/"

// ApplyTies rewrites g so that every node input reading a tie's Copy reads
// its Of instead (through one added Transpose node when Transposed), and
// removes the copies' initializers (and their graph inputs, in old-IR
// graphs that list initializers as inputs). The added nodes come first,
// so the graph stays topologically sorted.
func ApplyTies(g *onnxpb.GraphProto, ties []Tie) error {
	if len(ties) == 0 {
		return nil
	}
	rename := map[string]string{}
	var pre []*onnxpb.NodeProto
	for _, t := range ties {
		to := t.Of
		if t.Transposed {
			to = tiePrefix + t.Copy
			pre = append(pre, &onnxpb.NodeProto{Name: proto.String(to), OpType: proto.String("Transpose"),
				Input: []string{t.Of}, Output: []string{to},
				Attribute: []*onnxpb.AttributeProto{{Name: proto.String("perm"), Type: onnxpb.AttributeProto_INTS.Enum(), Ints: []int64{1, 0}}}})
		}
		rename[t.Copy] = to
	}
	for _, n := range g.GetNode() {
		for i, in := range n.GetInput() {
			if to, ok := rename[in]; ok {
				n.Input[i] = to
			}
		}
	}
	for _, o := range g.GetOutput() {
		if _, ok := rename[o.GetName()]; ok {
			return fmt.Errorf("lmgraph: tied copy %q is a graph output", o.GetName())
		}
	}
	g.Node = append(pre, g.Node...)
	g.Initializer = slices.DeleteFunc(g.Initializer, func(t *onnxpb.TensorProto) bool { _, ok := rename[t.GetName()]; return ok })
	g.Input = slices.DeleteFunc(g.Input, func(v *onnxpb.ValueInfoProto) bool { _, ok := rename[v.GetName()]; return ok })
	return nil
}
