package grader

import (
	"hash/fnv"
	"math"
	"math/big"
	"math/cmplx"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
)

// comparer compares two parsed answers, gold first.
type comparer struct {
	cfg     Config
	b       *budget
	lastHow string
}

func (c *comparer) how() string {
	if c.lastHow == "" {
		return "structural"
	}
	return c.lastHow
}

// equal compares gold g with answer p.
func (c *comparer) equal(g, p *node) bool {
	c.b.left--
	if c.b.left < 0 || g == nil || p == nil {
		return false
	}
	g, p = c.prep(g), c.prep(p)
	if c.cfg.NonStrict {
		g, p = renameVars(g), renameVars(p)
	}
	if g.k == nFalse || p.k == nFalse {
		c.lastHow = "false chain"
		return false
	}
	// A labelled equation "x = v" stands for v when the other side is not
	// an equation.
	if isEq(g) && !isRel(p) {
		if !g.lab {
			return false
		}
		g = g.args[1]
	}
	if isEq(p) && !isRel(g) {
		switch {
		case p.lab:
			p = p.args[1]
		case len(p.args) == 2 && isLabelSum(p.args[0]) && isConstant(p.args[1]):
			// "m + n = 37" answers with the sum a problem asks for ("find
			// m + n"), as "x = 3" does with x; 2x + 1 = 7 is still an
			// equation to solve.
			p = p.args[1]
		default:
			return false
		}
	}
	// The gold's value is its exact side; the answer's approximations
	// count only against a decimal gold.
	if g.k == nApprox {
		g = g.args[0]
	}
	if p.k == nApprox {
		return c.approxEqual(g, p)
	}
	// ± expands into alternatives compared as sets.
	ga, pa := c.expand(g), c.expand(p)
	if len(ga) != 1 || len(pa) != 1 {
		// Against ±, a list or set stands for its members.
		if len(ga) == 1 && (g.k == nList || g.k == nSet) {
			ga = c.elems(g)
		}
		if len(pa) == 1 && (p.k == nList || p.k == nSet) {
			pa = c.elems(p)
		}
		return c.setEqual(ga, pa)
	}
	g, p = ga[0], pa[0]
	switch {
	case g.k == nPercent || p.k == nPercent:
		return c.percentEqual(g, p)
	case g.k == nBuilder || p.k == nBuilder:
		return c.builderEqual(g, p)
	case g.k == nClock || p.k == nClock:
		// Clock times: the same time of day (20:34 = 20:34:00 = 8:34 pm).
		c.lastHow = "clock"
		return g.k == p.k && canon(g) == canon(p)
	case isRel(g) || isRel(p):
		return c.relEqual(g, p)
	case isIntervalish(g) || isIntervalish(p):
		return c.intervalEqual(g, p)
	case g.k == nMatrix || p.k == nMatrix:
		return c.matrixEqual(g, p)
	case isColl(g) || isColl(p):
		return c.collEqual(g, p)
	case g.k == nRatio || p.k == nRatio:
		if g.k != p.k || len(g.args) != len(p.args) {
			return false
		}
		return c.seqEqual(g.args, p.args)
	case g.k == nText || p.k == nText:
		kg, kp := textKey(nodeText(g)), textKey(nodeText(p))
		c.lastHow = "text"
		return kg != "" && kg == kp
	}
	return c.scalarEqual(g, p)
}

func isRel(n *node) bool { return n.k == nRel }

func isEq(n *node) bool {
	if n.k != nRel {
		return false
	}
	for _, o := range n.ops {
		if o != "=" {
			return false
		}
	}
	return true
}

func isColl(n *node) bool { return n.k == nList || n.k == nSet || n.k == nTuple }

func isIntervalish(n *node) bool { return n.k == nInterval || n.k == nUnion }

func nodeText(n *node) string {
	switch n.k {
	case nText, nSym, nConst:
		return n.name
	case nMul:
		var b strings.Builder
		for _, a := range n.args {
			if a.k != nSym && a.k != nConst && a.k != nText {
				return ""
			}
			b.WriteString(a.name)
		}
		return b.String()
	}
	return ""
}

// prep rewrites a node before comparison: membership "x \in S" becomes
// S, chains of = and ≈ are reduced by reduceChain, and matrix arithmetic
// is carried out.
func (c *comparer) prep(n *node) *node {
	if n.k == nRel && len(n.args) == 2 && (n.ops[0] == "in") {
		return n.args[1]
	}
	if n.k == nRel && n.lab {
		return n
	}
	if n.k == nRel {
		chain := true
		for _, o := range n.ops {
			if o != "=" && o != "~" {
				chain = false
			}
		}
		if chain {
			return c.reduceChain(n)
		}
	}
	if hasMatrix(n, 0) {
		if m := c.matSimplify(n); m != nil {
			return m
		}
	}
	return n
}

// reduceChain reads a chain s0 op s1 op ... sn of = and ≈ (doc.go:
// relations and chains). A label (a name such as x, f(x), AB; the first
// side, or a later plain symbol as in 1 = \zzz = x = 0, or the second of
// two sides as in 5 = x) names the answer; the sides after it are values.
// The value is the last side before the first ≈; a decimal side joined
// by = that agrees with the side before it only approximately (1/3 =
// 0.333) is an approximation too. Every = between two checkable sides
// must hold, else the chain is false (nFalse): 5 = 6 answers nothing;
// f(-3) + 6 = 2 + 6 is not checked.
// The result is "label = value", or the value; a value with
// approximations is an nApprox. Two sides that are not both constants
// and have no label are an identity when they are equal as expressions
// ((x+1)^2 = x^2+2x+1 answers x^2+2x+1), else they stay an equation
// (y^2 = 4x).
func (c *comparer) reduceChain(n *node) *node {
	args, ops := n.args, n.ops
	li := -1
	if isLabel(args[0]) {
		li = 0
	} else {
		for i := 1; i < len(args)-1; i++ {
			if isLabel(args[i]) && args[i].k == nSym && !strings.HasPrefix(args[i].name, `\`) && len(freeSyms(args[0], nil)) > 0 {
				li = i
				break
			}
		}
	}
	vals, vops := args, ops
	var label *node
	switch {
	case li >= 0:
		label, vals, vops = args[li], args[li+1:], ops[li+1:]
	case len(args) == 2 && isLabel(args[1]) && isConstant(args[0]):
		// 5 = x reads as x = 5.
		label, vals, vops = args[1], args[:1], nil
	case len(args) == 2 && !(isConstant(args[0]) && isConstant(args[1])):
		if !c.equal(args[0], args[1]) {
			return n // an equation, such as y^2 = 4x
		}
		return args[1] // an identity, such as (x+1)^2 = x^2+2x+1
	}
	end := len(vals) - 1
	for i := 1; i < len(vals); i++ {
		if vops[i-1] != "=" {
			end = i - 1
			break
		}
		a, b := vals[i-1], vals[i]
		if !checkable(a) || !checkable(b) {
			continue
		}
		if n.mod != nil && c.congruent(a, b, n.mod) || n.mod == nil && c.equal(a, b) {
			continue
		}
		if n.mod == nil && (hasFloat(a) || hasFloat(b)) && c.roughlyEqual(a, b) {
			end = i - 1
			break
		}
		return &node{k: nFalse}
	}
	val := vals[end]
	if end < len(vals)-1 {
		val = &node{k: nApprox, args: append([]*node{val}, vals[end+1:]...)}
	}
	if label == nil {
		return val
	}
	return &node{k: nRel, args: []*node{label, val}, ops: []string{"="}, lab: true}
}

// congruent reports whether the constants a and b are integers congruent
// modulo m.
func (c *comparer) congruent(a, b *node, m *big.Int) bool {
	e := &evaluator{b: c.b}
	va, ok1 := e.eval(a)
	vb, ok2 := e.eval(b)
	if !ok1 || !ok2 || va.r == nil || vb.r == nil || !va.r.IsInt() || !vb.r.IsInt() {
		return false
	}
	d := new(big.Int).Sub(va.r.Num(), vb.r.Num())
	return d.Mod(d, m).Sign() == 0
}

// isConstant reports whether n has no free symbols and no text.
func isConstant(n *node) bool {
	if n.k == nText {
		return false
	}
	return len(freeSyms(n, nil)) == 0
}

// approxEqual compares gold g with an answer value that carries
// approximations (x = 1/3 ≈ 0.33): the exact value decides, and against a
// gold with a decimal literal an approximation may also match, if it is
// roughly the value it approximates.
func (c *comparer) approxEqual(g, p *node) bool {
	if c.equal(g, p.args[0]) {
		return true
	}
	if !hasFloat(g) {
		return false
	}
	for _, a := range p.args[1:] {
		if c.roughlyEqual(p.args[0], a) && c.equal(g, a) {
			return true
		}
	}
	return false
}

// roughlyEqual reports whether the constant a is approximated by b: they
// differ by at most one unit in the last decimal place written in b, or
// by at most 1% of a (π ≈ 3.14, 2/3 ≈ 0.6, e^{10} ≈ 2.2 \times 10^4).
func (c *comparer) roughlyEqual(a, b *node) bool {
	e := &evaluator{b: c.b}
	va, ok1 := e.eval(a)
	vb, ok2 := e.eval(b)
	if !ok1 || !ok2 || !finite(va) || !finite(vb) {
		return false
	}
	d := cmplx.Abs(va.c - vb.c)
	return d <= math.Pow(10, -float64(decimalPlaces(b))) || d <= 0.01*cmplx.Abs(va.c)
}

// decimalPlaces returns the most digits after the decimal point of the
// decimal literals in n.
func decimalPlaces(n *node) int {
	if n == nil {
		return 0
	}
	if n.k == nNum && n.flt {
		// A decimal literal is exact: its denominator is a power of ten
		// (or divides one) whose exponent is the places written.
		d := 0
		for den := new(big.Int).Set(n.val.Denom()); den.Cmp(big.NewInt(1)) > 0 && d < 30; d++ {
			den.Quo(den.Add(den, big.NewInt(9)), big.NewInt(10))
		}
		return d
	}
	m := 0
	for _, a := range n.args {
		m = max(m, decimalPlaces(a))
	}
	return m
}

// isLabel reports whether n names a quantity rather than computing one:
// a symbol, f(x), a_{n}, |AB|, AB, NO/BO, A:B, (p, q), \text{Area}.
// Numbers and sums are not labels.
func isLabel(n *node) bool {
	switch n.k {
	case nSym, nText:
		return true
	case nFunc:
		if n.name == "abs" {
			return isLabel(n.args[0])
		}
		return !knownFuncs[n.name]
	case nMul, nRatio, nTuple:
		if len(n.args) == 0 {
			return false
		}
		for _, a := range n.args {
			if !isLabel(a) {
				return false
			}
		}
		return true
	case nPow:
		// A reciprocal inside a label quotient: NO/BO.
		return n.args[1].k == nNum && n.args[1].val.Cmp(big.NewRat(-1, 1)) == 0 && isLabel(n.args[0])
	}
	return false
}

// knownFuncs are the functions with a value (other than abs): any other
// name, f(x), P(3), is an unknown function, a label.
var knownFuncs = map[string]bool{
	"sin": true, "cos": true, "tan": true, "sec": true, "csc": true, "cot": true, "log": true, "ln": true,
	"exp": true, "sqrt": true, "root": true, "fact": true, "fact2": true, "binom": true, "floor": true,
	"ceil": true, "arcsin": true, "arccos": true, "arctan": true, "sinh": true, "cosh": true, "tanh": true,
	"gcd": true, "lcm": true, "max": true, "min": true,
}

// checkable reports whether n has a known value: a constant (no free
// symbols) with no text and no unknown function in it. f(-3) + 6 and
// \text{A} + \text{B} are not, though they have no free symbols.
func checkable(n *node) bool {
	if !isConstant(n) {
		return false
	}
	var known func(*node) bool
	known = func(n *node) bool {
		switch {
		case n.k == nText:
			return false
		case n.k == nFunc && n.name != "abs" && !knownFuncs[n.name]:
			return false
		}
		for _, a := range n.args {
			if !known(a) {
				return false
			}
		}
		return true
	}
	return known(n)
}

// isLabelSum reports whether n is a sum or difference of labels with no
// number in it: m + n, a - b + c, AB + BC.
func isLabelSum(n *node) bool {
	if n.k != nAdd || len(n.args) < 2 {
		return false
	}
	for _, a := range n.args {
		if a.k == nNeg {
			a = a.args[0]
		}
		if !isLabel(a) {
			return false
		}
	}
	return true
}

// freeSyms appends the names of the free symbols of n.
func freeSyms(n *node, out map[string]bool) map[string]bool {
	if out == nil {
		out = map[string]bool{}
	}
	if n == nil || len(out) > 64 {
		return out
	}
	switch n.k {
	case nSym:
		out[n.name] = true
	case nSum:
		inner := freeSyms(n.args[3], nil)
		if n.args[0].k == nSym {
			delete(inner, n.args[0].name)
		}
		for k := range inner {
			out[k] = true
		}
		freeSyms(n.args[1], out)
		freeSyms(n.args[2], out)
	case nMatrix:
		for _, r := range n.rows {
			for _, x := range r {
				freeSyms(x, out)
			}
		}
	default:
		for _, a := range n.args {
			freeSyms(a, out)
		}
	}
	return out
}

// renameVars renames free symbols to v0, v1, ... in order of appearance.
func renameVars(n *node) *node {
	names := map[string]string{}
	var walk func(n *node) *node
	walk = func(n *node) *node {
		if n == nil {
			return nil
		}
		if n.k == nSym {
			if _, ok := names[n.name]; !ok {
				names[n.name] = "v" + strconv.Itoa(len(names))
			}
			return &node{k: nSym, name: names[n.name]}
		}
		m := *n
		if len(n.args) > 0 {
			m.args = make([]*node, len(n.args))
			for i, a := range n.args {
				m.args[i] = walk(a)
			}
		}
		if len(n.rows) > 0 {
			m.rows = make([][]*node, len(n.rows))
			for i, r := range n.rows {
				m.rows[i] = make([]*node, len(r))
				for j, x := range r {
					m.rows[i][j] = walk(x)
				}
			}
		}
		return &m
	}
	return walk(n)
}

// expand returns the alternatives of a node holding ± terms (at most
// MaxElements), or the node itself. Lists are not expanded here; their
// elements are, in setEqual.
func (c *comparer) expand(n *node) []*node {
	if !hasPM(n, 0) {
		return []*node{n}
	}
	out := expandPM(n)
	if len(out) == 0 || len(out) > MaxElements {
		return []*node{n}
	}
	return out
}

func hasPM(n *node, depth int) bool {
	if n == nil || depth > MaxDepth*16 {
		return false
	}
	if n.k == nPM {
		return true
	}
	if isColl(n) || n.k == nInterval || n.k == nMatrix || n.k == nUnion {
		return false
	}
	for _, a := range n.args {
		if hasPM(a, depth+1) {
			return true
		}
	}
	return false
}

func expandPM(n *node) []*node {
	if n.k == nPM {
		var out []*node
		for _, a := range expandPM(n.args[0]) {
			out = append(out, a, mk(nNeg, a))
		}
		return out
	}
	if len(n.args) == 0 || isColl(n) || n.k == nInterval || n.k == nMatrix || n.k == nUnion {
		return []*node{n}
	}
	alts := [][]*node{{}}
	for _, a := range n.args {
		ea := expandPM(a)
		var next [][]*node
		for _, pre := range alts {
			for _, x := range ea {
				row := append(append([]*node{}, pre...), x)
				next = append(next, row)
			}
		}
		alts = next
		if len(alts) > MaxElements {
			return nil
		}
	}
	out := make([]*node, 0, len(alts))
	for _, args := range alts {
		m := *n
		m.args = args
		out = append(out, &m)
	}
	return out
}

// elems returns the members of a collection, with ± alternatives spread.
func (c *comparer) elems(n *node) []*node {
	var out []*node
	for _, a := range n.args {
		out = append(out, c.expand(c.prep(a))...)
	}
	return out
}

// setEqual reports whether every member of a equals some member of b and
// vice versa.
func (c *comparer) setEqual(a, b []*node) bool {
	if len(a) == 0 || len(b) == 0 {
		return len(a) == len(b)
	}
	if len(a) > MaxElements || len(b) > MaxElements {
		return false
	}
	matchedB := make([]bool, len(b))
	for _, x := range a {
		found := false
		for j, y := range b {
			if c.equal(x, y) {
				found = true
				matchedB[j] = true
				break
			}
		}
		if !found {
			return false
		}
	}
	for j, y := range b {
		if matchedB[j] {
			continue
		}
		found := false
		for _, x := range a {
			if c.equal(x, y) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

func (c *comparer) seqEqual(a, b []*node) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !c.equal(a[i], b[i]) {
			return false
		}
	}
	return true
}

// collEqual compares lists, sets and tuples: tuples (and anything against
// a tuple) in order, lists and sets as sets. A collection against a
// single value is equal only when every member equals it.
func (c *comparer) collEqual(g, p *node) bool {
	if !isColl(g) || !isColl(p) {
		coll, one := g, p
		if !isColl(g) {
			coll, one = p, g
		}
		if len(coll.args) == 1 {
			if coll == g {
				return c.equal(coll.args[0], one)
			}
			return c.equal(one, coll.args[0])
		}
		if coll.k == nTuple || len(coll.args) == 0 {
			return false
		}
		for _, x := range coll.args {
			if coll == g && !c.equal(x, one) || coll == p && !c.equal(one, x) {
				return false
			}
		}
		return true
	}
	if g.k == nTuple || p.k == nTuple {
		// A set of one tuple is that tuple, as a set of one number is
		// that number: \{(1,2)\} answers (1, 2).
		switch {
		case g.k == nTuple && p.k != nTuple && len(p.args) == 1 && p.args[0].k == nTuple:
			return c.equal(g, p.args[0])
		case p.k == nTuple && g.k != nTuple && len(g.args) == 1 && g.args[0].k == nTuple:
			return c.equal(g.args[0], p)
		}
		return c.seqEqual(c.elemsNoPM(g), c.elemsNoPM(p))
	}
	if c.setEqual(c.elems(g), c.elems(p)) {
		return true
	}
	fg, fp := c.flatten(g), c.flatten(p)
	if len(fg) != len(g.args) || len(fp) != len(p.args) {
		return c.setEqual(fg, fp)
	}
	return false
}

func (c *comparer) elemsNoPM(n *node) []*node {
	out := make([]*node, len(n.args))
	for i, a := range n.args {
		out[i] = c.prep(a)
	}
	return out
}

func (c *comparer) flatten(n *node) []*node {
	var out []*node
	for _, a := range n.args {
		if a.k == nList || a.k == nSet {
			out = append(out, c.flatten(a)...)
		} else {
			out = append(out, c.expand(c.prep(a))...)
		}
		if len(out) > MaxElements {
			return out[:MaxElements]
		}
	}
	return out
}

// percentEqual accepts x% for x and for x/100.
func (c *comparer) percentEqual(g, p *node) bool {
	switch {
	case g.k == nPercent && p.k == nPercent:
		return c.equal(g.args[0], p.args[0])
	case g.k == nPercent:
		return c.equal(g.args[0], p) || c.equal(mk(nMul, g.args[0], numInt(1), inv(numInt(100))), p)
	default:
		return c.equal(g, p.args[0]) || c.equal(g, mk(nMul, p.args[0], inv(numInt(100))))
	}
}

// matrixEqual compares matrices elementwise; a one-row or one-column
// matrix also equals a tuple of its entries.
func (c *comparer) matrixEqual(g, p *node) bool {
	if g.k == nMatrix && p.k == nMatrix {
		if len(g.rows) != len(p.rows) {
			return false
		}
		for i := range g.rows {
			if !c.seqEqual(g.rows[i], p.rows[i]) {
				return false
			}
		}
		c.lastHow = "matrix"
		return true
	}
	m, t := g, p
	if p.k == nMatrix {
		m, t = p, g
	}
	if t.k != nTuple {
		return false
	}
	var v []*node
	if len(m.rows) == 1 {
		v = m.rows[0]
	} else {
		for _, r := range m.rows {
			if len(r) != 1 {
				return false
			}
			v = append(v, r[0])
		}
	}
	if m == g {
		return c.seqEqual(v, t.args)
	}
	return c.seqEqual(t.args, v)
}

func hasMatrix(n *node, depth int) bool {
	if n == nil || depth > MaxDepth*16 {
		return false
	}
	if n.k == nMatrix {
		return true
	}
	if n.k != nAdd && n.k != nMul && n.k != nNeg {
		return false
	}
	for _, a := range n.args {
		if hasMatrix(a, depth+1) {
			return true
		}
	}
	return false
}

// matSimplify carries out sums, products and scalar multiples of matrices
// symbolically (entries become expression nodes). It returns nil when the
// shapes do not fit.
func (c *comparer) matSimplify(n *node) *node {
	c.b.left--
	if c.b.left < 0 {
		return nil
	}
	switch n.k {
	case nMatrix:
		return n
	case nNeg:
		m := c.matSimplify(n.args[0])
		if m == nil {
			return nil
		}
		return scaleMat(m, numInt(-1))
	case nAdd:
		var acc *node
		for _, a := range n.args {
			m := c.matSimplify(a)
			if m == nil || m.k != nMatrix {
				return nil
			}
			if acc == nil {
				acc = m
				continue
			}
			if len(acc.rows) != len(m.rows) {
				return nil
			}
			rows := make([][]*node, len(m.rows))
			for i := range m.rows {
				if len(acc.rows[i]) != len(m.rows[i]) {
					return nil
				}
				rows[i] = make([]*node, len(m.rows[i]))
				for j := range m.rows[i] {
					rows[i][j] = mk(nAdd, acc.rows[i][j], m.rows[i][j])
				}
			}
			acc = &node{k: nMatrix, rows: rows}
		}
		return acc
	case nMul:
		var acc *node
		var scalars []*node
		for _, a := range n.args {
			if !hasMatrix(a, 0) {
				scalars = append(scalars, a)
				continue
			}
			m := c.matSimplify(a)
			if m == nil {
				return nil
			}
			if acc == nil {
				acc = m
				continue
			}
			acc = matMul(acc, m)
			if acc == nil {
				return nil
			}
		}
		if acc == nil {
			return nil
		}
		for _, s := range scalars {
			acc = scaleMat(acc, s)
		}
		return acc
	}
	return nil
}

func scaleMat(m, s *node) *node {
	rows := make([][]*node, len(m.rows))
	for i, r := range m.rows {
		rows[i] = make([]*node, len(r))
		for j, x := range r {
			rows[i][j] = mk(nMul, s, x)
		}
	}
	return &node{k: nMatrix, rows: rows}
}

func matMul(a, b *node) *node {
	if len(a.rows) == 0 || len(b.rows) == 0 || len(a.rows)*len(b.rows[0]) > MaxElements {
		return nil
	}
	inner := len(b.rows)
	for _, r := range a.rows {
		if len(r) != inner {
			return nil
		}
	}
	cols := len(b.rows[0])
	for _, r := range b.rows {
		if len(r) != cols {
			return nil
		}
	}
	rows := make([][]*node, len(a.rows))
	for i := range a.rows {
		rows[i] = make([]*node, cols)
		for j := 0; j < cols; j++ {
			s := &node{k: nAdd}
			for k := 0; k < inner; k++ {
				s.args = append(s.args, mk(nMul, a.rows[i][k], b.rows[k][j]))
			}
			// Entries share subtrees, so a chain of products would grow
			// trees exponentially: refuse entries beyond maxEntryNodes.
			if treeSize(s, maxEntryNodes+1) > maxEntryNodes {
				return nil
			}
			rows[i][j] = s
		}
	}
	return &node{k: nMatrix, rows: rows}
}

// maxEntryNodes is the largest matrix entry (in tree nodes) that matrix
// products build.
const maxEntryNodes = 4096

// treeSize returns the number of nodes of n counted as a tree (shared
// subtrees once per use), or limit once it reaches limit.
func treeSize(n *node, limit int) int {
	size := 0
	var walk func(n *node)
	walk = func(n *node) {
		if n == nil || size >= limit {
			return
		}
		size++
		for _, a := range n.args {
			walk(a)
		}
		for _, r := range n.rows {
			for _, x := range r {
				walk(x)
			}
		}
	}
	walk(n)
	return min(size, limit)
}

// relEqual compares relations: equations by proportional sides,
// inequalities by direction and proportional sides, and either against an
// interval through its solution set.
func (c *comparer) relEqual(g, p *node) bool {
	if isRel(g) && isRel(p) {
		if isEq(g) && isEq(p) {
			return c.eqEqual(g, p)
		}
		if isEq(g) || isEq(p) {
			return false
		}
		if len(g.args) == 2 && len(p.args) == 2 && g.ops[0] != "in" && p.ops[0] != "in" {
			if c.ineqEqual(g, p) {
				return true
			}
		}
		ig, ok1 := c.toIntervals(g)
		ip, ok2 := c.toIntervals(p)
		if ok1 && ok2 {
			return c.intervalSetsEqual(ig, ip)
		}
		if len(g.args) == len(p.args) && strings.Join(g.ops, ",") == strings.Join(p.ops, ",") {
			return c.seqEqual(g.args, p.args)
		}
		return false
	}
	if isRel(g) {
		// Inequality gold, set answer: always allowed.
		ig, ok := c.toIntervals(g)
		ip, ok2 := c.asIntervals(p)
		return ok && ok2 && c.intervalSetsEqual(ig, ip)
	}
	if !c.cfg.AllowSetRelation {
		return false
	}
	ig, ok := c.asIntervals(g)
	ip, ok2 := c.toIntervals(p)
	return ok && ok2 && c.intervalSetsEqual(ig, ip)
}

// builderIntervals solves a set-builder set {x | condition} whose
// condition is an inequality (or chain) in its element x alone, also
// written {x \in S | ...}, as intervals.
func (c *comparer) builderIntervals(n *node) ([]interval, bool) {
	elem, cond := n.args[0], n.args[1]
	if elem.k == nRel && len(elem.args) == 2 && elem.ops[0] == "in" {
		elem = elem.args[0]
	}
	if elem.k != nSym || cond.k != nRel {
		return nil, false
	}
	if names := sortedSyms(cond); len(names) != 1 || names[0] != elem.name {
		return nil, false
	}
	return c.toIntervals(cond)
}

// builderEqual compares a set-builder set with a set-builder set, an
// interval or union, or an inequality: as intervals when its condition
// solves to them, else element and condition one by one. A set-builder
// gold accepts an inequality answer only with Config.AllowSetRelation
// (it is a set); an inequality gold always accepts a set-builder answer.
func (c *comparer) builderEqual(g, p *node) bool {
	if g.k == nBuilder && p.k == nBuilder {
		ig, ok1 := c.builderIntervals(g)
		ip, ok2 := c.builderIntervals(p)
		if ok1 && ok2 {
			return c.intervalSetsEqual(ig, ip)
		}
		return c.equal(g.args[0], p.args[0]) && c.equal(g.args[1], p.args[1])
	}
	b, other := g, p
	if p.k == nBuilder {
		b, other = p, g
	}
	if isRel(other) && b == g && !c.cfg.AllowSetRelation {
		return false
	}
	ib, ok := c.builderIntervals(b)
	if !ok {
		return false
	}
	var io []interval
	if isRel(other) {
		io, ok = c.toIntervals(other)
	} else {
		io, ok = c.asIntervals(other)
	}
	if !ok {
		return false
	}
	if b == g {
		return c.intervalSetsEqual(ib, io)
	}
	return c.intervalSetsEqual(io, ib)
}

// diff returns L - R of a two-sided relation.
func diff(r *node) *node {
	return mk(nAdd, r.args[0], mk(nNeg, r.args[len(r.args)-1]))
}

// eqEqual compares equations L1 = R1 and L2 = R2: equal when L1-R1 is a
// nonzero constant multiple of L2-R2 (so y = 2x+1 equals 2x+1 = y and
// 2x - 2y + 2 = 0).
func (c *comparer) eqEqual(g, p *node) bool {
	if len(g.args) != 2 || len(p.args) != 2 {
		if len(g.args) != len(p.args) {
			return false
		}
		return c.seqEqual(g.args, p.args)
	}
	if g.lab && p.lab && (canon(g.args[0]) == canon(p.args[0]) || sameFunction(g, p)) {
		return c.equal(g.args[1], p.args[1])
	}
	return c.proportional(diff(g), diff(p), false)
}

// sameFunction reports whether two labelled equations define the same
// dependent variable in two notations, y = ... and f(x) = ...: one label
// is a call f(x1, ..., xk) of plain symbols, the other a plain symbol
// that is none of them and appears in neither right side, and both right
// sides use only x1..xk.
func sameFunction(g, p *node) bool {
	call, sym := g.args[0], p.args[0]
	if call.k != nFunc {
		call, sym = sym, call
	}
	if call.k != nFunc || sym.k != nSym || len(call.args) == 0 {
		return false
	}
	vars := map[string]bool{}
	for _, a := range call.args {
		if a.k != nSym {
			return false
		}
		vars[a.name] = true
	}
	if vars[sym.name] {
		return false
	}
	for _, side := range []*node{g.args[1], p.args[1]} {
		for name := range freeSyms(side, nil) {
			if !vars[name] {
				return false
			}
		}
	}
	return true
}

// ineqEqual compares two one-sided inequalities L op R.
func (c *comparer) ineqEqual(g, p *node) bool {
	dg, og := orient(g)
	dp, op := orient(p)
	if og != op || og == "" {
		return false
	}
	return c.proportional(dg, dp, og != "!=")
}

// orient rewrites L op R as d op' 0 with op' in {>, >=, !=}.
func orient(r *node) (*node, string) {
	switch r.ops[0] {
	case ">", ">=", "!=":
		return diff(r), r.ops[0]
	case "<":
		return mk(nAdd, r.args[1], mk(nNeg, r.args[0])), ">"
	case "<=":
		return mk(nAdd, r.args[1], mk(nNeg, r.args[0])), ">="
	}
	return nil, ""
}

// points returns NumericPoints assignments of exact rational values to the
// given symbols, seeded from their names so that results are
// deterministic: the first point is positive in every symbol, the second
// negative in every symbol, the others of random signs. With positive
// set, all points are positive (drawn from another seed), for
// expressions whose real domain is the positive values.
func points(names []string, positive bool) []map[string]value {
	h := fnv.New64a()
	for _, n := range names {
		h.Write([]byte(n))
		h.Write([]byte{0})
	}
	seed2 := uint64(0x5851f42d4c957f2d)
	if positive {
		seed2 = 0x14057b7ef767814f
	}
	rng := rand.New(rand.NewPCG(h.Sum64(), seed2))
	out := make([]map[string]value, NumericPoints)
	for k := range out {
		env := make(map[string]value, len(names))
		for _, n := range names {
			num := int64(rng.IntN(37) + 3)
			den := int64(rng.IntN(7) + 7)
			neg := rng.IntN(2) == 0
			if !positive && (k == 1 || k > 1 && neg) {
				num = -num
			}
			env[n] = exact(big.NewRat(num, den))
		}
		out[k] = env
	}
	return out
}

// The real-domain policy (doc.go): expressions with free symbols are
// compared at points where both are real. A point where either side
// leaves the real domain (value.nonReal) is skipped; when fewer than
// minValidPoints remain, positive points are tried as well; when still
// too few remain, the complex principal values at the first points are
// compared instead.
const minValidPoints = 2

// pointVerdict is the outcome of comparing two expressions at a set of
// points.
type pointVerdict uint8

const (
	pointsAgree    pointVerdict = iota // every valid point agrees
	pointsDiffer                       // some valid point disagrees
	pointsUnusable                     // evaluation failed: not a number
)

// pointCheck is what a comparison says about one point.
type pointCheck uint8

const (
	pointValid pointCheck = iota // the two values agree
	pointWrong                   // they differ
	pointSkip                    // the point says nothing (both infinite)
)

// atPoints compares g and p at the points envs with cmp and returns the
// verdict and how many points were valid. With real set, points where a
// side is nonReal are skipped.
func (c *comparer) atPoints(g, p *node, envs []map[string]value, real bool, cmp func(vg, vp value) pointCheck) (pointVerdict, int) {
	valid := 0
	for _, env := range envs {
		e := &evaluator{env: env, b: c.b}
		vg, ok1 := e.eval(g)
		vp, ok2 := e.eval(p)
		if !ok1 || !ok2 {
			return pointsUnusable, valid
		}
		if real && (vg.nonReal || vp.nonReal) {
			continue
		}
		switch cmp(vg, vp) {
		case pointWrong:
			return pointsDiffer, valid
		case pointValid:
			valid++
		}
	}
	return pointsAgree, valid
}

// onDomain compares g and p under the real-domain policy, with cmp
// deciding each point; it returns the verdict and whether at least
// minValidPoints were valid.
func (c *comparer) onDomain(g, p *node, names []string, cmp func(vg, vp value) pointCheck) (pointVerdict, bool) {
	v, n := c.atPoints(g, p, points(names, false), true, cmp)
	if v != pointsAgree || n >= minValidPoints {
		return v, n >= minValidPoints
	}
	v2, n2 := c.atPoints(g, p, points(names, true), true, cmp)
	if v2 != pointsAgree || n+n2 >= minValidPoints {
		return v2, n+n2 >= minValidPoints
	}
	v3, n3 := c.atPoints(g, p, points(names, false), false, cmp)
	return v3, n3 >= minValidPoints
}

func sortedSyms(ns ...*node) []string {
	set := map[string]bool{}
	for _, n := range ns {
		freeSyms(n, set)
	}
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// proportional reports whether a = k*b for a constant k != 0 (k > 0 when
// positive is set), by evaluation at random points; falls back to
// structural equality when evaluation fails.
func (c *comparer) proportional(a, b *node, positive bool) bool {
	names := sortedSyms(a, b)
	var ratio value
	have := false
	check := func(ok bool) pointCheck {
		if ok {
			return pointValid
		}
		return pointWrong
	}
	cmp := func(va, vb value) pointCheck {
		if va.hp != nil || vb.hp != nil {
			return pointSkip // no ratio of numbers beyond MaxBits
		}
		za, zb := isZero(va), isZero(vb)
		if za && zb {
			return pointValid
		}
		if za != zb || !finite(va) || !finite(vb) {
			return pointWrong
		}
		var r value
		if va.r != nil && vb.r != nil {
			r = exact(new(big.Rat).Quo(va.r, vb.r))
		} else {
			r = approx(va.c / vb.c)
		}
		if !have {
			ratio, have = r, true
			return check(!positive || real(r.c) > 0 && math.Abs(imag(r.c)) <= NumericTolerance)
		}
		return check(c.numEqual(ratio, r, false, 0))
	}
	if len(names) == 0 {
		v, n := c.atPoints(a, b, []map[string]value{nil}, false, cmp)
		if v == pointsUnusable {
			return c.structEqual(a, b)
		}
		c.lastHow = "numeric"
		return v == pointsAgree && n >= 1
	}
	v, enough := c.onDomain(a, b, names, cmp)
	if v == pointsUnusable {
		return c.structEqual(a, b)
	}
	c.lastHow = "numeric"
	return v == pointsAgree && enough
}

func isZero(v value) bool {
	if v.hp != nil {
		return false
	}
	if v.r != nil {
		return v.r.Sign() == 0
	}
	return cmplx.Abs(v.c) < 1e-12
}

func finite(v value) bool {
	return !cmplx.IsInf(v.c) && !cmplx.IsNaN(v.c)
}

// structEqual compares canonical forms (sorted sums and products).
func (c *comparer) structEqual(a, b *node) bool {
	c.lastHow = "structural"
	return canon(a) == canon(b)
}

// hasFloat reports whether n contains a decimal literal.
func hasFloat(n *node) bool {
	if n == nil {
		return false
	}
	if n.k == nNum {
		return n.flt
	}
	for _, a := range n.args {
		if hasFloat(a) {
			return true
		}
	}
	return false
}

func infSign(n *node) int {
	switch {
	case n.k == nConst && n.name == "inf":
		return 1
	case n.k == nNeg:
		return -infSign(n.args[0])
	case n.k == nAdd && len(n.args) == 1:
		return infSign(n.args[0])
	}
	return 0
}

// scalarEqual compares two scalar expressions: exactly when both are
// rational constants, by rounding when a decimal literal is involved, by
// evaluation at random points when they have free symbols, and
// structurally when they cannot be evaluated.
func (c *comparer) scalarEqual(g, p *node) bool {
	if sg, sp := infSign(g), infSign(p); sg != 0 || sp != 0 {
		return sg == sp
	}
	flt := hasFloat(g) || hasFloat(p)
	d := c.places(g)
	names := sortedSyms(g, p)
	if len(names) == 0 {
		e := &evaluator{b: c.b}
		vg, ok1 := e.eval(g)
		vp, ok2 := e.eval(p)
		if ok1 && ok2 && !flt && (vg.hp != nil || vp.hp != nil) {
			c.lastHow = "exact"
			return vg.hp != nil && vp.hp != nil && vg.hp.same(vp.hp)
		}
		if !ok1 || !ok2 || !finite(vg) || !finite(vp) {
			return c.structEqual(g, p)
		}
		if vg.r != nil && vp.r != nil && !flt {
			c.lastHow = "exact"
			return vg.r.Cmp(vp.r) == 0
		}
		c.lastHow = "numeric"
		if vg.r != nil && vp.r != nil {
			// Both exact: rounding them exactly decides; the float
			// slack of roundEq would let 2000000000001.0 equal
			// 2000000000000.
			return roundRatEq(vg.r, vp.r, d)
		}
		return c.numEqual(vg, vp, flt, d)
	}
	v, enough := c.onDomain(g, p, names, func(vg, vp value) pointCheck {
		switch {
		case !flt && (vg.hp != nil || vp.hp != nil):
			if vg.hp == nil || vp.hp == nil || !vg.hp.same(vp.hp) {
				return pointWrong
			}
		case !finite(vg) || !finite(vp):
			if finite(vg) != finite(vp) {
				return pointWrong
			}
			return pointSkip
		case vg.r != nil && vp.r != nil && !flt:
			if vg.r.Cmp(vp.r) != 0 {
				return pointWrong
			}
		case vg.r != nil && vp.r != nil:
			if !roundRatEq(vg.r, vp.r, d) {
				return pointWrong
			}
		case !c.numEqual(vg, vp, flt, d):
			return pointWrong
		}
		return pointValid
	})
	if v == pointsUnusable {
		return c.structEqual(g, p)
	}
	c.lastHow = "numeric"
	return v == pointsAgree && enough
}

// places returns the decimal places numbers are rounded to against the
// gold g: FloatRounding, or as many as the gold writes when that is more,
// so that the gold .0000672 is not answered by .0000673. A decimal term
// (see writtenPlaces: decimal literals and powers of ten joined by +, -
// and \times) writes the places of its exact value up to its 15th
// significant digit (termPlaces: 6.72 \times 10^{-5} is .0000672, 10^{-8}
// is .00000001), so that scientific notation is not rounded away; other
// golds write the places of their literals, up to 15. A gold without a
// decimal literal or a power of ten (1/1024, 2^{-20}) keeps
// FloatRounding, and so does a power of a decimal (1.05^{10} is
// 1.62889462677744140625, but 1.628895 answers it).
func (c *comparer) places(g *node) int {
	d, term, ten := c.writtenPlaces(g)
	if term && ten {
		d = c.termPlaces(g, d)
	}
	return max(c.cfg.rounding(), d)
}

// writtenPlaces returns the most decimal places, up to 15, that n
// writes; whether n is a decimal term; and whether n holds a decimal
// literal or a power of ten. A decimal term is written with numbers and
// powers of ten only (tenPower), joined by +, - and \times
// (1.5 \times 10^{-7}, \frac{1.5}{10^7}, 2 - 0.5): its value is a finite
// decimal whose places are what it writes. The places returned for a
// decimal term are those of its literals; the caller takes those of its
// value (termPlaces) where it is a maximal one, and so does a product
// for its decimal factors (1.5 \times 10^{-7} x).
func (c *comparer) writtenPlaces(n *node) (d int, term, ten bool) {
	if n == nil {
		return 0, false, false
	}
	switch {
	case n.k == nNum:
		if n.flt {
			return ratPlaces(n.val), true, true
		}
		return 0, true, false
	case n.k == nPow && tenPower(n):
		return 0, true, true
	}
	term = n.k == nNeg || n.k == nAdd || n.k == nMul
	var factors, terms []*node // the children that are decimal terms; those of them with a decimal or a power of ten
	for _, a := range n.args {
		da, ta, tn := c.writtenPlaces(a)
		d, ten = max(d, da), ten || tn
		switch {
		case !ta:
			term = false
		case tn:
			terms = append(terms, a)
			fallthrough
		default:
			factors = append(factors, a)
		}
	}
	if term {
		return d, true, ten
	}
	if n.k == nMul && len(terms) > 0 {
		terms = []*node{mk(nMul, factors...)}
	}
	for _, a := range terms {
		d = c.termPlaces(a, d)
	}
	return d, false, ten
}

// termPlaces returns the places of the exact value of the decimal term
// n, up to its 15th significant digit (1.5 \times 10^{-20} needs 21, so
// that 0 and 1.6 \times 10^{-20} do not round to it) and at most
// maxTermPlaces, or d when that is more or n cannot be evaluated.
func (c *comparer) termPlaces(n *node, d int) int {
	e := &evaluator{b: c.b}
	if v, ok := e.eval(n); ok && v.r != nil {
		d = max(d, min(ratPlacesUpTo(v.r, 15+leadingZeros(v.r)), maxTermPlaces))
	}
	return d
}

// maxTermPlaces bounds the places a decimal term asks for, so that
// rounding stays within float64's range (10^300).
const maxTermPlaces = 300

// leadingZeros returns how many zeros follow the decimal point of |r|
// before its first significant digit (3 for 0.00012), 0 for |r| >= 0.1
// or r = 0, at most maxTermPlaces.
func leadingZeros(r *big.Rat) int {
	if r.Sign() == 0 {
		return 0
	}
	x := new(big.Rat).Abs(r)
	tenth := big.NewRat(1, 10)
	n := 0
	for ten := big.NewRat(10, 1); x.Cmp(tenth) < 0 && n < maxTermPlaces; n++ {
		x.Mul(x, ten)
	}
	return n
}

// tenPower reports whether n is a power of ten with an integer exponent
// (10^{-7}, 10^3, (10^3)^{-1}).
func tenPower(n *node) bool {
	if n.k != nPow || len(n.args) != 2 {
		return false
	}
	e := n.args[1]
	if e.k == nNeg && len(e.args) == 1 {
		e = e.args[0]
	}
	if e.k != nNum || e.flt || !e.val.IsInt() {
		return false
	}
	b := n.args[0]
	return b.k == nNum && !b.flt && b.val.Cmp(big.NewRat(10, 1)) == 0 || tenPower(b)
}

// ratPlaces returns the decimal places, up to 15, that writing the
// rational r exactly needs (see ratPlacesUpTo).
func ratPlaces(r *big.Rat) int { return ratPlacesUpTo(r, 15) }

// ratPlacesUpTo returns the decimal places, up to limit, that writing r
// exactly needs: max(a, b) for a denominator 2^a 5^b (.0000672 =
// 42/(2^3 5^7) needs 7); for another denominator, those of its factors
// 2 and 5 (they are not used on such a value).
func ratPlacesUpTo(r *big.Rat, limit int) int {
	den := r.Denom()
	twos := min(int(den.TrailingZeroBits()), limit)
	fives := 0
	q, rem := new(big.Int), new(big.Int)
	five := big.NewInt(5)
	for d := new(big.Int).Rsh(den, uint(twos)); fives < limit; fives++ {
		if q.QuoRem(d, five, rem); rem.Sign() != 0 {
			break
		}
		d.Set(q)
	}
	return max(twos, fives)
}

// numEqual compares two numbers: rounded to d decimal places when flt,
// else within the relative tolerance NumericTolerance.
func (c *comparer) numEqual(a, b value, flt bool, d int) bool {
	if flt {
		return roundEq(real(a.c), real(b.c), d) && roundEq(imag(a.c), imag(b.c), d)
	}
	scale := math.Max(1, math.Max(cmplx.Abs(a.c), cmplx.Abs(b.c)))
	return cmplx.Abs(a.c-b.c) <= NumericTolerance*scale
}

// roundRatEq reports whether two rationals agree when rounded half away
// from zero to d decimal places.
func roundRatEq(x, y *big.Rat, d int) bool {
	scale := new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(d)), nil))
	round := func(r *big.Rat) *big.Int {
		t := new(big.Rat).Mul(r, scale)
		t.Abs(t)
		t.Add(t, big.NewRat(1, 2))
		q := new(big.Int).Quo(t.Num(), t.Denom())
		if r.Sign() < 0 {
			q.Neg(q)
		}
		return q
	}
	return round(x).Cmp(round(y)) == 0
}

// roundEq reports whether x and y agree when rounded to d decimal places
// (with a relative slack for values too large for float rounding).
func roundEq(x, y float64, d int) bool {
	if x == y {
		return true
	}
	p := math.Pow(10, float64(d))
	rx, ry := math.Round(x*p), math.Round(y*p)
	if rx == ry {
		return true
	}
	scale := math.Max(math.Abs(x), math.Abs(y))
	if math.Abs(rx-ry) <= 1 && math.Abs(x-y) <= 1e-9*math.Max(1, scale) {
		return true // float representation noise on a rounding boundary
	}
	return scale > 1e12 && math.Abs(x-y) <= 1e-12*scale
}

// interval is one interval with endpoint nodes.
type interval struct {
	lo, hi *node
	lc, rc bool
}

// asIntervals reads an interval, a union or a two-element tuple (an open
// interval) as a list of intervals.
func (c *comparer) asIntervals(n *node) ([]interval, bool) {
	switch n.k {
	case nInterval:
		return []interval{{n.args[0], n.args[1], n.lc, n.rc}}, true
	case nTuple:
		if len(n.args) == 2 {
			return []interval{{n.args[0], n.args[1], false, false}}, true
		}
	case nUnion:
		var out []interval
		for _, a := range n.args {
			iv, ok := c.asIntervals(c.prep(a))
			if !ok {
				return nil, false
			}
			out = append(out, iv...)
		}
		return out, true
	case nRel:
		return c.toIntervals(n)
	case nList:
		if !isDisjunction(n) {
			return nil, false
		}
		var out []interval
		for _, a := range n.args {
			iv, ok := c.toIntervals(a)
			if !ok {
				return nil, false
			}
			out = append(out, iv...)
		}
		return out, true
	}
	return nil, false
}

// isDisjunction reports whether n is inequalities in one variable joined
// by "or" (x < -1 or x > 1), whose solution set is the union of theirs.
func isDisjunction(n *node) bool {
	if n.k != nList || n.name != "or" {
		return false
	}
	for _, a := range n.args {
		if !isRel(a) || isEq(a) {
			return false
		}
		for _, o := range a.ops {
			if o == "in" || o == "notin" || o == "~" {
				return false
			}
		}
	}
	return len(sortedSyms(n)) == 1
}

// intervalEqual compares intervals and unions (a 2-tuple is an open
// interval), or one and inequalities joined by "or", with the asymmetry of
// relEqual; a single inequality on the other side is handled by relEqual.
func (c *comparer) intervalEqual(g, p *node) bool {
	if isDisjunction(p) && !c.cfg.AllowSetRelation {
		return false // an interval gold, inequalities answer
	}
	ig, ok1 := c.asIntervals(g)
	ip, ok2 := c.asIntervals(p)
	if !ok1 || !ok2 {
		return false
	}
	return c.intervalSetsEqual(ig, ip)
}

func (c *comparer) intervalSetsEqual(a, b []interval) bool {
	if len(a) != len(b) {
		return false
	}
	used := make([]bool, len(b))
	for _, x := range a {
		found := false
		for j, y := range b {
			if !used[j] && c.intervalEq(x, y) {
				used[j] = true
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	c.lastHow = "interval"
	return true
}

func (c *comparer) intervalEq(x, y interval) bool {
	if infSign(x.lo) == 0 && x.lc != y.lc || infSign(x.hi) == 0 && x.rc != y.rc {
		return false
	}
	return c.equal(x.lo, y.lo) && c.equal(x.hi, y.hi)
}

// toIntervals solves a one-variable inequality: a linear L op R, or a
// chain lo op M op hi with M a label (|M| gives two intervals).
func (c *comparer) toIntervals(r *node) ([]interval, bool) {
	if r.k != nRel {
		return c.asIntervals(r)
	}
	if len(r.args) == 2 && r.ops[0] == "in" {
		return c.asIntervals(c.prep(r.args[1]))
	}
	if len(r.args) == 3 {
		o1, o2 := r.ops[0], r.ops[1]
		lo, m, hi := r.args[0], r.args[1], r.args[2]
		if (o1 == ">" || o1 == ">=") && (o2 == ">" || o2 == ">=") {
			lo, hi = hi, lo
			o1, o2 = flipOp(o2), flipOp(o1)
		}
		if !(o1 == "<" || o1 == "<=") || !(o2 == "<" || o2 == "<=") {
			return nil, false
		}
		if m.k == nFunc && m.name == "abs" && isLabel(m.args[0]) {
			// lo <= |z| <= hi with lo >= 0.
			e := &evaluator{b: c.b}
			v, ok := e.eval(lo)
			if !ok || real(v.c) < 0 {
				return nil, false
			}
			return []interval{
				{mk(nNeg, hi), mk(nNeg, lo), o2 == "<=", o1 == "<="},
				{lo, hi, o1 == "<=", o2 == "<="},
			}, true
		}
		if !isLabel(m) {
			return nil, false
		}
		return []interval{{lo, hi, o1 == "<=", o2 == "<="}}, true
	}
	if len(r.args) != 2 {
		return nil, false
	}
	d, op := orient(r)
	if op == "" {
		return nil, false
	}
	names := sortedSyms(d)
	if len(names) != 1 {
		return nil, false
	}
	x := names[0]
	at := func(v int64) (*big.Rat, bool) {
		e := &evaluator{env: map[string]value{x: exact(big.NewRat(v, 1))}, b: c.b}
		val, ok := e.eval(d)
		if !ok || val.r == nil {
			return nil, false
		}
		return val.r, true
	}
	d0, ok0 := at(0)
	d1, ok1 := at(1)
	d2, ok2 := at(2)
	if !ok0 || !ok1 || !ok2 {
		return nil, false
	}
	a := new(big.Rat).Sub(d1, d0)
	if a.Sign() == 0 || new(big.Rat).Add(new(big.Rat).Add(d0, a), a).Cmp(d2) != 0 {
		return nil, false
	}
	root := num(new(big.Rat).Quo(new(big.Rat).Neg(d0), a))
	inf := &node{k: nConst, name: "inf"}
	ninf := mk(nNeg, inf)
	closed := op == ">="
	switch {
	case op == "!=":
		return []interval{{ninf, root, false, false}, {root, inf, false, false}}, true
	case a.Sign() > 0:
		return []interval{{root, inf, closed, false}}, true
	default:
		return []interval{{ninf, root, false, closed}}, true
	}
}

func flipOp(o string) string {
	switch o {
	case ">":
		return "<"
	case ">=":
		return "<="
	case "<":
		return ">"
	case "<=":
		return ">="
	}
	return o
}

// canon returns a canonical string of n: sums and products have sorted
// operands, numbers are reduced fractions.
func canon(n *node) string {
	var b strings.Builder
	canonTo(&b, n, 0)
	return b.String()
}

func canonTo(b *strings.Builder, n *node, depth int) {
	if n == nil {
		b.WriteString("nil")
		return
	}
	if depth > MaxDepth*16 || b.Len() > 1<<16 {
		b.WriteString("…")
		return
	}
	switch n.k {
	case nNum:
		b.WriteString(n.val.RatString())
		return
	case nSym, nConst:
		b.WriteString(n.name)
		return
	case nText:
		b.WriteString("text:" + textKey(n.name))
		return
	}
	b.WriteString(strconv.Itoa(int(n.k)))
	b.WriteString(n.name)
	if n.lc {
		b.WriteByte('[')
	}
	if n.rc {
		b.WriteByte(']')
	}
	b.WriteString(strings.Join(n.ops, ","))
	b.WriteByte('(')
	parts := make([]string, len(n.args))
	for i, a := range n.args {
		var sb strings.Builder
		canonTo(&sb, a, depth+1)
		parts[i] = sb.String()
	}
	if n.k == nAdd || n.k == nMul || n.k == nSet || n.k == nList {
		sort.Strings(parts)
	}
	b.WriteString(strings.Join(parts, ";"))
	for _, r := range n.rows {
		b.WriteByte('|')
		for _, x := range r {
			canonTo(b, x, depth+1)
			b.WriteByte('&')
		}
	}
	b.WriteByte(')')
}
