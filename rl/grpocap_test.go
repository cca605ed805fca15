package rl

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/spiral-rl/spiral/model/checkpoint"
	"github.com/spiral-rl/spiral/rollout"
	"github.com/spiral-rl/spiral/rollout/report"
	"github.com/stretchr/testify/require"
)

// TestGRPOFinalRSACandidateCap: GRPO's final RSA caps its aggregation
// prompts' candidates at --candidate-tokens, so a GRPO run with a final
// RSA records what the cap counts (candidate_cap) as SPIRAL's does, and
// a rerun with another cap is a settings difference, not a final RSA of
// another setting (or rsa.json kept from the old one) without a word.
// Where no final RSA reads it, GRPO ignores --candidate-tokens (train
// warns), and a rerun's other cap is no difference.
func TestGRPOFinalRSACandidateCap(t *testing.T) {
	rsa := rollout.RSAConfig{Population: 2, SubsetSize: 2, Steps: 1}
	grpo := func(cap int, recorded string) RunSettings {
		s := RunSettings{RL: DefaultConfig(), CandidateCap: recorded}
		s.RL.Algo = AlgoGRPO
		s.RL.Pipeline.CandidateTokens = cap
		return s
	}
	t.Run("recorded", func(t *testing.T) {
		for _, tc := range []struct {
			name  string
			algo  string
			cap   int
			final rollout.RSAConfig
			want  string
		}{
			{"GRPO, final RSA, capped", AlgoGRPO, 4, rsa, report.CandidateCapText},
			{"GRPO, final RSA, no cap", AlgoGRPO, 0, rsa, ""},
			{"GRPO, no final RSA", AlgoGRPO, 4, rollout.RSAConfig{}, ""},
			{"SPIRAL, no final RSA", AlgoSpiral, 4, rollout.RSAConfig{}, report.CandidateCapText},
		} {
			t.Run(tc.name, func(t *testing.T) {
				h := newRunHarness(t, t.TempDir(), 1)
				h.parts.Settings.RL.Algo = tc.algo
				h.parts.Settings.RL.Pipeline.CandidateTokens = tc.cap
				h.cfg.FinalRSA = tc.final
				require.Equal(t, tc.want, recordedSettings(h.cfg, h.parts).CandidateCap)
			})
		}
		// Without held-out problems no final RSA runs.
		h := newRunHarness(t, t.TempDir(), 1)
		h.parts.Settings.RL.Algo = AlgoGRPO
		h.parts.Settings.RL.Pipeline.CandidateTokens = 4
		h.cfg.FinalRSA, h.parts.Held = rsa, nil
		require.Empty(t, recordedSettings(h.cfg, h.parts).CandidateCap)
	})
	t.Run("compared", func(t *testing.T) {
		text := report.CandidateCapText
		for _, tc := range []struct {
			name string
			a, b RunSettings // the run's, now's
			want []string
		}{
			{"another cap", grpo(4, text), grpo(8, text), []string{"rl.pipeline.candidate_tokens (--candidate-tokens): 4 -> 8"}},
			{"cap dropped", grpo(4, text), grpo(0, ""), []string{"rl.pipeline.candidate_tokens (--candidate-tokens): 4 -> 0"}},
			{"cap added", grpo(0, ""), grpo(4, text), []string{"rl.pipeline.candidate_tokens (--candidate-tokens): 0 -> 4"}},
			// A checkpoint of a version that recorded no candidate_cap
			// for GRPO: its cap is compared all the same.
			{"older checkpoint, another cap", grpo(4, ""), grpo(8, text), []string{"rl.pipeline.candidate_tokens (--candidate-tokens): 4 -> 8"}},
			{"older checkpoint, same cap", grpo(4, ""), grpo(4, text), nil},
			{"same cap", grpo(4, text), grpo(4, text), nil},
			// No final RSA now: --candidate-tokens is ignored.
			{"no final RSA now", grpo(4, text), grpo(8, ""), nil},
			{"no final RSA either", grpo(4, ""), grpo(8, ""), nil},
		} {
			t.Run(tc.name, func(t *testing.T) {
				require.Equal(t, tc.want, settingsDiff(tc.a, tc.b))
			})
		}
	})
	t.Run("resumed", func(t *testing.T) {
		dir := t.TempDir()
		run := func(steps, cap int) *runHarness {
			h := newRunHarness(t, dir, steps)
			h.cfg.EvalEvery, h.cfg.FinalRSA = 0, rsa
			h.parts.Settings.RL.Algo = AlgoGRPO // as recorded: the harness trains SPIRAL's pipeline
			h.parts.Settings.RL.Pipeline.CandidateTokens = cap
			return h
		}
		require.NoError(t, run(1, 4).run(context.Background()))
		path := filepath.Join(dir, CheckpointsDir, checkpoint.DirName(1))
		s, err := CheckpointSettings(path)
		require.NoError(t, err)
		require.Equal(t, report.CandidateCapText, s.CandidateCap)
		h := run(2, 8)
		require.ErrorContains(t, CheckRunSettings(h.cfg, h.parts), "rl.pipeline.candidate_tokens (--candidate-tokens): 4 -> 8")
		require.ErrorContains(t, h.run(context.Background()), "rl.pipeline.candidate_tokens (--candidate-tokens): 4 -> 8")

		// The checkpoint as a version that recorded no candidate_cap for
		// GRPO saved it: it resumes with its cap, and no note says that
		// its steps capped candidates otherwise (GRPO's steps cap none).
		st, err := checkpoint.ReadState(path)
		require.NoError(t, err)
		var config map[string]any
		require.NoError(t, json.Unmarshal(st.Config, &config))
		delete(config, "candidate_cap")
		old, err := json.Marshal(config)
		require.NoError(t, err)
		h = run(2, 4)
		_, err = checkpoint.Save(filepath.Join(dir, CheckpointsDir), h.parts.Weights, h.parts.Optimizer, checkpoint.State{Step: 1, DataCursor: st.DataCursor, Config: old}, checkpoint.Options{})
		require.NoError(t, err)
		require.NoError(t, h.run(context.Background()))
		require.NotContains(t, h.log.String(), "capped aggregation candidates")
	})
}
