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

// TestPhysicalCores: the physical cores a sysfs cpu directory lists are
// its CPUs' distinct (package, core) pairs, hyperthread siblings counted
// once; a directory that lists none, or none that reads, counts 0.
func TestPhysicalCores(t *testing.T) {
	for _, tc := range []struct {
		name string
		cpus map[string][2]string // cpuN: physical_package_id, core_id
		want int
	}{
		{"none listed", nil, 0},
		{"one core", map[string][2]string{"cpu0": {"0", "0"}}, 1},
		{"two siblings of a core", map[string][2]string{"cpu0": {"0", "0"}, "cpu1": {"0", "0"}}, 1},
		{"four threads of two cores", map[string][2]string{"cpu0": {"0", "0"}, "cpu1": {"0", "1"}, "cpu2": {"0", "0"}, "cpu3": {"0", "1"}}, 2},
		{"one core id in two packages", map[string][2]string{"cpu0": {"0", "0"}, "cpu1": {"1", "0"}}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for cpu, ids := range tc.cpus {
				topology := filepath.Join(dir, cpu, "topology")
				require.NoError(t, os.MkdirAll(topology, 0o755))
				require.NoError(t, os.WriteFile(filepath.Join(topology, "physical_package_id"), []byte(ids[0]+"\n"), 0o644))
				require.NoError(t, os.WriteFile(filepath.Join(topology, "core_id"), []byte(ids[1]+"\n"), 0o644))
			}
			// Not a CPU: left out.
			require.NoError(t, os.MkdirAll(filepath.Join(dir, "cpufreq", "topology"), 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(dir, "cpufreq", "topology", "core_id"), []byte("9\n"), 0o644))
			require.Equal(t, tc.want, physicalCores(dir))
		})
	}
}

// TestRuntimeThreads: Threads is what sessions run: the count NewRuntime
// set (--threads as given, 1 under --deterministic), and for 0, ONNX
// Runtime's default of one per physical core, the cores counted.
func TestRuntimeThreads(t *testing.T) {
	for _, tc := range []struct {
		name    string
		threads int
		want    int
	}{
		{"given", 3, 3},
		{"one", 1, 1},
		{"0: one per physical core", 0, physicalCores(sysCPUDir)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, (&Runtime{threads: tc.threads}).Threads())
		})
	}
}
