package grader

import (
	"hash/fnv"
	"math"
	"math/big"
	"math/cmplx"
)

// value is the result of evaluating a scalar node: an exact rational when
// r is non-nil, and always its complex128 approximation c. nonReal marks
// a value that left the real domain: some operation on real operands
// gave a non-real result (√ of a negative, log of a non-positive, a
// fractional power of a negative), so the point it was evaluated at lies
// outside the expression's real domain. Complex constants such as i do
// not set it.
type value struct {
	r       *big.Rat
	c       complex128
	nonReal bool
	hp      *hugePow // an exact power beyond MaxBits (then r is nil)
}

// hugePow is an exact value too large (or too small) for MaxBits:
// ±base^exp, with base > 0 and != 1 (reduced to its smallest root when
// it is a power of two or a perfect power of integers below 2^64: 4^n
// is kept as 2^{2n}), and exp an integer of at most MaxBits bits. Its
// value.c is ±Inf, or 0 for negative exponents.
type hugePow struct {
	neg  bool
	base *big.Rat
	exp  *big.Int
}

// same reports whether h and o are the same number: a^m = b^n exactly
// when, with g = gcd(m, n), a^{m/g} = b^{n/g}, which is computed exactly
// when both sides fit MaxBits (else they are taken to differ).
func (h *hugePow) same(o *hugePow) bool {
	if h.neg != o.neg || h.exp.Sign() != o.exp.Sign() {
		return false
	}
	if h.base.Cmp(o.base) == 0 {
		return h.exp.Cmp(o.exp) == 0
	}
	g := new(big.Int).GCD(nil, nil, new(big.Int).Abs(h.exp), new(big.Int).Abs(o.exp))
	m := new(big.Int).Quo(h.exp, g)
	n := new(big.Int).Quo(o.exp, g)
	a, ok1 := exactPow(h.base, m)
	b, ok2 := exactPow(o.base, n)
	return ok1 && ok2 && a.Cmp(b) == 0
}

// exactPow returns b^k for a rational b > 0 and an integer k when the
// result fits MaxBits.
func exactPow(b *big.Rat, k *big.Int) (*big.Rat, bool) {
	if !k.IsInt64() {
		return nil, false
	}
	kk := k.Int64()
	abs := max(kk, -kk)
	bits := int64(max(b.Num().BitLen(), b.Denom().BitLen()))
	if abs > MaxBits || bits*abs > MaxBits {
		return nil, false
	}
	num := new(big.Int).Exp(b.Num(), big.NewInt(abs), nil)
	den := new(big.Int).Exp(b.Denom(), big.NewInt(abs), nil)
	if kk < 0 {
		num, den = den, num
	}
	return ratFrac(num, den), true
}

// powerOf returns j with r = base^j (r, base > 0, base != 1) when there
// is such an integer j of at most MaxBits/2 in size.
func powerOf(r, base *big.Rat) (*big.Int, bool) {
	lr, lb := ratLog2(r), ratLog2(base)
	if lb == 0 || math.IsInf(lr, 0) || math.IsNaN(lr) {
		return nil, false
	}
	j := math.Round(lr / lb)
	if j == 0 || math.Abs(j) > MaxBits/2 {
		return nil, false
	}
	k := big.NewInt(int64(j))
	p, ok := exactPow(base, k)
	if !ok || p.Cmp(r) != 0 {
		return nil, false
	}
	return k, true
}

// ratLog2 returns log2(r) for r > 0 of any size.
func ratLog2(r *big.Rat) float64 {
	return intLog2(r.Num()) - intLog2(r.Denom())
}

func intLog2(x *big.Int) float64 {
	n := x.BitLen()
	if n <= 1000 {
		f, _ := new(big.Float).SetInt(x).Float64()
		return math.Log2(f)
	}
	top, _ := new(big.Float).SetInt(new(big.Int).Rsh(x, uint(n-64))).Float64()
	return math.Log2(top) + float64(n-64)
}

// hugeValue returns ±base^exp as a value: exact when it fits MaxBits,
// else a hugePow; ok is false when exp is too large even for that.
func (e *evaluator) hugeValue(neg bool, base *big.Rat, exp *big.Int) (value, bool) {
	if exp.BitLen() > MaxBits {
		return value{}, false
	}
	if exp.Sign() == 0 {
		return exact(big.NewRat(1, 1)), true
	}
	bits := int64(max(base.Num().BitLen(), base.Denom().BitLen()))
	if exp.IsInt64() && bits*max(exp.Int64(), -exp.Int64()) <= MaxBits {
		v, ok := e.pow(exact(base), exact(new(big.Rat).SetInt(exp)))
		if ok && neg && v.r != nil {
			v = exact(new(big.Rat).Neg(v.r))
		}
		return v, ok
	}
	c := complex(math.Inf(1), 0)
	if exp.Sign() < 0 {
		c = 0
	}
	if neg {
		c = -c
	}
	return value{c: c, hp: &hugePow{neg: neg, base: base, exp: exp}}, true
}

// hugePower returns b^k for a rational b and an integer k whose exact
// result exceeds MaxBits, as a hugePow (ok false when it cannot be
// represented).
func (e *evaluator) hugePower(b *big.Rat, k *big.Int) (value, bool) {
	if b.Sign() == 0 || k.BitLen() > MaxBits {
		return value{}, false
	}
	neg := b.Sign() < 0 && k.Bit(0) == 1
	base := new(big.Rat).Abs(b)
	if base.Cmp(big.NewRat(1, 1)) == 0 {
		if neg {
			return exact(big.NewRat(-1, 1)), true
		}
		return exact(big.NewRat(1, 1)), true
	}
	e.b.left -= k.BitLen()/wordBits + 64
	if e.b.left < 0 {
		return value{}, false
	}
	root, m := perfectPower(base)
	return e.hugeValue(neg, root, new(big.Int).Mul(k, big.NewInt(int64(m))))
}

// perfectPower returns the rational r and the largest m with b = r^m,
// for b > 0 a power of two or with numerator and denominator below 2^64
// (else b, 1).
func perfectPower(b *big.Rat) (*big.Rat, int) {
	if b.IsInt() && b.Num().BitLen() > 1 && b.Num().TrailingZeroBits() == uint(b.Num().BitLen()-1) {
		return big.NewRat(2, 1), b.Num().BitLen() - 1
	}
	if !b.Num().IsUint64() || !b.Denom().IsUint64() {
		return b, 1
	}
	for m := 63; m >= 2; m-- {
		n, ok1 := uintRoot(b.Num().Uint64(), m)
		d, ok2 := uintRoot(b.Denom().Uint64(), m)
		if ok1 && ok2 {
			return new(big.Rat).SetFrac(new(big.Int).SetUint64(n), new(big.Int).SetUint64(d)), m
		}
	}
	return b, 1
}

// uintRoot returns the integer m-th root of x when x is a perfect m-th
// power.
func uintRoot(x uint64, m int) (uint64, bool) {
	if x <= 1 {
		return x, true
	}
	g := uint64(math.Round(math.Pow(float64(x), 1/float64(m))))
	for _, r := range []uint64{g - 1, g, g + 1} {
		if r < 2 {
			continue
		}
		p := new(big.Int).Exp(new(big.Int).SetUint64(r), big.NewInt(int64(m)), nil)
		if p.IsUint64() && p.Uint64() == x {
			return r, true
		}
	}
	return 0, false
}

// hugeMul multiplies two values of which one is a hugePow: powers of
// one base add their exponents (a factor that is an exact integer power
// of the base counts as one), and 1 changes nothing; ok is false for
// anything else.
func (e *evaluator) hugeMul(a, b value) (value, bool) {
	if a.hp == nil {
		a, b = b, a
	}
	e.b.left -= 64
	if e.b.left < 0 {
		return value{}, false
	}
	h := a.hp
	var neg bool
	var j *big.Int
	switch {
	case b.hp != nil && b.hp.base.Cmp(h.base) == 0:
		neg, j = b.hp.neg, b.hp.exp
	case b.hp != nil:
		k, ok := powerOf(b.hp.base, h.base)
		if !ok {
			return value{}, false
		}
		neg, j = b.hp.neg, new(big.Int).Mul(k, b.hp.exp)
	case b.r != nil && b.r.Sign() != 0:
		abs := new(big.Rat).Abs(b.r)
		neg = b.r.Sign() < 0
		if abs.Cmp(big.NewRat(1, 1)) == 0 {
			j = new(big.Int)
		} else {
			k, ok := powerOf(abs, h.base)
			if !ok {
				return value{}, false
			}
			j = k
		}
	default:
		return value{}, false
	}
	return e.hugeValue(h.neg != neg, h.base, new(big.Int).Add(h.exp, j))
}

// isReal reports whether v has no imaginary part (beyond rounding).
func isReal(v value) bool {
	return v.r != nil || math.Abs(imag(v.c)) <= 1e-12*math.Max(1, cmplx.Abs(v.c))
}

// inDomain returns out marked nonReal when an operand is, or when every
// operand is real and out is not.
func inDomain(out value, in ...value) value {
	allReal := true
	for _, v := range in {
		if v.nonReal {
			out.nonReal = true
			return out
		}
		allReal = allReal && isReal(v)
	}
	if allReal && !isReal(out) {
		out.nonReal = true
	}
	return out
}

// negate returns -v.
func negate(v value) value {
	if v.r != nil {
		return exact(new(big.Rat).Neg(v.r))
	}
	if v.hp != nil {
		h := *v.hp
		h.neg = !h.neg
		return value{c: -v.c, hp: &h}
	}
	return value{c: -v.c, nonReal: v.nonReal}
}

func exact(r *big.Rat) value {
	f, _ := r.Float64()
	return value{r: r, c: complex(f, 0)}
}

func approx(c complex128) value { return value{c: c} }

// evaluator evaluates scalar nodes under an assignment of the free
// symbols. ok=false means the node is not a number (a set, a relation, an
// unknown symbol) or evaluation failed.
type evaluator struct {
	env map[string]value
	b   *budget
}

func fits(r *big.Rat) bool {
	return r.Num().BitLen() <= MaxBits && r.Denom().BitLen() <= MaxBits
}

// Exact arithmetic is charged to the step budget by size. One step is
// about the work of evaluating one node (~100 ns); an operation on
// big rationals costs one step per 64-bit word of its operands, eight
// for non-integers (whose results are reduced by a GCD), so that the
// budget bounds time whatever the sizes of the numbers.
const (
	wordBits     = 64
	ratWordSteps = 8
)

// ratWords returns the 64-bit words of r's numerator and denominator.
func ratWords(r *big.Rat) int {
	return (r.Num().BitLen()+r.Denom().BitLen())/wordBits + 1
}

// charge takes the cost of an exact operation on a and b from the budget
// and reports whether any is left.
func (e *evaluator) charge(a, b *big.Rat) bool {
	w := ratWords(a) + ratWords(b)
	if !a.IsInt() || !b.IsInt() {
		w *= ratWordSteps
	}
	e.b.left -= w
	return e.b.left >= 0
}

// ratFrac returns num/den for coprime num and den > 0 without the GCD
// that SetFrac would compute.
func ratFrac(num, den *big.Int) *big.Rat {
	r := new(big.Rat).SetInt(num)
	if den.Cmp(big.NewInt(1)) == 0 {
		return r
	}
	r.SetFrac64(1, 2) // gives r a denominator that Denom references
	r.Num().Set(num)
	r.Denom().Set(den)
	return r
}

func (e *evaluator) eval(n *node) (value, bool) {
	e.b.left--
	if e.b.left < 0 || n == nil {
		return value{}, false
	}
	switch n.k {
	case nNum:
		return exact(n.val), true
	case nConst:
		switch n.name {
		case "pi":
			return approx(math.Pi), true
		case "e":
			return approx(math.E), true
		case "i":
			return approx(1i), true
		case "inf":
			return approx(complex(math.Inf(1), 0)), true
		}
		return value{}, false
	case nSym:
		v, ok := e.env[n.name]
		return v, ok
	case nNeg:
		v, ok := e.eval(n.args[0])
		if !ok {
			return v, false
		}
		return negate(v), true
	case nPM:
		return e.eval(n.args[0]) // the + branch; expansion handles the rest
	case nPercent:
		v, ok := e.eval(n.args[0])
		if !ok {
			return v, false
		}
		return e.mul(v, exact(big.NewRat(1, 100))), true
	case nAdd:
		acc := exact(new(big.Rat))
		nonReal := false
		for _, a := range n.args {
			v, ok := e.eval(a)
			if !ok {
				return v, false
			}
			nonReal = nonReal || v.nonReal
			if acc.r != nil && v.r != nil {
				if !e.charge(acc.r, v.r) {
					return value{}, false
				}
				s := new(big.Rat).Add(acc.r, v.r)
				if fits(s) {
					acc = exact(s)
					continue
				}
			}
			acc = approx(acc.c + v.c)
		}
		acc.nonReal = nonReal
		return acc, true
	case nMul:
		acc := exact(big.NewRat(1, 1))
		for _, a := range n.args {
			v, ok := e.eval(a)
			if !ok {
				return v, false
			}
			acc = e.mul(acc, v)
			if e.b.left < 0 {
				return value{}, false
			}
		}
		return acc, true
	case nPow:
		b, ok := e.eval(n.args[0])
		if !ok {
			return b, false
		}
		x, ok := e.eval(n.args[1])
		if !ok {
			return x, false
		}
		v, ok := e.pow(b, x)
		return inDomain(v, b, x), ok
	case nFunc:
		return e.fn(n)
	case nSum:
		return e.sum(n)
	case nApprox:
		return e.eval(n.args[0])
	}
	return value{}, false
}

// mul multiplies a and b, exactly when both are exact and the product
// fits MaxBits; its cost is charged to the budget.
func (e *evaluator) mul(a, b value) value {
	if a.hp != nil || b.hp != nil {
		if v, ok := e.hugeMul(a, b); ok {
			return v
		}
	}
	if a.r != nil && b.r != nil && e.charge(a.r, b.r) {
		p := new(big.Rat).Mul(a.r, b.r)
		if fits(p) {
			return exact(p)
		}
	}
	if (a.r != nil && a.r.Sign() == 0 || b.r != nil && b.r.Sign() == 0) && !a.nonReal && !b.nonReal {
		return exact(new(big.Rat))
	}
	return value{c: a.c * b.c, nonReal: a.nonReal || b.nonReal}
}

// pow computes b^x, exactly for rational b and integer x when the result
// fits in MaxBits, and for perfect roots (8^{1/3}).
func (e *evaluator) pow(b, x value) (value, bool) {
	if b.r != nil && x.r != nil {
		if x.r.IsInt() {
			k := x.r.Num()
			if k.IsInt64() {
				kk := k.Int64()
				if b.r.Sign() == 0 {
					if kk < 0 {
						return value{}, false
					}
					if kk == 0 {
						return exact(big.NewRat(1, 1)), true
					}
					return exact(new(big.Rat)), true
				}
				abs := kk
				if abs < 0 {
					abs = -abs
				}
				bits := int64(max(b.r.Num().BitLen(), b.r.Denom().BitLen()))
				if abs <= MaxBits && bits*abs <= MaxBits {
					// Squarings up to the result's size; powers of a
					// reduced fraction stay reduced, so no GCD is needed.
					e.b.left -= int(2*bits*abs/wordBits) + 1
					if e.b.left < 0 {
						return value{}, false
					}
					num := new(big.Int).Exp(b.r.Num(), big.NewInt(abs), nil)
					den := new(big.Int).Exp(b.r.Denom(), big.NewInt(abs), nil)
					if kk < 0 {
						num, den = den, num
					}
					if den.Sign() < 0 {
						num.Neg(num)
						den.Neg(den)
					}
					return exact(ratFrac(num, den)), true
				}
			}
		} else if x.r.Denom().IsInt64() && x.r.Denom().Int64() <= 12 && b.r.Sign() > 0 && x.r.Num().IsInt64() {
			q := x.r.Denom().Int64()
			if rt, ok := ratRoot(b.r, q); ok {
				return e.pow(exact(rt), exact(new(big.Rat).SetInt(x.r.Num())))
			}
		}
	}
	if x.r != nil && x.r.IsInt() {
		// Exact powers beyond MaxBits: 2^{65536}, (2^{100})^{1000}.
		switch {
		case b.r != nil && b.r.Sign() != 0:
			if v, ok := e.hugePower(b.r, x.r.Num()); ok {
				return v, true
			}
		case b.hp != nil:
			neg := b.hp.neg && x.r.Num().Bit(0) == 1
			if v, ok := e.hugeValue(neg, b.hp.base, new(big.Int).Mul(b.hp.exp, x.r.Num())); ok {
				return v, true
			}
		}
	}
	if b.r != nil && b.r.Sign() == 0 {
		if real(x.c) > 0 {
			return exact(new(big.Rat)), true
		}
		return value{}, false
	}
	if b.c == complex(math.E, 0) && b.r == nil {
		return approx(cmplx.Exp(x.c)), true
	}
	if x.r != nil && x.r.IsInt() && imag(b.c) == 0 && x.r.Num().IsInt64() {
		// Real power with integer exponent keeps negative bases real.
		return approx(complex(math.Pow(real(b.c), float64(x.r.Num().Int64())), 0)), true
	}
	if x.r != nil && imag(b.c) == 0 && real(b.c) < 0 && !x.r.IsInt() && x.r.Denom().Int64()%2 == 1 {
		// Odd roots of negatives written as powers, (-8)^{1/3}: keep
		// the principal complex branch, as sympy does (a radical,
		// \sqrt[3]{-8}, is the real root: see apply).
		return approx(cmplx.Pow(b.c, x.c)), true
	}
	return approx(cmplx.Pow(b.c, x.c)), true
}

// gcdLcm returns the greatest common divisor (lcm false) or least common
// multiple (lcm true) of integer args, which are all exact integers, as
// non-negative integers.
func (e *evaluator) gcdLcm(lcm bool, args []value) (value, bool) {
	if len(args) < 2 {
		return value{}, false
	}
	out := new(big.Int)
	for i, a := range args {
		if a.r == nil || !a.r.IsInt() {
			return value{}, false
		}
		x := new(big.Int).Abs(a.r.Num())
		e.b.left -= 8 * (max(out.BitLen(), x.BitLen())/wordBits + 1)
		if e.b.left < 0 {
			return value{}, false
		}
		switch {
		case i == 0:
			out = x
		case !lcm:
			out.GCD(nil, nil, out, x)
		case out.Sign() == 0 || x.Sign() == 0:
			out.SetInt64(0)
		default:
			g := new(big.Int).GCD(nil, nil, out, x)
			out.Mul(out, x.Quo(x, g))
			if out.BitLen() > MaxBits {
				return value{}, false
			}
		}
	}
	return exact(new(big.Rat).SetInt(out)), true
}

// maxMin returns the largest (largest true) or smallest of real args.
func maxMin(largest bool, args []value) (value, bool) {
	if len(args) < 2 {
		return value{}, false
	}
	best := args[0]
	for _, a := range args {
		if !isReal(a) || !finite(a) {
			return value{}, false
		}
		var c int
		if a.r != nil && best.r != nil {
			c = a.r.Cmp(best.r)
		} else {
			c = cmpFloat(real(a.c), real(best.c))
		}
		if largest && c > 0 || !largest && c < 0 {
			best = a
		}
	}
	return best, true
}

// cmpFloat compares x and y as -1, 0 or +1.
func cmpFloat(x, y float64) int {
	switch {
	case x < y:
		return -1
	case x > y:
		return 1
	}
	return 0
}

// maxBinomK bounds the k of a binomial coefficient of a non-natural x,
// computed as a product of k factors.
const maxBinomK = 5000

// fallingBinom returns the binomial coefficient of any x and the integer
// k: x(x-1)...(x-k+1)/k! for k >= 0 (a polynomial in x, so \binom{n}{2}
// = n(n-1)/2 wherever n is evaluated), 0 for k < 0. Exact for rational x.
func (e *evaluator) fallingBinom(x value, k *big.Int) (value, bool) {
	if k.Sign() < 0 {
		return exact(new(big.Rat)), true
	}
	if !k.IsInt64() || k.Int64() > maxBinomK {
		return value{}, false
	}
	kk := k.Int64()
	if x.r != nil {
		out := big.NewRat(1, 1)
		f := new(big.Rat)
		for i := int64(0); i < kk; i++ {
			// One multiplication and one division of fractions.
			e.b.left -= 16 * (max(out.Num().BitLen(), out.Denom().BitLen())/wordBits + 1)
			if e.b.left < 0 || !fits(out) {
				return value{}, false
			}
			f.Sub(x.r, new(big.Rat).SetInt64(i))
			out.Mul(out, f)
			out.Quo(out, new(big.Rat).SetInt64(i+1))
		}
		return exact(out), true
	}
	out := complex(1, 0)
	e.b.left -= int(kk)
	if e.b.left < 0 {
		return value{}, false
	}
	for i := int64(0); i < kk; i++ {
		out *= (x.c - complex(float64(i), 0)) / complex(float64(i+1), 0)
	}
	return approx(out), true
}

// ratRoot returns the exact q-th root of a positive rational, if any.
func ratRoot(r *big.Rat, q int64) (*big.Rat, bool) {
	n, ok1 := intRoot(r.Num(), q)
	d, ok2 := intRoot(r.Denom(), q)
	if !ok1 || !ok2 {
		return nil, false
	}
	return new(big.Rat).SetFrac(n, d), true
}

func intRoot(x *big.Int, q int64) (*big.Int, bool) {
	if x.Sign() < 0 || x.BitLen() > MaxBits {
		return nil, false
	}
	if q == 2 {
		s := new(big.Int).Sqrt(x)
		return s, new(big.Int).Mul(s, s).Cmp(x) == 0
	}
	f, _ := new(big.Float).SetInt(x).Float64()
	g := math.Round(math.Pow(f, 1/float64(q)))
	if math.IsInf(g, 0) || g > 1e15 {
		return nil, false
	}
	c := big.NewInt(int64(g))
	return c, new(big.Int).Exp(c, big.NewInt(q), nil).Cmp(x) == 0
}

// fn evaluates a function node, marking the result nonReal as inDomain
// says.
func (e *evaluator) fn(n *node) (value, bool) {
	args := make([]value, 0, len(n.args))
	for _, a := range n.args {
		if n.name == "det" && a.k == nMatrix {
			return e.det(a)
		}
		v, ok := e.eval(a)
		if !ok {
			return v, false
		}
		args = append(args, v)
	}
	v, ok := e.apply(n, args)
	return inDomain(v, args...), ok
}

// apply computes the function n.name of the evaluated args.
func (e *evaluator) apply(n *node, args []value) (value, bool) {
	one := func() (complex128, bool) {
		if len(args) != 1 {
			return 0, false
		}
		return args[0].c, true
	}
	var f func(complex128) complex128
	switch n.name {
	case "sqrt":
		if len(args) == 1 && args[0].r != nil && args[0].r.Sign() >= 0 {
			if rt, ok := ratRoot(args[0].r, 2); ok {
				return exact(rt), true
			}
		}
		f = cmplx.Sqrt
	case "root":
		if len(args) != 2 {
			return value{}, false
		}
		x, idx := args[0], args[1]
		// An odd root of a negative real is the real root, as in
		// competition math (sympy's real_root): \sqrt[3]{-8} = -2.
		odd := idx.r != nil && idx.r.IsInt() && idx.r.Sign() > 0 && idx.r.Num().IsInt64() && idx.r.Num().Bit(0) == 1
		neg := x.r != nil && x.r.Sign() < 0 || x.r == nil && !x.nonReal && imag(x.c) == 0 && real(x.c) < 0
		if odd && neg {
			rt, ok := e.apply(n, []value{negate(x), idx})
			return negate(rt), ok
		}
		if idx.r != nil && idx.r.IsInt() && idx.r.Sign() > 0 && x.r != nil && x.r.Sign() >= 0 && idx.r.Num().IsInt64() {
			if rt, ok := ratRoot(x.r, idx.r.Num().Int64()); ok {
				return exact(rt), true
			}
		}
		if idx.c == 0 {
			return value{}, false
		}
		return approx(cmplx.Pow(x.c, 1/idx.c)), true
	case "sin":
		f = cmplx.Sin
	case "cos":
		f = cmplx.Cos
	case "tan":
		f = cmplx.Tan
	case "sec":
		f = func(z complex128) complex128 { return 1 / cmplx.Cos(z) }
	case "csc":
		f = func(z complex128) complex128 { return 1 / cmplx.Sin(z) }
	case "cot":
		f = func(z complex128) complex128 { return cmplx.Cos(z) / cmplx.Sin(z) }
	case "arcsin":
		f = cmplx.Asin
	case "arccos":
		f = cmplx.Acos
	case "arctan":
		f = cmplx.Atan
	case "sinh":
		f = cmplx.Sinh
	case "cosh":
		f = cmplx.Cosh
	case "tanh":
		f = cmplx.Tanh
	case "exp":
		f = cmplx.Exp
	case "ln":
		f = cmplx.Log
	case "log":
		if len(args) == 2 {
			lb := cmplx.Log(args[1].c)
			if lb == 0 {
				return value{}, false
			}
			return approx(cmplx.Log(args[0].c) / lb), true
		}
		// \log without a base is the common logarithm, as competitions
		// write it (doc.go: factorials).
		f = cmplx.Log10
	case "abs":
		if len(args) == 1 && args[0].r != nil {
			return exact(new(big.Rat).Abs(args[0].r)), true
		}
		f = func(z complex128) complex128 { return complex(cmplx.Abs(z), 0) }
	case "fact":
		return e.factorial(args)
	case "fact2":
		return e.doubleFactorial(args)
	case "floor", "ceil":
		if len(args) == 1 && args[0].r != nil {
			q := new(big.Int).Quo(args[0].r.Num(), args[0].r.Denom())
			r := new(big.Rat).SetInt(q)
			if n.name == "floor" && r.Cmp(args[0].r) > 0 {
				r.Sub(r, big.NewRat(1, 1))
			}
			if n.name == "ceil" && r.Cmp(args[0].r) < 0 {
				r.Add(r, big.NewRat(1, 1))
			}
			return exact(r), true
		}
		if len(args) == 1 && imag(args[0].c) == 0 {
			if n.name == "floor" {
				return approx(complex(math.Floor(real(args[0].c)), 0)), true
			}
			return approx(complex(math.Ceil(real(args[0].c)), 0)), true
		}
		return value{}, false
	case "binom":
		if len(args) == 2 && args[0].r != nil && args[1].r != nil && args[0].r.IsInt() && args[1].r.IsInt() {
			a, b := args[0].r.Num(), args[1].r.Num()
			if a.IsInt64() && b.IsInt64() && a.Int64() >= 0 && a.Int64() <= 5000 {
				// min(k, a-k) multiplications and divisions of numbers
				// of up to a bits.
				k := min(b.Int64(), a.Int64()-b.Int64())
				e.b.left -= int(max(k, 0)*(a.Int64()/wordBits+1)) + 1
				if e.b.left < 0 {
					return value{}, false
				}
				return exact(new(big.Rat).SetInt(new(big.Int).Binomial(a.Int64(), b.Int64()))), true
			}
		}
		if len(args) == 2 && args[1].r != nil && args[1].r.IsInt() {
			return e.fallingBinom(args[0], args[1].r.Num())
		}
		return value{}, false
	case "gcd", "lcm":
		return e.gcdLcm(n.name == "lcm", args)
	case "max", "min":
		return maxMin(n.name == "max", args)
	case "det", "cap", "setminus":
		return value{}, false
	default:
		// Uninterpreted function: a fixed smooth function of the name and
		// the arguments.
		h := fnv.New64a()
		h.Write([]byte(n.name))
		s := h.Sum64()
		z := complex(0.3, 0)
		for i, a := range args {
			w := complex(float64(s>>(8*uint(i%8))&0xff)/97+0.5, 0)
			z += w * a.c
		}
		a := float64(s&0xffff)/65536 + 0.7
		return approx(cmplx.Sin(complex(a, 0)*z+0.4)*1.3 + cmplx.Exp(0.21*z)), true
	}
	c, ok := one()
	if !ok {
		return value{}, false
	}
	return approx(f(c)), true
}

func (e *evaluator) factorial(args []value) (value, bool) {
	if len(args) != 1 {
		return value{}, false
	}
	a := args[0]
	if a.r != nil && a.r.IsInt() && a.r.Sign() >= 0 && a.r.Num().IsInt64() {
		k := a.r.Num().Int64()
		// log2(k!) < k*log2(k); keep exact while it fits MaxBits.
		if k <= 1 || float64(k)*math.Log2(float64(k)) <= MaxBits {
			e.b.left -= int(k)
			if e.b.left < 0 {
				return value{}, false
			}
			return exact(new(big.Rat).SetInt(new(big.Int).MulRange(1, max(k, 1)))), true
		}
		return approx(complex(math.Inf(1), 0)), true
	}
	if imag(a.c) == 0 {
		return approx(complex(math.Gamma(real(a.c)+1), 0)), true
	}
	return value{}, false
}

// doubleFactorial evaluates k!! = k(k-2)(k-4)... for integers k >= 0,
// exactly while it fits MaxBits.
func (e *evaluator) doubleFactorial(args []value) (value, bool) {
	if len(args) != 1 || args[0].r == nil || !args[0].r.IsInt() || args[0].r.Sign() < 0 || !args[0].r.Num().IsInt64() {
		return value{}, false
	}
	k := args[0].r.Num().Int64()
	if k > 1 && float64(k)*math.Log2(float64(k))/2 > MaxBits {
		return approx(complex(math.Inf(1), 0)), true
	}
	e.b.left -= int(k/2) + 1
	if e.b.left < 0 {
		return value{}, false
	}
	acc := big.NewInt(1)
	for j := k; j > 1; j -= 2 {
		acc.Mul(acc, big.NewInt(j))
	}
	return exact(new(big.Rat).SetInt(acc)), true
}

// sum evaluates \sum and \prod with integer bounds of at most 1000 terms.
func (e *evaluator) sum(n *node) (value, bool) {
	v, lo, hi, body := n.args[0], n.args[1], n.args[2], n.args[3]
	if v.k != nSym {
		return value{}, false
	}
	l, ok1 := e.eval(lo)
	h, ok2 := e.eval(hi)
	if !ok1 || !ok2 || l.r == nil || h.r == nil || !l.r.IsInt() || !h.r.IsInt() {
		return value{}, false
	}
	a, b := l.r.Num().Int64(), h.r.Num().Int64()
	if b-a > 1000 || !l.r.Num().IsInt64() || !h.r.Num().IsInt64() {
		return value{}, false
	}
	if e.env == nil {
		e.env = map[string]value{}
	}
	old, had := e.env[v.name]
	defer func() {
		if had {
			e.env[v.name] = old
		} else {
			delete(e.env, v.name)
		}
	}()
	acc := exact(big.NewRat(0, 1))
	if n.name == "prod" {
		acc = exact(big.NewRat(1, 1))
	}
	for k := a; k <= b; k++ {
		e.env[v.name] = exact(big.NewRat(k, 1))
		t, ok := e.eval(body)
		if !ok {
			return t, false
		}
		if n.name == "prod" {
			acc = e.mul(acc, t)
		} else if acc.r != nil && t.r != nil && e.charge(acc.r, t.r) {
			acc = exact(new(big.Rat).Add(acc.r, t.r))
		} else {
			acc = value{c: acc.c + t.c, nonReal: acc.nonReal || t.nonReal}
		}
	}
	return acc, true
}

// det evaluates the determinant of a square matrix of at most 6 rows by
// cofactor expansion.
func (e *evaluator) det(m *node) (value, bool) {
	n := len(m.rows)
	if n == 0 || n > 6 {
		return value{}, false
	}
	vals := make([][]value, n)
	nonReal := false
	for i, r := range m.rows {
		if len(r) != n {
			return value{}, false
		}
		vals[i] = make([]value, n)
		for j, c := range r {
			v, ok := e.eval(c)
			if !ok {
				return v, false
			}
			vals[i][j] = v
			nonReal = nonReal || v.nonReal
		}
	}
	var rec func(rows []int, cols []int) value
	rec = func(rows, cols []int) value {
		if len(rows) == 1 {
			return vals[rows[0]][cols[0]]
		}
		acc := exact(new(big.Rat))
		for k, c := range cols {
			rest := make([]int, 0, len(cols)-1)
			rest = append(rest, cols[:k]...)
			rest = append(rest, cols[k+1:]...)
			t := e.mul(vals[rows[0]][c], rec(rows[1:], rest))
			if k%2 == 1 {
				if t.r != nil {
					t = exact(new(big.Rat).Neg(t.r))
				} else {
					t = approx(-t.c)
				}
			}
			if acc.r != nil && t.r != nil && e.charge(acc.r, t.r) {
				acc = exact(new(big.Rat).Add(acc.r, t.r))
			} else {
				acc = approx(acc.c + t.c)
			}
		}
		return acc
	}
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	v := rec(idx, idx)
	if e.b.left < 0 {
		return value{}, false
	}
	if nonReal {
		v = value{c: v.c, nonReal: true}
	}
	return v, true
}
