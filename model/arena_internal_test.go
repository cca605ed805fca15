package model

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/spiral-rl/spiral/model/ortc"
)

// TestArenaConfig: the CUDA options that configure the provider's own
// arenas configure the shared one instead; malformed values name the
// option.
func TestArenaConfig(t *testing.T) {
	for _, tc := range []struct {
		options map[string]string
		want    ortc.ArenaConfig
		err     string
	}{
		{options: nil},
		{options: map[string]string{"gpu_mem_limit": "8589934592", "cudnn_conv_algo_search": "DEFAULT"}, want: ortc.ArenaConfig{MaxBytes: 8 << 30}},
		{options: map[string]string{"arena_extend_strategy": "kSameAsRequested"}, want: ortc.ArenaConfig{SameAsRequested: true}},
		{options: map[string]string{"arena_extend_strategy": "kNextPowerOfTwo"}},
		{options: map[string]string{"gpu_mem_limit": "8GB"}, err: "gpu_mem_limit=8GB: want a number of bytes"},
		{options: map[string]string{"gpu_mem_limit": "0"}, err: "gpu_mem_limit=0: want a number of bytes > 0"},
		{options: map[string]string{"arena_extend_strategy": "1"}, err: "arena_extend_strategy=1: want kNextPowerOfTwo or kSameAsRequested"},
	} {
		got, err := ArenaConfig(tc.options)
		if tc.err != "" {
			require.ErrorContains(t, err, tc.err)
			continue
		}
		require.NoError(t, err)
		require.Equal(t, tc.want, got, "%v", tc.options)
	}
}
