package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/pflag"

	"github.com/spiral-rl/spiral/model"
	"github.com/spiral-rl/spiral/model/checkpoint"
)

func setupExport(fs *pflag.FlagSet) func(context.Context, *cliEnv, []string) error {
	var mf modelFlags
	mf.register(fs)
	ckpt := fs.String("checkpoint", "", "checkpoint directory (e.g. runs/spiral/checkpoints/ckpt-000050), or a run's checkpoints/ directory for its newest")
	out := fs.String("out", "", "output: a .onnx path (onnx) or a directory (hf); required, its directory is created")
	format := fs.String("format", "onnx", "onnx (the trained weights in the source graph) or hf (a Hugging Face model directory: model.safetensors with transformers' names, config.json, tokenizer files)")
	external := fs.Bool("external-data", false, "onnx: always write weights to a side file (out + _data); automatic above 2 GiB or when the source has one")
	return func(_ context.Context, env *cliEnv, args []string) error {
		if len(args) > 0 || *ckpt == "" || *out == "" {
			return usageError{errors.New("usage: spiral export --checkpoint DIR --out PATH [--format onnx|hf] [--model SOURCE]")}
		}
		if *format != "onnx" && *format != "hf" {
			return usageError{fmt.Errorf("--format %q: want onnx or hf", *format)}
		}
		r, err := mf.resolve()
		if err != nil {
			return err
		}
		path, err := findCheckpoint(*ckpt, r.onnx)
		if err != nil {
			return err
		}
		w, err := checkpoint.NewStoreFor(path)
		if err != nil {
			return err
		}
		if _, err := checkpoint.Load(path, w, nil); err != nil {
			return fmt.Errorf("load checkpoint %s: %w", path, err)
		}
		if *format == "hf" {
			n, err := model.ExportHF(r.onnx, r.tokenizer, *out, w)
			if err != nil {
				return err
			}
			fmt.Fprintf(env.stdout, "wrote %s: a Hugging Face model directory from %s with the weights of %s (%d tensors)\n", *out, r.onnx, path, n)
			return nil
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
