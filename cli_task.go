package main

import (
	"fmt"
	"io"

	"github.com/spiral-rl/spiral/data"
	"github.com/spiral-rl/spiral/data/synth"
	"github.com/spiral-rl/spiral/rollout"
)

// The embedded task: the synthetic equations the embedded tiny model is
// warm-started on (sft) and trained on (train), with a held-out test split
// (eval). It is the solve form ("Solve x*7+3=38.", see data/synth), where
// a trace derives x, then checks it, so that reading several candidates
// (whose derivations slip independently) can beat each of them and a
// vote. Its difficulty is sized to the tiny model: 2-3 operands of 1-9.
// The task seed fixes the train/test split and is the same in every
// command, whatever --seed says, so no command ever trains on the test
// split.
var embeddedTaskConfig = synth.Config{Form: synth.FormSolve, MinOperands: 2, MaxOperands: 3, MinOperand: 1, MaxOperand: 9}

const embeddedTaskSeed = 1

// Sizes of the embedded task's problem sets.
const (
	embeddedTrainProblems = 2000
	embeddedEvalProblems  = 128
)

// embeddedTask returns the embedded task.
func embeddedTask() (*synth.Task, error) { return synth.New(embeddedTaskConfig, embeddedTaskSeed) }

// embeddedSplit returns n problems of a split of the embedded task.
func embeddedSplit(s synth.Split, n int) (*data.Dataset, error) {
	task, err := embeddedTask()
	if err != nil {
		return nil, err
	}
	return task.Dataset(s, n, embeddedTaskSeed)
}

// templateSet is the prompt templates of a command.
type templateSet struct {
	*data.Templates
}

// loadTemplates returns the templates the flags name, else the embedded
// task's compact templates when the problems are the embedded task's,
// else the default (RSA-style) templates.
func loadTemplates(onEmbeddedTask bool, f templateFlags) (templateSet, error) {
	if onEmbeddedTask && f.search == "" && f.aggregate == "" {
		return templateSet{synth.Templates()}, nil
	}
	t, err := data.LoadTemplates(f.search, f.aggregate)
	return templateSet{t}, err
}

// loadProblems loads a problem file and reports the rows it skipped on
// warn, one line each (the first maxReported of them, then a count).
func loadProblems(path string, opt data.LoadOptions, warn io.Writer) (*data.Dataset, error) {
	ds, err := data.Load(path, opt)
	if err != nil {
		return nil, err
	}
	reportSkipped(warn, ds.Skipped())
	return ds, nil
}

const maxReported = 10

func reportSkipped(warn io.Writer, rows []data.SkippedRow) {
	for i, s := range rows {
		if i == maxReported {
			fmt.Fprintf(warn, "spiral: warning: %d more rows skipped\n", len(rows)-maxReported)
			return
		}
		fmt.Fprintf(warn, "spiral: warning: skipped %s: %s\n", s.Source, s.Reason)
	}
}

// fitContext drops the problems whose search prompt cannot be completed
// within the model's context (c.ContextLength, when known): the prompt
// plus c.MaxNewTokens must fit. Each dropped problem is reported on warn
// with its source row. (Aggregation prompts that would not fit get their
// candidates cut further; see rollout.PipelineConfig.PromptLimit.)
func fitContext(s *modelSession, tmpl templateSet, problems []data.Problem, c rollout.SamplerConfig, warn io.Writer) ([]data.Problem, error) {
	if c.ContextLength == 0 {
		return problems, nil
	}
	pr := s.prompter(tmpl)
	var kept []data.Problem
	var skipped []data.SkippedRow
	for _, p := range problems {
		prompt, err := pr.SearchPrompt(p.Problem)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p.Source, err)
		}
		if need := len(prompt) + c.MaxNewTokens; need > c.ContextLength {
			skipped = append(skipped, data.SkippedRow{Source: p.Source,
				Reason: fmt.Sprintf("search prompt of %d tokens + %d new tokens need %d positions; the model has %d (--max-new-tokens)", len(prompt), c.MaxNewTokens, need, c.ContextLength)})
			continue
		}
		kept = append(kept, p)
	}
	reportSkipped(warn, skipped)
	return kept, nil
}
