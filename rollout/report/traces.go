package report

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/spiral-rl/spiral/data"
	"github.com/spiral-rl/spiral/model/atomicfile"
	"github.com/spiral-rl/spiral/rollout"
)

// TraceRecord is one line of an evaluation's traces file (`spiral eval
// --traces`): a judged trace with where it came from.
type TraceRecord struct {
	// Step is the RSA step (0: search traces; always 0 for passk and
	// sequential).
	Step int `json:"step"`
	// Problem is the problem's index in the evaluation, ID its id.
	Problem int    `json:"problem"`
	ID      string `json:"id"`
	// Sample is the trace's index among its problem's samples (its member
	// index in an RSA population).
	Sample int `json:"sample"`
	// Candidates are, at RSA steps >= 1, the samples of step-1 of the same
	// problem this trace aggregated, in prompt order.
	Candidates []int `json:"candidates,omitempty"`
	// Text is the decoded completion, Tokens its length, Finish why it
	// ended.
	Text   string               `json:"text"`
	Tokens int                  `json:"tokens"`
	Finish rollout.FinishReason `json:"finish"`
	// Answer is the extracted answer ("" when none), Explicit whether it
	// was stated explicitly, Correct the grade against Gold.
	Answer   string `json:"answer"`
	Explicit bool   `json:"explicit"`
	Correct  bool   `json:"correct"`
	Gold     string `json:"gold"`
}

// TraceWriter streams TraceRecords as JSON lines to a file that appears
// under its name only once the stage of the evaluation's outputs it is
// put in (Stage) has committed (until then it is path + ".partial",
// which a failed evaluation leaves behind).
type TraceWriter struct {
	path     string
	f        *os.File
	w        *bufio.Writer
	problems []data.Problem
	closed   bool
}

// NewTraceWriter starts the traces file at path for an evaluation of
// problems.
func NewTraceWriter(path string, problems []data.Problem) (*TraceWriter, error) {
	// An earlier .partial file is removed, not truncated: it may be a link
	// of the traces file a killed commit moved in (Stage), which stays.
	if err := os.Remove(path + ".partial"); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("report: traces: %w", err)
	}
	f, err := os.OpenFile(path+".partial", os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o666)
	if err != nil {
		return nil, fmt.Errorf("report: traces: %w", err)
	}
	return &TraceWriter{path: path, f: f, w: bufio.NewWriterSize(f, 1<<20), problems: problems}, nil
}

// Write appends a batch of traces; it is a rollout.TraceSink.
func (t *TraceWriter) Write(batch []rollout.TracedTrace) error {
	enc := json.NewEncoder(t.w)
	for _, tt := range batch {
		if tt.Problem < 0 || tt.Problem >= len(t.problems) {
			return fmt.Errorf("report: traces: problem %d of %d", tt.Problem, len(t.problems))
		}
		pb := t.problems[tt.Problem]
		v := tt.Trace.Verdict
		rec := TraceRecord{Step: tt.Step, Problem: tt.Problem, ID: pb.ID, Sample: tt.Sample, Candidates: tt.Candidates,
			Text: tt.Trace.Text, Tokens: len(tt.Trace.Tokens), Finish: tt.Trace.Finish,
			Answer: v.Answer, Explicit: v.Explicit, Correct: v.Correct, Gold: pb.Answer}
		if err := enc.Encode(rec); err != nil {
			return fmt.Errorf("report: traces: %s: %w", t.f.Name(), err)
		}
	}
	return nil
}

// Stage flushes the file, syncs it and puts it under its final name in
// dir, a stage (atomicfile.Stage) of its own directory that moves it in
// with the report it belongs to: linked there (copied where the file
// system has no hard links), not moved, so that the .partial file stays
// until the stage's commit, which names it, removes it, and a commit
// that fails before it moves anything, or a process killed before the
// commit, leaves the traces as .partial rather than in the discarded
// stage.
func (t *TraceWriter) Stage(dir string) error {
	t.closed = true
	err := errors.Join(t.w.Flush(), t.f.Sync(), t.f.Close())
	if err == nil {
		err = linkOrCopy(t.f.Name(), filepath.Join(dir, filepath.Base(t.path)))
	}
	if err == nil {
		err = atomicfile.SyncDir(dir)
	}
	if err != nil {
		return fmt.Errorf("report: traces: %w", err)
	}
	return nil
}

// linkOrCopy makes dst a hard link of src, or where that fails (a file
// system without hard links) a copy of it.
func linkOrCopy(src, dst string) error {
	if os.Link(src, dst) == nil {
		return nil
	}
	f, err := os.Open(src)
	if err != nil {
		return err
	}
	defer f.Close()
	return atomicfile.Write(dst, 0o666, func(w io.Writer) error {
		_, err := io.Copy(w, f)
		return err
	})
}

// Abort closes the file, leaving the .partial file behind; after Stage
// it does nothing.
func (t *TraceWriter) Abort() {
	if !t.closed {
		t.closed = true
		_ = t.w.Flush()
		_ = t.f.Close()
	}
}

// ReadTraces reads a traces file written by TraceWriter, rejecting lines
// with unknown fields.
func ReadTraces(r io.Reader) ([]TraceRecord, error) {
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	var out []TraceRecord
	for line := 1; ; line++ {
		var rec TraceRecord
		if err := dec.Decode(&rec); err == io.EOF {
			return out, nil
		} else if err != nil {
			return nil, fmt.Errorf("report: traces: record %d: %w", line, err)
		}
		out = append(out, rec)
	}
}
