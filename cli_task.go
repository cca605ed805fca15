package main

import (
	"fmt"
	"io"

	"github.com/spiral-rl/spiral/data"
	"github.com/spiral-rl/spiral/data/synth"
	"github.com/spiral-rl/spiral/rollout"
)

// Sizes of the embedded task's problem sets.
const (
	embeddedTrainProblems = 2000
	embeddedEvalProblems  = 128
)

// templateSet is the prompt templates of a command.
type templateSet struct {
	*data.Templates
}

// loadTemplates returns the templates the flags name; a template not
// named is the embedded task's compact one when compact (the model or the
// problems are the embedded task's: the embedded model has read no other
// prompt, and its tokenizer knows only the task's characters), else the
// default (RSA-style) one.
func loadTemplates(compact bool, f templateFlags) (templateSet, error) {
	if compact {
		t, err := synth.Templates().Override(f.search, f.aggregate)
		return templateSet{t}, err
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
