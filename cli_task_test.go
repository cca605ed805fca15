package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/spiral-rl/spiral/data"
	"github.com/spiral-rl/spiral/rollout"
)

// requireLoadWarnings writes content as a --data file, loads it with
// loadProblems and requires the warnings written to be want, in which
// %[1]s stands for the file's path ("" for none). It returns the
// problems loaded.
func requireLoadWarnings(t *testing.T, content, want string) *data.Dataset {
	t.Helper()
	path := filepath.Join(t.TempDir(), "p.jsonl")
	require.NoError(t, os.WriteFile(path, []byte(content), 0o666))
	var warn strings.Builder
	ds, err := loadProblems("--data", path, data.LoadOptions{}, &warn)
	require.NoError(t, err)
	require.Equal(t, strings.ReplaceAll(want, "%[1]s", path), warn.String())
	return ds
}

// TestLoadProblemsWarnsOfRenamedIDs: a data file whose rows repeat an
// id is warned of once, with the count and the first row renamed (its
// id was made unique without a word).
func TestLoadProblemsWarnsOfRenamedIDs(t *testing.T) {
	row := func(id, p string) string { return `{"id": "` + id + `", "problem": "` + p + `", "answer": "1"}` + "\n" }
	for _, tc := range []struct {
		name, content, want string
	}{
		{name: "none", content: row("a", "p1") + row("b", "p2")},
		{name: "one", content: row("a", "p1") + row("a", "p2"),
			want: `spiral: warning: %[1]s: a row repeats the id of an earlier row and was given another: %[1]s:2 repeats the id "a" of %[1]s:1, renamed "a~2"` + "\n"},
		{name: "three", content: row("a", "p1") + row("b", "p2") + row("b", "p3") + row("a", "p4") + row("b", "p5"),
			want: `spiral: warning: %[1]s: 3 rows repeat the id of an earlier row and were given others (the first: %[1]s:3 repeats the id "b" of %[1]s:2, renamed "b~2")` + "\n"},
	} {
		t.Run(tc.name, func(t *testing.T) { requireLoadWarnings(t, tc.content, tc.want) })
	}
}

// TestLoadProblemsWarnsOfUnbalancedAnswers: gold answers whose braces
// do not balance ("{3", "\boxed{3"), which no response is graded right
// against, are kept and warned of once, with the count and the first.
func TestLoadProblemsWarnsOfUnbalancedAnswers(t *testing.T) {
	row := func(p, a string) string { return `{"problem": "` + p + `", "answer": "` + a + `"}` + "\n" }
	for _, tc := range []struct {
		name, content, want string
	}{
		{name: "none", content: row("p1", "1") + row("p2", `\\{1\\}`)},
		{name: "one", content: row("p1", "1") + row("p2", "{3"),
			want: `spiral: warning: %[1]s: a row's gold answer has unbalanced braces, which no answer is graded right against: %[1]s:2` + "\n"},
		{name: "two", content: row("p1", `\\boxed{3`) + row("p2", "2") + row("p3", "3}"),
			want: `spiral: warning: %[1]s: 2 rows' gold answers have unbalanced braces, which no answer is graded right against (the first: %[1]s:1)` + "\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ds := requireLoadWarnings(t, tc.content, tc.want)
			require.Len(t, ds.Problems, strings.Count(tc.content, "\n"), "rows kept")
		})
	}
}

// TestLoadProblemsWarnsOfOtherFields: rows that hold a field detection
// takes before the one detected in the first row, which every row is
// read by (an "answer" beside the first row's worked "solution"), are
// warned of once for each of the problem and the answer, with the count
// and the first: their gold answers were read from "solution" in
// silence.
func TestLoadProblemsWarnsOfOtherFields(t *testing.T) {
	const (
		solution = `{"problem": "p1", "solution": "so \\boxed{1}"}` + "\n"
		both     = `{"problem": "p2", "answer": "2", "solution": "so \\boxed{2}"}` + "\n"
		question = `{"question": "q3", "problem": "p3", "answer": "3", "solution": "so \\boxed{3}"}` + "\n"
	)
	for _, tc := range []struct {
		name, content, want string
	}{
		{name: "none", content: solution + strings.ReplaceAll(solution, "1", "2")},
		{name: "one", content: solution + both,
			want: `spiral: warning: %[1]s: a row holds "answer" beside "solution", the answer field of the first row, which every row's gold answer is read from: %[1]s:2` + "\n"},
		{name: "an answer and a problem", content: `{"question": "q1", "solution": "so \\boxed{1}"}` + "\n" + question + strings.ReplaceAll(question, "3", "4"),
			want: `spiral: warning: %[1]s: 2 rows hold "problem" beside "question", the problem field of the first row, which every row's problem is read from (the first: %[1]s:2)` + "\n" +
				`spiral: warning: %[1]s: 2 rows hold "answer" beside "solution", the answer field of the first row, which every row's gold answer is read from (the first: %[1]s:2)` + "\n"},
	} {
		t.Run(tc.name, func(t *testing.T) { requireLoadWarnings(t, tc.content, tc.want) })
	}
}

// TestLoadProblemsNamesTheFileOfMoreSkipped: the count of the skipped
// rows past the first 10 names its file, as each row's warning does:
// with --data and --eval-data both read, "12 more rows skipped" said of
// neither which.
func TestLoadProblemsNamesTheFileOfMoreSkipped(t *testing.T) {
	path := filepath.Join(t.TempDir(), "p.jsonl")
	var rows strings.Builder
	rows.WriteString(`{"problem": "kept", "answer": "1"}` + "\n")
	for range 13 {
		rows.WriteString(`{"problem": "", "answer": "1"}` + "\n")
	}
	require.NoError(t, os.WriteFile(path, []byte(rows.String()), 0o666))
	var warn strings.Builder
	_, err := loadProblems("--data", path, data.LoadOptions{}, &warn)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSuffix(warn.String(), "\n"), "\n")
	require.Len(t, lines, 11)
	require.Equal(t, "spiral: warning: skipped "+path+":2: empty problem", lines[0])
	require.Equal(t, "spiral: warning: "+path+": 3 more rows skipped (spiral data inspect lists them all)", lines[10])
}

// TestTemplatesCRLFDigest: template files with CRLF line ends render
// and fingerprint as the same files with LF ones; crlfDigest is the
// fingerprint versions that kept CRLF in the prompts recorded for them
// (the values those versions computed), which the run resumes from, and
// "" for files without CRLF.
func TestTemplatesCRLFDigest(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		path := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(path, []byte(text), 0o644))
		return path
	}
	search, agg := "Solve:\n{{.Problem}}\n", "{{.Problem}}\n{{range .Candidates}}- {{.Text}}\n{{end}}\n"
	crlf := func(s string) string { return strings.ReplaceAll(s, "\n", "\r\n") }
	sCRLF, aCRLF := write("s-crlf.txt", crlf(search)), write("a-crlf.txt", crlf(agg))
	sLF, aLF := write("s.txt", search), write("a.txt", agg)
	for _, tc := range []struct {
		name      string
		crlf, lf  templateFlags
		oldDigest string
	}{
		{"search", templateFlags{search: sCRLF}, templateFlags{search: sLF}, "8b18e806c0c1f73923a1094d3be2104c"},
		{"both", templateFlags{search: sCRLF, aggregate: aCRLF}, templateFlags{search: sLF, aggregate: aLF}, "7d2df7c0b53273c55b2657377055badf"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := loadTemplates(false, tc.crlf)
			require.NoError(t, err)
			l, err := loadTemplates(false, tc.lf)
			require.NoError(t, err)
			require.Equal(t, l.digest(), c.digest())
			require.Equal(t, tc.oldDigest, c.crlfDigest())
			require.Empty(t, l.crlfDigest())
			prompt, err := c.Search("p")
			require.NoError(t, err)
			require.Equal(t, "Solve:\np", prompt)
		})
	}
}

// TestUsableDigest: the content id usableDigest gives for n usable
// problems is that of the problems fitContext keeps wherever it keeps n,
// whatever the context (so train can compare a run's data before a
// serving engine says its context); "" for a count no context keeps (two
// problems as long straddling it), none, or more than there are.
func TestUsableDigest(t *testing.T) {
	t.Setenv("SPIRAL_CACHE_DIR", t.TempDir())
	sess, err := openSessionOn(&cliEnv{stdout: io.Discard, stderr: io.Discard}, &runtimeFlags{}, &modelFlags{}, "openai")
	require.NoError(t, err)
	defer sess.close()
	tmpl, err := loadTemplates(true, templateFlags{})
	require.NoError(t, err)
	problems := []data.Problem{
		{ID: "a", Problem: "Compute 12+30+41+7+9", Answer: "99"},
		{ID: "b", Problem: "Compute 1+1", Answer: "2"},
		{ID: "c", Problem: "Compute 2+3+4", Answer: "9"},
		{ID: "d", Problem: "Compute 1+2", Answer: "3"},
	}
	for _, candidates := range []int{0, 2} {
		counts := map[int]bool{}
		for length := 1; length < 400; length++ {
			kept, err := fitContext(sess, tmpl, problems, rollout.SamplerConfig{ContextLength: length, MaxNewTokens: 4}, candidates, io.Discard)
			require.NoError(t, err)
			if len(kept) == 0 {
				continue
			}
			counts[len(kept)] = true
			got, err := usableDigest(sess, tmpl, problems, candidates, len(kept))
			require.NoError(t, err)
			require.Equal(t, data.ProblemsDigest(kept), got, "candidates %d, context %d", candidates, length)
		}
		require.Equal(t, map[int]bool{2: true, 3: true, 4: true}, counts, "candidates %d: contexts keep 2 (b and d, as long), 3 and 4 of them", candidates)
		for _, n := range []int{0, 1, 5} {
			got, err := usableDigest(sess, tmpl, problems, candidates, n)
			require.NoError(t, err)
			require.Empty(t, got, "candidates %d, %d usable", candidates, n)
		}
	}
}
