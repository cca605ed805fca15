package checkpoint

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/spiral-rl/spiral/model/optim"
	"github.com/spiral-rl/spiral/model/params"
	"github.com/stretchr/testify/require"
)

var specs = []params.Spec{
	{Name: "model.embed_tokens.weight", Shape: []int64{11, 4}},
	{Name: "model.layers.0.input_layernorm.weight", Shape: []int64{4}},
	{Name: "model.layers.0.self_attn.q_proj.weight", Shape: []int64{4, 4}},
	{Name: "lm_head.weight", Shape: []int64{4, 11}},
}

// trained returns weights and an AdamW that has taken steps updates on
// random gradients, so that weights and moments hold arbitrary bits.
func trained(t testing.TB, rng *rand.Rand, steps int) (*params.Store, *optim.AdamW) {
	t.Helper()
	w, err := params.NewStore(specs)
	require.NoError(t, err)
	for i := range w.Flat() {
		w.Flat()[i] = float32(rng.NormFloat64())
	}
	o, err := optim.NewAdamW(optim.DefaultConfig(), w)
	require.NoError(t, err)
	g := w.NewGrads()
	for range steps {
		randomGrads(rng, g)
		require.NoError(t, o.Step(w, g, 1e-2))
	}
	return w, o
}

func randomGrads(rng *rand.Rand, g *params.Store) {
	for i := range g.Flat() {
		g.Flat()[i] = float32(rng.NormFloat64() * math.Pow(10, -3*rng.Float64()))
	}
}

func fresh(t testing.TB) (*params.Store, *optim.AdamW) {
	t.Helper()
	w, err := params.NewStore(specs)
	require.NoError(t, err)
	o, err := optim.NewAdamW(optim.DefaultConfig(), w)
	require.NoError(t, err)
	return w, o
}

func requireBits(t *testing.T, want, got *params.Store, what string) {
	t.Helper()
	require.NoError(t, want.SameLayout(got))
	for i := range want.Flat() {
		if math.Float32bits(want.Flat()[i]) != math.Float32bits(got.Flat()[i]) {
			t.Fatalf("%s: value %d differs: %v vs %v", what, i, want.Flat()[i], got.Flat()[i])
		}
	}
}

func TestRoundTripBitExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	w, o := trained(t, rng, 3)
	w.Flat()[0] = float32(math.Copysign(0, -1)) // odd finite values survive too: -0
	w.Flat()[1] = math.Float32frombits(1)       // and the smallest subnormal
	st := State{
		Step:       7,
		DataCursor: json.RawMessage(`{"epoch":1,"offset":12345}`),
		Config:     json.RawMessage(`{"lr":1e-6,"model":"tiny"}`),
	}
	dir := t.TempDir()
	path, err := Save(dir, w, o, st, Options{})
	require.NoError(t, err)
	require.Equal(t, filepath.Join(dir, "ckpt-000007"), path)
	require.Equal(t, path, pointer(t, dir))

	w2, o2 := fresh(t)
	views := &w2.At(0).Data[0]
	got, err := Load(context.Background(), path, w2, o2)
	require.NoError(t, err)
	require.Same(t, views, &w2.At(0).Data[0], "loaded in place")
	requireBits(t, w, w2, "weights")
	requireBits(t, o.ExpAvg(), o2.ExpAvg(), "exp_avg")
	requireBits(t, o.ExpAvgSq(), o2.ExpAvgSq(), "exp_avg_sq")
	require.Equal(t, o.Steps(), o2.Steps())
	require.Equal(t, int64(3), got.OptimizerSteps)
	require.Equal(t, int64(7), got.Step)
	require.Equal(t, FormatVersion, got.FormatVersion)
	require.JSONEq(t, string(st.DataCursor), string(got.DataCursor))
	require.JSONEq(t, string(st.Config), string(got.Config))

	// Training continues identically from the restored state.
	w.Flat()[0], w2.Flat()[0] = 0, 0
	g := w.NewGrads()
	randomGrads(rng, g)
	require.NoError(t, o.Step(w, g, 1e-2))
	require.NoError(t, o2.Step(w2, g, 1e-2))
	requireBits(t, w, w2, "weights after one more step")

	// The weights file is a plain safetensors file named by initializer.
	b, err := os.ReadFile(filepath.Join(path, ModelFile))
	require.NoError(t, err)
	f, err := params.Decode(b)
	require.NoError(t, err)
	require.Equal(t, "model.embed_tokens.weight", f.Tensors[0].Name)
	b, err = os.ReadFile(filepath.Join(path, OptimizerFile))
	require.NoError(t, err)
	f, err = params.Decode(b)
	require.NoError(t, err)
	require.Equal(t, "model.embed_tokens.weight.exp_avg", f.Tensors[0].Name)
	require.Equal(t, "lm_head.weight.exp_avg_sq", f.Tensors[len(f.Tensors)-1].Name)
}

func TestWeightsOnly(t *testing.T) {
	w, _ := trained(t, rand.New(rand.NewPCG(3, 3)), 0)
	dir := t.TempDir()
	path, err := Save(dir, w, nil, State{Step: 0}, Options{})
	require.NoError(t, err)
	_, err = os.Stat(filepath.Join(path, OptimizerFile))
	require.True(t, errors.Is(err, os.ErrNotExist))
	w2, o2 := fresh(t)
	_, err = Load(context.Background(), path, w2, nil)
	require.NoError(t, err)
	requireBits(t, w, w2, "weights")
	_, err = Load(context.Background(), path, w2, o2)
	require.ErrorContains(t, err, "no optimiser state")
}

// TestDigestCoversState: Digest is the checksum of the whole ModelFile,
// whose metadata records the step and a checksum of the
// data cursor and configuration: byte-identical tensors saved at another
// step, data position or configuration (a run of other settings) have
// another digest; the same checkpoint saved again, or copied, the same.
func TestDigestCoversState(t *testing.T) {
	w, _ := trained(t, rand.New(rand.NewPCG(5, 6)), 0)
	base := State{Step: 3, DataCursor: json.RawMessage(`{"offset":1}`), Config: json.RawMessage(`{"lr":1e-6}`)}
	digest := func(st State) string {
		t.Helper()
		path, err := Save(t.TempDir(), w, nil, st, Options{})
		require.NoError(t, err)
		got, err := ReadState(path)
		require.NoError(t, err)
		return got.Digest()
	}
	want := digest(base)
	require.Regexp(t, `^crc32c:[0-9a-f]{8}:[0-9]+$`, want)
	require.Equal(t, want, digest(base), "the same checkpoint saved again")
	for _, tc := range []struct {
		name string
		edit func(*State)
	}{
		{"step", func(st *State) { st.Step = 4 }},
		{"data cursor", func(st *State) { st.DataCursor = json.RawMessage(`{"offset":2}`) }},
		{"configuration", func(st *State) { st.Config = json.RawMessage(`{"lr":2e-6}`) }},
	} {
		st := base
		tc.edit(&st)
		require.NotEqual(t, want, digest(st), "%s: the tensors are the same, the file not", tc.name)
	}
}

// saveSteps saves checkpoints at the given steps (training one step
// between them) and returns the weights saved at each.
func saveSteps(t *testing.T, dir string, steps []int64, o Options) map[int64]*params.Store {
	t.Helper()
	rng := rand.New(rand.NewPCG(5, 5))
	w, opt := trained(t, rng, 1)
	g := w.NewGrads()
	saved := map[int64]*params.Store{}
	for _, s := range steps {
		randomGrads(rng, g)
		require.NoError(t, opt.Step(w, g, 1e-2))
		// A configuration with characters json.Marshal escapes in
		// state.json, which the checksum of it must read alike.
		st := State{Step: s, DataCursor: json.RawMessage(`{"epoch":0,"position":14}`), Config: json.RawMessage(`{"data":"a<b&c.jsonl","sampling":{"temperature":1}}`)}
		_, err := Save(dir, w, opt, st, o)
		require.NoError(t, err)
		c := w.NewGrads()
		require.NoError(t, c.CopyFrom(w))
		saved[s] = c
	}
	return saved
}

func TestCorruptionDetectedAndOlderSurvives(t *testing.T) {
	cases := []struct {
		name    string
		file    string
		corrupt func(t *testing.T, path string)
		want    string
	}{
		{"truncated weights", ModelFile, func(t *testing.T, p string) {
			fi, err := os.Stat(p)
			require.NoError(t, err)
			require.NoError(t, os.Truncate(p, fi.Size()-10))
		}, "truncated or corrupted"},
		{"bit flip in weights data", ModelFile, func(t *testing.T, p string) { flipByte(t, p, -5) }, "CRC-32C"},
		{"bit flip in optimizer data", OptimizerFile, func(t *testing.T, p string) { flipByte(t, p, -1) }, "CRC-32C"},
		{"header garbled", ModelFile, func(t *testing.T, p string) { flipByte(t, p, 8) }, "safetensors"},
		// A flip that leaves the header valid JSON but renames a tensor
		// ("q_proj" to "a_proj") is damage, not another model's layout.
		{"tensor name garbled", ModelFile, func(t *testing.T, p string) { flipAt(t, p, "q_proj") }, "CRC-32C"},
		{"moment name garbled", OptimizerFile, func(t *testing.T, p string) { flipAt(t, p, "q_proj") }, "CRC-32C"},
		{"state garbled", StateFile, func(t *testing.T, p string) {
			require.NoError(t, os.WriteFile(p, []byte(`{"format_version":1,"step":`), 0o644))
		}, "corrupted"},
		// state.json has no checksum of its own: a flip in a digit of
		// its step or optimiser step count leaves it valid JSON.
		{"step in state garbled", StateFile, func(t *testing.T, p string) { replaceIn(t, p, `"step":200`, `"step":201`) }, "corrupted"},
		{"optimizer steps in state garbled", StateFile, func(t *testing.T, p string) {
			replaceIn(t, p, `"optimizer_steps":3`, `"optimizer_steps":7`)
		}, "corrupted"},
		// Nor its data cursor and configuration: a flipped bit in a
		// digit would resume from another place, or be taken for a
		// setting the rerun changed.
		{"data cursor in state garbled", StateFile, func(t *testing.T, p string) {
			replaceIn(t, p, `"position":14`, `"position":16`)
		}, "data cursor and configuration: CRC-32C"},
		{"configuration in state garbled", StateFile, func(t *testing.T, p string) {
			replaceIn(t, p, `"temperature":1`, `"temperature":3`)
		}, "data cursor and configuration: CRC-32C"},
		// Anything after state.json's object is damage too, not to be
		// ignored.
		{"data after the state", StateFile, func(t *testing.T, p string) {
			f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
			require.NoError(t, err)
			_, err = f.WriteString(` {"step":9}`)
			require.NoError(t, errors.Join(err, f.Close()))
		}, "corrupted: extra data after the JSON object"},
		{"weights file missing", ModelFile, func(t *testing.T, p string) { require.NoError(t, os.Remove(p)) }, "no such file"},
		// A directory in a file's place was said to be the file, "4096
		// bytes, state.json records N (truncated or corrupted)".
		{"weights file a directory", ModelFile, func(t *testing.T, p string) {
			require.NoError(t, os.Remove(p))
			require.NoError(t, os.Mkdir(p, 0o755))
		}, "is a directory, not the checkpoint's " + ModelFile + " file (damaged)"},
		{"optimizer file a directory", OptimizerFile, func(t *testing.T, p string) {
			require.NoError(t, os.Remove(p))
			require.NoError(t, os.Mkdir(p, 0o755))
		}, "is a directory, not the checkpoint's " + OptimizerFile + " file (damaged)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			saved := saveSteps(t, dir, []int64{100, 200}, Options{})
			newest := filepath.Join(dir, DirName(200))
			tc.corrupt(t, filepath.Join(newest, tc.file))

			w, o := fresh(t)
			_, err := Load(context.Background(), newest, w, o)
			require.Error(t, err)
			require.Contains(t, err.Error(), tc.want)
			require.Contains(t, err.Error(), filepath.Join(newest, tc.file), "the error names the file")

			// Latest follows the pointer without reading data (documented).
			require.Equal(t, newest, pointer(t, dir))

			// The older checkpoint is intact and Resume falls back to it.
			path, st, skipped, err := Resume(context.Background(), dir, w, o)
			require.NoError(t, err)
			require.Equal(t, filepath.Join(dir, DirName(100)), path)
			require.Equal(t, int64(100), st.Step)
			require.Len(t, skipped, 1)
			require.Contains(t, skipped[0].Error(), tc.want)
			requireBits(t, saved[100], w, "weights of the older checkpoint")
		})
	}
}

// TestNewerFormatStopsTheSearch: a checkpoint whose state.json records
// a format version above this build's (one a newer spiral wrote, when
// the run was resumed with an older binary) was skipped as damaged: the
// run resumed from an older checkpoint, dropping the newer one's steps,
// and its next Save under --keep removed the newer checkpoint as one
// "the run resumed past (damaged)". Resume, Newest and Pick stop at it
// instead, naming the file and the versions, and nothing is loaded.
func TestNewerFormatStopsTheSearch(t *testing.T) {
	dir := t.TempDir()
	saveSteps(t, dir, []int64{100, 200}, Options{})
	newest := filepath.Join(dir, DirName(200))
	replaceIn(t, filepath.Join(newest, StateFile), `"format_version":1`, fmt.Sprintf(`"format_version":%d`, FormatVersion+1))
	want := fmt.Sprintf("%s: format version %d, this build reads 1..%d", filepath.Join(newest, StateFile), FormatVersion+1, FormatVersion)
	for _, tc := range []struct {
		name string
		read func() (string, []error, error)
	}{
		{"Resume", func() (string, []error, error) {
			w, o := fresh(t)
			path, _, skipped, err := Resume(context.Background(), dir, w, o)
			return path, skipped, err
		}},
		{"Pick", func() (string, []error, error) {
			return Pick(dir, func(p string) error {
				w, o := fresh(t)
				_, err := Load(context.Background(), p, w, o)
				return err
			})
		}},
		{"Newest of the states", func() (string, []error, error) {
			return Newest(dir, func(p string) error { _, err := ReadCheckedState(p); return err })
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path, skipped, err := tc.read()
			require.ErrorContains(t, err, want)
			require.True(t, IsFinal(err), "the stop is told from damage")
			require.Empty(t, path, "no older checkpoint taken in its place")
			require.Empty(t, skipped)
		})
	}
	// A version below 1 is no spiral's: damage, skipped as before.
	replaceIn(t, filepath.Join(newest, StateFile), fmt.Sprintf(`"format_version":%d`, FormatVersion+1), `"format_version":0`)
	w, o := fresh(t)
	path, _, skipped, err := Resume(context.Background(), dir, w, o)
	require.NoError(t, err)
	require.Equal(t, filepath.Join(dir, DirName(100)), path)
	require.Len(t, skipped, 1)
}

// TestStateWithoutChecksum: a checkpoint of an older version, whose
// model.safetensors records no checksum of state.json's data cursor and
// configuration, loads.
func TestStateWithoutChecksum(t *testing.T) {
	w, o := trained(t, rand.New(rand.NewPCG(8, 8)), 1)
	dir := t.TempDir()
	path, err := Save(dir, w, o, State{Step: 1, DataCursor: json.RawMessage(`{"position":3}`), Config: json.RawMessage(`{"seed":1}`)}, Options{})
	require.NoError(t, err)
	// model.safetensors as older versions wrote it, and state.json's
	// record of it.
	var b bytes.Buffer
	require.NoError(t, params.WriteParts(&b, map[string]string{"format": "pt", metaStep: "1"}, params.Part{Store: w}))
	require.NoError(t, os.WriteFile(filepath.Join(path, ModelFile), b.Bytes(), 0o644))
	st, err := ReadState(path)
	require.NoError(t, err)
	st.Files[ModelFile] = FileInfo{Size: int64(b.Len()), CRC32C: crc32.Checksum(b.Bytes(), castagnoli)}
	js, err := json.Marshal(st)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(path, StateFile), js, 0o644))

	w2, o2 := fresh(t)
	got, err := Load(context.Background(), path, w2, o2)
	require.NoError(t, err)
	require.JSONEq(t, `{"position":3}`, string(got.DataCursor))
	requireBits(t, w, w2, "weights")
}

func flipByte(t *testing.T, path string, at int64) {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	if at < 0 {
		at += int64(len(b))
	}
	b[at] ^= 0x10
	require.NoError(t, os.WriteFile(path, b, 0o644))
}

// flipByte's flip at the first occurrence of what in the file.
func flipAt(t *testing.T, path, what string) {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	at := strings.Index(string(b), what)
	require.GreaterOrEqual(t, at, 0, "%s holds %q", path, what)
	flipByte(t, path, int64(at))
}

// replaceIn replaces the one occurrence of old in the file by new.
func replaceIn(t *testing.T, path, old, new string) {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, 1, strings.Count(string(b), old), "%s holds %q once", path, old)
	require.NoError(t, os.WriteFile(path, []byte(strings.Replace(string(b), old, new, 1)), 0o644))
}

func TestMismatchListsEverything(t *testing.T) {
	w, o := trained(t, rand.New(rand.NewPCG(6, 6)), 1)
	dir := t.TempDir()
	path, err := Save(dir, w, o, State{Step: 1}, Options{})
	require.NoError(t, err)

	other, err := params.NewStore([]params.Spec{
		{Name: "model.embed_tokens.weight", Shape: []int64{12, 4}}, // shape differs
		{Name: "model.layers.0.input_layernorm.weight", Shape: []int64{4}},
		{Name: "model.layers.0.self_attn.k_proj.weight", Shape: []int64{4, 4}}, // renamed
		{Name: "lm_head.weight", Shape: []int64{4, 11}},
	})
	require.NoError(t, err)
	other.Flat()[0] = 3
	oo, err := optim.NewAdamW(optim.DefaultConfig(), other)
	require.NoError(t, err)
	_, err = Load(context.Background(), path, other, oo)
	var me *params.MismatchError
	require.True(t, errors.As(err, &me), "got %v", err)
	require.Equal(t, path, me.File)
	want := []string{
		`model.safetensors: tensor "model.embed_tokens.weight": shape [11 4], want [12 4]`,
		`model.safetensors: unexpected tensor "model.layers.0.self_attn.q_proj.weight" (F32 [4 4])`,
		`model.safetensors: missing tensor "model.layers.0.self_attn.k_proj.weight" (F32 [4 4])`,
	}
	for _, suf := range []string{ExpAvgSuffix, ExpAvgSqSuffix} {
		want = append(want,
			`optimizer.safetensors: tensor "model.embed_tokens.weight`+suf+`": shape [11 4], want [12 4]`,
			`optimizer.safetensors: unexpected tensor "model.layers.0.self_attn.q_proj.weight`+suf+`" (F32 [4 4])`,
			`optimizer.safetensors: missing tensor "model.layers.0.self_attn.k_proj.weight`+suf+`" (F32 [4 4])`)
	}
	require.ElementsMatch(t, want, me.Problems)
	require.Equal(t, float32(3), other.Flat()[0], "nothing loaded on a mismatch")

	// Resume does not skip over a layout mismatch to older checkpoints.
	_, _, _, err = Resume(context.Background(), dir, other, oo)
	require.True(t, errors.As(err, &me))
}

func TestRetentionAndLatest(t *testing.T) {
	cases := []struct {
		name string
		keep int
		want []int64
	}{
		{"keep all", 0, []int64{5, 10, 20, 1000000}},
		{"keep two", 2, []int64{20, 1000000}},
		{"keep one", 1, []int64{1000000}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			saveSteps(t, dir, []int64{5, 10, 20, 1000000}, Options{Keep: tc.keep})
			list, err := List(dir)
			require.NoError(t, err)
			var got []int64
			for _, e := range list {
				got = append(got, e.Step)
			}
			require.Equal(t, tc.want, got)
			require.Equal(t, filepath.Join(dir, "ckpt-1000000"), pointer(t, dir), "seven digits order by number")
		})
	}
}

// TestPickNamesNewestByStep: a checkpoint directory names itself; a run's
// checkpoints/ directory names its newest checkpoint by step, whatever the
// pointer says; an empty or absent one is ErrNoCheckpoint.
func TestPickNamesNewestByStep(t *testing.T) {
	dir := t.TempDir()
	take := func(string) error { return nil }
	_, _, err := Pick(dir, take)
	require.ErrorIs(t, err, ErrNoCheckpoint)
	_, _, _, err = Resume(context.Background(), filepath.Join(dir, "absent"), nil, nil)
	require.ErrorIs(t, err, ErrNoCheckpoint)
	saveSteps(t, dir, []int64{1, 2}, Options{})
	require.NoError(t, os.WriteFile(filepath.Join(dir, LatestFile), []byte("ckpt-000001\n"), 0o644))
	p, _, err := Pick(dir, take)
	require.NoError(t, err)
	require.Equal(t, filepath.Join(dir, DirName(2)), p)
	p, _, err = Pick(filepath.Join(dir, DirName(1)), take)
	require.NoError(t, err)
	require.Equal(t, filepath.Join(dir, DirName(1)), p)
}

// pointer returns the checkpoint DIR/latest names.
func pointer(t *testing.T, dir string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, LatestFile))
	require.NoError(t, err)
	return filepath.Join(dir, strings.TrimSpace(string(b)))
}

// TestSaveReplacesSameStepAndCleansStale: a second save of a step
// replaces the first, and what an interrupted Save left (its temporary
// checkpoint, a replaced one moved aside, the pointer's temporary file)
// is removed.
func TestSaveReplacesSameStepAndCleansStale(t *testing.T) {
	tests := []struct {
		name  string
		stale string
		dir   bool
	}{
		{name: "temporary checkpoint", stale: ".tmp-ckpt-000003-123", dir: true},
		{name: "checkpoint moved aside", stale: ".tmp-old-ckpt-000003-456", dir: true},
		{name: "pointer's temporary file", stale: ".latest.tmp-873075391"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if tt.dir {
				require.NoError(t, os.MkdirAll(filepath.Join(dir, tt.stale), 0o755))
			} else {
				require.NoError(t, os.WriteFile(filepath.Join(dir, tt.stale), []byte("ckpt-0000"), 0o644))
			}
			saved := saveSteps(t, dir, []int64{3, 3}, Options{})
			entries, err := os.ReadDir(dir)
			require.NoError(t, err)
			var names []string
			for _, e := range entries {
				names = append(names, e.Name())
			}
			require.ElementsMatch(t, []string{"ckpt-000003", "latest"}, names, "stale temporaries removed")
			w, o := fresh(t)
			_, err = Load(context.Background(), filepath.Join(dir, DirName(3)), w, o)
			require.NoError(t, err)
			requireBits(t, saved[3], w, "second save of step 3 wins")
		})
	}
}

// TestCheckpointMovedAsideRestored: a crash between a Save's two renames
// (the old checkpoint of its step moved aside, the new one not yet in its
// place) leaves the old one aside, complete: Resume and the next Save
// put it back under its name rather than losing it.
func TestCheckpointMovedAsideRestored(t *testing.T) {
	for _, then := range []string{"resume", "save"} {
		t.Run(then, func(t *testing.T) {
			dir := t.TempDir()
			saved := saveSteps(t, dir, []int64{1, 2}, Options{})
			require.NoError(t, os.Rename(filepath.Join(dir, DirName(2)), filepath.Join(dir, ".tmp-old-"+DirName(2)+"-0123456789abcdef")))
			if then == "save" {
				saveSteps(t, dir, []int64{3}, Options{})
				require.DirExists(t, filepath.Join(dir, DirName(2)))
				return
			}
			w, o := fresh(t)
			path, st, skipped, err := Resume(context.Background(), dir, w, o)
			require.NoError(t, err)
			require.Empty(t, skipped)
			require.Equal(t, filepath.Join(dir, DirName(2)), path)
			require.Equal(t, int64(2), st.Step)
			requireBits(t, saved[2], w, "the checkpoint moved aside")
		})
	}
}

func TestSaveErrors(t *testing.T) {
	w, o := trained(t, rand.New(rand.NewPCG(8, 8)), 0)
	_, err := Save(t.TempDir(), w, o, State{Step: -1}, Options{})
	require.ErrorContains(t, err, "negative step")
	_, err = Save(t.TempDir(), w, o, State{}, Options{Keep: -1})
	require.ErrorContains(t, err, "retention")
	other, err := params.NewStore(specs[:2])
	require.NoError(t, err)
	dir := t.TempDir()
	_, err = Save(dir, other, o, State{}, Options{})
	require.ErrorContains(t, err, "optimiser does not match")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range entries {
		require.False(t, strings.HasPrefix(e.Name(), "ckpt-"), "no checkpoint left by a failed save")
	}
}

// BenchmarkSave measures checkpoint write throughput (weights and both
// moments, fsynced) for 10M parameters: 120 MB per checkpoint.
func BenchmarkSave(b *testing.B) {
	w, err := params.NewStore([]params.Spec{{Name: "w", Shape: []int64{2560, 3906}}, {Name: "n", Shape: []int64{2560}}})
	require.NoError(b, err)
	rng := rand.New(rand.NewPCG(1, 1))
	for i := range w.Flat() {
		w.Flat()[i] = float32(rng.NormFloat64())
	}
	o, err := optim.NewAdamW(optim.DefaultConfig(), w)
	require.NoError(b, err)
	dir := b.TempDir()
	b.SetBytes(int64(w.NumParams()) * 4 * 3)
	step := int64(0)
	for b.Loop() {
		if _, err := Save(dir, w, o, State{Step: step}, Options{Keep: 1}); err != nil {
			b.Fatal(err)
		}
		step++
	}
}

// TestSaveRefusesNonFiniteWeights: weights holding a NaN or an infinity
// are never written; the error names the tensor and the element, and the
// checkpoints already there (and the latest pointer) are untouched, so
// retention cannot delete the newest finite one.
func TestSaveRefusesNonFiniteWeights(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	w, o := trained(t, rng, 1)
	dir := t.TempDir()
	good, err := Save(dir, w, o, State{Step: 1}, Options{Keep: 1})
	require.NoError(t, err)
	for _, bad := range []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))} {
		w.At(2).Data[5] = bad
		_, err = Save(dir, w, o, State{Step: 2}, Options{Keep: 1})
		require.ErrorContains(t, err, `weight "model.layers.0.self_attn.q_proj.weight" holds`)
		require.ErrorContains(t, err, "at element 5")
		require.Equal(t, good, pointer(t, dir))
		require.DirExists(t, good)
		require.NoDirExists(t, filepath.Join(dir, DirName(2)))
	}
}

// TestResumeStalePointer: a crash between a checkpoint's rename and the
// pointer's update leaves latest naming the previous checkpoint; Resume
// takes the newest intact one anyway.
func TestResumeStalePointer(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	w, o := trained(t, rng, 1)
	dir := t.TempDir()
	first, err := Save(dir, w, o, State{Step: 1}, Options{})
	require.NoError(t, err)
	randomGrads(rng, w)
	_, err = Save(dir, w, o, State{Step: 2}, Options{})
	require.NoError(t, err)
	require.NoError(t, writeLatest(dir, filepath.Base(first))) // the stale pointer
	w2, o2 := fresh(t)
	path, st, skipped, err := Resume(context.Background(), dir, w2, o2)
	require.NoError(t, err)
	require.Empty(t, skipped)
	require.Equal(t, int64(2), st.Step)
	require.Equal(t, filepath.Join(dir, DirName(2)), path)
	requireBits(t, w, w2, "weights")
}

// TestCheckpointPermissions: a checkpoint directory and its files get the
// permissions of the rest of a run directory (0777 and 0666 less the
// umask), not os.MkdirTemp's 0700.
func TestCheckpointPermissions(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	w, o := trained(t, rng, 1)
	dir := t.TempDir()
	path, err := Save(dir, w, o, State{Step: 3}, Options{})
	require.NoError(t, err)
	ref := filepath.Join(dir, "ref")
	require.NoError(t, os.Mkdir(ref, 0o777))
	refFile := filepath.Join(dir, "ref.txt")
	require.NoError(t, os.WriteFile(refFile, nil, 0o666))
	mode := func(p string) os.FileMode {
		fi, err := os.Stat(p)
		require.NoError(t, err)
		return fi.Mode().Perm()
	}
	require.Equal(t, mode(ref), mode(path))
	for _, f := range []string{ModelFile, OptimizerFile, StateFile} {
		require.Equal(t, mode(refFile), mode(filepath.Join(path, f)), f)
	}
	require.Equal(t, mode(refFile), mode(filepath.Join(dir, LatestFile)))
}

// TestNewest: Newest goes down from the highest step, skips what load
// fails on and reports it, and stops at an error that older checkpoints
// would share (Final, a layout mismatch).
func TestNewest(t *testing.T) {
	dir := t.TempDir()
	saveSteps(t, dir, []int64{1, 2, 3}, Options{})
	damaged := errors.New("damaged")
	foreign := errors.New("another model's")
	cases := []struct {
		name      string
		fail      map[int64]error // load's error by step
		want      int64           // the step loaded; 0: none
		skipped   []int64
		wantErr   error // errors.Is
		mismatch  bool  // errors.As *params.MismatchError
		allFailed bool
	}{
		{name: "newest loads", want: 3},
		{name: "newest damaged", fail: map[int64]error{3: damaged}, want: 2, skipped: []int64{3}},
		{name: "two newest damaged", fail: map[int64]error{3: damaged, 2: damaged}, want: 1, skipped: []int64{3, 2}},
		{name: "final stops the search", fail: map[int64]error{3: damaged, 2: Final(foreign)}, skipped: []int64{3}, wantErr: foreign},
		{name: "mismatch stops the search", fail: map[int64]error{3: &params.MismatchError{File: "x", Problems: []string{"p"}}}, mismatch: true},
		{name: "none loads", fail: map[int64]error{3: damaged, 2: damaged, 1: damaged}, wantErr: damaged, allFailed: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var tried []string
			path, skipped, err := Newest(dir, func(p string) error {
				tried = append(tried, filepath.Base(p))
				for step, e := range tc.fail {
					if p == filepath.Join(dir, DirName(step)) {
						return fmt.Errorf("%s: %w", p, e)
					}
				}
				return nil
			})
			require.Len(t, skipped, len(tc.skipped))
			for i, s := range tc.skipped {
				require.ErrorIs(t, skipped[i], damaged)
				require.Contains(t, skipped[i].Error(), filepath.Join(dir, DirName(s)), "a skipped checkpoint is named")
			}
			if tc.want != 0 {
				require.NoError(t, err)
				require.Equal(t, filepath.Join(dir, DirName(tc.want)), path)
				require.Len(t, tried, len(tc.skipped)+1, "nothing older than the checkpoint loaded is read")
				return
			}
			require.Error(t, err)
			require.Empty(t, path)
			if tc.wantErr != nil {
				require.ErrorIs(t, err, tc.wantErr)
			}
			var me *params.MismatchError
			require.Equal(t, tc.mismatch, errors.As(err, &me), "%v", err)
			if tc.allFailed {
				require.Len(t, tried, 3)
				require.ErrorContains(t, err, "no checkpoint in "+dir+" loads")
				for _, step := range []int64{1, 2, 3} {
					require.ErrorContains(t, err, DirName(step), "every failure is in the error")
				}
			}
		})
	}
	_, _, err := Newest(t.TempDir(), func(string) error { return nil })
	require.ErrorIs(t, err, ErrNoCheckpoint)
}

// TestNewestRenamedCheckpoint: a checkpoint directory whose name says
// another step than its state.json (renamed, or copied in from another
// run) was taken by its name: a ckpt-000005 of step 1 was resumed
// before the run's own ckpt-000002, going back to step 1, and the first
// Save after it removed both as checkpoints "the run resumed past
// (damaged)". The search stops at it, naming both steps; given itself,
// it loads.
func TestNewestRenamedCheckpoint(t *testing.T) {
	for _, tc := range []struct {
		name     string
		from, to int64 // of checkpoints of steps 1 and 3
		copied   bool  // the checkpoint of step from stays too
		stops    bool
	}{
		{"named past the newest", 1, 5, false, true},
		{"named the newest", 3, 4, false, true},
		{"copied past the newest", 1, 5, true, true},
		// Below the newest, which loads, it is not reached.
		{"named below the newest", 1, 2, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			saveSteps(t, dir, []int64{1, 3}, Options{})
			from, renamed := filepath.Join(dir, DirName(tc.from)), filepath.Join(dir, DirName(tc.to))
			if tc.copied {
				require.NoError(t, os.CopyFS(renamed, os.DirFS(from)))
			} else {
				require.NoError(t, os.Rename(from, renamed))
			}
			w, o := fresh(t)
			path, _, _, err := Resume(context.Background(), dir, w, o)
			if tc.stops {
				fix := "rename it " + DirName(tc.from) + ", or move it out of " + dir
				if tc.copied {
					fix = "move it out of " + dir
				}
				want := fmt.Sprintf("checkpoint: %s: its state.json records step %d, not the step %d its name says (renamed, or copied in from another run?): %s",
					renamed, tc.from, tc.to, fix)
				require.EqualError(t, err, want)
				require.True(t, IsFinal(err))
				_, _, err = Pick(dir, func(string) error { return nil })
				require.EqualError(t, err, want)
			} else {
				require.NoError(t, err)
				require.Equal(t, filepath.Join(dir, DirName(3)), path)
			}
			_, _, err = Pick(renamed, func(p string) error {
				_, err := Load(context.Background(), p, w, o)
				return err
			})
			require.NoError(t, err, "given itself, a checkpoint is loaded whatever its name")
		})
	}
}

// TestPick: a checkpoint directory given itself is loaded or its error
// returned, never swapped for an older one; a run's checkpoints/
// directory gives its newest checkpoint that loads, as Resume does.
func TestPick(t *testing.T) {
	dir := t.TempDir()
	ckpts := filepath.Join(dir, "checkpoints")
	saved := saveSteps(t, ckpts, []int64{1, 2}, Options{})
	newest, older := filepath.Join(ckpts, DirName(2)), filepath.Join(ckpts, DirName(1))
	truncate := func(t *testing.T, file string) {
		fi, err := os.Stat(file)
		require.NoError(t, err)
		require.NoError(t, os.Truncate(file, fi.Size()/2))
	}
	cases := []struct {
		name    string
		damage  func(t *testing.T) // applied to a fresh copy of ckpts
		path    string             // what the user names
		want    string             // the checkpoint loaded; "": an error
		skipped int
		errHas  []string
		noCkpt  bool // the error wraps ErrNoCheckpoint
	}{
		{name: "run directory, newest intact", path: ckpts, want: newest},
		{name: "run directory, newest weights truncated", damage: func(t *testing.T) { truncate(t, filepath.Join(newest, ModelFile)) },
			path: ckpts, want: older, skipped: 1},
		{name: "run directory, newest state garbled", damage: func(t *testing.T) {
			require.NoError(t, os.WriteFile(filepath.Join(newest, StateFile), []byte("{"), 0o644))
		}, path: ckpts, want: older, skipped: 1},
		{name: "checkpoint directory itself", path: older, want: older},
		{name: "damaged checkpoint directory itself", damage: func(t *testing.T) { truncate(t, filepath.Join(newest, ModelFile)) },
			path: newest, errHas: []string{filepath.Join(newest, ModelFile), "truncated"}},
		{name: "checkpoint directory itself without state.json", damage: func(t *testing.T) { require.NoError(t, os.Remove(filepath.Join(newest, StateFile))) },
			path: newest, errHas: []string{filepath.Join(newest, StateFile)}},
		{name: "absent path", path: filepath.Join(dir, "absent"), errHas: []string{filepath.Join(dir, "absent"), "no such file"}},
		{name: "directory without checkpoints", path: dir, errHas: []string{"no checkpoint in " + dir, "checkpoints/ directory"}, noCkpt: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.damage != nil {
				backup := filepath.Join(t.TempDir(), "backup")
				require.NoError(t, os.CopyFS(backup, os.DirFS(ckpts)))
				t.Cleanup(func() {
					require.NoError(t, os.RemoveAll(ckpts))
					require.NoError(t, os.CopyFS(ckpts, os.DirFS(backup)))
				})
				tc.damage(t)
			}
			w, _ := fresh(t)
			path, skipped, err := Pick(tc.path, func(p string) error {
				_, err := Load(context.Background(), p, w, nil)
				return err
			})
			if tc.want == "" {
				require.Error(t, err)
				for _, s := range tc.errHas {
					require.ErrorContains(t, err, s)
				}
				require.Equal(t, tc.noCkpt, errors.Is(err, ErrNoCheckpoint), "%v", err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, path)
			require.Len(t, skipped, tc.skipped)
			for _, e := range skipped {
				require.ErrorContains(t, e, newest, "the skipped checkpoint is named")
			}
			step := int64(2)
			if tc.want == older {
				step = 1
			}
			requireBits(t, saved[step], w, "weights of the checkpoint picked")
		})
	}
}

// TestNewestWhileSaving: a run that saves while Newest's load reads (an
// evaluation of its checkpoints/ while it trains) removes the checkpoint
// read (retention), replaces it (a Save of its step) or saves a newer
// one: the search starts again from the newest rather than reporting the
// checkpoint as damaged, or failing when it was the only one.
func TestNewestWhileSaving(t *testing.T) {
	cases := []struct {
		name  string
		saved []int64 // before the search
		save  int64   // the step saved during the first load
		keep  int
		want  int64
	}{
		{name: "pruned by a newer save", saved: []int64{1}, save: 2, keep: 1, want: 2},
		{name: "pruned, older kept", saved: []int64{1, 2}, save: 3, keep: 2, want: 3},
		{name: "newer saved", saved: []int64{1}, save: 2, want: 2},
		{name: "replaced by a save of its step", saved: []int64{1, 2}, save: 2, want: 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			saveSteps(t, dir, tc.saved, Options{Keep: tc.keep})
			w, _ := fresh(t)
			var tried []string
			path, skipped, err := Newest(dir, func(p string) error {
				tried = append(tried, filepath.Base(p))
				if len(tried) == 1 {
					// What a load reading a checkpoint that another
					// process's Save changes meanwhile finds: state.json
					// read, then the Save, then the weights.
					_, err := ReadState(p)
					require.NoError(t, err)
					rng := rand.New(rand.NewPCG(9, 9))
					w2, opt := trained(t, rng, 1)
					_, err = Save(dir, w2, opt, State{Step: tc.save}, Options{Keep: tc.keep})
					require.NoError(t, err)
					return errors.New("read while saved: " + p)
				}
				_, err := Load(context.Background(), p, w, nil)
				return err
			})
			require.NoError(t, err, "tried %v", tried)
			require.Empty(t, skipped, "a checkpoint changed by a save while read is not damaged")
			require.Equal(t, filepath.Join(dir, DirName(tc.want)), path)
			require.Equal(t, []string{DirName(tc.saved[len(tc.saved)-1]), DirName(tc.want)}, tried)
		})
	}
}

// TestResumeRemovesStale: what a Save killed within it left (its
// temporary checkpoint, the size of a checkpoint, or the pointer's
// temporary file) is removed by the Resume of the rerun, not only by its
// first Save, --checkpoint-every steps of training later.
func TestResumeRemovesStale(t *testing.T) {
	for _, tt := range []struct {
		name, stale string
		dir         bool
	}{
		{name: "temporary checkpoint", stale: ".tmp-ckpt-000002-0123456789abcdef", dir: true},
		{name: "pointer's temporary file", stale: ".latest.tmp-873075391"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			saveSteps(t, dir, []int64{1}, Options{})
			if tt.dir {
				require.NoError(t, os.MkdirAll(filepath.Join(dir, tt.stale), 0o755))
				require.NoError(t, os.WriteFile(filepath.Join(dir, tt.stale, ModelFile), []byte("partial"), 0o644))
			} else {
				require.NoError(t, os.WriteFile(filepath.Join(dir, tt.stale), []byte("ckpt-0000"), 0o644))
			}
			w, o := fresh(t)
			_, st, _, err := Resume(context.Background(), dir, w, o)
			require.NoError(t, err)
			require.Equal(t, int64(1), st.Step)
			entries, err := os.ReadDir(dir)
			require.NoError(t, err)
			var names []string
			for _, e := range entries {
				names = append(names, e.Name())
			}
			require.ElementsMatch(t, []string{"ckpt-000001", "latest"}, names, "stale temporaries removed")
		})
	}
}

// TestPruneFailureWarns: an old checkpoint that pruning cannot remove
// does not fail the Save that saved the new one (the run would stop with
// its step saved): it is a warning naming the checkpoint and the error,
// and the other old ones are still removed.
func TestPruneFailureWarns(t *testing.T) {
	dir := t.TempDir()
	saveSteps(t, dir, []int64{1, 2}, Options{})
	var warn bytes.Buffer
	o := Options{Keep: 1, Warn: &warn, remove: func(p string) error {
		if filepath.Base(p) == "ckpt-000001" {
			return errors.New("device busy")
		}
		return os.RemoveAll(p)
	}}
	w, opt := trained(t, rand.New(rand.NewPCG(3, 3)), 1)
	path, err := Save(dir, w, opt, State{Step: 3}, o)
	require.NoError(t, err)
	require.Equal(t, filepath.Join(dir, "ckpt-000003"), path)
	list, err := List(dir)
	require.NoError(t, err)
	require.Equal(t, []Entry{{1, filepath.Join(dir, "ckpt-000001")}, {3, path}}, list)
	require.Equal(t, "spiral: warning: --keep 1: could not remove the old checkpoint "+filepath.Join(dir, "ckpt-000001")+": device busy\n", warn.String())
}

// TestPruneNewerThanSaved: checkpoints newer than the one saved are
// those a resume skipped as damaged (a run resumes from its newest
// intact one). They do not count toward Keep, which would otherwise keep
// Keep-1 intact ones, or remove the one resumed from (keep 1) while the
// damaged one stayed; they are removed with a note once a checkpoint
// newer than the one resumed from is saved.
func TestPruneNewerThanSaved(t *testing.T) {
	cases := []struct {
		name  string
		keep  int
		want  []int64
		notes string
	}{
		{"keep all", 0, []int64{10, 20, 25, 30}, ""},
		{"keep two", 2, []int64{20, 25}, "ckpt-000030"},
		{"keep one", 1, []int64{25}, "ckpt-000030"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			saveSteps(t, dir, []int64{10, 20, 30}, Options{})
			damaged := filepath.Join(dir, "ckpt-000030", ModelFile)
			fi, err := os.Stat(damaged)
			require.NoError(t, err)
			flipByte(t, damaged, fi.Size()-1)
			w, opt := fresh(t)
			_, st, skipped, err := Resume(context.Background(), dir, w, opt)
			require.NoError(t, err)
			require.Equal(t, int64(20), st.Step)
			require.Len(t, skipped, 1)
			var warn bytes.Buffer
			_, err = Save(dir, w, opt, State{Step: 25}, Options{Keep: tc.keep, Warn: &warn})
			require.NoError(t, err)
			list, err := List(dir)
			require.NoError(t, err)
			var got []int64
			for _, e := range list {
				got = append(got, e.Step)
			}
			require.Equal(t, tc.want, got)
			if tc.notes == "" {
				require.Empty(t, warn.String())
			} else {
				require.Equal(t, "spiral: note: --keep "+strconv.Itoa(tc.keep)+": removed "+filepath.Join(dir, tc.notes)+", newer than step 25 just saved: a checkpoint the run resumed past (damaged)\n", warn.String())
			}
		})
	}
}

// TestLatestFailureWarns: a `latest` pointer that cannot be written after
// the checkpoint's directory is in place does not fail the Save (the run
// would stop with its step saved): readers go by the checkpoint
// directories, so it is a warning naming the pointer and the error, Save
// returns the checkpoint's path, retention still runs and Resume loads the
// new checkpoint.
func TestLatestFailureWarns(t *testing.T) {
	dir := t.TempDir()
	saveSteps(t, dir, []int64{1}, Options{})
	var warn bytes.Buffer
	o := Options{Keep: 1, Warn: &warn, pointLatest: func(string, string) error {
		return errors.New("no space left on device")
	}}
	w, opt := trained(t, rand.New(rand.NewPCG(3, 3)), 1)
	path, err := Save(dir, w, opt, State{Step: 2}, o)
	require.NoError(t, err)
	require.Equal(t, filepath.Join(dir, "ckpt-000002"), path)
	require.Equal(t, "spiral: warning: saved checkpoint "+path+", but could not point "+filepath.Join(dir, "latest")+
		" at it (readers go by the checkpoint directories, not the pointer): no space left on device\n", warn.String())
	b, err := os.ReadFile(filepath.Join(dir, "latest"))
	require.NoError(t, err)
	require.Equal(t, "ckpt-000001\n", string(b))
	list, err := List(dir)
	require.NoError(t, err)
	require.Equal(t, []Entry{{2, path}}, list)
	w2, o2 := fresh(t)
	got, st, skipped, err := Resume(context.Background(), dir, w2, o2)
	require.NoError(t, err)
	require.Empty(t, skipped)
	require.Equal(t, path, got)
	require.Equal(t, int64(2), st.Step)
	requireBits(t, w, w2, "weights")
}
