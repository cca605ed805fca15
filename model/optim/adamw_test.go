package optim

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/spiral-rl/spiral/model/params"
	"github.com/stretchr/testify/require"
)

func store(t testing.TB, ts ...params.Tensor) *params.Store {
	t.Helper()
	s, err := params.FromTensors(ts)
	require.NoError(t, err)
	return s
}

// TestAdamWHandComputed checks two updates against arithmetic done by hand
// (30-digit decimals). Hyper-parameters: lr 0.1, beta1 0.9, beta2 0.999,
// eps 1e-8, weight decay 0.01. Tensor "w" [1,1] is decayed, "b" [1] is
// 1-D and so excluded by default. Both start at 1 with gradients 0.5, then
// -0.25.
//
// Step 1 (t=1): m = 0.1*0.5 = 0.05; v = 0.001*0.25 = 0.00025;
// mhat = 0.05/(1-0.9) = 0.5; vhat = 0.00025/(1-0.999) = 0.25; sqrt = 0.5;
// u = 0.5/(0.5+1e-8) = 0.99999998000000040.
// w: 1 - 0.1*(u + 0.01*1) = 0.89900000200000000.
// b: 1 - 0.1*u            = 0.90000000200000000.
//
// Step 2 (t=2): m = 0.9*0.05 + 0.1*(-0.25) = 0.02;
// v = 0.999*0.00025 + 0.001*0.0625 = 0.00031225;
// mhat = 0.02/(1-0.81) = 0.10526315789473684; vhat = 0.00031225/(1-0.998001)
// = 0.15620310155077539; sqrt = 0.39522538070166418;
// u = 0.10526315789473684/(0.39522538070166418+1e-8) = 0.26633703292153797.
// w: 0.899000002 - 0.1*(u + 0.01*0.899000002) = 0.87146729870584616.
// b: 0.900000002 - 0.1*u                      = 0.87336629870784620.
func TestAdamWHandComputed(t *testing.T) {
	w := store(t,
		params.Tensor{Name: "w", Shape: []int64{1, 1}, Data: []float32{1}},
		params.Tensor{Name: "b", Shape: []int64{1}, Data: []float32{1}})
	g := w.NewGrads()
	cfg := DefaultConfig()
	cfg.WeightDecay = 0.01
	o, err := NewAdamW(cfg, w)
	require.NoError(t, err)
	require.True(t, o.Decayed(0))
	require.False(t, o.Decayed(1))

	steps := []struct {
		name       string
		grad       float32
		wantW      float64
		wantB      float64
		wantM      float64
		wantV      float64
		wantStepsN int64
	}{
		{"step 1", 0.5, 0.899000002, 0.900000002, 0.05, 0.00025, 1},
		{"step 2", -0.25, 0.87146729870584616, 0.87336629870784620, 0.02, 0.00031225, 2},
	}
	for _, st := range steps {
		g.Flat()[0], g.Flat()[1] = st.grad, st.grad
		require.NoError(t, o.Step(w, g, 0.1))
		// float32 storage: relative tolerance of a few float32 ulps.
		require.InEpsilon(t, st.wantW, float64(w.Flat()[0]), 3e-7, st.name)
		require.InEpsilon(t, st.wantB, float64(w.Flat()[1]), 3e-7, st.name)
		require.InEpsilon(t, st.wantM, float64(o.ExpAvg().Flat()[0]), 3e-7, st.name)
		require.InEpsilon(t, st.wantV, float64(o.ExpAvgSq().Flat()[1]), 3e-7, st.name)
		require.Equal(t, st.wantStepsN, o.Steps())
	}
}

type golden struct {
	Config struct {
		Beta1       float64 `json:"beta1"`
		Beta2       float64 `json:"beta2"`
		Eps         float64 `json:"eps"`
		WeightDecay float64 `json:"weight_decay"`
	} `json:"config"`
	Shapes           map[string][]int64     `json:"shapes"`
	LRs              []float64              `json:"lrs"`
	Init             map[string][]float32   `json:"init"`
	Grads            []map[string][]float32 `json:"grads"`
	WeightsAfterStep []map[string][]float32 `json:"weights_after_step"`
	ExpAvg           map[string][]float32   `json:"exp_avg"`
	ExpAvgSq         map[string][]float32   `json:"exp_avg_sq"`
}

// TestAdamWAgainstNumpyReference replays testdata/adamw_golden.json, made by
// testdata/adamw_ref.py: an independent numpy float32 transcription of
// torch.optim.AdamW (torch is not installed here). Six steps over four
// tensors (two of rank <= 1, so undecayed) with gradients spanning six
// orders of magnitude, including exact zeros.
//
// Learning rates up to 0.1 make each update a visible fraction of the
// weight, so that a wrong bias correction or decay term shows.
//
// Tolerance: we compute each element in float64 and round once; the
// reference rounds after every float32 operation (about 8 of them), so the
// two may differ by a few float32 ulps per step. Weights: 8 ulps of the
// larger magnitude (six steps of that); moments: 1e-6 relative plus 1e-30.
func TestAdamWAgainstNumpyReference(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("testdata", "adamw_golden.json"))
	require.NoError(t, err)
	var gd golden
	require.NoError(t, json.Unmarshal(raw, &gd))
	names := []string{"layer.w", "layer.b", "attn.q", "norm.g"}
	var ts []params.Tensor
	for _, n := range names {
		ts = append(ts, params.Tensor{Name: n, Shape: gd.Shapes[n], Data: gd.Init[n]})
	}
	w := store(t, ts...)
	g := w.NewGrads()
	cfg := Config{Beta1: gd.Config.Beta1, Beta2: gd.Config.Beta2, Eps: gd.Config.Eps, WeightDecay: gd.Config.WeightDecay}
	o, err := NewAdamW(cfg, w)
	require.NoError(t, err)
	closeTo := func(want, got []float32, ulps float64, what string) {
		t.Helper()
		require.Len(t, got, len(want), what)
		for i := range want {
			tol := ulps * ulp32(max(math.Abs(float64(want[i])), math.Abs(float64(got[i]))))
			if ulps == 0 {
				tol = 1e-6*math.Abs(float64(want[i])) + 1e-30
			}
			if math.Abs(float64(want[i]-got[i])) > tol {
				t.Fatalf("%s[%d]: got %v, numpy reference %v (tolerance %g)", what, i, got[i], want[i], tol)
			}
		}
	}
	for step, lr := range gd.LRs {
		for _, n := range names {
			gt, _ := g.Get(n)
			copy(gt.Data, gd.Grads[step][n])
		}
		require.NoError(t, o.Step(w, g, lr))
		for _, n := range names {
			wt, _ := w.Get(n)
			closeTo(gd.WeightsAfterStep[step][n], wt.Data, 8, fmt.Sprintf("%s after step %d", n, step+1))
		}
	}
	for _, n := range names {
		m, _ := o.ExpAvg().Get(n)
		v, _ := o.ExpAvgSq().Get(n)
		closeTo(gd.ExpAvg[n], m.Data, 0, n+".exp_avg")
		closeTo(gd.ExpAvgSq[n], v.Data, 0, n+".exp_avg_sq")
	}
}

// ulp32 returns the spacing of float32 values at magnitude x.
func ulp32(x float64) float64 {
	f := float32(x)
	return float64(math.Nextafter32(f, float32(math.Inf(1))) - f)
}

// naiveStep is a plain single-threaded float64 loop over tensors, the
// reference for the chunked parallel kernel.
func naiveStep(w, g, m, v *params.Store, cfg Config, t int64, lr float64) {
	bc1 := 1 - math.Pow(cfg.Beta1, float64(t))
	bc2 := 1 - math.Pow(cfg.Beta2, float64(t))
	for i := range w.Len() {
		wt, gt, mt, vt := w.At(i), g.At(i), m.At(i), v.At(i)
		wd := 0.0
		if cfg.Decays(wt.Name, wt.Shape) {
			wd = cfg.WeightDecay
		}
		for k := range wt.Data {
			gk := float64(gt.Data[k])
			mt.Data[k] = float32(cfg.Beta1*float64(mt.Data[k]) + (1-cfg.Beta1)*gk)
			vt.Data[k] = float32(cfg.Beta2*float64(vt.Data[k]) + (1-cfg.Beta2)*gk*gk)
			mh := float64(mt.Data[k]) / bc1
			vh := float64(vt.Data[k]) / bc2
			wk := float64(wt.Data[k])
			wt.Data[k] = float32(wk - lr*(mh/(math.Sqrt(vh)+cfg.Eps)+wd*wk))
		}
	}
}

func TestAdamWParallelMatchesLoop(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	specs := []params.Spec{
		{Name: "big", Shape: []int64{3, chunkSize + 17}}, // several chunks
		{Name: "bias", Shape: []int64{chunkSize + 5}},
		{Name: "skip.w", Shape: []int64{7, 3}},
		{Name: "small", Shape: []int64{2, 2}},
	}
	w, err := params.NewStore(specs)
	require.NoError(t, err)
	for i := range w.Flat() {
		w.Flat()[i] = float32(rng.NormFloat64())
	}
	ref := w.NewGrads()
	require.NoError(t, ref.CopyFrom(w))
	refM, refV := w.NewGrads(), w.NewGrads()
	g := w.NewGrads()
	cfg := DefaultConfig()
	cfg.NoDecay = []string{"skip.*"}
	o, err := NewAdamW(cfg, w)
	require.NoError(t, err)
	for step := range int64(3) {
		for i := range g.Flat() {
			g.Flat()[i] = float32(rng.NormFloat64() * 1e-3)
		}
		lr := 1e-3 * float64(step+1)
		require.NoError(t, o.Step(w, g, lr))
		naiveStep(ref, g, refM, refV, cfg, step+1, lr)
	}
	require.Equal(t, ref.Flat(), w.Flat(), "same arithmetic, so bit-identical")
	require.Equal(t, refM.Flat(), o.ExpAvg().Flat())
	require.Equal(t, refV.Flat(), o.ExpAvgSq().Flat())
}

func TestDecayExclusion(t *testing.T) {
	cases := []struct {
		name  string
		cfg   func(*Config)
		shape []int64
		want  bool
	}{
		{"matrix decayed", nil, []int64{4, 4}, true},
		{"bias excluded", nil, []int64{4}, false},
		{"scalar excluded", nil, []int64{}, false},
		{"bias included with DecayOneDim", func(c *Config) { c.DecayOneDim = true }, []int64{4}, true},
		{"pattern excluded", func(c *Config) { c.NoDecay = []string{"model.embed_*"} }, []int64{4, 4}, false},
		{"zero decay", func(c *Config) { c.WeightDecay = 0 }, []int64{4, 4}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			if tc.cfg != nil {
				tc.cfg(&cfg)
			}
			require.Equal(t, tc.want, cfg.Decays("model.embed_tokens.weight", tc.shape))
		})
	}
}

func TestConfigValidate(t *testing.T) {
	require.NoError(t, DefaultConfig().Validate())
	bad := Config{Beta1: 1, Beta2: -0.1, Eps: 0, WeightDecay: -1, NoDecay: []string{"["}}
	err := bad.Validate()
	require.Error(t, err)
	for _, want := range []string{"beta1", "beta2", "eps", "weight decay", "pattern"} {
		require.Contains(t, err.Error(), want)
	}
	_, err = NewAdamW(bad, store(t))
	require.Error(t, err)
}

func TestStepErrors(t *testing.T) {
	w := store(t, params.Tensor{Name: "a", Shape: []int64{2}, Data: []float32{1, 2}})
	o, err := NewAdamW(DefaultConfig(), w)
	require.NoError(t, err)
	other := store(t, params.Tensor{Name: "a", Shape: []int64{3}, Data: []float32{1, 2, 3}})
	require.ErrorContains(t, o.Step(w, other, 1e-3), "optim: gradients")
	require.ErrorContains(t, o.Step(other, w, 1e-3), "optim: weights")
	require.ErrorContains(t, o.Step(w, w.NewGrads(), math.NaN()), "learning rate")
	require.Equal(t, int64(0), o.Steps(), "failed steps do not count")
	require.Error(t, o.SetSteps(-1))
}

// BenchmarkAdamWStep measures one update of 10M parameters (a 2560x3906
// matrix and a 1-D tensor); params/s is the figure to compare.
func BenchmarkAdamWStep(b *testing.B) {
	w, err := params.NewStore([]params.Spec{
		{Name: "w", Shape: []int64{2560, 3906}},
		{Name: "g", Shape: []int64{2560}},
	})
	require.NoError(b, err)
	rng := rand.New(rand.NewPCG(2, 3))
	g := w.NewGrads()
	for i := range g.Flat() {
		g.Flat()[i] = float32(rng.NormFloat64())
		w.Flat()[i] = float32(rng.NormFloat64())
	}
	o, err := NewAdamW(DefaultConfig(), w)
	require.NoError(b, err)
	b.SetBytes(int64(w.NumParams()) * 4 * 4) // w, g, m, v touched per element
	for b.Loop() {
		if err := o.Step(w, g, 1e-6); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(w.NumParams())*float64(b.N)/b.Elapsed().Seconds(), "params/s")
}

// TestStepRefusesNonFiniteUpdate: a learning rate whose update overflows
// float32 (1e39 with unit gradients) is refused with ErrNonFiniteUpdate and
// changes nothing: weights, moments and the step count stay as they were;
// a sane rate then applies.
func TestStepRefusesNonFiniteUpdate(t *testing.T) {
	w, err := params.NewStore([]params.Spec{{Name: "a", Shape: []int64{3, 5}}})
	require.NoError(t, err)
	for i := range w.Flat() {
		w.Flat()[i] = float32(i) - 7
	}
	g := w.NewGrads()
	for i := range g.Flat() {
		g.Flat()[i] = 1
	}
	o, err := NewAdamW(DefaultConfig(), w)
	require.NoError(t, err)
	before := append([]float32(nil), w.Flat()...)
	err = o.Step(w, g, 1e39)
	require.ErrorIs(t, err, ErrNonFiniteUpdate)
	require.Equal(t, before, w.Flat())
	require.Zero(t, o.Steps())
	for _, x := range append(o.ExpAvg().Flat(), o.ExpAvgSq().Flat()...) {
		require.Zero(t, x)
	}
	require.NoError(t, o.Step(w, g, 1e-3))
	require.EqualValues(t, 1, o.Steps())
}

// TestStepRefusesNaNWeight: a weight that is NaN already, with finite
// gradients (a zero one: an embedding row no batch reads), would stay
// NaN, so Step refuses the update with ErrNonFiniteUpdate and changes
// nothing, as the device optimizer does (its stats graph flags a NaN
// weight); wherever the NaN is among the values, decayed or not.
func TestStepRefusesNaNWeight(t *testing.T) {
	nan := float32(math.NaN())
	for name, tc := range map[string]struct {
		shape []int64
		data  []float32
	}{
		"first of a matrix": {[]int64{2, 2}, []float32{nan, 1, 2, 3}},
		"last of a matrix":  {[]int64{2, 2}, []float32{-1, 1, 2, nan}},
		"after a larger":    {[]int64{3}, []float32{5, nan, 1}},
	} {
		t.Run(name, func(t *testing.T) {
			w := store(t, params.Tensor{Name: "a", Shape: tc.shape, Data: append([]float32(nil), tc.data...)})
			o, err := NewAdamW(DefaultConfig(), w)
			require.NoError(t, err)
			g := w.NewGrads()
			for i := range g.Flat() {
				g.Flat()[i] = 0.5
			}
			require.ErrorIs(t, o.Step(w, g, 1e-3), ErrNonFiniteUpdate)
			require.Zero(t, o.Steps())
			for _, x := range append(o.ExpAvg().Flat(), o.ExpAvgSq().Flat()...) {
				require.Zero(t, x)
			}
			_, safe := o.Next(1e-3, maxAbs(w.Flat()), maxAbs(g.Flat()))
			require.False(t, safe, "the bound cannot vouch for a NaN weight")
		})
	}
}

// TestStepRefusesNonFiniteGradient: a gradient holding NaN or an
// infinity, in a decayed tensor or not, is refused with
// ErrNonFiniteUpdate and changes nothing (weights, moments, step count),
// as the package doc says; the doc said such gradients were not checked.
func TestStepRefusesNonFiniteGradient(t *testing.T) {
	for _, tc := range []struct {
		name string
		at   int // index into the flat gradient: 0..3 the matrix, 4..5 the vector
		bad  float32
	}{
		{"NaN in a decayed matrix", 2, float32(math.NaN())},
		{"+Inf in a decayed matrix", 0, float32(math.Inf(1))},
		{"-Inf in an undecayed vector", 5, float32(math.Inf(-1))},
		{"NaN in an undecayed vector", 4, float32(math.NaN())},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := store(t,
				params.Tensor{Name: "w", Shape: []int64{2, 2}, Data: []float32{1, -2, 3, -4}},
				params.Tensor{Name: "b", Shape: []int64{2}, Data: []float32{0.5, -0.5}})
			o, err := NewAdamW(DefaultConfig(), w)
			require.NoError(t, err)
			g := w.NewGrads()
			for i := range g.Flat() {
				g.Flat()[i] = 0.25
			}
			// A first, finite update, so that the moments hold values
			// the refused one must leave as they are.
			require.NoError(t, o.Step(w, g, 1e-2))
			weights := append([]float32(nil), w.Flat()...)
			m := append([]float32(nil), o.ExpAvg().Flat()...)
			v := append([]float32(nil), o.ExpAvgSq().Flat()...)
			g.Flat()[tc.at] = tc.bad
			require.ErrorIs(t, o.Step(w, g, 1e-2), ErrNonFiniteUpdate)
			require.Equal(t, weights, w.Flat())
			require.Equal(t, m, o.ExpAvg().Flat())
			require.Equal(t, v, o.ExpAvgSq().Flat())
			require.EqualValues(t, 1, o.Steps())
		})
	}
}
