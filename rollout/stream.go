package rollout

// Phase keeps apart the random streams of the different uses of one seed:
// the search traces, the subset draws and the aggregation traces of a
// SPIRAL rollout, RSA, evaluation and plain generation.
type Phase uint64

// The phases of a Stream.
const (
	PhaseSearch Phase = iota + 1
	PhaseSubsets
	PhaseAggregate
	PhaseRSA
	PhaseEval
	PhaseGenerate
)

// Stream names one random stream, so that every trace and every subset
// draw has its own, reproducible whatever batch it runs in.
type Stream struct {
	// Seed is the run's seed (--seed).
	Seed uint64
	// Round is the rollout round: in training, step x draw rounds + the
	// dynamic-sampling round of the step, counted from where a resume
	// that changed --draw-rounds left them (rl.DrawStreams: its base
	// plus the steps since times the new draw rounds); in RSA, the
	// aggregation step; otherwise 0.
	Round uint64
	// Problem is the problem's index in its round; Sample the trace's (or
	// subset's) index among that problem's.
	Problem, Sample uint64
	Phase           Phase
	// AggRound is a SPIRAL rollout's aggregation round, from 0; it is
	// mixed in only when non-zero, so the first round's streams are those
	// of a one-round rollout.
	AggRound uint64
}

// Derive mixes the stream's fields into one 64-bit seed with SplitMix64
// finalisers: h = Seed; then h = splitmix(h ^ splitmix(v + golden)) for v
// in (Round, Problem, Sample, Phase), then AggRound when it is non-zero.
func (s Stream) Derive() uint64 {
	h := s.Seed
	fields := []uint64{s.Round, s.Problem, s.Sample, uint64(s.Phase)}
	if s.AggRound != 0 {
		fields = append(fields, s.AggRound)
	}
	for _, v := range fields {
		h = splitmix(h ^ splitmix(v+0x9e3779b97f4a7c15))
	}
	return h
}

// splitmix is SplitMix64's output function (Steele, Lea and Flood,
// "Fast splittable pseudorandom number generators", OOPSLA 2014).
func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}
