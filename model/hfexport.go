package model

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/spiral-rl/spiral/model/atomicfile"
	"github.com/spiral-rl/spiral/model/jsonerr"
	"github.com/spiral-rl/spiral/model/lmgraph"
	"github.com/spiral-rl/spiral/model/onnx"
	"github.com/spiral-rl/spiral/model/onnx/onnxpb"
	"github.com/spiral-rl/spiral/model/params"
	"github.com/spiral-rl/spiral/model/smallfile"
)

// HFParam is one tensor of a Hugging Face (transformers) Qwen3 checkpoint
// made from an ONNX causal LM: its transformers name, the initializer it
// is read from, and whether the graph stores it transposed (a MatMul's
// right operand is [in, out], nn.Linear's weight [out, in]).
type HFParam struct {
	Name        string
	Initializer string
	Transposed  bool
}

var (
	// hfNameRE matches initializers that already carry transformers'
	// names (spiral's own graphs; TorchScript exports keep them for
	// norms and embeddings). An export of a module that wraps the model (HF's TorchScript
	// tests trace one) prefixes every name with one more "model.".
	// A projection's bias (Qwen2's q, k and v; attention_bias or
	// mlp_bias in other configs) keeps its name in a TorchScript export
	// (testdata/hfqwen2), since the graph adds it as it is.
	hfNameRE = regexp.MustCompile(`^(?:model\.)?((?:model\.(?:embed_tokens|norm)|model\.layers\.\d+\.(?:input_layernorm|post_attention_layernorm|self_attn\.[qkvo]_proj|self_attn\.[qk]_norm|mlp\.(?:gate|up|down)_proj)|lm_head)\.weight|model\.layers\.\d+\.(?:self_attn\.[qkvo]_proj|mlp\.(?:gate|up|down)_proj)\.bias)$`)
	// hfMatMulRE reads the module of a projection from its MatMul node's
	// name, as the TorchScript exporter (optimum) writes it:
	// "/model/layers.0/self_attn/q_proj/MatMul" (a wrapped model:
	// "/model/model/layers.0/...").
	hfMatMulRE = regexp.MustCompile(`^(?:/model)?/(?:model/layers\.(\d+)/(self_attn|mlp)/([a-z]+_proj)|(lm_head))/MatMul(?:_\d+)?$`)
	// hfScopeRE reads the module of a projection from the name scopes
	// PyTorch's dynamo exporter records on each node (metadata
	// "pkg.torch.onnx.name_scopes", a Python list of module paths from the
	// root down: [..., 'model.layers.0.self_attn.q_proj', 'linear']),
	// with the same optional wrapper prefix.
	hfScopeRE = regexp.MustCompile(`^(?:model\.)?(model\.layers\.\d+\.(?:self_attn\.[qkvo]_proj|mlp\.(?:gate|up|down)_proj)|lm_head)$`)
	// quotedRE finds the entries of a Python list of strings.
	quotedRE = regexp.MustCompile(`'([^']*)'`)
)

// dynamoModule returns the transformers module a node belongs to by its
// dynamo name scopes: the innermost scope that is a projection or the
// head, or "".
func dynamoModule(n *onnxpb.NodeProto) string {
	for _, p := range n.GetMetadataProps() {
		if p.GetKey() != "pkg.torch.onnx.name_scopes" {
			continue
		}
		scopes := quotedRE.FindAllStringSubmatch(p.GetValue(), -1)
		for i := len(scopes) - 1; i >= 0; i-- {
			if m := hfScopeRE.FindStringSubmatch(scopes[i][1]); m != nil {
				return m[1]
			}
		}
	}
	return ""
}

// HFParams maps the parameters of the graph m to transformers' Qwen3
// parameter names (and the projections' biases, Qwen2's), in initializer
// order: by the initializer's own name when it is one of transformers'
// (transposed when it is a MatMul's right operand), else by the module of the MatMul node that reads it, from the
// node's name (TorchScript exports) or its name scopes (dynamo exports).
// A table named lm_head.weight that a Gather reads and no MatMul is the
// embedding (the dynamo exporter keeps a tied pair under the head's name).
// With tied (config.json's tie_word_embeddings) lm_head.weight is left
// out, as transformers ties it to the embedding. It fails, naming the
// initializer, when a parameter cannot be placed or two map to one name.
func HFParams(m *onnx.Model, tied bool) ([]HFParam, error) {
	g := m.Graph()
	matmulOf := map[string]*onnxpb.NodeProto{} // right operand -> MatMul
	gathered := map[string]bool{}              // tables of a Gather
	for _, n := range g.GetNode() {
		switch {
		case n.GetOpType() == "MatMul" && len(n.GetInput()) == 2:
			matmulOf[n.GetInput()[1]] = n
		case n.GetOpType() == "Gather" && len(n.GetInput()) == 2:
			gathered[n.GetInput()[0]] = true
		}
	}
	var out []HFParam
	from := map[string]string{}
	for _, c := range lmgraph.Classify(g) {
		if !c.Parameter {
			continue
		}
		mm := matmulOf[c.Name]
		p := HFParam{Initializer: c.Name, Transposed: mm != nil}
		switch {
		case hfNameRE.MatchString(c.Name):
			p.Name = hfNameRE.FindStringSubmatch(c.Name)[1]
			if p.Name == "lm_head.weight" && mm == nil && gathered[c.Name] {
				p.Name = "model.embed_tokens.weight"
			}
		case mm != nil && hfMatMulRE.MatchString(mm.GetName()):
			s := hfMatMulRE.FindStringSubmatch(mm.GetName())
			p.Name = "lm_head.weight"
			if s[4] == "" {
				p.Name = fmt.Sprintf("model.layers.%s.%s.%s.weight", s[1], s[2], s[3])
			}
		case mm != nil && dynamoModule(mm) != "":
			p.Name = dynamoModule(mm) + ".weight"
		default:
			reader := "no MatMul"
			if mm != nil {
				reader = fmt.Sprintf("MatMul %q", mm.GetName())
			}
			return nil, fmt.Errorf("model: hf export: initializer %q (read by %s) has no transformers name; the graph must keep the module names in its initializer names, MatMul node names (optimum/TorchScript exports, spiral's own graphs) or name scopes (dynamo exports)", c.Name, reader)
		}
		if tied && p.Name == "lm_head.weight" {
			continue
		}
		if prev, dup := from[p.Name]; dup {
			return nil, fmt.Errorf("model: hf export: initializers %q and %q both map to %s", prev, c.Name, p.Name)
		}
		from[p.Name] = c.Name
		out = append(out, p)
	}
	if _, ok := from["model.embed_tokens.weight"]; !ok {
		return nil, fmt.Errorf("model: hf export: no initializer maps to model.embed_tokens.weight")
	}
	return out, nil
}

// hfSource is where one exported tensor comes from: a trained tensor or
// an initializer of the graph, of shape (before any transposition).
type hfSource struct {
	spec      params.Spec
	trained   *params.Tensor
	init      *onnxpb.TensorProto
	shape     []int64
	transpose bool
	// merge, when set, is the LoRA adapter merged into the initializer
	// as it is read (W + scale A B).
	merge *loraFactors
}

// hfSources places the tensors of ps, sorted by their transformers
// names: each from trained when it holds the initializer (or, for a tied
// copy in ties, the tensor it copies), else from m.
func hfSources(m *onnx.Model, ps []HFParam, ties []lmgraph.Tie, trained *params.Store) ([]hfSource, error) {
	tieOf := map[string]lmgraph.Tie{}
	for _, t := range ties {
		tieOf[t.Copy] = t
	}
	inits := map[string]*onnxpb.TensorProto{}
	for _, t := range m.Graph().GetInitializer() {
		inits[t.GetName()] = t
	}
	srcs := make([]hfSource, 0, len(ps))
	for _, p := range ps {
		s := hfSource{transpose: p.Transposed}
		name := p.Initializer
		if tie, ok := tieOf[name]; ok {
			name, s.transpose = tie.Of, s.transpose != tie.Transposed
		}
		if t, ok := trained.Get(name); ok {
			if init, ok := inits[name]; ok && !slices.Equal(init.GetDims(), t.Shape) {
				return nil, fmt.Errorf("model: hf export: %q has shape %v in the graph but %v in the weights; wrong source model?", name, init.GetDims(), t.Shape)
			}
			s.trained, s.shape = t, t.Shape
		} else if s.init, ok = inits[name]; ok {
			s.shape = s.init.GetDims()
		} else {
			return nil, fmt.Errorf("model: hf export: %s: initializer %q not in the graph", p.Name, name)
		}
		s.spec = params.Spec{Name: p.Name, Shape: slices.Clone(s.shape)}
		if s.transpose {
			if len(s.shape) != 2 {
				return nil, fmt.Errorf("model: hf export: %s: initializer %q of shape %v cannot be transposed", p.Name, name, s.shape)
			}
			s.spec.Shape = []int64{s.shape[1], s.shape[0]}
		}
		srcs = append(srcs, s)
	}
	slices.SortFunc(srcs, func(a, b hfSource) int { return strings.Compare(a.spec.Name, b.spec.Name) })
	return srcs, nil
}

// values returns s's values in transformers' layout: a trained tensor
// kept as is in place, anything else computed into dst (as long as the
// tensor); scratch holds an initializer read before its transposition
// (grown as needed, returned for reuse).
func (s *hfSource) values(m *onnx.Model, dst, scratch []float32) (data, kept []float32, err error) {
	data = dst
	switch {
	case s.trained != nil && !s.transpose:
		return s.trained.Data, scratch, nil
	case s.trained != nil:
		transposeInto(dst, s.trained.Data, int(s.shape[0]), int(s.shape[1]))
		return dst, scratch, nil
	case s.transpose:
		if cap(scratch) < len(dst) {
			scratch = make([]float32, len(dst))
		}
		data = scratch[:len(dst)]
	}
	if err := m.ReadFloat32s(s.init, data); err != nil {
		return nil, scratch, fmt.Errorf("model: hf export: %s: %w", s.spec.Name, err)
	}
	if s.merge != nil {
		s.merge.addTo(data) // the graph's [in, out] layout, before any transposition
	}
	if s.transpose {
		transposeInto(dst, data, int(s.shape[0]), int(s.shape[1]))
	}
	return dst, scratch, nil
}

// HFWeights returns the tensors of ps under their transformers names and
// layouts, sorted by name: each from trained when it holds the initializer
// (or, for a tied copy in ties, the tensor it copies), else read from m.
// Each tensor is written once, straight into the returned store.
// (ExportHF streams them to the file instead, one at a time.)
func HFWeights(m *onnx.Model, ps []HFParam, ties []lmgraph.Tie, trained *params.Store) (*params.Store, error) {
	srcs, err := hfSources(m, ps, ties, trained)
	if err != nil {
		return nil, err
	}
	specs := make([]params.Spec, len(srcs))
	for i, s := range srcs {
		specs[i] = s.spec
	}
	out, err := params.NewStore(specs)
	if err != nil {
		return nil, fmt.Errorf("model: hf export: %w", err)
	}
	var scratch []float32
	for i := range srcs {
		dst := out.At(i).Data
		var data []float32
		if data, scratch, err = srcs[i].values(m, dst, scratch); err != nil {
			return nil, err
		}
		if len(data) > 0 && &data[0] != &dst[0] {
			copy(dst, data)
		}
	}
	return out, nil
}

// mergeOnRead marks the sources whose initializer is the base weight of
// an adapter of l (factors in adapters) to have it merged when read.
func mergeOnRead(src string, l lmgraph.LoRA, adapters *params.Store, srcs []hfSource) error {
	byBase, err := loraMerges(src, l, adapters)
	if err != nil {
		return err
	}
	exported := map[string]bool{}
	for i := range srcs {
		if s := &srcs[i]; s.init != nil {
			if f, ok := byBase[s.init.GetName()]; ok {
				s.merge = &f
				exported[s.init.GetName()] = true
			}
		}
	}
	var missing []string
	for base := range byBase {
		if !exported[base] {
			missing = append(missing, base)
		}
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		return fmt.Errorf("model: hf export: the LoRA adapters of %s adapt weights that have no transformers name in the export", strings.Join(missing, ", "))
	}
	return nil
}

// SameFile reports whether the paths a and b name one existing file or
// directory.
func SameFile(a, b string) bool {
	sa, err := os.Stat(a)
	if err != nil {
		return false
	}
	sb, err := os.Stat(b)
	return err == nil && os.SameFile(sa, sb)
}

// HFWeightsFile is the weights file of a Hugging Face model directory.
const HFWeightsFile = "model.safetensors"

// SideFile is a file an export copies beside the model it writes: its
// name there and the path it is read from.
type SideFile struct{ Name, From string }

// SideFiles returns the files the exports of the model at src copy when
// present, tokenizer.json first: the tokenizer in transformers' layouts
// (tokenizer.json, its config with the chat template, the special tokens,
// the added tokens, which AutoTokenizer adds at their ids, a BPE's vocab
// and merges) read beside tokenizer, the tokenizer.json
// given in place of src's when not "", so that a tokenizer given from
// elsewhere keeps its own files; and the generation defaults, read beside
// src.
func SideFiles(src, tokenizer string) []SideFile {
	tokDir := filepath.Dir(src)
	if tokenizer != "" {
		tokDir = filepath.Dir(tokenizer)
	}
	files := []SideFile{{"tokenizer.json", filepath.Join(tokDir, "tokenizer.json")}}
	if tokenizer != "" {
		files[0].From = tokenizer
	}
	for _, name := range []string{"tokenizer_config.json", "special_tokens_map.json", "added_tokens.json", "vocab.json", "merges.txt", "chat_template.jinja"} {
		files = append(files, SideFile{name, filepath.Join(tokDir, name)})
	}
	return append(files, SideFile{"generation_config.json", filepath.Join(filepath.Dir(src), "generation_config.json")})
}

// ModelSideFiles returns the files a copy of the model at src takes
// beside it when present: its config.json, then SideFiles(src,
// tokenizer). The exports and sft's model directory copy these.
func ModelSideFiles(src, tokenizer string) []SideFile {
	return append([]SideFile{{ConfigFile, filepath.Join(filepath.Dir(src), ConfigFile)}}, SideFiles(src, tokenizer)...)
}

// SideFileNames returns the names of SideFiles' files, tokenizer.json
// first: the tokenizer and generation files a model directory may hold
// beside its model and config.json.
func SideFileNames() []string {
	var names []string
	for _, f := range SideFiles("", "") {
		names = append(names, f.Name)
	}
	return names
}

// hfLayerRE reads the layer of a transformers parameter name.
var hfLayerRE = regexp.MustCompile(`^model\.layers\.(\d+)\.`)

// checkConfigShape refuses the config.json at path (cfg) when a shape it
// states is not that of the tensors srcs export: transformers would build
// the model the config describes and load these weights into it, a layer
// the config has and the weights lack drawn at random and one it lacks
// dropped, with a warning only.
func checkConfigShape(path string, cfg HFConfig, srcs []hfSource) error {
	layers := map[string]bool{}
	var vocab, hidden, inter, headDim int64
	for _, s := range srcs {
		name, shape := s.spec.Name, s.spec.Shape
		if m := hfLayerRE.FindStringSubmatch(name); m != nil {
			layers[m[1]] = true
		}
		switch {
		case name == "model.embed_tokens.weight" && len(shape) == 2:
			vocab, hidden = shape[0], shape[1]
		case strings.HasSuffix(name, ".mlp.up_proj.weight") && len(shape) == 2:
			inter = shape[0]
		case strings.HasSuffix(name, ".self_attn.q_norm.weight") && len(shape) == 1: // Qwen3's, one head wide
			headDim = shape[0]
		}
	}
	var diffs []string
	for _, f := range []struct {
		field  string
		stated int
		has    int64
	}{
		{"num_hidden_layers", cfg.NumHiddenLayers, int64(len(layers))},
		{"hidden_size", cfg.HiddenSize, hidden},
		{"intermediate_size", cfg.IntermediateSize, inter},
		{"vocab_size", cfg.VocabSize, vocab},
		{"head_dim", cfg.HeadDim, headDim},
	} {
		if f.stated != 0 && f.has != 0 && int64(f.stated) != f.has {
			diffs = append(diffs, fmt.Sprintf("%s %d, but the weights have %d", f.field, f.stated, f.has))
		}
	}
	if len(diffs) > 0 {
		return fmt.Errorf("model: hf export: %s says %s: transformers would build another model than the weights (another model's config.json?)", path, strings.Join(diffs, "; "))
	}
	return nil
}

// CheckCausalLMConfig refuses the config.json beside the model at src,
// which ExportHF copies into a Hugging Face directory, when it is a
// multimodal model's (Qwen3-VL's, Gemma 3's, Llava's: its text model's in
// text_config, which ReadHFConfig reads): ExportHF writes a causal LM's
// checkpoint (HFParams' names), and transformers would build the model
// the config names and load it into that, whose vision tower (and
// language model, where its weights go by other names) it does not
// fill, drawing them at random with a warning only. A missing
// config.json is ExportHF's to refuse. (A serving engine that already
// runs the multimodal model and reloads its weights from an ExportHF
// directory, as SGLang's, does not build it from the config.)
func CheckCausalLMConfig(src string) error {
	path := filepath.Join(filepath.Dir(src), ConfigFile)
	which, into, err := multimodalConfig(path)
	if err != nil {
		return fmt.Errorf("model: hf export: %w", err)
	}
	if which == "" {
		return nil
	}
	return fmt.Errorf("model: hf export: %s is the config of a multimodal model (%s), its text model's in %s: the export writes the language model alone, a causal LM's checkpoint under transformers' Qwen3 names (model.layers.N...), which transformers would load into %s, leaving its other modules (a vision tower; a language model under other names) drawn at random; put the text model's own config.json beside the model (%s's fields at its top level, and its causal LM class, such as Qwen3ForCausalLM, in architectures), or export with --format onnx",
		path, which, textConfigKey, into, textConfigKey)
}

// CheckPEFTBaseConfig refuses a peft export whose base model is
// multimodal: the config.json beside the model at src (whose
// _name_or_path the adapter names by default), or, where base (the
// adapter's base_model_name_or_path) is a directory, the one in it.
// ExportPEFT's keys are a causal LM's modules (base_model.model.
// model.layers.N...), and transformers' multimodal classes (Qwen3-VL's,
// Gemma 3's, Llava's) hold their language model's under other names
// (model.language_model.layers.N...): peft would find none of the
// adapter's weights there, leaving the adapter at its initialisation (no
// change to the model) with a warning at most, or mapped by conversion
// rules that differ between transformers versions.
func CheckPEFTBaseConfig(src, base string) error {
	paths := []string{filepath.Join(filepath.Dir(src), ConfigFile)}
	if st, err := os.Stat(base); base != "" && err == nil && st.IsDir() {
		paths = append(paths, filepath.Join(base, ConfigFile))
	}
	for i, path := range paths {
		which, _, err := multimodalConfig(path)
		if err != nil {
			return fmt.Errorf("model: peft export: %w", err)
		}
		if which == "" {
			continue
		}
		of, fix := "", "put the text model's own config.json beside the model (its causal LM class, such as Qwen3ForCausalLM, in architectures), or export with --format onnx"
		if i > 0 {
			of, fix = "--base-model "+base+": ", "give the text model's directory, a causal LM's, as --base-model"
		}
		return fmt.Errorf("model: peft export: %s%s is the config of a multimodal model (%s), its text model's in %s: the adapter's weights are a causal LM's (base_model.model.model.layers.N...), which peft would not find in that model, whose language model transformers holds under other names (model.language_model.layers.N...), leaving the adapter unapplied; %s",
			of, path, which, textConfigKey, fix)
	}
	return nil
}

// multimodalConfig reads the config.json at path (absent is none) and,
// where it is a multimodal model's (its text model in text_config, which
// ReadHFConfig reads), returns which it is (its architectures, else its
// model_type) and the model transformers would build from it; "" for
// any other.
func multimodalConfig(path string) (which, into string, err error) {
	b, err := smallfile.Read(path, smallfile.Limit)
	if errors.Is(err, fs.ErrNotExist) {
		return "", "", nil
	}
	if err != nil {
		return "", "", err
	}
	var cfg struct {
		Architectures []string        `json:"architectures"`
		ModelType     string          `json:"model_type"`
		TextConfig    json.RawMessage `json:"text_config"`
	}
	if err := json.Unmarshal(b, &cfg); err != nil {
		return "", "", fmt.Errorf("%s: %w", path, jsonerr.Describe(b, &cfg, err))
	}
	if len(cfg.TextConfig) == 0 || string(cfg.TextConfig) == "null" {
		return "", "", nil
	}
	which, into = "no architectures stated", "that model"
	switch {
	case len(cfg.Architectures) > 0:
		which, into = "architectures "+strings.Join(cfg.Architectures, ", "), strings.Join(cfg.Architectures, ", ")
	case cfg.ModelType != "":
		which = "model_type " + cfg.ModelType
	}
	return which, into, nil
}

// checkRotary refuses the config.json at path (cfg) when it asks for
// scaled rotary frequencies and the graph m holds the unscaled ones of
// its rope_theta: transformers builds the rotary embedding from
// config.json, so the export would compute other logits than the graph
// spiral ran (a config.json given yarn after the export, as Qwen's docs
// suggest for long contexts). yarn, linear and llama3 scaling change the
// frequencies themselves; dynamic scaling changes them with the sequence
// length, which an export fixes at a short one, leaving the unscaled
// ones in the graph.
func checkRotary(path string, cfg HFConfig, m *onnx.Model) error {
	kind, theta, width := cfg.rotary()
	if kind == "" || width < 2 {
		return nil
	}
	// A graph holds the frequencies in a tensor of width/2 values: those
	// of a width none of its tensors has (a corrupt head_dim, 2^61) are
	// not computed.
	tensors := floatTensors(m, width/2)
	if len(tensors) == 0 {
		return nil
	}
	plain := make([]float32, width/2)
	for i := range plain {
		plain[i] = float32(1 / math.Pow(theta, float64(2*i)/float64(width)))
	}
	held, err := holdsValues(m, tensors, plain)
	if err != nil {
		return fmt.Errorf("model: hf export: %w", err)
	}
	if held {
		return fmt.Errorf("model: hf export: %s asks for %s rotary scaling, but the graph holds the unscaled frequencies of rope_theta %g (rotary width %d): transformers would compute other logits than the graph; export the model with the scaling in its graph, or remove it from config.json",
			path, kind, theta, width)
	}
	return nil
}

// checkTying refuses the config.json at path (cfg) when its
// tie_word_embeddings is not how the graph's LM head reads its weights
// (ps the export's parameters; head and embed, under a tied cfg, the
// initializers of the head and the embedding; ties the graph's tied
// copies): untied (false, or left out, Qwen's default) over a graph
// whose head reads the embedding table, which leaves the export no
// lm_head.weight, so transformers would draw one at random; tied over a
// graph whose head has a table of its own, neither the embedding's nor a
// copy of it, which the export leaves out, so transformers would compute
// the logits with the embedding in its place.
func checkTying(path string, cfg HFConfig, ps []HFParam, head, embed string, ties []lmgraph.Tie) error {
	if cfg.TieWordEmbeddings == nil || !*cfg.TieWordEmbeddings {
		if slices.ContainsFunc(ps, func(p HFParam) bool { return p.Name == "lm_head.weight" }) {
			return nil
		}
		says := "says tie_word_embeddings false"
		if cfg.TieWordEmbeddings == nil {
			says = "leaves tie_word_embeddings out (false for Qwen)"
		}
		return fmt.Errorf("model: hf export: %s %s, but the graph's LM head reads the embedding table: the export would have no lm_head.weight, which transformers would draw at random; set tie_word_embeddings true in it", path, says)
	}
	root := func(name string) string {
		for _, t := range ties {
			if t.Copy == name {
				return t.Of
			}
		}
		return name
	}
	if head == "" || root(head) == root(embed) {
		return nil
	}
	return fmt.Errorf("model: hf export: %s says tie_word_embeddings true, but the graph's LM head has weights of its own (%q), not the embedding's: the export would leave them out, and transformers compute the logits with the embedding in their place; set tie_word_embeddings false in it", path, head)
}

// floatTensors returns the float32 and float64 tensors of n values in
// m's main graph, its initializers and Constant nodes' values.
func floatTensors(m *onnx.Model, n int) []*onnxpb.TensorProto {
	g := m.Graph()
	tensors := slices.Clone(g.GetInitializer())
	for _, node := range g.GetNode() {
		if node.GetOpType() == "Constant" {
			for _, a := range node.GetAttribute() {
				if t := a.GetT(); a.GetName() == "value" && t != nil {
					tensors = append(tensors, t)
				}
			}
		}
	}
	return slices.DeleteFunc(tensors, func(t *onnxpb.TensorProto) bool {
		dt := onnx.TensorDType(t)
		return onnx.NumElements(t.GetDims()) != int64(n) || (dt != onnx.Float32 && dt != onnx.Float64)
	})
}

// holdsValues reports whether one of tensors, m's tensors of
// len(want) values (floatTensors), holds want, each value within 1e-5 of
// it relatively (float32 rounding of another computation).
func holdsValues(m *onnx.Model, tensors []*onnxpb.TensorProto, want []float32) (bool, error) {
	got := make([]float32, len(want))
	for _, t := range tensors {
		if err := m.ReadFloat32s(t, got); err != nil {
			return false, err
		}
		if slices.EqualFunc(got, want, func(a, b float32) bool { return math.Abs(float64(a-b)) <= 1e-5*math.Abs(float64(b)) }) {
			return true, nil
		}
	}
	return false, nil
}

// otherCheckpoints returns the safetensors files in dir (absent is
// fine) that an hf export neither writes nor replaces: a sharded
// checkpoint's model.safetensors.index.json or shards. vLLM and SGLang
// load only the files an index names, and without one every
// .safetensors file, so beside them the export's weights would not be
// the ones served (transformers alone prefers model.safetensors).
func otherCheckpoints(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("model: hf export: %w", err)
	}
	var other []string
	for _, e := range entries {
		name := e.Name()
		if name == HFWeightsFile || name == PEFTWeightsFile {
			continue // replaced, or removed, by the export
		}
		if strings.HasSuffix(name, ".safetensors") || name == HFWeightsFile+".index.json" {
			other = append(other, name)
		}
	}
	return other, nil
}

// HFSideFilesKey is the key of model.safetensors' metadata under which
// ExportHF records the files it wrote beside the weights (their names,
// comma-separated), so that a later export into the directory can tell
// them from files no export of spiral's wrote there (HFSideFiles reads
// it).
const HFSideFilesKey = SideFilesKey

// SideFilesKey is the key under which an export records the files it
// wrote beside the model, their names comma-separated: in an hf
// export's model.safetensors metadata (HFSideFilesKey) and an onnx
// export's metadata_props (ExportTrained, ONNXSideFiles).
const SideFilesKey = "spiral_files"

// HFSideFiles returns the names of the files beside dir's
// model.safetensors that the ExportHF which wrote it recorded writing
// (HFSideFilesKey); none where dir has no model.safetensors, or one that
// records none (another tool's, an older spiral's) or cannot be read as
// safetensors, since such a file vouches for none.
func HFSideFiles(dir string) []string {
	f, err := os.Open(filepath.Join(dir, HFWeightsFile))
	if err != nil {
		return nil
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil
	}
	h, err := params.ReadHeader(f, st.Size())
	if err != nil || h.Metadata[HFSideFilesKey] == "" {
		return nil
	}
	return strings.Split(h.Metadata[HFSideFilesKey], ",")
}

// ExportHF writes a Hugging Face model directory at dir from the ONNX
// model at src with the tensors of trained in place of its parameters
// (under LoRA, l enabled, trained holds the adapters, merged into their
// base weights as each is written: W + alpha/rank A B):
// model.safetensors (float32, transformers' Qwen3 names and layouts, see
// HFParams; its metadata names the files written beside it,
// HFSideFilesKey), config.json (required beside src; without its
// _name_or_path when trained holds weights or adapters, see
// TrainedConfig; its torch_dtype or dtype float32, see Float32Config)
// and the tokenizer and
// generation files found beside src. tokenizer, when not empty, is the
// tokenizer.json to copy instead of the one beside src. defaults holds
// side files by name, written where src has none of its own: the chat
// template and stop ids of spiral's prompts (tokenizer.HFConfigFiles) for
// a model that spiral made, whose directory has only tokenizer.json, so
// that transformers and serving engines prompt and stop as spiral does. It
// returns the number of tensors written; it stops when ctx ends, dir's
// files not replaced. Another checkpoint's safetensors in dir (a sharded
// model's index and shards, see otherCheckpoints) are refused before
// anything is written, or with replace removed as the export's files are
// moved in (export --overwrite, which replaces the model there). The
// files of dir named in remove (a replaced model's other files) are
// removed within that commit too, after the export's are in, so that a
// process killed within it leaves their removal to
// atomicfile.FinishKilled rather than them beside the export's.
func ExportHF(ctx context.Context, src, tokenizer, dir string, trained *params.Store, l lmgraph.LoRA, defaults map[string][]byte, replace bool, remove ...string) (int, error) {
	cfgPath := filepath.Join(filepath.Dir(src), ConfigFile)
	cfg, found, err := ReadHFConfig(src)
	if err != nil {
		return 0, err
	}
	if !found {
		return 0, fmt.Errorf("model: hf export: %s not found: transformers needs the model's config.json beside %s", cfgPath, src)
	}
	other, err := otherCheckpoints(dir)
	if err != nil {
		return 0, err
	}
	if len(other) > 0 && !replace {
		return 0, fmt.Errorf("model: hf export: %s holds %s, another checkpoint's weights, which vLLM and SGLang would load beside or instead of the export's %s: export into another directory, or remove them",
			dir, strings.Join(other, ", "), HFWeightsFile)
	}
	m, err := onnx.LoadGraph(src)
	if err != nil {
		return 0, fmt.Errorf("model: hf export: %w", err)
	}
	if err := checkRotary(cfgPath, cfg, m); err != nil {
		return 0, err
	}
	tied := cfg.TieWordEmbeddings != nil && *cfg.TieWordEmbeddings
	// The initializers of the LM head and the embedding, which a tied
	// config.json's export leaves the head's out of.
	var head, embed string
	if tied {
		// Where HFParams fails untied and not tied (two initializers
		// that map to lm_head.weight, which the tied export leaves
		// out), there is no one head to check.
		all, _ := HFParams(m, false)
		for _, p := range all {
			switch p.Name {
			case "lm_head.weight":
				head = p.Initializer
			case "model.embed_tokens.weight":
				embed = p.Initializer
			}
		}
	}
	ps, err := HFParams(m, tied)
	if err != nil {
		return 0, err
	}
	// After HFParams: finding the ties rewrites m to read the tied table
	// and drops the copies (hfSources reads a copy from its table).
	_, ties, err := parameters(m, src)
	if err != nil {
		return 0, err
	}
	if err := checkTying(cfgPath, cfg, ps, head, embed, ties); err != nil {
		return 0, err
	}
	srcs, err := hfSources(m, ps, ties, trained)
	if err != nil {
		return 0, err
	}
	if err := checkConfigShape(cfgPath, cfg, srcs); err != nil {
		return 0, err
	}
	if !l.Enabled() {
		// Every trained tensor has its place in the export (as Export
		// requires): one the model lacks is another model's.
		used := map[string]bool{}
		for _, s := range srcs {
			if s.trained != nil {
				used[s.trained.Name] = true
			}
		}
		if len(used) < trained.Len() {
			return 0, fmt.Errorf("model: hf export: %s has %d of the %d weight tensors; wrong source model?", src, len(used), trained.Len())
		}
	}
	if l.Enabled() {
		if err := mergeOnRead(src, l, trained, srcs); err != nil {
			return 0, err
		}
	}
	// The files beside the weights, read (and config.json edited)
	// before the weights are written, whose metadata names them.
	type sideData struct {
		name string
		data []byte
	}
	var sides []sideData
	names := []string{HFWeightsFile} // the commit's: those of sides, and those the source lacks, removed
	var written []string
	for _, f := range ModelSideFiles(src, tokenizer) {
		name := f.Name
		names = append(names, name)
		b, err := smallfile.ReadRegular(f.From, smallfile.Limit)
		if errors.Is(err, fs.ErrNotExist) && name != ConfigFile {
			d, ok := defaults[name]
			if !ok {
				continue
			}
			b, err = d, nil
		}
		if err != nil {
			return 0, fmt.Errorf("model: hf export: %w", err)
		}
		// Trained weights' config.json names no model they are not; the
		// source's own (exported into its directory) is left as it is.
		if name == ConfigFile && (l.Enabled() || trained.Len() > 0) && !SameFile(filepath.Join(dir, name), f.From) {
			if b, err = TrainedConfig(b); err != nil {
				return 0, fmt.Errorf("model: hf export: %s: %w", f.From, err)
			}
		}
		// The weights are written in float32, whatever dtype the
		// source's release was stored in.
		if name == ConfigFile {
			if b, err = Float32Config(b); err != nil {
				return 0, fmt.Errorf("model: hf export: %s: %w", f.From, err)
			}
		}
		sides = append(sides, sideData{name, b})
		written = append(written, name)
	}
	// The files are written in a stage in dir and moved in together, so
	// that an interruption leaves dir's files as they were (not new
	// weights beside an older export's config), and a side file the
	// source lacks does not stay from an older export.
	stage, err := atomicfile.NewStage(dir)
	if err != nil {
		return 0, fmt.Errorf("model: hf export: %w", err)
	}
	defer stage.Discard()
	specs := make([]params.Spec, len(srcs))
	for i, s := range srcs {
		specs[i] = s.spec
	}
	// Streamed: one tensor's values at a time besides the trained store.
	var scratch []float32
	err = atomicfile.Write(filepath.Join(stage.Dir(), HFWeightsFile), 0o666, func(f io.Writer) error {
		meta := map[string]string{"format": "pt", HFSideFilesKey: strings.Join(written, ",")}
		return params.WriteFunc(f, meta, specs, func(i int, buf []float32) ([]float32, error) {
			if err := ctx.Err(); err != nil {
				return nil, err // interrupted: the file is not replaced
			}
			var data []float32
			var err error
			data, scratch, err = srcs[i].values(m, buf, scratch)
			return data, err
		})
	})
	if err != nil {
		return 0, fmt.Errorf("model: hf export: %w", err)
	}
	for _, f := range sides {
		if err := atomicfile.WriteFile(filepath.Join(stage.Dir(), f.name), f.data, 0o666); err != nil {
			return 0, fmt.Errorf("model: hf export: %w", err)
		}
	}
	// A Ctrl-C after the last tensor (while the weights were synced, or
	// the files beside them written) leaves dir's files as they were too.
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("model: hf export: %w", err)
	}
	// An earlier peft export's adapter there would make transformers load
	// it on its base model instead of these weights: removed, and so are
	// the replaced model's shards (replace).
	if replace {
		names = append(names, other...)
	}
	names = append(names, PEFTWeightsFile, PEFTConfigFile)
	for _, n := range remove {
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	if err := stage.Commit(names...); err != nil {
		return 0, fmt.Errorf("model: hf export: %w", err)
	}
	return len(srcs), nil
}
