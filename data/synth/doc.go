// Package synth is the embedded synthetic task that the tiny model learns,
// in two forms: integer arithmetic expressions such as "Compute 7+5*3-4."
// with short worked solutions such as "5*3=15. 7+15=22. 22-4=18.
// \boxed{18}", and equations such as "Solve x*7+3=38." whose solution
// derives x and checks it, "38-3=35. 35/7=5. x=5. 5*7=35. 35+3=38.
// 38-38=0. ok \boxed{5}" (the embedded default; see solve.go for why).
//
// Conventions:
//
//   - Operands are positive integers; the operators are "+", "-" and "*"
//     with the usual precedence and left-to-right evaluation. A solution
//     first computes every product (left to right, one multiplication per
//     step), then the sums and differences left to right, one step per
//     operator, and ends with the answer in \boxed{}. Intermediate results
//     and answers may be negative.
//   - The split is fixed by the task seed: an expression belongs to the
//     test split when FNV-1a(seed, canonical form) mod 100 < TestPercent,
//     where the canonical form (CanonicalExpr) sorts the additive terms,
//     each with its sign and its factors sorted, so an equation and its
//     reorderings ("x+3*2=8", "2*3+x=8") are one problem in one split,
//     and train and test never share a problem, in any order, whatever
//     is sampled. Problem sets are distinct by canonical form.
//   - Supervised data comes in two kinds: search examples (prompt = the
//     search template on the problem, completion = the worked solution) and
//     aggregation examples (prompt = the aggregation template on the problem
//     and n candidate solutions, some with a planted arithmetic slip that
//     is carried through the later steps; completion = the correct worked
//     solution).
//   - In the solve form x is one operand, drawn like the others, so the
//     answer is unique; the split keys on the whole equation. A solution
//     derives x (the other terms' products, the chain undoing the other
//     terms from the right-hand side, the division by x's coefficient:
//     the only place "/" appears, always exact), states it, checks it and
//     gives a verdict (ok or no). An aggregation example's candidates are
//     attempts with honest checks, some wrong through one slip in their
//     derivation, some (as recursive self-aggregation feeds them) a check
//     alone; its completion confirms x, the check alone, when a candidate
//     is right, else is the solution. A third kind, check
//     examples, gives the derivation and its value (often wrong) and
//     teaches the value's honest check and verdict.
//   - Texts are short and use only the characters of [Alphabet], so a
//     character-level tokenizer with a context of a few hundred characters
//     can hold an aggregation prompt with four candidates.
package synth
