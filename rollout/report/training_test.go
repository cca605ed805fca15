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
	pts := []TrainingPoint{{Step: 1, SearchReward: 0.1, AggregateReward: 0.2, HasAggregate: true}, {Step: 2, SearchReward: 0.3, AggregateReward: 0.5, HasAggregate: true}}
	require.NoError(t, PlotTraining(path, PlotSize{Width: 400, Height: 300}, "run", pts))
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	img, err := png.Decode(f)
	require.NoError(t, err)
	require.Equal(t, 400, img.Bounds().Dx())
	require.Equal(t, 300, img.Bounds().Dy())
	require.Error(t, PlotTraining(path, PlotSize{}, "run", nil))
}
