package model

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRemoveTelemetryLog: this process's empty telemetry log goes; one
// that holds anything, another process's, or none at all is left as it
// is.
func TestRemoveTelemetryLog(t *testing.T) {
	const pid = 4242
	tests := []struct {
		name     string
		file     string // "" = none
		content  string
		wantGone bool
	}{
		{name: "this process's, empty", file: "mat-debug-4242.log", wantGone: true},
		{name: "this process's, written", file: "mat-debug-4242.log", content: "trace\n"},
		{name: "another process's", file: "mat-debug-4243.log"},
		{name: "none"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if tt.file != "" {
				require.NoError(t, os.WriteFile(filepath.Join(dir, tt.file), []byte(tt.content), 0o644))
			}
			removeTelemetryLog(dir, pid)
			if tt.file == "" {
				return
			}
			if tt.wantGone {
				require.NoFileExists(t, filepath.Join(dir, tt.file))
			} else {
				require.FileExists(t, filepath.Join(dir, tt.file))
			}
		})
	}
}
