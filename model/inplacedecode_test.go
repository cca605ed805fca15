package model_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/spiral-rl/spiral/model"
	"github.com/spiral-rl/spiral/model/modeltest"
	"github.com/spiral-rl/spiral/model/onnx"
	"github.com/spiral-rl/spiral/model/onnx/onnxpb"
	"github.com/spiral-rl/spiral/model/qwen3"
)

// decodeCheck holds a policy's sampling LM, its full-sequence scorer as
// the reference, and the token draws of a test.
type decodeCheck struct {
	t        *testing.T
	lm, full *model.LM
	r        *rand.Rand
}

func (d decodeCheck) seq(n int) []int64 {
	V := d.lm.Signature().Vocab
	s := make([]int64, n)
	for i := range s {
		s[i] = int64(1 + d.r.IntN(V-1))
	}
	return s
}

// fill prefills row r of c with seq alone.
func (d decodeCheck) fill(c *model.RowCache, r int, seq []int64) {
	d.t.Helper()
	_, err := d.lm.Extend(context.Background(), c, r, seq, []int{len(seq)}, nil)
	require.NoError(d.t, err)
}

// filled returns a cache of a row per sequence of seqs and the given
// capacity, each row prefilled with its sequence alone (none for nil).
func (d decodeCheck) filled(capacity int, seqs [][]int64) *model.RowCache {
	d.t.Helper()
	c, err := d.lm.NewRowCache(len(seqs), capacity)
	require.NoError(d.t, err)
	for r, seq := range seqs {
		if len(seq) > 0 {
			d.fill(c, r, seq)
		}
	}
	return c
}

// step runs one decode step on the rows r0.. of c (a new token appended
// to each of seqs) and checks each row's logits against the scorer's
// for the whole sequence.
func (d decodeCheck) step(c *model.RowCache, r0 int, seqs [][]int64, what string) {
	d.t.Helper()
	d.chunk(c, r0, seqs, 1, what)
}

// chunk runs one call of S new positions on every row r0.. of c (S new
// tokens appended to each of seqs) and checks each row's last logits
// against the scorer's for the whole sequence.
func (d decodeCheck) chunk(c *model.RowCache, r0 int, seqs [][]int64, S int, what string) {
	d.t.Helper()
	V := d.lm.Signature().Vocab
	tokens, real := make([]int64, 0, S*len(seqs)), make([]int, len(seqs))
	for i := range seqs {
		next := d.seq(S)
		tokens = append(tokens, next...)
		seqs[i] = append(seqs[i], next...)
		real[i] = S
	}
	logits, err := d.lm.Extend(context.Background(), c, r0, tokens, real, nil)
	require.NoError(d.t, err)
	for i, s := range seqs {
		require.InDeltaSlice(d.t, aloneLogits(d.t, d.full, s), logits[i*V:(i+1)*V], 1e-4, "%s: row %d (%d tokens)", what, r0+i, len(s))
	}
}

// tinyDecodeCheck opens the tiny model's policy, which has a decode
// graph, with its draws seeded by seed.
func tinyDecodeCheck(t *testing.T, seed uint64) decodeCheck {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, qwen3.WriteDir(dir, qwen3.Tiny(), 3))
	p, err := model.OpenPolicy(context.Background(), modeltest.Runtime(t), filepath.Join(dir, "model.onnx"), t.TempDir(), model.PolicyOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, p.Close()) })
	require.NotEmpty(t, p.Artifacts.DecodePath())
	return decodeCheck{t: t, lm: p.LM, full: scorerOf(t, p), r: rand.New(rand.NewPCG(seed, seed))}
}

// TestDecodeGraphEdgeCases runs decode steps on the decode graph in the
// cache's corner cases, each against the full graph: empty rows beside
// filled ones, a row filling the capacity, every row of one position
// (GroupQueryAttention takes a call whose total length is 1 for a first
// prompt), a cache laid out anew by Fit, a cleared row over stale slots,
// a moved row and a call starting past row 0; and counts the calls that
// ran on it.
func TestDecodeGraphEdgeCases(t *testing.T) {
	d := tinyDecodeCheck(t, 9)

	seqs := [][]int64{nil, d.seq(5), nil, d.seq(10)}
	c := d.filled(12, seqs)
	d.step(c, 0, seqs, "empty rows beside filled ones, a row reaching the capacity")
	require.Equal(t, int64(1), d.lm.DecodeGraphCalls())

	for i := range 4 {
		c.Clear(i)
		seqs[i] = d.seq(1)
		d.fill(c, i, seqs[i])
	}
	d.step(c, 0, seqs, "every row of one position")
	d.step(c, 0, seqs, "every row of two")

	require.True(t, c.Fit(2, 20))
	seqs = [][]int64{d.seq(17), d.seq(3)}
	d.fill(c, 0, seqs[0])
	d.fill(c, 1, seqs[1])
	for k := range 2 {
		d.step(c, 0, seqs, fmt.Sprint("laid out anew, step ", k))
	}
	d.step(c, 1, seqs[1:], "a call from row 1")
	c.Clear(0)
	seqs[0] = d.seq(2)
	d.fill(c, 0, seqs[0])
	d.step(c, 0, seqs, "a cleared row over stale slots")
	require.NoError(t, c.Move(0, 1))
	seqs[0] = append([]int64(nil), seqs[1]...)
	d.step(c, 0, seqs, "a moved row")
	require.Equal(t, int64(8), d.lm.DecodeGraphCalls(), "every step above ran on the decode graph")
}

// TestDecodeGraphChunks: a call of several positions in which every row
// takes all of them (a prefill's chunk after the first, once every
// prompt has begun) runs on the decode graph too, row by row (ONNX
// Runtime's kernel takes several positions over a past for one row at a
// time): beside filled rows an empty one, a row reaching the capacity, a
// call from row 1, then decode steps on what the chunks wrote; each
// against the full graph. A chunk whose rows are all empty stays on the
// sampling graph, fed no past.
func TestDecodeGraphChunks(t *testing.T) {
	d := tinyDecodeCheck(t, 10)
	c, err := d.lm.NewRowCache(3, 12)
	require.NoError(t, err)
	seqs := [][]int64{nil, nil, nil}
	d.chunk(c, 0, seqs, 4, "every row empty")
	require.Zero(t, d.lm.DecodeGraphCalls(), "no past: the sampling graph")
	c.Clear(0)
	seqs[0] = nil
	d.chunk(c, 0, seqs, 3, "an empty row beside filled ones")
	require.Equal(t, int64(3), d.lm.DecodeGraphCalls(), "one call a row")
	d.chunk(c, 1, seqs[1:], 5, "from row 1, row 2 reaching the capacity")
	require.Equal(t, []int{3, 12, 12}, []int{c.Len(0), c.Len(1), c.Len(2)})
	d.step(c, 0, seqs[:1], "a decode step after the chunks")
	require.Equal(t, int64(3+2+1), d.lm.DecodeGraphCalls())

	// Interrupted after its first row, a chunk leaves every row's
	// length as it was, and the chunk run again gives the right logits.
	require.True(t, c.Fit(2, 12))
	seqs = [][]int64{d.seq(4), d.seq(6)}
	d.fill(c, 0, seqs[0])
	d.fill(c, 1, seqs[1])
	tokens := d.seq(2 * 3)
	_, err = d.lm.Extend(&endsAfter{Context: context.Background(), checks: 2}, c, 0, tokens, []int{3, 3}, nil)
	require.ErrorIs(t, err, context.Canceled)
	require.Equal(t, []int{4, 6}, []int{c.Len(0), c.Len(1)})
	d.chunk(c, 0, seqs, 3, "after an interrupted chunk")
}

// endsAfter is a context that ends after Err has been asked checks times.
type endsAfter struct {
	context.Context
	checks int
}

func (c *endsAfter) Err() error {
	if c.checks--; c.checks < 0 {
		return context.Canceled
	}
	return nil
}

// writeALiBiModel writes the tiny model with an ALiBi-like bias (a slope
// times each key's position, counted from the attention mask) added to
// the mask every layer's scores get: a form the decode graph must not
// take, since GroupQueryAttention would drop the bias.
func writeALiBiModel(t *testing.T) string {
	t.Helper()
	c := qwen3.Tiny()
	m, err := qwen3.Build(c, 3)
	require.NoError(t, err)
	g := m.Graph()
	producer := map[string]*onnxpb.NodeProto{}
	for _, n := range g.GetNode() {
		for _, o := range n.Output {
			producer[o] = n
		}
	}
	var adds []*onnxpb.NodeProto
	for _, n := range g.GetNode() {
		if n.GetOpType() == "Softmax" {
			adds = append(adds, producer[n.Input[0]])
		}
	}
	require.NotEmpty(t, adds)
	mask := adds[0].Input[1]
	for _, a := range adds {
		require.Equal(t, "Add", a.GetOpType())
		require.Equal(t, mask, a.Input[1])
		a.Input[1] = "alibi/mask"
	}
	g.Initializer = append(g.Initializer,
		onnx.NewTensor("alibi/slope", nil, []float32{0.3}),
		onnx.NewTensor("alibi/axis", nil, []int64{1}),
		onnx.NewTensor("alibi/axes", []int64{2}, []int64{1, 2}))
	// The bias's nodes go first: they read graph inputs and initializers
	// only, and the mask's Add goes before the first reader of its output.
	bias := []*onnxpb.NodeProto{
		{OpType: proto.String("Cast"), Name: proto.String("alibi/cast"), Input: []string{model.AttentionMask}, Output: []string{"alibi/maskf"},
			Attribute: []*onnxpb.AttributeProto{{Name: proto.String("to"), Type: onnxpb.AttributeProto_INT.Enum(), I: proto.Int64(int64(onnxpb.TensorProto_FLOAT))}}},
		{OpType: proto.String("CumSum"), Name: proto.String("alibi/cumsum"), Input: []string{"alibi/maskf", "alibi/axis"}, Output: []string{"alibi/pos"}},
		{OpType: proto.String("Mul"), Name: proto.String("alibi/mul"), Input: []string{"alibi/pos", "alibi/slope"}, Output: []string{"alibi/bias2"}},
		{OpType: proto.String("Unsqueeze"), Name: proto.String("alibi/unsqueeze"), Input: []string{"alibi/bias2", "alibi/axes"}, Output: []string{"alibi/bias"}},
	}
	add := &onnxpb.NodeProto{OpType: proto.String("Add"), Name: proto.String("alibi/add"), Input: []string{mask, "alibi/bias"}, Output: []string{"alibi/mask"}}
	var nodes []*onnxpb.NodeProto
	for _, n := range g.Node {
		if n == adds[0] {
			nodes = append(nodes, add)
		}
		nodes = append(nodes, n)
	}
	g.Node = append(bias, nodes...)
	dir := t.TempDir()
	path := filepath.Join(dir, "model.onnx")
	require.NoError(t, onnx.Save(path, m, onnx.SaveOptions{}))
	cfg, err := c.HFConfigJSON()
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, model.ConfigFile), cfg, 0o666))
	return path
}

// TestDecodeGraphRefusesABias: an export whose scores get an additive
// bias besides the mask gets no decode graph, and its decode steps match
// the full graph (with the bias dropped they were 0.02 off per logit).
func TestDecodeGraphRefusesABias(t *testing.T) {
	rt := modeltest.Runtime(t)
	p, err := model.OpenPolicy(context.Background(), rt, writeALiBiModel(t), t.TempDir(), model.PolicyOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, p.Close()) })
	require.Empty(t, p.Artifacts.DecodePath())
	d := decodeCheck{t: t, lm: p.LM, full: scorerOf(t, p), r: rand.New(rand.NewPCG(5, 5))}
	seqs := [][]int64{d.seq(6), d.seq(9)}
	c := d.filled(16, seqs)
	d.step(c, 0, seqs, "decode with a bias")
	require.Zero(t, d.lm.DecodeGraphCalls())
}

// TestDecodeGraphFollowsConfig: whether there is a decode graph depends
// on config.json (a sliding window, the head count) as well as the
// model, so artifacts made under one config.json are rebuilt under
// another, though the model file is the same.
func TestDecodeGraphFollowsConfig(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, qwen3.WriteDir(dir, qwen3.Tiny(), 3))
	src := filepath.Join(dir, "model.onnx")
	arts := t.TempDir()
	a, err := model.PrepareArtifacts(context.Background(), src, arts, model.ArtifactOptions{})
	require.NoError(t, err)
	require.NotEmpty(t, a.DecodePath())
	cfg, err := qwen3.Tiny().HFConfigJSON()
	require.NoError(t, err)
	windowed := append(cfg[:len(cfg)-2:len(cfg)-2], []byte(`, "sliding_window": 4096, "use_sliding_window": true}`)...)
	require.NoError(t, os.WriteFile(filepath.Join(dir, model.ConfigFile), windowed, 0o666))
	a, err = model.PrepareArtifacts(context.Background(), src, arts, model.ArtifactOptions{})
	require.NoError(t, err)
	require.True(t, a.Rebuilt)
	require.Empty(t, a.DecodePath())
	require.NoError(t, os.WriteFile(filepath.Join(dir, model.ConfigFile), cfg, 0o666))
	a, err = model.PrepareArtifacts(context.Background(), src, arts, model.ArtifactOptions{})
	require.NoError(t, err)
	require.True(t, a.Rebuilt)
	require.NotEmpty(t, a.DecodePath())
}

// TestPolicyGraphsReadUnderLock: a policy's sampling and decode graphs
// are the ones read while it held the artifacts' lock, though another
// process rebuilds the directory for another model before they are first
// used (its sessions open then): the calls run on this model's graphs,
// not the other's ("Invalid input name" when the layers differ, which
// TestConcurrentEvalsOfTwoModels met 4 times in 12). The full-sequence
// graph, which only tests use, is read on first use: a policy that asks
// for it after the rebuild is refused, naming the file, rather than
// given the other model's.
func TestPolicyGraphsReadUnderLock(t *testing.T) {
	rt := modeltest.Runtime(t)
	dirs := [2]string{t.TempDir(), t.TempDir()}
	for i, layers := range []int{2, 1} {
		c := qwen3.Tiny()
		c.Layers = layers
		require.NoError(t, qwen3.WriteDir(dirs[i], c, 3))
	}
	arts := t.TempDir()
	var pols [2]*model.Policy
	for i := range pols {
		p, err := model.OpenPolicy(context.Background(), rt, filepath.Join(dirs[0], "model.onnx"), arts, model.PolicyOptions{})
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, p.Close()) })
		pols[i] = p
	}
	p, late := pols[0], pols[1]
	full := scorerOf(t, p)
	other, err := model.PrepareArtifacts(context.Background(), filepath.Join(dirs[1], "model.onnx"), arts, model.ArtifactOptions{})
	require.NoError(t, err)
	require.True(t, other.Rebuilt)
	require.NotEmpty(t, other.DecodePath())
	_, err = late.Scorer()
	require.ErrorContains(t, err, filepath.Join(arts, model.RolloutFile)+" changed since the policy opened")
	d := decodeCheck{t: t, lm: p.LM, full: full, r: rand.New(rand.NewPCG(4, 4))}
	seqs := [][]int64{d.seq(5), d.seq(3)}
	c := d.filled(12, seqs)
	d.step(c, 0, seqs, "after the directory was rebuilt")
	require.Equal(t, int64(1), d.lm.DecodeGraphCalls())
}

// TestDecodeGraphPaddedCalls: calls that are not one new position on
// every row run on the sampling graph though the LM has a decode graph,
// and give each row that takes a token the logits of its sequence run
// alone: a row taking none this call (beside a row that does, and at the
// cache's capacity, where the decode graph would write past the row),
// and a call of two positions a row, one of them padding. Each row then
// decodes on, on the decode graph.
func TestDecodeGraphPaddedCalls(t *testing.T) {
	d := tinyDecodeCheck(t, 6)
	V := d.lm.Signature().Vocab
	const capacity = 10
	for _, c := range []struct {
		name string
		lens []int // each row's length before the call
		real []int // each row's new tokens, the last real[i] of its S
		S    int
	}{
		{"a row taking no token", []int{4, 6, 3}, []int{1, 0, 1}, 1},
		{"a full row taking no token", []int{4, capacity, 3}, []int{1, 0, 1}, 1},
		{"two positions a row, one padding", []int{4, 6, 3}, []int{1, 1, 1}, 2},
		{"two positions a row, one row padding only", []int{4, capacity, 3}, []int{1, 0, 2}, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			d.t = t
			seqs := make([][]int64, len(c.lens))
			for i, n := range c.lens {
				seqs[i] = d.seq(n)
			}
			cache := d.filled(capacity, seqs)
			tokens := make([]int64, len(c.lens)*c.S)
			for i, k := range c.real {
				for j := c.S - k; j < c.S; j++ {
					tok := d.seq(1)[0]
					tokens[i*c.S+j] = tok
					seqs[i] = append(seqs[i], tok)
				}
			}
			calls := d.lm.DecodeGraphCalls()
			logits, err := d.lm.Extend(context.Background(), cache, 0, tokens, c.real, nil)
			require.NoError(t, err)
			require.Equal(t, calls, d.lm.DecodeGraphCalls(), "the call ran on the sampling graph")
			for i, k := range c.real {
				require.Equal(t, len(seqs[i]), cache.Len(i))
				if k > 0 {
					require.InDeltaSlice(t, aloneLogits(t, d.full, seqs[i]), logits[i*V:(i+1)*V], 1e-4, "row %d", i)
				}
			}
			// The rows below the capacity decode on, on the decode graph.
			for i := range seqs {
				if len(seqs[i]) == capacity {
					continue
				}
				d.step(cache, i, seqs[i:i+1], "decoding on")
			}
			require.Greater(t, d.lm.DecodeGraphCalls(), calls)
		})
	}
}

// TestDecodeGraphFollowsConfigHeads: an export whose shapes do not tell
// the query heads (the TorchScript fixture's, whose projections are
// unnamed) takes them from config.json, so that artifacts made under one
// head count are rebuilt under another: a count that does not group the
// KV heads, or that does but is not the output projection's width
// (whose decode graph's kernel would refuse every call), leaves no
// decode graph, and the right one gives it back.
func TestDecodeGraphFollowsConfigHeads(t *testing.T) {
	dir := copyHFFixture(t)
	cfg, err := os.ReadFile(filepath.Join(dir, model.ConfigFile))
	require.NoError(t, err)
	require.Contains(t, string(cfg), `"num_attention_heads": 4,`)
	src, arts := filepath.Join(dir, "model.onnx"), t.TempDir()
	for i, c := range []struct {
		heads  int
		decode bool
	}{{4, true}, {3, false}, {2, false}, {4, true}} { // 2 divides the 2 KV heads: only the output projection's width refuses it
		heads := strings.Replace(string(cfg), `"num_attention_heads": 4,`, fmt.Sprintf(`"num_attention_heads": %d,`, c.heads), 1)
		require.NoError(t, os.WriteFile(filepath.Join(dir, model.ConfigFile), []byte(heads), 0o666))
		a, err := model.PrepareArtifacts(context.Background(), src, arts, model.ArtifactOptions{})
		require.NoError(t, err)
		require.True(t, a.Rebuilt, "heads %d", c.heads)
		require.Equal(t, c.decode, a.DecodePath() != "", "heads %d", c.heads)
		if i == 0 {
			again, err := model.PrepareArtifacts(context.Background(), src, arts, model.ArtifactOptions{})
			require.NoError(t, err)
			require.False(t, again.Rebuilt, "the same config.json reuses the artifacts")
		}
	}
}

// TestArtifactsFollowTieConfig: whether an exporter's copy of the
// embedding is tied to it depends on config.json's tie_word_embeddings
// as well as the model, so artifacts made under one setting are rebuilt
// under another (they were reused, training a head that config.json says
// is its own as the embedding, and Export, which reads the ties from
// config.json, then left the head untrained).
func TestArtifactsFollowTieConfig(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"model.onnx", model.ConfigFile} {
		b, err := os.ReadFile(filepath.Join(hfFixtureDir, f))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, f), b, 0o666))
	}
	src := filepath.Join(dir, "model.onnx")
	cfg, err := os.ReadFile(filepath.Join(dir, model.ConfigFile))
	require.NoError(t, err)
	require.Contains(t, string(cfg), `"tie_word_embeddings": true`)
	untied := []byte(strings.Replace(string(cfg), `"tie_word_embeddings": true`, `"tie_word_embeddings": false`, 1))
	arts := t.TempDir()
	for i, step := range []struct {
		config  []byte
		rebuilt bool
		tied    bool
	}{
		{cfg, true, true},
		{cfg, false, true},
		{untied, true, false},
		{untied, false, false},
		{cfg, true, true},
	} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, model.ConfigFile), step.config, 0o666))
		a, err := model.PrepareArtifacts(context.Background(), src, arts, model.ArtifactOptions{})
		require.NoError(t, err, "step %d", i)
		require.Equal(t, step.rebuilt, a.Rebuilt, "step %d: rebuilt", i)
		require.Equal(t, step.tied, len(a.Manifest.Ties) > 0, "step %d: ties %v", i, a.Manifest.Ties)
		ties, err := model.Ties(src)
		require.NoError(t, err)
		require.Equal(t, len(ties), len(a.Manifest.Ties), "step %d: the artifacts' ties are Export's", i)
	}
}

// TestArtifactsRefuseConfigOfAnotherGraph: a config.json beside the
// model that states another layer count, KV head count, head width or
// vocabulary than the graph has (another model's, copied in) was used in
// silence by train, eval and generate for the context length, the head
// count and the micro-batch size; it is refused naming the file, each
// field and the graph's value, whether the artifacts are built or
// already there. A config.json that states none of them passes.
func TestArtifactsRefuseConfigOfAnotherGraph(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, qwen3.WriteDir(dir, qwen3.Tiny(), 3))
	src, path := filepath.Join(dir, "model.onnx"), filepath.Join(dir, model.ConfigFile)
	good, err := os.ReadFile(path)
	require.NoError(t, err)
	other := qwen3.Tiny()
	other.Layers, other.KVHeads, other.HeadDim, other.Vocab = 36, 4, 16, 151936
	bad, err := other.HFConfigJSON()
	require.NoError(t, err)
	want := "model: " + path + ": num_hidden_layers 36, but the graph has 2; num_key_value_heads 4, but the graph has 2; head_dim 16, but the graph has 32; vocab_size 151936, but the graph has 100: config.json does not describe the graph (another model's config.json?)"
	for _, built := range []bool{false, true} {
		arts := t.TempDir()
		if built {
			require.NoError(t, os.WriteFile(path, good, 0o666))
			_, err := model.PrepareArtifacts(context.Background(), src, arts, model.ArtifactOptions{})
			require.NoError(t, err)
		}
		require.NoError(t, os.WriteFile(path, bad, 0o666))
		_, err = model.PrepareArtifacts(context.Background(), src, arts, model.ArtifactOptions{})
		require.EqualError(t, err, want, "built before: %v", built)
	}
	require.NoError(t, os.WriteFile(path, []byte(`{"max_position_embeddings": 512}`), 0o666))
	_, err = model.PrepareArtifacts(context.Background(), src, t.TempDir(), model.ArtifactOptions{})
	require.NoError(t, err)
}
