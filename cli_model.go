package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/pflag"

	"github.com/spiral-rl/spiral/model"
	"github.com/spiral-rl/spiral/model/embedded"
	"github.com/spiral-rl/spiral/model/tokenizer"
)

// modelFlags locate a model and its tokenizer.
type modelFlags struct {
	model, tokenizer string
}

func (f *modelFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.model, "model", "", "ONNX causal LM: a .onnx file or a directory with model.onnx (default: the embedded tiny model)")
	fs.StringVar(&f.tokenizer, "tokenizer", "", "tokenizer.json (default: beside the model)")
}

// resolvedModel is where a model's files are.
type resolvedModel struct {
	onnx, tokenizer string
	embedded        bool
}

// resolve finds the model file and tokenizer, extracting the embedded
// default into the cache when no model is given.
func (f *modelFlags) resolve() (resolvedModel, error) {
	var r resolvedModel
	path := f.model
	if path == "" {
		cache, err := model.CacheDir()
		if err != nil {
			return r, err
		}
		if err := os.MkdirAll(cache, 0o755); err != nil {
			return r, err
		}
		dir, err := embedded.Extract(cache)
		if err != nil {
			return r, err
		}
		path, r.embedded = dir, true
	}
	st, err := os.Stat(path)
	if err != nil {
		return r, fmt.Errorf("model: %w", err)
	}
	if st.IsDir() {
		path = filepath.Join(path, "model.onnx")
	}
	r.onnx = path
	r.tokenizer = f.tokenizer
	if r.tokenizer == "" {
		r.tokenizer = filepath.Join(filepath.Dir(path), "tokenizer.json")
	}
	if _, err := os.Stat(r.tokenizer); err != nil {
		return r, fmt.Errorf("no tokenizer: %s does not exist (pass --tokenizer)", r.tokenizer)
	}
	return r, nil
}

func (r resolvedModel) loadTokenizer() (*tokenizer.Tokenizer, error) {
	return tokenizer.Load(r.tokenizer)
}

// modelSession is what a model-running command opens first: the resolved
// model files, the ONNX Runtime environment and the tokenizer.
type modelSession struct {
	resolvedModel
	rt  *model.Runtime
	tok *tokenizer.Tokenizer
}

// openSession resolves the model, opens ONNX Runtime and loads the
// tokenizer; the caller defers close.
func openSession(env *cliEnv, rf *runtimeFlags, mf *modelFlags) (*modelSession, error) {
	r, err := mf.resolve()
	if err != nil {
		return nil, err
	}
	rt, err := rf.open(env)
	if err != nil {
		return nil, err
	}
	tok, err := r.loadTokenizer()
	if err != nil {
		return nil, errors.Join(err, rt.Close())
	}
	return &modelSession{resolvedModel: r, rt: rt, tok: tok}, nil
}

// close releases the tokenizer and the runtime.
func (s *modelSession) close() {
	s.tok.Close()
	s.rt.Close()
}
