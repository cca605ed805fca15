package tokenizer

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

// TestGeneratedGolden checks the generated tokenizer.json files against
// testdata (rewritten with -update) and the ids that the Python tokenizers
// package gives with those files (generated_golden.json, gen_golden.py).
func TestGeneratedGolden(t *testing.T) {
	var g struct {
		Source string `json:"source"`
		Files  map[string]struct {
			VocabSize int `json:"vocab_size"`
			Cases     []struct {
				Text    string `json:"text"`
				IDs     []int  `json:"ids"`
				Decoded string `json:"decoded"`
			} `json:"cases"`
		} `json:"files"`
	}
	if !*update {
		readGolden(t, "generated_golden.json", &g)
	}
	for _, tc := range []struct {
		file  string
		build func() ([]byte, error)
	}{{"char_tokenizer.json", buildTestChar}, {"byte_tokenizer.json", BuildByteTokenizerJSON}} {
		t.Run(tc.file, func(t *testing.T) {
			data, err := tc.build()
			require.NoError(t, err)
			path := filepath.Join("testdata", tc.file)
			if *update {
				require.NoError(t, os.WriteFile(path, data, 0o644))
			}
			want, err := os.ReadFile(path)
			require.NoError(t, err)
			require.True(t, bytes.Equal(want, data), "%s differs from the generator's output; rerun with -update and gen_golden.py", path)
			if *update {
				t.Skipf("wrote %s; now run testdata/gen_golden.py for the Python ids", path)
			}

			tok, err := Load(path)
			require.NoError(t, err)
			defer tok.Close()
			py, ok := g.Files[tc.file]
			require.True(t, ok, "no Python ids for %s", tc.file)
			require.Equal(t, py.VocabSize, tok.VocabSize(), "vocab size vs %s", g.Source)
			require.NotEmpty(t, py.Cases)
			for _, c := range py.Cases {
				got := tok.Encode(c.Text)
				if len(c.IDs) == 0 {
					require.Empty(t, got, "%q", c.Text)
				} else {
					require.Equal(t, toInt32(c.IDs), got, "ids of %q vs %s", c.Text, g.Source)
				}
				require.Equal(t, c.Decoded, tok.Decode(got), "decode of %q", c.Text)
			}
		})
	}
}

func TestCharTokenizerLayout(t *testing.T) {
	alphabet := []rune("ba\nb")
	tok := newGenerated(t, func() ([]byte, error) { return BuildCharTokenizerJSON(alphabet) })
	// Expected layout from BuildCharTokenizerJSON's doc: "b", "a", "\n",
	// then the missing letters of system/user/assistant in code-point
	// order, then <unk> and the three specials.
	missing := "eimnrstuy" // sorted letters of "systemuserassistant" minus "a", "b"
	wantChars := "ba\n" + missing
	for i, r := range wantChars {
		id, ok := tok.TokenID(string(r))
		require.True(t, ok, "%q", r)
		require.Equal(t, int32(i), id, "%q", r)
	}
	n := int32(len(wantChars))
	for i, s := range []string{UnknownToken, EndOfTextToken, IMStartToken, IMEndToken} {
		id, ok := tok.TokenID(s)
		require.True(t, ok, s)
		require.Equal(t, n+int32(i), id, s)
	}
	require.Equal(t, int(n)+4, tok.VocabSize())
	require.Equal(t, []int32{n + 3, n + 1}, tok.StopIDs())
	// A character outside the alphabet is one <unk>.
	require.Equal(t, []int32{1, n, 0}, tok.Encode("aéb"))
}

func TestBuildCharTokenizerErrors(t *testing.T) {
	cases := []struct {
		name     string
		alphabet []rune
		want     string
	}{
		{"nul", []rune{'a', 0}, "alphabet[1] = U+0000"},
		{"surrogate", []rune{0xD800}, "alphabet[0] = U+D800"},
		{"too large", []rune{0x110000}, "alphabet[0] = U+110000"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := BuildCharTokenizerJSON(c.alphabet)
			require.ErrorContains(t, err, c.want)
		})
	}
}

func TestByteTokenizerLayout(t *testing.T) {
	tok := newGenerated(t, BuildByteTokenizerJSON)
	require.Equal(t, 259, tok.VocabSize(), "256 bytes + 3 specials")
	// id = byte value, so the ids of any text are its bytes.
	text := "Aé😀\n"
	var want []int32
	for _, b := range []byte(text) {
		want = append(want, int32(b))
	}
	require.Equal(t, want, tok.Encode(text))
	for i, s := range []string{EndOfTextToken, IMStartToken, IMEndToken} {
		require.Equal(t, []int32{256 + int32(i)}, tok.Encode(s), s)
	}
}

// randomText returns n runes drawn from alphabet, with ChatML special
// tokens mixed in when specials is set.
func randomText(r *rand.Rand, alphabet []rune, n int, specials bool) string {
	var b strings.Builder
	for range n {
		if specials && r.IntN(20) == 0 {
			b.WriteString(chatMLSpecials[r.IntN(len(chatMLSpecials))])
			continue
		}
		b.WriteRune(alphabet[r.IntN(len(alphabet))])
	}
	return b.String()
}

func TestCharTokenizerRoundTripProperty(t *testing.T) {
	tok := newGenerated(t, buildTestChar)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 300 {
		text := randomText(r, testAlphabet, r.IntN(60), i%2 == 0)
		ids := tok.Encode(text)
		require.Equal(t, text, tok.Decode(ids), "case %d", i)
		require.LessOrEqual(t, len(ids), utf8.RuneCountInString(text), "one id per character at most")
	}
}

func TestByteTokenizerStreamDecode(t *testing.T) {
	tok := newGenerated(t, BuildByteTokenizerJSON)
	cases := []struct{ name, text string }{
		{"cjk", "计算：二加三"},
		{"emoji zwj", "👨‍👩‍👧 ok"},
		{"mixed", "a½b€c😀d"},
		{"specials between", "é<|im_end|>😀<|endoftext|>"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			checkStreamPrefixes(t, tok, tok.Encode(c.text))
		})
	}
	t.Run("invalid bytes", func(t *testing.T) {
		// A lone continuation byte and a truncated 3-byte character: the
		// full decoding has U+FFFD, and the stream must still equal it.
		checkStreamPrefixes(t, tok, []int32{'a', 0x80, 'b', 0xE4, 0xB8, 'c', 0xE4})
	})
}

func TestDecodeEdgeCases(t *testing.T) {
	tok := newGenerated(t, BuildByteTokenizerJSON)
	cases := []struct {
		name string
		ids  []int32
		want string
	}{
		{"empty", nil, ""},
		{"out of range skipped", []int32{'a', -1, 259, 1 << 30, 'b'}, "ab"},
		{"nul byte dropped", []int32{'a', 0, 'b'}, "ab"},
		{"only nul", []int32{0}, ""},
		{"split character completes", []int32{0xC3, 0xA9}, "é"},
		{"incomplete character", []int32{'x', 0xC3}, "x\uFFFD"},
		{"special kept", []int32{'a', 258}, "a<|im_end|>"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			require.Equal(t, c.want, tok.Decode(c.ids))
		})
	}
	require.Equal(t, "a", tok.DecodeSkipSpecial([]int32{'a', 258}))
	require.Equal(t, []int32{'a', 'b'}, tok.Encode("a\x00b"), "NUL dropped by Encode")
	require.Empty(t, tok.Encode(""))
}

func FuzzCharTokenizerRoundTrip(f *testing.F) {
	tok := newGenerated(f, buildTestChar)
	inAlphabet := make(map[rune]bool)
	for _, r := range testAlphabet {
		inAlphabet[r] = true
	}
	for _, s := range []string{"", "12+3=15", "<|im_start|>user\n1<|im_end|>", "\\boxed{42}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var b strings.Builder
		for _, r := range s {
			if inAlphabet[r] {
				b.WriteRune(r)
			}
		}
		text := b.String()
		if got := tok.Decode(tok.Encode(text)); got != text {
			t.Fatalf("round trip of %q gave %q", text, got)
		}
	})
}

func FuzzByteTokenizerRoundTrip(f *testing.F) {
	tok := newGenerated(f, BuildByteTokenizerJSON)
	for _, s := range []string{"", "héllo 😀", "计算", "\t\n", "<|im_end|>x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) {
			s = strings.ToValidUTF8(s, "\uFFFD")
		}
		s = strings.ReplaceAll(s, "\x00", "")
		ids := tok.Encode(s)
		if got := tok.Decode(ids); got != s {
			t.Fatalf("round trip of %q gave %q", s, got)
		}
		d := tok.NewStreamDecoder()
		var b strings.Builder
		for _, id := range ids {
			b.WriteString(d.Push(id))
		}
		b.WriteString(d.Flush())
		if b.String() != s {
			t.Fatalf("stream decode of %q gave %q", s, b.String())
		}
	})
}

func BenchmarkCharEncode(b *testing.B) {
	tok := newGenerated(b, buildTestChar)
	text := randomText(rand.New(rand.NewPCG(3, 4)), testAlphabet, 4096, true)
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		tok.Encode(text)
	}
}

func BenchmarkByteEncode(b *testing.B) {
	tok := newGenerated(b, BuildByteTokenizerJSON)
	text := strings.Repeat("The answer is \\boxed{42}. 计算 😀\n", 128)
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		tok.Encode(text)
	}
}

// TestStreamDecoderWindowBounded checks that a long run of text ending in
// U+FFFD (invalid bytes, or the character U+FFFD itself, both of which a
// model can sample) does not grow the decoder's window without bound: each
// Push decodes the whole window, so an unbounded one makes streaming
// quadratic in the length of the run.
func TestStreamDecoderWindowBounded(t *testing.T) {
	tok := newGenerated(t, BuildByteTokenizerJSON)
	cases := []struct {
		name string
		unit []int32
	}{
		{"lone continuation bytes", []int32{0x80}},
		{"truncated characters", []int32{0xE4, 0xB8}},
		{"the character U+FFFD", []int32{0xEF, 0xBF, 0xBD}},
		{"U+FFFD after text", []int32{'a', 0xEF, 0xBF, 0xBD}},
		// Decode drops the NULs, joining 0xC3 0x80 into "À".
		{"character split by NULs", []int32{0x80, 0xC3, 0, 0, 0, 0, 0, 0, 0, 0, 0x80}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var ids []int32
			for range 300 {
				ids = append(ids, c.unit...)
			}
			d := tok.NewStreamDecoder()
			var b strings.Builder
			for i, id := range ids {
				b.WriteString(d.Push(id))
				require.LessOrEqual(t, len(d.ids), 3*maxHeld, "window after %d ids", i+1)
			}
			b.WriteString(d.Flush())
			require.Equal(t, tok.Decode(ids), b.String())
			checkStreamPrefixes(t, tok, ids[:40])
		})
	}
}
