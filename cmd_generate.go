package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/spf13/pflag"

	"github.com/spiral-rl/spiral/model"
	"github.com/spiral-rl/spiral/model/tokenizer"
	"github.com/spiral-rl/spiral/rollout"
)

func setupGenerate(fs *pflag.FlagSet) func(context.Context, *cliEnv, []string) error {
	var f generateFlags
	f.register(fs)
	return func(ctx context.Context, env *cliEnv, args []string) error {
		if len(args) == 0 {
			return usageError{errors.New(`usage: spiral generate [flags] "PROMPT" ["PROMPT" ...]`)}
		}
		if err := f.validate(); err != nil {
			return usageError{err}
		}
		if err := checkRequests(len(args), "prompts", f.n, "--n"); err != nil {
			return err
		}
		return runGenerate(ctx, env, &f, args)
	}
}

// generatedLine is one completion as generate --jsonl prints it.
type generatedLine struct {
	Prompt int    `json:"prompt"`
	Sample int    `json:"sample"`
	Text   string `json:"text"`
	// TokenIDs are the completion's tokens (its stop token included).
	TokenIDs []int32              `json:"token_ids"`
	Finish   rollout.FinishReason `json:"finish"`
	// LogProbs are the model's log-probabilities of TokenIDs (the local
	// engine), EngineLogProbs a serving engine's where it returned them.
	LogProbs       []float32 `json:"logprobs,omitempty"`
	EngineLogProbs []float32 `json:"engine_logprobs,omitempty"`
}

// runGenerate samples --n completions of each prompt through the model's
// sampling graph (last-position logits only, whatever the export), or on
// a serving engine (--engine openai), which gets the prompts rendered and
// tokenized here, as eval and train send them.
func runGenerate(ctx context.Context, env *cliEnv, f *generateFlags, prompts []string) error {
	// Before ONNX Runtime is looked for, as a missing --model is (a
	// serving engine's --checkpoint is refused by validate).
	if f.ckpt != "" && f.engine.engine == "local" {
		if err := checkCheckpointFlag(f.ckpt); err != nil {
			return err
		}
	}
	sess, err := openSessionOn(env, &f.rf, &f.mf, f.engine.engine)
	if err != nil {
		return err
	}
	defer sess.close()
	// The prompts are read first: an empty one is a usage error, said
	// before the engine is waited for or the model opened.
	pr := sess.prompter(templateSet{})
	unk, hasUnk := sess.tok.TokenID(tokenizer.UnknownToken)
	ids := make([][]int32, len(prompts))
	for i, p := range prompts {
		// As train and eval warn of problems the tokenizer cannot read
		// (warnUnreadable); a byte-level BPE has no unknown token.
		if at := sess.tok.IndexLost(p); at >= 0 {
			// The native library fails the text that holds it, the
			// whole prompt but for a NUL before it (--raw): no token
			// for it, or for the rest of the prompt too.
			r, _ := utf8.DecodeRuneInString(p[at:])
			return fmt.Errorf("prompt %d: the tokenizer %s has no id for %q (byte %d) and no unknown token to give (%s): it encodes the text that holds it to no token", i, sess.tokenizer, r, at, lostWhy)
		}
		if n := countID(sess.tok.Encode(p), unk); hasUnk && n > 0 {
			fmt.Fprintf(env.stderr, "spiral: warning: prompt %d has %s the model's tokenizer does not know (%s), which the model cannot read\n", i, rollout.Plural(n, "character"), tokenizer.UnknownToken)
		}
		if f.raw {
			ids[i] = sess.tok.Encode(p)
		} else {
			ids[i] = pr.UserTurn(p)
		}
		switch {
		case len(ids[i]) > 0:
		case f.raw && p == "":
			return usageError{fmt.Errorf("prompt %d is empty: with --raw the text is fed as it is, and an empty one has no token to continue", i)}
		default:
			// A text, or a chat turn, that gives no token though no
			// character of the prompt is lost (IndexLost): white space
			// the tokenizer drops, or the chat template's own text lost.
			// The tokenizer's doing.
			return fmt.Errorf("prompt %d: the tokenizer %s encodes it to no token, which leaves nothing to continue", i, sess.tokenizer)
		}
	}
	cfg, served, _, err := sess.engineSamplerConfig(ctx, f.engine, "", f.sf, false, env.stderr)
	if err != nil {
		return err
	}
	sess.noteGenerationSampling(f.sf, cfg, env.stderr)
	positions := "config.json max_position_embeddings"
	if served > 0 {
		positions = "as the serving engine serves it, its max_model_len or context_length, less one on SGLang"
	}
	if cfg.Temperature == 0 && f.n > 1 { // as eval notes of its samples
		fmt.Fprintf(env.stderr, "spiral: note: --temperature 0 samples greedily: the %d completions of a prompt are all the same\n", f.n)
	}
	for i, p := range ids {
		if n := cfg.ContextLength; n > 0 && len(p) >= n {
			return usageError{fmt.Errorf("prompt %d is %d tokens: the model's %d positions (%s) leave none to generate", i, len(p), n, positions)}
		}
		if n := cfg.ContextLength; n > 0 && len(p)+cfg.MaxNewTokens > n {
			fmt.Fprintf(env.stderr, "spiral: warning: prompt %d is %d tokens: with --max-new-tokens %d it passes the model's %d positions, so its completions stop at %d new tokens\n",
				i, len(p), cfg.MaxNewTokens, n, n-len(p))
		}
	}
	var pol *model.Policy
	if f.engine.engine == "local" {
		if pol, _, err = openSamplingPolicy(ctx, sess, f.ckpt, "", env.stderr); err != nil {
			return err
		}
		defer pol.Close()
	}
	gen, err := sess.generator(f.engine, pol, cfg, env.stderr)
	if err != nil {
		return err
	}
	traces, st, err := rollout.Complete(ctx, gen, pr, ids, f.n, func(i, j int) rollout.Stream {
		return rollout.Stream{Seed: f.seed, Problem: uint64(i), Sample: uint64(j), Phase: rollout.PhaseGenerate}
	}, nil)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(env.stdout)
	for i, ts := range traces {
		for j, t := range ts {
			if !f.jsonl {
				fmt.Fprintf(env.stdout, "=== prompt %d, sample %d (%d tokens, %s)\n%s\n", i, j, len(t.Tokens), t.Finish, strings.TrimRight(t.Text, "\n"))
				continue
			}
			if err := enc.Encode(generatedLine{Prompt: i, Sample: j, Text: t.Text, TokenIDs: t.Tokens, Finish: t.Finish,
				LogProbs: t.PolicyLogProbs, EngineLogProbs: t.EngineLogProbs}); err != nil {
				return fmt.Errorf("write completion %d of prompt %d: %w", j, i, err)
			}
		}
	}
	fmt.Fprintf(env.stderr, "%d tokens in %.2fs (%.0f tok/s)\n", st.GeneratedTokens, st.Elapsed.Seconds(), float64(st.GeneratedTokens)/st.Elapsed.Seconds())
	return nil
}
