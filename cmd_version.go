package main

import (
	"context"
	"fmt"
	"runtime/debug"

	"github.com/spf13/pflag"

	"github.com/spiral-rl/spiral/model"
	"github.com/spiral-rl/spiral/model/tokenizer"
)

// version is spiral's version; the Makefile sets it from git describe.
var version = "dev"

func setupVersion(fs *pflag.FlagSet) func(context.Context, *cliEnv, []string) error {
	var rf runtimeFlags
	rf.register(fs)
	return func(_ context.Context, env *cliEnv, args []string) error {
		if len(args) > 0 {
			return usageError{unexpectedArgs{args: args}}
		}
		if err := rf.validate(); err != nil {
			return usageError{err}
		}
		// These two before ONNX Runtime is loaded, so that a report of a
		// runtime that does not load still has them.
		fmt.Fprintf(env.stdout, "spiral %s\n", version)
		fmt.Fprintf(env.stdout, "tokenizers %s (libtokenizers %s)\n", moduleVersion("github.com/daulet/tokenizers"), tokenizer.LibraryVersion)
		rt, err := model.OpenRuntime(rf.options(env.stderr))
		if err != nil {
			return err
		}
		fmt.Fprintf(env.stdout, "onnxruntime %s (%s, device %s)\n", rt.Version(), rt.LibraryPath(), rt.Device())
		return rt.Close()
	}
}

// moduleVersion returns the version of dependency path in this binary's
// build information, or "unknown".
func moduleVersion(path string) string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	for _, d := range bi.Deps {
		if d.Path == path {
			if d.Replace != nil {
				return d.Replace.Version
			}
			return d.Version
		}
	}
	return "unknown"
}
