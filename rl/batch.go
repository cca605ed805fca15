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
// own; maxTokens <= 0 puts all in one). Position t of a row scores token
// t+1, so the loss mask covers the positions len(prompt)-1 .. len-2. It
// returns the batches and their loss token counts.
func MicroBatches(examples []Example, maxTokens int, clipLow, clipHigh float32) ([]model.TrainBatch, []int, error) {
	bs, tokens, _, err := microBatches(examples, maxTokens, clipLow, clipHigh, false)
	return bs, tokens, err
}

// microBatches is MicroBatches; detached batches carry no old
// log-probabilities (model.TrainBatch.OldLogProbs nil). It also returns,
// per batch, the examples' engine log-probabilities at the loss
// positions (NaN where an example has none; nil for a batch without any).
func microBatches(examples []Example, maxTokens int, clipLow, clipHigh float32, detached bool) ([]model.TrainBatch, []int, [][]float32, error) {
	order := make([]int, len(examples))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return examples[order[a]].Len() > examples[order[b]].Len() })
	var batches []model.TrainBatch
	var tokens []int
	var engine [][]float32
	for start := 0; start < len(order); {
		T := examples[order[start]].Len()
		rows := len(order)
		if maxTokens > 0 {
			rows = max(1, maxTokens/T)
		}
		end := min(len(order), start+rows)
		b, n, err := packRows(examples, order[start:end], T, clipLow, clipHigh, detached)
		if err != nil {
			return nil, nil, nil, err
		}
		batches = append(batches, b)
		tokens = append(tokens, n)
		engine = append(engine, engineLogProbs(examples, order[start:end], T))
		start = end
	}
	return batches, tokens, engine, nil
}

// engineLogProbs lays the engine log-probabilities of examples idx out
// like packRows lays their tokens (rows of T positions, NaN where there
// is none), or returns nil when none of them has any.
func engineLogProbs(examples []Example, idx []int, T int) []float32 {
	var out []float32
	for r, i := range idx {
		s := examples[i]
		if len(s.EngineLogProbs) != len(s.Completion) || len(s.Completion) == 0 {
			continue
		}
		if out == nil {
			out = make([]float32, len(idx)*T)
			for k := range out {
				out[k] = float32(math.NaN())
			}
		}
		for j, lp := range s.EngineLogProbs {
			out[r*T+len(s.Prompt)-1+j] = lp
		}
	}
	return out
}

func packRows(examples []Example, idx []int, T int, clipLow, clipHigh float32, detached bool) (model.TrainBatch, int, error) {
	B := len(idx)
	b := model.TrainBatch{Batch: B, Seq: T, ClipLow: clipLow, ClipHigh: clipHigh,
		InputIDs: make([]int64, B*T), AttentionMask: make([]int64, B*T), PositionIDs: make([]int64, B*T),
		LossMask: make([]float32, B*T), Advantages: make([]float32, B*T)}
	if !detached {
		b.OldLogProbs = make([]float32, B*T)
	}
	n := 0
	for r, i := range idx {
		s := examples[i]
		if len(s.Prompt) == 0 {
			return b, 0, fmt.Errorf("rl: example %d has an empty prompt", i)
		}
		if !detached && len(s.OldLogProbs) != len(s.Completion) {
			return b, 0, fmt.Errorf("rl: example %d has %d log-probabilities for %d completion tokens", i, len(s.OldLogProbs), len(s.Completion))
		}
		row := r * T
		for t, id := range s.Prompt {
			b.InputIDs[row+t] = int64(id)
		}
		for t, id := range s.Completion {
			b.InputIDs[row+len(s.Prompt)+t] = int64(id)
		}
		for t := 0; t < s.Len(); t++ {
			b.AttentionMask[row+t] = 1
			b.PositionIDs[row+t] = int64(t)
		}
		for j := range s.Completion {
			t := len(s.Prompt) - 1 + j // position whose next token is completion[j]
			b.LossMask[row+t] = 1
			b.Advantages[row+t] = s.Advantage
			if !detached {
				b.OldLogProbs[row+t] = s.OldLogProbs[j]
			}
			n++
		}
	}
	return b, n, nil
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
}

// GradientStats summarise one Gradients call.
type GradientStats struct {
	// Loss, Entropy and NLL (-log-probability of the trained tokens) are
	// token-means over the loss tokens.
	Loss, Entropy, NLL float64
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
	batches, tokens, engine, err := microBatches(examples, opt.MicroBatchTokens, float32(opt.ClipLow), float32(opt.ClipHigh), opt.Detached)
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
	gs.NLL = nllSum / float64(gs.LossTokens)
	if gs.EngineTokens > 0 {
		gs.EngineAbsDiff = engineSum / float64(gs.EngineTokens)
	}
	return gs, nil
}
