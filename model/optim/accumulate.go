package optim

import (
	"fmt"

	"github.com/spiral-rl/spiral/model/params"
)

// MicroBatchScale returns the factor tokensInMicro/tokensInBatch by which
// the gradient of a micro-batch's token-mean loss is scaled before it is
// added to the batch gradient (see the package doc). It returns an error
// when the counts are negative, the batch is empty, or the micro-batch
// holds more tokens than the batch.
func MicroBatchScale(tokensInMicro, tokensInBatch int) (float32, error) {
	if tokensInBatch <= 0 || tokensInMicro < 0 || tokensInMicro > tokensInBatch {
		return 0, fmt.Errorf("optim: micro-batch of %d tokens in a batch of %d", tokensInMicro, tokensInBatch)
	}
	return float32(float64(tokensInMicro) / float64(tokensInBatch)), nil
}

// Accumulator sums micro-batch gradients into one batch gradient of a
// token-mean loss. Use one per optimiser step:
//
//	acc, _ := NewAccumulator(grads, batchTokens) // zeroes grads
//	for each micro-batch k: acc.Add(microGrads, tokensInMicro_k)
//	acc.Done() // checks that the token counts summed to batchTokens
type Accumulator struct {
	grads       *params.Store
	batchTokens int
	seen        int
}

// NewAccumulator zeroes grads and returns an Accumulator that sums into it
// for a batch of batchTokens loss tokens (> 0).
func NewAccumulator(grads *params.Store, batchTokens int) (*Accumulator, error) {
	if batchTokens <= 0 {
		return nil, fmt.Errorf("optim: accumulator for a batch of %d tokens", batchTokens)
	}
	grads.Zero()
	return &Accumulator{grads: grads, batchTokens: batchTokens}, nil
}

// Add adds micro, the gradient of a micro-batch's token-mean loss over
// tokens loss tokens, scaled by tokens/batchTokens.
func (a *Accumulator) Add(micro *params.Store, tokens int) error {
	if a.seen+tokens > a.batchTokens {
		return fmt.Errorf("optim: micro-batches hold %d tokens, more than the batch's %d", a.seen+tokens, a.batchTokens)
	}
	scale, err := MicroBatchScale(tokens, a.batchTokens)
	if err != nil {
		return err
	}
	if err := a.grads.AddScaled(micro, scale); err != nil {
		return fmt.Errorf("optim: accumulate: %w", err)
	}
	a.seen += tokens
	return nil
}

// Done returns an error unless the micro-batches added so far hold exactly
// the batch's tokens.
func (a *Accumulator) Done() error {
	if a.seen != a.batchTokens {
		return fmt.Errorf("optim: micro-batches hold %d tokens, batch has %d", a.seen, a.batchTokens)
	}
	return nil
}
