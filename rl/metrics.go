package rl

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/spiral-rl/spiral/rollout"
)

// PhaseMetrics summarise one rollout phase of a step.
type PhaseMetrics struct {
	// Traces counted and their mean reward (accuracy).
	Traces int     `json:"traces"`
	Reward float64 `json:"reward"`
	// MeanLength is the mean completion length in tokens; Truncated the
	// fraction that hit the token limit; PaddingCut the fraction a serving
	// engine cut before a padding id it sampled (rollout.FinishPadding),
	// which hit no limit, left out when 0 (runs written before it counted
	// those in Truncated); Unboxed the fraction that stated no explicit
	// answer (\boxed{} or a final-answer sentence).
	MeanLength float64 `json:"mean_length"`
	Truncated  float64 `json:"truncated"`
	PaddingCut float64 `json:"padding_cut,omitempty"`
	Unboxed    float64 `json:"unboxed"`
	// TokensPerSecond is generated tokens per second of the phase.
	TokensPerSecond float64 `json:"tokens_per_second"`
	Seconds         float64 `json:"seconds"`
	// FittedPrompts counts the phase's aggregation prompts that were
	// longer than the model's context less --max-new-tokens and had their
	// candidates cut further to fit (rollout.Stats.FittedPrompts).
	FittedPrompts int `json:"fitted_prompts,omitempty"`

	rewardSum, lengthSum, truncated, paddingCut, unboxed float64
	generated                                            int
}

func (p *PhaseMetrics) observe(reward float64, t rollout.Trace, v rollout.Verdict) {
	p.Traces++
	p.rewardSum += reward
	p.lengthSum += float64(len(t.Tokens))
	switch t.Finish {
	case rollout.FinishLength:
		p.truncated++
	case rollout.FinishPadding:
		p.paddingCut++
	}
	if !v.Explicit {
		p.unboxed++
	}
}

func (p *PhaseMetrics) finish() {
	if p.Traces > 0 {
		p.Reward = p.rewardSum / float64(p.Traces)
		p.MeanLength = p.lengthSum / float64(p.Traces)
		p.Truncated = p.truncated / float64(p.Traces)
		p.PaddingCut = p.paddingCut / float64(p.Traces)
		p.Unboxed = p.unboxed / float64(p.Traces)
	}
	if p.Seconds > 0 {
		p.TokensPerSecond = float64(p.generated) / p.Seconds
	}
}

// Metrics are one training step's figures, written as one JSON line of
// metrics.jsonl.
type Metrics struct {
	Step int `json:"step"`
	// Search and Aggregate are the two rollout phases (GRPO: Search only).
	Search    PhaseMetrics `json:"search"`
	Aggregate PhaseMetrics `json:"aggregate"`
	// AggregateRounds splits Aggregate by aggregation round, when there
	// are several (--agg-rounds).
	AggregateRounds []PhaseMetrics `json:"aggregate_rounds,omitempty"`
	// ProblemsDrawn over all dynamic-sampling rounds; ProblemsInformative
	// kept for training. InformativeFraction is their ratio.
	ProblemsDrawn       int     `json:"problems_drawn"`
	ProblemsInformative int     `json:"problems_informative"`
	InformativeFraction float64 `json:"informative_fraction"`
	// Examples trained on and their loss tokens.
	Examples   int `json:"examples"`
	LossTokens int `json:"loss_tokens"`
	// Advantage statistics over trained samples.
	AdvMean float64 `json:"adv_mean"`
	AdvStd  float64 `json:"adv_std"`
	AdvMin  float64 `json:"adv_min"`
	AdvMax  float64 `json:"adv_max"`
	// SearchCredit is the Pearson correlation, over the step's trained
	// search traces, between a trace's own reward and its advantage: how
	// much the credit a search trace gets says about the trace itself.
	// GRPO's advantage is its own reward against its group's; SPIRAL's
	// set term credits it with what its subsets' aggregations score. Nil
	// (absent) when undefined: fewer than two such traces, or a constant
	// reward or advantage.
	SearchCredit *float64 `json:"search_credit,omitempty"`
	// Loss is the token-mean loss; Entropy the token mean, over the step's
	// trained completion tokens (search and trained aggregation traces of
	// informative problems), of the entropy (nats) of the policy at
	// temperature 1 over the tokenizer's ids (model.ExecutorOptions'
	// VocabLimit) whatever the sampling temperature, before the update;
	// GradNorm the pre-clip global norm.
	Loss    float64 `json:"loss"`
	Entropy float64 `json:"entropy"`
	// EntropySearch is Entropy over the search traces' tokens alone
	// (GRPO's: all of its traces, which are search traces), the figure to
	// compare across algorithms: SPIRAL's Entropy mixes in its
	// aggregation traces', which read candidates. Absent when no search
	// trace was trained (agg-only) or it was not finite.
	EntropySearch *float64 `json:"entropy_search,omitempty"`
	GradNorm      float64  `json:"grad_norm"`
	LR            float64  `json:"lr"`
	// NoUpdate marks a step that trained nothing: no drawn problem was
	// informative (each problem's traces all got one reward), or the
	// informative ones' trained traces held no token (a serving engine's
	// completions cut before their first token), so Loss,
	// Entropy, GradNorm and LR were not measured (they are written as 0,
	// not as figures) and the weights are unchanged. Readers take a line
	// written before the marker existed with "examples": 0 as one.
	NoUpdate bool `json:"no_update,omitempty"`
	// UpdateSkipped says why this step's update was not applied (it would
	// have made the weights non-finite); empty when it was.
	UpdateSkipped string `json:"update_skipped,omitempty"`
	// PolicyVersion names the weights a serving engine sampled this
	// step's rollouts with and PolicyLag how many updates they were behind
	// the trained weights (0: synced before every rollout); SyncSeconds
	// is the step's sync's wall time, 0 where a held-out evaluation after
	// the previous step synced the weights (EvalLine.SyncSeconds has it).
	// Empty and zero with the local engine.
	PolicyVersion string  `json:"policy_version,omitempty"`
	PolicyLag     int     `json:"policy_lag"`
	SyncSeconds   float64 `json:"sync_seconds,omitempty"`
	// EngineLogProbDiff and EngineLogProbMaxDiff are the mean and largest
	// |log pi (learner) - log pi (engine)| over the EngineLogProbTokens
	// trained tokens whose log-probability the serving engine returned:
	// the check that the engine samples from the weights the learner
	// trains (a failed sync shows as a jump; kernels and precision leave
	// a small floor). Absent with the local engine.
	EngineLogProbDiff    float64 `json:"engine_logprob_diff,omitempty"`
	EngineLogProbMaxDiff float64 `json:"engine_logprob_max_diff,omitempty"`
	EngineLogProbTokens  int     `json:"engine_logprob_tokens,omitempty"`
	// DeviceCopyBytes is what the step copied between host and device
	// memory through the device layer (--device cuda): generation's
	// weights once per generation, then token ids, masks, cache indices
	// and logits per call; training's parameters once per update; with a
	// serving engine, the weights brought to the host for its sync.
	// Absent on the host path.
	DeviceCopyBytes int64 `json:"device_copy_bytes,omitempty"`
	// Timing: wall seconds of rollout (after a serving engine's weight
	// sync, which SyncSeconds times), training and the whole step, and
	// training positions (rows x length, padding included; a packed
	// row's prompt counted once) per second.
	RolloutSeconds       float64 `json:"rollout_seconds"`
	TrainSeconds         float64 `json:"train_seconds"`
	StepSeconds          float64 `json:"step_seconds"`
	TrainTokens          int     `json:"train_tokens"`
	TrainTokensPerSecond float64 `json:"train_tokens_per_second"`

	// advN advantages observed, their running mean and sum of squared
	// deviations from it (Welford's), and their least and greatest.
	advN                         int
	advMean, advM2, advLo, advHi float64
	// credit holds (own reward, advantage) of each trained search trace.
	credit [][2]float64
}

func (m *Metrics) addPhase(p *PhaseMetrics, st rollout.Stats) {
	p.generated += st.GeneratedTokens
	p.Seconds += st.Elapsed.Seconds()
	p.FittedPrompts += st.FittedPrompts
}

func (m *Metrics) observeAdvantage(a float64) {
	if m.advN == 0 || a < m.advLo {
		m.advLo = a
	}
	if m.advN == 0 || a > m.advHi {
		m.advHi = a
	}
	m.advN++
	d := a - m.advMean
	m.advMean += d / float64(m.advN)
	m.advM2 += d * (a - m.advMean)
}

// observeSearchCredit records a trained search trace's own reward and
// its advantage for SearchCredit.
func (m *Metrics) observeSearchCredit(reward, advantage float64) {
	m.credit = append(m.credit, [2]float64{reward, advantage})
}

// pearson returns the correlation of the pairs' two coordinates and
// false when it is undefined (fewer than two pairs, or either coordinate
// constant).
func pearson(pairs [][2]float64) (float64, bool) {
	if len(pairs) < 2 {
		return 0, false
	}
	var mean [2]float64
	for _, p := range pairs {
		mean[0] += p[0]
		mean[1] += p[1]
	}
	mean[0] /= float64(len(pairs))
	mean[1] /= float64(len(pairs))
	var sxx, syy, sxy float64
	for _, p := range pairs {
		dx, dy := p[0]-mean[0], p[1]-mean[1]
		sxx += dx * dx
		syy += dy * dy
		sxy += dx * dy
	}
	if sxx == 0 || syy == 0 {
		return 0, false
	}
	return sxy / math.Sqrt(sxx*syy), true
}

func (m *Metrics) finishRollout() {
	m.Search.finish()
	m.Aggregate.finish()
	for i := range m.AggregateRounds {
		m.AggregateRounds[i].finish()
	}
	if m.ProblemsDrawn > 0 {
		m.InformativeFraction = float64(m.ProblemsInformative) / float64(m.ProblemsDrawn)
	}
	if m.advN > 0 {
		m.AdvMean = m.advMean
		m.AdvStd = math.Sqrt(m.advM2 / float64(m.advN))
		m.AdvMin, m.AdvMax = m.advLo, m.advHi
	}
	if r, ok := pearson(m.credit); ok {
		m.SearchCredit = &r
	}
}

// trainedNone clears the figures of the step's trained samples (the
// advantages' statistics and the search credit) when it trained none:
// those of an informative problem's traces that held no token.
func (m *Metrics) trainedNone() {
	m.AdvMean, m.AdvStd, m.AdvMin, m.AdvMax, m.SearchCredit = 0, 0, 0, 0, nil
}

// Updated says whether the step changed the weights: it trained some
// example (not NoUpdate) and applied its update (no UpdateSkipped).
func (m Metrics) Updated() bool { return !m.NoUpdate && m.UpdateSkipped == "" }

// MarshalJSON writes m with a loss, entropy or gradient norm that is not
// finite (a step whose update was skipped for it) as null, which JSON
// can hold and NaN is not; the engine log-probability differences, which
// the same step's non-finite log-probabilities make NaN, likewise (and
// left out when 0, as without an engine).
func (m Metrics) MarshalJSON() ([]byte, error) {
	type plain Metrics
	return json.Marshal(struct {
		plain
		Loss                 *float64        `json:"loss"`
		Entropy              *float64        `json:"entropy"`
		GradNorm             *float64        `json:"grad_norm"`
		EngineLogProbDiff    json.RawMessage `json:"engine_logprob_diff,omitempty"`
		EngineLogProbMaxDiff json.RawMessage `json:"engine_logprob_max_diff,omitempty"`
	}{plain(m), finiteOrNil(m.Loss), finiteOrNil(m.Entropy), finiteOrNil(m.GradNorm),
		omitZero(m.EngineLogProbDiff), omitZero(m.EngineLogProbMaxDiff)})
}

// finiteOrNil is &x, or nil when x is NaN or infinite.
func finiteOrNil(x float64) *float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return nil
	}
	return &x
}

// omitZero is x as the JSON of an omitempty field: nothing when x is 0,
// null when it is NaN or infinite.
func omitZero(x float64) json.RawMessage {
	if x == 0 {
		return nil
	}
	if p := finiteOrNil(x); p != nil {
		b, err := json.Marshal(*p)
		if err == nil {
			return b
		}
	}
	return json.RawMessage("null")
}

// decodeMetrics reads one metrics.jsonl line. A line written before
// no_update existed marks a step that trained nothing by "examples": 0
// (always written then); a line without "examples" is taken as measured.
// A null loss, entropy, gradient norm or engine log-probability
// difference (MarshalJSON) reads as NaN. A line without a step >= 1
// (null, {}) is no step's metrics: an error, not a step 0 of zeros. A
// line that is not spiral's (spiralMetricsLine), another tool's log, is
// an error too, not a step whose figures are zeros.
func decodeMetrics(b []byte) (Metrics, error) {
	var m Metrics
	if err := json.Unmarshal(b, &m); err != nil {
		return Metrics{}, err
	}
	if m.Step < 1 {
		return Metrics{}, fmt.Errorf(`no training step ("step" = %d): want a step's metrics, as train writes them`, m.Step)
	}
	if err := spiralMetricsLine(b); err != nil {
		return Metrics{}, err
	}
	var old struct {
		Examples      *int            `json:"examples"`
		Loss          json.RawMessage `json:"loss"`
		Entropy       json.RawMessage `json:"entropy"`
		GradNorm      json.RawMessage `json:"grad_norm"`
		EngineDiff    json.RawMessage `json:"engine_logprob_diff"`
		EngineMaxDiff json.RawMessage `json:"engine_logprob_max_diff"`
	}
	if err := json.Unmarshal(b, &old); err != nil {
		return m, nil
	}
	if old.Examples != nil && *old.Examples == 0 {
		m.NoUpdate = true
	}
	for _, f := range []struct {
		raw json.RawMessage
		v   *float64
	}{{old.Loss, &m.Loss}, {old.Entropy, &m.Entropy}, {old.GradNorm, &m.GradNorm},
		{old.EngineDiff, &m.EngineLogProbDiff}, {old.EngineMaxDiff, &m.EngineLogProbMaxDiff}} {
		if string(f.raw) == "null" {
			*f.v = math.NaN()
		}
	}
	return m, nil
}

// spiralMetricsLine refuses b, a JSON object with a step, where it is
// not a metrics.jsonl line of spiral train's. Every line any version
// wrote has a "search" object (since metrics.jsonl began), so a line
// with one is spiral's, whatever else it has (a later version's fields).
// A line without one is read as spiral's, cut down by hand, only where
// it has a field beyond "step" and every field is one that a version of
// spiral train wrote (metricsField): another tool's log ({"step": 1,
// "loss": 0.5, "reward": 0.3}) read as spiral's gave figures of zeros.
func spiralMetricsLine(b []byte) error {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(b, &fields); err != nil {
		return err
	}
	if search, ok := fields["search"]; ok {
		if !strings.HasPrefix(string(search), "{") {
			return fmt.Errorf(`"search" = %s: want an object, the search phase's figures, as train writes it`, search)
		}
		return nil
	}
	delete(fields, "step")
	if len(fields) == 0 {
		return errors.New(`no "search" or other field spiral train writes: another tool's log?`)
	}
	for _, k := range slices.Sorted(maps.Keys(fields)) {
		if !metricsField(k) {
			return fmt.Errorf(`field %q, which spiral train never wrote, and no "search", which every line it writes has: another tool's log?`, k)
		}
	}
	return nil
}

// metricsField reports whether a version of spiral train wrote the field
// k in a metrics.jsonl line: Metrics's JSON names, and "samples", which
// the first version wrote for "examples".
func metricsField(k string) bool {
	switch k {
	case "step", "search", "aggregate", "aggregate_rounds",
		"problems_drawn", "problems_informative", "informative_fraction",
		"examples", "samples", "loss_tokens", "adv_mean", "adv_std", "adv_min", "adv_max",
		"search_credit", "loss", "entropy", "entropy_search", "grad_norm", "lr",
		"no_update", "update_skipped", "policy_version", "policy_lag", "sync_seconds",
		"engine_logprob_diff", "engine_logprob_max_diff", "engine_logprob_tokens",
		"device_copy_bytes", "rollout_seconds", "train_seconds", "step_seconds",
		"train_tokens", "train_tokens_per_second":
		return true
	}
	return false
}

// WriteJSONL appends m as one JSON line.
func (m Metrics) WriteJSONL(w io.Writer) error { return writeJSONLine(w, m) }

// Line is the step's one-line summary, as the run prints it.
func (m Metrics) Line() string {
	agg := "  -  "
	if m.Aggregate.Traces > 0 {
		agg = fmt.Sprintf("%.3f", m.Aggregate.Reward)
	}
	if len(m.AggregateRounds) > 1 {
		rounds := make([]string, len(m.AggregateRounds))
		for i, r := range m.AggregateRounds {
			rounds[i] = fmt.Sprintf("%.3f", r.Reward)
		}
		agg += " (" + strings.Join(rounds, " -> ") + ")"
	}
	cut := ""
	if n, of := m.cutTraces(); n > 0 {
		cut = fmt.Sprintf("  cut %d/%d", n, of)
	}
	if n, of := m.paddingCutTraces(); n > 0 {
		cut += fmt.Sprintf("  cut before a padding id %d/%d", n, of)
	}
	if m.NoUpdate {
		why := "no informative problem"
		if m.ProblemsInformative > 0 {
			why = "no trained token"
		}
		return fmt.Sprintf("step %3d  search %.3f  agg %s  informative %d/%d%s  no update (%s)  %.1fs",
			m.Step, m.Search.Reward, agg, m.ProblemsInformative, m.ProblemsDrawn, cut, why, m.StepSeconds)
	}
	s := fmt.Sprintf("step %3d  search %.3f  agg %s  informative %d/%d%s  loss %+.4f  entropy %.3f  |g| %.3f  %.1fs",
		m.Step, m.Search.Reward, agg, m.ProblemsInformative, m.ProblemsDrawn, cut, m.Loss, m.Entropy, m.GradNorm, m.StepSeconds)
	if m.UpdateSkipped != "" {
		s += "  update skipped: " + m.UpdateSkipped
	}
	return s
}

// cutTraces returns how many of the step's traces (search and
// aggregation) the sampler cut at the token limit (--max-new-tokens), and
// how many there were.
func (m Metrics) cutTraces() (cut, traces int) {
	for _, p := range []PhaseMetrics{m.Search, m.Aggregate} {
		cut += int(math.Round(p.Truncated * float64(p.Traces)))
		traces += p.Traces
	}
	return cut, traces
}

// paddingCutTraces returns how many of the step's traces (search and
// aggregation) a serving engine cut before a padding id it sampled, and
// how many there were.
func (m Metrics) paddingCutTraces() (cut, traces int) {
	for _, p := range []PhaseMetrics{m.Search, m.Aggregate} {
		cut += int(math.Round(p.PaddingCut * float64(p.Traces)))
		traces += p.Traces
	}
	return cut, traces
}

// writeJSONLine appends v to w as one JSON line.
func writeJSONLine(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("rl: encode %T: %w", v, err)
	}
	_, err = w.Write(append(b, '\n'))
	return err
}
