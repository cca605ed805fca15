package data

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestInspect(t *testing.T) {
	var rows strings.Builder
	for _, r := range []string{
		`{"question": "Q one", "solution": "so \\boxed{1}"}`,
		`{"question": "Q two", "solution": "so \\boxed{2}"}`,
		`{"question": "Q one", "solution": "so \\boxed{1}"}`,
		`{"question": "Q three", "solution": "so \\boxed{3}"}`,
		`{"question": "Q four", "solution": "so \\boxed{4}"}`,
	} {
		rows.WriteString(r + "\n")
	}
	path := writeFile(t, "set.jsonl", rows.String())
	var out strings.Builder
	require.NoError(t, Inspect(&out, path, LoadOptions{}))
	s := out.String()
	for _, want := range []string{
		"format:   jsonl",
		"problem:  question",
		`answer:   solution (last \boxed{}: 5)`,
		"records:  5 read, 4 kept, 1 skipped",
		"skipped " + path + ":3: duplicate problem",
		"example 1", "Q one", "example 3", "Q three",
	} {
		require.Contains(t, s, want)
	}
	require.NotContains(t, s, "example 4", "only three examples")
	require.NotContains(t, s, "Q four")
}

func TestInspectBadFile(t *testing.T) {
	path := writeFile(t, "bad.jsonl", "{not json}\n")
	var out strings.Builder
	err := Inspect(&out, path, LoadOptions{})
	require.ErrorContains(t, err, "bad.jsonl:1: malformed JSON")
	require.Empty(t, out.String())
}
