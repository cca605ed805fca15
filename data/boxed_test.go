package data

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestLastBoxed(t *testing.T) {
	cases := []struct {
		name, in, want string
		ok             bool
	}{
		{"plain", `so \boxed{18}`, "18", true},
		{"last of several", `\boxed{1} or \boxed{2}`, "2", true},
		{"nested braces", `\boxed{\frac{1}{\sqrt{2}}}.`, `\frac{1}{\sqrt{2}}`, true},
		{"fbox", `\fbox{7}`, "7", true},
		{"fbox after boxed", `\boxed{1} \fbox{2}`, "2", true},
		{"space before brace", `\boxed {5}`, "5", true},
		{"unbraced token", `$\boxed 5$`, "5", true},
		{"empty", `\boxed{}`, "", true},
		{"unbalanced last box", `\boxed{1} \boxed{\frac{1}{2}`, "", false},
		{"longer command is not a box", `\boxedx{3}`, "", false},
		{"longer command after a real box", `\boxed{4} \boxeds{3}`, "4", true},
		{"none", "the answer is 3", "", false},
		{"bare command at end", `\boxed`, "", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := LastBoxed(tc.in)
			require.Equal(t, tc.ok, ok)
			require.Equal(t, tc.want, got)
		})
	}
}

func TestFinalAnswer(t *testing.T) {
	cases := []struct {
		name, in, want, method string
		ok                     bool
	}{
		{"boxed wins over ####", "x \\boxed{3}\n#### 4", "3", "boxed", true},
		{"gsm8k", "a\nb = <<1+1=2>>2\n#### 2", "2", "####", true},
		{"gsm8k with comma", "#### 1,200", "1,200", "####", true},
		{"#### not at line start", "x #### 2", "", "", false},
		{"#### with nothing after", "x\n####  ", "", "", false},
		{"nothing", "just text", "", "", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, method, ok := FinalAnswer(tc.in)
			require.Equal(t, tc.ok, ok)
			require.Equal(t, tc.want, got)
			require.Equal(t, tc.method, method)
		})
	}
}

// FuzzLastBoxed checks that a found answer is a substring of the input
// whose braces are balanced.
func FuzzLastBoxed(f *testing.F) {
	for _, s := range []string{`\boxed{1}`, `\boxed{\frac{a}{b}}`, `\fbox{x} \boxed{`, `\boxed 5`, "{}}{"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, ok := LastBoxed(s)
		if !ok {
			if got != "" {
				t.Fatalf("not found but returned %q", got)
			}
			return
		}
		if !strings.Contains(s, got) {
			t.Fatalf("answer %q is not in %q", got, s)
		}
		depth := 0
		for _, c := range got {
			switch c {
			case '{':
				depth++
			case '}':
				depth--
			}
			if depth < 0 {
				break
			}
		}
		if depth != 0 {
			t.Fatalf("unbalanced answer %q from %q", got, s)
		}
	})
}

func BenchmarkLastBoxed(b *testing.B) {
	s := strings.Repeat("Some reasoning with $x^{2}$ and \\frac{1}{2}. ", 200) + `\boxed{\frac{3}{4}}`
	for b.Loop() {
		LastBoxed(s)
	}
}
