package main

import (
	"context"

	"github.com/spf13/pflag"
)

// The commands below are registered with their flags so that --help
// documents them, but their implementations have not landed yet: running
// them says so and exits non-zero.

func setupEval(fs *pflag.FlagSet) func(context.Context, *cliEnv, []string) error {
	var rf runtimeFlags
	rf.register(fs)
	fs.String("model", "", "ONNX causal LM (default: the embedded tiny model)")
	fs.String("mode", "passk", "scaffold: sequential, passk, majority, rsa")
	return func(context.Context, *cliEnv, []string) error {
		return notBuilt("the evaluation scaffolds (rollout/) have not landed")
	}
}

func setupGenerate(fs *pflag.FlagSet) func(context.Context, *cliEnv, []string) error {
	var rf runtimeFlags
	rf.register(fs)
	fs.String("model", "", "ONNX causal LM (default: the embedded tiny model)")
	return func(context.Context, *cliEnv, []string) error {
		return notBuilt("the sampler (rollout/) has not landed")
	}
}

func setupExport(fs *pflag.FlagSet) func(context.Context, *cliEnv, []string) error {
	fs.String("checkpoint", "", "checkpoint directory")
	fs.String("out", "", "output .onnx path")
	return func(context.Context, *cliEnv, []string) error {
		return notBuilt("checkpoints have not landed")
	}
}
