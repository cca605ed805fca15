package qwen3_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/spiral-rl/spiral/model/qwen3"
	"github.com/spiral-rl/spiral/model/qwen3/qwen3ref"
)

// testConfigs covers the shapes the graph must get right: head_dim
// different from hidden/heads, grouped (KVHeads < Heads), multi-query
// (KVHeads = 1) and plain multi-head attention, tied and untied heads.
func testConfigs() []struct {
	name string
	cfg  qwen3.Config
} {
	tiny := qwen3.Tiny()
	untied := tiny
	untied.TiedEmbeddings = false
	mha := qwen3.Config{Layers: 1, Hidden: 48, Heads: 3, KVHeads: 3, HeadDim: 24, Intermediate: 80, Vocab: 70,
		RopeTheta: 1e6, RMSEps: 1e-5, TiedEmbeddings: false}
	gqa3 := qwen3.Config{Layers: 3, Hidden: 40, Heads: 6, KVHeads: 2, HeadDim: 8, Intermediate: 64, Vocab: 50,
		RopeTheta: 500, RMSEps: 1e-6, TiedEmbeddings: true}
	mqa := qwen3.Config{Layers: 2, Hidden: 32, Heads: 4, KVHeads: 1, HeadDim: 16, Intermediate: 96, Vocab: 64,
		RopeTheta: 10000, RMSEps: 1e-6, TiedEmbeddings: false}
	return []struct {
		name string
		cfg  qwen3.Config
	}{
		{"tiny tied gqa head_dim 32", tiny},
		{"tiny untied", untied},
		{"mha untied head_dim 24", mha},
		{"gqa rep 3, 3 layers", gqa3},
		{"mqa", mqa},
	}
}

// maxAbsDiff returns max |a[i]-b[i]| and its index; NaN anywhere counts as
// infinite.
func maxAbsDiff(a []float32, b []float64) (float64, int) {
	worst, at := 0.0, -1
	for i := range a {
		d := math.Abs(float64(a[i]) - b[i])
		if math.IsNaN(d) {
			d = math.Inf(1)
		}
		if d > worst || at < 0 {
			worst, at = d, i
		}
	}
	return worst, at
}

// TestGraphMatchesReference runs each generated graph in ONNX Runtime on a
// padded batch (left padding, a row without padding, a right-padded row)
// and compares all logits, padding rows included, with the pure-Go float64
// Reference. Tolerance 1e-4 absolute: the graph computes in float32.
func TestGraphMatchesReference(t *testing.T) {
	const tol = 1e-4
	for ci, tc := range testConfigs() {
		t.Run(tc.name, func(t *testing.T) {
			m, err := qwen3.Build(tc.cfg, uint64(100+ci))
			if err != nil {
				t.Fatal(err)
			}
			ref, err := qwen3ref.New(m, tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			s := newSession(t, m, tc.cfg)
			r := rand.New(rand.NewPCG(uint64(ci), 1))
			ids, mask, pos, seq := leftPad(randomPrompts(r, tc.cfg.Vocab, 5, 9, 1, 7))
			// Row 4: right padding, 6 tokens then 3 pads.
			for j := range seq {
				if j < 6 {
					ids, mask, pos = append(ids, int64(1+j)), append(mask, 1), append(pos, int64(j))
				} else {
					ids, mask, pos = append(ids, 0), append(mask, 0), append(pos, 1)
				}
			}
			n := len(ids) / seq
			logits, present := s.run(t, batch{n: n, seq: seq, ids: ids, mask: mask, pos: pos})
			want, err := ref.Forward(n, seq, ids, mask, pos)
			if err != nil {
				t.Fatal(err)
			}
			if len(logits) != len(want) {
				t.Fatalf("%d logits, want %d", len(logits), len(want))
			}
			d, at := maxAbsDiff(logits, want)
			v := tc.cfg.Vocab
			if d > tol {
				t.Errorf("max |ORT - reference| = %.3g at [row %d, pos %d, token %d] (ORT %g, reference %g), want < %g",
					d, at/(seq*v), at/v%seq, at%v, logits[at], want[at], tol)
			}
			t.Logf("max |ORT - reference| = %.2g over %d logits", d, len(logits))
			// The comparison can fail: doubling every position (a rotary
			// frequency bug; a uniform shift would change nothing, rotary
			// attention being relative) moves the logits past the tolerance.
			doubled := make([]int64, len(pos))
			for i, p := range pos {
				doubled[i] = 2 * p
			}
			wrong, err := ref.Forward(n, seq, ids, mask, doubled)
			if err != nil {
				t.Fatal(err)
			}
			if d, _ := maxAbsDiff(logits, wrong); d < 10*tol {
				t.Errorf("doubled positions change the logits by only %.3g: the test cannot see rotary bugs", d)
			}
			if got, want := len(present[0]), n*tc.cfg.KVHeads*seq*tc.cfg.HeadDim; got != want {
				t.Errorf("present.0.key has %d values, want %d", got, want)
			}
		})
	}
}

// TestKVCacheMatchesFullSequence checks that prefill of a left-padded batch
// of three prompts followed by step-by-step decoding, feeding present.*
// back as past_key_values.*, extending attention_mask and advancing each
// row's position, gives the logits of one full-sequence pass (1e-4
// absolute, float32), and the same cache at every non-padding slot.
func TestKVCacheMatchesFullSequence(t *testing.T) {
	const tol, steps = 1e-4, 6
	for ci, tc := range testConfigs()[:3] {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.cfg
			m, err := qwen3.Build(c, 7)
			if err != nil {
				t.Fatal(err)
			}
			s := newSession(t, m, c)
			r := rand.New(rand.NewPCG(uint64(ci), 2))
			prompts := randomPrompts(r, c.Vocab, 3, 7, 5)
			ids, mask, pos, plen := leftPad(prompts)
			const n = 3
			cont := randomPrompts(r, c.Vocab, n*steps)[0] // [n][steps] tokens to feed

			// Full sequence: padded prompts followed by the continuation.
			total := plen + steps
			var fIDs, fMask, fPos []int64
			for b := range n {
				fIDs = append(fIDs, ids[b*plen:(b+1)*plen]...)
				fMask = append(fMask, mask[b*plen:(b+1)*plen]...)
				fPos = append(fPos, pos[b*plen:(b+1)*plen]...)
				for k := range steps {
					fIDs = append(fIDs, cont[b*steps+k])
					fMask = append(fMask, 1)
					fPos = append(fPos, int64(len(prompts[b])+k))
				}
			}
			full, fullCache := s.run(t, batch{n: n, seq: total, ids: fIDs, mask: fMask, pos: fPos})
			v := c.Vocab
			compare := func(what string, got []float32, b, at int) {
				t.Helper()
				want := full[(b*total+at)*v : (b*total+at+1)*v]
				for j := range v {
					if d := math.Abs(float64(got[j] - want[j])); !(d < tol) {
						t.Fatalf("%s: row %d position %d token %d: %g, full sequence %g (|diff| %.3g)", what, b, at, j, got[j], want[j], d)
					}
				}
			}

			// Prefill with an empty cache.
			logits, cache := s.run(t, batch{n: n, seq: plen, ids: ids, mask: mask, pos: pos})
			for b := range n {
				for p := plen - len(prompts[b]); p < plen; p++ {
					compare("prefill", logits[(b*plen+p)*v:(b*plen+p+1)*v], b, p)
				}
			}
			// Decode one token per row per step.
			curMask := append([]int64{}, mask...)
			for k := range steps {
				past := plen + k
				var sIDs, sPos, sMask []int64
				for b := range n {
					sIDs = append(sIDs, cont[b*steps+k])
					sPos = append(sPos, int64(len(prompts[b])+k))
					sMask = append(sMask, curMask[b*past:(b+1)*past]...)
					sMask = append(sMask, 1)
				}
				curMask = sMask
				logits, cache = s.run(t, batch{n: n, seq: 1, past: past, ids: sIDs, mask: sMask, pos: sPos, cache: cache})
				for b := range n {
					compare(fmt.Sprintf("decode step %d", k), logits[b*v:(b+1)*v], b, past)
				}
			}
			// The cache after decoding equals the full pass's at every
			// slot that holds a real token.
			hd := c.HeadDim
			for li := range cache {
				for b := range n {
					for h := range c.KVHeads {
						for p := plen - len(prompts[b]); p < total; p++ {
							off := ((b*c.KVHeads+h)*total + p) * hd
							for e := range hd {
								if d := math.Abs(float64(cache[li][off+e] - fullCache[li][off+e])); !(d < tol) {
									t.Fatalf("cache %d row %d head %d slot %d: %g, full %g", li, b, h, p, cache[li][off+e], fullCache[li][off+e])
								}
							}
						}
					}
				}
			}
		})
	}
}
