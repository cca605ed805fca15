package report_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/spiral-rl/spiral/data"
	"github.com/spiral-rl/spiral/model/atomicfile"
	"github.com/spiral-rl/spiral/rollout"
	"github.com/spiral-rl/spiral/rollout/report"
)

func TestTraceWriterRoundTrip(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "rsa.traces.jsonl")
	problems := []data.Problem{{ID: "a", Answer: "7"}, {ID: "b", Answer: "5"}}
	w, err := report.NewTraceWriter(path, problems)
	require.NoError(t, err)
	tr := func(text, ans string, ok bool) rollout.Trace {
		return rollout.Trace{Completion: rollout.Completion{Tokens: make([]int32, len(text)), Finish: rollout.FinishStop}, Text: text,
			Verdict: rollout.Verdict{Answer: ans, Explicit: true, Correct: ok}}
	}
	require.NoError(t, w.Write([]rollout.TracedTrace{{Step: 0, Problem: 1, Sample: 0, Trace: tr("x=5", "5", true)}}))
	require.NoError(t, w.Write([]rollout.TracedTrace{{Step: 1, Problem: 0, Sample: 2, Candidates: []int{3, 1}, Trace: tr("x=4", "4", false)}}))
	_, err = os.Stat(path)
	require.True(t, os.IsNotExist(err), "nothing under the final name before the commit")
	require.Error(t, w.Write([]rollout.TracedTrace{{Problem: 2}}), "a problem index out of range")
	stage, err := atomicfile.NewStage(dir)
	require.NoError(t, err)
	require.NoError(t, w.Stage(stage.Dir()))
	w.Abort() // a no-op after Stage
	_, err = os.Stat(path)
	require.True(t, os.IsNotExist(err), "nothing under the final name before the stage's commit")
	require.FileExists(t, path+".partial", "the traces stay .partial until the stage's commit")
	require.NoError(t, stage.Commit("rsa.traces.jsonl", "rsa.traces.jsonl.partial"))

	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	got, err := report.ReadTraces(f)
	require.NoError(t, err)
	require.Equal(t, []report.TraceRecord{
		{Step: 0, Problem: 1, ID: "b", Sample: 0, Text: "x=5", Tokens: 3, Finish: rollout.FinishStop, Answer: "5", Explicit: true, Correct: true, Gold: "5"},
		{Step: 1, Problem: 0, ID: "a", Sample: 2, Candidates: []int{3, 1}, Text: "x=4", Tokens: 3, Finish: rollout.FinishStop, Answer: "4", Explicit: true, Gold: "7"},
	}, got)
	_, err = os.Stat(path + ".partial")
	require.True(t, os.IsNotExist(err), "the commit removed the partial file")

	// An aborted evaluation leaves only the partial file.
	w, err = report.NewTraceWriter(filepath.Join(dir, "passk.traces.jsonl"), problems)
	require.NoError(t, err)
	require.NoError(t, w.Write([]rollout.TracedTrace{{Problem: 0, Trace: tr("x", "", false)}}))
	w.Abort()
	_, err = os.Stat(filepath.Join(dir, "passk.traces.jsonl"))
	require.True(t, os.IsNotExist(err))
	b, err := os.ReadFile(filepath.Join(dir, "passk.traces.jsonl.partial"))
	require.NoError(t, err)
	require.Contains(t, string(b), `"id":"a"`)
}

// TestTraceWriterKeepsLinkedTraces: the .partial file a process killed
// within its stage's commit left (after the traces' move, before the
// .partial's removal) is a hard link of the traces file moved in, beside
// that evaluation's report: a new writer replaces it rather than
// truncating the file they share.
func TestTraceWriterKeepsLinkedTraces(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "passk.traces.jsonl")
	committed := []byte(`{"id":"earlier"}` + "\n")
	require.NoError(t, os.WriteFile(path, committed, 0o644))
	require.NoError(t, os.Link(path, path+".partial"))
	w, err := report.NewTraceWriter(path, []data.Problem{{ID: "a", Answer: "7"}})
	require.NoError(t, err)
	require.NoError(t, w.Write([]rollout.TracedTrace{{Trace: rollout.Trace{Text: "x=7"}}}))
	w.Abort()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, committed, b, "the committed traces")
	b, err = os.ReadFile(path + ".partial")
	require.NoError(t, err)
	require.Contains(t, string(b), `"text":"x=7"`)
}
