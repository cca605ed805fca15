package report

import (
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgpdf"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/spiral-rl/spiral/model/atomicfile"
)

// DPI is the resolution plots are rendered at: a PlotSize in pixels is
// PlotSize/DPI inches.
const DPI = 96

// PlotFormats are the formats a plot is written in, its file's
// extension: png (at DPI), svg or pdf (vector graphics, for a paper's
// figures).
var PlotFormats = []string{"png", "svg", "pdf"}

// PlotFormat reports whether format is one of PlotFormats.
func PlotFormat(format string) bool { return slices.Contains(PlotFormats, format) }

// CheckPlotPath reports whether path names a file a plot can be written
// as: its extension, in any case, chooses the format (PlotFormat). A
// path without a plot's extension that is there and is neither a
// regular file nor a directory, through symbolic links (/dev/stdout,
// /dev/null, a FIFO), takes a PNG, the format of spiral's plots by
// default: its name chooses none.
func CheckPlotPath(path string) error {
	if PlotFormat(plotExt(path)) {
		return nil
	}
	if st, err := os.Stat(path); err == nil && !st.Mode().IsRegular() && !st.IsDir() {
		return nil
	}
	return fmt.Errorf("%s: want a .png, .svg or .pdf file (the extension chooses the format)", path)
}

// plotExt is path's extension in lower case without its dot: "png".
func plotExt(path string) string {
	return strings.TrimPrefix(strings.ToLower(filepath.Ext(path)), ".")
}

// writeFigure draws a figure of size (in pixels at DPI) with drawFigure on
// a canvas of path's format (CheckPlotPath; a PNG where its extension
// names none) and writes it atomically, or where size.Named into a pipe,
// a device or a symbolic link there (atomicfile.WriteNamed).
func writeFigure(path string, size PlotSize, drawFigure func(draw.Canvas)) error {
	if err := CheckPlotPath(path); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	w := vg.Length(size.Width) * vg.Inch / DPI
	h := vg.Length(size.Height) * vg.Inch / DPI
	var c vg.CanvasWriterTo
	switch plotExt(path) {
	case "svg":
		c = vgsvg.New(w, h)
	case "pdf":
		c = vgpdf.New(w, h)
	default:
		c = vgimg.PngCanvas{Canvas: vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(DPI))}
	}
	drawFigure(draw.New(c))
	write := atomicfile.Write
	if size.Named {
		write = atomicfile.WriteNamed
	}
	if err := write(path, 0o666, func(wr io.Writer) error {
		_, err := c.WriteTo(wr)
		return err
	}); err != nil {
		return fmt.Errorf("report: write: %w", err)
	}
	return nil
}

// Default plot size in pixels.
const (
	DefaultWidth  = 800
	DefaultHeight = 500
)

// PlotSize is a plot's size in pixels (at DPI for a vector format); zero
// fields take the defaults.
type PlotSize struct {
	Width, Height int
	// Named marks the plot's path as a file the user named (spiral plot
	// --out), written into where it is a pipe, a device or a symbolic
	// link (atomicfile.WriteNamed); a plot of spiral's own (a run's
	// training.png) replaces whatever is there.
	Named bool
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
	// triangles marks the points with triangles instead of circles (or
	// the dashed line's boxes).
	triangles bool
	// lo and hi, when set, are the range of each point over seeds, drawn
	// as error bars.
	lo, hi []float64
}

// Axis is how a plot's x axis is scaled and ticked.
type Axis int

// The x axes.
const (
	AxisSteps Axis = iota // linear, integer ticks (steps)
	AxisLog2              // log scale, ticks at the measured powers of two (k, budgets)
	AxisLog               // log scale, ticks at powers of ten (tokens)
)

// PlotPassAtK writes a plot of pass@k (solid) and majority@k (dashed)
// against k on a log2 axis, one colour per report (the RSA paper's
// parallel-scaling figure).
func PlotPassAtK(path string, size PlotSize, reps ...PassAtK) error {
	return plotEach(path, size, PassAtKFigure(), reps, MeanPassAtK)
}

// PassAtKFigure is the frame of a pass@k plot: titled "pass@k and
// majority@k", or "pass@k" where no curve has a majority@k (one sample
// a problem: MeanPassAtK).
func PassAtKFigure() Figure {
	return Figure{Title: "pass@k and majority@k", TitleY: "pass@k", XLabel: "k (samples)", Axis: AxisLog2, Name: "pass@k", Name2: "majority@k"}
}

// PlotRSA writes a plot of the population's accuracy (solid) and majority
// (dashed) against the RSA step, one colour per report.
func PlotRSA(path string, size PlotSize, reps ...RSA) error {
	return plotEach(path, size, Figure{Title: "Recursive self-aggregation", XLabel: "RSA step", Axis: AxisSteps, Name: "accuracy", Name2: "majority"}, reps, MeanRSA)
}

// PlotBudget writes a plot of accuracy against the token budget on a log2
// axis, one colour per report.
func PlotBudget(path string, size PlotSize, reps ...Budget) error {
	return plotEach(path, size, Figure{Title: "Sequential scaling", XLabel: "token budget", Axis: AxisLog2, Name: "accuracy"}, reps, MeanBudget)
}

// plotEach plots every report as a curve of its own.
func plotEach[R any](path string, size PlotSize, f Figure, reps []R, curve func([]R) (Seeds, error)) error {
	if len(reps) == 0 {
		return fmt.Errorf("report: plot %s: no reports", path)
	}
	curves := make([]Seeds, len(reps))
	for i := range reps {
		c, err := curve(reps[i : i+1])
		if err != nil {
			return err
		}
		curves[i] = c
	}
	return PlotSeeds(path, size, f, curves...)
}

// Figure is a plot's frame: its title, axis labels and x scale. YLabel
// "" is "accuracy" on [0, 1]; any other y axis fits its data from 0.
type Figure struct {
	Title, XLabel, YLabel string
	// TitleY, when set, is the title of a figure where no curve draws a
	// Y2 (Title names both).
	TitleY string
	Axis   Axis
	// Name and Name2 follow each curve's label in the legend, for its Y
	// and (dashed, when set) its Y2; Name2 "" leaves Y2 out.
	Name, Name2 string
}

// renderFigure draws the series in f's frame and writes the figure
// (writeFigure: its format by path's extension).
func renderFigure(path string, size PlotSize, f Figure, ss []series) error {
	title, xLabel, axis := f.Title, f.XLabel, f.Axis
	log2 := axis != AxisSteps
	size = size.withDefaults()
	if size.Width < 0 || size.Height < 0 {
		return fmt.Errorf("report: plot %s: size %dx%d", path, size.Width, size.Height)
	}
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = xLabel
	if f.YLabel == "" {
		p.Y.Label.Text = "accuracy"
		p.Y.Min, p.Y.Max = 0, 1
		p.Y.Tick.Marker = plot.TickerFunc(accuracyTicks)
	} else {
		p.Y.Label.Text = f.YLabel
		p.Y.Min = 0
		p.Y.Tick.Marker = plot.TickerFunc(valueTicks)
	}
	legend := plot.NewLegend()
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
		sc.Shape = s.glyph()
		if s.dashed {
			l.Dashes = []vg.Length{vg.Points(6), vg.Points(3)}
		}
		p.Add(l, sc)
		legend.Add(s.label, l, sc)
		if s.lo != nil {
			bars, err := errorBars(s)
			if err != nil {
				return fmt.Errorf("report: plot %s: %w", path, err)
			}
			bars.Color = c
			p.Add(bars)
		}
	}
	if log2 {
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = log2Ticks(xs)
		if axis == AxisLog {
			p.X.Tick.Marker = plot.TickerFunc(logTicks)
		}
		// Pad the axis by a quarter octave so end points are not clipped.
		p.X.Min /= math.Pow(2, 0.25)
		p.X.Max *= math.Pow(2, 0.25)
	} else {
		p.X.Tick.Marker = plot.TickerFunc(integerTicks)
		p.X.Min -= 0.25
		p.X.Max += 0.25
	}
	return writeFigure(path, size, func(c draw.Canvas) { drawOutsideLegend(p, legend, c) })
}

// legendShare is the most of a figure's width (or height) that a legend
// outside its axes takes; a wider and taller one is drawn inside them.
const legendShare = 0.5

// drawOutsideLegend draws p on c with legend outside its axes, where it
// covers no curve: to their right, top-aligned with them (p's title then
// centred over the whole figure, where over the axes alone a long one
// would be cut at both ends), or, where that would take more than
// legendShare of c's width (long labels, a narrow figure), under the x
// axis's label, from the axes' left end (further left where it is wider
// than they are). A legend too large for either (a figure of a few
// hundred pixels, many curves) is drawn inside the axes, at their bottom
// right.
func drawOutsideLegend(p *plot.Plot, legend plot.Legend, c draw.Canvas) {
	r := legend.Rectangle(c)
	w, h := r.Max.X-r.Min.X, r.Max.Y-r.Min.Y
	gap := legend.TextStyle.Font.Size // between the axes and the legend
	legend.Top, legend.Left = true, true
	switch size := c.Size(); {
	case w+gap*3/2 <= size.X*legendShare:
		if t := p.Title; t.Text != "" { // as p.Draw draws it, over all of c
			c.FillText(t.TextStyle, vg.Point{X: c.Center().X, Y: c.Max.Y + t.TextStyle.FontExtents().Descent}, t.Text)
			c.Max.Y -= t.TextStyle.Rectangle(t.Text).Size().Y + t.Padding
			p.Title.Text = ""
		}
		pc := draw.Crop(c, 0, -(w + gap*3/2), 0, 0)
		dc := drawSpaced(p, pc)
		lc := c
		lc.Min.X, lc.Max.X = pc.Max.X+gap, c.Max.X-gap/2
		lc.Max.Y = dc.Max.Y
		legend.Draw(lc)
	case h+gap <= size.Y*legendShare:
		pc := draw.Crop(c, 0, 0, h+gap, 0)
		dc := drawSpaced(p, pc)
		lc := c
		lc.Min.X = max(c.Min.X, min(dc.Min.X, c.Max.X-w-gap/2)) // in the figure where wider than the axes
		lc.Max.Y = pc.Min.Y - gap/2
		legend.Draw(lc)
	default:
		legend.Top, legend.Left = false, false
		p.Legend = legend
		drawSpaced(p, c)
	}
}

// drawSpaced draws p on c, its x axis's tick labels that would overlap
// an earlier one left out (spacedTicks), and returns its data area.
func drawSpaced(p *plot.Plot, c draw.Canvas) draw.Canvas {
	dc := p.DataCanvas(c)
	p.X.Tick.Marker = spacedTicks{Ticker: p.X.Tick.Marker, scale: p.X.Scale, width: dc.Max.X - dc.Min.X, style: p.X.Tick.Label}
	p.Draw(c)
	return dc
}

// spacedTicks are Ticker's ticks on an axis of width drawn at scale,
// with the label of each tick that would come within a space of the
// label before it (in style) left out, its mark kept: a log axis labels
// every measured k or budget, and a largest one that is no power of two
// (--samples 17, --max-new-tokens 1100) lies a fraction of an octave
// past the power before it.
type spacedTicks struct {
	plot.Ticker
	scale plot.Normalizer
	width vg.Length
	style text.Style
}

// Ticks implements plot.Ticker.
func (t spacedTicks) Ticks(min, max float64) []plot.Tick {
	ticks := slices.Clone(t.Ticker.Ticks(min, max)) // ConstantTicks returns itself
	space := t.style.Width(" ")
	end := vg.Length(math.Inf(-1)) // of the last label kept
	for i, tk := range ticks {
		if tk.Label == "" || tk.Value < min || tk.Value > max { // the axis draws no tick outside it
			continue
		}
		x := t.width * vg.Length(t.scale.Normalize(min, max, tk.Value))
		half := t.style.Width(tk.Label) / 2
		if x-half < end+space {
			ticks[i].Label = ""
			continue
		}
		end = x + half
	}
	return ticks
}

// glyph is the shape s's points are marked with.
func (s series) glyph() draw.GlyphDrawer {
	switch {
	case s.triangles:
		return draw.TriangleGlyph{}
	case s.dashed:
		return draw.BoxGlyph{}
	}
	return draw.CircleGlyph{}
}

// errorBars draws s's range over seeds at each point.
func errorBars(s series) (*plotter.YErrorBars, error) {
	if len(s.lo) != len(s.xy) || len(s.hi) != len(s.xy) {
		return nil, fmt.Errorf("series %q: %d points, %d/%d ranges", s.label, len(s.xy), len(s.lo), len(s.hi))
	}
	errs := make(plotter.YErrors, len(s.xy))
	for i := range s.xy {
		errs[i].Low, errs[i].High = s.xy[i].Y-s.lo[i], s.hi[i]-s.xy[i].Y
	}
	return plotter.NewYErrorBars(struct {
		plotter.XYs
		plotter.YErrors
	}{s.xy, errs})
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

// logTicks labels a log axis at the powers of ten (gonum's LogTicks) or,
// where fewer than two of them fall within [min, max] (data spanning about
// a decade or less, as tokens per problem of a few samples or RSA steps
// do), at gonum's default ticks: LogTicks alone labels only the powers of
// ten around such a range, outside the axis, which is then drawn without
// a number.
func logTicks(min, max float64) []plot.Tick {
	ticks := plot.LogTicks{Prec: -1}.Ticks(min, max)
	labelled := 0
	for _, t := range ticks {
		if t.Label != "" && t.Value >= min && t.Value <= max {
			labelled++
		}
	}
	if labelled >= 2 {
		return ticks
	}
	return plot.DefaultTicks{}.Ticks(min, max)
}

// integerTicks marks every integer in [min, max] when there are at most
// 20, else the multiples of the smallest stride of 1, 2 or 5 times a
// power of ten that leaves at most about 10 labels; past 2^53, where
// float64s are further apart than that stride, the multiples of the
// smallest such stride at least their spacing.
func integerTicks(min, max float64) []plot.Tick {
	lo, hi := math.Ceil(min), math.Floor(max)
	stride := 1.0
	if hi-lo+1 > 20 {
		stride = niceStride((hi - lo + 1) / 10)
	}
	// A stride below the spacing of the floats at the axis's end would
	// leave v where it is, adding ticks forever.
	if top := math.Max(math.Abs(lo), math.Abs(hi)); !math.IsInf(top, 0) {
		stride = math.Max(stride, niceStride(math.Nextafter(top, math.Inf(1))-top))
	}
	var ticks []plot.Tick
	for v := math.Ceil(lo/stride)*stride + 0; v <= hi; v += stride { // +0 turns -0 into 0
		ticks = append(ticks, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'f', 0, 64)})
	}
	return ticks
}

// niceStride is the smallest of 1, 2 and 5 times a power of ten (at least
// 1) that is at least x.
func niceStride(x float64) float64 {
	return niceStep(max(x, 1))
}

// niceStep is the smallest of 1, 2 and 5 times a power of ten that is at
// least x > 0.
func niceStep(x float64) float64 {
	p := math.Pow(10, math.Floor(math.Log10(x)))
	for _, m := range []float64{1, 2, 5} {
		if m*p >= x*(1-1e-12) { // Log10's rounding must not skip x itself
			return m * p
		}
	}
	return 10 * p
}

// valueTicks labels [min, max] at the multiples of the smallest stride of
// 1, 2 or 5 times a power of ten that leaves at most 7 labels, with a
// mark between each two: gonum's default labels only the multiples of
// the larger stride it calls major, which left an entropy axis over
// 0-0.28 with the labels 0 and 0.25 alone.
func valueTicks(min, max float64) []plot.Tick {
	if !(max > min) { // gonum widens an empty range before asking
		return nil
	}
	stride := niceStep((max - min) / 6)
	prec := int(math.Max(0, -math.Floor(math.Log10(stride)+1e-9)))
	var ticks []plot.Tick
	first := math.Ceil(min/stride*2 - 1e-9)
	for i := first; i/2*stride <= max+stride*1e-9; i++ {
		v := i/2*stride + 0 // +0 turns -0 into 0
		t := plot.Tick{Value: v}
		if math.Mod(i, 2) == 0 {
			t.Label = strconv.FormatFloat(v, 'f', prec, 64)
		}
		ticks = append(ticks, t)
	}
	return ticks
}

// accuracyTicks marks [0, 1] every 0.1 and labels every 0.2, from min
// where an axis reaches below 0 (a correlation).
func accuracyTicks(min, _ float64) []plot.Tick {
	var ticks []plot.Tick
	// From -1 at most: an axis's minimum past it (a value a log holds
	// wrongly, -1e308) would make ticks without end.
	for i := math.Max(-10, math.Min(0, math.Ceil(min*10-1e-9))); i <= 10; i++ {
		t := plot.Tick{Value: i/10 + 0} // +0 turns -0 into 0
		if math.Mod(i, 2) == 0 {
			t.Label = strconv.FormatFloat(t.Value, 'f', 1, 64)
		}
		ticks = append(ticks, t)
	}
	return ticks
}
