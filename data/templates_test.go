package data

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The search instruction as ARCHITECTURE.md states it (the prompt used by
// the paper and Qwen's evaluation).
const wantInstruction = `Please reason step by step, and put your final answer within \boxed{}.`

func TestDefaultTemplates(t *testing.T) {
	tm, err := LoadTemplates("", "")
	require.NoError(t, err)
	problem := "What is $1+1$?"
	s, err := tm.Search(problem)
	require.NoError(t, err)
	require.Equal(t, problem+"\n"+wantInstruction, s)

	cands := []string{"It is \\boxed{2}.", "It is \\boxed{3}.", "Two: \\boxed{2}"}
	a, err := tm.Aggregate(problem, cands)
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(a, "Given the following problem:\n\n"+problem+"\n"), a)
	// Candidates appear numbered, in order, each followed by its text.
	last := strings.Index(a, problem)
	for i, c := range cands {
		head := "Candidate solution " + string(rune('1'+i))
		h := strings.Index(a, head)
		require.Greater(t, h, last, "%q out of order", head)
		require.True(t, strings.HasPrefix(a[h:], head+" ----\n"+c+"\n"), "candidate %d: %q", i+1, a[h:])
		last = h
	}
	require.NotContains(t, a, "Candidate solution 4")
	require.Contains(t, a, "these 3 candidate solutions")
	require.True(t, strings.HasSuffix(a, wantInstruction), "aggregation prompt must end with the boxed instruction: %q", a)
	require.Equal(t, DefaultTemplates().SearchSource(), tm.SearchSource())
}

func TestLoadTemplatesOverride(t *testing.T) {
	dir := t.TempDir()
	sp := filepath.Join(dir, "s.txt")
	ap := filepath.Join(dir, "a.txt")
	require.NoError(t, os.WriteFile(sp, []byte("Q: {{.Problem}}\nA:\n"), 0o644))
	require.NoError(t, os.WriteFile(ap, []byte("{{.Problem}}{{range .Candidates}}|{{.Number}}={{.Text}}{{end}}\n"), 0o644))
	tm, err := LoadTemplates(sp, ap)
	require.NoError(t, err)
	s, err := tm.Search("x")
	require.NoError(t, err)
	require.Equal(t, "Q: x\nA:", s, "one trailing newline of the file is dropped")
	a, err := tm.Aggregate("x", []string{"u", "v"})
	require.NoError(t, err)
	require.Equal(t, "x|1=u|2=v", a)

	// A byte order mark (Windows editors write one) is not part of the
	// prompt.
	require.NoError(t, os.WriteFile(sp, []byte("\xEF\xBB\xBFQ: {{.Problem}}\n"), 0o644))
	require.NoError(t, os.WriteFile(ap, []byte("\xEF\xBB\xBF{{.Problem}}{{range .Candidates}}|{{.Text}}{{end}}"), 0o644))
	tm, err = LoadTemplates(sp, ap)
	require.NoError(t, err)
	s, err = tm.Search("x")
	require.NoError(t, err)
	require.Equal(t, "Q: x", s)
	a, err = tm.Aggregate("x", []string{"u"})
	require.NoError(t, err)
	require.Equal(t, "x|u", a)

	// Only the aggregation template overridden: search stays the default.
	tm, err = LoadTemplates("", ap)
	require.NoError(t, err)
	s, err = tm.Search("x")
	require.NoError(t, err)
	require.Equal(t, "x\n"+wantInstruction, s)
}

// TestLoadTemplatesCRLF: a template file with CRLF line ends (Windows
// editors write them) renders prompts with LF ones, as its lines read;
// CRLFSources keeps the text as versions before this read it, CRLF line
// ends and all, for the fingerprint their runs recorded. A template not
// read from a file, and one without CRLF, is its source there.
func TestLoadTemplatesCRLF(t *testing.T) {
	dir := t.TempDir()
	sp := filepath.Join(dir, "s.txt")
	ap := filepath.Join(dir, "a.txt")
	require.NoError(t, os.WriteFile(sp, []byte("\xEF\xBB\xBFQ:\r\n{{.Problem}}\r\nA:\r\n"), 0o644))
	require.NoError(t, os.WriteFile(ap, []byte("{{.Problem}}\r\n{{range .Candidates}}|{{.Text}}\n{{end}}"), 0o644))
	for _, tc := range []struct {
		name                   string
		search, aggregate      string
		wantSearch, wantAgg    string
		wantSource, crlfSearch string
		crlfAgg                string
	}{
		{"both", sp, ap, "Q:\nx\nA:", "x\n|u\n|v\n", "Q:\n{{.Problem}}\nA:", "Q:\r\n{{.Problem}}\r\nA:", "{{.Problem}}\r\n{{range .Candidates}}|{{.Text}}\n{{end}}"},
		{"search", sp, "", "Q:\nx\nA:", "", "Q:\n{{.Problem}}\nA:", "Q:\r\n{{.Problem}}\r\nA:", trimOneNewline(defaultAggregate)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tm, err := LoadTemplates(tc.search, tc.aggregate)
			require.NoError(t, err)
			s, err := tm.Search("x")
			require.NoError(t, err)
			require.Equal(t, tc.wantSearch, s)
			require.Equal(t, tc.wantSource, tm.SearchSource())
			if tc.wantAgg != "" {
				a, err := tm.Aggregate("x", []string{"u", "v"})
				require.NoError(t, err)
				require.Equal(t, tc.wantAgg, a)
			}
			cs, ca := tm.CRLFSources()
			require.Equal(t, tc.crlfSearch, cs)
			require.Equal(t, tc.crlfAgg, ca)
		})
	}
	// Overriding one template keeps the other's CRLF source.
	tm, err := LoadTemplates(sp, "")
	require.NoError(t, err)
	o, err := tm.Override("", ap)
	require.NoError(t, err)
	cs, ca := o.CRLFSources()
	require.Equal(t, "Q:\r\n{{.Problem}}\r\nA:", cs)
	require.Equal(t, "{{.Problem}}\r\n{{range .Candidates}}|{{.Text}}\n{{end}}", ca)
	p, err := ParseTemplates("{{.Problem}}\n", "{{.Problem}}{{range .Candidates}}{{.Text}}{{end}}")
	require.NoError(t, err)
	cs, ca = p.CRLFSources()
	require.Equal(t, []string{p.SearchSource(), p.AggregateSource()}, []string{cs, ca})
}

// TestTemplatesOverride replaces the templates of a non-default set one
// at a time: the template not named keeps that set's source (a source
// ending in a blank line keeps it: no second newline is trimmed), the
// named one is read from its file.
func TestTemplatesOverride(t *testing.T) {
	dir := t.TempDir()
	sp := filepath.Join(dir, "s.txt")
	ap := filepath.Join(dir, "a.txt")
	require.NoError(t, os.WriteFile(sp, []byte("Q: {{.Problem}}\n"), 0o644))
	require.NoError(t, os.WriteFile(ap, []byte("{{.Problem}}{{range .Candidates}}|{{.Text}}{{end}}\n"), 0o644))
	base, err := ParseTemplates("{{.Problem}}\n\n", "{{.Problem}}{{range .Candidates}};{{.Number}}{{.Text}}{{end}}")
	require.NoError(t, err)

	cases := []struct {
		name, search, aggregate string
		wantSearch, wantAgg     string
	}{
		{"none", "", "", "x\n", "x;1u;2v"},
		{"search", sp, "", "Q: x", "x;1u;2v"},
		{"aggregate", "", ap, "x\n", "x|u|v"},
		{"both", sp, ap, "Q: x", "x|u|v"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tm, err := base.Override(tc.search, tc.aggregate)
			require.NoError(t, err)
			s, err := tm.Search("x")
			require.NoError(t, err)
			require.Equal(t, tc.wantSearch, s)
			a, err := tm.Aggregate("x", []string{"u", "v"})
			require.NoError(t, err)
			require.Equal(t, tc.wantAgg, a)
		})
	}
	_, err = base.Override("", filepath.Join(dir, "missing.txt"))
	require.ErrorContains(t, err, "aggregation template")
	bad := filepath.Join(dir, "bad.txt")
	require.NoError(t, os.WriteFile(bad, []byte("Solve it."), 0o644))
	_, err = base.Override(bad, "")
	require.ErrorContains(t, err, "does not contain the problem")
	require.ErrorContains(t, err, "bad.txt")
}

func TestTemplateErrors(t *testing.T) {
	good := DefaultAggregateTemplate()
	cases := []struct {
		name, search, aggregate, want string
	}{
		{"parse error", "{{.Problem", good, "search template"},
		{"unknown field", "{{.Question}}", good, "search template"},
		{"search drops the problem", "Solve it.", good, "does not contain the problem"},
		{"aggregate drops the problem", "{{.Problem}}", "{{range .Candidates}}{{.Text}}{{end}}", "aggregation template: output does not contain the problem"},
		{"aggregate drops candidates", "{{.Problem}}", "{{.Problem}} {{len .Candidates}}", "does not contain every candidate"},
		{"aggregate shows one candidate", "{{.Problem}}", "{{.Problem}} {{(index .Candidates 0).Text}}", "does not contain every candidate"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseTemplates(tc.search, tc.aggregate)
			require.ErrorContains(t, err, tc.want)
		})
	}
	_, err := LoadTemplates(filepath.Join(t.TempDir(), "missing.txt"), "")
	require.ErrorContains(t, err, "search template")
	// A file refused for its content is the one named, not both ("(files
	// \"s.txt\", \"\")" trailed the message).
	bad := filepath.Join(t.TempDir(), "s.txt")
	require.NoError(t, os.WriteFile(bad, []byte("Solve it.\n"), 0o644))
	_, err = LoadTemplates(bad, "")
	require.EqualError(t, err, "data: search template "+bad+": output does not contain the problem ({{.Problem}})")
	var te *TemplateError
	require.ErrorAs(t, err, &te)
	require.Equal(t, TemplateError{Path: bad, Err: te.Err}, *te)
}

// TestCheckAggregate: the aggregation template is checked with the
// number of candidates a run reads: one that indexes .Candidates passes
// the two-candidate check of ParseTemplates but drops candidates of a
// larger subset, or fails with fewer, and is refused naming them.
func TestCheckAggregate(t *testing.T) {
	const indexed = "{{.Problem}} A: {{(index .Candidates 0).Text}} B: {{(index .Candidates 1).Text}}"
	tm, err := ParseTemplates("{{.Problem}}", indexed)
	require.NoError(t, err)
	require.NoError(t, tm.CheckAggregate(2))
	err = tm.CheckAggregate(4)
	require.EqualError(t, err, "data: aggregation template: output does not contain every candidate ({{range .Candidates}}{{.Text}}{{end}}): with 4 candidates it lacks candidate 3, 4")
	err = tm.CheckAggregate(1)
	require.ErrorContains(t, err, "data: aggregation template: template: aggregate:1:")
	require.ErrorContains(t, err, "at <index .Candidates 1>: error calling index: reflect: slice index out of range (with 1 candidates)")

	ranged, err := ParseTemplates("{{.Problem}}", DefaultAggregateTemplate())
	require.NoError(t, err)
	for _, n := range []int{1, 2, 4, 16} {
		require.NoError(t, ranged.CheckAggregate(n), "%d candidates", n)
	}
}

// TestTemplateFileNotUTF8: a template file that is not UTF-8 (Latin-1,
// or UTF-16 as Windows Notepad saves "Unicode") is refused naming the
// file and the byte, as a data row is; it was read as is, its bytes
// reaching the tokenizer as text it could not read.
func TestTemplateFileNotUTF8(t *testing.T) {
	dir := t.TempDir()
	latin1 := filepath.Join(dir, "latin1.txt")
	require.NoError(t, os.WriteFile(latin1, []byte("R\xe9sous {{.Problem}}"), 0o644))
	latin1Agg := filepath.Join(dir, "latin1-agg.txt")
	require.NoError(t, os.WriteFile(latin1Agg, []byte("R\xe9sous {{.Problem}}{{range .Candidates}}|{{.Text}}{{end}}"), 0o644))
	for _, c := range []struct {
		search, aggregate, want string
	}{
		{latin1, "", "data: search template " + latin1 + ": byte 2 (0xE9) is not valid UTF-8; spiral reads UTF-8 text: save the file as UTF-8"},
		{"", latin1Agg, "data: aggregation template " + latin1Agg + ": byte 2 (0xE9) is not valid UTF-8; spiral reads UTF-8 text: save the file as UTF-8"},
	} {
		_, err := LoadTemplates(c.search, c.aggregate)
		require.EqualError(t, err, c.want)
	}
}

// TestTemplateFileUnreadable: a template file that cannot be read is a
// *TemplateError naming it once, as one refused for its content is (it
// was a plain error, "data: search template: open PATH: ...", which the
// CLI could not tell for a bad flag value).
func TestTemplateFileUnreadable(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.txt")
	for _, c := range []struct {
		search, aggregate, want string
		aggregateErr            bool
		path                    string
	}{
		{missing, "", "data: search template " + missing + ": no such file or directory", false, missing},
		{"", dir, "data: aggregation template " + dir + ": is a directory", true, dir},
	} {
		_, err := LoadTemplates(c.search, c.aggregate)
		require.EqualError(t, err, c.want)
		var te *TemplateError
		require.ErrorAs(t, err, &te)
		require.Equal(t, c.aggregateErr, te.Aggregate)
		require.Equal(t, c.path, te.Path)
	}
	_, err := LoadTemplates(missing, "")
	require.ErrorIs(t, err, os.ErrNotExist)
}
