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
		`answer:   solution (last \boxed{}: 4)`,
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

// TestInspectCountsKeptRows: the answer, chat and instruction-suffix
// counts are of the rows kept, as the examples are: rows skipped (an
// empty problem or answer, a duplicate) were counted too, so that
// "answer: answer (value as is: 5)" stood beside "5 read, 2 kept".
func TestInspectCountsKeptRows(t *testing.T) {
	rows := []string{
		`{"problem": "Q1", "answer": "4"}`,
		`{"problem": "", "answer": "4"}`,
		`{"problem": "Q1", "answer": "5"}`,
		`{"problem": "Q2", "answer": ""}`,
		`{"problem": [{"role": "user", "content": "Q3 Please put your final answer within \\boxed{}."}], "answer": "\\boxed{7}"}`,
		`{"problem": [{"role": "user", "content": "Q3 Please put your final answer within \\boxed{}."}], "answer": "\\boxed{7}"}`,
	}
	path := writeFile(t, "set.jsonl", strings.Join(rows, "\n")+"\n")
	var out strings.Builder
	require.NoError(t, Inspect(&out, path, LoadOptions{}))
	for _, want := range []string{
		"problem:  problem (last user message of a chat list) (instruction suffix cut from 1)\n",
		"answer:   answer (last \\boxed{}: 1, value as is: 1)\n",
		"records:  6 read, 2 kept, 4 skipped\n",
	} {
		require.Contains(t, out.String(), want)
	}
}

// TestInspectControlCharacters: the examples are printed one line each,
// their control characters escaped: a carriage return (a CRLF problem's
// "\r\n") was printed as is, so that a terminal showed the text after it
// over the start of the line, and an id's newline broke its line.
func TestInspectControlCharacters(t *testing.T) {
	path := writeFile(t, "cr.jsonl", `{"id": "a\nb", "problem": "line 1\r\nline 2\u001b[2J", "answer": "2\tx"}`+"\n")
	var out strings.Builder
	require.NoError(t, Inspect(&out, path, LoadOptions{}))
	require.Contains(t, out.String(), "\nexample 1  id=a\\nb  source="+path+":1\n  problem: line 1\\r\\nline 2\\x1b[2J\n  answer:  2\tx\n")
}

// TestInspectRenamedIDs: the rows kept with a repeated id renamed are
// counted beside the records, with the first of them.
func TestInspectRenamedIDs(t *testing.T) {
	path := writeFile(t, "ids.jsonl", `{"id": "a", "problem": "p1", "answer": "1"}`+"\n"+`{"id": "a", "problem": "p2", "answer": "2"}`+"\n")
	var out strings.Builder
	require.NoError(t, Inspect(&out, path, LoadOptions{}))
	require.Contains(t, out.String(), "records:  2 read, 2 kept, 0 skipped, 1 kept with a repeated id renamed\n  first renamed: "+path+`:2 repeats the id "a" of `+path+`:1, renamed "a~2"`+"\n")
}

// TestInspectUnbalancedAnswers: the rows kept whose gold answer's braces
// do not balance are counted, with the first of them.
func TestInspectUnbalancedAnswers(t *testing.T) {
	path := writeFile(t, "gold.jsonl", `{"problem": "p1", "answer": "1"}`+"\n"+`{"problem": "p2", "answer": "{2"}`+"\n"+`{"problem": "p3", "answer": "3}"}`+"\n")
	var out strings.Builder
	require.NoError(t, Inspect(&out, path, LoadOptions{}))
	require.Contains(t, out.String(), "records:  3 read, 3 kept, 0 skipped\n  kept with a gold answer of unbalanced braces, never graded right: 2 (the first: "+path+":2)\n")
}

// TestInspectOtherFields: rows that hold a field detection takes before
// the one detected in the first row, which every row is read by (an
// "answer" beside the first row's "solution"), are counted with the
// first, under the records.
func TestInspectOtherFields(t *testing.T) {
	rows := []string{
		`{"problem": "Q1", "solution": "so \\boxed{1}"}`,
		`{"problem": "Q2", "answer": "2", "solution": "so \\boxed{2}"}`,
		`{"problem": "Q3", "answer": "3", "solution": "so \\boxed{3}"}`,
	}
	path := writeFile(t, "set.jsonl", strings.Join(rows, "\n")+"\n")
	var out strings.Builder
	require.NoError(t, Inspect(&out, path, LoadOptions{}))
	require.Contains(t, out.String(), "records:  3 read, 3 kept, 0 skipped\n"+
		`  holding "answer" beside "solution", the answer field of the first row, which every row's gold answer is read from: 2 (the first: `+path+":2)\n")
}
