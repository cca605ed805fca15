package rl

import (
	"fmt"
	"sort"

	"github.com/spiral-rl/spiral/model"
)

// Sample is one trace to train on: its prompt, its completion, the
// completion's per-token log-probabilities at sampling time, and the
// advantage that every completion token carries.
type Sample struct {
	Prompt     []int32
	Completion []int32
	// OldLogProbs [len(Completion)] are log pi_old of each completion token.
	OldLogProbs []float32
	Advantage   float32
	// Kind tags the trace for metrics ("search", "aggregate", "grpo").
	Kind string
}

// Len is the sample's sequence length (prompt + completion).
func (s Sample) Len() int { return len(s.Prompt) + len(s.Completion) }

// MicroBatches packs samples into training micro-batches of right-padded
// rows, longest first, each holding at most maxTokens = rows x longest
// positions (a sample longer than maxTokens gets a micro-batch of its
// own). Position t of a row scores token t+1, so the loss mask covers the
// positions len(prompt)-1 .. len-2. It returns the batches and their loss
// token counts.
func MicroBatches(samples []Sample, maxTokens int, clipLow, clipHigh float32) ([]model.TrainBatch, []int, error) {
	order := make([]int, len(samples))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return samples[order[a]].Len() > samples[order[b]].Len() })
	var batches []model.TrainBatch
	var tokens []int
	for start := 0; start < len(order); {
		T := samples[order[start]].Len()
		rows := 1
		if maxTokens > 0 {
			rows = max(1, maxTokens/T)
		} else {
			rows = len(order)
		}
		end := min(len(order), start+rows)
		b, n, err := packRows(samples, order[start:end], T, clipLow, clipHigh)
		if err != nil {
			return nil, nil, err
		}
		batches = append(batches, b)
		tokens = append(tokens, n)
		start = end
	}
	return batches, tokens, nil
}

func packRows(samples []Sample, idx []int, T int, clipLow, clipHigh float32) (model.TrainBatch, int, error) {
	B := len(idx)
	b := model.TrainBatch{Batch: B, Seq: T, ClipLow: clipLow, ClipHigh: clipHigh,
		InputIDs: make([]int64, B*T), AttentionMask: make([]int64, B*T), PositionIDs: make([]int64, B*T),
		LossMask: make([]float32, B*T), Advantages: make([]float32, B*T), OldLogProbs: make([]float32, B*T)}
	n := 0
	for r, i := range idx {
		s := samples[i]
		if len(s.Prompt) == 0 {
			return b, 0, fmt.Errorf("rl: sample %d has an empty prompt", i)
		}
		if len(s.OldLogProbs) != len(s.Completion) {
			return b, 0, fmt.Errorf("rl: sample %d has %d log-probabilities for %d completion tokens", i, len(s.OldLogProbs), len(s.Completion))
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
			b.OldLogProbs[row+t] = s.OldLogProbs[j]
			n++
		}
	}
	return b, n, nil
}
