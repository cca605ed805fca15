//go:build linux

package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
)

// openPTY opens a pseudo-terminal of the given columns and returns its
// terminal side, as a command's stderr, and the side that reads what is
// written there.
func openPTY(t *testing.T, cols int) (tty, master *os.File) {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	t.Cleanup(func() { master.Close() })
	ioctl := func(req uintptr, arg unsafe.Pointer) {
		_, _, errno := syscall.Syscall(syscall.SYS_IOCTL, master.Fd(), req, uintptr(arg))
		require.Zero(t, errno, "ioctl %#x", req)
	}
	unlock := int32(0)
	ioctl(syscall.TIOCSPTLCK, unsafe.Pointer(&unlock))
	var n uint32
	ioctl(syscall.TIOCGPTN, unsafe.Pointer(&n))
	ws := struct{ rows, cols, x, y uint16 }{24, uint16(cols), 0, 0}
	ioctl(syscall.TIOCSWINSZ, unsafe.Pointer(&ws))
	tty, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	t.Cleanup(func() { tty.Close() })
	return tty, master
}

// TestProgressFitsTheTerminal: a bar's line longer than the terminal is
// wide (a training step's spinner, "- step 123/1000 rollout (123456/-,
// 12345 tok/s) [1m23s]", in a 40-column pane) wrapped onto a second row,
// and each redraw, going back with "\r" to the start of that row only,
// left the row before it on the screen: a new line ten times a second.
// Each draw and clear is cut to the terminal's width less one column;
// the lines written beside the bar are not.
func TestProgressFitsTheTerminal(t *testing.T) {
	const cols = 30
	tty, master := openPTY(t, cols)
	got := make(chan string)
	go func() {
		b, _ := io.ReadAll(master) // until the terminal side is closed
		got <- string(b)
	}()
	c := newConsole(tty, false)
	require.True(t, c.draw, "a terminal draws bars")
	p := c.progress(-1, "step 123/1000 rollout", "tok")
	p.add(123456)
	line := strings.Repeat("w", 2*cols) + "\n"
	_, err := c.writer(tty).Write([]byte(line))
	require.NoError(t, err)
	p.done()
	tty.Close()
	out := strings.ReplaceAll(<-got, "\r\n", "\n") // the terminal's newline
	before, after, ok := strings.Cut(out, line)
	require.True(t, ok, "the line whole: %q", out)
	drawn := 0
	for _, seg := range strings.Split(before+after, "\r") {
		require.LessOrEqual(t, len([]rune(seg)), cols-1, "a draw or clear wider than the terminal: %q", seg)
		if strings.Contains(seg, "step 123/1000") {
			drawn++
		}
	}
	require.Positive(t, drawn, "the bar is drawn, cut: %q", out)
}
