package rollout

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/spiral-rl/spiral/data"
)

// rsaFakeGen is a deterministic stand-in for a model, built on the eval
// fakes' text conventions. Each completion draws from a generator seeded by
// its request's seed alone, so it does not depend on the batch. A search
// trace answers the gold (the problem text after "gold=") with probability
// 0.4, else a random digit, sometimes written with a leading zero; an
// aggregation trace answers its candidates' majority answer with
// probability 0.8. Every text starts with the request's seed (so texts are
// unique) and has a random amount of filler (so lengths vary).
type rsaFakeGen struct {
	calls [][]Request
	outs  [][]Completion
}

func (g *rsaFakeGen) Generate(_ context.Context, reqs []Request, _ Progress) ([]Completion, Stats, error) {
	outs := make([]Completion, len(reqs))
	var st Stats
	for r, req := range reqs {
		text := rsaFakeComplete(evalText(req.Prompt), req.Seed)
		outs[r] = Completion{Tokens: evalTokens(text), Finish: FinishStop, PromptTokens: len(req.Prompt)}
		st.PromptTokens += len(req.Prompt)
		st.GeneratedTokens += len(text)
	}
	g.calls = append(g.calls, reqs)
	g.outs = append(g.outs, outs)
	return outs, st, nil
}

func rsaFakeComplete(prompt string, seed uint64) string {
	rng := rand.New(rand.NewPCG(seed, 7))
	gold := prompt[strings.Index(prompt, "gold=")+len("gold="):]
	gold = gold[:strings.IndexByte(gold+"|", '|')]
	ans := fmt.Sprint(rng.IntN(10))
	if kind, cands, ok := strings.Cut(prompt, "|"); ok && kind == "A" {
		_, list, _ := strings.Cut(cands, "|")
		var answers []string
		for _, c := range strings.Split(list, evalSep) {
			answers = append(answers, evalAnswer(c))
		}
		all := make([]int, len(answers))
		for i := range all {
			all[i] = i
		}
		if v := MajorityVote(answers, all, evalEqual); v.Winner != NoAnswer && rng.Float64() < 0.8 {
			ans = answers[v.Winner]
		}
	} else if rng.Float64() < 0.4 {
		ans = gold
	}
	if rng.Float64() < 0.3 {
		ans = "0" + ans
	}
	return fmt.Sprintf("r%x %s ans=%s", seed, strings.Repeat("x", rng.IntN(20)), ans)
}

func rsaProblems(n int) []data.Problem {
	ps := make([]data.Problem, n)
	for i := range ps {
		ps[i] = data.Problem{ID: fmt.Sprint("p", i), Problem: fmt.Sprintf("q%d gold=%d", i, i%10), Answer: fmt.Sprint(i % 10)}
	}
	return ps
}

func TestRSABookkeeping(t *testing.T) {
	tests := []struct {
		name     string
		problems int
		cfg      RSAConfig
	}{
		{"paper shape", 3, DefaultRSAConfig()},
		{"small", 2, RSAConfig{Population: 5, SubsetSize: 3, Steps: 2}},
		{"subset is the population", 1, RSAConfig{Population: 3, SubsetSize: 3, Steps: 3}},
		{"subset of one", 2, RSAConfig{Population: 4, SubsetSize: 1, Steps: 2}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			problems := rsaProblems(tc.problems)
			gen := &rsaFakeGen{}
			e := Evaluator{Gen: gen, Prompter: evalPrompter{}, Judge: evalJudge}
			res, err := e.RSA(context.Background(), problems, tc.cfg, 11)
			require.NoError(t, err)
			cfg := tc.cfg
			n, k := cfg.Population, cfg.SubsetSize
			require.Equal(t, cfg, res.Config)

			// One Generate call per step, N members per problem each.
			require.Len(t, gen.calls, cfg.Steps+1)
			require.Len(t, res.Steps, cfg.Steps+1)
			var cum Tokens
			for s, step := range res.Steps {
				require.Equal(t, s, step.Step)
				require.Equal(t, n, step.Population)
				require.Len(t, gen.calls[s], len(problems)*n, "step %d batch", s)

				// Tokens: exact sums over the recorded requests and
				// completions of this step.
				var want Tokens
				for r, req := range gen.calls[s] {
					want.Prompt += len(req.Prompt)
					want.Generated += len(gen.outs[s][r].Tokens)
				}
				cum.Prompt += want.Prompt
				cum.Generated += want.Generated
				require.Equal(t, want, step.Tokens, "step %d tokens", s)
				require.Equal(t, cum, step.Cumulative, "step %d cumulative tokens", s)

				// Accuracy and majority recomputed from the recorded texts.
				acc, maj := 0.0, 0.0
				for i, pb := range problems {
					answers := make([]string, n)
					correct := 0
					for j := range n {
						v := evalGrade(evalText(gen.outs[s][i*n+j].Tokens), pb.Answer)
						answers[j] = v.Answer
						if v.Correct {
							correct++
						}
					}
					acc += float64(correct) / float64(n)
					if v := MajorityVote(answers, allMembers(n), evalEqual); v.Winner != NoAnswer && evalEqual(answers[v.Winner], pb.Answer) {
						maj++
					}
				}
				require.InDelta(t, acc/float64(len(problems)), step.Accuracy, 1e-12, "step %d accuracy", s)
				require.InDelta(t, maj/float64(len(problems)), step.Majority, 1e-12, "step %d majority", s)

				// Prompts: step 0 searches; later steps aggregate exactly K
				// distinct members of the same problem's previous population.
				for r, req := range gen.calls[s] {
					i := r / n
					prompt := evalText(req.Prompt)
					if s == 0 {
						require.Equal(t, "S|"+problems[i].Problem, prompt)
						continue
					}
					head := "A|" + problems[i].Problem + "|"
					require.True(t, strings.HasPrefix(prompt, head), "step %d request %d: %q", s, r, prompt)
					cands := strings.Split(strings.TrimPrefix(prompt, head), evalSep)
					require.Len(t, cands, k, "step %d request %d", s, r)
					members := map[int]bool{}
					for _, c := range cands {
						idx := -1
						for j := range n {
							if evalText(gen.outs[s-1][i*n+j].Tokens) == c {
								idx = j
							}
						}
						require.GreaterOrEqual(t, idx, 0, "step %d request %d: candidate %q is not in the previous population", s, r, c)
						require.False(t, members[idx], "step %d request %d: member %d twice", s, r, idx)
						members[idx] = true
					}
				}
			}
			require.Len(t, res.Final, len(problems))
			for i := range res.Final {
				require.Len(t, res.Final[i], n)
				require.Equal(t, gen.outs[cfg.Steps][i*n].Tokens, res.Final[i][0].Tokens)
			}
		})
	}
}

func TestRSACandidateCap(t *testing.T) {
	const capTok = 6
	problems := rsaProblems(2)
	gen := &rsaFakeGen{}
	e := Evaluator{Gen: gen, Prompter: evalPrompter{}, Judge: evalJudge}
	cfg := RSAConfig{Population: 4, SubsetSize: 2, Steps: 1, CandidateTokens: capTok}
	_, err := e.RSA(context.Background(), problems, cfg, 5)
	require.NoError(t, err)
	for r, req := range gen.calls[1] {
		i := r / 4
		head := "A|" + problems[i].Problem + "|"
		cands := strings.Split(strings.TrimPrefix(evalText(req.Prompt), head), evalSep)
		require.Len(t, cands, 2)
		for _, c := range cands {
			found := false
			for j := range 4 {
				full := evalText(gen.outs[0][i*4+j].Tokens)
				// Every fake text is longer than the cap: the candidate is
				// its last capTok bytes.
				require.Greater(t, len(full), capTok)
				found = found || full[len(full)-capTok:] == c
			}
			require.True(t, found, "candidate %q is no member's end", c)
		}
	}
}

// TestRSACountsFittedPrompts: each step reports how many of its
// aggregation prompts were cut to fit the prompt limit (every one when
// the limit is below their length, none without a limit).
func TestRSACountsFittedPrompts(t *testing.T) {
	problems := rsaProblems(2)
	cfg := RSAConfig{Population: 4, SubsetSize: 2, Steps: 2}
	e := Evaluator{Gen: &rsaFakeGen{}, Prompter: evalPrompter{}, Judge: evalJudge}
	res, err := e.RSA(context.Background(), problems, cfg, 5)
	require.NoError(t, err)
	for _, st := range res.Steps {
		require.Zero(t, st.FittedPrompts)
	}
	// A limit under the shortest of step 1's prompts: all 2 x 4 are cut,
	// and those of the same length at the limit are not.
	gen := &rsaFakeGen{}
	e.Gen = gen
	_, err = e.RSA(context.Background(), problems, cfg, 5)
	require.NoError(t, err)
	shortest := len(gen.calls[1][0].Prompt)
	for _, req := range gen.calls[1] {
		shortest = min(shortest, len(req.Prompt))
	}
	for _, tc := range []struct{ limit, fitted int }{{shortest - 1, 2 * 4}, {1 << 20, 0}} {
		cfg.PromptLimit = tc.limit
		e.Gen = &rsaFakeGen{}
		res, err = e.RSA(context.Background(), problems, cfg, 5)
		require.NoError(t, err)
		require.Zero(t, res.Steps[0].FittedPrompts, "step 0 has no aggregation prompt")
		require.Equal(t, tc.fitted, res.Steps[1].FittedPrompts, "limit %d", tc.limit)
	}
}

func TestRSAReproducible(t *testing.T) {
	problems := rsaProblems(4)
	cfg := RSAConfig{Population: 6, SubsetSize: 3, Steps: 3, Details: true}
	run := func(seed uint64) (RSAResult, *rsaFakeGen) {
		gen := &rsaFakeGen{}
		res, err := Evaluator{Gen: gen, Prompter: evalPrompter{}, Judge: evalJudge}.RSA(context.Background(), problems, cfg, seed)
		require.NoError(t, err)
		return res, gen
	}
	a, ga := run(21)
	b, gb := run(21)
	c, gc := run(22)
	require.Equal(t, a.Steps, b.Steps)
	require.Equal(t, ga.calls, gb.calls, "same seed, same prompts and seeds")
	require.NotEqual(t, ga.calls, gc.calls, "another seed draws other traces")
	require.NotEqual(t, a.Final, c.Final)
	for _, st := range a.Steps {
		require.Len(t, st.Problems, len(problems))
	}
}

// TestRSAHandComputed checks the step numbers on a scripted run (N = 3,
// K = 2, T = 1, one problem with gold 7), where majority must cluster
// "07" with "7".
func TestRSAHandComputed(t *testing.T) {
	problems := []data.Problem{{ID: "p", Problem: "z", Answer: "7"}}
	gen := &evalScripted{script: [][]string{
		{"ans=3", "ans=07", "ans=7"}, // step 0
		{"ans=3", "ans=3", "xans=7"}, // step 1
	}}
	res, err := Evaluator{Gen: gen, Prompter: evalPrompter{}, Judge: evalJudge}.RSA(context.Background(), problems,
		RSAConfig{Population: 3, SubsetSize: 2, Steps: 1, Details: true}, 0)
	require.NoError(t, err)
	require.Len(t, res.Steps, 2)
	// Step 0: 2 of 3 correct; clusters {3}, {07, 7}: majority 07 (string
	// equality would tie three singletons and pick the wrong "3").
	s0 := res.Steps[0]
	require.InDelta(t, 2.0/3, s0.Accuracy, 1e-12)
	require.Equal(t, 1.0, s0.Majority)
	require.Equal(t, []RSAProblemStep{{ID: "p", Correct: 2, Majority: true, MajorityAnswer: "07"}}, s0.Problems)
	// Prompt "S|z" is 3 tokens x 3; texts 5 + 6 + 5 tokens.
	require.Equal(t, Tokens{Prompt: 9, Generated: 16}, s0.Tokens)
	// Step 1: 1 of 3 correct; majority 3 (2 votes) is wrong.
	s1 := res.Steps[1]
	require.InDelta(t, 1.0/3, s1.Accuracy, 1e-12)
	require.Equal(t, 0.0, s1.Majority)
	// Aggregation prompts are "A|z|" (4) + two candidates + one separator;
	// each candidate is one of the step-0 texts (5 or 6 bytes).
	wantPrompt := 0
	for _, req := range gen.calls[1] {
		cands := strings.Split(strings.TrimPrefix(evalText(req.Prompt), "A|z|"), evalSep)
		require.Len(t, cands, 2)
		wantPrompt += 4 + len(cands[0]) + 1 + len(cands[1])
	}
	require.Equal(t, Tokens{Prompt: wantPrompt, Generated: 5 + 5 + 6}, s1.Tokens)
	require.Equal(t, Tokens{Prompt: 9 + wantPrompt, Generated: 32}, s1.Cumulative)
}

func TestRSAConfigErrors(t *testing.T) {
	tests := []struct {
		name string
		cfg  RSAConfig
		want string
	}{
		{"subset above population", RSAConfig{Population: 3, SubsetSize: 4, Steps: 1}, "--subset 4 exceeds --population 3"},
		{"negative steps", RSAConfig{Population: 3, SubsetSize: 2, Steps: -1}, "--rsa-steps -1: want >= 1"},
		{"zero steps (no silent default)", RSAConfig{Population: 3, SubsetSize: 2}, "--rsa-steps 0: want >= 1"},
		{"negative cap", RSAConfig{Population: 3, SubsetSize: 2, Steps: 1, CandidateTokens: -1}, "--candidate-tokens -1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Evaluator{Gen: &rsaFakeGen{}, Prompter: evalPrompter{}, Judge: evalJudge}.RSA(context.Background(), rsaProblems(1), tc.cfg, 0)
			require.ErrorContains(t, err, tc.want)
		})
	}
	require.NoError(t, DefaultRSAConfig().Validate(), "defaults are valid")
}

func BenchmarkRSA(b *testing.B) {
	problems := rsaProblems(16)
	e := Evaluator{Gen: &rsaFakeGen{}, Prompter: evalPrompter{}, Judge: evalJudge}
	for b.Loop() {
		e.Gen = &rsaFakeGen{}
		cfg := DefaultRSAConfig()
		cfg.Steps = 3
		if _, err := e.RSA(context.Background(), problems, cfg, 1); err != nil {
			b.Fatal(err)
		}
	}
}

// TestRSATraces checks the trace sink: every member of every step, once,
// judged as the step's accuracy counts it, and each aggregation trace's
// candidates are the members of the previous step its prompt holds, in
// prompt order.
func TestRSATraces(t *testing.T) {
	problems := rsaProblems(3)
	cfg := RSAConfig{Population: 5, SubsetSize: 3, Steps: 2}
	gen := &rsaFakeGen{}
	var got []TracedTrace
	e := Evaluator{Gen: gen, Prompter: evalPrompter{}, Judge: evalJudge, Traces: func(b []TracedTrace) error {
		got = append(got, b...)
		return nil
	}}
	res, err := e.RSA(context.Background(), problems, cfg, 11)
	require.NoError(t, err)
	n := cfg.Population
	require.Len(t, got, (cfg.Steps+1)*len(problems)*n)
	texts := map[[3]int]string{}
	correct := make([]int, cfg.Steps+1)
	for _, tt := range got {
		key := [3]int{tt.Step, tt.Problem, tt.Sample}
		_, dup := texts[key]
		require.False(t, dup, "trace %v twice", key)
		texts[key] = tt.Trace.Text
		require.Equal(t, evalText(gen.outs[tt.Step][tt.Problem*n+tt.Sample].Tokens), tt.Trace.Text, "trace %v is that request's completion", key)
		if tt.Trace.Verdict.Correct {
			correct[tt.Step]++
		}
		if tt.Step == 0 {
			require.Nil(t, tt.Candidates)
		} else {
			require.Len(t, tt.Candidates, cfg.SubsetSize)
		}
	}
	for _, tt := range got {
		if tt.Step == 0 {
			continue
		}
		cands := make([]string, len(tt.Candidates))
		for m, c := range tt.Candidates {
			cands[m] = texts[[3]int{tt.Step - 1, tt.Problem, c}]
		}
		want := "A|" + problems[tt.Problem].Problem + "|" + strings.Join(cands, evalSep)
		require.Equal(t, want, evalText(gen.calls[tt.Step][tt.Problem*n+tt.Sample].Prompt), "candidates of trace (%d, %d, %d)", tt.Step, tt.Problem, tt.Sample)
	}
	for s, step := range res.Steps {
		require.InDelta(t, step.Accuracy, float64(correct[s])/float64(len(problems)*n), 1e-12, "step %d accuracy from the traces", s)
	}

	e.Traces = func([]TracedTrace) error { return errors.New("disk full") }
	_, err = e.RSA(context.Background(), problems, cfg, 11)
	require.ErrorContains(t, err, "disk full")
}

// TestRSAStreamsDistinct: every member of a run is sampled from a stream
// of its own (no two requests of any step share a seed, so no aggregation
// step replays the search step's or another step's randomness), and the
// subsets are drawn afresh for every (step, problem): with N = 6 and
// K = 3, two (step, problem) pairs drawing the same six ordered subsets
// by chance has probability 120^-6.
func TestRSAStreamsDistinct(t *testing.T) {
	problems := rsaProblems(3)
	cfg := RSAConfig{Population: 6, SubsetSize: 3, Steps: 3}
	gen := &rsaFakeGen{}
	drawn := map[[2]int][][]int{} // (step, problem) -> the subsets of its members
	e := Evaluator{Gen: gen, Prompter: evalPrompter{}, Judge: evalJudge, Traces: func(b []TracedTrace) error {
		for _, tt := range b {
			if tt.Step > 0 {
				key := [2]int{tt.Step, tt.Problem}
				drawn[key] = append(drawn[key], tt.Candidates)
			}
		}
		return nil
	}}
	_, err := e.RSA(context.Background(), problems, cfg, 11)
	require.NoError(t, err)

	seen := map[uint64][2]int{}
	for s, call := range gen.calls {
		for r, req := range call {
			prev, dup := seen[req.Seed]
			require.False(t, dup, "step %d request %d has the seed of step %d request %d", s, r, prev[0], prev[1])
			seen[req.Seed] = [2]int{s, r}
		}
	}
	require.Len(t, seen, (cfg.Steps+1)*len(problems)*cfg.Population)

	require.Len(t, drawn, cfg.Steps*len(problems))
	keys := make([][2]int, 0, len(drawn))
	for key := range drawn {
		keys = append(keys, key)
	}
	for a, ka := range keys {
		require.Len(t, drawn[ka], cfg.Population)
		for _, kb := range keys[a+1:] {
			require.NotEqual(t, drawn[ka], drawn[kb], "(step, problem) %v and %v drew the same subsets", ka, kb)
		}
	}
}

// TestRSAResumed: RSA resumed from the state an earlier evaluation's
// StepDone saved after step 1 (its population's members kept as a file
// keeps them: generated ids, finish reasons and verdicts) generates only
// the steps after it, with the prompts and seeds of an uninterrupted
// run, and gives its result.
func TestRSAResumed(t *testing.T) {
	problems := rsaProblems(4)
	cfg := RSAConfig{Population: 6, SubsetSize: 3, Steps: 3}
	ctx := context.Background()
	whole := &rsaFakeGen{}
	var states []RSAState
	want, err := Evaluator{Gen: whole, Prompter: evalPrompter{}, Judge: evalJudge, StepDone: func(st RSAState) error {
		kept := RSAState{Steps: slices.Clone(st.Steps)}
		for _, members := range st.Population {
			var row []Trace
			for _, m := range members {
				row = append(row, Trace{Completion: Completion{Tokens: m.Tokens, Finish: m.Finish}, Verdict: m.Verdict})
			}
			kept.Population = append(kept.Population, row)
		}
		states = append(states, kept)
		return nil
	}}.RSA(ctx, problems, cfg, 21)
	require.NoError(t, err)
	require.Len(t, states, 4, "one a step")

	rest := &rsaFakeGen{}
	got, err := Evaluator{Gen: rest, Prompter: evalPrompter{}, Judge: evalJudge, ResumedRSA: &states[1]}.RSA(ctx, problems, cfg, 21)
	require.NoError(t, err)
	require.Equal(t, want.Steps, got.Steps)
	require.Equal(t, whole.calls[2:], rest.calls, "steps 2 and 3 alone, their prompts and seeds alike")

	_, err = Evaluator{Gen: rest, Prompter: evalPrompter{}, Judge: evalJudge, ResumedRSA: &states[1]}.RSA(ctx, problems[:3], cfg, 21)
	require.ErrorContains(t, err, "resumed after 2 steps with 4 problems' populations, want 1 to 4 steps of 3 problems")
}
