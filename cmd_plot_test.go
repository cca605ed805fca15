package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
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

// TestReportCutShortOrMistyped: a report cut short (a copy or write that
// stopped), an empty one, or one with a value of the wrong type was
// refused as "not a spiral eval report: unexpected end of JSON input",
// or with encoding/json's Go types ("cannot unmarshal string into Go
// struct field KPoint.points.pass_at_k of type float64"). plot and
// compare now say that the file is empty or ends inside its JSON, and
// name a mistyped value by its JSON path and types, naming the file.
func TestReportCutShortOrMistyped(t *testing.T) {
	dir := t.TempDir()
	const good = `{"meta":{"mode":"passk","label":"A","problems":1},"config":{"samples":2},"points":[{"k":1,"pass_at_k":0.5,"majority_at_k":0.5},{"k":2,"pass_at_k":1,"majority_at_k":0.5}]}`
	ref := filepath.Join(dir, "ref.json")
	require.NoError(t, os.WriteFile(ref, []byte(good), 0o644))
	for _, tc := range []struct {
		name, body, want string
	}{
		{"empty", "", "the file is empty: want a spiral eval report"},
		{"blank", " \n", "the file is empty: want a spiral eval report"},
		{"cut short", good[:len(good)/2], "the file ends inside its JSON (cut short?): want a whole spiral eval report"},
		{"mistyped", strings.Replace(good, `"pass_at_k":0.5`, `"pass_at_k":"0.5"`, 1), "points.pass_at_k: a number expected, got a string"},
	} {
		for _, cmd := range []string{"plot", "compare"} {
			t.Run(tc.name+"/"+cmd, func(t *testing.T) {
				path := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-")+".json")
				require.NoError(t, os.WriteFile(path, []byte(tc.body), 0o644))
				args := []string{"plot", "--out", filepath.Join(dir, "out.png"), ref, path}
				if cmd == "compare" {
					args = []string{"compare", "--out", filepath.Join(dir, "cmp"), ref, path}
				}
				var stderr bytes.Buffer
				code := run(context.Background(), args, &cliEnv{stdout: io.Discard, stderr: &stderr})
				require.Equal(t, 1, code, stderr.String())
				require.Contains(t, stderr.String(), path+": "+tc.want)
				require.NotContains(t, stderr.String(), "Go struct field")
			})
		}
	}
}
