package report

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/spiral-rl/spiral/rollout"
)

func resumeKey() EvalKey {
	return EvalKey{Mode: ModePassAtK, Samples: 2, Model: "m", Dataset: "d", Seed: 1, Extra: map[string]string{"temperature": "1"},
		ProblemIDs: []string{"a", "b", "c"}, ProblemsDigest: "x"}
}

func resumeRecord(i int, id string) ProblemRecord {
	return ProblemRecord{Problem: i, ID: id, Tokens: rollout.Tokens{Prompt: 6, Generated: 9 + i},
		Samples: []SampleRecord{{Answer: "7", Explicit: true, Correct: true, Finish: rollout.FinishStop}, {Finish: rollout.FinishLength}}}
}

// TestSavedProblemsRoundTrip: problems appended (in two writes, as
// chunks finish) read back as written, and with the key and start time;
// a resumed file (AppendProblems) keeps them and takes more.
func TestSavedProblemsRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "passk"+ProblemsSuffix)
	started := time.Date(2026, 12, 7, 11, 0, 0, 0, time.UTC)
	w, err := CreateProblems(path, resumeKey(), started)
	require.NoError(t, err)
	require.NoError(t, w.Write([]ProblemRecord{resumeRecord(0, "a")}))
	require.NoError(t, w.Write([]ProblemRecord{resumeRecord(2, "c")}))
	require.NoError(t, w.Close())
	s, err := ReadProblems(path)
	require.NoError(t, err)
	require.Equal(t, resumeKey(), s.Key)
	require.True(t, started.Equal(s.Started))
	require.Equal(t, []ProblemRecord{resumeRecord(0, "a"), resumeRecord(2, "c")}, s.Problems)
	require.False(t, s.Cut)
	require.Equal(t, "2 of the 3 problems of an interrupted passk evaluation", s.Describe())

	w, err = AppendProblems(path, s)
	require.NoError(t, err)
	require.NoError(t, w.Write([]ProblemRecord{resumeRecord(1, "b")}))
	require.NoError(t, w.Close())
	s, err = ReadProblems(path)
	require.NoError(t, err)
	require.Equal(t, []ProblemRecord{resumeRecord(0, "a"), resumeRecord(2, "c"), resumeRecord(1, "b")}, s.Problems)

	p := resumeRecord(1, "b").Sampled()
	require.Equal(t, rollout.SampledProblem{Index: 1, Tokens: rollout.Tokens{Prompt: 6, Generated: 10}, Traces: []rollout.Trace{
		{Completion: rollout.Completion{Finish: rollout.FinishStop}, Verdict: rollout.Verdict{Answer: "7", Explicit: true, Correct: true}},
		{Completion: rollout.Completion{Finish: rollout.FinishLength}},
	}}, p)
	require.Equal(t, resumeRecord(1, "b"), RecordOf(p, "b", false))

	// A sequential evaluation's keeps each sample's generated ids.
	p.Traces[0].Tokens, p.Traces[1].Tokens = []int32{5, 6}, []int32{7}
	rec := RecordOf(p, "b", true)
	require.Equal(t, []int32{5, 6}, rec.Samples[0].Tokens)
	require.Equal(t, p, rec.Sampled())
	require.Nil(t, RecordOf(p, "b", false).Samples[0].Tokens, "pass@k's keeps none")
}

// TestSavedProblemsCutShort: a last line cut short by a kill (or
// garbled by a crash) is left out and said, and a resumed file appends
// after the intact lines, not after the cut one; a damaged line before
// the last, or records the key does not have, are refused.
func TestSavedProblemsCutShort(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "passk"+ProblemsSuffix)
	w, err := CreateProblems(path, resumeKey(), time.Time{})
	require.NoError(t, err)
	require.NoError(t, w.Write([]ProblemRecord{resumeRecord(0, "a"), resumeRecord(1, "b")}))
	require.NoError(t, w.Close())
	whole, err := os.ReadFile(path)
	require.NoError(t, err)

	for _, tc := range []struct {
		name string
		tail string // after the header and problem 0's line
		want []string
		cut  bool
		err  string
	}{
		{"cut mid-line", `{"problem":1,"id":"b","tok`, []string{"a"}, true, ""},
		{"whole line without its newline", `{"problem":1,"id":"b","tokens":{"prompt":6,"generated":10},"samples":[{"answer":"","finish":"stop"},{"answer":"","finish":"stop"}]}`, []string{"a"}, true, ""},
		{"garbled last line", "\x00\x00\x00\n", []string{"a"}, true, ""},
		{"whole", `{"problem":1,"id":"b","tokens":{"prompt":6,"generated":10},"samples":[{"answer":"","finish":"stop"},{"answer":"","finish":"stop"}]}` + "\n", []string{"a", "b"}, false, ""},
		{"damaged line before the last", "xx\n" + `{"problem":1,"id":"b","tokens":{},"samples":[{"finish":"stop"},{"finish":"stop"}]}` + "\n", nil, false, "line 3: invalid character"},
		{"another id", `{"problem":1,"id":"z","tokens":{},"samples":[{"finish":"stop"},{"finish":"stop"}]}` + "\n{}\n", nil, false, `line 3: problem 1 has id "z", want "b"`},
		{"other samples", `{"problem":1,"id":"b","tokens":{},"samples":[{"finish":"stop"}]}` + "\n{}\n", nil, false, `line 3: problem "b" has 1 samples, want 2`},
		{"twice", `{"problem":0,"id":"a","tokens":{},"samples":[{"finish":"stop"},{"finish":"stop"}]}` + "\n{}\n", nil, false, `line 3: problem "a" recorded twice`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lines := string(whole)
			// The header and problem 0's line, then the tail.
			first := len(lines)
			for n, i := 0, 0; i < len(lines); i++ {
				if lines[i] == '\n' {
					if n++; n == 2 {
						first = i + 1
						break
					}
				}
			}
			p := filepath.Join(t.TempDir(), "passk"+ProblemsSuffix)
			require.NoError(t, os.WriteFile(p, []byte(lines[:first]+tc.tail), 0o644))
			s, err := ReadProblems(p)
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			var ids []string
			for _, r := range s.Problems {
				ids = append(ids, r.ID)
			}
			require.Equal(t, tc.want, ids)
			require.Equal(t, tc.cut, s.Cut)
			w, err := AppendProblems(p, s)
			require.NoError(t, err)
			require.NoError(t, w.Write([]ProblemRecord{resumeRecord(2, "c")}))
			require.NoError(t, w.Close())
			again, err := ReadProblems(p)
			require.NoError(t, err)
			require.False(t, again.Cut, "the cut line is gone, the new one whole")
			require.Equal(t, append(s.Problems, resumeRecord(2, "c")), again.Problems)
		})
	}
	require.NoError(t, os.WriteFile(path, nil, 0o644))
	_, err = ReadProblems(path)
	require.ErrorContains(t, err, "empty")
	require.NoError(t, os.WriteFile(path, []byte(`{"key":{"mode":"passk","samples":2}`), 0o644))
	_, err = ReadProblems(path)
	require.ErrorContains(t, err, "line 1: unexpected EOF")
}

func TestEvalKeyDiff(t *testing.T) {
	now := resumeKey()
	require.Empty(t, resumeKey().Diff(now))
	was := resumeKey()
	was.Seed, was.Samples = 2, 4
	was.Extra = map[string]string{"temperature": "0.6", "search_template": "t.txt"}
	was.ProblemIDs = []string{"a", "b"}
	require.Equal(t, []string{"samples 4, not 2", "seed 2, not 1", "search_template t.txt, not none", "temperature 0.6, not 1",
		"2 problems of other ids or order, not these 3"}, was.Diff(now))
	was = resumeKey()
	was.ProblemsDigest = "y"
	require.Equal(t, []string{"problems of other texts or answers (problems_digest)"}, was.Diff(now))
	// A checkpoint of the same name retrained, or a model of the same
	// name elsewhere: the report's name alone would resume it.
	was, now = resumeKey(), resumeKey()
	was.CheckpointDigest, now.CheckpointDigest = "crc32c:1/8", "crc32c:2/8"
	was.ModelDigest, now.ModelDigest = "m1", "m2"
	require.Equal(t, []string{"checkpoint (checkpoint_digest) crc32c:1/8, not crc32c:2/8", "model id m1, not m2"}, was.Diff(now))
	require.Equal(t, "crc32c:2/8", KeyOf(ModePassAtK, Meta{CheckpointDigest: "crc32c:2/8", ModelDigest: "m2"}, 4).CheckpointDigest)
	// Another tokenizer: the prompts' ids, and the ids saved, are
	// other text. A file of a version before the key recorded one is
	// not refused by it.
	was, now = resumeKey(), resumeKey()
	was.Tokenizer, now.Tokenizer = "t1", "t2"
	require.Equal(t, []string{"tokenizer (--tokenizer) t1, not t2"}, was.Diff(now))
	was.Tokenizer = ""
	require.Empty(t, was.Diff(now))
	// An RSA configuration's flags, each named alone: the one that
	// differs is not to be found in both configurations written out.
	rsa := func(c rollout.RSAConfig) EvalKey {
		k := resumeKey()
		k.Mode, k.Samples, k.RSA = ModeRSA, c.Population, &c
		return k
	}
	cfg := rollout.RSAConfig{Population: 2, SubsetSize: 2, Steps: 3, PromptLimit: 4032}
	more := cfg
	more.Steps = 4
	require.Equal(t, []string{"--rsa-steps 3, not 4"}, rsa(cfg).Diff(rsa(more)))
	other := cfg
	other.Population, other.CandidateTokens, other.PromptLimit = 4, 100, 3072
	require.Equal(t, []string{"--population 2, not 4", "--candidate-tokens 0, not 100",
		"aggregation prompts of up to 4032 tokens (the model's context less --max-new-tokens), not 3072"}, rsa(cfg).Diff(rsa(other)))
	require.Equal(t, []string{"mode rsa, not passk", "rsa --population 2 --subset 2 --rsa-steps 3, not none"}, rsa(cfg).Diff(resumeKey()))
}

// TestEvalKeyNumericsDiff: the local engine's flags that change only the
// last bits of the logits (--gen-batch, --threads...) are recorded in the
// key but are no difference of Diff's, which would refuse the resume;
// NumericsDiff names those that differ, each flag alone, and none that
// either key does not record (a file of a version before them, or a
// serving engine's evaluation).
func TestEvalKeyNumericsDiff(t *testing.T) {
	numerics := func(m map[string]string) EvalKey {
		k := resumeKey()
		k.Numerics = m
		return k
	}
	local := map[string]string{"--gen-batch": "64", "--threads": "0", "--device": "cpu"}
	for _, tc := range []struct {
		name     string
		was, now map[string]string
		want     []string
	}{
		{"the same", local, local, nil},
		{"two others", local, map[string]string{"--gen-batch": "32", "--threads": "0", "--device": "cuda"}, []string{"--device cpu, not cuda", "--gen-batch 64, not 32"}},
		{"none recorded then", nil, local, nil},
		{"none recorded now", local, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			was, now := numerics(tc.was), numerics(tc.now)
			require.Equal(t, tc.want, was.NumericsDiff(now))
			require.Empty(t, was.Diff(now), "resumed")
		})
	}
}

// TestRekeyProblems: a saved evaluation resumed by one of more problems
// (a larger --limit) is rewritten under the larger key with its intact
// problems, a last line cut short left out, and takes the new ones,
// which the old key would refuse (a problem index past its ids).
func TestRekeyProblems(t *testing.T) {
	path := filepath.Join(t.TempDir(), "passk"+ProblemsSuffix)
	small := resumeKey()
	small.ProblemIDs = small.ProblemIDs[:2]
	started := time.Date(2026, 12, 7, 11, 0, 0, 0, time.UTC)
	w, err := CreateProblems(path, small, started)
	require.NoError(t, err)
	require.NoError(t, w.Write([]ProblemRecord{resumeRecord(1, "b"), resumeRecord(0, "a")}))
	require.NoError(t, w.Close())
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, b[:len(b)-5], 0o644))
	s, err := ReadProblems(path)
	require.NoError(t, err)
	require.True(t, s.Cut)

	w, err = RekeyProblems(path, s, resumeKey())
	require.NoError(t, err)
	require.NoError(t, w.Write([]ProblemRecord{resumeRecord(2, "c")}))
	require.NoError(t, w.Close())
	s, err = ReadProblems(path)
	require.NoError(t, err)
	require.Equal(t, resumeKey(), s.Key)
	require.True(t, started.Equal(s.Started))
	require.False(t, s.Cut)
	require.Equal(t, []ProblemRecord{resumeRecord(1, "b"), resumeRecord(2, "c")}, s.Problems)
}

// TestSavedRSA: an RSA evaluation's state after a step reads back as
// written, its members as rollout.Evaluator.ResumedRSA takes them; one
// of steps out of order, or of another population than its key's, is
// refused, naming the file.
func TestSavedRSA(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rsa"+StepsSuffix)
	key := resumeKey()
	key.Mode, key.RSA = ModeRSA, &rollout.RSAConfig{Population: 2, SubsetSize: 2, Steps: 3}
	member := func(id int32, ok bool) rollout.Trace {
		return rollout.Trace{Completion: rollout.Completion{Tokens: []int32{id, id + 1}, Finish: rollout.FinishStop}, Verdict: rollout.Verdict{Answer: "7", Correct: ok}}
	}
	st := rollout.RSAState{
		Steps:      []rollout.RSAStep{{Step: 0, Population: 2, Accuracy: 0.5}, {Step: 1, Population: 2, Accuracy: 0.75}},
		Population: [][]rollout.Trace{{member(1, true), member(3, false)}, {member(5, true), member(7, true)}, {member(9, false), member(11, true)}},
	}
	started := time.Date(2026, 12, 7, 11, 0, 0, 0, time.UTC)
	require.NoError(t, SaveRSA(path, RSAOf(key, started, st, []byte(`{"cut":1}`))))
	s, err := ReadRSA(path)
	require.NoError(t, err)
	require.Equal(t, key, s.Key)
	require.True(t, started.Equal(s.Started))
	require.JSONEq(t, `{"cut":1}`, string(s.Counts))
	require.Equal(t, &st, s.State())
	require.Equal(t, "2 of the 4 steps of an interrupted rsa evaluation", s.Describe())

	bad := *RSAOf(key, started, st, nil)
	bad.Steps = []rollout.RSAStep{{Step: 1}}
	require.NoError(t, SaveRSA(path, &bad))
	_, err = ReadRSA(path)
	require.ErrorContains(t, err, path+": step 1 in step 0's place")
	bad = *RSAOf(key, started, st, nil)
	bad.Population[1] = bad.Population[1][:1]
	require.NoError(t, SaveRSA(path, &bad))
	_, err = ReadRSA(path)
	require.ErrorContains(t, err, path+`: problem "b" has 1 members, want 2`)
}

// TestReadSavedOfANewerSpiral: a saved evaluation whose key, or whose
// records, hold a field this version does not know (a newer spiral's,
// such as a key recording more than this one's) failed as any file that
// does not read ("json: unknown field"), which reads as a damaged file.
// It is a *NewerError, which names the field, so that eval says whose
// file it is; a line cut short is still left out, not such an error.
func TestReadSavedOfANewerSpiral(t *testing.T) {
	dir := t.TempDir()
	// A problems file whose key (line 1) or whose first record (line 2)
	// records a field this version does not know.
	problems := filepath.Join(dir, "passk"+ProblemsSuffix)
	w, err := CreateProblems(problems, resumeKey(), time.Now())
	require.NoError(t, err)
	require.NoError(t, w.Write([]ProblemRecord{resumeRecord(0, "a"), resumeRecord(1, "b")}))
	require.NoError(t, w.Close())
	written, err := os.ReadFile(problems)
	require.NoError(t, err)
	for _, tc := range []struct {
		name, old, new, want string
	}{
		{"the key", `"mode":`, `"min_p":"0.05","mode":`, `line 1: json: unknown field "min_p"`},
		{"a record", `{"problem":0,`, `{"problem":0,"logprob":-1.5,`, `line 2: json: unknown field "logprob"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.NoError(t, os.WriteFile(problems, bytes.Replace(written, []byte(tc.old), []byte(tc.new), 1), 0o644))
			_, err := ReadProblems(problems)
			var newer *NewerError
			require.True(t, errors.As(err, &newer), "%v", err)
			require.ErrorContains(t, err, problems+": "+tc.want)
		})
	}
	// A line cut short is not a newer spiral's.
	require.NoError(t, os.WriteFile(problems, written[:len(written)-5], 0o644))
	s, err := ReadProblems(problems)
	require.NoError(t, err)
	require.True(t, s.Cut)
	// Another type is a damaged file, not a newer spiral's.
	require.NoError(t, os.WriteFile(problems, bytes.Replace(written, []byte(`"seed":1`), []byte(`"seed":"one"`), 1), 0o644))
	_, err = ReadProblems(problems)
	var newer *NewerError
	require.Error(t, err)
	require.False(t, errors.As(err, &newer), "%v", err)

	steps := filepath.Join(dir, "rsa"+StepsSuffix)
	key := resumeKey()
	key.Mode, key.RSA = ModeRSA, &rollout.RSAConfig{Population: 2, SubsetSize: 2, Steps: 3}
	st := rollout.RSAState{Steps: []rollout.RSAStep{{Step: 0, Population: 2}}, Population: make([][]rollout.Trace, 3)}
	for i := range st.Population {
		st.Population[i] = make([]rollout.Trace, 2)
	}
	require.NoError(t, SaveRSA(steps, RSAOf(key, time.Now(), st, nil)))
	b, err := os.ReadFile(steps)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(steps, bytes.Replace(b, []byte(`"subset_size":`), []byte(`"min_p":"0.05","subset_size":`), 1), 0o644))
	_, err = ReadRSA(steps)
	require.True(t, errors.As(err, &newer), "%v", err)
	require.ErrorContains(t, err, steps+": json: unknown field \"min_p\"")
}
