package rl

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestForeignMetricsLog: a metrics.jsonl that another tool wrote (a step
// and figures of its own) is refused by compare --run's reader
// (ReadRunCurves), spiral tensorboard's (PrepareTensorBoard) and
// training.png's (PlotTraining), naming the file and line; they read it
// as a step of zeros ("0 traces", zero scalars). Lines of each version
// of spiral train, a later version's with a field this one does not
// know, and a spiral line cut down by hand still read, as do their
// traces.
func TestForeignMetricsLog(t *testing.T) {
	var current bytes.Buffer
	m := Metrics{Step: 1, Search: PhaseMetrics{Traces: 4, Reward: 0.5, MeanLength: 10}, Aggregate: PhaseMetrics{Traces: 2, Reward: 1, MeanLength: 5},
		ProblemsDrawn: 2, ProblemsInformative: 1, InformativeFraction: 0.5, Examples: 6, Loss: 0.1, Entropy: 0.5, GradNorm: 1, LR: 1e-6}
	require.NoError(t, m.WriteJSONL(&current))
	line := strings.TrimSuffix(current.String(), "\n")
	for _, tc := range []struct {
		name, line string
		traces     int // read where err is ""
		err        string
	}{
		{"another tool's", `{"step":1,"loss":0.5,"reward":0.3}`, 0,
			`field "reward", which spiral train never wrote, and no "search", which every line it writes has: another tool's log?`},
		{"another tool's, a step alone", `{"step":1}`, 0, `no "search" or other field spiral train writes: another tool's log?`},
		{"a search that is no object", `{"step":1,"search":null}`, 0, `"search" = null: want an object`},
		{"the first version's (samples)", `{"step":1,"search":{"traces":4,"reward":0.5,"mean_length":10,"truncated":0,"tokens_per_second":40,"seconds":1},` +
			`"aggregate":{"traces":0,"reward":0,"mean_length":0,"truncated":0,"tokens_per_second":0,"seconds":0},"problems_drawn":2,"problems_informative":1,` +
			`"informative_fraction":0.5,"samples":4,"loss_tokens":40,"adv_mean":0,"adv_std":1,"adv_min":-1,"adv_max":1,"loss":0.1,"entropy":0.5,"grad_norm":1,` +
			`"lr":1e-06,"rollout_seconds":1,"train_seconds":1,"step_seconds":2,"train_tokens":40,"train_tokens_per_second":40}`, 4, ""},
		{"this version's", line, 6, ""},
		{"a later version's, with a field unknown here", strings.TrimSuffix(line, "}") + `,"later_field":{"x":1}}`, 6, ""},
		{"spiral's cut down by hand", `{"step":1,"entropy":0.5,"examples":4}`, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, MetricsFile)
			require.NoError(t, os.WriteFile(path, []byte(tc.line+"\n"), 0o644))
			curves, errCompare := ReadRunCurves(dir)
			_, errTB := exportTensorBoard(dir)
			errPlot := PlotTraining(dir, "spiral")
			if tc.err != "" {
				for _, err := range []error{errCompare, errTB, errPlot} {
					require.ErrorContains(t, err, path+":1: "+tc.err)
				}
				require.NoDirExists(t, filepath.Join(dir, TensorBoardDir))
				require.NoFileExists(t, filepath.Join(dir, TrainingPlot))
				return
			}
			require.NoError(t, errCompare)
			require.Equal(t, tc.traces, curves.Traces)
			require.NoError(t, errTB)
			require.NoError(t, errPlot)
			require.FileExists(t, filepath.Join(dir, TrainingPlot))
		})
	}
}

// TestMetricsFieldsKnown: every field this version writes in a
// metrics.jsonl line is one metricsField knows, or a line of it cut down
// by hand would be refused as another tool's.
func TestMetricsFieldsKnown(t *testing.T) {
	typ := reflect.TypeFor[Metrics]()
	for i := range typ.NumField() {
		name, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
		if name == "" || name == "-" {
			continue
		}
		require.True(t, metricsField(name), "Metrics.%s writes %q", typ.Field(i).Name, name)
	}
}

// TestForeignEvalLog: an eval.jsonl line without held-out points, as
// another tool's log has, is refused by compare --run's reader, spiral
// tensorboard's and training.png's, naming the file and line; they
// passed it over as no evaluation (tensorboard: an event of nothing).
// Lines of each version of train, and a later one's with a field this
// one does not know, are read.
func TestForeignEvalLog(t *testing.T) {
	for _, tc := range []struct {
		name, line string
		err        string
	}{
		{"another tool's", `{"step":1,"accuracy":0.5,"loss":0.25}`, `no "points": want the held-out pass@k, k = 1 first, as train logs them: another tool's log?`},
		{"no points", `{"step":1,"problems":2,"samples":1,"points":[]}`, `no "points"`},
		{"the first version's", `{"step":1,"problems":2,"samples":1,"points":[{"k":1,"pass_at_k":0.5,"majority_at_k":0.5}]}`, ""},
		{"this version's, and a later field", `{"step":1,"problems":2,"samples":4,"points":[{"k":1,"pass_at_k":0.5,"majority_at_k":0.5},{"k":4,"pass_at_k":0.75,"majority_at_k":0.5}],` +
			`"problems_digest":"d1","sync_seconds":1.5,"later_field":1}`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			require.NoError(t, os.WriteFile(filepath.Join(dir, MetricsFile), []byte(`{"step":1,"search":{"traces":4,"reward":0.5}}`+"\n"), 0o644))
			path := filepath.Join(dir, EvalFile)
			require.NoError(t, os.WriteFile(path, []byte(tc.line+"\n"), 0o644))
			curves, errCompare := ReadRunCurves(dir)
			_, errTB := exportTensorBoard(dir)
			errPlot := PlotTraining(dir, "spiral")
			if tc.err != "" {
				for _, err := range []error{errCompare, errTB, errPlot} {
					require.ErrorContains(t, err, path+":1: "+tc.err)
				}
				require.NoDirExists(t, filepath.Join(dir, TensorBoardDir))
				require.NoFileExists(t, filepath.Join(dir, TrainingPlot))
				return
			}
			require.NoError(t, errCompare)
			require.Equal(t, []int{1}, curves.HeldOut.Keys)
			require.Equal(t, []float64{0.5}, curves.HeldOut.Y)
			require.NoError(t, errTB)
			require.Equal(t, float32(0.5), tbScalars(t, dir)["heldout/pass@1"][1])
			require.NoError(t, errPlot)
			require.FileExists(t, filepath.Join(dir, TrainingPlot))
		})
	}
}
