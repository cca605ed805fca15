package grader

import (
	"errors"
	"fmt"
	"math/big"
	"strings"
	"unicode/utf8"
)

// kind is the type of an expression-tree node.
type kind uint8

const (
	nNum      kind = iota // val (exact rational); flt marks a decimal literal
	nSym                  // name: variable, subscripted name, unknown command
	nConst                // name: "pi", "e", "i", "inf"
	nAdd                  // args summed
	nMul                  // args multiplied
	nPow                  // args[0]^args[1]
	nNeg                  // -args[0]
	nFunc                 // name(args...)
	nPM                   // ±args[0], a term of a sum
	nPercent              // args[0] %
	nRel                  // args[0] ops[0] args[1] ops[1] ...; lab marks "label = value"
	nTuple                // (a, b, ...) ordered
	nSet                  // \{a, b\} unordered
	nList                 // a, b, ... unordered
	nInterval             // args[0], args[1] with closed ends lc, rc
	nUnion                // union of intervals args
	nMatrix               // rows
	nText                 // name: \text{...} content
	nRatio                // args[0] : args[1] : ...
	nSum                  // name "sum"/"prod"; args: var, lo, hi, body
	nApprox               // args[0] a value, args[1:] its stated approximations (made by prep)
	nFalse                // a false statement such as the chain 5 = 6 (made by prep)
	nBuilder              // set-builder \{args[0] | args[1]\}: element, condition
	nClock                // clock time: args hours (0-24), minutes, seconds
)

// node is one expression-tree node.
type node struct {
	k      kind
	name   string
	val    *big.Rat
	flt    bool
	lab    bool
	lc, rc bool
	args   []*node
	ops    []string
	rows   [][]*node
	mod    *big.Int // nRel: a congruence modulo mod (a \equiv b \pmod{m})
}

// budget counts the steps left for one comparison.
type budget struct{ left int }

// errBudget is reported when the step budget runs out.
var errBudget = errors.New("step budget exhausted")

// parseError aborts parsing; it is recovered in parseAnswer.
type parseError struct{ err error }

func num(r *big.Rat) *node           { return &node{k: nNum, val: r} }
func numInt(i int64) *node           { return num(new(big.Rat).SetInt64(i)) }
func mk(k kind, args ...*node) *node { return &node{k: k, args: args} }
func inv(n *node) *node              { return mk(nPow, n, numInt(-1)) }

type tkind uint8

const (
	tEOF   tkind = iota
	tNum         // digits with optional decimal part
	tWord        // run of ASCII letters
	tCmd         // \name, or \ followed by one symbol
	tPunct       // one punctuation character or a two-character operator
	tUni         // one non-ASCII rune
)

type token struct {
	k  tkind
	s  string
	sp bool // whitespace before
}

// lex splits a normalized answer into tokens.
func lex(s string, b *budget) []token {
	var out []token
	sp := false
	for i := 0; i < len(s); {
		b.left--
		if b.left < 0 {
			panic(parseError{errBudget})
		}
		c := s[i]
		switch {
		case c == ' ' || c < 0x20 || c == 0x7f:
			sp = true
			i++
			continue
		case isDigit(c) || c == '.' && i+1 < len(s) && isDigit(s[i+1]):
			j := i
			for j < len(s) && isDigit(s[j]) {
				j++
			}
			if j+1 < len(s) && s[j] == '.' && isDigit(s[j+1]) {
				j++
				for j < len(s) && isDigit(s[j]) {
					j++
				}
			} else if j < len(s) && s[j] == '.' && j == i {
				j++
			}
			// Scientific notation: 1.5e3, 2E-4 (a digit must follow).
			if j+1 < len(s) && (s[j] == 'e' || s[j] == 'E') {
				k := j + 1
				if s[k] == '+' || s[k] == '-' {
					k++
				}
				e := k
				for e < len(s) && isDigit(s[e]) && e-k < 4 {
					e++
				}
				if e > k && (e == len(s) || !isDigit(s[e]) && !isLetter(s[e])) {
					j = e
				}
			}
			out = append(out, token{tNum, s[i:j], sp})
			i = j
		case isLetter(c):
			j := letterEnd(s, i)
			out = append(out, token{tWord, s[i:j], sp})
			i = j
		case c == '\\':
			if i+1 >= len(s) {
				i++
				continue
			}
			if !isLetter(s[i+1]) {
				out = append(out, token{tCmd, s[i : i+2], sp})
				i += 2
				break
			}
			j := letterEnd(s, i+1)
			name := s[i+1 : j]
			if !knownCommands[name] && name != "inf" && name != "zzz" {
				// A known command glued to letters: \quadx -> \quad x.
				for n := min(len(name)-1, maxCommandLen); n >= 2; n-- {
					if knownCommands[name[:n]] {
						j = i + 1 + n
						name = name[:n]
						break
					}
				}
			}
			out = append(out, token{tCmd, `\` + name, sp})
			i = j
		case c >= 0x80:
			r, n := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError {
				i += n
				continue
			}
			out = append(out, token{tUni, s[i : i+n], sp})
			i += n
		default:
			if i+1 < len(s) {
				two := s[i : i+2]
				switch two {
				case "<=", ">=", "!=", "==", "**", "=<", "=>":
					if two == "=<" {
						two = "<="
					}
					if two == "=>" {
						two = ">="
					}
					out = append(out, token{tPunct, two, sp})
					i += 2
					sp = false
					continue
				}
			}
			out = append(out, token{tPunct, s[i : i+1], sp})
			i++
		}
		sp = false
	}
	return out
}

// parser is a recursive-descent parser over tokens.
type parser struct {
	toks    []token
	pos     int
	b       *budget
	depth   int
	absOpen int
	inElem  bool     // parsing a set-builder element: ':' ends it
	mod     *big.Int // the modulus of the last \pmod{m} or \mod m read
}

// parseAnswer parses a normalized answer into a tree. It never panics;
// malformed input yields an error.
func parseAnswer(s string, b *budget) (n *node, err error) {
	defer func() {
		if r := recover(); r != nil {
			pe, ok := r.(parseError)
			if !ok {
				panic(r)
			}
			n, err = nil, fmt.Errorf("grader: parse %.40q: %w", s, pe.err)
		}
	}()
	p := &parser{toks: lex(s, b), b: b}
	if len(p.toks) > 1 && p.toks[0].k == tPunct && p.toks[0].s == "=" {
		// "the total time $= 204$ minutes": math that opens with = goes
		// on from the prose before it and holds the value after it.
		p.pos = 1
	}
	n = p.groupBody(func(t token) bool { return false })
	if p.pos < len(p.toks) {
		p.fail("unexpected %q", p.toks[p.pos].s)
	}
	if n == nil {
		p.fail("empty")
	}
	return n, nil
}

// groupBody parses the body of a brace group (or of the whole answer) up
// to stop. TeX's infix \over and \choose split a group in two: {a \over
// b} is \frac{a}{b} and {n \choose k} is \binom{n}{k}.
func (p *parser) groupBody(stop func(token) bool) *node {
	x := p.parseList(func(t token) bool { return stop(t) || isInfixGroupOp(t) })
	op := p.peek()
	if !isInfixGroupOp(op) {
		return x
	}
	p.next()
	y := p.parseList(stop)
	if x == nil || y == nil {
		p.fail("%s needs a side before and after it", op.s)
	}
	if op.s == `\over` {
		return mk(nMul, x, inv(y))
	}
	return &node{k: nFunc, name: "binom", args: []*node{x, y}}
}

// isInfixGroupOp reports whether t is \over or \choose.
func isInfixGroupOp(t token) bool {
	return t.k == tCmd && (t.s == `\over` || t.s == `\choose`)
}

func (p *parser) fail(format string, a ...any) {
	panic(parseError{fmt.Errorf(format, a...)})
}

func (p *parser) peek() token {
	if p.pos < len(p.toks) {
		return p.toks[p.pos]
	}
	return token{k: tEOF}
}

func (p *parser) peekAt(k int) token {
	if p.pos+k < len(p.toks) {
		return p.toks[p.pos+k]
	}
	return token{k: tEOF}
}

func (p *parser) next() token {
	p.b.left--
	if p.b.left < 0 {
		p.fail("%v", errBudget)
	}
	t := p.peek()
	if p.pos < len(p.toks) {
		p.pos++
	}
	return t
}

func (p *parser) is(s string) bool {
	t := p.peek()
	return t.k != tEOF && t.s == s && t.k != tWord
}

func (p *parser) expect(s string) {
	if !p.is(s) {
		p.fail("expected %q, got %q", s, p.peek().s)
	}
	p.next()
}

// enter counts one level of recursion. One level of bracket nesting
// costs about six recursive calls (list, relation, sum, product, unary,
// atom), so the limit is MaxDepth*8 calls.
func (p *parser) enter() {
	p.depth++
	if p.depth > MaxDepth*8 {
		p.fail("nesting deeper than %d", MaxDepth)
	}
}

func (p *parser) leave() { p.depth-- }

// sepLevel reports whether the next token separates list items: 1 for a
// comma, 2 for ";" and the words "and"/"or" (also inside \text{}), 0 for
// none, with the number of tokens it spans.
func (p *parser) sepLevel() (int, int) {
	t := p.peek()
	switch {
	case t.k == tPunct && t.s == ",":
		return 1, 1
	case t.k == tPunct && t.s == ";":
		return 2, 1
	case t.k == tWord && (strings.EqualFold(t.s, "and") || strings.EqualFold(t.s, "or")):
		return 2, 1
	case t.k == tCmd && t.s == `\text`:
		if p.peekAt(1).s == "{" {
			// Look for \text{ and } / \text{or} / \text{,}.
			k := 2
			var words []string
			for ; p.peekAt(k).k != tEOF && p.peekAt(k).s != "}" && k < 8; k++ {
				words = append(words, p.peekAt(k).s)
			}
			if p.peekAt(k).s == "}" {
				w := strings.ToLower(strings.Join(words, " "))
				switch w {
				case "and", "or", ", and", ",and", "and/or":
					return 2, k + 1
				case ",", ";":
					return 1, k + 1
				}
			}
		}
	}
	return 0, 0
}

// parseList parses items separated by commas (level 1) and by ";", "and",
// "or" (level 2) until stop reports true or input ends. A single item is
// returned as itself; several as nList (nested when both levels occur).
func (p *parser) parseList(stop func(token) bool) *node {
	p.enter()
	defer p.leave()
	var groups [][]*node
	var cur []*node
	or := true // every separator is "or"
	for p.peek().k != tEOF && !stop(p.peek()) {
		if lvl, n := p.sepLevel(); lvl > 0 {
			or = or && lvl == 2 && p.orSep(n)
			for ; n > 0; n-- {
				p.next()
			}
			if lvl == 1 {
				// Oxford comma: ", and" stays level 1.
				if l2, n2 := p.sepLevel(); l2 == 2 && p.peek().k != tPunct {
					for ; n2 > 0; n2-- {
						p.next()
					}
				}
			} else if len(cur) > 0 {
				groups = append(groups, cur)
				cur = nil
			}
			continue
		}
		start := p.pos
		it := p.parseRel()
		if it != nil {
			cur = append(cur, it)
			if len(cur) > MaxElements {
				p.fail("too many elements")
			}
		}
		if p.pos == start {
			t := p.peek()
			// Skip alignment marks and row breaks outside matrices.
			if t.s == "&" || t.s == `\\` || t.s == `\hline` {
				p.next()
				continue
			}
			return p.finishList(groups, cur, or)
		}
	}
	return p.finishList(groups, cur, or)
}

// orSep reports whether the separator of n tokens next is the word "or",
// bare or in \text{}.
func (p *parser) orSep(n int) bool {
	if n == 1 {
		return strings.EqualFold(p.peek().s, "or")
	}
	return n == 4 && strings.EqualFold(p.peekAt(2).s, "or")
}

// finishList returns the items of groups and cur: one alone, else an nList,
// named "or" when or reports that only the word "or" separated them.
func (p *parser) finishList(groups [][]*node, cur []*node, or bool) *node {
	if len(cur) > 0 {
		groups = append(groups, cur)
	}
	if len(groups) == 0 {
		return nil
	}
	items := make([]*node, 0, len(groups))
	flat := true
	for _, g := range groups {
		if len(g) == 1 {
			items = append(items, g[0])
		} else {
			items = append(items, &node{k: nList, args: g})
			flat = false
		}
	}
	if len(items) == 1 {
		return items[0]
	}
	if or && flat {
		return &node{k: nList, name: "or", args: items}
	}
	return &node{k: nList, args: items}
}

// relOps maps relation tokens to canonical operators.
var relOps = map[string]string{
	"=": "=", "==": "=", "<": "<", ">": ">", "<=": "<=", ">=": ">=", "!=": "!=",
	`\le`: "<=", `\ge`: ">=", `\ne`: "!=", `\approx`: "~", `\in`: "in", `\notin`: "notin",
	`\equiv`: "=", `\simeq`: "~", `\cong`: "=", `\subset`: "in", `\subseteq`: "in",
}

func (p *parser) relOp() (string, bool) {
	t := p.peek()
	if t.k == tPunct || t.k == tCmd {
		op, ok := relOps[t.s]
		return op, ok
	}
	return "", false
}

// parseRel parses a chain a op b op c ... of relations.
func (p *parser) parseRel() *node {
	p.enter()
	defer p.leave()
	first := p.parseUnion()
	op, ok := p.relOp()
	if !ok {
		return first
	}
	r := &node{k: nRel}
	r.args = append(r.args, first)
	equiv := false
	p.mod = nil
	for ok {
		if p.next().s == `\equiv` {
			equiv = true
		}
		rhs := p.parseUnion()
		if rhs == nil || first == nil {
			p.fail("relation without side")
		}
		r.ops = append(r.ops, op)
		r.args = append(r.args, rhs)
		if len(r.args) > MaxElements {
			p.fail("relation chain too long")
		}
		op, ok = p.relOp()
	}
	if equiv {
		r.mod = p.mod
	}
	return r
}

func (p *parser) parseUnion() *node {
	a := p.parseRatio()
	if a == nil {
		return nil
	}
	for p.is(`\cup`) || p.is(`\cap`) || p.is(`\setminus`) || p.is(`U`) {
		t := p.next()
		b := p.parseRatio()
		if b == nil {
			p.fail("union without side")
		}
		if t.s == `\cup` {
			if a.k == nUnion {
				a.args = append(a.args, b)
			} else {
				a = mk(nUnion, a, b)
			}
		} else {
			a = &node{k: nFunc, name: strings.TrimPrefix(t.s, `\`), args: []*node{a, b}}
		}
	}
	return a
}

func (p *parser) parseRatio() *node {
	if c := p.clock(); c != nil {
		return c
	}
	a := p.parseAdd()
	if a == nil || !p.is(":") || p.inElem {
		return a
	}
	r := mk(nRatio, a)
	for p.is(":") {
		p.next()
		b := p.parseAdd()
		if b == nil {
			p.fail("ratio without side")
		}
		r.args = append(r.args, b)
	}
	return r
}

func (p *parser) parseAdd() *node {
	p.enter()
	defer p.leave()
	first := p.parseMul()
	if first == nil {
		return nil
	}
	terms := []*node{first}
	for {
		t := p.peek()
		var op string
		switch {
		case t.k == tPunct && (t.s == "+" || t.s == "-"):
			op = t.s
		case t.k == tCmd && (t.s == `\pm` || t.s == `\mp`):
			op = "pm"
		default:
			op = ""
		}
		if op == "" {
			break
		}
		p.next()
		term := p.parseMul()
		if term == nil {
			if op == "+" && p.peekIsEnd() {
				break // "a +" trailing
			}
			p.fail("missing term after %q", op)
		}
		switch op {
		case "-":
			term = mk(nNeg, term)
		case "pm":
			term = mk(nPM, term)
		}
		terms = append(terms, term)
		if len(terms) > MaxElements {
			p.fail("too many terms")
		}
	}
	if len(terms) == 1 {
		return first
	}
	return &node{k: nAdd, args: terms}
}

func (p *parser) peekIsEnd() bool {
	t := p.peek()
	return t.k == tEOF || t.s == ")" || t.s == "]" || t.s == "}" || t.s == ","
}

// unitWords are dropped after a number; percentWords turn it into a
// percentage.
var (
	unitWords = map[string]bool{
		"cm": true, "mm": true, "km": true, "kg": true, "meters": true, "meter": true, "metres": true,
		"miles": true, "mile": true, "feet": true, "ft": true, "inches": true, "inch": true, "yards": true,
		"yuan": true, "dollars": true, "dollar": true, "cents": true, "cent": true, "units": true, "unit": true,
		"sq": true, "square": true, "cubic": true, "degrees": true, "degree": true, "mph": true, "hours": true,
		"hour": true, "minutes": true, "minute": true, "seconds": true, "second": true, "days": true,
		"day": true, "weeks": true, "years": true, "year": true, "liters": true, "litres": true, "grams": true,
		"ways": true, "people": true, "students": true, "points": true, "times": true, "euros": true,
		"euro": true, "pounds": true, "kilometers": true, "centimeters": true, "millimeters": true,
		"ml": true, "cal": true, "hrs": true, "sec": true, "mins": true, "min": true, "rad": true, "radians": true,
	}
	percentWords = map[string]bool{"percent": true, "pct": true, "percentage": true, "percents": true}
)

// rateNumerators and rateDenominators are the units of a rate unit
// (see rateUnitEnd): a length or angle per a time.
var (
	rateNumerators = map[string]bool{
		"m": true, "cm": true, "mm": true, "km": true, "ft": true, "mi": true, "miles": true,
		"meters": true, "metres": true, "feet": true, "rad": true, "radians": true,
	}
	rateDenominators = map[string]bool{
		"s": true, "sec": true, "h": true, "hr": true, "min": true, "hour": true, "second": true, "minute": true,
	}
)

// rateUnitEnd returns how many tokens from the next one make a rate
// unit that ends the input, a length or angle per a time, optionally
// squared or cubed (m/s, m/s^2, km/h, ft/s, rad/s), or 0: "5 m/s" is 5
// meters per second, while "2 m/n" and "5 m/s + 1" keep m and s as
// variables.
func (p *parser) rateUnitEnd() int {
	if !rateNumerators[p.peek().s] || p.peekAt(1).s != "/" || p.peekAt(2).k != tWord || !rateDenominators[p.peekAt(2).s] {
		return 0
	}
	n := 3
	if p.peekAt(3).s == "^" && (p.peekAt(4).s == "2" || p.peekAt(4).s == "3") {
		n = 5
	}
	if p.peekAt(n).k != tEOF {
		return 0
	}
	return n
}

// parseMul parses explicit and implicit products and quotients.
func (p *parser) parseMul() *node {
	p.enter()
	defer p.leave()
	first := p.parseUnary()
	if first == nil {
		return nil
	}
	factors := []*node{first}
	for {
		t := p.peek()
		switch {
		case t.k == tPunct && (t.s == "*" || t.s == "·"), t.k == tCmd && (t.s == `\cdot` || t.s == `\times` || t.s == `\ast` || t.s == `\cdotp`):
			p.next()
			f := p.parseUnary()
			if f == nil {
				p.fail("missing factor")
			}
			factors = append(factors, f)
		case t.k == tPunct && t.s == "/", t.k == tCmd && t.s == `\div`:
			p.next()
			f := p.parseUnary()
			if f == nil {
				p.fail("missing divisor")
			}
			factors = append(factors, inv(f))
		case t.k == tWord && percentWords[strings.ToLower(t.s)]:
			p.next()
			factors[len(factors)-1] = mk(nPercent, factors[len(factors)-1])
		case t.k == tWord && t.sp && isNumberish(factors[len(factors)-1]) && p.rateUnitEnd() > 0:
			// "5 m/s", "9.8 m/s^2", "60 km/h" ending the answer: a rate
			// unit, dropped; bare letters elsewhere stay variables.
			for n := p.rateUnitEnd(); n > 0; n-- {
				p.next()
			}
		case t.k == tWord && unitWords[strings.ToLower(t.s)] && isNumberish(factors[len(factors)-1]):
			p.next()
			// "sq cm", "cubic meters": drop a following unit too.
			if t2 := p.peek(); t2.k == tWord && unitWords[strings.ToLower(t2.s)] {
				p.next()
			}
			if p.is("^") {
				p.next()
				p.parseExponent()
			}
		case len(factors) == 1 && isIntLit(factors[0]) && p.slashFraction():
			// Mixed number with a slash: 1 1/2 is 1 + 1/2.
			f := mk(nMul, p.numberNode(p.next().s), inv(p.numberNode(p.toks[p.pos+1].s)))
			p.next()
			p.next()
			factors[0] = mixedNumber(factors[0], f)
			if p.is("%") {
				// 12 1/2% is (12 + 1/2)%.
				p.next()
				factors[0] = mk(nPercent, factors[0])
			}
		case p.startsAtom():
			mixed := len(factors) == 1 && t.k == tCmd && t.s == `\frac` && isIntLit(factors[0])
			f := p.parsePostfix()
			if f == nil {
				return p.mulOf(factors)
			}
			if mixed && isProperFrac(f) {
				// Mixed number: 15\frac{39}{40} and 137 \frac{1}{2} are
				// 15 + 39/40 and 137 + 1/2.
				factors[0] = mixedNumber(factors[0], f)
				continue
			}
			if mixed && f.k == nPercent && isProperFrac(f.args[0]) {
				// 12\frac{1}{2}\% is (12 + 1/2)%, not 12 (1/2)%.
				factors[0] = mk(nPercent, mixedNumber(factors[0], f.args[0]))
				continue
			}
			factors = append(factors, f)
		default:
			return p.mulOf(factors)
		}
		if len(factors) > MaxElements {
			p.fail("too many factors")
		}
	}
}

// mixedNumber returns the mixed number n f for an integer literal n
// (possibly negated: -2 1/2 is -(2 + 1/2)) and a proper fraction f.
func mixedNumber(n, f *node) *node {
	if n.k == nNeg {
		return mk(nNeg, mk(nAdd, n.args[0], f))
	}
	return mk(nAdd, n, f)
}

// slashFraction reports whether the next tokens are " p/q": integer
// literals after a space with 0 < p < q, not followed by a power or a
// factorial, the fraction part of a mixed number such as 1 1/2.
func (p *parser) slashFraction() bool {
	t, sl, d := p.peek(), p.peekAt(1), p.peekAt(2)
	if t.k != tNum || !t.sp || sl.k != tPunct || sl.s != "/" || sl.sp || d.k != tNum || d.sp {
		return false
	}
	if strings.ContainsAny(t.s, ".eE") || strings.ContainsAny(d.s, ".eE") {
		return false
	}
	if after := p.peekAt(3); after.k == tPunct && (after.s == "^" || after.s == "!" || after.s == "_") && !after.sp {
		return false
	}
	num, ok1 := new(big.Int).SetString(t.s, 10)
	den, ok2 := new(big.Int).SetString(d.s, 10)
	return ok1 && ok2 && num.Sign() > 0 && num.Cmp(den) < 0
}

// isProperFrac reports whether n is \frac{p}{q} of integer literals with
// 0 < p < q.
func isProperFrac(n *node) bool {
	if !isIntFrac(n) {
		return false
	}
	return n.args[0].val.Cmp(n.args[1].args[0].val) < 0
}

// isIntLit reports whether n is a non-negative integer literal, possibly
// negated.
func isIntLit(n *node) bool {
	if n.k == nNeg {
		n = n.args[0]
	}
	return n.k == nNum && !n.flt && n.val.IsInt() && n.val.Sign() > 0
}

// isIntFrac reports whether n is \frac{a}{b} of integer literals.
func isIntFrac(n *node) bool {
	return n.k == nMul && len(n.args) == 2 && isIntLit(n.args[0]) && n.args[0].k == nNum &&
		n.args[1].k == nPow && isIntLit(n.args[1].args[0]) && n.args[1].args[0].k == nNum
}

// isNumberish reports whether n is a number or a number with a sign or
// percent, π or a root of a number, the kind of thing a unit word may
// follow (5 cm, 2\sqrt{2} units, 3\pi square feet).
func isNumberish(n *node) bool {
	switch n.k {
	case nNum:
		return true
	case nConst:
		return n.name == "pi"
	case nFunc:
		return (n.name == "sqrt" || n.name == "root") && isNumberish(n.args[0])
	case nNeg, nPercent:
		return isNumberish(n.args[0])
	case nMul:
		return isNumberish(n.args[len(n.args)-1]) || isNumberish(n.args[0])
	case nPow:
		return isNumberish(n.args[0])
	}
	return false
}

// mulOf builds a product, dropping text factors (units) next to others,
// but not prose (see isProse): \text{not } 5 is no unit of 5.
func (p *parser) mulOf(fs []*node) *node {
	if len(fs) > 1 {
		var keep []*node
		for _, f := range fs {
			if !isTextual(f) || isProse(textOf(f)) {
				keep = append(keep, f)
			}
		}
		if len(keep) > 0 {
			fs = keep
		}
	}
	if len(fs) == 1 {
		return fs[0]
	}
	return &node{k: nMul, args: fs}
}

// isTextual reports whether n is a text, a power of one (\text{cm}^2) or
// a product or quotient of such (\frac{\text{km}}{\text{h}}).
func isTextual(n *node) bool {
	switch n.k {
	case nText:
		return true
	case nPow:
		return isTextual(n.args[0])
	case nMul:
		for _, a := range n.args {
			if !isTextual(a) {
				return false
			}
		}
		return len(n.args) > 0
	}
	return false
}

// textOf returns the words of a textual node (see isTextual).
func textOf(n *node) string {
	for n.k == nPow {
		n = n.args[0]
	}
	if n.k == nMul {
		words := make([]string, len(n.args))
		for i, a := range n.args {
			words[i] = textOf(a)
		}
		return strings.Join(words, " ")
	}
	return n.name
}

// proseWords negate or reject: a text holding one rules out the number
// beside it ("not", "is wrong", "is not the answer") rather than naming
// its unit ("apples", "is the answer" may be dropped).
var proseWords = map[string]bool{
	"not": true, "never": true, "none": true, "nor": true, "neither": true, "cannot": true,
	"isn't": true, "aren't": true, "wasn't": true, "weren't": true, "wrong": true,
	"incorrect": true, "false": true,
}

// isProse reports whether the text s, outside parentheses (a remark:
// "(not 6)"), holds one of the proseWords.
func isProse(s string) bool {
	depth := 0
	for i := 0; i < len(s); {
		switch c := s[i]; {
		case c == '(':
			depth++
		case c == ')':
			depth = max(0, depth-1)
		case isLetter(c) && depth == 0:
			j := i
			for j < len(s) && (isLetter(s[j]) || s[j] == '\'') {
				j++
			}
			if proseWords[strings.ToLower(s[i:j])] {
				return true
			}
			i = j
			continue
		}
		i++
	}
	return false
}

// startsAtom reports whether the next token can begin an implicit factor.
func (p *parser) startsAtom() bool {
	t := p.peek()
	switch t.k {
	case tNum, tUni:
		return true
	case tWord:
		l := strings.ToLower(t.s)
		return l != "and" && l != "or"
	case tCmd:
		if lvl, _ := p.sepLevel(); lvl > 0 {
			return false
		}
		if isInfixGroupOp(t) {
			return false
		}
		switch t.s {
		case `\end`, `\right`, `\\`, `\}`, `\cdot`, `\times`, `\div`, `\pm`, `\mp`, `\cup`, `\cap`,
			`\setminus`, `\rangle`, `\rfloor`, `\rceil`, `\ast`, `\hline`, `\|`:
			return false
		}
		if _, ok := relOps[t.s]; ok {
			return false
		}
		return true
	case tPunct:
		switch t.s {
		case "(", "{":
			return true
		case "[":
			return false
		case "|":
			return p.absOpen == 0
		}
	}
	return false
}

func (p *parser) parseUnary() *node {
	p.enter()
	defer p.leave()
	t := p.peek()
	switch {
	case t.k == tPunct && t.s == "-":
		p.next()
		x := p.parseUnary()
		if x == nil {
			p.fail("missing operand of -")
		}
		if x.k == nPercent {
			// -10% is the percentage -10, so that it answers -10 as 10%
			// answers 10.
			return mk(nPercent, mk(nNeg, x.args[0]))
		}
		return mk(nNeg, x)
	case t.k == tPunct && t.s == "+":
		p.next()
		return p.parseUnary()
	case t.k == tCmd && (t.s == `\pm` || t.s == `\mp`):
		p.next()
		x := p.parseUnary()
		if x == nil {
			p.fail("missing operand of ±")
		}
		return mk(nPM, x)
	}
	return p.parsePostfix()
}

func (p *parser) parsePostfix() *node {
	a := p.parseAtom()
	if a == nil {
		return nil
	}
	for {
		t := p.peek()
		switch {
		case t.k == tPunct && t.s == "^" && p.peekAt(1).k == tCmd && p.peekAt(1).s == `\circ`:
			// Degrees (kept by Normalize only beside a trigonometric
			// function): x° is x·π/180 radians.
			p.next()
			p.next()
			a = mk(nMul, a, &node{k: nConst, name: "pi"}, inv(numInt(180)))
		case t.k == tPunct && (t.s == "^" || t.s == "**"):
			p.next()
			e := p.parseExponent()
			if e == nil {
				continue // x^{} or degree marks already removed
			}
			a = mk(nPow, a, e)
		case t.k == tPunct && t.s == "!" && !t.sp:
			p.next()
			if nx := p.peek(); nx.k == tPunct && nx.s == "!" && !nx.sp {
				// Double factorial: 5!! = 5*3*1.
				p.next()
				a = &node{k: nFunc, name: "fact2", args: []*node{a}}
				continue
			}
			a = &node{k: nFunc, name: "fact", args: []*node{a}}
		case t.k == tPunct && t.s == "%":
			p.next()
			a = mk(nPercent, a)
		case t.k == tPunct && t.s == "'" && a.k == nSym:
			p.next()
			a = &node{k: nSym, name: a.name + "'"}
			if p.is("(") && !p.peek().sp {
				a = p.callArgs(a.name)
			}
		case t.k == tPunct && t.s == "_":
			// Subscript on a non-symbol, e.g. )_2: keep as part of a name.
			p.next()
			sub := p.rawArg()
			a = &node{k: nFunc, name: "sub_" + sub, args: []*node{a}}
		default:
			return a
		}
	}
}

// parseExponent parses the argument of ^: a braced group, or one token
// (a whole digit run, one letter, one command atom), with optional sign.
func (p *parser) parseExponent() *node {
	t := p.peek()
	switch {
	case t.k == tPunct && t.s == "{":
		p.next()
		if p.is("}") {
			p.next()
			return nil
		}
		x := p.parseList(func(t token) bool { return t.s == "}" && t.k == tPunct })
		p.expect("}")
		return x
	case t.k == tPunct && (t.s == "-" || t.s == "+"):
		p.next()
		x := p.parseExponent()
		if x == nil {
			p.fail("missing exponent")
		}
		if t.s == "-" {
			return mk(nNeg, x)
		}
		return x
	case t.k == tNum:
		p.next()
		return p.numberNode(t.s)
	case t.k == tWord:
		return p.takeLetter()
	case t.k == tPunct && t.s == "(":
		return p.parseAtom()
	case t.k == tCmd, t.k == tUni:
		return p.parseAtom()
	}
	p.fail("bad exponent %q", t.s)
	return nil
}

// parseArg parses a macro argument: a braced group or a single token (one
// digit of a number, as in \frac12).
func (p *parser) parseArg() *node {
	t := p.peek()
	switch {
	case t.k == tPunct && t.s == "{":
		p.next()
		x := p.groupBody(func(t token) bool { return t.s == "}" && t.k == tPunct })
		p.expect("}")
		if x == nil {
			p.fail("empty argument")
		}
		return x
	case t.k == tNum:
		if len(t.s) > 1 && !strings.Contains(t.s, ".") {
			// \frac12: split off one digit.
			p.toks[p.pos].s = t.s[1:]
			p.toks[p.pos].sp = false
			return p.numberNode(t.s[:1])
		}
		p.next()
		return p.numberNode(t.s)
	case t.k == tWord:
		return p.takeLetter()
	case t.k == tCmd, t.k == tUni:
		return p.parseAtom()
	}
	p.fail("bad argument %q", t.s)
	return nil
}

// sqrtArg parses a radicand: the braced group or single token \sqrt takes
// in LaTeX, or a parenthesised group, which in \sqrt(2), sqrt(x+1) and
// √(2) can only be the radicand.
func (p *parser) sqrtArg() *node {
	if !p.is("(") {
		return p.parseArg()
	}
	x := p.parenGroup()
	if x == nil || x.k == nList {
		p.fail("bad radicand")
	}
	return x
}

// parenGroup parses a parenthesised group from its "(": an expression or
// a list (nList), nil when it is empty.
func (p *parser) parenGroup() *node {
	p.next()
	x := p.parseList(func(t token) bool { return t.k == tPunct && t.s == ")" })
	p.expect(")")
	return x
}

// rawArg returns the raw text of a braced group or single token.
func (p *parser) rawArg() string {
	t := p.peek()
	if t.k == tPunct && t.s == "{" {
		p.next()
		var b strings.Builder
		depth := 1
		for {
			t := p.next()
			if t.k == tEOF {
				p.fail("unclosed {")
			}
			if t.k == tPunct && t.s == "{" {
				depth++
			}
			if t.k == tPunct && t.s == "}" {
				depth--
				if depth == 0 {
					break
				}
			}
			if t.sp && b.Len() > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(t.s)
		}
		return b.String()
	}
	if t.k == tWord {
		p.next()
		return t.s
	}
	if t.k == tEOF {
		p.fail("missing argument")
	}
	p.next()
	return t.s
}

// takeLetter consumes one letter of the current word token.
func (p *parser) takeLetter() *node {
	t := p.peek()
	if len(t.s) > 1 {
		p.toks[p.pos].s = t.s[1:]
		p.toks[p.pos].sp = false
		p.b.left--
	} else {
		p.next()
	}
	return letterNode(t.s[:1])
}

func letterNode(l string) *node {
	switch l {
	case "e":
		return &node{k: nConst, name: "e"}
	case "i":
		return &node{k: nConst, name: "i"}
	}
	return &node{k: nSym, name: l}
}

func (p *parser) numberNode(s string) *node {
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		p.fail("bad number %q", s)
	}
	return &node{k: nNum, val: r, flt: strings.ContainsAny(s, ".eE")}
}

// repeatMarks are the commands that mark the repeating digits of a
// decimal: 0.\overline{3}, 0.1\dot{6}.
var repeatMarks = map[string]bool{`\overline`: true, `\bar`: true, `\dot`: true}

// repeatingTail reads the repeating part after the number lit just
// consumed, "0." followed by \overline{3} or "0.1" followed by
// \overline{6} (no spaces), and returns the exact value, or nil (nothing
// consumed) when none follows.
func (p *parser) repeatingTail(lit string) *node {
	k := 0
	if !strings.Contains(lit, ".") {
		if dot := p.peek(); dot.k != tPunct || dot.s != "." || dot.sp {
			return nil
		}
		k = 1
	}
	if strings.ContainsAny(lit, "eE") {
		return nil
	}
	mark := p.peekAt(k)
	if mark.k != tCmd || !repeatMarks[mark.s] || mark.sp {
		return nil
	}
	var digits string
	n := 0
	if t := p.peekAt(k + 1); t.k == tNum && !t.sp {
		digits, n = t.s, 1
	} else if t.k == tPunct && t.s == "{" && p.peekAt(k+2).k == tNum && p.peekAt(k+3).s == "}" {
		digits, n = p.peekAt(k+2).s, 3
	}
	if digits == "" || strings.Trim(digits, "0123456789") != "" || len(digits) > 64 || len(lit) > 64 {
		return nil
	}
	if n == 1 && mark.s != `\dot` && len(digits) > 1 {
		return nil // \overline 12 is \overline{1}2
	}
	for range k + 1 + n {
		p.next()
	}
	return &node{k: nNum, val: repeatingValue(lit, digits)}
}

// repeatingValue returns the exact value of the decimal lit (such as
// "0.1" or "2") whose digits rep repeat forever after it:
// (IFR - IF) / (10^|F| (10^|R| - 1)) for integer part I, decimals F and
// repeating digits R.
func repeatingValue(lit, rep string) *big.Rat {
	ip, fp, _ := strings.Cut(lit, ".")
	all, _ := new(big.Int).SetString(ip+fp+rep, 10)
	head, _ := new(big.Int).SetString("0"+ip+fp, 10)
	ten := big.NewInt(10)
	den := new(big.Int).Exp(ten, big.NewInt(int64(len(rep))), nil)
	den.Sub(den, big.NewInt(1))
	den.Mul(den, new(big.Int).Exp(ten, big.NewInt(int64(len(fp))), nil))
	return new(big.Rat).SetFrac(all.Sub(all, head), den)
}

// funcWords are function names recognised with or without a backslash.
var funcWords = map[string]bool{
	"sin": true, "cos": true, "tan": true, "sec": true, "csc": true, "cot": true,
	"arcsin": true, "arccos": true, "arctan": true, "sinh": true, "cosh": true, "tanh": true,
	"log": true, "ln": true, "exp": true, "sqrt": true, "abs": true, "gcd": true, "lcm": true,
	"max": true, "min": true, "det": true,
}

// callLetters are single letters read as functions when directly followed
// by "(": f(x), P(x).
var callLetters = map[string]bool{"f": true, "g": true, "h": true, "F": true, "G": true, "H": true, "P": true, "Q": true, "W": true}

func (p *parser) parseAtom() *node {
	p.enter()
	defer p.leave()
	t := p.peek()
	switch t.k {
	case tEOF:
		return nil
	case tNum:
		p.next()
		if r := p.repeatingTail(t.s); r != nil {
			return r
		}
		n := p.numberNode(t.s)
		if p.is("_") && !p.peek().sp {
			p.next()
			return &node{k: nSym, name: t.s + "_" + p.rawArg()}
		}
		return n
	case tUni:
		p.next()
		return p.symbolTail(&node{k: nSym, name: t.s})
	case tWord:
		lw := strings.ToLower(t.s)
		switch {
		case funcWords[lw] && (len(t.s) > 2 || lw == "ln"):
			p.next()
			return p.parseFunc(lw)
		case lw == "pi":
			p.next()
			return &node{k: nConst, name: "pi"}
		case lw == "infty" || lw == "infinity" || lw == "inf":
			p.next()
			return &node{k: nConst, name: "inf"}
		}
		l := p.takeLetter()
		if l.k == nConst {
			return l
		}
		return p.symbolTail(l)
	case tCmd:
		return p.parseCommand()
	case tPunct:
		switch t.s {
		case "(":
			p.next()
			return p.parseGroup("(")
		case "[":
			p.next()
			return p.parseGroup("[")
		case "{":
			p.next()
			x := p.groupBody(func(t token) bool { return t.s == "}" && t.k == tPunct })
			p.expect("}")
			if x == nil {
				return &node{k: nText, name: ""}
			}
			return x
		case "|":
			p.next()
			p.absOpen++
			x := p.parseAdd()
			p.absOpen--
			p.expect("|")
			if x == nil {
				p.fail("empty |")
			}
			return &node{k: nFunc, name: "abs", args: []*node{x}}
		}
	}
	return nil
}

// symbolTail reads a subscript, prime and call arguments after a symbol.
func (p *parser) symbolTail(s *node) *node {
	if p.is("_") {
		p.next()
		t := p.peek()
		if t.k == tPunct && t.s == "{" {
			save := p.pos
			raw := p.rawArg()
			if simpleName(raw) || commandName(raw) {
				s = &node{k: nSym, name: s.name + "_" + strings.ReplaceAll(raw, " ", "")}
			} else {
				p.pos = save
				idx := p.parseArg()
				s = &node{k: nFunc, name: s.name + "_", args: []*node{idx}}
			}
		} else if t.k == tNum {
			p.next()
			s = &node{k: nSym, name: s.name + "_" + t.s}
		} else if t.k == tWord {
			l := p.takeLetter()
			s = &node{k: nSym, name: s.name + "_" + l.name}
		} else {
			s = &node{k: nSym, name: s.name + "_" + p.rawArg()}
		}
	}
	for p.is("'") {
		p.next()
		s = &node{k: nSym, name: s.name + "'"}
	}
	if s.k == nSym && p.is("(") && !p.peek().sp && (callLetters[strings.TrimRight(s.name, "'")] || strings.HasSuffix(s.name, "'")) {
		return p.callArgs(s.name)
	}
	if s.k == nSym && callLetters[s.name] && p.inverseCall() {
		// f^{-1}(x): the inverse function applied, a name as f(x) is,
		// not f to the power -1 times (x).
		for range len(inverseMark) {
			p.next()
		}
		return p.callArgs(s.name + "^{-1}")
	}
	return s
}

// inverseMark is the superscript of an inverse function, f^{-1}(x).
var inverseMark = []string{"^", "{", "-", "1", "}"}

// inverseCall reports whether the next tokens are inverseMark followed
// at once by "(".
func (p *parser) inverseCall() bool {
	for i, s := range inverseMark {
		if t := p.peekAt(i); t.k == tWord || t.s != s {
			return false
		}
	}
	t := p.peekAt(len(inverseMark))
	return t.k == tPunct && t.s == "(" && !t.sp
}

// commandName reports whether s is one command, such as \max or \alpha:
// a subscript x_{\alpha} names a symbol as x_\alpha does.
func commandName(s string) bool {
	return len(s) > 1 && s[0] == '\\' && letterEnd(s, 1) == len(s)
}

func simpleName(s string) bool {
	if s == "" || len(s) > 16 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isLetter(s[i]) && !isDigit(s[i]) && s[i] != ' ' && s[i] != ',' {
			return false
		}
	}
	return true
}

// callArgs parses "(a, b)" after a function name.
func (p *parser) callArgs(name string) *node {
	p.expect("(")
	x := p.parseList(func(t token) bool { return t.s == ")" && t.k == tPunct })
	p.expect(")")
	f := &node{k: nFunc, name: name}
	if x != nil {
		if x.k == nList {
			f.args = x.args
		} else {
			f.args = []*node{x}
		}
	}
	return f
}

// parseGroup parses the inside of ( or [ up to its closing bracket:
// a single item is a parenthesised expression, two items form a tuple or
// an interval depending on the brackets, more items a tuple.
func (p *parser) parseGroup(open string) *node {
	abs := p.absOpen
	p.absOpen = 0
	x := p.parseList(func(t token) bool { return t.k == tPunct && (t.s == ")" || t.s == "]") })
	p.absOpen = abs
	cl := p.peek()
	if cl.k != tPunct || (cl.s != ")" && cl.s != "]") {
		p.fail("unclosed %s", open)
	}
	p.next()
	if x == nil {
		return &node{k: nTuple}
	}
	if x.k != nList {
		if open == "[" && cl.s == "]" || open == "(" && cl.s == ")" {
			return x
		}
		p.fail("mismatched %s%s", open, cl.s)
	}
	if len(x.args) == 2 && (open == "[" || cl.s == "]") {
		return &node{k: nInterval, args: x.args, lc: open == "[", rc: cl.s == "]"}
	}
	return &node{k: nTuple, args: x.args}
}

// parseFunc parses the argument of a named function (sin, log, sqrt...):
// optional power (\sin^2 x), optional base (\log_2 x), then a group or
// a product of atoms.
func (p *parser) parseFunc(name string) *node {
	var pow, base *node
	for i := 0; i < 2; i++ {
		if p.is("^") {
			p.next()
			pow = p.parseExponent()
		} else if p.is("_") {
			p.next()
			base = p.parseArg()
		}
	}
	var arg *node
	if name == "sqrt" {
		arg = p.sqrtArg()
	} else if p.is("(") {
		x := p.parenGroup()
		if x == nil {
			p.fail("empty call")
		}
		if x.k == nList {
			f := &node{k: nFunc, name: name, args: x.args}
			return wrapPow(f, pow)
		}
		arg = x
	} else {
		arg = p.parseFuncOperand()
	}
	if arg == nil {
		p.fail("missing argument of %s", name)
	}
	f := &node{k: nFunc, name: name, args: []*node{arg}}
	if base != nil && name == "log" {
		f.args = append(f.args, base)
	}
	return wrapPow(f, pow)
}

// parseFuncOperand parses an unbracketed function operand: a product of
// postfix atoms, stopping before another function.
func (p *parser) parseFuncOperand() *node {
	first := p.parseUnaryNoFunc()
	if first == nil {
		return nil
	}
	fs := []*node{first}
	for p.startsAtom() && !p.nextIsFunc() {
		f := p.parsePostfix()
		if f == nil {
			break
		}
		fs = append(fs, f)
		if len(fs) > MaxElements {
			p.fail("too many factors")
		}
	}
	if len(fs) == 1 {
		return first
	}
	return &node{k: nMul, args: fs}
}

func (p *parser) parseUnaryNoFunc() *node {
	if p.is("-") {
		p.next()
		x := p.parseUnaryNoFunc()
		if x == nil {
			p.fail("missing operand")
		}
		return mk(nNeg, x)
	}
	return p.parsePostfix()
}

func (p *parser) nextIsFunc() bool {
	t := p.peek()
	n := strings.TrimPrefix(strings.ToLower(t.s), `\`)
	return (t.k == tCmd || t.k == tWord && len(n) > 2) && funcWords[n]
}

func wrapPow(f, pow *node) *node {
	if pow == nil {
		return f
	}
	if pow.k == nNeg && pow.args[0].k == nNum && pow.args[0].val.Cmp(big.NewRat(1, 1)) == 0 {
		// \sin^{-1} is arcsin.
		if strings.HasPrefix(f.name, "sin") || strings.HasPrefix(f.name, "cos") || strings.HasPrefix(f.name, "tan") {
			f.name = "arc" + f.name
			return f
		}
	}
	return mk(nPow, f, pow)
}

// wrappers whose braced content names a symbol or a text.
var symbolWrappers = map[string]bool{
	`\mathrm`: true, `\mathbf`: true, `\mathit`: true, `\boldsymbol`: true, `\mathbb`: true, `\mathcal`: true,
	`\mathsf`: true, `\mathtt`: true, `\vec`: true, `\overline`: true, `\overrightarrow`: true, `\hat`: true,
	`\bar`: true, `\widehat`: true, `\tilde`: true, `\dot`: true, `\ddot`: true, `\operatorname`: true,
	`\bm`: true, `\mathnormal`: true,
}

// fontWrappers are the symbolWrappers that only select a font: their
// content is read as an expression unless it is a word or a letter.
var fontWrappers = map[string]bool{
	`\mathrm`: true, `\mathbf`: true, `\mathit`: true, `\boldsymbol`: true, `\mathsf`: true,
	`\mathtt`: true, `\bm`: true, `\mathnormal`: true,
}

func (p *parser) parseCommand() *node {
	t := p.next()
	switch t.s {
	case `\frac`:
		a := p.parseArg()
		b := p.parseArg()
		return mk(nMul, a, inv(b))
	case `\sqrt`:
		if p.is("[") {
			p.next()
			idx := p.parseList(func(t token) bool { return t.k == tPunct && t.s == "]" })
			p.expect("]")
			x := p.sqrtArg()
			if idx == nil {
				return &node{k: nFunc, name: "sqrt", args: []*node{x}}
			}
			return &node{k: nFunc, name: "root", args: []*node{x, idx}}
		}
		return &node{k: nFunc, name: "sqrt", args: []*node{p.sqrtArg()}}
	case `\binom`:
		a := p.parseArg()
		b := p.parseArg()
		return &node{k: nFunc, name: "binom", args: []*node{a, b}}
	case `\pi`:
		return &node{k: nConst, name: "pi"}
	case `\infty`, `\inf`:
		return &node{k: nConst, name: "inf"}
	case `\emptyset`, `\varnothing`:
		return &node{k: nSet}
	case `\boxed`, `\fbox`:
		return p.parseArg()
	case `\text`:
		raw := strings.TrimSpace(p.rawArg())
		return p.textNode(raw)
	case `\{`:
		if p.isSetBuilder() {
			return p.parseSetBuilder()
		}
		x := p.parseList(func(t token) bool { return t.k == tCmd && t.s == `\}` })
		p.expect(`\}`)
		s := &node{k: nSet}
		if x != nil {
			if x.k == nList {
				s.args = x.args
			} else {
				s.args = []*node{x}
			}
		}
		return s
	case `\langle`:
		x := p.parseList(func(t token) bool { return t.k == tCmd && t.s == `\rangle` })
		p.expect(`\rangle`)
		if x != nil && x.k == nList {
			return &node{k: nTuple, args: x.args}
		}
		return x
	case `\lfloor`, `\lceil`:
		closer, name := `\rfloor`, "floor"
		if t.s == `\lceil` {
			closer, name = `\rceil`, "ceil"
		}
		x := p.parseList(func(t token) bool { return t.k == tCmd && t.s == closer })
		p.expect(closer)
		if x == nil {
			p.fail("empty %s", name)
		}
		return &node{k: nFunc, name: name, args: []*node{x}}
	case `\|`:
		p.absOpen++
		x := p.parseAdd()
		p.absOpen--
		p.expect(`\|`)
		return &node{k: nFunc, name: "abs", args: []*node{x}}
	case `\begin`:
		return p.parseEnv()
	case `\sum`, `\prod`:
		return p.parseSum(strings.TrimPrefix(t.s, `\`))
	case `\dots`, `\ldots`, `\cdots`:
		return &node{k: nSym, name: "…"}
	case `\pmod`, `\mod`:
		if m, ok := new(big.Int).SetString(strings.TrimSpace(p.rawArg()), 10); ok && m.Sign() > 0 {
			p.mod = m
		}
		return &node{k: nText, name: ""}
	case `\angle`, `\triangle`:
		return p.parseAtomOrText()
	case `\\`, `\hline`:
		return nil
	}
	name := strings.TrimPrefix(t.s, `\`)
	if funcWords[name] {
		return p.parseFunc(name)
	}
	if symbolWrappers[t.s] {
		save := p.pos
		// An upright word set off by a space after a number is a unit, as
		// in 18 \mathrm{~m} (\mathrm{ m} once normalized) and 18\,\mathrm{s}.
		spaced := t.s == `\mathrm` && p.is("{") &&
			(p.peekAt(1).sp || t.sp && p.pos >= 2 && p.toks[p.pos-2].k == tNum)
		raw := strings.TrimSpace(p.rawArg())
		unit := spaced && isUnitText(raw)
		if fontWrappers[t.s] && raw != "" && !isWord(raw) && !unit {
			// A font changes the look, not the value: \mathbf{70} is 70.
			p.pos = save
			return p.parseArg()
		}
		switch {
		case t.s == `\operatorname`:
			if funcWords[raw] {
				return p.parseFunc(raw)
			}
			if p.is("(") {
				return p.callArgs(raw)
			}
			return &node{k: nSym, name: raw}
		case t.s == `\mathrm` && funcWords[raw] && !unit:
			// An upright function name is the function, as with
			// \operatorname: \mathrm{lcm}(4, 6) is 12.
			return p.parseFunc(raw)
		case (t.s == `\mathrm` || t.s == `\mathit`) && (raw == "e" || raw == "i"):
			return &node{k: nConst, name: raw}
		case t.s == `\mathrm` && (len(raw) > 1 && isWord(raw) || unit):
			return p.textNode(raw)
		case t.s == `\mathbb` && raw == "R":
			// The reals are the whole line, (-\infty, \infty).
			inf := &node{k: nConst, name: "inf"}
			return &node{k: nInterval, args: []*node{mk(nNeg, inf), inf}}
		}
		if raw == "" {
			return &node{k: nText}
		}
		prefix := ""
		switch t.s {
		case `\overline`, `\overrightarrow`, `\hat`, `\bar`, `\widehat`, `\tilde`, `\dot`, `\ddot`:
			prefix = t.s[1:] + ":"
		}
		return p.symbolTail(&node{k: nSym, name: prefix + raw})
	}
	if len(t.s) == 2 && !isLetter(t.s[1]) {
		// \; \, etc. should be gone; other escaped symbols are ignored.
		return p.parseAtomOrText()
	}
	return p.symbolTail(&node{k: nSym, name: t.s})
}

func (p *parser) parseAtomOrText() *node {
	if p.startsAtom() {
		return p.parsePostfix()
	}
	return &node{k: nText}
}

// isUnitText reports whether s reads as a unit: letters, spaces and
// slashes (m, km, m/s), at least one letter.
func isUnitText(s string) bool {
	letter := false
	for i := 0; i < len(s); i++ {
		switch {
		case isLetter(s[i]):
			letter = true
		case s[i] != ' ' && s[i] != '/':
			return false
		}
	}
	return letter
}

func isWord(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isLetter(s[i]) && s[i] != ' ' {
			return false
		}
	}
	return true
}

// textNode turns \text{...} content into a node: a number when it is one
// (alone, in parentheses, or followed by a unit as in \text{12 inches},
// which is 12 as 12 \text{ inches} is; its thousands may be grouped,
// \text{1,200 dollars}), a list of symbols when it lists single letters
// (\text{A, C}), otherwise text.
func (p *parser) textNode(raw string) *node {
	if raw == "" {
		return &node{k: nText}
	}
	numeral := func(s string) *node {
		if thousandsRe.MatchString(s) {
			s = strings.ReplaceAll(s, ",", "")
		}
		if r, ok := new(big.Rat).SetString(s); ok && isNumeral(s) {
			return &node{k: nNum, val: r, flt: strings.Contains(s, ".")}
		}
		return nil
	}
	if n := numeral(raw); n != nil {
		return n
	}
	if n, unit, ok := strings.Cut(raw, " "); ok && isUnitText(unit) && !isProse(unit) {
		if x := numeral(n); x != nil {
			return x
		}
	}
	if letters := strings.Split(raw, ","); len(letters) > 1 {
		// \text{A, C}: the letters of options, a list as A, C is.
		list := &node{k: nList}
		for _, l := range letters {
			if l = strings.TrimSpace(l); len(l) != 1 || !isLetter(l[0]) {
				list = nil
				break
			}
			list.args = append(list.args, &node{k: nSym, name: l})
		}
		if list != nil {
			return list
		}
	}
	if len(raw) <= 3 && strings.Trim(raw, "()") != raw {
		raw = strings.Trim(raw, "()")
	}
	if len(raw) > 2 && raw[0] == '(' && raw[len(raw)-1] == ')' {
		// A number in parentheses, as AoPS writes an AIME answer:
		// \textbf{(051)} is 51.
		in := strings.TrimSpace(raw[1 : len(raw)-1])
		if r, ok := new(big.Rat).SetString(in); ok && isNumeral(in) {
			return &node{k: nNum, val: r, flt: strings.Contains(in, ".")}
		}
	}
	return &node{k: nText, name: raw}
}

func isNumeral(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) && s[i] != '.' && s[i] != '-' {
			return false
		}
	}
	return true
}

// isSetBuilder reports whether the tokens after \{ read "element |
// condition \}" or "element : condition \}": a separator outside
// brackets after at least one token, and a relation in the condition.
func (p *parser) isSetBuilder() bool {
	depth, sep := 0, -1
	for i := p.pos; i < len(p.toks) && i-p.pos < MaxAnswerBytes; i++ {
		t := p.toks[i]
		switch {
		case t.k == tPunct && (t.s == "(" || t.s == "[" || t.s == "{"), t.k == tCmd && t.s == `\{`:
			depth++
		case t.k == tCmd && t.s == `\}` && depth == 0:
			return false
		case t.k == tPunct && (t.s == ")" || t.s == "]" || t.s == "}"), t.k == tCmd && t.s == `\}`:
			depth--
		case depth == 0 && sep < 0 && t.k == tPunct && (t.s == "|" || t.s == ":") && i > p.pos:
			sep = i
		case depth == 0 && sep >= 0:
			if _, ok := relOps[t.s]; ok && (t.k == tPunct || t.k == tCmd) {
				return true
			}
		}
	}
	return false
}

// parseSetBuilder parses "element | condition \}" after \{.
func (p *parser) parseSetBuilder() *node {
	// A | or : here separates; it does not open |x| or make a ratio.
	p.absOpen++
	inElem := p.inElem
	p.inElem = true
	elem := p.parseRel()
	p.absOpen--
	p.inElem = inElem
	if elem == nil || !(p.is("|") || p.is(":")) {
		p.fail("bad set-builder element")
	}
	p.next()
	cond := p.parseList(func(t token) bool { return t.k == tCmd && t.s == `\}` })
	p.expect(`\}`)
	if cond == nil {
		p.fail("empty set-builder condition")
	}
	return &node{k: nBuilder, args: []*node{elem, cond}}
}

// clock reads a clock time H:MM or H:MM:SS (H of at most two digits and
// at most 24, MM and SS of exactly two digits and below 60), optionally
// followed by am/pm (AM, p.m., \text{ pm}), and returns it with the
// hours on a 24-hour clock; it returns nil and consumes nothing when the
// next tokens are no clock time (or continue as an expression: 1:30 + 2).
func (p *parser) clock() *node {
	part := func(k int, width int, limit int64) (int64, bool) {
		t := p.peekAt(k)
		if t.k != tNum || strings.ContainsAny(t.s, ".eE") || width > 0 && len(t.s) != width || len(t.s) > 2 {
			return 0, false
		}
		v := int64(0)
		for i := 0; i < len(t.s); i++ {
			v = 10*v + int64(t.s[i]-'0')
		}
		return v, v <= limit
	}
	colon := func(k int) bool { t := p.peekAt(k); return t.k == tPunct && t.s == ":" && !t.sp }
	h, ok := part(0, 0, 24)
	if !ok || !colon(1) {
		return nil
	}
	m, ok := part(2, 2, 59)
	if !ok || p.peekAt(2).sp {
		return nil
	}
	n := 3
	sec := int64(0)
	if colon(3) {
		if sec, ok = part(4, 2, 59); !ok || p.peekAt(4).sp {
			return nil
		}
		n = 5
	}
	half, k := p.meridiem(n)
	if half != "" {
		if h == 0 || h > 12 {
			return nil
		}
		switch {
		case half == "am" && h == 12:
			h = 0
		case half == "pm" && h < 12:
			h += 12
		}
		n = k
	}
	if t := p.peekAt(n); t.k == tNum || t.k == tPunct && strings.Contains("^/:.+-*!", t.s) && t.s != "" {
		return nil
	}
	for range n {
		p.next()
	}
	return &node{k: nClock, args: []*node{numInt(h), numInt(m), numInt(sec)}}
}

// meridiem reads "am" or "pm" at token k (am, AM, a.m., \text{ p.m.}) and
// returns it with the index of the token after it, or "".
func (p *parser) meridiem(k int) (string, int) {
	word := func(t token) string {
		if t.k != tWord {
			return ""
		}
		return strings.ToLower(t.s)
	}
	t := p.peekAt(k)
	if t.k == tCmd && (t.s == `\text` || t.s == `\mathrm`) && p.peekAt(k+1).s == "{" {
		var b strings.Builder
		j := k + 2
		for ; j < k+8 && p.peekAt(j).k != tEOF && p.peekAt(j).s != "}"; j++ {
			b.WriteString(p.peekAt(j).s)
		}
		if p.peekAt(j).s != "}" {
			return "", k
		}
		switch strings.ToLower(strings.ReplaceAll(b.String(), ".", "")) {
		case "am":
			return "am", j + 1
		case "pm":
			return "pm", j + 1
		}
		return "", k
	}
	switch w := word(t); {
	case w == "am" || w == "pm":
		return w, k + 1
	case (w == "a" || w == "p") && p.peekAt(k+1).s == "." && word(p.peekAt(k+2)) == "m":
		if p.peekAt(k+3).s == "." {
			return w + "m", k + 4
		}
		return w + "m", k + 3
	}
	return "", k
}

// parseSum parses \sum_{k=lo}^{hi} body.
func (p *parser) parseSum(name string) *node {
	var lo, hi, v *node
	for i := 0; i < 2; i++ {
		if p.is("_") {
			p.next()
			sub := p.parseArg()
			if sub.k == nRel && len(sub.args) == 2 {
				v, lo = sub.args[0], sub.args[1]
			} else {
				v = sub
			}
		} else if p.is("^") {
			p.next()
			hi = p.parseExponent()
		}
	}
	body := p.parseMul()
	if body == nil {
		p.fail("empty %s", name)
	}
	if v == nil {
		v = &node{k: nSym, name: "?"}
	}
	if lo == nil {
		lo = &node{k: nSym, name: "?"}
	}
	if hi == nil {
		hi = &node{k: nSym, name: "?"}
	}
	return &node{k: nSum, name: name, args: []*node{v, lo, hi, body}}
}

// parseEnv parses \begin{name} ... \end{name}: matrices become nMatrix,
// other environments a list of their rows.
func (p *parser) parseEnv() *node {
	env := p.rawArg()
	if env == "array" && p.is("{") {
		p.rawArg()
	}
	stop := func(t token) bool {
		return t.k == tCmd && (t.s == `\end` || t.s == `\\`) || t.k == tPunct && t.s == "&"
	}
	var rows [][]*node
	var row []*node
	for {
		if p.peek().k == tEOF {
			p.fail("unclosed environment %s", env)
		}
		cell := p.parseList(stop)
		t := p.next()
		row = append(row, cell)
		if t.s == "&" {
			continue
		}
		// Row ends at \\ or \end.
		empty := true
		for _, c := range row {
			if c != nil {
				empty = false
			}
		}
		if !empty {
			rows = append(rows, row)
			if len(rows) > MaxElements {
				p.fail("too many rows")
			}
		}
		row = nil
		if t.s == `\end` {
			p.rawArg()
			break
		}
	}
	for _, r := range rows {
		for j, c := range r {
			if c == nil {
				r[j] = numInt(0)
			}
		}
	}
	switch strings.TrimSuffix(env, "*") {
	case "pmatrix", "bmatrix", "Bmatrix", "matrix", "smallmatrix", "array", "vmatrix", "Vmatrix":
		if len(rows) == 0 {
			p.fail("empty matrix")
		}
		m := &node{k: nMatrix, rows: rows}
		if strings.HasPrefix(env, "v") || strings.HasPrefix(env, "V") {
			return &node{k: nFunc, name: "det", args: []*node{m}}
		}
		return m
	}
	var items []*node
	for _, r := range rows {
		items = append(items, r...)
	}
	if len(items) == 1 {
		return items[0]
	}
	return &node{k: nList, args: items}
}
