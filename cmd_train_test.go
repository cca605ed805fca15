package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/spiral-rl/spiral/data/synth"
	"github.com/spiral-rl/spiral/model/checkpoint"
	"github.com/spiral-rl/spiral/model/embedded"
	"github.com/spiral-rl/spiral/model/params"
	"github.com/spiral-rl/spiral/model/qwen3"
	"github.com/spiral-rl/spiral/model/tokenizer"
	"github.com/spiral-rl/spiral/rl"
	"github.com/spiral-rl/spiral/rollout/report"
)

// TestTrainRefusesEvalReport: a run into an --out holding an
// evaluation's rsa.json (eval --mode rsa --out there; a run's own comes
// with metrics.jsonl) is refused before anything is written, with or
// without --fresh: the run removed that report before its last step and
// wrote its final RSA report in its place, beside the evaluation's
// rsa.png. It goes on where the run does no final RSA, and in a run's
// own directory.
func TestTrainRefusesEvalReport(t *testing.T) {
	t.Setenv("SPIRAL_CACHE_DIR", t.TempDir())
	small := []string{"train", "--steps", "1", "--problems", "1", "--n1", "3", "--k", "2", "--n", "2", "--n2", "2",
		"--eval-problems", "1", "--eval-every", "0", "--quiet", "--threads", "1"}
	for _, tc := range []struct {
		name    string
		args    []string
		run     bool // a run's metrics.jsonl is there too
		refused bool
	}{
		{name: "an evaluation's report", refused: true},
		{name: "--fresh", args: []string{"--fresh"}, refused: true},
		{name: "no final RSA", args: []string{"--final-rsa-steps", "0"}},
		{name: "a run's own", run: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out")
			require.NoError(t, os.Mkdir(out, 0o755))
			report := []byte(`{"meta":{"mode":"rsa"}}` + "\n")
			require.NoError(t, os.WriteFile(filepath.Join(out, "rsa.json"), report, 0o644))
			if tc.run {
				require.NoError(t, os.WriteFile(filepath.Join(out, "metrics.jsonl"), nil, 0o644))
			}
			args := append(append(append([]string{}, small...), "--out", out, "--final-rsa-steps", "1"), tc.args...)
			var stderr bytes.Buffer
			code := run(context.Background(), args, &cliEnv{stdout: io.Discard, stderr: &stderr})
			if !tc.refused {
				require.Equal(t, 0, code, stderr.String())
				return
			}
			require.Equal(t, exitUsage, code, stderr.String())
			require.Contains(t, stderr.String(), "--out "+out+" holds rsa.json but no metrics.jsonl: an evaluation's report (spiral eval --mode rsa), not a training run's, which the run's final RSA evaluation would replace; give another --out (or --final-rsa-steps 0)\n")
			b, err := os.ReadFile(filepath.Join(out, "rsa.json"))
			require.NoError(t, err)
			require.Equal(t, report, b)
			entries, err := os.ReadDir(out)
			require.NoError(t, err)
			require.Len(t, entries, 1, "nothing new in --out")
		})
	}
}

// TestCompareTrainFinalRSA: train's final RSA report records the
// settings it sampled and graded with in meta.extra, as eval's reports
// do, so that spiral compare holds it against an eval report of the
// same problems evaluated otherwise: it recorded none, and compare
// took a training's rsa.json at --temperature 1 and an eval's at 0.6
// as alike.
func TestCompareTrainFinalRSA(t *testing.T) {
	t.Setenv("SPIRAL_CACHE_DIR", t.TempDir())
	dir := t.TempDir()
	runDir, evalDir := filepath.Join(dir, "run"), filepath.Join(dir, "eval")
	var stderr bytes.Buffer
	code := run(context.Background(), []string{"train", "--steps", "1", "--problems", "1", "--n1", "3", "--k", "2", "--n", "2", "--n2", "2",
		"--eval-problems", "1", "--eval-every", "0", "--final-rsa-steps", "1", "--max-new-tokens", "8",
		"--quiet", "--threads", "1", "--out", runDir}, &cliEnv{stdout: io.Discard, stderr: &stderr})
	require.Equal(t, 0, code, stderr.String())
	var rep report.RSA
	require.NoError(t, report.ReadJSON(filepath.Join(runDir, "rsa.json"), &rep))
	require.Equal(t, map[string]string{"temperature": "1", "top_p": "1", "top_k": "0", "max_new_tokens": "8",
		"reward_rule": rep.Meta.Extra["reward_rule"], "skipped_problems": "0", "templates": rep.Meta.Extra["templates"]}, rep.Meta.Extra)
	require.NotEmpty(t, rep.Meta.Extra["reward_rule"])
	require.Len(t, rep.Meta.Extra["templates"], 32)

	for _, tc := range []struct {
		label string
		code  int
		want  string
	}{
		{"spiral", exitFailure, fmt.Sprintf("spiral compare: %s and %s, seeds of label spiral (averaged point by point), were evaluated with other settings: temperature 1 and 0.6 (eval's --temperature): evaluate a label's seeds alike, or give them other --label\n",
			filepath.Join(runDir, "rsa.json"), filepath.Join(evalDir, "rsa.json"))},
		{"other", 0, fmt.Sprintf("spiral: warning: reports evaluated with different settings, compared anyway: a ratio or gain between them mixes the models' difference with the settings':\n  %s against %s (rsa reports): temperature 0.6 against 1 (eval's --temperature)\n",
			filepath.Join(evalDir, "rsa.json"), filepath.Join(runDir, "rsa.json"))},
	} {
		t.Run(tc.label, func(t *testing.T) {
			stderr.Reset()
			code := run(context.Background(), []string{"eval", "--mode", "rsa", "--checkpoint", filepath.Join(runDir, "checkpoints"), "--limit", "1",
				"--rsa-steps", "1", "--population", "8", "--subset", "4", "--max-new-tokens", "8", "--temperature", "0.6", "--seed", "7",
				"--label", tc.label, "--quiet", "--threads", "1", "--out", evalDir}, &cliEnv{stdout: io.Discard, stderr: &stderr})
			require.Equal(t, 0, code, stderr.String())
			stderr.Reset()
			code = run(context.Background(), []string{"compare", "--out", filepath.Join(dir, "cmp-"+tc.label), filepath.Join(runDir, "rsa.json"), filepath.Join(evalDir, "rsa.json")},
				&cliEnv{stdout: io.Discard, stderr: &stderr})
			require.Equal(t, tc.code, code, stderr.String())
			require.Equal(t, tc.want, stderr.String())
		})
	}
}

// TestTrainFinishesAKilledSFTCommit: train into the --out of an sft run
// killed after its commit (sft.jsonl the very file of sft.jsonl.partial,
// the run's checkpoints and the replaced run's events set aside in
// tensorboard-finished/ not removed yet) finishes that run's removals
// first, as sft and tensorboard do there, and trains: it was refused
// ("holds checkpoints of spiral sft, not of train: use another --out, or
// --fresh", exit 1), and with --fresh moved the finished run's
// checkpoints aside and trained beside its sft.jsonl.partial, whose
// removal the next sft or tensorboard there then finished by removing
// the checkpoints, the train run's.
func TestTrainFinishesAKilledSFTCommit(t *testing.T) {
	t.Setenv("SPIRAL_CACHE_DIR", t.TempDir())
	for _, fresh := range []bool{false, true} {
		t.Run(fmt.Sprintf("fresh=%v", fresh), func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "run")
			log := filepath.Join(dir, rl.SFTLogFile)
			require.NoError(t, os.MkdirAll(dir, 0o755))
			require.NoError(t, os.WriteFile(log+rl.PartialSuffix, []byte(`{"step":1,"loss":0.5,"seconds":1}`+"\n"), 0o644))
			require.NoError(t, os.Link(log+rl.PartialSuffix, log))
			w, err := params.NewStore([]params.Spec{{Name: "a", Shape: []int64{2}}})
			require.NoError(t, err)
			settings, err := json.Marshal(rl.SFTSettings{Model: "m", ModelID: "id-m", SFT: &rl.SFTConfig{Batch: 2}})
			require.NoError(t, err)
			_, err = checkpoint.Save(filepath.Join(dir, rl.CheckpointsDir), w, nil, checkpoint.State{Step: 3, Config: settings}, checkpoint.Options{})
			require.NoError(t, err)
			require.NoError(t, os.MkdirAll(filepath.Join(dir, rl.SFTFinishedTensorBoardDir), 0o755))

			args := []string{"train", "--steps", "1", "--problems", "1", "--n1", "3", "--k", "2", "--n", "2", "--n2", "2",
				"--eval-every", "0", "--final-rsa-steps", "0", "--max-new-tokens", "8", "--quiet", "--threads", "1", "--out", dir}
			if fresh {
				args = append(args, "--fresh")
			}
			var stderr bytes.Buffer
			require.Zero(t, run(context.Background(), args, &cliEnv{stdout: io.Discard, stderr: &stderr}), stderr.String())
			require.NoFileExists(t, log+rl.PartialSuffix)
			require.NoDirExists(t, filepath.Join(dir, rl.SFTFinishedTensorBoardDir))
			require.NoDirExists(t, filepath.Join(dir, rl.CheckpointsDir, "ckpt-000003"))
			require.DirExists(t, filepath.Join(dir, rl.CheckpointsDir, "ckpt-000001"))
			require.FileExists(t, log)
			matches, err := filepath.Glob(filepath.Join(dir, "previous-*"))
			require.NoError(t, err)
			require.Empty(t, matches, "nothing of the finished sft run is left to move aside")
			// The run's checkpoints stay when its logs are converted.
			require.Zero(t, run(context.Background(), []string{"tensorboard", dir}, &cliEnv{stdout: io.Discard, stderr: &stderr}), stderr.String())
			require.DirExists(t, filepath.Join(dir, rl.CheckpointsDir, "ckpt-000001"))
		})
	}
}

// TestRefuseEvalReportOfARunSetAside: an rsa.json in --out without a
// metrics.jsonl is an evaluation's report, refused; but one whose run's
// metrics.jsonl a train --fresh killed while it set the run aside left in
// .previous-pending (which the run's lock puts back) is the run's own:
// refused, every rerun stopped there before the lock could put it back.
func TestRefuseEvalReportOfARunSetAside(t *testing.T) {
	for _, tc := range []struct {
		name    string
		files   []string
		refused bool
	}{
		{name: "an evaluation's report", files: []string{rl.FinalRSAFile}, refused: true},
		{name: "a run's", files: []string{rl.FinalRSAFile, rl.MetricsFile}},
		{name: "a run's, its log set aside by a killed --fresh", files: []string{rl.FinalRSAFile, filepath.Join(".previous-pending", rl.MetricsFile)}},
		{name: "no report", files: []string{rl.MetricsFile}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for _, f := range tc.files {
				require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, f)), 0o777))
				require.NoError(t, os.WriteFile(filepath.Join(dir, f), []byte("{}\n"), 0o666))
			}
			err := refuseEvalReport(dir)
			if !tc.refused {
				require.NoError(t, err)
				return
			}
			require.EqualError(t, err, "--out "+dir+" holds rsa.json but no metrics.jsonl: an evaluation's report (spiral eval --mode rsa), not a training run's, which the run's final RSA evaluation would replace; give another --out (or --final-rsa-steps 0)")
		})
	}
}

// TestTrainNotesUnpackedRows: train with --pack-prompts (the default)
// on a model that cannot train packed rows (an export without
// position_ids: model.Executor.PackedRows) trains every trace in a row
// of its own, and says so once at the start, in bench train --group's
// words; it did so without a word. --pack-prompts=false asks for no
// packing and gets no note, nor does an --algo that trains no
// aggregation traces (grpo, search-only: a question's traces, whose
// completions are long against its prompt), which it got too.
func TestTrainNotesUnpackedRows(t *testing.T) {
	cache := t.TempDir()
	t.Setenv("SPIRAL_CACHE_DIR", cache)
	dir := t.TempDir()
	c := qwen3.Tiny()
	c.PositionsFromMask = true
	require.NoError(t, qwen3.WriteDir(dir, c, 17))
	embeddedDir, err := embedded.Extract(cache)
	require.NoError(t, err)
	tok, err := os.ReadFile(filepath.Join(embeddedDir, "tokenizer.json"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "tokenizer.json"), tok, 0o644))
	m := filepath.Join(dir, "model.onnx")
	note := "spiral: note: --pack-prompts: " + m + " cannot train packed rows (the model reads no position_ids, so the positions of a packed row's completions cannot restart after its prompt): each trace trains in a row of its own, as with --pack-prompts=false\n"
	pipeline := []string{"--n1", "3", "--k", "2", "--n", "2", "--n2", "2"}
	for _, c := range []struct {
		algo  string
		pack  bool
		shape []string
		notes int
	}{
		{rl.AlgoSpiral, true, pipeline, 1},
		{rl.AlgoSpiral, false, pipeline, 0},
		{rl.AlgoAggOnly, true, pipeline, 1},
		{rl.AlgoSearchOnly, true, pipeline, 0},
		{rl.AlgoGRPO, true, []string{"--group", "2"}, 0},
	} {
		t.Run(fmt.Sprint(c.algo, c.pack), func(t *testing.T) {
			var stderr bytes.Buffer
			args := append([]string{"train", "--model", m, "--algo", c.algo, "--steps", "1", "--problems", "1"}, c.shape...)
			code := run(context.Background(), append(args, "--eval-every", "0", "--final-rsa-steps", "0", "--max-new-tokens", "8", "--quiet", "--threads", "1", "--out", filepath.Join(t.TempDir(), "run"),
				"--pack-prompts="+fmt.Sprint(c.pack)), &cliEnv{stdout: io.Discard, stderr: &stderr})
			require.Equal(t, 0, code, stderr.String())
			if c.notes > 0 {
				require.Contains(t, stderr.String(), note)
			}
			require.Equal(t, c.notes, strings.Count(stderr.String(), "cannot train packed rows"), stderr.String())
		})
	}
}

// TestTrainFinalRSANamesAModelGivenFromItsDirectory: train's final RSA
// report names a model given from its own directory (--model . or
// model.onnx) as eval's reports do, with that directory's name ahead: it
// named it "model.onnx@run/ckpt-000001" where eval of the same
// checkpoint says "sft-a/model.onnx@run/ckpt-000001", so compare took
// the two for other models.
func TestTrainFinalRSANamesAModelGivenFromItsDirectory(t *testing.T) {
	t.Setenv("SPIRAL_CACHE_DIR", t.TempDir())
	src := filepath.Dir(embeddedModelPath(t))
	dir := t.TempDir()
	for _, f := range []string{"model.onnx", "config.json", "tokenizer.json"} {
		b, err := os.ReadFile(filepath.Join(src, f))
		require.NoError(t, err)
		require.NoError(t, os.MkdirAll(filepath.Join(dir, "sft-a"), 0o777))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "sft-a", f), b, 0o644))
	}
	t.Chdir(filepath.Join(dir, "sft-a"))
	for _, tc := range []struct{ model, run string }{{".", "run-dot"}, {"model.onnx", "run-file"}} {
		runDir := filepath.Join(dir, tc.run)
		var stderr bytes.Buffer
		code := run(context.Background(), []string{"train", "--model", tc.model, "--steps", "1", "--problems", "1", "--n1", "3", "--k", "2", "--n", "2", "--n2", "2",
			"--eval-problems", "1", "--eval-every", "0", "--final-rsa-steps", "1", "--max-new-tokens", "8",
			"--quiet", "--threads", "1", "--out", runDir}, &cliEnv{stdout: io.Discard, stderr: &stderr})
		require.Equal(t, 0, code, stderr.String())
		var rep report.RSA
		require.NoError(t, report.ReadJSON(filepath.Join(runDir, "rsa.json"), &rep))
		require.Equal(t, "sft-a/model.onnx@"+tc.run+"/ckpt-000001", rep.Meta.Model, "--model %s", tc.model)
	}
}

// TestTrainRefusesAnotherRunBeforeTheEngine: a rerun with --engine
// openai into the --out of a run of another data set or LoRA setting is
// refused before the serving engine is waited for: it waited up to
// --engine-timeout for a server still loading its model (answering 503,
// here), minutes with a real one, before the refusal. So is one with
// another --tokenizer (a setting, but known before the engine: the
// prompts sent to it as token ids are tokenized by spiral), which goes on
// to the engine with --override, and one with another --seed or --lr,
// settings that do not depend on the context the engine serves: they
// were compared only after the wait, so an engine that never answered
// ended the rerun with its error, the settings unsaid. The run's data
// file moved is the run's, by the problems that fit as many as the run's
// did, and goes on to the engine. Each refusal exits 2, the flags'
// mistake (it exited 1); the engine's error still exits 1.
func TestTrainRefusesAnotherRunBeforeTheEngine(t *testing.T) {
	t.Setenv("SPIRAL_CACHE_DIR", t.TempDir())
	var asked atomic.Int32
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		asked.Add(1)
		http.Error(w, "loading the model", http.StatusServiceUnavailable)
	}))
	defer hs.Close()
	dir := t.TempDir()
	train, other, moved := filepath.Join(dir, "train.jsonl"), filepath.Join(dir, "other.jsonl"), filepath.Join(dir, "moved.jsonl")
	problems := []byte(`{"problem": "Compute 1+1", "answer": "2"}` + "\n" + `{"problem": "Compute 2+2", "answer": "4"}` + "\n")
	require.NoError(t, os.WriteFile(train, problems, 0o644))
	require.NoError(t, os.WriteFile(moved, problems, 0o644))
	require.NoError(t, os.WriteFile(other, []byte(`{"problem": "Compute 1+2", "answer": "3"}`+"\n"+`{"problem": "Compute 2+3", "answer": "5"}`+"\n"), 0o644))
	otherTok := reversedTokenizer(t, filepath.Join(dir, "other-tokenizer"))
	runDir := filepath.Join(dir, "run")
	small := []string{"train", "--out", runDir, "--steps", "2", "--problems", "1", "--n1", "2", "--k", "1", "--n", "2", "--n2", "2",
		"--max-new-tokens", "4", "--eval-every", "0", "--final-rsa-steps", "0", "--threads", "1", "--quiet"}
	var stderr bytes.Buffer
	require.Zero(t, run(context.Background(), append(append([]string{}, small...), "--data", train, "--steps", "1"), &cliEnv{stdout: io.Discard, stderr: &stderr}), stderr.String())
	engine := []string{"--engine", "openai", "--base-url", hs.URL + "/v1", "--served-model", "m", "--engine-sync", "sglang", "--sync-dir", filepath.Join(dir, "sync")}
	for _, tc := range []struct {
		name    string
		args    []string
		timeout string
		want    []string
		engine  bool // waited for the engine
	}{
		{"another data set", []string{"--data", other}, "60s", []string{" on " + train + " (spiral); this one is ", " on " + other + " (spiral): use another --out, or --fresh\n"}, false},
		{"another LoRA setting", []string{"--data", train, "--lora-rank", "2", "--engine-sync", "vllm-lora"}, "60s", []string{runDir + " holds a run with full fine-tuning; this one is "}, false},
		{"the data file moved", []string{"--data", moved}, "1s", []string{"rollout: engine: " + hs.URL + "/v1/models"}, true},
		{"another tokenizer", []string{"--data", train, "--tokenizer", otherTok}, "60s",
			[]string{runDir + " holds a run with other settings: tokenizer (--tokenizer): ", "rerun with --override"}, false},
		{"another tokenizer, --override", []string{"--data", train, "--tokenizer", otherTok, "--override"}, "1s", []string{"rollout: engine: " + hs.URL + "/v1/models"}, true},
		{"another --seed", []string{"--data", train, "--seed", "7"}, "60s",
			[]string{runDir + " holds a run with other settings: rl.seed (--seed): 1 -> 7; rerun with --override"}, false},
		{"another --lr", []string{"--data", train, "--lr", "1e-3"}, "60s",
			[]string{runDir + " holds a run with other settings: schedule.peak_lr (--lr): 0.0001 -> 0.001; rerun with --override"}, false},
		{"another --seed, --override", []string{"--data", train, "--seed", "7", "--override"}, "1s", []string{"rollout: engine: " + hs.URL + "/v1/models"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			asked.Store(0)
			stderr.Reset()
			args := append(append(append(append([]string{}, small...), engine...), "--engine-timeout", tc.timeout), tc.args...)
			start := time.Now()
			code := run(context.Background(), args, &cliEnv{stdout: io.Discard, stderr: &stderr})
			if tc.engine {
				require.Equal(t, exitFailure, code, stderr.String())
			} else {
				require.Equal(t, exitUsage, code, stderr.String())
			}
			for _, want := range tc.want {
				require.Contains(t, stderr.String(), want)
			}
			if !tc.engine {
				require.Less(t, time.Since(start), 30*time.Second, "refused without waiting for the engine")
				require.Zero(t, asked.Load(), "the engine was not asked")
			} else {
				require.NotZero(t, asked.Load())
			}
		})
	}
}

// reversedTokenizer writes into dir a tokenizer.json of the synthetic
// task's characters at other ids than the embedded model's (the alphabet
// reversed) and returns dir: the same text, other token ids.
func reversedTokenizer(t *testing.T, dir string) string {
	t.Helper()
	alphabet := []rune(synth.Alphabet())
	slices.Reverse(alphabet)
	tj, err := tokenizer.BuildCharTokenizerJSON(alphabet)
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, tokenizer.TokenizerFile), tj, 0o644))
	return dir
}

// thinkingTemplate writes into dir a copy of the tokenizer.json in from
// with a chat_template.jinja whose generation prompt opens a <think>
// block (Qwen3-*-Thinking-2507's), which spiral's prompts then end with,
// and returns dir.
func thinkingTemplate(t *testing.T, from, dir string) string {
	t.Helper()
	tj, err := os.ReadFile(filepath.Join(from, tokenizer.TokenizerFile))
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, tokenizer.TokenizerFile), tj, 0o644))
	const tmpl = "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}{% endfor %}" +
		"{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n<think>\\n' }}{% endif %}"
	require.NoError(t, os.WriteFile(filepath.Join(dir, tokenizer.TemplateFile), []byte(tmpl), 0o644))
	return dir
}

// TestTrainRefusesOtherSettingsBeforeThePolicy: a rerun with other
// settings (without --override) or on its data file edited in place is
// refused before the policy is loaded, which reads the model's weights
// and builds its artifacts (minutes, for a real model): it was refused
// only by the resume, after. The run's artifacts path is a file here, so
// that loading the policy fails: the refusal must come first; with
// --override the rerun goes on to the policy. Another --tokenizer (the
// task's characters at other ids) is such a setting: it resumed without
// a word, training the run's weights on ids that meant other text; so
// is its tokenizer.json beside a chat template whose generation prompt
// opens <think> (the prompts' ids differ); the model's own tokenizer
// given by --tokenizer is the run's. A settings refusal exits 2, as the
// command-line mistake it is (the flags contradict the run in --out): it
// exited 1, as a failure. So does the data file edited in place, whose
// way on is a command line too (--override, another --out or --fresh),
// as the held-out file's or the model's edited in place and eval's
// saved problems of other texts are.
func TestTrainRefusesOtherSettingsBeforeThePolicy(t *testing.T) {
	t.Setenv("SPIRAL_CACHE_DIR", t.TempDir())
	dir := t.TempDir()
	train := filepath.Join(dir, "train.jsonl")
	problems := `{"problem": "Compute 1+1", "answer": "2"}` + "\n" + `{"problem": "Compute 2+2", "answer": "4"}` + "\n"
	otherTok := reversedTokenizer(t, filepath.Join(dir, "other-tokenizer"))
	embeddedDir, err := embedded.Extract(os.Getenv("SPIRAL_CACHE_DIR"))
	require.NoError(t, err)
	otherTemplate := thinkingTemplate(t, embeddedDir, filepath.Join(dir, "other-template"))
	runDir := filepath.Join(dir, "run")
	args := []string{"train", "--out", runDir, "--data", train, "--steps", "1", "--problems", "1", "--n1", "2", "--k", "2", "--n", "1", "--n2", "2",
		"--max-new-tokens", "4", "--eval-every", "0", "--final-rsa-steps", "0", "--threads", "1", "--quiet"}
	for _, tc := range []struct {
		name     string
		args     []string
		problems string
		code     int
		want     string
	}{
		{"other --lr", []string{"--lr", "1e-3"}, problems, exitUsage, "spiral train: " + runDir + " holds a run with other settings: schedule.peak_lr (--lr): 0.0001 -> 0.001; rerun with --override to continue with the new ones, or use another --out or --fresh\n"},
		{"the data edited", nil, problems + `{"problem": "Compute 3+3", "answer": "6"}` + "\n", exitUsage,
			"the run drew from 2 usable problems and " + train + " now has 3: restore the file, rerun with --override to go on from a new epoch of it, or use another --out or --fresh\n"},
		{"the data edited, as many rows", nil, `{"problem": "Compute 1+1", "answer": "2"}` + "\n" + `{"problem": "Compute 3+3", "answer": "6"}` + "\n", exitUsage,
			"the run drew from other problems than the 2 usable ones " + train + " now holds (the file changed): restore the file, rerun with --override"},
		{"--override", []string{"--lr", "1e-3", "--override"}, problems, exitFailure, "spiral train: model: artifacts: mkdir " + filepath.Join(runDir, rl.ArtifactsDir) + ": not a directory\n"},
		{"another --tokenizer", []string{"--tokenizer", otherTok}, problems, exitUsage, "spiral train: " + runDir + " holds a run with other settings: tokenizer (--tokenizer): "},
		{"the model's tokenizer given", []string{"--tokenizer", embeddedDir}, problems, exitFailure, "spiral train: model: artifacts: mkdir "},
		{"its tokenizer.json with another chat template", []string{"--tokenizer", otherTemplate}, problems, exitUsage, "spiral train: " + runDir + " holds a run with other settings: tokenizer (--tokenizer): "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.NoError(t, os.RemoveAll(runDir))
			require.NoError(t, os.WriteFile(train, []byte(problems), 0o644))
			var stderr bytes.Buffer
			require.Zero(t, run(context.Background(), args, &cliEnv{stdout: io.Discard, stderr: &stderr}), stderr.String())
			artifacts := filepath.Join(runDir, rl.ArtifactsDir)
			require.NoError(t, os.RemoveAll(artifacts))
			require.NoError(t, os.WriteFile(artifacts, []byte("not a directory"), 0o644))
			require.NoError(t, os.WriteFile(train, []byte(tc.problems), 0o644))
			stderr.Reset()
			rerun := append(append(append([]string{}, args...), "--steps", "2"), tc.args...)
			require.Equal(t, tc.code, run(context.Background(), rerun, &cliEnv{stdout: io.Discard, stderr: &stderr}), stderr.String())
			require.Contains(t, stderr.String(), tc.want)
		})
	}
}

// TestRerunComparesTheTemplatesRead: a rerun compares the prompt
// templates its algorithm reads. GRPO without a final RSA renders no
// aggregation prompt (train warns that it ignores --aggregate-template):
// a rerun with another is no settings difference, where the fingerprint
// of both templates refused it; another search template is, and so is
// another aggregation template under SPIRAL, each named by its flag.
func TestRerunComparesTheTemplatesRead(t *testing.T) {
	t.Setenv("SPIRAL_CACHE_DIR", t.TempDir())
	dir := t.TempDir()
	train := filepath.Join(dir, "train.jsonl")
	require.NoError(t, os.WriteFile(train, []byte(`{"problem": "Compute 1+1", "answer": "2"}`+"\n"+`{"problem": "Compute 2+2", "answer": "4"}`+"\n"), 0o644))
	search, aggregate := filepath.Join(dir, "search.txt"), filepath.Join(dir, "aggregate.txt")
	require.NoError(t, os.WriteFile(search, []byte("{{.Problem}} =\n"), 0o644))
	require.NoError(t, os.WriteFile(aggregate, []byte("{{.Problem}}\n{{range .Candidates}}{{.Number}}: {{.Text}}\n{{end}}=\n"), 0o644))
	runDir := filepath.Join(dir, "run")
	for _, tc := range []struct {
		name, algo string
		rerun      []string
		want       string // "": the rerun resumes
	}{
		{"grpo, another aggregation template", "grpo", []string{"--aggregate-template", aggregate}, ""},
		{"grpo, another search template", "grpo", []string{"--search-template", search},
			"holds a run with other settings: sampling.search_template (--search-template): "},
		{"spiral, another aggregation template", "spiral", []string{"--aggregate-template", aggregate},
			"holds a run with other settings: sampling.aggregate_template (--aggregate-template): "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.NoError(t, os.RemoveAll(runDir))
			args := []string{"train", "--algo", tc.algo, "--out", runDir, "--data", train, "--steps", "1", "--problems", "1", "--max-new-tokens", "4",
				"--eval-every", "0", "--final-rsa-steps", "0", "--threads", "1", "--quiet"}
			if tc.algo == "grpo" {
				args = append(args, "--group", "2")
			} else {
				args = append(args, "--n1", "2", "--k", "2", "--n", "1", "--n2", "2")
			}
			var stderr bytes.Buffer
			require.Zero(t, run(context.Background(), args, &cliEnv{stdout: io.Discard, stderr: &stderr}), stderr.String())
			stderr.Reset()
			rerun := append(append(slices.Clone(args), "--steps", "2"), tc.rerun...)
			code := run(context.Background(), rerun, &cliEnv{stdout: io.Discard, stderr: &stderr})
			if tc.want == "" {
				require.Zero(t, code, stderr.String())
				return
			}
			require.Equal(t, exitUsage, code, stderr.String())
			require.Contains(t, stderr.String(), tc.want)
		})
	}
}
