package memplan_test

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/spiral-rl/spiral/model/memplan"
)

// measurement is one peak measured by spiral bench on this project's
// benchmark models (testdata/measured.json says how).
type measurement struct {
	Config    string `json:"config"` // a memplan.Named config
	Layers    int    `json:"layers"` // 0: the config's
	Kind      string `json:"kind"`   // "train" or "generate"
	Rows      int    `json:"rows"`
	Tokens    int    `json:"tokens"`    // train: tokens per row
	LoRARank  int    `json:"lora_rank"` // train: 0 = full fine-tune
	KeptMiB   int    `json:"kept_mib"`  // train: --kept-mib (0: none)
	Capacity  int    `json:"capacity"`  // generate: prompt + new tokens
	PeakBytes int64  `json:"peak_rss_bytes"`
	Command   string `json:"command"`
}

// TestPredictionsWithinFifteenPercent holds spiral plan to the peaks
// measured on the Qwen3-0.6B config and its 8-layer variant: every
// prediction within 15% of the measurement.
func TestPredictionsWithinFifteenPercent(t *testing.T) {
	b, err := os.ReadFile("testdata/measured.json")
	require.NoError(t, err)
	var doc struct {
		Note   string        `json:"note"`
		Points []measurement `json:"points"`
	}
	require.NoError(t, json.Unmarshal(b, &doc))
	require.NotEmpty(t, doc.Points)
	for _, m := range doc.Points {
		a, ok := memplan.Named(m.Config)
		require.True(t, ok, m.Config)
		if m.Layers > 0 {
			a.Layers = m.Layers
		}
		var items []memplan.Item
		switch m.Kind {
		case "train":
			items, err = memplan.TrainPeak(a, memplan.Train{Rows: m.Rows, Tokens: m.Tokens, LoRARank: m.LoRARank, AttentionBytes: 64 << 20, LossChunkBytes: 256 << 20, MLPBytes: 256 << 20, KeptBytes: int64(m.KeptMiB) << 20})
		case "generate":
			items, err = memplan.GeneratePeak(a, memplan.Generate{Rows: m.Rows, Capacity: m.Capacity, CallBytes: 512 << 20})
		default:
			t.Fatalf("kind %q", m.Kind)
		}
		require.NoError(t, err)
		pred := float64(memplan.Total(items))
		rel := (pred - float64(m.PeakBytes)) / float64(m.PeakBytes)
		t.Logf("%s, %d layers, %s %d x %d: predicted %.2f GB, measured %.2f GB (%+.1f%%)", m.Config, a.Layers, m.Kind, m.Rows, max(m.Tokens, m.Capacity), pred/1e9, float64(m.PeakBytes)/1e9, rel*100)
		require.InDelta(t, 0, rel, 0.15, "%s: %s", m.Command, m.Kind)
	}
}
