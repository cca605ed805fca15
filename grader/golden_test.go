package grader

import (
	"strings"
	"testing"
)

// gradeCase is one golden grading case. The expected verdicts are
// mathematical facts about the two answers (the comment says why where
// it is not obvious), not outputs recorded from this package.
type gradeCase struct {
	name     string
	response string
	gold     string
	want     bool
}

func runGrade(t *testing.T, cfg Config, cases []gradeCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v := cfg.Grade(tc.response, tc.gold)
			if v.Correct != tc.want {
				t.Errorf("Grade(%q, %q) = %v (extracted %q, %s), want %v", tc.response, tc.gold, v.Correct, v.Extracted, v.Reason, tc.want)
			}
		})
	}
}

const longPrefix = "Let me think step by step. First we compute 12 + 30 = 42, then we try $x = 7$ " +
	"and check that $3x + 1 = 22$. We also note \\boxed{5} was a guess that turned out wrong. "

// TestGoldenAIME covers AIME answers: integers 0-999, often written with
// leading zeros.
func TestGoldenAIME(t *testing.T) { runGrade(t, Config{}, goldenAIME) }

var goldenAIME = []gradeCase{
	{"leading zeros in response", `So the answer is \boxed{033}.`, "33", true},
	{"leading zeros in gold", `Thus $m+n=\boxed{33}$.`, "033", true},
	{"zero", `\boxed{0}`, "0", true},
	{"max", `\boxed{999}`, "999", true},
	{"off by one", `\boxed{34}`, "33", false},
	{"last box wins", longPrefix + `Therefore the answer is \boxed{204}.`, "204", true},
	{"earlier box is not the answer", longPrefix + `Therefore the answer is \boxed{204}.`, "5", false},
	{"boxed text number", `\boxed{\text{070}}`, "70", true},
	// AoPS writes an AIME answer as \textbf{(051)} (3 of the 975 worked
	// solutions of deepscaler's aime.json box it so).
	{"AoPS bold answer in parentheses", `the answer is $41 + 10 = \boxed{\textbf{(051) }}$.`, "051", true},
	{"AoPS bold answer, gold without zeros", `$1+75+5 = \boxed{\textbf{(081)}}$.`, "81", true},
	{"AoPS bold answer, wrong number", `$\boxed{\textbf{(081)}}$.`, "18", false},
	{"no box: final answer sentence", "After all that, the final answer is 117. I hope it is correct.", "117", true},
	{"no box: last number fallback", "so there are 96 ways in total", "96", true},
	// The answer ends where the sentence goes on to explain it.
	{"answer sentence with a which clause", "The answer is 42, which is 6 times 7.", "42", true},
	// A clause opened by because, since, which, when, for, ... explains
	// the answer with or without a comma (it answered 4, the clause's
	// last number; Math-Verify 0.9.0 takes 12).
	{"answer sentence with a because clause", "The answer is 12 because there are 3 groups of 4.", "12", true},
	{"answer sentence with a because clause, not its last number", "The answer is 12 because there are 3 groups of 4.", "4", false},
	{"answer sentence with a since clause", "The answer is 12 since there are 3 groups of 4.", "12", true},
	{"answer sentence with an as clause", "The answer is 12 as there are 3 groups of 4.", "12", true},
	{"answer sentence with a which clause, no comma", "The answer is 12 which is 3 times 4.", "12", true},
	{"answer sentence with a when clause", "The answer is 12 when n = 3.", "12", true},
	{"answer sentence with a for clause", "The answer is 12 for n = 3.", "12", true},
	{"answer sentence with math spans and a because clause", "The answer is $12$ because there are $3$ groups of $4$.", "12", true},
	// Conditions and qualifiers open such a clause too (they answered the
	// clause's last number: 3, 2, 1, 2, 3).
	{"answer sentence with a depending clause", "The answer is 12 depending on whether x = 3.", "12", true},
	{"answer sentence with a depending clause, a list", "The answer is 5 or 6 depending on n = 3.", "5, 6", true},
	{"answer sentence with a depending clause is not its last number", "The answer is 5 or 6 depending on n = 3.", "3", false},
	{"answer sentence with an assuming clause", "The answer is 12 assuming x = 3.", "12", true},
	{"answer sentence with a provided clause", "The answer is 12 provided that x > 2.", "12", true},
	{"answer sentence with an unless clause", "The answer is 12 unless n = 1.", "12", true},
	{"answer sentence with a rounded clause", "The answer is 3.14 rounded to 2 decimal places.", "3.14", true},
	{"answer sentence with a rounded clause is not its last number", "The answer is 3.14 rounded to 2 decimal places.", "2", false},
	{"answer sentence with an according clause", "The answer is $12$ according to step $3$.", "12", true},
	{"answer sentence with a based clause", "The answer is 12 based on step 3.", "12", true},
	// So do contrasts, consequences and words that say how the answer
	// was found (they answered 13, 13, 13, 4, 10, 13, 3, 4, 4).
	{"answer sentence with a not clause", "The answer is 12 not 13.", "12", true},
	{"answer sentence with a not clause is not its last number", "The answer is 12 not 13.", "13", false},
	{"answer sentence with a rather clause", "The answer is 12 rather than 13.", "12", true},
	{"answer sentence with an instead clause", "The answer is 12 instead of 13.", "12", true},
	{"answer sentence with a meaning clause", "The answer is 12 meaning 3 groups of 4.", "12", true},
	{"answer sentence with a vs clause", "The answer is 12 vs 10.", "12", true},
	{"answer sentence with a but clause", "The answer is 12 but 13 is close.", "12", true},
	{"answer sentence with a therefore clause", "The answer is 12 therefore x = 3.", "12", true},
	{"answer sentence with an obtained clause", "The answer is 12 obtained from 3 × 4.", "12", true},
	{"answer sentence with a derived clause", "The answer is $12$ derived from $3 \\times 4$.", "12", true},
	{"answer sentence opening with a clause word", "The answer is therefore 12.", "12", true},
	{"answer sentence with nothing but the answer", "The answer is nothing but 12.", "12", true},
	{"answer sentence starting with the clause word", "The answer is as follows: 12.", "12", true},
	// "and" before a word goes on to something else (it answered 2, or
	// "5, 2" when math spans were joined); before a number or a math
	// span it joins a list.
	{"answer sentence with an and clause", "The answer is $5$ and the remainder is $2$.", "5", true},
	{"answer sentence with an and clause, plain", "The answer is 5 and the remainder is 2.", "5", true},
	{"answer sentence with an and clause is not its last number", "The answer is 5 and the remainder is 2.", "2", false},
	{"answer sentence with a list joined by and", "The answer is $3$ and $6$.", "3, 6", true},
	// A semicolon before a word, or a parenthesis holding words, goes on
	// to something else as a comma or "and" does (they answered 2 and 4).
	{"answer sentence with a semicolon clause", "The final answer is $5$; the remainder is $2$.", "5", true},
	{"answer sentence with a semicolon clause, plain", "The final answer is 5; the remainder is 2.", "5", true},
	{"answer sentence with a semicolon clause is not its last number", "The final answer is $5$; the remainder is $2$.", "2", false},
	{"answer sentence of equations separated by a semicolon", "Answer: x = 1; y = 2", "x = 1, y = 2", true},
	{"answer sentence of equations separated by a semicolon, as a pair", "Answer: x = 1; y = 2", "(1, 2)", true},
	{"answer sentence of equations separated by a semicolon is not its last number", "Answer: x = 1; y = 2", "2", false},
	{"answer sentence of equations separated by a semicolon, wrong", "Answer: x = 1; y = 3", "(1, 2)", false},
	{"answer sentence with a parenthesis opening with a number", "The final answer is 12 (3 groups of 4).", "12", true},
	{"answer sentence with a parenthesis opening with a number, not its last number", "The final answer is 12 (3 groups of 4).", "4", false},
	{"answer sentence with a tuple and a parenthesis", "Answer: (1, 2) (2 solutions in all)", "(1, 2)", true},
	{"answer sentence with a which clause, wrong", "The answer is 41, which is 6 times 7 minus 1.", "42", false},
	{"answer sentence with a parenthesis", "So the final answer is 117 (since n > 0).", "117", true},
	{"answer sentence with a math span and a clause", "The answer is $42$, since $x = 6$.", "42", true},
	{"float gold from POLARIS parquet", `\boxed{142}`, "142.0", true},
	{"negative", `\boxed{-4}`, "-4.0", true},
	{"think tags", "<think>maybe \\boxed{12}</think> The answer is \\boxed{13}", "13", true},
	{"chat marker ends response", `\boxed{7}<|im_start|>user Now solve ... \boxed{8}`, "7", true},
	{"boxed space form", `\boxed 5`, "5", true},
	{"fbox", `\fbox{25}`, "25", true},
	{"nested braces", `\boxed{\frac{1}{\sqrt{4}}}`, "1/2", true},
	{"nothing to extract", "I could not solve it.", "12", false},
	// Math spans or boxes joined by a comma and a few words belong to one
	// sentence; a sentence end between them separates them (AIME 2024 I
	// problem 1's worked solution in test2024.jsonl ends so; Math-Verify
	// 0.9.0 takes the last span).
	{"spans in two sentences are not joined (AIME 2024 I/1)", "The t minutes can be written as $144-48(2.5)$, so t = 24. $180 + 24 = 204$. -sepehr2010", "204", true},
	{"spans in two sentences, the earlier is not the answer", "We get $3$, so x = 2. $5 + 1 = 6$.", "3, 6", false},
	{"boxes in two sentences are not joined", `We get \boxed{3}, so x = 2. Then \boxed{6}.`, "6", true},
	{"spans in one sentence are joined", "The roots are $3$ and $6$.", "3, 6", true},
	// Math spans in prose joined by other words are steps, not a list;
	// the fallback takes the last (MATH-500 solutions, unboxed).
	{"spans with words between are steps (MATH-500 prealgebra/1227)", "the arcane mixer were between the $6$ witches and $10$ sorcerers, so there were $6 \\cdot 10 = 60$ handshakes at the mixer.", "60", true},
	{"spans with a which clause between are steps (MATH-500 algebra/668)", "The term $x$ is simply the average of $3^2 = 9$ and $3^4 = 81$, which is $(9 + 81)/2 = 90/2 = 45$.", "45", true},
	{"spans with words between, the first is not the answer", "the $6$ witches and $10$ sorcerers, so there were $6 \\cdot 10 = 60$ handshakes.", "6, 10, 60", false},
	{"boxes with words between are still joined", `The answers are \boxed{1} papers and \boxed{2} bins.`, "1, 2", true},
}

// TestGoldenMATH covers the answer forms of the MATH benchmark.
func TestGoldenMATH(t *testing.T) { runGrade(t, Config{}, goldenMATH) }

var goldenMATH = []gradeCase{
	// Fractions.
	{"dfrac vs frac12", `\boxed{\dfrac{3}{4}}`, `\frac34`, true},
	{"decimal equals fraction exactly", `\boxed{0.75}`, `\frac{3}{4}`, true},
	{"slash fraction", `\boxed{3/4}`, `\frac{3}{4}`, true},
	{"unreduced fraction", `\boxed{\frac{6}{8}}`, `\frac34`, true},
	{"inverted fraction", `\boxed{\frac{4}{3}}`, `\frac34`, false},
	// An answer sentence with LaTeX but no math delimiters is read whole,
	// not as its last number (the denominator).
	{"bare LaTeX after Answer:", `Answer: \frac{14}{3}`, `\frac{14}{3}`, true},
	{"bare LaTeX fraction is not its denominator", `The final answer is \frac{14}{3}.`, `3`, false},
	{"bare LaTeX radical", `The answer is 3\sqrt{13}.`, `3\sqrt{13}`, true},
	{"bare LaTeX point", `Answer: \left( 3, \frac{\pi}{2} \right)`, `(3, \frac{\pi}{2})`, true},
	// So is one of plain-text math (no $, no backslash) that is a tuple, an
	// interval or an expression with a variable (doc.go, answer sentences).
	{"plain tuple after Answer:", "Answer: (2,4)", `(2,4)`, true},
	{"plain tuple is not a decimal", "Answer: (2,4)", `2.4`, false},
	{"plain tuple order matters", "Answer: (2,4)", `(4,2)`, false},
	{"plain spaced tuple", "The answer is (-1, 2).", `(-1,2)`, true},
	{"plain tuple is not its last element", "The answer is (-1, 2).", `2`, false},
	{"plain fraction tuple", "Answer: (1/2, 3)", `(\frac12, 3)`, true},
	{"plain interval", "Answer: [1, 3)", `[1,3)`, true},
	{"plain interval is not its end", "Answer: [1, 3)", `3`, false},
	{"plain interval ends differ", "Answer: [1, 3)", `[1,3]`, false},
	{"plain interval to infinity", "Answer: (-inf, 2]", `(-\infty, 2]`, true},
	// A union of intervals and membership in one are read whole, as
	// their LaTeX is in a box (they read 5, the last end).
	{"plain union of intervals", "Answer: (-∞, 3) ∪ (5, ∞)", `(-\infty,3)\cup(5,\infty)`, true},
	{"plain union of intervals is not its last end", "Answer: (-∞, 3) ∪ (5, ∞)", `5`, false},
	{"plain union of bounded intervals", "The answer is [1, 3) ∪ (5, 7].", `[1,3)\cup(5,7]`, true},
	{"plain membership in an interval", "Answer: x ∈ [3, 5]", `[3,5]`, true},
	{"plain membership in an interval is not its end", "Answer: x ∈ [3, 5]", `5`, false},
	{"plain expression", "The answer is 2k+2.", `2k+2`, true},
	{"plain expression, factored gold", "The answer is 2k+2.", `2(k+1)`, true},
	{"plain expression is not its last number", "The answer is 2k+2.", `2`, false},
	{"plain polynomial", "Answer: 3x^2 - 1", `3x^2-1`, true},
	{"plain polynomial is not its constant", "Answer: 3x^2 - 1", `1`, false},
	{"plain quotient", "Final Answer: n(n+1)/2", `\frac{n(n+1)}{2}`, true},
	{"plain quotient is not its denominator", "Final Answer: n(n+1)/2", `2`, false},
	{"plain power", "Answer: x^2", `x^2`, true},
	// ≈ in plain text makes a chain as \approx does in a box (doc.go,
	// relations and chains): the value is the side before it, and the
	// approximation answers a decimal gold only when it is roughly that
	// side (they read the decimal: 3.14, 0.333, 1.414, 0.33).
	{"plain approximation answers its exact side", "Answer: π ≈ 3.14", `\pi`, true},
	{"plain approximation answers its decimal", "Answer: π ≈ 3.14", `3.14`, true},
	{"plain approximation of a fraction", "The answer is 1/3 ≈ 0.333.", `\frac13`, true},
	{"plain approximation of a root", "Answer: √2 ≈ 1.414", `\sqrt2`, true},
	{"plain wrong approximation answers no decimal", "Answer: 1/2 ≈ 0.33", `0.33`, false},
	{"plain approximation sign alone", "The answer is ≈ 3.14.", `3.14`, true},
	// A sign set off by a space at the start of the answer, or after =
	// or an opening bracket, is the number's sign (it was lost: 5).
	{"plain negative with a spaced sign", "The answer is - 5.", `-5`, true},
	{"plain negative with a spaced sign is not positive", "The answer is - 5.", `5`, false},
	{"plain negative with a spaced Unicode minus", "Answer: − 5", `-5`, true},
	{"plain list with a spaced sign", "Answer: - 5, 3", `-5, 3`, true},
	{"fallback negative with a spaced sign after =", "so x = - 5.", `-5`, true},
	{"fallback difference keeps its binary minus", "so we get 10 - 5", `5`, true},
	{"fallback bullet dash is no sign", "We have:\n- 5 apples", `5`, true},
	// Unicode squares and cubes are powers in plain text as in a box
	// (\boxed{x²+1} = x^2+1); they read 1, 2, 10 and 2, the last number
	// before or under the exponent.
	{"plain power with a Unicode square", "Answer: x² + 1", `x^2+1`, true},
	{"plain power with a Unicode square is not its constant", "Answer: x² + 1", `1`, false},
	{"plain power of a number with a Unicode cube", "The answer is 2³.", `8`, true},
	{"plain power of a number with a Unicode cube is not its base", "The answer is 2³.", `2`, false},
	{"plain scientific notation with a Unicode cube", "The answer is 5×10³.", `5000`, true},
	{"fallback power of a number with a Unicode cube", "so we get 2³", `8`, true},
	{"plain number before a unit with a Unicode square", "The answer is 25 cm².", `25`, true},
	{"plain number glued to a unit with a Unicode square", "The answer is 25m².", `25`, true},
	// A number, a space and a bracket group is a product, as in a box
	// (\boxed{2 (x + 1)}) and as the datasets write one in running text
	// (MATH-500 "30 (a + 7)^2", GSM8K "4 (Y - 7)", "1/2 (68) + 10 = 44"):
	// its last number (1, 5) is never the answer.
	{"plain product with a spaced bracket", "Answer: 2 (x + 1)", `2x+2`, true},
	{"plain product with a spaced bracket is not its last number", "Answer: 2 (x + 1)", `1`, false},
	{"plain product of numbers with a spaced bracket", "Answer: 12 (3 + 4 + 5)", `144`, true},
	{"plain product of numbers with a spaced bracket is not its last number", "Answer: 12 (3 + 4 + 5)", `5`, false},
	{"plain product with a spaced bracket before a clause", "The answer is 4 (y - 7), where y is the length.", `4y-28`, true},
	// π and √ are never units: a term with them is read whole, not as the
	// number glued to them (the radicand of √2, the coefficient of 2π).
	{"plain root", "The answer is √2.", `\sqrt{2}`, true},
	{"plain root is not its radicand", "The answer is √2.", `2`, false},
	{"plain root with coefficient", "The answer is 4√3/3.", `\frac{4\sqrt{3}}{3}`, true},
	// A root or π after a space is a factor too (they read the
	// coefficient: 2, 4/3).
	// A unit after plain math is dropped as after a number (these found
	// no answer: the number scan skips a coefficient of √ or π; 2^10
	// ways read 2).
	{"plain root before a unit", "Answer: 5√2 cm", `5\sqrt2`, true},
	{"plain multiple of pi before a squared unit", "The answer is 12π cm².", `12\pi`, true},
	{"plain multiple of pi before unit words", "The answer is 12π square units.", `12\pi`, true},
	{"plain multiple of pi before a unit is not its coefficient", "The answer is 12π cm².", `12`, false},
	{"plain power before a unit", "Answer: 2^10 ways", `1024`, true},
	{"plain number before a unit", "Answer: 5 cm", `5`, true},
	{"plain root with a spaced coefficient", "Answer: 2 √5", `2\sqrt5`, true},
	{"plain root with a spaced coefficient is not its coefficient", "Answer: 2 √5", `2`, false},
	{"plain multiple of pi with a spaced coefficient", "Answer: 4/3 π", `\frac43\pi`, true},
	{"plain multiple of pi spelled out with a spaced coefficient", "The answer is 4/3 pi.", `\frac{4\pi}{3}`, true},
	{"plain multiple of pi with a spaced coefficient is not its coefficient", "Answer: 4/3 π", `\frac43`, false},
	{"plain root with coefficient is not its denominator", "The answer is 4√3/3.", `3`, false},
	{"plain multiple of pi", "The answer is 2π/3.", `\frac{2\pi}{3}`, true},
	{"plain multiple of pi is not its denominator", "The answer is 2π/3.", `3`, false},
	{"plain multiple of pi is not its coefficient", "The answer is 2π.", `2`, false},
	// pi spelled out is the same constant, never a unit (MATH-500
	// prealgebra/1512 gold 7\pi).
	{"plain multiple of pi spelled out (MATH-500 prealgebra/1512)", "Answer: 7pi", `7\pi`, true},
	{"plain multiple of pi spelled out is not its coefficient", "Answer: 7pi", `7`, false},
	{"plain fraction of pi spelled out", "The answer is 2pi/3.", `\frac{2\pi}{3}`, true},
	{"plain fraction of pi spelled out is not its denominator", "The answer is 2pi/3.", `3`, false},
	{"plain value of a label, pi spelled out", "Answer: A = 12pi", `12\pi`, true},
	{"fallback root is not its radicand", "So the side length is 3√2", `2`, false},
	{"fallback multiple of pi is not its coefficient", "So the area is 2π", `2`, false},
	{"plain expression before a clause", "The answer is 2k+2, where k is the number of steps.", `2k+2`, true},
	{"plain line", "Answer: y = 2x + 1", `y=2x+1`, true},
	{"plain line is not its intercept", "Answer: y = 2x + 1", `1`, false},
	{"plain pair of equations", "Answer: x = 3, y = 4", `(3, 4)`, true},
	{"plain pair of equations, labelled gold", "Answer: x = 3, y = 4", `x=3, y=4`, true},
	{"plain pair of equations, swapped values", "Answer: x = 3, y = 4", `x=4, y=3`, false},
	{"plain pair of equations is not its last value", "Answer: x = 3, y = 4", `4`, false},
	// An equation whose left side sums labels names the quantity asked
	// for ("find m + n"); one with a number on the left is still to solve.
	{"plain sum asked for", "Answer: m + n = 37", `37`, true},
	{"plain sum asked for, wrong value", "Answer: m + n = 37", `36`, false},
	{"boxed sum asked for", `\boxed{m+n=37}`, `37`, true},
	{"difference asked for", `The answer is $a - b = 3$.`, `3`, true},
	{"unsolved equation is not its right side", "Answer: 2x + 1 = 7", `7`, false},
	{"line gold is not answered by a number", `\boxed{7}`, `x+y=7`, false},
	{"line gold, sides swapped", `\boxed{y+x=7}`, `x+y=7`, true},
	// Commas inside brackets separate elements, as in \boxed{(1,200)}.
	{"plain bracketed comma is a tuple", "Answer: (1,200)", `(1,200)`, true},
	{"plain bracketed comma is not thousands", "Answer: (1,200)", `1200`, false},
	// Near misses keep the reading by the number: units (spaced, glued,
	// or words), thousands, currency, prose, x as a times sign.
	{"plain number with spaced unit", "Answer: 5 m", `5`, true},
	{"plain number with spaced unit, wrong", "Answer: 5 m", `6`, false},
	{"plain number with glued unit", "Answer: 5m/s", `5`, true},
	{"plain value with glued unit", "Answer: d = 5m", `5`, true},
	{"plain number with spaced squared unit", "Answer: 12 m^2", `12`, true},
	{"plain value with unit word", "The answer is x = 12 cm.", `12`, true},
	{"plain number with unit word", "Answer: 3 dollars", `3`, true},
	{"plain thousands", "Answer: 1,200", `1200`, true},
	{"plain thousands is not a tuple", "Answer: 1,200", `(1,200)`, false},
	{"plain thousands after a label", "Answer: x = 1,200", `1200`, true},
	// Grouped numbers in a list or in arithmetic keep their grouping (it
	// read the last one: 2000).
	{"plain list of grouped numbers", "Answer: 1,000 and 2,000", `1000, 2000`, true},
	{"plain list of grouped numbers is not its last", "Answer: 1,000 and 2,000", `2000`, false},
	{"plain sum of grouped numbers", "The answer is 1,000 + 2,000.", `3000`, true},
	{"plain grouped number after a label in a list", "Answer: x = 1,200 or x = 3,400", `1200, 3400`, true},
	{"plain grouped number in a list with an expression", "Answer: 1,000,000,000,000,000 and x+1", `1000000000000000, x+1`, true},
	{"plain currency", "The answer is $1,250.", `1250`, true},
	{"plain answer then prose", "The answer is 42, which is 6 times 7.", `42`, true},
	{"plain x as a times sign", "Answer: 5x3=15", `15`, true},
	// Arithmetic on numbers alone is read whole, as Math-Verify reads it:
	// by its last number "2 + 3" answered 3 and "2^3" answered 2.
	{"plain sum of numbers", "Answer: 2 + 3", `5`, true},
	{"plain sum of numbers is not its last term", "Answer: 2 + 3", `3`, false},
	{"plain power of numbers", "The answer is 2^3.", `8`, true},
	{"plain power of numbers is not its base", "The answer is 2^3.", `2`, false},
	{"plain power of numbers is not its exponent", "The answer is 2^10.", `10`, false},
	// An exponent or subscript in braces, as LaTeX writes it, is part of
	// its operand: by its last number "2^{10}" answered 2 and "10^{-3}"
	// answered -3.
	{"plain power with a braced exponent", "The answer is 2^{10}.", `1024`, true},
	{"plain power with a braced exponent is not its base", "The answer is 2^{10}.", `2`, false},
	{"plain power with a braced negative exponent", "Answer: 10^{-3}", `0.001`, true},
	{"plain power with a braced negative exponent is not its exponent", "Answer: 10^{-3}", `-3`, false},
	{"plain polynomial with a braced exponent", "The answer is x^{2}+1.", `x^2+1`, true},
	{"plain braces elsewhere keep the last number", "Answer: {5}", `5`, true},
	// The times and division signs × and ÷ (and ·) are read as * and /.
	{"plain product with a times sign", "Answer: 2 × 3", `6`, true},
	{"plain product with a times sign is not its last factor", "Answer: 2 × 3", `3`, false},
	{"plain quotient with a division sign", "The answer is 12 ÷ 4.", `3`, true},
	{"plain quotient with a division sign is not its divisor", "The answer is 12 ÷ 4.", `4`, false},
	{"plain product with a middle dot", "Answer: 2 · 3", `6`, true},
	{"plain chain with a times sign that is false", "The answer is 4 × 5 = 21.", `21`, false},
	{"plain times sign before a unit keeps its last number", "The answer is 4 × 5 = 20 cm.", `20`, true},
	{"plain scientific notation with a times sign", "Answer: 1.5 × 10^-7", `1.5 \times 10^{-7}`, true},
	{"plain product with brackets", "Answer: 3*(4+1)", `15`, true},
	{"plain difference of numbers", "The final answer is 12 - 4.", `8`, true},
	{"plain negative number", "Answer: -5", `-5`, true},
	{"plain arithmetic chain keeps its last side", "The answer is 12 - 4 = 8.", `8`, true},
	{"plain arithmetic chain that is false", "The answer is 12 - 4 = 9.", `9`, false},
	{"plain number list keeps its last number", "Answer: 1, 2 + 3", `5`, false},
	// Numbers alone separated by ", " (or a comma before a sign) are a
	// list, as MATH-500 writes list golds: test/intermediate_algebra/428
	// gold 3, 5, 7, /1102 gold -2,1, /1388 gold 1,-2. By its last number
	// "3, 5, 7" answered 7 and "1,-2" answered -2.
	{"plain list (MATH-500 intermediate_algebra/428)", "The final answer is 3, 5, 7", `3, 5, 7`, true},
	{"plain list in another order (MATH-500 intermediate_algebra/428)", "The final answer is 7, 3, 5.", `3, 5, 7`, true},
	{"plain list is not its last number (MATH-500 intermediate_algebra/428)", "The final answer is 3, 5, 7", `7`, false},
	{"plain list missing an element (MATH-500 intermediate_algebra/428)", "The final answer is 3, 5", `3, 5, 7`, false},
	{"plain spaced list of negatives (MATH-500 intermediate_algebra/1102)", "Answer: -2, 1", `-2,1`, true},
	{"plain list, comma before a sign (MATH-500 intermediate_algebra/1388)", "Answer: 1,-2", `1,-2`, true},
	{"plain list, comma before a sign is not its last number (MATH-500 intermediate_algebra/1388)", "Answer: 1,-2", `-2`, false},
	{"plain list of fractions", "Answer: 1/2, -3/4", `\frac12, -\frac34`, true},
	{"plain list before a clause", "The answer is 3, 5, 7, which are the roots.", `3, 5, 7`, true},
	// ± makes two answers, as \pm does in a box; by its last number
	// "Answer: 1 ± √5" answered 1 (MATH-500 intermediate_algebra/2015
	// gold \{1\pm\sqrt{5},-2\}) and "Answer: x = ±2" answered 2.
	{"plain plus-minus", "Answer: 1 ± √5", `1\pm\sqrt5`, true},
	{"plain plus-minus is not its first term", "Answer: 1 ± √5", `1`, false},
	{"plain plus-minus of numbers", "The answer is 5 ± 2.", `3, 7`, true},
	{"plain plus-minus value of a label", "Answer: x = ±2", `\pm 2`, true},
	{"plain plus-minus value is not its positive root", "Answer: x = ±2", `2`, false},
	// Tuples listed with commas, "and" or "or" are a list of tuples, as in
	// a box; by its last number "Answer: (1, 2), (3, 4)" answered 4.
	{"plain list of tuples", "Answer: (1, 2), (3, 4)", `(1,2),(3,4)`, true},
	{"plain list of tuples in another order", "Answer: (3, 4), (1, 2)", `(1,2),(3,4)`, true},
	{"plain list of tuples is not its last number", "Answer: (1, 2), (3, 4)", `4`, false},
	{"plain list of tuples with and", "The answer is (1, 2) and (-3, 4).", `(1,2),(-3,4)`, true},
	{"plain list of tuples missing one", "Answer: (1, 2), (3, 4)", `(1,2),(3,4),(5,6)`, false},
	// A word alone ending the text after "Answer:" or "The answer is" is a
	// text answer, as MATH-500 writes five golds (it found nothing); a
	// number word or filler keeps the last number.
	{"word answer sentence (MATH-500 gold Evelyn)", "Evelyn runs fastest.\n\nAnswer: Evelyn", `\text{Evelyn}`, true},
	{"word answer sentence (MATH-500 gold east)", "She faces east at the end. The answer is east.", `\text{east}`, true},
	{"word answer sentence with an article", "The final answer is an ellipse.", `\text{ellipse}`, true},
	{"bold word answer sentence", "**Answer:** Navin", `\text{Navin}`, true},
	{"word answer sentence before a clause", "The answer is even, since $f(-x) = f(x)$.", `\text{even}`, true},
	{"word answer sentence, another word", "Answer: Evelyn", `\text{Navin}`, false},
	{"number word keeps the last number", "So $x = 5$. The answer is five.", `5`, true},
	{"filler word keeps the last number", "We find $x = 12$. The answer is below.", `12`, true},
	{"word answer sentence not ending the text", "The answer is east. Then we turn around twice.", `\text{east}`, false},
	{"word answer in the Minerva format", "Final Answer: The final answer is Evelyn. I hope it is correct.", `\text{Evelyn}`, true},
	{"word answer in the Minerva format, another word", "Final Answer: The final answer is Navin. I hope it is correct.", `\text{Evelyn}`, false},
	{"word after a box is not the answer", "So $x = \\boxed{5}$. The final answer is boxed.", `5`, true},
	{"word after a box does not replace it", "So $x = \\boxed{5}$.\n\nThe final answer is yes.", `5`, true},
	// An answer phrase written as text in math answers with the rest of
	// that math, read whole: it answered its last number, 3 (right for
	// gold 3), and "(1,2)" read as 1.2.
	{"answer phrase in math text", `$\text{Answer: }\frac{14}{3}$`, `\frac{14}{3}`, true},
	{"answer phrase in math text is not its last number", `$\text{Answer: }\frac{14}{3}$`, `3`, false},
	{"final answer phrase in display math", `\[\textbf{Final Answer:}\ x + 1\]`, `x+1`, true},
	{"answer phrase in math text before a pair", `$\text{Answer: }(1,2)$ and we are done.`, `(1,2)`, true},
	{"answer phrase in math text, wrong value", `$\text{Answer: }\frac{13}{3}$`, `\frac{14}{3}`, false},
	// So is an answer phrase in a bold group before bare LaTeX: the
	// group's closing brace hid the LaTeX, read by its last number.
	{"bold answer phrase before bare LaTeX", `\textbf{Answer:} \frac{14}{3}`, `\frac{14}{3}`, true},
	{"bold answer phrase before bare LaTeX is not its last number", `\textbf{Final Answer:} \frac{14}{3}`, `3`, false},
	{"old-style bold answer phrase before an expression", `{\bf Answer:} x + 1`, `x+1`, true},
	// Math that opens with = goes on from the prose before it and holds
	// the value after it; it did not parse, and when it was the last
	// math the response answered nothing.
	{"math opening with =", "The walk takes 3.4 hours, so the total time $= 204$ minutes.", `204`, true},
	{"math opening with =, wrong value", "The walk takes 3.4 hours, so the total time $= 205$ minutes.", `204`, false},
	{"math opening with = after a chain", "so time $= 3 + 0.4 = 3.4$ hours $= 204$ minutes.", `204`, true},
	{"answer sentence opening with =", "The answer is $= 204$.", `204`, true},
	{"box opening with =", `Total time \boxed{= 204}`, `204`, true},
	{"math opening with a false chain", "so time $= 3 + 0.4 = 3.5$", `3.5`, false},
	// A box holding one chain aligned over lines is that chain (it did not
	// parse, and answered nothing).
	{"aligned chain in a box", `\boxed{x &= 375 + 523 \\ &= 898}`, `898`, true},
	{"aligned chain in an aligned environment", `\boxed{\begin{aligned} x &= 375 + 523 \\ &= 898 \end{aligned}}`, `898`, true},
	{"aligned chain with a trailing line break", "\\boxed{\\begin{align*}\n x &= 375 + 523 \\\\\n &= 898 \\\\\n\\end{align*}}", `898`, true},
	{"aligned chain that is false", `\boxed{x &= 375 + 523 \\ &= 897}`, `897`, false},
	{"aligned system is not a chain", `\boxed{x &= 1 \\ y &= 2}`, `2`, false},
	{"aligned system is a list", `\boxed{x &= 1 \\ y &= 2}`, `x = 1, y = 2`, true},
	{"aligned system as a pair", `\boxed{\begin{aligned} x &= 1 \\ y &= 2 \end{aligned}}`, `(1, 2)`, true},
	{"aligned system with a chain", `\boxed{x &= 1 + 1 \\ &= 2 \\ y &= 3}`, `x = 2, y = 3`, true},
	{"aligned system, wrong value", `\boxed{x &= 1 \\ y &= 3}`, `x = 1, y = 2`, false},
	// A subscript of one command is a name, braced or not: V_{\max} did
	// not parse ("missing argument of max") and x_{\alpha} was not
	// x_\alpha.
	{"label subscripted by a command", `\boxed{V_{\max} = 12}`, `12`, true},
	{"label subscripted by a command, wrong value", `\boxed{V_{\max} = 13}`, `12`, false},
	{"braced and bare command subscripts", `\boxed{x_{\alpha} + 1}`, `x_\alpha + 1`, true},
	{"command subscripts differ", `\boxed{x_{\alpha} + 1}`, `x_\beta + 1`, false},
	{"aligned chain with row spacing", `\boxed{\begin{aligned} x &= 375 + 523 \\[2pt] &= 898 \end{aligned}}`, `898`, true},
	{"aligned system with row spacing", `\boxed{\begin{aligned} x &= 1 \\[2pt] y &= 2 \end{aligned}}`, `x = 1, y = 2`, true},
	{"matrix rows are not a chain", `\boxed{\begin{pmatrix} 1 & 2 \\ 3 & 4 \end{pmatrix}}`, `\begin{pmatrix} 1 & 2 \\ 3 & 4 \end{pmatrix}`, true},
	// A set of one tuple is that tuple, as a set of one number is that
	// number and a set of tuples their list (it was wrong both ways).
	{"set of one tuple", `\boxed{\{(1,2)\}}`, `(1,2)`, true},
	{"tuple against a set of one tuple", `\boxed{(1,2)}`, `\{(1,2)\}`, true},
	{"set of one tuple in another order", `\boxed{\{(2,1)\}}`, `(1,2)`, false},
	{"set of one triple", `\boxed{\{(1,2,3)\}}`, `(1,2,3)`, true},
	{"set of one tuple is not a half-open interval", `\boxed{\{(1,2)\}}`, `(1,2]`, false},
	{"set of two tuples is not one", `\boxed{\{(1,2),(3,4)\}}`, `(1,2)`, false},
	// An inequality in a variable is read whole as in a box; by its last
	// number "Answer: x > 3" answered 3.
	{"plain inequality", "Answer: x > 3", `x > 3`, true},
	{"plain inequality is not its bound", "Answer: x > 3", `3`, false},
	{"plain inequality with >=", "Answer: x >= 2", `x \ge 2`, true},
	{"plain inequality with ≤", "The answer is x ≤ 5.", `x \le 5`, true},
	{"plain double inequality", "The answer is -2 < x < 7.", `-2 < x < 7`, true},
	{"plain double inequality is not its upper bound", "The answer is -2 < x < 7.", `7`, false},
	{"plain inequality with ≠ is not its value", "Answer: x ≠ 2", `2`, false},
	// "and" and "or" join a list as in a box (\boxed{3, 5, and 7} was
	// right; by its last number "Answer: 3, 5, and 7" answered 7).
	{"plain list with and (MATH-500 intermediate_algebra/428)", "Answer: 3, 5, and 7", `3, 5, 7`, true},
	{"plain list with and is not its last number", "Answer: 3, 5, and 7", `7`, false},
	{"plain list with and, no serial comma", "Answer: 3, 5 and 7", `3, 5, 7`, true},
	{"plain pair with and", "The answer is 3 and 5.", `3, 5`, true},
	{"plain pair with and missing an element", "The answer is 3 and 5.", `3, 5, 7`, false},
	{"plain roots with or (MATH-500 intermediate_algebra/1388)", "Answer: x = 1 or x = -2", `1,-2`, true},
	{"plain and in prose is no list", "The answer is 5 and 7 is wrong.", `5, 7`, false},
	// A comma before pi, inf or a function applied with "(" continues
	// the answer; it opens no explaining clause (MATH-500
	// precalculus/807 gold (3, pi/2), algebra/1078 (-sqrt 3, sqrt 3)).
	{"plain tuple with pi after a comma (MATH-500 precalculus/807)", "Answer: (3, pi/2)", `\left( 3, \frac{\pi}{2} \right)`, true},
	{"plain tuple with pi after a comma, wrong angle", "Answer: (3, pi/3)", `\left( 3, \frac{\pi}{2} \right)`, false},
	// Infinity alone is a constant, never a unit, as pi is (it found
	// nothing, and after a number the fallback answered that number).
	{"plain infinity", "For n = 5 the sum is 3.\n\nAnswer: infinity", `\infty`, true},
	{"plain infinity sign", "The answer is ∞.", `\infty`, true},
	{"plain negative infinity", "Answer: -inf", `-\infty`, true},
	{"plain infinity is not its negative", "Answer: infinity", `-\infty`, false},
	{"plain infinity is not the last number", "For n = 5 the sum is 3.\n\nAnswer: infinity", `3`, false},
	{"plain interval with sqrt after a comma (MATH-500 algebra/1078)", "Answer: (-sqrt(3), sqrt(3))", `(-\sqrt{3}, \sqrt{3})`, true},
	{"plain interval to inf after a comma", "The answer is [2, inf).", `[2,\infty)`, true},
	{"plain list then a clause with a function word", "The answer is 3, 5, which sin(x) takes.", `3, 5`, true},
	// A comma between numbers is a list separator unless it groups
	// thousands (a comma before exactly three digits after a lead of one
	// to three digits): no gold writes a decimal comma, and the same text
	// as a gold or in a box is a list (as in Math-Verify's LaTeX).
	{"plain list without spaces (MATH-500 intermediate_algebra/1102)", "Answer: -2,1", `-2,1`, true},
	{"plain list without spaces is not a decimal comma (MATH-500 intermediate_algebra/1102)", "Answer: -2,1", `-2.1`, false},
	{"plain list without spaces of two numbers", "Answer: 2,5", `2,5`, true},
	{"plain list without spaces is not 2.5", "Answer: 2,5", `2.5`, false},
	{"plain list without spaces of three numbers", "The final answer is 1,2,3.", `3,2,1`, true},
	{"plain grouped number stays a number", "Answer: 1,200", `1200`, true},
	{"plain grouped number with two groups", "Answer: 12,345,678", `12345678`, true},
	{"plain grouped value of a label", "Answer: x = 1,200", `1200`, true},
	// A "!" before an operator is a factorial, not the sentence's end.
	{"plain factorial chain", "Answer: 5! = 120", `120`, true},
	{"plain factorial chain, wrong gold", "Answer: 5! = 120", `5`, false},
	{"plain factorial sum", "The answer is 3! + 2.", `8`, true},
	{"plain factorial sum is not its first number", "The answer is 3! + 2.", `3`, false},
	{"exclamation ends the sentence", "The answer is 7! Then we check it.", `7`, true},
	{"mixed number", `\boxed{2\frac{1}{2}}`, `\frac52`, true},
	{"rounded decimal is wrong at 6 places", `\boxed{0.33}`, `\frac13`, false},
	{"long decimal rounds to fraction", `\boxed{0.3333333}`, `\frac13`, true},
	// MATH-500 test/number_theory/598 has the exact gold .0000672, written
	// to 7 places: rounding both sides to 6 would take 0.0000673 and
	// 6.73 \times 10^{-5} (both 0.000067) for it.
	{"gold with 7 places, neighbour decimal", `\boxed{0.0000673}`, `.0000672`, false},
	{"gold with 7 places, neighbour in scientific notation", `\boxed{6.73 \times 10^{-5}}`, `.0000672`, false},
	{"gold with 7 places, equal", `\boxed{6.72 \times 10^{-5}}`, `.0000672`, true},
	{"gold with 7 places, exact fraction", `\boxed{\frac{42}{625000}}`, `.0000672`, true},
	{"gold with 8 places, irrational answer", `\boxed{\pi}`, `3.14159265`, true},
	// A gold in scientific notation writes the places of its value:
	// rounding both sides to 6 took 2 \times 10^{-7} for 1.5 \times 10^{-7}.
	{"scientific gold, neighbour", `\boxed{1.6 \times 10^{-7}}`, `1.5 \times 10^{-7}`, false},
	{"scientific gold, whole neighbour", `\boxed{2 \times 10^{-7}}`, `1.5 \times 10^{-7}`, false},
	{"scientific gold, rounded answer", `\boxed{6.7 \times 10^{-5}}`, `6.72 \times 10^{-5}`, false},
	{"scientific gold, decimal", `\boxed{0.00000015}`, `1.5 \times 10^{-7}`, true},
	{"scientific gold, e-notation", `\boxed{1.5e-7}`, `1.5 \cdot 10^{-7}`, true},
	{"scientific gold, fraction", `\boxed{\frac{3}{20000000}}`, `1.5 \times 10^{-7}`, true},
	// Below 10^{-15} the places go to the 15th significant digit: at 15
	// places 0 and 1.6 \times 10^{-20} rounded to 1.5 \times 10^{-20}.
	{"tiny scientific gold is not 0", `\boxed{0}`, `1.5 \times 10^{-20}`, false},
	{"tiny scientific gold, neighbour", `\boxed{1.6 \times 10^{-20}}`, `1.5 \times 10^{-20}`, false},
	{"tiny scientific gold, e-notation", `\boxed{1.5e-20}`, `1.5 \times 10^{-20}`, true},
	{"tiny scientific gold, decimal", `\boxed{0.000000000000000000015}`, `1.5 \times 10^{-20}`, true},
	{"tiny decimal gold is not 0", `\boxed{0}`, `0.000000000000000000015`, false},
	{"tiny decimal gold, scientific", `\boxed{1.5 \times 10^{-20}}`, `0.000000000000000000015`, true},
	{"Planck's constant", `\boxed{6.626 \times 10^{-34}}`, `6.626 \times 10^{-34}`, true},
	{"Planck's constant, neighbour", `\boxed{6.627 \times 10^{-34}}`, `6.626 \times 10^{-34}`, false},
	{"power-of-ten gold, neighbour decimal", `\boxed{0.00000002}`, `10^{-8}`, false},
	{"power-of-ten gold, decimal", `\boxed{0.00000001}`, `10^{-8}`, true},
	{"fraction gold keeps 6 places", `\boxed{0.000977}`, `\frac{1}{1024}`, true},
	{"large scientific gold", `\boxed{1.2 \times 10^{6}}`, `1200000`, true},
	// Only scientific notation writes the places of its value: a power of
	// a decimal (compound interest) keeps 6, as 2^{-20} and 1/1024 do.
	{"power of a decimal keeps 6 places", `\boxed{1.628895}`, `1.05^{10}`, true},
	{"power of a decimal keeps 6 places, times money", `\boxed{1628.894627}`, `1000(1.05)^{10}`, true},
	{"power of a decimal keeps 6 places, 8 given", `\boxed{2.59374246}`, `1.1^{10}`, true},
	{"power of a decimal, wrong at 6 places", `\boxed{2.593743}`, `1.1^{10}`, false},
	{"small power of a decimal keeps 6 places", `\boxed{0.00000095}`, `0.5^{20}`, true},
	{"scientific gold as a quotient", `\boxed{1.6 \times 10^{-7}}`, `\frac{1.5}{10^{7}}`, false},
	{"scientific gold times a variable", `\boxed{1.54 \times 10^{-7} x}`, `1.5 \times 10^{-7} x`, false},
	{"scientific gold times a variable, equal", `\boxed{0.00000015 x}`, `1.5 \times 10^{-7} x`, true},
	// Roots and constants.
	{"simplified radical", `\boxed{2\sqrt{2}}`, `\sqrt{8}`, true},
	{"rationalised", `\boxed{\frac{1}{\sqrt{2}}}`, `\frac{\sqrt{2}}{2}`, true},
	{"sqrt over 2", `\boxed{\sqrt{2}/2}`, `\frac{\sqrt2}{2}`, true},
	{"wrong radical", `\boxed{\sqrt{3}}`, `\sqrt{2}`, false},
	{"cube root", `\boxed{\sqrt[3]{27}}`, `3`, true},
	// A parenthesised radicand (\sqrt(2), sqrt(2): LaTeX's \sqrt would take
	// the "(" alone, so the group is the only reading).
	{"sqrt with parentheses", `\boxed{\sqrt(2)}`, `\sqrt{2}`, true},
	{"plain sqrt call", `\boxed{3sqrt(x+1)}`, `3\sqrt{x+1}`, true},
	{"plain sqrt call, wrong radicand", `\boxed{sqrt(3)}`, `\sqrt{2}`, false},
	{"plain sqrt call in an answer sentence", `The answer is sqrt(2).`, `\sqrt{2}`, true},
	{"plain sqrt call is not its radicand", `The answer is sqrt(2).`, `2`, false},
	// LaTeX without delimiters after prose is read without the prose
	// (the whole sentence was a product of letters), but not after a
	// negation.
	{"bare latex after prose", `The answer is therefore \frac{14}{3}.`, `\frac{14}{3}`, true},
	{"bare latex after a negation", `The answer is not \frac{14}{3}.`, `\frac{14}{3}`, false},
	{"bare latex after prose in the fallback", `so the probability is \frac{1}{2}`, `\frac12`, true},
	{"bare latex after prose in the fallback is not its denominator", `so the probability is \frac{1}{2}`, `2`, false},
	// Unicode √ takes the whole digit run after it, as plain text means:
	// √23 is the root of 23, not 3√2 (which \sqrt 23 would be).
	{"unicode root of a two-digit number", `\boxed{√23}`, `\sqrt{23}`, true},
	{"unicode root is not a digit's root", `\boxed{√23}`, `3\sqrt{2}`, false},
	{"unicode root with coefficient", `\boxed{2√12}`, `4\sqrt{3}`, true},
	{"unicode root of a group", `\boxed{√(2)}`, `\sqrt{2}`, true},
	// Unicode cube and fourth roots and vulgar fractions are read as
	// \sqrt[3], \sqrt[4] and \frac (they were not: "3½ hours" answered 3,
	// "½" and "∛2" nothing).
	{"unicode cube root", `\boxed{∛8}`, `2`, true},
	{"unicode cube root of a two-digit number", `\boxed{∛27}`, `3`, true},
	{"unicode fourth root", `\boxed{∜16}`, `2`, true},
	{"unicode cube root of a variable", `\boxed{∛x}`, `x^{1/3}`, true},
	{"unicode cube root in an answer sentence", "Answer: ∛2", `\sqrt[3]{2}`, true},
	{"unicode cube root is not its radicand", "Answer: ∛2", `2`, false},
	{"unicode cube root with a coefficient", "The answer is 2∛3.", `2\sqrt[3]{3}`, true},
	{"vulgar fraction", `\boxed{½}`, `\frac{1}{2}`, true},
	{"vulgar fraction after an integer is a mixed number", `\boxed{3½}`, `\frac{7}{2}`, true},
	{"vulgar fraction in an answer sentence", "The answer is ½.", `\frac{1}{2}`, true},
	{"mixed number with a vulgar fraction in an answer sentence", "The answer is 3½ hours.", `3.5`, true},
	{"mixed number with a vulgar fraction is not its integer", "The answer is 3½ hours.", `3`, false},
	{"mixed number with a vulgar fraction in the fallback", "so it takes 2¾ hours", `\frac{11}{4}`, true},
	{"negative mixed number with a vulgar fraction", "Answer: -1⅓", `-\frac{4}{3}`, true},
	{"spaced mixed number with a vulgar fraction", "so it takes 3 ½ hours", `\frac{7}{2}`, true},
	{"spaced mixed number with a vulgar fraction in a box", `\boxed{3 ½}`, `3.5`, true},
	{"pi multiple", `\boxed{\frac{\pi}{2}}`, `\frac12\pi`, true},
	{"pi decimal is not pi", `\boxed{6.28}`, `2\pi`, false},
	{"e power", `\boxed{e^2}`, `\exp(2)`, true},
	{"complex", `\boxed{4i+3}`, `3+4i`, true},
	{"complex conjugate", `\boxed{3-4i}`, `3+4i`, false},
	{"infinity", `\boxed{\infty}`, `\infty`, true},
	{"minus infinity", `\boxed{-\infty}`, `\infty`, false},
	// Intervals.
	{"union of intervals", `\boxed{(-\infty, 2) \cup (3, \infty)}`, `(-\infty,2)\cup(3,\infty)`, true},
	{"union order", `\boxed{(3, \infty) \cup (-\infty, 2)}`, `(-\infty,2)\cup(3,\infty)`, true},
	{"half-open vs closed", `\boxed{[2,5)}`, `[2,5]`, false},
	{"interval gold, inequality answer (default off)", `\boxed{x > 3}`, `(3, \infty)`, false},
	{"inequality gold, interval answer", `\boxed{(3, \infty)}`, `x > 3`, true},
	{"inequality flipped", `\boxed{3 < x}`, `x > 3`, true},
	// Inequalities joined by "or" state the union of their solution sets
	// (sympy: Or(x < -1, x > 1).as_set() is Union(Interval.open(-oo,
	// -1), Interval.open(1, oo)); Math-Verify 0.9.0 rejects it, reading
	// the gold as a set of two relations); as for one
	// inequality, the gold decides whether an interval answers it.
	{"inequality gold joined by or, union answer", `\boxed{(-\infty,-1)\cup(1,\infty)}`, `x < -1 \text{ or } x > 1`, true},
	{"inequality gold joined by or, wrong end", `\boxed{(-\infty,-1]\cup(1,\infty)}`, `x < -1 \text{ or } x > 1`, false},
	{"union gold, inequalities joined by or (default off)", `\boxed{x < -1 \text{ or } x > 1}`, `(-\infty,-1)\cup(1,\infty)`, false},
	{"inequalities joined by and are not a union", `\boxed{(-\infty,-1)\cup(1,\infty)}`, `x > -1 \text{ and } x < 1`, false},
	// Tuples and sets.
	{"point", `\boxed{(1, -2)}`, `(1,-2)`, true},
	{"point order matters", `\boxed{(-2, 1)}`, `(1,-2)`, false},
	{"set order free", `\boxed{\{1,2\}}`, `\{2,1\}`, true},
	{"comma list order free", `\boxed{2, -3}`, `-3, 2`, true},
	{"missing member", `\boxed{2}`, `2, -3`, false},
	{"plus-minus", `\boxed{1 \pm \sqrt{3}}`, `1+\sqrt3, 1-\sqrt3`, true},
	// Text.
	{"text answer", `\boxed{\text{Monday}}`, `\text{Monday}`, true},
	{"text case and article", `\boxed{The Circle}`, `\text{circle}`, true},
	{"choice letter in parens", `\boxed{\textbf{(B)}}`, `B`, true},
	{"different text", `\boxed{\text{Tuesday}}`, `\text{Monday}`, false},
	{"choice with value", `\boxed{\textbf{(C)}\ 12}`, `C`, true},
	{"wrong choice with value", `\boxed{\textbf{(D)}\ 12}`, `C`, false},
	{"hedged boxes", `\boxed{3} or \boxed{4}`, `3`, false},
	{"hedged plus-minus", `\boxed{\pm 3}`, `3`, false},
	{"repeated answer", `\boxed{3, 3}`, `3`, true},
	{"superset", `\boxed{1,2,3,4}`, `1,2,3`, false},
	{"point is not a number", `\boxed{(3, 3)}`, `3`, false},
	{"number is not a point", `\boxed{3}`, `(3, 3)`, false},
	// Matrices.
	{"pmatrix vs bmatrix", `\boxed{\begin{pmatrix} 1 & 2 \\ 3 & 4 \end{pmatrix}}`, `\begin{bmatrix}1&2\\3&4\end{bmatrix}`, true},
	{"matrix entry differs", `\boxed{\begin{pmatrix} 1 & 2 \\ 3 & 5 \end{pmatrix}}`, `\begin{pmatrix}1&2\\3&4\end{pmatrix}`, false},
	{"column vector", `\boxed{\begin{pmatrix} -1 \\ 2 \end{pmatrix}}`, `\begin{pmatrix}-1\\2\end{pmatrix}`, true},
	// A row break may carry extra space, \\[4pt], as models write between
	// rows of fractions; its \[ was read as display math, so no such
	// matrix parsed (MATH-500 test/precalculus/1300 gold).
	{"column vector with row spacing", `\boxed{\begin{pmatrix} \frac{1}{5} \\[4pt] -\frac{18}{5} \end{pmatrix}}`, `\begin{pmatrix} 1/5 \\ -18/5 \end{pmatrix}`, true},
	{"column vector with spaced row spacing", `\boxed{\begin{pmatrix} \dfrac{1}{5} \\ [0.5em] -\dfrac{18}{5} \end{pmatrix}}`, `\begin{pmatrix} 1/5 \\ -18/5 \end{pmatrix}`, true},
	{"column vector with row spacing, entry differs", `\boxed{\begin{pmatrix} \frac{1}{5} \\[4pt] -\frac{17}{5} \end{pmatrix}}`, `\begin{pmatrix} 1/5 \\ -18/5 \end{pmatrix}`, false},
	{"matrix with row spacing", `\boxed{\begin{pmatrix} -1 & 0 \\[3pt] 0 & -1 \end{pmatrix}}`, `\begin{pmatrix} -1 & 0 \\ 0 & -1 \end{pmatrix}`, true},
	{"matrix with row spacing, entry differs", `\boxed{\begin{pmatrix} -1 & 0 \\[3pt] 0 & -1 \end{pmatrix}}`, `\begin{pmatrix} -1 & 0 \\ 3 & -1 \end{pmatrix}`, false},
	// Degrees, percent, units, thousands, scientific notation.
	{"degrees mark", `\boxed{30^\circ}`, `30`, true},
	{"degrees word", `The angle is \boxed{30 \text{ degrees}}`, `30^\circ`, true},
	{"percent vs number", `\boxed{25\%}`, `25`, true},
	{"percent vs fraction", `\boxed{0.25}`, `25\%`, true},
	{"percent answer vs fraction gold", `\boxed{25\%}`, `\frac14`, true},
	{"percent answer vs its number over 100", `\boxed{40\%}`, `0.4`, true},
	{"negative percent vs number", `\boxed{-10\%}`, `-10`, true},
	{"negative percent vs fraction", `\boxed{-25\%}`, `-\frac14`, true},
	{"negative percent is not positive", `\boxed{-10\%}`, `10`, false},
	// Colour and horizontal space change how an answer looks, not what it
	// says (AoPS writers colour boxes: \boxed{\color{blue}...}); they
	// were read as factors, so correct answers were graded wrong.
	{"coloured answer", `\boxed{\color{blue}\frac{14}{3}}`, `\frac{14}{3}`, true},
	{"coloured answer, wrong value", `\boxed{\color{blue}\frac{13}{3}}`, `\frac{14}{3}`, false},
	{"textcolor answer", `\boxed{\textcolor{red}{\frac{14}{3}}}`, `\frac{14}{3}`, true},
	{"colour given by a model", `\boxed{\color[rgb]{0,0,1} 5}`, `5`, true},
	{"hspace before a unit", `\boxed{12\hspace{1mm}\text{cm}}`, `12`, true},
	{"framebox", `so the walk takes $\framebox{204}$ minutes`, `204`, true},
	{"framebox, wrong value", `so the walk takes $\framebox{204}$ minutes`, `240`, false},
	{"units text", `\boxed{12\text{ cm}^2}`, `12`, true},
	// A unit written as a fraction of unit texts is dropped as the unit
	// text is (it stayed a factor, so a correct speed was graded wrong).
	{"fraction of unit texts", `\boxed{12\,\frac{\text{km}}{\text{h}}}`, `12`, true},
	{"fraction of unit texts with a power", `\boxed{9.8 \frac{\text{m}}{\text{s}^2}}`, `9.8`, true},
	{"fraction of unit words in a font", `\boxed{60 \frac{\mathrm{km}}{\mathrm{hr}}}`, `60`, true},
	{"fraction of unit texts, wrong value", `\boxed{12\,\frac{\text{km}}{\text{h}}}`, `13`, false},
	// A bare unit word follows a root or π as it follows a number (it
	// read "units" as a factor of 2\sqrt{2}; Math-Verify 0.9.0 drops it).
	{"bare unit after a root", `\boxed{2\sqrt{2} units}`, `2\sqrt2`, true},
	{"bare unit after a root, wrong root", `\boxed{2\sqrt{3} units}`, `2\sqrt2`, false},
	{"bare unit after a lone root", `\boxed{\sqrt{5} cm}`, `\sqrt5`, true},
	{"bare two-word unit after pi", `\boxed{3\pi square feet}`, `3\pi`, true},
	{"bare squared unit after a root", `\boxed{4 \sqrt{3} cm^2}`, `4\sqrt3`, true},
	{"bare unit after a variable stays a factor", `\boxed{2x cm}`, `2x`, false},
	{"dollars", `\boxed{\$1,250}`, `1250`, true},
	// A sign before the dollar: the grouped number keeps its commas'
	// meaning (it read - 1,250 as the list -1, 250).
	{"negative dollars", `\boxed{-\$1,250}`, `-1250`, true},
	{"negative dollars are not positive", `\boxed{-\$1,250}`, `1250`, false},
	{"negative dollars, grouped gold", `\boxed{-\$1,250}`, `-1,250`, true},
	{"thousands", `\boxed{1,000,000}`, `1000000`, true},
	// GSM8K-style answers box a grouped number with its unit.
	{"thousands with unit text", `\boxed{1,200 \text{ dollars}}`, `1200`, true},
	{"thousands with unit, grouped gold", `\boxed{114,200 \text{ apples}}`, `114,200`, true},
	{"thousands with unit, wrong", `\boxed{1,300 \text{ dollars}}`, `1200`, false},
	{"thousands with squared unit", `\boxed{2,500\,\text{cm}^2}`, `2500`, true},
	// A grouped number as a label's value is grouped as it is alone and in
	// a plain answer sentence ("Answer: x = 1,200"); it read the list 1, 200.
	{"thousands after a label", `\boxed{x = 1,200}`, `1200`, true},
	{"thousands after a label, grouped gold", `\boxed{N = 58,500}`, `58,500`, true},
	{"thousands after a label, negative", `\boxed{x = -1,200}`, `-1200`, true},
	{"thousands after a label, in a sentence span", `The answer is $n = 10,080$.`, `10,\!080`, true},
	{"thousands after a label, wrong", `\boxed{x = 1,300}`, `1200`, false},
	{"thousands after a label are not a list", `\boxed{x = 1,200}`, `1, 200`, false},
	{"list of two labels keeps its commas", `\boxed{x = 1, y = 200}`, `(1, 200)`, true},
	{"scientific latex", `\boxed{1.5 \times 10^{3}}`, `1500`, true},
	{"scientific e", `the final answer is 2.5e-3`, `0.0025`, true},
	// Equations and expressions.
	{"x = prefix", `\boxed{x = 3}`, `3`, true},
	{"equation sides swapped", `\boxed{2x+1=y}`, `y=2x+1`, true},
	{"equation scaled", `\boxed{2y = 4x + 2}`, `y=2x+1`, true},
	{"equation wrong", `\boxed{y = 2x - 1}`, `y=2x+1`, false},
	{"expanded polynomial", `\boxed{x^2+2x+1}`, `(x+1)^2`, true},
	{"wrong polynomial", `\boxed{x^2+2x}`, `(x+1)^2`, false},
	{"trig identity", `\boxed{\sin^2 x + \cos^2 x}`, `1`, true},
	{"abs is not identity", `\boxed{|x|}`, `x`, false},
	{"log base", `\boxed{\log_2 8}`, `3`, true},
	{"binomial", `\boxed{\binom{5}{2}}`, `10`, true},
	{"factorials differ", `\boxed{\frac{1}{2006!}}`, `\frac{1}{2004!}`, false},
	{"powers of two differ", `\boxed{\frac{1}{2^{98}}}`, `\frac{1}{2^{99}}`, false},
	{"huge exponent same", `\boxed{2^{2^{100}}}`, `2^{2^{100}}`, true},
	{"huge exponent differs", `\boxed{2^{2^{100}}}`, `2^{2^{101}}`, false},
	{"base subscript", `\boxed{204_5}`, `204_5`, true},
	// Whole worked solution as gold.
	{"gold is a solution", `\boxed{\frac{14}{3}}`, `... so $f(-2)+f(-1)+f(0)=\boxed{\frac{14}{3}}$`, true},
}

// TestGoldenPOLARIS covers POLARIS-style gold answers: bare strings, often
// LaTeX without delimiters, some decimals.
func TestGoldenPOLARIS(t *testing.T) { runGrade(t, Config{}, goldenPOLARIS) }

var goldenPOLARIS = []gradeCase{
	{"integer", `... so the tyres are swapped after \boxed{9375} km.`, "9375", true},
	{"integer with unit", `\boxed{9375 \text{ km}}`, "9375", true},
	{"decimal vs fraction", `\boxed{\frac{65}{2}}`, "32.5", true},
	{"decimal wrong", `\boxed{32.4}`, "32.5", false},
	// Two exact numbers that differ at the 6th decimal place differ,
	// however large: 2000000000001 is not 2000000000000 written 2000000000000.0
	// (POLARIS and AMC parquet golds are floats such as 142.0).
	{"large float gold, off by one", `\boxed{2000000000001}`, "2000000000000.0", false},
	{"large decimal answer, off by one", `\boxed{1234567890124.0}`, "1234567890123", false},
	{"large decimal answer, off by a half", `\boxed{1234567890123.5}`, "1234567890123", false},
	{"large decimal in an expression, off by one", `\boxed{x+2000000000001.0}`, "x+2000000000000", false},
	{"large float gold, equal", `\boxed{2000000000000}`, "2000000000000.0", true},
	{"radical fraction", `\boxed{\dfrac{\sqrt{3}}{4}}`, `\frac{\sqrt{3}}{4}`, true},
	{"radical decimal too coarse", `\boxed{0.433}`, `\frac{\sqrt{3}}{4}`, false},
	{"malformed gold does not match", `\boxed{1}`, `^2=\frac{1}{3}(a_1^2+b_1^2+c_1^2)-\frac{1}{9}(^2+b^2+^2)`, false},
	{"ordered pair gold", `\boxed{(2, 3)}`, `(2,3)`, true},
	{"expression gold", `\boxed{n^2 + n}`, `n(n+1)`, true},
}

// TestConfigOptions checks the options that change verdicts.
func TestConfigOptions(t *testing.T) {
	runGrade(t, Config{AllowSetRelation: true}, []gradeCase{
		{"set relation allowed", `\boxed{x > 3}`, `(3, \infty)`, true},
		{"set relation joined by or", `\boxed{x<-1 or x>1}`, `(-\infty,-1)\cup(1,\infty)`, true},
		{"set relation joined by or, TeX", `\boxed{x < -1 \text{ or } x > 1}`, `(-\infty,-1)\cup(1,\infty)`, true},
		{"set relation joined by or, wrong end", `\boxed{x < -1 \text{ or } x \ge 1}`, `(-\infty,-1)\cup(1,\infty)`, false},
		{"set relation joined by or in two variables", `\boxed{x < -1 \text{ or } y > 1}`, `(-\infty,-1)\cup(1,\infty)`, false},
	})
	runGrade(t, Config{NonStrict: true}, []gradeCase{
		{"renamed variable", `\boxed{f(y) = y^2}`, `f(x) = x^2`, true},
	})
	runGrade(t, Config{}, []gradeCase{
		{"strict variable names", `\boxed{f(y) = y^2}`, `f(x) = x^2`, false},
	})
	runGrade(t, Config{NoFallback: true}, []gradeCase{
		{"no fallback without box", "so there are 96 ways in total", "96", false},
		{"no fallback keeps box", `\boxed{96}`, "96", true},
		// A plural answer phrase anchors as the singular does (they fell
		// to the fallback, or nothing without it: "... Check: 3+5=8."
		// answered 8).
		{"plural answer phrase", "The answers are 3 and 5.", "3, 5", true},
		{"plural answer colon", "Answers: 3, 5", "3, 5", true},
		{"plural answer phrase with math", "Thus the answers are $x=3$ and $x=5$. Check: 3+5=8.", "3, 5", true},
		{"plural final answer phrase", "The final answers are $-2$ and $1$.", "-2, 1", true},
		{"plural answer phrase, wrong list", "The answers are 3 and 5.", "3, 6", false},
	})
	runGrade(t, Config{FloatRounding: 2}, []gradeCase{
		{"two places", `\boxed{0.33}`, `\frac13`, true},
	})
	runGrade(t, Config{Choices: []string{"A", "B", "C", "D"}}, []gradeCase{
		{"choice", "The answer is C.", "C", true},
		{"choice wrong", "The answer is C.", "D", false},
		// Without a box or an answer sentence the last letter marked as a
		// choice or ending the text answers, as the last number does (the
		// first was taken: the article "A").
		{"choice fallback takes the last letter", "A train leaves at 3 pm, so we pick B", "B", true},
		{"choice fallback is not the article", "A train leaves at 3 pm, so we pick B", "A", false},
		{"choice fallback takes the last marked letter", "A car is faster. So we pick (C) over D here", "C", true},
		{"choice fallback keeps a marked letter over a bare one", "A. Because B is not valid", "A", true},
	})
	// NoFallback holds in multiple-choice mode too (a letter standing
	// alone was accepted).
	runGrade(t, Config{Choices: []string{"A", "B", "C", "D"}, NoFallback: true}, []gradeCase{
		{"choice without fallback needs a box or a sentence", "I think B", "B", false},
		{"choice without fallback keeps a sentence", "The answer is B.", "B", true},
		{"choice without fallback keeps a box", `\boxed{B}`, "B", true},
	})
	// A box and a "final answer" sentence: the later wins, as outside
	// multiple-choice mode (the box won wherever it stood); a plain
	// "answer is" sentence still yields to a box.
	runGrade(t, Config{Choices: []string{"A", "B", "C", "D"}}, []gradeCase{
		{"choice final answer after a box", "So $\\boxed{B}$. Wait, B fails. Final answer: C", "C", true},
		{"choice final answer after a box, not the box", "So $\\boxed{B}$. Wait, B fails. Final answer: C", "B", false},
		{"choice box after a final answer", "Final answer: C. Wait, C fails, so $\\boxed{B}$.", "B", true},
		{"choice box beats a later answer sentence", "So $\\boxed{B}$. The answer is C.", "B", true},
		{"choice later final answer beats an earlier answer sentence", "The answer is B. The final answer is C.", "C", true},
	})
	// A choice label as the non-choice mode reads it (choiceLabel), in a
	// box or after an answer phrase: AoPS writes \textbf{(C) }17 (they
	// found no answer).
	runGrade(t, Config{Choices: []string{"A", "B", "C", "D"}}, []gradeCase{
		{"choice box with an AoPS label", `\boxed{\textbf{(B)}}`, "B", true},
		{"choice box with an AoPS label and its value", `$\boxed{\textbf{(C) } 17}$`, "C", true},
		{"choice box with a label and its value", `\boxed{(B) 17}`, "B", true},
		{"choice box in bold", `\boxed{\mathbf{B}}`, "B", true},
		{"choice sentence with an AoPS label", `Answer: \textbf{(B)}`, "B", true},
		{"choice sentence with an AoPS label in math", `The answer is $\textbf{(D) }12$.`, "D", true},
		{"choice label of a letter not offered", `\boxed{(E) 17}`, "E", false},
	})
	// "option" or "choice" before the letter names it (without the
	// fallback they found no answer).
	runGrade(t, Config{Choices: []string{"A", "B", "C", "D"}, NoFallback: true}, []gradeCase{
		{"choice after option", "The correct answer is option (C).", "C", true},
		{"choice after choice", "The answer is choice B.", "B", true},
		{"choice after a capital Option", "Answer: Option D", "D", true},
		{"choice after option, another letter", "Answer: Option D", "C", false},
		{"choice in an upright label", `Final answer: $\mathrm{(B)}$`, "B", true},
		{"choice in an upright box", `\boxed{\mathrm{B}}`, "B", true},
	})
	runGrade(t, Config{Choices: []string{"A", "B", "C", "D"}, AnchorFirst: true}, []gradeCase{
		{"choice anchor first", "Final answer: C. Wait, C fails, so $\\boxed{B}$.", "C", true},
	})
}

func TestExtract(t *testing.T) {
	cases := []struct {
		name, in, want string
		ok             bool
	}{
		{"last box", `\boxed{1} then \boxed{2}`, "2", true},
		{"joined boxes", `\boxed{1} and \boxed{2}`, "1, 2", true},
		{"nested braces", `\boxed{\frac{1}{2}}`, `\frac{1}{2}`, true},
		{"unbalanced box ignored", `$x = 3$ so \boxed{y`, "x = 3", true},
		{"final answer beats earlier box", `\boxed{3}. Final Answer: The final answer is $4$.`, "4", true},
		{"inline math", "We get $\\frac{1}{2}$.", `\frac{1}{2}`, true},
		{"display math", "$$x^2$$", "x^2", true},
		// Spans joined keep no punctuation of the sentence inside their
		// dollars: "$x=1,$ or $x=2.$" read "x=1,, x=2.".
		{"joined spans ending in punctuation", "Thus, $x=1,$ or $x=2.$", "x=1, x=2", true},
		// An equation of an intermediate quantity is a step before the
		// equation of another left-hand side, not part of one answer
		// (MATH-500 intermediate_algebra/894, gold 2: "k-1=1, k=2").
		{"equations of different left-hand sides", "Thus, $k-1=1,$ and $k=2.$", "k=2.", true},
		{"equations of different left-hand sides, no punctuation", "so $-2C = 1176$ and $|C| = 588$", "|C| = 588", true},
		{"equations of one variable are joined", "so $x = 1$ and $x = -2$", "x = 1, x = -2", true},
		{"joined spans ending in a semicolon", "The roots are $1;$ or $2$.", "1, 2", true},
		// A full stop inside the dollars ends the sentence as one outside
		// does: the spans are steps, not one answer (they were joined).
		{"spans in two sentences, full stop inside the dollars", "So $x=38.$\n$780-38 = 742$.", "780-38 = 742", true},
		{"spans in two sentences, full stop inside and a space", "We get $a = 2.$ $b = 5$.", "b = 5", true},
		// Spans on separate lines with nothing between them are steps, not
		// one answer (they were joined into a list of the two lines).
		{"spans on separate lines", "Hence $6^{82} \\equiv 6 \\pmod{7}$\n$6^{83}+8^{83} \\equiv 35 \\pmod{49}$", `6^{83}+8^{83} \equiv 35 \pmod{49}`, true},
		{"spans on separate lines joined by a comma", "The roots are $1$,\n$2$", "1, 2", true},
		{"span ending in an ellipsis is joined", "The terms are $1, 2, \\ldots$ and $n$.", `1, 2, \ldots, n`, true},
		{"thousands in text", "the total is 1,234,567 dollars", "1234567", true},
		{"decimal comma", "Soit 2,5 litres", "2.5", true},
		{"word-glued digits skipped", "code AB12C", "", false},
		// A signed exponent or subscript is no number either, as an
		// unsigned one is not (it read -3 and -1).
		{"signed braced exponent skipped", "so we get 2^{-3} here", "2", true},
		{"signed exponent skipped", "so we get 2^-3 here", "2", true},
		{"signed braced subscript skipped", "the term x_{-1} here", "", false},
		// A parenthesised exponent is no number either (it read -3).
		{"signed parenthesised exponent skipped", "so we get 2^(-3) here", "2", true},
		{"parenthesised exponent skipped", "so we get 2^(10) here", "2", true},
		{"scientific notation with a parenthesised exponent", "so we get 5 x 10^(-3) here", `5 \times 10^{-3}`, true},
		{"scientific notation with a parenthesised exponent in an answer sentence", "Answer: 5 x 10^(-3)", `5 \times 10^{-3}`, true},
		// Scientific notation is one number, not the power's base 10
		// (it read 10); a power alone is still its base, as above.
		{"scientific notation with x", "Answer: 5 x 10^3", `5 \times 10^{3}`, true},
		{"scientific notation with a unit", "The answer is 3 × 10^8 m/s.", `3 \times 10^{8}`, true},
		{"scientific notation with a decimal mantissa", "The answer is 6.02 x 10^23.", `6.02 \times 10^{23}`, true},
		{"scientific notation in the fallback", "So the speed is 3·10^8 m/s.", `3 \times 10^{8}`, true},
		{"scientific notation glued", "so we get 2x10^-3 here", `2 \times 10^{-3}`, true},
		{"scientific notation with a braced exponent", "so we get 1.5 * 10^{-7} here", `1.5 \times 10^{-7}`, true},
		{"scientific notation with superscripts", "so we get 1.5 × 10⁻⁷ here", `1.5 \times 10^{-7}`, true},
		{"scientific notation with a negative mantissa", "so we get -2.5 × 10^4 here", `-2.5 \times 10^{4}`, true},
		{"a product with ten is no scientific notation", "so we get 5 x 10 = 50 here", "50", true},
		{"a power of a hundred is no scientific notation", "so we get 5 x 100^2 here", "100", true},
		// LaTeX without math delimiters is read from after the last word
		// of prose, not with the prose (the whole text was the answer,
		// "so the probability is \frac{1}{2}" a product of letters).
		{"mixed number with a percent", "Answer: 12 1/2%", "12 1/2%", true},
		{"mixed number with a vulgar fraction and a percent", "The answer is 12½%.", "12½%", true},
		{"vulgar fraction with a percent", "so it rose by ½ %", "½%", true},
		{"bare latex after prose", `so the probability is \frac{1}{2}`, `\frac{1}{2}`, true},
		{"bare latex after prose, full stop", `so the probability is \frac{1}{2}.`, `\frac{1}{2}`, true},
		{"bare latex label after prose", `We get x = \frac{3}{4}`, `x = \frac{3}{4}`, true},
		{"bare latex before a unit after prose", `Thus the area is 12\sqrt{3} square units`, `12\sqrt{3} square units`, true},
		{"bare latex in an answer sentence after a word", `The answer is therefore \frac{1}{2}.`, `\frac{1}{2}`, true},
		{"bare latex with text inside", `The total is 12 \text{ dollars}`, `12 \text{ dollars}`, true},
		{"bare latex alone", `x = \frac{3}{4}`, `x = \frac{3}{4}`, true},
		{"bare latex list after prose", `so the roots are \frac{1}{2} and \frac{1}{3}`, `\frac{1}{2} and \frac{1}{3}`, true},
		// Plain answer sentences left to their last number (doc.go, answer
		// sentences): a single term glued to a letter may be a unit (5m)
		// or a variable (2k, y = 2x); bare numbers separated by commas may
		// be a list or thousands; words after the answer are prose.
		{"plain glued term", "The answer is 2k.", "2", true},
		{"plain value glued to a letter", "Answer: y = 2x", "2", true},
		{"plain number list", "Answer: 1, 2", "1, 2", true},
		{"plain tuple then prose", "The answer is (2, 4) so x = 2.", "2", true},
		{"plain tuple then a because clause", "The answer is (2, 4) because x = 2.", "(2, 4)", true},
		{"plain bracketed letter may be a choice label", "Answer: (a)", "", false},
		{"plain tuple", "Answer: (2, 4)", "(2, 4)", true},
		// A word answer yields to the math or number of its sentence when
		// the clause after the word describes rather than justifies it
		// (they answered the word).
		{"word before a colon and math", "Answer: Matrix with fractions: $\\frac{1}{2}$", `\frac{1}{2}`, true},
		{"word before a who clause with math", "The answer is John, who has $12$ apples.", "12", true},
		{"word before with and math", "The answer is Evelyn with $5$ points.", "5", true},
		{"word before with and a number", "The answer is Evelyn with 5 points.", "5", true},
		{"word before a since clause with math", "The answer is even, since $f(-x)=f(x)$.", "even", true},
		{"word before a because clause with math", "The answer is odd because $f(-x)=-f(x)$.", "odd", true},
		{"word before a clause without math", "The answer is east, which is where the sun rises.", "east", true},
		// A "where" or "when" clause sets the word in place or time and
		// leaves it the answer (they answered the clause's number), unless
		// it names the word again to give its value.
		{"word before a where clause with a number", "The answer is east, where the sun rises at 6 am.", "east", true},
		{"word before a where clause without a comma", "The answer is east where the sun rises at 6 am.", "east", true},
		{"word before a when clause with math", "The answer is even, when $n = 2k$.", "even", true},
		{"word after an article before a where clause", "The answer is an ellipse, where $a = 3$ and $b = 2$.", "an ellipse", true},
		{"word before a where clause that restates it", "The answer is theta, where $\\theta = \\frac{\\pi}{4}$.", `\theta = \frac{\pi}{4}`, true},
		// ", and" a subject that "is" a value alone restates the answer in
		// the form asked for: that value is the answer (AIME, gold 376).
		{"and clause restating the answer", "Multiplying gives the answer: $\\binom{8}{5}\\binom{8}{3}5! = 376320$, and the three leftmost digits are $376$.", "376", true},
		{"and clause going on without a value", "The answer is $5$, and we are done.", "5", true},
		// A restating clause gives a value without variables; math with a
		// variable after it goes on to something else (it answered that
		// math).
		{"and clause going on to a polynomial", "So the answer is $a = 3$, and the polynomial is $x^2+3x+2$.", "a = 3", true},
		{"which clause going on to an expression", "The answer is $12$ which is $x + 5$.", "12", true},
		{"which clause restating the answer with a root", "The final answer is $\\frac{6}{\\sqrt{2}}$ which is $3\\sqrt{2}$.", `3\sqrt{2}`, true},
		// "which is" and a value alone restates the answer in its final
		// form (AIME: a fraction, then m+n): that value is the answer.
		{"which clause restating the answer", "so our final answer is $\\left(\\frac{15}{26}\\right)^2=\\frac{225}{676}$ which is $901$.", "901", true},
		{"which clause restating the answer in a plain number", "The final answer is 225/676 which is 901.", "901", true},
		{"comma which clause restating the answer", "so our final answer is $\\left(\\frac{15}{26}\\right)^2=\\frac{225}{676}$, which is $901$.", "901", true},
		{"comma which clause restating the answer in a plain number", "The final answer is 225/676, which is 901.", "901", true},
		{"comma which clause with a sum after the answer", "The answer is $12$, which is $3 + 9$.", "12", true},
		// Numbers separated by semicolons in a plain answer sentence are a
		// list, as in a box or in math spans ("$3$; $4$"); they answered
		// the last number.
		{"plain semicolon list", "Answer: 3; 4", "3; 4", true},
		{"plain semicolon list of three", "Answer: 1; 2; 3", "1; 2; 3", true},
		{"plain semicolon list without spaces", "The answer is 3;4.", "3;4", true},
		{"plain semicolon list before a clause", "Answer: 3; 4; the rest is 2", "3; 4", true},
		{"plain grouped number then a semicolon", "Answer: 1,200; 5", "5", true},
		// An ungrouped lead of four or more digits before a comma and two
		// digits is a decimal comma, as the number scan and Math-Verify
		// read "1000,99" (it was the list 1000, 99); a shorter lead or
		// another count of digits keeps the list.
		{"plain decimal comma after four digits", "Answer: 1000,99", "1000.99", true},
		{"plain decimal comma in a bold answer", "**Answer:** 1000,99", "1000.99", true},
		{"plain decimal comma after ####", "#### 1000,99", "1000.99", true},
		{"plain decimal comma in an answer sentence", "The answer is 1000,99.", "1000.99", true},
		{"plain negative decimal comma", "Answer: -12345,50", "-12345.50", true},
		{"plain list after four digits and one", "Answer: 2015,2", "2015,2", true},
		{"plain list after four digits and three", "Answer: 1000,999", "1000,999", true},
		{"plain list after two digits and two", "Answer: 10,99", "10,99", true},
		{"plain list of three after four digits", "Answer: 1000,99,5", "1000,99,5", true},
		// A clause word without a comma ends the answer only right after
		// it, not after prose that goes on from it (it answered 1860,
		// the unboxed solution of AIME 2007 I/10 in DeepScaleR).
		{"clause word after prose", "Our answer is thus $720+1080+60=1860,$ leaving us with a final answer of $860.$", "860.", true},
		{"clause word after a unit", "The answer is 12 cm because there are 3 groups of 4.", "12", true},
		{"clause word after the answer word", "The answer is odd because $f(-x)=-f(x)$.", "odd", true},
		{"empty", "", "", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := Extract(tc.in)
			if got != tc.want || ok != tc.ok {
				t.Errorf("Extract(%q) = %q, %v; want %q, %v", tc.in, got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestNormalize(t *testing.T) {
	cases := []struct{ name, in, want string }{
		{"dollars and box", `$\boxed{\dfrac{1}{2}}$`, `\frac{1}{2}`},
		{"left right", `\left( 1, 2 \right)`, `( 1, 2 )`},
		{"spacing and space thousands", `1\,000\!`, `1000`},
		{"spacing", `a\,b\;c`, `a b c`},
		{"degree", `90^\circ`, `90`},
		{"trailing punctuation", `5.`, `5`},
		{"thousands", `12,345`, `12345`},
		{"latex thousands", `12{,}345`, `12345`},
		{"thousands before a unit", `12,345 \text{ dollars}`, `12345 \text{ dollars}`},
		{"list before a unit stays", `1,2 \text{ cm}`, `1,2 \text{ cm}`},
		{"thousands after a label", `x = 12,345`, `x = 12345`},
		{"tuple after a label stays", `(x, y) = (1,200)`, `(x, y) = (1,200)`},
		{"unicode", `2π ≤ x`, `2\pi \le x`},
		{"double escaped", `\\frac{1}{2}`, `\frac{1}{2}`},
		{"row spacing", `\begin{pmatrix} 1 \\[2pt] 2 \end{pmatrix}`, `\begin{pmatrix} 1 \\ 2 \end{pmatrix}`},
		{"bracket after a row break stays", `a \\ [1, 2]`, `a \\ [1, 2]`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := Normalize(tc.in); got != tc.want {
				t.Errorf("Normalize(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestEquivalentSymmetric(t *testing.T) {
	pairs := []struct {
		a, b string
		want bool
	}{
		{"x = 3", "3", true},
		{`\frac{1}{2}`, "0.5", true},
		{"(3, \\infty)", "x > 3", true},
		{"2, 3", "3, 2", true},
		{`x < -1 \text{ or } x > 1`, `(-\infty,-1)\cup(1,\infty)`, true},
		{"2", "3", false},
		{`\text{yes}`, `\text{no}`, false},
	}
	for _, p := range pairs {
		ab, ba := Equivalent(p.a, p.b), Equivalent(p.b, p.a)
		if ab != ba {
			t.Errorf("Equivalent not symmetric on %q, %q: %v vs %v", p.a, p.b, ab, ba)
		}
		if ab != p.want {
			t.Errorf("Equivalent(%q, %q) = %v, want %v", p.a, p.b, ab, p.want)
		}
	}
}

// TestDeterministicAndBounded grades adversarial inputs twice: same result
// both times, no panic, and within the step budget.
func TestDeterministicAndBounded(t *testing.T) {
	deep := strings.Repeat(`\frac{1}{`, 5000) + "2" + strings.Repeat("}", 5000)
	parens := strings.Repeat("(", 10000) + "1" + strings.Repeat(")", 10000)
	tower := strings.Repeat("2^{", 200) + "2" + strings.Repeat("}", 200)
	long := strings.Repeat("word 12 and $x$ ", 20000) + `\boxed{3}`
	inputs := []struct{ resp, gold string }{
		{`\boxed{` + deep + `}`, "1/2"},
		{`\boxed{` + parens + `}`, "1"},
		{`\boxed{` + tower + `}`, tower},
		{`\boxed{` + tower + `}`, "4"},
		{long, "3"},
		{`\boxed{10000!}`, `10001!`},
		{`\boxed{\sum_{k=1}^{100000} k}`, "5000050000"},
		{`\boxed{x^{x^{x^{x^{x}}}}}`, `x^{x^{x^{x^{x}}}}+1`},
		{strings.Repeat(`\boxed{1}, `, 5000), "1"},
	}
	for i, in := range inputs {
		a := Grade(in.resp, in.gold)
		b := Grade(in.resp, in.gold)
		if a != b {
			t.Errorf("input %d: not deterministic: %+v vs %+v", i, a, b)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	cases := []struct {
		name string
		cfg  Config
		ok   bool
	}{
		{"zero value", Config{}, true},
		{"latex only", Config{Targets: TargetLatex}, true},
		{"unknown target bit", Config{Targets: 4}, false},
		{"rounding too large", Config{FloatRounding: 16}, false},
		{"negative rounding", Config{FloatRounding: -1}, false},
		{"empty choice", Config{Choices: []string{"A", " "}}, false},
	}
	for _, tc := range cases {
		if err := tc.cfg.Validate(); (err == nil) != tc.ok {
			t.Errorf("%s: Validate() = %v, want ok=%v", tc.name, err, tc.ok)
		}
	}
}

// TestExtractSource checks which step of Extract found the answer (the
// order documented on Config.Extract), with and without the fallback.
func TestExtractSource(t *testing.T) {
	cases := []struct {
		name, in   string
		noFallback bool
		want       string
		src        Source
	}{
		{"box", `so $x = \boxed{12}$.`, false, "12", SourceBoxed},
		{"fbox", `\fbox{25}`, true, "25", SourceBoxed},
		// \framebox is \fbox with optional width and position (the
		// AIME 2024 reference solution of problem 60 writes
		// "$\framebox{204}$ minutes"); it was no box and did not parse.
		{"framebox", `so the walk takes $\framebox{204}$ minutes`, true, "204", SourceBoxed},
		{"framebox with a width", `\framebox[1.5\width]{25}`, true, "25", SourceBoxed},
		{"framebox with a width and a position", `\framebox[2cm][c]{25}`, true, "25", SourceBoxed},
		// An empty box answers nothing and hides no box before it: a
		// response that echoes the prompt's "within \boxed{}" after its
		// answer answered nothing without the fallback.
		{"empty box after the answer box", "So $x = \\boxed{49}$.\n\nHuman: Please put your final answer within \\boxed{}.", true, "49", SourceBoxed},
		{"blank box after the answer box", `\boxed{49} and \boxed{ }`, true, "49", SourceBoxed},
		{"empty box alone", `Put the answer in \boxed{}.`, true, "", SourceNone},
		{"final answer sentence", "The final answer is $7$. I hope it is correct.", true, "7", SourceSentence},
		{"Final Answer colon", "Final Answer: 7", true, "7", SourceSentence},
		{"GSM8K hashes", "She pays 3*4=12 dollars.\n#### 12", true, "12", SourceSentence},
		// A Markdown heading is not GSM8K's "#### answer" (it answered the
		// heading's number, before the answer sentence after it).
		{"GSM8K hashes with a sign and a grouped number", "So she lost it.\n#### -1,200", true, "-1200", SourceSentence},
		{"heading is no answer", "#### Step 1: Find x\nWe have x = 3.\n#### Step 2: Compute y in 2 steps\nSo y = 2x = 6. The answer is 6.", true, "6", SourceSentence},
		{"numbered heading is no answer", "#### 1. Setting up\nWe have 3 cats.\n#### 2. Counting\nThe answer is 7.", true, "7", SourceSentence},
		{"bold heading is no answer", "#### **Part 2**\nSo the answer is 7.", true, "7", SourceSentence},
		{"heading, then the fallback", "#### Step 2: Count in 2 ways\nThe total is 7.", false, "7", SourceFallback},
		// A constant or an applied function after "####" is math, not a
		// heading's word ("#### pi" found nothing, "#### sqrt(51)" 51).
		{"GSM8K hashes with pi", "So the area is pi.\n#### pi", true, "pi", SourceSentence},
		{"GSM8K hashes with a root", "#### sqrt(51)", true, "sqrt(51)", SourceSentence},
		{"GSM8K hashes with infinity", "#### infinity", true, "infinity", SourceSentence},
		{"heading of a function word is no answer", "#### Sine rule\nThe answer is 7.", true, "7", SourceSentence},
		{"answer is", "So the answer is 9.", true, "9", SourceSentence},
		// A blank line between the answer phrase and the answer, as
		// Markdown writes it, ends no sentence (it found no answer).
		{"answer after a blank line", "The final answer is:\n\n12", true, "12", SourceSentence},
		{"bold answer after a blank line", "**Answer:**\n\n$12$", true, "12", SourceSentence},
		{"answer after blank lines and spaces", "Answer:  \n \n\n  -3/4", true, "-3/4", SourceSentence},
		{"answer after a blank line in display math", "Answer:\n\n\\[\n\\frac{3}{4}\n\\]", true, `\frac{3}{4}`, SourceSentence},
		{"answer phrase before a paragraph of steps", "To find the answer:\n\nFirst, 3 + 4 = 7.\n\nSo we get 9.", false, "9", SourceFallback},
		// A heading "Final Answer" or "Answer" alone on its line is an
		// answer phrase for the bare line after it (they found no answer
		// without the fallback).
		{"final answer heading", "**Final Answer**\n12", true, "12", SourceSentence},
		{"final answer markdown heading", "## Final Answer\n\n$\\frac{1}{2}$", true, `\frac{1}{2}`, SourceSentence},
		{"answer heading", "### Answer\n\n(2, 4)", true, "(2, 4)", SourceSentence},
		{"final answer heading before prose", "## Final Answer\n\nWe found that there are 12 ways.", true, "", SourceNone},
		{"answer ending a line of prose is no heading", "We need the answer\n12", true, "", SourceNone},
		{"answer heading before a paragraph", "## Answer\nWe add 5 + 3 = 8 and then double it to get 16.", false, "16", SourceFallback},
		// "The answer to/for ... is" names what the answer answers before
		// "is" (these found no answer, or only the fallback's).
		{"answer to the problem is", "Therefore, the answer to the problem is 42.", true, "42", SourceSentence},
		{"answer for a part is", "The answer for part (b) is $12$.", true, "12", SourceSentence},
		{"answer to a step is no anchor", "The answer to 2 + 2 is 4, so the total is 9.", false, "9", SourceFallback},
		{"final answer to the question is", "So the final answer to this question is 7. Check: 3 + 4 = 7.", true, "7", SourceSentence},
		{"last of two answers to parts", "The answer to part (a) is 5, and the answer to part (b) is 7.", true, "7", SourceSentence},
		{"answer to a question in an earlier sentence", "This is the answer to it. It is 5.", true, "", SourceNone},
		{"answer would be is no anchor", "The answer would exceed 999 which is invalid.", true, "", SourceNone},
		// A dollar sign before a number is a currency sign, not the start of
		// a math span, when the next dollar sign is one too: "$1,200. She
		// spent $" was a span, so the sentence ran on to 300.
		{"currency dollars", "The answer is $1,200. She spent $300 on food.", true, "1200", SourceSentence},
		{"currency dollars, later sentence", "The answer is $18. After lunch she had $5 left.", true, "18", SourceSentence},
		{"currency dollars in a sum", "The total cost is $5 + $3 = $8.", false, "8", SourceFallback},
		{"math span before a currency dollar", "The answer is $x = 3$. It costs $5.", true, "x = 3", SourceSentence},
		// A sentence that says what the answer is not states no answer by
		// the value it rules out (it answered 12 in each), but by the value
		// after it, or else leaves the answer to an earlier sentence.
		{"negated answer sentence", "So the answer is not 12.", true, "", SourceNone},
		{"negated final answer sentence", "The final answer is not $12$.", true, "", SourceNone},
		{"negated answer sentence, then the answer", "The answer is not 12, but 13.", true, "13", SourceSentence},
		{"negated answer sentence, then the answer in a clause", "The answer is not $12$; it is $13$.", true, "13", SourceSentence},
		{"negated final answer sentence, then the answer", "The final answer is not 12, it is 13.", true, "13", SourceSentence},
		{"negated answer sentence without a comma", "The answer is not 12 but 13.", true, "13", SourceSentence},
		{"negated answer sentence after the answer", "So the answer is 7. Check: the answer is not 12.", true, "7", SourceSentence},
		{"negated word before the answer", "The answer is not an integer, so it is 3.5.", true, "3.5", SourceSentence},
		{"negated answer sentence with two values", "The answer is not 12 or 13.", true, "", SourceNone},
		{"negated answer sentence, then bare LaTeX", `The answer is not 5, but \sqrt{51}.`, true, `\sqrt{51}`, SourceSentence},
		{"negated answer sentence with a reason", "The answer is not 12, since 12 > 10.", true, "", SourceNone},
		{"negated answer sentence, fallback", "So the answer is not 12.", false, "12", SourceFallback},
		{"answer sentence of bare LaTeX", `Answer: \frac{14}{3}`, true, `\frac{14}{3}`, SourceSentence},
		{"answer sentence of plain math", "Answer: (2, 4)", true, "(2, 4)", SourceSentence},
		{"box inside the sentence", `The final answer is $\boxed{7}$.`, true, "7", SourceBoxed},
		{"later sentence beats box", `\boxed{3}. Final Answer: The final answer is $4$.`, false, "4", SourceSentence},
		{"fallback span", "We get $\\frac{1}{2}$.", false, `\frac{1}{2}`, SourceFallback},
		{"fallback number", "so there are 96 ways in total", false, "96", SourceFallback},
		{"no fallback", "so there are 96 ways in total", true, "", SourceNone},
		{"nothing", "I could not solve it.", false, "", SourceNone},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Config{NoFallback: tc.noFallback}
			got, src := cfg.ExtractSource(tc.in)
			if got != tc.want || src != tc.src {
				t.Errorf("ExtractSource(%q) = %q, %v; want %q, %v", tc.in, got, src, tc.want, tc.src)
			}
			if v := cfg.Grade(tc.in, "12"); v.Source != tc.src {
				t.Errorf("Grade(%q).Source = %v, want %v", tc.in, v.Source, tc.src)
			}
		})
	}
	choice := Config{Choices: []string{"A", "B", "C", "D"}}
	for _, tc := range []struct {
		in  string
		src Source
	}{
		{`\boxed{B}`, SourceBoxed},
		{"The answer is B.", SourceSentence},
		{"B", SourceFallback},
	} {
		if _, src := choice.ExtractSource(tc.in); src != tc.src {
			t.Errorf("choices: ExtractSource(%q) source = %v, want %v", tc.in, src, tc.src)
		}
	}
}
