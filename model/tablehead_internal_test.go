package model

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestTableTileWithinLossChunk: a Grad tile of the table head holds its
// [rows x block] tensors (gradLive of them) and returns the table's
// gradient block [block, hidden]; both stay within --loss-chunk-mib. At
// few loss positions the gradient block is the larger: 32 positions of
// Qwen3-4B's widths took the whole vocabulary in one tile, a 1.56 GB
// gradient against a 256 MiB bound (measured: a 1 x 64 step of a 1-layer
// Qwen3-4B-wide model peaked 0.7 GiB above its 1 x 1,024 step).
func TestTableTileWithinLossChunk(t *testing.T) {
	const mib256 = int64(256 << 20)
	for _, c := range []struct {
		name                string
		chunk               int64
		n, vocab, hidden    int
		wantBlock, wantRows int
	}{
		// 268,435,456 / (4 x (32 x 4 + 2,560)) = 24,966.4.
		{"Qwen3-4B, 32 positions", mib256, 32, 151936, 2560, 24966, 32},
		// 268,435,456 / (4 x (4 + 1,024)) = 65,280.9.
		{"Qwen3-0.6B, one position", mib256, 1, 151936, 1024, 65280, 1},
		// 268,435,456 / (4 x (4,608 x 4 + 2,560)) = 3,196.9.
		{"Qwen3-4B, 4,608 positions", mib256, 4608, 151936, 2560, 3196, 4608},
		{"tiny vocabulary: all of it", mib256, 10, 100, 64, 100, 10},
		// One entry of 2 x 10^7 positions passes the bound: fewer rows,
		// 268,435,456 / 16 of them.
		{"more positions than a tile", mib256, 20_000_000, 151936, 2560, 1, 16_777_216},
	} {
		t.Run(c.name, func(t *testing.T) {
			block, rows := tableTile(c.chunk, c.n, c.vocab, c.hidden)
			require.Equal(t, c.wantBlock, block)
			require.Equal(t, c.wantRows, rows)
			if block > 1 {
				require.LessOrEqual(t, int64(rows)*int64(block)*4*gradLive+int64(block)*int64(c.hidden)*4, c.chunk)
			}
		})
	}
}
