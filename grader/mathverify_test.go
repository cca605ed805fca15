package grader

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// mvCase is one record of testdata/math_verify_cases.jsonl, a copy of
// ../shared/data/grader/math_verify_cases.jsonl (see testdata/SOURCES.md).
type mvCase struct {
	ID         string `json:"id"`
	Prediction string `json:"prediction"`
	Gold       string `json:"gold"`
	Expected   bool   `json:"expected"`
	Config     struct {
		Harness          string   `json:"harness"`
		MatchTypes       []string `json:"match_types"`
		FloatRounding    int      `json:"float_rounding"`
		Strict           *bool    `json:"strict"`
		AllowSetRelation bool     `json:"allow_set_relation_comp"`
		Strings          []string `json:"strings"`
		Extraction       string   `json:"extraction"`
	} `json:"config"`
}

// minAgreement is the agreement rate the issue requires (issue 6).
const minAgreement = 0.97

// sharedData returns ../shared/data/<rel> relative to the repository root
// (the directory holding go.mod), or skips the test.
func sharedData(t testing.TB, rel string) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Skip("grader: no go.mod above the test directory")
		}
		dir = parent
	}
	p := filepath.Join(dir, "..", "shared", "data", rel)
	if _, err := os.Stat(p); err != nil {
		t.Skipf("grader: shared data %s absent: %v", p, err)
	}
	return p
}

func readJSONL[T any](t testing.TB, path string) []T {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []T
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		var v T
		if err := json.Unmarshal([]byte(line), &v); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		out = append(out, v)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// judgeMV runs one record the way its upstream harness did.
func judgeMV(c mvCase) (bool, string) {
	cfg := Config{FloatRounding: c.Config.FloatRounding, AllowSetRelation: c.Config.AllowSetRelation}
	if c.Config.Strict != nil {
		cfg.NonStrict = !*c.Config.Strict
	}
	for _, m := range c.Config.MatchTypes {
		switch m {
		case "latex":
			cfg.Targets |= TargetLatex
		case "expr":
			cfg.Targets |= TargetExpr
		}
	}
	switch c.Config.Harness {
	case "compare_strings", "parse_verify_defaults":
		g, ok := cfg.Extract(c.Gold)
		if !ok {
			return false, "gold: nothing extracted"
		}
		p, ok := cfg.Extract(c.Prediction)
		if !ok {
			return false, "prediction: nothing extracted"
		}
		eq, why := cfg.equalWhy(g, p)
		return eq, why + " | gold=" + g + " | pred=" + p
	case "string_extraction":
		cfg.Choices = c.Config.Strings
		v := cfg.Grade(c.Prediction, c.Gold)
		return v.Correct, v.Reason + " | pred=" + v.Extracted
	case "sympy_expr_eq":
		eq, why := cfg.equalWhy(c.Gold, c.Prediction)
		return eq, why
	case "parse_only":
		cfg.Targets = TargetLatex
		if strings.Contains(c.Config.Extraction, "boxed_match_priority=100") {
			cfg.AnchorFirst = true
		}
		p, ok := cfg.Extract(c.Prediction)
		if !ok {
			return false, "prediction: nothing extracted"
		}
		eq, why := cfg.equalWhy(c.Gold, p)
		return eq, why + " | pred=" + p
	}
	return false, "unknown harness " + c.Config.Harness
}

// mvCasesFile is the Math-Verify suite, copied into testdata so that the
// test never depends on ../shared.
const mvCasesFile = "testdata/math_verify_cases.jsonl"

// TestMathVerifyCopy reports when ../shared/data/grader holds a version of
// the Math-Verify cases that differs from the testdata copy (skipped when
// ../shared is absent).
func TestMathVerifyCopy(t *testing.T) {
	shared, err := os.ReadFile(sharedData(t, "grader/math_verify_cases.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	local, err := os.ReadFile(mvCasesFile)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(shared, local) {
		t.Errorf("%s differs from ../shared/data/grader/math_verify_cases.jsonl: copy the shared file and update testdata/SOURCES.md", mvCasesFile)
	}
}

type disagreement struct {
	ID     string `json:"id"`
	Reason string `json:"reason"`
}

// TestMathVerifySuite reports the agreement rate with Math-Verify's own
// test cases and fails below 97% or when the list of deliberate
// disagreements (testdata/disagreements.jsonl) is out of date.
func TestMathVerifySuite(t *testing.T) {
	cases := readJSONL[mvCase](t, mvCasesFile)
	listed := map[string]string{}
	for _, d := range readJSONL[disagreement](t, filepath.Join("testdata", "disagreements.jsonl")) {
		if d.Reason == "" {
			t.Errorf("disagreement %s has no reason", d.ID)
		}
		listed[d.ID] = d.Reason
	}
	agree := 0
	for _, c := range cases {
		got, why := judgeMV(c)
		if got == c.Expected {
			agree++
			if _, ok := listed[c.ID]; ok {
				t.Errorf("%s: listed as a disagreement but now agrees (expected %v); remove it from testdata/disagreements.jsonl", c.ID, c.Expected)
			}
			continue
		}
		if _, ok := listed[c.ID]; !ok {
			t.Errorf("%s: got %v, expected %v (%s)\n  gold: %.300q\n  pred: %.300q", c.ID, got, c.Expected, why, c.Gold, c.Prediction)
		}
	}
	rate := float64(agree) / float64(len(cases))
	t.Logf("Math-Verify suite agreement: %d/%d = %.2f%% (%d deliberate disagreements listed)", agree, len(cases), 100*rate, len(listed))
	if rate < minAgreement {
		t.Fatalf("agreement %.2f%% below %.0f%%", 100*rate, 100*minAgreement)
	}
}
