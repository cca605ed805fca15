package grader

import (
	"cmp"
	"slices"
	"strings"
)

// This file holds the scanners that find boxes and math spans. Each makes
// one left-to-right pass over its input (O(len(s)) time, memory linear in
// the number of boxes or spans found), whatever the input: unclosed
// \boxed{ or \( openers, deep nesting and long runs of delimiters cost no
// more than ordinary text.

// maxOpenBoxes caps the unclosed box openers remembered during a scan;
// beyond it the outermost ones are forgotten (their contents are then
// read as if they were not boxed).
const maxOpenBoxes = 1024

// box is one \boxed{...} occurrence: [start, end) in the text and its content.
type box struct {
	start, end int
	text       string
}

// boxMatch is one matched box found by scanBoxes: the command at p, its
// content s[q:e] and its end: the closing brace at e for a braced box
// (braced true), or e itself for the one-token form "\boxed 5".
type boxMatch struct {
	p, q, e int
	braced  bool
}

// boxAt returns the index just after a \boxed or \fbox command starting
// at s[i], or -1.
func boxAt(s string, i int) int {
	var n int
	switch {
	case strings.HasPrefix(s[i:], `\boxed`):
		n = len(`\boxed`)
	case strings.HasPrefix(s[i:], `\fbox`):
		n = len(`\fbox`)
	default:
		return -1
	}
	if i+n < len(s) && isLetter(s[i+n]) {
		return -1
	}
	return i + n
}

// frameboxes rewrites \framebox, with its optional width and position
// ([1.5\width], [c], of at most maxLayoutArg bytes each), as \fbox, the
// box it draws: "$\framebox{204}$" boxes 204. It runs in one pass.
func frameboxes(s string) string {
	const name = `\framebox`
	if !strings.Contains(s, name) {
		return s
	}
	var b strings.Builder
	last := 0
	for i := 0; ; {
		k := strings.Index(s[i:], name)
		if k < 0 {
			break
		}
		p := i + k
		j := p + len(name)
		if j < len(s) && isLetter(s[j]) {
			i = j
			continue
		}
		for range 2 {
			t := skipSpaces(s, j)
			if t >= len(s) || s[t] != '[' {
				break
			}
			e := strings.IndexByte(s[t:min(len(s), t+maxLayoutArg)], ']')
			if e < 0 {
				break
			}
			j = t + e + 1
		}
		b.WriteString(s[last:p])
		b.WriteString(`\fbox`)
		last, i = j, j
	}
	b.WriteString(s[last:])
	return b.String()
}

// scanBoxes calls visit for every matched \boxed{...}, \fbox{...} and
// "\boxed x" of s, nested ones included, in the order their ends appear
// (an inner box before the box holding it). Braces escaped with a
// backslash are not counted; an opener without a closing brace is no box.
func scanBoxes(s string, visit func(boxMatch)) {
	type open struct{ p, q, depth int }
	var stack []open
	depth := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			q := boxAt(s, i)
			if q < 0 {
				if i+1 < len(s) && (s[i+1] != '\\' || boxAt(s, i+1) < 0) {
					i++ // an escaped character, \{ or \} included
				}
				continue
			}
			name := q
			for q < len(s) && (s[q] == ' ' || s[q] == '\t') {
				q++
			}
			switch {
			case q < len(s) && s[q] == '{':
				depth++
				if len(stack) == maxOpenBoxes {
					stack = append(stack[:0], stack[maxOpenBoxes/2:]...)
				}
				stack = append(stack, open{i, q + 1, depth})
				i = q
			case q > name && q < len(s):
				// \boxed 5 : one token.
				e := q
				for e < len(s) && (isDigit(s[e]) || s[e] == '.' || isLetter(s[e])) {
					e++
				}
				if e > q {
					visit(boxMatch{p: i, q: q, e: e})
				}
				i = e - 1
			default:
				i = q - 1
			}
		case '{':
			depth++
		case '}':
			if depth == 0 {
				continue // a stray closing brace
			}
			if n := len(stack); n > 0 && stack[n-1].depth == depth {
				o := stack[n-1]
				stack = stack[:n-1]
				visit(boxMatch{p: o.p, q: o.q, e: i, braced: true})
			}
			depth--
		}
	}
}

// findBoxes returns the outermost \boxed{...}, \fbox{...} and "\boxed x"
// of s in order (the last 4*MaxElements at most).
func findBoxes(s string) []box {
	var out []box
	scanBoxes(s, func(m boxMatch) {
		end := m.e
		if m.braced {
			end++
		}
		// Boxes recorded since this one opened lie inside it.
		for len(out) > 0 && out[len(out)-1].start > m.p {
			out = out[:len(out)-1]
		}
		out = append(out, box{m.p, end, s[m.q:m.e]})
		if len(out) > 4*MaxElements {
			out = append(out[:0], out[len(out)-MaxElements:]...)
		}
	})
	return out
}

// unwrapBoxes replaces every \boxed{X}, \fbox{X} and "\boxed X" by " X ",
// at every nesting level, in one pass.
func unwrapBoxes(s string) string {
	if !strings.Contains(s, `\boxed`) && !strings.Contains(s, `\fbox`) {
		return s
	}
	// An edit replaces s[at:to] by a space. Openers are met in position
	// order; closers too, so the two lists are merged without sorting.
	type edit struct{ at, to int }
	var opens, closes []edit
	scanBoxes(s, func(m boxMatch) {
		if m.braced {
			opens = append(opens, edit{m.p, m.q})
			closes = append(closes, edit{m.e, m.e + 1})
		} else {
			opens = append(opens, edit{m.p, m.q})
			closes = append(closes, edit{m.e, m.e})
		}
	})
	if len(opens) == 0 {
		return s
	}
	// Openers were recorded at close time, inner boxes first; closers
	// are in position order already.
	slices.SortFunc(opens, func(a, b edit) int { return cmp.Compare(a.at, b.at) })
	var b strings.Builder
	b.Grow(len(s) + len(closes))
	last := 0
	for i, j := 0, 0; i < len(opens) || j < len(closes); {
		var e edit
		// At equal positions an insertion (a closer of "\boxed 5") goes
		// before the opener that follows it.
		if j < len(closes) && (i >= len(opens) || closes[j].at <= opens[i].at) {
			e, j = closes[j], j+1
		} else {
			e, i = opens[i], i+1
		}
		b.WriteString(s[last:e.at])
		b.WriteByte(' ')
		last = e.to
	}
	b.WriteString(s[last:])
	return b.String()
}

// nextIndex finds the first occurrence of pat at or after a position of
// s. It remembers its last answer, so a scan whose queries never move
// backwards costs O(len(s)) in total however often it asks.
type nextIndex struct {
	s, pat   string
	from, at int // the first pat at or after from is at at (-1: none); from < 0: nothing known
}

func newNextIndex(s, pat string) nextIndex { return nextIndex{s: s, pat: pat, from: -1} }

func (f *nextIndex) find(i int) int {
	if f.from >= 0 && i >= f.from && (f.at < 0 || i <= f.at) {
		return f.at
	}
	j := strings.Index(f.s[i:], f.pat)
	if j >= 0 {
		j += i
	}
	f.from, f.at = i, j
	return j
}

// mathSpan is a LaTeX math region: [start, end) including delimiters, and
// its inner text.
type mathSpan struct {
	start, end int
	text       string
}

// mathSpans finds $...$, $$...$$, \(...\) and \[...\] in s (the last
// MaxElements..4*MaxElements of them). Inline $ and \( spans may not
// cross a newline; an opening $ without a valid close is read as a
// literal dollar.
func mathSpans(s string) []mathSpan {
	var out []mathSpan
	closeParen, closeBrack := newNextIndex(s, `\)`), newNextIndex(s, `\]`)
	dollars, newline := newNextIndex(s, "$$"), newNextIndex(s, "\n")
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			if i+1 >= len(s) {
				continue
			}
			switch s[i+1] {
			case '(', '[':
				f := &closeParen
				if s[i+1] == '[' {
					f = &closeBrack
				}
				j := f.find(i + 2)
				if j < 0 {
					i++
					continue
				}
				if s[i+1] == '(' {
					if nl := newline.find(i + 2); nl >= 0 && nl < j {
						i++
						continue
					}
				}
				out = append(out, mathSpan{i, j + 2, s[i+2 : j]})
				i = j + 1
			default:
				i++
			}
		case '$':
			if i+1 < len(s) && s[i+1] == '$' {
				j := dollars.find(i + 2)
				if j < 0 {
					i++
					continue
				}
				out = append(out, mathSpan{i, j + 2, s[i+2 : j]})
				i = j + 1
				continue
			}
			j := i + 1
			for j < len(s) && s[j] != '$' && s[j] != '\n' {
				if s[j] == '\\' {
					j++
				}
				j++
			}
			if j >= len(s) || s[j] != '$' {
				continue
			}
			out = append(out, mathSpan{i, j + 1, s[i+1 : j]})
			i = j
		}
		if len(out) > 4*MaxElements {
			out = append(out[:0], out[len(out)-MaxElements:]...)
		}
	}
	return out
}

// currencyDollar reports whether the single $ at s[i] (not part of $$)
// is a currency sign rather than the opening of a math span: the next $
// after it, which would close the span, has a digit right after it, as
// in "$1,200. She spent $300" (a closing $ is followed by a space,
// punctuation or a word: "$12$ apples"). It reads up to that next $.
// firstOutsideMath asks it, so that such a pair of dollars does not hide
// the sentences and clauses between them (mathSpans still pairs them,
// within the sentence or clause cut out).
func currencyDollar(s string, i int) bool {
	if i+1 < len(s) && s[i+1] == '$' || i > 0 && s[i-1] == '$' {
		return false
	}
	for j := i + 1; j < len(s); j++ {
		switch s[j] {
		case '\\':
			j++
		case '$':
			return j+1 < len(s) && isDigit(s[j+1])
		}
	}
	return false
}
