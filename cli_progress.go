package main

import (
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// progressThrottle is how often a progress bar is drawn again as it
// advances.
const progressThrottle = 100 * time.Millisecond

// console is a command's terminal while it draws progress bars on
// stderr, one at a time, when stderr is a terminal and --quiet is not
// set (logs then carry the figures). Lines written through its writers
// (console.writer: the command's warnings and its step lines) clear the
// bar first and draw it again after them, so that each begins its own
// line instead of following the bar's text on the bar's line.
type console struct {
	stderr io.Writer
	draw   bool // bars are drawn
	// width is the terminal's width in columns (0: unknown), which a
	// spinner's draws are cut to (fitWriter); nil: not cut.
	width func() int

	mu  sync.Mutex
	bar *progress // the bar drawn now, nil when none
	// cleared is set while the bar is not on the terminal, cleared for a
	// line; partial while that line is not ended, which the bar is not
	// drawn over (drawing it clears the terminal's line).
	cleared, partial bool
}

// newConsole returns the console of a command writing its bars to
// stderr, or drawing none when quiet or stderr is not a terminal.
func newConsole(stderr io.Writer, quiet bool) *console {
	c := &console{stderr: stderr}
	if f, ok := stderr.(*os.File); ok && !quiet && term.IsTerminal(int(f.Fd())) {
		c.draw = true
		c.width = func() int {
			w, _, err := term.GetSize(int(f.Fd()))
			if err != nil {
				return 0
			}
			return w
		}
	}
	return c
}

// progress is a progress bar of a console, or nothing when the console
// draws none.
type progress struct {
	c   *console
	bar *progressbar.ProgressBar
	// pending counts what add was given since the bar was last drawn;
	// last is when that was.
	pending int
	last    time.Time
}

// progress starts a progress bar of total units (-1: unknown) on the
// console, which it draws until done.
func (c *console) progress(total int, desc, unit string) *progress {
	if !c.draw {
		return &progress{}
	}
	// A spinner (no total) is cut to the terminal's width; a bar with a
	// total is fitted by the library, which narrows its bar, given the
	// terminal itself.
	w := c.stderr
	if total < 0 {
		w = fitWriter{w: c.stderr, width: c.width}
	}
	p := &progress{c: c, bar: progressbar.NewOptions(total,
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetDescription(desc),
		progressbar.OptionShowCount(),
		progressbar.OptionShowIts(),
		progressbar.OptionSetItsString(unit),
		// add throttles, so that a line written draws the bar again at
		// once; and no spinner ticks on its own goroutine, which would
		// draw the bar between a line's clearing and its text.
		progressbar.OptionThrottle(0),
		progressbar.OptionSetSpinnerChangeInterval(0),
		progressbar.OptionClearOnFinish(),
	)}
	// Its clock starts now: the library starts it at the first draw, and
	// the rate of the first add was then that add over no time.
	p.bar.StartWithoutRender()
	c.mu.Lock()
	c.bar = p
	c.mu.Unlock()
	return p
}

// add advances the bar by n, drawing it at most every progressThrottle.
func (p *progress) add(n int) {
	if p.bar == nil {
		return
	}
	p.c.mu.Lock()
	defer p.c.mu.Unlock()
	p.pending += n
	if now := time.Now(); now.Sub(p.last) >= progressThrottle && !p.c.partial {
		p.draw(now)
	}
}

// draw draws the bar with what add was given since it was last drawn,
// the console's lock held.
func (p *progress) draw(now time.Time) {
	_ = p.bar.Add(p.pending)
	p.pending, p.last = 0, now
	p.c.cleared = false
}

// done clears the bar.
func (p *progress) done() {
	if p.bar == nil {
		return
	}
	p.c.mu.Lock()
	defer p.c.mu.Unlock()
	if !p.c.partial {
		_ = p.bar.Finish()
	}
	if p.c.bar == p {
		p.c.bar, p.c.cleared = nil, false
	}
}

// writer returns w, whose writes clear the console's bar before them and
// draw it again after them (a write ending a line): w is the command's
// stderr or stdout, both on the terminal.
func (c *console) writer(w io.Writer) io.Writer {
	if !c.draw {
		return w
	}
	return consoleWriter{c: c, w: w}
}

// on returns env with its stdout and stderr written through the console
// (writer): the whole command's lines, whichever part writes them.
func (c *console) on(env *cliEnv) *cliEnv {
	return &cliEnv{stdout: c.writer(env.stdout), stderr: c.writer(env.stderr), release: env.release}
}

// consoleWriter is a writer of the console (console.writer).
type consoleWriter struct {
	c *console
	w io.Writer
}

func (cw consoleWriter) Write(b []byte) (int, error) {
	c := cw.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.bar != nil && !c.cleared {
		_ = c.bar.bar.Clear()
		c.cleared = true
	}
	n, err := cw.w.Write(b)
	if len(b) > 0 {
		c.partial = b[len(b)-1] != '\n'
	}
	if c.bar != nil && !c.partial {
		// Up to date: with the adds the throttle held back.
		c.bar.draw(time.Now())
	}
	return n, err
}

// fitWriter writes a spinner's draws and clears, each "\r" and the text
// after it, cut to the terminal's width (width; 0: unknown, not cut) less
// one column: a longer one ("- step 123/1000 rollout (123456/-, 12345
// tok/s) [1m23s]" in a 40-column pane) wraps onto a second row, which
// the next draw's "\r" goes back to the start of, leaving the first row
// on the screen at every draw.
type fitWriter struct {
	w     io.Writer
	width func() int
}

func (fw fitWriter) Write(b []byte) (int, error) {
	cols := 0
	if fw.width != nil {
		cols = fw.width()
	}
	if cols < 2 {
		return fw.w.Write(b)
	}
	segs := strings.Split(string(b), "\r")
	for i, seg := range segs {
		if r := []rune(seg); len(r) > cols-1 {
			segs[i] = string(r[:cols-1])
		}
	}
	if _, err := io.WriteString(fw.w, strings.Join(segs, "\r")); err != nil {
		return 0, err
	}
	return len(b), nil
}
