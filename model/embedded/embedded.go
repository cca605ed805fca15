// Package embedded carries spiral's default model inside the binary: a tiny
// Qwen3-architecture model warm-started on the synthetic arithmetic task,
// with its character-level tokenizer, so that `spiral train` and `spiral
// eval` work with no files at all.
package embedded

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spiral-rl/spiral/model/atomicfile"
)

//go:embed assets
var assets embed.FS

// Files are the embedded model's files, written side by side.
var Files = []string{"model.onnx", "tokenizer.json", "config.json"}

// ErrNotBuilt is returned when this binary was built without the embedded
// model's files.
var ErrNotBuilt = errors.New("embedded: this binary carries no default model (run `make embedded` and rebuild, or pass --model)")

// Available reports whether the binary carries the model.
func Available() bool {
	for _, f := range Files {
		if _, err := fs.Stat(assets, "assets/"+f); err != nil {
			return false
		}
	}
	return true
}

// tmpPrefix begins the name of a directory being extracted.
const tmpPrefix = ".embedded-tmp-"

// staleAfter is the age past which a temporary directory is taken for
// one a killed extraction left: an extraction takes milliseconds.
const staleAfter = time.Hour

// Extract writes the embedded files into a directory under cacheDir
// (created if missing) named by their content hash (once; later calls
// reuse it) and returns that directory. The files and the directory are
// fsynced before it is renamed into place, and the rename after, so that
// a power loss cannot leave its .complete marker beside files never
// written out; a directory whose files still differ from the embedded
// ones (damaged, or edited) is replaced by a fresh extraction. Temporary
// directories that extractions killed midway left in cacheDir are
// removed.
func Extract(cacheDir string) (string, error) {
	if !Available() {
		return "", ErrNotBuilt
	}
	h := sha256.New()
	contents := make([][]byte, len(Files))
	for i, f := range Files {
		b, err := assets.ReadFile("assets/" + f)
		if err != nil {
			return "", fmt.Errorf("embedded: %w", err)
		}
		contents[i] = b
		h.Write(b)
	}
	dir := filepath.Join(cacheDir, "embedded-"+hex.EncodeToString(h.Sum(nil))[:16])
	removeStale(cacheDir, time.Now())
	if _, err := os.Stat(filepath.Join(dir, ".complete")); err == nil {
		if matches(dir, contents) {
			return dir, nil
		}
		if err := setAside(cacheDir, dir); err != nil {
			return "", fmt.Errorf("embedded: extract: %s does not hold the embedded model's files: %w", dir, err)
		}
	}
	if err := os.MkdirAll(cacheDir, 0o777); err != nil {
		return "", fmt.Errorf("embedded: extract: %w", err)
	}
	tmp, err := os.MkdirTemp(cacheDir, tmpPrefix)
	if err != nil {
		return "", fmt.Errorf("embedded: extract: %w", err)
	}
	if err := writeAll(tmp, contents); err != nil {
		os.RemoveAll(tmp)
		return "", fmt.Errorf("embedded: extract: %w", err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		os.RemoveAll(tmp)
		if _, statErr := os.Stat(filepath.Join(dir, ".complete")); statErr == nil && matches(dir, contents) {
			return dir, nil // another process won the race
		}
		return "", fmt.Errorf("embedded: extract: %w", err)
	}
	if err := atomicfile.SyncDir(cacheDir); err != nil {
		return "", fmt.Errorf("embedded: extract: %w", err)
	}
	return dir, nil
}

// writeAll writes Files (with contents) and then the .complete marker
// into dir, each fsynced, and fsyncs dir.
func writeAll(dir string, contents [][]byte) error {
	for i, f := range Files {
		if err := writeSynced(filepath.Join(dir, f), contents[i]); err != nil {
			return err
		}
	}
	if err := writeSynced(filepath.Join(dir, ".complete"), nil); err != nil {
		return err
	}
	return atomicfile.SyncDir(dir)
}

// writeSynced creates path with data and fsyncs it.
func writeSynced(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// matches reports whether dir holds Files with exactly contents.
func matches(dir string, contents [][]byte) bool {
	for i, f := range Files {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil || !bytes.Equal(b, contents[i]) {
			return false
		}
	}
	return true
}

// setAside moves the damaged extraction dir out of the way under a
// temporary name in cacheDir and removes it. A dir that another process
// moved first is not an error.
func setAside(cacheDir, dir string) error {
	aside, err := os.MkdirTemp(cacheDir, tmpPrefix+"damaged-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(aside)
	if err := os.Rename(dir, filepath.Join(aside, "old")); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// removeStale removes the temporary directories in cacheDir older than
// staleAfter at now. It is best effort: a cache it cannot read or clean is
// left as it is, and extraction goes on.
func removeStale(cacheDir string, now time.Time) {
	entries, err := os.ReadDir(cacheDir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), tmpPrefix) {
			continue
		}
		if info, err := e.Info(); err == nil && now.Sub(info.ModTime()) > staleAfter {
			os.RemoveAll(filepath.Join(cacheDir, e.Name()))
		}
	}
}
