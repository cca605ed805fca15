package rl

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spiral-rl/spiral/rollout/report/tfevents"
)

// TensorBoardDir is the directory of a run's TensorBoard event files
// (spiral train and sft --tensorboard, spiral tensorboard).
const TensorBoardDir = "tensorboard"

// SFTFinishedTensorBoardDir holds, beside TensorBoardDir, the event
// files of a finished sft run while a run that starts over in its
// directory (spiral sft --overwrite) has not replaced its model and log
// yet (setAsideFinishedEvents); TensorBoard shows them as a run of their
// own.
const SFTFinishedTensorBoardDir = "tensorboard-finished"

// unmeasured are the figures of a metrics.jsonl line that a step which
// trained nothing (no_update) writes as zeros without measuring them:
// its loss, entropy, gradient norm and rate, and the statistics of the
// advantages of its trained samples, of which it has none.
var unmeasured = []string{"loss", "entropy", "entropy_search", "grad_norm", "lr", "adv_mean", "adv_std", "adv_min", "adv_max"}

// unappliedRate is the figure of a train or sft log line whose update was
// skipped for a non-finite gradient norm, which applied no rate and
// writes its lr as 0 ("update_skipped" and "lr": 0); an update skipped
// for an overflowing AdamW step writes the rate it tried, which stays.
func unappliedRate(updateSkipped string, lr float64) []string {
	if updateSkipped != "" && lr == 0 {
		return []string{"lr"}
	}
	return nil
}

// jsonScalars returns the numbers of the JSON object line as scalars, in
// the order they appear: a nested object's under its key and a slash
// ("search/reward"), an array's elements under their index from 1
// ("aggregate_rounds/1/reward"). Strings, booleans and nulls (a figure
// that was not finite) are left out, and so are the top-level "step"
// (the event's step) and the top-level keys in skip. A key an object has
// twice counts once, with its last value, as encoding/json reads it.
func jsonScalars(line []byte, skip []string) ([]tfevents.Scalar, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(line, &top); err != nil || top == nil {
		if err == nil {
			err = errors.New("null")
		}
		return nil, fmt.Errorf("want a JSON object: %w", err)
	}
	var out []tfevents.Scalar
	var walk func(tag string, v json.RawMessage) error
	walk = func(tag string, v json.RawMessage) error {
		v = bytes.TrimSpace(v)
		switch {
		case len(v) == 0:
		case v[0] == '{':
			fields, err := objectFields(v)
			if err != nil {
				return err
			}
			for _, f := range fields {
				if tag == "" && (f.key == "step" || slices.Contains(skip, f.key)) {
					continue
				}
				sub := f.key
				if tag != "" {
					sub = tag + "/" + f.key
				}
				if err := walk(sub, f.value); err != nil {
					return err
				}
			}
		case v[0] == '[':
			var elems []json.RawMessage
			if err := json.Unmarshal(v, &elems); err != nil {
				return err
			}
			for i, e := range elems {
				if err := walk(tag+"/"+strconv.Itoa(i+1), e); err != nil {
					return err
				}
			}
		case v[0] == '-' || v[0] >= '0' && v[0] <= '9':
			f, err := strconv.ParseFloat(string(v), 64)
			if err != nil {
				return fmt.Errorf("%s: %w", tag, err)
			}
			out = append(out, tfevents.Scalar{Tag: tag, Value: float32(f)})
		}
		return nil
	}
	return out, walk("", line)
}

// field is one member of a JSON object.
type field struct {
	key   string
	value json.RawMessage
}

// objectFields returns the members of the JSON object b in the order of
// their first appearance, each key once with its last value.
func objectFields(b []byte) ([]field, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	if _, err := dec.Token(); err != nil { // {
		return nil, err
	}
	var fields []field
	at := map[string]int{}
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, _ := k.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		if i, ok := at[key]; ok {
			fields[i].value = v
			continue
		}
		at[key] = len(fields)
		fields = append(fields, field{key, v})
	}
	return fields, nil
}

// metricsEvent is a metrics.jsonl line as an event: every number of the
// line (jsonScalars), without the figures that are undefined there but
// written as 0, which TensorBoard would draw as zeros (as plot leaves out
// an unmeasured entropy): the loss, entropy, gradient norm, learning
// rate and advantage statistics of a step that trained nothing
// (decodeMetrics: no_update, or "examples": 0 in a line of an older
// version; unmeasured), and the rate of an update skipped for a
// non-finite gradient norm (unappliedRate), and the aggregate phase of a
// step without aggregation traces (GRPO's: its reward, lengths and rate
// written as 0 of no trace).
func metricsEvent(line []byte, wall float64) (tfevents.Event, error) {
	m, err := decodeMetrics(line)
	if err != nil {
		return tfevents.Event{}, err
	}
	skip := unappliedRate(m.UpdateSkipped, m.LR)
	if m.NoUpdate {
		skip = unmeasured
	}
	if m.Aggregate.Traces == 0 {
		skip = append(slices.Clone(skip), "aggregate")
	}
	s, err := jsonScalars(line, skip)
	return tfevents.Event{Wall: wall, Step: int64(m.Step), Scalars: s}, err
}

// evalEvent is an eval.jsonl line as an event: its pass@k and majority@k
// at each k, as heldout/pass@K and heldout/majority@K, but majority@1,
// the vote of one sample, which is pass@1.
func evalEvent(line []byte, wall float64) (tfevents.Event, error) {
	var e struct {
		Step *int `json:"step"`
		EvalLine
	}
	if err := json.Unmarshal(line, &e); err != nil {
		return tfevents.Event{}, err
	}
	if e.Step == nil || *e.Step < 0 {
		return tfevents.Event{}, errors.New(`no "step" >= 0: want a held-out evaluation, as train writes them`)
	}
	if err := e.checkPoints(); err != nil {
		return tfevents.Event{}, err
	}
	ev := tfevents.Event{Wall: wall, Step: int64(*e.Step)}
	for _, p := range e.Points {
		k := strconv.Itoa(p.K)
		ev.Scalars = append(ev.Scalars, tfevents.Scalar{Tag: "heldout/pass@" + k, Value: float32(p.PassAtK)})
		if p.K > 1 {
			ev.Scalars = append(ev.Scalars, tfevents.Scalar{Tag: "heldout/majority@" + k, Value: float32(p.MajorityAtK)})
		}
	}
	return ev, nil
}

// sftEvent is an sft.jsonl line, a step's or an evaluation's, as an
// event: every number of the line (jsonScalars) but the rate of an update
// skipped for a non-finite gradient norm, written as 0 (unappliedRate).
func sftEvent(line []byte, wall float64) (tfevents.Event, error) {
	var s struct {
		Step          *int    `json:"step"`
		UpdateSkipped string  `json:"update_skipped"`
		LR            float64 `json:"lr"`
	}
	if err := json.Unmarshal(line, &s); err != nil {
		return tfevents.Event{}, err
	}
	if s.Step == nil || *s.Step < 1 {
		return tfevents.Event{}, errors.New(`no "step" >= 1: want an sft step's or evaluation's line, as sft writes them`)
	}
	sc, err := jsonScalars(line, unappliedRate(s.UpdateSkipped, s.LR))
	return tfevents.Event{Wall: wall, Step: int64(*s.Step), Scalars: sc}, err
}

// tensorBoardLog is a run's live TensorBoard log, one event a log line
// (nil: none). Its failures stop no training: the first warns and ends
// the log (w nil), and the run goes on without it.
type tensorBoardLog struct {
	w *tfevents.Writer
	// log is the run's JSON log, dir its directory and warn where the
	// failure's warning goes.
	log, dir string
	warn     io.Writer
}

// openTensorBoardLog cuts spiral's event files in dir/TensorBoardDir
// back to the step kept (-1: every event goes), as the run's JSON logs
// were cut, so that no event describes weights the run no longer has,
// whether or not this run logs to TensorBoard. With on, it starts a new
// event file there, which first gets the scalars of the logs' lines
// (logged, from the JSON log log) that the files left lack at their
// step (a run resumed with --tensorboard whose earlier part, or an
// evaluation of the step it resumed, ran without it), so that the
// curves have every logged step once. It only shows the training, and
// stops none: a file that cannot be read as an event file is left as it
// is, with a warning to warn, and a log that cannot be started (a
// tensorboard directory that cannot be written, a full disk) warns and
// gives the run no log (tensorBoardLog.fail). The events of a damaged
// file before its damage, which both of TensorBoard's loaders read, are
// not written again; those after it are (tfevents.Decode): the Python
// loader (--load_fast=false) stops at the damage, and the default one
// (rustboard), which reads on past a damaged record that still parses,
// takes the values of the new file, named after it (its steps of a tag
// replace those it read from that step on).
func openTensorBoardLog(dir string, on bool, kept int, log string, logged func() ([]tfevents.Event, error), warn io.Writer) *tensorBoardLog {
	tb := filepath.Join(dir, TensorBoardDir)
	var l *tensorBoardLog
	if on {
		l = &tensorBoardLog{log: log, dir: dir, warn: warn}
	}
	files, err := tfevents.Files(tb)
	if err != nil {
		if on {
			l.fail(err)
			return l
		}
		fmt.Fprintf(warn, "spiral: warning: %v: event files there are not cut back to the step resumed, as the logs were\n", err)
	}
	have := map[stepTag]bool{}
	for _, f := range files {
		events, err := tfevents.Truncate(f, int64(kept))
		if err != nil {
			shown := fmt.Sprintf("steps past %d twice", kept)
			if kept < 0 {
				shown = "the steps of the run before, which this one starts over from its beginning, beside this one's"
			}
			fmt.Fprintf(warn, "spiral: warning: %v: left as it is, so TensorBoard may show %s (remove the file to drop them)\n", err, shown)
			if b, rerr := os.ReadFile(f); rerr == nil {
				_, events, _, _ = tfevents.Decode(b)
			}
		}
		for _, e := range events {
			for _, s := range e.Scalars {
				have[stepTag{e.Step, s.Tag}] = true
			}
		}
	}
	if !on {
		return nil
	}
	var backfill []tfevents.Event
	if kept >= 0 {
		events, err := logged()
		if err != nil {
			l.fail(err)
			return l
		}
		for _, e := range events {
			missing := e
			missing.Scalars = nil
			for _, s := range e.Scalars {
				if !have[stepTag{e.Step, s.Tag}] {
					missing.Scalars = append(missing.Scalars, s)
				}
			}
			if len(missing.Scalars) > 0 {
				backfill = append(backfill, missing)
			}
		}
	}
	if l.w, err = tfevents.Create(tb, time.Now()); err != nil {
		l.fail(err)
		return l
	}
	for _, e := range backfill {
		if err := l.w.Write(e); err != nil {
			l.fail(err)
			break
		}
	}
	return l
}

// write logs the event of a log line just written (event: metricsEvent,
// evalEvent or sftEvent) at the time now; a failure ends the log (fail).
func (l *tensorBoardLog) write(v any, event func([]byte, float64) (tfevents.Event, error)) {
	if l == nil || l.w == nil {
		return
	}
	b, err := json.Marshal(v)
	if err != nil {
		l.fail(fmt.Errorf("encode %T: %w", v, err))
		return
	}
	e, err := event(b, tfevents.WallTime(time.Now()))
	if err == nil {
		err = l.w.Write(e)
	}
	if err != nil {
		l.fail(err)
	}
}

// fail ends the log for err, with a warning naming err and what the run
// does without the log: the training goes on, its JSON log complete,
// whose steps the event files lack spiral tensorboard adds once the run
// is done (PrepareTensorBoard: those the files hold, a last event cut
// short left out, are kept).
func (l *tensorBoardLog) fail(err error) {
	if l.w != nil {
		// err says what went wrong; the file is given up either way.
		_ = l.w.Close()
		l.w = nil
	}
	fmt.Fprintf(l.warn, "spiral: warning: --tensorboard: %v: the run goes on without TensorBoard events (%s logs every step: once the run is done, run spiral tensorboard %s to add the steps the event files in %s lack)\n",
		err, filepath.Base(l.log), l.dir, filepath.Join(l.dir, TensorBoardDir))
}

// close closes the log's event file; a failure to (its sync) warns, as
// fail does.
func (l *tensorBoardLog) close() {
	if l == nil || l.w == nil {
		return
	}
	err := l.w.Close()
	l.w = nil
	if err != nil {
		l.fail(err)
	}
}

// logEvents reads the JSON-lines log at path (a last line cut short is
// left out, torn saying so: readJSONLinesTorn), each line an event
// (event), at wall times that end at the file's modification time: a
// line's is the sum of the seconds (the field seconds names) of the lines
// up to it, counted back from there; a line without them (an evaluation)
// takes the wall time of the last line before it that had them. It
// returns the wall time the first line's seconds began at, too. A file
// that does not exist has no events. With increasing, a line whose step
// is not past the line's before is an error (stepAfter: train's logs; an
// sft evaluation's line shares its step's).
func logEvents(path, seconds string, increasing bool, event func([]byte, float64) (tfevents.Event, error)) (events []tfevents.Event, start float64, torn bool, err error) {
	st, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, 0, false, nil
	}
	if err != nil {
		return nil, 0, false, fmt.Errorf("rl: %w", err)
	}
	var ends []float64 // each line's end, in seconds from the first line's start
	total := 0.0
	torn, err = readJSONLinesTorn(path, func(b []byte) error {
		var t map[string]json.RawMessage
		if err := json.Unmarshal(b, &t); err != nil {
			return err
		}
		var s float64
		if json.Unmarshal(t[seconds], &s) == nil && s > 0 && !math.IsInf(s, 0) {
			total += s
		}
		ends = append(ends, total)
		e, err := event(b, 0)
		if err == nil && increasing {
			prev := -1
			if len(events) > 0 {
				prev = int(events[len(events)-1].Step)
			}
			err = stepAfter(int(e.Step), prev)
		}
		events = append(events, e)
		return err
	})
	if err != nil {
		return nil, 0, torn, fmt.Errorf("rl: %w", err)
	}
	start = tfevents.WallTime(st.ModTime()) - total
	for i := range events {
		events[i].Wall = start + ends[i]
	}
	return events, start, torn, nil
}

// trainEvents are the events of the run directory dir's metrics.jsonl
// and eval.jsonl, each evaluation after its step's metrics at the wall
// time of its step's end (the run's start for step 0: its line holds no
// time); torn names the logs whose last line was cut short and left out.
func trainEvents(dir string) (events []tfevents.Event, torn []string, err error) {
	metrics, evals := filepath.Join(dir, MetricsFile), filepath.Join(dir, EvalFile)
	ms, start, mt, err := logEvents(metrics, "step_seconds", true, metricsEvent)
	if err != nil {
		return nil, nil, err
	}
	es, _, et, err := logEvents(evals, "", true, evalEvent)
	if err != nil {
		return nil, nil, err
	}
	if mt {
		torn = append(torn, metrics)
	}
	if et {
		torn = append(torn, evals)
	}
	wall := map[int64]float64{}
	for _, m := range ms {
		wall[m.Step] = m.Wall
	}
	for i := range es {
		if w, ok := wall[es[i].Step]; ok {
			es[i].Wall = w
		} else {
			es[i].Wall = start
		}
	}
	events = slices.Concat(ms, es)
	slices.SortStableFunc(events, func(a, b tfevents.Event) int { return cmp.Compare(a.Step, b.Step) })
	return events, torn, nil
}

// sftLog is the log of the sft run in dir: SFTLogFile + PartialSuffix
// while it runs or once it was stopped, SFTLogFile once its model is
// written; "" when it has neither. A stopped run beside a finished one
// (an --overwrite's) is the one TensorBoardDir's events are of: it cuts
// them back to its step as the same command resumes it, and events of
// the finished run would stay there as the first steps of its own
// (PrepareTensorBoard converts the finished run's, into
// SFTFinishedTensorBoardDir, where the stopped one logged no step).
func sftLog(dir string) string {
	for _, name := range []string{SFTLogFile + PartialSuffix, SFTLogFile} {
		if p := filepath.Join(dir, name); fileExists(p) {
			return p
		}
	}
	return ""
}

// sftEvents are the events of the sft log at path (sftLog), its
// evaluations at the wall time of their step's end.
func sftEvents(path string) (events []tfevents.Event, torn []string, err error) {
	events, _, t, err := logEvents(path, "seconds", false, sftEvent)
	if t {
		torn = []string{path}
	}
	return events, torn, err
}

// TensorBoardExport is a conversion of a run's logs (PrepareTensorBoard),
// and what it wrote (Write): the event file, the events in it and the
// logs they came from, the logs whose last line was cut short and left
// out (a run killed while writing it; the caller holds the run's lock,
// LockRun, so that no training writes it meanwhile), and the event files
// it removed, which held no scalar event (a run with --tensorboard
// killed before its first step). Converted names the event files that
// hold the logs' events already, every figure of them and no other
// (written by --tensorboard, or by an earlier conversion, such as one of
// several runs that was stopped before it converted the others): Write
// writes nothing then. Beside names those that hold part of them and no
// other figure (a run that went on without --tensorboard): Write writes
// the rest alone, the figures of the steps Lacked, in a new file named
// after them.
type TensorBoardExport struct {
	Path      string
	Events    int
	Logs      []string
	Torn      []string
	Removed   []string
	Converted []string
	Beside    []string
	Lacked    []int64

	events []tfevents.Event
	// tb is the directory the events go to: the run's TensorBoardDir,
	// or SFTFinishedTensorBoardDir for a finished sft run's log beside an
	// --overwrite that logged no step or whose events such an overwrite
	// set aside there.
	tb string
}

// PrepareTensorBoard reads the logs of the run directory dir, spiral
// train's metrics.jsonl and eval.jsonl or else spiral sft's sft.jsonl, as
// the events that `train --tensorboard` and `sft --tensorboard` write as
// they run, at wall times counted back from the log's modification time
// by the seconds each step logs (evaluation and checkpoint time not
// counted), for Write to write; it writes nothing. A directory with
// neither log is an error naming it, and so is one whose TensorBoardDir
// holds spiral's event files with events already (written live, or by an
// earlier export) other than the logs' events, each figure once
// (TensorBoard would show the conversion's beside them); those that hold
// exactly them are named in Converted, for Write to leave, and those
// that hold part of them in Beside, for Write to add the figures they
// lack (the steps Lacked), unless a figure lacks a step before one of
// it they hold (TensorBoard, reading the new file after theirs, would
// drop the steps of the figure it read past that one), which is refused
// naming the steps. The finished
// sft run's sft.jsonl beside an --overwrite stopped before it logged a
// step, or killed before it began its log, goes to
// SFTFinishedTensorBoardDir, where that run's events are until the
// overwrite's commit (set aside by it), and is checked against the event
// files there. The caller holds dir's lock (LockRun) through Write, as a
// training does.
func PrepareTensorBoard(dir string) (TensorBoardExport, error) {
	x := TensorBoardExport{tb: filepath.Join(dir, TensorBoardDir)}
	var err error
	metrics := filepath.Join(dir, MetricsFile)
	switch sft := sftLog(dir); {
	case fileExists(metrics):
		x.Logs = []string{metrics}
		if e := filepath.Join(dir, EvalFile); fileExists(e) {
			x.Logs = append(x.Logs, e)
		}
		x.events, x.Torn, err = trainEvents(dir)
	case sft != "":
		x.Logs = []string{sft}
		x.events, x.Torn, err = sftEvents(sft)
		// A stopped run that logged no step starts over when resumed,
		// cutting every event in TensorBoardDir away: the finished run's
		// log beside it (an --overwrite's) is the one to convert, into
		// where that run's events are until the overwrite's commit (and
		// may be already, set aside by it).
		done, aside := filepath.Join(dir, SFTLogFile), filepath.Join(dir, SFTFinishedTensorBoardDir)
		if err == nil && len(x.events) == 0 && sft != done && fileExists(done) {
			x.Logs = []string{done}
			x.events, x.Torn, err = sftEvents(done)
			x.tb = aside
		}
		// An --overwrite killed as it started, after it set the finished
		// run's events aside and before it began its log, left them
		// there: they are the finished log's.
		if err == nil && sft == done {
			files, ferr := tfevents.Files(aside)
			if ferr != nil {
				return x, fmt.Errorf("rl: %w", ferr)
			}
			if len(files) > 0 {
				x.tb = aside
			}
		}
	default:
		return x, fmt.Errorf("%s holds no %s (spiral train) or %s (spiral sft): want the directory of a training run (its --out)", dir, MetricsFile, SFTLogFile)
	}
	if err != nil {
		return x, err
	}
	if len(x.events) == 0 {
		return x, fmt.Errorf("%s logs no step: nothing to convert", strings.Join(x.Logs, " and "))
	}
	_, err = x.emptyFiles()
	var converted *convertedError
	if !errors.As(err, &converted) {
		return x, err
	}
	missing, ok := converted.lacking(x.events)
	switch {
	case !ok:
	case len(missing) == 0:
		x.Converted, err = converted.files, nil
	default:
		if converted.early = converted.before(missing); len(converted.early) == 0 {
			x.Beside, x.Lacked, x.events, err = converted.files, eventSteps(missing), missing, nil
		}
	}
	return x, err
}

// convertedError is emptyFiles' refusal of a run whose TensorBoardDir
// holds spiral's event files with scalar events already: the files and,
// when every one could be read, their scalars.
type convertedError struct {
	tb      string
	files   []string // those with events, in the order of their names
	scalars map[stepTag]float32
	twice   bool // a scalar of a step and tag more than once
	// early are the steps the files lack of a figure of the logs before
	// a step of it they hold, where they hold nothing but the logs'.
	early []int64
}

func (e *convertedError) Error() string {
	held := fmt.Sprintf("%s holds TensorBoard events already (%s, written by --tensorboard or an earlier conversion)", e.tb, filepath.Base(e.files[0]))
	if len(e.early) > 0 {
		return fmt.Sprintf("%s, which lack %s of the logs, before steps of the same figures they hold (TensorBoard, reading them after those, would drop those): remove %s to convert the logs again", held, StepList(e.early), e.tb)
	}
	return fmt.Sprintf("%s: TensorBoard shows them; remove %s to convert the logs again", held, e.tb)
}

// stepTag is a scalar's step and tag.
type stepTag struct {
	step int64
	tag  string
}

// lacking returns the scalars of events that the event files lack, as
// events, and whether the files hold none but scalars of events, each
// once, with its value (the logs converted already where none lack).
func (e *convertedError) lacking(events []tfevents.Event) ([]tfevents.Event, bool) {
	if e.scalars == nil || e.twice {
		return nil, false
	}
	var missing []tfevents.Event
	n := 0
	for _, ev := range events {
		lack := ev
		lack.Scalars = nil
		for _, sc := range ev.Scalars {
			v, ok := e.scalars[stepTag{ev.Step, sc.Tag}]
			switch {
			case !ok:
				lack.Scalars = append(lack.Scalars, sc)
			case v != sc.Value:
				return nil, false
			default:
				n++
			}
		}
		if len(lack.Scalars) > 0 {
			missing = append(missing, lack)
		}
	}
	return missing, n == len(e.scalars)
}

// before returns the steps of missing (lacking's) with a scalar of a
// tag that the files hold at a later step, in order, each once.
func (e *convertedError) before(missing []tfevents.Event) []int64 {
	last := map[string]int64{}
	for k := range e.scalars {
		if s, ok := last[k.tag]; !ok || k.step > s {
			last[k.tag] = k.step
		}
	}
	var early []tfevents.Event
	for _, ev := range missing {
		if slices.ContainsFunc(ev.Scalars, func(sc tfevents.Scalar) bool {
			s, ok := last[sc.Tag]
			return ok && ev.Step < s
		}) {
			early = append(early, ev)
		}
	}
	return eventSteps(early)
}

// eventSteps returns the steps of events, in order, each once.
func eventSteps(events []tfevents.Event) []int64 {
	steps := make([]int64, len(events))
	for i, ev := range events {
		steps[i] = ev.Step
	}
	slices.Sort(steps)
	return slices.Compact(steps)
}

// StepList writes steps (in order, each once) for a message: "step 2",
// "steps 2-4", "steps 0, 2-4, 7".
func StepList(steps []int64) string {
	var parts []string
	for i := 0; i < len(steps); {
		j := i
		for j+1 < len(steps) && steps[j+1] == steps[j]+1 {
			j++
		}
		part := strconv.FormatInt(steps[i], 10)
		if j > i {
			part += "-" + strconv.FormatInt(steps[j], 10)
		}
		parts = append(parts, part)
		i = j + 1
	}
	if len(steps) == 1 {
		return "step " + parts[0]
	}
	return "steps " + strings.Join(parts, ", ")
}

// emptyFiles returns spiral's event files in x's directory (x.tb) that
// hold no scalar event (their file_version only, or cut short before
// their first scalar event: a run with --tensorboard killed before its
// first step), which the conversion replaces; files that hold one, or that cannot be
// read (their checksums failing), are a *convertedError naming the
// first (returned with the empty files): TensorBoard shows their
// events, which the conversion would double.
func (x *TensorBoardExport) emptyFiles() ([]string, error) {
	files, err := tfevents.Files(x.tb)
	if err != nil {
		return nil, fmt.Errorf("rl: %w", err)
	}
	var empty []string
	held := &convertedError{tb: x.tb, scalars: map[stepTag]float32{}}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("rl: %w", err)
		}
		_, events, _, err := tfevents.Decode(b)
		if err == nil && len(events) == 0 {
			empty = append(empty, f)
			continue
		}
		held.files = append(held.files, f)
		if err != nil {
			held.scalars = nil // unreadable: not known to be the logs'
		}
		for _, ev := range events {
			for _, sc := range ev.Scalars {
				k := stepTag{ev.Step, sc.Tag}
				if _, ok := held.scalars[k]; ok {
					held.twice = true
				}
				if held.scalars != nil {
					held.scalars[k] = sc.Value
				}
			}
		}
	}
	if len(held.files) > 0 {
		return empty, held
	}
	return empty, nil
}

// Write writes the events PrepareTensorBoard read as one new event file
// in x.tb (the run's TensorBoardDir, or SFTFinishedTensorBoardDir),
// atomically, refusing, as it did, a run that holds spiral's event
// files with events already, and removes the
// event files there that hold none first (the new file is named after
// them still: tfevents.WriteFile), so that a process killed in between
// leaves the run as it was but for files that held nothing, which the
// same command converts; it removed them after the new file, and one
// killed between the two left them for good, that command refused as
// converted already. It sets x.Path, x.Events and x.Removed. A run
// whose events are there already (x.Converted) it leaves as it is; one
// that holds part of them in the files x.Beside, and no other event
// file with events, gets the rest.
func (x *TensorBoardExport) Write() error {
	if len(x.Converted) > 0 {
		return nil
	}
	empty, err := x.emptyFiles()
	var converted *convertedError
	if len(x.Beside) > 0 && errors.As(err, &converted) && slices.Equal(converted.files, x.Beside) {
		err = nil
	}
	if err != nil {
		return err
	}
	p, err := tfevents.WriteFile(x.tb, time.Now(), x.events, empty...)
	if err != nil {
		return fmt.Errorf("rl: %w", err)
	}
	x.Path, x.Events, x.Removed = p, len(x.events), empty
	return nil
}

// fileExists says whether path names a file (or anything but nothing):
// one that cannot be stat'ed for another reason than its absence (a
// symbolic link loop, a directory that may not be searched) is there,
// for its reader to say the system's error.
func fileExists(path string) bool {
	_, err := os.Stat(path)
	return !errors.Is(err, fs.ErrNotExist)
}

// isDir says whether path is a directory (through a link).
func isDir(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.IsDir()
}
