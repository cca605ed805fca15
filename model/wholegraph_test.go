package model

// The whole-graph training session: the oracle the executor's gradients
// are checked against (see executor_test.go). It runs
// autodiff.TrainingGraph of the source in one ONNX Runtime call, keeping
// every intermediate, which is what the executor exists to avoid.

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	ort "github.com/yalue/onnxruntime_go"
	"google.golang.org/protobuf/proto"

	"github.com/spiral-rl/spiral/model/autodiff"
	"github.com/spiral-rl/spiral/model/onnx"
	"github.com/spiral-rl/spiral/model/onnx/onnxpb"
	"github.com/spiral-rl/spiral/model/params"
)

// WriteTrainingGraph writes the whole training graph of src (with the
// parameters, ties and selection of man) to path.
func WriteTrainingGraph(src string, man Manifest, path string) error {
	m, err := onnx.LoadGraph(src)
	if err != nil {
		return err
	}
	if _, _, err := parameters(m, src); err != nil {
		return err
	}
	g := m.Graph()
	isTrained, isFrozen := map[string]bool{}, map[string]bool{}
	for _, w := range man.Weights {
		isTrained[w.Name] = true
	}
	for _, w := range man.Frozen {
		isFrozen[w.Name] = true
	}
	isParam := func(name string) bool { return isTrained[name] || isFrozen[name] }
	for _, t := range g.GetInitializer() {
		if isParam(t.GetName()) {
			t.RawData, t.FloatData, t.ExternalData, t.DataLocation = nil, nil, nil, nil
		}
	}
	if err := m.InlineAll(isParam); err != nil {
		return err
	}
	lg, err := autodiff.TrainingGraph(g, autodiff.LMOptions{
		Trainable: func(t *onnxpb.TensorProto) bool { return isTrained[t.GetName()] },
		Frozen:    func(t *onnxpb.TensorProto) bool { return isFrozen[t.GetName()] },
	})
	if err != nil {
		return err
	}
	out := proto.Clone(m.Proto).(*onnxpb.ModelProto)
	out.Graph = lg.Graph
	return onnx.Save(path, &onnx.Model{Proto: out}, onnx.SaveOptions{})
}

// OpenWholeGraph writes the whole training graph of p's source into p's
// artifacts directory and opens it on p's stores, writing gradients into
// grads.
func OpenWholeGraph(rt *Runtime, p *Policy, grads *params.Store) (*TrainSession, error) {
	path := filepath.Join(p.Artifacts.Dir, "whole-train.onnx")
	if err := WriteTrainingGraph(p.Artifacts.Manifest.Source, p.Artifacts.Manifest, path); err != nil {
		return nil, err
	}
	return OpenTrainSession(rt, path, p.Artifacts.Manifest, p.Weights, p.Frozen, grads)
}

// TrainSession runs the training graph (autodiff.TrainingGraph) on the
// parameter store: weights are read from the store and gradients written
// into a gradient store of the same layout, both in place, without copies.
type TrainSession struct {
	sess      *ort.DynamicAdvancedSession
	weights   []ort.Value // trained, then frozen
	hasPos    bool
	gradStore *params.Store
	grads     []ort.Value
	nWeights  int
	path      string
}

// OpenTrainSession opens the training graph at path. weights and grads
// must have the manifest's trained tensors in its order, frozen its frozen
// ones; their buffers are wrapped, so they must never be reallocated while
// the session lives.
func OpenTrainSession(rt *Runtime, path string, man Manifest, weights, frozen, grads *params.Store) (*TrainSession, error) {
	if err := weights.SameLayout(grads); err != nil {
		return nil, fmt.Errorf("model: train session: %w", err)
	}
	if weights.Len() != len(man.Weights) || frozen.Len() != len(man.Frozen) {
		return nil, fmt.Errorf("model: train session: stores hold %d + %d tensors, manifest %d + %d", weights.Len(), frozen.Len(), len(man.Weights), len(man.Frozen))
	}
	s := &TrainSession{path: path, nWeights: len(man.Weights), hasPos: man.HasPositionIDs, gradStore: grads}
	in := []string{InputIDs, AttentionMask}
	if s.hasPos {
		in = append(in, PositionIDs)
	}
	in = append(in, autodiff.InputLossMask, autodiff.InputAdvantages,
		autodiff.InputOldLogprobs, autodiff.InputClipLow, autodiff.InputClipHigh)
	out := []string{autodiff.OutputLogprobs, autodiff.OutputEntropy, autodiff.OutputLoss}
	for i, w := range man.Weights {
		t := weights.At(i)
		if t.Name != w.Name {
			s.Close()
			return nil, fmt.Errorf("model: train session: store tensor %d is %q, manifest has %q", i, t.Name, w.Name)
		}
		wt, err := ort.NewTensor(ort.NewShape(t.Shape...), t.Data)
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("model: train session: wrap %q: %w", t.Name, err)
		}
		s.weights = append(s.weights, wt)
		g := grads.At(i)
		gt, err := ort.NewTensor(ort.NewShape(g.Shape...), g.Data)
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("model: train session: wrap grad %q: %w", g.Name, err)
		}
		s.grads = append(s.grads, gt)
		in = append(in, w.Name)
		out = append(out, autodiff.GradName(w.Name))
	}
	for i, w := range man.Frozen {
		t := frozen.At(i)
		if t.Name != w.Name {
			s.Close()
			return nil, fmt.Errorf("model: train session: frozen store tensor %d is %q, manifest has %q", i, t.Name, w.Name)
		}
		wt, err := ort.NewTensor(ort.NewShape(t.Shape...), t.Data)
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("model: train session: wrap %q: %w", t.Name, err)
		}
		s.weights = append(s.weights, wt)
		in = append(in, w.Name)
	}
	so, err := rt.NewSessionOptions()
	if err != nil {
		s.Close()
		return nil, err
	}
	defer so.Destroy()
	s.sess, err = ort.NewDynamicAdvancedSession(path, in, out, so)
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("model: %s: create training session: %w", path, err)
	}
	return s, nil
}

// Close releases the session and the tensor wrappers.
func (s *TrainSession) Close() error {
	var errs []error
	if s.sess != nil {
		errs = append(errs, s.sess.Destroy())
		s.sess = nil
	}
	for _, v := range append(s.weights, s.grads...) {
		errs = append(errs, v.Destroy())
	}
	s.weights, s.grads = nil, nil
	return errors.Join(errs...)
}

// Run computes the loss and writes d loss / d w into the gradient store
// (overwriting it). res's slices are reused when large enough.
func (s *TrainSession) Run(ctx context.Context, b TrainBatch, res *TrainResult) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	n := b.Batch * b.Seq
	for name, l := range map[string]int{"input_ids": len(b.InputIDs), "attention_mask": len(b.AttentionMask), "position_ids": len(b.PositionIDs),
		"loss_mask": len(b.LossMask), "advantages": len(b.Advantages), "old_logprobs": len(b.OldLogProbs)} {
		if l != n {
			return fmt.Errorf("model: train batch: %s has %d values, want %d x %d", name, l, b.Batch, b.Seq)
		}
	}
	var owned []ort.Value
	defer func() {
		for _, v := range owned {
			v.Destroy()
		}
	}()
	shape := ort.NewShape(int64(b.Batch), int64(b.Seq))
	var inputs []ort.Value
	ids := [][]int64{b.InputIDs, b.AttentionMask}
	if s.hasPos {
		ids = append(ids, b.PositionIDs)
	}
	for _, d := range ids {
		t, err := ort.NewTensor(shape, d)
		if err != nil {
			return fmt.Errorf("model: train batch: %w", err)
		}
		owned = append(owned, t)
		inputs = append(inputs, t)
	}
	clipLow, clipHigh := []float32{b.ClipLow}, []float32{b.ClipHigh}
	for _, d := range []struct {
		s     ort.Shape
		data  []float32
		owned bool
	}{{shape, b.LossMask, true}, {shape, b.Advantages, true}, {shape, b.OldLogProbs, true}, {ort.NewShape(1), clipLow, true}, {ort.NewShape(1), clipHigh, true}} {
		t, err := ort.NewTensor(d.s, d.data)
		if err != nil {
			return fmt.Errorf("model: train batch: %w", err)
		}
		owned = append(owned, t)
		inputs = append(inputs, t)
	}
	inputs = append(inputs, s.weights...)
	res.LogProbs = resize(res.LogProbs, n)
	res.Entropy = resize(res.Entropy, n)
	loss := []float32{0}
	var outputs []ort.Value
	for _, d := range []struct {
		s    ort.Shape
		data []float32
	}{{shape, res.LogProbs}, {shape, res.Entropy}, {ort.NewShape(1), loss}} {
		t, err := ort.NewTensor(d.s, d.data)
		if err != nil {
			return fmt.Errorf("model: train outputs: %w", err)
		}
		owned = append(owned, t)
		outputs = append(outputs, t)
	}
	outputs = append(outputs, s.grads...)
	if err := s.sess.Run(inputs, outputs); err != nil {
		return fmt.Errorf("model: %s: training step [%d x %d]: %w", s.path, b.Batch, b.Seq, err)
	}
	res.Loss = loss[0]
	return nil
}

// Accumulate runs b (Run, into the session's own gradient store) and adds
// scale times its gradients into grads, which must have the weights'
// layout and differ from that store.
func (s *TrainSession) Accumulate(ctx context.Context, b TrainBatch, scale float32, grads *params.Store, res *TrainResult) error {
	if grads == s.gradStore {
		return errors.New("model: train session: accumulate into the session's own gradient store")
	}
	if err := s.Run(ctx, b, res); err != nil {
		return err
	}
	return grads.AddScaled(s.gradStore, scale)
}
