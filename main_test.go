package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/require"

	"github.com/spiral-rl/spiral/data/synth"
	"github.com/spiral-rl/spiral/model"
	"github.com/spiral-rl/spiral/model/tokenizer"
	"github.com/spiral-rl/spiral/rl"
	"github.com/spiral-rl/spiral/rollout/report"
)

// TestWithoutCancellation: an error that only says the run was cancelled
// becomes nil (the command reports an interruption); anything else it
// carries is kept.
func TestWithoutCancellation(t *testing.T) {
	saveFailed := errors.New("save: disk full")
	cases := []struct {
		name string
		err  error
		want error
	}{
		{"cancellation", context.Canceled, nil},
		{"wrapped cancellation", fmt.Errorf("rl: 2 micro-batches: %w", context.Canceled), nil},
		{"joined with a failed save", errors.Join(fmt.Errorf("rl: %w", context.Canceled), saveFailed), saveFailed},
		{"wrapped join with a failed save", fmt.Errorf("run: %w", errors.Join(context.Canceled, saveFailed)), fmt.Errorf("run: %w", errors.Join(context.Canceled, saveFailed))},
		{"another error", saveFailed, saveFailed},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := withoutCancellation(c.err)
			if c.want == nil {
				require.NoError(t, got)
				return
			}
			require.EqualError(t, got, c.want.Error())
		})
	}
}

// emptyFiles makes empty files of the names in a temporary directory, the
// arguments of a command refused for its flags before it reads them (a
// missing one is refused first), and returns their paths.
func emptyFiles(t *testing.T, names ...string) []string {
	t.Helper()
	dir := t.TempDir()
	paths := make([]string, len(names))
	for i, name := range names {
		paths[i] = filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(paths[i], nil, 0o644))
	}
	return paths
}

// dirNames returns the names of dir's entries, in order.
func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// TestCompareFigures: compare's --figures is the plots' extension, one of
// png, svg and pdf; a value that merely ends in one ("a.svg", ".png")
// would name files such as passk.a.svg or passk..png, and is refused
// before any report is read.
func TestCompareFigures(t *testing.T) {
	reports := emptyFiles(t, "a.json", "b.json")
	for _, figures := range []string{"jpg", "", "a.svg", ".png", "x.pdf"} {
		t.Run(figures, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), append([]string{"compare", "--figures", figures}, reports...), &cliEnv{stdout: &stdout, stderr: &stderr})
			require.Equal(t, exitUsage, code, stderr.String())
			require.Contains(t, stderr.String(), fmt.Sprintf("--figures %q: want png, svg or pdf", figures))
		})
	}
}

// TestHelpOfHelp: spiral help followed by help or a flag prints the
// command list, as spiral help does; they were "unknown command
// \"--help\"" (exit 2) once spiral help CMD became spiral CMD --help.
func TestHelpOfHelp(t *testing.T) {
	var top bytes.Buffer
	require.Equal(t, 0, run(context.Background(), []string{"help"}, &cliEnv{stdout: &top, stderr: io.Discard}))
	require.Contains(t, top.String(), "Commands:")
	for _, args := range [][]string{{"help", "help"}, {"help", "--help"}, {"help", "-h"}} {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), args, &cliEnv{stdout: &stdout, stderr: &stderr})
		require.Equal(t, 0, code, "%q: %s", args, stderr.String())
		require.Equal(t, top.String(), stdout.String(), "%q", args)
	}
}

// TestHelpBeforeCommand: spiral --help CMD and spiral -h CMD print
// CMD's usage, as spiral help CMD and spiral CMD --help do (they printed
// the command list); an unknown CMD is refused as spiral help's is.
func TestHelpBeforeCommand(t *testing.T) {
	var want bytes.Buffer
	require.Equal(t, 0, run(context.Background(), []string{"eval", "--help"}, &cliEnv{stdout: &want, stderr: io.Discard}))
	require.Contains(t, want.String(), "spiral eval")
	for _, tc := range []struct {
		args []string
		code int
		out  string // stdout, or "" for none
		err  string // stderr contains
	}{
		{args: []string{"--help", "eval"}, out: want.String()},
		{args: []string{"-h", "eval"}, out: want.String()},
		{args: []string{"help", "eval"}, out: want.String()},
		{args: []string{"--help", "nosuch"}, code: exitUsage, err: `unknown command "nosuch"`},
		{args: []string{"-h", "nosuch"}, code: exitUsage, err: `unknown command "nosuch"`},
	} {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), tc.args, &cliEnv{stdout: &stdout, stderr: &stderr})
		require.Equal(t, tc.code, code, "%q: %s", tc.args, stderr.String())
		require.Equal(t, tc.out, stdout.String(), "%q", tc.args)
		require.Contains(t, stderr.String(), tc.err, "%q", tc.args)
	}
}

// TestIntervalText: each end of an efficiency interval is marked with
// the bound its draw was, either way.
func TestIntervalText(t *testing.T) {
	for _, tc := range []struct {
		iv   report.RatioInterval
		want string
	}{
		{report.RatioInterval{Lo: 0.88, Hi: 2.5}, "0.88 to 2.50x"},
		{report.RatioInterval{Lo: 0.88, Hi: 4, HiAtLeast: true}, "0.88 to >=4.00x"},
		{report.RatioInterval{Lo: 16, Hi: 16, LoAtLeast: true, HiAtLeast: true}, ">=16.00 to >=16.00x"},
		{report.RatioInterval{Lo: 0.25, Hi: 0.5, LoAtMost: true, HiAtMost: true}, "<=0.25 to <=0.50x"},
	} {
		require.Equal(t, tc.want, intervalText(tc.iv))
	}
}

// TestDistinctNames: reports of one name (seeds of one model) are told
// apart in plot's legend by their directories, or their paths where the
// directories' names are alike; a name only one report has stays as it
// is.
func TestDistinctNames(t *testing.T) {
	for _, tc := range []struct {
		names, paths, want []string
	}{
		{[]string{"base", "spiral"}, []string{"e/base/rsa.json", "e/spiral/rsa.json"}, []string{"base", "spiral"}},
		{[]string{"spiral", "spiral", "grpo"}, []string{"e/spiral-rsa-1/rsa.json", "e/spiral-rsa-2/rsa.json", "e/grpo-rsa-1/rsa.json"},
			[]string{"spiral (spiral-rsa-1)", "spiral (spiral-rsa-2)", "grpo"}},
		{[]string{"m", "m"}, []string{"a/out/rsa.json", "b/out/rsa.json"}, []string{"m (a/out/rsa.json)", "m (b/out/rsa.json)"}},
	} {
		require.Equal(t, tc.want, distinctNames(tc.names, tc.paths))
	}
}

// TestMicroBatchTokensMessage: train's --micro-batch-tokens takes 0 for
// auto, so a negative value is refused with train's own range (>= 0),
// not also with the trainer config's ">= 1", which would contradict it;
// sft has no auto, and its range stays >= 1.
func TestMicroBatchTokensMessage(t *testing.T) {
	for _, tc := range []struct {
		args         []string
		want, reject string
	}{
		{[]string{"train", "--micro-batch-tokens", "-1"}, "--micro-batch-tokens -1: want >= 0 (0 = auto)", "--micro-batch-tokens -1: want >= 1"},
		{[]string{"train", "--micro-batch-tokens", "-4096"}, "--micro-batch-tokens -4096: want >= 0 (0 = auto)", "--micro-batch-tokens -4096: want >= 1"},
		{[]string{"sft", "--micro-batch-tokens", "0"}, "--micro-batch-tokens 0: want >= 1", "0 = auto"},
	} {
		t.Run(fmt.Sprint(tc.args), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), tc.args, &cliEnv{stdout: &stdout, stderr: &stderr})
			require.Equal(t, exitUsage, code, stderr.String())
			require.Contains(t, stderr.String(), tc.want)
			require.NotContains(t, stderr.String(), tc.reject)
		})
	}
}

// TestTrainIgnoredFlags: train warns of the flags its --algo does not
// read (the SPIRAL pipeline's with GRPO, --group with the others), and
// of none given where they apply or left at their defaults: GRPO's final
// RSA reads --candidate-tokens, so it is ignored only without one.
func TestTrainIgnoredFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"--algo", "grpo", "--n1", "16", "--n2", "2", "--scale-agg-adv"}, []string{
			"--n1 shapes the SPIRAL pipeline (--algo spiral, agg-only or search-only); --algo grpo, which samples --group traces a problem, ignores it",
			"--n2 shapes the SPIRAL pipeline (--algo spiral, agg-only or search-only); --algo grpo, which samples --group traces a problem, ignores it",
			"--scale-agg-adv shapes the SPIRAL pipeline (--algo spiral, agg-only or search-only); --algo grpo, which samples --group traces a problem, ignores it",
		}},
		{[]string{"--group", "16"}, []string{"--group is --algo grpo's; --algo spiral, which samples --n1 search traces a problem, ignores it"}},
		{[]string{"--algo", "agg-only", "--group", "16", "--n1", "4"}, []string{"--group is --algo grpo's; --algo agg-only, which samples --n1 search traces a problem, ignores it"}},
		{[]string{"--algo", "grpo", "--group", "16"}, nil},
		// The ablations' advantages of the traces they do not train are
		// never used, so neither is their scaling.
		{[]string{"--algo", "search-only", "--scale-agg-adv", "--scale-search-adv"}, []string{
			"--scale-agg-adv scales the aggregation traces' advantages; --algo search-only, which trains the search traces alone, ignores it"}},
		{[]string{"--algo", "agg-only", "--scale-search-adv", "--scale-agg-adv", "--agg-rounds", "2"}, []string{
			"--scale-search-adv scales the set advantages that credit a round's candidates (the search traces, and with --agg-rounds above 1 the previous round's aggregation traces); --algo agg-only, which trains the aggregation traces on their own rewards alone, ignores it"}},
		{[]string{"--scale-search-adv", "--scale-agg-adv"}, nil},
		{[]string{"--reward-truncated"}, []string{"--reward-truncated grades traces cut at --max-new-tokens like the others, which without --reward-fallback need an explicit answer, as a cut trace does by default: alone it changes only the reward of a cut trace whose explicit answer runs up to the cut (\"The final answer is 1\", which may have been going on to 18), which it credits (add --reward-fallback to grade every trace by its last number)"}},
		{[]string{"--reward-truncated", "--reward-fallback"}, nil},
		{[]string{"--n1", "4", "--k", "2", "--candidate-tokens", "64"}, nil},
		{[]string{"--algo", "grpo"}, nil},
		// The final RSA (--final-rsa-steps 4 by default) caps its
		// candidates at --candidate-tokens whatever the algorithm.
		{[]string{"--algo", "grpo", "--candidate-tokens", "64"}, nil},
		{[]string{"--algo", "grpo", "--candidate-tokens", "64", "--data", "d.jsonl", "--eval-data", "e.jsonl"}, nil},
		{[]string{"--algo", "grpo", "--candidate-tokens", "64", "--final-rsa-steps", "0"}, []string{
			"--candidate-tokens caps the candidates of the SPIRAL pipeline's aggregation prompts and of the final RSA; --algo grpo, which samples --group traces a problem, with no final RSA (--final-rsa-steps 0, or --data without --eval-data) ignores it"}},
		{[]string{"--algo", "grpo", "--candidate-tokens", "64", "--data", "d.jsonl"}, []string{
			"--candidate-tokens caps the candidates of the SPIRAL pipeline's aggregation prompts and of the final RSA; --algo grpo, which samples --group traces a problem, with no final RSA (--final-rsa-steps 0, or --data without --eval-data) ignores it"}},
		// The aggregation template likewise: GRPO renders no aggregation
		// prompt but the final RSA's.
		{[]string{"--algo", "grpo", "--aggregate-template", "a.txt"}, nil},
		{[]string{"--aggregate-template", "a.txt", "--final-rsa-steps", "0"}, nil},
		{[]string{"--algo", "grpo", "--aggregate-template", "a.txt", "--final-rsa-steps", "0"}, []string{
			"--aggregate-template renders the SPIRAL pipeline's aggregation prompts and the final RSA's; --algo grpo, which samples --group traces a problem, with no final RSA (--final-rsa-steps 0, or --data without --eval-data) ignores it"}},
	} {
		f := parsedTrainFlags(t, tc.args)
		require.Equal(t, tc.want, f.ignoredFlags(), "%q", tc.args)
	}
}

// TestSFTIgnoredFlags: sft warns of --aggregate-read-share given with
// --aggregate-share 0, which draws no aggregation example for it to
// shape (it was ignored without a word), and of nothing where it applies
// or is left at its default; --candidates, which the evaluation's
// aggregation prompts read, is ignored only where --eval-problems 0 runs
// no evaluation too, and --eval-every where it runs none.
func TestSFTIgnoredFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"--aggregate-share", "0", "--aggregate-read-share", "0.25"}, []string{
			"--aggregate-read-share is the share of aggregation examples that read their candidates; --aggregate-share 0 draws none, so it is ignored"}},
		{[]string{"--aggregate-share", "0", "--candidates", "2"}, nil},
		{[]string{"--aggregate-share", "0", "--candidates", "2", "--eval-problems", "0"}, []string{
			"--candidates sets the candidates of the aggregation examples and of the evaluations' aggregation prompts; --aggregate-share 0 draws no such example and --eval-problems 0 runs no evaluation, so it is ignored"}},
		{[]string{"--candidates", "2", "--eval-problems", "0"}, nil},
		{[]string{"--eval-every", "5", "--eval-problems", "0"}, []string{
			"--eval-every sets how often the held-out problems are evaluated; --eval-problems 0 evaluates none, so it is ignored"}},
		{[]string{"--eval-every", "5"}, nil},
		{[]string{"--aggregate-share", "0.5", "--aggregate-read-share", "0.25"}, nil},
		{[]string{"--aggregate-read-share", "0.25"}, nil},
		{nil, nil},
	} {
		fs := pflag.NewFlagSet("sft", pflag.ContinueOnError)
		var f sftFlags
		f.register(fs)
		require.NoError(t, fs.Parse(tc.args))
		require.Equal(t, tc.want, f.ignoredFlags(), "%q", tc.args)
	}
}

// parsedTrainFlags returns train's flags parsed from args.
func parsedTrainFlags(t *testing.T, args []string) *trainFlags {
	t.Helper()
	fs := pflag.NewFlagSet("train", pflag.ContinueOnError)
	var f trainFlags
	f.register(fs)
	require.NoError(t, fs.Parse(args))
	return &f
}

// TestGRPOCandidateTokensRange: a negative --candidate-tokens with --algo
// grpo, whose final RSA reads it, is a usage error before anything runs:
// GRPO validates no pipeline, so it passed, and the run refused it in
// rl.Run ("rl: run: --candidate-tokens -1", exit 1) once the model was
// opened and its graphs built. Where no final RSA reads it, it is
// ignored with a warning, as GRPO's pipeline flags are.
func TestGRPOCandidateTokensRange(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		refused bool
	}{
		{[]string{"--algo", "grpo", "--candidate-tokens", "-1"}, true},
		{[]string{"--algo", "grpo", "--candidate-tokens", "-1", "--data", "p.jsonl", "--eval-data", "q.jsonl"}, true},
		{[]string{"--algo", "grpo", "--candidate-tokens", "-1", "--final-rsa-steps", "0"}, false},
		{[]string{"--algo", "grpo", "--candidate-tokens", "-1", "--data", "p.jsonl"}, false},
		{[]string{"--algo", "grpo", "--candidate-tokens", "64"}, false},
	} {
		err := parsedTrainFlags(t, tc.args).validate()
		if !tc.refused {
			require.NoError(t, err, "%q", tc.args)
			continue
		}
		require.EqualError(t, err, "--candidate-tokens -1: want >= 0 (0 = no cap)", "%q", tc.args)
	}
	// The other algorithms' pipeline refuses it, as before.
	require.ErrorContains(t, parsedTrainFlags(t, []string{"--candidate-tokens", "-1"}).validate(), "--candidate-tokens is -1; want >= 0 (0 = no cap)")
}

// TestTrainRequestsPerCall: train refuses, as eval and generate do
// (checkRequests), counts whose product is more completions than one
// generation call takes (rollout.MaxRequests): a step's search traces
// (--problems x --n1), its aggregation traces (--problems x --k x --n2),
// GRPO's (--problems x --group) and an evaluation's (--eval-samples x
// the held-out problems --eval-problems leaves). rollout.Complete refused
// them at the first step, exit 1, once the model was opened and every
// prompt rendered (two minutes for --problems 1048576 on the embedded
// model).
func TestTrainRequestsPerCall(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string // "" where the counts are taken
	}{
		{[]string{"--problems", "1048576", "--n1", "32"}, "--problems 1048576 x --n1 32: 33554432 completions in one call (a step's search traces); want at most 16777216"},
		{[]string{"--problems", "524288", "--n1", "32"}, ""},
		{[]string{"--problems", "65536", "--n1", "64", "--k", "64", "--n2", "8"}, "--problems 65536 x --k 64 x --n2 8: 33554432 completions in one call (a step's aggregation traces); want at most 16777216"},
		{[]string{"--algo", "grpo", "--problems", "1048576", "--group", "32"}, "--problems 1048576 x --group 32: 33554432 completions in one call (a step's traces); want at most 16777216"},
		// GRPO samples no pipeline.
		{[]string{"--algo", "grpo", "--problems", "1048576", "--n1", "32", "--group", "2"}, ""},
		// The held-out problems are counted once read: an --eval-problems
		// past them evaluates those there are.
		{[]string{"--eval-problems", "1048576", "--eval-samples", "1024"}, ""},
	} {
		err := parsedTrainFlags(t, tc.args).validate()
		if tc.want == "" {
			require.NoError(t, err, "%q", tc.args)
			continue
		}
		require.EqualError(t, err, tc.want, "%q", tc.args)
	}
	t.Setenv("SPIRAL_CACHE_DIR", t.TempDir())
	dir := t.TempDir()
	held := filepath.Join(dir, "held.jsonl")
	var rows strings.Builder
	for i := range 17 {
		fmt.Fprintf(&rows, "{\"problem\": \"Solve x+%d=%d.\", \"answer\": \"1\"}\n", i, i+1)
	}
	require.NoError(t, os.WriteFile(held, []byte(rows.String()), 0o644))
	for _, args := range [][]string{
		{"--eval-data", held, "--eval-samples", "1048576"},
		{"--eval-samples", "1048576", "--eval-problems", "17"},
	} {
		var stderr bytes.Buffer
		args = append([]string{"train", "--steps", "1", "--final-rsa-steps", "0", "--threads", "1", "--quiet", "--out", filepath.Join(dir, "run")}, args...)
		code := run(context.Background(), args, &cliEnv{stdout: io.Discard, stderr: &stderr})
		require.Equal(t, exitUsage, code, stderr.String())
		require.Equal(t, "spiral train: --eval-samples 1048576 x 17 held-out problems: 17825792 completions in one call; want at most 16777216\n", stderr.String())
		require.NoDirExists(t, filepath.Join(dir, "run"))
	}
}

// TestTrainOffPolicySampling: sampling settings under which the traces
// are not drawn from the distribution the update's log-probabilities are
// of (the model's at temperature 1 over the tokenizer's ids) are warned of,
// naming them; the defaults, given or not, are not.
func TestTrainOffPolicySampling(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, ""},
		{[]string{"--temperature", "1", "--top-p", "1", "--top-k", "0"}, ""},
		{[]string{"--temperature", "0.7"}, "--temperature 0.7: the traces are drawn from another distribution"},
		{[]string{"--top-p", "0.95", "--top-k", "20"}, "--top-p 0.95, --top-k 20: the traces are drawn from another distribution"},
	} {
		got := parsedTrainFlags(t, tc.args).offPolicySampling()
		if tc.want == "" {
			require.Empty(t, got, "%q", tc.args)
			continue
		}
		require.True(t, strings.HasPrefix(got, tc.want), "%q: %s", tc.args, got)
		require.Contains(t, got, "off-policy")
	}
}

// TestTrainNearGreedySampling: sampling that draws (nearly) only the
// most probable token (--top-k 1, a --top-p or --temperature of at most
// 0.1, rl.NearGreedy's cut-off) is warned of at the start, naming the
// settings: a problem's traces agree, so few steps update, which the run
// said only at its end; sampling that still draws widely is not.
func TestTrainNearGreedySampling(t *testing.T) {
	const advice = " near-greedily, so a problem's traces agree and few steps will update (a step trains on problems whose traces got different rewards); train at the defaults (--temperature 1, --top-p 1, --top-k 0)"
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, ""},
		{[]string{"--top-k", "2", "--top-p", "0.9", "--temperature", "0.7"}, ""},
		{[]string{"--top-k", "1"}, "--top-k 1 samples" + advice},
		{[]string{"--top-p", "0.1"}, "--top-p 0.1 samples" + advice},
		{[]string{"--temperature", "0.05", "--top-k", "1"}, "--temperature 0.05, --top-k 1 sample" + advice},
	} {
		require.Equal(t, tc.want, parsedTrainFlags(t, tc.args).nearGreedySampling(), "%q", tc.args)
	}
}

// TestTrainUntrainedSearch: SPIRAL with one subset, or with subsets of
// every search trace, is warned of (its search advantages are all 0);
// shapes in which the search traces learn, and the other algorithms,
// are not.
func TestTrainUntrainedSearch(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--n1", "2", "--k", "1", "--n", "2"}, "--algo spiral with --k 1, --n 2 and --n1 2: one subset is the mean of all --k subsets"},
		// With one subset of 2 of 4 traces, the other 2 are in no subset:
		// not "every search trace is in every subset".
		{[]string{"--n1", "4", "--k", "1", "--n", "2"}, "--algo spiral with --k 1, --n 2 and --n1 4: one subset is the mean of all --k subsets, so a search trace's set-level advantage is always 0 (and one in no subset has none) and only the aggregation traces learn"},
		{[]string{"--n1", "4", "--k", "3", "--n", "4"}, "--algo spiral with --k 3, --n 4 and --n1 4: every subset holds every search trace, so each one's set-level advantage is always 0 and only the aggregation traces learn"},
		{nil, ""},
		{[]string{"--n1", "4", "--k", "2", "--n", "2"}, ""},
		{[]string{"--algo", "agg-only", "--k", "1"}, ""},
		{[]string{"--algo", "grpo", "--k", "1"}, ""},
		// --search-own-reward credits each held trace with its own
		// reward, centred on the held traces' mean: they learn.
		{[]string{"--n1", "4", "--k", "1", "--n", "2", "--search-own-reward", "1"}, ""},
		{[]string{"--n1", "4", "--k", "3", "--n", "4", "--search-own-reward", "0.5"}, ""},
		{[]string{"--n1", "4", "--k", "1", "--n", "1", "--search-own-reward", "1"}, "--algo spiral with --k 1, --n 1 and --n1 4: one subset is the mean of all --k subsets"},
	} {
		f := parsedTrainFlags(t, tc.args)
		got := f.untrainedSearch()
		if tc.want == "" {
			require.Empty(t, got, "%q", tc.args)
		} else {
			require.Contains(t, got, tc.want, "%q", tc.args)
		}
	}
}

// TestEvalIgnoredFlags: eval warns of the flags its --mode does not read
// (--samples with rsa, the RSA flags with passk and sequential), and of
// none given where they apply.
func TestEvalIgnoredFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"--mode", "rsa", "--samples", "4", "--population", "4"}, []string{
			"--samples is for --mode passk and sequential; --mode rsa, which samples --population members a problem, ignores it"}},
		{[]string{"--population", "4", "--rsa-steps", "2"}, []string{
			"--population is for --mode rsa; --mode passk, which samples --samples traces a problem, ignores it",
			"--rsa-steps is for --mode rsa; --mode passk, which samples --samples traces a problem, ignores it"}},
		{[]string{"--mode", "sequential", "--candidate-tokens", "64", "--subset", "2"}, []string{
			"--subset is for --mode rsa; --mode sequential, which samples --samples traces a problem, ignores it",
			"--candidate-tokens is for --mode rsa; --mode sequential, which samples --samples traces a problem, ignores it"}},
		{[]string{"--mode", "rsa", "--population", "4", "--subset", "2", "--rsa-steps", "1", "--candidate-tokens", "64"}, nil},
		// Only RSA renders aggregation prompts: the template was taken
		// in silence.
		{[]string{"--aggregate-template", "a.txt", "--search-template", "s.txt"}, []string{
			"--aggregate-template is for --mode rsa; --mode passk, which renders search prompts only, ignores it"}},
		{[]string{"--mode", "rsa", "--aggregate-template", "a.txt"}, nil},
		{[]string{"--mode", "sequential", "--samples", "4"}, nil},
		{[]string{"--samples", "4"}, nil},
		// Without --reward-fallback every trace needs an explicit answer,
		// which is all a cut trace needs by default, but for one whose
		// answer runs up to the cut.
		{[]string{"--mode", "rsa", "--reward-truncated"}, []string{"--reward-truncated grades traces cut at --max-new-tokens like the others, which without --reward-fallback need an explicit answer, as a cut trace does by default: alone it changes only the reward of a cut trace whose explicit answer runs up to the cut (\"The final answer is 1\", which may have been going on to 18), which it credits (add --reward-fallback to grade every trace by its last number)"}},
		{[]string{"--reward-truncated"}, []string{"--reward-truncated grades traces cut at --max-new-tokens like the others, which without --reward-fallback need an explicit answer, as a cut trace does by default: alone it changes only the reward of a cut trace whose explicit answer runs up to the cut (\"The final answer is 1\", which may have been going on to 18), which it credits (add --reward-fallback to grade every trace by its last number)"}},
		{[]string{"--reward-truncated", "--reward-fallback"}, nil},
		// Every mode saves what it finishes: pass@k and sequential
		// their problems, RSA its steps.
		{[]string{"--mode", "rsa", "--fresh"}, nil},
		{[]string{"--mode", "sequential", "--fresh"}, nil},
		{[]string{"--fresh"}, nil},
	} {
		fs := pflag.NewFlagSet("eval", pflag.ContinueOnError)
		var f evalFlags
		f.register(fs)
		require.NoError(t, fs.Parse(tc.args))
		require.Equal(t, tc.want, f.ignoredFlags(), "%q", tc.args)
	}
}

// TestExportSidecars: an onnx export copies the files beside the model
// that its users read (tokenizer, config.json, tokenizer_config.json,
// generation_config.json, ...), as far as they exist, the tokenizer's
// from beside --tokenizer when given; a file of the same contents already
// beside the export is left alone, one of other contents refused.
func TestExportSidecars(t *testing.T) {
	src := t.TempDir()
	files := map[string]string{"tokenizer.json": "tok", "config.json": "{}", "tokenizer_config.json": `{"chat_template": "x"}`,
		"generation_config.json": `{"top_p": 0.8}`, "README.md": "not a side file"}
	for name, body := range files {
		require.NoError(t, os.WriteFile(filepath.Join(src, name), []byte(body), 0o644))
	}
	givenDir := t.TempDir()
	given := filepath.Join(givenDir, "other.json")
	require.NoError(t, os.WriteFile(given, []byte("given tok"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(givenDir, "tokenizer_config.json"), []byte(`{"chat_template": "given"}`), 0o644))
	r := resolvedModel{onnx: filepath.Join(src, "model.onnx"), dir: src, tokenizer: filepath.Join(src, "tokenizer.json")}
	copied := func(sides []sidecar) map[string]string {
		got := map[string]string{}
		for _, s := range sides {
			got[filepath.Base(s.to)] = string(s.data)
		}
		return got
	}

	// spiral's defaults go only where the model has no file of that name.
	defaults := map[string][]byte{"tokenizer_config.json": []byte("default tc"), "generation_config.json": []byte("default gc")}
	out := filepath.Join(t.TempDir(), "m.onnx")
	sides, _, err := exportSidecars(r, out, defaults, false, false)
	require.NoError(t, err)
	require.Equal(t, map[string]string{"tokenizer.json": "tok", "config.json": "{}", "tokenizer_config.json": `{"chat_template": "x"}`,
		"generation_config.json": `{"top_p": 0.8}`}, copied(sides))

	withGiven := r
	withGiven.tokenizer, withGiven.tokenizerGiven = given, true
	sides, _, err = exportSidecars(withGiven, out, defaults, false, false)
	require.NoError(t, err)
	// The given tokenizer's own files, the model's generation defaults.
	require.Equal(t, map[string]string{"tokenizer.json": "given tok", "config.json": "{}", "tokenizer_config.json": `{"chat_template": "given"}`,
		"generation_config.json": `{"top_p": 0.8}`}, copied(sides))

	for _, s := range sides {
		require.NoError(t, s.writeIn(filepath.Dir(s.to)))
	}
	sides, _, err = exportSidecars(withGiven, out, defaults, false, false)
	require.NoError(t, err)
	require.Empty(t, sides, "the same files are there already")
	require.NoError(t, os.WriteFile(filepath.Join(filepath.Dir(out), "generation_config.json"), []byte("{}"), 0o644))
	_, _, err = exportSidecars(withGiven, out, defaults, false, false)
	require.ErrorContains(t, err, "generation_config.json already exists and differs from "+filepath.Join(src, "generation_config.json"))

	// A model spiral made has tokenizer.json alone: the defaults are
	// written beside its export, and reported as spiral's.
	made := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(made, "tokenizer.json"), []byte("tok"), 0o644))
	rm := resolvedModel{onnx: filepath.Join(made, "model.onnx"), dir: made, tokenizer: filepath.Join(made, "tokenizer.json")}
	out = filepath.Join(t.TempDir(), "m.onnx")
	sides, _, err = exportSidecars(rm, out, defaults, false, false)
	require.NoError(t, err)
	require.Equal(t, map[string]string{"tokenizer.json": "tok", "tokenizer_config.json": "default tc", "generation_config.json": "default gc"}, copied(sides))
	for _, s := range sides {
		if s.from == "" {
			require.Contains(t, s.report(), "spiral's "+filepath.Base(s.to))
		} else {
			require.Equal(t, "a copy of "+filepath.Join(made, "tokenizer.json"), s.report())
		}
		require.NoError(t, s.writeIn(filepath.Dir(s.to)))
	}
	sides, _, err = exportSidecars(rm, out, defaults, false, false)
	require.NoError(t, err)
	require.Empty(t, sides, "the defaults are there already")
	require.NoError(t, os.WriteFile(filepath.Join(filepath.Dir(out), "tokenizer_config.json"), []byte("{}"), 0o644))
	_, _, err = exportSidecars(rm, out, defaults, false, false)
	require.ErrorContains(t, err, "tokenizer_config.json already exists and differs from spiral's tokenizer_config.json")
}

// TestBenchContext: bench refuses rows past the model's context
// (config.json's max_position_embeddings); --prompt-tokens and
// --new-tokens whose sum overflows int were let through once, to a
// generation that allocated prompts of 2^63 tokens.
func TestBenchContext(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{"max_position_embeddings": 4096}`), 0o644))
	r := resolvedModel{onnx: filepath.Join(dir, "model.onnx"), dir: dir}
	const maxInt = int(^uint(0) >> 1)
	for _, tc := range []struct {
		what                 string
		prompt, newTok, rows int
		want                 string // "" for no error
	}{
		{"generate", 4000, 96, 0, ""},
		{"generate", 4000, 97, 0, "--prompt-tokens 4000 + --new-tokens 97"},
		{"generate", maxInt, 1, 0, fmt.Sprintf("--prompt-tokens %d + --new-tokens 1", maxInt)},
		{"generate", 1, maxInt, 0, fmt.Sprintf("--prompt-tokens 1 + --new-tokens %d", maxInt)},
		{"generate", maxInt / 2, maxInt/2 + 2, 0, "has 4096 positions"},
		{"train", maxInt, 1, 1, fmt.Sprintf("--prompt-tokens %d + --new-tokens 1", maxInt)},
		{"train", maxInt, 1, 0, ""}, // no generation: the flags are refused by validate instead
	} {
		f := benchFlags{tokens: 2, prompt: tc.prompt, newTok: tc.newTok, genRows: tc.rows}
		err := f.checkContext(tc.what, r)
		if tc.want == "" {
			require.NoError(t, err, "%+v", tc)
			continue
		}
		require.ErrorContains(t, err, tc.want, "%+v", tc)
		require.ErrorAs(t, err, new(usageError))
	}
}

// TestDataSubcommandFlagsRefused: a flag of one data subcommand given
// to the other is refused naming it and the subcommand that reads it,
// every such flag given, as bench's are; it said only "--problems is
// not a flag of spiral data inspect", of the first alone, though
// `spiral data --help` lists it.
func TestDataSubcommandFlagsRefused(t *testing.T) {
	file := filepath.Join(t.TempDir(), "p.jsonl")
	require.NoError(t, os.WriteFile(file, []byte(`{"problem": "1+1", "answer": "2"}`+"\n"), 0o644))
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"data", "inspect", file, "--problems", "3"}, "--problems is spiral data synth's; spiral data inspect would ignore it"},
		{[]string{"data", "inspect", "--split", "train", file, "--max-operand", "7"},
			"--max-operand is spiral data synth's; spiral data inspect would ignore it\nspiral data: --split is spiral data synth's; spiral data inspect would ignore it"},
		{[]string{"data", "synth", "--problem-field", "q", "--format", "jsonl"},
			"--format is spiral data inspect's; spiral data synth would ignore it\nspiral data: --problem-field is spiral data inspect's; spiral data synth would ignore it"},
	} {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), tc.args, &cliEnv{stdout: &stdout, stderr: &stderr})
		require.Equal(t, exitUsage, code, "%q: %s", tc.args, stderr.String())
		require.Equal(t, "spiral data: "+tc.want+"\n", stderr.String(), "%q", tc.args)
		require.Empty(t, stdout.String(), "%q", tc.args)
	}
}

// TestDataFlagsWithoutData: the flags that say how a data file is read
// (--problem-field, --answer-field, --id-field, --format) are refused
// by eval without --data and by train without --data or --eval-data,
// where they were ignored in silence (an evaluation of the embedded
// task ran as if they had not been given); with a data file to read
// they are taken.
func TestDataFlagsWithoutData(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string // nil: no such error
	}{
		{[]string{"eval", "--problem-field", "q"}, []string{"--problem-field says how to read --data, and none is given: the embedded task's test split is read as it is"}},
		{[]string{"eval", "--format", "json", "--id-field", "-"}, []string{"--id-field says how to read --data", "--format says how to read --data"}},
		{[]string{"train", "--answer-field", "gold"}, []string{"--answer-field says how to read --data and --eval-data, and none is given: the embedded task is read as it is"}},
		{[]string{"eval", "--data", "p.jsonl", "--problem-field", "q", "--format", "jsonl"}, nil},
		{[]string{"train", "--data", "p.jsonl", "--answer-field", "gold"}, nil},
		{[]string{"train", "--eval-data", "e.jsonl", "--answer-field", "gold"}, nil},
	} {
		t.Run(fmt.Sprint(tc.args), func(t *testing.T) {
			fs := pflag.NewFlagSet(tc.args[0], pflag.ContinueOnError)
			var validate func() error
			switch tc.args[0] {
			case "eval":
				var f evalFlags
				f.register(fs)
				validate = f.validate
			case "train":
				var f trainFlags
				f.register(fs)
				validate = f.validate
			}
			require.NoError(t, fs.Parse(tc.args[1:]))
			err := validate()
			if tc.want == nil {
				if err != nil {
					require.NotContains(t, err.Error(), "says how to read")
				}
				return
			}
			require.Error(t, err)
			for _, w := range tc.want {
				require.Contains(t, err.Error(), w)
			}
			var stderr bytes.Buffer
			require.Equal(t, exitUsage, run(context.Background(), tc.args, &cliEnv{stdout: io.Discard, stderr: &stderr}))
			require.Contains(t, stderr.String(), tc.want[0])
		})
	}
}

// TestExportOutDirectory: an onnx export's --out is the .onnx file to
// write; an existing directory there is refused as a usage error before
// any work, where it failed only after the whole model was written to a
// temporary file ("rename ...: file exists"). hf and peft take a
// directory.
func TestExportOutDirectory(t *testing.T) {
	t.Setenv("SPIRAL_CACHE_DIR", t.TempDir())
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"export", "--checkpoint", filepath.Join(dir, "absent"), "--out", dir}, exitUsage,
			fmt.Sprintf("--out %s is a directory: --format onnx writes a .onnx file, its tokenizer and config.json beside it (such as --out %s)", dir, filepath.Join(dir, "model.onnx"))},
		{[]string{"export", "--format", "onnx", "--checkpoint", filepath.Join(dir, "absent"), "--out", dir + "/"}, exitUsage, "is a directory"},
		// Another name than .onnx was the model file, its config.json and
		// tokenizer.json written in the current directory.
		{[]string{"export", "--checkpoint", filepath.Join(dir, "absent"), "--out", filepath.Join(dir, "e8")}, exitUsage,
			fmt.Sprintf("--out %s: --format onnx writes a .onnx file, its tokenizer and config.json beside it: want a path ending in .onnx (such as --out %s)", filepath.Join(dir, "e8"), filepath.Join(dir, "e8", "model.onnx"))},
		{[]string{"export", "--checkpoint", filepath.Join(dir, "absent"), "--out", "e8"}, exitUsage, "--out e8: --format onnx writes a .onnx file"},
		{[]string{"export", "--checkpoint", filepath.Join(dir, "absent"), "--out", filepath.Join(dir, "e8.onnx")}, exitUsage, "--checkpoint " + filepath.Join(dir, "absent") + ": no such file or directory"},
		// A directory is what hf writes: the absent checkpoint is the error.
		{[]string{"export", "--format", "hf", "--checkpoint", filepath.Join(dir, "absent"), "--out", dir}, exitUsage, "--checkpoint " + filepath.Join(dir, "absent") + ": no such file or directory"},
	} {
		var stderr bytes.Buffer
		code := run(context.Background(), tc.args, &cliEnv{stdout: io.Discard, stderr: &stderr})
		require.Equal(t, tc.code, code, "%q: %s", tc.args, stderr.String())
		require.Contains(t, stderr.String(), tc.want, "%q", tc.args)
	}
}

// TestEngineFlagsOfLocal: the serving engine's flags given with the
// local engine are refused as usage errors, as --base-url and
// --served-model are, where --api-key-env, --engine-concurrency and
// --engine-timeout were ignored in silence, a bad value (--engine-timeout
// -1s) included, and the run went ahead.
func TestEngineFlagsOfLocal(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string // "" for no error
	}{
		{[]string{"--engine-timeout", "-1s"}, "--engine-timeout is for --engine openai; the local engine would ignore it"},
		{[]string{"--engine-concurrency", "0"}, "--engine-concurrency is for --engine openai"},
		{[]string{"--api-key-env", "HOME"}, "--api-key-env is for --engine openai"},
		{[]string{"--base-url", "http://127.0.0.1:1/v1"}, "--base-url and --served-model need --engine openai"},
		// Given at their defaults, they are given all the same, as the
		// local sampler's flags with --engine openai are
		// (TestLocalFlagsOfEngine); they passed in silence.
		{[]string{"--engine-concurrency", "16"}, "--engine-concurrency is for --engine openai; the local engine would ignore it"},
		{[]string{"--engine-timeout", "10m"}, "--engine-timeout is for --engine openai; the local engine would ignore it"},
		{[]string{"--engine", "local"}, ""},
		{[]string{"--engine", "openai", "--base-url", "http://127.0.0.1:1/v1", "--served-model", "m", "--engine-timeout", "5s", "--engine-concurrency", "2"}, ""},
	} {
		fs := pflag.NewFlagSet("eval", pflag.ContinueOnError)
		var f evalFlags
		f.register(fs)
		require.NoError(t, fs.Parse(tc.args))
		err := f.engine.validate()
		if tc.want == "" {
			require.NoError(t, err, "%q", tc.args)
			continue
		}
		require.ErrorContains(t, err, tc.want, "%q", tc.args)
		var stderr bytes.Buffer
		args := append([]string{"eval", "--out", t.TempDir()}, tc.args...)
		require.Equal(t, exitUsage, run(context.Background(), args, &cliEnv{stdout: io.Discard, stderr: &stderr}), "%q", args)
		require.Contains(t, stderr.String(), tc.want)
	}
}

// TestLocalFlagsOfEngine: the local sampler's flags given with --engine
// openai are refused as usage errors, as the engine's are with the local
// engine, where --gen-batch and --gen-call-mib were ignored in silence
// (a serving engine batches the requests itself).
func TestLocalFlagsOfEngine(t *testing.T) {
	openai := []string{"--engine", "openai", "--base-url", "http://127.0.0.1:1/v1", "--served-model", "m"}
	for _, tc := range []struct {
		cmd  []string
		args []string
		want string // "" for no error
	}{
		{[]string{"eval"}, []string{"--gen-batch", "8"}, "--gen-batch is for the local engine; a serving engine batches the requests itself (--engine-concurrency bounds those in flight)"},
		{[]string{"eval"}, []string{"--gen-call-mib", "4096"}, "--gen-call-mib is for the local engine; a serving engine would ignore it"},
		{[]string{"generate"}, []string{"--gen-batch", "8"}, "--gen-batch is for the local engine"},
		{[]string{"train", "--engine-sync", "sglang", "--sync-dir", t.TempDir()}, []string{"--gen-call-mib", "4096"}, "--gen-call-mib is for the local engine"},
		// Given at their defaults, they are given all the same (they
		// passed in silence).
		{[]string{"eval"}, []string{"--gen-batch", "64"}, "--gen-batch is for the local engine"},
		{[]string{"eval"}, []string{"--gen-call-mib", "512"}, "--gen-call-mib is for the local engine"},
		// ONNX Runtime's flags, where no model runs here (eval, generate),
		// were ignored in silence: --deterministic promised bit-identical
		// results that the engine's sampling does not give.
		{[]string{"eval"}, []string{"--deterministic"}, "--deterministic is for the local engine; --engine openai runs no model here and would ignore it"},
		{[]string{"eval"}, []string{"--device", "cuda"}, "--device is for the local engine; --engine openai runs no model here and would ignore it"},
		{[]string{"eval"}, []string{"--threads", "2"}, "--threads is for the local engine"},
		{[]string{"eval"}, []string{"--shared-arena=false"}, "--shared-arena is for the local engine"},
		{[]string{"generate"}, []string{"--ort-lib", "/x.so"}, "--ort-lib is for the local engine"},
		{[]string{"generate"}, []string{"--device", "cuda", "--cuda-option", "gpu_mem_limit=1"}, "--cuda-option is for the local engine"},
	} {
		var stderr bytes.Buffer
		args := append(append(append([]string{}, tc.cmd...), openai...), tc.args...)
		if tc.cmd[0] == "generate" {
			args = append(args, "hi")
		} else {
			args = append(args, "--out", t.TempDir())
		}
		require.Equal(t, exitUsage, run(context.Background(), args, &cliEnv{stdout: io.Discard, stderr: &stderr}), "%q: %s", args, stderr.String())
		require.Contains(t, stderr.String(), tc.want, "%q", args)
	}
}

// TestEngineRuntimeFlagsRefusedAlone: an ONNX Runtime flag given to eval
// or generate with --engine openai is refused as unread, and its value
// is not checked first: the refusal printed a complaint about the value
// above it ("--cuda-option applies to --device cuda or auto", "--ort-lib
// /x.so: no such file or directory"), asking for a fix that the next run
// refused all the same.
func TestEngineRuntimeFlagsRefusedAlone(t *testing.T) {
	openai := []string{"--engine", "openai", "--base-url", "http://127.0.0.1:1/v1", "--served-model", "m"}
	for _, tc := range []struct {
		cmd  string
		args []string
		flag string // the flag refused
	}{
		{"generate", []string{"--cuda-option", "gpu_mem_limit=1"}, "cuda-option"},
		{"eval", []string{"--cuda-option", "gpu_mem_limit=1"}, "cuda-option"},
		{"generate", []string{"--ort-lib", "/nonexistent/libonnxruntime.so"}, "ort-lib"},
		{"eval", []string{"--ort-lib", "/nonexistent/libonnxruntime.so"}, "ort-lib"},
		{"eval", []string{"--device", "tpu"}, "device"},
		{"generate", []string{"--shared-arena", "maybe"}, "shared-arena"},
		{"eval", []string{"--threads", "-1"}, "threads"},
	} {
		var stderr bytes.Buffer
		args := append(append([]string{tc.cmd}, openai...), tc.args...)
		if tc.cmd == "generate" {
			args = append(args, "hi")
		} else {
			args = append(args, "--out", t.TempDir())
		}
		require.Equal(t, exitUsage, run(context.Background(), args, &cliEnv{stdout: io.Discard, stderr: &stderr}), "%q: %s", args, stderr.String())
		want := fmt.Sprintf("spiral %s: --%s is for the local engine; --engine openai runs no model here and would ignore it\n", tc.cmd, tc.flag)
		require.Equal(t, want, stderr.String(), "%q", args)
	}
}

// TestCountFlagBounds: every integer flag of every command that counts
// something (samples, traces, problems, rows, steps, tokens, subsets,
// rounds, ranks, threads...) is refused above maxCount as a usage error
// naming the flag and its range, where huge values panicked (makeslice:
// len out of range, in rollout.Complete and bench) or ran the machine out
// of memory. Every int flag of every command is in the table, but the
// MiB flags (maxMiB) and plot's sides (minPlotSide..maxPlotSide), which
// have bounds of their own. A flag with a bound of its own below maxCount
// (ownBound) is refused above it, and its message names that bound.
func TestCountFlagBounds(t *testing.T) {
	openai := []string{"--engine", "openai", "--base-url", "http://127.0.0.1:1/v1", "--served-model", "m"}
	out := t.TempDir()
	cases := []struct {
		args  []string // the command, and flags it needs to reach validation
		flags []string
		tail  []string // arguments after the flags
	}{
		{[]string{"train"}, []string{"steps", "problems", "draw-rounds", "n1", "k", "n", "n2", "agg-rounds", "candidate-tokens", "group", "warmup",
			"micro-batch-tokens", "checkpoint-every", "keep", "eval-every", "eval-problems", "eval-samples", "final-rsa-steps", "max-new-tokens",
			"gen-batch", "top-k", "threads", "lora-rank"}, nil},
		{append([]string{"train", "--engine-sync", "sglang", "--sync-dir", out}, openai...), []string{"engine-concurrency"}, nil},
		{[]string{"eval"}, []string{"limit", "samples", "population", "subset", "rsa-steps", "candidate-tokens", "max-new-tokens", "gen-batch", "top-k", "threads"}, nil},
		{[]string{"eval", "--mode", "rsa"}, []string{"samples", "population", "subset", "rsa-steps", "candidate-tokens"}, nil},
		{append([]string{"eval"}, openai...), []string{"engine-concurrency"}, nil},
		{[]string{"generate"}, []string{"n", "max-new-tokens", "gen-batch", "top-k", "threads"}, []string{"hi"}},
		{append([]string{"generate"}, openai...), []string{"engine-concurrency"}, []string{"hi"}},
		{[]string{"sft"}, []string{"steps", "batch", "warmup", "candidates", "eval-every", "eval-problems", "micro-batch-tokens", "checkpoint-every", "keep",
			"lora-rank", "threads"}, nil},
		{[]string{"bench"}, []string{"rows", "tokens", "steps", "lora-rank", "threads", "generate-rows", "vocab-limit", "micro-batch-tokens", "group"}, []string{"train"}},
		{[]string{"bench"}, []string{"rows", "steps", "prompt-tokens", "new-tokens", "threads"}, []string{"generate"}},
		{[]string{"plan", "--model", "qwen3-4b", "--device-memory", "80GB"}, []string{"rows", "tokens", "lora-rank", "gen-rows", "gen-capacity"}, nil},
		{[]string{"data"}, []string{"problems", "min-operands", "max-operands", "min-operand", "max-operand"}, []string{"synth"}},
		{[]string{"init-model", "--out", filepath.Join(out, "m")}, []string{"layers", "hidden", "heads", "kv-heads", "head-dim", "intermediate", "vocab", "max-positions"}, nil},
		{[]string{"compare"}, []string{"max-k"}, emptyFiles(t, "a.json", "b.json")},
		{[]string{"artifacts"}, []string{"lora-rank"}, nil},
		{[]string{"version"}, []string{"threads"}, nil},
	}
	// The flags with a bound of their own, below maxCount.
	ownBound := map[string]int{
		"data --min-operands": synth.MaxOperandsBound, "data --max-operands": synth.MaxOperandsBound,
		"data --min-operand": synth.MaxOperandBound, "data --max-operand": synth.MaxOperandBound,
	}
	covered := map[string]bool{}
	for _, c := range cases {
		for _, flag := range c.flags {
			covered[c.args[0]+" --"+flag] = true
			for _, v := range []int{math.MaxInt64, maxCount + 1} {
				args := append(append(slices.Clone(c.args), fmt.Sprintf("--%s=%d", flag, v)), c.tail...)
				var stderr bytes.Buffer
				code := run(context.Background(), args, &cliEnv{stdout: io.Discard, stderr: &stderr})
				require.Equal(t, exitUsage, code, "%q: %s", args, stderr.String())
				require.Contains(t, stderr.String(), fmt.Sprintf("--%s %d: want ", flag, v), "%q", args)
				bound := maxCount
				if b, ok := ownBound[c.args[0]+" --"+flag]; ok {
					bound = b
				}
				require.Contains(t, stderr.String(), fmt.Sprintf("..%d", bound), "%q", args)
				require.NotContains(t, stderr.String(), "panic", "%q", args)
				require.NotContains(t, stderr.String(), "goroutine", "%q", args)
			}
		}
	}
	// Every int flag is in the table (a flag added later is too).
	for _, c := range commands() {
		fs := pflag.NewFlagSet(c.name, pflag.ContinueOnError)
		c.setup(fs)
		fs.VisitAll(func(f *pflag.Flag) {
			if f.Value.Type() != "int" || strings.HasSuffix(f.Name, "-mib") || c.name == "plot" && (f.Name == "width" || f.Name == "height") {
				return
			}
			require.True(t, covered[c.name+" --"+f.Name], "spiral %s --%s: an int flag without a bound in this table", c.name, f.Name)
		})
	}
}

// TestCountProducts: the products of counts the commands form stay in
// int and within what one generation call or step takes: eval's
// problems x --samples (or --population) and generate's prompts x --n
// past rollout.MaxRequests, and bench's rows x tokens past maxTokens,
// are usage errors naming the flags, where they panicked in
// rollout.Complete or model.RandomTrainBatch (makeslice) or ran out of
// memory.
func TestCountProducts(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"eval", "--samples", "1048576"}, "--samples 1048576 x 128 problems: 134217728 completions in one call; want at most 16777216"},
		{[]string{"eval", "--mode", "rsa", "--population", "1048576", "--subset", "2"}, "--population 1048576 x 128 problems"},
		{[]string{"generate", "--n", "1048576", "a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m", "n", "o", "p", "q"}, "--n 1048576 x 17 prompts"},
		{[]string{"bench", "train", "--rows", "1048576", "--tokens", "1048576"}, "--rows 1048576 x --tokens 1048576: 1099511627776 tokens a step; want at most 16777216"},
		{[]string{"bench", "train", "--generate-rows", "65536", "--prompt-tokens", "256", "--new-tokens", "1"}, "--generate-rows 65536 x --prompt-tokens + --new-tokens 257"},
		{[]string{"bench", "generate", "--rows", "1048576", "--prompt-tokens", "1048576", "--new-tokens", "1048576"}, "--rows 1048576 x --prompt-tokens + --new-tokens 2097152"},
	} {
		t.Run(fmt.Sprint(tc.args), func(t *testing.T) {
			t.Setenv("SPIRAL_CACHE_DIR", t.TempDir())
			args := tc.args
			if args[0] == "eval" {
				args = append(slices.Clone(args), "--out", t.TempDir())
			}
			var stderr bytes.Buffer
			require.Equal(t, exitUsage, run(context.Background(), args, &cliEnv{stdout: io.Discard, stderr: &stderr}), stderr.String())
			require.Contains(t, stderr.String(), tc.want)
		})
	}
}

// TestFlagsOfAnotherChoiceRefused: a flag that the choice made by
// another flag does not read is refused as a usage error naming it,
// where it was ignored in silence: export's --base-model (peft's) with
// --format onnx or hf, --external-data (onnx's) with hf or peft, and
// plan's --lora-targets without --lora-rank. With the format or rank
// that reads them they are taken (export then fails on the absent
// checkpoint, exit 1).
func TestFlagsOfAnotherChoiceRefused(t *testing.T) {
	t.Setenv("SPIRAL_CACHE_DIR", t.TempDir())
	dir := t.TempDir()
	absent := filepath.Join(dir, "absent")
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"export", "--checkpoint", absent, "--out", filepath.Join(dir, "m.onnx"), "--base-model", "Qwen/Qwen3-4B"}, exitUsage,
			"--base-model names the base model in a peft adapter's adapter_config.json; --format onnx writes no adapter and would ignore it"},
		{[]string{"export", "--format", "hf", "--out", filepath.Join(dir, "hf"), "--base-model", "Qwen/Qwen3-4B"}, exitUsage, "--base-model names the base model"},
		{[]string{"export", "--format", "hf", "--out", filepath.Join(dir, "hf"), "--external-data"}, exitUsage,
			"--external-data writes an onnx export's weights to a side file; --format hf writes no .onnx file and would ignore it"},
		{[]string{"export", "--format", "peft", "--checkpoint", absent, "--out", filepath.Join(dir, "peft"), "--external-data=false"}, exitUsage, "--format peft writes no .onnx file"},
		{[]string{"export", "--format", "peft", "--checkpoint", absent, "--out", filepath.Join(dir, "peft"), "--base-model", "Qwen/Qwen3-4B"}, exitUsage, "--checkpoint " + absent + ": no such file or directory"},
		{[]string{"export", "--checkpoint", absent, "--out", filepath.Join(dir, "m.onnx"), "--external-data"}, exitUsage, "--checkpoint " + absent + ": no such file or directory"},
		{[]string{"plan", "--model", "qwen3-4b", "--device-memory", "80GB", "--lora-targets", "q,v"}, exitUsage,
			"--lora-targets shapes --lora-rank's adapters; without --lora-rank (a full fine-tune) it would be ignored"},
		// train, sft and bench took them without a word, as a full
		// fine-tune.
		{[]string{"train", "--lora-targets", "q,v"}, exitUsage, "--lora-targets shapes --lora-rank's adapters"},
		{[]string{"sft", "--lora-alpha", "16"}, exitUsage, "--lora-alpha shapes --lora-rank's adapters"},
		{[]string{"bench", "train", "--lora-alpha", "16", "--lora-targets", "q"}, exitUsage, "--lora-alpha shapes --lora-rank's adapters; without --lora-rank (a full fine-tune) it would be ignored\nspiral bench: --lora-targets shapes"},
		{[]string{"plan", "--model", "qwen3-4b", "--device-memory", "80GB", "--lora-targets", "q,v", "--lora-rank", "8"}, 0, ""},
		// bench generate refused a --generate-rows above 0 only, and
		// benchmarked in silence with --generate-rows 0 given.
		{[]string{"bench", "generate", "--generate-rows", "0", "--rows", "1", "--prompt-tokens", "4", "--new-tokens", "2", "--steps", "1", "--threads", "1"}, exitUsage,
			"--generate-rows is bench train's (a generation before each step); bench generate takes --rows"},
	} {
		var stderr bytes.Buffer
		code := run(context.Background(), tc.args, &cliEnv{stdout: io.Discard, stderr: &stderr})
		require.Equal(t, tc.code, code, "%q: %s", tc.args, stderr.String())
		require.Contains(t, stderr.String(), tc.want, "%q", tc.args)
	}
}

// TestEmptyOutRefused: an empty --out is a usage error naming the flag
// in every command whose --out is a directory it writes; sft's was exit
// 1 with "--out : mkdir : no such file or directory" after the model
// was opened.
func TestEmptyOutRefused(t *testing.T) {
	t.Setenv("SPIRAL_CACHE_DIR", t.TempDir())
	for _, name := range []string{"train", "eval", "sft"} {
		t.Run(name, func(t *testing.T) {
			var stderr bytes.Buffer
			code := run(context.Background(), []string{name, "--out", ""}, &cliEnv{stdout: io.Discard, stderr: &stderr})
			require.Equal(t, exitUsage, code, stderr.String())
			require.Equal(t, fmt.Sprintf("spiral %s: --out is empty: want %s\n", name, map[string]string{
				"train": "the run directory (default runs/spiral)",
				"eval":  "the directory to write the report in (default runs/eval)",
				"sft":   "the directory to write the trained model in (default runs/sft)"}[name]), stderr.String())
		})
	}
}

// TestEmptyPathRefused: an empty path, a positional argument or a path
// flag's value (a script's unset variable), is a usage error naming it
// and what it must be, in every command, before any work; `spiral plot
// ""` said "open : no such file or directory" (exit 1), and `eval
// --model ""` evaluated the embedded model, `data synth --out ""`
// printed to standard output and `compare --out ""` wrote nothing, as
// though the flag had been left out.
func TestEmptyPathRefused(t *testing.T) {
	t.Setenv("SPIRAL_CACHE_DIR", t.TempDir())
	const report = "an eval report (spiral eval's MODE.json)"
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"plot", ""}, `spiral plot: an empty REPORT.json argument (""): want ` + report},
		{[]string{"plot", "a.json", ""}, `spiral plot: an empty REPORT.json argument (""): want ` + report},
		{[]string{"compare", "", "b.json"}, `spiral compare: an empty REPORT.json argument (""): want ` + report},
		{[]string{"tensorboard", ""}, `spiral tensorboard: an empty RUN_DIR argument (""): want a training run's directory (the --out of spiral train or sft)`},
		{[]string{"data", "inspect", ""}, `spiral data: an empty FILE argument (""): want a JSONL, JSON or Parquet data file`},
		{[]string{"plot", "--out", "", "a.json"}, "spiral plot: --out is empty: want the .png, .svg or .pdf file to write"},
		{[]string{"compare", "--out", "", "a.json", "b.json"}, "spiral compare: --out is empty: want the directory for the plots and summary.md (leave --out out to print only)"},
		{[]string{"data", "synth", "--out="}, "spiral data: --out is empty: want the JSONL file to write (leave --out out for standard output)"},
		{[]string{"eval", "--model", ""}, "spiral eval: --model is empty: want a .onnx file or a directory with model.onnx (leave --model out for the embedded tiny model)"},
		{[]string{"generate", "--checkpoint", "", "hi"}, "spiral generate: --checkpoint is empty: want " + checkpointWant},
		{[]string{"export", "--format", "hf", "--checkpoint", "", "--out", "x"}, "spiral export: --checkpoint is empty: want " + checkpointWant},
		{[]string{"artifacts", "--out", ""}, "spiral artifacts: --out is empty: want the directory to write the graphs in (leave --out out for artifacts/ beside the model)"},
		{[]string{"train", "--out", "", "--data", ""}, "spiral train: --data is empty: want a JSONL, JSON or Parquet file of training problems (leave --data out for the embedded equation task)\nspiral train: --out is empty: want the run directory (default runs/spiral)"},
		{[]string{"version", "--ort-lib", ""}, "spiral version: --ort-lib is empty: want the ONNX Runtime shared library (leave --ort-lib out for $ONNXRUNTIME_LIB, then scripts/setup.sh's)"},
	} {
		var stderr bytes.Buffer
		code := run(context.Background(), tc.args, &cliEnv{stdout: io.Discard, stderr: &stderr})
		require.Equal(t, exitUsage, code, "%q: %s", tc.args, stderr.String())
		require.Equal(t, tc.want+"\n", stderr.String(), "%q", tc.args)
	}
	// Every path flag of every command, each alone.
	for _, c := range commands() {
		fs := pflag.NewFlagSet(c.name, pflag.ContinueOnError)
		c.setup(fs)
		fs.VisitAll(func(f *pflag.Flag) {
			want := f.Annotations[nonEmptyAnnotation]
			if len(want) == 0 {
				return
			}
			args := []string{c.name, "--" + f.Name + "="}
			var stderr bytes.Buffer
			code := run(context.Background(), args, &cliEnv{stdout: io.Discard, stderr: &stderr})
			require.Equal(t, exitUsage, code, "%q: %s", args, stderr.String())
			require.Equal(t, fmt.Sprintf("spiral %s: --%s is empty: want %s\n", c.name, f.Name, want[0]), stderr.String(), "%q", args)
		})
	}
}

// TestMissingPathArgRefused: a positional path argument that does not
// exist is a usage error (exit 2) naming it and what it must be, in every
// command taking one, before any work, as a missing --model or --data
// is; `spiral plot nope.json` said "open nope.json: no such file or
// directory" with exit 1.
func TestMissingPathArgRefused(t *testing.T) {
	t.Setenv("SPIRAL_CACHE_DIR", t.TempDir())
	dir := t.TempDir()
	report := filepath.Join(dir, "report.json")
	require.NoError(t, os.WriteFile(report, []byte("{}"), 0o644))
	nope := filepath.Join(dir, "nope")
	const wantReport = "an eval report (spiral eval's MODE.json)"
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"plot", nope}, "spiral plot: REPORT.json " + nope + " does not exist: want " + wantReport},
		{[]string{"plot", "--out", filepath.Join(dir, "p.png"), report, nope}, "spiral plot: REPORT.json " + nope + " does not exist: want " + wantReport},
		{[]string{"compare", report, nope, nope + "2"}, "spiral compare: REPORT.json " + nope + " does not exist: want " + wantReport + "\nspiral compare: REPORT.json " + nope + "2 does not exist: want " + wantReport},
		{[]string{"tensorboard", dir, nope}, "spiral tensorboard: RUN_DIR " + nope + " does not exist: want a training run's directory (the --out of spiral train or sft)"},
		{[]string{"data", "inspect", nope}, "spiral data: FILE " + nope + " does not exist: want a JSONL, JSON or Parquet data file"},
		// inspect takes one FILE: a second is its usage error, naming
		// the arguments.
		{[]string{"data", "inspect", report, nope}, "spiral data: want `spiral data inspect FILE`, one FILE, not \"inspect " + report + " " + nope + "\" (" + dataUsage + ")"},
		// Under a file: no such path either (it said "stat F/x: not a
		// directory", exit 1).
		{[]string{"plot", filepath.Join(report, "x.json")}, "spiral plot: REPORT.json " + filepath.Join(report, "x.json") + " does not exist: want " + wantReport},
		{[]string{"tensorboard", filepath.Join(report, "run")}, "spiral tensorboard: RUN_DIR " + filepath.Join(report, "run") + " does not exist: want a training run's directory (the --out of spiral train or sft)"},
	} {
		var stderr bytes.Buffer
		code := run(context.Background(), tc.args, &cliEnv{stdout: io.Discard, stderr: &stderr})
		require.Equal(t, exitUsage, code, "%q: %s", tc.args, stderr.String())
		require.Equal(t, tc.want+"\n", stderr.String(), "%q", tc.args)
	}
	// A file that is there but is bad stays a failure (exit 1).
	var stderr bytes.Buffer
	code := run(context.Background(), []string{"plot", "--out", filepath.Join(dir, "p.png"), report}, &cliEnv{stdout: io.Discard, stderr: &stderr})
	require.Equal(t, exitFailure, code, stderr.String())
	require.Contains(t, stderr.String(), report)
	require.NoFileExists(t, filepath.Join(dir, "p.png"))
}

// TestEmptyStringFlagRefused: a flag that is not a path but whose empty
// value meant "left out" (--train "" trained every parameter, --label ""
// labelled the report with the model's name, --api-key-env "" sent no
// key) is refused given "" explicitly (a script's unset variable), naming
// the flag and what it takes.
func TestEmptyStringFlagRefused(t *testing.T) {
	t.Setenv("SPIRAL_CACHE_DIR", t.TempDir())
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"train", "--train", ""}, "spiral train: --train is empty: want a regular expression of the parameters to train (leave --train out to train all)"},
		{[]string{"sft", "--freeze="}, "spiral sft: --freeze is empty: want a regular expression of the parameters not to train (leave --freeze out to train all)"},
		{[]string{"bench", "train", "--train", ""}, "spiral bench: --train is empty: want a regular expression of the parameters to train (leave --train out to train all)"},
		{[]string{"eval", "--label", ""}, "spiral eval: --label is empty: want the model's name in compare and plot (leave --label out for the model's own)"},
		{[]string{"eval", "--engine", "openai", "--base-url", "http://127.0.0.1:1/v1", "--served-model", "m", "--api-key-env", ""},
			"spiral eval: --api-key-env is empty: want the environment variable that holds the API key (leave --api-key-env out to send none)"},
	} {
		var stderr bytes.Buffer
		code := run(context.Background(), tc.args, &cliEnv{stdout: io.Discard, stderr: &stderr})
		require.Equal(t, exitUsage, code, "%q: %s", tc.args, stderr.String())
		require.Equal(t, tc.want+"\n", stderr.String(), "%q", tc.args)
	}
}

// TestEmptyDataAndEngineFlagRefused: the dataset's field and format
// flags and the serving engine's string flags read an explicit "" as left
// out (data inspect --problem-field "" detected the field, exit 0; eval
// --base-url "" with the local engine passed) and are refused given ""
// as the other string flags are (TestEmptyStringFlagRefused).
func TestEmptyDataAndEngineFlagRefused(t *testing.T) {
	t.Setenv("SPIRAL_CACHE_DIR", t.TempDir())
	file := filepath.Join(t.TempDir(), "p.jsonl")
	require.NoError(t, os.WriteFile(file, []byte(`{"problem": "1+1", "answer": "2"}`+"\n"), 0o644))
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"data", "inspect", "--problem-field", "", file}, "spiral data: --problem-field is empty: want the field that holds the problem (leave --problem-field out to detect it)"},
		{[]string{"data", "inspect", "--answer-field=", file}, "spiral data: --answer-field is empty: want the field that holds the gold answer (leave --answer-field out to detect it)"},
		{[]string{"eval", "--data", file, "--id-field", "", "--threads", "-1"}, `spiral eval: --id-field is empty: want the field that holds the id, or "-" for row numbers (leave --id-field out to detect it)`},
		{[]string{"train", "--data", file, "--format=", "--steps", "0"}, "spiral train: --format is empty: want jsonl, json or parquet (leave --format out to tell it from the extension, else the content)"},
		{[]string{"eval", "--base-url", "", "--threads", "-1"}, "spiral eval: --base-url is empty: want the serving engine's API root, e.g. http://127.0.0.1:8000/v1"},
		{[]string{"generate", "--served-model=", "--threads", "-1", "hi"}, "spiral generate: --served-model is empty: want the model name the serving engine serves"},
		{[]string{"train", "--engine-sync", "", "--steps", "0"}, "spiral train: --engine-sync is empty: want vllm-lora or sglang"},
	} {
		// The commands that would run (--steps 0, --threads -1) are
		// refused for their empty flag alone, before validation.
		var stderr bytes.Buffer
		code := run(context.Background(), tc.args, &cliEnv{stdout: io.Discard, stderr: &stderr})
		require.Equal(t, exitUsage, code, "%q: %s", tc.args, stderr.String())
		require.Equal(t, tc.want+"\n", stderr.String(), "%q", tc.args)
	}
}

// TestPlotReportGivenTwice: a report given twice to plot, under any
// spelling, is a usage error naming both, as compare refuses it; plot
// drew the one curve twice, each labelled with the same file.
func TestPlotReportGivenTwice(t *testing.T) {
	dir := t.TempDir()
	rep := filepath.Join(dir, "e", "passk.json")
	require.NoError(t, os.MkdirAll(filepath.Dir(rep), 0o755))
	require.NoError(t, os.WriteFile(rep, []byte(`{"meta": {"mode": "passk", "model": "m", "problems": 1}, "config": {"samples": 2, "ks": [1, 2]},
		"points": [{"k": 1, "pass_at_k": 0.5, "majority_at_k": 0.5}, {"k": 2, "pass_at_k": 1, "majority_at_k": 0.5}]}`), 0o644))
	// One report plots.
	var stdout bytes.Buffer
	require.Zero(t, run(context.Background(), []string{"plot", "--out", filepath.Join(dir, "one.png"), rep}, &cliEnv{stdout: &stdout, stderr: io.Discard}))
	require.Contains(t, stdout.String(), "(1 passk report)")
	other := filepath.Join(dir, "e", ".", "passk.json")
	var stderr bytes.Buffer
	code := run(context.Background(), []string{"plot", "--out", filepath.Join(dir, "p.png"), rep, other}, &cliEnv{stdout: io.Discard, stderr: &stderr})
	require.Equal(t, exitUsage, code, stderr.String())
	require.Equal(t, fmt.Sprintf("spiral plot: %s and %s are one report, given twice: its curve would be drawn twice\n", rep, other), stderr.String())
	require.NoFileExists(t, filepath.Join(dir, "p.png"))
}

// twoPassKReports writes the pass@k reports of two models, a and b, of
// one problem in dir (r0.json, r1.json) and returns their paths.
func twoPassKReports(t *testing.T, dir string) []string {
	t.Helper()
	var reps []string
	for i, model := range []string{"a", "b"} {
		p := filepath.Join(dir, fmt.Sprintf("r%d.json", i))
		require.NoError(t, os.WriteFile(p, []byte(`{"meta": {"mode": "passk", "model": "`+model+`", "problems": 1}, "config": {"samples": 2, "ks": [1, 2]},
			"points": [{"k": 1, "pass_at_k": 0.5, "majority_at_k": 0.5}, {"k": 2, "pass_at_k": 1, "majority_at_k": 0.5}]}`), 0o644))
		reps = append(reps, p)
	}
	return reps
}

// TestCompareOutNotADirectory: compare's --out that is a file is a usage
// error (exit 2) naming the flag and its value once, as train's and
// eval's are;
// it said "spiral compare: compare: --out: mkdir F: not a directory".
func TestCompareOutNotADirectory(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	reps := twoPassKReports(t, dir)
	var stderr bytes.Buffer
	code := run(context.Background(), append([]string{"compare", "--out", file}, reps...), &cliEnv{stdout: io.Discard, stderr: &stderr})
	require.Equal(t, exitUsage, code, stderr.String())
	require.True(t, strings.HasPrefix(stderr.String(), fmt.Sprintf("spiral compare: --out %s: ", file)), stderr.String())
}

// TestOutUnderAFile: an --out (or --sync-dir) that is a file, or lies
// under one, where a directory is wanted, is a usage error naming the
// flag and path, in every command that writes one; it failed with exit 1
// ("--out F: mkdir F: not a directory"), and export's said "--out: open
// F/x: not a directory", naming no --out.
func TestOutUnderAFile(t *testing.T) {
	t.Setenv("SPIRAL_CACHE_DIR", t.TempDir())
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	under := filepath.Join(file, "x")
	reps := twoPassKReports(t, dir)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"init-model", "--out", file}, "spiral init-model: --out " + file + ": mkdir " + file + ": not a directory"},
		{[]string{"train", "--out", file, "--steps", "1", "--quiet"}, "spiral train: --out " + file + ": mkdir " + file + ": not a directory"},
		{[]string{"sft", "--out", file, "--steps", "1", "--quiet"}, "spiral sft: --out " + file + ": mkdir " + file + ": not a directory"},
		{[]string{"eval", "--out", file, "--limit", "1", "--quiet"}, "spiral eval: --out " + file + ": mkdir " + file + ": not a directory"},
		{[]string{"data", "synth", "--problems", "1", "--out", filepath.Join(under, "p.jsonl")}, "spiral data: --out " + filepath.Join(under, "p.jsonl") + ": mkdir " + file + ": not a directory"},
		{append([]string{"plot", "--out", filepath.Join(under, "p.png")}, reps...), "spiral plot: --out " + filepath.Join(under, "p.png") + ": mkdir " + file + ": not a directory"},
		{append([]string{"compare", "--out", file}, reps...), "spiral compare: --out " + file + ": mkdir " + file + ": not a directory"},
		{[]string{"export", "--format", "hf", "--out", under}, "spiral export: --out " + under + ": open " + under + ": not a directory"},
	} {
		var stderr bytes.Buffer
		code := run(context.Background(), tc.args, &cliEnv{stdout: io.Discard, stderr: &stderr})
		require.Equal(t, exitUsage, code, "%q: %s", tc.args, stderr.String())
		require.Equal(t, tc.want+"\n", stderr.String(), "%q", tc.args)
	}
}

// TestOrtLibMissing: an --ort-lib that does not exist, or is a
// directory, is a usage error naming the flag, as every other input path
// flag's is, in every command that runs a model; it failed with exit 1
// ("model: ONNX Runtime library F (from --ort-lib): no such file").
func TestOrtLibMissing(t *testing.T) {
	t.Setenv("SPIRAL_CACHE_DIR", t.TempDir())
	dir := t.TempDir()
	nope := filepath.Join(dir, "libnope.so")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"version", "--ort-lib", nope}, "spiral version: --ort-lib " + nope + ": no such file or directory"},
		{[]string{"version", "--ort-lib", dir}, "spiral version: --ort-lib " + dir + " is a directory: want the ONNX Runtime shared library"},
		{[]string{"eval", "--ort-lib", nope}, "spiral eval: --ort-lib " + nope + ": no such file or directory"},
		{[]string{"generate", "--ort-lib", nope, "hi"}, "spiral generate: --ort-lib " + nope + ": no such file or directory"},
		{[]string{"bench", "train", "--ort-lib", nope}, "spiral bench: --ort-lib " + nope + ": no such file or directory"},
	} {
		var stderr bytes.Buffer
		code := run(context.Background(), tc.args, &cliEnv{stdout: io.Discard, stderr: &stderr})
		require.Equal(t, exitUsage, code, "%q: %s", tc.args, stderr.String())
		require.Equal(t, tc.want+"\n", stderr.String(), "%q", tc.args)
	}
}

// TestOrtLibEnvErrors: a $ONNXRUNTIME_LIB that is missing or does not
// load is named without the model package's prefix, which said nothing
// ("spiral version: model: ONNX Runtime library F (from
// $ONNXRUNTIME_LIB): no such file").
func TestOrtLibEnvErrors(t *testing.T) {
	t.Setenv("SPIRAL_CACHE_DIR", t.TempDir())
	dir := t.TempDir()
	nope := filepath.Join(dir, "libnope.so")
	short := filepath.Join(dir, "libshort.so")
	require.NoError(t, os.WriteFile(short, []byte("not a library"), 0o644))
	for _, tc := range []struct{ lib, want string }{
		{nope, "spiral version: ONNX Runtime library " + nope + " (from $ONNXRUNTIME_LIB): no such file\n"},
		{short, "spiral version: ONNX Runtime library " + short + " (from $ONNXRUNTIME_LIB): does not load: "},
	} {
		t.Setenv("ONNXRUNTIME_LIB", tc.lib)
		var stderr bytes.Buffer
		code := run(context.Background(), []string{"version"}, &cliEnv{stdout: io.Discard, stderr: &stderr})
		require.Equal(t, exitFailure, code, stderr.String())
		require.True(t, strings.HasPrefix(stderr.String(), tc.want), "%s", stderr.String())
	}
}

// TestDataInspectDirectory: spiral data inspect DIR is a usage error
// naming the argument and what it must be, as --data DIR is; it said
// "data: DIR: is a directory, want a data file" (exit 1).
func TestDataInspectDirectory(t *testing.T) {
	dir := t.TempDir()
	var stderr bytes.Buffer
	code := run(context.Background(), []string{"data", "inspect", dir}, &cliEnv{stdout: io.Discard, stderr: &stderr})
	require.Equal(t, exitUsage, code, stderr.String())
	require.Equal(t, "spiral data: FILE "+dir+" is a directory: want a JSONL, JSON or Parquet data file\n", stderr.String())
}

// TestUndetectedFormatNamesTheFlag: a data file whose format neither its
// extension nor its content tells is refused with the flag that sets it,
// as the other hints of the loader name theirs; it said "set the format
// explicitly".
func TestUndetectedFormatNamesTheFlag(t *testing.T) {
	path := filepath.Join(t.TempDir(), "problems")
	require.NoError(t, os.WriteFile(path, []byte("problem,answer\n1+1,2\n"), 0o644))
	var stderr bytes.Buffer
	code := run(context.Background(), []string{"data", "inspect", path}, &cliEnv{stdout: io.Discard, stderr: &stderr})
	require.Equal(t, exitFailure, code, stderr.String())
	require.Equal(t, fmt.Sprintf("spiral data: %s: cannot detect the format from the extension \"\" or the content; give --format jsonl, json or parquet\n", path), stderr.String())
}

// TestFormatDetectedFromContent: a data file whose extension names no
// format is read by its content, as --format's help says; the help said
// "default: from the extension" alone.
func TestFormatDetectedFromContent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "problems.txt")
	require.NoError(t, os.WriteFile(path, []byte(`{"problem": "1+1", "answer": "2"}`+"\n"), 0o644))
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"data", "inspect", path}, &cliEnv{stdout: &stdout, stderr: &stderr})
	require.Equal(t, 0, code, stderr.String())
	require.Contains(t, stdout.String(), "format:   jsonl\n")
	fs := pflag.NewFlagSet("data", pflag.ContinueOnError)
	var df dataFlags
	df.register(fs)
	require.Equal(t, "jsonl, json or parquet (default: from the extension, else from the content)", fs.Lookup("format").Usage)
}

// TestExportOutFile: an hf or peft export's --out is the directory to
// write; an existing file there is refused as a usage error before any
// work, as onnx's directory is (TestExportOutDirectory), where it failed
// after the checkpoint was loaded with "model: hf export: mkdir F: not a
// directory", naming no flag (exit 1).
func TestExportOutFile(t *testing.T) {
	t.Setenv("SPIRAL_CACHE_DIR", t.TempDir())
	dir := t.TempDir()
	file := filepath.Join(dir, "m.onnx")
	require.NoError(t, os.WriteFile(file, []byte("x"), 0o644))
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"export", "--format", "hf", "--out", file},
			fmt.Sprintf("spiral export: --out %s is a file: --format hf writes a directory (model.safetensors, config.json and the tokenizer's files; such as --out %s)\n", file, filepath.Join(dir, "hf"))},
		{[]string{"export", "--format", "peft", "--checkpoint", filepath.Join(dir, "absent"), "--out", file},
			fmt.Sprintf("spiral export: --out %s is a file: --format peft writes a directory (adapter_model.safetensors and adapter_config.json; such as --out %s)\n", file, filepath.Join(dir, "peft"))},
	} {
		var stderr bytes.Buffer
		code := run(context.Background(), tc.args, &cliEnv{stdout: io.Discard, stderr: &stderr})
		require.Equal(t, exitUsage, code, "%q: %s", tc.args, stderr.String())
		require.Equal(t, tc.want, stderr.String(), "%q", tc.args)
		b, err := os.ReadFile(file)
		require.NoError(t, err)
		require.Equal(t, "x", string(b))
	}
}

// TestFreshWithOverride: --fresh starts a run over and --override
// resumes one whose settings differ; given together --override did
// nothing, in silence. They are refused together as a usage error naming
// both, by train and sft.
func TestFreshWithOverride(t *testing.T) {
	t.Setenv("SPIRAL_CACHE_DIR", t.TempDir())
	for _, name := range []string{"train", "sft"} {
		t.Run(name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "run")
			var stderr bytes.Buffer
			code := run(context.Background(), []string{name, "--out", out, "--fresh", "--override"}, &cliEnv{stdout: io.Discard, stderr: &stderr})
			require.Equal(t, exitUsage, code, stderr.String())
			require.Equal(t, fmt.Sprintf("spiral %s: --fresh starts over and --override resumes: give one of them\n", name), stderr.String())
			require.NoDirExists(t, out)
		})
	}
}

// TestExportPEFTTokenizer: --tokenizer names the tokenizer an onnx or hf
// export copies beside the model; a peft export writes the adapters
// alone, so --tokenizer there is refused as a usage error, as
// --external-data and --base-model are with the formats that would
// ignore them; it was ignored in silence.
func TestExportPEFTTokenizer(t *testing.T) {
	t.Setenv("SPIRAL_CACHE_DIR", t.TempDir())
	dir := t.TempDir()
	var stderr bytes.Buffer
	args := []string{"export", "--format", "peft", "--checkpoint", filepath.Join(dir, "absent"), "--out", filepath.Join(dir, "peft"), "--tokenizer", filepath.Join(dir, "tokenizer.json")}
	code := run(context.Background(), args, &cliEnv{stdout: io.Discard, stderr: &stderr})
	require.Equal(t, exitUsage, code, stderr.String())
	require.Equal(t, "spiral export: --tokenizer names the tokenizer an onnx or hf export copies beside the model; --format peft writes the adapters alone and would ignore it\n", stderr.String())
}

// TestEvalIgnoredAggregateTemplate: --mode passk and sequential render
// no aggregation prompt, so an --aggregate-template is ignored, and not
// recorded: its file went into the report's meta.extra (aggregate_template)
// and prompt-template fingerprint, so that compare took two reports of
// the same prompts, one evaluated with the flag, for reports of other
// prompt templates.
func TestEvalIgnoredAggregateTemplate(t *testing.T) {
	skipWithoutRuntime(t)
	t.Setenv("SPIRAL_CACHE_DIR", t.TempDir())
	dir := t.TempDir()
	agg := filepath.Join(dir, "agg.txt")
	require.NoError(t, os.WriteFile(agg, []byte("{{.Problem}}{{range .Candidates}}|{{.Text}}{{end}}\n"), 0o644))
	extra := func(out string, args ...string) map[string]string {
		var stderr bytes.Buffer
		args = append([]string{"eval", "--mode", "passk", "--limit", "1", "--samples", "1", "--max-new-tokens", "4", "--threads", "1", "--quiet", "--out", out}, args...)
		require.Equal(t, 0, run(context.Background(), args, &cliEnv{stdout: io.Discard, stderr: &stderr}), stderr.String())
		b, err := os.ReadFile(filepath.Join(out, "passk.json"))
		require.NoError(t, err)
		var r struct {
			Meta struct {
				Extra map[string]string `json:"extra"`
			} `json:"meta"`
		}
		require.NoError(t, json.Unmarshal(b, &r))
		return r.Meta.Extra
	}
	plain := extra(filepath.Join(dir, "plain"))
	with := extra(filepath.Join(dir, "with"), "--aggregate-template", agg)
	require.NotContains(t, with, "aggregate_template")
	require.Equal(t, plain["templates"], with["templates"])
}

// TestTrainIgnoredEvalFlags: the held-out evaluations' flags given where
// no evaluation reads them are warned of, as the flags --algo does not
// read are (TestTrainIgnoredFlags): --eval-samples with --eval-every 0,
// and --eval-data and --eval-problems with no evaluation at all
// (--eval-every 0 and --final-rsa-steps 0), where --eval-data was not
// even read. They were ignored in silence.
func TestTrainIgnoredEvalFlags(t *testing.T) {
	const (
		samples  = "--eval-samples sets the samples of the evaluations every --eval-every steps; --eval-every 0 runs none and ignores it"
		problems = "--eval-problems chooses the held-out problems; with --eval-every 0 and --final-rsa-steps 0 no evaluation runs, so it is ignored"
		evalData = "--eval-data chooses the held-out problems; with --eval-every 0 and --final-rsa-steps 0 no evaluation runs, so it is ignored"
	)
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"--eval-every", "0", "--eval-samples", "8"}, []string{samples}},
		{[]string{"--eval-every", "0", "--eval-samples", "8", "--eval-problems", "16"}, []string{samples}},
		{[]string{"--eval-every", "0", "--final-rsa-steps", "0", "--eval-samples", "8", "--eval-problems", "16", "--eval-data", "e.jsonl"}, []string{samples, evalData, problems}},
		{[]string{"--eval-every", "0", "--final-rsa-steps", "0", "--eval-data", "e.jsonl", "--data", "d.jsonl"}, []string{evalData}},
		{[]string{"--eval-every", "5", "--eval-samples", "8", "--eval-problems", "16"}, nil},
		{[]string{"--eval-every", "0", "--eval-problems", "16", "--eval-data", "e.jsonl"}, nil},
	} {
		f := parsedTrainFlags(t, tc.args)
		require.Equal(t, tc.want, f.ignoredFlags(), "%q", tc.args)
	}
}

// TestExportOverItsModel: an onnx export whose --out is --model's own
// file is refused as a usage error before any work, as sft refuses an
// --out that is its model's directory; it replaced the model it read,
// after which the run's checkpoints no longer matched it ("was trained
// from ... (model id ...), not from --model ...") and the base model was
// gone. Another file beside it is exported as before.
func TestExportOverItsModel(t *testing.T) {
	t.Setenv("SPIRAL_CACHE_DIR", t.TempDir())
	dir := filepath.Join(t.TempDir(), "m")
	require.Zero(t, run(context.Background(), []string{"init-model", "--out", dir}, &cliEnv{stdout: io.Discard, stderr: io.Discard}))
	src := filepath.Join(dir, "model.onnx")
	before, err := os.ReadFile(src)
	require.NoError(t, err)
	absent := filepath.Join(t.TempDir(), "absent")
	for _, out := range []string{src, filepath.Join(dir, ".", "model.onnx")} {
		var stderr bytes.Buffer
		code := run(context.Background(), []string{"export", "--model", dir, "--checkpoint", absent, "--out", out}, &cliEnv{stdout: io.Discard, stderr: &stderr})
		require.Equal(t, exitUsage, code, stderr.String())
		require.Equal(t, fmt.Sprintf("spiral export: --out %s is the file of --model %s: the export would replace the model it reads, which the checkpoint's run was trained from; give another --out\n", out, src), stderr.String())
	}
	after, err := os.ReadFile(src)
	require.NoError(t, err)
	require.Equal(t, before, after)
	var stderr bytes.Buffer
	code := run(context.Background(), []string{"export", "--model", dir, "--checkpoint", absent, "--out", filepath.Join(dir, "trained.onnx")}, &cliEnv{stdout: io.Discard, stderr: &stderr})
	require.Equal(t, exitUsage, code, stderr.String())
	require.Equal(t, "spiral export: --checkpoint "+absent+": no such file or directory\n", stderr.String(), "past the --out check, to the checkpoint")
}

// TestEngineWithoutRuntime: eval and generate on a serving engine run no
// model here, so they do not load ONNX Runtime: a machine without it
// (here: $ONNXRUNTIME_LIB names a library that does not exist) reaches
// the engine. They failed first with "ONNX Runtime library ... no such
// file", where README says no ONNX session is opened.
func TestEngineWithoutRuntime(t *testing.T) {
	t.Setenv("SPIRAL_CACHE_DIR", t.TempDir())
	t.Setenv("ONNXRUNTIME_LIB", filepath.Join(t.TempDir(), "absent.so"))
	openai := []string{"--engine", "openai", "--base-url", "http://127.0.0.1:1/v1", "--served-model", "m", "--engine-timeout", "1ms"}
	for _, args := range [][]string{
		append(append([]string{"generate"}, openai...), "hi"),
		append([]string{"eval", "--quiet", "--out", t.TempDir()}, openai...),
	} {
		var stderr bytes.Buffer
		code := run(context.Background(), args, &cliEnv{stdout: io.Discard, stderr: &stderr})
		require.Equal(t, exitFailure, code, stderr.String())
		// Refused, or not answered within the timeout: asked either way.
		require.Contains(t, stderr.String(), "rollout: engine: http://127.0.0.1:1/v1/models", "%q", args)
		require.NotContains(t, stderr.String(), "ONNX Runtime", "%q", args)
	}
}

// TestGeneratePromptBeforeEngine: generate refuses an empty prompt, a
// usage error, before it waits for the serving engine (the model check
// retries a server that cannot be reached until --engine-timeout, for
// one still starting): it waited the timeout, then failed on the engine.
func TestGeneratePromptBeforeEngine(t *testing.T) {
	t.Setenv("SPIRAL_CACHE_DIR", t.TempDir())
	var stderr bytes.Buffer
	start := time.Now()
	code := run(context.Background(), []string{"generate", "--engine", "openai", "--base-url", "http://127.0.0.1:1/v1", "--served-model", "m", "--engine-timeout", "20s", "--raw", ""},
		&cliEnv{stdout: io.Discard, stderr: &stderr})
	require.Equal(t, exitUsage, code, stderr.String())
	require.Equal(t, "spiral generate: prompt 0 is empty: with --raw the text is fed as it is, and an empty one has no token to continue\n", stderr.String())
	require.Less(t, time.Since(start), 10*time.Second)
}

// unigramTokenizer writes a tokenizer.json of a Unigram model without
// unk_id over the characters of alphabet (and ChatML's), whose native
// library fails a whole text holding any other, and returns its path.
func unigramTokenizer(t *testing.T, alphabet string) string {
	t.Helper()
	b, err := tokenizer.BuildCharTokenizerJSON([]rune(alphabet))
	require.NoError(t, err)
	var f map[string]any
	require.NoError(t, json.Unmarshal(b, &f))
	m := f["model"].(map[string]any)
	vocab := m["vocab"].(map[string]any)
	pieces := make([][]any, len(vocab))
	for piece, id := range vocab {
		pieces[int(id.(float64))] = []any{piece, -1.0}
	}
	f["model"] = map[string]any{"type": "Unigram", "vocab": pieces}
	b, err = json.Marshal(f)
	require.NoError(t, err)
	tok := filepath.Join(t.TempDir(), "tokenizer.json")
	require.NoError(t, os.WriteFile(tok, b, 0o644))
	return tok
}

// TestGeneratePromptEncodedToNothing: a prompt that the tokenizer
// encodes to no token (a Unigram model without unk_id given a character
// outside its vocab: the native library fails the whole text) was said
// to be "empty: with --raw ...", though it is not and --raw was not
// given; the tokenizer is named, with the character it has no id for
// and where (it said only that it "encodes it to no token").
func TestGeneratePromptEncodedToNothing(t *testing.T) {
	t.Setenv("SPIRAL_CACHE_DIR", t.TempDir())
	tok := unigramTokenizer(t, "0123456789+=")
	lost := func(char string, at int) string {
		return fmt.Sprintf("spiral generate: prompt 0: the tokenizer %s has no id for %s (byte %d) and no unknown token to give (a BPE model whose unk_token is not in its vocab, or a Unigram model without unk_id): it encodes the text that holds it to no token\n", tok, char, at)
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"1+x="}, exitFailure, lost("'x'", 2)},
		{[]string{"--raw", "1+x="}, exitFailure, lost("'x'", 2)},
		// A NUL ends a piece that Encode encodes alone: "1+" was fed
		// and the rest lost, without a word.
		{[]string{"--raw", "1+\x002=¶"}, exitFailure, lost("'¶'", 5)},
		{[]string{"--raw", ""}, exitUsage, "spiral generate: prompt 0 is empty: with --raw the text is fed as it is, and an empty one has no token to continue\n"},
	} {
		var stderr bytes.Buffer
		args := append([]string{"generate", "--tokenizer", tok, "--engine", "openai", "--base-url", "http://127.0.0.1:1/v1", "--served-model", "m", "--engine-timeout", "1ms"}, tc.args...)
		code := run(context.Background(), args, &cliEnv{stdout: io.Discard, stderr: &stderr})
		require.Equal(t, tc.code, code, stderr.String())
		require.Equal(t, tc.want, stderr.String(), "%q", tc.args)
	}
}

// TestLoRAAlphaPastFloat32: --lora-alpha is refused as a usage error
// where the adapters' scale alpha / rank passes float32's range (the
// graphs' type): +Inf was taken, and bench train --lora-rank 1
// --lora-alpha Inf failed after the model was opened with "json:
// unsupported value: +Inf", --lora-alpha 1e39 with "the update would
// make weights or moments non-finite".
func TestLoRAAlphaPastFloat32(t *testing.T) {
	t.Setenv("SPIRAL_CACHE_DIR", t.TempDir())
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"artifacts", "--lora-alpha", "Inf"}, "--lora-alpha +Inf: want > 0, with --lora-alpha / --lora-rank (+Inf) at most float32's largest value 3.4028234663852886e+38"},
		{[]string{"bench", "train", "--lora-rank", "1", "--lora-alpha", "1e39"}, "--lora-alpha 1e+39: want > 0, with --lora-alpha / --lora-rank (1e+39) at most float32's largest value"},
		{[]string{"train", "--lora-rank", "2", "--lora-alpha", "1e39"}, "--lora-alpha 1e+39: want > 0, with --lora-alpha / --lora-rank (5e+38) at most float32's largest value"},
		{[]string{"plan", "--model", "qwen3-4b", "--device-memory", "80GB", "--lora-rank", "2", "--lora-alpha", "1e39"}, "--lora-alpha 1e+39: want > 0, with --lora-alpha / --lora-rank (5e+38) at most float32's largest value"},
	} {
		var stderr bytes.Buffer
		code := run(context.Background(), tc.args, &cliEnv{stdout: io.Discard, stderr: &stderr})
		require.Equal(t, exitUsage, code, "%q: %s", tc.args, stderr.String())
		require.Contains(t, stderr.String(), tc.want, "%q", tc.args)
	}
	// A rank that brings the scale within range is taken.
	_, err := parseLoRA(4, 1e39, "q")
	require.NoError(t, err)
}

// TestSearchOwnRewardPastFloat32: --search-own-reward is refused as a
// usage error past float32's largest value (the advantages' type in the
// training examples): 1e300 is finite as a float64 and was taken, and each
// search trace's advantage float32(w x centred reward) became +Inf or -Inf.
func TestSearchOwnRewardPastFloat32(t *testing.T) {
	t.Setenv("SPIRAL_CACHE_DIR", t.TempDir())
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"train", "--search-own-reward", "1e300"}, "--search-own-reward 1e+300: want a finite weight >= 0, at most float32's largest value 3.4028234663852886e+38"},
		{[]string{"train", "--search-own-reward", "3.5e38"}, "--search-own-reward 3.5e+38: want a finite weight >= 0, at most float32's largest value 3.4028234663852886e+38"},
		{[]string{"train", "--search-own-reward", "-1"}, "--search-own-reward -1: want a finite weight >= 0, at most float32's largest value"},
		{[]string{"train", "--search-own-reward", "Inf"}, "--search-own-reward +Inf: want a finite weight >= 0, at most float32's largest value"},
	} {
		var stderr bytes.Buffer
		code := run(context.Background(), tc.args, &cliEnv{stdout: io.Discard, stderr: &stderr})
		require.Equal(t, exitUsage, code, "%q: %s", tc.args, stderr.String())
		require.Contains(t, stderr.String(), tc.want, "%q", tc.args)
	}
}

// TestLoRAFlagsNamed: a LoRA flag refused is named as the flag, where
// the message named lmgraph.LoRA's fields after the three flags
// ("--lora-rank/--lora-alpha/--lora-targets: lora rank -1: want >= 0").
func TestLoRAFlagsNamed(t *testing.T) {
	t.Setenv("SPIRAL_CACHE_DIR", t.TempDir())
	out := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"train", "--lora-rank", "-1", "--out", out}, "spiral train: --lora-rank -1: want >= 0\n"},
		{[]string{"sft", "--lora-rank", "4", "--lora-alpha", "0", "--out", out},
			"spiral sft: --lora-alpha 0: want > 0, with --lora-alpha / --lora-rank (0) at most float32's largest value 3.4028234663852886e+38\n"},
		{[]string{"bench", "train", "--lora-rank", "1", "--lora-alpha", "1e-46"},
			"spiral bench: --lora-alpha 1e-46: --lora-alpha / --lora-rank (1e-46) is below float32's smallest normal value 1.1754943508222875e-38, in which the adapters' product and their gradients vanish\n"},
		{[]string{"train", "--lora-rank", "4", "--lora-targets", ",", "--out", out}, "spiral train: --lora-targets: none given\n"},
	} {
		var stderr bytes.Buffer
		code := run(context.Background(), tc.args, &cliEnv{stdout: io.Discard, stderr: &stderr})
		require.Equal(t, exitUsage, code, "%q: %s", tc.args, stderr.String())
		require.Equal(t, tc.want, stderr.String(), "%q", tc.args)
	}
}

// TestCompareOutHoldingAReport: compare --out in an eval's output
// directory, beside its MODE.json, would replace that report's plot
// MODE.png with the comparison's overlay of the mode, in silence; it is
// refused as a usage error naming the report. SVG or PDF overlays, whose
// names are not eval's plots, are written there as before.
func TestCompareOutHoldingAReport(t *testing.T) {
	dir := t.TempDir()
	reps := twoPassKReports(t, dir)
	evalOut := filepath.Join(dir, "eval")
	require.NoError(t, os.MkdirAll(evalOut, 0o755))
	b, err := os.ReadFile(reps[0])
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(evalOut, "passk.json"), b, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(evalOut, "passk.png"), []byte("eval's plot"), 0o644))
	var stderr bytes.Buffer
	code := run(context.Background(), append([]string{"compare", "--out", evalOut}, reps...), &cliEnv{stdout: io.Discard, stderr: &stderr})
	require.Equal(t, exitUsage, code, stderr.String())
	require.Equal(t, fmt.Sprintf("spiral compare: --out %s holds the eval report %s, whose plot passk.png the comparison's overlay of passk reports would replace; give another --out (or --figures svg or pdf)\n",
		evalOut, filepath.Join(evalOut, "passk.json")), stderr.String())
	plot, err := os.ReadFile(filepath.Join(evalOut, "passk.png"))
	require.NoError(t, err)
	require.Equal(t, "eval's plot", string(plot))
	require.NoFileExists(t, filepath.Join(evalOut, "summary.md"))

	require.Zero(t, run(context.Background(), append([]string{"compare", "--figures", "svg", "--out", evalOut}, reps...), &cliEnv{stdout: io.Discard, stderr: io.Discard}))
	require.FileExists(t, filepath.Join(evalOut, "passk.svg"))
}

// TestTrainHeaderLR: train's first line states the peak learning rate as
// given, where "%.0e" rounded it to one digit: --lr 1.5e-4 read "lr
// 2e-04", --lr 2.5e-5 "lr 2e-05". (The run is interrupted before its
// first step: the context is cancelled as the line is written.)
func TestTrainHeaderLR(t *testing.T) {
	t.Setenv("SPIRAL_CACHE_DIR", t.TempDir())
	for _, tc := range []struct{ lr, want string }{{"1.5e-4", "lr 0.00015,"}, {"2.5e-5", "lr 2.5e-05,"}, {"0", "lr 0.0001,"}} {
		ctx, cancel := context.WithCancel(context.Background())
		stdout := &cancelOnWrite{cancel: cancel}
		var stderr bytes.Buffer
		code := run(ctx, []string{"train", "--lr", tc.lr, "--out", t.TempDir(), "--eval-every", "0", "--final-rsa-steps", "0", "--quiet", "--threads", "1"},
			&cliEnv{stdout: stdout, stderr: &stderr})
		require.Equal(t, exitInterrupted, code, stderr.String())
		require.Contains(t, stdout.String(), tc.want, "--lr %s", tc.lr)
	}
}

// cancelOnWrite is an output that cancels a command's context at its
// first write (a Ctrl-C once the command has said something): the
// context cancelled before the command starts stops it before its
// model is read.
type cancelOnWrite struct {
	bytes.Buffer
	cancel context.CancelFunc
}

func (w *cancelOnWrite) Write(p []byte) (int, error) {
	w.cancel()
	return w.Buffer.Write(p)
}

// TestTrainEvalProblemsPastEvalData: --eval-problems above the problems
// of --eval-data evaluates those there are, with a note naming both, as
// eval's --limit past its data does; it said nothing. (The run is
// interrupted before its first step: the context is cancelled.)
func TestTrainEvalProblemsPastEvalData(t *testing.T) {
	t.Setenv("SPIRAL_CACHE_DIR", t.TempDir())
	dir := t.TempDir()
	problems := filepath.Join(dir, "p.jsonl")
	require.Zero(t, run(context.Background(), []string{"data", "synth", "--split", "train", "--problems", "4", "--out", problems}, &cliEnv{stdout: io.Discard, stderr: io.Discard}))
	held := filepath.Join(dir, "h.jsonl")
	require.Zero(t, run(context.Background(), []string{"data", "synth", "--problems", "3", "--out", held}, &cliEnv{stdout: io.Discard, stderr: io.Discard}))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tc := range []struct {
		n    string
		note bool
	}{{"8", true}, {"3", false}, {"", false}} {
		args := []string{"train", "--data", problems, "--eval-data", held, "--out", t.TempDir(), "--quiet", "--threads", "1"}
		if tc.n != "" {
			args = append(args, "--eval-problems", tc.n)
		}
		var stderr bytes.Buffer
		code := run(ctx, args, &cliEnv{stdout: io.Discard, stderr: &stderr})
		require.Equal(t, exitInterrupted, code, stderr.String())
		note := fmt.Sprintf("spiral: note: --eval-problems %s: %s has 3 problems; evaluating those\n", tc.n, held)
		if tc.note {
			require.Contains(t, stderr.String(), note)
		} else {
			require.NotContains(t, stderr.String(), "--eval-problems")
		}
	}
}

// TestEvalRSAIntoRunDirectory: eval --mode rsa writes rsa.json, the name
// of a training run's final RSA report, which the run reads as done when
// it resumes at its last step: into a run directory (one with
// metrics.jsonl) it replaced the run's report, or, written before the run
// finished, made the run skip its final RSA and summarise eval's. Such an
// --out is refused as a usage error before any work; the other modes,
// whose reports take no run file's name, may write there.
func TestEvalRSAIntoRunDirectory(t *testing.T) {
	t.Setenv("SPIRAL_CACHE_DIR", t.TempDir())
	runDir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(runDir, "metrics.jsonl"), []byte("{}\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(runDir, "rsa.json"), []byte("the run's"), 0o644))
	var stderr bytes.Buffer
	code := run(context.Background(), []string{"eval", "--mode", "rsa", "--out", runDir}, &cliEnv{stdout: io.Discard, stderr: &stderr})
	require.Equal(t, exitUsage, code, stderr.String())
	require.Equal(t, fmt.Sprintf("spiral eval: --out %s is a training run's directory (it holds metrics.jsonl): --mode rsa would write rsa.json over the run's final RSA report, which a resumed run reads as done; give another --out\n", runDir), stderr.String())
	b, err := os.ReadFile(filepath.Join(runDir, "rsa.json"))
	require.NoError(t, err)
	require.Equal(t, "the run's", string(b))
	require.NoFileExists(t, filepath.Join(runDir, ".rsa.lock"))
}

// TestAPIKeyEnv: --api-key-env naming a variable that is unset, or set
// but empty, is refused saying which (an empty one was said to be unset).
// So is a key an HTTP header cannot carry, such as one ending in the
// carriage return of an env file written on Windows: Go refused every
// request before sending it, which was reported as the server not being
// reachable, and the model check waited for it up to --engine-timeout.
// The key itself is not printed.
func TestAPIKeyEnv(t *testing.T) {
	t.Setenv("SPIRAL_TEST_EMPTY_KEY", "")
	t.Setenv("SPIRAL_TEST_KEY", "k")
	t.Setenv("SPIRAL_TEST_CRLF_KEY", "s3cret\r")
	t.Setenv("SPIRAL_TEST_NEWLINE_KEY", "s3cret\nother")
	for _, tc := range []struct {
		env, want string
	}{
		{"SPIRAL_TEST_UNSET_KEY", "--api-key-env SPIRAL_TEST_UNSET_KEY: the variable is not set"},
		{"SPIRAL_TEST_EMPTY_KEY", "--api-key-env SPIRAL_TEST_EMPTY_KEY: the variable is empty"},
		{"SPIRAL_TEST_CRLF_KEY", "--api-key-env SPIRAL_TEST_CRLF_KEY: the API key holds a carriage return (byte 7 of 7), which an HTTP header cannot carry (a line ending read with it?)"},
		{"SPIRAL_TEST_NEWLINE_KEY", "--api-key-env SPIRAL_TEST_NEWLINE_KEY: the API key holds a line feed (byte 7 of 12), which an HTTP header cannot carry (a line ending read with it?)"},
		{"SPIRAL_TEST_KEY", ""},
	} {
		f := engineFlags{engine: "openai", baseURL: "http://127.0.0.1:1/v1", model: "m", keyEnv: tc.env, concurrency: 1, timeout: time.Second}
		err := f.validate()
		if tc.want == "" {
			require.NoError(t, err, tc.env)
			continue
		}
		require.EqualError(t, err, tc.want)
	}
}

// TestExportPEFTIntoModelDirectory: a peft export into a directory that
// holds a Hugging Face model's weights (an hf export, such as the base
// the README exports for peft, or a download) is refused as a usage
// error before any work: transformers loads a directory holding
// adapter_config.json as that adapter on its base, so the model there
// (here the embedded model's hf export) loaded with the adapter applied,
// its logits moved by up to 2.9, and PeftModel applied it once more. The
// hf export refuses a peft adapter's files for the same reason (removes
// them with --overwrite).
func TestExportPEFTIntoModelDirectory(t *testing.T) {
	t.Setenv("SPIRAL_CACHE_DIR", t.TempDir())
	for _, weights := range []string{"model.safetensors", "model.safetensors.index.json"} {
		dir := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(dir, weights), []byte("x"), 0o644))
		var stderr bytes.Buffer
		args := []string{"export", "--format", "peft", "--checkpoint", filepath.Join(t.TempDir(), "absent"), "--out", dir}
		code := run(context.Background(), args, &cliEnv{stdout: io.Discard, stderr: &stderr})
		require.Equal(t, exitUsage, code, stderr.String())
		require.Equal(t, fmt.Sprintf("spiral export: --out %s holds a Hugging Face model (%s): transformers would load it with the adapter written beside it applied; give the adapter a directory of its own (such as --out %s), or --overwrite to replace that model\n",
			dir, weights, filepath.Join(filepath.Dir(dir), "peft")), stderr.String())
		entries, err := os.ReadDir(dir)
		require.NoError(t, err)
		require.Len(t, entries, 1, "nothing written")
	}
}

// TestExportSidecarsOfTrainedWeights: the export of a checkpoint's
// weights writes config.json without its _name_or_path (it names the
// source model, not the trained weights; model.TrainedConfig), and says
// so; exported beside the source model, in its directory, the source's
// own config.json is left as it is, as when the copy was the same: it
// was refused as a file that "differs from" itself, with the advice to
// remove it.
func TestExportSidecarsOfTrainedWeights(t *testing.T) {
	src := t.TempDir()
	config := `{"_name_or_path": "Qwen/Qwen3-0.6B", "vocab_size": 49}`
	require.NoError(t, os.WriteFile(filepath.Join(src, "config.json"), []byte(config), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(src, "tokenizer.json"), []byte("tok"), 0o644))
	r := resolvedModel{onnx: filepath.Join(src, "model.onnx"), dir: src, tokenizer: filepath.Join(src, "tokenizer.json")}

	out := filepath.Join(t.TempDir(), "m.onnx")
	sides, _, err := exportSidecars(r, out, nil, true, false)
	require.NoError(t, err)
	require.Len(t, sides, 2)
	require.Equal(t, filepath.Join(filepath.Dir(out), "config.json"), sides[0].to)
	require.Equal(t, "{\n  \"vocab_size\": 49\n}\n", string(sides[0].data))
	require.Equal(t, "a copy of "+filepath.Join(src, "config.json")+" without its _name_or_path (it names that model, not these weights)", sides[0].report())
	for _, s := range sides {
		require.NoError(t, s.writeIn(filepath.Dir(s.to)))
	}
	sides, _, err = exportSidecars(r, out, nil, true, false)
	require.NoError(t, err)
	require.Empty(t, sides, "exported again: there already")
	// A copy of the source's config.json there (an export of the model
	// itself, or one before this fix) is replaced.
	require.NoError(t, os.WriteFile(filepath.Join(filepath.Dir(out), "config.json"), []byte(config), 0o644))
	sides, _, err = exportSidecars(r, out, nil, true, false)
	require.NoError(t, err)
	require.Len(t, sides, 1)
	require.Equal(t, "{\n  \"vocab_size\": 49\n}\n", string(sides[0].data))
	sides, _, err = exportSidecars(r, filepath.Join(t.TempDir(), "m.onnx"), nil, false, false)
	require.NoError(t, err)
	require.Equal(t, config, string(sides[0].data), "the model itself: a copy")

	sides, _, err = exportSidecars(r, filepath.Join(src, "trained.onnx"), nil, true, false)
	require.NoError(t, err)
	require.Empty(t, sides, "the source's own files")
	b, err := os.ReadFile(filepath.Join(src, "config.json"))
	require.NoError(t, err)
	require.Equal(t, config, string(b))
}

// TestExportSidecarsConfigDtype: an onnx export writes float32 weights
// (spiral reads and trains no other), and the config.json beside it says
// so, as the hf export's does: a source config.json of a bfloat16
// release ("torch_dtype": "bfloat16", as optimum copies it beside its
// float32 ONNX export; transformers 5's "dtype") was copied as it was,
// so an hf export or transformers reading it took the weights for
// bfloat16 ones. The report says what changed; a config.json without a
// dtype other than float32 is left byte for byte. A multimodal model's
// text_config, the config of the text model whose weights are exported,
// says float32 too; another sub-model's config (vision_config), whose
// weights no export writes, is left as it is.
func TestExportSidecarsConfigDtype(t *testing.T) {
	for _, tc := range []struct {
		name, config, want, report string
	}{
		{"torch_dtype", `{"vocab_size": 49, "torch_dtype": "bfloat16"}`, "{\n  \"vocab_size\": 49,\n  \"torch_dtype\": \"float32\"\n}\n",
			" with its dtype float32, the weights' type"},
		{"dtype and a name", `{"_name_or_path": "Qwen/Qwen3-0.6B", "dtype": "float16", "vocab_size": 49}`, "{\n  \"dtype\": \"float32\",\n  \"vocab_size\": 49\n}\n",
			" without its _name_or_path (it names that model, not these weights) and with its dtype float32, the weights' type"},
		{"float32 already", `{"vocab_size": 49, "torch_dtype": "float32"}`, `{"vocab_size": 49, "torch_dtype": "float32"}`, ""},
		// A multimodal model's (Qwen3-VL's, Gemma 3's) text model, whose
		// weights these are, states its dtype in text_config too: it was
		// left bfloat16.
		{"text_config", `{"dtype": "bfloat16", "text_config": {"dtype": "bfloat16", "vocab_size": 49}, "vision_config": {"dtype": "bfloat16"}}`,
			"{\n  \"dtype\": \"float32\",\n  \"text_config\": {\n    \"dtype\": \"float32\",\n    \"vocab_size\": 49\n  },\n  \"vision_config\": {\n    \"dtype\": \"bfloat16\"\n  }\n}\n",
			" with its dtype float32, the weights' type"},
		{"text_config alone", `{"text_config": {"torch_dtype": "bfloat16", "vocab_size": 49}}`, "{\n  \"text_config\": {\n    \"torch_dtype\": \"float32\",\n    \"vocab_size\": 49\n  }\n}\n",
			" with its dtype float32, the weights' type"},
		{"text_config float32 already", `{"text_config": {"dtype": "float32"}, "text_config_note": {"dtype": "bfloat16"}}`, `{"text_config": {"dtype": "float32"}, "text_config_note": {"dtype": "bfloat16"}}`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := t.TempDir()
			require.NoError(t, os.WriteFile(filepath.Join(src, "config.json"), []byte(tc.config), 0o644))
			require.NoError(t, os.WriteFile(filepath.Join(src, "tokenizer.json"), []byte("tok"), 0o644))
			r := resolvedModel{onnx: filepath.Join(src, "model.onnx"), dir: src, tokenizer: filepath.Join(src, "tokenizer.json")}
			sides, _, err := exportSidecars(r, filepath.Join(t.TempDir(), "m.onnx"), nil, true, false)
			require.NoError(t, err)
			require.Equal(t, "config.json", filepath.Base(sides[0].to))
			require.Equal(t, tc.want, string(sides[0].data))
			require.Equal(t, "a copy of "+filepath.Join(src, "config.json")+tc.report, sides[0].report())
		})
	}
}

// TestSFTConfigDtype: sft writes its model's weights in float32, and the
// config.json beside them says so: one started from a model whose
// config.json says bfloat16 (a bfloat16 release's, which optimum copies
// beside its float32 ONNX export) copied it as it was.
func TestSFTConfigDtype(t *testing.T) {
	skipWithoutRuntime(t)
	t.Setenv("SPIRAL_CACHE_DIR", t.TempDir())
	src := filepath.Join(t.TempDir(), "bf16")
	require.NoError(t, os.MkdirAll(src, 0o755))
	for _, name := range []string{"model.onnx", "tokenizer.json", "config.json"} {
		b, err := os.ReadFile(filepath.Join("model", "embedded", "assets", name))
		require.NoError(t, err)
		if name == "config.json" {
			require.Contains(t, string(b), `"torch_dtype": "float32"`)
			b = bytes.Replace(b, []byte(`"torch_dtype": "float32"`), []byte(`"torch_dtype": "bfloat16"`), 1)
		}
		require.NoError(t, os.WriteFile(filepath.Join(src, name), b, 0o644))
	}
	out := filepath.Join(t.TempDir(), "sft")
	var stderr bytes.Buffer
	require.Zero(t, run(context.Background(), []string{"sft", "--model", filepath.Join(src, "model.onnx"), "--steps", "1", "--batch", "4", "--eval-every", "0", "--eval-problems", "2",
		"--threads", "1", "--quiet", "--out", out}, &cliEnv{stdout: io.Discard, stderr: &stderr}), stderr.String())
	var cfg map[string]any
	b, err := os.ReadFile(filepath.Join(out, "config.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &cfg))
	require.Equal(t, "float32", cfg["torch_dtype"])
}

// TestLoRARankPastProjection: a --lora-rank past a targeted projection's
// smaller side, refused when the model is read, is the usage error
// (exit 2) that plan makes of it, naming the flag: train, sft, bench
// train and artifacts failed with exit 1 and "model: M: model: lora: rank
// 65 exceeds ...", which named no flag.
func TestLoRARankPastProjection(t *testing.T) {
	skipWithoutRuntime(t)
	t.Setenv("SPIRAL_CACHE_DIR", t.TempDir())
	const want = "--lora-rank 65: model.layers.0.self_attn.q_proj is [64, 128]: want at most 64, the smaller side, past which an adapter is no more expressive\n"
	dir := t.TempDir()
	for _, args := range [][]string{
		{"artifacts", "--lora-rank", "65", "--out", filepath.Join(dir, "artifacts")},
		{"bench", "train", "--lora-rank", "65", "--rows", "1", "--tokens", "8", "--steps", "1"},
		{"train", "--lora-rank", "65", "--steps", "1", "--quiet", "--out", filepath.Join(dir, "train")},
		{"sft", "--lora-rank", "65", "--steps", "1", "--quiet", "--out", filepath.Join(dir, "sft")},
	} {
		var stderr bytes.Buffer
		code := run(context.Background(), args, &cliEnv{stdout: io.Discard, stderr: &stderr})
		require.Equal(t, exitUsage, code, "%q: %s", args, stderr.String())
		require.Equal(t, "spiral "+args[0]+": "+want, stderr.String(), "%q", args)
	}
	// The refused commands leave nothing in dir, which they each made
	// their --out in (with its artifacts/ and lock).
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Empty(t, entries)
	// A --out whose parents did not exist either is removed with them; a
	// run directory there before keeps what it held.
	deep := filepath.Join(dir, "a", "b", "run")
	var stderr bytes.Buffer
	require.Equal(t, exitUsage, run(context.Background(), []string{"train", "--lora-rank", "65", "--steps", "1", "--quiet", "--out", deep}, &cliEnv{stdout: io.Discard, stderr: &stderr}), stderr.String())
	require.NoDirExists(t, filepath.Join(dir, "a"))
	kept := filepath.Join(dir, "kept")
	require.NoError(t, os.MkdirAll(filepath.Join(kept, "artifacts"), 0o755))
	require.Equal(t, exitUsage, run(context.Background(), []string{"train", "--lora-rank", "65", "--steps", "1", "--quiet", "--out", kept}, &cliEnv{stdout: io.Discard, stderr: &stderr}), stderr.String())
	require.DirExists(t, filepath.Join(kept, "artifacts"))
	require.NoFileExists(t, filepath.Join(kept, ".lock"))
}

// TestAggregateTemplateOfTheRunsSize: an aggregation template that
// indexes two candidates is refused (exit 2, naming the file and the
// candidates it drops, without the data package's "data: aggregation
// template:") by a train whose subsets hold --n 4 and by an eval --mode
// rsa with --subset 1, for which it fails; the check is before train's
// run directory exists.
func TestAggregateTemplateOfTheRunsSize(t *testing.T) {
	skipWithoutRuntime(t)
	t.Setenv("SPIRAL_CACHE_DIR", t.TempDir())
	dir := t.TempDir()
	agg := filepath.Join(dir, "agg.txt")
	require.NoError(t, os.WriteFile(agg, []byte("{{.Problem}} A: {{(index .Candidates 0).Text}} B: {{(index .Candidates 1).Text}}\n"), 0o644))
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"train", "--aggregate-template", agg, "--n1", "8", "--n", "4", "--final-rsa-steps", "0", "--quiet", "--out", filepath.Join(dir, "run")},
			"spiral train: --aggregate-template " + agg + " with --n 4: output does not contain every candidate ({{range .Candidates}}{{.Text}}{{end}}): with 4 candidates it lacks candidate 3, 4\n"},
		{[]string{"train", "--aggregate-template", agg, "--n", "2", "--quiet", "--out", filepath.Join(dir, "run")},
			"spiral train: --aggregate-template " + agg + " with the final RSA's 4 candidates a prompt (--final-rsa-steps 0 runs none): output does not contain every candidate ({{range .Candidates}}{{.Text}}{{end}}): with 4 candidates it lacks candidate 3, 4\n"},
		{[]string{"eval", "--mode", "rsa", "--aggregate-template", agg, "--subset", "1", "--quiet", "--out", filepath.Join(dir, "eval")},
			"spiral eval: --aggregate-template " + agg + " with --subset 1: template: aggregate:1:53: executing \"aggregate\" at <index .Candidates 1>: error calling index: reflect: slice index out of range (with 1 candidates)\n"},
	} {
		var stderr bytes.Buffer
		code := run(context.Background(), tc.args, &cliEnv{stdout: io.Discard, stderr: &stderr})
		require.Equal(t, exitUsage, code, "%q: %s", tc.args, stderr.String())
		require.Equal(t, tc.want, stderr.String(), "%q", tc.args)
	}
	require.NoDirExists(t, filepath.Join(dir, "run"))
}

// TestTemplateFileErrorsNameTheFlag: a template file that is missing or a
// directory, does not parse, fails on probe data, leaves out what it must
// show or is not UTF-8 is
// refused (exit 2, as the same defect found by the run-size check,
// TestAggregateTemplateOfTheRunsSize, is; it exited 1) naming its flag
// and file, without the data package's prefix:
// "data: search template: output does not contain the problem
// ({{.Problem}}) (files \"s.txt\", \"\")" named no flag, and both files.
func TestTemplateFileErrorsNameTheFlag(t *testing.T) {
	skipWithoutRuntime(t)
	t.Setenv("SPIRAL_CACHE_DIR", t.TempDir())
	dir := t.TempDir()
	file := func(name, src string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(src), 0o644))
		return p
	}
	noProblem := file("s.txt", "Solve it.\n")
	unclosed := file("u.txt", "{{.Problem\n")
	latin1 := file("l.txt", "R\xe9sous {{.Problem}}\n")
	oneCandidate := file("a.txt", "{{.Problem}} {{(index .Candidates 0).Text}}\n")
	missing := filepath.Join(dir, "absent.txt")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"train", "--search-template", noProblem, "--quiet", "--out", filepath.Join(dir, "run")},
			"spiral train: --search-template " + noProblem + ": output does not contain the problem ({{.Problem}})\n"},
		{[]string{"train", "--search-template", unclosed, "--quiet", "--out", filepath.Join(dir, "run")},
			"spiral train: --search-template " + unclosed + ": template: search:1: unclosed action\n"},
		{[]string{"train", "--search-template", latin1, "--quiet", "--out", filepath.Join(dir, "run")},
			"spiral train: --search-template " + latin1 + ": byte 2 (0xE9) is not valid UTF-8; spiral reads UTF-8 text: save the file as UTF-8\n"},
		{[]string{"eval", "--mode", "rsa", "--aggregate-template", oneCandidate, "--quiet", "--out", filepath.Join(dir, "eval")},
			"spiral eval: --aggregate-template " + oneCandidate + ": output does not contain every candidate ({{range .Candidates}}{{.Text}}{{end}}): with 2 candidates it lacks candidate 2\n"},
		// A file that is not there, or a directory, is as bad a value of
		// the flag (they exited 1, the missing file as "--search-template:
		// stat PATH: no such file or directory").
		{[]string{"train", "--search-template", missing, "--quiet", "--out", filepath.Join(dir, "run")},
			"spiral train: --search-template " + missing + ": no such file or directory\n"},
		{[]string{"eval", "--mode", "rsa", "--aggregate-template", dir, "--quiet", "--out", filepath.Join(dir, "eval")},
			"spiral eval: --aggregate-template " + dir + " is a directory: want a template file\n"},
	} {
		var stderr bytes.Buffer
		code := run(context.Background(), tc.args, &cliEnv{stdout: io.Discard, stderr: &stderr})
		require.Equal(t, exitUsage, code, "%q: %s", tc.args, stderr.String())
		require.Equal(t, tc.want, stderr.String(), "%q", tc.args)
	}
}

// TestDataFileFlagsNamed: a --data or --eval-data that is not there, or
// is a directory, is a bad value of the flag (exit 2) named with it: it
// exited 1 with "data: open PATH: no such file or directory", naming no
// flag, and "data: DIR: is a directory, want a data file".
func TestDataFileFlagsNamed(t *testing.T) {
	skipWithoutRuntime(t)
	t.Setenv("SPIRAL_CACHE_DIR", t.TempDir())
	dir := t.TempDir()
	missing := filepath.Join(dir, "absent.jsonl")
	good := filepath.Join(dir, "p.jsonl")
	require.NoError(t, os.WriteFile(good, []byte(`{"problem":"Compute 1+1.","answer":"2"}`+"\n"), 0o644))
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"train", "--data", missing}, "spiral train: --data " + missing + ": no such file or directory\n"},
		{[]string{"train", "--data", dir}, "spiral train: --data " + dir + " is a directory: want a data file (JSONL, JSON or Parquet)\n"},
		{[]string{"train", "--data", good, "--problems", "1", "--eval-data", missing}, "spiral train: --eval-data " + missing + ": no such file or directory\n"},
		// Not passed off as a field-mapping problem of the flags given.
		{[]string{"train", "--data", good, "--problems", "1", "--eval-data", dir, "--answer-field", "answer"}, "spiral train: --eval-data " + dir + " is a directory: want a data file (JSONL, JSON or Parquet)\n"},
		{[]string{"eval", "--data", missing}, "spiral eval: --data " + missing + ": no such file or directory\n"},
		{[]string{"eval", "--data", dir}, "spiral eval: --data " + dir + " is a directory: want a data file (JSONL, JSON or Parquet)\n"},
	} {
		var stderr bytes.Buffer
		args := append(tc.args, "--quiet", "--out", filepath.Join(dir, "out"))
		code := run(context.Background(), args, &cliEnv{stdout: io.Discard, stderr: &stderr})
		require.Equal(t, exitUsage, code, "%q: %s", args, stderr.String())
		require.Equal(t, tc.want, stderr.String(), "%q", args)
	}
	require.NoDirExists(t, filepath.Join(dir, "out"))
}

// TestTrainStructurallyZeroWarnings: the warnings of a SPIRAL shape whose
// search traces, or whose last round's aggregation traces, have advantage
// 0 by construction say what the run does: it still trains them, with
// advantage 0, so the step is not agg-only's (rl's
// TestRolloutSpiralStructurallyZero).
func TestTrainStructurallyZeroWarnings(t *testing.T) {
	f := parsedTrainFlags(t, []string{"--n1", "4", "--k", "3", "--n", "4"})
	require.Equal(t, "--algo spiral with --k 3, --n 4 and --n1 4: every subset holds every search trace, so each one's set-level advantage is always 0 and only the aggregation traces learn; the search traces are still trained, with advantage 0, so their tokens count in the token-mean loss (scaling the aggregation traces' gradient down) and in the entropy, which --algo agg-only leaves them out of; want --k >= 2 and --n < --n1 for the search traces to learn",
		f.untrainedSearch())
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--n2", "1", "--agg-rounds", "3", "--n", "2"}, "--algo spiral with --n2 1 and --agg-rounds 3: a round-3 aggregation trace is its subset's baseline and no later round credits it, so its advantage is always 0: those traces only score round 2's and are still trained, with advantage 0, so their tokens count in the token-mean loss (scaling the other traces' gradient down) and in the entropy; want --n2 >= 2 for them to learn"},
		{[]string{"--n2", "2", "--agg-rounds", "3"}, ""},
		{[]string{"--n2", "1", "--agg-rounds", "2", "--algo", "search-only"}, ""},
		{nil, ""},
	} {
		require.Equal(t, tc.want, parsedTrainFlags(t, tc.args).untrainedLastRound(), "%q", tc.args)
	}
}

// TestUnreadableTemplateOfTheRunsSize: the check of the aggregation
// template's unknown characters renders it with the run's --n candidates
// (a template of exactly two passed the size check with --n 2 but failed
// that render of one: exit 1, "index out of range"), and not at all
// where nothing renders an aggregation prompt. The runs are refused
// after it, by their --lora-rank.
func TestUnreadableTemplateOfTheRunsSize(t *testing.T) {
	skipWithoutRuntime(t)
	t.Setenv("SPIRAL_CACHE_DIR", t.TempDir())
	dir := t.TempDir()
	agg := filepath.Join(dir, "agg.txt")
	require.NoError(t, os.WriteFile(agg, []byte("{{.Problem}} § {{(index .Candidates 0).Text}} {{(index .Candidates 1).Text}}\n"), 0o644))
	const unreadable = "spiral: warning: the aggregation template has 1 character the model's tokenizer does not know (<unk>), which the model cannot read; give one it was trained on (--aggregate-template)\n"
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--n1", "4", "--k", "2", "--n", "2", "--n2", "2"}, unreadable + loraRankRefused},
		// GRPO without a final RSA renders no aggregation prompt: the
		// template is warned of as ignored, not as unreadable.
		{[]string{"--algo", "grpo"}, "spiral: warning: --aggregate-template renders the SPIRAL pipeline's aggregation prompts and the final RSA's; --algo grpo, which samples --group traces a problem, with no final RSA (--final-rsa-steps 0, or --data without --eval-data) ignores it\n" + loraRankRefused},
	} {
		requireStderrOfUsage(t, append([]string{"train", "--aggregate-template", agg, "--final-rsa-steps", "0", "--lora-rank", "65", "--quiet", "--out", filepath.Join(dir, "run")}, tc.args...), tc.want)
	}
}

// loraRankRefused is train's refusal of --lora-rank 65 on the embedded
// model, which tests use to stop a run after its startup warnings.
const loraRankRefused = "spiral train: --lora-rank 65: model.layers.0.self_attn.q_proj is [64, 128]: want at most 64, the smaller side, past which an adapter is no more expressive\n"

// requireStderrOfUsage runs args, which must end in a usage error, and
// requires stderr to be want.
func requireStderrOfUsage(t *testing.T, args []string, want string) {
	t.Helper()
	var stderr bytes.Buffer
	code := run(context.Background(), args, &cliEnv{stdout: io.Discard, stderr: &stderr})
	require.Equal(t, exitUsage, code, "%q: %s", args, stderr.String())
	require.Equal(t, want, stderr.String(), "%q", args)
}

// TestUnreadableProblemsBesideTemplate: problems the tokenizer cannot
// read are warned of even when the template cannot be read either (a
// synthetic-task tokenizer on real problems): before, the template's
// warning alone was given, whose remedy, another template, leaves the
// problems unreadable. The run is refused after the warnings, by its
// --lora-rank.
func TestUnreadableProblemsBesideTemplate(t *testing.T) {
	skipWithoutRuntime(t)
	t.Setenv("SPIRAL_CACHE_DIR", t.TempDir())
	dir := t.TempDir()
	search := filepath.Join(dir, "search.txt")
	require.NoError(t, os.WriteFile(search, []byte("{{.Problem}} §\n"), 0o644))
	problems := filepath.Join(dir, "p.jsonl")
	require.NoError(t, os.WriteFile(problems, []byte(`{"problem": "1+2=x", "answer": "3"}`+"\n"+`{"problem": "1+3=x ¶", "answer": "4"}`+"\n"), 0o644))
	const template = "spiral: warning: the search template has 1 character the model's tokenizer does not know (<unk>), which the model cannot read; give one it was trained on (--search-template)\n"
	note := "spiral: note: no held-out evaluation (eval.jsonl, rsa.json): training on --data " + problems + ", give --eval-data for one\n"
	unreadable := "spiral: warning: 1 of 2 problems holds characters the model's tokenizer does not know (<unk>), first " + problems + ":2: \"1+3=x ¶\"\n"
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--search-template", search}, note + template + unreadable + loraRankRefused},
		{nil, note + unreadable + loraRankRefused},
	} {
		requireStderrOfUsage(t, append([]string{"train", "--data", problems, "--problems", "2", "--algo", "grpo", "--final-rsa-steps", "0", "--lora-rank", "65", "--quiet", "--out", filepath.Join(dir, "run")}, tc.args...), tc.want)
	}
}

// TestProblemsEncodedToNothing: a problem or template with a character
// that the tokenizer has no id for and no unknown token to give (a
// Unigram model without unk_id) encodes each prompt that holds it to no
// token, which train fed the model without a word; it is refused naming
// the template, or the problems with the first, its character and byte.
func TestProblemsEncodedToNothing(t *testing.T) {
	skipWithoutRuntime(t)
	t.Setenv("SPIRAL_CACHE_DIR", t.TempDir())
	dir := t.TempDir()
	tok := unigramTokenizer(t, "0123456789+=x")
	search := filepath.Join(dir, "search.txt")
	require.NoError(t, os.WriteFile(search, []byte("{{.Problem}} ¶\n"), 0o644))
	problems := filepath.Join(dir, "p.jsonl")
	require.NoError(t, os.WriteFile(problems, []byte(`{"problem": "1+2=x", "answer": "3"}`+"\n"+`{"problem": "1+3=x ¶", "answer": "4"}`+"\n"), 0o644))
	good := filepath.Join(dir, "good.jsonl")
	require.NoError(t, os.WriteFile(good, []byte(`{"problem": "1+2=x", "answer": "3"}`+"\n"+`{"problem": "2+2=x", "answer": "4"}`+"\n"), 0o644))
	const why = "has no id for and no unknown token to give (a BPE model whose unk_token is not in its vocab, or a Unigram model without unk_id)"
	lost := "1 of 2 problems holds a character that the model's tokenizer " + tok + " " + why + ": it encodes their prompts to no token; first " + problems + `:2: '¶' (byte 6) in "1+3=x ¶"` + "\n"
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--data", problems}, "spiral train: " + lost},
		{[]string{"--data", problems, "--search-template", search}, "spiral train: the search template has '¶' (byte 1 of its text), which the model's tokenizer " + tok + " " + why + ": it encodes every prompt of the template to no token; give one it can encode (--search-template)\n"},
		// The held-out problems too, which were evaluated as no token.
		{[]string{"--data", good, "--eval-data", problems}, "spiral train: " + lost},
	} {
		var stderr bytes.Buffer
		args := append([]string{"train", "--tokenizer", tok, "--problems", "2", "--algo", "grpo", "--final-rsa-steps", "0", "--lora-rank", "65", "--quiet", "--out", filepath.Join(dir, "run")}, tc.args...)
		code := run(context.Background(), args, &cliEnv{stdout: io.Discard, stderr: &stderr})
		require.Equal(t, exitFailure, code, stderr.String())
		require.True(t, strings.HasSuffix(stderr.String(), tc.want), "%q:\n%s", tc.args, stderr.String())
	}
}

// TestGenerateUnreadablePrompt: a prompt with characters the model's
// tokenizer maps to its unknown token is warned of, as train's and
// eval's problems are; before, generate fed the <unk> ids without a word
// (a synthetic-task tokenizer given English read it as <unk>s).
func TestGenerateUnreadablePrompt(t *testing.T) {
	skipWithoutRuntime(t)
	t.Setenv("SPIRAL_CACHE_DIR", t.TempDir())
	for _, raw := range []string{"--raw=false", "--raw=true"} {
		var stderr bytes.Buffer
		code := run(context.Background(), []string{"generate", raw, "--max-new-tokens", "1", "1+2=x", "1+3=x ¶§"}, &cliEnv{stdout: io.Discard, stderr: &stderr})
		require.Equal(t, 0, code, stderr.String())
		require.Contains(t, stderr.String(), "spiral: warning: prompt 1 has 2 characters the model's tokenizer does not know (<unk>), which the model cannot read\n", raw)
		require.NotContains(t, stderr.String(), "prompt 0 has", raw)
	}
}

// TestGenerateJSONL: --jsonl prints each completion as one JSON object
// (prompt and sample index, the text, its token ids, why it stopped and
// a log-probability a token), the same completions the text output
// shows, in the same order.
func TestGenerateJSONL(t *testing.T) {
	skipWithoutRuntime(t)
	t.Setenv("SPIRAL_CACHE_DIR", t.TempDir())
	args := []string{"generate", "--n", "2", "--seed", "3", "--max-new-tokens", "40", "1+2=x", "4+x=9"}
	var text, lines, stderr bytes.Buffer
	require.Equal(t, 0, run(context.Background(), args, &cliEnv{stdout: &text, stderr: &stderr}), stderr.String())
	require.Equal(t, 0, run(context.Background(), append(args, "--jsonl"), &cliEnv{stdout: &lines, stderr: &stderr}), stderr.String())
	var want []string
	for _, block := range strings.Split(text.String(), "=== ")[1:] {
		want = append(want, strings.TrimSuffix(block, "\n"))
	}
	dec := json.NewDecoder(&lines)
	var got []string
	for dec.More() {
		var g generatedLine
		require.NoError(t, dec.Decode(&g))
		require.Len(t, g.LogProbs, len(g.TokenIDs))
		for _, lp := range g.LogProbs {
			require.LessOrEqual(t, lp, float32(0))
		}
		require.Nil(t, g.EngineLogProbs)
		got = append(got, fmt.Sprintf("prompt %d, sample %d (%d tokens, %s)\n%s", g.Prompt, g.Sample, len(g.TokenIDs), g.Finish, strings.TrimRight(g.Text, "\n")))
	}
	require.Len(t, want, 4)
	require.Equal(t, want, got)
}

// TestTrainCountsSingular: train's notes count one problem in the
// singular: "the 1 problems of", "has 1 problems; evaluating those" and
// "1 of the 1 held-out problems of ... are training problems" were
// written.
// (The run is interrupted before its first step: the context is
// cancelled.)
func TestTrainCountsSingular(t *testing.T) {
	t.Setenv("SPIRAL_CACHE_DIR", t.TempDir())
	dir := t.TempDir()
	one := filepath.Join(dir, "one.jsonl")
	require.NoError(t, os.WriteFile(one, []byte(`{"problem":"Solve x+1=2.","answer":"1"}`+"\n"), 0o644))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var stdout, stderr bytes.Buffer
	code := run(ctx, []string{"train", "--data", one, "--eval-data", one, "--eval-problems", "3", "--algo", "grpo", "--group", "2", "--problems", "2", "--steps", "1",
		"--out", filepath.Join(dir, "run"), "--quiet", "--threads", "1"}, &cliEnv{stdout: &stdout, stderr: &stderr})
	require.Equal(t, exitInterrupted, code, stderr.String())
	require.Contains(t, stderr.String(), "spiral: warning: --problems 2 is more than the 1 problem of "+one+": ")
	require.Contains(t, stderr.String(), "spiral: note: --eval-problems 3: "+one+" has 1 problem; evaluating it\n")
	require.Contains(t, stderr.String(), "spiral: warning: 1 of the 1 held-out problem of "+one+" is a training problem of "+one+" too (")
}

// graphWrittenCtx is a context that reads as interrupted (Err is
// context.Canceled) once a file named name other than earlier exists
// whole, its temporary file renamed, in dir or in a stage in dir: a
// Ctrl-C that comes once the exported graph has been written, past the
// last tensor's check.
type graphWrittenCtx struct {
	context.Context
	dir, name, earlier string
	cancelled          *bool // once interrupted, for good
}

func (c graphWrittenCtx) Err() error {
	paths, _ := filepath.Glob(filepath.Join(c.dir, ".stage-*", c.name))
	for _, p := range append(paths, filepath.Join(c.dir, c.name)) {
		if b, err := os.ReadFile(p); err == nil && string(b) != c.earlier {
			*c.cancelled = true
		}
	}
	if *c.cancelled {
		return context.Canceled
	}
	return c.Context.Err()
}

// TestExportOnnxInterruptedAfterItsWeights: a Ctrl-C during an onnx
// export's last writes (the graph, written whole after the weights'
// data file, each renamed into place on its own; then config.json and
// the tokenizer beside it) came after the last tensor's check: the
// export replaced the earlier export's model and exited 0. It now writes
// its files in a stage and moves them in together only while
// uninterrupted, so the earlier export's files stay as they were and it
// exits 130.
func TestExportOnnxInterruptedAfterItsWeights(t *testing.T) {
	t.Setenv("SPIRAL_CACHE_DIR", t.TempDir())
	dir := t.TempDir()
	runDir := filepath.Join(dir, "run")
	var stderr bytes.Buffer
	require.Zero(t, run(context.Background(), []string{"train", "--out", runDir, "--steps", "1", "--problems", "1", "--n1", "2", "--k", "1", "--n", "2", "--n2", "2",
		"--max-new-tokens", "4", "--eval-every", "0", "--final-rsa-steps", "0", "--threads", "1", "--quiet"}, &cliEnv{stdout: io.Discard, stderr: &stderr}), stderr.String())
	outDir := filepath.Join(dir, "export")
	out := filepath.Join(outDir, "model.onnx")
	for _, external := range []bool{true, false} {
		t.Run(fmt.Sprint("external ", external), func(t *testing.T) {
			require.NoError(t, os.RemoveAll(outDir))
			require.NoError(t, os.MkdirAll(outDir, 0o755))
			// The earlier export's files (config.json and the tokenizer,
			// which it writes beside them, left out: the export would
			// refuse other ones).
			earlier := map[string]string{"model.onnx": "the earlier export's graph"}
			if external {
				earlier["model.onnx_data"] = "its weights"
			}
			for name, body := range earlier {
				require.NoError(t, os.WriteFile(filepath.Join(outDir, name), []byte(body), 0o644))
			}
			args := []string{"export", "--checkpoint", runDir, "--out", out, fmt.Sprintf("--external-data=%t", external)}
			ctx := graphWrittenCtx{Context: context.Background(), dir: outDir, name: "model.onnx", earlier: earlier["model.onnx"], cancelled: new(bool)}
			var stderr bytes.Buffer
			code := run(ctx, args, &cliEnv{stdout: io.Discard, stderr: &stderr})
			require.Equal(t, exitInterrupted, code, stderr.String())
			require.Equal(t, "spiral export: interrupted\n", stderr.String())
			names := dirNames(t, outDir)
			require.ElementsMatch(t, slices.Collect(maps.Keys(earlier)), names, "the earlier export's files alone, no stage")
			for name, body := range earlier {
				b, err := os.ReadFile(filepath.Join(outDir, name))
				require.NoError(t, err)
				require.Equal(t, body, string(b), name)
			}
		})
	}
}

// TestSFTInterruptedWhileItsModelIsWritten: a Ctrl-C after the last
// tensor's check of sft's model (while its graph was written, or its
// config and tokenizer copied) was not seen: the stage was moved in, the
// checkpoints removed, exit 0. It now leaves --out without the model, its
// last step saved, says so and exits 130; the rerun writes the model.
func TestSFTInterruptedWhileItsModelIsWritten(t *testing.T) {
	t.Setenv("SPIRAL_CACHE_DIR", t.TempDir())
	out := filepath.Join(t.TempDir(), "sft")
	args := []string{"sft", "--steps", "1", "--batch", "4", "--eval-every", "0", "--eval-problems", "2", "--threads", "1", "--quiet", "--out", out}
	ctx := graphWrittenCtx{Context: context.Background(), dir: out, name: "model.onnx", cancelled: new(bool)}
	var stderr bytes.Buffer
	code := run(ctx, args, &cliEnv{stdout: io.Discard, stderr: &stderr})
	require.Equal(t, exitInterrupted, code, stderr.String())
	require.Contains(t, stderr.String(), "spiral: interrupted while the model was written; its last step is saved: rerun the command to write it\n")
	require.NoFileExists(t, filepath.Join(out, "model.onnx"))
	require.DirExists(t, filepath.Join(out, "checkpoints"))
	stages, err := filepath.Glob(filepath.Join(out, ".stage-*"))
	require.NoError(t, err)
	require.Empty(t, stages)

	stderr.Reset()
	require.Zero(t, run(context.Background(), args, &cliEnv{stdout: io.Discard, stderr: &stderr}), stderr.String())
	require.FileExists(t, filepath.Join(out, "model.onnx"))
}

// trainTinyLoRA trains one step of a rank-2 LoRA run of the embedded
// model into runDir, the checkpoint the export tests export.
func trainTinyLoRA(t *testing.T, runDir string) {
	t.Helper()
	var stderr bytes.Buffer
	require.Zero(t, run(context.Background(), []string{"train", "--out", runDir, "--lora-rank", "2", "--steps", "1", "--problems", "1", "--n1", "2", "--k", "1", "--n", "2", "--n2", "2",
		"--max-new-tokens", "4", "--eval-every", "0", "--final-rsa-steps", "0", "--threads", "1", "--quiet"}, &cliEnv{stdout: io.Discard, stderr: &stderr}), stderr.String())
}

// TestExportPEFTInterrupted: a Ctrl-C while a peft export wrote its
// adapters was not looked at: the export moved them in and exited 0. It
// now leaves --out as it was (not there) and exits 130.
func TestExportPEFTInterrupted(t *testing.T) {
	t.Setenv("SPIRAL_CACHE_DIR", t.TempDir())
	dir := t.TempDir()
	runDir := filepath.Join(dir, "run")
	trainTinyLoRA(t, runDir)
	out := filepath.Join(dir, "peft")
	ctx := graphWrittenCtx{Context: context.Background(), dir: out, name: model.PEFTWeightsFile, cancelled: new(bool)}
	var stderr bytes.Buffer
	code := run(ctx, []string{"export", "--format", "peft", "--checkpoint", runDir, "--out", out}, &cliEnv{stdout: io.Discard, stderr: &stderr})
	require.Equal(t, exitInterrupted, code, stderr.String())
	require.Equal(t, "spiral export: interrupted\n", stderr.String())
	require.NoDirExists(t, out, "no adapter, no stage, nor the directory made for them")
}

// TestSFTKilledWithinItsCommit: an sft killed (SIGKILL, a second Ctrl-C)
// within the renames that move its model and log in left its checkpoints
// and sft.jsonl.partial, which the run removes only after the commit,
// and its log moved in was the partial itself (linked into the stage).
// The rerun finished the commit (atomicfile.FinishKilled) and then left
// them, without --overwrite (refused, as the model is written): the
// finished run's checkpoints, which the README says go once the model is
// written; with --overwrite it resumed the finished run and its commit
// failed on every rerun ("remove .stage-N: directory not empty": the
// staged log, a link of sft.jsonl itself, is not moved by rename). They
// are now removed, as the killed run would have, before --out is looked
// at: the rerun is then one after a finished run.
func TestSFTKilledWithinItsCommit(t *testing.T) {
	t.Setenv("SPIRAL_CACHE_DIR", t.TempDir())
	for _, overwrite := range []bool{false, true} {
		t.Run(fmt.Sprint("overwrite ", overwrite), func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "sft")
			args := []string{"sft", "--steps", "1", "--batch", "4", "--eval-every", "0", "--eval-problems", "2", "--threads", "1", "--quiet", "--out", out}
			ctx := graphWrittenCtx{Context: context.Background(), dir: out, name: "model.onnx", cancelled: new(bool)}
			var stderr bytes.Buffer
			require.Equal(t, exitInterrupted, run(ctx, args, &cliEnv{stdout: io.Discard, stderr: &stderr}), stderr.String())
			partial := filepath.Join(out, rl.SFTLogFile+rl.PartialSuffix)
			require.FileExists(t, partial)
			require.DirExists(t, filepath.Join(out, rl.CheckpointsDir))

			// What the kill left: the commit's record written, the model
			// moved in, the log (the partial, linked) still in the stage.
			stage := filepath.Join(out, ".stage-7")
			require.NoError(t, os.Mkdir(stage, 0o755))
			require.NoError(t, os.Link(partial, filepath.Join(stage, rl.SFTLogFile)))
			require.NoError(t, os.WriteFile(filepath.Join(out, "model.onnx"), []byte("model"), 0o644))
			require.NoError(t, os.WriteFile(filepath.Join(stage, ".commit"), []byte(`{"move":["model.onnx","sft.jsonl"],"remove":["model.onnx_data"]}`), 0o644))

			stderr.Reset()
			if !overwrite {
				require.Equal(t, exitUsage, run(context.Background(), args, &cliEnv{stdout: io.Discard, stderr: &stderr}))
				require.Contains(t, stderr.String(), "already holds a model")
			} else {
				require.Zero(t, run(context.Background(), append(args, "--overwrite"), &cliEnv{stdout: io.Discard, stderr: &stderr}), stderr.String())
				b, err := os.ReadFile(filepath.Join(out, "model.onnx"))
				require.NoError(t, err)
				require.NotEqual(t, "model", string(b), "the new run's model")
			}
			require.FileExists(t, filepath.Join(out, rl.SFTLogFile))
			stages, err := filepath.Glob(filepath.Join(out, ".stage-*"))
			require.NoError(t, err)
			require.Empty(t, stages)
			require.NoFileExists(t, partial, "the finished run's log in progress")
			require.NoDirExists(t, filepath.Join(out, rl.CheckpointsDir), "the finished run's checkpoints")
		})
	}
}

// TestExportInterruptedLeavesNoNewDirectory: an export interrupted while
// it writes (or failing) into an --out whose directory it made left that
// directory, and the new parents above it, behind empty, where it says
// it leaves the files it was to replace as they were. They are now
// removed again, as a refused train, sft or eval removes the --out it
// made; an existing directory stays.
func TestExportInterruptedLeavesNoNewDirectory(t *testing.T) {
	t.Setenv("SPIRAL_CACHE_DIR", t.TempDir())
	dir := t.TempDir()
	runDir := filepath.Join(dir, "run")
	trainTinyLoRA(t, runDir)
	for _, tc := range []struct {
		format, file string // the file whose writing interrupts
		onnx         bool   // --out is a file in the new directory
	}{{"onnx", "model.onnx", true}, {"hf", model.HFWeightsFile, false}, {"peft", model.PEFTWeightsFile, false}} {
		t.Run(tc.format, func(t *testing.T) {
			top := filepath.Join(dir, "new-"+tc.format)
			outDir := filepath.Join(top, "sub")
			out := outDir
			if tc.onnx {
				out = filepath.Join(outDir, "model.onnx")
			}
			ctx := graphWrittenCtx{Context: context.Background(), dir: outDir, name: tc.file, cancelled: new(bool)}
			var stderr bytes.Buffer
			code := run(ctx, []string{"export", "--format", tc.format, "--checkpoint", runDir, "--out", out}, &cliEnv{stdout: io.Discard, stderr: &stderr})
			require.Equal(t, exitInterrupted, code, stderr.String())
			require.Equal(t, "spiral export: interrupted\n", stderr.String())
			require.NoDirExists(t, top, "the directories the interrupted export made")
			require.DirExists(t, dir)

			// An existing --out directory stays, with what it held.
			require.NoError(t, os.MkdirAll(outDir, 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(outDir, "notes.txt"), []byte("mine"), 0o644))
			*ctx.cancelled = false
			stderr.Reset()
			code = run(ctx, []string{"export", "--format", tc.format, "--checkpoint", runDir, "--out", out}, &cliEnv{stdout: io.Discard, stderr: &stderr})
			require.Equal(t, exitInterrupted, code, stderr.String())
			require.FileExists(t, filepath.Join(outDir, "notes.txt"))
		})
	}
}

// TestInitModelInterruptedLeavesNoNewDirectory: init-model interrupted
// (here once its stage holds model.onnx) into an --out that did not
// exist left it, and the new parents above it, behind empty, where the
// README says Ctrl-C leaves --out as it was. They are now removed again;
// an existing --out stays with what it held.
func TestInitModelInterruptedLeavesNoNewDirectory(t *testing.T) {
	top := filepath.Join(t.TempDir(), "new")
	out := filepath.Join(top, "m")
	ctx := graphWrittenCtx{Context: context.Background(), dir: out, name: "model.onnx", cancelled: new(bool)}
	var stderr bytes.Buffer
	require.Equal(t, exitInterrupted, run(ctx, []string{"init-model", "--layers", "1", "--out", out}, &cliEnv{stdout: io.Discard, stderr: &stderr}), stderr.String())
	require.Equal(t, "spiral init-model: interrupted\n", stderr.String())
	require.NoDirExists(t, top)

	require.NoError(t, os.MkdirAll(out, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(out, "notes.txt"), []byte("mine"), 0o644))
	*ctx.cancelled = false
	stderr.Reset()
	require.Equal(t, exitInterrupted, run(ctx, []string{"init-model", "--layers", "1", "--out", out}, &cliEnv{stdout: io.Discard, stderr: &stderr}), stderr.String())
	require.FileExists(t, filepath.Join(out, "notes.txt"))
}

// TestTooLongCountsSingular: the refusal of problems all too long for the
// model said of one "the 1 are all too long" (train), "the 1 of X are
// all too long" (eval) and "the first 1 of X are all too long" (train's
// held-out problems).
func TestTooLongCountsSingular(t *testing.T) {
	t.Setenv("SPIRAL_CACHE_DIR", t.TempDir())
	dir := t.TempDir()
	one := filepath.Join(dir, "one.jsonl")
	require.NoError(t, os.WriteFile(one, []byte(`{"problem":"Solve x+1=2.","answer":"1"}`+"\n"), 0o644))
	row := func(last int) string {
		return fmt.Sprintf(`{"problem":%q,"answer":"3"}`+"\n", "Compute "+strings.Repeat("1+", 2_100)+fmt.Sprint(last)+".")
	}
	long := filepath.Join(dir, "long.jsonl")
	require.NoError(t, os.WriteFile(long, []byte(row(1)), 0o644))
	longs := filepath.Join(dir, "longs.jsonl")
	require.NoError(t, os.WriteFile(longs, []byte(row(1)+row(2)+row(3)), 0o644))
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"train", []string{"train", "--data", long, "--max-new-tokens", "8", "--algo", "grpo", "--group", "2", "--steps", "1", "--out", filepath.Join(dir, "t1")},
			"no usable problems in " + long + ": the 1 problem is too long for the model (listed above)"},
		{"train, three", []string{"train", "--data", longs, "--max-new-tokens", "8", "--algo", "grpo", "--group", "2", "--steps", "1", "--out", filepath.Join(dir, "t3")},
			"no usable problems in " + longs + ": the 3 problems are all too long for the model (listed above)"},
		{"train's held-out", []string{"train", "--data", one, "--eval-data", long, "--max-new-tokens", "8", "--algo", "grpo", "--group", "2", "--steps", "1", "--out", filepath.Join(dir, "th")},
			"no held-out problems to evaluate: the first 1 problem of " + long + " is too long for the model (listed above)"},
		{"eval", []string{"eval", "--data", long, "--max-new-tokens", "8", "--out", filepath.Join(dir, "e1")},
			"no problems to evaluate: the 1 problem of " + long + " is too long for the model (listed above)"},
		{"eval, three", []string{"eval", "--data", longs, "--max-new-tokens", "8", "--out", filepath.Join(dir, "e3")},
			"no problems to evaluate: the 3 problems of " + longs + " are all too long for the model (listed above)"},
		{"eval --limit", []string{"eval", "--data", longs, "--limit", "1", "--max-new-tokens", "8", "--out", filepath.Join(dir, "el")},
			"no problems to evaluate: the first 1 problem (--limit) of " + longs + " is too long for the model (listed above)"},
		// The embedded task's test split holds 1,134 problems, eval's
		// the first 128: "the 128 problems of embedded:synth-test".
		{"eval, embedded", []string{"eval", "--max-new-tokens", "4090", "--out", filepath.Join(dir, "ee")},
			"no problems to evaluate: the first 128 problems of embedded:synth-test are all too long for the model (listed above)"},
		{"eval --limit, embedded", []string{"eval", "--limit", "5", "--max-new-tokens", "4090", "--out", filepath.Join(dir, "eel")},
			"no problems to evaluate: the first 5 problems (--limit) of embedded:synth-test are all too long for the model (listed above)"},
		// A --limit above 128 takes the test split's first N, as data
		// synth --problems N writes them; it took the first 128 alone.
		{"eval --limit 200, embedded", []string{"eval", "--limit", "200", "--max-new-tokens", "4090", "--out", filepath.Join(dir, "eem")},
			"no problems to evaluate: the first 200 problems (--limit) of embedded:synth-test are all too long for the model (listed above)"},
		// Past the test split's 1,134: those, with a note.
		{"eval --limit past the split, embedded", []string{"eval", "--limit", "5000", "--max-new-tokens", "4090", "--out", filepath.Join(dir, "eep")},
			"spiral: note: --limit 5000: embedded:synth-test has 1134 problems; evaluating those\n"},
		{"eval --limit past the split, embedded, its error", []string{"eval", "--limit", "5000", "--max-new-tokens", "4090", "--out", filepath.Join(dir, "eep")},
			"no problems to evaluate: the first 1134 problems (--limit) of embedded:synth-test are all too long for the model (listed above)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), append(tc.args, "--quiet", "--threads", "1"), &cliEnv{stdout: &stdout, stderr: &stderr})
			require.Equal(t, exitFailure, code, stderr.String())
			require.Contains(t, stderr.String(), tc.want)
		})
	}
}

// TestAggregationPromptPastContext: a problem whose search prompt fits
// the model's context with --max-new-tokens but whose aggregation prompt
// does not even with every candidate cut to one token was kept, and the
// run stopped at its first aggregation ("rollout: rsa: aggregation
// prompt of problem ...: ... does not fit the 4088-token limit even with
// one token per candidate"), losing the evaluation (or the training at
// the step that drew it). It is skipped up front with the search
// prompts too long, naming its row, where the command renders
// aggregation prompts (eval's RSA, train but for GRPO).
func TestAggregationPromptPastContext(t *testing.T) {
	t.Setenv("SPIRAL_CACHE_DIR", t.TempDir())
	dir := t.TempDir()
	// A search prompt of 4,079 tokens: 9 short of 4,096 - 8; its
	// aggregation prompt with two empty candidates is about 30 longer.
	long := filepath.Join(dir, "long.jsonl")
	require.NoError(t, os.WriteFile(long, []byte(fmt.Sprintf(`{"problem":%q,"answer":"3"}`+"\n", "Compute "+strings.Repeat("1+", 2_025)+"1.")), 0o644))
	skipped := "spiral: warning: skipped " + long + ":1: aggregation prompt of "
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"eval rsa", []string{"eval", "--mode", "rsa", "--population", "2", "--subset", "2", "--rsa-steps", "1", "--out", filepath.Join(dir, "e")},
			"no problems to evaluate: the 1 problem of " + long + " is too long for the model (listed above)"},
		{"train", []string{"train", "--n1", "2", "--k", "1", "--n", "2", "--n2", "2", "--steps", "1", "--out", filepath.Join(dir, "t")},
			"no usable problems in " + long + ": the 1 problem is too long for the model (listed above)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), append(tc.args, "--data", long, "--max-new-tokens", "8", "--quiet", "--threads", "1"), &cliEnv{stdout: &stdout, stderr: &stderr})
			require.Equal(t, exitFailure, code, stderr.String())
			require.Contains(t, stderr.String(), skipped+"4109 tokens with its 2 candidates empty + a token of each + 8 new tokens need 4119 positions; the model has 4096 (--max-new-tokens)\n")
			require.Contains(t, stderr.String(), tc.want)
		})
	}
	// GRPO renders no aggregation prompt: the problem is kept (the run
	// is interrupted before its first step).
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var stdout, stderr bytes.Buffer
	code := run(ctx, []string{"train", "--data", long, "--max-new-tokens", "8", "--algo", "grpo", "--group", "2", "--steps", "1", "--out", filepath.Join(dir, "g"), "--quiet", "--threads", "1"},
		&cliEnv{stdout: &stdout, stderr: &stderr})
	require.Equal(t, exitInterrupted, code, stderr.String())
	require.NotContains(t, stderr.String(), "skipped")
}

// TestTrainOneProblemReadsAsOne: of one problem train's warnings said "a
// step draws some of them more than once" (--problems past the data's
// one problem) and, of one held-out problem that --data holds too, "(the
// first: ...): the held-out accuracy counts them as new".
// (The run is interrupted before its first step: the context is
// cancelled.)
func TestTrainOneProblemReadsAsOne(t *testing.T) {
	t.Setenv("SPIRAL_CACHE_DIR", t.TempDir())
	dir := t.TempDir()
	one := filepath.Join(dir, "one.jsonl")
	require.NoError(t, os.WriteFile(one, []byte(`{"problem":"Solve x+1=2.","answer":"1"}`+"\n"), 0o644))
	two := filepath.Join(dir, "two.jsonl")
	require.NoError(t, os.WriteFile(two, []byte(`{"problem":"Solve x+1=2.","answer":"1"}`+"\n"+`{"problem":"Solve x+3=5.","answer":"2"}`+"\n"), 0o644))
	for _, tc := range []struct {
		name, data, held string
		want             []string
	}{
		{"one", one, one, []string{
			"spiral: warning: --problems 3 is more than the 1 problem of " + one + ": a step draws it more than once\n",
			"spiral: warning: 1 of the 1 held-out problem of " + one + " is a training problem of " + one + " too (one.jsonl:0 at " + one + ":1): the held-out accuracy counts it as new; give held-out problems that --data lacks\n"}},
		{"two", two, two, []string{
			"spiral: warning: --problems 3 is more than the 2 problems of " + two + ": a step draws some of them more than once\n",
			"spiral: warning: 2 of the 2 held-out problems of " + two + " are training problems of " + two + " too (the first: two.jsonl:0 at " + two + ":1): the held-out accuracy counts them as new; give held-out problems that --data lacks\n"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			var stdout, stderr bytes.Buffer
			code := run(ctx, []string{"train", "--data", tc.data, "--eval-data", tc.held, "--algo", "grpo", "--group", "2", "--problems", "3", "--steps", "1",
				"--out", filepath.Join(dir, tc.name), "--quiet", "--threads", "1"}, &cliEnv{stdout: &stdout, stderr: &stderr})
			require.Equal(t, exitInterrupted, code, stderr.String())
			for _, w := range tc.want {
				require.Contains(t, stderr.String(), w)
			}
		})
	}
}

// TestTrainProblemsPastUsable: --problems is checked against the
// problems a step draws from, those that fit the model: of 3 problems,
// one too long, --problems 3 draws some of the other 2 more than once,
// which the warning said nothing of (it counted the 3). (The run is
// interrupted before its first step: the context is cancelled.)
func TestTrainProblemsPastUsable(t *testing.T) {
	t.Setenv("SPIRAL_CACHE_DIR", t.TempDir())
	dir := t.TempDir()
	three := filepath.Join(dir, "three.jsonl")
	long := fmt.Sprintf(`{"problem":%q,"answer":"3"}`, "Compute "+strings.Repeat("1+", 2_100)+"1.")
	require.NoError(t, os.WriteFile(three, []byte(`{"problem":"Solve x+1=2.","answer":"1"}`+"\n"+long+"\n"+`{"problem":"Solve x+3=5.","answer":"2"}`+"\n"), 0o644))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var stdout, stderr bytes.Buffer
	code := run(ctx, []string{"train", "--data", three, "--algo", "grpo", "--group", "2", "--problems", "3", "--max-new-tokens", "8", "--steps", "1",
		"--eval-every", "0", "--final-rsa-steps", "0", "--out", filepath.Join(dir, "t"), "--quiet", "--threads", "1"}, &cliEnv{stdout: &stdout, stderr: &stderr})
	require.Equal(t, exitInterrupted, code, stderr.String())
	require.Contains(t, stderr.String(), "spiral: warning: skipped "+three+":2: ")
	require.Contains(t, stderr.String(), "spiral: warning: --problems 3 is more than the 2 usable problems of "+three+": a step draws some of them more than once\n")
}

// TestTrainSharedHeldOutAfterFit: a held-out problem that --data holds
// too is warned of only where training draws it: one whose aggregation
// prompt is too long for the model is skipped from training (its
// pass@1 evaluation renders no aggregation prompt and keeps it), so the
// held-out accuracy does not count a trained problem as new. (The run
// is interrupted before its first step: the context is cancelled.)
func TestTrainSharedHeldOutAfterFit(t *testing.T) {
	t.Setenv("SPIRAL_CACHE_DIR", t.TempDir())
	dir := t.TempDir()
	// A search prompt of 4,079 tokens; its aggregation prompt with two
	// candidates does not fit 4,096 - 8 positions.
	longRow := fmt.Sprintf(`{"problem":%q,"answer":"3"}`+"\n", "Compute "+strings.Repeat("1+", 2_025)+"1.")
	long := filepath.Join(dir, "long.jsonl")
	require.NoError(t, os.WriteFile(long, []byte(longRow), 0o644))
	train := filepath.Join(dir, "train.jsonl")
	require.NoError(t, os.WriteFile(train, []byte(`{"problem":"Solve x+1=2.","answer":"1"}`+"\n"+longRow), 0o644))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var stdout, stderr bytes.Buffer
	code := run(ctx, []string{"train", "--data", train, "--eval-data", long, "--n1", "2", "--k", "1", "--n", "2", "--n2", "2", "--max-new-tokens", "8", "--steps", "1",
		"--final-rsa-steps", "0", "--out", filepath.Join(dir, "t"), "--quiet", "--threads", "1"}, &cliEnv{stdout: &stdout, stderr: &stderr})
	require.Equal(t, exitInterrupted, code, stderr.String())
	require.Contains(t, stderr.String(), "spiral: warning: skipped "+train+":2: aggregation prompt of ")
	require.NotContains(t, stderr.String(), "held-out accuracy counts")
}

// skipWithoutRuntime skips a test that runs a model when the ONNX
// Runtime library is not set up ($ONNXRUNTIME_LIB, from make test's
// setup), outside CI, where it must be.
func skipWithoutRuntime(t *testing.T) {
	t.Helper()
	if os.Getenv("ONNXRUNTIME_LIB") == "" && os.Getenv("CI") == "" {
		t.Skip("ONNXRUNTIME_LIB unset: run make test")
	}
}

// TestReportArgumentIsTraces: eval --traces' MODE.traces.jsonl, beside
// its report, given to plot or compare in the report's place is named as
// the traces with the report to give instead; it was taken for a
// training run's log ("a training run's log?: `spiral compare --run
// LABEL=DIR` compares runs"), which sent the user to a directory that
// holds no run.
func TestReportArgumentIsTraces(t *testing.T) {
	dir := t.TempDir()
	reps := twoPassKReports(t, dir)
	traces := filepath.Join(dir, "passk.traces.jsonl")
	require.NoError(t, os.WriteFile(traces, []byte(`{"step":0,"problem":0}`+"\n"+`{"step":0,"problem":1}`+"\n"), 0o644))
	// One trace (eval --limit 1 --samples 1) is one JSON object.
	one := filepath.Join(dir, "one", "rsa.traces.jsonl")
	require.NoError(t, os.MkdirAll(filepath.Dir(one), 0o755))
	require.NoError(t, os.WriteFile(one, []byte(`{"step":0,"problem":0}`+"\n"), 0o644))
	for _, args := range [][]string{
		{"plot", "--out", filepath.Join(dir, "p.png"), traces},
		{"compare", reps[0], traces},
		{"plot", "--out", filepath.Join(dir, "p.png"), one},
	} {
		t.Run(args[0], func(t *testing.T) {
			path := args[len(args)-1]
			want := fmt.Sprintf("%s: not a spiral eval report but an evaluation's traces (eval --traces): give its report, %s", path, strings.TrimSuffix(path, ".traces.jsonl")+".json")
			var stderr bytes.Buffer
			code := run(context.Background(), args, &cliEnv{stdout: io.Discard, stderr: &stderr})
			require.Equal(t, exitFailure, code, stderr.String())
			require.Equal(t, fmt.Sprintf("spiral %s: %s\n", args[0], want), stderr.String())
		})
	}
}

// TestCommandHelpUsage: each command's --help gives its usage line, with
// the arguments it takes besides flags (generate's prompts, plot's and
// compare's reports, tensorboard's run directories, data's and bench's
// subcommands) and the flags it requires; they were given only by the
// error of a command run without them, and tensorboard's --help, which
// has no flags, printed a "Flags:" heading over nothing.
func TestCommandHelpUsage(t *testing.T) {
	want := map[string]string{
		"train":       "Usage: spiral train [flags]   (also spiral [flags])",
		"eval":        "Usage: spiral eval [flags]",
		"sft":         "Usage: spiral sft [flags]",
		"generate":    `Usage: spiral generate [flags] "PROMPT" ["PROMPT" ...]`,
		"artifacts":   "Usage: spiral artifacts [flags]",
		"export":      "Usage: spiral export --checkpoint DIR --out PATH [flags]   (--format hf may omit --checkpoint)",
		"init-model":  "Usage: spiral init-model --out DIR [flags]",
		"bench":       "Usage: spiral bench train|generate [flags]",
		"compare":     "Usage: spiral compare [flags] [--run LABEL=DIR ...] [REF.json OTHER.json ...]   (two eval reports or more, or one with --run, or --run alone)",
		"plan":        "Usage: spiral plan --model MODEL [flags]",
		"plot":        "Usage: spiral plot [flags] REPORT.json [REPORT.json ...]   (reports of one eval mode)",
		"tensorboard": "Usage: spiral tensorboard RUN_DIR [RUN_DIR ...]   (the --out of spiral train or spiral sft)",
		"data":        "Usage: spiral data inspect FILE [flags] | spiral data synth [flags]",
		"version":     "Usage: spiral version [flags]",
	}
	for _, c := range commands() {
		t.Run(c.name, func(t *testing.T) {
			var stdout bytes.Buffer
			require.Zero(t, run(context.Background(), []string{c.name, "--help"}, &cliEnv{stdout: &stdout, stderr: io.Discard}))
			lines := strings.Split(stdout.String(), "\n")
			require.Equal(t, "spiral "+c.name+" — "+c.summary, lines[0])
			require.Equal(t, want[c.name], lines[2])
			require.NotRegexp(t, `Flags:\n*$`, stdout.String(), "a Flags: heading over no flag")
		})
	}
}

// TestEvalLabelHelp: eval's --help says what --label does in compare,
// which averages the reports of one label as seeds, as README says; it
// said "name of this run in plot legends" alone, so two models given one
// label were averaged without a word of it in the help.
func TestEvalLabelHelp(t *testing.T) {
	var stdout bytes.Buffer
	require.Zero(t, run(context.Background(), []string{"eval", "--help"}, &cliEnv{stdout: &stdout, stderr: io.Discard}))
	line := regexp.MustCompile(`(?m)^\s+--label string\s+(.*)$`).FindStringSubmatch(stdout.String())
	require.NotNil(t, line, stdout.String())
	require.Equal(t, "name of this model in compare's tables and plot's legends (default: the model, with its checkpoint; compare averages the reports of one name as seeds)", line[1])
}

// TestSelectionMatchingNothing: a --train or --freeze that leaves the
// model nothing to train (a misspelt name) is a usage error (exit 2)
// naming the flag, as a --lora-rank past the projections is, and leaves
// nothing in dir; train, sft and artifacts failed with exit 1 and
// "model: M: lmgraph: --train ...".
func TestSelectionMatchingNothing(t *testing.T) {
	skipWithoutRuntime(t)
	t.Setenv("SPIRAL_CACHE_DIR", t.TempDir())
	dir := t.TempDir()
	for _, c := range []struct {
		flags []string
		want  string
	}{
		{[]string{"--train", "nomatch"}, `--train "nomatch" matches no parameter (spiral artifacts, without --train and --freeze, lists the parameters' names)`},
		{[]string{"--freeze", "."}, `no parameter left to train: --freeze "." matches every one (spiral artifacts, without --train and --freeze, lists the parameters' names)`},
	} {
		for _, args := range [][]string{
			{"artifacts", "--out", filepath.Join(dir, "artifacts")},
			{"train", "--steps", "1", "--quiet", "--out", filepath.Join(dir, "train")},
			{"sft", "--steps", "1", "--quiet", "--out", filepath.Join(dir, "sft")},
		} {
			args = append(args, c.flags...)
			var stderr bytes.Buffer
			code := run(context.Background(), args, &cliEnv{stdout: io.Discard, stderr: &stderr})
			require.Equal(t, exitUsage, code, "%q: %s", args, stderr.String())
			require.Equal(t, "spiral "+args[0]+": "+c.want+"\n", stderr.String(), "%q", args)
		}
	}
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Empty(t, entries)
}

// TestRequiredFlagsNamed: init-model and export run without a flag they
// require, or given arguments, say which, as the other commands do; each
// printed its usage line alone ("usage: spiral init-model --out DIR
// [flags]" for `spiral init-model --out m extra` too), leaving the user to
// find what was missing.
func TestRequiredFlagsNamed(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "m", "model.onnx")
	const (
		initUsage   = " (usage: spiral init-model --out DIR [flags])"
		exportUsage = " (usage: spiral export --checkpoint DIR --out PATH [--format onnx|hf|peft] [--model SOURCE])"
	)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"init-model"}, "--out is required: the directory to write the model in" + initUsage},
		{[]string{"init-model", "--out", dir, "extra"}, `unexpected arguments ["extra"]` + initUsage},
		{[]string{"export", "--out", out}, "--format onnx needs --checkpoint: the checkpoint (or run directory) whose weights it writes; only --format hf converts the model as it is without one" + exportUsage},
		{[]string{"export", "--format", "peft", "--out", dir}, "--format peft needs --checkpoint: the checkpoint (or run directory) whose weights it writes; only --format hf converts the model as it is without one" + exportUsage},
		{[]string{"export", "--checkpoint", dir}, "--out is required: the .onnx file to write (--format onnx), or the directory (hf, peft)" + exportUsage},
		{[]string{"export", "--checkpoint", dir, "--out", out, "extra"}, `unexpected arguments ["extra"]` + exportUsage},
	} {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			var stderr bytes.Buffer
			code := run(context.Background(), c.args, &cliEnv{stdout: io.Discard, stderr: &stderr})
			require.Equal(t, exitUsage, code, stderr.String())
			require.Equal(t, "spiral "+c.args[0]+": "+c.want+"\n", stderr.String())
		})
	}
	require.NoDirExists(t, filepath.Join(dir, "m"))
}

// TestCompareSequentialSummary: compare --out's summary.md gives each
// label's sequential accuracy at its largest token budget, as it gives
// pass@k's and RSA's headline figures; a comparison of sequential reports
// alone wrote a table with no column and no row ("| model |  |\n|---|").
func TestCompareSequentialSummary(t *testing.T) {
	dir := t.TempDir()
	var reps []string
	for i, acc := range [][2]float64{{0.25, 0.5}, {0.5, 0.75}} {
		p := filepath.Join(dir, fmt.Sprintf("s%d.json", i))
		require.NoError(t, os.WriteFile(p, []byte(fmt.Sprintf(`{"meta": {"mode": "sequential", "model": "m%d", "problems": 2}, "config": {"samples": 2, "budgets": [8, 16], "max_tokens": 16},
			"points": [{"budget": 8, "accuracy": %v, "mean_tokens": 8, "truncated": 0.5}, {"budget": 16, "accuracy": %v, "mean_tokens": 12, "truncated": 0}], "tokens": {"prompt": 10, "generated": 48}}`, i, acc[0], acc[1])), 0o644))
		reps = append(reps, p)
	}
	out := filepath.Join(dir, "cmp")
	var stderr bytes.Buffer
	require.Zero(t, run(context.Background(), append([]string{"compare", "--out", out}, reps...), &cliEnv{stdout: io.Discard, stderr: &stderr}), stderr.String())
	b, err := os.ReadFile(filepath.Join(out, "summary.md"))
	require.NoError(t, err)
	require.Equal(t, "| model | seeds | sequential at budget 16 |\n|---|---|---|\n| m0 | 1 | 0.500 |\n| m1 | 1 | 0.750 |\n", string(b))
}

// TestCheckpointFileNamed: a --checkpoint that is a file, such as the
// checkpoints' latest pointer or a file of a checkpoint, is a usage error
// naming the checkpoint directory to give; eval, generate and export
// failed with "checkpoint: list R/checkpoints/latest: open
// R/checkpoints/latest: not a directory" (exit 1).
func TestCheckpointFileNamed(t *testing.T) {
	run := t.TempDir()
	ckpts := filepath.Join(run, rl.CheckpointsDir)
	ckpt := filepath.Join(ckpts, "ckpt-000003")
	require.NoError(t, os.MkdirAll(ckpt, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(ckpts, "latest"), []byte("ckpt-000003\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(ckpt, "model.safetensors"), nil, 0o644))
	other := filepath.Join(run, "notes.txt")
	require.NoError(t, os.WriteFile(other, nil, 0o644))
	const want = " is a file: want a checkpoint directory%s, or a run directory (or its checkpoints/) for its newest intact one"
	for _, c := range []struct {
		path, such string
	}{
		{filepath.Join(ckpts, "latest"), " (such as " + ckpt + ", which it names)"},
		{filepath.Join(ckpt, "model.safetensors"), " (such as " + ckpt + ", which holds it)"},
		{other, ""},
	} {
		_, err := loadCheckpoint(c.path, resolvedModel{onnx: "model.onnx"}, io.Discard, func(string, rl.RunSettings) error {
			t.Fatal("nothing to load")
			return nil
		})
		var ue usageError
		require.ErrorAs(t, err, &ue, "%s", c.path)
		require.EqualError(t, err, "--checkpoint "+c.path+fmt.Sprintf(want, c.such))
	}
}

// TestCheckpointMissingNamed: a --checkpoint that does not exist, or that
// holds no checkpoint, is named by the flag without the checkpoint
// package's prefix: "--checkpoint X: checkpoint: stat X: no such file or
// directory" and "--checkpoint D: checkpoint: no checkpoint in D (want
// ...)". One that does not exist is a usage error, as one that is a file
// is (it was "--checkpoint: stat X: ...", exit 1).
func TestCheckpointMissingNamed(t *testing.T) {
	empty := t.TempDir()
	missing := filepath.Join(empty, "absent")
	for _, c := range []struct{ path, want string }{
		{missing, "--checkpoint " + missing + ": no such file or directory"},
		{empty, "--checkpoint " + empty + ": no checkpoint in " + empty + " (want a checkpoint directory or a run's checkpoints/ directory)"},
	} {
		_, err := loadCheckpoint(c.path, resolvedModel{onnx: "model.onnx"}, io.Discard, func(string, rl.RunSettings) error {
			t.Fatal("nothing to load")
			return nil
		})
		require.EqualError(t, err, c.want)
		var ue usageError
		require.Equal(t, c.path == missing, errors.As(err, &ue), "%s", c.path)
	}
}

// TestCheckpointSetAsidePending: a run directory (or its checkpoints/)
// whose checkpoints a --fresh killed while setting the run aside left in
// .previous-pending says so, and that the next train, sft or tensorboard
// there puts them back (exit 1); it said "no checkpoint in RUN (want a
// checkpoint directory or a run's checkpoints/ directory)", or of
// RUN/checkpoints "no such file or directory" (exit 2).
func TestCheckpointSetAsidePending(t *testing.T) {
	run := t.TempDir()
	pending := filepath.Join(run, rl.AsidePendingDir)
	require.NoError(t, os.MkdirAll(filepath.Join(pending, rl.CheckpointsDir, "ckpt-000001"), 0o755))
	const why = ": a --fresh (or a rerun that started over) killed while it set the run aside left it in %s, which the next train, sft or tensorboard there puts back"
	ckpts := filepath.Join(run, rl.CheckpointsDir)
	for _, c := range []struct{ path, want string }{
		{run, "--checkpoint " + run + ": " + run + " holds no checkpoints/" + fmt.Sprintf(why, pending)},
		{ckpts, "--checkpoint " + ckpts + ": no such file or directory" + fmt.Sprintf(why, pending)},
		{ckpts + "/", "--checkpoint " + ckpts + "/: no such file or directory" + fmt.Sprintf(why, pending)},
	} {
		_, err := loadCheckpoint(c.path, resolvedModel{onnx: "model.onnx"}, io.Discard, func(string, rl.RunSettings) error {
			t.Fatal("nothing to load")
			return nil
		})
		require.EqualError(t, err, c.want)
		var ue usageError
		require.False(t, errors.As(err, &ue), "%s", c.path)
	}
}

// TestModelPathFlagsMissing: a --model, --checkpoint or --tokenizer path
// that is not there is a bad value of the flag, a usage error (exit 2)
// naming flag and path, as a --data or template file's is, and as a
// --checkpoint that is a file was already: they exited 1 with "--model:
// stat PATH: no such file or directory".
func TestModelPathFlagsMissing(t *testing.T) {
	t.Setenv("SPIRAL_CACHE_DIR", t.TempDir())
	missing := filepath.Join(t.TempDir(), "absent")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"eval", "--model", missing}, "spiral eval: --model " + missing + ": no such file or directory\n"},
		{[]string{"eval", "--engine", "openai", "--base-url", "http://127.0.0.1:1/v1", "--served-model", "m", "--model", missing}, "spiral eval: --model " + missing + ": no such file or directory\n"},
		{[]string{"generate", "--checkpoint", missing, "hi"}, "spiral generate: --checkpoint " + missing + ": no such file or directory\n"},
		{[]string{"generate", "--tokenizer", missing, "hi"}, "spiral generate: --tokenizer " + missing + ": no such file or directory\n"},
	} {
		var stderr bytes.Buffer
		args := append(tc.args, "--quiet")
		if tc.args[0] == "generate" {
			args = tc.args
		}
		code := run(context.Background(), args, &cliEnv{stdout: io.Discard, stderr: &stderr})
		require.Equal(t, exitUsage, code, "%q: %s", args, stderr.String())
		require.Equal(t, tc.want, stderr.String(), "%q", args)
	}
}

// TestOutHelpListsItsFiles: train's and eval's --out help lists every
// file the command writes there: train's left out rsa.json, its final
// RSA report, and eval's the traces --traces writes and the report's
// name.
func TestOutHelpListsItsFiles(t *testing.T) {
	for _, c := range []struct {
		command, want string
	}{
		{"train", `run directory: metrics.jsonl, eval.jsonl (--eval-every), checkpoints/, artifacts/, training.png, rsa.json (--final-rsa-steps), tensorboard/ (--tensorboard) (default "runs/spiral")`},
		{"eval", `output directory: the JSON report MODE.json and its PNG plot, MODE.traces.jsonl (--traces), artifacts/ (the model's sampling graphs), and until the report is written what the evaluation finished (MODE.problems.jsonl.partial, rsa.steps.json.partial), which a rerun resumes (default "runs/eval")`},
	} {
		var stdout bytes.Buffer
		require.Zero(t, run(context.Background(), []string{c.command, "--help"}, &cliEnv{stdout: &stdout, stderr: io.Discard}))
		line := regexp.MustCompile(`(?m)^\s+--out string\s+(.*)$`).FindStringSubmatch(stdout.String())
		require.NotNil(t, line, stdout.String())
		require.Equal(t, c.want, line[1], c.command)
	}
}

// TestEvalRSATableTokens: eval --mode rsa's table says what its tokens
// column counts, every token so far, prompts and generated, as rsa.json's
// cumulative totals; headed "tokens" alone it read as the step's
// generated tokens, which compare's tokens.png plots.
func TestEvalRSATableTokens(t *testing.T) {
	skipWithoutRuntime(t)
	t.Setenv("SPIRAL_CACHE_DIR", t.TempDir())
	out := filepath.Join(t.TempDir(), "eval")
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"eval", "--mode", "rsa", "--limit", "1", "--population", "2", "--subset", "1", "--rsa-steps", "1",
		"--max-new-tokens", "8", "--threads", "1", "--quiet", "--out", out}, &cliEnv{stdout: &stdout, stderr: &stderr})
	require.Zero(t, code, stderr.String())
	var rep report.RSA
	require.NoError(t, report.ReadJSON(filepath.Join(out, "rsa.json"), &rep))
	want := "step  accuracy  majority  tokens so far (prompt + generated)\n"
	for _, s := range rep.Steps {
		want += fmt.Sprintf("%-5d %-9.4f %-9.4f %d\n", s.Step, s.Accuracy, s.Majority, s.Cumulative.Prompt+s.Cumulative.Generated)
	}
	require.Contains(t, stdout.String(), want)
}

// TestSelectionMatchingNothingOnRerun: a rerun into a run directory that
// holds a checkpoint (train's, or an sft interrupted before its model
// was written) compares its --train and --freeze with the checkpoint's
// first (rl.CheckRunIdentity, rl.CheckSFTRunIdentity), asking the model
// which parameters they select: one that selects nothing failed there
// with exit 1 and "model: M: lmgraph: --train ...", not with the usage
// error (exit 2) that the same flags get into a new --out.
func TestSelectionMatchingNothingOnRerun(t *testing.T) {
	skipWithoutRuntime(t)
	t.Setenv("SPIRAL_CACHE_DIR", t.TempDir())
	dir := t.TempDir()
	train := []string{"train", "--out", filepath.Join(dir, "train"), "--steps", "1", "--problems", "1", "--n1", "4", "--k", "2", "--n", "2", "--n2", "2",
		"--max-new-tokens", "4", "--eval-every", "0", "--final-rsa-steps", "0", "--threads", "1", "--quiet"}
	var stderr bytes.Buffer
	require.Zero(t, run(context.Background(), train, &cliEnv{stdout: io.Discard, stderr: &stderr}), stderr.String())
	sftOut := filepath.Join(dir, "sft")
	sft := []string{"sft", "--out", sftOut, "--steps", "1", "--batch", "4", "--eval-every", "0", "--eval-problems", "2", "--threads", "1", "--quiet"}
	ctx := graphWrittenCtx{Context: context.Background(), dir: sftOut, name: "model.onnx", cancelled: new(bool)}
	stderr.Reset()
	require.Equal(t, exitInterrupted, run(ctx, sft, &cliEnv{stdout: io.Discard, stderr: &stderr}), stderr.String())
	require.DirExists(t, filepath.Join(sftOut, "checkpoints"))
	for _, c := range []struct {
		flags []string
		want  string
	}{
		{[]string{"--train", "nomatch"}, `--train "nomatch" matches no parameter (spiral artifacts, without --train and --freeze, lists the parameters' names)`},
		{[]string{"--freeze", "."}, `no parameter left to train: --freeze "." matches every one (spiral artifacts, without --train and --freeze, lists the parameters' names)`},
	} {
		for _, args := range [][]string{train, sft} {
			args = append(slices.Clone(args), c.flags...)
			stderr.Reset()
			code := run(context.Background(), args, &cliEnv{stdout: io.Discard, stderr: &stderr})
			require.Equal(t, exitUsage, code, "%q: %s", args, stderr.String())
			require.Equal(t, "spiral "+args[0]+": "+c.want+"\n", stderr.String(), "%q", args)
		}
	}
}

// TestTemperatureHelp: --temperature's help says what each command takes:
// train's said "(0 = greedy)", the sampling commands' help, though train
// refuses 0 (every trace of a problem alike, nothing trains).
func TestTemperatureHelp(t *testing.T) {
	for _, tc := range []struct{ cmd, want string }{
		{"train", "sampling temperature, > 0 (0, greedy, trains nothing: every trace of a problem alike) (default 1)"},
		{"eval", "sampling temperature (0 = greedy) (default 1)"},
		{"generate", "sampling temperature (0 = greedy) (default 1)"},
	} {
		var stdout bytes.Buffer
		require.Zero(t, run(context.Background(), []string{tc.cmd, "--help"}, &cliEnv{stdout: &stdout, stderr: io.Discard}))
		line := regexp.MustCompile(`(?m)^\s+--temperature float\s+(.*)$`).FindStringSubmatch(stdout.String())
		require.NotNil(t, line, stdout.String())
		require.Equal(t, tc.want, line[1], tc.cmd)
	}
}

// TestTrainTemperatureMessage: train refuses a temperature that is not
// above 0 with its own range, as its --help states it (> 0); a negative,
// NaN or infinite one was refused with sampling's "want a finite value
// >= 0 (0 = greedy)", which offers the greedy 0 that train refuses next.
func TestTrainTemperatureMessage(t *testing.T) {
	for _, tc := range []struct{ value, want string }{
		{"-1", "--temperature -1: want a finite temperature > 0 (1 samples the policy being trained)"},
		{"NaN", "--temperature NaN: want a finite temperature > 0 (1 samples the policy being trained)"},
		{"Inf", "--temperature +Inf: want a finite temperature > 0 (1 samples the policy being trained)"},
		{"0", "--temperature 0 samples greedily: every trace of a problem would be the same, so no advantage is ever non-zero and no step trains; want a temperature > 0 (1 samples the policy being trained)"},
	} {
		var stderr bytes.Buffer
		code := run(context.Background(), []string{"train", "--temperature", tc.value}, &cliEnv{stdout: io.Discard, stderr: &stderr})
		require.Equal(t, exitUsage, code, stderr.String())
		require.Equal(t, "spiral train: "+tc.want+"\n", stderr.String(), tc.value)
	}
	// eval and generate take the greedy 0: their range says so.
	var stderr bytes.Buffer
	code := run(context.Background(), []string{"eval", "--temperature", "-1"}, &cliEnv{stdout: io.Discard, stderr: &stderr})
	require.Equal(t, exitUsage, code, stderr.String())
	require.Equal(t, "spiral eval: --temperature -1: want a finite value >= 0 (0 = greedy)\n", stderr.String())
}

// TestNegativeMaxNewTokens: a negative --max-new-tokens is refused with
// the range the flag takes, 0 (the model's default) included, and beside
// the other sampling flags' errors; it said "want > 0 (0 = the model's
// default)" and hid them (--top-p 5 and --gen-batch 0 were reported only
// once it was mended).
func TestNegativeMaxNewTokens(t *testing.T) {
	for _, cmd := range [][]string{{"eval"}, {"train"}, {"generate", "hi"}} {
		var stderr bytes.Buffer
		args := append(slices.Clone(cmd), "--max-new-tokens", "-1", "--top-p", "5", "--gen-batch", "0")
		code := run(context.Background(), args, &cliEnv{stdout: io.Discard, stderr: &stderr})
		require.Equal(t, exitUsage, code, stderr.String())
		require.Equal(t, "spiral "+cmd[0]+": --max-new-tokens -1: want >= 0 (0 = the model's default)\n"+
			"spiral "+cmd[0]+": --top-p 5: want a probability mass in (0, 1] (1 = off)\n"+
			"spiral "+cmd[0]+": --gen-batch 0: want > 0\n", stderr.String(), "%q", args)
	}
}

// TestCommandAfterFlags: a command given after flags (`spiral --quiet
// eval`) is a usage error saying to give it first; it read as train with
// the argument "eval": "spiral train: unexpected arguments ["eval"]".
func TestCommandAfterFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--quiet", "eval"}, "spiral: eval is a command, given after flags: give it first (spiral eval [flags]); flags with no command before them are train's\n"},
		{[]string{"--steps=2", "plot", "a.json"}, "spiral: plot is a command, given after flags: give it first (spiral plot [flags]); flags with no command before them are train's\n"},
		// After a bool flag, the argument is named as its detached value
		// (TestStrayArgumentAfterFlag).
		{[]string{"--quiet", "nosuch"}, "spiral train: --quiet nosuch: a value of --quiet goes after \"=\" (--quiet=true or --quiet=false); without it \"nosuch\" is read as an argument, and spiral train takes none\n"},
		{[]string{"train", "--quiet", "eval"}, "spiral train: --quiet eval: a value of --quiet goes after \"=\" (--quiet=true or --quiet=false); without it \"eval\" is read as an argument, and spiral train takes none\n"},
		{[]string{"--steps", "2", "nosuch"}, "spiral train: unexpected arguments [\"nosuch\"]\n"},
		{[]string{"train", "--steps=2", "eval"}, "spiral train: unexpected arguments [\"eval\"]\n"},
		{[]string{"--version", "eval"}, "spiral version: unexpected arguments [\"eval\"]\n"},
	} {
		var stderr bytes.Buffer
		code := run(context.Background(), tc.args, &cliEnv{stdout: io.Discard, stderr: &stderr})
		require.Equal(t, exitUsage, code, "%q", tc.args)
		require.Equal(t, tc.want, stderr.String(), "%q", tc.args)
	}
}

// TestStrayArgumentAfterFlag: an argument that a command does not take,
// directly after a flag whose value may be left out (a bool flag,
// --shared-arena), names the flag and its "=" form; it said only
// "unexpected arguments [\"maybe\"]". An argument the command takes
// (generate's prompt) is still one.
func TestStrayArgumentAfterFlag(t *testing.T) {
	t.Setenv("SPIRAL_CACHE_DIR", t.TempDir())
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"eval", "--shared-arena", "maybe"}, `spiral eval: --shared-arena maybe: a value of --shared-arena goes after "=" (--shared-arena=true, --shared-arena=false or --shared-arena=auto); without it "maybe" is read as an argument, and spiral eval takes none`},
		{[]string{"--shared-arena", "maybe"}, `spiral train: --shared-arena maybe: a value of --shared-arena goes after "=" (--shared-arena=true, --shared-arena=false or --shared-arena=auto); without it "maybe" is read as an argument, and spiral train takes none`},
		{[]string{"version", "--deterministic", "yes"}, `spiral version: --deterministic yes: a value of --deterministic goes after "=" (--deterministic=true or --deterministic=false); without it "yes" is read as an argument, and spiral version takes none`},
		{[]string{"sft", "--shared-arena", "off", "x"}, `spiral sft: --shared-arena off: a value of --shared-arena goes after "=" (--shared-arena=true, --shared-arena=false or --shared-arena=auto); without it "off" is read as an argument, and spiral sft takes none`},
		{[]string{"init-model", "--out", dir, "--overwrite", "yes"}, `spiral init-model: --overwrite yes: a value of --overwrite goes after "=" (--overwrite=true or --overwrite=false); without it "yes" is read as an argument, and spiral init-model takes none (usage: spiral init-model --out DIR [flags])`},
		{[]string{"plan", "--model", "qwen3-4b", "--json", "yes"}, `spiral plan: --json yes: a value of --json goes after "=" (--json=true or --json=false); without it "yes" is read as an argument, and spiral plan takes none`},
		{[]string{"plan", "--model", "qwen3-4b", "yes"}, `spiral plan: unexpected arguments ["yes"]`},
		// bench takes its subcommand alone; it said "want `spiral bench
		// train` or `spiral bench generate`, not \"train maybe\"".
		{[]string{"bench", "train", "--shared-arena", "maybe"}, `spiral bench: --shared-arena maybe: a value of --shared-arena goes after "=" (--shared-arena=true, --shared-arena=false or --shared-arena=auto); without it "maybe" is read as an argument, and spiral bench takes none after train`},
		{[]string{"bench", "--shared-arena", "maybe", "generate"}, `spiral bench: --shared-arena maybe: a value of --shared-arena goes after "=" (--shared-arena=true, --shared-arena=false or --shared-arena=auto); without it "maybe" is read as an argument, and spiral bench takes train or generate`},
		{[]string{"bench", "generate", "--deterministic", "yes"}, `spiral bench: --deterministic yes: a value of --deterministic goes after "=" (--deterministic=true or --deterministic=false); without it "yes" is read as an argument, and spiral bench takes none after generate`},
		{[]string{"bench", "train", "--seed", "2", "maybe"}, "spiral bench: want `spiral bench train` or `spiral bench generate`, not \"train maybe\""},
		{[]string{"bench", "--seed", "2", "maybe"}, "spiral bench: want `spiral bench train` or `spiral bench generate`, not \"maybe\""},
		// Not after such a flag: as before.
		{[]string{"eval", "--seed", "2", "maybe"}, `spiral eval: unexpected arguments ["maybe"]`},
		{[]string{"eval", "--shared-arena=true", "maybe"}, `spiral eval: unexpected arguments ["maybe"]`},
	} {
		var stderr bytes.Buffer
		code := run(context.Background(), tc.args, &cliEnv{stdout: io.Discard, stderr: &stderr})
		require.Equal(t, exitUsage, code, "%q: %s", tc.args, stderr.String())
		require.Equal(t, tc.want+"\n", stderr.String(), "%q", tc.args)
	}
}

// TestDetachedBoolSpellings: a bool flag given without "=" and followed
// by any spelling pflag reads as a bool after "=" (1, 0, t, F, TRUE,
// False...) is refused as "true" and "false" are: `generate --raw 0 P`
// generated the prompts "0" and P, raw, the opposite of what was meant,
// and `compare --allow-different-problems 0 A B` read "0" as a report.
// An argument that is no bool (a prompt "yes") is still an argument.
func TestDetachedBoolSpellings(t *testing.T) {
	flagSet := func(name string) *pflag.FlagSet {
		for _, c := range commands() {
			if c.name == name {
				fs := pflag.NewFlagSet("spiral "+name, pflag.ContinueOnError)
				c.setup(fs)
				return fs
			}
		}
		t.Fatalf("no command %q", name)
		return nil
	}
	for _, tc := range []struct {
		cmd  string
		args []string
		want string // "" where the arguments are not refused
	}{
		{"generate", []string{"--raw", "0", "Solve x+1=2."}, `--raw 0: a value of --raw goes after "=" (--raw=0); without it "0" is read as an argument`},
		{"generate", []string{"--jsonl", "1", "Solve x+1=2."}, `--jsonl 1: a value of --jsonl goes after "=" (--jsonl=1); without it "1" is read as an argument`},
		{"generate", []string{"Solve x+1=2.", "--deterministic", "F"}, `--deterministic F: a value of --deterministic goes after "=" (--deterministic=F); without it "F" is read as an argument`},
		{"generate", []string{"--raw", "TRUE", "Solve x+1=2."}, `--raw TRUE: a value of --raw goes after "=" (--raw=TRUE); without it "TRUE" is read as an argument`},
		{"generate", []string{"--raw", "False", "Solve x+1=2."}, `--raw False: a value of --raw goes after "=" (--raw=False); without it "False" is read as an argument`},
		{"generate", []string{"--raw", "t", "Solve x+1=2."}, `--raw t: a value of --raw goes after "=" (--raw=t); without it "t" is read as an argument`},
		{"generate", []string{"--raw", "false", "Solve x+1=2."}, `--raw false: a value of --raw goes after "=" (--raw=false); without it "false" is read as an argument`},
		{"compare", []string{"--allow-different-problems", "0", "a.json", "b.json"}, `--allow-different-problems 0: a value of --allow-different-problems goes after "=" (--allow-different-problems=0); without it "0" is read as an argument`},
		// --shared-arena takes its three values only, as ParseArenaSharing.
		{"generate", []string{"--shared-arena", "1", "Solve x+1=2."}, ""},
		{"generate", []string{"--raw", "yes", "Solve x+1=2."}, ""},
		{"generate", []string{"--raw=0", "1"}, ""},
		{"generate", []string{"--raw", "--", "0"}, ""},
	} {
		fs := flagSet(tc.cmd)
		require.NoError(t, fs.Parse(tc.args), "%s %q", tc.cmd, tc.args)
		err := checkDetachedValues(fs, tc.args)
		if tc.want == "" {
			require.NoError(t, err, "%s %q", tc.cmd, tc.args)
			continue
		}
		require.EqualError(t, err, tc.want, "%s %q", tc.cmd, tc.args)
		var ue usageError
		require.ErrorAs(t, err, &ue, "%s %q", tc.cmd, tc.args)
	}
	// Through run: a usage error before any report is read.
	var stderr bytes.Buffer
	code := run(context.Background(), []string{"compare", "--allow-different-problems", "0", "a.json", "b.json"}, &cliEnv{stdout: io.Discard, stderr: &stderr})
	require.Equal(t, exitUsage, code, stderr.String())
	require.Equal(t, `spiral compare: --allow-different-problems 0: a value of --allow-different-problems goes after "=" (--allow-different-problems=0); without it "0" is read as an argument`+"\n", stderr.String())
}

// TestCUDAOptionEmptyKeyOrValue: a --cuda-option with an empty key or
// value is a usage error naming it; "=x" passed as the option "" and
// "gpu_mem_limit=" as an empty value, handed to ONNX Runtime.
func TestCUDAOptionEmptyKeyOrValue(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--cuda-option", "=x"}, `spiral version: --cuda-option "=x": want KEY=VALUE, with a key`},
		{[]string{"--cuda-option=gpu_mem_limit="}, `spiral version: --cuda-option "gpu_mem_limit=": want KEY=VALUE, with a value (leave the option out for ONNX Runtime's default)`},
		{[]string{"--cuda-option", "b=", "--cuda-option", "=", "--cuda-option", "a="}, `spiral version: --cuda-option "=": want KEY=VALUE, with a key` + "\n" +
			`spiral version: --cuda-option "a=": want KEY=VALUE, with a value (leave the option out for ONNX Runtime's default)` + "\n" +
			`spiral version: --cuda-option "b=": want KEY=VALUE, with a value (leave the option out for ONNX Runtime's default)`},
	} {
		args := append([]string{"version", "--device", "cuda"}, tc.args...)
		var stderr bytes.Buffer
		code := run(context.Background(), args, &cliEnv{stdout: io.Discard, stderr: &stderr})
		require.Equal(t, exitUsage, code, "%q: %s", args, stderr.String())
		require.Equal(t, tc.want+"\n", stderr.String(), "%q", args)
	}
}

// TestEmptyChoiceRefused: an empty --device or init-model --config (a
// script's unset variable) is refused with the values they take; they
// ran on the CPU and made the tiny model, as though left out.
func TestEmptyChoiceRefused(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"version", "--device", ""}, `spiral version: --device "": want cpu, cuda, cuda:N or auto`},
		{[]string{"eval", "--device", " "}, `spiral eval: --device " ": want cpu, cuda, cuda:N or auto`},
		{[]string{"init-model", "--out", filepath.Join(t.TempDir(), "m"), "--config", ""}, `spiral init-model: --config "": want one of qwen3-0.6b, qwen3-1.7b, qwen3-4b, qwen3-8b`},
	} {
		var stderr bytes.Buffer
		code := run(context.Background(), tc.args, &cliEnv{stdout: io.Discard, stderr: &stderr})
		require.Equal(t, exitUsage, code, "%q: %s", tc.args, stderr.String())
		require.Equal(t, tc.want+"\n", stderr.String(), "%q", tc.args)
	}
}

// TestUnopenablePathRefused: a path the user names that is there but
// cannot be opened (a symbolic link loop; permission denied, which only
// a user other than root meets) is a usage error (exit 2) naming it,
// whether a flag or a positional argument gives it; `spiral plot LOOP`
// and `spiral tensorboard LOOP` failed with exit 1 where `--model LOOP`
// exits 2, and an unreadable --data file failed with exit 1 where one
// under an unreadable directory exits 2.
func TestUnopenablePathRefused(t *testing.T) {
	t.Setenv("SPIRAL_CACHE_DIR", t.TempDir())
	dir := t.TempDir()
	loop := filepath.Join(dir, "loop")
	require.NoError(t, os.Symlink(loop, loop))
	file := filepath.Join(dir, "file")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	underFile := filepath.Join(file, "run")
	const wantReport = "an eval report (spiral eval's MODE.json)"
	const eloop = "too many levels of symbolic links"
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"plot", loop}, "spiral plot: REPORT.json " + loop + ": " + eloop + ": want " + wantReport},
		{[]string{"compare", loop, loop + "2"}, "spiral compare: REPORT.json " + loop + ": " + eloop + ": want " + wantReport + "\nspiral compare: REPORT.json " + loop + "2 does not exist: want " + wantReport},
		{[]string{"tensorboard", loop}, "spiral tensorboard: RUN_DIR " + loop + ": " + eloop + ": want a training run's directory (the --out of spiral train or sft)"},
		{[]string{"data", "inspect", loop}, "spiral data: FILE " + loop + ": " + eloop + ": want a JSONL, JSON or Parquet data file"},
		{[]string{"eval", "--model", loop}, "spiral eval: --model " + loop + ": " + eloop},
		{[]string{"compare", "--run", "a=" + loop}, "spiral compare: --run a=" + loop + ": " + loop + ": " + eloop + ": want a training run's directory (train's --out)"},
		// Under a file: no such path (ENOTDIR), as an argument's.
		{[]string{"compare", "--run", "a=" + underFile}, "spiral compare: --run a=" + underFile + ": " + underFile + " does not exist: want a training run's directory (train's --out)"},
	}
	if os.Geteuid() != 0 {
		// Permission denied: a file that cannot be read, and a directory
		// that cannot be entered.
		locked := filepath.Join(dir, "locked.json")
		require.NoError(t, os.WriteFile(locked, []byte("{}"), 0o000))
		lockedDir := filepath.Join(dir, "run")
		require.NoError(t, os.Mkdir(lockedDir, 0o000))
		t.Cleanup(func() { os.Chmod(lockedDir, 0o755) })
		const denied = "permission denied"
		cases = append(cases, []struct {
			args []string
			want string
		}{
			{[]string{"plot", locked}, "spiral plot: REPORT.json " + locked + ": " + denied + ": want " + wantReport},
			{[]string{"tensorboard", lockedDir}, "spiral tensorboard: RUN_DIR " + lockedDir + ": " + denied + ": want a training run's directory (the --out of spiral train or sft)"},
			{[]string{"data", "inspect", locked}, "spiral data: FILE " + locked + ": " + denied + ": want a JSONL, JSON or Parquet data file"},
			{[]string{"version", "--ort-lib", locked}, "spiral version: --ort-lib " + locked + ": " + denied},
			{[]string{"generate", "--tokenizer", locked, "hi"}, "spiral generate: --tokenizer " + locked + ": " + denied},
			{[]string{"compare", "--run", "a=" + lockedDir}, "spiral compare: --run a=" + lockedDir + ": " + lockedDir + ": " + denied + ": want a training run's directory (train's --out)"},
		}...)
	}
	for _, tc := range cases {
		var stderr bytes.Buffer
		code := run(context.Background(), tc.args, &cliEnv{stdout: io.Discard, stderr: &stderr})
		require.Equal(t, exitUsage, code, "%q: %s", tc.args, stderr.String())
		require.Equal(t, tc.want+"\n", stderr.String(), "%q", tc.args)
	}
}

// TestFlagErrorsBeforeMissingArgs: a bad flag value is reported before a
// positional path that does not exist, as commands taking path flags
// report theirs (eval --samples 0 --model nope names --samples); `spiral
// compare --max-k -1 nope.json r.json` named the missing report, and
// fixing that reported --max-k next.
func TestFlagErrorsBeforeMissingArgs(t *testing.T) {
	t.Setenv("SPIRAL_CACHE_DIR", t.TempDir())
	dir := t.TempDir()
	nope := filepath.Join(dir, "nope.json")
	reps := twoPassKReports(t, dir)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"compare", "--max-k", "-1", nope, reps[0]}, "spiral compare: --max-k -1: want a k >= 1, or 0 for every k"},
		{[]string{"compare", "--figures", "gif", reps[0], nope}, `spiral compare: --figures "gif": want png, svg or pdf`},
		{[]string{"plot", "--width", "1", nope}, "spiral plot: --width 1 --height 500: want 100..8000 pixels each"},
		{[]string{"plot", "--out", "p.gif", nope}, "spiral plot: --out p.gif: want a .png, .svg or .pdf file (the extension chooses the format)"},
		{[]string{"data", "inspect", "--format", "xml", nope}, `spiral data: --format "xml": want jsonl, json or parquet (or nothing, to detect it)`},
		{[]string{"data", "inspect", "--problems", "3", nope}, "spiral data: --problems is spiral data synth's; spiral data inspect would ignore it"},
	} {
		var stderr bytes.Buffer
		code := run(context.Background(), tc.args, &cliEnv{stdout: io.Discard, stderr: &stderr})
		require.Equal(t, exitUsage, code, "%q: %s", tc.args, stderr.String())
		require.Equal(t, tc.want+"\n", stderr.String(), "%q", tc.args)
	}
}

// TestJoinedErrorsPrefixEachLine: an error joined from several checks
// prints each on a line of its own with the "spiral CMD: " prefix a
// single error has: its later lines lacked it, reading as another
// program's output. A message that wraps several errors in one sentence
// (fmt.Errorf with two %w) stays one line.
func TestJoinedErrorsPrefixEachLine(t *testing.T) {
	engine := []string{"--engine", "openai", "--base-url", "http://127.0.0.1:1/v1", "--served-model", "m"}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"train: --engine-sync without --sync-dir, and --steps 0", append([]string{"train", "--engine-sync", "vllm-lora", "--lora-rank", "2", "--steps", "0"}, engine...),
			"spiral train: --steps 0: want >= 1\nspiral train: --engine openai in training needs --sync-dir\n"},
		{"train: --engine-sync vllm-lora without --lora-rank or --sync-dir", append([]string{"train", "--engine-sync", "vllm-lora"}, engine...),
			"spiral train: --engine-sync vllm-lora syncs LoRA adapters: give --lora-rank\nspiral train: --engine openai in training needs --sync-dir\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			requireStderrOfUsage(t, tc.args, tc.want)
		})
	}
	var stderr bytes.Buffer
	printError(&stderr, "eval", fmt.Errorf("%w, and %w", errors.New("eval: a"), errors.New("b")))
	require.Equal(t, "spiral eval: a, and b\n", stderr.String())
}

// TestInputPathsBeforeRuntime: an input path flag that does not exist is
// refused before ONNX Runtime is looked for, as --model and --tokenizer
// are: on a machine without it, `eval --data nope.jsonl`, `train
// --eval-data`, `--search-template`, `--checkpoint` said "no ONNX
// Runtime library could be loaded" (exit 1), and named the flag (exit 2)
// only once the runtime was installed.
func TestInputPathsBeforeRuntime(t *testing.T) {
	t.Setenv("SPIRAL_CACHE_DIR", t.TempDir()) // no runtime installed there
	t.Setenv(model.LibEnvVar, "")
	dir := t.TempDir()
	nope := filepath.Join(dir, "nope")
	out := filepath.Join(dir, "out")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"eval", "--out", out, "--data", nope}, "spiral eval: --data " + nope + ": no such file or directory"},
		{[]string{"eval", "--out", out, "--search-template", nope}, "spiral eval: --search-template " + nope + ": no such file or directory"},
		{[]string{"eval", "--out", out, "--checkpoint", nope}, "spiral eval: --checkpoint " + nope + ": no such file or directory"},
		{[]string{"train", "--out", out, "--data", nope, "--eval-data", nope + "2"}, "spiral train: --data " + nope + ": no such file or directory\nspiral train: --eval-data " + nope + "2: no such file or directory"},
		{[]string{"train", "--out", out, "--aggregate-template", dir}, "spiral train: --aggregate-template " + dir + " is a directory: want a template file"},
		{[]string{"generate", "--checkpoint", nope, "hi"}, "spiral generate: --checkpoint " + nope + ": no such file or directory"},
	} {
		var stderr bytes.Buffer
		code := run(context.Background(), tc.args, &cliEnv{stdout: io.Discard, stderr: &stderr})
		require.Equal(t, exitUsage, code, "%q: %s", tc.args, stderr.String())
		require.Equal(t, tc.want+"\n", stderr.String(), "%q", tc.args)
		require.NoDirExists(t, out)
	}
}

// TestOutUnderAFileBeforeRuntime: train's and sft's --out (and train's
// --sync-dir) that is a file, or lies under one, is refused before ONNX
// Runtime is looked for, as eval's --out is: on a machine without the
// runtime they said "no ONNX Runtime library could be loaded" (exit 1),
// naming the flag (exit 2, TestOutUnderAFile) only once it was there.
func TestOutUnderAFileBeforeRuntime(t *testing.T) {
	t.Setenv("SPIRAL_CACHE_DIR", t.TempDir()) // no runtime installed there
	t.Setenv(model.LibEnvVar, "")
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	under := filepath.Join(file, "x", "y")
	openai := []string{"--engine", "openai", "--base-url", "http://127.0.0.1:1/v1", "--served-model", "m", "--engine-sync", "sglang"}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"train", "--out", file}, "spiral train: --out " + file + ": mkdir " + file + ": not a directory"},
		{[]string{"train", "--out", under}, "spiral train: --out " + under + ": mkdir " + file + ": not a directory"},
		{[]string{"sft", "--out", file}, "spiral sft: --out " + file + ": mkdir " + file + ": not a directory"},
		{append([]string{"train", "--out", filepath.Join(dir, "run"), "--sync-dir", under}, openai...), "spiral train: --sync-dir " + under + ": mkdir " + file + ": not a directory"},
	} {
		var stderr bytes.Buffer
		code := run(context.Background(), tc.args, &cliEnv{stdout: io.Discard, stderr: &stderr})
		require.Equal(t, exitUsage, code, "%q: %s", tc.args, stderr.String())
		require.Equal(t, tc.want+"\n", stderr.String(), "%q", tc.args)
	}
	require.NoDirExists(t, filepath.Join(dir, "run"))
}

// TestSyncDirUnwritableBeforeRuntime: train's --sync-dir, or the
// directory it would be made in, where no file can be made is refused
// before ONNX Runtime is looked for, naming the flag and the directory
// (exit 2, as one under a file is): it was found only at the first
// weight sync, after the policy's artifacts were built and the first
// rollouts sampled. The tests run as root, whom no permission bits stop,
// so the directory is one of sysfs, where even root makes no file (Linux;
// skipped where a file can be made there).
func TestSyncDirUnwritableBeforeRuntime(t *testing.T) {
	const ro = "/sys/kernel"
	f, err := os.CreateTemp(ro, "spiral-test-*")
	if err == nil {
		require.NoError(t, errors.Join(f.Close(), os.Remove(f.Name())))
		t.Skipf("a file can be made in %s here", ro)
	}
	if _, err := os.Stat(ro); err != nil {
		t.Skipf("no directory %s here: %v", ro, err)
	}
	t.Setenv("SPIRAL_CACHE_DIR", t.TempDir()) // no runtime installed there
	t.Setenv(model.LibEnvVar, "")
	dir := t.TempDir()
	openai := []string{"--engine", "openai", "--base-url", "http://127.0.0.1:1/v1", "--served-model", "m", "--engine-sync", "sglang", "--out", filepath.Join(dir, "run")}
	for _, tc := range []struct {
		sync, want string
	}{
		{ro, "spiral train: --sync-dir " + ro + ": cannot write in " + ro + ": permission denied"},
		{filepath.Join(ro, "spiral", "sync"), "spiral train: --sync-dir " + filepath.Join(ro, "spiral", "sync") + ": cannot write in " + ro + ": permission denied"},
	} {
		var stderr bytes.Buffer
		args := append([]string{"train", "--sync-dir", tc.sync}, openai...)
		code := run(context.Background(), args, &cliEnv{stdout: io.Discard, stderr: &stderr})
		require.Equal(t, exitUsage, code, "%q: %s", args, stderr.String())
		require.Equal(t, tc.want+"\n", stderr.String(), "%q", args)
	}
	require.NoDirExists(t, filepath.Join(dir, "run"))
}

// TestGenerateGreedyNote: generate --temperature 0 with --n above 1 notes
// that the completions of a prompt are all the same, as eval does of its
// samples; it printed --n copies without a word.
func TestGenerateGreedyNote(t *testing.T) {
	skipWithoutRuntime(t)
	t.Setenv("SPIRAL_CACHE_DIR", t.TempDir())
	const note = "spiral: note: --temperature 0 samples greedily: the 3 completions of a prompt are all the same\n"
	for _, tc := range []struct {
		args []string
		note bool
	}{
		{[]string{"--temperature", "0", "--n", "3"}, true},
		{[]string{"--temperature", "0"}, false},
		{[]string{"--n", "3"}, false},
	} {
		var stderr bytes.Buffer
		args := append(append([]string{"generate", "--max-new-tokens", "2", "--threads", "1"}, tc.args...), "1+1")
		require.Zero(t, run(context.Background(), args, &cliEnv{stdout: io.Discard, stderr: &stderr}), stderr.String())
		if tc.note {
			require.Contains(t, stderr.String(), note, "%q", args)
		} else {
			require.NotContains(t, stderr.String(), "greedily", "%q", args)
		}
	}
}

// TestTokenizerFlagHelp: --tokenizer's help says that its files are
// copied beside a model only where a model is written (export's onnx and
// hf formats, sft's trained model). Every command's help said "the
// exports copy the tokenizer files beside it", train's, eval's,
// generate's and bench's too, which write no model.
func TestTokenizerFlagHelp(t *testing.T) {
	const base = "tokenizer.json, or a directory holding it (default: beside the model)"
	for cmd, want := range map[string]string{
		"train":    base,
		"eval":     base,
		"generate": base,
		"bench":    base + "; its ids are the policy's vocabulary, as train's (a model without one: the logits' whole width)",
		"sft":      base + "; the trained model in --out gets it, with the tokenizer files beside it (tokenizer_config.json, ...)",
		"export":   base + "; onnx and hf copy it, with the tokenizer files beside it (tokenizer_config.json, ...), into the export",
	} {
		f := readmeFlagSet(t, cmd).Lookup("tokenizer")
		require.NotNil(t, f, cmd)
		require.Equal(t, want, f.Usage, cmd)
	}
}

// TestCommandAfterFlagsWithItsFlags: a command given after flags, with
// flags of its own after it that train lacks (`spiral --threads 1 eval
// --limit 4`), is refused as a command given after flags, as it is
// without them; it said "spiral train: unknown flag: --limit (run
// 'spiral train --help')", naming train, which was not asked for. A flag
// unknown before any command stays train's unknown flag.
func TestCommandAfterFlagsWithItsFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--threads", "1", "eval", "--limit", "4"}, "spiral: eval is a command, given after flags: give it first (spiral eval [flags]); flags with no command before them are train's\n"},
		{[]string{"--quiet", "compare", "--max-k", "4", "a.json", "b.json"}, "spiral: compare is a command, given after flags: give it first (spiral compare [flags]); flags with no command before them are train's\n"},
		{[]string{"--out=runs/x", "data", "synth", "--split", "train"}, "spiral: data is a command, given after flags: give it first (spiral data [flags]); flags with no command before them are train's\n"},
		{[]string{"--limit", "4", "eval"}, "spiral train: unknown flag: --limit (run 'spiral train --help')\n"},
		{[]string{"--steps", "2", "nosuch", "--limit", "4"}, "spiral train: unknown flag: --limit (run 'spiral train --help')\n"},
	} {
		var stderr bytes.Buffer
		code := run(context.Background(), tc.args, &cliEnv{stdout: io.Discard, stderr: &stderr})
		require.Equal(t, exitUsage, code, "%q", tc.args)
		require.Equal(t, tc.want, stderr.String(), "%q", tc.args)
	}
}

// TestEngineTimeoutHelp: --engine-timeout's help says how retries are
// announced as they are (README): at most a line in 10 s, the next one
// counting those not shown, and no sooner than a Retry-After; it said
// "each retry announced on stderr", which an engine restarting under 16
// requests does not do.
func TestEngineTimeoutHelp(t *testing.T) {
	fs := pflag.NewFlagSet("eval", pflag.ContinueOnError)
	var ef engineFlags
	ef.register(fs)
	require.Equal(t, "openai engine: the longest one request may take, its retries included (a 429, 5xx or connection error is retried up to 4 times with backoff, no sooner than the server's Retry-After asks; the first request, the check of --served-model, until this timeout, for a server still starting; the retries are announced on stderr, at most a line in 10s, which counts those not shown)",
		fs.Lookup("engine-timeout").Usage)
}

// TestMaxNewTokensHelpNamesServingEngine: every command that samples on
// a serving engine (--engine) and defaults --max-new-tokens to half the
// model's context says in its help that the context is the engine's where
// that is smaller, as it takes it (samplerConfig): generate's help left
// the engine out.
func TestMaxNewTokensHelpNamesServingEngine(t *testing.T) {
	checked := 0
	for _, c := range commands() {
		fs := pflag.NewFlagSet("spiral "+c.name, pflag.ContinueOnError)
		c.setup(fs)
		mnt := fs.Lookup("max-new-tokens")
		if mnt == nil || fs.Lookup("engine") == nil {
			continue
		}
		checked++
		require.Contains(t, mnt.Usage, "at most half its context, or of a serving engine's where smaller", "spiral %s --max-new-tokens", c.name)
	}
	require.Equal(t, 3, checked, "train, eval and generate take --engine and --max-new-tokens")
}

// TestNoDoubledCommandPrefix: an error of a package or of code named as
// the command it runs in is printed with the command's name once; spiral
// data's said "spiral data: data: F: ..." and compare's "spiral compare:
// compare: --max-k: ...".
func TestNoDoubledCommandPrefix(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
		return p
	}
	undetected := write("problems", "problem,answer\n1+1,2\n")
	malformed := write("bad.jsonl", "garbage\n")
	noProblem := write("x.jsonl", `{"x": 1}`+"\n")
	var passK []string
	for _, m := range []string{"c", "d"} {
		passK = append(passK, write(m+".json", `{"meta": {"mode": "passk", "model": "`+m+`", "problems": 1}, "config": {"samples": 4, "ks": [2, 4]},
			"points": [{"k": 2, "pass_at_k": 0.5, "majority_at_k": 0.5}, {"k": 4, "pass_at_k": 1, "majority_at_k": 0.5}]}`))
	}
	runDir := filepath.Join(dir, "run")
	require.NoError(t, os.Mkdir(runDir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(runDir, "metrics.jsonl"), []byte("x\n"), 0o644))
	for _, tc := range []struct {
		args []string
		want string // "" where only the prefix is checked
	}{
		{[]string{"data", "inspect", undetected}, "spiral data: " + undetected + `: cannot detect the format from the extension "" or the content; give --format jsonl, json or parquet` + "\n"},
		{[]string{"data", "inspect", malformed}, "spiral data: " + malformed + ":1: malformed JSON: invalid character 'g' looking for beginning of value\n"},
		{[]string{"data", "inspect", noProblem}, "spiral data: " + noProblem + ":1: no problem field: none of [problem question prompt input query] among the fields [x]; name it with --problem-field\n"},
		{append([]string{"compare", "--max-k", "1"}, passK...), "spiral compare: --max-k: report: c: no pass@k point at k <= 1\n"},
		{[]string{"plot", malformed}, ""},
		{[]string{"tensorboard", runDir}, ""},
		{[]string{"plan", "--model", malformed}, ""},
	} {
		var stderr bytes.Buffer
		code := run(context.Background(), tc.args, &cliEnv{stdout: io.Discard, stderr: &stderr})
		require.Equal(t, exitFailure, code, "%q: %s", tc.args, stderr.String())
		if tc.want != "" {
			require.Equal(t, tc.want, stderr.String(), "%q", tc.args)
		}
		require.False(t, strings.HasPrefix(stderr.String(), "spiral "+tc.args[0]+": "+tc.args[0]+": "), "%q: %s", tc.args, stderr.String())
	}
}

// TestDataSynthTooFewNamesTheFlags: a --problems past the distinct
// problems the settings give is refused naming --problems and the flags
// that widen the set; it said "synth: only 1134 distinct test problems
// found, want 100000; widen the operand range or count", naming no flag.
func TestDataSynthTooFewNamesTheFlags(t *testing.T) {
	var stderr bytes.Buffer
	code := run(context.Background(), []string{"data", "synth", "--problems", "100000"}, &cliEnv{stdout: io.Discard, stderr: &stderr})
	require.Equal(t, exitUsage, code, stderr.String())
	require.Equal(t, "spiral data: --problems 100000: only 1134 distinct test problems found with these settings: ask for fewer, or widen --min-operand..--max-operand or --min-operands..--max-operands\n", stderr.String())
	stderr.Reset()
	code = run(context.Background(), []string{"data", "synth", "--form", "compute", "--max-operand", "1", "--problems", "5"}, &cliEnv{stdout: io.Discard, stderr: &stderr})
	require.Equal(t, exitUsage, code, stderr.String())
	require.Equal(t, "spiral data: --problems 5: only 1 distinct test problem found with these settings: ask for fewer, or widen --min-operand..--max-operand or --min-operands..--max-operands\n", stderr.String())
	// 1+1, 1-1 and 1*1, all in the train split: it said "synth: no test
	// problem in 10000 tries", naming no flag.
	stderr.Reset()
	code = run(context.Background(), []string{"data", "synth", "--form", "compute", "--max-operand", "1", "--min-operands", "2", "--max-operands", "2", "--problems", "5"}, &cliEnv{stdout: io.Discard, stderr: &stderr})
	require.Equal(t, exitUsage, code, stderr.String())
	require.Equal(t, "spiral data: --problems 5: only 0 distinct test problems found with these settings: ask for fewer, or widen --min-operand..--max-operand or --min-operands..--max-operands\n", stderr.String())
	// 265,719 expressions, counted once the draws stall, though before
	// counting was worth their cost: it said "only 269" of the 284.
	stderr.Reset()
	code = run(context.Background(), []string{"data", "synth", "--form", "compute", "--max-operand", "1", "--min-operands", "2", "--max-operands", "12", "--problems", "1048576"}, &cliEnv{stdout: io.Discard, stderr: &stderr})
	require.Equal(t, exitUsage, code, stderr.String())
	require.Equal(t, "spiral data: --problems 1048576: only 284 distinct test problems found with these settings: ask for fewer, or widen --min-operand..--max-operand or --min-operands..--max-operands\n", stderr.String())
}
