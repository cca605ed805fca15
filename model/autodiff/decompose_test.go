package autodiff_test

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/spiral-rl/spiral/model/onnx/onnxpb"
)

type graphProto = onnxpb.GraphProto

// TestDecomposeMatchesRuntime runs every fused-op case of ruleCases in
// float32 through ONNX Runtime's own kernel and through Decompose's
// primitives: outputs agree to 1e-5 absolute + 1e-5 relative (a few float32
// ulps of O(1) values, after different summation orders).
func TestDecomposeMatchesRuntime(t *testing.T) {
	fused := []string{"Gemm", "LayerNormalization", "RMSNormalization", "RotaryEmbedding", "Attention"}
	for i, c := range ruleCases {
		if !slicesContainsPrefix(fused, c.name) {
			continue
		}
		t.Run(c.name, func(t *testing.T) {
			opset := max(c.opset, 18)
			g64 := testGraph(c.in, c.nodes)
			g, err := ConvertFloat(g64, false)
			if err != nil {
				t.Fatal(err)
			}
			dec, err := Decompose(g)
			if err != nil {
				t.Fatal(err)
			}
			r := rand.New(rand.NewPCG(uint64(i), 9))
			feeds := map[string]feed{}
			for _, s := range c.in {
				fd := s.feed(r)
				if fd.f64 != nil {
					for _, x := range fd.f64 {
						fd.f32 = append(fd.f32, float32(x))
					}
					fd.f64 = nil
				}
				feeds[s.name] = fd
			}
			want := runOne(t, g, opset, feeds, "y")
			got := runOne(t, dec, opset, feeds, "y")
			if len(got) != len(want) {
				t.Fatalf("decomposed output has %d elements, runtime %d", len(got), len(want))
			}
			for j := range want {
				if abs(got[j]-want[j]) > 1e-5+1e-5*abs(want[j]) {
					t.Errorf("y[%d]: decomposed %.7g, runtime %.7g", j, got[j], want[j])
				}
			}
		})
	}
}

func slicesContainsPrefix(prefixes []string, s string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p+"/") || s == p {
			return true
		}
	}
	return false
}

func runOne(t *testing.T, g *graphProto, opset int64, feeds map[string]feed, out string) []float64 {
	t.Helper()
	s, err := newSession(t, g, opset, []string{out})
	if err != nil {
		t.Fatalf("session for %s: %v", g.GetName(), err)
	}
	o, err := s.run(feeds)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	return o[out].v
}
