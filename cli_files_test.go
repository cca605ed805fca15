package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRefusedRunLeavesOthersFiles: a first run refused before it starts
// removes the --out it made, with the artifacts built for it, only while
// the directory holds nothing but those: another process that wrote into
// it meanwhile (an eval --out DIR sharing DIR/artifacts/, its lock and
// report beside them; a whole run that took the directory between the
// refused run's look and its lock) keeps the artifacts it reads and what
// entries lists what root holds, relative to it.
func entries(t *testing.T, root string) []string {
	t.Helper()
	var left []string
	require.NoError(t, filepath.WalkDir(root, func(path string, _ fs.DirEntry, err error) error {
		if err == nil && path != root {
			rel, _ := filepath.Rel(root, path)
			left = append(left, rel)
		}
		return err
	}))
	return left
}

// it wrote. Alone, the refused run's directory goes.
func TestRefusedRunLeavesOthersFiles(t *testing.T) {
	refused := errors.New("refused")
	for _, tc := range []struct {
		name   string
		others []string // files another process wrote into --out, beside the lock
		kept   bool
	}{
		{name: "alone", kept: false},
		{name: "an evaluation beside it", others: []string{".passk.lock", "artifacts/manifest.json"}, kept: true},
		{name: "another run", others: []string{"metrics.jsonl", "checkpoints/ckpt-000001/state.json", "artifacts/manifest.json"}, kept: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "run")
			l, err := lockRunDir(dir)
			require.NoError(t, err)
			require.NoError(t, os.MkdirAll(filepath.Join(dir, "artifacts"), 0o755)) // built for the refused run
			for _, f := range tc.others {
				require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, f)), 0o755))
				require.NoError(t, os.WriteFile(filepath.Join(dir, f), []byte("x"), 0o644))
			}
			require.ErrorIs(t, l.release(refused), refused)
			if !tc.kept {
				require.NoDirExists(t, dir)
				return
			}
			for _, f := range tc.others {
				require.FileExists(t, filepath.Join(dir, f))
			}
		})
	}
}

// TestRefusedRunPathThroughParent: a --out through a directory that did
// not exist and "..", as MkdirAll makes it (newx/../newy makes newx and
// newy), left newx behind when the first run was refused: the
// directories made were taken from the cleaned path (newy alone). Every
// directory made is removed again.
func TestRefusedRunPathThroughParent(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{
		{"train", "--lora-rank", "65", "--steps", "1", "--quiet", "--out", filepath.Join(dir, "newx") + "/../newy"},
		{"artifacts", "--lora-rank", "65", "--out", filepath.Join(dir, "newa") + "/../newb"},
	} {
		var stderr bytes.Buffer
		require.Equal(t, exitUsage, run(context.Background(), args, &cliEnv{stdout: io.Discard, stderr: &stderr}), stderr.String())
		entries, err := os.ReadDir(dir)
		require.NoError(t, err)
		require.Empty(t, entries, "%q", args)
	}
}

// TestRefusedEvalLeavesNothing: an eval refused after it made and locked
// its --out (here: --data names no file, found only then) left the
// directory it made with its .passk.lock, and in an --out that was there
// a new .passk.lock. Now the directories it made go, and so does the lock
// file it held, made for it or left by an earlier evaluation (killed by
// SIGKILL); one another process holds stays (this eval refused by it).
func TestRefusedEvalLeavesNothing(t *testing.T) {
	t.Setenv("SPIRAL_CACHE_DIR", t.TempDir())
	missing := filepath.Join(t.TempDir(), "missing.jsonl")
	for _, tc := range []struct {
		name string
		// prepare makes what is in root before the eval and returns its
		// --out, with the entries root must hold after it.
		prepare func(t *testing.T, root string) (out string, after []string)
		code    int
		want    string
	}{
		{"new directories", func(t *testing.T, root string) (string, []string) {
			return filepath.Join(root, "a", "b"), nil
		}, exitUsage, "--data " + missing + ": no such file or directory"},
		{"an empty directory", func(t *testing.T, root string) (string, []string) {
			require.NoError(t, os.Mkdir(filepath.Join(root, "out"), 0o755))
			return filepath.Join(root, "out"), []string{"out"}
		}, exitUsage, "--data " + missing + ": no such file or directory"},
		{"an earlier evaluation's lock", func(t *testing.T, root string) (string, []string) {
			out := filepath.Join(root, "out")
			require.NoError(t, os.Mkdir(out, 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(out, ".passk.lock"), nil, 0o644))
			return out, []string{"out"}
		}, exitUsage, "--data " + missing + ": no such file or directory"},
		{"a lock another process holds", func(t *testing.T, root string) (string, []string) {
			out := filepath.Join(root, "out")
			require.NoError(t, os.Mkdir(out, 0o755))
			unlock, err := lockEvalOutput(out, "passk")
			require.NoError(t, err)
			t.Cleanup(func() { unlock.release(nil) })
			return out, []string{"out", "out/.passk.lock"}
		}, exitFailure, "another spiral eval --mode passk is writing there"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			out, after := tc.prepare(t, root)
			var stderr bytes.Buffer
			code := run(context.Background(), []string{"eval", "--mode", "passk", "--data", missing, "--out", out, "--quiet", "--threads", "1"}, &cliEnv{stdout: io.Discard, stderr: &stderr})
			require.Equal(t, tc.code, code, stderr.String())
			require.Contains(t, stderr.String(), tc.want)
			require.Equal(t, after, entries(t, root))
		})
	}
}

// TestOutDanglingSymlink: an --out that is, or runs through, a symbolic
// link to a directory that does not exist is refused naming the flag,
// the link and where it leads, and nothing is made. mkdir(2) answers
// "file exists" there (the link is), so each command said only "--out
// L: mkdir L: file exists", which names neither the link nor what is
// missing. A link in a loop is named likewise. Both are a bad value of
// the flag, exit 2, as an --out that is a file is and as an input path
// that is a link in a loop is; they exited 1.
func TestOutDanglingSymlink(t *testing.T) {
	t.Setenv("SPIRAL_CACHE_DIR", t.TempDir())
	for _, tc := range []struct {
		name string
		args func(link string) []string
		out  func(link string) string // the --out named in the error
	}{
		{"eval", func(l string) []string { return []string{"eval", "--mode", "passk", "--out", l, "--quiet"} }, nil},
		{"eval, through a parent", func(l string) []string {
			return []string{"eval", "--mode", "passk", "--out", filepath.Join(l, "sub"), "--quiet"}
		}, func(l string) string { return filepath.Join(l, "sub") }},
		{"train", func(l string) []string { return []string{"train", "--steps", "1", "--out", l, "--quiet"} }, nil},
		{"sft", func(l string) []string { return []string{"sft", "--steps", "1", "--out", l, "--quiet"} }, nil},
		{"init-model", func(l string) []string { return []string{"init-model", "--layers", "1", "--out", l} }, nil},
		{"data synth", func(l string) []string { return []string{"data", "synth", "--out", filepath.Join(l, "p.jsonl")} },
			func(l string) string { return filepath.Join(l, "p.jsonl") }},
		{"export", func(l string) []string { return []string{"export", "--format", "hf", "--out", l} }, nil},
		{"artifacts", func(l string) []string { return []string{"artifacts", "--out", l} }, nil},
		{"compare", func(l string) []string {
			return append([]string{"compare", "--out", l}, twoPassKReports(t, t.TempDir())...)
		}, nil},
		{"plot", func(l string) []string {
			return append([]string{"plot", "--out", filepath.Join(l, "x.png")}, twoPassKReports(t, t.TempDir())...)
		}, func(l string) string { return filepath.Join(l, "x.png") }},
		{"eval, a link to itself", func(l string) []string { return []string{"eval", "--mode", "passk", "--out", l, "--quiet"} }, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			link := filepath.Join(root, "link")
			target, why := "nowhere", "which does not exist: make that directory"
			if strings.HasSuffix(tc.name, "itself") {
				target, why = "link", "which cannot be followed (too many levels of symbolic links): correct the link"
			}
			require.NoError(t, os.Symlink(target, link))
			out := link
			if tc.out != nil {
				out = tc.out(link)
			}
			var stderr bytes.Buffer
			code := run(context.Background(), tc.args(link), &cliEnv{stdout: io.Discard, stderr: &stderr})
			require.Equal(t, exitUsage, code, stderr.String())
			require.Contains(t, stderr.String(), "--out "+out+": "+link+" is a symbolic link to "+filepath.Join(root, target)+
				", "+why+", or give another --out\n")
			entries, err := os.ReadDir(root)
			require.NoError(t, err)
			require.Len(t, entries, 1, "only the link")
		})
	}
}

// TestDataFileNamed: a --data or --eval-data that cannot be read (here
// not JSON; one absent or a directory is a usage error of its own,
// TestMalformedInputs) is named by its flag: train and eval said
// "data: X: ...", which does not say which of --data and --eval-data
// named X.
func TestDataFileNamed(t *testing.T) {
	t.Setenv("SPIRAL_CACHE_DIR", t.TempDir())
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.jsonl")
	good := filepath.Join(dir, "good.jsonl")
	require.NoError(t, os.WriteFile(bad, []byte("not json\n"), 0o644))
	require.NoError(t, os.WriteFile(good, []byte(`{"problem": "Solve x+1=2.", "answer": "1"}`+"\n"), 0o644))
	for _, tc := range []struct {
		args         []string
		prefix, tail string
	}{
		{[]string{"eval", "--data", bad}, "spiral eval: --data: data: " + bad, "\n"},
		{[]string{"train", "--data", bad}, "spiral train: --data: data: " + bad, "\n"},
		{[]string{"train", "--data", good, "--problems", "1", "--eval-data", bad}, "spiral train: --eval-data: data: " + bad, "\n"},
		{[]string{"train", "--data", good, "--problems", "1", "--eval-data", bad, "--id-field", "-"}, "spiral train: --eval-data: data: " + bad,
			" (it is read with the --problem-field, --answer-field, --id-field and --format given for --data)\n"},
	} {
		var stderr bytes.Buffer
		args := append(tc.args, "--out", filepath.Join(t.TempDir(), "out"), "--quiet", "--threads", "1")
		code := run(context.Background(), args, &cliEnv{stdout: io.Discard, stderr: &stderr})
		require.Equal(t, exitFailure, code, "%q: %s", tc.args, stderr.String())
		require.True(t, strings.HasPrefix(stderr.String(), tc.prefix) && strings.HasSuffix(stderr.String(), tc.tail), "%q: %s", tc.args, stderr.String())
	}
}

// writeFakeRun makes, under root, what housekeptBy recognises: a run's
// checkpoints/ with checkpoint ckpt-000050 (its latest) and
// ckpt-000040, a spiral checkpoint copied elsewhere under another name
// (copy/best, its state.json spiral's), and a directory of another tool
// holding a state.json of its own (other).
func writeFakeRun(t *testing.T, root string) {
	t.Helper()
	ckpts := filepath.Join(root, "run", "checkpoints")
	for _, name := range []string{"ckpt-000040", "ckpt-000050"} {
		require.NoError(t, os.MkdirAll(filepath.Join(ckpts, name), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(ckpts, name, "state.json"), []byte("{}"), 0o644))
		require.NoError(t, os.WriteFile(filepath.Join(ckpts, name, "model.safetensors"), []byte("{}"), 0o644))
	}
	require.NoError(t, os.WriteFile(filepath.Join(ckpts, "latest"), []byte("ckpt-000050\n"), 0o644))
	require.NoError(t, os.MkdirAll(filepath.Join(root, "copy", "best"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "copy", "best", "state.json"),
		[]byte(`{"format_version":1,"step":50,"optimizer_steps":0,"files":{"model.safetensors":{"size":2,"crc32c":1}}}`+"\n"), 0o644))
	require.NoError(t, os.MkdirAll(filepath.Join(root, "other"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "other", "state.json"), []byte(`{"epoch": 3}`), 0o644))
}

// TestHousekeptBy: an output directory within a checkpoint directory
// (export --out RUN/checkpoints/ckpt-000050/hf) or a run's checkpoints/
// was not looked at (only a checkpoint's own directory, by a file named
// state.json), and the run's --keep then removed it with the
// checkpoint, its --fresh moved it aside. housekeptBy finds the
// checkpoint or checkpoints/ above, by spiral's files, through links; a
// state.json of another tool's is none.
func TestHousekeptBy(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	writeFakeRun(t, root)
	ckpts := filepath.Join(root, "run", "checkpoints")
	ckpt := filepath.Join(ckpts, "ckpt-000050")
	require.NoError(t, os.Symlink(ckpt, filepath.Join(root, "link")))
	for _, tc := range []struct {
		dir, ckpt, ckpts string
	}{
		{filepath.Join(ckpt, "hf"), ckpt, ""},
		{filepath.Join(ckpt, "a", "b"), ckpt, ""},
		{ckpt, ckpt, ""},
		{ckpts, "", ckpts},
		{filepath.Join(ckpts, "eval"), "", ckpts},
		{filepath.Join(ckpts, "ckpt-000060"), "", ckpts},
		{filepath.Join(root, "run"), "", ""},
		{filepath.Join(root, "run", "eval"), "", ""},
		{filepath.Join(root, "copy", "best", "hf"), filepath.Join(root, "copy", "best"), ""},
		{filepath.Join(root, "other"), "", ""},
		{filepath.Join(root, "other", "hf"), "", ""},
		{filepath.Join(root, "link", "hf"), ckpt, ""},
	} {
		gotCkpt, gotCkpts := housekeptBy(tc.dir)
		require.Equal(t, tc.ckpt, gotCkpt, tc.dir)
		require.Equal(t, tc.ckpts, gotCkpts, tc.dir)
	}
}

// TestTrainSFTRefuseOutInCheckpoints: a train or sft --out within
// another run's checkpoint directory (RUN/checkpoints/ckpt-000050/sft)
// or its checkpoints/ was taken, and that run's --keep later removed
// the checkpoint with the run or trained model in it, its --fresh moved
// it into previous-*. Refused before anything is written (exit 2), as
// eval's and export's --out are.
func TestTrainSFTRefuseOutInCheckpoints(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	writeFakeRun(t, root)
	ckpts := filepath.Join(root, "run", "checkpoints")
	ckpt := filepath.Join(ckpts, "ckpt-000050")
	for _, tc := range []struct{ cmd, out, want string }{
		{"sft", filepath.Join(ckpt, "sft"), "spiral sft: --out " + filepath.Join(ckpt, "sft") + " lies in checkpoint directory " + ckpt + ": its run's --keep removes that directory, the trained model with it; give an --out outside the run's checkpoints\n"},
		{"sft", ckpt, "spiral sft: --out " + ckpt + " is a checkpoint directory (it holds state.json): its run's --keep removes the directory, the trained model with it; give another --out\n"},
		{"train", filepath.Join(ckpts, "run2"), "spiral train: --out " + filepath.Join(ckpts, "run2") + " is in " + ckpts + ", the directory of a training run's checkpoints: the run's --fresh moves it aside into previous-*, this run with it, and its --keep removes what there is named as a checkpoint (ckpt-NNNNNN); give an --out outside it, such as --out " + filepath.Join(root, "run", "train") + "\n"},
		{"train", filepath.Join(ckpt, "run2"), "spiral train: --out " + filepath.Join(ckpt, "run2") + " lies in checkpoint directory " + ckpt + ": its run's --keep removes that directory, this run with it; give an --out outside the run's checkpoints\n"},
	} {
		before := entries(t, root)
		var stderr bytes.Buffer
		code := run(context.Background(), []string{tc.cmd, "--out", tc.out}, &cliEnv{stdout: io.Discard, stderr: &stderr})
		require.Equal(t, exitUsage, code, stderr.String())
		require.Equal(t, tc.want, stderr.String())
		require.Equal(t, before, entries(t, root), "nothing written")
	}
}

// TestOutInCheckpointsRefused: compare's, plot's, init-model's,
// artifacts' and data synth's --out within a run's checkpoint directory
// or its checkpoints/ was taken (exit 0), and the run's --keep later
// removed it with the checkpoint, its --fresh moved it into previous-*;
// train, sft, eval and export refused such an --out. Every command that
// writes an --out now refuses it alike, before anything is written
// (exit 2). plot's --out of a directory, refused with a file in it to
// give instead, suggested one in the checkpoints: it is refused as them.
func TestOutInCheckpointsRefused(t *testing.T) {
	t.Setenv("SPIRAL_CACHE_DIR", t.TempDir())
	root, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	writeFakeRun(t, root)
	ckpts := filepath.Join(root, "run", "checkpoints")
	ckpt := filepath.Join(ckpts, "ckpt-000050")
	rep := filepath.Join(root, "passk.json")
	require.NoError(t, os.WriteFile(rep, []byte(`{"meta":{"model":"m"},"mode":"passk"}`), 0o644))
	rep2 := filepath.Join(root, "passk2.json")
	require.NoError(t, os.WriteFile(rep2, []byte(`{"meta":{"model":"n"},"mode":"passk"}`), 0o644))
	lies := func(cmd, out, what string) string {
		return "spiral " + cmd + ": --out " + out + " lies in checkpoint directory " + ckpt + ": its run's --keep removes that directory, " + what + " with it; give an --out outside the run's checkpoints\n"
	}
	in := func(cmd, out, what, instead string) string {
		return "spiral " + cmd + ": --out " + out + " is in " + ckpts + ", the directory of a training run's checkpoints: the run's --fresh moves it aside into previous-*, " + what + " with it, and its --keep removes what there is named as a checkpoint (ckpt-NNNNNN); give an --out outside it, such as --out " + filepath.Join(root, "run", instead) + "\n"
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"compare", "--out", filepath.Join(ckpt, "cmp"), rep, rep2}, lies("compare", filepath.Join(ckpt, "cmp"), "the plots and summary.md")},
		{[]string{"compare", "--out", filepath.Join(ckpts, "cmp"), rep, rep2}, in("compare", filepath.Join(ckpts, "cmp"), "the plots and summary.md", "compare")},
		{[]string{"compare", "--out", ckpt, rep, rep2}, "spiral compare: --out " + ckpt + " is a checkpoint directory (it holds state.json): its run's --keep removes the directory, the plots and summary.md with it; give another --out\n"},
		{[]string{"plot", "--out", filepath.Join(ckpt, "p.svg"), rep}, lies("plot", filepath.Join(ckpt, "p.svg"), "the plot")},
		{[]string{"plot", "--out", filepath.Join(ckpts, "p.svg"), rep}, in("plot", filepath.Join(ckpts, "p.svg"), "the plot", "p.svg")},
		// A directory: refused as the checkpoints it is, not with a file
		// in it to try next, which would be refused in turn.
		{[]string{"plot", "--out", ckpts, rep}, "spiral plot: --out " + ckpts + " is " + ckpts + ", the directory of a training run's checkpoints: the run's --fresh moves it aside into previous-*, the plot with it, and its --keep removes what there is named as a checkpoint (ckpt-NNNNNN); give an --out outside it, such as --out " + filepath.Join(root, "run", "compare.png") + "\n"},
		{[]string{"plot", "--out", ckpt, rep}, "spiral plot: --out " + ckpt + " is a checkpoint directory (it holds state.json): its run's --keep removes the directory, the plot with it; give another --out\n"},
		{[]string{"init-model", "--layers", "1", "--out", filepath.Join(ckpt, "tiny")}, lies("init-model", filepath.Join(ckpt, "tiny"), "the model")},
		{[]string{"init-model", "--layers", "1", "--out", filepath.Join(ckpts, "tiny")}, in("init-model", filepath.Join(ckpts, "tiny"), "the model", "model")},
		{[]string{"artifacts", "--out", filepath.Join(ckpt, "artifacts")}, lies("artifacts", filepath.Join(ckpt, "artifacts"), "the graphs")},
		{[]string{"data", "synth", "--out", filepath.Join(ckpts, "p.jsonl")}, in("data", filepath.Join(ckpts, "p.jsonl"), "the problems", "problems.jsonl")},
	} {
		before := entries(t, root)
		var stderr bytes.Buffer
		code := run(context.Background(), tc.args, &cliEnv{stdout: io.Discard, stderr: &stderr})
		require.Equal(t, exitUsage, code, "%v: %s", tc.args, stderr.String())
		require.Equal(t, tc.want, stderr.String(), "%v", tc.args)
		require.Equal(t, before, entries(t, root), "nothing written: %v", tc.args)
	}
}

// TestOutInTensorBoardRefused: an eval or export --out that is or lies
// in a run's tensorboard/ (train's or sft's --tensorboard events) was
// taken (exit 0), and the run's --fresh then moved it aside into
// previous-* with the events, as it does a checkpoints/ that --out is
// refused in. Refused alike before anything is written (exit 2); a
// directory named tensorboard of no run's is not.
func TestOutInTensorBoardRefused(t *testing.T) {
	t.Setenv("SPIRAL_CACHE_DIR", t.TempDir())
	root, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	writeFakeRun(t, root)
	ckpt := filepath.Join(root, "run", "checkpoints", "ckpt-000050")
	tb := filepath.Join(root, "run", "tensorboard")
	sftTB := filepath.Join(root, "sft", "tensorboard")
	for _, d := range []string{tb, sftTB, filepath.Join(root, "other", "tensorboard")} {
		require.NoError(t, os.MkdirAll(d, 0o755))
	}
	require.NoError(t, os.WriteFile(filepath.Join(root, "sft", "sft.jsonl"), []byte("{}\n"), 0o644))
	want := func(cmd, out, where, what, instead string) string {
		return "spiral " + cmd + ": --out " + out + " " + where + ", a training run's TensorBoard events (--tensorboard): the run's --fresh moves it aside into previous-*, " + what + " with it; give an --out outside it, such as --out " + instead + "\n"
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"eval", "--mode", "passk", "--out", tb}, want("eval", tb, "is "+tb, "the evaluation's report", filepath.Join(root, "run", "eval"))},
		{[]string{"eval", "--mode", "passk", "--out", filepath.Join(sftTB, "e")}, want("eval", filepath.Join(sftTB, "e"), "is in "+sftTB, "the evaluation's report", filepath.Join(root, "sft", "eval"))},
		{[]string{"export", "--format", "hf", "--checkpoint", ckpt, "--out", filepath.Join(tb, "hf")}, want("export", filepath.Join(tb, "hf"), "is in "+tb, "the export", filepath.Join(root, "run", "hf"))},
		{[]string{"export", "--format", "onnx", "--checkpoint", ckpt, "--out", filepath.Join(tb, "model.onnx")}, want("export", filepath.Join(tb, "model.onnx"), "is "+tb, "the export", filepath.Join(root, "run", "export", "model.onnx"))},
		{[]string{"plot", "--out", filepath.Join(tb, "p.png"), filepath.Join(root, "r.json")}, want("plot", filepath.Join(tb, "p.png"), "is in "+tb, "the plot", filepath.Join(root, "run", "p.png"))},
	} {
		before := entries(t, root)
		var stderr bytes.Buffer
		code := run(context.Background(), tc.args, &cliEnv{stdout: io.Discard, stderr: &stderr})
		require.Equal(t, exitUsage, code, "%v: %s", tc.args, stderr.String())
		require.Equal(t, tc.want, stderr.String(), "%v", tc.args)
		require.Equal(t, before, entries(t, root), "nothing written: %v", tc.args)
	}
	require.Empty(t, runTensorBoardOf(filepath.Join(root, "other", "tensorboard", "x")), "no run's")
}

// TestSFTRefusesForeignCheckpoints: an sft --out whose checkpoints/
// held another tool's files (a project directory's checkpoints/) was
// taken: sft saved its checkpoints beside them and, once its model was
// written, removed checkpoints/ whole (rl.RemoveSFTCheckpoints), the
// other tool's checkpoints with it. A checkpoints/ that is a file failed
// only at the first checkpoint, after --checkpoint-every steps. Both are
// refused before anything is written (exit 2), naming the file; --fresh
// moves such a checkpoints/ aside into previous-* and goes on.
func TestSFTRefusesForeignCheckpoints(t *testing.T) {
	t.Setenv("SPIRAL_CACHE_DIR", t.TempDir())
	dir, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	out := filepath.Join(dir, "project")
	ckpts := filepath.Join(out, "checkpoints")
	require.NoError(t, os.MkdirAll(filepath.Join(ckpts, "epoch-3"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(ckpts, "epoch-3", "pytorch_model.bin"), []byte("weights"), 0o644))
	args := []string{"sft", "--out", out, "--steps", "1", "--batch", "1", "--eval-every", "0", "--threads", "1", "--quiet"}
	var stderr bytes.Buffer
	code := run(context.Background(), args, &cliEnv{stdout: io.Discard, stderr: &stderr})
	require.Equal(t, exitUsage, code, stderr.String())
	require.Equal(t, "spiral sft: --out "+out+": "+ckpts+" holds "+filepath.Join(ckpts, "epoch-3")+", which is no spiral checkpoint: sft removes "+ckpts+" once its model is written, so it would go too; move it away, or give another --out (or --fresh, which moves "+ckpts+" aside into previous-*)\n", stderr.String())
	require.Equal(t, []string{"checkpoints", filepath.Join("checkpoints", "epoch-3"), filepath.Join("checkpoints", "epoch-3", "pytorch_model.bin")}, entries(t, out), "nothing written")

	file := filepath.Join(dir, "file")
	require.NoError(t, os.MkdirAll(file, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(file, "checkpoints"), []byte("notes"), 0o644))
	stderr.Reset()
	code = run(context.Background(), []string{"sft", "--out", file, "--steps", "1", "--quiet"}, &cliEnv{stdout: io.Discard, stderr: &stderr})
	require.Equal(t, exitUsage, code, stderr.String())
	require.Equal(t, "spiral sft: --out "+file+": "+filepath.Join(file, "checkpoints")+" is a file, where sft saves its checkpoints: move it away, or give another --out\n", stderr.String())
}

// TestRefuseUnwritableDiskFull: a --sync-dir in which no file can be
// made for a full disk (ENOSPC) or a used-up quota (EDQUOT) was a usage
// error (exit 2), as one the user may not write in is: the command is
// not wrong, the disk is. They are an error (exit 1) that says the disk
// is full; permissions and a read-only file system stay usage errors
// (another directory is the remedy). The errors are injected: no disk is
// filled.
func TestRefuseUnwritableDiskFull(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		errno syscall.Errno
		usage bool
		want  string
	}{
		{syscall.ENOSPC, false, "--sync-dir " + dir + ": cannot write in " + dir + ": no space left on device (the disk is full: free room on it, or give a --sync-dir on another)"},
		{syscall.EDQUOT, false, "--sync-dir " + dir + ": cannot write in " + dir + ": disk quota exceeded (the disk quota is used up: free room in it, or give a --sync-dir on another disk)"},
		{syscall.EACCES, true, "--sync-dir " + dir + ": cannot write in " + dir + ": permission denied"},
		{syscall.EROFS, true, "--sync-dir " + dir + ": cannot write in " + dir + ": read-only file system"},
	} {
		t.Run(tc.errno.Error(), func(t *testing.T) {
			create := func(d, pattern string) (*os.File, error) {
				return nil, &fs.PathError{Op: "open", Path: filepath.Join(d, pattern), Err: tc.errno}
			}
			err := refuseUnwritableBy("--sync-dir", dir, create)
			require.EqualError(t, err, tc.want)
			var ue usageError
			require.Equal(t, tc.usage, errors.As(err, &ue), "a usage error")
			require.ErrorIs(t, err, tc.errno)
		})
	}
}
