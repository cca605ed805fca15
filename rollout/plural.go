package rollout

import "fmt"

// Plural is "1 thing" or "n things": a count in a message, as spiral's
// commands write them ("over 1 step", "over 3 steps").
func Plural(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}
