package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/spiral-rl/spiral/data"
	"github.com/spiral-rl/spiral/model"
	"github.com/spiral-rl/spiral/model/embedded"
	"github.com/spiral-rl/spiral/rl"
	"github.com/spiral-rl/spiral/rollout"
	"github.com/spiral-rl/spiral/rollout/report"
)

// TestSaveEvalFailedCommitKeepsTraces: an evaluation whose outputs' stage
// fails to commit before it moves anything (here the stage holds a file
// the commit does not name, which the plot put there; a full disk
// refusing the commit's .commit record fails there too) keeps its traces
// as MODE.traces.jsonl.partial, and leaves no report, plot or stage.
func TestSaveEvalFailedCommitKeepsTraces(t *testing.T) {
	out := t.TempDir()
	traces, err := report.NewTraceWriter(filepath.Join(out, "passk.traces.jsonl"), []data.Problem{{ID: "a", Answer: "7"}})
	require.NoError(t, err)
	defer traces.Abort()
	require.NoError(t, traces.Write([]rollout.TracedTrace{{Trace: rollout.Trace{Text: "x=7"}}}))
	plot := func(path string) error {
		if err := os.WriteFile(path, []byte("png"), 0o666); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(filepath.Dir(path), "stray"), nil, 0o666)
	}
	err = saveEval(out, "passk", traces, map[string]int{"k": 1}, plot, io.Discard)
	require.ErrorContains(t, err, "holds stray, which the commit does not name")
	b, err := os.ReadFile(filepath.Join(out, "passk.traces.jsonl.partial"))
	require.NoError(t, err, "the traces")
	require.Contains(t, string(b), `"text":"x=7"`)
	names := dirNames(t, out)
	require.Equal(t, []string{"passk.traces.jsonl.partial"}, names)
}

// TestSaveEvalRemovesStaleTraces: an evaluation without --traces removes,
// once its report is in place, the traces an earlier one left in --out,
// finished or (interrupted) .partial, which would sit beside its report
// as if they were its own, and says so on stdout. The .partial file of an
// interrupted --traces evaluation stayed beside the new report.
func TestSaveEvalRemovesStaleTraces(t *testing.T) {
	for _, tc := range []struct {
		name  string
		stale []string
	}{
		{"none", nil},
		{"finished", []string{"passk.traces.jsonl"}},
		{"interrupted", []string{"passk.traces.jsonl.partial"}},
		{"both", []string{"passk.traces.jsonl", "passk.traces.jsonl.partial"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := t.TempDir()
			want := ""
			for _, n := range tc.stale {
				require.NoError(t, os.WriteFile(filepath.Join(out, n), []byte("{}\n"), 0o666))
				what := "an earlier evaluation's"
				if strings.HasSuffix(n, rl.PartialSuffix) {
					what = "an interrupted earlier evaluation's unfinished traces"
				}
				want += "removed " + filepath.Join(out, n) + ", " + what + " (--traces writes this one's)\n"
			}
			plot := func(path string) error { return os.WriteFile(path, []byte("png"), 0o666) }
			var stdout strings.Builder
			require.NoError(t, saveEval(out, "passk", nil, map[string]int{"k": 1}, plot, &stdout))
			require.Equal(t, want, stdout.String())
			names := dirNames(t, out)
			require.Equal(t, []string{"passk.json", "passk.png"}, names)
		})
	}
}

// TestCutCounterNote: eval's note counts the traces cut at
// --max-new-tokens, and apart from them those an engine cut before a
// padding id it sampled, which reached no limit (raising it would not
// help them); none cut, no note.
func TestCutCounterNote(t *testing.T) {
	traces := func(fs ...rollout.FinishReason) []rollout.TracedTrace {
		var out []rollout.TracedTrace
		for _, f := range fs {
			out = append(out, rollout.TracedTrace{Trace: rollout.Trace{Completion: rollout.Completion{Finish: f}}})
		}
		return out
	}
	for _, tc := range []struct {
		name     string
		finishes []rollout.FinishReason
		want     string
	}{
		{"none cut", []rollout.FinishReason{rollout.FinishStop, rollout.FinishStop}, ""},
		{"cut at the limit", []rollout.FinishReason{rollout.FinishStop, rollout.FinishLength, rollout.FinishLength},
			"spiral: note: 2 of the 3 traces were cut at --max-new-tokens 16; " + rl.RewardRule{}.CutTraces() + "\n"},
		{"cut before a padding id", []rollout.FinishReason{rollout.FinishStop, rollout.FinishPadding, rollout.FinishStop},
			"spiral: note: 1 of the 3 traces was cut before a token id past the tokenizer's that the engine sampled (one of the model's padding logits, not --max-new-tokens 16), and graded as a cut trace\n"},
		{"both", []rollout.FinishReason{rollout.FinishLength, rollout.FinishPadding, rollout.FinishPadding, rollout.FinishStop},
			"spiral: note: 1 of the 4 traces was cut at --max-new-tokens 16; " + rl.RewardRule{}.CutTraces() + "\n" +
				"spiral: note: 2 of the 4 traces were cut before a token id past the tokenizer's that the engine sampled (one of the model's padding logits, not --max-new-tokens 16), and graded as cut traces\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var c cutCounter
			require.NoError(t, c.write(traces(tc.finishes...)))
			var w strings.Builder
			c.note(&w, 16, rl.RewardRule{})
			require.Equal(t, tc.want, w.String())
		})
	}
}

// TestEvalNotesAReplacedReport: an evaluation into an --out holding a
// report of its mode for another model, checkpoint or label replaced it
// without a word of it (exit 0), so the user learnt only
// from the report that the earlier model's was gone. It is still replaced
// (make study and users re-evaluate into the same directories), with a
// note naming the report's model and label and this evaluation's; a
// re-evaluation of the same model and label is not noted.
func TestEvalNotesAReplacedReport(t *testing.T) {
	t.Setenv("SPIRAL_CACHE_DIR", t.TempDir())
	dir := t.TempDir()
	runDir := filepath.Join(dir, "run")
	trainTinyLoRA(t, runDir)
	out := filepath.Join(dir, "eval")
	path := filepath.Join(out, "passk.json")
	ckpt := "embedded@run/ckpt-000001" // the checkpoint, named with its run directory's name
	for _, tc := range []struct {
		name string
		args []string // besides the evaluation's
		want string   // the note, "" for none
	}{
		{"first", nil, ""},
		{"the same model", nil, ""},
		{"another label", []string{"--label", "base"}, "spiral: note: " + path + ", the passk report of embedded, will be replaced by this evaluation's, of embedded (label base)\n"},
		{"the same label", []string{"--label", "base"}, ""},
		{"a checkpoint", []string{"--checkpoint", runDir}, "spiral: note: " + path + ", the passk report of embedded (label base), will be replaced by this evaluation's, of " + ckpt + "\n"},
		{"no report", nil, "spiral: note: " + path + ", which this evaluation will replace, is no report that names its model (invalid character 'x' looking for beginning of value)\n"},
	} {
		if tc.name == "no report" {
			require.NoError(t, os.WriteFile(path, []byte("x"), 0o644))
		}
		var stderr bytes.Buffer
		args := append([]string{"eval", "--mode", "passk", "--limit", "1", "--samples", "1", "--max-new-tokens", "4", "--quiet", "--threads", "1", "--out", out}, tc.args...)
		require.Zero(t, run(context.Background(), args, &cliEnv{stdout: io.Discard, stderr: &stderr}), stderr.String())
		var notes strings.Builder // the others: the traces cut at 4 tokens
		for _, line := range strings.SplitAfter(stderr.String(), "\n") {
			if strings.Contains(line, path) {
				notes.WriteString(line)
			}
		}
		require.Equal(t, tc.want, notes.String(), tc.name)
	}
}

// TestEvalNamesAModelGivenFromItsDirectory: a model given from its own
// directory (--model . or model.onnx) is named in the report with that
// directory's name. Both were named "model.onnx", so two models each
// evaluated from its directory were one model to compare (averaged as
// its seeds, their default labels alike) and to eval's note on the
// report it replaces (none: "the same model").
func TestEvalNamesAModelGivenFromItsDirectory(t *testing.T) {
	t.Setenv("SPIRAL_CACHE_DIR", t.TempDir())
	src := filepath.Dir(embeddedModelPath(t))
	dir := t.TempDir()
	for _, m := range []string{"sft-a", "sft-b"} {
		for _, f := range []string{"model.onnx", "config.json", "tokenizer.json"} {
			b, err := os.ReadFile(filepath.Join(src, f))
			require.NoError(t, err)
			require.NoError(t, os.MkdirAll(filepath.Join(dir, m), 0o777))
			require.NoError(t, os.WriteFile(filepath.Join(dir, m, f), b, 0o644))
		}
	}
	out := filepath.Join(dir, "eval")
	path := filepath.Join(out, "passk.json")
	for _, tc := range []struct {
		cwd, model, want, note string
	}{
		{"sft-a", ".", "sft-a/model.onnx", ""},
		{"sft-b", "model.onnx", "sft-b/model.onnx", "spiral: note: " + path + ", the passk report of sft-a/model.onnx, will be replaced by this evaluation's, of sft-b/model.onnx\n"},
		{"sft-b", "./", "sft-b/model.onnx", ""},
		{".", "sft-a", "sft-a/model.onnx", "spiral: note: " + path + ", the passk report of sft-b/model.onnx, will be replaced by this evaluation's, of sft-a/model.onnx\n"},
	} {
		t.Chdir(filepath.Join(dir, tc.cwd))
		var stderr bytes.Buffer
		args := []string{"eval", "--model", tc.model, "--mode", "passk", "--limit", "1", "--samples", "1", "--max-new-tokens", "4", "--quiet", "--threads", "1", "--out", out}
		require.Zero(t, run(context.Background(), args, &cliEnv{stdout: io.Discard, stderr: &stderr}), stderr.String())
		require.NoFileExists(t, filepath.Join(out, ".passk.lock"), "the evaluation's lock, removed as it ends")
		var rep report.PassAtK
		require.NoError(t, report.ReadJSON(path, &rep))
		require.Equal(t, tc.want, rep.Meta.Model, "--model %s from %s", tc.model, tc.cwd)
		var notes strings.Builder
		for _, line := range strings.SplitAfter(stderr.String(), "\n") {
			if strings.Contains(line, path) {
				notes.WriteString(line)
			}
		}
		require.Equal(t, tc.note, notes.String(), "--model %s from %s", tc.model, tc.cwd)
	}
}

// TestWarnOtherTemplates: eval --checkpoint of a run trained with a
// --search-template evaluated the model on the built-in prompts without
// a word. A checkpoint whose run's settings record another templates'
// fingerprint (sampling.templates) is now warned of, naming both. One
// that records each template's own fingerprint is compared on those the
// mode reads (the aggregation template in rsa alone, where the run read
// it): a GRPO run without a final RSA trained with another
// --aggregate-template, which it ignored, was warned of in every mode.
func TestWarnOtherTemplates(t *testing.T) {
	dir := t.TempDir()
	search := filepath.Join(dir, "search.txt")
	require.NoError(t, os.WriteFile(search, []byte("Solve {{.Problem}}\n"), 0o644))
	crlf := filepath.Join(dir, "crlf.txt")
	require.NoError(t, os.WriteFile(crlf, []byte("Solve\r\n{{.Problem}}\r\n"), 0o644))
	load := func(f templateFlags) templateSet {
		tmpl, err := loadTemplates(true, f)
		require.NoError(t, err)
		return tmpl
	}
	aggregate := filepath.Join(dir, "aggregate.txt")
	require.NoError(t, os.WriteFile(aggregate, []byte("Combine {{range .Candidates}}{{.Text}}{{end}} for {{.Problem}}\n"), 0o644))
	builtIn, custom, crlfSet := load(templateFlags{}), load(templateFlags{search: search}), load(templateFlags{search: crlf})
	otherAggregate, bothFiles := load(templateFlags{aggregate: aggregate}), load(templateFlags{search: search, aggregate: aggregate})
	// trained records the fingerprint of both templates alone, as
	// versions before each template's was recorded did.
	trained := func(templates string) rl.RunSettings {
		return rl.RunSettings{Sampling: rl.SamplingSettings(1, 1, 0, 4, "", rl.TemplatePrints{Both: templates})}
	}
	// recorded records each template's fingerprint too, as train does:
	// the aggregation template's where the run reads it.
	recorded := func(tmpl templateSet, readsAggregate bool) rl.RunSettings {
		p := tmpl.prints()
		if !readsAggregate {
			p.Aggregate = ""
		}
		return rl.RunSettings{Sampling: rl.SamplingSettings(1, 1, 0, 4, "", p)}
	}
	const trainedOn = ", so the model is evaluated on prompts it was not trained on: "
	const ckpt = "run/checkpoints/ckpt-000001"
	for _, tc := range []struct {
		name    string
		trained rl.RunSettings
		given   templateSet
		flags   templateFlags
		mode    string
		want    string
	}{
		{"none recorded", rl.RunSettings{}, builtIn, templateFlags{}, "passk", ""},
		{"the same", trained(builtIn.digest()), builtIn, templateFlags{}, "passk", ""},
		{"the same file", trained(custom.digest()), custom, templateFlags{search: search}, "rsa", ""},
		{"CRLF kept by an older version", trained(crlfSet.crlfDigest()), crlfSet, templateFlags{search: crlf}, "rsa", ""},
		{"built in, trained on a file", trained(custom.digest()), builtIn, templateFlags{}, "rsa",
			"spiral: warning: checkpoint " + ckpt + " was trained on other prompt templates (its run's sampling.templates " + custom.digest() + ") than this evaluation's, the built-in templates (" + builtIn.digest() + "), so the model is evaluated on prompts it was not trained on: give the run's --search-template and --aggregate-template\n"},
		{"passk", trained(custom.digest()), builtIn, templateFlags{}, "passk",
			"spiral: warning: checkpoint " + ckpt + " was trained on other prompt templates (its run's sampling.templates " + custom.digest() + ") than this evaluation's, the built-in templates (" + builtIn.digest() + "), so the model is evaluated on prompts it was not trained on: give the run's --search-template and --aggregate-template (the fingerprint covers the aggregation template too, which --mode passk does not render: one trained with another --aggregate-template alone differs too; give it to compare the pair)\n"},
		{"a file given", trained(builtIn.digest()), custom, templateFlags{search: search}, "rsa",
			"spiral: warning: checkpoint " + ckpt + " was trained on other prompt templates (its run's sampling.templates " + builtIn.digest() + ") than this evaluation's, --search-template " + search + " with the built-in aggregation template (" + custom.digest() + "), so the model is evaluated on prompts it was not trained on: the templates given are used\n"},
		// Each template's fingerprint recorded: only those the mode reads
		// are compared.
		{"grpo without a final RSA, trained with another aggregation template", recorded(otherAggregate, false), builtIn, templateFlags{}, "passk", ""},
		{"grpo without a final RSA, evaluated by rsa", recorded(otherAggregate, false), builtIn, templateFlags{}, "rsa", ""},
		{"another aggregation template, sequential", recorded(otherAggregate, true), builtIn, templateFlags{}, "sequential", ""},
		{"the same files", recorded(bothFiles, true), bothFiles, templateFlags{search: search, aggregate: aggregate}, "rsa", ""},
		{"another aggregation template, rsa", recorded(otherAggregate, true), builtIn, templateFlags{}, "rsa",
			"spiral: warning: checkpoint " + ckpt + " was trained on another aggregation template (its run's sampling.aggregate_template " + otherAggregate.prints().Aggregate + ") than this evaluation's, the built-in one (" + builtIn.prints().Aggregate + ")" + trainedOn + "give the run's --aggregate-template\n"},
		{"another search template, passk", recorded(custom, false), builtIn, templateFlags{}, "passk",
			"spiral: warning: checkpoint " + ckpt + " was trained on another search template (its run's sampling.search_template " + custom.prints().Search + ") than this evaluation's, the built-in one (" + builtIn.prints().Search + ")" + trainedOn + "give the run's --search-template\n"},
		{"a search file given, the built-in one trained", recorded(builtIn, false), custom, templateFlags{search: search}, "sequential",
			"spiral: warning: checkpoint " + ckpt + " was trained on another search template (its run's sampling.search_template " + builtIn.prints().Search + ") than this evaluation's, --search-template " + search + " (" + custom.prints().Search + ")" + trainedOn + "the template given is used\n"},
		{"a search file given, another aggregation template trained", recorded(bothFiles, true), custom, templateFlags{search: search}, "rsa",
			"spiral: warning: checkpoint " + ckpt + " was trained on another aggregation template (its run's sampling.aggregate_template " + bothFiles.prints().Aggregate + ") than this evaluation's, the built-in one (" + builtIn.prints().Aggregate + ")" + trainedOn + "give the run's --aggregate-template\n"},
		{"both files given, the built-in ones trained", recorded(builtIn, true), bothFiles, templateFlags{search: search, aggregate: aggregate}, "rsa",
			"spiral: warning: checkpoint " + ckpt + " was trained on other search and aggregation templates (its run's sampling.search_template " + builtIn.prints().Search + " and sampling.aggregate_template " + builtIn.prints().Aggregate + ") than this evaluation's, --search-template " + search + " and --aggregate-template " + aggregate + " (" + bothFiles.prints().Search + " and " + bothFiles.prints().Aggregate + ")" + trainedOn + "the templates given are used\n"},
	} {
		var w strings.Builder
		warnOtherTemplates(&w, ckpt, tc.trained, tc.given, tc.flags, tc.mode)
		require.Equal(t, tc.want, w.String(), tc.name)
	}
}

// TestEvalWarnsOfTheRunsTemplates: a run trained with --search-template,
// evaluated from its run directory without it, is warned of; with it,
// not.
func TestEvalWarnsOfTheRunsTemplates(t *testing.T) {
	t.Setenv("SPIRAL_CACHE_DIR", t.TempDir())
	dir := t.TempDir()
	search := filepath.Join(dir, "search.txt")
	require.NoError(t, os.WriteFile(search, []byte("Solve {{.Problem}}\n"), 0o644))
	runDir := filepath.Join(dir, "run")
	var stderr bytes.Buffer
	require.Zero(t, run(context.Background(), []string{"train", "--out", runDir, "--lora-rank", "2", "--steps", "1", "--problems", "1", "--n1", "2", "--k", "1", "--n", "2", "--n2", "2",
		"--max-new-tokens", "4", "--eval-every", "0", "--final-rsa-steps", "0", "--threads", "1", "--quiet", "--search-template", search}, &cliEnv{stdout: io.Discard, stderr: &stderr}), stderr.String())
	for _, tc := range []struct {
		args []string
		warn bool
	}{
		{nil, true},
		{[]string{"--search-template", search}, false},
	} {
		stderr.Reset()
		args := append([]string{"eval", "--checkpoint", runDir, "--mode", "passk", "--limit", "1", "--samples", "1", "--max-new-tokens", "4", "--quiet", "--threads", "1", "--out", filepath.Join(dir, "eval")}, tc.args...)
		require.Zero(t, run(context.Background(), args, &cliEnv{stdout: io.Discard, stderr: &stderr}), stderr.String())
		require.Equal(t, tc.warn, strings.Contains(stderr.String(), "trained on another search template (its run's sampling.search_template "), "%v: %s", tc.args, stderr.String())
	}
}

// TestEvalIgnoresAnUnreadAggregateTemplate: a GRPO run without a final
// RSA, trained with an --aggregate-template it does not read, evaluated
// without it was warned of as trained on other prompt templates, in
// every mode; it reads the search template alone, which is the
// evaluation's.
func TestEvalIgnoresAnUnreadAggregateTemplate(t *testing.T) {
	t.Setenv("SPIRAL_CACHE_DIR", t.TempDir())
	dir := t.TempDir()
	aggregate := filepath.Join(dir, "aggregate.txt")
	require.NoError(t, os.WriteFile(aggregate, []byte("Combine {{range .Candidates}}{{.Text}}{{end}} for {{.Problem}}\n"), 0o644))
	runDir := filepath.Join(dir, "run")
	var stderr bytes.Buffer
	require.Zero(t, run(context.Background(), []string{"train", "--out", runDir, "--algo", "grpo", "--group", "2", "--lora-rank", "2", "--steps", "1", "--problems", "1",
		"--max-new-tokens", "4", "--eval-every", "0", "--final-rsa-steps", "0", "--threads", "1", "--quiet", "--aggregate-template", aggregate}, &cliEnv{stdout: io.Discard, stderr: &stderr}), stderr.String())
	for _, mode := range [][]string{{"--mode", "passk", "--samples", "2"}, {"--mode", "rsa", "--population", "2", "--subset", "2", "--rsa-steps", "1"}} {
		stderr.Reset()
		args := append([]string{"eval", "--checkpoint", runDir, "--limit", "1", "--max-new-tokens", "4", "--quiet", "--threads", "1", "--out", filepath.Join(dir, "eval")}, mode...)
		require.Zero(t, run(context.Background(), args, &cliEnv{stdout: io.Discard, stderr: &stderr}), stderr.String())
		require.NotContains(t, stderr.String(), "was trained on", mode)
	}
}

// TestWarnTrainingData: eval --checkpoint of a run on its own training
// file (--data, however spelled) reported the training problems'
// accuracy as any other without a word; it is now warned of.
func TestWarnTrainingData(t *testing.T) {
	dir := t.TempDir()
	train := filepath.Join(dir, "train.jsonl")
	require.NoError(t, os.WriteFile(train, []byte(`{"problem": "1+1", "answer": "2"}`+"\n"), 0o644))
	other := filepath.Join(dir, "test.jsonl")
	require.NoError(t, os.WriteFile(other, []byte(`{"problem": "1+2", "answer": "3"}`+"\n"), 0o644))
	linked := filepath.Join(dir, "linked.jsonl")
	require.NoError(t, os.Link(train, linked))
	t.Chdir(dir)
	const ckpt = "run/checkpoints/ckpt-000001"
	for _, tc := range []struct {
		name, dataPath, data, want string
	}{
		{"the training file", train, train, "spiral: warning: checkpoint " + ckpt + " was trained on " + train + ", the --data " + train + " evaluated: its accuracy there is on problems it was trained on, not held-out ones\n"},
		{"relative", train, "train.jsonl", "spiral: warning: checkpoint " + ckpt + " was trained on " + train + ", the --data train.jsonl evaluated: its accuracy there is on problems it was trained on, not held-out ones\n"},
		{"a link to it", train, linked, "spiral: warning: checkpoint " + ckpt + " was trained on " + train + ", the --data " + linked + " evaluated: its accuracy there is on problems it was trained on, not held-out ones\n"},
		{"another file", train, other, ""},
		{"the embedded test split", train, "", ""},
		{"no path recorded", "", train, ""},
		{"the training file gone", filepath.Join(dir, "gone.jsonl"), train, ""},
	} {
		var w strings.Builder
		warnTrainingData(&w, ckpt, rl.RunSettings{DataPath: tc.dataPath}, tc.data)
		require.Equal(t, tc.want, w.String(), tc.name)
	}
}

// TestEvalWarnsOfTheTrainingData: eval --checkpoint of a run on --data,
// evaluating that file, is warned of; on another file, not.
func TestEvalWarnsOfTheTrainingData(t *testing.T) {
	t.Setenv("SPIRAL_CACHE_DIR", t.TempDir())
	dir := t.TempDir()
	train, other := filepath.Join(dir, "train.jsonl"), filepath.Join(dir, "other.jsonl")
	require.NoError(t, os.WriteFile(train, []byte(`{"problem": "Compute 1+1", "answer": "2"}`+"\n"), 0o644))
	require.NoError(t, os.WriteFile(other, []byte(`{"problem": "Compute 1+2", "answer": "3"}`+"\n"), 0o644))
	runDir := filepath.Join(dir, "run")
	var stderr bytes.Buffer
	require.Zero(t, run(context.Background(), []string{"train", "--data", train, "--out", runDir, "--lora-rank", "2", "--steps", "1", "--problems", "1", "--n1", "2", "--k", "1", "--n", "2", "--n2", "2",
		"--max-new-tokens", "4", "--eval-every", "0", "--final-rsa-steps", "0", "--threads", "1", "--quiet"}, &cliEnv{stdout: io.Discard, stderr: &stderr}), stderr.String())
	for _, tc := range []struct {
		data string
		warn bool
	}{{train, true}, {other, false}} {
		stderr.Reset()
		args := []string{"eval", "--checkpoint", runDir, "--data", tc.data, "--mode", "passk", "--samples", "1", "--max-new-tokens", "4", "--quiet", "--threads", "1", "--out", filepath.Join(dir, "eval")}
		require.Zero(t, run(context.Background(), args, &cliEnv{stdout: io.Discard, stderr: &stderr}), stderr.String())
		require.Equal(t, tc.warn, strings.Contains(stderr.String(), "its accuracy there is on problems it was trained on"), "--data %s: %s", tc.data, stderr.String())
	}
}

// TestEvalRefusesCheckpointDirectory: an eval --out in a checkpoint's
// directory (one holding state.json: eval --checkpoint C --out C, to keep
// the report with its checkpoint) wrote its report, plot and artifacts
// there and exited 0, and the run's --keep then removed the directory,
// report and all, without a word. It is refused before anything is
// written (exit 2), as export refuses such an --out.
func TestEvalRefusesCheckpointDirectory(t *testing.T) {
	ckpt := filepath.Join(t.TempDir(), "checkpoints", "ckpt-000003")
	require.NoError(t, os.MkdirAll(ckpt, 0o755))
	for _, name := range []string{"model.safetensors", "state.json"} {
		require.NoError(t, os.WriteFile(filepath.Join(ckpt, name), []byte("{}"), 0o644))
	}
	for _, mode := range []string{"passk", "rsa", "sequential"} {
		var stderr bytes.Buffer
		code := run(context.Background(), []string{"eval", "--mode", mode, "--out", ckpt}, &cliEnv{stdout: io.Discard, stderr: &stderr})
		require.Equal(t, exitUsage, code, stderr.String())
		require.Equal(t, "spiral eval: --out "+ckpt+" is a checkpoint directory (it holds state.json): its run's --keep removes the directory, the evaluation's report with it; give another --out\n", stderr.String())
		entries, err := os.ReadDir(ckpt)
		require.NoError(t, err)
		require.Len(t, entries, 2, "nothing written there")
	}
}

// TestEvalRefusesOutInCheckpoints: an eval --out within a checkpoint
// directory (RUN/checkpoints/ckpt-000050/x) or a run's checkpoints/ was
// taken: the report, plot and artifacts written there, which the run's
// --keep then removed with the checkpoint, its --fresh moved into
// previous-*. Refused before anything is written (exit 2), naming the
// directory and why; another tool's state.json is no checkpoint.
func TestEvalRefusesOutInCheckpoints(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	writeFakeRun(t, root)
	ckpts := filepath.Join(root, "run", "checkpoints")
	ckpt := filepath.Join(ckpts, "ckpt-000050")
	inCkpts := func(out, where string) string {
		return "spiral eval: --out " + out + " " + where + ", the directory of a training run's checkpoints: the run's --fresh moves it aside into previous-*, the evaluation's report with it, and its --keep removes what there is named as a checkpoint (ckpt-NNNNNN); give an --out outside it, such as --out " + filepath.Join(root, "run", "eval") + "\n"
	}
	for _, tc := range []struct{ out, want string }{
		{filepath.Join(ckpt, "x"), "spiral eval: --out " + filepath.Join(ckpt, "x") + " lies in checkpoint directory " + ckpt + ": its run's --keep removes that directory, the evaluation's report with it; give an --out outside the run's checkpoints\n"},
		{ckpts, inCkpts(ckpts, "is "+ckpts)},
		{filepath.Join(ckpts, "eval"), inCkpts(filepath.Join(ckpts, "eval"), "is in "+ckpts)},
	} {
		before := entries(t, root)
		var stderr bytes.Buffer
		code := run(context.Background(), []string{"eval", "--mode", "passk", "--out", tc.out}, &cliEnv{stdout: io.Discard, stderr: &stderr})
		require.Equal(t, exitUsage, code, stderr.String())
		require.Equal(t, tc.want, stderr.String())
		require.Equal(t, before, entries(t, root), "nothing written")
	}
	// Another tool's state.json: no checkpoint, not refused as one.
	var stderr bytes.Buffer
	run(context.Background(), []string{"eval", "--mode", "passk", "--samples", "0", "--out", filepath.Join(root, "other")}, &cliEnv{stdout: io.Discard, stderr: &stderr})
	require.NotContains(t, stderr.String(), "checkpoint", stderr.String())
}

// TestPassAtKTable: eval's pass@k table marks a majority@k that is a
// Monte Carlo estimate (C(n, k) subsets past majority.max_exact: k = 8
// of the default 16 samples), which it printed to four decimals as if
// every subset had been counted, and says under the table over how many
// subsets a problem it was drawn; a table of exact values has no mark
// and no note.
func TestPassAtKTable(t *testing.T) {
	mc := rollout.MajorityConfig{}.WithDefaults()
	for _, tc := range []struct {
		name string
		pts  []rollout.KPoint
		want string
	}{
		{"exact", []rollout.KPoint{{K: 1, PassAtK: 0.5, MajorityAtK: 0.5, MajorityExact: true}, {K: 4, PassAtK: 0.75, MajorityAtK: 0.625, MajorityExact: true}},
			"k     pass@k    majority@k\n1     0.5000    0.5000\n4     0.7500    0.6250\n"},
		{"monte carlo", []rollout.KPoint{{K: 4, PassAtK: 0.75, MajorityAtK: 0.625, MajorityExact: true}, {K: 8, PassAtK: 0.875, MajorityAtK: 0.6875}},
			"k     pass@k    majority@k\n4     0.7500    0.6250\n8     0.8750    0.6875 *\n" +
				"* a Monte Carlo estimate: majority@k over 2000 random subsets of k samples a problem, where C(n, k) exceeds 10000 (the report's config.majority)\n"},
	} {
		var b strings.Builder
		passAtKTable(&b, tc.pts, mc)
		require.Equal(t, tc.want, b.String(), tc.name)
	}
}

// TestSequentialTable: eval's sequential table was headed "budget
// accuracy truncated": no unit for the budget, and not the mean tokens a
// trace spent within it, the x of compare's table at equal tokens and of
// tokens.png (a budget most traces stop before costs far less than
// itself). It names the budget's unit, prints the mean tokens a trace,
// and says what the truncated column is a fraction of.
func TestSequentialTable(t *testing.T) {
	for _, tc := range []struct {
		name string
		pts  []rollout.BudgetPoint
		want string
	}{
		{"budgets", []rollout.BudgetPoint{{Budget: 64, Accuracy: 0.125, MeanTokens: 63.375, Truncated: 0.875}, {Budget: 32768, Accuracy: 0.5, MeanTokens: 801.5}},
			"budget (tokens)  accuracy  mean tokens/trace  truncated (of traces)\n" +
				"64               0.1250    63.4               0.875\n" +
				"32768            0.5000    801.5              0.000\n"},
	} {
		var b strings.Builder
		sequentialTable(&b, tc.pts)
		require.Equal(t, tc.want, b.String(), tc.name)
	}
}

// TestEvalChunk: a resumable evaluation's Generate calls hold 32 times
// the requests the engine runs at once, in whole problems, at least one.
func TestEvalChunk(t *testing.T) {
	for _, tc := range []struct{ parallel, samples, want int }{
		{64, 64, 32},   // --gen-batch 64, pass@64: 2,048 requests
		{16, 64, 8},    // --engine-concurrency 16
		{1, 4, 8},      // 32 requests
		{64, 3, 683},   // 2,048 requests rounded up to whole problems
		{1, 1024, 1},   // more samples than a call's requests: one problem
		{256, 1, 8192}, // one sample a problem
	} {
		require.Equal(t, tc.want, evalChunk(tc.parallel, tc.samples), "%d at once, %d samples", tc.parallel, tc.samples)
	}
}

// resumeEngine is an OpenAI-compatible server whose completion of a
// request depends on its seed alone (a boxed answer, seed % 4; cut at
// the token limit where seed % 5 is 0), as a seeded engine's does, and
// that answers 400 from its failAt-th completion on (0: never).
type resumeEngine struct {
	served, failAt atomic.Int32
	// loading, when set, answers every request 503, as a server still
	// loading its model does; asked counts the requests so answered.
	loading atomic.Bool
	asked   atomic.Int32
	// interrupt, when set, is called at the interruptAt-th completion
	// (Ctrl-C, as the evaluation's context is cancelled).
	interrupt   func()
	interruptAt int32
}

func (e *resumeEngine) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if e.loading.Load() {
		e.asked.Add(1)
		http.Error(w, "loading the model", http.StatusServiceUnavailable)
		return
	}
	if r.URL.Path == "/v1/models" {
		_, _ = w.Write([]byte(`{"data":[{"id":"served"}]}`))
		return
	}
	var body struct {
		Seed int64 `json:"seed"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		http.Error(w, `{"message":"bad request"}`, http.StatusBadRequest)
		return
	}
	n := e.served.Add(1)
	if e.failAt.Load() > 0 && n >= e.failAt.Load() {
		http.Error(w, `{"object":"error","message":"engine says no"}`, http.StatusBadRequest)
		return
	}
	if e.interrupt != nil && n == e.interruptAt {
		e.interrupt()
	}
	finish := "stop"
	if body.Seed%5 == 0 {
		finish = "length"
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"choices": []any{map[string]any{
		"text": fmt.Sprintf("so the answer is \\boxed{%d}", body.Seed%4), "finish_reason": finish}}})
}

// TestEvalResumesPassAtK: a pass@k evaluation through a serving engine
// that fails partway (at its 41st request: the first Generate call's 8
// problems of 4 samples, 32 times --engine-concurrency 1's requests, are
// done) kept
// nothing, and a rerun started over. It now saves its problems as their
// calls finish (passk.problems.jsonl.partial); the rerun of the same
// command evaluates only the others, says so, and writes the report an
// uninterrupted evaluation writes (its start time aside: the
// interrupted one's), its table and notes too, and removes the file.
// A rerun of other settings is refused, naming them, unless --fresh;
// one with --traces is refused; a last line cut short is left out.
func TestEvalResumesPassAtK(t *testing.T) {
	eng, engineURL := startResumeEngine(t)
	dir := t.TempDir()
	problems := writeNumberedProblems(t, filepath.Join(dir, "problems.jsonl"), 20)
	ctx := context.Background()
	evalIn := func(out string, extra ...string) (int, string, string) {
		return evalOnEngine(ctx, engineURL, append([]string{"--mode", "passk", "--data", problems, "--samples", "4", "--max-new-tokens", "64", "--quiet", "--out", out}, extra...)...)
	}
	readReport := func(out string) report.PassAtK {
		var rep report.PassAtK
		require.NoError(t, report.ReadJSON(filepath.Join(out, "passk.json"), &rep))
		return rep
	}

	whole := filepath.Join(dir, "whole")
	code, wantOut, wantErr := evalIn(whole)
	require.Zero(t, code, wantErr)
	require.Equal(t, int32(80), eng.served.Load())
	want := readReport(whole)
	require.NoFileExists(t, filepath.Join(whole, "passk"+report.ProblemsSuffix))

	// One that fails within its first call has nothing to save, and
	// leaves no file.
	first := filepath.Join(dir, "first")
	eng.served.Store(0)
	eng.failAt.Store(5)
	firstCode, _, firstErr := evalIn(first)
	require.Equal(t, exitFailure, firstCode, firstErr)
	require.NotContains(t, firstErr, "saved in")
	require.NoFileExists(t, filepath.Join(first, "passk"+report.ProblemsSuffix))

	out := filepath.Join(dir, "cut")
	partial := filepath.Join(out, "passk"+report.ProblemsSuffix)
	eng.served.Store(0)
	eng.failAt.Store(41)
	code, _, stderr := evalIn(out)
	require.Equal(t, exitFailure, code, stderr)
	require.Contains(t, stderr, "engine says no")
	require.Contains(t, stderr, "spiral: note: 8 of the 20 problems were evaluated and saved in "+partial+": rerun the command to resume from there\n")
	require.NoFileExists(t, filepath.Join(out, "passk.json"))
	saved, err := report.ReadProblems(partial)
	require.NoError(t, err)
	require.Len(t, saved.Problems, 8, "the first call's problems")

	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"another seed", []string{"--seed", "2"}, partial + " holds 8 of the 20 problems of an interrupted passk evaluation of other settings (seed 1, not 2): rerun with those to resume it, or give --fresh to discard them and start over, or another --out"},
		{"other samples", []string{"--samples", "2"}, "(samples 4, not 2)"},
		{"another temperature", []string{"--temperature", "0.5"}, "(temperature 1, not 0.5)"},
		{"traces", []string{"--traces"}, "--traces: " + partial + " holds 8 of the 20 problems of an interrupted passk evaluation, whose traces were not kept: rerun without --traces to resume it"},
	} {
		eng.served.Store(0)
		code, _, stderr := evalIn(out, tc.args...)
		require.Equal(t, exitUsage, code, tc.name)
		require.Contains(t, stderr, tc.want, tc.name)
		require.Zero(t, eng.served.Load(), "%s: nothing generated", tc.name)
		again, err := report.ReadProblems(partial)
		require.NoError(t, err)
		require.Equal(t, saved.Problems, again.Problems, "%s: the saved problems kept", tc.name)
	}

	// A last line cut short by a kill: that problem is evaluated again.
	b, err := os.ReadFile(partial)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(partial, b[:len(b)-10], 0o644))
	eng.served.Store(0)
	eng.failAt.Store(0)
	code, gotOut, gotErr := evalIn(out)
	require.Zero(t, code, gotErr)
	require.Contains(t, gotErr, "spiral: resuming: 7 of 20 problems already evaluated (saved in "+partial+", less its last line, cut short)\n")
	require.Equal(t, int32(13*4), eng.served.Load(), "only the problems not saved")
	require.Equal(t, wantOut, strings.Replace(gotOut, out, whole, -1), "the table and the files written")
	require.Equal(t, wantErr, strings.Replace(gotErr, "spiral: resuming: 7 of 20 problems already evaluated (saved in "+partial+", less its last line, cut short)\n", "", 1), "the notes: the traces cut alike")
	got := readReport(out)
	require.True(t, saved.Started.Equal(got.Meta.Timestamp), "the interrupted evaluation's start")
	got.Meta.Timestamp = want.Meta.Timestamp
	require.Equal(t, want, got)
	requireSameReportJSON(t, got, filepath.Join(whole, "passk.json"))
	require.NoFileExists(t, partial, "removed with the report's commit")

	// Interrupted (Ctrl-C) within the third call: the two before it kept.
	var cancel context.CancelFunc
	ctx, cancel = context.WithCancel(context.Background())
	eng.served.Store(0)
	eng.interrupt, eng.interruptAt = cancel, 70
	code, _, stderr = evalIn(out)
	require.NotZero(t, code, stderr)
	require.Contains(t, stderr, "spiral: note: 16 of the 20 problems were evaluated and saved in "+partial)
	ctx, eng.interrupt = context.Background(), nil
	eng.served.Store(0)
	code, gotOut, gotErr = evalIn(out)
	require.Zero(t, code, gotErr)
	require.Contains(t, gotErr, "spiral: resuming: 16 of 20 problems already evaluated (saved in "+partial+")\n")
	require.Equal(t, int32(4*4), eng.served.Load())
	require.Equal(t, wantOut, strings.Replace(gotOut, out, whole, -1))
	got = readReport(out)
	got.Meta.Timestamp = want.Meta.Timestamp
	require.Equal(t, want, got)

	// --fresh discards what another evaluation saved and starts over.
	eng.served.Store(0)
	eng.failAt.Store(41)
	code, _, stderr = evalIn(out)
	require.Equal(t, exitFailure, code, stderr)
	eng.served.Store(0)
	eng.failAt.Store(0)
	code, _, stderr = evalIn(out, "--seed", "2", "--fresh")
	require.Zero(t, code, stderr)
	require.Contains(t, stderr, "spiral: note: --fresh: removed "+partial+", 8 of the 20 problems of an interrupted passk evaluation\n")
	require.Equal(t, int32(80), eng.served.Load())
	require.NoFileExists(t, partial)
}

// TestEvalRefusesOtherSettingsBeforeTheLoad: a rerun of an interrupted
// pass@k evaluation with other settings was refused only once the model
// had loaded (its artifacts built into --out, minutes on a real model).
// Settings that need no model loaded to be known are now checked before
// the load: the refusal comes without it, and the saved problems are
// kept; the same settings resume after it.
func TestEvalRefusesOtherSettingsBeforeTheLoad(t *testing.T) {
	t.Setenv("SPIRAL_CACHE_DIR", t.TempDir())
	out := filepath.Join(t.TempDir(), "eval")
	evalIn := func(extra ...string) (int, string) {
		var stderr bytes.Buffer
		args := append([]string{"eval", "--mode", "passk", "--limit", "2", "--samples", "1", "--max-new-tokens", "4", "--quiet", "--threads", "1", "--out", out}, extra...)
		return run(context.Background(), args, &cliEnv{stdout: io.Discard, stderr: &stderr}), stderr.String()
	}
	code, stderr := evalIn()
	require.Zero(t, code, stderr)
	var rep report.PassAtK
	require.NoError(t, report.ReadJSON(filepath.Join(out, "passk.json"), &rep))
	// What an evaluation of these settings interrupted after its first
	// problem saved.
	partial := filepath.Join(out, "passk"+report.ProblemsSuffix)
	w, err := report.CreateProblems(partial, report.KeyOf(report.ModePassAtK, rep.Meta, 1), rep.Meta.Timestamp)
	require.NoError(t, err)
	saved := report.ProblemRecord{Problem: 0, ID: rep.Meta.ProblemIDs[0], Samples: []report.SampleRecord{{Answer: "7", Finish: rollout.FinishLength}}}
	require.NoError(t, w.Write([]report.ProblemRecord{saved}))
	require.NoError(t, w.Close())
	artifacts := filepath.Join(out, rl.ArtifactsDir)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"another seed", []string{"--seed", "2"}, "(seed 1, not 2)"},
		{"other problems", []string{"--limit", "1"}, "of --limit 2, not of these 1 problem: rerun with --limit 2 to finish it"},
		{"another temperature", []string{"--temperature", "0.5"}, "(temperature 1, not 0.5)"},
		{"traces", []string{"--traces"}, "--traces: " + partial + " holds 1 of the 2 problems of an interrupted passk evaluation, whose traces were not kept"},
	} {
		require.NoError(t, os.RemoveAll(artifacts))
		code, stderr := evalIn(tc.args...)
		require.Equal(t, exitUsage, code, tc.name)
		require.Contains(t, stderr, tc.want, tc.name)
		require.NoDirExists(t, artifacts, "%s: refused before the model loaded", tc.name)
		again, err := report.ReadProblems(partial)
		require.NoError(t, err)
		require.Equal(t, []report.ProblemRecord{saved}, again.Problems, "%s: the saved problem kept", tc.name)
	}
	code, stderr = evalIn()
	require.Zero(t, code, stderr)
	require.Contains(t, stderr, "spiral: resuming: 1 of 2 problems already evaluated (saved in "+partial+")\n")
	require.DirExists(t, artifacts)
	require.NoFileExists(t, partial)
}

// TestEvalRefusesOtherSettingsBeforeTheEngine: a rerun on a serving
// engine of an interrupted evaluation with another --seed, --temperature
// or --subset, settings that do not depend on the context the engine
// serves, was refused only after the engine's check, which waits up to
// --engine-timeout for a server still loading its model: one that never
// answered ended the rerun with its error, the settings unsaid. They are
// compared before the wait; the same settings go on to the engine.
func TestEvalRefusesOtherSettingsBeforeTheEngine(t *testing.T) {
	eng, engineURL := startResumeEngine(t)
	dir := t.TempDir()
	problems := writeNumberedProblems(t, filepath.Join(dir, "problems.jsonl"), 20)
	for _, tc := range []struct {
		mode, partial string
		args          []string
		failAt        int32
		other         [][]string // each refused before the wait
		want          []string
	}{
		{"passk", "passk" + report.ProblemsSuffix, []string{"--samples", "4"}, 41,
			[][]string{{"--seed", "2"}, {"--temperature", "0.5"}, {"--max-new-tokens", "32"}, {"--traces"}},
			[]string{"(seed 1, not 2)", "(temperature 1, not 0.5)", "(max_new_tokens 64, not 32)", "whose traces were not kept"}},
		{"rsa", "rsa" + report.StepsSuffix, []string{"--population", "2", "--subset", "2", "--rsa-steps", "2"}, 2*40 + 5,
			[][]string{{"--subset", "1"}},
			[]string{"(--subset 2, not 1)"}},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			out := filepath.Join(dir, tc.mode)
			evalIn := func(extra ...string) (int, string, time.Duration) {
				start := time.Now()
				code, _, stderr := evalOnEngine(context.Background(), engineURL, append(append([]string{"--mode", tc.mode, "--data", problems, "--max-new-tokens", "64", "--quiet", "--out", out}, tc.args...), extra...)...)
				return code, stderr, time.Since(start)
			}
			eng.loading.Store(false)
			eng.served.Store(0)
			eng.failAt.Store(tc.failAt)
			code, stderr, _ := evalIn()
			require.Equal(t, exitFailure, code, stderr)
			partial := filepath.Join(out, tc.partial)
			before, err := os.ReadFile(partial)
			require.NoError(t, err, stderr)

			eng.loading.Store(true)
			for i, other := range tc.other {
				eng.asked.Store(0)
				code, stderr, took := evalIn(append([]string{"--engine-timeout", "60s"}, other...)...)
				require.Equal(t, exitUsage, code, stderr)
				require.Contains(t, stderr, partial+" holds ", other)
				require.Contains(t, stderr, tc.want[i], other)
				require.Zero(t, eng.asked.Load(), "%v: the engine was not asked", other)
				require.Less(t, took, 30*time.Second, "%v: refused without waiting for the engine", other)
			}
			// The same settings wait for the engine, and the saved work
			// is kept.
			eng.asked.Store(0)
			code, stderr, _ = evalIn("--engine-timeout", "1s")
			require.Equal(t, exitFailure, code, stderr)
			require.Contains(t, stderr, "rollout: engine: "+engineURL+"/models")
			require.NotZero(t, eng.asked.Load())
			after, err := os.ReadFile(partial)
			require.NoError(t, err)
			require.Equal(t, string(before), string(after))
		})
	}
}

// TestEvalResumesOtherNumerics: --gen-batch, --gen-call-mib, --threads,
// --deterministic and --device, which on the local engine determine no
// result but may change the last bits of the model's logits (and so,
// rarely, a sampled token), were not in what an interrupted evaluation
// saved: a rerun with others resumed it without a word, its report then
// possibly not the uninterrupted one's. They are recorded; a rerun with
// others resumes, warned of, naming them; with the same, no warning. So
// is the ONNX Runtime library's version (another --ort-lib), which was
// not recorded either; a file saved without it (by an older spiral)
// resumes without a warning, as one without any of them does.
func TestEvalResumesOtherNumerics(t *testing.T) {
	t.Setenv("SPIRAL_CACHE_DIR", t.TempDir())
	out := filepath.Join(t.TempDir(), "eval")
	evalIn := func(extra ...string) (int, string) {
		var stderr bytes.Buffer
		args := append([]string{"eval", "--mode", "passk", "--limit", "2", "--samples", "1", "--max-new-tokens", "4", "--quiet", "--threads", "1", "--out", out}, extra...)
		return run(context.Background(), args, &cliEnv{stdout: io.Discard, stderr: &stderr}), stderr.String()
	}
	code, stderr := evalIn("--gen-batch", "5")
	require.Zero(t, code, stderr)
	var rep report.PassAtK
	require.NoError(t, report.ReadJSON(filepath.Join(out, "passk.json"), &rep))
	partial := filepath.Join(out, "passk"+report.ProblemsSuffix)
	// The threads --threads 0 runs: one per physical core.
	rt, err := model.OpenRuntime(model.RuntimeOptions{})
	require.NoError(t, err)
	cores, ortVersion := rt.Threads(), rt.Version()
	require.NoError(t, rt.Close())
	for _, tc := range []struct {
		name  string
		saved map[string]string // of the saved key's numerics, in place of the first run's ("": none)
		args  []string
		warn  string
	}{
		{"the same", nil, []string{"--gen-batch", "5"}, ""},
		{"another --gen-batch", nil, []string{"--gen-batch", "3"}, "spiral: warning: " + partial + " was saved with --gen-batch 5, not 3: resumed, but these change the last bits of the model's logits"},
		{"another --gen-batch and --gen-call-mib", nil, []string{"--gen-batch", "3", "--gen-call-mib", "64"},
			fmt.Sprintf("spiral: warning: %s was saved with --gen-batch 5, not 3; --gen-call-mib %d, not 64: resumed", partial, model.DefaultCallBytes>>20)},
		// The threads recorded are those the sessions ran: --threads 0
		// under --deterministic runs one, as --threads 1 does; without
		// it, one per physical core, which a machine of another count
		// does not.
		{"--deterministic --threads 0, saved as --threads 1", map[string]string{"--deterministic": "true"}, []string{"--gen-batch", "5", "--deterministic", "--threads", "0"}, ""},
		{"--threads 0, saved with the cores' count", map[string]string{"--threads": strconv.Itoa(cores)}, []string{"--gen-batch", "5", "--threads", "0"}, ""},
		{"--threads 0, saved on a machine of more cores", map[string]string{"--threads": strconv.Itoa(cores + 8)}, []string{"--gen-batch", "5", "--threads", "0"},
			fmt.Sprintf("spiral: warning: %s was saved with --threads %d, not %d: resumed", partial, cores+8, cores)},
		// Another ONNX Runtime library may compute other last bits;
		// a file that records none (of an older spiral) says nothing
		// of the one it ran.
		{"another ONNX Runtime", map[string]string{"onnxruntime": "0.9.0"}, []string{"--gen-batch", "5"},
			fmt.Sprintf("spiral: warning: %s was saved with onnxruntime 0.9.0, not %s: resumed", partial, ortVersion)},
		{"no ONNX Runtime recorded", map[string]string{"onnxruntime": ""}, []string{"--gen-batch", "5"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if cores == 0 && tc.saved["--threads"] != "" {
				t.Skip("no physical core count on this system")
			}
			// What an evaluation with --gen-batch 5 interrupted after its
			// first problem saved.
			key := report.KeyOf(report.ModePassAtK, rep.Meta, 1)
			key.Numerics = map[string]string{"--gen-batch": "5", "--gen-call-mib": strconv.Itoa(int(model.DefaultCallBytes >> 20)),
				"--threads": "1", "--deterministic": "false", "--device": "cpu", "onnxruntime": ortVersion}
			maps.Copy(key.Numerics, tc.saved)
			maps.DeleteFunc(key.Numerics, func(_, v string) bool { return v == "" }) // not recorded
			w, err := report.CreateProblems(partial, key, rep.Meta.Timestamp)
			require.NoError(t, err)
			require.NoError(t, w.Write([]report.ProblemRecord{{Problem: 0, ID: rep.Meta.ProblemIDs[0], Samples: []report.SampleRecord{{Answer: "7", Finish: rollout.FinishLength}}}}))
			require.NoError(t, w.Close())

			code, stderr := evalIn(tc.args...)
			require.Zero(t, code, stderr)
			require.Contains(t, stderr, "spiral: resuming: 1 of 2 problems already evaluated (saved in "+partial+")\n")
			if tc.warn == "" {
				require.NotContains(t, stderr, "warning")
				return
			}
			require.Contains(t, stderr, tc.warn)
		})
	}
}

// TestRefuseSavedOfAnOlderSpiral: a saved evaluation's key that lacks a
// setting this spiral records of every evaluation (extra's min_p, say,
// were a newer spiral to add it) was refused as "min_p none, not 0.05:
// rerun with those to resume it", which no flags can do. It is refused
// as a file of an older spiral, naming the settings it lacks and
// --fresh; one that lacks a template file's setting, which only its
// flag records, is still of other settings, rerun without the flag.
func TestRefuseSavedOfAnOlderSpiral(t *testing.T) {
	const path, what = "out/passk.problems.jsonl.partial", "3 of the 4 problems of an interrupted passk evaluation"
	key := func(extra map[string]string) report.EvalKey {
		return report.EvalKey{Mode: report.ModePassAtK, Samples: 2, Model: "m", Dataset: "d", Seed: 1, Extra: extra,
			ProblemIDs: []string{"a", "b", "c", "d"}, ProblemsDigest: "x"}
	}
	now := key(map[string]string{"temperature": "1", "min_p": "0.05", "search_template": "s.txt (sha256 00)"})
	for _, tc := range []struct {
		name  string
		extra map[string]string
		want  string
	}{
		{"a setting an older spiral did not record", map[string]string{"temperature": "0.6", "search_template": "s.txt (sha256 00)"},
			path + " holds " + what + ", saved by an older spiral, which did not record its min_p: give --fresh to discard them and start over, or another --out"},
		{"two", map[string]string{},
			path + " holds " + what + ", saved by an older spiral, which did not record its min_p, temperature: give --fresh to discard them and start over, or another --out"},
		{"a template file not given then", map[string]string{"temperature": "1", "min_p": "0.05"},
			path + " holds " + what + " of other settings (search_template none, not s.txt (sha256 00)): rerun with those to resume it, or give --fresh to discard them and start over, or another --out"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := refuseSaved(path, what, key(tc.extra), now, nil, nil, unknowns{}, false)
			require.EqualError(t, err, tc.want)
		})
	}
	require.NoError(t, refuseSaved(path, what, now, now, nil, nil, unknowns{}, false), "the same settings")
}

// TestRefuseSavedOfANewerSpiral: a saved evaluation's key that records
// a setting this spiral does not know (extra's min_p, say, of a newer
// spiral that records it) was refused as "min_p 0.05, not none: rerun
// with those to resume it", which no flags of this spiral can do. It is
// refused as a file of a newer spiral, naming the settings and --fresh;
// a template file's setting, which only its flag records, is still of
// other settings, rerun with the flag.
func TestRefuseSavedOfANewerSpiral(t *testing.T) {
	const path, what = "out/passk.problems.jsonl.partial", "3 of the 4 problems of an interrupted passk evaluation"
	key := func(extra map[string]string) report.EvalKey {
		return report.EvalKey{Mode: report.ModePassAtK, Samples: 2, Model: "m", Dataset: "d", Seed: 1, Extra: extra,
			ProblemIDs: []string{"a", "b", "c", "d"}, ProblemsDigest: "x"}
	}
	now := key(map[string]string{"temperature": "1"})
	for _, tc := range []struct {
		name  string
		extra map[string]string
		want  string
	}{
		{"a setting this spiral does not record", map[string]string{"temperature": "1", "min_p": "0.05"},
			path + " holds " + what + ", saved by a newer spiral, which records its min_p, unknown to this one: resume it with that spiral, or give --fresh to discard them and start over, or another --out"},
		{"two, and another value", map[string]string{"temperature": "0.6", "min_p": "0.05", "typical_p": "0.9"},
			path + " holds " + what + ", saved by a newer spiral, which records its min_p, typical_p, unknown to this one: resume it with that spiral, or give --fresh to discard them and start over, or another --out"},
		{"a template file given then", map[string]string{"temperature": "1", "search_template": "s.txt (sha256 00)"},
			path + " holds " + what + " of other settings (search_template s.txt (sha256 00), not none): rerun with those to resume it, or give --fresh to discard them and start over, or another --out"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := refuseSaved(path, what, key(tc.extra), now, nil, nil, unknowns{}, false)
			require.EqualError(t, err, tc.want)
		})
	}
}

// TestResumableOfANewerSpiral: a saved evaluation whose key holds a field
// this spiral does not know (a newer spiral's) was refused as a file
// that does not read ("json: unknown field"), as if damaged. It is
// refused as a newer spiral's, offering that spiral, --fresh or another
// --out.
func TestResumableOfANewerSpiral(t *testing.T) {
	dir := t.TempDir()
	key := report.EvalKey{Mode: report.ModePassAtK, Samples: 1, Model: "m", Dataset: "d", Seed: 1, Extra: map[string]string{"temperature": "1"},
		ProblemIDs: []string{"a", "b"}, ProblemsDigest: "x"}
	problems := filepath.Join(dir, "passk"+report.ProblemsSuffix)
	w, err := report.CreateProblems(problems, key, time.Now())
	require.NoError(t, err)
	require.NoError(t, w.Write([]report.ProblemRecord{{Problem: 0, ID: "a", Samples: []report.SampleRecord{{Answer: "7", Finish: rollout.FinishStop}}}}))
	require.NoError(t, w.Close())
	rsaKey := key
	rsaKey.Mode, rsaKey.Samples, rsaKey.RSA = report.ModeRSA, 1, &rollout.RSAConfig{Population: 1, SubsetSize: 1, Steps: 2}
	steps := filepath.Join(dir, "rsa"+report.StepsSuffix)
	require.NoError(t, report.SaveRSA(steps, report.RSAOf(rsaKey, time.Now(), rollout.RSAState{Steps: []rollout.RSAStep{{Step: 0}}, Population: [][]rollout.Trace{{{}}, {{}}}}, nil)))
	for _, path := range []string{problems, steps} {
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(path, bytes.Replace(b, []byte(`"mode":`), []byte(`"min_p":"0.05","mode":`), 1), 0o644))
	}
	const want = `json: unknown field "min_p": saved by a newer spiral, whose settings this one does not know: resume it with that spiral, or give --fresh to discard them and start over, or another --out`
	_, err = resumable(problems, key, nil, nil, unknowns{}, false)
	require.EqualError(t, err, problems+": line 1: "+want)
	_, err = resumableRSA(steps, rsaKey, nil, nil, unknowns{}, false)
	require.EqualError(t, err, steps+": "+want)
}

// TestEvalResumesAGrownLimit: an interrupted pass@k evaluation of the
// first 12 problems, rerun with a larger --limit (all 20), was refused
// for its other problem ids, though its problems are the first 12 of
// the 20 and each trace is seeded by its problem's index and sample
// alone. It now resumes them: the report is the one an uninterrupted
// evaluation of the 20 writes (its start time aside), and the file,
// rewritten under the 20's key, resumes again after a second
// interruption. A smaller --limit is still refused, naming the saved
// one's --limit to finish it.
func TestEvalResumesAGrownLimit(t *testing.T) {
	eng, engineURL := startResumeEngine(t)
	dir := t.TempDir()
	problems := filepath.Join(dir, "problems.jsonl")
	var lines strings.Builder
	for i := range 20 {
		text := fmt.Sprintf("Problem %d", i)
		if i == 13 { // too long for the model: skipped by the 20, not by the 12
			text += strings.Repeat(" and more", 5000)
		}
		fmt.Fprintf(&lines, `{"id": "p%d", "problem": %q, "answer": "%d"}`+"\n", i, text, i%4)
	}
	require.NoError(t, os.WriteFile(problems, []byte(lines.String()), 0o644))
	evalIn := func(out string, extra ...string) (int, string, string) {
		return evalOnEngine(context.Background(), engineURL, append([]string{"--mode", "passk", "--data", problems, "--samples", "4", "--max-new-tokens", "64", "--quiet", "--out", out}, extra...)...)
	}
	whole := filepath.Join(dir, "whole")
	code, wantOut, wantErr := evalIn(whole)
	require.Zero(t, code, wantErr)
	require.Contains(t, wantErr, "spiral: warning: skipped "+problems+":14: search prompt of", "problem 13 skipped")

	out := filepath.Join(dir, "grown")
	partial := filepath.Join(out, "passk"+report.ProblemsSuffix)
	eng.served.Store(0)
	eng.failAt.Store(41) // the first call's 8 problems done
	code, _, stderr := evalIn(out, "--limit", "12")
	require.Equal(t, exitFailure, code, stderr)
	require.Contains(t, stderr, "spiral: note: 8 of the 12 problems were evaluated and saved in "+partial)

	eng.served.Store(0)
	eng.failAt.Store(0)
	code, _, stderr = evalIn(out, "--limit", "4")
	require.Equal(t, exitUsage, code, stderr)
	require.Contains(t, stderr, "spiral eval: "+partial+" holds 8 of the 12 problems of an interrupted passk evaluation of --limit 12, not of these 4 problems: "+
		"rerun with --limit 12 to finish it, or give --fresh to discard them and start over, or another --out\n", "fewer problems: the saved ones' --limit named")

	// Grown to 20 (19 once problem 13 is skipped), and interrupted again
	// after its first call (8 more).
	eng.served.Store(0)
	eng.failAt.Store(33)
	code, _, stderr = evalIn(out)
	require.Equal(t, exitFailure, code, stderr)
	resumed := "spiral: resuming: 8 of 19 problems already evaluated (saved in " + partial + " by an evaluation of the first 12)\n"
	require.Contains(t, stderr, resumed)
	require.Contains(t, stderr, "spiral: note: 16 of the 19 problems were evaluated and saved in "+partial)
	saved, err := report.ReadProblems(partial)
	require.NoError(t, err)
	require.Len(t, saved.Key.ProblemIDs, 19, "rewritten under the 20's key")
	require.Equal(t, "1", saved.Key.Extra["skipped_problems"])
	require.Len(t, saved.Problems, 16)

	eng.served.Store(0)
	eng.failAt.Store(0)
	code, gotOut, gotErr := evalIn(out)
	require.Zero(t, code, gotErr)
	resumed = "spiral: resuming: 16 of 19 problems already evaluated (saved in " + partial + ")\n"
	require.Contains(t, gotErr, resumed)
	require.Equal(t, int32(3*4), eng.served.Load(), "only the problems not saved")
	require.Equal(t, wantOut, strings.Replace(gotOut, out, whole, -1), "the table and the files written")
	require.Equal(t, wantErr, strings.Replace(gotErr, resumed, "", 1), "the notes")
	requireResumedReport(t, out, whole, "passk.json", saved.Started, func(r *report.PassAtK) *report.Meta { return &r.Meta })
	require.NoFileExists(t, partial)
}

// TestEvalRefusesAGrownLimitOnOtherTexts: an interrupted evaluation of
// the first problems, whose texts then changed in the file (the ids
// kept), rerun with a larger --limit, was refused as "of --limit 12 ...:
// rerun with --limit 12 to finish it", and that rerun then refused for
// the texts: two reruns to learn the cause. The first refusal names the
// texts: pass@k's alone (a larger --limit resumes its problems), rsa's
// beside the --limit (it does not resume another --limit).
func TestEvalRefusesAGrownLimitOnOtherTexts(t *testing.T) {
	eng, engineURL := startResumeEngine(t)
	dir := t.TempDir()
	for _, tc := range []struct {
		mode, partial string
		args          []string
		failAt        int32
		want          string
	}{
		{"passk", "passk" + report.ProblemsSuffix, []string{"--samples", "4"}, 41,
			" holds 8 of the 12 problems of an interrupted passk evaluation of other settings (problems of other texts or answers (problems_digest)): "},
		{"rsa", "rsa" + report.StepsSuffix, []string{"--population", "2", "--subset", "2", "--rsa-steps", "2"}, 2*24 + 5,
			" holds 2 of the 3 steps of an interrupted rsa evaluation of other settings (the first 12 problems of other texts or answers (problems_digest); the first 12 problems (--limit 12), not these 20): "},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			problems := writeNumberedProblems(t, filepath.Join(dir, tc.mode+".jsonl"), 20)
			out := filepath.Join(dir, tc.mode)
			evalIn := func(extra ...string) (int, string) {
				code, _, stderr := evalOnEngine(context.Background(), engineURL, append(append([]string{"--mode", tc.mode, "--data", problems, "--max-new-tokens", "64", "--quiet", "--out", out}, tc.args...), extra...)...)
				return code, stderr
			}
			eng.served.Store(0)
			eng.failAt.Store(tc.failAt)
			code, stderr := evalIn("--limit", "12")
			require.Equal(t, exitFailure, code, stderr)
			partial := filepath.Join(out, tc.partial)
			require.FileExists(t, partial, stderr)

			// The texts edited, the ids kept.
			b, err := os.ReadFile(problems)
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(problems, bytes.Replace(b, []byte(`"Problem 1"`), []byte(`"Problem one"`), 1), 0o644))
			eng.served.Store(0)
			eng.failAt.Store(0)
			code, stderr = evalIn()
			require.Equal(t, exitUsage, code, stderr)
			require.Contains(t, stderr, partial+tc.want)
			require.Zero(t, eng.served.Load(), "nothing generated")
		})
	}
}

// TestEvalRefusesASmallerLimitOnOtherTexts: an interrupted evaluation of
// the first 12 problems, whose 11th's text then changed in the file (its
// id kept), rerun with --limit 4, was refused as "of --limit 12 ...:
// rerun with --limit 12 to finish it", and that rerun then refused for
// the texts. The first refusal names the texts, as the data set has the
// saved problems now (by their ids).
func TestEvalRefusesASmallerLimitOnOtherTexts(t *testing.T) {
	eng, engineURL := startResumeEngine(t)
	dir := t.TempDir()
	problems := writeNumberedProblems(t, filepath.Join(dir, "problems.jsonl"), 20)
	out := filepath.Join(dir, "eval")
	evalIn := func(extra ...string) (int, string) {
		code, _, stderr := evalOnEngine(context.Background(), engineURL, append([]string{"--mode", "passk", "--data", problems, "--samples", "4", "--max-new-tokens", "64", "--quiet", "--out", out}, extra...)...)
		return code, stderr
	}
	eng.failAt.Store(41) // the first call's 8 problems done
	code, stderr := evalIn("--limit", "12")
	require.Equal(t, exitFailure, code, stderr)
	partial := filepath.Join(out, "passk"+report.ProblemsSuffix)
	require.FileExists(t, partial, stderr)
	eng.failAt.Store(0)
	code, stderr = evalIn("--limit", "4")
	require.Equal(t, exitUsage, code, stderr)
	require.Contains(t, stderr, " of --limit 12, not of these 4 problems: rerun with --limit 12 to finish it", "the texts alike")

	b, err := os.ReadFile(problems)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(problems, bytes.Replace(b, []byte(`"Problem 10"`), []byte(`"Problem ten"`), 1), 0o644))
	eng.served.Store(0)
	code, stderr = evalIn("--limit", "4")
	require.Equal(t, exitUsage, code, stderr)
	require.Contains(t, stderr, partial+" holds 8 of the 12 problems of an interrupted passk evaluation of other settings (the first 12 problems of other texts or answers (problems_digest); the first 12 problems (--limit 12), not these 4): ")
	require.Zero(t, eng.served.Load(), "nothing generated")
}

// TestDigestOf: the saved problems' digest is taken of the data set's
// problems of their ids, in the saved order; where an id is missing, or
// given twice (which of the two was saved is not known), none is.
func TestDigestOf(t *testing.T) {
	p := func(id, text string) data.Problem { return data.Problem{ID: id, Problem: text, Answer: "1"} }
	all := []data.Problem{p("a", "A"), p("b", "B"), p("c", "C"), p("d", "D"), p("d", "D2")}
	for _, tc := range []struct {
		name string
		ids  []string
		want []data.Problem // nil: none
	}{
		{"in order", []string{"a", "b"}, all[:2]},
		{"some skipped", []string{"a", "c"}, []data.Problem{all[0], all[2]}},
		{"missing", []string{"a", "e"}, nil},
		{"twice in the data", []string{"a", "d"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := digestOf(all, tc.ids)
			require.Equal(t, tc.want != nil, ok)
			if tc.want != nil {
				require.Equal(t, data.ProblemsDigest(tc.want), got)
			}
		})
	}
}

// TestEvalResumesSequential: a sequential evaluation (the token budget
// sweep) that failed partway kept nothing, and its rerun started over.
// It now saves its problems as pass@k does, with every sample's
// generated ids, which its budget curve cuts; the rerun evaluates only
// the others and writes the report an uninterrupted evaluation writes
// (its start time aside), with its table and notes.
func TestEvalResumesSequential(t *testing.T) {
	eng, engineURL := startResumeEngine(t)
	dir := t.TempDir()
	problems := writeNumberedProblems(t, filepath.Join(dir, "problems.jsonl"), 20)
	evalIn := func(out string) (int, string, string) {
		return evalOnEngine(context.Background(), engineURL, "--mode", "sequential", "--data", problems, "--samples", "4", "--max-new-tokens", "64", "--quiet", "--out", out)
	}
	whole := filepath.Join(dir, "whole")
	code, wantOut, wantErr := evalIn(whole)
	require.Zero(t, code, wantErr)
	require.Contains(t, wantErr, "traces were cut at --max-new-tokens 64", "the note on cut traces, which the resumed ones count")

	out := filepath.Join(dir, "cut")
	partial := filepath.Join(out, "sequential"+report.ProblemsSuffix)
	eng.served.Store(0)
	eng.failAt.Store(41) // the first call's 8 problems done
	code, _, stderr := evalIn(out)
	require.Equal(t, exitFailure, code, stderr)
	require.Contains(t, stderr, "spiral: note: 8 of the 20 problems were evaluated and saved in "+partial+": rerun the command to resume from there\n")
	saved, err := report.ReadProblems(partial)
	require.NoError(t, err)
	require.Len(t, saved.Problems, 8)
	require.Equal(t, report.ModeSequential, saved.Key.Mode)
	require.NotEmpty(t, saved.Problems[0].Samples[0].Tokens, "the ids the budgets cut")

	eng.served.Store(0)
	eng.failAt.Store(0)
	code, gotOut, gotErr := evalIn(out)
	require.Zero(t, code, gotErr)
	resumed := "spiral: resuming: 8 of 20 problems already evaluated (saved in " + partial + ")\n"
	require.Contains(t, gotErr, resumed)
	require.Equal(t, int32(12*4), eng.served.Load(), "only the problems not saved")
	require.Equal(t, wantOut, strings.Replace(gotOut, out, whole, -1), "the table and the files written")
	require.Equal(t, wantErr, strings.Replace(gotErr, resumed, "", 1), "the notes")
	requireResumedReport(t, out, whole, "sequential.json", saved.Started, func(r *report.Budget) *report.Meta { return &r.Meta })
	require.NoFileExists(t, partial)
}

// TestEvalResumesRSA: an RSA evaluation that failed or was interrupted
// at a step started over when rerun, every step of every problem
// generated again. It now saves its state after each step (the steps'
// figures, the last population's generated ids, finish reasons and
// grades, the cut traces counted) in rsa.steps.json.partial, written
// whole; the rerun of the same command goes on from the step after the
// last saved, and writes the report, table and notes an uninterrupted
// evaluation writes (its start time aside). Other settings are refused
// before the load, as pass@k's are.
func TestEvalResumesRSA(t *testing.T) {
	eng, engineURL := startResumeEngine(t)
	dir := t.TempDir()
	problems := writeNumberedProblems(t, filepath.Join(dir, "problems.jsonl"), 6)
	ctx := context.Background()
	evalIn := func(out string, extra ...string) (int, string, string) {
		return evalOnEngine(ctx, engineURL, append([]string{"--mode", "rsa", "--data", problems, "--population", "2", "--subset", "2", "--rsa-steps", "3", "--max-new-tokens", "64", "--quiet", "--out", out}, extra...)...)
	}
	whole := filepath.Join(dir, "whole")
	code, wantOut, wantErr := evalIn(whole)
	require.Zero(t, code, wantErr)
	require.Equal(t, int32(4*12), eng.served.Load(), "4 steps of 6 problems x 2 members")
	require.Contains(t, wantErr, "traces were cut at --max-new-tokens 64", "the note on cut traces, which the resumed steps count")

	out := filepath.Join(dir, "cut")
	partial := filepath.Join(out, "rsa"+report.StepsSuffix)
	eng.served.Store(0)
	eng.failAt.Store(2*12 + 5) // within step 2
	code, _, stderr := evalIn(out)
	require.Equal(t, exitFailure, code, stderr)
	require.Contains(t, stderr, "spiral: note: 2 of the 4 RSA steps were evaluated and saved in "+partial+": rerun the command to resume from there\n")
	saved, err := report.ReadRSA(partial)
	require.NoError(t, err)
	require.Len(t, saved.Steps, 2)
	require.NotEmpty(t, saved.Population[0][0].Tokens, "the ids the next step aggregates")

	eng.served.Store(0)
	eng.failAt.Store(0)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"another seed", []string{"--seed", "2"}, partial + " holds 2 of the 4 steps of an interrupted rsa evaluation of other settings (seed 1, not 2): rerun with those to resume it, or give --fresh"},
		{"another subset", []string{"--subset", "1"}, partial + " holds 2 of the 4 steps of an interrupted rsa evaluation of other settings (--subset 2, not 1): rerun with those to resume it"},
		{"traces", []string{"--traces"}, "--traces: " + partial + " holds 2 of the 4 steps of an interrupted rsa evaluation, whose traces were not kept"},
	} {
		code, _, stderr := evalIn(out, tc.args...)
		require.Equal(t, exitUsage, code, tc.name)
		require.Contains(t, stderr, tc.want, tc.name)
		require.Zero(t, eng.served.Load(), "%s: nothing generated", tc.name)
	}

	code, gotOut, gotErr := evalIn(out)
	require.Zero(t, code, gotErr)
	resumed := "spiral: resuming: 2 of 4 RSA steps already evaluated (saved in " + partial + ")\n"
	require.Contains(t, gotErr, resumed)
	require.Equal(t, int32(2*12), eng.served.Load(), "steps 2 and 3 alone")
	require.Equal(t, wantOut, strings.Replace(gotOut, out, whole, -1), "the table and the files written")
	require.Equal(t, wantErr, strings.Replace(gotErr, resumed, "", 1), "the notes: the traces cut alike")
	requireResumedReport(t, out, whole, "rsa.json", saved.Started, func(r *report.RSA) *report.Meta { return &r.Meta })
	require.NoFileExists(t, partial, "removed with the report's commit")

	// --fresh discards them and starts over.
	eng.served.Store(0)
	eng.failAt.Store(2*12 + 5)
	code, _, stderr = evalIn(out)
	require.Equal(t, exitFailure, code, stderr)
	eng.served.Store(0)
	eng.failAt.Store(0)
	code, _, stderr = evalIn(out, "--fresh")
	require.Zero(t, code, stderr)
	require.Contains(t, stderr, "spiral: note: --fresh: removed "+partial+", 2 of the 4 steps of an interrupted rsa evaluation\n")
	require.Equal(t, int32(4*12), eng.served.Load())
}

// TestEvalResumesRSAWithMoreSteps: an RSA evaluation of --rsa-steps 3
// interrupted within step 2, rerun with --rsa-steps 5, was refused for
// "--rsa-steps 3, not 5", though no step depends on how many follow it
// (each is seeded by its step, problem and member alone). It resumes:
// the report is the one an uninterrupted evaluation of --rsa-steps 5
// writes (its start time aside), the saved file rewritten under the new
// steps as it goes. One that saved more steps than a rerun's --rsa-steps
// has is still refused: its population is the last saved step's.
func TestEvalResumesRSAWithMoreSteps(t *testing.T) {
	eng, engineURL := startResumeEngine(t)
	dir := t.TempDir()
	problems := writeNumberedProblems(t, filepath.Join(dir, "problems.jsonl"), 6)
	evalIn := func(out, steps string, extra ...string) (int, string, string) {
		return evalOnEngine(context.Background(), engineURL, append([]string{"--mode", "rsa", "--data", problems, "--population", "2", "--subset", "2", "--rsa-steps", steps, "--max-new-tokens", "64", "--quiet", "--out", out}, extra...)...)
	}
	whole := filepath.Join(dir, "whole")
	code, wantOut, wantErr := evalIn(whole, "5")
	require.Zero(t, code, wantErr)
	require.Equal(t, int32(6*12), eng.served.Load(), "6 steps of 6 problems x 2 members")

	out := filepath.Join(dir, "grown")
	partial := filepath.Join(out, "rsa"+report.StepsSuffix)
	eng.served.Store(0)
	eng.failAt.Store(2*12 + 5) // within step 2
	code, _, stderr := evalIn(out, "3")
	require.Equal(t, exitFailure, code, stderr)
	require.Contains(t, stderr, "spiral: note: 2 of the 4 RSA steps were evaluated and saved in "+partial)
	saved, err := report.ReadRSA(partial)
	require.NoError(t, err)

	eng.served.Store(0)
	eng.failAt.Store(0)
	code, gotOut, gotErr := evalIn(out, "5")
	require.Zero(t, code, gotErr)
	resumed := "spiral: resuming: 2 of 6 RSA steps already evaluated (saved in " + partial + " by an evaluation of --rsa-steps 3)\n"
	require.Contains(t, gotErr, resumed)
	require.Equal(t, int32(4*12), eng.served.Load(), "steps 2 to 5 alone")
	require.Equal(t, wantOut, strings.Replace(gotOut, out, whole, -1), "the table and the files written")
	require.Equal(t, wantErr, strings.Replace(gotErr, resumed, "", 1), "the notes")
	requireResumedReport(t, out, whole, "rsa.json", saved.Started, func(r *report.RSA) *report.Meta { return &r.Meta })
	require.NoFileExists(t, partial)

	// 3 steps saved, and a rerun of 2 (--rsa-steps 1): refused.
	eng.served.Store(0)
	eng.failAt.Store(3*12 + 5) // within step 3
	code, _, stderr = evalIn(out, "5")
	require.Equal(t, exitFailure, code, stderr)
	eng.served.Store(0)
	eng.failAt.Store(0)
	code, _, stderr = evalIn(out, "1")
	require.Equal(t, exitUsage, code, stderr)
	require.Contains(t, stderr, partial+" holds 3 of the 6 steps of an interrupted rsa evaluation of other settings (--rsa-steps 5, not 1): rerun with those to resume it")
	require.Zero(t, eng.served.Load(), "nothing generated")
}

// TestEvalRefusesAnotherTokenizer: an evaluation interrupted in each
// mode, rerun with another tokenizer (here the same tokenizer.json with
// a chat template that opens <think>, so that every prompt's ids
// differ), resumed what it saved, though its prompts were other ids:
// pass@k's report mixed two prompt sets' grades, and sequential's and
// rsa's saved generated ids were read (cut, aggregated as candidates)
// as the other tokenizer's text. The key records the tokenizer's
// fingerprint, as train's settings do, and such a rerun is refused
// before anything is generated; the saved work is kept, and the same
// command then resumes it.
func TestEvalRefusesAnotherTokenizer(t *testing.T) {
	eng, engineURL := startResumeEngine(t)
	dir := t.TempDir()
	problems := writeNumberedProblems(t, filepath.Join(dir, "problems.jsonl"), 20)
	embeddedDir, err := embedded.Extract(os.Getenv("SPIRAL_CACHE_DIR"))
	require.NoError(t, err)
	otherTok := thinkingTemplate(t, embeddedDir, filepath.Join(dir, "other-template"))
	for _, tc := range []struct {
		mode, partial string
		args          []string
		failAt        int32
		kept          string
	}{
		{"passk", "passk" + report.ProblemsSuffix, []string{"--samples", "4"}, 41, "8 of the 20 problems of an interrupted passk evaluation"},
		{"sequential", "sequential" + report.ProblemsSuffix, []string{"--samples", "4"}, 41, "8 of the 20 problems of an interrupted sequential evaluation"},
		{"rsa", "rsa" + report.StepsSuffix, []string{"--population", "2", "--subset", "2", "--rsa-steps", "2"}, 2*40 + 5, "2 of the 3 steps of an interrupted rsa evaluation"},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			out := filepath.Join(dir, tc.mode)
			evalIn := func(extra ...string) (int, string) {
				code, _, stderr := evalOnEngine(context.Background(), engineURL, append(append([]string{"--mode", tc.mode, "--data", problems, "--max-new-tokens", "64", "--quiet", "--out", out}, tc.args...), extra...)...)
				return code, stderr
			}
			eng.served.Store(0)
			eng.failAt.Store(tc.failAt)
			code, stderr := evalIn()
			require.Equal(t, exitFailure, code, stderr)
			partial := filepath.Join(out, tc.partial)
			before, err := os.ReadFile(partial)
			require.NoError(t, err, stderr)

			eng.served.Store(0)
			eng.failAt.Store(0)
			code, stderr = evalIn("--tokenizer", otherTok)
			require.Equal(t, exitUsage, code, stderr)
			require.Contains(t, stderr, partial+" holds "+tc.kept+" of other settings (tokenizer (--tokenizer) ")
			require.Zero(t, eng.served.Load(), "nothing generated")
			after, err := os.ReadFile(partial)
			require.NoError(t, err)
			require.Equal(t, string(before), string(after), "the saved work kept")

			code, stderr = evalIn()
			require.Zero(t, code, stderr)
			require.Contains(t, stderr, "spiral: resuming: ")
			require.NoFileExists(t, partial)
		})
	}
}

// TestEvalFinishesAKilledCommitFirst: an evaluation killed within its
// report's commit (after the commit's record, before the removal of
// the problems it saved) left passk.problems.jsonl.partial for the
// next writer in --out to remove (atomicfile.FinishKilled, which
// saveEval's stage runs); a rerun of other settings read the file
// first and was refused for problems of an evaluation that had
// finished. The killed commit is finished before the file is read:
// the rerun evaluates its own settings.
func TestEvalFinishesAKilledCommitFirst(t *testing.T) {
	eng, engineURL := startResumeEngine(t)
	dir := t.TempDir()
	problems := writeNumberedProblems(t, filepath.Join(dir, "problems.jsonl"), 20)
	out := filepath.Join(dir, "eval")
	evalIn := func(extra ...string) (int, string) {
		code, _, stderr := evalOnEngine(context.Background(), engineURL, append([]string{"--mode", "passk", "--data", problems, "--samples", "4", "--max-new-tokens", "64", "--quiet", "--out", out}, extra...)...)
		return code, stderr
	}
	eng.failAt.Store(41)
	code, stderr := evalIn()
	require.Equal(t, exitFailure, code, stderr)
	partial := filepath.Join(out, "passk"+report.ProblemsSuffix)
	require.FileExists(t, partial)
	// A commit killed within its renames: its record (written after
	// the file's last change) names the file for removal.
	old := time.Now().Add(-time.Minute)
	require.NoError(t, os.Chtimes(partial, old, old))
	stage := filepath.Join(out, ".stage-1234")
	require.NoError(t, os.Mkdir(stage, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(stage, ".commit"), []byte(`{"move":[],"remove":["passk.json","passk`+report.ProblemsSuffix+`"]}`), 0o644))

	eng.served.Store(0)
	eng.failAt.Store(0)
	code, stderr = evalIn("--seed", "2")
	require.Zero(t, code, stderr)
	require.NotContains(t, stderr, "resuming")
	require.Equal(t, int32(80), eng.served.Load(), "its own problems, all of them")
	require.NoDirExists(t, stage, "the killed commit finished")
	var rep report.PassAtK
	require.NoError(t, report.ReadJSON(filepath.Join(out, "passk.json"), &rep))
	require.Equal(t, uint64(2), rep.Meta.Seed)
}

// writeNumberedProblems writes n problems as JSONL at path, "Problem i"
// of id "pi" and answer i mod 4 (what resumeEngine's completions are
// graded against), and returns path.
func writeNumberedProblems(t *testing.T, path string, n int) string {
	t.Helper()
	var lines strings.Builder
	for i := range n {
		fmt.Fprintf(&lines, `{"id": "p%d", "problem": "Problem %d", "answer": "%d"}`+"\n", i, i, i%4)
	}
	require.NoError(t, os.WriteFile(path, []byte(lines.String()), 0o644))
	return path
}

// requireResumedReport checks the report name that a resumed evaluation
// wrote in out against the uninterrupted evaluation's in whole: its start
// the interrupted evaluation's (started), all else bit for bit (meta
// gives a report's meta).
func requireResumedReport[R any](t *testing.T, out, whole, name string, started time.Time, meta func(*R) *report.Meta) {
	t.Helper()
	var got, want R
	require.NoError(t, report.ReadJSON(filepath.Join(out, name), &got))
	require.NoError(t, report.ReadJSON(filepath.Join(whole, name), &want))
	require.True(t, started.Equal(meta(&got).Timestamp), "the interrupted evaluation's start")
	meta(&got).Timestamp = meta(&want).Timestamp
	requireSameReportJSON(t, got, filepath.Join(whole, name))
}

// requireSameReportJSON requires the report got, written as eval writes
// reports (report.WriteJSON), to be the report file want byte for byte:
// a resumed evaluation's is the uninterrupted one's (the caller sets the
// start time aside).
func requireSameReportJSON(t *testing.T, got any, want string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "got.json")
	require.NoError(t, report.WriteJSON(path, got))
	gotJSON, err := os.ReadFile(path)
	require.NoError(t, err)
	wantJSON, err := os.ReadFile(want)
	require.NoError(t, err)
	require.Equal(t, string(wantJSON), string(gotJSON), "the uninterrupted evaluation's report, bit for bit, the start time aside")
}

// startResumeEngine gives the test a fresh artifacts cache
// (SPIRAL_CACHE_DIR) and a resumeEngine served over HTTP until the test
// ends, with the --base-url to give it.
func startResumeEngine(t *testing.T) (*resumeEngine, string) {
	t.Setenv("SPIRAL_CACHE_DIR", t.TempDir())
	eng := &resumeEngine{}
	hs := httptest.NewServer(eng)
	t.Cleanup(hs.Close)
	return eng, hs.URL + "/v1"
}

// evalOnEngine runs spiral eval with args on the fake serving engine at
// engineURL (one request at a time), returning its exit status, stdout
// and stderr.
func evalOnEngine(ctx context.Context, engineURL string, args ...string) (int, string, string) {
	var stdout, stderr bytes.Buffer
	args = append([]string{"eval", "--engine", "openai", "--base-url", engineURL, "--served-model", "served", "--engine-concurrency", "1"}, args...)
	code := run(ctx, args, &cliEnv{stdout: &stdout, stderr: &stderr})
	return code, stdout.String(), stderr.String()
}

// TestEvalInterruptedBeforeAnyFinished: an evaluation interrupted
// (Ctrl-C) before its first problem, or RSA step, finished saves nothing,
// its Ctrl-C message having said it keeps what it finished: it says so
// (pass@k of 128 problems runs them all in one call). One with --traces,
// which saves nothing and said nothing of it, says nothing more.
func TestEvalInterruptedBeforeAnyFinished(t *testing.T) {
	const nothing = "spiral: note: no %s was finished: nothing saved, a rerun starts over\n"
	eng, engineURL := startResumeEngine(t)
	dir := t.TempDir()
	problems := writeNumberedProblems(t, filepath.Join(dir, "problems.jsonl"), 6)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"passk", []string{"--mode", "passk", "--samples", "4"}, fmt.Sprintf(nothing, "problem")},
		{"sequential", []string{"--mode", "sequential", "--samples", "2"}, fmt.Sprintf(nothing, "problem")},
		{"rsa", []string{"--mode", "rsa", "--population", "2", "--subset", "2", "--rsa-steps", "3"}, fmt.Sprintf(nothing, "RSA step")},
		{"passk --traces", []string{"--mode", "passk", "--samples", "4", "--traces"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			eng.served.Store(0)
			eng.interrupt, eng.interruptAt = cancel, 3
			out := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-"))
			code, _, stderr := evalOnEngine(ctx, engineURL, append([]string{"--data", problems, "--max-new-tokens", "64", "--quiet", "--out", out}, tc.args...)...)
			require.NotZero(t, code, stderr)
			require.ErrorIs(t, ctx.Err(), context.Canceled, "interrupted")
			require.NotContains(t, stderr, "saved in")
			if tc.want == "" {
				require.NotContains(t, stderr, "nothing saved")
			} else {
				require.Contains(t, stderr, tc.want)
			}
			mode := tc.args[1]
			require.NoFileExists(t, filepath.Join(out, mode+report.ProblemsSuffix))
			require.NoFileExists(t, filepath.Join(out, mode+report.StepsSuffix))
		})
	}
}
