// Command gradejsonl grades JSON-lines requests with spiral's grader, for
// scripts/grader-vs-mathverify.py (which runs it with go run). It is a
// test tool, not part of the spiral binary.
//
// Each input line is one request:
//
//	{"id": "...", "mode": "grade", "response": "...", "gold": "...",
//	 "config": {"targets": ["latex", "expr"], "float_rounding": 6,
//	            "strict": true, "allow_set_relation": false,
//	            "anchor_first": false, "choices": ["A", "B"]}}
//
// mode is "grade" (Config.Grade(response, gold)), "extract" (extract the
// answer from both and compare, as Math-Verify's compare_strings
// harness), "extract_pred" (extract from the response, compare with gold
// as written) or "equal" (Config.Equal(gold, response)). Each output line
// is {"id", "correct", "extracted", "source", "reason"}.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/spiral-rl/spiral/grader"
)

type request struct {
	ID       string `json:"id"`
	Mode     string `json:"mode"`
	Response string `json:"response"`
	Gold     string `json:"gold"`
	Config   struct {
		Targets          []string `json:"targets"`
		FloatRounding    int      `json:"float_rounding"`
		Strict           *bool    `json:"strict"`
		AllowSetRelation bool     `json:"allow_set_relation"`
		AnchorFirst      bool     `json:"anchor_first"`
		Choices          []string `json:"choices"`
	} `json:"config"`
}

type result struct {
	ID        string `json:"id"`
	Correct   bool   `json:"correct"`
	Extracted string `json:"extracted"`
	Source    string `json:"source"`
	Reason    string `json:"reason"`
}

func (r request) config() (grader.Config, error) {
	c := grader.Config{
		FloatRounding:    r.Config.FloatRounding,
		AllowSetRelation: r.Config.AllowSetRelation,
		AnchorFirst:      r.Config.AnchorFirst,
		Choices:          r.Config.Choices,
	}
	if r.Config.Strict != nil {
		c.NonStrict = !*r.Config.Strict
	}
	for _, t := range r.Config.Targets {
		switch t {
		case "latex":
			c.Targets |= grader.TargetLatex
		case "expr":
			c.Targets |= grader.TargetExpr
		default:
			return c, fmt.Errorf("%s: unknown target %q (allowed: latex, expr)", r.ID, t)
		}
	}
	if err := c.Validate(); err != nil {
		return c, fmt.Errorf("%s: %w", r.ID, err)
	}
	return c, nil
}

func grade(r request) (result, error) {
	c, err := r.config()
	if err != nil {
		return result{}, err
	}
	out := result{ID: r.ID}
	switch r.Mode {
	case "grade", "":
		v := c.Grade(r.Response, r.Gold)
		out.Correct, out.Extracted, out.Source, out.Reason = v.Correct, v.Extracted, v.Source.String(), v.Reason
	case "extract":
		g, ok1 := c.Extract(r.Gold)
		p, src := c.ExtractSource(r.Response)
		out.Extracted, out.Source = p, src.String()
		switch {
		case !ok1:
			out.Reason = "gold: nothing extracted"
		case src == grader.SourceNone:
			out.Reason = "prediction: nothing extracted"
		default:
			out.Correct = c.Equal(g, p)
			out.Reason = "gold=" + g
		}
	case "extract_pred":
		p, src := c.ExtractSource(r.Response)
		out.Extracted, out.Source = p, src.String()
		out.Correct = src != grader.SourceNone && c.Equal(r.Gold, p)
	case "equal":
		out.Correct = c.Equal(r.Gold, r.Response)
	default:
		return result{}, fmt.Errorf("%s: unknown mode %q (allowed: grade, extract, extract_pred, equal)", r.ID, r.Mode)
	}
	return out, nil
}

func run(in io.Reader, out io.Writer) error {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	enc := json.NewEncoder(out)
	enc.SetEscapeHTML(false)
	for line := 1; sc.Scan(); line++ {
		var r request
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return fmt.Errorf("gradejsonl: line %d: %w", line, err)
		}
		res, err := grade(r)
		if err != nil {
			return fmt.Errorf("gradejsonl: line %d: %w", line, err)
		}
		if err := enc.Encode(res); err != nil {
			return err
		}
	}
	return sc.Err()
}

func main() {
	w := bufio.NewWriter(os.Stdout)
	err := run(os.Stdin, w)
	if ferr := w.Flush(); err == nil {
		err = ferr
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
