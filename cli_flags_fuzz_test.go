package main

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/spiral-rl/spiral/model/lmgraph"
)

// FuzzParseLoRA feeds arbitrary --lora-rank, --lora-alpha and
// --lora-targets values to parseLoRA: what it accepts validates, has its
// targets once each in LoRATargets' order (none without a rank), and
// parses back the same from its own targets; an error names the flag.
func FuzzParseLoRA(f *testing.F) {
	f.Add(16, 32.0, strings.Join(lmgraph.LoRATargets, ","))
	f.Add(8, 16.0, "q,k,v,o")
	f.Add(8, 16.0, " Q_PROJ , gate,,up ,q")
	f.Add(0, 16.0, "q")
	f.Add(4, 1e39, "q")
	f.Add(4, 0.0, "down")
	f.Add(-1, 1.0, "lm_head")
	f.Fuzz(func(t *testing.T, rank int, alpha float64, targets string) {
		l, err := parseLoRA(rank, alpha, targets)
		if err != nil {
			require.Contains(t, err.Error(), "--lora-")
			return
		}
		probe := l
		if rank == 0 {
			require.Empty(t, l.Targets)
			probe.Rank, probe.Targets = 1, lmgraph.LoRATargets
		}
		require.NoError(t, probe.Validate())
		require.Equal(t, rank, l.Rank)
		require.Equal(t, alpha, l.Alpha)
		require.Equal(t, l.Canonical(), l)
		require.True(t, slices.IsSortedFunc(l.Targets, func(a, b string) int {
			return slices.Index(lmgraph.LoRATargets, a) - slices.Index(lmgraph.LoRATargets, b)
		}))
		back, err := parseLoRA(rank, alpha, strings.Join(l.Targets, ","))
		if rank == 0 {
			return
		}
		require.NoError(t, err)
		require.Equal(t, l, back)
	})
}

// FuzzParseByteSize feeds arbitrary sizes to parseByteSize: a size it
// accepts is at least a byte and at most 2^62; an error quotes the size
// given.
func FuzzParseByteSize(f *testing.F) {
	for _, s := range []string{"80GB", "24GiB", "512MiB", "512MB", "1.5TiB", " 8 g ", "12345", "0", "-1GB", "1e-12GB",
		"NaN", "Inf", "0x1p30", "5kB", "1e400", "4611686018427387904", "4611686018427387905B"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := parseByteSize(s)
		if err != nil {
			require.Contains(t, err.Error(), fmt.Sprintf("%q", s))
			return
		}
		require.True(t, n >= 1 && n <= 1<<62, "%q: %d bytes", s, n)
	})
}
