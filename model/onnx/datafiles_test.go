package onnx

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
)

// TestDataFiles: DataFiles reports a model's external data file with its
// size, the bytes its tensors hold (alignment padding and bytes two
// tensors share not counted, or counted once) and where the last one
// ends; Trailing counts the bytes past that end beyond one 64 KiB
// granule. Large inline tensors, which LoadGraph leaves in the model
// file, make no data file.
func TestDataFiles(t *testing.T) {
	// testModel's external tensors under SaveOptions{ExternalDataFile}:
	// big (1200 bytes) at 0, huge (1 MiB) aligned to 65536, then typed,
	// half and ids (1600, 2048 and 1600 bytes).
	const (
		used = 1200 + 1<<20 + 1600 + 2048 + 1600
		end  = 1<<16 + 1<<20 + 1600 + 2048 + 1600
	)
	appendZeros := func(t *testing.T, path string, n int) {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
		require.NoError(t, err)
		_, err = f.Write(make([]byte, n))
		require.NoError(t, err)
		require.NoError(t, f.Close())
	}
	tests := []struct {
		name     string
		external bool
		// edit changes the saved model at path, its data file data.
		edit func(t *testing.T, path, data string)
		want []DataFile // Path is the data file's name
		// trailing is Trailing of the one data file.
		trailing int64
	}{
		{name: "inline", want: []DataFile{}},
		{name: "as saved", external: true, want: []DataFile{{Path: "model.onnx_data", Size: end, Used: used, End: end}}},
		{name: "a granule more", external: true,
			edit: func(t *testing.T, _, data string) { appendZeros(t, data, 1<<16) },
			want: []DataFile{{Path: "model.onnx_data", Size: end + 1<<16, Used: used, End: end}}},
		{name: "a byte past a granule", external: true,
			edit:     func(t *testing.T, _, data string) { appendZeros(t, data, 1<<16+1) },
			want:     []DataFile{{Path: "model.onnx_data", Size: end + 1<<16 + 1, Used: used, End: end}},
			trailing: 1<<16 + 1},
		{name: "two tensors on the same bytes", external: true,
			edit: func(t *testing.T, path, _ string) {
				// typed (float32[400]) reads the bytes of ids (int64[200]).
				m, err := LoadGraph(path)
				require.NoError(t, err)
				byName := map[string]map[string]*string{}
				for _, tp := range m.Graph().GetInitializer() {
					byName[tp.GetName()] = map[string]*string{}
					for _, e := range tp.GetExternalData() {
						byName[tp.GetName()][e.GetKey()] = e.Value
					}
				}
				*byName["typed"]["offset"] = *byName["ids"]["offset"]
				b, err := proto.Marshal(m.Proto)
				require.NoError(t, err)
				require.NoError(t, os.WriteFile(path, b, 0o644))
			},
			want: []DataFile{{Path: "model.onnx_data", Size: end, Used: used - 1600, End: end}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path, data := filepath.Join(dir, "model.onnx"), filepath.Join(dir, "model.onnx_data")
			opt := SaveOptions{}
			if tt.external {
				opt.ExternalDataFile = "model.onnx_data"
			}
			require.NoError(t, Save(path, testModel(t), opt))
			if tt.edit != nil {
				tt.edit(t, path, data)
			}
			m, err := LoadGraph(path)
			require.NoError(t, err)
			got, err := m.DataFiles()
			require.NoError(t, err)
			for i := range tt.want {
				tt.want[i].Path = filepath.Join(dir, tt.want[i].Path)
			}
			require.Equal(t, tt.want, got)
			if len(got) == 1 {
				require.Equal(t, tt.trailing, got[0].Trailing())
			}
		})
	}
}
