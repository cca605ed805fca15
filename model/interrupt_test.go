package model_test

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/spiral-rl/spiral/model"
	"github.com/spiral-rl/spiral/model/lmgraph"
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

// TestPrepareArtifactsStopsWhenCancelled: a build cancelled at each of
// the points where it looks at its context (before the graphs are made,
// before each file is written) returns an error wrapping
// context.Canceled, leaves no temporary file, and leaves the directory
// so that the next call (here for the settings of the build that was
// there, then for those of the one interrupted) gives what an
// uninterrupted build gives: the build that was there reused when the
// interruption changed none of its files, else rebuilt, every file its
// manifest names intact and no other piece graph left.
func TestPrepareArtifactsStopsWhenCancelled(t *testing.T) {
	path, _ := tinyDir(t)
	lora := model.ArtifactOptions{LoRA: lmgraph.LoRA{Rank: 2, Alpha: 4, Targets: lmgraph.LoRATargets}}
	want := map[string]model.Manifest{}
	for name, opt := range map[string]model.ArtifactOptions{"full": {}, "lora": lora} {
		a, err := model.PrepareArtifacts(context.Background(), path, t.TempDir(), opt)
		require.NoError(t, err)
		want[name] = a.Manifest
	}
	check := func(t *testing.T, dir string, opt model.ArtifactOptions, want model.Manifest) {
		t.Helper()
		a, err := model.PrepareArtifacts(context.Background(), path, dir, opt)
		require.NoError(t, err)
		require.Equal(t, want, a.Manifest)
		again, err := model.PrepareArtifacts(context.Background(), path, dir, opt)
		require.NoError(t, err)
		require.False(t, again.Rebuilt, "the files left are intact")
		entries, err := os.ReadDir(dir)
		require.NoError(t, err)
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		require.ElementsMatch(t, append(slices.Collect(maps.Keys(want.Files)), model.ManifestFile), names)
	}
	for _, before := range []string{"", "full"} {
		for n := 0; ; n++ {
			require.Less(t, n, 1000, "never built")
			dir := t.TempDir()
			if before != "" {
				_, err := model.PrepareArtifacts(context.Background(), path, dir, model.ArtifactOptions{})
				require.NoError(t, err)
			}
			ctx := &cancelAfter{Context: context.Background(), n: n}
			a, err := model.PrepareArtifacts(ctx, path, dir, lora)
			if err == nil {
				require.True(t, a.Rebuilt)
				require.Equal(t, n, ctx.calls, "every check passed")
				require.Greater(t, n, 4, "the checks of the graphs and files")
				break
			}
			require.ErrorIs(t, err, context.Canceled, "build over %q cancelled at check %d", before, n)
			require.Equal(t, "model: artifacts of "+path+": context canceled", err.Error())
			tmp, err := filepath.Glob(filepath.Join(dir, ".*"))
			require.NoError(t, err)
			require.Empty(t, tmp, "temporary files left")
			if before != "" {
				check(t, dir, model.ArtifactOptions{}, want[before])
			}
			check(t, dir, lora, want["lora"])
		}
	}
}
