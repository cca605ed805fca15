package main

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRefusedRunLeavesOthersFiles: a first run refused before it starts
// removes the --out it made, with the artifacts built for it, only while
// the directory holds nothing but those: another process that wrote into
// it meanwhile (an eval --out DIR sharing DIR/artifacts/, its lock and
// report beside them; a whole run that took the directory between the
// refused run's look and its lock) keeps the artifacts it reads and what
// it wrote. Alone, the refused run's directory goes.
func TestRefusedRunLeavesOthersFiles(t *testing.T) {
	refused := errors.New("refused")
	for _, tc := range []struct {
		name   string
		others []string // files another process wrote into --out, beside the lock
		kept   bool
	}{
		{name: "alone", kept: false},
		{name: "an evaluation beside it", others: []string{".passk.lock", "artifacts/manifest.json"}, kept: true},
		{name: "another run", others: []string{"metrics.jsonl", "checkpoints/ckpt-000001/state.json", "artifacts/manifest.json"}, kept: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "run")
			l, err := lockRunDir(dir)
			require.NoError(t, err)
			require.NoError(t, os.MkdirAll(filepath.Join(dir, "artifacts"), 0o755)) // built for the refused run
			for _, f := range tc.others {
				require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, f)), 0o755))
				require.NoError(t, os.WriteFile(filepath.Join(dir, f), []byte("x"), 0o644))
			}
			require.ErrorIs(t, l.release(refused), refused)
			if !tc.kept {
				require.NoDirExists(t, dir)
				return
			}
			for _, f := range tc.others {
				require.FileExists(t, filepath.Join(dir, f))
			}
		})
	}
}
