package report

import (
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/spiral-rl/spiral/model/atomicfile"
	"github.com/spiral-rl/spiral/rollout"
)

// StepsSuffix names, after the mode, the file in which an RSA evaluation
// saves its progress after each step (rsa.steps.json.partial beside
// rsa.json): a SavedRSA, written whole (atomicfile) at each step's end.
// The report's commit removes it.
const StepsSuffix = ".steps.json.partial"

// SavedRSA is an RSA evaluation's progress after a step: its key (the
// RSA configuration in Key.RSA, the population as Key.Samples), when it
// started, the steps done and the last one's population, each member's
// record with the ids it generated (what the next step's candidates are
// made of), and Counts, what the caller counted of the traces so far
// (eval's cut traces), kept as given.
type SavedRSA struct {
	Key        EvalKey           `json:"key"`
	Started    time.Time         `json:"started"`
	Steps      []rollout.RSAStep `json:"steps"`
	Population [][]SampleRecord  `json:"population"`
	Counts     json.RawMessage   `json:"counts,omitempty"`
}

// SaveRSA writes s to path, whole (atomicfile): a crash leaves the last
// step's state or this one's.
func SaveRSA(path string, s *SavedRSA) error {
	b, err := json.Marshal(s)
	if err != nil {
		return fmt.Errorf("report: %s: %w", path, err)
	}
	if err := atomicfile.WriteFile(path, append(b, '\n'), 0o666); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	return nil
}

// ReadRSA reads the saved RSA evaluation at path, refusing one that does
// not read (one with a field this version does not know as a
// *NewerError), whose steps are not 0, 1, ... up to at most its key's, or
// whose population is not its key's population of each of its problems.
func ReadRSA(path string) (*SavedRSA, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	s := &SavedRSA{}
	if err := savedUnmarshal(b, s); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	k := s.Key
	switch {
	case k.RSA == nil:
		return nil, fmt.Errorf("%s: no RSA configuration in its key", path)
	case len(s.Steps) == 0 || len(s.Steps) > k.RSA.Steps+1:
		return nil, fmt.Errorf("%s: %d steps, want 1 to %d", path, len(s.Steps), k.RSA.Steps+1)
	case len(s.Population) != len(k.ProblemIDs):
		return nil, fmt.Errorf("%s: a population of %d problems, want %d", path, len(s.Population), len(k.ProblemIDs))
	}
	for t, st := range s.Steps {
		if st.Step != t {
			return nil, fmt.Errorf("%s: step %d in step %d's place", path, st.Step, t)
		}
	}
	for i, members := range s.Population {
		if len(members) != k.Samples {
			return nil, fmt.Errorf("%s: problem %q has %d members, want %d", path, k.ProblemIDs[i], len(members), k.Samples)
		}
	}
	return s, nil
}

// State is the progress s records, as rollout.Evaluator.ResumedRSA takes
// it.
func (s *SavedRSA) State() *rollout.RSAState {
	st := &rollout.RSAState{Steps: s.Steps, Population: make([][]rollout.Trace, len(s.Population))}
	for i, members := range s.Population {
		st.Population[i] = ProblemRecord{Samples: members}.Sampled().Traces
	}
	return st
}

// RSAOf is the SavedRSA of st, the state after a step of an evaluation
// of key that started at started, with the caller's counts.
func RSAOf(key EvalKey, started time.Time, st rollout.RSAState, counts json.RawMessage) *SavedRSA {
	s := &SavedRSA{Key: key, Started: started, Steps: st.Steps, Population: make([][]SampleRecord, len(st.Population)), Counts: counts}
	for i, members := range st.Population {
		s.Population[i] = RecordOf(rollout.SampledProblem{Traces: members}, "", true).Samples
	}
	return s
}

// Describe says what s holds, for a refusal or a note: "3 of the 11
// steps of an interrupted rsa evaluation".
func (s *SavedRSA) Describe() string {
	return fmt.Sprintf("%d of the %d steps of an interrupted %s evaluation", len(s.Steps), s.Key.RSA.Steps+1, s.Key.Mode)
}
