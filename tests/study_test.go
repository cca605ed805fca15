package tests

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// studyKnobs are scripts/study.sh's settings, taken from the environment.
var studyKnobs = []string{"OUT", "STEPS", "SEEDS", "ALGOS", "PROBLEMS", "EVALN", "PASSK_SAMPLES", "JOBS"}

// TestStudyRefusals runs scripts/study.sh (make study) with bad knobs: each
// is refused, named with its value and what it wants, with exit 2, before
// anything is built or run (OUT is not created). A refusal that does not
// happen would start a study, so each run has a short deadline and is
// killed with its process group.
func TestStudyRefusals(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	script, err := filepath.Abs(filepath.Join("..", "scripts", "study.sh"))
	require.NoError(t, err)
	tmp := t.TempDir()
	file := filepath.Join(tmp, "file")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	others := filepath.Join(tmp, "checkout")
	kept := filepath.Join(others, "runs", "spiral", "metrics.jsonl")
	require.NoError(t, os.MkdirAll(filepath.Dir(kept), 0o755))
	require.NoError(t, os.WriteFile(kept, []byte("{}\n"), 0o644))
	// JOBS reached bash's arithmetic unchecked, which runs the command
	// substitution in the index of a set variable's name.
	pwned := filepath.Join(tmp, "pwned")
	inject := "JOBS=STEPS[$(touch " + pwned + ")]"
	cases := []struct {
		env  []string
		want string
	}{
		{[]string{"JOBS=abc"}, "study: JOBS=abc: want a whole number >= 1"},
		{[]string{"JOBS=0"}, "study: JOBS=0: want a whole number >= 1"},
		{[]string{"JOBS=08"}, "study: JOBS=08: want a whole number >= 1"},
		{[]string{inject}, "study: " + inject + ": want a whole number >= 1"},
		{[]string{"JOBS=99999999999999999999"}, "study: JOBS=99999999999999999999: want a whole number of at most 9 digits"},
		{[]string{"EVALN=0"}, "study: EVALN=0: want a whole number >= 1"},
		{[]string{"EVALN=-1"}, "study: EVALN=-1: want a whole number >= 1"},
		{[]string{"EVALN="}, "study: EVALN=: want a whole number >= 1"},
		{[]string{"STEPS=0"}, "study: STEPS=0: want a whole number >= 1"},
		{[]string{"STEPS=1.5"}, "study: STEPS=1.5: want a whole number >= 1"},
		{[]string{"PROBLEMS= 8"}, "study: PROBLEMS= 8: want a whole number >= 1"},
		{[]string{"PASSK_SAMPLES=many"}, "study: PASSK_SAMPLES=many: want a whole number >= 1"},
		{[]string{"SEEDS="}, "study: SEEDS=: want one or more seeds"},
		{[]string{"SEEDS= "}, "study: SEEDS= : want one or more seeds"},
		{[]string{"SEEDS=1 x"}, "study: SEEDS=1 x: want whole numbers >= 1 (x is not)"},
		{[]string{"SEEDS=0 1"}, "study: SEEDS=0 1: want whole numbers >= 1 (0 is not)"},
		{[]string{"SEEDS=*"}, "study: SEEDS=*: want whole numbers >= 1 (* is not)"},
		{[]string{"SEEDS=1 2 1"}, "study: SEEDS=1 2 1: want distinct seeds"},
		{[]string{"ALGOS=bogus"}, "study: ALGOS=bogus: want spiral, grpo, agg-only, search-only or spiral-2r (bogus is not)"},
		{[]string{"ALGOS=grpo base"}, "study: ALGOS=grpo base: want spiral, grpo, agg-only, search-only or spiral-2r (base is not)"},
		{[]string{"ALGOS="}, "study: ALGOS=: want one or more algorithms"},
		{[]string{"ALGOS=grpo spiral grpo"}, "study: ALGOS=grpo spiral grpo: want each algorithm once"},
		{[]string{"OUT="}, "study: OUT=: want a directory"},
		{[]string{"OUT=" + file}, "study: OUT=" + file + ": want a directory (it exists and is not one)"},
		// Not a study's directory: starting over would remove its runs/.
		{[]string{"OUT=" + others}, "study: OUT=" + others + ": want a study's directory or a new one (it holds runs/ but no study.stamp)"},
		// The first bad knob is named even where a later one is fine.
		{[]string{"STEPS=1", "ALGOS=grpo", "SEEDS=1", "EVALN=0"}, "study: EVALN=0: want a whole number >= 1"},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.env, ","), func(t *testing.T) {
			dir := t.TempDir()
			out := filepath.Join(dir, "study")
			env := []string{"OUT=" + out}
			for _, kv := range os.Environ() {
				if k, _, _ := strings.Cut(kv, "="); !slices.Contains(studyKnobs, k) {
					env = append(env, kv)
				}
			}
			env = append(env, c.env...) // after OUT: the last one counts
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, bash, script)
			cmd.Dir = dir
			cmd.Env = env
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			require.NoFileExists(t, pwned, "JOBS ran as arithmetic")
			require.NoError(t, ctx.Err(), "not refused: the study started (stderr %q)", stderr.String())
			var ee *exec.ExitError
			require.True(t, errors.As(err, &ee), "want exit 2, got %v (stderr %q)", err, stderr.String())
			require.Equal(t, 2, ee.ExitCode(), stderr.String())
			require.Equal(t, c.want+"\n", stderr.String())
			require.Empty(t, stdout.String())
			require.NoDirExists(t, out, "nothing is made before the knobs are checked")
			require.FileExists(t, kept, "another directory's runs/ is left alone")
		})
	}
}
