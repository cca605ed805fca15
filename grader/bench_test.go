package grader

import (
	"fmt"
	"strings"
	"testing"
)

// reasoningParagraph is a typical chain-of-thought paragraph: prose,
// inline and display math, numbers.
const reasoningParagraph = `We need the number of ordered pairs $(a, b)$ of positive integers with $a + b = %d$ and $\gcd(a, b) = 1$. ` +
	`Since $\gcd(a, b) = \gcd(a, a + b)$, the condition is that $a$ is coprime to $%d$. ` +
	"Let me double-check with a small case: for $n = 10$, the pairs are $(1,9), (3,7), (7,3), (9,1)$, which gives $4 = \\varphi(10)$.\n\n" +
	`\[ \varphi(n) = n \prod_{p \mid n} \left(1 - \frac{1}{p}\right) \]` + "\n" +
	"So far the count is %d, but wait, I should verify the boundary cases where $a = 0$ or $b = 0$; those are excluded because both are positive.\n\n"

// realisticResponse builds a response of about size bytes that ends in a
// boxed answer, like a long reasoning trace.
func realisticResponse(size int, answer string) string {
	var b strings.Builder
	for i := 0; b.Len() < size; i++ {
		fmt.Fprintf(&b, reasoningParagraph, 100+i, 100+i, 40+i)
	}
	b.WriteString("Therefore the number of ordered pairs is $\\boxed{" + answer + "}$.")
	return b.String()
}

// BenchmarkGrade measures graded responses per second on long reasoning
// responses ending in a box, for several answer forms.
func BenchmarkGrade(b *testing.B) {
	forms := []struct{ name, answer, gold string }{
		{"integer", "40", "40"},
		{"fraction", `\dfrac{3}{4}`, "0.75"},
		{"radical", `2\sqrt{2}`, `\sqrt{8}`},
		{"interval", `(-\infty, 2) \cup (3, \infty)`, `(-\infty,2)\cup(3,\infty)`},
		{"polynomial", `x^2+2x+1`, `(x+1)^2`},
	}
	for _, size := range []int{2 << 10, 8 << 10, 32 << 10} {
		for _, f := range forms {
			resp := realisticResponse(size, f.answer)
			b.Run(fmt.Sprintf("%dKiB/%s", size>>10, f.name), func(b *testing.B) {
				b.SetBytes(int64(len(resp)))
				for b.Loop() {
					if !Grade(resp, f.gold).Correct {
						b.Fatal("wrong verdict")
					}
				}
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "responses/s")
			})
		}
	}
}

// BenchmarkGradeFallback measures the no-box path, which scans for the
// last LaTeX span or number.
func BenchmarkGradeFallback(b *testing.B) {
	resp := strings.TrimSuffix(realisticResponse(8<<10, "40"), "Therefore the number of ordered pairs is $\\boxed{40}$.") + "So the count is 40."
	b.SetBytes(int64(len(resp)))
	for b.Loop() {
		if !Grade(resp, "40").Correct {
			b.Fatal("wrong verdict")
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "responses/s")
}
