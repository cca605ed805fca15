package report

import (
	"errors"
	"fmt"
	"github.com/spiral-rl/spiral/model/atomicfile"
	"io"
	"math"
	"slices"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// DPI is the resolution plots are rendered at: a PlotSize in pixels is
// PlotSize/DPI inches.
const DPI = 96

// Default plot size in pixels.
const (
	DefaultWidth  = 800
	DefaultHeight = 500
)

// PlotSize is a PNG's size in pixels; zero fields take the defaults.
type PlotSize struct {
	Width, Height int
}

func (s PlotSize) withDefaults() PlotSize {
	if s.Width == 0 {
		s.Width = DefaultWidth
	}
	if s.Height == 0 {
		s.Height = DefaultHeight
	}
	return s
}

// series is one line of a plot.
type series struct {
	label  string
	xy     plotter.XYs
	colour int // plotutil palette index
	dashed bool
}

// PlotPassAtK writes a PNG of pass@k (solid) and majority@k (dashed)
// against k on a log2 axis, one colour per report (the RSA paper's
// parallel-scaling figure).
func PlotPassAtK(path string, size PlotSize, reps ...PassAtK) error {
	if len(reps) == 0 {
		return errors.New("report: plot pass@k: no reports")
	}
	var ss []series
	for i, r := range reps {
		pass, maj := make(plotter.XYs, len(r.Points)), make(plotter.XYs, len(r.Points))
		for j, p := range r.Points {
			pass[j] = plotter.XY{X: float64(p.K), Y: p.PassAtK}
			maj[j] = plotter.XY{X: float64(p.K), Y: p.MajorityAtK}
		}
		ss = append(ss,
			series{label: r.Meta.label() + " pass@k", xy: pass, colour: i},
			series{label: r.Meta.label() + " majority@k", xy: maj, colour: i, dashed: true})
	}
	return render(path, size, "pass@k and majority@k", "k (samples)", true, ss)
}

// PlotRSA writes a PNG of the population's accuracy (solid) and majority
// (dashed) against the RSA step, one colour per report.
func PlotRSA(path string, size PlotSize, reps ...RSA) error {
	if len(reps) == 0 {
		return errors.New("report: plot rsa: no reports")
	}
	var ss []series
	for i, r := range reps {
		acc, maj := make(plotter.XYs, len(r.Steps)), make(plotter.XYs, len(r.Steps))
		for j, s := range r.Steps {
			acc[j] = plotter.XY{X: float64(s.Step), Y: s.Accuracy}
			maj[j] = plotter.XY{X: float64(s.Step), Y: s.Majority}
		}
		ss = append(ss,
			series{label: r.Meta.label() + " accuracy", xy: acc, colour: i},
			series{label: r.Meta.label() + " majority", xy: maj, colour: i, dashed: true})
	}
	return render(path, size, "Recursive self-aggregation", "RSA step", false, ss)
}

// PlotBudget writes a PNG of accuracy against the token budget on a log2
// axis, one colour per report.
func PlotBudget(path string, size PlotSize, reps ...Budget) error {
	if len(reps) == 0 {
		return errors.New("report: plot budget: no reports")
	}
	var ss []series
	for i, r := range reps {
		acc := make(plotter.XYs, len(r.Points))
		for j, p := range r.Points {
			acc[j] = plotter.XY{X: float64(p.Budget), Y: p.Accuracy}
		}
		ss = append(ss, series{label: r.Meta.label() + " accuracy", xy: acc, colour: i})
	}
	return render(path, size, "Sequential scaling", "token budget", true, ss)
}

// render draws the series (accuracy in [0, 1] against x, log2 x when
// log2) and writes the PNG atomically.
func render(path string, size PlotSize, title, xLabel string, log2 bool, ss []series) error {
	size = size.withDefaults()
	if size.Width < 0 || size.Height < 0 {
		return fmt.Errorf("report: plot %s: size %dx%d", path, size.Width, size.Height)
	}
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = xLabel
	p.Y.Label.Text = "accuracy"
	p.Y.Min, p.Y.Max = 0, 1
	p.Y.Tick.Marker = plot.TickerFunc(accuracyTicks)
	p.Legend.Top = false
	p.Legend.Left = false
	p.Add(plotter.NewGrid())
	var xs []float64
	for _, s := range ss {
		if len(s.xy) == 0 {
			return fmt.Errorf("report: plot %s: series %q is empty", path, s.label)
		}
		for _, pt := range s.xy {
			if log2 && pt.X <= 0 {
				return fmt.Errorf("report: plot %s: series %q has x = %v on a log axis", path, s.label, pt.X)
			}
			xs = append(xs, pt.X)
		}
		l, sc, err := plotter.NewLinePoints(s.xy)
		if err != nil {
			return fmt.Errorf("report: plot %s: %w", path, err)
		}
		c := plotutil.Color(s.colour)
		l.Color, sc.Color = c, c
		sc.Shape = draw.CircleGlyph{}
		if s.dashed {
			l.Dashes = []vg.Length{vg.Points(6), vg.Points(3)}
			sc.Shape = draw.BoxGlyph{}
		}
		p.Add(l, sc)
		p.Legend.Add(s.label, l, sc)
	}
	if log2 {
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = log2Ticks(xs)
		// Pad the axis by a quarter octave so end points are not clipped.
		p.X.Min /= math.Pow(2, 0.25)
		p.X.Max *= math.Pow(2, 0.25)
	} else {
		p.X.Tick.Marker = plot.TickerFunc(integerTicks)
		p.X.Min -= 0.25
		p.X.Max += 0.25
	}
	w := vg.Length(size.Width) * vg.Inch / DPI
	h := vg.Length(size.Height) * vg.Inch / DPI
	c := vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(DPI))
	p.Draw(draw.New(c))
	if err := atomicfile.Write(path, 0o666, func(wr io.Writer) error {
		_, err := vgimg.PngCanvas{Canvas: c}.WriteTo(wr)
		return err
	}); err != nil {
		return fmt.Errorf("report: write: %w", err)
	}
	return nil
}

// log2Ticks labels the distinct measured x values, or only those that are
// powers of two when there are more than 12 (k values and default budgets
// are powers of two, with the maximum appended).
func log2Ticks(xs []float64) plot.ConstantTicks {
	xs = slices.Clone(xs)
	slices.Sort(xs)
	xs = slices.Compact(xs)
	var ticks plot.ConstantTicks
	for _, x := range xs {
		if frac, _ := math.Frexp(x); len(xs) <= 12 || frac == 0.5 {
			ticks = append(ticks, plot.Tick{Value: x, Label: strconv.FormatFloat(x, 'g', -1, 64)})
		}
	}
	return ticks
}

// integerTicks marks every integer in [min, max] when there are at most
// 20, else every stride-th one, the stride chosen for about 10 labels.
func integerTicks(min, max float64) []plot.Tick {
	lo, hi := math.Ceil(min)+0, math.Floor(max) // +0 turns -0 into 0
	stride := math.Max(1, math.Ceil((hi-lo+1)/10))
	if hi-lo+1 <= 20 {
		stride = 1
	}
	var ticks []plot.Tick
	for v := lo; v <= hi; v += stride {
		ticks = append(ticks, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'f', 0, 64)})
	}
	return ticks
}

// accuracyTicks marks [0, 1] every 0.1 and labels every 0.2.
func accuracyTicks(float64, float64) []plot.Tick {
	ticks := make([]plot.Tick, 0, 11)
	for i := range 11 {
		t := plot.Tick{Value: float64(i) / 10}
		if i%2 == 0 {
			t.Label = strconv.FormatFloat(t.Value, 'f', 1, 64)
		}
		ticks = append(ticks, t)
	}
	return ticks
}
