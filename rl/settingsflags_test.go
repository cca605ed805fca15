package rl

import (
	"encoding/json"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// fillAll sets every exported field under v (a struct, through pointers
// and slices) to a value other than its zero, so that every setting a
// checkpoint can record is in its JSON form.
func fillAll(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fillAll(v.Elem())
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fillAll(v.Field(i))
			}
		}
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		fillAll(v.Index(0))
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int64:
		v.SetInt(7)
	case reflect.Uint64:
		v.SetUint(7)
	case reflect.Float64:
		v.SetFloat(0.5)
	case reflect.String:
		v.SetString("x")
	}
}

// changedAt returns s (a settings struct) with the setting at the
// flattened path key (flatDiff's) changed, decoded into a new T.
func changedAt[T any](t *testing.T, s T, key string) T {
	raw, err := json.Marshal(s)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(raw, &m))
	parts := strings.Split(key, ".")
	at := m
	for _, p := range parts[:len(parts)-1] {
		at = at[p].(map[string]any)
	}
	last := parts[len(parts)-1]
	switch v := at[last].(type) {
	case float64:
		at[last] = v + 1
	case bool:
		at[last] = !v
	case string:
		at[last] = v + "y"
	case []any:
		at[last] = append(v, v[0])
	default:
		t.Fatalf("%s: %T", key, v)
	}
	raw, err = json.Marshal(m)
	require.NoError(t, err)
	var out T
	require.NoError(t, json.Unmarshal(raw, &out))
	return out
}

// flatKeys lists the flattened paths (flatDiff's) of s's JSON form.
func flatKeys(s any) []string {
	var keys []string
	for _, d := range flatDiff(s, struct{}{}, func(k string, _, _ map[string]string) string { return k }) {
		keys = append(keys, d[:strings.Index(d, ":")])
	}
	return keys
}

// TestSettingsDiffNamesFlags: every setting a train checkpoint records
// is named, in the refusal of a resume whose settings differ, with the
// flag that sets it ("rl.pipeline.n1 (--n1): 8 -> 12"), where it named
// only the field (rl.problems, schedule.peak_lr, rl.pipeline.n1...). The
// table holds every setting recorded: a new one without a row fails.
func TestSettingsDiffNamesFlags(t *testing.T) {
	var s RunSettings
	fillAll(reflect.ValueOf(&s).Elem())
	s.RL.Algo = AlgoSpiral
	// train's schedule is constant: it records the peak and the warmup.
	s.Schedule.Decay, s.Schedule.TotalSteps, s.Schedule.MinLR = "", 0, 0
	s.Sampling = SamplingSettings(0.5, 0.5, 7, 7, "x", TemplatePrints{Both: "x", Search: "x", Aggregate: "x"})
	s.TokenizerBytes = "bytes" // another hash than the content's (fillAll's "x")
	want := map[string]string{
		"rl.algo":                       "rl.algo (--algo)",
		"rl.pipeline.n1":                "rl.pipeline.n1 (--n1)",
		"rl.pipeline.k":                 "rl.pipeline.k (--k)",
		"rl.pipeline.n":                 "rl.pipeline.n (--n)",
		"rl.pipeline.n2":                "rl.pipeline.n2 (--n2)",
		"rl.pipeline.candidate_tokens":  "rl.pipeline.candidate_tokens (--candidate-tokens)",
		"rl.pipeline.rounds":            "rl.pipeline.rounds (--agg-rounds)",
		"rl.pipeline.prompt_limit":      "rl.pipeline.prompt_limit (the model's context less --max-new-tokens)",
		"rl.group":                      "rl.group (--group)",
		"rl.problems":                   "rl.problems (--problems)",
		"rl.draw_rounds":                "rl.draw_rounds (--draw-rounds)",
		"rl.clip_low":                   "rl.clip_low (--clip-low)",
		"rl.clip_high":                  "rl.clip_high (--clip-high)",
		"rl.max_grad_norm":              "rl.max_grad_norm (--max-grad-norm)",
		"rl.micro_batch_tokens":         "rl.micro_batch_tokens (--micro-batch-tokens)",
		"rl.separate_rows":              "rl.separate_rows (--pack-prompts=false)",
		"rl.advantage.ScaleSearch":      "rl.advantage.ScaleSearch (--scale-search-adv)",
		"rl.advantage.ScaleAggregation": "rl.advantage.ScaleAggregation (--scale-agg-adv)",
		"rl.advantage.AggregationOnly":  "rl.advantage.AggregationOnly (--algo)",
		"rl.advantage.SearchOnly":       "rl.advantage.SearchOnly (--algo)",
		"rl.advantage.SearchOwnReward":  "rl.advantage.SearchOwnReward (--search-own-reward)",
		"rl.reward.fallback":            "rl.reward.fallback (--reward-fallback)",
		"rl.reward.truncated":           "rl.reward.truncated (--reward-truncated)",
		"rl.seed":                       "rl.seed (--seed)",
		"schedule.peak_lr":              "schedule.peak_lr (--lr)",
		"schedule.warmup_steps":         "schedule.warmup_steps (--warmup)",
		"sampling.temperature":          "sampling.temperature (--temperature)",
		"sampling.top_p":                "sampling.top_p (--top-p)",
		"sampling.top_k":                "sampling.top_k (--top-k)",
		"sampling.max_new_tokens":       "sampling.max_new_tokens (--max-new-tokens)",
		"sampling.selection":            "sampling.selection (--train, --freeze)",
		"sampling.templates":            "sampling.templates (--search-template, --aggregate-template)",
		"sampling.search_template":      "sampling.search_template (--search-template)",
		"sampling.aggregate_template":   "sampling.aggregate_template (--aggregate-template)",
		"lora.rank":                     "lora.rank (--lora-rank)",
		"lora.alpha":                    "lora.alpha (--lora-alpha)",
		"lora.targets":                  "lora.targets (--lora-targets)",
		"held_out.data":                 "held_out.data (--eval-data)",
		"held_out.problems":             "held_out.problems (--eval-problems)",
		"held_out.digest":               "held_out.digest (the problems of --eval-data and --eval-problems)",
		"held_out.samples":              "held_out.samples (--eval-samples)",
		"candidate_cap":                 "candidate_cap (what --candidate-tokens counts)",
		"tokenizer":                     "tokenizer (--tokenizer)",
	}
	// The model, its data set and where the draws stand are checked
	// apart (CheckRunIdentity) or placed by the resume: no settings; nor
	// are the absolute paths of the data files, which say whether a data
	// set named otherwise (from another directory) is the same file.
	// Nor is the fingerprint of tokenizer.json's bytes, recorded beside
	// its content's for runs older versions recorded (sameTokenizer):
	// the same tokenizer saved again has other bytes, no difference.
	require.Empty(t, settingsDiff(s, changedAt(t, s, "tokenizer_bytes")))
	recorded := slices.DeleteFunc(flatKeys(s), func(k string) bool {
		return k == "model" || k == "model_id" || k == "data" || k == "data_path" || k == "data_id" || k == heldOutPathKey || strings.HasPrefix(k, drawStreamsPrefix) || k == "tokenizer_bytes"
	})
	require.ElementsMatch(t, slices.Collect(maps.Keys(want)), recorded, "a recorded setting without a row here")
	for key, label := range want {
		t.Run(key, func(t *testing.T) {
			a := s
			if key == "rl.group" {
				a.RL.Algo = AlgoGRPO // the others do not read it
			}
			if key == templatesKey {
				// Compared where a side records no template's own
				// fingerprint (a checkpoint of an older version).
				a.Sampling = maps.Clone(a.Sampling)
				delete(a.Sampling, searchTemplateField)
				delete(a.Sampling, aggregateTemplateField)
			}
			b := changedAt(t, a, key)
			n := 1
			if key == heldOutDataKey {
				// Another file, not the same one named otherwise, of other
				// problems: one of the same problems is the run's.
				b.HeldOut.Path += "y"
				b.HeldOut.Digest += "y"
				n = 2 // and held_out.digest, after it
			}
			d := settingsDiff(a, b)
			require.Len(t, d, n)
			require.Equal(t, label, d[0][:strings.Index(d[0], ": ")])
		})
	}
	var n1 RunSettings
	n1.RL = DefaultConfig()
	more := n1
	more.RL.Pipeline.N1 = 12
	require.Equal(t, []string{"rl.pipeline.n1 (--n1): 8 -> 12"}, settingsDiff(n1, more))
}

// TestSFTSettingsDiffNamesFlags: every setting an sft checkpoint records
// is named with its flag, as train's are (TestSettingsDiffNamesFlags);
// sft named the schedule's alone ("sft.batch: 2 -> 3").
func TestSFTSettingsDiffNamesFlags(t *testing.T) {
	var s SFTSettings
	fillAll(reflect.ValueOf(&s).Elem())
	// sft's schedule is always a cosine: no flag, and never a difference.
	s.Schedule.Decay = ""
	s.Schedule.TotalSteps = 100 // not --warmup + 1
	s.TokenizerBytes = "bytes"  // another hash than the content's
	want := map[string]string{
		"lora.rank":                    "lora.rank (--lora-rank)",
		"lora.alpha":                   "lora.alpha (--lora-alpha)",
		"lora.targets":                 "lora.targets (--lora-targets)",
		"selection":                    "selection (--train, --freeze)",
		"schedule.peak_lr":             "schedule.peak_lr (--lr)",
		"schedule.warmup_steps":        "schedule.warmup_steps (--warmup)",
		"schedule.total_steps":         "schedule.total_steps (--steps)",
		"schedule.min_lr":              "schedule.min_lr (--lr / 10)",
		"sft.batch":                    "sft.batch (--batch)",
		"sft.mix.candidates":           "sft.mix.candidates (--candidates)",
		"sft.mix.aggregate_share":      "sft.mix.aggregate_share (--aggregate-share)",
		"sft.mix.aggregate_read_share": "sft.mix.aggregate_read_share (--aggregate-read-share)",
		"sft.micro_batch_tokens":       "sft.micro_batch_tokens (--micro-batch-tokens)",
		"sft.max_grad_norm":            "sft.max_grad_norm (--max-grad-norm)",
		"sft.eval_problems":            "sft.eval_problems (--eval-problems)",
		"sft.seed":                     "sft.seed (--seed)",
		"tokenizer":                    "tokenizer (--tokenizer)",
		"reply_head":                   "reply_head (--tokenizer's chat template)",
	}
	// The bytes' fingerprint of the tokenizer is none either (as train's).
	require.Empty(t, sftSettingsDiff(s, changedAt(t, s, "tokenizer_bytes")))
	recorded := slices.DeleteFunc(flatKeys(s), func(k string) bool { return k == "model" || k == "model_id" || k == "tokenizer_bytes" })
	require.ElementsMatch(t, slices.Collect(maps.Keys(want)), recorded, "a recorded setting without a row here")
	for key, label := range want {
		t.Run(key, func(t *testing.T) {
			d := sftSettingsDiff(s, changedAt(t, s, key))
			require.Len(t, d, 1)
			require.Equal(t, label, d[0][:strings.Index(d[0], ": ")])
		})
	}
}
