package main

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"unicode/utf8"

	"github.com/spiral-rl/spiral/data"
	"github.com/spiral-rl/spiral/data/synth"
	"github.com/spiral-rl/spiral/model/tokenizer"
	"github.com/spiral-rl/spiral/rl"
	"github.com/spiral-rl/spiral/rollout"
)

// Sizes of the embedded task's problem sets.
const (
	embeddedTrainProblems = 2000
	embeddedEvalProblems  = 128
)

// embeddedEvalSet is the embedded task's problems eval takes, from the
// head of its test split: the first embeddedEvalProblems, or the first
// limit where that is more (the first N of the split are the same
// problems whatever N, as data synth --problems N writes them), or all
// of them where the split has fewer than limit.
func embeddedEvalSet(limit int) (*data.Dataset, error) {
	ds, err := synth.EmbeddedSplit(synth.Test, max(limit, embeddedEvalProblems))
	var few *synth.TooFewError
	if errors.As(err, &few) {
		return synth.EmbeddedSplit(synth.Test, few.Found)
	}
	return ds, err
}

// embeddedTestName names the embedded task's test split in reports, as
// eval's --data names a file.
const embeddedTestName = "embedded:synth-test"

// templateSet is the prompt templates of a command.
type templateSet struct {
	*data.Templates
}

// digest fingerprints the search and aggregation templates' sources as
// read (32 hex digits), which a training run records among its settings,
// so that a rerun with other prompts is noticed, and an evaluation in its
// report's meta.extra. Checkpoints record it: its definition stays, or
// unchanged templates would no longer resume their runs (the sources
// read CRLF line ends as LF since crlfDigest's versions: a run those
// recorded resumes by crlfDigest).
func (t templateSet) digest() string {
	return templatesDigest(t.SearchSource(), t.AggregateSource())
}

// prints returns the templates' fingerprints that a training run
// records: digest, and each template's source's own (sourceDigest), so
// that a rerun compares the templates its algorithm reads.
func (t templateSet) prints() rl.TemplatePrints {
	return rl.TemplatePrints{Both: t.digest(), Search: sourceDigest(t.SearchSource()), Aggregate: sourceDigest(t.AggregateSource())}
}

// sourceDigest fingerprints one template's source as read (32 hex
// digits).
func sourceDigest(src string) string {
	h := sha256.Sum256([]byte(src))
	return hex.EncodeToString(h[:16])
}

// crlfDigest is digest as versions that kept a template file's CRLF line
// ends in its prompts took it, which their runs' checkpoints record:
// "" where it is digest's (no file with CRLF line ends).
func (t templateSet) crlfDigest() string {
	d := templatesDigest(t.CRLFSources())
	if d == t.digest() {
		return ""
	}
	return d
}

// templatesDigest is digest of the sources search and aggregate.
func templatesDigest(search, aggregate string) string {
	h := sha256.New()
	for _, src := range []string{search, aggregate} {
		fmt.Fprintf(h, "%d:%s", len(src), src) // lengths first: no two pairs hash alike
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// check refuses a template file given that is not there, cannot be
// opened or is a directory, named by its flag and path: a bad value of
// the flag, a usage error as a file refused for its content. Commands
// call it before they look for ONNX Runtime (checkInputs), and
// loadTemplates again.
func (f templateFlags) check() error {
	var errs []error
	for _, t := range []struct{ flag, path string }{{"--search-template", f.search}, {"--aggregate-template", f.aggregate}} {
		if t.path != "" {
			errs = append(errs, inputFile(t.flag, t.path, "a template file"))
		}
	}
	return errors.Join(errs...)
}

// checkDataFile refuses a data file flag's path that is not there,
// cannot be opened or is a directory (a usage error naming the flag),
// "" being none given.
func checkDataFile(flag, path string) error {
	if path == "" {
		return nil
	}
	return inputFile(flag, path, "a data file (JSONL, JSON or Parquet)")
}

// loadTemplates returns the templates the flags name; a template not
// named is the embedded task's compact one when compact (the model or the
// problems are the embedded task's: the embedded model has read no other
// prompt, and its tokenizer knows only the task's characters), else the
// default (RSA-style) one.
func loadTemplates(compact bool, f templateFlags) (templateSet, error) {
	if err := f.check(); err != nil {
		return templateSet{}, err
	}
	var t *data.Templates
	var err error
	if compact {
		t, err = synth.Templates().Override(f.search, f.aggregate)
	} else {
		t, err = data.LoadTemplates(f.search, f.aggregate)
	}
	// A file refused for its content, or that could not be read, is named
	// by its flag too: bad input of a flag, a usage error as the run-size
	// check's (checkAggregateTemplate).
	var te *data.TemplateError
	if errors.As(err, &te) && te.Path != "" {
		flag := "--search-template"
		if te.Aggregate {
			flag = "--aggregate-template"
		}
		return templateSet{}, usageError{fmt.Errorf("%s %s: %w", flag, te.Path, te.Err)}
	}
	return templateSet{t}, err
}

// subsetSize is a number of candidates that a command's aggregation
// prompts read, said as the flags that set it.
type subsetSize struct {
	what string
	n    int
}

// checkAggregateTemplate refuses (a usage error) an aggregation template
// that, rendered with one of sizes' numbers of candidates, fails or does
// not show every candidate (see data.Templates.CheckAggregate), as one
// that indexes .Candidates does: it would drop candidates from every
// prompt, or fail in the middle of the run.
func checkAggregateTemplate(tmpl templateSet, f templateFlags, sizes ...subsetSize) error {
	name := "the built-in aggregation template"
	if f.aggregate != "" {
		name = "--aggregate-template " + f.aggregate
	}
	for _, s := range sizes {
		if err := tmpl.CheckAggregate(s.n); err != nil {
			var te *data.TemplateError
			if errors.As(err, &te) {
				err = te.Err // name says which template
			}
			return usageError{fmt.Errorf("%s with %s: %w", name, s.what, err)}
		}
	}
	return nil
}

// loadProblems loads the problem file that flag names and reports the
// rows it skipped on warn, one line each (the first maxReported of them,
// then a count), and in one line each the rows whose repeated id was
// made unique, those whose gold answer's braces do not balance and those
// that hold a field detection takes before the one read
// (data.Dataset.OtherFields). A path that is not there, or is a directory, is a usage
// error naming the flag; its other errors name flag too.
func loadProblems(flag, path string, opt data.LoadOptions, warn io.Writer) (*data.Dataset, error) {
	if err := checkDataFile(flag, path); err != nil {
		return nil, err
	}
	ds, err := data.Load(path, opt)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", flag, err)
	}
	reportSkipped(warn, ds.Skipped(), func(n int) string {
		return fmt.Sprintf("%s: %d more rows skipped (spiral data inspect lists them all)", path, n)
	})
	n, renamed := ds.RenamedIDs()
	warnRows(warn, path, n, renamed.String(), "a row repeats the id of an earlier row and was given another", "rows repeat the id of an earlier row and were given others")
	n, unbalanced := ds.UnbalancedAnswers()
	warnRows(warn, path, n, unbalanced, "a row's gold answer has unbalanced braces, which no answer is graded right against", "rows' gold answers have unbalanced braces, which no answer is graded right against")
	for _, o := range ds.OtherFields() {
		warnRows(warn, path, o.Rows, o.First, "a row holds "+o.String(), "rows hold "+o.String())
	}
	return ds, nil
}

// warnRows warns once of the n rows of the data file path that one
// check found, naming first, the first of them: "a row ..." (one) or
// "N rows ..." (many).
func warnRows(warn io.Writer, path string, n int, first, one, many string) {
	switch n {
	case 0:
	case 1:
		fmt.Fprintf(warn, "spiral: warning: %s: %s: %s\n", path, one, first)
	default:
		fmt.Fprintf(warn, "spiral: warning: %s: %d %s (the first: %s)\n", path, n, many, first)
	}
}

const maxReported = 10

// absData is the absolute path of a data file flag's path, which a run's
// settings record so that it resumes from another working directory;
// "" for none (the embedded task).
func absData(path string) (string, error) {
	if path == "" {
		return "", nil
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", fmt.Errorf("data %s: %w", path, err)
	}
	return abs, nil
}

// evalProblemsError is the usage error of an --eval-problems n that the
// embedded task could not give: where it holds fewer held-out problems,
// how many (its operands are no flag of train or sft).
func evalProblemsError(n int, err error) error {
	var few *synth.TooFewError
	if errors.As(err, &few) {
		return usageError{fmt.Errorf("--eval-problems %d: the embedded task's %s split has %d problems: want at most that", n, few.Split, few.Found)}
	}
	return usageError{fmt.Errorf("--eval-problems %d: %w", n, err)}
}

// reportSkipped warns of the skipped rows, one line each, the first
// maxReported of them, then of the rest with more(their count), which
// names where they are.
func reportSkipped(warn io.Writer, rows []data.SkippedRow, more func(n int) string) {
	for i, s := range rows {
		if i == maxReported {
			fmt.Fprintf(warn, "spiral: warning: %s\n", more(len(rows)-maxReported))
			return
		}
		fmt.Fprintf(warn, "spiral: warning: skipped %s: %s\n", s.Source, s.Reason)
	}
}

// tooLong says that n problems, all a command was given, are too long
// for the model: "are all too long", or of one "is too long".
func tooLong(n int) string {
	if n == 1 {
		return "is too long"
	}
	return "are all too long"
}

// fitContext drops the problems whose search prompt cannot be completed
// within the model's context (c.ContextLength, when known): the prompt
// plus c.MaxNewTokens must fit. With candidates > 0 (the candidates of
// the command's aggregation prompts; 0 when it renders none) the
// aggregation prompt must fit too with candidates empty candidates plus
// one token for each: longer ones get their candidates cut further, down
// to one token, or to no text where a BPE tokenizer's token costs the
// rendered prompt more than one (see rollout.PipelineConfig.PromptLimit),
// so a problem kept never stops the run at the first step that draws
// it. Each dropped problem is reported on warn with its source row.
func fitContext(s *modelSession, tmpl templateSet, problems []data.Problem, c rollout.SamplerConfig, candidates int, warn io.Writer) ([]data.Problem, error) {
	if c.ContextLength == 0 {
		return problems, nil
	}
	pr := s.prompter(tmpl)
	var kept []data.Problem
	var skipped []data.SkippedRow
	for _, p := range problems {
		search, agg, err := promptPositions(pr, p, candidates)
		if err != nil {
			return nil, err
		}
		if need := search + c.MaxNewTokens; need > c.ContextLength {
			skipped = append(skipped, data.SkippedRow{Source: p.Source,
				Reason: fmt.Sprintf("search prompt of %d tokens + %d new tokens need %d positions; the model has %d (--max-new-tokens)", search, c.MaxNewTokens, need, c.ContextLength)})
			continue
		}
		if need := agg + c.MaxNewTokens; candidates > 0 && need > c.ContextLength {
			skipped = append(skipped, data.SkippedRow{Source: p.Source,
				Reason: fmt.Sprintf("aggregation prompt of %d tokens with its %d candidates empty + a token of each + %d new tokens need %d positions; the model has %d (--max-new-tokens)", agg-candidates, candidates, c.MaxNewTokens, need, c.ContextLength)})
			continue
		}
		kept = append(kept, p)
	}
	reportSkipped(warn, skipped, func(n int) string {
		return fmt.Sprintf("%d more problems skipped, too long for the model's %d positions", n, c.ContextLength)
	})
	return kept, nil
}

// promptPositions returns the positions that problem p's prompts take
// before their new tokens, as fitContext counts them: its search
// prompt's tokens, and with candidates > 0 its aggregation prompt's with
// candidates empty candidates plus a token of each (0 with none).
func promptPositions(pr rollout.ChatPrompter, p data.Problem, candidates int) (search, agg int, err error) {
	prompt, err := pr.SearchPrompt(p.Problem)
	if err != nil {
		return 0, 0, fmt.Errorf("search prompt of problem %q (%s): %w", p.ID, p.Source, err)
	}
	if candidates == 0 {
		return len(prompt), 0, nil
	}
	aggPrompt, err := pr.AggregatePrompt(p.Problem, make([]string, candidates))
	if err != nil {
		return 0, 0, fmt.Errorf("aggregation prompt of problem %q (%s): %w", p.ID, p.Source, err)
	}
	return len(prompt), len(aggPrompt) + candidates, nil
}

// usableDigest returns the content id (data.ProblemsDigest) that the
// problems fitContext keeps of problems (with candidates) would have
// were n of them kept, whatever the context and --max-new-tokens: a
// context keeps the problems whose prompts take at most so many
// positions (promptPositions), so n of them are those whose prompts take
// the fewest, in their order; "" where no context keeps n (the n-th
// fewest positions are those of a problem beyond it too).
func usableDigest(s *modelSession, tmpl templateSet, problems []data.Problem, candidates, n int) (string, error) {
	if n <= 0 || n > len(problems) {
		return "", nil
	}
	pr := s.prompter(tmpl)
	needs := make([]int, len(problems))
	for i, p := range problems {
		search, agg, err := promptPositions(pr, p, candidates)
		if err != nil {
			return "", err
		}
		needs[i] = max(search, agg)
	}
	sorted := slices.Sorted(slices.Values(needs))
	limit := sorted[n-1]
	if n < len(sorted) && sorted[n] == limit {
		return "", nil
	}
	var kept []data.Problem
	for i, p := range problems {
		if needs[i] <= limit {
			kept = append(kept, p)
		}
	}
	return data.ProblemsDigest(kept), nil
}

// lostWhy says why a tokenizer loses a character (IndexLost).
const lostWhy = "a BPE model whose unk_token is not in its vocab, or a Unigram model without unk_id"

// refuseLost refuses the prompts that the model's tokenizer would
// encode to no token (tokenizer.Tokenizer.IndexLost: a character that
// its model has no id for and no unknown token to give fails the native
// library's whole text): a template's own text, rendered as
// warnUnreadable renders it, naming the flag that replaces the template,
// else the problems whose text holds such a character (a count and the
// first, with the character and its byte). Each would be fed to the
// model as no token at all.
func refuseLost(s *modelSession, tmpl templateSet, problems []data.Problem, candidates int) error {
	search, err := tmpl.Search("")
	if err != nil {
		return err
	}
	templates := []struct{ name, flag, text string }{{"search", "--search-template", search}}
	if candidates > 0 {
		agg, err := tmpl.Aggregate("", make([]string, candidates))
		if err != nil {
			return err
		}
		templates = append(templates, struct{ name, flag, text string }{"aggregation", "--aggregate-template", agg})
	}
	for _, t := range templates {
		if at := s.tok.IndexLost(t.text); at >= 0 {
			r, _ := utf8.DecodeRuneInString(t.text[at:])
			return fmt.Errorf("the %s template has %q (byte %d of its text), which the model's tokenizer %s has no id for and no unknown token to give (%s): it encodes every prompt of the template to no token; give one it can encode (%s)",
				t.name, r, at, s.tokenizer, lostWhy, t.flag)
		}
	}
	var first *data.Problem
	firstAt, count := 0, 0
	for i := range problems {
		if at := s.tok.IndexLost(problems[i].Problem); at >= 0 {
			if first == nil {
				first, firstAt = &problems[i], at
			}
			count++
		}
	}
	if count == 0 {
		return nil
	}
	r, _ := utf8.DecodeRuneInString(first.Problem[firstAt:])
	hold := "hold"
	if count == 1 {
		hold = "holds"
	}
	return fmt.Errorf("%d of %s %s a character that the model's tokenizer %s has no id for and no unknown token to give (%s): it encodes their prompts to no token; first %s: %q (byte %d) in %q",
		count, rollout.Plural(len(problems), "problem"), hold, s.tokenizer, lostWhy, first.Source, r, firstAt, first.Problem)
}

// countID counts the occurrences of id in ids.
func countID(ids []int32, id int32) int {
	n := 0
	for _, x := range ids {
		if x == id {
			n++
		}
	}
	return n
}

// warnUnreadable reports on warn the prompt text that the model's
// tokenizer maps to its unknown token, which the model cannot read: the
// templates' own text (naming the flag that replaces the template), else
// the problems whose text holds such characters (a count and the
// first one). The aggregation template is rendered with candidates empty
// candidates, as many as the command's aggregation prompts read (checked
// by checkAggregateTemplate), or not at all when candidates is 0 (the
// command renders no aggregation prompt). A tokenizer without an unknown
// token (byte-level BPE) reads everything, and nothing is reported.
// Text that the tokenizer encodes to no token at all is refused first
// (refuseLost).
func warnUnreadable(s *modelSession, tmpl templateSet, problems []data.Problem, candidates int, warn io.Writer) error {
	if err := refuseLost(s, tmpl, problems, candidates); err != nil {
		return err
	}
	unk, ok := s.tok.TokenID(tokenizer.UnknownToken)
	if !ok {
		return nil
	}
	unknown := func(ids []int32) int { return countID(ids, unk) }
	pr := s.prompter(tmpl)
	search, err := pr.SearchPrompt("")
	if err != nil {
		return err
	}
	var agg []int32
	if candidates > 0 {
		if agg, err = pr.AggregatePrompt("", make([]string, candidates)); err != nil {
			return err
		}
	}
	for _, t := range []struct {
		name, flag string
		n          int
	}{{"search", "--search-template", unknown(search)}, {"aggregation", "--aggregate-template", unknown(agg)}} {
		if t.n > 0 {
			fmt.Fprintf(warn, "spiral: warning: the %s template has %s the model's tokenizer does not know (%s), which the model cannot read; give one it was trained on (%s)\n",
				t.name, rollout.Plural(t.n, "character"), tokenizer.UnknownToken, t.flag)
		}
	}
	// A problem's own text is checked, not its search prompt, so that an
	// unreadable template, which every prompt holds, does not hide data
	// the tokenizer cannot read either (a synthetic-task tokenizer on
	// real problems), which another template would not mend.
	var first *data.Problem
	count := 0
	for i := range problems {
		if unknown(s.tok.Encode(problems[i].Problem)) > 0 {
			if first == nil {
				first = &problems[i]
			}
			count++
		}
	}
	if count > 0 {
		hold := "hold"
		if count == 1 {
			hold = "holds"
		}
		fmt.Fprintf(warn, "spiral: warning: %d of %s %s characters the model's tokenizer does not know (%s), first %s: %q\n",
			count, rollout.Plural(len(problems), "problem"), hold, tokenizer.UnknownToken, first.Source, first.Problem)
	}
	return nil
}
