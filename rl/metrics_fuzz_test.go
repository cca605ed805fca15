package rl

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// readRunSeeds returns testdata/run's metrics.jsonl and eval.jsonl, a
// real run's.
func readRunSeeds(tb testing.TB) (metrics, evals []byte) {
	tb.Helper()
	metrics, err := os.ReadFile(filepath.Join("testdata", "run", MetricsFile))
	require.NoError(tb, err)
	evals, err = os.ReadFile(filepath.Join("testdata", "run", EvalFile))
	require.NoError(tb, err)
	return metrics, evals
}

// firstLine is b's first line with its newline: a seed small enough for
// the fuzzer to minimize the inputs it finds within its time (it reads
// files, a millisecond an input).
func firstLine(b []byte) []byte {
	i := bytes.IndexByte(b, '\n')
	return b[:i+1]
}

// FuzzDecodeMetrics feeds arbitrary metrics.jsonl lines to decodeMetrics:
// a line it reads writes (MarshalJSON) a line that reads back as the same
// metrics, written the same. (A line that lacks "examples" and says
// nothing of no_update reads as a step that trained, and its 0 examples
// would read back as none trained; this build writes no such step.)
func FuzzDecodeMetrics(f *testing.F) {
	metrics, _ := readRunSeeds(f)
	for line := range bytes.Lines(metrics) {
		f.Add(bytes.TrimSpace(line))
	}
	f.Add([]byte(`{"step":4,"examples":0}`))
	f.Add([]byte(`{"step":5,"loss":null,"entropy":null,"grad_norm":null,"engine_logprob_diff":null,"update_skipped":"non-finite gradient"}`))
	f.Add([]byte(`{"step":6,"aggregate_rounds":[{"traces":4,"reward":0.5},{"traces":4,"reward":0.75}],"search_credit":-0.5}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		m, err := decodeMetrics(line)
		if err != nil || !m.NoUpdate && m.Examples == 0 {
			return
		}
		out, err := json.Marshal(m)
		require.NoError(t, err)
		back, err := decodeMetrics(out)
		require.NoError(t, err, "line %s written back as %s", line, out)
		again, err := json.Marshal(back)
		require.NoError(t, err)
		require.Equal(t, string(out), string(again), "line %s", line)
		require.Equal(t, m.NoUpdate, back.NoUpdate)
		require.Equal(t, m.Updated(), back.Updated())
	})
}

// FuzzReadRunCurves feeds arbitrary metrics.jsonl and eval.jsonl files to
// ReadRunCurves: an error names the file at fault, the curves list each
// logged step once per line, their entropy only at steps logged, and a
// last line cut short (torn) is left out, the curves those of the file
// without it.
func FuzzReadRunCurves(f *testing.F) {
	metrics, evals := readRunSeeds(f)
	metrics, evals = firstLine(metrics), firstLine(evals)
	f.Add(metrics, evals, uint(100))
	f.Add(metrics, []byte(nil), uint(7))
	f.Add([]byte("\n\n"), evals, uint(0))
	f.Add([]byte(`{"step":1,"examples":0}`+"\n"+`{"step":1,"entropy":0.5}`+"\n"), []byte(`{"step":1,"points":[]}`+"\n"+`{"step":2,"points":[{"k":1,"pass_at_k":0.5}]}`), uint(3))
	dir := f.TempDir()
	mPath, ePath := filepath.Join(dir, MetricsFile), filepath.Join(dir, EvalFile)
	f.Fuzz(func(t *testing.T, metrics, evals []byte, cut uint) {
		require.NoError(t, os.WriteFile(mPath, metrics, 0o666))
		if evals != nil {
			require.NoError(t, os.WriteFile(ePath, evals, 0o666))
		} else if err := os.Remove(ePath); err != nil {
			require.ErrorIs(t, err, fs.ErrNotExist)
		}
		c, err := ReadRunCurves(dir)
		if err != nil {
			require.True(t, strings.Contains(err.Error(), mPath) || strings.Contains(err.Error(), ePath), "error %q names neither file", err)
			return
		}
		require.NotEmpty(t, c.Steps)
		for _, k := range c.Entropy.Keys {
			require.Contains(t, c.Steps, k)
		}
		require.Len(t, c.Entropy.Y, len(c.Entropy.Keys))
		require.Len(t, c.HeldOut.Y, len(c.HeldOut.Keys))
		if len(metrics) == 0 || metrics[len(metrics)-1] != '\n' || len(c.Torn) > 0 {
			return
		}
		// The same run with a line being written, cut at cut.
		line, err := json.Marshal(Metrics{Step: 99, Entropy: 0.5})
		require.NoError(t, err)
		torn := line[:1+int(cut%uint(len(line)-1))]
		require.NoError(t, os.WriteFile(mPath, slices.Concat(metrics, torn), 0o666))
		d, err := ReadRunCurves(dir)
		require.NoError(t, err, "with a torn line %s", torn)
		require.Equal(t, []string{mPath}, d.Torn)
		d.Torn = nil
		require.Equal(t, c, d)
	})
}

// FuzzPlotTraining feeds arbitrary metrics.jsonl and eval.jsonl files to
// PlotTraining (spiral plot's and the run's training.png): it draws the
// plot or returns an error naming the file at fault.
func FuzzPlotTraining(f *testing.F) {
	metrics, evals := readRunSeeds(f)
	f.Add(firstLine(metrics), firstLine(evals))
	f.Add([]byte(`{"step":1,"entropy":1e308,"search":{"traces":1,"reward":-1e308}}`+"\n"), []byte(nil))
	f.Add([]byte(`{"step":-5,"examples":0}`+"\n"+`{"step":9223372036854775807,"entropy":0.5,"examples":3,"search_credit":-1}`), []byte(`{"step":1,"points":[{"k":1,"pass_at_k":2}]}`))
	dir := f.TempDir()
	mPath, ePath := filepath.Join(dir, MetricsFile), filepath.Join(dir, EvalFile)
	f.Fuzz(func(t *testing.T, metrics, evals []byte) {
		require.NoError(t, os.WriteFile(mPath, metrics, 0o666))
		if evals != nil {
			require.NoError(t, os.WriteFile(ePath, evals, 0o666))
		} else if err := os.Remove(ePath); err != nil {
			require.ErrorIs(t, err, fs.ErrNotExist)
		}
		if err := PlotTraining(dir, "run"); err != nil {
			msg := err.Error()
			require.True(t, strings.Contains(msg, mPath) || strings.Contains(msg, ePath) || strings.Contains(msg, TrainingPlot), "error %q names no file", err)
		}
	})
}

// FuzzTruncateLog feeds arbitrary logs (metrics.jsonl, eval.jsonl, the sft
// log) to truncateLog, as a resume from step does: it keeps, in order,
// exactly the lines whose step is at most step, each ended by a newline,
// and a second call changes nothing.
func FuzzTruncateLog(f *testing.F) {
	metrics, evals := readRunSeeds(f)
	f.Add(metrics, 1)
	f.Add(evals, 0)
	f.Add(evals, -1)
	f.Add([]byte("{\"step\":1}\r\n\n{\"step\":2}\n{\"step\":3}\n{\"st"), 2)
	f.Add([]byte("{\"step\":1}\n{\"step\":2.0}\n{\"step\":null}\n[1]\n{\"step\":1,\"step\":5}\n"), 2)
	dir := f.TempDir()
	path := filepath.Join(dir, MetricsFile)
	f.Fuzz(func(t *testing.T, log []byte, step int) {
		require.NoError(t, os.WriteFile(path, log, 0o666))
		_, err := truncateLog(path, step)
		require.NoError(t, err)
		got, err := os.ReadFile(path)
		require.NoError(t, err)
		var want []byte
		// A byte order mark opening the log is dropped, not its line.
		for line := range bytes.Lines(bytes.TrimPrefix(log, []byte("\ufeff"))) {
			line = bytes.TrimSuffix(bytes.TrimSuffix(line, []byte("\n")), []byte("\r"))
			var s struct {
				Step *int `json:"step"`
			}
			if json.Unmarshal(line, &s) == nil && s.Step != nil && *s.Step <= step {
				want = append(append(want, line...), '\n')
			}
		}
		// A log left as it was keeps its CRLF line ends.
		require.Equal(t, string(want), strings.ReplaceAll(string(got), "\r\n", "\n"), "log %q cut at step %d", log, step)
		_, err = truncateLog(path, step)
		require.NoError(t, err)
		again, err := os.ReadFile(path)
		require.NoError(t, err)
		require.Equal(t, string(got), string(again))
	})
}
