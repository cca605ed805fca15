package synth

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"math/bits"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/spiral-rl/spiral/data"
)

// Config holds the difficulty knobs and the split. The zero value is the
// default task; every zero field takes its documented default.
type Config struct {
	// Form is the kind of problem: FormCompute ("Compute 7+5*3-4.") or
	// FormSolve ("Solve x*7+3=38.", one operand replaced by the unknown x,
	// whose value is the answer). Default FormCompute.
	Form string
	// MinOperands and MaxOperands bound the number of operands of an
	// expression, drawn uniformly (defaults 3 and 4; at least 2, at most
	// MaxOperandsBound).
	MinOperands, MaxOperands int
	// MinOperand and MaxOperand bound each operand, drawn uniformly
	// (defaults 1 and 15; MinOperand >= 1).
	MinOperand, MaxOperand int
	// Ops lists the operators used, a subset of "+-*", each drawn
	// uniformly per gap (default "+-*").
	Ops string
	// TestPercent is the share of all problems (expressions up to the
	// order of their terms and factors, CanonicalExpr), in percent, that
	// belongs to the test split (default 10; 1 to 99).
	TestPercent int
	// MistakeRate is the probability that a candidate in an aggregation
	// example carries a planted mistake (at most 1; default 0.5, which a
	// zero value selects like every field's, so a rate of exactly 0 is
	// not expressible: take a tiny one).
	MistakeRate float64
	// SharedMistakeRate is the probability that all wrong candidates of an
	// aggregation example share the same mistake, so that a wrong answer
	// can hold the majority and voting is not enough (at most 1; default
	// 0.3, which a zero value selects).
	SharedMistakeRate float64
}

// TooFewError is a request for more distinct problems of a split than
// Problems found. With Exact, Found is all the split holds (known or
// counted); else it is those the draws found, of at least as many.
type TooFewError struct {
	Split       Split
	Found, Want int
	Exact       bool
}

func (e *TooFewError) Error() string {
	if e.Exact {
		return fmt.Sprintf("synth: only %d distinct %s problems, want %d; widen the operand range or count", e.Found, e.Split, e.Want)
	}
	return fmt.Sprintf("synth: at least %d distinct %s problems (found by drawing, not counted), want %d; widen the operand range or count", e.Found, e.Split, e.Want)
}

// Forms of problem.
const (
	FormCompute = "compute"
	FormSolve   = "solve"
)

// MaxOperandsBound is the most operands an expression may have: 1024, an
// expression of about 4,000 characters, the embedded model's whole
// context; more only takes memory (2^20 operands a problem ran a
// 128-problem set out of 4 GB).
const MaxOperandsBound = 1024

// MaxOperandBound is the largest operand allowed: 10^6, whose products of
// a few factors stay well inside int64's arithmetic.
const MaxOperandBound = 1_000_000

// Defaults of Config, applied to zero fields.
const (
	DefaultForm              = FormCompute
	DefaultMinOperands       = 3
	DefaultMaxOperands       = 4
	DefaultMinOperand        = 1
	DefaultMaxOperand        = 15
	DefaultOps               = "+-*"
	DefaultTestPercent       = 10
	DefaultMistakeRate       = 0.5
	DefaultSharedMistakeRate = 0.3
)

// WithDefaults returns c with every zero field set to its default.
func (c Config) WithDefaults() Config {
	if c.Form == "" {
		c.Form = DefaultForm
	}
	if c.MinOperands == 0 {
		c.MinOperands = DefaultMinOperands
	}
	if c.MaxOperands == 0 {
		c.MaxOperands = max(DefaultMaxOperands, c.MinOperands)
	}
	if c.MinOperand == 0 {
		c.MinOperand = DefaultMinOperand
	}
	if c.MaxOperand == 0 {
		c.MaxOperand = max(DefaultMaxOperand, c.MinOperand)
	}
	if c.Ops == "" {
		c.Ops = DefaultOps
	}
	if c.TestPercent == 0 {
		c.TestPercent = DefaultTestPercent
	}
	if c.MistakeRate == 0 {
		c.MistakeRate = DefaultMistakeRate
	}
	if c.SharedMistakeRate == 0 {
		c.SharedMistakeRate = DefaultSharedMistakeRate
	}
	return c
}

// Validate reports the first field of c (after defaults) outside its
// allowed range.
func (c Config) Validate() error {
	c = c.WithDefaults()
	switch {
	case c.Form != FormCompute && c.Form != FormSolve:
		return fmt.Errorf("synth: form %q: want %q or %q", c.Form, FormCompute, FormSolve)
	case c.Form == FormSolve && c.MaxOperand == c.MinOperand:
		return fmt.Errorf("synth: solve form with operand range %d..%d: want min < max, so that a guess can be wrong", c.MinOperand, c.MaxOperand)
	case c.MinOperands < 2 || c.MaxOperands < c.MinOperands || c.MaxOperands > MaxOperandsBound:
		return fmt.Errorf("synth: operands %d..%d: want 2 <= min <= max <= %d", c.MinOperands, c.MaxOperands, MaxOperandsBound)
	case c.MinOperand < 1 || c.MaxOperand < c.MinOperand:
		return fmt.Errorf("synth: operand range %d..%d: want 1 <= min <= max", c.MinOperand, c.MaxOperand)
	case c.MaxOperand > MaxOperandBound:
		return fmt.Errorf("synth: max operand %d: want at most %d", c.MaxOperand, MaxOperandBound)
	case c.TestPercent < 1 || c.TestPercent > 99:
		return fmt.Errorf("synth: test percent %d: want 1 to 99", c.TestPercent)
	case c.MistakeRate < 0 || c.MistakeRate > 1:
		return fmt.Errorf("synth: mistake rate %g: want 0 to 1", c.MistakeRate)
	case c.SharedMistakeRate < 0 || c.SharedMistakeRate > 1:
		return fmt.Errorf("synth: shared mistake rate %g: want 0 to 1", c.SharedMistakeRate)
	}
	for _, op := range c.Ops {
		if !strings.ContainsRune("+-*", op) {
			return fmt.Errorf("synth: ops %q: want a subset of \"+-*\"", c.Ops)
		}
	}
	return nil
}

// Split is a part of the task: Train or Test.
type Split int

// The two splits.
const (
	Train Split = iota
	Test
)

// String returns "train" or "test".
func (s Split) String() string {
	if s == Test {
		return "test"
	}
	return "train"
}

// Task generates problems of one configuration and split seed. It is safe
// for concurrent use (each call takes its own *rand.Rand).
type Task struct {
	cfg  Config
	seed uint64
	tmpl *data.Templates // the compact templates, parsed once
	// longestParts are LongestAggregate's candidates, found once
	// (longest).
	longestOnce  sync.Once
	longestParts []longestParts
	// sizes are the problems of each split, by Split, where New knows
	// them (known: the embedded task's); else splitSizes counts them,
	// once, into counted, where it can (countable).
	sizes     [2]int
	known     bool
	countOnce sync.Once
	counted   [2]int
	countable bool
}

// New returns the task for cfg (zero fields take defaults) whose train/test
// split is fixed by seed.
func New(cfg Config, seed uint64) (*Task, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	t := &Task{cfg: cfg.WithDefaults(), seed: seed, tmpl: Templates()}
	if t.cfg == EmbeddedConfig.WithDefaults() && seed == EmbeddedSeed {
		t.sizes, t.known = [2]int{Train: embeddedTrainSize, Test: embeddedTestSize}, true
	}
	return t, nil
}

// maxCounted bounds the expressions that splitSizes enumerates to count
// the problems of each split: 2^19, counted in about a second.
const maxCounted = 1 << 19

// splitSizes returns the problems of each split, by Split, and whether
// they are known: the embedded task's, or counted, where Sample draws
// from at most maxCounted expressions (expressions), by enumerating
// them all (eachItem), each problem once (by its canonical form). The
// count costs about as much as as many tries of Sample, so Problems asks
// for it only once its draws stall, and where it costs less than the
// draws it saves (worthCounting).
func (t *Task) splitSizes() ([2]int, bool) {
	if t.known {
		return t.sizes, true
	}
	t.countOnce.Do(func() {
		if t.expressions(maxCounted) > maxCounted {
			return
		}
		seen := map[string]bool{}
		t.eachItem(func(it Item) {
			if key := CanonicalExpr(it.Expr); !seen[key] {
				seen[key] = true
				t.counted[t.splitOfKey(key)]++
			}
		})
		t.countable = true
	})
	return t.counted, t.countable
}

// worthCounting reports whether counting the problems of each split
// (splitSizes) costs less than the draws it saves in refusing a request
// past those of split s, found of them found so far: 20 draws for each
// found, less the stalled ones made, each about 100 / the split's
// percent tries of Sample, where the count takes about a try's time for
// each expression. The embedded task's are known, at no cost.
func (t *Task) worthCounting(s Split, found int) bool {
	if t.known {
		return true
	}
	percent := t.cfg.TestPercent
	if s == Train {
		percent = 100 - percent
	}
	tries := max(20*found-stalled, 0) * 100 / percent
	return t.expressions(maxCounted) <= min(tries, maxCounted)
}

// expressions returns how many expressions eachItem enumerates at most
// (those whose values could pass maxValue among them), or limit+1 where
// they are more than limit: every count of operands, operand values,
// operators and, in the solve form, position of the unknown.
func (t *Task) expressions(limit int) int {
	values := t.cfg.MaxOperand - t.cfg.MinOperand + 1
	total := 0
	for n := t.cfg.MinOperands; n <= t.cfg.MaxOperands; n++ {
		count := 1
		if t.cfg.Form == FormSolve {
			count = n
		}
		for i := range 2*n - 1 {
			base := values
			if i >= n {
				base = len(t.cfg.Ops)
			}
			if count *= base; count > limit {
				return limit + 1
			}
		}
		if total += count; total > limit {
			return limit + 1
		}
	}
	return total
}

// SplitOf returns the split an expression (Item.Expr) belongs to:
// Test when FNV-1a-64(seed as 8 little-endian bytes, CanonicalExpr(expr))
// mod 100 < TestPercent. Keying on the canonical form puts an expression
// and every reordering of its terms and factors ("x+3*2=8", "2*3+x=8")
// in one split, so no test problem is a training problem written in
// another order.
func (t *Task) SplitOf(expr string) Split { return t.splitOfKey(CanonicalExpr(expr)) }

// splitOfKey is SplitOf of an expression whose canonical form is key.
func (t *Task) splitOfKey(key string) Split {
	h := fnv.New64a()
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], t.seed)
	h.Write(b[:])
	h.Write([]byte(key))
	if h.Sum64()%100 < uint64(t.cfg.TestPercent) {
		return Test
	}
	return Train
}

// CanonicalExpr returns the form of an expression (Item.Expr) that is the
// same for all its reorderings that keep its value: the additive terms,
// each written with its sign ("+" or "-") and its factors in sorted
// order joined by "*", sorted and concatenated, then the right-hand side
// of an equation as written ("x-3+2*5=9" and "2*5-3+x=9" are both
// "+2*5+x-3=9", "5*2-3+x=9" too). A leading "+" or "-" is the first
// term's sign, so a reordering that puts a subtracted term first
// ("-3+2*5+x=9") has the form too, and so has the form itself. Two
// expressions with the same canonical form are the same problem; the
// split and the problem sets key on it.
// A text outside the grammar gives some canonical form of it, never a
// panic.
func CanonicalExpr(expr string) string {
	lhs, rhs, equation := strings.Cut(expr, "=")
	var terms []string
	sign, rest := byte('+'), lhs
	if rest != "" && (rest[0] == '+' || rest[0] == '-') {
		// The first term's sign, written when a reordering puts a
		// subtracted term first ("-3+x=5" for "x-3=5"), and by
		// CanonicalExpr itself.
		sign, rest = rest[0], rest[1:]
	}
	for {
		i := strings.IndexAny(rest, "+-")
		term := rest
		if i >= 0 {
			term = rest[:i]
		}
		factors := strings.Split(term, "*")
		slices.Sort(factors)
		terms = append(terms, string(sign)+strings.Join(factors, "*"))
		if i < 0 {
			break
		}
		sign, rest = rest[i], rest[i+1:]
	}
	slices.Sort(terms)
	key := strings.Join(terms, "")
	if equation {
		key += "=" + rhs
	}
	return key
}

// maxSampleTries bounds the rejection sampling of one problem of a split.
const maxSampleTries = 10_000

// maxValue bounds the values of a problem (maxValueBound).
const maxValue = 1 << 53

// Sample draws one problem of split s from r. An expression whose values
// could pass 2^53 with operands up to MaxOperand (maxValueBound) is drawn
// again: its arithmetic would overflow an int, or come near it, and
// give wrong answers. No expression of the embedded task comes near
// (5^4 at most).
func (t *Task) Sample(r *rand.Rand, s Split) (Item, error) {
	it, _, err := t.sample(r, s)
	return it, err
}

// sample is Sample, with the problem's canonical form.
func (t *Task) sample(r *rand.Rand, s Split) (Item, string, error) {
	large := 0
	for range maxSampleTries {
		n := t.cfg.MinOperands + r.IntN(t.cfg.MaxOperands-t.cfg.MinOperands+1)
		operands := make([]int, n)
		ops := make([]byte, n-1)
		for i := range operands {
			operands[i] = t.cfg.MinOperand + r.IntN(t.cfg.MaxOperand-t.cfg.MinOperand+1)
		}
		for i := range ops {
			ops[i] = t.cfg.Ops[r.IntN(len(t.cfg.Ops))]
		}
		if maxValueBound(ops, t.cfg.MaxOperand) > maxValue {
			large++
			continue
		}
		it := build(operands, ops)
		if t.cfg.Form == FormSolve {
			it = solveItem(operands, ops, r.IntN(n))
		}
		if key := CanonicalExpr(it.Expr); t.splitOfKey(key) == s {
			return it, key, nil
		}
	}
	if large > 0 {
		return Item{}, "", fmt.Errorf("synth: no %s problem in %d tries (%d of them could reach values past 2^53 with operands up to max operand %d: lower it or the operands' count)", s, maxSampleTries, large, t.cfg.MaxOperand)
	}
	return Item{}, "", &noneDrawnError{s}
}

// noneDrawnError is sample's error where none of maxSampleTries draws,
// none of them too large, was a problem of the split: it has few, or
// none.
type noneDrawnError struct{ split Split }

func (e *noneDrawnError) Error() string {
	return fmt.Sprintf("synth: no %s problem in %d tries", e.split, maxSampleTries)
}

// maxValueBound bounds the magnitude of every value that an expression
// with operators ops and operands of 1..maxOperand computes (its terms,
// its partial sums in any order, so every step of a derivation of x, and
// its checks of any guess within the operand range): the sum over its
// additive terms of maxOperand to the number of factors of the term. The
// bound saturates at math.MaxInt.
func maxValueBound(ops []byte, maxOperand int) int {
	sum, term := 0, maxOperand
	add := func(v int) {
		if sum > math.MaxInt-v {
			sum = math.MaxInt
			return
		}
		sum += v
	}
	for _, op := range ops {
		if op != '*' {
			add(term)
			term = maxOperand
			continue
		}
		if hi, lo := bits.Mul64(uint64(term), uint64(maxOperand)); hi != 0 || lo > math.MaxInt {
			term = math.MaxInt
		} else {
			term = int(lo)
		}
	}
	add(term)
	return sum
}

// stalled is how many draws in a row that find no new problem stall
// Problems' draws: the fewest that end them (past 20 for each problem
// found), and where the split's problems are counted (splitSizes).
const stalled = 1000

// Problems returns n distinct problems of split s, drawn from a PCG
// generator seeded with (seed, split). It fails when the configuration has
// too few distinct problems: after 100n + 1000 draws, or sooner, once
// 20 times as many draws as it has found problems (at least 1000) in a row
// found no new one, so a request far above the D distinct problems fails
// within about 20D draws instead of 100n; where the split's problems can
// be counted (splitSizes) at less cost than those draws, once 1,000
// draws in a row found none, as soon as the count says that n is more
// than there are. Were the D drawn uniformly, even
// the last one would take D draws on average, and asking for all of them
// would fail this way with probability about e^-20; but each operand
// count is drawn equally often, so a problem with the most operands is
// rarer than 1/D (and so is one with fewer ways of writing it: "x+1+1=3"
// has 3, "x+2+3=6" 6), and asking for nearly all of a split whose
// operand counts differ can fail though the problems exist (the embedded
// test split's 1,134 are all found). It fails that way too where one
// problem of the split takes more than maxSampleTries draws (sample),
// as one of a split of none, or of very few, does. Where the task knows
// how many problems the split holds (the embedded task's), n above that
// fails at once, drawing none. Problems are distinct
// by their canonical form (CanonicalExpr): one drawn in another order is
// the same problem.
func (t *Task) Problems(s Split, n int, seed uint64) ([]Item, error) {
	return t.problems(s, n, seed, t.sample)
}

// problems is Problems, drawing each problem with draw (t.sample).
func (t *Task) problems(s Split, n int, seed uint64, draw func(*rand.Rand, Split) (Item, string, error)) ([]Item, error) {
	split := s >= 0 && int(s) < len(t.sizes) // a split that sizes index
	if split && t.known && n > t.sizes[s] {
		return nil, &TooFewError{Split: s, Found: t.sizes[s], Want: n, Exact: true}
	}
	r := rand.New(rand.NewPCG(seed, uint64(s)+0x5851F42D4C957F2D))
	items := make([]Item, 0, min(n, 1<<16))
	seen := make(map[string]bool, min(n, 1<<16))
	// tooFew is the refusal once the draws have failed: with the
	// split's problems where they can be counted (at most about a
	// second's count, once), else with those the draws found.
	tooFew := func() error {
		if sizes, known := t.splitSizes(); split && known && n > sizes[s] {
			return &TooFewError{Split: s, Found: sizes[s], Want: n, Exact: true}
		}
		return &TooFewError{Split: s, Found: len(items), Want: n}
	}
	for tries, sinceNew := 0, 0; len(items) < n; tries, sinceNew = tries+1, sinceNew+1 {
		if tries > 100*n+1000 || sinceNew > max(20*len(items), stalled) {
			return nil, tooFew()
		}
		if sinceNew == stalled && split && t.worthCounting(s, len(items)) {
			if sizes, known := t.splitSizes(); known && n > sizes[s] {
				return nil, &TooFewError{Split: s, Found: sizes[s], Want: n, Exact: true}
			}
		}
		it, key, err := draw(r, s)
		var none *noneDrawnError
		if errors.As(err, &none) {
			return nil, tooFew()
		}
		if err != nil {
			return nil, err
		}
		if !seen[key] {
			seen[key] = true
			items = append(items, it)
			sinceNew = 0
		}
	}
	return items, nil
}

// Dataset returns n distinct problems of split s as a data.Dataset, with
// IDs "synth-<split>-<i>", sources "synth:<split>:<i>" and the answer as a
// decimal integer.
func (t *Task) Dataset(s Split, n int, seed uint64) (*data.Dataset, error) {
	items, err := t.Problems(s, n, seed)
	if err != nil {
		return nil, err
	}
	ps := make([]data.Problem, len(items))
	for i, it := range items {
		ps[i] = data.Problem{
			ID:      fmt.Sprintf("synth-%s-%d", s, i),
			Problem: it.Problem(),
			Answer:  strconv.Itoa(it.Answer),
			Source:  fmt.Sprintf("synth:%s:%d", s, i),
		}
	}
	ds := data.NewDataset("synth-"+s.String(), ps)
	if len(ds.Skipped()) != 0 {
		return nil, errors.New("synth: internal error: generated problems were skipped")
	}
	return ds, nil
}
