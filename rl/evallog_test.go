package rl

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestEvalLogFiguresChecked: an eval.jsonl line whose points are no
// held-out evaluation's (a pass@k or majority@k outside [0, 1], the
// first point not k = 1, k not increasing: a damaged or hand-edited log)
// was read as it was: compare --run and the run's training.png took its
// first point for pass@1 and TensorBoard drew its figures, without a
// word, where an eval report of such points is refused. Each reader now
// refuses it, naming the file, the line and the field.
func TestEvalLogFiguresChecked(t *testing.T) {
	metrics, evals := readRunSeeds(t)
	// edit returns eval.jsonl's second line with its points replaced.
	edit := func(points string) []byte {
		var line map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(firstLine(evals[len(firstLine(evals)):]), &line))
		line["points"] = json.RawMessage(points)
		b, err := json.Marshal(line)
		require.NoError(t, err)
		return slices.Concat(firstLine(evals), b, []byte("\n"))
	}
	tests := []struct {
		name, points, want string
	}{
		{"pass@k above 1", `[{"k":1,"pass_at_k":0.5,"majority_at_k":0.5},{"k":4,"pass_at_k":7,"majority_at_k":0.5}]`, "points[1].pass_at_k = 7: want a fraction in [0, 1]"},
		{"negative majority@k", `[{"k":1,"pass_at_k":0.5,"majority_at_k":-0.5}]`, "points[0].majority_at_k = -0.5: want a fraction in [0, 1]"},
		{"no pass@1 first", `[{"k":2,"pass_at_k":0.5,"majority_at_k":0.5}]`, "points[0].k = 2: want 1 (pass@1 first)"},
		{"k not increasing", `[{"k":1,"pass_at_k":0.5,"majority_at_k":0.5},{"k":1,"pass_at_k":0.5,"majority_at_k":0.5}]`, "points[1].k = 1 after points[0].k = 1: want k increasing"},
	}
	readers := []struct {
		name string
		read func(dir string) error
	}{
		{"compare --run", func(dir string) error { _, err := ReadRunCurves(dir); return err }},
		{"training.png", func(dir string) error { return PlotTraining(dir, "run") }},
		{"tensorboard", func(dir string) error { _, err := PrepareTensorBoard(dir); return err }},
	}
	for _, tt := range tests {
		for _, r := range readers {
			t.Run(tt.name+"/"+r.name, func(t *testing.T) {
				dir := t.TempDir()
				require.NoError(t, os.WriteFile(filepath.Join(dir, MetricsFile), metrics, 0o644))
				path := filepath.Join(dir, EvalFile)
				require.NoError(t, os.WriteFile(path, edit(tt.points), 0o644))
				err := r.read(dir)
				require.Error(t, err)
				require.Contains(t, err.Error(), fmt.Sprintf("%s:2: %s", path, tt.want))
			})
		}
	}
	// The log as the run wrote it reads.
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, MetricsFile), metrics, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, EvalFile), evals, 0o644))
	for _, r := range readers {
		require.NoError(t, r.read(dir), r.name)
	}
}

// TestLogLineOver64MiB: a log line of over 64 MiB (a damaged file, or
// one a tool padded) ended the read of metrics.jsonl with
// "bufio.Scanner: token too long", which named neither the file nor the
// line, in compare --run, tensorboard and training.png alike. The lines
// are cut from the file in memory whatever their length, as a resume's
// truncateLog cuts them: a long line that reads is read, and one that
// does not is refused naming the file and line.
func TestLogLineOver64MiB(t *testing.T) {
	metrics, _ := readRunSeeds(t)
	first := firstLine(metrics)
	var m map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(first, &m))
	pad, err := json.Marshal(strings.Repeat("x", 65<<20))
	require.NoError(t, err)
	m["pad"] = pad
	long, err := json.Marshal(m)
	require.NoError(t, err)
	rest := metrics[len(first):]
	readers := []struct {
		name string
		read func(dir string) error
	}{
		{"compare --run", func(dir string) error { _, err := ReadRunCurves(dir); return err }},
		{"training.png", func(dir string) error { return PlotTraining(dir, "run") }},
		{"tensorboard", func(dir string) error { _, err := PrepareTensorBoard(dir); return err }},
	}
	for _, tt := range []struct {
		name, want string
		log        []byte
	}{
		{"a line that reads", "", slices.Concat(long, []byte("\n"), rest)},
		{"a line that does not", ":2: ", slices.Concat(first, bytes.Repeat([]byte("x"), 65<<20), []byte("\n"), rest)},
	} {
		for _, r := range readers {
			t.Run(tt.name+"/"+r.name, func(t *testing.T) {
				dir := t.TempDir()
				path := filepath.Join(dir, MetricsFile)
				require.NoError(t, os.WriteFile(path, tt.log, 0o644))
				err := r.read(dir)
				if tt.want == "" {
					require.NoError(t, err)
					return
				}
				require.ErrorContains(t, err, path+tt.want)
			})
		}
	}
}
