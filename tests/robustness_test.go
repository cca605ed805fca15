package tests

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// runAtOnce runs the binary once per argument list, all at once, in dir,
// and returns their results in the same order.
func runAtOnce(t *testing.T, dir string, args ...[]string) []result {
	t.Helper()
	res := make([]result, len(args))
	var wg sync.WaitGroup
	for i, a := range args {
		wg.Go(func() { res[i] = spiralIn(t, dir, nil, a...) })
	}
	wg.Wait()
	return res
}

// TestConcurrentEvalsOfTwoModels: two evaluations of different models
// (the embedded default and a smaller init-model) into one --out at
// once share its artifacts directory; each waits while the other
// prepares and reads it, rather than opening graphs the other wrote for
// its own model ("weight input ... not supplied").
func TestConcurrentEvalsOfTwoModels(t *testing.T) {
	requireRuntime(t)
	dir := t.TempDir()
	m := filepath.Join(dir, "init")
	r := spiral(t, nil, "init-model", "--out", m, "--layers", "1")
	require.Equal(t, 0, r.code, r.stderr)
	out := filepath.Join(dir, "eval")
	for _, r := range runAtOnce(t, dir,
		[]string{"eval", "--mode", "passk", "--limit", "4", "--samples", "2", "--out", out, "--quiet"},
		[]string{"eval", "--model", m, "--mode", "sequential", "--limit", "4", "--samples", "2", "--out", out, "--quiet"},
	) {
		require.Equal(t, 0, r.code, r.stderr)
	}
	require.FileExists(t, filepath.Join(out, "passk.json"))
	require.FileExists(t, filepath.Join(out, "sequential.json"))
}

// TestConcurrentEvalsOfOneMode: a second evaluation of the same mode into
// the --out where one is running is refused at once, naming the lock,
// rather than writing the same report, plot and traces files: the two
// shared one .partial traces file, and the one that committed it last
// failed after its report was written, beside the other's traces. The
// first finishes as if alone, and the lock does not outlive it.
func TestConcurrentEvalsOfOneMode(t *testing.T) {
	requireRuntime(t)
	dir := t.TempDir()
	out := filepath.Join(dir, "eval")
	args := []string{"eval", "--mode", "passk", "--limit", "64", "--samples", "16", "--out", out, "--traces", "--quiet"}
	first := exec.Command(binary, args...)
	first.Dir = dir
	var stderr strings.Builder
	first.Stderr = &stderr
	require.NoError(t, first.Start())
	partial := filepath.Join(out, "passk.traces.jsonl.partial")
	require.Eventually(t, func() bool { _, err := os.Stat(partial); return err == nil }, time.Minute, 5*time.Millisecond)
	r := spiralIn(t, dir, nil, append(args, "--seed", "2")...)
	require.NoError(t, first.Wait(), stderr.String())
	require.Equal(t, 1, r.code, r.stderr)
	require.Contains(t, r.stderr, "another spiral eval --mode passk is writing there (lock "+filepath.Join(out, ".passk.lock")+")")
	require.Equal(t, 64*16, countLines(t, filepath.Join(out, "passk.traces.jsonl")))
	r = spiralIn(t, dir, nil, "eval", "--mode", "passk", "--limit", "2", "--samples", "2", "--out", out, "--quiet")
	require.Equal(t, 0, r.code, r.stderr)
}

// TestEvalFailureLeavesNoReport: an evaluation whose plot or traces file
// cannot be written (here a directory stands at its name; a full disk
// does the same) fails naming it and leaves no report: the report is
// written last, so a report in --out always has its plot and traces
// beside it (scripts/study.sh takes a report as a finished evaluation).
func TestEvalFailureLeavesNoReport(t *testing.T) {
	requireRuntime(t)
	for _, blocked := range []string{"passk.png", "passk.traces.jsonl"} {
		t.Run(blocked, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "eval")
			require.NoError(t, os.MkdirAll(filepath.Join(out, blocked, "x"), 0o777))
			r := spiral(t, nil, "eval", "--mode", "passk", "--limit", "2", "--samples", "2", "--out", out, "--traces", "--quiet")
			require.Equal(t, 1, r.code, r.stderr)
			require.Contains(t, r.stderr, filepath.Join(out, blocked))
			require.NoFileExists(t, filepath.Join(out, "passk.json"))
		})
	}
}
