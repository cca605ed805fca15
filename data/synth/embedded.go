package synth

import "github.com/spiral-rl/spiral/data"

// The embedded task: the synthetic equations the embedded tiny model is
// warm-started on (spiral sft) and trained on (spiral train), with a
// held-out test split (spiral eval). It is the solve form ("Solve
// x*7+3=38."), where a trace derives x, then checks it, so that reading
// several candidates (whose derivations slip independently) can beat each
// of them and a vote. Its difficulty is sized to the tiny model: 3-4
// operands of 1-5, so that its arithmetic holds in most steps (its checks
// can be trusted) while the longer derivations still slip now and then
// (operands of 1-9 left its sampled arithmetic right in under half the
// steps, so its checks told a reader nothing). EmbeddedSeed fixes the
// train/test split and is the same in every command, whatever --seed
// says, so no command ever trains on the test split.
var EmbeddedConfig = Config{Form: FormSolve, MinOperands: 3, MaxOperands: 4, MinOperand: 1, MaxOperand: 5}

// EmbeddedSeed is the embedded task's seed: its split and problem order.
const EmbeddedSeed = 1

// The embedded task's problems (distinct by CanonicalExpr) in each split,
// as TestEmbeddedSplitHasNoTwins counts them: Problems refuses more at
// once, where drawing until no new one came took seconds.
const (
	embeddedTrainSize = 9991
	embeddedTestSize  = 1134
)

// Embedded returns the embedded task.
func Embedded() (*Task, error) { return New(EmbeddedConfig, EmbeddedSeed) }

// EmbeddedSplit returns the first n problems of a split of the embedded
// task, in the order every spiral command uses.
func EmbeddedSplit(s Split, n int) (*data.Dataset, error) {
	task, err := Embedded()
	if err != nil {
		return nil, err
	}
	return task.Dataset(s, n, EmbeddedSeed)
}
