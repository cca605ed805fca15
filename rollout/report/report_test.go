package report

import (
	"errors"
	"image"
	"image/png"
	"maps"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"

	"github.com/spiral-rl/spiral/rollout"
)

func reportMeta() Meta {
	return Meta{Model: "qwen3-4b", Dataset: "aime25.jsonl", Problems: 30, Seed: 1234,
		Timestamp: time.Date(2026, 3, 4, 5, 6, 7, 890, time.UTC), Extra: map[string]string{"temperature": "1"}}
}

func reportRSA() RSA {
	m := reportMeta()
	m.Problems = 1 // the one problem of step 0's details
	return NewRSA(m, rollout.RSAResult{
		Config: rollout.RSAConfig{Population: 8, SubsetSize: 4, Steps: 2, CandidateTokens: 512, Details: true},
		Steps: []rollout.RSAStep{
			{Step: 0, Population: 8, Accuracy: 0.375, Majority: 0.5, Tokens: rollout.Tokens{Prompt: 80, Generated: 900}, Cumulative: rollout.Tokens{Prompt: 80, Generated: 900},
				Problems: []rollout.RSAProblemStep{{ID: "a", Correct: 3, Majority: true, MajorityAnswer: "7"}}},
			{Step: 1, Population: 8, Accuracy: 0.5, Majority: 0.5, Tokens: rollout.Tokens{Prompt: 3000, Generated: 800}, Cumulative: rollout.Tokens{Prompt: 3080, Generated: 1700}},
			{Step: 2, Population: 8, Accuracy: 0.625, Majority: 1, Tokens: rollout.Tokens{Prompt: 2900, Generated: 700}, Cumulative: rollout.Tokens{Prompt: 5980, Generated: 2400}},
		},
	})
}

func reportPassAtK() PassAtK {
	return NewPassAtK(reportMeta(), rollout.PassAtKResult{
		Config: rollout.PassAtKConfig{Samples: 8, Ks: []int{1, 2, 4, 8}, Majority: rollout.MajorityConfig{MaxExact: 100, Samples: 50}},
		Points: []rollout.KPoint{
			{K: 1, PassAtK: 0.25, MajorityAtK: 0.25, MajorityExact: true},
			{K: 2, PassAtK: 0.4, MajorityAtK: 0.3, MajorityExact: true},
			{K: 4, PassAtK: 0.6, MajorityAtK: 0.35, MajorityExact: false},
			{K: 8, PassAtK: 0.75, MajorityAtK: 0.4, MajorityExact: true},
		},
		Tokens: rollout.Tokens{Prompt: 10, Generated: 20},
	})
}

func reportBudget() Budget {
	return NewBudget(reportMeta(), rollout.BudgetResult{
		Config: rollout.BudgetConfig{Samples: 4, Budgets: []int{1, 2, 4, 8, 12}, MaxTokens: 12},
		Points: []rollout.BudgetPoint{
			{Budget: 1, Accuracy: 0, MeanTokens: 1, Truncated: 1},
			{Budget: 2, Accuracy: 0, MeanTokens: 2, Truncated: 1},
			{Budget: 4, Accuracy: 0.1, MeanTokens: 4, Truncated: 0.9},
			{Budget: 8, Accuracy: 0.625, MeanTokens: 5.75, Truncated: 0.25},
			{Budget: 12, Accuracy: 0.75, MeanTokens: 6.75, Truncated: 0},
		},
		Tokens: rollout.Tokens{Prompt: 24, Generated: 54},
	})
}

func TestConstructorsSetMode(t *testing.T) {
	require.Equal(t, ModeRSA, reportRSA().Meta.Mode)
	require.Equal(t, ModePassAtK, reportPassAtK().Meta.Mode)
	require.Equal(t, ModeSequential, reportBudget().Meta.Mode)
	require.Equal(t, "qwen3-4b", reportRSA().Meta.Name(), "label falls back to the model")
	m := reportMeta()
	m.Label = "trained"
	require.Equal(t, "trained", m.Name())
}

// reportRoundTrip writes v, reads it back into a fresh *T and checks
// equality, and that the directory holds only the report.
func reportRoundTrip[T any](t *testing.T, v T) {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "report.json")
	require.NoError(t, WriteJSON(path, v))
	var got T
	require.NoError(t, ReadJSON(path, &got))
	require.Equal(t, v, got)
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 1, "no temporary file left behind")
}

func TestJSONRoundTrip(t *testing.T) {
	t.Run("rsa", func(t *testing.T) { reportRoundTrip(t, reportRSA()) })
	t.Run("pass@k", func(t *testing.T) { reportRoundTrip(t, reportPassAtK()) })
	t.Run("budget", func(t *testing.T) { reportRoundTrip(t, reportBudget()) })
	t.Run("rsa with problem ids", func(t *testing.T) {
		r := reportRSA()
		r.Meta.ProblemIDs = []string{"a"}
		reportRoundTrip(t, r)
	})
	t.Run("budget with problem ids", func(t *testing.T) {
		r := reportBudget()
		r.Meta.Problems, r.Meta.ProblemIDs = 2, []string{"a", "b"}
		reportRoundTrip(t, r)
	})
}

func TestReadJSONRejectsOtherMode(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rsa.json")
	require.NoError(t, WriteJSON(path, reportRSA()))
	var p PassAtK
	err := ReadJSON(path, &p)
	require.ErrorContains(t, err, "unknown field")
	require.ErrorContains(t, err, "report: decode")
}

// TestReadJSONRejectsExtraData: a report with anything but white space
// after its object is refused, not read as its first object.
func TestReadJSONRejectsExtraData(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rsa.json")
	require.NoError(t, WriteJSON(path, reportRSA()))
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteString("\n{} garbage")
	require.NoError(t, errors.Join(err, f.Close()))
	var r RSA
	require.EqualError(t, ReadJSON(path, &r), "report: decode "+path+": extra data after the JSON object")
}

// TestWriteJSONReplaces: WriteJSON replaces the file (atomically, through
// model/atomicfile, whose own test covers failed writes).
func TestWriteJSONReplaces(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "r.json")
	require.NoError(t, os.WriteFile(path, []byte("old"), 0o644))

	t.Run("success replaces", func(t *testing.T) {
		require.NoError(t, WriteJSON(path, map[string]int{"a": 1}))
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		require.Equal(t, "{\n  \"a\": 1\n}\n", string(b))
	})
	t.Run("missing directory", func(t *testing.T) {
		err := WriteJSON(filepath.Join(dir, "nope", "r.json"), 1)
		require.ErrorContains(t, err, "report: write")
	})
	t.Run("unencodable value", func(t *testing.T) {
		err := WriteJSON(path, func() {})
		require.ErrorContains(t, err, "report: encode")
	})
}

// reportDecodePNG decodes the PNG at path and counts pixels that are not
// white (what was drawn).
func reportDecodePNG(t *testing.T, path string) (image.Image, int) {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	img, err := png.Decode(f)
	require.NoError(t, err)
	inked := 0
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			if r, g, bb, _ := img.At(x, y).RGBA(); r != 0xffff || g != 0xffff || bb != 0xffff {
				inked++
			}
		}
	}
	return img, inked
}

func TestPlots(t *testing.T) {
	trained := reportPassAtK()
	trained.Meta.Label = "trained"
	for i := range trained.Points {
		trained.Points[i].PassAtK = min(1, trained.Points[i].PassAtK+0.1)
	}
	tests := []struct {
		name          string
		size          PlotSize
		wantW, wantH  int
		plot          func(path string, size PlotSize) error
		moreInkThanOf func(path string, size PlotSize) error
	}{
		{"pass@k default size", PlotSize{}, DefaultWidth, DefaultHeight,
			func(p string, s PlotSize) error { return PlotPassAtK(p, s, reportPassAtK(), trained) },
			func(p string, s PlotSize) error { return PlotPassAtK(p, s, reportPassAtK()) }},
		{"rsa", PlotSize{Width: 640, Height: 480}, 640, 480,
			func(p string, s PlotSize) error { return PlotRSA(p, s, reportRSA()) }, nil},
		{"budget odd size", PlotSize{Width: 333, Height: 211}, 333, 211,
			func(p string, s PlotSize) error { return PlotBudget(p, s, reportBudget()) }, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "plot.png")
			require.NoError(t, tc.plot(path, tc.size))
			img, inked := reportDecodePNG(t, path)
			require.Equal(t, image.Rect(0, 0, tc.wantW, tc.wantH), img.Bounds())
			require.Greater(t, inked, tc.wantW*tc.wantH/200, "something was drawn")
			if tc.moreInkThanOf != nil {
				fewer := filepath.Join(dir, "fewer.png")
				require.NoError(t, tc.moreInkThanOf(fewer, tc.size))
				_, less := reportDecodePNG(t, fewer)
				require.Greater(t, inked, less, "more series draw more")
			}
			entries, err := os.ReadDir(dir)
			require.NoError(t, err)
			for _, e := range entries {
				require.NotContains(t, e.Name(), ".tmp", "no temporary file left")
			}
		})
	}
}

// TestPlotFormats: the extension of the path chooses the format (in any
// case): PNG, SVG or PDF, each recognised by its first bytes; another
// extension is an error that writes nothing.
func TestPlotFormats(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ name, magic string }{
		{"p.png", "\x89PNG\r\n"}, {"p.PNG", "\x89PNG\r\n"}, {"p.svg", "<?xml"}, {"p.pdf", "%PDF-"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, tc.name)
			require.NoError(t, PlotPassAtK(path, PlotSize{}, reportPassAtK()))
			b, err := os.ReadFile(path)
			require.NoError(t, err)
			require.True(t, strings.HasPrefix(string(b), tc.magic), "%s starts %q", tc.name, b[:min(len(b), 8)])
			if tc.name == "p.svg" {
				require.Contains(t, string(b), "pass@k", "the figure's text is in the SVG")
			}
		})
	}
	for _, name := range []string{"p.jpg", "p", "p.png.bak"} {
		path := filepath.Join(dir, name)
		require.ErrorContains(t, PlotPassAtK(path, PlotSize{}, reportPassAtK()), name+": want a .png, .svg or .pdf file")
		require.NoFileExists(t, path)
	}
}

func TestPlotErrors(t *testing.T) {
	path := filepath.Join(t.TempDir(), "p.png")
	zeroBudget := reportBudget()
	zeroBudget.Points[0].Budget = 0
	empty := reportRSA()
	empty.Steps = nil
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"no pass@k reports", PlotPassAtK(path, PlotSize{}), "no reports"},
		{"no rsa reports", PlotRSA(path, PlotSize{}), "no reports"},
		{"no budget reports", PlotBudget(path, PlotSize{}), "no reports"},
		{"zero on log axis", PlotBudget(path, PlotSize{}, zeroBudget), "log axis"},
		{"empty series", PlotRSA(path, PlotSize{}, empty), "is empty"},
		{"negative size", PlotRSA(path, PlotSize{Width: -1}, reportRSA()), "size"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			require.ErrorContains(t, tc.err, tc.want)
		})
	}
	_, err := os.Stat(path)
	require.ErrorIs(t, err, os.ErrNotExist, "failed plots write nothing")
}

func TestLog2Ticks(t *testing.T) {
	tests := []struct {
		name string
		xs   []float64
		want []float64
	}{
		{"few: all distinct, sorted", []float64{4, 1, 12, 2, 8, 4}, []float64{1, 2, 4, 8, 12}},
		{"many: powers of two only", []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 16}, []float64{1, 2, 4, 8, 16}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got []float64
			for _, tk := range log2Ticks(tc.xs) {
				got = append(got, tk.Value)
			}
			require.Equal(t, tc.want, got)
		})
	}
}

func BenchmarkPlotPassAtK(b *testing.B) {
	path := filepath.Join(b.TempDir(), "p.png")
	r := reportPassAtK()
	for b.Loop() {
		if err := PlotPassAtK(path, PlotSize{}, r); err != nil {
			b.Fatal(err)
		}
	}
}

func TestIntegerTicks(t *testing.T) {
	tests := []struct {
		name     string
		min, max float64
		want     []string
	}{
		// The RSA axis is padded by 0.25 around steps 0..3: no "-0".
		{"padded steps", -0.25, 3.25, []string{"0", "1", "2", "3"}},
		// 0..30 is 31 integers: the stride is the first of 1, 2, 5, 10,
		// ... at least 3.1, on its multiples.
		{"long run thinned", -0.25, 30.25, []string{"0", "5", "10", "15", "20", "25", "30"}},
		{"training steps from 1", 1, 50, []string{"5", "10", "15", "20", "25", "30", "35", "40", "45", "50"}},
		{"long training", 1, 300, []string{"50", "100", "150", "200", "250", "300"}},
		{"every step", 1, 20, []string{"1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11", "12", "13", "14", "15", "16", "17", "18", "19", "20"}},
		// Past 2^53 v+1 is v: the stride is the floats' spacing, 2.
		{"past float64's integers", 1 << 53, 1<<53 + 4, []string{"9007199254740992", "9007199254740994", "9007199254740996"}},
		{"one step past 2^63", 1 << 63, 1 << 63, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, tk := range integerTicks(tc.min, tc.max) {
				got = append(got, tk.Label)
			}
			require.Equal(t, tc.want, got)
		})
	}
}

// TestValueTicks: a y axis other than accuracy is labelled at a round
// stride giving at most 7 labels, in as many decimals as the stride
// needs, with an unlabelled mark halfway between labels.
func TestValueTicks(t *testing.T) {
	tests := []struct {
		name     string
		min, max float64
		want     []string
	}{
		// The embedded study's entropy axis: gonum's default labelled
		// only 0 and 0.25.
		{"entropy", 0, 0.28, []string{"0.00", "0.05", "0.10", "0.15", "0.20", "0.25"}},
		{"unit", 0, 1, []string{"0.0", "0.2", "0.4", "0.6", "0.8", "1.0"}},
		{"below zero", -0.3, 0.3, []string{"-0.3", "-0.2", "-0.1", "0.0", "0.1", "0.2", "0.3"}},
		{"tokens", 0, 3e6, []string{"0", "500000", "1000000", "1500000", "2000000", "2500000", "3000000"}},
		{"off the stride", 0.013, 0.061, []string{"0.02", "0.03", "0.04", "0.05", "0.06"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var labels []string
			ticks := valueTicks(tc.min, tc.max)
			for i, tk := range ticks {
				require.GreaterOrEqual(t, tk.Value, tc.min-1e-12)
				require.LessOrEqual(t, tk.Value, tc.max+1e-12)
				if tk.Label != "" {
					labels = append(labels, tk.Label)
				} else if i > 0 && i < len(ticks)-1 {
					require.InDelta(t, (ticks[i-1].Value+ticks[i+1].Value)/2, tk.Value, 1e-12, "a mark halfway between labels")
				}
			}
			require.Equal(t, tc.want, labels)
		})
	}
	require.NotPanics(t, func() { valueTicks(0.1, 0.1) })
}

// FuzzReadJSON: any input either fails to decode or decodes to a report
// that survives a write/read round trip unchanged (compared as JSON).
func FuzzReadJSON(f *testing.F) {
	dir := f.TempDir()
	seed := filepath.Join(dir, "seed.json")
	require.NoError(f, WriteJSON(seed, reportRSA()))
	b, err := os.ReadFile(seed)
	require.NoError(f, err)
	f.Add(b)
	f.Add([]byte(`{"meta":{"mode":"rsa"},"steps":[{"step":1,"accuracy":0.5}]}`))
	f.Add([]byte(`{"steps":null}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		in := filepath.Join(t.TempDir(), "in.json")
		require.NoError(t, os.WriteFile(in, data, 0o644))
		var r RSA
		if ReadJSON(in, &r) != nil {
			return
		}
		out := filepath.Join(t.TempDir(), "out.json")
		require.NoError(t, WriteJSON(out, r))
		var again RSA
		require.NoError(t, ReadJSON(out, &again))
		first, err := os.ReadFile(out)
		require.NoError(t, err)
		require.NoError(t, WriteJSON(out, again))
		second, err := os.ReadFile(out)
		require.NoError(t, err)
		require.Equal(t, string(first), string(second))
	})
}

// TestReadOldPassAtK: a passk.json as written before the majority
// config had JSON tags ("MaxExact", "Samples") and before meta had
// problem_ids still reads, its settings kept.
func TestReadOldPassAtK(t *testing.T) {
	for _, tc := range []struct {
		majority string
		want     rollout.MajorityConfig
	}{
		{`{"MaxExact": 0, "Samples": 0}`, rollout.MajorityConfig{}},
		{`{"MaxExact": 100, "Samples": 50}`, rollout.MajorityConfig{MaxExact: 100, Samples: 50}},
	} {
		path := filepath.Join(t.TempDir(), "passk.json")
		old := `{"meta": {"mode": "passk", "model": "m", "dataset": "p.jsonl", "problems": 2, "seed": 1, "timestamp": "2026-03-04T05:06:07Z"},
  "config": {"samples": 2, "ks": [1, 2], "majority": ` + tc.majority + `},
  "points": [{"k": 1, "pass_at_k": 0.25, "majority_at_k": 0.25, "majority_exact": true}, {"k": 2, "pass_at_k": 0.5, "majority_at_k": 0.25, "majority_exact": true}],
  "tokens": {"prompt": 4, "generated": 40},
  "per_problem": [{"id": "a0", "correct": 1}, {"id": "a1", "correct": 0}]}`
		require.NoError(t, os.WriteFile(path, []byte(old), 0o644))
		var r PassAtK
		require.NoError(t, ReadJSON(path, &r))
		require.Equal(t, tc.want, r.Config.Majority)
		require.Nil(t, r.Meta.ProblemIDs)
		require.Equal(t, ProblemSet{Dataset: "p.jsonl", Count: 2, IDs: []string{"a0", "a1"}}, r.ProblemSet(), "ids from the per-problem counts")
	}
}

// TestNewPassAtKRecordsMajority: a report records the majority settings
// in use, the defaults written out.
func TestNewPassAtKRecordsMajority(t *testing.T) {
	r := NewPassAtK(Meta{}, rollout.PassAtKResult{})
	require.Equal(t, rollout.MajorityConfig{MaxExact: rollout.DefaultMaxExactSubsets, Samples: rollout.DefaultMajoritySamples}, r.Config.Majority)
	r = NewPassAtK(Meta{}, rollout.PassAtKResult{Config: rollout.PassAtKConfig{Majority: rollout.MajorityConfig{Samples: 7}}})
	require.Equal(t, rollout.MajorityConfig{MaxExact: rollout.DefaultMaxExactSubsets, Samples: 7}, r.Config.Majority)
}

// TestWritePassAtKConfig: passk.json's config has snake_case keys only,
// the majority settings left out at their defaults.
func TestWritePassAtKConfig(t *testing.T) {
	for _, tc := range []struct {
		majority rollout.MajorityConfig
		want     string
	}{
		{rollout.MajorityConfig{}, `"config": {
    "samples": 8,
    "ks": [
      1,
      2,
      4,
      8
    ]
  },`},
		{rollout.MajorityConfig{MaxExact: 100, Samples: 50}, `"majority": {
      "max_exact": 100,
      "samples": 50
    }`},
	} {
		r := reportPassAtK()
		r.Config.Majority = tc.majority
		path := filepath.Join(t.TempDir(), "passk.json")
		require.NoError(t, WriteJSON(path, r))
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		require.Contains(t, string(b), tc.want)
		require.NotContains(t, string(b), "MaxExact")
	}
}

// TestLogTicks: the tokens axis (AxisLog) has at least two numbers within
// its range: the powers of ten where two fall in it, as gonum's LogTicks
// labels them, else gonum's default ticks (LogTicks alone labels only 100
// and 1000 around 150-900, both outside the axis).
func TestLogTicks(t *testing.T) {
	tests := []struct {
		name     string
		min, max float64
		want     []float64 // the labelled values within [min, max]
	}{
		{"several decades: powers of ten", 0.84, 19000, []float64{1, 10, 100, 1000, 10000}},
		{"two powers of ten", 50, 1500, []float64{100, 1000}},
		{"within a decade", 150, 900, []float64{200, 400, 600, 800}},
		{"one power of ten", 70, 400, []float64{100, 200, 300, 400}},
		{"narrow", 101, 142, []float64{110, 120, 130, 140}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got []float64
			for _, tk := range logTicks(tc.min, tc.max) {
				if tk.Label != "" && tk.Value >= tc.min && tk.Value <= tc.max {
					got = append(got, tk.Value)
					require.Equal(t, strconv.FormatFloat(tk.Value, 'g', -1, 64), tk.Label)
				}
			}
			require.Equal(t, tc.want, got)
		})
	}
}

// TestSpreadString: a mean over seeds with its range; a range with a
// negative end (the search credit, a correlation) is written "LO to HI",
// since "LO-HI" reads as a subtraction there ("-0.200--0.050").
func TestSpreadString(t *testing.T) {
	for _, tc := range []struct {
		s    Spread
		want string
	}{
		{Spread{Mean: 0.5, Min: 0.5, Max: 0.5}, "0.500"},
		{Spread{Mean: 0.5, Min: 0.4, Max: 0.6}, "0.500 (0.400-0.600)"},
		{Spread{Mean: -0.125, Min: -0.2, Max: -0.05}, "-0.125 (-0.200 to -0.050)"},
		{Spread{Mean: 0.05, Min: -0.1, Max: 0.2}, "0.050 (-0.100 to 0.200)"},
		// Seeds alike but for the rounding of their means (pass@1 of two
		// seeds with as many correct samples, summed in another order):
		// no range, which read "0.219 (0.219-0.219)".
		{Spread{Mean: 0.21875, Min: 0.21874999999999997, Max: 0.21875000000000003}, "0.219"},
		// Ends apart at the precision shown keep their range.
		{Spread{Mean: 0.2186, Min: 0.2181, Max: 0.2189}, "0.219 (0.218-0.219)"},
	} {
		require.Equal(t, tc.want, tc.s.String())
	}
}

// TestNewRSARecordsCandidateCap: an RSA report recorded nothing telling
// its candidate cap's tokens (text tokens since e4d994d; before, a
// stopped candidate's <|im_end|> counted too) from an older report's, so
// compare averaged both as seeds of one setting. A capped report now
// records meta.extra's candidate_cap, without touching the meta given.
func TestNewRSARecordsCandidateCap(t *testing.T) {
	for _, tc := range []struct {
		name  string
		extra map[string]string
		cap   int // -1: none, but a step's prompts fitted
		want  map[string]string
	}{
		{"capped", map[string]string{"temperature": "1"}, 512, map[string]string{"temperature": "1", "candidate_cap": "text tokens"}},
		{"capped, no extra", nil, 1, map[string]string{"candidate_cap": "text tokens"}},
		{"uncapped", map[string]string{"temperature": "1"}, 0, map[string]string{"temperature": "1"}},
		{"uncapped, no extra", nil, 0, nil},
		// Prompts fitted to the context cut candidates too.
		{"fitted", nil, -1, map[string]string{"candidate_cap": "text tokens"}},
	} {
		m := reportMeta()
		m.Extra = tc.extra
		given := maps.Clone(tc.extra)
		res := rollout.RSAResult{Config: rollout.RSAConfig{Population: 2, SubsetSize: 1, Steps: 1, CandidateTokens: max(tc.cap, 0)},
			Steps: []rollout.RSAStep{{Step: 0}, {Step: 1}}}
		if tc.cap < 0 {
			res.Steps[1].FittedPrompts = 1
		}
		rep := NewRSA(m, res)
		require.Equal(t, tc.want, rep.Meta.Extra, tc.name)
		require.Equal(t, given, tc.extra, "%s: the meta given", tc.name)
	}
}

// TestPlotSeedsLabelsTheSpread: a curve averaged over seeds is drawn with
// error bars, its range over them; the figure said neither that the
// curve is a mean nor what the bars are (a range, an interval, a
// standard deviation?). A curve of several seeds now says how many in
// its legend entries, and the title what the bars are; a figure whose
// curves are one seed each draws no bars and says nothing of them.
func TestPlotSeedsLabelsTheSpread(t *testing.T) {
	f := Figure{Title: "pass@k and majority@k", XLabel: "k (samples)", Axis: AxisLog2, Name: "pass@k", Name2: "majority@k"}
	curve := func(label string, n int) Seeds {
		s := Seeds{Label: label, N: n, X: []float64{1, 2}}
		for _, y := range []float64{0.2, 0.4} {
			s.Y = append(s.Y, Spread{Mean: y, Min: y - 0.05, Max: y + 0.05})
			s.Y2 = append(s.Y2, Spread{Mean: y / 2, Min: y/2 - 0.05, Max: y/2 + 0.05})
		}
		return s
	}
	for _, tc := range []struct {
		name      string
		curves    []Seeds
		want, not []string
	}{
		{"seeds", []Seeds{curve("A", 3), curve("B", 1)},
			[]string{">pass@k and majority@k (bars: range over seeds)<", ">A pass@k (mean of 3 seeds)<", ">A majority@k (mean of 3 seeds)<", ">B pass@k<", ">B majority@k<"},
			[]string{"1 seed"}},
		{"one seed each", []Seeds{curve("A", 1), curve("B", 1)},
			[]string{">pass@k and majority@k<", ">A pass@k<", ">B pass@k<"},
			[]string{"bars", "seed"}},
	} {
		path := filepath.Join(t.TempDir(), "p.svg")
		require.NoError(t, PlotSeeds(path, PlotSize{}, f, tc.curves...), tc.name)
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		for _, w := range tc.want {
			require.Contains(t, string(b), w, tc.name)
		}
		for _, n := range tc.not {
			require.NotContains(t, string(b), n, tc.name)
		}
	}
}

// svgText is a text an SVG figure draws: its string, where it starts
// (its baseline's left end, in points from the figure's bottom left) and
// its extent in the figure's font.
type svgText struct {
	s                         string
	x, baseline, w, up, under float64
}

// svgTexts reads the texts of an SVG figure written by writeFigure.
func svgTexts(t *testing.T, svg string) []svgText {
	t.Helper()
	re := regexp.MustCompile(`<text x="([^"]+)" y="([^"]+)"[^>]*font-size:([0-9.]+)px">([^<]*)</text>`)
	var out []svgText
	for _, m := range re.FindAllStringSubmatch(svg, -1) {
		var v [3]float64
		for i := range v {
			f, err := strconv.ParseFloat(m[i+1], 64)
			require.NoError(t, err, m[0])
			v[i] = f
		}
		sty := text.Style{Font: font.From(plot.DefaultFont, vg.Length(v[2])), Handler: plot.DefaultTextHandler}
		ext := sty.FontExtents()
		out = append(out, svgText{s: m[4], x: v[0], baseline: -v[1], // drawn under scale(1, -1)
			w: float64(sty.Width(m[4])), up: float64(ext.Ascent), under: float64(ext.Descent)})
	}
	return out
}

// TestPlotLegendCoversNoData: the legend of a pass@k figure sat inside
// the axes, at their bottom right, over the majority@k curves of weak
// models at large k (four entries of two labels of two seeds covered
// the k = 8..64 points under 0.15). It is drawn outside the axes: to
// their right, or, where that would take more than half the figure's
// width (long labels, a narrow figure), under the x axis's label; inside
// only in a figure too small for either. Every text of a figure with the
// legend outside is in the figure: the title, centred over the axes
// beside the legend, was cut at both ends where it was wider than them.
func TestPlotLegendCoversNoData(t *testing.T) {
	f := Figure{Title: "pass@k and majority@k", XLabel: "k (samples)", Axis: AxisLog2, Name: "pass@k", Name2: "majority@k"}
	curve := func(label string, p1, m float64) Seeds {
		s := Seeds{Label: label, N: 2}
		for k := 1; k <= 64; k *= 2 {
			pk := 1 - math.Pow(1-p1, float64(k))
			s.X = append(s.X, float64(k))
			s.Y = append(s.Y, Spread{Mean: pk, Min: pk * 0.95, Max: pk})
			s.Y2 = append(s.Y2, Spread{Mean: m, Min: m - 0.01, Max: m + 0.01})
		}
		return s
	}
	for _, tc := range []struct {
		name   string
		size   PlotSize
		title  string
		labels []string
		where  string // "right", "below" or "inside"
	}{
		{"default size", PlotSize{}, f.Title, []string{"base-0.6b", "spiral-0.6b"}, "right"},
		{"long title", PlotSize{}, "Accuracy against generated tokens per problem", []string{"qwen3-0.6b-base-ab", "qwen3-0.6b-spiral-ab"}, "right"},
		{"long labels", PlotSize{}, f.Title, []string{"qwen3-0.6b-base-temperature-0.6", "qwen3-0.6b-spiral-step-200-temperature-0.6"}, "below"},
		{"narrow", PlotSize{Width: 400, Height: 500}, f.Title, []string{"base-0.6b", "spiral-0.6b"}, "below"},
		{"labels as wide as the figure", PlotSize{Width: 600, Height: 500}, f.Title, []string{"base", "runs/qwen3-0.6b-spiral-step-200-temperature-0.6"}, "below"},
		{"too small for either", PlotSize{Width: 150, Height: 120}, f.Title, []string{"base-0.6b", "spiral-0.6b"}, "inside"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "p.svg")
			f := f
			f.Title = tc.title
			require.NoError(t, PlotSeeds(path, tc.size, f, curve(tc.labels[0], 0.05, 0.08), curve(tc.labels[1], 0.1, 0.14)))
			b, err := os.ReadFile(path)
			require.NoError(t, err)
			size := tc.size.withDefaults()
			width := float64(size.Width) * 72 / DPI // points
			texts := svgTexts(t, string(b))
			find := func(s string) svgText {
				for _, x := range texts {
					if x.s == s {
						return x
					}
				}
				t.Fatalf("no text %q in the figure", s)
				return svgText{}
			}
			last, xLabel := find("64"), find("k (samples)") // the right end of the data; the axes' bottom
			entries := 0
			for _, x := range texts {
				if tc.where != "inside" { // where the legend does not fit, it is cut
					require.GreaterOrEqual(t, x.x, 0.0, "%q starts in the figure", x.s)
					require.LessOrEqual(t, x.x+x.w, width+0.01, "%q ends in the figure", x.s)
				}
				if !strings.HasSuffix(x.s, "(mean of 2 seeds)") {
					continue
				}
				entries++
				switch tc.where {
				case "right":
					require.Greater(t, x.x, last.x+last.w, "%q starts right of the last tick, k = 64", x.s)
				case "below":
					require.Less(t, x.baseline+x.up, xLabel.baseline-xLabel.under, "%q is under the x axis's label", x.s)
				case "inside":
					require.Greater(t, x.baseline, xLabel.baseline+xLabel.up, "%q is over the x axis's label", x.s)
				}
			}
			require.Equal(t, 4, entries, "pass@k and majority@k of two labels")
		})
	}
}

// TestPlotTickLabelsDoNotOverlap: a log axis labels every measured k or
// budget (up to 12 of them), and where the largest is no power of two
// (--samples 17, --max-new-tokens 1100) it lies a fraction of an octave
// past the last power, where their labels were drawn over each other
// ("1024" and "1100" read as one smudge). A label that would overlap the
// one before it is left out, its tick kept; labels with room stay.
func TestPlotTickLabelsDoNotOverlap(t *testing.T) {
	f := Figure{Title: "Sequential scaling", XLabel: "token budget", Axis: AxisLog2, Name: "accuracy"}
	for _, tc := range []struct {
		name string
		size PlotSize
		xs   []float64
		kept []string // labels that have room
	}{
		{"budgets to 1100", PlotSize{}, []float64{1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 1100}, []string{"1", "2", "512", "1024"}},
		{"k to 17", PlotSize{}, []float64{1, 2, 4, 8, 16, 17}, []string{"1", "2", "4", "8", "16"}},
		{"k to 17, wide", PlotSize{Width: 3000}, []float64{1, 2, 4, 8, 16, 17}, []string{"1", "2", "4", "8", "16", "17"}},
		{"k to 24", PlotSize{}, []float64{1, 2, 4, 8, 16, 24}, []string{"1", "2", "4", "8", "16", "24"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := Seeds{Label: "m", N: 1, X: tc.xs}
			for i := range tc.xs {
				y := float64(i) / float64(len(tc.xs))
				s.Y = append(s.Y, Spread{Mean: y, Min: y, Max: y})
			}
			path := filepath.Join(t.TempDir(), "p.svg")
			require.NoError(t, PlotSeeds(path, tc.size, f, s))
			b, err := os.ReadFile(path)
			require.NoError(t, err)
			texts := svgTexts(t, string(b))
			row := math.NaN()
			for _, x := range texts {
				if x.s == "1" {
					row = x.baseline
				}
			}
			var ticks []svgText // the x axis's labels, left to right
			for _, x := range texts {
				if math.Abs(x.baseline-row) < 0.01 {
					ticks = append(ticks, x)
				}
			}
			for i := 1; i < len(ticks); i++ {
				require.Greater(t, ticks[i].x, ticks[i-1].x+ticks[i-1].w, "%q starts after %q ends", ticks[i].s, ticks[i-1].s)
			}
			var labels []string
			for _, x := range ticks {
				labels = append(labels, x.s)
			}
			for _, k := range tc.kept {
				require.Contains(t, labels, k)
			}
		})
	}
}

// TestPlotPassAtKMajorityOfOneSample: passk.png of an evaluation of one
// sample a problem (--samples 1) drew a one-point dashed majority@k
// curve, the vote of one sample, which is its pass@1, over the pass@k
// point (summary.md and training.png leave majority@1 out for that
// reason). It draws pass@k alone there; more samples keep majority@k.
// Its title, "pass@k and majority@k", named the curve it no longer
// draws: it names what is drawn.
func TestPlotPassAtKMajorityOfOneSample(t *testing.T) {
	one := NewPassAtK(reportMeta(), rollout.PassAtKResult{
		Config: rollout.PassAtKConfig{Samples: 1, Ks: []int{1}},
		Points: []rollout.KPoint{{K: 1, PassAtK: 0.25, MajorityAtK: 0.25, MajorityExact: true}},
	})
	name := reportMeta().Name()
	for _, tc := range []struct {
		name     string
		rep      PassAtK
		majority bool
		title    string
	}{
		{"one sample", one, false, "pass@k"},
		{"eight samples", reportPassAtK(), true, "pass@k and majority@k"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "passk.svg")
			require.NoError(t, PlotPassAtK(path, PlotSize{}, tc.rep))
			b, err := os.ReadFile(path)
			require.NoError(t, err)
			require.Contains(t, string(b), ">"+name+" pass@k<")
			require.Equal(t, tc.majority, strings.Contains(string(b), ">"+name+" majority@k<"), "a majority@k curve")
			require.Contains(t, string(b), ">"+tc.title+"<", "the title")
			require.Equal(t, tc.majority, strings.Contains(string(b), "majority@k"), "majority@k named anywhere")
		})
	}
}
