package tokenizer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"unicode/utf8"
)

// UnknownToken is the token that a generated character-level tokenizer
// gives to characters outside its alphabet.
const UnknownToken = "<unk>"

// chatMLSpecials are the added special tokens of every generated tokenizer,
// in id order, placed right after the model vocabulary as in Qwen's file.
var chatMLSpecials = [...]string{EndOfTextToken, IMStartToken, IMEndToken}

// chatMLText is text that every generated tokenizer must encode without
// unknown tokens: the ChatML role words and the newline after them.
const chatMLText = RoleSystem + RoleUser + RoleAssistant + "\n"

// BuildCharTokenizerJSON returns a Hugging Face tokenizer.json with one
// token per character of alphabet. Layout of the ids:
//
//	0 .. n-1   the characters: alphabet in order (duplicates dropped), then
//	           any letters of "system", "user", "assistant" and "\n" that
//	           alphabet lacks, in code-point order, so ChatML prompts encode
//	n          <unk>, given to characters outside the alphabet
//	n+1 .. n+3 <|endoftext|>, <|im_start|>, <|im_end|> (added special tokens)
//
// The model is WordLevel over a pre-tokenizer that isolates every
// character, with a Fuse decoder, so Decode(Encode(s)) == s for every s
// over the alphabet. The alphabet must not contain NUL or invalid runes.
func BuildCharTokenizerJSON(alphabet []rune) ([]byte, error) {
	var chars []string
	seen := make(map[rune]bool)
	for i, r := range alphabet {
		if r == 0 || !utf8.ValidRune(r) {
			return nil, fmt.Errorf("tokenizer: build char vocabulary: alphabet[%d] = %U is not allowed (NUL or invalid)", i, r)
		}
		if !seen[r] {
			seen[r] = true
			chars = append(chars, string(r))
		}
	}
	var extra []rune
	for _, r := range chatMLText {
		if !seen[r] {
			seen[r] = true
			extra = append(extra, r)
		}
	}
	slices.Sort(extra)
	for _, r := range extra {
		chars = append(chars, string(r))
	}
	vocab := make(map[string]int, len(chars)+1)
	for i, c := range chars {
		vocab[c] = i
	}
	unk := len(chars)
	vocab[UnknownToken] = unk
	f := hfFile{
		Version:     "1.0",
		AddedTokens: specials(unk + 1),
		PreTokenizer: map[string]any{
			"type": "Split",
			// Every character, newlines included, is its own piece.
			"pattern":  map[string]string{"Regex": `[\s\S]`},
			"behavior": "Isolated",
			"invert":   false,
		},
		Decoder: map[string]any{"type": "Fuse"},
		Model: map[string]any{
			"type":      "WordLevel",
			"vocab":     vocab,
			"unk_token": UnknownToken,
		},
	}
	return marshalFile(f)
}

// BuildByteTokenizerJSON returns a Hugging Face tokenizer.json with one
// token per byte, so that any UTF-8 text is encodable. It is byte-level BPE
// with no merges, spelled like GPT-2 and Qwen (each byte is written as a
// printable character, e.g. "Ġ" for the space). Ids 0..255 are the bytes
// (id = byte value); 256..258 are <|endoftext|>, <|im_start|>, <|im_end|>.
func BuildByteTokenizerJSON() ([]byte, error) {
	vocab := make(map[string]int, 256)
	for b, r := range byteLevelAlphabet() {
		vocab[string(r)] = b
	}
	byteLevel := map[string]any{
		"type":             "ByteLevel",
		"add_prefix_space": false,
		"trim_offsets":     false,
		"use_regex":        false,
	}
	f := hfFile{
		Version:      "1.0",
		AddedTokens:  specials(256),
		PreTokenizer: byteLevel,
		Decoder:      byteLevel,
		Model: map[string]any{
			"type":                      "BPE",
			"dropout":                   nil,
			"unk_token":                 nil,
			"continuing_subword_prefix": nil,
			"end_of_word_suffix":        nil,
			"fuse_unk":                  false,
			"byte_fallback":             false,
			"vocab":                     vocab,
			"merges":                    []string{},
		},
	}
	return marshalFile(f)
}

// byteLevelAlphabet returns the printable character that byte-level BPE
// (GPT-2's bytes_to_unicode) uses for each byte: printable Latin-1 bytes
// stand for themselves, the other 68 bytes map in order to U+0100 onwards.
func byteLevelAlphabet() [256]rune {
	var m [256]rune
	next := rune(256)
	for b := range 256 {
		printable := (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF)
		if printable {
			m[b] = rune(b)
		} else {
			m[b] = next
			next++
		}
	}
	return m
}

// hfFile is the top level of a tokenizer.json, fields in the order the
// Hugging Face library writes them.
type hfFile struct {
	Version       string         `json:"version"`
	Truncation    any            `json:"truncation"`
	Padding       any            `json:"padding"`
	AddedTokens   []hfAddedToken `json:"added_tokens"`
	Normalizer    any            `json:"normalizer"`
	PreTokenizer  any            `json:"pre_tokenizer"`
	PostProcessor any            `json:"post_processor"`
	Decoder       any            `json:"decoder"`
	Model         any            `json:"model"`
}

type hfAddedToken struct {
	ID         int    `json:"id"`
	Content    string `json:"content"`
	SingleWord bool   `json:"single_word"`
	LStrip     bool   `json:"lstrip"`
	RStrip     bool   `json:"rstrip"`
	Normalized bool   `json:"normalized"`
	Special    bool   `json:"special"`
}

// specials returns the ChatML special tokens with ids from first on.
func specials(first int) []hfAddedToken {
	out := make([]hfAddedToken, len(chatMLSpecials))
	for i, s := range chatMLSpecials {
		out[i] = hfAddedToken{ID: first + i, Content: s, Special: true}
	}
	return out
}

func marshalFile(f hfFile) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // keep "<|im_start|>" readable
	enc.SetIndent("", "  ")
	if err := enc.Encode(f); err != nil {
		return nil, fmt.Errorf("tokenizer: marshal tokenizer.json: %w", err)
	}
	return buf.Bytes(), nil
}
