package rollout

import (
	"context"
	"math"
	"math/rand/v2"
	"path/filepath"
	"sort"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/spiral-rl/spiral/model"
	"github.com/spiral-rl/spiral/model/modeltest"
	"github.com/spiral-rl/spiral/model/qwen3"
)

// hfReference is the sampling distribution of Hugging Face transformers'
// logits processors (TemperatureLogitsWarper, TopKLogitsWarper,
// TopPLogitsWarper, in generate's order) and of vLLM's sampler
// (apply_temperature, apply_top_k_top_p), written out in float64 over
// logits[:limit]:
//   - temperature divides the logits;
//   - top-k masks every score strictly below the k-th largest (so every
//     id tied with the k-th is kept);
//   - top-p sorts the surviving scores ascending (stably), takes the
//     softmax's cumulative sum and masks the positions whose cumulative
//     mass is <= 1-p, never the last (the most probable): the kept set is
//     the most probable ids up to and including the one whose mass
//     crosses p;
//   - the result is the softmax of what is left.
//
// It is written from those sources, independently of transforms.go, so
// that the two can be compared.
func hfReference(logits []float32, limit int, temperature float64, k int, p float64) []float64 {
	n := limit
	scores := make([]float64, n)
	for i := range scores {
		scores[i] = float64(logits[i]) / temperature
	}
	if k > 0 && k < n {
		sorted := append([]float64(nil), scores...)
		sort.Sort(sort.Reverse(sort.Float64Slice(sorted)))
		kth := sorted[k-1]
		for i, s := range scores {
			if s < kth {
				scores[i] = math.Inf(-1)
			}
		}
	}
	if p < 1 {
		idx := make([]int, n)
		for i := range idx {
			idx[i] = i
		}
		sort.SliceStable(idx, func(a, b int) bool { return scores[idx[a]] < scores[idx[b]] })
		probs := refSoftmax(scores)
		cum := 0.0
		remove := make([]bool, n)
		for j, i := range idx {
			cum += probs[i]
			remove[i] = cum <= 1-p && j != n-1
		}
		for i, r := range remove {
			if r {
				scores[i] = math.Inf(-1)
			}
		}
	}
	return refSoftmax(scores)
}

func refSoftmax(x []float64) []float64 {
	m := math.Inf(-1)
	for _, v := range x {
		m = math.Max(m, v)
	}
	out := make([]float64, len(x))
	sum := 0.0
	for i, v := range x {
		out[i] = math.Exp(v - m)
		sum += out[i]
	}
	for i := range out {
		out[i] /= sum
	}
	return out
}

// samplingDistribution runs one row of logits through the sampler's own
// per-token path (sampleInto) and returns the distribution it drew from
// and the token with its recorded log-probability.
func samplingDistribution(t *testing.T, cfg SamplerConfig, logits []float32, limit int, seed uint64) ([]float64, int32, float32) {
	t.Helper()
	s := &Sampler{cfg: cfg}
	r := &row{rng: rand.New(rand.NewPCG(seed, 0)), out: &Completion{}, limit: 1 << 30}
	probs, _ := s.sampleInto(r, logits, limit, nil, nil)
	require.Len(t, r.out.Tokens, 1)
	return probs, r.out.Tokens[0], r.out.PolicyLogProbs[0]
}

func keptSet(p []float64) []int {
	var ids []int
	for i, v := range p {
		if v > 0 {
			ids = append(ids, i)
		}
	}
	return ids
}

var negInf = float32(math.Inf(-1))

// semanticsCases are hand-made rows of logits whose kept set under HF's
// and vLLM's semantics is stated by hand (and checked against
// hfReference too).
var semanticsCases = []struct {
	name        string
	logits      []float32
	limit       int // 0: the whole row
	temperature float64
	k           int
	p           float64
	kept        []int
}{
	{"plain", []float32{1, 2, 3, 0}, 0, 1, 0, 1, []int{0, 1, 2, 3}},
	{"top-k 2 of distinct", []float32{1, 4, 2, 3}, 0, 1, 2, 1, []int{1, 3}},
	// HF: scores < topk(scores, k)[..., -1] are masked (strictly), vLLM:
	// logits_sort < the k-th: ids tied with the k-th largest all stay.
	{"top-k ties at the boundary kept", []float32{3, 2, 2, 2, 1}, 0, 1, 2, 1, []int{0, 1, 2, 3}},
	{"top-k ties above the boundary", []float32{5, 5, 5, 1, 0}, 0, 0.5, 2, 1, []int{0, 1, 2}},
	{"top-k all equal", []float32{0, 0, 0, 0, 0, 0}, 0, 1, 3, 1, []int{0, 1, 2, 3, 4, 5}},
	{"top-k k = vocabulary", []float32{1, 2, 3}, 0, 1, 3, 1, []int{0, 1, 2}},
	{"top-k 1 is greedy with ties", []float32{1, 7, 7, 2}, 0, 2, 1, 1, []int{1, 2}},
	// softmax of [ln 8, ln 4, ln 2, ln 2] (at float32 precision) is about
	// 0.5, 0.25, 0.125, 0.125: p below, near and above 0.75.
	{"top-p keeps the token that crosses p", []float32{2.0794415, 1.3862944, 0.6931472, 0.6931472}, 0, 1, 0, 0.6, []int{0, 1}},
	{"top-p small keeps the top one", []float32{2.0794415, 1.3862944, 0.6931472, 0.6931472}, 0, 1, 0, 0.3, []int{0}},
	{"top-p tiny keeps at least one", []float32{0, 0.5, 3}, 0, 1, 0, 1e-12, []int{2}},
	// softmax of [ln 2, 0, 0, 0] is 0.4, 0.2, 0.2, 0.2: the ids tied at
	// the cutoff are kept from the highest down, as HF's ascending sort
	// (stable) puts the lowest first in the tail it removes.
	{"top-p ties at the cutoff keep the highest ids", []float32{0.6931472, 0, 0, 0}, 0, 1, 0, 0.5, []int{0, 3}},
	{"top-p ties at the cutoff, two of three kept", []float32{0.6931472, 0, 0, 0}, 0, 1, 0, 0.7, []int{0, 2, 3}},
	{"top-p after top-k, on the renormalised mass", []float32{3, 2, 1, 0}, 0, 1, 3, 0.7, []int{0, 1}},
	// softmax 0.4, 0.3, 0.2, 0.1: top-k 2 leaves 4/7, 3/7, whose top-p
	// 0.5 is the first id alone (top-p first would keep two).
	{"top-p on the top-k mass, not the full one", []float32{-0.9162907, -1.2039728, -1.6094379, -2.3025851}, 0, 1, 2, 0.5, []int{0}},
	{"temperature before top-p", []float32{3, 2, 1, 0}, 0, 5, 0, 0.7, []int{0, 1, 2}},
	// Top-k keeps the eight tied maxima, 1/8 each exactly (HF's softmax
	// of the kept scores: exp(0) / 8), so six of them reach p = 0.75
	// exactly; renormalising probabilities already divided by the whole
	// row's sum left each 1/8 less an ulp, and a seventh was kept.
	{"top-p at an exact mass of top-k's tied maxima", []float32{2, 2, 2, 2, 2, 2, 2, 2, 0}, 0, 1, 8, 0.75, []int{2, 3, 4, 5, 6, 7}},
	{"top-p at an exact mass of top-k's tied maxima, hot", []float32{3, 1, 3, 3, 3, 2, 3, 3, 3, 3}, 0, 2, 8, 0.25, []int{8, 9}},
	{"all -inf but one", []float32{negInf, 5, negInf, negInf}, 0, 0.7, 2, 0.9, []int{1}},
	{"very large logits", []float32{3e38, 2.9e38, -3e38, 1e38}, 0, 1, 0, 1, []int{0}},
	{"very large logits, hot", []float32{3e38, 3e38, -3e38}, 0, 1e38, 0, 1, []int{0, 1, 2}},
	{"tiny temperature, tied maxima", []float32{2, 1, 2, 1.9999999}, 0, 1e-30, 0, 1, []int{0, 2}},
	{"vocabulary limit", []float32{0, 1, 2, 9, 9}, 3, 1, 0, 1, []int{0, 1, 2}},
	{"vocabulary limit then top-k ties", []float32{1, 1, 1, 9, 9}, 3, 1, 2, 1, []int{0, 1, 2}},
}

// TestSamplingDistributionMatchesHF: for each hand-made row, the
// distribution the sampler draws from has HF's and vLLM's kept set (stated
// by hand) and their renormalised probabilities (hfReference), and the
// token drawn lies in it.
func TestSamplingDistributionMatchesHF(t *testing.T) {
	for _, c := range semanticsCases {
		t.Run(c.name, func(t *testing.T) {
			limit := c.limit
			if limit == 0 {
				limit = len(c.logits)
			}
			want := hfReference(c.logits, limit, c.temperature, c.k, c.p)
			require.Equal(t, c.kept, keptSet(want), "the reference's kept set")
			cfg := SamplerConfig{Temperature: c.temperature, TopK: c.k, TopP: c.p}
			for seed := uint64(0); seed < 8; seed++ {
				got, id, _ := samplingDistribution(t, cfg, c.logits, limit, seed)
				require.Equal(t, c.kept, keptSet(got), "kept set")
				require.InDeltaSlice(t, want, got, 1e-12)
				require.Contains(t, c.kept, int(id))
			}
		})
	}
}

// TestTopPExactBoundary: with masses exact in binary (0.5, 0.25, 0.1875,
// 0.0625), a p equal to a cumulative mass keeps exactly the tokens that
// reach it (HF: cumulative-from-the-bottom <= 1-p is removed), one ulp
// more keeps the next token too.
func TestTopPExactBoundary(t *testing.T) {
	base := []float64{0.0625, 0.5, 0.1875, 0.25}
	for _, c := range []struct {
		p    float64
		kept []int
	}{
		{0.5, []int{1}},
		{math.Nextafter(0.5, 1), []int{1, 3}},
		{0.75, []int{1, 3}},
		{math.Nextafter(0.75, 1), []int{1, 2, 3}},
		{0.9375, []int{1, 2, 3}},
		{math.Nextafter(0.9375, 1), []int{0, 1, 2, 3}},
		{math.Nextafter(0.5, 0), []int{1}},
	} {
		probs := append([]float64(nil), base...)
		topP(probs, c.p, nil)
		require.Equal(t, c.kept, keptSet(probs), "p = %v", c.p)
		mass := 0.0
		for _, i := range c.kept {
			mass += base[i]
		}
		for _, i := range c.kept {
			require.Equal(t, base[i]/mass, probs[i], "p = %v id %d", c.p, i)
		}
	}
}

// chiSquareCritical is a conservative upper critical value of the
// chi-square distribution with df degrees of freedom at a tail of about
// 1e-6 (Wilson-Hilferty with z = 4.9): a correct sampler fails a seeded
// run essentially never, a wrong kept set (an id left out, or one let
// in) fails by orders of magnitude.
func chiSquareCritical(df int) float64 {
	d := float64(df)
	z := 4.9
	x := 1 - 2/(9*d) + z*math.Sqrt(2/(9*d))
	return d * x * x * x
}

// TestSamplerDrawsMatchHFDistribution draws many tokens through the
// sampler's per-token path and compares their frequencies with
// hfReference's distribution (Pearson's chi-square over the kept ids);
// an id outside the kept set is never drawn.
func TestSamplerDrawsMatchHFDistribution(t *testing.T) {
	const n = 100000
	for _, c := range []struct {
		name        string
		logits      []float32
		limit       int
		temperature float64
		k           int
		p           float64
	}{
		{"temperature only", []float32{0.3, -1, 2, 1.5, 0, -0.7, 1.1, 0.2}, 8, 0.8, 0, 1},
		{"top-k with a tie at the boundary", []float32{2, 1, 1, 1, 0.5, 0, -1, -2}, 8, 1, 2, 1},
		{"top-k and top-p", []float32{0.3, -1, 2, 1.5, 0, -0.7, 1.1, 0.2}, 8, 0.7, 5, 0.8},
		{"top-p at 0.95, vocabulary limit", []float32{0.3, -1, 2, 1.5, 0, -0.7, 1.1, 0.2, 9, 9}, 8, 1.3, 0, 0.95},
	} {
		t.Run(c.name, func(t *testing.T) {
			want := hfReference(c.logits, c.limit, c.temperature, c.k, c.p)
			s := &Sampler{cfg: SamplerConfig{Temperature: c.temperature, TopK: c.k, TopP: c.p}}
			r := &row{rng: rand.New(rand.NewPCG(7, 0)), out: &Completion{}, limit: 1 << 30}
			var probs []float64
			var order []int
			counts := make([]int, len(c.logits))
			for range n {
				probs, order = s.sampleInto(r, c.logits, c.limit, probs, order)
				counts[r.out.Tokens[len(r.out.Tokens)-1]]++
			}
			for i := len(want); i < len(c.logits); i++ {
				require.Zero(t, counts[i], "id %d is past the vocabulary limit but was drawn", i)
			}
			chi2, df := 0.0, -1
			for i, w := range want {
				if w == 0 {
					require.Zero(t, counts[i], "id %d is outside the kept set but was drawn", i)
					continue
				}
				e := n * w
				chi2 += (float64(counts[i]) - e) * (float64(counts[i]) - e) / e
				df++
			}
			if df > 0 {
				require.Less(t, chi2, chiSquareCritical(df), "counts %v, want %v", counts, want)
			}
		})
	}
}

// TestSampledLogProbIsThePolicys: whatever the sampling transforms, the
// recorded log-probability of the drawn token is log softmax(logits)[id]
// over the ids below the vocabulary limit at temperature 1
// (Completion.PolicyLogProbs: pi_old of the ratio, which the learner's
// loss graph computes the same way, autodiff.HeadLossGraph's LogSoftmax
// of the raw logits, sliced to the limit when it is below their width),
// not that of the distribution it was drawn from; with no transform the
// two agree, whatever the limit.
func TestSampledLogProbIsThePolicys(t *testing.T) {
	logits := []float32{0.3, -1, 2, 1.5, 0, -0.7, 1.1, 0.2, 4, -3}
	for _, cfg := range []SamplerConfig{
		{Temperature: 1, TopP: 1},
		{Temperature: 0.6, TopP: 1},
		{Temperature: 1.7, TopK: 3, TopP: 1},
		{Temperature: 1, TopP: 0.5},
		{Temperature: 0, TopP: 1},
	} {
		for _, limit := range []int{len(logits), 8} {
			for seed := uint64(0); seed < 20; seed++ {
				probs, id, logp := samplingDistribution(t, cfg, logits, limit, seed)
				require.InDelta(t, LogProbOf(logits[:limit], int(id)), float64(logp), 1e-6, "cfg %+v limit %d", cfg, limit)
				if cfg.Temperature == 1 && cfg.TopK == 0 && cfg.TopP == 1 {
					require.InDelta(t, math.Log(probs[id]), float64(logp), 1e-6)
				}
			}
		}
	}
}

// TestSamplerRefusesNonFiniteLogits: NaN or +Inf logits, or a row all
// -Inf, have no distribution to draw from (HF's multinomial raises on
// them). The sampler used to draw the row's last id from them and record
// a NaN log-probability; it now leaves an error on the row, in every mode
// (greedy included), and a lone -Inf logit stays legal. A logit past the
// vocabulary limit is no part of the policy: a NaN there is refused
// only when the limit takes it in.
func TestSamplerRefusesNonFiniteLogits(t *testing.T) {
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	for _, logits := range [][]float32{
		{1, nan, 2, 0},
		{nan, 1, 2, 0},
		{nan, nan, nan, nan},
		{1, inf, 2, 0},
		{negInf, negInf, negInf, negInf},
	} {
		for _, cfg := range []SamplerConfig{
			{Temperature: 1, TopP: 1},
			{Temperature: 0.7, TopP: 0.9, TopK: 2},
			{Temperature: 0, TopP: 1},
		} {
			for _, limit := range []int{4, 3} {
				s := &Sampler{cfg: cfg}
				r := &row{req: 5, rng: rand.New(rand.NewPCG(1, 0)), out: &Completion{}, limit: 10}
				s.sampleInto(r, logits, limit, nil, nil)
				require.ErrorContains(t, r.err, "request 5, generated token 0: the model's logits are not finite", "logits %v cfg %+v limit %d", logits, cfg, limit)
				require.True(t, r.done)
			}
		}
	}
	s := &Sampler{cfg: SamplerConfig{Temperature: 1, TopP: 1}}
	r := &row{rng: rand.New(rand.NewPCG(1, 0)), out: &Completion{}, limit: 10}
	s.sampleInto(r, []float32{negInf, 1, 2}, 3, nil, nil)
	require.NoError(t, r.err)
	for _, cfg := range []SamplerConfig{{Temperature: 1, TopP: 1}, {Temperature: 0.7, TopP: 0.9, TopK: 2}, {Temperature: 0, TopP: 1}} {
		past := []float32{1, 2, 3, nan}
		s := &Sampler{cfg: cfg}
		r := &row{req: 5, rng: rand.New(rand.NewPCG(1, 0)), out: &Completion{}, limit: 10}
		s.sampleInto(r, past, 4, nil, nil)
		require.ErrorContains(t, r.err, "request 5, generated token 0: the model's logits are not finite", "cfg %+v", cfg)
		r = &row{req: 5, rng: rand.New(rand.NewPCG(1, 0)), out: &Completion{}, limit: 10}
		s.sampleInto(r, past, 3, nil, nil)
		require.NoError(t, r.err, "cfg %+v", cfg)
		id := r.out.Tokens[0]
		require.Less(t, id, int32(3))
		require.InDelta(t, LogProbOf(past[:3], int(id)), float64(r.out.PolicyLogProbs[0]), 1e-6, "cfg %+v", cfg)
	}
}

// TestSamplerGenerateRefusesNaNModel: a model whose weights went NaN (a
// diverged update) makes Generate fail, naming the request, instead of
// returning completions of the last vocabulary id with NaN pi_old.
func TestSamplerGenerateRefusesNaNModel(t *testing.T) {
	rt := modeltest.Runtime(t)
	dir := t.TempDir()
	require.NoError(t, qwen3.WriteDir(dir, qwen3.Tiny(), 11))
	pol, err := model.OpenPolicy(context.Background(), rt, filepath.Join(dir, "model.onnx"), t.TempDir(), model.PolicyOptions{SamplingGraphOnly: true})
	require.NoError(t, err)
	defer pol.Close()
	w := pol.Weights.Flat()
	for i := range w {
		w[i] = float32(math.NaN())
	}
	pol.Weights.Touch()
	for _, temp := range []float64{1, 0} {
		s, err := NewSampler(pol.LM, SamplerConfig{Temperature: temp, TopP: 1, MaxNewTokens: 4, BatchSize: 2, VocabLimit: 90})
		require.NoError(t, err)
		_, _, err = s.Generate(context.Background(), samplerRequests(1), nil)
		require.ErrorContains(t, err, "request 0, generated token 0: the model's logits are not finite")
		s.Release()
	}
}

// TestSamplerReleaseAfterNaNModel: Release frees everything the sampler
// holds after a generation that failed on non-finite logits, whether
// they came from a prefill or a decode step: the failure had dropped
// the KV cache, and Release, which took a sampler without a cache for
// one holding nothing, returned early and kept its logits buffers (up
// to 64 rows x 151,936 floats, 39 MB, for Qwen3) and a decode step's
// inputs.
func TestSamplerReleaseAfterNaNModel(t *testing.T) {
	rt := modeltest.Runtime(t)
	dir := t.TempDir()
	require.NoError(t, qwen3.WriteDir(dir, qwen3.Tiny(), 11))
	pol, err := model.OpenPolicy(context.Background(), rt, filepath.Join(dir, "model.onnx"), t.TempDir(), model.PolicyOptions{})
	require.NoError(t, err)
	defer pol.Close()
	w := pol.Weights.Flat()
	saved := append([]float32(nil), w...)
	poison := func() {
		for i := range w {
			w[i] = float32(math.NaN())
		}
		pol.Weights.Touch()
	}
	for _, tc := range []struct {
		name string
		// decode: the weights go NaN after the first tokens are sampled
		// from the prompts' logits, so that a decode step fails.
		decode bool
		want   string
	}{
		{"prefill", false, "generated token 0: the model's logits are not finite"},
		{"decode", true, "generated token 1: the model's logits are not finite"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			copy(w, saved)
			pol.Weights.Touch()
			s, err := NewSampler(pol.LM, SamplerConfig{Temperature: 1, TopP: 1, MaxNewTokens: 4, BatchSize: len(samplerPrompts)})
			require.NoError(t, err)
			if tc.decode {
				s.retireWith = func(s *Sampler, active []*row) ([]*row, error) {
					poison()
					return s.retire(active)
				}
			} else {
				poison()
			}
			_, _, err = s.Generate(context.Background(), samplerRequests(1), nil)
			require.ErrorContains(t, err, tc.want)
			require.Nil(t, s.cache, "the failure drops the poisoned cache")
			require.NotNil(t, s.logits)
			s.Release()
			for name, held := range map[string]int{"logits": cap(s.logits), "callLogits": cap(s.callLogits), "tokens": cap(s.tokens), "real": cap(s.real)} {
				require.Zero(t, held, "%s still held", name)
			}
			require.Zero(t, s.CacheBytes())
		})
	}
}

// TestSamplerRecoversFromNaNModel: a generation that fails on non-finite
// logits has written non-finite keys and values into the KV cache the
// sampler keeps; once the weights are finite again, the next generation
// on the same sampler gives what it gave before, though its rows are
// shorter than the failed one's and the sampling graph (the host's
// without a decode graph, and the device-resident one) attends over
// the whole capacity, the unfilled slots under the mask (0 x NaN is
// NaN).
func TestSamplerRecoversFromNaNModel(t *testing.T) {
	rt := modeltest.Runtime(t)
	dir := t.TempDir()
	require.NoError(t, qwen3.WriteDir(dir, qwen3.Tiny(), 11))
	long := make([]Request, len(samplerPrompts))
	for i := range long {
		long[i].Prompt = make([]int32, 30)
		for j := range long[i].Prompt {
			long[i].Prompt[j] = int32(7*i + j)
		}
	}
	for _, tc := range []struct {
		name string
		opts model.PolicyOptions
	}{
		{"sampling graph", model.PolicyOptions{SamplingGraphOnly: true}},
		{"decode graph", model.PolicyOptions{}},
		{"resident", model.PolicyOptions{Resident: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pol, err := model.OpenPolicy(context.Background(), rt, filepath.Join(dir, "model.onnx"), t.TempDir(), tc.opts)
			require.NoError(t, err)
			defer pol.Close()
			s, err := NewSampler(pol.LM, SamplerConfig{Temperature: 1, TopP: 1, MaxNewTokens: 4, BatchSize: len(samplerPrompts)})
			require.NoError(t, err)
			defer s.Release()
			want, _, err := s.Generate(context.Background(), samplerRequests(1), nil)
			require.NoError(t, err)
			w := pol.Weights.Flat()
			saved := append([]float32(nil), w...)
			for i := range w {
				w[i] = float32(math.NaN())
			}
			pol.Weights.Touch()
			_, _, err = s.Generate(context.Background(), long, nil)
			require.ErrorContains(t, err, "the model's logits are not finite")
			copy(w, saved)
			pol.Weights.Touch()
			got, _, err := s.Generate(context.Background(), samplerRequests(1), nil)
			require.NoError(t, err, "the failed generation's keys and values were left in the cache")
			require.Equal(t, want, got)
		})
	}
}

// TestSampleIntoStopAndLength: a sampled stop id ends the row (kept as
// its last token, FinishStop), also when it is the limit's last token;
// otherwise the row ends with FinishLength after exactly its limit of
// tokens. Logits that leave one id (top-k 1) make the draws certain.
func TestSampleIntoStopAndLength(t *testing.T) {
	s := &Sampler{cfg: SamplerConfig{Temperature: 1, TopK: 1, TopP: 1, StopIDs: []int32{3, 4}}}
	rowFor := func(limit int) *row {
		return &row{rng: rand.New(rand.NewPCG(1, 0)), out: &Completion{}, limit: limit}
	}
	pick := func(id int) []float32 {
		l := []float32{0, 0, 0, 0, 0, 0}
		l[id] = 5
		return l
	}
	run := func(r *row, ids ...int) {
		for _, id := range ids {
			require.False(t, r.done)
			s.sampleInto(r, pick(id), 6, nil, nil)
		}
	}
	r := rowFor(3)
	run(r, 1, 2, 4)
	require.True(t, r.done)
	require.Equal(t, []int32{1, 2, 4}, r.out.Tokens)
	require.Equal(t, FinishStop, r.out.Finish, "a stop id at the limit is a stop")

	r = rowFor(3)
	run(r, 1, 2, 5)
	require.True(t, r.done)
	require.Equal(t, FinishLength, r.out.Finish)
	require.Len(t, r.out.Tokens, 3)

	r = rowFor(100)
	run(r, 3)
	require.True(t, r.done)
	require.Equal(t, []int32{3}, r.out.Tokens)
	require.Equal(t, FinishStop, r.out.Finish)

	r = rowFor(100)
	run(r, 0, 1, 2, 5, 5)
	require.False(t, r.done, "no stop id, under the limit")
	require.Len(t, r.out.PolicyLogProbs, 5)
}

// TestSamplingDistributionMatchesHFOnRandomRows compares the sampler's
// distribution with hfReference's on random short rows rich in ties
// (small integers, logarithms of small integers, whose softmax masses
// are exact fractions) under random temperatures, top-k and top-p: the
// kept set must be the same and every probability within 1e-9.
func TestSamplingDistributionMatchesHFOnRandomRows(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	for trial := range 200000 {
		n := 1 + r.IntN(12)
		logits := make([]float32, n)
		for i := range logits {
			switch trial % 3 {
			case 0:
				logits[i] = float32(r.IntN(4))
			case 1:
				logits[i] = float32(math.Log(float64(1 + r.IntN(4))))
			default:
				logits[i] = float32(2 * r.NormFloat64())
			}
		}
		temperature := []float64{1, 0.5, 2, 0.7}[r.IntN(4)]
		k := r.IntN(n + 2)
		p := []float64{1, 0.25, 0.5, 0.75, 0.9, 0.3, 0.6, 0.875}[r.IntN(8)]
		want := hfReference(logits, n, temperature, k, p)
		got, _, _ := samplingDistribution(t, SamplerConfig{Temperature: temperature, TopK: k, TopP: p}, logits, n, uint64(trial))
		require.Equal(t, keptSet(want), keptSet(got), "trial %d: logits %v, temperature %v, top-k %d, top-p %v", trial, logits, temperature, k, p)
		require.InDeltaSlice(t, want, got, 1e-9, "trial %d", trial)
	}
}
