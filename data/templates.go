package data

import (
	_ "embed"
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"
	"text/template"

	"github.com/spiral-rl/spiral/model/smallfile"
)

// The default prompt templates, for real models.
var (
	//go:embed templates/search.txt
	defaultSearch string
	//go:embed templates/aggregate.txt
	defaultAggregate string
)

// SearchData is what the search template is executed with.
type SearchData struct {
	Problem string
}

// Candidate is one candidate solution in the aggregation template; Number
// counts from 1.
type Candidate struct {
	Number int
	Text   string
}

// AggregateData is what the aggregation template is executed with.
type AggregateData struct {
	Problem    string
	Candidates []Candidate
}

// Templates renders the search and aggregation prompts. Sources are Go
// text/template text: the search template sees [SearchData], the
// aggregation template [AggregateData]. A file's CRLF line ends (as
// Windows editors write them) read as LF, and one trailing newline of a
// source (as editors add) is dropped; rendered prompts are the user turn
// only, without any chat markup.
type Templates struct {
	search, aggregate *template.Template
	searchSrc, aggSrc string
	// The sources with the CRLF line ends their files had, as versions
	// that kept them read them (CRLFSources).
	searchCRLF, aggCRLF string
	// The files the templates were read from ("" for a built-in one),
	// which an error rendering them names.
	searchPath, aggPath string
}

// TemplateError is a template refused: one whose file cannot be read or
// is not UTF-8, that does not parse, or whose output on probe data fails
// or leaves out what it must show. Aggregate says which of the two (else the search
// template), Path the file it was read from ("" where it was not read
// from a file, or where the check does not know it: CheckAggregate).
// Its message names the template (and file) once: callers add where it
// failed (the problem), not the template again.
type TemplateError struct {
	Aggregate bool
	Path      string
	Err       error
}

func (e *TemplateError) Error() string {
	name := "search template"
	if e.Aggregate {
		name = "aggregation template"
	}
	if e.Path != "" {
		name += " " + e.Path
	}
	return "data: " + name + ": " + e.Err.Error()
}

func (e *TemplateError) Unwrap() error { return e.Err }

// LoadTemplates reads the templates from files; "" selects the embedded
// default for that template.
func LoadTemplates(searchPath, aggregatePath string) (*Templates, error) {
	search, agg := trimOneNewline(defaultSearch), trimOneNewline(defaultAggregate)
	return loadOver(&Templates{searchSrc: search, aggSrc: agg, searchCRLF: search, aggCRLF: agg}, searchPath, aggregatePath)
}

// Override returns templates that read the template files named (those
// not "") in place of t's own, keeping t's others.
func (t *Templates) Override(searchPath, aggregatePath string) (*Templates, error) {
	o, err := loadOver(t, searchPath, aggregatePath)
	if err != nil {
		return nil, err
	}
	if searchPath == "" {
		o.searchPath = t.searchPath
	}
	if aggregatePath == "" {
		o.aggPath = t.aggPath
	}
	return o, nil
}

// loadOver parses base's sources, each replaced by its file's content
// where a path is given.
func loadOver(base *Templates, searchPath, aggregatePath string) (*Templates, error) {
	search, agg, searchCRLF, aggCRLF := base.searchSrc, base.aggSrc, base.searchCRLF, base.aggCRLF
	if searchPath != "" {
		src, crlf, err := readTemplate(searchPath)
		if err != nil {
			return nil, &TemplateError{Path: searchPath, Err: err}
		}
		search, searchCRLF = src, crlf
	}
	if aggregatePath != "" {
		src, crlf, err := readTemplate(aggregatePath)
		if err != nil {
			return nil, &TemplateError{Aggregate: true, Path: aggregatePath, Err: err}
		}
		agg, aggCRLF = src, crlf
	}
	t, err := parseTrimmed(search, agg)
	var te *TemplateError
	if errors.As(err, &te) {
		// The file of the template at fault (none for a built-in one).
		te.Path = searchPath
		if te.Aggregate {
			te.Path = aggregatePath
		}
	}
	if err != nil {
		return nil, err
	}
	t.searchPath, t.aggPath = searchPath, aggregatePath
	t.searchCRLF, t.aggCRLF = searchCRLF, aggCRLF
	return t, nil
}

// Probe strings that a template must carry into its output.
const (
	probeProblem   = "\x00problem\x00"
	probeCandidate = "\x00candidate %d\x00"
)

// ParseTemplates parses template sources and checks them: each is executed
// once with probe data, and the search output must contain the problem, the
// aggregation output the problem and every candidate's text (of two
// candidates; CheckAggregate checks the number a run reads).
func ParseTemplates(search, aggregate string) (*Templates, error) {
	return parseTrimmed(trimOneNewline(search), trimOneNewline(aggregate))
}

func parseTrimmed(search, aggregate string) (*Templates, error) {
	t := &Templates{searchSrc: search, aggSrc: aggregate, searchCRLF: search, aggCRLF: aggregate}
	var err error
	if t.search, err = template.New("search").Parse(t.searchSrc); err != nil {
		return nil, &TemplateError{Err: err}
	}
	if t.aggregate, err = template.New("aggregate").Parse(t.aggSrc); err != nil {
		return nil, &TemplateError{Aggregate: true, Err: err}
	}
	out, err := t.search1(probeProblem)
	if err != nil {
		return nil, &TemplateError{Err: err}
	}
	if !strings.Contains(out, probeProblem) {
		return nil, &TemplateError{Err: errors.New("output does not contain the problem ({{.Problem}})")}
	}
	if err := t.CheckAggregate(2); err != nil {
		return nil, err
	}
	return t, nil
}

// CheckAggregate executes the aggregation template once with probe data
// of n candidates (n >= 1), each with its own text, as a run whose
// aggregation prompts read n candidates renders it: the output must
// contain the problem and every candidate's text. A template that picks
// candidates by index, which shows only some of them or fails for fewer,
// is refused naming the candidates it leaves out (a *TemplateError).
func (t *Templates) CheckAggregate(n int) error {
	cands := make([]string, n)
	for i := range cands {
		cands[i] = fmt.Sprintf(probeCandidate, i+1)
	}
	out, err := t.aggregate1(probeProblem, cands)
	if err != nil {
		return &TemplateError{Aggregate: true, Err: fmt.Errorf("%w (with %d candidates)", err, n)}
	}
	if !strings.Contains(out, probeProblem) {
		return &TemplateError{Aggregate: true, Err: errors.New("output does not contain the problem ({{.Problem}})")}
	}
	var missing []string
	for i, c := range cands {
		if !strings.Contains(out, c) {
			missing = append(missing, strconv.Itoa(i+1))
		}
	}
	if len(missing) > 0 {
		return &TemplateError{Aggregate: true, Err: fmt.Errorf("output does not contain every candidate ({{range .Candidates}}{{.Text}}{{end}}): with %d candidates it lacks candidate %s", n, strings.Join(missing, ", "))}
	}
	return nil
}

// readTemplate returns the source in the template file at path, and
// that source with the CRLF line ends the file has (CRLFSources). Its
// error does not name the file (the *TemplateError that carries it
// does): a read error is the *fs.PathError's cause.
func readTemplate(path string) (src, crlf string, err error) {
	b, err := smallfile.Read(path, smallfile.Limit)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return "", "", err
	}
	if err := templateUTF8(b); err != nil {
		return "", "", err
	}
	crlf = templateText(b)
	return strings.ReplaceAll(crlf, "\r\n", "\n"), crlf, nil
}

// templateUTF8 refuses a template file that is not UTF-8 (Latin-1, or
// UTF-16 as Windows Notepad saves "Unicode"), as a data row is refused:
// its bytes would reach the tokenizer as text it cannot read.
func templateUTF8(b []byte) error {
	if off := invalidUTF8(b); off >= 0 {
		return fmt.Errorf("byte %d (0x%02X) is not valid UTF-8; spiral reads UTF-8 text: save the file as UTF-8", off+1, b[off])
	}
	return nil
}

// templateText is the source in a template file: without a leading
// UTF-8 byte order mark, which Windows editors write and which would
// otherwise open every prompt as U+FEFF, and one trailing newline.
func templateText(b []byte) string {
	return trimOneNewline(strings.TrimPrefix(string(b), "\uFEFF"))
}

func trimOneNewline(s string) string {
	if strings.HasSuffix(s, "\r\n") {
		return s[:len(s)-2]
	}
	return strings.TrimSuffix(s, "\n")
}

// CRLFSources returns the search and aggregation templates' sources with
// the CRLF line ends their files have, as versions that did not read
// them as LF took them (the sources themselves where they have none), so
// that the fingerprints those versions recorded of them are known.
func (t *Templates) CRLFSources() (search, aggregate string) { return t.searchCRLF, t.aggCRLF }

// SearchSource returns the search template's source.
func (t *Templates) SearchSource() string { return t.searchSrc }

// AggregateSource returns the aggregation template's source.
func (t *Templates) AggregateSource() string { return t.aggSrc }

// Search renders the search prompt for problem.
func (t *Templates) Search(problem string) (string, error) {
	out, err := t.search1(problem)
	if err != nil {
		return "", &TemplateError{Path: t.searchPath, Err: err}
	}
	return out, nil
}

// search1 is Search, its error text/template's.
func (t *Templates) search1(problem string) (string, error) {
	var sb strings.Builder
	err := t.search.Execute(&sb, SearchData{Problem: problem})
	return sb.String(), err
}

// Aggregate renders the aggregation prompt for problem and its candidate
// solutions, numbered from 1 in the given order.
func (t *Templates) Aggregate(problem string, candidates []string) (string, error) {
	out, err := t.aggregate1(problem, candidates)
	if err != nil {
		return "", &TemplateError{Aggregate: true, Path: t.aggPath, Err: err}
	}
	return out, nil
}

// aggregate1 is Aggregate, its error text/template's.
func (t *Templates) aggregate1(problem string, candidates []string) (string, error) {
	d := AggregateData{Problem: problem, Candidates: make([]Candidate, len(candidates))}
	for i, c := range candidates {
		d.Candidates[i] = Candidate{Number: i + 1, Text: c}
	}
	var sb strings.Builder
	err := t.aggregate.Execute(&sb, d)
	return sb.String(), err
}
