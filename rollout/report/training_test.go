package report

import (
	"fmt"
	"image/color"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

func TestPlotTraining(t *testing.T) {
	path := filepath.Join(t.TempDir(), "training.png")
	pts := []TrainingPoint{{Step: 1, SearchReward: 0.1, AggregateReward: 0.2, HasAggregate: true, Entropy: 0.3, Informative: 0.5},
		{Step: 2, SearchReward: 0.3, AggregateReward: 0.5, HasAggregate: true, Entropy: 0.25, Informative: 0.75}}
	held := []HeldOutPoint{{Step: 0, PassAt1: 0.4, MajorityAtK: 0.5, K: 4}, {Step: 2, PassAt1: 0.45, MajorityAtK: 0.55, K: 4}}
	for _, h := range [][]HeldOutPoint{held, nil} {
		require.NoError(t, PlotTraining(path, PlotSize{Width: 600, Height: 400}, "run", pts, h))
		f, err := os.Open(path)
		require.NoError(t, err)
		img, err := png.Decode(f)
		f.Close()
		require.NoError(t, err)
		require.Equal(t, 600, img.Bounds().Dx())
		require.Equal(t, 400, img.Bounds().Dy())
	}
	require.Error(t, PlotTraining(path, PlotSize{}, "run", nil, nil))
	// A step whose update was skipped for a non-finite entropy (NaN in
	// metrics.jsonl's null) is left out of the entropy panel.
	nan := append(slices.Clone(pts), TrainingPoint{Step: 3, SearchReward: 0.3, Entropy: math.NaN(), Informative: 1})
	require.NoError(t, PlotTraining(path, PlotSize{}, "run", nan, held))
	// As a vector figure for a paper: the panels' titles in the SVG.
	svg := filepath.Join(t.TempDir(), "training.svg")
	require.NoError(t, PlotTraining(svg, PlotSize{}, "run", pts, held))
	b, err := os.ReadFile(svg)
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(string(b), "<?xml"))
	for _, title := range []string{"run: rewards", "token entropy", "held-out evaluation"} {
		require.Contains(t, string(b), title)
	}
}

// TestRewardSeries: the rewards panel draws search and aggregation, one
// aggregation line per round when a run has several, none for GRPO.
func TestRewardSeries(t *testing.T) {
	names := func(ss []series) []string {
		var out []string
		for _, s := range ss {
			out = append(out, s.label)
		}
		return out
	}
	grpo := []TrainingPoint{{Step: 1, SearchReward: 0.5}}
	require.Equal(t, []string{"search"}, names(rewardSeries(grpo)))
	one := []TrainingPoint{{Step: 1, SearchReward: 0.1, AggregateReward: 0.2, HasAggregate: true}}
	got := rewardSeries(one)
	require.Equal(t, []string{"search", "aggregation"}, names(got))
	require.Equal(t, 0.2, got[1].xy[0].Y)
	two := []TrainingPoint{
		{Step: 1, SearchReward: 0.1, AggregateReward: 0.25, HasAggregate: true, AggregateRounds: []float64{0.2, 0.3}},
		{Step: 2, SearchReward: 0.2, AggregateReward: 0.45, HasAggregate: true, AggregateRounds: []float64{0.4, 0.5}},
	}
	got = rewardSeries(two)
	require.Equal(t, []string{"search", "aggregation, round 1", "aggregation, round 2"}, names(got))
	require.Equal(t, []float64{0.4, 0.5}, []float64{got[1].xy[1].Y, got[2].xy[1].Y})
	require.Equal(t, []float64{1, 2}, []float64{got[2].xy[0].X, got[2].xy[1].X})
	require.NoError(t, PlotTraining(filepath.Join(t.TempDir(), "training.png"), PlotSize{Width: 600, Height: 400}, "run", two, nil))
}

// TestSignalSeries: the informative fraction at every step, the search
// credit where a step has one (none under agg-only), negative values
// plotted too.
func TestSignalSeries(t *testing.T) {
	credit := func(v float64) *float64 { return &v }
	aggOnly := []TrainingPoint{{Step: 1, Informative: 0.5}, {Step: 2, Informative: 0.75}}
	got := signalSeries(aggOnly)
	require.Len(t, got, 1)
	require.Equal(t, "informative fraction", got[0].label)
	require.Equal(t, []float64{0.5, 0.75}, []float64{got[0].xy[0].Y, got[0].xy[1].Y})

	spiral := []TrainingPoint{{Step: 1, Informative: 0.5, SearchCredit: credit(-0.2)}, {Step: 2, Informative: 1}, {Step: 3, Informative: 0.25, SearchCredit: credit(0.4)}}
	got = signalSeries(spiral)
	require.Len(t, got, 2)
	require.Equal(t, "search credit", got[1].label)
	require.Equal(t, plotter.XYs{{X: 1, Y: -0.2}, {X: 3, Y: 0.4}}, got[1].xy)
	require.Len(t, got[0].xy, 3)
	require.NoError(t, PlotTraining(filepath.Join(t.TempDir(), "training.png"), PlotSize{Width: 600, Height: 400}, "run", spiral, nil))
}

func TestSmooth(t *testing.T) {
	// Ten points or fewer are not smoothed (b = 0).
	require.Equal(t, []float64{1, 0, 1}, Smooth([]float64{1, 0, 1}))
	// Twenty points: b = 1 - 10/20 = 0.5; s1 = (0.5*1 + 0) / (0.5 + 1).
	ys := make([]float64, 20)
	ys[0] = 1
	s := Smooth(ys)
	require.InDelta(t, 1, s[0], 1e-15)
	require.InDelta(t, 1.0/3, s[1], 1e-15)
	require.InDelta(t, 0.25/1.75, s[2], 1e-15)
	// A constant stays constant (debiased from the first point).
	c := Smooth([]float64{0.7, 0.7, 0.7, 0.7, 0.7, 0.7, 0.7, 0.7, 0.7, 0.7, 0.7, 0.7, 0.7, 0.7, 0.7})
	for _, v := range c {
		require.InDelta(t, 0.7, v, 1e-12)
	}
}

// TestPlotTrainingOnePoint: a series of one point (a one-step run, or
// the one step that trained something) draws no smoothed line, so its
// value is marked in the series' full colour rather than left as the
// small pale raw dot alone; longer series keep the line and pale dots.
func TestPlotTrainingOnePoint(t *testing.T) {
	full := func(colour int) string {
		r, g, b, _ := plotutil.Color(colour).RGBA()
		return fmt.Sprintf("fill:#%02X%02X%02X", r>>8, g>>8, b>>8)
	}
	one := []TrainingPoint{{Step: 1, SearchReward: 0.5, AggregateReward: 0.6, HasAggregate: true, Entropy: 0.07, Informative: 1}}
	two := append(slices.Clone(one), TrainingPoint{Step: 2, SearchReward: 0.4, AggregateReward: 0.5, HasAggregate: true, Entropy: 0.06, Informative: 0.5})
	cases := []struct {
		name   string
		pts    []TrainingPoint
		marked bool
	}{
		{"one step", one, true},
		{"two steps", two, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "training.svg")
			require.NoError(t, PlotTraining(path, PlotSize{}, "run", tc.pts, nil))
			b, err := os.ReadFile(path)
			require.NoError(t, err)
			// search 0, aggregation 1, entropy 2, informative fraction 3
			for colour := range 4 {
				require.Equal(t, tc.marked, strings.Contains(string(b), full(colour)+`"`), "series %d's point in full colour", colour)
			}
		})
	}
}

// TestLegendRoom: a panel's data stay below its legend (top left, over
// the data area), however many entries it has, so that a value at the
// top of the range (an informative fraction of 1, the entropy's largest
// value) is not drawn under the legend's text.
func TestLegendRoom(t *testing.T) {
	cases := []struct {
		name    string
		unit    bool
		entries int
		ys      []float64
		height  vg.Length
	}{
		{"fraction at 1, two entries", true, 2, []float64{1, 0.9, 1}, 300},
		{"three rounds", true, 3, []float64{0.2, 1, 0.5}, 250},
		{"entropy's peak", false, 1, []float64{0.05, 0.24, 0.1}, 300},
		{"small panel", true, 2, []float64{1, 1}, 150},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := panel("panel", "y", tc.unit)
			xy := make(plotter.XYs, len(tc.ys))
			for i, y := range tc.ys {
				xy[i] = plotter.XY{X: float64(i + 1), Y: y}
			}
			for e := range tc.entries {
				require.NoError(t, addSmoothed(p, fmt.Sprintf("series %d", e), xy, e))
			}
			c := draw.New(vgimg.New(400, tc.height))
			legendRoom(p, c)
			// Draw puts the legend at the top of the area under the title.
			legend := p.Legend.Rectangle(c)
			under := c.Max.Y - p.Title.TextStyle.Rectangle(p.Title.Text).Size().Y - p.Title.Padding
			bottom := under - (legend.Max.Y - legend.Min.Y)
			dc := p.DataCanvas(c)
			top := slices.Max(tc.ys)
			require.LessOrEqual(t, float64(dc.Y(p.Y.Norm(top))), float64(bottom), "the data's top is below the legend")
			require.GreaterOrEqual(t, p.Y.Max, top)
			if tc.unit {
				require.Less(t, p.Y.Max, 1.5, "the room is the legend's, not more")
			}
		})
	}
}

// TestMajorityLabel: the held-out panel's majority curve is named by its
// k, the evaluations' samples; where a run's evaluations sampled other
// counts (a rerun with another --eval-samples under --override), every k
// in the order logged, where it was named by the last alone
// ("majority@3" over points at k = 2 and 3).
func TestMajorityLabel(t *testing.T) {
	for _, tc := range []struct {
		ks   []int
		want string
	}{
		{[]int{4}, "majority@4"},
		{[]int{2, 2, 2}, "majority@2"},
		{[]int{2, 2, 3, 3}, "majority@k (k = 2, then 3)"},
		{[]int{2, 3, 2}, "majority@k (k = 2, then 3, then 2)"},
	} {
		var held []HeldOutPoint
		for i, k := range tc.ks {
			held = append(held, HeldOutPoint{Step: i, K: k})
		}
		require.Equal(t, tc.want, majorityLabel(held))
	}
}

// TestHeldOutTitle: the held-out panel says at which steps the problems
// evaluated changed (a rerun on other held-out problems under
// --override), since its curves join points of different problems
// there; lines that record no digest (older versions) change nothing.
func TestHeldOutTitle(t *testing.T) {
	for _, tc := range []struct {
		digests []string
		want    string
	}{
		{nil, "held-out evaluation (none)"},
		{[]string{"a", "a", "a"}, "held-out evaluation"},
		{[]string{"", "a", "a"}, "held-out evaluation"},
		{[]string{"a", "a", "b", "b"}, "held-out evaluation (problems changed at step 20)"},
		{[]string{"a", "b", "a"}, "held-out evaluation (problems changed at steps 10, 20)"},
	} {
		var held []HeldOutPoint
		for i, d := range tc.digests {
			held = append(held, HeldOutPoint{Step: 10 * i, K: 4, Digest: d})
		}
		require.Equal(t, tc.want, heldOutTitle(held), "%q", tc.digests)
	}
}

// TestTrainingEmptyPanelsSteps: a panel with nothing to draw, the
// held-out evaluations of a run with --eval-every 0 and
// --final-rsa-steps 0, or the entropy of a run none of whose steps
// updated the weights, spans the rewards panel's steps; gonum gave it
// -1..1, a step axis from -1 beside the others' 1..3.
func TestTrainingEmptyPanelsSteps(t *testing.T) {
	pts := []TrainingPoint{{Step: 1, SearchReward: 0.5, NoUpdate: true}, {Step: 2, SearchReward: 0.4, NoUpdate: true}, {Step: 3, SearchReward: 0.6, NoUpdate: true}}
	grid, err := trainingPanels("run", pts, nil)
	require.NoError(t, err)
	rewards, entropy, heldOut := grid[0][0], grid[0][1], grid[1][1]
	require.Equal(t, [2]float64{1, 3}, [2]float64{rewards.X.Min, rewards.X.Max})
	for _, p := range []*plot.Plot{entropy, heldOut} {
		require.Equal(t, [2]float64{1, 3}, [2]float64{p.X.Min, p.X.Max}, p.Title.Text)
	}
	// With evaluations, the held-out panel spans its own steps (step 0's).
	grid, err = trainingPanels("run", pts, []HeldOutPoint{{Step: 0, K: 1}, {Step: 3, K: 1}})
	require.NoError(t, err)
	require.Equal(t, [2]float64{0, 3}, [2]float64{grid[1][1].X.Min, grid[1][1].X.Max})
}

// TestPlotTrainingRawPointsOnTop: each per-step series' raw points are
// drawn over its smoothed line, not under it: with ten points or fewer
// the line passes through every one of them (Smooth leaves them as they
// are), and 1.5-point-wide, it hid the raw points it was drawn over.
func TestPlotTrainingRawPointsOnTop(t *testing.T) {
	hex := func(c color.Color) string {
		r, g, b, _ := c.RGBA()
		return fmt.Sprintf("#%02X%02X%02X", r>>8, g>>8, b>>8)
	}
	credit := 0.3
	pts := []TrainingPoint{
		{Step: 1, SearchReward: 0.5, AggregateReward: 0.6, HasAggregate: true, Entropy: 0.07, Informative: 1, SearchCredit: &credit},
		{Step: 2, SearchReward: 0.4, AggregateReward: 0.5, HasAggregate: true, Entropy: 0.06, Informative: 0.5, SearchCredit: &credit},
		{Step: 3, SearchReward: 0.2, AggregateReward: 0.7, HasAggregate: true, Entropy: 0.05, Informative: 0.75, SearchCredit: &credit},
	}
	path := filepath.Join(t.TempDir(), "training.svg")
	require.NoError(t, PlotTraining(path, PlotSize{}, "run", pts, nil))
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	svg := string(b)
	// search 0, aggregation 1, entropy 2, informative fraction 3, search credit 4
	for colour := range 5 {
		line := strings.Index(svg, "stroke:"+hex(plotutil.Color(colour)))
		raw := strings.LastIndex(svg, "fill:"+hex(pale(plotutil.Color(colour))))
		require.NotEqual(t, -1, line, "series %d's line", colour)
		require.Greater(t, raw, line, "series %d's raw points drawn after its line", colour)
	}
}

// TestPlotTrainingSmoothedLegend: a series' legend says "(smoothed)"
// only where Smooth changed it: ten points or fewer are drawn as they
// are (b = 0), and so named, eleven or more smoothed.
func TestPlotTrainingSmoothedLegend(t *testing.T) {
	for _, tc := range []struct {
		steps    int
		smoothed bool
	}{{3, false}, {10, false}, {11, true}} {
		t.Run(fmt.Sprint(tc.steps), func(t *testing.T) {
			var pts []TrainingPoint
			for s := 1; s <= tc.steps; s++ {
				pts = append(pts, TrainingPoint{Step: s, SearchReward: float64(s%3) / 3, AggregateReward: 0.5, HasAggregate: true, Entropy: 0.1, Informative: 1})
			}
			path := filepath.Join(t.TempDir(), "training.svg")
			require.NoError(t, PlotTraining(path, PlotSize{}, "run", pts, nil))
			b, err := os.ReadFile(path)
			require.NoError(t, err)
			for _, name := range []string{"search", "aggregation", "entropy", "informative fraction"} {
				require.Equal(t, tc.smoothed, strings.Contains(string(b), ">"+name+" (smoothed)<"), "%s's legend", name)
				require.Equal(t, !tc.smoothed, strings.Contains(string(b), ">"+name+"<"), "%s's legend", name)
			}
		})
	}
}

// TestPlotTrainingNegativeCredit: the gradient-signal panel's y axis
// reaches down to a search credit below 0 (a correlation), but its ticks
// were those of [0, 1] alone, so the part below 0 had neither mark nor
// label: a credit of -0.17 or -0.6 read the same. The axis now ends at
// the labelled tick (a multiple of 0.2) at or below the lowest credit,
// and is marked every 0.1 down to it.
func TestPlotTrainingNegativeCredit(t *testing.T) {
	credit := func(c float64) *float64 { return &c }
	for _, tc := range []struct {
		name   string
		lowest float64
		want   []string // the labels below 0
	}{
		{"a little below 0", -0.17, []string{"-0.2"}},
		{"well below 0", -0.55, []string{"-0.2", "-0.4", "-0.6"}},
		{"on a label", -0.4, []string{"-0.2", "-0.4"}},
		{"none below 0", 0.1, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var pts []TrainingPoint
			for i, c := range []float64{0.3, tc.lowest, 0.5} {
				pts = append(pts, TrainingPoint{Step: i + 1, SearchReward: 0.5, Entropy: 0.2, Informative: 0.6, SearchCredit: credit(c)})
			}
			path := filepath.Join(t.TempDir(), "training.svg")
			require.NoError(t, PlotTraining(path, PlotSize{}, "run", pts, nil))
			b, err := os.ReadFile(path)
			require.NoError(t, err)
			var below []string
			for _, x := range svgTexts(t, string(b)) {
				if strings.HasPrefix(x.s, "-") {
					below = append(below, x.s)
				}
			}
			slices.Sort(below)
			require.Equal(t, tc.want, below)
		})
	}
}

// TestTrainingPanelsShareSteps: training.png's four panels are read one
// above another (the entropy over the held-out accuracy), but each took
// its own steps: the held-out panel from step 0, the entropy from the
// first step that updated the weights, the others from step 1, so one
// step lay at other places in each. Every panel now spans every panel's
// steps.
func TestTrainingPanelsShareSteps(t *testing.T) {
	var pts []TrainingPoint
	for s := 1; s <= 200; s++ {
		pts = append(pts, TrainingPoint{Step: s, SearchReward: 0.5, Entropy: 0.3, Informative: 0.5, NoUpdate: s <= 40})
	}
	for _, tc := range []struct {
		name   string
		held   []HeldOutPoint
		lo, hi float64
	}{
		{"evaluations from step 0", []HeldOutPoint{{Step: 0, K: 4}, {Step: 100, K: 4}, {Step: 200, K: 4}}, 0, 200},
		{"no evaluation", nil, 1, 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			grid, err := trainingPanels("run", pts, tc.held)
			require.NoError(t, err)
			for _, row := range grid {
				for _, p := range row {
					require.Equal(t, [2]float64{tc.lo, tc.hi}, [2]float64{p.X.Min, p.X.Max}, p.Title.Text)
				}
			}
		})
	}
}

// TestPlotTrainingMajorityOfOneSample: a run evaluated with
// --eval-samples 1 drew a dashed "majority@1" over its pass@1: the vote
// of one sample is that sample, the same curve twice. The held-out panel
// draws majority@k where some evaluation sampled more than one.
func TestPlotTrainingMajorityOfOneSample(t *testing.T) {
	pts := []TrainingPoint{{Step: 1, SearchReward: 0.5, Entropy: 0.2, Informative: 0.5}, {Step: 2, SearchReward: 0.6, Entropy: 0.2, Informative: 0.5}}
	for _, tc := range []struct {
		name      string
		ks        []int
		want, not []string
	}{
		{"one sample", []int{1, 1}, []string{">pass@1<"}, []string{"majority"}},
		{"four samples", []int{4, 4}, []string{">pass@1<", ">majority@4<"}, nil},
		{"one, then four", []int{1, 4}, []string{">pass@1<", ">majority@k (k = 1, then 4)<"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var held []HeldOutPoint
			for i, k := range tc.ks {
				held = append(held, HeldOutPoint{Step: i * 2, PassAt1: 0.4, MajorityAtK: 0.4, K: k})
			}
			path := filepath.Join(t.TempDir(), "training.svg")
			require.NoError(t, PlotTraining(path, PlotSize{}, "run", pts, held))
			b, err := os.ReadFile(path)
			require.NoError(t, err)
			for _, w := range tc.want {
				require.True(t, strings.Contains(string(b), w), "the figure says %s", w)
			}
			for _, n := range tc.not {
				require.False(t, strings.Contains(string(b), n), "the figure says no %s", n)
			}
		})
	}
}
