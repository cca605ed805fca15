package data

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Problem is one math problem with its gold answer.
type Problem struct {
	// ID is the row's own id (its value of the id field,
	// [LoadOptions.IDField] or else the first of [IDFields] in the first
	// row that holds one, or the key of a JSON object of rows) when it
	// has one, else "<file name>:<record number>". IDs are unique within
	// a Dataset.
	ID string `json:"id"`
	// Problem is the problem statement, without any instruction suffix.
	Problem string `json:"problem"`
	// Answer is the gold answer as text (never empty).
	Answer string `json:"answer"`
	// Source is where the row came from: "path:LINE" or "path:row N".
	Source string `json:"source"`
}

// LoadOptions controls [Load]. The zero value detects everything.
type LoadOptions struct {
	// ProblemField names the problem field; "" detects one of
	// [ProblemFields]. Dots name nested fields ("prompt.content" is not
	// needed for chat lists, which are recognised by their shape).
	ProblemField string
	// AnswerField names the gold-answer field; "" detects one of
	// [AnswerFields], also one level down (reward_model.ground_truth).
	AnswerField string
	// IDField names the id field, which every row must hold, not empty;
	// "" detects one of [IDFields] in the first row that holds one, rows
	// without it numbered; "-" uses positional ids, also for an object of
	// rows, whose keys are otherwise the ids.
	IDField string
	// Format is "jsonl", "json" or "parquet"; "" detects it from the
	// extension (.jsonl/.ndjson, .json, .parquet) or, failing that, the
	// content.
	Format string
	// KeepInstructions keeps known instruction suffixes on problems
	// instead of cutting them (see [InstructionSuffixes]).
	KeepInstructions bool
}

// Caps on the text of one row, applied before anything is tokenized: a
// competition problem is a few thousand characters, and tokenizers and
// graders are not built for megabytes. Longer rows are skipped and
// reported (Dataset.Skipped).
const (
	MaxProblemBytes = 100_000
	MaxAnswerBytes  = 10_000
)

// Validate reports an unknown Format, and a ProblemField that is the
// AnswerField too, which would grade every problem against its own text.
func (o LoadOptions) Validate() error {
	var errs []error
	if o.ProblemField != "" && o.ProblemField == o.AnswerField {
		errs = append(errs, fmt.Errorf("--problem-field and --answer-field both name %q: every gold answer would be its problem's own text", o.ProblemField))
	}
	switch o.Format {
	case "", "jsonl", "json", "parquet":
	default:
		errs = append(errs, fmt.Errorf("--format %q: want jsonl, json or parquet (or nothing, to detect it)", o.Format))
	}
	return errors.Join(errs...)
}

// Field names tried, in order, when a field is not given. Matching is exact
// first, then case-insensitive (and past a leading byte order mark).
var (
	// ProblemFields are the detected names of the problem field.
	ProblemFields = []string{"problem", "question", "prompt", "input", "query"}
	// AnswerFields are the detected names of the gold-answer field; a
	// worked solution comes last so that a short answer wins when both
	// exist.
	AnswerFields = []string{"answer", "final_answer", "ground_truth", "expected_answer", "gold", "target", "solution"}
	// SolutionFields are answer fields that hold a worked solution, whose
	// final answer must be extracted (last \boxed{} or "####").
	SolutionFields = []string{"solution", "rationale", "response", "completion"}
	// IDFields are the detected names of the id field.
	IDFields = []string{"id", "unique_id", "uid", "problem_id", "index", "problem_idx"}
	// InstructionSuffixes are instructions that data sets append to the
	// problem; Load cuts them (one, at the very end) unless
	// KeepInstructions is set, because the search template adds its own.
	InstructionSuffixes = []string{
		`Please reason step by step, and put your final answer within \boxed{}.`,
		`Let's think step by step and output the final answer within \boxed{}.`,
		`Let's think step by step and output the final answer within \boxed{}`,
		`Please put your final answer within \boxed{}.`,
	}
)

// Mapping records which fields a Dataset was read from.
type Mapping struct {
	ProblemField string `json:"problem_field"`
	AnswerField  string `json:"answer_field"`
	IDField      string `json:"id_field,omitempty"` // "" when ids are positional or object keys
	// AnswerFrom counts how the gold answers of the problems kept were
	// obtained: "field" (the value as is), "boxed" (last \boxed{} of the
	// value), "####" (after the GSM8K marker).
	AnswerFrom map[string]int `json:"answer_from"`
	// ChatProblems counts problems kept that were taken from a list of
	// chat messages.
	ChatProblems int `json:"chat_problems,omitempty"`
	// SuffixesCut counts problems kept whose instruction suffix was cut.
	SuffixesCut int `json:"suffixes_cut,omitempty"`
}

// SkippedRow is a row that Load read but did not keep.
type SkippedRow struct {
	Source string `json:"source"`
	Reason string `json:"reason"`
}

// Dataset is a loaded problem set.
type Dataset struct {
	// Path is the file read ("" for generated sets).
	Path string `json:"path,omitempty"`
	// Format is the format read: "jsonl", "json" or "parquet".
	Format string `json:"format,omitempty"`
	// Mapping is the field mapping used.
	Mapping Mapping `json:"mapping"`
	// Records is the number of rows read, kept or skipped.
	Records int `json:"records"`
	// Problems are the kept problems, in file order.
	Problems []Problem `json:"problems"`

	skipped []SkippedRow
	// renamed counts the problems kept whose id repeated an earlier
	// one's and was made unique; first is the first of them.
	renamed      int
	firstRenamed RenamedID
	// unbalanced counts the problems kept whose gold answer's braces
	// do not balance; firstUnbalanced is the first one's source.
	unbalanced      int
	firstUnbalanced string
	// others are the fields that later rows hold beside the detected
	// ones, which detection takes first: one for the problem, one for
	// the answer, where rows hold one, in the order their first rows
	// were read.
	others []OtherField
}

// OtherField counts the rows of a file that hold a field detection
// takes before the one detected in the file's first row, which lacks
// it, and every row is read by (an "answer" beside the first row's
// worked "solution"): the rows' problem or gold answer is read from
// Field, not Other.
type OtherField struct {
	// Role is "problem" or "answer".
	Role string
	// Field is the field read, detected in the first row; Other the one
	// detection takes in the first row that holds one, First's.
	Field, Other string
	// Rows counts the rows that hold one; First is the first's source.
	Rows  int
	First string
}

// String says what the rows hold, for "N rows hold ...": `"answer"
// beside "solution", the answer field of the first row, which every
// row's gold answer is read from`.
func (o OtherField) String() string {
	what := o.Role
	if what == "answer" {
		what = "gold answer"
	}
	return fmt.Sprintf("%q beside %q, the %s field of the first row, which every row's %s is read from", o.Other, o.Field, o.Role, what)
}

// OtherFields returns, for the problem and the answer where rows hold
// one, in the order their first rows were read, the rows that hold a
// field detection takes before the one detected in the first row, which
// every row is read by.
func (d *Dataset) OtherFields() []OtherField { return slices.Clone(d.others) }

// RenamedID is a kept problem whose id repeated that of an earlier
// problem and was made unique ("a" becomes "a~2").
type RenamedID struct {
	// Source is where the problem was read, FirstSource where the
	// earlier problem of that id was.
	Source, FirstSource string
	// ID is the id repeated, NewID the one the problem was given.
	ID, NewID string
}

func (r RenamedID) String() string {
	return fmt.Sprintf("%s repeats the id %q of %s, renamed %q", r.Source, r.ID, r.FirstSource, r.NewID)
}

// RenamedIDs returns how many kept problems had their repeated id made
// unique, and the first of them.
func (d *Dataset) RenamedIDs() (int, RenamedID) { return d.renamed, d.firstRenamed }

// UnbalancedAnswers returns how many kept problems have a gold answer
// whose braces do not balance ("{3", an unclosed "\boxed{3"), which no
// response is graded right against, and the first one's source ("" for
// none). Such rows are kept: the data may mean them.
func (d *Dataset) UnbalancedAnswers() (int, string) { return d.unbalanced, d.firstUnbalanced }

// bracesBalance reports whether the braces of s that open or close a
// group balance: each closes one opened before it, and none is left
// open. An escaped brace ("\{", set notation and "\left\{") is text;
// one after a backslash pair ("\\{", a line break and a group) is not.
func bracesBalance(s string) bool {
	depth := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++ // the escaped character, a brace or a backslash
		case '{':
			depth++
		case '}':
			if depth--; depth < 0 {
				return false
			}
		}
	}
	return depth == 0
}

// Len returns the number of kept problems.
func (d *Dataset) Len() int { return len(d.Problems) }

// Skipped returns the rows that were read but not kept (empty or null
// problem, empty, null or NaN answer, duplicate problem, no final answer
// in a worked solution), each with its source and reason, in file order.
func (d *Dataset) Skipped() []SkippedRow { return slices.Clone(d.skipped) }

// NewDataset builds a Dataset from problems (for generated sets), applying
// the same rules as Load: empty and duplicate problems are skipped and
// reported, empty IDs get positional ones, repeated IDs are made unique.
func NewDataset(name string, problems []Problem) *Dataset {
	b := newBuilder(name)
	for i, p := range problems {
		src := p.Source
		if src == "" {
			src = fmt.Sprintf("%s:row %d", name, i)
		}
		b.add(p.ID, p.Problem, p.Answer, src, "", i)
	}
	b.ds.Records = len(problems)
	return b.ds
}

// problemKey is what makes two problems one: their text up to runs of
// white space.
func problemKey(problem string) string { return strings.Join(strings.Fields(problem), " ") }

// Shared returns the problems of held whose statement (up to white
// space, as a Dataset finds duplicates) is also one of train's, in
// held's order: held-out problems that training would see.
func Shared(train, held []Problem) []Problem {
	seen := make(map[string]bool, len(train))
	for _, p := range train {
		seen[problemKey(p.Problem)] = true
	}
	var out []Problem
	for _, p := range held {
		if seen[problemKey(p.Problem)] {
			out = append(out, p)
		}
	}
	return out
}

// firstCopy is where a problem was first read, and its gold answer.
type firstCopy struct{ src, answer string }

// builder accumulates problems, skipping empty and duplicate ones.
type builder struct {
	ds   *Dataset
	name string
	seen map[string]firstCopy // by problemKey
	ids  map[string]string    // the source of the problem of each id
}

func newBuilder(path string) *builder {
	return &builder{
		ds:   &Dataset{Path: path, Mapping: Mapping{AnswerFrom: map[string]int{}}},
		name: filepath.Base(path),
		seen: map[string]firstCopy{},
		ids:  map[string]string{},
	}
}

func (b *builder) skip(src, reason string) {
	b.ds.skipped = append(b.ds.skipped, SkippedRow{Source: src, Reason: reason})
}

// add keeps the problem, or skips it giving the reason; it reports
// whether it kept it.
func (b *builder) add(id, problem, answer, src, skipReason string, n int) bool {
	problem = strings.TrimSpace(problem)
	answer = strings.TrimSpace(answer)
	switch {
	case problem == "":
		b.skip(src, "empty problem")
		return false
	case skipReason != "":
		b.skip(src, skipReason)
		return false
	case len(problem) > MaxProblemBytes:
		b.skip(src, fmt.Sprintf("problem of %d bytes exceeds the %d-byte cap", len(problem), MaxProblemBytes))
		return false
	case len(answer) > MaxAnswerBytes:
		b.skip(src, fmt.Sprintf("gold answer of %d bytes exceeds the %d-byte cap", len(answer), MaxAnswerBytes))
		return false
	case answer == "":
		b.skip(src, "empty answer")
		return false
	}
	key := problemKey(problem)
	if first, dup := b.seen[key]; dup {
		reason := "duplicate problem (first at " + first.src + ")"
		if first.answer != answer {
			// Which gold is right is the data's to say: not one to drop
			// unremarked.
			reason = fmt.Sprintf("duplicate problem (first at %s, kept) with another gold answer: %q, the first's %q", first.src, answer, first.answer)
		}
		b.skip(src, reason)
		return false
	}
	b.seen[key] = firstCopy{src, answer}
	if id == "" {
		id = fmt.Sprintf("%s:%d", b.name, n)
	}
	if first, taken := b.ids[id]; taken {
		base := id
		for k := 2; taken; k++ {
			id = fmt.Sprintf("%s~%d", base, k)
			_, taken = b.ids[id]
		}
		if b.ds.renamed == 0 {
			b.ds.firstRenamed = RenamedID{Source: src, FirstSource: first, ID: base, NewID: id}
		}
		b.ds.renamed++
	}
	b.ids[id] = src
	b.ds.Problems = append(b.ds.Problems, Problem{ID: id, Problem: problem, Answer: answer, Source: src})
	if !bracesBalance(answer) {
		if b.ds.unbalanced == 0 {
			b.ds.firstUnbalanced = src
		}
		b.ds.unbalanced++
	}
	return true
}

// Load reads a problem set from path. See the package documentation for
// the formats, the field mapping and what is skipped. It returns an error
// naming the file, line or row, and field for malformed rows, missing
// fields and values of the wrong type, and for a file with no usable rows.
func Load(path string, opt LoadOptions) (*Dataset, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("data: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("data: %w", err)
	}
	if st.IsDir() {
		return nil, fmt.Errorf("data: %s: is a directory, want a data file", path)
	}
	if !st.Mode().IsRegular() {
		// A pipe (a shell's process substitution, --data <(zcat
		// rows.jsonl.gz)) or a device cannot be read at an offset, as
		// the format's sniffing and Parquet's footer are: read it
		// whole, once, and load it from memory; refused by its opening
		// bytes first, as a file is, for an endless one (/dev/zero).
		br := bufio.NewReaderSize(f, sniffLen)
		head, err := br.Peek(sniffLen)
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("data: %s: %w", path, err)
		}
		format, err := contentFormat(path, opt, head)
		if err != nil {
			return nil, err
		}
		if err := headError(path, opt, format, head); err != nil {
			return nil, err
		}
		b, err := io.ReadAll(br)
		if err != nil {
			return nil, fmt.Errorf("data: %s: %w", path, err)
		}
		return loadBytes(path, opt, b)
	}
	return load(path, opt, f, st.Size())
}

// headError returns the error that refuses the content of path, a pipe
// or device, by head, its opening bytes, of the format named or found
// (contentFormat), else nil: JSON text that holds a NUL byte, which no
// JSON text has (/dev/zero), or a byte that is not UTF-8 (a binary
// stream), refused as loading head alone refuses it, at the same line;
// Parquet without its magic bytes. Such content is not read on, however
// long it is.
func headError(path string, opt LoadOptions, format string, head []byte) error {
	switch format {
	case FormatParquet:
		if !bytes.HasPrefix(head, []byte("PAR1")) {
			return fmt.Errorf(`data: %s: not a readable Parquet file: missing "PAR1" magic bytes`, path)
		}
	case FormatJSONL, FormatJSON:
		whole := head // less a character cut at its end, no fault
		for k := 1; k <= min(utf8.UTFMax, len(head)); k++ {
			if c := head[len(head)-k:]; utf8.RuneStart(c[0]) {
				if !utf8.FullRune(c) {
					whole = head[:len(head)-k]
				}
				break
			}
		}
		if bytes.IndexByte(whole, 0) >= 0 || invalidUTF8(whole) >= 0 {
			// The fault is in head: its lines, the rows read up to it,
			// are refused where the whole content's are.
			_, err := loadBytes(path, opt, whole)
			return err
		}
	}
	return nil
}

// loadBytes is load of content held in memory, read from path.
func loadBytes(path string, opt LoadOptions, content []byte) (*Dataset, error) {
	r := bytes.NewReader(content)
	return load(path, opt, r, r.Size())
}

// load reads src, the size bytes of path.
func load(path string, opt LoadOptions, src source, size int64) (*Dataset, error) {
	named, nameErr := namedFormat(path, opt.Format)
	head, err := readHead(src, named == "" && nameErr == nil)
	if err != nil {
		return nil, fmt.Errorf("data: %s: %w", path, err)
	}
	format, err := contentFormat(path, opt, head)
	if err != nil {
		return nil, err
	}
	b := newBuilder(path)
	b.ds.Format = format
	var m *fieldMap
	n := 0
	err = readRecords(path, format, src, size, func(r record) error {
		row, ok := r.value.(map[string]any)
		if !ok {
			return fmt.Errorf("data: %s: row is %s, want an object", r.where(), typeName(r.value))
		}
		if rep := rowRepeat(row); rep != nil {
			return rep.where()
		}
		if m == nil {
			fm, err := detectFields(row, opt)
			if err != nil {
				return fmt.Errorf("data: %s: %w", r.where(), err)
			}
			m = fm
			m.first = r.where()
			b.ds.Mapping.ProblemField = fm.problem
			b.ds.Mapping.AnswerField = fm.answer
			b.ds.Mapping.IDField = fm.id
		} else if err := b.checkFields(r, row, m, opt); err != nil {
			return err
		}
		if m.id == "" && opt.IDField == "" && r.key == "" {
			// An id is optional: the id field is the first of IDFields
			// in the first row that holds one, and the rows without it,
			// before that row or after, are numbered.
			if m.id, _ = findField(row, IDFields, false); m.id != "" {
				b.ds.Mapping.IDField = m.id
			}
		}
		n++
		return b.addRow(r, row, m, opt, n-1)
	})
	if err != nil {
		return nil, err
	}
	b.ds.Records = n
	if n == 0 {
		why := "empty file" // or blank: a JSONL file with no row is
		switch {
		case format == FormatParquet:
			why = "the file holds 0 rows"
		case format == FormatJSON && len(bytes.TrimSpace(bytes.TrimPrefix(head, utf8BOM))) > 0:
			why = "its array of rows is empty"
		}
		return nil, fmt.Errorf("data: %s: no records (%s)", path, why)
	}
	if len(b.ds.Problems) == 0 {
		return nil, fmt.Errorf("data: %s: none of the %d records is usable (first skipped: %s: %s)", path, n, b.ds.skipped[0].Source, b.ds.skipped[0].Reason)
	}
	return b.ds, nil
}

// contentFormat returns the format of the content of path that head
// opens (readHead), or the error that refuses it: compressed, UTF-16,
// named another format than the one it holds, or of none spiral reads.
func contentFormat(path string, opt LoadOptions, head []byte) (string, error) {
	format, nameErr := namedFormat(path, opt.Format)
	// What the content is comes first: a compressed file named .csv is
	// said to be compressed.
	if err := checkCompressed(path, head); err != nil {
		return "", err
	}
	if err := checkUTF16(path, head); err != nil {
		return "", err
	}
	if nameErr != nil {
		return "", nameErr
	}
	if format == "" {
		var err error
		if format, err = sniffFormat(path, head); err != nil {
			return "", err
		}
	}
	if err := checkContent(path, format, head); err != nil {
		return "", err
	}
	return format, nil
}

// fieldMap is the resolved mapping of one file.
type fieldMap struct {
	problem, answer, id string
	solution            bool   // the answer field is a worked solution
	first               string // the source of the row detected in
}

// checkFields checks row, a row after the first, against the problem
// and answer fields of m that were detected (in the first row), not
// named by opt: a row without the field that holds another detection
// knows is an error naming both, as the rows disagree on where their
// problem or answer is; one that holds the field beside one detection
// takes before it is read by the field, and counted (OtherFields).
// A row without any is left to addRow, which says the field is missing.
func (b *builder) checkFields(r record, row map[string]any, m *fieldMap, opt LoadOptions) error {
	for _, f := range []struct {
		role, field, flag string
		names             []string
		nested, named     bool
	}{
		{"problem", m.problem, "--problem-field", ProblemFields, false, opt.ProblemField != ""},
		{"answer", m.answer, "--answer-field", AnswerFields, true, opt.AnswerField != ""},
	} {
		if f.named {
			continue
		}
		own, ok := findField(row, f.names, f.nested)
		if !ok || own == f.field {
			continue
		}
		if _, holds := lookup(row, f.field); !holds {
			return fmt.Errorf("data: %s: field %q: missing (%s); the %s field %q is the first row's (%s), %q this row's: name one that every row holds with %s",
				r.where(), f.field, whyMissing(row, f.field), f.role, f.field, m.first, own, f.flag)
		}
		i := slices.IndexFunc(b.ds.others, func(o OtherField) bool { return o.Role == f.role })
		if i < 0 {
			i = len(b.ds.others)
			b.ds.others = append(b.ds.others, OtherField{Role: f.role, Field: f.field, Other: own, First: r.where()})
		}
		b.ds.others[i].Rows++
	}
	return nil
}

// detectFields returns the mapping that opt names, the problem and
// answer fields that it leaves out detected in row; an id field left out
// is not detected here, as a row may lack one (load finds it in the
// first row that holds one).
func detectFields(row map[string]any, opt LoadOptions) (*fieldMap, error) {
	m := &fieldMap{problem: opt.ProblemField, answer: opt.AnswerField, id: opt.IDField}
	var ok bool
	if m.problem == "" {
		if m.problem, ok = findField(row, ProblemFields, false); !ok {
			return nil, fmt.Errorf("no problem field: none of %v among the fields %s; name it with --problem-field", ProblemFields, showFields(fieldNames(row)))
		}
	}
	if m.answer == "" {
		if m.answer, ok = findField(row, AnswerFields, true); !ok {
			return nil, fmt.Errorf("no answer field: none of %v among the fields %s; name it with --answer-field", AnswerFields, showFields(fieldNames(row)))
		}
	}
	if m.problem == m.answer {
		problemBy, answerBy := "detected", "detected"
		if opt.ProblemField != "" {
			problemBy = "--problem-field"
		}
		if opt.AnswerField != "" {
			answerBy = "--answer-field"
		}
		return nil, fmt.Errorf("field %q is read as the problem (%s) and as the gold answer (%s): every gold answer would be its problem's own text; name the other field with --problem-field or --answer-field", m.problem, problemBy, answerBy)
	}
	if m.id == "-" {
		m.id = ""
	}
	leaf := m.answer[strings.LastIndex(m.answer, ".")+1:]
	for _, s := range SolutionFields {
		if strings.EqualFold(leaf, s) {
			m.solution = true
		}
	}
	return m, nil
}

// findField returns the first of names present in row (exact, then
// case-insensitive and past a leading byte order mark, which Python's
// csv.DictReader keeps in a UTF-8 file's first column name:
// "\ufeffid"), and with nested set also one level down as
// "outer.inner".
func findField(row map[string]any, names []string, nested bool) (string, bool) {
	keys := fieldNames(row)
	for _, n := range names {
		if _, ok := row[n]; ok {
			return n, true
		}
		for _, k := range keys {
			if strings.EqualFold(strings.TrimPrefix(k, "\uFEFF"), n) {
				return k, true
			}
		}
	}
	if !nested {
		return "", false
	}
	for _, n := range names {
		for _, k := range keys {
			inner, ok := row[k].(map[string]any)
			if !ok {
				continue
			}
			if f, ok := findField(inner, []string{n}, false); ok {
				return k + "." + f, true
			}
		}
	}
	return "", false
}

// showFields writes names for a message as %v does, but a name that
// does not print as it is (a byte order mark in it, "\ufeffproblem") is
// quoted, which shows it: [answer "\ufeffproblem"].
func showFields(names []string) string {
	shown := make([]string, len(names))
	for i, n := range names {
		shown[i] = n
		if strings.IndexFunc(n, func(r rune) bool { return !unicode.IsPrint(r) }) >= 0 {
			shown[i] = strconv.Quote(n)
		}
	}
	return "[" + strings.Join(shown, " ") + "]"
}

func fieldNames(row map[string]any) []string {
	keys := make([]string, 0, len(row))
	for k := range row {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// lookup follows a dotted path; a key containing dots is tried whole first.
// An object on the path whose key is repeated (a *repeatedKey) is
// returned as the value, for the reader to refuse.
func lookup(row map[string]any, path string) (any, bool) {
	if v, ok := row[path]; ok {
		return v, true
	}
	head, rest, found := strings.Cut(path, ".")
	if !found {
		return nil, false
	}
	if r, ok := row[head].(*repeatedKey); ok {
		return r, true
	}
	inner, ok := row[head].(map[string]any)
	if !ok {
		return nil, false
	}
	return lookup(inner, rest)
}

// whyMissing says why lookup(row, path) found nothing: a value on the
// dotted path that is not an object (a verl row's reward_model null),
// else the row's fields.
func whyMissing(row map[string]any, path string) string {
	at := row
	for i := 0; ; {
		j := strings.IndexByte(path[i:], '.')
		if j < 0 {
			break
		}
		// The first dot of what is left ends a key of at, or is part of one.
		key := path[i : i+j]
		v, ok := at[key]
		if !ok {
			break
		}
		inner, isObject := v.(map[string]any)
		if !isObject {
			return fmt.Sprintf("%q is %s, want an object", path[:i+j], typeName(v))
		}
		at, i = inner, i+j+1
	}
	return fmt.Sprintf("the row's fields: %s", showFields(fieldNames(row)))
}

func (b *builder) addRow(r record, row map[string]any, m *fieldMap, opt LoadOptions, n int) error {
	pv, ok := lookup(row, m.problem)
	if !ok {
		return fmt.Errorf("data: %s: field %q: missing (%s)", r.where(), m.problem, whyMissing(row, m.problem))
	}
	if rep := repeatIn(pv); rep != nil {
		return rep.where()
	}
	// A null cell, as real datasets have, is skipped as an empty
	// problem is.
	nullProblem := pv == nil
	var (
		problem string
		chat    bool
		err     error
	)
	if !nullProblem {
		problem, chat, err = problemText(pv)
	}
	if err == nil {
		err = checkUTF8(problem)
	}
	if err != nil {
		return fmt.Errorf("data: %s: field %q: %w", r.where(), m.problem, err)
	}
	cut := false
	if !opt.KeepInstructions {
		problem, cut = cutInstruction(problem)
	}
	av, ok := lookup(row, m.answer)
	if !ok {
		return fmt.Errorf("data: %s: field %q: missing (%s)", r.where(), m.answer, whyMissing(row, m.answer))
	}
	if rep := repeatIn(av); rep != nil {
		return rep.where()
	}
	skipReason, from := "", "field"
	answer, err := scalarText(av)
	switch {
	case av == nil:
		// A null cell, or a NaN (a missing number): skipped as an empty
		// answer is; a problem that is empty too is said to be.
		answer, err, skipReason = "", nil, "null answer"
	case errors.Is(err, errNaN):
		answer, err, skipReason = "", nil, "answer NaN, a missing value"
	case err == nil:
		err = checkUTF8(answer)
	}
	if err != nil {
		return fmt.Errorf("data: %s: field %q: %w", r.where(), m.answer, err)
	}
	if a, method, found := FinalAnswer(answer); found {
		answer, from = a, method
	} else if m.solution && strings.TrimSpace(answer) != "" {
		skipReason = fmt.Sprintf("field %q: no final answer (\\boxed{} or ####) in the worked solution", m.answer)
	}
	id := r.key
	if opt.IDField == "-" {
		id = "" // row numbers, not an object of rows' keys
	}
	if m.id != "" {
		iv, ok := lookup(row, m.id)
		if rep := repeatIn(iv); rep != nil {
			return rep.where()
		}
		switch {
		case ok && iv != nil:
			if id, err = scalarText(iv); err == nil {
				err = checkUTF8(id)
			}
			if err != nil {
				return fmt.Errorf("data: %s: field %q: %w", r.where(), m.id, err)
			}
			if m.id == opt.IDField && strings.TrimSpace(id) == "" {
				// Named: an empty id is none, which would pair the row
				// by position, as a missing one would.
				return fmt.Errorf("data: %s: id field %q: empty, want the row's id", r.where(), m.id)
			}
		case m.id == opt.IDField:
			// Named, not detected: rows without it would be paired
			// by position instead (spiral compare pairs problems by id).
			return fmt.Errorf("data: %s: id field %q: missing or null", r.where(), m.id)
		}
	}
	if nullProblem {
		b.skip(r.where(), "null problem")
		return nil
	}
	// The mapping counts the rows kept, as the examples show them.
	if b.add(id, problem, answer, r.where(), skipReason, n) {
		b.ds.Mapping.AnswerFrom[from]++
		if chat {
			b.ds.Mapping.ChatProblems++
		}
		if cut {
			b.ds.Mapping.SuffixesCut++
		}
	}
	return nil
}

// problemText turns a problem value into text: a string as is, or the
// content of the last user message of a chat list.
func problemText(v any) (text string, chat bool, err error) {
	switch x := v.(type) {
	case string:
		return x, false, nil
	case []any:
		last := -1
		for i, e := range x {
			msg, ok := e.(map[string]any)
			if !ok {
				return "", false, fmt.Errorf("list element %d is %s, want a chat message {role, content}", i, typeName(e))
			}
			role, _ := msg["role"].(string)
			if role == "user" {
				last = i
			}
		}
		if last < 0 {
			return "", false, errors.New("chat message list has no user message")
		}
		c, ok := x[last].(map[string]any)["content"].(string)
		if !ok {
			return "", false, fmt.Errorf("chat message %d: content is %s, want a string", last, typeName(x[last].(map[string]any)["content"]))
		}
		return c, true, nil
	}
	return "", false, fmt.Errorf("wrong type: %s, want a string or a list of chat messages", typeName(v))
}

// checkUTF8 returns an error naming the first byte of s that is not
// valid UTF-8 (a Parquet string or binary value; JSON text is checked as
// it is read), else nil.
func checkUTF8(s string) error {
	if off := invalidUTF8([]byte(s)); off >= 0 {
		return fmt.Errorf("byte %d (0x%02X) is not valid UTF-8; spiral reads UTF-8 text: write the column as UTF-8", off+1, s[off])
	}
	return nil
}

// cutInstruction removes one known instruction suffix from the end of p.
func cutInstruction(p string) (string, bool) {
	t := strings.TrimSpace(p)
	for _, s := range InstructionSuffixes {
		if strings.HasSuffix(t, s) {
			return strings.TrimSpace(strings.TrimSuffix(t, s)), true
		}
	}
	return p, false
}

// scalarText turns a string or number into text. A JSON number that is
// an integer prints without fraction or exponent (27.0 -> "27"), another
// as written; Parquet numbers print in their shortest form (a DECIMAL
// 1.50 -> "1.5", a FLOAT 0.1 -> "0.1").
func scalarText(v any) (string, error) {
	switch x := v.(type) {
	case string:
		return x, nil
	case json.Number:
		if n, ok := integerLiteral(x.String()); ok {
			return n, nil
		}
		return x.String(), nil
	case float64:
		if math.IsNaN(x) {
			return "", errNaN
		}
		return formatFloat(x, 64), nil
	case float32:
		if math.IsNaN(float64(x)) {
			return "", errNaN
		}
		// Shortest as a float32: a FLOAT 0.1 is "0.1", not its float64
		// widening 0.10000000149011612.
		return formatFloat(float64(x), 32), nil
	case int:
		return strconv.Itoa(x), nil
	case int32:
		return strconv.FormatInt(int64(x), 10), nil
	case int64:
		return strconv.FormatInt(x, 10), nil
	case uint32:
		return strconv.FormatUint(uint64(x), 10), nil
	case uint64:
		return strconv.FormatUint(x, 10), nil
	case *big.Float:
		// A Parquet DECIMAL, exact: its shortest decimal form.
		return x.Text('f', -1), nil
	case []byte:
		return string(x), nil
	}
	return "", fmt.Errorf("wrong type: %s, want a string or a number", typeName(v))
}

// errNaN is scalarText's error for a NaN, which pandas and numpy use for
// a missing number: a gold answer "NaN" is no answer, and only a response
// "NaN" would match it (addRow skips the row, as a null answer's), nor an
// id.
var errNaN = errors.New("NaN, a missing value, want a string or a number")

// maxIntegerDigits bounds the integers integerLiteral writes out: 1e400
// stays as it is written.
const maxIntegerDigits = 16

// integerLiteral returns the JSON number literal s as an integer without
// fraction or exponent when it is one ("27.0" -> "27", "1e3" -> "1000",
// "-12.000" -> "-12") of at most maxIntegerDigits digits, and whether it
// is. It is decided on the literal's digits, not on a float64, which
// would take 0.99999999999999999 for 1 and 1e-400 for 0.
func integerLiteral(s string) (string, bool) {
	sign := ""
	if rest, neg := strings.CutPrefix(s, "-"); neg {
		sign, s = "-", rest
	}
	mant, expText, hasExp := strings.Cut(strings.ToLower(s), "e")
	exp := 0
	if hasExp {
		var err error
		if exp, err = strconv.Atoi(expText); err != nil {
			return "", false // an exponent past int: far out of range
		}
	}
	intPart, frac, _ := strings.Cut(mant, ".")
	digits := intPart + frac
	point := len(intPart) + exp // the decimal point's place in digits
	trimmed := strings.TrimLeft(digits, "0")
	point -= len(digits) - len(trimmed)
	digits = strings.TrimRight(trimmed, "0")
	switch {
	case digits == "":
		return sign + "0", true
	case point < len(digits) || point > maxIntegerDigits:
		return "", false
	}
	return sign + digits + strings.Repeat("0", point-len(digits)), true
}

// formatFloat prints f, a float of bitSize bits (not NaN), in the
// shortest decimal form that reads back as the same value: an infinity
// as +Inf or -Inf.
func formatFloat(f float64, bitSize int) string {
	if math.IsInf(f, 0) {
		return strconv.FormatFloat(f, 'g', -1, bitSize)
	}
	return strconv.FormatFloat(f, 'f', -1, bitSize)
}

// typeName names the JSON-like type of v for error messages.
func typeName(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case string:
		return "a string"
	case json.Number, float64, float32, int, int32, int64, uint32, uint64, *big.Float:
		return "a number"
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	case json.Delim:
		return fmt.Sprintf("%q", v)
	case parquetUnread:
		return fmt.Sprintf("a Parquet %s value, which spiral does not read (write the column as a string)", x.kind)
	}
	return fmt.Sprintf("%T", v)
}
