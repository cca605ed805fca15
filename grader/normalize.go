package grader

import (
	"regexp"
	"strings"
)

// normReplacer rewrites LaTeX noise and Unicode math into plain LaTeX.
// strings.Replacer tries keys in argument order at each position, so a
// key that is a prefix of another comes after it.
var normReplacer = strings.NewReplacer(
	`\\`, `\\`, // a row break stays whole: `\\ ` must not read as `\ `
	`\displaystyle`, " ", `\textstyle`, " ", `\scriptstyle`, " ", `\limits`, "",
	`\left.`, "", `\right.`, "",
	`\biggl`, "", `\biggr`, "", `\Biggl`, "", `\Biggr`, "", `\bigl`, "", `\bigr`, "", `\Bigl`, "", `\Bigr`, "",
	`\bigg`, "", `\Bigg`, "",
	`\dfrac`, `\frac`, `\tfrac`, `\frac`, `\cfrac`, `\frac`,
	`\dbinom`, `\binom`, `\tbinom`, `\binom`,
	`\qquad`, " ", `\quad`, " ", `\!`, "", `\,`, " ", `\;`, " ", `\:`, " ", `\ `, " ", `\enspace`, " ",
	`{,}`, "", `\%`, "%", `\$`, " ", "\\\n", " ",
	`^{\circ}`, "", `^\circ`, "", `^{\circ }`, "", `\circ`, "", `\degree`, "", "°", "",
	`\textdegree`, "", `^{\prime}`, "'",
	`\leqslant`, `\le `, `\geqslant`, `\ge `, `\leq`, `\le `, `\geq`, `\ge `, `\neq`, `\ne `,
	`\lt`, "<", `\gt`, ">", `\lbrace`, `\{`, `\rbrace`, `\}`, `\lbrack`, "[", `\rbrack`, "]",
	`\lvert`, "|", `\rvert`, "|", `\vert`, "|", `\mid`, "|", `\infin`, `\infty`,
	`\mbox`, `\text`, `\textnormal`, `\text`, `\textrm`, `\text`, `\textup`, `\text`, `\textsf`, `\text`,
	`\textbf`, `\text`, `\textit`, `\text`, `\texttt`, `\text`,
	"−", "-", "–", "-", "×", `\times `, "÷", `\div `, "≤", `\le `, "≥", `\ge `, "≠", `\ne `,
	"π", `\pi `, "∞", `\infty `, "√", `\sqrt `, "·", `\cdot `, "±", `\pm `, "∓", `\mp `,
	"∪", `\cup `, "∩", `\cap `, "∈", `\in `, "²", "^2", "³", "^3", "≈", `\approx `,
	"\u00a0", " ", "\t", " ", "\r", " ", "\n", " ", "~", " ",
)

var (
	thousandsRe  = regexp.MustCompile(`^-?\d{1,3}(,\d{3})+(\.\d+)?$`)
	thousandsSRe = regexp.MustCompile(`^-?\d{1,3}( \d{3})+(\.\d+)?$`)
	commaBangRe  = regexp.MustCompile(`(\d),\s*\\!\s*(\d)`)
	braceCommaRe = regexp.MustCompile(`(\d)\s*\{\s*,\s*\}\s*(\d)`)
	degWordRe    = regexp.MustCompile(`(\d)\s*(degrees?|deg)\b`)
)

// Normalize cleans an answer text: it unwraps \boxed{} and math delimiters
// ($, \(, \[), drops LaTeX spacing and sizing commands (\left, \right, \!,
// \, \quad, \displaystyle), degree marks (^\circ, "degrees"), escaped
// dollars, the {,} and ,\! thousands separators and, when the whole
// answer is a grouped number, plain thousands commas; it maps \dfrac and
// \tfrac to \frac, \mbox and \textbf to \text, Unicode math to LaTeX,
// collapses whitespace and trims trailing punctuation. Unit words and
// "x =" prefixes are handled by Equal, which knows the gold answer.
func Normalize(s string) string {
	if len(s) > MaxResponseBytes {
		s = s[:MaxResponseBytes]
	}
	s = collapseEscapes(s)
	s = unwrapBoxes(s)
	if strings.Contains(s, `\!`) {
		s = commaBangRe.ReplaceAllString(s, "$1$2")
	}
	if strings.Contains(s, "{") && strings.Contains(s, ",") {
		s = braceCommaRe.ReplaceAllString(s, "$1$2")
	}
	s = normReplacer.Replace(s)
	s = removeSizing(s)
	s = removeDollars(s)
	s = strings.ReplaceAll(s, `\(`, " ")
	s = strings.ReplaceAll(s, `\)`, " ")
	s = strings.ReplaceAll(s, `\[`, " ")
	s = strings.ReplaceAll(s, `\]`, " ")
	if strings.Contains(s, "deg") {
		s = degWordRe.ReplaceAllString(s, "$1")
	}
	s = collapseSpaces(s)
	s = trimPunct(s)
	if len(s) < 64 {
		if thousandsRe.MatchString(s) {
			s = strings.ReplaceAll(s, ",", "")
		} else if thousandsSRe.MatchString(s) {
			s = strings.ReplaceAll(s, " ", "")
		}
	}
	return s
}

// collapseSpaces replaces runs of spaces by one space.
func collapseSpaces(s string) string {
	if !strings.Contains(s, "  ") {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		if s[i] == ' ' && i > 0 && s[i-1] == ' ' {
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// trimPunct removes surrounding spaces and trailing sentence punctuation.
func trimPunct(s string) string {
	for {
		t := strings.TrimSpace(s)
		t = strings.TrimRight(t, ".,;:!? ")
		if strings.HasSuffix(t, `\\`) {
			t = t[:len(t)-2]
		}
		if t == s {
			return t
		}
		s = t
	}
}

// removeSizing drops \left and \right (keeping the delimiter after them)
// and \big-style sizing without a side.
func removeSizing(s string) string {
	for _, cmd := range []string{`\left`, `\right`, `\big`, `\Big`} {
		for i := 0; ; {
			j := strings.Index(s[i:], cmd)
			if j < 0 {
				break
			}
			p := i + j
			e := p + len(cmd)
			if e < len(s) && isLetter(s[e]) {
				i = e
				continue
			}
			s = s[:p] + s[e:]
			i = p
		}
	}
	return s
}

// removeDollars deletes unescaped dollar signs (escaped ones were already
// turned into spaces).
func removeDollars(s string) string {
	if !strings.Contains(s, "$") {
		return s
	}
	return strings.ReplaceAll(s, "$", " ")
}

// unwrapBoxes replaces every \boxed{X} and \fbox{X} by X.
func unwrapBoxes(s string) string {
	for n := 0; n < 64; n++ {
		bs := findBoxes(s)
		if len(bs) == 0 {
			return s
		}
		var b strings.Builder
		last := 0
		for _, bx := range bs {
			b.WriteString(s[last:bx.start])
			b.WriteString(" ")
			b.WriteString(bx.text)
			b.WriteString(" ")
			last = bx.end
		}
		b.WriteString(s[last:])
		s = b.String()
	}
	return s
}

// textKey returns a case- and article-insensitive key for answers that
// are plain words (letters, spaces, parentheses and sentence punctuation;
// no digits or operators), or "" for anything else.
func textKey(s string) string {
	s = strings.NewReplacer(`\text{`, "{", `\mathrm{`, "{", `\operatorname{`, "{", `\mathbf{`, "{").Replace(s)
	var b strings.Builder
	letters := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case isLetter(c):
			letters++
			b.WriteByte(c | 0x20)
		case c == ' ':
			b.WriteByte(' ')
		case c == '{' || c == '}' || c == '(' || c == ')' || c == '.' || c == '\'' || c == '!' || c == '?':
			b.WriteByte(' ')
		default:
			return ""
		}
	}
	if letters == 0 {
		return ""
	}
	f := strings.Fields(b.String())
	out := f[:0]
	for _, w := range f {
		if w == "a" || w == "an" || w == "the" {
			if len(f) > 1 {
				continue
			}
		}
		out = append(out, w)
	}
	return strings.Join(out, " ")
}
