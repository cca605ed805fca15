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
		// Held too long: emit all but the last character, so that a
		// character it completes is not emitted as U+FFFD first.
		if k, head, ok := d.cleanSplit(prev, full); ok {
			// ids[:k] decode on their own to a prefix of full that
			// later tokens cannot change: emit it and move the window
			// past it, so that a long run of U+FFFD (invalid bytes, or
			// the character itself) does not grow the window without
			// bound and make every Push decode all of it.
			d.slide(k)
			return head[len(prev):]
		}
		out = out[:max(0, len(out)-lastSize)]
		d.extra += out
		return out
	}
	d.slide(len(d.ids))
	return out
}

// slide moves the window past what was emitted before this chunk,
// keeping the chunk as context for the next one, and marks the window's
// first k tokens (counted before the move) as emitted.
func (d *StreamDecoder) slide(k int) {
	start := d.read
	n := copy(d.ids, d.ids[start:])
	d.ids = d.ids[:n]
	d.read, d.extra = k-start, ""
}

// cleanSplit looks, among the last few token boundaries of the window
// past read, for the last k at which the window's text splits cleanly:
// Decode(ids[:k]) + Decode(ids[k:]) == full, and Decode(ids[:k]) extends
// prev, the text already emitted. No character then straddles k, and since
// ids[k:] have text of their own, tokens pushed later cannot change the
// text of ids[:k]. It returns k and Decode(ids[:k]).
func (d *StreamDecoder) cleanSplit(prev, full string) (int, string, bool) {
	for k := len(d.ids) - 1; k > d.read && k >= len(d.ids)-4; k-- {
		head, tail := d.t.Decode(d.ids[:k]), d.t.Decode(d.ids[k:])
		// tail must have text: Decode drops tokens that decode to nothing
		// (NUL), so bytes pushed after them would join the end of head.
		if tail != "" && strings.HasPrefix(head, prev) && head+tail == full {
			return k, head, true
		}
	}
	return 0, "", false
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
