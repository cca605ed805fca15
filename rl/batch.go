package rl

import (
	"context"
	"fmt"
	"math"
	"sort"

	"github.com/spiral-rl/spiral/model"
	"github.com/spiral-rl/spiral/model/params"
)

// Kinds of Example, for metrics.
const (
	KindSearch    = "search"
	KindAggregate = "aggregate"
	KindGRPO      = "grpo"
	KindSFT       = "sft"
)

// Example is one trace as training sees it: its prompt, its completion,
// log pi_old of each completion token, and the advantage that every
// completion token carries (1 for supervised examples).
type Example struct {
	Prompt     []int32
	Completion []int32
	// OldLogProbs [len(Completion)] are log pi_old of each completion token.
	OldLogProbs []float32
	// EngineLogProbs, when set [len(Completion)], are a serving engine's
	// log-probabilities of the completion: compared with the learner's
	// (GradientStats), never used in the loss.
	EngineLogProbs []float32
	Advantage      float32
	// Kind tags the example for metrics (KindSearch, KindAggregate, ...).
	Kind string
}

// Len is the example's sequence length (prompt + completion).
func (e Example) Len() int { return len(e.Prompt) + len(e.Completion) }

// MicroBatches packs examples into training micro-batches of right-padded
// rows, longest first, each holding at most maxTokens = rows x longest
// positions (an example longer than maxTokens gets a micro-batch of its
// own; maxTokens <= 0 puts all in one): the fewest micro-batches, cut
// where they pad the fewest positions (callsOf). Position t of a row scores token
// t+1, so the loss mask covers the positions len(prompt)-1 .. len-2. It
// returns the batches and their loss token counts.
func MicroBatches(examples []Example, maxTokens int, clipLow, clipHigh float32) ([]model.TrainBatch, []int, error) {
	bs, tokens, _, _, err := microBatches(examples, maxTokens, clipLow, clipHigh, false, false)
	return bs, tokens, err
}

// PackedMicroBatches is MicroBatches with the completions of one prompt
// packed in the fewest rows that cost less and fit maxTokens, as
// Gradients lays them out with PackPrompts for a learner that takes
// packed rows (rowsOf).
func PackedMicroBatches(examples []Example, maxTokens int, clipLow, clipHigh float32) ([]model.TrainBatch, []int, error) {
	bs, tokens, _, _, err := microBatches(examples, maxTokens, clipLow, clipHigh, false, true)
	return bs, tokens, err
}

// row is one row of a micro-batch: one example, or several completions
// of one prompt packed (model.TrainBatch.Segments): the prompt but its
// last token, then for each completion that token and the completion.
type row struct {
	members   []int // indices of the examples; more than one: packed
	positions int
}

// starts returns, for each member of r, the position of r whose next
// token is the member's first completion token.
func (r row) starts(examples []Example) []int {
	p := len(examples[r.members[0]].Prompt)
	out := make([]int, len(r.members))
	at := p - 1
	for k, i := range r.members {
		out[k] = at
		at += 1 + len(examples[i].Completion)
	}
	return out
}

// rowsOf lays examples out as rows: each alone, or with pack, the
// completions of one prompt (equal token sequences) cut into rows by
// splitGroup: packed where worthPacking says so, within maxTokens (a
// micro-batch's positions; <= 0 unbounded), since a packed row is longer
// than any of its completions' own rows and one that passed maxTokens
// would take more memory than the run was sized for.
func rowsOf(examples []Example, pack bool, maxTokens int) []row {
	var rows []row
	if !pack {
		for i, e := range examples {
			rows = append(rows, row{members: []int{i}, positions: e.Len()})
		}
		return rows
	}
	groups := map[string][]int{}
	var order []string
	for i, e := range examples {
		k := promptKey(e.Prompt)
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], i)
	}
	for _, k := range order {
		g := groups[k]
		p := len(examples[g[0]].Prompt)
		comps := make([]int, len(g))
		for j, i := range g {
			comps[j] = len(examples[i].Completion)
		}
		start := 0
		for _, end := range splitGroup(p, comps, maxTokens) {
			// p + c positions alone; packed, the prompt but its last
			// token, then each completion with that token again.
			n := p - 1
			for _, c := range comps[start:end] {
				n += 1 + c
			}
			rows = append(rows, row{members: g[start:end], positions: n})
			start = end
		}
	}
	return rows
}

// splitGroup cuts the completions of lengths comps of one prompt of p
// tokens, in order, into runs that each make one row: a completion
// alone (p + c positions, whatever its length), or several packed (the
// prompt but its last token, then each completion with that token
// again: p - 1 + sum(1 + c)) where that is worth packing (worthPacking)
// and fits maxTokens (<= 0 unbounded). Each row costs the prompt's
// positions once and the completions theirs, so the fewest rows cost
// the fewest positions: it takes the fewest (exact over the cuts that
// keep the group's order, so over every split of equal completions),
// and of those the cut whose longest packed row, which sets the memory,
// is shortest, then whose attention (the rows' squared lengths summed)
// is least. Sixteen 16-token completions of a 48-token prompt, too many
// for one row worth packing, are 6 + 5 + 5; four that do not fit one
// row are 2 + 2, not 3 + 1; a completion too long to share a row stays
// apart. It returns the end of each run.
func splitGroup(p int, comps []int, maxTokens int) []int {
	n := len(comps)
	sum := make([]int, n+1)
	for j, c := range comps {
		sum[j+1] = sum[j] + 1 + c
	}
	length := func(i, j int) int { return p - 1 + sum[j] - sum[i] }
	// packs[i][j-i-2]: the completions i..j-1 (two or more), whose row
	// fits, are worth packing (worthPacking(p, comps[i:j]), its sums
	// kept from j to j+1); none with an empty prompt (no token to branch
	// from). A run from i passes maxTokens from the first j that does.
	packs := make([][]bool, n)
	for i := range packs {
		separate := (p + comps[i]) * (p + comps[i])
		for j := i + 2; j <= n && p > 0 && (maxTokens <= 0 || length(i, j) <= maxTokens); j++ {
			separate += (p + comps[j-1]) * (p + comps[j-1])
			packs[i] = append(packs[i], length(i, j)*length(i, j) <= separate)
		}
	}
	// within reports whether the run i..j-1 fits one row of at most
	// bound positions (a completion alone always does); false for it
	// goes on for every earlier i.
	within := func(i, j, bound int) bool {
		return j == i+1 || j-i-2 < len(packs[i]) && length(i, j) <= bound
	}
	// rows is the fewest runs whose packed rows are at most bound long.
	rows := func(bound int) int {
		fewest := make([]int, n+1)
		for j := 1; j <= n; j++ {
			fewest[j] = fewest[j-1] + 1
			for i := j - 2; i >= 0 && within(i, j, bound); i-- {
				if packs[i][j-i-2] {
					fewest[j] = min(fewest[j], fewest[i]+1)
				}
			}
		}
		return fewest[n]
	}
	k := rows(math.MaxInt)
	bound := sort.Search(length(0, n), func(b int) bool { return rows(b) <= k })
	// cost[j] after round m: the least attention of the first j
	// completions in m runs under bound, from[m][j] the start of the last
	// of them; ties go to the shortest last run, so that the longer runs
	// come first.
	const inf = math.MaxInt
	cost, next := make([]int, n+1), make([]int, n+1)
	for j := range cost {
		cost[j] = inf
	}
	cost[0] = 0
	from := make([][]int32, k+1)
	for m := 1; m <= k; m++ {
		from[m] = make([]int32, n+1)
		for j := range next {
			next[j] = inf
		}
		for j := m; j <= n; j++ {
			for i := j - 1; i >= m-1 && within(i, j, bound); i-- {
				if cost[i] == inf || i < j-1 && !packs[i][j-i-2] {
					continue
				}
				if c := cost[i] + length(i, j)*length(i, j); c < next[j] {
					next[j], from[m][j] = c, int32(i)
				}
			}
		}
		cost, next = next, cost
	}
	ends := make([]int, k)
	for m, j := k, n; m > 0; m-- {
		ends[m-1] = j
		j = int(from[m][j])
	}
	return ends
}

// promptKey is a map key of a prompt's tokens.
func promptKey(p []int32) string {
	b := make([]byte, 4*len(p))
	for i, t := range p {
		b[4*i], b[4*i+1], b[4*i+2], b[4*i+3] = byte(t), byte(t>>8), byte(t>>16), byte(t>>24)
	}
	return string(b)
}

// worthPacking reports whether completions of lengths comps of one
// prompt of p tokens cost less packed in one row than as separate rows:
// packed, the prompt's p-1 positions are computed once, which always
// saves the position-wise work (projections, MLP, the loss); attention
// runs each query against every key before it in its row, so a packed
// row of n positions costs n^2 against the separate rows' sum of
// (p + c)^2. It packs when that does not grow: a long prompt with short
// completions (aggregation prompts holding the candidates), not a short
// one with long completions (search traces of one question).
func worthPacking(p int, comps []int) bool {
	n, separate := p-1, 0
	for _, c := range comps {
		n += 1 + c
		separate += (p + c) * (p + c)
	}
	return n*n <= separate
}

// microBatches is MicroBatches; detached batches carry no old
// log-probabilities (model.TrainBatch.OldLogProbs nil); with pack, the
// completions of one prompt share a row where that costs less (rowsOf).
// It also returns, per batch, the examples' engine log-probabilities at
// the loss positions (NaN where an example has none; nil for a batch
// without any).
func microBatches(examples []Example, maxTokens int, clipLow, clipHigh float32, detached, pack bool) ([]model.TrainBatch, []int, [][]float32, [][]int32, error) {
	rows := rowsOf(examples, pack, maxTokens)
	sort.SliceStable(rows, func(a, b int) bool { return rows[a].positions > rows[b].positions })
	var batches []model.TrainBatch
	var tokens []int
	var engine [][]float32
	var owners [][]int32
	start := 0
	for _, end := range callsOf(rows, maxTokens) {
		T := rows[start].positions
		b, owner, n, err := packRows(examples, rows[start:end], T, clipLow, clipHigh, detached)
		if err != nil {
			return nil, nil, nil, nil, err
		}
		batches = append(batches, b)
		tokens = append(tokens, n)
		engine = append(engine, engineLogProbs(examples, rows[start:end], T))
		owners = append(owners, owner)
		start = end
	}
	return batches, tokens, engine, owners, nil
}

// callsOf cuts rows, longest first, into micro-batches of consecutive
// rows, each padding its rows to its first's positions and holding at
// most maxTokens of them (rows x that length; a row longer than
// maxTokens alone; <= 0: one call of all): the fewest calls, and of
// those the cut that pads the fewest positions (rows x length summed),
// then the one whose first calls hold the most rows. Taking rows while
// they fit gives as few calls, but pads short rows to long ones: rows of
// 16, 12, 12, 4, 4 and 4 under 36 were 16 + 12 | 12 + 4 + 4 | 4, 72
// positions, against 16 | 12 + 12 | 4 + 4 + 4, 52 (the embedded
// default's steps: 23-30% fewer positions, in as many calls). It
// returns the end of each call, by dynamic programming over where the
// calls after a row begin (exact: both counts add up over the calls).
func callsOf(rows []row, maxTokens int) []int {
	n := len(rows)
	if n == 0 {
		return nil
	}
	if maxTokens <= 0 {
		return []int{n}
	}
	// best[i]: the fewest calls of rows i.., the fewest positions they
	// pad to, and where the first of them ends.
	type plan struct{ calls, positions, end int }
	best := make([]plan, n+1)
	for i := n - 1; i >= 0; i-- {
		T := rows[i].positions
		best[i] = plan{calls: math.MaxInt}
		for j := i + 1; j <= n && (j == i+1 || (j-i)*T <= maxTokens); j++ {
			c := plan{best[j].calls + 1, best[j].positions + (j-i)*T, j}
			if c.calls < best[i].calls || c.calls == best[i].calls && c.positions <= best[i].positions {
				best[i] = c
			}
		}
	}
	var ends []int
	for i := 0; i < n; i = best[i].end {
		ends = append(ends, best[i].end)
	}
	return ends
}

// engineLogProbs lays the engine log-probabilities of rows' examples
// out like packRows lays their tokens (rows of T positions, NaN where
// there is none), or returns nil when none of them has any.
func engineLogProbs(examples []Example, rows []row, T int) []float32 {
	var out []float32
	for r, rw := range rows {
		for k, t0 := range rw.starts(examples) {
			s := examples[rw.members[k]]
			if len(s.EngineLogProbs) != len(s.Completion) || len(s.Completion) == 0 {
				continue
			}
			if out == nil {
				out = make([]float32, len(rows)*T)
				for k := range out {
					out[k] = float32(math.NaN())
				}
			}
			for j, lp := range s.EngineLogProbs {
				out[r*T+t0+j] = lp
			}
		}
	}
	return out
}

// packRows lays rows out as a micro-batch of T positions a row, with
// Segments where a row is packed, and returns with it the index of the
// example each loss position scores a completion token of (owner; -1
// elsewhere) and the count of loss positions.
func packRows(examples []Example, rows []row, T int, clipLow, clipHigh float32, detached bool) (b model.TrainBatch, owner []int32, n int, err error) {
	B := len(rows)
	b = model.TrainBatch{Batch: B, Seq: T, ClipLow: clipLow, ClipHigh: clipHigh,
		InputIDs: make([]int64, B*T), AttentionMask: make([]int64, B*T), PositionIDs: make([]int64, B*T),
		LossMask: make([]float32, B*T), Advantages: make([]float32, B*T)}
	owner = make([]int32, B*T)
	for k := range owner {
		owner[k] = -1
	}
	if !detached {
		b.OldLogProbs = make([]float32, B*T)
	}
	for r, rw := range rows {
		for _, i := range rw.members {
			s := examples[i]
			if len(s.Prompt) == 0 {
				return b, nil, 0, fmt.Errorf("rl: example %d has an empty prompt", i)
			}
			if !detached && len(s.OldLogProbs) != len(s.Completion) {
				return b, nil, 0, fmt.Errorf("rl: example %d has %d log-probabilities for %d completion tokens", i, len(s.OldLogProbs), len(s.Completion))
			}
		}
		base := r * T
		prompt := examples[rw.members[0]].Prompt
		starts := rw.starts(examples)
		if len(rw.members) > 1 && b.Segments == nil {
			b.Segments = make([]int64, B*T)
		}
		// The prompt (all of it for a row of one example; but its last
		// token, which each branch repeats, for a packed one).
		shared := len(prompt)
		if len(rw.members) > 1 {
			shared--
		}
		for t := range shared {
			b.InputIDs[base+t], b.AttentionMask[base+t], b.PositionIDs[base+t] = int64(prompt[t]), 1, int64(t)
		}
		for k, i := range rw.members {
			s := examples[i]
			t0 := starts[k]
			if len(rw.members) > 1 {
				// The branch: the prompt's last token again, then the
				// completion, its positions going on from the prompt's.
				b.InputIDs[base+t0], b.AttentionMask[base+t0], b.PositionIDs[base+t0] = int64(prompt[len(prompt)-1]), 1, int64(len(prompt)-1)
				for t := t0; t <= t0+len(s.Completion); t++ {
					b.Segments[base+t] = int64(k + 1)
				}
			}
			for j, id := range s.Completion {
				t := t0 + 1 + j
				b.InputIDs[base+t], b.AttentionMask[base+t], b.PositionIDs[base+t] = int64(id), 1, int64(len(prompt)+j)
			}
			for j := range s.Completion {
				t := base + t0 + j // the position whose next token is completion[j]
				b.LossMask[t] = 1
				b.Advantages[t] = s.Advantage
				owner[t] = int32(i)
				if !detached {
					b.OldLogProbs[t] = s.OldLogProbs[j]
				}
				n++
			}
		}
	}
	return b, owner, n, nil
}

// GradientOptions configures Gradients.
type GradientOptions struct {
	// MicroBatchTokens bounds rows x length of one learner call.
	MicroBatchTokens int
	// ClipLow and ClipHigh are the PPO clip bounds.
	ClipLow, ClipHigh float64
	// Detached takes the old log-probabilities to be the current ones
	// (the examples' OldLogProbs are ignored): the ratio is 1, so the
	// gradient is REINFORCE's, or cross-entropy's with advantage 1.
	Detached bool
	// PackPrompts puts the completions of one prompt in rows that
	// compute the prompt once (model.TrainBatch.Segments), the fewest
	// that each cost less than separate rows (worthPacking) and fit
	// MicroBatchTokens (rowsOf), where the learner takes packed
	// rows (model.Executor.PackedRows): the same gradient but for float
	// rounding, as with other micro-batch cuts.
	PackPrompts bool
}

// rowPacker is a Learner that may take packed rows.
type rowPacker interface {
	PackedRows() error
}

// GradientStats summarise one Gradients call.
type GradientStats struct {
	// Loss, Entropy and NLL (-log-probability of the trained tokens) are
	// token-means over the loss tokens.
	Loss, Entropy, NLL float64
	// KindEntropy is the token-mean entropy over the loss tokens of each
	// Example.Kind trained (a search trace's apart from an aggregation
	// trace's).
	KindEntropy map[string]float64
	// LossTokens counts loss tokens; Positions rows x length processed.
	LossTokens, Positions int
	// EngineTokens counts the loss tokens with an engine log-probability;
	// EngineAbsDiff and EngineMaxDiff are the mean and largest |log pi
	// (learner) - log pi (engine)| over them: near 0 when the engine
	// samples from the learner's weights.
	EngineTokens                 int
	EngineAbsDiff, EngineMaxDiff float64
}

// batchLearner is a Learner that takes a step's micro-batches in one
// call (model.Executor.AccumulateBatches: on the device layer their
// gradients are summed in device memory), calling done after each.
type batchLearner interface {
	AccumulateBatches(ctx context.Context, bs []model.TrainBatch, scales []float32, grads *params.Store, res *model.TrainResult, done func(i int) error) error
}

// Gradients computes into grads the gradient of the token-mean loss over
// all examples: it packs them into micro-batches and has the learner add
// each micro-batch's token-mean gradient scaled by its share of the loss
// tokens, tokens_k / tokens_total (see optim's package doc), so that the
// sum is the batch's token-mean gradient. grads is nil when the learner
// sums on the device for its own optimizer (model.Policy.
// UseDeviceOptimizer): the sums stay there.
func Gradients(ctx context.Context, learner Learner, grads *params.Store, examples []Example, opt GradientOptions) (GradientStats, error) {
	var gs GradientStats
	pack := false
	if p, ok := learner.(rowPacker); ok && opt.PackPrompts {
		pack = p.PackedRows() == nil
	}
	batches, tokens, engine, owners, err := microBatches(examples, opt.MicroBatchTokens, float32(opt.ClipLow), float32(opt.ClipHigh), opt.Detached, pack)
	if err != nil {
		return gs, err
	}
	for _, n := range tokens {
		gs.LossTokens += n
	}
	if grads != nil {
		grads.Zero()
	}
	var res model.TrainResult
	lossSum, entSum, nllSum, engineSum := 0.0, 0.0, 0.0, 0.0
	kindSum, kindTokens := map[string]float64{}, map[string]int{}
	// The micro-batches with loss tokens, each scaled by its share (none
	// when there are no loss tokens: a batch learner then zeroes its own
	// gradients, which may live elsewhere).
	var run []int
	var bs []model.TrainBatch
	var scales []float32
	for k := range batches {
		if tokens[k] > 0 {
			run = append(run, k)
			bs = append(bs, batches[k])
			scales = append(scales, float32(float64(tokens[k])/float64(gs.LossTokens)))
		}
	}
	// observe takes micro-batch run[i]'s result into the statistics.
	observe := func(i int) error {
		k := run[i]
		b := &batches[k]
		lossSum += float64(res.Loss) * float64(tokens[k])
		for i, mask := range b.LossMask {
			if mask == 0 {
				continue
			}
			entSum += float64(res.Entropy[i])
			kind := examples[owners[k][i]].Kind
			kindSum[kind] += float64(res.Entropy[i])
			kindTokens[kind]++
			nllSum -= float64(res.LogProbs[i])
			if e := engine[k]; e != nil && !math.IsNaN(float64(e[i])) {
				d := math.Abs(float64(res.LogProbs[i]) - float64(e[i]))
				engineSum += d
				gs.EngineMaxDiff = max(gs.EngineMaxDiff, d)
				gs.EngineTokens++
			}
		}
		gs.Positions += b.Batch * b.Seq
		return nil
	}
	if bl, ok := learner.(batchLearner); ok {
		if err := bl.AccumulateBatches(ctx, bs, scales, grads, &res, observe); err != nil {
			return gs, fmt.Errorf("rl: %d micro-batches: %w", len(bs), err)
		}
	} else {
		for i := range bs {
			if err := learner.Accumulate(ctx, bs[i], scales[i], grads, &res); err != nil {
				return gs, fmt.Errorf("rl: micro-batch %d/%d: %w", run[i]+1, len(batches), err)
			}
			if err := observe(i); err != nil {
				return gs, err
			}
		}
	}
	if gs.LossTokens == 0 {
		return gs, nil
	}
	gs.Loss = lossSum / float64(gs.LossTokens)
	gs.Entropy = entSum / float64(gs.LossTokens)
	gs.KindEntropy = make(map[string]float64, len(kindSum))
	for kind, sum := range kindSum {
		gs.KindEntropy[kind] = sum / float64(kindTokens[kind])
	}
	gs.NLL = nllSum / float64(gs.LossTokens)
	if gs.EngineTokens > 0 {
		gs.EngineAbsDiff = engineSum / float64(gs.EngineTokens)
	}
	return gs, nil
}
