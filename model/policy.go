package model

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"

	"github.com/spiral-rl/spiral/model/optim"
	"github.com/spiral-rl/spiral/model/params"
)

// Policy bundles what training and evaluation run on: one parameter store
// shared, without copies, by the sampling LM and the training executor.
type Policy struct {
	Artifacts *Artifacts
	// Weights are the trained parameters; Grads, of the same layout,
	// receive a batch's gradients (nil without training, and after
	// UseDeviceOptimizer, whose gradients stay in device memory). Its
	// memory is only touched, and so resident, from the first training
	// step.
	Weights, Grads *params.Store
	// Frozen are the parameters that are not trained (see
	// Manifest.Frozen); they feed the graphs like Weights.
	Frozen *params.Store
	// LM samples with the current weights: the sampling graph, whose
	// logits hold the last position only.
	LM *LM
	// scorer is the rollout graph with full-sequence logits, read and
	// opened on first use by Scorer.
	scorer *LM
	feed   map[string]Weight
	rt     *Runtime
	// dev are the device copies of the parameters (PolicyOptions.
	// Resident), closed after the LMs and the executor that read them.
	dev *deviceParams
	// Train computes gradients (nil without training).
	Train *Executor
}

// PolicyOptions configures OpenPolicy. The zero value opens a policy for
// sampling only, training every parameter.
type PolicyOptions struct {
	// Train opens the training session too.
	Train bool
	// Artifacts configures the generated graphs.
	Artifacts ArtifactOptions
	// Executor bounds the training step's working memory.
	Executor ExecutorOptions
	// Seed draws the initial LoRA adapters (unused without LoRA).
	Seed uint64
	// Resident puts the policy on the device layer: one set of device
	// copies of the parameters, read by generation and training alike
	// and copied when a store changes (params.Store.Touch), and
	// generation's KV cache in device memory. Always so on a CUDA
	// runtime; on the CPU it is the twin of that path, the same calls on
	// host memory, which is what the tests prove.
	Resident bool
	// SamplingGraphOnly runs every generation call on the sampling
	// graph, never on the decode graph (Artifacts.DecodePath): the host
	// path as the device-resident one runs it (GroupQueryAttention's CUDA
	// kernel takes no float32, so the resident path has no decode graph),
	// which is what the twin's bit-identity is proved against.
	SamplingGraphOnly bool
}

// OpenPolicy prepares (or reuses) the artifacts of src in artifactsDir,
// loads the initial weights from src, and opens the sampling LM and, when
// opt.Train is set, the training executor. It stops when ctx is done,
// with an error wrapping ctx.Err(): a wait for the artifacts' lock at
// once, a build of the artifacts before its next graph, the reading of
// the weights at the next tensor, and before each of its sessions opens.
func OpenPolicy(ctx context.Context, rt *Runtime, src, artifactsDir string, opt PolicyOptions) (*Policy, error) {
	// The artifacts stay locked until the sessions below have read them.
	unlock, err := lockArtifacts(ctx, artifactsDir, opt.Artifacts.Waiting)
	if err != nil {
		return nil, err
	}
	defer unlock()
	art, err := prepareArtifacts(ctx, src, artifactsDir, opt.Artifacts)
	if err != nil {
		return nil, err
	}
	w, frozen, err := InitialWeights(ctx, src, art.Manifest, opt.Seed)
	if err != nil {
		return nil, err
	}
	p := &Policy{Artifacts: art, Weights: w, Frozen: frozen, rt: rt}
	p.feed = make(map[string]Weight, w.Len()+frozen.Len())
	for _, s := range []*params.Store{w, frozen} {
		for i := range s.Len() {
			t := s.At(i)
			p.feed[t.Name] = Weight{Shape: t.Shape, Data: t.Data}
		}
	}
	if opt.Resident || rt.Device().Kind == CUDA {
		if p.dev, err = newDeviceParams(rt, []*params.Store{w, frozen}); err != nil {
			return nil, fmt.Errorf("model: parameters on %s: %w", rt.Device(), err)
		}
	}
	// The generation graphs' sessions open on first use, after the lock
	// is released, when another process may have rebuilt the directory
	// for another model: they are made from the files' bytes, read now.
	lo := LMOptions{Weights: p.feed, Heads: art.hf.NumAttentionHeads, device: p.dev, source: src}
	read := func(path string) ([]byte, error) {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, errors.Join(fmt.Errorf("model: artifacts: %w", err), p.Close())
		}
		return b, nil
	}
	if lo.Graph, err = read(art.SamplePath()); err != nil {
		return nil, err
	}
	if !opt.SamplingGraphOnly && art.DecodePath() != "" {
		lo.Decode = art.DecodePath()
		if lo.DecodeGraph, err = read(lo.Decode); err != nil {
			return nil, err
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, errors.Join(fmt.Errorf("model: open %s: %w", src, err), p.Close())
	}
	if p.LM, err = OpenLM(rt, art.SamplePath(), lo); err != nil {
		return nil, errors.Join(err, p.Close())
	}
	if opt.Train {
		if err := ctx.Err(); err != nil {
			return nil, errors.Join(fmt.Errorf("model: open %s: %w", src, err), p.Close())
		}
		p.Grads = w.NewGrads()
		eo := opt.Executor
		eo.device, eo.source = p.dev, src
		if p.Train, err = OpenExecutor(rt, art, w, frozen, eo); err != nil {
			return nil, errors.Join(err, p.Close())
		}
	}
	return p, nil
}

// UseDeviceOptimizer has the executor keep the gradients and opt's AdamW
// in device memory (Executor.UseDeviceOptimizer) and releases the host
// gradient store, which nothing reads then: a model-sized allocation, and
// a model-sized zeroing every step, saved. Grads is nil afterwards.
func (p *Policy) UseDeviceOptimizer(opt *optim.AdamW) error {
	if p.Train == nil {
		return errors.New("model: policy: the device optimizer needs a training policy")
	}
	if err := p.Train.UseDeviceOptimizer(opt); err != nil {
		return err
	}
	p.Grads = nil
	return nil
}

// Scorer returns an LM over the same weights whose logits cover every
// position (for scoring whole sequences), opening it on first use. Only
// tests call it, so OpenPolicy does not read its graph: the first call
// reads rollout.onnx, without the artifacts' lock, and refuses it when
// its SHA-256 is not the one the policy's manifest recorded (another
// process rebuilt the directory since the policy opened).
func (p *Policy) Scorer() (*LM, error) {
	if p.scorer == nil {
		path := p.Artifacts.RolloutPath()
		graph, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("model: artifacts: %w", err)
		}
		sum := sha256.Sum256(graph)
		if got, want := hex.EncodeToString(sum[:]), p.Artifacts.Manifest.Files[p.Artifacts.Manifest.Rollout]; got != want {
			return nil, fmt.Errorf("model: artifacts: %s changed since the policy opened (SHA-256 %s, not %s): another process rebuilt the directory; reopen the policy", path, got, want)
		}
		lm, err := OpenLM(p.rt, path, LMOptions{Weights: p.feed, Graph: graph, device: p.dev})
		if err != nil {
			return nil, err
		}
		p.scorer = lm
	}
	return p.scorer, nil
}

// Close releases the sessions.
func (p *Policy) Close() error {
	var errs []error
	if p.LM != nil {
		errs = append(errs, p.LM.Close())
	}
	if p.scorer != nil {
		errs = append(errs, p.scorer.Close())
	}
	if p.Train != nil {
		errs = append(errs, p.Train.Close())
	}
	if p.dev != nil {
		p.dev.close()
		p.dev = nil
	}
	return errors.Join(errs...)
}
