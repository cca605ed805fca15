package data

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"unicode"
)

// inspectExamples is how many problems Inspect prints.
const inspectExamples = 3

// inspectWidth caps the characters of a problem or answer Inspect prints.
const inspectWidth = 300

// Inspect loads path with opt and prints its detected format, field
// mapping, record count, skipped rows, and the first three problems. It
// returns Load's error for a bad file (after printing nothing).
func Inspect(w io.Writer, path string, opt LoadOptions) error {
	ds, err := Load(path, opt)
	if err != nil {
		return err
	}
	m := ds.Mapping
	var b strings.Builder
	fmt.Fprintf(&b, "file:     %s\n", ds.Path)
	fmt.Fprintf(&b, "format:   %s\n", ds.Format)
	problem := m.ProblemField
	if m.ChatProblems > 0 {
		problem += " (last user message of a chat list)"
	}
	if m.SuffixesCut > 0 {
		problem += fmt.Sprintf(" (instruction suffix cut from %d)", m.SuffixesCut)
	}
	fmt.Fprintf(&b, "problem:  %s\n", problem)
	fmt.Fprintf(&b, "answer:   %s (%s)\n", m.AnswerField, answerFrom(m.AnswerFrom))
	id := m.IDField
	if id == "" {
		id = "(positional or object key)"
	}
	fmt.Fprintf(&b, "id:       %s\n", id)
	fmt.Fprintf(&b, "records:  %d read, %d kept, %d skipped", ds.Records, len(ds.Problems), len(ds.skipped))
	if ds.renamed > 0 {
		fmt.Fprintf(&b, ", %d kept with a repeated id renamed", ds.renamed)
	}
	b.WriteString("\n")
	for _, s := range ds.skipped {
		fmt.Fprintf(&b, "  skipped %s: %s\n", s.Source, s.Reason)
	}
	if ds.renamed > 0 {
		fmt.Fprintf(&b, "  first renamed: %s\n", ds.firstRenamed)
	}
	for _, o := range ds.others {
		fmt.Fprintf(&b, "  holding %s: %d (the first: %s)\n", o, o.Rows, o.First)
	}
	if ds.unbalanced > 0 {
		fmt.Fprintf(&b, "  kept with a gold answer of unbalanced braces, never graded right: %d (the first: %s)\n", ds.unbalanced, ds.firstUnbalanced)
	}
	for i, p := range ds.Problems[:min(inspectExamples, len(ds.Problems))] {
		fmt.Fprintf(&b, "\nexample %d  id=%s  source=%s\n", i+1, oneLine(p.ID), p.Source)
		fmt.Fprintf(&b, "  problem: %s\n", clip(p.Problem))
		fmt.Fprintf(&b, "  answer:  %s\n", clip(p.Answer))
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("data: inspect: %w", err)
	}
	return nil
}

func answerFrom(counts map[string]int) string {
	desc := map[string]string{"field": "value as is", "boxed": `last \boxed{}`, "####": "text after ####"}
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s: %d", desc[k], counts[k]))
	}
	return strings.Join(parts, ", ")
}

// clip shortens s to inspectWidth runes on one line (oneLine).
func clip(s string) string {
	s = oneLine(s)
	r := []rune(s)
	if len(r) > inspectWidth {
		return string(r[:inspectWidth]) + "…"
	}
	return s
}

// oneLine escapes the control characters of s but tabs, so that it
// prints on one line as it is: a newline as \n, a carriage return (of a
// CRLF text) as \r, which a terminal would return to the start of the
// line at, others as \xNN or \uNNNN (an escape sequence's ESC).
func oneLine(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t' || !unicode.IsControl(r):
			b.WriteRune(r)
		case r < 0x100:
			fmt.Fprintf(&b, `\x%02x`, r)
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
	}
	return b.String()
}
