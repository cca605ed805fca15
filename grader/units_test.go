package grader

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestGradeRateUnitInBox: a rate unit of bare letters after a number at
// the end of a box is a unit, dropped as "5 cm" is, not a quotient of
// variables (\boxed{5 m/s} was not 5); bare letters elsewhere stay
// variables.
func TestGradeRateUnitInBox(t *testing.T) {
	for _, tc := range []struct {
		response, gold string
		want           bool
	}{
		{`\boxed{5 m/s}`, "5", true},
		{`\boxed{60 km/h}`, "60", true},
		{`\boxed{9.8 m/s^2}`, "9.8", true},
		{`\boxed{3 \times 10^8 m/s}`, `3 \times 10^8`, true},
		{`\boxed{v = 12 ft/s}`, "12", true},
		{`\boxed{2 rad/s}`, "2", true},
		{`\boxed{5 m/s}`, "6", false},
		// Unchanged: letters that are no rate unit, or not at the end.
		{`\boxed{2 m/n}`, "2", false},
		{`\boxed{5 m}`, "5", false},
		{`\boxed{5 m}`, "5m", true},
		{`\boxed{5 m/s + 1}`, "6", false},
		{`\boxed{5m/s}`, "5", false},
	} {
		require.Equal(t, tc.want, Grade(tc.response, tc.gold).Correct, "%s, gold %s", tc.response, tc.gold)
	}
}
