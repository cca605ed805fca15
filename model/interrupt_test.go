package model_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/spiral-rl/spiral/model"
	"github.com/spiral-rl/spiral/model/modeltest"
)

// cancelAfter is a context that is cancelled from the n+1-th call of its
// Err on (a Ctrl-C at a chosen point of the work; its Done channel never
// closes), counting the calls.
type cancelAfter struct {
	context.Context
	n, calls int
}

func (c *cancelAfter) Err() error {
	c.calls++
	if c.calls > c.n {
		return context.Canceled
	}
	return nil
}

// TestInitialWeightsStopsWhenCancelled: the weights' reading stops at the
// next tensor once the context is done, with an error wrapping
// context.Canceled: it read a real model's gigabytes to the end (5 s of
// a qwen3-0.6b shape, minutes of a 4B model) before the first Ctrl-C
// did anything.
func TestInitialWeightsStopsWhenCancelled(t *testing.T) {
	path, _ := tinyDir(t)
	art, err := model.PrepareArtifacts(context.Background(), path, t.TempDir(), model.ArtifactOptions{})
	require.NoError(t, err)
	tensors := len(art.Manifest.Weights) + len(art.Manifest.Frozen)
	for _, n := range []int{0, 1, tensors - 1} {
		ctx := &cancelAfter{Context: context.Background(), n: n}
		_, _, err := model.InitialWeights(ctx, path, art.Manifest, 1)
		require.ErrorIs(t, err, context.Canceled, "cancelled after %d tensors", n)
		require.Equal(t, "model: "+path+": read the weights: context canceled", err.Error())
		require.Equal(t, n+1, ctx.calls, "the tensors read before it stopped")
	}
	_, _, err = model.InitialWeights(&cancelAfter{Context: context.Background(), n: tensors}, path, art.Manifest, 1)
	require.NoError(t, err, "cancelled after the last tensor: all read")
}

// TestOpenPolicyStopsWhenCancelled: OpenPolicy cancelled at each of the
// points where it looks at its context (the weights' tensors, before
// each session) returns an error wrapping context.Canceled at once, and
// leaves the artifacts directory unlocked and usable; past the last it
// opens the policy.
func TestOpenPolicyStopsWhenCancelled(t *testing.T) {
	rt := modeltest.Runtime(t)
	path, _ := tinyDir(t)
	dir := t.TempDir()
	for n := 0; ; n++ {
		require.Less(t, n, 1000, "never opened")
		ctx := &cancelAfter{Context: context.Background(), n: n}
		start := time.Now()
		p, err := model.OpenPolicy(ctx, rt, path, dir, model.PolicyOptions{Train: true})
		if err == nil {
			require.NoError(t, p.Close())
			require.Equal(t, n, ctx.calls, "every check passed")
			require.Greater(t, n, 2, "the checks of the weights and the sessions")
			return
		}
		require.ErrorIs(t, err, context.Canceled, "cancelled at check %d", n)
		require.Less(t, time.Since(start), 10*time.Second)
	}
}
