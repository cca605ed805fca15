package rollout

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// A WeightSync makes a serving engine sample from the trainer's current
// weights: Sync is called after every update (and once before the first
// rollout) with the number of completed steps, and returns once the
// engine serves them, so that every rollout of the next step comes from
// that version (synchronous: no rollout is ever older than the weights it
// trains, so none is discarded or importance-corrected).
type WeightSync interface {
	Sync(ctx context.Context, step int) error
	// Version names the weights the engine serves now.
	Version() string
	// Check fails when the engine no longer serves the version Sync
	// loaded last (nil before the first sync): an engine restarted
	// comes back with the weights it was started with, under the same
	// name, and would answer every later request from them.
	Check(ctx context.Context) error
}

// restartedHint ends the error of a Check that found the engine serving
// other weights than those synced.
const restartedHint = "was it restarted? The rollouts since are not the policy's; run spiral train again, which resumes from its last checkpoint and loads its weights into the engine first"

// Export writes the current weights into a directory (a peft adapter or
// a Hugging Face model directory), creating it; it stops when ctx ends.
type Export func(ctx context.Context, dir string) error

// versionPrefix begins the name of every version: its directory under
// the sync directory and, on vLLM, its adapter's name.
const versionPrefix = "spiral-step-"

// isVersionName reports whether name is a version's (exportVersion's
// name: versionPrefix and the step's digits).
func isVersionName(name string) bool {
	step, ok := strings.CutPrefix(name, versionPrefix)
	return ok && step != "" && strings.Trim(step, "0123456789") == ""
}

// exportVersion writes the weights of step with export into a directory
// of its own under dir and returns the version's name and directory, an
// absolute path (the engine resolves a relative one against its own
// working directory).
func exportVersion(ctx context.Context, dir string, step int, export Export) (name, path string, err error) {
	name = fmt.Sprintf("%s%06d", versionPrefix, step)
	if dir, err = filepath.Abs(dir); err != nil {
		return "", "", fmt.Errorf("rollout: weight sync: %w", err)
	}
	path = filepath.Join(dir, name)
	if err := export(ctx, path); err != nil {
		return "", "", fmt.Errorf("rollout: weight sync: export %s: %w", path, err)
	}
	return name, path, nil
}

// removeOtherVersions deletes the version directories under dir but
// keep's: the version the engine served before, and those an earlier
// process or a failed sync left (a run resumed with the same --sync-dir
// would otherwise leave one model's weights behind at every restart).
// Nothing else there goes: a directory named like a version but for
// more (isVersionName), such as one copied aside to keep, is not one.
func removeOtherVersions(dir, keep string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("rollout: weight sync: %w", err)
	}
	for _, e := range entries {
		if e.IsDir() && isVersionName(e.Name()) && e.Name() != keep {
			if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
				return fmt.Errorf("rollout: weight sync: %w", err)
			}
		}
	}
	return nil
}

// VLLMLoRASync syncs LoRA adapters into vLLM at runtime: each version is
// exported (peft format) to Dir/spiral-step-NNNNNN, loaded with POST
// /v1/load_lora_adapter {"lora_name", "lora_path"} (vLLM started with
// --enable-lora and VLLM_ALLOW_RUNTIME_LORA_UPDATING=True; Dir must be the
// same path on the server), requests are then sent to that adapter's
// name, and the previous version is unloaded (/v1/unload_lora_adapter)
// and its directory removed. Before its first load it unloads the
// versions an earlier run left loaded (GET /v1/models lists them): vLLM
// refuses to load a name it holds, which a run resumed against the same
// engine would otherwise meet at its first sync. So one engine serves
// one training run's adapters.
type VLLMLoRASync struct {
	Engine *OpenAI
	Dir    string
	Export Export
	prev   string
	// cleared is set once the versions an earlier run left are unloaded.
	cleared bool
}

// Version returns the adapter the engine samples with ("" before the
// first sync: the base model).
func (s *VLLMLoRASync) Version() string { return s.prev }

// noAdapterFound is in the message of vLLM's 404 to a load whose
// adapter directory it did not find (its LoRAAdapterNotFoundError's
// "Loading lora NAME failed: No adapter found for PATH"), as against
// the 404 of a vLLM without the endpoint (runtime loading not enabled).
const noAdapterFound = "No adapter found for"

// Sync exports, loads and switches to the adapter of step.
func (s *VLLMLoRASync) Sync(ctx context.Context, step int) error {
	name, dir, err := exportVersion(ctx, s.Dir, step, s.Export)
	if err != nil {
		return err
	}
	e := s.Engine
	if !s.cleared {
		if err := s.unloadLeftVersions(ctx); err != nil {
			return err
		}
		s.cleared = true
	}
	load := map[string]string{"lora_name": name, "lora_path": dir}
	if err := e.post(ctx, http.MethodPost, "/load_lora_adapter", load, nil); err != nil {
		// A load whose answer was lost (the connection dropped after the
		// engine loaded it) is retried, and refused as already loaded:
		// the engine serves this version all the same when it lists it
		// (its name is this step's, and the first sync unloaded every
		// version an earlier run left).
		if ids, lerr := e.servedModels(ctx); lerr != nil || !slices.Contains(ids, name) {
			var se *statusError
			if errors.As(err, &se) && se.status == http.StatusNotFound {
				if strings.Contains(se.message, noAdapterFound) {
					// The endpoint is there: the engine did not find the
					// directory on its machine.
					err = fmt.Errorf("%w (the engine found no adapter at %s, where spiral wrote it: --sync-dir must be the same path on the engine's machine, a filesystem both share)", err, dir)
				} else {
					err = fmt.Errorf("%w (vLLM serves it when started with --enable-lora and the environment variable VLLM_ALLOW_RUNTIME_LORA_UPDATING=True)", err)
				}
			}
			return fmt.Errorf("rollout: weight sync: load adapter %s: %w", name, err)
		}
	}
	e.SetModel(name)
	if prev := s.prev; prev != "" {
		if err := s.unload(ctx, prev); err != nil {
			return fmt.Errorf("rollout: weight sync: unload adapter %s: %w", prev, err)
		}
	}
	if err := removeOtherVersions(s.Dir, name); err != nil {
		return err
	}
	s.prev = name
	return nil
}

// Check fails when the engine does not list the adapter synced last
// (vLLM forgets its adapters when restarted).
func (s *VLLMLoRASync) Check(ctx context.Context) error {
	if s.prev == "" {
		return nil
	}
	ids, err := s.Engine.servedModels(ctx)
	if err != nil {
		return fmt.Errorf("rollout: weight sync: check that adapter %s is served: %w", s.prev, err)
	}
	if !slices.Contains(ids, s.prev) {
		return fmt.Errorf("rollout: weight sync: %s/models does not list adapter %s, which spiral loaded: %s", s.Engine.BaseURL(), s.prev, restartedHint)
	}
	return nil
}

// unloadLeftVersions unloads the versions the engine serves that this
// process did not load (an earlier run's).
func (s *VLLMLoRASync) unloadLeftVersions(ctx context.Context) error {
	ids, err := s.Engine.servedModels(ctx)
	if err != nil {
		return fmt.Errorf("rollout: weight sync: list the adapters loaded: %w", err)
	}
	for _, id := range ids {
		if !strings.HasPrefix(id, versionPrefix) {
			continue
		}
		if err := s.unload(ctx, id); err != nil {
			return fmt.Errorf("rollout: weight sync: unload adapter %s, which an earlier run left loaded: %w", id, err)
		}
	}
	return nil
}

// unload unloads the adapter called name. An unload whose answer was
// lost (the connection dropped after the engine unloaded it) is retried
// and refused as not found: the adapter is unloaded all the same when
// the engine no longer lists it.
func (s *VLLMLoRASync) unload(ctx context.Context, name string) error {
	e := s.Engine
	err := e.post(ctx, http.MethodPost, "/unload_lora_adapter", map[string]string{"lora_name": name}, nil)
	if err == nil {
		return nil
	}
	if ids, lerr := e.servedModels(ctx); lerr == nil && !slices.Contains(ids, name) {
		return nil
	}
	return err
}

// SGLangDiskSync syncs full weights into SGLang: each version is exported
// (Hugging Face format) to Dir/spiral-step-NNNNNN and loaded with POST
// /update_weights_from_disk {"model_path"} at the server's root (the
// base URL without /v1; Dir must be the same path on the server), which
// answers once the new weights serve; the previous directory is removed,
// and those an earlier run or a failed sync left. Check reads the
// directory served back from GET /get_model_info's model_path, which
// SGLang sets to the one loaded last.
type SGLangDiskSync struct {
	Engine  *OpenAI
	Dir     string
	Export  Export
	version string
	path    string // the version's directory, as sent
}

// root is the server's root URL (the base URL without /v1), under which
// SGLang's own endpoints lie.
func (s *SGLangDiskSync) root() string {
	return strings.TrimSuffix(s.Engine.BaseURL(), "/v1")
}

// Check fails when the engine serves other weights than the directory
// synced last (/get_model_info's model_path).
func (s *SGLangDiskSync) Check(ctx context.Context) error {
	if s.path == "" {
		return nil
	}
	url := s.root() + "/get_model_info"
	var info struct {
		ModelPath string `json:"model_path"`
	}
	if err := s.Engine.request(ctx, http.MethodGet, url, nil, &info); err != nil {
		return fmt.Errorf("rollout: weight sync: check that %s is served: %w", s.path, err)
	}
	if info.ModelPath != s.path {
		return fmt.Errorf("rollout: weight sync: %s: the engine serves %s, not %s, the weights spiral loaded: %s", url, info.ModelPath, s.path, restartedHint)
	}
	return nil
}

// Version returns the directory the engine loaded last ("" before the
// first sync: the weights it was started with).
func (s *SGLangDiskSync) Version() string { return s.version }

// Sync exports and loads the weights of step.
func (s *SGLangDiskSync) Sync(ctx context.Context, step int) error {
	name, dir, err := exportVersion(ctx, s.Dir, step, s.Export)
	if err != nil {
		return err
	}
	e := s.Engine
	url := s.root() + "/update_weights_from_disk"
	var resp struct {
		Success bool   `json:"success"`
		Message string `json:"message"`
	}
	body := map[string]string{"model_path": dir}
	if err := e.request(ctx, http.MethodPost, url, body, &resp); err != nil {
		// SGLang answers a load it could not do {"success": false} with
		// a 400: named as one refused with a 200 is.
		var se *statusError
		if errors.As(err, &se) && se.status == http.StatusNotFound {
			// No such endpoint (FastAPI's 404, a vLLM's): nothing was
			// refused.
			return fmt.Errorf("rollout: weight sync: %s: HTTP %d: %s (the server has no such endpoint: --engine-sync sglang needs SGLang's server; a vLLM takes --engine-sync vllm-lora)", url, se.status, se.message)
		}
		if errors.As(err, &se) && se.status/100 == 4 {
			return fmt.Errorf("rollout: weight sync: %s refused %s: HTTP %d: %s", url, dir, se.status, se.message)
		}
		return fmt.Errorf("rollout: weight sync: load %s: %w", dir, err)
	}
	if !resp.Success {
		return fmt.Errorf("rollout: weight sync: %s refused %s: %s", url, dir, resp.Message)
	}
	if err := removeOtherVersions(s.Dir, name); err != nil {
		return err
	}
	s.version, s.path = name, dir
	return nil
}
