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
	`^{\circ}`, degreeMark, `^\circ`, degreeMark, `^{\circ }`, degreeMark, `\circ`, "", `\degree`, degreeMark,
	"°", degreeMark, `\textdegree`, degreeMark, `^{\prime}`, "'",
	`\leqslant`, `\le `, `\geqslant`, `\ge `, `\leq`, `\le `, `\geq`, `\ge `, `\neq`, `\ne `,
	`\lt`, "<", `\gt`, ">", `\lbrace`, `\{`, `\rbrace`, `\}`, `\lbrack`, "[", `\rbrack`, "]",
	`\lvert`, "|", `\rvert`, "|", `\vert`, "|", `\mid`, "|", `\colon`, ":", `\infin`, `\infty`,
	`\mbox`, `\text`, `\textnormal`, `\text`, `\textrm`, `\text`, `\textup`, `\text`, `\textsf`, `\text`,
	`\textbf`, `\text`, `\textit`, `\text`, `\texttt`, `\text`,
	"−", "-", "–", "-", "×", `\times `, "÷", `\div `, "≤", `\le `, "≥", `\ge `, "≠", `\ne `,
	"π", `\pi `, "∞", `\infty `, "√", `\sqrt `, "·", `\cdot `, "±", `\pm `, "∓", `\mp `,
	"∪", `\cup `, "∩", `\cap `, "∈", `\in `, "²", "^2", "³", "^3", "≈", `\approx `,
	"∛", `\sqrt[3] `, "∜", `\sqrt[4] `,
	"½", `\frac{1}{2}`, "⅓", `\frac{1}{3}`, "⅔", `\frac{2}{3}`, "¼", `\frac{1}{4}`, "¾", `\frac{3}{4}`,
	"⅕", `\frac{1}{5}`, "⅖", `\frac{2}{5}`, "⅗", `\frac{3}{5}`, "⅘", `\frac{4}{5}`, "⅙", `\frac{1}{6}`,
	"⅚", `\frac{5}{6}`, "⅐", `\frac{1}{7}`, "⅛", `\frac{1}{8}`, "⅜", `\frac{3}{8}`, "⅝", `\frac{5}{8}`,
	"⅞", `\frac{7}{8}`, "⅑", `\frac{1}{9}`, "⅒", `\frac{1}{10}`,
	"\u00a0", " ", "\t", " ", "\r", " ", "\n", " ", "~", " ",
)

var (
	thousandsRe  = regexp.MustCompile(`^-?\d{1,3}(,\d{3})+(\.\d+)?$`)
	thousandsSRe = regexp.MustCompile(`^-?\d{1,3}( \d{3})+(\.\d+)?$`)
	// thousandsUnitRe matches a grouped number followed by a space, a
	// command or '%' (unitTail then checks the rest is a unit).
	thousandsUnitRe = regexp.MustCompile(`^(-?\d{1,3}(?:,\d{3})+(?:\.\d+)?)[ \\%]`)
)

// Normalize cleans an answer text: it unwraps \boxed{} and math delimiters
// ($, \(, \[), drops LaTeX spacing and sizing commands (\left, \right, \!,
// \, \quad, \displaystyle, \hspace{1mm}), colour (\color{blue}, the
// colour of \textcolor) and a row break's extra space (\\[4pt]),
// old-style font switches ({\bf 7}), degree
// marks (^\circ, "degrees"; where the text applies a trigonometric
// function they become ^\circ instead), escaped dollars, the {,} and ,\!
// thousands separators and, when the whole answer is a grouped number
// (alone, before a unit or as a label's value: x = 1,200), plain
// thousands commas; it maps \dfrac and
// \tfrac to \frac, \mbox and \textbf to \text, Unicode math to LaTeX,
// collapses whitespace and trims trailing punctuation (not a factorial's
// '!'). Unit words and "x =" prefixes are handled by Equal, which knows
// the gold answer.
func Normalize(s string) string {
	if len(s) > MaxResponseBytes {
		s = s[:MaxResponseBytes]
	}
	s = frameboxes(dropRowSpacing(collapseEscapes(s)))
	s = unwrapBoxes(s)
	if strings.Contains(s, `\color`) || strings.Contains(s, `\textcolor`) || strings.Contains(s, `\hspace`) {
		s = dropLayout(s)
	}
	if strings.Contains(s, `\!`) {
		s = joinDigits(s, commaBang) // 1,\!000 -> 1000
	}
	if strings.Contains(s, "{") && strings.Contains(s, ",") {
		s = joinDigits(s, braceComma) // 1{,}000 -> 1000
	}
	if strings.ContainsAny(s, "√∛∜") {
		s = unicodeRoots(s)
	}
	s = normReplacer.Replace(s)
	s = removeSizing(s)
	s = dropFontSwitches(s)
	s = removeDollars(s)
	s = strings.ReplaceAll(s, `\(`, " ")
	s = strings.ReplaceAll(s, `\)`, " ")
	s = strings.ReplaceAll(s, `\[`, " ")
	s = strings.ReplaceAll(s, `\]`, " ")
	if strings.Contains(s, "deg") {
		s = degreeWords(s, hasTrig(s))
	}
	if !hasTrig(s) {
		s = strings.ReplaceAll(s, degreeMark, "")
	}
	s = collapseSpaces(s)
	s = trimPunct(s)
	if len(s) < 64 {
		if t, ok := ungroup(s); ok {
			s = t
		} else if i := strings.LastIndexByte(s, '='); i > 0 && !strings.ContainsRune(s[:i], ',') {
			// x = 1,200: a label's value is grouped as it is alone
			// (not (x, y) = (1,200), nor x = 1, y = 2,000).
			v := strings.TrimLeft(s[i+1:], " ")
			if t, ok := ungroup(v); ok {
				s = s[:len(s)-len(v)] + t
			}
		}
	}
	return s
}

// ungroup returns t without the separators of its thousands groups when
// it is a grouped number, alone or before a unit (1,200; 1 200; -\$1,200,
// whose escaped dollar left "- 1,200"; 1,200 \text{ dollars}), and
// whether it is.
func ungroup(t string) (string, bool) {
	if strings.HasPrefix(t, "- ") {
		t = "-" + t[2:]
	}
	if thousandsRe.MatchString(t) {
		return strings.ReplaceAll(t, ",", ""), true
	}
	if thousandsSRe.MatchString(t) {
		return strings.ReplaceAll(t, " ", ""), true
	}
	if m := thousandsUnitRe.FindStringSubmatch(t); m != nil && unitTail(t[len(m[1]):]) {
		return strings.ReplaceAll(m[1], ",", "") + t[len(m[1]):], true
	}
	return "", false
}

// dropRowSpacing removes the extra space given to a row break, as in
// \\[4pt] (also \\*[4pt] and \\ [0.5em]), where the \[ would read as
// display math. A bracket after a row break that holds no length (a \\
// [1, 2] row) stays. It runs in one pass.
func dropRowSpacing(s string) string {
	if !strings.Contains(s, `\\`) {
		return s
	}
	var b strings.Builder
	last := 0
	for i := 0; i+1 < len(s); i++ {
		if s[i] != '\\' {
			continue
		}
		if s[i+1] != '\\' {
			i++ // a command or escape: its next byte is no row break
			continue
		}
		j := i + 2
		if j < len(s) && s[j] == '*' {
			j++
		}
		for j < len(s) && (s[j] == ' ' || s[j] == '\t') {
			j++
		}
		if n := lengthArg(s[j:]); n > 0 {
			b.WriteString(s[last : i+2])
			last = j + n
		}
		i++
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

// layoutCommands are the commands dropLayout removes with their
// optional bracketed argument and their braced one; \hspace* comes
// before \hspace, which it starts with.
var layoutCommands = []string{`\textcolor`, `\color`, `\hspace*`, `\hspace`}

// maxLayoutArg is the longest colour or length argument dropLayout reads.
const maxLayoutArg = 64

// dropLayout removes colour and horizontal space, which change how an
// answer looks, not what it says: \color{blue}, \color[rgb]{0,0,1},
// \hspace{1mm} (each leaves a space) and the colour of
// \textcolor{red}{5} (which leaves {5}). It runs in one pass.
func dropLayout(s string) string {
	var b strings.Builder
	last := 0
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' {
			continue
		}
		for _, name := range layoutCommands {
			if !strings.HasPrefix(s[i:], name) || i+len(name) < len(s) && isLetter(s[i+len(name)]) {
				continue
			}
			j := skipSpaces(s, i+len(name))
			if j < len(s) && s[j] == '[' {
				k := strings.IndexByte(s[j:min(len(s), j+maxLayoutArg)], ']')
				if k < 0 {
					break
				}
				j = skipSpaces(s, j+k+1)
			}
			if j >= len(s) || s[j] != '{' {
				break
			}
			k := strings.IndexAny(s[j+1:min(len(s), j+1+maxLayoutArg)], "{}")
			if k < 0 || s[j+1+k] != '}' {
				break // a colour or length holds no braces
			}
			b.WriteString(s[last:i])
			b.WriteByte(' ')
			last = j + 1 + k + 1
			i = last - 1
			break
		}
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

// texUnits are the units of a TeX length.
var texUnits = []string{"pt", "em", "ex", "mm", "cm", "in", "bp", "pc", "dd", "cc", "mu", "sp", "px"}

// lengthArg returns the length of a bracketed TeX length, such as [4pt]
// or [ -0.5em ], at the start of t, or 0.
func lengthArg(t string) int {
	if t == "" || t[0] != '[' {
		return 0
	}
	j := 1
	skip := func() {
		for j < len(t) && t[j] == ' ' {
			j++
		}
	}
	skip()
	if j < len(t) && (t[j] == '-' || t[j] == '+') {
		j++
	}
	digits := 0
	for j < len(t) && (isDigit(t[j]) || t[j] == '.') {
		if isDigit(t[j]) {
			digits++
		}
		j++
	}
	if digits == 0 {
		return 0
	}
	skip()
	unit := false
	for _, u := range texUnits {
		if strings.HasPrefix(t[j:], u) {
			j += len(u)
			unit = true
			break
		}
	}
	if !unit {
		return 0
	}
	skip()
	if j >= len(t) || t[j] != ']' {
		return 0
	}
	return j + 1
}

// unicodeRoots braces the digits after a Unicode root sign: in plain text
// √23 is the root of 23, while the \sqrt that normReplacer makes of √
// would take only the digit 2 (\sqrt 23 is 3\sqrt{2} in LaTeX); ∛27 is
// \sqrt[3]{27} and ∜16 \sqrt[4]{16}.
func unicodeRoots(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 16)
	for {
		i := strings.IndexAny(s, "√∛∜")
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		sign, index := "√", ""
		switch {
		case strings.HasPrefix(s[i:], "∛"):
			sign, index = "∛", "[3]"
		case strings.HasPrefix(s[i:], "∜"):
			sign, index = "∜", "[4]"
		}
		j := i + len(sign)
		k := j
		for k < len(s) && (isDigit(s[k]) || s[k] == '.' && k > j && k+1 < len(s) && isDigit(s[k+1])) {
			k++
		}
		b.WriteString(s[:i])
		if k > j {
			b.WriteString(`\sqrt` + index + "{" + s[j:k] + "}")
		} else {
			b.WriteString(sign)
		}
		s = s[k:]
	}
}

// unitTail reports whether t, the text after a grouped number, is a unit
// ("\text{ dollars}", " cm^2", "%"): it has a letter or '%', no comma, and
// digits only in exponents, so "1,200 \text{ and } 300" stays a list.
func unitTail(t string) bool {
	unit := false
	for i := 0; i < len(t); i++ {
		switch c := t[i]; {
		case c == ',':
			return false
		case isDigit(c):
			if !strings.HasSuffix(t[:i], "^") && !strings.HasSuffix(t[:i], "^{") {
				return false
			}
		case isLetter(c) || c == '%':
			unit = true
		}
	}
	return unit
}

// isRegexpSpace reports whether c is a space as regexp's \s means it.
func isRegexpSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\f' || c == '\r' }

// letterEnd returns the end of the run of ASCII letters in s that
// starts at i (i itself where s[i] is no letter, or i is len(s)).
func letterEnd(s string, i int) int {
	for i < len(s) && isLetter(s[i]) {
		i++
	}
	return i
}

// skipSpaces returns the first index at or after i that is not a space.
func skipSpaces(s string, i int) int {
	for i < len(s) && isRegexpSpace(s[i]) {
		i++
	}
	return i
}

// commaBang matches ",\!" with optional spaces after the comma and the
// \!, and returns the index after it, or -1.
func commaBang(s string, i int) int {
	if i >= len(s) || s[i] != ',' {
		return -1
	}
	i = skipSpaces(s, i+1)
	if !strings.HasPrefix(s[i:], `\!`) {
		return -1
	}
	return skipSpaces(s, i+2)
}

// braceComma matches "{,}" with optional spaces around and inside it and
// returns the index after it, or -1.
func braceComma(s string, i int) int {
	i = skipSpaces(s, i)
	for _, c := range []byte{'{', ',', '}'} {
		if i >= len(s) || s[i] != c {
			return -1
		}
		i = skipSpaces(s, i+1)
	}
	return i
}

// joinDigits deletes every separator (matched by sep at an index, which
// returns the index after it or -1) that stands between two digits,
// scanning left to right as regexp.ReplaceAllString does with
// (\d)SEP(\d) -> $1$2: a digit that ends one match cannot start the next.
func joinDigits(s string, sep func(s string, i int) int) string {
	var b strings.Builder
	last := 0
	for i := 0; i+1 < len(s); i++ {
		if !isDigit(s[i]) {
			continue
		}
		e := sep(s, i+1)
		if e < 0 || e >= len(s) || !isDigit(s[e]) {
			continue
		}
		b.WriteString(s[last : i+1])
		last = e
		i = e
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

// degreeMark is the one spelling of the degree sign that Normalize keeps
// (inside trigonometric functions, see hasTrig).
const degreeMark = `^\circ`

// trigNames are the functions whose arguments may be angles in degrees.
var trigNames = []string{"sin", "cos", "tan", "sec", "csc", "cot"}

// hasTrig reports whether s applies a trigonometric function (sin, cos,
// tan, sec, csc or cot, with or without a backslash, not part of a longer
// name such as arcsin or cosh).
func hasTrig(s string) bool {
	for _, f := range trigNames {
		for i := 0; ; {
			j := strings.Index(s[i:], f)
			if j < 0 {
				break
			}
			p, e := i+j, i+j+len(f)
			if (p == 0 || !isLetter(s[p-1])) && (e == len(s) || !isLetter(s[e])) {
				return true
			}
			i = e
		}
	}
	return false
}

// degreeWords rewrites "degrees", "degree" and "deg" (whole words, or
// alone in \text{}) after a digit and optional spaces: "30 degrees" and
// "30 \text{ degrees}" become "30", or "30^\circ" when mark is set.
func degreeWords(s string, mark bool) string {
	var b strings.Builder
	last := 0
	for i := 0; i+1 < len(s); i++ {
		if !isDigit(s[i]) {
			continue
		}
		k := skipSpaces(s, i+1)
		text := false
		for _, cmd := range []string{`\text{`, `\mathrm{`} {
			if strings.HasPrefix(s[k:], cmd) {
				k, text = skipSpaces(s, k+len(cmd)), true
				break
			}
		}
		for _, w := range []string{"degrees", "degree", "deg"} {
			e := k + len(w)
			if text {
				if c := skipSpaces(s, e); c < len(s) && s[c] == '}' && strings.HasPrefix(s[k:], w) {
					e = c + 1 // \text{ degrees}
				} else {
					continue
				}
			}
			if strings.HasPrefix(s[k:], w) && (e == len(s) || text || !isWordByte(s[e])) {
				b.WriteString(s[last : i+1])
				if mark {
					b.WriteString(degreeMark)
				}
				last = e
				i = e - 1
				break
			}
		}
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

// isWordByte reports whether c is a word character as regexp's \b means
// it.
func isWordByte(c byte) bool { return isLetter(c) || isDigit(c) || c == '_' }

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
// A '!' right after an operand (a digit, letter, closing bracket or
// another '!') is a factorial and stays: "5!" is 120, "5!." is "5!".
func trimPunct(s string) string {
	for {
		t := strings.TrimSpace(s)
		for t != "" {
			c := t[len(t)-1]
			if c == '!' && len(t) > 1 && isFactorialOperand(t[len(t)-2]) {
				break
			}
			if !strings.ContainsRune(".,;:!? ", rune(c)) {
				break
			}
			t = t[:len(t)-1]
		}
		t = strings.TrimSuffix(t, `\\`)
		if t == s {
			return t
		}
		s = t
	}
}

// isFactorialOperand reports whether a '!' after c is a factorial.
func isFactorialOperand(c byte) bool {
	return isDigit(c) || isLetter(c) || c == ')' || c == '}' || c == ']' || c == '!'
}

// removeSizing drops \left and \right (keeping the delimiter after them)
// and \big-style sizing without a side, in one pass.
func removeSizing(s string) string {
	if !strings.Contains(s, `\left`) && !strings.Contains(s, `\right`) && !strings.Contains(s, `\big`) && !strings.Contains(s, `\Big`) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	last := 0
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' {
			continue
		}
		n := 0
		for _, cmd := range []string{`\left`, `\right`, `\big`, `\Big`} {
			if strings.HasPrefix(s[i:], cmd) {
				n = len(cmd)
				break
			}
		}
		if n == 0 || i+n < len(s) && isLetter(s[i+n]) {
			continue
		}
		b.WriteString(s[last:i])
		last = i + n
		i += n - 1
	}
	b.WriteString(s[last:])
	return b.String()
}

// fontSwitches are the old-style font declarations ({\bf 70}); they
// change how the rest of their group looks, not what it says.
var fontSwitches = map[string]bool{
	"bf": true, "rm": true, "it": true, "sf": true, "tt": true, "sl": true, "sc": true, "em": true,
	"bfseries": true, "mdseries": true, "itshape": true, "upshape": true, "slshape": true, "scshape": true,
	"rmfamily": true, "sffamily": true, "ttfamily": true, "normalfont": true,
}

// dropFontSwitches deletes old-style font switches: "{\bf 70}" -> "{ 70}".
func dropFontSwitches(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	last := 0
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' {
			continue
		}
		j := letterEnd(s, i+1)
		if j == i+1 {
			i++ // \\, \{ and the like: skip the escaped character
			continue
		}
		if fontSwitches[s[i+1:j]] {
			b.WriteString(s[last:i])
			b.WriteByte(' ')
			last = j
		}
		i = j - 1
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

// removeDollars deletes unescaped dollar signs (escaped ones were already
// turned into spaces).
func removeDollars(s string) string {
	if !strings.Contains(s, "$") {
		return s
	}
	return strings.ReplaceAll(s, "$", " ")
}

// textReplacer unwraps the text commands that textKey reads through.
var textReplacer = strings.NewReplacer(`\text{`, "{", `\mathrm{`, "{", `\operatorname{`, "{", `\mathbf{`, "{")

// textKey returns a key for answers that are plain words (letters,
// apostrophes, spaces, braces, parentheses and sentence punctuation; no
// digits or operators), or "" for anything else. Words of two or more
// letters are compared without case and the articles "a", "an", "the"
// before such a word are dropped ("The Circle" = "circle"), but a single
// letter keeps its case and is never an article (N is not n, "a b" is
// not "b"); apostrophes are kept (E' is not E) and so are parentheses
// (f(x) is not f x). Braces and the punctuation . ! ? separate words.
func textKey(s string) string {
	s = textReplacer.Replace(s)
	var words []string
	letters := 0
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case isLetter(c) || c == '\'':
			j := i
			for j < len(s) && (isLetter(s[j]) || s[j] == '\'') {
				j++
			}
			letters += j - i
			words = append(words, s[i:j])
			i = j
		case c == '(' || c == ')':
			words = append(words, s[i:i+1])
			i++
		case c == ' ' || c == '{' || c == '}' || c == '.' || c == '!' || c == '?':
			i++
		default:
			return ""
		}
	}
	if letters == 0 {
		return ""
	}
	isWord := func(w string) bool { return len(strings.Trim(w, "'")) >= 2 }
	out := words[:0]
	for k, w := range words {
		if isWord(w) {
			w = strings.ToLower(w)
			if (w == "an" || w == "the") && k+1 < len(words) && isWord(words[k+1]) {
				continue
			}
		} else if (w == "a" || w == "A") && k+1 < len(words) && isWord(words[k+1]) {
			continue
		}
		out = append(out, w)
	}
	return strings.Join(out, " ")
}
