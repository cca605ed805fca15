package main

import (
	"bytes"
	"context"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestDataSynthOutDash: `spiral data synth --out -` wrote a file named
// "-" in the working directory and printed nothing, though "-" is
// standard output by the usual convention and standard output is the
// default. It now writes to standard output, as without --out.
func TestDataSynthOutDash(t *testing.T) {
	t.Chdir(t.TempDir())
	synth := func(args ...string) (int, string, string) {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), append([]string{"data", "synth", "--problems", "2"}, args...), &cliEnv{stdout: &stdout, stderr: &stderr})
		return code, stdout.String(), stderr.String()
	}
	code, want, stderr := synth()
	require.Zero(t, code, stderr)
	require.Equal(t, 2, bytes.Count([]byte(want), []byte("\n")), want)
	for _, args := range [][]string{{"--out", "-"}, {"--out=-"}} {
		code, got, stderr := synth(args...)
		require.Zero(t, code, stderr)
		require.Equal(t, want, got, "%q", args)
		require.Empty(t, stderr, "%q", args)
		require.NoFileExists(t, "-", "%q", args)
	}
	entries, err := os.ReadDir(".")
	require.NoError(t, err)
	require.Empty(t, entries)
}
