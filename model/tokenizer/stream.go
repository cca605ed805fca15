package tokenizer

import (
	"strings"
	"unicode/utf8"
)

// maxHeld bounds how many tokens a StreamDecoder holds back waiting for a
// character to complete. A UTF-8 character has at most 4 bytes and every
// byte-level token carries at least one, so a longer wait means the bytes
// are invalid anyway; they are then emitted as U+FFFD.
const maxHeld = 8

// StreamDecoder decodes a growing sequence of token ids piece by piece, as
// a sampler produces them. It emits only complete UTF-8 characters: bytes
// of a character that byte-level BPE split across tokens are held back
// until the character is complete. The concatenation of everything Push
// and Flush return equals Decode of all the ids pushed.
//
// A StreamDecoder is not safe for concurrent use; use one per sequence.
type StreamDecoder struct {
	t    *Tokenizer
	ids  []int32 // ids[:read] have been emitted; ids[:prefix] are context only
	read int
	// extra is text emitted past Decode(ids[:read]): what a decoder held
	// back too long emits of its window, short of a last character that
	// may still be completing.
	extra string
}

// NewStreamDecoder returns a StreamDecoder for a new sequence.
func (t *Tokenizer) NewStreamDecoder() *StreamDecoder {
	return &StreamDecoder{t: t}
}

// Push adds one id and returns the text it completes, possibly "".
func (d *StreamDecoder) Push(id int32) string {
	d.ids = append(d.ids, id)
	return d.emit(false)
}

// Flush returns whatever text is still held back (incomplete characters
// become U+FFFD) and resets the decoder for a new sequence.
func (d *StreamDecoder) Flush() string {
	s := d.emit(true)
	d.ids, d.read, d.extra = d.ids[:0], 0, ""
	return s
}

// emit decodes the window ids[0:] against ids[0:read]. The window starts
// one emitted chunk before read, so decoders that treat the first token
// specially (e.g. stripping a leading space) see the same context as a
// full decode. The text is emitted when it grew and does not end inside a
// character (U+FFFD), or when force is set. Held maxHeld tokens, the text
// is emitted but for a last U+FFFD, which may be a character still
// completing (or the character itself: the text can hold U+FFFD).
func (d *StreamDecoder) emit(force bool) string {
	if len(d.ids) == d.read {
		return ""
	}
	prev := d.t.Decode(d.ids[:d.read]) + d.extra
	full := d.t.Decode(d.ids)
	_, lastSize := utf8.DecodeLastRuneInString(full)
	lastIncomplete := strings.HasSuffix(full, string(utf8.RuneError))
	if !force && len(d.ids)-d.read < maxHeld && (len(full) <= len(prev) || lastIncomplete) {
		return ""
	}
	out, ok := strings.CutPrefix(full, prev)
	if !ok {
		// The held bytes changed how earlier text decodes; fall back to the
		// longest common prefix so that nothing is emitted twice.
		out = full[commonPrefix(full, prev):]
	}
	if !force && lastIncomplete {
		// Held too long: emit all but the last character, keeping the
		// window, so that a character it completes is not emitted as
		// U+FFFD first.
		out = out[:max(0, len(out)-lastSize)]
		d.extra += out
		return out
	}
	// Keep the chunk just emitted as context for the next window.
	n := copy(d.ids, d.ids[d.read:])
	d.ids = d.ids[:n]
	d.read, d.extra = n, ""
	return out
}

func commonPrefix(a, b string) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}
