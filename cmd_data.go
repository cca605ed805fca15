package main

import (
	"context"
	"errors"

	"github.com/spf13/pflag"

	"github.com/spiral-rl/spiral/data"
)

// dataFlags are the dataset flags shared by every command that reads
// problems.
type dataFlags struct {
	problemField, answerField, idField, format string
}

func (f *dataFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.problemField, "problem-field", "", "problem field name (default: detect problem, question, prompt, ...)")
	fs.StringVar(&f.answerField, "answer-field", "", "gold-answer field name (default: detect answer, final_answer, ground_truth, ..., solution)")
	fs.StringVar(&f.idField, "id-field", "", `id field name (default: detect; "-" = row numbers)`)
	fs.StringVar(&f.format, "format", "", "jsonl, json or parquet (default: from the extension)")
}

func (f *dataFlags) options() data.LoadOptions {
	return data.LoadOptions{ProblemField: f.problemField, AnswerField: f.answerField, IDField: f.idField, Format: f.format}
}

func setupData(fs *pflag.FlagSet) func(context.Context, *cliEnv, []string) error {
	var df dataFlags
	df.register(fs)
	return func(_ context.Context, env *cliEnv, args []string) error {
		if len(args) != 2 || args[0] != "inspect" {
			return usageError{errors.New("usage: spiral data inspect FILE")}
		}
		return data.Inspect(env.stdout, args[1], df.options())
	}
}
