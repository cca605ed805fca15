package data

import "strings"

// boxedCommands are the LaTeX commands whose braced argument is a final
// answer, in the order they are tried at each position.
var boxedCommands = []string{`\boxed`, `\fbox`}

// LastBoxed returns the content of the last \boxed{...} (or \fbox{...}) in
// s, with nested braces balanced, and whether one was found. "\boxed 5" (a
// single token without braces) is accepted too. An unbalanced last box
// yields ok == false rather than a truncated answer.
func LastBoxed(s string) (content string, ok bool) {
	best := -1
	var bestCmd string
	for _, cmd := range boxedCommands {
		if i := lastCommand(s, cmd); i > best {
			best, bestCmd = i, cmd
		}
	}
	if best < 0 {
		return "", false
	}
	rest := s[best+len(bestCmd):]
	trimmed := strings.TrimLeft(rest, " ")
	if strings.HasPrefix(trimmed, "{") {
		depth := 0
		for i, c := range trimmed {
			switch c {
			case '{':
				depth++
			case '}':
				depth--
				if depth == 0 {
					return trimmed[1:i], true
				}
			}
		}
		return "", false
	}
	if len(trimmed) == len(rest) {
		return "", false // "\boxedx": not the command
	}
	// "\boxed 5": the argument runs to the next space, "$" or brace.
	end := strings.IndexAny(trimmed, " $\n{}")
	if end < 0 {
		end = len(trimmed)
	}
	if end == 0 {
		return "", false
	}
	return trimmed[:end], true
}

// lastCommand returns the index of the last occurrence of the LaTeX command
// cmd in s that is not a prefix of a longer command name, or -1.
func lastCommand(s, cmd string) int {
	for end := len(s); end > 0; {
		i := strings.LastIndex(s[:end], cmd)
		if i < 0 {
			return -1
		}
		next := i + len(cmd)
		if next >= len(s) || !isLetter(s[next]) {
			return i
		}
		end = i
	}
	return -1
}

func isLetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }

// hashMarker is the GSM8K convention for the final answer of a rationale.
const hashMarker = "####"

// AfterHashMarker returns the trimmed text after the last "####" in s, when
// that marker starts a line (the GSM8K convention), and whether one was
// found.
func AfterHashMarker(s string) (string, bool) {
	i := strings.LastIndex(s, hashMarker)
	if i < 0 || (i > 0 && s[i-1] != '\n') {
		return "", false
	}
	ans := strings.TrimSpace(s[i+len(hashMarker):])
	if ans == "" || strings.Contains(ans, "\n") {
		return "", false
	}
	return ans, true
}

// FinalAnswer extracts the final answer from a worked solution: the content
// of the last \boxed{} if there is one, else the text after a final "####"
// line. method names the rule used ("boxed" or "####"); ok is false when
// neither applies.
func FinalAnswer(solution string) (answer, method string, ok bool) {
	if a, ok := LastBoxed(solution); ok {
		return strings.TrimSpace(a), "boxed", true
	}
	if a, ok := AfterHashMarker(solution); ok {
		return a, hashMarker, true
	}
	return "", "", false
}
