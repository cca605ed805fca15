package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spiral-rl/spiral/model"
	"github.com/spiral-rl/spiral/model/checkpoint"
	"github.com/spiral-rl/spiral/model/embedded"
	"github.com/spiral-rl/spiral/model/lmgraph"
	"github.com/spiral-rl/spiral/model/onnx"
	"github.com/spiral-rl/spiral/model/optim"
	"github.com/spiral-rl/spiral/model/params"
	"github.com/spiral-rl/spiral/model/tokenizer"
	"github.com/spiral-rl/spiral/rl"
	"github.com/spiral-rl/spiral/rollout"
)

// resolvedModel is where a model's files are.
type resolvedModel struct {
	// onnx is the ONNX model; "" when a command that runs no model here
	// was given a directory without one (resolveForEngine).
	onnx string
	// dir holds the model's config.json (and its tokenizer.json, unless
	// --tokenizer names another).
	dir            string
	tokenizer      string
	embedded       bool
	tokenizerGiven bool // tokenizer is --tokenizer's, not the one beside the model
	// prints takes tokenizer's fingerprints, each once (setTokenizer
	// makes it): the copies of r that a command passes along share it.
	prints *tokenizerPrints
}

// name is how runs and reports name the model.
func (r resolvedModel) name() string {
	if r.embedded {
		return "embedded"
	}
	return r.path()
}

// reportName names the model in a report, as eval's reports and train's
// final RSA report both do: "embedded", or its path as reportModelName
// gives it.
func (r resolvedModel) reportName() string {
	if r.embedded {
		return r.name()
	}
	return reportModelName(r.path())
}

// given names the model in an error as the command was given it:
// "--model PATH", or "the embedded model" where no --model was given (its
// file in the cache is no path the user gave).
func (r resolvedModel) given() string {
	if r.embedded {
		return "the embedded model"
	}
	return "--model " + r.path()
}

// path is the model's file, or its directory when it has none here.
func (r resolvedModel) path() string {
	if r.onnx == "" {
		return r.dir
	}
	return r.onnx
}

// hfConfig reads the model's config.json (zero values when there is none).
func (r resolvedModel) hfConfig() (model.HFConfig, error) {
	// ReadHFConfig reads the config.json beside the file it is given.
	hf, _, err := model.ReadHFConfig(filepath.Join(r.dir, model.ConfigFile))
	return hf, err
}

// noContextWarning is the warning for a model whose config.json states
// no max_position_embeddings (neither at its top level nor in
// text_config: model.ReadHFConfig), or that has no config.json (a bare
// model.onnx export), naming the file, where its context is then taken
// as unknown and what unchecked says goes unchecked against it; "" where
// the file states one (the embedded model's does).
func (r resolvedModel) noContextWarning(unchecked string) (string, error) {
	path := filepath.Join(r.dir, model.ConfigFile)
	hf, found, err := model.ReadHFConfig(path)
	if err != nil || hf.MaxPositionEmbeddings > 0 {
		return "", err
	}
	if !found {
		return fmt.Sprintf("there is no %s (the model's config.json, which would state its max_position_embeddings): the model's context is not known, so %s", path, unchecked), nil
	}
	return fmt.Sprintf("%s states no max_position_embeddings (neither at its top level nor in text_config): the model's context is not known, so %s", path, unchecked), nil
}

// resolve finds the model file (extracting the embedded default into the
// cache when no model is given) and where its tokenizer should be; the
// tokenizer is checked only by loadTokenizer, so commands that do not
// need one (artifacts, export) never ask for it. An external data file
// of the model with bytes past its tensors is warned of on warn
// (warnDataFiles).
func (f *modelFlags) resolve(warn io.Writer) (resolvedModel, error) {
	var r resolvedModel
	path := f.model
	if path == "" {
		cache, err := model.CacheDir()
		if err != nil {
			return r, err
		}
		dir, err := embedded.Extract(cache)
		if err != nil {
			return r, err
		}
		path, r.embedded = dir, true
	}
	st, err := statFlag("--model", path)
	if err != nil {
		return r, err
	}
	if st.IsDir() {
		dir := path
		path = filepath.Join(dir, "model.onnx")
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			return r, noONNXError(dir)
		}
	}
	if err := onnx.Probe(path); err != nil {
		return r, fmt.Errorf("--model: %w", err)
	}
	if err := warnDataFiles(path, warn); err != nil {
		return r, err
	}
	r.onnx, r.dir = path, filepath.Dir(path)
	r.setTokenizer(f.tokenizer)
	return r, nil
}

// noONNXError is the error for a --model directory without model.onnx:
// one holding what an hf or peft export writes (spiral's or another
// tool's) is named as such, with what to give instead, since "the
// directory of an export" would read as that directory, and so is a
// run's (runPathError); those are usage errors (exit 2), the path of
// what another flag or tool takes, as each given as --checkpoint is.
func noONNXError(dir string) error {
	has := func(name string) bool {
		_, err := os.Stat(filepath.Join(dir, name))
		return err == nil
	}
	// A checkpoint holds model.safetensors too, in spiral's layout: it is
	// named first.
	if err := runPathError(dir); err != nil {
		return err
	}
	for _, name := range hfWeightsFiles {
		if has(name) {
			return usageError{fmt.Errorf("--model: directory %s holds a Hugging Face model (%s) and no model.onnx: spiral runs ONNX models; give the ONNX model it was exported from (with --checkpoint for a run's weights) or an ONNX export (spiral export --format onnx, optimum-cli export onnx)", dir, name)}
		}
	}
	if has(model.PEFTConfigFile) {
		return usageError{fmt.Errorf("--model: directory %s holds a peft adapter (%s) and no model.onnx: give the ONNX base model as --model and the LoRA run as --checkpoint, or a merged export (spiral export --format onnx)", dir, model.PEFTConfigFile)}
	}
	return fmt.Errorf("--model: directory %s holds no model.onnx (give the .onnx file, or the directory of an export)", dir)
}

// runPathError is the error for a --model directory that is a training
// run's, its checkpoints/ or a checkpoint: the path of another flag,
// --checkpoint, a usage error (exit 2) as --checkpoint given a model
// directory is; nil for another directory.
func runPathError(dir string) error {
	p, ok := runPathOf(dir)
	if !ok {
		return nil
	}
	return usageError{fmt.Errorf("--model: directory %s %s, not a model: give %s as --model, and this directory as --checkpoint%s (eval, generate, export; spiral export makes a model of it for the other commands)", dir, p.what, p.model, p.which)}
}

// planRunPathError is runPathError for spiral plan, which has no
// --checkpoint: a run's checkpoints have the shapes of the model it
// trained, whose config.json plan reads.
func planRunPathError(dir string) error {
	p, ok := runPathOf(dir)
	if !ok {
		return nil
	}
	return usageError{fmt.Errorf("--model: directory %s %s, not a model: give %s as --model (plan reads the config.json beside it)", dir, p.what, p.model)}
}

// runPath is what runPathOf finds a directory to be.
type runPath struct {
	// what the directory is ("is a checkpoint") and the model to give
	// instead ("the ONNX model its run trained"); which, of a run or its
	// checkpoints/, says that --checkpoint reads its newest intact
	// checkpoint (" for its newest intact one"), not the directory.
	what, model, which string
}

// runPathOf says what dir is when it is a training run's, its
// checkpoints/ or a checkpoint; false for another directory.
func runPathOf(dir string) (runPath, bool) {
	switch {
	case checkpoint.IsCheckpointDir(dir):
		return runPath{"is a checkpoint", "the ONNX model its run trained", ""}, true
	case isDir(filepath.Join(dir, rl.CheckpointsDir)):
		return runPath{"is a training run's (it holds " + rl.CheckpointsDir + "/)", "the ONNX model it trained", " for its newest intact checkpoint"}, true
	case checkpoint.HoldsCheckpoints(dir):
		return runPath{"holds a training run's checkpoints", "the ONNX model it trained", " for its newest intact one"}, true
	}
	return runPath{}, false
}

// warnDataFiles writes a warning to warn for each external data file of
// the model at path that runs on past its last tensor by more than
// alignment explains (onnx.DataFile.Trailing): the data file of another,
// larger model beside the graph, whose tensors would otherwise be read
// without a word as long as every one of them fits.
func warnDataFiles(path string, warn io.Writer) error {
	m, err := onnx.LoadGraph(path)
	if err != nil {
		return fmt.Errorf("--model: %w", err)
	}
	files, err := m.DataFiles()
	if err != nil {
		return fmt.Errorf("--model: %w", err)
	}
	for _, f := range files {
		if n := f.Trailing(); n > 0 {
			fmt.Fprintf(warn, "spiral: warning: %s: its tensors use %d bytes of external data file %s, ending at byte %d, but the file has %d: the %d bytes after them are not this model's (is it the data file of another, larger model?)\n",
				path, f.Used, f.Path, f.End, f.Size, n)
		}
	}
	return nil
}

// resolveForEngine is resolve for a command whose model runs on a
// serving engine (eval --engine openai): what it reads here is the
// tokenizer and config.json (the context length, the vocabulary size),
// so --model may also be a directory holding those two and no
// model.onnx, which is then not looked at.
func (f *modelFlags) resolveForEngine(warn io.Writer) (resolvedModel, error) {
	if f.model != "" {
		st, err := statFlag("--model", f.model)
		if err != nil {
			// A graph not copied where the model's tokenizer was
			// (README's --model qwen3-4b/model.onnx): its directory is
			// what an engine reads.
			if dir := filepath.Dir(f.model); errors.Is(err, fs.ErrNotExist) && isRegular(filepath.Join(dir, tokenizer.TokenizerFile)) {
				return resolvedModel{}, usageError{fmt.Errorf("%w (on a serving engine --model is read for its tokenizer and config.json alone: give their directory, --model %s)", err, dir)}
			}
			return resolvedModel{}, err
		}
		if st.IsDir() {
			r := resolvedModel{dir: f.model}
			r.setTokenizer(f.tokenizer)
			if _, err := os.Stat(r.tokenizer); !r.tokenizerGiven && errors.Is(err, fs.ErrNotExist) {
				return r, fmt.Errorf("--model: directory %s holds no tokenizer.json, which a serving engine's prompts are tokenized with (give a directory with the model's tokenizer.json and config.json, or --tokenizer)", f.model)
			}
			return r, nil
		}
	}
	return f.resolve(warn)
}

// setTokenizer sets the tokenizer to given (--tokenizer), the
// tokenizer.json in it where it is a directory holding one (as
// tokenizer.Load takes it: the exports and sft copy the files beside the
// tokenizer.json), or when it is "" to the tokenizer.json of the model's
// directory.
func (r *resolvedModel) setTokenizer(given string) {
	r.tokenizer, r.tokenizerGiven = given, given != ""
	if r.tokenizer == "" {
		r.tokenizer = filepath.Join(r.dir, tokenizer.TokenizerFile)
	} else if file := filepath.Join(given, tokenizer.TokenizerFile); isRegular(file) {
		r.tokenizer = file
	}
	r.prints = &tokenizerPrints{of: tokenizerPrint}
}

// tokenizerID fingerprints r's tokenizer (tokenizer.Fingerprint: its
// tokenizer.json's content and what the chat template beside it adds to
// the prompts), which train and sft record among their run settings
// (rl.RunSettings.Tokenizer, rl.SFTSettings.Tokenizer) and eval in what
// it saves to resume (report.EvalKey.Tokenizer), so that a rerun with
// another --tokenizer, or one whose chat template prompts otherwise, is
// noticed rather than resumed on ids that mean other text. It is taken
// once, however often a command asks (r.prints).
func (r resolvedModel) tokenizerID() (string, error) {
	return r.prints.take(r.tokenizer, false)
}

// tokenizerBytesID is the fingerprint that versions before tokenizerID
// read the file's content recorded of r's tokenizer
// (tokenizer.ByteFingerprint), with which a run of theirs still resumes
// and a checkpoint of theirs is of the tokenizer given; taken once, as
// tokenizerID is.
func (r resolvedModel) tokenizerBytesID() (string, error) {
	return r.prints.take(r.tokenizer, true)
}

// tokenizerPrints holds a tokenizer's fingerprints once taken: each
// reads and hashes the whole tokenizer.json, the content's parsing and
// writing it again (2.0 to 2.7 s for Qwen3's 11 MB, the bytes' 0.07 s,
// measured on 2 busy cores), which a command asks for more than once
// (eval --checkpoint: for its resume key and for the checkpoint's
// tokenizer).
type tokenizerPrints struct {
	// of takes the fingerprint of the tokenizer at path, of its bytes
	// where bytes (tokenizerPrint); a test counts its calls.
	of          func(path string, bytes bool) (string, error)
	id, bytesID string // "" until taken
}

// take returns the fingerprint of the tokenizer at path (of its bytes
// where bytes), taking it the first time. An error is returned, not
// kept: the command stops on it.
func (p *tokenizerPrints) take(path string, bytes bool) (string, error) {
	held := &p.id
	if bytes {
		held = &p.bytesID
	}
	if *held == "" {
		id, err := p.of(path, bytes)
		if err != nil {
			return "", err
		}
		*held = id
	}
	return *held, nil
}

// tokenizerPrint is tokenizerPrints' of: tokenizer.Fingerprint, or
// tokenizer.ByteFingerprint where bytes.
func tokenizerPrint(path string, bytes bool) (string, error) {
	if bytes {
		return tokenizer.ByteFingerprint(path)
	}
	return tokenizer.Fingerprint(path)
}

// isRegular reports whether path is a regular file (following links).
func isRegular(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.Mode().IsRegular()
}

func (r resolvedModel) loadTokenizer() (*tokenizer.Tokenizer, error) {
	if r.tokenizerGiven {
		st, err := statFlag("--tokenizer", r.tokenizer)
		if err != nil {
			return nil, err
		}
		// setTokenizer took the tokenizer.json of a directory holding
		// one; one that holds none is said to, as a --model directory
		// without model.onnx is (noONNXError).
		if _, err := os.Lstat(filepath.Join(r.tokenizer, tokenizer.TokenizerFile)); st.IsDir() && errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("--tokenizer: directory %s holds no %s (give the %s file, or the directory of a model or export that holds one)", r.tokenizer, tokenizer.TokenizerFile, tokenizer.TokenizerFile)
		}
	} else if st, err := os.Stat(r.tokenizer); errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("no tokenizer: %s does not exist (pass --tokenizer)", r.tokenizer)
	} else if err != nil {
		// There, but not to be read (permission denied, a symbolic
		// link loop): not missing.
		return nil, fmt.Errorf("tokenizer: %w", err)
	} else if st.IsDir() {
		// tokenizer.Load would look for a tokenizer.json inside it.
		return nil, fmt.Errorf("tokenizer: %s is a directory: want the model's %s file (or pass --tokenizer)", r.tokenizer, tokenizer.TokenizerFile)
	}
	tok, err := tokenizer.Load(r.tokenizer)
	if err != nil && r.tokenizerGiven {
		return nil, fmt.Errorf("--tokenizer: %w", err)
	}
	return tok, err
}

// loadPromptTokenizer is loadTokenizer for a command that renders
// prompts with it: a chat template whose prompts spiral renders otherwise
// (tokenizer.Tokenizer.TemplateWarning) is warned of on warn.
func (r resolvedModel) loadPromptTokenizer(warn io.Writer) (*tokenizer.Tokenizer, error) {
	tok, err := r.loadTokenizer()
	if err != nil {
		return nil, err
	}
	if w := tok.TemplateWarning(); w != "" {
		fmt.Fprintf(warn, "spiral: warning: %s\n", w)
	}
	return tok, nil
}

// modelSession is what a model-running command opens first: the resolved
// model files, the ONNX Runtime environment (nil for a command whose
// model runs on a serving engine) and the tokenizer.
type modelSession struct {
	resolvedModel
	rt  *model.Runtime
	tok *tokenizer.Tokenizer
	// warn is told of a wait for the artifacts' lock.
	warn io.Writer
}

// openSession resolves the model, opens ONNX Runtime and loads the
// tokenizer; the caller defers close.
func openSession(env *cliEnv, rf *runtimeFlags, mf *modelFlags) (*modelSession, error) {
	r, err := mf.resolve(env.stderr)
	if err != nil {
		return nil, err
	}
	return openResolved(env, rf, r)
}

// openSessionOn is openSession for a command that generates on engine
// (engineFlags.engine) and runs no model of its own: on a serving engine
// ("openai") --model gives the tokenizer and config.json only, so a
// directory holding those two is enough (resolveForEngine), and ONNX
// Runtime is not loaded (the session's rt is nil), so that a machine
// without it can drive an engine.
func openSessionOn(env *cliEnv, rf *runtimeFlags, mf *modelFlags, engine string) (*modelSession, error) {
	if engine != "openai" {
		return openSession(env, rf, mf)
	}
	r, err := mf.resolveForEngine(env.stderr)
	if err != nil {
		return nil, err
	}
	tok, err := r.loadPromptTokenizer(env.stderr)
	if err != nil {
		return nil, err
	}
	return &modelSession{resolvedModel: r, tok: tok, warn: env.stderr}, nil
}

// openResolved is openSession on a model already resolved.
func openResolved(env *cliEnv, rf *runtimeFlags, r resolvedModel) (*modelSession, error) {
	tok, err := r.loadPromptTokenizer(env.stderr)
	if err != nil {
		return nil, err
	}
	rt, err := model.OpenRuntime(rf.options(env.stderr))
	if err != nil {
		tok.Close()
		return nil, err
	}
	return &modelSession{resolvedModel: r, rt: rt, tok: tok, warn: env.stderr}, nil
}

// close releases the tokenizer and the runtime, where one was opened.
func (s *modelSession) close() {
	s.tok.Close()
	if s.rt != nil {
		s.rt.Close()
	}
}

// checkVocab refuses a tokenizer with more ids than the model has
// embedding rows (logits), which would fail at the first forward.
func (s *modelSession) checkVocab(lm *model.LM) error {
	return checkVocab(s.tok, s.resolvedModel, lm.Signature().Vocab)
}

// vocabError gives a training policy's refusal of the tokenizer's ids
// as its vocabulary (model.VocabLimitError: more ids than the model's
// logits) checkVocab's words; other errors pass unchanged.
func (s *modelSession) vocabError(err error) error {
	var ve *model.VocabLimitError
	if errors.As(err, &ve) {
		return checkVocab(s.tok, s.resolvedModel, ve.Logits)
	}
	return err
}

// checkVocab refuses tok, r's tokenizer, when it has more ids than r's
// model has embedding rows (vocab, its logits).
func checkVocab(tok *tokenizer.Tokenizer, r resolvedModel, vocab int) error {
	if n := tok.VocabSize(); n > vocab {
		return fmt.Errorf("tokenizer %s has %d ids but model %s has %d embedding rows (logits); they do not belong together", r.tokenizer, n, r.onnx, vocab)
	}
	return nil
}

// checkExportTokenizer refuses the tokenizer an export (onnx or hf)
// copies beside it when it does not load or has more ids than the
// model's embedding rows, and the generation_config.json beside the
// model that it copies too when its eos_token_id does not read as ids
// of that tokenizer (model.ReadGenerationEOS: malformed, cut short,
// another model's), before the export writes anything: eval and
// generate would refuse the exported model with them. Without --tokenizer
// and without a tokenizer.json beside the model there is nothing to
// copy, nothing is checked and it returns nil; else it returns the
// tokenizer's Hugging Face files (tokenizer.HFConfigFiles) for an export
// of a model that has none, and, when its tokenizer_config.json has no
// chat template (spiral prompts it with ChatML), spiral's as
// chat_template.jinja, which transformers reads in the config's place.
func (r resolvedModel) checkExportTokenizer() (map[string][]byte, error) {
	if _, err := os.Stat(r.tokenizer); !r.tokenizerGiven && errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	tok, err := r.loadTokenizer()
	if err != nil {
		return nil, err
	}
	defer tok.Close()
	m, err := onnx.LoadGraph(r.onnx)
	if err != nil {
		return nil, fmt.Errorf("--model: %w", err)
	}
	sig, err := model.ReadSignature(m.Graph(), r.onnx)
	if err != nil {
		return nil, err
	}
	if err := checkVocab(tok, r, sig.Vocab); err != nil {
		return nil, err
	}
	if _, _, err := model.ReadGenerationEOS(r.onnx, tok); err != nil {
		return nil, err
	}
	files, err := tok.HFConfigFiles()
	if err != nil {
		return nil, err
	}
	config := filepath.Join(filepath.Dir(r.tokenizer), tokenizer.ConfigFile)
	if _, err := os.Stat(config); err == nil && tok.ChatTemplate() == "" {
		files[tokenizer.TemplateFile] = []byte(tokenizer.ChatMLTemplate)
	}
	return files, nil
}

// prompter returns the chat prompter of the session's tokenizer.
func (s *modelSession) prompter(tmpl templateSet) rollout.ChatPrompter {
	return rollout.ChatPrompter{Tok: s.tok, Templates: tmpl.Templates}
}

// samplerConfig completes the sampling flags for this model: the trace
// length when --max-new-tokens is 0 (the embedded task's when the model is
// the embedded one or, onEmbeddedTask, the problems are that task's: a
// model warm-started on it by spiral sft writes traces as short), the
// context length (config.json's
// max_position_embeddings, when stated, or served, when > 0: the
// context a serving engine serves the model with, checkEngine), the stop ids (stopIDs, warning on warn) and the vocabulary
// limit (the tokenizer's ids: a model with fewer embedding rows is refused
// by checkVocab). It needs no open model, so that a --max-new-tokens that
// leaves no room is refused before the model's graphs are built.
func (s *modelSession) samplerConfig(f samplingFlags, onEmbeddedTask bool, served int, warn io.Writer) (rollout.SamplerConfig, error) {
	c := f.cfg
	c.CallBytes = int64(f.callMiB) << 20
	hf, err := s.hfConfig()
	if err != nil {
		return c, err
	}
	c.ContextLength = hf.MaxPositionEmbeddings
	positions := fmt.Sprintf("of %s (config.json max_position_embeddings)", s.path())
	if served > 0 {
		c.ContextLength, positions = served, "the serving engine serves the model with (its max_model_len or context_length, less one on SGLang)"
	}
	if c.MaxNewTokens == 0 {
		c.MaxNewTokens = traceLength(s.embedded || onEmbeddedTask, c.ContextLength)
	}
	if c.ContextLength > 0 && c.MaxNewTokens >= c.ContextLength {
		return c, usageError{fmt.Errorf("--max-new-tokens %d leaves no room for a prompt in the %d positions %s", c.MaxNewTokens, c.ContextLength, positions)}
	}
	if c.StopIDs, err = s.stopIDs(warn); err != nil {
		return c, err
	}
	c.VocabLimit = s.tok.VocabSize()
	return c, nil
}

// stopIDs are the ids that end generation: the tokenizer's (<|im_end|>,
// <|endoftext|>) and, each once, those of the eos_token_id of the
// generation_config.json beside the model (model.ReadGenerationEOS:
// one past the tokenizer's ids is refused, one that is not a special
// token of it is warned of on warn).
func (s *modelSession) stopIDs(warn io.Writer) ([]int32, error) {
	eos, warning, err := model.ReadGenerationEOS(filepath.Join(s.dir, model.ConfigFile), s.tok)
	if err != nil {
		return nil, err
	}
	if warning != "" {
		fmt.Fprintf(warn, "spiral: warning: %s\n", warning)
	}
	ids := s.tok.StopIDs()
	for _, id := range eos {
		if !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	return ids, nil
}

// checkEngine checks that the serving engine of f (none with --engine
// local) answers and serves its model (rollout.OpenAI.CheckModel)
// before anything slow is built (train's policy artifacts take minutes
// on a real model), so that a wrong --served-model or an engine not
// reachable is said at once. It returns the context the engine serves
// the model with where that is below config.json's (vLLM's or
// SGLang's --max-model-len, --context-length; on SGLang one position
// less, as it refuses a request whose prompt and max_tokens reach it,
// config.json's too on an older SGLang that lists no max_model_len and
// was given no --context-length),
// noted on warn, for samplerConfig; 0 otherwise: the engine refuses a
// request whose prompt and max_tokens pass it. sglangListed is the
// context an SGLang reports (its max_model_len) where served is that
// less one (0 otherwise): versions of spiral before 2026-12-07 fitted to the listed
// one, and a run or evaluation they saved records a prompt limit (or
// default trace length) one more, which its resume's refusal explains.
// syncDir is train's --sync-dir with --engine-sync sglang ("" otherwise:
// rollout.OpenAIConfig.SyncDir).
func (s *modelSession) checkEngine(ctx context.Context, f engineFlags, syncDir string, warn io.Writer) (served, sglangListed int, err error) {
	if f.engine == "local" {
		return 0, 0, nil
	}
	hf, err := s.hfConfig()
	if err != nil {
		return 0, 0, err
	}
	model := hf.MaxPositionEmbeddings
	// The check asks for no completion: no sampling setting is sent.
	cfg := f.config(rollout.SamplerConfig{MaxNewTokens: 1}, warn)
	cfg.SyncDir, cfg.ModelContext = syncDir, model
	eng, err := rollout.NewOpenAI(cfg)
	if err != nil {
		return 0, 0, err
	}
	defer eng.CloseIdleConnections() // the check's alone: generator makes the run's engine
	served, listed, err := eng.CheckModel(ctx)
	if err != nil {
		return 0, 0, err
	}
	if served <= 0 || model > 0 && served >= model {
		return 0, 0, nil
	}
	below := fmt.Sprintf("below the %d of %s (config.json max_position_embeddings)", model, s.path())
	if model == 0 {
		below = fmt.Sprintf("and %s states none (config.json max_position_embeddings)", s.path())
	}
	why := "max_model_len"
	if served != listed {
		sglangListed = listed
		why = fmt.Sprintf("its context %d less one: SGLang refuses a request whose prompt and max_tokens reach it", listed)
	}
	fmt.Fprintf(warn, "spiral: note: %s serves %s with a context of %d positions (%s), %s: prompts and traces are fitted to it\n", f.baseURL, f.model, served, why, below)
	return served, sglangListed, nil
}

// engineSamplerConfig is samplerConfig on the context the serving
// engine of e serves the model with (checkEngine, which it returns as
// served, with its sglangListed), the sampling flags f checked first
// against config.json's: an engine serves at most that context, so flags
// that do not fit it are refused at once, not after a wait of up to
// --engine-timeout for a server still loading its model. Where neither states a context, a
// config.json without max_position_embeddings, or none, is warned of on
// warn (noContextWarning): prompts and traces are then of any length.
func (s *modelSession) engineSamplerConfig(ctx context.Context, e engineFlags, syncDir string, f samplingFlags, onEmbeddedTask bool, warn io.Writer) (c rollout.SamplerConfig, served, sglangListed int, err error) {
	if c, err = s.samplerConfig(f, onEmbeddedTask, 0, warn); err != nil {
		return c, 0, 0, err
	}
	if served, sglangListed, err = s.checkEngine(ctx, e, syncDir, warn); err != nil {
		return c, 0, 0, err
	}
	if served == 0 {
		w, err := s.noContextWarning(fmt.Sprintf("prompts and traces are not fitted to it (--max-new-tokens %d a trace): a longer one runs past the positions the model was trained on", c.MaxNewTokens))
		if w != "" {
			fmt.Fprintf(warn, "spiral: warning: %s\n", w)
		}
		return c, 0, 0, err
	}
	c, err = s.samplerConfig(f, onEmbeddedTask, served, io.Discard) // its warnings said by the first
	return c, served, sglangListed, err
}

// generator returns where generation runs: the local sampler on pol, or
// the serving engine of f (checkEngine checked it first), which gets
// prompts as token ids and tokenizes with the session's tokenizer only
// when it sends no ids back. The engine's token ids must lie in the
// model's vocabulary, pol's logits or, without pol, the larger of the
// tokenizer's ids and config.json's vocab_size; a completion is cut
// before an id past c's VocabLimit (the tokenizer's ids, which the local
// sampler draws from and the learner's softmax is over:
// model.ExecutorOptions.VocabLimit), so that train and eval count it
// alike.
func (s *modelSession) generator(f engineFlags, pol *model.Policy, c rollout.SamplerConfig, warn io.Writer) (rollout.Generator, error) {
	if f.engine == "local" {
		return rollout.NewSampler(pol.LM, c)
	}
	vocab, policy := s.tok.VocabSize(), 0
	if pol != nil {
		vocab = pol.LM.Signature().Vocab
	} else {
		hf, err := s.hfConfig()
		if err != nil {
			return nil, err
		}
		vocab = max(vocab, hf.VocabSize)
	}
	if c.VocabLimit > 0 && c.VocabLimit < vocab {
		policy = c.VocabLimit
	}
	cfg := f.config(c, warn)
	cfg.Vocab, cfg.PolicyVocab = vocab, policy
	cfg.Tokenize = func(text string) ([]int32, error) { return s.tok.Encode(text), nil }
	eng, err := rollout.NewOpenAI(cfg)
	if err != nil {
		return nil, err
	}
	return eng, nil
}

// config is the engine's configuration of f, sampling with c.
func (f engineFlags) config(c rollout.SamplerConfig, warn io.Writer) rollout.OpenAIConfig {
	return rollout.OpenAIConfig{BaseURL: f.baseURL, Model: f.model, APIKey: os.Getenv(f.keyEnv), Sampling: c,
		Concurrency: f.concurrency, Timeout: f.timeout, Warn: warn}
}

// promptLimit is the longest prompt that leaves room for a whole trace
// (0 when the context is not known).
func promptLimit(c rollout.SamplerConfig) int {
	if c.ContextLength == 0 {
		return 0
	}
	return c.ContextLength - c.MaxNewTokens
}

// Default trace lengths when --max-new-tokens is 0: the embedded task's
// traces are under 120 characters; real models reason for thousands of
// tokens, within half of their context.
const (
	embeddedMaxNewTokens = 96
	modelMaxNewTokens    = 4096
)

func traceLength(shortTask bool, context int) int {
	if shortTask {
		return embeddedMaxNewTokens
	}
	if context > 0 {
		return min(modelMaxNewTokens, context/2)
	}
	return modelMaxNewTokens
}

// openSamplingPolicy opens the model for sampling through its sampling
// graph (last-position logits), with the weights of the checkpoint ckpt
// when given (see loadCheckpoint: a checkpoint directory, or a run
// directory or its checkpoints/ for its newest intact one, with a warning to warn
// for each newer one skipped), whose source must be this model; a LoRA
// checkpoint opens the graphs with its adapters. Artifacts go to
// artifactsDir, or under the cache when it is "". It returns the policy
// and the checkpoint loaded (its zero value without ckpt). It stops when
// ctx is done.
func openSamplingPolicy(ctx context.Context, s *modelSession, ckpt, artifactsDir string, warn io.Writer) (*model.Policy, loadedCheckpoint, error) {
	if ckpt == "" {
		pol, err := s.openPolicy(ctx, model.ArtifactOptions{}, artifactsDir)
		return pol, loadedCheckpoint{}, err
	}
	// A checkpoint skipped as damaged leaves the weights partly loaded;
	// the next one overwrites them all (Load checks that it holds every
	// tensor), so the graphs are reopened only for other LoRA settings
	// or another --train and --freeze selection, whose checkpoints hold
	// the parameters it trained only (the others are the model's).
	var pol *model.Policy
	var opened string
	var loaded loadedCheckpoint
	path, err := loadCheckpoint(ckpt, s.resolvedModel, warn, func(path string, st rl.RunSettings) error {
		loaded.settings = st
		recorded, err := rl.CheckpointSelection(path)
		if err != nil {
			return err
		}
		sel, err := lmgraph.ParseSelection(recorded)
		if err != nil {
			return checkpoint.Final(fmt.Errorf("checkpoint %s: %w", path, err))
		}
		lora := settingsLoRA(st)
		var unselectable *lmgraph.UnselectableError
		if recorded == "" && !lora.Enabled() {
			if sel, err = heldSelection(s.onnx, path); errors.As(err, &unselectable) {
				sel = lmgraph.Selection{} // loaded as every parameter, its error naming the tensors
			} else if err != nil {
				return err
			}
		}
		arts := model.ArtifactOptions{LoRA: lora, Selection: sel}
		key := arts.LoRA.String() + " " + sel.String()
		if pol != nil && key != opened {
			err := pol.Close()
			pol = nil
			if err != nil {
				return checkpoint.Final(err)
			}
		}
		if pol == nil {
			p, err := s.openPolicy(ctx, arts, artifactsDir)
			if err != nil {
				return checkpoint.Final(err)
			}
			pol, opened = p, key
		}
		state, err := checkpoint.Load(ctx, path, pol.Weights, nil)
		var mismatch *params.MismatchError
		if unselectable != nil && errors.As(err, &mismatch) {
			err = fmt.Errorf("checkpoint %s %s and records no --train and --freeze selection (an sft checkpoint of a spiral before 2026-12-06?): %w", path, unselectable.Found(), err)
		}
		loaded.digest = state.Digest()
		return err
	})
	if err != nil {
		if pol != nil {
			err = errors.Join(err, pol.Close())
		}
		return nil, loadedCheckpoint{}, err
	}
	loaded.path = path
	warnOtherTokenizer(warn, path, loaded.settings, s.resolvedModel)
	return pol, loaded, nil
}

// heldSelection is the --train and --freeze selection that trains the
// parameters the checkpoint at path, of the model at src, holds, for a
// checkpoint that records none (rl.CheckpointSelection ""; spiral sft's
// before 2026-12-06, which held the parameters a selection trained
// too): lmgraph.SelectionOf of the model's parameters, whose
// *lmgraph.UnselectableError says what it holds where no selection
// trains them.
func heldSelection(src, path string) (lmgraph.Selection, error) {
	held, parameters, err := heldParameters(src, path)
	if err != nil {
		return lmgraph.Selection{}, err
	}
	return lmgraph.SelectionOf(parameters, held)
}

// heldParameters returns the tensor names the checkpoint at path holds
// and the parameters of the model at src.
func heldParameters(src, path string) (held, parameters []string, err error) {
	if held, err = checkpoint.TensorNames(path); err != nil {
		return nil, nil, err
	}
	if parameters, err = model.TrainedParameters(src, lmgraph.Selection{}); err != nil {
		return nil, nil, checkpoint.Final(err)
	}
	return held, parameters, nil
}

// loadedCheckpoint is the checkpoint openSamplingPolicy loaded.
type loadedCheckpoint struct {
	path     string         // "" for none
	settings rl.RunSettings // its run's
	digest   string         // checkpoint.State.Digest
}

// warnOtherTokenizer warns on w where the checkpoint at path, of the run
// settings trained, was trained with another tokenizer than r's: the
// run records its tokenizer's fingerprint (Tokenizer, as tokenizerID
// takes it, or as older versions took it, of the file's bytes; none in
// checkpoints of older versions still, which
// are not checked), and with another the model's token ids are read as
// other text. The run records no path of it, so the warning names the
// fingerprints and the file used (the embedded model's by that name).
func warnOtherTokenizer(w io.Writer, path string, trained rl.RunSettings, r resolvedModel) {
	if trained.Tokenizer == "" {
		return
	}
	id, err := r.tokenizerID()
	if err != nil || id == trained.Tokenizer {
		return // none to read: the command's own error where it needs one
	}
	// Taken only here, where the run's is not tokenizerID's.
	if bytesID, err := r.tokenizerBytesID(); err != nil || bytesID == trained.Tokenizer {
		return
	}
	used := r.tokenizer
	if r.embedded && !r.tokenizerGiven {
		used = "the embedded model's tokenizer.json" // its file in the cache, no path the user gave
	}
	fmt.Fprintf(w, "spiral: warning: checkpoint %s was trained with another tokenizer (its run's tokenizer %s) than %s (%s): the model's token ids mean other text with it; give the run's --tokenizer\n",
		path, trained.Tokenizer, used, id)
}

// openPolicy opens the model with the graphs of arts' LoRA adapters
// (none when disabled) or --train and --freeze selection, its artifacts
// in artifactsDir or, when "", under the cache, and checks that the
// tokenizer fits it.
func (s *modelSession) openPolicy(ctx context.Context, arts model.ArtifactOptions, artifactsDir string) (*model.Policy, error) {
	arts.Waiting = s.warn
	if artifactsDir == "" {
		var err error
		if artifactsDir, err = cachedArtifactsDir(s.onnx, arts); err != nil {
			return nil, err
		}
	}
	pol, err := model.OpenPolicy(ctx, s.rt, s.onnx, artifactsDir, model.PolicyOptions{Artifacts: arts})
	if err != nil {
		return nil, err
	}
	if err := s.checkVocab(pol.LM); err != nil {
		return nil, errors.Join(err, pol.Close())
	}
	return pol, nil
}

// checkCheckpointFlag refuses a --checkpoint ckpt that is not there (or
// cannot be opened: statFlag), naming a run's checkpoints that a killed
// --fresh left aside (rl.AsidePending), or that is a file. The commands
// that take one call it before they look for ONNX Runtime, as a missing
// --model is refused before, and loadCheckpoint again as it loads.
func checkCheckpointFlag(ckpt string) error {
	st, err := statFlag("--checkpoint", ckpt)
	if err != nil {
		// A run's checkpoints/ that a killed --fresh left aside.
		clean := filepath.Clean(ckpt) // RUN/checkpoints/ is RUN's checkpoints too
		if why := rl.AsidePending(filepath.Dir(clean), filepath.Base(clean)); why != "" {
			return fmt.Errorf("%w: %s", errors.Unwrap(err), why)
		}
		return err
	}
	if !st.IsDir() {
		return usageError{fmt.Errorf("--checkpoint %s is a file: want a checkpoint directory%s, or a run directory (or its checkpoints/) for its newest intact one", ckpt, checkpointBeside(ckpt))}
	}
	return nil
}

// loadCheckpoint loads the checkpoint that --checkpoint ckpt names with
// load: ckpt itself when it is a checkpoint directory (whose damage is an
// error naming it), else the newest checkpoint under it (a run's
// checkpoints/ directory) that loads cleanly, falling back to older ones
// as train does when it resumes, with the same warning to warn for each
// newer one skipped (checkpoint.Pick, rl.WarnSkippedCheckpoints). Each
// checkpoint's run settings (state.json) are read and its source checked
// against the model r before load gets them: a checkpoint of another
// model stops the search, as a layout mismatch in checkpoint.Load does.
// It returns the path loaded.
func loadCheckpoint(ckpt string, r resolvedModel, warn io.Writer, load func(path string, st rl.RunSettings) error) (string, error) {
	if err := checkCheckpointFlag(ckpt); err != nil {
		return "", err
	}
	var srcID string // the model's id, read once a checkpoint records one
	from := ckpt
	if run := filepath.Join(ckpt, rl.CheckpointsDir); !checkpoint.IsCheckpointDir(ckpt) && isDir(run) {
		from = run // a run directory: its checkpoints
	} else if why := rl.AsidePending(ckpt, rl.CheckpointsDir); why != "" && !checkpoint.IsCheckpointDir(ckpt) {
		return "", fmt.Errorf("--checkpoint %s: %s holds no %s/: %s", ckpt, ckpt, rl.CheckpointsDir, why)
	}
	path, skipped, err := checkpoint.Pick(from, func(path string) error {
		st, err := rl.CheckpointSettings(path)
		if err != nil {
			return err
		}
		// Checkpoints of older versions record no id: they are left to
		// the layout check of checkpoint.Load.
		if st.ModelID != "" {
			if srcID == "" {
				if srcID, err = model.SourceID(r.onnx); err != nil {
					return checkpoint.Final(err)
				}
			}
			if st.ModelID != srcID {
				// --checkpoint and --model contradict each other: a
				// usage error, as a train rerun into a run of another
				// model is (rl.OtherRunError).
				return checkpoint.Final(usageError{fmt.Errorf("checkpoint %s was trained from %s (model id %.12s), not from %s (model id %.12s)",
					path, st.Model, st.ModelID, r.given(), srcID)})
			}
		}
		return load(path, st)
	})
	rl.WarnSkippedCheckpoints(warn, skipped)
	if errors.Is(err, checkpoint.ErrNoCheckpoint) && !isDir(filepath.Join(ckpt, rl.CheckpointsDir)) && !checkpoint.IsCheckpointDir(ckpt) {
		if _, serr := os.Stat(filepath.Join(ckpt, "model.onnx")); serr == nil {
			// A model's directory (a finished sft's --out, an export's),
			// as noONNXError names a checkpoint given as --model.
			return "", usageError{fmt.Errorf("--checkpoint %s holds a model (model.onnx), not checkpoints: give it as --model (a finished sft's --out is a model directory; its checkpoints are removed once the model is written)", ckpt)}
		}
		// An hf or peft export's directory, which spiral writes from
		// checkpoints and does not read back.
		for _, name := range hfWeightsFiles {
			if isRegular(filepath.Join(ckpt, name)) {
				return "", usageError{fmt.Errorf("--checkpoint %s holds a Hugging Face model (%s), not checkpoints: spiral reads a run's checkpoints (give the run, or its checkpoint, that the model was exported from) and runs ONNX models (give the ONNX model as --model)", ckpt, name)}
			}
		}
		if isRegular(filepath.Join(ckpt, model.PEFTConfigFile)) {
			return "", usageError{fmt.Errorf("--checkpoint %s holds a peft adapter (%s), not checkpoints: give the LoRA run it was exported from (or its checkpoint), with its ONNX base model as --model", ckpt, model.PEFTConfigFile)}
		}
	}
	if errors.Is(err, checkpoint.ErrNoCheckpoint) {
		// Pick's "checkpoint: no checkpoint in DIR (want ...)": the flag
		// in place of the package.
		return "", fmt.Errorf("--checkpoint %s: %s", ckpt, strings.TrimPrefix(err.Error(), "checkpoint: "))
	}
	if err != nil {
		return "", fmt.Errorf("--checkpoint %s: %w", ckpt, err)
	}
	return path, nil
}

// checkpointBeside names the checkpoint directory that the file given as
// --checkpoint points to, for the error refusing it: the one the
// checkpoints' latest pointer names, or the one holding the file ("" for
// neither).
func checkpointBeside(file string) string {
	dir := filepath.Dir(file)
	if filepath.Base(file) == checkpoint.LatestFile {
		if b, err := os.ReadFile(file); err == nil {
			if name := strings.TrimSpace(string(b)); name != "" && checkpoint.IsCheckpointDir(filepath.Join(dir, name)) {
				return fmt.Sprintf(" (such as %s, which it names)", filepath.Join(dir, name))
			}
		}
	}
	if checkpoint.IsCheckpointDir(dir) {
		return fmt.Sprintf(" (such as %s, which holds it)", dir)
	}
	return ""
}

// settingsLoRA returns the LoRA configuration of a run's settings
// (disabled for a full fine-tune).
func settingsLoRA(st rl.RunSettings) lmgraph.LoRA {
	if st.LoRA == nil {
		return lmgraph.LoRA{}
	}
	return *st.LoRA
}

// cachedArtifactsDir is where the artifacts of the model at path go when
// no run directory holds them: under the cache, by fingerprint (and by
// LoRA configuration or parameter selection, bench train's --train and
// --freeze, whose graphs differ).
func cachedArtifactsDir(path string, arts model.ArtifactOptions) (string, error) {
	fp, err := model.Fingerprint(path)
	if err != nil {
		return "", err
	}
	cache, err := model.CacheDir()
	if err != nil {
		return "", err
	}
	name := fp[:16]
	switch {
	case arts.LoRA.Enabled():
		sum := sha256.Sum256([]byte(arts.LoRA.String()))
		name += "-lora-" + hex.EncodeToString(sum[:4])
	case arts.Selection.Train != nil || arts.Selection.Freeze != nil:
		sum := sha256.Sum256([]byte(arts.Selection.String()))
		name += "-select-" + hex.EncodeToString(sum[:4])
	}
	return filepath.Join(cache, "artifacts", name), nil
}

// useDeviceOptimizer runs opt's AdamW on the device with the gradients
// when pol's training is on the device layer, and reports whether it
// does; a model whose gradients cannot all be summed there keeps it on
// the host, with a warning.
func useDeviceOptimizer(env *cliEnv, pol *model.Policy, opt *optim.AdamW) bool {
	if !pol.Train.DeviceLayer() {
		return false
	}
	if err := pol.UseDeviceOptimizer(opt); err != nil {
		fmt.Fprintf(env.stderr, "spiral: AdamW runs on the host: %v\n", err)
		return false
	}
	return true
}

// isDir reports whether path is a directory.
func isDir(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.IsDir()
}

// noteGenerationSampling notes on warn, for eval and generate, where the
// generation_config.json beside the model suggests sampling (do_sample
// true and a temperature, top_p or top_k: the model card's, Qwen3's
// 0.6, 0.95, 20) that the flags left at spiral's own defaults sample
// otherwise: transformers' generate and vLLM (from 0.8) follow that file,
// so a user comparing against them would read another accuracy. The
// flags given are taken as meant; training samples at its own
// temperature on purpose (exploration) and is not noted. A file whose
// sampling fields do not read (another type) goes without a note: the
// note is no reason to refuse the model (stopIDs refuses a file that is
// no JSON).
func (s *modelSession) noteGenerationSampling(f samplingFlags, c rollout.SamplerConfig, warn io.Writer) {
	gs, path, err := model.ReadGenerationSampling(s.onnx)
	if err != nil || gs.DoSample == nil || !*gs.DoSample {
		return
	}
	var suggested, used []string
	if gs.Temperature != nil && !f.changed("temperature") && *gs.Temperature != c.Temperature {
		suggested = append(suggested, fmt.Sprintf("temperature %g", *gs.Temperature))
		used = append(used, fmt.Sprintf("--temperature %g", c.Temperature))
	}
	if gs.TopP != nil && !f.changed("top-p") && *gs.TopP != c.TopP {
		suggested = append(suggested, fmt.Sprintf("top_p %g", *gs.TopP))
		used = append(used, fmt.Sprintf("--top-p %g", c.TopP))
	}
	if gs.TopK != nil && !f.changed("top-k") && *gs.TopK != float64(c.TopK) {
		suggested = append(suggested, fmt.Sprintf("top_k %g", *gs.TopK))
		used = append(used, fmt.Sprintf("--top-k %d", c.TopK))
	}
	if len(suggested) > 0 {
		fmt.Fprintf(warn, "spiral: note: %s suggests sampling with %s, which transformers and vLLM follow; spiral samples with %s (its defaults): give those flags to sample as they do\n",
			path, strings.Join(suggested, ", "), strings.Join(used, ", "))
	}
}
