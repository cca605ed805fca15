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
		{name: "this process's, with the SDK's errors", file: "mat-debug-4242.log", content: "2026-12-06T06:29:03.290Z|00002785|E|EventsSDK.SQLiteStatement|Failed to query database while executing statement #[0x7ff0c46406f8]: 5 (database is locked)\n", wantGone: true},
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
