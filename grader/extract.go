package grader

import (
	"fmt"
	"math/big"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// chatMarkers end a response: text after a chat-template marker belongs to
// a turn the model should not have written.
var chatMarkers = []string{"<|im_start|>", "<|im_end|>", "<|endoftext|>", "<|eot_id|>", "<|start_header_id|>"}

// anchorKind selects "final answer is"/"final answer:" phrases (strong)
// or other "answer is"/"answer:" phrases (weak).
type anchorKind bool

const (
	strongAnchor anchorKind = true
	weakAnchor   anchorKind = false
)

// findAnchors returns [start, end) of every anchor phrase of the given
// kind in s ("answer is", "answer:", their plurals "answers are" and
// "answers:", a heading, "answer to ... is"), matched case-insensitively;
// end is where the answer starts.
func findAnchors(s string, kind anchorKind) [][2]int {
	var out [][2]int
	if kind == strongAnchor {
		// GSM8K style: "#### 42".
		for i := 0; ; {
			j := strings.Index(s[i:], "####")
			if j < 0 {
				break
			}
			if !heading(s[i+j+4:]) {
				out = append(out, [2]int{i + j, i + j + 4})
			}
			i += j + 4
		}
	}
	const word = "answer"
	for i := 0; i+len(word) <= len(s); {
		j := indexFold(s[i:], word)
		if j < 0 {
			break
		}
		p := i + j
		e := p + len(word)
		// "answers are", "Answers:": the plural anchors as the singular.
		plural := e < len(s) && (s[e] == 's' || s[e] == 'S') && (e+1 == len(s) || !isLetter(s[e+1]))
		if plural {
			e++
		}
		i = e
		k := e
		for k < len(s) && (s[k] == ' ' || s[k] == '*') {
			k++
		}
		verb := "is"
		if plural {
			verb = "are"
		}
		var end int
		switch {
		case k < len(s) && s[k] == ':':
			end = k + 1
		case k+len(verb) <= len(s) && strings.EqualFold(s[k:k+len(verb)], verb) && (k+len(verb) == len(s) || !isLetter(s[k+len(verb)])):
			end = k + len(verb)
			m := end
			for m < len(s) && s[m] == ' ' {
				m++
			}
			if m < len(s) && s[m] == ':' {
				end = m + 1
			}
		case k < len(s) && (s[k] == '\n' || s[k] == '\r') && answerHeading(s[:p]) && bareLine(strings.TrimLeft(s[k:], " \t\r\n*")):
			// "**Final Answer**\n12": a heading for the bare line after
			// it (not for a paragraph: "## Answer\nWe compute ...").
			end = k
		default:
			e, ok := answerToIs(s, k)
			if !ok {
				continue
			}
			end = e
		}
		start := p
		pre := strings.TrimRight(s[max(0, p-10):p], " *")
		final := len(pre) >= 5 && strings.EqualFold(pre[len(pre)-5:], "final") &&
			(len(pre) == 5 || !isLetter(pre[len(pre)-6]))
		if final {
			start = p - (len(s[max(0, p-10):p]) - len(pre)) - 5
		}
		if final == bool(kind) {
			out = append(out, [2]int{start, end})
		}
	}
	sort.Slice(out, func(a, b int) bool { return out[a][0] < out[b][0] })
	return out
}

// answerHeading reports whether before, the text before "answer" up to
// it, makes its line a heading: Markdown marks (#, *) and spaces, and
// "final", alone ("## Final Answer", "**Answer**").
func answerHeading(before string) bool {
	line := before[strings.LastIndexByte(before, '\n')+1:]
	line = strings.TrimRight(line, " *")
	if len(line) >= 5 && strings.EqualFold(line[len(line)-5:], "final") {
		line = line[:len(line)-5]
	}
	return strings.Trim(line, " *#") == ""
}

// answerToIs reports whether s[k:], the text after "answer", names in
// words what the answer answers and then says "is": "to" or "for", at
// most maxAnswerTo bytes of words (letters, spaces, parentheses,
// apostrophes, hyphens) and "is": "answer to the problem is", "answer
// for part (b) is", but not "answer to 2 + 2 is", a step's answer. It
// returns where the answer starts (after an optional colon).
func answerToIs(s string, k int) (int, bool) {
	t := s[k:min(len(s), k+maxAnswerTo)]
	var n int
	switch {
	case len(t) > 3 && strings.EqualFold(t[:3], "to "):
		n = 3
	case len(t) > 4 && strings.EqualFold(t[:4], "for "):
		n = 4
	default:
		return 0, false
	}
	for i := n; i+3 <= len(t); i++ {
		switch c := t[i]; {
		case c == ' ':
			if strings.EqualFold(t[i+1:i+3], "is") && (i+3 == len(s)-k || !isLetter(s[k+i+3])) {
				end := k + i + 3
				m := end
				for m < len(s) && s[m] == ' ' {
					m++
				}
				if m < len(s) && s[m] == ':' {
					end = m + 1
				}
				return end, true
			}
		case isLetter(c) || c == '(' || c == ')' || c == '\'' || c == '-':
		default:
			return 0, false
		}
	}
	return 0, false
}

// maxAnswerTo bounds the words answerToIs reads between "answer to" and
// "is", so that the scan of a text's anchors stays linear.
const maxAnswerTo = 64

// heading reports whether rest, the text after "####", makes the line
// a Markdown heading rather than GSM8K's "#### 72": its first word
// (after more #, spaces, * and a "1." or "2)" numbering) has two or more
// letters, as in "#### Step 2: ...", "#### 1. Setting up", "##### Part 2",
// and is no constant or function applied with "(" ("#### pi", "####
// sqrt(51)" are answers).
func heading(rest string) bool {
	if len(rest) > 24 {
		rest = rest[:24] // the first word's start is enough; keep the scan linear
	}
	if nl := strings.IndexByte(rest, '\n'); nl >= 0 {
		rest = rest[:nl]
	}
	t := strings.TrimLeft(rest, "# *")
	d := 0
	for d < len(t) && isDigit(t[d]) {
		d++
	}
	if d > 0 {
		if d+1 >= len(t) || t[d] != '.' && t[d] != ')' || t[d+1] != ' ' {
			return false // a number: the answer
		}
		t = strings.TrimLeft(t[d+2:], " *")
	}
	w := letterEnd(t, 0)
	if word := strings.ToLower(t[:w]); plainConsts[word] || funcWords[word] && w < len(t) && t[w] == '(' {
		return false // "#### pi", "#### sqrt(51)": math, the answer
	}
	return w >= 2
}

// indexFold is strings.Index for an ASCII lower-case needle, ignoring
// the case of s.
func indexFold(s, lower string) int {
	n := len(lower)
	for i := 0; i+n <= len(s); i++ {
		c := s[i] | 0x20
		if c != lower[0] {
			continue
		}
		ok := true
		for k := 1; k < n; k++ {
			if s[i+k]|0x20 != lower[k] {
				ok = false
				break
			}
		}
		if ok {
			return i
		}
	}
	return -1
}

// Source says where in a response Extract found the answer.
type Source uint8

const (
	// SourceNone means that no answer was found.
	SourceNone Source = iota
	// SourceBoxed means the last group of \boxed{...} or \fbox{...}.
	SourceBoxed
	// SourceSentence means an explicit answer sentence: "the final answer
	// is ...", "Final Answer: ...", GSM8K's "#### ...", or the weaker "the
	// answer is ..." / "Answer: ...".
	SourceSentence
	// SourceFallback means the last LaTeX math span or plain number of the
	// response (used only when Config.NoFallback is false), or in
	// multiple-choice mode the last choice letter marked as one ("(B)",
	// "B.") or ending the response, else the first standing alone.
	SourceFallback
)

// String returns "none", "boxed", "sentence" or "fallback".
func (s Source) String() string {
	switch s {
	case SourceNone:
		return "none"
	case SourceBoxed:
		return "boxed"
	case SourceSentence:
		return "sentence"
	case SourceFallback:
		return "fallback"
	}
	return fmt.Sprintf("Source(%d)", uint8(s))
}

// Extract finds the answer in a model response with the default Config.
func Extract(response string) (string, bool) { return Config{}.Extract(response) }

// Extract finds the answer in a model response. It takes, in order:
//
//  1. whichever comes later of the last group of \boxed{...} / \fbox{...}
//     (\framebox{...} too; boxes separated only by spacing, punctuation,
//     or a few words with "and", "or" or a comma in one sentence are joined with ", "; empty
//     boxes after the last one that holds something are skipped) and the
//     last "final answer is ..." / "Final Answer: ..." (or a "Final
//     Answer" heading over a bare line, see answerHeading)
//     / "#### ..." sentence (GSM8K's "#### 72", not a Markdown heading
//     such as "#### Step 2: ..."; with AnchorFirst the sentence always
//     wins);
//  2. the last "the answer is ..." / "Answer: ..." sentence ("the answer
//     to the problem is ...", "the answers are ...", "Answers: ..." too,
//     see findAnchors);
//  3. unless NoFallback, the last LaTeX math span or plain number (see
//     Targets); spans separated only by spacing on one line, punctuation,
//     "and" or "or" are joined, but not across other words, which make
//     them steps, nor equations of different left-hand sides ("$k-1=1$
//     and $k=2$" answers k=2).
//
// Within a sentence the last math span or number is taken, before a
// clause that explains it (", which ...", " (since ...)", " because
// ...") when there is
// one; a sentence of bare LaTeX, or of plain-text math that is a tuple,
// an interval or an expression with a variable (see plainAnswer), is
// taken whole. Text after a chat-template marker such as <|im_start|> is ignored,
// and when the response holds a </think> tag the text after it is
// searched first. The bool is false when nothing was found. ExtractSource
// also says which of the three steps found the answer.
func (c Config) Extract(response string) (string, bool) {
	a, src := c.ExtractSource(response)
	return a, src != SourceNone
}

// ExtractSource is Extract that also reports where the answer was found;
// the answer is "" exactly when the Source is SourceNone.
func (c Config) ExtractSource(response string) (string, Source) {
	s := cleanResponse(response)
	if len(c.Choices) > 0 {
		return c.extractChoice(s)
	}
	b := &budget{left: MaxSteps}
	if i := strings.LastIndex(s, "</think>"); i >= 0 {
		if a, src := c.extractFrom(s[i+len("</think>"):], b); src != SourceNone {
			return a, src
		}
	}
	return c.extractFrom(s, b)
}

// ExtractGold returns the answer text of a gold answer: the last boxed
// group when it has one, else the answer Extract finds when it holds LaTeX
// math delimiters, else the whole (trimmed) string.
func (c Config) ExtractGold(gold string) string {
	s := cleanResponse(gold)
	if len(c.Choices) > 0 {
		return strings.TrimSpace(s)
	}
	if b := lastBoxGroup(s); b != "" {
		return b
	}
	if i := strings.LastIndex(s, "\n#### "); i >= 0 {
		return strings.TrimSpace(s[i+len("\n#### "):])
	}
	if strings.ContainsAny(s, "$") || strings.Contains(s, `\(`) || strings.Contains(s, `\[`) {
		cc := c
		cc.Targets = TargetLatex
		cc.NoFallback = false
		if a, src := cc.extractFrom(s, &budget{left: MaxSteps}); src != SourceNone {
			return a
		}
	}
	return strings.TrimSpace(s)
}

func cleanResponse(s string) string {
	if len(s) > MaxResponseBytes {
		s = s[len(s)-MaxResponseBytes:]
	}
	for _, m := range chatMarkers {
		if i := strings.Index(s, m); i >= 0 {
			s = s[:i]
		}
	}
	return frameboxes(dropRowSpacing(collapseEscapes(s)))
}

// extractFrom runs the three steps of Extract on s, parsing candidates
// within the budget b.
func (c Config) extractFrom(s string, b *budget) (string, Source) {
	t := c.targets()
	box, boxEnd := "", -1
	if t&TargetLatex != 0 {
		box, boxEnd = lastBoxGroupAt(s)
	}
	// The later of the last box and the last "final answer is" wins.
	if a, at, src := c.anchored(s, strongAnchor, b); src != SourceNone && (box == "" || c.AnchorFirst || at >= boxEnd) {
		return a, src
	}
	if box != "" {
		return box, SourceBoxed
	}
	if a, _, src := c.anchored(s, weakAnchor, b); src != SourceNone {
		return a, src
	}
	if c.NoFallback {
		return "", SourceNone
	}
	// The last candidate almost always sits near the end: search the
	// final fallbackWindow bytes first, from a line start so that inline
	// math is not cut in half.
	if len(s) > 2*fallbackWindow {
		if nl := strings.IndexByte(s[len(s)-fallbackWindow:], '\n'); nl >= 0 {
			if a, ok := c.lastCandidate(s[len(s)-fallbackWindow+nl+1:], false, b); ok {
				return a, SourceFallback
			}
		}
	}
	if a, ok := c.lastCandidate(s, true, b); ok {
		return a, SourceFallback
	}
	return "", SourceNone
}

// maxTries is how many fallback candidates are parsed before giving up.
const maxTries = 8

// fallbackWindow is how many final bytes the fallback searches first.
const fallbackWindow = 8 << 10

// anchored returns the answer in the sentence after the last phrase
// of the given kind (among the last three that hold an answer), where
// that phrase starts, and SourceSentence (SourceBoxed when the answer is
// a box inside the sentence), or SourceNone. A sentence with LaTeX commands
// but no math delimiters ("Answer: \frac{14}{3}") is tried whole first, so
// that its answer is not read as its last number, and so is one of plain
// math that plainAnswer accepts ("Answer: (2, 4)", "The answer is 2k+2.").
func (c Config) anchored(s string, kind anchorKind, b *budget) (string, int, Source) {
	locs := findAnchors(s, kind)
	for k := len(locs) - 1; k >= 0 && k >= len(locs)-3; k-- {
		if a, ok := answerInMath(s, locs[k][1], b); ok {
			return a, locs[k][0], SourceSentence
		}
		rest := s[locs[k][1]:]
		if t := strings.TrimLeft(rest, " "); strings.HasPrefix(t, "}") {
			// "\textbf{Answer:} \frac{14}{3}": the answer follows the
			// group that holds the phrase.
			rest = t[1:]
		}
		rest = ruledOut(rest)
		if t := strings.TrimLeft(rest, " \t\r*"); strings.HasPrefix(t, "\n") {
			// "**Answer:**\n\n12": the answer starts after the blank
			// lines that set it off, when its line holds no words
			// ("To find the answer:\n\nFirst, ..." starts a text).
			if u := strings.TrimLeft(t, " \t\r\n*"); bareLine(u) {
				rest = u
			}
		}
		if t := strings.TrimLeft(rest, " *"); t != "" {
			if l, n := choiceLabel(t); l != "" {
				// "Answer: (B) 17": keep the choice label with the
				// sentence after it, for Equal to read either; a label
				// that ends its line is the answer alone.
				tail := t[n:]
				if strings.HasPrefix(strings.TrimLeft(tail, " \t"), "\n") {
					tail = ""
				}
				return strings.TrimSpace(t[:n] + tail[:sentenceEnd(tail)]), locs[k][0], SourceSentence
			}
		}
		span := rest[:sentenceEnd(rest)]
		e := clauseEnd(span)
		if c.targets()&TargetExpr != 0 {
			// "Answer: (2, 4)", "The answer is 2k+2.": plain-text math
			// read whole, not as its last number.
			if a, ok := plainAnswer(span[:e]); ok && parses(a, b) {
				return a, locs[k][0], SourceSentence
			}
		}
		if after := strings.Trim(rest[len(span):], " \t\n*.!?"); k == len(locs)-1 && (after == "" || strings.EqualFold(after, minervaClosing)) {
			// "Answer: Evelyn", "The answer is east.": a word alone
			// ending a text without a box is a text answer ("The final
			// answer is boxed." is not), unless the clause after it
			// gives the answer's math ("Evelyn with $5$ points").
			if a, ok := wordAnswer(span[:e]); ok && keepsWord(a, span[e:]) && !strings.Contains(s, `\boxed`) && !strings.Contains(s, `\fbox`) {
				return a, locs[k][0], SourceSentence
			}
		}
		if e < len(span) {
			// "The answer is 42, which is 6 times 7": the answer is
			// before the explanation, not its last number.
			if a, ok := c.lastCandidate(span[:e], true, b); ok {
				return a, locs[k][0], SourceSentence
			}
		}
		if a, ok := c.lastCandidate(span, true, b); ok {
			return a, locs[k][0], SourceSentence
		}
		if c.targets()&TargetLatex != 0 {
			if bx := lastBoxGroup(span); bx != "" {
				return bx, locs[k][0], SourceBoxed
			}
		}
	}
	return "", -1, SourceNone
}

// answerInMath returns the answer after an answer phrase that is text in
// math, "$\text{Answer: }\frac{14}{3}$" or "\[\textbf{Final answer:}\
// x + 1\]", where at marks the phrase's end: the rest of that math after
// the text group, read whole as a box is (not as its last number, 3), when
// it parses.
func answerInMath(s string, at int, b *budget) (string, bool) {
	t := strings.TrimLeft(s[at:], " ")
	if !strings.HasPrefix(t, "}") {
		return "", false
	}
	for _, sp := range mathSpans(s) {
		if sp.start < at && at < sp.end {
			// An opening and its closing delimiter are as long.
			inner := sp.end - (sp.end-sp.start-len(sp.text))/2
			a := strings.TrimSpace(s[len(s)-len(t)+1 : inner])
			return a, a != "" && parses(a, b)
		}
	}
	return "", false
}

// ruledOut returns rest, the text after an answer phrase, without the
// value it rules out when it opens with "not" and a number or math span:
// that value is no answer. What follows the value answers only when it
// turns to the answer with "but", "it is", "rather" or "instead" (after
// an optional comma or semicolon): "The answer is not 12, but 13.", "...
// not $12$; it is $13$."; otherwise the sentence answers nothing ("not
// 12.", "not 12 or 13.", "not 12, since 12 > 10."). Other text is returned
// as is ("not an integer, so it is 3.5").
func ruledOut(rest string) string {
	t := strings.TrimLeft(rest, " *")
	if len(t) < 4 || !strings.EqualFold(t[:4], "not ") {
		return rest
	}
	u := strings.TrimLeft(t[4:], " ")
	end := -1
	if sp := mathSpans(u[:min(len(u), maxPlainAnswer)]); len(sp) > 0 && sp[0].start == 0 {
		end = sp[0].end
	} else {
		j := 0
		if strings.HasPrefix(u, "-") {
			j = 1
		} else if strings.HasPrefix(u, "−") {
			j = len("−")
		}
		if j < len(u) && isDigit(u[j]) {
			_, end = scanNumber(u, j, false)
		}
	}
	if end < 0 {
		return rest
	}
	w := strings.TrimLeft(strings.TrimLeft(strings.TrimLeft(u[end:], " "), ",;"), " ")
	for _, turn := range []string{"but ", "it is ", "it's ", "rather ", "instead "} {
		if len(w) >= len(turn) && strings.EqualFold(w[:len(turn)], turn) {
			return w[len(turn):]
		}
	}
	return ""
}

// bareLine reports whether the first line of s holds no word of three or
// more letters outside math spans and LaTeX command names: "12", "$12$",
// "x = 3", "(2, 4)", "12 cm", "\[" do; "First, 3 + 4 = 7." does not.
func bareLine(s string) bool {
	if nl := strings.IndexByte(s, '\n'); nl >= 0 {
		s = s[:nl]
	}
	return firstOutsideMath(s, func(i int) bool {
		return isLetter(s[i]) && (i == 0 || !isLetter(s[i-1]) && s[i-1] != '\\') && letterEnd(s, i)-i >= 3
	}) == len(s)
}

// minervaClosing is the sentence Minerva-style answers end with ("Final
// Answer: The final answer is $5$. I hope it is correct."), which may
// follow a word answer that ends the text.
const minervaClosing = "I hope it is correct"

// wordAnswer returns s, trimmed of spacing, '*', quotes and punctuation,
// when it is one word of two or more letters, after an optional article,
// that can be a text answer: not a number word ("five" leaves the
// answer to the last number) nor filler ("as follows", "below", "not").
// MATH-500 writes five golds so: \text{Evelyn}, \text{east},
// \text{even}, \text{ellipse}, \text{Navin}.
func wordAnswer(s string) (string, bool) {
	t := strings.Trim(s, " \t\n*`\"'.,;:!?")
	f := strings.Fields(t)
	if len(f) == 2 && articles[strings.ToLower(f[0])] {
		f = f[1:]
	}
	if len(f) != 1 || len(f[0]) < 2 {
		return "", false
	}
	for i := 0; i < len(f[0]); i++ {
		if !isLetter(f[0][i]) {
			return "", false
		}
	}
	if w := strings.ToLower(f[0]); notWordAnswers[w] || plainConsts[w] || funcWords[w] {
		return "", false
	}
	return t, true
}

// keepsWord reports whether the clause that follows the word answer word
// in its sentence leaves the word the answer: it holds no math span or
// digit, or it opens with "because", "since" or "as", which give the
// word's reason ("even, since $f(-x) = f(x)$"), or with "where" or "when"
// and does not name the word again, which sets the word in place or time
// ("east, where the sun rises at 6 am"; "theta, where $\theta = \pi/4$"
// restates it). A clause holding math that describes the word ("Evelyn
// with $5$ points", "John, who has $12$ apples", "Matrix with fractions:
// $\frac{1}{2}$") leaves the answer to that math.
func keepsWord(word, clause string) bool {
	if !strings.ContainsAny(clause, "$0123456789") && !strings.Contains(clause, `\(`) && !strings.Contains(clause, `\[`) {
		return true
	}
	c := strings.TrimLeft(clause, " \t\n,;(")
	w := letterEnd(c, 0)
	switch strings.ToLower(c[:w]) {
	case "because", "since", "as":
		return true
	case "where", "when":
		f := strings.Fields(word) // "an ellipse": the word after its article
		return !strings.Contains(strings.ToLower(c[w:]), strings.ToLower(f[len(f)-1]))
	}
	return false
}

// articles may stand before a word answer: "an ellipse".
var articles = map[string]bool{"a": true, "an": true, "the": true}

// notWordAnswers are the words wordAnswer refuses: number words, whose
// value a text key would lose, and words that announce or qualify an
// answer rather than state it.
var notWordAnswers = map[string]bool{
	"zero": true, "one": true, "two": true, "three": true, "four": true, "five": true, "six": true,
	"seven": true, "eight": true, "nine": true, "ten": true, "eleven": true, "twelve": true,
	"thirteen": true, "fourteen": true, "fifteen": true, "sixteen": true, "seventeen": true,
	"eighteen": true, "nineteen": true, "twenty": true, "thirty": true, "forty": true, "fifty": true,
	"sixty": true, "seventy": true, "eighty": true, "ninety": true, "hundred": true, "thousand": true,
	"million": true, "billion": true, "half": true,
	"as": true, "follows": true, "following": true, "below": true, "above": true, "here": true,
	"not": true, "therefore": true, "thus": true, "hence": true, "so": true, "then": true,
	"this": true, "that": true, "it": true, "is": true, "clear": true, "simple": true,
	"obvious": true, "given": true, "shown": true, "correct": true, "incorrect": true,
	"wrong": true, "right": true, "indeed": true, "again": true, "same": true, "unclear": true,
	"nothing": true, // "nothing but 12"
}

// maxPlainAnswer is the longest answer sentence plainAnswer reads whole.
const maxPlainAnswer = 200

// plainConsts are the words a plain-text answer may hold anywhere: the
// constants the parser reads without a backslash. The parser's function
// words (funcWords: sqrt, sin, ...) are allowed only right before "(".
var plainConsts = map[string]bool{"pi": true, "inf": true, "infty": true, "infinity": true}

// plainAnswer returns the answer of an answer sentence (the part before
// an explaining clause) written as plain-text math without $ or
// backslashes that reading its last number would cut: s, trimmed of
// spacing, '*' and '`' around it and of trailing . , ;, when it is
//
//   - a parenthesised or bracketed tuple or interval: one bracket group
//     around the whole with a comma at its top level, "(2, 4)", "[1, 3)",
//     "(1/2, -3)", "(-inf, 2]"; the commas inside separate elements, as
//     in \boxed{(1,200)};
//   - or an expression with a variable (a letter, or pi, inf, ∞, π) built
//     with +, a binary -, =, a relation (<, >, ≤, ≥, ≠) or brackets (not
//     one bracket group alone, as the label "(a)"), or beginning with the
//     variable: "2k+2", "3x^2 - 1", "n(n+1)/2", "x = 3, y = 4" (or
//     "x = 3; y = 4": a semicolon outside brackets separates as a comma
//     does), "x^2",
//     "x > 3", "-2 < x < 7"; or one with π, pi, √ or infinity (inf,
//     infinity, ∞), which are not units: "2π", "2π/3", "√2", "4√3/3",
//     "infinity", "-∞";
//   - or arithmetic on numbers alone, with a binary +, -, *, /, ^, ×, ÷
//     or ·, a Unicode square or cube glued to an operand (², ³, as in
//     "2³", "5×10³" and the expression "x² + 1"), a ± or ∓ (5 ± 2, ±2:
//     two answers), or an = or ≈ (a chain: "π ≈ 3.14", "1/3 ≈ 0.333"),
//     and no comma outside brackets: "2 + 3", "2^10",
//     "10^{-3}" (an exponent or subscript may be braced, as in LaTeX),
//     "3*(4+1)", as Math-Verify reads them, "2 × 3", and chains, whose =
//     must hold as in a box: "12 - 4 = 8" answers 8, "12 - 4 = 9" nothing;
//   - or a union or intersection of bracket groups, "(-∞, 3) ∪ (5, ∞)",
//     "[1, 3) ∪ (5, 7]", or membership in one, "x ∈ [3, 5]" (∈ counts as a
//     relation);
//   - or a clock time or ratio of whole numbers: "9:00", "2:30 p.m.",
//     "3:2" (see timeOrRatio);
//   - or a list of numbers, each a signed decimal or quotient, separated
//     by commas or semicolons: "3, 5, 7", "3; 4", "-2, 1", "1,-2", "-2,1", "2,5", as MATH-500
//     writes list golds (see numberList and thousandsComma); "and" and
//     "or" between two operands (or after a comma) separate elements as
//     a comma does: "3, 5, and 7", "3 and 5", "x = 1 or x = -2"; so do
//     tuples of such numbers: "(1, 2), (3, 4)" (see tupleList).
//
// Unit words ending s (see unitStart) are dropped first when what they
// follow is one of these: "5√2 cm", "12π square units", "2^10 ways".
//
// Anything else keeps the reading by the last number: a word of two or
// more letters (units such as cm, prose; the parser's function words are
// allowed right before "(", as in sin(x)+1), two operands separated only
// by spaces (5 m, 2 x, 1 1/2, 1 000; but a bracket holding an operator
// after a space is a factor, 2 (x + 1), see spacedFactor, and so are a
// root and π, 2 √5, 4/3 π), a digit right after a letter (5x3 =
// 15), a decimal comma outside brackets (1000,99: see decimalComma), a
// thousands comma outside brackets beside a separating comma or semicolon
// ("1,200; 5"; elsewhere the groups are dropped and the rest is read as
// above: "1,000 and 2,000", "1,000 + 2,000"; a grouped number alone or as
// a label's value, x = 1,200, is still left to the number), scientific notation
// (2.5e-3), any other character ($, %, \, braces not opening an exponent
// or subscript; a colon outside a time or ratio; a relation without a
// variable), unbalanced
// brackets, a number alone (1,200; -5; but "- 5" is returned whole,
// keeping its spaced sign, and "- 5 x 10^3" as the number scan writes
// it signed, -5 \times 10^{3}), and a value that is one number glued to a letter (2k, 5m,
// d = 5m, v = 5m/s, y = 2x: see quantity).
func plainAnswer(s string) (string, bool) {
	a := strings.Trim(s, " \t\n*`")
	a = strings.TrimRight(a, ".,; \t\n*`")
	if a == "" || len(a) > maxPlainAnswer {
		return "", false
	}
	if timeOrRatio(a) {
		return a, true
	}
	if r := strings.TrimPrefix(strings.TrimPrefix(a, "-"), "−"); r != a && strings.HasPrefix(r, " ") {
		n := strings.TrimLeft(r, " ")
		if decimal(n) {
			return a, true // "- 5": a number whose sign is set off by a space
		}
		// "- 5 x 10^3", "- 12 1/2", "- 3½": one number of a form the
		// number scan reads, which takes a sentence's opening dash for
		// no sign: its text as the scan gives a signed one, also before
		// a unit the scan drops ("- 3 × 10^8 m/s", "- 5 apples").
		if n != "" && (isDigit(n[0]) || vulgarLen(n) > 0) {
			if t, end := scanNumber(n, 0, true); end == len(n) || n[end] == ' ' && unitText(n[end:]) {
				return "-" + t, true
			}
		}
	}
	if u := unitStart(a); u > 0 {
		// "5√2 cm", "12π square units", "2^10 ways": math before a unit
		// is read as the math alone (a number alone keeps the reading by
		// the number, which drops the unit too).
		if r, ok := plainAnswer(a[:u]); ok {
			return r, true
		}
	}
	var (
		depth               int
		operand, space      bool // the last token ends an operand; spacing since it
		letter, leadLetter  bool // a variable or constant; the first operand is one
		built, paren, other bool // +, binary -, =; a bracket; binary *, /, ^
		tupleOpen, comma    bool // a starts with a bracket; a comma at its top level
		closedEarly, first  bool // a bracket group closes before the end; no operand yet
		konst               bool // π, pi, √ or infinity: never a unit
		rel                 bool // <, >, ≤, ≥, ≠
		topComma            bool // a comma outside brackets
		grouped             bool // a thousands comma outside brackets
		separated           bool // a separating comma or semicolon outside brackets
		value               int  // where the value starts: after the last = or , outside brackets
	)
	first = true
	// startOperand checks that an operand does not follow another after
	// spacing only.
	startOperand := func(isLetter bool) bool {
		if operand && space {
			return false
		}
		if first {
			leadLetter = isLetter
			first = false
		}
		return true
	}
	for i := 0; i < len(a); {
		ch := a[i]
		if ch == ' ' || ch == '\t' {
			space = true
			i++
			continue
		}
		switch {
		case isDigit(ch) || ch == '.' && i+1 < len(a) && isDigit(a[i+1]):
			if i > 0 && isLetter(a[i-1]) {
				return "", false // 5x3 = 15: x as a times sign
			}
			if !startOperand(false) {
				return "", false
			}
			j := i
			for j < len(a) && (isDigit(a[j]) || a[j] == '.') {
				j++
			}
			if j+1 < len(a) && (a[j] == 'e' || a[j] == 'E') {
				k := j + 1
				if a[k] == '+' || a[k] == '-' {
					k++
				}
				if k < len(a) && isDigit(a[k]) {
					return "", false // 2.5e-3 is read as a number
				}
			}
			i, operand = j, true
		case isLetter(ch):
			j := letterEnd(a, i)
			w := strings.ToLower(a[i:j])
			if (a[i:j] == "and" || a[i:j] == "or") && space && j < len(a) && a[j] == ' ' {
				// "3, 5, and 7", "x = 1 or x = -2": a list separator,
				// between an operand and the next.
				if depth != 0 || !operand && !strings.HasSuffix(strings.TrimRight(a[:i], " \t"), ",") {
					return "", false
				}
				value, topComma, operand = j, true, false
				i = j
				continue
			}
			if j-i > 1 && !plainConsts[w] && !(funcWords[w] && j < len(a) && a[j] == '(') {
				return "", false
			}
			if !(w == "pi" && operand) && !startOperand(true) {
				return "", false // but 4/3 pi, a spaced factor
			}
			letter = true
			konst = konst || plainConsts[w]
			i, operand = j, !funcWords[w] || plainConsts[w]
		case strings.HasPrefix(a[i:], "π") || strings.HasPrefix(a[i:], "∞"):
			if !(operand && strings.HasPrefix(a[i:], "π")) && !startOperand(true) {
				return "", false // but 4/3 π, a spaced factor
			}
			letter, operand, konst = true, true, true
			_, n := utf8.DecodeRuneInString(a[i:])
			i += n
		case vulgarLen(a[i:]) > 0:
			// ½, 3½: a vulgar fraction is a number, or the fraction
			// of the mixed number it is glued to.
			if !(operand && !space && isDigit(a[i-1])) && !startOperand(false) {
				return "", false
			}
			operand = true
			i += vulgarLen(a[i:])
		case startsRoot(a[i:]):
			// A root sign starts an operand, glued to a coefficient
			// (3√2), spaced from it (2 √5: a factor, as 4/3 π is) or
			// alone.
			letter, konst, operand = true, true, false
			_, n := utf8.DecodeRuneInString(a[i:])
			i += n
		case ch == '(' || ch == '[':
			if operand && space && (ch != '(' || !spacedFactor(a[i:])) {
				return "", false
			}
			if i == 0 {
				tupleOpen = true
			}
			depth++
			paren, operand = true, false
			i++
		case ch == '{' && i > 0 && (a[i-1] == '^' || a[i-1] == '_'):
			// 2^{10}, 10^{-3}, a_{12}: a braced exponent or subscript
			// is part of its operand.
			depth++
			operand = false
			i++
		case ch == ')' || ch == ']' || ch == '}':
			if depth--; depth < 0 {
				return "", false
			}
			if depth == 0 && i+1 < len(a) {
				closedEarly = true
			}
			operand = true
			i++
		case ch == ',' || ch == ';' && depth == 0:
			// A semicolon separates equations or numbers as a comma
			// does: "x = 1; y = 2", "3; 4".
			if ch == ',' && depth == 0 && decimalComma(a, i) {
				return "", false // 1000,99: one number, read by the number
			}
			if ch == ',' && depth == 0 && thousandsComma(a, i) {
				// 1,200: a group of the number, which goes on.
				grouped = true
				i++
				continue
			}
			if depth == 0 {
				value, topComma, separated = i+1, true, true
			}
			if depth == 1 {
				comma = true
			}
			operand = false
			i++
		case strings.HasPrefix(a[i:], "∪") || strings.HasPrefix(a[i:], "∩"):
			// (-∞, 3) ∪ (5, ∞): a union of intervals, built as a sum is.
			built, operand = true, false
			i += len("∪")
		case ch == '<' || ch == '>' || strings.HasPrefix(a[i:], "≤") || strings.HasPrefix(a[i:], "≥") || strings.HasPrefix(a[i:], "≠") || strings.HasPrefix(a[i:], "∈"):
			// x > 3, -2 < x < 7, x ≠ 2, x ∈ [3, 5]: a relation, read
			// whole when it has a variable.
			rel, operand = true, false
			_, n := utf8.DecodeRuneInString(a[i:])
			if i += n; depth == 0 {
				value = i
			}
		case ch == '+' || ch == '=' || ch == '-' || strings.HasPrefix(a[i:], "−") || strings.HasPrefix(a[i:], "±") || strings.HasPrefix(a[i:], "∓"):
			// ± and ∓ make two answers, binary (1 ± √5) or not (±2).
			if minus := ch == '-' || strings.HasPrefix(a[i:], "−"); !minus || operand {
				built = true
			}
			if ch == '=' && depth == 0 {
				value = i + 1
			}
			operand = false
			_, n := utf8.DecodeRuneInString(a[i:])
			i += n
		case strings.HasPrefix(a[i:], "≈"):
			// π ≈ 3.14: a chain, as \approx is in a box; "≈ 3.14" alone
			// is read by its number.
			if !operand {
				return "", false
			}
			built, operand = true, false
			if i += len("≈"); depth == 0 {
				value = i
			}
		case ch == '*' || ch == '/' || ch == '^' || strings.HasPrefix(a[i:], "×") || strings.HasPrefix(a[i:], "÷") || strings.HasPrefix(a[i:], "·"):
			if operand {
				other = true
			}
			operand = false
			_, n := utf8.DecodeRuneInString(a[i:])
			i += n
		case (strings.HasPrefix(a[i:], "²") || strings.HasPrefix(a[i:], "³")) && operand && !space:
			// x², 2³: a power, as ^2 and ^3 are (Normalize maps them).
			other = true
			i += len("²")
		case ch == '_':
			operand = false
			i++
		case ch == '!' || ch == '\'':
			i++
		default:
			return "", false
		}
		space = false
	}
	if depth != 0 {
		return "", false
	}
	out := a
	if grouped {
		if separated {
			// "1,200; 5", "1,000, 2,000": grouping beside separating
			// commas is left to the number scan.
			return "", false
		}
		out = ungroupAll(a)
	}
	lone := tupleOpen && !closedEarly // one bracket group: "(a)" may be a label
	tuple := lone && comma
	expr := letter && (konst || (built || rel || paren && !lone || leadLetter && other) && !quantity(a[value:]))
	arithmetic := !letter && !topComma && !rel && (built || other)
	if !tuple && !expr && !arithmetic && !(topComma && (numberList(out) || tupleList(out))) {
		return "", false
	}
	return out, true
}

// ungroupAll drops the thousands commas outside brackets of s: "1,000
// and 2,000" is "1000 and 2000".
func ungroupAll(s string) string {
	var b strings.Builder
	depth := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '(', '[', '{':
			depth++
		case ')', ']', '}':
			depth--
		case ',':
			if depth == 0 && thousandsComma(s, i) {
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// spacedFactor reports whether s, which opens with "(" after an operand
// and a space, is a parenthesised factor of a product: it closes and
// holds an operator, as in "2 (x + 1)" and "12 (3 + 4 + 5)", which read
// as in a box (the datasets write "30 (a + 7)^2", "4 (Y - 7)"), while
// "12 (B)" or "5 (m)" holds a label or a unit.
func spacedFactor(s string) bool {
	depth := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '(':
			depth++
		case ')':
			if depth--; depth == 0 {
				in := s[1:i]
				return strings.ContainsAny(in, "+-*/^−×÷·")
			}
		}
	}
	return false
}

// unitStart returns where a run of unit words (the parser's unitWords,
// each optionally squared or cubed: cm², cm^2, square units) ends s after
// a space, or 0 when s does not end so.
func unitStart(s string) int {
	start := 0
	for e := len(s); ; {
		b := strings.LastIndexByte(s[:e], ' ')
		if b < 0 {
			return start
		}
		w := s[b+1 : e]
		for _, sq := range []string{"²", "³", "^2", "^3"} {
			w = strings.TrimSuffix(w, sq)
		}
		if !unitWords[strings.ToLower(w)] {
			return start
		}
		start = b
		e = len(strings.TrimRight(s[:b], " "))
		if e == 0 {
			return 0
		}
	}
}

// unitText reports whether s, the text after a number, is words of
// letters only, as units are, each optionally joined to the next by /
// or · and raised by ^ and an integer, ² or ³: " m/s", " m/s^2",
// " kg·m/s²", " square units", " apples" (not " + 3", " 5", " π").
func unitText(s string) bool {
	letters := false
	for i := 0; i < len(s); {
		switch {
		case isLetter(s[i]):
			letters = true
			i++
		case s[i] == ' ', s[i] == '/':
			i++
		case s[i] == '^' && i > 0 && isLetter(s[i-1]):
			i++
			if i < len(s) && s[i] == '-' {
				i++
			}
			if i == len(s) || !isDigit(s[i]) {
				return false
			}
			for i < len(s) && isDigit(s[i]) {
				i++
			}
		case strings.HasPrefix(s[i:], "·"):
			i += len("·")
		case (strings.HasPrefix(s[i:], "²") || strings.HasPrefix(s[i:], "³")) && i > 0 && isLetter(s[i-1]):
			i += len("²")
		default:
			return false
		}
	}
	return letters
}

// timeOrRatio reports whether s is whole numbers joined by colons,
// optionally followed by am or pm (9:00, 20:34:00, 2:30 PM, 2:30 p.m,
// 3:2, 1 : 2): a clock time or a ratio, which the parser tells apart.
func timeOrRatio(s string) bool {
	digits := func(i int) int {
		for i < len(s) && isDigit(s[i]) {
			i++
		}
		return i
	}
	i := digits(0)
	if i == 0 {
		return false
	}
	parts := 1
	for {
		j := strings.TrimLeft(s[i:], " ")
		if j == "" || j[0] != ':' {
			break
		}
		k := len(s) - len(j) + 1
		for k < len(s) && s[k] == ' ' {
			k++
		}
		e := digits(k)
		if e == k {
			return false
		}
		i, parts = e, parts+1
	}
	if parts < 2 {
		return false
	}
	switch strings.ToLower(strings.TrimLeft(s[i:], " ")) {
	case "", "am", "pm", "a.m", "p.m", "a.m.", "p.m.":
		return true
	}
	return false
}

// thousandsComma reports whether the comma a[i] groups the thousands of
// a number: it follows a lead of one to three digits (not 0) or another
// group, and three digits and no fourth follow it (1,200; 12,345,678).
// Any other comma between digits (2,5; -2,1; 1,2,3) separates elements,
// but for a decimal comma (see decimalComma):
// no gold of the datasets writes a decimal comma, and MATH-500 writes
// lists without spaces (intermediate_algebra/1102: -2,1).
func thousandsComma(a string, i int) bool {
	if i+4 > len(a) || !isDigit(a[i+1]) || !isDigit(a[i+2]) || !isDigit(a[i+3]) || i+4 < len(a) && isDigit(a[i+4]) {
		return false
	}
	j := i
	for j > 0 && isDigit(a[j-1]) {
		j--
	}
	switch {
	case i-j == 3 && j > 0 && a[j-1] == ',':
		return thousandsComma(a, j-1) // a group after a group
	case i-j < 1 || i-j > 3 || a[j] == '0':
		return false
	}
	return j == 0 || a[j-1] != '.' && a[j-1] != ','
}

// decimalComma reports whether the comma a[i] is a decimal comma: it
// follows a lead of four or more digits that no thousands comma groups
// (a writer grouping thousands writes 1,000) and two digits follow it
// that end the number, with no other comma after them: "1000,99" is
// 1000.99, as the number scan and Math-Verify read it. No gold of the
// datasets writes such a list at the top level; their lists of a long
// number and a short one are in brackets ((1002,2), f(2015,2)), where a
// comma always separates, and "2015,2", "1000,999" and "10,99" stay lists.
func decimalComma(a string, i int) bool {
	j := i
	for j > 0 && isDigit(a[j-1]) {
		j--
	}
	if i-j < 4 || j > 0 && (a[j-1] == ',' || a[j-1] == '.') {
		return false
	}
	k := i + 1
	for k < len(a) && isDigit(a[k]) {
		k++
	}
	return k-(i+1) == 2 && !strings.ContainsRune(a[k:], ',') && (k == len(a) || a[k] != '.')
}

// numberList reports whether s is two or more numbers separated by
// commas, semicolons, "and" or "or": "3, 5, 7", "3; 4", "-2, 1", "1,-2",
// "-2,1", "1/2, -3/4", "3, 5, and 7", "3 and 5", each element a signed decimal or a
// quotient of two. plainAnswer has refused a thousands comma (1,200), so
// every comma here separates elements.
func numberList(s string) bool {
	n := 0
	for _, el := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ';' }) {
		el = strings.TrimSpace(el)
		el = strings.TrimPrefix(strings.TrimPrefix(el, "and "), "or ")
		for _, part := range strings.Split(strings.ReplaceAll(el, " or ", " and "), " and ") {
			part = strings.TrimSpace(part)
			part = strings.TrimPrefix(strings.TrimPrefix(strings.TrimPrefix(part, "-"), "−"), "+")
			part = strings.TrimLeft(part, " ") // "- 5, 3": a spaced sign
			num, den, quotient := strings.Cut(part, "/")
			if !decimal(num) || quotient && !decimal(den) {
				return false
			}
			n++
		}
	}
	return n > 1
}

// tupleList reports whether s is two or more bracketed tuples of numbers
// separated by commas, semicolons, "and" or "or": "(1, 2), (3, 4)", "(1, 2) and
// (-3, 4)" (see numberList for the elements).
func tupleList(s string) bool {
	s = strings.NewReplacer(" and ", ",", " or ", ",", ";", ",").Replace(s)
	n, depth, start := 0, 0, 0
	for i := 0; i <= len(s); i++ {
		if i < len(s) {
			switch s[i] {
			case '(', '[':
				depth++
			case ')', ']':
				depth--
			}
			if s[i] != ',' || depth != 0 {
				continue
			}
		}
		e := strings.TrimSpace(s[start:i])
		start = i + 1
		if e == "" {
			continue // ", and" left an empty element
		}
		if len(e) < 2 || e[0] != '(' && e[0] != '[' || e[len(e)-1] != ')' && e[len(e)-1] != ']' || !numberList(e[1:len(e)-1]) {
			return false
		}
		n++
	}
	return n > 1
}

// decimal reports whether s is digits with at most one decimal point
// among or before them: 3, 2.5, .5.
func decimal(s string) bool {
	digits, point := 0, false
	for i := 0; i < len(s); i++ {
		switch {
		case isDigit(s[i]):
			digits++
		case s[i] == '.' && !point:
			point = true
		default:
			return false
		}
	}
	return digits > 0
}

// quantity reports whether s is one number glued to a letter with nothing
// but *, / and ^ after it: 5m, 5m/s, 3m^2, 2k. As the value of an answer
// (d = 5m, y = 2x) the letter may be a unit or a variable, and
// plainAnswer leaves both to be read by the number, unless the answer
// holds π, pi, √ or infinity, which are never units (7pi, 2pi/3).
func quantity(s string) bool {
	s = strings.TrimSpace(s)
	s = strings.TrimPrefix(strings.TrimPrefix(s, "-"), "−")
	i := 0
	for i < len(s) && (isDigit(s[i]) || s[i] == '.') {
		i++
	}
	return i > 0 && i < len(s) && isLetter(s[i]) && !strings.ContainsAny(s[i:], "+-=,()[]") && !strings.Contains(s[i:], "−")
}

// sentenceEnd returns the index where the first sentence of s ends: a
// newline pair, or a period, '!' or '?' followed by space or end, outside
// math spans; a '!' followed by an operator is a factorial ("5! = 120").
func sentenceEnd(s string) int {
	return firstOutsideMath(s, func(i int) bool {
		switch s[i] {
		case '\n':
			return i > 0
		case '.', '!', '?':
			if s[i] == '!' && operatorFollows(s[i+1:]) {
				return false // a factorial: "5! = 120", "3! + 2"
			}
			return i > 0 && (i+1 == len(s) || s[i+1] == ' ' || s[i+1] == '\n' || s[i+1] == '\t')
		}
		return false
	})
}

// operatorFollows reports whether s, after spaces and tabs on its line,
// starts with an operator or relation (= + - * / ^ < > × ÷ · ≠ ≤ ≥ ≈).
func operatorFollows(s string) bool {
	s = strings.TrimLeft(s, " \t")
	if s == "" {
		return false
	}
	if strings.ContainsRune("=+-*/^<>", rune(s[0])) {
		return true
	}
	for _, op := range []string{"×", "÷", "·", "≠", "≤", "≥", "≈", "−"} {
		if strings.HasPrefix(s, op) {
			return true
		}
	}
	return false
}

// clauseWords open a clause that explains, conditions, qualifies or
// contrasts an answer even without a comma before them: "12 because
// there are 3 groups of 4", "12 when n = 3", "12 unless n = 1", "3.14
// rounded to 2 decimal places", "12 not 13", "12 therefore x = 3", "12
// obtained from 3 × 4".
var clauseWords = map[string]bool{
	"because": true, "since": true, "as": true, "which": true, "where": true, "when": true,
	"while": true, "for": true, "if": true, "given": true, "using": true, "with": true,
	"unless": true, "assuming": true, "provided": true, "depending": true, "rounded": true,
	"according": true, "based": true,
	"not": true, "but": true, "rather": true, "instead": true, "whereas": true, "though": true,
	"although": true, "meaning": true, "vs": true, "versus": true, "compared": true,
	"thus": true, "hence": true, "therefore": true,
	"obtained": true, "found": true, "computed": true, "derived": true, "resulting": true,
}

// clauseEnd returns where a sentence goes on to explain its answer: the
// first ", ", "; " or " (" outside math spans that is followed by a word of
// two or more letters other than "and" and "or" ("42, which is 6 times 7",
// "5; the remainder is 2", "117 (since n > 0)"), or the first " (" whose
// parenthesis holds such a word ("12 (3 groups of 4)"), or the first
// space before one of clauseWords after at most two words of two or
// more letters outside math ("12 because ...", "12 cm because ...", not "thus $1860$ leaving us
// with ...") or before "and"/"or" and a word ("5 and the
// remainder is 2"), or len(s). A constant a plain answer may hold
// (pi, inf) or a function word applied with "(" (sqrt(3)) is math, not
// a word: "(3, pi/2)" and "(-sqrt(3), sqrt(3))" are read whole.
func clauseEnd(s string) int {
	words := 0 // words of two or more letters outside math spans before i
	e := firstOutsideMath(s, func(i int) bool {
		ch := s[i]
		if isLetter(ch) && (i == 0 || !isLetter(s[i-1])) && i+1 < len(s) && isLetter(s[i+1]) {
			words++
		}
		if ch == ' ' && i > 0 && s[i-1] != ' ' {
			// "12 because ...", "12 which is ...": a clause word after
			// the answer, without a comma.
			w := letterEnd(s, i+1)
			word := strings.ToLower(s[i+1 : w])
			if w >= len(s) || s[w] != ' ' {
				return false
			}
			if word == "and" || word == "or" {
				// "5 and the remainder is 2": "and" before a word goes
				// on to something else; before a number, a math span,
				// a letter or a constant it joins a list.
				n := letterEnd(s, w+1)
				next := strings.ToLower(s[w+1 : n])
				if s[i-1] == ',' && subjectRestates(s[w+1:]) {
					// ", and the three leftmost digits are $376$.":
					// the answer in the form asked for.
					return false
				}
				return n-(w+1) >= 2 && next != "and" && next != "or" && !plainConsts[next] &&
					!(funcWords[next] && n < len(s) && s[n] == '(')
			}
			// "12 because ...", "odd because ...", "12 cm because ...";
			// after more words the sentence has gone on from its answer
			// ("thus $1860$ leaving us with a final answer of $860$"),
			// and "which is" a value alone restates the answer in its
			// final form ("$\frac{225}{676}$ which is $901$").
			return clauseWords[word] && words <= 2 && !(word == "which" && restatesValue(s[w+1:]))
		}
		if i == 0 || !((ch == ',' || ch == ';') && i+1 < len(s) && s[i+1] == ' ' || ch == '(' && s[i-1] == ' ') {
			return false
		}
		if ch == '(' && parenHoldsWords(s[i+1:]) {
			return true
		}
		j := i + 1
		for j < len(s) && s[j] == ' ' {
			j++
		}
		w := letterEnd(s, j)
		word := strings.ToLower(s[j:w])
		if plainConsts[word] || funcWords[word] && w < len(s) && s[w] == '(' {
			return false
		}
		if ch == ',' && word == "which" && w < len(s) && s[w] == ' ' && restatesNumber(s[w+1:]) {
			// ", which is $901$.": the answer in its final form.
			return false
		}
		return len(word) >= 2 && word != "and" && word != "or"
	})
	if e < len(s) && s[e] == '(' {
		return e - 1 // before the space that opens the clause
	}
	return e
}

// restatesValue reports whether s, the rest of a sentence after "which",
// is "is", "are" or "equals" and one value alone: a math span without a
// variable or a decimal ("is $901$.", "is 901", not "is $x + 5$.").
func restatesValue(s string) bool {
	_, ok := restatedValue(s)
	return ok
}

// restatesNumber reports whether s, the rest of a sentence after ",
// which", restates a number alone (see restatesValue): "is $901$.", "is
// 901.", not "is $3 + 9$.", which explains the answer before the comma.
func restatesNumber(s string) bool {
	v, ok := restatedValue(s)
	return ok && decimal(strings.TrimSpace(strings.Trim(v, "$")))
}

// restatedValue returns the value alone that s, the rest of a sentence
// after "which", gives after "is", "are" or "equals": a math span with its
// dollars and without a variable ("$3\sqrt{2}$", not "$x + 5$") or a
// decimal, and whether it does (see restatesValue).
func restatedValue(s string) (string, bool) {
	for _, verb := range []string{"is ", "are ", "equals "} {
		if v, ok := strings.CutPrefix(s, verb); ok {
			v = strings.TrimSpace(strings.TrimRight(strings.TrimSpace(v), ".!"))
			if len(v) > 2 && v[0] == '$' && v[len(v)-1] == '$' {
				m := v[1 : len(v)-1]
				return v, !strings.Contains(m, "$") && !holdsVariable(m)
			}
			return v, decimal(v)
		}
	}
	return "", false
}

// holdsVariable reports whether the math m holds a letter outside the
// names of LaTeX commands: "x + 5" does, "3\sqrt{2}" does not.
func holdsVariable(m string) bool {
	for i := 0; i < len(m); i++ {
		if m[i] == '\\' {
			i = letterEnd(m, i+1) - 1 // skip a command's name
			continue
		}
		if isLetter(m[i]) {
			return true
		}
	}
	return false
}

// subjectRestates reports whether s, the rest of a sentence after ",
// and", is words without math or digits, then "is", "are" or "equals"
// and one value alone (see restatesValue): "the three leftmost digits
// are $376$.".
func subjectRestates(s string) bool {
	for _, verb := range []string{" is ", " are ", " equals "} {
		i := strings.Index(s, verb)
		if i <= 0 || strings.ContainsAny(s[:i], "$\\0123456789") {
			continue
		}
		if restatesValue(strings.TrimPrefix(verb, " ") + s[i+len(verb):]) {
			return true
		}
	}
	return false
}

// parenHoldsWords reports whether the parenthesis that s follows closes
// within parenClauseBytes, with no parenthesis or math span nested, and
// holds a word of two or more letters other than a constant or a
// function applied with "(": "3 groups of 4)" explains an answer,
// "x + 1)" and "sqrt(3))" do not.
func parenHoldsWords(s string) bool {
	if len(s) > parenClauseBytes {
		s = s[:parenClauseBytes]
	}
	end := strings.IndexAny(s, "()$\\")
	if end < 0 || s[end] != ')' {
		return false
	}
	s = s[:end]
	for i := 0; i < len(s); {
		if !isLetter(s[i]) {
			i++
			continue
		}
		w := letterEnd(s, i)
		word := strings.ToLower(s[i:w])
		if w-i >= 2 && !plainConsts[word] && !funcWords[word] {
			return true
		}
		i = w
	}
	return false
}

// parenClauseBytes bounds the parenthesis parenHoldsWords reads, so that
// scanning every " (" of a sentence stays linear.
const parenClauseBytes = 80

// firstOutsideMath returns the first index i of s outside LaTeX math
// ($...$, \(...\), \[...\]; a backslash's next character skipped) at
// which at(i) holds, or len(s).
func firstOutsideMath(s string, at func(i int) bool) int {
	inMath := false
	for i := 0; i < len(s); i++ {
		switch ch := s[i]; {
		case ch == '\\' && i+1 < len(s):
			if s[i+1] == '(' || s[i+1] == '[' {
				inMath = true
			} else if s[i+1] == ')' || s[i+1] == ']' {
				inMath = false
			}
			i++
		case ch == '$' && (inMath || !currencyDollar(s, i)):
			inMath = !inMath
		case !inMath && at(i):
			return i
		}
	}
	return len(s)
}

// lastCandidate returns the last LaTeX span (joined with neighbouring
// spans) or number in s, by end position, that parses. whole allows the
// LaTeX after the last word of prose as a candidate when s has commands
// but no spans (see latexTail; the whole string when none follows it).
// Parsing draws on b; candidate texts are built only for the (at most
// maxTries) candidates tried.
func (c Config) lastCandidate(s string, whole bool, b *budget) (string, bool) {
	t := c.targets()
	// A candidate is groups[i] (kind 0) or nums[i] (kind 1).
	type cand struct{ end, kind, i int }
	var cands []cand
	var spans []mathSpan
	var groups []spanGroup
	if t&TargetLatex != 0 {
		spans = mathSpans(s)
		groups = groupSpans(s, spans)
		for i, g := range groups {
			cands = append(cands, cand{g.end, 0, i})
		}
		if len(spans) == 0 && whole && strings.Contains(s, `\`) && len(s) <= 400 {
			a := latexTail(s)
			if !strings.Contains(a, `\`) {
				// No bare LaTeX after the prose: the whole text is tried.
				a = strings.TrimSpace(s)
			}
			if a != "" && parses(a, b) {
				return a, true
			}
		}
	}
	var nums []number
	if t&TargetExpr != 0 {
		nums = findNumbers(s, spans)
		for i, n := range nums {
			cands = append(cands, cand{n.end, 1, i})
		}
	}
	// Newest first; stable order for equal ends; at most maxTries.
	for k := 0; k < len(cands) && k < maxTries; k++ {
		best := -1
		for j := range cands {
			if cands[j].end >= 0 && (best < 0 || cands[j].end > cands[best].end) {
				best = j
			}
		}
		if best < 0 {
			break
		}
		cd := cands[best]
		cands[best].end = -1
		var text string
		if cd.kind == 0 {
			text = groups[cd.i].text(spans)
		} else {
			text = nums[cd.i].text(s)
		}
		if parses(text, b) {
			return strings.TrimSpace(text), true
		}
	}
	return "", false
}

// latexTail returns the LaTeX written without math delimiters at the end
// of s: the text after its last word of prose (two or more letters
// outside braces that name no command, unit, function or constant, nor
// "and" or "or", which join a list), trimmed of spaces and a final '.',
// ',' or ';'; or "" after a negation (see proseWords) or when it holds
// \( or \[. "so the probability is \frac{1}{2}." gives \frac{1}{2},
// "Thus the area is 12\sqrt{3} square units" 12\sqrt{3} square units,
// "x = \frac{3}{4}" all of it, and "so we get 4 \times 10^5 here"
// nothing.
func latexTail(s string) string {
	start, depth, negated := 0, 0, false
	for i := 0; i < len(s); {
		switch c := s[i]; {
		case c == '{':
			depth++
		case c == '}':
			depth = max(0, depth-1)
		case c == '\\':
			i = letterEnd(s, i+1) // a command name
			continue
		case isLetter(c):
			j := letterEnd(s, i)
			w := strings.ToLower(s[i:j])
			if depth == 0 && j-i > 1 && !unitWords[w] && !funcWords[w] && !plainConsts[w] && w != "and" && w != "or" {
				start, negated = j, proseWords[w]
			}
			i = j
			continue
		}
		i++
	}
	t := s[start:]
	if negated || strings.Contains(t, `\(`) || strings.Contains(t, `\[`) {
		// "not \frac{14}{3}" rules the value out; math delimiters that
		// pair into no span ("\( \n 9 \n \)": inline math may not
		// cross a line) do not make bare LaTeX.
		return ""
	}
	return strings.TrimRight(strings.TrimSpace(t), ".,;")
}

// maxCandidateBytes is the longest candidate text parses considers;
// normalization may shrink a text (\left( is "("), but not by this much
// in any real answer, so longer texts are not even normalized.
const maxCandidateBytes = 4 * MaxAnswerBytes

// parses reports whether an answer text parses into a non-empty tree,
// spending at most MaxSteps/4 of b.
func parses(a string, b *budget) bool {
	if len(a) > maxCandidateBytes || b.left <= 0 {
		return false
	}
	n := Normalize(a)
	if n == "" || len(n) > MaxAnswerBytes {
		return false
	}
	sub := &budget{left: min(b.left, MaxSteps/4)}
	_, err := parseAnswer(n, sub)
	b.left -= min(b.left, MaxSteps/4) - sub.left
	return err == nil
}

// maxJoined is the most boxes or math spans joined into one answer.
const maxJoined = 32

// lastBoxGroup returns the contents of the last run of boxes whose gaps are
// joinable, joined with ", ".
func lastBoxGroup(s string) string {
	b, _ := lastBoxGroupAt(s)
	return b
}

// lastBoxGroupAt is lastBoxGroup that also returns where the group ends.
func lastBoxGroupAt(s string) (string, int) {
	bs := findBoxes(s)
	// An empty box answers nothing ("put your final answer within
	// \boxed{}" echoed after the answer) and hides no box before it.
	for len(bs) > 0 && strings.TrimSpace(bs[len(bs)-1].text) == "" {
		bs = bs[:len(bs)-1]
	}
	if len(bs) == 0 {
		return "", -1
	}
	k := len(bs) - 1
	for k > 0 && joinable(s[bs[k-1].end:bs[k].start], true) && len(bs)-k < maxJoined {
		k--
	}
	parts := make([]string, 0, len(bs)-k)
	for _, b := range bs[k:] {
		if t := alignedChain(strings.TrimSpace(b.text)); t != "" {
			parts = append(parts, t)
		}
	}
	return strings.Join(parts, ", "), bs[len(bs)-1].end
}

// alignEnvs are the environments that align a chain over lines.
var alignEnvs = []string{"aligned", "align", "align*", "split"}

// alignedChain returns a box that holds chains of relations aligned over
// lines (bare or in an aligned, align or split environment) on one line:
// a line that starts with & goes on with the chain before it, "x &= 375 +
// 523 \\ &= 898" is "x = 375 + 523 = 898", and any other line starts the
// next element of a list, "x &= 1 \\ y &= 2" is "x = 1, y = 2". Every &
// must stand before a relation; any other box (a matrix, cases) is
// returned as it is.
func alignedChain(s string) string {
	if !strings.Contains(s, "&") {
		return s
	}
	body := s
	for _, env := range alignEnvs {
		begin, end := `\begin{`+env+`}`, `\end{`+env+`}`
		if strings.HasPrefix(body, begin) && strings.HasSuffix(body, end) {
			body = body[len(begin) : len(body)-len(end)]
			break
		}
	}
	if strings.Contains(body, `\begin`) {
		return s
	}
	var out strings.Builder
	for i := 0; i < len(body); i++ {
		switch {
		case body[i] == '&':
			if !startsRelation(strings.TrimLeft(body[i+1:], " \t\n")) {
				return s
			}
		case strings.HasPrefix(body[i:], `\\`):
			// A line that starts with & goes on with the chain; any
			// other starts the next equation of a system.
			if rest := strings.TrimLeft(body[i+2:], " \t\n"); rest != "" && rest[0] != '&' && out.Len() > 0 {
				out.WriteString(", ")
			} else {
				out.WriteByte(' ')
			}
			i++
		case body[i] == '\\' && i+1 < len(body):
			// \& is an ampersand, not an alignment mark.
			out.WriteString(body[i : i+2])
			i++
		default:
			out.WriteByte(body[i])
		}
	}
	return strings.TrimSpace(out.String())
}

// startsRelation reports whether s starts with a relation: =, <, > or a
// relation command such as \le or \approx.
func startsRelation(s string) bool {
	if s == "" {
		return false
	}
	if s[0] == '=' || s[0] == '<' || s[0] == '>' {
		return true
	}
	if s[0] != '\\' {
		return false
	}
	j := letterEnd(s, 1)
	switch s[1:j] {
	case "le", "leq", "ge", "geq", "lt", "gt", "ne", "neq", "approx", "equiv":
		return true
	}
	return false
}

// joinable reports whether the text between two boxes or math spans only
// separates answers: spacing (on one line between math spans),
// punctuation, or a few words including "and" or "or" or a comma, in one
// sentence (", so t = 24. " ends one). Between
// math spans (words only) no other word may stand: spans in prose are
// mostly steps ("$6$ witches and $10$ sorcerers, so there were $6 \cdot
// 10 = 60$"), while boxes are answers ("\boxed{1} papers and \boxed{2}
// bins").
func joinable(gap string, words bool) bool {
	if len(gap) > 120 {
		return false
	}
	g := gap
	for _, r := range []string{`\quad`, `\qquad`, `\text`, `\textnormal`, `\mbox`, `\,`, `\;`, `\ `, `\!`} {
		g = strings.ReplaceAll(g, r, " ")
	}
	hasMath := strings.ContainsAny(g, "$") || strings.Contains(g, `\(`) || strings.Contains(g, `\)`) ||
		strings.Contains(g, `\[`) || strings.Contains(g, `\]`)
	conj := strings.ContainsAny(g, ",;")
	n, other := 0, 0
	for i := 0; i < len(g); {
		if !isLetter(g[i]) {
			i++
			continue
		}
		j := letterEnd(g, i)
		n++
		if w := g[i:j]; strings.EqualFold(w, "and") || strings.EqualFold(w, "or") {
			conj = true
		} else {
			other++
		}
		i = j
	}
	if n == 0 && !hasMath {
		// Math spans on separate lines with nothing but spacing between
		// are steps ("...\pmod{7}$\n$6^{83}+8^{83} \equiv 35
		// \pmod{49}$"); a comma or semicolon still lists them, and boxes
		// are answers on any line.
		return words || conj || !strings.Contains(g, "\n")
	}
	return conj && n <= 5 && (words || other == 0) && !endsSentence(g)
}

// endsSentence reports whether gap holds a period, '!' or '?' followed
// by spacing: the end of a sentence, between two boxes or spans.
func endsSentence(gap string) bool {
	for i := 0; i+1 < len(gap); i++ {
		if strings.IndexByte(".!?", gap[i]) >= 0 && strings.IndexByte(" \t\n", gap[i+1]) >= 0 {
			return true
		}
	}
	return false
}

// endsInside reports whether the sentence ends inside the span sp, at a
// full stop, '!' or '?' closing its text (not an ellipsis) before spacing
// after it: "So $x=38.$\n$780-38 = 742$." is two sentences, as
// endsSentence finds for "$x=38$.\n$780-38 = 742$.".
func endsInside(s string, sp mathSpan) bool {
	t := strings.TrimSpace(sp.text)
	if t == "" || strings.IndexByte(".!?", t[len(t)-1]) < 0 || strings.HasSuffix(t, "..") {
		return false
	}
	return sp.end < len(s) && strings.IndexByte(" \t\n", s[sp.end]) >= 0
}

// spanGroup is a run of math spans spans[first..last] with joinable
// gaps, ending at end (one before the last span's end when the last
// span is offered alone, so that it ranks just below its group).
type spanGroup struct{ first, last, end int }

// text joins the trimmed texts of the group's spans with ", ". Joined,
// they lose the sentence's punctuation written inside their dollars
// ("$k-1=1,$ and $k=2.$" is "k-1=1, k=2", not "k-1=1,, k=2."); a span
// alone is as before.
func (g spanGroup) text(spans []mathSpan) string {
	var parts []string
	for _, sp := range spans[g.first : g.last+1] {
		if t := strings.TrimSpace(sp.text); t != "" {
			parts = append(parts, t)
		}
	}
	if len(parts) > 1 {
		for i, t := range parts {
			u := strings.TrimRight(t, ",;")
			if strings.HasSuffix(u, ".") && !strings.HasSuffix(u, "..") { // an ellipsis stays
				u = strings.TrimRight(u[:len(u)-1], ",;")
			}
			if u = strings.TrimSpace(u); u != "" {
				parts[i] = u
			}
		}
	}
	return strings.Join(parts, ", ")
}

// otherEquations reports whether math spans a and b are equations of
// different left-hand sides: the first is a step that gives an
// intermediate quantity, not part of one answer with the second ("$k-1=1,$
// and $k=2.$", "$-2C = 1176$ and $|C| = 588$"), while equations of one
// left-hand side ("$x = 1$ or $x = -2$") list its values.
func otherEquations(a, b string) bool {
	la, oka := leftSide(a)
	lb, okb := leftSide(b)
	return oka && okb && la != lb
}

// leftSide returns the text before an equation's first "=", without
// spacing, and whether t is an equation (not "<=", ">=" or "!=").
func leftSide(t string) (string, bool) {
	i := strings.IndexByte(t, '=')
	if i <= 0 || strings.IndexByte("<>!", t[i-1]) >= 0 {
		return "", false
	}
	l := strings.Join(strings.Fields(t[:i]), "")
	return l, l != ""
}

// groupSpans joins runs of math spans with joinable gaps.
func groupSpans(s string, spans []mathSpan) []spanGroup {
	var out []spanGroup
	for k := 0; k < len(spans); {
		j := k
		for j+1 < len(spans) && joinable(s[spans[j].end:spans[j+1].start], false) && !endsInside(s, spans[j]) && !otherEquations(spans[j].text, spans[j+1].text) && j-k+1 < maxJoined {
			j++
		}
		blank := true
		for _, sp := range spans[k : j+1] {
			if strings.TrimSpace(sp.text) != "" {
				blank = false
				break
			}
		}
		if !blank {
			out = append(out, spanGroup{k, j, spans[j].end})
		}
		// Also offer the last span alone, so a sentence joined by "and"
		// does not hide the final answer.
		if j > k && strings.TrimSpace(spans[j].text) != "" {
			out = append(out, spanGroup{j, j, spans[j].end - 1})
		}
		k = j + 1
	}
	return out
}

// number is a plain number found in running text: s[start:end], negated
// when neg.
type number struct {
	start, end int
	neg        bool
}

// text returns the number's canonical text (see findNumbers).
func (n number) text(s string) string {
	t, _ := scanNumber(s, n.start, true)
	if n.neg {
		return "-" + t
	}
	return t
}

// numText collects a number's canonical text when on.
type numText struct {
	on  bool
	buf []byte
}

func (b *numText) add(t string) {
	if b.on {
		b.buf = append(b.buf, t...)
	}
}

func (b *numText) addByte(c byte) {
	if b.on {
		b.buf = append(b.buf, c)
	}
}

func (b *numText) String() string { return string(b.buf) }

// findNumbers scans s for numbers outside the given math spans. A number
// must not follow a letter, digit or root sign, nor open a subscript or
// exponent, signed or not (a_{12}, 2^{10}, 2^{-3}, 2^-3, 2^(-3)), nor be glued
// to a root sign or π after it (3√2, 2∛3, 2π); it may be or end in a
// Unicode vulgar fraction (½, 3½, 3 ½: a mixed number), and carry a sign, thousands
// separators (",", " "), a decimal point or comma, a base subscript
// (204_5, 4210_{5}: MATH's numbers in base b), a Unicode square or cube
// (2³ is 8), a power of ten after a times sign (5 x 10^3, 1.5 × 10⁻⁷:
// scientific notation, see sciTail), a "/d" denominator and
// a percent sign. Their text (number.text) is canonical: "1,000.99" ->
// "1000.99", "2,74" -> "2.74". At most the last 4*MaxElements are kept.
func findNumbers(s string, skip []mathSpan) []number {
	var out []number
	sk := 0
	for i := 0; i < len(s); i++ {
		for sk < len(skip) && skip[sk].end <= i {
			sk++
		}
		if sk < len(skip) && i >= skip[sk].start {
			i = skip[sk].end - 1
			continue
		}
		ch := s[i]
		if !isDigit(ch) && !(ch == '.' && i+1 < len(s) && isDigit(s[i+1])) && vulgarLen(s[i:]) == 0 {
			continue
		}
		if i > 0 {
			p := s[i-1]
			if isLetter(p) || isDigit(p) || p == '_' || p == '^' || p == '\\' || (p == '.' && ch != '.') ||
				p == '{' && i >= 2 && (s[i-2] == '_' || s[i-2] == '^') || p == '(' && i >= 2 && s[i-2] == '^' || signedScript(s[:i]) {
				// A subscript or exponent, a_{12} or 2^{10}, is part of
				// what it is attached to.
				// Skip the rest of this token.
				for i+1 < len(s) && (isDigit(s[i+1]) || s[i+1] == '.') {
					i++
				}
				continue
			}
		}
		_, end := scanNumber(s, i, false)
		if rootBefore(s[:i]) || strings.HasPrefix(s[end:], "π") || startsRoot(s[end:]) {
			// √2, ∛2, 3√2, 2∛3, 2π: the number is a radicand or a
			// coefficient, not the value.
			i = end - 1
			continue
		}
		neg := false
		if i > 0 && (s[i-1] == '-' || strings.HasSuffix(s[:i], "−")) {
			k := i - 1
			if s[i-1] != '-' {
				k = i - len("−")
			}
			if k == 0 || !(isLetter(s[k-1]) || isDigit(s[k-1]) || s[k-1] == ')') {
				neg = true
			}
		} else if i > 0 && s[i-1] == ' ' {
			neg = spacedSign(s[:i])
		}
		out = append(out, number{i, end, neg})
		if len(out) > 4*MaxElements {
			out = append(out[:0], out[len(out)-MaxElements:]...)
		}
		i = end - 1
	}
	return out
}

// spacedSign reports whether s, the text before a number, ends with a
// minus sign set off by spaces that is the number's sign: after = or an
// opening bracket ("x = - 5", "(- 5, 3)"), or after a connective word
// that says a value follows (signWords: "the answer is therefore - 5",
// "x equals - 5"). After an operand it is a binary minus (10 - 5), and
// at the start of a line or after another word a dash ("- 5 apples",
// "Monday - 5 hours"); an answer sentence's "- 5" is read by
// plainAnswer.
func spacedSign(s string) bool {
	t := strings.TrimRight(s, " ")
	switch {
	case strings.HasSuffix(t, "-"):
		t = t[:len(t)-1]
	case strings.HasSuffix(t, "−"):
		t = t[:len(t)-len("−")]
	default:
		return false
	}
	if t == "" || t[len(t)-1] != ' ' {
		return false // 2 -5 is read by the adjacent sign; x- 5 is binary
	}
	t = strings.TrimRight(t, " ")
	if t != "" && strings.ContainsRune("=([", rune(t[len(t)-1])) {
		return true
	}
	w := len(t)
	for w > 0 && isLetter(t[w-1]) {
		w--
	}
	return signWords[strings.ToLower(t[w:])]
}

// signWords are the connective words after which a minus set off by
// spaces is the sign of the number that follows, as after =: "is
// therefore - 5", "x equals - 5", "it must be - 5".
var signWords = map[string]bool{
	"therefore": true, "thus": true, "so": true, "then": true, "hence": true,
	"equals": true, "is": true, "be": true,
}

// signedScript reports whether s ends with the sign of an exponent or
// subscript: 2^-, 2^{-, 2^(-, x_{+, 10^{−.
func signedScript(s string) bool {
	switch {
	case strings.HasSuffix(s, "-") || strings.HasSuffix(s, "+"):
		s = s[:len(s)-1]
	case strings.HasSuffix(s, "−"):
		s = s[:len(s)-len("−")]
	default:
		return false
	}
	if strings.HasSuffix(s, "^(") {
		return true
	}
	s = strings.TrimSuffix(s, "{")
	return strings.HasSuffix(s, "^") || strings.HasSuffix(s, "_")
}

// rootBefore reports whether s ends with a root sign (√, ∛, ∜).
func rootBefore(s string) bool {
	return strings.HasSuffix(s, "√") || strings.HasSuffix(s, "∛") || strings.HasSuffix(s, "∜")
}

// startsRoot reports whether s starts with a root sign (√, ∛, ∜).
func startsRoot(s string) bool {
	return strings.HasPrefix(s, "√") || strings.HasPrefix(s, "∛") || strings.HasPrefix(s, "∜")
}

// scanNumber reads the number starting at s[i] and returns its canonical
// text (only when build is set) and end index.
func scanNumber(s string, i int, build bool) (string, int) {
	b := numText{on: build}
	if n := vulgarLen(s[i:]); n > 0 {
		b.add(s[i : i+n]) // ½
		return b.percent(s, i+n)
	}
	j := i
	for j < len(s) && isDigit(s[j]) {
		j++
	}
	intPart := s[i:j]
	b.add(intPart)
	// Thousands groups: ",ddd" or " ddd" repeated, not followed by a digit.
	group := func(sep byte, k int) int {
		if k+4 <= len(s) && s[k] == sep && isDigit(s[k+1]) && isDigit(s[k+2]) && isDigit(s[k+3]) &&
			(k+4 == len(s) || !isDigit(s[k+4])) {
			return k + 4
		}
		return -1
	}
	if len(intPart) > 0 && len(intPart) <= 3 && intPart != "0" {
		for _, sep := range []byte{',', ' '} {
			k := j
			n := 0
			for {
				nk := group(sep, k)
				if nk < 0 {
					break
				}
				b.add(s[k+1 : nk])
				k = nk
				n++
			}
			if n > 0 {
				j = k
				break
			}
		}
	}
	// Decimal part: ".d+" or ",d+" (a comma not followed by exactly three
	// digits, or after a zero integer part).
	if j+1 < len(s) && (s[j] == '.' || s[j] == ',') && isDigit(s[j+1]) {
		k := j + 1
		for k < len(s) && isDigit(s[k]) {
			k++
		}
		if s[j] == '.' || k-(j+1) != 3 || intPart == "0" || intPart == "" {
			if !(s[j] == ',' && k < len(s) && s[k] == ',') {
				b.addByte('.')
				b.add(s[j+1 : k])
				j = k
			}
		}
	}
	// A mixed number with a vulgar fraction: 3½, 3 ½ (Normalize reads
	// 3\frac{1}{2} as 3 + 1/2).
	if intPart != "" && j == i+len(intPart) {
		k := j
		if k < len(s) && s[k] == ' ' {
			k++
		}
		if n := vulgarLen(s[k:]); n > 0 {
			b.add(s[j : k+n])
			return b.percent(s, k+n)
		}
	}
	// Scientific notation: 5 x 10^3, 3 × 10^{8}, 1.5·10⁻⁷ is one number,
	// not the base of its power of ten.
	if exp, e, ok := sciTail(s, j); ok && j > i {
		b.add(` \times 10^{` + exp + "}")
		return b.String(), e
	}
	// A Unicode square or cube: 2³ is the power 2^3, not 2.
	if j > i && (strings.HasPrefix(s[j:], "²") || strings.HasPrefix(s[j:], "³")) {
		b.add(s[j : j+len("²")])
		j += len("²")
	}
	// Scientific notation: 2.5e-3.
	if j+1 < len(s) && (s[j] == 'e' || s[j] == 'E') {
		k := j + 1
		if k < len(s) && (s[k] == '-' || s[k] == '+') {
			k++
		}
		e := k
		for e < len(s) && isDigit(s[e]) && e-k < 4 {
			e++
		}
		if e > k && (e == len(s) || !isLetter(s[e]) && !isDigit(s[e])) {
			b.add(s[j:e])
			j = e
		}
	}
	// A base subscript: 204_5, 4210_{5} (MATH's numbers in base b).
	if intPart != "" && j == i+len(intPart) {
		if e, ok := baseTail(s, j); ok {
			b.add(s[j:e])
			return b.String(), e
		}
	}
	// Mixed number: "1 1/2" (one space, then p/q with 0 < p < q).
	if intPart != "" && j == i+len(intPart) {
		if e, ok := mixedTail(s, j); ok {
			b.add(s[j:e])
			return b.percent(s, e)
		}
	}
	// Fraction a/b.
	k := j
	for k < len(s) && s[k] == ' ' {
		k++
	}
	if k < len(s) && s[k] == '/' {
		k++
		for k < len(s) && s[k] == ' ' {
			k++
		}
		e := k
		for e < len(s) && isDigit(s[e]) {
			e++
		}
		if e > k {
			b.addByte('/')
			b.add(s[k:e])
			j = e
		}
	}
	return b.percent(s, j)
}

// percent adds a percent sign to the number's text when s[j:] starts
// with one (after spaces: %, \%, "percent", "pct") and returns the text
// and the number's end.
func (b *numText) percent(s string, j int) (string, int) {
	k := j
	for k < len(s) && s[k] == ' ' {
		k++
	}
	if k < len(s) && s[k] == '%' {
		b.addByte('%')
		j = k + 1
	} else if k+2 < len(s) && s[k] == '\\' && s[k+1] == '%' {
		b.addByte('%')
		j = k + 2
	} else {
		low := strings.ToLower(s[k:min(len(s), k+10)])
		for _, w := range []string{"percent", "pct"} {
			if strings.HasPrefix(low, w) {
				b.addByte('%')
				j = k + len(w)
				break
			}
		}
	}
	return b.String(), j
}

// sciTail reports whether s[j:], after a mantissa, is a times sign (×,
// x, X, *, ·, \times, \cdot; spaces around it on its line) and a power
// of ten with an integer exponent (10^3, 10^{-7}, 10^(-7), 10^-3, 10⁻⁷), and
// returns the exponent (sign and digits) and the end.
func sciTail(s string, j int) (string, int, bool) {
	spaces := func(k int) int {
		for k < len(s) && s[k] == ' ' {
			k++
		}
		return k
	}
	k := spaces(j)
	times := false
	for _, t := range []string{"×", "·", "*", `\times`, `\cdot`, "x", "X"} {
		if strings.HasPrefix(s[k:], t) {
			k, times = k+len(t), true
			break
		}
	}
	if k = spaces(k); !times || !strings.HasPrefix(s[k:], "10") {
		return "", 0, false
	}
	k += 2
	if k < len(s) && s[k] == '^' {
		k++
		closer := byte(0) // 10^{-7}, 10^(-7)
		if k < len(s) && (s[k] == '{' || s[k] == '(') {
			closer = '}'
			if s[k] == '(' {
				closer = ')'
			}
			k++
		}
		sign := ""
		switch {
		case strings.HasPrefix(s[k:], "-"), strings.HasPrefix(s[k:], "+"):
			sign, k = s[k:k+1], k+1
		case strings.HasPrefix(s[k:], "−"):
			sign, k = "-", k+len("−")
		}
		d := k
		for k < len(s) && isDigit(s[k]) {
			k++
		}
		if k == d {
			return "", 0, false
		}
		exp := sign + s[d:k]
		if closer != 0 {
			if k >= len(s) || s[k] != closer {
				return "", 0, false
			}
			k++
		}
		return strings.TrimPrefix(exp, "+"), k, true
	}
	// Unicode superscripts: 10⁸, 10⁻⁷.
	exp := ""
	if strings.HasPrefix(s[k:], "⁻") {
		exp, k = "-", k+len("⁻")
	} else if strings.HasPrefix(s[k:], "⁺") {
		k += len("⁺")
	}
	digits := len(exp)
	for k < len(s) {
		r, n := utf8.DecodeRuneInString(s[k:])
		d := strings.IndexRune(superDigits, r)
		if d < 0 {
			break
		}
		exp += string(rune('0' + utf8.RuneCountInString(superDigits[:d])))
		k += n
	}
	if len(exp) == digits {
		return "", 0, false
	}
	return exp, k, true
}

// vulgarLen returns the length of the Unicode vulgar fraction (½, ⅓, ¾,
// ..., ⅒, which Normalize maps to \frac) that s starts with, or 0.
func vulgarLen(s string) int {
	r, n := utf8.DecodeRuneInString(s)
	if r == '¼' || r == '½' || r == '¾' || r >= '⅐' && r <= '⅞' {
		return n
	}
	return 0
}

// superDigits are the Unicode superscript digits 0-9, in order.
const superDigits = "⁰¹²³⁴⁵⁶⁷⁸⁹"

// baseTail reports whether s[j:] starts with a base subscript, "_d" or
// "_{d}" with d a run of digits, and returns its end.
func baseTail(s string, j int) (int, bool) {
	if j >= len(s) || s[j] != '_' {
		return 0, false
	}
	k := j + 1
	braced := k < len(s) && s[k] == '{'
	if braced {
		k++
	}
	e := k
	for e < len(s) && isDigit(s[e]) {
		e++
	}
	if e == k {
		return 0, false
	}
	if braced {
		if e >= len(s) || s[e] != '}' {
			return 0, false
		}
		e++
	}
	return e, true
}

// mixedTail reports whether s[j:] starts with the fraction part " p/q"
// of a mixed number (integers, 0 < p < q, no spaces around the slash,
// not followed by a digit or a decimal point) and returns its end.
func mixedTail(s string, j int) (int, bool) {
	if j+4 > len(s) || s[j] != ' ' || !isDigit(s[j+1]) {
		return 0, false
	}
	k := j + 1
	for k < len(s) && isDigit(s[k]) {
		k++
	}
	p := s[j+1 : k]
	if k+1 >= len(s) || s[k] != '/' || !isDigit(s[k+1]) {
		return 0, false
	}
	e := k + 1
	for e < len(s) && isDigit(s[e]) {
		e++
	}
	q := s[k+1 : e]
	if e < len(s) && (isDigit(s[e]) || s[e] == '.' && e+1 < len(s) && isDigit(s[e+1])) {
		return 0, false
	}
	pn, ok1 := new(big.Int).SetString(p, 10)
	qn, ok2 := new(big.Int).SetString(q, 10)
	if !ok1 || !ok2 || pn.Sign() <= 0 || pn.Cmp(qn) >= 0 {
		return 0, false
	}
	return e, true
}

// extractChoice finds a multiple-choice answer among c.Choices, in the
// order of Extract: the later of the last box and the last "final answer
// is" sentence that name a choice (the sentence with AnchorFirst; the
// word "option" or "choice" may come before it), else the box, else the
// last "answer is" sentence; or, unless NoFallback, the
// last letter marked as a choice or ending the text, else the first
// standing alone.
func (c Config) extractChoice(s string) (string, Source) {
	choices := c.Choices
	isChoice := func(w string) (string, bool) {
		w = strings.Trim(w, "()[]{}*$.:,;!? \t\n")
		w = strings.TrimPrefix(w, `\text{`)
		w = strings.TrimSuffix(w, "}")
		w = strings.Trim(w, "()")
		for _, c := range choices {
			if w == c {
				return c, true
			}
		}
		return "", false
	}
	// labelled returns the choice that t starts with as a choice label
	// (see choiceLabel): "\textbf{(C) } 17", "(B) 17", "\mathbf{B}".
	labelled := func(t string) (string, bool) {
		if l, _ := choiceLabel(strings.TrimLeft(t, " \t\n*$")); l != "" {
			return isChoice(l)
		}
		return "", false
	}
	// anchored returns the choice after the last anchor of the given
	// kind that names one, and where that anchor starts.
	anchored := func(kind anchorKind) (string, int) {
		locs := findAnchors(s, kind)
		for k := len(locs) - 1; k >= 0; k-- {
			rest := s[locs[k][1]:]
			w, after := nextField(rest)
			if strings.EqualFold(w, "option") || strings.EqualFold(w, "choice") {
				rest = after // "the answer is option (C)"
				w, after = nextField(rest)
			}
			if w != "" {
				if ch, ok := isChoice(w); ok {
					return choiceList(ch, w, after, isChoice), locs[k][0]
				}
				if ch, ok := labelled(rest); ok {
					return ch, locs[k][0]
				}
			}
		}
		return "", -1
	}
	box, boxEnd := lastBoxGroupAt(s)
	boxed, boxOK := isChoice(box)
	if !boxOK {
		boxed, boxOK = labelled(box)
	}
	if ch, at := anchored(strongAnchor); ch != "" && (!boxOK || c.AnchorFirst || at >= boxEnd) {
		return ch, SourceSentence
	}
	if boxOK {
		return boxed, SourceBoxed
	}
	if ch, _ := anchored(weakAnchor); ch != "" {
		return ch, SourceSentence
	}
	if c.NoFallback {
		return "", SourceNone
	}
	// The last letter marked as a choice ("(B)", "B.", "B)", "B:") or
	// ending the text, else the first letter standing alone: a bare
	// capital inside the text is often the article ("A train leaves
	// ... so we pick B" answers B; "A. Because B is not valid" A).
	first, marked := "", ""
	for rest := s; rest != ""; {
		var w string
		w, rest = nextField(rest)
		c, ok := isChoice(w)
		if !ok {
			continue
		}
		if first == "" {
			first = c
		}
		if strings.ContainsAny(w, "(.):") || strings.TrimSpace(rest) == "" {
			marked = c
		}
	}
	switch {
	case marked != "":
		return marked, SourceFallback
	case first != "":
		return first, SourceFallback
	}
	return "", SourceNone
}

// choiceList returns first, the choice an answer sentence names in its
// field w, with the further choices the sentence joins to it by "and",
// "or", "&" or a comma, as "A, C": "The answers are (A) and (C)" names
// two, so that it does not answer A alone (gold letters are single:
// naming more is no single answer). Choices joined by commas alone
// count only when the list ends the sentence or the text ("The answer
// is B, C is wrong" answers B); after, the text after w.
func choiceList(first, w, after string, isChoice func(string) (string, bool)) string {
	list := []string{first}
	seen := map[string]bool{first: true}
	joined := false // an "and", "or" or "&" before the last choice
	last := w       // the field of the last choice
	rest := after   // the text after it
	for !strings.ContainsAny(last[len(last)-1:], ".!?;:") {
		f, r := nextField(rest)
		switch strings.ToLower(f) {
		case "and", "or", "&", "and/or":
			joined = true
			f, r = nextField(r)
		default:
			if !strings.HasSuffix(last, ",") {
				f = ""
			}
		}
		ch, ok := isChoice(f)
		if f == "" || !ok {
			break
		}
		if !seen[ch] {
			seen[ch] = true
			list = append(list, ch)
		}
		last, rest = f, r
	}
	if len(list) == 1 {
		return first
	}
	if !joined {
		if t := strings.TrimLeft(rest, " \t*$"); t != "" && t[0] != '\n' && !strings.ContainsAny(last[len(last)-1:], ".!?;") {
			return first
		}
	}
	return strings.Join(list, ", ")
}

// nextField returns the first run of non-space characters of s (as
// strings.Fields splits) and the text after it.
func nextField(s string) (string, string) {
	start := strings.IndexFunc(s, func(r rune) bool { return !unicode.IsSpace(r) })
	if start < 0 {
		return "", ""
	}
	s = s[start:]
	end := strings.IndexFunc(s, unicode.IsSpace)
	if end < 0 {
		return s, ""
	}
	return s[:end], s[end:]
}

func choiceKey(s string) string {
	s = strings.TrimSpace(s)
	for _, r := range []string{"$", `\text{`, `\textbf{`, `\mathrm{`, `\mathbf{`, `\bf `, "{", "}", "(", ")", `\boxed`} {
		s = strings.ReplaceAll(s, r, "")
	}
	return strings.ToUpper(strings.Trim(s, " .:"))
}

// knownCommands are LaTeX command names recognised after a doubled
// backslash (JSON-escaped text such as \\frac) and as prefixes of glued
// commands such as \quadx.
var knownCommands = map[string]bool{
	"frac": true, "dfrac": true, "tfrac": true, "cfrac": true, "sqrt": true, "left": true, "right": true,
	"boxed": true, "fbox": true, "framebox": true, "text": true, "textbf": true, "textit": true, "textnormal": true, "textrm": true,
	"mathrm": true, "mathbf": true, "mbox": true, "pi": true, "cdot": true, "times": true, "div": true,
	"le": true, "leq": true, "ge": true, "geq": true, "ne": true, "neq": true, "lt": true, "gt": true,
	"infty": true, "in": true, "cup": true, "cap": true, "pm": true, "mp": true, "approx": true,
	"sin": true, "cos": true, "tan": true, "sec": true, "csc": true, "cot": true, "log": true, "ln": true,
	"exp": true, "quad": true, "qquad": true, "begin": true, "end": true, "pmatrix": true, "bmatrix": true,
	"circ": true, "degree": true, "alpha": true, "beta": true, "gamma": true, "theta": true, "lambda": true,
	"binom": true, "dbinom": true, "displaystyle": true, "overline": true, "vec": true, "mathbb": true,
	"emptyset": true, "varnothing": true, "leqslant": true, "geqslant": true, "angle": true,
	"arcsin": true, "arccos": true, "arctan": true, "sinh": true, "cosh": true, "tanh": true,
	"lfloor": true, "rfloor": true, "lceil": true, "rceil": true, "sum": true, "prod": true,
	"operatorname": true, "mathit": true, "boldsymbol": true, "hat": true, "bar": true,
	"overrightarrow": true, "lbrace": true, "rbrace": true, "langle": true, "rangle": true,
	"setminus": true, "infin": true, "dots": true, "ldots": true, "cdots": true, "sigma": true,
	"mu": true, "omega": true, "phi": true, "varphi": true, "rho": true, "tau": true, "delta": true,
	"Delta": true, "epsilon": true, "varepsilon": true, "eta": true, "zeta": true, "xi": true,
	"psi": true, "chi": true, "nu": true, "kappa": true, "iota": true, "Omega": true, "Gamma": true,
	"Theta": true, "Lambda": true, "Sigma": true, "Phi": true, "Psi": true, "Pi": true,
	"mathcal": true, "widehat": true, "tilde": true, "dot": true, "ddot": true, "prime": true,
	"notin": true, "subset": true, "subseteq": true, "to": true, "rightarrow": true, "Rightarrow": true,
	"implies": true, "iff": true, "land": true, "lor": true, "wedge": true, "vee": true, "neg": true,
	"lvert": true, "rvert": true, "vert": true, "mid": true, "lbrack": true, "rbrack": true,
	"bigl": true, "bigr": true, "Bigl": true, "Bigr": true, "big": true, "Big": true, "biggl": true,
	"biggr": true, "Biggl": true, "Biggr": true, "bigg": true, "Bigg": true, "textstyle": true, "limits": true,
	"mod": true, "pmod": true, "bmod": true, "equiv": true, "perp": true, "parallel": true,
	"triangle": true, "cong": true, "sim": true, "simeq": true, "propto": true, "forall": true, "exists": true,
	"textup": true, "textsf": true, "mathsf": true, "mathtt": true, "texttt": true, "hline": true,
	"array": true, "matrix": true, "vmatrix": true, "cases": true, "align": true, "aligned": true,
	"cdotp": true, "ast": true, "star": true, "bmatrix*": true, "gcd": true, "lcm": true, "max": true, "min": true,
	"det": true, "deg": true, "arg": true, "lim": true, "int": true, "partial": true, "nabla": true,
}

// collapseEscapes turns a doubled backslash before a known command name
// (\\frac, as left by JSON double-escaping) into a single one. Real row
// separators (\\ followed by space, digit or another command) are kept.
func collapseEscapes(s string) string {
	if !strings.Contains(s, `\\`) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		if s[i] != '\\' {
			b.WriteByte(s[i])
			i++
			continue
		}
		j := i
		for j < len(s) && s[j] == '\\' {
			j++
		}
		run := j - i
		k := letterEnd(s, j)
		if run == 2 && k > j && knownPrefix(s[j:k]) {
			b.WriteByte('\\')
		} else {
			b.WriteString(s[i:j])
		}
		i = j
	}
	return b.String()
}

// maxCommandLen is the length of the longest name in knownCommands.
const maxCommandLen = len("overrightarrow")

// knownPrefix reports whether name starts with a known command name.
func knownPrefix(name string) bool {
	for n := min(len(name), maxCommandLen); n > 0; n-- {
		if knownCommands[name[:n]] {
			return true
		}
	}
	return false
}

func isDigit(c byte) bool  { return c >= '0' && c <= '9' }
func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
