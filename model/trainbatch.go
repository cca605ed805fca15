package model

import "math/rand/v2"

// TrainBatch is one micro-batch of B right-padded rows of T positions.
// Position t's loss terms score token t+1 (see autodiff.LossGraph).
type TrainBatch struct {
	Batch, Seq int
	// InputIDs, AttentionMask, PositionIDs are [B, T].
	InputIDs, AttentionMask, PositionIDs []int64
	// Segments, when set [B, T], pack rows: 0 marks a row's shared
	// prompt (and every position of a row not packed), 1, 2, ... its
	// branches, completions of that prompt laid one after another, each
	// seeing the prompt and itself but no other branch, its positions
	// (PositionIDs) going on from the prompt's end. Nil: no row is
	// packed. Executor.PackedRows says whether the executor takes them.
	Segments []int64
	// LossMask and Advantages are [B, T], aligned with the token they
	// score at t+1.
	LossMask, Advantages []float32
	// OldLogProbs [B, T] are log pi_old of those tokens; nil means the
	// current policy's own (a detached copy): the clipped ratio is then
	// exactly 1 and the loss REINFORCE, or cross-entropy with advantage 1.
	OldLogProbs []float32
	// ClipLow and ClipHigh are the PPO clip bounds eps_low, eps_high.
	ClipLow, ClipHigh float32
}

// TrainResult holds a micro-batch's per-token outputs [B, T] (set at its
// loss positions, 0 elsewhere) and loss.
type TrainResult struct {
	LogProbs, Entropy []float32
	Loss              float32
}

// RandomTrainBatch is rows of random token ids (drawn from seed) whose
// second half is the response: the loss (REINFORCE with advantage 1 and
// detached old log-probabilities, the gradient of cross-entropy) covers
// the positions whose next token lies there. Benchmarks and tests train
// on it.
func RandomTrainBatch(rows, tokens, vocab int, seed uint64) TrainBatch {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	n := rows * tokens
	b := TrainBatch{Batch: rows, Seq: tokens, ClipLow: 0.2, ClipHigh: 0.28,
		InputIDs: make([]int64, n), AttentionMask: make([]int64, n), PositionIDs: make([]int64, n),
		LossMask: make([]float32, n), Advantages: make([]float32, n)}
	for i := range n {
		t := i % tokens
		b.InputIDs[i] = int64(rng.IntN(vocab))
		b.AttentionMask[i] = 1
		b.PositionIDs[i] = int64(t)
		if t >= tokens/2-1 && t < tokens-1 {
			b.LossMask[i], b.Advantages[i] = 1, 1
		}
	}
	return b
}

// resize returns x at length n, reallocated (contents not kept) when its
// capacity is short.
func resize[T any](x []T, n int) []T {
	if cap(x) < n {
		return make([]T, n)
	}
	return x[:n]
}
