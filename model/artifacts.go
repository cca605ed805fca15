package model

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/spiral-rl/spiral/model/atomicfile"
	"github.com/spiral-rl/spiral/model/autodiff"
	"github.com/spiral-rl/spiral/model/blocks"
	"github.com/spiral-rl/spiral/model/lmgraph"
	"github.com/spiral-rl/spiral/model/onnx"
	"github.com/spiral-rl/spiral/model/onnx/onnxpb"
	"github.com/spiral-rl/spiral/model/params"
)

// ArtifactsVersion changes whenever the generated graphs change (in
// meaning, or in cost as at 12, where the gradient of a square lost its
// Pow, at 13, which added the decode graph, at 14, where a sliding
// window or a mask other than a binary one leave none, at 15, where
// the pieces' backward graphs take their outputs' gradients as seeds and
// no longer recompute the outputs themselves, and at 16, where a frozen
// head table's loss graph no longer computes its gradient and the
// gradients of Reduce with empty axes, Clip's bounds and Pow's exponent
// at a zero base were mended, and at 17, which added the head's loss
// graphs over a vocabulary narrower than the logits,
// blocks.Head.StatsLimited and TrainLimited), so that cached artifacts
// of an older spiral are rebuilt.
const ArtifactsVersion = 17

// File names inside an artifacts directory.
const (
	ManifestFile = "manifest.json"
	RolloutFile  = "rollout.onnx"
	SampleFile   = "sample.onnx"
	DecodeFile   = "decode.onnx"
	ProgramFile  = "program.json"
)

// pieceFile names the file of a program graph.
func pieceFile(key string) string { return "piece-" + key + ".onnx" }

// Manifest describes an artifacts directory: which source it was derived
// from and what the generated graphs expect.
type Manifest struct {
	Version int `json:"version"`
	// Source is the path of the source model as given.
	Source string `json:"source"`
	// Fingerprint is the SHA-256 of the source .onnx file and of every
	// external data file it names; artifacts are rebuilt when it changes.
	Fingerprint string `json:"fingerprint"`
	// Selection is the --train / --freeze choice the graphs were built for.
	Selection string `json:"selection"`
	// LoRA, when set, is the low-rank adaptation the graphs were built
	// for: Weights are then the adapters' factors and Frozen every
	// parameter of the source.
	LoRA *LoRAManifest `json:"lora,omitempty"`
	// Layers, KVHeads, HeadDim and Vocab are the source's signature.
	Layers  int `json:"layers"`
	KVHeads int `json:"kv_heads"`
	HeadDim int `json:"head_dim"`
	Vocab   int `json:"vocab"`
	// HasPositionIDs is false for exports without a position_ids input
	// (the graph derives positions itself; the training graph is fed
	// without them).
	HasPositionIDs bool `json:"has_position_ids"`
	// Weights are the trained parameters, inputs of every graph, in store
	// order; Reason says what made each one a parameter.
	Weights []WeightInfo `json:"weights"`
	// Frozen are the parameters that are not trained (Reason says why):
	// inputs of every graph too, fed from a store of their own.
	Frozen []WeightInfo `json:"frozen"`
	// Constants are the float initializers of more than one element that
	// are not parameters (buffers such as RoPE frequencies), with the
	// reason; they stay inside the graphs. Scalars counts the one-element
	// constants (epsilons, scales, fill values) that stay too.
	Constants []WeightInfo `json:"constants"`
	Scalars   int          `json:"scalars"`
	// Ties are parameters of the source that were exact copies of another
	// (a tied LM head written twice by the exporter): the graphs read the
	// kept one, and Export writes it back into the copy.
	Ties []lmgraph.Tie `json:"ties,omitempty"`
	// Rollout and Sample name the graph files in the directory: the
	// source with its parameters as inputs (full-sequence logits) and the
	// same with last-position logits only (for sampling). Program is the
	// training program (blocks.Program, as JSON; its graphs are the
	// piece-*.onnx files).
	Rollout string `json:"rollout"`
	Sample  string `json:"sample"`
	Program string `json:"program"`
	// Decode names the decode graph (inPlaceDecode: the sampling graph
	// for calls in which every row takes all the call's positions over a
	// past, writing the cache in place), empty
	// when the export's attention does not have the form it rewrites.
	Decode string `json:"decode,omitempty"`
	// Decoding is what of config.json the decode graph was made with
	// (decodingKey): artifacts made under another config.json are
	// rebuilt, though the model's fingerprint is the same.
	Decoding string `json:"decoding"`
	// Tying is config.json's tie_word_embeddings the ties were found
	// under (tyingKey): artifacts made under another setting are rebuilt,
	// as Export reads the ties from config.json as it is.
	Tying string `json:"tying"`
	// Files maps each generated file to its SHA-256, so that a damaged
	// artifacts directory is detected and rebuilt.
	Files map[string]string `json:"files"`
}

// LoRAManifest is the LoRA configuration of a Manifest and its adapters.
type LoRAManifest struct {
	lmgraph.LoRA
	Adapters []lmgraph.Adapter `json:"adapters"`
}

// WeightInfo is one tensor of a Manifest.
type WeightInfo struct {
	Name   string  `json:"name"`
	Shape  []int64 `json:"shape"`
	DType  string  `json:"dtype"`
	Reason string  `json:"reason,omitempty"`
}

// NumParams returns the number of values of the tensors.
func NumParams(ws []WeightInfo) int {
	n := 0
	for _, w := range ws {
		n += int(onnx.NumElements(w.Shape))
	}
	return n
}

// Artifacts are an opened artifacts directory.
type Artifacts struct {
	Dir      string
	Manifest Manifest
	// Rebuilt is true when the graphs were (re)generated by this call.
	Rebuilt bool
	// hf is config.json beside the source, as read while preparing.
	hf HFConfig
	// program is the training program as PrepareArtifacts read it with
	// the directory locked; nil where the caller holds the lock and
	// Program reads the files.
	program *blocks.Program
}

// RolloutPath returns the rollout graph's path (full-sequence logits).
func (a *Artifacts) RolloutPath() string { return filepath.Join(a.Dir, a.Manifest.Rollout) }

// SamplePath returns the sampling graph's path (last-position logits).
func (a *Artifacts) SamplePath() string { return filepath.Join(a.Dir, a.Manifest.Sample) }

// DecodePath returns the decode graph's path, or "" when the artifacts
// have none (Manifest.Decode).
func (a *Artifacts) DecodePath() string {
	if a.Manifest.Decode == "" {
		return ""
	}
	return filepath.Join(a.Dir, a.Manifest.Decode)
}

// Program returns the training program and its graphs: as
// PrepareArtifacts read them before releasing the directory's lock (a
// process rebuilding the directory for another model afterwards changes
// nothing here), else read from the directory now.
func (a *Artifacts) Program() (*blocks.Program, error) {
	if a.program != nil {
		return a.program, nil
	}
	raw, err := os.ReadFile(filepath.Join(a.Dir, a.Manifest.Program))
	if err != nil {
		return nil, fmt.Errorf("model: artifacts: %w", err)
	}
	var p blocks.Program
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, fmt.Errorf("model: artifacts: %s: %w", filepath.Join(a.Dir, a.Manifest.Program), err)
	}
	p.Graphs = map[string][]byte{}
	keys := []string{p.Head.Train, p.Head.TrainLimited, p.Head.Stats, p.Head.StatsLimited, p.Head.Grad}
	for _, pc := range p.Pieces() {
		keys = append(keys, pc.Forward, pc.Backward)
	}
	for _, k := range keys {
		if k == "" || p.Graphs[k] != nil {
			continue
		}
		if p.Graphs[k], err = os.ReadFile(filepath.Join(a.Dir, pieceFile(k))); err != nil {
			return nil, fmt.Errorf("model: artifacts: %w", err)
		}
	}
	return &p, nil
}

// ArtifactOptions configures PrepareArtifacts. The zero value trains every
// parameter.
type ArtifactOptions struct {
	// Selection chooses the trained parameters among the graph's
	// parameters (--train, --freeze).
	Selection lmgraph.Selection
	// LoRA, when enabled, trains low-rank adapters of the targeted
	// projections instead, every parameter frozen (Selection must then
	// be empty).
	LoRA lmgraph.LoRA
	// Waiting, when not nil, is told when the artifacts directory is
	// locked by another process long enough to say so (lockDir).
	Waiting io.Writer
}

// key identifies the choice of trained parameters in a manifest.
func (o ArtifactOptions) key() string {
	if o.LoRA.Enabled() {
		return o.LoRA.String()
	}
	return o.Selection.String()
}

// PrepareArtifacts returns the artifacts of the causal LM at src, cached in
// dir: reused while the manifest's version, the source's fingerprint, the
// selection and the generated files' checksums match, else rebuilt: the
// rollout graph (src with its parameters turned into inputs) and the
// training program (blocks.Split of autodiff.ForwardGraph). Which
// initializers are
// parameters is decided from the graph (lmgraph.Classify); exact copies of
// a parameter are tied to it unless config.json beside src says
// tie_word_embeddings is false. The directory is written file by file
// through temporary names, the manifest last, so an interrupted build is
// redone rather than half used. Only the graph of src is read, not its
// weights (except to compare tie candidates). The directory is locked
// while it is checked and built (lockArtifacts), so processes preparing
// it at once, for one model or for different ones, never mix their files;
// the training program is read before the lock is released (Program).
// A wait for the lock ends when ctx is done, and so does a build, before
// its next graph is made or written, with an error wrapping ctx.Err():
// the files already written, each whole, leave a manifest whose
// checksums they fail (or none), so the next call rebuilds.
func PrepareArtifacts(ctx context.Context, src, dir string, opt ArtifactOptions) (*Artifacts, error) {
	unlock, err := lockArtifacts(ctx, dir, opt.Waiting)
	if err != nil {
		return nil, err
	}
	defer unlock()
	a, err := prepareArtifacts(ctx, src, dir, opt)
	if err != nil {
		return nil, err
	}
	if a.program, err = a.Program(); err != nil {
		return nil, err
	}
	return a, nil
}

// lockArtifacts creates the artifacts directory dir and takes its lock
// (lockDir), which a reader holds until it has read the files it uses: a
// process preparing the directory for another model waits for it rather
// than replacing the files under it; a long wait is told to waiting, and
// ends when ctx is done.
func lockArtifacts(ctx context.Context, dir string, waiting io.Writer) (release func(), err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("model: artifacts: %w", err)
	}
	return lockDir(ctx, dir, waiting)
}

// prepareArtifacts is PrepareArtifacts with the directory's lock held.
func prepareArtifacts(ctx context.Context, src, dir string, opt ArtifactOptions) (*Artifacts, error) {
	fp, err := Fingerprint(src)
	if err != nil {
		return nil, err
	}
	hf, _, err := ReadHFConfig(src)
	if err != nil {
		return nil, err
	}
	if m, err := readManifest(dir); err == nil && m.Version == ArtifactsVersion && m.Fingerprint == fp &&
		m.Selection == opt.key() && m.Decoding == decodingKey(hf) && m.Tying == tyingKey(hf) && filesIntact(dir, m.Files) {
		if err := checkConfigGraph(src, hf, m.Layers, m.KVHeads, m.HeadDim, m.Vocab); err != nil {
			return nil, err
		}
		return &Artifacts{Dir: dir, Manifest: *m, hf: hf}, nil
	}
	stopped := func() error {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("model: artifacts of %s: %w", src, err)
		}
		return nil
	}
	if err := stopped(); err != nil {
		return nil, err
	}
	src1, err := onnx.LoadGraph(src)
	if err != nil {
		return nil, fmt.Errorf("model: %w", err)
	}
	g := src1.Graph()
	sig, err := ReadSignature(g, src)
	if err != nil {
		return nil, err
	}
	if err := checkConfigGraph(src, hf, sig.Layers, sig.KVHeads, sig.HeadDim, sig.Vocab); err != nil {
		return nil, err
	}
	if err := checkOperators(src1, src); err != nil {
		return nil, err
	}
	if len(sig.Weights) > 0 {
		return nil, fmt.Errorf("model: %s already has weight inputs (%s...); give the original export", src, sig.Weights[0].Name)
	}
	cls, ties, err := parameters(src1, src)
	if err != nil {
		return nil, err
	}
	trained, frozen, err := opt.Selection.Select(cls)
	if err != nil {
		return nil, fmt.Errorf("model: %s: %w", src, err)
	}
	var adapters []lmgraph.Adapter
	if opt.LoRA.Enabled() {
		if opt.Selection.Train != nil || opt.Selection.Freeze != nil {
			return nil, fmt.Errorf("model: %s: LoRA trains adapters only; --train and --freeze do not apply", src)
		}
		if adapters, err = LoRAAdapters(src1, opt.LoRA); err != nil {
			return nil, fmt.Errorf("model: %s: %w", src, err)
		}
		for _, c := range trained {
			frozen = append(frozen, lmgraph.Frozen{Name: c.Name, Shape: c.Shape, Reason: "base weight, frozen under LoRA"})
		}
		trained = nil
	}
	man := Manifest{Version: ArtifactsVersion, Source: src, Fingerprint: fp, Selection: opt.key(), Decoding: decodingKey(hf), Tying: tyingKey(hf),
		Layers: sig.Layers, KVHeads: sig.KVHeads, HeadDim: sig.HeadDim, Vocab: sig.Vocab, HasPositionIDs: sig.HasPositionIDs, Ties: ties,
		Rollout: RolloutFile, Sample: SampleFile, Program: ProgramFile, Files: map[string]string{}}
	isTrained, isFrozen := map[string]bool{}, map[string]bool{}
	for _, c := range trained {
		isTrained[c.Name] = true
		man.Weights = append(man.Weights, WeightInfo{Name: c.Name, Shape: c.Shape, DType: "F32", Reason: c.Reason})
	}
	if opt.LoRA.Enabled() {
		man.LoRA = &LoRAManifest{LoRA: opt.LoRA, Adapters: adapters}
		man.Weights = loraWeights(adapters, opt.LoRA.Rank)
		for _, w := range man.Weights {
			isTrained[w.Name] = true
		}
	}
	for _, f := range frozen {
		isFrozen[f.Name] = true
		man.Frozen = append(man.Frozen, WeightInfo{Name: f.Name, Shape: f.Shape, DType: "F32", Reason: f.Reason})
	}
	for _, c := range cls {
		switch {
		case c.Parameter:
		case c.Reason == lmgraph.ReasonScalar:
			man.Scalars++
		case c.Reason != lmgraph.ReasonNotFloat:
			man.Constants = append(man.Constants, WeightInfo{Name: c.Name, Shape: c.Shape, DType: c.DType.String(), Reason: c.Reason})
		}
	}
	// Parameters become graph inputs fed from the stores: drop their data
	// so the graph copies below stay small (a 4B model's initializers are
	// 16 GB in fp32). Constants stay, read into the graph if external, so
	// that the artifacts do not depend on the source's directory.
	isParam := func(name string) bool { return isTrained[name] || isFrozen[name] }
	for _, t := range g.GetInitializer() {
		if isParam(t.GetName()) {
			t.RawData, t.FloatData, t.ExternalData, t.DataLocation = nil, nil, nil, nil
		}
	}
	if err := src1.InlineAll(isParam); err != nil {
		return nil, fmt.Errorf("model: %w", err)
	}
	if opt.LoRA.Enabled() {
		if err := lmgraph.AddLoRA(g, adapters, opt.LoRA); err != nil {
			return nil, fmt.Errorf("model: %s: %w", src, err)
		}
	}
	if err := stopped(); err != nil {
		return nil, err
	}
	lg, err := autodiff.ForwardGraph(g, autodiff.LMOptions{
		Trainable: func(t *onnxpb.TensorProto) bool { return isTrained[t.GetName()] },
		Frozen:    func(t *onnxpb.TensorProto) bool { return isFrozen[t.GetName()] },
	})
	if err != nil {
		return nil, fmt.Errorf("model: forward graph of %s: %w", src, err)
	}
	if got := lg.WeightNames(); !slices.Equal(got, weightNames(man.Weights)) {
		return nil, fmt.Errorf("model: forward graph of %s: weights %v, want %v", src, got, weightNames(man.Weights))
	}
	fwd := proto.Clone(src1.Proto).(*onnxpb.ModelProto)
	fwd.Graph = lg.Graph
	if err := stopped(); err != nil {
		return nil, err
	}
	prog, err := blocks.Split(fwd, weightNames(man.Weights), weightNames(man.Frozen))
	if err != nil {
		return nil, fmt.Errorf("model: training program of %s: %w", src, err)
	}
	inputs := append(weightNames(man.Weights), weightNames(man.Frozen)...)
	rollout, err := weightsToInputs(src1.Proto, inputs)
	if err != nil {
		return nil, fmt.Errorf("model: rollout graph of %s: %w", src, err)
	}
	type graphFile struct {
		name string
		m    *onnxpb.ModelProto
	}
	sample, decode := samplingGraphs(rollout, sig, hf)
	graphs := []graphFile{{RolloutFile, rollout}, {SampleFile, sample}}
	if decode != nil {
		man.Decode = DecodeFile
		graphs = append(graphs, graphFile{DecodeFile, decode})
	}
	for _, f := range graphs {
		if err := stopped(); err != nil {
			return nil, err
		}
		path := filepath.Join(dir, f.name)
		if err := onnx.Save(path, &onnx.Model{Proto: f.m}, onnx.SaveOptions{}); err != nil {
			return nil, fmt.Errorf("model: artifacts: %w", err)
		}
		if man.Files[f.name], err = fileSHA256(path); err != nil {
			return nil, err
		}
	}
	write := func(name string, b []byte) error {
		if err := stopped(); err != nil {
			return err
		}
		if err := atomicfile.WriteFile(filepath.Join(dir, name), b, 0o666); err != nil {
			return fmt.Errorf("model: artifacts: %w", err)
		}
		sum := sha256.Sum256(b)
		man.Files[name] = hex.EncodeToString(sum[:])
		return nil
	}
	for key, raw := range prog.Graphs {
		if err := write(pieceFile(key), raw); err != nil {
			return nil, err
		}
	}
	pj, err := json.MarshalIndent(prog, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := write(ProgramFile, pj); err != nil {
		return nil, err
	}
	b, err := json.MarshalIndent(man, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := atomicfile.WriteFile(filepath.Join(dir, ManifestFile), b, 0o666); err != nil {
		return nil, fmt.Errorf("model: artifacts: %w", err)
	}
	removeStalePieces(dir, man.Files)
	return &Artifacts{Dir: dir, Manifest: man, Rebuilt: true, hf: hf}, nil
}

// checkConfigGraph refuses the config.json beside the model at src (hf)
// where a size it states is not the graph's (layers, KV heads, head
// width, vocabulary: its Signature's): another model's config.json,
// whose context length, head count and shapes the commands would take
// for this model's. A size the file does not state is not compared.
func checkConfigGraph(src string, hf HFConfig, layers, kvHeads, headDim, vocab int) error {
	var diffs []string
	for _, f := range []struct {
		field       string
		stated, has int
	}{
		{"num_hidden_layers", hf.NumHiddenLayers, layers},
		{"num_key_value_heads", hf.NumKeyValueHeads, kvHeads},
		{"head_dim", hf.HeadDim, headDim},
		{"vocab_size", hf.VocabSize, vocab},
	} {
		if f.stated != 0 && f.has > 0 && f.stated != f.has {
			diffs = append(diffs, fmt.Sprintf("%s %d, but the graph has %d", f.field, f.stated, f.has))
		}
	}
	if len(diffs) == 0 {
		return nil
	}
	return fmt.Errorf("model: %s: %s: config.json does not describe the graph (another model's config.json?)", filepath.Join(filepath.Dir(src), ConfigFile), strings.Join(diffs, "; "))
}

// removeStalePieces removes the program graphs in dir (piece-*.onnx) that
// the manifest's files do not name: an earlier build's, for another
// model or other settings (graph names are content hashes, so a rebuild
// writes beside them rather than over them). The directory's lock is
// held, and every reader reads the files it uses under it, so none
// still needs them. Errors are ignored: they only leave litter behind.
func removeStalePieces(dir string, files map[string]string) {
	stale, err := filepath.Glob(filepath.Join(dir, pieceFile("*")))
	if err != nil {
		return
	}
	for _, p := range stale {
		if _, ok := files[filepath.Base(p)]; !ok {
			_ = os.Remove(p)
		}
	}
}

// decodingKey is what of hf the decode graph depends on (samplingGraphs).
func decodingKey(hf HFConfig) string {
	return fmt.Sprintf("heads %d, sliding window %t", hf.NumAttentionHeads, hf.SlidingWindowActive())
}

// tyingKey is what of hf the ties depend on (parameters): whether
// config.json says tie_word_embeddings, and what.
func tyingKey(hf HFConfig) string {
	if hf.TieWordEmbeddings == nil {
		return "tie_word_embeddings unset"
	}
	return fmt.Sprintf("tie_word_embeddings %t", *hf.TieWordEmbeddings)
}

// samplingGraphs returns the sampling graph, the rollout graph with
// last-position logits and, where the export allows, the new keys and
// values as outputs of their own and attention that does not repeat the
// cache over the query heads (groupedAttention); and the decode graph
// (inPlaceDecode), or nil where the export's attention has another form
// or config.json (hf, zero when there is none) gives it a sliding
// window.
func samplingGraphs(rollout *onnxpb.ModelProto, sig *Signature, hf HFConfig) (sample, decode *onnxpb.ModelProto) {
	m := lastPositionLogits(rollout)
	if withNewKV(m, sig.Layers) {
		// GroupQueryAttention replaces the export's mask with its own
		// causal one over each row's length: a sliding window would be
		// lost.
		if !hf.SlidingWindowActive() {
			decode = inPlaceDecode(m, sig, hf.NumAttentionHeads)
		}
		groupedAttention(m, sig)
	}
	return m, decode
}

// parameters classifies the initializers of m (loaded from src) and ties
// exact copies of a parameter to it (lmgraph.FindTies, applied to m's
// graph) unless config.json beside src says tie_word_embeddings is false.
// The classification it returns leaves the tied copies out.
func parameters(m *onnx.Model, src string) ([]lmgraph.Initializer, []lmgraph.Tie, error) {
	cls := lmgraph.Classify(m.Graph())
	var params []string
	for _, c := range cls {
		if c.Parameter {
			if c.DType != onnx.Float32 {
				return nil, nil, fmt.Errorf("model: %s: weight %q has type %v: spiral runs and trains float32 weights; export the model in float32 (optimum-cli export onnx's default, not --dtype fp16 or bf16)", src, c.Name, c.DType)
			}
			params = append(params, c.Name)
		}
	}
	hf, _, err := ReadHFConfig(src)
	if err != nil {
		return nil, nil, err
	}
	if hf.TieWordEmbeddings != nil && !*hf.TieWordEmbeddings {
		return cls, nil, nil
	}
	ties, err := lmgraph.FindTies(m, params)
	if err != nil {
		return nil, nil, fmt.Errorf("model: %s: %w", src, err)
	}
	if err := lmgraph.ApplyTies(m.Graph(), ties); err != nil {
		return nil, nil, fmt.Errorf("model: %s: %w", src, err)
	}
	copies := map[string]bool{}
	for _, t := range ties {
		copies[t.Copy] = true
	}
	return slices.DeleteFunc(cls, func(c lmgraph.Initializer) bool { return copies[c.Name] }), ties, nil
}

// TrainedParameters returns the names of the parameters of the model at
// src that sel trains, as PrepareArtifacts picks them (tied copies left
// out), reading only its graph: for checking a run directory's
// checkpoints before its artifacts are built.
func TrainedParameters(src string, sel lmgraph.Selection) ([]string, error) {
	m, err := onnx.LoadGraph(src)
	if err != nil {
		return nil, fmt.Errorf("model: %w", err)
	}
	trained, err := selectParameters(m, src, sel)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(trained))
	for i, c := range trained {
		names[i] = c.Name
	}
	return names, nil
}

// selectParameters returns the parameters of m, the graph of the model
// at src, that sel trains, as PrepareArtifacts picks them (its ties
// applied to m, tied copies left out).
func selectParameters(m *onnx.Model, src string, sel lmgraph.Selection) ([]lmgraph.Initializer, error) {
	cls, _, err := parameters(m, src)
	if err != nil {
		return nil, err
	}
	trained, _, err := sel.Select(cls)
	if err != nil {
		return nil, fmt.Errorf("model: %s: %w", src, err)
	}
	return trained, nil
}

// TrainedHF is what a selection trains of a model's graph
// (TrainedHFParameters).
type TrainedHF struct {
	// Sizes are the trained parameters' numbers of values, in the
	// graph's order.
	Sizes []int64
	// Names are their transformers names (HFParams), nil when the
	// graph's parameters have none (Unnamed).
	Names []string
	// Unnamed is why Names is nil: HFParams' refusal of a graph whose
	// parameters it cannot all name, which train does not need.
	Unnamed error
}

// TrainedHFParameters returns the parameters of the model at src that
// sel trains, selected as PrepareArtifacts selects them, by the graph's
// own names (an optimum export's projections are onnx::MatMul_N), tied
// copies left out: their numbers of values and, where the graph gives
// them, their transformers names (HFParams): for spiral plan, which
// sizes the parameters by config.json under transformers' names. A
// selection train refuses is refused with the *lmgraph.SelectionError
// train's is.
func TrainedHFParameters(src string, sel lmgraph.Selection) (TrainedHF, error) {
	m, err := onnx.LoadGraph(src)
	if err != nil {
		return TrainedHF{}, fmt.Errorf("model: %w", err)
	}
	// Mapped before parameters ties the copies, on the graph as exported.
	hf, unnamed := HFParams(m, false)
	trained, err := selectParameters(m, src, sel)
	if err != nil {
		return TrainedHF{}, err
	}
	hfName := map[string]string{}
	for _, p := range hf {
		hfName[p.Initializer] = p.Name
	}
	var t TrainedHF
	for _, c := range trained {
		t.Sizes = append(t.Sizes, onnx.NumElements(c.Shape))
		name, ok := hfName[c.Name]
		if !ok && unnamed == nil {
			unnamed = fmt.Errorf("model: %s: parameter %q has no transformers name", src, c.Name)
		}
		t.Names = append(t.Names, name)
	}
	if unnamed != nil {
		t.Names, t.Unnamed = nil, unnamed
	}
	return t, nil
}

// Ties returns the tied copies among the parameters of the model at src,
// as PrepareArtifacts finds them (for Export from a checkpoint).
func Ties(src string) ([]lmgraph.Tie, error) {
	m, err := onnx.LoadGraph(src)
	if err != nil {
		return nil, fmt.Errorf("model: %w", err)
	}
	_, ties, err := parameters(m, src)
	return ties, err
}

func weightNames(ws []WeightInfo) []string {
	out := make([]string, len(ws))
	for i, w := range ws {
		out[i] = w.Name
	}
	return out
}

// filesIntact reports whether every file of sums exists in dir with its
// SHA-256 (and that there is at least one).
func filesIntact(dir string, sums map[string]string) bool {
	if len(sums) == 0 {
		return false
	}
	for name, want := range sums {
		got, err := fileSHA256(filepath.Join(dir, name))
		if err != nil || got != want {
			return false
		}
	}
	return true
}

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("model: %w", err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("model: hash %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func readManifest(dir string) (*Manifest, error) {
	b, err := os.ReadFile(filepath.Join(dir, ManifestFile))
	if err != nil {
		return nil, err
	}
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("model: %s: %w", filepath.Join(dir, ManifestFile), err)
	}
	return &m, nil
}

// weightsToInputs returns a copy of m whose initializers named in names
// are graph inputs instead (float32, their static shapes), in that order
// after the existing inputs.
func weightsToInputs(m *onnxpb.ModelProto, names []string) (*onnxpb.ModelProto, error) {
	out := proto.Clone(m).(*onnxpb.ModelProto)
	g := out.GetGraph()
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	byName := map[string]*onnxpb.TensorProto{}
	kept := g.Initializer[:0]
	for _, t := range g.Initializer {
		if want[t.GetName()] {
			byName[t.GetName()] = t
			continue
		}
		kept = append(kept, t)
	}
	g.Initializer = kept
	// Old-IR graphs also list initializers among the inputs.
	inputs := g.Input[:0]
	for _, in := range g.Input {
		if !want[in.GetName()] {
			inputs = append(inputs, in)
		}
	}
	g.Input = inputs
	for _, n := range names {
		t, ok := byName[n]
		if !ok {
			return nil, fmt.Errorf("no initializer %q", n)
		}
		shape := &onnxpb.TensorShapeProto{}
		for _, d := range t.GetDims() {
			shape.Dim = append(shape.Dim, &onnxpb.TensorShapeProto_Dimension{Value: &onnxpb.TensorShapeProto_Dimension_DimValue{DimValue: d}})
		}
		g.Input = append(g.Input, &onnxpb.ValueInfoProto{Name: proto.String(n), Type: &onnxpb.TypeProto{Value: &onnxpb.TypeProto_TensorType{
			TensorType: &onnxpb.TypeProto_Tensor{ElemType: proto.Int32(t.GetDataType()), Shape: shape}}}})
	}
	return out, nil
}

// InitialWeights reads the parameters named by man from the source model
// into two new stores, the trained weights and the frozen ones (manifest
// order), each value read from the file straight into its store. A
// non-finite value is an error naming the tensor and the element. Under
// LoRA the trained weights are the adapters, initialized by InitAdapters
// with seed. It stops between tensors when ctx is done (the weights of a
// real model take minutes to read), with an error wrapping ctx.Err().
func InitialWeights(ctx context.Context, src string, man Manifest, seed uint64) (weights, frozen *params.Store, err error) {
	m, err := onnx.LoadGraph(src)
	if err != nil {
		return nil, nil, fmt.Errorf("model: %w", err)
	}
	byName := map[string]*onnxpb.TensorProto{}
	for _, t := range m.Graph().GetInitializer() {
		byName[t.GetName()] = t
	}
	load := func(ws []WeightInfo) (*params.Store, error) {
		specs := make([]params.Spec, len(ws))
		for i, w := range ws {
			specs[i] = params.Spec{Name: w.Name, Shape: w.Shape}
			// The store is sized by the shapes: a tensor whose dims
			// overstate its data is refused before it is allocated.
			if t := byName[w.Name]; t != nil {
				if err := m.CheckData(t); err != nil {
					return nil, fmt.Errorf("model: %s: weight %q: %w", src, w.Name, err)
				}
			}
		}
		s, err := params.NewStore(specs)
		if err != nil {
			return nil, fmt.Errorf("model: %s: %w", src, err)
		}
		for i, w := range ws {
			if err := ctx.Err(); err != nil {
				return nil, fmt.Errorf("model: %s: read the weights: %w", src, err)
			}
			t := byName[w.Name]
			if t == nil {
				return nil, fmt.Errorf("model: %s has no initializer %q named by the artifacts manifest", src, w.Name)
			}
			data := s.At(i).Data
			if err := m.ReadFloat32s(t, data); err != nil {
				return nil, fmt.Errorf("model: %s: weight %q: %w", src, w.Name, err)
			}
			for k, v := range data {
				if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
					return nil, fmt.Errorf("model: %s: weight %q holds %v at element %d; refusing a model with non-finite weights", src, w.Name, v, k)
				}
			}
		}
		return s, nil
	}
	// The frozen weights first: under LoRA the adapters' shapes come
	// from their bases', checked there.
	if frozen, err = load(man.Frozen); err != nil {
		return nil, nil, err
	}
	if man.LoRA != nil {
		specs := make([]params.Spec, len(man.Weights))
		for i, w := range man.Weights {
			specs[i] = params.Spec{Name: w.Name, Shape: w.Shape}
		}
		if weights, err = params.NewStore(specs); err != nil {
			return nil, nil, fmt.Errorf("model: %s: %w", src, err)
		}
		if err := InitAdapters(weights, man.LoRA.Adapters, seed); err != nil {
			return nil, nil, err
		}
	} else if weights, err = load(man.Weights); err != nil {
		return nil, nil, err
	}
	return weights, frozen, nil
}

// sourceWindows and sourceWindow size SourceID's samples of each external
// data file: 16 windows of 64 KiB, evenly spaced.
const (
	sourceWindows = 16
	sourceWindow  = 64 << 10
)

// SourceID identifies a model by content, wherever its files are and
// whatever their times: the SHA-256 of the .onnx file (which holds the
// weights of an inline export) and, for every external data file it
// names, its name, size and 16 evenly spaced 64 KiB windows of its data
// (two fine-tunes of one export differ everywhere in their weights, and
// 1 MiB per file is cheap to read). Checkpoints record it, so that a
// checkpoint is only ever loaded into the model it was trained from.
func SourceID(path string) (string, error) {
	h := sha256.New()
	files, err := hashModel(h, path)
	if err != nil {
		return "", err
	}
	for _, f := range files {
		p := filepath.Join(filepath.Dir(path), f)
		fh, err := os.Open(p)
		if err != nil {
			return "", fmt.Errorf("model: %s: external data: %w", path, err)
		}
		st, err := fh.Stat()
		if err != nil {
			fh.Close()
			return "", fmt.Errorf("model: %s: external data: %w", path, err)
		}
		fmt.Fprintf(h, "\x00%s\x00%d", f, st.Size())
		buf := make([]byte, sourceWindow)
		for i := range int64(sourceWindows) {
			off := max(0, (st.Size()-sourceWindow)*i/(sourceWindows-1))
			n, err := fh.ReadAt(buf, off)
			if err != nil && !errors.Is(err, io.EOF) {
				fh.Close()
				return "", fmt.Errorf("model: %s: read %s: %w", path, p, err)
			}
			h.Write(buf[:n])
		}
		fh.Close()
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// hashModel streams the .onnx file at path into h and returns, sorted,
// the external data files its tensors name (its inline data is never
// held in memory).
func hashModel(h io.Writer, path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("model: %w", err)
	}
	defer f.Close()
	n, err := io.Copy(h, f)
	if err != nil {
		return nil, fmt.Errorf("model: read %s: %w", path, err)
	}
	if n == 0 {
		return nil, fmt.Errorf("model: %s: the file is empty (0 bytes), not an ONNX model", path)
	}
	return externalFiles(path)
}

// externalFiles lists, sorted, the external data files the tensors of
// the model at path name.
func externalFiles(path string) ([]string, error) {
	m, err := onnx.LoadGraph(path)
	if err != nil {
		return nil, fmt.Errorf("model: %w", err)
	}
	seen := map[string]bool{}
	var files []string
	for _, t := range m.Graph().GetInitializer() {
		if m.StoredInline(t) {
			continue
		}
		for _, kv := range t.GetExternalData() {
			if kv.GetKey() == "location" && !seen[kv.GetValue()] {
				seen[kv.GetValue()] = true
				files = append(files, kv.GetValue())
			}
		}
	}
	slices.Sort(files)
	return files, nil
}

// Fingerprint identifies a model: the SHA-256 of the .onnx file and the
// name, size and modification time of every external data file its
// tensors name (hashing multi-gigabyte weight files on every start would
// cost more than the cache saves).
func Fingerprint(path string) (string, error) {
	h := sha256.New()
	files, err := hashModel(h, path)
	if err != nil {
		return "", err
	}
	for _, f := range files {
		p := filepath.Join(filepath.Dir(path), f)
		st, err := os.Stat(p)
		if err != nil {
			return "", fmt.Errorf("model: %s: external data: %w", path, err)
		}
		fmt.Fprintf(h, "\x00%s\x00%d\x00%d", f, st.Size(), st.ModTime().UnixNano())
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
