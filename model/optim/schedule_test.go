package optim

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestScheduleLR(t *testing.T) {
	warmCos := Schedule{PeakLR: 1e-3, WarmupSteps: 10, Decay: Cosine, TotalSteps: 110, MinLR: 1e-4}
	constant := Schedule{PeakLR: 2e-6, WarmupSteps: 4}
	cases := []struct {
		name  string
		s     Schedule
		step  int64
		want  float64
		where string
	}{
		{"warmup first", warmCos, 0, 1e-4, "1e-3 * 1/10"},
		{"warmup middle", warmCos, 4, 5e-4, "1e-3 * 5/10"},
		{"warmup last", warmCos, 9, 1e-3, "1e-3 * 10/10"},
		{"cosine start", warmCos, 10, 1e-3, "progress 0: cos 0 = 1"},
		{"cosine quarter", warmCos, 35, 1e-4 + 9e-4*0.5*(1+math.Sqrt2/2), "progress 25/100: cos(pi/4) = sqrt2/2"},
		{"cosine half", warmCos, 60, 5.5e-4, "progress 1/2: cos(pi/2) = 0, floor + 9e-4/2"},
		{"cosine end", warmCos, 110, 1e-4, "progress 1: cos(pi) = -1, the floor"},
		{"after end", warmCos, 500, 1e-4, "clamped to the floor"},
		{"negative step", warmCos, -3, 1e-4, "treated as step 0"},
		{"constant warmup", constant, 1, 1e-6, "2e-6 * 2/4"},
		{"constant after", constant, 1000, 2e-6, "peak"},
		{"no warmup", Schedule{PeakLR: 3e-5}, 0, 3e-5, "peak from the first update"},
		{"cosine no warmup mid", Schedule{PeakLR: 1, Decay: Cosine, TotalSteps: 3}, 1, 0.75, "progress 1/3: 0.5*(1+cos(pi/3)) = 0.75"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			require.NoError(t, tc.s.Validate())
			require.InDelta(t, tc.want, tc.s.LR(tc.step), 1e-15, tc.where)
		})
	}
}

func TestScheduleValidate(t *testing.T) {
	cases := []struct {
		name string
		s    Schedule
		want string
	}{
		{"lr required", Schedule{}, "peak learning rate"},
		{"negative warmup", Schedule{PeakLR: 1, WarmupSteps: -1}, "warmup"},
		{"cosine needs total", Schedule{PeakLR: 1, WarmupSteps: 5, Decay: Cosine, TotalSteps: 5}, "total steps"},
		{"floor above peak", Schedule{PeakLR: 1, Decay: Cosine, TotalSteps: 5, MinLR: 2}, "min learning rate"},
		{"unknown decay", Schedule{PeakLR: 1, Decay: "linear"}, `"linear"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			require.ErrorContains(t, tc.s.Validate(), tc.want)
		})
	}
}
