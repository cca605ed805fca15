// Command transfer asks whether one policy-gradient update on some
// problems helps other problems: whether what RL learns from a batch
// transfers. On the embedded task (or a model trained on it) it computes
// the GRPO gradient of a training batch A (the token-mean clipped loss at
// ratio 1, as spiral train's first step), then steps the weights along
// three directions at several sizes and measures, after each step, the
// sampled accuracy on held-out test problems of intermediate difficulty
// (B) and on the first problems of A, with the same sampling seeds as
// before the step (paired, so a small change is not lost in sampling
// noise):
//
//   - gradient: the loss's descent direction -g/|g|, at weight-space
//     norms 0.01, 0.03 and 0.1;
//   - adam: AdamW's first step, -lr * sign(g), at lr 3e-5, 1e-4 and 3e-4;
//   - random: a Gaussian direction at norm 0.1, the control.
//
// It also prints the cosine between the gradients of A and of a disjoint
// batch of the same size (the part of an update that problems share), and
// between two gradients of A from different samples (the sampling
// noise). It is an analysis tool for the study (docs/study/transfer.md),
// not part of the spiral binary.
//
//	go run ./scripts/transfer [--model DIR] [--batch 64] [--held 16] ...
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"time"

	"github.com/spiral-rl/spiral/data"
	"github.com/spiral-rl/spiral/data/synth"
	"github.com/spiral-rl/spiral/model"
	"github.com/spiral-rl/spiral/model/embedded"
	"github.com/spiral-rl/spiral/model/tokenizer"
	"github.com/spiral-rl/spiral/rl"
	"github.com/spiral-rl/spiral/rollout"
)

type options struct {
	model            string
	batch, group     int
	held, screen     int
	samples, inBatch int
	threads          int
	seed             uint64
}

func main() {
	var o options
	flag.StringVar(&o.model, "model", "", "model directory (model.onnx, tokenizer.json; default: the embedded model)")
	flag.IntVar(&o.batch, "batch", 64, "training problems in batch A (and in the disjoint batch)")
	flag.IntVar(&o.group, "group", 24, "GRPO traces per training problem")
	flag.IntVar(&o.held, "held", 16, "held-out problems of intermediate difficulty in B")
	flag.IntVar(&o.screen, "screen", 96, "test problems screened for B (32 samples each; accuracy 0.15-0.85 qualifies)")
	flag.IntVar(&o.samples, "samples", 192, "samples per problem when measuring accuracy")
	flag.IntVar(&o.inBatch, "in-batch", 8, "problems of A whose accuracy is measured (the in-sample effect)")
	flag.IntVar(&o.threads, "threads", 0, "ONNX Runtime threads (0 = one per physical core)")
	flag.Uint64Var(&o.seed, "seed", 1, "seed of the rollouts and the random direction")
	flag.Parse()
	if err := o.validate(flag.NArg()); err != nil {
		fmt.Fprintln(os.Stderr, "transfer:", err)
		os.Exit(2) // a usage error, as flag's own
	}
	if err := run(context.Background(), o, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "transfer:", err)
		os.Exit(1)
	}
}

// validate refuses flags that measure nothing, or nothing but NaN: no
// problems, samples or traces (one trace a problem has GRPO advantage 0,
// so the gradient is 0 and has no direction), and positional arguments
// (args of them), which the tool takes none of.
func (o options) validate(args int) error {
	if args > 0 {
		return fmt.Errorf("%d unexpected arguments: the tool takes flags only (see -help)", args)
	}
	for _, c := range []struct {
		flag       string
		value, min int
	}{{"batch", o.batch, 1}, {"group", o.group, 2}, {"held", o.held, 1}, {"screen", o.screen, 1}, {"samples", o.samples, 1}, {"in-batch", o.inBatch, 1}, {"threads", o.threads, 0}} {
		if c.value < c.min {
			return fmt.Errorf("-%s %d: want at least %d", c.flag, c.value, c.min)
		}
	}
	return nil
}

// probe is what run measures with: the policy, its sampler and the task.
type probe struct {
	pol      *model.Policy
	sampler  rollout.Generator
	prompter rollout.ChatPrompter
	judge    rollout.Judge
}

func run(ctx context.Context, o options, w io.Writer) error {
	dir := o.model
	if dir == "" {
		cache, err := model.CacheDir()
		if err != nil {
			return err
		}
		if dir, err = embedded.Extract(cache); err != nil {
			return err
		}
	}
	tok, err := tokenizer.Load(filepath.Join(dir, "tokenizer.json"))
	if err != nil {
		return err
	}
	defer tok.Close()
	rt, err := model.OpenRuntime(model.RuntimeOptions{Threads: o.threads, Warn: os.Stderr})
	if err != nil {
		return err
	}
	defer rt.Close()
	artifacts, err := os.MkdirTemp("", "transfer-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(artifacts)
	// The learner's policy is over the tokenizer's ids, which the sampler
	// draws from.
	pol, err := model.OpenPolicy(context.Background(), rt, filepath.Join(dir, "model.onnx"), artifacts,
		model.PolicyOptions{Train: true, Seed: o.seed, Executor: model.ExecutorOptions{VocabLimit: tok.VocabSize()}})
	if err != nil {
		return err
	}
	defer pol.Close()
	sc := rollout.DefaultSamplerConfig()
	sc.MaxNewTokens, sc.StopIDs = 96, tok.StopIDs()
	sc.VocabLimit = tok.VocabSize()
	sampler, err := rollout.NewSampler(pol.LM, sc)
	if err != nil {
		return err
	}
	p := probe{pol: pol, sampler: sampler, prompter: rollout.ChatPrompter{Tok: tok, Templates: synth.Templates()}, judge: rl.NewJudge(rl.RewardRule{})}
	start := time.Now()

	train, err := synth.EmbeddedSplit(synth.Train, 2*o.batch)
	if err != nil {
		return err
	}
	test, err := synth.EmbeddedSplit(synth.Test, o.screen)
	if err != nil {
		return err
	}
	a, disjoint := train.Problems[:o.batch], train.Problems[o.batch:]
	screen, err := p.accuracy(ctx, test.Problems, 32, o.seed+100)
	if err != nil {
		return err
	}
	b := intermediate(test.Problems, screen, 0.15, 0.85, o.held)
	if len(b) == 0 {
		return errors.New("no test problem of intermediate difficulty among those screened (raise --screen)")
	}
	inA := a[:min(o.inBatch, len(a))]

	// The gradients: A's twice (other samples), and the disjoint batch's.
	gA, err := p.gradient(ctx, a, o.group, o.seed)
	if err != nil {
		return err
	}
	gA2, err := p.gradient(ctx, a, o.group, o.seed+1)
	if err != nil {
		return err
	}
	gD, err := p.gradient(ctx, disjoint, o.group, o.seed)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "GRPO gradient of %d training problems x %d traces: norm %.4g\n", len(a), o.group, norm(gA))
	fmt.Fprintf(w, "cosine with a disjoint batch of %d problems: %.3f; with the same problems' other samples: %.3f\n\n",
		len(disjoint), cosine(gA, gD), cosine(gA, gA2))

	w0 := append([]float32(nil), pol.Weights.Flat()...)
	baseB, err := p.accuracy(ctx, b, o.samples, o.seed+200)
	if err != nil {
		return err
	}
	baseA, err := p.accuracy(ctx, inA, o.samples, o.seed+200)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "held-out B: %d test problems (accuracy 0.15-0.85 of %d screened), %d samples each; in-sample: %d problems of A\n",
		len(b), o.screen, o.samples, len(inA))
	fmt.Fprintf(w, "before the step: B %.4f, A %.4f\n\n", mean(baseB), mean(baseA))
	fmt.Fprintln(w, "| direction | size | weight change (L2) | B accuracy change | A accuracy change |")
	fmt.Fprintln(w, "|---|---|---|---|---|")
	sts, err := steps(gA, rand.New(rand.NewPCG(o.seed, 2)))
	if err != nil {
		return err
	}
	for _, st := range sts {
		weights := pol.Weights.Flat()
		for i := range weights {
			weights[i] = w0[i] + st.delta[i]
		}
		pol.Weights.Touch()
		accB, err := p.accuracy(ctx, b, o.samples, o.seed+200)
		if err != nil {
			return err
		}
		accA, err := p.accuracy(ctx, inA, o.samples, o.seed+200)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "| %s | %g | %.3g | %+.4f | %+.4f |\n", st.name, st.size, norm(st.delta), mean(accB)-mean(baseB), mean(accA)-mean(baseA))
	}
	fmt.Fprintf(w, "\n(%s)\n", time.Since(start).Round(time.Second))
	return nil
}

// accuracy samples n traces of each problem (trace (i, j) seeded by
// seed, i, j, so two calls with the same seed draw the same random
// numbers) and returns each problem's share of right answers.
func (p probe) accuracy(ctx context.Context, problems []data.Problem, n int, seed uint64) ([]float64, error) {
	ev := rollout.Evaluator{Gen: p.sampler, Prompter: p.prompter, Judge: p.judge}
	set, err := ev.Sample(ctx, problems, n, seed)
	if err != nil {
		return nil, err
	}
	acc := make([]float64, len(problems))
	for i, row := range set.Traces {
		for _, tr := range row {
			if tr.Verdict.Correct {
				acc[i]++
			}
		}
		acc[i] /= float64(n)
	}
	return acc, nil
}

// gradient returns the GRPO loss gradient of G traces per problem (the
// advantages of spiral train --algo grpo, every example at ratio 1).
func (p probe) gradient(ctx context.Context, problems []data.Problem, G int, seed uint64) ([]float32, error) {
	prompts := make([][]int32, len(problems))
	for i, pb := range problems {
		var err error
		if prompts[i], err = p.prompter.SearchPrompt(pb.Problem); err != nil {
			return nil, fmt.Errorf("search prompt of problem %q (%s): %w", pb.ID, pb.Source, err)
		}
	}
	traces, _, err := rollout.Complete(ctx, p.sampler, p.prompter, prompts, G, func(i, j int) rollout.Stream {
		return rollout.Stream{Seed: seed, Problem: uint64(i), Sample: uint64(j), Phase: rollout.PhaseSearch}
	}, nil)
	if err != nil {
		return nil, err
	}
	var examples []rl.Example
	for i, pb := range problems {
		rewards := make([]float64, G)
		for j, tr := range traces[i] {
			if p.judge.Judge(tr, pb.Answer).Correct {
				rewards[j] = 1
			}
		}
		adv, err := rl.GRPOAdvantages(rewards, rl.GRPOOptions{})
		if err != nil {
			return nil, err
		}
		for j, tr := range traces[i] {
			examples = append(examples, rl.Example{Prompt: tr.Prompt, Completion: tr.Tokens, OldLogProbs: tr.PolicyLogProbs,
				Advantage: float32(adv[j]), Kind: rl.KindGRPO})
		}
	}
	if _, err := rl.Gradients(ctx, p.pol.Train, p.pol.Grads, examples, rl.GradientOptions{MicroBatchTokens: 16384, ClipLow: 0.2, ClipHigh: 0.28}); err != nil {
		return nil, err
	}
	return append([]float32(nil), p.pol.Grads.Flat()...), nil
}

// intermediate returns up to n problems whose accuracy is within
// [lo, hi], in order.
func intermediate(problems []data.Problem, acc []float64, lo, hi float64, n int) []data.Problem {
	var out []data.Problem
	for i, pb := range problems {
		if len(out) < n && acc[i] >= lo && acc[i] <= hi {
			out = append(out, pb)
		}
	}
	return out
}

// step is one weight change the tool measures.
type step struct {
	name  string
	size  float64
	delta []float32
}

// steps are the weight changes measured for the loss gradient g: along
// -g/|g| at norms 0.01, 0.03 and 0.1, AdamW's first step -lr*sign(g)
// at lr 3e-5, 1e-4 and 3e-4 (bias-corrected m/sqrt(v) is sign(g)), and a
// Gaussian direction drawn from rng at norm 0.1. A gradient of 0 (no
// problem of the batch had both right and wrong traces: every advantage
// 0) has no direction, and is refused: -g/|g| would set every weight to
// NaN.
func steps(g []float32, rng *rand.Rand) ([]step, error) {
	gn := norm(g)
	if gn == 0 {
		return nil, errors.New("the GRPO gradient of batch A is 0: no problem of it had both right and wrong traces (raise -group or -batch, or use a model that solves some of its problems but not all)")
	}
	random := make([]float32, len(g))
	for i := range random {
		random[i] = float32(rng.NormFloat64())
	}
	rn := norm(random)
	var out []step
	for _, size := range []float64{0.01, 0.03, 0.1} {
		d := make([]float32, len(g))
		for i, v := range g {
			d[i] = float32(-size * float64(v) / gn)
		}
		out = append(out, step{"gradient", size, d})
	}
	for _, lr := range []float64{3e-5, 1e-4, 3e-4} {
		d := make([]float32, len(g))
		for i, v := range g {
			switch {
			case v > 0:
				d[i] = float32(-lr)
			case v < 0:
				d[i] = float32(lr)
			}
		}
		out = append(out, step{"adam", lr, d})
	}
	d := make([]float32, len(g))
	for i, v := range random {
		d[i] = float32(0.1 * float64(v) / rn)
	}
	return append(out, step{"random", 0.1, d}), nil
}

func norm(x []float32) float64 {
	s := 0.0
	for _, v := range x {
		s += float64(v) * float64(v)
	}
	return math.Sqrt(s)
}

func cosine(a, b []float32) float64 {
	dot := 0.0
	for i := range a {
		dot += float64(a[i]) * float64(b[i])
	}
	return dot / (norm(a) * norm(b))
}

func mean(x []float64) float64 {
	s := 0.0
	for _, v := range x {
		s += v
	}
	return s / float64(len(x))
}
