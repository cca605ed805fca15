package qwen3_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/spiral-rl/spiral/model/qwen3"
)

// benchPrompt is the prompt length of the prefill benchmark and the cache
// length of the decode benchmark.
const benchPrompt = 64

// BenchmarkPrefill measures a full forward pass of benchPrompt tokens per
// row with an empty cache on the Tiny model in ONNX Runtime (CPU, the
// test runtime's 2 intra-op threads), in prompt tokens per second.
func BenchmarkPrefill(b *testing.B) {
	c := qwen3.Tiny()
	m, err := qwen3.Build(c, 1)
	if err != nil {
		b.Fatal(err)
	}
	s := newSession(b, m, c)
	for _, n := range []int{1, 16, 64} {
		b.Run(fmt.Sprintf("batch=%d", n), func(b *testing.B) {
			r := rand.New(rand.NewPCG(1, 1))
			lengths := make([]int, n)
			for i := range lengths {
				lengths[i] = benchPrompt
			}
			ids, mask, pos, seq := leftPad(randomPrompts(r, c.Vocab, lengths...))
			in := batch{n: n, seq: seq, ids: ids, mask: mask, pos: pos}
			for b.Loop() {
				s.run(b, in)
			}
			b.ReportMetric(float64(n*seq)*float64(b.N)/b.Elapsed().Seconds(), "tok/s")
		})
	}
}

// BenchmarkDecode measures one decode step (one new token per row over a
// cache of benchPrompt positions) on the Tiny model, in generated tokens
// per second.
func BenchmarkDecode(b *testing.B) {
	c := qwen3.Tiny()
	m, err := qwen3.Build(c, 1)
	if err != nil {
		b.Fatal(err)
	}
	s := newSession(b, m, c)
	for _, n := range []int{1, 16, 64} {
		b.Run(fmt.Sprintf("batch=%d", n), func(b *testing.B) {
			r := rand.New(rand.NewPCG(1, 2))
			lengths := make([]int, n)
			for i := range lengths {
				lengths[i] = benchPrompt
			}
			ids, mask, pos, seq := leftPad(randomPrompts(r, c.Vocab, lengths...))
			_, cache := s.run(b, batch{n: n, seq: seq, ids: ids, mask: mask, pos: pos})
			in := batch{n: n, seq: 1, past: seq, cache: cache}
			for i := range n {
				in.ids = append(in.ids, 1+int64(i%(c.Vocab-1)))
				in.pos = append(in.pos, int64(seq))
				in.mask = append(in.mask, mask[i*seq:(i+1)*seq]...)
				in.mask = append(in.mask, 1)
			}
			for b.Loop() {
				s.run(b, in)
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "tok/s")
		})
	}
}
