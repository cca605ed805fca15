package tokenizer

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite the generated tokenizer.json golden files under testdata")

// qwen3EnvVar names the directory of the real Qwen3 tokenizer, set by
// ~/.cache/spiral/env.sh (written by scripts/setup.sh).
const qwen3EnvVar = "SPIRAL_QWEN3_TOKENIZER_DIR"

// testAlphabet is the alphabet of the char tokenizer under test: what the
// embedded arithmetic task needs.
var testAlphabet = []rune("0123456789+-*/=()<>.,:;?! abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ\\{}$^_|")

// loadQwen3 loads the real Qwen3 tokenizer or skips the test.
func loadQwen3(tb testing.TB) *Tokenizer {
	tb.Helper()
	dir := os.Getenv(qwen3EnvVar)
	if dir == "" {
		tb.Skipf("%s is unset: run scripts/setup.sh and source ~/.cache/spiral/env.sh to test against the real Qwen3 tokenizer", qwen3EnvVar)
	}
	tok, err := Load(dir)
	require.NoError(tb, err)
	tb.Cleanup(func() { require.NoError(tb, tok.Close()) })
	return tok
}

// generatedKinds are the tokenizers spiral generates, each with what
// builds its tokenizer.json, for tests run on both.
var generatedKinds = []struct {
	name  string
	build func() ([]byte, error)
}{{"char", buildTestChar}, {"byte", BuildByteTokenizerJSON}}

// newGenerated builds and loads a generated tokenizer.
func newGenerated(tb testing.TB, build func() ([]byte, error)) *Tokenizer {
	tb.Helper()
	data, err := build()
	require.NoError(tb, err)
	tok, err := FromBytes(data)
	require.NoError(tb, err)
	tb.Cleanup(func() { require.NoError(tb, tok.Close()) })
	return tok
}

func buildTestChar() ([]byte, error) { return BuildCharTokenizerJSON(testAlphabet) }

// readGolden decodes testdata/name into v.
func readGolden(tb testing.TB, name string, v any) {
	tb.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	require.NoError(tb, err, "regenerate with testdata/gen_golden.py (see its doc)")
	require.NoError(tb, json.Unmarshal(data, v))
}

func toInt32(ids []int) []int32 {
	out := make([]int32, len(ids))
	for i, id := range ids {
		out[i] = int32(id)
	}
	return out
}
