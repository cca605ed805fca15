package synth

import (
	"fmt"
	"strconv"
	"strings"
)

// Test-only helpers.

// Config returns the task's configuration with defaults applied.
func (t *Task) Config() Config { return t.cfg }

// Parse reads an expression such as "7+5*3-4" (optionally written as the
// problem "Compute 7+5*3-4.") into an Item. Operands are non-negative
// decimal integers of at most 9 digits; operators are + - *. Results that
// overflow int wrap around (generated problems stay far below that).
func Parse(s string) (Item, error) {
	expr := strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(s), "Compute "), ".")
	var operands []int
	var ops []byte
	i := 0
	for {
		j := i
		for j < len(expr) && expr[j] >= '0' && expr[j] <= '9' {
			j++
		}
		if j == i || j-i > 9 {
			return Item{}, fmt.Errorf("synth: parse %q: want an integer of 1 to 9 digits at byte %d", s, i)
		}
		v, _ := strconv.Atoi(expr[i:j])
		operands = append(operands, v)
		if j == len(expr) {
			break
		}
		if !strings.ContainsRune("+-*", rune(expr[j])) {
			return Item{}, fmt.Errorf("synth: parse %q: unexpected %q at byte %d", s, expr[j], j)
		}
		ops = append(ops, expr[j])
		i = j + 1
	}
	it := build(operands, ops)
	if it.Expr != expr {
		return Item{}, fmt.Errorf("synth: parse %q: operands must not have leading zeros", s)
	}
	return it, nil
}
