package main

import (
	"bytes"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestConsoleLinesBesideTheBar: a warning written while a progress bar
// is drawn (an engine's retry during eval's or train's rollouts, sft's
// step and checkpoint lines) was written after the bar's text, on the
// bar's line ("eval rsa ... (96 tok, 812 tok/s)spiral: warning: ...").
// Written through the console, it clears the bar first, so that it
// begins its line, and the bar is drawn again below it; a line written
// in pieces is not cut by the bar. Once the bar is done, and on a console
// drawing no bars, lines go through untouched.
func TestConsoleLinesBesideTheBar(t *testing.T) {
	for _, total := range []int{-1, 10} {
		t.Run(fmt.Sprint("total ", total), func(t *testing.T) {
			var term bytes.Buffer
			c := &console{stderr: &term, draw: true}
			warn := c.writer(&term)
			p := c.progress(total, "eval rsa", "tok")
			p.add(3)
			require.Contains(t, term.String(), "eval rsa", "the bar is drawn")
			drawn := term.Len()
			fmt.Fprint(warn, "spiral: warning: ")
			fmt.Fprintln(warn, "engine busy")
			out := term.String()
			line := out[drawn:]
			before, _, ok := strings.Cut(line, "spiral: warning: engine busy\n")
			require.True(t, ok, "the warning whole: %q", line)
			require.True(t, strings.HasSuffix(before, "\r"), "the bar cleared to the line's start before the warning: %q", before)
			require.Contains(t, out[strings.Index(out, "engine busy\n"):], "eval rsa", "the bar drawn again below it")
			time.Sleep(progressThrottle)
			p.add(1)
			p.done()
			end := term.Len()
			fmt.Fprintln(warn, "step 1")
			require.Equal(t, "step 1\n", term.String()[end:], "no bar after done")
		})
	}
	var term bytes.Buffer
	quiet := &console{stderr: &term}
	p := quiet.progress(-1, "eval", "tok")
	p.add(3)
	fmt.Fprintln(quiet.writer(&term), "spiral: warning: x")
	p.done()
	require.Equal(t, "spiral: warning: x\n", term.String())
}

// TestProgressRateFromItsStart: a bar's rate counts from the bar's start:
// the library starts its clock at the first draw, the first add, so
// that sft's bar read "(1/2, 390320 steps/s)" after its first step.
func TestProgressRateFromItsStart(t *testing.T) {
	var term bytes.Buffer
	c := &console{stderr: &term, draw: true}
	p := c.progress(10, "sft", "steps")
	time.Sleep(200 * time.Millisecond)
	p.add(1)
	m := regexp.MustCompile(`\(1/10, (\d+) steps/(s|min)\)`).FindStringSubmatch(term.String())
	require.NotNil(t, m, term.String())
	rate, err := strconv.Atoi(m[1])
	require.NoError(t, err)
	require.True(t, m[2] == "min" || rate <= 5, "one step in 200 ms or more: at most 5 a second, got %s", m[0])
}

// TestConsoleLineDrawsTheBarUpToDate: the bar drawn again below a line
// counts every add so far, those its throttle held back too: sft's bar,
// at 17 steps a second with a checkpoint line every 2 steps, read
// "(116/400" below "checkpoint .../ckpt-000119".
func TestConsoleLineDrawsTheBarUpToDate(t *testing.T) {
	var term bytes.Buffer
	c := &console{stderr: &term, draw: true}
	out := c.writer(&term)
	p := c.progress(10, "sft", "steps")
	p.add(1)
	require.Contains(t, term.String(), "(1/10,")
	p.add(1)
	p.add(1) // within the throttle: not drawn yet
	fmt.Fprintln(out, "checkpoint ckpt-000003")
	_, below, ok := strings.Cut(term.String(), "checkpoint ckpt-000003\n")
	require.True(t, ok)
	require.Contains(t, below, "(3/10,", "the bar below the line: %q", below)
	p.done()
}
