package tokenizer

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// qwen3Golden is testdata/qwen3_golden.json, written by gen_golden.py with
// the Python tokenizers package.
type qwen3Golden struct {
	Source     string           `json:"source"`
	VocabSize  int              `json:"vocab_size"`
	SpecialIDs map[string]int32 `json:"special_ids"`
	Cases      []struct {
		Name    string `json:"name"`
		Text    string `json:"text"`
		IDs     []int  `json:"ids"`
		Decoded string `json:"decoded"`
	} `json:"cases"`
}

// TestQwen3 runs the checks against the real Qwen3 tokenizer, loaded once.
func TestQwen3(t *testing.T) {
	tok := loadQwen3(t)
	t.Run("vocabulary", func(t *testing.T) { testQwen3Vocabulary(t, tok) })
	t.Run("golden ids", func(t *testing.T) { testQwen3GoldenIDs(t, tok) })
	t.Run("stream decode", func(t *testing.T) { testQwen3StreamDecode(t, tok) })
	t.Run("chat ids", func(t *testing.T) { testQwen3ChatIDs(t, tok) })
}

func testQwen3Vocabulary(t *testing.T, tok *Tokenizer) {
	var g qwen3Golden
	readGolden(t, "qwen3_golden.json", &g)

	// 151,669 = 151,643 BPE tokens + 26 added tokens (issue 3; the Python
	// count is in the golden file).
	require.Equal(t, 151669, g.VocabSize, "golden file")
	require.Equal(t, g.VocabSize, tok.VocabSize(), "VocabSize vs Python get_vocab_size(with_added_tokens=True)")
	require.Equal(t, int(tok.hf.VocabSize()), tok.VocabSize(), "VocabSize vs native get_vocab_size(true)")

	// <think> = 151667 is stated by the issue; the rest come from Python.
	require.Equal(t, int32(151667), g.SpecialIDs["<think>"])
	for name, want := range g.SpecialIDs {
		got, ok := tok.TokenID(name)
		require.True(t, ok, name)
		require.Equal(t, want, got, name)
		require.Equal(t, []int32{want}, tok.Encode(name), "Encode(%q) must give the single special id", name)
	}
	require.Equal(t, g.SpecialIDs[IMStartToken], tok.IMStart())
	require.Equal(t, g.SpecialIDs[IMEndToken], tok.IMEnd())
	eot, ok := tok.EndOfText()
	require.True(t, ok)
	require.Equal(t, g.SpecialIDs[EndOfTextToken], eot)
	require.Equal(t, []int32{g.SpecialIDs[IMEndToken], g.SpecialIDs[EndOfTextToken]}, tok.StopIDs())
	require.Contains(t, tok.ChatTemplate(), IMStartToken, "chat_template read from tokenizer_config.json")
}

func testQwen3GoldenIDs(t *testing.T, tok *Tokenizer) {
	var g qwen3Golden
	readGolden(t, "qwen3_golden.json", &g)
	require.NotEmpty(t, g.Cases)
	for _, c := range g.Cases {
		t.Run(c.Name, func(t *testing.T) {
			want := toInt32(c.IDs)
			got := tok.Encode(c.Text)
			if len(want) == 0 {
				require.Empty(t, got)
			} else {
				require.Equal(t, want, got, "ids of %q (want from %s)", c.Text, g.Source)
			}
			require.Equal(t, c.Decoded, tok.Decode(got), "decode")
		})
	}
}

// testQwen3StreamDecode checks that incremental decoding equals full
// decoding for every prefix of the golden cases, and that no piece ever
// ends inside a character when the full text has no U+FFFD.
func testQwen3StreamDecode(t *testing.T, tok *Tokenizer) {
	var g qwen3Golden
	readGolden(t, "qwen3_golden.json", &g)
	for _, c := range g.Cases {
		t.Run(c.Name, func(t *testing.T) {
			checkStreamPrefixes(t, tok, toInt32(c.IDs))
		})
	}
}

// checkStreamPrefixes verifies, for every prefix ids[:k], that the pieces
// a StreamDecoder returns concatenate to Decode(ids[:k]), and that what
// Push has returned so far is always a prefix of that text (so no piece
// ends in a U+FFFD standing for a split character).
func checkStreamPrefixes(t *testing.T, tok *Tokenizer, ids []int32) {
	t.Helper()
	for k := 0; k <= len(ids); k++ {
		full := tok.Decode(ids[:k])
		d := tok.NewStreamDecoder()
		var b strings.Builder
		for _, id := range ids[:k] {
			b.WriteString(d.Push(id))
			require.True(t, strings.HasPrefix(full, b.String()), "prefix %d: streamed %q is not a prefix of %q", k, b.String(), full)
		}
		b.WriteString(d.Flush())
		require.Equal(t, full, b.String(), "prefix of %d ids", k)
	}
}

func BenchmarkQwen3Encode(b *testing.B) {
	tok := loadQwen3(b)
	var g qwen3Golden
	readGolden(b, "qwen3_golden.json", &g)
	var sb strings.Builder
	for _, c := range g.Cases {
		sb.WriteString(c.Text)
		sb.WriteByte('\n')
	}
	text := strings.Repeat(sb.String(), 20)
	b.SetBytes(int64(len(text)))
	var n int
	for b.Loop() {
		n = len(tok.Encode(text))
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
}

func BenchmarkQwen3StreamDecode(b *testing.B) {
	tok := loadQwen3(b)
	ids := tok.Encode(strings.Repeat("计算 1+2=3 😀 and \\frac{1}{2}. ", 20))
	for b.Loop() {
		d := tok.NewStreamDecoder()
		for _, id := range ids {
			d.Push(id)
		}
		d.Flush()
	}
	b.ReportMetric(float64(len(ids))*float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
}
