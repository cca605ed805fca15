package tests

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// readEvents is a Python program that reads every event file of the
// directory argv[1], in name order, with TensorBoard's own loader
// (EventFileLoader, which upgrades simple_value to the scalars plugin's
// tensors as TensorBoard's dashboards read them) and prints one JSON
// object: the first event's file_version of each file, and each value as
// [tag, step, value, plugin].
const readEvents = `
import json, os, sys
from tensorboard.backend.event_processing.event_file_loader import EventFileLoader
from tensorboard.util import tensor_util
d = sys.argv[1]
out = {"versions": [], "values": []}
for name in sorted(os.listdir(d)):
    events = list(EventFileLoader(os.path.join(d, name)).Load())
    out["versions"].append(events[0].file_version if events else "")
    for e in events:
        for v in e.summary.value:
            out["values"].append([v.tag, e.step, tensor_util.make_ndarray(v.tensor).item(), v.metadata.plugin_data.plugin_name])
print(json.dumps(out))
`

// tensorBoardScalars reads the event files in dir with TensorBoard
// (readEvents, through py) and returns their values by tag and step,
// failing on a file that does not begin with its file_version, a value
// that is not a scalar, or a tag logged twice at a step.
func tensorBoardScalars(t *testing.T, py, dir string) map[string]map[int64]float32 {
	t.Helper()
	cmd := exec.Command(py, "-c", readEvents, dir)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	b, err := cmd.Output()
	require.NoError(t, err, stderr.String())
	var got struct {
		Versions []string
		Values   [][4]any
	}
	require.NoError(t, json.Unmarshal(b, &got))
	require.NotEmpty(t, got.Versions)
	for _, v := range got.Versions {
		require.Equal(t, "brain.Event:2", v)
	}
	out := map[string]map[int64]float32{}
	for _, v := range got.Values {
		tag, step, value, plugin := v[0].(string), int64(v[1].(float64)), float32(v[2].(float64)), v[3].(string)
		require.Equal(t, "scalars", plugin, tag)
		if out[tag] == nil {
			out[tag] = map[int64]float32{}
		}
		_, twice := out[tag][step]
		require.False(t, twice, "%s at step %d twice", tag, step)
		out[tag][step] = value
	}
	return out
}

// logScalars reads the JSON-lines logs of a run as README says they map
// to TensorBoard: every number of a metrics.jsonl or sft.jsonl line under
// its path of keys (an array's elements numbered from 1), but "step" and
// a no_update step's unmeasured loss, entropy, entropy_search, grad_norm,
// lr, adv_mean, adv_std, adv_min and adv_max, and the lr of 0 of an update
// skipped for a non-finite gradient norm; eval.jsonl's heldout/pass@K and
// heldout/majority@K but majority@1 (pass@1).
func logScalars(t *testing.T, dir string, logs ...string) map[string]map[int64]float32 {
	t.Helper()
	out := map[string]map[int64]float32{}
	put := func(tag string, step int64, v float64) {
		if out[tag] == nil {
			out[tag] = map[int64]float32{}
		}
		out[tag][step] = float32(v)
	}
	var walk func(prefix string, step int64, v any)
	walk = func(prefix string, step int64, v any) {
		switch v := v.(type) {
		case float64:
			put(prefix, step, v)
		case map[string]any:
			for k, x := range v {
				walk(prefix+"/"+k, step, x)
			}
		case []any:
			for i, x := range v {
				walk(prefix+"/"+strconv.Itoa(i+1), step, x)
			}
		}
	}
	for _, log := range logs {
		b, err := os.ReadFile(filepath.Join(dir, log))
		require.NoError(t, err)
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			var m map[string]any
			require.NoError(t, json.Unmarshal([]byte(line), &m), line)
			step := int64(m["step"].(float64))
			if log == "eval.jsonl" {
				for _, p := range m["points"].([]any) {
					p := p.(map[string]any)
					k := strconv.Itoa(int(p["k"].(float64)))
					put("heldout/pass@"+k, step, p["pass_at_k"].(float64))
					if k != "1" {
						put("heldout/majority@"+k, step, p["majority_at_k"].(float64))
					}
				}
				continue
			}
			delete(m, "step")
			if m["no_update"] == true {
				for _, k := range []string{"loss", "entropy", "entropy_search", "grad_norm", "lr", "adv_mean", "adv_std", "adv_min", "adv_max"} {
					delete(m, k)
				}
			}
			if skipped, _ := m["update_skipped"].(string); skipped != "" && m["lr"] == 0.0 {
				delete(m, "lr")
			}
			for k, v := range m {
				walk(k, step, v)
			}
		}
	}
	return out
}

// TestTensorBoardEvents: train --tensorboard and sft --tensorboard log
// every number of their logs as they write them, and spiral tensorboard
// converts the logs of a run made without it to the same, as TensorBoard
// itself reads them back (tag, step and value, exactly); train's step 1
// here draws no informative problem, so its unmeasured figures are left
// out.
func TestTensorBoardEvents(t *testing.T) {
	requireRuntime(t)
	py := requireEnv(t, "SPIRAL_ENGINE_PYTHON", "make test sets it (scripts/engine/requirements.txt has tensorboard)")
	run := filepath.Join(t.TempDir(), "run")
	r := spiral(t, nil, "train", "--tensorboard", "--threads", "1", "--problems", "1", "--n1", "4", "--k", "2", "--n", "2", "--n2", "2",
		"--steps", "2", "--eval-every", "1", "--eval-problems", "2", "--eval-samples", "2", "--final-rsa-steps", "0", "--quiet", "--out", run)
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "no update (no informative problem)", "step 1 of this seed trains nothing")
	want := logScalars(t, run, "metrics.jsonl", "eval.jsonl")
	require.Len(t, want["search/reward"], 2)
	require.Len(t, want["loss"], 1, "step 1's loss is not measured")
	require.Len(t, want["heldout/pass@2"], 3)
	require.Equal(t, want, tensorBoardScalars(t, py, filepath.Join(run, "tensorboard")))

	// The same logs, converted after the fact.
	old := filepath.Join(t.TempDir(), "old")
	require.NoError(t, os.MkdirAll(old, 0o755))
	for _, log := range []string{"metrics.jsonl", "eval.jsonl"} {
		b, err := os.ReadFile(filepath.Join(run, log))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(old, log), b, 0o644))
	}
	r = spiral(t, nil, "tensorboard", old)
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "wrote "+filepath.Join(old, "tensorboard", "events.out.tfevents."))
	require.Equal(t, want, tensorBoardScalars(t, py, filepath.Join(old, "tensorboard")))

	sft := filepath.Join(t.TempDir(), "sft")
	r = spiral(t, nil, "sft", "--tensorboard", "--threads", "1", "--steps", "2", "--batch", "2", "--eval-every", "1", "--eval-problems", "2", "--quiet", "--out", sft)
	require.Equal(t, 0, r.code, r.stderr)
	want = logScalars(t, sft, "sft.jsonl")
	require.Len(t, want["loss"], 2)
	require.Len(t, want["eval_search_accuracy"], 2)
	require.Equal(t, want, tensorBoardScalars(t, py, filepath.Join(sft, "tensorboard")))
}

// TestSFTOverwriteKeepsEvents: sft --overwrite of a finished run that
// fails (here killed at its first checkpoint) leaves the finished run's
// model, sft.jsonl and TensorBoard events: the events set aside in
// tensorboard-finished/, byte for byte, which TensorBoard reads as a run
// of its own; the rerun that writes the new model removes them, and
// tensorboard/ then holds the new run's events, as TensorBoard reads
// them.
func TestSFTOverwriteKeepsEvents(t *testing.T) {
	requireRuntime(t)
	py := requireEnv(t, "SPIRAL_ENGINE_PYTHON", "make test sets it (scripts/engine/requirements.txt has tensorboard)")
	out := filepath.Join(t.TempDir(), "sft")
	args := []string{"sft", "--tensorboard", "--threads", "1", "--batch", "2", "--eval-problems", "2", "--checkpoint-every", "1", "--quiet", "--out", out}
	r := spiral(t, nil, append(args, "--steps", "2")...)
	require.Equal(t, 0, r.code, r.stderr)
	finished := logScalars(t, out, "sft.jsonl")
	files, err := filepath.Glob(filepath.Join(out, "tensorboard", "events.out.tfevents.*"))
	require.NoError(t, err)
	require.Len(t, files, 1)
	events, err := os.ReadFile(files[0])
	require.NoError(t, err)
	model, err := os.ReadFile(filepath.Join(out, "model.onnx"))
	require.NoError(t, err)

	signalAtLine(t, syscall.SIGKILL, "checkpoint ", 5*time.Minute, append(args, "--steps", "3", "--overwrite")...)
	got, err := os.ReadFile(filepath.Join(out, "tensorboard-finished", filepath.Base(files[0])))
	require.NoError(t, err, "the finished run's events")
	require.Equal(t, events, got)
	require.Equal(t, finished, tensorBoardScalars(t, py, filepath.Join(out, "tensorboard-finished")))
	got, err = os.ReadFile(filepath.Join(out, "model.onnx"))
	require.NoError(t, err)
	require.Equal(t, model, got)

	r = spiral(t, nil, append(args, "--steps", "3", "--overwrite")...)
	require.Equal(t, 0, r.code, r.stderr)
	require.NoDirExists(t, filepath.Join(out, "tensorboard-finished"))
	want := logScalars(t, out, "sft.jsonl")
	require.Len(t, want["loss"], 3)
	require.Equal(t, want, tensorBoardScalars(t, py, filepath.Join(out, "tensorboard")))
}
