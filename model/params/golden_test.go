package params

import (
	"encoding/hex"
	"encoding/json"
	"flag"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite testdata/go_written.* golden files")

type refTensor struct {
	DType string  `json:"dtype"`
	Shape []int64 `json:"shape"`
	Hex   string  `json:"hex"`
}

// TestReferenceFiles decodes files written by the Hugging Face safetensors
// library (testdata/gen_seeds.py) and compares every tensor with the
// dtype, shape and bytes that the script recorded from numpy.
func TestReferenceFiles(t *testing.T) {
	for _, name := range []string{"mixed", "f32_only"} {
		t.Run(name, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join("testdata", "ref_"+name+".safetensors"))
			require.NoError(t, err)
			j, err := os.ReadFile(filepath.Join("testdata", "ref_"+name+".json"))
			require.NoError(t, err)
			var want struct {
				Metadata map[string]string    `json:"metadata"`
				Tensors  map[string]refTensor `json:"tensors"`
			}
			require.NoError(t, json.Unmarshal(j, &want))
			f, err := Decode(b)
			require.NoError(t, err)
			require.Len(t, f.Tensors, len(want.Tensors))
			require.Equal(t, len(want.Metadata), len(f.Metadata))
			for k, v := range want.Metadata {
				require.Equal(t, v, f.Metadata[k])
			}
			for _, rt := range f.Tensors {
				w, ok := want.Tensors[rt.Name]
				require.True(t, ok, rt.Name)
				require.Equal(t, w.DType, string(rt.DType), rt.Name)
				require.Equal(t, w.Shape, rt.Shape, rt.Name)
				require.Equal(t, w.Hex, hex.EncodeToString(rt.Data), rt.Name)
			}
		})
	}
}

// TestGoWrittenGolden pins the bytes our writer produces. With -update it
// rewrites testdata/go_written.safetensors and go_written.json (the float32
// bit patterns); `python3 gen_seeds.py --check` then confirms that the
// reference library reads the file back to the same bits.
func TestGoWrittenGolden(t *testing.T) {
	s := testStore(t, rand.New(rand.NewPCG(11, 12)))
	path := filepath.Join("testdata", "go_written.safetensors")
	if *update {
		f, err := os.Create(path)
		require.NoError(t, err)
		require.NoError(t, s.WriteSafetensors(f, map[string]string{"format": "pt"}, nil))
		require.NoError(t, f.Close())
		spec := map[string]any{}
		for i := range s.Len() {
			tn := s.At(i)
			bits := make([]uint32, len(tn.Data))
			for k, v := range tn.Data {
				bits[k] = math.Float32bits(v)
			}
			spec[tn.Name] = map[string]any{"shape": tn.Shape, "bits": bits}
		}
		j, err := json.MarshalIndent(spec, "", " ")
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join("testdata", "go_written.json"), append(j, '\n'), 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err)
	var got bytesWriter
	require.NoError(t, s.WriteSafetensors(&got, map[string]string{"format": "pt"}, nil))
	require.Equal(t, want, []byte(got), "writer output changed; rerun with -update and gen_seeds.py --check")
}

type bytesWriter []byte

func (w *bytesWriter) Write(p []byte) (int, error) { *w = append(*w, p...); return len(p), nil }
