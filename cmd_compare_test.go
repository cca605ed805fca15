package main

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/spiral-rl/spiral/rollout"
	"github.com/spiral-rl/spiral/rollout/report"
)

// TestTokenCurvesStyles: in the accuracy-against-tokens figure every
// curve of a model has its colour and a style of its own, so that no two
// legend entries look alike: majority@k dashed, sequential solid with
// circles, RSA solid with triangles.
func TestTokenCurvesStyles(t *testing.T) {
	tokens := rollout.Tokens{Generated: 640}
	var c comparison
	for _, label := range []string{"spiral", "grpo"} {
		m := report.Meta{Label: label, Problems: 2}
		c.passk = append(c.passk, report.PassAtK{Meta: m, Config: rollout.PassAtKConfig{Samples: 4},
			Points: []rollout.KPoint{{K: 1, PassAtK: 0.5, MajorityAtK: 0.5}, {K: 4, PassAtK: 0.8, MajorityAtK: 0.6}}, Tokens: tokens})
		c.rsa = append(c.rsa, report.RSA{Meta: m, Steps: []rollout.RSAStep{
			{Step: 0, Accuracy: 0.5, Cumulative: tokens}, {Step: 1, Accuracy: 0.6, Cumulative: rollout.Tokens{Generated: 1280}}}})
		c.budget = append(c.budget, report.Budget{Meta: m, Points: []rollout.BudgetPoint{
			{Budget: 8, MeanTokens: 8, Accuracy: 0}, {Budget: 96, MeanTokens: 80, Accuracy: 0.5}}})
	}
	curves, err := c.tokenCurves()
	require.NoError(t, err)
	want := []struct {
		label string
		style report.Style
	}{
		{"spiral sequential", report.Style{Colour: 0}},
		{"spiral majority@k", report.Style{Colour: 0, Dashed: true}},
		{"spiral RSA", report.Style{Colour: 0, Triangles: true}},
		{"grpo sequential", report.Style{Colour: 1}},
		{"grpo majority@k", report.Style{Colour: 1, Dashed: true}},
		{"grpo RSA", report.Style{Colour: 1, Triangles: true}},
	}
	require.Len(t, curves, len(want))
	seen := map[report.Style]string{}
	for i, w := range want {
		require.Equal(t, w.label, curves[i].Label)
		require.NotNil(t, curves[i].Style)
		require.Equal(t, w.style, *curves[i].Style)
		require.NotContains(t, seen, *curves[i].Style, "%s drawn like %s", w.label, seen[*curves[i].Style])
		seen[*curves[i].Style] = w.label
	}
}
