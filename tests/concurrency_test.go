package tests

import (
	"path/filepath"
	"sync"
	"testing"

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
