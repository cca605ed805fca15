package ortc_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	ort "github.com/yalue/onnxruntime_go"

	"github.com/spiral-rl/spiral/model/modeltest"
	"github.com/spiral-rl/spiral/model/ortc"
)

// TestSessionOptionsShared checks that ortc reaches the OrtSessionOptions
// that onnxruntime_go created: an entry set through the C API is read back
// through onnxruntime_go, and deterministic compute can be switched on.
func TestSessionOptionsShared(t *testing.T) {
	rt := modeltest.Runtime(t)
	api, err := ortc.Open(rt.LibraryPath())
	require.NoError(t, err)
	so, err := ort.NewSessionOptions()
	require.NoError(t, err)
	defer so.Destroy()
	require.NoError(t, api.AddSessionConfigEntry(so, "spiral.test.key", "42"))
	v, err := so.GetSessionConfigEntry("spiral.test.key")
	require.NoError(t, err)
	require.Equal(t, "42", v)
	require.NoError(t, api.SetDeterministicCompute(so, true))
}

// TestOpenNotLoaded: a library that this process has not loaded is an
// error naming it.
func TestOpenNotLoaded(t *testing.T) {
	_, err := ortc.Open("/nonexistent/libonnxruntime.so")
	require.ErrorContains(t, err, "/nonexistent/libonnxruntime.so is not loaded")
}
