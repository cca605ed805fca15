package rollout

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
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
}

// Export writes the current weights into a directory (a peft adapter or
// a Hugging Face model directory), creating it; it stops when ctx ends.
type Export func(ctx context.Context, dir string) error

// exportVersion writes the weights of step with export into a directory
// of its own under dir and returns the version's name and directory.
func exportVersion(ctx context.Context, dir string, step int, export Export) (name, path string, err error) {
	name = fmt.Sprintf("spiral-step-%06d", step)
	path = filepath.Join(dir, name)
	if err := export(ctx, path); err != nil {
		return "", "", fmt.Errorf("rollout: weight sync: export %s: %w", path, err)
	}
	return name, path, nil
}

// removeVersion deletes the files of version name under dir ("" is none).
func removeVersion(dir, name string) error {
	if name == "" {
		return nil
	}
	if err := os.RemoveAll(filepath.Join(dir, name)); err != nil {
		return fmt.Errorf("rollout: weight sync: %w", err)
	}
	return nil
}

// VLLMLoRASync syncs LoRA adapters into vLLM at runtime: each version is
// exported (peft format) to Dir/spiral-step-NNNNNN, loaded with POST
// /v1/load_lora_adapter {"lora_name", "lora_path"} (vLLM started with
// --enable-lora and VLLM_ALLOW_RUNTIME_LORA_UPDATING=True; Dir must be the
// same path on the server), requests are then sent to that adapter's
// name, and the previous version is unloaded (/v1/unload_lora_adapter)
// and its directory removed.
type VLLMLoRASync struct {
	Engine *OpenAI
	Dir    string
	Export Export
	prev   string
}

// Version returns the adapter the engine samples with ("" before the
// first sync: the base model).
func (s *VLLMLoRASync) Version() string { return s.prev }

// Sync exports, loads and switches to the adapter of step.
func (s *VLLMLoRASync) Sync(ctx context.Context, step int) error {
	name, dir, err := exportVersion(ctx, s.Dir, step, s.Export)
	if err != nil {
		return err
	}
	e := s.Engine
	load := map[string]string{"lora_name": name, "lora_path": dir}
	if err := e.post(ctx, http.MethodPost, "/load_lora_adapter", load, nil); err != nil {
		return fmt.Errorf("rollout: weight sync: load adapter %s: %w", name, err)
	}
	e.SetModel(name)
	if prev := s.prev; prev != "" {
		unload := map[string]string{"lora_name": prev}
		if err := e.post(ctx, http.MethodPost, "/unload_lora_adapter", unload, nil); err != nil {
			return fmt.Errorf("rollout: weight sync: unload adapter %s: %w", prev, err)
		}
	}
	if err := removeVersion(s.Dir, s.prev); err != nil {
		return err
	}
	s.prev = name
	return nil
}

// SGLangDiskSync syncs full weights into SGLang: each version is exported
// (Hugging Face format) to Dir/spiral-step-NNNNNN and loaded with POST
// /update_weights_from_disk {"model_path"} at the server's root (the
// base URL without /v1; Dir must be the same path on the server), which
// answers once the new weights serve; the previous directory is removed.
type SGLangDiskSync struct {
	Engine  *OpenAI
	Dir     string
	Export  Export
	version string
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
	url := strings.TrimSuffix(e.BaseURL(), "/v1") + "/update_weights_from_disk"
	var resp struct {
		Success bool   `json:"success"`
		Message string `json:"message"`
	}
	body := map[string]string{"model_path": dir}
	if err := e.request(ctx, http.MethodPost, url, body, &resp); err != nil {
		return fmt.Errorf("rollout: weight sync: %w", err)
	}
	if !resp.Success {
		return fmt.Errorf("rollout: weight sync: %s refused %s: %s", url, dir, resp.Message)
	}
	if err := removeVersion(s.Dir, s.version); err != nil {
		return err
	}
	s.version = name
	return nil
}
