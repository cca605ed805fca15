package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"time"

	"github.com/spiral-rl/spiral/model/atomicfile"
	"github.com/spiral-rl/spiral/model/jsonerr"
	"github.com/spiral-rl/spiral/model/smallfile"
	"github.com/spiral-rl/spiral/rollout"
)

// Mode names the evaluation scaffold a report comes from.
type Mode string

// The modes of `spiral eval`.
const (
	ModeRSA        Mode = "rsa"
	ModePassAtK    Mode = "passk"
	ModeSequential Mode = "sequential"
)

// Meta describes the run a report comes from. Every field is supplied by
// the caller.
type Meta struct {
	// Mode is set by the New* constructors.
	Mode Mode `json:"mode"`
	// Model is the model's name or path.
	Model string `json:"model"`
	// Label names the run in plot legends; "" means Model.
	Label string `json:"label,omitempty"`
	// Dataset is the data set's name or path.
	Dataset string `json:"dataset"`
	// Problems is the number of problems evaluated.
	Problems int `json:"problems"`
	// Seed is the seed the evaluation sampled with.
	Seed uint64 `json:"seed"`
	// Timestamp is when the run started.
	Timestamp time.Time `json:"timestamp"`
	// Extra holds free-form settings worth keeping (sampler temperature,
	// max tokens, ...).
	Extra map[string]string `json:"extra,omitempty"`
	// ProblemIDs are the ids of the problems evaluated, in evaluation
	// order, Problems of them (ProblemIDs builds them): what compare
	// checks to refuse reports evaluated on other problems whatever the
	// mode. Absent from reports written before it existed.
	ProblemIDs []string `json:"problem_ids,omitempty"`
	// ProblemsDigest fingerprints the problems' texts and gold answers,
	// in order (data.ProblemsDigest builds it): ids given by position (a data
	// file without an id field) are the same for another file at the same
	// path, the texts are not. Absent from reports written before it.
	ProblemsDigest string `json:"problems_digest,omitempty"`
	// CheckpointDigest fingerprints the checkpoint evaluated
	// (checkpoint.State.Digest): its weights file, whose metadata
	// records its step and a checksum of its run's settings and data
	// position, so that checkpoints of runs of other settings differ even
	// where their tensors are the same. Model names it by its run
	// directory's name and its own, which another run's checkpoint in a
	// directory of the same name shares, a copy of it too. What
	// compare checks to refuse reports of one default label (Label "")
	// that evaluated other checkpoints. Absent for a model evaluated
	// without a checkpoint, and from reports written before it.
	CheckpointDigest string `json:"checkpoint_digest,omitempty"`
	// ModelDigest is the content id of the model file evaluated
	// (model.SourceID, which checkpoints record of the model they were
	// trained from): Model names it by its path as given, which a model
	// in a directory of the same name elsewhere shares. What compare
	// checks to refuse reports of one default label that evaluated other
	// models. Absent for a checkpoint's evaluation (CheckpointDigest
	// tells those apart), the embedded model and a serving engine's, and
	// from reports written before it.
	ModelDigest string `json:"model_digest,omitempty"`
}

// Name is the report's name in legends and tables: Label, else Model.
func (m Meta) Name() string {
	if m.Label != "" {
		return m.Label
	}
	return m.Model
}

// RSA is the report of recursive self-aggregation.
type RSA struct {
	Meta   Meta              `json:"meta"`
	Config rollout.RSAConfig `json:"config"`
	// Steps[t] is step t (0 = the search population).
	Steps []rollout.RSAStep `json:"steps"`
}

// CandidateCapKey is the meta.extra key under which an RSA report that
// cut candidates (RSA.CutsCandidates) records what the cut counts:
// CandidateCapText, tokens of text, a stopped candidate's closing
// <|im_end|> not counted. Reports written before it record none: their
// cap counted that id, leaving a stopped candidate one token less of
// text, so compare warns of reports of both kinds.
const (
	CandidateCapKey  = "candidate_cap"
	CandidateCapText = "text tokens"
)

// NewRSA builds the report of r with Mode set to ModeRSA and, where it
// cuts candidates, meta.extra's CandidateCapKey (m's own Extra is left as
// it is).
func NewRSA(m Meta, r rollout.RSAResult) RSA {
	m.Mode = ModeRSA
	if (RSA{Config: r.Config, Steps: r.Steps}).CutsCandidates() {
		extra := maps.Clone(m.Extra)
		if extra == nil {
			extra = map[string]string{}
		}
		extra[CandidateCapKey] = CandidateCapText
		m.Extra = extra
	}
	return RSA{Meta: m, Config: r.Config, Steps: r.Steps}
}

// CutsCandidates reports whether r's aggregation prompts cut candidates:
// its config caps them (candidate_tokens above 0), or a step fitted
// prompts to the model's context by cutting them (fitted_prompts).
func (r RSA) CutsCandidates() bool {
	if r.Config.CandidateTokens > 0 {
		return true
	}
	for _, st := range r.Steps {
		if st.FittedPrompts > 0 {
			return true
		}
	}
	return false
}

// PassAtK is the report of pass@k and majority@k.
type PassAtK struct {
	Meta   Meta                  `json:"meta"`
	Config rollout.PassAtKConfig `json:"config"`
	Points []rollout.KPoint      `json:"points"`
	Tokens rollout.Tokens        `json:"tokens"`
	// PerProblem is absent from reports written before it existed.
	PerProblem []rollout.ProblemCorrect `json:"per_problem,omitempty"`
}

// NewPassAtK builds the report of r with Mode set to ModePassAtK.
func NewPassAtK(m Meta, r rollout.PassAtKResult) PassAtK {
	m.Mode = ModePassAtK
	cfg := r.Config
	cfg.Majority = cfg.Majority.WithDefaults() // the values used, should the defaults change
	return PassAtK{Meta: m, Config: cfg, Points: r.Points, Tokens: r.Tokens, PerProblem: r.PerProblem}
}

// UpToK returns r with only its points at k <= maxK: the reference side of
// a scaling-efficiency comparison limited to k <= maxK, while the other
// side keeps every point (a model evaluated with more samples than the
// largest k compared can show that it needs more than that many).
func (r PassAtK) UpToK(maxK int) (PassAtK, error) {
	var pts []rollout.KPoint
	for _, p := range r.Points {
		if p.K <= maxK {
			pts = append(pts, p)
		}
	}
	if len(pts) == 0 {
		return PassAtK{}, fmt.Errorf("report: %s: no pass@k point at k <= %d", r.Meta.Name(), maxK)
	}
	r.Points = pts
	return r, nil
}

// Budget is the report of sequential scaling over token budgets.
type Budget struct {
	Meta   Meta                  `json:"meta"`
	Config rollout.BudgetConfig  `json:"config"`
	Points []rollout.BudgetPoint `json:"points"`
	Tokens rollout.Tokens        `json:"tokens"`
}

// NewBudget builds the report of r with Mode set to ModeSequential.
func NewBudget(m Meta, r rollout.BudgetResult) Budget {
	m.Mode = ModeSequential
	return Budget{Meta: m, Config: r.Config, Points: r.Points, Tokens: r.Tokens}
}

// WriteJSON writes v as indented JSON to path atomically (see the package
// doc).
func WriteJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("report: encode %s: %w", path, err)
	}
	if err := atomicfile.WriteFile(path, append(b, '\n'), 0o666); err != nil {
		return fmt.Errorf("report: write: %w", err)
	}
	return nil
}

// ReadJSON decodes the JSON report at path into v, rejecting unknown
// fields (a report of another mode or version fails loudly) and, when v
// is a report (*PassAtK, *RSA, *Budget), one its Validate refuses (no
// points, k not increasing, ...), so that every reader of reports gets
// only reports it can use.
func ReadJSON(path string, v any) error {
	b, err := smallfile.Read(path, smallfile.Limit)
	if err != nil {
		return fmt.Errorf("report: read: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("report: decode %s: %w", path, jsonerr.Describe(b, v, err))
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return fmt.Errorf("report: decode %s: extra data after the JSON object", path)
	}
	if r, ok := v.(interface{ Validate() error }); ok {
		if err := r.Validate(); err != nil {
			return fmt.Errorf("report: %s: %w", path, err)
		}
	}
	return nil
}
