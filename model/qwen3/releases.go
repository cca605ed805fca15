package qwen3

import (
	"sort"
	"strings"
)

// releases are the configs of Hugging Face's Qwen/Qwen3-0.6B, -1.7B, -4B
// and -8B (config.json of each): the shape, the context (40,960
// positions) and the rotary base (θ 1e6). Qwen/Qwen3-4B-Instruct-2507
// has Qwen3-4B's shape but 262,144 positions and θ 5e6.
var releases = map[string]Config{
	"qwen3-0.6b": {Layers: 28, Hidden: 1024, Intermediate: 3072, Heads: 16, KVHeads: 8, HeadDim: 128, Vocab: 151936,
		RopeTheta: 1e6, RMSEps: 1e-6, TiedEmbeddings: true, MaxPositions: 40960},
	"qwen3-1.7b": {Layers: 28, Hidden: 2048, Intermediate: 6144, Heads: 16, KVHeads: 8, HeadDim: 128, Vocab: 151936,
		RopeTheta: 1e6, RMSEps: 1e-6, TiedEmbeddings: true, MaxPositions: 40960},
	"qwen3-4b": {Layers: 36, Hidden: 2560, Intermediate: 9728, Heads: 32, KVHeads: 8, HeadDim: 128, Vocab: 151936,
		RopeTheta: 1e6, RMSEps: 1e-6, TiedEmbeddings: true, MaxPositions: 40960},
	"qwen3-8b": {Layers: 36, Hidden: 4096, Intermediate: 12288, Heads: 32, KVHeads: 8, HeadDim: 128, Vocab: 151936,
		RopeTheta: 1e6, RMSEps: 1e-6, MaxPositions: 40960},
}

// Release returns a released model's config by name, case-insensitive
// (qwen3-0.6b for Qwen/Qwen3-0.6B; see Releases).
func Release(name string) (Config, bool) {
	c, ok := releases[strings.ToLower(name)]
	return c, ok
}

// Releases lists the names Release knows, sorted.
func Releases() []string {
	var out []string
	for n := range releases {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
