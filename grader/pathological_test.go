package grader

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"
)

// callLimit is the most one call of an exported function may take on any
// input of up to 1 MB (issue "work per call"): the benchmark below fails
// beyond it.
const callLimit = 100 * time.Millisecond

// allocLimit is the most bytes one such call may allocate.
const allocLimit = 64 << 20

// shape is one adversarial input.
type shape struct{ name, s string }

// repeatTo repeats unit until the result is about n bytes long.
func repeatTo(unit string, n int) string {
	return strings.Repeat(unit, max(1, n/len(unit)))
}

// extractShapes returns adversarial responses of about n bytes: runs of
// unclosed or nested openers, delimiters and anchors that a naive
// scanner would rescan from every position (the shapes of the issue's
// "work per call" item and their relatives).
func extractShapes(n int) []shape {
	units := []struct{ name, unit string }{
		{"boxed-open", `\boxed{`},
		{"fbox-open", `\fbox{`},
		{"boxed-nested", `\boxed{\boxed{`},
		{"boxed-closed", `\boxed{1}`},
		{"boxed-token", `\boxed 1 `},
		{"paren-open", `\(`},
		{"bracket-open", `\[`},
		{"paren-newline", "\\(\n"},
		{"dollar", `$`},
		{"dollar-double", `$$`},
		{"dollar-newline", "$1\n"},
		{"left", `\left(`},
		{"right", `\right)`},
		{"big", `\big(`},
		{"left-bar", `\left|`},
		{"brace-open", `{`},
		{"brace-close", `}`},
		{"frac-open", `\frac{`},
		{"sqrt-open", `\sqrt{`},
		{"power-open", `^{`},
		{"parens", `(`},
		{"escaped-command", `\\frac`},
		{"letters", `x`},
		{"answer-colon", `answer: `},
		{"final-answer", `The final answer is `},
		{"hashes", `#### `},
		{"headings", "#### Step 1: "},
		{"think", `</think>`},
		{"numbers", `1 `},
		{"thousands", `1,000 `},
		{"spans", `$1$ and `},
		{"inline-parens", `\(1\) `},
		{"factorial", `1!`},
		{"plus-minus", `\pm`},
		{"set-open", `\{`},
		{"env-open", `\begin{pmatrix}`},
		{"text-open", `\text{`},
		{"overline", `0.\overline{3}`},
		{"degrees", `30^\circ `},
		{"bold", `{\bf 7}`},
		{"comma-bang", `1,\!`},
		{"brace-comma", `1{,}`},
		{"answer-semicolons", `answer: 1; ab `},
		{"answer-paren-words", `answer: 1 (2 ab `},
		{"answer-word", `answer: word `},
	}
	out := make([]shape, 0, len(units)+3)
	for _, u := range units {
		out = append(out, shape{u.name, repeatTo(u.unit, n)})
	}
	out = append(out,
		shape{"long-command", `\\` + repeatTo("a", n)},
		shape{"aligned-chain", `\boxed{x ` + repeatTo(`&= 1 \\ `, n) + "}"},
		shape{"aligned-system", `\boxed{` + repeatTo(`x &= 1 \\ `, n) + "}"},
		shape{"deep-frac", `\boxed{` + repeatTo(`\frac{1}{`, n/2) + "2" + repeatTo("}", n/18) + "}"},
		shape{"prose-then-box", realisticResponse(n, `\frac{1}{2}`)},
	)
	return out
}

// evalShapes returns adversarial answer pairs (gold, answer) of at most
// MaxAnswerBytes each: expressions whose exact evaluation, expansion or
// comparison would be expensive without the step budget.
func evalShapes() []shape {
	join := func(n int, f func(i int) string, sep string) string {
		parts := make([]string, n)
		for i := range parts {
			parts[i] = f(i)
		}
		s := strings.Join(parts, sep)
		for len(s) > MaxAnswerBytes-64 {
			parts = parts[:len(parts)*9/10]
			s = strings.Join(parts, sep)
		}
		return s
	}
	mat6 := `\begin{vmatrix}` + strings.Repeat(`1&2&3&4&5&6\\`, 5) + `1&2&3&4&5&7\end{vmatrix}`
	return []shape{
		{"rational-powers", join(300, func(i int) string { return fmt.Sprintf("(%d/%d)^{%d}", 3+i, 7+2*i, 9000+i) }, "+")},
		{"factorials", join(300, func(i int) string { return fmt.Sprintf("%d!", 3000+i) }, "+")},
		{"binomials", join(300, func(i int) string { return fmt.Sprintf(`\binom{5000}{%d}`, 2000+i) }, `\cdot`)},
		{"symbolic-binomials", join(300, func(i int) string { return fmt.Sprintf(`\binom{x+\frac{%d}{7}}{4000}`, i) }, "+")},
		{"gcds", join(300, func(i int) string {
			return fmt.Sprintf(`\gcd(2^{60000}+%d, 3^{40000}, \operatorname{lcm}(%d, 2^{65000}))`, i, i+1)
		}, "+")},
		{"determinants", join(60, func(int) string { return mat6 }, ",")},
		{"plus-minus", join(8, func(i int) string { return fmt.Sprintf(`\pm %d`, i+1) }, "") + ", " + join(8, func(i int) string { return fmt.Sprintf(`\pm x^%d`, i+1) }, "")},
		{"long-list", join(256, func(i int) string { return fmt.Sprint(i) }, ",")},
		{"poly-list", join(256, func(i int) string { return fmt.Sprintf("x^%d+%dy", i%7, i) }, ",")},
		{"nested-sums", `\sum_{k=1}^{1000}\sum_{j=1}^{1000}\sum_{i=1}^{1000} ijk`},
		{"tower", `2^{2^{2^{2^{2^{2^{2}}}}}}`},
		{"tower-frac", `\left(\frac{3}{2}\right)^{2^{2^{2^{2}}}}`},
		{"matrix-product", strings.Repeat(`\begin{pmatrix}x&1\\1&x\end{pmatrix}`, 40)},
		{"deep-parens", strings.Repeat("(x+", 60) + "1" + strings.Repeat(")^2", 60)},
		{"huge-power-chain", join(200, func(i int) string { return fmt.Sprintf("2^{%d}", 60000+i) }, `\cdot`)},
		{"huge-bases", join(200, func(i int) string { return fmt.Sprintf("%d^{%d}", 2+i, 70000+i) }, `\cdot`)},
		{"huge-quotients", join(100, func(i int) string { return fmt.Sprintf(`\frac{%d^{%d}}{%d^{%d}}`, 4+i, 90000, 2+i, 170000) }, "+")},
		{"relations", join(200, func(i int) string { return fmt.Sprintf("x+%d", i) }, "=")},
		{"intervals", join(120, func(i int) string { return fmt.Sprintf("(%d,%d]", i, i+1) }, `\cup`)},
		{"repeating", join(100, func(i int) string { return fmt.Sprintf(`0.%d\overline{%d}`, i, i+1) }, "+")},
		{"set-builder", join(50, func(i int) string { return fmt.Sprintf(`\{x \mid x > %d\}`, i) }, `\cup`)},
		{"congruences", join(200, func(i int) string { return fmt.Sprintf("7^{%d}", 20000+i) }, `\equiv`) + `\pmod{` + strings.Repeat("9", 40) + "}"},
		{"disjunctions", join(200, func(i int) string { return fmt.Sprintf(`%dx + %d > %d`, i+1, i, 2*i) }, ` \text{ or } `)},
		{"odd-roots", join(300, func(i int) string { return fmt.Sprintf(`\sqrt[%d]{-%d^{%d}}`, 2*i+1, 3+i, 9000+i) }, "+")},
	}
}

// measured runs f and returns how long it took and the bytes it
// allocated.
func measured(f func()) (time.Duration, uint64) {
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	start := time.Now()
	f()
	d := time.Since(start)
	runtime.ReadMemStats(&m1)
	return d, m1.TotalAlloc - m0.TotalAlloc
}

// entryPoints are the exported calls made on each extraction shape s.
func entryPoints(s string) []struct {
	name string
	f    func()
} {
	choices := Config{Choices: []string{"A", "B", "C", "D", "E"}}
	return []struct {
		name string
		f    func()
	}{
		{"Extract", func() { Extract(s) }},
		{"ExtractGold", func() { Config{}.ExtractGold(s) }},
		{"Normalize", func() { Normalize(s) }},
		{"Grade(s, gold)", func() { Grade(s, "1") }},
		{"Grade(box, s)", func() { Grade(`\boxed{1}`, s) }},
		{"Grade(s, s)", func() { Grade(s, s) }},
		{"Equal(s, 1)", func() { Equal(s, "1") }},
		{"Equivalent(s, s1)", func() { Equivalent(s, s+"1") }},
		{"NoFallback.Grade", func() { Config{NoFallback: true}.Grade(s, "1") }},
		{"Choices.Grade", func() { choices.Grade(s, "A") }},
	}
}

// checkCall fails b when f takes longer than callLimit or allocates more
// than allocLimit. A slow call is timed twice more before failing, so
// that a pause of the shared machine alone does not fail the benchmark.
func checkCall(b *testing.B, what string, f func()) time.Duration {
	b.Helper()
	d, alloc := measured(f)
	for try := 0; d > callLimit && try < 2; try++ {
		d2, _ := measured(f)
		d = min(d, d2)
	}
	if d > callLimit {
		b.Fatalf("%s took %v, more than %v", what, d, callLimit)
	}
	if alloc > allocLimit {
		b.Fatalf("%s allocated %d MB, more than %d MB", what, alloc>>20, allocLimit>>20)
	}
	return d
}

// BenchmarkPathological times every exported call on adversarial inputs
// of 1 MB (and on adversarial answer pairs for the comparison) and fails
// when one call exceeds callLimit (100 ms) or allocLimit. One op is the
// whole set of calls on a shape; max-ms/call is the slowest of them.
//
//	go test ./grader -run '^$' -bench Pathological -benchtime 2x
func BenchmarkPathological(b *testing.B) {
	for _, sh := range extractShapes(1 << 20) {
		b.Run("1MB/"+sh.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(sh.s)))
			var slowest time.Duration
			for b.Loop() {
				for _, ep := range entryPoints(sh.s) {
					slowest = max(slowest, checkCall(b, sh.name+": "+ep.name, ep.f))
				}
			}
			b.ReportMetric(float64(slowest)/1e6, "max-ms/call")
		})
	}
	for _, sh := range evalShapes() {
		b.Run("eval/"+sh.name, func(b *testing.B) {
			b.ReportAllocs()
			other := sh.s + "+1"
			var slowest time.Duration
			for b.Loop() {
				for _, f := range []func(){
					func() { Equal(sh.s, sh.s) },
					func() { Equal(sh.s, other) },
					func() { Equivalent(other, sh.s) },
					func() { Grade(`\boxed{`+sh.s+`}`, other) },
					func() { Config{NonStrict: true}.Equal(sh.s, other) },
				} {
					slowest = max(slowest, checkCall(b, sh.name, f))
				}
			}
			b.ReportMetric(float64(slowest)/1e6, "max-ms/call")
		})
	}
}
