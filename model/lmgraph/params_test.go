package lmgraph_test

import (
	"path/filepath"
	"regexp"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/spiral-rl/spiral/model/lmgraph"
	"github.com/spiral-rl/spiral/model/modeltest"
	"github.com/spiral-rl/spiral/model/onnx"
)

// kept classifies the fixture's initializers and ties copies, as artifacts
// do, and returns the parameters left, the ties and the classification.
func kept(t *testing.T, path string) ([]string, []lmgraph.Tie, []lmgraph.Initializer) {
	t.Helper()
	m, err := onnx.LoadGraph(path)
	require.NoError(t, err)
	cls := lmgraph.Classify(m.Graph())
	var params []string
	for _, c := range cls {
		if c.Parameter {
			params = append(params, c.Name)
		}
	}
	ties, err := lmgraph.FindTies(m, params)
	require.NoError(t, err)
	require.NoError(t, lmgraph.ApplyTies(m.Graph(), ties))
	copies := map[string]bool{}
	for _, tie := range ties {
		copies[tie.Copy] = true
	}
	return slices.DeleteFunc(params, func(n string) bool { return copies[n] }), ties, cls
}

// TestParametersAreNamedParameters checks, on exports made by PyTorch's
// dynamo exporter and by Hugging Face optimum from a transformers Qwen3,
// that the parameters spiral trains are exactly model.named_parameters():
// one kept initializer per named parameter (the tied LM head, which both
// exporters store twice, counted once), none besides, and the dynamo
// export's rotary_emb.inv_freq buffer classified as a buffer.
func TestParametersAreNamedParameters(t *testing.T) {
	for _, dir := range []string{"dynamoqwen3", "optimumqwen3"} {
		t.Run(dir, func(t *testing.T) {
			root := filepath.Join("..", "testdata", dir)
			fixture := modeltest.FixtureParameters(t, root)
			params, ties, cls := kept(t, filepath.Join(root, "model.onnx"))
			require.Len(t, ties, 1, "the tied embedding and LM head")
			isKept := map[string]bool{}
			for _, p := range params {
				isKept[p] = true
			}
			holderOf := map[string]string{}
			for _, p := range fixture {
				var hits []string
				for _, h := range append(slices.Clone(p.Initializers), p.Transposed...) {
					holderOf[h] = p.Name
					if isKept[h] {
						hits = append(hits, h)
					}
				}
				require.Len(t, hits, 1, "named parameter %s: kept holders %v", p.Name, hits)
			}
			for _, p := range params {
				require.Contains(t, holderOf, p, "trained initializer %q holds no named parameter", p)
			}
			require.Len(t, params, len(fixture))
			for _, c := range cls {
				if c.Name == "model.model.rotary_emb.inv_freq" {
					require.False(t, c.Parameter)
					require.Equal(t, lmgraph.ReasonBuffer, c.Reason)
				}
			}
		})
	}
}

// TestParametersTorchScriptFixture: the TorchScript export of ../hfqwen3
// (2 layers: q, k, v, o, q_norm, k_norm, gate, up, down and two norms per
// layer, the embedding and the final norm) has 24 parameters once its
// transposed LM-head copy is tied to the embedding.
func TestParametersTorchScriptFixture(t *testing.T) {
	params, ties, _ := kept(t, filepath.Join("..", "testdata", "hfqwen3", "model.onnx"))
	require.Len(t, params, 2*11+2)
	require.Len(t, ties, 1)
	require.True(t, ties[0].Transposed)
	require.Equal(t, "model.model.embed_tokens.weight", ties[0].Of) // the FlatPast wrapper adds a "model." prefix
}

// TestClassify covers the rule on small hand-made graphs, one role each.
func TestClassify(t *testing.T) {
	b := onnx.NewGraphBuilder("g")
	ids := b.Input("input_ids", onnx.Int64, onnx.P("batch"), onnx.P("seq"))
	pos := b.Input("position_ids", onnx.Int64, onnx.P("batch"), onnx.P("seq"))
	emb := b.Initializer("emb", onnx.NewTensor("emb", []int64{5, 4}, make([]float32, 20)))
	h := b.Node("Gather", []string{emb, ids})
	w := b.Initializer("w", onnx.NewTensor("w", []int64{4, 4}, make([]float32, 16)))
	h = b.Node("MatMul", []string{h, b.Node("Transpose", []string{w})})
	scale := b.Initializer("gain", onnx.NewTensor("gain", []int64{4}, make([]float32, 4)))
	h = b.Node("Mul", []string{scale, h})
	eps := b.Initializer("eps", onnx.NewTensor("eps", []int64{1}, []float32{1e-6}))
	h = b.Node("Add", []string{h, eps})
	freq := b.Initializer("inv_freq", onnx.NewTensor("inv_freq", []int64{4}, make([]float32, 4)))
	angle := b.Node("Mul", []string{b.Node("Cast", []string{pos}, onnx.AttrInt("to", int64(onnx.Float32))), freq})
	h = b.Node("Mul", []string{h, b.Node("Cos", []string{angle})})
	mask := b.Initializer("mask", onnx.NewTensor("mask", []int64{8, 4}, make([]float32, 32)))
	h = b.Node("Add", []string{h, b.Node("Slice", []string{mask, b.ConstInt64s(0), b.ConstInt64s(1), b.ConstInt64s(0)})})
	b.Initializer("unused", onnx.NewTensor("unused", []int64{3}, make([]float32, 3)))
	b.Initializer("shape", onnx.NewTensor("shape", []int64{2}, []int64{1, 2}))
	b.Output(h, onnx.Float32)
	got := map[string]lmgraph.Initializer{}
	for _, c := range lmgraph.Classify(b.Graph()) {
		got[c.Name] = c
	}
	for _, tc := range []struct {
		name      string
		parameter bool
		reason    string
	}{
		{"emb", true, ""},  // the table of a Gather by input_ids
		{"w", true, ""},    // a MatMul weight, through a Transpose
		{"gain", true, ""}, // a norm gain multiplying activations
		{"eps", false, lmgraph.ReasonScalar},
		{"inv_freq", false, lmgraph.ReasonBuffer}, // meets positions only
		{"mask", false, lmgraph.ReasonBuffer},     // sliced before it is added
		{"unused", false, lmgraph.ReasonUnused},
		{"shape", false, lmgraph.ReasonNotFloat},
	} {
		c, ok := got[tc.name]
		require.True(t, ok, tc.name)
		require.Equal(t, tc.parameter, c.Parameter, "%s: %s", tc.name, c.Reason)
		if tc.reason != "" {
			require.Equal(t, tc.reason, c.Reason, tc.name)
		}
	}
}

// selection is the Selection of --train train and --freeze freeze ("":
// not given).
func selection(train, freeze string) lmgraph.Selection {
	var s lmgraph.Selection
	if train != "" {
		s.Train = regexp.MustCompile(train)
	}
	if freeze != "" {
		s.Freeze = regexp.MustCompile(freeze)
	}
	return s
}

// TestSelect checks --train and --freeze: --train keeps the matches,
// --freeze drops its matches, each frozen one says which flag froze it;
// a selection that leaves nothing, or a flag that matches no parameter,
// is an error naming the flags.
func TestSelect(t *testing.T) {
	cls := []lmgraph.Initializer{
		{Name: "embed.weight", Parameter: true}, {Name: "layers.0.q.weight", Parameter: true},
		{Name: "layers.0.norm.weight", Parameter: true}, {Name: "inv_freq", Reason: lmgraph.ReasonBuffer},
	}
	names := func(cs []lmgraph.Initializer) (out []string) {
		for _, c := range cs {
			out = append(out, c.Name)
		}
		return out
	}
	for _, tc := range []struct {
		name          string
		train, freeze string
		want          []string
		frozen        int
	}{
		{"all", "", "", []string{"embed.weight", "layers.0.q.weight", "layers.0.norm.weight"}, 0},
		{"freeze embeddings", "", `^embed\.`, []string{"layers.0.q.weight", "layers.0.norm.weight"}, 1},
		{"train norms only", `norm`, "", []string{"layers.0.norm.weight"}, 2},
		{"both", `^layers\.`, `norm`, []string{"layers.0.q.weight"}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := selection(tc.train, tc.freeze)
			tr, fr, err := s.Select(cls)
			require.NoError(t, err)
			require.Equal(t, tc.want, names(tr))
			require.Len(t, fr, tc.frozen)
			for _, f := range fr {
				require.Regexp(t, `--(train|freeze) "`, f.Reason)
			}
		})
	}
	for _, tc := range []struct {
		name, train, freeze, want string
	}{
		{"freeze everything", "", ".", `no parameter left to train: --freeze "." matches every one`},
		{"freeze all --train keeps", "norm", "weight", `no parameter left to train: --freeze "weight" freezes every one --train "norm" matches`},
		// spiral artifacts --train zzz pointed to spiral artifacts itself:
		// "(spiral artifacts lists the parameters' names)".
		{"--train matching nothing", "zzz", "", `--train "zzz" matches no parameter (spiral artifacts, without --train and --freeze, lists the parameters' names)`},
		{"--freeze matching nothing", "", "zzz", `--freeze "zzz" matches no parameter`},
		{"--freeze matching only a buffer", "", "inv_freq", `--freeze "inv_freq" matches no parameter`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := selection(tc.train, tc.freeze)
			_, _, err := s.Select(cls)
			require.ErrorContains(t, err, tc.want)
			require.NotContains(t, err.Error(), "<nil>")
		})
	}
}

// TestTiesOnlyEmbeddingCopies: the transposed copy of the embedding table
// used as the head is tied to it (and ApplyTies makes the head read the
// table through a Transpose); two norm gains of ones, equal as a fresh
// model has them, and a projection that happens to equal another are
// separate parameters.
func TestTiesOnlyEmbeddingCopies(t *testing.T) {
	b := onnx.NewGraphBuilder("g")
	ids := b.Input("input_ids", onnx.Int64, onnx.P("batch"), onnx.P("seq"))
	emb := []float32{1, 2, 3, 4, 5, 6} // [3, 2]
	embT := []float32{1, 3, 5, 2, 4, 6}
	b.Initializer("emb", onnx.NewTensor("emb", []int64{3, 2}, emb))
	b.Initializer("head", onnx.NewTensor("head", []int64{2, 3}, embT))
	b.Initializer("g1", onnx.NewTensor("g1", []int64{2}, []float32{1, 1}))
	b.Initializer("g2", onnx.NewTensor("g2", []int64{2}, []float32{1, 1}))
	b.Initializer("p1", onnx.NewTensor("p1", []int64{2, 2}, []float32{7, 8, 9, 10}))
	b.Initializer("p2", onnx.NewTensor("p2", []int64{2, 2}, []float32{7, 8, 9, 10}))
	h := b.Node("Gather", []string{"emb", ids})
	h = b.Node("Mul", []string{"g1", h})
	h = b.Node("MatMul", []string{h, "p1"})
	h = b.Node("Mul", []string{"g2", h})
	h = b.Node("MatMul", []string{h, "p2"})
	out := b.Node("MatMul", []string{h, "head"})
	b.Output(out, onnx.Float32)
	m := b.Model(18)
	ties, err := lmgraph.FindTies(m, []string{"emb", "head", "g1", "g2", "p1", "p2"})
	require.NoError(t, err)
	require.Equal(t, []lmgraph.Tie{{Copy: "head", Of: "emb", Transposed: true}}, ties)
	require.NoError(t, lmgraph.ApplyTies(m.Graph(), ties))
	for _, init := range m.Graph().GetInitializer() {
		require.NotEqual(t, "head", init.GetName(), "the copy is gone")
	}
	require.Equal(t, "Transpose", m.Graph().GetNode()[0].GetOpType())
	require.Equal(t, []string{"emb"}, m.Graph().GetNode()[0].GetInput())
}

// TestLoRACanonical: targets become a set in LoRATargets' order, unknown
// ones kept (after) for Validate to name.
func TestLoRACanonical(t *testing.T) {
	for _, tc := range []struct{ in, want []string }{
		{[]string{"v_proj", "q_proj", "down_proj"}, []string{"q_proj", "v_proj", "down_proj"}},
		{[]string{"q_proj", "q_proj", "v_proj"}, []string{"q_proj", "v_proj"}},
		{[]string{"x_proj", "k_proj", "x_proj"}, []string{"k_proj", "x_proj"}},
		{nil, nil},
	} {
		l := lmgraph.LoRA{Rank: 2, Alpha: 4, Targets: tc.in}.Canonical()
		require.Equal(t, tc.want, l.Targets, "%v", tc.in)
		require.Equal(t, 2, l.Rank)
	}
}

// TestParseSelection: a Selection's String, as run settings record it,
// reads back to the same selection (eval and generate open a run's
// checkpoints with it); "" is every parameter; other text is an error.
func TestSelectionFlags(t *testing.T) {
	for _, tc := range []struct {
		sel  lmgraph.Selection
		want string
	}{
		{lmgraph.Selection{}, ""},
		{selection(`layers\.0\.`, ""), `--train "layers\\.0\\."`},
		{selection("", "embed"), `--freeze "embed"`},
		{selection("q_proj", `layers\.[12]\.`), `--train "q_proj", --freeze "layers\\.[12]\\."`},
	} {
		require.Equal(t, tc.want, tc.sel.Flags(), tc.sel.String())
	}
}

func TestParseSelection(t *testing.T) {
	for _, sel := range []lmgraph.Selection{
		{},
		selection(`layers\.0\.`, ""),
		selection("", "embed"),
		selection(`q_proj|"k_proj"`, `layers\.[12]\.`),
	} {
		got, err := lmgraph.ParseSelection(sel.String())
		require.NoError(t, err, sel.String())
		require.Equal(t, sel.String(), got.String())
		require.Equal(t, sel.Train == nil, got.Train == nil, sel.String())
		require.Equal(t, sel.Freeze == nil, got.Freeze == nil, sel.String())
	}
	got, err := lmgraph.ParseSelection("")
	require.NoError(t, err)
	require.Equal(t, lmgraph.Selection{}, got)
	for _, bad := range []string{`train="a"`, `train=a freeze=""`, `train="a" freeze="b" x`, `freeze="" train=""`, `train="(" freeze=""`} {
		_, err := lmgraph.ParseSelection(bad)
		require.Error(t, err, bad)
	}
}

// TestSelectionOf: the tensor names a checkpoint that records no
// selection holds (spiral sft's before 2026-12-06) give the selection
// that trains exactly them, which Select then picks, in the model's
// order, through names that are patterns themselves ("."); names that
// no selection trains (none of the model's parameters, or none at all)
// are refused saying what they are.
func TestSelectionOf(t *testing.T) {
	cls := []lmgraph.Initializer{
		{Name: "embed.weight", Parameter: true}, {Name: "layers.0.q.weight", Parameter: true},
		{Name: "layers.0.norm.weight", Parameter: true}, {Name: "layers.10.q.weight", Parameter: true},
		{Name: "norm.weight", Parameter: true}, {Name: "inv_freq", Reason: lmgraph.ReasonBuffer},
	}
	var parameters []string
	for _, c := range cls {
		if c.Parameter {
			parameters = append(parameters, c.Name)
		}
	}
	for _, tc := range []struct {
		name   string
		held   []string
		want   string // the Selection's String
		trains []string
	}{
		{"every parameter", []string{"norm.weight", "embed.weight", "layers.0.q.weight", "layers.10.q.weight", "layers.0.norm.weight"},
			`train="" freeze=""`, parameters},
		{"one layer's, as --train layers\\.0\\.", []string{"layers.0.q.weight", "layers.0.norm.weight"},
			`train="^(?:layers\\.0\\.q\\.weight|layers\\.0\\.norm\\.weight)$" freeze=""`, []string{"layers.0.q.weight", "layers.0.norm.weight"}},
		{"all but the embedding, as --freeze embed", []string{"layers.0.q.weight", "layers.0.norm.weight", "layers.10.q.weight", "norm.weight"},
			`train="" freeze="^(?:embed\\.weight)$"`, []string{"layers.0.q.weight", "layers.0.norm.weight", "layers.10.q.weight", "norm.weight"}},
		{"in another order", []string{"norm.weight", "embed.weight"},
			`train="^(?:embed\\.weight|norm\\.weight)$" freeze=""`, []string{"embed.weight", "norm.weight"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sel, err := lmgraph.SelectionOf(parameters, tc.held)
			require.NoError(t, err)
			require.Equal(t, tc.want, sel.String())
			trained, _, err := sel.Select(cls)
			require.NoError(t, err)
			var names []string
			for _, c := range trained {
				names = append(names, c.Name)
			}
			require.Equal(t, tc.trains, names)
			parsed, err := lmgraph.ParseSelection(sel.String())
			require.NoError(t, err)
			require.Equal(t, sel.String(), parsed.String())
		})
	}
	for _, tc := range []struct {
		name string
		held []string
		want string
	}{
		{"none", nil, "holds 0 of the model's 5 parameters"},
		{"a buffer", []string{"layers.0.q.weight", "inv_freq"}, `holds 1 of the model's 5 parameters and 1 other tensor ("inv_freq")`},
		{"another model's", []string{"a", "b", "c", "d", "norm.weight"}, `holds 1 of the model's 5 parameters and 4 other tensors ("a", "b", "c", ...)`},
		{"a name the pattern of another", []string{"layers.0.q.weight", "layers.0.q.weigh"}, `holds 1 of the model's 5 parameters and 1 other tensor ("layers.0.q.weigh")`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := lmgraph.SelectionOf(parameters, tc.held)
			var un *lmgraph.UnselectableError
			require.ErrorAs(t, err, &un)
			require.Equal(t, tc.want, un.Found())
			require.EqualError(t, err, "lmgraph: no --train and --freeze selection trains exactly the tensors held: "+tc.want)
		})
	}
}
