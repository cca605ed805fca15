package data

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/deprecated"
	"github.com/parquet-go/parquet-go/encoding/thrift"
	"github.com/parquet-go/parquet-go/format"
)

// Format names accepted by [LoadOptions.Format].
const (
	FormatJSONL   = "jsonl"
	FormatJSON    = "json"
	FormatParquet = "parquet"
)

// record is one row of a file, decoded into plain Go values: map[string]any
// for objects, []any for lists, string, json.Number or a Go number type,
// bool, nil.
type record struct {
	loc   string // "path:LINE" (JSONL) or "path:row N" (JSON, Parquet)
	line  int    // a JSON document's row: the line it starts on; else 0
	key   string // the row's key in a JSON object of rows, else ""
	value any
}

// where names the row in messages: its location, with the line of a JSON
// document's row, which a pretty-printed file spreads over many.
func (r record) where() string {
	if r.line > 0 {
		return fmt.Sprintf("%s (line %d)", r.loc, r.line)
	}
	return r.loc
}

// namedFormat returns the format named by opt, else by the extension
// of name, else "": then sniffFormat finds it from the content.
func namedFormat(name, opt string) (string, error) {
	switch f := strings.ToLower(opt); f {
	case FormatJSONL, FormatJSON, FormatParquet:
		return f, nil
	case "ndjson":
		return FormatJSONL, nil
	case "":
	default:
		return "", fmt.Errorf("data: %s: unknown format %q (want %s, %s or %s)", name, opt, FormatJSONL, FormatJSON, FormatParquet)
	}
	switch strings.ToLower(filepath.Ext(name)) {
	case ".jsonl", ".ndjson":
		return FormatJSONL, nil
	case ".json":
		return FormatJSON, nil
	case ".parquet", ".pq":
		return FormatParquet, nil
	case ".csv", ".tsv":
		return "", csvError(name)
	}
	return "", nil
}

// sniffFormat returns the format found by sniffing head, the first bytes
// of the content of name: with a first line that is not blank and opens
// an object, the whole of that line where the content has it (readHead).
func sniffFormat(name string, head []byte) (string, error) {
	switch t := bytes.TrimLeft(bytes.TrimPrefix(head, utf8BOM), " \t\r\n"); {
	case bytes.HasPrefix(head, []byte("PAR1")):
		return FormatParquet, nil
	case bytes.HasPrefix(t, []byte("[")):
		return FormatJSON, nil
	case bytes.HasPrefix(t, []byte("{")):
		// One object per line is JSONL; an object spanning lines is JSON.
		line, _, _ := bytes.Cut(t, []byte("\n"))
		if json.Valid(bytes.TrimSpace(line)) {
			return FormatJSONL, nil
		}
		return FormatJSON, nil
	}
	return "", fmt.Errorf("data: %s: cannot detect the format from the extension %q or the content; give --format %s, %s or %s", name, filepath.Ext(name), FormatJSONL, FormatJSON, FormatParquet)
}

// checkContent refuses a file whose content (head, its first bytes) is
// plainly of another format than the one its extension or --format
// names: Parquet read as JSON text would be malformed (or not UTF-8) at
// line 1, JSON text read as Parquet would lack its magic bytes.
func checkContent(name, format string, head []byte) error {
	parquet := bytes.HasPrefix(head, []byte("PAR1"))
	switch t := bytes.TrimLeft(bytes.TrimPrefix(head, utf8BOM), " \t\r\n"); {
	case parquet && format != FormatParquet:
		return fmt.Errorf("data: %s: the file is Parquet (it starts with \"PAR1\"), not %s: name it .parquet or pass --format parquet", name, strings.ToUpper(format))
	case format == FormatParquet && (bytes.HasPrefix(t, []byte("{")) || bytes.HasPrefix(t, []byte("["))):
		return fmt.Errorf("data: %s: the file is JSON text, not Parquet: name it .jsonl or .json, or pass --format jsonl or json", name)
	}
	return nil
}

// csvError refuses a CSV or TSV file by its extension, which --format
// cannot name either, saying how to convert it to JSONL.
func csvError(name string) error {
	ext := filepath.Ext(name)
	kind, sep := "CSV", ""
	if strings.EqualFold(ext, ".tsv") {
		kind, sep = "TSV", `, sep="\t"`
	}
	out := strings.TrimSuffix(name, ext) + ".jsonl"
	return fmt.Errorf(`data: %s: %s is not read: convert it to JSONL (with pandas: pd.read_csv(%q%s).to_json(%q, orient="records", lines=True))`, name, kind, name, sep, out)
}

// compressions are the magic numbers of compressed files, which Load
// does not read: decoded as text they would be malformed JSON at line 1.
var compressions = []struct{ name, magic, tool string }{
	{"gzip", "\x1f\x8b", "gunzip"},
	{"zstd", "\x28\xb5\x2f\xfd", "unzstd"},
	{"bzip2", "BZh", "bunzip2"},
	{"xz", "\xfd7zXZ\x00", "unxz"},
	{"zip", "PK\x03\x04", "unzip"},
}

// checkCompressed returns an error naming the compression of a file whose
// content (head, its first bytes) is compressed, else nil.
func checkCompressed(name string, head []byte) error {
	for _, c := range compressions {
		if bytes.HasPrefix(head, []byte(c.magic)) {
			return fmt.Errorf("data: %s: the file is %s-compressed; spiral reads uncompressed JSONL, JSON or Parquet: decompress it first (%s)", name, c.name, c.tool)
		}
	}
	return nil
}

// checkUTF16 returns an error for a file whose content (head, its first
// bytes) is UTF-16 text, as Windows PowerShell writes it, else nil: read
// as UTF-8 it would be an invalid byte or a NUL at line 1.
func checkUTF16(name string, head []byte) error {
	utf16 := bytes.HasPrefix(head, []byte{0xFF, 0xFE}) || bytes.HasPrefix(head, []byte{0xFE, 0xFF})
	if len(head) >= 2 && !utf16 {
		// JSON text starts with one of these; in UTF-16 without a byte
		// order mark, beside a NUL.
		const jsonStart = "{[ \t\r\n"
		utf16 = head[0] == 0 && strings.IndexByte(jsonStart, head[1]) >= 0 ||
			head[1] == 0 && strings.IndexByte(jsonStart, head[0]) >= 0
	}
	if utf16 {
		return fmt.Errorf("data: %s: the file is UTF-16 text; spiral reads UTF-8: convert it first (iconv -f UTF-16 -t UTF-8)", name)
	}
	return nil
}

// sniffLen is how many bytes of the content load looks at (its
// compression, its text encoding, its format), at least (readHead).
const sniffLen = 4096

// maxSniffLen bounds the bytes readHead reads to take in a long first
// line.
const maxSniffLen = 64 << 20

// readHead returns the first sniffLen bytes of src, and with wholeLine,
// where the first line that is not blank opens an object and runs past
// them (a JSONL row holding a long solution), more, up to that line's
// end or maxSniffLen: sniffFormat tells a JSONL row from the start of a
// JSON document by its whole line, and a row cut at 4 KiB, no valid
// JSON, read as one.
func readHead(src io.ReaderAt, wholeLine bool) ([]byte, error) {
	for n := sniffLen; ; n = min(4*n, maxSniffLen) {
		head := make([]byte, n)
		k, err := src.ReadAt(head, 0)
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, err
		}
		head = head[:k]
		if !wholeLine || k < n || n == maxSniffLen || firstLineRead(head) {
			return head, nil
		}
	}
}

// firstLineRead reports whether head holds what sniffFormat needs of
// its first line that is not blank: all of it, where it opens an object.
func firstLineRead(head []byte) bool {
	t := bytes.TrimLeft(bytes.TrimPrefix(head, utf8BOM), " \t\r\n")
	return len(t) > 0 && (t[0] != '{' || bytes.IndexByte(t, '\n') >= 0)
}

// source is what the readers read from: an *os.File or a *bytes.Reader.
type source interface {
	io.Reader
	io.ReaderAt
}

var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

// readRecords calls fn for every row of src (size bytes, read from the
// start) in order; path names it in locations and errors.
func readRecords(path, format string, src source, size int64, fn func(record) error) error {
	switch format {
	case FormatJSONL:
		return readJSONL(path, src, fn)
	case FormatJSON:
		b, err := io.ReadAll(src)
		if err != nil {
			return fmt.Errorf("data: %s: %w", path, err)
		}
		return readJSON(path, b, fn)
	case FormatParquet:
		return readParquet(path, src, size, fn)
	}
	return fmt.Errorf("data: %s: unknown format %q", path, format)
}

// decodeStrict decodes the one JSON value b holds (decodeValue), adding
// the keys its objects repeat to reps.
func decodeStrict(b []byte, reps *[]*repeatedKey) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	v, err := decodeValue(dec, 0, reps)
	if cutShort(err) {
		return nil, errors.New("the line ends inside its JSON value (cut short?)")
	}
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("extra data after the JSON value")
	}
	return v, nil
}

// cutShort reports whether err, a JSON decoder's, says its input ended
// inside a value (io.EOF from a Token call, io.ErrUnexpectedEOF), which
// it words as "EOF".
func cutShort(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}

// maxDepth caps the nesting of a JSON value, as encoding/json does.
const maxDepth = 10000

// repeatedKey stands, in a decoded object, for the value of a key the
// object gives twice: encoding/json keeps the last value in silence, so a
// row {"answer": "1", "answer": "2"} would read as the gold answer "2".
// It is an error where spiral reads it: in a row's own keys (rowRepeat)
// or in a field read (repeatIn), not in a field no one reads (a row's
// metadata).
type repeatedKey struct {
	key string
	off int64  // the decoder's input offset just after the repeated key
	loc string // "path:LINE" of the repeat, set by the file's reader
}

func (r *repeatedKey) Error() string {
	return fmt.Sprintf("key %q appears twice in one object; which value is meant is ambiguous", r.key)
}

// where is the error of a repeated key read: malformed JSON, at its line.
func (r *repeatedKey) where() error {
	return fmt.Errorf("data: %s: malformed JSON: %w", r.loc, r)
}

// rowRepeat returns the first key that row repeats among its own keys,
// nil for none.
func rowRepeat(row map[string]any) *repeatedKey {
	var first *repeatedKey
	for _, v := range row {
		if r, ok := v.(*repeatedKey); ok && (first == nil || r.off < first.off) {
			first = r
		}
	}
	return first
}

// repeatIn returns the first key repeated anywhere in v, a value read,
// nil for none.
func repeatIn(v any) *repeatedKey {
	var first *repeatedKey
	keep := func(r *repeatedKey) {
		if r != nil && (first == nil || r.off < first.off) {
			first = r
		}
	}
	switch x := v.(type) {
	case *repeatedKey:
		return x
	case map[string]any:
		for _, e := range x {
			keep(repeatIn(e))
		}
	case []any:
		for _, e := range x {
			keep(repeatIn(e))
		}
	}
	return first
}

// decodeValue reads the next JSON value from dec (which uses numbers)
// into plain Go values, as dec.Decode would, but gives a key that an
// object repeats a *repeatedKey as its value, added to reps.
func decodeValue(dec *json.Decoder, depth int, reps *[]*repeatedKey) (any, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("nested more than %d deep", maxDepth)
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch tok {
	case json.Delim('{'):
		obj := map[string]any{}
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return nil, err
			}
			k := kt.(string) // the decoder returns an object's keys as strings
			off := dec.InputOffset()
			v, err := decodeValue(dec, depth+1, reps)
			if err != nil {
				return nil, err
			}
			prev, dup := obj[k]
			if _, again := prev.(*repeatedKey); !dup {
				obj[k] = v
			} else if !again {
				r := &repeatedKey{key: k, off: off}
				obj[k] = r
				*reps = append(*reps, r)
			}
		}
		_, err := dec.Token() // '}'
		return obj, err
	case json.Delim('['):
		list := []any{}
		for dec.More() {
			v, err := decodeValue(dec, depth+1, reps)
			if err != nil {
				return nil, err
			}
			list = append(list, v)
		}
		_, err := dec.Token() // ']'
		return list, err
	}
	return tok, nil // a string, json.Number, bool or nil
}

// readJSONL reads one JSON object per line; blank lines, and a UTF-8
// byte order mark at the start of a line, are ignored.
func readJSONL(path string, src io.Reader, fn func(record) error) error {
	br := bufio.NewReaderSize(src, 1<<16)
	for lineNo := 1; ; lineNo++ {
		line, err := br.ReadBytes('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("data: %s:%d: %w", path, lineNo, err)
		}
		// A byte order mark opens the file, or a line where files that
		// each start with one were joined (cat a.jsonl b.jsonl).
		line = bytes.TrimPrefix(line, utf8BOM)
		if off := invalidUTF8(line); off >= 0 {
			return fmt.Errorf("data: %s:%d: %w", path, lineNo, notUTF8InLine(off, line[off]))
		}
		if t := bytes.TrimSpace(line); len(t) > 0 {
			var reps []*repeatedKey
			v, derr := decodeStrict(t, &reps)
			for _, r := range reps {
				r.loc = fmt.Sprintf("%s:%d", path, lineNo)
			}
			if derr != nil {
				hint := ""
				if lineNo == 1 && (t[0] == '[' || string(t) == "{") {
					// A JSON document that spans lines, read as JSONL.
					hint = jsonDocumentHint
				}
				return fmt.Errorf("data: %s:%d: malformed JSON: %w%s", path, lineNo, derr, hint)
			}
			if n, ok := objectList(v); ok && lineNo == 1 {
				// The rows as one JSON array on one line, as pandas'
				// to_json(orient="records") writes them without
				// lines=True.
				return fmt.Errorf("data: %s:%d: row is a list of %d objects, want an object%s", path, lineNo, n, jsonDocumentHint)
			}
			if ferr := fn(record{loc: fmt.Sprintf("%s:%d", path, lineNo), value: v}); ferr != nil {
				return ferr
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
	}
}

// jsonDocumentHint ends the errors of a JSON document read as JSON
// Lines.
const jsonDocumentHint = " (the file looks like one JSON document, not an object per line: name it .json or pass --format json)"

// objectList returns the length of v when it is a list of objects, not
// empty.
func objectList(v any) (int, bool) {
	list, ok := v.([]any)
	if !ok || len(list) == 0 {
		return 0, false
	}
	for _, e := range list {
		if _, ok := e.(map[string]any); !ok {
			return 0, false
		}
	}
	return len(list), true
}

// invalidUTF8 returns the offset of the first byte of b that is not
// valid UTF-8, or -1. encoding/json would read such bytes as U+FFFD in
// silence, so a Latin-1 "é" would become part of a problem as "\uFFFD".
func invalidUTF8(b []byte) int {
	if utf8.Valid(b) {
		return -1
	}
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size == 1 {
			return i
		}
		i += size
	}
	return -1
}

// notUTF8InLine describes the invalid byte c at offset off (0-based) of
// its line.
func notUTF8InLine(off int, c byte) error {
	return fmt.Errorf("byte %d of the line (0x%02X) is not valid UTF-8; spiral reads UTF-8 text: convert the file (for Latin-1: iconv -f LATIN1 -t UTF-8)", off+1, c)
}

// lineOf returns the 1-based line of byte offset off in b.
func lineOf(b []byte, off int64) int {
	if off > int64(len(b)) {
		off = int64(len(b))
	}
	return 1 + bytes.Count(b[:off], []byte("\n"))
}

// readJSON reads an array of rows, an object of rows keyed by id, or an
// object that holds exactly one array of rows.
func readJSON(path string, b []byte, fn func(record) error) error {
	b = bytes.TrimPrefix(b, utf8BOM)
	if len(bytes.TrimSpace(b)) == 0 {
		return nil // no rows; the caller reports the empty file
	}
	if off := invalidUTF8(b); off >= 0 {
		start := bytes.LastIndexByte(b[:off], '\n') + 1
		return fmt.Errorf("data: %s:%d: %w", path, lineOf(b, int64(off)), notUTF8InLine(off-start, b[off]))
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	syntax := func(err error) error {
		if cutShort(err) {
			return fmt.Errorf("data: %s:%d: malformed JSON: the file ends inside the JSON document (cut short?)", path, lineOf(b, int64(len(bytes.TrimRight(b, " \t\r\n")))))
		}
		off := dec.InputOffset()
		var se *json.SyntaxError
		if errors.As(err, &se) {
			off = se.Offset
		}
		return fmt.Errorf("data: %s:%d: malformed JSON: %w", path, lineOf(b, off), err)
	}
	lines := &lineCounter{b: b, line: 1}
	// decode reads the next value (decodeValue), placing the keys its
	// objects repeat at their lines: they come in the order of the file.
	repOff, repLine := int64(0), 1
	decode := func(depth int) (any, error) {
		var reps []*repeatedKey
		v, err := decodeValue(dec, depth, &reps)
		for _, r := range reps {
			repLine += bytes.Count(b[repOff:r.off], []byte("\n"))
			repOff = r.off
			r.loc = fmt.Sprintf("%s:%d", path, repLine)
		}
		return v, err
	}
	// rows reads an array's elements, each with the line it starts on.
	rows := func(depth int, each func(v any, line int) error) error {
		if _, err := dec.Token(); err != nil { // '['
			return syntax(err)
		}
		for dec.More() {
			line := lines.at(dec.InputOffset())
			v, err := decode(depth)
			if err != nil {
				return syntax(err)
			}
			if err := each(v, line); err != nil {
				return err
			}
		}
		if _, err := dec.Token(); err != nil { // ']'
			return syntax(err)
		}
		return nil
	}
	lines.at(0)
	switch {
	case lines.startsWith('['):
		i := 0
		if err := rows(1, func(v any, line int) error {
			r := record{loc: fmt.Sprintf("%s:row %d", path, i), line: line, value: v}
			i++
			return fn(r)
		}); err != nil {
			return err
		}
	case lines.startsWith('{'):
		if _, err := dec.Token(); err != nil {
			return syntax(err)
		}
		var keys []string
		var vals []any
		var keyLines []int
		elemLines := map[int][]int{} // the lines of the elements of array values, by value
		seen := map[string]bool{}
		for dec.More() {
			keyLine := lines.at(dec.InputOffset())
			keyLines = append(keyLines, keyLine)
			kt, err := dec.Token()
			if err != nil {
				return syntax(err)
			}
			if k := kt.(string); seen[k] {
				// As decodeValue refuses it in a row: JSON readers keep
				// the last value, a row's id or a split given twice.
				return fmt.Errorf("data: %s:%d: malformed JSON: key %q appears twice in one object; which value is meant is ambiguous", path, keyLine, k)
			}
			seen[kt.(string)] = true
			var v any
			if lines.at(dec.InputOffset()); lines.startsWith('[') {
				list := []any{}
				if err := rows(2, func(e any, line int) error {
					list = append(list, e)
					elemLines[len(vals)] = append(elemLines[len(vals)], line)
					return nil
				}); err != nil {
					return err
				}
				v = list
			} else if v, err = decode(1); err != nil {
				return syntax(err)
			}
			keys = append(keys, kt.(string))
			vals = append(vals, v)
		}
		if _, err := dec.Token(); err != nil {
			return syntax(err)
		}
		if rest := bytes.TrimLeft(b[dec.InputOffset():], " \t\r\n"); bytes.HasPrefix(rest, []byte("{")) {
			// A second object after the first: JSON Lines (Hugging
			// Face datasets' to_json writes them as .json).
			return fmt.Errorf("data: %s:%d: malformed JSON: extra data after the top-level value%s", path, lineOf(b, int64(len(b)-len(rest))), jsonLinesHint)
		}
		if err := objectRows(path, keys, vals, keyLines, elemLines, fn); err != nil {
			return err
		}
	default:
		tok, err := dec.Token()
		if err != nil {
			return syntax(err)
		}
		return fmt.Errorf("data: %s:1: top-level JSON value is %s, want an array or an object of rows", path, typeName(tok))
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return fmt.Errorf("data: %s:%d: malformed JSON: extra data after the top-level value", path, lineOf(b, dec.InputOffset()))
	}
	return nil
}

// jsonLinesHint ends the errors of a file of JSON Lines read as one JSON
// document.
const jsonLinesHint = " (the file looks like JSON Lines, one object per line, not one JSON document: name it .jsonl or pass --format jsonl)"

// lineCounter gives the lines of offsets of b taken in increasing order,
// counting each newline once, and where the next value starts.
type lineCounter struct {
	b    []byte
	off  int64 // the start of the last value found
	line int   // its 1-based line
}

// at returns the line of the value that starts at off or after it, past
// whitespace and the ',' or ':' before it (the decoder's InputOffset
// stops before them).
func (c *lineCounter) at(off int64) int {
	for off < int64(len(c.b)) && strings.IndexByte(" \t\r\n,:", c.b[off]) >= 0 {
		off++
	}
	if off > c.off {
		c.line += bytes.Count(c.b[c.off:off], []byte("\n"))
		c.off = off
	}
	return c.line
}

// startsWith reports whether the last value found starts with c.
func (c *lineCounter) startsWith(ch byte) bool {
	return c.off < int64(len(c.b)) && c.b[c.off] == ch
}

// isProblemField reports whether key is one of ProblemFields, as
// findField matches them: a row's key, not a row's id.
func isProblemField(key string) bool {
	return slices.ContainsFunc(ProblemFields, func(n string) bool { return strings.EqualFold(strings.TrimPrefix(key, "\uFEFF"), n) })
}

// jqIdent matches the keys jq names bare (.train); others are quoted
// (.["my split"]).
var jqIdent = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// splitHint says how to take the array under key out of the JSON file
// at path into a file of its own, which the loader reads: with jq.
func splitHint(path, key string) string {
	sel := "." + key
	if !jqIdent.MatchString(key) {
		sel = ".[" + strconv.Quote(key) + "]"
	}
	name := strings.Map(func(r rune) rune {
		if r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) {
			return r
		}
		return '_'
	}, key)
	out := strings.TrimSuffix(path, filepath.Ext(path)) + "-" + name + ".json"
	return fmt.Sprintf("extract the split to use into a file of its own, e.g. jq '%s' %s > %s", sel, path, out)
}

// objectRows interprets a top-level JSON object: either its values are
// rows (keyed by id) or exactly one value is an array of rows. Without
// an array, values that are at least half objects, under keys none of
// which is a problem field's (the object is no row itself), are rows,
// one that is no object (a version number, a row removed as null)
// refused as a row of its type. keyLines are the lines of the keys,
// elemLines those of the elements of the array values.
func objectRows(path string, keys []string, vals []any, keyLines []int, elemLines map[int][]int, fn func(record) error) error {
	objects := 0
	var arrays []int
	for i, v := range vals {
		switch v.(type) {
		case map[string]any:
			objects++
		case []any:
			arrays = append(arrays, i)
		}
	}
	if len(vals) > 0 && (objects == len(vals) || len(arrays) == 0 && 2*objects >= len(vals) && !slices.ContainsFunc(keys, isProblemField)) {
		for i, v := range vals {
			if err := fn(record{loc: fmt.Sprintf("%s:row %q", path, keys[i]), line: keyLines[i], key: keys[i], value: v}); err != nil {
				return err
			}
		}
		return nil
	}
	if len(arrays) != 1 {
		hint, named := "", ""
		if len(arrays) == 0 {
			hint = jsonLinesHint // one row, in a file of one line
		} else {
			// A file of splits ({"train": [...], "test": [...]}): which
			// arrays, and how to take one (no option picks one).
			q := make([]string, len(arrays))
			for i, a := range arrays {
				q[i] = strconv.Quote(keys[a])
			}
			named = " (" + strings.Join(q, ", ") + ")"
			hint = ": " + splitHint(path, keys[arrays[0]])
		}
		return fmt.Errorf("data: %s: top-level JSON object holds %d arrays%s and is not an object of rows; want an array of rows, an object of rows keyed by id, or an object with one array of rows%s", path, len(arrays), named, hint)
	}
	k := keys[arrays[0]]
	for i, v := range vals[arrays[0]].([]any) {
		if err := fn(record{loc: fmt.Sprintf("%s:%s row %d", path, k, i), line: elemLines[arrays[0]][i], value: v}); err != nil {
			return err
		}
	}
	return nil
}

// readParquet reads every row of a Parquet file as a map of plain values.
// A corrupt file that makes the Parquet library panic is reported as an
// error.
func readParquet(path string, src io.ReaderAt, size int64, fn func(record) error) (err error) {
	row := -1 // the row being read, for the message of a recovered panic
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("data: %s:row %d: corrupt Parquet data: %v", path, row, p)
		}
	}()
	if err := checkParquetFrame(src, size); err != nil {
		return fmt.Errorf("data: %s: not a readable Parquet file: %w", path, err)
	}
	pf, err := parquet.OpenFile(src, size)
	if err != nil {
		return fmt.Errorf("data: %s: not a readable Parquet file: %w", path, err)
	}
	if err := checkDecimals(pf.Metadata().Schema); err != nil {
		return fmt.Errorf("data: %s: corrupt Parquet schema: %w", path, err)
	}
	if col := lz4RawColumn(pf.Metadata()); col != "" {
		return fmt.Errorf(`data: %s: column %q is LZ4_RAW-compressed, which the Parquet reader spiral uses (parquet-go v0.32.0) decodes wrongly (its issue #608); write the file with another compression, as pyarrow.parquet.write_table(pyarrow.parquet.read_table(IN), OUT, compression="zstd") does`, path, col)
	}
	if pf.NumRows() == 0 {
		return nil // no rows; the caller reports the empty file
	}
	if err := checkParquetPages(src, size, pf.Metadata()); err != nil {
		return fmt.Errorf("data: %s: corrupt Parquet data: %w", path, err)
	}
	fixes := parquetFixes(pf.Metadata().Schema)
	r := parquet.NewReader(pf)
	defer r.Close()
	for row = 0; ; row++ {
		m := map[string]any{}
		if rerr := r.Read(&m); rerr != nil {
			if errors.Is(rerr, io.EOF) {
				return nil
			}
			return fmt.Errorf("data: %s:row %d: reading Parquet: %w", path, row, rerr)
		}
		for _, f := range fixes {
			f.apply(m)
		}
		if ferr := fn(record{loc: fmt.Sprintf("%s:row %d", path, row), value: m}); ferr != nil {
			return ferr
		}
	}
}

// maxDecimalDigits bounds the precision of a DECIMAL column: Arrow's
// widest decimal has 76 digits, and a gold answer of even 1,000 is far
// past any competition's.
const maxDecimalDigits = 1000

// checkDecimals returns an error for a DECIMAL column of schema whose
// precision is not 1..maxDecimalDigits or whose scale is not
// 0..precision (the Parquet format's rule): parquet-go scales every value
// by 10^scale, which for a corrupt scale of 2^30 ran for more than ten
// minutes a value.
func checkDecimals(schema []format.SchemaElement) error {
	for i := range schema {
		el := &schema[i]
		var scale, precision int64
		switch lt := el.LogicalType.Value.(type) {
		case *format.DecimalType:
			scale, precision = int64(lt.Scale), int64(lt.Precision)
		default:
			if ct, ok := el.ConvertedType.Get(); !ok || ct != deprecated.Decimal {
				continue
			}
			s, _ := el.Scale.Get()
			p, _ := el.Precision.Get()
			scale, precision = int64(s), int64(p)
		}
		if precision < 1 || precision > maxDecimalDigits || scale < 0 || scale > precision {
			return fmt.Errorf("column %q is DECIMAL(%d, %d): want a precision of 1 to %d digits and a scale of 0 to the precision", el.Name, precision, scale, maxDecimalDigits)
		}
	}
	return nil
}

// lz4RawColumn returns the dotted path of the first column chunk of md
// that is LZ4_RAW-compressed, else "". parquet-go v0.32.0 decodes such
// pages wrongly: its LZ4 codec allocates a new buffer for a page that
// compresses less than 3:1, and the reader keeps the old one, unfilled
// (parquet-go issue #608), so a row reads as an error about the
// encoding, or as another page's bytes; and on a corrupt page the codec
// doubles its buffer until memory runs out.
func lz4RawColumn(md *format.FileMetaData) string {
	for _, rg := range md.RowGroups {
		for _, c := range rg.Columns {
			if c.MetaData.Codec == format.Lz4Raw {
				return strings.Join(c.MetaData.PathInSchema, ".")
			}
		}
	}
	return ""
}

// checkParquetPages reads the header of every page of every column
// chunk in md (its pages lie one after another from its first page, the
// dictionary's where it has one, over TotalCompressedSize bytes) and
// returns an error for a page whose declared sizes the data cannot back,
// before parquet-go allocates what they declare: a page running past its
// chunk, more bytes uncompressed than its whole chunk, or a ZSTD frame
// or Snappy block that declares more bytes than the page (parquet-go's
// decoders allocate a ZSTD frame's declared size, up to 64 GiB, and a
// Snappy block's, up to 4 GiB).
func checkParquetPages(src io.ReaderAt, size int64, md *format.FileMetaData) error {
	for g, rg := range md.RowGroups {
		for _, c := range rg.Columns {
			m := &c.MetaData
			col := strings.Join(m.PathInSchema, ".")
			start := m.DataPageOffset
			if m.DictionaryPageOffset != 0 {
				start = m.DictionaryPageOffset
			}
			if start < 0 || m.TotalCompressedSize < 0 || m.TotalCompressedSize > size-start {
				return fmt.Errorf("column %q, row group %d: %d bytes from byte %d run past the file's %d", col, g, m.TotalCompressedSize, start, size)
			}
			chunk := make([]byte, m.TotalCompressedSize)
			if _, err := src.ReadAt(chunk, start); err != nil {
				return fmt.Errorf("column %q, row group %d: %w", col, g, err)
			}
			for off := 0; off < len(chunk); {
				where := fmt.Sprintf("column %q, row group %d, page at byte %d", col, g, start+int64(off))
				var compact thrift.CompactProtocol
				r := compact.NewReaderFromBytes(chunk[off:])
				var h format.PageHeader
				if err := thrift.NewDecoder(r).Decode(&h); err != nil {
					return fmt.Errorf("%s: header: %w", where, err)
				}
				off += r.BytesRead()
				if h.CompressedPageSize < 0 || int(h.CompressedPageSize) > len(chunk)-off {
					return fmt.Errorf("%s: %d bytes run past the column chunk's end (%d bytes on)", where, h.CompressedPageSize, len(chunk)-off)
				}
				if h.UncompressedPageSize < 0 || int64(h.UncompressedPageSize) > m.TotalUncompressedSize {
					return fmt.Errorf("%s: %d bytes uncompressed, more than the whole column chunk's %d", where, h.UncompressedPageSize, m.TotalUncompressedSize)
				}
				page := chunk[off : off+int(h.CompressedPageSize)]
				off += len(page)
				if v2 := h.DataPageHeaderV2; v2.Valid {
					if v2.V.IsCompressed.Valid && !v2.V.IsCompressed.V {
						continue
					}
					// The levels come first, uncompressed.
					levels := int64(v2.V.RepetitionLevelsByteLength) + int64(v2.V.DefinitionLevelsByteLength)
					if levels < 0 || levels > int64(len(page)) {
						return fmt.Errorf("%s: %d bytes of levels in a page of %d", where, levels, len(page))
					}
					page = page[levels:]
				}
				if err := checkDeclaredSize(m.Codec, page, h.UncompressedPageSize); err != nil {
					return fmt.Errorf("%s: %w", where, err)
				}
			}
		}
	}
	return nil
}

// checkDeclaredSize returns an error when page, compressed with codec,
// declares more bytes uncompressed than want, its page header's size.
func checkDeclaredSize(codec format.CompressionCodec, page []byte, want int32) error {
	var declared uint64
	switch codec {
	case format.Zstd:
		var zh zstd.Header
		if err := zh.Decode(page); err != nil || !zh.HasFCS {
			return nil // the decoder reports it, or sizes the output as it goes
		}
		declared = zh.FrameContentSize
	case format.Snappy:
		n, err := snappy.DecodedLen(page)
		if err != nil {
			return nil // the decoder reports it
		}
		declared = uint64(n)
	default:
		return nil
	}
	if declared > uint64(want) {
		return fmt.Errorf("its %s frame declares %d bytes uncompressed, the page header %d", codec, declared, want)
	}
	return nil
}

// parquetUnread stands for a value of a Parquet column whose logical
// type the reader gives as something other than its meaning (a DATE as
// its day count, a FLOAT16 as its two bytes): an error where it is used
// as a problem, answer or id, never a wrong one.
type parquetUnread struct{ kind string }

// unreadKind names el's type when it is not read as its value, else "".
func unreadKind(el *format.SchemaElement) string {
	if lt := el.LogicalType.Value; lt != nil {
		switch lt.(type) {
		case *format.StringType, *format.EnumType, *format.JsonType, *format.IntType, *format.DecimalType,
			*format.ListType, *format.MapType, *format.NullType:
			return ""
		}
		return lt.String()
	}
	ct, ok := el.ConvertedType.Get()
	if !ok {
		return ""
	}
	switch ct {
	case deprecated.Date:
		return "DATE"
	case deprecated.TimeMillis, deprecated.TimeMicros:
		return "TIME"
	case deprecated.TimestampMillis, deprecated.TimestampMicros:
		return "TIMESTAMP"
	case deprecated.Interval:
		return "INTERVAL"
	case deprecated.Bson:
		return "BSON"
	}
	return ""
}

// parquetFix is what readParquet changes in the value of a column that
// is reached from the root through structs alone (reward_model.ground_truth):
// a value of a type not read as its value becomes parquetUnread, and a
// UINT64, which parquet-go gives as an int64 (2^64-1 as -1), the uint64
// it stands for. Columns in lists and maps are not followed; the
// problem, answer and id paths Load reads never pass through one.
type parquetFix struct {
	path     []string
	unread   string // the name of the type not read as its value, or ""
	unsigned bool
}

// parquetFixes returns the fixes that the columns of a Parquet schema
// (its elements in depth-first order, the root first) need. Strings,
// enums, JSON, signed integers, decimals, floats, lists and maps are
// read as they are, as are columns without a logical type.
func parquetFixes(schema []format.SchemaElement) []parquetFix {
	var out []parquetFix
	// walk visits the children of schema[i] and returns the index after
	// its subtree.
	var walk func(i int, prefix []string) int
	walk = func(i int, prefix []string) int {
		n, _ := schema[i].NumChildren.Get()
		j := i + 1
		for c := 0; c < int(n) && j < len(schema); c++ {
			el := &schema[j]
			path := append(slices.Clone(prefix), el.Name)
			rep, _ := el.RepetitionType.Get()
			if _, group := el.NumChildren.Get(); group {
				if _, converted := el.ConvertedType.Get(); rep != format.Repeated && el.LogicalType.Value == nil && !converted {
					j = walk(j, path) // a struct
				} else {
					j = skipSubtree(schema, j) // a list or a map
				}
				continue
			}
			if kind := unreadKind(el); kind != "" {
				out = append(out, parquetFix{path: path, unread: kind})
			} else if rep != format.Repeated && isUnsigned64(el) {
				out = append(out, parquetFix{path: path, unsigned: true})
			}
			j++
		}
		return j
	}
	if len(schema) > 0 {
		walk(0, nil)
	}
	return out
}

// isUnsigned64 reports whether the leaf el is an INT64 of an unsigned
// logical or converted type.
func isUnsigned64(el *format.SchemaElement) bool {
	if t, _ := el.Type.Get(); t != format.Int64 {
		return false
	}
	if it, ok := el.LogicalType.Value.(*format.IntType); ok {
		return !it.IsSigned
	}
	ct, ok := el.ConvertedType.Get()
	return ok && ct == deprecated.Uint64
}

// apply makes the fix to the value at f.path in row, where it has one.
func (f parquetFix) apply(row map[string]any) {
	for _, k := range f.path[:len(f.path)-1] {
		inner, ok := row[k].(map[string]any)
		if !ok {
			return
		}
		row = inner
	}
	leaf := f.path[len(f.path)-1]
	switch v := row[leaf]; {
	case v == nil:
	case f.unread != "":
		row[leaf] = parquetUnread{f.unread}
	case f.unsigned:
		if i, ok := v.(int64); ok {
			row[leaf] = uint64(i)
		}
	}
}

// skipSubtree returns the index of the element after the subtree of
// schema[i].
func skipSubtree(schema []format.SchemaElement, i int) int {
	n, _ := schema[i].NumChildren.Get()
	i++
	for range n {
		if i >= len(schema) {
			break
		}
		i = skipSubtree(schema, i)
	}
	return i
}

// checkParquetFrame checks the magic bytes and that the footer length fits
// in the file, before the Parquet library allocates a buffer of that
// length (a corrupt length would otherwise ask for up to 4 GiB).
func checkParquetFrame(src io.ReaderAt, size int64) error {
	const magic = "PAR1"
	if size < 12 {
		return fmt.Errorf("%d bytes is too short for Parquet", size)
	}
	var head, tail [8]byte
	if _, err := src.ReadAt(head[:4], 0); err != nil {
		return err
	}
	if _, err := src.ReadAt(tail[:], size-8); err != nil {
		return err
	}
	if string(head[:4]) != magic || string(tail[4:]) != magic {
		return errors.New(`missing "PAR1" magic bytes`)
	}
	if footer := int64(binary.LittleEndian.Uint32(tail[:4])); footer > size-12 {
		return fmt.Errorf("footer of %d bytes does not fit in a file of %d bytes", footer, size)
	}
	return nil
}
