package grader

import (
	"fmt"
	"strings"
)

// Limits that bound the work done per call. They are constants, not Config
// fields, so that no configuration can make grading unbounded.
const (
	// MaxResponseBytes is the longest response Extract reads; longer
	// responses are cut to their final MaxResponseBytes bytes (the answer
	// sits at the end).
	MaxResponseBytes = 256 << 10
	// MaxAnswerBytes is the longest answer text that is parsed; longer
	// answers are compared as normalized strings only.
	MaxAnswerBytes = 4096
	// MaxSteps is the step budget of one stage of a call: finding the
	// answer in a response (all candidates parsed together), finding it in
	// a gold text, and comparing the two (parsing and evaluation; both
	// directions of Equivalent together). One step is one token consumed,
	// one node evaluated or one 64-bit word of exact arithmetic (eight for
	// fractions), about 100 ns of work; the most any test answer needs is
	// about 10,000 (1/2006! against 1/2004!).
	MaxSteps = 50000
	// MaxDepth is the deepest nesting of groups and operators parsed.
	MaxDepth = 64
	// MaxBits is the largest integer (numerator or denominator) kept
	// exact; beyond it arithmetic continues in complex128.
	MaxBits = 1 << 16
	// MaxElements caps the members of a list, set, tuple or matrix and the
	// alternatives produced by expanding \pm.
	MaxElements = 256
	// NumericPoints is how many random points expressions with free
	// variables are evaluated at.
	NumericPoints = 5
	// NumericTolerance is the relative tolerance of numeric comparisons
	// without decimal literals: |a-b| <= NumericTolerance * max(1,|a|,|b|).
	NumericTolerance = 1e-8
	// DefaultFloatRounding is the number of decimal places used when a
	// decimal literal is involved and Config.FloatRounding is zero.
	DefaultFloatRounding = 6
)

// Target selects the kinds of answer text Extract looks for.
type Target uint8

const (
	// TargetLatex finds \boxed{...}, "final answer is" anchors and LaTeX
	// math spans ($...$, $$...$$, \(...\), \[...\]).
	TargetLatex Target = 1 << iota
	// TargetExpr finds plain numbers and simple fractions in running text,
	// resolving thousands separators and decimal commas.
	TargetExpr
)

// Config holds the grading options. Its zero value is the default used by
// Grade: both targets, fallback to the last LaTeX span or number, strict
// variable names, 6 decimal places for decimal literals, the later of
// \boxed{} and "final answer is" preferred, intervals not matched by
// inequalities.
type Config struct {
	// Targets selects the extractors; zero means TargetLatex|TargetExpr.
	Targets Target
	// NoFallback, when true, accepts only \boxed{...} answers and explicit
	// answer sentences ("the final answer is ...", "Answer: ...", "####
	// ..."; Source SourceBoxed or SourceSentence): a response without them
	// is graded incorrect. When false (default), the last LaTeX span or
	// number is used instead (SourceFallback).
	NoFallback bool
	// AnchorFirst, when true, prefers a "final answer is ..." sentence over
	// \boxed{...} wherever they stand (Math-Verify's
	// boxed_match_priority=100). Default false: the later of the two wins.
	AnchorFirst bool
	// FloatRounding is the number of decimal places numbers are rounded to
	// when either side contains a decimal literal; zero means 6. A gold
	// written to more places (a decimal literal, or the exact value of
	// scientific notation such as 1.5 \times 10^{-7}, but not of a power
	// of a decimal such as 1.05^{10}) raises it to those places, up to
	// the 15th significant digit (1.5 \times 10^{-20} and
	// 0.000000000000000000015: 21).
	FloatRounding int
	// NonStrict, when true, lets variables be renamed: f(y) equals f(x).
	// Default false (variable names must match).
	NonStrict bool
	// AllowSetRelation, when true, accepts an inequality answer for an
	// interval gold (x >= 5 for [5, \infty)). An inequality gold always
	// accepts the interval answer. Default false.
	AllowSetRelation bool
	// Choices, when non-empty, switches Extract to multiple-choice mode:
	// the answer is one of these strings (usually letters "A".."E"),
	// found in a box or an answer sentence in the order Extract takes
	// them, then (unless NoFallback) as a letter in the text. An answer
	// sentence that joins several choices by "and", "or" or commas
	// answers them all, "A, C" ("The answers are (A) and (C)."), which
	// a gold of one letter does not equal.
	Choices []string
}

// Verdict is the result of grading one response.
type Verdict struct {
	// Correct reports whether the extracted answer equals the gold answer.
	Correct bool
	// Extracted is the answer text found in the response ("" if none).
	Extracted string
	// Source says how the answer was found: SourceBoxed, SourceSentence,
	// SourceFallback, or SourceNone when nothing was found.
	Source Source
	// Reason says briefly why: "no answer found", "equal: exact",
	// "not equal", and so on.
	Reason string
}

// Validate reports a configuration error: Targets must be a combination
// of TargetLatex and TargetExpr, FloatRounding must lie in 0..15, and
// Choices must be non-empty strings.
func (c Config) Validate() error {
	if c.Targets&^(TargetLatex|TargetExpr) != 0 {
		return fmt.Errorf("grader: Targets %#x: allowed are TargetLatex (1), TargetExpr (2) or both", c.Targets)
	}
	if c.FloatRounding < 0 || c.FloatRounding > 15 {
		return fmt.Errorf("grader: FloatRounding %d: allowed are 0 (default 6) to 15", c.FloatRounding)
	}
	for i, ch := range c.Choices {
		if strings.TrimSpace(ch) == "" {
			return fmt.Errorf("grader: Choices[%d] is empty", i)
		}
	}
	return nil
}

func (c Config) targets() Target {
	if c.Targets == 0 {
		return TargetLatex | TargetExpr
	}
	return c.Targets
}

func (c Config) rounding() int {
	if c.FloatRounding <= 0 {
		return DefaultFloatRounding
	}
	if c.FloatRounding > 15 {
		return 15
	}
	return c.FloatRounding
}

// Grade grades response against gold with the default Config.
func Grade(response, gold string) Verdict { return Config{}.Grade(response, gold) }

// Grade extracts the answer from response, normalizes both it and gold and
// compares them with gold in the gold role. Gold may be a bare answer
// ("3/4"), LaTeX ("$\frac34$") or a whole worked solution ending in
// \boxed{...}.
func (c Config) Grade(response, gold string) Verdict {
	pred, src := c.ExtractSource(response)
	if src == SourceNone {
		return Verdict{Reason: "no answer found"}
	}
	g := c.ExtractGold(gold)
	if strings.TrimSpace(g) == "" {
		return Verdict{Extracted: pred, Source: src, Reason: "empty gold answer"}
	}
	eq, why := c.equalWhy(g, pred)
	return Verdict{Correct: eq, Extracted: pred, Source: src, Reason: why}
}

// Equal reports whether answer equals gold under the default Config; both
// are answer texts (not whole responses).
func Equal(gold, answer string) bool { return Config{}.Equal(gold, answer) }

// Equal reports whether answer equals gold; both are answer texts. They
// are normalized first, so Equal(Normalize(a), b) == Equal(a, b).
func (c Config) Equal(gold, answer string) bool {
	eq, _ := c.equalWhy(gold, answer)
	return eq
}

// Equivalent reports whether two extracted answers mean the same thing,
// for clustering answers in majority voting. It is symmetric: true when
// either answer, taken as gold, accepts the other, with set relations
// allowed both ways.
func Equivalent(a, b string) bool { return Config{}.Equivalent(a, b) }

// Equivalent is the symmetric comparison of Equivalent under c.
func (c Config) Equivalent(a, b string) bool {
	c.AllowSetRelation = true
	bud := &budget{left: MaxSteps}
	if eq, _ := c.compare(a, b, bud); eq {
		return true
	}
	eq, _ := c.compare(b, a, bud)
	return eq
}

// equalWhy compares gold and answer within a fresh budget and says why.
func (c Config) equalWhy(gold, answer string) (bool, string) {
	return c.compare(gold, answer, &budget{left: MaxSteps})
}

// compare compares gold and answer within the budget b and says why.
func (c Config) compare(gold, answer string, b *budget) (bool, string) {
	if len(gold) > MaxResponseBytes {
		gold = gold[:MaxResponseBytes]
	}
	if len(answer) > MaxResponseBytes {
		answer = answer[len(answer)-MaxResponseBytes:]
	}
	if len(c.Choices) > 0 {
		if strings.EqualFold(choiceKey(gold), choiceKey(answer)) {
			return true, "equal: choice"
		}
		return false, "not equal: choice"
	}
	ng, na := Normalize(gold), Normalize(answer)
	if ng == "" || na == "" {
		return false, "empty answer"
	}
	if ng == na {
		return true, "equal: string"
	}
	if g := choiceKey(ng); len(g) == 1 && g[0] >= 'A' && g[0] <= 'J' {
		if l, _ := choiceLabel(na); l != "" {
			return l == g, "choice letter"
		}
	} else if l, n := choiceLabel(na); l != "" && strings.TrimSpace(na[n:]) != "" {
		// "(B) 17" answers the value 17.
		na = strings.TrimSpace(na[n:])
		if ng == na {
			return true, "equal: string after choice label"
		}
	}
	if k := textKey(ng); k != "" && k == textKey(na) {
		return true, "equal: text"
	}
	if len(ng) > MaxAnswerBytes || len(na) > MaxAnswerBytes {
		return false, "not equal: answer too long to parse"
	}
	gn, err := parseAnswer(ng, b)
	if err != nil {
		return false, "not equal: gold unparsable: " + err.Error()
	}
	an, err := parseAnswer(na, b)
	if err != nil {
		return false, "not equal: answer unparsable: " + err.Error()
	}
	cm := &comparer{cfg: c, b: b}
	if cm.equal(gn, an) {
		return true, "equal: " + cm.how()
	}
	if b.left <= 0 {
		return false, "not equal: step budget exhausted"
	}
	return false, "not equal"
}

// choiceLabel returns X and the label's length when s (left-trimmed
// first) starts with a choice label for letter X in A..J: "(X)", "X.",
// "X)" or "X:" (these three followed by a space, a line break or the
// end), or X alone at the end of s or of its line, possibly inside
// \text{}, \textbf{}, \mathbf{} or \mathrm{} (spaces allowed before the closing brace) or
// between ** marks, as in "(C) 12", "C. x = 42", "\textbf{(B)} 17",
// "\textbf{(B) }17", "C", "**C**".
func choiceLabel(s string) (string, int) {
	i := len(s) - len(strings.TrimLeft(s, " "))
	open := ""
	for _, p := range []string{`\text{`, `\textbf{`, `\mathbf{`, `\mathrm{`, "**", "{"} {
		if strings.HasPrefix(s[i:], p) {
			open = p
			i += len(p)
			break
		}
	}
	var letter string
	paren := false
	switch {
	case i+3 <= len(s) && s[i] == '(' && s[i+2] == ')' && s[i+1] >= 'A' && s[i+1] <= 'J':
		letter, i, paren = s[i+1:i+2], i+3, true
	case i+2 <= len(s) && s[i] >= 'A' && s[i] <= 'J' && strings.IndexByte(".):", s[i+1]) >= 0:
		letter, i = s[i:i+1], i+2
	case i < len(s) && s[i] >= 'A' && s[i] <= 'J' && bareLetterEnd(s[i+1:], open):
		// "C" ending the text or its line, "**C**": a letter alone.
		letter = s[i : i+1]
		i++
		if open == "" {
			i = len(s) - len(strings.TrimLeft(s[i:], "*")) // "C**" after a trimmed "**"
		}
	default:
		return "", 0
	}
	switch open {
	case "**":
		if !strings.HasPrefix(s[i:], "**") {
			return "", 0
		}
		i += 2
	case "":
	default:
		// AoPS writes \textbf{(C) }12, with a space before the brace.
		for i < len(s) && s[i] == ' ' {
			i++
		}
		if i >= len(s) || s[i] != '}' {
			return "", 0
		}
		i++
	}
	if !paren && i < len(s) && s[i] != ' ' && s[i] != '\n' && s[i] != '\\' && s[i] != '$' {
		return "", 0
	}
	return letter, i
}

// bareLetterEnd reports whether rest, the text after a capital letter,
// makes the letter a choice label without a mark after it: the wrapper
// open closes it ("**" or a brace, after optional spaces), or without a
// wrapper rest is empty or starts a new line, after the closing ** of
// bold marks whose opening ones the answer sentence trimmed ("C**").
func bareLetterEnd(rest, open string) bool {
	switch open {
	case "":
		r := strings.TrimLeft(rest, "*")
		return r == "" || r[0] == '\n'
	case "**":
		return strings.HasPrefix(rest, "**")
	}
	return strings.HasPrefix(strings.TrimLeft(rest, " "), "}")
}
