package data

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"
	"github.com/stretchr/testify/require"
)

// sharedDataDir returns ../shared/data relative to the repository root (the
// directory holding go.mod above the package), or skips the test.
func sharedDataDir(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	require.NoError(t, err)
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Skip("no go.mod above the package directory; cannot locate ../shared/data")
		}
		dir = parent
	}
	d := filepath.Join(dir, "..", "shared", "data")
	if _, err := os.Stat(filepath.Join(d, "SOURCES.md")); err != nil {
		t.Skipf("shared data sets not present at %s (they live beside the repository): %v", d, err)
	}
	return d
}

// sourcesRecords parses the file table of SOURCES.md: path -> the leading
// integer of its "records" column.
func sourcesRecords(t *testing.T, dir string) map[string]int {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, "SOURCES.md"))
	require.NoError(t, err)
	defer f.Close()
	out := map[string]int{}
	lead := regexp.MustCompile(`^\s*(\d+)`)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		cells := strings.Split(line, " | ")
		require.GreaterOrEqual(t, len(cells), 6, "table row %q", line)
		m := lead.FindStringSubmatch(cells[5])
		require.NotNil(t, m, "records column of %q", line)
		n, _ := strconv.Atoi(m[1])
		out[strings.Trim(cells[0], "| `")] = n
	}
	require.NoError(t, sc.Err())
	return out
}

// independentCount counts a file's rows without the loader: non-blank
// lines of JSONL, elements of a JSON array, the row count in Parquet
// metadata.
func independentCount(t *testing.T, path string) int {
	t.Helper()
	switch filepath.Ext(path) {
	case ".jsonl":
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		n := 0
		for _, l := range bytes.Split(b, []byte("\n")) {
			if len(bytes.TrimSpace(l)) > 0 {
				n++
			}
		}
		return n
	case ".json":
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		var rows []json.RawMessage
		require.NoError(t, json.Unmarshal(b, &rows))
		return len(rows)
	case ".parquet":
		f, err := os.Open(path)
		require.NoError(t, err)
		defer f.Close()
		st, err := f.Stat()
		require.NoError(t, err)
		pf, err := parquet.OpenFile(f, st.Size())
		require.NoError(t, err)
		return int(pf.NumRows())
	}
	t.Fatalf("unexpected data file %s", path)
	return 0
}

// TestSharedData loads every data set under ../shared/data (except the
// grader cases) with default options: the record count must match both an
// independent count and the SOURCES.md table, and every kept problem must
// have a non-empty problem and gold answer.
func TestSharedData(t *testing.T) {
	dir := sharedDataDir(t)
	table := sourcesRecords(t, dir)
	var files []string
	require.NoError(t, filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if d.IsDir() && rel == "grader" {
			return filepath.SkipDir // grader cases, not problem sets
		}
		if !d.IsDir() && !strings.HasSuffix(p, ".md") {
			files = append(files, rel)
		}
		return nil
	}))
	require.Len(t, files, len(table), "files on disk %v vs SOURCES.md table %v", files, table)
	for _, rel := range files {
		t.Run(rel, func(t *testing.T) {
			want, ok := table[filepath.ToSlash(rel)]
			require.True(t, ok, "%s is not listed in SOURCES.md", rel)
			path := filepath.Join(dir, rel)
			require.Equal(t, want, independentCount(t, path), "SOURCES.md and the independent count disagree")
			ds, err := Load(path, LoadOptions{})
			require.NoError(t, err)
			require.Equal(t, want, ds.Records)
			require.Equal(t, ds.Records, len(ds.Problems)+len(ds.Skipped()))
			for _, s := range ds.Skipped() {
				t.Logf("skipped %s: %s", s.Source, s.Reason)
			}
			ids := map[string]bool{}
			for _, p := range ds.Problems {
				require.NotEmpty(t, strings.TrimSpace(p.Problem), "%s: empty problem", p.Source)
				require.NotEmpty(t, strings.TrimSpace(p.Answer), "%s: empty answer", p.Source)
				require.False(t, ids[p.ID], "%s: repeated id %q", p.Source, p.ID)
				ids[p.ID] = true
				for _, s := range InstructionSuffixes {
					require.False(t, strings.HasSuffix(p.Problem, s), "%s: instruction suffix kept", p.Source)
				}
			}
		})
	}
}

// answersOf loads rel under dir and returns its gold answers in order.
func answersOf(t *testing.T, dir string, rels ...string) []string {
	t.Helper()
	var out []string
	for _, rel := range rels {
		ds, err := Load(filepath.Join(dir, rel), LoadOptions{})
		require.NoError(t, err, rel)
		for _, p := range ds.Problems {
			out = append(out, p.Answer)
		}
	}
	return out
}

// asInts parses answers as integers, so "025" equals "25".
func asInts(t *testing.T, answers []string) []int {
	t.Helper()
	out := make([]int, len(answers))
	for i, a := range answers {
		n, err := strconv.Atoi(strings.TrimSuffix(a, `^\circ`))
		require.NoError(t, err, "answer %d", i)
		out[i] = n
	}
	return out
}

// TestSharedDataAnswers checks gold answers against the facts stated in
// SOURCES.md: the 30 AIME 2025 answers listed under "Checks made" (the
// copies in JSONL, verl Parquet with string and nested fields agree, up to
// the documented "336^\circ"), identical MATH-500 copies, AIME 2024 copies
// equal as integers (the POLARIS copy in another order), and GSM8K answers taken from "####" being numbers.
func TestSharedDataAnswers(t *testing.T) {
	dir := sharedDataDir(t)
	src, err := os.ReadFile(filepath.Join(dir, "SOURCES.md"))
	require.NoError(t, err)
	m := regexp.MustCompile(`The answers are ([0-9 |\n]+)\.`).FindSubmatch(src)
	require.NotNil(t, m, "SOURCES.md no longer lists the AIME 2025 answers")
	var aime25 []int
	for _, f := range strings.Fields(strings.ReplaceAll(string(m[1]), "|", " ")) {
		n, err := strconv.Atoi(f)
		require.NoError(t, err)
		aime25 = append(aime25, n)
	}
	require.Len(t, aime25, 30)
	for _, rels := range [][]string{
		{"aime2025/zai-org__glm-simple-evals/aime_2025.jsonl"},
		{"aime2025/GAIR-NLP__AIME-Preview/test2025-I.jsonl", "aime2025/GAIR-NLP__AIME-Preview/test2025-II.jsonl"},
		{"aime2025/HyperPotatoNeo__RSA/test.parquet"},
		{"polaris_eval/ChenxinAn-fdu__POLARIS/aime25.parquet"},
	} {
		require.Equal(t, aime25, asInts(t, answersOf(t, dir, rels...)), "%v", rels)
	}

	require.Equal(t,
		answersOf(t, dir, "math500/zai-org__glm-simple-evals/MATH500.jsonl"),
		answersOf(t, dir, "math500/rllm-org__rllm/math.json"))

	a24 := asInts(t, answersOf(t, dir, "aime2024/QwenLM__Qwen2.5-Math/test.jsonl"))
	require.Equal(t, a24, asInts(t, answersOf(t, dir, "aime2024/GAIR-NLP__AIME-Preview/test2024.jsonl")))
	// The POLARIS copy holds the same problems in another order.
	pol24 := asInts(t, answersOf(t, dir, "polaris_eval/ChenxinAn-fdu__POLARIS/aime24.parquet"))
	require.ElementsMatch(t, a24, pol24)

	number := regexp.MustCompile(`^-?[0-9][0-9,]*(\.[0-9]+)?$`)
	for i, a := range answersOf(t, dir, "gsm8k/openai__grade-school-math/test.jsonl") {
		require.Regexp(t, number, a, "gsm8k row %d", i)
	}
}

func BenchmarkLoadGSM8K(b *testing.B) {
	p := filepath.Join(sharedDataDir(b), "gsm8k", "openai__grade-school-math", "test.jsonl")
	for b.Loop() {
		if _, err := Load(p, LoadOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}
