package grader

import "testing"

// classCase is a grading case for one of the answer classes whose
// policies doc.go states. conv names the convention the expected verdict
// follows: an AoPS / MATH answer convention (with a MATH-500 record where
// one has that form), a mathematical fact, or Math-Verify 0.9.0's
// verdict where it is right.
type classCase struct {
	name     string
	response string
	gold     string
	want     bool
	conv     string
}

func runClass(t *testing.T, cfg Config, cases []classCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.conv == "" {
				t.Fatalf("case %q states no convention", tc.name)
			}
			v := cfg.Grade(tc.response, tc.gold)
			if v.Correct != tc.want {
				t.Errorf("Grade(%q, %q) = %v (extracted %q, %s), want %v (%s)", tc.response, tc.gold, v.Correct, v.Extracted, v.Reason, tc.want, tc.conv)
			}
		})
	}
}

const (
	convMixed = "MATH/AoPS: an integer followed by a proper fraction is a mixed number (MATH-500 test/algebra/2470 gold 137 \\frac{1}{2}, test/geometry/826 gold 1\\frac{4}{5})"
	convFact  = "AoPS: n! is n factorial inside math; Math-Verify 0.9.0 also reads \\boxed{5!} as 120"
)

var mixedNumberCases = []classCase{
	{"spaced mixed vs glued", `\boxed{137\frac12}`, `137 \frac{1}{2}`, true, convMixed},
	{"spaced mixed vs improper", `\boxed{275/2}`, `137 \frac{1}{2}`, true, convMixed},
	{"spaced mixed vs decimal", `\boxed{137.5}`, `137 \frac{1}{2}`, true, convMixed},
	{"spaced mixed is not a product", `\boxed{68.5}`, `137 \frac{1}{2}`, false, convMixed},
	{"mixed number with a percent", `\boxed{12\frac{1}{2}\%}`, `12.5\%`, true, convMixed},
	{"spaced mixed number with a percent", `\boxed{12 \frac{1}{2}\%}`, `\frac{25}{2}\%`, true, convMixed},
	{"slash mixed number with a percent", `\boxed{12 1/2\%}`, `12.5\%`, true, convMixed},
	{"mixed number with a percent in an answer sentence", "Answer: 12 1/2%", `0.125`, true, convMixed},
	{"mixed number with a vulgar fraction and a percent", "The answer is 12½%.", `12.5\%`, true, convMixed},
	{"mixed number with a percent is not a product", `\boxed{12\frac{1}{2}\%}`, `6\%`, false, convMixed},
	{"spaced mixed answer", `\boxed{1 \frac{4}{5}}`, `1\frac{4}{5}`, true, convMixed},
	{"slash mixed", `\boxed{1 1/2}`, `\frac32`, true, convMixed},
	{"slash mixed is not 1/2", `\boxed{1 1/2}`, `\frac12`, false, convMixed},
	{"slash mixed in text", "She needs 2 3/4 cups in total.", `\frac{11}{4}`, true, convMixed},
	{"negative mixed", `\boxed{-2 \frac{1}{2}}`, `-\frac52`, true, convMixed},
	{"improper fraction after integer is a product", `\boxed{2\frac{5}{2}}`, `5`, true, "a mixed number's fraction is proper (AoPS), so 2\\frac{5}{2} is 2 times 5/2"},
	{"integer times fraction with operator", `\boxed{2 \cdot \frac{1}{2}}`, `1`, true, "explicit multiplication"},
	{"decimal before fraction is a product", `\boxed{0.5 \frac{1}{2}}`, `0.25`, true, "mixed numbers have an integer part"},
}

const convBinom = "the binomial coefficient of any x and an integer k >= 0 is x(x-1)...(x-k+1)/k!, a polynomial in x (sympy: expand_func(binomial(n, 2)) = n*(n - 1)/2, binomial(-2, 3) = -4); Math-Verify 0.9.0 also accepts \\binom{n}{2} for n(n-1)/2"

var factorialCases = []classCase{
	{"boxed factorial", `\boxed{5!}`, `120`, true, convFact},
	{"boxed factorial is not its argument", `\boxed{5!}`, `5`, false, convFact},
	{"product with factorial", `\boxed{2\cdot 4!}`, `48`, true, convFact},
	{"binomial of a variable", `\boxed{\binom{n}{2}}`, `\frac{n(n-1)}{2}`, true, convBinom},
	{"binomial of a sum as gold", `\boxed{\frac{n(n+1)}{2}}`, `\binom{n+1}{2}`, true, convBinom},
	{"binomial of a variable, other k", `\boxed{\binom{n}{3}}`, `\frac{n(n-1)}{2}`, false, convBinom},
	{"binomial of a negative integer", `\boxed{\binom{-2}{3}}`, `-4`, true, convBinom},
	{"ten factorial", `\boxed{10!}`, `3628800`, true, convFact},
	{"factorial then sentence period", `$\boxed{10!}$.`, `3628800`, true, convFact},
	{"double factorial", `\boxed{5!!}`, `15`, true, "n!! = n(n-2)(n-4)... (double factorial)"},
	{"factorial quotient", `\boxed{\frac{7!}{5!}}`, `42`, true, convFact},
	{"exclamation after a sentence number", "so the answer is 6!", `6`, true, "in running text a '!' followed by a space or the end closes the sentence"},
	{"exclamation in text answer", `\boxed{\text{Yes!}}`, `\text{yes}`, true, "sentence punctuation is not part of a text answer"},
}

const (
	convUnitFont = "LaTeX/SI: an upright letter set off by a space after a number (18 \\mathrm{~m}, 18\\,\\mathrm{s}) is a unit, as NuminaMath-style answers write units"
	convFont     = "LaTeX: \\mathbf, \\mathrm and {\\bf ...} change the font, not the value; Math-Verify 0.9.0 reads \\mathbf{70} and {\\bf 70} as 70"
	convText     = "AoPS/MATH: single letters name points, variables and choices and are case-sensitive, a prime is part of a name; Math-Verify 0.9.0 wrongly accepts E' for E and N for n"
)

var fontCases = []classCase{
	{"mathbf number", `\boxed{\mathbf{70}}`, `70`, true, convFont},
	{"mathrm number", `\boxed{\mathrm{70}}`, `70`, true, convFont},
	{"bf switch", `\boxed{{\bf 70}}`, `70`, true, convFont},
	{"bf switch wrong number", `\boxed{{\bf 71}}`, `70`, false, convFont},
	{"mathbf expression", `\boxed{\mathbf{2x+1}}`, `2x+1`, true, convFont},
	{"boldsymbol fraction", `\boxed{\boldsymbol{\frac{1}{2}}}`, `0.5`, true, convFont},
	{"mathrm word stays text", `\boxed{\mathrm{Monday}}`, `\text{Monday}`, true, convFont},
	{"mathbf letter stays a symbol", `\boxed{\mathbf{v}}`, `v`, true, convFont},
	{"bf choice letter", `\boxed{\textbf{(C)}}`, `C`, true, convFont},
	{"it switch in text", `\boxed{\text{{\it Monday}}}`, `\text{Monday}`, true, convFont},
	{"spaced mathrm letter after a number is a unit", `\boxed{18 \mathrm{~m}}`, `18`, true, convUnitFont},
	{"mathrm letter after a spaced number is a unit", `\boxed{18\,\mathrm{s}}`, `18`, true, convUnitFont},
	{"spaced mathrm unit per unit", `\boxed{18 \mathrm{~m/s}}`, `18`, true, convUnitFont},
	{"spaced mathrm squared unit", `\boxed{25 \mathrm{~m}^{2}}`, `25`, true, convUnitFont},
	{"mathrm unit gold", `\boxed{18}`, `18 \mathrm{~m}`, true, convUnitFont},
	{"mathrm unit, wrong number", `\boxed{19 \mathrm{~m}}`, `18`, false, convUnitFont},
	{"mathrm letter glued to a number is a symbol", `\boxed{2\mathrm{x}}`, `2`, false, convFont},
	{"upright i after a spaced number is the imaginary unit", `\boxed{3 + 4 \mathrm{i}}`, `3+4i`, true, convFont},
}

var textCases = []classCase{
	{"prime is part of the name", `\boxed{E'}`, `E`, false, convText},
	{"derivative is not the function", `\boxed{f'(x)}`, `f(x)`, false, convText},
	{"case of a single letter", `\boxed{N}`, `n`, false, convText},
	{"article before a letter is a variable", `\boxed{a b}`, `b`, false, convText},
	{"same primed name", `\boxed{E'}`, `E'`, true, convText},
	{"case of words is ignored", `\boxed{\text{MONDAY}}`, `\text{Monday}`, true, "MATH: text answers such as weekdays are words, compared without case"},
	{"article before a word is dropped", `\boxed{\text{the circle}}`, `\text{Circle}`, true, "MATH: 'the circle' and 'circle' name the same answer"},
	{"different words", `\boxed{\text{ellipse}}`, `\text{circle}`, false, "different words"},
	{"function notation is not a product", `\boxed{\text{f(x)}}`, `\text{f x}`, false, convText},
	{"number with its unit in text", `\boxed{\text{12 inches}}`, `12`, true, convUnitText},
	{"number with its unit in text, wrong number", `\boxed{\text{12 inches}}`, `13`, false, convUnitText},
	{"number with its unit in text, unit outside", `\boxed{\text{12 inches}}`, `12 \text{ inches}`, true, convUnitText},
	{"grouped number in text", `\boxed{\text{1,200}}`, `1200`, true, convUnitText},
	{"grouped number with its unit in text", `\boxed{\text{1,200 dollars}}`, `1200`, true, convUnitText},
	{"grouped number in text, wrong number", `\boxed{\text{1,300}}`, `1200`, false, convUnitText},
	{"grouped number in text, grouped gold", `\boxed{\text{114,200 apples}}`, `114,200`, true, convUnitText},
	{"letters listed in text", `\boxed{A, C}`, `\text{A, C}`, true, convLetterList},
	{"letters listed in text, answer in text", `\boxed{\text{A, C}}`, `A, C`, true, convLetterList},
	{"letters listed in text, other order", `\boxed{\text{C,A}}`, `\text{A, C}`, true, convLetterList},
	{"letters listed in text, one missing", `\boxed{A}`, `\text{A, C}`, false, convLetterList},
	{"letters listed in text, case counts", `\boxed{a, c}`, `\text{A, C}`, false, convLetterList},
	{"negation before a number in text", `\boxed{\text{not } 5}`, `5`, false, convProseText},
	{"negation after a number in text", `\boxed{5 \text{ is wrong}}`, `5`, false, convProseText},
	{"negation inside the text of a number", `\boxed{\text{5 is not the answer}}`, `5`, false, convProseText},
	{"never before a number in text", `\boxed{\text{never } 5}`, `5`, false, convProseText},
	{"negation in text, same text", `\boxed{\text{not } 5}`, `\text{not } 5`, true, convProseText},
	{"words without a negation after a number in text", `\boxed{5 \text{ is the answer}}`, `5`, true, convProseText},
	{"unit after a number in text", `\boxed{5 \text{ apples}}`, `5`, true, convProseText},
	{"two unit words after a number in text", `\boxed{5 \text{ red apples}}`, `5`, true, convProseText},
	{"remark in parentheses after a number in text", `\boxed{5 \text{ (not 6)}}`, `5`, true, convProseText},
	{"number with a number after it in text", `\boxed{\text{999 9's}}`, `999`, false, "after the number comes another number, not a unit: the AIME 2010 #2 solution in DeepScaleR's aime.json writes \\underbrace{99\\cdots9}_{\\text{999 9's}}, 999 nines"},
}

const convProseText = "a \\text{} beside a number is dropped as a unit (5 \\text{ apples} is 5) unless it holds a word that negates or rejects (not, never, wrong: doc.go, fonts), which rules the number out: \\text{not } 5 is not 5; a remark in parentheses is dropped"

const convLetterList = "a list of option letters in \\text{} (\\text{A, C}) is the list of those letters, as a single letter in \\text{} is that letter (MATH-500 golds \\text{(C)}, \\text{(B)}); a single letter keeps its case (doc.go, text)"

const convUnitText = "a unit word after a number is dropped, in \\text{} or out: \\text{12 inches} is 12 \\text{ inches}, which is 12 (doc.go, fonts: units; Math-Verify 0.9.0 reads \\text{12 inches} as the symbol 12inches and rejects 12)"

const convUnchecked = "policy (doc.go, relations and chains): an = is checked between sides that are numbers; a side with a function that is not known (f(-3)) or a text has no known value, so its = is not checked"

const (
	convChain  = "policy (doc.go, relations and chains): a chain asserts each = between numbers, so a false one makes the answer wrong"
	convValue  = "policy (doc.go, relations and chains): the value is the last side before the first ≈, a label (x, f(x)) names it; Math-Verify 0.9.0 also takes the exact side of A ≈ B"
	convApprox = "policy (doc.go, relations and chains): against a decimal gold, a stated approximation that is close to its exact value also answers"
)

var relationCases = []classCase{
	{"exact side of approx", `\boxed{\pi \approx 3.14}`, `\pi`, true, convValue},
	{"approx side against decimal gold", `\boxed{\pi \approx 3.14}`, `3.14`, true, convApprox},
	{"approximation far from its value", `\boxed{\frac12 \approx 0.33}`, `0.33`, false, convApprox},
	{"exact side with label", `\boxed{x = \frac{1}{3} \approx 0.33}`, `\frac13`, true, convValue},
	{"approximation is not the exact gold", `\boxed{x \approx 0.33}`, `\frac13`, false, "0.33 is not 1/3 at 6 decimal places (Math-Verify's float_rounding)"},
	{"label and approximation", `\boxed{x \approx 3.14}`, `3.14`, true, convValue},
	{"false chain against its last side", `\boxed{5 = 6}`, `6`, false, convChain},
	{"false chain against its first side", `\boxed{5 = 6}`, `5`, false, convChain},
	{"false chain with label", `\boxed{x = 5+5+1 = 7 = 11}`, `11`, false, convChain},
	{"true chain", `\boxed{2 + 3 = 5}`, `5`, true, convValue},
	{"true chain with label", `\boxed{x = 2 + 3 = 5}`, `5`, true, convValue},
	// A side with an unknown function's value (f(-3)) or a text (\text{A})
	// cannot be checked; it was evaluated as a made-up number and made
	// the chain false (MATH-500 solutions algebra/246, number_theory/234).
	{"chain through an unknown function value (MATH-500 algebra/246)", `\boxed{f(3) = f(-3) + 6 = 2 + 6 = 8}`, `8`, true, convUnchecked},
	{"chain of unknown function values (as in MATH-500 algebra/824)", `\boxed{f(1) + f(2) = 3 + 4 = 7}`, `7`, true, convUnchecked},
	{"chain of unknown function values, wrong value", `\boxed{f(1) + f(2) = 3 + 4 = 7}`, `8`, false, convUnchecked},
	{"chain of unknown function values, false step", `\boxed{f(1) + f(2) = 3 + 4 = 8}`, `8`, false, convChain},
	{"chain of nested function values (MATH-500 algebra/346)", `\boxed{g(f(5)-1) = g(7-1) = g(6) = 6+1 = 7}`, `7`, true, convUnchecked},
	{"chain of text labels (MATH-500 number_theory/234)", `\boxed{\text{A}+\text{B}=9+7=16}`, `16`, true, convUnchecked},
	{"decimal written with =", `\boxed{x = \frac{1}{3} = 0.333}`, `\frac13`, true, "policy (doc.go, relations and chains): a decimal joined by = that only approximates the side before it is an approximation"},
	{"labelled value", `\boxed{y = 2x + 1}`, `2x+1`, true, convValue},
	{"equation is not its solution", `\boxed{2x + 3 = 7}`, `2`, false, "an equation states a condition, not a value"},
	{"value then label", `\boxed{3 = x}`, `3`, true, convValue},
	{"sentence with approximation", `The final answer is $\frac{70}{9} \approx 7.78$.`, `7.78`, true, convApprox},
	// "Roughly" (doc.go): within one unit of the last written decimal
	// place, or 1% of the exact value; each rule alone, and both missed.
	{"approximation within a unit of its last place", `\boxed{\frac23 \approx 0.6}`, `0.6`, true, convApprox + " (|2/3 - 0.6| = 0.067 <= 0.1, though above 1% = 0.0067)"},
	{"approximation within 1% of its value", `\boxed{e^{10} \approx 2.2 \times 10^{4}}`, `2.2 \times 10^4`, true, convApprox + " (|e^10 - 22000| = 26.5 <= 1% = 220, though above the unit 0.1)"},
	{"approximation a unit and a bit off", `\boxed{\frac13 \approx 0.32}`, `0.32`, false, convApprox + " (|1/3 - 0.32| = 0.0133 > the unit 0.01 and 1% = 0.0033)"},
	{"approximation 3.5% off", `\boxed{\frac{1}{30} \approx 0.0345}`, `0.0345`, false, convApprox + " (|1/30 - 0.0345| = 0.00117 > the unit 0.001 and 1% = 0.00033)"},
	{"gold chain", `\boxed{2}`, `z = 1 + 1 = 2`, true, convValue},
	{"identity chain", `\boxed{(x+1)^2 = x^2 + 2x + 1}`, `x^2+2x+1`, true, convValue},
	{"congruence answers its residue (AIME 2025 I-3)", `\boxed{2016 \equiv 16 \pmod{1000}}`, `16`, true, convMod},
	{"congruence answers its residue", `\boxed{1070 \equiv 70 \pmod{1000}}`, `70`, true, convMod},
	{"congruence is not its left side", `\boxed{1070 \equiv 70 \pmod{1000}}`, `1070`, false, convMod},
	{"false congruence", `\boxed{1070 \equiv 71 \pmod{1000}}`, `71`, false, convMod},
	{"labelled congruence chain", `\boxed{N \equiv 2070 \equiv 70 \pmod{1000}}`, `70`, true, convMod},
	{"congruence with a spaced mod", `\boxed{1070 \equiv 70 \pmod {1000}}`, `70`, true, convMod},
}

const convMod = "AIME asks for a remainder: a \\equiv b \\pmod{m} states a congruence, which holds modulo m, and answers its right-hand residue (AIME 2025 I-3 asks for N mod 1000, N = 2016, gold 16; sympy Mod(1070 - 70, 1000) = 0; Math-Verify 0.9.0 also reads 1070 \\equiv 70 \\pmod{1000} as 70)"

const (
	convDeg  = "policy (doc.go, degrees): inside a trigonometric function x° is x·π/180 radians (sin 30° = 1/2)"
	convDeg0 = "MATH: an angle answer in degrees may omit the mark (MATH-500 test/precalculus/117 gold 30^\\circ); Math-Verify 0.9.0 also reads 30^\\circ as 30"
)

var degreeCases = []classCase{
	{"sine of degrees", `\boxed{\sin 30^\circ}`, `\frac12`, true, convDeg},
	{"cosine of degrees", `\boxed{\cos 60^{\circ}}`, `0.5`, true, convDeg},
	{"degree sign", `\boxed{\tan 45°}`, `1`, true, convDeg},
	{"degrees word", `\boxed{\sin(90 \text{ degrees})}`, `1`, true, convDeg},
	{"complementary angles", `\boxed{\cos 40^\circ}`, `\sin 50^\circ`, true, convDeg},
	{"not radians", `\boxed{\sin 30^\circ}`, `\sin 30`, false, convDeg},
	{"sine without degrees is radians", `\boxed{\sin 30}`, `-0.98803162409`, true, "sin 30 (radians) = -0.98803162409..."},
	{"bare angle equals degrees", `\boxed{30^\circ}`, `30`, true, convDeg0},
	{"angle in degrees is not its radians", `\boxed{30^\circ}`, `\frac{\pi}{6}`, false, convDeg0},
	{"trig chain with degrees", `\boxed{\tan 60^\circ = \sqrt{3}}`, `\sqrt3`, true, convDeg},
	{"arcsine is not a degree function", `\boxed{\arcsin\frac12}`, `\frac{\pi}{6}`, true, "arcsin(1/2) = π/6"},
}

const convDomain = "policy (doc.go, real domain): expressions are compared where both are real; identities that hold on that common domain are accepted"

var domainCases = []classCase{
	{"product of roots", `\boxed{\sqrt x\sqrt y}`, `\sqrt{xy}`, true, convDomain},
	{"quotient of roots", `\boxed{\frac{\sqrt{a}}{\sqrt{b}}}`, `\sqrt{\frac{a}{b}}`, true, convDomain},
	{"log of a square", `\boxed{2\ln x}`, `\ln(x^2)`, true, convDomain},
	{"square of a root", `\boxed{(\sqrt{x})^2}`, `x`, true, convDomain},
	{"root of a square is not x", `\boxed{\sqrt{x^2}}`, `x`, false, "√(x²) = |x| on the common real domain (all x), which differs from x at x < 0"},
	{"root of a square is |x|", `\boxed{\sqrt{x^2}}`, `|x|`, true, "√(x²) = |x| for real x"},
	{"abs is not x", `\boxed{|x|}`, `x`, false, "|x| differs from x at every x < 0"},
	{"cube roots", `\boxed{x^{1/3}}`, `\sqrt[3]{x}`, true, convDomain},
	{"different roots", `\boxed{\sqrt{x}\sqrt{y}}`, `\sqrt{x+y}`, false, "√x√y and √(x+y) differ at x = y = 1"},
	{"complex answers still compare", `\boxed{\sqrt{-x^2-1}}`, `i\sqrt{x^2+1}`, true, "policy (doc.go, real domain): without a common real domain the principal complex values are compared"},
}

const convChoice = "AoPS/AMC answer style: a choice letter with its value, \"(B) 17\" or \"C. x = 42\", answers the letter and the value"

var choiceCases = []classCase{
	{"letter dot then text", `\boxed{C. x = 42}`, `C`, true, convChoice},
	{"letter dot then text, wrong letter", `\boxed{C. x = 42}`, `D`, false, convChoice},
	{"letter dot then text, value gold", `\boxed{C. x = 42}`, `42`, true, convChoice},
	{"answer sentence with label", "Answer: (B) 17", `B`, true, convChoice},
	{"answer sentence with label, value gold", "Answer: (B) 17", `17`, true, convChoice},
	{"answer sentence with label, wrong value", "Answer: (B) 17", `18`, false, convChoice},
	{"letter paren", `The final answer is B) 17.`, `B`, true, convChoice},
	{"bold letter", `The answer is **(D)**`, `D`, true, convChoice},
	{"label alone", `\boxed{(E)}`, `\text{(E)}`, true, "MATH-500 test/precalculus/452 gold \\text{(E)}"},
	{"label then a word", `\boxed{\textbf{(B)}\ \text{Monday}}`, `\text{Monday}`, true, convChoice},
	{"upright label then a value", `\boxed{\mathrm{(B)}\ 17}`, `17`, true, convChoice},
	{"upright label then a value, wrong value", `\boxed{\mathrm{(B)}\ 17}`, `18`, false, convChoice},
	{"a word is not a label", `The answer is A big number, 7.`, `7`, true, "a capital word is not a choice label"},
	// AoPS writes AMC answers as \textbf{(C) }12, a space inside the braces.
	{"bold label with inner space", `\boxed{\textbf{(C) }12}`, `\text{(C)}`, true, convChoice},
	{"bold label with inner space, value gold", `$\boxed{\textbf{(C) }12}$`, `12`, true, convChoice},
	{"bold label with inner space, wrong letter", `\boxed{\textbf{(D) }12}`, `C`, false, convChoice},
	{"text label with inner space", `\boxed{\text{(C) } 12}`, `C`, true, convChoice},
	// A letter alone ends the sentence's text or line, or closes its bold
	// marks (doc.go: **B**); these found no answer.
	{"bare letter answer", "Answer: C", `\text{(C)}`, true, convChoice},
	{"bare letter answer, wrong letter", "Answer: C", `\text{(D)}`, false, convChoice},
	{"bare letter answer sentence", "The answer is C", `C`, true, convChoice},
	{"bare letter answer ending a line", "The answer is C\nbecause it doubles.", `C`, true, convChoice},
	{"bold bare letter", "Answer: **C**", `\text{(C)}`, true, convChoice},
	{"bold bare letter, wrong letter", "Answer: **C**", `D`, false, convChoice},
	{"letter dot ending a line", "Answer: C.\nIt is the largest.", `C`, true, convChoice},
	{"a capital word after a label is not a bare letter", "The answer is A\tbit more, 7.", `7`, true, "a capital word is not a choice label"},
}

const convRepeat = "AoPS/MATH: an overline (or dot) marks repeating decimal digits: 0.\\overline{3} = 1/3"

var repeatingCases = []classCase{
	{"one third", `\boxed{0.\overline{3}}`, `\frac13`, true, convRepeat},
	{"one sixth", `\boxed{0.1\overline{6}}`, `\frac16`, true, convRepeat},
	{"one seventh", `\boxed{0.\overline{142857}}`, `\frac17`, true, convRepeat},
	{"mixed with integer part", `\boxed{2.\overline{45}}`, `\frac{27}{11}`, true, convRepeat},
	{"dot notation", `\boxed{0.\dot{3}}`, `\frac13`, true, convRepeat},
	{"bar notation", `\boxed{0.\bar{6}}`, `\frac23`, true, convRepeat},
	{"repeating is not the truncation", `\boxed{0.\overline{3}}`, `0.3`, false, convRepeat},
	{"repeating gold", `\boxed{\frac{4}{33}}`, `0.\overline{12}`, true, convRepeat},
	{"nines", `\boxed{0.\overline{9}}`, `1`, true, "0.999... = 1"},
	{"overline elsewhere is a symbol", `\boxed{\overline{AB}}`, `\overline{AB}`, true, "\\overline{AB} names a segment"},
}

const convBuilder = "set-builder notation {x | P(x)} is the set of x satisfying P, so {x | x > 3} = (3, ∞) (AoPS; interval and set answers are compared as sets)"

var builderCases = []classCase{
	{"builder vs interval", `\boxed{\{x \mid x > 3\}}`, `(3, \infty)`, true, convBuilder},
	{"builder vs wrong interval", `\boxed{\{x \mid x > 3\}}`, `[3, \infty)`, false, convBuilder},
	{"colon builder", `\boxed{\{x : 0 < x \le 1\}}`, `(0, 1]`, true, convBuilder},
	{"builder with domain", `\boxed{\{x \in \mathbb{R} \mid x \le -2\}}`, `(-\infty, -2]`, true, convBuilder},
	{"interval vs builder gold", `\boxed{(3, \infty)}`, `\{x \mid x > 3\}`, true, convBuilder},
	{"builder vs builder", `\boxed{\{t \mid t > 3\}}`, `\{x | x > 3\}`, true, convBuilder},
	{"inequality gold, builder answer", `\boxed{\{x \mid x > 3\}}`, `x > 3`, true, "an inequality gold accepts its solution set (doc.go, as for intervals)"},
	{"builder gold, inequality answer", `\boxed{x > 3}`, `\{x \mid x > 3\}`, false, "a set gold does not accept an inequality unless Config.AllowSetRelation (doc.go, as for intervals)"},
	{"abs inside a set is not a builder", `\boxed{\{|{-2}|, 3\}}`, `\{2, 3\}`, true, "|-2| = 2"},
}

const convClock = "clock times H:MM[:SS] name a time of day; seconds :00 and am/pm do not change it (MATH counting/prealgebra answers such as 9:40 a.m.)"

var clockCases = []classCase{
	{"seconds added", `\boxed{20:34}`, `20:34:00`, true, convClock},
	{"seconds differ", `\boxed{20:34:05}`, `20:34`, false, convClock},
	{"pm", `\boxed{8:34 \text{ PM}}`, `20:34`, true, convClock},
	{"boxed p.m.", `\boxed{8:34\text{ p.m.}}`, `20:34`, true, convClock},
	{"am is not pm", `\boxed{8:34 am}`, `20:34`, false, convClock},
	{"midnight", `\boxed{12:00 \text{ a.m.}}`, `0:00`, true, convClock},
	{"different minutes", `\boxed{9:40}`, `9:45`, false, convClock},
	{"ratio stays a ratio", `\boxed{3:2}`, `3:2`, true, "a ratio with a one-digit second part is not a clock time"},
	// An answer sentence of plain text holds a clock time or ratio whole,
	// as a box does; by its last number "Answer: 9:00" answered 00.
	{"answer sentence clock time", "Answer: 9:00", `9:00`, true, convClock},
	{"answer sentence clock time is not its minutes", "Answer: 9:00", `0`, false, convClock},
	{"answer sentence clock time with pm", "The answer is 2:30 PM.", `14:30`, true, convClock},
	{"answer sentence clock time with p.m.", "The answer is 2:30 p.m.", `2:30 \text{ p.m.}`, true, convClock},
	{"answer sentence clock time, am is not pm", "The answer is 2:30 a.m.", `14:30`, false, convClock},
	{"answer sentence 24-hour time", "The final answer is 14:30.", `2:30 \text{ PM}`, true, convClock},
	{"answer sentence ratio", "Answer: 3:2", `3:2`, true, "a ratio with a one-digit second part is not a clock time"},
	{"answer sentence ratio is not its last part", "Answer: 3:2", `2`, false, "a ratio with a one-digit second part is not a clock time"},
}

const convInverse = "f^{-1}(...) names the value of the inverse function, as f(...) does (MATH-500 test/algebra/1960 asks for f^{-1}(1/5), gold 9; test/algebra/1199 for f^{-1}(f^{-1}(6)), gold 1); Math-Verify 0.9.0 also reads f^{-1}(x) = v as v"

const convFunc = "y = ... and f(x) = ... both define the dependent variable; MATH-500 test/precalculus/323 gold y = 2x + 3 is answered f(x) = 2x + 3"

var functionCases = []classCase{
	{"f(x) vs y", `\boxed{f(x) = 2x + 3}`, `y = 2x + 3`, true, convFunc},
	{"y vs f(x)", `\boxed{y = 2x + 3}`, `f(x) = 2x+3`, true, convFunc},
	{"different right side", `\boxed{f(x) = 2x + 2}`, `y = 2x + 3`, false, convFunc},
	{"two variables", `\boxed{g(x, y) = x^2 + y}`, `z = x^2 + y`, true, convFunc},
	{"the label is an argument", `\boxed{f(x) = 3}`, `x = 3`, false, "x = 3 fixes x; f(x) = 3 is a constant function"},
	{"other variable on the right", `\boxed{f(x) = 2t}`, `y = 2t`, false, "f(x) = 2t does not define a function of x only"},
	{"renamed argument stays strict", `\boxed{f(y) = y^2}`, `f(x) = x^2`, false, "Math-Verify strict mode: variable names must match"},
	{"inverse function value", `\boxed{f^{-1}\left(\frac{1}{5}\right) = 9}`, `9`, true, convInverse},
	{"inverse of an inverse", `\boxed{f^{-1}(f^{-1}(6)) = 1}`, `1`, true, convInverse},
	{"inverse function formula", `\boxed{f^{-1}(x) = \frac{x-3}{2}}`, `\frac{x-3}{2}`, true, convInverse},
	{"inverse function formula as gold", `\boxed{\frac{x-3}{2}}`, `f^{-1}(x) = \frac{x-3}{2}`, true, convInverse},
	{"inverse function, other value", `\boxed{f^{-1}\left(\frac{1}{5}\right) = 8}`, `9`, false, convInverse},
	{"inverse of a number is no label", `\boxed{997^{-1} = 333}`, `333`, false, "997^{-1} = 333 is a false statement over the rationals (MATH-500 test/number_theory/634 asks for it modulo 1000)"},
}

const convBase = "MATH writes a number in base b as n_b or n_{b} (MATH-500 test/number_theory/847 gold 4210_{5}, test/number_theory/1257 gold 204_5): the subscript is part of the number, never the answer"

var baseCases = []classCase{
	{"answer sentence, braced base", `Answer: 4210_{5}`, `4210_{5}`, true, convBase},
	{"answer sentence, bare base", `Answer: 204_5`, `204_5`, true, convBase},
	{"final answer sentence", `The final answer is 2516_8.`, `2516_8`, true, convBase},
	{"braced base against bare", `So the answer is 4210_{5}.`, `4210_5`, true, convBase},
	{"the base is not the answer", `Answer: 4210_{5}`, `5`, false, convBase},
	{"other digits", `Answer: 4211_{5}`, `4210_{5}`, false, convBase},
	{"subscript index is not a number", `The answer is a_{12}.`, `12`, false, "a_{12} names a term of a sequence; its index is not a value"},
}

const convInfix = "TeX: {n \\choose k} is \\binom{n}{k} and {a \\over b} is \\frac{a}{b}, infix operators that split their group (The TeXbook, ch. 17); Math-Verify 0.9.0 reads both"

var infixCases = []classCase{
	{"choose in braces", `\boxed{{10 \choose 3}}`, `120`, true, convInfix},
	{"choose as the whole box", `\boxed{10 \choose 3}`, `\binom{10}{3}`, true, convInfix},
	{"choose is not its sides' product", `\boxed{{10 \choose 3}}`, `30`, false, convInfix},
	{"choose in a fraction", `\boxed{\frac{{5 \choose 2}}{2^{5}}}`, `\frac{5}{16}`, true, convInfix},
	{"choose with sums", `\boxed{{4+1 \choose 2+1}}`, `10`, true, convInfix},
	{"over in braces", `\boxed{{1 \over 2}}`, `\frac{1}{2}`, true, convInfix},
	{"over with sums", `\boxed{{x+1 \over x-1}}`, `\frac{x+1}{x-1}`, true, convInfix},
	{"over is not a product", `\boxed{{3 \over 4}}`, `12`, false, convInfix},
}

const convArith = "gcd, lcm, max and min of numbers are numbers: \\gcd(12, 18) = 6 (sympy gcd(12, 18) = 6, Max(3, 5) = 5; Math-Verify 0.9.0 accepts \\gcd(12, 18) for 6 and \\max(3, 5) for 5)"

var arithCases = []classCase{
	{"gcd", `\boxed{\gcd(12, 18)}`, `6`, true, convArith},
	{"gcd is not a product", `\boxed{\gcd(12, 18)}`, `216`, false, convArith},
	{"lcm", `\boxed{\operatorname{lcm}(12, 18)}`, `36`, true, convArith},
	{"lcm of three", `\boxed{\operatorname{lcm}(4, 6, 10)}`, `60`, true, convArith},
	{"max", `\boxed{\max(3, 5)}`, `5`, true, convArith},
	{"min", `\boxed{\min(3, \frac{5}{2})}`, `\frac52`, true, convArith},
	{"max of irrationals", `\boxed{\max(\sqrt{2}, \frac{7}{5})}`, `\sqrt2`, true, convArith},
	{"false chain with gcd", `\boxed{\gcd(12, 18) = 4}`, `4`, false, "policy (doc.go, relations and chains): a false = between constants makes the answer wrong"},
	{"lcm in mathrm", `\boxed{\mathrm{lcm}(4,6)}`, `12`, true, convArith},
	{"gcd in mathrm", `\boxed{\mathrm{gcd}(12, 18)}`, `6`, true, convArith},
	{"lcm in mathrm is not a product", `\boxed{\mathrm{lcm}(4,6)}`, `24`, false, convArith},
	{"log without a base", `\boxed{\log 100}`, `2`, true, convLog},
	{"log without a base is not ln", `\boxed{\log 100}`, `2\ln 10`, false, convLog},
	{"log of a sum", `\boxed{1 + \log 5}`, `\log 50`, true, convLog},
	{"plain log", `Answer: log(1000)`, `3`, true, convLog},
	{"log is not ln of a variable", `\boxed{\log x}`, `\ln x`, false, convLog},
	{"ratio of logs has any base", `\boxed{\frac{\log 8}{\log 2}}`, `3`, true, convLog},
}

const convLog = "competition convention: \\log without a base is base 10 (MATH-500 test/intermediate_algebra/1981 and AMC 2023 say \"where log denotes the base 10 logarithm\"; no gold in MATH-500, AIME 2024-2026, AMC 2023 or BeyondAIME writes \\log; Math-Verify 0.9.0 reads \\log 100 as 2)"

const convRealRoot = "competition convention: an odd root of a negative real is the real root, \\sqrt[3]{-8} = -2 (sympy real_root(-8, 3) = -2; sympy root(-8, 3) and Math-Verify 0.9.0 take the principal complex root 1 + 1.732i and reject -2)"

var realRootCases = []classCase{
	{"cube root of a negative", `\boxed{\sqrt[3]{-8}}`, `-2`, true, convRealRoot},
	{"cube root of a negative is not its absolute value", `\boxed{\sqrt[3]{-8}}`, `2`, false, convRealRoot},
	{"fifth root of a negative", `\boxed{\sqrt[5]{-32}}`, `-2`, true, convRealRoot},
	{"irrational cube root of a negative", `\boxed{\sqrt[3]{-2}}`, `-\sqrt[3]{2}`, true, convRealRoot},
	{"cube root of a negative fraction", `\boxed{\sqrt[3]{-\frac{27}{8}}}`, `-\frac32`, true, convRealRoot},
	{"cube root of a cube", `\boxed{\sqrt[3]{x^3}}`, `x`, true, convRealRoot + "; so \\sqrt[3]{x^3} = x for every real x"},
	{"even root of a negative stays complex", `\boxed{\sqrt[4]{-16}}`, `2`, false, "\\sqrt[4]{-16} is not real (sympy real_root(-16, 4) is the principal root sqrt(2) + sqrt(2)i)"},
}

const convReals = "\\mathbb{R} is the set of all reals, the interval (-\\infty, \\infty) (sympy S.Reals == Interval(-oo, oo); Math-Verify 0.9.0 accepts each for the other; MATH writes domains and solution sets as intervals, as the MATH-500 golds (2,\\infty) of test/intermediate_algebra/183 and (-\\infty, 0] of test/precalculus/695)"

var realsCases = []classCase{
	{"reals for the whole line", `\boxed{\mathbb{R}}`, `(-\infty,\infty)`, true, convReals},
	{"whole line for the reals", `\boxed{(-\infty, \infty)}`, `\mathbb{R}`, true, convReals},
	{"reals are not a half line", `\boxed{\mathbb{R}}`, `(-\infty, 0)`, false, convReals},
	{"reals are not the line less a point", `\boxed{\mathbb{R}}`, `(-\infty,1)\cup(1,\infty)`, false, convReals},
	{"all real x", `\boxed{x \in \mathbb{R}}`, `(-\infty,\infty)`, true, convReals},
}

const convHuge = "exact integer arithmetic: a^m = b^n for integers when they are powers of one root with equal exponents (2^{2^{2^{2^2}}} = 2^{65536})"

var hugeCases = []classCase{
	{"power tower", `\boxed{2^{2^{2^{2^2}}}}`, `2^{65536}`, true, convHuge},
	{"power tower off by one", `\boxed{2^{2^{2^{2^2}}}}`, `2^{65537}`, false, convHuge},
	{"same value, other base", `\boxed{4^{40000}}`, `2^{80000}`, true, convHuge},
	{"power of a power", `\boxed{(2^{100})^{1000}}`, `2^{100000}`, true, convHuge},
	{"product of powers", `\boxed{2^{70000} \cdot 2^{10000}}`, `2^{80000}`, true, convHuge},
	{"quotient of powers", `\boxed{\frac{2^{70000}}{2^{69999}}}`, `2`, true, convHuge},
	{"negative base", `\boxed{-2^{70001}}`, `(-2)^{70001}`, true, convHuge},
	{"different bases", `\boxed{3^{50000}}`, `2^{80000}`, false, convHuge},
	{"tiny is not zero", `\boxed{2^{-70000}}`, `0`, false, convHuge},
	{"fraction base", `\boxed{(\frac{2}{3})^{70000}}`, `(\frac{4}{9})^{35000}`, true, convHuge},
	{"exact factor", `\boxed{2^{10000} \cdot 2^{70000}}`, `2^{80000}`, true, convHuge},
	{"large power of ten", `\boxed{10^{20000}}`, `100^{10000}`, true, convHuge},
	{"gcd of exponents", `\boxed{8^{30000}}`, `4^{45000}`, true, convHuge},
}

// TestClassMixedNumbers covers mixed numbers (doc.go: mixed numbers).
func TestClassMixedNumbers(t *testing.T) { runClass(t, Config{}, mixedNumberCases) }

// TestClassFactorials covers a trailing '!' (doc.go: factorials).
func TestClassFactorials(t *testing.T) { runClass(t, Config{}, factorialCases) }

// TestClassFonts covers font commands around numbers (doc.go: fonts).
func TestClassFonts(t *testing.T) { runClass(t, Config{}, fontCases) }

// TestClassText covers text and letter answers (doc.go: text).
func TestClassText(t *testing.T) { runClass(t, Config{}, textCases) }

// TestClassRelations covers relations and chains (doc.go: relations and
// chains).
func TestClassRelations(t *testing.T) { runClass(t, Config{}, relationCases) }

// TestClassDegrees covers degree marks (doc.go: degrees).
func TestClassDegrees(t *testing.T) { runClass(t, Config{}, degreeCases) }

// TestClassRealDomain covers identities that hold where the expressions
// are real (doc.go: real domain).
func TestClassRealDomain(t *testing.T) { runClass(t, Config{}, domainCases) }

// TestClassChoices covers choice letters followed by text (doc.go:
// choices).
func TestClassChoices(t *testing.T) { runClass(t, Config{}, choiceCases) }

// TestClassRepeatingDecimals covers repeating decimals (doc.go:
// repeating decimals).
func TestClassRepeatingDecimals(t *testing.T) { runClass(t, Config{}, repeatingCases) }

// TestClassSetBuilder covers set-builder notation (doc.go: set-builder).
func TestClassSetBuilder(t *testing.T) { runClass(t, Config{}, builderCases) }

// TestClassClockTimes covers clock times (doc.go: clock times).
func TestClassClockTimes(t *testing.T) { runClass(t, Config{}, clockCases) }

// TestClassFunctionLabels covers f(x) = ... against y = ... (doc.go:
// relations and chains).
func TestClassFunctionLabels(t *testing.T) { runClass(t, Config{}, functionCases) }

// TestClassBaseNumbers covers numbers with a base subscript in answer
// sentences.
func TestClassBaseNumbers(t *testing.T) { runClass(t, Config{}, baseCases) }

// TestClassArithmeticFunctions covers gcd, lcm, max and min of numbers.
func TestClassArithmeticFunctions(t *testing.T) { runClass(t, Config{}, arithCases) }

// TestClassRealRoots covers odd roots of negative reals.
func TestClassRealRoots(t *testing.T) { runClass(t, Config{}, realRootCases) }

// TestClassReals covers \mathbb{R} as an interval.
func TestClassReals(t *testing.T) { runClass(t, Config{}, realsCases) }

// TestClassTeXInfix covers TeX's infix \choose and \over.
func TestClassTeXInfix(t *testing.T) { runClass(t, Config{}, infixCases) }

// TestClassHugeExact covers exact values beyond floating point (doc.go:
// numbers).
func TestClassHugeExact(t *testing.T) { runClass(t, Config{}, hugeCases) }
