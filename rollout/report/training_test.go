package report

import (
	"image/png"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
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
