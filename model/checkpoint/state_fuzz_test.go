package checkpoint

import (
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// FuzzReadState feeds arbitrary state.json files to a checkpoint saved
// with a known state: ReadState's errors name the file, a state it
// accepts has a format version this build reads, no negative step and an
// entry for the weights, and reads back the same when written again;
// ReadCheckedState accepts only a state whose step, data cursor and
// configuration (by their compact JSON) and weights entry are the saved
// ones, the safetensors header's record of them guarding state.json.
func FuzzReadState(f *testing.F) {
	run := f.TempDir()
	w, opt := trained(f, rand.New(rand.NewPCG(1, 2)), 2)
	saved := State{Step: 7, DataCursor: json.RawMessage(`{"epoch":0,"position":100,"seed":1,"size":2000,"digest":"53c16aa8dc108b0144c2feadac2137e5"}`),
		Config: json.RawMessage(`{"model":"embedded","data":"embedded:synth","rl":{"algo":"spiral","pipeline":{"n1":8,"k":4,"n":4,"n2":4}},"schedule":{"peak_lr":0.0001,"warmup_steps":5}}`)}
	dir, err := Save(run, w, opt, saved, Options{})
	require.NoError(f, err)
	file := filepath.Join(dir, StateFile)
	orig, err := os.ReadFile(file)
	require.NoError(f, err)
	want, err := ReadState(dir)
	require.NoError(f, err)
	wantSum, err := stateChecksum(want)
	require.NoError(f, err)
	f.Add(orig)
	f.Add([]byte(strings.Replace(string(orig), `"position":100`, `"position": 100`, 1)))
	f.Add([]byte(strings.Replace(string(orig), `"position":100`, `"position":101`, 1)))
	f.Add([]byte(strings.Replace(string(orig), `"step":7`, `"step":8`, 1)))
	f.Add([]byte(`{"format_version":1,"step":0,"files":{"model.safetensors":{"size":1,"crc32c":0}}}`))
	f.Add([]byte(`{"format_version":2,"step":-1,"files":{}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		require.NoError(t, os.WriteFile(file, data, 0o666))
		st, err := ReadState(dir)
		if err != nil {
			require.Contains(t, err.Error(), file)
			return
		}
		require.True(t, st.FormatVersion >= 1 && st.FormatVersion <= FormatVersion, "format version %d", st.FormatVersion)
		require.True(t, st.Step >= 0 && st.OptimizerSteps >= 0, "steps %d, %d", st.Step, st.OptimizerSteps)
		require.Contains(t, st.Files, ModelFile)
		js, err := json.Marshal(st)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(file, js, 0o666))
		back, err := ReadState(dir)
		require.NoError(t, err, "state %s written back", js)
		again, err := json.Marshal(back)
		require.NoError(t, err)
		require.Equal(t, string(js), string(again))

		require.NoError(t, os.WriteFile(file, data, 0o666))
		st, err = ReadCheckedState(dir)
		if err != nil {
			require.Contains(t, err.Error(), dir)
			return
		}
		sum, err := stateChecksum(st)
		require.NoError(t, err)
		require.Equal(t, want.Step, st.Step)
		require.Equal(t, wantSum, sum, "data cursor %s, config %s", st.DataCursor, st.Config)
		require.Equal(t, want.Files[ModelFile], st.Files[ModelFile])
	})
}
