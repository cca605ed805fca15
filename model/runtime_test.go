package model_test

import (
	"os"
	"os/exec"
	"path/filepath"
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

// TestOpenRuntimeMissingLibrary checks that when nothing is given and the
// setup location has no library, the error names all three places and the
// setup command.
func TestOpenRuntimeMissingLibrary(t *testing.T) {
	if !inSubprocess(t) {
		return
	}
	t.Setenv(model.LibEnvVar, "")
	t.Setenv("SPIRAL_CACHE_DIR", t.TempDir())
	_, err := model.OpenRuntime(model.RuntimeOptions{})
	require.Error(t, err)
	msg := err.Error()
	for _, want := range []string{"--ort-lib: not set", "$ONNXRUNTIME_LIB: not set", "setup location", model.SetupCommand} {
		require.True(t, strings.Contains(msg, want), "error %q lacks %q", msg, want)
	}
}

// TestOpenRuntimeCUDAOptionDeviceID: the device comes from Device, never
// from a CUDA option, refused before any library is loaded.
func TestOpenRuntimeCUDAOptionDeviceID(t *testing.T) {
	_, err := model.OpenRuntime(model.RuntimeOptions{Device: "cuda:0", CUDAOptions: map[string]string{"device_id": "1"}})
	require.ErrorContains(t, err, `CUDA option "device_id"`)
}

// realLibrary is the library setup installed ($ONNXRUNTIME_LIB from
// env.sh), or a skip.
func realLibrary(t *testing.T) string {
	t.Helper()
	lib := os.Getenv(model.LibEnvVar)
	if _, err := os.Stat(lib); lib == "" || err != nil {
		t.Skipf("no ONNX Runtime library at $%s (run %s)", model.LibEnvVar, model.SetupCommand)
	}
	return lib
}

// TestOpenRuntimeExplicitFlagNotReplaced: a --ort-lib that does not exist
// is an error naming it, even when $ONNXRUNTIME_LIB holds a good library.
func TestOpenRuntimeExplicitFlagNotReplaced(t *testing.T) {
	lib := realLibrary(t)
	if !inSubprocess(t) {
		return
	}
	t.Setenv(model.LibEnvVar, lib)
	_, err := model.OpenRuntime(model.RuntimeOptions{LibPath: "/nonexistent/flag/libonnxruntime.so"})
	require.ErrorContains(t, err, "/nonexistent/flag/libonnxruntime.so (from --ort-lib): no such file")
}

// TestOpenRuntimeExplicitEnvNotReplaced: a $ONNXRUNTIME_LIB that does not
// exist is an error naming it, even when the setup location has a library.
func TestOpenRuntimeExplicitEnvNotReplaced(t *testing.T) {
	lib := realLibrary(t)
	if !inSubprocess(t) {
		return
	}
	t.Setenv(model.LibEnvVar, "/nonexistent/env/libonnxruntime.so")
	t.Setenv("SPIRAL_CACHE_DIR", filepath.Dir(filepath.Dir(lib)))
	_, err := model.OpenRuntime(model.RuntimeOptions{})
	require.ErrorContains(t, err, "/nonexistent/env/libonnxruntime.so (from $ONNXRUNTIME_LIB): no such file")
}

// TestOpenRuntimeEnvUnreadable: a $ONNXRUNTIME_LIB that is there but
// cannot be reached (a symbolic link loop; a directory on the way that
// may not be searched) was said to be "no such file"; the error is the
// system's.
func TestOpenRuntimeEnvUnreadable(t *testing.T) {
	lib := realLibrary(t)
	if !inSubprocess(t) {
		return
	}
	dir := t.TempDir()
	loop := filepath.Join(dir, "libonnxruntime.so")
	require.NoError(t, os.Symlink(loop, loop))
	t.Setenv(model.LibEnvVar, loop)
	t.Setenv("SPIRAL_CACHE_DIR", filepath.Dir(filepath.Dir(lib)))
	_, err := model.OpenRuntime(model.RuntimeOptions{})
	require.ErrorContains(t, err, loop+" (from $ONNXRUNTIME_LIB): too many levels of symbolic links")
}

// TestOpenRuntimeBadLibraryFile: a --ort-lib that is not a shared library
// is an error naming it and carrying the loader's message.
func TestOpenRuntimeBadLibraryFile(t *testing.T) {
	if !inSubprocess(t) {
		return
	}
	t.Setenv(model.LibEnvVar, "")
	t.Setenv("SPIRAL_CACHE_DIR", t.TempDir())
	bad := t.TempDir() + "/libonnxruntime.so"
	require.NoError(t, os.WriteFile(bad, []byte("not a shared library"), 0o644))
	_, err := model.OpenRuntime(model.RuntimeOptions{LibPath: bad})
	require.ErrorContains(t, err, bad+" (from --ort-lib): does not load")
	require.ErrorContains(t, err, "file too short") // dlopen's own words
}

// TestOpenRuntime loads the real library (from $ONNXRUNTIME_LIB, set by
// scripts/setup.sh's env.sh) and checks version, device and that
// sessions' intra-op threads do not spin.
func TestOpenRuntime(t *testing.T) {
	rt := modeltest.Runtime(t)
	require.Equal(t, model.ORTVersion, rt.Version())
	require.Equal(t, model.CPU, rt.Device().Kind)
	so, err := rt.NewSessionOptions()
	require.NoError(t, err)
	spin, err := so.GetSessionConfigEntry(model.SpinningEntry)
	require.NoError(t, err)
	require.Equal(t, "0", spin, "intra-op threads must not spin")
	require.NoError(t, so.Destroy())
}

// TestArenaSharing: --shared-arena's values, and the default on the CPU:
// the test runtime, opened with the zero options, shares its arena, whose
// counters read.
func TestArenaSharing(t *testing.T) {
	for in, want := range map[string]model.ArenaSharing{"auto": model.ArenaAuto, "true": model.ArenaShared, "false": model.ArenaPerSession} {
		got, err := model.ParseArenaSharing(in)
		require.NoError(t, err)
		require.Equal(t, want, got, in)
	}
	_, err := model.ParseArenaSharing("yes")
	require.ErrorContains(t, err, `"yes": want auto, true or false`)

	rt := modeltest.Runtime(t)
	a := rt.DeviceArena()
	require.NotNil(t, a, "ArenaAuto shares the arena on the CPU")
	_, err = a.Stats()
	require.NoError(t, err)
}
