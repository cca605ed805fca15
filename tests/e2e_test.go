package tests

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/spiral-rl/spiral/data/synth"
	"github.com/spiral-rl/spiral/model"
	"github.com/spiral-rl/spiral/model/embedded"
	"github.com/spiral-rl/spiral/rl"
	"github.com/spiral-rl/spiral/rollout"
	"github.com/spiral-rl/spiral/rollout/report"
)

// binary is the spiral executable built by TestMain.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "spiral-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "spiral")
	build := exec.Command("go", "build", "-o", binary, "..")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintf(os.Stderr, "tests: go build: %v\n", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// result is what one run of the binary produced.
type result struct {
	stdout, stderr string
	code           int
}

// spiral runs the binary with args and extra environment variables, in
// a directory of its own.
func spiral(t *testing.T, env []string, args ...string) result {
	t.Helper()
	return spiralIn(t, t.TempDir(), env, args...) // default outputs (runs/...) stay out of the source tree
}

// spiralIn runs the binary in dir with args and extra environment
// variables.
func spiralIn(t *testing.T, dir string, env []string, args ...string) result {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("run spiral %v: %v", args, err)
	}
	return result{out.String(), errb.String(), code}
}

// jsonLines decodes each line of out (JSON Lines) into a T.
func jsonLines[T any](t *testing.T, out string) []T {
	t.Helper()
	var vs []T
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var v T
		require.NoError(t, json.Unmarshal([]byte(l), &v), l)
		vs = append(vs, v)
	}
	return vs
}

// requireRuntime skips (locally) or fails (in CI) when the ONNX Runtime
// library that scripts/setup.sh installs is not configured.
func requireRuntime(t *testing.T) {
	t.Helper()
	requireEnv(t, "ONNXRUNTIME_LIB", "the test command must source scripts/setup.sh's env")
}

// requireEnv returns the environment variable name, which make test sets;
// unset, the test skips locally and fails in CI, saying why it must be
// set there (ci).
func requireEnv(t *testing.T, name, ci string) string {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s unset in CI: %s", name, ci)
		}
		t.Skipf("%s unset: run make test", name)
	}
	return v
}

func TestVersion(t *testing.T) {
	requireRuntime(t)
	r := spiral(t, nil, "version")
	require.Equal(t, 0, r.code, "stderr: %s", r.stderr)
	require.Regexp(t, regexp.MustCompile(`(?m)^spiral \S+$`), r.stdout)
	require.Regexp(t, regexp.MustCompile(`(?m)^tokenizers v1\.22\.1 `), r.stdout)
	require.Regexp(t, regexp.MustCompile(`(?m)^onnxruntime 1\.30\.0 \(`), r.stdout)
	// spiral --version, as most tools take it, is spiral version (it ran
	// train, which refused --version as an unknown flag).
	v := spiral(t, nil, "--version")
	require.Equal(t, 0, v.code, "stderr: %s", v.stderr)
	require.Equal(t, r.stdout, v.stdout)
}

// TestNoTelemetryLogLeft: a command that loads ONNX Runtime leaves no
// telemetry log (model.TelemetryLogPattern) in $TMPDIR; each one left
// an empty mat-debug-PID.log there, thousands in /tmp after a study.
func TestNoTelemetryLogLeft(t *testing.T) {
	requireRuntime(t)
	tests := []struct {
		name string
		args []string
	}{
		{name: "version", args: []string{"version"}},
		{name: "eval", args: []string{"eval", "--mode", "passk", "--limit", "2", "--samples", "1", "--quiet"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tmp := t.TempDir()
			r := spiral(t, []string{"TMPDIR=" + tmp}, tt.args...)
			require.Equal(t, 0, r.code, "stderr: %s", r.stderr)
			left, err := filepath.Glob(filepath.Join(tmp, model.TelemetryLogPattern))
			require.NoError(t, err)
			require.Empty(t, left)
		})
	}
}

func TestHelp(t *testing.T) {
	r := spiral(t, nil, "--help")
	require.Equal(t, 0, r.code)
	for _, c := range []string{"train", "eval", "sft", "generate", "artifacts", "export", "init-model", "version"} {
		require.Regexp(t, regexp.MustCompile(`(?m)^  `+regexp.QuoteMeta(c)+` `), r.stdout, "command %s missing from --help", c)
	}
	// Every command's --help lists its flags with defaults.
	for _, c := range []string{"train", "eval", "version"} {
		r := spiral(t, nil, c, "--help")
		require.Equal(t, 0, r.code, c)
		require.Contains(t, r.stdout, "--device string")
		require.Contains(t, r.stdout, `(default "cpu")`)
	}
}

func TestUsageErrors(t *testing.T) {
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"unknown flag", []string{"--no-such-flag"}, "unknown flag: --no-such-flag"},
		{"unknown flag on command", []string{"version", "--frobnicate"}, "unknown flag: --frobnicate"},
		{"unknown command", []string{"frobnicate"}, `unknown command "frobnicate"`},
		{"bad flag value", []string{"version", "--threads", "many"}, "invalid argument"},
		{"cuda option on the cpu", []string{"version", "--cuda-option", "arena_extend_strategy=kSameAsRequested"}, `--cuda-option applies to --device cuda or auto, not "cpu"`},
		{"cuda option naming the device", []string{"version", "--device", "cuda", "--cuda-option", "device_id=1"}, "choose the device with --device cuda:N"},
		{"cuda option without a value", []string{"version", "--device", "cuda", "--cuda-option", "gpu_mem_limit"}, "invalid argument"},
		// A flag whose value may be left out takes it after "=": pflag reads
		// a detached one as an argument (a prompt, for generate).
		{"detached arena value", []string{"generate", "--shared-arena", "false", "Solve x+1=2."}, `(--shared-arena=false); without it "false" is read as an argument`},
		{"training working memory", []string{"train", "--mlp-mib", "0"}, "--mlp-mib 0: want >= 1"},
		{"sft working memory", []string{"sft", "--attention-mib", "-1"}, "--attention-mib -1: want >= 1"},
		{"negative kept values", []string{"train", "--kept-mib", "-1"}, "--kept-mib -1: want >= 0"},
		{"bench without a subcommand", []string{"bench"}, "spiral bench: want `spiral bench train` or `spiral bench generate`\n"},
		{"bench with another", []string{"bench", "trian"}, "spiral bench: want `spiral bench train` or `spiral bench generate`, not \"trian\"\n"},
		{"bench train beyond the context", []string{"bench", "train", "--tokens", "5000"}, "--tokens 5000: the model (embedded) has 4096 positions"},
		{"bench generate beyond the context", []string{"bench", "generate", "--prompt-tokens", "4090", "--new-tokens", "7"}, "--prompt-tokens 4090 + --new-tokens 7: the model (embedded) has 4096 positions"},
		// The embedded task's operands are no flag of train's (the
		// message said "widen the operand range or count").
		{"more held-out problems than the embedded split has", []string{"train", "--eval-problems", "5000"}, "--eval-problems 5000: the embedded task's test split has 1134 problems: want at most that\n"},
		{"held-out flags without held-out data", []string{"train", "--data", "problems.jsonl", "--eval-samples", "8"}, "--eval-samples: training on --data problems.jsonl evaluates held-out problems from --eval-data only"},
		{"one field as problem and answer", []string{"train", "--data", "problems.jsonl", "--problem-field", "q", "--answer-field", "q"}, `--problem-field and --answer-field both name "q": every gold answer would be its problem's own text`},
		{"one field as problem and answer, eval", []string{"eval", "--data", "problems.jsonl", "--problem-field", "q", "--answer-field", "q"}, `--problem-field and --answer-field both name "q"`},
		{"one field as problem and answer, inspect", []string{"data", "inspect", "--problem-field", "q", "--answer-field", "q", "problems.jsonl"}, `--problem-field and --answer-field both name "q"`},
		{"no aggregation rounds", []string{"train", "--agg-rounds", "0"}, "--agg-rounds is 0; want >= 1"},
		{"aggregation rounds for GRPO", []string{"train", "--algo", "grpo", "--agg-rounds", "2"}, "--algo grpo with --agg-rounds 2: GRPO samples --group traces a problem and aggregates none"},
		{"export format", []string{"export", "--format", "bogus", "--out", "x"}, `--format "bogus": want onnx, hf or peft`},
		{"LoRA targets without a rank", []string{"artifacts", "--lora-targets", "bogus"}, `--lora-targets: "bogus": want q, k, v, o, gate, up or down`},
		{"LoRA alpha without a rank", []string{"train", "--lora-alpha", "-5"}, "--lora-alpha -5: want > 0"},
		{"detached bool value", []string{"version", "--deterministic", "true"}, "(--deterministic=true)"},
		{"engine URL of another scheme", []string{"eval", "--engine", "openai", "--served-model", "m", "--base-url", "ftp://x/v1"}, `--base-url "ftp://x/v1": want an http:// or https:// URL, e.g. http://127.0.0.1:8000/v1`},
		{"engine URL without a scheme", []string{"eval", "--engine", "openai", "--served-model", "m", "--base-url", "127.0.0.1:8000/v1"}, `--base-url "127.0.0.1:8000/v1": want an http:// or https:// URL`},
		{"engine URL without a host", []string{"eval", "--engine", "openai", "--served-model", "m", "--base-url", "http://"}, `--base-url "http://" names no host`},
		{"engine URL that does not parse", []string{"eval", "--engine", "openai", "--served-model", "m", "--base-url", "http://exa mple/v1"}, `--base-url "http://exa mple/v1" does not parse as a URL`},
		// Counts past 2^20 panicked (makeslice) or ran out of memory.
		{"completions past any count", []string{"generate", "--n", "9223372036854775807", "hi"}, "--n 9223372036854775807: want 1..1048576"},
		{"eval samples past any count", []string{"eval", "--samples", "100000000"}, "--samples 100000000: want 1..1048576"},
		{"GRPO group past any count", []string{"train", "--algo", "grpo", "--group", "9223372036854775807"}, "--group 9223372036854775807: want 2..1048576"},
		{"sft batch past any count", []string{"sft", "--batch", "1048577"}, "--batch 1048577: want 1..1048576"},
		{"bench rows past any count", []string{"bench", "train", "--rows", "9223372036854775807"}, "--rows 9223372036854775807: want 1..1048576"},
		{"bench tokens of a step", []string{"bench", "generate", "--rows", "1048576", "--prompt-tokens", "16"}, "--rows 1048576 x --prompt-tokens + --new-tokens 80: 83886080 tokens a step; want at most 16777216"},
		{"greedy training", []string{"train", "--temperature", "0"}, "--temperature 0 samples greedily: every trace of a problem would be the same, so no advantage is ever non-zero and no step trains"},
		{"engine timeout 0", []string{"eval", "--engine", "openai", "--served-model", "m", "--base-url", "http://x/v1", "--engine-timeout", "0"}, "--engine-timeout 0s: want > 0"},
		{"negative engine timeout", []string{"train", "--engine", "openai", "--served-model", "m", "--base-url", "http://x/v1", "--engine-timeout", "-1s",
			"--engine-sync", "sglang", "--sync-dir", "sync"}, "--engine-timeout -1s: want > 0"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := spiral(t, nil, c.args...)
			require.Equal(t, 2, r.code)
			require.Contains(t, r.stderr, c.want)
			require.Empty(t, r.stdout, "a usage error prints nothing else")
			require.Equal(t, 1, strings.Count(strings.TrimRight(r.stderr, "\n"), "\n")+1, "want a one-line error, got %q", r.stderr)
		})
	}
}

// TestMissingRuntime checks that when no ONNX Runtime library loads, the
// error names the places looked at and the setup command, and that an
// explicit library that does not load is an error naming it, never
// replaced by another.
func TestMissingRuntime(t *testing.T) {
	r := spiral(t, []string{"ONNXRUNTIME_LIB=", "SPIRAL_CACHE_DIR=" + t.TempDir()}, "version")
	require.Equal(t, 1, r.code)
	for _, want := range []string{"--ort-lib: not set", "$ONNXRUNTIME_LIB: not set", "setup location:", "scripts/setup.sh"} {
		require.Contains(t, r.stderr, want)
	}
	r = spiral(t, nil, "version", "--ort-lib", "/nonexistent/flag.so")
	require.Equal(t, 2, r.code)
	require.Contains(t, r.stderr, "spiral version: --ort-lib /nonexistent/flag.so: no such file or directory")
	// A library named without a directory is the file in the working
	// directory, as every other path argument is (the system loader would
	// search its library path for a bare name instead).
	if lib := os.Getenv("ONNXRUNTIME_LIB"); lib != "" {
		dir := t.TempDir()
		require.NoError(t, os.Symlink(lib, filepath.Join(dir, "libort-here.so")))
		r = spiralIn(t, dir, nil, "version", "--ort-lib", "libort-here.so")
		require.Equal(t, 0, r.code, r.stderr)
		require.Contains(t, r.stdout, filepath.Join(dir, "libort-here.so"))
	}
	r = spiral(t, []string{"ONNXRUNTIME_LIB=/nonexistent/env.so"}, "version")
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "/nonexistent/env.so (from $ONNXRUNTIME_LIB): no such file")
}

func TestDeviceCUDAWithoutProvider(t *testing.T) {
	requireRuntime(t)
	// A cache without setup's CUDA build (this machine may have one).
	noCUDA := []string{"SPIRAL_CACHE_DIR=" + t.TempDir()}
	r := spiral(t, noCUDA, "version", "--device", "cuda")
	if r.code == 0 {
		t.Skip("this ONNX Runtime build has a working CUDA provider")
	}
	require.Contains(t, r.stderr, os.Getenv("ONNXRUNTIME_LIB"))
	require.Contains(t, r.stderr, "(from $ONNXRUNTIME_LIB) is not a CUDA build: no libonnxruntime_providers_cuda.so beside it")
	require.Contains(t, r.stderr, "scripts/setup.sh --cuda")

	r = spiral(t, noCUDA, "version", "--device", "auto")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stderr, "warning: --device auto")
	require.Contains(t, r.stdout, "device cpu")
}

// TestDeviceCUDANamesWhatIsMissing: a CUDA build whose provider needs a
// library the machine lacks (here a stand-in for the NVIDIA driver's
// libcuda.so.1) fails with the loader's own words, naming it, after the
// CUDA libraries beside it were loaded (a stand-in for cuBLAS, which the
// provider needs too and finds only because it was).
func TestDeviceCUDANamesWhatIsMissing(t *testing.T) {
	requireRuntime(t)
	cc, err := exec.LookPath("cc")
	if err != nil {
		t.Skip("no C compiler")
	}
	dir := t.TempDir()
	build := func(name string, args ...string) {
		src := filepath.Join(dir, "x.c")
		require.NoError(t, os.WriteFile(src, []byte("int spiral_stub(void) { return 1; }\n"), 0o644))
		out, err := exec.Command(cc, append([]string{"-shared", "-fPIC", "-o", filepath.Join(dir, name), src, "-Wl,-soname," + name}, args...)...).CombinedOutput()
		require.NoError(t, err, string(out))
	}
	build("libcublas.so.13")
	build("libonnxruntime_providers_shared.so")
	driver := t.TempDir()
	src := filepath.Join(driver, "d.c")
	require.NoError(t, os.WriteFile(src, []byte("int spiral_driver(void) { return 2; }\n"), 0o644))
	out, err := exec.Command(cc, "-shared", "-fPIC", "-o", filepath.Join(driver, "libspiral_no_driver.so.1"), src, "-Wl,-soname,libspiral_no_driver.so.1").CombinedOutput()
	require.NoError(t, err, string(out))
	// The provider needs cuBLAS (beside it) and the "driver" (nowhere once
	// its directory is gone).
	build("libonnxruntime_providers_cuda.so", "-Wl,--no-as-needed", "-L"+dir, "-l:libcublas.so.13", "-L"+driver, "-l:libspiral_no_driver.so.1")
	require.NoError(t, os.RemoveAll(driver))
	require.NoError(t, os.Symlink(os.Getenv("ONNXRUNTIME_LIB"), filepath.Join(dir, "libonnxruntime.so")))

	r := spiral(t, nil, "version", "--ort-lib", filepath.Join(dir, "libonnxruntime.so"), "--device", "cuda")
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, filepath.Join(dir, "libonnxruntime_providers_cuda.so")+" does not load")
	require.Contains(t, r.stderr, "libspiral_no_driver.so.1: cannot open shared object file", "the loader names the missing library, not cuBLAS")

	// cuDNN, which the provider opens at run time and does not link: named
	// when it is missing (this machine has none), found beside the
	// provider. The "driver" is back for it.
	build("libspiral_no_driver.so.1")
	withDriver := []string{"LD_LIBRARY_PATH=" + dir + ":" + os.Getenv("LD_LIBRARY_PATH")}
	r = spiral(t, withDriver, "version", "--ort-lib", filepath.Join(dir, "libonnxruntime.so"), "--device", "cuda")
	require.Equal(t, 1, r.code, "the CPU build has no CUDA provider to append")
	if strings.Contains(r.stderr, "cuDNN") {
		require.Contains(t, r.stderr, model.CUDNN+": cannot open shared object file")
		require.Contains(t, r.stderr, "scripts/setup.sh --cuda")
	} else {
		t.Logf("this machine has %s: its absence is not tested", model.CUDNN)
	}
	build(model.CUDNN)
	r = spiral(t, withDriver, "version", "--ort-lib", filepath.Join(dir, "libonnxruntime.so"), "--device", "cuda")
	require.Equal(t, 1, r.code, "the CPU build has no CUDA provider to append")
	require.NotContains(t, r.stderr, "cuDNN", "found beside the provider")
	require.NoError(t, os.Remove(filepath.Join(dir, "libspiral_no_driver.so.1")))

	// Laid out as setup lays out its cache, with $ONNXRUNTIME_LIB naming
	// the CPU build (as env.sh does): --device cuda takes the CUDA build.
	cache := t.TempDir()
	cpu := filepath.Join(cache, "onnxruntime-"+model.ORTVersion)
	require.NoError(t, os.MkdirAll(cpu, 0o755))
	require.NoError(t, os.Symlink(os.Getenv("ONNXRUNTIME_LIB"), filepath.Join(cpu, "libonnxruntime.so")))
	require.NoError(t, os.Rename(dir, filepath.Join(cache, "onnxruntime-gpu-"+model.ORTCUDAVersion)))
	env := []string{"SPIRAL_CACHE_DIR=" + cache, "ONNXRUNTIME_LIB=" + filepath.Join(cpu, "libonnxruntime.so")}
	r = spiral(t, env, "version", "--device", "cuda")
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, filepath.Join(cache, "onnxruntime-gpu-"+model.ORTCUDAVersion, "libonnxruntime_providers_cuda.so")+" does not load")
	r = spiral(t, env, "version")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, filepath.Join(cpu, "libonnxruntime.so"), "the CPU build on the CPU")
}

func TestDataInspect(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "p.jsonl")
	require.NoError(t, os.WriteFile(good, []byte(`{"question":"1+1?","answer":"2"}`+"\n"+`{"question":"2+2?","answer":"4"}`+"\n"), 0o644))
	r := spiral(t, nil, "data", "inspect", good)
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "jsonl")
	require.Contains(t, r.stdout, "question")
	require.Contains(t, r.stdout, "2 kept")

	bad := filepath.Join(dir, "bad.jsonl")
	require.NoError(t, os.WriteFile(bad, []byte(`{"question":"1+1?","answer":"2"}`+"\n"+`{"question": oops`+"\n"), 0o644))
	r = spiral(t, nil, "data", "inspect", bad)
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "bad.jsonl:2")

	r = spiral(t, nil, "data", "inspect")
	require.Equal(t, 2, r.code)
}

// TestDataSynth writes problem sets of the synthetic task: with the
// embedded settings they are the embedded commands' own problems, in
// their order; a harder setting draws its operands from the range asked
// and keeps the embedded split (no problem the embedded model trained
// on, in any order of its terms and factors); bad flags are usage errors naming the flag.
func TestDataSynth(t *testing.T) {
	for _, tc := range []struct {
		split synth.Split
		n     int
	}{{synth.Test, 128}, {synth.Train, 50}} {
		want, err := synth.EmbeddedSplit(tc.split, tc.n)
		require.NoError(t, err)
		r := spiral(t, nil, "data", "synth", "--split", tc.split.String(), "--problems", fmt.Sprint(tc.n))
		require.Equal(t, 0, r.code, r.stderr)
		rows := jsonLines[map[string]string](t, r.stdout)
		require.Len(t, rows, tc.n)
		for i, p := range want.Problems {
			require.Equal(t, map[string]string{"id": p.ID, "problem": p.Problem, "answer": p.Answer}, rows[i])
		}
	}

	// A training problem in another order is the same problem: the
	// problems are compared by canonical form, and each row must be in
	// the embedded test split (by its canonical form too).
	equation := func(problem string) string {
		return strings.TrimSuffix(strings.TrimPrefix(problem, "Solve "), ".")
	}
	embedded, err := synth.Embedded()
	require.NoError(t, err)
	trained, err := synth.EmbeddedSplit(synth.Train, 2000)
	require.NoError(t, err)
	seen := map[string]bool{}
	for _, p := range trained.Problems {
		seen[synth.CanonicalExpr(equation(p.Problem))] = true
	}
	file := filepath.Join(t.TempDir(), "op7", "hard.jsonl") // --out's directory is created
	r := spiral(t, nil, "data", "synth", "--max-operand", "7", "--out", file)
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stderr, "128 test problems")
	b, err := os.ReadFile(file)
	require.NoError(t, err)
	above5 := 0
	for _, row := range jsonLines[map[string]string](t, string(b)) {
		require.False(t, seen[synth.CanonicalExpr(equation(row["problem"]))], "%s is an embedded training problem, in some order", row["problem"])
		require.Equal(t, synth.Test, embedded.SplitOf(equation(row["problem"])), row["problem"])
		lhs, _, ok := strings.Cut(strings.TrimPrefix(row["problem"], "Solve "), "=")
		require.True(t, ok, row["problem"])
		for _, op := range regexp.MustCompile(`[0-9]+`).FindAllString(lhs, -1) {
			require.Contains(t, []string{"1", "2", "3", "4", "5", "6", "7"}, op, row["problem"])
			if op == "6" || op == "7" {
				above5++
			}
		}
	}
	require.Positive(t, above5, "no operand above the embedded range")
	r = spiral(t, nil, "data", "inspect", file)
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "128 kept")
	r = spiral(t, nil, "data", "inspect", "--max-operand", "7", file)
	require.Equal(t, 2, r.code, r.stderr)
	require.Contains(t, r.stderr, "--max-operand is spiral data synth's; spiral data inspect would ignore it")
	under := filepath.Join(file, "x.jsonl") // a file where --out's directory would be
	r = spiral(t, nil, "data", "synth", "--out", under)
	require.Equal(t, 2, r.code, r.stderr)
	require.Contains(t, r.stderr, "--out "+under)
	// A directory failed in atomicfile's rename ("rename ... file exists"),
	// then was refused with exit 1 where plot refuses one with 2.
	r = spiral(t, nil, "data", "synth", "--out", filepath.Dir(file))
	require.Equal(t, 2, r.code, r.stderr)
	require.Contains(t, r.stderr, "--out "+filepath.Dir(file)+" is a directory: want the JSONL file to write, such as "+filepath.Join(filepath.Dir(file), "problems.jsonl"))

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--split", "dev"}, "--split"},
		{[]string{"--problems", "0"}, "--problems"},
		{[]string{"--min-operand", "0"}, "--min-operand"},
		{[]string{"--max-operands", "0"}, "--max-operands"},
		{[]string{"--form", "algebra"}, `--form "algebra": want`},
		{[]string{"--min-operands", "5", "--max-operands", "3"}, "--min-operands..--max-operands 5..3: want 2 <= min <= max"},
		{[]string{"--min-operand", "4", "--max-operand", "3"}, "--min-operand..--max-operand 4..3: want 1 <= min <= max"},
		// 2^20 operands an expression ran the machine out of memory.
		{[]string{"--max-operands", "1025"}, "--max-operands 1025: want 2..1024"},
		{[]string{"--problems", "1048577"}, "--problems 1048577: want 1..1048576"},
		{[]string{"--min-operands", "2", "--max-operands", "2", "--max-operand", "2", "--problems", "500"}, "distinct"},
		{[]string{"extra"}, "usage"},
		{[]string{"--problem-field", "q"}, "--problem-field is spiral data inspect's; spiral data synth would ignore it"},
	} {
		r := spiral(t, nil, append([]string{"data", "synth"}, tc.args...)...)
		require.Equal(t, 2, r.code, "%v: %s", tc.args, r.stderr)
		require.Contains(t, r.stderr, tc.want, tc.args)
	}
}

// TestEmbeddedDefault runs the embedded model with no files given: eval
// on two held-out problems of the embedded task, in a fresh cache.
func TestEmbeddedDefault(t *testing.T) {
	requireRuntime(t)
	cache := t.TempDir()
	out := t.TempDir()
	r := spiral(t, []string{"SPIRAL_CACHE_DIR=" + cache}, "eval", "--mode", "passk", "--limit", "2", "--samples", "2", "--out", out, "--quiet")
	if strings.Contains(r.stderr, "carries no default model") {
		t.Skip("binary built without the embedded model")
	}
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "pass@k")
	require.FileExists(t, filepath.Join(out, "passk.json"))
}

// TestEmbeddedModelOnDataFile evaluates the embedded model on the first
// held-out problems of its task twice: as the embedded default and as a
// JSONL file given by --data. The model has read no prompt but its task's
// compact ones, so the file must get those too: the reports must be
// equal, search (pass@k) and aggregation (RSA) alike. With the default
// RSA-style templates its pass@1 on 128 held-out problems falls from 0.46 to
// 0.16.
func TestEmbeddedModelOnDataFile(t *testing.T) {
	requireRuntime(t)
	ds, err := synth.EmbeddedSplit(synth.Test, 4)
	require.NoError(t, err)
	var rows bytes.Buffer
	enc := json.NewEncoder(&rows)
	for _, p := range ds.Problems {
		require.NoError(t, enc.Encode(map[string]string{"id": p.ID, "problem": p.Problem, "answer": p.Answer}))
	}
	file := filepath.Join(t.TempDir(), "test.jsonl")
	require.NoError(t, os.WriteFile(file, rows.Bytes(), 0o644))
	cache := []string{"SPIRAL_CACHE_DIR=" + t.TempDir()}

	evalBoth := func(mode string, flags ...string) (embedded, fromFile string) {
		for _, data := range []string{"", file} {
			out := t.TempDir()
			args := append([]string{"eval", "--mode", mode, "--limit", "4", "--seed", "3", "--quiet", "--out", out}, flags...)
			if data != "" {
				args = append(args, "--data", data)
			}
			r := spiral(t, cache, args...)
			if strings.Contains(r.stderr, "carries no default model") {
				t.Skip("binary built without the embedded model")
			}
			require.Equal(t, 0, r.code, r.stderr)
			if data == "" {
				embedded = out
			} else {
				fromFile = out
			}
		}
		return embedded, fromFile
	}

	a, b := evalBoth("passk", "--samples", "4")
	var pa, pb report.PassAtK
	require.NoError(t, report.ReadJSON(filepath.Join(a, "passk.json"), &pa))
	require.NoError(t, report.ReadJSON(filepath.Join(b, "passk.json"), &pb))
	require.NotEmpty(t, pa.Points)
	require.Equal(t, pa.Points, pb.Points)
	require.Equal(t, pa.Tokens, pb.Tokens)

	a, b = evalBoth("rsa", "--population", "4", "--subset", "2", "--rsa-steps", "1")
	var ra, rb report.RSA
	require.NoError(t, report.ReadJSON(filepath.Join(a, "rsa.json"), &ra))
	require.NoError(t, report.ReadJSON(filepath.Join(b, "rsa.json"), &rb))
	require.Len(t, ra.Steps, 2)
	require.Equal(t, ra.Steps, rb.Steps)
}

// TestUnreadablePrompts: text the embedded model's character tokenizer
// maps to <unk> is reported, naming the template flag or the problem's
// row; the embedded task's own prompts raise no warning.
func TestUnreadablePrompts(t *testing.T) {
	requireRuntime(t)
	dir := t.TempDir()
	problems := filepath.Join(dir, "p.jsonl")
	require.NoError(t, os.WriteFile(problems, []byte(`{"problem":"Solve 2+x=5.","answer":"3"}`+"\n"+`{"problem":"Löse 2+x=5.","answer":"3"}`+"\n"), 0o644))
	rsaStyle := filepath.Join(dir, "search.txt")
	require.NoError(t, os.WriteFile(rsaStyle, []byte("Solve the problem. Put the final answer in \\boxed{}.\n{{.Problem}}\n"), 0o644))
	cache := []string{"SPIRAL_CACHE_DIR=" + t.TempDir()}
	for _, tc := range []struct {
		name  string
		args  []string
		warns []string
	}{
		{"embedded task", nil, nil},
		{"template", []string{"--search-template", rsaStyle}, []string{"search template", "--search-template"}},
		{"problem", []string{"--data", problems}, []string{"1 of 2 problems", "p.jsonl:2", "Löse"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"eval", "--mode", "passk", "--limit", "2", "--samples", "1", "--quiet", "--out", t.TempDir()}, tc.args...)
			r := spiral(t, cache, args...)
			if strings.Contains(r.stderr, "carries no default model") {
				t.Skip("binary built without the embedded model")
			}
			require.Equal(t, 0, r.code, r.stderr)
			if tc.warns == nil {
				require.NotContains(t, r.stderr, "warning", "the embedded task's prompts are all readable")
			}
			for _, w := range tc.warns {
				require.Contains(t, r.stderr, w)
			}
		})
	}
}

// TestCompareRewrittenData is a data file rewritten at its path with
// other problems between two evaluations: every report records the ids
// of the problems it was evaluated on (meta.problem_ids), so compare
// refuses the reports of every mode, not only pass@k's (whose
// per-problem counts list ids too), and --allow-different-problems
// compares them with the same lines as a warning.
func TestCompareRewrittenData(t *testing.T) {
	requireRuntime(t)
	ds, err := synth.EmbeddedSplit(synth.Test, 4)
	require.NoError(t, err)
	dir := t.TempDir()
	file := filepath.Join(dir, "p.jsonl")
	writeData := func(prefix string, offset int) {
		var rows bytes.Buffer
		enc := json.NewEncoder(&rows)
		for i := range 2 {
			p := ds.Problems[offset+i]
			row := map[string]string{"problem": p.Problem, "answer": p.Answer}
			if prefix != "" { // else no id field: ids by position
				row["id"] = fmt.Sprintf("%s%d", prefix, i)
			}
			require.NoError(t, enc.Encode(row))
		}
		require.NoError(t, os.WriteFile(file, rows.Bytes(), 0o644))
	}
	cache := []string{"SPIRAL_CACHE_DIR=" + t.TempDir()}
	modes := []string{"passk", "rsa", "sequential"}
	eval := func(out string) {
		for _, mode := range modes {
			r := spiral(t, cache, "eval", "--mode", mode, "--data", file, "--threads", "1", "--quiet", "--out", out,
				"--samples", "2", "--population", "2", "--subset", "2", "--rsa-steps", "1", "--max-new-tokens", "8")
			if strings.Contains(r.stderr, "carries no default model") {
				t.Skip("binary built without the embedded model")
			}
			require.Equal(t, 0, r.code, r.stderr)
		}
	}
	a, b := filepath.Join(dir, "A"), filepath.Join(dir, "B")
	writeData("a", 0)
	eval(a)
	writeData("b", 2)
	eval(b)

	var pa report.PassAtK
	var ra report.RSA
	var sa report.Budget
	require.NoError(t, report.ReadJSON(filepath.Join(a, "passk.json"), &pa))
	require.NoError(t, report.ReadJSON(filepath.Join(a, "rsa.json"), &ra))
	require.NoError(t, report.ReadJSON(filepath.Join(a, "sequential.json"), &sa))
	for _, m := range []report.Meta{pa.Meta, ra.Meta, sa.Meta} {
		require.Equal(t, []string{"a0", "a1"}, m.ProblemIDs, m.Mode)
	}
	require.Empty(t, ra.Steps[0].Problems, "no RSA details: the ids come from meta")

	for _, mode := range modes {
		t.Run(mode, func(t *testing.T) {
			ref, other := filepath.Join(a, mode+".json"), filepath.Join(b, mode+".json")
			want := fmt.Sprintf(`%s against %s (%s reports): problem 0 is "b0" against "a0"`, other, ref, mode)
			r := spiral(t, nil, "compare", ref, other)
			require.Equal(t, 1, r.code, r.stdout)
			require.Contains(t, r.stderr, want)
			require.Empty(t, r.stdout, "no table")
			r = spiral(t, nil, "compare", "--allow-different-problems", ref, other)
			require.Equal(t, 0, r.code, r.stderr)
			require.Contains(t, r.stderr, "warning: reports evaluated on different problems")
			require.Contains(t, r.stderr, want)
		})
	}

	// Without an id field the ids are positions, the same for both files:
	// the problems' digest tells them apart.
	c, d := filepath.Join(dir, "C"), filepath.Join(dir, "D")
	modes = modes[:1]
	writeData("", 0)
	eval(c)
	writeData("", 2)
	eval(d)
	r := spiral(t, nil, "compare", filepath.Join(c, "passk.json"), filepath.Join(d, "passk.json"))
	require.Equal(t, 1, r.code, r.stdout)
	require.Contains(t, r.stderr, "the problems' texts or answers differ")
}

// TestArtifactsCommand builds the training graphs of a model that has no
// tokenizer (artifacts need none) and reports what is trained, frozen and
// constant; --freeze moves matching parameters to the frozen list with
// the reason.
func TestArtifactsCommand(t *testing.T) {
	requireRuntime(t)
	dir := t.TempDir()
	m := filepath.Join(dir, "m")
	r := spiral(t, nil, "init-model", "--out", m)
	require.Equal(t, 0, r.code, r.stderr)
	require.NoError(t, os.Remove(filepath.Join(m, "tokenizer.json")))
	r = spiral(t, nil, "artifacts", "--model", m, "--out", filepath.Join(dir, "a"))
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "trained: 24 tensors")
	require.Contains(t, r.stdout, "frozen:  0 tensors")
	r = spiral(t, nil, "artifacts", "--model", m, "--out", filepath.Join(dir, "b"), "--freeze", `^model\.embed_tokens\.`)
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "trained: 23 tensors")
	require.Contains(t, r.stdout, "frozen:  1 tensors")
	require.Contains(t, r.stdout, "model.embed_tokens.weight")
	require.Contains(t, r.stdout, "matched by --freeze")
}

// TestBenchAndPlan runs spiral bench train and generate on a tiny model
// (one JSON line after opening and one per step, with the fields the
// README's tables read) and spiral plan on it and on a named config.
// TestBenchGeneratePromptRate: bench generate's prompt_tokens_per_second
// is the tokens the prefill ran on over its time. Identical prompts are
// prefilled once: --vocab-limit 1 makes the 3 rows' 4-token prompts equal,
// 4 tokens prefilled, where the rate counted all 12.
func TestBenchGeneratePromptRate(t *testing.T) {
	requireRuntime(t)
	m := filepath.Join(t.TempDir(), "m")
	r := spiral(t, nil, "init-model", "--out", m)
	require.Equal(t, 0, r.code, r.stderr)
	env := []string{"SPIRAL_CACHE_DIR=" + t.TempDir()}
	for _, tc := range []struct {
		vocab     string
		prefilled float64
	}{{"1", 4}, {"0", 12}} {
		r = spiral(t, env, "bench", "generate", "--model", m, "--vocab-limit", tc.vocab, "--rows", "3", "--prompt-tokens", "4", "--new-tokens", "2", "--steps", "1")
		require.Equal(t, 0, r.code, r.stderr)
		ls := jsonLines[map[string]any](t, r.stdout)
		require.Equal(t, "generate", ls[1]["phase"])
		require.InEpsilon(t, tc.prefilled, ls[1]["prompt_tokens_per_second"].(float64)*ls[1]["prefill_seconds"].(float64), 1e-6, "--vocab-limit %s", tc.vocab)
	}
}

func TestBenchAndPlan(t *testing.T) {
	requireRuntime(t)
	dir := t.TempDir()
	m := filepath.Join(dir, "m")
	r := spiral(t, nil, "init-model", "--out", m)
	require.Equal(t, 0, r.code, r.stderr)
	env := []string{"SPIRAL_CACHE_DIR=" + t.TempDir()}

	// A real config's shape (Qwen3-0.6B's heads, vocabulary and tied
	// head), narrowed by the flags given so that the test stays small.
	shaped := filepath.Join(dir, "shaped")
	r = spiral(t, nil, "init-model", "--out", shaped, "--config", "qwen3-0.6b", "--layers", "1", "--hidden", "32", "--intermediate", "64", "--head-dim", "8")
	require.Equal(t, 0, r.code, r.stderr)
	// The vocabulary is the config's, the tokenizer the synthetic task's:
	// the line says so rather than let "vocab 151936" pass for Qwen3's.
	require.Contains(t, r.stdout, "vocab 151936, with the char tokenizer (49 ids: ")
	require.Contains(t, r.stdout, "the logits past its ids are never produced; not qwen3-0.6b's own tokenizer")
	var rc map[string]any
	b, err := os.ReadFile(filepath.Join(shaped, "config.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &rc))
	for k, v := range map[string]float64{"num_hidden_layers": 1, "hidden_size": 32, "intermediate_size": 64, "num_attention_heads": 16, "num_key_value_heads": 8, "head_dim": 8, "vocab_size": 151936} {
		require.Equal(t, v, rc[k], k)
	}
	require.Equal(t, true, rc["tie_word_embeddings"])
	// Over it, with --overwrite: the new model's files replace its own, a
	// file of the user's stays, and nothing is left of the stage the files
	// were written in.
	require.NoError(t, os.WriteFile(filepath.Join(shaped, "notes.txt"), []byte("mine"), 0o666))
	r = spiral(t, nil, "init-model", "--out", shaped, "--overwrite")
	require.Equal(t, 0, r.code, r.stderr)
	b, err = os.ReadFile(filepath.Join(shaped, "config.json"))
	require.NoError(t, err)
	require.Contains(t, string(b), `"vocab_size": 49`)
	require.FileExists(t, filepath.Join(shaped, "notes.txt"))
	requireNoStage(t, shaped)

	r = spiral(t, env, "bench", "train", "--model", m, "--rows", "2", "--tokens", "32", "--steps", "2")
	require.Equal(t, 0, r.code, r.stderr)
	ls := jsonLines[map[string]any](t, r.stdout)
	require.Len(t, ls, 3)
	require.Equal(t, "open", ls[0]["phase"])
	for _, l := range ls[1:] {
		require.Equal(t, "step", l["phase"])
		for _, k := range []string{"seconds", "tokens_per_second", "forward_seconds", "backward_seconds", "optimizer_seconds", "peak_rss_bytes"} {
			require.Greater(t, l[k], 0.0, k)
		}
	}

	r = spiral(t, env, "bench", "generate", "--shared-arena=false", "--model", m, "--rows", "3", "--prompt-tokens", "8", "--new-tokens", "4", "--steps", "1")
	require.Equal(t, 0, r.code, r.stderr)
	ls = jsonLines[map[string]any](t, r.stdout)
	require.Len(t, ls, 3)
	require.Equal(t, "generate", ls[1]["phase"])
	// 2 layers x (k, v) x 2 KV heads x 32 wide x 4 bytes x 3 rows x 12 positions.
	require.Equal(t, float64(2*2*2*32*4*3*12), ls[1]["kv_cache_bytes"])
	require.NotContains(t, ls[1], "device_copy_bytes", "the host path copies nothing through the device layer")
	require.Equal(t, 3.0, ls[1]["decode_graph_calls"], "each decode step of the 3 rows, one call, on the decode graph")
	require.Equal(t, "release", ls[2]["phase"])
	require.NotContains(t, ls[2], "arena", "no shared arena with --shared-arena=false")
	// The decode rate counts the decode steps' tokens, 3 rows x 3: each
	// row's first comes from its prefill (it counted 3 x 4 before, and
	// --new-tokens 1 gave a rate of tokens no decode step made).
	decode := ls[1]["seconds"].(float64) - ls[1]["prefill_seconds"].(float64)
	require.InEpsilon(t, 3*3, ls[1]["tokens_per_second"].(float64)*decode, 1e-6)
	r = spiral(t, env, "bench", "generate", "--model", m, "--rows", "3", "--prompt-tokens", "8", "--new-tokens", "1", "--steps", "1")
	require.Equal(t, 0, r.code, r.stderr)
	ls = jsonLines[map[string]any](t, r.stdout)
	require.NotContains(t, ls[1], "tokens_per_second", "no decode step, no decode rate")
	require.Positive(t, ls[1]["prompt_tokens_per_second"])

	// --resident: the device layer on the CPU, AdamW included. The first
	// training step copies the parameters and the two moments, then only
	// what crosses with the graphs' calls (activations, scalars): no
	// gradient comes back; a generation copies the weights and then
	// only small per-call inputs and logits.
	r = spiral(t, env, "bench", "train", "--resident", "--model", m, "--rows", "2", "--tokens", "32", "--steps", "2")
	require.Equal(t, 0, r.code, r.stderr)
	ls = jsonLines[map[string]any](t, r.stdout)
	require.Len(t, ls, 3)
	for i, l := range ls[1:] {
		weights, calls := l["weights_bytes"].(float64), l["call_copy_bytes"].(float64)
		require.NotContains(t, l, "gradient_copy_bytes")
		require.Positive(t, calls)
		first := 0.0
		if i == 0 {
			first = 3 * weights
		}
		require.Equal(t, first+calls, l["device_copy_bytes"])
	}
	r = spiral(t, env, "bench", "generate", "--resident", "--model", m, "--rows", "3", "--prompt-tokens", "8", "--new-tokens", "4", "--steps", "1")
	require.Equal(t, 0, r.code, r.stderr)
	ls = jsonLines[map[string]any](t, r.stdout)
	copied, weights := ls[1]["device_copy_bytes"].(float64), ls[1]["weights_bytes"].(float64)
	require.Greater(t, copied, weights)
	require.Less(t, copied, weights+float64(ls[1]["kv_cache_bytes"].(float64)), "less than the weights and one copy of the cache")
	require.NotContains(t, ls[1], "decode_graph_calls", "the device path has no decode graph")

	// --shared-arena: every session's device memory from one arena, whose
	// counters the lines carry. The KV cache is in use after the
	// generation and back in the arena, still reserved, after its
	// release; before each training step of train --generate-rows, a
	// generation is released the same way.
	r = spiral(t, env, "bench", "generate", "--resident", "--shared-arena", "--model", m, "--rows", "3", "--prompt-tokens", "8", "--new-tokens", "4", "--steps", "1")
	require.Equal(t, 0, r.code, r.stderr)
	ls = jsonLines[map[string]any](t, r.stdout)
	require.Len(t, ls, 3)
	arena := func(l map[string]any) map[string]any {
		a, ok := l["arena"].(map[string]any)
		require.True(t, ok, "a line without the arena's counters: %v", l)
		return a
	}
	open, gen, rel := arena(ls[0]), arena(ls[1]), arena(ls[2])
	require.GreaterOrEqual(t, open["in_use_bytes"], weights, "the weights are in the arena")
	require.GreaterOrEqual(t, gen["in_use_bytes"].(float64)-rel["in_use_bytes"].(float64), ls[1]["kv_cache_bytes"])
	require.Equal(t, gen["reserved_bytes"], rel["reserved_bytes"])
	require.GreaterOrEqual(t, gen["peak_in_use_bytes"], gen["in_use_bytes"])
	r = spiral(t, env, "bench", "train", "--resident", "--shared-arena", "--generate-rows", "3", "--model", m, "--rows", "2", "--tokens", "32", "--prompt-tokens", "8", "--new-tokens", "4", "--steps", "2")
	require.Equal(t, 0, r.code, r.stderr)
	ls = jsonLines[map[string]any](t, r.stdout)
	require.Len(t, ls, 3)
	for _, l := range ls[1:] {
		require.Positive(t, l["generate_seconds"])
		require.Greater(t, arena(l)["peak_in_use_bytes"], arena(l)["in_use_bytes"])
	}
	require.Equal(t, arena(ls[1])["in_use_bytes"], arena(ls[2])["in_use_bytes"], "nothing held from one step to the next")
	r = spiral(t, env, "bench", "generate", "--generate-rows", "2", "--model", m)
	require.Equal(t, 2, r.code)
	require.Contains(t, r.stderr, "--generate-rows is bench train's")
	r = spiral(t, env, "bench", "train", "--device", "cuda", "--shared-arena", "--cuda-option", "arena_extend_strategy=2", "--model", m)
	require.Equal(t, 2, r.code)
	require.Contains(t, r.stderr, "--shared-arena: --cuda-option arena_extend_strategy=2: want kNextPowerOfTwo or kSameAsRequested")
	r = spiral(t, env, "bench", "train", "--shared-arena=maybe", "--model", m)
	require.Equal(t, 2, r.code)
	require.Contains(t, r.stderr, `--shared-arena "maybe": want auto, true or false`)

	r = spiral(t, nil, "plan", "--model", m, "--rows", "1", "--tokens", "64", "--device-memory", "1GiB", "--json")
	require.Equal(t, 0, r.code, r.stderr)
	var plan struct {
		Params     int64       `json:"params"`
		TrainTotal int64       `json:"train_total_bytes"`
		MaxTokens  map[int]int `json:"max_tokens"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &plan))
	// Per layer: attention 8192+4096+4096+8192, q/k norms 2x32, MLP
	// 3x8192, 2 layer norms of 64: 49,344; two of them, the final norm
	// (64) and the tied embedding, 49 characters x 64.
	require.Equal(t, int64(2*49344+64+49*64), plan.Params, "the tiny model's parameters (2 layers, hidden 64, the task's 49-character vocabulary)")
	require.Positive(t, plan.TrainTotal)
	require.Positive(t, plan.MaxTokens[1])
	// Rows past the model's context (config.json's 4,096 positions) are
	// said to be; memory alone said 50,000 tokens a row would fit. The
	// named configs' contexts are not known (releases differ).
	r = spiral(t, nil, "plan", "--model", m, "--tokens", "9216", "--device-memory", "24GB")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "training step: 1 x 9216 tokens (full fine-tune, AdamW), past the model's 4096 positions (config.json max_position_embeddings)")
	require.Contains(t, r.stdout, "(rows past the model's 4096 positions, config.json max_position_embeddings, are no use)")
	r = spiral(t, nil, "plan", "--model", "qwen3-4b", "--device-memory", "141GB")
	require.Equal(t, 0, r.code, r.stderr)
	require.NotContains(t, r.stdout, "positions, config.json")

	r = spiral(t, nil, "plan", "--model", "qwen3-4b", "--lora-rank", "32", "--device-memory", "80GB")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "4.02B parameters")
	require.Contains(t, r.stdout, "LoRA rank 32")
	require.Contains(t, r.stdout, "AdamW moments")
	// The table's values sit in one column after its longest row name
	// (68 characters), not padded past a longer note.
	for _, line := range strings.Split(r.stdout, "\n") {
		if strings.HasSuffix(line, "GiB") {
			require.LessOrEqual(t, len(line), 84, "row padded past its names:\n%s", r.stdout)
		}
	}
	// Fewer targets, fewer adapter bytes: q and v only.
	moments := func(args ...string) float64 {
		r := spiral(t, nil, append([]string{"plan", "--model", "qwen3-4b", "--lora-rank", "32", "--json"}, args...)...)
		require.Equal(t, 0, r.code, r.stderr)
		var p struct {
			Train []struct {
				Name  string  `json:"name"`
				Bytes float64 `json:"bytes"`
			} `json:"train"`
		}
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &p))
		for _, it := range p.Train {
			if it.Name == "AdamW moments" {
				return it.Bytes
			}
		}
		t.Fatal("no AdamW moments item")
		return 0
	}
	// Qwen3-4B: q [2560, 4096], v [2560, 1024]; all seven projections.
	require.Equal(t, float64(8*32*36*(2560+4096+2560+1024)), moments("--lora-targets", "q,v"))
	require.Equal(t, float64(8*32*36*(2560+4096+2*(2560+1024)+4096+2560+2*(2560+9728)+9728+2560)), moments())
	r = spiral(t, nil, "plan", "--model", "qwen3-4b", "--lora-rank", "8", "--lora-targets", "q,zz")
	require.Equal(t, 2, r.code)
	require.Contains(t, r.stderr, `--lora-targets: "zz": want q, k, v, o, gate, up or down`)

	r = spiral(t, nil, "plan", "--model", "qwen3-4b", "--device-memory", "80XB")
	require.Equal(t, 2, r.code)
	require.Contains(t, r.stderr, `--device-memory: "80XB"`)
	r = spiral(t, nil, "plan", "--model", filepath.Join(dir, "nowhere"))
	require.Equal(t, 2, r.code)
	require.Contains(t, r.stderr, "nowhere")
}

// TestBenchClipsAsTrain: bench train's update clips the gradient's
// norm as train's does (--max-grad-norm, train's default 1; it took the
// AdamW step unclipped, leaving out the pass train runs). Clipped to
// 1e-30, the gradients are too small for AdamW's epsilon to let the
// weights move, so the second step's NLL is the first's; unclipped
// (0), they move; on the host path and on the device layer alike. At
// --lr 1e-6: at the embedded model's default 1e-4, AdamW's decoupled
// weight decay alone moves the weights, whatever the gradient.
func TestBenchClipsAsTrain(t *testing.T) {
	requireRuntime(t)
	env := []string{"SPIRAL_CACHE_DIR=" + t.TempDir()}
	for _, resident := range []string{"--resident=false", "--resident"} {
		nll := func(clip string) (first, second float64) {
			t.Helper()
			r := spiral(t, env, "bench", "train", resident, "--lr", "1e-6", "--max-grad-norm", clip, "--rows", "2", "--tokens", "32", "--steps", "2", "--threads", "1")
			require.Equal(t, 0, r.code, r.stderr)
			ls := jsonLines[map[string]any](t, r.stdout)
			require.Len(t, ls, 3)
			return ls[1]["nll"].(float64), ls[2]["nll"].(float64)
		}
		first, second := nll("1e-30")
		require.Equal(t, first, second, resident)
		first, second = nll("0")
		require.NotEqual(t, first, second, resident)
	}
	help := spiral(t, nil, "bench", "--help")
	require.Regexp(t, `--max-grad-norm float +train: global gradient-norm clip \(0 or less = off\) \(default 1\)\n`, help.stdout)
	r := spiral(t, env, "bench", "generate", "--max-grad-norm", "2")
	require.Equal(t, 2, r.code)
	require.Contains(t, r.stderr, "--max-grad-norm is bench train's; bench generate would ignore it")
	r = spiral(t, env, "bench", "train", "--max-grad-norm", "NaN")
	require.Equal(t, 2, r.code)
	require.Contains(t, r.stderr, "--max-grad-norm NaN: want a finite norm (0 or less = no clipping)")
}

// TestBenchSelection: bench train trains the parameters train's --train
// and --freeze select (it had neither flag, so a run that freezes the
// embedding could not be measured): with the tiny model's tied
// embedding frozen, the first step on the device layer copies the
// weights and the two AdamW moments of the other parameters only. Its
// artifacts are cached apart from the whole model's, so that neither
// rebuilds the other's.
func TestBenchSelection(t *testing.T) {
	requireRuntime(t)
	dir := t.TempDir()
	m := filepath.Join(dir, "m")
	r := spiral(t, nil, "init-model", "--out", m)
	require.Equal(t, 0, r.code, r.stderr)
	cache := t.TempDir()
	env := []string{"SPIRAL_CACHE_DIR=" + cache}
	for _, freeze := range []bool{false, true} {
		args := []string{"bench", "train", "--resident", "--model", m, "--rows", "2", "--tokens", "32", "--steps", "1"}
		trained := 1.0
		if freeze {
			args = append(args, "--freeze", `^model\.embed_tokens\.`)
			trained = 1 - 49*64.0/float64(2*49344+64+49*64) // all but the 49 x 64 embedding
		}
		r = spiral(t, env, args...)
		require.Equal(t, 0, r.code, r.stderr)
		ls := jsonLines[map[string]any](t, r.stdout)
		require.Len(t, ls, 2)
		weights, calls := ls[1]["weights_bytes"].(float64), ls[1]["call_copy_bytes"].(float64)
		require.InDelta(t, weights+2*trained*weights+calls, ls[1]["device_copy_bytes"], 0.5, "freeze %v", freeze)
	}
	arts, err := os.ReadDir(filepath.Join(cache, "artifacts"))
	require.NoError(t, err)
	require.Len(t, arts, 2, "the whole model's artifacts and the selection's")

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"generate", "--freeze", "embed"}, "--freeze is bench train's; bench generate would ignore it"},
		{[]string{"generate", "--train", "embed"}, "--train is bench train's; bench generate would ignore it"},
		{[]string{"train", "--train", "("}, `--train "(": error parsing regexp`},
		{[]string{"train", "--freeze", "embed", "--lora-rank", "4"}, "--lora-rank trains adapters only: --train and --freeze do not combine with it"},
	} {
		r = spiral(t, env, append(append([]string{"bench"}, c.args...), "--model", m)...)
		require.Equal(t, 2, r.code, "%v: %s", c.args, r.stderr)
		require.Contains(t, r.stderr, c.want, c.args)
	}
}

// TestBenchVocabLimit: on a model whose logits are wider than its
// tokenizer's ids (init-model --vocab), bench runs what train runs: the
// head's softmax over the tokenizer's ids (the vocabulary-limited graphs,
// model.ExecutorOptions.VocabLimit; it ran the whole width's), token ids
// below it, and the sampler drawing below it; every line reports the
// limit and the logits' width. Without a tokenizer it runs the whole
// width and says so; a tokenizer wider than the logits is refused as
// train refuses it.
func TestBenchVocabLimit(t *testing.T) {
	requireRuntime(t)
	dir := t.TempDir()
	m := filepath.Join(dir, "m")
	r := spiral(t, nil, "init-model", "--out", m, "--tokenizer", "byte", "--vocab", "4000")
	require.Equal(t, 0, r.code, r.stderr)
	env := []string{"SPIRAL_CACHE_DIR=" + t.TempDir()}
	limits := func(ls []map[string]any, limit float64) {
		t.Helper()
		for _, l := range ls {
			require.Equal(t, limit, l["vocab_limit"], "line %v", l)
			require.Equal(t, 4000.0, l["vocab_size"], "line %v", l)
		}
	}

	r = spiral(t, env, "bench", "train", "--model", m, "--rows", "2", "--tokens", "32", "--steps", "1")
	require.Equal(t, 0, r.code, r.stderr)
	ls := jsonLines[map[string]any](t, r.stdout)
	require.Len(t, ls, 2)
	limits(ls, 259)
	// init-model's small random weights give nearly uniform logits: the
	// NLL is about the log of the softmax's width, the byte tokenizer's
	// 259 ids (5.56), not the 4,000 logits' (8.29).
	require.InDelta(t, math.Log(259), ls[1]["nll"], 0.1)
	r = spiral(t, env, "bench", "generate", "--model", m, "--rows", "2", "--prompt-tokens", "8", "--new-tokens", "4", "--steps", "1")
	require.Equal(t, 0, r.code, r.stderr)
	limits(jsonLines[map[string]any](t, r.stdout), 259)

	// A tokenizer that train would refuse (more ids than the model's 49
	// logits), and one that is not there.
	r = spiral(t, env, "bench", "train", "--tokenizer", filepath.Join(m, "tokenizer.json"), "--rows", "1", "--tokens", "16", "--steps", "1")
	require.Equal(t, 1, r.code, r.stderr)
	require.Contains(t, r.stderr, "has 259 ids but model ")
	require.Contains(t, r.stderr, "has 49 embedding rows (logits); they do not belong together")
	r = spiral(t, env, "bench", "generate", "--model", m, "--tokenizer", filepath.Join(dir, "none.json"))
	require.Equal(t, 2, r.code, r.stderr)
	require.Contains(t, r.stderr, "--tokenizer "+filepath.Join(dir, "none.json")+": no such file or directory")

	require.NoError(t, os.Remove(filepath.Join(m, "tokenizer.json")))
	r = spiral(t, env, "bench", "train", "--model", m, "--rows", "2", "--tokens", "32", "--steps", "1")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stderr, "spiral: note: no tokenizer ("+filepath.Join(m, "tokenizer.json")+" does not exist; give --tokenizer or --vocab-limit): the softmax over all 4000 logits, where train runs it over the tokenizer's ids")
	ls = jsonLines[map[string]any](t, r.stdout)
	limits(ls, 4000)
	require.InDelta(t, math.Log(4000), ls[1]["nll"], 0.1)

	// --vocab-limit: train's policy with a tokenizer of that many ids
	// (Qwen3's 151,669 on a random-weight model of its shape), where the
	// model has no tokenizer of those ids.
	r = spiral(t, env, "bench", "train", "--model", m, "--vocab-limit", "100", "--rows", "2", "--tokens", "32", "--steps", "1")
	require.Equal(t, 0, r.code, r.stderr)
	require.NotContains(t, r.stderr, "note")
	ls = jsonLines[map[string]any](t, r.stdout)
	limits(ls, 100)
	require.InDelta(t, math.Log(100), ls[1]["nll"], 0.1)
	r = spiral(t, env, "bench", "generate", "--model", m, "--vocab-limit", "4000", "--rows", "2", "--prompt-tokens", "8", "--new-tokens", "4", "--steps", "1")
	require.Equal(t, 0, r.code, r.stderr)
	limits(jsonLines[map[string]any](t, r.stdout), 4000)
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"train", "--vocab-limit", "4001"}, 2, "--vocab-limit 4001: the model (" + filepath.Join(m, "model.onnx") + ") has 4000 logits"},
		{[]string{"train", "--vocab-limit", "-1"}, 2, "--vocab-limit -1: want >= 0 (0: the tokenizer's ids)"},
		{[]string{"train", "--vocab-limit", "100", "--tokenizer", filepath.Join(dir, "none.json")}, 2, "--vocab-limit 100 and --tokenizer: give one (the policy's vocabulary is the tokenizer's ids)"},
	} {
		r = spiral(t, env, append(append([]string{"bench"}, c.args...), "--model", m, "--rows", "1", "--tokens", "16", "--steps", "1")...)
		require.Equal(t, c.code, r.code, "%v: %s", c.args, r.stderr)
		require.Contains(t, r.stderr, c.want, c.args)
	}
}

// TestCompare runs spiral compare on reports with known answers: the
// other pass@k curve is the reference's shifted by 4x in k, RSA gains are
// differences, and the overlay plots are written.
func TestCompare(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, v any) string {
		p := filepath.Join(dir, name)
		require.NoError(t, report.WriteJSON(p, v))
		return p
	}
	pass := func(label string, shift float64) report.PassAtK {
		r := report.PassAtK{Meta: report.Meta{Mode: report.ModePassAtK, Label: label, Problems: 2},
			Config: rollout.PassAtKConfig{Samples: 256}, Tokens: rollout.Tokens{Generated: 2 * 256 * 50}}
		for k := 1; k <= 256; k *= 2 {
			r.Points = append(r.Points, rollout.KPoint{K: k, PassAtK: max(0, 0.1+0.1*math.Log2(float64(k)/shift))})
		}
		return r
	}
	rsa := func(label string, accs ...float64) report.RSA {
		r := report.RSA{Meta: report.Meta{Mode: report.ModeRSA, Label: label, Problems: 2}}
		for i, a := range accs {
			r.Steps = append(r.Steps, rollout.RSAStep{Step: i, Accuracy: a, Cumulative: rollout.Tokens{Generated: 2 * 8 * 50 * (i + 1)}})
		}
		return r
	}
	out := filepath.Join(dir, "plots")
	r := spiral(t, nil, "compare", "--out", out,
		write("a.json", pass("spiral", 1)), write("b.json", pass("grpo", 4)),
		write("ra.json", rsa("spiral", 0.5, 0.6)), write("rb.json", rsa("grpo", 0.5, 0.45)))
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "scaling efficiency of spiral over grpo: up to 4.00x")
	require.Contains(t, r.stdout, "spiral (n = 1): 0: 0.500 (+0.000), 1: 0.600 (+0.100)")
	require.Contains(t, r.stdout, "grpo (n = 1): 0: 0.500 (+0.000; +0.000), 1: 0.450 (-0.050; -0.150)")
	for _, f := range []string{"passk.png", "rsa.png", "tokens.png", "summary.md"} {
		require.FileExists(t, filepath.Join(out, f))
	}
	// A second comparison into the same --out, of pass@k alone: its plot
	// and summary replace the first's, the first's RSA plot and a file of
	// the user's stay, and the stage the files were written in is gone.
	require.NoError(t, os.WriteFile(filepath.Join(out, "notes.txt"), []byte("mine"), 0o666))
	summary, err := os.ReadFile(filepath.Join(out, "summary.md"))
	require.NoError(t, err)
	again := spiral(t, nil, "compare", "--out", out, filepath.Join(dir, "a.json"), filepath.Join(dir, "b.json"))
	require.Equal(t, 0, again.code, again.stderr)
	require.Contains(t, again.stdout, "wrote "+out+" (plots and summary.md)")
	summary2, err := os.ReadFile(filepath.Join(out, "summary.md"))
	require.NoError(t, err)
	require.NotEqual(t, string(summary), string(summary2))
	for _, f := range []string{"passk.png", "rsa.png", "notes.txt"} {
		require.FileExists(t, filepath.Join(out, f))
	}
	requireNoStage(t, out)
	// --figures pdf: the same plots as vector graphics, for a paper.
	pdfs := filepath.Join(dir, "pdf")
	vector := spiral(t, nil, "compare", "--out", pdfs, "--figures", "pdf", filepath.Join(dir, "a.json"), filepath.Join(dir, "b.json"))
	require.Equal(t, 0, vector.code, vector.stderr)
	pdf, err := os.ReadFile(filepath.Join(pdfs, "passk.pdf"))
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(string(pdf), "%PDF-"))
	require.NoFileExists(t, filepath.Join(pdfs, "passk.png"))
	other := spiral(t, nil, "compare", "--out", pdfs, "--figures", "jpg", filepath.Join(dir, "a.json"), filepath.Join(dir, "b.json"))
	require.Equal(t, 2, other.code)
	require.Contains(t, other.stderr, `--figures "jpg": want png, svg or pdf`)

	// Reports with per-problem counts get a bootstrap interval; with
	// every problem alike it is the point estimate itself. Without
	// counts (the reports above), compare says why there is none.
	require.Contains(t, r.stdout, "no interval: report: efficiency intervals: spiral: no per-problem counts")
	counted := func(label string, c int) report.PassAtK {
		r := report.PassAtK{Meta: report.Meta{Mode: report.ModePassAtK, Label: label, Problems: 2}, Config: rollout.PassAtKConfig{Samples: 64}}
		r.PerProblem = []rollout.ProblemCorrect{{ID: "x", Correct: c}, {ID: "y", Correct: c}}
		for k := 1; k <= 16; k *= 2 {
			p, err := rollout.PassAtK(64, c, k)
			require.NoError(t, err)
			r.Points = append(r.Points, rollout.KPoint{K: k, PassAtK: p})
		}
		return r
	}
	eff, err := report.PassAtKEfficiency(counted("spiral", 8), counted("grpo", 3))
	require.NoError(t, err)
	require.Greater(t, eff.Max, 1.0)
	r = spiral(t, nil, "compare", write("ca.json", counted("spiral", 8)), write("cb.json", counted("grpo", 3)))
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, fmt.Sprintf("scaling efficiency of spiral over grpo: up to %.2fx (k = %d; 95%% interval at k = %[2]d: %.2f to %.2fx)", eff.Max, eff.MaxK, eff.Max, eff.Max))

	// --max-k compares at the reference's k <= 2 only, reading the other
	// curve to its end (k = 16 here). The other model solves one problem
	// in four samples and never the other, so its ratio grows with k (1.0
	// at k = 1, about 1.5 at k = 4): the cut moves the maximum.
	lopsided := counted("grpo", 0)
	lopsided.PerProblem[0].Correct = 16
	for i, p := range lopsided.Points {
		v, err := rollout.PassAtK(64, 16, p.K)
		require.NoError(t, err)
		lopsided.Points[i].PassAtK = v / 2
	}
	full, err := report.PassAtKEfficiency(counted("spiral", 8), lopsided)
	require.NoError(t, err)
	cut, err := counted("spiral", 8).UpToK(2)
	require.NoError(t, err)
	eff2, err := report.PassAtKEfficiency(cut, lopsided)
	require.NoError(t, err)
	require.Equal(t, []int{4, 2}, []int{full.MaxK, eff2.MaxK})
	cutOut := filepath.Join(dir, "cut")
	r = spiral(t, nil, "compare", "--max-k", "2", "--out", cutOut, filepath.Join(dir, "ca.json"), write("lop.json", lopsided))
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "samples grpo needs to reach spiral's pass@k at k <= 2")
	require.Contains(t, r.stdout, fmt.Sprintf("scaling efficiency of spiral over grpo: up to %.2fx (k = 2; 95%% interval at k = 2: ", eff2.Max))
	require.NotContains(t, r.stdout, "no interval")
	cutMD, err := os.ReadFile(filepath.Join(cutOut, "summary.md"))
	require.NoError(t, err)
	require.Contains(t, string(cutMD), "| model | seeds | pass@1 | pass@2 | majority@2 |", "the summary's largest k is the comparison's")
	r = spiral(t, nil, "compare", "--max-k", "-1", filepath.Join(dir, "ca.json"), filepath.Join(dir, "cb.json"))
	require.Equal(t, 2, r.code)
	require.Contains(t, r.stderr, "--max-k -1")

	// Two seeds of one label: means, and the range in the summary.
	r = spiral(t, nil, "compare", "--out", out,
		write("ra.json", rsa("spiral", 0.5, 0.6)), write("rb1.json", rsa("grpo", 0.4, 0.45)), write("rb2.json", rsa("grpo", 0.6, 0.55)))
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "grpo (n = 2): 0: 0.500 (+0.000; +0.000), 1: 0.500 (+0.000; -0.100)")
	md, err := os.ReadFile(filepath.Join(out, "summary.md"))
	require.NoError(t, err)
	require.Contains(t, string(md), "| grpo | 2 | 0.500 (0.400-0.600) | 0.500 (0.450-0.550) |")

	// Training runs: entropy, traces and the search credit, per label
	// over seeds; agg-only trains no search trace, so it has no credit.
	run := func(name string, lines ...string) string {
		d := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(d, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(d, "metrics.jsonl"), []byte(strings.Join(lines, "\n")+"\n"), 0o644))
		return d
	}
	r = spiral(t, nil, "compare", "--out", out,
		"--run", "spiral="+run("s1", `{"step":1,"entropy":0.1,"search_credit":0.1}`, `{"step":2,"entropy":0.1,"search_credit":0.3}`),
		"--run", "spiral="+run("s2", `{"step":1,"entropy":0.1,"search_credit":0.4}`, `{"step":2,"entropy":0.1}`),
		"--run", "agg-only="+run("a1", `{"step":1,"entropy":0.1}`, `{"step":2,"entropy":0.1}`),
		filepath.Join(dir, "ra.json"), filepath.Join(dir, "rb1.json"))
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "run spiral (n = 2)")
	require.Contains(t, r.stdout, "search credit 0.300 (0.200-0.400)", "seed 1's steps average 0.2, seed 2 has one step of 0.4")
	require.NotContains(t, r.stdout[strings.Index(r.stdout, "run agg-only"):], "search credit")
	md, err = os.ReadFile(filepath.Join(out, "summary.md"))
	require.NoError(t, err)
	require.Contains(t, string(md), "search credit (own reward vs advantage)")
	require.Contains(t, string(md), "| 0.300 (0.200-0.400) |")

	// Reports evaluated on other problems than their mode's first report
	// (another dataset, fewer problems, other ids): compare refuses,
	// naming both files and the difference, before any table; with
	// --allow-different-problems it warns on stderr and compares.
	onTest := func(label string, c int) report.PassAtK {
		r := counted(label, c)
		r.Meta.Dataset = "embedded:synth-test"
		return r
	}
	testRef := write("test-ref.json", onTest("spiral", 8))
	onTrain := onTest("grpo", 3)
	onTrain.Meta.Dataset = "train.jsonl"
	onTrain.PerProblem[0].ID, onTrain.PerProblem[1].ID = "t0", "t1"
	otherIDs := onTest("grpo", 3)
	otherIDs.PerProblem[1].ID = "z"
	fewer := rsa("grpo", 0.5, 0.45)
	fewer.Meta.Problems = 1
	// RSA reports without details and sequential reports list their
	// problems' ids in meta.problem_ids only: a data file rewritten at
	// the same path between two evaluations.
	rsaOn := func(label string, ids ...string) report.RSA {
		r := rsa(label, 0.5, 0.6)
		r.Meta.Dataset, r.Meta.ProblemIDs = "p.jsonl", ids
		return r
	}
	seqOn := func(label string, ids ...string) report.Budget {
		return report.Budget{Meta: report.Meta{Mode: report.ModeSequential, Label: label, Dataset: "p.jsonl", Problems: 2, ProblemIDs: ids},
			Config: rollout.BudgetConfig{Samples: 1, Budgets: []int{4, 8}, MaxTokens: 8},
			Points: []rollout.BudgetPoint{{Budget: 4, Accuracy: 0.25, MeanTokens: 4, Truncated: 1}, {Budget: 8, Accuracy: 0.5, MeanTokens: 6}}}
	}
	rsaA, seqA := write("rsa-a.json", rsaOn("spiral", "a0", "a1")), write("seq-a.json", seqOn("spiral", "a0", "a1"))
	for _, tc := range []struct {
		name  string
		files []string
		want  string
	}{
		{"other dataset", []string{testRef, write("on-train.json", onTrain)},
			filepath.Join(dir, "on-train.json") + " against " + testRef + ` (passk reports): dataset "train.jsonl" against "embedded:synth-test"; problem 0 is "t0" against "x"`},
		{"other problem ids", []string{testRef, write("other-ids.json", otherIDs)},
			filepath.Join(dir, "other-ids.json") + " against " + testRef + ` (passk reports): problem 1 is "z" against "y"`},
		{"fewer problems", []string{filepath.Join(dir, "ra.json"), write("fewer.json", fewer)},
			filepath.Join(dir, "fewer.json") + " against " + filepath.Join(dir, "ra.json") + " (rsa reports): problem count 1 against 2"},
		{"rsa, other problem ids", []string{rsaA, write("rsa-b.json", rsaOn("grpo", "b0", "b1"))},
			filepath.Join(dir, "rsa-b.json") + " against " + rsaA + ` (rsa reports): problem 0 is "b0" against "a0"`},
		{"sequential, other problem ids", []string{seqA, write("seq-b.json", seqOn("grpo", "a0", "b1"))},
			filepath.Join(dir, "seq-b.json") + " against " + seqA + ` (sequential reports): problem 1 is "b1" against "a1"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := spiral(t, nil, append([]string{"compare"}, tc.files...)...)
			require.Equal(t, 1, r.code, r.stdout)
			require.Contains(t, r.stderr, "reports evaluated on different problems")
			require.Contains(t, r.stderr, tc.want)
			require.Empty(t, r.stdout, "no table")
			r = spiral(t, nil, append([]string{"compare", "--allow-different-problems"}, tc.files...)...)
			require.Equal(t, 0, r.code, r.stderr)
			require.Contains(t, r.stderr, "warning: reports evaluated on different problems")
			require.Contains(t, r.stderr, tc.want)
			require.NotEmpty(t, r.stdout)
		})
	}
	for _, files := range [][]string{
		{testRef, write("test-other.json", onTest("grpo", 3))},
		{rsaA, write("rsa-a2.json", rsaOn("grpo", "a0", "a1"))},
		{seqA, write("seq-a2.json", seqOn("grpo", "a0", "a1"))},
		{seqA, write("seq-old.json", seqOn("grpo"))}, // written before problem_ids: dataset and count only
	} {
		r = spiral(t, nil, append([]string{"compare"}, files...)...)
		require.Equal(t, 0, r.code, r.stderr)
		require.Empty(t, r.stderr, "the same problems: no warning")
	}

	// plot creates --out's directory.
	deep := filepath.Join(dir, "new", "deeper", "p.png")
	r = spiral(t, nil, "plot", "--out", deep, filepath.Join(dir, "a.json"), filepath.Join(dir, "b.json"))
	require.Equal(t, 0, r.code, r.stderr)
	require.FileExists(t, deep)

	r = spiral(t, nil, "compare", filepath.Join(dir, "a.json"))
	require.Equal(t, 2, r.code)
	r = spiral(t, nil, "compare", filepath.Join(dir, "a.json"), filepath.Join(dir, "missing.json"))
	require.Equal(t, 2, r.code)
	require.Contains(t, r.stderr, "spiral compare: REPORT.json "+filepath.Join(dir, "missing.json")+" does not exist: want an eval report")
}

// TestCompareRuns: compare --run summarises runs alone; a step that
// trained nothing (no_update) is left out of the entropy, not averaged as
// 0; the first and last windows never overlap; a metrics.jsonl without
// steps is refused before any output, naming it.
func TestCompareRuns(t *testing.T) {
	dir := t.TempDir()
	run := func(name string, lines ...string) string {
		d := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(d, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(d, "metrics.jsonl"), []byte(strings.Join(lines, "\n")), 0o644))
		return d
	}
	trained := func(step int, e float64) string {
		return fmt.Sprintf(`{"step":%d,"entropy":%g,"examples":4}`, step, e)
	}
	untrained := func(step int) string {
		return fmt.Sprintf(`{"step":%d,"entropy":0,"examples":0,"no_update":true}`, step)
	}
	var long []string
	for s := 1; s <= 30; s++ {
		long = append(long, trained(s, float64(s)/100))
	}
	empty := run("empty")
	// heldOut is a run of two steps whose held-out evaluations used the
	// given problem counts.
	heldOut := func(name string, problems ...int) string {
		d := run(name, trained(1, 0.1), trained(2, 0.2))
		var lines []string
		for i, n := range problems {
			lines = append(lines, fmt.Sprintf(`{"step":%d,"problems":%d,"samples":4,"points":[{"k":1,"pass_at_k":0.5}]}`, 2*i, n))
		}
		require.NoError(t, os.WriteFile(filepath.Join(d, "eval.jsonl"), []byte(strings.Join(lines, "\n")), 0o644))
		return d
	}
	h64, h64b, h8, hMixed := heldOut("h64", 64, 64), heldOut("h64b", 64, 64), heldOut("h8", 8, 8), heldOut("hmixed", 64, 8)
	// heldOutOn is a run of two steps evaluated on 64 problems whose
	// fingerprint (eval.jsonl's problems_digest) is digest.
	heldOutOn := func(name, digest string) string {
		d := run(name, trained(1, 0.1), trained(2, 0.2))
		var lines []string
		for i := range 2 {
			lines = append(lines, fmt.Sprintf(`{"step":%d,"problems":64,"samples":4,"points":[{"k":1,"pass_at_k":0.5}],"problems_digest":%q}`, 2*i, digest))
		}
		require.NoError(t, os.WriteFile(filepath.Join(d, "eval.jsonl"), []byte(strings.Join(lines, "\n")), 0o644))
		return d
	}
	aime, aimeB, gsm8k := heldOutOn("aime", "aaaa"), heldOutOn("aimeb", "aaaa"), heldOutOn("gsm8k", "bbbb")
	for _, tc := range []struct {
		name      string
		args      []string
		code      int
		want, not []string
	}{
		{"held-out on one set", []string{"--run", "a=" + h64, "--run", "b=" + h64b}, 0, []string{"held-out pass@1 0.500 (step 0) -> 0.500 (step 2)"}, nil},
		{"held-out on other problem counts", []string{"--run", "a=" + h64, "--run", "b=" + h8}, 1,
			[]string{"--run b=" + h8 + " against --run a=" + h64 + " (held-out evaluations during training): 8 problems x 4 samples against 64 problems x 4 samples"}, nil},
		{"held-out sets changed within a run", []string{"--run", "a=" + h64, "--run", "a=" + hMixed}, 1,
			[]string{"64 problems x 4 samples, then 8 problems x 4 samples against 64 problems x 4 samples"}, nil},
		{"held-out on the same problems", []string{"--run", "a=" + aime, "--run", "b=" + aimeB}, 0, []string{"held-out pass@1 0.500 (step 0) -> 0.500 (step 2)"}, nil},
		{"held-out on other problems of the same count", []string{"--run", "a=" + aime, "--run", "b=" + gsm8k}, 1,
			[]string{"--run b=" + gsm8k + " against --run a=" + aime + " (held-out evaluations during training): problems bbbb against aaaa (eval.jsonl's problems_digest)"}, nil},
		{"held-out without fingerprints (older runs) against one with", []string{"--run", "a=" + aime, "--run", "b=" + h64}, 0, nil, nil},
		{"held-out on other problem counts, allowed", []string{"--allow-different-problems", "--run", "a=" + h64, "--run", "b=" + h8}, 0,
			[]string{"warning: reports evaluated on different problems, compared anyway", "held-out evaluations during training"}, nil},
		{"empty metrics", []string{"--run", "x=" + empty}, 1,
			[]string{filepath.Join(empty, "metrics.jsonl") + " logs no training step"}, nil},
		{"empty metrics with --out", []string{"--out", filepath.Join(dir, "out-empty"), "--run", "x=" + empty}, 1,
			[]string{filepath.Join(empty, "metrics.jsonl") + " logs no training step"}, nil},
		{"runs alone", []string{"--run", "a=" + run("a", long...), "--run", "b=" + run("b", long...)}, 0,
			[]string{"run a (n = 1): token entropy 0.0550 -> 0.2550 (+364%; means of the first and last 10 of 30 steps)", "run b (n = 1)"}, nil},
		{"two steps", []string{"--run", "s=" + run("short", trained(1, 0.1), trained(2, 0.2))}, 0,
			[]string{"token entropy 0.1000 -> 0.2000 (+100%; means of the first and last 1 of 2 steps)"}, nil},
		{"one step", []string{"--run", "s=" + run("one", trained(1, 0.1))}, 0,
			[]string{"token entropy 0.1000 (1 step: too short for first -> last)"}, nil},
		{"untrained steps left out", []string{"--run", "m=" + run("mixed", trained(1, 0.1), untrained(2), trained(3, 0.2), untrained(4), trained(5, 0.3), untrained(6))}, 0,
			[]string{"token entropy 0.1000 -> 0.3000 (+200%; means of the first and last 1 of 3 steps) (3 of 6 steps left out: they trained nothing"}, nil},
		{"never updated", []string{"--out", filepath.Join(dir, "out-none"), "--run", "n=" + run("none", untrained(1), untrained(2)), "--run", "s=" + filepath.Join(dir, "short")}, 0,
			[]string{"run n (n = 1): no step updated the weights (2 of 2 trained nothing: no informative problem or no trained token): no token entropy", "wrote "}, nil},
		{"seeds of other lengths", []string{"--run", "s=" + filepath.Join(dir, "short"), "--run", "s=" + filepath.Join(dir, "one")}, 1,
			[]string{"seeds " + filepath.Join(dir, "short") + " and " + filepath.Join(dir, "one") + " log different training steps"}, nil},
		// One run given twice was two seeds of its label (n = 2).
		{"one run twice", []string{"--run", "s=" + filepath.Join(dir, "short"), "--run", "s=" + filepath.Join(dir, "short") + "/"}, 2,
			[]string{"--run s=" + filepath.Join(dir, "short") + " and --run s=" + filepath.Join(dir, "short") + "/ are one run directory, given twice"}, nil},
		{"one run under two labels", []string{"--run", "a=" + filepath.Join(dir, "short"), "--run", "b=" + filepath.Join(dir, "short")}, 2,
			[]string{"are one run directory, given twice"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := spiral(t, nil, append([]string{"compare"}, tc.args...)...)
			require.Equal(t, tc.code, r.code, r.stderr)
			out := r.stdout + r.stderr
			for _, s := range tc.want {
				require.Contains(t, out, s)
			}
			if tc.code != 0 {
				require.Empty(t, r.stdout, "refused before any output")
			}
		})
	}
	md, err := os.ReadFile(filepath.Join(dir, "out-none", "summary.md"))
	require.NoError(t, err)
	require.Contains(t, string(md), "| n | 1 | no update |")
	require.NoDirExists(t, filepath.Join(dir, "out-empty"))
}

// TestTrainNoInformativeProblem: on data whose answers no trace gives,
// every step says it updated nothing (step line and metrics.jsonl's
// no_update) and the run ends with a warning.
func TestTrainNoInformativeProblem(t *testing.T) {
	dir := t.TempDir()
	var rows []string
	for i := range 4 {
		rows = append(rows, fmt.Sprintf(`{"question":"%d+%d?","answer":"zzz"}`, i, i))
	}
	data := filepath.Join(dir, "imposs.jsonl")
	require.NoError(t, os.WriteFile(data, []byte(strings.Join(rows, "\n")+"\n"), 0o644))
	out := filepath.Join(dir, "run")
	r := spiral(t, nil, "train", "--threads", "1", "--problems", "1", "--n1", "4", "--k", "2", "--n", "2", "--n2", "2", "--quiet",
		"--data", data, "--steps", "2", "--eval-every", "0", "--final-rsa-steps", "0", "--out", out)
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, 2, strings.Count(r.stdout, "no update (no informative problem)"), r.stdout)
	require.NotContains(t, r.stdout, "entropy")
	require.Contains(t, r.stderr, "warning: no step of this run updated the weights ("+filepath.Join(out, "metrics.jsonl")+")")
	b, err := os.ReadFile(filepath.Join(out, "metrics.jsonl"))
	require.NoError(t, err)
	require.Equal(t, 2, strings.Count(string(b), `"no_update":true`))
	require.FileExists(t, filepath.Join(out, "training.png"))
}

// TestEvalCutTraces: every mode of eval says on stderr how many traces
// were cut at --max-new-tokens, and that by default they earned nothing
// (an accuracy of 0 from a limit too short was given without a word).
// TestEvalLimitPastProblems: --limit above the problems there are
// evaluates them all and says so. On the embedded task eval uses the
// first 128 problems of the test split by default, and the first N of
// its 1,134 with --limit N (it took the first 128 alone, with a note).
func TestEvalLimitPastProblems(t *testing.T) {
	requireRuntime(t)
	out := t.TempDir()
	r := spiral(t, nil, "eval", "--mode", "passk", "--samples", "1", "--limit", "200", "--max-new-tokens", "1", "--quiet", "--out", out)
	require.Equal(t, 0, r.code, r.stderr)
	require.NotContains(t, r.stderr, "--limit 200")
	var rep report.PassAtK
	require.NoError(t, report.ReadJSON(filepath.Join(out, "passk.json"), &rep))
	require.Equal(t, 200, rep.Meta.Problems)
	r = spiral(t, nil, "eval", "--mode", "passk", "--samples", "1", "--limit", "2000", "--max-new-tokens", "1", "--quiet", "--out", out)
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stderr, "spiral: note: --limit 2000: embedded:synth-test has 1134 problems; evaluating those\n")
}

func TestEvalCutTraces(t *testing.T) {
	requireRuntime(t)
	for _, tc := range []struct {
		name string
		args []string
		want []string
		not  []string
	}{
		{"passk", []string{"--mode", "passk", "--samples", "2"},
			[]string{"of the 4 traces", "cut at --max-new-tokens 1; a cut trace earns nothing unless it had stated an explicit answer"}, nil},
		{"rsa", []string{"--mode", "rsa", "--population", "2", "--subset", "2", "--rsa-steps", "1"},
			[]string{"of the 8 traces", "cut at --max-new-tokens 1;", "--reward-truncated"}, nil},
		{"sequential, cut traces graded", []string{"--mode", "sequential", "--samples", "2", "--reward-truncated", "--reward-fallback"},
			[]string{"of the 4 traces", "cut at --max-new-tokens 1\n"}, []string{"earns nothing"}},
		// --reward-truncated alone grades cut traces as the others, which
		// need an explicit answer too.
		{"sequential, cut traces graded, explicit answers only", []string{"--mode", "sequential", "--samples", "2", "--reward-truncated"},
			[]string{"of the 4 traces", "cut at --max-new-tokens 1; a trace earns nothing without an explicit answer", "with --reward-fallback"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := spiral(t, nil, append([]string{"eval", "--limit", "2", "--max-new-tokens", "1", "--quiet", "--out", t.TempDir()}, tc.args...)...)
			require.Equal(t, 0, r.code, r.stderr)
			require.Contains(t, r.stderr, "spiral: note: ")
			for _, s := range tc.want {
				require.Contains(t, r.stderr, s)
			}
			for _, s := range tc.not {
				require.NotContains(t, r.stderr, s)
			}
		})
	}
}

// TestEvalReportRecordsSampling: an eval report's meta.extra records
// the sampling settings that made its numbers, --top-k among them (the
// report recorded temperature and top_p but not top_k, so a report
// sampled with --top-k 3 read as one sampled from the full
// distribution).
func TestEvalReportRecordsSampling(t *testing.T) {
	requireRuntime(t)
	out := t.TempDir()
	r := spiral(t, nil, "eval", "--mode", "passk", "--limit", "1", "--samples", "1", "--max-new-tokens", "4",
		"--temperature", "0.5", "--top-p", "0.9", "--top-k", "3", "--quiet", "--out", out)
	require.Equal(t, 0, r.code, r.stderr)
	var rep report.PassAtK
	require.NoError(t, report.ReadJSON(filepath.Join(out, "passk.json"), &rep))
	for k, v := range map[string]string{"temperature": "0.5", "top_p": "0.9", "top_k": "3", "max_new_tokens": "4"} {
		require.Equal(t, v, rep.Meta.Extra[k], "meta.extra[%q] in %+v", k, rep.Meta.Extra)
	}
	require.NotContains(t, rep.Meta.Extra, "search_template", "the built-in template")

	builtIn := rep.Meta.Extra["templates"]
	require.Regexp(t, "^[0-9a-f]{32}$", builtIn, "the templates' digest, as train records it")

	// A template file of the user's is named with the digest of its text
	// as read (without the byte order mark and the trailing newline that
	// editors add), as train's settings fingerprint the templates, not
	// with that of its bytes: the two did not agree on a file like this
	// one.
	tmpl := filepath.Join(out, "search.txt")
	text := "\uFEFFSolve: {{.Problem}}\r\n"
	require.NoError(t, os.WriteFile(tmpl, []byte(text), 0o644))
	r = spiral(t, nil, "eval", "--mode", "passk", "--limit", "1", "--samples", "1", "--max-new-tokens", "4",
		"--search-template", tmpl, "--quiet", "--out", out)
	require.Equal(t, 0, r.code, r.stderr)
	require.NoError(t, report.ReadJSON(filepath.Join(out, "passk.json"), &rep))
	require.Equal(t, fmt.Sprintf("%s (sha256 %x)", tmpl, sha256.Sum256([]byte("Solve: {{.Problem}}"))), rep.Meta.Extra["search_template"])
	require.NotContains(t, rep.Meta.Extra, "aggregate_template")
	require.NotEqual(t, builtIn, rep.Meta.Extra["templates"])

	// The same templates give train's settings the same fingerprint
	// (sampling.templates, which its checkpoints record).
	run := filepath.Join(t.TempDir(), "run")
	r = spiral(t, nil, "train", "--steps", "1", "--problems", "1", "--eval-every", "0", "--final-rsa-steps", "0",
		"--search-template", tmpl, "--quiet", "--out", run)
	require.Equal(t, 0, r.code, r.stderr)
	settings, err := rl.CheckpointSettings(filepath.Join(run, rl.CheckpointsDir, "ckpt-000001"))
	require.NoError(t, err)
	require.Equal(t, rep.Meta.Extra["templates"], settings.Sampling["templates"])
}

// TestNoRoomRefusedBeforeGraphs: a --max-new-tokens that leaves no room
// in the model's context is a usage error found before the model's graphs
// are built, as bad flags are: train wrote them into a new run directory
// first (for a real model, minutes of work and gigabytes), and eval into
// its --out's artifacts/.
func TestNoRoomRefusedBeforeGraphs(t *testing.T) {
	requireRuntime(t)
	run := filepath.Join(t.TempDir(), "run")
	r := spiral(t, nil, "train", "--max-new-tokens", "5000", "--quiet", "--out", run)
	requireExit(t, r, 2, nil, "--max-new-tokens 5000 leaves no room")
	require.NoDirExists(t, run)

	out := t.TempDir()
	r = spiral(t, nil, "eval", "--max-new-tokens", "5000", "--limit", "1", "--quiet", "--out", out)
	requireExit(t, r, 2, nil, "--max-new-tokens 5000 leaves no room")
	require.NoDirExists(t, filepath.Join(out, "artifacts"))
}

// TestFittedAggregationPrompts: aggregation prompts longer than the
// model's context less --max-new-tokens (4,096 - 3,950 = 146 tokens
// here) have their candidates cut to fit, and training and RSA say so
// and count them, where they said nothing. The training's --seed 4 has
// aggregation prompts cut at both steps and no trace that runs on to
// the 3,950 tokens (the default seed's first step had 4: 55 s of a
// 60 s run, against 6 s).
func TestFittedAggregationPrompts(t *testing.T) {
	requireRuntime(t)
	dir := t.TempDir()
	out := filepath.Join(dir, "eval")
	r := spiral(t, nil, "eval", "--mode", "rsa", "--limit", "2", "--population", "4", "--subset", "2", "--rsa-steps", "1",
		"--max-new-tokens", "3950", "--out", out, "--quiet")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stderr, "spiral: note: 8 of the 8 aggregation prompts passed 146 tokens (the model's context less --max-new-tokens), so their candidates were cut to fit")
	var rep struct {
		Steps []struct {
			FittedPrompts int `json:"fitted_prompts"`
		} `json:"steps"`
	}
	b, err := os.ReadFile(filepath.Join(out, "rsa.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &rep))
	require.Equal(t, 8, rep.Steps[1].FittedPrompts)

	run := filepath.Join(dir, "run")
	r = spiral(t, nil, "train", "--out", run, "--steps", "2", "--problems", "2", "--n1", "4", "--k", "2", "--n", "2", "--n2", "2",
		"--max-new-tokens", "3950", "--eval-every", "0", "--final-rsa-steps", "0", "--seed", "4", "--quiet")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, 1, strings.Count(r.stderr, "aggregation prompts passed 146 tokens"), "announced once: %s", r.stderr)
	metrics, err := os.ReadFile(filepath.Join(run, "metrics.jsonl"))
	require.NoError(t, err)
	for _, m := range jsonLines[map[string]any](t, string(metrics)) {
		require.Positive(t, m["aggregate"].(map[string]any)["fitted_prompts"])
	}
	// With room to spare nothing is cut, and nothing said.
	r = spiral(t, nil, "eval", "--mode", "rsa", "--limit", "2", "--population", "4", "--subset", "2", "--rsa-steps", "1", "--out", out, "--quiet")
	require.Equal(t, 0, r.code, r.stderr)
	require.NotContains(t, r.stderr, "aggregation prompts passed")
}

// TestTrainPackPrompts: a step trains a subset's aggregation traces in
// packed rows by default, over fewer positions than with
// --pack-prompts=false, with the same loss but for float rounding (the
// rollouts, drawn before training, are the same); a rerun into the run
// with the other setting is a settings difference, refused.
func TestTrainPackPrompts(t *testing.T) {
	requireRuntime(t)
	dir := t.TempDir()
	step := func(out string, extra ...string) map[string]any {
		args := append([]string{"train", "--out", out, "--steps", "1", "--problems", "2", "--n1", "4", "--k", "2", "--n", "2", "--n2", "2",
			"--eval-every", "0", "--final-rsa-steps", "0", "--quiet"}, extra...)
		r := spiral(t, nil, args...)
		require.Equal(t, 0, r.code, r.stderr)
		b, err := os.ReadFile(filepath.Join(out, "metrics.jsonl"))
		require.NoError(t, err)
		lines := jsonLines[map[string]any](t, string(b))
		require.Len(t, lines, 1)
		return lines[0]
	}
	packed := step(filepath.Join(dir, "packed"))
	separate := step(filepath.Join(dir, "separate"), "--pack-prompts=false")
	require.Less(t, packed["train_tokens"].(float64), separate["train_tokens"].(float64))
	require.Equal(t, separate["loss_tokens"], packed["loss_tokens"])
	require.InDelta(t, separate["loss"].(float64), packed["loss"].(float64), 1e-5)

	r := spiral(t, nil, "train", "--out", filepath.Join(dir, "packed"), "--steps", "2", "--problems", "2", "--n1", "4", "--k", "2", "--n", "2", "--n2", "2",
		"--eval-every", "0", "--final-rsa-steps", "0", "--quiet", "--pack-prompts=false")
	require.NotEqual(t, 0, r.code)
	require.Contains(t, r.stderr, "separate_rows")
}

// TestTemplateFlagsNamed: a template file that cannot be read is named by
// its flag (it said "data: search template: read DIR: is a directory"),
// a usage error (exit 2) as a file refused for its content is.
func TestTemplateFlagsNamed(t *testing.T) {
	requireRuntime(t)
	dir := t.TempDir()
	missing := filepath.Join(dir, "absent.txt")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--search-template", dir}, "spiral eval: --search-template " + dir + " is a directory: want a template file"},
		{[]string{"--aggregate-template", missing}, "spiral eval: --aggregate-template " + missing + ": no such file or directory"},
	} {
		r := spiral(t, nil, append([]string{"eval", "--limit", "1", "--quiet", "--out", t.TempDir()}, tc.args...)...)
		requireExit(t, r, 2, nil, tc.want)
	}
}

// TestGenerationConfigEOS: the eos_token_id of a generation_config.json
// beside the model ends generation besides the tokenizer's stop ids
// (<|im_end|>, <|endoftext|>): it was not read, so a model whose
// generation defaults stop at another id ran on past it. The embedded
// model answers "Solve x+1=2." greedily with "2+1=3. 3-1=2. ..." (53
// tokens); with "." (id 6 of its tokenizer) among the eos ids, given as
// a list as Qwen3's are, it stops after "2+1=3.", with a warning, once,
// that "." is no special token of the tokenizer. An id past the
// tokenizer's 49 (Qwen3's <|im_end|> 151645: another model's file) is
// refused, naming the file, the id and the tokenizer's ids.
func TestGenerationConfigEOS(t *testing.T) {
	requireRuntime(t)
	dir, err := embedded.Extract(t.TempDir())
	require.NoError(t, err)
	m := filepath.Join(dir, "model.onnx")
	args := []string{"generate", "--model", m, "--temperature", "0", "Solve x+1=2."}
	r := spiral(t, nil, args...)
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "(53 tokens, stop)\n2+1=3. 3-1=2.")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "generation_config.json"), []byte(`{"eos_token_id": [48, 6]}`), 0o644))
	r = spiral(t, nil, args...)
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "(6 tokens, stop)\n2+1=3.\n")
	gc := filepath.Join(dir, "generation_config.json")
	require.Equal(t, 1, strings.Count(r.stderr, "spiral: warning: "+gc+`: eos_token_id 6 is not a special token of the tokenizer (it decodes to ".")`), r.stderr)
	require.NotContains(t, r.stderr, "eos_token_id 48")
	require.NoError(t, os.WriteFile(gc, []byte(`{"eos_token_id": [48, 151645]}`), 0o644))
	r = spiral(t, nil, args...)
	require.Equal(t, 1, r.code, r.stderr)
	require.Contains(t, r.stderr, gc+": eos_token_id: 151645 is past the tokenizer's 49 ids")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "generation_config.json"), []byte(`{"eos_token_id": "."}`), 0o644))
	r = spiral(t, nil, args...)
	require.Equal(t, 1, r.code, r.stderr)
	require.Contains(t, r.stderr, filepath.Join(dir, "generation_config.json")+": eos_token_id: want a token id or a list of token ids")
}
