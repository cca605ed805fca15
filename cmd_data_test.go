package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/spiral-rl/spiral/data/synth"
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

// TestDataSynthOutExtension: data synth --out p.json (or .parquet, .pq,
// .csv, .tsv) wrote JSON Lines under a name that --data and data inspect
// read as another format, and refuse ("malformed JSON: extra data after
// the top-level value"), exiting 0. It is refused before writing (exit
// 2), naming the .jsonl path to give; any case of the extension.
func TestDataSynthOutExtension(t *testing.T) {
	t.Chdir(t.TempDir())
	for _, tc := range []struct{ out, want string }{
		{"p.json", "spiral data: --out p.json: data synth writes JSON Lines, which --data and data inspect do not read from a .json file (they read it as one JSON document): want a .jsonl path, such as p.jsonl\n"},
		{filepath.Join("d", "p.JSON"), "spiral data: --out " + filepath.Join("d", "p.JSON") + ": data synth writes JSON Lines, which --data and data inspect do not read from a .JSON file (they read it as one JSON document): want a .jsonl path, such as " + filepath.Join("d", "p.jsonl") + "\n"},
		{"p.parquet", "spiral data: --out p.parquet: data synth writes JSON Lines, which --data and data inspect do not read from a .parquet file (they read it as Parquet): want a .jsonl path, such as p.jsonl\n"},
		{"p.pq", "spiral data: --out p.pq: data synth writes JSON Lines, which --data and data inspect do not read from a .pq file (they read it as Parquet): want a .jsonl path, such as p.jsonl\n"},
		{"p.csv", "spiral data: --out p.csv: data synth writes JSON Lines, which --data and data inspect do not read from a .csv file (they refuse CSV and TSV): want a .jsonl path, such as p.jsonl\n"},
		{"p.tsv", "spiral data: --out p.tsv: data synth writes JSON Lines, which --data and data inspect do not read from a .tsv file (they refuse CSV and TSV): want a .jsonl path, such as p.jsonl\n"},
	} {
		var stderr bytes.Buffer
		code := run(context.Background(), []string{"data", "synth", "--problems", "2", "--out", tc.out}, &cliEnv{stdout: io.Discard, stderr: &stderr})
		require.Equal(t, exitUsage, code, tc.out)
		require.Equal(t, tc.want, stderr.String())
		require.NoFileExists(t, tc.out)
	}
	require.NoDirExists(t, "d", "made for nothing")
	// The names the loader reads as JSON Lines, or sniffs, are written.
	for _, out := range []string{"p.jsonl", "p.ndjson", "p.txt", "p"} {
		var stderr bytes.Buffer
		require.Zero(t, run(context.Background(), []string{"data", "synth", "--problems", "2", "--out", out}, &cliEnv{stdout: io.Discard, stderr: &stderr}), stderr.String())
		stderr.Reset()
		require.Zero(t, run(context.Background(), []string{"data", "inspect", out}, &cliEnv{stdout: io.Discard, stderr: &stderr}), stderr.String())
	}
}

// TestDataSynthOutDirectoryName: data synth --out sub/ (a directory's
// name, not there yet) made sub and then failed to rename its temporary
// file onto "sub/" (exit 1, "atomicfile: write sub/: rename ... file
// exists"), leaving sub behind. It is refused as an existing directory
// is (exit 2), naming the file to give, and makes nothing.
func TestDataSynthOutDirectoryName(t *testing.T) {
	t.Chdir(t.TempDir())
	require.NoError(t, os.Mkdir("there", 0o755))
	for _, tc := range []struct{ out, want string }{
		{"sub/", "spiral data: --out sub/ names a directory: want the JSONL file to write, such as " + filepath.Join("sub", "problems.jsonl") + "\n"},
		{filepath.Join("a", "b") + "/", "spiral data: --out a/b/ names a directory: want the JSONL file to write, such as " + filepath.Join("a", "b", "problems.jsonl") + "\n"},
		{"there", "spiral data: --out there is a directory: want the JSONL file to write, such as " + filepath.Join("there", "problems.jsonl") + "\n"},
	} {
		var stderr bytes.Buffer
		code := run(context.Background(), []string{"data", "synth", "--problems", "2", "--out", tc.out}, &cliEnv{stdout: io.Discard, stderr: &stderr})
		require.Equal(t, exitUsage, code, tc.out)
		require.Equal(t, tc.want, stderr.String())
	}
	entries, err := os.ReadDir(".")
	require.NoError(t, err)
	require.Len(t, entries, 1, "nothing made")
}

// TestDataSynthOutLinkLoop: data synth --out LOOP, a symbolic link that
// cannot be followed, exited 1 ("--out: open loop1: too many levels of
// symbolic links") where --out LOOP/x.jsonl exited 2: both are a bad
// value of the flag (exit 2), naming the link and its target.
func TestDataSynthOutLinkLoop(t *testing.T) {
	t.Chdir(t.TempDir())
	require.NoError(t, os.Symlink("loop2", "loop1"))
	require.NoError(t, os.Symlink("loop1", "loop2"))
	for _, out := range []string{"loop1", filepath.Join("loop1", "x.jsonl")} {
		var stderr bytes.Buffer
		code := run(context.Background(), []string{"data", "synth", "--problems", "2", "--out", out}, &cliEnv{stdout: io.Discard, stderr: &stderr})
		require.Equal(t, exitUsage, code, out)
		require.Equal(t, "spiral data: --out "+out+": loop1 is a symbolic link to loop2, which cannot be followed (too many levels of symbolic links): correct the link, or give another --out\n", stderr.String())
	}
}

// TestDataSynthOwnBounds: data synth's operand flags have bounds of their
// own below the count flags' 2^20, which the usage error states: it said
// "--max-operand 2000000: want 1..1048576", then refused 1048576 as "want
// at most 1000000".
func TestDataSynthOwnBounds(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--max-operand", "2000000"}, "spiral data: --max-operand 2000000: want 1..1000000\n"},
		{[]string{"--max-operand", "1048576"}, "spiral data: --max-operand 1048576: want 1..1000000\n"},
		{[]string{"--max-operand", "1000001"}, "spiral data: --max-operand 1000001: want 1..1000000\n"},
		{[]string{"--min-operand", "2000000"}, "spiral data: --min-operand 2000000: want 1..1000000\n"},
		{[]string{"--max-operands", "2000000"}, "spiral data: --max-operands 2000000: want 2..1024\n"},
		{[]string{"--max-operands", "1025"}, "spiral data: --max-operands 1025: want 2..1024\n"},
		{[]string{"--min-operands", "2000000"}, "spiral data: --min-operands 2000000: want 2..1024\n"},
		{[]string{"--min-operands", "1"}, "spiral data: --min-operands 1: want 2..1024\n"},
		{[]string{"--problems", "2000000"}, "spiral data: --problems 2000000: want 1..1048576 (a count past any run)\n"},
	} {
		var stderr bytes.Buffer
		code := run(context.Background(), append([]string{"data", "synth"}, tc.args...), &cliEnv{stdout: io.Discard, stderr: &stderr})
		require.Equal(t, exitUsage, code, "%q: %s", tc.args, stderr.String())
		require.Equal(t, tc.want, stderr.String(), "%q", tc.args)
	}
}

// TestDataUnknownSubcommand: `spiral data inspct f` printed only the
// usage line, where `spiral bench trian` says `not "trian"`: data names
// the words it did not understand too (exit 2), and its usage after.
func TestDataUnknownSubcommand(t *testing.T) {
	usage := " (" + dataUsage + ")\n"
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"inspct", "f"}, "spiral data: want `spiral data inspect FILE` or `spiral data synth`, not \"inspct f\"" + usage},
		{[]string{"synthh"}, "spiral data: want `spiral data inspect FILE` or `spiral data synth`, not \"synthh\"" + usage},
		{[]string{"inspect"}, "spiral data: want `spiral data inspect FILE`, not \"inspect\": no FILE given" + usage},
		{[]string{"inspect", "a", "b"}, "spiral data: want `spiral data inspect FILE`, one FILE, not \"inspect a b\"" + usage},
		{[]string{"synth", "extra"}, "spiral data: want `spiral data synth`, no argument after it, not \"synth extra\"" + usage},
		{nil, "spiral data: " + dataUsage + "\n"},
	} {
		var stderr bytes.Buffer
		code := run(context.Background(), append([]string{"data"}, tc.args...), &cliEnv{stdout: io.Discard, stderr: &stderr})
		require.Equal(t, exitUsage, code, "%q: %s", tc.args, stderr.String())
		require.Equal(t, tc.want, stderr.String(), "%q", tc.args)
	}
}

// TestTooFewProblemsSaysWhetherExact: a --problems past the problems
// found says "only N" where they were counted, all the split holds, and
// "at least N" where the draws alone found them: spiral data synth
// --form compute --max-operand 1 --min-operands 2 --max-operands 12
// --problems 1048576 said "only 269", of 284.
func TestTooFewProblemsSaysWhetherExact(t *testing.T) {
	const widen = " with these settings: ask for fewer, or widen --min-operand..--max-operand or --min-operands..--max-operands"
	for _, tc := range []struct {
		name string
		few  synth.TooFewError
		want string
	}{
		{"counted", synth.TooFewError{Split: synth.Test, Found: 284, Want: 1 << 20, Exact: true},
			"--problems 1048576: only 284 distinct test problems found" + widen},
		{"counted, one", synth.TooFewError{Split: synth.Test, Found: 1, Want: 5, Exact: true},
			"--problems 5: only 1 distinct test problem found" + widen},
		{"drawn", synth.TooFewError{Split: synth.Train, Found: 676, Want: 1 << 20},
			"--problems 1048576: at least 676 distinct train problems (found by drawing, not counted)" + widen},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tooFewProblems(tc.few.Want, &tc.few)
			var usage usageError
			require.ErrorAs(t, err, &usage)
			require.EqualError(t, err, tc.want)
		})
	}
}
