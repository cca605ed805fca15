package checkpoint

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/spiral-rl/spiral/model/params"
)

// TestResumeDanglingPointer: a crash while re-saving the newest step can
// leave `latest` naming a missing directory; Resume, which goes by the
// checkpoint directories themselves, still loads the previous checkpoint.
func TestResumeDanglingPointer(t *testing.T) {
	dir := t.TempDir()
	w, err := params.NewStore([]params.Spec{{Name: "w", Shape: []int64{3}}})
	require.NoError(t, err)
	copy(w.At(0).Data, []float32{1, 2, 3})
	_, err = Save(dir, w, nil, State{Step: 1}, Options{})
	require.NoError(t, err)
	copy(w.At(0).Data, []float32{4, 5, 6})
	p2, err := Save(dir, w, nil, State{Step: 2}, Options{})
	require.NoError(t, err)
	require.NoError(t, os.RemoveAll(p2)) // the newest vanished, latest still names it

	fresh, err := params.NewStore(w.Specs())
	require.NoError(t, err)
	path, st, skipped, err := Resume(context.Background(), dir, fresh, nil)
	require.NoError(t, err)
	require.Equal(t, filepath.Join(dir, DirName(1)), path)
	require.Equal(t, int64(1), st.Step)
	require.Equal(t, []float32{1, 2, 3}, fresh.At(0).Data)
	require.Empty(t, skipped)
}
