package main

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/spiral-rl/spiral/data"
	"github.com/spiral-rl/spiral/rollout"
)

func TestSteps(t *testing.T) {
	g := []float32{3, -4, 0, 0}
	got, err := steps(g, rand.New(rand.NewPCG(1, 2)))
	require.NoError(t, err)
	require.Len(t, got, 7)
	// Along -g/|g| (|g| = 5) at the stated norms.
	for i, size := range []float64{0.01, 0.03, 0.1} {
		require.Equal(t, "gradient", got[i].name)
		require.InDelta(t, size, norm(got[i].delta), 1e-7)
		require.InDeltaSlice(t, []float64{-0.6 * size, 0.8 * size, 0, 0}, f64(got[i].delta), 1e-7)
	}
	// AdamW's first step: -lr*sign(g), nothing where g is 0.
	for i, lr := range []float64{3e-5, 1e-4, 3e-4} {
		s := got[3+i]
		require.Equal(t, "adam", s.name)
		require.InDeltaSlice(t, []float64{-lr, lr, 0, 0}, f64(s.delta), 1e-10)
	}
	r := got[6]
	require.Equal(t, "random", r.name)
	require.InDelta(t, 0.1, norm(r.delta), 1e-7)
}

func TestCosineAndMean(t *testing.T) {
	for _, tc := range []struct {
		a, b []float32
		want float64
	}{
		{[]float32{1, 0}, []float32{0, 2}, 0},
		{[]float32{1, 1}, []float32{2, 2}, 1},
		{[]float32{1, 0}, []float32{-3, 0}, -1},
		{[]float32{1, 0}, []float32{1, 1}, 1 / math.Sqrt2},
	} {
		require.InDelta(t, tc.want, cosine(tc.a, tc.b), 1e-12, "%v . %v", tc.a, tc.b)
	}
	require.InDelta(t, 0.5, mean([]float64{0, 0.25, 1.25}), 1e-12)
}

func TestIntermediate(t *testing.T) {
	ps := []data.Problem{{ID: "a"}, {ID: "b"}, {ID: "c"}, {ID: "d"}, {ID: "e"}}
	acc := []float64{0, 0.15, 0.9, 0.5, 0.85}
	ids := func(ps []data.Problem) []string {
		var out []string
		for _, p := range ps {
			out = append(out, p.ID)
		}
		return out
	}
	require.Equal(t, []string{"b", "d", "e"}, ids(intermediate(ps, acc, 0.15, 0.85, 5)))
	require.Equal(t, []string{"b", "d"}, ids(intermediate(ps, acc, 0.15, 0.85, 2)))
	require.Empty(t, intermediate(ps, acc, 0.95, 1, 5))
}

func f64(x []float32) []float64 {
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = float64(v)
	}
	return out
}

// TestGradientPromptErrorNamesTheProblem: a search template that fails on
// a problem's text is refused naming the problem, its id and row, as
// spiral's own commands name it (it said only "data: search template:
// template: ...", leaving the problem to guess).
func TestGradientPromptErrorNamesTheProblem(t *testing.T) {
	tmpl, err := data.ParseTemplates(`{{if eq .Problem "boom"}}{{template "absent"}}{{end}}{{.Problem}}`, `{{.Problem}}{{range .Candidates}}{{.Text}}{{end}}`)
	require.NoError(t, err)
	p := probe{prompter: rollout.ChatPrompter{Templates: tmpl}}
	_, err = p.gradient(context.Background(), []data.Problem{{ID: "p7", Source: "synth:train:7", Problem: "boom"}}, 2, 1)
	require.EqualError(t, err, `search prompt of problem "p7" (synth:train:7): data: search template: template: search:1:36: executing "search" at <{{template "absent"}}>: template "absent" not defined`)
}

// TestZeroGradientRefused: a gradient of 0 (a batch without an
// informative problem, or -group 1, whose advantages are all 0) is
// refused: -g/|g| set every weight to NaN, and the first accuracy after
// the step failed as "the model's logits are not finite".
func TestZeroGradientRefused(t *testing.T) {
	_, err := steps([]float32{0, 0, 0}, rand.New(rand.NewPCG(1, 2)))
	require.EqualError(t, err, "the GRPO gradient of batch A is 0: no problem of it had both right and wrong traces (raise -group or -batch, or use a model that solves some of its problems but not all)")
}

// TestValidate: flags that measure nothing are refused, naming the flag
// (-batch 0 ran to a table of NaN cosines and then failed on NaN
// weights; -samples 0 divided by 0).
func TestValidate(t *testing.T) {
	ok := options{batch: 64, group: 24, held: 16, screen: 96, samples: 192, inBatch: 8}
	require.NoError(t, ok.validate(0))
	for _, tc := range []struct {
		edit func(o *options)
		args int
		want string
	}{
		{func(o *options) { o.batch = 0 }, 0, "-batch 0: want at least 1"},
		{func(o *options) { o.group = 1 }, 0, "-group 1: want at least 2"},
		{func(o *options) { o.held = 0 }, 0, "-held 0: want at least 1"},
		{func(o *options) { o.screen = -1 }, 0, "-screen -1: want at least 1"},
		{func(o *options) { o.samples = 0 }, 0, "-samples 0: want at least 1"},
		{func(o *options) { o.inBatch = 0 }, 0, "-in-batch 0: want at least 1"},
		{func(o *options) { o.threads = -2 }, 0, "-threads -2: want at least 0"},
		{func(o *options) {}, 2, "2 unexpected arguments: the tool takes flags only (see -help)"},
	} {
		o := ok
		tc.edit(&o)
		require.EqualError(t, o.validate(tc.args), tc.want)
	}
}
