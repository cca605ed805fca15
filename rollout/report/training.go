package report

import (
	"errors"
	"fmt"
	"image/color"
	"math"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// TrainingPoint is one training step, read from metrics.jsonl.
type TrainingPoint struct {
	Step int
	// SearchReward and AggregateReward are the mean rewards (accuracy) of
	// the step's search and aggregation traces; HasAggregate is false for
	// GRPO, which has no aggregation phase.
	SearchReward, AggregateReward float64
	HasAggregate                  bool
	// AggregateRounds are the aggregation rewards by round when the run
	// has several aggregation rounds (--agg-rounds); nil otherwise.
	AggregateRounds []float64
	// Entropy is the token-mean policy entropy (nats) on trained tokens
	// (not drawn when not finite);
	// Informative the fraction of drawn problems that carried a gradient.
	Entropy, Informative float64
	// NoUpdate marks a step that trained nothing: its Entropy was not
	// measured and is not drawn.
	NoUpdate bool
	// SearchCredit is the correlation of the step's trained search
	// traces' own rewards with their advantages (metrics.jsonl's
	// search_credit); nil where the step has none (agg-only).
	SearchCredit *float64
}

// signalSeries are the gradient-signal panel's lines: the informative
// fraction, and the search credit when any step has one.
func signalSeries(pts []TrainingPoint) []series {
	inf, credit := series{label: "informative fraction"}, series{label: "search credit"}
	for _, p := range pts {
		x := float64(p.Step)
		inf.xy = append(inf.xy, plotter.XY{X: x, Y: p.Informative})
		if p.SearchCredit != nil {
			credit.xy = append(credit.xy, plotter.XY{X: x, Y: *p.SearchCredit})
		}
	}
	if len(credit.xy) == 0 {
		return []series{inf}
	}
	return []series{inf, credit}
}

// rewardSeries are the rewards panel's lines: the search traces', then
// the aggregation traces' (none for GRPO), one line per round when the
// steps have several aggregation rounds.
func rewardSeries(pts []TrainingPoint) []series {
	out := []series{{label: "search"}}
	for _, p := range pts {
		x := float64(p.Step)
		out[0].xy = append(out[0].xy, plotter.XY{X: x, Y: p.SearchReward})
		if !p.HasAggregate {
			continue
		}
		rounds := p.AggregateRounds
		if len(rounds) < 2 {
			rounds = []float64{p.AggregateReward}
		}
		for r, y := range rounds {
			if len(out) < r+2 {
				name := "aggregation"
				if len(rounds) > 1 {
					name = fmt.Sprintf("aggregation, round %d", r+1)
				}
				out = append(out, series{label: name})
			}
			out[r+1].xy = append(out[r+1].xy, plotter.XY{X: x, Y: y})
		}
	}
	return out
}

// HeldOutPoint is one held-out evaluation, read from eval.jsonl.
type HeldOutPoint struct {
	Step int
	// PassAt1 and MajorityAtK at the evaluation's K samples per problem.
	PassAt1, MajorityAtK float64
	K                    int
	// Digest fingerprints the problems evaluated (eval.jsonl's
	// problems_digest; "" where the line records none).
	Digest string
}

// heldOutTitle titles the held-out panel of held: "(none)" when empty,
// and where the evaluations' problems changed (a rerun on other held-out
// problems under --override), at which steps, since its curves join
// points of different problems there.
func heldOutTitle(held []HeldOutPoint) string {
	title := "held-out evaluation"
	if len(held) == 0 {
		return title + " (none)"
	}
	var at []string
	for i := 1; i < len(held); i++ {
		if held[i].Digest != "" && held[i-1].Digest != "" && held[i].Digest != held[i-1].Digest {
			at = append(at, fmt.Sprint(held[i].Step))
		}
	}
	switch len(at) {
	case 0:
		return title
	case 1:
		return title + " (problems changed at step " + at[0] + ")"
	}
	return title + " (problems changed at steps " + strings.Join(at, ", ") + ")"
}

// majorityLabel names the majority@k curve of held (not empty) by its
// k, the evaluations' samples, or, where they sampled other counts (a
// rerun with another --eval-samples under --override), by each k in the
// order logged.
func majorityLabel(held []HeldOutPoint) string {
	ks := []string{fmt.Sprint(held[0].K)}
	for i := 1; i < len(held); i++ {
		if held[i].K != held[i-1].K {
			ks = append(ks, fmt.Sprint(held[i].K))
		}
	}
	if len(ks) == 1 {
		return "majority@" + ks[0]
	}
	return "majority@k (k = " + strings.Join(ks, ", then ") + ")"
}

// Default size of the training figure (four panels) in pixels.
const (
	DefaultTrainingWidth  = 1200
	DefaultTrainingHeight = 800
)

// PlotTraining writes a figure (PNG, SVG or PDF by path's extension) of
// four panels against the training step: the search and aggregation
// rewards, the token entropy (of the steps that trained something), the
// informative fraction with the search credit, and the held-out pass@1
// and majority@k (held may be empty; no majority@k where every
// evaluation sampled one, k = 1, whose majority is its pass@1).
// Each per-step series is drawn as its raw points and a smoothed line
// (Smooth).
func PlotTraining(path string, size PlotSize, label string, pts []TrainingPoint, held []HeldOutPoint) error {
	if len(pts) == 0 {
		return errors.New("report: plot training: no steps")
	}
	if size.Width == 0 {
		size.Width = DefaultTrainingWidth
	}
	if size.Height == 0 {
		size.Height = DefaultTrainingHeight
	}
	if size.Width < 0 || size.Height < 0 {
		return fmt.Errorf("report: plot %s: size %dx%d", path, size.Width, size.Height)
	}
	grid, err := trainingPanels(label, pts, held)
	if err != nil {
		return err
	}
	tiles := draw.Tiles{Rows: 2, Cols: 2, PadX: vg.Millimeter * 4, PadY: vg.Millimeter * 4,
		PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2, PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 2}
	return writeFigure(path, size, func(dc draw.Canvas) {
		canvases := plot.Align(grid, tiles, dc)
		for i := range grid {
			for j := range grid[i] {
				legendRoom(grid[i][j], canvases[i][j])
			}
		}
		canvases = plot.Align(grid, tiles, dc) // the y axes' new ranges
		for i := range grid {
			for j := range grid[i] {
				grid[i][j].Draw(canvases[i][j])
			}
		}
	})
}

// trainingPanels returns PlotTraining's four panels, rewards and entropy
// above, the informative fraction and the held-out evaluations below,
// all over the same steps, so that a step lies at one place in each
// (the held-out evaluations from step 0, the entropy from the first step
// that updated the weights, the others from step 1). A panel with
// nothing to draw (no evaluation, no step that updated the weights)
// takes them too, where gonum would give it -1..1.
func trainingPanels(label string, pts []TrainingPoint, held []HeldOutPoint) ([][]*plot.Plot, error) {
	var ent plotter.XYs
	for _, p := range pts {
		if !p.NoUpdate && !math.IsNaN(p.Entropy) && !math.IsInf(p.Entropy, 0) {
			ent = append(ent, plotter.XY{X: float64(p.Step), Y: p.Entropy})
		}
	}
	rewards := panel(label+": rewards", "reward", true)
	for i, s := range rewardSeries(pts) {
		if err := addSmoothed(rewards, s.label, s.xy, i); err != nil {
			return nil, err
		}
	}
	entropy := panel("token entropy", "nats", false)
	entropy.Y.Min = 0
	if len(ent) == 0 {
		entropy.Title.Text += " (no step updated the weights)"
	} else if err := addSmoothed(entropy, "entropy", ent, 2); err != nil {
		return nil, err
	}
	signal := signalSeries(pts)
	title := "informative fraction (problems with a gradient)"
	if len(signal) > 1 {
		title = "gradient signal: informative fraction, search credit"
	}
	informative := panel(title, "fraction / correlation", true)
	for i, s := range signal {
		if err := addSmoothed(informative, s.label, s.xy, 3+i); err != nil {
			return nil, err
		}
		for _, xy := range s.xy {
			// A correlation can be negative, down to -1 (a log's
			// value past it, or not a number, moves the axis no
			// further: its ticks count from its minimum).
			if xy.Y >= -1 {
				informative.Y.Min = min(informative.Y.Min, xy.Y)
			} else {
				informative.Y.Min = -1
			}
		}
	}
	// Down to the labelled tick (accuracyTicks) at or below the lowest.
	informative.Y.Min = math.Floor(informative.Y.Min*5+1e-9) / 5
	heldOut := panel(heldOutTitle(held), "accuracy", true)
	if len(held) > 0 {
		var p1, maj plotter.XYs
		for _, h := range held {
			p1 = append(p1, plotter.XY{X: float64(h.Step), Y: h.PassAt1})
			maj = append(maj, plotter.XY{X: float64(h.Step), Y: h.MajorityAtK})
		}
		if err := addLine(heldOut, "pass@1", p1, 0, false); err != nil {
			return nil, err
		}
		if slices.ContainsFunc(held, func(h HeldOutPoint) bool { return h.K > 1 }) { // majority@1 is pass@1
			if err := addLine(heldOut, majorityLabel(held), maj, 1, true); err != nil {
				return nil, err
			}
		}
	}
	grid := [][]*plot.Plot{{rewards, entropy}, {informative, heldOut}}
	lo, hi := rewards.X.Min, rewards.X.Max // every step logged
	for _, p := range []*plot.Plot{entropy, heldOut} {
		if p.X.Min <= p.X.Max { // else no data: plot.New's +Inf..-Inf
			lo, hi = min(lo, p.X.Min), max(hi, p.X.Max)
		}
	}
	for _, row := range grid {
		for _, p := range row {
			p.X.Min, p.X.Max = lo, hi
		}
	}
	return grid, nil
}

func panel(title, yLabel string, unit bool) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "step"
	p.X.Tick.Marker = plot.TickerFunc(integerTicks)
	p.Y.Label.Text = yLabel
	p.Y.Tick.Marker = plot.TickerFunc(valueTicks)
	if unit {
		p.Y.Min, p.Y.Max = 0, 1
		p.Y.Tick.Marker = plot.TickerFunc(accuracyTicks)
	}
	p.Legend.Top = true
	p.Legend.Left = true
	p.Add(plotter.NewGrid())
	return p
}

// legendRoom raises p's y axis so that its data, drawn on c, stay below
// its legend (top left, over the data area): an informative fraction or
// accuracy of 1, or the entropy's largest value, would otherwise lie
// under the legend's text.
func legendRoom(p *plot.Plot, c draw.Canvas) {
	r := p.Legend.Rectangle(c)
	legend := r.Max.Y - r.Min.Y
	if legend <= 0 {
		return
	}
	dc := p.DataCanvas(c)
	data := dc.Max.Y - dc.Min.Y
	f := float64(legend+p.Legend.Padding) / float64(data)
	if f <= 0 || f >= 0.5 || p.Y.Max <= p.Y.Min {
		return // a canvas too small to make room in
	}
	p.Y.Max = p.Y.Min + (p.Y.Max-p.Y.Min)/(1-f)
}

// addSmoothed adds xy's smoothed line and, over it, its raw points
// (small, pale): drawn under it, a line through them (Smooth leaves ten
// points or fewer as they are, and the legend then says no
// "(smoothed)") would hide them.
func addSmoothed(p *plot.Plot, name string, xy plotter.XYs, colour int) error {
	sm := make(plotter.XYs, len(xy))
	ys := make([]float64, len(xy))
	for i := range xy {
		ys[i] = xy[i].Y
	}
	for i, y := range Smooth(ys) {
		sm[i] = plotter.XY{X: xy[i].X, Y: y}
	}
	l, err := plotter.NewLine(sm)
	if err != nil {
		return fmt.Errorf("report: plot %s: %w", name, err)
	}
	l.Color = plotutil.Color(colour)
	l.Width = vg.Points(1.5)
	p.Add(l)
	if len(sm) > 1 {
		sc, err := plotter.NewScatter(xy)
		if err != nil {
			return fmt.Errorf("report: plot %s: %w", name, err)
		}
		sc.Shape = draw.CircleGlyph{}
		sc.Radius = vg.Points(2)
		sc.Color = pale(plotutil.Color(colour))
		p.Add(sc)
		if smoothing(len(xy)) > 0 {
			name += " (smoothed)" // else the line joins the raw points
		}
		p.Legend.Add(name, l)
		return nil
	}
	// One point draws no line: mark it in full colour, as large as the
	// held-out panel's points, or it would show only as a small pale dot.
	pt, err := plotter.NewScatter(sm)
	if err != nil {
		return fmt.Errorf("report: plot %s: %w", name, err)
	}
	pt.Shape = draw.CircleGlyph{}
	pt.Color = plotutil.Color(colour)
	p.Add(pt)
	p.Legend.Add(name, l, pt)
	return nil
}

func addLine(p *plot.Plot, name string, xy plotter.XYs, colour int, dashed bool) error {
	l, sc, err := plotter.NewLinePoints(xy)
	if err != nil {
		return fmt.Errorf("report: plot %s: %w", name, err)
	}
	c := plotutil.Color(colour)
	l.Color, sc.Color = c, c
	sc.Shape = draw.CircleGlyph{}
	if dashed {
		l.Dashes = []vg.Length{vg.Points(6), vg.Points(3)}
		sc.Shape = draw.BoxGlyph{}
	}
	p.Add(l, sc)
	p.Legend.Add(name, l, sc)
	return nil
}

// pale mixes c halfway with white.
func pale(c color.Color) color.Color {
	r, g, b, _ := c.RGBA()
	mix := func(v uint32) uint8 { return uint8((v>>8 + 255) / 2) }
	return color.RGBA{R: mix(r), G: mix(g), B: mix(b), A: 255}
}

// Smooth returns the debiased exponential moving average of ys (as
// TensorBoard draws it): s_i = sum_{j<=i} b^(i-j) y_j / sum_{j<=i} b^(i-j),
// with b = 1 - 10/n within [0, 0.9], so a series of n points is averaged
// over about n/10 of them (short series are barely smoothed).
func Smooth(ys []float64) []float64 {
	b := smoothing(len(ys))
	out := make([]float64, len(ys))
	var num, den float64
	for i, y := range ys {
		num = b*num + y
		den = b*den + 1
		out[i] = num / den
	}
	return out
}

// smoothing is Smooth's b for a series of n points: 0 (no smoothing) for
// ten points or fewer.
func smoothing(n int) float64 { return min(0.9, max(0, 1-10/float64(max(n, 1)))) }
