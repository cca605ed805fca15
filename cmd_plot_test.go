package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPlotMixedModes: reports of two modes are refused naming each
// report's mode with its article and the report of the other mode. It
// said "R is a rsa report, the others passk" (with one other report too,
// and naming none of them).
func TestPlotMixedModes(t *testing.T) {
	dir := t.TempDir()
	path := func(name, mode string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(`{"meta":{"mode":"`+mode+`"}}`), 0o644))
		return p
	}
	passk, passk2, rsa, seq := path("passk.json", "passk"), path("passk2.json", "passk"), path("rsa.json", "rsa"), path("sequential.json", "sequential")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{passk, rsa}, rsa + " is an rsa report and " + passk + " a passk one: plot reports of one mode together"},
		{[]string{rsa, passk}, passk + " is a passk report and " + rsa + " an rsa one: plot reports of one mode together"},
		{[]string{passk, passk2, seq}, seq + " is a sequential report and " + passk + " a passk one: plot reports of one mode together"},
	} {
		var stderr bytes.Buffer
		code := run(context.Background(), append([]string{"plot", "--out", filepath.Join(dir, "out.png")}, tc.args...), &cliEnv{stdout: io.Discard, stderr: &stderr})
		require.Equal(t, 1, code, "%q", tc.args)
		require.Equal(t, "spiral plot: "+tc.want+"\n", stderr.String(), "%q", tc.args)
	}
}
