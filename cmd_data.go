package main

import (
	"context"
	"errors"

	"github.com/spf13/pflag"

	"github.com/spiral-rl/spiral/data"
)

func setupData(fs *pflag.FlagSet) func(context.Context, *cliEnv, []string) error {
	var df dataFlags
	df.register(fs)
	return func(_ context.Context, env *cliEnv, args []string) error {
		if len(args) != 2 || args[0] != "inspect" {
			return usageError{errors.New("usage: spiral data inspect FILE")}
		}
		if err := df.opt.Validate(); err != nil {
			return usageError{err}
		}
		return data.Inspect(env.stdout, args[1], df.opt)
	}
}
