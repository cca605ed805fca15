package tests

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// setupCache returns the cache scripts/setup.sh has installed into (the
// SPIRAL_CACHE_DIR its env.sh exports), or skips: run against an empty
// cache, setup builds libtokenizers with cargo for minutes.
func setupCache(t *testing.T) string {
	t.Helper()
	cache := os.Getenv("SPIRAL_CACHE_DIR")
	if cache == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("SPIRAL_CACHE_DIR unset in CI: the test command must source scripts/setup.sh's env")
		}
		t.Skip("SPIRAL_CACHE_DIR unset: run make test")
	}
	require.FileExists(t, filepath.Join(cache, "env.sh"))
	return cache
}

// runSetup runs scripts/setup.sh with extra environment variables in dir
// and returns its stdout, stderr and error.
func runSetup(t *testing.T, dir string, env ...string) (string, string, error) {
	t.Helper()
	script, err := filepath.Abs(filepath.Join("..", "scripts", "setup.sh"))
	require.NoError(t, err)
	cmd := exec.Command(script)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	return stdout.String(), stderr.String(), err
}

// TestSetupConcurrent: setups run at once on one installed cache (make -j,
// or two scripts that each run it) all succeed and print the env file.
// They wrote it through one fixed temporary name, so one moved the
// other's away and failed ("mv: cannot stat .../env.sh.tmp"), or moved a
// file the other was still writing.
func TestSetupConcurrent(t *testing.T) {
	cache := setupCache(t)
	want := filepath.Join(cache, "env.sh") + "\n"
	for round := 0; round < 5; round++ {
		var wg sync.WaitGroup
		errs := make([]error, 6)
		outs := make([]string, 6)
		stderrs := make([]string, 6)
		for i := range errs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				outs[i], stderrs[i], errs[i] = runSetup(t, t.TempDir(), "SPIRAL_CACHE_DIR="+cache)
			}()
		}
		wg.Wait()
		for i, err := range errs {
			require.NoError(t, err, stderrs[i])
			require.Equal(t, want, outs[i])
		}
	}
	matches, err := filepath.Glob(filepath.Join(cache, "env.sh.*"))
	require.NoError(t, err)
	require.Empty(t, matches, "no temporary env file is left behind")
}
