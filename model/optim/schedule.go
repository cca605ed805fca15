package optim

import (
	"fmt"
	"math"
	"strings"
)

// Decay names what the learning rate does after warmup.
type Decay string

// The decays Schedule knows. The zero value means Constant.
const (
	Constant Decay = "constant"
	Cosine   Decay = "cosine"
)

// Schedule maps an update index to a learning rate: linear warmup from
// PeakLR/WarmupSteps to PeakLR over WarmupSteps updates, then either
// constant at PeakLR or a half-cosine from PeakLR down to MinLR, reached at
// update TotalSteps and kept after it.
//
// Warmup starts at PeakLR/WarmupSteps rather than 0: HF transformers' and
// verl's warmup schedulers give update 0 a learning rate of exactly 0,
// which wastes that batch; here update i < WarmupSteps gets
// PeakLR*(i+1)/WarmupSteps.
type Schedule struct {
	// PeakLR is the learning rate after warmup; required, in (0,
	// MaxFloat32] (weights are float32).
	PeakLR float64 `json:"peak_lr"`
	// WarmupSteps is the number of warmup updates, >= 0 (0: none).
	WarmupSteps int64 `json:"warmup_steps"`
	// Decay is Constant (default, also for "") or Cosine.
	Decay Decay `json:"decay,omitempty"`
	// TotalSteps is the update index at which the cosine reaches MinLR;
	// required for Cosine, > WarmupSteps.
	TotalSteps int64 `json:"total_steps,omitempty"`
	// MinLR is the cosine floor, in [0, PeakLR]. Default 0.
	MinLR float64 `json:"min_lr,omitempty"`
}

// Validate reports every invalid field in one error.
func (s Schedule) Validate() error {
	var errs []string
	if !(s.PeakLR > 0) || s.PeakLR > math.MaxFloat32 {
		errs = append(errs, fmt.Sprintf("peak learning rate %v must be > 0 and within float32's range (at most %g)", s.PeakLR, math.MaxFloat32))
	}
	if s.WarmupSteps < 0 {
		errs = append(errs, fmt.Sprintf("warmup steps %d must be >= 0", s.WarmupSteps))
	}
	switch s.Decay {
	case "", Constant:
	case Cosine:
		if s.TotalSteps <= s.WarmupSteps {
			errs = append(errs, fmt.Sprintf("cosine total steps %d must exceed warmup steps %d", s.TotalSteps, s.WarmupSteps))
		}
		if !(s.MinLR >= 0 && s.MinLR <= s.PeakLR) {
			errs = append(errs, fmt.Sprintf("min learning rate %v not in [0, peak %v]", s.MinLR, s.PeakLR))
		}
	default:
		errs = append(errs, fmt.Sprintf("decay %q not one of %q, %q", s.Decay, Constant, Cosine))
	}
	if len(errs) > 0 {
		return fmt.Errorf("optim: invalid schedule: %s", strings.Join(errs, "; "))
	}
	return nil
}

// LR returns the learning rate for update index step (0-based: pass
// AdamW.Steps() before the update). Negative steps are treated as 0. The
// schedule is assumed valid (Validate).
func (s Schedule) LR(step int64) float64 {
	step = max(step, 0)
	if step < s.WarmupSteps {
		return s.PeakLR * float64(step+1) / float64(s.WarmupSteps)
	}
	if s.Decay != Cosine {
		return s.PeakLR
	}
	progress := math.Min(1, float64(step-s.WarmupSteps)/float64(s.TotalSteps-s.WarmupSteps))
	return s.MinLR + (s.PeakLR-s.MinLR)*0.5*(1+math.Cos(math.Pi*progress))
}
