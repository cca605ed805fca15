// Package modeltest holds test helpers shared by the model packages' tests.
package modeltest

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/spiral-rl/spiral/model"
)

// shared is the one Runtime of a test binary: onnxruntime_go keeps its
// environment in package state, so tests share it instead of each opening
// and closing one. It lives until the test process exits.
var shared struct {
	once sync.Once
	rt   *model.Runtime
	err  error
}

// Runtime returns the test binary's CPU Runtime (2 intra-op threads),
// opening it on first use. It skips the test with the setup command when
// no library can be loaded and $CI is unset; in CI (CI=true) a missing
// library fails the test.
func Runtime(t testing.TB) *model.Runtime {
	t.Helper()
	shared.once.Do(func() {
		shared.rt, shared.err = model.OpenRuntime(model.RuntimeOptions{Threads: 2})
	})
	if shared.err != nil {
		if os.Getenv("CI") == "" {
			t.Skipf("ONNX Runtime not available (run %s): %v", model.SetupCommand, shared.err)
		}
		t.Fatalf("ONNX Runtime not available: %v", shared.err)
	}
	return shared.rt
}

// SequenceLogits runs lm (an LM whose logits cover every position, such
// as model.Policy.Scorer) on the single sequence ids from an empty cache,
// and returns its logits, [len(ids) x vocab]: the plain full-sequence
// reference that cached and batched paths are compared with.
func SequenceLogits(t testing.TB, lm *model.LM, ids []int64) []float32 {
	t.Helper()
	T := len(ids)
	mask, pos := make([]int64, T), make([]int64, T)
	for i := range mask {
		mask[i], pos[i] = 1, int64(i)
	}
	logits, err := lm.Forward(context.Background(), model.Step{Batch: 1, Seq: T, InputIDs: ids, AttentionMask: mask, PositionIDs: pos}, lm.NewKVCache(1, T), nil)
	if err != nil {
		t.Fatalf("forward of %d tokens: %v", T, err)
	}
	return logits
}

// FixtureParameter is one entry of a fixture's parameters.json (made by
// the dynamo and optimum fixtures' make_fixture.py from PyTorch):
// transformers' named parameter, its shape, and the ONNX initializers
// holding it as is or transposed.
type FixtureParameter struct {
	Name         string   `json:"name"`
	Shape        []int64  `json:"shape"`
	Initializers []string `json:"initializers"`
	Transposed   []string `json:"transposed_initializers"`
}

// FixtureParameters reads the "parameters" list of the parameters.json in
// the fixture directory dir.
func FixtureParameters(t testing.TB, dir string) []FixtureParameter {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "parameters.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Parameters []FixtureParameter `json:"parameters"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatalf("%s: %v", dir, err)
	}
	return doc.Parameters
}
