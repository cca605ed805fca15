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
	// LM samples with the current weights.
	LM *LM
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
	p := &Policy{Artifacts: art, Weights: w}
	feed := make(map[string]Weight, w.Len())
	for i := 0; i < w.Len(); i++ {
		t := w.At(i)
		feed[t.Name] = Weight{Shape: t.Shape, Data: t.Data}
	}
	if p.LM, err = OpenLM(rt, art.RolloutPath(), LMOptions{Weights: feed}); err != nil {
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

// Close releases the sessions.
func (p *Policy) Close() error {
	var errs []error
	if p.LM != nil {
		errs = append(errs, p.LM.Close())
	}
	if p.Train != nil {
		errs = append(errs, p.Train.Close())
	}
	return errors.Join(errs...)
}
