package model_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/spiral-rl/spiral/model"
	"github.com/spiral-rl/spiral/model/modeltest"
)

func TestParseDevice(t *testing.T) {
	cases := []struct {
		in      string
		want    model.Device
		auto    bool
		wantErr string
	}{
		{in: "", want: model.Device{Kind: model.CPU}},
		{in: "cpu", want: model.Device{Kind: model.CPU}},
		{in: "CUDA", want: model.Device{Kind: model.CUDA}},
		{in: "cuda:3", want: model.Device{Kind: model.CUDA, ID: 3}},
		{in: "auto", want: model.Device{Kind: model.CUDA}, auto: true},
		{in: "cuda:-1", wantErr: "non-negative"},
		{in: "cuda:x", wantErr: "non-negative"},
		{in: "tpu", wantErr: "want cpu, cuda, cuda:N or auto"},
	}
	for _, c := range cases {
		t.Run(c.in, func(t *testing.T) {
			d, auto, err := model.ParseDevice(c.in)
			if c.wantErr != "" {
				require.ErrorContains(t, err, c.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, c.want, d)
			require.Equal(t, c.auto, auto)
		})
	}
}

// inSubprocess reruns the calling test alone in a fresh process (ONNX
// Runtime's environment is process-global, and other tests of this binary
// may already hold it) and reports whether this is that subprocess.
func inSubprocess(t *testing.T) bool {
	t.Helper()
	if os.Getenv("SPIRAL_RUNTIME_SUBTEST") == t.Name() {
		return true
	}
	cmd := exec.Command(os.Args[0], "-test.run=^"+t.Name()+"$", "-test.v")
	cmd.Env = append(os.Environ(), "SPIRAL_RUNTIME_SUBTEST="+t.Name())
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "subprocess output:\n%s", out)
	require.Contains(t, string(out), "--- PASS: "+t.Name())
	return false
}

// TestOpenRuntimeMissingLibrary checks that when no candidate loads, the
// error names all three places and the setup command.
func TestOpenRuntimeMissingLibrary(t *testing.T) {
	if !inSubprocess(t) {
		return
	}
	t.Setenv(model.LibEnvVar, "/nonexistent/env/libonnxruntime.so")
	t.Setenv("SPIRAL_CACHE_DIR", t.TempDir())
	_, err := model.OpenRuntime(model.RuntimeOptions{LibPath: "/nonexistent/flag/libonnxruntime.so"})
	require.Error(t, err)
	msg := err.Error()
	for _, want := range []string{"--ort-lib", "/nonexistent/flag/", "$ONNXRUNTIME_LIB", "/nonexistent/env/", "setup location", model.SetupCommand} {
		require.True(t, strings.Contains(msg, want), "error %q lacks %q", msg, want)
	}
}

func TestOpenRuntimeBadLibraryFile(t *testing.T) {
	if !inSubprocess(t) {
		return
	}
	t.Setenv(model.LibEnvVar, "")
	t.Setenv("SPIRAL_CACHE_DIR", t.TempDir())
	bad := t.TempDir() + "/libonnxruntime.so"
	require.NoError(t, os.WriteFile(bad, []byte("not a shared library"), 0o644))
	_, err := model.OpenRuntime(model.RuntimeOptions{LibPath: bad})
	require.ErrorContains(t, err, bad)
}

// TestOpenRuntime loads the real library (from $ONNXRUNTIME_LIB, set by
// scripts/setup.sh's env.sh) and checks version and CUDA handling.
func TestOpenRuntime(t *testing.T) {
	rt := modeltest.Runtime(t)
	require.Equal(t, model.ORTVersion, rt.Version())
	require.Equal(t, model.CPU, rt.Device().Kind)
	so, err := rt.NewSessionOptions()
	require.NoError(t, err)
	require.NoError(t, so.Destroy())
}
