package tokenizer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"

	"github.com/spiral-rl/spiral/model/jsonerr"
)

// Names of the ChatML special tokens: every tokenizer loaded by this
// package must define <|im_start|> and <|im_end|> as added tokens, and
// <|endoftext|> is read where it has one (Qwen's and spiral's do).
const (
	IMStartToken   = "<|im_start|>"
	IMEndToken     = "<|im_end|>"
	EndOfTextToken = "<|endoftext|>"
)

// AddedToken is one entry of tokenizer.json's "added_tokens" list: a token
// matched in the raw text before the model runs.
type AddedToken struct {
	ID      int32  `json:"id"`
	Content string `json:"content"`
	Special bool   `json:"special"`
}

// vocabulary is what this package reads from tokenizer.json itself, in Go:
// the token-to-id map (model vocabulary and added tokens) and the added
// tokens. The native library does the encoding; this is for TokenID,
// VocabSize and validation.
type vocabulary struct {
	ids   map[string]int32 // token string -> id; added tokens win over the model vocabulary
	added []AddedToken
	size  int // max id + 1
	// idForEveryCharacter: the model gives every character an id (see
	// givesEveryCharacter), so Encode loses none and IndexLost need
	// not encode to know it.
	idForEveryCharacter bool
}

// rawFile is the part of tokenizer.json that is parsed here.
type rawFile struct {
	AddedTokens []struct {
		ID      *int64  `json:"id"`
		Content *string `json:"content"`
		Special bool    `json:"special"`
	} `json:"added_tokens"`
	Model *struct {
		Type     string          `json:"type"`
		Vocab    json.RawMessage `json:"vocab"`
		UnkToken *string         `json:"unk_token"`
		UnkID    json.RawMessage `json:"unk_id"` // Unigram
	} `json:"model"`
	PreTokenizer json.RawMessage `json:"pre_tokenizer"`
}

// givesEveryCharacter reports whether the model of f, whose token -> id
// map is m (nil for a Unigram model; only its keys are read), gives every character an id, so
// that the native library never fails a text for one it has no id for
// (Tokenizer.IndexLost): a WordLevel or WordPiece model (parseVocabulary
// refuses one whose unk_token is not in its vocab), a BPE model whose
// unk_token is in its vocab, or one behind a ByteLevel pre-tokenizer
// whose vocab holds all 256 characters that byte-level BPE writes bytes
// as, and a Unigram model with an unk_id. Any other model may lose
// characters (false: IndexLost encodes to find out).
func givesEveryCharacter(f *rawFile, m map[string]*int64) bool {
	switch f.Model.Type {
	case "WordLevel", "WordPiece":
		return true
	case "Unigram":
		var id *int64
		return json.Unmarshal(f.Model.UnkID, &id) == nil && id != nil
	case "BPE":
		if f.Model.UnkToken != nil {
			if _, ok := m[*f.Model.UnkToken]; ok {
				return true
			}
		}
		if !byteLevel(f.PreTokenizer) {
			return false
		}
		for _, r := range byteLevelAlphabet() {
			if _, ok := m[string(r)]; !ok {
				return false
			}
		}
		return true
	}
	return false
}

// byteLevel reports whether the pre_tokenizer raw is ByteLevel or a
// Sequence holding one; false for anything it cannot read.
func byteLevel(raw json.RawMessage) bool {
	var p struct {
		Type          string            `json:"type"`
		Pretokenizers []json.RawMessage `json:"pretokenizers"`
	}
	if json.Unmarshal(raw, &p) != nil {
		return false
	}
	switch p.Type {
	case "ByteLevel":
		return true
	case "Sequence":
		return slices.ContainsFunc(p.Pretokenizers, byteLevel)
	}
	return false
}

// defaultUnkToken returns the unk_token of a model of type typ where
// tokenizer.json states none (the native library's default), and
// whether typ must have it in its vocab: WordLevel and WordPiece.
func defaultUnkToken(typ string) (string, bool) {
	switch typ {
	case "WordLevel":
		return "<unk>", true
	case "WordPiece":
		return "[UNK]", true
	}
	return "", false
}

// parseVocabulary validates data as a tokenizer.json and extracts its
// vocabulary. Errors do not name the file; the caller adds that.
func parseVocabulary(data []byte) (*vocabulary, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, errors.New("empty file")
	}
	var f rawFile
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("malformed JSON: %w", jsonerr.Describe(data, &f, err))
	}
	if f.Model == nil {
		return nil, errors.New(`no "model" object`)
	}
	v := &vocabulary{ids: make(map[string]int32)}
	maxID := int64(-1)
	checkID := func(id int64, what string) error {
		if id < 0 || id > math.MaxInt32 {
			return fmt.Errorf("%s has id %d outside [0, %d]", what, id, math.MaxInt32)
		}
		maxID = max(maxID, id)
		return nil
	}
	vocab := bytes.TrimSpace(f.Model.Vocab)
	if len(vocab) == 0 || bytes.Equal(vocab, []byte("null")) {
		return nil, fmt.Errorf(`model (type %q) has no "vocab"`, f.Model.Type)
	}
	// A model of a type known here must hold its type's vocab, an
	// object (BPE, WordLevel, WordPiece) or a list (Unigram), as the
	// native library does; one of another type is read as what it holds.
	object, list := vocab[0] == '{', vocab[0] == '['
	switch f.Model.Type {
	case "BPE", "WordLevel", "WordPiece":
		object, list = true, false
	case "Unigram":
		object, list = false, true
	}
	switch {
	case object: // BPE, WordLevel, WordPiece: token -> id
		// An id is a pointer so that a null one, which would decode as
		// 0, is told from id 0 (the native library refuses it).
		var m map[string]*int64
		if err := json.Unmarshal(vocab, &m); err != nil {
			return nil, vocabError(vocab, f.Model.Type, err)
		}
		var null []string
		for tok, id := range m {
			if id == nil {
				null = append(null, tok)
				continue
			}
			if err := checkID(*id, fmt.Sprintf("vocab token %q", tok)); err != nil {
				return nil, fmt.Errorf("model.vocab: %w", err)
			}
			v.ids[tok] = int32(*id)
		}
		if len(null) > 0 { // of several, the first in sorted order
			return nil, fmt.Errorf("model.vocab[%q]: an integer expected, got null", slices.Min(null))
		}
		// A WordLevel or WordPiece model gives a piece outside its vocab
		// the id of its unk_token there; where that is not in the vocab
		// the native library fails the whole text, which Encode can
		// only take for no token at all.
		if unk, ok := defaultUnkToken(f.Model.Type); ok {
			if f.Model.UnkToken != nil {
				unk = *f.Model.UnkToken
			}
			if _, ok := m[unk]; !ok {
				return nil, fmt.Errorf("model (type %q): unk_token %q is not in its vocab, and every text with a piece outside it would encode to no token", f.Model.Type, unk)
			}
		}
		v.idForEveryCharacter = givesEveryCharacter(&f, m)
	case list: // Unigram: [[piece, score], ...], id = index
		var entries []json.RawMessage
		if err := json.Unmarshal(vocab, &entries); err != nil {
			return nil, fmt.Errorf("model.vocab: %w (a model of type %q lists [piece, score] pairs)", jsonerr.Describe(vocab, &entries, err), f.Model.Type)
		}
		for i, raw := range entries {
			var pair []json.RawMessage
			if err := json.Unmarshal(raw, &pair); err != nil || len(pair) != 2 {
				return nil, fmt.Errorf("model.vocab[%d]: want [piece, score], got %s", i, raw)
			}
			var piece string
			if err := json.Unmarshal(pair[0], &piece); err != nil || string(pair[0]) == "null" {
				return nil, fmt.Errorf("model.vocab[%d]: piece is not a string", i)
			}
			// A null score would decode as 0; the native library refuses it.
			var score float64
			if string(pair[1]) == "null" {
				return nil, fmt.Errorf("model.vocab[%d]: the score of piece %q: a number expected, got null", i, piece)
			}
			if err := json.Unmarshal(pair[1], &score); err != nil {
				return nil, fmt.Errorf("model.vocab[%d]: the score of piece %q: %w", i, piece, jsonerr.Describe(pair[1], &score, err))
			}
			if err := checkID(int64(i), fmt.Sprintf("vocab token %q", piece)); err != nil {
				return nil, fmt.Errorf("model.vocab: %w", err)
			}
			v.ids[piece] = int32(i)
		}
		v.idForEveryCharacter = givesEveryCharacter(&f, nil)
	default:
		return nil, fmt.Errorf("model.vocab is neither an object nor a list")
	}
	for i, a := range f.AddedTokens {
		if a.ID == nil || a.Content == nil {
			return nil, fmt.Errorf(`added_tokens[%d]: missing "id" or "content"`, i)
		}
		if err := checkID(*a.ID, fmt.Sprintf("added token %q", *a.Content)); err != nil {
			return nil, fmt.Errorf("added_tokens[%d]: %w", i, err)
		}
		v.ids[*a.Content] = int32(*a.ID)
		v.added = append(v.added, AddedToken{ID: int32(*a.ID), Content: *a.Content, Special: a.Special})
	}
	if maxID < 0 {
		return nil, errors.New("vocabulary is empty")
	}
	v.size = int(maxID) + 1
	return v, nil
}

// vocabError says err, json.Unmarshal's error decoding vocab, the
// model.vocab of a model of type typ, into a token -> id map, in the
// file's terms (jsonerr): the entry of a token whose id is no integer
// (of several, the first token in sorted order), or the vocab, no
// object.
func vocabError(vocab []byte, typ string, err error) error {
	var raw map[string]json.RawMessage
	if json.Unmarshal(vocab, &raw) == nil {
		for _, tok := range slices.Sorted(maps.Keys(raw)) {
			var id int64
			if err := json.Unmarshal(raw[tok], &id); err != nil {
				return fmt.Errorf("model.vocab[%q]: %w", tok, jsonerr.Describe(raw[tok], &id, err))
			}
		}
	}
	var m map[string]int64
	return fmt.Errorf("model.vocab: %w (a model of type %q maps each token to its id)", jsonerr.Describe(vocab, &m, err), typ)
}
