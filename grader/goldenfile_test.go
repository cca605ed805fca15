package grader

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/golden_cases.jsonl from the Go grading tables")

// goldenCasesFile holds every default-Config grading table of the tests,
// for scripts/grader-vs-mathverify.py.
const goldenCasesFile = "testdata/golden_cases.jsonl"

// goldenRecord is one line of goldenCasesFile.
type goldenRecord struct {
	Suite    string `json:"suite"`
	Name     string `json:"name"`
	Response string `json:"response"`
	Gold     string `json:"gold"`
	Want     bool   `json:"want"`
	Conv     string `json:"conv,omitempty"`
}

// goldenRecords lists the tables graded with the default Config.
func goldenRecords() []goldenRecord {
	var out []goldenRecord
	for _, s := range []struct {
		name  string
		cases []gradeCase
	}{{"golden/AIME", goldenAIME}, {"golden/MATH", goldenMATH}, {"golden/POLARIS", goldenPOLARIS}} {
		for _, c := range s.cases {
			out = append(out, goldenRecord{s.name, c.name, c.response, c.gold, c.want, ""})
		}
	}
	for _, s := range []struct {
		name  string
		cases []classCase
	}{
		{"class/mixed", mixedNumberCases}, {"class/factorial", factorialCases}, {"class/font", fontCases},
		{"class/text", textCases}, {"class/relation", relationCases}, {"class/degree", degreeCases},
		{"class/domain", domainCases}, {"class/choice", choiceCases}, {"class/repeating", repeatingCases},
		{"class/builder", builderCases}, {"class/clock", clockCases}, {"class/function", functionCases},
		{"class/huge", hugeCases}, {"class/infix", infixCases}, {"class/arith", arithCases}, {"class/base", baseCases},
		{"class/realroot", realRootCases}, {"class/reals", realsCases},
	} {
		for _, c := range s.cases {
			out = append(out, goldenRecord{s.name, c.name, c.response, c.gold, c.want, c.conv})
		}
	}
	return out
}

// TestGoldenCasesFile checks that goldenCasesFile matches the tables;
// go test ./grader -run TestGoldenCasesFile -update rewrites it.
func TestGoldenCasesFile(t *testing.T) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	for _, r := range goldenRecords() {
		if err := enc.Encode(r); err != nil {
			t.Fatal(err)
		}
	}
	if *update {
		if err := os.WriteFile(goldenCasesFile, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, err := os.ReadFile(goldenCasesFile)
	if err != nil {
		t.Fatalf("%v (run go test ./grader -run TestGoldenCasesFile -update)", err)
	}
	if !bytes.Equal(got, b.Bytes()) {
		t.Errorf("%s is stale: run go test ./grader -run TestGoldenCasesFile -update", goldenCasesFile)
	}
}
