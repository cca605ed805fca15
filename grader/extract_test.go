package grader

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestExtractSpacedSignOfAnyNumber: an answer sentence's minus sign set
// off by a space is the sign of the number after it whatever the
// number's form, as it is of a plain one ("The answer is - 5." is -5)
// and as a sign glued to it is ("-5 x 10^3"): scientific notation, a
// mixed number and a vulgar fraction lost it, the number scan reading
// the sentence's opening dash as no sign ("The answer is - 5 x 10^3."
// answered 5 \times 10^{3}, 5000 for gold -5000).
func TestExtractSpacedSignOfAnyNumber(t *testing.T) {
	for _, tc := range []struct{ response, want, gold string }{
		{"The answer is - 5 x 10^3.", `-5 \times 10^{3}`, "-5000"},
		{"Answer: − 5 x 10^(-3)", `-5 \times 10^{-3}`, "-0.005"},
		{"The answer is - 12 1/2.", "-12 1/2", "-12.5"},
		{"The answer is - 12 1/2%.", "-12 1/2%", "-12.5%"},
		{"The answer is - 3½.", "-3½", "-3.5"},
		{"The answer is - 12 1/2 hours.", "-12 1/2", "-12.5"},
		// Unchanged: a plain number, and a sign glued to the number.
		{"The answer is - 5.", "- 5", "-5"},
		{"The answer is -5 x 10^3.", `-5 \times 10^{3}`, "-5000"},
	} {
		got, ok := Extract(tc.response)
		require.True(t, ok, tc.response)
		require.Equal(t, tc.want, got, tc.response)
		require.True(t, Grade(tc.response, tc.gold).Correct, "%s, gold %s", tc.response, tc.gold)
		require.False(t, Grade(tc.response, tc.gold[1:]).Correct, "%s is not %s", tc.response, tc.gold[1:])
	}
}

// TestExtractSpacedSignAfterConnective: a minus set off by spaces after
// a connective word that says a value follows is the number's sign, as
// after =; after another word it stays a dash ("The answer is therefore
// - 5." answered 5).
func TestExtractSpacedSignAfterConnective(t *testing.T) {
	for _, tc := range []struct{ response, want string }{
		{"The answer is therefore - 5.", "-5"},
		{"The answer is thus - 5.", "-5"},
		{"The answer is hence - 2.5.", "-2.5"},
		{"So the value of x is - 7.", "-7"},
		{"Adding them, the sum equals - 12.", "-12"},
		{"The difference must be - 3.", "-3"},
		{"We get x = 4 and then - 6.", "-6"},
		{"so - 8", "-8"},
		// Unchanged: a dash after another word, a binary minus, a bullet.
		{"The meeting is on Monday - 5 hours later.", "5"},
		{"also - 5", "5"},
		{"We have 10 - 5", "5"},
		{"We have:\n- 5 apples", "5"},
	} {
		got, ok := Extract(tc.response)
		require.True(t, ok, tc.response)
		require.Equal(t, tc.want, got, tc.response)
	}
}

// TestExtractSpacedSignBeforeUnit: an answer sentence's minus set off by
// a space stays the number's sign when a unit the number scan drops
// follows it ("The answer is - 3 × 10^8 m/s." answered 3 \times 10^{8}).
func TestExtractSpacedSignBeforeUnit(t *testing.T) {
	for _, tc := range []struct{ response, want string }{
		{"The answer is - 3 × 10^8 m/s.", `-3 \times 10^{8}`},
		{"The answer is - 3 × 10^8 m.", `-3 \times 10^{8}`},
		{"Answer: - 9.8 m/s^2", "-9.8"},
		{"Answer: - 9.8 m/s²", "-9.8"},
		{"The answer is - 5 kg·m/s.", "-5"},
		{"The answer is - 5 apples.", "-5"},
		{"The answer is - 1.5 x 10^-3 mol/L.", `-1.5 \times 10^{-3}`},
		// Unchanged: a bullet's dash in the fallback is no sign.
		{"We have:\n- 5 apples", "5"},
	} {
		got, ok := Extract(tc.response)
		require.True(t, ok, tc.response)
		require.Equal(t, tc.want, got, tc.response)
	}
}

// TestExtractChoiceList: in multiple-choice mode an answer sentence that
// names two choices answers both, not the first alone ("The answers are
// (A) and (C)." answered A, correct for gold A: hedging paid).
func TestExtractChoiceList(t *testing.T) {
	cfg := Config{Choices: []string{"A", "B", "C", "D"}}
	for _, tc := range []struct{ response, want string }{
		{"The answers are (A) and (C).", "A, C"},
		{"The answer is A or B.", "A, B"},
		{"The answer is A or B, depending on x.", "A, B"},
		{"The answers are A, C and D.", "A, C, D"},
		{"The answers are (A), (C).", "A, C"},
		{"Answer: B, D", "B, D"},
		{"The answer is (B) and (B).", "B"},
		// Unchanged: one choice, whatever follows it.
		{"The answer is C.", "C"},
		{"The answer is B, C is wrong.", "B"},
		{"The answer is A and the reason is simple.", "A"},
		{"The answer is A. B is wrong.", "A"},
		{"The answer is (C) 17.", "C"},
	} {
		got, ok := cfg.Extract(tc.response)
		require.True(t, ok, tc.response)
		require.Equal(t, tc.want, got, tc.response)
	}
	require.False(t, cfg.Grade("The answers are (A) and (C).", "A").Correct)
	require.False(t, cfg.Grade("The answers are (A) and (C).", "C").Correct)
	require.True(t, cfg.Grade("The answers are (A) and (C).", "A, C").Correct)
	require.True(t, cfg.Grade("The answers are (A) and (C).", "(A), (C)").Correct)
}
