package main

import (
	"github.com/spiral-rl/spiral/data"
	"github.com/spiral-rl/spiral/data/synth"
)

// The embedded task: the synthetic arithmetic problems the embedded tiny
// model is warm-started on (sft) and trained on (train), with a held-out
// test split (eval). Its difficulty is sized to the tiny model: 2-3
// operands of 1-9 keep the SFT model well above zero accuracy and well
// below the ceiling. The task seed fixes the train/test split and is the
// same in every command, whatever --seed says, so no command ever trains
// on the test split.
var embeddedTaskConfig = synth.Config{MinOperands: 2, MaxOperands: 3, MinOperand: 1, MaxOperand: 9}

const embeddedTaskSeed = 1

// embeddedTask returns the embedded task.
func embeddedTask() (*synth.Task, error) { return synth.New(embeddedTaskConfig, embeddedTaskSeed) }

// promptTemplates returns the prompt templates of a run: the files given
// by --search-template / --aggregate-template if any, else the embedded
// task's compact templates when the problems are the embedded task's, else
// the default (RSA-style) templates.
func promptTemplates(onEmbeddedTask bool, searchPath, aggregatePath string) (*data.Templates, error) {
	if onEmbeddedTask && searchPath == "" && aggregatePath == "" {
		return synth.Templates(), nil
	}
	return data.LoadTemplates(searchPath, aggregatePath)
}
