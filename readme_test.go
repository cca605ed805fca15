package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/require"

	"github.com/spiral-rl/spiral/rl"
	"github.com/spiral-rl/spiral/rollout/report"
)

// readmeTable returns the rows of the README table that follows the
// line starting with heading, each row's cells trimmed.
func readmeTable(t *testing.T, readme, heading string) [][]string {
	t.Helper()
	_, rest, ok := strings.Cut(readme, "\n"+heading)
	require.True(t, ok, "README has no line starting %q", heading)
	var rows [][]string
	started := false
	for _, line := range strings.Split(rest, "\n")[1:] {
		if !strings.HasPrefix(line, "|") {
			if started {
				break
			}
			continue
		}
		started = true
		cells := strings.Split(strings.Trim(line, "|"), " | ")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		if cells[0] == "flag" || cells[0] == "command" || strings.HasPrefix(cells[0], "---") {
			continue
		}
		rows = append(rows, cells)
	}
	require.NotEmpty(t, rows, "README's table after %q", heading)
	return rows
}

// readmeFlagSet returns the flag set command name registers.
func readmeFlagSet(t *testing.T, name string) *pflag.FlagSet {
	t.Helper()
	for _, c := range commands() {
		if c.name == name {
			fs := pflag.NewFlagSet("spiral "+name, pflag.ContinueOnError)
			c.setup(fs)
			return fs
		}
	}
	t.Fatalf("no command %q", name)
	return nil
}

// TestREADMEFlagTables: every flag README's flag tables name is one of
// the command's flags, and a literal default README gives for it (a
// number, true or false, off for false, or a backquoted value) is the
// flag's default; every command README's command table lists is one.
func TestREADMEFlagTables(t *testing.T) {
	body, err := os.ReadFile("README.md")
	require.NoError(t, err)
	readme := string(body)
	flagName := regexp.MustCompile("--[a-z0-9][a-z0-9-]*")
	literal := regexp.MustCompile(`^(-?[0-9][0-9.e]*|true|false|[a-z][a-z0-9_:-]*)$`)
	tables := []struct {
		heading  string
		commands []string
	}{
		{"Flags common to every command that runs a model:", []string{"train", "eval", "sft", "generate", "bench"}},
		{"Training (`spiral train --help` for all):", []string{"train"}},
	}
	for _, table := range tables {
		for _, row := range readmeTable(t, readme, table.heading) {
			names := flagName.FindAllString(row[0], -1)
			require.NotEmpty(t, names, "row %q names no flag", row[0])
			defaults := strings.Split(row[1], ", ")
			for _, cmd := range table.commands {
				fs := readmeFlagSet(t, cmd)
				for i, name := range names {
					f := fs.Lookup(name[2:])
					require.NotNil(t, f, "README's %q row: spiral %s has no flag %s", row[0], cmd, name)
					if len(defaults) != len(names) {
						continue
					}
					want := strings.Trim(defaults[i], "`")
					if want == "off" {
						want = "false"
					}
					if want == "auto" && f.Value.Type() != "string" || !literal.MatchString(want) {
						continue // auto: 0 and the flag's help says what it picks
					}
					require.Equal(t, f.DefValue, want, "README's default of %s (%q row) against spiral %s's", name, row[0], cmd)
				}
			}
		}
	}
	names := map[string]bool{}
	for _, c := range commands() {
		names[c.name] = true
	}
	for _, row := range readmeTable(t, readme, "`spiral [command] [flags]`") {
		cmd, _, _ := strings.Cut(strings.Trim(row[0], "`"), " ")
		require.True(t, names[cmd], "README's command table lists %q, which is no command", row[0])
	}
}

// TestREADMELogFields: every field a run's logs write (metrics.jsonl,
// eval.jsonl and sft.jsonl), eval's reports write (passk.json, rsa.json,
// sequential.json) and bench, generate --jsonl and plan --json print,
// nested ones too, is named in README, in backquotes, so that a field
// added to one is documented with it.
func TestREADMELogFields(t *testing.T) {
	body, err := os.ReadFile("README.md")
	require.NoError(t, err)
	named := map[string]bool{}
	word := regexp.MustCompile(`[a-z0-9_]+`)
	for _, span := range regexp.MustCompile("`[^`]*`").FindAllString(string(body), -1) {
		for _, w := range word.FindAllString(span, -1) {
			named[w] = true
		}
	}
	// RSA's per-problem details, which spiral eval never asks for.
	unwritten := map[string]bool{"RSAConfig.Details": true, "RSAStep.Problems": true}
	for _, log := range []struct {
		file string
		line any
	}{
		{"metrics.jsonl", rl.Metrics{}},
		{"eval.jsonl", rl.EvalLine{}},
		{"sft.jsonl", rl.SFTMetrics{}},
		{"sft.jsonl", rl.SFTEval{}},
		{"passk.json", report.PassAtK{}},
		{"rsa.json", report.RSA{}},
		{"sequential.json", report.Budget{}},
		{"bench train's lines", benchTrainLine{}},
		{"bench generate's lines", benchGenerateLine{}},
		{"generate --jsonl's lines", generatedLine{}},
		{"plan --json", planReport{}},
	} {
		for _, field := range jsonFields(reflect.TypeOf(log.line), unwritten) {
			require.True(t, named[field], "README names no field %s of %s (%T)", field, log.file, log.line)
		}
	}
}

// TestREADMESFTLogFieldsWritten: README's bullet on sft.jsonl names
// only fields its lines write (flags aside): it named pg_loss, which
// sft.jsonl's step lines no longer hold.
func TestREADMESFTLogFieldsWritten(t *testing.T) {
	body, err := os.ReadFile("README.md")
	require.NoError(t, err)
	bullet := regexp.MustCompile("(?m)^- The log, `sft.jsonl`: .*$").FindString(string(body))
	require.NotEmpty(t, bullet, "README's bullet on sft.jsonl")
	written := map[string]bool{}
	for _, line := range []any{rl.SFTMetrics{}, rl.SFTEval{}} {
		for _, f := range jsonFields(reflect.TypeOf(line), nil) {
			written[f] = true
		}
	}
	for _, span := range regexp.MustCompile("`([^`]*)`").FindAllStringSubmatch(bullet, -1) {
		if name := span[1]; name != "sft.jsonl" && !strings.HasPrefix(name, "--") {
			require.True(t, written[name], "README's sft.jsonl bullet names %s, which sft.jsonl's lines do not hold", name)
		}
	}
}

// jsonFields returns the JSON names of the exported fields of struct
// type t, those of an untagged embedded struct (which encoding/json
// writes as t's own), and those of the structs they hold (directly, by
// pointer or in a slice), but for the fields skip names (as
// "Type.Field").
func jsonFields(t reflect.Type, skip map[string]bool) []string {
	var names []string
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
			names = append(names, jsonFields(f.Type, skip)...)
			continue
		}
		if !f.IsExported() || name == "-" || skip[t.Name()+"."+f.Name] {
			continue
		}
		if name == "" {
			name = f.Name
		}
		names = append(names, name)
		ft := f.Type
		for ft.Kind() == reflect.Pointer || ft.Kind() == reflect.Slice {
			ft = ft.Elem()
		}
		if ft.Kind() == reflect.Struct {
			names = append(names, jsonFields(ft, skip)...)
		}
	}
	return names
}

// TestFuzzTargetsListed: the Makefile's FUZZ_TARGETS, which make fuzz
// runs ("runs them all", says README), names every fuzz target in the
// module, and README's list of fuzzed packages names each package.
func TestFuzzTargetsListed(t *testing.T) {
	makefile, err := os.ReadFile("Makefile")
	require.NoError(t, err)
	m := regexp.MustCompile(`(?m)^FUZZ_TARGETS :=((?:.*\\\n)*.*)`).FindSubmatch(makefile)
	require.NotNil(t, m, "the Makefile has no FUZZ_TARGETS")
	listed := map[string]bool{}
	for _, target := range strings.Fields(strings.ReplaceAll(string(m[1]), "\\", " ")) {
		listed[target] = true
	}
	readme, err := os.ReadFile("README.md")
	require.NoError(t, err)
	_, list, ok := strings.Cut(strings.Join(strings.Fields(string(readme)), " "), "-fuzztime 60s ./PKG` (")
	require.True(t, ok, "README lists no fuzzed packages")
	list, _, _ = strings.Cut(list, "); `make fuzz")
	pkgs := map[string]bool{}
	for _, p := range strings.Split(strings.TrimPrefix(list, ". (the flags), "), ", ") {
		pkgs[p] = true
	}
	fuzz := regexp.MustCompile(`(?m)^func (Fuzz[A-Za-z0-9_]*)\(`)
	err = filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return err
		}
		body, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		dir := filepath.Dir(path)
		for _, f := range fuzz.FindAllSubmatch(body, -1) {
			target := "./" + dir + ":" + string(f[1])
			if dir == "." {
				target = ".:" + string(f[1])
			} else {
				require.True(t, pkgs[dir], "README's list of fuzzed packages lacks %s (%s)", dir, f[1])
			}
			require.True(t, listed[target], "the Makefile's FUZZ_TARGETS lacks %s (%s)", target, path)
		}
		return nil
	})
	require.NoError(t, err)
}

// TestDocLinksResolve: every relative link or image of README.md,
// ARCHITECTURE.md and the Markdown under docs/ names a file or directory
// of the repository, so does every repository path their text names,
// every path README's Layout block names exists, and ARCHITECTURE.md's
// package map names every package directory.
func TestDocLinksResolve(t *testing.T) {
	docs := []string{"README.md", "ARCHITECTURE.md"}
	require.NoError(t, filepath.WalkDir("docs", func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".md") {
			docs = append(docs, path)
		}
		return err
	}))
	link := regexp.MustCompile(`\]\(\s*([^)\s]+)\s*\)`)
	for _, doc := range docs {
		body, err := os.ReadFile(doc)
		require.NoError(t, err)
		for _, m := range link.FindAllStringSubmatch(string(body), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "#") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			target, _, _ = strings.Cut(target, "#")
			_, err := os.Stat(filepath.Join(filepath.Dir(doc), target))
			require.NoError(t, err, "%s links to %s, which does not exist", doc, m[1])
		}
	}

	// A repository path written in README's or ARCHITECTURE's text
	// (docs/study16/compare.txt, model/memplan/testdata/measured.json,
	// scripts/bench/make_model.py) names a file or directory there.
	repoPath := regexp.MustCompile(`(?:^|[^\w./~-])((?:docs|scripts|model|rl|rollout|grader|data|tests)/[\w./-]*[\w/])`)
	for _, doc := range []string{"README.md", "ARCHITECTURE.md"} {
		body, err := os.ReadFile(doc)
		require.NoError(t, err)
		for _, m := range repoPath.FindAllStringSubmatch(string(body), -1) {
			_, err := os.Stat(m[1])
			require.NoError(t, err, "%s names %s, which does not exist", doc, m[1])
		}
	}

	readme, err := os.ReadFile("README.md")
	require.NoError(t, err)
	_, layout, ok := strings.Cut(string(readme), "\n## Layout\n\n```\n")
	require.True(t, ok, "README has no Layout block")
	layout, _, _ = strings.Cut(layout, "\n```")
	type entry struct {
		indent int
		dir    string
	}
	var parents []entry // the enclosing directories, by indentation
	for _, line := range strings.Split(layout, "\n") {
		indent := len(line) - len(strings.TrimLeft(line, " "))
		if indent >= 16 || indent == len(line) {
			continue // a description's continuation
		}
		field, _, _ := strings.Cut(strings.TrimSpace(line), "  ")
		for len(parents) > 0 && parents[len(parents)-1].indent >= indent {
			parents = parents[:len(parents)-1]
		}
		base := "."
		if len(parents) > 0 {
			base = parents[len(parents)-1].dir
		}
		for _, name := range strings.Split(field, ",") {
			name = strings.TrimSpace(name)
			if name == "" {
				continue
			}
			path := filepath.Join(base, name)
			matches, err := filepath.Glob(path)
			require.NoError(t, err)
			require.NotEmpty(t, matches, "README's Layout names %s (line %q), which does not exist", path, line)
			if strings.HasSuffix(name, "/") {
				parents = append(parents, entry{indent, path})
			}
		}
	}

	arch, err := os.ReadFile("ARCHITECTURE.md")
	require.NoError(t, err)
	words := map[string]bool{}
	for _, w := range regexp.MustCompile(`[A-Za-z0-9_]+`).FindAllString(string(arch), -1) {
		words[w] = true
	}
	require.NoError(t, filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		if path != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		gofiles, err := filepath.Glob(filepath.Join(path, "*.go"))
		if err != nil || len(gofiles) == 0 || path == "." {
			return err
		}
		require.True(t, words[d.Name()], "ARCHITECTURE.md's package map does not name %s", path)
		return nil
	}))
}
