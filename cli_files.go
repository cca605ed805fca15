package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/spiral-rl/spiral/model/atomicfile"
)

// copyFile copies src to dst (atomically).
func copyFile(src, dst string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	if err := atomicfile.WriteFile(dst, b, 0o666); err != nil {
		return fmt.Errorf("copy %s: %w", src, err)
	}
	return nil
}

// makeParentDir creates the directory that will hold the file path (and
// its parents), as the commands that write a directory create it.
func makeParentDir(flag, path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o777); err != nil {
		return fmt.Errorf("%s %s: %w", flag, path, err)
	}
	return nil
}
