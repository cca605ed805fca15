package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/pflag"

	"github.com/spiral-rl/spiral/model"
	"github.com/spiral-rl/spiral/model/checkpoint"
	"github.com/spiral-rl/spiral/model/params"
)

func setupExport(fs *pflag.FlagSet) func(context.Context, *cliEnv, []string) error {
	var mf modelFlags
	mf.register(fs)
	ckpt := fs.String("checkpoint", "", "checkpoint directory (e.g. runs/spiral/checkpoints/ckpt-000050), or a run's checkpoints/ directory for its latest")
	out := fs.String("out", "", "output .onnx path (required)")
	external := fs.Bool("external-data", false, "always write weights to a side file (out + _data); automatic above 2 GiB")
	return func(_ context.Context, env *cliEnv, args []string) error {
		if len(args) > 0 || *ckpt == "" || *out == "" {
			return usageError{errors.New("usage: spiral export --checkpoint DIR --out model.onnx [--model SOURCE]")}
		}
		r, err := mf.resolve()
		if err != nil {
			return err
		}
		path := *ckpt
		if latest, err := checkpoint.Latest(path); err == nil {
			path = latest
		}
		w, err := checkpointStore(path)
		if err != nil {
			return err
		}
		if _, err := checkpoint.Load(path, w, nil); err != nil {
			return fmt.Errorf("load checkpoint %s: %w", path, err)
		}
		ties, err := model.Ties(r.onnx)
		if err != nil {
			return err
		}
		if err := model.Export(r.onnx, ties, *out, *external, w); err != nil {
			return err
		}
		fmt.Fprintf(env.stdout, "wrote %s: %s with the weights of %s (%d tensors, %d parameters)\n", *out, r.onnx, path, w.Len(), w.NumParams())
		return nil
	}
}

// checkpointStore allocates a store shaped like the weights file of the
// checkpoint at path (names, shapes and order from its header).
func checkpointStore(path string) (*params.Store, error) {
	f, err := os.Open(filepath.Join(path, checkpoint.ModelFile))
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	h, err := params.ReadHeader(f, st.Size())
	if err != nil {
		return nil, fmt.Errorf("checkpoint %s: %w", f.Name(), err)
	}
	specs := make([]params.Spec, len(h.Tensors))
	for i, t := range h.Tensors {
		specs[i] = params.Spec{Name: t.Name, Shape: t.Shape}
	}
	return params.NewStore(specs)
}

// loadCheckpointWeights loads a checkpoint's weights into pol's store. path
// may be a checkpoint directory or a checkpoints/ directory (its latest).
func loadCheckpointWeights(path string, pol *model.Policy) (string, error) {
	if latest, err := checkpoint.Latest(path); err == nil {
		path = latest
	}
	if _, err := checkpoint.Load(path, pol.Weights, nil); err != nil {
		return "", fmt.Errorf("load checkpoint %s: %w", path, err)
	}
	return path, nil
}
