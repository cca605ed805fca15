package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/spf13/pflag"

	"github.com/spiral-rl/spiral/rollout"
)

func setupGenerate(fs *pflag.FlagSet) func(context.Context, *cliEnv, []string) error {
	var rf runtimeFlags
	var mf modelFlags
	var sf samplingFlags
	rf.register(fs)
	mf.register(fs)
	sf.register(fs)
	n := fs.Int("n", 1, "completions per prompt")
	raw := fs.Bool("raw", false, "send the prompt as is (default: one user turn of the chat template)")
	seed := fs.Uint64("seed", 1, "random seed")
	ckpt := fs.String("checkpoint", "", "sample with the weights of this checkpoint (of a run on --model)")
	return func(ctx context.Context, env *cliEnv, args []string) error {
		if len(args) == 0 {
			return usageError{errors.New(`usage: spiral generate [flags] "PROMPT" ["PROMPT" ...]`)}
		}
		sess, err := openSession(env, &rf, &mf)
		if err != nil {
			return err
		}
		defer sess.close()
		r, rt, tok := sess.resolvedModel, sess.rt, sess.tok
		lm, cleanup, err := openEvalLM(rt, r, *ckpt, filepath.Join(filepath.Dir(r.onnx), "artifacts"))
		if err != nil {
			return err
		}
		defer cleanup()
		s, err := rollout.NewSampler(lm, sf.config(tok.StopIDs(), min(tok.VocabSize(), lm.Signature().Vocab), r.embedded), nil)
		if err != nil {
			return err
		}
		var reqs []rollout.Request
		for i, p := range args {
			ids := tok.Encode(p)
			if !*raw {
				ids = chatPrompt(tok, p)
			}
			for j := 0; j < *n; j++ {
				reqs = append(reqs, rollout.Request{Prompt: ids, Seed: rollout.DeriveSeed(*seed, 0, uint64(i), uint64(j), 0)})
			}
		}
		outs, st, err := s.Generate(ctx, reqs, nil)
		if err != nil {
			return err
		}
		for i, o := range outs {
			fmt.Fprintf(env.stdout, "=== prompt %d, sample %d (%d tokens, %s)\n%s\n", i / *n, i%*n, len(o.Tokens), o.Finish,
				strings.TrimRight(tok.DecodeSkipSpecial(o.Tokens), "\n"))
		}
		fmt.Fprintf(env.stderr, "%d tokens in %.2fs (%.0f tok/s)\n", st.GeneratedTokens, st.Elapsed.Seconds(), float64(st.GeneratedTokens)/st.Elapsed.Seconds())
		return nil
	}
}
