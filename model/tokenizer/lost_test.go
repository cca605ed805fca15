package tokenizer

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestIndexLost: the native library fails a whole text holding a
// character that a BPE model whose unk_token is not in its vocab, or a
// Unigram model without unk_id, has no id for, and Encode, which cannot
// say so, gives no token for it: IndexLost finds the first such
// character (in the piece between NULs that Encode lost), where the
// tokenizers that give every character an id (the char tokenizer's
// <unk>, byte-level BPE, Qwen3's) lose none.
func TestIndexLost(t *testing.T) {
	good, err := BuildCharTokenizerJSON([]rune("ab "))
	require.NoError(t, err)
	// variant is good with its model's vocab, less <unk>, given to edit.
	variant := func(edit func(m, vocab map[string]any)) *Tokenizer {
		return tokenizerVariant(t, good, func(f, m, vocab map[string]any) {
			delete(vocab, UnknownToken)
			edit(m, vocab)
		})
	}
	bpe := variant(func(m, vocab map[string]any) { toBPE(m) })
	unigram := variant(func(m, vocab map[string]any) { toUnigram(m, vocab, false) })
	for _, tc := range []struct {
		name string
		tok  *Tokenizer
		text string
		want int
	}{
		{"BPE, all in the vocab", bpe, "ab ba", -1},
		{"BPE, one character outside", bpe, "ab ca", 3},
		{"BPE, the first of two", bpe, "a¶ c", 1},
		{"BPE, in the piece after a NUL", bpe, "ab\x00b c", 5},
		{"BPE, empty", bpe, "", -1},
		{"Unigram, one character outside", unigram, "abc", 2},
		{"Unigram, all in the vocab", unigram, "ba ab", -1},
		{"char tokenizer's <unk>", newGenerated(t, buildTestChar), "1+¶=2", -1},
		{"byte-level BPE", newGenerated(t, BuildByteTokenizerJSON), "¶ x\x00y", -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, tc.tok.IndexLost(tc.text))
		})
	}
	// What IndexLost finds, Encode loses: the whole piece.
	require.Empty(t, bpe.Encode("ab ca"))
	require.Len(t, bpe.Encode("ab\x00b c"), 2)
}

// TestIndexLostQwen3: the real Qwen3 tokenizer, byte-level BPE, loses
// no character.
func TestIndexLostQwen3(t *testing.T) {
	tok := loadQwen3(t)
	text := "Solve $x^2 = 4$, ¶ 中文 🙂\x00<|im_end|>\n"
	require.Equal(t, -1, tok.IndexLost(text))
	require.True(t, tok.vocab.idForEveryCharacter, "known from tokenizer.json")
	require.Equal(t, -1, tok.indexLost(text))
}

// TestIdForEveryCharacter: the tokenizers that IndexLost answers from
// tokenizer.json alone (idForEveryCharacter) are those whose model
// gives every character an id, and none of them loses one of random
// texts when IndexLost encodes them to find out (indexLost); for the
// others it encodes.
func TestIdForEveryCharacter(t *testing.T) {
	char, err := BuildCharTokenizerJSON([]rune("ab "))
	require.NoError(t, err)
	bytes, err := BuildByteTokenizerJSON()
	require.NoError(t, err)
	for _, tc := range []struct {
		name string
		tok  *Tokenizer
		want bool
	}{
		{"WordLevel with <unk>", newGenerated(t, buildTestChar), true},
		{"BPE, unk_token in the vocab", tokenizerVariant(t, char, func(f, m, vocab map[string]any) { toBPE(m) }), true},
		{"BPE, unk_token not in the vocab", tokenizerVariant(t, char, func(f, m, vocab map[string]any) { toBPE(m); delete(vocab, UnknownToken) }), false},
		{"BPE, no unk_token", tokenizerVariant(t, char, func(f, m, vocab map[string]any) { toBPE(m); m["unk_token"] = nil }), false},
		{"byte-level BPE", newGenerated(t, BuildByteTokenizerJSON), true},
		{"byte-level BPE in a Sequence", tokenizerVariant(t, bytes, func(f, m, vocab map[string]any) {
			f["pre_tokenizer"] = map[string]any{"type": "Sequence", "pretokenizers": []any{map[string]any{"type": "Digits", "individual_digits": true}, f["pre_tokenizer"]}}
		}), true},
		{"byte-level BPE short of a byte", tokenizerVariant(t, bytes, func(f, m, vocab map[string]any) { delete(vocab, "Ġ") }), false},
		{"BPE on bytes without a ByteLevel pre-tokenizer", tokenizerVariant(t, bytes, func(f, m, vocab map[string]any) { f["pre_tokenizer"] = nil }), false},
		{"Unigram with unk_id", tokenizerVariant(t, char, func(f, m, vocab map[string]any) { toUnigram(m, vocab, true) }), true},
		{"Unigram without unk_id", tokenizerVariant(t, char, func(f, m, vocab map[string]any) { toUnigram(m, vocab, false) }), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, tc.tok.vocab.idForEveryCharacter)
			if !tc.want {
				return // IndexLost encodes: TestIndexLost
			}
			rng := rand.New(rand.NewPCG(1, 2))
			alphabet := []rune("ab \x00¶中🙂\n\t<|>Ġ")
			for range 200 {
				var b strings.Builder
				for range rng.IntN(12) {
					b.WriteRune(alphabet[rng.IntN(len(alphabet))])
				}
				require.Equal(t, -1, tc.tok.indexLost(b.String()), "%q", b.String())
			}
		})
	}
}

// tokenizerVariant loads base's tokenizer.json given to edit: f the
// file, m its model, vocab the model's vocab.
func tokenizerVariant(t *testing.T, base []byte, edit func(f, m, vocab map[string]any)) *Tokenizer {
	var f map[string]any
	require.NoError(t, json.Unmarshal(base, &f))
	m := f["model"].(map[string]any)
	edit(f, m, m["vocab"].(map[string]any))
	b, err := json.Marshal(f)
	require.NoError(t, err)
	tok, err := FromBytes(b)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, tok.Close()) })
	return tok
}

// toBPE makes the model m a BPE with no merges.
func toBPE(m map[string]any) { m["type"], m["merges"] = "BPE", []any{} }

// toUnigram makes the model m, of vocab, a Unigram of its pieces (in id
// order), with unk_id the id of its <unk> where unkID.
func toUnigram(m, vocab map[string]any, unkID bool) {
	pieces := make([][]any, len(vocab))
	for piece, id := range vocab {
		pieces[int(id.(float64))] = []any{piece, -1.0}
	}
	m["type"], m["vocab"] = "Unigram", pieces
	delete(m, "unk_token")
	if unkID {
		m["unk_id"] = vocab[UnknownToken]
	}
}
