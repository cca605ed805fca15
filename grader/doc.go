// Package grader decides whether a model's response to a math problem
// states the gold answer. It is the reward of every RL step and the score
// of every evaluation in spiral.
//
// Grading runs in three stages, each callable alone:
//
//	Extract   response text -> answer text (the later of the last
//	          \boxed{...} and a "final answer is ..." sentence, else an
//	          "answer is" sentence, else the last LaTeX span or plain
//	          number; ExtractSource and Verdict.Source say which);
//	Normalize answer text  -> canonical LaTeX-ish text (LaTeX spacing and
//	          sizing noise, fonts, degrees outside trigonometric
//	          functions, dollars, thousands separators, trailing
//	          punctuation removed);
//	Equal     gold, answer -> bool (parsed into a small expression tree
//	          and compared exactly, symbolically or numerically).
//
// Conventions:
//
//   - Equal is asymmetric, as in Math-Verify: the gold side decides how an
//     equation or an interval is read ("x = 3" is accepted for gold "3", as
//     is "m + n = 37" for "37": a left side that sums labels names the
//     quantity asked for, while "2x + 1 = 7" is an equation to solve; an
//     inequality gold is accepted as an interval answer, an interval gold
//     accepts an inequality only with Config.AllowSetRelation; inequalities
//     in one variable joined by "or" are the union of their solution sets,
//     x < -1 \text{ or } x > 1 is (-\infty,-1)\cup(1,\infty)). Equivalent
//     is the symmetric variant used to cluster answers.
//   - Numbers are exact rationals (math/big) while they can be: integers,
//     decimals, fractions, integer powers and factorials stay exact, so 1/2006!
//     and 1/2004! differ. Integer powers beyond MaxBits stay exact as
//     ±base^exp: 2^{2^{2^{2^2}}} = 2^{65536} = 4^{32768}, and powers of one
//     base multiply exactly. Irrational constants and functions are evaluated
//     in complex128.
//   - Expressions with free variables are compared by evaluating both at
//     NumericPoints pseudo-random rational points (seeded from the variable
//     names, so deterministic; the first positive in every variable, the second
//     negative in every variable, the rest of mixed signs); they agree when
//     every point agrees exactly, or within the relative tolerance
//     NumericTolerance once irrational functions are involved. Uninterpreted
//     functions such as f(x) evaluate to a fixed smooth function of their name
//     and argument.
//   - Real domain: a point where either side leaves the real domain (a square
//     or even root, fractional power or logarithm of a negative real; the
//     complex constant i does not count) is skipped, and when fewer than two
//     points remain NumericPoints positive points are added. So identities that
//     hold wherever both sides are real are accepted, those that hold only for
//     positive variables included: \sqrt x\sqrt y = \sqrt{xy}, 2\ln x =
//     \ln(x^2). Points of both signs still reject what differs where both are
//     real: \sqrt{x^2} is |x|, not x. When no point is real for both, the
//     complex principal values are compared. An odd root of a negative
//     real is the real root, as in competition math (sympy's real_root,
//     not its principal root): \sqrt[3]{-8} = -2, \sqrt[3]{x^3} = x; a
//     power keeps the principal value, (-8)^{1/3} = 1 + \sqrt{3}i.
//   - When either side contains a decimal literal with a fractional part,
//     numbers are compared after rounding to Config.FloatRounding decimal
//     places (default 6), as Math-Verify does: 0.333 equals 1/3 at 3 places but
//     not at 4. A gold written to more places is compared at its own
//     places, up to its 15th significant digit: the MATH-500 gold
//     .0000672 is not answered by .0000673, nor .000000000000000000015
//     by 0. Scientific notation (decimal literals and powers of ten
//     joined by +, - and \times) is compared at the places of its exact
//     value, so that it keeps its digits (1.5 \times 10^{-7} is not
//     answered by 2 \times 10^{-7}, 10^{-8} not by 0.00000002, which
//     Math-Verify accepts; 1.5 \times 10^{-20} is not answered by 0).
//     Other golds keep 6: 1/1024, and a power of a decimal, whose exact
//     value has more places than it writes (1.05^{10} is answered by
//     1.628895).
//   - Bare comma lists and sets compare as sets (order-free, duplicates
//     ignored); parenthesised tuples, points, ratios and matrices compare in
//     order. A set of one element is that element: \{3\} = 3, \{(1,2)\} =
//     (1, 2). A tuple of two elements also matches the open interval with the
//     same ends. \mathbb{R} is the interval (-\infty, \infty), so x \in
//     \mathbb{R} is too.
//   - Relations and chains: in a chain s0 op s1 op ... of = and ≈, a label (a
//     name such as x, f(x), f^{-1}(x), AB, a_n: the first side, or the second
//     of two as in 5 = x) names the answer; the value is the last side before the first ≈ (x
//     = 2+3 = 5 answers 5; π ≈ 3.14 answers π, as in Math-Verify). Math
//     that opens with = goes on from the prose before it ("the total time
//     $= 204$ minutes" answers 204). Every =
//     between two constant sides must hold (at FloatRounding places where a
//     decimal is involved), else the answer is wrong: 5 = 6 answers neither 5
//     nor 6, and x = 5+5+1 = 7 = 11 is wrong for 11; a side holding the
//     value of an unknown function or a text has no known value and is not
//     checked (f(3) = f(-3) + 6 = 2 + 6 = 8 answers 8). A congruence a \equiv b
//     \pmod{m} (or \mod m) holds modulo m and answers its last side, the
//     residue: 1070 \equiv 70 \pmod{1000} answers 70, not 1070. A box
//     holding one chain aligned over lines, x &= 375 + 523 \\ &= 898 (bare
//     or in an aligned, align or split environment), is that chain, x =
//     375 + 523 = 898, and a system aligned so is the list of its
//     equations (x &= 1 \\ y &= 2 is x = 1, y = 2); outside a box nothing
//     is joined. Math-Verify takes the last
//     side whatever the chain asserts; the 4 cases of its suite that differ are
//     listed in testdata/disagreements.jsonl. A decimal side joined by = that
//     only roughly agrees with the side before it (within one unit of its last
//     written decimal place, or 1% of it) is an approximation, like a side
//     after ≈: x = 1/3 = 0.333 answers 1/3. ≈ itself is not checked, but an
//     approximation answers a gold that has a decimal literal only when it is
//     roughly its exact side (π ≈ 3.14 answers 3.14; 1/2 ≈ 0.33 does not answer
//     0.33). Two sides that are not both constants and have no label are an
//     identity when equal as expressions ((x+1)^2 = x^2+2x+1 answers x^2+2x+1),
//     else an equation, equal to an equation whose sides differ by a constant
//     factor. Two labelled equations compare their values when the labels
//     match, or when one is y and the other f(x) (y = 2x+3 and f(x) = 2x+3
//     define the same function of x; y must not be an argument, and the values
//     may use only the arguments).
//   - Degrees: a degree mark (^\circ, ^{\circ}, °, \degree, "degrees") is
//     dropped, so an angle compares as its number of degrees (30^\circ = 30, as
//     MATH writes angle answers; not π/6), unless the text (gold or answer,
//     each on its own) applies a trigonometric function (sin, cos, tan, sec,
//     csc, cot): then x° is x·π/180 radians, so \sin 30^\circ = 1/2 while \sin
//     30 is in radians.
//   - Mixed numbers: an integer literal followed by a proper fraction of
//     integer literals (0 < p < q) is a mixed number, with or without a space:
//     137 \frac{1}{2}, 137\frac12 and 1 1/2 are 137 + 1/2 and 1 + 1/2 (AoPS /
//     MATH convention; MATH-500 golds are written this way). An improper
//     fraction after an integer (2\frac{5}{2}) is a product. Unicode
//     vulgar fractions (½, ⅓, ¾, ..., ⅒) are those fractions, so 3½ and
//     "3 ½" are 3 + 1/2 too, and ∛ and ∜ are the cube and fourth roots
//     of the digits after them, as √ is of its (∛27 = 3).
//   - Factorials: a '!' right after an operand is a factorial (5! = 120, 5!! =
//     15) and is never trimmed as punctuation inside an answer; in running text
//     a '!' followed by a space or the end of the text ends the sentence ("the
//     answer is 6!" answers 6), unless an operator follows it on its line
//     ("Answer: 5! = 120" answers 120). A binomial coefficient \binom{x}{k}
//     (or {x \choose k}) of any x and an integer k >= 0 is x(x-1)...(x-k+1)/k!,
//     so \binom{n}{2} = n(n-1)/2 and \binom{-2}{3} = -4, as in sympy; \gcd
//     and lcm of integers and \max and \min of reals are their values.
//     \log without a base is the base-10 logarithm, as AMC and MATH
//     problems define it (\log 100 = 2, as in Math-Verify; \ln is the
//     natural logarithm).
//   - Fonts: \mathbf, \mathrm, \mathit, \boldsymbol, \mathsf, \mathtt, \bm and
//     old-style switches ({\bf 70}, \rm, \it) select a font and are read
//     through: \mathbf{70} is 70. A font around a word is text
//     (\mathrm{Monday}) unless the word names a function, as with
//     \operatorname (\mathrm{lcm}(4, 6) is 12), around a letter a symbol
//     (\mathbf{v} is v), except
//     that \mathrm set off by a space after a number holds a unit, dropped
//     like \text{ m}: 18 \mathrm{~m}, 18\,\mathrm{s} and 18 \mathrm{~m/s}
//     are 18, as is \text{18 m}, a number and its unit in one \text{}.
//     A \text{} beside a number is dropped so (5 \text{ apples} is 5, and
//     a quotient of texts, 60 \frac{\text{km}}{\text{h}}, is 60)
//     unless, outside parentheses, it holds a word that negates or
//     rejects (not, never, none, wrong, incorrect, false): \text{not } 5
//     and 5 \text{ is wrong} are not 5, while 5 \text{ (not 6)} is.
//     A rate unit of bare letters, a length or angle per a time, set off
//     by a space after a number and ending the answer is dropped too
//     (5 m/s, 9.8 m/s^2, 60 km/h, 2 rad/s are numbers); other bare
//     letters are variables (5 m is 5m; 2 m/n and 5m/s stay quotients).
//   - Text: answers made only of words compare as text keys: words of two or
//     more letters without case, an article before such a word dropped ("The
//     Circle" = "circle"), braces and . ! ? ignored. A single letter keeps its
//     case and is never an article, primes and parentheses count: N is not n,
//     E' is not E, f'(x) is not f(x), "a b" is not b. Single letters
//     listed with commas in \text{} are a list of those letters (the
//     options chosen): \text{A, C} = A, C = \text{C,A}.
//   - Repeating decimals: digits under \overline, \bar or \dot right after a
//     decimal point or decimal repeat forever and are exact: 0.\overline{3} =
//     1/3, 0.1\overline{6} = 1/6.
//   - Set-builder: \{x \mid P\} and \{x : P\} (also \{x \in \mathbb{R} \mid
//     P\}) are the set of x where P holds; when P is an inequality or chain in
//     x alone they compare as the intervals it solves to, so \{x \mid x > 3\} =
//     (3, \infty), with the same gold/answer asymmetry as intervals against
//     inequalities.
//   - Clock times: H:MM and H:MM:SS (minutes and seconds of two digits below
//     60, hours at most 24), optionally with am/pm, are times of day: 20:34 =
//     20:34:00 = 8:34 pm. Other a:b are ratios.
//   - Choices: an answer that starts with a choice label for a letter A-J
//     ("(B)", "B.", "B)", "B:", \textbf{(B)}, \mathrm{(B)}, **B**, or B alone at the
//     end of the answer's line: "Answer: B") answers that letter against
//     a single-letter gold and the text after the label against any
//     other gold: "Answer: (B) 17" is right for B and for 17.
//   - Answer sentences: an "answer is" / "Answer:" sentence ("answers
//     are" / "Answers:" too; or "answer
//     to the problem is", "answer for part (b) is": only words between
//     "to" or "for" and "is"; the answer may follow blank lines when its
//     line holds no word of three letters: "**Answer:**\n\n12", and so
//     may a heading "Final Answer" or "Answer" alone on its line, as in
//     "## Final Answer\n\n$12$") answers
//     with its last math span or number, before a clause that explains it (", which
//     ...", "; the remainder is ...", " (since ...)", a parenthesis holding
//     words, " (3 groups of 4)", or without a comma, right after the
//     answer (at most two words into the sentence), " because ...", " since
//     ...", " when ...", " for ...", a condition or qualifier (" unless
//     ...", " assuming ...", " depending on ...", " rounded to ..."), a
//     contrast or consequence (" not ...", " but ...", " rather than
//     ...", " vs ...", " therefore ..."), how it was found (" obtained
//     from ...", " derived from ..."), and " and" before a word: "5 and
//     the remainder is 2" answers 5, "3.14 rounded to 2 places" 3.14,
//     "12 not 13" 12; " which is" and a value alone (math
//     without a variable), or ", which is" and a number alone, ending the
//     sentence restates the answer in its final form: "$\frac{225}{676}$,
//     which is $901$." answers 901, "42, which is $6 \cdot 7$." 42, "$12$
//     which is $x + 5$." 12), but it is read whole
//     when it is bare LaTeX ("Answer: \frac{14}{3}"; after words of
//     prose only the LaTeX after them, "The answer is therefore
//     \frac{14}{3}." and, in the fallback, "so the probability is
//     \frac{1}{2}" answer the fraction, unless the last word negates:
//     see latexTail) or plain-text math
//     that reading its last number would cut: a tuple or interval ("Answer: (2, 4)", "[1, 3)",
//     "(-inf, 2]"; a comma in brackets separates elements, as in
//     \boxed{(1,200)}) or an expression with a variable built with +, -,
//     =, a relation or brackets ("2k+2", "3x^2 - 1", "n(n+1)/2", "x = 3,
//     y = 4", "x = 3; y = 4", "x > 3", "-2 < x < 7"), or
//     a union of intervals or membership in one ("(-∞, 3) ∪ (5, ∞)",
//     "x ∈ [3, 5]"), or
//     a product with a spaced bracket holding an operator, read as in a
//     box ("2 (x + 1)"; "12 (3 + 4 + 5)" is 144, while "12 (B)" keeps
//     12), or
//     one with π, √ or infinity, which are never units ("2π/3", "3√2",
//     "2 √5", "4/3 π", "infinity", "-∞"), or
//     arithmetic on numbers alone with +, -, ±, *, /, ^, ², ³, ×, ÷, ·, =
//     or ≈ ("2 + 3", "2^10", "10^{-3}", "2 × 3", "2³", "5×10³"; ≈ makes
//     a chain as \approx does in a box: "π ≈ 3.14" and "1/3 ≈ 0.333"
//     answer π and 1/3, and their decimals; x² + 1 is an
//     expression, 25m² a unit; an exponent or subscript
//     may be braced; a chain's = must hold, as in a box:
//     "12 - 4 = 9" answers nothing), or a clock time or ratio ("9:00",
//     "2:30 p.m.", "3:2"), or a list of numbers separated by commas,
//     semicolons, "and" or "or" ("3, 5, 7", "3; 4", "1,-2", "-2,1", as MATH-500 writes list
//     golds, "3, 5, and 7", "x = 1 or x = -2", or of tuples of numbers,
//     "(1, 2), (3, 4)"; a
//     comma between digits is a decimal comma only after an ungrouped
//     lead of four or more digits and before two final digits, "1000,99"
//     = 1000.99 as Math-Verify reads it: no gold writes a decimal comma,
//     so "2,5" is the list 2, 5, as it is in a box, and so are "2015,2"
//     and "1000,999"). A unit (5 m,
//     5m/s, d = 5m, 12 cm), a grouped number (a comma before exactly three
//     digits after a lead of one to three: 1,200, x = 1,200, and beside
//     separating commas or semicolons, "1,200; 5"; or the decimal comma
//     of 1000,99; but grouped numbers joined by "and", "or" or
//     arithmetic are read whole: "1,000 and 2,000" is the list 1000,
//     2000, "1,000 + 2,000" is 3000), a number
//     alone (-5), other words and a single term glued to a letter (2k, y = 2x: a
//     variable or a unit) keep the reading by the number, and unit words
//     after other plain math are dropped ("5√2 cm", "12π square units",
//     "2^10 ways" answer 5√2, 12π, 1024); a sign set off
//     by a space is the number's ("- 5", "x = - 5" and "(- 5, 3)" hold
//     -5, an answer sentence's "- 5 x 10^3", "- 12 1/2" and "- 3½"
//     are negative too, also before units ("- 3 × 10^8 m/s",
//     "- 5 apples": see unitText), and so is "- 5" after a connective word,
//     "is therefore - 5", "x equals - 5"; a dash starting a line or
//     after another word, "- 5 apples", "Monday - 5", is no sign). A number in scientific notation, a mantissa, a times sign
//     (×, x, *, ·, \times, \cdot) and a power of ten with an integer
//     exponent, is one number, in a sentence or the fallback: "5 x
//     10^3", "3 × 10^8 m/s" and "1.5·10⁻⁷" answer 5 \times 10^{3}, 3
//     \times 10^{8} and 1.5 \times 10^{-7}, not 10 (the number scan
//     skips an exponent: "2^{-3}" alone is read as 2, never -3). A number in base b keeps its subscript ("Answer: 4210_{5}"
//     answers 4210_{5}, not 5). An answer phrase written as text in math
//     ("$\text{Answer: }\frac{14}{3}$") answers with the rest of that
//     math, read whole, and one in a group with what follows the group
//     ("\textbf{Answer:} \frac{14}{3}"). The last such sentence, when it ends a
//     text without a box (but for Minerva's closing "I hope it is
//     correct.") and holds one word of two or more letters (after an optional
//     article), answers that word as text, as MATH-500 writes five golds
//     ("Answer: Evelyn", "The answer is an ellipse."), unless it is a
//     number word or filler ("five", "below", "as follows"), which leave
//     the answer to the last number, or the clause after the word holds
//     math or a number and does not open with "because", "since" or "as",
//     nor with "where" or "when" without naming the word again ("The
//     answer is Evelyn with $5$ points." answers 5; "The answer is even,
//     since $f(-x) = f(x)$." and "The answer is east, where the sun rises
//     at 6 am." answer the word). A sentence that rules a value out does
//     not answer it: "The answer is not 12, but 13." (or "; it is 13",
//     "rather 13", "instead 13") answers 13, "The answer is not 12." and
//     "... not 12 or 13." nothing, leaving the answer to an earlier
//     sentence, a box or the fallback. A dollar sign whose next dollar
//     sign has a digit right after it is a currency sign, not the start
//     of a math span that would hide where the sentence ends: "The answer
//     is $1,200. She spent $300." answers 1200.
//   - Every call is deterministic, never panics on any input and is bounded,
//     whatever the input: responses are cut to their last MaxResponseBytes;
//     boxes, math spans, anchors, numbers and normalization are found in single
//     left-to-right passes (linear time, memory linear in the input), with at
//     most the last 4*MaxElements boxes, spans or numbers kept and at most 8
//     candidate spans parsed per step of Extract; only answers of at most
//     MaxAnswerBytes are parsed; parsing and evaluation draw on step budgets of
//     MaxSteps per stage (response, gold, comparison), in which exact
//     arithmetic is charged by the size of its numbers; nesting is limited to
//     MaxDepth, and exact arithmetic refuses integers above MaxBits bits
//     (falling back to floating point). BenchmarkPathological checks that every
//     exported call stays under 100 ms on adversarial 1 MB inputs. No signals,
//     goroutines or timers are used.
//   - The package has no global mutable state and imports nothing from spiral.
package grader
