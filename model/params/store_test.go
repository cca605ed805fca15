package params

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

func testStore(t testing.TB, rng *rand.Rand) *Store {
	t.Helper()
	s, err := NewStore([]Spec{
		{Name: "embed.weight", Shape: []int64{5, 3}},
		{Name: "norm.weight", Shape: []int64{3}},
		{Name: "scalar", Shape: []int64{}},
		{Name: "empty", Shape: []int64{0, 4}},
		{Name: "proj.weight", Shape: []int64{3, 2, 2}},
	})
	require.NoError(t, err)
	for i := range s.Flat() {
		s.Flat()[i] = float32(rng.NormFloat64())
	}
	return s
}

func TestNewStoreLayout(t *testing.T) {
	s := testStore(t, rand.New(rand.NewPCG(1, 2)))
	require.Equal(t, 5, s.Len())
	require.Equal(t, 15+3+1+0+12, s.NumParams())
	require.Equal(t, []string{"embed.weight", "norm.weight", "scalar", "empty", "proj.weight"}, s.Names())
	off := 0
	for i := range s.Len() {
		tn := s.At(i)
		n, err := NumElements(tn.Shape)
		require.NoError(t, err)
		require.Len(t, tn.Data, n, tn.Name)
		require.Equal(t, len(tn.Data), cap(tn.Data), "capacity capped so append cannot overwrite the neighbour")
		if n > 0 {
			require.Same(t, &s.Flat()[off], &tn.Data[0], "tensor %q is a view into Flat", tn.Name)
		}
		off += n
	}
	p, ok := s.Get("norm.weight")
	require.True(t, ok)
	p.Data[1] = 42
	q, _ := s.Get("norm.weight")
	require.Equal(t, float32(42), q.Data[1], "Get returns a view, not a copy")
	_, ok = s.Get("nope")
	require.False(t, ok)
}

func TestNewStoreErrors(t *testing.T) {
	cases := []struct {
		name  string
		specs []Spec
	}{
		{"duplicate", []Spec{{"a", []int64{1}}, {"a", []int64{2}}}},
		{"empty name", []Spec{{"", []int64{1}}}},
		{"negative dim", []Spec{{"a", []int64{2, -1}}}},
		{"overflow", []Spec{{"a", []int64{math.MaxInt64 / 2, 4}}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewStore(tc.specs)
			require.Error(t, err)
			require.Contains(t, err.Error(), "params:")
		})
	}
}

func TestFromTensorsCopies(t *testing.T) {
	src := []float32{1, 2, 3, 4}
	s, err := FromTensors([]Tensor{{Name: "w", Shape: []int64{2, 2}, Data: src}})
	require.NoError(t, err)
	src[0] = 99
	w, _ := s.Get("w")
	require.Equal(t, []float32{1, 2, 3, 4}, w.Data)
	_, err = FromTensors([]Tensor{{Name: "w", Shape: []int64{2, 2}, Data: src[:3]}})
	require.ErrorContains(t, err, "3 values")
}

// naiveNorm is the reference: a plain loop over tensors in float64.
func naiveNorm(s *Store) float64 {
	var sum float64
	for i := range s.Len() {
		for _, v := range s.At(i).Data {
			sum += float64(v) * float64(v)
		}
	}
	return math.Sqrt(sum)
}

func TestNormAgainstLoop(t *testing.T) {
	for seed := range uint64(10) {
		s := testStore(t, rand.New(rand.NewPCG(seed, 7)))
		require.InDelta(t, naiveNorm(s), s.Norm(), 1e-12*naiveNorm(s), "seed %d", seed)
	}
	// 3-4-5 triangle: the norm of {3, 4} spread over two tensors is 5.
	s, err := FromTensors([]Tensor{{Name: "a", Shape: []int64{1}, Data: []float32{3}}, {Name: "b", Shape: []int64{}, Data: []float32{4}}})
	require.NoError(t, err)
	require.Equal(t, 5.0, s.Norm())
}

func TestClipByNorm(t *testing.T) {
	// Values {3, 4}: norm 5 (3-4-5 triangle).
	cases := []struct {
		name     string
		maxNorm  float64
		wantPre  float64
		wantPost float64 // expected norm after clipping
	}{
		{"clipped to 1", 1, 5, 1 * 5 / (5 + ClipEpsilon)},
		{"clipped to 2.5", 2.5, 5, 2.5 * 5 / (5 + ClipEpsilon)},
		{"below threshold untouched", 10, 5, 5},
		{"exactly at threshold untouched", 5, 5, 5},
		{"disabled", 0, 5, 5},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, err := FromTensors([]Tensor{{Name: "a", Shape: []int64{1}, Data: []float32{3}}, {Name: "b", Shape: []int64{1}, Data: []float32{4}}})
			require.NoError(t, err)
			pre := s.ClipByNorm(tc.maxNorm)
			require.Equal(t, tc.wantPre, pre)
			require.InDelta(t, tc.wantPost, s.Norm(), 1e-6)
			// Direction is preserved: the ratio stays 3:4.
			require.InDelta(t, 0.75, float64(s.Flat()[0]/s.Flat()[1]), 1e-6)
		})
	}
	t.Run("non-finite left unchanged", func(t *testing.T) {
		s, err := FromTensors([]Tensor{{Name: "a", Shape: []int64{2}, Data: []float32{float32(math.Inf(1)), 1}}})
		require.NoError(t, err)
		pre := s.ClipByNorm(1)
		require.True(t, math.IsInf(pre, 1))
		require.Equal(t, float32(1), s.Flat()[1])
	})
}

func TestAddScaledAndLayout(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	a := testStore(t, rng)
	b := testStore(t, rng)
	want := make([]float32, a.NumParams())
	for i := range want {
		want[i] = a.Flat()[i] + 0.25*b.Flat()[i]
	}
	require.NoError(t, a.AddScaled(b, 0.25))
	require.Equal(t, want, a.Flat())

	g := a.NewGrads()
	require.NoError(t, a.SameLayout(g))
	require.Equal(t, 0.0, g.Norm())
	require.NoError(t, g.CopyFrom(a))
	require.Equal(t, a.Flat(), g.Flat())
	g.Zero()
	require.Equal(t, 0.0, g.Norm())

	other, err := NewStore([]Spec{{"embed.weight", []int64{3, 5}}, {"x", []int64{1}}})
	require.NoError(t, err)
	err = a.AddScaled(other, 1)
	require.Error(t, err)
	require.Contains(t, err.Error(), "5 tensors vs 2")
	require.Contains(t, err.Error(), `"embed.weight": shape [5 3] vs [3 5]`)
	require.Contains(t, err.Error(), `name "norm.weight" vs "x"`)
}

// TestTouchCountsChanges: every Store method that writes values records
// a change (Version moves), and readers do not.
func TestTouchCountsChanges(t *testing.T) {
	s, err := NewStore([]Spec{{Name: "a", Shape: []int64{2}}})
	require.NoError(t, err)
	o := s.NewGrads()
	writers := map[string]func(){
		"Zero":       s.Zero,
		"Touch":      s.Touch,
		"Scale":      func() { s.Scale(2) },
		"CopyFrom":   func() { require.NoError(t, s.CopyFrom(o)) },
		"AddScaled":  func() { require.NoError(t, s.AddScaled(o, 1)) },
		"ClipByNorm": func() { copy(s.Flat(), []float32{3, 4}); s.ClipByNorm(1) },
	}
	for name, write := range writers {
		v := s.Version()
		write()
		require.Greater(t, s.Version(), v, name)
	}
	v := s.Version()
	s.Norm()
	s.SumSquares()
	require.Equal(t, v, s.Version(), "readers")
}
