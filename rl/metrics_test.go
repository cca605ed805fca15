package rl

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"math/big"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/spiral-rl/spiral/rollout"
)

func TestPearson(t *testing.T) {
	for _, tc := range []struct {
		name  string
		pairs [][2]float64
		want  float64
		ok    bool
	}{
		// Means 0.5 and 0.125; sxy = 0.5, sxx = 1, syy = 0.5625, so
		// r = 0.5 / sqrt(0.5625) = 2/3.
		{"hand computed", [][2]float64{{1, 0.5}, {0, -0.5}, {1, 0.25}, {0, 0.25}}, 2.0 / 3, true},
		{"affine", [][2]float64{{0, -3}, {1, 1}, {1, 1}, {0, -3}}, 1, true},
		{"reversed", [][2]float64{{0, 0.7}, {1, -0.1}, {0.5, 0.3}}, -1, true},
		{"one pair", [][2]float64{{1, 0.5}}, 0, false},
		{"constant reward", [][2]float64{{1, 0.5}, {1, -0.5}}, 0, false},
		{"constant advantage", [][2]float64{{1, 0.5}, {0, 0.5}}, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := pearson(tc.pairs)
			require.Equal(t, tc.ok, ok)
			require.InDelta(t, tc.want, got, 1e-12)
		})
	}
}

// TestGRPOSearchCredit: the trainer's GRPO rollout gives each of the
// group's traces the std-scaled group advantage (written out here); each
// trained GRPO trace adds its own reward and
// its advantage; the advantage is an increasing affine function of the
// reward within a group, so over one informative group the correlation is
// exactly 1; a step with no trained search trace has none.
func TestGRPOSearchCredit(t *testing.T) {
	cfg, parts := hardTrainer(t, 0)
	cfg.Algo, cfg.GroupSize = AlgoGRPO, 8
	tr, err := NewTrainer(cfg, parts)
	require.NoError(t, err)
	var m Metrics
	examples, informative, err := tr.rolloutGRPO(context.Background(), hardProblems, 5, &m, nil)
	require.NoError(t, err)
	require.Equal(t, 1, informative)
	// The group's advantages, written out: (r - mean) / (sample std +
	// 1e-6) over the G = 8 traces' rewards (GRPO scales by the std; an
	// unscaled or population-std advantage has the same correlation).
	require.Len(t, examples, 8)
	rewards := make([]float64, len(examples))
	mean := 0.0
	for i, e := range examples {
		require.Equal(t, KindGRPO, e.Kind)
		rewards[i] = fakeReward(rollout.Trace{Text: trainerFakePrompter{}.Text(e.Completion)})
		mean += rewards[i] / 8
	}
	ss := 0.0
	for _, r := range rewards {
		ss += (r - mean) * (r - mean)
	}
	std := math.Sqrt(ss / 7)
	require.Positive(t, std, "the group is informative")
	for i, e := range examples {
		require.InDelta(t, (rewards[i]-mean)/(std+1e-6), e.Advantage, 1e-6, "trace %d", i)
	}
	// One (own reward, advantage) pair per trained trace, in order.
	require.Len(t, m.credit, len(examples))
	for i, e := range examples {
		reward := fakeReward(rollout.Trace{Text: trainerFakePrompter{}.Text(e.Completion)})
		require.Equal(t, reward, m.credit[i][0], "trace %d", i)
		require.InDelta(t, e.Advantage, m.credit[i][1], 1e-6, "trace %d", i)
	}
	m.finishRollout()
	require.NotNil(t, m.SearchCredit)
	require.InDelta(t, 1, *m.SearchCredit, 1e-12)

	var none Metrics
	none.finishRollout()
	require.Nil(t, none.SearchCredit)
	require.NotContains(t, string(mustJSON(t, none)), "search_credit")
	m.SearchCredit = new(float64)
	require.Contains(t, string(mustJSON(t, m)), `"search_credit":0`, "a correlation of 0 is written")
}

func mustJSON(t *testing.T, m Metrics) []byte {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, m.WriteJSONL(&b))
	return b.Bytes()
}

// TestMetricsLineNoUpdate: a step that trained nothing says so instead
// of printing its unmeasured loss, entropy and gradient norm as zeros.
func TestMetricsLineNoUpdate(t *testing.T) {
	for _, tc := range []struct {
		name      string
		m         Metrics
		want, not []string
	}{
		{"no update", Metrics{Step: 2, ProblemsDrawn: 8, NoUpdate: true},
			[]string{"informative 0/8", "no update (no informative problem)"}, []string{"loss", "entropy", "|g|"}},
		{"trained", Metrics{Step: 2, ProblemsDrawn: 8, ProblemsInformative: 1, Examples: 4, Entropy: 0.5},
			[]string{"informative 1/8", "entropy 0.500", "|g|"}, []string{"no update", "cut"}},
		// Traces cut at --max-new-tokens are counted on the line.
		{"no update, traces cut", Metrics{Step: 2, ProblemsDrawn: 4, NoUpdate: true,
			Search: PhaseMetrics{Traces: 16, Truncated: 1}, Aggregate: PhaseMetrics{Traces: 16, Truncated: 0.5}},
			[]string{"informative 0/4  cut 24/32  no update"}, nil},
		{"trained, traces cut", Metrics{Step: 2, ProblemsDrawn: 8, ProblemsInformative: 1, Examples: 4,
			Search: PhaseMetrics{Traces: 8, Truncated: 0.25}},
			[]string{"informative 1/8  cut 2/8  loss"}, nil},
		// Traces an engine cut before a padding id reached no token
		// limit: counted apart.
		{"trained, traces cut before a padding id", Metrics{Step: 2, ProblemsDrawn: 8, ProblemsInformative: 1, Examples: 4,
			Search: PhaseMetrics{Traces: 8, Truncated: 0.25, PaddingCut: 0.125}, Aggregate: PhaseMetrics{Traces: 8, PaddingCut: 0.125}},
			[]string{"informative 1/8  cut 2/16  cut before a padding id 2/16  loss"}, nil},
		{"trained, only padding cuts", Metrics{Step: 2, ProblemsDrawn: 8, ProblemsInformative: 1, Examples: 4,
			Search: PhaseMetrics{Traces: 8, PaddingCut: 0.125}},
			[]string{"informative 1/8  cut before a padding id 1/8  loss"}, []string{"  cut 1/8"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := tc.m.Line()
			for _, s := range tc.want {
				require.Contains(t, l, s)
			}
			for _, s := range tc.not {
				require.NotContains(t, l, s)
			}
		})
	}
}

// TestMetricsEngineLogProbDiffNotFinite: the engine comparison of a step
// whose learner log-probabilities came out NaN (the forward pass of a
// step whose update is skipped for its non-finite gradient) is written
// as null, as the loss is, and read back as NaN, so that the run goes on;
// a finite one is written as it is, and none (the local engine) is left
// out.
func TestMetricsEngineLogProbDiffNotFinite(t *testing.T) {
	for _, tc := range []struct {
		name      string
		diff, max float64
		want, not []string
	}{
		{"NaN", math.NaN(), math.NaN(), []string{`"engine_logprob_diff":null`, `"engine_logprob_max_diff":null`}, nil},
		{"infinite", math.Inf(1), math.Inf(1), []string{`"engine_logprob_diff":null`, `"engine_logprob_max_diff":null`}, nil},
		{"finite", 0.25, 1.5, []string{`"engine_logprob_diff":0.25`, `"engine_logprob_max_diff":1.5`}, nil},
		{"local engine", 0, 0, nil, []string{"engine_logprob"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := Metrics{Step: 3, Examples: 2, EngineLogProbDiff: tc.diff, EngineLogProbMaxDiff: tc.max, EngineLogProbTokens: 4}
			if tc.diff == 0 {
				m.EngineLogProbTokens = 0
			}
			line := mustJSON(t, m)
			for _, s := range tc.want {
				require.Contains(t, string(line), s)
			}
			for _, s := range tc.not {
				require.NotContains(t, string(line), s)
			}
			back, err := decodeMetrics(line)
			require.NoError(t, err)
			for _, f := range [][2]float64{{tc.diff, back.EngineLogProbDiff}, {tc.max, back.EngineLogProbMaxDiff}} {
				if math.IsNaN(f[0]) || math.IsInf(f[0], 0) {
					require.True(t, math.IsNaN(f[1]), "a non-finite figure reads back as NaN")
				} else {
					require.Equal(t, f[0], f[1])
				}
			}
		})
	}
}

// TestPhaseMetricsCuts: a trace cut at the token limit counts as
// truncated; one an engine cut before a padding id it sampled
// (rollout.FinishPadding), where no limit was reached, counts apart, and
// a phase without such traces writes no padding_cut, as runs before it.
func TestPhaseMetricsCuts(t *testing.T) {
	var p PhaseMetrics
	for _, f := range []rollout.FinishReason{rollout.FinishStop, rollout.FinishLength, rollout.FinishPadding, rollout.FinishStop} {
		p.observe(0, rollout.Trace{Completion: rollout.Completion{Finish: f}}, rollout.Verdict{Explicit: true})
	}
	p.finish()
	require.Equal(t, 0.25, p.Truncated)
	require.Equal(t, 0.25, p.PaddingCut)
	b, err := json.Marshal(PhaseMetrics{Traces: 4, Truncated: 0.5})
	require.NoError(t, err)
	require.NotContains(t, string(b), "padding")
}

// TestAdvStd: the advantages' standard deviation (over the step's
// trained samples, dividing by their count) was E[a^2] - mean^2, which
// cancels: equal advantages that are not dyadic (0.1, -1/3) gave about
// 1e-9 where they vary not at all, and advantages of a large common
// offset a spread lost to rounding. It is accumulated as Welford's sum
// of squared deviations: 0 for equal advantages, and for every draw
// within 1e-9 of the exact figure (a big.Float reference of 256 bits)
// plus a few roundings of the largest advantage, which any float64 mean
// is off by.
func TestAdvStd(t *testing.T) {
	// reference is the population standard deviation of as, exactly up
	// to big.Float's 256 bits.
	reference := func(as []float64) float64 {
		const prec = 256
		sum := new(big.Float).SetPrec(prec)
		for _, a := range as {
			sum.Add(sum, new(big.Float).SetPrec(prec).SetFloat64(a))
		}
		n := new(big.Float).SetPrec(prec).SetInt64(int64(len(as)))
		mean := new(big.Float).SetPrec(prec).Quo(sum, n)
		ss := new(big.Float).SetPrec(prec)
		for _, a := range as {
			d := new(big.Float).SetPrec(prec).SetFloat64(a)
			d.Sub(d, mean)
			ss.Add(ss, d.Mul(d, d))
		}
		v, _ := ss.Quo(ss, n).Sqrt(ss).Float64()
		return v
	}
	std := func(as []float64) float64 {
		var m Metrics
		for _, a := range as {
			m.observeAdvantage(a)
		}
		m.finishRollout()
		return m.AdvStd
	}
	repeat := func(a float64, n int) []float64 {
		as := make([]float64, n)
		for i := range as {
			as[i] = a
		}
		return as
	}
	for _, tc := range []struct {
		name string
		as   []float64
	}{
		{"0.1 seven times", repeat(0.1, 7)},
		{"-1/3 five times", repeat(-1.0/3, 5)},
		{"0.7 a thousand times", repeat(0.7, 1000)},
		{"one advantage", []float64{0.3}},
	} {
		require.Zero(t, std(tc.as), tc.name)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 500 {
		n := 2 + rng.IntN(300)
		offset := []float64{0, 0.1, -1.0 / 3, 1e3, -1e6}[i%5]
		scale := []float64{1, 1e-3, 1e-6, 0.5}[i%4]
		as := make([]float64, n)
		largest := 0.0
		for j := range as {
			as[j] = offset + scale*rng.NormFloat64()
			largest = max(largest, math.Abs(as[j]))
		}
		// A mean in float64 is off by some rounding of the largest
		// advantage, whatever the algorithm; past that, 1e-9 of the
		// figure.
		want := reference(as)
		tol := 1e-9*want + 64*0x1p-52*largest
		require.InDelta(t, want, std(as), tol, "draw %d: %d advantages, offset %v, scale %v", i, n, offset, scale)
	}
}
