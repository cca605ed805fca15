package model

import (
	"errors"

	"github.com/spiral-rl/spiral/model/params"
)

// Policy bundles what training and evaluation run on: one parameter store
// shared, without copies, by the rollout LM and the training session.
type Policy struct {
	Artifacts *Artifacts
	// Weights are the trainable tensors; Grads receive one training call's
	// gradients (nil without training).
	Weights, Grads *params.Store
	// LM samples with the current weights: the sampling graph, whose
	// logits hold the last position only.
	LM *LM
	// scorer is the rollout graph with full-sequence logits, opened on
	// first use by Scorer.
	scorer *LM
	feed   map[string]Weight
	rt     *Runtime
	// batchGrads is BatchGrads' store.
	batchGrads *params.Store
	// Train computes gradients (nil without training).
	Train *TrainSession
}

// OpenPolicy prepares (or reuses) the artifacts of src in artifactsDir,
// loads the initial weights from src, and opens the rollout LM and, when
// train is set, the training session.
func OpenPolicy(rt *Runtime, src, artifactsDir string, train bool) (*Policy, error) {
	art, err := PrepareArtifacts(src, artifactsDir)
	if err != nil {
		return nil, err
	}
	w, err := InitialWeights(src, art.Manifest)
	if err != nil {
		return nil, err
	}
	p := &Policy{Artifacts: art, Weights: w, rt: rt}
	feed := make(map[string]Weight, w.Len())
	for i := 0; i < w.Len(); i++ {
		t := w.At(i)
		feed[t.Name] = Weight{Shape: t.Shape, Data: t.Data}
	}
	p.feed = feed
	if p.LM, err = OpenLM(rt, art.SamplePath(), LMOptions{Weights: feed}); err != nil {
		return nil, err
	}
	if train {
		p.Grads = w.NewGrads()
		if p.Train, err = OpenTrainSession(rt, art.TrainPath(), art.Manifest, w, p.Grads); err != nil {
			return nil, errors.Join(err, p.Close())
		}
	}
	return p, nil
}

// BatchGrads returns a gradient store of the weights' layout for summing
// micro-batch gradients over a batch, allocated on first use and reused
// by every later step (it is as large as the model).
func (p *Policy) BatchGrads() *params.Store {
	if p.batchGrads == nil {
		p.batchGrads = p.Weights.NewGrads()
	}
	return p.batchGrads
}

// Scorer returns an LM over the same weights whose logits cover every
// position (for scoring whole sequences), opening it on first use.
func (p *Policy) Scorer() (*LM, error) {
	if p.scorer == nil {
		lm, err := OpenLM(p.rt, p.Artifacts.RolloutPath(), LMOptions{Weights: p.feed})
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
	return errors.Join(errs...)
}
