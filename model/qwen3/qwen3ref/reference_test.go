package qwen3ref

import (
	"github.com/spiral-rl/spiral/model/qwen3"
	"math"
	"strings"
	"testing"
)

func TestNewReferenceErrors(t *testing.T) {
	tied := qwen3.Tiny()
	m, err := qwen3.Build(tied, 1)
	if err != nil {
		t.Fatal(err)
	}
	untied := tied
	untied.TiedEmbeddings = false
	if _, err := New(m, untied); err == nil || !strings.Contains(err.Error(), `no initializer "lm_head.weight"`) {
		t.Errorf("untied config on a tied model: %v", err)
	}
	wide := tied
	wide.Intermediate = 256
	if _, err := New(m, wide); err == nil || !strings.Contains(err.Error(), "has dims [64 128], want [64 256]") {
		t.Errorf("wrong intermediate size: %v", err)
	}
	r, err := New(m, tied)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Forward(1, 2, []int64{1}, []int64{1, 1}, []int64{0, 1}); err == nil {
		t.Error("Forward with 1 id for [1, 2]: no error")
	}
	if _, err := r.Forward(1, 1, []int64{100}, []int64{1}, []int64{0}); err == nil || !strings.Contains(err.Error(), "token id 100 outside [0, 100)") {
		t.Errorf("Forward with id 100: %v", err)
	}
}

// TestReferenceInvariants checks properties that hold for any weights: a
// row's logits do not depend on the other rows of the batch or on left
// padding (with positions counted from the first real token), and a fully
// padded row is finite.
func TestReferenceInvariants(t *testing.T) {
	c := qwen3.Tiny()
	m, err := qwen3.Build(c, 2)
	if err != nil {
		t.Fatal(err)
	}
	r, err := New(m, c)
	if err != nil {
		t.Fatal(err)
	}
	alone, err := r.Forward(1, 3, []int64{5, 6, 7}, []int64{1, 1, 1}, []int64{0, 1, 2})
	if err != nil {
		t.Fatal(err)
	}
	padded, err := r.Forward(2, 5,
		[]int64{0, 0, 5, 6, 7, 0, 0, 0, 0, 0},
		[]int64{0, 0, 1, 1, 1, 0, 0, 0, 0, 0},
		[]int64{1, 1, 0, 1, 2, 1, 1, 1, 1, 1})
	if err != nil {
		t.Fatal(err)
	}
	v := c.Vocab
	for i := range 3 * v {
		if d := math.Abs(alone[i] - padded[2*v+i]); d > 1e-12 {
			t.Fatalf("logit %d: alone %g, left-padded %g", i, alone[i], padded[2*v+i])
		}
	}
	for i, x := range padded[5*v:] {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			t.Fatalf("fully padded row: logit %d is %g", i, x)
		}
	}
}
