package main

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestMemoryMeterPeakNeverFalls: the peak a bench line reports is the
// largest the process's VmHWM has read so far, since the kernel's figure,
// from approximate counters, was seen to read lower a line later.
func TestMemoryMeterPeakNeverFalls(t *testing.T) {
	reads := [][2]int64{{50, 100}, {60, 120}, {40, 119}, {70, 130}}
	i := 0
	m := &memoryMeter{read: func() (int64, int64) { r := reads[i]; i++; return r[0], r[1] }}
	for _, want := range [][2]int64{{50, 100}, {60, 120}, {40, 120}, {70, 130}} {
		got, err := m.measure()
		require.NoError(t, err)
		require.Equal(t, want, [2]int64{got.RSSBytes, got.PeakRSSBytes})
	}
}
