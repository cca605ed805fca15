package model

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"

	"github.com/spiral-rl/spiral/model/atomicfile"
	"github.com/spiral-rl/spiral/model/lmgraph"
	"github.com/spiral-rl/spiral/model/onnx"
	"github.com/spiral-rl/spiral/model/params"
)

// LoRA is in the graphs, not merged into the weights: every generated
// graph (rollout, sampling, the training program) computes x W + s x A B
// with the frozen W read from the one copy of the base weights. Merging
// for generation would need a second copy of every targeted weight (or
// rewriting the base after every step), while the adapter products cost
// about 2 x rank / hidden more multiply-adds (1.3% for rank 16 on
// Qwen3-4B). Exports merge (W + s A B) once per tensor.

// loraModuleRE matches the transformers names of the projections LoRA can
// adapt: model.layers.N.(self_attn|mlp).X_proj.weight.
var loraModuleRE = regexp.MustCompile(`^(model\.layers\.\d+\.(?:self_attn|mlp)\.([a-z]+_proj))\.weight$`)

// LoRAAdapters returns the adapters of l on the causal LM m, in
// initializer order: one for each parameter whose transformers module (see
// HFParams) is a projection l targets and which a MatMul reads as its
// right operand. It fails when the graph names no modules (dynamo
// exports), or a target matches nothing.
func LoRAAdapters(m *onnx.Model, l lmgraph.LoRA) ([]lmgraph.Adapter, error) {
	if err := l.Validate(); err != nil {
		return nil, fmt.Errorf("model: %w", err)
	}
	hp, err := HFParams(m, false)
	if err != nil {
		return nil, fmt.Errorf("model: lora: %w", err)
	}
	dims := map[string][]int64{}
	for _, t := range m.Graph().GetInitializer() {
		dims[t.GetName()] = t.GetDims()
	}
	var out []lmgraph.Adapter
	found := map[string]bool{}
	for _, p := range hp {
		s := loraModuleRE.FindStringSubmatch(p.Name)
		if s == nil || !slices.Contains(l.Targets, s[2]) {
			continue
		}
		d := dims[p.Initializer]
		if !p.Transposed || len(d) != 2 {
			return nil, fmt.Errorf("model: lora: %s (initializer %q, shape %v) is not a MatMul's [in, out] operand", s[1], p.Initializer, d)
		}
		// A rank past the projection's smaller side adapts nothing a
		// full-rank one does not, and its factors (rank x in + rank x out
		// floats, with AdamW's moments) would only take memory.
		if r := int64(l.Rank); r > min(d[0], d[1]) {
			return nil, fmt.Errorf("model: lora: %w", &LoRARankError{Rank: l.Rank, Module: s[1], In: d[0], Out: d[1]})
		}
		a, b := lmgraph.AdapterNames(s[1])
		out = append(out, lmgraph.Adapter{Module: s[1], Base: p.Initializer, A: a, B: b, In: d[0], Out: d[1]})
		found[s[2]] = true
	}
	for _, t := range l.Targets {
		if !found[t] {
			return nil, fmt.Errorf("model: lora: target %s matches no projection of the graph", t)
		}
	}
	return out, nil
}

// LoRARankError is LoRAAdapters' refusal of a rank past the smaller side
// of the projection Module ([In, Out]).
type LoRARankError struct {
	Rank    int
	Module  string
	In, Out int64
}

func (e *LoRARankError) Error() string {
	return fmt.Sprintf("rank %d exceeds %s's [%d, %d]: %s", e.Rank, e.Module, e.In, e.Out, e.Want())
}

// Want says what rank the projection takes.
func (e *LoRARankError) Want() string {
	return fmt.Sprintf("want at most %d, the smaller side, past which an adapter is no more expressive", min(e.In, e.Out))
}

// loraWeights lists the factors of adapters as manifest weights, A then B
// of each adapter.
func loraWeights(adapters []lmgraph.Adapter, rank int) []WeightInfo {
	r := int64(rank)
	var ws []WeightInfo
	for _, a := range adapters {
		ws = append(ws,
			WeightInfo{Name: a.A, Shape: []int64{a.In, r}, DType: "F32", Reason: fmt.Sprintf("LoRA factor A of %s (random init)", a.Module)},
			WeightInfo{Name: a.B, Shape: []int64{r, a.Out}, DType: "F32", Reason: fmt.Sprintf("LoRA factor B of %s (zero init)", a.Module)})
	}
	return ws
}

// InitAdapters sets the factors of adapters in s as peft does: A uniform
// in +-1/sqrt(in) (Kaiming-uniform with a = sqrt(5)), B zero, so the
// adapted model starts equal to the base. The draw is seeded.
func InitAdapters(s *params.Store, adapters []lmgraph.Adapter, seed uint64) error {
	r := rand.New(rand.NewPCG(seed, 0x10ca))
	for _, a := range adapters {
		ta, okA := s.Get(a.A)
		tb, okB := s.Get(a.B)
		if !okA || !okB {
			return fmt.Errorf("model: lora: the store has no factors of %s", a.Module)
		}
		bound := 1 / math.Sqrt(float64(a.In))
		for i := range ta.Data {
			ta.Data[i] = float32((2*r.Float64() - 1) * bound)
		}
		clear(tb.Data)
	}
	return nil
}

// sourceAdapters loads the graph of the model at src, with its ties
// applied as PrepareArtifacts applies them, and finds the adapters of l
// on it, refusing what PrepareArtifacts refuses, in its words.
func sourceAdapters(src string, l lmgraph.LoRA) (*onnx.Model, []lmgraph.Adapter, error) {
	m, err := onnx.LoadGraph(src)
	if err != nil {
		return nil, nil, fmt.Errorf("model: %w", err)
	}
	if _, _, err := parameters(m, src); err != nil {
		return nil, nil, err
	}
	as, err := LoRAAdapters(m, l)
	if err != nil {
		return nil, nil, fmt.Errorf("model: %s: %w", src, err)
	}
	return m, as, nil
}

// GraphAdapters returns the adapters of l on the model at src as train
// finds them (PrepareArtifacts: by the transformers module names the
// graph gives its projections) and refuses them: for spiral plan, which
// sizes them by config.json's shapes.
func GraphAdapters(src string, l lmgraph.LoRA) ([]lmgraph.Adapter, error) {
	_, as, err := sourceAdapters(src, l)
	return as, err
}

// loraMerges returns the factors of each adapter of l on the model at
// src, by the name of its base weight.
func loraMerges(src string, l lmgraph.LoRA, adapters *params.Store) (map[string]loraFactors, error) {
	_, as, err := sourceAdapters(src, l)
	if err != nil {
		return nil, err
	}
	merges := make(map[string]loraFactors, len(as))
	for _, a := range as {
		f, err := adapterFactors(a, l, adapters)
		if err != nil {
			return nil, err
		}
		merges[a.Base] = f
	}
	return merges, nil
}

// loraFactors are one adapter's trained factors with its scale.
type loraFactors struct {
	a, b       []float32
	in, r, out int
	scale      float32
}

// adapterFactors finds adapter a's factors in adapters, checking their
// shapes against rank l.Rank.
func adapterFactors(a lmgraph.Adapter, l lmgraph.LoRA, adapters *params.Store) (loraFactors, error) {
	r := l.Rank
	ta, okA := adapters.Get(a.A)
	tb, okB := adapters.Get(a.B)
	if !okA || !okB || !slices.Equal(ta.Shape, []int64{a.In, int64(r)}) || !slices.Equal(tb.Shape, []int64{int64(r), a.Out}) {
		return loraFactors{}, fmt.Errorf("model: lora: the adapters hold no factors of %s with rank %d (A [%d, %d], B [%d, %d])", a.Module, r, a.In, r, r, a.Out)
	}
	return loraFactors{a: ta.Data, b: tb.Data, in: int(a.In), r: r, out: int(a.Out), scale: float32(l.Scale())}, nil
}

// addTo adds scale x A B to the row-major [in, out] base weight w.
func (f loraFactors) addTo(w []float32) { addLowRank(w, f.a, f.b, f.in, f.r, f.out, f.scale) }

// addLowRank adds s x A B to the row-major [in, out] matrix w, A being
// [in, r] and B [r, out].
func addLowRank(w, a, b []float32, in, r, out int, s float32) {
	for i := range in {
		row := w[i*out : (i+1)*out]
		for k := range r {
			c := s * a[i*r+k]
			if c == 0 {
				continue
			}
			for j, v := range b[k*out : (k+1)*out] {
				row[j] += c * v
			}
		}
	}
}

// PEFT adapter files, as the peft library saves and loads them.
const (
	PEFTWeightsFile = "adapter_model.safetensors"
	PEFTConfigFile  = "adapter_config.json"
)

// peftConfig is adapter_config.json: peft's LoraConfig fields for plain
// LoRA (no dropout at inference, no bias, no rsLoRA or DoRA).
type peftConfig struct {
	PEFTType          string         `json:"peft_type"`
	TaskType          string         `json:"task_type"`
	BaseModel         *string        `json:"base_model_name_or_path"` // null when unknown
	R                 int            `json:"r"`
	LoRAAlpha         float64        `json:"lora_alpha"`
	LoRADropout       float64        `json:"lora_dropout"`
	TargetModules     []string       `json:"target_modules"`
	Bias              string         `json:"bias"`
	FanInFanOut       bool           `json:"fan_in_fan_out"`
	InferenceMode     bool           `json:"inference_mode"`
	InitLoRAWeights   bool           `json:"init_lora_weights"`
	UseRSLoRA         bool           `json:"use_rslora"`
	UseDoRA           bool           `json:"use_dora"`
	ModulesToSave     []string       `json:"modules_to_save"`
	LayersToTransform []int          `json:"layers_to_transform"`
	RankPattern       map[string]int `json:"rank_pattern"`
	AlphaPattern      map[string]int `json:"alpha_pattern"`
}

// ExportPEFT writes the adapters of l trained on the model at src as a
// peft adapter directory at dir: adapter_model.safetensors (float32;
// base_model.model.<module>.lora_A.weight [rank, in] and lora_B.weight
// [out, rank], nn.Linear layouts, so A and B transposed) and
// adapter_config.json. base names the base model in the config (its
// base_model_name_or_path: a Hugging Face id or a transformers model
// directory; "" writes null). run, where not "", names the spiral run
// the adapters are of (its directory), recorded in the weights'
// metadata (PEFTRunKey; PEFTRun reads it), so that an export into
// another run's adapter can be told from a re-export. It returns the
// number of tensors written; when ctx ends before the files are moved
// in, dir's are left as they were. The files of dir named in remove (a
// replaced model's) are removed within the commit that moves them in,
// after them, so that a process killed within it leaves their removal
// to atomicfile.FinishKilled rather than them beside the adapter.
func ExportPEFT(ctx context.Context, src string, l lmgraph.LoRA, adapters *params.Store, base, run, dir string, remove ...string) (int, error) {
	_, as, err := sourceAdapters(src, l)
	if err != nil {
		return 0, err
	}
	r := int64(l.Rank)
	var specs []params.Spec
	for _, a := range as {
		specs = append(specs,
			params.Spec{Name: "base_model.model." + a.Module + ".lora_A.weight", Shape: []int64{r, a.In}},
			params.Spec{Name: "base_model.model." + a.Module + ".lora_B.weight", Shape: []int64{a.Out, r}})
	}
	out, err := params.NewStore(specs)
	if err != nil {
		return 0, err
	}
	for i, a := range as {
		for k, name := range []string{a.A, a.B} {
			t, ok := adapters.Get(name)
			dst := out.At(2*i + k)
			want := []int64{dst.Shape[1], dst.Shape[0]}
			if !ok || !slices.Equal(t.Shape, want) {
				return 0, fmt.Errorf("model: peft export: the adapters hold no %s of shape %v", name, want)
			}
			transposeInto(dst.Data, t.Data, int(want[0]), int(want[1]))
		}
	}
	var baseName *string
	if base != "" {
		baseName = &base
	}
	cfg := peftConfig{PEFTType: "LORA", TaskType: "CAUSAL_LM", BaseModel: baseName, R: l.Rank, LoRAAlpha: l.Alpha,
		TargetModules: l.Targets, Bias: "none", InferenceMode: true, InitLoRAWeights: true,
		RankPattern: map[string]int{}, AlphaPattern: map[string]int{}}
	cj, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return 0, err
	}
	// Both files are written in a stage in dir and moved in together:
	// never one adapter's weights beside another's configuration.
	stage, err := atomicfile.NewStage(dir)
	if err != nil {
		return 0, fmt.Errorf("model: peft export: %w", err)
	}
	defer stage.Discard()
	err = atomicfile.Write(filepath.Join(stage.Dir(), PEFTWeightsFile), 0o666, func(f io.Writer) error {
		meta := map[string]string{"format": "pt"}
		if run != "" {
			meta[PEFTRunKey] = run
		}
		return out.WriteSafetensors(f, meta, nil)
	})
	if err == nil {
		err = atomicfile.WriteFile(filepath.Join(stage.Dir(), PEFTConfigFile), append(cj, '\n'), 0o666)
	}
	if err == nil {
		err = ctx.Err() // a Ctrl-C while they were written
	}
	if err == nil {
		err = stage.Commit(append([]string{PEFTWeightsFile, PEFTConfigFile}, remove...)...)
	}
	if err != nil {
		return 0, fmt.Errorf("model: peft export: %w", err)
	}
	return out.Len(), nil
}

// PEFTRunKey is the key of adapter_model.safetensors' metadata under
// which ExportPEFT records the run the adapters are of.
const PEFTRunKey = "spiral_run"

// PEFTRun returns the run that the peft adapter in dir records
// (ExportPEFT's run; "" where it records none: another tool's adapter,
// an older spiral's, or one written without a run), and whether dir holds
// an adapter at all (adapter_config.json or adapter_model.safetensors).
func PEFTRun(dir string) (run string, found bool, err error) {
	_, cerr := os.Stat(filepath.Join(dir, PEFTConfigFile))
	path := filepath.Join(dir, PEFTWeightsFile)
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", cerr == nil, nil
	}
	if err != nil {
		return "", true, fmt.Errorf("model: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", true, fmt.Errorf("model: %w", err)
	}
	h, err := params.ReadHeader(f, st.Size())
	if err != nil {
		return "", true, fmt.Errorf("model: %s: %w", path, err)
	}
	return h.Metadata[PEFTRunKey], true, nil
}

// transposeInto writes the transpose of the row-major [rows, cols] x into
// dst ([cols, rows]).
func transposeInto(dst, x []float32, rows, cols int) {
	for i := range rows {
		for j := range cols {
			dst[j*rows+i] = x[i*cols+j]
		}
	}
}

// ExportTrained writes the model at src with the trained weights in its
// graph (Export, ties found as PrepareArtifacts finds them): trained holds
// the trained parameters, or under LoRA (l enabled) the adapters, which
// are merged into their base weights (W + alpha/rank A B) as each is
// written, so no copy of the merged weights is held. It returns the
// number of the graph's weight tensors written with trained values, and
// their parameters: trained's, or under LoRA the base weights the
// adapters are merged into (not the adapters, which the graph lacks). It
// stops, writing nothing, when ctx ends. files, when not nil, names the
// files the caller writes beside out (config.json, the tokenizer's...),
// recorded in its metadata (SideFilesKey), so that a later export over
// it can tell them from files no export wrote there (ONNXSideFiles).
func ExportTrained(ctx context.Context, src string, l lmgraph.LoRA, trained *params.Store, out string, external bool, files []string) (tensors, parameters int, err error) {
	ties, err := Ties(src)
	if err != nil {
		return 0, 0, err
	}
	if !l.Enabled() {
		if err := export(ctx, src, ties, out, external, files, nil, trained); err != nil {
			return 0, 0, err
		}
		return trained.Len(), trained.NumParams(), nil
	}
	merges, err := loraMerges(src, l, trained)
	if err != nil {
		return 0, 0, err
	}
	if err := export(ctx, src, ties, out, external, files, merges); err != nil {
		return 0, 0, err
	}
	for _, f := range merges {
		parameters += f.in * f.out
	}
	return len(merges), parameters, nil
}
