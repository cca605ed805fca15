package params

import (
	"errors"
	"fmt"
	"math"
	"strings"
)

// Tensor is one named float32 tensor of a Store. Data has exactly
// NumElements(Shape) elements and is a view into the Store's contiguous
// buffer: write through it, never replace or append to it.
type Tensor struct {
	Name  string
	Shape []int64
	Data  []float32
}

// Spec names a tensor and its shape; NewStore allocates storage for it.
type Spec struct {
	Name  string
	Shape []int64
}

// Store is an ordered set of named float32 tensors backed by one contiguous
// buffer. The zero Store is empty and usable. A Store is not safe for
// concurrent mutation; concurrent reads are fine.
type Store struct {
	flat    []float32
	tensors []Tensor
	index   map[string]int
	// version counts the changes recorded by Touch.
	version uint64
}

// NumElements returns the product of shape's dimensions (1 for a scalar,
// shape []). It returns an error for a negative dimension or when the
// product overflows int.
func NumElements(shape []int64) (int, error) {
	n := int64(1)
	for _, d := range shape {
		if d < 0 {
			return 0, fmt.Errorf("params: negative dimension in shape %v", shape)
		}
		if d != 0 && n > math.MaxInt64/d {
			return 0, fmt.Errorf("params: shape %v has too many elements", shape)
		}
		n *= d
	}
	if int64(int(n)) != n {
		return 0, fmt.Errorf("params: shape %v has too many elements", shape)
	}
	return int(n), nil
}

// NewStore allocates a zero-filled Store with the given tensors in the given
// order. Names must be non-empty and unique; shapes must be non-negative.
func NewStore(specs []Spec) (*Store, error) {
	total := 0
	sizes := make([]int, len(specs))
	seen := make(map[string]int, len(specs))
	for i, sp := range specs {
		if sp.Name == "" {
			return nil, fmt.Errorf("params: tensor %d has an empty name", i)
		}
		if j, dup := seen[sp.Name]; dup {
			return nil, fmt.Errorf("params: duplicate tensor name %q (positions %d and %d)", sp.Name, j, i)
		}
		seen[sp.Name] = i
		n, err := NumElements(sp.Shape)
		if err != nil {
			return nil, fmt.Errorf("params: tensor %q: %w", sp.Name, err)
		}
		sizes[i] = n
		if total > math.MaxInt-n {
			return nil, errors.New("params: store too large")
		}
		total += n
	}
	s := &Store{
		flat:    make([]float32, total),
		tensors: make([]Tensor, len(specs)),
		index:   seen,
	}
	off := 0
	for i, sp := range specs {
		n := sizes[i]
		s.tensors[i] = Tensor{
			Name:  sp.Name,
			Shape: cloneShape(sp.Shape),
			Data:  s.flat[off : off+n : off+n],
		}
		off += n
	}
	return s, nil
}

// FromTensors builds a Store holding copies of the given tensors, in order.
// Each tensor's Data must have NumElements(Shape) elements. The inputs are
// not retained.
func FromTensors(ts []Tensor) (*Store, error) {
	specs := make([]Spec, len(ts))
	for i, t := range ts {
		specs[i] = Spec{Name: t.Name, Shape: t.Shape}
	}
	s, err := NewStore(specs)
	if err != nil {
		return nil, err
	}
	for i, t := range ts {
		if len(t.Data) != len(s.tensors[i].Data) {
			return nil, fmt.Errorf("params: tensor %q: %d values for shape %v (want %d)",
				t.Name, len(t.Data), t.Shape, len(s.tensors[i].Data))
		}
		copy(s.tensors[i].Data, t.Data)
	}
	return s, nil
}

// Specs returns the names and shapes of s in order (copies).
func (s *Store) Specs() []Spec {
	out := make([]Spec, len(s.tensors))
	for i, t := range s.tensors {
		out[i] = Spec{Name: t.Name, Shape: cloneShape(t.Shape)}
	}
	return out
}

// NewGrads returns a zero-filled Store with the same names, order and
// shapes as s, to hold gradients (or optimiser moments).
func (s *Store) NewGrads() *Store {
	g, err := NewStore(s.Specs())
	if err != nil {
		// s was validated at creation, so its specs are valid.
		panic("params: NewGrads: " + err.Error())
	}
	return g
}

// Len returns the number of tensors.
func (s *Store) Len() int { return len(s.tensors) }

// NumParams returns the total number of float32 values.
func (s *Store) NumParams() int { return len(s.flat) }

// Names returns the tensor names in store order (a new slice).
func (s *Store) Names() []string {
	out := make([]string, len(s.tensors))
	for i, t := range s.tensors {
		out[i] = t.Name
	}
	return out
}

// Get returns the tensor called name, or nil and false when there is none.
// The returned pointer stays valid for the life of s; its Data aliases s.
func (s *Store) Get(name string) (*Tensor, bool) {
	i, ok := s.index[name]
	if !ok {
		return nil, false
	}
	return &s.tensors[i], true
}

// At returns the i-th tensor in store order; it panics when i is out of
// range, like a slice index.
func (s *Store) At(i int) *Tensor { return &s.tensors[i] }

// Flat returns the contiguous buffer holding every tensor, in store order.
// It aliases s.
func (s *Store) Flat() []float32 { return s.flat }

// SameLayout returns nil when o has the same tensor names, order and shapes
// as s, and otherwise an error listing every difference.
func (s *Store) SameLayout(o *Store) error {
	var errs []string
	if len(s.tensors) != len(o.tensors) {
		errs = append(errs, fmt.Sprintf("%d tensors vs %d", len(s.tensors), len(o.tensors)))
	}
	for i := range min(len(s.tensors), len(o.tensors)) {
		a, b := &s.tensors[i], &o.tensors[i]
		if a.Name != b.Name {
			errs = append(errs, fmt.Sprintf("tensor %d: name %q vs %q", i, a.Name, b.Name))
			continue
		}
		if !equalShape(a.Shape, b.Shape) {
			errs = append(errs, fmt.Sprintf("tensor %q: shape %v vs %v", a.Name, a.Shape, b.Shape))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("params: layouts differ: %s", strings.Join(errs, "; "))
	}
	return nil
}

// cloneShape copies a shape; the copy is never nil, so a scalar's shape
// stays [] (not null) in JSON.
func cloneShape(s []int64) []int64 {
	out := make([]int64, len(s))
	copy(out, s)
	return out
}

func equalShape(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// Zero sets every value of s to 0 (for gradients: ZeroGrads).
func (s *Store) Zero() {
	clear(s.flat)
	s.Touch()
}

// Touch records that s's values changed. Store's own writers call it;
// writers through Flat or a Tensor's Data must too (the optimiser's
// step, a checkpoint's load), so that copies of s elsewhere (device
// memory) know to refresh.
func (s *Store) Touch() { s.version++ }

// Version returns the number of changes recorded so far (Touch).
func (s *Store) Version() uint64 { return s.version }

// CopyFrom copies every value of src into s; the layouts must match.
func (s *Store) CopyFrom(src *Store) error {
	if err := s.SameLayout(src); err != nil {
		return err
	}
	copy(s.flat, src.flat)
	s.Touch()
	return nil
}

// SumSquares returns the sum of the squares of all values, accumulated in
// float64.
func (s *Store) SumSquares() float64 { return sumSquares(s.flat) }

func sumSquares(x []float32) float64 {
	// Four partial sums: fewer dependent adds, and no worse rounding.
	var a, b, c, d float64
	i := 0
	for ; i+4 <= len(x); i += 4 {
		x0, x1, x2, x3 := float64(x[i]), float64(x[i+1]), float64(x[i+2]), float64(x[i+3])
		a += x0 * x0
		b += x1 * x1
		c += x2 * x2
		d += x3 * x3
	}
	for ; i < len(x); i++ {
		v := float64(x[i])
		a += v * v
	}
	return (a + b) + (c + d)
}

// Norm returns the global L2 norm sqrt(sum over all tensors of sum x^2),
// accumulated in float64. It is +Inf or NaN when a value is.
func (s *Store) Norm() float64 { return math.Sqrt(s.SumSquares()) }

// ClipByNorm scales every value by maxNorm/(norm+ClipEpsilon) when the global
// norm exceeds maxNorm, and returns the norm before clipping. maxNorm <= 0
// disables clipping (the norm is still returned). When the norm is not
// finite, s is left unchanged and the non-finite norm is returned so that
// the caller can skip the step.
//
// This is torch.nn.utils.clip_grad_norm_ (PyTorch) with its epsilon 1e-6,
// except that PyTorch multiplies by min(1, coef) always while this scales
// only when norm > maxNorm.
func (s *Store) ClipByNorm(maxNorm float64) float64 {
	norm := s.Norm()
	if maxNorm <= 0 || math.IsNaN(norm) || math.IsInf(norm, 0) || norm <= maxNorm {
		return norm
	}
	s.Scale(float32(maxNorm / (norm + ClipEpsilon)))
	return norm
}

// ClipEpsilon is added to the norm in ClipByNorm's scale factor, as in
// torch.nn.utils.clip_grad_norm_, so a clipped norm lands just below maxNorm.
const ClipEpsilon = 1e-6

// Scale multiplies every value of s by a.
func (s *Store) Scale(a float32) {
	for i := range s.flat {
		s.flat[i] *= a
	}
	s.Touch()
}

// AddScaled adds alpha*src to s element-wise (s += alpha*src); the layouts
// must match. (Training does not accumulate through it: the executor adds
// each micro-batch's gradients, scaled by its share of the loss tokens,
// straight into the gradient store; see rl.Gradients.)
func (s *Store) AddScaled(src *Store, alpha float32) error {
	if err := s.SameLayout(src); err != nil {
		return err
	}
	dst, x := s.flat, src.flat[:len(s.flat)]
	for i := range dst {
		dst[i] += alpha * x[i]
	}
	s.Touch()
	return nil
}
