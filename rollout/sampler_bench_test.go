package rollout

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"github.com/spiral-rl/spiral/model"
	"github.com/spiral-rl/spiral/model/modeltest"
	"github.com/spiral-rl/spiral/model/qwen3"
)

// BenchmarkDecode measures generated tokens per second on the tiny model
// at several batch sizes, with and without refilling finished rows, and a
// one-sequence-at-a-time loop for comparison. Completion lengths vary
// (stop id sampled at random), as in real rollouts.
//
//	go test -run '^$' -bench Decode -benchtime 1x ./rollout
func BenchmarkDecode(b *testing.B) {
	for _, tc := range []struct {
		batch  int
		refill bool
	}{{1, false}, {16, false}, {16, true}, {64, false}, {64, true}, {256, false}, {256, true}} {
		b.Run(fmt.Sprintf("batch=%d/refill=%v", tc.batch, tc.refill), func(b *testing.B) {
			benchDecode(b, tc.batch, tc.refill)
		})
	}
}

func benchDecode(b *testing.B, batch int, refill bool) {
	lm := samplerTinyLMB(b)
	s, err := NewSampler(lm, SamplerConfig{TopP: 1, Temperature: 1, MaxNewTokens: 64, BatchSize: batch, Refill: refill, StopIDs: []int32{1, 2}})
	if err != nil {
		b.Fatal(err)
	}
	n := max(2*batch, 32)
	r := rand.New(rand.NewPCG(1, 1))
	reqs := make([]Request, n)
	for i := range reqs {
		p := make([]int32, 8+r.IntN(24))
		for j := range p {
			p[j] = int32(3 + r.IntN(90))
		}
		reqs[i] = Request{Prompt: p, Seed: uint64(i)}
	}
	var gen int
	var el time.Duration
	for b.Loop() {
		_, st, err := s.Generate(context.Background(), reqs, nil)
		if err != nil {
			b.Fatal(err)
		}
		gen += st.GeneratedTokens
		el += st.Elapsed
	}
	b.ReportMetric(float64(gen)/el.Seconds(), "tok/s")
}

// copiedPrompts returns n requests of 300-token prompts drawn from r,
// each prompt in copies consecutive requests of their own seeds.
func copiedPrompts(n, copies int, r *rand.Rand) []Request {
	reqs := make([]Request, n)
	for i := range reqs {
		if i%copies != 0 {
			reqs[i] = Request{Prompt: reqs[i-1].Prompt, Seed: uint64(i)}
			continue
		}
		p := make([]int32, 300)
		for j := range p {
			p[j] = int32(3 + r.IntN(90))
		}
		reqs[i] = Request{Prompt: p, Seed: uint64(i)}
	}
	return reqs
}

// BenchmarkSharedPrompts measures Generate on 64 requests of 300-token
// prompts and 32 new tokens when they are 16 prompts of 4 copies each (an
// aggregation step's shape: each prefilled once) against 64 distinct
// prompts of the same lengths; compare the two lines' ns/op.
//
//	go test -run '^$' -bench SharedPrompts -benchtime 3x ./rollout
func BenchmarkSharedPrompts(b *testing.B) {
	for _, copies := range []int{1, 4} {
		b.Run(fmt.Sprintf("copies=%d", copies), func(b *testing.B) {
			lm := samplerTinyLMB(b)
			s, err := NewSampler(lm, SamplerConfig{TopP: 1, Temperature: 1, MaxNewTokens: 32, BatchSize: 64})
			if err != nil {
				b.Fatal(err)
			}
			reqs := copiedPrompts(64, copies, rand.New(rand.NewPCG(2, 2)))
			var prefill time.Duration
			for b.Loop() {
				_, st, err := s.Generate(context.Background(), reqs, nil)
				if err != nil {
					b.Fatal(err)
				}
				prefill += st.Prefill
			}
			b.ReportMetric(prefill.Seconds()/float64(b.N), "prefill-s/op")
		})
	}
}

// BenchmarkRetire measures Generate of an aggregation's shape on the
// tiny model's sampling and decode graphs (model.OpenPolicy), 128
// requests of 32 distinct 300-token prompts x 4 copies, 64 rows with
// refill, up to 96 new tokens ended early by stop ids (so that rows
// finish one by one, as traces do), retiring finished rows as Sampler
// does (swap: the last running row takes a finished row's place) and as
// it did before (shift: every later row moves up; TestSamplerRetireOrder
// shows the completions are identical). Compare the two lines' ns/op and
// retire-s/op.
//
//	go test -run '^$' -bench Retire -benchtime 3x ./rollout
func BenchmarkRetire(b *testing.B) {
	rt := modeltest.Runtime(b)
	dir := b.TempDir()
	if err := qwen3.WriteDir(dir, qwen3.Tiny(), 11); err != nil {
		b.Fatal(err)
	}
	pol, err := model.OpenPolicy(context.Background(), rt, filepath.Join(dir, "model.onnx"), b.TempDir(), model.PolicyOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer pol.Close()
	lm := pol.LM
	reqs := copiedPrompts(128, 4, rand.New(rand.NewPCG(4, 4)))
	for _, tc := range []struct {
		name  string
		shift bool
	}{{"shift", true}, {"swap", false}} {
		b.Run(tc.name, func(b *testing.B) {
			s, err := NewSampler(lm, SamplerConfig{TopP: 1, Temperature: 1, MaxNewTokens: 96, BatchSize: 64, Refill: true, StopIDs: []int32{3, 11, 19}})
			if err != nil {
				b.Fatal(err)
			}
			var retiring time.Duration
			retire := (*Sampler).retire
			if tc.shift {
				unused := 0
				retire = retireShifting(&unused)
			}
			s.retireWith = func(s *Sampler, active []*row) ([]*row, error) {
				t0 := time.Now()
				defer func() { retiring += time.Since(t0) }()
				return retire(s, active)
			}
			for b.Loop() {
				if _, _, err := s.Generate(context.Background(), reqs, nil); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(retiring.Seconds()/float64(b.N), "retire-s/op")
		})
	}
}
