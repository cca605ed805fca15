package optim

import (
	"errors"
	"fmt"
	"math"
	"path"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/spiral-rl/spiral/model/params"
)

// Default hyper-parameters. Beta1, Beta2, Eps and WeightDecay are the
// defaults of torch.optim.AdamW (PyTorch 2.x: betas=(0.9, 0.999), eps=1e-8,
// weight_decay=1e-2); verl's actor optimiser config (ppo_trainer.yaml,
// actor.optim) uses the same betas and weight_decay 0.01. The learning rate
// has no default: verl uses 1e-6 for its RL actors and PyTorch 1e-3, and
// neither fits every model, so Schedule.PeakLR must be given.
const (
	DefaultBeta1       = 0.9
	DefaultBeta2       = 0.999
	DefaultEps         = 1e-8
	DefaultWeightDecay = 0.01
)

// Config holds the AdamW hyper-parameters. Fields are used as given (zero
// is a legitimate value for WeightDecay); start from DefaultConfig.
type Config struct {
	// Beta1 and Beta2 are the decay rates of the first and second moment
	// estimates, in [0, 1). Defaults 0.9 and 0.999.
	Beta1, Beta2 float64
	// Eps is added to sqrt(vhat) in the denominator, > 0. Default 1e-8.
	Eps float64
	// WeightDecay is the decoupled weight-decay coefficient lambda >= 0,
	// multiplied by the learning rate as in PyTorch: w -= lr*lambda*w.
	// Default 0.01.
	WeightDecay float64
	// DecayOneDim applies weight decay to tensors of rank <= 1 too. By
	// default (false) they are excluded: in a transformer those are norm
	// gains and biases, which the usual recipes (GPT-2, nanoGPT, HF Trainer)
	// do not decay.
	DecayOneDim bool
	// NoDecay lists further tensors excluded from weight decay, as
	// path.Match patterns over initializer names ("*" does not match "/").
	NoDecay []string
}

// DefaultConfig returns the defaults documented on the constants above.
func DefaultConfig() Config {
	return Config{Beta1: DefaultBeta1, Beta2: DefaultBeta2, Eps: DefaultEps, WeightDecay: DefaultWeightDecay}
}

// Validate reports every out-of-range field in one error.
func (c Config) Validate() error {
	var errs []string
	if !(c.Beta1 >= 0 && c.Beta1 < 1) {
		errs = append(errs, fmt.Sprintf("beta1 %v not in [0, 1)", c.Beta1))
	}
	if !(c.Beta2 >= 0 && c.Beta2 < 1) {
		errs = append(errs, fmt.Sprintf("beta2 %v not in [0, 1)", c.Beta2))
	}
	if !(c.Eps > 0) || math.IsInf(c.Eps, 0) {
		errs = append(errs, fmt.Sprintf("eps %v must be > 0 and finite", c.Eps))
	}
	if !(c.WeightDecay >= 0) || math.IsInf(c.WeightDecay, 0) {
		errs = append(errs, fmt.Sprintf("weight decay %v must be >= 0 and finite", c.WeightDecay))
	}
	for _, p := range c.NoDecay {
		if _, err := path.Match(p, ""); err != nil {
			errs = append(errs, fmt.Sprintf("no-decay pattern %q: %v", p, err))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("optim: invalid AdamW config: %s", strings.Join(errs, "; "))
	}
	return nil
}

// Decays reports whether the tensor called name with the given shape gets
// weight decay under c.
func (c Config) Decays(name string, shape []int64) bool {
	if c.WeightDecay == 0 || (!c.DecayOneDim && len(shape) <= 1) {
		return false
	}
	for _, p := range c.NoDecay {
		if ok, _ := path.Match(p, name); ok {
			return false
		}
	}
	return true
}

// AdamW is the Adam optimiser with decoupled weight decay (Loshchilov &
// Hutter, "Decoupled Weight Decay Regularization", ICLR 2019), in the form
// of torch.optim.AdamW. For each element, at update t = Steps()+1:
//
//	m = beta1*m + (1-beta1)*g
//	v = beta2*v + (1-beta2)*g^2
//	mhat = m / (1 - beta1^t),  vhat = v / (1 - beta2^t)
//	w = w - lr*(mhat/(sqrt(vhat)+eps) + lambda*w)
//
// where lambda is WeightDecay for decayed tensors and 0 for the others. The
// decay uses w before the update, as PyTorch's w *= 1-lr*lambda does.
type AdamW struct {
	cfg    Config
	step   int64
	m, v   *params.Store
	decay  []bool
	chunks []chunk
}

// chunk is a range of the flat buffers with one decay setting; big tensors
// are split so that workers share the work evenly.
type chunk struct {
	lo, hi int
	decay  bool
}

const chunkSize = 1 << 16

// NewAdamW returns an optimiser for weights laid out as w, with zero moments
// and Steps() == 0.
func NewAdamW(cfg Config, w *params.Store) (*AdamW, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	o := &AdamW{cfg: cfg, m: w.NewGrads(), v: w.NewGrads(), decay: make([]bool, w.Len())}
	off := 0
	for i := range w.Len() {
		t := w.At(i)
		o.decay[i] = cfg.Decays(t.Name, t.Shape)
		for lo := off; lo < off+len(t.Data); lo += chunkSize {
			o.chunks = append(o.chunks, chunk{lo: lo, hi: min(lo+chunkSize, off+len(t.Data)), decay: o.decay[i]})
		}
		off += len(t.Data)
	}
	return o, nil
}

// Steps returns the number of updates applied so far.
func (o *AdamW) Steps() int64 { return o.step }

// SetSteps sets the update count, for restoring a checkpoint together with
// the moments (ExpAvg, ExpAvgSq loaded in place).
func (o *AdamW) SetSteps(n int64) error {
	if n < 0 {
		return fmt.Errorf("optim: negative step count %d", n)
	}
	o.step = n
	return nil
}

// ExpAvg returns the first-moment store m (PyTorch's exp_avg); it aliases
// o's state, so a checkpoint load may fill it in place.
func (o *AdamW) ExpAvg() *params.Store { return o.m }

// ExpAvgSq returns the second-moment store v (PyTorch's exp_avg_sq); it
// aliases o's state.
func (o *AdamW) ExpAvgSq() *params.Store { return o.v }

// Decayed reports whether tensor i (store order) gets weight decay.
func (o *AdamW) Decayed(i int) bool { return o.decay[i] }

// ErrNonFiniteUpdate is returned (wrapped) by Step when the update would
// make a weight or a moment non-finite (an overflowing learning rate, say):
// nothing is changed then, and the caller may skip the step.
var ErrNonFiniteUpdate = errors.New("optim: the update would make weights or moments non-finite")

// Step applies one AdamW update with learning rate lr to w in place, from
// the gradients g, and increments Steps. w and g must have the layout o was
// built for. lr must be >= 0 and finite. (A non-finite g is refused as
// below; callers check its norm first, to say why the step is skipped.)
// Before writing anything Step makes sure that every new weight and
// moment is finite (float32): by a bound when it suffices (see
// updateIsSafe), else by computing the update once without storing it;
// when one would not be, it returns ErrNonFiniteUpdate and leaves w, the
// moments and Steps unchanged.
func (o *AdamW) Step(w, g *params.Store, lr float64) error {
	if !(lr >= 0) || math.IsInf(lr, 0) {
		return fmt.Errorf("optim: learning rate %v must be >= 0 and finite", lr)
	}
	if err := o.m.SameLayout(w); err != nil {
		return fmt.Errorf("optim: weights: %w", err)
	}
	if err := o.m.SameLayout(g); err != nil {
		return fmt.Errorf("optim: gradients: %w", err)
	}
	if o.step == math.MaxInt64 {
		return errors.New("optim: step count overflow")
	}
	t := float64(o.step + 1)
	k := o.kernel(lr, t)
	k.w, k.g, k.m, k.v = w.Flat(), g.Flat(), o.m.Flat(), o.v.Flat()
	if !o.updateIsSafe(&k, t) {
		var bad atomic.Bool
		o.parallel(func(c chunk) {
			if !bad.Load() && !k.check(c) {
				bad.Store(true)
			}
		})
		if bad.Load() {
			return fmt.Errorf("%w (learning rate %g)", ErrNonFiniteUpdate, lr)
		}
	}
	o.parallel(k.run)
	w.Touch()
	o.step++
	return nil
}

// parallel runs fn on every chunk, spread over GOMAXPROCS goroutines.
func (o *AdamW) parallel(fn func(chunk)) {
	workers := min(runtime.GOMAXPROCS(0), len(o.chunks))
	if workers <= 1 {
		for _, c := range o.chunks {
			fn(c)
		}
		return
	}
	var wg sync.WaitGroup
	for id := range workers {
		wg.Go(func() {
			for j := id; j < len(o.chunks); j += workers {
				fn(o.chunks[j])
			}
		})
	}
	wg.Wait()
}

// finiteLimit is the largest magnitude a weight, moment or update may
// reach in the bound of updateIsSafe: a tenth of float32's range.
const finiteLimit = math.MaxFloat32 / 10

// updateIsSafe reports whether every new weight and moment is certainly
// finite, from max|w| and max|g| (one read of each) and Adam's bound on
// its normalised step: by Cauchy-Schwarz, for moments built from one
// gradient history with beta1^2 < beta2,
//
//	|mhat / sqrt(vhat)| <= (1-b1) / sqrt((1-b2) (1 - b1^2/b2)) * sqrt(1-b2^t) / (1-b1^t),
//
// so |w_new| <= max|w| + lr (2 C + wd max|w|), with a factor 2 on C for
// float32 rounding of the stored moments; and m, v stay finite while g^2
// is. A false result only means the update must be checked element by
// element.
func (o *AdamW) updateIsSafe(k *kernel, t float64) bool {
	if !(o.cfg.Beta1*o.cfg.Beta1 < o.cfg.Beta2) {
		return false
	}
	var mu sync.Mutex
	maxW, maxG := 0.0, 0.0
	o.parallel(func(c chunk) {
		mw, mg := maxAbs(k.w[c.lo:c.hi]), maxAbs(k.g[c.lo:c.hi])
		mu.Lock()
		maxW, maxG = math.Max(maxW, mw), math.Max(maxG, mg)
		mu.Unlock()
	})
	return o.boundIsSafe(maxW, maxG, k.LR, k.WeightDecay, t)
}

// boundIsSafe is updateIsSafe's bound for update t from maxW = max|w|
// and maxG = max|g| (+Inf for a NaN).
func (o *AdamW) boundIsSafe(maxW, maxG, lr, wd, t float64) bool {
	b1, b2 := o.cfg.Beta1, o.cfg.Beta2
	if !(b1*b1 < b2) || !(maxG*maxG < finiteLimit) || !(maxW < finiteLimit) {
		return false
	}
	c := (1 - b1) / math.Sqrt((1-b2)*(1-b1*b1/b2)) * math.Sqrt(1-math.Pow(b2, t)) / (1 - math.Pow(b1, t))
	return maxW+lr*(2*c+wd*maxW) < finiteLimit
}

// Coefficients are the scalars of one update, as Step's kernel computes
// each element with them (in float64, the moments rounded to float32):
//
//	m = B1*m + A1*g,  v = B2*v + A2*g*g
//	w = w - LR*((m*Inv1) / (sqrt(v*Inv2) + Eps) + wd*w)
//
// with wd = WeightDecay for decayed tensors (Decayed), else 0.
type Coefficients struct {
	B1, A1, B2, A2, Inv1, Inv2, LR, Eps, WeightDecay float64
}

// Next returns the coefficients of update Steps()+1 at learning rate lr,
// whether the bound of Step's check holds for weights and gradients whose
// largest magnitudes are maxW and maxG (+Inf for a NaN; when it does not,
// the update must be checked element by element), for an optimiser that
// keeps the moments elsewhere (the device) and then calls SetSteps.
func (o *AdamW) Next(lr, maxW, maxG float64) (c Coefficients, safe bool) {
	t := float64(o.step + 1)
	k := o.kernel(lr, t)
	return k.Coefficients, o.boundIsSafe(maxW, maxG, lr, k.WeightDecay, t)
}

// kernel returns the update's scalars for update t (no buffers),
// computed once for all elements.
func (o *AdamW) kernel(lr, t float64) kernel {
	b1, b2 := o.cfg.Beta1, o.cfg.Beta2
	return kernel{Coefficients: Coefficients{B1: b1, A1: 1 - b1, B2: b2, A2: 1 - b2,
		Inv1: 1 / (1 - math.Pow(b1, t)), Inv2: 1 / (1 - math.Pow(b2, t)), LR: lr, Eps: o.cfg.Eps, WeightDecay: o.cfg.WeightDecay}}
}

func maxAbs(x []float32) float64 {
	m := float32(0)
	for _, v := range x {
		if v > m {
			m = v
		} else if -v > m {
			m = -v
		} else if v != v { // NaN fails both comparisons: unsafe
			return math.Inf(1)
		}
	}
	return float64(m)
}

type kernel struct {
	Coefficients
	w, g, m, v []float32
}

func (k *kernel) decayOf(c chunk) float64 {
	if c.decay {
		return k.WeightDecay
	}
	return 0
}

// moments returns an element's new moments from its gradient.
func (k *kernel) moments(g, m, v float32) (nm, nv float32) {
	gi := float64(g)
	return float32(k.B1*float64(m) + k.A1*gi), float32(k.B2*float64(v) + k.A2*gi*gi)
}

// weight returns an element's new weight from its new moments, with
// decay wd. It uses the stored (rounded) moments, as an all-float32
// optimiser such as PyTorch's does.
func (k *kernel) weight(w, nm, nv float32, wd float64) float32 {
	mhat, vhat, wi := float64(nm)*k.Inv1, float64(nv)*k.Inv2, float64(w)
	return float32(wi - k.LR*(mhat/(math.Sqrt(vhat)+k.Eps)+wd*wi))
}

// run applies the update to chunk c. (moments and weight are inlined:
// the loop makes no call per element.)
func (k *kernel) run(c chunk) {
	w, g, m, v := k.w[c.lo:c.hi], k.g[c.lo:c.hi], k.m[c.lo:c.hi], k.v[c.lo:c.hi]
	g, m, v = g[:len(w)], m[:len(w)], v[:len(w)]
	wd := k.decayOf(c)
	for i := range w {
		nm, nv := k.moments(g[i], m[i], v[i])
		w[i], m[i], v[i] = k.weight(w[i], nm, nv, wd), nm, nv
	}
}

// check reports whether the update of chunk c keeps every value finite,
// without storing it.
func (k *kernel) check(c chunk) bool {
	w, g, m, v := k.w[c.lo:c.hi], k.g[c.lo:c.hi], k.m[c.lo:c.hi], k.v[c.lo:c.hi]
	g, m, v = g[:len(w)], m[:len(w)], v[:len(w)]
	wd := k.decayOf(c)
	for i := range w {
		nm, nv := k.moments(g[i], m[i], v[i])
		if nw := k.weight(w[i], nm, nv, wd); !finite32(nw) || !finite32(nm) || !finite32(nv) {
			return false
		}
	}
	return true
}

func finite32(x float32) bool { return !math.IsNaN(float64(x)) && !math.IsInf(float64(x), 0) }
