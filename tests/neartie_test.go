package tests

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/spiral-rl/spiral/data/synth"
	"github.com/spiral-rl/spiral/model"
	"github.com/spiral-rl/spiral/model/embedded"
	"github.com/spiral-rl/spiral/model/modeltest"
	"github.com/spiral-rl/spiral/model/tokenizer"
	"github.com/spiral-rl/spiral/rollout"
	"github.com/spiral-rl/spiral/rollout/report"
)

// tieMargin is the widest gap between the local model's two most likely
// next tokens at which a greedy trace of another engine may take the
// second: float32 kernels that sum in other orders move these logits by
// about 1e-5. llama.cpp's float16 KV cache and flash attention moved one
// by 1.2e-3, which this margin rejects (scripts/engine/llamacpp_server.py
// turns both off); a conversion or tokenization error shows as gaps of
// tenths or more.
const tieMargin = 1e-4

// greedyTies compares the greedy RSA traces (spiral eval --traces) of the
// embedded model run locally (dir local) and through another engine (dir
// remote), on the embedded task's first test problems. Every search
// trace (step 0) must be equal. An aggregation trace may differ only from
// a near-tie: at the first token where the two differ, the local model,
// fed the same aggregation prompt (rebuilt from the trace's candidates)
// and the common prefix, must rank the local token first and the other
// engine's second, within tieMargin. It returns, per step, the local
// traces' generated tokens minus the remote ones', which is what the
// two reports' generated-token counts may differ by, and the number of
// traces that diverged.
func greedyTies(t *testing.T, local, remote string) (tokenDiff map[int]int, diverged int) {
	t.Helper()
	read := func(dir string) map[[3]int]report.TraceRecord {
		f, err := os.Open(filepath.Join(dir, "rsa.traces.jsonl"))
		require.NoError(t, err)
		defer f.Close()
		recs, err := report.ReadTraces(f)
		require.NoError(t, err)
		out := make(map[[3]int]report.TraceRecord, len(recs))
		for _, r := range recs {
			out[[3]int{r.Step, r.Problem, r.Sample}] = r
		}
		return out
	}
	loc, rem := read(local), read(remote)
	require.Equal(t, len(loc), len(rem), "traces in the two runs")

	dir, err := embedded.Extract(t.TempDir())
	require.NoError(t, err)
	tok, err := tokenizer.Load(filepath.Join(dir, "tokenizer.json"))
	require.NoError(t, err)
	defer tok.Close()
	pol, err := model.OpenPolicy(context.Background(), modeltest.Runtime(t), filepath.Join(dir, "model.onnx"), t.TempDir(), model.PolicyOptions{})
	require.NoError(t, err)
	defer func() { require.NoError(t, pol.Close()) }()
	lm, err := pol.Scorer()
	require.NoError(t, err)
	prompter := rollout.ChatPrompter{Tok: tok, Templates: synth.Templates()}

	maxProblem := 0
	for k := range loc {
		maxProblem = max(maxProblem, k[1])
	}
	problems, err := synth.EmbeddedSplit(synth.Test, maxProblem+1)
	require.NoError(t, err)

	tokenDiff = map[int]int{}
	for k, l := range loc {
		r, ok := rem[k]
		require.True(t, ok, "step %d problem %d sample %d: no remote trace", k[0], k[1], k[2])
		require.Equal(t, problems.Problems[k[1]].ID, l.ID, "problem %d: the traces are not of the embedded test split", k[1])
		require.Equal(t, l.Candidates, r.Candidates, "step %d problem %d sample %d: candidates", k[0], k[1], k[2])
		if l.Text == r.Text {
			continue
		}
		require.NotZero(t, k[0], "problem %d sample %d: search traces differ: %q locally, %q remotely", k[1], k[2], l.Text, r.Text)
		diverged++
		tokenDiff[k[0]] += l.Tokens - r.Tokens

		cands := make([]string, len(l.Candidates))
		for i, c := range l.Candidates {
			cands[i] = loc[[3]int{k[0] - 1, k[1], c}].Text
		}
		prompt, err := prompter.AggregatePrompt(problems.Problems[k[1]].Problem, cands)
		require.NoError(t, err)
		lt, rt := tok.Encode(l.Text), tok.Encode(r.Text)
		d := 0
		for d < len(lt) && d < len(rt) && lt[d] == rt[d] {
			d++
		}
		logits := lastLogits(t, lm, append(slices.Clone(prompt), lt[:d]...))
		// A text that ends at d ended with a stop id (its most likely one).
		next := func(ids []int32) int32 {
			if d < len(ids) {
				return ids[d]
			}
			best := tok.StopIDs()[0]
			for _, id := range tok.StopIDs() {
				if logits[id] > logits[best] {
					best = id
				}
			}
			return best
		}
		ln, rn := next(lt), next(rt)
		top := 0
		for id, v := range logits {
			if v > logits[top] {
				top = id
			}
		}
		gap := float64(logits[ln] - logits[rn])
		t.Logf("step %d problem %d sample %d: diverges after %q: %q locally, %q remotely, logit gap %.2g",
			k[0], k[1], k[2], prompter.Text(lt[:d]), prompter.Text([]int32{ln}), prompter.Text([]int32{rn}), gap)
		require.Equal(t, int32(top), ln, "step %d problem %d sample %d: the rebuilt prompt does not reproduce the local greedy token", k[0], k[1], k[2])
		require.Less(t, math.Abs(gap), tieMargin, "step %d problem %d sample %d: the engines disagree where the local model is not near a tie", k[0], k[1], k[2])
	}
	return tokenDiff, diverged
}

// lastLogits runs lm over ids and returns the logits of the last position.
func lastLogits(t *testing.T, lm *model.LM, ids []int32) []float32 {
	t.Helper()
	T, V := len(ids), lm.Signature().Vocab
	in := make([]int64, T)
	for i, id := range ids {
		in[i] = int64(id)
	}
	return modeltest.SequenceLogits(t, lm, in)[(T-1)*V:]
}
