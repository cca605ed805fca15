// Package perturbed runs a test in a child process whose glibc malloc
// overwrites freed memory, for the use-after-free tests of model/ortc
// and of model itself (which modeltest, importing model, cannot serve).
package perturbed

import (
	"os"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/require"
)

// childEnv marks the child process.
const childEnv = "SPIRAL_PERTURBED_MALLOC_CHILD"

// InChild runs the test t in a child process whose glibc malloc
// overwrites freed memory (no tcache, MALLOC_PERTURB_), where a use
// after free reads a wild function pointer and crashes, or reads the
// perturbed bytes, rather than passing by luck, and reports whether this
// is that child: the parent returns false once the child passed.
func InChild(t *testing.T) bool {
	t.Helper()
	if os.Getenv(childEnv) != "" {
		return true
	}
	cmd := exec.Command(os.Args[0], "-test.run=^"+t.Name()+"$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), childEnv+"=1",
		"GLIBC_TUNABLES=glibc.malloc.tcache_count=0", "MALLOC_PERTURB_=165")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "child:\n%s", out)
	require.Contains(t, string(out), "--- PASS: "+t.Name())
	return false
}
