package report

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"sort"
	"time"

	"github.com/spiral-rl/spiral/model/atomicfile"
	"github.com/spiral-rl/spiral/rollout"
)

// ProblemsSuffix names, after the mode, the file in which a pass@k or
// sequential evaluation saves its finished problems as it goes
// (passk.problems.jsonl.partial beside passk.json): a JSON line of its
// EvalKey, then a ProblemRecord a line, appended. The report's commit
// removes it.
const ProblemsSuffix = ".problems.jsonl.partial"

// EvalKey is what determines an evaluation's results of a problem, as
// its report's meta records them: an interrupted evaluation's saved
// problems are resumed only by one of the same key. Label and Timestamp,
// which determine none, are not in it.
type EvalKey struct {
	Mode    Mode   `json:"mode"`
	Samples int    `json:"samples"`
	Model   string `json:"model"`
	// CheckpointDigest and ModelDigest are the meta's fingerprints of
	// what was evaluated, a checkpoint (its step and run settings with
	// its weights: Meta.CheckpointDigest) or a model: a model of the
	// same name in another directory, or retrained in place, is another
	// evaluation.
	CheckpointDigest string            `json:"checkpoint_digest,omitempty"`
	ModelDigest      string            `json:"model_digest,omitempty"`
	Dataset          string            `json:"dataset"`
	Seed             uint64            `json:"seed"`
	Extra            map[string]string `json:"extra"`
	ProblemIDs       []string          `json:"problem_ids"`
	ProblemsDigest   string            `json:"problems_digest"`
	// RSA is an RSA evaluation's configuration (Samples its
	// population); nil for the other modes.
	RSA *rollout.RSAConfig `json:"rsa,omitempty"`
	// Tokenizer fingerprints the tokenizer the prompts were tokenized
	// with (its tokenizer.json and chat template, as train records
	// it), whose ids a sequential or RSA evaluation saves: with
	// another, the prompts and the saved ids are other text. "" in
	// files of versions before it, which it does not refuse.
	Tokenizer string `json:"tokenizer,omitempty"`
	// Numerics records, flag by flag ("--gen-batch": "64"), the local
	// engine's settings that determine no result but may change the
	// last bits of the model's logits (eval records --gen-batch,
	// --gen-call-mib, --threads, --deterministic and the device, and
	// the ONNX Runtime library's version as "onnxruntime"), and so,
	// rarely, a sampled token. Diff does not compare them: a rerun with
	// others resumes (NumericsDiff). None on a serving engine, nor in
	// files of versions before it; "onnxruntime" none in files of the
	// versions before that.
	Numerics map[string]string `json:"numerics,omitempty"`
}

// KeyOf is the key of an evaluation of mode with the report meta m and
// samples samples a problem, less its tokenizer, which the meta does
// not record.
func KeyOf(mode Mode, m Meta, samples int) EvalKey {
	return EvalKey{Mode: mode, Samples: samples, Model: m.Model, CheckpointDigest: m.CheckpointDigest, ModelDigest: m.ModelDigest, Dataset: m.Dataset, Seed: m.Seed, Extra: m.Extra,
		ProblemIDs: m.ProblemIDs, ProblemsDigest: m.ProblemsDigest}
}

// Diff says how k, a saved evaluation's key, differs from now's: one
// phrase a field ("seed 1, not 2"), none where they are equal (k's
// tokenizer compared where k records one).
func (k EvalKey) Diff(now EvalKey) []string {
	var out []string
	field := func(name string, was, is any) {
		if was != is {
			out = append(out, fmt.Sprintf("%s %v, not %v", name, was, is))
		}
	}
	field("mode", k.Mode, now.Mode)
	if k.RSA == nil || now.RSA == nil { // an RSA key's is its --population
		field("samples", k.Samples, now.Samples)
	}
	field("model", k.Model, now.Model)
	field("checkpoint (checkpoint_digest)", k.CheckpointDigest, now.CheckpointDigest)
	field("model id", k.ModelDigest, now.ModelDigest)
	if k.Tokenizer != "" {
		field("tokenizer (--tokenizer)", k.Tokenizer, now.Tokenizer)
	}
	field("data", k.Dataset, now.Dataset)
	field("seed", k.Seed, now.Seed)
	switch was, is := k.RSA, now.RSA; {
	case was != nil && is != nil:
		// Each flag alone, so that the one to give is plain.
		field("--population", was.Population, is.Population)
		field("--subset", was.SubsetSize, is.SubsetSize)
		field("--rsa-steps", was.Steps, is.Steps)
		field("--candidate-tokens", was.CandidateTokens, is.CandidateTokens)
		if was.PromptLimit != is.PromptLimit {
			out = append(out, fmt.Sprintf("aggregation prompts of up to %d tokens (the model's context less --max-new-tokens), not %d", was.PromptLimit, is.PromptLimit))
		}
	case was != nil || is != nil:
		rsa := func(c *rollout.RSAConfig) string {
			if c == nil {
				return "none"
			}
			return fmt.Sprintf("--population %d --subset %d --rsa-steps %d", c.Population, c.SubsetSize, c.Steps)
		}
		field("rsa", rsa(was), rsa(is))
	}
	keys := slices.Sorted(maps.Keys(k.Extra))
	for key := range now.Extra {
		if _, ok := k.Extra[key]; !ok {
			keys = append(keys, key)
		}
	}
	sort.Strings(keys)
	for _, key := range keys {
		was, ok := k.Extra[key]
		if !ok {
			was = "none"
		}
		is, ok := now.Extra[key]
		if !ok {
			is = "none"
		}
		field(key, was, is)
	}
	switch {
	case !slices.Equal(k.ProblemIDs, now.ProblemIDs):
		out = append(out, fmt.Sprintf("%d problems of other ids or order, not these %d", len(k.ProblemIDs), len(now.ProblemIDs)))
	case k.ProblemsDigest != now.ProblemsDigest:
		out = append(out, "problems of other texts or answers (problems_digest)")
	}
	return out
}

// NumericsDiff says how k's Numerics, a saved evaluation's, differ from
// now's, one phrase a flag both record ("--gen-batch 64, not 32"), in
// the flags' order; none where neither records it.
func (k EvalKey) NumericsDiff(now EvalKey) []string {
	var out []string
	for _, flag := range slices.Sorted(maps.Keys(k.Numerics)) {
		if is, ok := now.Numerics[flag]; ok && is != k.Numerics[flag] {
			out = append(out, fmt.Sprintf("%s %s, not %s", flag, k.Numerics[flag], is))
		}
	}
	return out
}

// ProblemRecord is one finished problem of a saved evaluation: its index
// and id, the tokens its samples spent and each sample's grade.
type ProblemRecord struct {
	Problem int            `json:"problem"`
	ID      string         `json:"id"`
	Tokens  rollout.Tokens `json:"tokens"`
	Samples []SampleRecord `json:"samples"`
}

// SampleRecord is a sample's grade, what pass@k and majority@k read, and
// why it ended, which eval's note on cut traces counts; a sequential
// evaluation's keeps the ids it generated too, which its budget curve
// cuts.
type SampleRecord struct {
	Answer   string               `json:"answer"`
	Explicit bool                 `json:"explicit,omitempty"`
	Correct  bool                 `json:"correct,omitempty"`
	Finish   rollout.FinishReason `json:"finish"`
	Tokens   []int32              `json:"tokens,omitempty"`
}

// RecordOf is the record of p, a sampled problem whose id is id, with
// each sample's generated ids where tokens (a sequential evaluation's).
func RecordOf(p rollout.SampledProblem, id string, tokens bool) ProblemRecord {
	rec := ProblemRecord{Problem: p.Index, ID: id, Tokens: p.Tokens, Samples: make([]SampleRecord, len(p.Traces))}
	for j, tr := range p.Traces {
		v := tr.Verdict
		rec.Samples[j] = SampleRecord{Answer: v.Answer, Explicit: v.Explicit, Correct: v.Correct, Finish: tr.Finish}
		if tokens {
			rec.Samples[j].Tokens = tr.Tokens
		}
	}
	return rec
}

// Sampled is the problem rec records, as rollout.Evaluator.Resumed takes
// it: traces of its grades and finish reasons alone, and of the ids
// generated where it keeps them.
func (rec ProblemRecord) Sampled() rollout.SampledProblem {
	p := rollout.SampledProblem{Index: rec.Problem, Tokens: rec.Tokens, Traces: make([]rollout.Trace, len(rec.Samples))}
	for j, s := range rec.Samples {
		p.Traces[j] = rollout.Trace{Completion: rollout.Completion{Tokens: s.Tokens, Finish: s.Finish},
			Verdict: rollout.Verdict{Answer: s.Answer, Explicit: s.Explicit, Correct: s.Correct}}
	}
	return p
}

// problemsHeader is a saved evaluation's first line: its key and when it
// started (the report's timestamp, kept by a resumed evaluation).
type problemsHeader struct {
	Key     EvalKey   `json:"key"`
	Started time.Time `json:"started"`
}

// SavedProblems is what ReadProblems read of a saved evaluation.
type SavedProblems struct {
	Key      EvalKey
	Started  time.Time
	Problems []ProblemRecord
	// Cut says that the last line was cut short (a process killed while
	// appending it), and left out; intact is the length of the lines
	// before it, which AppendProblems keeps.
	Cut    bool
	intact int64
}

// ReadProblems reads the saved evaluation at path. A last line cut short
// (or that does not read, as a crash may leave it) is left out and said
// (Cut); a line with a field this version does not know is a
// *NewerError naming the line; any other line that does not read, a
// record of a problem index
// or id the key does not list, one of another number of samples than the
// key's or a problem recorded twice is an error naming the line.
func ReadProblems(path string) (*SavedProblems, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	s := &SavedProblems{}
	seen := map[int]bool{}
	for line, rest := 1, b; len(rest) > 0; line++ {
		text, next, whole := bytes.Cut(rest, []byte("\n"))
		last := len(next) == 0
		var err error
		var rec ProblemRecord
		if line == 1 {
			var h problemsHeader
			if err = savedUnmarshal(text, &h); err == nil && h.Key.Samples < 1 {
				err = fmt.Errorf("%d samples a problem", h.Key.Samples)
			}
			s.Key, s.Started = h.Key, h.Started
		} else if err = savedUnmarshal(text, &rec); err == nil {
			err = s.check(rec, seen)
		}
		if err == nil && !whole {
			err = errors.New("cut short")
		}
		var newer *NewerError
		if line > 1 && last && err != nil && !errors.As(err, &newer) {
			s.Cut = true
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: line %d: %w", path, line, err)
		}
		if line > 1 {
			s.Problems = append(s.Problems, rec)
			seen[rec.Problem] = true
		}
		s.intact += int64(len(text)) + 1
		rest = next
	}
	if s.intact == 0 {
		return nil, fmt.Errorf("%s: empty", path)
	}
	return s, nil
}

// check refuses rec, which is not a record of s's key, or of a problem
// seen already.
func (s *SavedProblems) check(rec ProblemRecord, seen map[int]bool) error {
	ids := s.Key.ProblemIDs
	switch {
	case rec.Problem < 0 || rec.Problem >= len(ids):
		return fmt.Errorf("problem %d of %d", rec.Problem, len(ids))
	case rec.ID != ids[rec.Problem]:
		return fmt.Errorf("problem %d has id %q, want %q", rec.Problem, rec.ID, ids[rec.Problem])
	case len(rec.Samples) != s.Key.Samples:
		return fmt.Errorf("problem %q has %d samples, want %d", rec.ID, len(rec.Samples), s.Key.Samples)
	case seen[rec.Problem]:
		return fmt.Errorf("problem %q recorded twice", rec.ID)
	}
	return nil
}

// NewerError is the error of a saved evaluation holding a field this
// version does not know, which a newer spiral's records: Err, the
// decoder's, names it.
type NewerError struct{ Err error }

func (e *NewerError) Error() string { return e.Err.Error() }
func (e *NewerError) Unwrap() error { return e.Err }

// savedUnmarshal is strictUnmarshal of what a saved evaluation holds: b
// that reads but for fields v does not have is a *NewerError.
func savedUnmarshal(b []byte, v any) error {
	err := strictUnmarshal(b, v)
	if err != nil && json.Unmarshal(b, v) == nil {
		return &NewerError{err}
	}
	return err
}

func strictUnmarshal(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("more than one JSON value")
	}
	return nil
}

// ProblemsWriter appends finished problems to a saved evaluation's file.
type ProblemsWriter struct {
	f *os.File
	w *bufio.Writer
}

// CreateProblems starts the saved evaluation at path, replacing any
// there: its header of key and started, written whole (atomicfile) and
// synced before any problem is appended.
func CreateProblems(path string, key EvalKey, started time.Time) (*ProblemsWriter, error) {
	h, err := json.Marshal(problemsHeader{Key: key, Started: started})
	if err != nil {
		return nil, fmt.Errorf("report: %s: %w", path, err)
	}
	if err := atomicfile.WriteFile(path, append(h, '\n'), 0o666); err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	return appendTo(path, int64(len(h))+1)
}

// AppendProblems goes on with the saved evaluation s read from path: a
// last line cut short is cut off, and problems are appended after the
// intact ones.
func AppendProblems(path string, s *SavedProblems) (*ProblemsWriter, error) {
	return appendTo(path, s.intact)
}

func appendTo(path string, size int64) (*ProblemsWriter, error) {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	if err := f.Truncate(size); err != nil {
		f.Close()
		return nil, fmt.Errorf("report: %s: %w", path, err)
	}
	if _, err := f.Seek(size, io.SeekStart); err != nil {
		f.Close()
		return nil, fmt.Errorf("report: %s: %w", path, err)
	}
	return &ProblemsWriter{f: f, w: bufio.NewWriterSize(f, 1<<16)}, nil
}

// RekeyProblems goes on with the saved evaluation s read from path as
// one of key, whose first problems are s's (an evaluation of a larger
// --limit that resumes it): the file is rewritten whole (atomicfile),
// its first line key with s's start, then s's intact problems, and
// problems are appended after them.
func RekeyProblems(path string, s *SavedProblems, key EvalKey) (*ProblemsWriter, error) {
	h, err := json.Marshal(problemsHeader{Key: key, Started: s.Started})
	if err != nil {
		return nil, fmt.Errorf("report: %s: %w", path, err)
	}
	b := bytes.NewBuffer(append(h, '\n'))
	enc := json.NewEncoder(b)
	for _, rec := range s.Problems {
		if err := enc.Encode(rec); err != nil {
			return nil, fmt.Errorf("report: %s: %w", path, err)
		}
	}
	if err := atomicfile.WriteFile(path, b.Bytes(), 0o666); err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	return appendTo(path, int64(b.Len()))
}

// Write appends recs, one line each, and syncs the file: once it
// returns, a crash keeps them.
func (p *ProblemsWriter) Write(recs []ProblemRecord) error {
	enc := json.NewEncoder(p.w)
	for _, rec := range recs {
		if err := enc.Encode(rec); err != nil {
			return fmt.Errorf("report: %s: %w", p.f.Name(), err)
		}
	}
	if err := errors.Join(p.w.Flush(), p.f.Sync()); err != nil {
		return fmt.Errorf("report: %s: %w", p.f.Name(), err)
	}
	return nil
}

// Close closes the file.
func (p *ProblemsWriter) Close() error { return p.f.Close() }

// Describe says what s holds, for a refusal or a note: "450 of the 500
// problems of an interrupted passk evaluation".
func (s *SavedProblems) Describe() string {
	return fmt.Sprintf("%d of the %s of an interrupted %s evaluation", len(s.Problems), rollout.Plural(len(s.Key.ProblemIDs), "problem"), s.Key.Mode)
}
