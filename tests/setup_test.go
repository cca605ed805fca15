package tests

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// setupCache returns the cache scripts/setup.sh has installed into (the
// SPIRAL_CACHE_DIR its env.sh exports), or skips: run against an empty
// cache, setup builds libtokenizers with cargo for minutes.
func setupCache(t *testing.T) string {
	t.Helper()
	cache := requireEnv(t, "SPIRAL_CACHE_DIR", "the test command must source scripts/setup.sh's env")
	require.FileExists(t, filepath.Join(cache, "env.sh"))
	return cache
}

// runSetup runs scripts/setup.sh with extra environment variables in dir
// and returns its stdout, stderr and error.
func runSetup(t *testing.T, dir string, env ...string) (string, string, error) {
	t.Helper()
	script, err := filepath.Abs(filepath.Join("..", "scripts", "setup.sh"))
	require.NoError(t, err)
	cmd := exec.Command(script)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	return stdout.String(), stderr.String(), err
}

// TestSetupConcurrent: setups run at once on one installed cache (make -j,
// or two scripts that each run it) all succeed and print the env file.
// They wrote it through one fixed temporary name, so one moved the
// other's away and failed ("mv: cannot stat .../env.sh.tmp"), or moved a
// file the other was still writing.
func TestSetupConcurrent(t *testing.T) {
	cache := setupCache(t)
	want := filepath.Join(cache, "env.sh") + "\n"
	for round := 0; round < 5; round++ {
		var wg sync.WaitGroup
		errs := make([]error, 6)
		outs := make([]string, 6)
		stderrs := make([]string, 6)
		for i := range errs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				outs[i], stderrs[i], errs[i] = runSetup(t, t.TempDir(), "SPIRAL_CACHE_DIR="+cache)
			}()
		}
		wg.Wait()
		for i, err := range errs {
			require.NoError(t, err, stderrs[i])
			require.Equal(t, want, outs[i])
		}
	}
	matches, err := filepath.Glob(filepath.Join(cache, "env.sh.*"))
	require.NoError(t, err)
	require.Empty(t, matches, "no temporary env file is left behind")
}

// TestSetupSaysItWaits: a setup that finds another holding the cache's
// lock (the first make test on a machine builds libtokenizers for
// minutes) says it waits for it, then finishes. It waited without a word,
// as if it hung.
func TestSetupSaysItWaits(t *testing.T) {
	if _, err := exec.LookPath("flock"); err != nil {
		t.Skip("no flock: setup takes no lock")
	}
	cache := filepath.Join(t.TempDir(), "cache")
	installedCache(t, cache)
	lock, err := os.OpenFile(filepath.Join(cache, ".setup.lock"), os.O_CREATE|os.O_WRONLY, 0o644)
	require.NoError(t, err)
	defer lock.Close()
	require.NoError(t, syscall.Flock(int(lock.Fd()), syscall.LOCK_EX))

	script, err := filepath.Abs(filepath.Join("..", "scripts", "setup.sh"))
	require.NoError(t, err)
	cmd := exec.Command(script)
	cmd.Env = append(os.Environ(), "SPIRAL_CACHE_DIR="+cache)
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	rest := waitedThenReleased(t, cmd, lock, "setup: waiting for another setup of "+cache+" to finish")
	require.Equal(t, []string{"setup: ready: " + cache}, rest)
	require.Equal(t, filepath.Join(cache, "env.sh")+"\n", stdout.String())
}

// installedCache makes a cache directory at dir whose installed parts
// are links to those of the cache setup installed into, so that setup
// finds everything there and only writes env.sh.
func installedCache(t *testing.T, dir string) {
	t.Helper()
	cache := setupCache(t)
	require.NoError(t, os.MkdirAll(dir, 0o755))
	for _, pattern := range []string{"onnxruntime-*", "tokenizers-*", "qwen3-tokenizer-*"} {
		parts, err := filepath.Glob(filepath.Join(cache, pattern))
		require.NoError(t, err)
		require.NotEmpty(t, parts, "%s in %s", pattern, cache)
		for _, p := range parts {
			require.NoError(t, os.Symlink(p, filepath.Join(dir, filepath.Base(p))))
		}
	}
}

// linkWithEnv sources env (setup's env.sh) in bash and builds, in a
// module and directory of its own, a program that links libtokenizers.a
// through CGO_LDFLAGS as model/tokenizer does; it returns the variables'
// values after sourcing, a line each.
func linkWithEnv(t *testing.T, env string) []string {
	t.Helper()
	bash, err := exec.LookPath("bash")
	require.NoError(t, err)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module linkcheck\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "main.go"), []byte("package main\n\n// #cgo LDFLAGS: -ltokenizers\nimport \"C\"\n\nfunc main() {}\n"), 0o644))
	cmd := exec.Command(bash, "-c", `source "$1" && go build -o linkcheck . &&
		printf '%s\n' "$ONNXRUNTIME_LIB" "$SPIRAL_QWEN3_TOKENIZER_DIR" "$SPIRAL_CACHE_DIR" "$CGO_LDFLAGS"`, "bash", env)
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), stderr.String())
	return strings.Split(strings.TrimSuffix(stdout.String(), "\n"), "\n")
}

// TestSetupRelativeCache: a relative SPIRAL_CACHE_DIR (relative to where
// setup runs) gives an env.sh of absolute paths, which work from any
// directory: go test builds and runs each package in its own, where
// relative ones named nothing ("cannot find -ltokenizers").
func TestSetupRelativeCache(t *testing.T) {
	work := t.TempDir()
	installedCache(t, filepath.Join(work, "cache"))
	stdout, stderr, err := runSetup(t, work, "SPIRAL_CACHE_DIR=cache")
	require.NoError(t, err, stderr)
	env := strings.TrimSuffix(stdout, "\n")
	require.Equal(t, filepath.Join(work, "cache", "env.sh"), env)
	vars := linkWithEnv(t, env)
	require.Equal(t, []string{
		filepath.Join(work, "cache", "onnxruntime-1.30.0", "libonnxruntime.so"),
		filepath.Join(work, "cache", "qwen3-tokenizer-3.7.2"),
		filepath.Join(work, "cache"),
		"-L" + filepath.Join(work, "cache", "tokenizers-v1.22.1"),
	}, vars)
}

// TestSetupCacheWithBlank: a cache directory whose path holds a blank
// (and a quote and a dollar) gives an env.sh that bash reads back as
// written and that go links with: CGO_LDFLAGS="-L/a b/..." split into
// -L/a and b/... ("cannot find -ltokenizers").
func TestSetupCacheWithBlank(t *testing.T) {
	cache := filepath.Join(t.TempDir(), `spiral's cache $HOME`)
	installedCache(t, cache)
	stdout, stderr, err := runSetup(t, t.TempDir(), "SPIRAL_CACHE_DIR="+cache)
	require.NoError(t, err, stderr)
	env := strings.TrimSuffix(stdout, "\n")
	require.Equal(t, filepath.Join(cache, "env.sh"), env)
	vars := linkWithEnv(t, env)
	require.Equal(t, []string{
		filepath.Join(cache, "onnxruntime-1.30.0", "libonnxruntime.so"),
		filepath.Join(cache, "qwen3-tokenizer-3.7.2"),
		cache,
		`"-L` + filepath.Join(cache, "tokenizers-v1.22.1") + `"`,
	}, vars)
}

// copyPart replaces the link installedCache made at cache/part with a
// copy of the installed directory's files (its links as links), so that
// a test can damage them without touching the real cache.
func copyPart(t *testing.T, cache, part string) {
	t.Helper()
	link := filepath.Join(cache, part)
	src, err := os.Readlink(link)
	require.NoError(t, err)
	require.NoError(t, os.Remove(link))
	require.NoError(t, os.Mkdir(link, 0o755))
	entries, err := os.ReadDir(src)
	require.NoError(t, err)
	for _, e := range entries {
		from, to := filepath.Join(src, e.Name()), filepath.Join(link, e.Name())
		if e.Type()&os.ModeSymlink != 0 {
			target, err := os.Readlink(from)
			require.NoError(t, err)
			require.NoError(t, os.Symlink(target, to))
			continue
		}
		data, err := os.ReadFile(from)
		require.NoError(t, err)
		info, err := e.Info()
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(to, data, info.Mode().Perm()))
	}
}

// TestSetupRepairsDamagedCache: a file setup installed, damaged after a
// good setup (truncated by a full disk or an interrupted copy, written
// over), is found by its checksum and installed again. Setup trusted
// whatever its stamp or the file's name was there for and said "ready":
// a truncated ONNX Runtime library crashed spiral with SIGBUS in dlopen,
// a truncated libtokenizers.a failed the link ("file format not
// recognized"). Here npm fails (no network for the tests) and cargo is a
// stand-in that "builds" the real cache's library.
func TestSetupRepairsDamagedCache(t *testing.T) {
	installed := setupCache(t)
	stubs := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(stubs, "npm"),
		[]byte("#!/bin/sh\necho 'npm (test stub): offline' >&2\nexit 1\n"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(stubs, "cargo"),
		[]byte("#!/bin/sh\nmkdir -p target/release && cp \"$STUB_LIBTOKENIZERS\" target/release/libtokenizers.a\n"), 0o755))
	for _, tc := range []struct {
		part, file string
		again      string // setup's log line of installing it again
	}{
		{"onnxruntime-1.30.0", "libonnxruntime.so.1", "setup: fetching ONNX Runtime 1.30.0"},
		{"qwen3-tokenizer-3.7.2", "tokenizer.json", "setup: fetching the Qwen3 tokenizer"},
		{"qwen3-tokenizer-3.7.2", "tokenizer_config.json", "setup: fetching the Qwen3 tokenizer"},
		{"tokenizers-v1.22.1", "libtokenizers.a", "setup: building libtokenizers.a"},
	} {
		t.Run(tc.file, func(t *testing.T) {
			cache := filepath.Join(t.TempDir(), "cache")
			installedCache(t, cache)
			copyPart(t, cache, tc.part)
			env := []string{"SPIRAL_CACHE_DIR=" + cache, "PATH=" + stubs + string(os.PathListSeparator) + os.Getenv("PATH"),
				"STUB_LIBTOKENIZERS=" + filepath.Join(installed, "tokenizers-v1.22.1", "libtokenizers.a")}
			_, stderr, err := runSetup(t, t.TempDir(), env...)
			require.NoError(t, err, stderr)
			require.NotContains(t, stderr, tc.again, "the good setup installs nothing")

			damaged := filepath.Join(cache, tc.part, tc.file)
			info, err := os.Stat(damaged)
			require.NoError(t, err)
			require.NoError(t, os.Truncate(damaged, info.Size()/2))
			stdout, stderr, err := runSetup(t, t.TempDir(), env...)
			require.Contains(t, stderr, "setup: "+damaged+" is not the file setup installed (SHA-256 differs); installing it again\n"+tc.again)
			if tc.part != "tokenizers-v1.22.1" {
				require.Error(t, err, "npm is offline")
				require.Contains(t, stderr, "npm (test stub): offline")
				require.Empty(t, stdout, "no env.sh is offered")
				return
			}
			require.NoError(t, err, stderr)
			linkWithEnv(t, strings.TrimSuffix(stdout, "\n"))
			_, stderr, err = runSetup(t, t.TempDir(), env...)
			require.NoError(t, err, stderr)
			require.Equal(t, "setup: ready: "+cache+"\n", stderr, "the rebuilt library is taken as it is")
		})
	}
}

// TestMakeWithoutHome: with HOME unset or empty (env -i, a service
// manager's job), make takes the home directory from the password
// database, as setup does: make test's Python environment is made under
// it, and recipes get it, so that ./spiral finds setup's cache (make
// train, make embedded). The Makefile took $(HOME) as it was: it made
// the environment in /.cache/spiral/engine-venv (a second one, or for a
// user who may not write /, "Permission denied"), and make train's
// ./spiral found no ONNX Runtime ("setup location: not set ... run
// scripts/setup.sh") just after make had run setup.
func TestMakeWithoutHome(t *testing.T) {
	makeBin, err := exec.LookPath("make")
	if err != nil {
		t.Skip("no make on PATH")
	}
	me, err := user.Current()
	require.NoError(t, err)
	extra := filepath.Join(t.TempDir(), "home.mk")
	require.NoError(t, os.WriteFile(extra, []byte("home:\n\t@printf '%s\\n' \"$$HOME\"\n"), 0o644))
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"engine venv", []string{"-n", "engine-venv"},
			`cmp -s scripts/engine/requirements.txt "` + filepath.Join(me.HomeDir, ".cache", "spiral", "engine-venv", "requirements.txt") + `"`},
		{"recipes", []string{"-s", "-f", "Makefile", "-f", extra, "home"}, me.HomeDir + "\n"},
	} {
		for _, home := range []string{"unset", "empty"} {
			t.Run(tc.name+", HOME "+home, func(t *testing.T) {
				cmd := exec.Command(makeBin, tc.args...)
				cmd.Dir = ".."
				for _, kv := range os.Environ() {
					if !strings.HasPrefix(kv, "HOME=") && !strings.HasPrefix(kv, "ENGINE_VENV=") && !strings.HasPrefix(kv, "MAKEFLAGS=") {
						cmd.Env = append(cmd.Env, kv)
					}
				}
				if home == "empty" {
					cmd.Env = append(cmd.Env, "HOME=")
				}
				out, err := cmd.CombinedOutput()
				require.NoError(t, err, string(out))
				require.Contains(t, string(out), tc.want)
			})
		}
	}
}

// TestMakeSetupFails: where setup cannot fetch what it installs (npm
// offline here), make's last words before its own are setup's, naming
// what it could not fetch. Setup ended at npm's message without a word,
// and the recipe then sourced the empty name it printed: "/bin/bash:
// line 1: : No such file or directory", as if a file were missing.
func TestMakeSetupFails(t *testing.T) {
	makeBin, err := exec.LookPath("make")
	if err != nil {
		t.Skip("no make on PATH")
	}
	stubs := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(stubs, "npm"),
		[]byte("#!/bin/sh\necho 'npm (test stub): offline' >&2\nexit 1\n"), 0o755))
	cmd := exec.Command(makeBin, "-s", "build")
	cmd.Dir = ".."
	cmd.Env = append(os.Environ(), "SPIRAL_CACHE_DIR="+t.TempDir(), "MAKEFLAGS=",
		"PATH="+stubs+string(os.PathListSeparator)+os.Getenv("PATH"))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	require.Error(t, cmd.Run())
	lines := strings.Split(strings.TrimSuffix(stderr.String(), "\n"), "\n")
	require.GreaterOrEqual(t, len(lines), 3, stderr.String())
	require.Equal(t, []string{
		"npm (test stub): offline",
		"setup: error: npm could not fetch onnxruntime-node@1.30.0 (its message above)",
	}, lines[len(lines)-3:len(lines)-1], stderr.String())
	// make[1]: under make test, whose MAKELEVEL the inner make inherits.
	require.Regexp(t, `^make(\[\d+\])?: \*\*\* `, lines[len(lines)-1], stderr.String())
}

// TestMakeEngineVenvConcurrent: make test's Python environment, missing,
// is made once however many makes start at once (two clones' make test
// on one machine, which share it). Each found it missing, removed the
// directory the other was installing into and made its own. Here
// python3 and pip are stand-ins: pip takes a second and logs its install.
func TestMakeEngineVenvConcurrent(t *testing.T) {
	makeBin, err := exec.LookPath("make")
	if err != nil {
		t.Skip("no make on PATH")
	}
	if _, err := exec.LookPath("flock"); err != nil {
		t.Skip("no flock: the recipe takes no lock")
	}
	stubs, work := t.TempDir(), t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(stubs, "python3"), []byte(`#!/bin/sh
[ "$1 $2" = "-m venv" ] || exit 2
mkdir -p "$3/bin"
printf '#!/bin/sh\necho "$*" >>"$STUB_LOG"; sleep 1\n' >"$3/bin/pip"
chmod +x "$3/bin/pip"
`), 0o755))
	venv, log := filepath.Join(work, "engine-venv"), filepath.Join(work, "installs")
	const makes = 4
	errs := make([]error, makes)
	outs := make([][]byte, makes)
	var wg sync.WaitGroup
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.Command(makeBin, "-s", "engine-venv")
			cmd.Dir = ".."
			cmd.Env = append(os.Environ(), "ENGINE_VENV="+venv, "STUB_LOG="+log, "MAKEFLAGS=",
				"PATH="+stubs+string(os.PathListSeparator)+os.Getenv("PATH"))
			outs[i], errs[i] = cmd.CombinedOutput()
		}()
	}
	wg.Wait()
	for i, err := range errs {
		require.NoError(t, err, string(outs[i]))
	}
	installs, err := os.ReadFile(log)
	require.NoError(t, err)
	require.Equal(t, "install --quiet --disable-pip-version-check -r scripts/engine/requirements.txt\n", string(installs), "one install")
	want, err := os.ReadFile(filepath.Join("..", "scripts", "engine", "requirements.txt"))
	require.NoError(t, err)
	got, err := os.ReadFile(filepath.Join(venv, "requirements.txt"))
	require.NoError(t, err)
	require.Equal(t, string(want), string(got))
}

// TestMakeEngineVenvSaysItWaits: a make that finds another making the
// engine venv (a pip install of minutes) says it waits for it, then
// finishes, as setup says it waits for another setup. It waited without
// a word, as if it hung.
func TestMakeEngineVenvSaysItWaits(t *testing.T) {
	makeBin, err := exec.LookPath("make")
	if err != nil {
		t.Skip("no make on PATH")
	}
	if _, err := exec.LookPath("flock"); err != nil {
		t.Skip("no flock: the recipe takes no lock")
	}
	venv := filepath.Join(t.TempDir(), "engine-venv")
	require.NoError(t, os.Mkdir(venv, 0o755))
	req, err := os.ReadFile(filepath.Join("..", "scripts", "engine", "requirements.txt"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(venv, "requirements.txt"), req, 0o644)) // made: nothing to install
	lock, err := os.OpenFile(venv+".lock", os.O_CREATE|os.O_WRONLY, 0o644)
	require.NoError(t, err)
	defer lock.Close()
	require.NoError(t, syscall.Flock(int(lock.Fd()), syscall.LOCK_EX))

	cmd := exec.Command(makeBin, "-s", "engine-venv")
	cmd.Dir = ".."
	cmd.Env = append(os.Environ(), "ENGINE_VENV="+venv, "MAKEFLAGS=")
	rest := waitedThenReleased(t, cmd, lock, "make: waiting for another make to finish "+venv)
	require.Empty(t, rest)
}

// waitedThenReleased starts cmd, which finds lock held, requires its
// first line on stderr to be waiting (within 30 s), releases the lock,
// requires cmd to finish and returns its later stderr lines.
func waitedThenReleased(t *testing.T, cmd *exec.Cmd, lock *os.File, waiting string) []string {
	t.Helper()
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	lines := make(chan string, 64) // buffered: the reader never blocks on a test that gave up
	go func() {
		defer close(lines)
		for sc := bufio.NewScanner(stderr); sc.Scan(); {
			lines <- sc.Text()
		}
	}()
	select {
	case line := <-lines:
		require.Equal(t, waiting, line)
	case <-time.After(30 * time.Second):
		require.NoError(t, cmd.Process.Kill())
		t.Fatalf("%s said nothing in 30 s while another held %s", filepath.Base(cmd.Path), lock.Name())
	}
	require.NoError(t, syscall.Flock(int(lock.Fd()), syscall.LOCK_UN))
	var rest []string
	for line := range lines {
		rest = append(rest, line)
	}
	require.NoError(t, cmd.Wait(), strings.Join(rest, "\n"))
	return rest
}
