package model

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzReadHFConfig feeds arbitrary config.json files to ReadHFConfig: a
// config it accepts states no negative size, and an error names the file.
func FuzzReadHFConfig(f *testing.F) {
	for _, p := range []string{"testdata/hfqwen3/config.json", "testdata/optimumqwen3/config.json",
		"testdata/dynamoqwen3/config.json", "qwen3/testdata/qwen3-4b-config.json"} {
		b, err := os.ReadFile(filepath.FromSlash(p))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"sliding_window": 4096}`))
	f.Add([]byte(`{"sliding_window": [4096, null], "use_sliding_window": true}`))
	f.Add([]byte(`{"max_position_embeddings": -1}`))
	f.Add([]byte(`{"tie_word_embeddings": null}`))
	f.Add([]byte(`{"max_position_embeddings": 8, "text_config": {"max_position_embeddings": -1}}`))
	dir := f.TempDir()
	path := filepath.Join(dir, ConfigFile)
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := os.WriteFile(path, data, 0o666); err != nil {
			t.Fatal(err)
		}
		cfg, found, err := ReadHFConfig(filepath.Join(dir, "model.onnx"))
		if err != nil {
			if !strings.Contains(err.Error(), path) {
				t.Fatalf("error %q does not name %s", err, path)
			}
			return
		}
		if !found {
			t.Fatal("found = false for a file that exists")
		}
		if cfg.MaxPositionEmbeddings < 0 || cfg.VocabSize < 0 || cfg.NumAttentionHeads < 0 {
			t.Fatalf("accepted negative sizes: %+v", cfg)
		}
		_ = cfg.SlidingWindowActive()
	})
}
