package report

import (
	"errors"

	"gonum.org/v1/plot/plotter"
)

// TrainingPoint is one training step's rewards, read from metrics.jsonl.
type TrainingPoint struct {
	Step int
	// SearchReward and AggregateReward are the mean rewards (accuracy) of
	// the step's search and aggregation traces; HasAggregate is false for
	// GRPO, which has no aggregation phase.
	SearchReward, AggregateReward float64
	HasAggregate                  bool
}

// PlotTraining writes a PNG of the search (solid) and aggregation
// (dashed) rewards against the training step.
func PlotTraining(path string, size PlotSize, label string, pts []TrainingPoint) error {
	if len(pts) == 0 {
		return errors.New("report: plot training: no steps")
	}
	search := make(plotter.XYs, 0, len(pts))
	agg := make(plotter.XYs, 0, len(pts))
	for _, p := range pts {
		search = append(search, plotter.XY{X: float64(p.Step), Y: p.SearchReward})
		if p.HasAggregate {
			agg = append(agg, plotter.XY{X: float64(p.Step), Y: p.AggregateReward})
		}
	}
	ss := []series{{label: label + " search reward", xy: search, colour: 0}}
	if len(agg) > 0 {
		ss = append(ss, series{label: label + " aggregation reward", xy: agg, colour: 1, dashed: true})
	}
	return render(path, size, "training rewards", "step", false, ss)
}
