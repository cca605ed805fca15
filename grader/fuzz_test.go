package grader

import (
	"fmt"
	"testing"
	"time"
	"unicode/utf8"
)

// watchdog crashes the fuzz worker (so the fuzzer records the input as a
// failure) when one input runs for more than hangLimit: a hang would
// otherwise stall the fuzzer silently. Test code only; the package itself
// uses step budgets, not timers.
func watchdog(input ...string) *time.Timer {
	return time.AfterFunc(hangLimit, func() {
		panic(fmt.Sprintf("grader: input ran longer than %v: %.2000q", hangLimit, input))
	})
}

// hangLimit is generous because fuzzing shares a loaded CI machine.
const hangLimit = 10 * time.Second

// fuzzDeadline is the most one fuzz input may take; the step budget keeps
// real calls far below it (typically < 1 ms).
const fuzzDeadline = 2 * time.Second

// FuzzExtract checks that Extract and Grade never panic, are deterministic
// and return quickly, and that an extracted answer is non-empty text
// drawn from the response.
func FuzzExtract(f *testing.F) {
	for _, s := range []string{
		`So the answer is \boxed{033}.`,
		`\boxed{1} and \boxed{2}`,
		`Final Answer: The final answer is $14{,}916$. I hope it is correct.`,
		"the number is 1,000.99€",
		`$x \in [-2,7]$`,
		`\boxed{\begin{pmatrix}1 & 2 \\ 3 & 4\end{pmatrix}}`,
		"<think>\\boxed{1}</think> \\boxed{2}",
		`\boxed{` + "\x00\xff",
		`$$ \frac{1}{2} $$ and \( x \) and \[ y \]`,
		`\\boxed{\\frac{1}{2}}`,
		"$ \n 9 \n $",
		"Answer: (2, 4)",
		"The answer is 2k+2, where k is odd.",
		"**Answer:** x = −3, y = (-∞, 2]",
		"The final answer is 3, 5, 7.",
		"Answer: 1,-2",
	} {
		f.Add(s)
	}
	// The pathological shapes of BenchmarkPathological, at 4 KB.
	for _, sh := range extractShapes(4 << 10) {
		f.Add(sh.s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		defer watchdog(s).Stop()
		start := time.Now()
		a, ok := Extract(s)
		b, ok2 := Extract(s)
		if a != b || ok != ok2 {
			t.Fatalf("Extract not deterministic on %q: %q/%v vs %q/%v", s, a, ok, b, ok2)
		}
		if a2, src := (Config{}).ExtractSource(s); a2 != a || (src == SourceNone) == ok {
			t.Fatalf("ExtractSource(%q) = %q, %v; Extract = %q, %v", s, a2, src, a, ok)
		}
		if ok && a == "" {
			t.Fatalf("Extract(%q) reported success with empty answer", s)
		}
		if !ok && a != "" {
			t.Fatalf("Extract(%q) reported failure with answer %q", s, a)
		}
		if ok && utf8.ValidString(s) && !utf8.ValidString(a) {
			t.Fatalf("Extract(%q) = %q: invalid UTF-8 from valid input", s, a)
		}
		v := Grade(s, s)
		if v != Grade(s, s) {
			t.Fatalf("Grade not deterministic on %q", s)
		}
		if d := time.Since(start); d > fuzzDeadline {
			t.Fatalf("took %v on %q", d, s)
		}
	})
}

// FuzzParse checks that the expression parser and the comparison never
// panic and stay bounded on arbitrary pairs of answers, and that
// Equivalent is symmetric and every non-empty answer equals itself.
func FuzzParse(f *testing.F) {
	for _, p := range [][2]string{
		{`\frac{1}{2}`, "0.5"},
		{`(x+1)^2`, "x^2+2x+1"},
		{`2^{2^{100}}`, `2^{2^{101}}`},
		{`\frac{1}{2006!}`, `\frac{1}{2004!}`},
		{`[0, 1) \cup (2, \infty)`, `x > 3`},
		{`\{1, 2\}`, `(1, 2)`},
		{`1 \pm \sqrt{5}`, `1+\sqrt5, 1-\sqrt5`},
		{`y = 2x + 1`, `2x+1=y`},
		{`\begin{pmatrix}1 & 0 \\ 0 & 1\end{pmatrix}^{100}`, `\begin{pmatrix}1&0\\0&1\end{pmatrix}`},
		{`\sum_{k=0}^{n-1} F_k F_{n-k-1}`, `\sum_{k=1}^{10} k^2`},
		{`28\%`, `0.28`},
		{`\sqrt[3]{x}^2`, `x^{2/3}`},
		{`((((((((((1))))))))))`, `|x|`},
		{`\text{Evelyn}`, `the evelyn`},
		{`1 - \frac{1}{\mathrm{e}}`, `\sin^{-1}(x)`},
		{`\log_2 8`, `\binom{5}{2}`},
		{`\sqrt[3]{-8}`, `-2`},
		{`1070 \equiv 71 \pmod{1000}`, `71`},
		{`\mathbb{R}`, `x \in (-\infty, \infty)`},
	} {
		f.Add(p[0], p[1])
	}
	// The adversarial answers of BenchmarkPathological.
	for _, sh := range evalShapes() {
		f.Add(sh.s, sh.s+"+1")
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		defer watchdog(a, b).Stop()
		start := time.Now()
		bud := &budget{left: MaxSteps}
		na, errA := parseAnswer(Normalize(a), bud)
		nb, errB := parseAnswer(Normalize(b), bud)
		if errA == nil && errB == nil {
			c := &comparer{b: bud}
			c.equal(na, nb)
			c.equal(nb, na)
			canon(na)
		}
		if Equivalent(a, b) != Equivalent(b, a) {
			t.Fatalf("Equivalent not symmetric on %q, %q", a, b)
		}
		if Normalize(a) != "" && !Equal(a, a) {
			t.Fatalf("Equal(%q, itself) = false", a)
		}
		if d := time.Since(start); d > fuzzDeadline {
			t.Fatalf("took %v on %q, %q", d, a, b)
		}
	})
}
