package main

import (
	"github.com/spf13/pflag"

	"github.com/spiral-rl/spiral/model"
)

// runtimeFlags are the ONNX Runtime flags every model-running command takes.
type runtimeFlags struct {
	ortLib        string
	device        string
	threads       int
	deterministic bool
}

func (f *runtimeFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.ortLib, "ort-lib", "", "ONNX Runtime shared library (default: $"+model.LibEnvVar+", then the location "+model.SetupCommand+" installs to)")
	fs.StringVar(&f.device, "device", "cpu", "execution device: cpu, cuda, cuda:N, or auto (CUDA if it loads, else CPU with a warning)")
	fs.IntVar(&f.threads, "threads", 0, "intra-op threads per ONNX Runtime session (0 = one per physical core)")
	fs.BoolVar(&f.deterministic, "deterministic", false, "bit-reproducible runs: one thread and ONNX Runtime's deterministic kernels (slower)")
}

// open loads ONNX Runtime as the flags say; the caller closes it.
func (f *runtimeFlags) open(env *cliEnv) (*model.Runtime, error) {
	return model.OpenRuntime(model.RuntimeOptions{
		LibPath:       f.ortLib,
		Device:        f.device,
		Threads:       f.threads,
		Deterministic: f.deterministic,
		Warn:          env.stderr,
	})
}
